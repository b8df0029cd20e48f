/* py_fields.c - etwdecode.Fields: the payload fields of one event in a
 * to_pandas() frame, a read-only mapping (collections.abc.Mapping) made
 * without a dict per row.
 *
 * A Fields object holds one reference to an index shared by every row of
 * the same layout (a dict: field name -> position, in payload order, never
 * seen by users) and one 8-byte cell per field: the integers, doubles and
 * booleans unboxed (the Python object is made when the value is read, so a
 * frame keeps no int object per value), everything else (str, bytes, the
 * dicts and lists of structs and arrays) as the object. A row is one
 * allocation; the cyclic collector tracks it only when it holds a
 * container, as it does for tuples.
 *
 * The layouts (name sequences) are cached by the name pointers of the
 * schema (they live as long as the decoder) and whether each value is the
 * NAME_drive twin of the one before, so a row's keys cost a hash of its
 * pointers, not one dict insertion a field. */
#include "py_native.h"

typedef union fcell {
    PyObject *obj;
    uint64_t bits;
} fcell;

typedef struct Fields {
    PyObject_VAR_HEAD    /* ob_size: the number of fields */
    PyObject *index;     /* dict: name -> position (shared, never mutated after it is made) */
    fcell cells[];       /* ob_size cells, then ob_size tag bytes (FV_*) */
} Fields;

static uint8_t *tags_of(Fields *f) { return (uint8_t *)(f->cells + Py_SIZE(f)); }

static int holds_obj(uint8_t tag) { return tag == FV_OBJ || tag == FV_IARR || tag == FV_UARR; }

/* An unboxed integer array (bytes of 8-byte values) as a new list. */
static PyObject *int_list(PyObject *bytes, int is_unsigned) {
    Py_ssize_t n = PyBytes_GET_SIZE(bytes) / 8;
    const char *p = PyBytes_AS_STRING(bytes);
    PyObject *l = PyList_New(n);
    if (!l) return NULL;
    for (Py_ssize_t i = 0; i < n; i++) {
        uint64_t u;
        int64_t s;
        memcpy(&u, p + i * 8, 8);
        memcpy(&s, &u, 8);
        PyObject *o = is_unsigned ? PyLong_FromUnsignedLongLong(u) : PyLong_FromLongLong(s);
        if (!o) {
            Py_DECREF(l);
            return NULL;
        }
        PyList_SET_ITEM(l, i, o);
    }
    return l;
}

/* The value in position i as a new reference. */
static PyObject *cell_value(Fields *f, Py_ssize_t i) {
    fcell c = f->cells[i];
    switch (tags_of(f)[i]) {
    case FV_OBJ: Py_INCREF(c.obj); return c.obj;
    case FV_I64: {
        int64_t s;
        memcpy(&s, &c.bits, sizeof s);
        return PyLong_FromLongLong(s);
    }
    case FV_U64: return PyLong_FromUnsignedLongLong(c.bits);
    case FV_F64: {
        double d;
        memcpy(&d, &c.bits, sizeof d);
        return PyFloat_FromDouble(d);
    }
    case FV_BOOL: return PyBool_FromLong(c.bits != 0);
    case FV_IARR: return int_list(c.obj, 0);
    case FV_UARR: return int_list(c.obj, 1);
    default: Py_RETURN_NONE;
    }
}

PyObject *fields_alloc(PyObject *index, Py_ssize_t n) {
    Fields *f = PyObject_GC_NewVar(Fields, &FieldsType, n); /* n cells and n tags */
    if (!f) return NULL;
    Py_INCREF(index);
    f->index = index;
    memset(f->cells, 0, (size_t)n * sizeof(fcell));
    memset(tags_of(f), FV_NONE, (size_t)n);
    return (PyObject *)f;
}

