/* etwdump --split-by event -o DIR: one output file per event kind.
 *
 * A kind is a (provider, event) name pair as the output shows them; its
 * file is DIR/PROVIDER-EVENT.EXT (EXT: csv, jsonl for json and timesketch,
 * txt, xml) with the name made safe for file systems: '/', '\', ':', the
 * characters Windows forbids (*?"<>|) and control characters become '_',
 * a leading '.' too, the name is cut at SPLIT_NAME_MAX bytes (at a UTF-8
 * character boundary); a name already taken (compared ASCII
 * case-insensitively, for case-insensitive file systems) gets "-2", "-3"...
 * before the extension. Files are created (truncated) at the first event
 * of their kind.
 *
 * At most SPLIT_OPEN_FILES files are open at once: the least recently
 * written one is closed when another is needed, and reopened for
 * appending when its kind comes again. At most SPLIT_MAX_KINDS kinds (a
 * clear error past it). Events are read on one thread, in the trace's
 * order, so each file keeps that order whatever -j says.
 *
 * CSV without --fields: each file has its kind's columns only. A first
 * pass learns them (the renderer's rules: the schema's top-level names;
 * the log-file header's and EventSource manifest chunks' from their JSON,
 * through a CSV renderer that learns that one event), and each open file
 * has a renderer whose field list is its kind's names, which gives the
 * same columns. Other formats (and CSV with --fields) share one renderer.
 * Nothing is allocated per event once kinds and files are known. */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>

#include "etwdump.h"

#define SPLIT_MAX_KINDS 65536
#define SPLIT_OPEN_FILES 64
#define SPLIT_NAME_MAX 200
#define SPLIT_MAX_COLUMNS (1u << 22)   /* column names of all kinds together */
#define SPECIAL_LEARN_MAX 16           /* header/manifest events learned per kind */

typedef struct kind {
    char *provider, *event; /* as the output names them */
    char *path;             /* DIR/NAME.EXT; NULL until the first event is written */
    uint64_t hash;
    int slot;               /* open slot, -1: closed */
    int created;            /* the file exists (its header is written) */
    uint32_t col_head, col_tail, ncols; /* CSV: its columns (1-based indexes into cols) */
    int special_learned;
} kind;

typedef struct colname {
    char *name;
    uint32_t kind;
    uint32_t next; /* the kind's next column, 0: none */
} colname;

typedef struct slot {
    FILE *f;
    int kind;            /* -1: free */
    uint64_t used;       /* the write count when last used (LRU) */
    etw_renderer *rd;    /* CSV per kind: its renderer */
    const char **fields; /* its field list (pointers into cols) */
} slot;

typedef struct split {
    session *s;
    const char *dir;
    const char *ext;
    etw_render_options ro; /* the run's options (fields: the user's) */
    int per_kind;          /* CSV without --fields: a renderer per kind */
    etw_renderer *shared;  /* the others */
    kind *kinds;
    size_t nkinds;
    uint32_t *kind_hash;   /* open addressing: kind index + 1 */
    size_t kind_hcap;
    colname *cols;         /* [0] unused */
    size_t ncols, cols_cap;
    uint32_t *col_hash;    /* (kind, name) -> cols index */
    size_t col_hcap;
    uint64_t *schema_seen; /* (kind + 1) << 32 | schema id + 1... open addressing */
    size_t seen_cap, seen_used;
    char **names;          /* file names taken (lowercased), open addressing */
    size_t names_cap, names_used;
    slot slots[SPLIT_OPEN_FILES];
    uint64_t clock;
    size_t fixed_columns;  /* CSV: the columns of a renderer that learned nothing */
} split;

static int oom(void) {
    fprintf(stderr, "etwdump: out of memory\n");
    return EXIT_FATAL;
}

static uint64_t fnv(uint64_t h, const char *s, size_t n) {
    for (size_t i = 0; i < n; i++) h = (h ^ (unsigned char)s[i]) * 1099511628211u;
    return h;
}

static char *dup_n(const char *s, size_t n) {
    char *d = malloc(n + 1);
    if (d) {
        memcpy(d, s, n);
        d[n] = 0;
    }
    return d;
}

