/* py_frames.c - to_pandas() in C: the selected events appended column by
 * column into growable typed buffers (int64/uint64/double/bool values with
 * a validity byte each, category codes, or lists of objects), never an
 * event dict; _frames.py turns the buffers into numpy/pandas arrays.
 *
 * A field column takes its type from the values it receives: integers by
 * their TDH in-type (signed ones int64, unsigned ones, pointers, sizes and
 * hex types uint64: integer_class), DOUBLE and FLOAT double, BOOLEAN bool,
 * everything else (strings, GUIDs, binaries, structs, arrays) an object.
 * A column that receives two different types becomes an object column
 * (its values as Python objects, exact). A field column stores only the
 * rows that have the field (their row numbers beside the values), so a
 * wide expand=True frame costs per filled cell; _frames.py scatters them
 * into full-length arrays. A field column's name is looked up
 * once per schema name string (they live as long as the decoder): a
 * pointer-keyed table, then one dict lookup for a name never seen.
 */
#include "py_native.h"

/* column types */
enum { COL_NONE, COL_I64, COL_U64, COL_F64, COL_BOOL, COL_OBJ, COL_TIME, COL_CAT,
       COL_IARR, COL_UARR /* a "fields" cell only: an integer array, unboxed (obj: bytes) */ };

/* validity of a field column's stored cell (rows without one are absent) */
enum { CELL_VALUE = 1, CELL_NONE = 2 /* present, None */ };

typedef struct col {
    PyObject *name;  /* str */
    int kind;
    uint8_t *data;   /* 8 bytes a row (I64/U64/F64/TIME), 4 (CAT), 1 (BOOL) */
    size_t cap;      /* rows data has room for */
    uint8_t *valid;  /* field columns: CELL_* a stored cell; NULL for header columns */
    size_t vcap;
    uint8_t *at;     /* field columns: the row (int64) of each stored cell, rising:
                      * a field column keeps only the rows that have the field */
    size_t acap;
    PyObject **objs; /* COL_OBJ: one object a row (a stored cell), owned; made a
                      * list at the end (grown by doubling, not as a list grows) */
    size_t nobj, ocap;
    size_t n;        /* rows filled (field columns: cells stored) */
    PyObject *cats;  /* COL_CAT: the categories (list) and str -> code (dict) */
    PyObject *catmap;
    int sparse;      /* a header column most rows lack: data holds the int64
                      * rows of the objects in list (no None a row) */
    size_t first;    /* rows to make room for at once: a header column that has a
                      * value every row starts at the frame's guess of its rows
                      * (frame_rows_hint), so it is not copied as it grows */
} col;

/* header columns, in _frames.COLUMNS order (fields last) */
enum {
    H_TIME, H_PROVIDER, H_PROVIDER_GUID, H_EVENT, H_ID, H_VERSION, H_LEVEL, H_OPCODE, H_TASK, H_CHANNEL,
    H_KEYWORDS, H_PID, H_TID, H_CPU, H_DATA_LEN, H_PROCESS, H_ACTIVITY_ID, H_RELATED_ACTIVITY_ID,
    H_CONTAINER_ID, H_STACK, H_STACK_MATCH_ID, H_MORE_STACKS, H_STACK_KEY, H_STACK_KEY_MATCH_ID,
    H_MORE_STACK_KEYS, H_ERROR, H_RAW, H_FILE, H_FIELDS, H_COUNT_
};
static const char *const h_names[H_COUNT_] = {
    "time", "provider", "provider_guid", "event", "id", "version", "level", "opcode", "task", "channel",
    "keywords", "pid", "tid", "cpu", "data_len", "process", "activity_id", "related_activity_id",
    "container_id", "stack", "stack_match_id", "more_stacks", "stack_key", "stack_key_match_id",
    "more_stack_keys", "error", "raw", "file", "fields",
};
static const int h_kinds[H_COUNT_] = {
    COL_TIME, COL_CAT, COL_OBJ, COL_CAT, COL_I64, COL_I64, COL_I64, COL_I64, COL_I64, COL_I64,
    COL_U64, COL_I64, COL_I64, COL_I64, COL_I64, COL_OBJ, COL_OBJ, COL_OBJ,
    COL_OBJ, COL_OBJ, COL_OBJ, COL_OBJ, COL_OBJ, COL_OBJ,
    COL_OBJ, COL_OBJ, COL_OBJ, COL_CAT, COL_OBJ,
};
/* the ext_items() keys behind H_RELATED_ACTIVITY_ID..H_MORE_STACK_KEYS */
static const int h_ext_keys[] = {K_RELATED_ACTIVITY_ID, K_CONTAINER_ID, K_STACK, K_STACK_MATCH_ID, K_MORE_STACKS,
                                 K_STACK_KEY, K_STACK_KEY_MATCH_ID, K_MORE_STACK_KEYS};

/* name pointer -> field column index (open addressing, grows at 1/2) */
typedef struct name_slot {
    const char *key;
    uint32_t col;
} name_slot;

typedef struct frame {
    Reader *self;
    col h[H_COUNT_];
    int want[H_COUNT_];
    col *f;             /* field columns */
    size_t nf, capf;
    PyObject *fmap;     /* field name (str) -> index in f, as PyLong */
    PyObject *only;     /* columns=: the set of field names to build, or NULL: all */
    name_slot *slots;
    size_t nslots, used;
    size_t rows;
    int expand;         /* 1: field columns; 0: a "fields" column of dicts */
    int decide;         /* expand=None: field columns while one kind is seen */
    int32_t kind_p, kind_e; /* the first row's provider and event codes */
    /* the "fields" column: a row's values (their names and cells) gathered
     * here (reused, no allocation an event), then one etwdecode.Fields */
    fields_layouts layouts;
    const char **rn;
    uint8_t *rdrive;
    struct cell *rv;
    size_t rcap;
    uint8_t *abuf;        /* int_array_cell()'s values */
    size_t acap;
    str_cache wide, narrow; /* string_cell(): short UTF-16 / 8-bit texts by their bytes */
    PyObject *last_index; /* fields_from_dict()'s index of the last dict */
} frame;

/* ---- growable buffers ---- */

/* first: the rows to make room for at once (0: 1024) */
static int grow_from(uint8_t **p, size_t *cap, size_t need, size_t width, size_t first) {
    if (need <= *cap) return 0;
    size_t nc = *cap ? *cap : first ? first : 1024;
    while (nc < need) {
        if (nc > ((size_t)PY_SSIZE_T_MAX / 2) / width) return PyErr_NoMemory(), -1;
        nc *= 2;
    }
    uint8_t *np = PyMem_Realloc(*p, nc * width);
    if (!np) return PyErr_NoMemory(), -1;
    *p = np;
    *cap = nc;
    return 0;
}

static int grow(uint8_t **p, size_t *cap, size_t need, size_t width) { return grow_from(p, cap, need, width, 0); }

static size_t col_width(int kind) {
    switch (kind) {
    case COL_BOOL: return 1;
    case COL_CAT: return 4;
    default: return 8;
    }
}

