/* etw_report_cpu.c - CPU samples by process, then by module and function
 * (the innermost frame of each sample's stack), built on the profile stage
 * (etw_profile.h): the profile reads every event (stacks, images, JIT
 * methods come in events a selection leaves out) and counts as samples
 * the selected kernel PerfInfo/Sample events its idle filter keeps. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "etwdecode/etw_profile.h"
#include "report/etw_report_internal.h"

typedef struct cpu_row {
    uint32_t pid;
    uint32_t label; /* pool: module or function; processes: the image name */
    uint64_t samples, with_stack;
    uint64_t proc_samples; /* when sorting: its process's samples */
} cpu_row;

typedef struct cpu {
    etw_profile *prof;
    int selected; /* the event being added is selected */
    rep_vec procs, mods, fns;
    rep_map by_pid, by_mod, by_fn;
    rep_pool pool;
    uint64_t total;
} cpu;

static int pick(void *ctx, const etw_event *ev, const etw_schema *s, uint32_t pid, uint32_t tid, double *weight) {
    cpu *c = ctx;
    (void)s;
    (void)pid;
    (void)tid;
    if (!c->selected || !etw_guid_equal(&ev->provider, &rep_guid_perfinfo) || ev->opcode != 46) return 0;
    *weight = 1.0;
    return 1;
}

static etw_status c_init(etw_report *r) {
    cpu *c = rep_alloc(r, sizeof *c);
    if (!c) return ETW_E_NOMEM;
    r->impl = c;
    rep_vec_init(&c->procs, sizeof(cpu_row));
    rep_vec_init(&c->mods, sizeof(cpu_row));
    rep_vec_init(&c->fns, sizeof(cpu_row));
    etw_profile_options po;
    memset(&po, 0, sizeof po);
    po.allocator = r->opt.allocator;
    po.decoder = r->opt.decoder;
    po.is_sample = pick;
    po.sample_ctx = c;
    po.symbol_paths = r->opt.symbol_paths;
    po.nsymbol_paths = r->opt.nsymbol_paths;
    po.on_diag = r->opt.on_diag;
    po.diag_ctx = r->opt.diag_ctx;
    return etw_profile_new(&c->prof, &po);
}

static void c_free(etw_report *r) {
    cpu *c = r->impl;
    if (!c) return;
    etw_profile_free(c->prof);
    rep_vec_free(r, &c->procs);
    rep_vec_free(r, &c->mods);
    rep_vec_free(r, &c->fns);
    rep_map_free(r, &c->by_pid);
    rep_map_free(r, &c->by_mod);
    rep_map_free(r, &c->by_fn);
    rep_pool_free(r, &c->pool);
    rep_free(r, c);
}

static size_t c_memory(const etw_report *r) {
    const cpu *c = r->impl;
    etw_profile_stats ps;
    etw_profile_stats_get(c->prof, &ps);
    return ps.memory_bytes + (size_t)(c->procs.cap + c->mods.cap + c->fns.cap) * sizeof(cpu_row) +
           (size_t)(c->by_pid.cap + c->by_mod.cap + c->by_fn.cap) * 12 + c->pool.cap + (size_t)c->pool.index.cap * 12;
}

static etw_status c_feed(etw_report *r, const etw_event *ev, const etw_schema *s, int selected) {
    cpu *c = r->impl;
    c->selected = selected;
    if (selected && etw_guid_equal(&ev->provider, &rep_guid_perfinfo) && ev->opcode == 46) r->used++;
    return etw_profile_add(c->prof, ev, s);
}

static etw_status c_add(etw_report *r, etw_decoder *d, const etw_event *ev, const etw_schema *s) {
    (void)d;
    return c_feed(r, ev, s, 1);
}

static etw_status c_skip(etw_report *r, etw_decoder *d, const etw_event *ev, const etw_schema *s) {
    (void)d;
    return c_feed(r, ev, s, 0);
}

