/* etw_stackattach.c - stack events attached to their events (see
 * etw_stackattach.h; the rules and where they come from: docs/stacks.md).
 *
 * Every event that may get a stack enters a ring of the last 2,048. A
 * stack event names its target by the raw timestamp (EventTimeStamp) and
 * thread; the ring is searched backwards as TraceLog's GetBestEventForQPC
 * does. A target whose stack is not complete at once gets a pending record
 * (kernel part waiting for a key definition or for the thread's next user
 * stack, user part waiting for its key), bounded by max_pending: past it the
 * oldest is dropped and counted. */
#include "profile/etw_stackattach.h"

#include <stdlib.h>
#include <string.h>

#include "common/etw_alloc.h"
#include "common/etw_bytes.h"
#include "profile/etw_profile_internal.h"

static uint64_t kernel_min(unsigned ptr) {
    return ptr == 4 ? 0x80000000u : 0xFFFF000000000000u;
}

/* ---- delivery ------------------------------------------------------------ */

static etw_status deliver(etw_profile *p, uint64_t seq, int is_sample, uint32_t pid, uint32_t tid, double w,
                          int64_t time, uint32_t stack) {
    etw_attach *a = &p->att;
    /* per event only when asked: a profile's memory grows with its distinct
     * stacks, not with its samples (etw_profile.h) */
    if (stack != ETW_STACK_NONE && p->opt.keep_event_stacks) {
        etw_status st = etw_grow_array(&p->alloc, (void **)&a->evs, &a->evs_cap, a->nevs + 1, sizeof *a->evs,
                                       &p->tree.bytes);
        if (st != ETW_OK) return st;
        etw_evstack *e = &a->evs[a->nevs++];
        e->seq_lo = (uint32_t)seq;
        e->seq_hi = (uint32_t)(seq >> 32);
        e->stack = stack;
        a->evs_sorted = 0;
    }
    if (is_sample) {
        if (stack != ETW_STACK_NONE) p->stats.samples_with_stack++;
        return etw_stacktree_sample(&p->tree, pid, tid, stack, w, time);
    }
    return ETW_OK;
}

etw_status etw_attach_deliver_now(etw_profile *p, uint64_t seq, uint32_t pid, uint32_t tid, double w,
                                  int64_t time) {
    return deliver(p, seq, 1, pid, tid, w, time, ETW_STACK_NONE);
}

/* The sample of a ring entry that leaves without a stack. */
static etw_status ring_retire(etw_profile *p, etw_ring_ent *e) {
    if ((e->flags & (ETW_RING_USED | ETW_RING_VALID | ETW_RING_SAMPLE | ETW_RING_OWNED)) ==
        (ETW_RING_USED | ETW_RING_VALID | ETW_RING_SAMPLE)) {
        e->flags |= ETW_RING_OWNED;
        return deliver(p, e->seq, 1, e->pid, e->sample_tid, e->weight, e->time, ETW_STACK_NONE);
    }
    return ETW_OK;
}

/* ---- init ---------------------------------------------------------------- */

etw_status etw_attach_init(etw_profile *p) {
    etw_attach *a = &p->att;
    memset(a, 0, sizeof *a);
    a->max_pending = ETW_PROFILE_MAX_PENDING;
    return ETW_OK;
}

void etw_attach_free(etw_profile *p) {
    etw_attach *a = &p->att;
    const etw_allocator *al = &p->alloc;
    etw_free(al, a->pends);
    etw_idx_free(&a->keys[0], al);
    etw_idx_free(&a->keys[1], al);
    etw_free(al, a->refs);
    etw_idx_free(&a->ref_idx, al);
    for (uint32_t i = 0; i < a->nthreads; i++) etw_pathcache_free(&p->tree, &a->threads[i].clr_path);
    etw_free(al, a->threads);
    etw_idx_free(&a->thread_idx, al);
    etw_free(al, a->evs);
    etw_free(al, a->addrs);
    etw_free(al, a->frames);
    memset(a, 0, sizeof *a);
}

uint32_t etw_attach_push(etw_profile *p, const etw_ring_ent *e) {
    etw_attach *a = &p->att;
    uint32_t slot = a->ring_cur;
    /* the entry it replaces leaves the window: its sample is final */
    (void)ring_retire(p, &a->ring[slot]);
    a->ring[slot] = *e;
    a->ring[slot].flags |= ETW_RING_USED;
    a->ring_cur = (slot + 1) & (ETW_ATTACH_RING - 1);
    return slot;
}

/* TraceLog's GetBestEventForQPC: same timestamp; the same thread wins, the
 * same CPU breaks ties; an event without a thread matches on the timestamp
 * (preferring the CPU) and takes the stack's thread. ETW_NO_ID: none. */