static void col_free(col *c) {
    Py_XDECREF(c->name);
    PyMem_Free(c->data);
    PyMem_Free(c->valid);
    PyMem_Free(c->at);
    for (size_t i = 0; i < c->nobj; i++) Py_DECREF(c->objs[i]);
    PyMem_Free(c->objs);
    Py_XDECREF(c->cats);
    Py_XDECREF(c->catmap);
    memset(c, 0, sizeof *c);
}

/* Make room for row c->n of a column of its kind (and its validity byte). */
static int col_reserve(col *c, int field) {
    if (field && (grow(&c->valid, &c->vcap, c->n + 1, 1) < 0 || grow(&c->at, &c->acap, c->n + 1, 8) < 0))
        return -1;
    if (c->kind == COL_OBJ || c->kind == COL_NONE) return 0;
    return grow_from(&c->data, &c->cap, c->n + 1, col_width(c->kind), c->first);
}

static int col_push_obj(col *c, PyObject *o) { /* steals o */
    if (!o) return -1;
    if (c->nobj == c->ocap) {
        size_t nc = c->ocap ? c->ocap * 2 : c->first ? c->first : 1024;
        PyObject **no = nc <= PY_SSIZE_T_MAX / sizeof *no ? PyMem_Realloc(c->objs, nc * sizeof *no) : NULL;
        if (!no) {
            Py_DECREF(o);
            PyErr_NoMemory();
            return -1;
        }
        c->objs = no;
        c->ocap = nc;
    }
    c->objs[c->nobj++] = o;
    return 0;
}

static int col_push_u64(col *c, uint64_t u) {
    if (grow_from(&c->data, &c->cap, c->n + 1, 8, c->first) < 0) return -1;
    memcpy(c->data + c->n * 8, &u, 8);
    c->n++;
    return 0;
}

static int col_push_i64(col *c, int64_t v) {
    uint64_t u;
    memcpy(&u, &v, sizeof u);
    return col_push_u64(c, u);
}

/* A category code for name (a str), made on first sight. */
static int col_push_cat(col *c, PyObject *name) { /* steals name */
    if (!name) return -1;
    if (!c->cats && (!(c->cats = PyList_New(0)) || !(c->catmap = PyDict_New()))) {
        Py_DECREF(name);
        return -1;
    }
    PyObject *code = PyDict_GetItemWithError(c->catmap, name);
    int32_t k;
    if (code) {
        k = (int32_t)PyLong_AsLong(code);
    } else {
        if (PyErr_Occurred()) {
            Py_DECREF(name);
            return -1;
        }
        Py_ssize_t n = PyList_GET_SIZE(c->cats);
        if (n >= INT32_MAX) {
            Py_DECREF(name);
            PyErr_SetString(PyExc_OverflowError, "too many categories");
            return -1;
        }
        k = (int32_t)n;
        PyObject *kc = PyLong_FromLong(k);
        if (!kc || PyDict_SetItem(c->catmap, name, kc) < 0 || PyList_Append(c->cats, name) < 0) {
            Py_XDECREF(kc);
            Py_DECREF(name);
            return -1;
        }
        Py_DECREF(kc);
    }
    Py_DECREF(name);
    if (grow_from(&c->data, &c->cap, c->n + 1, 4, c->first) < 0) return -1;
    memcpy(c->data + c->n * 4, &k, 4);
    c->n++;
    return 0;
}

/* ---- field columns ---- */

/* One value for a field column. */
typedef struct cell {
    int kind;      /* COL_I64, COL_U64, COL_F64, COL_BOOL, COL_OBJ; COL_NONE: None */
    uint64_t bits; /* I64/U64/F64 bits, BOOL 0/1 */
    PyObject *obj; /* COL_OBJ: owned */
} cell;

/* A typed row of c as an object (None when it holds none). */
static PyObject *typed_obj(const col *c, size_t row) {
    if (c->valid[row] != CELL_VALUE) Py_RETURN_NONE;
    switch (c->kind) {
    case COL_BOOL: return PyBool_FromLong(c->data[row]);
    case COL_F64: {
        double d;
        memcpy(&d, c->data + row * 8, 8);
        return PyFloat_FromDouble(d);
    }
    case COL_U64: {
        uint64_t u;
        memcpy(&u, c->data + row * 8, 8);
        return PyLong_FromUnsignedLongLong(u);
    }
    default: {
        int64_t v;
        memcpy(&v, c->data + row * 8, 8);
        return PyLong_FromLongLong(v);
    }
    }
}

/* A typed column that met a value of another type: all its values as
 * objects (exact), from now on. */
static int demote(col *c) {
    for (size_t i = c->nobj; i < c->n; i++) {
        PyObject *o = c->kind == COL_NONE ? (Py_INCREF(Py_None), Py_None) : typed_obj(c, i);
        if (col_push_obj(c, o) < 0) return -1;
    }
    PyMem_Free(c->data);
    c->data = NULL;
    c->cap = 0;
    c->kind = COL_OBJ;
    return 0;
}

/* The objects of c as a new list (taken from c). */
static PyObject *take_list(col *c) {
    PyObject *l = PyList_New((Py_ssize_t)c->nobj);
    if (!l) return NULL;
    for (size_t i = 0; i < c->nobj; i++) PyList_SET_ITEM(l, (Py_ssize_t)i, c->objs[i]);
    c->nobj = 0;
    return l;
}

static PyObject *cell_obj(cell *v) { /* gives v's reference */
    switch (v->kind) {
    case COL_NONE: Py_RETURN_NONE;
    case COL_OBJ: {
        PyObject *o = v->obj;
        v->obj = NULL;
        return o;
    }
    case COL_BOOL: return PyBool_FromLong(v->bits != 0);
    case COL_F64: {
        double d;
        memcpy(&d, &v->bits, 8);
        return PyFloat_FromDouble(d);
    }
    case COL_U64: return PyLong_FromUnsignedLongLong(v->bits);
    default: {
        int64_t s;
        memcpy(&s, &v->bits, 8);
        return PyLong_FromLongLong(s);
    }
    }
}

/* The row of stored cell i of field column c. */
static size_t cell_row(const col *c, size_t i) {
    int64_t r;
    memcpy(&r, c->at + i * 8, 8);
    return (size_t)r;
}

/* Put v (its object is taken) in row `row` of field column c: a stored
 * cell, the rows without one cost nothing (filled when the frame is made). */
static int col_put(col *c, size_t row, cell *v) {
    if (c->n > 0 && cell_row(c, c->n - 1) == row) return 0; /* a name twice in one event: the first one */
    if (v->kind != COL_NONE && c->kind != v->kind) {
        if (c->kind == COL_NONE) {
            c->kind = v->kind; /* the first value says the type */
            if (c->kind != COL_OBJ) {
                if (grow(&c->data, &c->cap, c->n + 1, col_width(c->kind)) < 0) return -1;
                memset(c->data, 0, c->n * col_width(c->kind));
            } else if (demote(c) < 0) {
                return -1;
            }
        } else if (c->kind != COL_OBJ && demote(c) < 0) {
            return -1;
        }
    }
    if (col_reserve(c, 1) < 0) return -1;
    int64_t at = (int64_t)row;
    memcpy(c->at + c->n * 8, &at, 8);
    c->valid[c->n] = v->kind == COL_NONE ? CELL_NONE : CELL_VALUE;
    switch (c->kind) {
    case COL_NONE: break;
    case COL_OBJ:
        if (col_push_obj(c, cell_obj(v)) < 0) return -1;
        break;
    case COL_BOOL: c->data[c->n] = v->kind == COL_BOOL && v->bits; break;
    default:
        memset(c->data + c->n * 8, 0, 8);
        if (v->kind != COL_NONE) memcpy(c->data + c->n * 8, &v->bits, 8);
        break;
    }
    c->n++;
    return 0;
}

