/* etw_profile_firefox.c - Firefox Profiler's processed profile format
 * (firefox-devtools/profiler: src/types/profile.js, docs-developer/
 * processed-profile-format.md and CHANGELOG-formats.md), version 55:
 *
 *   meta      interval (ms), startTime (Unix ms of the first sample),
 *             version 31 (the Gecko format of that release), preprocessed-
 *             ProfileVersion 55, categories (Other grey - the default -,
 *             Kernel, Native, .NET), product, platform, markerSchema [],
 *             symbolicated true (the frames are named already: no lookup)
 *   libs      [] (resources carry the module names)
 *   threads   one per (pid, tid), in pid, tid order, each self-contained:
 *             stringArray, funcTable (one function per profile label),
 *             frameTable (one frame per function), stackTable (prefix tree,
 *             a prefix always an earlier index), resourceTable (one per
 *             module, type 0 with lib null), nativeSymbols (empty), markers
 *             (empty), samples (one per (process, thread, stack) sum of the
 *             profile at the time of its first event, weight the summed
 *             weight, weightType "samples"), pid as a string (version 47),
 *             isMainThread for the heaviest thread of each process.
 *
 * Version 55 is the last one with every table inside its thread (56 shares
 * the strings, 60 the tables between threads): each thread can be read on
 * its own, and the profiler upgrades it to its current version on load
 * (src/profile-logic/processed-profile-versioning.js).
 */
#include <string.h>

#include "common/etw_alloc.h"
#include "etwdecode/etwdecode.h"
#include "profile/etw_profile_out.h"

#define FIREFOX_PROCESSED_VERSION 55
#define FIREFOX_GECKO_VERSION 31
/* FILETIME of 1970-01-01 (100 ns ticks since 1601). */
#define UNIX_EPOCH_FILETIME 116444736000000000LL

typedef struct fx {
    etw_pout *o;
    uint32_t unknown;    /* the name id of "?" (a frame the profile lost) */
    /* per thread: what each global id is in the thread (ETW_POUT_NONE: not
     * yet), reset after the thread from the lists below */
    uint32_t *name_str, *mod_str, *func_of, *res_of, *stack_of;
    etw_u32vec strs;     /* thread string -> (global id << 1) | is_module */
    etw_u32vec funcs;    /* thread func -> name id */
    etw_u32vec res;      /* thread resource -> mods id */
    etw_u32vec sframe, sprefix; /* thread stack -> func, prefix (NONE: root) */
    etw_u32vec nodes;    /* global stack nodes mapped in this thread */
    uint32_t *path;
} fx;

static etw_status str_of(fx *x, uint32_t id, int is_mod, uint32_t *out) {
    uint32_t *m = is_mod ? x->mod_str : x->name_str;
    if (m[id] == ETW_POUT_NONE) {
        m[id] = (uint32_t)x->strs.n;
        etw_status st = etw_u32vec_push(&x->o->alloc, &x->strs, id << 1 | (uint32_t)is_mod);
        if (st != ETW_OK) return st;
    }
    *out = m[id];
    return ETW_OK;
}

static etw_status func_of(fx *x, uint32_t name, uint32_t *out) {
    if (name == ETW_POUT_NONE) name = x->unknown;
    if (x->func_of[name] == ETW_POUT_NONE) {
        uint32_t s;
        etw_status st = str_of(x, name, 0, &s);
        if (st == ETW_OK && name != x->unknown && x->o->name_mod[name] != ETW_POUT_NONE) {
            uint32_t mod = x->o->name_mod[name];
            if (x->res_of[mod] == ETW_POUT_NONE) {
                x->res_of[mod] = (uint32_t)x->res.n;
                st = etw_u32vec_push(&x->o->alloc, &x->res, mod);
                uint32_t ms;
                if (st == ETW_OK) st = str_of(x, mod, 1, &ms);
            }
        }
        if (st == ETW_OK) {
            x->func_of[name] = (uint32_t)x->funcs.n;
            st = etw_u32vec_push(&x->o->alloc, &x->funcs, name);
        }
        if (st != ETW_OK) return st;
    }
    *out = x->func_of[name];
    return ETW_OK;
}

/* The thread's stack index of global node s (ETW_POUT_NONE for no stack),
 * its missing ancestors added root first. */
