/* etw_test_builder.h - synthetic test records, header only.
 *
 * Builds, with no dependency on the parsers under test (except provider
 * traits, which use etw_traits_build()):
 *   - byte buffers (etb_buf) with little-endian appends for payloads:
 *     integers, float/double, UTF-16 strings from ASCII, ANSI strings,
 *     GUIDs, counted strings/binaries, SIDs, SYSTEMTIME, FILETIME;
 *   - TraceLogging event metadata blobs (EVENT_SCHEMA_TL): event name and
 *     tags, then fields with in-type, out-type, tags, const count, var
 *     count, custom type info, or struct member count (FORMATS.md 2.3);
 *   - provider traits blobs (through etw_traits_build);
 *   - an etw_event (EVENT_HEADER form, pointer size 4 or 8) whose extended
 *     items are laid out as in a trace buffer (u16 item size = 8 + data
 *     rounded up to 8, u16 type, u16 linkage (1 = another follows), u16 data
 *     size, data, zero padding) and whose user data is a payload buffer.
 *
 *   etb_buf meta; etb_init(&meta);
 *   etb_tl_begin(&meta, "MyEvent", 0);
 *   etb_tl_field(&meta, "a", ETB_TL_INT32, 0, 0);
 *   etb_tl_struct(&meta, "s", 2, 0);
 *     etb_tl_field(&meta, "x", ETB_TL_UINT8, ETB_TLO_HEX, 0);
 *     etb_tl_varray(&meta, "y", ETB_TL_UINT16, 0, 0);
 *   etb_tl_end(&meta);                 // patches the u16 Size
 *
 *   etb_event e; etb_event_init(&e, 8);
 *   etb_event_add_traits(&e, "MyProvider", NULL);
 *   etb_event_add_ext(&e, ETW_EXT_EVENT_SCHEMA_TL, meta.data, meta.len);
 *   etb_i32(&e.payload, -5); ...
 *   const etw_event *ev = etb_event_get(&e);  // pointers refreshed
 *   ...
 *   etb_event_free(&e); etb_free(&meta);
 *
 * Every function aborts on out-of-memory (tests only). Pointers into a
 * buffer are invalidated by the next append to it; etb_event_get()
 * re-points the event at its buffers.
 */
#ifndef ETW_TEST_BUILDER_H
#define ETW_TEST_BUILDER_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "etwdecode/etw_event.h"
#include "etwdecode/etw_traits.h"
#include "etwdecode/etw_types.h"

/* ---- TraceLogging in-types / out-types / flags (TlgIn_t, TlgOut_t) ---- */
enum {
    ETB_TL_NULL = 0, ETB_TL_UNICODESTRING = 1, ETB_TL_ANSISTRING = 2,
    ETB_TL_INT8 = 3, ETB_TL_UINT8 = 4, ETB_TL_INT16 = 5, ETB_TL_UINT16 = 6,
    ETB_TL_INT32 = 7, ETB_TL_UINT32 = 8, ETB_TL_INT64 = 9, ETB_TL_UINT64 = 10,
    ETB_TL_FLOAT = 11, ETB_TL_DOUBLE = 12, ETB_TL_BOOL32 = 13, ETB_TL_BINARY = 14,
    ETB_TL_GUID = 15, ETB_TL_POINTER_UNSUPPORTED = 16, ETB_TL_FILETIME = 17,
    ETB_TL_SYSTEMTIME = 18, ETB_TL_SID = 19, ETB_TL_HEXINT32 = 20,
    ETB_TL_HEXINT64 = 21, ETB_TL_COUNTEDSTRING = 22, ETB_TL_COUNTEDANSISTRING = 23,
    ETB_TL_STRUCT = 24, ETB_TL_COUNTEDBINARY = 25
};
enum {
    ETB_TLO_NULL = 0, ETB_TLO_NOPRINT = 1, ETB_TLO_STRING = 2, ETB_TLO_BOOLEAN = 3,
    ETB_TLO_HEX = 4, ETB_TLO_PID = 5, ETB_TLO_TID = 6, ETB_TLO_PORT = 7,
    ETB_TLO_IPV4 = 8, ETB_TLO_IPV6 = 9, ETB_TLO_SOCKETADDRESS = 10, ETB_TLO_XML = 11,
    ETB_TLO_JSON = 12, ETB_TLO_WIN32ERROR = 13, ETB_TLO_NTSTATUS = 14,
    ETB_TLO_HRESULT = 15, ETB_TLO_FILETIME = 16, ETB_TLO_SIGNED = 17,
    ETB_TLO_UNSIGNED = 18, ETB_TLO_CULTURE_INSENSITIVE_DATETIME = 33,
    ETB_TLO_UTF8 = 35, ETB_TLO_PKCS7_WITH_TYPE_INFO = 36, ETB_TLO_CODE_POINTER = 37,
    ETB_TLO_DATETIME_UTC = 38
};
/* Count kinds (in-type bits 5-6) and chain bits. */
#define ETB_TL_SCALAR 0x00u
#define ETB_TL_CCOUNT 0x20u
#define ETB_TL_VCOUNT 0x40u
#define ETB_TL_CUSTOM 0x60u
#define ETB_TL_CHAIN 0x80u

