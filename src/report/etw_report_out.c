/* etw_report_out.c - the tables of a report as text (aligned columns under
 * a title), one JSON object, or CSV (the main table). A table's cells are
 * kept as text until it ends (text needs every width before the first
 * row); the output goes to the caller's callback in pieces of about 64 KiB. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "format/etw_text.h"
#include "report/etw_report_internal.h"

typedef struct cell {
    uint32_t off, len;
    uint8_t kind; /* 0 string, 1 number, 2 null */
} cell;

struct rep_out {
    etw_report *r;
    etw_report_format fmt;
    etw_report_write_fn fn;
    void *ctx;
    etw_status st;
    etw_text buf;   /* output not yet handed to fn */
    etw_text cells; /* the current table's cell texts */
    rep_vec cellv;
    etw_text notes; /* NUL-separated */
    size_t nnotes;
    const rep_col *cols;
    size_t ncols;
    const char *name, *title;
    int main, csv_done;
};

static void flush(rep_out *o, int all) {
    if (o->st == ETW_OK) o->st = etw_text_status(&o->buf);
    if (o->st != ETW_OK) return;
    if (o->buf.len && (all || o->buf.len >= 65536)) {
        o->st = o->fn(o->ctx, o->buf.data, o->buf.len);
        etw_text_clear(&o->buf);
    }
}

etw_status rep_table_begin(rep_out *o, const char *name, const char *title, const rep_col *cols, size_t ncols,
                           int main) {
    o->name = name;
    o->title = title;
    o->cols = cols;
    o->ncols = ncols;
    o->main = main;
    etw_text_clear(&o->cells);
    o->cellv.count = 0;
    return o->st;
}

static void add_cell(rep_out *o, const char *s, size_t len, uint8_t kind) {
    if (o->st != ETW_OK) return;
    if (len > UINT32_MAX / 2 || o->cells.len > UINT32_MAX / 2) {
        o->st = ETW_E_LIMIT;
        return;
    }
    cell *c = rep_vec_push(o->r, &o->cellv, UINT32_MAX, &o->st);
    if (!c) {
        if (o->st == ETW_OK) o->st = ETW_E_NOMEM;
        return;
    }
    c->off = (uint32_t)o->cells.len;
    c->len = (uint32_t)len;
    c->kind = kind;
    etw_text_put(&o->cells, s, len);
}

void rep_cell_str(rep_out *o, const char *s, size_t len) {
    add_cell(o, s ? s : "", s ? len : 0, 0);
}
void rep_cell_cstr(rep_out *o, const char *s) {
    rep_cell_str(o, s, s ? strlen(s) : 0);
}
void rep_cell_u64(rep_out *o, uint64_t v) {
    char b[32];
    int n = snprintf(b, sizeof b, "%llu", (unsigned long long)v);
    add_cell(o, b, (size_t)n, 1);
}
void rep_cell_i64(rep_out *o, int64_t v) {
    char b[32];
    int n = snprintf(b, sizeof b, "%lld", (long long)v);
    add_cell(o, b, (size_t)n, 1);
}
void rep_cell_null(rep_out *o) {
    add_cell(o, "", 0, 2);
}
void rep_cell_f64(rep_out *o, double v) {
    size_t col = o->ncols ? o->cellv.count % o->ncols : 0;
    int dec = col < o->ncols && o->cols[col].type == REP_COL_FLOAT ? o->cols[col].decimals : 3;
    if (!isfinite(v)) {
        rep_cell_null(o);
        return;
    }
    char b[64];
    int n = snprintf(b, sizeof b, "%.*f", dec, v);
    if (n < 0 || (size_t)n >= sizeof b) {
        rep_cell_null(o);
        return;
    }
    if (b[0] == '-' && strspn(b + 1, "0.") == (size_t)n - 1) memmove(b, b + 1, (size_t)n--); /* no "-0.000" */
    add_cell(o, b, (size_t)n, 1);
}

etw_report_format rep_out_format(const rep_out *o) {
    return o->fmt;
}

void rep_note(rep_out *o, const char *text) {
    etw_text_put(&o->notes, text, strlen(text) + 1);
    o->nnotes++;
}

