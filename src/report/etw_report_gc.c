/* etw_report_gc.c - every .NET garbage collection of each process, with the
 * columns of PerfView's GCStats that the events carry.
 *
 * Events (Microsoft-Windows-DotNETRuntime, e13c0d23-..., ClrEtwAll.man):
 * GCStart 1 (Count, Depth, Reason, Type), GCEnd 2 (Count, Depth),
 * GCRestartEEEnd 3, GCHeapStats 4 (GenerationSize0..4, TotalPromotedSize0..4),
 * GCSuspendEEEnd 8, GCSuspendEEBegin 9 (Reason). Pairing, per process, as
 * TraceEvent's TraceManagedProcess does (docs/reports.md):
 *   - a suspension counts when its Reason is SuspendForGC (1) or
 *     SuspendForGCPrep (6); its RestartEEEnd is the next one on the thread
 *     that suspended;
 *   - a GCStart whose Count equals the process's last GC is the same GC
 *     told again (.NET 4.5 writes GCStart v1 and v2);
 *   - a GC's pause runs from the SuspendEEBegin before it to the
 *     RestartEEEnd after its GCEnd; the ephemeral GC a background GC starts
 *     with pauses from its own GCStart; a background GC's pause is the sum of
 *     its suspensions (its first: SuspendEEBegin to RestartEEEnd; each
 *     SuspendForGCPrep one after: added);
 *   - GCEnd closes the open GC of its Count; GCHeapStats belongs to the GC
 *     that ended last. */
#include <stdio.h>
#include <string.h>

#include "report/etw_report_internal.h"

typedef struct gc_row {
    uint32_t pid;
    uint32_t number, gen, reason, type;
    uint32_t reason_name, type_name; /* pool offsets */
    int64_t start, end;              /* FILETIME; end 0: no GCEnd */
    int64_t pause_start;
    double pause_ms;
    uint64_t gen_size[5], promoted[5];
    uint8_t has_pause, has_heap, gens; /* gens: generations GCHeapStats gave (4 or 5) */
} gc_row;

typedef struct gc_proc {
    uint32_t pid;
    uint32_t last, open_fg, open_bgc, last_ended; /* rows, REP_NONE */
    uint32_t suspend_tid;
    int64_t suspend_start, suspend_end;
    uint8_t in_suspend, suspend_prep;
    uint64_t gcs, suspensions;
    uint64_t gen[3], paused; /* the summary's, computed when written */
    double total, max;
} gc_proc;

typedef struct gcs {
    rep_vec rows, procs;
    rep_map by_pid;
    rep_pool pool;
    uint64_t duplicates, unpaired_restarts;
} gcs;

static etw_status g_init(etw_report *r) {
    gcs *g = rep_alloc(r, sizeof *g);
    if (!g) return ETW_E_NOMEM;
    rep_vec_init(&g->rows, sizeof(gc_row));
    rep_vec_init(&g->procs, sizeof(gc_proc));
    r->impl = g;
    return ETW_OK;
}

static void g_free(etw_report *r) {
    gcs *g = r->impl;
    if (!g) return;
    rep_vec_free(r, &g->rows);
    rep_vec_free(r, &g->procs);
    rep_map_free(r, &g->by_pid);
    rep_pool_free(r, &g->pool);
    rep_free(r, g);
}

static size_t g_memory(const etw_report *r) {
    const gcs *g = r->impl;
    return (size_t)g->rows.cap * g->rows.elem + (size_t)g->procs.cap * g->procs.elem + (size_t)g->by_pid.cap * 12 +
           g->pool.cap + (size_t)g->pool.index.cap * 12;
}

static gc_proc *proc_of(etw_report *r, gcs *g, uint32_t pid, etw_status *st) {
    uint32_t i = rep_map_get(&g->by_pid, pid);
    if (i != REP_NONE) return rep_vec_at(&g->procs, i);
    gc_proc *p = rep_vec_push(r, &g->procs, rep_max_rows(r), st);
    if (!p) return NULL;
    p->pid = pid;
    p->last = p->open_fg = p->open_bgc = p->last_ended = REP_NONE;
    if ((*st = rep_map_put(r, &g->by_pid, pid, g->procs.count - 1)) != ETW_OK) return NULL;
    return p;
}