/* mkdir -p: every missing component of dir. */
static int make_dir(const char *dir) {
    char *p = dup_n(dir, strlen(dir));
    if (!p) return oom();
    for (char *c = p + 1;; c++) {
        if (*c == '/' || !*c) {
            char keep = *c;
            *c = 0;
            if (mkdir(p, 0777) != 0 && errno != EEXIST) {
                fprintf(stderr, "etwdump: %s: %s\n", p, strerror(errno));
                free(p);
                return EXIT_FATAL;
            }
            *c = keep;
            if (!keep) break;
        }
    }
    free(p);
    struct stat st;
    if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode)) {
        fprintf(stderr, "etwdump: --split-by: %s is not a directory\n", dir);
        return EXIT_FATAL;
    }
    return EXIT_CLEAN;
}

/* ---- kinds ------------------------------------------------------------------ */

/* The kind of ev (created at first sight); -1 after reporting a failure. */
static int kind_of(split *sp, const etw_event *ev, int *rc) {
    const etw_schema *schema = NULL;
    if (ev->is_logfile_header || etw_decoder_resolve(sp->s->dec, ev, &schema, NULL) != ETW_OK) schema = NULL;
    etw_event_names nm;
    etw_event_names_get(ev, schema, &nm);
    uint64_t h = fnv(fnv(1469598103934665603u, nm.provider, nm.provider_len), "", 1);
    h = fnv(h, nm.event, nm.event_len);
    size_t mask = sp->kind_hcap - 1;
    for (size_t i = (size_t)h & mask;; i = (i + 1) & mask) {
        uint32_t k = sp->kind_hash[i];
        if (!k) {
            if (sp->nkinds == SPLIT_MAX_KINDS) {
                fprintf(stderr,
                        "etwdump: --split-by event: more than %d event kinds; select fewer (--provider, --event)\n",
                        SPLIT_MAX_KINDS);
                *rc = EXIT_FATAL;
                return -1;
            }
            kind *kd = &sp->kinds[sp->nkinds];
            memset(kd, 0, sizeof *kd);
            kd->provider = dup_n(nm.provider, nm.provider_len);
            kd->event = dup_n(nm.event, nm.event_len);
            if (!kd->provider || !kd->event) {
                free(kd->provider);
                free(kd->event);
                *rc = oom();
                return -1;
            }
            kd->hash = h;
            kd->slot = -1;
            sp->kind_hash[i] = (uint32_t)++sp->nkinds;
            return (int)sp->nkinds - 1;
        }
        const kind *kd = &sp->kinds[k - 1];
        if (kd->hash == h && strlen(kd->provider) == nm.provider_len &&
            !memcmp(kd->provider, nm.provider, nm.provider_len) && strlen(kd->event) == nm.event_len &&
            !memcmp(kd->event, nm.event, nm.event_len))
            return (int)k - 1;
    }
}

/* ---- CSV columns ------------------------------------------------------------ */

