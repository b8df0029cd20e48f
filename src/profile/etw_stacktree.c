/* etw_stacktree.c - the profile's interned frames, stacks, samples and names
 * (see etw_stacktree.h), and the accessors of etw_profile.h that read them. */
#include "profile/etw_stacktree.h"

#include <string.h>

#include "common/etw_alloc.h"
#include "profile/etw_profile_internal.h"

#ifdef ETW_XXH_INLINE
#define XXH_INLINE_ALL
#endif
#include <xxhash.h>

/* ---- arrays and the index ------------------------------------------------ */

etw_status etw_grow_array(const etw_allocator *a, void **arr, size_t *cap, size_t need, size_t sz,
                          size_t *bytes) {
    if (need <= *cap) return ETW_OK;
    size_t nc = *cap ? *cap : 16;
    while (nc < need) {
        if (nc > ((size_t)-1 / 2) / sz) return ETW_E_NOMEM;
        nc *= 2;
    }
    /* the old elements copied, only the new ones zeroed (each byte written once) */
    void *n = etw_alloc(a, nc * sz);
    if (!n) return ETW_E_NOMEM;
    size_t keep = *arr ? *cap * sz : 0;
    if (keep) memcpy(n, *arr, keep);
    memset((uint8_t *)n + keep, 0, nc * sz - keep);
    etw_free(a, *arr);
    if (bytes) *bytes += (nc - *cap) * sz;
    *arr = n;
    *cap = nc;
    return ETW_OK;
}

/* The u32-capacity arrays of the tree go through a size_t copy. */
static etw_status grow32(const etw_allocator *a, void **arr, uint32_t *cap, size_t need, size_t sz,
                         size_t *bytes) {
    if (need > UINT32_MAX - 1) return ETW_E_LIMIT;
    size_t c = *cap;
    etw_status st = etw_grow_array(a, arr, &c, need, sz, bytes);
    if (st != ETW_OK) return st;
    *cap = c > UINT32_MAX ? UINT32_MAX : (uint32_t)c;
    return ETW_OK;
}

uint64_t etw_idx_hash(uint64_t seed, const void *key, size_t len) {
    return XXH3_64bits_withSeed(key, len, seed);
}

uint32_t etw_idx_find(const etw_idxmap *m, uint64_t hash, int (*eq)(const void *ctx, uint32_t id),
                      const void *ctx, size_t *slot) {
    if (!m->cap) {
        if (slot) *slot = 0;
        return ETW_NO_ID;
    }
    size_t mask = m->cap - 1;
    size_t j = (size_t)hash & mask;
    for (;;) {
        const etw_idx_slot *s = &m->slots[j];
        if (!s->id1) break;
        if (s->hash == hash && eq(ctx, s->id1 - 1)) {
            if (slot) *slot = j;
            return s->id1 - 1;
        }
        j = (j + 1) & mask;
    }
    if (slot) *slot = j;
    return ETW_NO_ID;
}

etw_status etw_idx_reserve(etw_idxmap *m, const etw_allocator *a, size_t *bytes) {
    if ((m->count + 1) * 4 <= m->cap * 3) return ETW_OK; /* load <= 3/4 */
    size_t nc = m->cap ? m->cap * 2 : 64;
    if (nc > (size_t)-1 / sizeof(etw_idx_slot)) return ETW_E_NOMEM;
    etw_idx_slot *ns = etw_calloc(a, nc, sizeof *ns);
    if (!ns) return ETW_E_NOMEM;
    for (size_t i = 0; i < m->cap; i++) {
        if (!m->slots[i].id1) continue;
        size_t j = (size_t)m->slots[i].hash & (nc - 1);
        while (ns[j].id1) j = (j + 1) & (nc - 1);
        ns[j] = m->slots[i];
    }
    etw_free(a, m->slots);
    if (bytes) *bytes += (nc - m->cap) * sizeof *ns;
    m->slots = ns;
    m->cap = nc;
    return ETW_OK;
}

void etw_idx_set(etw_idxmap *m, size_t slot, uint64_t hash, uint32_t id) {
    m->slots[slot].hash = hash;
    m->slots[slot].id1 = id + 1;
    m->count++;
}

