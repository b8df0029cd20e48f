/* etw_reader.c - ETL file -> buffers -> records -> etw_event, in timestamp
 * order. See include/etwdecode/etw_reader.h for the reading strategy. Where
 * the buffers are is etw_buffer_index.c's; the state both share is
 * etw_reader_state.h. */
#include "etwdecode/etw_reader.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../common/etw_alloc.h"
#include "../common/etw_bytes.h"
#include "etw_buffer_index.h"
#include "etw_reader_state.h"
#include "etw_record.h"
#include "etw_xpress.h"

/* Default upper bound for one buffer: Windows caps buffers at 16 MiB since
 * Windows 8 (1 MiB before); leave room for decompression. */
#define DEFAULT_MAX_BUFFER (64u * 1024u * 1024u)
/* Processor numbers fit in 11 bits (ETW_BUFFER_PROC_INDEX_MASK). */
#define MAX_CPUS 2048u
/* Compressed buffers decompress to at most the log-file header's
 * BufferSize, and never to more than Windows' largest buffer (16 MiB since
 * Windows 8: EVENT_TRACE_PROPERTIES.BufferSize docs); this when the header
 * states none in range (1 MiB: the largest before Windows 8). */
#define MAX_DECOMP_CAP (16u * 1024u * 1024u)
#define DEFAULT_DECOMP_CAP (1024u * 1024u)
/* A stream's buffer memory above this is given back when a buffer needs
 * less than a quarter of it. */
#define SHRINK_ABOVE (256u * 1024u)
/* The log-file header record lies within this many bytes of the start of
 * the first buffer: the buffer header and one record, whose size is 16-bit. */
#define HEADER_RECORD_SPAN (ETW_BUFFER_HEADER_SIZE + 0x10000u)
/* The last FILETIME a time can be written as (9999-12-31T23:59:59.9999999Z). */
#define ETW_FILETIME_LAST INT64_C(2650467743999999999)
/* Records may fall this far (one day) outside the session's start and end
 * times, plus the session's own duration (clocks drift over a long trace;
 * relogged traces hold records seconds past their end time). */
#define TIME_SLACK (INT64_C(86400) * 10000000)
/* With no end time in the header: records up to ten years after the start. */
#define TIME_OPEN_END (INT64_C(3653) * 86400 * 10000000)
/* How far ahead of the record being parsed its buffer's bytes are
 * prefetched (measured: 1 KiB, some 5 records, cut the uncompressed kernel
 * trace x10's read by ~5%). */
#define PREFETCH_AHEAD 1024u
/* A load of a small uncompressed buffer through pread reads 64 buffers'
 * worth of the file ahead, at most this much (its stream's next buffers are
 * usually in it). */
#define LOAD_WINDOW (64u * 1024u)

/* Out of line where the compiler allows: the rare paths must not make the
 * per-record path save registers and reserve their stack. */
#if defined(__GNUC__) || defined(__clang__)
#define COLD __attribute__((noinline, cold))
#else
#define COLD
#endif

/* --- diagnostics ------------------------------------------------------- */

void etw_reader_diag(etw_reader *r, etw_status s, uint64_t offset, const char *text) {
    r->stats.problems++;
    if (!r->opt.on_diag) return;
    etw_diag d;
    d.status = s;
    d.file_offset = offset;
    d.message = text;
    r->opt.on_diag(r->opt.diag_ctx, &d);
}

/* --- input ------------------------------------------------------------- */

static long long mem_read_at(void *ctx, uint64_t off, void *buf, size_t n) {
    etw_reader *r = ctx;
    if (off >= r->in.size) return 0;
    if (n > r->in.size - off) n = (size_t)(r->in.size - off);
    memcpy(buf, r->mem + off, n);
    return (long long)n;
}

/* --- loading one buffer ------------------------------------------------ */

int etw_reader_grow(const etw_allocator *a, uint8_t **p, size_t *cap, size_t need) {
    if (*cap >= need && !(*cap > SHRINK_ABOVE && *cap / 4 > need)) return 1;
    size_t c = 4096;
    while (c < need) c *= 2;
    uint8_t *q = etw_alloc(a, c);
    if (!q) return 0;
    etw_free(a, *p);
    *p = q;
    *cap = c;
    return 1;
}

static void load_fail(etw_buffer_load *L, etw_status err, uint64_t off, const char *text) {
    L->data = NULL;
    L->end = 0;
    L->status = err;
    L->diag_status = err;
    L->diag_offset = off;
    snprintf(L->msg, sizeof L->msg, "%s", text);
    L->has_diag = 1;
}

/* A read of `want` bytes at off, all of them within the size the input had
 * at open, gave `got` < want: the file was cut shorter while it was read
 * (pread; a mapping would have raised SIGBUS). A read error, said as such,
 * not damage at offsets past the new end. */
static etw_status load_shrunk(const etw_reader *r, etw_buffer_load *L, uint64_t off, long long got,
                              size_t want) {
    char text[sizeof L->msg];
    snprintf(text, sizeof text, "read error: the file changed size while read (%llu of %zu bytes; %llu at open)",
             (unsigned long long)(got < 0 ? 0 : got), want, (unsigned long long)r->in.size);
    load_fail(L, ETW_E_IO, off, text);
    return ETW_E_IO;
}

/* The bytes of [off, off + n) that lie within the input's size at open. */
static size_t within(const etw_reader *r, uint64_t off, size_t n) {
    if (off >= r->in.size) return 0;
    return r->in.size - off < n ? (size_t)(r->in.size - off) : n;
}

/* Read (and decompress) buffer bi into L. Touches only L: the index and the
 * input are not changed after open, so loads of one reader may run on
 * several threads at once when the input's read_at may (pread, memory). */
