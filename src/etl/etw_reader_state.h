/* etw_reader_state.h - the ordered reader's own state (struct etw_reader),
 * shared by the two files that make it: etw_reader.c (the log-file header,
 * loading buffers, the clock, the processors' streams merged into events,
 * the API) and etw_buffer_index.c (where the buffers of the file are: their
 * chain, the search after damage, the bound on decompression). Nothing
 * outside src/etl/ includes it: the reader's API is etw_reader.h, the
 * pipeline's etw_reader_internal.h. */
#ifndef ETW_READER_STATE_H
#define ETW_READER_STATE_H

#include <stddef.h>
#include <stdint.h>

#include "etwdecode/etw_reader.h"
#include "etw_buffer.h"
#include "etw_file.h"
#include "etw_logfile.h"
#include "etw_merge.h"
#include "etw_reader_internal.h"

/* Bytes read to judge a candidate buffer: its header and the start of its
 * data (enough compressed input to produce the first record's header). */
#define PROBE_BYTES (ETW_BUFFER_HEADER_SIZE + 64u)
/* While the index is built: buffers of at most INDEX_SMALL bytes are probed
 * through a read-ahead window of INDEX_WINDOW bytes (one read per window
 * instead of one per buffer: 10^6 buffers of 160 bytes); larger buffers are
 * probed with one small read each, so the index does not read their data. */
#define INDEX_SMALL (16u * 1024u)
#define INDEX_WINDOW (256u * 1024u)

/* One buffer of the index (etw_buffer_index.c): where it is and what its
 * header said. */
typedef struct buf_entry {
    uint64_t offset;    /* file offset of the buffer header */
    uint32_t disk_size; /* bytes of the buffer present in the file */
    uint32_t data_end;  /* end of data incl. header (decompressed size when compressed) */
    int64_t sequence;
    uint16_t cpu;
    uint16_t flags;
    uint16_t type;
} buf_entry;

/* One processor's buffers (or all of them, in file order) and the buffer
 * being read: the ordered reader merges the streams' next events. */
typedef struct stream {
    uint32_t first;     /* its buffers: r->order[first .. first+n) */
    uint32_t n;
    uint32_t next;      /* next buffer to load (0..n) */
    uint32_t buf;       /* index of the current buffer in r->bufs */
    const uint8_t *data; /* current buffer: header + records (decompressed) */
    uint32_t end;
    uint32_t pos;
    uint8_t *mem;       /* owned storage for data (file input / decompression) */
    size_t mem_cap;
    uint8_t *ra;        /* owned read-ahead of small buffers (etw_buffer_load) */
    size_t ra_cap, ra_len;
    uint64_t ra_off;
    int64_t last_raw;
    int64_t order_ft;   /* order time of ev: the latest FILETIME of the stream so far */
    etw_event ev;       /* the stream's next event */
} stream;

struct etw_reader {
    etw_allocator alloc;
    etw_reader_options opt;
    etw_input in;
    etw_file *file;          /* owned when opened by path */
    const uint8_t *mem;      /* memory input, or NULL */
    const uint8_t *base;     /* the input's bytes to read buffers in place: mem, or
                              * the mapped file (whose pages are given back
                              * through etw_file_done), or NULL */
    uint32_t max_buffer;
    uint32_t lf_buffer_size; /* the log-file header's BufferSize when usable, else 0 */
    /* While resync searches inside a buffer cut by the end of the file: that
     * buffer's header (a candidate before cut_end must agree with it). */
    int cut_active;
    uint64_t cut_end;
    etw_buffer_header cut;
    uint32_t decomp_cap;     /* most bytes one compressed buffer decompresses to */

    buf_entry *bufs;
    uint32_t nbufs;
    uint32_t *order;         /* buffer indices grouped by stream */
    stream *streams;
    uint32_t nstreams;
    etw_merge merge;
    int pending;             /* stream whose event was returned last, or -1 */
    int header_done;
    int started;             /* streams hold their first events (done lazily) */
    etw_reader_hooks hooks;  /* buffers supplied from outside (the pipeline) */
    int hooked;
    /* etw_reader_watch: records of these providers, as their buffers load */
    etw_record_watch_fn watch_fn;
    void *watch_ctx;
    etw_guid watch[ETW_READER_MAX_WATCH];
    uint32_t nwatch;

    /* etw_reader_set_range(): events whose order time is in [range_from,
     * range_to); ranged 0 reads everything. */
    int ranged;
    int64_t range_from, range_to;
    int64_t last_order_ft;   /* order time of the event returned last */
    stream probe;            /* etw_reader_event_at()'s buffer */
    int probe_loaded;

    etw_logfile_header lf;
    etw_event lf_event;
    uint8_t *lf_payload;     /* copy of the header record's payload */
    uint8_t ptr_size;

    int clock_identity;      /* raw values already are FILETIMEs */
    int64_t clock_freq;      /* ticks per second of the raw clock */
    int64_t ref_raw;
    int64_t ref_ft;
    int64_t time_lo, time_hi;  /* FILETIMEs a record may have (time_plausible) */

    uint8_t *tmp;            /* compressed input / resync window */
    size_t tmp_cap;

    etw_reader_stats stats;
    etw_reader_stats index_stats; /* what building the index found (kept by rewind) */
    char msg[192];
    /* The last candidate header read by plausible_at (file input): the
     * index walk reads the next buffer's header right after judging it. */
    uint64_t probe_off;
    size_t probe_len;        /* 0: none */
    uint8_t probe_raw[PROBE_BYTES];
    /* While the index is built from a file of small buffers: the bytes
     * [win_off, win_off + win_len) read ahead, so a probe is a copy, not a
     * system call per buffer (freed when the index is built). */
    uint8_t *win;
    size_t win_cap, win_len;
    uint64_t win_off;
    uint32_t win_hint; /* the size of the buffer the index is at */
};

/* Count a problem in the reader's stats and report it through its on_diag. */
void etw_reader_diag(etw_reader *r, etw_status s, uint64_t offset, const char *text);

/* Make *p hold at least need bytes from a (its content is not kept); memory
 * far above the need is given back, so that one large buffer does not keep
 * a stream at its high-water mark. 0 when out of memory. */
int etw_reader_grow(const etw_allocator *a, uint8_t **p, size_t *cap, size_t need);

#endif