void fields_put(PyObject *o, Py_ssize_t i, int kind, uint64_t bits, PyObject *obj) {
    Fields *f = (Fields *)o;
    uint8_t *tags = tags_of(f);
    if (holds_obj(tags[i])) Py_DECREF(f->cells[i].obj);
    tags[i] = (uint8_t)kind;
    if (holds_obj((uint8_t)kind))
        f->cells[i].obj = obj;
    else
        f->cells[i].bits = bits;
}

void fields_done(PyObject *o) {
    Fields *f = (Fields *)o;
    uint8_t *tags = tags_of(f);
    for (Py_ssize_t i = 0; i < Py_SIZE(f); i++) {
        if (tags[i] == FV_OBJ && PyObject_IS_GC(f->cells[i].obj) && PyObject_GC_IsTracked(f->cells[i].obj)) {
            PyObject_GC_Track(o);
            return;
        }
    }
}

/* A new index for these names (str, in order); a name met again keeps its
 * first position (*slots: the position of each name, may be NULL). */
static PyObject *index_of(PyObject *const *names, Py_ssize_t n, Py_ssize_t *slots, Py_ssize_t *nkeys) {
    PyObject *index = PyDict_New();
    if (!index) return NULL;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *at = PyDict_GetItemWithError(index, names[i]);
        if (!at) {
            if (PyErr_Occurred()) goto fail;
            at = PyLong_FromSsize_t(PyDict_GET_SIZE(index));
            if (!at) goto fail;
            int rc = PyDict_SetItem(index, names[i], at);
            Py_DECREF(at);
            if (rc < 0) goto fail;
        }
        if (slots) slots[i] = PyLong_AsSsize_t(at);
    }
    *nkeys = PyDict_GET_SIZE(index);
    return index;
fail:
    Py_DECREF(index);
    return NULL;
}

/* ---- the layout cache ---- */

static void layout_free(fields_layout *l) {
    PyMem_Free(l->names);
    PyMem_Free(l->drive);
    PyMem_Free(l->slots);
    Py_XDECREF(l->index);
    PyMem_Free(l);
}

void fields_layouts_clear(fields_layouts *t) {
    for (size_t i = 0; i < t->cap; i++)
        if (t->slots[i]) layout_free(t->slots[i]);
    PyMem_Free(t->slots);
    memset(t, 0, sizeof *t);
}

static uint64_t layout_hash(const char *const *names, const uint8_t *drive, size_t n) {
    uint64_t h = 0xcbf29ce484222325u ^ n;
    for (size_t i = 0; i < n; i++) {
        h ^= (uint64_t)(uintptr_t)names[i] + drive[i];
        h *= 0x100000001b3u;
        h ^= h >> 29;
    }
    return h;
}

static fields_layout *layout_new(Reader *self, const char *const *names, const uint8_t *drive, size_t n,
                                 uint64_t h) {
    fields_layout *l = PyMem_Calloc(1, sizeof *l);
    PyObject **strs = PyMem_Calloc(n ? n : 1, sizeof *strs);
    if (!l || !strs) {
        PyMem_Free(l);
        PyMem_Free(strs);
        return (fields_layout *)PyErr_NoMemory();
    }
    l->hash = h;
    l->n = n;
    l->names = PyMem_Malloc((n ? n : 1) * sizeof *l->names);
    l->drive = PyMem_Malloc(n ? n : 1);
    l->slots = PyMem_Malloc((n ? n : 1) * sizeof *l->slots);
    if (!l->names || !l->drive || !l->slots) {
        PyErr_NoMemory();
        goto fail;
    }
    if (n) {
        memcpy(l->names, names, n * sizeof *names);
        memcpy(l->drive, drive, n);
    }
    for (size_t i = 0; i < n; i++) {
        strs[i] = drive[i] ? PyUnicode_FromFormat("%s_drive", names[i]) : cached_name(&self->names, names[i]);
        if (!strs[i]) goto fail;
    }
    l->index = index_of(strs, (Py_ssize_t)n, l->slots, &l->nkeys);
    if (!l->index) goto fail;
    for (size_t i = 0; i < n; i++) Py_DECREF(strs[i]);
    PyMem_Free(strs);
    return l;
fail:
    for (size_t i = 0; i < n; i++) Py_XDECREF(strs[i]);
    PyMem_Free(strs);
    layout_free(l);
    return NULL;
}