etw_status etw_reader_load_buffer(const etw_reader *r, const etw_allocator *a, uint32_t bi,
                                  etw_buffer_load *L) {
    const buf_entry *b = &r->bufs[bi];
    L->buf = bi;
    L->has_diag = 0;
    L->skipped = 0;
    L->bytes_decompressed = 0;
    L->status = ETW_OK;
    size_t got = 0;
    if (!(b->flags & ETW_BUFFER_FLAG_COMPRESSED)) {
        if (r->base) {
            got = b->offset >= r->in.size ? 0
                  : (size_t)(r->in.size - b->offset < b->data_end ? r->in.size - b->offset : b->data_end);
            L->data = r->base + b->offset;
            L->end = (uint32_t)got;
            return ETW_OK;
        }
        size_t need = within(r, b->offset, b->data_end);
        if (b->disk_size <= INDEX_SMALL && b->data_end <= INDEX_SMALL) {
            /* a small buffer: from the read-ahead, filled when it does not
             * hold the buffer (one read per LOAD_WINDOW of the file) */
            if (L->ra_src != r) L->ra_len = 0;
            if (!(L->ra_len && b->offset >= L->ra_off && b->offset - L->ra_off <= L->ra_len &&
                  need <= L->ra_len - (b->offset - L->ra_off)) &&
                etw_reader_grow(a, &L->ra, &L->ra_cap, LOAD_WINDOW)) {
                L->ra_len = 0;
                /* 64 buffers' worth: a window the next loads miss costs
                 * little more than the buffer alone */
                size_t span = (size_t)b->disk_size * 64u;
                if (span > LOAD_WINDOW) span = LOAD_WINDOW;
                long long k = r->in.read_at(r->in.ctx, b->offset, L->ra, within(r, b->offset, span));
                if (k > 0) {
                    L->ra_off = b->offset;
                    L->ra_len = (size_t)k;
                    L->ra_src = r;
                }
            }
            if (L->ra_len && b->offset >= L->ra_off && b->offset - L->ra_off <= L->ra_len &&
                need <= L->ra_len - (b->offset - L->ra_off)) {
                L->data = L->ra + (b->offset - L->ra_off);
                L->end = (uint32_t)need;
                return ETW_OK;
            }
            /* no memory for the window, or a short read: read it alone */
        }
        if (!etw_reader_grow(a, &L->mem, &L->mem_cap, b->data_end)) {
            load_fail(L, ETW_E_NOMEM, b->offset, "no memory for a buffer");
            return ETW_E_NOMEM;
        }
        long long k = r->in.read_at(r->in.ctx, b->offset, L->mem, b->data_end);
        if (k < 0) {
            load_fail(L, ETW_E_IO, b->offset, "buffer could not be read");
            return ETW_E_IO;
        }
        if ((size_t)k < within(r, b->offset, b->data_end))
            return load_shrunk(r, L, b->offset, k, within(r, b->offset, b->data_end));
        L->data = L->mem;
        L->end = (uint32_t)k;
        return ETW_OK;
    }
    const uint8_t *in;
    if (r->base) {
        got = b->offset >= r->in.size ? 0
              : (size_t)(r->in.size - b->offset < b->disk_size ? r->in.size - b->offset : b->disk_size);
        in = r->base + b->offset;
    } else {
        if (!etw_reader_grow(a, &L->tmp, &L->tmp_cap, b->disk_size)) {
            load_fail(L, ETW_E_NOMEM, b->offset, "no memory for a buffer");
            return ETW_E_NOMEM;
        }
        long long k = r->in.read_at(r->in.ctx, b->offset, L->tmp, b->disk_size);
        if (k < 0) {
            load_fail(L, ETW_E_IO, b->offset, "buffer could not be read");
            return ETW_E_IO;
        }
        if ((size_t)k < within(r, b->offset, b->disk_size))
            return load_shrunk(r, L, b->offset, k, within(r, b->offset, b->disk_size));
        got = (size_t)k;
        in = L->tmp;
    }
    if (got < ETW_BUFFER_HEADER_SIZE) {
        load_fail(L, ETW_E_IO, b->offset, "buffer could not be read");
        return ETW_E_IO;
    }
    size_t in_len = got - ETW_BUFFER_HEADER_SIZE;
    size_t out_cap = b->data_end - ETW_BUFFER_HEADER_SIZE;
    if (!etw_reader_grow(a, &L->mem, &L->mem_cap, ETW_BUFFER_HEADER_SIZE + out_cap)) {
        load_fail(L, ETW_E_NOMEM, b->offset, "no memory for a decompressed buffer");
        return ETW_E_NOMEM;
    }
    memcpy(L->mem, in, ETW_BUFFER_HEADER_SIZE);
    size_t out_len = 0;
    etw_status s = etw_xpress_decompress(in + ETW_BUFFER_HEADER_SIZE, in_len,
                                         L->mem + ETW_BUFFER_HEADER_SIZE, out_cap, &out_len);
    if (s != ETW_OK) {
        snprintf(L->msg, sizeof L->msg, "compressed buffer %s after %zu of %zu bytes",
                 s == ETW_E_SMALL_BUFFER ? "decompresses to more than its stated size"
                                         : "does not decompress",
                 out_len, out_cap);
        L->has_diag = 1;
        L->diag_status = ETW_E_DECOMPRESS;
        L->diag_offset = b->offset;
        L->skipped = 1;
    }
    L->bytes_decompressed = out_len;
    L->data = L->mem;
    L->end = (uint32_t)(ETW_BUFFER_HEADER_SIZE + out_len);
    return ETW_OK;
}

void etw_buffer_load_free(const etw_allocator *a, etw_buffer_load *L) {
    etw_free(a, L->mem);
    etw_free(a, L->tmp);
    etw_free(a, L->ra);
    memset(L, 0, sizeof *L);
}

/* What a load found goes into the reader's diagnostics and counts. */
static void load_report(etw_reader *r, const etw_buffer_load *L) {
    if (L->has_diag) etw_reader_diag(r, L->diag_status, L->diag_offset, L->msg);
    if (L->skipped) r->stats.buffers_skipped++;
    r->stats.bytes_decompressed += L->bytes_decompressed;
}

/* The reader is done with buffer bi's bytes in the input (read in place
 * or decompressed): a mapped file may give its pages back. Buffers supplied
 * through hooks are their owner's to report (etw_reader_buffers_done): its
 * batches may still point into them. */
static void buffer_done(const etw_reader *r, uint32_t bi) {
    if (r->file && !r->hooked) etw_file_done(r->file, r->bufs[bi].offset, r->bufs[bi].disk_size);
}

/* Make buffer bi the stream's current buffer. ETW_OK, or ETW_E_NOMEM /
 * ETW_E_IO (reported) when it could not be read at all. */
static etw_status load_buffer(etw_reader *r, stream *st, uint32_t bi) {
    st->buf = bi;
    st->pos = ETW_BUFFER_HEADER_SIZE;
    etw_buffer_load L;
    memset(&L, 0, sizeof L);
    L.mem = st->mem;
    L.mem_cap = st->mem_cap;
    L.ra = st->ra;
    L.ra_cap = st->ra_cap;
    L.ra_len = st->ra_len;
    L.ra_off = st->ra_off;
    L.ra_src = r;
    L.tmp = r->tmp;
    L.tmp_cap = r->tmp_cap;
    etw_status s = etw_reader_load_buffer(r, &r->alloc, bi, &L);
    st->mem = L.mem;
    st->mem_cap = L.mem_cap;
    st->ra = L.ra;
    st->ra_cap = L.ra_cap;
    st->ra_len = L.ra_len;
    st->ra_off = L.ra_off;
    r->tmp = L.tmp;
    r->tmp_cap = L.tmp_cap;
    load_report(r, &L);
    st->data = L.data;
    st->end = L.end;
    return s;
}

