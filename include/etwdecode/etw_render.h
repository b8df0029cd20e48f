/* etw_render.h - events as JSON Lines, readable text or CSV, with a choice
 * of fields and time forms.
 *
 *   etw_render_options ro = {0};
 *   ro.format = ETW_RENDER_CSV;
 *   ro.json.decoder = dec;
 *   etw_renderer *rd;
 *   etw_renderer_new(&rd, NULL, &ro);
 *   // CSV without a field list: learn the columns from the selected events
 *   while (next(&ev)) etw_renderer_learn(rd, reader, &ev);
 *   etw_renderer_header(rd, &s, &n);   write(s, n);   // the header row
 *   while (next(&ev)) { etw_renderer_event(rd, reader, &ev, &s, &n); write(s, n); }
 *
 * Every format starts from the contract's JSON object of the event
 * (etw_json.h, docs/json-output.md), so names, values and decoding are the
 * same in all of them (the others take the values from where the JSON
 * writer put them, without parsing its line):
 *
 *   JSON  the contract's line. With a field list, "fields" keeps only the
 *         listed members (in the event's order). With a time form other than
 *         UTC, "time" is a number of seconds from the origin (RELATIVE) or
 *         an RFC 3339 string with the local offset (LOCAL).
 *   TEXT  one line a person scans: TIME PROVIDER/EVENT pid=N tid=N then
 *         name=value for each field (names and strings bare when they hold
 *         no space, quote, '=', backslash or control character, else
 *         JSON-quoted; structs and arrays as compact JSON), then stack=[...]
 *         (compact JSON) when the event has a stack, then error="..." and
 *         message="..." when the event has them. Default time: seconds from
 *         the origin.
 *   CSV   RFC 4180: comma-separated, CRLF line ends, a field quoted (with
 *         "" for a quote) when it holds a comma, quote, CR or LF. One header
 *         row. Fixed columns first: time, file (only when set), provider,
 *         provider_guid, event, id, version, level, opcode, task, channel,
 *         keywords, pid, tid, cpu, data_len, activity_id,
 *         related_activity_id, container_id, message (with messages on),
 *         error, raw (with raw_always); then one column per field name: the
 *         field list as given, else every top-level field name of the
 *         events learned, in order of first appearance. Heterogeneous events
 *         share columns by name; a cell is empty when the event has no such
 *         field or key. A field named like a fixed column gets the column
 *         "fields.NAME". Strings are unescaped (UTF-8), numbers and booleans
 *         as in JSON, structs and arrays as compact JSON text, null empty.
 *         "stack" is not a column. csv_lf: LF line ends.
 *   TIMESKETCH  one JSON object a line in the JSONL form Timesketch and
 *         plaso import: "message" (the event's manifest message, else
 *         "PROVIDER/EVENT name=value ..." as TEXT writes them), "datetime"
 *         (ISO 8601 UTC, microseconds, "+00:00"), "timestamp" (microseconds
 *         since 1970-01-01 UTC, an integer), "timestamp_desc" ("Event
 *         Time"), then the contract's keys from "file" to "raw" that the
 *         event has (not "time", "message", "fields" nor the stacks), then
 *         each top-level payload field as "field_NAME" (the prefix keeps
 *         them apart from those keys); structs and arrays as compact JSON
 *         text in a string, so a name always has one type.
 *   XML   the Windows event schema's shape (as tracerpt -of XML writes it):
 *         an XML declaration and <Events> before the first event (the
 *         header), </Events> after the last (the footer), and one line a
 *         event: <Event xmlns=".../2004/08/events/event"><System> Provider
 *         (Name, Guid "{...}"), EventID, Version, Level, Task, Opcode,
 *         Keywords, TimeCreated SystemTime, Correlation (ActivityID,
 *         RelatedActivityID when set), Execution (ProcessID and ThreadID
 *         when known, ProcessorID), Channel, Computer (empty: the trace
 *         does not say) </System><EventData><Data Name="FIELD">value</Data>
 *         ... </EventData></Event>, values as CSV writes them, "&<>\"'"
 *         escaped, characters XML 1.0 forbids (controls other than tab, LF,
 *         CR; U+FFFE, U+FFFF) replaced by U+FFFD; tab, LF and CR as
 *         character references.
 *
 * A renderer keeps its buffers between events (nothing is allocated per
 * event once they have grown) and is single-threaded; the line it returns is
 * valid until the next call.
 */
#ifndef ETWDECODE_ETW_RENDER_H
#define ETWDECODE_ETW_RENDER_H

#include <stddef.h>
#include <stdint.h>

#include "etw_event.h"
#include "etw_json.h"
#include "etw_reader.h"
#include "etw_status.h"
#include "etw_types.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum etw_render_format {
    ETW_RENDER_JSON = 0,
    ETW_RENDER_TEXT = 1,
    ETW_RENDER_CSV = 2,
    ETW_RENDER_TIMESKETCH = 3,
    ETW_RENDER_XML = 4
} etw_render_format;