static gc_row *row(gcs *g, uint32_t i) {
    return i == REP_NONE ? NULL : rep_vec_at(&g->rows, i);
}

static double ms(int64_t a, int64_t b) {
    return (double)(b - a) / 1e4;
}

enum { S_COUNT, S_DEPTH, S_REASON, S_TYPE, S_N };
static const char *const start_fields[S_N] = {"Count", "Depth", "Reason", "Type"};
static const char *const end_fields[] = {"Count"};
static const char *const suspend_fields[] = {"Reason"};
static const char *const heap_fields[] = {
    "GenerationSize0",    "GenerationSize1",    "GenerationSize2",    "GenerationSize3",    "GenerationSize4",
    "TotalPromotedSize0", "TotalPromotedSize1", "TotalPromotedSize2", "TotalPromotedSize3", "TotalPromotedSize4",
};

static etw_status map_name(etw_report *r, gcs *g, const etw_value *v, uint32_t *dst) {
    const char *n = rep_value_map_name(v);
    return n ? rep_pool_add(r, &g->pool, n, strlen(n), dst) : ETW_OK;
}

static etw_status on_start(etw_report *r, gcs *g, gc_proc *p, etw_decoder *d, const etw_event *ev,
                           const etw_schema *s) {
    etw_value v[S_N];
    uint32_t have = rep_fields(r, d, ev, s, start_fields, S_N, v);
    if (!(have & 1u)) return ETW_OK;
    uint32_t count = (uint32_t)rep_value_u64(&v[S_COUNT]);
    gc_row *last = row(g, p->last);
    if (last && last->number == count) { /* the same GC told again (v1 and v2) */
        g->duplicates++;
        return ETW_OK;
    }
    etw_status st = ETW_OK;
    gc_row *w = rep_vec_push(r, &g->rows, rep_max_rows(r), &st);
    if (!w) return st;
    uint32_t idx = g->rows.count - 1;
    w->pid = p->pid;
    w->number = count;
    w->gen = (uint32_t)rep_value_u64(&v[S_DEPTH]);
    w->reason = (uint32_t)rep_value_u64(&v[S_REASON]);
    w->type = (uint32_t)rep_value_u64(&v[S_TYPE]);
    if ((have & (1u << S_REASON)) && (st = map_name(r, g, &v[S_REASON], &w->reason_name)) != ETW_OK) return st;
    if ((have & (1u << S_TYPE)) && (st = map_name(r, g, &v[S_TYPE], &w->type_name)) != ETW_OK) return st;
    w->start = ev->timestamp;
    gc_row *bgc = row(g, p->open_bgc);
    int ephemeral_at_bgc = bgc && w->type == 0;
    w->pause_start = p->in_suspend && !ephemeral_at_bgc ? p->suspend_start : ev->timestamp;
    if (w->type == 1) { /* background: its first suspension so far */
        p->open_bgc = idx;
        if (p->in_suspend) {
            w->pause_ms = ms(p->suspend_start, p->suspend_end ? p->suspend_end : ev->timestamp);
            w->has_pause = 1;
        }
    } else {
        p->open_fg = idx;
    }
    p->last = idx;
    p->gcs++;
    return ETW_OK;
}

