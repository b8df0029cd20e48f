/* etw_schema.h - the one schema model every source produces.
 *
 * A schema says how to read the payload of one kind of event: its names and
 * descriptor, and its properties as a flattened tree. It never depends on a
 * payload. TraceLogging metadata, instrumentation manifests, .NET EventSource
 * manifests, TRACE_EVENT_INFO blobs merged into traces and MOF classes are
 * all turned into this form, then kept in the schema cache (etw_cache.h),
 * whose arena owns every string, property and map a schema points to.
 *
 * Property tree layout (the TRACE_EVENT_INFO layout of tdh.h):
 *   - props[0 .. top_count) are the top-level properties, in payload order;
 *   - a struct property (ETW_PROP_STRUCT) has its members at
 *     props[struct_first .. struct_first + struct_count), and
 *     struct_first is always greater than the struct's own index;
 *   - a count or length taken from another property (ETW_PROP_COUNT_REF,
 *     ETW_PROP_LENGTH_REF) names that property by its index, which is always
 *     smaller than the referring property's index.
 * The cache checks these rules when a schema is inserted, so a decoder
 * walking a cached schema can never loop.
 */
#ifndef ETWDECODE_ETW_SCHEMA_H
#define ETWDECODE_ETW_SCHEMA_H

#include <stdint.h>

#include "etw_types.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Where a schema came from. */
typedef enum etw_schema_source {
    ETW_SOURCE_NONE = 0,
    ETW_SOURCE_TRACELOGGING = 1, /* EVENT_SCHEMA_TL metadata inside the event */
    ETW_SOURCE_MANIFEST = 2,     /* an instrumentation manifest file passed by the user */
    ETW_SOURCE_EVENTSOURCE = 3,  /* a .NET EventSource manifest carried in the trace */
    ETW_SOURCE_METADATA = 4,     /* TRACE_EVENT_INFO merged into the trace (KernelTraceControl) */
    ETW_SOURCE_MOF = 5,          /* classic MOF classes */
    ETW_SOURCE_BUILTIN = 6,      /* a manifest shipped with the library (the CLR's ClrEtwAll.man) */
    ETW_SOURCE_WPP = 7           /* a WPP message of a TMF file (etw_wpp.h): keyed by (message GUID,
                                  * number), in its own map, never the manifests' */
} etw_schema_source;

/* In-types: the numbering of _TDH_IN_TYPE (tdh.h). TraceLogging in-types
 * 0..23 and 25 have the same numbers and meanings; a TraceLogging struct
 * (24) becomes ETW_PROP_STRUCT; a TraceLogging BINARY (u16 size + bytes)
 * becomes ETW_INTYPE_MANIFEST_COUNTEDBINARY. */
typedef enum etw_intype {
    ETW_INTYPE_NULL = 0,
    ETW_INTYPE_UNICODESTRING = 1,
    ETW_INTYPE_ANSISTRING = 2,
    ETW_INTYPE_INT8 = 3,
    ETW_INTYPE_UINT8 = 4,
    ETW_INTYPE_INT16 = 5,
    ETW_INTYPE_UINT16 = 6,
    ETW_INTYPE_INT32 = 7,
    ETW_INTYPE_UINT32 = 8,
    ETW_INTYPE_INT64 = 9,
    ETW_INTYPE_UINT64 = 10,
    ETW_INTYPE_FLOAT = 11,
    ETW_INTYPE_DOUBLE = 12,
    ETW_INTYPE_BOOLEAN = 13, /* 4 bytes */
    ETW_INTYPE_BINARY = 14,  /* length from a property or fixed */
    ETW_INTYPE_GUID = 15,
    ETW_INTYPE_POINTER = 16, /* the event's pointer size */
    ETW_INTYPE_FILETIME = 17,
    ETW_INTYPE_SYSTEMTIME = 18,
    ETW_INTYPE_SID = 19,
    ETW_INTYPE_HEXINT32 = 20,
    ETW_INTYPE_HEXINT64 = 21,
    ETW_INTYPE_MANIFEST_COUNTEDSTRING = 22,     /* u16 byte count + UTF-16 */
    ETW_INTYPE_MANIFEST_COUNTEDANSISTRING = 23, /* u16 byte count + 8-bit chars */
    ETW_INTYPE_RESERVED24 = 24,
    ETW_INTYPE_MANIFEST_COUNTEDBINARY = 25,     /* u16 byte count + bytes */
    ETW_INTYPE_COUNTEDSTRING = 300,
    ETW_INTYPE_COUNTEDANSISTRING = 301,
    ETW_INTYPE_REVERSEDCOUNTEDSTRING = 302,
    ETW_INTYPE_REVERSEDCOUNTEDANSISTRING = 303,
    ETW_INTYPE_NONNULLTERMINATEDSTRING = 304,
    ETW_INTYPE_NONNULLTERMINATEDANSISTRING = 305,
    ETW_INTYPE_UNICODECHAR = 306,
    ETW_INTYPE_ANSICHAR = 307,
    ETW_INTYPE_SIZET = 308,
    ETW_INTYPE_HEXDUMP = 309,
    ETW_INTYPE_WBEMSID = 310
} etw_intype;

