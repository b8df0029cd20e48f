/* etw_profile_out.c - frame labels, the profile formats' names, and what the
 * profile writers share (etw_profile_out.h). */
#include "profile/etw_profile_out.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/etw_alloc.h"
#include "profile/etw_profile_internal.h"

/* ---- labels --------------------------------------------------------------- */

typedef struct lbuf {
    char *buf;
    size_t n, len; /* capacity, length the whole label needs */
} lbuf;

static void lput(lbuf *b, const char *s, size_t n) {
    if (b->len < b->n) {
        size_t room = b->n - b->len;
        memcpy(b->buf + b->len, s, n < room ? n : room);
    }
    b->len += n;
}

static void lhex(lbuf *b, uint64_t v) {
    char tmp[19];
    size_t i = sizeof tmp;
    do {
        tmp[--i] = "0123456789abcdef"[v & 15];
        v >>= 4;
    } while (v);
    tmp[--i] = 'x';
    tmp[--i] = '0';
    lput(b, tmp + i, sizeof tmp - i);
}

/* with_offset 0: the function-level label of the profiles (no "+0x.." after
 * a PDB function). */
static size_t label(const etw_frame_info *f, char *buf, size_t n, int with_offset) {
    lbuf b = {buf, n ? n - 1 : 0, 0};
    if (!f) {
        if (n) buf[0] = 0;
        return 0;
    }
    int has_mod = f->module && f->module_len;
    int has_fn = f->function && f->function_len;
    switch (f->kind) {
    case ETW_FRAME_PDB:
    case ETW_FRAME_JIT:
        if (has_fn) {
            if (has_mod) {
                lput(&b, f->module, f->module_len);
                lput(&b, "!", 1);
            }
            lput(&b, f->function, f->function_len);
            if (with_offset && f->kind == ETW_FRAME_PDB && f->offset) {
                lput(&b, "+", 1);
                lhex(&b, f->offset);
            }
            break;
        }
        /* fall through - no function name after all */
    case ETW_FRAME_IMAGE:
        if (has_mod) {
            lput(&b, f->module, f->module_len);
            lput(&b, "+", 1);
            lhex(&b, f->offset);
            break;
        }
        /* fall through */
    default:
        lhex(&b, f->address);
        break;
    }
    if (n) buf[b.len < b.n ? b.len : b.n] = 0;
    return b.len;
}

size_t etw_frame_label(const etw_frame_info *f, char *buf, size_t n) {
    return label(f, buf, n, 1);
}

etw_status etw_profile_format_parse(const char *name, etw_profile_format *out) {
    if (!name || !out) return ETW_E_INVALID_ARG;
    if (!strcmp(name, "folded")) *out = ETW_PROFILE_FOLDED;
    else if (!strcmp(name, "speedscope")) *out = ETW_PROFILE_SPEEDSCOPE;
    else if (!strcmp(name, "firefox")) *out = ETW_PROFILE_FIREFOX;
    else return ETW_E_INVALID_ARG;
    return ETW_OK;
}

/* ---- interned strings ------------------------------------------------------- */

static uint64_t hash_bytes(const char *s, size_t n) {
    uint64_t h = 0xcbf29ce484222325ull; /* FNV-1a */
    for (size_t i = 0; i < n; i++) {
        h ^= (unsigned char)s[i];
        h *= 0x100000001b3ull;
    }
    return h ^ (h >> 29);
}

static void strtab_init(etw_pout_strtab *t, const etw_allocator *a) {
    memset(t, 0, sizeof *t);
    etw_text_init(&t->pool, a);
}

static void strtab_free(etw_pout_strtab *t, const etw_allocator *a) {
    etw_text_free(&t->pool);
    etw_free(a, t->off);
    etw_free(a, t->len);
    etw_free(a, t->slots);
}