/* --- time ---------------------------------------------------------------- */

static int64_t to_filetime_slow(const etw_reader *r, int64_t d);

/* Raw clock -> FILETIME; the common clocks inline (buffer_next), the rest
 * out of line. */
static inline int64_t to_filetime(const etw_reader *r, int64_t raw) {
    if (r->clock_identity) return raw;
    /* Hostile clock values: wrap (defined) instead of signed overflow (UB). */
    int64_t d = (int64_t)((uint64_t)raw - (uint64_t)r->ref_raw);
    /* Fast path with an identical result: QPC at 10 MHz already counts
     * 100 ns units. */
    if (r->clock_freq == 10000000) return (int64_t)((uint64_t)r->ref_ft + (uint64_t)d);
    return to_filetime_slow(r, d);
}

int64_t etw_reader_to_filetime(const etw_reader *r, int64_t raw) { return to_filetime(r, raw); }

static int64_t to_filetime_slow(const etw_reader *r, int64_t d) {
    int64_t f = r->clock_freq;
    /* One division while d * 1e7 cannot overflow (the general path below
     * costs two 64-bit divisions per event; q and rem have d's sign, so
     * trunc(d*1e7/f) == q*1e7 + trunc(rem*1e7/f)). */
    if (d <= INT64_MAX / 10000000 && d >= -(INT64_MAX / 10000000))
        return (int64_t)((uint64_t)r->ref_ft + (uint64_t)(d * 10000000 / f));
    int64_t q = d / f, rem = d % f;
    /* q * 1e7 + rem * 1e7 / f without overflow for any realistic frequency */
    int64_t frac;
    if (rem > INT64_MAX / 10000000 || rem < -(INT64_MAX / 10000000))
        frac = (int64_t)((long double)rem * 10000000.0L / (long double)f);
    else
        frac = rem * 10000000 / f;
    return (int64_t)((uint64_t)r->ref_ft + (uint64_t)q * 10000000u + (uint64_t)frac);
}

static void setup_clock(etw_reader *r) {
    r->ref_raw = r->lf.raw_timestamp;
    r->ref_ft = r->lf.start_time;
    r->clock_identity = 0;
    switch (r->lf.reserved_flags) {
    case ETW_CLOCK_SYSTEM_TIME:
        r->clock_freq = 10000000;
        break;
    case ETW_CLOCK_CPU_CYCLES:
        r->clock_freq = (int64_t)r->lf.cpu_speed_mhz * 1000000;
        break;
    default: /* QPC, and raw traces that still state a frequency */
        r->clock_freq = r->lf.perf_freq;
        break;
    }
    if (r->clock_freq <= 0) r->clock_freq = 10000000;
    /* Times every record must fall in: the session's start and end with
     * a margin, within what a FILETIME can show. */
    int64_t start = r->lf.start_time, end = r->lf.end_time;
    r->time_lo = 0;
    r->time_hi = ETW_FILETIME_LAST;
    if (start > 0 && start <= ETW_FILETIME_LAST) {
        int64_t dur = end >= start && end <= ETW_FILETIME_LAST ? end - start : -1;
        int64_t slack = TIME_SLACK + (dur > 0 ? dur : 0);
        int64_t hi = dur >= 0 ? end : start + (ETW_FILETIME_LAST - start < TIME_OPEN_END ? ETW_FILETIME_LAST - start : TIME_OPEN_END);
        r->time_lo = start > slack ? start - slack : 0;
        r->time_hi = hi < ETW_FILETIME_LAST - slack ? hi + slack : ETW_FILETIME_LAST;
    } else {
        /* No start time to anchor the clock: count from 1601 so that the
         * header's own time can still be written. */
        r->ref_ft = 0;
        etw_reader_diag(r, ETW_E_CORRUPT, 0, "log-file header start time is not a valid time; times count from 1601-01-01");
    }
}

/* Is the record's time one this trace can have? (Bytes that are not a
 * record give times thousands of years away.) */
static int time_plausible(const etw_reader *r, int64_t ft) { return ft >= r->time_lo && ft <= r->time_hi; }

/* --- streams ------------------------------------------------------------- */

/* A problem with the record at `at` of buffer b (file offset: the buffer's
 * when it is compressed). */
static void report_record(const buf_entry *b, uint32_t at, etw_status s, const char *text,
                          etw_reader_stats *stats, etw_diag_fn on_diag, void *diag_ctx) {
    stats->problems++;
    if (!on_diag) return;
    etw_diag d;
    d.status = s;
    d.file_offset = b->offset + ((b->flags & ETW_BUFFER_FLAG_COMPRESSED) ? 0 : at);
    d.message = text;
    on_diag(diag_ctx, &d);
}

/* The next record of a loaded buffer: 1 and *ev filled, 0 at its end. The
 * log-file header record is skipped; a damaged record is reported into
 * *stats / on_diag and ends the buffer. Shared by the ordered reader and
 * etw_reader_scan_buffer, so both count the same. */
/* The rare outcomes of a record, out of line so that buffer_next stays
 * small enough to inline: a time far outside the trace's, and a record that
 * cannot be parsed (which ends its buffer). */
COLD static void record_bad_time(const buf_entry *b, uint32_t at, int64_t raw, etw_reader_stats *stats,
                            etw_diag_fn on_diag, void *diag_ctx) {
    char text[192];
    snprintf(text, sizeof text,
             "record time (raw clock %lld) is far outside the trace's time range; record skipped",
             (long long)raw);
    report_record(b, at, ETW_E_CORRUPT, text, stats, on_diag, diag_ctx);
    stats->records_skipped++;
}

COLD static void record_damaged(const buf_entry *b, uint32_t at, etw_status s, const char *msg,
                           etw_reader_stats *stats, etw_diag_fn on_diag, void *diag_ctx) {
    char text[192];
    if (b->flags & ETW_BUFFER_FLAG_COMPRESSED)
        snprintf(text, sizeof text, "%s (at offset 0x%x of the decompressed buffer); rest of the buffer skipped",
                 msg, at);
    else
        snprintf(text, sizeof text, "%s; rest of the buffer skipped", msg);
    report_record(b, at, s, text, stats, on_diag, diag_ctx);
    stats->records_skipped++;
    stats->buffers_skipped++;
}