/* ---- byte buffer ---- */
typedef struct etb_buf {
    uint8_t *data;
    size_t len;
    size_t cap;
} etb_buf;

static inline void etb_init(etb_buf *b) {
    b->data = NULL;
    b->len = 0;
    b->cap = 0;
}
static inline void etb_free(etb_buf *b) {
    free(b->data);
    etb_init(b);
}
static inline void etb_reset(etb_buf *b) { b->len = 0; }

/* Append n zeroed bytes and return them. */
static inline uint8_t *etb_grow(etb_buf *b, size_t n) {
    if (b->cap - b->len < n) {
        size_t cap = b->cap ? b->cap : 64;
        while (cap - b->len < n) cap *= 2;
        uint8_t *d = (uint8_t *)realloc(b->data, cap);
        if (!d) {
            fprintf(stderr, "etw_test_builder: out of memory\n");
            abort();
        }
        b->data = d;
        b->cap = cap;
    }
    uint8_t *p = b->data + b->len;
    memset(p, 0, n);
    b->len += n;
    return p;
}
static inline void etb_bytes(etb_buf *b, const void *p, size_t n) {
    uint8_t *d = etb_grow(b, n);
    if (n) memcpy(d, p, n);
}
static inline void etb_u8(etb_buf *b, uint8_t v) { *etb_grow(b, 1) = v; }
static inline void etb_u16(etb_buf *b, uint16_t v) {
    uint8_t *d = etb_grow(b, 2);
    d[0] = (uint8_t)v;
    d[1] = (uint8_t)(v >> 8);
}
static inline void etb_u32(etb_buf *b, uint32_t v) {
    uint8_t *d = etb_grow(b, 4);
    for (int i = 0; i < 4; i++) d[i] = (uint8_t)(v >> (8 * i));
}
static inline void etb_u64(etb_buf *b, uint64_t v) {
    uint8_t *d = etb_grow(b, 8);
    for (int i = 0; i < 8; i++) d[i] = (uint8_t)(v >> (8 * i));
}
static inline void etb_i8(etb_buf *b, int8_t v) { etb_u8(b, (uint8_t)v); }
static inline void etb_i16(etb_buf *b, int16_t v) { etb_u16(b, (uint16_t)v); }
static inline void etb_i32(etb_buf *b, int32_t v) { etb_u32(b, (uint32_t)v); }
static inline void etb_i64(etb_buf *b, int64_t v) { etb_u64(b, (uint64_t)v); }
static inline void etb_f32(etb_buf *b, float v) {
    uint32_t u;
    memcpy(&u, &v, 4);
    etb_u32(b, u);
}
static inline void etb_f64(etb_buf *b, double v) {
    uint64_t u;
    memcpy(&u, &v, 8);
    etb_u64(b, u);
}
/* Overwrite a u16 at offset off (e.g. to patch a size). */
static inline void etb_put16_at(etb_buf *b, size_t off, uint16_t v) {
    b->data[off] = (uint8_t)v;
    b->data[off + 1] = (uint8_t)(v >> 8);
}

