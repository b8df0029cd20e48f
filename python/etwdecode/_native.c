/* _native.c - the CPython extension under the etwdecode package: events of a
 * trace as dicts, built straight from the pull decoder (no JSON text in
 * between), with the keys and values of docs/json-output.md except for the
 * type differences docs/python.md lists (time as int nanoseconds, binary as
 * bytes, hex numbers as int, NaN/Infinity as float).
 *
 * The event's keys follow etw_json_event() (src/format/etw_json.c), and the
 * value forms src/format/etw_fields_json.c: the common forms (integers,
 * strings, booleans, doubles, binaries) are built directly; the rarer string
 * forms (GUIDs, addresses, SIDs, times, map names) are rendered by the
 * library's own JSON value writer into a scratch text and read back as one
 * JSON scalar, so they cannot drift from etwdump's output.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <errno.h>
#include <sys/stat.h>
#include <stdint.h>
#include <string.h>

#include "etwdecode/etwdecode.h"
#include "format/etw_fields_json.h"
#include "format/etw_text.h"
#include "source/etw_eventsource.h"

/* FILETIME of 1970-01-01T00:00:00Z: 100 ns ticks since 1601-01-01. */
#define FILETIME_UNIX_EPOCH INT64_C(116444736000000000)

static PyObject *EtwError;   /* etwdecode.Error (ValueError) */
static PyObject *EtwWarning; /* etwdecode.DamageWarning (UserWarning) */

/* interned keys of an event dict */
enum {
    K_TIME, K_PROVIDER, K_PROVIDER_GUID, K_EVENT, K_ID, K_VERSION, K_LEVEL, K_OPCODE, K_TASK,
    K_CHANNEL, K_KEYWORDS, K_PID, K_PROCESS, K_TID, K_CPU, K_DATA_LEN, K_ACTIVITY_ID, K_RELATED_ACTIVITY_ID,
    K_CONTAINER_ID, K_FIELDS, K_STACK, K_ERROR, K_RAW, K_UNSUPPORTED, K_STACK_MATCH_ID, K_MORE_STACKS,
    K_STACK_KEY, K_STACK_KEY_MATCH_ID, K_MORE_STACK_KEYS, K_MATCH_ID, K_COUNT_
};
static const char *const k_key_names[K_COUNT_] = {
    "time", "provider", "provider_guid", "event", "id", "version", "level", "opcode", "task",
    "channel", "keywords", "pid", "process", "tid", "cpu", "data_len", "activity_id", "related_activity_id",
    "container_id", "fields", "stack", "error", "raw", "unsupported", "stack_match_id", "more_stacks",
    "stack_key", "stack_key_match_id", "more_stack_keys", "match_id",
};
static PyObject *g_keys[K_COUNT_];

/* ------------------------------------------------------------------------ */
/* string caches                                                            */

/* Pointer-keyed: names that live as long as the decoder (schema and
 * property names). Content-keyed: short strings seen again and again (GUID
 * strings, provider names from TraceLogging traits). Open addressing,
 * grown at half load. */
typedef struct ptr_slot {
    const void *key;
    PyObject *value;
} ptr_slot;

typedef struct ptr_cache {
    ptr_slot *slots;
    size_t cap, used;
} ptr_cache;

static size_t ptr_hash(const void *p) {
    uint64_t x = (uint64_t)(uintptr_t)p;
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdull;
    x ^= x >> 29;
    return (size_t)x;
}

static void ptr_cache_clear(ptr_cache *c) {
    for (size_t i = 0; i < c->cap; i++) Py_XDECREF(c->slots[i].value);
    PyMem_Free(c->slots);
    c->slots = NULL;
    c->cap = c->used = 0;
}

