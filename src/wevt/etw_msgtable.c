/* etw_msgtable.c - an RT_MESSAGETABLE resource, read in place.
 *
 * Opens the block table (checked once: every block fits, low <= high, its
 * first entry inside the resource), finds the block of an id (a binary
 * search when the blocks are ascending and disjoint, as the message
 * compiler writes them, else a scan), walks the entries of that block to
 * the id and converts its text (UTF-16LE, Windows-1252 or UTF-8) to UTF-8
 * in the caller's buffer. Nothing is allocated. Facts: winnt.h
 * (MESSAGE_RESOURCE_DATA, _BLOCK, _ENTRY, MESSAGE_RESOURCE_UNICODE/_UTF8),
 * the Unicode standard (UTF-16, UTF-8), and the Windows-1252 code page
 * table (Microsoft's "bestfit1252.txt").
 */
#include "wevt/etw_msgtable.h"

#include <string.h>

#include "common/etw_bytes.h"

#define MT_HEADER_SIZE 4u     /* MESSAGE_RESOURCE_DATA.NumberOfBlocks: winnt.h */
#define MT_BLOCK_SIZE 12u     /* MESSAGE_RESOURCE_BLOCK {LowId, HighId, OffsetToEntries}: winnt.h */
#define MT_ENTRY_HEADER 4u    /* MESSAGE_RESOURCE_ENTRY {u16 Length, u16 Flags}: winnt.h */
#define MT_FLAG_ANSI 0x0000u  /* ANSI text (the code page of the resource): winnt.h */
#define MT_FLAG_UNICODE 0x0001u /* MESSAGE_RESOURCE_UNICODE: UTF-16LE text, winnt.h */
#define MT_FLAG_UTF8 0x0002u  /* MESSAGE_RESOURCE_UTF8: UTF-8 text, winnt.h (Windows 10) */
#define MT_REPLACEMENT 0xFFFDu /* U+FFFD REPLACEMENT CHARACTER: the Unicode standard */

static const uint8_t *mt_block(const etw_msgtable *t, uint32_t i) {
    return t->data + MT_HEADER_SIZE + (size_t)i * MT_BLOCK_SIZE;
}

etw_status etw_msgtable_open(etw_msgtable *t, const uint8_t *data, size_t len, const char **why) {
    if (!t || (!data && len)) return ETW_E_INVALID_ARG;
    memset(t, 0, sizeof *t);
    if (why) *why = NULL;
    if (len < MT_HEADER_SIZE) {
        if (why) *why = "message table shorter than its block count";
        return ETW_E_CORRUPT;
    }
    uint32_t n = etw_le32(data);
    if ((uint64_t)MT_HEADER_SIZE + (uint64_t)n * MT_BLOCK_SIZE > len) {
        if (why) *why = "message table blocks run past the resource";
        return ETW_E_CORRUPT;
    }
    t->data = data;
    t->len = len;
    t->nblocks = n;
    t->sorted = 1;
    uint32_t prev_high = 0;
    for (uint32_t i = 0; i < n; i++) {
        const uint8_t *b = mt_block(t, i);
        uint32_t low = etw_le32(b), high = etw_le32(b + 4), off = etw_le32(b + 8);
        if (low > high) {
            if (why) *why = "message block ids run backwards (low > high)";
            memset(t, 0, sizeof *t);
            return ETW_E_CORRUPT;
        }
        if ((uint64_t)off + MT_ENTRY_HEADER > len) {
            if (why) *why = "message block entries past the end of the resource";
            memset(t, 0, sizeof *t);
            return ETW_E_CORRUPT;
        }
        if (i > 0 && low <= prev_high) t->sorted = 0;
        prev_high = high;
    }
    return ETW_OK;
}

/* The block holding id: its index, or -1. */
static int64_t mt_find_block(const etw_msgtable *t, uint32_t id) {
    if (t->sorted) {
        uint32_t lo = 0, hi = t->nblocks;
        while (lo < hi) {
            uint32_t mid = lo + (hi - lo) / 2;
            const uint8_t *b = mt_block(t, mid);
            if (id < etw_le32(b))
                hi = mid;
            else if (id > etw_le32(b + 4))
                lo = mid + 1;
            else
                return mid;
        }
        return -1;
    }
    for (uint32_t i = 0; i < t->nblocks; i++) {
        const uint8_t *b = mt_block(t, i);
        if (id >= etw_le32(b) && id <= etw_le32(b + 4)) return i;
    }
    return -1;
}

/* The entry at *off: checked to fit, its flags and text bytes; *off moves
 * past it. ETW_E_CORRUPT when it does not fit or is shorter than its
 * header (a length of 0 or 2 would never move on). */
