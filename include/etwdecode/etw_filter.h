/* etw_filter.h - select events: by provider, event name, id, level,
 * keywords, process, thread, time, and decode errors.
 *
 * A filter is a list of predicates, each added from its text form (the same
 * text etwdump's options take, so a command line and an embedder - the
 * Python package - select the same events):
 *
 *   key        value                          an event matches when
 *   ---------  -----------------------------  ----------------------------------
 *   PROVIDER   a GUID ("{...}" or bare), or   its provider (or event-class) GUID
 *              a name or glob                 is it / its provider name matches
 *              ("Microsoft-Windows-Kernel-*") (ASCII case-insensitive)
 *   EVENT      a name or glob ("GC*", and     one of its event names matches
 *              "Process/" followed by "*")    (case-insensitive; see below)
 *   ID         N[,N...], N-M ranges           its descriptor id is one of them
 *   LEVEL      N (0..255)                     its level is at most N
 *   KEYWORDS   MASK (0x... or decimal)        it has any bit of MASK
 *   PID, TID   N[,N...]                       its pid / tid (as the JSON shows
 *                                             them: kernel events name the
 *                                             process they are about) is one
 *                                             of them
 *   SINCE      T                              its time is >= T
 *   UNTIL      T                              its time is <  T
 *   PROCESS    an image name or glob          the JSON "process" of the event
 *              ("powershell*")                (its pid's image name then:
 *                                             etw_decoder_process_name) matches
 *                                             (ASCII case-insensitive); an
 *                                             event without one never does
 *   WHERE      FIELD OP VALUE                 its top-level payload field FIELD
 *              ("Size>1048576",               holds: OP is = != < > <= >=;
 *              "ImageFileName=powershell*")   a string field takes = and !=
 *                                             with a glob (ASCII case-
 *                                             insensitive); a number field
 *                                             (integers, floats, pointers)
 *                                             is compared numerically with a
 *                                             VALUE that is a number ([-]N,
 *                                             0xHEX, 1.5). An event without
 *                                             the field, a field of another
 *                                             type, a string compared with
 *                                             < >, a number field against a
 *                                             non-number: not selected.
 *                                             Several WHERE values must ALL
 *                                             hold; spaces around FIELD, OP
 *                                             and VALUE are ignored
 *   ERRORS     "" (value ignored)             it failed to decode (the JSON
 *                                             "error" key: no schema, damaged
 *                                             metadata)
 *
 * T is RFC 3339 ("2021-09-09T12:59:35.79Z", "...+02:00", up to 7 fractional
 * digits) or a number of seconds from the trace start ("12.5"): the origin
 * set by etw_filter_set_origin(), else the time of the first event the
 * filter is asked about (the log-file header, whose time is the session
 * start; with several files merged, the earliest one).
 *
 * Names are the ones the JSON output shows ("provider" and "event" keys,
 * docs/json-output.md): see etw_label.h. An EVENT value is also tested on
 * the symbolic names of a manifest's events (etw_schema task_symbol,
 * opcode_symbol, event_symbol), so the same event of ClrEtwAll.man is
 * selected by its display name "GC/SuspendEEStart" (task and opcode
 * messages), by "GarbageCollection/GCSuspendEEBegin" (their name
 * attributes: TaskSymbol/OpcodeSymbol; a predefined opcode without "win:",
 * "GarbageCollection/Start"), by the task symbol alone
 * ("GarbageCollection") and by the event's symbol ("GCSuspendEEBegin_V1").
 * Schemas of other sources have no symbolic names: their display name only
 * (TRACE_EVENT_INFO merged into a trace carries one name per task and
 * opcode, shown as Task/Opcode). Globs take '*' (any run of characters,
 * '/' included) and '?' (one character); a name without either must match
 * whole.
 *
 * Combining: a value that starts with '!' excludes (PROVIDER, EVENT, ID,
 * KEYWORDS, PID, TID, PROCESS, WHERE, ERRORS): an event matching any exclusion is left out.
 * Among the inclusions, several values of one key are alternatives (OR), and
 * different keys must all hold (AND); a key with no inclusion holds for every
 * event. LEVEL, SINCE and UNTIL take no '!'; given twice, the later wins.
 * "!" alone for ERRORS keeps only the events that decoded.
 *
 * Cost: etw_filter_match() tests the header predicates (id, level, keywords,
 * pid, tid, time) first, then the names and errors, which need the schema
 * lookup (one hash in the decoder's cache) but never the payload decode.
 * The log-file header is an event like the others (provider "Windows
 * Kernel", event "EventTrace"). Events a filter leaves out must still be
 * passed through the decoder (etw_filter_match does that when given one) so
 * that EventSource manifests and kernel state are learned from them.
 *
 * Threads: a filter is not changed by matching once its origin is set
 * (etw_filter_set_origin, or the first match) - unless it tracks names,
 * below - so after that several threads may match with one filter at once,
 * each with its own decoder. Nothing in it is global.
 *
 * Tracking names: after etw_filter_track_names(), matching also records
 * which PROVIDER and EVENT values given as names or globs matched the name
 * of some event it was asked about (whatever the other predicates say),
 * and the distinct provider and event names seen, so that a program can
 * say that a selection matched nothing and which names were there
 * (etw_filter_unmatched). The work is done once per schema (the cache's
 * schema id; events without a schema: once per distinct name), never per
 * event once every such value has matched. A tracking filter is changed by
 * matching: one thread at a time, with one decoder (schema ids are the
 * decoder's). Filters built alike on several threads are added up with
 * etw_filter_merge_names.
 */