#define LAYOUTS_MAX 65536 /* then the cache starts again (rows keep their index) */

fields_layout *fields_layout_get(fields_layouts *t, Reader *self, const char *const *names, const uint8_t *drive,
                                 size_t n) {
    uint64_t h = layout_hash(names, drive, n);
    if (t->cap) {
        size_t mask = t->cap - 1;
        for (size_t i = (size_t)h & mask; t->slots[i]; i = (i + 1) & mask) {
            fields_layout *l = t->slots[i];
            if (l->hash == h && l->n == n && (!n || (!memcmp(l->names, names, n * sizeof *names) &&
                                                      !memcmp(l->drive, drive, n))))
                return l;
        }
    }
    if (t->used >= LAYOUTS_MAX) fields_layouts_clear(t);
    if ((t->used + 1) * 2 > t->cap) { /* grow (or start), then insert */
        size_t nc = t->cap ? t->cap * 2 : 64;
        fields_layout **ns = PyMem_Calloc(nc, sizeof *ns);
        if (!ns) return (fields_layout *)PyErr_NoMemory();
        for (size_t i = 0; i < t->cap; i++) {
            if (!t->slots[i]) continue;
            size_t j = (size_t)t->slots[i]->hash & (nc - 1);
            while (ns[j]) j = (j + 1) & (nc - 1);
            ns[j] = t->slots[i];
        }
        PyMem_Free(t->slots);
        t->slots = ns;
        t->cap = nc;
    }
    fields_layout *l = layout_new(self, names, drive, n, h);
    if (!l) return NULL;
    size_t j = (size_t)h & (t->cap - 1);
    while (t->slots[j]) j = (j + 1) & (t->cap - 1);
    t->slots[j] = l;
    t->used++;
    return l;
}

/* ---- from a dict ---- */

/* Fields with d's items (objects as they are); *last: the index of the
 * previous call, reused when d has the same keys in the same order. */
PyObject *fields_from_dict(PyObject *d, PyObject **last) {
    Py_ssize_t n = PyDict_GET_SIZE(d), pos = 0, i = 0;
    PyObject *k, *v;
    int same = *last && PyDict_GET_SIZE(*last) == n;
    if (same) {
        Py_ssize_t p2 = 0;
        PyObject *k2, *v2;
        while (PyDict_Next(d, &pos, &k, &v) && PyDict_Next(*last, &p2, &k2, &v2)) {
            if (k != k2) {
                same = 0;
                break;
            }
        }
        pos = 0;
    }
    if (!same) {
        PyObject **names = PyMem_Malloc((n ? n : 1) * sizeof *names);
        if (!names) return PyErr_NoMemory();
        while (PyDict_Next(d, &pos, &k, &v)) names[i++] = k;
        Py_ssize_t nkeys;
        PyObject *index = index_of(names, n, NULL, &nkeys);
        PyMem_Free(names);
        if (!index) return NULL;
        Py_XSETREF(*last, index);
        pos = i = 0;
    }
    PyObject *f = fields_alloc(*last, n);
    if (!f) return NULL;
    while (PyDict_Next(d, &pos, &k, &v)) {
        Py_INCREF(v);
        fields_put(f, i++, FV_OBJ, 0, v);
    }
    fields_done(f);
    return f;
}

/* ---- the type ---- */

static void Fields_dealloc(Fields *f) {
    PyObject_GC_UnTrack(f);
    uint8_t *tags = tags_of(f);
    for (Py_ssize_t i = 0; i < Py_SIZE(f); i++)
        if (holds_obj(tags[i])) Py_DECREF(f->cells[i].obj);
    Py_XDECREF(f->index);
    PyObject_GC_Del(f);
}

