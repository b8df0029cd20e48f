/* etw_stats.h - the summary of a trace (or of the events a filter selects):
 * the questions a person asks first.
 *
 *   etw_stats *st;
 *   etw_stats_new(&st, NULL);
 *   while (next(&ev)) {
 *       etw_label l;
 *       int sel = etw_filter_match(f, dec, &ev, &l);   // or etw_label_event()
 *       etw_stats_observe(st, dec, &ev, &l);          // every event: process names
 *       if (sel == 1) etw_stats_add(st, &ev, &l);     // the counted ones
 *   }
 *   etw_stats_json(st, readers, names, nfiles, &text, &len);
 *
 * With no filter, etw_stats_take(st, dec, &ev, &l) does the three calls of
 * the loop in one, faster.
 *
 * What it counts, for the events added:
 *   - events by provider name and by (provider, event name): count, first
 *     and last time, bytes of user data;
 *   - events by process id, with the image name when the trace has
 *     Process/Start, Process/DCStart, Process/End or Process/DCEnd events
 *     (their ImageFileName field, and ProcessId for the id) or
 *     Microsoft-Windows-Kernel-Process ProcessStart (1) or ProcessRundown
 *     (15) events (the file name of their ImageName, ProcessID for the
 *     id) - those are read from every event passed to etw_stats_observe,
 *     selected or not, straight from the payload where the properties
 *     before the two are flat scalars;
 *   - decode errors by kind: the text of the event's "error" before its
 *     first ':' ("no schema", ...), with the first full message as example;
 *   - the time range and the event count.
 * And per file (from its reader, at etw_stats_json time): session, OS,
 * clock, pointer size, processors, buffers (compressed, lost, skipped),
 * events lost and buffers lost as the header says, records skipped.
 *
 * The JSON object (one line, no trailing newline):
 *   {"files":[{"file","session","os_version","os_build","pointer_size",
 *     "processors","clock","clock_hz","start","end","buffers",
 *     "buffers_compressed","buffers_lost_flag","buffers_skipped",
 *     "events","records_skipped","events_lost","buffers_lost"}...],
 *    "events":N,"first":TIME,"last":TIME,"bytes":N,
 *    "lost":{"events_lost","buffers_lost","buffers_lost_flag",
 *            "buffers_skipped","records_skipped","lost_event_records"},
 *    "providers":[{"provider","count","first","last","bytes"}...],
 *    "events_by_name":[{"provider","event","count","first","last","bytes"}...],
 *    "processes":[{"pid","image","count","first","last","bytes"}...],
 *    "errors":[{"kind","count","example"}...]}
 * Lists are sorted by count (descending), then by name; "image" is null
 * when unknown; "pid" -1 for events with none; times as in the JSON output
 * (RFC 3339 UTC). "lost_event_records" counts the added events named
 * "Lost_Event/..." or ".../LostEvent" (the kernel's RT_LostEvent records).
 *
 * Memory: one record per distinct provider, event name, process and error
 * kind, each table bounded by ETW_STATS_MAX_KEYS (past it, new keys are
 * counted under "(other)"). Single-threaded.
 */
#ifndef ETWDECODE_ETW_STATS_H
#define ETWDECODE_ETW_STATS_H

#include <stddef.h>

#include "etw_decoder.h"
#include "etw_event.h"
#include "etw_label.h"
#include "etw_reader.h"
#include "etw_status.h"
#include "etw_types.h"

#ifdef __cplusplus
extern "C" {
#endif

#define ETW_STATS_MAX_KEYS 1000000

typedef struct etw_stats etw_stats;

etw_status etw_stats_new(etw_stats **out, const etw_allocator *alloc);
void etw_stats_free(etw_stats *st);

/* Learn process names from ev (every event, selected or not); d decodes
 * the payload of Process events only. */
etw_status etw_stats_observe(etw_stats *st, etw_decoder *d, const etw_event *ev, const etw_label *label);

/* etw_stats_observe in two halves, for callers that decode on several
 * threads and count on one: etw_stats_process_name says which name ev
 * gives which pid (*json NULL when none; the JSON string, quotes included,
 * is st's until its next call), and etw_stats_name_process records it -
 * called in event order, they do exactly what etw_stats_observe does. */
etw_status etw_stats_process_name(etw_stats *st, etw_decoder *d, const etw_event *ev, const etw_label *label,
                                  uint32_t *pid, const char **json, size_t *len);
etw_status etw_stats_name_process(etw_stats *st, uint32_t pid, const char *json, size_t len);

/* Count ev. */
etw_status etw_stats_add(etw_stats *st, const etw_event *ev, const etw_label *label);

/* For a caller that counts every event it reads (no filter): label ev with
 * d as etw_label_event does and do what etw_stats_observe and
 * etw_stats_add do, the same summary, in less time - an event of a kind
 * counted before (its schema, and the header fields the names come from)
 * is counted where that one was, without making its names. *label gets
 * the schema, error, status, pid and tid; its provider and event names
 * only for a kind met the first time (else ""). */
etw_status etw_stats_take(etw_stats *st, etw_decoder *d, const etw_event *ev, etw_label *label);

/* etw_stats_add in two halves, for counting on several threads (one
 * etw_stats each) with a result that does not depend on how the events
 * were shared: etw_stats_count counts what is the same in any order
 * (counts, bytes, first and last times), in the thread's own object;
 * etw_stats_count_error counts the decoding errors, whose examples are
 * the first of each kind, so it must see the events in order, on one
 * object (etw_stats_has_error: whether it would count anything). Then
 * etw_stats_merge adds each thread's object into that one: ETW_E_LIMIT
 * when a table reached ETW_STATS_MAX_KEYS in either (the keys let in would
 * depend on the order: count those events on one thread). */
etw_status etw_stats_count(etw_stats *st, const etw_event *ev, const etw_label *label);
int etw_stats_has_error(const etw_label *label);
etw_status etw_stats_count_error(etw_stats *st, const etw_label *label);
etw_status etw_stats_merge(etw_stats *into, etw_stats *from);

/* The summary as one JSON object (see above); readers[i] and names[i]
 * describe the files (names may be NULL: "file" omitted). The text is the
 * stats object's and valid until the next call or etw_stats_free. */
etw_status etw_stats_json(etw_stats *st, const etw_reader *const *readers, const char *const *names,
                          size_t nfiles, const char **out, size_t *len);

/* The same as a table a person reads (etwdump --stats): per file its
 * header facts, then the sections above with times in seconds from the
 * earliest event; control characters in names are shown as '?'. */
etw_status etw_stats_text(etw_stats *st, const etw_reader *const *readers, const char *const *names,
                          size_t nfiles, const char **out, size_t *len);

#ifdef __cplusplus
}
#endif
#endif
