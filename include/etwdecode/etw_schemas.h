/* etw_schemas.h - the schemas a trace uses, as JSON: what to write queries
 * and filters against.
 *
 *   etw_schemas *sc;
 *   etw_schemas_new(&sc, NULL);
 *   while (next(&ev)) {
 *       etw_label l;
 *       if (etw_filter_match(f, dec, &ev, &l) == 1) etw_schemas_add(sc, &l);
 *   }
 *   etw_schemas_json(sc, &text, &len);
 *
 * One entry per schema (in order of first use), with the number of events
 * that used it:
 *   {"schemas":[{"provider","provider_guid","event","id","version","opcode",
 *     "task","level","channel","keywords","source","pointer_size","events",
 *     "message" (when the schema has one),
 *     "fields":[{"name","type","out_type",
 *                "count" N | "count_field" NAME (arrays),
 *                "length" N | "length_field" NAME (sized strings, binaries),
 *                "map":{"name","kind":"valuemap"|"bitmap",
 *                       "entries":[{"value":N,"name":S}...]},
 *                "fields":[...] (struct members)}...]}...]}
 * "type" is the in-type's name as the JSON contract's "unsupported" uses it
 * (UNICODESTRING, UINT32, ...; STRUCT for structs), "out_type" the
 * out-type's name (tdh.h, without the TDH_OUTTYPE_ prefix; null for the
 * in-type's default), "source" one of tracelogging, manifest, eventsource,
 * metadata, mof, builtin (a manifest shipped with the library). The schemas are borrowed from the decoder: it must outlive
 * the collector's last etw_schemas_json call.
 */
#ifndef ETWDECODE_ETW_SCHEMAS_H
#define ETWDECODE_ETW_SCHEMAS_H

#include <stddef.h>

#include "etw_label.h"
#include "etw_schema.h"
#include "etw_status.h"
#include "etw_types.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct etw_schemas etw_schemas;

etw_status etw_schemas_new(etw_schemas **out, const etw_allocator *alloc);
void etw_schemas_free(etw_schemas *sc);

/* Count one event of label->schema (nothing for events without a schema). */
etw_status etw_schemas_add(etw_schemas *sc, const etw_label *label);

/* The collected schemas as one JSON object (no trailing newline). */
etw_status etw_schemas_json(etw_schemas *sc, const char **out, size_t *len);

/* tdh.h names: "UINT32", "HEXINT64", "IPV6", ...; "UNKNOWN" when not known. */
const char *etw_outtype_name(uint16_t out_type);

#ifdef __cplusplus
}
#endif
#endif