static int add_column(split *sp, int k, const char *name, size_t len) {
    uint64_t h = fnv(fnv(1469598103934665603u, (const char *)&k, sizeof k), name, len);
    size_t mask = sp->col_hcap - 1;
    size_t i = (size_t)h & mask;
    for (; sp->col_hash[i]; i = (i + 1) & mask) {
        const colname *c = &sp->cols[sp->col_hash[i]];
        if (c->kind == (uint32_t)k && strlen(c->name) == len && !memcmp(c->name, name, len)) return EXIT_CLEAN;
    }
    if (sp->ncols + 1 >= SPLIT_MAX_COLUMNS) {
        fprintf(stderr, "etwdump: --split-by event: more than %u columns in all\n", SPLIT_MAX_COLUMNS);
        return EXIT_FATAL;
    }
    if (sp->ncols + 1 == sp->cols_cap) {
        size_t nc = sp->cols_cap * 2;
        colname *n = realloc(sp->cols, nc * sizeof *n);
        if (!n) return oom();
        sp->cols = n;
        sp->cols_cap = nc;
    }
    /* the hash stays under half full */
    if (2 * (sp->ncols + 1) >= sp->col_hcap) {
        size_t nc = sp->col_hcap * 2;
        uint32_t *n = calloc(nc, sizeof *n);
        if (!n) return oom();
        for (size_t j = 1; j <= sp->ncols; j++) {
            const colname *c = &sp->cols[j];
            uint32_t ck = c->kind;
            uint64_t ch = fnv(fnv(1469598103934665603u, (const char *)&ck, sizeof ck), c->name, strlen(c->name));
            size_t p = (size_t)ch & (nc - 1);
            while (n[p]) p = (p + 1) & (nc - 1);
            n[p] = (uint32_t)j;
        }
        free(sp->col_hash);
        sp->col_hash = n;
        sp->col_hcap = nc;
        mask = nc - 1;
        for (i = (size_t)h & mask; sp->col_hash[i]; i = (i + 1) & mask) {
        }
    }
    colname *c = &sp->cols[++sp->ncols];
    if (!(c->name = dup_n(name, len))) return oom();
    c->kind = (uint32_t)k;
    c->next = 0;
    sp->col_hash[i] = (uint32_t)sp->ncols;
    kind *kd = &sp->kinds[k];
    if (kd->col_tail) sp->cols[kd->col_tail].next = (uint32_t)sp->ncols;
    else kd->col_head = (uint32_t)sp->ncols;
    kd->col_tail = (uint32_t)sp->ncols;
    kd->ncols++;
    return EXIT_CLEAN;
}

/* 1 the first time (kind, schema id) is seen; -1 out of memory. */
static int first_sight(split *sp, int k, uint32_t id) {
    uint64_t key = ((uint64_t)(uint32_t)k << 32 | id) + 1;
    if (2 * (sp->seen_used + 1) >= sp->seen_cap) {
        size_t nc = sp->seen_cap * 2;
        uint64_t *n = calloc(nc, sizeof *n);
        if (!n) return -1;
        for (size_t j = 0; j < sp->seen_cap; j++)
            if (sp->schema_seen[j]) {
                size_t p = (size_t)(sp->schema_seen[j] * 0x9E3779B97F4A7C15u >> 20) & (nc - 1);
                while (n[p]) p = (p + 1) & (nc - 1);
                n[p] = sp->schema_seen[j];
            }
        free(sp->schema_seen);
        sp->schema_seen = n;
        sp->seen_cap = nc;
    }
    size_t mask = sp->seen_cap - 1;
    for (size_t i = (size_t)(key * 0x9E3779B97F4A7C15u >> 20) & mask;; i = (i + 1) & mask) {
        if (sp->schema_seen[i] == key) return 0;
        if (!sp->schema_seen[i]) {
            sp->schema_seen[i] = key;
            sp->seen_used++;
            return 1;
        }
    }
}

/* The field names of a header row after the first skip columns (RFC 4180). */
static int columns_from_header(split *sp, int k, const char *row, size_t len, size_t skip) {
    char *cell = malloc(len + 1);
    if (!cell) return oom();
    size_t col = 0, i = 0;
    int rc = EXIT_CLEAN;
    while (i < len && row[i] != '\r' && row[i] != '\n' && rc == EXIT_CLEAN) {
        size_t n = 0;
        if (row[i] == '"') {
            for (i++; i < len; i++) {
                if (row[i] == '"') {
                    if (i + 1 < len && row[i + 1] == '"') {
                        cell[n++] = '"';
                        i++;
                    } else {
                        i++;
                        break;
                    }
                } else {
                    cell[n++] = row[i];
                }
            }
        } else {
            for (; i < len && row[i] != ',' && row[i] != '\r' && row[i] != '\n'; i++) cell[n++] = row[i];
        }
        /* a column the renderer named "fields.NAME" (a field named like a
         * fixed column): the field is NAME */
        const char *name = cell;
        if (n > 7 && !memcmp(cell, "fields.", 7)) name += 7, n -= 7;
        if (col++ >= skip) rc = add_column(sp, k, name, n);
        if (i < len && row[i] == ',') i++;
    }
    free(cell);
    return rc;
}

/* The log-file header and EventSource manifest chunks: their fields come
 * from their JSON object; a CSV renderer learns this one event and its
 * header row names them. */