static uint32_t ring_best(etw_attach *a, int64_t qpc, uint32_t tid, uint16_t cpu) {
    uint32_t idx = a->ring_cur;
    uint32_t ret = ETW_NO_ID;
    int exact = 0, update_thread = 0;
    for (;;) {
        idx = (idx - 1) & (ETW_ATTACH_RING - 1);
        const etw_ring_ent *e = &a->ring[idx];
        if (!(e->flags & ETW_RING_USED)) break;
        if (e->qpc == qpc) {
            if (e->tid == tid) {
                if (exact) return ret; /* two events, same time, thread, CPU: the later */
                if (e->cpu == cpu) exact = 1;
                ret = idx;
                update_thread = 0;
            } else if (e->tid == ETW_NO_ID) {
                if (ret == ETW_NO_ID || (!exact && e->cpu == cpu)) {
                    ret = idx;
                    update_thread = 1;
                }
            }
        } else if (e->qpc < qpc) {
            break;
        }
        if (idx == a->ring_cur) break;
    }
    if (update_thread && ret != ETW_NO_ID) a->ring[ret].tid = tid;
    return ret;
}

/* ---- pending stacks and their lists --------------------------------------- */

static etw_pend *P(etw_attach *a, uint32_t id) { return &a->pends[id]; }

static void age_unlink(etw_attach *a, uint32_t id);

static void list_unlink(etw_attach *a, int l, uint32_t id) {
    etw_pend *x = P(a, id);
    if (x->prev[l]) P(a, x->prev[l] - 1)->next[l] = x->next[l];
    if (x->next[l]) P(a, x->next[l] - 1)->prev[l] = x->prev[l];
    x->next[l] = x->prev[l] = 0;
}

/* Key lists: the index maps a key to its list's head. */
typedef struct key_ctx {
    const etw_attach *a;
    int which;
    uint64_t key;
} key_ctx;

static int key_eq(const void *ctx, uint32_t id) {
    const key_ctx *k = ctx;
    const etw_pend *x = &k->a->pends[id];
    return (k->which ? x->ukey : x->kkey) == k->key;
}

static uint64_t key_hash(const etw_profile *p, int which, uint64_t key) {
    uint64_t kb[2] = {key, (uint64_t)which};
    return etw_idx_hash(p->tree.seed, kb, sizeof kb);
}

static etw_status key_push(etw_profile *p, int which, uint64_t key, uint32_t id) {
    etw_attach *a = &p->att;
    etw_idxmap *m = &a->keys[which];
    etw_status st = etw_idx_reserve(m, &p->alloc, &p->tree.bytes);
    if (st != ETW_OK) return st;
    uint64_t h = key_hash(p, which, key);
    key_ctx k = {a, which, key};
    size_t slot;
    etw_pend *x = P(a, id);
    if (which) x->ukey = key;
    else x->kkey = key;
    int l = which ? ETW_L_KEY_U : ETW_L_KEY_K;
    uint32_t head = etw_idx_find(m, h, key_eq, &k, &slot);
    x->prev[l] = 0;
    if (head != ETW_NO_ID) {
        x->next[l] = head + 1;
        P(a, head)->prev[l] = id + 1;
        m->slots[slot].id1 = id + 1;
    } else {
        x->next[l] = 0;
        etw_idx_set(m, slot, h, id);
    }
    x->flags |= which ? ETW_PEND_ON_U : ETW_PEND_ON_K;
    return ETW_OK;
}

static void key_unlink(etw_profile *p, int which, uint32_t id) {
    etw_attach *a = &p->att;
    etw_pend *x = P(a, id);
    uint8_t on = which ? ETW_PEND_ON_U : ETW_PEND_ON_K;
    if (!(x->flags & on)) return;
    int l = which ? ETW_L_KEY_U : ETW_L_KEY_K;
    if (!x->prev[l]) { /* the head: the index moves to the next, or forgets the key */
        etw_idxmap *m = &a->keys[which];
        uint64_t key = which ? x->ukey : x->kkey;
        key_ctx k = {a, which, key};
        size_t slot;
        uint32_t head = etw_idx_find(m, key_hash(p, which, key), key_eq, &k, &slot);
        if (head == id) {
            if (x->next[l]) m->slots[slot].id1 = x->next[l];
            else etw_idx_remove(m, slot);
        }
    }
    list_unlink(a, l, id);
    x->flags &= (uint8_t)~on;
}

/* Take a key's whole list (its definition came): the key is forgotten, as
 * keys are reused. Returns the head id + 1, 0 when none waits. */
static uint32_t key_take(etw_profile *p, int which, uint64_t key) {
    etw_attach *a = &p->att;
    etw_idxmap *m = &a->keys[which];
    key_ctx k = {a, which, key};
    size_t slot;
    uint32_t head = etw_idx_find(m, key_hash(p, which, key), key_eq, &k, &slot);
    if (head == ETW_NO_ID) return 0;
    etw_idx_remove(m, slot);
    return head + 1;
}

typedef struct thread_ctx {
    const etw_attach *a;
    uint32_t tid;
} thread_ctx;

static int thread_eq(const void *ctx, uint32_t id) {
    const thread_ctx *k = ctx;
    return k->a->threads[id].tid == k->tid;
}

