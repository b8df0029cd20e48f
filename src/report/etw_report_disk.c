/* etw_report_disk.c - the disk and files reports.
 *
 * disk: kernel DiskIo Read (10) and Write (11) (3d6fa8d4-...; fields of
 * src/source/etw_kernel_diskio.c) by process (the issuing thread's, as
 * etw_decoder_event_ids gives it) and by file: count, bytes (TransferSize),
 * the I/O's elapsed time (HighResResponseTime in QPC ticks / PerfFreq, as
 * TraceEvent's ElapsedTimeMSec) and disk service time (TraceEvent's
 * DiskServiceTimeMSec: the elapsed time, but no more than the time since
 * the previous completion on the same disk).
 *
 * files: kernel FileIo Create (64), Read (67), Write (68) (90cbdc39-...;
 * src/source/etw_kernel_fileio.c) by file and process: counts and bytes
 * (IoSize).
 *
 * Names: FileIo Name (0), FileCreate (32), FileDelete (35) and FileRundown
 * (36) map a FileObject (a file key, in fact) to FileName, and Create maps
 * its FileObject to OpenPath; the last name seen wins and a file is named
 * when the report is written, so the rundown at the end of a trace names
 * files read before it. Rows of the same name (several FileObjects over
 * time) are one file in the output. NT paths are also shown in drive form
 * (a SystemConfig VolumeMapping seen before the name: etw_decoder_drive_path). */
#include <stdio.h>
#include <string.h>

#include "report/etw_report_internal.h"

#define DISKS 64 /* disks whose last completion is kept (higher numbers: elapsed time only) */

typedef struct io_row {
    uint64_t key;      /* pid, or the file's object/key */
    uint32_t pid;
    uint32_t pname;    /* pool: the process's image name */
    uint64_t n[3];     /* disk: reads, writes, -; files: creates, reads, writes */
    uint64_t bytes[2]; /* read, written */
    double elapsed_ms, service_ms;
} io_row;

typedef struct name_ent {
    uint32_t name, drive; /* pool offsets */
} name_ent;

typedef struct disk {
    int files; /* the files report */
    rep_vec procs, fobjs, names;
    rep_map by_pid, by_file, by_fo; /* by_file: (file, pid) for files; by_fo: object -> names row */
    rep_pool pool;
    int64_t last_done[DISKS];
    uint64_t unnamed;
} disk;

static etw_status d_init_kind(etw_report *r, int files) {
    disk *k = rep_alloc(r, sizeof *k);
    if (!k) return ETW_E_NOMEM;
    k->files = files;
    rep_vec_init(&k->procs, sizeof(io_row));
    rep_vec_init(&k->fobjs, sizeof(io_row));
    rep_vec_init(&k->names, sizeof(name_ent));
    r->impl = k;
    return ETW_OK;
}
static etw_status d_init(etw_report *r) {
    return d_init_kind(r, 0);
}
static etw_status f_init(etw_report *r) {
    return d_init_kind(r, 1);
}

static void d_free(etw_report *r) {
    disk *k = r->impl;
    if (!k) return;
    rep_vec_free(r, &k->procs);
    rep_vec_free(r, &k->fobjs);
    rep_vec_free(r, &k->names);
    rep_map_free(r, &k->by_pid);
    rep_map_free(r, &k->by_file);
    rep_map_free(r, &k->by_fo);
    rep_pool_free(r, &k->pool);
    rep_free(r, k);
}

static size_t d_memory(const etw_report *r) {
    const disk *k = r->impl;
    return (size_t)(k->procs.cap + k->fobjs.cap) * sizeof(io_row) + (size_t)k->names.cap * sizeof(name_ent) +
           (size_t)(k->by_pid.cap + k->by_file.cap + k->by_fo.cap) * 12 + k->pool.cap + (size_t)k->pool.index.cap * 12;
}