static PyObject **ptr_cache_slot(ptr_cache *c, const void *key) {
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
static PyObject *cached_name(ptr_cache *c, const char *s) {
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

typedef struct str_slot {
    uint64_t hash;
    PyObject *bytes; /* the key's bytes, as a bytes object (owns them) */
    PyObject *value;
} str_slot;

typedef struct str_cache {
    str_slot *slots;
    size_t cap, used;
} str_cache;

/* Bound on the content cache: past it, it is emptied (bounded memory for
 * hostile traces with ever-new names). */
#define STR_CACHE_MAX 65536

static uint64_t fnv1a(const void *p, size_t n) {
    const uint8_t *b = p;
    uint64_t h = 0xcbf29ce484222325ull;
    for (size_t i = 0; i < n; i++) h = (h ^ b[i]) * 0x100000001b3ull;
    return h | 1;
}

static void str_cache_clear(str_cache *c) {
    for (size_t i = 0; i < c->cap; i++) {
        Py_XDECREF(c->slots[i].bytes);
        Py_XDECREF(c->slots[i].value);
    }
    PyMem_Free(c->slots);
    c->slots = NULL;
    c->cap = c->used = 0;
}

/* The cached value for key bytes, or NULL (no error set) when absent. */
static PyObject *str_cache_get(str_cache *c, const void *key, size_t n, uint64_t h) {
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

static void str_cache_put(str_cache *c, const void *key, size_t n, uint64_t h, PyObject *value) {
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
static PyObject *json_string(const char *s, size_t n) {
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
static PyObject *json_scalar(const char *s, size_t n) {
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

/* ------------------------------------------------------------------------ */
/* the reader object                                                        */

#define MAX_PENDING_DIAGS 64

typedef struct Reader {
    PyObject_HEAD
    etw_reader *r;           /* borrowed from holder */
    etw_multi *holder;       /* opened the input (a compressed one unpacked), owns r */
    etw_decoder *dec;
    etw_filter *filter;      /* NULL: every event */
    etw_windows_index *win;  /* windows=: the image's providers, NULL: none */
    etw_manifest_catalog *cat; /* manifests= with a directory: loaded lazily */
    etw_label lab;           /* the current event's names (large: not on the stack) */
    PyObject *path;          /* str, for messages */
    etw_text scratch;
    ptr_cache names;
    str_cache strings;
    int header_done;
    int no_manifest_events;
    int raw_always;
    int finished;
    int muted;
    uint64_t max_events, returned;
    /* stacks=True: the first pass's profile (every event's stack), its own
     * decoder, the events read so far in this pass, frame labels made */
    etw_profile *prof;
    etw_decoder *prof_dec;
    uint64_t seq;
    PyObject **frame_str;
    uint32_t nframe_str;
    /* problems met during the last step, warned about after it */
    char *diag_msgs[MAX_PENDING_DIAGS];
    int ndiags;
    uint64_t diags_dropped;
} Reader;

static void keep_diag(Reader *self, const char *msg) {
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

static void on_reader_diag(void *ctx, const etw_diag *d) {
    Reader *self = ctx;
    char buf[400];
    snprintf(buf, sizeof buf, "offset 0x%llx: %s", (unsigned long long)d->file_offset, d->message);
    keep_diag(self, buf);
}

static void on_decoder_diag(void *ctx, const etw_diag *d) { keep_diag(ctx, d->message); }

/* Turn the problems kept into warnings. -1 when a warning became an error. */
static int flush_diags(Reader *self) {
    int rc = 0;
    for (int i = 0; i < self->ndiags; i++) {
        if (rc == 0 && PyErr_WarnFormat(EtwWarning, 1, "%U: %s", self->path, self->diag_msgs[i]) < 0) rc = -1;
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

static PyObject *raise_status(Reader *self, etw_status s, const char *what) {
    if (s == ETW_E_NOMEM) return PyErr_NoMemory();
    PyErr_Format(EtwError, "%U: %s: %s", self->path, what, etw_strerror(s));
    return NULL;
}

/* ---- pieces of an event ---- */

/* The text the library's writers put in the scratch buffer, as an object. */
static PyObject *scratch_scalar(Reader *self) {
    if (etw_text_status(&self->scratch) != ETW_OK) return PyErr_NoMemory();
    return json_scalar(self->scratch.data ? self->scratch.data : "", self->scratch.len);
}

static PyObject *guid_str(Reader *self, const etw_guid *g) {
    uint64_t h = fnv1a(g, sizeof *g);
    PyObject *o = str_cache_get(&self->strings, g, sizeof *g, h);
    if (o) return o;
    char s[ETW_GUID_STRING_SIZE];
    etw_guid_format(g, s);
    o = PyUnicode_FromStringAndSize(s, ETW_GUID_STRING_SIZE - 1);
    if (o) str_cache_put(&self->strings, g, sizeof *g, h, o);
    return o;
}

static PyObject *utf8_cached(Reader *self, const char *s, size_t n) {
    uint64_t h = fnv1a(s, n);
    PyObject *o = str_cache_get(&self->strings, s, n, h);
    if (o) return o;
    o = PyUnicode_DecodeUTF8(s, (Py_ssize_t)n, "replace");
    if (o) str_cache_put(&self->strings, s, n, h, o);
    return o;
}

/* FILETIME -> int nanoseconds since the Unix epoch; None outside the range
 * the JSON writer prints (it writes null there). */
static PyObject *time_ns(int64_t ft) {
    if (ft < 0 || ft > ETW_FILETIME_MAX) Py_RETURN_NONE;
    int64_t d = ft - FILETIME_UNIX_EPOCH;
    if (d <= INT64_MAX / 100 && d >= INT64_MIN / 100) return PyLong_FromLongLong(d * 100);
    PyObject *a = PyLong_FromLongLong(d), *hundred = PyLong_FromLong(100);
    PyObject *r = a && hundred ? PyNumber_Multiply(a, hundred) : NULL;
    Py_XDECREF(a);
    Py_XDECREF(hundred);
    return r;
}

/* A FILETIME field as the JSON writer has it: RFC 3339 text, 0 -> None. */
static PyObject *filetime_text(Reader *self, int64_t ft) {
    if (ft == 0) Py_RETURN_NONE;
    etw_text_clear(&self->scratch);
    if (etw_text_filetime(&self->scratch, ft) != ETW_OK) Py_RETURN_NONE;
    if (etw_text_status(&self->scratch) != ETW_OK) return PyErr_NoMemory();
    return PyUnicode_FromStringAndSize(self->scratch.data, (Py_ssize_t)self->scratch.len);
}

static PyObject *utf16_str(const uint8_t *p, size_t n) {
    int bo = -1; /* little-endian */
    return PyUnicode_DecodeUTF16((const char *)p, (Py_ssize_t)(n & ~(size_t)1), "replace", &bo);
}

/* 8-bit text: UTF-8 when it is all valid UTF-8, else Latin-1. */
static PyObject *ansi_str(const uint8_t *p, size_t n) {
    if (etw_utf8_valid(p, n)) return PyUnicode_DecodeUTF8((const char *)p, (Py_ssize_t)n, "strict");
    return PyUnicode_DecodeLatin1((const char *)p, (Py_ssize_t)n, NULL);
}

static int set_item(PyObject *d, int key, PyObject *v) {
    if (!v) return -1;
    int rc = PyDict_SetItem(d, g_keys[key], v);
    Py_DECREF(v);
    return rc;
}

static int set_named(PyObject *d, const char *name, PyObject *v) {
    if (!v) return -1;
    int rc = PyDict_SetItemString(d, name, v);
    Py_DECREF(v);
    return rc;
}

/* The value through the library's JSON writer (the rare forms). */
static PyObject *value_via_json(Reader *self, const etw_value *v) {
    etw_text_clear(&self->scratch);
    etw_value_json(&self->scratch, v);
    return scratch_scalar(self);
}

/* Integers, as integer_json() writes them (src/format/etw_fields_json.c). */
static PyObject *integer_obj(Reader *self, const etw_value *v) {
    const uint8_t *d = v->data;
    uint32_t size = v->size;
    uint16_t in = v->in_type, out = v->out_type;
    uint64_t u;
    switch (size) {
    case 1: u = d[0]; break;
    case 2: u = (uint64_t)d[0] | (uint64_t)d[1] << 8; break;
    case 4: u = (uint64_t)d[0] | (uint64_t)d[1] << 8 | (uint64_t)d[2] << 16 | (uint64_t)d[3] << 24; break;
    case 8: {
        u = 0;
        for (int i = 7; i >= 0; i--) u = u << 8 | d[i];
        break;
    }
    default: Py_RETURN_NONE;
    }
    if (v->prop && v->prop->map && v->prop->map->entries && v->prop->map->count) return value_via_json(self, v);
    switch (out) {
    case ETW_OUTTYPE_BOOLEAN:
        return PyBool_FromLong(u != 0);
    case ETW_OUTTYPE_STRING:
        if (size == 1) return ansi_str(d, 1);
        if (size == 2) return utf16_str(d, 2);
        break;
    case ETW_OUTTYPE_HEXINT8:
    case ETW_OUTTYPE_HEXINT16:
    case ETW_OUTTYPE_HEXINT32:
    case ETW_OUTTYPE_HEXINT64:
    case ETW_OUTTYPE_HEXBINARY:
    case ETW_OUTTYPE_CODE_POINTER:
    case ETW_OUTTYPE_WIN32ERROR: /* "0x..." in JSON: unsigned, as the hex types */
    case ETW_OUTTYPE_NTSTATUS:
    case ETW_OUTTYPE_HRESULT:
        return PyLong_FromUnsignedLongLong(u);
    case ETW_OUTTYPE_IPV4:
        if (size == 4) return value_via_json(self, v);
        break;
    case ETW_OUTTYPE_PORT:
        if (size == 2) return PyLong_FromLong((long)(d[0] << 8 | d[1]));
        break;
    case ETW_OUTTYPE_DATETIME:
    case ETW_OUTTYPE_DATETIME_UTC:
    case ETW_OUTTYPE_CULTURE_INSENSITIVE_DATETIME:
        if (size == 8) return value_via_json(self, v);
        break;
    default: break;
    }
    switch (in) {
    case ETW_INTYPE_HEXINT32:
    case ETW_INTYPE_HEXINT64:
    case ETW_INTYPE_POINTER:
    case ETW_INTYPE_SIZET:
        return PyLong_FromUnsignedLongLong(u);
    case ETW_INTYPE_INT8:
    case ETW_INTYPE_INT16:
    case ETW_INTYPE_INT32:
    case ETW_INTYPE_INT64: break;
    default:
        if (out != ETW_OUTTYPE_BYTE && out != ETW_OUTTYPE_SHORT && out != ETW_OUTTYPE_INT &&
            out != ETW_OUTTYPE_LONG)
            return PyLong_FromUnsignedLongLong(u);
    }
    int64_t s;
    switch (size) {
    case 1: s = (int8_t)d[0]; break;
    case 2: s = (int16_t)(uint16_t)u; break;
    case 4: s = (int32_t)(uint32_t)u; break;
    default: s = (int64_t)u; break;
    }
    return PyLong_FromLongLong(s);
}

/* One SCALAR or UNSUPPORTED value, as etw_value_json() writes it. */
static PyObject *value_obj(Reader *self, const etw_value *v) {
    if (v->kind == ETW_VALUE_UNSUPPORTED) {
        PyObject *o = PyDict_New();
        if (!o) return NULL;
        if (set_item(o, K_UNSUPPORTED, PyUnicode_FromString(etw_intype_name(v->in_type))) < 0 ||
            set_item(o, K_RAW, PyBytes_FromStringAndSize((const char *)v->data, v->data ? v->size : 0)) < 0) {
            Py_DECREF(o);
            return NULL;
        }
        return o;
    }
    if (v->kind != ETW_VALUE_SCALAR || (v->size && !v->data)) Py_RETURN_NONE;
    if (v->prop && (v->prop->flags & ETW_PROP_CUSTOM_SIZED))
        return PyBytes_FromStringAndSize((const char *)v->data, v->size);
    switch (v->in_type) {
    case ETW_INTYPE_UNICODESTRING:
    case ETW_INTYPE_MANIFEST_COUNTEDSTRING:
    case ETW_INTYPE_COUNTEDSTRING:
    case ETW_INTYPE_REVERSEDCOUNTEDSTRING:
    case ETW_INTYPE_NONNULLTERMINATEDSTRING:
        return utf16_str(v->data, v->size);
    case ETW_INTYPE_ANSISTRING:
    case ETW_INTYPE_MANIFEST_COUNTEDANSISTRING:
    case ETW_INTYPE_COUNTEDANSISTRING:
    case ETW_INTYPE_REVERSEDCOUNTEDANSISTRING:
    case ETW_INTYPE_NONNULLTERMINATEDANSISTRING:
        if (v->out_type == ETW_OUTTYPE_UTF8 || v->out_type == ETW_OUTTYPE_XML || v->out_type == ETW_OUTTYPE_JSON)
            return value_via_json(self, v); /* ill-formed bytes: the writer's U+FFFD rule */
        return ansi_str(v->data, v->size);
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
    case ETW_INTYPE_ANSICHAR:
        return integer_obj(self, v);
    case ETW_INTYPE_FLOAT:
        /* the shortest text that reads back as the float, as JSON has it */
        return value_via_json(self, v);
    case ETW_INTYPE_DOUBLE:
        if (v->size == 8) {
            uint64_t b = 0;
            for (int i = 7; i >= 0; i--) b = b << 8 | v->data[i];
            double f;
            memcpy(&f, &b, sizeof f);
            return PyFloat_FromDouble(f);
        }
        Py_RETURN_NONE;
    case ETW_INTYPE_BOOLEAN:
        if (v->size == 4)
            return PyBool_FromLong((v->data[0] | v->data[1] | v->data[2] | v->data[3]) != 0);
        Py_RETURN_NONE;
    case ETW_INTYPE_BINARY:
    case ETW_INTYPE_MANIFEST_COUNTEDBINARY:
    case ETW_INTYPE_HEXDUMP:
        if (v->out_type == ETW_OUTTYPE_IPV6 || v->out_type == ETW_OUTTYPE_IPV4 ||
            v->out_type == ETW_OUTTYPE_SOCKETADDRESS) {
            etw_text_clear(&self->scratch);
            etw_value_json(&self->scratch, v);
            /* an address the writer could not read falls back to hex text: bytes */
            if (self->scratch.len >= 2 && self->scratch.data[0] == '"' &&
                (v->out_type != ETW_OUTTYPE_SOCKETADDRESS || memchr(self->scratch.data, ':', self->scratch.len) ||
                 memchr(self->scratch.data, '.', self->scratch.len)))
                if (!(v->out_type == ETW_OUTTYPE_IPV6 && v->size != 16) &&
                    !(v->out_type == ETW_OUTTYPE_IPV4 && v->size != 4))
                    return scratch_scalar(self);
        }
        return PyBytes_FromStringAndSize((const char *)v->data, v->size);
    default:
        return value_via_json(self, v); /* GUID, FILETIME, SYSTEMTIME, SID, WBEMSID, unknown */
    }
}

/* The "fields" of an event with a payload schema. */
static PyObject *fields_obj(Reader *self, const etw_schema *s, const etw_event *ev, uint32_t *trailing) {
    etw_decode_cursor c;
    etw_value v;
    PyObject *stack[ETW_DECODE_MAX_DEPTH + 2];
    int is_list[ETW_DECODE_MAX_DEPTH + 2];
    int top = 0;
    stack[0] = PyDict_New();
    if (!stack[0]) return NULL;
    is_list[0] = 0;
    if (etw_decoder_begin(self->dec, ev, s, &c) != ETW_OK) return stack[0];
    while (etw_decode_next(&c, &v) == ETW_OK) {
        if (v.kind == ETW_VALUE_STRUCT_END || v.kind == ETW_VALUE_ARRAY_END) {
            if (top > 0) top--;
            continue;
        }
        PyObject *o;
        int open = 0;
        if (v.kind == ETW_VALUE_STRUCT_BEGIN || v.kind == ETW_VALUE_ARRAY_BEGIN) {
            o = v.kind == ETW_VALUE_ARRAY_BEGIN ? PyList_New(0) : PyDict_New();
            open = top + 1 < (int)(sizeof stack / sizeof stack[0]);
        } else {
            o = value_obj(self, &v);
        }
        if (!o) goto fail;
        int rc;
        if (is_list[top]) {
            rc = PyList_Append(stack[top], o);
        } else {
            PyObject *name = cached_name(&self->names, v.name ? v.name : "");
            rc = name ? PyDict_SetItem(stack[top], name, o) : -1;
            Py_XDECREF(name);
        }
        if (rc < 0) {
            Py_DECREF(o);
            goto fail;
        }
        if (open) {
            top++;
            stack[top] = o; /* borrowed: the parent holds it */
            is_list[top] = v.kind == ETW_VALUE_ARRAY_BEGIN;
        }
        Py_DECREF(o);
        char drive[ETW_DRIVE_PATH_MAX];
        size_t dn;
        if (!top && etw_decoder_value_drive_path(self->dec, &v, drive, sizeof drive, &dn)) {
            /* NAME_drive after an NT path, as the JSON writer does */
            PyObject *k = PyUnicode_FromFormat("%s_drive", v.name ? v.name : "");
            PyObject *dv = k ? PyUnicode_DecodeUTF8(drive, (Py_ssize_t)dn, "replace") : NULL;
            rc = dv ? PyDict_SetItem(stack[0], k, dv) : -1;
            Py_XDECREF(k);
            Py_XDECREF(dv);
            if (rc < 0) goto fail;
        }
    }
    *trailing = etw_decode_remaining(&c);
    return stack[0];
fail:
    Py_DECREF(stack[0]);
    return NULL;
}

static PyObject *logfile_obj(Reader *self) {
    const etw_logfile_header *h = etw_reader_logfile(self->r);
    PyObject *d = PyDict_New();
    if (!d) return NULL;
    if (set_named(d, "BufferSize", PyLong_FromUnsignedLong(h->buffer_size)) < 0 ||
        set_named(d, "Version", PyLong_FromUnsignedLong(h->version)) < 0 ||
        set_named(d, "ProviderVersion", PyLong_FromUnsignedLong(h->provider_version)) < 0 ||
        set_named(d, "NumberOfProcessors", PyLong_FromUnsignedLong(h->number_of_processors)) < 0 ||
        set_named(d, "EndTime", filetime_text(self, h->end_time)) < 0 ||
        set_named(d, "TimerResolution", PyLong_FromUnsignedLong(h->timer_resolution)) < 0 ||
        set_named(d, "MaxFileSize", PyLong_FromUnsignedLong(h->maximum_file_size)) < 0 ||
        set_named(d, "LogFileMode", PyLong_FromUnsignedLong(h->log_file_mode)) < 0 ||
        set_named(d, "BuffersWritten", PyLong_FromUnsignedLong(h->buffers_written)) < 0 ||
        set_named(d, "StartBuffers", PyLong_FromUnsignedLong(h->start_buffers)) < 0 ||
        set_named(d, "PointerSize", PyLong_FromUnsignedLong(h->pointer_size)) < 0 ||
        set_named(d, "EventsLost", PyLong_FromUnsignedLong(h->events_lost)) < 0 ||
        set_named(d, "CPUSpeed", PyLong_FromUnsignedLong(h->cpu_speed_mhz)) < 0 ||
        set_named(d, "BootTime", filetime_text(self, h->boot_time)) < 0 ||
        set_named(d, "PerfFreq", PyLong_FromLongLong(h->perf_freq)) < 0 ||
        set_named(d, "StartTime", filetime_text(self, h->start_time)) < 0 ||
        set_named(d, "ReservedFlags", PyLong_FromUnsignedLong(h->reserved_flags)) < 0 ||
        set_named(d, "BuffersLost", PyLong_FromUnsignedLong(h->buffers_lost)) < 0 ||
        set_named(d, "SessionName", utf16_str(h->session_name, h->session_name_bytes)) < 0 ||
        set_named(d, "LogFileName", utf16_str(h->logfile_name, h->logfile_name_bytes)) < 0 ||
        set_named(d, "UtcOffsetMinutes", PyLong_FromLong(h->timezone_bias)) < 0) {
        Py_DECREF(d);
        return NULL;
    }
    return d;
}

static PyObject *manifest_obj(const etw_event *ev) {
    etw_es_envelope e;
    if (etw_es_envelope_read(ev, &e) != ETW_OK) return NULL;
    return Py_BuildValue("{s:i,s:i,s:i,s:i,s:i,s:i,s:k}", "Format", e.format, "MajorVersion", e.major,
                         "MinorVersion", e.minor, "Magic", e.magic, "TotalChunks", e.total_chunks,
                         "ChunkNumber", e.chunk_number, "PayloadLength", (unsigned long)e.payload_length);
}

/* Little-endian u64/u32 of an item's bytes. */
static uint64_t le_n(const uint8_t *p, uint32_t w) {
    uint64_t v = 0;
    for (int i = (int)w - 1; i >= 0; i--) v = v << 8 | p[i];
    return v;
}

/* A stack item's addresses (u64 MatchId, then 4- or 8-byte addresses). */
static PyObject *stack_list(const etw_ext_item *it) {
    uint32_t w = it->type == ETW_EXT_STACK_TRACE64 ? 8 : 4;
    PyObject *l = PyList_New(0);
    if (!l) return NULL;
    for (uint32_t o = 8; o + w <= it->size; o += w) {
        PyObject *x = PyLong_FromUnsignedLongLong(le_n(it->data + o, w));
        if (!x || PyList_Append(l, x) < 0) {
            Py_XDECREF(x);
            Py_DECREF(l);
            return NULL;
        }
        Py_DECREF(x);
    }
    return l;
}

/* {"match_id": m (when not 0), key: v} of a later stack or stack-key item,
 * appended to *list (made on the first). */
static int append_more(PyObject **list, uint64_t match, int key, PyObject *v) {
    if (!v) return -1;
    PyObject *o = PyDict_New();
    if (!o || (match && set_item(o, K_MATCH_ID, PyLong_FromUnsignedLongLong(match)) < 0)) {
        Py_XDECREF(o);
        Py_DECREF(v);
        return -1;
    }
    if (set_item(o, key, v) < 0 || (!*list && !(*list = PyList_New(0))) || PyList_Append(*list, o) < 0) {
        Py_DECREF(o);
        return -1;
    }
    Py_DECREF(o);
    return 0;
}

/* The extended items as etw_json.c ext_fields writes them, same keys, same
 * order: GUIDs in item order, then the stacks ("stack", "stack_match_id",
 * "more_stacks"), then the stack keys ("stack_key", "stack_key_match_id",
 * "more_stack_keys"). */
static int ext_items(Reader *self, PyObject *d, const etw_event *ev) {
    etw_ext_item it;
    uint32_t pos = 0, nstack = 0, nkey = 0;
    int stacks = 0, keys = 0;
    while (etw_event_next_ext(ev, &pos, &it) == ETW_OK) {
        switch (it.type) {
        case ETW_EXT_RELATED_ACTIVITYID:
        case ETW_EXT_CONTAINER_ID:
            if (it.size >= 16) {
                etw_guid g = etw_guid_read(it.data);
                if (!etw_guid_is_zero(&g) &&
                    set_item(d, it.type == ETW_EXT_CONTAINER_ID ? K_CONTAINER_ID : K_RELATED_ACTIVITY_ID,
                             guid_str(self, &g)) < 0)
                    return -1;
            }
            break;
        case ETW_EXT_STACK_TRACE32:
        case ETW_EXT_STACK_TRACE64: stacks = self->prof == NULL; break; /* stacks=True: the profile's */
        case ETW_EXT_STACK_KEY32:
        case ETW_EXT_STACK_KEY64: keys = 1; break;
        default: break;
        }
    }
    PyObject *more = NULL;
    for (pos = 0; stacks && etw_event_next_ext(ev, &pos, &it) == ETW_OK;) {
        if ((it.type != ETW_EXT_STACK_TRACE32 && it.type != ETW_EXT_STACK_TRACE64) || it.size < 8) continue;
        uint64_t match = le_n(it.data, 8);
        if (nstack++ == 0) {
            if (set_item(d, K_STACK, stack_list(&it)) < 0 ||
                (match && set_item(d, K_STACK_MATCH_ID, PyLong_FromUnsignedLongLong(match)) < 0))
                return -1;
        } else if (append_more(&more, match, K_STACK, stack_list(&it)) < 0) {
            Py_XDECREF(more);
            return -1;
        }
    }
    if (more && set_item(d, K_MORE_STACKS, more) < 0) return -1;
    more = NULL;
    for (pos = 0; keys && etw_event_next_ext(ev, &pos, &it) == ETW_OK;) {
        if (it.type != ETW_EXT_STACK_KEY32 && it.type != ETW_EXT_STACK_KEY64) continue;
        uint32_t w = it.type == ETW_EXT_STACK_KEY64 ? 8 : 4;
        if (it.size < 8 + w) continue;
        uint64_t match = le_n(it.data, 8), k = le_n(it.data + 8, w);
        if (nkey++ == 0) {
            if (set_item(d, K_STACK_KEY, PyLong_FromUnsignedLongLong(k)) < 0 ||
                (match && set_item(d, K_STACK_KEY_MATCH_ID, PyLong_FromUnsignedLongLong(match)) < 0))
                return -1;
        } else if (append_more(&more, match, K_STACK_KEY, PyLong_FromUnsignedLongLong(k)) < 0) {
            Py_XDECREF(more);
            return -1;
        }
    }
    if (more && set_item(d, K_MORE_STACK_KEYS, more) < 0) return -1;
    return 0;
}

/* A frame's label (etw_frame_label) as a str, made once per frame. */
static PyObject *frame_label_obj(PyObject **cache, uint32_t ncache, const etw_profile *p, uint32_t f) {
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
static PyObject *profile_stack_list(PyObject **cache, uint32_t ncache, const etw_profile *p, uint32_t node) {
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

static PyObject *id_obj(uint32_t v) { return v == ETW_NO_ID ? PyLong_FromLong(-1) : PyLong_FromUnsignedLong(v); }

/* A name of a label: by address when it is the schema's own string (it
 * lives as long as the decoder), else by content. */
static PyObject *label_name(Reader *self, const char *s, size_t n, const char *schema_string) {
    if (schema_string && s == schema_string) return cached_name(&self->names, s);
    return utf8_cached(self, s, n);
}

/* The event as a dict; lab holds its schema and names (etw_label.h). */
static PyObject *event_obj(Reader *self, const etw_event *ev, const etw_label *lab) {
    const etw_schema *schema = lab->schema;
    const char *error = lab->error;
    uint32_t pid, tid;
    etw_decoder_event_ids(self->dec, ev, schema, &pid, &tid);
    const char *pname;
    size_t pname_len;
    PyObject *d = PyDict_New();
    if (!d) return NULL;
    if (set_item(d, K_TIME, time_ns(ev->timestamp)) < 0 ||
        set_item(d, K_PROVIDER,
                 label_name(self, lab->provider, lab->provider_len, schema ? schema->provider_name : NULL)) < 0 ||
        set_item(d, K_PROVIDER_GUID, guid_str(self, &ev->provider)) < 0 ||
        set_item(d, K_EVENT, label_name(self, lab->event, lab->event_len, schema ? schema->event_name : NULL)) < 0 ||
        set_item(d, K_ID, PyLong_FromLong(ev->id)) < 0 ||
        set_item(d, K_VERSION, PyLong_FromLong(ev->version)) < 0 ||
        set_item(d, K_LEVEL, PyLong_FromLong(ev->level)) < 0 ||
        set_item(d, K_OPCODE, PyLong_FromLong(ev->opcode)) < 0 ||
        set_item(d, K_TASK, PyLong_FromLong(ev->task)) < 0 ||
        set_item(d, K_CHANNEL, PyLong_FromLong(ev->channel)) < 0 ||
        set_item(d, K_KEYWORDS, PyLong_FromUnsignedLongLong(ev->keywords)) < 0 ||
        set_item(d, K_PID, id_obj(pid)) < 0 ||
        (etw_decoder_process_name(self->dec, ev, schema, pid, &pname, &pname_len) &&
         set_item(d, K_PROCESS, utf8_cached(self, pname, pname_len)) < 0) ||
        set_item(d, K_TID, id_obj(tid)) < 0 ||
        set_item(d, K_CPU, PyLong_FromLong(ev->cpu)) < 0 ||
        set_item(d, K_DATA_LEN, PyLong_FromUnsignedLong(ev->user_data_len)) < 0)
        goto fail;
    if (ev->has_activity_id && !etw_guid_is_zero(&ev->activity_id) &&
        set_item(d, K_ACTIVITY_ID, guid_str(self, &ev->activity_id)) < 0)
        goto fail;
    if (ev->ext_count && ext_items(self, d, ev) < 0) goto fail;
    if (self->prof && self->seq) {
        uint32_t node = etw_profile_event_stack(self->prof, self->seq - 1);
        if (node != ETW_STACK_NONE &&
            set_item(d, K_STACK, profile_stack_list(self->frame_str, self->nframe_str, self->prof, node)) < 0)
            goto fail;
    }
    int decoded = 0;
    PyObject *fields = NULL;
    if (ev->is_logfile_header) {
        fields = logfile_obj(self);
        decoded = 1;
    } else if (schema && etw_decoder_is_manifest_event(ev) && (fields = manifest_obj(ev)) != NULL) {
        decoded = 1;
    } else if (schema) {
        if (PyErr_Occurred()) goto fail;
        uint32_t trailing = 0;
        fields = fields_obj(self, schema, ev, &trailing);
        if (fields && !error) error = etw_decoder_payload_problem(self->dec, ev, schema, trailing);
        decoded = 1;
    } else {
        fields = PyDict_New();
    }
    if (set_item(d, K_FIELDS, fields) < 0) goto fail;
    if (error && set_item(d, K_ERROR, PyUnicode_DecodeUTF8(error, (Py_ssize_t)strlen(error), "replace")) < 0)
        goto fail;
    if ((self->raw_always || !decoded || error) && (ev->user_data_len || error) &&
        set_item(d, K_RAW, PyBytes_FromStringAndSize((const char *)ev->user_data, ev->user_data_len)) < 0)
        goto fail;
    return d;
fail:
    Py_DECREF(d);
    return NULL;
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
    etw_text_free(&self->scratch);
    ptr_cache_clear(&self->names);
    str_cache_clear(&self->strings);
    for (int i = 0; i < self->ndiags; i++) PyMem_RawFree(self->diag_msgs[i]);
    Py_XDECREF(self->path);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static int open_error(PyObject *path, etw_status s, int err) {
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
static int add_filters(Reader *self, PyObject *filters) {
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


/* ---- the profile stage (etw_profile.h) ---- */

/* Kernel PerfInfo class and its Sample opcode (TraceEvent's names). */
static const etw_guid k_perfinfo = {0xce1dbfb4, 0x137e, 0x4da6, {0x87, 0xb0, 0x3f, 0x59, 0xaa, 0x10, 0x2c, 0xbc}};

typedef struct py_pick_ctx {
    etw_filter *filter; /* NULL: none */
    etw_decoder *dec;
    int by_event;       /* event= given: the selected events are the samples */
    const char *weight; /* a payload field, or NULL: 1 */
    int oom;
} py_pick_ctx;

/* etwdump's --profile selection (tools/etwdump/profile.c): CPU samples
 * (the profile never offers an idle one), or the selected events. */
static int py_pick(void *ctx, const etw_event *ev, const etw_schema *sc, uint32_t pid, uint32_t tid,
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
 * told (the event pass tells them). -1 with an exception set. */
static int build_profile(PyObject *path, int file_order, int default_manifests, const char *lang,
                         PyObject *symbols, int keep_event_stacks, py_pick_ctx *pick, etw_decoder **dec,
                         etw_profile **prof) {
    *dec = NULL;
    *prof = NULL;
    PyObject *fs = PyUnicode_EncodeFSDefault(path);
    if (!fs) return -1;
    PyObject *symseq = NULL;
    const char **paths = NULL;
    Py_ssize_t nsym = 0;
    PyObject **symb = NULL;
    int rc = -1;
    etw_reader *r = NULL;
    if (symbols && symbols != Py_None) {
        symseq = PySequence_Fast(symbols, "symbols must be a sequence of paths");
        if (!symseq) goto out;
        nsym = PySequence_Fast_GET_SIZE(symseq);
        paths = PyMem_Calloc((size_t)nsym + 1, sizeof *paths);
        symb = PyMem_Calloc((size_t)nsym + 1, sizeof *symb);
        if (!paths || !symb) {
            PyErr_NoMemory();
            goto out;
        }
        for (Py_ssize_t i = 0; i < nsym; i++) {
            if (!PyUnicode_FSConverter(PySequence_Fast_GET_ITEM(symseq, i), &symb[i])) goto out;
            paths[i] = PyBytes_AS_STRING(symb[i]);
        }
    }
    etw_reader_options ro;
    memset(&ro, 0, sizeof ro);
    ro.file_order = file_order;
    etw_status s;
    int err;
    Py_BEGIN_ALLOW_THREADS
    errno = 0;
    s = etw_reader_open_file(&r, PyBytes_AS_STRING(fs), &ro);
    err = errno;
    Py_END_ALLOW_THREADS
    if (s != ETW_OK) {
        open_error(path, s, err);
        goto out;
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
    po.symbol_paths = paths;
    po.nsymbol_paths = (size_t)nsym;
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
    s = etw_decoder_prescan(*dec, r);
    etw_event ev;
    while (s == ETW_OK && etw_reader_next(r, &ev) == ETW_OK) {
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
    if (r) etw_reader_close(r);
    for (Py_ssize_t i = 0; symb && i < nsym; i++) Py_XDECREF(symb[i]);
    PyMem_Free(symb);
    PyMem_Free(paths);
    Py_XDECREF(symseq);
    Py_DECREF(fs);
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
static PyObject *native_profile(PyObject *mod, PyObject *args, PyObject *kw) {
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
    if (build_profile(path_obj, file_order, default_manifests, lang, symbols, 0, &pick, &dec, &prof) < 0) goto out;
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

/* Reader(path, manifests=(), *, raw=False, no_manifest_events=False,
 *        max_events=0, file_order=False, range=None, learn=None,
 *        no_decode=False, filters=None, default_manifests=True,
 *        windows=None, lang=None) */
static int Reader_init(Reader *self, PyObject *args, PyObject *kw) {
    static char *kwlist[] = {"path", "manifests", "raw", "no_manifest_events", "max_events",
                             "file_order", "range", "learn", "no_decode", "filters",
                             "default_manifests", "windows", "lang", "stacks", "symbols", "member", NULL};
    PyObject *path_obj, *manifests = NULL, *range = Py_None, *learn = Py_None, *filters = Py_None;
    PyObject *windows = Py_None, *symbols = Py_None;
    const char *lang = NULL;
    int raw = 0, no_me = 0, file_order = 0, no_decode = 0, default_manifests = 1, stacks = 0;
    Py_ssize_t member = -1;
    unsigned long long max_events = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "O&|O$ppKpOOpOpOzpOn", kwlist, PyUnicode_FSDecoder, &path_obj,
                                     &manifests, &raw, &no_me, &max_events, &file_order, &range, &learn,
                                     &no_decode, &filters, &default_manifests, &windows, &lang, &stacks,
                                     &symbols, &member))
        return -1;
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

    PyObject *fs = PyUnicode_EncodeFSDefault(self->path);
    if (!fs) return -1;
    etw_reader_options ro;
    memset(&ro, 0, sizeof ro);
    ro.on_diag = on_reader_diag;
    ro.diag_ctx = self;
    ro.file_order = file_order;
    etw_status s;
    int err;
    /* through an etw_multi: a compressed trace (.etl.gz, .etl.zip) is
     * unpacked into its memory; member picks one trace of an archive */
    Py_BEGIN_ALLOW_THREADS
    errno = 0;
    s = etw_multi_new(&self->holder, &ro);
    if (s == ETW_OK) s = etw_multi_add_file(self->holder, PyBytes_AS_STRING(fs));
    err = errno;
    Py_END_ALLOW_THREADS
    Py_DECREF(fs);
    if (s != ETW_OK) return open_error(self->path, s, err);
    size_t ntraces = etw_multi_count(self->holder);
    if (member < 0 && ntraces > 1) {
        PyErr_Format(EtwError, "%U: holds %zu traces: etwdecode.open() reads them all, Reader(member=i) one",
                     self->path, ntraces);
        return -1;
    }
    if (member >= (Py_ssize_t)ntraces) {
        PyErr_Format(PyExc_IndexError, "%U: member %zd of %zu traces", self->path, member, ntraces);
        return -1;
    }
    self->r = etw_multi_reader(self->holder, member < 0 ? 0 : (size_t)member);

    if (no_decode) return flush_diags(self);
    etw_decoder_options dopt;
    memset(&dopt, 0, sizeof dopt);
    dopt.on_diag = on_decoder_diag;
    dopt.diag_ctx = self;
    dopt.no_default_manifests = !default_manifests; /* the CLR's built-in manifest */
    dopt.lang = lang;
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
    if (self->filter)
        etw_filter_set_origin(self->filter,
                              etw_reader_to_filetime(self->r, etw_reader_logfile(self->r)->raw_timestamp));

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
        s = etw_decoder_prescan(self->dec, self->r);
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
        if (build_profile(self->path, file_order, default_manifests, lang, symbols, 1, NULL, &self->prof_dec,
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
static int select_event(Reader *self, const etw_event *ev) {
    if (self->filter) return etw_filter_match(self->filter, self->dec, ev, &self->lab);
    return etw_label_event(self->dec, ev, &self->lab) == ETW_OK ? 1 : -1;
}

static PyObject *Reader_iternext(Reader *self) {
    if (self->finished || !self->r) return NULL;
    if (self->max_events && self->returned >= self->max_events) goto end;
    for (;;) {
        etw_event ev;
        etw_status s = etw_reader_next(self->r, &ev);
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
static PyObject *Reader_stats(Reader *self, PyObject *unused) {
    (void)unused;
    if (!self->r) {
        PyErr_SetString(PyExc_ValueError, "the reader is closed");
        return NULL;
    }
    const etw_reader_stats *st = etw_reader_stats_get(self->r);
    const etw_logfile_header *h = etw_reader_logfile(self->r);
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
        etw_status rs = etw_reader_next(self->r, &ev);
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
        const etw_reader *readers[1] = {self->r};
        const char *names[1] = {PyBytes_AS_STRING(name)};
        s = st ? etw_stats_json(st, readers, names, 1, &text, &len) : etw_schemas_json(sc, &text, &len);
        if (s == ETW_OK) out = PyUnicode_DecodeUTF8(text, (Py_ssize_t)len, "replace");
        Py_DECREF(name);
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
    {NULL, NULL, 0, NULL},
};

static PyTypeObject ReaderType = {
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
static PyObject *native_traces(PyObject *mod, PyObject *arg) {
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

static PyMethodDef native_functions[] = {
    {"profile", (PyCFunction)(void (*)(void))native_profile, METH_VARARGS | METH_KEYWORDS,
     "The profile's samples: [(stack, pid, tid, process, weight, count, frames), ...]."},
    {"traces", native_traces, METH_O, "traces(path): the names of the traces an input holds (an archive's entries)"},
    {NULL, NULL, 0, NULL},
};

static PyModuleDef native_module = {
    PyModuleDef_HEAD_INIT, .m_name = "etwdecode._native", .m_methods = native_functions,
    .m_doc = "libetwdecode for Python: the native half of the etwdecode package.", .m_size = -1,
};

PyMODINIT_FUNC PyInit__native(void) {
    for (int i = 0; i < K_COUNT_; i++) {
        g_keys[i] = PyUnicode_InternFromString(k_key_names[i]);
        if (!g_keys[i]) return NULL;
    }
    if (PyType_Ready(&ReaderType) < 0) return NULL;
    PyObject *m = PyModule_Create(&native_module);
    if (!m) return NULL;
    EtwError = PyErr_NewExceptionWithDoc("etwdecode.Error",
                                         "A trace or manifest that cannot be read: the message names the file "
                                         "and what is wrong.",
                                         PyExc_ValueError, NULL);
    EtwWarning = PyErr_NewExceptionWithDoc("etwdecode.DamageWarning",
                                           "Damaged data skipped while reading (the message names the file and "
                                           "offset); reading goes on.",
                                           PyExc_UserWarning, NULL);
    if (!EtwError || !EtwWarning) return NULL;
    Py_INCREF(&ReaderType);
    if (PyModule_AddObject(m, "Reader", (PyObject *)&ReaderType) < 0 ||
        PyModule_AddObject(m, "Error", EtwError) < 0 || PyModule_AddObject(m, "DamageWarning", EtwWarning) < 0 ||
        PyModule_AddStringConstant(m, "library_version", etw_version_string()) < 0)
        return NULL;
    Py_INCREF(EtwError);
    Py_INCREF(EtwWarning);
    return m;
}