static int learn_special(split *sp, int k, const etw_reader *r, const etw_event *ev) {
    if (sp->kinds[k].special_learned++ >= SPECIAL_LEARN_MAX) return EXIT_CLEAN;
    etw_render_options ro = sp->ro;
    ro.fields = NULL;
    ro.nfields = 0;
    etw_renderer *rd;
    if (etw_renderer_new(&rd, NULL, &ro) != ETW_OK) return oom();
    const char *text;
    size_t len;
    int rc = etw_renderer_learn(rd, r, ev) == ETW_OK && etw_renderer_header(rd, &text, &len) == ETW_OK
                 ? columns_from_header(sp, k, text, len, sp->fixed_columns)
                 : oom();
    etw_renderer_free(rd);
    return rc;
}

static int learn(split *sp, int k, const etw_reader *r, const etw_event *ev) {
    const etw_schema *schema = NULL;
    if (ev->is_logfile_header || etw_decoder_resolve(sp->s->dec, ev, &schema, NULL) != ETW_OK) schema = NULL;
    if (!schema || etw_decoder_is_manifest_event(ev)) {
        if (ev->is_logfile_header || (schema && etw_decoder_is_manifest_event(ev)))
            return learn_special(sp, k, r, ev);
        return EXIT_CLEAN; /* no schema: no fields */
    }
    int first = first_sight(sp, k, schema->id);
    if (first < 0) return oom();
    if (!first) return EXIT_CLEAN;
    for (uint16_t i = 0; i < schema->top_count && i < schema->prop_count; i++) {
        int rc = add_column(sp, k, schema->props[i].name, strlen(schema->props[i].name));
        if (rc != EXIT_CLEAN) return rc;
    }
    return EXIT_CLEAN;
}

/* The first pass (CSV per kind): every selected event's kind and columns. */
static int learn_all(split *sp) {
    session *s = sp->s;
    const options *o = s->o;
    etw_event ev;
    size_t file;
    unsigned long long n = 0;
    int rc = EXIT_CLEAN;
    s->dc->muted = 1; /* the same problems are reported by the real pass */
    while (rc == EXIT_CLEAN && etw_multi_next(s->m, &ev, &file) == ETW_OK && !stop_requested()) {
        int sel = etw_filter_match(s->filter, s->dec, &ev, NULL);
        if (sel < 0) rc = oom();
        if (rc != EXIT_CLEAN || !sel || (o->no_manifest_events && etw_decoder_is_manifest_event(&ev))) continue;
        int k = kind_of(sp, &ev, &rc);
        if (k >= 0) rc = learn(sp, k, etw_multi_reader(s->m, file), &ev);
        if (o->max_events && ++n >= o->max_events) break;
    }
    s->dc->muted = 0;
    if (rc == EXIT_CLEAN && etw_multi_rewind(s->m) != ETW_OK) {
        fprintf(stderr, "etwdump: cannot go back to the start of the input\n");
        rc = EXIT_FATAL;
    }
    return rc;
}

/* ---- files ------------------------------------------------------------------ */

/* 1 when name (lowercased) was free and is now taken; -1 out of memory. */
static int take_name(split *sp, const char *name) {
    if (2 * (sp->names_used + 1) >= sp->names_cap) {
        size_t nc = sp->names_cap * 2;
        char **n = calloc(nc, sizeof *n);
        if (!n) return -1;
        for (size_t j = 0; j < sp->names_cap; j++)
            if (sp->names[j]) {
                size_t p = (size_t)fnv(1469598103934665603u, sp->names[j], strlen(sp->names[j])) & (nc - 1);
                while (n[p]) p = (p + 1) & (nc - 1);
                n[p] = sp->names[j];
            }
        free(sp->names);
        sp->names = n;
        sp->names_cap = nc;
    }
    size_t len = strlen(name);
    char *low = dup_n(name, len);
    if (!low) return -1;
    for (size_t i = 0; i < len; i++)
        if (low[i] >= 'A' && low[i] <= 'Z') low[i] = (char)(low[i] + 32);
    size_t mask = sp->names_cap - 1;
    for (size_t i = (size_t)fnv(1469598103934665603u, low, len) & mask;; i = (i + 1) & mask) {
        if (!sp->names[i]) {
            sp->names[i] = low;
            sp->names_used++;
            return 1;
        }
        if (!strcmp(sp->names[i], low)) {
            free(low);
            return 0;
        }
    }
}