/* The field column named by the str name (made on first sight), or -1
 * with an exception; -2 when columns= leaves it out. */
static Py_ssize_t field_col(frame *fr, PyObject *name) {
    PyObject *ix = PyDict_GetItemWithError(fr->fmap, name);
    if (ix) return PyLong_AsSsize_t(ix);
    if (PyErr_Occurred()) return -1;
    if (fr->only) {
        int in = PySet_Contains(fr->only, name);
        if (in < 0) return -1;
        if (!in) {
            PyObject *no = PyLong_FromLong(-2);
            int rc = no ? PyDict_SetItem(fr->fmap, name, no) : -1;
            Py_XDECREF(no);
            return rc < 0 ? -1 : -2;
        }
    }
    if (fr->nf == fr->capf) {
        size_t nc = fr->capf ? fr->capf * 2 : 64;
        col *nf = PyMem_Realloc(fr->f, nc * sizeof *nf);
        if (!nf) return PyErr_NoMemory(), -1;
        fr->f = nf;
        fr->capf = nc;
    }
    col *c = &fr->f[fr->nf];
    memset(c, 0, sizeof *c);
    Py_INCREF(name);
    c->name = name;
    PyObject *k = PyLong_FromSsize_t((Py_ssize_t)fr->nf);
    if (!k || PyDict_SetItem(fr->fmap, name, k) < 0) {
        Py_XDECREF(k);
        col_free(c);
        return -1;
    }
    Py_DECREF(k);
    return (Py_ssize_t)fr->nf++;
}

/* The field column of a schema's name string, by its address. */
static Py_ssize_t field_col_of(frame *fr, const char *s) {
    size_t mask = fr->nslots - 1;
    size_t h = ((uintptr_t)s >> 3) * (size_t)0x9E3779B97F4A7C15u;
    for (size_t i = h & mask;; i = (i + 1) & mask) {
        if (fr->slots[i].key == s) return (Py_ssize_t)(int32_t)fr->slots[i].col;
        if (!fr->slots[i].key) break;
    }
    PyObject *name = cached_name(&fr->self->names, s);
    if (!name) return -1;
    Py_ssize_t ix = field_col(fr, name);
    Py_DECREF(name);
    if (ix == -1) return -1;
    if ((fr->used + 1) * 2 > fr->nslots) { /* grow, then insert */
        size_t nn = fr->nslots * 2;
        name_slot *ns = PyMem_Calloc(nn, sizeof *ns);
        if (!ns) return PyErr_NoMemory(), -1;
        for (size_t i = 0; i < fr->nslots; i++) {
            if (!fr->slots[i].key) continue;
            size_t hh = ((uintptr_t)fr->slots[i].key >> 3) * (size_t)0x9E3779B97F4A7C15u;
            size_t j = hh & (nn - 1);
            while (ns[j].key) j = (j + 1) & (nn - 1);
            ns[j] = fr->slots[i];
        }
        PyMem_Free(fr->slots);
        fr->slots = ns;
        fr->nslots = nn;
        mask = nn - 1;
    }
    size_t i = h & mask;
    while (fr->slots[i].key) i = (i + 1) & mask;
    fr->slots[i].key = s;
    fr->slots[i].col = (uint32_t)(int32_t)ix;
    fr->used++;
    return ix;
}

/* A Python object as a cell (dict-made fields: the log-file header, a
 * manifest chunk): ints that fit int64 as such, floats, bools. */
static void obj_cell(PyObject *o, cell *v) { /* takes o */
    v->obj = NULL;
    if (o == Py_None) {
        v->kind = COL_NONE;
        Py_DECREF(o);
    } else if (PyBool_Check(o)) {
        v->kind = COL_BOOL;
        v->bits = o == Py_True;
        Py_DECREF(o);
    } else if (PyFloat_CheckExact(o)) {
        double d = PyFloat_AS_DOUBLE(o);
        v->kind = COL_F64;
        memcpy(&v->bits, &d, 8);
        Py_DECREF(o);
    } else if (PyLong_CheckExact(o)) {
        int overflow = 0;
        long long x = PyLong_AsLongLongAndOverflow(o, &overflow);
        if (overflow) {
            v->kind = COL_OBJ;
            v->obj = o;
            return;
        }
        int64_t s = x;
        v->kind = COL_I64;
        memcpy(&v->bits, &s, 8);
        Py_DECREF(o);
    } else {
        v->kind = COL_OBJ;
        v->obj = o;
    }
}

/* A scalar as a cell: numbers typed, the rest as value_obj() makes them. */
static int value_cell(Reader *self, const etw_value *v, cell *out) {
    out->obj = NULL;
    out->bits = 0;
    if (v->kind == ETW_VALUE_SCALAR && v->data && !(v->prop && (v->prop->flags & ETW_PROP_CUSTOM_SIZED))) {
        switch (v->in_type) {
        case ETW_INTYPE_INT8:
        case ETW_INTYPE_UINT8:
        case ETW_INTYPE_INT16:
        case ETW_INTYPE_UINT16:
        case ETW_INTYPE_INT32:
        case ETW_INTYPE_UINT32:
        case ETW_INTYPE_INT64:
        case ETW_INTYPE_UINT64:
        case ETW_INTYPE_HEXINT32:
        case ETW_INTYPE_HEXINT64:
        case ETW_INTYPE_POINTER:
        case ETW_INTYPE_SIZET:
        case ETW_INTYPE_UNICODECHAR:
        case ETW_INTYPE_ANSICHAR: {
            int k = integer_class(v, &out->bits);
            if (k == NUM_I64) return out->kind = COL_I64, 0;
            if (k == NUM_U64) return out->kind = COL_U64, 0;
            if (k == NUM_BOOL) return out->kind = COL_BOOL, out->bits = out->bits != 0, 0;
            break;
        }
        case ETW_INTYPE_DOUBLE:
            if (v->size == 8) {
                for (int i = 7; i >= 0; i--) out->bits = out->bits << 8 | v->data[i];
                out->kind = COL_F64;
                return 0;
            }
            break;
        case ETW_INTYPE_BOOLEAN:
            if (v->size == 4) {
                out->kind = COL_BOOL;
                out->bits = (v->data[0] | v->data[1] | v->data[2] | v->data[3]) != 0;
                return 0;
            }
            break;
        default: break;
        }
    }
    PyObject *o = value_obj(self, v); /* FLOAT comes back a float: typed by obj_cell */
    if (!o) return -1;
    obj_cell(o, out);
    return 0;
}