static io_row *get_row(etw_report *r, disk *k, rep_vec *v, rep_map *m, uint64_t key, uint32_t pid, etw_decoder *d,
                       const etw_event *ev, const etw_schema *s, etw_status *st) {
    uint32_t i = rep_map_get(m, key);
    if (i != REP_NONE) return rep_vec_at(v, i);
    io_row *w = rep_vec_push(r, v, rep_max_rows(r), st);
    if (!w) return NULL;
    w->key = key;
    w->pid = pid;
    const char *name;
    size_t len;
    if (pid != ETW_NO_ID && etw_decoder_process_name(d, ev, s, pid, &name, &len) &&
        (*st = rep_pool_add(r, &k->pool, name, len, &w->pname)) != ETW_OK)
        return NULL;
    if ((*st = rep_map_put(r, m, key, v->count - 1)) != ETW_OK) return NULL;
    return w;
}

/* FileObject -> name (the last one told) */
static etw_status learn_name(etw_report *r, disk *k, etw_decoder *d, uint64_t fo, const etw_value *v) {
    char buf[4096];
    size_t n = rep_value_text(v, buf, sizeof buf);
    if (!n) return ETW_OK;
    name_ent e = {0, 0};
    etw_status st = rep_pool_add(r, &k->pool, buf, n, &e.name);
    const char *dos;
    size_t dos_len, nt_len;
    if (st == ETW_OK && etw_decoder_drive_path(d, buf, n, &dos, &dos_len, &nt_len) && dos_len + n - nt_len < sizeof buf) {
        char b2[4096];
        memcpy(b2, dos, dos_len);
        memcpy(b2 + dos_len, buf + nt_len, n - nt_len);
        st = rep_pool_add(r, &k->pool, b2, dos_len + n - nt_len, &e.drive);
    }
    if (st != ETW_OK) return st;
    uint32_t i = rep_map_get(&k->by_fo, fo);
    if (i != REP_NONE) {
        *(name_ent *)rep_vec_at(&k->names, i) = e;
        return ETW_OK;
    }
    name_ent *slot = rep_vec_push(r, &k->names, rep_max_rows(r), &st);
    if (!slot) return st;
    *slot = e;
    return rep_map_put(r, &k->by_fo, fo, k->names.count - 1);
}

static const char *const name_fields[] = {"FileObject", "FileName"};
static const char *const create_fields[] = {"FileObject", "OpenPath"};
enum { D_SIZE, D_FO, D_TIME, D_DISK, D_N };
static const char *const disk_fields[D_N] = {"TransferSize", "FileObject", "HighResResponseTime", "DiskNumber"};
enum { F_FO, F_KEY, F_SIZE, F_N };
static const char *const rw_fields[F_N] = {"FileObject", "FileKey", "IoSize"};

static uint64_t file_pid_key(uint64_t file, uint32_t pid) {
    return file * 0x9E3779B97F4A7C15ull ^ pid;
}

/* Names are learned from every event, selected or not. */
static etw_status d_skip(etw_report *r, etw_decoder *d, const etw_event *ev, const etw_schema *s) {
    disk *k = r->impl;
    uint8_t op = ev->opcode;
    if (!s || s->source != ETW_SOURCE_MOF || !etw_guid_equal(&ev->provider, &rep_guid_fileio) ||
        !(op == 0 || op == 32 || op == 35 || op == 36 || op == 64))
        return ETW_OK;
    etw_value v[2];
    uint32_t have = rep_fields(r, d, ev, s, op == 64 ? create_fields : name_fields, 2, v);
    return have == 3 ? learn_name(r, k, d, rep_value_u64(&v[0]), &v[1]) : ETW_OK;
}