void etw_idx_remove(etw_idxmap *m, size_t slot) {
    size_t mask = m->cap - 1;
    size_t i = slot;
    m->slots[i].id1 = 0;
    m->count--;
    size_t j = i;
    for (;;) {
        j = (j + 1) & mask;
        if (!m->slots[j].id1) return;
        size_t home = (size_t)m->slots[j].hash & mask;
        /* move j back to i when its home is not in (i, j] (cyclically) */
        int in_range = i <= j ? (home > i && home <= j) : (home > i || home <= j);
        if (!in_range) {
            m->slots[i] = m->slots[j];
            m->slots[j].id1 = 0;
            i = j;
        }
    }
}

void etw_idx_free(etw_idxmap *m, const etw_allocator *a) {
    etw_free(a, m->slots);
    memset(m, 0, sizeof *m);
}

/* ---- the tree ------------------------------------------------------------ */

static etw_status nodetab_init(etw_stacktree *t, etw_nodetab *nt);
static void nodetab_free(etw_stacktree *t, etw_nodetab *nt);

etw_status etw_stacktree_init(etw_stacktree *t, const etw_allocator *alloc) {
    memset(t, 0, sizeof *t);
    t->alloc = etw_allocator_resolve(alloc);
    /* seeded from the tree's address: a trace crafted to collide its keys
     * has to find full XXH3 collisions (as schema/etw_cache.c) */
    t->seed = XXH3_64bits(&t, sizeof t) ^ (uint64_t)(uintptr_t)t;
    etw_status st = nodetab_init(t, &t->stacks);
    if (st == ETW_OK) st = nodetab_init(t, &t->frags);
    if (st != ETW_OK) return st;
    size_t cap = 0;
    st = etw_grow_array(&t->alloc, (void **)&t->strs, &cap, 64, sizeof *t->strs, &t->bytes);
    if (st != ETW_OK) return st;
    t->strs_cap = (uint32_t)cap;
    t->nstrs = 1; /* id 0: none */
    return ETW_OK;
}

void etw_stacktree_free(etw_stacktree *t) {
    const etw_allocator *a = &t->alloc;
    etw_free(a, t->frames);
    nodetab_free(t, &t->stacks);
    nodetab_free(t, &t->frags);
    etw_free(a, t->samples);
    etw_free(a, t->procs);
    etw_free(a, t->strs);
    etw_idx_free(&t->frame_idx, a);
    etw_idx_free(&t->sample_idx, a);
    etw_idx_free(&t->proc_idx, a);
    etw_idx_free(&t->str_idx, a);
    etw_str_chunk *c = t->chunks;
    while (c) {
        etw_str_chunk *n = c->next;
        etw_free(a, c);
        c = n;
    }
    etw_pathcache_free(t, &t->leaf_path);
    etw_allocator keep = t->alloc;
    memset(t, 0, sizeof *t);
    t->alloc = keep;
}

/* Reserve room in an index before inserting; 1 when the slot must be found
 * again (the index was rebuilt). */
static etw_status reserve(etw_stacktree *t, etw_idxmap *m, int *moved) {
    *moved = 0;
    if (m->cap && (m->count + 1) * 4 <= m->cap * 3) return ETW_OK;
    *moved = 1;
    return etw_idx_reserve(m, &t->alloc, &t->bytes);
}

typedef struct frame_key {
    const etw_stacktree *t;
    uint32_t pid;
    uint64_t address;
} frame_key;

static int frame_eq(const void *ctx, uint32_t id) {
    const frame_key *k = ctx;
    const etw_frame_rec *f = &k->t->frames[id];
    return f->address == k->address && f->pid == k->pid;
}