static etw_status g_add(etw_report *r, etw_decoder *d, const etw_event *ev, const etw_schema *s) {
    gcs *g = r->impl;
    if (!s || !etw_guid_equal(&ev->provider, &rep_guid_clr) || ev->form != ETW_FORM_EVENT_HEADER) return ETW_OK;
    uint16_t id = s->event_id;
    if (id != 1 && id != 2 && id != 3 && id != 4 && id != 8 && id != 9) return ETW_OK;
    r->used++;
    etw_status st = ETW_OK;
    gc_proc *p = proc_of(r, g, ev->pid, &st);
    if (!p) return st;
    etw_value v[10];
    switch (id) {
    case 9: { /* SuspendEEBegin */
        uint32_t reason = rep_fields(r, d, ev, s, suspend_fields, 1, v) ? (uint32_t)rep_value_u64(&v[0]) : 1;
        if (reason != 1 && reason != 6) return ETW_OK; /* not for a GC: not tracked */
        p->in_suspend = 1;
        p->suspend_prep = reason == 6;
        p->suspend_tid = ev->tid;
        p->suspend_start = ev->timestamp;
        p->suspend_end = 0;
        p->suspensions++;
        return ETW_OK;
    }
    case 8: /* SuspendEEEnd */
        if (p->in_suspend && ev->tid == p->suspend_tid) p->suspend_end = ev->timestamp;
        return ETW_OK;
    case 1:
        return on_start(r, g, p, d, ev, s);
    case 2: { /* GCEnd: the open GC of this Count */
        uint32_t count = rep_fields(r, d, ev, s, end_fields, 1, v) ? (uint32_t)rep_value_u64(&v[0]) : UINT32_MAX;
        uint32_t cand[2] = {p->open_fg, p->open_bgc};
        for (int i = 0; i < 2; i++) {
            gc_row *w = row(g, cand[i]);
            if (w && !w->end && (w->number == count || count == UINT32_MAX)) {
                w->end = ev->timestamp;
                p->last_ended = cand[i];
                break;
            }
        }
        return ETW_OK;
    }
    case 4: { /* GCHeapStats: the GC that ended last */
        gc_row *w = row(g, p->last_ended);
        if (!w || w->has_heap) return ETW_OK;
        uint32_t have = rep_fields(r, d, ev, s, heap_fields, 10, v);
        for (int i = 0; i < 5; i++) {
            if (have & (1u << i)) {
                w->gen_size[i] = rep_value_u64(&v[i]);
                w->gens = (uint8_t)(i + 1);
            }
            if (have & (1u << (5 + i))) w->promoted[i] = rep_value_u64(&v[5 + i]);
        }
        w->has_heap = have != 0;
        return ETW_OK;
    }
    case 3: { /* RestartEEEnd */
        if (!p->in_suspend || ev->tid != p->suspend_tid) {
            g->unpaired_restarts++;
            return ETW_OK;
        }
        p->in_suspend = 0;
        gc_row *fg = row(g, p->open_fg), *bgc = row(g, p->open_bgc);
        if (fg) {
            if (fg->end) {
                fg->pause_ms = ms(fg->pause_start, ev->timestamp);
                fg->has_pause = 1;
                p->open_fg = REP_NONE;
            } else { /* no GCEnd yet (a concurrent GC of .NET 2.0): a pause within it */
                fg->pause_ms += ms(p->suspend_start, ev->timestamp);
                fg->has_pause = 1;
            }
        } else if (bgc) {
            if (p->suspend_prep) bgc->pause_ms += ms(p->suspend_start, ev->timestamp);
            else bgc->pause_ms = ms(bgc->pause_start, ev->timestamp);
            bgc->has_pause = 1;
            if (bgc->end) p->open_bgc = REP_NONE;
        }
        return ETW_OK;
    }
    default:
        return ETW_OK;
    }
}

static const rep_col gc_cols[] = {
    {"pid", REP_COL_INT, 0},         {"gc", REP_COL_INT, 0},           {"gen", REP_COL_INT, 0},
    {"reason", REP_COL_STR, 0},      {"type", REP_COL_STR, 0},         {"start_s", REP_COL_FLOAT, 6},
    {"pause_ms", REP_COL_FLOAT, 3},  {"duration_ms", REP_COL_FLOAT, 3}, {"gen0_after", REP_COL_INT, 0},
    {"gen1_after", REP_COL_INT, 0},  {"gen2_after", REP_COL_INT, 0},  {"loh_after", REP_COL_INT, 0},
    {"poh_after", REP_COL_INT, 0},   {"heap_after", REP_COL_INT, 0},  {"promoted", REP_COL_INT, 0},
};

static const rep_col sum_cols[] = {
    {"pid", REP_COL_INT, 0},           {"gcs", REP_COL_INT, 0},          {"gen0", REP_COL_INT, 0},
    {"gen1", REP_COL_INT, 0},          {"gen2", REP_COL_INT, 0},         {"total_pause_ms", REP_COL_FLOAT, 3},
    {"max_pause_ms", REP_COL_FLOAT, 3}, {"mean_pause_ms", REP_COL_FLOAT, 3},
};