static inline int buffer_next(const etw_reader *r, uint32_t bi, const uint8_t *data, uint32_t end,
                              uint32_t *pos, int64_t *last_raw, etw_event *ev, etw_reader_stats *stats,
                              etw_diag_fn on_diag, void *diag_ctx) {
    const buf_entry *b = &r->bufs[bi];
    uint32_t p = *pos;
    while (p < end) {
        uint32_t adv = 0;
        const char *msg = NULL;
#if defined(__GNUC__) || defined(__clang__)
        /* A buffer read in place comes from the page cache, not from a cache
         * a copy just warmed: ask for the records ahead (within the buffer). */
        if (end - p > PREFETCH_AHEAD) __builtin_prefetch(data + p + PREFETCH_AHEAD);
#endif
        etw_status s = etw_record_parse(data + p, end - p, r->ptr_size, ev, &adv, &msg);
        if (s != ETW_OK) {
            if (s != ETW_END) record_damaged(b, p, s, msg, stats, on_diag, diag_ctx);
            break;
        }
        uint32_t at = p;
        p += adv;
        if (bi == 0 && at == ETW_BUFFER_HEADER_SIZE) continue; /* the log-file header */
        if (ev->form == ETW_FORM_MESSAGE && ev->raw_timestamp == 0) ev->raw_timestamp = *last_raw;
        ev->cpu = b->cpu;
        if (b->flags & ETW_BUFFER_FLAG_PROC_INDEX) ev->flags |= ETW_EVENT_FLAG_PROCESSOR_INDEX;
        ev->buffer_file_offset = b->offset;
        ev->record_offset = at;
        ev->buffer_compressed = (b->flags & ETW_BUFFER_FLAG_COMPRESSED) != 0;
        ev->timestamp = to_filetime(r, ev->raw_timestamp);
        if (!time_plausible(r, ev->timestamp)) {
            record_bad_time(b, at, ev->raw_timestamp, stats, on_diag, diag_ctx);
            continue;
        }
        /* Only a record that is kept lends its time to the untimed message
         * records after it: a skipped one would make them skipped too, and
         * in file order (one stream) not in the merge (found by fuzz_reader:
         * the two orders counted different events). */
        *last_raw = ev->raw_timestamp;
        *pos = p;
        return 1;
    }
    *pos = end;
    return 0;
}

/* etw_reader_watch: hand the watched records of the buffer just loaded to
 * the watcher, each as buffer_next would give it. A record that does not
 * parse ends the walk quietly: the merge meets it and reports it. */
COLD static void watch_buffer(etw_reader *r, uint32_t bi, const uint8_t *data, uint32_t end) {
    const buf_entry *b = &r->bufs[bi];
    uint32_t p = ETW_BUFFER_HEADER_SIZE, at = 0;
    uint32_t d1[ETW_READER_MAX_WATCH];
    for (uint32_t k = 0; k < r->nwatch; k++) d1[k] = r->watch[k].data1;
    while (r->watch_fn && etw_record_find(data, &p, end, d1, r->nwatch, &at)) {
        if (bi == 0 && at == ETW_BUFFER_HEADER_SIZE) continue; /* the log-file header */
        etw_event ev;
        uint32_t adv = 0;
        const char *msg = NULL;
        if (etw_record_parse(data + at, end - at, r->ptr_size, &ev, &adv, &msg) != ETW_OK) return;
        uint32_t k = 0;
        while (k < r->nwatch && !etw_guid_equal(&r->watch[k], &ev.provider)) k++;
        if (k == r->nwatch || ev.form == ETW_FORM_MESSAGE) continue;
        ev.cpu = b->cpu;
        if (b->flags & ETW_BUFFER_FLAG_PROC_INDEX) ev.flags |= ETW_EVENT_FLAG_PROCESSOR_INDEX;
        ev.buffer_file_offset = b->offset;
        ev.record_offset = at;
        ev.buffer_compressed = (b->flags & ETW_BUFFER_FLAG_COMPRESSED) != 0;
        ev.timestamp = to_filetime(r, ev.raw_timestamp);
        if (!time_plausible(r, ev.timestamp)) continue; /* the merge skips it too */
        r->watch_fn(r->watch_ctx, &ev);
        /* the watcher may have changed what is watched */
        for (k = 0; k < r->nwatch; k++) d1[k] = r->watch[k].data1;
    }
}

etw_status etw_reader_watch(etw_reader *r, const etw_guid *providers, size_t n, etw_record_watch_fn fn,
                            void *ctx) {
    if (!r || n > ETW_READER_MAX_WATCH || (n && !providers)) return ETW_E_INVALID_ARG;
    r->watch_fn = n ? fn : NULL;
    r->watch_ctx = ctx;
    r->nwatch = fn ? (uint32_t)n : 0;
    for (size_t i = 0; i < r->nwatch; i++) r->watch[i] = providers[i];
    return ETW_OK;
}

/* stream_advance when the current buffer is done: the next buffers until
 * one yields a record. */
COLD static int stream_refill(etw_reader *r, stream *st) {
    uint32_t si = (uint32_t)(st - r->streams);
    for (;;) {
        if (st->data && st->pos < st->end &&
            buffer_next(r, st->buf, st->data, st->end, &st->pos, &st->last_raw, &st->ev, &r->stats,
                        r->opt.on_diag, r->opt.diag_ctx)) {
            if (st->ev.timestamp > st->order_ft) st->order_ft = st->ev.timestamp;
            return 1;
        }
        if (st->data) {
            if (r->hooked) r->hooks.release(r->hooks.ctx, si, st->buf);
            buffer_done(r, st->buf);
        }
        st->data = NULL;
        if (st->next >= st->n) return 0;
        uint32_t k = st->next++;
        uint32_t bi = r->order[st->first + k];
        if (r->hooked) {
            const etw_buffer_load *L = r->hooks.acquire(r->hooks.ctx, si, k, bi);
            st->buf = bi;
            st->pos = ETW_BUFFER_HEADER_SIZE;
            load_report(r, L);
            st->data = L->data;
            st->end = L->end;
        } else if (load_buffer(r, st, bi) != ETW_OK) {
            st->data = NULL;
        }
        if (st->data && r->watch_fn) watch_buffer(r, bi, st->data, st->end);
    }
}

