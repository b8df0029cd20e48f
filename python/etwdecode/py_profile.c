/* py_profile.c - stacks=True (the first pass's profile) and profile():
 * etwdump --profile for Python. */
#include "py_native.h"

static const etw_guid k_perfinfo = {0xce1dbfb4, 0x137e, 0x4da6, {0x87, 0xb0, 0x3f, 0x59, 0xaa, 0x10, 0x2c, 0xbc}};
PyObject *frame_label_obj(PyObject **cache, uint32_t ncache, const etw_profile *p, uint32_t f) {
    if (f < ncache && cache[f]) {
        Py_INCREF(cache[f]);
        return cache[f];
    }
    etw_frame_info fi;
    if (etw_profile_frame(p, f, &fi) != ETW_OK) return PyUnicode_FromString("?");
    char small[256];
    char *buf = small;
    size_t n = etw_frame_label(&fi, small, sizeof small);
    if (n >= sizeof small) {
        buf = PyMem_Malloc(n + 1);
        if (!buf) return PyErr_NoMemory();
        etw_frame_label(&fi, buf, n + 1);
    }
    PyObject *o = PyUnicode_DecodeUTF8(buf, (Py_ssize_t)n, "replace");
    if (buf != small) PyMem_Free(buf);
    if (o && f < ncache) {
        Py_INCREF(o);
        cache[f] = o;
    }
    return o;
}

/* The frames of a stack node, innermost first, as a list of str. */
PyObject *profile_stack_list(PyObject **cache, uint32_t ncache, const etw_profile *p, uint32_t node) {
    PyObject *l = PyList_New(0);
    if (!l) return NULL;
    uint32_t depth = etw_profile_stack_depth(p, node);
    for (uint32_t n = 0; node != ETW_STACK_NONE && n < depth; n++, node = etw_profile_stack_parent(p, node)) {
        PyObject *x = frame_label_obj(cache, ncache, p, etw_profile_stack_frame(p, node));
        if (!x || PyList_Append(l, x) < 0) {
            Py_XDECREF(x);
            Py_DECREF(l);
            return NULL;
        }
        Py_DECREF(x);
    }
    return l;
}

/* ---- the profile stage (etw_profile.h) ---- */

/* Kernel PerfInfo class and its Sample opcode (TraceEvent's names). */


/* etwdump's --profile selection (tools/etwdump/profile.c): CPU samples
 * (the profile never offers an idle one), or the selected events. */
int py_pick(void *ctx, const etw_event *ev, const etw_schema *sc, uint32_t pid, uint32_t tid,
                   double *weight) {
    py_pick_ctx *c = ctx;
    (void)pid;
    (void)tid;
    int cpu = etw_guid_equal(&ev->provider, &k_perfinfo) && ev->opcode == 46;
    if (!c->by_event && !cpu) return 0;
    int sel = c->filter ? etw_filter_match(c->filter, c->dec, ev, NULL) : 1;
    if (sel < 0) c->oom = 1;
    if (sel <= 0) return 0;
    *weight = 1.0;
    if (c->weight && etw_decoder_field_number(c->dec, ev, sc, c->weight, weight) != ETW_OK) return 0;
    return 1;
}

/* Read the trace at path once into a finished profile (*prof, with its
 * decoder *dec). symbols: a sequence of symbol stores or None. pick: NULL
 * for the profile's own CPU samples. Problems of the data are counted, not
 * told (the event pass tells them). inputs: a list of str read as one
 * timeline (the Reader's: the events in the same order as its pass), or
 * NULL for path alone; member >= 0: that trace of an archive alone. -1 with
 * an exception set. */