etw_status etw_stacktree_frame(etw_stacktree *t, uint32_t pid, uint64_t address, int64_t raw_time,
                               uint32_t *id) {
    uint8_t kb[12];
    memcpy(kb, &pid, 4);
    memcpy(kb + 4, &address, 8);
    uint64_t h = etw_idx_hash(t->seed, kb, sizeof kb);
    frame_key k = {t, pid, address};
    size_t slot;
    uint32_t f = etw_idx_find(&t->frame_idx, h, frame_eq, &k, &slot);
    if (f != ETW_NO_ID) {
        *id = f;
        return ETW_OK;
    }
    etw_status st = grow32(&t->alloc, (void **)&t->frames, &t->frames_cap, (size_t)t->nframes + 1,
                           sizeof *t->frames, &t->bytes);
    if (st != ETW_OK) return st;
    int moved;
    st = reserve(t, &t->frame_idx, &moved);
    if (st != ETW_OK) return st;
    if (moved) etw_idx_find(&t->frame_idx, h, frame_eq, &k, &slot);
    etw_frame_rec *r = &t->frames[t->nframes];
    memset(r, 0, sizeof *r);
    r->address = address;
    r->pid = pid;
    r->kind = ETW_FRAME_ADDRESS;
    r->first_raw = raw_time;
    etw_idx_set(&t->frame_idx, slot, h, t->nframes);
    *id = t->nframes++;
    return ETW_OK;
}

typedef struct node_key {
    const etw_nodetab *nt;
    uint32_t parent, frame;
} node_key;

static int node_eq(const void *ctx, uint32_t id) {
    const node_key *k = ctx;
    const etw_stack_node *n = &k->nt->nodes[id];
    return n->parent == k->parent && n->frame == k->frame;
}

static etw_status nodetab_init(etw_stacktree *t, etw_nodetab *nt) {
    size_t cap = 0;
    etw_status st = etw_grow_array(&t->alloc, (void **)&nt->nodes, &cap, 256, sizeof *nt->nodes, &t->bytes);
    if (st != ETW_OK) return st;
    nt->cap = (uint32_t)cap;
    nt->n = 1; /* node 0: the empty stack */
    return ETW_OK;
}

static void nodetab_free(etw_stacktree *t, etw_nodetab *nt) {
    etw_free(&t->alloc, nt->nodes);
    etw_idx_free(&nt->idx, &t->alloc);
    memset(nt, 0, sizeof *nt);
}

etw_status etw_nodetab_child(etw_stacktree *t, etw_nodetab *nt, uint32_t parent, uint32_t frame,
                             uint32_t *node) {
    if (parent >= nt->n || frame >= t->nframes) return ETW_E_INVALID_ARG;
    uint32_t kb[2] = {parent, frame};
    uint64_t h = etw_idx_hash(t->seed, kb, sizeof kb);
    node_key k = {nt, parent, frame};
    size_t slot;
    uint32_t n = etw_idx_find(&nt->idx, h, node_eq, &k, &slot);
    if (n != ETW_NO_ID) {
        *node = n;
        return ETW_OK;
    }
    etw_status st = grow32(&t->alloc, (void **)&nt->nodes, &nt->cap, (size_t)nt->n + 1, sizeof *nt->nodes,
                           &t->bytes);
    if (st != ETW_OK) return st;
    int moved;
    st = reserve(t, &nt->idx, &moved);
    if (st != ETW_OK) return st;
    if (moved) etw_idx_find(&nt->idx, h, node_eq, &k, &slot);
    etw_stack_node *r = &nt->nodes[nt->n];
    r->parent = parent;
    r->frame = frame;
    r->depth = nt->nodes[parent].depth + 1;
    etw_idx_set(&nt->idx, slot, h, nt->n);
    *node = nt->n++;
    return ETW_OK;
}

etw_status etw_stacktree_child(etw_stacktree *t, uint32_t parent, uint32_t frame, uint32_t *node) {
    return etw_nodetab_child(t, &t->stacks, parent, frame, node);
}

/* etw_stacktree_push_cached in the node table nt (leaf_only: any, the
 * cache holding frame ids; else t->stacks, the cache holding its nodes). */
