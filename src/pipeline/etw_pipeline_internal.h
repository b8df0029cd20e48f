/* etw_pipeline_internal.h - what the pipeline's files share
 * (etw_pipeline.c: buffers, batches, logs, workers, the run;
 * etw_pipeline_scan.c: the unordered scan and the pre-scan). */
#ifndef ETW_PIPELINE_INTERNAL_H
#define ETW_PIPELINE_INTERNAL_H

#include <stdatomic.h>
#include <string.h>

#include "etwdecode/etw_pipeline.h"

#include "../common/etw_alloc.h"
#include "../common/etw_thread.h"
#include "../etl/etw_multi_internal.h"
#include "../etl/etw_reader_internal.h"

/* Buffers each stream may have decompressed ahead of the one it reads. */
#define PREFETCH_DEPTH 2u
/* Default window: at most this many buffers ahead for the processors... */
#define WINDOW_STREAMS_MAX 64u
/* ...plus this many per worker thread. */
#define WINDOW_PER_THREAD 2u
/* Batches published and not yet written, at most: this many per thread.
 * Each holds its rendered output (~160 KiB of JSON for 256 kernel events)
 * and a slot. */
#define BATCHES_PER_THREAD 4u
/* The calling thread renders a batch itself when more than this many per
 * worker are queued (so none runs dry while it renders). The calling thread
 * also reads, merges and writes: with 3 here and 4 above (not 2 and 3) it
 * renders less and waits less. etwdump -j 2 on net.4.5.2.x64.etl to a
 * tmpfs file: 64.3 -> 60.7 ms (-j 1: 104.8); to /dev/null the same; the
 * kernel trace x10 to /dev/null 53.5 -> 52.2; peak RSS of -j 2 on the
 * 630 MB kernel trace 6.3 -> 6.4 MB. */
#define SPARE_PER_WORKER 3u
/* Buffers kept after their stream moved on, for the batches that point into
 * them (a batch holds references, not copies): at least this many, plus
 * BATCHES_PER_THREAD per thread. When they run out, the batches that wait
 * for their lookahead copy their events (batch_detach). */
#define REF_SLOTS 8u
/* Freed buffers are told to the reader (a mapped file gives their pages
 * back) this many at a time, near ones in one call: each release costs the
 * other processors a TLB flush while threads run. */
#define DONE_BATCH 16u

/* Rendered output buffers each thread keeps for its next batches, at most.
 * A thread renders into a buffer it wrote before: one the other thread
 * wrote is in that processor's cache, and every store to it would first
 * fetch the line from there. */
#define OUT_POOL 8u

/* A slot's life: FREE -> (QUEUED -> LOADING ->) READY -> HELD by its
 * stream -> DONE when the stream moves on -> FREE when no unwritten batch
 * points into it. */
enum { S_FREE, S_QUEUED, S_LOADING, S_READY, S_HELD, S_DONE };
#define NOT_SELECTED UINT32_MAX

typedef struct slot {
    etw_buffer_load L;
    int state;         /* QUEUED, LOADING, READY: under the mutex */
    uint32_t file, stream, k;
    uint32_t refs;     /* unwritten batches whose events point into it (calling thread) */
    uint64_t tag;      /* id of the last batch counted in refs */
    struct slot *next; /* free list / load queue */
} slot;

/* A copy of an event that changes decoder state, kept for the workers that
 * did not decode it. */
typedef struct log_entry {
    struct log_entry *next;
    uint64_t seq;       /* 0, 1, 2... in its log */
    uint64_t pos;
    etw_event ev;
    atomic_int reported;
    /* the event's bytes follow */
} log_entry;

/* The logs' storage: entries one after the other in chunks, the oldest
 * chunk freed when every entry in it is trimmed (no allocation per entry). */
#define LOG_CHUNK_BYTES (64u * 1024u)
#define LOG_ALIGN 16u

typedef struct log_chunk {
    struct log_chunk *next;
    size_t used, cap;
    uint64_t last_seq; /* of its last entry */
    max_align_t data[];
} log_chunk;

typedef struct event_log {
    log_entry *head, *tail; /* head: the oldest entry kept */
    uint64_t seq;           /* of the next entry */
    log_chunk *chunks, *last, *spare; /* calling thread only */
} event_log;

