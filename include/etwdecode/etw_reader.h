/* etw_reader.h - open an .etl file (or bytes in memory) and pull its events
 * in timestamp order.
 *
 *   etw_reader *r;
 *   if (etw_reader_open_file(&r, "trace.etl", NULL) != ETW_OK) ...;
 *   etw_event ev;
 *   etw_status s;
 *   while ((s = etw_reader_next(r, &ev)) == ETW_OK) { ...use ev... }
 *   // s == ETW_END at the end; damage met on the way was reported through
 *   // the diagnostics callback and counted in etw_reader_stats().
 *   etw_reader_close(r);
 *
 * How the file is read: a first pass reads only the 0x48-byte header of every
 * buffer and builds a small index (one entry per buffer). Events are then
 * merged across processors: each processor's buffers are taken in file order
 * (circular files: in sequence-number order), one current buffer per
 * processor is held (decompressed when it is compressed), and the event with
 * the smallest timestamp goes first; equal timestamps keep file order. The
 * log-file header record is always the first event. Memory is therefore one
 * buffer per processor plus the index, whatever the file size; a stream
 * gives back memory far above what its current buffer needs. A file opened
 * by path is mapped read-only on POSIX systems (etw_reader_options.no_map):
 * uncompressed buffers are then read in place like memory input, and the
 * pages of buffers already read are given back as reading goes on.
 *
 * What is a buffer: the first one starts at offset 0 and holds the log-file
 * header record; a BufferSize that leads straight to a well-formed buffer
 * header (fields in range, a known first record) or to the end of the file
 * is right. Buffers need not look alike: sizes may differ (relogged traces)
 * and so may LoggerIds (a relogged Windows 7 trace: 0, then 0x8001). When a
 * BufferSize leads nowhere, the trace's BufferSize (log-file header) is
 * tried, then the next believable header after the buffer's own data
 * (windows read once, candidates judged in memory: linear in the bytes
 * scanned; a candidate whose own size chains on to another buffer wins over
 * one whose does not); the buffer keeps its records up to its SavedOffset.
 *
 * Limits: a compressed buffer decompresses to at most min(its FilledBytes,
 * the trace's BufferSize, 16 MiB) -- 1 MiB when the header states no usable
 * BufferSize -- and when a file's compressed buffers would decompress to
 * more than 256 times the file's size (and 64 MiB), each to at most 256
 * times its own size. A record whose time is more than a day plus the
 * session's length outside its start/end time (or, with no end time, more
 * than ten years after its start) is reported and skipped: every event's
 * time is a valid FILETIME.
 *
 * Damage (a buffer that lies about its size, a record that overruns its
 * buffer, a buffer that does not decompress) is reported once through
 * etw_reader_options.on_diag with the file offset; the rest of that buffer is
 * skipped and reading goes on with the next one. Every event before the
 * damage is still returned.
 *
 * A reader is single-threaded and holds no global state; use one per thread.
 */
#ifndef ETWDECODE_ETW_READER_H
#define ETWDECODE_ETW_READER_H

#include <stddef.h>
#include <stdint.h>

#include "etw_event.h"
#include "etw_status.h"
#include "etw_types.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The reader: opaque. */
typedef struct etw_reader etw_reader;

/* TRACE_LOGFILE_HEADER (evntrace.h), as found in the first record. */
/* A time-zone transition (the SYSTEMTIME fields TIME_ZONE_INFORMATION uses). */
typedef struct etw_tz_transition {
    uint16_t year, month, day_of_week, day, hour, minute, second;
} etw_tz_transition;