static etw_status push_cached_in(etw_stacktree *t, etw_pathcache *c, etw_nodetab *nt, uint32_t pid,
                                 const uint64_t *addr, size_t n, uint64_t kernel_min, int64_t raw_time,
                                 uint32_t *node) {
    if (n > UINT32_MAX - 1) return ETW_E_LIMIT;
    if (n > c->cap) { /* room for this stack's path: allocate only when deeper than ever */
        size_t cap = c->cap < 64 ? 64 : c->cap;
        while (cap < n) cap *= 2;
        uint64_t *na = etw_calloc(&t->alloc, cap, sizeof *na);
        uint32_t *nn = etw_calloc(&t->alloc, cap, sizeof *nn);
        if (!na || !nn) {
            etw_free(&t->alloc, na);
            etw_free(&t->alloc, nn);
            return ETW_E_NOMEM;
        }
        if (c->n) {
            memcpy(na, c->addr, c->n * sizeof *na);
            memcpy(nn, c->node, c->n * sizeof *nn);
        }
        etw_free(&t->alloc, c->addr);
        etw_free(&t->alloc, c->node);
        t->bytes += (cap - c->cap) * (sizeof *na + sizeof *nn);
        c->addr = na;
        c->node = nn;
        c->cap = (uint32_t)cap;
    }
    size_t k = 0;
    if (c->pid == pid && c->kernel_min == kernel_min)
        while (k < c->n && k < n && c->addr[k] == addr[n - 1 - k]) k++;
    uint32_t cur = k ? c->node[k - 1] : ETW_STACK_NONE;
    c->pid = pid;
    c->kernel_min = kernel_min;
    c->n = (uint32_t)k;
    for (size_t i = k; i < n; i++) {
        uint64_t a = addr[n - 1 - i];
        uint32_t space = a >= kernel_min ? ETW_PROFILE_KERNEL_PID : pid;
        uint32_t f;
        etw_status st = etw_stacktree_frame(t, space, a, raw_time, &f);
        if (st != ETW_OK) return st;
        if (t->leaf_only) {
            cur = f; /* node[] holds frame ids: the leaf's is the last */
        } else {
            st = etw_nodetab_child(t, nt, cur, f, &cur);
            if (st != ETW_OK) return st;
        }
        c->addr[i] = a;
        c->node[i] = cur;
        c->n = (uint32_t)(i + 1);
    }
    if (t->leaf_only && n) return etw_nodetab_child(t, nt, ETW_STACK_NONE, cur, node);
    *node = cur;
    return ETW_OK;
}

etw_status etw_stacktree_push_leaf_first(etw_stacktree *t, etw_nodetab *nt, uint32_t base, uint32_t pid,
                                         const uint64_t *addr, size_t n, uint64_t kernel_min,
                                         int64_t raw_time, uint32_t *node) {
    uint32_t cur = base;
    if (t->leaf_only) {
        if (!n) {
            *node = base;
            return ETW_OK;
        }
        /* every frame, root first as below (the same first times); those
         * of the previous stack's root side exist already */
        return push_cached_in(t, &t->leaf_path, nt, pid, addr, n, kernel_min, raw_time, node);
    }
    for (size_t i = n; i-- > 0;) {
        uint32_t space = addr[i] >= kernel_min ? ETW_PROFILE_KERNEL_PID : pid;
        uint32_t f;
        etw_status st = etw_stacktree_frame(t, space, addr[i], raw_time, &f);
        if (st != ETW_OK) return st;
        st = etw_nodetab_child(t, nt, cur, f, &cur);
        if (st != ETW_OK) return st;
    }
    *node = cur;
    return ETW_OK;
}

void etw_pathcache_free(etw_stacktree *t, etw_pathcache *c) {
    etw_free(&t->alloc, c->addr);
    etw_free(&t->alloc, c->node);
    memset(c, 0, sizeof *c);
}

etw_status etw_stacktree_push_cached(etw_stacktree *t, etw_pathcache *c, uint32_t pid, const uint64_t *addr,
                                     size_t n, uint64_t kernel_min, int64_t raw_time, uint32_t *node) {
    return push_cached_in(t, c, &t->stacks, pid, addr, n, kernel_min, raw_time, node);
}

typedef struct sample_key {
    const etw_stacktree *t;
    uint32_t pid, tid, stack;
} sample_key;

static int sample_eq(const void *ctx, uint32_t id) {
    const sample_key *k = ctx;
    const etw_profile_sample *s = &k->t->samples[id];
    return s->pid == k->pid && s->tid == k->tid && s->stack == k->stack;
}