static etw_status thread_get(etw_profile *p, uint32_t tid, uint32_t *out) {
    etw_attach *a = &p->att;
    uint64_t h = etw_idx_hash(p->tree.seed ^ 0x7468726561647321u, &tid, sizeof tid);
    thread_ctx k = {a, tid};
    size_t slot;
    uint32_t i = etw_idx_find(&a->thread_idx, h, thread_eq, &k, &slot);
    if (i != ETW_NO_ID) {
        *out = i;
        return ETW_OK;
    }
    if (a->nthreads >= UINT32_MAX - 1) return ETW_E_LIMIT;
    size_t cap = a->threads_cap;
    etw_status st = etw_grow_array(&p->alloc, (void **)&a->threads, &cap, (size_t)a->nthreads + 1,
                                   sizeof *a->threads, &p->tree.bytes);
    if (st != ETW_OK) return st;
    a->threads_cap = cap > UINT32_MAX ? UINT32_MAX : (uint32_t)cap;
    if ((a->thread_idx.count + 1) * 4 > a->thread_idx.cap * 3) {
        st = etw_idx_reserve(&a->thread_idx, &p->alloc, &p->tree.bytes);
        if (st != ETW_OK) return st;
        etw_idx_find(&a->thread_idx, h, thread_eq, &k, &slot);
    }
    etw_thread_rec *t = &a->threads[a->nthreads];
    memset(t, 0, sizeof *t);
    t->tid = tid;
    t->last_exit_qpc = INT64_MIN;
    etw_idx_set(&a->thread_idx, slot, h, a->nthreads);
    *out = a->nthreads++;
    return ETW_OK;
}

static void thread_add(etw_attach *a, uint32_t ti, uint32_t id) {
    etw_pend *x = P(a, id);
    if (x->flags & ETW_PEND_WAITING) return;
    etw_thread_rec *t = &a->threads[ti];
    x->wait_ti = ti;
    x->next[ETW_L_THREAD] = t->waiting;
    x->prev[ETW_L_THREAD] = 0;
    if (t->waiting) P(a, t->waiting - 1)->prev[ETW_L_THREAD] = id + 1;
    t->waiting = id + 1;
    x->flags |= ETW_PEND_WAITING;
}

static void thread_unlink(etw_profile *p, uint32_t id) {
    etw_attach *a = &p->att;
    etw_pend *x = P(a, id);
    if (!(x->flags & ETW_PEND_WAITING)) return;
    /* the list it is on: the thread of the stack event that put it there
     * (not necessarily x->tid, when two threads' stacks named one event) */
    if (!x->prev[ETW_L_THREAD] && a->threads[x->wait_ti].waiting == id + 1)
        a->threads[x->wait_ti].waiting = x->next[ETW_L_THREAD];
    list_unlink(a, ETW_L_THREAD, id);
    x->flags &= (uint8_t)~ETW_PEND_WAITING;
}

static void age_unlink(etw_attach *a, uint32_t id) {
    etw_pend *x = P(a, id);
    if (a->age_head == id + 1) a->age_head = x->next[ETW_L_AGE];
    if (a->age_tail == id + 1) a->age_tail = x->prev[ETW_L_AGE];
    list_unlink(a, ETW_L_AGE, id);
}

static void pend_free(etw_profile *p, uint32_t id) {
    etw_attach *a = &p->att;
    key_unlink(p, 0, id);
    key_unlink(p, 1, id);
    thread_unlink(p, id);
    age_unlink(a, id);
    etw_pend *x = P(a, id);
    x->flags = 0;
    x->gen++;
    x->next[0] = a->free_head;
    a->free_head = id + 1;
    a->live--;
}

/* Drop a pending stack that will not complete: its sample is counted
 * without a stack. */
static etw_status pend_drop(etw_profile *p, uint32_t id) {
    etw_pend *x = P(&p->att, id);
    etw_status st = ETW_OK;
    if ((x->flags & (ETW_PEND_SAMPLE | ETW_PEND_EMITTED)) == ETW_PEND_SAMPLE)
        st = deliver(p, x->seq, 1, x->sample_pid, x->sample_tid, x->weight, x->time, ETW_STACK_NONE);
    pend_free(p, id);
    return st;
}

/* A new pending stack for ring slot `slot` (or for an event not in the
 * ring: slot ETW_NO_ID, with its own sample info in e). */