static etw_status mt_entry_at(const etw_msgtable *t, size_t *off, uint16_t *flags, const uint8_t **text,
                              size_t *text_len) {
    if (*off > t->len || t->len - *off < MT_ENTRY_HEADER) return ETW_E_CORRUPT;
    const uint8_t *e = t->data + *off;
    uint16_t n = etw_le16(e);
    if (n < MT_ENTRY_HEADER || n > t->len - *off) return ETW_E_CORRUPT;
    *flags = etw_le16(e + 2);
    *text = e + MT_ENTRY_HEADER;
    *text_len = (size_t)n - MT_ENTRY_HEADER;
    *off += n;
    return ETW_OK;
}

etw_status etw_msgtable_entry(const etw_msgtable *t, uint32_t id, const uint8_t **text, size_t *text_len,
                              uint16_t *flags) {
    if (!t || !text || !text_len || !flags) return ETW_E_INVALID_ARG;
    int64_t bi = mt_find_block(t, id);
    if (bi < 0) return ETW_E_NOT_FOUND;
    const uint8_t *b = mt_block(t, (uint32_t)bi);
    uint32_t low = etw_le32(b);
    size_t off = etw_le32(b + 8);
    /* Each step moves at least 4 bytes, so the walk ends within len / 4. */
    for (uint32_t cur = low;; cur++) {
        etw_status st = mt_entry_at(t, &off, flags, text, text_len);
        if (st != ETW_OK) return st;
        if (cur == id) return ETW_OK;
    }
}

/* ------------------------------------------------------------------------ */
/* Text to UTF-8                                                            */
/* ------------------------------------------------------------------------ */

/* Windows-1252 0x80..0x9F (the rest is Latin-1). The five undefined bytes
 * map to the C1 control of the same value, as Windows' table does. */
static const uint16_t cp1252_80[32] = {
    0x20AC, 0x0081, 0x201A, 0x0192, 0x201E, 0x2026, 0x2020, 0x2021, 0x02C6, 0x2030, 0x0160,
    0x2039, 0x0152, 0x008D, 0x017D, 0x008F, 0x0090, 0x2018, 0x2019, 0x201C, 0x201D, 0x2022,
    0x2013, 0x2014, 0x02DC, 0x2122, 0x0161, 0x203A, 0x0153, 0x009D, 0x017E, 0x0178,
};

/* An output buffer that refuses a character it cannot hold whole. */
typedef struct mt_out {
    char *buf;
    size_t cap; /* room for text, the NUL excluded */
    size_t len;
    int full;
} mt_out;

static void mt_put(mt_out *o, uint32_t cp) {
    uint8_t u[4];
    size_t n;
    if (o->full) return;
    if (cp < 0x80) {
        u[0] = (uint8_t)cp;
        n = 1;
    } else if (cp < 0x800) {
        u[0] = (uint8_t)(0xC0 | (cp >> 6));
        u[1] = (uint8_t)(0x80 | (cp & 0x3F));
        n = 2;
    } else if (cp < 0x10000) {
        u[0] = (uint8_t)(0xE0 | (cp >> 12));
        u[1] = (uint8_t)(0x80 | ((cp >> 6) & 0x3F));
        u[2] = (uint8_t)(0x80 | (cp & 0x3F));
        n = 3;
    } else {
        u[0] = (uint8_t)(0xF0 | (cp >> 18));
        u[1] = (uint8_t)(0x80 | ((cp >> 12) & 0x3F));
        u[2] = (uint8_t)(0x80 | ((cp >> 6) & 0x3F));
        u[3] = (uint8_t)(0x80 | (cp & 0x3F));
        n = 4;
    }
    if (n > o->cap - o->len) {
        o->full = 1;
        return;
    }
    memcpy(o->buf + o->len, u, n);
    o->len += n;
}

/* Length in code units (unit: 1 or 2 bytes) of the text before its first
 * NUL, less the trailing CR and LF the message compiler appends. */
static size_t mt_text_units(const uint8_t *p, size_t n, size_t unit) {
    size_t k = 0;
    while (k < n && (unit == 1 ? p[k] : etw_le16(p + 2 * k)) != 0) k++;
    while (k > 0) {
        unsigned c = unit == 1 ? p[k - 1] : etw_le16(p + 2 * (k - 1));
        if (c != '\r' && c != '\n') break;
        k--;
    }
    return k;
}

/* One UTF-8 sequence at p[0..n): its code point and length, or U+FFFD and 1
 * when it is not a valid shortest-form sequence. */
static uint32_t mt_utf8_next(const uint8_t *p, size_t n, size_t *used) {
    uint8_t c = p[0];
    uint32_t cp, min;
    size_t len;
    *used = 1;
    if (c < 0x80) return c;
    if (c >= 0xC2 && c <= 0xDF) {
        len = 2;
        cp = c & 0x1Fu;
        min = 0x80;
    } else if (c >= 0xE0 && c <= 0xEF) {
        len = 3;
        cp = c & 0x0Fu;
        min = 0x800;
    } else if (c >= 0xF0 && c <= 0xF4) {
        len = 4;
        cp = c & 0x07u;
        min = 0x10000;
    } else {
        return MT_REPLACEMENT;
    }
    if (len > n) return MT_REPLACEMENT;
    for (size_t i = 1; i < len; i++) {
        if ((p[i] & 0xC0) != 0x80) return MT_REPLACEMENT;
        cp = (cp << 6) | (p[i] & 0x3Fu);
    }
    if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return MT_REPLACEMENT;
    *used = len;
    return cp;
}

