/* etw_report_processes.c - the processes of a trace as a tree: pid, parent,
 * image, command line, user SID, session, start and stop, exit code.
 *
 * Sources (docs/reports.md): the kernel Process class (3d6fa8d0-...:
 * Start 1, End 2, DCStart 3, DCEnd 4: the rundown at the start and end of
 * a session; fields of src/source/etw_kernel_process.c) and the manifest
 * provider Microsoft-Windows-Kernel-Process (ProcessStart id 1, ProcessStop
 * id 2, ProcessRundown id 15; its fields ProcessID, ParentProcessID,
 * SessionID, ImageName, ExitCode). A pid names one row from its start to
 * its end; a start after an end (a reused pid) opens a new row. A process
 * seen only in rundown (or first by its end) started before the trace. */
#include <stdio.h>
#include <string.h>

#include "format/etw_text.h"
#include "report/etw_report_internal.h"

typedef struct proc_row {
    uint32_t pid, ppid, session;
    uint32_t image, cmdline, sid; /* pool offsets */
    uint32_t prev;                /* the previous row of the same pid, REP_NONE */
    int64_t start;                /* FILETIME; 0: before the trace */
    int64_t end;                  /* FILETIME; 0: not seen */
    int32_t exit_code;
    uint8_t has_exit, has_session, ended, kernel, manifest;
} proc_row;

typedef struct procs {
    rep_vec rows;
    rep_map by_pid; /* pid -> latest row */
    rep_pool pool;
    etw_text scratch;
} procs;

static etw_status p_init(etw_report *r) {
    procs *p = rep_alloc(r, sizeof *p);
    if (!p) return ETW_E_NOMEM;
    rep_vec_init(&p->rows, sizeof(proc_row));
    etw_text_init(&p->scratch, &r->alloc);
    r->impl = p;
    return ETW_OK;
}

static void p_free(etw_report *r) {
    procs *p = r->impl;
    if (!p) return;
    rep_vec_free(r, &p->rows);
    rep_map_free(r, &p->by_pid);
    rep_pool_free(r, &p->pool);
    etw_text_free(&p->scratch);
    rep_free(r, p);
}

static size_t p_memory(const etw_report *r) {
    const procs *p = r->impl;
    return (size_t)p->rows.cap * p->rows.elem + (size_t)p->by_pid.cap * 12 + p->pool.cap +
           (size_t)p->pool.index.cap * 12 + p->scratch.cap;
}

enum { K_PID, K_PPID, K_SESSION, K_EXIT, K_SID, K_IMAGE, K_CMD, K_N };
static const char *const kernel_fields[K_N] = {"ProcessId", "ParentId", "SessionId", "ExitStatus",
                                               "UserSID", "ImageFileName", "CommandLine"};
enum { M_PID, M_PPID, M_SESSION, M_EXIT, M_IMAGE, M_N };
static const char *const manifest_fields[M_N] = {"ProcessID", "ParentProcessID", "SessionID", "ExitCode",
                                                 "ImageName"};

typedef enum { EV_START, EV_END, EV_RUNDOWN } ev_kind;

static etw_status put_str(etw_report *r, procs *p, uint32_t *dst, const etw_value *v, int basename) {
    char buf[4096];
    size_t n = rep_value_text(v, buf, sizeof buf);
    const char *s = buf;
    if (basename) s = rep_basename(buf, n, &n);
    if (!n) return ETW_OK;
    return rep_pool_add(r, &p->pool, s, n, dst);
}

static etw_status put_sid(etw_report *r, procs *p, uint32_t *dst, const etw_value *v) {
    /* WBEMSID: TOKEN_USER (two pointers) then the SID */
    uint32_t off = 2u * (v->pointer_size == 4 ? 4u : 8u);
    if (v->in_type != ETW_INTYPE_WBEMSID || v->size <= off + 8) return ETW_OK;
    etw_text_clear(&p->scratch);
    etw_text_sid(&p->scratch, v->data + off, v->size - off);
    if (etw_text_status(&p->scratch) != ETW_OK) return ETW_E_NOMEM;
    return rep_pool_add(r, &p->pool, p->scratch.data, p->scratch.len, dst);
}

