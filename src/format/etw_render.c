/* etw_render.c - JSON, text and CSV renderings of events (see etw_render.h).
 * Each starts from the contract's JSON object (etw_json): text and CSV take
 * their values from the spans the writer recorded as it wrote each key
 * (etw_json_spans.h), so the three can never disagree on a name or a value
 * and nothing is parsed again (etw_jscan only reads the rare "fields" that
 * do not come from a schema: the log-file header, EventSource manifests). */
#include "etwdecode/etw_render.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../common/etw_alloc.h"
#include "etwdecode/etw_decoder.h"
#include "../schema/etw_source.h"
#include "etw_jscan.h"
#include "etw_json_spans.h"
#include "etw_text.h"

/* FILETIME ticks per second (100 ns units). */
#define TICKS INT64_C(10000000)
/* Most CSV columns (fixed and learned). */
#define MAX_COLUMNS 65536
/* CSV: the schemas whose property columns are remembered, and the most
 * properties remembered over all of them (docs/limits.md); past either,
 * a field's column is found by its name, event after event. */
#define CSV_SCHEMAS_MAX 4096
#define CSV_PROPS_MAX (1u << 20)
/* CSV: the cached segments of cells provider..keywords, and the longest */
#define SEG_SLOTS 64
#define SEG_MAX 384
#define SEG_FIRST COL_PROVIDER
#define SEG_LAST COL_KEYWORDS
/* CSV's first pass: the bytes of an event that decide its schema
 * (learn_memo_key), and the most of them remembered (past it they are
 * forgotten and learned again). */
#define LEARN_KEY 24
#define LEARN_MEMO_MAX 65536
/* a remembered property whose column is not looked up yet */
#define COL_UNKNOWN (-2)

/* The fixed CSV columns, in order; the JSON key of each is its name. */
enum { COL_TIME, COL_FILE, COL_PROVIDER, COL_PROVIDER_GUID, COL_EVENT, COL_ID, COL_VERSION, COL_LEVEL,
       COL_OPCODE, COL_TASK, COL_CHANNEL, COL_KEYWORDS, COL_PID, COL_PROCESS, COL_TID, COL_CPU, COL_DATA_LEN,
       COL_ACTIVITY, COL_RELATED, COL_CONTAINER, COL_MESSAGE, COL_ERROR, COL_RAW, NFIXED };
/* the spans of etw_json_spans.h are indexed by the same numbers */
_Static_assert((int)COL_PID == (int)ETW_JK_PID && (int)COL_PROCESS == (int)ETW_JK_PROCESS &&
                   (int)COL_RAW == (int)ETW_JK_RAW && (int)NFIXED == (int)ETW_JK_FIELDS,
               "render columns and JSON spans disagree");
static const char *const fixed_names[NFIXED] = {
    "time", "file", "provider", "provider_guid", "event", "id", "version", "level", "opcode", "task",
    "channel", "keywords", "pid", "process", "tid", "cpu", "data_len", "activity_id", "related_activity_id",
    "container_id", "message", "error", "raw"};

/* A schema whose top-level properties' columns are remembered: pool[off +
 * i] is the column of props[i] (-1 none, COL_UNKNOWN not looked up yet).
 * TEXT keeps its keys there instead: pool[off + i] is where props[i]'s key,
 * as text shows it, starts in rd->keys (-1 not kept, COL_UNKNOWN not made
 * yet) and plan[off + i] its length.
 * Its plan, once every column is known: plan[off .. off + plan_n) the
 * properties that have a column, in column order (of properties sharing a
 * column the last, whose value the cell shows), so that a row is written
 * left to right with no sorting. */
typedef struct schema_cols {
    const etw_schema *schema; /* NULL: an empty slot; never dereferenced (a
                               * TraceLogging schema may be gone, etw_cache.h) */
    uint32_t id;              /* compared with the pointer: ids are never reused */
    uint32_t off, n;
    uint32_t plan_n;
    int planned;              /* 1 plan made, -1 cannot be (no memory) */
} schema_cols;

typedef struct column {
    char *name;     /* the header text (a field column may be "fields.NAME") */
    char *field;    /* the field name it holds, NULL for fixed columns */
    size_t field_len;
    int fixed;      /* index in fixed_names, or -1 */
} column;

struct etw_renderer {
    etw_allocator alloc;
    etw_render_options opt;
    etw_json *json;
    etw_text out, scratch;
    const char *file;
    /* CSV */
    column *cols;
    size_t ncols, cap;
    uint32_t *hash;       /* open addressing over field columns: index+1, 0 empty */
    size_t hcap;
    uint32_t *seen;       /* schema ids learned (open addressing, id+1) */
    size_t seen_cap, seen_used;
    const char **cell;    /* per column, the value span of the current row */
    size_t *cell_len;
    int header_done;
    size_t nfixed_cols;   /* how many of the columns are fixed ones */
    size_t row_cap;       /* room in cell, cell_len, set, commas */
    int fixed_on[NFIXED]; /* which fixed columns the header has */
    size_t col_of_fixed[NFIXED]; /* the column of each fixed key, or (size_t)-1 */
    uint8_t fixed_list[NFIXED];  /* the fixed keys that have a column, in order */
    int nfixed_list;
    size_t *set;          /* the columns the current row has a value for */
    size_t nset;
    char *commas;         /* ncols commas: the separators of a run of empty cells */
    schema_cols *sc;      /* open addressing by schema id, at most 2 * CSV_SCHEMAS_MAX slots */
    size_t sc_cap, sc_used;
    int32_t *pool;        /* the columns of the remembered schemas' properties */
    uint32_t *plan;       /* their plans (schema_cols), as long as pool */
    size_t pool_len, pool_cap;
    /* CSV: the cells provider..keywords depend only on the schema and the
     * descriptor: their text, kept by the JSON text they come from */
    struct seg_slot {
        uint64_t jseg;       /* the writer's memo text it was made from (etw_json_spans.seg), 0: unknown */
        uint16_t jlen, clen; /* 0: empty */
        char json[SEG_MAX], csv[SEG_MAX];
    } *seg;
    size_t seg_col;       /* the segment's first column while a row is made, else (size_t)-1 */
    /* where the writer put each value (text, CSV) */
    etw_json_spans sp;
    etw_field_span *spans;
    etw_text summary;     /* TIMESKETCH: the message made from the fields */
    etw_text keys;        /* TEXT: the remembered schemas' keys as text shows them */
    /* CSV's first pass: the events already learned from (learn_memo) */
    uint8_t (*memo)[LEARN_KEY];
    size_t memo_cap, memo_used;
    uint64_t memo_epoch;
    uint8_t memo_last[LEARN_KEY]; /* the last key found or added (all zero: none), */
    uint64_t memo_last_epoch;     /* at this epoch: most events are like the one before */
    /* UTC times: the text of the second of the last one, up to its '.' */
    int64_t tc_sec;
    size_t tc_len;        /* 0: none */
    char tc_text[32];
};

static uint64_t name_hash(const char *s, size_t n) {
    uint64_t h = 1469598103934665603u; /* FNV-1a offset basis */
    for (size_t i = 0; i < n; i++) h = (h ^ (unsigned char)s[i]) * 1099511628211u;
    return h;
}

etw_status etw_renderer_new(etw_renderer **out, const etw_allocator *alloc, const etw_render_options *opt) {
    if (!out || !opt) return ETW_E_INVALID_ARG;
    *out = NULL;
    if (opt->format > ETW_RENDER_XML || opt->time > ETW_TIME_LOCAL || opt->nfields > ETW_RENDER_MAX_FIELDS ||
        (opt->nfields && !opt->fields))
        return ETW_E_INVALID_ARG;
    etw_allocator a = etw_allocator_resolve(alloc);
    etw_renderer *rd = etw_calloc(&a, 1, sizeof *rd);
    if (!rd) return ETW_E_NOMEM;
    rd->alloc = a;
    rd->opt = *opt;
    if (rd->opt.time == ETW_TIME_DEFAULT)
        rd->opt.time = opt->format == ETW_RENDER_TEXT ? ETW_TIME_RELATIVE : ETW_TIME_UTC;
    etw_text_init(&rd->out, &a);
    etw_text_init(&rd->scratch, &a);
    etw_text_init(&rd->summary, &a);
    etw_text_init(&rd->keys, &a);
    etw_json_options jo = opt->json;
    if (opt->format == ETW_RENDER_TIMESKETCH) jo.messages = 1; /* "message" is the manifest's where there is one */
    if (etw_json_new(&rd->json, &a, &jo) != ETW_OK) {
        etw_free(&a, rd);
        return ETW_E_NOMEM;
    }
    *out = rd;
    return ETW_OK;
}

void etw_renderer_free(etw_renderer *rd) {
    if (!rd) return;
    etw_allocator a = rd->alloc;
    for (size_t i = 0; i < rd->ncols; i++) {
        etw_free(&a, rd->cols[i].name);
        etw_free(&a, rd->cols[i].field);
    }
    etw_free(&a, rd->cols);
    etw_free(&a, rd->hash);
    etw_free(&a, rd->seen);
    etw_free(&a, (void *)rd->cell);
    etw_free(&a, rd->cell_len);
    etw_free(&a, rd->spans);
    etw_free(&a, rd->set);
    etw_free(&a, rd->commas);
    etw_free(&a, rd->sc);
    etw_free(&a, rd->pool);
    etw_free(&a, rd->plan);
    etw_free(&a, rd->seg);
    etw_json_free(rd->json);
    etw_text_free(&rd->out);
    etw_text_free(&rd->scratch);
    etw_text_free(&rd->summary);
    etw_text_free(&rd->keys);
    etw_free(&a, rd->memo);
    etw_free(&a, rd);
}

void etw_renderer_set_file(etw_renderer *rd, const char *name) {
    if (!rd) return;
    rd->file = name;
    etw_json_set_file(rd->json, name);
}

size_t etw_renderer_columns(const etw_renderer *rd) {
    return rd && rd->opt.format == ETW_RENDER_CSV && rd->header_done ? rd->ncols : 0;
}

/* ---- CSV columns ---------------------------------------------------------- */

static char *dup(etw_renderer *rd, const char *s, size_t n) {
    char *c = etw_alloc(&rd->alloc, n + 1);
    if (!c) return NULL;
    memcpy(c, s, n);
    c[n] = 0;
    return c;
}

static long find_field(const etw_renderer *rd, const char *name, size_t n) {
    if (!rd->hcap) return -1;
    size_t j = (size_t)name_hash(name, n) & (rd->hcap - 1);
    while (rd->hash[j]) {
        const column *c = &rd->cols[rd->hash[j] - 1];
        if (c->field_len == n && !memcmp(c->field, name, n)) return (long)(rd->hash[j] - 1);
        j = (j + 1) & (rd->hcap - 1);
    }
    return -1;
}

static etw_status rehash(etw_renderer *rd, size_t nc) {
    uint32_t *nh = etw_calloc(&rd->alloc, nc, sizeof *nh);
    if (!nh) return ETW_E_NOMEM;
    for (size_t i = 0; i < rd->ncols; i++) {
        if (!rd->cols[i].field) continue;
        size_t j = (size_t)name_hash(rd->cols[i].field, rd->cols[i].field_len) & (nc - 1);
        while (nh[j]) j = (j + 1) & (nc - 1);
        nh[j] = (uint32_t)(i + 1);
    }
    etw_free(&rd->alloc, rd->hash);
    rd->hash = nh;
    rd->hcap = nc;
    return ETW_OK;
}