etw_status etw_stacktree_sample(etw_stacktree *t, uint32_t pid, uint32_t tid, uint32_t stack,
                                double w, int64_t time) {
    uint32_t kb[3] = {pid, tid, stack};
    uint64_t h = etw_idx_hash(t->seed, kb, sizeof kb);
    sample_key k = {t, pid, tid, stack};
    size_t slot;
    uint32_t i = etw_idx_find(&t->sample_idx, h, sample_eq, &k, &slot);
    if (i == ETW_NO_ID) {
        if (t->nsamples >= UINT32_MAX - 1) return ETW_E_LIMIT;
        etw_status st = etw_grow_array(&t->alloc, (void **)&t->samples, &t->samples_cap, t->nsamples + 1,
                                       sizeof *t->samples, &t->bytes);
        if (st != ETW_OK) return st;
        int moved;
        st = reserve(t, &t->sample_idx, &moved);
        if (st != ETW_OK) return st;
        if (moved) etw_idx_find(&t->sample_idx, h, sample_eq, &k, &slot);
        etw_profile_sample *s = &t->samples[t->nsamples];
        memset(s, 0, sizeof *s);
        s->pid = pid;
        s->tid = tid;
        s->stack = stack;
        s->first_time = time;
        s->last_time = time;
        i = (uint32_t)t->nsamples++;
        etw_idx_set(&t->sample_idx, slot, h, i);
    }
    etw_profile_sample *s = &t->samples[i];
    s->count++;
    s->weight += w;
    if (time < s->first_time) s->first_time = time;
    if (time > s->last_time) s->last_time = time;
    return ETW_OK;
}

typedef struct str_key {
    const etw_stacktree *t;
    const char *s;
    size_t len;
} str_key;

static int str_eq(const void *ctx, uint32_t id) {
    const str_key *k = ctx;
    const etw_str_rec *r = &k->t->strs[id];
    return r->len == k->len && (!k->len || !memcmp(r->s, k->s, k->len));
}

#define STR_CHUNK ((size_t)64 * 1024)

etw_status etw_stacktree_str(etw_stacktree *t, const char *s, size_t len, uint32_t *id) {
    if (len > UINT32_MAX) return ETW_E_LIMIT;
    uint64_t h = etw_idx_hash(t->seed, s, len);
    str_key k = {t, s, len};
    size_t slot;
    uint32_t i = etw_idx_find(&t->str_idx, h, str_eq, &k, &slot);
    if (i != ETW_NO_ID) {
        *id = i;
        return ETW_OK;
    }
    etw_status st = grow32(&t->alloc, (void **)&t->strs, &t->strs_cap, (size_t)t->nstrs + 1,
                           sizeof *t->strs, &t->bytes);
    if (st != ETW_OK) return st;
    int moved;
    st = reserve(t, &t->str_idx, &moved);
    if (st != ETW_OK) return st;
    if (moved) etw_idx_find(&t->str_idx, h, str_eq, &k, &slot);
    etw_str_chunk *c = t->chunks;
    if (!c || c->cap - c->used < len + 1) {
        size_t cap = len + 1 > STR_CHUNK / 4 ? len + 1 : STR_CHUNK;
        if (cap > (size_t)-1 - sizeof *c) return ETW_E_NOMEM;
        etw_str_chunk *nc = etw_alloc(&t->alloc, sizeof *nc + cap);
        if (!nc) return ETW_E_NOMEM;
        nc->cap = cap;
        nc->used = 0;
        t->bytes += sizeof *nc + cap;
        if (c && cap != STR_CHUNK) {
            /* a big string: its own chunk, behind the current one */
            nc->next = c->next;
            c->next = nc;
        } else {
            nc->next = c;
            t->chunks = nc;
        }
        c = nc;
    }
    char *dst = c->data + c->used;
    if (len) memcpy(dst, s, len);
    dst[len] = 0;
    c->used += len + 1;
    t->strs[t->nstrs].s = dst;
    t->strs[t->nstrs].len = (uint32_t)len;
    etw_idx_set(&t->str_idx, slot, h, t->nstrs);
    *id = t->nstrs++;
    return ETW_OK;
}

typedef struct proc_key {
    const etw_stacktree *t;
    uint32_t pid;
} proc_key;