static etw_status p_add(etw_report *r, etw_decoder *d, const etw_event *ev, const etw_schema *s) {
    procs *p = r->impl;
    if (!s) return ETW_OK;
    int kernel = 0;
    ev_kind k;
    if (etw_guid_equal(&s->provider, &rep_guid_process) && s->source == ETW_SOURCE_MOF) {
        kernel = 1;
        switch (ev->opcode) {
        case 1: k = EV_START; break;
        case 2: k = EV_END; break;
        case 3:
        case 4: k = EV_RUNDOWN; break;
        default: return ETW_OK;
        }
    } else if (etw_guid_equal(&s->provider, &rep_guid_kernel_process)) {
        switch (s->event_id) {
        case 1: k = EV_START; break;
        case 2: k = EV_END; break;
        case 15: k = EV_RUNDOWN; break;
        default: return ETW_OK;
        }
    } else {
        return ETW_OK;
    }
    etw_value v[K_N];
    uint32_t have;
    if (kernel) {
        have = rep_fields(r, d, ev, s, kernel_fields, K_N, v);
    } else {
        etw_value mv[M_N];
        uint32_t mh = rep_fields(r, d, ev, s, manifest_fields, M_N, mv);
        /* the same slots as the kernel's */
        have = 0;
        static const int to_k[M_N] = {K_PID, K_PPID, K_SESSION, K_EXIT, K_IMAGE};
        for (int i = 0; i < M_N; i++)
            if (mh & (1u << i)) {
                v[to_k[i]] = mv[i];
                have |= 1u << to_k[i];
            }
    }
    if (!(have & (1u << K_PID))) return ETW_OK;
    r->used++;
    uint32_t pid = (uint32_t)rep_value_u64(&v[K_PID]);
    uint32_t cur = rep_map_get(&p->by_pid, pid);
    proc_row *row = cur != REP_NONE ? rep_vec_at(&p->rows, cur) : NULL;
    etw_status st = ETW_OK;
    /* a row for this event: the pid's open row, else a new one */
    int fresh = 0;
    if (k == EV_START) {
        /* the same start told by both providers keeps one row */
        if (!row || row->ended || !row->start || (kernel ? row->kernel : row->manifest)) fresh = 1;
    } else if (!row || row->ended) {
        fresh = 1;
    }
    if (fresh) {
        proc_row *n = rep_vec_push(r, &p->rows, rep_max_rows(r), &st);
        if (!n) return st;
        n->prev = cur;
        n->pid = pid;
        if (k == EV_START) n->start = ev->timestamp;
        cur = p->rows.count - 1;
        if ((st = rep_map_put(r, &p->by_pid, pid, cur)) != ETW_OK) return st;
        row = n;
    }
    if (kernel) row->kernel = 1;
    else row->manifest = 1;
    if (k == EV_END) {
        row->ended = 1;
        row->end = ev->timestamp;
        if (have & (1u << K_EXIT)) {
            row->exit_code = (int32_t)(uint32_t)rep_value_u64(&v[K_EXIT]);
            row->has_exit = 1;
        }
    }
    if ((have & (1u << K_PPID)) && (k != EV_END || !row->ppid)) row->ppid = (uint32_t)rep_value_u64(&v[K_PPID]);
    if ((have & (1u << K_SESSION)) && !row->has_session) {
        row->session = (uint32_t)rep_value_u64(&v[K_SESSION]);
        row->has_session = 1;
    }
    if ((have & (1u << K_IMAGE)) && !row->image) st = put_str(r, p, &row->image, &v[K_IMAGE], !kernel);
    if (st == ETW_OK && (have & (1u << K_CMD)) && !row->cmdline) st = put_str(r, p, &row->cmdline, &v[K_CMD], 0);
    if (st == ETW_OK && (have & (1u << K_SID)) && !row->sid) st = put_sid(r, p, &row->sid, &v[K_SID]);
    return st;
}

/* The row of the parent of row i: the newest row of its ppid that started
 * no later than it. */
static uint32_t parent_of(const procs *p, uint32_t i) {
    const proc_row *c = rep_vec_at(&p->rows, i);
    if (c->ppid == c->pid) return REP_NONE;
    for (uint32_t j = rep_map_get(&p->by_pid, c->ppid); j != REP_NONE;) {
        const proc_row *q = rep_vec_at(&p->rows, j);
        if (j != i && q->start <= c->start) return j;
        j = q->prev;
    }
    return REP_NONE;
}

static const rep_col cols[] = {
    {"pid", REP_COL_INT, 0},           {"parent_pid", REP_COL_INT, 0}, {"depth", REP_COL_INT, 0},
    {"image", REP_COL_STR, 0},         {"start_s", REP_COL_FLOAT, 6},  {"end_s", REP_COL_FLOAT, 6},
    {"exit_code", REP_COL_INT, 0},     {"session", REP_COL_INT, 0},    {"user_sid", REP_COL_STR, 0},
    {"source", REP_COL_STR, 0},        {"command_line", REP_COL_STR, 0},
};

