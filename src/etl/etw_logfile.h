/* etw_logfile.h - TRACE_LOGFILE_HEADER, the payload of the first record of an
 * ETL file (evntrace.h; x86 offsets from the Vergilius project). */
#ifndef ETW_LOGFILE_H
#define ETW_LOGFILE_H

#include <stdint.h>

#include "etwdecode/etw_reader.h"

/* Hook of the log-file header record: group EVENT_TRACE_GROUP_HEADER (0),
 * type EVENT_TRACE_TYPE_INFO (0) (ntwmi.h). */
#define ETW_HOOK_GROUP_HEADER 0x00
#define ETW_HOOK_TYPE_LOGFILE_HEADER 0x00

/* EVENT_TRACE_FILE_MODE_CIRCULAR (evntrace.h). */
#define ETW_LOGFILE_MODE_CIRCULAR 0x00000002u

/* Clock types in TRACE_LOGFILE_HEADER.ReservedFlags (WNODE_HEADER
 * ClientContext, evntrace.h docs). */
#define ETW_CLOCK_RAW 0
#define ETW_CLOCK_QPC 1
#define ETW_CLOCK_SYSTEM_TIME 2
#define ETW_CLOCK_CPU_CYCLES 3

/* Parse the header payload p[0..n) written with pointers of ptr_size bytes
 * (4 or 8). Strings are borrowed from p. ETW_E_TRUNCATED when the fixed part
 * does not fit; missing strings are left empty. */
etw_status etw_logfile_parse(const uint8_t *p, uint32_t n, uint8_t ptr_size,
                             etw_logfile_header *h);

#endif