int build_profile(PyObject *path, PyObject *inputs, Py_ssize_t member, int file_order, int default_manifests,
                  const char *lang, PyObject *symbols, int keep_event_stacks, py_pick_ctx *pick, etw_decoder **dec,
                         etw_profile **prof) {
    *dec = NULL;
    *prof = NULL;
    path_list syms = {0};
    int rc = -1;
    etw_multi *m = NULL;
    etw_reader *one = NULL; /* member >= 0: the trace read alone */
    if (symbols && symbols != Py_None && path_list_init(&syms, symbols, "symbols must be a sequence of paths") < 0) goto out;
    etw_reader_options ro;
    memset(&ro, 0, sizeof ro);
    ro.file_order = file_order;
    etw_status s = etw_multi_new(&m, &ro);
    if (s != ETW_OK) {
        PyErr_NoMemory();
        goto out;
    }
    Py_ssize_t nin = inputs ? PyList_GET_SIZE(inputs) : 1;
    for (Py_ssize_t i = 0; i < nin; i++) {
        PyObject *p = inputs ? PyList_GET_ITEM(inputs, i) : path;
        PyObject *fs = PyUnicode_EncodeFSDefault(p);
        if (!fs) goto out;
        int err;
        Py_BEGIN_ALLOW_THREADS
        errno = 0;
        s = etw_multi_add_file(m, PyBytes_AS_STRING(fs));
        err = errno;
        Py_END_ALLOW_THREADS
        Py_DECREF(fs);
        if (s != ETW_OK) {
            open_error(p, s, err);
            goto out;
        }
    }
    if (member >= 0) {
        if ((size_t)member >= etw_multi_count(m)) {
            PyErr_Format(PyExc_IndexError, "%U: member %zd of %zu traces", path, member, etw_multi_count(m));
            goto out;
        }
        one = etw_multi_reader(m, (size_t)member);
    }
    etw_decoder_options dopt;
    memset(&dopt, 0, sizeof dopt);
    dopt.no_default_manifests = !default_manifests;
    dopt.lang = lang;
    if (etw_decoder_new(dec, &dopt) != ETW_OK) {
        PyErr_NoMemory();
        goto out;
    }
    etw_profile_options po;
    memset(&po, 0, sizeof po);
    po.decoder = *dec;
    po.keep_event_stacks = keep_event_stacks;
    po.symbol_paths = syms.paths;
    po.nsymbol_paths = (size_t)syms.n;
    if (pick && (pick->by_event || pick->filter)) {
        pick->dec = *dec;
        po.is_sample = py_pick;
        po.sample_ctx = pick;
    }
    if (etw_profile_new(prof, &po) != ETW_OK) {
        PyErr_NoMemory();
        goto out;
    }
    Py_BEGIN_ALLOW_THREADS
    s = ETW_OK;
    for (size_t i = 0; s == ETW_OK && i < etw_multi_count(m); i++)
        if (!one || etw_multi_reader(m, i) == one) s = etw_decoder_prescan(*dec, etw_multi_reader(m, i));
    etw_event ev;
    while (s == ETW_OK && (one ? etw_reader_next(one, &ev) : etw_multi_next(m, &ev, NULL)) == ETW_OK) {
        const etw_schema *sc = NULL;
        if (!ev.is_logfile_header) etw_decoder_resolve(*dec, &ev, &sc, NULL);
        s = etw_profile_add(*prof, &ev, sc);
        if (s == ETW_OK && pick && pick->oom) s = ETW_E_NOMEM;
    }
    if (s == ETW_OK) s = etw_profile_finish(*prof);
    Py_END_ALLOW_THREADS
    if (s != ETW_OK) {
        if (s == ETW_E_NOMEM) PyErr_NoMemory();
        else PyErr_Format(EtwError, "%U: %s", path, etw_strerror(s));
        goto out;
    }
    rc = 0;
out:
    etw_multi_free(m);
    path_list_free(&syms);
    if (rc < 0) {
        etw_profile_free(*prof);
        etw_decoder_free(*dec);
        *prof = NULL;
        *dec = NULL;
    }
    return rc;
}

/* profile(path, filters=None, by_event=False, weight=None, symbols=None,
 *         file_order=False, default_manifests=True, lang=None): the samples
 * as [(stack, pid, tid, process, weight, count, frames), ...], frames
 * innermost first. */
PyObject *native_profile(PyObject *mod, PyObject *args, PyObject *kw) {
    (void)mod;
    static char *kwlist[] = {"path", "filters", "by_event", "weight", "symbols", "file_order",
                             "default_manifests", "lang", NULL};
    PyObject *path_obj, *filters = Py_None, *symbols = Py_None;
    int by_event = 0, file_order = 0, default_manifests = 1;
    const char *weight = NULL, *lang = NULL;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "O&|OpzOppz", kwlist, PyUnicode_FSDecoder, &path_obj, &filters,
                                     &by_event, &weight, &symbols, &file_order, &default_manifests, &lang))
        return NULL;
    Reader tmp; /* add_filters builds its filter here */
    memset(&tmp, 0, sizeof tmp);
    PyObject *result = NULL;
    etw_decoder *dec = NULL;
    etw_profile *prof = NULL;
    PyObject **cache = NULL;
    uint32_t ncache = 0;
    if (filters != Py_None && PyObject_IsTrue(filters) && add_filters(&tmp, filters) < 0) goto out;
    py_pick_ctx pick = {tmp.filter, NULL, by_event, weight, 0};
    if (build_profile(path_obj, NULL, -1, file_order, default_manifests, lang, symbols, 0, &pick, &dec, &prof) < 0) goto out;
    ncache = etw_profile_frame_count(prof);
    cache = PyMem_Calloc(ncache ? ncache : 1, sizeof *cache);
    if (!cache) {
        PyErr_NoMemory();
        goto out;
    }
    size_t n = etw_profile_sample_count(prof);
    result = PyList_New(0);
    for (size_t i = 0; result && i < n; i++) {
        etw_profile_sample sm;
        if (etw_profile_sample_at(prof, i, &sm) != ETW_OK) continue;
        const char *pn;
        size_t pl;
        PyObject *proc = etw_profile_process_name(prof, sm.pid, &pn, &pl) == ETW_OK
                             ? PyUnicode_DecodeUTF8(pn, (Py_ssize_t)pl, "replace")
                             : (Py_INCREF(Py_None), Py_None);
        PyObject *frames = profile_stack_list(cache, ncache, prof, sm.stack);
        PyObject *row = proc && frames ? Py_BuildValue("(INNOdKO)", sm.stack, id_obj(sm.pid), id_obj(sm.tid), proc,
                                                       sm.weight, (unsigned long long)sm.count, frames)
                                       : NULL;
        Py_XDECREF(proc);
        Py_XDECREF(frames);
        if (!row || PyList_Append(result, row) < 0) Py_CLEAR(result);
        Py_XDECREF(row);
    }
out:
    for (uint32_t i = 0; cache && i < ncache; i++) Py_XDECREF(cache[i]);
    PyMem_Free(cache);
    etw_profile_free(prof);
    etw_decoder_free(dec);
    etw_filter_free(tmp.filter);
    Py_DECREF(path_obj);
    return result;
}
