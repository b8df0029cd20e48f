/* etw_pipeline.h - decode a trace on several threads, with the output in
 * order and byte for byte what one thread produces.
 *
 *   etw_pipeline_options po = {0};
 *   po.threads = 2;                      // this thread and one more
 *   po.write = my_write; po.ctx = out;   // called in order, on this thread
 *   etw_pipeline *p;
 *   if (etw_pipeline_new(&p, r, &po) == ETW_OK) {
 *       etw_status s = etw_pipeline_run(p);   // every event, as JSON lines
 *       etw_pipeline_free(p);
 *   }
 *
 * What runs where. The calling thread merges the processors' buffers into
 * timestamp order (the reader's etw_reader_next), puts the events into
 * batches - references into the loaded buffers, not copies: a buffer is
 * kept until the batches pointing into it are written - and writes
 * finished batches through `write`, in order. threads - 1 worker threads
 * decompress buffers ahead of the merge (a fixed window of them) and render
 * whole batches; the calling thread renders batches too whenever enough are
 * queued for the workers, so `threads` threads are busy in all. Each
 * renders with its own etw_decoder and renderer: nothing is shared but the
 * queues and the built-in manifests, parsed once for all (decoder.builtins
 * below). Memory: one buffer per processor (as the reader alone), the
 * window of buffers decompressed ahead, the buffers the batches in flight
 * point into (a fixed number: past it, waiting batches copy their events)
 * and the batches (a fixed number, each at most ETW_PIPELINE_BATCH events
 * or about ETW_PIPELINE_BATCH_BYTES of event bytes, plus their output) -
 * whatever the size of the file.
 *
 * Why the output does not depend on the number of threads: decoding an
 * event changes no decoder state except through the events
 * etw_decoder_learn_kind names. Every thread's decoder learns every
 * ETW_LEARN_IN_ORDER event exactly at its place (the pipeline keeps a copy
 * of each and replays it to the threads that did not decode it), and every
 * ETW_LEARN_AHEAD event (merged metadata) ETW_PIPELINE_LOOKAHEAD events
 * before its place, on every decoder alike. That is also how the schemas
 * merged into a trace are found in one pass over the file: a MetaData
 * record sorts next to the first event it describes (within a few events
 * on real traces; see docs), so no pre-scan of the file is needed.
 *
 * The reader passed in must have been opened on a file or memory (or an
 * etw_input whose read_at may be called from several threads at once), must
 * not be used by anyone else while the pipeline runs, and the allocator (the
 * pipeline's and the reader's) must be thread-safe when threads > 0.
 * Problems are reported on the calling thread: the reader's through the
 * reader's on_diag, the decoders' through po.decoder.on_diag, each once.
 *
 * Several files (etw_pipeline_new_multi): the calling thread merges the
 * files' readers exactly as etw_multi_next does (smallest timestamp first,
 * the lower file index on a tie; with file_order in the multi's reader
 * options the files one after the other), each reader with its own buffers,
 * and the output is what etw_multi_next, a decoder that pre-scanned every
 * file (etw_decoder_prescan, in file order) and one thread give. The
 * merged metadata of every file is learned before the first event:
 * etw_pipeline_prescan must be called before etw_pipeline_run (a MetaData
 * record's distance to the events it describes depends, in the merged
 * timeline, on the other files' event rates). The window, the slots and
 * the bounds above count every file's processors together.
 */
#ifndef ETWDECODE_ETW_PIPELINE_H
#define ETWDECODE_ETW_PIPELINE_H

#include <stddef.h>
#include <stdint.h>

#include "etw_decoder.h"
#include "etw_event.h"
#include "etw_json.h"
#include "etw_multi.h"
#include "etw_reader.h"
#include "etw_status.h"
#include "etw_types.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Events per batch (a batch also closes at ETW_PIPELINE_BATCH_BYTES of
 * event bytes). */
