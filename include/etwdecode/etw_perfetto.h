/* etw_perfetto.h - decoded events as a timeline in the Trace Event Format
 * (the JSON that ui.perfetto.dev and chrome://tracing open): one object
 * {"traceEvents":[...],"displayTimeUnit":"ms","otherData":{...}}.
 *
 *   etw_perfetto_options po = {0};
 *   po.decoder = dec;
 *   po.time_origin = start;              // FILETIME of ts 0
 *   etw_perfetto *pf;
 *   etw_perfetto_new(&pf, NULL, &po);
 *   etw_perfetto_header(pf, &s, &n);  write(s, n);
 *   while (next(&ev))                   // the selected events, in time order
 *       { etw_perfetto_event(pf, reader, &ev, &s, &n); write(s, n); }
 *   etw_perfetto_finish(pf, &s, &n);  write(s, n);
 *
 * Mapping (docs/timeline.md has the rules in full). ts and dur are
 * microseconds from time_origin with one decimal (ETW's 100 ns). Every
 * event given appears exactly once: as the end of a span ("X", its event's
 * "Provider/Event" name in args.end_event), or as an instant ("i", scope
 * thread, named "Provider/Event", args = its "fields"; cat "sample" for
 * CPU samples, "marker" for the rest). Spans:
 *   - processes (kernel Process Start/DCStart .. End/DCEnd) on a track
 *     "Process" of the process; threads (Thread Start/DCStart .. End/DCEnd)
 *     on the thread itself. A start seen only in the rundown (DC) starts at
 *     ts 0; an end without a start spans from ts 0; spans still open at
 *     etw_perfetto_finish end at the latest event time given (args.end =
 *     "trace end", no end_event).
 *   - CLR GC pauses (GCSuspendEEBegin .. GCRestartEEEnd, per process) on a
 *     track "CLR GC pauses", GCs (GCStart .. GCEnd with the same Count) on a
 *     track "CLR GCs". Unpaired CLR starts stay instants.
 *   - kernel DiskIO Read/Write/Flush: from completion - elapsed
 *     (HighResResponseTime / the trace's PerfFreq) to completion, on one of
 *     the process's "Disk I/O N" lanes (a lane holds spans that do not
 *     overlap, so no two slices of a track cross).
 * Tracks of the writer's own are threads whose tid the process id plus 1
 * (GCs), 3 (Process), 5 (GC pauses) or 2 + 4 k (disk lane k): Windows
 * process and thread ids are multiples of 4, so they never meet a real
 * thread. Events without a process go to the process 4294967292 "(no
 * process)"; events of a process without a thread to its "Process" track.
 * Metadata ("M"): process_name for every process with events (its image
 * name from the decoder's process table, else "pid N"; written again when
 * the name becomes known), thread_name for the writer's tracks and for
 * threads named by a kernel Thread/SetName event.
 *
 * Memory is bounded (docs/limits.md): processes and threads tracked at
 * most ETW_PERFETTO_MAX_PROCESSES / _THREADS; beyond, their events are
 * still written, as instants. Nothing is allocated per event once the
 * tables and the text buffer have grown. Single-threaded; each returned
 * text is valid until the next call. */
#ifndef ETWDECODE_ETW_PERFETTO_H
#define ETWDECODE_ETW_PERFETTO_H

#include <stddef.h>
#include <stdint.h>

#include "etw_decoder.h"
#include "etw_event.h"
#include "etw_json.h"
#include "etw_reader.h"
#include "etw_status.h"
#include "etw_types.h"

#ifdef __cplusplus
extern "C" {
#endif

#define ETW_PERFETTO_MAX_PROCESSES 16384
#define ETW_PERFETTO_MAX_THREADS 262144
/* Disk I/O lanes of a process. */
#define ETW_PERFETTO_DISK_LANES 16

typedef struct etw_perfetto_options {
    /* Decodes payloads and names processes (borrowed; required). */
    etw_decoder *decoder;
    /* FILETIME of ts 0 (the trace start). */
    int64_t time_origin;
    /* As in etw_json_options: the caller's stacks (args.stack: frame
     * labels, innermost first), integers beyond 2^53 as strings. */
    size_t (*stack)(void *ctx, const etw_event *ev, const etw_json_frame **frames);
    void *stack_ctx;
    int int64_as_string;
} etw_perfetto_options;

typedef struct etw_perfetto etw_perfetto;

etw_status etw_perfetto_new(etw_perfetto **out, const etw_allocator *alloc, const etw_perfetto_options *opt);
void etw_perfetto_free(etw_perfetto *pf);

/* The text before the first event: {"traceEvents":[ */
etw_status etw_perfetto_header(etw_perfetto *pf, const char **out, size_t *len);

/* One selected event (from reader r): the trace events it completes or
 * makes, possibly none yet (a span start waits for its end), possibly
 * several (metadata first). */
etw_status etw_perfetto_event(etw_perfetto *pf, const etw_reader *r, const etw_event *ev, const char **out,
                              size_t *len);

/* The spans still open (to the latest event time), then the end of the
 * object with otherData. Call once, after the last event. */
etw_status etw_perfetto_finish(etw_perfetto *pf, const char **out, size_t *len);

/* Counts of what was written (for tests and --stats-like reports). */
typedef struct etw_perfetto_stats {
    uint64_t events;        /* events given */
    uint64_t instants;      /* of which written as instants */
    uint64_t span_ends;     /* of which written as the end of a span */
    uint64_t open_at_end;   /* spans ended at the trace end */
    uint64_t untracked;     /* span starts/ends not tracked: a table was full */
} etw_perfetto_stats;
const etw_perfetto_stats *etw_perfetto_stats_get(const etw_perfetto *pf);

#ifdef __cplusplus
}
#endif
#endif