/* Parse the stream's next record into st->ev. 1 on success, 0 at its end. */
static inline int stream_advance(etw_reader *r, stream *st) {
    if (st->data && st->pos < st->end &&
        buffer_next(r, st->buf, st->data, st->end, &st->pos, &st->last_raw, &st->ev, &r->stats, r->opt.on_diag,
                    r->opt.diag_ctx)) {
        if (st->ev.timestamp > st->order_ft) st->order_ft = st->ev.timestamp;
        return 1;
    }
    return stream_refill(r, st);
}

/* Load buffer bi into the probe stream (one-off reads: the range search,
 * etw_reader_event_at). The pages of the buffer it held before are given
 * back at once: they are far from where the streams read. */
static etw_status probe_load(etw_reader *r, uint32_t bi) {
    stream *st = &r->probe;
    if (r->probe_loaded && r->file)
        etw_file_drop(r->file, r->bufs[st->buf].offset, r->bufs[st->buf].disk_size);
    r->probe_loaded = 0;
    etw_status s = load_buffer(r, st, bi);
    if (s == ETW_OK) r->probe_loaded = 1;
    return s;
}

/* The time (FILETIME) of the first timed record of buffer bi, read with the
 * probe stream. 0 when it has none or cannot be read. (The buffer header's
 * flush time is no use: some writers store it in another clock.) */
static int first_record_ft(etw_reader *r, uint32_t bi, int64_t *ft) {
    stream *st = &r->probe;
    if (probe_load(r, bi) != ETW_OK) return 0;
    uint32_t pos = ETW_BUFFER_HEADER_SIZE;
    while (pos < st->end) {
        etw_event ev;
        uint32_t adv = 0;
        const char *msg = NULL;
        if (etw_record_parse(st->data + pos, st->end - pos, r->ptr_size, &ev, &adv, &msg) != ETW_OK || adv == 0)
            return 0;
        int header = bi == 0 && pos == ETW_BUFFER_HEADER_SIZE;
        pos += adv;
        if (header || (ev.form == ETW_FORM_MESSAGE && ev.raw_timestamp == 0)) continue;
        *ft = etw_reader_to_filetime(r, ev.raw_timestamp);
        return 1;
    }
    return 0;
}

/* The first buffer of stream st that a range starting at `from` needs: the
 * one before the first buffer whose first record is at or after `from`
 * (binary search over the stream; a buffer that cannot tell counts as
 * late, which only starts earlier). */
static uint32_t range_start_buffer(etw_reader *r, const stream *st, int64_t from) {
    const uint32_t *o = r->order + st->first;
    uint32_t lo = 0, hi = st->n;
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        int64_t ft;
        if (first_record_ft(r, o[mid], &ft) && ft < from) lo = mid + 1;
        else hi = mid;
    }
    return lo > 0 ? lo - 1 : 0;
}

static void stream_reset(etw_reader *r, stream *st, uint32_t next) {
    if (r->hooked && st->data) r->hooks.release(r->hooks.ctx, (uint32_t)(st - r->streams), st->buf);
    if (st->data) buffer_done(r, st->buf);
    st->next = next;
    st->data = NULL;
    st->pos = st->end = 0;
    st->last_raw = r->lf.raw_timestamp;
    st->order_ft = INT64_MIN;
}

/* Back to the first event; the streams load their first buffers when the
 * first event after the log-file header is asked for. */
static void reset_streams(etw_reader *r) {
    etw_merge_clear(&r->merge);
    r->pending = -1;
    /* the log-file header record belongs to the range that starts first */
    r->header_done = r->ranged && r->range_from != INT64_MIN;
    r->last_order_ft = INT64_MIN;
    r->started = 0;
}

static void start_streams(etw_reader *r) {
    r->started = 1;
    etw_merge_clear(&r->merge);
    for (uint32_t i = 0; i < r->nstreams; i++) {
        stream *st = &r->streams[i];
        uint32_t start = 0;
        if (r->ranged && r->range_from != INT64_MIN) start = range_start_buffer(r, st, r->range_from);
        stream_reset(r, st, start);
        int have = stream_advance(r, st);
        /* Started late (the first event read is already in the range):
         * earlier buffers may hold range events too, so read them all. */
        if (have && start > 0 && st->order_ft >= r->range_from) {
            stream_reset(r, st, 0);
            have = stream_advance(r, st);
        }
        if (r->ranged)
            while (have && st->order_ft < r->range_from) have = stream_advance(r, st);
        if (have) etw_merge_set(&r->merge, i, st->ev.raw_timestamp, st->ev.buffer_file_offset);
    }
    etw_merge_build(&r->merge);
}

static int cmp_seq(const buf_entry *a, const buf_entry *b) {
    return a->sequence < b->sequence ? -1 : a->sequence > b->sequence;
}

static etw_status build_streams(etw_reader *r) {
    int32_t *map = etw_calloc(&r->alloc, MAX_CPUS, sizeof *map);
    uint32_t *count = etw_calloc(&r->alloc, MAX_CPUS, sizeof *count);
    r->order = etw_calloc(&r->alloc, r->nbufs, sizeof *r->order);
    etw_status s = ETW_E_NOMEM;
    if (!map || !count || !r->order) goto done;
    for (uint32_t i = 0; i < MAX_CPUS; i++) map[i] = -1;
    r->nstreams = 0;
    for (uint32_t i = 0; i < r->nbufs; i++) {
        uint16_t key = r->opt.file_order ? 0 : r->bufs[i].cpu;
        if (map[key] < 0) map[key] = (int32_t)r->nstreams++;
        count[map[key]]++;
    }
    r->streams = etw_calloc(&r->alloc, r->nstreams, sizeof *r->streams);
    r->merge.size = etw_merge_size(r->nstreams);
    r->merge.tree = etw_calloc(&r->alloc, r->merge.size, sizeof *r->merge.tree);
    r->merge.leaf = etw_calloc(&r->alloc, r->merge.size, sizeof *r->merge.leaf);
    if (!r->streams || !r->merge.tree || !r->merge.leaf) goto done;
    uint32_t first = 0;
    for (uint32_t i = 0; i < r->nstreams; i++) {
        r->streams[i].first = first;
        first += count[i];
    }
    for (uint32_t i = 0; i < r->nbufs; i++) {
        stream *st = &r->streams[map[r->opt.file_order ? 0 : r->bufs[i].cpu]];
        r->order[st->first + st->n++] = i;
    }
    /* A circular file may hold a processor's buffers out of order: order
     * them by sequence number (insertion sort: stable, lists are short). */
    if ((r->lf.log_file_mode & ETW_LOGFILE_MODE_CIRCULAR) && !r->opt.file_order) {
        for (uint32_t i = 0; i < r->nstreams; i++) {
            uint32_t *o = r->order + r->streams[i].first;
            for (uint32_t a = 1; a < r->streams[i].n; a++) {
                uint32_t v = o[a];
                uint32_t b = a;
                while (b > 0 && o[b - 1] != 0 && cmp_seq(&r->bufs[o[b - 1]], &r->bufs[v]) > 0) {
                    o[b] = o[b - 1];
                    b--;
                }
                o[b] = v;
            }
        }
    }
    s = ETW_OK;
done:
    etw_free(&r->alloc, map);
    etw_free(&r->alloc, count);
    return s;
}