/* UTF-16LE from ASCII (each byte widened), with or without a NUL. */
static inline void etb_utf16_n(etb_buf *b, const char *s, size_t n, int nul) {
    for (size_t i = 0; i < n; i++) etb_u16(b, (uint8_t)s[i]);
    if (nul) etb_u16(b, 0);
}
static inline void etb_utf16(etb_buf *b, const char *s) { etb_utf16_n(b, s, strlen(s), 1); }
/* 8-bit string with its NUL. */
static inline void etb_ansi(etb_buf *b, const char *s) { etb_bytes(b, s, strlen(s) + 1); }
/* Counted forms: u16 byte count, then the bytes (no NUL). */
static inline void etb_counted_utf16(etb_buf *b, const char *s) {
    size_t n = strlen(s);
    etb_u16(b, (uint16_t)(2 * n));
    etb_utf16_n(b, s, n, 0);
}
static inline void etb_counted_ansi(etb_buf *b, const char *s) {
    size_t n = strlen(s);
    etb_u16(b, (uint16_t)n);
    etb_bytes(b, s, n);
}
static inline void etb_counted_binary(etb_buf *b, const void *p, uint16_t n) {
    etb_u16(b, n);
    etb_bytes(b, p, n);
}
/* A GUID in the Windows in-memory layout. */
static inline void etb_guid(etb_buf *b, const etw_guid *g) {
    etb_u32(b, g->data1);
    etb_u16(b, g->data2);
    etb_u16(b, g->data3);
    etb_bytes(b, g->data4, 8);
}
static inline etw_guid etb_make_guid(uint32_t d1, uint16_t d2, uint16_t d3, uint64_t d4be) {
    etw_guid g;
    g.data1 = d1;
    g.data2 = d2;
    g.data3 = d3;
    for (int i = 0; i < 8; i++) g.data4[i] = (uint8_t)(d4be >> (56 - 8 * i));
    return g;
}
/* SID: revision 1, sub-authority count, 48-bit big-endian authority,
 * u32 LE sub-authorities. */
static inline void etb_sid(etb_buf *b, uint64_t authority, const uint32_t *sub, uint8_t nsub) {
    etb_u8(b, 1);
    etb_u8(b, nsub);
    for (int i = 5; i >= 0; i--) etb_u8(b, (uint8_t)(authority >> (8 * i)));
    for (uint8_t i = 0; i < nsub; i++) etb_u32(b, sub[i]);
}
static inline void etb_systemtime(etb_buf *b, uint16_t year, uint16_t month, uint16_t dow,
                                  uint16_t day, uint16_t hour, uint16_t minute,
                                  uint16_t second, uint16_t ms) {
    etb_u16(b, year);
    etb_u16(b, month);
    etb_u16(b, dow);
    etb_u16(b, day);
    etb_u16(b, hour);
    etb_u16(b, minute);
    etb_u16(b, second);
    etb_u16(b, ms);
}
static inline void etb_filetime(etb_buf *b, uint64_t ft) { etb_u64(b, ft); }

/* A malloc'd copy of exactly n bytes (n = 0 gives a 1-byte block), so
 * AddressSanitizer catches any read past the end. Free with free(). */
static inline uint8_t *etb_dup_exact(const void *p, size_t n) {
    uint8_t *d = (uint8_t *)malloc(n ? n : 1);
    if (!d) abort();
    if (n) memcpy(d, p, n);
    return d;
}

/* ---- TraceLogging metadata ---- */

/* Tag bytes: 28-bit tags as up to four 7-bit groups, most significant
 * first, chain bit 0x80 on all but the last; trailing zero groups are
 * dropped; tags == 0 gives one 0x00 byte. */
static inline void etb_tl_tags(etb_buf *b, uint32_t tags) {
    uint8_t g[4];
    int n = 1;
    for (int i = 0; i < 4; i++) {
        g[i] = (uint8_t)((tags >> (21 - 7 * i)) & 0x7F);
        if (g[i]) n = i + 1;
    }
    for (int i = 0; i < n; i++) etb_u8(b, (uint8_t)(g[i] | (i + 1 < n ? 0x80 : 0)));
}

