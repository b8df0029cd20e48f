/* etw_buffer.c - WMI_BUFFER_HEADER fields (offsets: ntwmi.h via phnt). */
#include "etw_buffer.h"

#include "../common/etw_bytes.h"

etw_status etw_buffer_header_parse(const uint8_t p[ETW_BUFFER_HEADER_SIZE],
                                   etw_buffer_header *h, const char **msg) {
    h->buffer_size = etw_le32(p + 0x00);
    h->saved_offset = etw_le32(p + 0x04);
    h->timestamp = (int64_t)etw_le64(p + 0x10);
    h->sequence = (int64_t)etw_le64(p + 0x18);
    h->flags = etw_le16(p + 0x34);
    h->type = etw_le16(p + 0x36);
    /* ETW_BUFFER_CONTEXT: u8 ProcessorNumber, u8 Alignment | u16 ProcessorIndex; u16 LoggerId. */
    if (h->flags & ETW_BUFFER_FLAG_PROC_INDEX)
        h->cpu = (uint16_t)(etw_le16(p + 0x28) & ETW_BUFFER_PROC_INDEX_MASK);
    else
        h->cpu = p[0x28];
    h->logger_id = etw_le16(p + 0x2A);
    h->state = etw_le32(p + 0x2C);
    h->filled_bytes = etw_le32(p + 0x30);
    if (h->buffer_size < ETW_BUFFER_HEADER_SIZE) {
        *msg = "buffer size smaller than the buffer header";
        return ETW_E_CORRUPT;
    }
    if (h->filled_bytes != 0 && h->filled_bytes < ETW_BUFFER_HEADER_SIZE &&
        h->saved_offset < ETW_BUFFER_HEADER_SIZE) {
        *msg = "buffer filled size smaller than the buffer header";
        return ETW_E_CORRUPT;
    }
    return ETW_OK;
}

uint32_t etw_buffer_data_end(const etw_buffer_header *h) {
    /* SavedOffset first: a relogged header buffer states 440 there but 520
     * in FilledBytes, and the 80 bytes between repeat the first record of
     * the next buffer (PerfView SelfDescribingSingleEvent.etl); HTTP_Server.etl
     * leaves SavedOffset 0 in its header buffer, so fall back to FilledBytes. */
    uint32_t end = h->saved_offset;
    if (end < ETW_BUFFER_HEADER_SIZE || end > h->buffer_size) end = h->filled_bytes;
    if (end < ETW_BUFFER_HEADER_SIZE) end = ETW_BUFFER_HEADER_SIZE;
    if (end > h->buffer_size) end = h->buffer_size;
    return end;
}