static etw_status pend_new(etw_profile *p, etw_ring_ent *e, uint32_t pid, uint32_t tid, uint32_t *out) {
    etw_attach *a = &p->att;
    etw_status st;
    if (a->live >= a->max_pending && a->age_head) {
        st = pend_drop(p, a->age_head - 1);
        p->stats.pending_dropped++;
        if (st != ETW_OK) return st;
    }
    uint32_t id;
    if (a->free_head) {
        id = a->free_head - 1;
        a->free_head = P(a, id)->next[0];
    } else {
        if (a->npends >= UINT32_MAX - 1) return ETW_E_LIMIT;
        size_t cap = a->pends_cap;
        st = etw_grow_array(&p->alloc, (void **)&a->pends, &cap, (size_t)a->npends + 1, sizeof *a->pends,
                            &p->tree.bytes);
        if (st != ETW_OK) return st;
        a->pends_cap = cap > UINT32_MAX ? UINT32_MAX : (uint32_t)cap;
        id = a->npends++;
        P(a, id)->gen = 0;
    }
    etw_pend *x = P(a, id);
    uint32_t gen = x->gen;
    memset(x, 0, sizeof *x);
    x->gen = gen;
    x->flags = ETW_PEND_LIVE;
    x->seq = e->seq;
    x->qpc = e->qpc;
    x->time = e->time;
    x->weight = e->weight;
    x->pid = pid;
    x->tid = tid;
    x->user_stack = ETW_PEND_NO_STACK;
    if ((e->flags & (ETW_RING_SAMPLE | ETW_RING_OWNED)) == ETW_RING_SAMPLE) {
        x->flags |= ETW_PEND_SAMPLE;
        x->sample_pid = e->pid;
        x->sample_tid = e->sample_tid;
    }
    e->flags |= ETW_RING_OWNED;
    e->pend = id + 1;
    e->pend_gen = x->gen;
    /* newest at the tail of the age list */
    x->prev[ETW_L_AGE] = a->age_tail;
    if (a->age_tail) P(a, a->age_tail - 1)->next[ETW_L_AGE] = id + 1;
    a->age_tail = id + 1;
    if (!a->age_head) a->age_head = id + 1;
    a->live++;
    if (a->live > p->stats.pending_peak) p->stats.pending_peak = a->live;
    *out = id;
    return ETW_OK;
}

/* TraceLog's GetIncompleteStackForStackEvent: the pending stack of the
 * event a stack event names. *id ETW_NO_ID when there is none to fill (no
 * such event: orphaned; or the event was removed). */
static etw_status target_for(etw_profile *p, int64_t qpc, uint32_t pid, uint32_t tid, uint16_t cpu,
                             uint32_t *id, int *orphan) {
    etw_attach *a = &p->att;
    *id = ETW_NO_ID;
    *orphan = 0;
    uint32_t slot = ring_best(a, qpc, tid, cpu);
    if (slot == ETW_NO_ID) {
        p->stats.stacks_orphaned++;
        *orphan = 1;
        return ETW_OK;
    }
    etw_ring_ent *e = &a->ring[slot];
    p->stats.stacks_attached++;
    if (e->flags & ETW_RING_HDR_THREAD) p->stats.attached_by_header_thread++;
    if (!(e->flags & ETW_RING_VALID)) {
        p->stats.stacks_on_removed++;
        return ETW_OK;
    }
    if (e->pend) {
        etw_pend *x = P(a, e->pend - 1);
        if ((x->flags & ETW_PEND_LIVE) && x->gen == e->pend_gen) {
            *id = e->pend - 1;
            return ETW_OK;
        }
    }
    return pend_new(p, e, pid, tid, id);
}

/* A stack whose event left the ring found it waiting on its thread. */
static void found_waiting(etw_profile *p) {
    p->stats.stacks_orphaned--;
    p->stats.stacks_attached++;
    p->stats.attached_after_window++;
}

/* ---- completing a stack (TraceLog's IncompleteStack methods) ------------- */

static etw_status scratch_addrs(etw_profile *p, size_t n) {
    return etw_grow_array(&p->alloc, (void **)&p->att.addrs, &p->att.addrs_cap, n ? n : 1, sizeof(uint64_t),
                          &p->tree.bytes);
}

/* Splice the kernel fragment kfrag (root = outermost kernel frame) on top
 * of `stack`. */
static etw_status splice(etw_profile *p, uint32_t stack, uint32_t kfrag, uint32_t *out) {
    etw_attach *a = &p->att;
    etw_nodetab *fr = &p->tree.frags;
    /* the innermost frame is the fragment's own */
    if (p->tree.leaf_only) return etw_stacktree_child(&p->tree, ETW_STACK_NONE, fr->nodes[kfrag].frame, out);
    uint32_t depth = fr->nodes[kfrag].depth;
    etw_status st = etw_grow_array(&p->alloc, (void **)&a->frames, &a->frames_cap, depth ? depth : 1,
                                   sizeof *a->frames, &p->tree.bytes);
    if (st != ETW_OK) return st;
    uint32_t n = 0;
    for (uint32_t f = kfrag; f && n < depth; f = fr->nodes[f].parent) a->frames[n++] = fr->nodes[f].frame;
    uint32_t cur = stack;
    while (n-- > 0) {
        st = etw_stacktree_child(&p->tree, cur, a->frames[n], &cur);
        if (st != ETW_OK) return st;
    }
    *out = cur;
    return ETW_OK;
}

