/* py_reader.c - the Reader type: one trace, or several merged into one
 * timeline by the library (etw_multi.h), its selection and decoder, and the
 * events as dicts. */
#include "py_native.h"

#include <errno.h>
#include <sys/stat.h>

/* ------------------------------------------------------------------------ */
/* the reader object                                                        */


void keep_diag(Reader *self, const char *msg) {
    if (self->muted) return;
    if (self->ndiags == MAX_PENDING_DIAGS) {
        self->diags_dropped++;
        return;
    }
    size_t n = strlen(msg);
    char *c = PyMem_RawMalloc(n + 1);
    if (!c) {
        self->diags_dropped++;
        return;
    }
    memcpy(c, msg, n + 1);
    self->diag_msgs[self->ndiags++] = c;
}

void on_reader_diag(void *ctx, const etw_diag *d) {
    Reader *self = ctx;
    char buf[1200];
    if (self->several && self->holder) /* which trace: the one being read */
        snprintf(buf, sizeof buf, "%s: offset 0x%llx: %s", etw_multi_name(self->holder, etw_multi_current(self->holder)),
                 (unsigned long long)d->file_offset, d->message);
    else
        snprintf(buf, sizeof buf, "offset 0x%llx: %s", (unsigned long long)d->file_offset, d->message);
    keep_diag(self, buf);
}

void on_decoder_diag(void *ctx, const etw_diag *d) { keep_diag(ctx, d->message); }

/* Turn the problems kept into warnings. -1 when a warning became an error. */
int flush_diags(Reader *self) {
    int rc = 0;
    for (int i = 0; i < self->ndiags; i++) {
        /* several traces: the message names its own */
        if (rc == 0 && (self->several ? PyErr_WarnFormat(EtwWarning, 1, "%s", self->diag_msgs[i])
                                      : PyErr_WarnFormat(EtwWarning, 1, "%U: %s", self->path, self->diag_msgs[i])) < 0)
            rc = -1;
        PyMem_RawFree(self->diag_msgs[i]);
    }
    self->ndiags = 0;
    if (rc == 0 && self->diags_dropped) {
        if (PyErr_WarnFormat(EtwWarning, 1, "%U: %llu more problems not shown", self->path,
                             (unsigned long long)self->diags_dropped) < 0)
            rc = -1;
        self->diags_dropped = 0;
    }
    return rc;
}

PyObject *raise_status(Reader *self, etw_status s, const char *what) {
    if (s == ETW_E_NOMEM) return PyErr_NoMemory();
    PyErr_Format(EtwError, "%U: %s: %s", self->path, what, etw_strerror(s));
    return NULL;
}

/* The next event: of the one trace, or of several merged by the library
 * (etw_multi_next: the earliest first, equal times in the order given). */
etw_status reader_next(Reader *self, etw_event *ev) {
    if (self->several) return etw_multi_next(self->holder, ev, NULL);
    return etw_reader_next(self->r, ev);
}

/* ---- construction ---- */