/* The file name of a kind (the rules at the top), DIR/ before it. */
static int kind_path(split *sp, kind *kd) {
    char base[SPLIT_NAME_MAX + 1];
    size_t n = 0;
    const char *parts[3] = {kd->provider, "-", kd->event};
    for (int p = 0; p < 3; p++)
        for (const unsigned char *c = (const unsigned char *)parts[p]; *c && n < SPLIT_NAME_MAX; c++) {
            unsigned char ch = *c;
            if (ch < 0x20 || ch == 0x7f || strchr("/\\:*?\"<>|", ch) || (n == 0 && ch == '.')) ch = '_';
            base[n++] = (char)ch;
        }
    /* cut at a character boundary: drop continuation bytes and the lead
     * byte of a character cut short */
    if (n == SPLIT_NAME_MAX) {
        size_t end = n;
        while (end > 0 && ((unsigned char)base[end - 1] & 0xC0) == 0x80) end--;
        if (end > 0 && (unsigned char)base[end - 1] >= 0xC0) {
            size_t need = (unsigned char)base[end - 1] >= 0xF0 ? 4 : (unsigned char)base[end - 1] >= 0xE0 ? 3 : 2;
            if (n - (end - 1) < need) n = end - 1;
        }
    }
    base[n] = 0;
    size_t cap = strlen(sp->dir) + n + 32;
    char *path = malloc(cap);
    char name[SPLIT_NAME_MAX + 32];
    if (!path) return oom();
    for (unsigned suffix = 1;; suffix++) {
        if (suffix == 1) snprintf(name, sizeof name, "%s.%s", base, sp->ext);
        else snprintf(name, sizeof name, "%s-%u.%s", base, suffix, sp->ext);
        int t = take_name(sp, name);
        if (t < 0) {
            free(path);
            return oom();
        }
        if (t) break;
    }
    snprintf(path, cap, "%s/%s", sp->dir, name);
    kd->path = path;
    return EXIT_CLEAN;
}

static int close_slot(split *sp, slot *sl) {
    int rc = EXIT_CLEAN;
    if (sl->f) {
        output_name_set(sp->kinds[sl->kind].path);
        if (flush_out(sl->f) < 0) rc = EXIT_FATAL;
        if (fclose(sl->f) != 0 && rc == EXIT_CLEAN) {
            fprintf(stderr, "etwdump: %s: write error: %s\n", sp->kinds[sl->kind].path, strerror(errno));
            rc = EXIT_FATAL;
        }
        sp->kinds[sl->kind].slot = -1;
    }
    etw_renderer_free(sl->rd);
    free(sl->fields);
    sl->f = NULL;
    sl->rd = NULL;
    sl->fields = NULL;
    sl->kind = -1;
    return rc;
}

/* The open slot of kind k (its file created with its header, or reopened
 * for appending); NULL after reporting a failure. */