static etw_status d_add(etw_report *r, etw_decoder *d, const etw_event *ev, const etw_schema *s) {
    disk *k = r->impl;
    if (!s || s->source != ETW_SOURCE_MOF) return ETW_OK;
    etw_value v[D_N];
    etw_status st = ETW_OK;
    if (etw_guid_equal(&ev->provider, &rep_guid_fileio)) {
        uint8_t op = ev->opcode;
        if (op == 0 || op == 32 || op == 35 || op == 36 || op == 64) {
            if ((st = d_skip(r, d, ev, s)) != ETW_OK || !k->files || op != 64) return st;
        }
        if (!k->files || (op != 64 && op != 67 && op != 68)) return ETW_OK;
        r->used++;
        uint32_t have = op == 64 ? rep_fields(r, d, ev, s, create_fields, 1, v) : rep_fields(r, d, ev, s, rw_fields, F_N, v);
        if (!(have & 1u)) return ETW_OK;
        /* reads and writes name their file by FileKey (the name events' "FileObject") */
        uint64_t file = (have & (1u << F_KEY)) && rep_value_u64(&v[F_KEY]) ? rep_value_u64(&v[F_KEY]) : rep_value_u64(&v[F_FO]);
        uint32_t pid, tid;
        etw_decoder_event_ids(d, ev, s, &pid, &tid);
        io_row *w = get_row(r, k, &k->fobjs, &k->by_file, file_pid_key(file, pid), pid, d, ev, s, &st);
        if (!w) return st;
        w->key = file;
        io_row *p = get_row(r, k, &k->procs, &k->by_pid, pid, pid, d, ev, s, &st);
        if (!p) return st;
        int slot = op == 64 ? 0 : op == 67 ? 1 : 2;
        w->n[slot]++;
        p->n[slot]++;
        if (slot && (have & (1u << F_SIZE))) {
            uint64_t b = rep_value_u64(&v[F_SIZE]);
            w->bytes[slot - 1] += b;
            p->bytes[slot - 1] += b;
        }
        return ETW_OK;
    }
    if (k->files || !etw_guid_equal(&ev->provider, &rep_guid_diskio) || (ev->opcode != 10 && ev->opcode != 11))
        return ETW_OK;
    r->used++;
    uint32_t have = rep_fields(r, d, ev, s, disk_fields, D_N, v);
    uint32_t pid, tid;
    etw_decoder_event_ids(d, ev, s, &pid, &tid);
    uint64_t size = have & (1u << D_SIZE) ? rep_value_u64(&v[D_SIZE]) : 0;
    int64_t ticks = have & (1u << D_TIME) ? (int64_t)rep_value_u64(&v[D_TIME]) : 0;
    double freq = r->opt.perf_freq > 0 ? (double)r->opt.perf_freq : 1e7;
    double elapsed = (double)ticks * 1000.0 / freq;
    double service = elapsed;
    uint64_t dn = have & (1u << D_DISK) ? rep_value_u64(&v[D_DISK]) : DISKS;
    if (dn < DISKS) {
        if (k->last_done[dn]) {
            double since = (double)(ev->timestamp - k->last_done[dn]) / 1e4;
            if (since < service) service = since;
        }
        k->last_done[dn] = ev->timestamp;
    }
    int slot = ev->opcode == 10 ? 0 : 1;
    io_row *p = get_row(r, k, &k->procs, &k->by_pid, pid, pid, d, ev, s, &st);
    if (!p) return st;
    p->n[slot]++;
    p->bytes[slot] += size;
    p->elapsed_ms += elapsed;
    p->service_ms += service;
    uint64_t fo = have & (1u << D_FO) ? rep_value_u64(&v[D_FO]) : 0;
    io_row *f = get_row(r, k, &k->fobjs, &k->by_file, fo, ETW_NO_ID, d, ev, s, &st);
    if (!f) return st;
    f->n[slot]++;
    f->bytes[slot] += size;
    f->elapsed_ms += elapsed;
    f->service_ms += service;
    return ETW_OK;
}

