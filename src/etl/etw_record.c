/* etw_record.c - record header forms -> etw_event.
 * Layouts: evntcons.h / evntrace.h (EVENT_HEADER, EVENT_TRACE_HEADER) and
 * ntwmi.h as mirrored by phnt (SYSTEM/PERFINFO headers, header types). */
#include "etw_record.h"

#include <string.h>

#include "../common/etw_bytes.h"

/* Marker flag bits (ntwmi.h): TRACE_HEADER_FLAG | TRACE_HEADER_EVENT_TRACE. */
#define MARKER_FLAGS_TRACE 0xC0u
/* TRACE_HEADER_FLAG | TRACE_MESSAGE: a WPP / TraceMessage record. */
#define MARKER_FLAGS_MESSAGE_MASK 0xD0u
#define MARKER_FLAGS_MESSAGE 0x90u

/* TRACE_HEADER_TYPE_* (ntwmi.h). */
enum {
    HT_SYSTEM32 = 0x01, HT_SYSTEM64 = 0x02,
    HT_COMPACT32 = 0x03, HT_COMPACT64 = 0x04,
    HT_FULL_HEADER32 = 0x0A, HT_INSTANCE32 = 0x0B,
    HT_ERROR = 0x0D,
    HT_PERFINFO32 = 0x10, HT_PERFINFO64 = 0x11,
    HT_EVENT_HEADER32 = 0x12, HT_EVENT_HEADER64 = 0x13,
    HT_FULL_HEADER64 = 0x14, HT_INSTANCE64 = 0x15
};

/* Fixed header sizes (ntwmi.h / evntcons.h). */
#define SIZE_SYSTEM 0x20u
#define SIZE_COMPACT 0x18u
#define SIZE_PERFINFO 0x10u
#define SIZE_FULL 0x30u
#define SIZE_INSTANCE 0x48u
#define SIZE_EVENT_HEADER 0x50u
#define SIZE_MESSAGE 0x08u

/* Version-word bits of SYSTEM/COMPACT/PERFINFO markers (ntwmi.h):
 * TRACE_HEADER_PEBS_INDEX_FLAG and TRACE_HEADER_PMC_COUNTERS_MASK. */
#define VERSION_PEBS_FLAG 0x8000u
#define VERSION_PMC_MASK 0x0700u
#define VERSION_PMC_SHIFT 8

/* TRACE_MESSAGE_* option flags (evntrace.h). */
#define MSG_SEQUENCE 0x0001u
#define MSG_GUID 0x0002u
#define MSG_COMPONENTID 0x0004u
#define MSG_TIMESTAMP 0x0008u
#define MSG_SYSTEMINFO 0x0020u
#define MSG_POINTER32 0x0040u
#define MSG_POINTER64 0x0080u

/* Extended item header: u16 size, u16 type, u16 linkage, u16 data size
 * (in-buffer form; dissect.etl and airbus etl-parser). */
#define EXT_HEADER_SIZE 8u
#define EXT_LINKAGE_BIT 0x0001u

/* Every field zero but pid/tid. Field by field: a struct copy from a zero
 * template (or memset) compiles to rep stos, a quarter of the parse time;
 * these stores merge into a few vector and word stores, and the ones the
 * header form overwrites are dropped once inlined. */
static inline void event_clear(etw_event *ev) {
    static const etw_guid zero_guid;
    ev->form = ETW_FORM_EVENT_HEADER;
    ev->flags = 0;
    ev->event_property = 0;
    ev->pointer_size = 0;
    ev->has_activity_id = 0;
    ev->provider = zero_guid;
    ev->id = 0;
    ev->version = 0;
    ev->channel = 0;
    ev->level = 0;
    ev->opcode = 0;
    ev->task = 0;
    ev->keywords = 0;
    ev->group = 0;
    ev->message_number = 0;
    ev->message_flags = 0;
    ev->pid = ETW_NO_ID;
    ev->tid = ETW_NO_ID;
    ev->cpu = 0;
    ev->kernel_time = 0;
    ev->user_time = 0;
    ev->processor_time = 0;
    ev->raw_timestamp = 0;
    ev->timestamp = 0;
    ev->activity_id = zero_guid;
    ev->ext_data = NULL;
    ev->ext_size = 0;
    ev->ext_count = 0;
    ev->user_data = NULL;
    ev->user_data_len = 0;
    ev->buffer_file_offset = 0;
    ev->record_offset = 0;
    ev->buffer_compressed = 0;
    ev->is_logfile_header = 0;
}