/* A struct or array the cursor just opened (begin), as a dict or list. */
static PyObject *container_obj(Reader *self, etw_decode_cursor *c, const etw_value *begin) {
    PyObject *stack[ETW_DECODE_MAX_DEPTH + 2];
    int is_list[ETW_DECODE_MAX_DEPTH + 2];
    int top = 0;
    stack[0] = begin->kind == ETW_VALUE_ARRAY_BEGIN ? PyList_New(0) : PyDict_New();
    if (!stack[0]) return NULL;
    is_list[0] = begin->kind == ETW_VALUE_ARRAY_BEGIN;
    etw_value v;
    while (etw_decode_next(c, &v) == ETW_OK) {
        if (v.kind == ETW_VALUE_STRUCT_END || v.kind == ETW_VALUE_ARRAY_END) {
            if (top == 0) break;
            top--;
            continue;
        }
        if (payload_put(self, stack, is_list, &top, (int)(sizeof stack / sizeof stack[0]), &v) < 0) goto fail;
    }
    return stack[0];
fail:
    Py_DECREF(stack[0]);
    return NULL;
}

/* The payload of ev (schema s) into the field columns at row fr->rows;
 * *trailing: the bytes the schema left. */
static int fields_to_cols(frame *fr, const etw_schema *s, const etw_event *ev, uint32_t *trailing) {
    Reader *self = fr->self;
    etw_decode_cursor c;
    etw_value v;
    if (etw_decoder_begin(self->dec, ev, s, &c) != ETW_OK) return 0;
    while (etw_decode_next(&c, &v) == ETW_OK) {
        if (v.kind == ETW_VALUE_STRUCT_END || v.kind == ETW_VALUE_ARRAY_END) continue; /* not at the top */
        Py_ssize_t ix = field_col_of(fr, v.name ? v.name : "");
        if (ix == -1) return -1;
        cell cl = {COL_NONE, 0, NULL};
        if (v.kind == ETW_VALUE_STRUCT_BEGIN || v.kind == ETW_VALUE_ARRAY_BEGIN) {
            PyObject *o = container_obj(self, &c, &v); /* consumes up to its end */
            if (!o) return -1;
            cl.kind = COL_OBJ;
            cl.obj = o;
        } else if (ix >= 0 && value_cell(self, &v, &cl) < 0) {
            return -1;
        }
        if (ix >= 0 && col_put(&fr->f[ix], fr->rows, &cl) < 0) {
            Py_XDECREF(cl.obj);
            return -1;
        }
        Py_XDECREF(cl.obj);
        char drive[ETW_DRIVE_PATH_MAX];
        size_t dn;
        if (etw_decoder_value_drive_path(self->dec, &v, drive, sizeof drive, &dn)) {
            /* NAME_drive after an NT path, as the JSON writer does */
            PyObject *k = PyUnicode_FromFormat("%s_drive", v.name ? v.name : "");
            if (!k) return -1;
            Py_ssize_t dx = field_col(fr, k);
            Py_DECREF(k);
            if (dx == -1) return -1;
            if (dx >= 0) {
                cell dc = {COL_OBJ, 0, PyUnicode_DecodeUTF8(drive, (Py_ssize_t)dn, "replace")};
                if (!dc.obj) return -1;
                int rc = col_put(&fr->f[dx], fr->rows, &dc);
                Py_XDECREF(dc.obj);
                if (rc < 0) return -1;
            }
        }
    }
    *trailing = etw_decode_remaining(&c);
    return 0;
}

/* Room for n values of a "fields" row. */
static int row_reserve(frame *fr, size_t n) {
    if (n <= fr->rcap) return 0;
    size_t nc = fr->rcap ? fr->rcap * 2 : 64;
    while (nc < n) nc *= 2;
    const char **rn = PyMem_Realloc(fr->rn, nc * sizeof *rn);
    if (rn) fr->rn = rn;
    uint8_t *rd = rn ? PyMem_Realloc(fr->rdrive, nc) : NULL;
    if (rd) fr->rdrive = rd;
    cell *rv = rd ? PyMem_Realloc(fr->rv, nc * sizeof *rv) : NULL;
    if (!rv) return PyErr_NoMemory(), -1;
    fr->rv = rv;
    fr->rcap = nc;
    return 0;
}

static int fv_kind(int col_kind) {
    switch (col_kind) {
    case COL_I64: return FV_I64;
    case COL_U64: return FV_U64;
    case COL_F64: return FV_F64;
    case COL_BOOL: return FV_BOOL;
    case COL_OBJ: return FV_OBJ;
    case COL_IARR: return FV_IARR;
    case COL_UARR: return FV_UARR;
    default: return FV_NONE;
    }
}

/* The array the cursor just opened as one bytes object of 8-byte values
 * when its elements are all integers of one class (integer_class: int64
 * or uint64), its end consumed: 1 (out filled); else 0 with the cursor
 * where it was, for container_obj(); -1 on an error. */
static int int_array_cell(frame *fr, etw_decode_cursor *c, cell *out) {
    etw_decode_cursor save = *c;
    size_t n = 0;
    int cls = -1;
    etw_value e;
    while (etw_decode_next(c, &e) == ETW_OK) {
        if (e.kind == ETW_VALUE_ARRAY_END) {
            out->obj = PyBytes_FromStringAndSize(n ? (const char *)fr->abuf : "", (Py_ssize_t)(n * 8));
            if (!out->obj) return -1;
            out->kind = cls == NUM_U64 ? COL_UARR : COL_IARR;
            return 1;
        }
        if (e.kind != ETW_VALUE_SCALAR || !e.data || (e.prop && (e.prop->flags & ETW_PROP_CUSTOM_SIZED)))
            break;
        switch (e.in_type) {
        case ETW_INTYPE_INT8:
        case ETW_INTYPE_UINT8:
        case ETW_INTYPE_INT16:
        case ETW_INTYPE_UINT16:
        case ETW_INTYPE_INT32:
        case ETW_INTYPE_UINT32:
        case ETW_INTYPE_INT64:
        case ETW_INTYPE_UINT64:
        case ETW_INTYPE_HEXINT32:
        case ETW_INTYPE_HEXINT64:
        case ETW_INTYPE_POINTER:
        case ETW_INTYPE_SIZET: break;
        default: goto rewind;
        }
        uint64_t bits = 0;
        int k = integer_class(&e, &bits);
        if ((k != NUM_I64 && k != NUM_U64) || (cls >= 0 && k != cls)) break;
        cls = k;
        if (grow(&fr->abuf, &fr->acap, n + 1, 8) < 0) return -1;
        memcpy(fr->abuf + n * 8, &bits, 8);
        n++;
    }
rewind:
    *c = save;
    return 0;
}

#define STRING_CELL_MAX 256 /* bytes: longer texts are not looked up */

/* A short string value as the str value_obj() makes, one object for the
 * same bytes (a trace repeats its names and paths): 1 (out filled), 0 not
 * such a value, -1 on an error. */