static void num_or_name(rep_out *o, const gcs *g, uint32_t name, uint32_t num) {
    if (name) rep_cell_cstr(o, rep_pool_str(&g->pool, name));
    else {
        char b[16];
        snprintf(b, sizeof b, "%u", num);
        rep_cell_cstr(o, b);
    }
}

static etw_status g_write(etw_report *r, rep_out *o) {
    gcs *g = r->impl;
    etw_status st = rep_table_begin(o, "summary", "GC summary by process (pause: SuspendEE to RestartEE)", sum_cols,
                                    sizeof sum_cols / sizeof *sum_cols, 0);
    /* per process, in one pass over the GCs */
    for (uint32_t i = 0; i < g->procs.count; i++) {
        gc_proc *p = rep_vec_at(&g->procs, i);
        memset(p->gen, 0, sizeof p->gen);
        p->total = p->max = 0;
        p->paused = 0;
    }
    for (uint32_t j = 0; j < g->rows.count; j++) {
        const gc_row *w = rep_vec_at(&g->rows, j);
        uint32_t pi = rep_map_get(&g->by_pid, w->pid);
        if (pi == REP_NONE) continue;
        gc_proc *p = rep_vec_at(&g->procs, pi);
        if (w->gen < 3) p->gen[w->gen]++;
        if (w->has_pause) {
            p->total += w->pause_ms;
            if (w->pause_ms > p->max) p->max = w->pause_ms;
            p->paused++;
        }
    }
    for (uint32_t i = 0; i < g->procs.count && st == ETW_OK; i++) {
        const gc_proc *p = rep_vec_at(&g->procs, i);
        if (!p->gcs) continue;
        rep_cell_u64(o, p->pid);
        rep_cell_u64(o, p->gcs);
        for (int k = 0; k < 3; k++) rep_cell_u64(o, p->gen[k]);
        rep_cell_f64(o, p->total);
        rep_cell_f64(o, p->max);
        if (p->paused) rep_cell_f64(o, p->total / (double)p->paused);
        else rep_cell_null(o);
    }
    if (st == ETW_OK) st = rep_table_end(o);
    if (st == ETW_OK)
        st = rep_table_begin(o, "gcs", "GCs (sizes in bytes after the GC, from GCHeapStats)", gc_cols,
                             sizeof gc_cols / sizeof *gc_cols, 1);
    for (uint32_t j = 0; j < g->rows.count && st == ETW_OK; j++) {
        const gc_row *w = rep_vec_at(&g->rows, j);
        rep_cell_u64(o, w->pid);
        rep_cell_u64(o, w->number);
        rep_cell_u64(o, w->gen);
        num_or_name(o, g, w->reason_name, w->reason);
        num_or_name(o, g, w->type_name, w->type);
        rep_cell_f64(o, rep_seconds(r, w->start));
        if (w->has_pause) rep_cell_f64(o, w->pause_ms);
        else rep_cell_null(o);
        if (w->end) rep_cell_f64(o, ms(w->start, w->end));
        else rep_cell_null(o);
        uint64_t total = 0, promoted = 0;
        for (int k = 0; k < 5; k++) {
            total += w->gen_size[k];
            promoted += w->promoted[k];
            if (w->has_heap && k < w->gens) rep_cell_u64(o, w->gen_size[k]);
            else rep_cell_null(o);
        }
        if (w->has_heap) {
            rep_cell_u64(o, total);
            rep_cell_u64(o, promoted);
        } else {
            rep_cell_null(o);
            rep_cell_null(o);
        }
    }
    if (st == ETW_OK) st = rep_table_end(o);
    if (g->duplicates) {
        char b[160];
        snprintf(b, sizeof b, "%llu GCStart events repeated the Count of the GC before them (one GC told twice)",
                 (unsigned long long)g->duplicates);
        rep_note(o, b);
    }
    return st;
}

const rep_vtable etw_rep_gc_vt = {g_init, g_free, g_add, NULL, NULL, g_write, g_memory};