/* EmitStackForEventIfReady: *done 1 when the stack was emitted. */
static etw_status emit_if_ready(etw_profile *p, uint32_t id, int *done) {
    etw_attach *a = &p->att;
    etw_pend *x = P(a, id);
    *done = 0;
    if (x->user_stack == ETW_PEND_NO_STACK) return ETW_OK;
    int has_k = (x->flags & ETW_PEND_HAS_K) != 0;
    if (has_k) {
        uint32_t s;
        etw_status st = splice(p, x->user_stack, x->kfrag, &s);
        if (st != ETW_OK) return st;
        x = P(a, id);
        x->user_stack = s;
        x->kfrag = 0;
        x->flags &= (uint8_t)~ETW_PEND_HAS_K;
    }
    if (!has_k && (x->flags & ETW_PEND_ON_K)) return ETW_OK;
    *done = 1;
    if (!(x->flags & ETW_PEND_EMITTED)) {
        x->flags |= ETW_PEND_EMITTED;
        etw_status st = deliver(p, x->seq, (x->flags & ETW_PEND_SAMPLE) != 0, x->sample_pid, x->sample_tid,
                                x->weight, x->time, x->user_stack);
        if (st != ETW_OK) return st;
        x = P(a, id);
    }
    if (!(x->flags & (ETW_PEND_ON_K | ETW_PEND_ON_U | ETW_PEND_WAITING))) pend_free(p, id);
    return ETW_OK;
}

static etw_status log_kernel_frames(etw_profile *p, uint32_t id, const uint64_t *addr, size_t n,
                                    uint64_t kmin, int64_t raw, int *complete) {
    etw_attach *a = &p->att;
    uint32_t node;
    etw_status st =
        etw_stacktree_push_leaf_first(&p->tree, &p->tree.frags, 0, P(a, id)->pid, addr, n, kmin, raw, &node);
    if (st != ETW_OK) return st;
    etw_pend *x = P(a, id);
    x->kfrag = node;
    x->flags |= ETW_PEND_HAS_K;
    /* processes 0 and 4 never have a user part */
    if (x->pid == 0 || x->pid == 4) x->user_stack = ETW_STACK_NONE;
    return emit_if_ready(p, id, complete);
}

static etw_status log_user_stack(etw_profile *p, uint32_t id, uint32_t stack) {
    P(&p->att, id)->user_stack = stack;
    int done;
    return emit_if_ready(p, id, &done);
}

static etw_status log_kernel_key(etw_profile *p, uint32_t id, uint64_t key, int *complete) {
    etw_pend *x = P(&p->att, id);
    *complete = 0;
    if (x->flags & ETW_PEND_ON_K) { /* an event with two kernel keys: keep the first */
        *complete = 1;
        return ETW_OK;
    }
    if (x->pid == 0 || x->pid == 4) {
        x->user_stack = ETW_STACK_NONE;
        *complete = 1;
    }
    return key_push(p, 0, key, id);
}

static etw_status log_user_key(etw_profile *p, uint32_t id, uint64_t key) {
    if (P(&p->att, id)->flags & ETW_PEND_ON_U) return ETW_OK; /* two user keys: keep the first */
    return key_push(p, 1, key, id);
}

/* EmitStackOnExitFromKernel: a user stack (or key) completes every kernel
 * fragment waiting on the thread. *found: target was among them. */
static etw_status exit_from_kernel(etw_profile *p, uint32_t ti, int by_key, uint32_t stack, uint64_t key,
                                   uint32_t target, int *found, int64_t qpc, int *qpc_found) {
    etw_attach *a = &p->att;
    *found = 0;
    if (qpc_found) *qpc_found = 0;
    uint32_t it = a->threads[ti].waiting;
    a->threads[ti].waiting = 0;
    while (it) {
        uint32_t id = it - 1;
        etw_pend *x = P(a, id);
        it = x->next[ETW_L_THREAD];
        x->next[ETW_L_THREAD] = x->prev[ETW_L_THREAD] = 0;
        x->flags &= (uint8_t)~ETW_PEND_WAITING;
        if (id == target) *found = 1;
        if (qpc_found && x->qpc == qpc) *qpc_found = 1;
        p->stats.kernel_completed++;
        etw_status st = by_key ? log_user_key(p, id, key) : log_user_stack(p, id, stack);
        if (st != ETW_OK) return st;
    }
    return ETW_OK;
}

/* ---- reference counts per key, for the statistics ------------------------ */

typedef struct ref_ctx {
    const etw_attach *a;
    uint64_t key;
    uint32_t which;
} ref_ctx;

static int ref_eq(const void *ctx, uint32_t id) {
    const ref_ctx *k = ctx;
    return k->a->refs[id].key == k->key && k->a->refs[id].which == k->which;
}

/* add 1: a reference; add 0: the key's definition (its references so far
 * are resolved). */
static etw_status keyref(etw_profile *p, int which, uint64_t key, int add) {
    etw_attach *a = &p->att;
    uint64_t h = key_hash(p, which + 2, key);
    ref_ctx k = {a, key, (uint32_t)which};
    size_t slot;
    uint32_t i = etw_idx_find(&a->ref_idx, h, ref_eq, &k, &slot);
    if (!add) {
        if (i != ETW_NO_ID) {
            p->stats.keys_resolved += a->refs[i].count;
            a->refs[i].count = 0;
        }
        return ETW_OK;
    }
    if (i == ETW_NO_ID) {
        if (a->nrefs >= UINT32_MAX - 1) return ETW_E_LIMIT;
        etw_status st = etw_grow_array(&p->alloc, (void **)&a->refs, &a->refs_cap, a->nrefs + 1, sizeof *a->refs,
                                       &p->tree.bytes);
        if (st != ETW_OK) return st;
        if ((a->ref_idx.count + 1) * 4 > a->ref_idx.cap * 3) {
            st = etw_idx_reserve(&a->ref_idx, &p->alloc, &p->tree.bytes);
            if (st != ETW_OK) return st;
            etw_idx_find(&a->ref_idx, h, ref_eq, &k, &slot);
        }
        i = (uint32_t)a->nrefs++;
        memset(&a->refs[i], 0, sizeof a->refs[i]);
        a->refs[i].key = key;
        a->refs[i].which = (uint32_t)which;
        etw_idx_set(&a->ref_idx, slot, h, i);
    }
    a->refs[i].count++;
    return ETW_OK;
}