/* Out-types: the numbering of _TDH_OUT_TYPE (tdh.h). TraceLogging out-types
 * 0..18 are translated to these by the TraceLogging source. */
typedef enum etw_outtype {
    ETW_OUTTYPE_NULL = 0, /* the in-type's default */
    ETW_OUTTYPE_STRING = 1,
    ETW_OUTTYPE_DATETIME = 2,
    ETW_OUTTYPE_BYTE = 3,
    ETW_OUTTYPE_UNSIGNEDBYTE = 4,
    ETW_OUTTYPE_SHORT = 5,
    ETW_OUTTYPE_UNSIGNEDSHORT = 6,
    ETW_OUTTYPE_INT = 7,
    ETW_OUTTYPE_UNSIGNEDINT = 8,
    ETW_OUTTYPE_LONG = 9,
    ETW_OUTTYPE_UNSIGNEDLONG = 10,
    ETW_OUTTYPE_FLOAT = 11,
    ETW_OUTTYPE_DOUBLE = 12,
    ETW_OUTTYPE_BOOLEAN = 13,
    ETW_OUTTYPE_GUID = 14,
    ETW_OUTTYPE_HEXBINARY = 15,
    ETW_OUTTYPE_HEXINT8 = 16,
    ETW_OUTTYPE_HEXINT16 = 17,
    ETW_OUTTYPE_HEXINT32 = 18,
    ETW_OUTTYPE_HEXINT64 = 19,
    ETW_OUTTYPE_PID = 20,
    ETW_OUTTYPE_TID = 21,
    ETW_OUTTYPE_PORT = 22,
    ETW_OUTTYPE_IPV4 = 23,
    ETW_OUTTYPE_IPV6 = 24,
    ETW_OUTTYPE_SOCKETADDRESS = 25,
    ETW_OUTTYPE_CIMDATETIME = 26,
    ETW_OUTTYPE_ETWTIME = 27,
    ETW_OUTTYPE_XML = 28,
    ETW_OUTTYPE_ERRORCODE = 29,
    ETW_OUTTYPE_WIN32ERROR = 30,
    ETW_OUTTYPE_NTSTATUS = 31,
    ETW_OUTTYPE_HRESULT = 32,
    ETW_OUTTYPE_CULTURE_INSENSITIVE_DATETIME = 33,
    ETW_OUTTYPE_JSON = 34,
    ETW_OUTTYPE_UTF8 = 35,
    ETW_OUTTYPE_PKCS7_WITH_TYPE_INFO = 36,
    ETW_OUTTYPE_CODE_POINTER = 37,
    ETW_OUTTYPE_DATETIME_UTC = 38,
    ETW_OUTTYPE_REDUCEDSTRING = 300,
    ETW_OUTTYPE_NOPRINT = 301,
    /* etwdecode's own, never in a TDH schema: a BINARY that is LZNT1-compressed
     * UTF-16LE text, which the writers show decompressed as a string
     * (KernelTraceControl WinSat's XML; src/common/etw_lznt1.h) */
    ETW_OUTTYPE_LZNT1_UTF16 = 0x7F01
} etw_outtype;