static cpu_row *tally(etw_report *r, cpu *c, rep_vec *v, rep_map *m, uint32_t pid, const char *label, size_t len,
                      etw_status *st) {
    uint32_t off = 0;
    if ((*st = rep_pool_add(r, &c->pool, label, len, &off)) != ETW_OK) return NULL;
    uint64_t key = (uint64_t)pid << 32 | off;
    uint32_t i = rep_map_get(m, key);
    if (i != REP_NONE) return rep_vec_at(v, i);
    cpu_row *w = rep_vec_push(r, v, rep_max_rows(r), st);
    if (!w) return NULL;
    w->pid = pid;
    w->label = off;
    if ((*st = rep_map_put(r, m, key, v->count - 1)) != ETW_OK) return NULL;
    return w;
}

static etw_status c_finish(etw_report *r) {
    cpu *c = r->impl;
    etw_status st = etw_profile_finish(c->prof);
    if (st != ETW_OK) return st;
    size_t ns = etw_profile_sample_count(c->prof);
    uint32_t nframes = etw_profile_frame_count(c->prof);
    char label[512];
    for (size_t i = 0; i < ns; i++) {
        etw_profile_sample sm;
        if (etw_profile_sample_at(c->prof, i, &sm) != ETW_OK) continue;
        const char *pn = NULL;
        size_t pl = 0;
        if (etw_profile_process_name(c->prof, sm.pid, &pn, &pl) != ETW_OK) pn = NULL, pl = 0;
        cpu_row *p = tally(r, c, &c->procs, &c->by_pid, sm.pid, pn ? pn : "", pl, &st);
        if (st != ETW_OK) return st;
        c->total += sm.count;
        if (p) p->samples += sm.count;
        if (sm.stack == ETW_STACK_NONE) continue;
        if (p) p->with_stack += sm.count;
        uint32_t f = etw_profile_stack_frame(c->prof, sm.stack); /* the innermost frame */
        etw_frame_info fi;
        if (f >= nframes || etw_profile_frame(c->prof, f, &fi) != ETW_OK) continue;
        const char *mod = fi.module && fi.module_len && fi.kind != ETW_FRAME_ADDRESS ? fi.module
                          : fi.kind == ETW_FRAME_JIT                                ? "(.NET JIT code)"
                                                                                     : "(unknown)";
        size_t ml = mod == fi.module ? fi.module_len : strlen(mod);
        if (ml > 400) ml = 400;
        size_t fl;
        if ((fi.kind == ETW_FRAME_PDB || fi.kind == ETW_FRAME_JIT) && fi.function && fi.function_len) {
            etw_frame_info fn = fi;
            fn.offset = 0; /* functions without the offset */
            fl = etw_frame_label(&fn, label, sizeof label);
        } else {
            fl = (size_t)snprintf(label, sizeof label, "%.*s!?", (int)ml, mod);
        }
        if (fl >= sizeof label) fl = sizeof label - 1;
        cpu_row *m = tally(r, c, &c->mods, &c->by_mod, sm.pid, mod, ml, &st);
        if (st != ETW_OK) return st;
        if (m) m->samples += sm.count;
        cpu_row *fr = tally(r, c, &c->fns, &c->by_fn, sm.pid, label, fl, &st);
        if (st != ETW_OK) return st;
        if (fr) fr->samples += sm.count;
    }
    return ETW_OK;
}

static int by_samples(const void *a, const void *b) {
    const cpu_row *x = a, *y = b;
    if (x->proc_samples != y->proc_samples) return x->proc_samples > y->proc_samples ? -1 : 1;
    if (x->pid != y->pid) return x->pid < y->pid ? -1 : 1;
    if (x->samples != y->samples) return x->samples > y->samples ? -1 : 1;
    return x->label < y->label ? -1 : x->label > y->label;
}