static etw_status add_column_(etw_renderer *rd, const char *field, size_t n, int fixed);

/* A field column, named as JSON writes the name: a name from a trace with
 * bytes that are not UTF-8 has U+FFFD for them in the JSON key (which the
 * rows are matched by) and in the header. */
static etw_status add_column(etw_renderer *rd, const char *field, size_t n, int fixed) {
    if (!field || etw_utf8_valid((const uint8_t *)field, n)) return add_column_(rd, field, n, fixed);
    etw_text js, name;
    etw_text_init(&js, &rd->alloc);
    etw_text_init(&name, &rd->alloc);
    etw_text_json_utf8(&js, field, n);
    etw_jscan_unescape(&name, js.data ? js.data : "\"\"", js.data ? js.len : 2);
    etw_status s = etw_text_status(&js);
    if (s == ETW_OK) s = etw_text_status(&name);
    if (s == ETW_OK) s = add_column_(rd, name.data ? name.data : "", name.len, fixed);
    etw_text_free(&js);
    etw_text_free(&name);
    return s;
}

static etw_status add_column_(etw_renderer *rd, const char *field, size_t n, int fixed) {
    if (rd->ncols >= MAX_COLUMNS) return ETW_E_LIMIT;
    if (field && find_field(rd, field, n) >= 0) return ETW_OK;
    if (rd->ncols == rd->cap) {
        size_t nc = rd->cap ? rd->cap * 2 : 64;
        column *ncl = etw_calloc(&rd->alloc, nc, sizeof *ncl);
        if (!ncl) return ETW_E_NOMEM;
        if (rd->ncols) memcpy(ncl, rd->cols, rd->ncols * sizeof *ncl);
        etw_free(&rd->alloc, rd->cols);
        rd->cols = ncl;
        rd->cap = nc;
    }
    column c = {0};
    c.fixed = fixed;
    if (field) {
        int clash = 0;
        for (int k = 0; k < NFIXED; k++)
            if (strlen(fixed_names[k]) == n && !memcmp(fixed_names[k], field, n)) clash = 1;
        c.field = dup(rd, field, n);
        c.field_len = n;
        if (!c.field) return ETW_E_NOMEM;
        if (clash) {
            c.name = etw_alloc(&rd->alloc, n + 8);
            if (c.name) {
                memcpy(c.name, "fields.", 7);
                memcpy(c.name + 7, field, n);
                c.name[n + 7] = 0;
            }
        } else {
            c.name = dup(rd, field, n);
        }
        if (!c.name) {
            etw_free(&rd->alloc, c.field);
            return ETW_E_NOMEM;
        }
    } else {
        c.name = dup(rd, fixed_names[fixed], strlen(fixed_names[fixed]));
        if (!c.name) return ETW_E_NOMEM;
    }
    rd->cols[rd->ncols++] = c;
    if (field) {
        if ((rd->ncols + 1) * 2 > rd->hcap) {
            etw_status s = rehash(rd, rd->hcap ? rd->hcap * 2 : 128);
            if (s != ETW_OK) return s;
        } else {
            size_t j = (size_t)name_hash(field, n) & (rd->hcap - 1);
            while (rd->hash[j]) j = (j + 1) & (rd->hcap - 1);
            rd->hash[j] = (uint32_t)rd->ncols;
        }
    }
    return ETW_OK;
}

/* 1 the first time schema id is seen. */
static int first_sight(etw_renderer *rd, uint32_t id, etw_status *st) {
    *st = ETW_OK;
    if ((rd->seen_used + 1) * 2 > rd->seen_cap) {
        size_t nc = rd->seen_cap ? rd->seen_cap * 2 : 256;
        uint32_t *ns = etw_calloc(&rd->alloc, nc, sizeof *ns);
        if (!ns) {
            *st = ETW_E_NOMEM;
            return 0;
        }
        for (size_t i = 0; i < rd->seen_cap; i++) {
            if (!rd->seen[i]) continue;
            size_t j = (rd->seen[i] * 2654435761u) & (nc - 1);
            while (ns[j]) j = (j + 1) & (nc - 1);
            ns[j] = rd->seen[i];
        }
        etw_free(&rd->alloc, rd->seen);
        rd->seen = ns;
        rd->seen_cap = nc;
    }
    uint32_t key = id + 1;
    size_t j = (key * 2654435761u) & (rd->seen_cap - 1);
    while (rd->seen[j]) {
        if (rd->seen[j] == key) return 0;
        j = (j + 1) & (rd->seen_cap - 1);
    }
    rd->seen[j] = key;
    rd->seen_used++;
    return 1;
}

/* The member "fields" of a JSON line, or an empty span. */
static void fields_span(const char *line, size_t len, const char **f, size_t *fl) {
    size_t pos = 0;
    etw_jmember m;
    *f = NULL;
    *fl = 0;
    while (etw_jscan_next_member(line, len, &pos, &m))
        if (etw_jscan_key_is(m.key, m.key_len, "fields", 6)) {
            *f = m.value;
            *fl = m.value_len;
            return;
        }
}

static etw_status learn_from_json(etw_renderer *rd, const etw_reader *r, const etw_event *ev) {
    const char *line;
    size_t len;
    etw_status s = etw_json_event(rd->json, r, ev, &line, &len);
    if (s != ETW_OK) return s;
    const char *f;
    size_t fl;
    fields_span(line, len, &f, &fl);
    size_t pos = 0;
    etw_jmember m;
    while (f && etw_jscan_next_member(f, fl, &pos, &m)) {
        etw_text_clear(&rd->scratch);
        etw_jscan_unescape(&rd->scratch, m.key - 1, m.key_len + 2);
        if (etw_text_status(&rd->scratch) != ETW_OK) return ETW_E_NOMEM;
        s = add_column(rd, rd->scratch.data ? rd->scratch.data : "", rd->scratch.len, -1);
        if (s != ETW_OK) return s;
    }
    return ETW_OK;
}

/* What decides the schema of an event that carries no TraceLogging
 * metadata (etw_decoder_epoch): provider, id, opcode, version, form,
 * classic header, pointer size; with the task, also whether the event
 * teaches (etw_decoder_learn_kind reads no more than these), so that a key
 * remembered from an event that taught nothing answers for the events
 * like it without asking again. 0 for an event that cannot be such. */
static int learn_memo_key(const etw_event *ev, uint8_t key[LEARN_KEY]) {
    etw_ext_item it;
    if (ev->is_logfile_header || ev->form == ETW_FORM_MESSAGE || ev->pointer_size >= 0x40 ||
        (ev->ext_count && etw_event_find_ext(ev, ETW_EXT_EVENT_SCHEMA_TL, &it) == ETW_OK))
        return 0;
    memcpy(key, &ev->provider.data1, 4);
    memcpy(key + 4, &ev->provider.data2, 2);
    memcpy(key + 6, &ev->provider.data3, 2);
    memcpy(key + 8, ev->provider.data4, 8);
    memcpy(key + 16, &ev->id, 2);
    key[18] = ev->opcode;
    key[19] = ev->version;
    key[20] = (uint8_t)ev->form;
    key[21] = (uint8_t)(ev->task & 0xFF);
    key[22] = (uint8_t)(ev->task >> 8);
    /* the high bit set: a used slot is never all zero */
    key[23] = (uint8_t)(0x80 | ((ev->flags & ETW_EVENT_FLAG_CLASSIC_HEADER) ? 0x40 : 0) | ev->pointer_size);
    return 1;
}

static size_t learn_memo_slot(const uint8_t key[LEARN_KEY], size_t mask) {
    uint64_t a, b, c;
    memcpy(&a, key, 8);
    memcpy(&b, key + 8, 8);
    memcpy(&c, key + 16, 8);
    uint64_t h = (a ^ (b * 0x9E3779B97F4A7C15u) ^ (c * 0xC2B2AE3D27D4EB4Fu)) * 0x165667B19E3779F9u;
    return (size_t)(h >> 32) & mask;
}

/* 1 when an event with this key was learned from since the decoder's
 * knowledge last changed (epoch); else, with add, remembers it; 0. */
static int learn_memo(etw_renderer *rd, const uint8_t key[LEARN_KEY], uint64_t epoch, int add) {
    if (epoch != rd->memo_epoch || (add && rd->memo_used >= LEARN_MEMO_MAX)) {
        if (rd->memo) memset(rd->memo, 0, rd->memo_cap * LEARN_KEY);
        rd->memo_used = 0;
        rd->memo_epoch = epoch;
    }
    if (!rd->memo) {
        if (!add) return 0;
        rd->memo_cap = 1024;
        if (!(rd->memo = etw_calloc(&rd->alloc, rd->memo_cap, LEARN_KEY))) return 0;
    } else if (add && (rd->memo_used + 1) * 2 > rd->memo_cap) {
        size_t nc = rd->memo_cap * 2;
        uint8_t(*nm)[LEARN_KEY] = etw_calloc(&rd->alloc, nc, LEARN_KEY);
        if (!nm) return 0; /* not remembered: learned again next time */
        for (size_t i = 0; i < rd->memo_cap; i++) {
            if (!rd->memo[i][LEARN_KEY - 1]) continue;
            size_t j = learn_memo_slot(rd->memo[i], nc - 1);
            while (nm[j][LEARN_KEY - 1]) j = (j + 1) & (nc - 1);
            memcpy(nm[j], rd->memo[i], LEARN_KEY);
        }
        etw_free(&rd->alloc, rd->memo);
        rd->memo = nm;
        rd->memo_cap = nc;
    }
    size_t mask = rd->memo_cap - 1, j = learn_memo_slot(key, mask);
    for (; rd->memo[j][LEARN_KEY - 1]; j = (j + 1) & mask)
        if (!memcmp(rd->memo[j], key, LEARN_KEY)) return 1;
    if (add) {
        memcpy(rd->memo[j], key, LEARN_KEY);
        rd->memo_used++;
    }
    return 0;
}

etw_status etw_renderer_learn(etw_renderer *rd, const etw_reader *r, const etw_event *ev) {
    if (!rd || !ev) return ETW_E_INVALID_ARG;
    if (rd->opt.format != ETW_RENDER_CSV || rd->opt.nfields || rd->header_done) return ETW_OK;
    etw_decoder *d = rd->opt.json.decoder;
    const etw_schema *schema = NULL;
    /* an event like one learned from, the decoder knowing what it knew
     * then: the same schema, nothing new (the lookup was most of the pass) */
    uint8_t key[LEARN_KEY];
    int memo = d && learn_memo_key(ev, key);
    uint64_t epoch = memo ? etw_decoder_epoch(d) : 0;
    if (memo && epoch == rd->memo_last_epoch && !memcmp(key, rd->memo_last, LEARN_KEY)) return ETW_OK;
    if (memo && learn_memo(rd, key, epoch, 0)) {
        memcpy(rd->memo_last, key, LEARN_KEY);
        rd->memo_last_epoch = epoch;
        return ETW_OK;
    }
    if (memo && etw_decoder_learn_kind(d, ev) != ETW_LEARN_NONE) memo = 0; /* it teaches: never remembered */
    etw_status rs = d && !ev->is_logfile_header ? etw_decoder_resolve(d, ev, &schema, NULL) : ETW_E_NOT_FOUND;
    if (rs != ETW_OK) schema = NULL;
    if (memo && rs != ETW_E_NOMEM) {
        epoch = etw_decoder_epoch(d);
        learn_memo(rd, key, epoch, 1);
        memcpy(rd->memo_last, key, LEARN_KEY);
        rd->memo_last_epoch = epoch;
    }
    if (!schema || etw_decoder_is_manifest_event(ev)) {
        if (ev->is_logfile_header || (schema && etw_decoder_is_manifest_event(ev)))
            return learn_from_json(rd, r, ev);
        return ETW_OK; /* no schema: no fields */
    }
    etw_status st;
    if (!first_sight(rd, schema->id, &st)) return st;
    for (uint16_t i = 0; i < schema->top_count && i < schema->prop_count; i++) {
        const char *nm = schema->props[i].name;
        st = add_column(rd, nm, strlen(nm), -1);
        if (st != ETW_OK) return st;
    }
    return ETW_OK;
}