static etw_status strtab_rehash(etw_pout_strtab *t, const etw_allocator *a, uint32_t nslots) {
    uint32_t *s = etw_calloc(a, nslots, sizeof *s);
    if (!s) return ETW_E_NOMEM;
    for (uint32_t id = 0; id < t->n; id++) {
        uint64_t h = hash_bytes(t->pool.data + t->off[id], t->len[id]);
        uint32_t i = (uint32_t)h & (nslots - 1);
        while (s[i]) i = (i + 1) & (nslots - 1);
        s[i] = id + 1;
    }
    etw_free(a, t->slots);
    t->slots = s;
    t->nslots = nslots;
    return ETW_OK;
}

/* The id of s[0..n) in t, added when new (*added set). */
static etw_status strtab_intern(etw_pout_strtab *t, const etw_allocator *a, const char *s, size_t n, uint32_t *id,
                                int *added) {
    *added = 0;
    if (n > UINT32_MAX || t->n >= UINT32_MAX / 4) return ETW_E_LIMIT;
    if ((uint64_t)(t->n + 1) * 2 > t->nslots) {
        etw_status st = strtab_rehash(t, a, t->nslots ? t->nslots * 2 : 1024);
        if (st != ETW_OK) return st;
    }
    uint64_t h = hash_bytes(s, n);
    uint32_t i = (uint32_t)h & (t->nslots - 1);
    while (t->slots[i]) {
        uint32_t k = t->slots[i] - 1;
        if (t->len[k] == n && !memcmp(t->pool.data + t->off[k], s, n)) {
            *id = k;
            return ETW_OK;
        }
        i = (i + 1) & (t->nslots - 1);
    }
    if (t->n == t->cap) {
        uint32_t cap = t->cap ? t->cap * 2 : 256;
        size_t *off = etw_alloc(a, cap * sizeof *off);
        uint32_t *len = etw_alloc(a, cap * sizeof *len);
        if (!off || !len) {
            etw_free(a, off);
            etw_free(a, len);
            return ETW_E_NOMEM;
        }
        if (t->n) {
            memcpy(off, t->off, t->n * sizeof *off);
            memcpy(len, t->len, t->n * sizeof *len);
        }
        etw_free(a, t->off);
        etw_free(a, t->len);
        t->off = off;
        t->len = len;
        t->cap = cap;
    }
    t->off[t->n] = t->pool.len;
    t->len[t->n] = (uint32_t)n;
    etw_text_put(&t->pool, s, n);
    if (etw_text_status(&t->pool) != ETW_OK) return ETW_E_NOMEM;
    t->slots[i] = t->n + 1;
    *id = t->n++;
    *added = 1;
    return ETW_OK;
}

/* ---- growable arrays ---------------------------------------------------------- */

etw_status etw_u32vec_push(const etw_allocator *a, etw_u32vec *v, uint32_t x) {
    if (v->n == v->cap) {
        size_t cap = v->cap ? v->cap * 2 : 64;
        if (cap > SIZE_MAX / sizeof *v->v) return ETW_E_NOMEM;
        uint32_t *nv = etw_alloc(a, cap * sizeof *nv);
        if (!nv) return ETW_E_NOMEM;
        if (v->n) memcpy(nv, v->v, v->n * sizeof *nv);
        etw_free(a, v->v);
        v->v = nv;
        v->cap = cap;
    }
    v->v[v->n++] = x;
    return ETW_OK;
}

void etw_u32vec_free(const etw_allocator *a, etw_u32vec *v) {
    etw_free(a, v->v);
    v->v = NULL;
    v->n = v->cap = 0;
}

/* ---- reading the profile ------------------------------------------------------ */

/* The profile's allocator (what it was created with). */
static etw_allocator profile_allocator(const etw_profile *p) {
    return p->alloc;
}

static int sample_cmp(const void *x, const void *y) {
    const etw_pout_sample *a = x, *b = y;
    if (a->s.pid != b->s.pid) return a->s.pid < b->s.pid ? -1 : 1;
    if (a->s.tid != b->s.tid) return a->s.tid < b->s.tid ? -1 : 1;
    if (a->s.first_time != b->s.first_time) return a->s.first_time < b->s.first_time ? -1 : 1;
    return a->index < b->index ? -1 : a->index > b->index;
}

