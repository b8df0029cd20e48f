/* etw_common.c - status texts, GUID helpers, the default allocator, UTF-16 to UTF-8. */
#include <stdlib.h>
#include <string.h>

#include "etw_alloc.h"
#include "etw_bytes.h"
#include "etw_utf16.h"
#include "etwdecode/etw_status.h"
#include "etwdecode/etw_types.h"

const char *etw_strerror(etw_status s) {
    switch (s) {
    case ETW_OK: return "success";
    case ETW_END: return "end of stream";
    case ETW_E_INVALID_ARG: return "invalid argument";
    case ETW_E_NOMEM: return "out of memory";
    case ETW_E_IO: return "input/output error";
    case ETW_E_NOT_ETL: return "not an ETL file";
    case ETW_E_TRUNCATED: return "truncated data";
    case ETW_E_CORRUPT: return "corrupt data";
    case ETW_E_UNSUPPORTED: return "unsupported construct";
    case ETW_E_DECOMPRESS: return "buffer does not decompress";
    case ETW_E_NOT_FOUND: return "not found";
    case ETW_E_LIMIT: return "limit exceeded";
    case ETW_E_SMALL_BUFFER: return "output buffer too small";
    }
    return "unknown status";
}

etw_guid etw_guid_read(const uint8_t b[16]) { return etw_guid_at(b); }

void etw_guid_format(const etw_guid *g, char out[ETW_GUID_STRING_SIZE]) {
    static const char hex[] = "0123456789abcdef";
    char *o = out;
    for (int i = 7; i >= 0; i--) *o++ = hex[(g->data1 >> (4 * i)) & 15];
    *o++ = '-';
    for (int i = 3; i >= 0; i--) *o++ = hex[(g->data2 >> (4 * i)) & 15];
    *o++ = '-';
    for (int i = 3; i >= 0; i--) *o++ = hex[(g->data3 >> (4 * i)) & 15];
    *o++ = '-';
    for (int i = 0; i < 8; i++) {
        if (i == 2) *o++ = '-';
        *o++ = hex[g->data4[i] >> 4];
        *o++ = hex[g->data4[i] & 15];
    }
    *o = 0;
}

int etw_guid_is_zero(const etw_guid *g) {
    static const uint8_t zero[8];
    return g->data1 == 0 && g->data2 == 0 && g->data3 == 0 &&
           memcmp(g->data4, zero, 8) == 0;
}

int etw_guid_equal(const etw_guid *a, const etw_guid *b) {
    return a->data1 == b->data1 && a->data2 == b->data2 &&
           a->data3 == b->data3 && memcmp(a->data4, b->data4, 8) == 0;
}

static void *default_alloc(void *ctx, size_t n) {
    (void)ctx;
    return malloc(n);
}
static void default_free(void *ctx, void *p) {
    (void)ctx;
    free(p);
}

etw_allocator etw_allocator_resolve(const etw_allocator *a) {
    if (a && a->alloc && a->free) return *a;
    etw_allocator d;
    d.alloc = default_alloc;
    d.free = default_free;
    d.ctx = NULL;
    return d;
}

void *etw_calloc(const etw_allocator *a, size_t n, size_t sz) {
    if (sz && n > (size_t)-1 / sz) return NULL;
    void *p = etw_alloc(a, n * sz);
    if (p) memset(p, 0, n * sz == 0 ? 1 : n * sz);
    return p;
}

#include "etwdecode/etwdecode.h"

#define ETW_STR2(x) #x
#define ETW_STR(x) ETW_STR2(x)
const char *etw_version_string(void) {
    return ETW_STR(ETWDECODE_VERSION_MAJOR) "." ETW_STR(ETWDECODE_VERSION_MINOR) "." ETW_STR(
        ETWDECODE_VERSION_PATCH);
}

/* Four UTF-16 units (little-endian in a 64-bit word) that are all ASCII:
 * every unit below 0x80 */
#define UTF16_ASCII4_MASK 0xFF80FF80FF80FF80ull

size_t etw_utf16_to_utf8(const uint8_t *s, size_t units, char *dst) {
    size_t n = 0;
    for (size_t i = 0; i < units; i++) {
        /* runs of ASCII, four units at a time: one byte each */
        while (units - i >= 4) {
            uint64_t x = etw_le64(s + 2 * i);
            if (x & UTF16_ASCII4_MASK) break;
            if (dst) {
                dst[n] = (char)(x & 0x7Fu);
                dst[n + 1] = (char)((x >> 16) & 0x7Fu);
                dst[n + 2] = (char)((x >> 32) & 0x7Fu);
                dst[n + 3] = (char)((x >> 48) & 0x7Fu);
            }
            n += 4;
            i += 4;
        }
        if (i == units) break;
        uint32_t c = etw_le16(s + 2 * i);
        if (c >= 0xD800u && c <= 0xDBFFu) {
            uint32_t d = i + 1 < units ? etw_le16(s + 2 * i + 2) : 0;
            if (d >= 0xDC00u && d <= 0xDFFFu) {
                c = 0x10000u + ((c - 0xD800u) << 10) + (d - 0xDC00u);
                i++;
            } else {
                c = 0xFFFDu;
            }
        } else if (c >= 0xDC00u && c <= 0xDFFFu) {
            c = 0xFFFDu;
        }
        if (c < 0x80u) {
            if (dst) dst[n] = (char)c;
            n += 1;
        } else if (c < 0x800u) {
            if (dst) {
                dst[n] = (char)(0xC0u | (c >> 6));
                dst[n + 1] = (char)(0x80u | (c & 0x3Fu));
            }
            n += 2;
        } else if (c < 0x10000u) {
            if (dst) {
                dst[n] = (char)(0xE0u | (c >> 12));
                dst[n + 1] = (char)(0x80u | ((c >> 6) & 0x3Fu));
                dst[n + 2] = (char)(0x80u | (c & 0x3Fu));
            }
            n += 3;
        } else {
            if (dst) {
                dst[n] = (char)(0xF0u | (c >> 18));
                dst[n + 1] = (char)(0x80u | ((c >> 12) & 0x3Fu));
                dst[n + 2] = (char)(0x80u | ((c >> 6) & 0x3Fu));
                dst[n + 3] = (char)(0x80u | (c & 0x3Fu));
            }
            n += 4;
        }
    }
    if (dst) dst[n] = 0;
    return n;
}