/* Walk the extended items at p[0..limit): set ext_* and return the bytes
 * they take, or 0 with *msg on damage. */
static uint32_t parse_ext_items(const uint8_t *p, uint32_t limit, etw_event *ev,
                                const char **msg) {
    uint32_t pos = 0;
    uint16_t count = 0;
    for (;;) {
        if (limit - pos < EXT_HEADER_SIZE) {
            *msg = "extended item header runs past the record";
            return 0;
        }
        uint16_t linkage = etw_le16(p + pos + 4);
        uint16_t data_size = etw_le16(p + pos + 6);
        uint64_t step = etw_align8((uint64_t)EXT_HEADER_SIZE + data_size);
        if (EXT_HEADER_SIZE + (uint64_t)data_size > limit - pos) {
            *msg = "extended item data runs past the record";
            return 0;
        }
        if (step > limit - pos) step = limit - pos; /* padding may be cut at the record end */
        pos += (uint32_t)step;
        count++;
        if (!(linkage & EXT_LINKAGE_BIT)) break;
        if (count == 0xFFFF) {
            *msg = "too many extended items";
            return 0;
        }
    }
    ev->ext_data = p;
    ev->ext_size = pos;
    ev->ext_count = count;
    return pos;
}

static etw_status parse_event_header(const uint8_t *p, uint32_t size, uint8_t ht,
                                     etw_event *ev, const char **msg) {
    if (size < SIZE_EVENT_HEADER) {
        *msg = "EVENT_HEADER record smaller than its header";
        return ETW_E_CORRUPT;
    }
    ev->form = ht == HT_ERROR ? ETW_FORM_ERROR : ETW_FORM_EVENT_HEADER;
    ev->flags = etw_le16(p + 0x04);
    ev->event_property = etw_le16(p + 0x06);
    ev->tid = etw_le32(p + 0x08);
    ev->pid = etw_le32(p + 0x0C);
    ev->raw_timestamp = (int64_t)etw_le64(p + 0x10);
    ev->provider = etw_guid_at(p + 0x18);
    ev->id = etw_le16(p + 0x28);
    ev->version = p[0x2A];
    ev->channel = p[0x2B];
    ev->level = p[0x2C];
    ev->opcode = p[0x2D];
    ev->task = etw_le16(p + 0x2E);
    ev->keywords = etw_le64(p + 0x30);
    if (ev->flags & ETW_EVENT_FLAG_PRIVATE_SESSION) {
        ev->processor_time = etw_le64(p + 0x38);
    } else {
        ev->kernel_time = etw_le32(p + 0x38);
        ev->user_time = etw_le32(p + 0x3C);
    }
    ev->activity_id = etw_guid_at(p + 0x40);
    ev->has_activity_id = 1;
    if (ht == HT_EVENT_HEADER32 || (ev->flags & ETW_EVENT_FLAG_32_BIT_HEADER)) {
        ev->pointer_size = 4;
    } else {
        ev->pointer_size = 8;
    }
    if (!(ev->flags & (ETW_EVENT_FLAG_32_BIT_HEADER | ETW_EVENT_FLAG_64_BIT_HEADER)))
        ev->flags |= ev->pointer_size == 4 ? ETW_EVENT_FLAG_32_BIT_HEADER
                                           : ETW_EVENT_FLAG_64_BIT_HEADER;
    uint32_t off = SIZE_EVENT_HEADER;
    if (ev->flags & ETW_EVENT_FLAG_EXTENDED_INFO) {
        uint32_t n = parse_ext_items(p + off, size - off, ev, msg);
        if (!n) return ETW_E_CORRUPT;
        off += n;
    }
    ev->user_data = p + off;
    ev->user_data_len = size - off;
    return ETW_OK;
}

/* etw_kernel_group_guid, callable inline (a global function is not in a
 * position-independent build: it could be interposed). */
static inline const etw_guid *group_guid(uint8_t group, uint8_t type);