/* Text cells: control characters (a command line's newlines) as spaces. */
static void put_plain(etw_text *t, const char *s, size_t n) {
    for (size_t i = 0; i < n; i++) etw_text_putc(t, (unsigned char)s[i] < 0x20 || s[i] == 0x7f ? ' ' : s[i]);
}

static size_t text_width(const char *s, size_t n) { /* UTF-8 code points */
    size_t w = 0;
    for (size_t i = 0; i < n; i++)
        if (((unsigned char)s[i] & 0xC0) != 0x80) w++;
    return w;
}

static void pad(etw_text *t, size_t n) {
    for (size_t i = 0; i < n; i++) etw_text_putc(t, ' ');
}

static void table_text(rep_out *o) {
    etw_text *t = &o->buf;
    size_t nc = o->ncols, nrows = nc ? o->cellv.count / nc : 0;
    size_t w[32] = {0};
    if (nc > 32) nc = 32;
    etw_text_puts(t, o->title);
    etw_text_putc(t, '\n');
    if (!nrows) {
        etw_text_puts(t, "  (none)\n\n");
        return;
    }
    for (size_t c = 0; c < nc; c++) w[c] = strlen(o->cols[c].name);
    for (size_t i = 0; i < o->cellv.count; i++) {
        const cell *ce = rep_vec_at(&o->cellv, (uint32_t)i);
        size_t c = i % o->ncols, tw = text_width(o->cells.data + ce->off, ce->len);
        if (ce->kind == 2) tw = 1;
        if (c < nc && tw > w[c]) w[c] = tw;
    }
    for (size_t c = 0; c < nc; c++) { /* headers aligned as their column */
        size_t l = strlen(o->cols[c].name);
        etw_text_puts(t, c ? "  " : "  ");
        if (o->cols[c].type != REP_COL_STR) pad(t, w[c] - l);
        etw_text_puts(t, o->cols[c].name);
        if (o->cols[c].type == REP_COL_STR && c + 1 < nc) pad(t, w[c] - l);
    }
    etw_text_putc(t, '\n');
    for (size_t i = 0; i < nrows; i++) {
        for (size_t c = 0; c < nc; c++) {
            const cell *ce = rep_vec_at(&o->cellv, (uint32_t)(i * o->ncols + c));
            const char *s = ce->kind == 2 ? "-" : o->cells.data + ce->off;
            size_t n = ce->kind == 2 ? 1 : ce->len, tw = ce->kind == 2 ? 1 : text_width(s, n);
            etw_text_puts(t, "  ");
            if (o->cols[c].type != REP_COL_STR) pad(t, w[c] - tw);
            put_plain(t, s, n);
            if (o->cols[c].type == REP_COL_STR && c + 1 < nc) pad(t, w[c] - tw);
        }
        etw_text_putc(t, '\n');
        flush(o, 0);
    }
    etw_text_putc(t, '\n');
}

static void table_json(rep_out *o) {
    etw_text *t = &o->buf;
    size_t nc = o->ncols, nrows = nc ? o->cellv.count / nc : 0;
    etw_text_putc(t, ',');
    etw_text_json_utf8(t, o->name, strlen(o->name));
    etw_text_puts(t, ":[");
    for (size_t i = 0; i < nrows; i++) {
        etw_text_puts(t, i ? ",{" : "{");
        for (size_t c = 0; c < nc; c++) {
            const cell *ce = rep_vec_at(&o->cellv, (uint32_t)(i * nc + c));
            if (c) etw_text_putc(t, ',');
            etw_text_json_utf8(t, o->cols[c].name, strlen(o->cols[c].name));
            etw_text_putc(t, ':');
            if (ce->kind == 2) etw_text_puts(t, "null");
            else if (ce->kind == 1) etw_text_put(t, o->cells.data + ce->off, ce->len);
            else etw_text_json_utf8(t, o->cells.data + ce->off, ce->len);
        }
        etw_text_putc(t, '}');
        flush(o, 0);
    }
    etw_text_putc(t, ']');
}