/* Property flags. The low eight bits equal tdh.h PROPERTY_FLAGS so that
 * TRACE_EVENT_INFO blobs map one to one; the rest are ours. */
#define ETW_PROP_STRUCT 0x0001u        /* PropertyStruct: members at struct_first */
#define ETW_PROP_LENGTH_REF 0x0002u    /* PropertyParamLength: length = value of props[length] */
#define ETW_PROP_COUNT_REF 0x0004u     /* PropertyParamCount: count = value of props[count] */
#define ETW_PROP_XML_FRAGMENT 0x0008u  /* PropertyWBEMXmlFragment */
#define ETW_PROP_LENGTH_FIXED 0x0010u  /* PropertyParamFixedLength: length is literal */
#define ETW_PROP_COUNT_FIXED 0x0020u   /* PropertyParamFixedCount: an array even when count is 1 */
#define ETW_PROP_HAS_TAGS 0x0040u      /* PropertyHasTags */
#define ETW_PROP_CUSTOM_SCHEMA 0x0080u /* PropertyHasCustomSchema */
#define ETW_PROP_COUNT_IN_DATA 0x0100u /* TraceLogging variable array: u16 element count precedes the elements */
#define ETW_PROP_CUSTOM_SIZED 0x0200u  /* TraceLogging custom field: u16 byte count + bytes */
#define ETW_PROP_OPTIONAL 0x0400u      /* a top-level property the payload may end before: when no
                                        * byte is left where it starts, the payload is done (MOF
                                        * classes later builds extend: Stack1..Stack192, ThreadName) */
#define ETW_PROP_LENGTH_TO_END 0x0800u /* BINARY: the rest of the payload (the bytes a newer class
                                        * version adds after the fields known here) */
#define ETW_PROP_C_ALIGNED 0x1000u     /* STRUCT: each instance is laid out as a C compiler lays out
                                        * the struct in memory: a fixed-size scalar member starts at
                                        * a multiple of its natural alignment (integers and floats:
                                        * their size; POINTER/SIZET: the pointer size; GUID 4,
                                        * FILETIME 4, SYSTEMTIME 2; others 1) from the instance's
                                        * start, and the instance ends at a multiple of its largest
                                        * member alignment (when the payload has those bytes). Set
                                        * by the schema fix-ups (src/schema/etw_fixup.c) for
                                        * records the runtime writes as raw C structs */
