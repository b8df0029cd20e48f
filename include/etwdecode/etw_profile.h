/* etw_profile.h - stacks attached to their events, symbolized, and CPU (or
 * any event) profiles built from them.
 *
 * An etw_profile is fed every event of a trace, in the order the reader (or
 * etw_multi) gives them, and assembles what the kernel and the CLR log in
 * pieces:
 *
 *   stacks     StackWalk events (inline Stack, StackKeyKernel/User with their
 *              KeyDelete/KeyRundown definitions, which may come at the end of
 *              the trace), STACK_TRACE32/64 extended items, and the CLR's
 *              ClrStack/Walk, attached to the event they belong to by the
 *              rules PerfView's TraceLog applies (docs/stacks.md of the
 *              project says which and where they come from): kernel and user
 *              halves spliced, a kernel-only fragment completed by its
 *              thread's next user stack;
 *   symbols    every frame resolved, in this order: a .NET JIT method (Method
 *              Load/DCStart/DCStop/Unload Verbose, the rundown at the end of
 *              the trace included), a function of a PDB found in the symbol
 *              stores (ImageID/DbgID_RSDS give each image's PDB identity:
 *              read only when symbol paths are given), an
 *              image (module+RVA; kernel addresses against pid 0's drivers),
 *              else the bare address;
 *   samples    the events chosen as samples (PerfInfo/Sample after
 *              PerfView's idle filter by default; any stacked event with a
 *              caller-chosen weight otherwise), summed per (process, thread,
 *              stack).
 *
 * Stacks are interned in a prefix tree: a stack id names a node; its parent
 * is the stack without its innermost frame; ETW_STACK_NONE (0) is the empty
 * stack. Frames are interned per (address space, address): kernel addresses
 * share one space, user addresses are per process.
 *
 * Use:
 *   etw_profile_new(&p, &opt);
 *   for each event ev of the trace, in order:  etw_profile_add(p, ev, schema);
 *   etw_profile_finish(p);       -- resolves what waited for later events,
 *                                   symbolizes every frame
 *   then read: etw_profile_event_stack(p, seq), the stack tree, the frames,
 *   the samples; or write a profile with etw_profile_write().
 *
 * Events are numbered in the order they are added, from 0 (the `seq` of
 * etw_profile_event_stack): a program that prints events with their stacks
 * reads the trace twice, feeding the profile in the first pass and counting
 * events the same way in the second.
 *
 * Memory (docs/limits.md): the stack tree, frames and samples grow with the
 * number of distinct stacks, frames and (process, thread, stack) triples,
 * not with the number of events; the event -> stack map keeps 12 bytes per
 * event that has a stack (only when keep_event_stacks is set); pending
 * stacks (a key not yet defined, a kernel fragment waiting for its user
 * half) are bounded by ETW_PROFILE_MAX_PENDING, past which the oldest are
 * dropped and counted in etw_profile_stats.
 */
#ifndef ETWDECODE_ETW_PROFILE_H
#define ETWDECODE_ETW_PROFILE_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "etw_decoder.h"
#include "etw_event.h"
#include "etw_schema.h"
#include "etw_status.h"
#include "etw_types.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The empty stack: no frame. */
#define ETW_STACK_NONE 0u

/* Stack events and kernel fragments waiting for a later event (a stack-key
 * definition, a thread's next user stack) at most: past this the oldest is
 * dropped and counted (pending_dropped). */
#ifndef ETW_PROFILE_MAX_PENDING
#define ETW_PROFILE_MAX_PENDING (1u << 20)
#endif

/* The address space a frame belongs to: kernel addresses are the same in
 * every process. */
#define ETW_PROFILE_KERNEL_PID 0xFFFFFFFEu

/* How a frame was resolved, best first. */
typedef enum etw_frame_kind {
    ETW_FRAME_ADDRESS = 0,  /* nothing known: the address alone */
    ETW_FRAME_IMAGE = 1,    /* inside a loaded image: module + RVA */
    ETW_FRAME_PDB = 2,      /* a function of the image's PDB: module!function+offset */
    ETW_FRAME_JIT = 3       /* a .NET JIT-compiled method: Namespace.Method(args)+offset */
} etw_frame_kind;

/* One frame, resolved. Strings are UTF-8, borrowed from the profile (valid
 * until etw_profile_free), not NUL-terminated. */
typedef struct etw_frame_info {
    uint64_t address;
    uint32_t pid;            /* the process, or ETW_PROFILE_KERNEL_PID */
    etw_frame_kind kind;
    const char *module;      /* file name of the image ("ntdll.dll"), or of the
                              * JIT method's module when known; NULL */
    size_t module_len;
    const char *function;    /* PDB function or JIT method name; NULL */
    size_t function_len;
    uint64_t offset;         /* from the function's start (PDB, JIT), else
                              * from the image base (the RVA) */
} etw_frame_info;