/* What the formats can show: flamegraph.pl reads no sign, speedscope sums
 * weights into widths; negative and non-finite weights count 0. */
static double finite_weight(double w) {
    return isfinite(w) && w > 0 ? w : 0.0;
}

/* Names of every frame: frame id -> name id. */
static etw_status read_frames(etw_pout *o, uint32_t **frame_name) {
    const etw_allocator *a = &o->alloc;
    uint32_t nframes = etw_profile_frame_count(o->p);
    uint32_t *fn = etw_calloc(a, nframes ? nframes : 1, sizeof *fn);
    if (!fn) return ETW_E_NOMEM;
    *frame_name = fn;
    char small[512];
    char *buf = small;
    size_t cap = sizeof small;
    etw_status st = ETW_OK;
    for (uint32_t f = 0; f < nframes && st == ETW_OK; f++) {
        etw_frame_info fi;
        st = etw_profile_frame(o->p, f, &fi);
        if (st != ETW_OK) break;
        size_t n = label(&fi, buf, cap, 0);
        if (n >= cap) {
            if (buf != small) etw_free(a, buf);
            cap = n + 1;
            buf = etw_alloc(a, cap);
            if (!buf) return ETW_E_NOMEM;
            label(&fi, buf, cap, 0);
        }
        int added;
        uint32_t id;
        st = strtab_intern(&o->names, a, buf, n, &id, &added);
        if (st != ETW_OK) break;
        fn[f] = id;
        if (!added) continue;
        if (id % 256 == 0) { /* grow name_mod/name_cat with the table */
            size_t ncap = (size_t)id + 256;
            uint32_t *nm = etw_alloc(a, ncap * sizeof *nm);
            uint8_t *nc = etw_alloc(a, ncap);
            if (!nm || !nc) {
                etw_free(a, nm);
                etw_free(a, nc);
                st = ETW_E_NOMEM;
                break;
            }
            if (id) {
                memcpy(nm, o->name_mod, id * sizeof *nm);
                memcpy(nc, o->name_cat, id);
            }
            etw_free(a, o->name_mod);
            etw_free(a, o->name_cat);
            o->name_mod = nm;
            o->name_cat = nc;
        }
        o->name_mod[id] = ETW_POUT_NONE;
        if (fi.module && fi.module_len && fi.kind != ETW_FRAME_ADDRESS) {
            uint32_t mid;
            st = strtab_intern(&o->mods, a, fi.module, fi.module_len, &mid, &added);
            if (st != ETW_OK) break;
            o->name_mod[id] = mid;
        }
        o->name_cat[id] = fi.pid == ETW_PROFILE_KERNEL_PID ? ETW_POUT_CAT_KERNEL
                          : fi.kind == ETW_FRAME_JIT       ? ETW_POUT_CAT_JIT
                          : fi.kind == ETW_FRAME_ADDRESS   ? ETW_POUT_CAT_OTHER
                                                           : ETW_POUT_CAT_NATIVE;
    }
    if (buf != small) etw_free(a, buf);
    return st;
}

/* Frames with the same label are one function of the profiles, so two
 * stacks of the profile may be one here: the function-level prefix tree
 * (o->parent, o->node_name; ids 1 .. o->nstacks, a parent's id smaller),
 * and *node_fn: the profile's stack node -> its node here. */
