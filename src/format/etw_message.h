/* etw_message.h - an event's message: the schema's message string
 * (etw_schema.message, e.g. a manifest's message="$(string.X)" resolved)
 * with its inserts %1..%99 filled in from the event's top-level properties,
 * the FormatMessage escapes applied, written as one JSON string.
 *
 * Message syntax (that of Windows FormatMessage, which is what Event Viewer
 * and TdhFormatMessage-based tools apply to manifest messages):
 *
 *   %1 .. %99     insert: the text of top-level property N (1-based, in
 *                 template order). At most two digits are read, as
 *                 FormatMessage does: "%100" is insert 10 followed by "0",
 *                 "%123456" is insert 12 followed by "3456".
 *   %N!fmt!       insert with a printf-style format (see "formats" below).
 *                 A '!' with no closing '!' within 32 bytes is not a format:
 *                 the insert is plain and the '!' is literal text.
 *   %0            ends the message (nothing after it is written).
 *   %n            a line break, written as "\n" (FormatMessage writes CR LF;
 *                 a Linux tool writes LF).
 *   %r            carriage return "\r".
 *   %t            tab "\t".
 *   %<any other>  that character without the '%': %% -> "%", %. -> ".",
 *                 %! -> "!", "% " -> " ", and, as FormatMessage does, any
 *                 other one too (ClrEtwAll.man's "%ModuleID" -> "ModuleID",
 *                 "ClrInstanceID=%s" -> "ClrInstanceID=s").
 *   '%' at the end of the message is written as "%".
 *
 * Insert text (etw_value_text): the value's JSON form (docs/json-output.md,
 * etw_value_json) without JSON quoting: strings as their text, integers in
 * decimal, hex out-types / pointers as 0x..., value-map and bitmap names,
 * GUIDs, times (RFC 3339), SIDs, addresses as in JSON, booleans true/false,
 * values JSON renders null (a zero FILETIME, a bad size) as "null". A
 * top-level struct or array is inserted as its JSON text ({"a":1,...} /
 * [1,2,...]). An insert whose property does not exist (N beyond the
 * top-level properties or past where decoding stopped) or could not be
 * decoded (ETW_VALUE_UNSUPPORTED) is left as written in the message,
 * format included ("%7", "%3!x!").
 *
 * Formats (%N!fmt!): fmt is [flags -+ #0][width][.precision][length]conv
 * with length any of h hh l ll L q j z t w I I32 I64 (read and ignored: the
 * value's own width in the payload decides) and conv one of
 *   d i       an integer property (any integer in-type, pointer, size_t,
 *             hex ints, BOOLEAN, chars) as signed decimal, sign-extended
 *             from its payload width;
 *   u x X o   the same as unsigned decimal / hex / HEX / octal of its
 *             payload width ("#" adds 0x / 0X / a leading 0);
 *   s S       any value's normal text, padded to width / cut to precision
 *             characters (code points);
 * flags, width and precision as in C printf. Integer conversions print the
 * number even when the property has a value map (the format asks for a
 * number). Anything else - other conversions (c e f g p ...), '*' width or
 * precision, width or precision above 1024, integer conversions on a value
 * that is not an integer - is not honoured: the value is written in its
 * normal form. Formats are never passed to the C library (no locale, no
 * undefined behaviour from hostile manifests).
 *
 * Size: the message text is at most ETW_MESSAGE_MAX bytes of UTF-8 (before
 * JSON escaping), and at most ETW_MESSAGE_MAX bytes of the template are
 * read. A longer message is cut at the last whole character that fits and
 * ETW_E_LIMIT tells the caller (docs/limits.md). The number is FormatMessage's
 * own bound on its output buffer.
 *
 * Cost: nothing is decoded when the message has no insert; otherwise the
 * payload is decoded once, up to the highest insert the message uses, and
 * only properties the message refers to are rendered. Memory: only the two
 * caller-owned text buffers grow (once they have grown, nothing is
 * allocated per event).
 */
#ifndef ETW_MESSAGE_H
#define ETW_MESSAGE_H

#include <stddef.h>
#include <stdint.h>

#include "etwdecode/etw_decode.h"
#include "etwdecode/etw_event.h"
#include "etwdecode/etw_schema.h"
#include "etwdecode/etw_status.h"
#include "format/etw_text.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Highest insert number a message can use (FormatMessage's limit). */
#define ETW_MESSAGE_MAX_INSERT 99

/* Longest message text, in bytes: FormatMessage's own bound (its nSize
 * documentation, winbase.h: the output buffer cannot exceed 64K bytes). Also
 * the most bytes of a template that are read. */
#define ETW_MESSAGE_MAX 65536u

/* Append to t the JSON string (quotes included) of the event's message:
 * s->message with each %N replaced by the text of top-level property N and
 * the escapes above applied.
 *   scratch   a caller-owned text buffer used as work space (the insert
 *             texts and the plain message are built there before being
 *             JSON-escaped into t); its contents are replaced. Reuse one
 *             buffer across events; it must not be t.
 *   refs      the count/length scratch of the property decoder (at least
 *             s->prop_count entries), as for etw_fields_json.
 * Returns
 *   ETW_OK            the message was appended;
 *   ETW_E_LIMIT       the message (or its template) was longer than
 *                     ETW_MESSAGE_MAX bytes: its first ETW_MESSAGE_MAX bytes,
 *                     cut at a character boundary, were appended;
 *   ETW_E_NOT_FOUND   the schema has no message (nothing appended);
 *   ETW_E_INVALID_ARG t, scratch or s NULL, scratch == t, or the decoder
 *                     refused ev/refs (refs too short; nothing appended);
 *   ETW_E_NOMEM       a text buffer failed (t is then in its failed state,
 *                     or nothing was appended when only scratch failed).
 * Allocation only through t and scratch. */
etw_status etw_message_json(etw_text *t, etw_text *scratch, const etw_schema *s,
                            const etw_event *ev, uint64_t *refs, size_t refs_len);

/* Append the plain-text form of one SCALAR value (no quotes, no JSON
 * escaping): the JSON form of etw_value_json with a JSON string's quotes
 * removed and its escapes decoded (so "a\"b" becomes a"b, and numbers,
 * true/false and null are written as JSON writes them). The text is always
 * valid UTF-8 (ill-formed input was replaced by U+FFFD by the JSON form);
 * it may contain control characters, NUL included.
 * Returns ETW_OK; ETW_E_UNSUPPORTED (nothing written) for an UNSUPPORTED
 * value or a STRUCT/ARRAY marker; ETW_E_INVALID_ARG for NULL arguments;
 * ETW_E_NOMEM when t failed. */
etw_status etw_value_text(etw_text *t, const etw_value *v);

#ifdef __cplusplus
}
#endif
#endif