/* ---- the stack events ---------------------------------------------------- */

/* Read n pointers of size ptr at d into the scratch. */
static etw_status read_addrs(etw_profile *p, const uint8_t *d, size_t n, unsigned ptr) {
    etw_status st = scratch_addrs(p, n);
    if (st != ETW_OK) return st;
    for (size_t i = 0; i < n; i++) p->att.addrs[i] = ptr == 8 ? etw_le64(d + i * 8) : etw_le32(d + i * 4);
    return ETW_OK;
}

etw_status etw_attach_stackwalk(etw_profile *p, const etw_event *ev) {
    etw_attach *a = &p->att;
    unsigned ptr = ev->pointer_size == 4 ? 4 : 8;
    uint64_t kmin = kernel_min(ptr);
    const uint8_t *d = ev->user_data;
    size_t len = ev->user_data_len;
    etw_status st;
    switch (ev->opcode) {
    case 32: { /* Stack: EventTimeStamp, StackProcess, StackThread, Stack1..N */
        p->stats.stack_events++;
        if (len < 16) return ETW_OK;
        int64_t ts = (int64_t)etw_le64(d);
        uint32_t pid = etw_le32(d + 8), tid = etw_le32(d + 12);
        size_t n = (len - 16) / ptr;
        uint32_t id;
        int orphan;
        st = target_for(p, ts, pid, tid, ev->cpu, &id, &orphan);
        if (st != ETW_OK || n == 0) return st;
        st = read_addrs(p, d + 16, n, ptr);
        if (st != ETW_OK) return st;
        uint32_t ti;
        st = thread_get(p, tid, &ti);
        if (st != ETW_OK) return st;
        if (a->addrs[n - 1] >= kmin) { /* kernel only: may have a user part to come */
            if (id != ETW_NO_ID) {
                int complete;
                st = log_kernel_frames(p, id, a->addrs, n, kmin, ev->raw_timestamp, &complete);
                if (st != ETW_OK) return st;
                if (!complete && (P(a, id)->flags & ETW_PEND_LIVE)) thread_add(a, ti, id);
            }
            return ETW_OK;
        }
        uint32_t stack;
        st = etw_stacktree_push_leaf_first(&p->tree, &p->tree.stacks, ETW_STACK_NONE, pid, a->addrs, n, kmin,
                                           ev->raw_timestamp, &stack);
        if (st != ETW_OK) return st;
        int64_t last_exit = a->threads[ti].last_exit_qpc;
        int logged = 0;
        if (a->addrs[0] < kmin) { /* starts in user mode: the thread left the kernel here */
            int waiting_found;
            st = exit_from_kernel(p, ti, 0, stack, 0, id, &logged, ts, &waiting_found);
            if (st != ETW_OK) return st;
            a->threads[ti].last_exit_qpc = ev->raw_timestamp;
            if (orphan && waiting_found) found_waiting(p);
        }
        if (!logged && id != ETW_NO_ID && ts >= last_exit) return log_user_stack(p, id, stack);
        return ETW_OK;
    }
    case 37:   /* StackKeyKernel */
    case 38: { /* StackKeyUser: EventTimeStamp, StackProcess, StackThread, StackKey */
        p->stats.stack_events++;
        p->stats.key_references++;
        if (len < 16 + (size_t)ptr) return ETW_OK;
        int64_t ts = (int64_t)etw_le64(d);
        uint32_t pid = etw_le32(d + 8), tid = etw_le32(d + 12);
        uint64_t key = ptr == 8 ? etw_le64(d + 16) : etw_le32(d + 16);
        st = keyref(p, ev->opcode == 38, key, 1);
        if (st != ETW_OK) return st;
        uint32_t id;
        int orphan;
        st = target_for(p, ts, pid, tid, ev->cpu, &id, &orphan);
        if (st != ETW_OK) return st;
        uint32_t ti;
        if (id == ETW_NO_ID) {
            if (!orphan || ev->opcode != 38) return ETW_OK;
            /* its event left the window: a kernel fragment of it may still
             * wait on the thread, and this user stack is where the thread
             * left the kernel (TraceLog drops it and leaves the fragments
             * to the thread's next user stack) */
            st = thread_get(p, tid, &ti);
            if (st != ETW_OK) return st;
            int found, waiting_found;
            st = exit_from_kernel(p, ti, 1, 0, key, ETW_NO_ID, &found, ts, &waiting_found);
            if (st == ETW_OK && waiting_found) found_waiting(p);
            return st;
        }
        st = thread_get(p, tid, &ti);
        if (st != ETW_OK) return st;
        if (ev->opcode == 37) {
            int complete;
            st = log_kernel_key(p, id, key, &complete);
            if (st != ETW_OK) return st;
            if (!complete) thread_add(a, ti, id);
            return ETW_OK;
        }
        int found;
        st = exit_from_kernel(p, ti, 1, 0, key, id, &found, 0, NULL);
        if (st != ETW_OK) return st;
        if (!found) st = log_user_key(p, id, key);
        return st;
    }
    case 34:   /* KeyCreate */
    case 35:   /* KeyDelete */
    case 36: { /* KeyRundown: StackKey, Stack1..N */
        if (ev->opcode == 34) return ETW_OK; /* no frames (TraceLog ignores it too) */
        if (len < ptr) return ETW_OK;
        uint64_t key = ptr == 8 ? etw_le64(d) : etw_le32(d);
        size_t n = (len - ptr) / ptr;
        if (n == 0) return ETW_OK;
        st = read_addrs(p, d + ptr, n, ptr);
        if (st != ETW_OK) return st;
        int which = a->addrs[n - 1] >= kmin ? 0 : 1;
        st = keyref(p, which, key, 0);
        if (st != ETW_OK) return st;
        uint32_t it = key_take(p, which, key);
        uint32_t last_pid = ETW_NO_ID, last_stack = 0;
        int l = which ? ETW_L_KEY_U : ETW_L_KEY_K;
        while (it) {
            uint32_t id = it - 1;
            etw_pend *x = P(a, id);
            it = x->next[l];
            x->next[l] = x->prev[l] = 0;
            x->flags &= (uint8_t)~(which ? ETW_PEND_ON_U : ETW_PEND_ON_K);
            if (!which) {
                int complete;
                st = log_kernel_frames(p, id, a->addrs, n, kmin, ev->raw_timestamp, &complete);
            } else {
                if (x->pid != last_pid) {
                    st = etw_stacktree_push_leaf_first(&p->tree, &p->tree.stacks, ETW_STACK_NONE, x->pid,
                                                       a->addrs, n, kmin, ev->raw_timestamp, &last_stack);
                    if (st != ETW_OK) return st;
                    last_pid = P(a, id)->pid;
                }
                st = log_user_stack(p, id, last_stack);
            }
            if (st != ETW_OK) return st;
        }
        return ETW_OK;
    }
    default:
        return ETW_OK;
    }
}