/* Start a blob in b (b is reset): u16 Size placeholder, event tags, name. */
static inline void etb_tl_begin(etb_buf *b, const char *event_name, uint32_t tags) {
    etb_reset(b);
    etb_u16(b, 0);
    etb_tl_tags(b, tags);
    etb_bytes(b, event_name, strlen(event_name) + 1);
}
/* Patch Size = the bytes written so far. */
static inline void etb_tl_end(etb_buf *b) { etb_put16_at(b, 0, (uint16_t)b->len); }

/* The general field: in_type (low 5 bits) | kind (ETB_TL_SCALAR/CCOUNT/
 * VCOUNT/CUSTOM); the out-type byte is written when out_type or tags are
 * non-zero or force_out is set; tags follow it when non-zero; then the
 * const count (CCOUNT) or u16 type-info size + type info (CUSTOM). */
static inline void etb_tl_field_full(etb_buf *b, const char *name, uint8_t in_type,
                                     uint8_t kind, uint8_t out_type, uint32_t tags,
                                     uint16_t ccount, const void *type_info,
                                     uint16_t type_info_size, int force_out) {
    int has_out = out_type || tags || force_out;
    etb_bytes(b, name, strlen(name) + 1);
    etb_u8(b, (uint8_t)((in_type & 0x1F) | (kind & 0x60) | (has_out ? ETB_TL_CHAIN : 0)));
    if (has_out) {
        etb_u8(b, (uint8_t)((out_type & 0x7F) | (tags ? ETB_TL_CHAIN : 0)));
        if (tags) etb_tl_tags(b, tags);
    }
    if ((kind & 0x60) == ETB_TL_CCOUNT) etb_u16(b, ccount);
    if ((kind & 0x60) == ETB_TL_CUSTOM) {
        etb_u16(b, type_info_size);
        etb_bytes(b, type_info, type_info_size);
    }
}
static inline void etb_tl_field(etb_buf *b, const char *name, uint8_t in_type,
                                uint8_t out_type, uint32_t tags) {
    etb_tl_field_full(b, name, in_type, ETB_TL_SCALAR, out_type, tags, 0, NULL, 0, 0);
}
static inline void etb_tl_carray(etb_buf *b, const char *name, uint8_t in_type,
                                 uint8_t out_type, uint32_t tags, uint16_t count) {
    etb_tl_field_full(b, name, in_type, ETB_TL_CCOUNT, out_type, tags, count, NULL, 0, 0);
}
static inline void etb_tl_varray(etb_buf *b, const char *name, uint8_t in_type,
                                 uint8_t out_type, uint32_t tags) {
    etb_tl_field_full(b, name, in_type, ETB_TL_VCOUNT, out_type, tags, 0, NULL, 0, 0);
}
static inline void etb_tl_custom(etb_buf *b, const char *name, uint8_t in_type,
                                 uint8_t out_type, uint32_t tags, const void *type_info,
                                 uint16_t type_info_size) {
    etb_tl_field_full(b, name, in_type, ETB_TL_CUSTOM, out_type, tags, 0, type_info,
                      type_info_size, 0);
}
/* A struct: the next `members` logical fields belong to it. kind makes it
 * an array of structs (ETB_TL_CCOUNT with ccount, or ETB_TL_VCOUNT). */
static inline void etb_tl_struct_ex(etb_buf *b, const char *name, uint8_t members,
                                    uint32_t tags, uint8_t kind, uint16_t ccount) {
    etb_tl_field_full(b, name, ETB_TL_STRUCT, kind, members, tags, ccount, NULL, 0, 1);
}
static inline void etb_tl_struct(etb_buf *b, const char *name, uint8_t members, uint32_t tags) {
    etb_tl_struct_ex(b, name, members, tags, ETB_TL_SCALAR, 0);
}

/* ---- provider traits ---- */