/* --- the log-file header ------------------------------------------------- */

/* The first buffer must start at offset 0 and its first record must be the
 * log-file header: that is what makes a file an ETL file. */
static etw_status read_header(etw_reader *r) {
    uint8_t raw[ETW_BUFFER_HEADER_SIZE];
    etw_buffer_header h;
    const char *hmsg;
    if (r->in.size < ETW_BUFFER_HEADER_SIZE + 8 ||
        r->in.read_at(r->in.ctx, 0, raw, sizeof raw) != (long long)sizeof raw)
        return ETW_E_NOT_ETL;
    /* A bad BufferSize here must not lose the file: the log-file header
     * record is what makes it a trace, and it lies within the first
     * HEADER_RECORD_SPAN bytes whatever the size fields say. */
    (void)etw_buffer_header_parse(raw, &h, &hmsg);
    r->decomp_cap = HEADER_RECORD_SPAN;
    uint64_t extent = r->in.size;
    if (h.flags & ETW_BUFFER_FLAG_COMPRESSED) {
        if (etw_buffer_size_ok(r, h.buffer_size)) extent = h.buffer_size;
    } else if (extent > HEADER_RECORD_SPAN) {
        extent = HEADER_RECORD_SPAN;
    }
    buf_entry first = etw_buffer_index_entry(r, 0, &h, extent);
    buf_entry *saved = r->bufs;
    r->bufs = &first; /* load_buffer reads the entry through r->bufs */
    stream tmp;
    memset(&tmp, 0, sizeof tmp);
    etw_status loaded = load_buffer(r, &tmp, 0);
    r->bufs = saved;
    if (loaded != ETW_OK || tmp.end < ETW_BUFFER_HEADER_SIZE) {
        etw_free(&r->alloc, tmp.mem);
        etw_free(&r->alloc, tmp.ra);
        return loaded == ETW_E_NOMEM ? ETW_E_NOMEM : ETW_E_NOT_ETL;
    }
    etw_event ev;
    uint32_t adv;
    const char *msg;
    etw_status s = ETW_E_NOT_ETL;
    if (etw_record_parse(tmp.data + ETW_BUFFER_HEADER_SIZE, tmp.end - ETW_BUFFER_HEADER_SIZE, 8,
                         &ev, &adv, &msg) != ETW_OK)
        goto done;
    if ((ev.form != ETW_FORM_SYSTEM && ev.form != ETW_FORM_COMPACT) ||
        ev.group != ETW_HOOK_GROUP_HEADER || ev.opcode != ETW_HOOK_TYPE_LOGFILE_HEADER)
        goto done;
    r->lf_payload = etw_alloc(&r->alloc, ev.user_data_len);
    if (!r->lf_payload) {
        s = ETW_E_NOMEM;
        goto done;
    }
    memcpy(r->lf_payload, ev.user_data, ev.user_data_len);
    if (etw_logfile_parse(r->lf_payload, ev.user_data_len, ev.pointer_size, &r->lf) != ETW_OK)
        goto done;
    r->lf.raw_timestamp = ev.raw_timestamp;
    r->lf.pid = ev.pid;
    r->lf.tid = ev.tid;
    r->ptr_size = (r->lf.pointer_size == 4 || r->lf.pointer_size == 8) ? (uint8_t)r->lf.pointer_size
                                                                        : ev.pointer_size;
    /* Compressed buffers decompress to at most the trace's BufferSize; when
     * the header states none that can be right, to DEFAULT_DECOMP_CAP. */
    r->lf_buffer_size = etw_buffer_size_ok(r, r->lf.buffer_size) ? r->lf.buffer_size : 0;
    r->decomp_cap = r->lf_buffer_size ? r->lf_buffer_size : DEFAULT_DECOMP_CAP;
    if (r->decomp_cap > MAX_DECOMP_CAP) r->decomp_cap = MAX_DECOMP_CAP;
    if (r->decomp_cap > r->max_buffer) r->decomp_cap = r->max_buffer;
    ev.user_data = r->lf_payload;
    ev.cpu = h.cpu;
    ev.buffer_file_offset = 0;
    ev.record_offset = ETW_BUFFER_HEADER_SIZE;
    ev.is_logfile_header = 1;
    r->lf_event = ev;
    s = ETW_OK;
done:
    etw_free(&r->alloc, tmp.mem);
    etw_free(&r->alloc, tmp.ra);
    return s;
}

/* --- public API ---------------------------------------------------------- */

static etw_status open_common(etw_reader **out, etw_reader *r) {
    etw_status s = read_header(r);
    if (s == ETW_OK) s = etw_buffer_index_build(r);
    if (s == ETW_OK) {
        setup_clock(r);
        r->lf_event.timestamp = etw_reader_to_filetime(r, r->lf_event.raw_timestamp);
        s = build_streams(r);
    }
    if (s == ETW_OK) {
        r->stats.first_timestamp = r->lf_event.timestamp;
        r->stats.last_timestamp = r->lf_event.timestamp;
        r->index_stats = r->stats;
        reset_streams(r);
    }
    if (s != ETW_OK) {
        etw_reader_close(r);
        return s;
    }
    *out = r;
    return ETW_OK;
}

static etw_reader *reader_new(const etw_reader_options *opt) {
    etw_allocator a = etw_allocator_resolve(opt ? opt->allocator : NULL);
    etw_reader *r = etw_calloc(&a, 1, sizeof *r);
    if (!r) return NULL;
    r->alloc = a;
    if (opt) r->opt = *opt;
    r->max_buffer = r->opt.max_buffer_size ? r->opt.max_buffer_size : DEFAULT_MAX_BUFFER;
    if (r->max_buffer < ETW_BUFFER_HEADER_SIZE + 8) r->max_buffer = ETW_BUFFER_HEADER_SIZE + 8;
    r->pending = -1;
    return r;
}

etw_status etw_reader_open_input(etw_reader **out, const etw_input *input,
                                 const etw_reader_options *opt) {
    if (!out || !input || !input->read_at) return ETW_E_INVALID_ARG;
    *out = NULL;
    etw_reader *r = reader_new(opt);
    if (!r) return ETW_E_NOMEM;
    r->in = *input;
    return open_common(out, r);
}