static etw_status mt_decode(const uint8_t *p, size_t n, uint16_t flags, char *buf, size_t cap, size_t *len) {
    mt_out o;
    o.buf = buf;
    o.cap = cap - 1;
    o.len = 0;
    o.full = 0;
    if (flags == MT_FLAG_UNICODE) {
        size_t k = mt_text_units(p, n / 2, 2);
        for (size_t i = 0; i < k && !o.full; i++) {
            uint32_t u = etw_le16(p + 2 * i);
            if (u >= 0xD800 && u <= 0xDBFF && i + 1 < k) {
                uint32_t v = etw_le16(p + 2 * (i + 1));
                if (v >= 0xDC00 && v <= 0xDFFF) {
                    mt_put(&o, 0x10000u + ((u - 0xD800u) << 10) + (v - 0xDC00u));
                    i++;
                    continue;
                }
            }
            mt_put(&o, (u >= 0xD800 && u <= 0xDFFF) ? MT_REPLACEMENT : u);
        }
    } else if (flags == MT_FLAG_ANSI) {
        size_t k = mt_text_units(p, n, 1);
        for (size_t i = 0; i < k && !o.full; i++) {
            uint8_t c = p[i];
            mt_put(&o, (c >= 0x80 && c < 0xA0) ? cp1252_80[c - 0x80] : c);
        }
    } else if (flags == MT_FLAG_UTF8) {
        size_t k = mt_text_units(p, n, 1);
        for (size_t i = 0; i < k && !o.full;) {
            size_t used;
            mt_put(&o, mt_utf8_next(p + i, k - i, &used));
            i += used;
        }
    } else {
        buf[0] = 0;
        if (len) *len = 0;
        return ETW_E_UNSUPPORTED;
    }
    buf[o.len] = 0;
    if (len) *len = o.len;
    return o.full ? ETW_E_LIMIT : ETW_OK;
}

etw_status etw_msgtable_get(const etw_msgtable *t, uint32_t id, char *buf, size_t cap, size_t *len) {
    if (len) *len = 0;
    if (!t || !buf || cap == 0) return ETW_E_INVALID_ARG;
    buf[0] = 0;
    const uint8_t *text;
    size_t n;
    uint16_t flags;
    etw_status st = etw_msgtable_entry(t, id, &text, &n, &flags);
    if (st != ETW_OK) return st;
    return mt_decode(text, n, flags, buf, cap, len);
}

uint32_t etw_msgtable_count(const etw_msgtable *t) {
    if (!t || !t->data) return 0;
    /* Every entry takes at least 4 bytes: no more than len / 4 messages. */
    uint64_t most = t->len / MT_ENTRY_HEADER, sum = 0;
    for (uint32_t i = 0; i < t->nblocks && sum < most; i++) {
        const uint8_t *b = mt_block(t, i);
        uint32_t low = etw_le32(b), high = etw_le32(b + 4);
        if (low <= high) sum += (uint64_t)high - low + 1u;
    }
    return (uint32_t)(sum < most ? sum : most);
}

etw_status etw_msgtable_foreach(const etw_msgtable *t, char *buf, size_t cap, etw_msgtable_fn fn, void *ctx) {
    if (!t || !buf || cap == 0 || !fn) return ETW_E_INVALID_ARG;
    /* Entries of well-formed blocks do not overlap: len / 4 of them at most,
     * which bounds the walk even when blocks repeat one range. */
    uint64_t budget = t->len / MT_ENTRY_HEADER;
    for (uint32_t i = 0; i < t->nblocks; i++) {
        const uint8_t *b = mt_block(t, i);
        uint32_t low = etw_le32(b), high = etw_le32(b + 4);
        size_t off = etw_le32(b + 8);
        if (low > high) return ETW_E_CORRUPT;
        for (uint64_t id = low; id <= high; id++) {
            if (budget-- == 0) return ETW_E_CORRUPT;
            const uint8_t *text;
            size_t n, tlen = 0;
            uint16_t flags;
            etw_status st = mt_entry_at(t, &off, &flags, &text, &n);
            if (st != ETW_OK) return st;
            st = mt_decode(text, n, flags, buf, cap, &tlen);
            if (st != ETW_OK) return st;
            if (fn(ctx, (uint32_t)id, buf, tlen)) return ETW_OK;
        }
    }
    return ETW_OK;
}
