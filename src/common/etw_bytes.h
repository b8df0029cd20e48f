/* etw_bytes.h - little-endian loads and a bounds-checked read cursor.
 *
 * Every parser reads input through these: loads assemble integers from bytes
 * (never by casting a buffer pointer), and the cursor refuses to move past
 * the end of its span, so a lying size cannot cause an out-of-bounds read.
 */
#ifndef ETW_BYTES_H
#define ETW_BYTES_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "etwdecode/etw_types.h"

static inline uint16_t etw_le16(const uint8_t *p) {
    return (uint16_t)(p[0] | (p[1] << 8));
}
static inline uint32_t etw_le32(const uint8_t *p) {
    return (uint32_t)p[0] | ((uint32_t)p[1] << 8) | ((uint32_t)p[2] << 16) |
           ((uint32_t)p[3] << 24);
}
static inline uint64_t etw_le64(const uint8_t *p) {
    return (uint64_t)etw_le32(p) | ((uint64_t)etw_le32(p + 4) << 32);
}
static inline uint16_t etw_be16(const uint8_t *p) {
    return (uint16_t)((p[0] << 8) | p[1]);
}
/* A GUID as stored (Data1..3 little-endian, Data4 as bytes): 16 bytes at p.
 * Inline for the record parser's hot path; etw_guid_read is the same. */
static inline etw_guid etw_guid_at(const uint8_t *p) {
    etw_guid g;
    g.data1 = etw_le32(p);
    g.data2 = etw_le16(p + 4);
    g.data3 = etw_le16(p + 6);
    memcpy(g.data4, p + 8, 8);
    return g;
}

/* A read cursor over [p, p+len). Reads past the end fail and set `bad`;
 * after that every read fails, so a sequence of reads can be checked once. */
typedef struct etw_cursor {
    const uint8_t *p;
    size_t len;
    size_t pos;
    int bad;
} etw_cursor;

static inline etw_cursor etw_cursor_make(const uint8_t *p, size_t len) {
    etw_cursor c;
    c.p = p;
    c.len = len;
    c.pos = 0;
    c.bad = 0;
    return c;
}
static inline size_t etw_cursor_left(const etw_cursor *c) {
    return c->bad ? 0 : c->len - c->pos;
}
/* Borrow n bytes and advance; NULL (and bad) when fewer are left. */
static inline const uint8_t *etw_cursor_take(etw_cursor *c, size_t n) {
    if (c->bad || n > c->len - c->pos) {
        c->bad = 1;
        return NULL;
    }
    const uint8_t *q = c->p + c->pos;
    c->pos += n;
    return q;
}
static inline int etw_cursor_skip(etw_cursor *c, size_t n) {
    return etw_cursor_take(c, n) != NULL;
}
static inline uint8_t etw_cursor_u8(etw_cursor *c) {
    const uint8_t *q = etw_cursor_take(c, 1);
    return q ? q[0] : 0;
}
static inline uint16_t etw_cursor_u16(etw_cursor *c) {
    const uint8_t *q = etw_cursor_take(c, 2);
    return q ? etw_le16(q) : 0;
}
static inline uint32_t etw_cursor_u32(etw_cursor *c) {
    const uint8_t *q = etw_cursor_take(c, 4);
    return q ? etw_le32(q) : 0;
}
static inline uint64_t etw_cursor_u64(etw_cursor *c) {
    const uint8_t *q = etw_cursor_take(c, 8);
    return q ? etw_le64(q) : 0;
}

/* Round up to a multiple of 8 (DEFAULT_TRACE_ALIGNMENT, evntrace.h). */
static inline uint64_t etw_align8(uint64_t v) { return (v + 7u) & ~(uint64_t)7u; }

#endif