static void Reader_dealloc(Reader *self) {
    etw_profile_free(self->prof);
    etw_decoder_free(self->prof_dec);
    for (uint32_t i = 0; i < self->nframe_str; i++) Py_XDECREF(self->frame_str[i]);
    PyMem_Free(self->frame_str);
    etw_filter_free(self->filter);
    if (self->dec) etw_decoder_free(self->dec);
    etw_windows_index_free(self->win);
    etw_manifest_catalog_free(self->cat);
    etw_multi_free(self->holder);
    for (size_t i = 0; self->file_names && i < self->nfiles; i++) Py_XDECREF(self->file_names[i]);
    PyMem_Free(self->file_names);
    Py_XDECREF(self->inputs);
    etw_text_free(&self->scratch);
    ptr_cache_clear(&self->names);
    str_cache_clear(&self->strings);
    for (int i = 0; i < self->ndiags; i++) PyMem_RawFree(self->diag_msgs[i]);
    Py_XDECREF(self->path);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

int open_error(PyObject *path, etw_status s, int err) {
    if (s == ETW_E_IO) {
        errno = err;
        PyErr_SetFromErrnoWithFilenameObject(PyExc_OSError, path);
    } else if (s == ETW_E_NOT_ETL || s == ETW_E_DECOMPRESS || s == ETW_E_LIMIT) {
        /* what the file is, from its first bytes */
        etw_file_kind k = ETW_KIND_UNKNOWN;
        PyObject *fs = PyUnicode_EncodeFSDefault(path);
        FILE *f = fs ? fopen(PyBytes_AS_STRING(fs), "rb") : NULL;
        Py_XDECREF(fs);
        PyErr_Clear();
        if (f) {
            unsigned char head[ETW_SNIFF_BYTES];
            size_t n = fread(head, 1, sizeof head, f);
            fclose(f);
            k = etw_sniff(head, n);
        }
        if (s == ETW_E_LIMIT)
            PyErr_Format(EtwError, "%U: %s that decompresses to more than its limit (%u times its size, at most "
                         "%llu MiB: docs/limits.md)", path, etw_file_kind_describe(k), ETW_UNPACK_RATIO,
                         ETW_UNPACK_MAX >> 20);
        else if (s == ETW_E_DECOMPRESS)
            PyErr_Format(EtwError, "%U: %s that does not decompress (damaged, cut short or encrypted)", path,
                         etw_file_kind_describe(k));
        else if (k == ETW_KIND_ETL || k == ETW_KIND_UNKNOWN)
            PyErr_Format(EtwError, "%U: not an ETL file (no buffer header and log-file header at offset 0)", path);
        else
            PyErr_Format(EtwError, "%U: not an ETL file: %s", path, etw_file_kind_describe(k));
    } else if (s == ETW_E_NOMEM) {
        PyErr_NoMemory();
    } else {
        PyErr_Format(EtwError, "%U: %s", path, etw_strerror(s));
    }
    return -1;
}

/* The selection: [(key, value text), ...] as etw_filter_add takes them. */
int add_filters(Reader *self, PyObject *filters) {
    if (!self->filter && etw_filter_new(&self->filter, NULL) != ETW_OK) return PyErr_NoMemory(), -1;
    PyObject *seq = PySequence_Fast(filters, "filters must be a sequence of (key, value) pairs");
    if (!seq) return -1;
    for (Py_ssize_t i = 0; i < PySequence_Fast_GET_SIZE(seq); i++) {
        const char *key, *value;
        if (!PyArg_ParseTuple(PySequence_Fast_GET_ITEM(seq, i), "ss", &key, &value)) {
            Py_DECREF(seq);
            return -1;
        }
        etw_filter_key k = etw_filter_key_from_name(key);
        const char *why = NULL;
        etw_status s = k ? etw_filter_add(self->filter, k, value, &why) : ETW_E_INVALID_ARG;
        if (s != ETW_OK) {
            if (s == ETW_E_NOMEM)
                PyErr_NoMemory();
            else
                PyErr_Format(PyExc_ValueError, "filter %s=%R: %s", key, PySequence_Fast_GET_ITEM(
                                 PySequence_Fast_GET_ITEM(seq, i), 1),
                             why ? why : (k ? etw_strerror(s) : "unknown filter"));
            Py_DECREF(seq);
            return -1;
        }
    }
    Py_DECREF(seq);
    return 0;
}


/* The largest TraceLogging schema budget taken, in MB (etwdump --tl-cache's bound). */
#define TL_CACHE_MB_MAX 1048576 /* 1 TiB: the bytes fit a 64-bit size_t */

/* Reader(path, manifests=(), *, raw=False, no_manifest_events=False,
 *        max_events=0, file_order=False, range=None, learn=None,
 *        no_decode=False, filters=None, default_manifests=True,
 *        windows=None, lang=None, stacks=False, symbols=None, member=-1,
 *        tl_cache_mb=0) */
static int Reader_init(Reader *self, PyObject *args, PyObject *kw) {
    static char *kwlist[] = {"path", "manifests", "raw", "no_manifest_events", "max_events",
                             "file_order", "range", "learn", "no_decode", "filters",
                             "default_manifests", "windows", "lang", "stacks", "symbols", "member", "tl_cache_mb",
                             NULL};
    PyObject *path_obj, *manifests = NULL, *range = Py_None, *learn = Py_None, *filters = Py_None;
    PyObject *windows = Py_None, *symbols = Py_None;
    const char *lang = NULL;
    int raw = 0, no_me = 0, file_order = 0, no_decode = 0, default_manifests = 1, stacks = 0;
    Py_ssize_t member = -1, tl_cache_mb = 0;
    unsigned long long max_events = 0;
    PyObject *path_arg;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "O|O$ppKpOOpOpOzpOnn", kwlist, &path_arg,
                                     &manifests, &raw, &no_me, &max_events, &file_order, &range, &learn,
                                     &no_decode, &filters, &default_manifests, &windows, &lang, &stacks,
                                     &symbols, &member, &tl_cache_mb))
        return -1;
    /* the TraceLogging schema budget, as etwdump --tl-cache MB (0: the default) */
    if (tl_cache_mb < 0 || (size_t)tl_cache_mb > (SIZE_MAX >> 20) || (size_t)tl_cache_mb > TL_CACHE_MB_MAX) {
        PyErr_Format(PyExc_ValueError, "tl_cache_mb: 1 to %d MB (0: the default, 32)", TL_CACHE_MB_MAX);
        return -1;
    }
    /* a list (or tuple) of inputs: one timeline, as etwdump reads its inputs */
    int as_list = PyList_Check(path_arg) || PyTuple_Check(path_arg);
    PyObject *inputs = PyList_New(0);
    if (!inputs) return -1;
    PyObject *seq = as_list ? PySequence_Fast(path_arg, "path") : NULL;
    Py_ssize_t ninputs = as_list ? (seq ? PySequence_Fast_GET_SIZE(seq) : -1) : 1;
    for (Py_ssize_t i = 0; i < ninputs; i++) {
        PyObject *one = NULL;
        if (!PyUnicode_FSDecoder(as_list ? PySequence_Fast_GET_ITEM(seq, i) : path_arg, &one) ||
            PyList_Append(inputs, one) < 0) {
            Py_XDECREF(one);
            ninputs = -1;
            break;
        }
        Py_DECREF(one);
    }
    Py_XDECREF(seq);
    if (ninputs < 0) {
        Py_DECREF(inputs);
        return -1;
    }
    if (ninputs == 0 || ninputs > ETW_MULTI_MAX_FILES) {
        Py_DECREF(inputs);
        PyErr_Format(PyExc_ValueError, "path: 1 to %d traces", ETW_MULTI_MAX_FILES);
        return -1;
    }
    if (as_list && member >= 0) {
        Py_DECREF(inputs);
        PyErr_SetString(PyExc_ValueError, "member= picks a trace of one archive: give one path");
        return -1;
    }
    path_obj = PyList_GET_ITEM(inputs, 0);
    Py_INCREF(path_obj);
    Py_XSETREF(self->inputs, inputs);
    self->member = member;
    if (self->r || self->path) {
        Py_DECREF(path_obj);
        PyErr_SetString(PyExc_RuntimeError, "a Reader is opened once");
        return -1;
    }
    Py_XSETREF(self->path, path_obj);
    if (filters != Py_None && PyObject_IsTrue(filters) && add_filters(self, filters) < 0) return -1;
    self->raw_always = raw;
    self->no_manifest_events = no_me;
    self->max_events = max_events;
    etw_text_init(&self->scratch, NULL);

    etw_reader_options ro;
    memset(&ro, 0, sizeof ro);
    ro.on_diag = on_reader_diag;
    ro.diag_ctx = self;
    ro.file_order = file_order;
    etw_status s = etw_multi_new(&self->holder, &ro);
    int err = 0;
    if (s != ETW_OK) return PyErr_NoMemory(), -1;
    /* through an etw_multi: compressed traces (.etl.gz, .etl.zip) are
     * unpacked into its memory; member picks one trace of an archive */
    for (Py_ssize_t i = 0; i < ninputs; i++) {
        PyObject *one = PyList_GET_ITEM(self->inputs, i);
        PyObject *fs = PyUnicode_EncodeFSDefault(one);
        if (!fs) return -1;
        Py_BEGIN_ALLOW_THREADS
        errno = 0;
        s = etw_multi_add_file(self->holder, PyBytes_AS_STRING(fs));
        err = errno;
        Py_END_ALLOW_THREADS
        Py_DECREF(fs);
        if (s != ETW_OK) return open_error(one, s, err);
    }
    size_t ntraces = etw_multi_count(self->holder);
    if (as_list && ntraces > 1) {
        self->several = 1;
        self->nfiles = ntraces;
        self->file_names = PyMem_Calloc(ntraces, sizeof *self->file_names);
        if (!self->file_names) return PyErr_NoMemory(), -1;
        for (size_t i = 0; i < ntraces; i++)
            if (!(self->file_names[i] = PyUnicode_DecodeFSDefault(etw_multi_name(self->holder, i)))) return -1;
    }
    if (!self->several && member < 0 && ntraces > 1) {
        PyErr_Format(EtwError, "%U: holds %zu traces: etwdecode.open() reads them all, Reader(member=i) one",
                     self->path, ntraces);
        return -1;
    }
    if (member >= (Py_ssize_t)ntraces) {
        PyErr_Format(PyExc_IndexError, "%U: member %zd of %zu traces", self->path, member, ntraces);
        return -1;
    }
    self->r = etw_multi_reader(self->holder, member < 0 ? 0 : (size_t)member);

    if (self->several && (range != Py_None || learn != Py_None || no_decode)) {
        PyErr_SetString(PyExc_ValueError, "range=, learn= and no_decode= read one trace");
        return -1;
    }
    if (no_decode) return flush_diags(self);
    etw_decoder_options dopt;
    memset(&dopt, 0, sizeof dopt);
    dopt.on_diag = on_decoder_diag;
    dopt.diag_ctx = self;
    dopt.no_default_manifests = !default_manifests; /* the CLR's built-in manifest */
    dopt.lang = lang;
    dopt.tl_cache_bytes = (size_t)tl_cache_mb << 20;
    if (lang && (!*lang || strlen(lang) > 23)) {
        PyErr_SetString(PyExc_ValueError, "lang: a language tag such as 'en-US' or 'de-DE'");
        return -1;
    }
    s = etw_decoder_new(&self->dec, &dopt);
    if (s != ETW_OK) return PyErr_NoMemory(), -1;
    if (windows != Py_None) {
        /* a Windows image: its index (kept in the cache folder between runs) */
        PyObject *wb = NULL;
        if (!PyUnicode_FSConverter(windows, &wb)) return -1;
        etw_windows_options wo;
        memset(&wo, 0, sizeof wo);
        wo.on_diag = on_decoder_diag;
        wo.diag_ctx = self;
        Py_BEGIN_ALLOW_THREADS
        s = etw_windows_index_open(&self->win, PyBytes_AS_STRING(wb), &wo);
        Py_END_ALLOW_THREADS
        Py_DECREF(wb);
        if (s == ETW_E_NOT_FOUND) { /* its message is the exception's */
            PyErr_Format(PyExc_FileNotFoundError, "windows: %R is not a Windows folder (no System32, nor "
                         "Windows/System32, in it)", windows);
            return -1;
        }
        if (s != ETW_OK) return raise_status(self, s, "indexing the Windows folder"), -1;
        etw_decoder_add_windows(self->dec, self->win);
    }
    /* relative since/until count from the session start, also in a range
     * that does not start with the log-file header */
    if (self->filter) {
        /* several traces: "0 s" is the earliest session start, as etwdump has it */
        int64_t origin = etw_reader_to_filetime(self->r, etw_reader_logfile(self->r)->raw_timestamp);
        for (size_t i = 1; self->several && i < self->nfiles; i++) {
            const etw_reader *ri = etw_multi_reader(self->holder, i);
            int64_t t = etw_reader_to_filetime(ri, etw_reader_logfile(ri)->raw_timestamp);
            if (t < origin) origin = t;
        }
        etw_filter_set_origin(self->filter, origin);
    }

    /* a directory among the manifests: every path through one catalog, in
     * order (as etwdump -m), so a folder's files load when used */
    if (manifests && manifests != Py_None) {
        int dirs = 0;
        PyObject *seq = PySequence_Fast(manifests, "manifests must be a sequence of paths");
        if (!seq) return -1;
        Py_ssize_t nm = PySequence_Fast_GET_SIZE(seq);
        for (Py_ssize_t i = 0; i < nm && !dirs; i++) {
            PyObject *mb = NULL;
            if (!PyUnicode_FSConverter(PySequence_Fast_GET_ITEM(seq, i), &mb)) {
                Py_DECREF(seq);
                return -1;
            }
            struct stat sb;
            dirs = stat(PyBytes_AS_STRING(mb), &sb) == 0 && S_ISDIR(sb.st_mode);
            Py_DECREF(mb);
        }
        if (dirs) {
            etw_manifest_catalog_options co;
            memset(&co, 0, sizeof co);
            co.on_diag = on_decoder_diag;
            co.diag_ctx = self;
            if (etw_manifest_catalog_new(&self->cat, &co) != ETW_OK) {
                Py_DECREF(seq);
                return PyErr_NoMemory(), -1;
            }
            for (Py_ssize_t i = 0; i < nm; i++) {
                PyObject *m = PySequence_Fast_GET_ITEM(seq, i), *mb = NULL;
                if (!PyUnicode_FSConverter(m, &mb)) {
                    Py_DECREF(seq);
                    return -1;
                }
                errno = 0;
                s = etw_manifest_catalog_add_path(self->cat, PyBytes_AS_STRING(mb), NULL);
                err = errno;
                Py_DECREF(mb);
                if (s == ETW_E_IO) {
                    errno = err ? err : ENOENT;
                    PyErr_SetFromErrnoWithFilenameObject(PyExc_OSError, m);
                    Py_DECREF(seq);
                    return -1;
                }
                if (s == ETW_E_NOMEM) {
                    Py_DECREF(seq);
                    return PyErr_NoMemory(), -1;
                }
            }
            Py_DECREF(seq);
            s = etw_decoder_add_manifest_catalog(self->dec, self->cat);
            if (s == ETW_E_NOMEM) return PyErr_NoMemory(), -1;
            manifests = NULL; /* loaded */
        } else {
            Py_DECREF(seq);
        }
    }
    if (manifests && manifests != Py_None) {
        PyObject *it = PyObject_GetIter(manifests);
        if (!it) return -1;
        PyObject *m;
        while ((m = PyIter_Next(it)) != NULL) {
            PyObject *mb = NULL;
            if (!PyUnicode_FSConverter(m, &mb)) {
                Py_DECREF(m);
                Py_DECREF(it);
                return -1;
            }
            errno = 0;
            s = etw_decoder_add_manifest(self->dec, PyBytes_AS_STRING(mb), NULL);
            err = errno;
            Py_DECREF(mb);
            if (s == ETW_E_IO) {
                errno = err ? err : ENOENT;
                PyErr_SetFromErrnoWithFilenameObject(PyExc_OSError, m);
                Py_DECREF(m);
                Py_DECREF(it);
                return -1;
            }
            /* a malformed manifest is reported (with its line) as a warning,
             * and the others still load, as etwdump does */
            Py_DECREF(m);
        }
        Py_DECREF(it);
        if (PyErr_Occurred()) return -1;
    }
    if (flush_diags(self) < 0) return -1;

    if (learn == Py_None) {
        self->muted = 1; /* the same problems come again during iteration */
        Py_BEGIN_ALLOW_THREADS
        s = ETW_OK;
        /* every trace's merged schemas, into the one decoder (as etwdump) */
        for (size_t i = 0; s == ETW_OK && i < (self->several ? self->nfiles : 1); i++)
            s = etw_decoder_prescan(self->dec, self->several ? etw_multi_reader(self->holder, i) : self->r);
        Py_END_ALLOW_THREADS
        self->muted = 0;
        if (s != ETW_OK) return raise_status(self, s, "reading the trace"), -1;
    } else {
        /* (buffer_file_offset, record_offset) of the schema records to learn */
        PyObject *seq = PySequence_Fast(learn, "learn must be a sequence of (buffer offset, record offset)");
        if (!seq) return -1;
        for (Py_ssize_t i = 0; i < PySequence_Fast_GET_SIZE(seq); i++) {
            unsigned long long bo;
            unsigned int ro_;
            if (!PyArg_ParseTuple(PySequence_Fast_GET_ITEM(seq, i), "KI", &bo, &ro_)) {
                Py_DECREF(seq);
                return -1;
            }
            etw_event ev;
            s = etw_reader_event_at(self->r, bo, ro_, &ev);
            if (s == ETW_OK) s = etw_decoder_learn(self->dec, &ev);
            if (s != ETW_OK) {
                Py_DECREF(seq);
                PyErr_Format(EtwError, "%U: schema record at buffer 0x%llx + 0x%x: %s", self->path, bo, ro_,
                             etw_strerror(s));
                return -1;
            }
        }
        Py_DECREF(seq);
        self->muted = 1;
        flush_diags(self);
        self->muted = 0;
    }
    if (stacks) {
        /* the first pass: every event's stack (the events are counted the
         * same way by Reader_iternext) */
        if (range != Py_None) {
            PyErr_SetString(PyExc_ValueError, "stacks=True reads the whole trace: not with a range");
            return -1;
        }
        if (build_profile(self->path, self->inputs, self->member, file_order, default_manifests, lang, symbols, 1, NULL, &self->prof_dec,
                          &self->prof) < 0)
            return -1;
        self->nframe_str = etw_profile_frame_count(self->prof);
        self->frame_str = PyMem_Calloc(self->nframe_str ? self->nframe_str : 1, sizeof *self->frame_str);
        if (!self->frame_str) return PyErr_NoMemory(), -1;
    }
    if (range != Py_None) {
        long long from, to;
        if (!PyArg_ParseTuple(range, "LL", &from, &to)) return -1;
        s = etw_reader_set_range(self->r, from, to);
        if (s != ETW_OK) {
            PyErr_Format(PyExc_ValueError, "%U: range (%lld, %lld): %s", self->path, from, to, etw_strerror(s));
            return -1;
        }
    }
    return flush_diags(self);
}