/* Write a frame as the outputs show it, NUL-terminated, truncated to n:
 * "module!function+0x1a" (PDB; "+0x.." left out at offset 0),
 * "Namespace.Method(args)" or "module!Namespace.Method(args)" (JIT),
 * "module+0x1234" (IMAGE), "0xADDRESS" (ADDRESS). Returns the length the
 * whole label needs (as snprintf). */
size_t etw_frame_label(const etw_frame_info *f, char *buf, size_t n);

/* Decide whether an event is a sample, and its weight. Called for every
 * event added but the stack events themselves (StackWalk, ClrStack/Walk),
 * KernelTraceControl's symbol events and the idle PerfInfo/Samples the
 * filter removes; return 1 and set *weight to count ev, 0 to skip it. s is
 * ev's schema (may be NULL); pid/tid are the event's process and thread as
 * etw_decoder_event_ids() gives them. */
typedef int (*etw_profile_sample_fn)(void *ctx, const etw_event *ev, const etw_schema *s,
                                     uint32_t pid, uint32_t tid, double *weight);

typedef struct etw_profile_options {
    const etw_allocator *allocator; /* NULL: malloc/free */
    /* Required: decodes the events the profile reads (stacks, images, JIT
     * methods, processes, samples). Not owned; the same decoder may decode
     * the events for output too. */
    etw_decoder *decoder;
    /* Which events are samples: NULL counts kernel PerfInfo/Sample events
     * that PerfView's idle filter keeps (ThreadID 0 of a process that is not
     * "NonProcess" is idle), each weight 1. */
    etw_profile_sample_fn is_sample;
    void *sample_ctx;
    /* 1: keep the stack of every event (etw_profile_event_stack: 12 bytes
     * per event with a stack); 0: only the summed samples, whose memory
     * grows with the distinct stacks, not the events. */
    int keep_event_stacks;
    /* 1: keep of each stack only its innermost frame (where the sample
     * was): a stack id names a one-frame stack (depth 1, parent
     * ETW_STACK_NONE) and the samples are summed per (process, thread,
     * innermost frame), with no prefix tree of the outer frames. The
     * stacks are attached by the same rules, so the innermost frame of
     * each sample is the one the whole stack would have (the kernel part's
     * when a kernel part was spliced on a user stack), and every frame is
     * still interned, so each is resolved as it would be. Without symbol
     * paths only the innermost frames of the samples are resolved (the
     * others stay ETW_FRAME_ADDRESS); etw_profile_stats' frames and
     * frames_resolved count innermost frames only. For summaries by
     * innermost frame (etwdump --stats): less work and memory per stack;
     * the profile writers then write one-frame stacks. */
    int leaf_only;
    /* Local symbol stores to find PDBs in (etw_symstore_find(): a folder in
     * the symbol-server layout, or srv*DIR[*URL]; never the network). */
    const char *const *symbol_paths;
    size_t nsymbol_paths;
    /* Problems (a PDB that does not open, stack references never defined):
     * NULL: only counted. */
    etw_diag_fn on_diag;
    void *diag_ctx;
} etw_profile_options;

typedef struct etw_profile etw_profile;

etw_status etw_profile_new(etw_profile **out, const etw_profile_options *opt);
void etw_profile_free(etw_profile *p);

/* Feed the next event of the trace (every event, in order; s is its schema
 * from etw_decoder_resolve, or NULL). Allocates only when it learns
 * something new (a stack, a frame, an image, a method, a process). */
etw_status etw_profile_add(etw_profile *p, const etw_event *ev, const etw_schema *s);
/* etw_profile_add for a caller that has already asked
 * etw_decoder_event_ids(decoder, ev, s, &pid, &tid) with this profile's
 * decoder (etw_label does): the same result without asking again. s must
 * be the schema those ids came from (not NULL: ETW_E_INVALID_ARG). */
etw_status etw_profile_add_ids(etw_profile *p, const etw_event *ev, const etw_schema *s, uint32_t pid,
                               uint32_t tid);

/* End of the trace: resolve the stacks that waited for later events, attach
 * or drop what is left, and symbolize every frame. Call once, after the last
 * etw_profile_add. */
etw_status etw_profile_finish(etw_profile *p);

/* After finish: the stack of the event numbered seq (the seq-th call of
 * etw_profile_add, from 0), ETW_STACK_NONE if it has none, and always when
 * keep_event_stacks was 0 (the samples' stacks are then only in the summed
 * samples). */
uint32_t etw_profile_event_stack(const etw_profile *p, uint64_t seq);

