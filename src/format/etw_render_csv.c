/* etw_render_csv.c - CSV of events (etw_render.h): the columns (the fixed
 * keys, then one per field name, learned in a first pass or as a streamed
 * run meets them) and each event's row, from the values the JSON writer
 * recorded (etw_render_internal.h). */
#include <stdlib.h>
#include <string.h>

#include "../common/etw_alloc.h"
#include "etwdecode/etw_decoder.h"
#include "../schema/etw_source.h" /* etw_decoder_epoch */
#include "etw_render_internal.h"

static uint64_t name_hash(const char *s, size_t n) {
    uint64_t h = 1469598103934665603u; /* FNV-1a offset basis */
    for (size_t i = 0; i < n; i++) h = (h ^ (unsigned char)s[i]) * 1099511628211u;
    return h;
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
            if (strlen(etw_render_fixed_names[k]) == n && !memcmp(etw_render_fixed_names[k], field, n)) clash = 1;
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
        c.name = dup(rd, etw_render_fixed_names[fixed], strlen(etw_render_fixed_names[fixed]));
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
etw_status etw_render_csv_fix_columns(etw_renderer *rd) {
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
void etw_render_csv_header_row(etw_renderer *rd, etw_text *t, size_t n) {
    for (size_t i = 0; i < n; i++) {
        if (i) etw_text_putc(t, ',');
        csv_name(rd, t, rd->cols[i].name);
    }
    etw_text_puts(t, rd->opt.csv_lf ? "\n" : "\r\n");
}

etw_status etw_renderer_csv_header(etw_renderer *rd, size_t ncols, const char **out, size_t *len) {
    if (!rd || !out || !len || rd->opt.format != ETW_RENDER_CSV || !rd->opt.csv_stream) return ETW_E_INVALID_ARG;
    if (!rd->header_done) {
        etw_status s = etw_render_csv_fix_columns(rd);
        if (s != ETW_OK) return s;
    }
    if (ncols < rd->nfixed_cols) ncols = rd->nfixed_cols;
    if (ncols > rd->ncols) ncols = rd->ncols;
    etw_text *t = &rd->out;
    etw_text_clear(t);
    etw_render_csv_header_row(rd, t, ncols);
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
 * runs of commas - the cells etw_render_csv_event would set, with nothing to sort.
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
                /* etw_render_time's same-second case */
                memcpy(o, rd->tc_text, sizeof rd->tc_text);
                o += rd->tc_len;
                etw_text_digits7(o, (uint32_t)(ft % TICKS));
                o[7] = 'Z';
                o += 8;
            } else {
                t->len = (size_t)(o - t->data);
                etw_render_time(rd, t, ft, 0); /* in the chosen form, never quoted */
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

void etw_render_csv_event(etw_renderer *rd, const etw_event *ev, const char *line, size_t line_len) {
    etw_text *t = &rd->out;
    const etw_json_spans *sp = &rd->sp;
    rd->nset = 0;
    const struct seg_slot *g = csv_segment(rd, line);
    schema_cols *sc = sp->complete ? etw_render_schema_columns(rd, sp->schema) : NULL;
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
            etw_render_time(rd, t, ev->timestamp, 0); /* in the chosen form, never quoted */
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
etw_status etw_render_csv_learn_stream(etw_renderer *rd, const etw_event *ev, const char *line) {
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