static etw_status parse_system(const uint8_t *p, uint32_t size, uint8_t ht,
                               etw_event *ev, const char **msg) {
    uint16_t version_word = etw_le16(p);
    uint32_t fixed;
    if (ht == HT_SYSTEM32 || ht == HT_SYSTEM64) {
        ev->form = ETW_FORM_SYSTEM;
        fixed = SIZE_SYSTEM;
    } else if (ht == HT_COMPACT32 || ht == HT_COMPACT64) {
        ev->form = ETW_FORM_COMPACT;
        fixed = SIZE_COMPACT;
    } else {
        ev->form = ETW_FORM_PERFINFO;
        fixed = SIZE_PERFINFO;
    }
    ev->pointer_size =
        (ht == HT_SYSTEM32 || ht == HT_COMPACT32 || ht == HT_PERFINFO32) ? 4 : 8;
    uint32_t extra = 0;
    if (version_word & VERSION_PEBS_FLAG) extra += 8;
    extra += 8u * ((version_word & VERSION_PMC_MASK) >> VERSION_PMC_SHIFT);
    if (size < fixed + extra) {
        *msg = "kernel record smaller than its header";
        return ETW_E_CORRUPT;
    }
    ev->version = (uint8_t)(version_word & 0xFF);
    ev->opcode = p[0x06];
    ev->group = p[0x07];
    if (ev->form == ETW_FORM_PERFINFO) {
        ev->raw_timestamp = (int64_t)etw_le64(p + 0x08);
    } else {
        ev->tid = etw_le32(p + 0x08);
        ev->pid = etw_le32(p + 0x0C);
        ev->raw_timestamp = (int64_t)etw_le64(p + 0x10);
        if (ev->form == ETW_FORM_SYSTEM) {
            ev->kernel_time = etw_le32(p + 0x18);
            ev->user_time = etw_le32(p + 0x1C);
        } else {
            ev->flags |= ETW_EVENT_FLAG_NO_CPUTIME;
        }
    }
    const etw_guid *g = group_guid(ev->group, ev->opcode);
    if (g) ev->provider = *g;
    ev->flags |= ETW_EVENT_FLAG_CLASSIC_HEADER |
                 (ev->pointer_size == 4 ? ETW_EVENT_FLAG_32_BIT_HEADER
                                        : ETW_EVENT_FLAG_64_BIT_HEADER);
    ev->user_data = p + fixed + extra;
    ev->user_data_len = size - fixed - extra;
    return ETW_OK;
}

static etw_status parse_classic(const uint8_t *p, uint32_t size, uint8_t ht,
                                etw_event *ev, const char **msg) {
    int instance = ht == HT_INSTANCE32 || ht == HT_INSTANCE64;
    uint32_t fixed = instance ? SIZE_INSTANCE : SIZE_FULL;
    if (size < fixed) {
        *msg = "classic record smaller than its header";
        return ETW_E_CORRUPT;
    }
    ev->form = instance ? ETW_FORM_INSTANCE : ETW_FORM_FULL;
    ev->pointer_size = (ht == HT_FULL_HEADER32 || ht == HT_INSTANCE32) ? 4 : 8;
    ev->opcode = p[0x04];
    ev->level = p[0x05];
    ev->version = (uint8_t)etw_le16(p + 0x06);
    ev->tid = etw_le32(p + 0x08);
    ev->pid = etw_le32(p + 0x0C);
    ev->raw_timestamp = (int64_t)etw_le64(p + 0x10);
    ev->provider = etw_guid_at(p + 0x18);
    ev->kernel_time = etw_le32(p + 0x28);
    ev->user_time = etw_le32(p + 0x2C);
    ev->flags |= ETW_EVENT_FLAG_CLASSIC_HEADER |
                 (ev->pointer_size == 4 ? ETW_EVENT_FLAG_32_BIT_HEADER
                                        : ETW_EVENT_FLAG_64_BIT_HEADER);
    ev->user_data = p + fixed;
    ev->user_data_len = size - fixed;
    return ETW_OK;
}