static int string_cell(frame *fr, const etw_value *v, cell *out) {
    if (v->kind != ETW_VALUE_SCALAR || !v->data || v->size > STRING_CELL_MAX ||
        (v->prop && (v->prop->flags & ETW_PROP_CUSTOM_SIZED)))
        return 0;
    int wide;
    switch (v->in_type) {
    case ETW_INTYPE_UNICODESTRING:
    case ETW_INTYPE_MANIFEST_COUNTEDSTRING:
    case ETW_INTYPE_COUNTEDSTRING:
    case ETW_INTYPE_REVERSEDCOUNTEDSTRING:
    case ETW_INTYPE_NONNULLTERMINATEDSTRING: wide = 1; break;
    case ETW_INTYPE_ANSISTRING:
    case ETW_INTYPE_MANIFEST_COUNTEDANSISTRING:
    case ETW_INTYPE_COUNTEDANSISTRING:
    case ETW_INTYPE_REVERSEDCOUNTEDANSISTRING:
    case ETW_INTYPE_NONNULLTERMINATEDANSISTRING:
        if (v->out_type == ETW_OUTTYPE_UTF8 || v->out_type == ETW_OUTTYPE_XML || v->out_type == ETW_OUTTYPE_JSON)
            return 0;
        wide = 0;
        break;
    default: return 0;
    }
    str_cache *sc = wide ? &fr->wide : &fr->narrow;
    uint64_t h = fnv1a(v->data, v->size);
    PyObject *o = str_cache_get(sc, v->data, v->size, h);
    if (!o) {
        o = wide ? utf16_str(v->data, v->size) : ansi_str(v->data, v->size);
        if (!o) return -1;
        str_cache_put(sc, v->data, v->size, h, o);
    }
    out->kind = COL_OBJ;
    out->obj = o;
    return 1;
}

/* The payload of ev (schema s, or NULL: none) as one etwdecode.Fields: the
 * keys and values fields_obj() gives the event dict (NAME_drive after an
 * NT path; a name met twice: its first place, its last value), numbers
 * kept unboxed; *trailing: the bytes the schema left. */
static PyObject *fields_row(frame *fr, const etw_schema *s, const etw_event *ev, uint32_t *trailing) {
    Reader *self = fr->self;
    etw_decode_cursor c;
    etw_value v;
    size_t n = 0;
    PyObject *out = NULL;
    if (s && etw_decoder_begin(self->dec, ev, s, &c) == ETW_OK) {
        while (etw_decode_next(&c, &v) == ETW_OK) {
            if (v.kind == ETW_VALUE_STRUCT_END || v.kind == ETW_VALUE_ARRAY_END) continue; /* not at the top */
            if (row_reserve(fr, n + 2) < 0) goto fail;
            cell *cl = &fr->rv[n];
            cl->kind = COL_NONE;
            cl->bits = 0;
            cl->obj = NULL;
            fr->rn[n] = v.name ? v.name : "";
            fr->rdrive[n] = 0;
            n++;
            int packed = 0;
            if (v.kind == ETW_VALUE_ARRAY_BEGIN && (packed = int_array_cell(fr, &c, cl)) < 0) goto fail;
            if (!packed && (packed = string_cell(fr, &v, cl)) < 0) goto fail;
            if (packed) {
            } else if (v.kind == ETW_VALUE_STRUCT_BEGIN || v.kind == ETW_VALUE_ARRAY_BEGIN) {
                if (!(cl->obj = container_obj(self, &c, &v))) goto fail; /* consumes up to its end */
                cl->kind = COL_OBJ;
            } else if (value_cell(self, &v, cl) < 0) {
                goto fail;
            }
            char drive[ETW_DRIVE_PATH_MAX];
            size_t dn;
            if (etw_decoder_value_drive_path(self->dec, &v, drive, sizeof drive, &dn)) {
                cell *dc = &fr->rv[n];
                dc->kind = COL_OBJ;
                dc->bits = 0;
                fr->rn[n] = fr->rn[n - 1];
                fr->rdrive[n] = 1;
                n++;
                if (!(dc->obj = PyUnicode_DecodeUTF8(drive, (Py_ssize_t)dn, "replace"))) goto fail;
            }
        }
        *trailing = etw_decode_remaining(&c);
    }
    const fields_layout *l = fields_layout_get(&fr->layouts, self, fr->rn, fr->rdrive, n);
    if (!l || !(out = fields_alloc(l->index, l->nkeys))) goto fail;
    for (size_t i = 0; i < n; i++) {
        fields_put(out, l->slots[i], fv_kind(fr->rv[i].kind), fr->rv[i].bits, fr->rv[i].obj);
        fr->rv[i].obj = NULL;
    }
    fields_done(out);
    return out;
fail:
    for (size_t i = 0; i < n; i++) Py_XDECREF(fr->rv[i].obj);
    return NULL;
}

/* A dict of fields (the log-file header, a manifest chunk) into columns. */
static int dict_to_cols(frame *fr, PyObject *d) {
    PyObject *k, *val;
    Py_ssize_t pos = 0;
    while (PyDict_Next(d, &pos, &k, &val)) {
        Py_ssize_t ix = field_col(fr, k);
        if (ix == -1) return -1;
        if (ix < 0) continue;
        cell cl;
        Py_INCREF(val);
        obj_cell(val, &cl);
        int rc = col_put(&fr->f[ix], fr->rows, &cl);
        Py_XDECREF(cl.obj);
        if (rc < 0) return -1;
    }
    return 0;
}

/* expand=None met a second kind: the rows so far (all of one kind) get
 * their fields back as dicts, in column order, and the field columns go. */
static int fold_fields(frame *fr) {
    col *fc = &fr->h[H_FIELDS];
    size_t *pos = PyMem_Calloc(fr->nf ? fr->nf : 1, sizeof *pos); /* next stored cell of each column */
    if (!pos) return PyErr_NoMemory(), -1;
    for (size_t r = 0; r < fr->rows; r++) {
        PyObject *d = PyDict_New();
        if (!d) goto fail;
        for (size_t i = 0; i < fr->nf; i++) {
            col *c = &fr->f[i];
            if (pos[i] >= c->n || cell_row(c, pos[i]) != r) continue;
            size_t k = pos[i]++;
            PyObject *o;
            if (c->kind == COL_OBJ) {
                o = c->objs[k];
                Py_INCREF(o);
            } else if (c->kind == COL_NONE) {
                o = (Py_INCREF(Py_None), Py_None);
            } else {
                o = typed_obj(c, k);
            }
            if (!o || PyDict_SetItem(d, c->name, o) < 0) {
                Py_XDECREF(o);
                Py_DECREF(d);
                goto fail;
            }
            Py_DECREF(o);
        }
        PyObject *f = fields_from_dict(d, &fr->last_index);
        Py_DECREF(d);
        if (col_push_obj(fc, f) < 0) goto fail;
        fc->n++;
    }
    PyMem_Free(pos);
    for (size_t i = 0; i < fr->nf; i++) col_free(&fr->f[i]);
    fr->nf = 0;
    PyDict_Clear(fr->fmap);
    memset(fr->slots, 0, fr->nslots * sizeof *fr->slots);
    fr->used = 0;
    fr->expand = 0;
    fr->decide = 0;
    return 0;
fail:
    PyMem_Free(pos);
    return -1;
}