static slot *open_kind(split *sp, int k, int *rc) {
    kind *kd = &sp->kinds[k];
    slot *sl;
    if (kd->slot >= 0) {
        sl = &sp->slots[kd->slot];
        sl->used = ++sp->clock;
        return sl;
    }
    sl = &sp->slots[0];
    for (int i = 0; i < SPLIT_OPEN_FILES; i++) {
        if (!sp->slots[i].f) {
            sl = &sp->slots[i];
            break;
        }
        if (sp->slots[i].used < sl->used) sl = &sp->slots[i];
    }
    if ((*rc = close_slot(sp, sl)) != EXIT_CLEAN) return NULL;
    if (!kd->path && (*rc = kind_path(sp, kd)) != EXIT_CLEAN) return NULL;
    etw_renderer *rd = sp->shared;
    if (sp->per_kind) {
        etw_render_options ro = sp->ro;
        sl->fields = calloc(kd->ncols ? kd->ncols : 1, sizeof *sl->fields);
        if (!sl->fields) {
            *rc = oom();
            return NULL;
        }
        size_t n = 0;
        for (uint32_t c = kd->col_head; c; c = sp->cols[c].next) sl->fields[n++] = sp->cols[c].name;
        /* a kind without fields: no field columns (a renderer that learned nothing) */
        ro.fields = n ? sl->fields : NULL;
        ro.nfields = n;
        if (etw_renderer_new(&sl->rd, NULL, &ro) != ETW_OK) {
            *rc = oom();
            return NULL;
        }
        rd = sl->rd;
    }
    if (!(sl->f = fopen(kd->path, kd->created ? "ab" : "wb"))) {
        fprintf(stderr, "etwdump: %s: %s\n", kd->path, strerror(errno));
        *rc = EXIT_FATAL;
        return NULL;
    }
    sl->kind = k;
    sl->used = ++sp->clock;
    kd->slot = (int)(sl - sp->slots);
    output_name_set(kd->path);
    if (sp->s->with_file) etw_renderer_set_file(rd, etw_multi_name(sp->s->m, 0)); /* CSV: the column */
    const char *text;
    size_t len;
    if (sp->per_kind || !kd->created) {
        /* a per-kind renderer fixes its columns with its header, written
         * to a new file only */
        if (etw_renderer_header(rd, &text, &len) != ETW_OK) {
            *rc = oom();
            return NULL;
        }
        if (!kd->created && len && write_out(sl->f, text, len) != 0) {
            *rc = EXIT_FATAL;
            return NULL;
        }
    }
    kd->created = 1;
    return sl;
}

/* ---- the run ---------------------------------------------------------------- */

static int split_setup(split *sp, session *s) {
    const options *o = s->o;
    sp->s = s;
    sp->dir = o->output;
    sp->ext = o->format == ETW_RENDER_CSV    ? "csv"
              : o->format == ETW_RENDER_TEXT ? "txt"
              : o->format == ETW_RENDER_XML  ? "xml"
                                             : "jsonl";
    sp->per_kind = o->format == ETW_RENDER_CSV && !o->nfields;
    for (int i = 0; i < SPLIT_OPEN_FILES; i++) sp->slots[i].kind = -1;
    sp->kind_hcap = 2 * SPLIT_MAX_KINDS;
    sp->cols_cap = 1024;
    sp->col_hcap = 2048;
    sp->seen_cap = 1024;
    sp->names_cap = 1024;
    sp->kinds = calloc(SPLIT_MAX_KINDS, sizeof *sp->kinds);
    sp->kind_hash = calloc(sp->kind_hcap, sizeof *sp->kind_hash);
    sp->cols = calloc(sp->cols_cap, sizeof *sp->cols);
    sp->col_hash = calloc(sp->col_hcap, sizeof *sp->col_hash);
    sp->schema_seen = calloc(sp->seen_cap, sizeof *sp->schema_seen);
    sp->names = calloc(sp->names_cap, sizeof *sp->names);
    if (!sp->kinds || !sp->kind_hash || !sp->cols || !sp->col_hash || !sp->schema_seen || !sp->names) return oom();
    int rc = make_dir(sp->dir);
    if (rc != EXIT_CLEAN) return rc;
    if (sp->per_kind) {
        /* the fixed columns of these options: a renderer that learned nothing */
        etw_render_options ro = sp->ro;
        etw_renderer *rd;
        const char *text;
        size_t len;
        if (etw_renderer_new(&rd, NULL, &ro) != ETW_OK) return oom();
        etw_status st = etw_renderer_header(rd, &text, &len);
        sp->fixed_columns = etw_renderer_columns(rd);
        etw_renderer_free(rd);
        if (st != ETW_OK) return oom();
        return learn_all(sp);
    }
    if (etw_renderer_new(&sp->shared, NULL, &sp->ro) != ETW_OK) return oom();
    return EXIT_CLEAN;
}

