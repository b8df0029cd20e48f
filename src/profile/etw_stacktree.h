/* etw_stacktree.h - the profile's interned data: frames, the stack prefix
 * tree, the samples summed per (pid, tid, stack), process names, and the
 * strings frames are named with.
 *
 * Every table is an array indexed by id plus an open-addressing index over
 * it, hashed once per lookup (XXH3 of the fixed-size key, seeded per tree).
 * Nothing here is global; memory grows with the number of distinct frames,
 * stacks, triples and names (docs/limits.md), never with the event count.
 */
#ifndef ETW_STACKTREE_H
#define ETW_STACKTREE_H

#include <stddef.h>
#include <stdint.h>

#include "etwdecode/etw_profile.h"
#include "etwdecode/etw_status.h"
#include "etwdecode/etw_types.h"

/* An index from a hash to a u32 id (0 = empty slot, ids stored + 1). */
typedef struct etw_idx_slot {
    uint64_t hash;
    uint32_t id1; /* id + 1; 0: empty */
    uint32_t pad_;
} etw_idx_slot;

typedef struct etw_idxmap {
    etw_idx_slot *slots;
    size_t cap;   /* power of 2, or 0 */
    size_t count;
} etw_idxmap;

/* One frame: where it is, when it was first seen, and how it was resolved
 * (filled by the symbolizer at finish). Strings are (offset, length) in the
 * tree's string pool. */
typedef struct etw_frame_rec {
    uint64_t address;
    uint32_t pid;        /* the process, or ETW_PROFILE_KERNEL_PID */
    uint8_t kind;        /* etw_frame_kind */
    int64_t first_raw;   /* raw timestamp of the first event it came with */
    uint32_t module;     /* string id (0: none) */
    uint32_t function;   /* string id (0: none) */
    uint64_t offset;
} etw_frame_rec;

typedef struct etw_stack_node {
    uint32_t parent;
    uint32_t frame;
    uint32_t depth;
} etw_stack_node;

/* A prefix tree of frames: node 0 is the empty stack. */
typedef struct etw_nodetab {
    etw_stack_node *nodes;
    uint32_t n, cap;
    etw_idxmap idx;
} etw_nodetab;

typedef struct etw_proc_rec {
    uint32_t pid;
    uint32_t name; /* string id */
} etw_proc_rec;

/* Strings: chunks that never move (pointers to them stay valid), and a
 * table of (pointer, length) by id; id 0 is "none". */
typedef struct etw_str_rec {
    const char *s;
    uint32_t len;
} etw_str_rec;

typedef struct etw_str_chunk {
    struct etw_str_chunk *next;
    size_t cap, used;
    char data[];
} etw_str_chunk;

/* The last stack interned for one thread, root first: the next stack of
 * that thread usually shares most of its root side (a CLR stack walk per
 * allocation tick of a loop), and that part needs no lookup. */
typedef struct etw_pathcache {
    uint64_t *addr;   /* root first */
    uint32_t *node;   /* node[i]: the stack of addr[0..i]
                       * (leaf_only: the frame of addr[i]) */
    uint32_t n, cap;
    uint32_t pid;
    uint64_t kernel_min;
} etw_pathcache;

typedef struct etw_stacktree {
    etw_allocator alloc;
    uint64_t seed;

    etw_frame_rec *frames;
    uint32_t nframes, frames_cap;
    etw_idxmap frame_idx;

    etw_nodetab stacks;      /* the stacks ([0] is ETW_STACK_NONE) */
    etw_nodetab frags;       /* kernel fragments waiting for their user part,
                              * rooted at their outermost frame */

    etw_profile_sample *samples;
    size_t nsamples, samples_cap;
    etw_idxmap sample_idx;

    etw_proc_rec *procs;
    uint32_t nprocs, procs_cap;
    etw_idxmap proc_idx;

    etw_str_rec *strs;       /* [0] unused */
    uint32_t nstrs, strs_cap;
    etw_idxmap str_idx;      /* interned: one copy per distinct string */
    etw_str_chunk *chunks;

    size_t bytes;            /* what the tables hold */
    int leaf_only;           /* stacks keep only their innermost frame
                              * (etw_profile_options.leaf_only) */
    etw_pathcache leaf_path; /* leaf_only: the last stack pushed (its
                              * frames exist: no lookup again) */
} etw_stacktree;

