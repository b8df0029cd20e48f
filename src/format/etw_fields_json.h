/* etw_fields_json.h - an event's "fields" object in the JSON value forms of
 * docs/json-output.md, rendered from the property decoder (etw_decode.h).
 *
 * Nothing is allocated here (the text buffer grows as it needs). */
#ifndef ETW_FIELDS_JSON_H
#define ETW_FIELDS_JSON_H

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

/* Append the event's "fields" object ({...}) to t by decoding ev with s.
 * refs: scratch of at least s->prop_count entries. Returns ETW_OK, or an
 * etw_status when the text buffer failed (ETW_E_NOMEM) or the arguments are
 * invalid (ETW_E_INVALID_ARG: "{}" is written). Undecodable properties become
 * {"unsupported":"<INTYPE name>","raw":"<hex>"} (json-output.md); the object
 * is always well-formed JSON. s NULL writes "{}". */
etw_status etw_fields_json(etw_text *t, const etw_schema *s, const etw_event *ev,
                           uint64_t *refs, size_t refs_len);

/* The same; *trailing (when not NULL, and the schema was walked) receives
 * the payload bytes left after the schema's last property. */
etw_status etw_fields_json_ex(etw_text *t, const etw_schema *s, const etw_event *ev,
                              uint64_t *refs, size_t refs_len, uint32_t *trailing);

/* The same, and after each top-level string field that holds an NT device
 * path a VolumeMapping of d's trace maps to a drive, NAME_drive with the
 * drive path (etw_decoder_value_drive_path). d NULL: as etw_fields_json_ex. */
struct etw_decoder;
etw_status etw_fields_json_drive(etw_text *t, const etw_schema *s, const etw_event *ev, uint64_t *refs,
                                 size_t refs_len, uint32_t *trailing, const struct etw_decoder *d);

/* Append one SCALAR value in its JSON form (exported for tests and other
 * formats). An UNSUPPORTED value is written as its placeholder object;
 * STRUCT/ARRAY markers write nothing. */
void etw_value_json(etw_text *t, const etw_value *v);

/* Pieces of the value forms, exported for other formats and tests (no
 * quotes written). */
/* RFC 5952: lower case, the longest run (the first of equal ones) of at
 * least two zero groups compressed to "::", IPv4-mapped addresses as
 * ::ffff:a.b.c.d. */
void etw_text_ipv6(etw_text *t, const uint8_t addr[16]);
/* a.b.c.d from 4 bytes in memory order. */
void etw_text_ipv4(etw_text *t, const uint8_t addr[4]);

#ifdef __cplusplus
}
#endif
#endif