#ifndef ETWDECODE_ETW_FILTER_H
#define ETWDECODE_ETW_FILTER_H

#include <stdint.h>

#include "etw_decoder.h"
#include "etw_event.h"
#include "etw_label.h"
#include "etw_status.h"
#include "etw_types.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct etw_filter etw_filter;

typedef enum etw_filter_key {
    ETW_FILTER_PROVIDER = 1,
    ETW_FILTER_EVENT,
    ETW_FILTER_ID,
    ETW_FILTER_LEVEL,
    ETW_FILTER_KEYWORDS,
    ETW_FILTER_PID,
    ETW_FILTER_TID,
    ETW_FILTER_SINCE,
    ETW_FILTER_UNTIL,
    ETW_FILTER_ERRORS,
    ETW_FILTER_PROCESS,
    ETW_FILTER_WHERE
} etw_filter_key;

/* Longest value text accepted by etw_filter_add (a glob, a list). */
#define ETW_FILTER_MAX_VALUE 4096
/* Most predicates (values of lists included) one filter holds. */
#define ETW_FILTER_MAX_PREDICATES 4096

etw_status etw_filter_new(etw_filter **out, const etw_allocator *alloc);
void etw_filter_free(etw_filter *f);

/* Add one predicate. ETW_OK; ETW_E_INVALID_ARG when the value is not of the
 * key's form (*why, when not NULL, receives a one-line English reason,
 * static); ETW_E_LIMIT past the limits above; ETW_E_NOMEM. */
etw_status etw_filter_add(etw_filter *f, etw_filter_key key, const char *value, const char **why);

/* The key named by text: "provider", "event", "id", "level", "keywords",
 * "pid", "tid", "since", "until", "errors", "process", "where". 0 when unknown. */
etw_filter_key etw_filter_key_from_name(const char *name);

/* The trace start for relative times (FILETIME, UTC). */
void etw_filter_set_origin(etw_filter *f, int64_t filetime);

/* 1 when the filter has no predicate (every event matches). */
int etw_filter_is_empty(const etw_filter *f);

/* 1 when ev is selected. d (may be NULL: fallback names, no errors) is asked
 * for ev's schema - every event, selected or not, so that it learns from all
 * of them. When label is not NULL it receives ev's names and schema (as
 * etw_label_event gives them), so a caller can reuse the lookup. Returns -1
 * when f or ev is NULL or a fallback name could not be formatted. */
int etw_filter_match(etw_filter *f, etw_decoder *d, const etw_event *ev, etw_label *label);

/* The header-only half: 0 when the header predicates already reject ev, 1
 * when they hold (names and errors not tested). No decoder, no lookup. */
int etw_filter_match_header(etw_filter *f, const etw_event *ev);

/* Start tracking names (see above). ETW_OK; ETW_E_INVALID_ARG for NULL. */
etw_status etw_filter_track_names(etw_filter *f);

/* Add what `from` tracked to `into`: the values one of them matched are
 * matched, and the names seen are the union. Both must have been built
 * with the same predicates in the same order (ETW_E_INVALID_ARG if not);
 * ETW_E_NOMEM. */
etw_status etw_filter_merge_names(etw_filter *into, const etw_filter *from);

/* Most suggestions etw_filter_unmatched gives. */
#define ETW_FILTER_MAX_NEAR 5

typedef struct etw_filter_unmatched_info {
    etw_filter_key key;  /* ETW_FILTER_PROVIDER or ETW_FILTER_EVENT */
    int exclude;         /* given with '!' */
    const char *value;   /* the name or glob as given, without the '!' */
    /* the names seen of the same kind (provider or event display names)
     * nearest to the value, nearest first: those that hold its text (its
     * wildcards taken out) or are held in it, then by shared prefix, then
     * by edit distance, all ASCII case-insensitive */
    const char *near[ETW_FILTER_MAX_NEAR];
    size_t nnear;
} etw_filter_unmatched_info;

/* The index-th (from 0, in the order added) name or glob value of a
 * tracking filter that matched no event name: 1 and *out filled, or 0 when
 * there is no such value (or f does not track). The strings stay valid
 * until f is changed or freed. */
int etw_filter_unmatched(const etw_filter *f, size_t index, etw_filter_unmatched_info *out);

/* Parse a time as SINCE/UNTIL take it. Absolute: *filetime set, *relative
 * 0: RFC 3339 ("2021-09-09T12:59:35.79Z", "2021-09-09T14:59:35+02:00"), the
 * same with a space instead of the T, where the zone may be left out (UTC:
 * "2021-09-09 12:59:35", "2021-09-09 12:59:35.5 +02:00"), or a date alone
 * (its midnight UTC: "2021-09-09"). A duration from the start: *filetime
 * holds the offset in 100 ns units and *relative is 1: a decimal number,
 * optionally after '+', with an optional unit s (the default), ms, us, ns,
 * m (minutes) or h ("12.5", "+3s", "250ms", "1.5s", "2m", "100us"), at
 * most 10^11 s, truncated to 100 ns. ETW_E_INVALID_ARG when it is
 * neither. */
etw_status etw_filter_parse_time(const char *text, int64_t *filetime, int *relative);

#ifdef __cplusplus
}
#endif
#endif
