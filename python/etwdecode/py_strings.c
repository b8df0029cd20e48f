/* py_strings.c - string caches (names by address, values by content) and
 * one JSON scalar read back as a Python object. */
#include "py_native.h"

/* ------------------------------------------------------------------------ */
/* string caches                                                            */

/* Pointer-keyed: names that live as long as the decoder (schema and
 * property names). Content-keyed: short strings seen again and again (GUID
 * strings, provider names from TraceLogging traits). Open addressing,
 * grown at half load. */


static size_t ptr_hash(const void *p) {
    uint64_t x = (uint64_t)(uintptr_t)p;
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdull;
    x ^= x >> 29;
    return (size_t)x;
}

void ptr_cache_clear(ptr_cache *c) {
    for (size_t i = 0; i < c->cap; i++) Py_XDECREF(c->slots[i].value);
    PyMem_Free(c->slots);
    c->slots = NULL;
    c->cap = c->used = 0;
}

PyObject **ptr_cache_slot(ptr_cache *c, const void *key) {
    if ((c->used + 1) * 2 > c->cap) {
        size_t nc = c->cap ? c->cap * 2 : 256;
        ptr_slot *ns = PyMem_Calloc(nc, sizeof *ns);
        if (!ns) return NULL;
        for (size_t i = 0; i < c->cap; i++) {
            if (!c->slots[i].key) continue;
            size_t j = ptr_hash(c->slots[i].key) & (nc - 1);
            while (ns[j].key) j = (j + 1) & (nc - 1);
            ns[j] = c->slots[i];
        }
        PyMem_Free(c->slots);
        c->slots = ns;
        c->cap = nc;
    }
    size_t j = ptr_hash(key) & (c->cap - 1);
    while (c->slots[j].key && c->slots[j].key != key) j = (j + 1) & (c->cap - 1);
    if (!c->slots[j].key) {
        c->slots[j].key = key;
        c->used++;
    }
    return &c->slots[j].value;
}

/* A C string (UTF-8, from the schema) as a str, cached by its address. */
int names_sync(Reader *self) {
    uint64_t e = self->dec ? etw_decoder_stats_get(self->dec)->tl_evicted : 0;
    if (e == self->names_epoch) return 0;
    self->names_epoch = e;
    ptr_cache_clear(&self->names);
    return 1;
}

PyObject *cached_name(ptr_cache *c, const char *s) {
    PyObject **slot = ptr_cache_slot(c, s);
    if (!slot) return PyErr_NoMemory();
    if (!*slot) {
        *slot = PyUnicode_DecodeUTF8(s, (Py_ssize_t)strlen(s), "replace");
        if (!*slot) return NULL;
        PyUnicode_InternInPlace(slot);
    }
    Py_INCREF(*slot);
    return *slot;
}



/* Bound on the content cache: past it, it is emptied (bounded memory for
 * hostile traces with ever-new names). */

uint64_t fnv1a(const void *p, size_t n) {
    const uint8_t *b = p;
    uint64_t h = 0xcbf29ce484222325ull;
    for (size_t i = 0; i < n; i++) h = (h ^ b[i]) * 0x100000001b3ull;
    return h | 1;
}

void str_cache_clear(str_cache *c) {
    for (size_t i = 0; i < c->cap; i++) {
        Py_XDECREF(c->slots[i].bytes);
        Py_XDECREF(c->slots[i].value);
    }
    PyMem_Free(c->slots);
    c->slots = NULL;
    c->cap = c->used = 0;
}

/* The cached value for key bytes, or NULL (no error set) when absent. */
PyObject *str_cache_get(str_cache *c, const void *key, size_t n, uint64_t h) {
    if (!c->cap) return NULL;
    size_t j = (size_t)h & (c->cap - 1);
    while (c->slots[j].hash) {
        str_slot *s = &c->slots[j];
        if (s->hash == h && (size_t)PyBytes_GET_SIZE(s->bytes) == n &&
            memcmp(PyBytes_AS_STRING(s->bytes), key, n) == 0) {
            Py_INCREF(s->value);
            return s->value;
        }
        j = (j + 1) & (c->cap - 1);
    }
    return NULL;
}

void str_cache_put(str_cache *c, const void *key, size_t n, uint64_t h, PyObject *value) {
    if (c->used >= STR_CACHE_MAX) str_cache_clear(c);
    if ((c->used + 1) * 2 > c->cap) {
        size_t nc = c->cap ? c->cap * 2 : 256;
        str_slot *ns = PyMem_Calloc(nc, sizeof *ns);
        if (!ns) return; /* not cached: no harm */
        for (size_t i = 0; i < c->cap; i++) {
            if (!c->slots[i].hash) continue;
            size_t j = (size_t)c->slots[i].hash & (nc - 1);
            while (ns[j].hash) j = (j + 1) & (nc - 1);
            ns[j] = c->slots[i];
        }
        PyMem_Free(c->slots);
        c->slots = ns;
        c->cap = nc;
    }
    PyObject *b = PyBytes_FromStringAndSize(key, (Py_ssize_t)n);
    if (!b) {
        PyErr_Clear();
        return;
    }
    size_t j = (size_t)h & (c->cap - 1);
    while (c->slots[j].hash) j = (j + 1) & (c->cap - 1);
    c->slots[j].hash = h;
    c->slots[j].bytes = b;
    Py_INCREF(value);
    c->slots[j].value = value;
    c->used++;
}