/* ---- one event ---- */

static int put_obj(frame *fr, int h, PyObject *o) { /* steals o; NULL: error */
    if (!fr->want[h]) {
        Py_XDECREF(o);
        return 0;
    }
    col *c = &fr->h[h];
    if (c->sparse) {
        if (!o || grow(&c->data, &c->cap, c->n + 1, 8) < 0) {
            Py_XDECREF(o);
            return -1;
        }
        int64_t row = (int64_t)fr->rows;
        memcpy(c->data + c->n * 8, &row, 8);
    }
    if (col_push_obj(c, o) < 0) return -1;
    c->n++;
    return 0;
}

static int put_none(frame *fr, int h) {
    if (!fr->want[h] || fr->h[h].sparse) return 0;
    Py_INCREF(Py_None);
    return put_obj(fr, h, Py_None);
}

static int put_i64(frame *fr, int h, int64_t v) { return fr->want[h] ? col_push_i64(&fr->h[h], v) : 0; }

static int64_t id_i64(uint32_t v) { return v == ETW_NO_ID ? -1 : (int64_t)v; }

/* time_ns() as int64 nanoseconds; NaT (INT64_MIN) where it gives None or
 * the nanoseconds do not fit */
static int64_t time_i64(int64_t ft) {
    if (ft < 0 || ft > ETW_FILETIME_MAX) return INT64_MIN;
    int64_t d = ft - FILETIME_UNIX_EPOCH;
    if (d > INT64_MAX / 100 || d <= INT64_MIN / 100) return INT64_MIN;
    return d * 100;
}

static int frame_event(frame *fr, const etw_event *ev, const etw_label *lab) {
    Reader *self = fr->self;
    if (names_sync(self)) { /* TraceLogging schemas dropped: their names' addresses may come back */
        if (fr->slots) memset(fr->slots, 0, fr->nslots * sizeof *fr->slots);
        fr->used = 0;
        fields_layouts_clear(&fr->layouts);
    }
    const etw_schema *schema = lab->schema;
    const char *error = lab->error;
    uint32_t pid, tid;
    etw_decoder_event_ids(self->dec, ev, schema, &pid, &tid);
    int32_t pcode = -1, ecode = -1;
    if (put_i64(fr, H_TIME, time_i64(ev->timestamp)) < 0) return -1;
    if (fr->want[H_PROVIDER]) {
        if (col_push_cat(&fr->h[H_PROVIDER], label_name(self, lab->provider, lab->provider_len,
                                                        schema ? schema->provider_name : NULL)) < 0)
            return -1;
        memcpy(&pcode, fr->h[H_PROVIDER].data + (fr->h[H_PROVIDER].n - 1) * 4, 4);
    }
    if (fr->want[H_PROVIDER_GUID] && put_obj(fr, H_PROVIDER_GUID, guid_str(self, &ev->provider)) < 0) return -1;
    if (fr->want[H_EVENT]) {
        if (col_push_cat(&fr->h[H_EVENT],
                         label_name(self, lab->event, lab->event_len, schema ? schema->event_name : NULL)) < 0)
            return -1;
        memcpy(&ecode, fr->h[H_EVENT].data + (fr->h[H_EVENT].n - 1) * 4, 4);
    }
    if (put_i64(fr, H_ID, ev->id) < 0 || put_i64(fr, H_VERSION, ev->version) < 0 ||
        put_i64(fr, H_LEVEL, ev->level) < 0 || put_i64(fr, H_OPCODE, ev->opcode) < 0 ||
        put_i64(fr, H_TASK, ev->task) < 0 || put_i64(fr, H_CHANNEL, ev->channel) < 0 ||
        (fr->want[H_KEYWORDS] && col_push_u64(&fr->h[H_KEYWORDS], ev->keywords) < 0) ||
        put_i64(fr, H_PID, id_i64(pid)) < 0 || put_i64(fr, H_TID, id_i64(tid)) < 0 ||
        put_i64(fr, H_CPU, ev->cpu) < 0 || put_i64(fr, H_DATA_LEN, ev->user_data_len) < 0)
        return -1;
    if (fr->want[H_PROCESS]) {
        const char *pname;
        size_t pname_len;
        if (etw_decoder_process_name(self->dec, ev, schema, pid, &pname, &pname_len)) {
            if (put_obj(fr, H_PROCESS, utf8_cached(self, pname, pname_len)) < 0) return -1;
        } else if (put_none(fr, H_PROCESS) < 0) {
            return -1;
        }
    }
    if (ev->has_activity_id && !etw_guid_is_zero(&ev->activity_id)) {
        if (put_obj(fr, H_ACTIVITY_ID, fr->want[H_ACTIVITY_ID] ? guid_str(self, &ev->activity_id) : NULL) < 0 &&
            fr->want[H_ACTIVITY_ID])
            return -1;
    } else if (put_none(fr, H_ACTIVITY_ID) < 0) {
        return -1;
    }
    /* the extended items: through a dict, as the event dict has them */
    PyObject *ext = NULL;
    int want_ext = 0;
    for (int h = H_RELATED_ACTIVITY_ID; h <= H_MORE_STACK_KEYS; h++) want_ext |= fr->want[h];
    if (want_ext && (ev->ext_count || (self->prof && self->seq))) {
        if (!(ext = PyDict_New()) || (ev->ext_count && ext_items(self, ext, ev) < 0)) {
            Py_XDECREF(ext);
            return -1;
        }
        if (self->prof && self->seq) {
            uint32_t node = etw_profile_event_stack(self->prof, self->seq - 1);
            if (node != ETW_STACK_NONE &&
                set_item(ext, K_STACK, profile_stack_list(self->frame_str, self->nframe_str, self->prof, node)) < 0) {
                Py_DECREF(ext);
                return -1;
            }
        }
    }
    for (int i = 0; i < (int)(sizeof h_ext_keys / sizeof *h_ext_keys); i++) {
        int h = H_RELATED_ACTIVITY_ID + i;
        PyObject *o = ext ? PyDict_GetItem(ext, g_keys[h_ext_keys[i]]) : NULL;
        if (o) Py_INCREF(o);
        if (o ? put_obj(fr, h, o) < 0 : put_none(fr, h) < 0) {
            Py_XDECREF(ext);
            return -1;
        }
    }
    Py_XDECREF(ext);
    /* the fields */
    if (fr->decide && fr->rows > 0 && (pcode != fr->kind_p || ecode != fr->kind_e) && fold_fields(fr) < 0)
        return -1;
    if (fr->rows == 0) {
        fr->kind_p = pcode;
        fr->kind_e = ecode;
    }
    int decoded = 0;
    if (ev->is_logfile_header || (schema && etw_decoder_is_manifest_event(ev))) {
        PyObject *d = ev->is_logfile_header ? logfile_obj(self) : manifest_obj(ev);
        if (d) {
            decoded = 1;
            if (fr->expand) {
                int rc = dict_to_cols(fr, d);
                Py_DECREF(d);
                if (rc < 0) return -1;
            } else {
                PyObject *f = fr->want[H_FIELDS] ? fields_from_dict(d, &fr->last_index) : NULL;
                Py_DECREF(d);
                if (put_obj(fr, H_FIELDS, f) < 0 && fr->want[H_FIELDS]) return -1;
            }
        } else if (!ev->is_logfile_header) {
            if (PyErr_Occurred()) return -1;
        } else {
            return -1;
        }
    }
    if (!decoded && schema) {
        uint32_t trailing = 0;
        if (fr->expand) {
            if (fields_to_cols(fr, schema, ev, &trailing) < 0) return -1;
        } else if (fr->want[H_FIELDS]) {
            if (put_obj(fr, H_FIELDS, fields_row(fr, schema, ev, &trailing)) < 0) return -1;
        } else if (fr->want[H_ERROR] && !error) {
            /* the trailing bytes say whether the payload fits the schema */
            etw_decode_cursor c;
            etw_value v;
            if (etw_decoder_begin(self->dec, ev, schema, &c) == ETW_OK) {
                while (etw_decode_next(&c, &v) == ETW_OK) {
                }
                trailing = etw_decode_remaining(&c);
            }
        }
        if (!error) error = etw_decoder_payload_problem(self->dec, ev, schema, trailing);
        decoded = 1;
    } else if (!decoded && !fr->expand && fr->want[H_FIELDS]) {
        uint32_t none = 0;
        if (put_obj(fr, H_FIELDS, fields_row(fr, NULL, ev, &none)) < 0) return -1;
    }
    if (error) {
        if (put_obj(fr, H_ERROR, fr->want[H_ERROR] ? PyUnicode_DecodeUTF8(error, (Py_ssize_t)strlen(error), "replace")
                                                   : NULL) < 0 && fr->want[H_ERROR])
            return -1;
    } else if (put_none(fr, H_ERROR) < 0) {
        return -1;
    }
    if ((self->raw_always || !decoded || error) && (ev->user_data_len || error)) {
        if (put_obj(fr, H_RAW, fr->want[H_RAW] ? PyBytes_FromStringAndSize((const char *)ev->user_data,
                                                                            ev->user_data_len)
                                               : NULL) < 0 && fr->want[H_RAW])
            return -1;
    } else if (put_none(fr, H_RAW) < 0) {
        return -1;
    }
    if (fr->want[H_FILE]) {
        size_t f = etw_multi_current(self->holder);
        PyObject *name = f < self->nfiles ? self->file_names[f] : Py_None;
        Py_INCREF(name);
        if (col_push_cat(&fr->h[H_FILE], name) < 0) return -1;
    }
    fr->rows++;
    return 0;
}