/* Label ev (self->lab) and say whether the filter selects it: 1, 0, or -1
 * when no memory was left. */
int select_event(Reader *self, const etw_event *ev) {
    if (self->filter) return etw_filter_match(self->filter, self->dec, ev, &self->lab);
    return etw_label_event(self->dec, ev, &self->lab) == ETW_OK ? 1 : -1;
}

static PyObject *Reader_iternext(Reader *self) {
    if (self->finished || !self->r) return NULL;
    if (self->max_events && self->returned >= self->max_events) goto end;
    for (;;) {
        etw_event ev;
        etw_status s = reader_next(self, &ev);
        if (s != ETW_OK) {
            if (flush_diags(self) < 0) return NULL;
            if (s != ETW_END) return raise_status(self, s, "reading the trace");
            goto end;
        }
        if (!self->dec) {
            PyErr_SetString(PyExc_TypeError, "this reader does not decode (no_decode=True)");
            return NULL;
        }
        self->seq++; /* every event, as the first pass of stacks=True counted them */
        /* every event goes through the decoder (the filter or the label
         * resolves it), so EventSource manifests are learned from events
         * left out */
        int m = select_event(self, &ev);
        if (m < 0) return PyErr_NoMemory();
        if (!m || (self->no_manifest_events && etw_decoder_is_manifest_event(&ev))) continue;
        PyObject *o = event_obj(self, &ev, &self->lab);
        if (self->ndiags && flush_diags(self) < 0) {
            Py_XDECREF(o);
            return NULL;
        }
        if (o) self->returned++;
        return o;
    }
end:
    self->finished = 1;
    if (self->dec) etw_decoder_finish(self->dec);
    if (flush_diags(self) < 0) return NULL;
    return NULL;
}