typedef struct etw_logfile_header {
    uint32_t buffer_size;
    uint32_t version;          /* as stored: major in the low byte */
    uint32_t provider_version; /* OS build number */
    uint32_t number_of_processors;
    int64_t end_time;          /* FILETIME */
    uint32_t timer_resolution; /* 100 ns units */
    uint32_t maximum_file_size;
    uint32_t log_file_mode;
    uint32_t buffers_written;
    uint32_t start_buffers;
    uint32_t pointer_size;
    uint32_t events_lost;
    uint32_t cpu_speed_mhz;
    int32_t timezone_bias;     /* minutes, positive west of UTC */
    int64_t boot_time;         /* FILETIME */
    int64_t perf_freq;         /* QPC frequency in Hz */
    int64_t start_time;        /* FILETIME (UTC) of session start */
    uint32_t reserved_flags;   /* clock type: 1 QPC, 2 system time, 3 CPU cycles */
    uint32_t buffers_lost;
    /* The logger (session) name and log file name that follow the fixed
     * part, as UTF-16LE bytes without the terminating NUL (borrowed from the
     * reader; valid until etw_reader_close()). */
    const uint8_t *session_name;
    uint32_t session_name_bytes;
    const uint8_t *logfile_name;
    uint32_t logfile_name_bytes;
    /* The header record's own fields. */
    int64_t raw_timestamp;     /* clock value of the header record (time anchor) */
    uint32_t pid, tid;
    /* The rest of the recording machine's TIME_ZONE_INFORMATION: biases
     * added to timezone_bias in standard and in daylight time (minutes), and
     * when each begins (SYSTEMTIME fields; month 0: the zone has no daylight
     * saving time). etw_logfile_utc_offset() applies them. */
    int32_t timezone_standard_bias;
    int32_t timezone_daylight_bias;
    etw_tz_transition timezone_standard_date; /* daylight -> standard, in local daylight time */
    etw_tz_transition timezone_daylight_date; /* standard -> daylight, in local standard time */
} etw_logfile_header;

/* The recording machine's offset from UTC, in seconds east, at the UTC
 * FILETIME ft: -(Bias + StandardBias) or -(Bias + DaylightBias) minutes,
 * by the header's daylight-saving rule as Windows applies it
 * (TIME_ZONE_INFORMATION: year 0 = "day-in-month" form, the day-th
 * day_of_week of month, 5 = the last; a year other than 0 = that date of
 * that year only). */
long etw_logfile_utc_offset(const etw_logfile_header *h, int64_t ft);

/* One problem met while reading. */
typedef struct etw_diag {
    etw_status status;         /* what went wrong; ETW_OK for a warning (nothing
                                * was lost: e.g. a manifest provider replaced by
                                * a later file) */
    uint64_t file_offset;      /* where: buffer start + offset in the buffer */
    const char *message;       /* English, one line, no trailing newline */
} etw_diag;

typedef void (*etw_diag_fn)(void *ctx, const etw_diag *diag);

/* Random-access input. read_at copies `size` bytes at `offset` into buf and
 * returns the number of bytes read (fewer only at the end of the input), or
 * -1 on error. */
typedef struct etw_input {
    long long (*read_at)(void *ctx, uint64_t offset, void *buf, size_t size);
    uint64_t size;
    void *ctx;
} etw_input;

typedef struct etw_reader_options {
    const etw_allocator *allocator; /* NULL: malloc/free */
    etw_diag_fn on_diag;            /* NULL: problems are only counted */
    void *diag_ctx;
    /* Upper bound for one buffer (its on-disk and decompressed size);
     * 0 means 64 MiB. Larger buffers are reported and skipped. */
    uint32_t max_buffer_size;
    /* 1: return records in file order (no merge across processors). */
    int file_order;
    /* etw_reader_open_file only. 0 (default): on POSIX systems the file is
     * mapped read-only and buffers are read in place, with no copy; the
     * pages of buffers already read are given back as reading goes on, so
     * resident memory stays a few MiB whatever the file's size. The file's
     * size is taken at open: if another process cuts the file shorter while
     * it is read, the process gets SIGBUS (docs/limits.md). 1: read with
     * pread into the reader's own memory instead (as on Windows, and
     * whenever the mapping fails). */
    int no_map;
} etw_reader_options;