/* ClrStack/Walk: ClrInstanceID u16, Reserved1 u8, Reserved2 u8, FrameCount
 * u32, then FrameCount pointers (the manifest declares 2; the rest follow).
 * It belongs to the previous CLR event of the same thread. */
etw_status etw_attach_clrstack(etw_profile *p, const etw_event *ev, uint32_t pid, uint32_t tid) {
    etw_attach *a = &p->att;
    p->stats.stack_events++;
    p->stats.clr_stacks++;
    unsigned ptr = ev->pointer_size == 4 ? 4 : 8;
    if (ev->user_data_len < 8) return ETW_OK;
    uint32_t claimed = etw_le32(ev->user_data + 4);
    size_t room = (ev->user_data_len - 8) / ptr;
    size_t n = claimed < room ? claimed : room; /* a count the payload cannot hold is cut */
    if (n < claimed) p->stats.clr_frames_cut++;
    uint32_t idx = a->ring_cur;
    for (;;) {
        idx = (idx - 1) & (ETW_ATTACH_RING - 1);
        if (idx == a->ring_cur) break;
        etw_ring_ent *e = &a->ring[idx];
        if (!(e->flags & ETW_RING_USED)) break;
        if (e->tid != tid || !(e->flags & ETW_RING_CLR)) continue;
        if (e->flags & ETW_RING_CLR_STACKED) return ETW_OK; /* twice (lost events): TraceLog drops it */
        e->flags |= ETW_RING_CLR_STACKED;
        p->stats.stacks_attached++;
        p->stats.clr_stacks_attached++;
        if (n == 0) return ETW_OK;
        etw_status st = read_addrs(p, ev->user_data + 8, n, ptr);
        if (st != ETW_OK) return st;
        uint32_t ti, stack;
        st = thread_get(p, tid, &ti);
        if (st != ETW_OK) return st;
        st = etw_stacktree_push_cached(&p->tree, &a->threads[ti].clr_path, pid, a->addrs, n, kernel_min(ptr),
                                       ev->raw_timestamp, &stack);
        if (st != ETW_OK) return st;
        int is_sample = (e->flags & (ETW_RING_SAMPLE | ETW_RING_OWNED)) == ETW_RING_SAMPLE;
        if (is_sample) e->flags |= ETW_RING_OWNED;
        return deliver(p, e->seq, is_sample, e->pid, e->sample_tid, e->weight, e->time, stack);
    }
    p->stats.stacks_orphaned++;
    return ETW_OK;
}