/* ---- the result ---- */

/* A column buffer handed to Python as it is (no copy): a read-only
 * buffer-protocol object that owns the PyMem block (np.frombuffer keeps
 * it alive). */
typedef struct FrameBuf {
    PyObject_HEAD
    uint8_t *p;
    Py_ssize_t n;
} FrameBuf;

static void FrameBuf_dealloc(FrameBuf *b) {
    PyMem_Free(b->p);
    PyObject_Free(b);
}

static int FrameBuf_getbuffer(FrameBuf *b, Py_buffer *view, int flags) {
    static uint8_t none[1];
    return PyBuffer_FillInfo(view, (PyObject *)b, b->p ? b->p : none, b->n, 1, flags);
}

static Py_ssize_t FrameBuf_length(FrameBuf *b) { return b->n; }

static PyBufferProcs FrameBuf_as_buffer = {.bf_getbuffer = (getbufferproc)FrameBuf_getbuffer};
static PySequenceMethods FrameBuf_as_sequence = {.sq_length = (lenfunc)FrameBuf_length};

PyTypeObject FrameBufType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "etwdecode._native._FrameBuf",
    .tp_basicsize = sizeof(FrameBuf),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "A to_pandas column's bytes (read-only buffer).",
    .tp_dealloc = (destructor)FrameBuf_dealloc,
    .tp_as_buffer = &FrameBuf_as_buffer,
    .tp_as_sequence = &FrameBuf_as_sequence,
};

/* The first n bytes of *p as a FrameBuf that takes the block (*p NULL
 * after), its room past them given back. */
static PyObject *bytes_of(uint8_t **p, size_t *cap, size_t n) {
    FrameBuf *b = PyObject_New(FrameBuf, &FrameBufType);
    if (!b) return NULL;
    if (*p && n) {
        uint8_t *fit = PyMem_Realloc(*p, n);
        if (fit) *p = fit;
    }
    b->p = *p;
    b->n = (Py_ssize_t)n;
    *p = NULL;
    *cap = 0;
    return (PyObject *)b;
}

static const char *kind_name(int k) {
    switch (k) {
    case COL_I64: return "i64";
    case COL_U64: return "u64";
    case COL_F64: return "f64";
    case COL_BOOL: return "bool";
    case COL_TIME: return "time";
    case COL_CAT: return "cat";
    case COL_NONE: return "none";
    default: return "obj";
    }
}

/* (name, kind, values, validity or None, categories or None); a sparse
 * column: (name, "sparse", objects, their rows, None); a field column:
 * (name, kind, stored values, their validity, None, their rows) */
static PyObject *col_spec(col *c, PyObject *name, int field) {
    if (c->sparse) {
        PyObject *objs = take_list(c);
        PyObject *at = objs ? bytes_of(&c->data, &c->cap, c->n * 8) : NULL;
        if (!at) {
            Py_XDECREF(objs);
            return NULL;
        }
        return Py_BuildValue("(OsNNO)", name, "sparse", objs, at, Py_None);
    }
    PyObject *vals;
    if (c->kind == COL_OBJ) {
        vals = take_list(c);
    } else if (c->kind == COL_NONE) {
        Py_INCREF(Py_None);
        vals = Py_None;
    } else {
        vals = bytes_of(&c->data, &c->cap, c->n * col_width(c->kind));
    }
    if (!vals) return NULL;
    PyObject *valid = field && c->valid ? bytes_of(&c->valid, &c->vcap, c->n) : (Py_INCREF(Py_None), Py_None);
    PyObject *cats = c->cats ? c->cats : Py_None;
    if (!valid) return Py_DECREF(vals), NULL;
    if (field) {
        PyObject *at = bytes_of(&c->at, &c->acap, c->n * 8);
        if (!at) return Py_DECREF(vals), Py_DECREF(valid), NULL;
        return Py_BuildValue("(OsNNON)", name, kind_name(c->kind), vals, valid, cats, at);
    }
    return Py_BuildValue("(OsNNO)", name, kind_name(c->kind), vals, valid, cats);
}