/* What the reader saw so far (complete after ETW_END). */
typedef struct etw_reader_stats {
    uint64_t buffers;             /* buffers in the index */
    uint64_t buffers_compressed;  /* with BufferFlag COMPRESSED */
    uint64_t buffers_skipped;     /* damaged or unreadable, skipped in full or in part */
    uint64_t buffers_lost_flag;   /* with BufferFlag BUFFER_LOST / EVENTS_LOST */
    uint64_t events;              /* records returned */
    uint64_t events_by_form[ETW_FORM_COUNT_];
    uint64_t records_skipped;     /* unknown or damaged records skipped */
    uint64_t problems;            /* diagnostics reported */
    uint64_t bytes_decompressed;  /* output of the decompressor */
    int64_t first_timestamp;      /* FILETIME of the earliest/latest event */
    int64_t last_timestamp;
} etw_reader_stats;

/* Open a file by path. On failure *out is NULL and the status says why
 * (ETW_E_IO, ETW_E_NOT_ETL, ETW_E_NOMEM...). ETW_E_IO leaves errno set: the
 * open's or fstat's error, EISDIR for a directory, ESPIPE for a file that is
 * not a regular file (a pipe, a terminal, a device: it cannot be read at
 * offsets; read it into memory and use etw_reader_open_memory). */
etw_status etw_reader_open_file(etw_reader **out, const char *path,
                                const etw_reader_options *opt);

/* Read from bytes in memory, which must stay valid until close. Uncompressed
 * buffers are not copied. */
etw_status etw_reader_open_memory(etw_reader **out, const void *data,
                                  size_t size, const etw_reader_options *opt);

/* Read through caller-supplied random access. */
etw_status etw_reader_open_input(etw_reader **out, const etw_input *input,
                                 const etw_reader_options *opt);

/* The next event in timestamp order: ETW_OK and *ev filled; ETW_END when all
 * buffers are done. A buffer that cannot be read (input error, no memory)
 * is reported through on_diag and skipped like a damaged one. */
etw_status etw_reader_next(etw_reader *r, etw_event *ev);

/* The same event without the copy: *ev points at the reader's own event
 * (read-only), valid with the bytes it borrows until the next call of
 * etw_reader_next / etw_reader_next_ref, etw_reader_rewind,
 * etw_reader_set_range or etw_reader_close. The two calls may be mixed;
 * they share one position. At the end (ETW_END) and on error *ev is NULL.
 * An etw_event is some 170 bytes (64-bit): a loop that only looks at each
 * event (counts, filters, copies the payload elsewhere) saves that copy. */
etw_status etw_reader_next_ref(etw_reader *r, const etw_event **ev);

/* Watch the records of up to ETW_READER_MAX_WATCH providers (the GUIDs of
 * EVENT_HEADER and classic records, the class GUIDs of kernel records, as
 * in etw_event.provider): fn sees each of them, as etw_reader_next would
 * give it, when the reader loads its buffer for the merge - before any
 * event of that buffer is handed out, so in buffer-load order, ahead of
 * its place in the event order. The first buffer of every processor loads
 * before the first event after the log-file header is returned, each
 * further one when its processor's previous buffer is used up. The event
 * and the bytes it borrows are valid during the call only; fn may call
 * etw_reader_watch to change what is watched. A rewind or a new range
 * loads the buffers, and shows their records, again; what is read to find
 * a range's start (etw_reader_set_range) is not shown. MESSAGE (WPP,
 * TraceMessage) records and kernel records of groups the reader does not
 * know are never shown. fn NULL or n 0 stops watching. ETW_E_INVALID_ARG
 * for r NULL, n above the maximum or providers NULL with n > 0. Costs a
 * look at each record's header as its buffer loads (some 60 instructions),
 * nothing when unset. */