static etw_status stack_of(fx *x, uint32_t s, uint32_t *out) {
    etw_pout *o = x->o;
    size_t n = 0;
    uint32_t node = s;
    while (node != ETW_STACK_NONE && x->stack_of[node] == ETW_POUT_NONE && n <= o->max_depth) {
        x->path[n++] = node;
        node = o->parent[node];
    }
    uint32_t prefix = node == ETW_STACK_NONE ? ETW_POUT_NONE : x->stack_of[node];
    while (n) {
        uint32_t nd = x->path[--n];
        uint32_t f;
        etw_status st = func_of(x, o->node_name[nd], &f);
        if (st == ETW_OK) st = etw_u32vec_push(&o->alloc, &x->sframe, f);
        if (st == ETW_OK) st = etw_u32vec_push(&o->alloc, &x->sprefix, prefix);
        if (st == ETW_OK) st = etw_u32vec_push(&o->alloc, &x->nodes, nd);
        if (st != ETW_OK) return st;
        prefix = x->stack_of[nd] = (uint32_t)(x->sframe.n - 1);
    }
    *out = prefix;
    return ETW_OK;
}

static void put_index(etw_text *t, uint32_t v) {
    if (v == ETW_POUT_NONE) etw_text_puts(t, "null");
    else etw_text_u64(t, v);
}

/* "key":[v, v, ...] with n copies of a constant. */
static void put_const_column(etw_text *t, const char *key, const char *v, size_t n) {
    etw_text_putc(t, '"');
    etw_text_puts(t, key);
    etw_text_puts(t, "\":[");
    for (size_t i = 0; i < n; i++) {
        if (i) etw_text_putc(t, ',');
        etw_text_puts(t, v);
    }
    etw_text_puts(t, "],");
}

static void put_u32_column(etw_text *t, const char *key, const uint32_t *v, size_t n) {
    etw_text_putc(t, '"');
    etw_text_puts(t, key);
    etw_text_puts(t, "\":[");
    for (size_t i = 0; i < n; i++) {
        if (i) etw_text_putc(t, ',');
        put_index(t, v[i]);
    }
    etw_text_puts(t, "],");
}

static void put_ms(etw_text *t, int64_t ticks) {
    etw_text_double(t, (double)ticks / 10000.0);
}