typedef enum etw_time_form {
    ETW_TIME_DEFAULT = 0, /* JSON, CSV: UTC; TEXT: relative */
    ETW_TIME_UTC,         /* RFC 3339 UTC, 7 fractional digits (the contract's form) */
    ETW_TIME_RELATIVE,    /* seconds from time_origin, 7 fractional digits ("12.3456789") */
    ETW_TIME_LOCAL        /* RFC 3339 with the offset utc_offset gives ("...T16:59:35.8001567+02:00") */
} etw_time_form;

/* Most fields a field list names. */
#define ETW_RENDER_MAX_FIELDS 1024

typedef struct etw_render_options {
    etw_render_format format;
    etw_json_options json;       /* decoder, raw_always, messages (as etw_json) */
    const char *const *fields;   /* payload fields to keep (borrowed); NULL: all */
    size_t nfields;
    etw_time_form time;
    int64_t time_origin;         /* FILETIME of "0" for ETW_TIME_RELATIVE */
    /* ETW_TIME_LOCAL: seconds east of UTC in force at a FILETIME (the
     * caller's time-zone rules: the library reads no time zone). NULL: 0. */
    long (*utc_offset)(void *ctx, int64_t filetime);
    void *utc_offset_ctx;
    int csv_lf;                  /* CSV: "\n" line ends instead of RFC 4180's "\r\n" */
    /* CSV without a field list, in one pass: the columns are learned from
     * the events as they are rendered (no etw_renderer_learn). A row then
     * stops after its last non-empty cell and ends, instead of its line end,
     * with ETW_CSV_STREAM_MARK bytes: 0xFF (never in the row's UTF-8 text),
     * the count of cells written and the count of columns known (4 bytes
     * each, little-endian). Keep the rows, then write
     * etw_renderer_csv_header and the rows through etw_renderer_csv_finish. */
    int csv_stream;
} etw_render_options;

typedef struct etw_renderer etw_renderer;

etw_status etw_renderer_new(etw_renderer **out, const etw_allocator *alloc, const etw_render_options *opt);
void etw_renderer_free(etw_renderer *rd);

/* The "file" key (JSON), column (CSV) or file= item (TEXT) of the events
 * rendered from now on; NULL: none. Borrowed. For CSV, set it before the
 * header to get the column. */
void etw_renderer_set_file(etw_renderer *rd, const char *name);

/* CSV without a field list: add ev's top-level field names to the columns
 * (from its schema, or from its JSON object where the fields do not come
 * from a schema: the log-file header, EventSource manifest chunks).
 * Before etw_renderer_header. Other formats: nothing. */
etw_status etw_renderer_learn(etw_renderer *rd, const etw_reader *r, const etw_event *ev);

/* CSV without a field list: the columns another renderer learned
 * (etw_renderer_learn), added to rd's in their order, as if rd had learned
 * the same events (e.g. one renderer learns in a first pass, the renderers
 * of several threads then render with the same columns). Before
 * etw_renderer_header; from may have written its header. Other formats:
 * nothing. */
etw_status etw_renderer_learn_from(etw_renderer *rd, const etw_renderer *from);
/* The text that comes before the first event: CSV's header row; empty for
 * JSON and TEXT. The columns are fixed from then on. */
etw_status etw_renderer_header(etw_renderer *rd, const char **out, size_t *len);

/* The text that comes after the last event: XML's "</Events>" line; empty
 * for the other formats. */
etw_status etw_renderer_footer(etw_renderer *rd, const char **out, size_t *len);

/* One event, with its line end. */
etw_status etw_renderer_event(etw_renderer *rd, const etw_reader *r, const etw_event *ev,
                              const char **out, size_t *len);

/* csv_stream: the bytes that end a row (0xFF and its two counts). */
#define ETW_CSV_STREAM_MARK 9
/* csv_stream: the header row of the first ncols columns (at least the
 * fixed ones, at most the columns learned). ncols: the columns known at the
 * last row kept (its mark's second count) (every row kept before it has at most as many): the columns of
 * events rendered but not kept (past a limit) are left out. */
etw_status etw_renderer_csv_header(etw_renderer *rd, size_t ncols, const char **out, size_t *len);
/* csv_stream: rows as rendered (a part of them, from a row's start) into
 * their final form: each padded with empty cells to ncols columns and
 * ended by the line end. *used: the bytes of rows taken (a row cut at the
 * end of rows is left for the next call, with the bytes that follow). The
 * text is valid until the next call. */
etw_status etw_renderer_csv_finish(etw_renderer *rd, const char *rows, size_t len, size_t ncols, size_t *used,
                                   const char **out, size_t *outlen);
/* Number of columns of a CSV renderer (after the header), 0 otherwise. */
size_t etw_renderer_columns(const etw_renderer *rd);

#ifdef __cplusplus
}
#endif
#endif