#define ETW_PIPELINE_BATCH 256u
#define ETW_PIPELINE_BATCH_BYTES (128u * 1024u)
/* How many events ahead merged metadata is learned. */
#define ETW_PIPELINE_LOOKAHEAD 256u

typedef struct etw_pipeline etw_pipeline;

/* Output of one event, given to a render callback: append bytes with
 * etw_pipeline_emit. */
typedef struct etw_pipeline_out etw_pipeline_out;
etw_status etw_pipeline_emit(etw_pipeline_out *out, const void *data, size_t len);

typedef struct etw_pipeline_options {
    const etw_allocator *allocator; /* NULL: malloc/free */
    /* Threads that decode, the calling thread included: N > 1 starts N - 1
     * worker threads. 0 or 1: decompress, decode and write on the calling
     * thread alone, with the same result. */
    unsigned threads;
    /* Buffers decompressed ahead of the merge, at most (with threads > 1);
     * 0: 2 per processor (at most 64) plus 2 per thread. */
    unsigned window;
    /* Each thread's decoder is made with these options (on_diag is called
     * on the calling thread); setup (may be NULL) is then called once per
     * decoder, e.g. to add manifests; its problems are reported for the
     * first decoder only. Each decoder is made, and setup and worker_new
     * called for it, on the thread that will use it (its memory then comes
     * from that thread's allocator arena and stays in that processor's
     * cache), one decoder at a time: the calling thread's first, then each
     * worker's before etw_pipeline_new returns. A setup that returns
     * anything but ETW_OK stops there: no further decoder is made, and
     * etw_pipeline_new returns that status (a manifest that cannot load is
     * then loaded once, not once per thread). decoder.builtins NULL: the
     * pipeline makes one etw_builtins for its decoders (pass one to share
     * the parse with other decoders too, e.g. a second pass). */
    etw_decoder_options decoder;
    etw_status (*setup)(void *ctx, etw_decoder *d);
    /* Per-worker state (a filter, a renderer...): worker_new makes one per
     * decoder (on that decoder's thread, see above; NULL means out of
     * memory), worker_free frees it (on the calling thread). Both may be
     * NULL. */
    void *(*worker_new)(void *ctx, etw_decoder *d);
    void (*worker_free)(void *ctx, void *state);
    /* Which events are output; NULL: all. Called on any of the threads with
     * that thread's state and decoder (ev may be resolved with it); must not touch
     * shared state. Events not selected still teach the decoders. */
    int (*select)(void *ctx, void *state, etw_decoder *d, const etw_event *ev);
    /* How an event is rendered: NULL renders the contract's JSON line with
     * these options (json.decoder is ignored: each thread's own is used).
     * A custom render runs on any of the threads and appends the event's
     * output. */
    etw_json_options json;
    etw_status (*render)(void *ctx, void *state, etw_decoder *d, const etw_event *ev,
                         etw_pipeline_out *out);
    /* The output, in event order, on the calling thread: a nonzero return
     * (or ETW_E_IO) stops the run. */
    etw_status (*write)(void *ctx, const void *data, size_t len);
    void *ctx;
    /* Stop after this many selected events; 0: no limit. */
    uint64_t max_events;
    /* Called on the calling thread for every event taken from the reader
     * (n counts them from 1), e.g. for a progress line; nonzero stops the
     * run (ETW_OK is returned; events already read are still written).
     * NULL: not called. */
    int (*on_read)(void *ctx, uint64_t n, const etw_event *ev);
} etw_pipeline_options;

typedef struct etw_pipeline_stats {
    uint64_t events_read;      /* events taken from the reader */
    uint64_t events_written;   /* events selected and written */
    uint64_t decoder_problems; /* decoder diagnostics reported (not warnings: status ETW_OK) */
    uint64_t bytes_written;
    /* batches whose events were copied out of the buffers they pointed
     * into, because the buffers in memory reached their bound */
    uint64_t batches_copied;
} etw_pipeline_stats;

etw_status etw_pipeline_new(etw_pipeline **out, etw_reader *r, const etw_pipeline_options *opt);