static const rep_col proc_cols[] = {
    {"pid", REP_COL_INT, 0},        {"process", REP_COL_STR, 0},     {"samples", REP_COL_INT, 0},
    {"percent", REP_COL_FLOAT, 2},  {"with_stack", REP_COL_INT, 0},
};
static const rep_col mod_cols[] = {
    {"pid", REP_COL_INT, 0},       {"module", REP_COL_STR, 0}, {"samples", REP_COL_INT, 0},
    {"percent", REP_COL_FLOAT, 2},
};
static const rep_col fn_cols[] = {
    {"pid", REP_COL_INT, 0},       {"function", REP_COL_STR, 0}, {"samples", REP_COL_INT, 0},
    {"percent", REP_COL_FLOAT, 2},
};

static double pct(uint64_t a, uint64_t b) {
    return b ? 100.0 * (double)a / (double)b : 0.0;
}

/* rows sorted by process (most samples first), then by samples: the top N of each */
static etw_status top_table(etw_report *r, cpu *c, rep_out *o, rep_vec *v, const char *name, const char *title,
                            const rep_col *cols) {
    /* each row's process total, through a pid -> process row map */
    rep_map tot = {0};
    etw_status st = ETW_OK;
    for (uint32_t j = 0; j < c->procs.count && st == ETW_OK; j++)
        st = rep_map_put(r, &tot, ((const cpu_row *)rep_vec_at(&c->procs, j))->pid, j);
    for (uint32_t i = 0; i < v->count && st == ETW_OK; i++) {
        cpu_row *w = rep_vec_at(v, i);
        uint32_t j = rep_map_get(&tot, w->pid);
        w->proc_samples = j == REP_NONE ? 0 : ((const cpu_row *)rep_vec_at(&c->procs, j))->samples;
    }
    rep_map_free(r, &tot);
    if (st != ETW_OK) return st;
    if (v->count) qsort(v->data, v->count, v->elem, by_samples);
    uint32_t top = r->opt.top ? r->opt.top : 10, shown = 0, pid = 0;
    st = rep_table_begin(o, name, title, cols, 4, 0);
    for (uint32_t i = 0; i < v->count && st == ETW_OK; i++) {
        const cpu_row *w = rep_vec_at(v, i);
        if (i == 0 || w->pid != pid) shown = 0;
        pid = w->pid;
        if (shown++ >= top) continue;
        rep_cell_u64(o, w->pid);
        rep_cell_cstr(o, rep_pool_str(&c->pool, w->label));
        rep_cell_u64(o, w->samples);
        rep_cell_f64(o, pct(w->samples, w->proc_samples));
    }
    return st == ETW_OK ? rep_table_end(o) : st;
}

static etw_status c_write(etw_report *r, rep_out *o) {
    cpu *c = r->impl;
    /* processes by samples (pid breaks ties) */
    for (uint32_t i = 0; i < c->procs.count; i++) {
        cpu_row *p = rep_vec_at(&c->procs, i);
        p->proc_samples = p->samples;
    }
    if (c->procs.count) qsort(c->procs.data, c->procs.count, c->procs.elem, by_samples);
    etw_status st = rep_table_begin(o, "processes", "CPU samples by process (percent of all selected samples)",
                                    proc_cols, sizeof proc_cols / sizeof *proc_cols, 1);
    for (uint32_t i = 0; i < c->procs.count && st == ETW_OK; i++) {
        const cpu_row *p = rep_vec_at(&c->procs, i);
        rep_cell_u64(o, p->pid);
        rep_cell_cstr(o, rep_pool_str(&c->pool, p->label));
        rep_cell_u64(o, p->samples);
        rep_cell_f64(o, pct(p->samples, c->total));
        rep_cell_u64(o, p->with_stack);
    }
    if (st == ETW_OK) st = rep_table_end(o);
    if (st == ETW_OK)
        st = top_table(r, c, o, &c->mods, "modules",
                       "Top modules per process (innermost frame; percent of the process's samples)", mod_cols);
    if (st == ETW_OK)
        st = top_table(r, c, o, &c->fns, "functions",
                       "Top functions per process (innermost frame; percent of the process's samples)", fn_cols);
    return st;
}

const rep_vtable etw_rep_cpu_vt = {c_init, c_free, c_add, c_skip, c_finish, c_write, c_memory};
