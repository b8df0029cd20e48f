/* etw_reader_internal.h - what the parallel pipeline (src/pipeline/) needs
 * from the reader beyond its public API: loading a buffer into storage the
 * caller owns (safe on several threads at once, see below), scanning one
 * loaded buffer's records, and hooks through which the ordered reader takes
 * its buffers from someone else instead of loading them itself.
 *
 * Thread safety: after open, a reader's buffer index, input and clock never
 * change, and etw_reader_load_buffer / etw_reader_scan_buffer only read
 * them. They may run on several threads at once, alongside one thread
 * calling etw_reader_next, when the input's read_at may (the file input uses
 * pread; memory input only reads) and the allocator passed is thread-safe.
 */
#ifndef ETW_READER_INTERNAL_H
#define ETW_READER_INTERNAL_H

#include "etwdecode/etw_reader.h"

/* One loaded buffer: the storage (owned, reused between loads) and what the
 * load found. */
typedef struct etw_buffer_load {
    uint8_t *mem;   /* decompressed / read bytes (owned) */
    size_t mem_cap;
    uint8_t *tmp;   /* compressed input read from a file (owned) */
    size_t tmp_cap;
    /* Small uncompressed buffers read with pread: the file's bytes
     * [ra_off, ra_off + ra_len) read ahead (owned), so the next buffers of
     * the same stretch cost no system call; data may point into it. */
    uint8_t *ra;
    size_t ra_cap, ra_len;
    uint64_t ra_off;
    const etw_reader *ra_src; /* whose file the window holds (a slot loads from several) */
    uint32_t buf;   /* index of the buffer in the reader's index */
    const uint8_t *data; /* header + records; NULL when it could not be read */
    uint32_t end;
    etw_status status;   /* ETW_OK, or why nothing could be read */
    /* A problem to report (once, by the thread that owns the reader). */
    int has_diag;
    etw_status diag_status;
    uint64_t diag_offset;
    char msg[160];
    int skipped;                 /* counts in buffers_skipped */
    uint64_t bytes_decompressed;
} etw_buffer_load;

/* Load buffer bi (0 .. etw_reader_buffer_count-1) into L, growing its
 * storage with a. ETW_OK: L->data/end hold the buffer (a buffer that does
 * not decompress in full still gives what was decompressed, with a
 * diagnostic in L). Otherwise L->data is NULL and L holds the diagnostic. */
etw_status etw_reader_load_buffer(const etw_reader *r, const etw_allocator *a, uint32_t bi,
                                  etw_buffer_load *L);
void etw_buffer_load_free(const etw_allocator *a, etw_buffer_load *L);

uint32_t etw_reader_buffer_count(const etw_reader *r);
/* The input's size in bytes (as at open). */
uint64_t etw_reader_input_size(const etw_reader *r);

/* The streams the ordered reader merges (one per processor, or one in file
 * order) and the buffers of each, in the order they are read. */
uint32_t etw_reader_stream_count(const etw_reader *r);
uint32_t etw_reader_stream_buffers(const etw_reader *r, uint32_t stream, const uint32_t **order);

/* Every record of a loaded buffer, in buffer order, through fn (stop early
 * by returning nonzero). Counts go to *stats (events, events_by_form,
 * first/last timestamp, records_skipped, buffers_skipped, problems) - the
 * same counts etw_reader_next makes for that buffer - and a damaged record
 * is reported through on_diag. The load's own diagnostic is not reported. */
typedef int (*etw_record_fn)(void *ctx, const etw_event *ev);
void etw_reader_scan_buffer(const etw_reader *r, const etw_buffer_load *L, etw_reader_stats *stats,
                            etw_diag_fn on_diag, void *diag_ctx, etw_record_fn fn, void *ctx);

/* Add what a load found (its diagnostic, skipped and decompressed counts)
 * to the reader's stats and report it through the reader's on_diag. */
void etw_reader_load_report(etw_reader *r, const etw_buffer_load *L);

/* The reader's diagnostics callback (from its options). */
void etw_reader_diag_target(const etw_reader *r, etw_diag_fn *fn, void **ctx);

/* Buffers from outside: when a stream needs its k-th buffer (buffer index
 * bi), the reader calls acquire and reads the records of the load it
 * returns (which must stay valid until release is called for that stream and
 * buffer); it reports the load's diagnostic itself. Set before the first
 * etw_reader_next (or after a rewind); NULL hooks: the reader loads itself. */
typedef struct etw_reader_hooks {
    const etw_buffer_load *(*acquire)(void *ctx, uint32_t stream, uint32_t k, uint32_t bi);
    void (*release)(void *ctx, uint32_t stream, uint32_t bi);
    void *ctx;
} etw_reader_hooks;
void etw_reader_set_hooks(etw_reader *r, const etw_reader_hooks *hooks);

/* Release every buffer the streams hold through the hooks, drop the hooks
 * and end the reading (etw_reader_next says ETW_END until a rewind); the
 * statistics are kept. */
void etw_reader_detach(etw_reader *r);

/* The stream (0 .. etw_reader_stream_count-1) whose event etw_reader_next
 * returned last: that event's bytes are in the buffer the stream holds.
 * -1 for the log-file header (its bytes are the reader's own) or none. */
int etw_reader_last_stream(const etw_reader *r);

/* 1 when etw_reader_load_buffer of buffer bi only points into the input
 * (an uncompressed buffer of a mapped file or of memory): no work to hand
 * to another thread. */
int etw_reader_buffer_in_place(const etw_reader *r, uint32_t bi);

/* With hooks the reader does not say when a buffer's bytes are done with
 * (the owner's batches may still point into them): the owner says it for
 * the n buffers bis (indices, sorted), so that a mapped file gives their
 * pages back, near neighbours in one call. Safe alongside loads on other
 * threads. */
void etw_reader_buffers_done(const etw_reader *r, const uint32_t *bis, uint32_t n);

#endif
