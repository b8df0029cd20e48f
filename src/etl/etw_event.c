/* etw_event.c - extended item iteration and header form names. */
#include "etwdecode/etw_event.h"

#include "../common/etw_bytes.h"

const char *etw_header_form_name(etw_header_form form) {
    switch (form) {
    case ETW_FORM_EVENT_HEADER: return "EVENT_HEADER";
    case ETW_FORM_SYSTEM: return "SYSTEM";
    case ETW_FORM_COMPACT: return "COMPACT";
    case ETW_FORM_PERFINFO: return "PERFINFO";
    case ETW_FORM_FULL: return "EVENT_TRACE_HEADER";
    case ETW_FORM_INSTANCE: return "INSTANCE";
    case ETW_FORM_MESSAGE: return "MESSAGE";
    case ETW_FORM_ERROR: return "ERROR";
    case ETW_FORM_COUNT_: break;
    }
    return "UNKNOWN";
}

/* In-buffer item: u16 size, u16 type, u16 linkage, u16 data size, data,
 * padding to 8 (validated by etw_record_parse). */
etw_status etw_event_next_ext(const etw_event *ev, uint32_t *pos, etw_ext_item *item) {
    if (*pos + 8 > ev->ext_size) return ETW_END;
    const uint8_t *p = ev->ext_data + *pos;
    uint16_t size = etw_le16(p + 6);
    if (8u + size > ev->ext_size - *pos) return ETW_END;
    item->type = etw_le16(p + 2);
    item->size = size;
    item->data = p + 8;
    *pos += (uint32_t)etw_align8(8u + size);
    return ETW_OK;
}

etw_status etw_event_find_ext(const etw_event *ev, uint16_t type, etw_ext_item *item) {
    uint32_t pos = 0;
    while (etw_event_next_ext(ev, &pos, item) == ETW_OK)
        if (item->type == type) return ETW_OK;
    return ETW_E_NOT_FOUND;
}
