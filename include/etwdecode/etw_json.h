/* etw_json.h - render events as JSON Lines, one object per event, per the
 * project's output contract (docs/json-output.md).
 *
 *   etw_json *j;
 *   etw_json_new(&j, NULL, NULL);
 *   while (etw_reader_next(r, &ev) == ETW_OK) {
 *       const char *line; size_t len;
 *       if (etw_json_event(j, r, &ev, &line, &len) == ETW_OK) fwrite(line, 1, len, out);
 *   }
 *   etw_json_free(j);
 *
 * The writer owns one growing text buffer: after the largest event has been
 * written once, formatting allocates nothing. The line it returns ends with
 * '\n' and is valid until the next call.
 */
#ifndef ETWDECODE_ETW_JSON_H
#define ETWDECODE_ETW_JSON_H

#include <stddef.h>

#include "etw_decoder.h"
#include "etw_event.h"
#include "etw_reader.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct etw_json etw_json;

/* One frame of a stack the caller supplies (etw_json_options.stack): UTF-8
 * (repaired when it is not), not NUL-terminated. */
typedef struct etw_json_frame {
    const char *s;
    size_t len;
} etw_json_frame;

typedef struct etw_json_options {
    /* 1: add "raw" (the user data in hex) to every event, not only to those
     * whose payload could not be decoded. */
    int raw_always;
    /* Resolves schemas and decodes payloads into "fields"; NULL: payloads
     * are not decoded and every event with user data carries "raw". The
     * writer borrows it: it must outlive the writer. */
    etw_decoder *decoder;
    /* 1: add "message": the schema's message string with %1..%n filled in
     * from the event's top-level fields (FormatMessage escapes applied), for
     * events whose schema has one. */
    int messages;
    /* The stack of each event from the caller (etwdump --stacks: the stack
     * an etw_profile attached, its frames named by etw_frame_label). Called
     * once per event; returns the number of frames and sets *frames to them,
     * innermost first; 0: no "stack" key. When set, the STACK_TRACE extended
     * items are not written as "stack": the caller's stack replaces them.
     * NULL: "stack" holds the addresses of the event's STACK_TRACE item. */
    size_t (*stack)(void *ctx, const etw_event *ev, const etw_json_frame **frames);
    void *stack_ctx;
    /* 1: payload integers beyond +-2^53 (9007199254740992) as strings
     * ("18446744073709551615"), for readers that parse numbers as doubles
     * (JavaScript, Elasticsearch); 0: exact numbers (the contract). */
    int int64_as_string;
} etw_json_options;

etw_status etw_json_new(etw_json **out, const etw_allocator *alloc,
                        const etw_json_options *opt);

/* Format ev (from reader r) as one JSON line. ETW_E_NOMEM when the buffer
 * cannot grow. */
etw_status etw_json_event(etw_json *j, const etw_reader *r, const etw_event *ev,
                          const char **line, size_t *len);

/* Add "file": NAME (right after "time") to the events formatted from now
 * on; NULL stops it. The contract has the key only when several files are
 * read as one timeline (etw_multi.h). name is borrowed: it must stay valid
 * while it is set. */
void etw_json_set_file(etw_json *j, const char *name);

void etw_json_free(etw_json *j);

/* The text the JSON writes for a time (RFC 3339 UTC, 7 fractional digits:
 * 2011-01-23T22:07:27.2257591Z), NUL-terminated in s. ETW_E_CORRUPT when
 * filetime is outside 1601-01-01 .. 9999-12-31, where the JSON writes null:
 * s is then "null". ETW_E_NOMEM (s "null") when no memory. */
#define ETW_TIME_STRING_SIZE 29
etw_status etw_json_time(int64_t filetime, char s[ETW_TIME_STRING_SIZE]);

#ifdef __cplusplus
}
#endif
#endif