static etw_status write_thread(fx *x, const etw_pout_thread *th, int main_thread) {
    etw_pout *o = x->o;
    etw_text *t = &o->t;
    const etw_allocator *a = &o->alloc;
    etw_status st = ETW_OK;
    /* the samples' stacks first: they decide every table */
    etw_u32vec sstack = {0};
    for (size_t i = th->begin; i < th->end && st == ETW_OK; i++) {
        uint32_t s;
        st = stack_of(x, o->samples[i].s.stack, &s);
        if (st == ETW_OK) st = etw_u32vec_push(a, &sstack, s);
    }
    if (st != ETW_OK) {
        etw_u32vec_free(a, &sstack);
        return st;
    }
    const char *pn;
    size_t pl;
    etw_pout_process(o, th->pid, &pn, &pl);
    etw_text_puts(t, "{\"processType\":\"default\",\"processStartupTime\":0,\"processShutdownTime\":null,"
                     "\"registerTime\":0,\"unregisterTime\":null,\"pausedRanges\":[],\"name\":\"thread (");
    etw_pout_id(t, th->tid);
    etw_text_puts(t, ")\",\"isMainThread\":");
    etw_text_puts(t, main_thread ? "true" : "false");
    etw_text_puts(t, ",\"processName\":");
    etw_text_json_utf8(t, pn, pl);
    etw_text_puts(t, ",\"pid\":\"");
    etw_pout_id(t, th->pid);
    etw_text_puts(t, "\",\"tid\":");
    etw_pout_id(t, th->tid);

    /* samples */
    size_t ns = th->end - th->begin;
    etw_text_puts(t, ",\"samples\":{");
    put_u32_column(t, "stack", sstack.v, ns);
    etw_text_puts(t, "\"time\":[");
    for (size_t i = th->begin; i < th->end; i++) {
        if (i > th->begin) etw_text_putc(t, ',');
        put_ms(t, o->samples[i].s.first_time - o->first_time);
    }
    etw_text_puts(t, "],\"weight\":[");
    for (size_t i = th->begin; i < th->end; i++) {
        if (i > th->begin) etw_text_putc(t, ',');
        etw_pout_json_weight(t, o->samples[i].s.weight);
    }
    etw_text_puts(t, "],\"weightType\":\"samples\",\"length\":");
    etw_text_u64(t, ns);
    etw_u32vec_free(a, &sstack);

    etw_text_puts(t, "},\"markers\":{\"data\":[],\"name\":[],\"startTime\":[],\"endTime\":[],\"phase\":[],"
                     "\"category\":[],\"length\":0}");
    if ((st = etw_pout_flush(o, 0)) != ETW_OK) return st;

    /* stackTable */
    etw_text_puts(t, ",\"stackTable\":{");
    put_u32_column(t, "frame", x->sframe.v, x->sframe.n);
    put_u32_column(t, "prefix", x->sprefix.v, x->sprefix.n);
    etw_text_puts(t, "\"length\":");
    etw_text_u64(t, x->sframe.n);
    if ((st = etw_pout_flush(o, 0)) != ETW_OK) return st;

    /* frameTable: frame i is function i */
    size_t nf = x->funcs.n;
    etw_text_puts(t, "},\"frameTable\":{");
    put_const_column(t, "address", "-1", nf);
    put_const_column(t, "inlineDepth", "0", nf);
    etw_text_puts(t, "\"category\":[");
    for (size_t i = 0; i < nf; i++) {
        if (i) etw_text_putc(t, ',');
        uint32_t name = x->funcs.v[i];
        etw_text_u64(t, name == x->unknown ? ETW_POUT_CAT_OTHER : o->name_cat[name]);
    }
    etw_text_puts(t, "],");
    put_const_column(t, "subcategory", "0", nf);
    etw_text_puts(t, "\"func\":[");
    for (size_t i = 0; i < nf; i++) {
        if (i) etw_text_putc(t, ',');
        etw_text_u64(t, i);
    }
    etw_text_puts(t, "],");
    put_const_column(t, "nativeSymbol", "null", nf);
    put_const_column(t, "innerWindowID", "null", nf);
    put_const_column(t, "line", "null", nf);
    put_const_column(t, "column", "null", nf);
    etw_text_puts(t, "\"length\":");
    etw_text_u64(t, nf);
    if ((st = etw_pout_flush(o, 0)) != ETW_OK) return st;

    /* funcTable */
    etw_text_puts(t, "},\"funcTable\":{\"name\":[");
    for (size_t i = 0; i < nf; i++) {
        if (i) etw_text_putc(t, ',');
        etw_text_u64(t, x->name_str[x->funcs.v[i]]);
    }
    etw_text_puts(t, "],");
    put_const_column(t, "isJS", "false", nf);
    put_const_column(t, "relevantForJS", "false", nf);
    etw_text_puts(t, "\"resource\":[");
    for (size_t i = 0; i < nf; i++) {
        if (i) etw_text_putc(t, ',');
        uint32_t name = x->funcs.v[i];
        uint32_t mod = name == x->unknown ? ETW_POUT_NONE : o->name_mod[name];
        if (mod == ETW_POUT_NONE) etw_text_puts(t, "-1");
        else etw_text_u64(t, x->res_of[mod]);
    }
    etw_text_puts(t, "],");
    put_const_column(t, "fileName", "null", nf);
    put_const_column(t, "lineNumber", "null", nf);
    put_const_column(t, "columnNumber", "null", nf);
    etw_text_puts(t, "\"length\":");
    etw_text_u64(t, nf);

    /* resourceTable */
    size_t nr = x->res.n;
    etw_text_puts(t, "},\"resourceTable\":{\"length\":");
    etw_text_u64(t, nr);
    etw_text_putc(t, ',');
    put_const_column(t, "lib", "null", nr);
    etw_text_puts(t, "\"name\":[");
    for (size_t i = 0; i < nr; i++) {
        if (i) etw_text_putc(t, ',');
        etw_text_u64(t, x->mod_str[x->res.v[i]]);
    }
    etw_text_puts(t, "],");
    put_const_column(t, "host", "null", nr);
    etw_text_puts(t, "\"type\":[");
    for (size_t i = 0; i < nr; i++) etw_text_puts(t, i ? ",0" : "0");
    etw_text_puts(t, "]},\"nativeSymbols\":{\"libIndex\":[],\"address\":[],\"name\":[],\"functionSize\":[],"
                     "\"length\":0}");
    if ((st = etw_pout_flush(o, 0)) != ETW_OK) return st;

    /* stringArray */
    etw_text_puts(t, ",\"stringArray\":[");
    for (size_t i = 0; i < x->strs.n && st == ETW_OK; i++) {
        if (i) etw_text_putc(t, ',');
        uint32_t id = x->strs.v[i] >> 1;
        size_t len;
        const char *s;
        if (x->strs.v[i] & 1) s = etw_pout_str(&o->mods, id, &len);
        else if (id == x->unknown) s = "?", len = 1;
        else s = etw_pout_str(&o->names, id, &len);
        etw_text_json_utf8(t, s, len);
        st = etw_pout_flush(o, 0);
    }
    etw_text_puts(t, "]}");

    /* reset the thread's maps */
    for (size_t i = 0; i < x->strs.n; i++) {
        uint32_t id = x->strs.v[i] >> 1;
        if (x->strs.v[i] & 1) x->mod_str[id] = ETW_POUT_NONE;
        else x->name_str[id] = ETW_POUT_NONE;
    }
    for (size_t i = 0; i < x->funcs.n; i++) x->func_of[x->funcs.v[i]] = ETW_POUT_NONE;
    for (size_t i = 0; i < x->res.n; i++) x->res_of[x->res.v[i]] = ETW_POUT_NONE;
    for (size_t i = 0; i < x->nodes.n; i++) x->stack_of[x->nodes.v[i]] = ETW_POUT_NONE;
    x->strs.n = x->funcs.n = x->res.n = x->sframe.n = x->sprefix.n = x->nodes.n = 0;
    return st;
}