static void frame_free(frame *fr) {
    for (int i = 0; i < H_COUNT_; i++) col_free(&fr->h[i]);
    for (size_t i = 0; i < fr->nf; i++) col_free(&fr->f[i]);
    PyMem_Free(fr->f);
    PyMem_Free(fr->slots);
    Py_XDECREF(fr->fmap);
    Py_XDECREF(fr->only);
    fields_layouts_clear(&fr->layouts);
    PyMem_Free(fr->rn);
    PyMem_Free(fr->rdrive);
    PyMem_Free(fr->rv);
    PyMem_Free(fr->abuf);
    str_cache_clear(&fr->wide);
    str_cache_clear(&fr->narrow);
    Py_XDECREF(fr->last_index);
}

/* A guess at the rows a frame will have, to size the header columns at
 * once: the traces' buffer bytes (the header's BuffersWritten times
 * BufferSize) at 64 bytes an event, over the events real traces have
 * (130 to 190 bytes an event), at most 4M rows and max_events; room never
 * written is never touched (and is given back at the end). */
static size_t frame_rows_hint(Reader *self) {
    uint64_t bytes = 0;
    size_t n = self->several ? self->nfiles : 1;
    for (size_t i = 0; i < n; i++) {
        const etw_reader *r = self->several ? etw_multi_reader(self->holder, i) : self->r;
        const etw_logfile_header *h = r ? etw_reader_logfile(r) : NULL;
        if (h) bytes += (uint64_t)h->buffers_written * h->buffer_size;
    }
    uint64_t rows = bytes / 64;
    if (self->max_events) {
        uint64_t left = self->max_events > self->returned ? self->max_events - self->returned : 0;
        if (left < rows) rows = left;
    }
    if (rows > (UINT64_C(1) << 22)) rows = UINT64_C(1) << 22;
    return rows < 1024 ? 1024 : (size_t)rows;
}

/* _frame(columns, expand): read the remaining events (selection and
 * options applied) into columns: {"header": [spec...], "fields": [spec...],
 * "expanded": bool}, spec = (name, kind, values, validity, categories). */
PyObject *Reader_frame(Reader *self, PyObject *args) {
    PyObject *columns = Py_None, *expand = Py_None;
    if (!PyArg_ParseTuple(args, "|OO", &columns, &expand)) return NULL;
    if (!self->r || !self->dec) return raise_status(self, ETW_E_INVALID_ARG, "_frame needs a decoding reader");
    frame fr;
    memset(&fr, 0, sizeof fr);
    fr.self = self;
    PyObject *out = NULL;
    if (!(fr.fmap = PyDict_New())) goto done;
    fr.nslots = 256;
    if (!(fr.slots = PyMem_Calloc(fr.nslots, sizeof *fr.slots))) {
        PyErr_NoMemory();
        goto done;
    }
    for (int i = 0; i < H_COUNT_; i++) {
        fr.h[i].kind = h_kinds[i];
        fr.h[i].sparse = h_kinds[i] == COL_OBJ && i != H_PROVIDER_GUID && i != H_FIELDS;
        fr.want[i] = i != H_FILE || self->several;
    }
    size_t hint = frame_rows_hint(self);
    for (int i = 0; i < H_COUNT_; i++)
        if (!fr.h[i].sparse) fr.h[i].first = hint;
    if (expand == Py_None) {
        fr.expand = fr.decide = 1;
    } else {
        int e = PyObject_IsTrue(expand);
        if (e < 0) goto done;
        fr.expand = e;
    }
    if (columns != Py_None) {
        /* header keys by name; other names are fields ("fields.X": the
         * field X where a header key has that name) */
        fr.only = PySet_New(NULL);
        if (!fr.only) goto done;
        for (int i = 0; i < H_COUNT_; i++) fr.want[i] = 0;
        PyObject *it = PyObject_GetIter(columns), *name;
        if (!it) goto done;
        int any_field = 0;
        while ((name = PyIter_Next(it)) != NULL) {
            if (!PyUnicode_Check(name)) {
                Py_DECREF(name);
                Py_DECREF(it);
                PyErr_SetString(PyExc_TypeError, "columns: names (str)");
                goto done;
            }
            int h = -1;
            for (int i = 0; i < H_COUNT_; i++)
                if (PyUnicode_CompareWithASCIIString(name, h_names[i]) == 0) h = i;
            int rc = 0;
            if (h == H_FILE && !self->several) h = -2; /* one trace: no file column */
            if (h >= 0) {
                fr.want[h] = 1;
            } else if (h == -1) {
                const char *u = PyUnicode_AsUTF8(name);
                PyObject *bare = !u ? NULL
                                 : !strncmp(u, "fields.", 7) ? PyUnicode_Substring(name, 7, PY_SSIZE_T_MAX)
                                                             : (Py_INCREF(name), name);
                rc = bare ? PySet_Add(fr.only, bare) : -1;
                Py_XDECREF(bare);
                any_field = 1;
            }
            Py_DECREF(name);
            if (rc < 0) {
                Py_DECREF(it);
                goto done;
            }
        }
        Py_DECREF(it);
        if (PyErr_Occurred()) goto done;
        /* named fields: field columns; "fields" alone: the dicts */
        fr.expand = any_field;
        fr.decide = 0;
        if (any_field) fr.want[H_FIELDS] = 0;
    }
    if (fr.expand) fr.want[H_FIELDS] = fr.decide; /* filled if expand=None folds */
    etw_event ev;
    etw_status s = ETW_OK;
    for (;;) {
        if (self->max_events && self->returned >= self->max_events) break;
        s = reader_next(self, &ev);
        if (s != ETW_OK) break;
        self->seq++;
        int m = select_event(self, &ev);
        if (m < 0) {
            PyErr_NoMemory();
            goto done;
        }
        if (!m || (self->no_manifest_events && etw_decoder_is_manifest_event(&ev))) continue;
        if (frame_event(&fr, &ev, &self->lab) < 0) goto done;
        self->returned++;
        if (self->ndiags && flush_diags(self) < 0) goto done;
    }
    self->finished = 1;
    etw_decoder_finish(self->dec);
    if (flush_diags(self) < 0) goto done;
    if (s != ETW_OK && s != ETW_END) {
        raise_status(self, s, "reading the trace");
        goto done;
    }
    int expanded = fr.expand;
    PyObject *hl = PyList_New(0), *fl = PyList_New(0);
    for (int i = 0; hl && fl && i < H_COUNT_; i++) {
        if (!fr.want[i] || (i == H_FIELDS && expanded)) continue;
        PyObject *name = PyUnicode_FromString(h_names[i]);
        PyObject *spec = name ? col_spec(&fr.h[i], name, 0) : NULL;
        Py_XDECREF(name);
        if (!spec || PyList_Append(hl, spec) < 0) Py_CLEAR(hl);
        Py_XDECREF(spec);
    }
    for (size_t i = 0; hl && fl && expanded && i < fr.nf; i++) {
        PyObject *spec = col_spec(&fr.f[i], fr.f[i].name, 1);
        if (!spec || PyList_Append(fl, spec) < 0) Py_CLEAR(fl);
        Py_XDECREF(spec);
    }
    if (hl && fl)
        out = Py_BuildValue("{s:O,s:O,s:n}", "header", hl, "fields", fl, "rows", (Py_ssize_t)fr.rows);
    Py_XDECREF(hl);
    Py_XDECREF(fl);
done:
    frame_free(&fr);
    return out;
}