static void csv_field(etw_text *t, const char *s, size_t n) {
    int quote = 0;
    for (size_t i = 0; i < n; i++)
        if (s[i] == ',' || s[i] == '"' || s[i] == '\r' || s[i] == '\n') quote = 1;
    if (!quote) {
        etw_text_put(t, s, n);
        return;
    }
    etw_text_putc(t, '"');
    for (size_t i = 0; i < n; i++) {
        if (s[i] == '"') etw_text_putc(t, '"');
        etw_text_putc(t, s[i]);
    }
    etw_text_putc(t, '"');
}

static void table_csv(rep_out *o) {
    etw_text *t = &o->buf;
    size_t nc = o->ncols, nrows = nc ? o->cellv.count / nc : 0;
    for (size_t c = 0; c < nc; c++) {
        if (c) etw_text_putc(t, ',');
        csv_field(t, o->cols[c].name, strlen(o->cols[c].name));
    }
    etw_text_puts(t, "\r\n");
    for (size_t i = 0; i < nrows; i++) {
        for (size_t c = 0; c < nc; c++) {
            const cell *ce = rep_vec_at(&o->cellv, (uint32_t)(i * nc + c));
            if (c) etw_text_putc(t, ',');
            if (ce->kind != 2) csv_field(t, o->cells.data + ce->off, ce->len);
        }
        etw_text_puts(t, "\r\n");
        flush(o, 0);
    }
}

etw_status rep_table_end(rep_out *o) {
    if (o->st == ETW_OK) o->st = etw_text_status(&o->cells);
    if (o->st != ETW_OK) return o->st;
    if (o->ncols && o->cellv.count % o->ncols) return o->st = ETW_E_INVALID_ARG; /* a report's bug */
    if (o->fmt == ETW_REPORT_TEXT) table_text(o);
    else if (o->fmt == ETW_REPORT_JSON) table_json(o);
    else if (o->main && !o->csv_done) {
        table_csv(o);
        o->csv_done = 1;
    }
    flush(o, 0);
    return o->st;
}

etw_status rep_out_run(etw_report *r, etw_report_format fmt, etw_report_write_fn fn, void *ctx) {
    rep_out o;
    memset(&o, 0, sizeof o);
    o.r = r;
    o.fmt = fmt;
    o.fn = fn;
    o.ctx = ctx;
    etw_text_init(&o.buf, &r->alloc);
    etw_text_init(&o.cells, &r->alloc);
    etw_text_init(&o.notes, &r->alloc);
    rep_vec_init(&o.cellv, sizeof(cell));
    if (fmt == ETW_REPORT_JSON) {
        etw_text_puts(&o.buf, "{\"report\":\"");
        etw_text_puts(&o.buf, etw_report_kind_name(r->kind));
        etw_text_putc(&o.buf, '"');
    }
    etw_status st = r->vt->write(r, &o);
    if (st != ETW_OK && o.st == ETW_OK) o.st = st;
    if (r->dropped) {
        char b[160];
        snprintf(b, sizeof b, "%llu times a new row or name was not kept: a table had reached its bound (docs/limits.md)",
                 (unsigned long long)r->dropped);
        rep_note(&o, b);
    }
    if (o.st == ETW_OK) o.st = etw_text_status(&o.notes);
    const char *n = o.notes.data;
    if (fmt == ETW_REPORT_JSON) {
        etw_text_puts(&o.buf, ",\"notes\":[");
        for (size_t i = 0; i < o.nnotes; i++, n += strlen(n) + 1) {
            if (i) etw_text_putc(&o.buf, ',');
            etw_text_json_utf8(&o.buf, n, strlen(n));
        }
        etw_text_puts(&o.buf, "]}\n");
    } else if (fmt == ETW_REPORT_TEXT) {
        for (size_t i = 0; i < o.nnotes; i++, n += strlen(n) + 1) {
            etw_text_puts(&o.buf, "note: ");
            etw_text_puts(&o.buf, n);
            etw_text_putc(&o.buf, '\n');
        }
    }
    flush(&o, 1);
    etw_text_free(&o.buf);
    etw_text_free(&o.cells);
    etw_text_free(&o.notes);
    rep_vec_free(r, &o.cellv);
    return o.st;
}