etw_status etw_renderer_learn_from(etw_renderer *rd, const etw_renderer *from) {
    if (!rd || !from) return ETW_E_INVALID_ARG;
    if (rd->opt.format != ETW_RENDER_CSV || rd->opt.nfields || rd->header_done) return ETW_OK;
    for (size_t i = 0; i < from->ncols; i++) {
        const column *c = &from->cols[i];
        if (!c->field) continue; /* a fixed column (from's header is written) */
        etw_status st = add_column(rd, c->field, c->field_len, -1);
        if (st != ETW_OK) return st;
    }
    return ETW_OK;
}

/* ---- output helpers ------------------------------------------------------- */

static void time_text(etw_renderer *rd, etw_text *t, int64_t ft, int quote_strings) {
    switch (rd->opt.time) {
    case ETW_TIME_RELATIVE: {
        /* the difference in unsigned arithmetic: no overflow whatever the times */
        int64_t o = rd->opt.time_origin;
        uint64_t ad = ft >= o ? (uint64_t)ft - (uint64_t)o : (uint64_t)o - (uint64_t)ft;
        if (ft < o) etw_text_putc(t, '-');
        etw_text_u64(t, ad / TICKS);
        etw_text_putc(t, '.');
        char fr[7];
        etw_text_digits7(fr, (uint32_t)(ad % TICKS));
        etw_text_put(t, fr, 7);
        return;
    }
    case ETW_TIME_LOCAL: {
        long off = rd->opt.utc_offset ? rd->opt.utc_offset(rd->opt.utc_offset_ctx, ft) : 0;
        if (off > 86400 || off < -86400) off = 0;
        size_t mark = t->len;
        if (quote_strings) etw_text_putc(t, '"');
        if (etw_text_filetime(t, ft + (int64_t)off * TICKS) != ETW_OK) {
            t->len = mark;
            etw_text_puts(t, quote_strings ? "null" : "");
            return;
        }
        if (t->len > mark && t->data[t->len - 1] == 'Z') t->len--; /* the offset replaces the Z */
        long a = off < 0 ? -off : off;
        char z[7] = {off < 0 ? '-' : '+', (char)('0' + a / 36000), (char)('0' + a / 3600 % 10), ':',
                     (char)('0' + a / 600 % 6), (char)('0' + a / 60 % 10), 0};
        etw_text_put(t, z, 6);
        if (quote_strings) etw_text_putc(t, '"');
        return;
    }
    default: {
        size_t mark = t->len;
        if (quote_strings) etw_text_putc(t, '"');
        if (ft >= 0 && rd->tc_len && ft / TICKS == rd->tc_sec) {
            /* the same second as the last time: its text up to the '.' kept */
            char *o = etw_text_reserve(t, sizeof rd->tc_text + 8);
            if (!o) return; /* the buffer failed: etw_text_status says so */
            memcpy(o, rd->tc_text, sizeof rd->tc_text); /* a fixed-size copy: no call */
            o += rd->tc_len;
            etw_text_digits7(o, (uint32_t)(ft % TICKS));
            o[7] = 'Z';
            t->len += rd->tc_len + 8;
            if (quote_strings) etw_text_putc(t, '"');
            return;
        }
        if (etw_text_filetime(t, ft) != ETW_OK) {
            t->len = mark;
            etw_text_puts(t, quote_strings ? "null" : "");
            return;
        }
        /* "...:SS." then 7 digits and 'Z': the part before the digits kept */
        size_t from = mark + (quote_strings ? 1 : 0), n = t->len - from;
        if (etw_text_status(t) == ETW_OK && n > 8 && n - 8 <= sizeof rd->tc_text && t->data[t->len - 1] == 'Z' &&
            t->data[t->len - 9] == '.') {
            memcpy(rd->tc_text, t->data + from, n - 8);
            rd->tc_len = n - 8;
            rd->tc_sec = ft / TICKS;
        }
        if (quote_strings) etw_text_putc(t, '"');
        return;
    }
    }
}

static int field_wanted(const etw_renderer *rd, const etw_jmember *m) {
    for (size_t i = 0; i < rd->opt.nfields; i++) {
        const char *f = rd->opt.fields[i];
        if (f && etw_jscan_key_is(m->key, m->key_len, f, strlen(f))) return 1;
    }
    return 0;
}

/* Whether --fields (none: every field) wants the member whose key, as
 * written with its quotes, is line[key_off .. key_off + key_len). */
static int key_wanted(const etw_renderer *rd, const char *line, size_t key_off, size_t key_len) {
    if (!rd->opt.nfields) return 1;
    etw_jmember m = {line + key_off + 1, key_len - 2, NULL, 0};
    return field_wanted(rd, &m);
}

/* 1 when one of the eight bytes of w is c (the classic zero-byte test on
 * w ^ c: exact, a byte only borrows from a lower byte that is zero). */
static inline int has_byte(uint64_t w, unsigned char c) {
    uint64_t x = w ^ (UINT64_C(0x0101010101010101) * c);
    return ((x - UINT64_C(0x0101010101010101)) & ~x & UINT64_C(0x8080808080808080)) != 0;
}

/* The bytes of w equal to c, as their high bits (exact in the lowest such
 * byte; above it a byte may borrow: test only whether any is set, in a mask
 * of the lowest bytes). */
static inline uint64_t byte_hits(uint64_t w, unsigned char c) {
    uint64_t x = w ^ (UINT64_C(0x0101010101010101) * c);
    return (x - UINT64_C(0x0101010101010101)) & ~x & UINT64_C(0x8080808080808080);
}

/* A JSON value for TEXT: a string bare when it is safe to read so (names
 * may hold spaces: name_ok). The JSON form has every control character
 * escaped, so a string without a backslash has none. */
static void text_value_(etw_text *t, const char *v, size_t n, int name_ok) {
    /* bit 1: never bare; bit 2: not bare in a value or field name */
    static const uint8_t quote[256] = {['\\'] = 1, ['"'] = 1, [' '] = 2, ['='] = 2};
    if (n >= 2 && v[0] == '"') {
        const unsigned mask = name_ok ? 1u : 3u;
        const unsigned char *p = (const unsigned char *)v + 1, *end = (const unsigned char *)v + n - 1;
        if (p == end) {
            etw_text_put(t, v, n);
            return;
        }
        /* eight bytes at a time up to the first that may need quotes, then
         * byte by byte (keys and values are mostly short, plain words) */
        while (end - p >= 8) {
            uint64_t w;
            memcpy(&w, p, 8);
            if (has_byte(w, '\\') || has_byte(w, '"') || (!name_ok && (has_byte(w, ' ') || has_byte(w, '='))))
                break;
            p += 8;
        }
        while (p < end && !(quote[*p] & mask)) p++;
        if (p == end) {
            etw_text_put(t, v + 1, n - 2);
            return;
        }
    }
    etw_text_put(t, v, n);
}

static void text_value(etw_text *t, const char *v, size_t n) { text_value_(t, v, n, 0); }
static void text_name(etw_text *t, const char *v, size_t n) { text_value_(t, v, n, 1); }

/* The bytes of a JSON string's body: bit 1 a backslash, bit 2 a comma. */
static unsigned string_marks(const unsigned char *p, const unsigned char *end) {
    unsigned m = 0;
    while (end - p >= 8) { /* eight bytes at a time: bodies are mostly short, plain words */
        uint64_t w;
        memcpy(&w, p, 8);
        m |= (unsigned)has_byte(w, '\\') | (unsigned)has_byte(w, ',') << 1;
        if (m & 1) return m;
        p += 8;
    }
    for (; p < end; p++) {
        if (*p == '\\') return m | 1;
        if (*p == ',') m |= 2;
    }
    return m;
}

/* A CSV cell from a JSON value. */
static void csv_cell(etw_renderer *rd, etw_text *t, const char *v, size_t n) {
    if (!v || !n) return;
    const char *s = v;
    size_t len = n;
    int quote;
    unsigned char c0 = (unsigned char)v[0];
    if ((c0 >= '0' && c0 <= '9') || c0 == '-' || c0 == 't' || c0 == 'f') {
        etw_text_put(t, v, n); /* a number, true or false: as written */
        return;
    }
    unsigned marks = c0 == '"' && n >= 2 ? string_marks((const unsigned char *)v + 1, (const unsigned char *)v + n - 1)
                                         : 1;
    if (!(marks & 1)) {
        /* nothing escaped: the text between the quotes, which holds no
         * quote, CR or LF (JSON escapes them): only a comma makes it
         * quoted, and there is no quote to double */
        if (!(marks & 2)) {
            etw_text_put(t, v + 1, n - 2);
            return;
        }
        char *o = etw_text_reserve(t, n);
        if (!o) return; /* the buffer failed: etw_text_status says so */
        o[0] = '"';
        memcpy(o + 1, v + 1, n - 2);
        o[n - 1] = '"';
        t->len += n;
        return;
    } else if (n == 4 && !memcmp(v, "null", 4)) {
        return;
    } else {
        if (v[0] == '"') {
            etw_text *sc = &rd->scratch;
            etw_text_clear(sc);
            etw_jscan_unescape(sc, v, n);
            s = sc->data ? sc->data : "";
            len = sc->len;
        }
        /* an unescaped string, an object or an array */
        static const uint8_t special[256] = {[','] = 1, ['"'] = 1, ['\r'] = 1, ['\n'] = 1};
        quote = 0;
        for (size_t i = 0; i < len && !quote; i++) quote = special[(unsigned char)s[i]];
    }
    if (!quote) {
        etw_text_put(t, s, len);
        return;
    }
    /* quoted, each quote doubled (arrays of strings have many): room for
     * the most first, then piece by piece */
    if (len > (SIZE_MAX - 2) / 2) return;
    char *o = etw_text_reserve(t, 2 * len + 2);
    if (!o) return; /* the buffer failed: etw_text_status says so */
    char *o0 = o;
    const char *q;
    *o++ = '"';
    while (len >= 8) { /* eight bytes at a time, up to and with the next quote */
        uint64_t w;
        memcpy(&w, s, 8);
        uint64_t h = byte_hits(w, '"');
        memcpy(o, s, 8);
        if (!h) {
            o += 8;
            s += 8;
            len -= 8;
            continue;
        }
        size_t k = (size_t)__builtin_ctzll(h) / 8 + 1; /* the lowest hit is exact */
        o += k;
        *o++ = '"';
        s += k;
        len -= k;
    }
    while (len && (q = memchr(s, '"', len)) != NULL) {
        size_t k = (size_t)(q - s) + 1;
        memcpy(o, s, k);
        o += k;
        *o++ = '"';
        s += k;
        len -= k;
    }
    if (len) memcpy(o, s, len);
    o += len;
    *o++ = '"';
    t->len += (size_t)(o - o0);
}