#define ETW_READER_MAX_WATCH 4
typedef void (*etw_record_watch_fn)(void *ctx, const etw_event *ev);
etw_status etw_reader_watch(etw_reader *r, const etw_guid *providers, size_t n, etw_record_watch_fn fn,
                            void *ctx);

/* The log-file header (valid after a successful open). */
const etw_logfile_header *etw_reader_logfile(const etw_reader *r);

/* Convert a raw clock value of this trace to UTC FILETIME. */
int64_t etw_reader_to_filetime(const etw_reader *r, int64_t raw);

const etw_reader_stats *etw_reader_stats_get(const etw_reader *r);

/* Go back to the first event (the index is kept). */
etw_status etw_reader_rewind(etw_reader *r);

void etw_reader_close(etw_reader *r);

/* --- Part of a file by time: one file split over several workers ---------
 *
 * Each event has an order time: the latest timestamp (UTC FILETIME) of its
 * processor's stream up to and including it. It equals the event's own
 * timestamp except after a processor's clock went back, and the merged event
 * sequence never goes back in order time. So a set of ranges [b0, b1),
 * [b1, b2), ... cuts the whole-file sequence into consecutive pieces: read
 * one reader per range and concatenate, and every event comes exactly once,
 * in the same order, even where a processor's buffers straddle a boundary.
 *
 * A range reader starts each processor's stream at the buffer before the
 * first one whose first record is at or after the range start (found by a
 * binary search that reads one buffer per step; it falls back to the
 * stream's first buffer when that buffer already holds range events), so it
 * reads only the buffers covering the range, plus a few per processor. The pieces are exact when no event before
 * that buffer is later than the range start (a clock that jumps back by more
 * than a buffer's time span breaks this). Memory is what a whole-file
 * reader needs: one buffer per processor and the index.
 *
 * What the trace teaches the decoder (merged metadata, EventSource
 * manifests, the kernel's thread -> process table) is not in a range: find
 * those records once with a whole-file pass that resolves every event
 * (etw_decoder_learns(), etw_reader_order_time()), and give each range's
 * decoder those records with etw_reader_event_at() and etw_decoder_learn():
 * every ETW_LEARN_TRACE record, and the ETW_LEARN_LATER ones whose order
 * time is before the range start, in the pass's order.
 */

/* Read only events whose order time t is in from <= t < to, and rewind.
 * INT64_MIN / INT64_MAX mean unbounded; (INT64_MIN, INT64_MAX) is the whole
 * file again. The log-file header record is returned only by a range that
 * starts at INT64_MIN. ETW_E_INVALID_ARG when from >= to. */
etw_status etw_reader_set_range(etw_reader *r, int64_t from, int64_t to);

/* The order time of the event returned last by etw_reader_next()
 * (INT64_MIN for the log-file header record). */
int64_t etw_reader_order_time(const etw_reader *r);

/* Boundaries that split the file into at most n ranges of about equal
 * bytes: the time of the first record of the buffer where each n-th of the
 * file begins. bounds[0] = INT64_MIN, bounds[*count] = INT64_MAX, strictly
 * increasing; bounds must hold n + 1 entries. Fewer ranges come back when
 * the file has too few buffers. Reads n - 1 buffers. */
etw_status etw_reader_split(etw_reader *r, uint32_t n, int64_t *bounds, uint32_t *count);

/* The record at a place (ev->buffer_file_offset, ev->record_offset of an
 * earlier pass), read on its own. *ev borrows a buffer of its own, valid
 * until the next call of this function; the reader's position and range are
 * untouched. ETW_E_NOT_FOUND when no buffer or record is there; ETW_E_IO /
 * ETW_E_NOMEM when the buffer cannot be read. */
etw_status etw_reader_event_at(etw_reader *r, uint64_t buffer_file_offset, uint32_t record_offset,
                               etw_event *ev);

#ifdef __cplusplus
}
#endif
#endif