static etw_status parse_message(const uint8_t *p, uint32_t size,
                                uint8_t default_ptr, etw_event *ev,
                                const char **msg) {
    etw_cursor c = etw_cursor_make(p, size);
    etw_cursor_skip(&c, 4);
    ev->form = ETW_FORM_MESSAGE;
    ev->message_number = etw_cursor_u16(&c);
    ev->message_flags = etw_cursor_u16(&c);
    uint16_t f = ev->message_flags;
    if (f & MSG_SEQUENCE) etw_cursor_skip(&c, 4);
    if (f & MSG_GUID) {
        const uint8_t *g = etw_cursor_take(&c, 16);
        if (g) ev->provider = etw_guid_at(g);
    } else if (f & MSG_COMPONENTID) {
        etw_cursor_skip(&c, 4);
    }
    if (f & MSG_TIMESTAMP) ev->raw_timestamp = (int64_t)etw_cursor_u64(&c);
    if (f & MSG_SYSTEMINFO) {
        ev->tid = etw_cursor_u32(&c);
        ev->pid = etw_cursor_u32(&c);
    }
    if (c.bad) {
        *msg = "MESSAGE record smaller than its optional header items";
        return ETW_E_CORRUPT;
    }
    ev->pointer_size = (f & MSG_POINTER32) ? 4 : (f & MSG_POINTER64) ? 8 : default_ptr;
    ev->flags |= ETW_EVENT_FLAG_TRACE_MESSAGE |
                 (ev->pointer_size == 4 ? ETW_EVENT_FLAG_32_BIT_HEADER
                                        : ETW_EVENT_FLAG_64_BIT_HEADER);
    ev->user_data = p + c.pos;
    ev->user_data_len = (uint32_t)(size - c.pos);
    return ETW_OK;
}

/* The record size and smallest valid size of a record head; 0 when the
 * marker is not one we know. */
static uint32_t head_size(const uint8_t *p, uint32_t *min_size) {
    uint32_t marker = etw_le32(p);
    uint8_t flags = (uint8_t)(marker >> 24);
    if ((flags & MARKER_FLAGS_TRACE) == MARKER_FLAGS_TRACE) {
        switch ((uint8_t)(marker >> 16)) {
        case HT_SYSTEM32: case HT_SYSTEM64:
            *min_size = SIZE_SYSTEM;
            return etw_le16(p + 4);
        case HT_COMPACT32: case HT_COMPACT64:
            *min_size = SIZE_COMPACT;
            return etw_le16(p + 4);
        case HT_PERFINFO32: case HT_PERFINFO64:
            *min_size = SIZE_PERFINFO;
            return etw_le16(p + 4);
        case HT_FULL_HEADER32: case HT_FULL_HEADER64:
            *min_size = SIZE_FULL;
            return marker & 0xFFFF;
        case HT_INSTANCE32: case HT_INSTANCE64:
            *min_size = SIZE_INSTANCE;
            return marker & 0xFFFF;
        case HT_EVENT_HEADER32: case HT_EVENT_HEADER64: case HT_ERROR:
            *min_size = SIZE_EVENT_HEADER;
            return marker & 0xFFFF;
        default:
            return 0;
        }
    }
    if ((flags & MARKER_FLAGS_MESSAGE_MASK) == MARKER_FLAGS_MESSAGE) {
        *min_size = SIZE_MESSAGE;
        return marker & 0xFFFF;
    }
    return 0;
}

/* etw_record_find's view of a header type: where the size is, the
 * smallest size, and where the provider is (a kernel group, or a GUID). */
enum { FK_NONE, FK_KERNEL, FK_GUID };
typedef struct find_kind {
    uint8_t kind, min;
} find_kind;
static const find_kind k_find[0x16] = {
    [HT_SYSTEM32] = {FK_KERNEL, SIZE_SYSTEM},         [HT_SYSTEM64] = {FK_KERNEL, SIZE_SYSTEM},
    [HT_COMPACT32] = {FK_KERNEL, SIZE_COMPACT},       [HT_COMPACT64] = {FK_KERNEL, SIZE_COMPACT},
    [HT_PERFINFO32] = {FK_KERNEL, SIZE_PERFINFO},     [HT_PERFINFO64] = {FK_KERNEL, SIZE_PERFINFO},
    [HT_FULL_HEADER32] = {FK_GUID, SIZE_FULL},        [HT_FULL_HEADER64] = {FK_GUID, SIZE_FULL},
    [HT_INSTANCE32] = {FK_GUID, SIZE_INSTANCE},       [HT_INSTANCE64] = {FK_GUID, SIZE_INSTANCE},
    [HT_EVENT_HEADER32] = {FK_GUID, SIZE_EVENT_HEADER}, [HT_EVENT_HEADER64] = {FK_GUID, SIZE_EVENT_HEADER},
    [HT_ERROR] = {FK_GUID, SIZE_EVENT_HEADER},
};