/* The lowest k bytes of a word (k <= 8). */
static inline uint64_t low_bytes(size_t k) { return k >= 8 ? ~UINT64_C(0) : (UINT64_C(1) << (8 * k)) - 1; }

/* How a value of the line that ends at lend becomes a cell with no
 * call: numbers, and short plain strings (most cells). 1 with the cell's
 * bytes at *from (*len of them) - a short one may be moved with one
 * fixed-size copy of CELL_SHORT bytes, reading past the value within the
 * line, when *wide says so; 0 when csv_cell must make it. */
#define CELL_SHORT 40
static inline int csv_cell_plain(const char *v, size_t n, const char *lend, const char **from, size_t *len,
                                 int *wide) {
    unsigned char c0 = n ? (unsigned char)v[0] : 0;
    int room = lend - v > CELL_SHORT; /* CELL_SHORT bytes from v are the line's */
    if ((c0 >= '0' && c0 <= '9') || c0 == '-' || c0 == 't' || c0 == 'f') {
        *from = v; /* a number, true or false: as written */
        *len = n;
    } else if (c0 == '"' && n >= 2 && n <= CELL_SHORT && room) {
        /* the body v[1 .. n-1), a word at a time */
        size_t b = n - 2;
        uint64_t bs = 0, comma = 0;
        for (size_t i = 0; i < b; i += 8) {
            uint64_t w, m = low_bytes(b - i);
            memcpy(&w, v + 1 + i, 8);
            bs |= byte_hits(w, '\\') & m;
            comma |= byte_hits(w, ',') & m;
        }
        if (bs) return 0;
        /* nothing escaped: no quote, CR or LF inside; a comma makes it
         * quoted, which is the JSON text as it is */
        *from = comma ? v : v + 1;
        *len = comma ? n : b;
    } else {
        return 0;
    }
    *wide = *len <= CELL_SHORT && room;
    return 1;
}

/* A header cell. Names come from traces: through the JSON writer's string
 * form and back, so that the header is valid UTF-8 (U+FFFD for bad bytes). */
static void csv_name(etw_renderer *rd, etw_text *t, const char *name) {
    etw_text_clear(&rd->scratch);
    etw_text_json_utf8(&rd->scratch, name, strlen(name));
    etw_text_clear(&rd->summary);
    etw_jscan_unescape(&rd->summary, rd->scratch.data ? rd->scratch.data : "\"\"", rd->scratch.len);
    const char *s = etw_text_cstr(&rd->summary);
    int quote = strpbrk(s, ",\"\r\n") != NULL;
    if (!quote) {
        etw_text_puts(t, s);
        return;
    }
    etw_text_putc(t, '"');
    for (; *s; s++) {
        if (*s == '"') etw_text_putc(t, '"');
        etw_text_putc(t, *s);
    }
    etw_text_putc(t, '"');
}

/* Room in the per-row arrays for every column (a column learned while
 * rendering grows them: once per new column, never per event). */
static etw_status row_room(etw_renderer *rd) {
    if (rd->row_cap >= rd->ncols && rd->row_cap) return ETW_OK;
    size_t nc = rd->row_cap ? rd->row_cap : 64;
    while (nc < rd->ncols) nc *= 2;
    const char **cell = etw_calloc(&rd->alloc, nc, sizeof *cell);
    size_t *cell_len = etw_calloc(&rd->alloc, nc, sizeof *cell_len);
    size_t *set = etw_calloc(&rd->alloc, nc, sizeof *set);
    char *commas = etw_alloc(&rd->alloc, nc);
    if (!cell || !cell_len || !set || !commas) {
        etw_free(&rd->alloc, (void *)cell);
        etw_free(&rd->alloc, cell_len);
        etw_free(&rd->alloc, set);
        etw_free(&rd->alloc, commas);
        return ETW_E_NOMEM;
    }
    /* between rows every cell is unset: nothing to carry over */
    memset(commas, ',', nc);
    etw_free(&rd->alloc, (void *)rd->cell);
    etw_free(&rd->alloc, rd->cell_len);
    etw_free(&rd->alloc, rd->set);
    etw_free(&rd->alloc, rd->commas);
    rd->cell = cell;
    rd->cell_len = cell_len;
    rd->set = set;
    rd->commas = commas;
    rd->row_cap = nc;
    return ETW_OK;
}

/* Fix the CSV columns: the fixed ones first, then the field list or the
 * names learned so far (csv_stream: more may follow, at the end). */
static etw_status fix_columns(etw_renderer *rd) {
    column *learned = rd->cols;
    size_t nlearned = rd->ncols;
    rd->cols = NULL;
    rd->ncols = rd->cap = 0;
    etw_free(&rd->alloc, rd->hash);
    rd->hash = NULL;
    rd->hcap = 0;
    etw_status s = ETW_OK;
    for (int k = 0; k < NFIXED && s == ETW_OK; k++) {
        if ((k == COL_FILE && !rd->file) || (k == COL_MESSAGE && !rd->opt.json.messages) ||
            (k == COL_RAW && !rd->opt.json.raw_always))
            continue;
        rd->fixed_on[k] = 1;
        s = add_column(rd, NULL, 0, k);
    }
    rd->nfixed_cols = rd->ncols;
    if (rd->opt.nfields)
        for (size_t i = 0; i < rd->opt.nfields && s == ETW_OK; i++)
            s = add_column(rd, rd->opt.fields[i], strlen(rd->opt.fields[i]), -1);
    else
        for (size_t i = 0; i < nlearned && s == ETW_OK; i++)
            s = add_column(rd, learned[i].field, learned[i].field_len, -1);
    for (size_t i = 0; i < nlearned; i++) {
        etw_free(&rd->alloc, learned[i].name);
        etw_free(&rd->alloc, learned[i].field);
    }
    etw_free(&rd->alloc, learned);
    if (s != ETW_OK) return s;
    s = row_room(rd);
    if (s != ETW_OK) return s;
    rd->header_done = 1;
    for (int k = 0; k < NFIXED; k++) rd->col_of_fixed[k] = (size_t)-1;
    for (size_t i = 0; i < rd->ncols; i++)
        if (rd->cols[i].fixed >= 0) rd->col_of_fixed[rd->cols[i].fixed] = i;
    rd->nfixed_list = 0;
    for (int k = 0; k < NFIXED; k++)
        if (rd->col_of_fixed[k] != (size_t)-1) rd->fixed_list[rd->nfixed_list++] = (uint8_t)k;
    return ETW_OK;
}

/* The header row of the first n columns. */
static void header_row(etw_renderer *rd, etw_text *t, size_t n) {
    for (size_t i = 0; i < n; i++) {
        if (i) etw_text_putc(t, ',');
        csv_name(rd, t, rd->cols[i].name);
    }
    etw_text_puts(t, rd->opt.csv_lf ? "\n" : "\r\n");
}

