/* py_native.h - what the files of the etwdecode._native extension share:
 * the Reader object, the string caches, the interned event keys and the
 * functions one file makes and another uses. The extension is split by
 * concept: py_strings.c (caches, JSON scalars), py_event.c (an event as a
 * dict), py_reader.c (the Reader type), py_profile.c (stacks and profile()),
 * py_frames.c (to_pandas columns), py_fields.c (etwdecode.Fields, a frame's
 * fields cells), py_report.c (reports),
 * py_module.c (the module). */
#ifndef ETWDECODE_PY_NATIVE_H
#define ETWDECODE_PY_NATIVE_H

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


extern PyObject *EtwError;   /* etwdecode.Error (ValueError) */
extern PyObject *EtwWarning; /* etwdecode.DamageWarning (UserWarning) */

/* interned keys of an event dict */
enum {
    K_TIME, K_PROVIDER, K_PROVIDER_GUID, K_EVENT, K_ID, K_VERSION, K_LEVEL, K_OPCODE, K_TASK,
    K_CHANNEL, K_KEYWORDS, K_PID, K_PROCESS, K_TID, K_CPU, K_DATA_LEN, K_ACTIVITY_ID, K_RELATED_ACTIVITY_ID,
    K_CONTAINER_ID, K_FIELDS, K_STACK, K_ERROR, K_RAW, K_UNSUPPORTED, K_STACK_MATCH_ID, K_MORE_STACKS,
    K_STACK_KEY, K_STACK_KEY_MATCH_ID, K_MORE_STACK_KEYS, K_MATCH_ID, K_FILE, K_COUNT_
};
extern const char *const k_key_names[K_COUNT_];
extern PyObject *g_keys[K_COUNT_];

typedef struct ptr_slot {
    const void *key;
    PyObject *value;
} ptr_slot;
typedef struct ptr_cache {
    ptr_slot *slots;
    size_t cap, used;
} ptr_cache;
typedef struct str_slot {
    uint64_t hash;
    PyObject *bytes; /* the key's bytes, as a bytes object (owns them) */
    PyObject *value;
} str_slot;
typedef struct str_cache {
    str_slot *slots;
    size_t cap, used;
} str_cache;
#define STR_CACHE_MAX 65536

#define MAX_PENDING_DIAGS 64