/* stats(): what the reader and decoder counted so far. */
static PyObject *reader_stats_of(const etw_reader *rd);

static PyObject *Reader_stats(Reader *self, PyObject *unused) {
    (void)unused;
    if (!self->r) {
        PyErr_SetString(PyExc_ValueError, "the reader is closed");
        return NULL;
    }
    if (!self->several) return reader_stats_of(self->r);
    /* several traces: each one's counts, by its name */
    PyObject *d = PyDict_New();
    for (size_t i = 0; d && i < self->nfiles; i++) {
        PyObject *one = reader_stats_of(etw_multi_reader(self->holder, i));
        if (!one || PyDict_SetItem(d, self->file_names[i], one) < 0) Py_CLEAR(d);
        Py_XDECREF(one);
    }
    return d;
}

static PyObject *reader_stats_of(const etw_reader *rd) {
    const etw_reader_stats *st = etw_reader_stats_get(rd);
    const etw_logfile_header *h = etw_reader_logfile(rd);
    PyObject *forms = PyDict_New();
    if (!forms) return NULL;
    for (int f = 0; f < ETW_FORM_COUNT_; f++)
        if (st->events_by_form[f] &&
            set_named(forms, etw_header_form_name((etw_header_form)f),
                      PyLong_FromUnsignedLongLong(st->events_by_form[f])) < 0) {
            Py_DECREF(forms);
            return NULL;
        }
    PyObject *session = utf16_str(h->session_name, h->session_name_bytes);
    PyObject *logfile = utf16_str(h->logfile_name, h->logfile_name_bytes);
    PyObject *r = Py_BuildValue(
        "{s:N,s:N,s:K,s:K,s:K,s:K,s:K,s:K,s:K,s:K,s:N,s:N,s:N,s:I,s:I,s:I,s:I,s:I,s:I,s:L,s:I,s:I}",
        "session", session, "logfile", logfile, "buffers", st->buffers, "buffers_compressed",
        st->buffers_compressed, "buffers_skipped", st->buffers_skipped, "buffers_lost_flag",
        st->buffers_lost_flag, "events", st->events, "records_skipped", st->records_skipped, "problems",
        st->problems, "bytes_decompressed", st->bytes_decompressed, "events_by_form", forms, "first_time",
        time_ns(st->first_timestamp), "last_time", time_ns(st->last_timestamp), "version", h->version,
        "os_build", h->provider_version, "pointer_size", h->pointer_size, "processors",
        h->number_of_processors, "events_lost", h->events_lost, "buffers_lost", h->buffers_lost, "perf_freq",
        (long long)h->perf_freq, "clock", h->reserved_flags, "cpu_speed_mhz", h->cpu_speed_mhz);
    return r;
}

