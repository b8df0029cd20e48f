/* etw_metadata.h - the schema source for TRACE_EVENT_INFO metadata merged
 * into a trace by xperf/WPR/the relogger (KernelTraceControl "MetaData"
 * events, docs FORMATS.md section 9).
 *
 * The records: classic EVENT_TRACE_HEADER events of class
 * bbccf6c1-6cd1-48c4-80ff-839482e37671 (PerfView: "KernelTraceControl",
 * "MetaData/...");
 *   opcode 32 EventInfo    = one TRACE_EVENT_INFO as TdhGetEventInformation
 *                            returns it (offsets relative to the payload);
 *   opcode 33 EventMapInfo = provider GUID (16 bytes) + one EVENT_MAP_INFO
 *                            (offsets relative to the EVENT_MAP_INFO).
 * Each is written at the first instance of the event it describes and sorts
 * just after it, so the caller pre-scans the whole trace (offering every
 * event), rewinds, then decodes:
 *
 *   etw_metadata_set *md; etw_metadata_set_new(&md, NULL);
 *   while (etw_reader_next(r, &ev) == ETW_OK) etw_metadata_offer(md, &ev, NULL, NULL);
 *   etw_reader_rewind(r);
 *   etw_source src = etw_metadata_as_source(md);
 *   etw_decoder_add_source(dec, &src);          // after the user's manifests
 *   src = etw_metadata_as_classic_source(md);   // MOF-decoded entries, if wanted
 *   etw_decoder_add_source(dec, &src);
 *
 * What is kept: every EventInfo is parsed and validated when offered (so a
 * damaged record is reported during the pre-scan), converted to UTF-8 and
 * copied (the event's bytes are borrowed); entries are indexed by
 * (ProviderGuid, Id, Version) - MOF-decoded entries (DecodingSource 1) by
 * (EventGuid, Opcode, Version) for the classic source. Maps are indexed by
 * (provider GUID, map name) and looked up by name when a schema is built,
 * so a map may arrive before or after the events using it. The first record
 * of a key wins; later ones are counted as duplicates.
 *
 * Mapping to the schema model (etw_schema.h):
 *   - property flags: the low eight bits as stored (tdh.h PROPERTY_FLAGS);
 *     in/out types as stored; struct start/count; count and length as
 *     stored, literal or index per the flags;
 *   - pre-Windows 10 TDH writes literal counts and lengths without the
 *     Fixed flags: count > 1 with neither ParamCount nor ParamFixedCount
 *     becomes ETW_PROP_COUNT_FIXED (e.g. CLR StackWalk "Stack", count 2);
 *     a non-zero length on a string or binary property with neither
 *     ParamLength nor ParamFixedLength becomes ETW_PROP_LENGTH_FIXED (GUIDs
 *     and integers report their size there: left as is);
 *   - tags: the 28-bit property tags when PropertyHasTags; event tags =
 *     TRACE_EVENT_INFO.Flags >> 4;
 *   - maps: MapNameOffset names a map of the same provider; value maps
 *     (flags 0x1, WBEM 0x8) and bitmaps (0x2, WBEM 0x10/0x20); pattern maps
 *     and string-valued maps are skipped (the property keeps no map); a
 *     missing map leaves the property without one;
 *   - strings: UTF-16LE, NUL-terminated inside the blob, converted to UTF-8
 *     (unpaired surrogates become U+FFFD), trailing spaces trimmed (TDH
 *     ends message-table strings with one);
 *   - provider_name = ProviderName (NULL when absent); task_name and
 *     opcode_name as TDH reports them (trimmed; NULL when absent); message =
 *     EventMessage;
 *   - event_name, as PerfView's TdhEventParser + TraceEvent.EventName name
 *     these events (docs/json-output.md "event"):
 *       task = TaskName with spaces removed and '-' made '_';
 *       no task: EventName (TRACE_EVENT_INFO.EventNameOffset, Windows 10
 *         1709+, manifest events only) if present, else "EventID(N)";
 *         never suffixed with an opcode;
 *       opcode 0 (win:Info): task alone;
 *       else task "/" opcode, opcode = OpcodeName without its "win:" prefix,
 *         spaces removed, '-' made '_'; without an OpcodeName the standard
 *         name (Start, Stop, DCStart, DCStop, Extension, Reply, Resume,
 *         Suspend, Send) or "Opcode(N)".
 *     So "Microsoft-Windows-Immersive-Shell" task
 *     "ImmersiveShellAppManagerOnShellHookMessage", opcode 1 "win:Start" is
 *     "ImmersiveShellAppManagerOnShellHookMessage/Start".
 *
 * Validation (each failure: the record is dropped, counted as damaged, and
 * offer reports ETW_E_TRUNCATED / ETW_E_CORRUPT / ETW_E_LIMIT with a reason):
 * payload shorter than the fixed part or the property array; PropertyCount
 * above 65535 or TopLevelPropertyCount above PropertyCount; a string offset
 * past the end, a string without its NUL inside the blob, a property
 * without a name; struct members that do not follow the struct or run past
 * the array; count/length indexes that do not precede their user or do not
 * name a scalar integer; a property with two parents (the tree rules of
 * etw_schema.h, checked with etw_schema_validate()); an EVENT_MAP_INFO
 * whose entries run past the payload or whose names are bad.
 *
 * A set is single-threaded; it must outlive the decoders using it as a
 * source.
 */