etw_status etw_reader_open_memory(etw_reader **out, const void *data, size_t size,
                                  const etw_reader_options *opt) {
    if (!out || (!data && size)) return ETW_E_INVALID_ARG;
    *out = NULL;
    etw_reader *r = reader_new(opt);
    if (!r) return ETW_E_NOMEM;
    r->mem = data;
    r->base = data;
    r->in.read_at = mem_read_at;
    r->in.ctx = r;
    r->in.size = size;
    return open_common(out, r);
}

etw_status etw_reader_open_file(etw_reader **out, const char *path,
                                const etw_reader_options *opt) {
    if (!out || !path) return ETW_E_INVALID_ARG;
    *out = NULL;
    etw_reader *r = reader_new(opt);
    if (!r) return ETW_E_NOMEM;
    etw_status s = etw_file_open(&r->alloc, path, !r->opt.no_map, &r->file, &r->in);
    if (s != ETW_OK) {
        etw_reader_close(r);
        return s;
    }
    /* Buffers are read in place from the mapping; the index is built with
     * small reads (touching every buffer's header page through the mapping
     * would make the whole file resident). */
    r->base = etw_file_bytes(r->file);
    return open_common(out, r);
}

/* The next event, in the reader's own storage (the log-file header's copy
 * or the top stream's parsed record); NULL with *s at the end. */
static const etw_event *next_event(etw_reader *r, etw_status *s) {
    const etw_event *ev;
    if (!r->header_done) {
        r->header_done = 1;
        ev = &r->lf_event;
        r->last_order_ft = INT64_MIN; /* before every other event */
        r->stats.events++;
        r->stats.events_by_form[ev->form]++;
        return ev;
    }
    if (!r->started) start_streams(r);
    if (r->pending >= 0) {
        uint32_t i = (uint32_t)r->pending;
        r->pending = -1;
        stream *st = &r->streams[i];
        if (stream_advance(r, st))
            etw_merge_replace_top(&r->merge, st->ev.raw_timestamp, st->ev.buffer_file_offset);
        else
            etw_merge_pop(&r->merge);
    }
    *s = ETW_END;
    if (r->merge.live == 0) return NULL;
    uint32_t top = etw_merge_top(&r->merge);
    const stream *st = &r->streams[top];
    if (r->ranged && r->range_to != INT64_MAX && st->order_ft >= r->range_to) {
        /* events come in order-time order: every later one is past the range too */
        r->merge.live = 0;
        return NULL;
    }
    r->last_order_ft = st->order_ft;
    ev = &st->ev;
    r->pending = (int)top;
    r->stats.events++;
    r->stats.events_by_form[ev->form]++;
    if (ev->timestamp < r->stats.first_timestamp) r->stats.first_timestamp = ev->timestamp;
    if (ev->timestamp > r->stats.last_timestamp) r->stats.last_timestamp = ev->timestamp;
    return ev;
}

etw_status etw_reader_next(etw_reader *r, etw_event *ev) {
    if (!r || !ev) return ETW_E_INVALID_ARG;
    etw_status s = ETW_OK;
    const etw_event *e = next_event(r, &s);
    if (!e) return s;
    *ev = *e;
    return ETW_OK;
}

etw_status etw_reader_next_ref(etw_reader *r, const etw_event **ev) {
    if (!r || !ev) return ETW_E_INVALID_ARG;
    etw_status s = ETW_OK;
    *ev = next_event(r, &s);
    return *ev ? ETW_OK : s;
}

const etw_logfile_header *etw_reader_logfile(const etw_reader *r) { return r ? &r->lf : NULL; }

const etw_reader_stats *etw_reader_stats_get(const etw_reader *r) { return r ? &r->stats : NULL; }

/* Give back the buffers the streams hold (hooks) and forget them. */
static void release_all(etw_reader *r) {
    for (uint32_t i = 0; i < r->nstreams; i++) {
        stream *st = &r->streams[i];
        if (r->hooked && st->data) r->hooks.release(r->hooks.ctx, i, st->buf);
        if (st->data) buffer_done(r, st->buf);
        st->data = NULL;
        st->pos = st->end = 0;
    }
}

void etw_reader_detach(etw_reader *r) {
    release_all(r);
    for (uint32_t i = 0; i < r->nstreams; i++) r->streams[i].next = r->streams[i].n;
    r->merge.live = 0;
    r->pending = -1;
    r->header_done = 1;
    r->started = 1;
    r->hooked = 0;
}

etw_status etw_reader_rewind(etw_reader *r) {
    if (!r) return ETW_E_INVALID_ARG;
    r->stats = r->index_stats;
    release_all(r);
    if (r->file) etw_file_restart(r->file);
    reset_streams(r);
    return ETW_OK;
}

void etw_reader_close(etw_reader *r) {
    if (!r) return;
    etw_allocator a = r->alloc;
    if (r->streams)
        for (uint32_t i = 0; i < r->nstreams; i++) {
            etw_free(&a, r->streams[i].mem);
            etw_free(&a, r->streams[i].ra);
        }
    etw_free(&a, r->probe.mem);
    etw_free(&a, r->probe.ra);
    etw_free(&a, r->streams);
    etw_free(&a, r->merge.tree);
    etw_free(&a, r->merge.leaf);
    etw_free(&a, r->order);
    etw_free(&a, r->bufs);
    etw_free(&a, r->lf_payload);
    etw_free(&a, r->tmp);
    etw_free(&a, r->win);
    if (r->file) etw_file_close(&a, r->file);
    etw_free(&a, r);
}

/* --- time ranges and single records --------------------------------------- */

etw_status etw_reader_set_range(etw_reader *r, int64_t from, int64_t to) {
    if (!r || from >= to) return ETW_E_INVALID_ARG;
    r->ranged = !(from == INT64_MIN && to == INT64_MAX);
    r->range_from = from;
    r->range_to = to;
    return etw_reader_rewind(r);
}

int64_t etw_reader_order_time(const etw_reader *r) {
    return r ? r->last_order_ft : INT64_MIN;
}