int etw_record_find(const uint8_t *data, uint32_t *pos, uint32_t end, const uint32_t *data1, uint32_t n,
                    uint32_t *at) {
    uint32_t p = *pos;
    while (p < end && end - p >= 8) {
        const uint8_t *r = data + p;
        uint32_t marker = etw_le32(r);
        uint32_t size, d1 = 0;
        int has_provider = 0; /* a GUID's data1 may be 0: only "none" never matches */
        if ((marker >> 24 & MARKER_FLAGS_TRACE) == MARKER_FLAGS_TRACE) {
            uint8_t ht = (uint8_t)(marker >> 16);
            find_kind k = ht < sizeof k_find / sizeof k_find[0] ? k_find[ht] : (find_kind){FK_NONE, 0};
            if (k.kind == FK_NONE) break;
            size = k.kind == FK_KERNEL ? etw_le16(r + 4) : (marker & 0xFFFFu);
            if (size < k.min || size > end - p) break;
            if (k.kind == FK_GUID) {
                d1 = etw_le32(r + 0x18); /* within min */
                has_provider = 1;
            } else {
                const etw_guid *g = group_guid(r[0x07], r[0x06]);
                if (g) {
                    d1 = g->data1;
                    has_provider = 1;
                }
            }
        } else if ((marker >> 24 & MARKER_FLAGS_MESSAGE_MASK) == MARKER_FLAGS_MESSAGE) {
            size = marker & 0xFFFFu; /* never watched */
            if (size < SIZE_MESSAGE || size > end - p) break;
        } else {
            break; /* the end marker, or damage the merge reports */
        }
        uint32_t here = p;
        uint32_t step = size + ((8u - (size & 7u)) & 7u);
        p = step > end - p ? end : p + step;
        for (uint32_t k = 0; has_provider && k < n; k++)
            if (data1[k] == d1) {
                *pos = p;
                *at = here;
                return 1;
            }
    }
    *pos = end;
    return 0;
}

int etw_record_head_plausible(const uint8_t *p, size_t n, size_t avail) {
    if (n < 8) return 0;
    uint32_t min = 0;
    uint32_t size = head_size(p, &min);
    return size >= min && min > 0 && size <= avail;
}

etw_status etw_record_parse(const uint8_t *p, size_t avail,
                            uint8_t default_pointer_size, etw_event *ev,
                            uint32_t *advance, const char **msg) {
    *msg = NULL;
    if (avail < 4) return ETW_END;
    uint32_t marker = etw_le32(p);
    if (marker == ETW_RECORD_END_MARKER) return ETW_END;
    if (avail < 8) {
        *msg = "record header cut by the end of the buffer";
        return ETW_E_TRUNCATED;
    }
    event_clear(ev);
    uint8_t flags = (uint8_t)(marker >> 24);
    uint8_t ht = (uint8_t)(marker >> 16);
    uint32_t size;
    etw_status s;
    if ((flags & MARKER_FLAGS_TRACE) == MARKER_FLAGS_TRACE) {
        switch (ht) {
        case HT_SYSTEM32: case HT_SYSTEM64: case HT_COMPACT32: case HT_COMPACT64:
        case HT_PERFINFO32: case HT_PERFINFO64:
            size = etw_le16(p + 4);
            break;
        case HT_FULL_HEADER32: case HT_FULL_HEADER64: case HT_INSTANCE32:
        case HT_INSTANCE64: case HT_EVENT_HEADER32: case HT_EVENT_HEADER64:
        case HT_ERROR:
            size = marker & 0xFFFF;
            break;
        default:
            *msg = "unknown record header type";
            return ETW_E_UNSUPPORTED;
        }
    } else if ((flags & MARKER_FLAGS_MESSAGE_MASK) == MARKER_FLAGS_MESSAGE) {
        size = marker & 0xFFFF;
        if (size < SIZE_MESSAGE) {
            *msg = "MESSAGE record smaller than its header";
            return ETW_E_CORRUPT;
        }
    } else {
        *msg = "record does not start with a trace header marker";
        return ETW_E_CORRUPT;
    }
    if (size < 8) {
        *msg = "record size smaller than a header";
        return ETW_E_CORRUPT;
    }
    if (size > avail) {
        *msg = "record runs past the end of its buffer";
        return ETW_E_TRUNCATED;
    }
    if ((flags & MARKER_FLAGS_TRACE) != MARKER_FLAGS_TRACE) {
        s = parse_message(p, size, default_pointer_size, ev, msg);
    } else {
        switch (ht) {
        case HT_EVENT_HEADER32: case HT_EVENT_HEADER64: case HT_ERROR:
            s = parse_event_header(p, size, ht, ev, msg);
            break;
        case HT_FULL_HEADER32: case HT_FULL_HEADER64: case HT_INSTANCE32:
        case HT_INSTANCE64:
            s = parse_classic(p, size, ht, ev, msg);
            break;
        default:
            s = parse_system(p, size, ht, ev, msg);
            break;
        }
    }
    if (s != ETW_OK) return s;
    uint64_t step = etw_align8(size);
    *advance = (uint32_t)(step > avail ? avail : step);
    return ETW_OK;
}