#define ETW_PROP_BITS 0x2000u          /* a UINT8 scalar that takes no payload byte: bits
                                        * [length & 0xFF, + (length >> 8)) (a width of 1..8) of the
                                        * value of props[count], an earlier scalar integer (a
                                        * bitfield of a flags word; out_type BOOLEAN for one bit).
                                        * The kernel tables use it (PerfInfo/Sample's Reserved) */
/* The `length` of an ETW_PROP_BITS property. */
#define ETW_BITS_LENGTH(shift, width) ((uint16_t)((shift) | ((width) << 8)))

/* An array is a property with ETW_PROP_COUNT_REF, ETW_PROP_COUNT_FIXED or
 * ETW_PROP_COUNT_IN_DATA; a count of 1 without one of those flags is a
 * plain (scalar) property. */
#define ETW_PROP_ARRAY_MASK (ETW_PROP_COUNT_REF | ETW_PROP_COUNT_FIXED | ETW_PROP_COUNT_IN_DATA)

/* Value map kinds (tdh.h MAP_FLAGS, manifest valueMap/bitMap). */
#define ETW_MAP_VALUEMAP 0x1u
#define ETW_MAP_BITMAP 0x2u

typedef struct etw_map_entry {
    uint64_t value;
    const char *name; /* UTF-8 */
} etw_map_entry;

/* A value map or bitmap. Value maps have entries sorted by value. */
typedef struct etw_map {
    const char *name;
    uint32_t flags; /* ETW_MAP_VALUEMAP or ETW_MAP_BITMAP */
    uint32_t count;
    const etw_map_entry *entries;
} etw_map;

typedef struct etw_property {
    const char *name;      /* UTF-8, never NULL */
    uint16_t in_type;      /* etw_intype (unused for structs) */
    uint16_t out_type;     /* etw_outtype; 0 = the in-type's default */
    uint32_t flags;        /* ETW_PROP_* */
    uint16_t struct_first; /* ETW_PROP_STRUCT: first member */
    uint16_t struct_count; /* ETW_PROP_STRUCT: number of members */
    uint16_t count;        /* literal count, or index of the count property */
    uint16_t length;       /* literal length, or index of the length property
                            * (strings: characters; binary: bytes) */
    uint32_t tags;         /* 28-bit field tags (ETW_PROP_HAS_TAGS) */
    const etw_map *map;    /* value map / bitmap, or NULL */
} etw_property;

typedef struct etw_schema {
    uint32_t id;               /* one numbering across all sources (assigned by the cache) */
    uint8_t source;            /* etw_schema_source */
    uint8_t pointer_size;      /* 4 or 8: the width it was resolved for */
    etw_guid provider;         /* provider (or event-class) GUID */
    const char *provider_name; /* NULL when the source does not know it
                                * (TraceLogging: the name is in each event's
                                * provider traits) */
    const char *event_name;    /* the name to show (docs/json-output.md rules) */
    const char *task_name;     /* NULL when none */
    const char *opcode_name;   /* NULL when none */
    /* The symbolic names of a manifest (the "name" attributes of the task
     * and opcode, the event's "symbol"), for selecting events by them
     * (etw_filter.h); NULL when the source has none (every source but
     * manifests: TRACE_EVENT_INFO carries one name per task and opcode,
     * which task_name/opcode_name hold). A predefined opcode's symbol has
     * no "win:" prefix ("Start", "DC_Start"), as TraceEvent names it. */
    const char *task_symbol;
    const char *opcode_symbol;
    const char *event_symbol;
    const char *message;       /* message template with %1..%n, or NULL */
    uint16_t event_id;
    uint8_t version;
    uint8_t channel;
    uint8_t level;
    uint8_t opcode;
    uint16_t task;
    uint64_t keywords;
    uint32_t tags;             /* 28-bit event tags */
    uint16_t prop_count;
    uint16_t top_count;
    const etw_property *props;
    /* The payload property that names the process the event is about, for
     * providers that log on another process's behalf (docs/kernel.md,
     * "Payload subjects of manifest providers"). Set by the schema cache
     * when a schema enters it, whatever a source's draft held: with
     * ETW_SUBJECT_PID in subject_flags, subject_prop is that top-level
     * property's index and subject_off its byte offset (ETW_SUBJECT_NONE:
     * not fixed, found by walking the payload). A schema made by hand and
     * zero-filled has none. etw_decoder_event_ids applies them. */
    uint16_t subject_prop;
    uint16_t subject_off;
    uint8_t subject_flags;
    /* ETW_SOURCE_WPP: the TMF message the schema was made from (its format
     * string, function, level, flags; etw_wpp.h), owned by the decoder's
     * TMF set; NULL for every other source. */
    const struct etw_wpp_message *wpp;
} etw_schema;

/* subject_prop / subject_off: none / no fixed offset. */
#define ETW_SUBJECT_NONE 0xFFFFu
/* subject_flags: the pid is the subject property's value (when the payload
 * holds it) */
#define ETW_SUBJECT_PID 0x01u
/* subject_flags: the tid is unknown (ETW_NO_ID) when that pid is not the
 * header's (the header's thread then belongs to another process) */
#define ETW_SUBJECT_TID_NONE_IF_MOVED 0x02u

/* A short name for an in-type as the JSON contract's "unsupported" value
 * uses it ("UNICODESTRING", "INT32", ...; "INTYPE(n)" is never returned:
 * unknown numbers give "UNKNOWN"). */
const char *etw_intype_name(uint16_t in_type);

/* The out-type a property of this in-type with out_type 0 is rendered as
 * (TDH's default; POINTER and SIZET by pointer_size, 4 or 8); 0 for an
 * in-type with none. */
uint16_t etw_default_outtype(uint16_t in_type, uint8_t pointer_size);

#ifdef __cplusplus
}
#endif
#endif