static int proc_eq(const void *ctx, uint32_t id) {
    const proc_key *k = ctx;
    return k->t->procs[id].pid == k->pid;
}

etw_status etw_stacktree_set_process(etw_stacktree *t, uint32_t pid, const char *name, size_t len) {
    uint32_t sid;
    etw_status st = etw_stacktree_str(t, name, len, &sid);
    if (st != ETW_OK) return st;
    uint64_t h = etw_idx_hash(t->seed, &pid, sizeof pid);
    proc_key k = {t, pid};
    size_t slot;
    uint32_t i = etw_idx_find(&t->proc_idx, h, proc_eq, &k, &slot);
    if (i != ETW_NO_ID) {
        t->procs[i].name = sid;
        return ETW_OK;
    }
    st = grow32(&t->alloc, (void **)&t->procs, &t->procs_cap, (size_t)t->nprocs + 1, sizeof *t->procs,
                &t->bytes);
    if (st != ETW_OK) return st;
    int moved;
    st = reserve(t, &t->proc_idx, &moved);
    if (st != ETW_OK) return st;
    if (moved) etw_idx_find(&t->proc_idx, h, proc_eq, &k, &slot);
    t->procs[t->nprocs].pid = pid;
    t->procs[t->nprocs].name = sid;
    etw_idx_set(&t->proc_idx, slot, h, t->nprocs);
    t->nprocs++;
    return ETW_OK;
}

uint32_t etw_stacktree_process(const etw_stacktree *t, uint32_t pid) {
    uint64_t h = etw_idx_hash(t->seed, &pid, sizeof pid);
    proc_key k = {t, pid};
    uint32_t i = etw_idx_find(&t->proc_idx, h, proc_eq, &k, NULL);
    return i == ETW_NO_ID ? 0 : t->procs[i].name;
}

/* ---- the accessors of etw_profile.h -------------------------------------- */

uint32_t etw_profile_stack_count(const etw_profile *p) {
    return p ? p->tree.stacks.n - 1 : 0;
}
uint32_t etw_profile_stack_parent(const etw_profile *p, uint32_t stack) {
    return p && stack < p->tree.stacks.n ? p->tree.stacks.nodes[stack].parent : ETW_STACK_NONE;
}
uint32_t etw_profile_stack_frame(const etw_profile *p, uint32_t stack) {
    return p && stack && stack < p->tree.stacks.n ? p->tree.stacks.nodes[stack].frame : ETW_NO_ID;
}
uint32_t etw_profile_stack_depth(const etw_profile *p, uint32_t stack) {
    return p && stack < p->tree.stacks.n ? p->tree.stacks.nodes[stack].depth : 0;
}
uint32_t etw_profile_frame_count(const etw_profile *p) {
    return p ? p->tree.nframes : 0;
}

etw_status etw_profile_frame(const etw_profile *p, uint32_t frame, etw_frame_info *out) {
    if (!p || !out || frame >= p->tree.nframes) return ETW_E_INVALID_ARG;
    const etw_frame_rec *f = &p->tree.frames[frame];
    memset(out, 0, sizeof *out);
    out->address = f->address;
    out->pid = f->pid;
    out->kind = (etw_frame_kind)f->kind;
    out->module = etw_stacktree_str_at(&p->tree, f->module, &out->module_len);
    out->function = etw_stacktree_str_at(&p->tree, f->function, &out->function_len);
    out->offset = f->offset;
    return ETW_OK;
}

size_t etw_profile_sample_count(const etw_profile *p) {
    return p ? p->tree.nsamples : 0;
}

etw_status etw_profile_sample_at(const etw_profile *p, size_t i, etw_profile_sample *out) {
    if (!p || !out || i >= p->tree.nsamples) return ETW_E_INVALID_ARG;
    *out = p->tree.samples[i];
    return ETW_OK;
}

etw_status etw_profile_process_name(const etw_profile *p, uint32_t pid, const char **name, size_t *len) {
    if (!p || !name || !len) return ETW_E_INVALID_ARG;
    uint32_t sid = etw_stacktree_process(&p->tree, pid);
    if (!sid) return ETW_E_NOT_FOUND;
    *name = etw_stacktree_str_at(&p->tree, sid, len);
    return ETW_OK;
}