typedef struct diag_rec {
    etw_status status;
    uint64_t offset;
    size_t msg_at; /* in the batch's diag text */
} diag_rec;

typedef struct batch {
    struct batch *next; /* order list / render queue / free list */
    struct batch *qnext;
    uint64_t first;     /* position of its first event */
    uint64_t id;        /* for slot->tag */
    uint32_t n, cap;
    etw_event *evs;     /* the readers' events: their bytes are in the slots below */
    uint32_t *files;    /* each event's file (index in p->files) */
    slot **slots;       /* the slots they point into, each once (at most p->nslots) */
    uint32_t nslots;
    uint8_t *bytes;     /* the events' bytes when copied (batch_detach) */
    size_t blen;        /* bytes of the events (payload, extended data) */
    log_entry *ahead_last, *order_last; /* the logs as they were when published */
    log_entry *order_own;  /* the in-order log's entry of its last such event, or NULL */
    char *out;          /* from the pool of the thread that renders it */
    size_t olen, ocap;
    unsigned out_owner;
    uint32_t *ends;     /* end of each event's output, or NOT_SELECTED */
    uint8_t *kinds;     /* each event's etw_learn_kind (the merge asks it once) */
    diag_rec *diags;
    size_t ndiags, dcap;
    char *dtext;
    size_t dtlen, dtcap;
    etw_status status;
    int published;      /* touched by the calling thread only */
    int done;           /* under the mutex: rendered */
} batch;

typedef struct scan_task {
    etw_buffer_load L;
    uint32_t bi;
    int state; /* 0 idle, 1 queued, 2 done */
    etw_reader_stats st;
    int ndiag;
    etw_diag d[2];
    char msg[2][192];
    /* The pre-scan: copies of the buffer's MetaData records, each an
     * etw_event followed by its bytes (LOG_ALIGN-aligned), in record order. */
    unsigned char *meta;
    size_t mlen, mcap;
    int nomem;
    struct scan_task *next;
} scan_task;

typedef struct out_buf {
    char *data;
    size_t cap;
} out_buf;

typedef struct worker {
    etw_pipeline *p;
    unsigned index;
    int init_done;
    etw_status init_status;
    out_buf pool[OUT_POOL]; /* under the mutex with threads */
    unsigned npool;
    etw_thread th;
    int started;
    etw_decoder *dec;
    etw_json *json;
    void *state;
    int muted;
    batch *cur;
    uint32_t file;      /* of the event being selected or rendered */
    log_entry *ahead_done, *order_done; /* the last log entries learned */
    uint64_t pub_ahead, pub_order;      /* their seq + 1 (0: none), told after each batch */
    etw_pipeline_scan_fn scan_fn;
    scan_task *scanning; /* the task process_scan runs */
} worker;

/* One input file: its reader, the buffers its streams hold, and its next
 * event for the merge. */
typedef struct source {
    etw_pipeline *p;
    etw_reader *r;
    uint32_t index;
    uint32_t nstreams;
    slot **held;               /* per stream */
    uint32_t done[DONE_BATCH]; /* buffers freed, not yet told to the reader */
    uint32_t ndone;
    const etw_event *head;     /* the reader's next event, valid until it advances */
    int has_head, ended;
} source;

struct etw_pipeline_out {
    etw_pipeline *p;
    batch *b;
};

struct etw_pipeline {
    etw_allocator alloc;
    etw_pipeline_options opt;
    source *files;     /* the calling thread's (the merge writes them per event) */
    etw_reader **readers; /* the files' readers, for the workers (written once) */
    uint32_t nfiles;
    etw_multi *multi;  /* with several files: told the file being read (diagnostics) */
    uint32_t told;     /* the file last told to multi */
    int file_order;    /* several files: one after the other, not merged by time */
    uint32_t taken;    /* the file whose head was returned last (nfiles: none) */
    etw_reader *r;     /* the reader scan and prescan read */
    unsigned nworkers; /* decoders: workers[0] is the calling thread's */
    int threaded;      /* nworkers > 1: workers[1..] run on threads of their own */
    etw_builtins *own_builtins; /* made when the options give none (etw_decoder_options.builtins) */
    worker *workers;