/* The stack tree. Node ids run from 1 to etw_profile_stack_count(p)
 * inclusive; a node's parent id is always smaller than its own. */
uint32_t etw_profile_stack_count(const etw_profile *p);
uint32_t etw_profile_stack_parent(const etw_profile *p, uint32_t stack);
uint32_t etw_profile_stack_frame(const etw_profile *p, uint32_t stack);
uint32_t etw_profile_stack_depth(const etw_profile *p, uint32_t stack);

/* The frames: ids from 0 to etw_profile_frame_count(p) - 1. */
uint32_t etw_profile_frame_count(const etw_profile *p);
etw_status etw_profile_frame(const etw_profile *p, uint32_t frame, etw_frame_info *out);

/* The samples, summed per (pid, tid, stack): index 0 ..
 * etw_profile_sample_count(p) - 1, in the order each triple was first seen. */
typedef struct etw_profile_sample {
    uint32_t pid;
    uint32_t tid;
    uint32_t stack;        /* ETW_STACK_NONE: the sample's stack never came */
    uint64_t count;        /* events */
    double weight;         /* summed weights */
    int64_t first_time;    /* UTC FILETIME of the first and last event */
    int64_t last_time;
} etw_profile_sample;

size_t etw_profile_sample_count(const etw_profile *p);
etw_status etw_profile_sample_at(const etw_profile *p, size_t i, etw_profile_sample *out);

/* The image name of a process (from kernel Process events, rundown
 * included, or Kernel-Process events): ETW_E_NOT_FOUND when unknown.
 * Borrowed, UTF-8, not NUL-terminated. */
etw_status etw_profile_process_name(const etw_profile *p, uint32_t pid, const char **name, size_t *len);

typedef struct etw_profile_stats {
    uint64_t events;            /* events added */
    uint64_t stack_events;      /* StackWalk, ClrStack/Walk events and stack extended items */
    uint64_t stacks_attached;   /* of those: attached to an event */
    uint64_t stacks_orphaned;   /* no event had that timestamp and thread */
    uint64_t attached_by_header_thread; /* matched only through the header thread (Process/Thread events) */
    uint64_t attached_after_window; /* of stacks_attached: a user stack whose event had left the
                                     * 2,048-event window, found by its kernel fragment waiting on the thread */
    uint64_t stacks_on_removed; /* of stacks_attached: their event was removed (an idle sample) */
    uint64_t clr_stacks;        /* of stack_events: ClrStack/Walk */
    uint64_t clr_stacks_attached;
    uint64_t clr_frames_cut;    /* ClrStack/Walk whose FrameCount the payload cannot hold */
    uint64_t key_references;    /* StackKeyKernel/User events */
    uint64_t keys_resolved;     /* of those: their definition was found */
    uint64_t keys_undefined;    /* of key_references: their key was never defined after them */
    uint64_t kernel_completed;  /* kernel-only fragments completed by a later user stack */
    uint64_t pending_dropped;   /* pending stacks dropped past ETW_PROFILE_MAX_PENDING */
    uint64_t pending_peak;      /* the most pending at once */
    uint64_t samples;           /* events counted as samples */
    uint64_t samples_with_stack;
    uint64_t idle_samples;      /* PerfInfo/Sample removed by the idle filter */
    uint64_t frames;            /* frame occurrences in sample stacks (with multiplicity) */
    uint64_t frames_resolved;   /* of those: resolved to an image, PDB function or JIT method */
    uint32_t pdbs_loaded;
    uint32_t pdbs_failed;       /* found in a symbol store but did not open (on_diag says why) */
    size_t memory_bytes;        /* what the profile holds now */
} etw_profile_stats;

void etw_profile_stats_get(const etw_profile *p, etw_profile_stats *out);

/* Profile file formats. */
typedef enum etw_profile_format {
    ETW_PROFILE_FOLDED = 0,     /* one line per stack, root first:
                                 * "process (pid);thread (tid);frame;... count"
                                 * (flamegraph.pl, inferno, speedscope) */
    ETW_PROFILE_SPEEDSCOPE = 1, /* speedscope's file format (one sampled
                                 * profile per thread) */
    ETW_PROFILE_FIREFOX = 2     /* Firefox Profiler's processed format */
} etw_profile_format;

/* Parse "folded" / "speedscope" / "firefox": ETW_E_INVALID_ARG otherwise. */
etw_status etw_profile_format_parse(const char *name, etw_profile_format *out);

/* Write the samples of a finished profile in a format. ETW_E_IO on a write
 * error. */
etw_status etw_profile_write(const etw_profile *p, etw_profile_format fmt, FILE *out);

#ifdef __cplusplus
}
#endif
#endif