/* ------------------------------------------------------------------------ */
/* one JSON scalar (what the library's value writer produced) -> object     */

static int hexval(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

/* The JSON string at s[0..n) (quotes included) as a str. */
PyObject *json_string(const char *s, size_t n) {
    if (n < 2 || s[0] != '"' || s[n - 1] != '"') {
        PyErr_SetString(PyExc_RuntimeError, "etwdecode: internal: not a JSON string");
        return NULL;
    }
    s++;
    n -= 2;
    if (!memchr(s, '\\', n)) return PyUnicode_DecodeUTF8(s, (Py_ssize_t)n, "replace");
    /* unescape into UTF-8 */
    char *buf = PyMem_Malloc(n + 1);
    if (!buf) return PyErr_NoMemory();
    size_t o = 0;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        if (c != '\\' || i + 1 >= n) {
            buf[o++] = c;
            continue;
        }
        c = s[++i];
        switch (c) {
        case 'b': buf[o++] = '\b'; break;
        case 'f': buf[o++] = '\f'; break;
        case 'n': buf[o++] = '\n'; break;
        case 'r': buf[o++] = '\r'; break;
        case 't': buf[o++] = '\t'; break;
        case 'u': {
            unsigned cp = 0;
            if (i + 4 >= n) { /* cut escape: cannot come from the writer */
                buf[o++] = '?';
                break;
            }
            for (int k = 1; k <= 4; k++) {
                int h = hexval(s[i + (size_t)k]);
                cp = cp * 16 + (unsigned)(h < 0 ? 0 : h);
            }
            i += 4;
            /* the writer escapes only U+0000..U+009F: one to two bytes */
            if (cp < 0x80) {
                buf[o++] = (char)cp;
            } else if (cp < 0x800) {
                buf[o++] = (char)(0xC0 | (cp >> 6));
                buf[o++] = (char)(0x80 | (cp & 0x3F));
            } else {
                buf[o++] = (char)(0xE0 | (cp >> 12));
                buf[o++] = (char)(0x80 | ((cp >> 6) & 0x3F));
                buf[o++] = (char)(0x80 | (cp & 0x3F));
            }
            break;
        }
        default: buf[o++] = c; break; /* \" \\ \/ */
        }
    }
    PyObject *r = PyUnicode_DecodeUTF8(buf, (Py_ssize_t)o, "replace");
    PyMem_Free(buf);
    return r;
}

/* Hex numbers come back as int (the documented difference). */
PyObject *json_scalar(const char *s, size_t n) {
    if (n == 0) Py_RETURN_NONE;
    if (s[0] == '"') {
        if (n > 4 && s[1] == '0' && s[2] == 'x') {
            uint64_t v = 0;
            size_t i = 3;
            for (; i + 1 < n; i++) {
                int h = hexval(s[i]);
                if (h < 0 || i > 18) break;
                v = v << 4 | (uint64_t)h;
            }
            if (i + 1 == n) return PyLong_FromUnsignedLongLong(v);
        }
        if (n == 5 && !memcmp(s, "\"NaN\"", 5)) return PyFloat_FromDouble(Py_NAN);
        if (n == 10 && !memcmp(s, "\"Infinity\"", 10)) return PyFloat_FromDouble(Py_HUGE_VAL);
        if (n == 11 && !memcmp(s, "\"-Infinity\"", 11)) return PyFloat_FromDouble(-Py_HUGE_VAL);
        return json_string(s, n);
    }
    if (n == 4 && !memcmp(s, "null", 4)) Py_RETURN_NONE;
    if (n == 4 && !memcmp(s, "true", 4)) Py_RETURN_TRUE;
    if (n == 5 && !memcmp(s, "false", 5)) Py_RETURN_FALSE;
    char tmp[64];
    if (n >= sizeof tmp) {
        PyErr_SetString(PyExc_RuntimeError, "etwdecode: internal: JSON number too long");
        return NULL;
    }
    memcpy(tmp, s, n);
    tmp[n] = 0;
    if (strpbrk(tmp, ".eE")) {
        double d = PyOS_string_to_double(tmp, NULL, NULL);
        if (d == -1.0 && PyErr_Occurred()) return NULL;
        return PyFloat_FromDouble(d);
    }
    return PyLong_FromString(tmp, NULL, 10);
}

int path_list_init(path_list *l, PyObject *seq, const char *what) {
    memset(l, 0, sizeof *l);
    l->seq = PySequence_Fast(seq, what);
    if (!l->seq) return -1;
    l->n = PySequence_Fast_GET_SIZE(l->seq);
    l->paths = PyMem_Calloc((size_t)l->n + 1, sizeof *l->paths);
    l->bytes = PyMem_Calloc((size_t)l->n + 1, sizeof *l->bytes);
    if (!l->paths || !l->bytes) {
        PyErr_NoMemory();
        return -1;
    }
    for (Py_ssize_t i = 0; i < l->n; i++) {
        if (!PyUnicode_FSConverter(PySequence_Fast_GET_ITEM(l->seq, i), &l->bytes[i])) return -1;
        l->paths[i] = PyBytes_AS_STRING(l->bytes[i]);
    }
    return 0;
}

void path_list_free(path_list *l) {
    for (Py_ssize_t i = 0; l->bytes && i < l->n; i++) Py_XDECREF(l->bytes[i]);
    PyMem_Free(l->bytes);
    PyMem_Free(l->paths);
    Py_XDECREF(l->seq);
    memset(l, 0, sizeof *l);
}