etw_status etw_renderer_header(etw_renderer *rd, const char **out, size_t *len) {
    if (!rd || !out || !len) return ETW_E_INVALID_ARG;
    etw_text *t = &rd->out;
    etw_text_clear(t);
    if (rd->opt.format == ETW_RENDER_CSV && !rd->header_done) {
        etw_status s = fix_columns(rd);
        if (s != ETW_OK) return s;
        header_row(rd, t, rd->ncols);
    } else if (rd->opt.format == ETW_RENDER_XML && !rd->header_done) {
        rd->header_done = 1;
        etw_text_puts(t, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<Events>\n");
    }
    etw_status s = etw_text_status(t);
    if (s != ETW_OK) return s;
    *out = t->data ? t->data : "";
    *len = t->len;
    return ETW_OK;
}

etw_status etw_renderer_csv_header(etw_renderer *rd, size_t ncols, const char **out, size_t *len) {
    if (!rd || !out || !len || rd->opt.format != ETW_RENDER_CSV || !rd->opt.csv_stream) return ETW_E_INVALID_ARG;
    if (!rd->header_done) {
        etw_status s = fix_columns(rd);
        if (s != ETW_OK) return s;
    }
    if (ncols < rd->nfixed_cols) ncols = rd->nfixed_cols;
    if (ncols > rd->ncols) ncols = rd->ncols;
    etw_text *t = &rd->out;
    etw_text_clear(t);
    header_row(rd, t, ncols);
    etw_status s = etw_text_status(t);
    if (s != ETW_OK) return s;
    *out = t->data ? t->data : "";
    *len = t->len;
    return ETW_OK;
}

etw_status etw_renderer_csv_finish(etw_renderer *rd, const char *rows, size_t len, size_t ncols, size_t *used,
                                   const char **out, size_t *outlen) {
    if (!rd || (!rows && len) || !used || !out || !outlen || rd->opt.format != ETW_RENDER_CSV ||
        !rd->opt.csv_stream)
        return ETW_E_INVALID_ARG;
    etw_text *t = &rd->out;
    etw_text_clear(t);
    size_t pos = 0;
    for (;;) {
        /* a row's text is UTF-8: the first 0xFF is its end mark */
        const char *m = len > pos ? memchr(rows + pos, 0xFF, len - pos) : NULL;
        if (!m) break;
        size_t end = (size_t)(m - rows);
        if (len - end < ETW_CSV_STREAM_MARK) break;
        const unsigned char *b = (const unsigned char *)m + 1;
        size_t k = (size_t)b[0] | (size_t)b[1] << 8 | (size_t)b[2] << 16 | (size_t)b[3] << 24;
        etw_text_put(t, rows + pos, end - pos);
        /* the cells the row did not know of yet: empty */
        if (k < ncols) {
            if (ncols - k <= rd->row_cap) etw_text_put(t, rd->commas, ncols - k);
            else
                for (size_t i = k; i < ncols; i++) etw_text_putc(t, ',');
        }
        etw_text_puts(t, rd->opt.csv_lf ? "\n" : "\r\n");
        pos = end + ETW_CSV_STREAM_MARK;
    }
    etw_status s = etw_text_status(t);
    if (s != ETW_OK) return s;
    *used = pos;
    *out = t->data ? t->data : "";
    *outlen = t->len;
    return ETW_OK;
}

/* ---- events --------------------------------------------------------------- */

static void render_json(etw_renderer *rd, const etw_event *ev, const char *line, size_t len) {
    etw_text *t = &rd->out;
    if (!rd->opt.nfields && rd->opt.time == ETW_TIME_UTC) {
        etw_text_put(t, line, len);
        return;
    }
    size_t pos = 0;
    etw_jmember m;
    int first = 1;
    etw_text_putc(t, '{');
    while (etw_jscan_next_member(line, len, &pos, &m)) {
        if (!first) etw_text_putc(t, ',');
        first = 0;
        etw_text_putc(t, '"');
        etw_text_put(t, m.key, m.key_len);
        etw_text_puts(t, "\":");
        if (etw_jscan_key_is(m.key, m.key_len, "time", 4)) {
            time_text(rd, t, ev->timestamp, 1);
        } else if (rd->opt.nfields && etw_jscan_key_is(m.key, m.key_len, "fields", 6)) {
            size_t fp = 0;
            etw_jmember f;
            int ff = 1;
            etw_text_putc(t, '{');
            while (etw_jscan_next_member(m.value, m.value_len, &fp, &f)) {
                if (!field_wanted(rd, &f)) continue;
                if (!ff) etw_text_putc(t, ',');
                ff = 0;
                etw_text_putc(t, '"');
                etw_text_put(t, f.key, f.key_len);
                etw_text_puts(t, "\":");
                etw_text_put(t, f.value, f.value_len);
            }
            etw_text_putc(t, '}');
        } else {
            etw_text_put(t, m.value, m.value_len);
        }
    }
    etw_text_puts(t, "}\n");
}

/* The value of fixed key k in line (NULL, 0 when absent). */
#define SPAN(rd, line, k) ((rd)->sp.len[k] ? (line) + (rd)->sp.off[k] : NULL), (rd)->sp.len[k]

/* A WPP message as tracefmt writes it: its text alone (the default prefix
 * in it carries cpu, pid, tid and time), one line: CR, LF and tab as
 * spaces; then file= with several inputs and error= when there is one. */
static int render_text_wpp(etw_renderer *rd, const char *line) {
    etw_text *t = &rd->out;
    const etw_json_spans *sp = &rd->sp;
    if (!sp->schema || !sp->schema->wpp || !sp->len[COL_MESSAGE]) return 0;
    etw_text *sc = &rd->scratch;
    etw_text_clear(sc);
    etw_jscan_unescape(sc, line + sp->off[COL_MESSAGE], sp->len[COL_MESSAGE]);
    size_t start = t->len;
    etw_text_put(t, sc->data ? sc->data : "", sc->len);
    if (etw_text_status(t) == ETW_OK)
        for (size_t i = start; i < t->len; i++)
            if (t->data[i] == '\r' || t->data[i] == '\n' || t->data[i] == '\t') t->data[i] = ' ';
    if (sp->len[COL_FILE]) {
        etw_text_puts(t, " file=");
        text_value(t, SPAN(rd, line, COL_FILE));
    }
    if (sp->len[COL_ERROR]) {
        etw_text_puts(t, " error=");
        etw_text_put(t, line + sp->off[COL_ERROR], sp->len[COL_ERROR]);
    }
    etw_text_putc(t, '\n');
    return 1;
}

static schema_cols *schema_columns(etw_renderer *rd, const etw_schema *s);

/* Most bytes of remembered TEXT keys (rd->keys); past it keys are made
 * event after event. */
#define TEXT_KEYS_MAX ((size_t)16 << 20)
/* The longest key the JSON writer gives a NAME_drive member
 * (etw_fields_json.c writes it only when it fits in its 320 bytes). */
#define DRIVE_KEY_MAX 320

/* The key the JSON writer writes for property name (drive: its NAME_drive
 * member), as text shows it: text_value of the JSON key. 0 when the writer
 * writes no such key. */
static int text_key_make(etw_renderer *rd, etw_text *t, const char *name, int drive) {
    char buf[DRIVE_KEY_MAX];
    const char *k = name;
    size_t kn;
    if (drive) {
        int n = snprintf(buf, sizeof buf, "%s_drive", name);
        if (n < 0 || (size_t)n >= sizeof buf) return 0;
        k = buf;
        kn = (size_t)n;
    } else {
        kn = strlen(name);
    }
    etw_text *js = &rd->scratch;
    etw_text_clear(js);
    etw_text_json_utf8(js, k, kn);
    if (etw_text_status(js) != ETW_OK) return 0; /* no memory: etw_text_status says so */
    text_value(t, js->data, js->len);
    return 1;
}

/* The key of top-level field i (span f) of a keyless line: made once per
 * schema (sc, may be NULL) and kept in rd->keys. */
static void text_key(etw_renderer *rd, etw_text *t, schema_cols *sc, size_t i, const etw_field_span *f) {
    const etw_json_spans *sp = &rd->sp;
    int32_t *at = sc && i < sc->n && sp->schema->props[i].name == f->name ? &rd->pool[sc->off + i] : NULL;
    if (at && *at >= 0) {
        etw_text_put(t, rd->keys.data + *at, rd->plan[sc->off + i]);
        return;
    }
    if (at && *at == COL_UNKNOWN) {
        etw_text *k = &rd->keys;
        size_t start = k->len;
        *at = -1;
        if (start < TEXT_KEYS_MAX && text_key_make(rd, k, f->name, 0) && etw_text_status(k) == ETW_OK) {
            *at = (int32_t)start;
            rd->plan[sc->off + i] = (uint32_t)(k->len - start);
            etw_text_put(t, k->data + start, k->len - start);
            return;
        }
        if (etw_text_status(k) == ETW_OK) k->len = start;
    }
    text_key_make(rd, t, f->name, 0);
}

/* " NAME_drive=VALUE" after a field whose NT path has a drive form. */
static void text_drive(etw_renderer *rd, etw_text *t, const char *line, const etw_field_span *f) {
    if (!f->drive_len) return;
    if (f->drive_key_len) {
        if (!key_wanted(rd, line, f->drive_key_off, f->drive_key_len)) return;
        etw_text_putc(t, ' ');
        text_value(t, line + f->drive_key_off, f->drive_key_len);
    } else {
        etw_text_putc(t, ' ');
        if (!text_key_make(rd, t, f->name, 1)) return;
    }
    etw_text_putc(t, '=');
    text_value(t, line + f->drive_off, f->drive_len);
}

static void render_text(etw_renderer *rd, const etw_event *ev, const char *line) {
    etw_text *t = &rd->out;
    const etw_json_spans *sp = &rd->sp;
    if (render_text_wpp(rd, line)) return;
    time_text(rd, t, ev->timestamp, 0);
    if (sp->len[COL_FILE]) {
        etw_text_puts(t, " file=");
        text_value(t, SPAN(rd, line, COL_FILE));
    }
    etw_text_putc(t, ' ');
    if (sp->len[COL_PROVIDER]) text_name(t, SPAN(rd, line, COL_PROVIDER));
    etw_text_putc(t, '/');
    if (sp->len[COL_EVENT]) text_name(t, SPAN(rd, line, COL_EVENT));
    etw_text_puts(t, " pid=");
    etw_text_put(t, line + sp->off[COL_PID], sp->len[COL_PID]);
    if (sp->len[COL_PROCESS]) {
        etw_text_puts(t, " process=");
        text_value(t, SPAN(rd, line, COL_PROCESS));
    }
    etw_text_puts(t, " tid=");
    etw_text_put(t, line + sp->off[COL_TID], sp->len[COL_TID]);
    if (sp->complete && sp->no_keys) {
        /* the keys from the schema's names, made once per schema */
        schema_cols *sc = schema_columns(rd, sp->schema);
        for (size_t i = 0; i < sp->n; i++) {
            const etw_field_span *f = &sp->fields[i];
            etw_text_putc(t, ' ');
            text_key(rd, t, sc, i, f);
            etw_text_putc(t, '=');
            text_value(t, line + f->val_off, f->val_len);
            text_drive(rd, t, line, f);
        }
    } else if (sp->complete) {
        for (size_t i = 0; i < sp->n; i++) {
            const etw_field_span *f = &sp->fields[i];
            if (key_wanted(rd, line, f->key_off, f->key_len)) {
                etw_text_putc(t, ' ');
                text_value(t, line + f->key_off, f->key_len);
                etw_text_putc(t, '=');
                text_value(t, line + f->val_off, f->val_len);
            }
            text_drive(rd, t, line, f);
        }
    } else {
        const char *fields = line + sp->off[ETW_JK_FIELDS];
        size_t flen = sp->len[ETW_JK_FIELDS], fp = 0;
        etw_jmember m;
        while (etw_jscan_next_member(fields, flen, &fp, &m)) {
            if (rd->opt.nfields && !field_wanted(rd, &m)) continue;
            etw_text_putc(t, ' ');
            text_value(t, m.key - 1, m.key_len + 2);
            etw_text_putc(t, '=');
            text_value(t, m.value, m.value_len);
        }
    }
    if (sp->len[ETW_JK_STACK]) { /* a JSON array, as structs and arrays are shown */
        etw_text_puts(t, " stack=");
        etw_text_put(t, line + sp->off[ETW_JK_STACK], sp->len[ETW_JK_STACK]);
    }
    static const int tail[] = {COL_MESSAGE, COL_ERROR, COL_RAW};
    for (size_t i = 0; i < sizeof tail / sizeof tail[0]; i++) {
        int k = tail[i];
        if (!sp->len[k]) continue;
        etw_text_putc(t, ' ');
        etw_text_puts(t, fixed_names[k]);
        etw_text_putc(t, '=');
        etw_text_put(t, line + sp->off[k], sp->len[k]);
    }
    etw_text_putc(t, '\n');
}

/* The column of a field named by its key as written (quotes excluded). */
static long field_column(etw_renderer *rd, const char *k, size_t kn) {
    if (!memchr(k, '\\', kn)) return find_field(rd, k, kn);
    etw_text_clear(&rd->scratch);
    etw_jscan_unescape(&rd->scratch, k - 1, kn + 2);
    return find_field(rd, rd->scratch.data ? rd->scratch.data : "", rd->scratch.len);
}

/* The column of a field named name by its schema, as the JSON writer
 * would write the key (ASCII as it is, escaped and back; other bytes as
 * UTF-8, U+FFFD where they are not). */
static long name_column(etw_renderer *rd, const char *name) {
    size_t n = strlen(name), i = 0;
    while (i < n && (unsigned char)name[i] < 0x80) i++;
    if (i == n) return find_field(rd, name, n);
    etw_text *js = &rd->summary; /* free while a row's cells are placed */
    etw_text_clear(js);
    etw_text_json_utf8(js, name, n);
    etw_text_clear(&rd->scratch);
    if (etw_text_status(js) != ETW_OK) return -1; /* no memory: etw_text_status says so */
    etw_jscan_unescape(&rd->scratch, js->data ? js->data : "\"\"", js->data ? js->len : 2);
    return find_field(rd, rd->scratch.data ? rd->scratch.data : "", rd->scratch.len);
}

/* The column of the top-level field of span f (its key as written, or its
 * name when the writer wrote no keys). */
static long span_column(etw_renderer *rd, const char *line, const etw_field_span *f) {
    if (rd->sp.no_keys) return name_column(rd, f->name);
    return field_column(rd, line + f->key_off + 1, f->key_len - 2);
}

/* Where the columns of s's properties are remembered, made the first time s
 * is seen; NULL past the limits or without memory (the fields are then
 * found by name: the same columns, more slowly). */
static schema_cols *schema_columns(etw_renderer *rd, const etw_schema *s) {
    if (!s || !s->top_count) return NULL;
    if (rd->sc_cap) {
        size_t j = (s->id * 2654435761u) & (rd->sc_cap - 1);
        for (; rd->sc[j].schema; j = (j + 1) & (rd->sc_cap - 1))
            if (rd->sc[j].schema == s && rd->sc[j].id == s->id) return &rd->sc[j];
    }
    if (rd->sc_used >= CSV_SCHEMAS_MAX || rd->pool_len + s->top_count > CSV_PROPS_MAX) return NULL;
    if ((rd->sc_used + 1) * 2 > rd->sc_cap) {
        size_t nc = rd->sc_cap ? rd->sc_cap * 2 : 64;
        schema_cols *ns = etw_calloc(&rd->alloc, nc, sizeof *ns);
        if (!ns) return NULL;
        for (size_t i = 0; i < rd->sc_cap; i++) {
            if (!rd->sc[i].schema) continue;
            size_t j = (rd->sc[i].id * 2654435761u) & (nc - 1);
            while (ns[j].schema) j = (j + 1) & (nc - 1);
            ns[j] = rd->sc[i];
        }
        etw_free(&rd->alloc, rd->sc);
        rd->sc = ns;
        rd->sc_cap = nc;
    }
    if (rd->pool_len + s->top_count > rd->pool_cap) {
        size_t nc = rd->pool_cap ? rd->pool_cap : 1024;
        while (nc < rd->pool_len + s->top_count) nc *= 2;
        int32_t *np = etw_alloc(&rd->alloc, nc * sizeof *np);
        uint32_t *nl = etw_alloc(&rd->alloc, nc * sizeof *nl);
        if (!np || !nl) {
            etw_free(&rd->alloc, np);
            etw_free(&rd->alloc, nl);
            return NULL;
        }
        if (rd->pool_len) {
            memcpy(np, rd->pool, rd->pool_len * sizeof *np);
            memcpy(nl, rd->plan, rd->pool_len * sizeof *nl);
        }
        etw_free(&rd->alloc, rd->pool);
        etw_free(&rd->alloc, rd->plan);
        rd->pool = np;
        rd->plan = nl;
        rd->pool_cap = nc;
    }
    size_t j = (s->id * 2654435761u) & (rd->sc_cap - 1);
    while (rd->sc[j].schema) j = (j + 1) & (rd->sc_cap - 1);
    schema_cols *e = &rd->sc[j];
    e->schema = s;
    e->id = s->id;
    e->off = (uint32_t)rd->pool_len;
    e->n = s->top_count;
    e->plan_n = 0;
    e->planned = 0;
    for (size_t i = 0; i < e->n; i++) rd->pool[e->off + i] = COL_UNKNOWN;
    rd->pool_len += e->n;
    rd->sc_used++;
    return e;
}

/* Column c has a value in this row. */
static void csv_set(etw_renderer *rd, size_t c, const char *v, size_t n) {
    if (!rd->cell[c]) rd->set[rd->nset++] = c;
    rd->cell[c] = v;
    rd->cell_len[c] = n;
}

/* n commas: the separators before a cell, the empty cells between as one
 * run, at o, which has room for max(n, CSV_SHORT_RUN); returns o + n. Most
 * runs are short: those are one fixed-size copy (a few stores, no call),
 * past them bytes the next cells overwrite. */
#define CSV_SHORT_RUN 32
static inline char *put_commas(const etw_renderer *rd, char *o, size_t n) {
    static const char short_run[CSV_SHORT_RUN + 1] = ",,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,";
    if (n > CSV_SHORT_RUN) memcpy(o, rd->commas, n);
    else memcpy(o, short_run, CSV_SHORT_RUN);
    return o + n;
}

/* put_commas at the end of t. */
static inline void csv_commas(etw_renderer *rd, etw_text *t, size_t n) {
    char *p = etw_text_reserve(t, n > CSV_SHORT_RUN ? n : CSV_SHORT_RUN);
    if (!p) return; /* the buffer failed: etw_text_status says so */
    t->len += (size_t)(put_commas(rd, p, n) - p);
}

/* The cells provider..keywords as one piece of CSV text, from the slot of
 * their JSON text (made on a miss); NULL: cell by cell (a key absent, the
 * columns apart, a text too long, no memory). */
static const struct seg_slot *csv_segment(etw_renderer *rd, const char *line) {
    const etw_json_spans *sp = &rd->sp;
    size_t first = rd->col_of_fixed[SEG_FIRST], last = rd->col_of_fixed[SEG_LAST];
    if (first == (size_t)-1 || last != first + (SEG_LAST - SEG_FIRST)) return NULL;
    for (int k = SEG_FIRST; k <= SEG_LAST; k++)
        if (!sp->len[k]) return NULL;
    size_t from = sp->off[SEG_FIRST], to = sp->off[SEG_LAST] + sp->len[SEG_LAST];
    if (to <= from || to - from > SEG_MAX) return NULL;
    if (!rd->seg && !(rd->seg = etw_calloc(&rd->alloc, SEG_SLOTS, sizeof *rd->seg))) return NULL;
    const char *j = line + from;
    size_t jn = to - from;
    /* the slot by the schema and the lengths (cheap; the bytes decide) */
    uint64_t h = (uint64_t)(sp->schema ? sp->schema->id + 1u : 0u) * 2654435761u ^ jn * 40503u ^ sp->len[COL_EVENT];
    struct seg_slot *g = &rd->seg[(h ^ h >> 16) & (SEG_SLOTS - 1)];
    if (sp->seg && g->jseg == sp->seg && g->jlen == jn) return g; /* the same memo text: no compare */
    if (g->jlen == jn && !memcmp(g->json, j, jn)) {
        g->jseg = sp->seg;
        return g;
    }
    etw_text *m = &rd->summary;
    etw_text_clear(m);
    for (int k = SEG_FIRST; k <= SEG_LAST; k++) {
        if (k != SEG_FIRST) etw_text_putc(m, ',');
        csv_cell(rd, m, line + sp->off[k], sp->len[k]);
    }
    if (etw_text_status(m) != ETW_OK || m->len > SEG_MAX) {
        etw_text_clear(m);
        g->jlen = 0;
        g->jseg = 0;
        return NULL;
    }
    memcpy(g->json, j, jn);
    g->jlen = (uint16_t)jn;
    g->jseg = sp->seg;
    memcpy(g->csv, m->data, m->len);
    g->clen = (uint16_t)m->len;
    return g;
}

static int plan_order(const void *a, const void *b) {
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

/* The plan of sc for this event: 1 when its spans are the schema's
 * properties one for one (then every column is known, and the plan is
 * made the first time), 0 when the row is made cell by cell. */
static int csv_plan(etw_renderer *rd, schema_cols *sc, const char *line) {
    const etw_json_spans *sp = &rd->sp;
    if (sc->planned < 0 || sp->n != sc->n) return 0;
    const etw_property *props = sp->schema->props;
    for (size_t i = 0; i < sp->n; i++)
        if (props[i].name != sp->fields[i].name) return 0;
    if (sc->planned) return 1;
    /* once per schema: every property's column, then them in column order
     * (the property's index breaks ties: the last of a column is kept) */
    int32_t *col = &rd->pool[sc->off];
    uint64_t *order = etw_alloc(&rd->alloc, (sc->n ? sc->n : 1) * sizeof *order);
    if (!order) {
        sc->planned = -1;
        return 0;
    }
    size_t m = 0;
    for (size_t i = 0; i < sc->n; i++) {
        const etw_field_span *f = &sp->fields[i];
        if (col[i] == COL_UNKNOWN) col[i] = (int32_t)span_column(rd, line, f);
        if (col[i] >= 0) order[m++] = (uint64_t)col[i] << 32 | i;
    }
    if (m > 1) qsort(order, m, sizeof *order, plan_order);
    uint32_t *plan = &rd->plan[sc->off];
    size_t k = 0;
    for (size_t i = 0; i < m; i++) {
        if (i + 1 < m && order[i + 1] >> 32 == order[i] >> 32) continue; /* a later property has the column */
        plan[k++] = (uint32_t)(order[i] & 0xFFFFFFFFu);
    }
    etw_free(&rd->alloc, order);
    sc->plan_n = (uint32_t)k;
    sc->planned = 1;
    return 1;
}

/* The end of a row whose last cell written is column next. */
static void csv_row_end(etw_renderer *rd, etw_text *t, size_t next) {
    if (rd->opt.csv_stream && !rd->opt.nfields) {
        /* the columns may grow: no empty cells after the last set one, but
         * the mark, the cells written and the columns known, for
         * etw_renderer_csv_finish to pad the row to the final count */
        size_t k = next + 1, n = rd->ncols;
        char mark[ETW_CSV_STREAM_MARK] = {(char)0xFF,
                                          (char)(k & 0xFF), (char)(k >> 8 & 0xFF), (char)(k >> 16 & 0xFF),
                                          (char)(k >> 24 & 0xFF),
                                          (char)(n & 0xFF), (char)(n >> 8 & 0xFF), (char)(n >> 16 & 0xFF),
                                          (char)(n >> 24 & 0xFF)};
        etw_text_put(t, mark, sizeof mark);
        return;
    }
    if (rd->ncols) csv_commas(rd, t, rd->ncols - 1 - next);
    etw_text_puts(t, rd->opt.csv_lf ? "\n" : "\r\n");
}

/* A row by its schema's plan: the cells left to right (the fixed columns
 * come first, in the order of their keys), the empty ones between them as
 * runs of commas - the cells render_csv would set, with nothing to sort.
 * Room for the whole row is reserved first and the row written through a
 * local pointer (no check, and no reload of the text's length, per cell);
 * what the pointer cannot write (csv_cell, other time forms) goes through
 * the text, and the room is reserved again after it. */
static void render_csv_planned(etw_renderer *rd, const etw_event *ev, const char *line, const char *lend,
                               const schema_cols *sc, const struct seg_slot *g) {
    etw_text *t = &rd->out;
    const etw_json_spans *sp = &rd->sp;
    /* the most the row takes: its cells, each at most twice its JSON text
     * and two quotes (csv_cell), a comma a column, the segment, the time
     * and the fixed-size copies' overreach */
    const size_t bound = 2 * (size_t)(lend - line) + 3 * rd->ncols + SEG_MAX + 256;
    char *o = etw_text_reserve(t, bound);
    if (!o) return; /* the buffer failed: etw_text_status says so */
#define PLAN_COMMAS(n_) (o = put_commas(rd, o, (n_)))
#define PLAN_CELL(v_, n_)                                                                                            \
    do {                                                                                                           \
        const char *from_;                                                                                         \
        size_t len_;                                                                                               \
        int wide_;                                                                                                 \
        if (csv_cell_plain((v_), (n_), lend, &from_, &len_, &wide_)) {                                            \
            if (wide_) memcpy(o, from_, CELL_SHORT); /* fixed size: no call */                                    \
            else memcpy(o, from_, len_);                                                                           \
            o += len_;                                                                                             \
        } else {                                                                                                   \
            t->len = (size_t)(o - t->data);                                                                        \
            csv_cell(rd, t, (v_), (n_));                                                                           \
            if (!(o = etw_text_reserve(t, bound))) return;                                                         \
        }                                                                                                          \
    } while (0)
    size_t next = 0; /* the column the text has reached */
    for (int x = 0; x < rd->nfixed_list; x++) {
        int k = rd->fixed_list[x];
        size_t c = rd->col_of_fixed[k];
        if (k == COL_TIME) {
            PLAN_COMMAS(c - next);
            next = c;
            int64_t ft = ev->timestamp;
            if (rd->opt.time != ETW_TIME_RELATIVE && rd->opt.time != ETW_TIME_LOCAL && ft >= 0 && rd->tc_len &&
                ft / TICKS == rd->tc_sec) {
                /* time_text's same-second case */
                memcpy(o, rd->tc_text, sizeof rd->tc_text);
                o += rd->tc_len;
                etw_text_digits7(o, (uint32_t)(ft % TICKS));
                o[7] = 'Z';
                o += 8;
            } else {
                t->len = (size_t)(o - t->data);
                time_text(rd, t, ft, 0); /* in the chosen form, never quoted */
                if (!(o = etw_text_reserve(t, bound))) return;
            }
        } else if (g && k == SEG_FIRST) { /* cells already made, up to keywords */
            PLAN_COMMAS(c - next);
            memcpy(o, g->csv, g->clen);
            o += g->clen;
            next = rd->col_of_fixed[SEG_LAST];
            x += SEG_LAST - SEG_FIRST; /* csv_segment: their columns are consecutive */
        } else if (sp->len[k]) {
            PLAN_COMMAS(c - next);
            next = c;
            PLAN_CELL(line + sp->off[k], sp->len[k]);
        }
    }
    const int32_t *col = &rd->pool[sc->off];
    const uint32_t *plan = &rd->plan[sc->off];
    for (size_t j = 0; j < sc->plan_n; j++) {
        uint32_t i = plan[j];
        size_t c = (size_t)col[i];
        const etw_field_span *f = &sp->fields[i];
        PLAN_COMMAS(c - next);
        next = c;
        PLAN_CELL(line + f->val_off, f->val_len);
    }
#undef PLAN_CELL
#undef PLAN_COMMAS
    t->len = (size_t)(o - t->data);
    csv_row_end(rd, t, next);
}

static void render_csv(etw_renderer *rd, const etw_event *ev, const char *line, size_t line_len) {
    etw_text *t = &rd->out;
    const etw_json_spans *sp = &rd->sp;
    rd->nset = 0;
    const struct seg_slot *g = csv_segment(rd, line);
    schema_cols *sc = sp->complete ? schema_columns(rd, sp->schema) : NULL;
    if (sc && csv_plan(rd, sc, line)) {
        render_csv_planned(rd, ev, line, line + line_len, sc, g);
        return;
    }
    rd->seg_col = g ? rd->col_of_fixed[SEG_FIRST] : (size_t)-1;
    for (int k = 0; k < NFIXED; k++) {
        size_t c = rd->col_of_fixed[k];
        if (g && k >= SEG_FIRST && k <= SEG_LAST) {
            if (k == SEG_FIRST) csv_set(rd, c, g->csv, g->clen);
            continue;
        }
        if (c == (size_t)-1 || (!sp->len[k] && k != COL_TIME)) continue;
        csv_set(rd, c, k == COL_TIME ? "" : line + sp->off[k], sp->len[k]);
    }
    if (sp->complete) {
        /* span i is property i of the schema (when the names agree): its
         * column is looked up by name once per schema */
        for (size_t i = 0; i < sp->n; i++) {
            const etw_field_span *f = &sp->fields[i];
            int32_t *known = sc && i < sc->n && sp->schema->props[i].name == f->name ? &rd->pool[sc->off + i] : NULL;
            long c;
            if (known && *known != COL_UNKNOWN) {
                c = *known;
            } else {
                c = span_column(rd, line, f);
                if (known) *known = (int32_t)c;
            }
            if (c >= 0) csv_set(rd, (size_t)c, line + f->val_off, f->val_len);
        }
    } else {
        const char *fields = line + sp->off[ETW_JK_FIELDS];
        size_t flen = sp->len[ETW_JK_FIELDS], fp = 0;
        etw_jmember f;
        while (etw_jscan_next_member(fields, flen, &fp, &f)) {
            long c = field_column(rd, f.key, f.key_len);
            if (c >= 0) csv_set(rd, (size_t)c, f.value, f.value_len);
        }
    }
    /* the set columns in column order (few: insertion sort), the empty
     * ones between them as runs of commas */
    size_t *set = rd->set;
    for (size_t i = 1; i < rd->nset; i++) {
        size_t v = set[i], j = i;
        while (j > 0 && set[j - 1] > v) {
            set[j] = set[j - 1];
            j--;
        }
        set[j] = v;
    }
    size_t next = 0; /* the column the text has reached */
    const size_t time_col = rd->col_of_fixed[COL_TIME];
    for (size_t i = 0; i < rd->nset; i++) {
        size_t c = set[i];
        csv_commas(rd, t, c - next); /* a comma before every column after the first */
        next = c;
        if (c == time_col) {
            time_text(rd, t, ev->timestamp, 0); /* in the chosen form, never quoted */
        } else if (c == rd->seg_col) { /* cells already made, up to keywords */
            etw_text_put(t, rd->cell[c], rd->cell_len[c]);
            next = rd->col_of_fixed[SEG_LAST];
        } else {
            csv_cell(rd, t, rd->cell[c], rd->cell_len[c]);
        }
        rd->cell[c] = NULL;
    }
    csv_row_end(rd, t, next);
}

/* csv_stream: the columns of what this event adds, as etw_renderer_learn
 * would have learned them (its schema's top-level property names the first
 * time the schema is seen; the "fields" members of the log-file header and
 * of EventSource manifest chunks, which do not come from a schema). */
static etw_status stream_learn(etw_renderer *rd, const etw_event *ev, const char *line) {
    const etw_schema *schema = rd->sp.schema;
    size_t before = rd->ncols;
    etw_status st = ETW_OK;
    int manifest = schema && etw_decoder_is_manifest_event(ev);
    if (!schema || manifest) {
        if ((ev->is_logfile_header || manifest) && rd->sp.len[ETW_JK_FIELDS]) {
            const char *f = line + rd->sp.off[ETW_JK_FIELDS];
            size_t fl = rd->sp.len[ETW_JK_FIELDS], pos = 0;
            etw_jmember m;
            while (st == ETW_OK && etw_jscan_next_member(f, fl, &pos, &m)) {
                etw_text_clear(&rd->scratch);
                etw_jscan_unescape(&rd->scratch, m.key - 1, m.key_len + 2);
                if (etw_text_status(&rd->scratch) != ETW_OK) return ETW_E_NOMEM;
                st = add_column(rd, rd->scratch.data ? rd->scratch.data : "", rd->scratch.len, -1);
            }
        }
    } else if (first_sight(rd, schema->id, &st)) {
        for (uint16_t i = 0; i < schema->top_count && i < schema->prop_count && st == ETW_OK; i++) {
            const char *nm = schema->props[i].name;
            st = add_column(rd, nm, strlen(nm), -1);
        }
    }
    if (st == ETW_OK && rd->ncols != before) st = row_room(rd);
    return st;
}

/* ---- Timesketch ------------------------------------------------------------ */

/* FILETIME of 1970-01-01T00:00:00Z */
#define UNIX_EPOCH_FT INT64_C(116444736000000000)

/* ,"field_KEY":VALUE for a member of "fields" (key as written, quotes
 * included): a struct or an array as a JSON string, the rest as written. */
static void timesketch_field(etw_renderer *rd, etw_text *t, const char *line, size_t key_off, size_t key_len,
                             size_t val_off, size_t val_len) {
    if (!key_wanted(rd, line, key_off, key_len)) return;
    etw_text_puts(t, ",\"field_");
    etw_text_put(t, line + key_off + 1, key_len - 1);
    etw_text_putc(t, ':');
    const char *v = line + val_off;
    if (v[0] == '{' || v[0] == '[') etw_text_json_utf8(t, v, val_len);
    else etw_text_put(t, v, val_len);
}

static void render_timesketch(etw_renderer *rd, const etw_event *ev, const char *line) {
    etw_text *t = &rd->out;
    const etw_json_spans *sp = &rd->sp;
    etw_text_puts(t, "{\"message\":");
    if (sp->len[COL_MESSAGE]) {
        etw_text_put(t, line + sp->off[COL_MESSAGE], sp->len[COL_MESSAGE]);
    } else {
        /* PROVIDER/EVENT name=value ..., as the text format writes them */
        etw_text *m = &rd->summary;
        etw_text_clear(m);
        if (sp->len[COL_PROVIDER]) text_name(m, SPAN(rd, line, COL_PROVIDER));
        etw_text_putc(m, '/');
        if (sp->len[COL_EVENT]) text_name(m, SPAN(rd, line, COL_EVENT));
        if (sp->complete) {
            for (size_t i = 0; i < sp->n; i++) {
                const etw_field_span *f = &sp->fields[i];
                etw_text_putc(m, ' ');
                text_value(m, line + f->key_off, f->key_len);
                etw_text_putc(m, '=');
                text_value(m, line + f->val_off, f->val_len);
                if (f->drive_len) {
                    etw_text_putc(m, ' ');
                    text_value(m, line + f->drive_key_off, f->drive_key_len);
                    etw_text_putc(m, '=');
                    text_value(m, line + f->drive_off, f->drive_len);
                }
            }
        } else {
            size_t fp = 0;
            etw_jmember f;
            while (etw_jscan_next_member(line + sp->off[ETW_JK_FIELDS], sp->len[ETW_JK_FIELDS], &fp, &f)) {
                etw_text_putc(m, ' ');
                text_value(m, f.key - 1, f.key_len + 2);
                etw_text_putc(m, '=');
                text_value(m, f.value, f.value_len);
            }
        }
        etw_text_json_utf8(t, m->data ? m->data : "", m->len);
    }
    /* datetime: microseconds and an explicit offset, the form every ISO 8601
     * reader takes (the 7th fractional digit dropped) */
    etw_text_puts(t, ",\"datetime\":");
    size_t mark = t->len;
    etw_text_putc(t, '"');
    if (etw_text_filetime(t, ev->timestamp) == ETW_OK && t->len - mark >= 10) {
        t->len -= 2; /* the 7th digit and the Z */
        etw_text_puts(t, "+00:00\"");
        int64_t d = ev->timestamp - UNIX_EPOCH_FT; /* timestamp >= 0 here: no overflow */
        int64_t us = d >= 0 ? d / 10 : -((-d + 9) / 10);
        etw_text_puts(t, ",\"timestamp\":");
        etw_text_i64(t, us);
    } else {
        t->len = mark;
        etw_text_puts(t, "null,\"timestamp\":null");
    }
    etw_text_puts(t, ",\"timestamp_desc\":\"Event Time\"");
    for (int k = COL_FILE; k < NFIXED; k++) {
        if (k == COL_MESSAGE || !sp->len[k]) continue;
        etw_text_puts(t, ",\"");
        etw_text_puts(t, fixed_names[k]);
        etw_text_puts(t, "\":");
        etw_text_put(t, line + sp->off[k], sp->len[k]);
    }
    if (sp->complete) {
        for (size_t i = 0; i < sp->n; i++) {
            const etw_field_span *f = &sp->fields[i];
            timesketch_field(rd, t, line, f->key_off, f->key_len, f->val_off, f->val_len);
            if (f->drive_len)
                timesketch_field(rd, t, line, f->drive_key_off, f->drive_key_len, f->drive_off, f->drive_len);
        }
    } else {
        size_t fp = 0;
        etw_jmember f;
        while (etw_jscan_next_member(line + sp->off[ETW_JK_FIELDS], sp->len[ETW_JK_FIELDS], &fp, &f)) {
            if (rd->opt.nfields && !field_wanted(rd, &f)) continue;
            etw_text_puts(t, ",\"field_");
            etw_text_put(t, f.key, f.key_len);
            etw_text_puts(t, "\":");
            if (f.value[0] == '{' || f.value[0] == '[') etw_text_json_utf8(t, f.value, f.value_len);
            else etw_text_put(t, f.value, f.value_len);
        }
    }
    etw_text_puts(t, "}\n");
}

/* ---- XML -------------------------------------------------------------------- */

/* UTF-8 text (valid: it comes from our JSON) as XML character data or an
 * attribute value: markup characters escaped, tab/LF/CR as references (an
 * attribute keeps them), what XML 1.0 forbids as U+FFFD. */
static void xml_text(etw_text *t, const char *s, size_t n) {
    size_t run = 0;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        const char *rep = NULL;
        size_t skip = 1;
        if (c >= 0x20 && c != '&' && c != '<' && c != '>' && c != '"' && c != '\'' && c != 0xEF) continue;
        switch (c) {
        case '&': rep = "&amp;"; break;
        case '<': rep = "&lt;"; break;
        case '>': rep = "&gt;"; break;
        case '"': rep = "&quot;"; break;
        case '\'': rep = "&apos;"; break;
        case '\t': rep = "&#9;"; break;
        case '\n': rep = "&#10;"; break;
        case '\r': rep = "&#13;"; break;
        case 0xEF: /* U+FFFE, U+FFFF: EF BF BE, EF BF BF */
            if (i + 2 < n && (unsigned char)s[i + 1] == 0xBF && ((unsigned char)s[i + 2] & 0xFE) == 0xBE) {
                rep = "\xEF\xBF\xBD";
                skip = 3;
            }
            break;
        default: rep = "\xEF\xBF\xBD"; break; /* another control character */
        }
        if (!rep) continue;
        etw_text_put(t, s + run, i - run);
        etw_text_puts(t, rep);
        i += skip - 1;
        run = i + 1;
    }
    etw_text_put(t, s + run, n - run);
}

/* A JSON value as XML text: strings unescaped, null empty, the rest as
 * written. */
static void xml_value(etw_renderer *rd, etw_text *t, const char *v, size_t n) {
    if (!v || !n || (n == 4 && !memcmp(v, "null", 4))) return;
    if (v[0] != '"') {
        xml_text(t, v, n);
        return;
    }
    if (!memchr(v, '\\', n)) {
        xml_text(t, v + 1, n - 2);
        return;
    }
    etw_text *sc = &rd->scratch;
    etw_text_clear(sc);
    etw_jscan_unescape(sc, v, n);
    xml_text(t, sc->data ? sc->data : "", sc->len);
}

/* A JSON string holding a GUID as "{GUID}" in upper case. */
static void xml_guid(etw_text *t, const char *v, size_t n) {
    etw_text_putc(t, '{');
    for (size_t i = 1; i + 1 < n; i++) {
        char c = v[i];
        etw_text_putc(t, c >= 'a' && c <= 'f' ? (char)(c - 'a' + 'A') : c);
    }
    etw_text_putc(t, '}');
}

static void xml_element(etw_text *t, const char *name, const char *v, size_t n) {
    etw_text_putc(t, '<');
    etw_text_puts(t, name);
    etw_text_putc(t, '>');
    etw_text_put(t, v, n);
    etw_text_puts(t, "</");
    etw_text_puts(t, name);
    etw_text_putc(t, '>');
}

static void xml_data(etw_renderer *rd, etw_text *t, const char *key, size_t kn, const char *v, size_t vn) {
    etw_text_puts(t, "<Data Name=\"");
    xml_value(rd, t, key, kn);
    etw_text_puts(t, "\">");
    xml_value(rd, t, v, vn);
    etw_text_puts(t, "</Data>");
}

/* xml_data for a member of "fields" (key as written, quotes included),
 * when --fields wants it. */
static void xml_field(etw_renderer *rd, etw_text *t, const char *line, size_t key_off, size_t key_len,
                      size_t val_off, size_t val_len) {
    if (!key_wanted(rd, line, key_off, key_len)) return;
    xml_data(rd, t, line + key_off, key_len, line + val_off, val_len);
}

static void render_xml(etw_renderer *rd, const etw_event *ev, const char *line) {
    etw_text *t = &rd->out;
    const etw_json_spans *sp = &rd->sp;
    (void)ev;
    etw_text_puts(t, "<Event xmlns=\"http://schemas.microsoft.com/win/2004/08/events/event\"><System>"
                     "<Provider Name=\"");
    xml_value(rd, t, SPAN(rd, line, COL_PROVIDER));
    etw_text_puts(t, "\" Guid=\"");
    xml_guid(t, SPAN(rd, line, COL_PROVIDER_GUID));
    etw_text_puts(t, "\"/>");
    xml_element(t, "EventID", SPAN(rd, line, COL_ID));
    xml_element(t, "Version", SPAN(rd, line, COL_VERSION));
    xml_element(t, "Level", SPAN(rd, line, COL_LEVEL));
    xml_element(t, "Task", SPAN(rd, line, COL_TASK));
    xml_element(t, "Opcode", SPAN(rd, line, COL_OPCODE));
    etw_text_puts(t, "<Keywords>");
    xml_value(rd, t, SPAN(rd, line, COL_KEYWORDS));
    etw_text_puts(t, "</Keywords><TimeCreated SystemTime=\"");
    xml_value(rd, t, SPAN(rd, line, COL_TIME));
    etw_text_puts(t, "\"/><Correlation");
    if (sp->len[COL_ACTIVITY]) {
        etw_text_puts(t, " ActivityID=\"");
        xml_guid(t, SPAN(rd, line, COL_ACTIVITY));
        etw_text_putc(t, '"');
    }
    if (sp->len[COL_RELATED]) {
        etw_text_puts(t, " RelatedActivityID=\"");
        xml_guid(t, SPAN(rd, line, COL_RELATED));
        etw_text_putc(t, '"');
    }
    etw_text_puts(t, "/><Execution");
    if (sp->len[COL_PID] && line[sp->off[COL_PID]] != '-') {
        etw_text_puts(t, " ProcessID=\"");
        etw_text_put(t, SPAN(rd, line, COL_PID));
        etw_text_putc(t, '"');
    }
    if (sp->len[COL_TID] && line[sp->off[COL_TID]] != '-') {
        etw_text_puts(t, " ThreadID=\"");
        etw_text_put(t, SPAN(rd, line, COL_TID));
        etw_text_putc(t, '"');
    }
    etw_text_puts(t, " ProcessorID=\"");
    etw_text_put(t, SPAN(rd, line, COL_CPU));
    etw_text_puts(t, "\"/><Channel/><Computer/></System><EventData>");
    if (sp->complete) {
        for (size_t i = 0; i < sp->n; i++) {
            const etw_field_span *f = &sp->fields[i];
            xml_field(rd, t, line, f->key_off, f->key_len, f->val_off, f->val_len);
            if (f->drive_len) xml_field(rd, t, line, f->drive_key_off, f->drive_key_len, f->drive_off, f->drive_len);
        }
    } else {
        size_t fp = 0;
        etw_jmember f;
        while (etw_jscan_next_member(line + sp->off[ETW_JK_FIELDS], sp->len[ETW_JK_FIELDS], &fp, &f)) {
            if (rd->opt.nfields && !field_wanted(rd, &f)) continue;
            xml_data(rd, t, f.key - 1, f.key_len + 2, f.value, f.value_len);
        }
    }
    etw_text_puts(t, "</EventData>");
    if (sp->len[COL_MESSAGE]) {
        etw_text_puts(t, "<RenderingInfo Culture=\"\"><Message>");
        xml_value(rd, t, SPAN(rd, line, COL_MESSAGE));
        etw_text_puts(t, "</Message></RenderingInfo>");
    }
    etw_text_puts(t, "</Event>\n");
}

etw_status etw_renderer_footer(etw_renderer *rd, const char **out, size_t *len) {
    if (!rd || !out || !len) return ETW_E_INVALID_ARG;
    *out = rd->opt.format == ETW_RENDER_XML ? "</Events>\n" : "";
    *len = strlen(*out);
    return ETW_OK;
}

etw_status etw_renderer_event(etw_renderer *rd, const etw_reader *r, const etw_event *ev, const char **out,
                              size_t *len) {
    if (!rd || !ev || !out || !len) return ETW_E_INVALID_ARG;
    if (rd->opt.format == ETW_RENDER_CSV && !rd->header_done) {
        const char *h;
        size_t hl;
        etw_status s = etw_renderer_header(rd, &h, &hl); /* columns fixed now (header not returned) */
        if (s != ETW_OK) return s;
    }
    const char *line;
    size_t n;
    etw_status s;
    if (rd->opt.format == ETW_RENDER_JSON) {
        s = etw_json_event(rd->json, r, ev, &line, &n);
    } else {
        for (;;) {
            rd->sp.fields = rd->spans;
            rd->sp.no_time = rd->opt.format != ETW_RENDER_XML; /* the others write the time themselves */
            rd->sp.no_drive = rd->opt.format == ETW_RENDER_CSV && !rd->opt.nfields;
            /* CSV with its columns known (not csv_stream: its learning reads
             * the keys of manifest chunks): the values of "fields" alone */
            rd->sp.no_keys = (rd->sp.no_drive && !rd->opt.csv_stream) ||
                             (rd->opt.format == ETW_RENDER_TEXT && !rd->opt.nfields);
            rd->sp.cap = rd->spans ? rd->sp.cap : 0;
            s = etw_json_event_spans(rd->json, r, ev, &line, &n, &rd->sp);
            if (s != ETW_OK || !rd->sp.schema || rd->sp.complete || rd->sp.n < rd->sp.cap) break;
            /* more top-level fields than spans: grow (once per new maximum), write again */
            size_t nc = rd->sp.cap ? rd->sp.cap * 2 : 64;
            if (nc < rd->sp.schema->top_count) nc = rd->sp.schema->top_count;
            etw_field_span *ns = etw_calloc(&rd->alloc, nc, sizeof *ns);
            if (!ns) return ETW_E_NOMEM;
            etw_free(&rd->alloc, rd->spans);
            rd->spans = ns;
            rd->sp.cap = nc;
        }
        if (s != ETW_OK) return s;
    }
    if (rd->opt.format == ETW_RENDER_CSV && rd->opt.csv_stream && !rd->opt.nfields) {
        s = stream_learn(rd, ev, line);
        if (s != ETW_OK) return s;
    }
    etw_text_clear(&rd->out);
    switch (rd->opt.format) {
    case ETW_RENDER_TEXT: render_text(rd, ev, line); break;
    case ETW_RENDER_CSV: render_csv(rd, ev, line, n); break;
    case ETW_RENDER_TIMESKETCH: render_timesketch(rd, ev, line); break;
    case ETW_RENDER_XML: render_xml(rd, ev, line); break;
    default: render_json(rd, ev, line, n); break;
    }
    s = etw_text_status(&rd->out);
    if (s == ETW_OK) s = etw_text_status(&rd->scratch);
    if (s == ETW_OK && rd->opt.format == ETW_RENDER_CSV) s = etw_text_status(&rd->summary); /* name_column */
    if (s != ETW_OK) return s;
    *out = rd->out.data;
    *len = rd->out.len;
    return ETW_OK;
}