static PyObject *Reader_enter(PyObject *self, PyObject *unused) {
    (void)unused;
    Py_INCREF(self);
    return self;
}

static PyObject *Reader_close(Reader *self, PyObject *unused) {
    (void)unused;
    etw_filter_free(self->filter);
    self->filter = NULL;
    if (self->dec) etw_decoder_free(self->dec);
    etw_multi_free(self->holder);
    self->holder = NULL;
    etw_windows_index_free(self->win);
    etw_manifest_catalog_free(self->cat); /* after the decoder that borrowed it */
    self->win = NULL;
    self->cat = NULL;
    self->dec = NULL;
    self->r = NULL;
    self->finished = 1;
    Py_RETURN_NONE;
}

static PyObject *Reader_exit(Reader *self, PyObject *args) {
    (void)args;
    return Reader_close(self, NULL);
}

/* _scan(): one pass without decoding payloads: {(provider_guid, kernel):
 * count} as etwdump --stats counts them, and (with a decoder) the places of
 * the records a time range must learn first: [(buffer offset, record
 * offset, order time, later)], later False for merged metadata (the whole
 * trace), True for what holds only after the record (etw_decoder_learns). */
static PyObject *Reader_scan(Reader *self, PyObject *unused) {
    (void)unused;
    if (!self->r) return raise_status(self, ETW_E_INVALID_ARG, "closed");
    if (self->several) return raise_status(self, ETW_E_INVALID_ARG, "_scan reads one trace");
    PyObject *counts = PyDict_New(), *places = PyList_New(0);
    if (!counts || !places) goto fail;
    etw_event ev;
    etw_status s;
    while ((s = etw_reader_next(self->r, &ev)) == ETW_OK) {
        int kernel = ev.form == ETW_FORM_SYSTEM || ev.form == ETW_FORM_COMPACT || ev.form == ETW_FORM_PERFINFO ||
                     ev.is_logfile_header;
        PyObject *g = guid_str(self, &ev.provider);
        PyObject *k = g ? Py_BuildValue("(NO)", g, kernel ? Py_True : Py_False) : NULL;
        if (!k) goto fail;
        PyObject *n = PyDict_GetItemWithError(counts, k);
        PyObject *n1 = n ? PyLong_FromUnsignedLongLong(PyLong_AsUnsignedLongLong(n) + 1) : PyLong_FromLong(1);
        if (!n1 || PyDict_SetItem(counts, k, n1) < 0) {
            Py_XDECREF(n1);
            Py_DECREF(k);
            goto fail;
        }
        Py_DECREF(n1);
        Py_DECREF(k);
        /* with a decoder: what each event teaches it (resolving costs one
         * hash lookup; no payload is decoded) */
        const etw_schema *schema = NULL;
        if (self->dec && !ev.is_logfile_header) etw_decoder_resolve(self->dec, &ev, &schema, NULL);
        int learns = self->dec ? etw_decoder_learns(self->dec, &ev, schema) : 0;
        if (learns) {
            PyObject *p = Py_BuildValue("(KILO)", (unsigned long long)ev.buffer_file_offset, ev.record_offset,
                                        (long long)etw_reader_order_time(self->r),
                                        learns == ETW_LEARN_LATER ? Py_True : Py_False);
            if (!p || PyList_Append(places, p) < 0) {
                Py_XDECREF(p);
                goto fail;
            }
            Py_DECREF(p);
        }
    }
    if (flush_diags(self) < 0) goto fail;
    if (s != ETW_END) {
        raise_status(self, s, "reading the trace");
        goto fail;
    }
    return Py_BuildValue("(NN)", counts, places);
fail:
    Py_XDECREF(counts);
    Py_XDECREF(places);
    return NULL;
}

