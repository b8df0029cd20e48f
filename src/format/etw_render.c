/* etw_render.c - renderings of events (see etw_render.h): the renderer, JSON
 * and text here, CSV, Timesketch and XML in etw_render_csv.c,
 * etw_render_timesketch.c and etw_render_xml.c (etw_render_internal.h).
 * Each starts from the contract's JSON object (etw_json): the others take
 * their values from the spans the writer recorded as it wrote each key
 * (etw_json_spans.h), so they can never disagree on a name or a value and
 * nothing is parsed again (etw_jscan only reads the rare "fields" that do
 * not come from a schema: the log-file header, EventSource manifests). */
#include "etwdecode/etw_render.h"

#include <stdio.h>
#include <string.h>

#include "../common/etw_alloc.h"
#include "etw_render_internal.h"

/* The fixed columns' names, which are their JSON keys (in COL_* order). */
const char *const etw_render_fixed_names[NFIXED] = {
    "time", "file", "provider", "provider_guid", "event", "id", "version", "level", "opcode", "task",
    "channel", "keywords", "pid", "process", "tid", "cpu", "data_len", "activity_id", "related_activity_id",
    "container_id", "message", "error", "raw"};

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

/* ---- output helpers ------------------------------------------------------- */

void etw_render_time(etw_renderer *rd, etw_text *t, int64_t ft, int quote_strings) {
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

int etw_render_field_wanted(const etw_renderer *rd, const etw_jmember *m) {
    for (size_t i = 0; i < rd->opt.nfields; i++) {
        const char *f = rd->opt.fields[i];
        if (f && etw_jscan_key_is(m->key, m->key_len, f, strlen(f))) return 1;
    }
    return 0;
}

/* Whether --fields (none: every field) wants the member whose key, as
 * written with its quotes, is line[key_off .. key_off + key_len). */
int etw_render_key_wanted(const etw_renderer *rd, const char *line, size_t key_off, size_t key_len) {
    if (!rd->opt.nfields) return 1;
    etw_jmember m = {line + key_off + 1, key_len - 2, NULL, 0};
    return etw_render_field_wanted(rd, &m);
}


/* A JSON value for TEXT: a string bare when it is safe to read so (names
 * may hold spaces: name_ok). The JSON form has every control character
 * escaped, so a string without a backslash has none. Made twice by the
 * compiler, name_ok a constant in each (etw_render_text_value, _name). */
#if defined(__GNUC__)
__attribute__((always_inline))
#endif
static inline void text_value_(etw_text *t, const char *v, size_t n, const int name_ok) {
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

void etw_render_text_value(etw_text *t, const char *v, size_t n) { text_value_(t, v, n, 0); }
void etw_render_text_name(etw_text *t, const char *v, size_t n) { text_value_(t, v, n, 1); }


etw_status etw_renderer_header(etw_renderer *rd, const char **out, size_t *len) {
    if (!rd || !out || !len) return ETW_E_INVALID_ARG;
    etw_text *t = &rd->out;
    etw_text_clear(t);
    if (rd->opt.format == ETW_RENDER_CSV && !rd->header_done) {
        etw_status s = etw_render_csv_fix_columns(rd);
        if (s != ETW_OK) return s;
        etw_render_csv_header_row(rd, t, rd->ncols);
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
            etw_render_time(rd, t, ev->timestamp, 1);
        } else if (rd->opt.nfields && etw_jscan_key_is(m.key, m.key_len, "fields", 6)) {
            size_t fp = 0;
            etw_jmember f;
            int ff = 1;
            etw_text_putc(t, '{');
            while (etw_jscan_next_member(m.value, m.value_len, &fp, &f)) {
                if (!etw_render_field_wanted(rd, &f)) continue;
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
        etw_render_text_value(t, SPAN(rd, line, COL_FILE));
    }
    if (sp->len[COL_ERROR]) {
        etw_text_puts(t, " error=");
        etw_text_put(t, line + sp->off[COL_ERROR], sp->len[COL_ERROR]);
    }
    etw_text_putc(t, '\n');
    return 1;
}

/* Most bytes of remembered TEXT keys (rd->keys); past it keys are made
 * event after event. */
#define TEXT_KEYS_MAX ((size_t)16 << 20)
/* The longest key the JSON writer gives a NAME_drive member
 * (etw_fields_json.c writes it only when it fits in its 320 bytes). */
#define DRIVE_KEY_MAX 320

/* The key the JSON writer writes for property name (drive: its NAME_drive
 * member), as text shows it: etw_render_text_value of the JSON key. 0 when the writer
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
    etw_render_text_value(t, js->data, js->len);
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
        if (!etw_render_key_wanted(rd, line, f->drive_key_off, f->drive_key_len)) return;
        etw_text_putc(t, ' ');
        etw_render_text_value(t, line + f->drive_key_off, f->drive_key_len);
    } else {
        etw_text_putc(t, ' ');
        if (!text_key_make(rd, t, f->name, 1)) return;
    }
    etw_text_putc(t, '=');
    etw_render_text_value(t, line + f->drive_off, f->drive_len);
}

static void render_text(etw_renderer *rd, const etw_event *ev, const char *line) {
    etw_text *t = &rd->out;
    const etw_json_spans *sp = &rd->sp;
    if (render_text_wpp(rd, line)) return;
    etw_render_time(rd, t, ev->timestamp, 0);
    if (sp->len[COL_FILE]) {
        etw_text_puts(t, " file=");
        etw_render_text_value(t, SPAN(rd, line, COL_FILE));
    }
    etw_text_putc(t, ' ');
    if (sp->len[COL_PROVIDER]) etw_render_text_name(t, SPAN(rd, line, COL_PROVIDER));
    etw_text_putc(t, '/');
    if (sp->len[COL_EVENT]) etw_render_text_name(t, SPAN(rd, line, COL_EVENT));
    etw_text_puts(t, " pid=");
    etw_text_put(t, line + sp->off[COL_PID], sp->len[COL_PID]);
    if (sp->len[COL_PROCESS]) {
        etw_text_puts(t, " process=");
        etw_render_text_value(t, SPAN(rd, line, COL_PROCESS));
    }
    etw_text_puts(t, " tid=");
    etw_text_put(t, line + sp->off[COL_TID], sp->len[COL_TID]);
    if (sp->complete && sp->no_keys) {
        /* the keys from the schema's names, made once per schema */
        schema_cols *sc = etw_render_schema_columns(rd, sp->schema);
        for (size_t i = 0; i < sp->n; i++) {
            const etw_field_span *f = &sp->fields[i];
            etw_text_putc(t, ' ');
            text_key(rd, t, sc, i, f);
            etw_text_putc(t, '=');
            etw_render_text_value(t, line + f->val_off, f->val_len);
            text_drive(rd, t, line, f);
        }
    } else if (sp->complete) {
        for (size_t i = 0; i < sp->n; i++) {
            const etw_field_span *f = &sp->fields[i];
            if (etw_render_key_wanted(rd, line, f->key_off, f->key_len)) {
                etw_text_putc(t, ' ');
                etw_render_text_value(t, line + f->key_off, f->key_len);
                etw_text_putc(t, '=');
                etw_render_text_value(t, line + f->val_off, f->val_len);
            }
            text_drive(rd, t, line, f);
        }
    } else {
        const char *fields = line + sp->off[ETW_JK_FIELDS];
        size_t flen = sp->len[ETW_JK_FIELDS], fp = 0;
        etw_jmember m;
        while (etw_jscan_next_member(fields, flen, &fp, &m)) {
            if (rd->opt.nfields && !etw_render_field_wanted(rd, &m)) continue;
            etw_text_putc(t, ' ');
            etw_render_text_value(t, m.key - 1, m.key_len + 2);
            etw_text_putc(t, '=');
            etw_render_text_value(t, m.value, m.value_len);
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
        etw_text_puts(t, etw_render_fixed_names[k]);
        etw_text_putc(t, '=');
        etw_text_put(t, line + sp->off[k], sp->len[k]);
    }
    etw_text_putc(t, '\n');
}


/* Where the columns of s's properties are remembered, made the first time s
 * is seen; NULL past the limits or without memory (the fields are then
 * found by name: the same columns, more slowly). */
schema_cols *etw_render_schema_columns(etw_renderer *rd, const etw_schema *s) {
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
        s = etw_render_csv_learn_stream(rd, ev, line);
        if (s != ETW_OK) return s;
    }
    etw_text_clear(&rd->out);
    switch (rd->opt.format) {
    case ETW_RENDER_TEXT: render_text(rd, ev, line); break;
    case ETW_RENDER_CSV: etw_render_csv_event(rd, ev, line, n); break;
    case ETW_RENDER_TIMESKETCH: etw_render_timesketch_event(rd, ev, line); break;
    case ETW_RENDER_XML: etw_render_xml_event(rd, ev, line); break;
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