#ifndef ETW_METADATA_H
#define ETW_METADATA_H

#include <stddef.h>
#include <stdint.h>

#include "../schema/etw_source.h"
#include "etwdecode/etw_event.h"
#include "etwdecode/etw_status.h"
#include "etwdecode/etw_types.h"

/* The MetaData event class and its opcodes. */
#define ETW_METADATA_GUID_DATA1 0xbbccf6c1u
#define ETW_METADATA_OPCODE_EVENT_INFO 32
#define ETW_METADATA_OPCODE_MAP_INFO 33
/* PerfView's provider name for the MetaData records. */
#define ETW_METADATA_PROVIDER_NAME "KernelTraceControl"

typedef struct etw_metadata_set etw_metadata_set;

typedef struct etw_metadata_stats {
    uint64_t event_records;  /* EventInfo records taken (parsed, kept or duplicate) */
    uint64_t map_records;    /* EventMapInfo records taken */
    uint64_t damaged;        /* records rejected (not kept) */
    uint64_t duplicates;     /* taken records whose key was already kept */
    uint64_t skipped_maps;   /* maps of a kind the schema model has no use for */
} etw_metadata_stats;

/* a: NULL gives malloc/free. */
etw_status etw_metadata_set_new(etw_metadata_set **out, const etw_allocator *a);
void etw_metadata_set_free(etw_metadata_set *m);

/* Offer an event. If it is a MetaData EventInfo/EventMapInfo record, parse
 * and keep what it describes and return 1: *status = ETW_OK (kept, or a
 * duplicate), or the error that made it dropped (*why then gives a one-line
 * reason, valid until the next call on m). Otherwise return 0 with
 * *status = ETW_OK (one compare of the GUID's first word for most events).
 * status and why may be NULL. */
int etw_metadata_offer(etw_metadata_set *m, const etw_event *ev, etw_status *status,
                       const char **why);

/* 1 with key set when the last etw_metadata_add / etw_metadata_offer kept a
 * new event schema: its key in descriptor form (provider GUID, id, version;
 * for an entry TDH decoded from MOF the class GUID, opcode, version: the
 * first bytes of the decoder's classic key). 0 after a map record, a
 * duplicate or a rejected record. */
int etw_metadata_added_key(const etw_metadata_set *m, uint8_t key[ETW_DESCRIPTOR_KEY_SIZE]);

/* Parse a payload directly (what offer does after recognizing the record;
 * for tests and fuzzing). opcode: ETW_METADATA_OPCODE_EVENT_INFO or
 * ETW_METADATA_OPCODE_MAP_INFO. */
etw_status etw_metadata_add(etw_metadata_set *m, uint8_t opcode, const uint8_t *payload,
                            size_t len, const char **why);

/* The set as a source: kind ETW_SOURCE_METADATA, key
 * ETW_SOURCE_KEY_DESCRIPTOR (provider GUID, id, version). */
etw_source etw_metadata_as_source(etw_metadata_set *m);
/* The entries TDH decoded from MOF (DecodingSource 1) as a classic source:
 * kind ETW_SOURCE_METADATA, key ETW_SOURCE_KEY_CLASSIC (class GUID, opcode,
 * version; the decoder sets the key's high id byte to 0xFF). */
etw_source etw_metadata_as_classic_source(etw_metadata_set *m);

/* Distinct event schemas and maps kept. */
uint32_t etw_metadata_event_count(const etw_metadata_set *m);
uint32_t etw_metadata_map_count(const etw_metadata_set *m);
const etw_metadata_stats *etw_metadata_stats_get(const etw_metadata_set *m);

/* 1 when ev is a record of the MetaData class (classic header, any opcode). */
int etw_metadata_is_metadata_event(const etw_event *ev);
/* PerfView's event name of a MetaData record: "MetaData/EventInfo" or
 * "MetaData/EventMapInfo" (provider ETW_METADATA_PROVIDER_NAME); NULL for
 * other opcodes of the class and for other events. */
const char *etw_metadata_event_name(const etw_event *ev);

#endif