/* _summary(schemas): read the remaining events (selection and options
 * applied) into the library's summary, etwdump --stats --format json
 * (schemas false) or etwdump --schemas (true), and return its JSON text. */
static PyObject *Reader_summary(Reader *self, PyObject *arg) {
    int want_schemas = PyObject_IsTrue(arg);
    if (want_schemas < 0) return NULL;
    if (!self->r || !self->dec) return raise_status(self, ETW_E_INVALID_ARG, "summary needs a decoding reader");
    etw_stats *st = NULL;
    etw_schemas *sc = NULL;
    etw_status s = want_schemas ? etw_schemas_new(&sc, NULL) : etw_stats_new(&st, NULL);
    if (s != ETW_OK) return PyErr_NoMemory();
    etw_event ev;
    uint64_t n = 0;
    while (s == ETW_OK && (!self->max_events || n < self->max_events)) {
        etw_status rs = reader_next(self, &ev);
        if (rs != ETW_OK) {
            if (rs != ETW_END) s = rs;
            break;
        }
        int m = select_event(self, &ev);
        if (m < 0) {
            s = ETW_E_NOMEM;
            break;
        }
        if (st) s = etw_stats_observe(st, self->dec, &ev, &self->lab);
        if (s != ETW_OK || !m || (self->no_manifest_events && etw_decoder_is_manifest_event(&ev))) continue;
        s = st ? etw_stats_add(st, &ev, &self->lab) : etw_schemas_add(sc, &self->lab);
        n++;
    }
    etw_decoder_finish(self->dec);
    self->finished = 1;
    PyObject *out = NULL;
    if (s == ETW_OK) {
        const char *text = NULL;
        size_t len = 0;
        PyObject *name = PyUnicode_EncodeFSDefault(self->path);
        if (!name) goto done;
        /* several traces: each one's header facts, by its name */
        size_t n = self->several ? self->nfiles : 1;
        const etw_reader **readers = PyMem_Calloc(n, sizeof *readers);
        const char **names = PyMem_Calloc(n, sizeof *names);
        if (!readers || !names) {
            PyErr_NoMemory();
        } else {
            for (size_t i = 0; i < n; i++) {
                readers[i] = self->several ? etw_multi_reader(self->holder, i) : self->r;
                names[i] = self->several ? etw_multi_name(self->holder, i) : PyBytes_AS_STRING(name);
            }
            s = st ? etw_stats_json(st, readers, names, n, &text, &len) : etw_schemas_json(sc, &text, &len);
            if (s == ETW_OK) out = PyUnicode_DecodeUTF8(text, (Py_ssize_t)len, "replace");
        }
        PyMem_Free(readers);
        PyMem_Free(names);
        Py_DECREF(name);
        if (!readers || !names) goto done;
    }
    if (s != ETW_OK) raise_status(self, s, want_schemas ? "schemas" : "stats");
done:
    etw_stats_free(st);
    etw_schemas_free(sc);
    if (out && flush_diags(self) < 0) Py_CLEAR(out);
    return out;
}