static etw_status function_tree(etw_pout *o, const uint32_t *frame_name, uint32_t **node_fn) {
    const etw_allocator *a = &o->alloc;
    uint32_t n = etw_profile_stack_count(o->p), nframes = etw_profile_frame_count(o->p);
    uint32_t *map = etw_calloc(a, (size_t)n + 1, sizeof *map);
    o->parent = etw_calloc(a, (size_t)n + 1, sizeof *o->parent);
    o->node_name = etw_calloc(a, (size_t)n + 1, sizeof *o->node_name);
    size_t nslots = 16;
    while (nslots < (size_t)n * 2) nslots *= 2;
    uint32_t *slots = etw_calloc(a, nslots, sizeof *slots); /* id; 0: empty */
    *node_fn = map;
    if (!map || !o->parent || !o->node_name || !slots) {
        etw_free(a, slots);
        return ETW_E_NOMEM;
    }
    uint32_t nfn = 0;
    for (uint32_t s = 1; s <= n; s++) {
        uint32_t ps = etw_profile_stack_parent(o->p, s);
        uint32_t par = ps && ps < s ? map[ps] : 0;
        uint32_t f = etw_profile_stack_frame(o->p, s);
        uint32_t name = f < nframes ? frame_name[f] : ETW_POUT_NONE;
        uint64_t h = ((uint64_t)par << 32 | name) * 0x9E3779B97F4A7C15ull;
        size_t i = (size_t)(h >> 20) & (nslots - 1);
        while (slots[i] && !(o->parent[slots[i]] == par && o->node_name[slots[i]] == name)) i = (i + 1) & (nslots - 1);
        if (!slots[i]) {
            slots[i] = ++nfn;
            o->parent[nfn] = par;
            o->node_name[nfn] = name;
        }
        map[s] = slots[i];
        uint32_t d = etw_profile_stack_depth(o->p, s);
        if (d > o->max_depth) o->max_depth = d;
    }
    o->nstacks = nfn;
    etw_free(a, slots);
    return ETW_OK;
}

static int sample_stack_cmp(const void *x, const void *y) {
    const etw_pout_sample *a = x, *b = y;
    if (a->s.pid != b->s.pid) return a->s.pid < b->s.pid ? -1 : 1;
    if (a->s.tid != b->s.tid) return a->s.tid < b->s.tid ? -1 : 1;
    if (a->s.stack != b->s.stack) return a->s.stack < b->s.stack ? -1 : 1;
    return a->index < b->index ? -1 : a->index > b->index;
}

etw_status etw_pout_init(etw_pout *o, const etw_profile *p, FILE *out) {
    memset(o, 0, sizeof *o);
    if (!p || !out) return ETW_E_INVALID_ARG;
    o->p = p;
    o->out = out;
    o->alloc = profile_allocator(p);
    const etw_allocator *a = &o->alloc;
    etw_text_init(&o->t, a);
    strtab_init(&o->names, a);
    strtab_init(&o->mods, a);
    uint32_t *frame_name = NULL;
    etw_status st = read_frames(o, &frame_name);
    uint32_t *node_fn = NULL;
    if (st == ETW_OK) st = function_tree(o, frame_name, &node_fn);
    etw_free(a, frame_name);
    if (st != ETW_OK) {
        etw_free(a, node_fn);
        return st;
    }
    uint32_t nnodes = etw_profile_stack_count(p);
    size_t ns = etw_profile_sample_count(p);
    o->samples = etw_calloc(a, ns ? ns : 1, sizeof *o->samples);
    if (!o->samples) {
        etw_free(a, node_fn);
        return ETW_E_NOMEM;
    }
    for (size_t i = 0; i < ns; i++) {
        etw_pout_sample *sm = &o->samples[o->nsamples];
        if (etw_profile_sample_at(p, i, &sm->s) != ETW_OK) continue;
        sm->s.weight = finite_weight(sm->s.weight);
        sm->s.stack = sm->s.stack && sm->s.stack <= nnodes ? node_fn[sm->s.stack] : ETW_STACK_NONE;
        sm->index = i;
        o->nsamples++;
    }
    etw_free(a, node_fn);
    /* stacks the same at the function level are one: sum them */
    if (o->nsamples > 1) {
        qsort(o->samples, o->nsamples, sizeof *o->samples, sample_stack_cmp);
        size_t k = 0;
        for (size_t i = 1; i < o->nsamples; i++) {
            etw_profile_sample *d = &o->samples[k].s, *x = &o->samples[i].s;
            if (x->pid == d->pid && x->tid == d->tid && x->stack == d->stack) {
                d->count += x->count;
                d->weight += x->weight;
                if (x->first_time < d->first_time) d->first_time = x->first_time;
                if (x->last_time > d->last_time) d->last_time = x->last_time;
                if (o->samples[i].index < o->samples[k].index) o->samples[k].index = o->samples[i].index;
            } else {
                o->samples[++k] = o->samples[i];
            }
        }
        o->nsamples = k + 1;
    }
    if (o->nsamples > 1) qsort(o->samples, o->nsamples, sizeof *o->samples, sample_cmp);
    size_t nth = 0;
    for (size_t i = 0; i < o->nsamples; i++)
        if (!i || o->samples[i].s.pid != o->samples[i - 1].s.pid || o->samples[i].s.tid != o->samples[i - 1].s.tid)
            nth++;
    o->threads = etw_calloc(a, nth ? nth : 1, sizeof *o->threads);
    if (!o->threads) return ETW_E_NOMEM;
    for (size_t i = 0; i < o->nsamples; i++) {
        const etw_profile_sample *s = &o->samples[i].s;
        if (!i || s->pid != o->samples[i - 1].s.pid || s->tid != o->samples[i - 1].s.tid) {
            etw_pout_thread *th = &o->threads[o->nthreads++];
            th->pid = s->pid;
            th->tid = s->tid;
            th->begin = i;
        }
        etw_pout_thread *th = &o->threads[o->nthreads - 1];
        th->end = i + 1;
        th->weight += s->weight;
        th->count += s->count;
        o->total_weight += s->weight;
        o->total_count += s->count;
        if (!o->first_time || s->first_time < o->first_time) o->first_time = s->first_time;
        if (s->last_time > o->last_time) o->last_time = s->last_time;
    }
    return ETW_OK;
}