    etw_mutex mu;
    etw_cond work_cv, done_cv;
    int sync_ok, quit;
    unsigned idle;     /* worker threads waiting for work */
    int caller_waits;  /* the calling thread waits on done_cv */

    /* buffers */
    slot *slots;
    uint32_t nslots;
    slot *free_slots;
    slot *load_head, *load_tail;
    uint32_t nstreams;  /* of every file */
    uint32_t window, in_window;

    /* batches */
    batch *cur;         /* the one being filled */
    uint64_t batch_ids;
    batch *free_batches;
    batch *order_head, *order_tail; /* closed batches, in order */
    batch *render_head, *render_tail;
    unsigned queued;    /* published, not yet written */
    unsigned untaken;   /* in the render queue */
    unsigned max_queued;

    /* logs */
    event_log ahead, order;

    /* scan */
    scan_task *scan_head, *scan_tail;
    etw_diag_fn reader_diag;
    void *reader_diag_ctx;

    etw_buffer_load no_memory; /* given to the reader when no slot can be had */
    int prescanned;     /* the ahead log holds every MetaData record already */
    int prescanning;    /* the scan collects MetaData records (etw_pipeline_prescan) */
    int stop;
    etw_status fail;
    etw_pipeline_stats stats;
};

/* Grown by half (not doubled): a batch's output keeps its capacity across
 * reuse and every byte of it is resident (calloc), so doubling left up to
 * twice the largest batch's output per batch (-j 2: 2.1 MB for 7 batches). */
static inline int grow_bytes(const etw_allocator *a, void **p, size_t *cap, size_t need, size_t elem) {
    if (*cap >= need) return 1;
    size_t c = *cap ? *cap : 16;
    while (c < need) c += c / 2;
    void *q = etw_calloc(a, c, elem);
    if (!q) return 0;
    if (*p) memcpy(q, *p, *cap * elem);
    etw_free(a, *p);
    *p = q;
    *cap = c;
    return 1;
}

/* Copy ev's borrowed bytes to dst (ext_size + user_data_len bytes) and point
 * the copy *out at them. */
static inline void copy_event(etw_event *out, const etw_event *ev, uint8_t *dst) {
    *out = *ev;
    if (ev->ext_size) {
        memcpy(dst, ev->ext_data, ev->ext_size);
        out->ext_data = dst;
        dst += ev->ext_size;
    }
    if (ev->user_data_len) {
        memcpy(dst, ev->user_data, ev->user_data_len);
        out->user_data = dst;
    }
}

static inline size_t event_bytes(const etw_event *ev) { return (size_t)ev->ext_size + ev->user_data_len; }

/* Signals, under the mutex: only to a thread that waits (a signal to a busy
 * thread costs a system call for nothing). Only the calling thread waits on
 * done_cv. */
static inline void wake_worker(etw_pipeline *p) {
    if (p->idle) etw_cond_signal(&p->work_cv);
}

static inline void wake_caller(etw_pipeline *p) {
    if (p->caller_waits) etw_cond_signal(&p->done_cv);
}

static inline void caller_wait(etw_pipeline *p) {
    p->caller_waits = 1;
    etw_cond_wait(&p->done_cv, &p->mu);
    p->caller_waits = 0;
}

/* Append a copy of ev to the ahead or in-order log (calling thread). */
etw_status etw_pl_log_event(etw_pipeline *p, const etw_event *ev, uint64_t pos, etw_learn_kind kind);

/* With several files, tell the multi the file being read when it changes
 * (calling thread; its diagnostics name it, the workers never read it). */
static inline void etw_pl_tell_file(etw_pipeline *p, uint32_t i) {
    if (p->multi && p->told != i) {
        etw_multi_set_current(p->multi, i);
        p->told = i;
    }
}

/* The oldest scan task no thread has taken (under the mutex), or NULL. */
scan_task *etw_pl_take_scan(etw_pipeline *p);
/* Load and scan task t's buffer on worker w's thread. */
void etw_pl_process_scan(worker *w, scan_task *t);

#endif