/* _split(n): time boundaries of at most n ranges of about equal bytes. */
static PyObject *Reader_split(Reader *self, PyObject *arg) {
    if (!self->r) {
        PyErr_SetString(PyExc_ValueError, "the reader is closed");
        return NULL;
    }
    if (self->several) return raise_status(self, ETW_E_INVALID_ARG, "_split reads one trace");
    unsigned long n = PyLong_AsUnsignedLong(arg);
    if (PyErr_Occurred()) return NULL;
    if (n == 0 || n > 1000000) {
        PyErr_SetString(PyExc_ValueError, "split: n must be 1..1000000");
        return NULL;
    }
    int64_t *b = PyMem_Calloc(n + 1, sizeof *b);
    if (!b) return PyErr_NoMemory();
    uint32_t count = 0;
    etw_status s = etw_reader_split(self->r, (uint32_t)n, b, &count);
    PyObject *l = NULL;
    if (s == ETW_OK && (l = PyList_New(count + 1)) != NULL)
        for (uint32_t i = 0; i <= count; i++) PyList_SET_ITEM(l, i, PyLong_FromLongLong(b[i]));
    PyMem_Free(b);
    if (s != ETW_OK) return raise_status(self, s, "split");
    if (flush_diags(self) < 0) {
        Py_XDECREF(l);
        return NULL;
    }
    return l;
}