etw_status etw_stacktree_init(etw_stacktree *t, const etw_allocator *alloc);
void etw_stacktree_free(etw_stacktree *t);

/* The frame id of (pid, address), created (kind ADDRESS, first seen at
 * raw_time) when new. */
etw_status etw_stacktree_frame(etw_stacktree *t, uint32_t pid, uint64_t address, int64_t raw_time,
                               uint32_t *id);

/* The node for `frame` under `parent` (ETW_STACK_NONE: a root frame),
 * created when new. */
etw_status etw_stacktree_child(etw_stacktree *t, uint32_t parent, uint32_t frame, uint32_t *node);

/* The same in another node table (t->frags). */
etw_status etw_nodetab_child(etw_stacktree *t, etw_nodetab *nt, uint32_t parent, uint32_t frame,
                             uint32_t *node);

/* Intern a whole stack given leaf first (as ETW logs it: addr[0] is the
 * innermost frame), on top of `base` (the root-side part already interned,
 * or ETW_STACK_NONE). Kernel addresses (is_kernel) go to the kernel address
 * space, others to pid's. nt: &t->stacks or &t->frags. With leaf_only every
 * frame is interned (its first time decides how it resolves) but the node
 * is the one-frame stack of addr[0] (base ignored). */
etw_status etw_stacktree_push_leaf_first(etw_stacktree *t, etw_nodetab *nt, uint32_t base, uint32_t pid,
                                         const uint64_t *addr, size_t n, uint64_t kernel_min,
                                         int64_t raw_time, uint32_t *node);

/* etw_stacktree_push_leaf_first on t->stacks from the empty stack, reusing
 * the root-side frames this thread's previous stack shares. */
etw_status etw_stacktree_push_cached(etw_stacktree *t, etw_pathcache *c, uint32_t pid, const uint64_t *addr,
                                     size_t n, uint64_t kernel_min, int64_t raw_time, uint32_t *node);
void etw_pathcache_free(etw_stacktree *t, etw_pathcache *c);

/* Count one sample of weight w at time (FILETIME) for (pid, tid, stack). */
etw_status etw_stacktree_sample(etw_stacktree *t, uint32_t pid, uint32_t tid, uint32_t stack,
                                double w, int64_t time);

/* Intern a string (copied once per distinct content): its id, never 0. */
etw_status etw_stacktree_str(etw_stacktree *t, const char *s, size_t len, uint32_t *id);
static inline const char *etw_stacktree_str_at(const etw_stacktree *t, uint32_t id, size_t *len) {
    if (!id || id >= t->nstrs) {
        *len = 0;
        return NULL;
    }
    *len = t->strs[id].len;
    return t->strs[id].s;
}

/* Set (or replace) the name of a process. */
etw_status etw_stacktree_set_process(etw_stacktree *t, uint32_t pid, const char *name, size_t len);
/* The name's string id, 0 when unknown. */
uint32_t etw_stacktree_process(const etw_stacktree *t, uint32_t pid);

/* Generic index, for other profile tables: find the id whose key matches
 * (eq(ctx, id) != 0) among those hashed `hash`; ETW_NO_ID when none, with
 * *slot set to where it would be inserted. Grow before inserting. */
uint64_t etw_idx_hash(uint64_t seed, const void *key, size_t len);
uint32_t etw_idx_find(const etw_idxmap *m, uint64_t hash, int (*eq)(const void *ctx, uint32_t id),
                      const void *ctx, size_t *slot);
/* Make room for one more (call before etw_idx_find when about to insert). */
etw_status etw_idx_reserve(etw_idxmap *m, const etw_allocator *a, size_t *bytes);
void etw_idx_set(etw_idxmap *m, size_t slot, uint64_t hash, uint32_t id);
/* Remove the entry at slot (backward-shift deletion, linear probing). */
void etw_idx_remove(etw_idxmap *m, size_t slot);
void etw_idx_free(etw_idxmap *m, const etw_allocator *a);

/* Grow an array of elements of size sz to hold at least need (doubling). */
etw_status etw_grow_array(const etw_allocator *a, void **arr, size_t *cap, size_t need, size_t sz,
                          size_t *bytes);

#endif