/* STACK_TRACE32/64 extended items: {u64 MatchId; addresses}. */
etw_status etw_attach_ext(etw_profile *p, const etw_event *ev, uint32_t slot, const etw_ring_ent *self,
                          uint32_t pid, uint32_t tid, int user_exit_event) {
    etw_attach *a = &p->att;
    etw_ext_item it;
    uint32_t pos = 0;
    while (etw_event_next_ext(ev, &pos, &it) == ETW_OK) {
        if (it.type != ETW_EXT_STACK_TRACE32 && it.type != ETW_EXT_STACK_TRACE64) continue;
        p->stats.stack_events++;
        unsigned ptr = it.type == ETW_EXT_STACK_TRACE64 ? 8 : 4;
        if (it.size < 8 + ptr) continue;
        size_t n = (it.size - 8u) / ptr;
        etw_status st = read_addrs(p, it.data + 8, n, ptr);
        if (st != ETW_OK) return st;
        uint64_t kmin = kernel_min(ptr);
        uint32_t ti;
        st = thread_get(p, tid, &ti);
        if (st != ETW_OK) return st;
        etw_ring_ent own = *self;
        etw_ring_ent *e = slot != ETW_NO_ID ? &a->ring[slot] : &own;
        if (!(e->flags & ETW_RING_VALID)) continue; /* a removed event: no stack */
        if (a->addrs[n - 1] >= kmin && pid != 0 && pid != 4) {
            uint32_t id;
            st = pend_new(p, e, pid, tid, &id);
            if (st != ETW_OK) return st;
            p->stats.stacks_attached++;
            int complete;
            st = log_kernel_frames(p, id, a->addrs, n, kmin, ev->raw_timestamp, &complete);
            if (st != ETW_OK) return st;
            if (!complete && (P(a, id)->flags & ETW_PEND_LIVE)) thread_add(a, ti, id);
            continue;
        }
        uint32_t stack;
        st = etw_stacktree_push_leaf_first(&p->tree, &p->tree.stacks, ETW_STACK_NONE, pid, a->addrs, n, kmin,
                                           ev->raw_timestamp, &stack);
        if (st != ETW_OK) return st;
        p->stats.stacks_attached++;
        if (user_exit_event) { /* Kernel-EventTracing's user stack on leaving the kernel */
            int found;
            st = exit_from_kernel(p, ti, 0, stack, 0, ETW_NO_ID, &found, 0, NULL);
            a->threads[ti].last_exit_qpc = ev->raw_timestamp;
            if (st != ETW_OK) return st;
            continue;
        }
        int is_sample = (e->flags & (ETW_RING_SAMPLE | ETW_RING_OWNED)) == ETW_RING_SAMPLE;
        if (is_sample) e->flags |= ETW_RING_OWNED;
        st = deliver(p, e->seq, is_sample, e->pid, e->sample_tid, e->weight, e->time, stack);
        if (st != ETW_OK) return st;
    }
    return ETW_OK;
}

static int evs_cmp(const void *x, const void *y) {
    const etw_evstack *a = x, *b = y;
    uint64_t sa = ((uint64_t)a->seq_hi << 32) | a->seq_lo, sb = ((uint64_t)b->seq_hi << 32) | b->seq_lo;
    return sa < sb ? -1 : sa > sb;
}

etw_status etw_attach_finish(etw_profile *p) {
    etw_attach *a = &p->att;
    etw_status st;
    /* the ring's samples that got no stack */
    for (uint32_t i = 0; i < ETW_ATTACH_RING; i++) {
        st = ring_retire(p, &a->ring[i]);
        if (st != ETW_OK) return st;
    }
    /* kernel fragments still waiting for a user part: the kernel part
     * alone (TraceLog completes them with the thread's root) */
    for (uint32_t ti = 0; ti < a->nthreads; ti++) {
        int found;
        st = exit_from_kernel(p, ti, 0, ETW_STACK_NONE, 0, ETW_NO_ID, &found, 0, NULL);
        if (st != ETW_OK) return st;
    }
    /* references to keys never defined */
    for (size_t i = 0; i < a->nrefs; i++) p->stats.keys_undefined += a->refs[i].count;
    while (a->age_head) {
        uint32_t id = a->age_head - 1;
        st = pend_drop(p, id);
        if (st != ETW_OK) return st;
    }
    if (a->nevs > 1) qsort(a->evs, a->nevs, sizeof *a->evs, evs_cmp);
    a->evs_sorted = 1;
    return ETW_OK;
}

uint32_t etw_attach_event_stack(const etw_profile *p, uint64_t seq) {
    const etw_attach *a = &p->att;
    if (!a->evs_sorted) return ETW_STACK_NONE;
    size_t lo = 0, hi = a->nevs;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        const etw_evstack *e = &a->evs[mid];
        uint64_t s = ((uint64_t)e->seq_hi << 32) | e->seq_lo;
        if (s < seq) lo = mid + 1;
        else if (s > seq) hi = mid;
        else return e->stack;
    }
    return ETW_STACK_NONE;
}
