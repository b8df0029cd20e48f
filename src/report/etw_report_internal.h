/* etw_report_internal.h - what the reports (src/report/etw_report_*.c)
 * share: the report object, bounded tables (a u64 -> row map, growable row
 * arrays, an interning string pool), payload fields by name resolved once
 * per schema, and the table writer (etw_report_out.c). */
#ifndef ETW_REPORT_INTERNAL_H
#define ETW_REPORT_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "etwdecode/etw_decode.h"
#include "etwdecode/etw_decoder.h"
#include "etwdecode/etw_report.h"

/* --- bounded tables ------------------------------------------------------ */

#define REP_NONE UINT32_MAX

/* u64 key -> u32 value, open addressing; grows by doubling. */
typedef struct rep_map {
    uint64_t *keys;
    uint32_t *vals; /* REP_NONE: empty slot */
    uint32_t cap;   /* a power of two, or 0 */
    uint32_t count;
} rep_map;

/* A growable array of fixed-size rows. */
typedef struct rep_vec {
    unsigned char *data;
    uint32_t count, cap;
    uint32_t elem;
} rep_vec;

/* Interned strings: offsets into one buffer (offset 0 is ""). */
#define REP_POOL_MAX ((size_t)64 << 20) /* bytes of text a report keeps at most */
typedef struct rep_pool {
    char *data;
    size_t len, cap;
    rep_map index; /* hash -> offset (a collision keeps the first: the second is stored again) */
} rep_pool;

/* --- payload fields by name ---------------------------------------------- */

#define REP_MAX_FIELDS 16
#define REP_FIELD_CACHE 64 /* schemas remembered per report (replaced by hash slot past it) */

typedef struct rep_fieldmap {
    const etw_schema *schema; /* compared with schema_id: a TraceLogging schema
                               * may be freed and its address reused (etw_cache.h) */
    uint32_t schema_id;
    const char *const *names; /* the list they were looked up for */
    uint16_t idx[REP_MAX_FIELDS]; /* top-level property index, UINT16_MAX: absent */
    uint16_t last;                /* the largest index wanted + 1 */
} rep_fieldmap;

/* The values of names[] in ev's payload: vals[i] valid when bit i of the
 * result is set. */
uint32_t rep_fields(etw_report *r, etw_decoder *d, const etw_event *ev, const etw_schema *s,
                    const char *const *names, size_t n, etw_value *vals);

/* --- the report object --------------------------------------------------- */

typedef struct rep_out rep_out;

typedef struct rep_vtable {
    etw_status (*init)(etw_report *r);
    void (*free)(etw_report *r);
    etw_status (*add)(etw_report *r, etw_decoder *d, const etw_event *ev, const etw_schema *s);
    etw_status (*skip)(etw_report *r, etw_decoder *d, const etw_event *ev, const etw_schema *s); /* may be NULL */
    etw_status (*finish)(etw_report *r); /* may be NULL */
    etw_status (*write)(etw_report *r, rep_out *o);
    size_t (*memory)(const etw_report *r);
} rep_vtable;

struct etw_report {
    etw_report_kind kind;
    etw_allocator alloc;
    etw_report_options opt;
    const rep_vtable *vt;
    void *impl;
    uint64_t events, used, dropped;
    int64_t origin;
    int origin_set;
    int finished;
    etw_status finish_status;
    rep_fieldmap fields[REP_FIELD_CACHE];
};

extern const rep_vtable etw_rep_processes_vt, etw_rep_gc_vt, etw_rep_disk_vt, etw_rep_files_vt,
    etw_rep_network_vt, etw_rep_cpu_vt;

void *rep_alloc(etw_report *r, size_t n);  /* zeroed */
void rep_free(etw_report *r, void *p);

uint32_t rep_map_get(const rep_map *m, uint64_t key);
etw_status rep_map_put(etw_report *r, rep_map *m, uint64_t key, uint32_t val);
void rep_map_free(etw_report *r, rep_map *m);

void rep_vec_init(rep_vec *v, size_t elem);
/* A new zeroed row at the end; NULL when the vector holds max rows
 * (counted in r->dropped) or memory runs out (*st = ETW_E_NOMEM). */
void *rep_vec_push(etw_report *r, rep_vec *v, uint32_t max, etw_status *st);
static inline void *rep_vec_at(const rep_vec *v, uint32_t i) { return v->data + (size_t)i * v->elem; }
void rep_vec_free(etw_report *r, rep_vec *v);

/* The offset of s (interned); 0 ("") when the pool is full or s is empty. */
etw_status rep_pool_add(etw_report *r, rep_pool *p, const char *s, size_t len, uint32_t *off);
static inline const char *rep_pool_str(const rep_pool *p, uint32_t off) { return p->data ? p->data + off : ""; }
void rep_pool_free(etw_report *r, rep_pool *p);

/* Row bound of this report's tables. */
uint32_t rep_max_rows(const etw_report *r);

/* A value as UTF-8 text: strings (UTF-16 converted), else its number;
 * returns the length written into buf (at most cap - 1, NUL-terminated). */
size_t rep_value_text(const etw_value *v, char *buf, size_t cap);
/* The name a value map gives v's number, or NULL. */
const char *rep_value_map_name(const etw_value *v);
/* The integer value of v, or 0 when it is not an integer. */
uint64_t rep_value_u64(const etw_value *v);
/* The file name part of a path (after the last '\' or '/'). */
const char *rep_basename(const char *s, size_t len, size_t *out_len);

/* Seconds from the report's origin. */
double rep_seconds(const etw_report *r, int64_t filetime);

/* Frequently compared GUIDs. */
extern const etw_guid rep_guid_process, rep_guid_kernel_process, rep_guid_clr, rep_guid_diskio,
    rep_guid_fileio, rep_guid_tcpip, rep_guid_udpip, rep_guid_perfinfo;

/* --- the table writer (etw_report_out.c) --------------------------------- */

typedef enum rep_coltype {
    REP_COL_STR = 0,
    REP_COL_INT,   /* integers (JSON numbers, right-aligned in text) */
    REP_COL_FLOAT, /* with the column's decimals */
} rep_coltype;

typedef struct rep_col {
    const char *name;
    rep_coltype type;
    int decimals; /* REP_COL_FLOAT */
} rep_col;

/* Begin a table: name (JSON key), title (text heading), columns. main: the
 * table CSV writes (exactly one per report). */
etw_status rep_table_begin(rep_out *o, const char *name, const char *title, const rep_col *cols, size_t ncols,
                           int main);
void rep_cell_str(rep_out *o, const char *s, size_t len);
void rep_cell_cstr(rep_out *o, const char *s);
void rep_cell_u64(rep_out *o, uint64_t v);
void rep_cell_i64(rep_out *o, int64_t v);
void rep_cell_f64(rep_out *o, double v);
void rep_cell_null(rep_out *o);
etw_status rep_table_end(rep_out *o);
/* A note under the text tables / a "notes" array in JSON (limits reached). */
void rep_note(rep_out *o, const char *text);
etw_report_format rep_out_format(const rep_out *o);

etw_status rep_out_run(etw_report *r, etw_report_format fmt, etw_report_write_fn fn, void *ctx);

#endif