etw_status etw_reader_split(etw_reader *r, uint32_t n, int64_t *bounds, uint32_t *count) {
    if (!r || !bounds || !count || n == 0) return ETW_E_INVALID_ARG;
    *count = 1;
    bounds[0] = INT64_MIN;
    bounds[1] = INT64_MAX;
    uint64_t total = 0;
    for (uint32_t i = 0; i < r->nbufs; i++) total += r->bufs[i].disk_size;
    /* Boundary k: the first record of the buffer (in file order, which
     * follows time across processors) where k/n of the bytes begin. */
    uint64_t done = 0;
    uint32_t k = 1, m = 1;
    for (uint32_t i = 0; i < r->nbufs && k < n; i++) {
        if (done * n >= (uint64_t)k * total) {
            while (k < n && done * n >= (uint64_t)k * total) k++;
            int64_t ft;
            if (first_record_ft(r, i, &ft) && ft > bounds[m - 1] && ft != INT64_MAX) bounds[m++] = ft;
        }
        done += r->bufs[i].disk_size;
    }
    bounds[m] = INT64_MAX;
    *count = m;
    return ETW_OK;
}

etw_status etw_reader_event_at(etw_reader *r, uint64_t buffer_file_offset, uint32_t record_offset,
                               etw_event *ev) {
    if (!r || !ev) return ETW_E_INVALID_ARG;
    if (buffer_file_offset == 0 && record_offset == ETW_BUFFER_HEADER_SIZE) {
        *ev = r->lf_event;
        return ETW_OK;
    }
    /* the index is in file order */
    uint32_t lo = 0, hi = r->nbufs;
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        if (r->bufs[mid].offset < buffer_file_offset) lo = mid + 1;
        else hi = mid;
    }
    if (lo == r->nbufs || r->bufs[lo].offset != buffer_file_offset) return ETW_E_NOT_FOUND;
    stream *st = &r->probe;
    if (!r->probe_loaded || st->buf != lo) {
        etw_status s = probe_load(r, lo);
        if (s != ETW_OK) return s;
    }
    if (record_offset < ETW_BUFFER_HEADER_SIZE || record_offset >= st->end) return ETW_E_NOT_FOUND;
    uint32_t adv = 0;
    const char *msg = NULL;
    const buf_entry *b = &r->bufs[lo];
    etw_status s = etw_record_parse(st->data + record_offset, st->end - record_offset, r->ptr_size, ev,
                                    &adv, &msg);
    if (s != ETW_OK) return s == ETW_END ? ETW_E_NOT_FOUND : s;
    ev->cpu = b->cpu;
    if (b->flags & ETW_BUFFER_FLAG_PROC_INDEX) ev->flags |= ETW_EVENT_FLAG_PROCESSOR_INDEX;
    ev->buffer_file_offset = b->offset;
    ev->record_offset = record_offset;
    ev->buffer_compressed = (b->flags & ETW_BUFFER_FLAG_COMPRESSED) != 0;
    ev->timestamp = etw_reader_to_filetime(r, ev->raw_timestamp);
    return ETW_OK;
}

/* --- for the pipeline (etw_reader_internal.h) ------------------------------ */

uint32_t etw_reader_buffer_count(const etw_reader *r) { return r->nbufs; }

uint64_t etw_reader_input_size(const etw_reader *r) { return r->in.size; }

uint32_t etw_reader_stream_count(const etw_reader *r) { return r->nstreams; }

uint32_t etw_reader_stream_buffers(const etw_reader *r, uint32_t si, const uint32_t **order) {
    if (si >= r->nstreams) {
        *order = NULL;
        return 0;
    }
    *order = r->order + r->streams[si].first;
    return r->streams[si].n;
}

void etw_reader_load_report(etw_reader *r, const etw_buffer_load *L) { load_report(r, L); }

void etw_reader_diag_target(const etw_reader *r, etw_diag_fn *fn, void **ctx) {
    *fn = r->opt.on_diag;
    *ctx = r->opt.diag_ctx;
}

void etw_reader_set_hooks(etw_reader *r, const etw_reader_hooks *hooks) {
    if (hooks && hooks->acquire && hooks->release) {
        r->hooks = *hooks;
        r->hooked = 1;
    } else {
        r->hooked = 0;
    }
}

void etw_reader_scan_buffer(const etw_reader *r, const etw_buffer_load *L, etw_reader_stats *stats,
                            etw_diag_fn on_diag, void *diag_ctx, etw_record_fn fn, void *ctx) {
    if (!L->data) return;
    uint32_t pos = ETW_BUFFER_HEADER_SIZE;
    /* A WPP record without a time takes the one before it in its stream;
     * across buffers that is some earlier event's time, which never moves
     * the first/last times: the log-file header's time stands in. */
    int64_t last_raw = r->lf.raw_timestamp;
    etw_event ev;
    while (buffer_next(r, L->buf, L->data, L->end, &pos, &last_raw, &ev, stats, on_diag, diag_ctx)) {
        stats->events++;
        stats->events_by_form[ev.form]++;
        if (ev.timestamp < stats->first_timestamp) stats->first_timestamp = ev.timestamp;
        if (ev.timestamp > stats->last_timestamp) stats->last_timestamp = ev.timestamp;
        if (fn && fn(ctx, &ev)) break;
    }
    buffer_done(r, L->buf);
}

/* The stream of the event etw_reader_next returned last (-1: the log-file
 * header, or none). */
int etw_reader_last_stream(const etw_reader *r) { return r->pending; }

/* 1 when loading buffer bi only points into the input (an uncompressed
 * buffer of a mapped file or of memory): nothing worth doing ahead. */
int etw_reader_buffer_in_place(const etw_reader *r, uint32_t bi) {
    return bi < r->nbufs && r->base && !(r->bufs[bi].flags & ETW_BUFFER_FLAG_COMPRESSED);
}

/* Buffers the pipeline's batches no longer point into, sorted by index
 * (file order): a mapped file may give their pages back. Neighbours less
 * than this apart go in one call (the gap is some other stream's buffer,
 * whose pages a fault may bring back): each release costs the processors
 * running the reader's threads a TLB flush. */
#define DONE_MERGE_GAP (256u * 1024u)

void etw_reader_buffers_done(const etw_reader *r, const uint32_t *bis, uint32_t n) {
    if (!r->file) return;
    for (uint32_t i = 0; i < n;) {
        if (bis[i] >= r->nbufs) {
            i++;
            continue;
        }
        uint64_t lo = r->bufs[bis[i]].offset, hi = lo + r->bufs[bis[i]].disk_size;
        uint32_t j = i + 1;
        for (; j < n && bis[j] < r->nbufs && r->bufs[bis[j]].offset <= hi + DONE_MERGE_GAP; j++) {
            uint64_t e = r->bufs[bis[j]].offset + r->bufs[bis[j]].disk_size;
            if (e > hi) hi = e;
        }
        etw_file_done(r->file, lo, hi - lo);
        i = j;
    }
}