static const rep_col disk_proc_cols[] = {
    {"pid", REP_COL_INT, 0},        {"process", REP_COL_STR, 0},     {"reads", REP_COL_INT, 0},
    {"read_bytes", REP_COL_INT, 0}, {"writes", REP_COL_INT, 0},      {"write_bytes", REP_COL_INT, 0},
    {"elapsed_ms", REP_COL_FLOAT, 3}, {"service_ms", REP_COL_FLOAT, 3},
};
static const rep_col disk_file_cols[] = {
    {"file", REP_COL_STR, 0},        {"drive_path", REP_COL_STR, 0}, {"reads", REP_COL_INT, 0},
    {"read_bytes", REP_COL_INT, 0},  {"writes", REP_COL_INT, 0},     {"write_bytes", REP_COL_INT, 0},
    {"elapsed_ms", REP_COL_FLOAT, 3}, {"service_ms", REP_COL_FLOAT, 3}, {"file_objects", REP_COL_INT, 0},
};
static const rep_col files_cols[] = {
    {"file", REP_COL_STR, 0},       {"drive_path", REP_COL_STR, 0}, {"pid", REP_COL_INT, 0},
    {"process", REP_COL_STR, 0},    {"creates", REP_COL_INT, 0},    {"reads", REP_COL_INT, 0},
    {"read_bytes", REP_COL_INT, 0}, {"writes", REP_COL_INT, 0},     {"write_bytes", REP_COL_INT, 0},
};
static const rep_col files_proc_cols[] = {
    {"pid", REP_COL_INT, 0},        {"process", REP_COL_STR, 0}, {"creates", REP_COL_INT, 0},
    {"reads", REP_COL_INT, 0},      {"read_bytes", REP_COL_INT, 0}, {"writes", REP_COL_INT, 0},
    {"write_bytes", REP_COL_INT, 0},
};

static name_ent name_of(const disk *k, uint64_t fo) {
    uint32_t i = rep_map_get(&k->by_fo, fo);
    name_ent e = {0, 0};
    return i == REP_NONE ? e : *(const name_ent *)rep_vec_at(&k->names, i);
}

static void pid_cell(rep_out *o, uint32_t pid) {
    if (pid == ETW_NO_ID) rep_cell_null(o);
    else rep_cell_u64(o, pid);
}

