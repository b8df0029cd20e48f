/* py_report.c - _report(reader, kind, symbols, top): the library's reports
 * (etw_report.h) over a Reader's selected events, driven as etwdump
 * --report drives them (tools/etwdump/report.c), returned as the report's
 * JSON text and its CSV header line (the main table's columns, also when
 * the table has no row). etwdecode/reports.py makes the DataFrames. */
#include "py_native.h"

#include <stdlib.h>

/* The JSON output's bound: a report's tables are bounded (max_rows per
 * table), so this only stops a runaway writer. */
#define REPORT_TEXT_MAX ((size_t)1 << 31)

typedef struct text_buf {
    char *data;
    size_t len, cap;
    int header_only; /* CSV: stop at the first line */
} text_buf;

static etw_status buf_write(void *ctx, const char *data, size_t len) {
    text_buf *b = ctx;
    if (len > REPORT_TEXT_MAX - b->len) return ETW_E_NOMEM;
    if (b->len + len > b->cap) {
        size_t cap = b->cap ? b->cap : 4096;
        while (cap < b->len + len) cap *= 2;
        char *p = realloc(b->data, cap);
        if (!p) return ETW_E_NOMEM;
        b->data = p;
        b->cap = cap;
    }
    memcpy(b->data + b->len, data, len);
    b->len += len;
    /* the header line is complete: stop the write (ETW_END, ignored) */
    if (b->header_only && memchr(b->data, '\n', b->len)) return ETW_END;
    return ETW_OK;
}

/* "0 s" of the report: the earliest session start of the reader's traces,
 * as etwdump (and the reader's since=/until=) count it. */
static int64_t reader_origin(Reader *self) {
    int64_t origin = etw_reader_to_filetime(self->r, etw_reader_logfile(self->r)->raw_timestamp);
    for (size_t i = 0; self->several && i < self->nfiles; i++) {
        const etw_reader *ri = etw_multi_reader(self->holder, i);
        int64_t t = etw_reader_to_filetime(ri, etw_reader_logfile(ri)->raw_timestamp);
        if (t < origin) origin = t;
    }
    return origin;
}

PyObject *native_report(PyObject *mod, PyObject *args, PyObject *kw) {
    (void)mod;
    static char *kwlist[] = {"reader", "kind", "symbols", "top", NULL};
    PyObject *reader_obj, *symbols = Py_None;
    const char *kind_name;
    unsigned int top = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "O!s|OI", kwlist, &ReaderType, &reader_obj, &kind_name, &symbols,
                                     &top))
        return NULL;
    Reader *self = (Reader *)reader_obj;
    etw_report_kind kind;
    if (etw_report_kind_parse(kind_name, &kind) != ETW_OK) {
        PyErr_Format(PyExc_ValueError, "unknown report '%s' (known: processes, gc, disk, files, network, cpu)",
                     kind_name);
        return NULL;
    }
    if (!self->r || !self->dec) return raise_status(self, ETW_E_INVALID_ARG, "a report needs an open, decoding reader");
    if (self->finished || self->returned)
        return raise_status(self, ETW_E_INVALID_ARG, "a report reads the reader from its first event");

    PyObject *result = NULL;
    path_list syms = {0};
    etw_report *rep = NULL;
    text_buf json = {NULL, 0, 0, 0}, csv = {NULL, 0, 0, 1};
    if (symbols != Py_None && path_list_init(&syms, symbols, "symbols must be a sequence of paths") < 0) goto out;

    etw_report_options ro;
    memset(&ro, 0, sizeof ro);
    ro.decoder = self->dec;
    ro.origin = reader_origin(self);
    /* etwdump: the first trace's clock */
    ro.perf_freq = etw_reader_logfile(self->several ? etw_multi_reader(self->holder, 0) : self->r)->perf_freq;
    ro.top = top;
    ro.symbol_paths = syms.n ? syms.paths : NULL;
    ro.nsymbol_paths = (size_t)syms.n;
    ro.on_diag = on_decoder_diag;
    ro.diag_ctx = self;
    if (etw_report_new(&rep, kind, &ro) != ETW_OK) {
        PyErr_NoMemory();
        goto out;
    }
    etw_status s = ETW_OK;
    uint64_t read = 0, selected = 0;
    for (;;) {
        etw_event ev;
        etw_status rs = reader_next(self, &ev);
        if (rs != ETW_OK) {
            if (rs != ETW_END) s = rs;
            break;
        }
        /* Ctrl-C in a notebook: now and then, not per event */
        if ((++read & 0xffff) == 0 && PyErr_CheckSignals() < 0) goto out;
        int sel = select_event(self, &ev);
        if (sel < 0) {
            s = ETW_E_NOMEM;
            break;
        }
        s = sel ? etw_report_add(rep, self->dec, &ev, self->lab.schema)
                : etw_report_skip(rep, self->dec, &ev, self->lab.schema);
        if (s != ETW_OK) break;
        if (sel && self->max_events && ++selected >= self->max_events) break;
    }
    etw_decoder_finish(self->dec);
    self->finished = 1;
    if (s != ETW_OK) {
        flush_diags(self);
        raise_status(self, s, "report");
        goto out;
    }
    s = etw_report_write(rep, ETW_REPORT_JSON, buf_write, &json);
    if (s == ETW_OK) {
        s = etw_report_write(rep, ETW_REPORT_CSV, buf_write, &csv);
        if (s == ETW_END) s = ETW_OK;
    }
    if (s != ETW_OK) {
        raise_status(self, s, "report");
        goto out;
    }
    if (flush_diags(self) < 0) goto out;
    size_t hl = 0;
    while (hl < csv.len && csv.data[hl] != '\r' && csv.data[hl] != '\n') hl++;
    PyObject *j = PyUnicode_DecodeUTF8(json.data ? json.data : "", (Py_ssize_t)json.len, "replace");
    PyObject *h = j ? PyUnicode_DecodeUTF8(csv.data ? csv.data : "", (Py_ssize_t)hl, "replace") : NULL;
    if (j && h) result = PyTuple_Pack(2, j, h);
    Py_XDECREF(j);
    Py_XDECREF(h);
out:
    free(json.data);
    free(csv.data);
    etw_report_free(rep);
    path_list_free(&syms);
    return result;
}