typedef struct Reader {
    PyObject_HEAD
    etw_reader *r;           /* borrowed from holder */
    etw_multi *holder;       /* opened the inputs (compressed ones unpacked), owns r */
    int several;             /* a list of inputs holding more than one trace: the events
                              * come from etw_multi_next, each with its "file" */
    PyObject **file_names;   /* several: each trace's name (etw_multi_name), as str */
    size_t nfiles;
    PyObject *inputs;        /* the inputs as given (a list of str), for stacks=True */
    Py_ssize_t member;       /* the trace of an archive read alone, or -1 */
    etw_decoder *dec;
    etw_filter *filter;      /* NULL: every event */
    etw_windows_index *win;  /* windows=: the image's providers, NULL: none */
    etw_manifest_catalog *cat; /* manifests= with a directory: loaded lazily */
    etw_label lab;           /* the current event's names (large: not on the stack) */
    PyObject *path;          /* str, for messages */
    etw_text scratch;
    ptr_cache names;         /* schema strings by address (see names_sync) */
    uint64_t names_epoch;    /* the decoder's tl_evicted when names was last checked */
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

typedef struct py_pick_ctx {
    etw_filter *filter; /* NULL: none */
    etw_decoder *dec;
    int by_event;       /* event= given: the selected events are the samples */
    const char *weight; /* a payload field, or NULL: 1 */
    int oom;
} py_pick_ctx;

extern PyTypeObject ReaderType;

/* py_strings.c */
void ptr_cache_clear(ptr_cache *c);
PyObject **ptr_cache_slot(ptr_cache *c, const void *key);
PyObject *cached_name(ptr_cache *c, const char *s);
/* Empty self->names when the decoder has dropped TraceLogging schemas since
 * the last call (their strings are freed: an address may come back for
 * another name). Call before a row uses schema strings; returns 1 when the
 * schemas' memory changed (caches of the caller keyed by schema addresses
 * must be emptied too). */
int names_sync(Reader *self);
/* One value of a payload walk into the containers being built: stack[*top]
 * is the innermost open dict or list (is_list[*top] says which), and a
 * struct or array begin adds a new one to it and opens it (while *top + 1 <
 * cap; deeper ones stay empty). 0, or -1 with an exception set. */
int payload_put(Reader *self, PyObject **stack, int *is_list, int *top, int cap, const etw_value *v);
uint64_t fnv1a(const void *p, size_t n);
void str_cache_clear(str_cache *c);
PyObject *str_cache_get(str_cache *c, const void *key, size_t n, uint64_t h);
void str_cache_put(str_cache *c, const void *key, size_t n, uint64_t h, PyObject *value);
PyObject *json_string(const char *s, size_t n);
/* A Python sequence of paths (str, bytes, os.PathLike) as C strings:
 * paths[0..n) stay valid until path_list_free. */
typedef struct path_list {
    PyObject *seq;    /* the sequence, made fast */
    PyObject **bytes; /* each path encoded (PyUnicode_FSConverter) */
    const char **paths;
    Py_ssize_t n;
} path_list;
/* 0, or -1 with a Python error set; `what` names the argument in the error. */
int path_list_init(path_list *l, PyObject *seq, const char *what);
void path_list_free(path_list *l);
PyObject *json_scalar(const char *s, size_t n);
/* py_event.c */
PyObject *scratch_scalar(Reader *self);
PyObject *guid_str(Reader *self, const etw_guid *g);
PyObject *utf8_cached(Reader *self, const char *s, size_t n);
PyObject *time_ns(int64_t ft);
PyObject *filetime_text(Reader *self, int64_t ft);
PyObject *utf16_str(const uint8_t *p, size_t n);
PyObject *ansi_str(const uint8_t *p, size_t n);
int set_item(PyObject *d, int key, PyObject *v);
int set_named(PyObject *d, const char *name, PyObject *v);
PyObject *value_via_json(Reader *self, const etw_value *v);
/* integer_class(): how an integer value is given */
enum { NUM_OBJ, NUM_I64, NUM_U64, NUM_BOOL };
int integer_class(const etw_value *v, uint64_t *out);
PyObject *integer_obj(Reader *self, const etw_value *v);
PyObject *value_obj(Reader *self, const etw_value *v);
PyObject *fields_obj(Reader *self, const etw_schema *s, const etw_event *ev, uint32_t *trailing);
PyObject *logfile_obj(Reader *self);
PyObject *manifest_obj(const etw_event *ev);
uint64_t le_n(const uint8_t *p, uint32_t w);
PyObject *stack_list(const etw_ext_item *it);
int append_more(PyObject **list, uint64_t match, int key, PyObject *v);
int ext_items(Reader *self, PyObject *d, const etw_event *ev);
PyObject *id_obj(uint32_t v);
PyObject *label_name(Reader *self, const char *s, size_t n, const char *schema_string);
PyObject *event_obj(Reader *self, const etw_event *ev, const etw_label *lab);
/* py_profile.c */
PyObject *frame_label_obj(PyObject **cache, uint32_t ncache, const etw_profile *p, uint32_t f);
PyObject *profile_stack_list(PyObject **cache, uint32_t ncache, const etw_profile *p, uint32_t node);
int py_pick(void *ctx, const etw_event *ev, const etw_schema *sc, uint32_t pid, uint32_t tid, double *weight);
int build_profile(PyObject *path, PyObject *inputs, Py_ssize_t member, int file_order, int default_manifests, const char *lang, PyObject *symbols, int keep_event_stacks, py_pick_ctx *pick, etw_decoder **dec, etw_profile **prof);
PyObject *native_profile(PyObject *mod, PyObject *args, PyObject *kw);
/* py_reader.c */
void keep_diag(Reader *self, const char *msg);
void on_reader_diag(void *ctx, const etw_diag *d);
void on_decoder_diag(void *ctx, const etw_diag *d);
int flush_diags(Reader *self);
PyObject *raise_status(Reader *self, etw_status s, const char *what);
etw_status reader_next(Reader *self, etw_event *ev);
int open_error(PyObject *path, etw_status s, int err);
int add_filters(Reader *self, PyObject *filters);
int select_event(Reader *self, const etw_event *ev);
PyObject *native_traces(PyObject *mod, PyObject *arg);

/* py_report.c */
PyObject *native_report(PyObject *mod, PyObject *args, PyObject *kw);

/* py_fields.c: etwdecode.Fields */
extern PyTypeObject FieldsType;
/* how a Fields cell holds its value */
enum { FV_NONE, FV_OBJ, FV_I64, FV_U64, FV_F64, FV_BOOL,
       FV_IARR, FV_UARR /* a list of int64 / uint64 values, held as bytes (8 a value, native order) */ };
/* A row's layout: its values' names (the schema's name pointers; drive[i]
 * 1: the NAME_drive twin of names[i]) and the index they make. */
typedef struct fields_layout {
    uint64_t hash;
    size_t n;            /* values in a row */
    const char **names;
    uint8_t *drive;
    Py_ssize_t *slots;   /* the position of each value (a name met again: its first one) */
    Py_ssize_t nkeys;    /* distinct names */
    PyObject *index;     /* dict: name -> position */
} fields_layout;
typedef struct fields_layouts {
    fields_layout **slots;
    size_t cap, used;
} fields_layouts;
/* The cached layout of these names (made on first sight), or NULL with an
 * exception; it stays valid until fields_layouts_clear or the next call
 * that makes a new one. */
fields_layout *fields_layout_get(fields_layouts *t, Reader *self, const char *const *names, const uint8_t *drive,
                                 size_t n);
void fields_layouts_clear(fields_layouts *t);
/* A Fields of n values (all None) over index; fields_put sets value i
 * (kind FV_*: bits, or obj, stolen); fields_done when all are set. */
PyObject *fields_alloc(PyObject *index, Py_ssize_t n);
void fields_put(PyObject *f, Py_ssize_t i, int kind, uint64_t bits, PyObject *obj);
void fields_done(PyObject *f);
/* A Fields of a dict's items; *last: an index to reuse for the same keys
 * (updated, owned by the caller). */
PyObject *fields_from_dict(PyObject *d, PyObject **last);

/* py_frames.c */
extern PyTypeObject FrameBufType;
PyObject *Reader_frame(Reader *self, PyObject *args);

#endif