void etw_pout_free(etw_pout *o) {
    const etw_allocator *a = &o->alloc;
    if (!a->free) return;
    etw_text_free(&o->t);
    strtab_free(&o->names, a);
    strtab_free(&o->mods, a);
    etw_free(a, o->name_mod);
    etw_free(a, o->name_cat);
    etw_free(a, o->node_name);
    etw_free(a, o->parent);
    etw_free(a, o->samples);
    etw_free(a, o->threads);
}

etw_status etw_pout_flush(etw_pout *o, int end) {
    if (etw_text_status(&o->t) != ETW_OK) return ETW_E_NOMEM;
    if (o->io_error) return ETW_E_IO;
    if (!end && o->t.len < ((size_t)1 << 16)) return ETW_OK;
    if (o->t.len && fwrite(o->t.data, 1, o->t.len, o->out) != o->t.len) o->io_error = 1;
    etw_text_clear(&o->t);
    if (end && fflush(o->out) != 0) o->io_error = 1;
    return o->io_error ? ETW_E_IO : ETW_OK;
}

void etw_pout_process(const etw_pout *o, uint32_t pid, const char **name, size_t *len) {
    if (etw_profile_process_name(o->p, pid, name, len) != ETW_OK || !*name || !*len) {
        *name = "process";
        *len = 7;
    }
}

void etw_pout_json_weight(etw_text *t, double w) {
    etw_text_double(t, isfinite(w) ? w : 0.0);
}

etw_status etw_profile_write(const etw_profile *p, etw_profile_format fmt, FILE *out) {
    if (!p || !out) return ETW_E_INVALID_ARG;
    if (fmt != ETW_PROFILE_FOLDED && fmt != ETW_PROFILE_SPEEDSCOPE && fmt != ETW_PROFILE_FIREFOX)
        return ETW_E_INVALID_ARG;
    etw_pout o;
    etw_status st = etw_pout_init(&o, p, out);
    if (st == ETW_OK) {
        st = fmt == ETW_PROFILE_FOLDED       ? etw_profile_write_folded(&o)
             : fmt == ETW_PROFILE_SPEEDSCOPE ? etw_profile_write_speedscope(&o)
                                             : etw_profile_write_firefox(&o);
    }
    if (st == ETW_OK) st = etw_pout_flush(&o, 1);
    etw_pout_free(&o);
    return st;
}