/* Append a traits blob built by etw_traits_build (aborts on failure). */
static inline void etb_traits(etb_buf *b, const char *name, const etw_guid *group,
                              const etw_trait *custom, size_t ncustom) {
    size_t need = 0;
    etw_status st = etw_traits_build(NULL, 0, &need, name, group, custom, ncustom);
    if (st != ETW_E_SMALL_BUFFER && st != ETW_OK) {
        fprintf(stderr, "etw_test_builder: etw_traits_build: %d\n", (int)st);
        abort();
    }
    size_t at = b->len;
    etb_grow(b, need);
    size_t got = 0;
    st = etw_traits_build(b->data + at, need, &got, name, group, custom, ncustom);
    if (st != ETW_OK || got != need) {
        fprintf(stderr, "etw_test_builder: etw_traits_build: %d\n", (int)st);
        abort();
    }
}

/* ---- events ---- */

typedef struct etb_event {
    etw_event ev;      /* filled by etb_event_get() */
    etb_buf ext;       /* extended items, in-buffer layout */
    etb_buf payload;   /* user data: append to it directly */
    size_t last_item;  /* offset of the last item header in ext */
    uint16_t ext_count;
} etb_event;

/* An EVENT_HEADER event from a TraceLogging-looking provider: channel 11,
 * level 5, pointer size 4 or 8 (header flag set to match). */
static inline void etb_event_init(etb_event *e, uint8_t pointer_size) {
    memset(e, 0, sizeof *e);
    etb_init(&e->ext);
    etb_init(&e->payload);
    e->ev.form = ETW_FORM_EVENT_HEADER;
    e->ev.pointer_size = pointer_size == 4 ? 4 : 8;
    e->ev.flags = pointer_size == 4 ? ETW_EVENT_FLAG_32_BIT_HEADER : ETW_EVENT_FLAG_64_BIT_HEADER;
    e->ev.channel = 11;
    e->ev.level = 5;
    e->ev.pid = 1234;
    e->ev.tid = 5678;
    e->ev.timestamp = 132000000000000000LL; /* 2019-04-14 */
    e->ev.raw_timestamp = 1000;
    e->last_item = (size_t)-1;
}
static inline void etb_event_free(etb_event *e) {
    etb_free(&e->ext);
    etb_free(&e->payload);
}
/* Append one extended item (size <= 65535 - 15). The previous item's
 * linkage becomes 1. */
static inline void etb_event_add_ext(etb_event *e, uint16_t type, const void *data, size_t size) {
    if (e->last_item != (size_t)-1) etb_put16_at(&e->ext, e->last_item + 4, 1);
    size_t at = e->ext.len;
    size_t total = (8 + size + 7) & ~(size_t)7;
    etb_grow(&e->ext, total); /* zeroed: padding stays 0 */
    etb_put16_at(&e->ext, at, (uint16_t)total);
    etb_put16_at(&e->ext, at + 2, type);
    etb_put16_at(&e->ext, at + 4, 0);
    etb_put16_at(&e->ext, at + 6, (uint16_t)size);
    if (size) memcpy(e->ext.data + at + 8, data, size);
    e->last_item = at;
    e->ext_count++;
}
/* PROV_TRAITS item from a name (and optional group). */
static inline void etb_event_add_traits(etb_event *e, const char *name, const etw_guid *group) {
    etb_buf t;
    etb_init(&t);
    etb_traits(&t, name, group, NULL, 0);
    etb_event_add_ext(e, ETW_EXT_PROV_TRAITS, t.data, t.len);
    etb_free(&t);
}
/* The event, its pointers refreshed to the current buffers. */
static inline const etw_event *etb_event_get(etb_event *e) {
    e->ev.ext_data = e->ext.len ? e->ext.data : NULL;
    e->ev.ext_size = (uint32_t)e->ext.len;
    e->ev.ext_count = e->ext_count;
    if (e->ext_count) e->ev.flags |= ETW_EVENT_FLAG_EXTENDED_INFO;
    else e->ev.flags &= (uint16_t)~ETW_EVENT_FLAG_EXTENDED_INFO;
    e->ev.user_data = e->payload.len ? e->payload.data : NULL;
    e->ev.user_data_len = (uint32_t)e->payload.len;
    return &e->ev;
}

#endif