static void write_row(etw_report *r, rep_out *o, const procs *p, const proc_row *w, uint32_t depth) {
    rep_cell_u64(o, w->pid);
    rep_cell_u64(o, w->ppid);
    rep_cell_u64(o, depth);
    const char *img = rep_pool_str(&p->pool, w->image);
    if (rep_out_format(o) == ETW_REPORT_TEXT) { /* the tree, drawn by indentation */
        char b[600];
        uint32_t ind = depth > 32 ? 32 : depth;
        memset(b, ' ', ind * 2);
        int n = snprintf(b + ind * 2, sizeof b - ind * 2, "%s", *img ? img : "?");
        size_t len = ind * 2 + (n < 0 ? 0 : (size_t)n);
        rep_cell_str(o, b, len < sizeof b ? len : sizeof b - 1);
    } else {
        rep_cell_cstr(o, img);
    }
    if (w->start) rep_cell_f64(o, rep_seconds(r, w->start));
    else rep_cell_null(o);
    if (w->ended) rep_cell_f64(o, rep_seconds(r, w->end));
    else rep_cell_null(o);
    if (w->has_exit) rep_cell_i64(o, w->exit_code);
    else rep_cell_null(o);
    if (w->has_session) rep_cell_u64(o, w->session);
    else rep_cell_null(o);
    rep_cell_cstr(o, rep_pool_str(&p->pool, w->sid));
    rep_cell_cstr(o, w->kernel && w->manifest ? "both" : w->kernel ? "kernel" : "kernel-process");
    rep_cell_cstr(o, rep_pool_str(&p->pool, w->cmdline));
}

static etw_status p_write(etw_report *r, rep_out *o) {
    procs *p = r->impl;
    uint32_t n = p->rows.count;
    etw_status st = rep_table_begin(o, "processes", "Processes (tree; start/end in seconds from the trace start, "
                                                    "no start: before the trace)", cols, sizeof cols / sizeof *cols, 1);
    if (st != ETW_OK) return st;
    uint32_t *parent = rep_alloc(r, ((size_t)n + 1) * sizeof *parent);
    uint32_t *first = rep_alloc(r, ((size_t)n + 1) * sizeof *first);
    uint32_t *next = rep_alloc(r, ((size_t)n + 1) * sizeof *next);
    uint32_t *stack = rep_alloc(r, ((size_t)n + 1) * sizeof *stack);
    uint8_t *seen = rep_alloc(r, (size_t)n + 1);
    if (!parent || !first || !next || !stack || !seen) {
        st = ETW_E_NOMEM;
        goto done;
    }
    for (uint32_t i = 0; i < n; i++) first[i] = next[i] = REP_NONE;
    /* children in start order: link them from the last row back */
    for (uint32_t i = n; i-- > 0;) {
        parent[i] = parent_of(p, i);
        if (parent[i] != REP_NONE) {
            next[i] = first[parent[i]];
            first[parent[i]] = i;
        }
    }
    /* roots in row order (their order in the trace), then anything a
     * parent loop left unvisited */
    for (int pass = 0; pass < 2; pass++)
        for (uint32_t root = 0; root < n; root++) {
            if (seen[root] || (pass == 0 && parent[root] != REP_NONE)) continue;
            uint32_t sp = 0;
            stack[sp++] = root;
            seen[root] = 1;
            /* depth-first: a row's depth is the stack height when written;
             * first[i] walks i's children (each edge taken once) */
            while (sp) {
                uint32_t i = stack[sp - 1];
                if (seen[i] == 1) {
                    write_row(r, o, p, rep_vec_at(&p->rows, i), sp - 1);
                    seen[i] = 2;
                }
                uint32_t c = first[i];
                while (c != REP_NONE && seen[c]) c = next[c];
                if (c != REP_NONE) {
                    first[i] = next[c];
                    seen[c] = 1;
                    stack[sp++] = c;
                } else {
                    sp--;
                }
            }
        }
    st = rep_table_end(o);
done:
    rep_free(r, parent);
    rep_free(r, first);
    rep_free(r, next);
    rep_free(r, stack);
    rep_free(r, seen);
    return st;
}

const rep_vtable etw_rep_processes_vt = {p_init, p_free, p_add, NULL, NULL, p_write, p_memory};
