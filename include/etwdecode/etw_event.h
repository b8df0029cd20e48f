/* etw_event.h - one ETW event record, normalized from whichever header form
 * the file used, and its extended data items.
 *
 * An etw_event is filled by etw_reader_next(). Every pointer in it (user data,
 * extended items) borrows the reader's current buffer: it stays valid until the
 * next call to etw_reader_next() or etw_reader_close(). Nothing is allocated
 * per event.
 */
#ifndef ETWDECODE_ETW_EVENT_H
#define ETWDECODE_ETW_EVENT_H

#include <stdint.h>

#include "etw_status.h"
#include "etw_types.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The header form a record was written with (see docs/FORMATS.md of the
 * project for each layout). */
typedef enum etw_header_form {
    ETW_FORM_EVENT_HEADER = 0, /* EVENT_HEADER (manifest, TraceLogging, EventSource) */
    ETW_FORM_SYSTEM,           /* SYSTEM_TRACE_HEADER (kernel logger, full) */
    ETW_FORM_COMPACT,          /* SYSTEM_TRACE_HEADER without kernel/user time */
    ETW_FORM_PERFINFO,         /* PERFINFO_TRACE_HEADER (no pid/tid) */
    ETW_FORM_FULL,             /* EVENT_TRACE_HEADER (classic TraceEvent) */
    ETW_FORM_INSTANCE,         /* EVENT_INSTANCE_GUID_HEADER */
    ETW_FORM_MESSAGE,          /* MESSAGE_TRACE_HEADER (WPP / TraceMessage) */
    ETW_FORM_ERROR,            /* EVENT_HEADER-shaped error record */
    ETW_FORM_COUNT_
} etw_header_form;

/* A stable name for a header form ("EVENT_HEADER", "SYSTEM", ...). */
const char *etw_header_form_name(etw_header_form form);

/* EVENT_HEADER_FLAG_* (evntcons.h). The reader synthesizes the pointer-size
 * and CLASSIC_HEADER bits for other header forms, as Windows does. */
#define ETW_EVENT_FLAG_EXTENDED_INFO   0x0001u
#define ETW_EVENT_FLAG_PRIVATE_SESSION 0x0002u
#define ETW_EVENT_FLAG_STRING_ONLY     0x0004u
#define ETW_EVENT_FLAG_TRACE_MESSAGE   0x0008u
#define ETW_EVENT_FLAG_NO_CPUTIME      0x0010u
#define ETW_EVENT_FLAG_32_BIT_HEADER   0x0020u
#define ETW_EVENT_FLAG_64_BIT_HEADER   0x0040u
#define ETW_EVENT_FLAG_DECODE_GUID     0x0080u
#define ETW_EVENT_FLAG_CLASSIC_HEADER  0x0100u
#define ETW_EVENT_FLAG_PROCESSOR_INDEX 0x0200u

/* The value of pid/tid when the header form carries none (PERFINFO, some
 * MESSAGE records). */
#define ETW_NO_ID 0xFFFFFFFFu

/* EVENT_HEADER_EXT_TYPE_* (evntcons.h). */
typedef enum etw_ext_type {
    ETW_EXT_RELATED_ACTIVITYID = 0x0001,
    ETW_EXT_SID = 0x0002,
    ETW_EXT_TS_ID = 0x0003,
    ETW_EXT_INSTANCE_INFO = 0x0004,
    ETW_EXT_STACK_TRACE32 = 0x0005,
    ETW_EXT_STACK_TRACE64 = 0x0006,
    ETW_EXT_PEBS_INDEX = 0x0007,
    ETW_EXT_PMC_COUNTERS = 0x0008,
    ETW_EXT_PSM_KEY = 0x0009,
    ETW_EXT_EVENT_KEY = 0x000A,
    ETW_EXT_EVENT_SCHEMA_TL = 0x000B,
    ETW_EXT_PROV_TRAITS = 0x000C,
    ETW_EXT_PROCESS_START_KEY = 0x000D,
    ETW_EXT_CONTROL_GUID = 0x000E,
    ETW_EXT_QPC_DELTA = 0x000F,
    ETW_EXT_CONTAINER_ID = 0x0010,
    ETW_EXT_STACK_KEY32 = 0x0011,
    ETW_EXT_STACK_KEY64 = 0x0012
} etw_ext_type;

/* One extended data item: its type and its data bytes (borrowed). Unknown
 * types are returned as they are. */
typedef struct etw_ext_item {
    uint16_t type;
    uint16_t size;
    const uint8_t *data;
} etw_ext_item;

typedef struct etw_event {
    etw_header_form form;
    uint16_t flags;           /* ETW_EVENT_FLAG_* */
    uint16_t event_property;  /* EVENT_HEADER_PROPERTY_* (EVENT_HEADER form only) */
    uint8_t pointer_size;     /* 4 or 8: the writer's pointer width */
    uint8_t has_activity_id;  /* 1 when activity_id was present in the header */

    /* Provider GUID (EVENT_HEADER), event-class GUID (classic and kernel
     * headers), or message GUID (MESSAGE with a GUID). */
    etw_guid provider;

    /* The event descriptor. Classic and kernel forms: opcode = event type,
     * version = class version, id = task = 0, level from the header where
     * it has one. */
    uint16_t id;
    uint8_t version;
    uint8_t channel;
    uint8_t level;
    uint8_t opcode;
    uint16_t task;
    uint64_t keywords;

    /* Kernel forms: the hook's group (high byte of the hook id). */
    uint8_t group;
    /* MESSAGE form: message number and option flags. */
    uint16_t message_number;
    uint16_t message_flags;

    uint32_t pid;             /* ETW_NO_ID when absent */
    uint32_t tid;             /* ETW_NO_ID when absent */
    uint16_t cpu;             /* processor number/index from the buffer */
    uint32_t kernel_time;     /* ticks, or 0 */
    uint32_t user_time;       /* ticks, or 0 */
    uint64_t processor_time;  /* private sessions: u64 processor time */

    int64_t raw_timestamp;    /* the session's raw clock */
    int64_t timestamp;        /* UTC FILETIME: 100 ns units since 1601-01-01 */

    etw_guid activity_id;     /* EVENT_HEADER and INSTANCE forms */

    /* Extended data items, raw (walk them with etw_event_next_ext()). */
    const uint8_t *ext_data;
    uint32_t ext_size;
    uint16_t ext_count;

    /* The payload (user data), borrowed. */
    const uint8_t *user_data;
    uint32_t user_data_len;

    /* Where the record is: file offset of its buffer, and its offset in the
     * (decompressed) buffer. */
    uint64_t buffer_file_offset;
    uint32_t record_offset;
    uint8_t buffer_compressed;
    /* 1 for the log-file header record (always the first event). */
    uint8_t is_logfile_header;
} etw_event;

/* Iterate the extended items of ev. *pos starts at 0; each call fills *item
 * and advances. Returns ETW_OK, ETW_END after the last item. The reader has
 * already validated the chain, so this never fails otherwise. */
etw_status etw_event_next_ext(const etw_event *ev, uint32_t *pos, etw_ext_item *item);

/* Find the first extended item of a type. ETW_E_NOT_FOUND when absent. */
etw_status etw_event_find_ext(const etw_event *ev, uint16_t type, etw_ext_item *item);

#ifdef __cplusplus
}
#endif
#endif