static uint32_t *none_array(const etw_allocator *a, size_t n) {
    uint32_t *v = etw_alloc(a, (n ? n : 1) * sizeof *v);
    if (v) memset(v, 0xFF, (n ? n : 1) * sizeof *v);
    return v;
}

etw_status etw_profile_write_firefox(etw_pout *o) {
    const etw_allocator *a = &o->alloc;
    etw_text *t = &o->t;
    fx x;
    memset(&x, 0, sizeof x);
    x.o = o;
    x.unknown = o->names.n;
    size_t nn = (size_t)o->names.n + 1; /* + "?" */
    x.name_str = none_array(a, nn);
    x.func_of = none_array(a, nn);
    x.mod_str = none_array(a, o->mods.n);
    x.res_of = none_array(a, o->mods.n);
    x.stack_of = none_array(a, (size_t)o->nstacks + 1);
    x.path = etw_calloc(a, (size_t)o->max_depth + 1, sizeof *x.path);
    etw_status st = x.name_str && x.func_of && x.mod_str && x.res_of && x.stack_of && x.path ? ETW_OK : ETW_E_NOMEM;
    if (st == ETW_OK) {
        int64_t start = o->first_time - UNIX_EPOCH_FILETIME;
        etw_text_puts(t, "{\"meta\":{\"interval\":1,\"startTime\":");
        put_ms(t, o->nsamples ? start : 0);
        etw_text_puts(t, ",\"profilingStartTime\":0,\"profilingEndTime\":");
        put_ms(t, o->last_time - o->first_time + 10000);
        etw_text_puts(t, ",\"processType\":0,\"product\":\"etwdump\",\"stackwalk\":1,\"version\":");
        etw_text_u64(t, FIREFOX_GECKO_VERSION);
        etw_text_puts(t, ",\"preprocessedProfileVersion\":");
        etw_text_u64(t, FIREFOX_PROCESSED_VERSION);
        etw_text_puts(t, ",\"categories\":["
                         "{\"name\":\"Other\",\"color\":\"grey\",\"subcategories\":[\"Other\"]},"
                         "{\"name\":\"Kernel\",\"color\":\"orange\",\"subcategories\":[\"Other\"]},"
                         "{\"name\":\"Native\",\"color\":\"blue\",\"subcategories\":[\"Other\"]},"
                         "{\"name\":\".NET\",\"color\":\"green\",\"subcategories\":[\"Other\"]}],"
                         "\"markerSchema\":[],\"symbolicated\":true,\"platform\":\"Windows\","
                         "\"importedFrom\":\"etwdecode ");
        etw_text_puts(t, etw_version_string());
        etw_text_puts(t, "\"},\"libs\":[],\"threads\":[");
    }
    size_t heaviest = 0; /* of the current process */
    for (size_t k = 0; k < o->nthreads && st == ETW_OK; k++) {
        const etw_pout_thread *th = &o->threads[k];
        if (!k || th->pid != o->threads[k - 1].pid) { /* a new process: its heaviest thread */
            heaviest = k;
            for (size_t j = k + 1; j < o->nthreads && o->threads[j].pid == th->pid; j++)
                if (o->threads[j].weight > o->threads[heaviest].weight) heaviest = j;
        }
        if (k) etw_text_putc(t, ',');
        st = write_thread(&x, th, k == heaviest);
    }
    if (st == ETW_OK) etw_text_puts(t, "]}\n");
    etw_free(a, x.name_str);
    etw_free(a, x.func_of);
    etw_free(a, x.mod_str);
    etw_free(a, x.res_of);
    etw_free(a, x.stack_of);
    etw_free(a, x.path);
    etw_u32vec_free(a, &x.strs);
    etw_u32vec_free(a, &x.funcs);
    etw_u32vec_free(a, &x.res);
    etw_u32vec_free(a, &x.sframe);
    etw_u32vec_free(a, &x.sprefix);
    etw_u32vec_free(a, &x.nodes);
    return st == ETW_OK ? etw_pout_flush(o, 0) : st;
}
