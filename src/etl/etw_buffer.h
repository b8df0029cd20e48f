/* etw_buffer.h - the WMI_BUFFER_HEADER that starts every buffer of an ETL
 * file (0x48 bytes, the same for 32- and 64-bit writers; ntwmi.h via phnt,
 * and ETW_BUFFER_HEADER in the Windows docs). */
#ifndef ETW_BUFFER_H
#define ETW_BUFFER_H

#include <stdint.h>

#include "etwdecode/etw_status.h"

/* sizeof(WMI_BUFFER_HEADER); the first record starts right after it. */
#define ETW_BUFFER_HEADER_SIZE 0x48u

/* ETW_BUFFER_FLAG_* (ntwmi.h). */
#define ETW_BUFFER_FLAG_FLUSH_MARKER 0x0001u
#define ETW_BUFFER_FLAG_EVENTS_LOST 0x0002u
#define ETW_BUFFER_FLAG_BUFFER_LOST 0x0004u
#define ETW_BUFFER_FLAG_PROC_INDEX 0x0020u /* context holds a 16-bit processor index */
#define ETW_BUFFER_FLAG_COMPRESSED 0x0040u /* payload is plain LZ77 Xpress */
#define ETW_BUFFER_FLAGS_KNOWN 0x007Fu     /* every flag above */

/* ETW_BUFFER_TYPE_* (ntwmi.h). */
#define ETW_BUFFER_TYPE_GENERIC 0
#define ETW_BUFFER_TYPE_HEADER 4
#define ETW_BUFFER_TYPE_MAX 8 /* ETW_BUFFER_TYPE_MAXIMUM */

/* ETW_BUFFER_STATE_* runs to 7 (Max) on newer kernels (FORMATS.md 1.2). */
#define ETW_BUFFER_STATE_MAX 7

/* ProcessorIndex mask when ETW_BUFFER_FLAG_PROC_INDEX is set (ntwmi.h). */
#define ETW_BUFFER_PROC_INDEX_MASK 0x07FFu

typedef struct etw_buffer_header {
    uint32_t buffer_size;    /* +0x00 on-disk size: the next buffer is here + this */
    uint32_t saved_offset;   /* +0x04 */
    int64_t timestamp;       /* +0x10 flush time, raw clock */
    int64_t sequence;        /* +0x18 */
    uint16_t cpu;            /* +0x28 ETW_BUFFER_CONTEXT processor number or index */
    uint16_t logger_id;      /* +0x2A */
    uint32_t state;          /* +0x2C ETW_BUFFER_STATE */
    uint32_t filled_bytes;   /* +0x30 bytes of data incl. this header (decompressed size) */
    uint16_t flags;          /* +0x34 ETW_BUFFER_FLAG_* */
    uint16_t type;           /* +0x36 ETW_BUFFER_TYPE_* */
} etw_buffer_header;

/* Parse the 0x48 bytes at p. ETW_E_CORRUPT (with *msg) when the sizes cannot
 * be right: BufferSize smaller than the header or not the file's alignment,
 * filled bytes smaller than the header. Bounds against the file are checked
 * by the caller. */
etw_status etw_buffer_header_parse(const uint8_t p[ETW_BUFFER_HEADER_SIZE],
                                   etw_buffer_header *h, const char **msg);

/* The end of valid data of an uncompressed buffer (offset from its start):
 * SavedOffset, or FilledBytes when SavedOffset is unusable, bounded by the
 * buffer size. */
uint32_t etw_buffer_data_end(const etw_buffer_header *h);

#endif