/* A pipeline over every file of m, merged (see above). m and its readers
 * must not be used by anyone else while the pipeline runs; afterwards
 * rewind m (etw_multi_rewind) to read it again. During a run
 * etw_multi_current(m) names the file being read, inside the readers'
 * diagnostics callbacks too, and in on_read the file of the event given.
 * etw_pipeline_scan is not available (ETW_E_INVALID_ARG) with more than one
 * file. */
etw_status etw_pipeline_new_multi(etw_pipeline **out, etw_multi *m, const etw_pipeline_options *opt);

/* Nonzero when the buffers of m's files average under 2 KiB (an event or
 * two each): threads cost more than they save on such input. A pipeline
 * over one such file runs on the calling thread whatever threads says; over
 * several files it keeps its threads (its merge is built on them), so a
 * caller that wants no slowdown reads several such files on one thread
 * (etwdump: the -j 1 path). 0 for NULL or an empty m. */
int etw_pipeline_small_buffers(const etw_multi *m);

/* The file (index in the etw_multi, 0 with one reader) of the event a
 * select or render callback running with decoder d was called for: for
 * etw_multi_reader and etw_multi_name. Costs a look at each thread. */
size_t etw_pipeline_event_file(const etw_pipeline *p, const etw_decoder *d);

/* Every event from the reader's current position (normally the first):
 * select, render and write. ETW_OK at the end of the trace or at
 * max_events; ETW_E_NOMEM; or the status write returned; ETW_E_INVALID_ARG
 * with several files not pre-scanned. The reader is left at an unspecified
 * position (rewind it to read again). */
etw_status etw_pipeline_run(etw_pipeline *p);

/* Every event of the trace, in no particular order, through fn on the
 * threads (state: that thread's, from worker_new, or NULL without it) -
 * for summaries whose result does not depend on the order. Buffers are
 * decompressed and scanned in parallel, with no merge. The log-file header
 * comes first, on the calling thread (with thread 0's state).
 * Afterwards *stats holds exactly what etw_reader_stats_get would say after
 * reading every event with etw_reader_next, and the reader's problems have
 * been reported through its on_diag (in file order). */
typedef int (*etw_pipeline_scan_fn)(void *ctx, void *state, const etw_event *ev);
etw_status etw_pipeline_scan(etw_pipeline *p, etw_pipeline_scan_fn fn, etw_reader_stats *stats);

/* Learn the merged metadata of the whole trace before the run, as
 * etw_decoder_prescan does: a pass over the file that decodes no payload,
 * its buffers scanned on every thread and their MetaData records learned in
 * file order; the reader is rewound. Needed when the reader does not merge
 * by time (etw_reader_options.file_order): a MetaData record then need not
 * come near the first event it describes; and with several files, whose
 * readers are pre-scanned one after the other, in file order. Problems the
 * pass meets come again in the run: mute the reader's on_diag around this
 * call. */
etw_status etw_pipeline_prescan(etw_pipeline *p);

const etw_pipeline_stats *etw_pipeline_stats_get(const etw_pipeline *p);

/* The decoder of thread i (0 .. threads-1, or 0 alone; 0 is the calling
 * thread's), for the caller's statistics after a run. NULL when out of
 * range. */
etw_decoder *etw_pipeline_decoder(etw_pipeline *p, unsigned i);

/* The state worker_new made for thread i, for adding up what a scan
 * counted. NULL when out of range or without worker_new. The pipeline may
 * run fewer threads than etw_pipeline_options.threads asks: inputs whose
 * buffers average under 2 KiB run on the calling thread alone (handing
 * such buffers between threads cost more than their work); thread 0 always
 * exists. */
void *etw_pipeline_worker_state(etw_pipeline *p, unsigned i);

/* The number of processors available to this process (at least 1). */
unsigned etw_pipeline_cpu_count(void);

void etw_pipeline_free(etw_pipeline *p);

#ifdef __cplusplus
}
#endif
#endif