/* Kernel hook group -> event-class GUID and PerfView's group name
 * (GUIDs: dissect.etl GROUP_GUID_MAP; names: PerfView KernelTraceEventParser,
 * shared/docs/kernel/naming.md: group 0x02 is "Memory", 0x0B "SystemConfig"). */
typedef struct group_info {
    etw_guid guid;
    const char *name;
} group_info;

#define G(a, b, c, d0, d1, d2, d3, d4, d5, d6, d7, n) \
    { { a, b, c, { d0, d1, d2, d3, d4, d5, d6, d7 } }, n }

static const group_info k_groups[] = {
    G(0x68fdd900, 0x4a3e, 0x11d1, 0x84, 0xf4, 0x00, 0x00, 0xf8, 0x04, 0x64, 0xe3, "EventTrace"),
    G(0x3d6fa8d4, 0xfe05, 0x11d0, 0x9d, 0xda, 0x00, 0xc0, 0x4f, 0xd7, 0xba, 0x7c, "DiskIO"),
    G(0x3d6fa8d3, 0xfe05, 0x11d0, 0x9d, 0xda, 0x00, 0xc0, 0x4f, 0xd7, 0xba, 0x7c, "Memory"),
    G(0x3d6fa8d0, 0xfe05, 0x11d0, 0x9d, 0xda, 0x00, 0xc0, 0x4f, 0xd7, 0xba, 0x7c, "Process"),
    G(0x90cbdc39, 0x4a3e, 0x11d1, 0x84, 0xf4, 0x00, 0x00, 0xf8, 0x04, 0x64, 0xe3, "FileIO"),
    G(0x3d6fa8d1, 0xfe05, 0x11d0, 0x9d, 0xda, 0x00, 0xc0, 0x4f, 0xd7, 0xba, 0x7c, "Thread"),
    G(0x9a280ac0, 0xc8e0, 0x11d1, 0x84, 0xe2, 0x00, 0xc0, 0x4f, 0xb9, 0x98, 0xa2, "TcpIp"),
    G(0x3282fc76, 0xfeed, 0x498e, 0x8a, 0xa7, 0xe7, 0x0f, 0x45, 0x9d, 0x43, 0x0e, "Job"),
    G(0xbf3a50c5, 0xa9c9, 0x4988, 0xa0, 0x05, 0x2d, 0xf0, 0xb7, 0xc8, 0x0f, 0x80, "UdpIp"),
    G(0xae53722e, 0xc863, 0x11d2, 0x86, 0x59, 0x00, 0xc0, 0x4f, 0xa3, 0x21, 0xa1, "Registry"),
    G(0x13976d09, 0xa327, 0x438c, 0x95, 0x0b, 0x7f, 0x03, 0x19, 0x28, 0x15, 0xc7, "DbgPrint"),
    G(0x01853a65, 0x418f, 0x4f36, 0xae, 0xfc, 0xdc, 0x0f, 0x1d, 0x2f, 0xd2, 0x35, "SystemConfig"),
    G(0x99134383, 0x5248, 0x43fc, 0x83, 0x4b, 0x52, 0x94, 0x54, 0xe7, 0x5d, 0xf3, "Spare1"),
    G(0x42695762, 0xea50, 0x497a, 0x90, 0x68, 0x5c, 0xbb, 0xb3, 0x5e, 0x0b, 0x95, "Wnf"),
    G(0x0268a8b6, 0x74fd, 0x4302, 0x9d, 0xd0, 0x6e, 0x8f, 0x17, 0x95, 0xc0, 0xcf, "Pool"),
    G(0xce1dbfb4, 0x137e, 0x4da6, 0x87, 0xb0, 0x3f, 0x59, 0xaa, 0x10, 0x2c, 0xbc, "PerfInfo"),
    G(0x222962ab, 0x6180, 0x4b88, 0xa8, 0x25, 0x34, 0x6b, 0x75, 0xf2, 0xa2, 0x4a, "Heap"),
    G(0x89497f50, 0xeffe, 0x4440, 0x8c, 0xf2, 0xce, 0x6b, 0x1c, 0xdc, 0xac, 0xa7, "Object"),
    G(0xe43445e0, 0x0903, 0x48c3, 0xb8, 0x78, 0xff, 0x0f, 0xcc, 0xeb, 0xdd, 0x04, "Power"),
    G(0xa9152f00, 0x3f58, 0x4bee, 0x92, 0xa1, 0x70, 0xc7, 0xd0, 0x79, 0xd5, 0xdd, "ModBound"),
    G(0x2cb15d1d, 0x5fc1, 0x11d2, 0xab, 0xe1, 0x00, 0xa0, 0xc9, 0x11, 0xf5, 0x18, "Image"),
    G(0xb2d14872, 0x7c5b, 0x463d, 0x84, 0x19, 0xee, 0x9b, 0xf7, 0xd2, 0x3e, 0x04, "Dpc"),
    G(0x7687a439, 0xf752, 0x45b8, 0xb7, 0x41, 0x32, 0x1a, 0xec, 0x0f, 0x8d, 0xf9, "Cc"),
    G(0x3ac66736, 0xcc59, 0x4cff, 0x81, 0x15, 0x8d, 0xf9, 0xd7, 0x36, 0x81, 0x6b, "CritSec"),
    G(0xdef2fe46, 0x7bd6, 0x4b80, 0xbd, 0x94, 0xf5, 0x7f, 0xe2, 0x0d, 0x0c, 0xe3, "StackWalk"),
    G(0x9aec974b, 0x5b8e, 0x4118, 0x9b, 0x92, 0x31, 0x86, 0xd8, 0x00, 0x2c, 0xe5, "Ums"),
    G(0x45d8cccd, 0x539f, 0x4b72, 0xa8, 0xb7, 0x5c, 0x68, 0x31, 0x42, 0x60, 0x9a, "ALPC"),
    G(0xd837ca92, 0x12b9, 0x44a5, 0xad, 0x6a, 0x3a, 0x65, 0xb3, 0x57, 0x8a, 0xa8, "SplitIo"),
    G(0xc861d0e2, 0xa2c1, 0x4d36, 0x9f, 0x9c, 0x97, 0x0b, 0xab, 0x94, 0x3a, 0x12, "ThreadPool"),
    G(0x7f2a405c, 0x69b5, 0x4bf9, 0xa1, 0xf5, 0x30, 0xe8, 0xf1, 0xaf, 0xab, 0x5e, "Hypervisor"),
    G(0x2ce9a149, 0xeffe, 0x42f0, 0xa6, 0x35, 0xa1, 0xd3, 0x9e, 0x26, 0xc8, 0xf2, "HypervisorX"),
};

/* EVENT_TRACE_GROUP_PROCESS with EVENT_TRACE_TYPE_LOAD (10) is the image-load
 * hook (WMI_LOG_TYPE_PROCESS_LOAD_IMAGE, ntwmi.h): it belongs to Image. */
#define GROUP_PROCESS 0x03
#define GROUP_IMAGE 0x14
#define TYPE_LOAD 10

static inline const etw_guid *group_guid(uint8_t group, uint8_t type) {
    if (group == GROUP_PROCESS && type == TYPE_LOAD) group = GROUP_IMAGE;
    if (group >= sizeof k_groups / sizeof k_groups[0]) return NULL;
    return &k_groups[group].guid;
}

const etw_guid *etw_kernel_group_guid(uint8_t group, uint8_t type) { return group_guid(group, type); }

const char *etw_kernel_group_name(uint8_t group, uint8_t type) {
    if (group == GROUP_PROCESS && type == TYPE_LOAD) group = GROUP_IMAGE;
    if (group >= sizeof k_groups / sizeof k_groups[0]) return NULL;
    return k_groups[group].name;
}