static int Fields_traverse(Fields *f, visitproc visit, void *arg) {
    uint8_t *tags = tags_of(f);
    for (Py_ssize_t i = 0; i < Py_SIZE(f); i++)
        if (holds_obj(tags[i])) Py_VISIT(f->cells[i].obj);
    Py_VISIT(f->index);
    return 0;
}

/* The position of key, or -1 (no error set: absent; set: an error). */
static Py_ssize_t position(Fields *f, PyObject *key) {
    PyObject *at = PyDict_GetItemWithError(f->index, key);
    if (!at) return -1;
    return PyLong_AsSsize_t(at);
}

static PyObject *Fields_subscript(Fields *f, PyObject *key) {
    Py_ssize_t i = position(f, key);
    if (i < 0) {
        if (!PyErr_Occurred()) PyErr_SetObject(PyExc_KeyError, key);
        return NULL;
    }
    return cell_value(f, i);
}

static Py_ssize_t Fields_length(Fields *f) { return Py_SIZE(f); }

static int Fields_contains(Fields *f, PyObject *key) { return PyDict_Contains(f->index, key); }

static PyObject *Fields_iter(Fields *f) { return PyObject_GetIter(f->index); }

static PyObject *Fields_get(Fields *f, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs < 1 || nargs > 2) {
        PyErr_SetString(PyExc_TypeError, "get expected 1 or 2 arguments");
        return NULL;
    }
    Py_ssize_t i = position(f, args[0]);
    if (i >= 0) return cell_value(f, i);
    if (PyErr_Occurred()) return NULL;
    PyObject *dflt = nargs == 2 ? args[1] : Py_None;
    Py_INCREF(dflt);
    return dflt;
}

/* A dict of the fields, in order. */
static PyObject *as_dict(Fields *f) {
    PyObject *d = PyDict_New();
    if (!d) return NULL;
    PyObject *k, *at;
    Py_ssize_t pos = 0;
    while (PyDict_Next(f->index, &pos, &k, &at)) {
        PyObject *v = cell_value(f, PyLong_AsSsize_t(at));
        if (!v || PyDict_SetItem(d, k, v) < 0) {
            Py_XDECREF(v);
            Py_DECREF(d);
            return NULL;
        }
        Py_DECREF(v);
    }
    return d;
}

static PyObject *Fields_to_dict(Fields *f, PyObject *unused) {
    (void)unused;
    return as_dict(f);
}

static PyObject *Fields_keys(Fields *f, PyObject *unused) {
    (void)unused;
    return PyObject_CallMethod(f->index, "keys", NULL);
}

/* values() and items(): the collections.abc views of the mapping */
static PyObject *abc_view(Fields *f, const char *name) {
    PyObject *mod = PyImport_ImportModule("collections.abc");
    PyObject *cls = mod ? PyObject_GetAttrString(mod, name) : NULL;
    Py_XDECREF(mod);
    PyObject *view = cls ? PyObject_CallOneArg(cls, (PyObject *)f) : NULL;
    Py_XDECREF(cls);
    return view;
}

static PyObject *Fields_values(Fields *f, PyObject *unused) {
    (void)unused;
    return abc_view(f, "ValuesView");
}

static PyObject *Fields_items(Fields *f, PyObject *unused) {
    (void)unused;
    return abc_view(f, "ItemsView");
}

static PyObject *Fields_reduce(Fields *f, PyObject *unused) {
    (void)unused;
    PyObject *d = as_dict(f);
    if (!d) return NULL;
    return Py_BuildValue("(O(N))", (PyObject *)Py_TYPE(f), d);
}

static PyObject *Fields_repr(Fields *f) {
    PyObject *d = as_dict(f);
    if (!d) return NULL;
    PyObject *r = PyObject_Repr(d);
    Py_DECREF(d);
    return r;
}

