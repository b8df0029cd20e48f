/* etw_json_spans.h - where each key's value lies in the line etw_json wrote,
 * recorded while it writes (internal: the text and CSV renderings take their
 * values from these spans instead of parsing the line again).
 *
 * The fixed keys are numbered in the contract's order; a span's offsets are
 * into the writer's line. len 0: the key is absent (a JSON value is never
 * empty). Each top-level member of "fields" gets its name (the schema's, as
 * it is: the renderer decides how to show it), its key as written (quotes
 * included) and its value. */
#ifndef ETW_JSON_SPANS_H
#define ETW_JSON_SPANS_H

#include <stddef.h>

#include "etwdecode/etw_json.h"
#include "etwdecode/etw_schema.h"

enum {
    ETW_JK_TIME, ETW_JK_FILE, ETW_JK_PROVIDER, ETW_JK_PROVIDER_GUID, ETW_JK_EVENT, ETW_JK_ID,
    ETW_JK_VERSION, ETW_JK_LEVEL, ETW_JK_OPCODE, ETW_JK_TASK, ETW_JK_CHANNEL, ETW_JK_KEYWORDS,
    ETW_JK_PID, ETW_JK_PROCESS, ETW_JK_TID, ETW_JK_CPU, ETW_JK_DATA_LEN, ETW_JK_ACTIVITY, ETW_JK_RELATED,
    ETW_JK_CONTAINER, ETW_JK_MESSAGE, ETW_JK_ERROR, ETW_JK_RAW, ETW_JK_FIELDS,
    ETW_JK_STACK, /* not a CSV column: after the fixed keys the renderings share */
    ETW_JK_COUNT
};

typedef struct etw_field_span {
    const char *name;          /* the schema's property name (NUL-terminated, unchecked bytes) */
    size_t key_off, key_len;   /* the key as written, quotes included */
    size_t val_off, val_len;   /* the value as written */
    /* NAME_drive, written after the value when the decoder maps the NT path
     * (etw_fields_json_drive): its key as written (quotes included; 0 with
     * no_keys) and its value; drive_len 0: none */
    size_t drive_key_off, drive_key_len;
    size_t drive_off, drive_len;
} etw_field_span;

typedef struct etw_json_spans {
    size_t off[ETW_JK_COUNT], len[ETW_JK_COUNT];
    etw_field_span *fields;    /* the caller's array of cap entries */
    size_t cap, n;
    /* 1: fields[0..n) are every top-level member of "fields" (they came from
     * a schema and fitted in cap); 0: read the "fields" span instead */
    int complete;
    const etw_schema *schema;  /* the event's schema, or NULL */
    /* set by the caller: 1 = leave "time" out (a renderer that writes the
     * time its own way; the line is then not the contract's) */
    int no_time;
    /* set by the caller: 1 = no NAME_drive members (CSV without a field
     * list: they are never columns, which come from the schemas) */
    int no_drive;
    /* set by the caller: 1 = no keys: the fixed ones are left out (their
     * spans say where each value is) and the top-level members of "fields"
     * written from the schema are their values alone ("fields":{V1,V2}: not
     * JSON; each span's key_len is 0, its name says it; a NAME_drive value
     * is one more element, in the span's drive_off/drive_len) - for CSV and
     * text without a field list, which write the names themselves */
    int no_keys;
    /* set by the writer: when the text of "provider".."keywords" is its
     * memo's, which memo text it is (0: none): equal values, equal text */
    uint64_t seg;
} etw_json_spans;

/* etw_json_event, recording the spans in *sp (sp->fields/cap set by the
 * caller; cap >= the schema's top_count makes the field list complete). */
etw_status etw_json_event_spans(etw_json *j, const etw_reader *r, const etw_event *ev, const char **line,
                                size_t *len, etw_json_spans *sp);

struct etw_decoder;

/* etw_fields_json_ex, recording the top-level members in sp (when not NULL).
 * flags: ETW_FIELDS_INT64_AS_STRING writes integers beyond +-2^53 as strings;
 * ETW_FIELDS_NO_KEYS (CSV and text, which write the schema's names
 * themselves) writes the top-level members as their values alone
 * ("{V1,V2}"), each span's key_len 0. d (may be NULL): add NAME_drive after
 * a top-level NT path it maps (etw_fields_json_drive), recorded in the
 * member's span (keyless: as one more element). */
#define ETW_FIELDS_INT64_AS_STRING 1u
#define ETW_FIELDS_NO_KEYS 2u
etw_status etw_fields_json_spans(etw_text *t, const etw_schema *s, const etw_event *ev, uint64_t *refs,
                                 size_t refs_len, uint32_t *trailing, etw_json_spans *sp, unsigned flags,
                                 const struct etw_decoder *d);

#endif