static PyMethodDef Reader_methods[] = {
    {"stats", (PyCFunction)Reader_stats, METH_NOARGS, "What the reader counted so far."},
    {"close", (PyCFunction)Reader_close, METH_NOARGS, "Close the trace."},
    {"__enter__", Reader_enter, METH_NOARGS, NULL},
    {"__exit__", (PyCFunction)Reader_exit, METH_VARARGS, NULL},
    {"_scan", (PyCFunction)Reader_scan, METH_NOARGS, "Counts by provider and schema-record places."},
    {"_split", (PyCFunction)Reader_split, METH_O, "Time boundaries of about equal byte ranges."},
    {"_summary", (PyCFunction)Reader_summary, METH_O, "etwdump --stats --format json / --schemas text."},
    {"_frame", (PyCFunction)Reader_frame, METH_VARARGS, "_frame(columns=None, expand=None): the events as typed columns."},
    {NULL, NULL, 0, NULL},
};

PyTypeObject ReaderType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "etwdecode._native.Reader",
    .tp_basicsize = sizeof(Reader),
    .tp_dealloc = (destructor)Reader_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "Events of one .etl trace, as dicts (see etwdecode.open).",
    .tp_iter = PyObject_SelfIter,
    .tp_iternext = (iternextfunc)Reader_iternext,
    .tp_methods = Reader_methods,
    .tp_init = (initproc)Reader_init,
    .tp_new = PyType_GenericNew,
};

/* traces(path): the names of the traces an input holds: [path] for a
 * trace or a compressed one, ["archive.zip:entry.etl", ...] for an archive
 * (Reader(path, member=i) reads the i-th). Raises as Reader() does. */
PyObject *native_traces(PyObject *mod, PyObject *arg) {
    (void)mod;
    PyObject *path = NULL;
    if (!PyUnicode_FSDecoder(arg, &path)) return NULL;
    PyObject *fs = PyUnicode_EncodeFSDefault(path);
    if (!fs) {
        Py_DECREF(path);
        return NULL;
    }
    etw_multi *m = NULL;
    etw_status s;
    int err;
    Py_BEGIN_ALLOW_THREADS
    errno = 0;
    s = etw_multi_new(&m, NULL);
    if (s == ETW_OK) s = etw_multi_add_file(m, PyBytes_AS_STRING(fs));
    err = errno;
    Py_END_ALLOW_THREADS
    Py_DECREF(fs);
    PyObject *out = NULL;
    if (s != ETW_OK) {
        open_error(path, s, err);
    } else if ((out = PyList_New(0)) != NULL) {
        for (size_t i = 0; i < etw_multi_count(m); i++) {
            PyObject *n = PyUnicode_DecodeFSDefault(etw_multi_name(m, i));
            if (!n || PyList_Append(out, n) < 0) {
                Py_XDECREF(n);
                Py_CLEAR(out);
                break;
            }
            Py_DECREF(n);
        }
    }
    etw_multi_free(m);
    Py_DECREF(path);
    return out;
}