/* == and != with a dict or another Fields: the same keys and equal values */
static PyObject *Fields_richcompare(Fields *f, PyObject *other, int op) {
    if ((op != Py_EQ && op != Py_NE) || !(PyDict_Check(other) || PyObject_TypeCheck(other, &FieldsType)))
        Py_RETURN_NOTIMPLEMENTED;
    int eq = PyObject_Size(other) == Py_SIZE(f);
    if (PyErr_Occurred()) return NULL;
    PyObject *k, *at;
    Py_ssize_t pos = 0;
    while (eq && PyDict_Next(f->index, &pos, &k, &at)) {
        PyObject *theirs;
        if (PyDict_Check(other)) {
            theirs = PyDict_GetItemWithError(other, k);
            Py_XINCREF(theirs);
        } else {
            Py_ssize_t j = position((Fields *)other, k);
            theirs = j >= 0 ? cell_value((Fields *)other, j) : NULL;
        }
        if (!theirs) {
            if (PyErr_Occurred()) return NULL;
            eq = 0;
            break;
        }
        PyObject *mine = cell_value(f, PyLong_AsSsize_t(at));
        int r = mine ? PyObject_RichCompareBool(mine, theirs, Py_EQ) : -1;
        Py_XDECREF(mine);
        Py_DECREF(theirs);
        if (r < 0) return NULL;
        eq = r;
    }
    return PyBool_FromLong(op == Py_EQ ? eq : !eq);
}

/* Fields(mapping or pairs=(), **kw): as dict() takes them */
static PyObject *Fields_new(PyTypeObject *type, PyObject *args, PyObject *kw) {
    (void)type;
    PyObject *d = PyObject_Call((PyObject *)&PyDict_Type, args, kw);
    if (!d) return NULL;
    PyObject *index = NULL;
    PyObject *f = fields_from_dict(d, &index);
    Py_DECREF(d);
    Py_XDECREF(index);
    return f;
}

static PyMethodDef Fields_methods[] = {
    {"get", (PyCFunction)(void (*)(void))Fields_get, METH_FASTCALL,
     "get(name, default=None): the field's value, or default where the event has no such field."},
    {"keys", (PyCFunction)Fields_keys, METH_NOARGS, "The field names, in payload order (a set-like view)."},
    {"values", (PyCFunction)Fields_values, METH_NOARGS, "The values, in payload order."},
    {"items", (PyCFunction)Fields_items, METH_NOARGS, "(name, value) pairs, in payload order."},
    {"to_dict", (PyCFunction)Fields_to_dict, METH_NOARGS, "The fields as a new dict (as dict(self))."},
    {"__reduce__", (PyCFunction)Fields_reduce, METH_NOARGS, "Pickled as Fields(dict(self))."},
    {NULL, NULL, 0, NULL},
};

static PyMappingMethods Fields_as_mapping = {
    .mp_length = (lenfunc)Fields_length,
    .mp_subscript = (binaryfunc)Fields_subscript,
};

static PySequenceMethods Fields_as_sequence = {
    .sq_contains = (objobjproc)Fields_contains,
};

PyTypeObject FieldsType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "etwdecode.Fields",
    .tp_basicsize = sizeof(Fields),
    .tp_itemsize = sizeof(fcell) + 1,
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
    .tp_doc = "Fields(mapping=(), **kw): the payload fields of one event in a to_pandas() frame, a read-only "
              "mapping (collections.abc.Mapping) of name to value in payload order: f[name], f.get(name), "
              "name in f, len(f), iteration, keys()/values()/items(), == with a dict, dict(f) or "
              "f.to_dict() for a dict. Integers are exact Python ints, made when read.",
    .tp_dealloc = (destructor)Fields_dealloc,
    .tp_traverse = (traverseproc)Fields_traverse,
    .tp_repr = (reprfunc)Fields_repr,
    .tp_as_mapping = &Fields_as_mapping,
    .tp_as_sequence = &Fields_as_sequence,
    .tp_hash = PyObject_HashNotImplemented,
    .tp_richcompare = (richcmpfunc)Fields_richcompare,
    .tp_iter = (getiterfunc)Fields_iter,
    .tp_methods = Fields_methods,
    .tp_new = Fields_new,
};
