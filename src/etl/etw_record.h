/* etw_record.h - parse one event record inside a (decompressed) buffer into
 * an etw_event. Knows every header form; knows nothing about buffers. */
#ifndef ETW_RECORD_H
#define ETW_RECORD_H

#include <stddef.h>
#include <stdint.h>

#include "etwdecode/etw_event.h"

/* The u32 found where a record would start in the unused tail of a buffer
 * (the tail is 0xFF-filled; dissect.etl and airbus etl-parser stop there). */
#define ETW_RECORD_END_MARKER 0xFFFFFFFFu

/* Parse the record at p[0..avail). On ETW_OK, *ev is filled except for the
 * fields the buffer supplies (cpu, timestamp, buffer offsets) and
 * *advance is the 8-aligned distance to the next record. ETW_END when p
 * holds the end marker or fewer than 4 bytes. ETW_E_TRUNCATED / ETW_E_CORRUPT
 * / ETW_E_UNSUPPORTED when the record cannot be parsed: its size cannot be
 * trusted, so the caller abandons the rest of the buffer. `msg` receives a
 * static one-line reason. default_pointer_size is the trace's pointer size,
 * used where a record does not say (MESSAGE records without a pointer flag). */
etw_status etw_record_parse(const uint8_t *p, size_t avail,
                            uint8_t default_pointer_size, etw_event *ev,
                            uint32_t *advance, const char **msg);

/* The next record in data[*pos..end) whose provider's GUID starts with one
 * of data1[0..n) (EVENT_HEADER and classic records: their GUID; kernel
 * records: their group's class GUID; MESSAGE records and unknown kernel
 * groups: never), found from the record headers without parsing the
 * records: 1 with *at its offset and *pos past it; 0 with *pos = end at
 * the end of the buffer, its end marker or a record whose size
 * etw_record_parse would reject. */
int etw_record_find(const uint8_t *data, uint32_t *pos, uint32_t end, const uint32_t *data1, uint32_t n,
                    uint32_t *at);

/* Does p[0..n) (n >= 8) look like the start of a record of at most avail
 * bytes: a known marker and header type, and a size that fits? Used to
 * recognize buffer headers after damage. */
int etw_record_head_plausible(const uint8_t *p, size_t n, size_t avail);

/* The event-class GUID of a kernel hook group (and type, for the hooks that
 * belong to another class); NULL for an unknown group. */
const etw_guid *etw_kernel_group_guid(uint8_t group, uint8_t type);

/* PerfView's name for a kernel group ("Process", "DiskIO", ...), or NULL. */
const char *etw_kernel_group_name(uint8_t group, uint8_t type);

#endif
