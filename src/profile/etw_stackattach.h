/* etw_stackattach.h - attaching stack events to the events they belong to,
 * by the rules of PerfView's TraceLog (docs/stacks.md of the project):
 * a ring of the last events to match EventTimeStamp against, pending
 * stacks waiting for a stack-key definition or for their thread's next user
 * stack, kernel and user halves spliced. */
#ifndef ETW_STACKATTACH_H
#define ETW_STACKATTACH_H

#include <stddef.h>
#include <stdint.h>

#include "etwdecode/etw_event.h"
#include "etwdecode/etw_status.h"
#include "profile/etw_stacktree.h"

/* Events a stack can still find its target among (TraceLog's historySize). */
#define ETW_ATTACH_RING 2048u

/* ring entry flags */
#define ETW_RING_USED 0x01u        /* holds an event */
#define ETW_RING_VALID 0x02u       /* not removed (idle samples are removed) */
#define ETW_RING_CLR 0x04u         /* a CLR event: ClrStack/Walk attaches to it */
#define ETW_RING_CLR_STACKED 0x08u /* it got its CLR stack */
#define ETW_RING_SAMPLE 0x10u      /* counted as a sample */
#define ETW_RING_OWNED 0x20u       /* its sample was delivered or handed to a pending stack */
#define ETW_RING_HDR_THREAD 0x40u  /* matched by its header thread (Process/Thread events) */

typedef struct etw_ring_ent {
    int64_t qpc;          /* raw timestamp */
    uint64_t seq;
    int64_t time;         /* FILETIME */
    double weight;
    uint32_t tid;         /* the thread stacks match (ETW_NO_ID: none) */
    uint32_t pid, sample_tid;
    uint32_t pend;        /* pending stack id + 1, 0: none */
    uint32_t pend_gen;
    uint16_t cpu;
    uint8_t flags;
} etw_ring_ent;

/* pending flags */
#define ETW_PEND_LIVE 0x01u
#define ETW_PEND_SAMPLE 0x02u
#define ETW_PEND_ON_K 0x04u     /* on a kernel stack key's list */
#define ETW_PEND_ON_U 0x08u     /* on a user stack key's list */
#define ETW_PEND_WAITING 0x10u  /* kernel fragment on its thread's list */
#define ETW_PEND_HAS_K 0x20u    /* kfrag holds kernel frames to splice */
#define ETW_PEND_EMITTED 0x40u

/* lists a pending stack is on */
enum { ETW_L_KEY_K = 0, ETW_L_KEY_U = 1, ETW_L_THREAD = 2, ETW_L_AGE = 3, ETW_L_COUNT = 4 };

#define ETW_PEND_NO_STACK 0xFFFFFFFFu

/* An event whose stack is not complete yet (TraceLog's IncompleteStack). */
typedef struct etw_pend {
    uint64_t seq;
    int64_t qpc;                     /* the event's raw timestamp */
    int64_t time;
    double weight;
    uint64_t kkey, ukey;
    uint32_t pid, tid;               /* the stack's process and thread */
    uint32_t sample_pid, sample_tid; /* the sample's (when ETW_PEND_SAMPLE) */
    uint32_t user_stack;             /* node, ETW_PEND_NO_STACK until known */
    uint32_t kfrag;                  /* node of t->frags (ETW_PEND_HAS_K) */
    uint32_t gen;
    uint32_t wait_ti;                /* ETW_PEND_WAITING: the thread record it waits on */
    uint32_t next[ETW_L_COUNT], prev[ETW_L_COUNT]; /* ids + 1, 0: none */
    uint8_t flags;
} etw_pend;

typedef struct etw_thread_rec {
    uint32_t tid;
    uint32_t waiting;         /* head of the kernel fragments' list, id + 1 */
    int64_t last_exit_qpc;    /* when a user stack last completed them */
    etw_pathcache clr_path;   /* its last ClrStack/Walk stack */
} etw_thread_rec;

/* event -> stack, 12 bytes */
typedef struct etw_evstack {
    uint32_t seq_lo, seq_hi, stack;
} etw_evstack;

/* References per stack key not yet defined (for the statistics). */
typedef struct etw_keyref {
    uint64_t key;
    uint64_t count;
    uint32_t which;
    uint32_t pad_;
} etw_keyref;

typedef struct etw_attach {
    etw_ring_ent ring[ETW_ATTACH_RING];
    uint32_t ring_cur;        /* next slot to write */

    etw_pend *pends;
    uint32_t npends, pends_cap;
    uint32_t free_head;       /* free list through next[0], id + 1 */
    uint32_t live;
    uint32_t age_head, age_tail; /* oldest / newest live, id + 1 */
    uint32_t max_pending;

    etw_idxmap keys[2];       /* kernel, user: key -> head pending id */

    etw_keyref *refs;
    size_t nrefs, refs_cap;
    etw_idxmap ref_idx;

    etw_thread_rec *threads;
    uint32_t nthreads, threads_cap;
    etw_idxmap thread_idx;

    etw_evstack *evs;
    size_t nevs, evs_cap;
    int evs_sorted;

    uint64_t *addrs;          /* scratch: a stack's addresses */
    size_t addrs_cap;
    uint32_t *frames;         /* scratch: a fragment's frame ids */
    size_t frames_cap;
} etw_attach;

struct etw_profile;

etw_status etw_attach_init(struct etw_profile *p);
void etw_attach_free(struct etw_profile *p);

/* Put an event in the ring (every event that may get a stack). Returns the
 * slot. */
uint32_t etw_attach_push(struct etw_profile *p, const etw_ring_ent *e);

/* The stack events: StackWalk (class def2fe46), ClrStack/Walk, extended
 * items of ev (slot: ev's ring slot, or ETW_NO_ID when it is not in the
 * ring; self: ev's own entry, as it would be in the ring). */
etw_status etw_attach_stackwalk(struct etw_profile *p, const etw_event *ev);
etw_status etw_attach_clrstack(struct etw_profile *p, const etw_event *ev, uint32_t pid, uint32_t tid);
etw_status etw_attach_ext(struct etw_profile *p, const etw_event *ev, uint32_t slot, const etw_ring_ent *self,
                          uint32_t pid, uint32_t tid, int user_exit_event);

/* A sample that gets no stack (not in the ring): counted now. */
etw_status etw_attach_deliver_now(struct etw_profile *p, uint64_t seq, uint32_t pid, uint32_t tid, double w,
                                  int64_t time);

/* End of the trace: complete what waited, count what never got a stack. */
etw_status etw_attach_finish(struct etw_profile *p);

uint32_t etw_attach_event_stack(const struct etw_profile *p, uint64_t seq);

#endif