static void split_free(split *sp) {
    for (int i = 0; i < SPLIT_OPEN_FILES; i++) close_slot(sp, &sp->slots[i]);
    for (size_t i = 0; i < sp->nkinds; i++) {
        free(sp->kinds[i].provider);
        free(sp->kinds[i].event);
        free(sp->kinds[i].path);
    }
    for (size_t i = 1; i <= sp->ncols; i++) free(sp->cols[i].name);
    for (size_t i = 0; sp->names && i < sp->names_cap; i++) free(sp->names[i]);
    free(sp->kinds);
    free(sp->kind_hash);
    free(sp->cols);
    free(sp->col_hash);
    free(sp->schema_seen);
    free(sp->names);
    etw_renderer_free(sp->shared);
}

/* XML: every file's closing tag (the files are reopened one at a time). */
static int split_footers(split *sp) {
    etw_renderer *rd;
    const char *text;
    size_t len;
    if (etw_renderer_new(&rd, NULL, &sp->ro) != ETW_OK) return oom();
    int rc = EXIT_CLEAN;
    if (etw_renderer_footer(rd, &text, &len) != ETW_OK) rc = oom();
    for (size_t k = 0; rc == EXIT_CLEAN && len && k < sp->nkinds; k++) {
        if (!sp->kinds[k].created) continue;
        slot *sl = open_kind(sp, (int)k, &rc);
        if (sl && write_out(sl->f, text, len) != 0) rc = EXIT_FATAL;
    }
    etw_renderer_free(rd);
    return rc;
}

int run_split(session *s, const etw_render_options *ro) {
    const options *o = s->o;
    static split sp_zero;
    split *sp = malloc(sizeof *sp);
    if (!sp) return oom();
    *sp = sp_zero;
    sp->ro = *ro;
    int rc = split_setup(sp, s);
    progress *pg = rc == EXIT_CLEAN ? progress_start(o, s->m, input_bytes(s->m)) : NULL;
    etw_event ev;
    size_t file;
    unsigned long long n = 0, read = 0;
    while (rc == EXIT_CLEAN && etw_multi_next(s->m, &ev, &file) == ETW_OK) {
        progress_tick(pg, ++read, file, &ev);
        if (stop_requested()) {
            rc = EXIT_INTERRUPTED;
            break;
        }
        int sel = etw_filter_match(s->filter, s->dec, &ev, NULL);
        if (sel < 0) {
            rc = oom();
            break;
        }
        if (!sel || (o->no_manifest_events && etw_decoder_is_manifest_event(&ev))) continue;
        int k = kind_of(sp, &ev, &rc);
        slot *sl = k >= 0 ? open_kind(sp, k, &rc) : NULL;
        if (!sl) break;
        etw_renderer *rd = sp->per_kind ? sl->rd : sp->shared;
        if (s->with_file) etw_renderer_set_file(rd, etw_multi_name(s->m, file));
        trace_zone_set(ro->utc_offset_ctx, etw_multi_reader(s->m, file));
        field_check_event(s->fields_seen, s->dec, &ev);
        const char *text;
        size_t len;
        if (etw_renderer_event(rd, etw_multi_reader(s->m, file), &ev, &text, &len) != ETW_OK) {
            rc = oom();
            break;
        }
        if (write_out(sl->f, text, len) != 0) {
            rc = EXIT_FATAL; /* a file, not a pipe: any failure is an error */
            break;
        }
        if (o->max_events && ++n >= o->max_events) {
            s->cut_short = 1;
            break;
        }
    }
    progress_end(pg);
    if (rc != EXIT_FATAL && o->format == ETW_RENDER_XML) {
        int fr = split_footers(sp);
        if (fr != EXIT_CLEAN) rc = fr;
    }
    for (int i = 0; i < SPLIT_OPEN_FILES; i++) {
        int cr = close_slot(sp, &sp->slots[i]);
        if (cr != EXIT_CLEAN) rc = cr;
    }
    split_free(sp);
    free(sp);
    output_name_set(NULL);
    etw_decoder_finish(s->dec);
    if (stop_requested() && rc == EXIT_CLEAN) rc = EXIT_INTERRUPTED;
    if (rc == EXIT_CLEAN && run_problems(s)) rc = EXIT_SKIPPED;
    return rc;
}