static etw_status d_write(etw_report *r, rep_out *o) {
    disk *k = r->impl;
    etw_status st;
    if (!k->files) {
        st = rep_table_begin(o, "processes", "Disk I/O by process (times: sums, in ms)", disk_proc_cols,
                             sizeof disk_proc_cols / sizeof *disk_proc_cols, 0);
        for (uint32_t i = 0; i < k->procs.count && st == ETW_OK; i++) {
            const io_row *p = rep_vec_at(&k->procs, i);
            pid_cell(o, p->pid);
            rep_cell_cstr(o, rep_pool_str(&k->pool, p->pname));
            rep_cell_u64(o, p->n[0]);
            rep_cell_u64(o, p->bytes[0]);
            rep_cell_u64(o, p->n[1]);
            rep_cell_u64(o, p->bytes[1]);
            rep_cell_f64(o, p->elapsed_ms);
            rep_cell_f64(o, p->service_ms);
        }
        if (st == ETW_OK) st = rep_table_end(o);
        if (st != ETW_OK) return st;
    }
    /* rows of one name merged: the first row of each name gathers the others */
    uint32_t n = k->fobjs.count;
    uint32_t *into = rep_alloc(r, ((size_t)n + 1) * sizeof *into);
    rep_map first = {0};
    if (!into) return ETW_E_NOMEM;
    st = ETW_OK;
    for (uint32_t i = 0; i < n && st == ETW_OK; i++) {
        const io_row *w = rep_vec_at(&k->fobjs, i);
        name_ent e = name_of(k, w->key);
        uint64_t key = k->files ? file_pid_key(e.name ? e.name : (w->key | (1ull << 63)), w->pid)
                                : (e.name ? e.name : (w->key | (1ull << 63)));
        uint32_t f = rep_map_get(&first, key);
        if (f == REP_NONE) {
            into[i] = i;
            st = rep_map_put(r, &first, key, i);
        } else {
            into[i] = f;
        }
    }
    /* every row added to its name's first, in one pass */
    io_row *sums = st == ETW_OK ? rep_alloc(r, ((size_t)n + 1) * sizeof *sums) : NULL;
    uint64_t *nobj = sums ? rep_alloc(r, ((size_t)n + 1) * sizeof *nobj) : NULL;
    if (st == ETW_OK && !nobj) st = ETW_E_NOMEM;
    for (uint32_t i = 0; i < n && st == ETW_OK; i++) {
        const io_row *x = rep_vec_at(&k->fobjs, i);
        io_row *t = &sums[into[i]];
        for (int q = 0; q < 3; q++) t->n[q] += x->n[q];
        t->bytes[0] += x->bytes[0];
        t->bytes[1] += x->bytes[1];
        t->elapsed_ms += x->elapsed_ms;
        t->service_ms += x->service_ms;
        nobj[into[i]]++;
    }
    if (st == ETW_OK) {
        if (k->files) st = rep_table_begin(o, "files", "File I/O by file and process", files_cols,
                                           sizeof files_cols / sizeof *files_cols, 1);
        else st = rep_table_begin(o, "files", "Disk I/O by file (FileObject named by FileIo events)",
                                  disk_file_cols, sizeof disk_file_cols / sizeof *disk_file_cols, 1);
    }
    for (uint32_t i = 0; i < n && st == ETW_OK; i++) {
        if (into[i] != i) continue;
        const io_row *w = rep_vec_at(&k->fobjs, i);
        const io_row sum = sums[i];
        uint64_t objs = nobj[i];
        name_ent e = name_of(k, w->key);
        if (e.name) rep_cell_cstr(o, rep_pool_str(&k->pool, e.name));
        else {
            char b[40];
            snprintf(b, sizeof b, "(FileObject 0x%llx)", (unsigned long long)w->key);
            rep_cell_cstr(o, b);
        }
        rep_cell_cstr(o, rep_pool_str(&k->pool, e.drive));
        if (k->files) {
            pid_cell(o, w->pid);
            rep_cell_cstr(o, rep_pool_str(&k->pool, w->pname));
            rep_cell_u64(o, sum.n[0]);
            rep_cell_u64(o, sum.n[1]);
            rep_cell_u64(o, sum.bytes[0]);
            rep_cell_u64(o, sum.n[2]);
            rep_cell_u64(o, sum.bytes[1]);
        } else {
            rep_cell_u64(o, sum.n[0]);
            rep_cell_u64(o, sum.bytes[0]);
            rep_cell_u64(o, sum.n[1]);
            rep_cell_u64(o, sum.bytes[1]);
            rep_cell_f64(o, sum.elapsed_ms);
            rep_cell_f64(o, sum.service_ms);
            rep_cell_u64(o, objs);
        }
    }
    if (st == ETW_OK) st = rep_table_end(o);
    rep_free(r, into);
    rep_free(r, sums);
    rep_free(r, nobj);
    rep_map_free(r, &first);
    if (st != ETW_OK || !k->files) return st;
    st = rep_table_begin(o, "processes", "File I/O by process", files_proc_cols,
                         sizeof files_proc_cols / sizeof *files_proc_cols, 0);
    for (uint32_t i = 0; i < k->procs.count && st == ETW_OK; i++) {
        const io_row *p = rep_vec_at(&k->procs, i);
        pid_cell(o, p->pid);
        rep_cell_cstr(o, rep_pool_str(&k->pool, p->pname));
        rep_cell_u64(o, p->n[0]);
        rep_cell_u64(o, p->n[1]);
        rep_cell_u64(o, p->bytes[0]);
        rep_cell_u64(o, p->n[2]);
        rep_cell_u64(o, p->bytes[1]);
    }
    return st == ETW_OK ? rep_table_end(o) : st;
}

const rep_vtable etw_rep_disk_vt = {d_init, d_free, d_add, d_skip, NULL, d_write, d_memory};
const rep_vtable etw_rep_files_vt = {f_init, d_free, d_add, d_skip, NULL, d_write, d_memory};
