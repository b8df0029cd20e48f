/* etw_lznt1.c - LZNT1 decompression (etw_lznt1.h). */
#include "etw_lznt1.h"

#include <string.h>

/* One compressed chunk body into out[0..ETW_LZNT1_CHUNK); *produced gets
 * its size. */
static etw_status chunk_body(const uint8_t *p, const uint8_t *end, uint8_t *out, size_t *produced) {
    size_t pos = 0;
    while (p < end) {
        unsigned flags = *p++;
        for (int bit = 0; bit < 8 && p < end; bit++, flags >>= 1) {
            if (!(flags & 1)) {
                if (pos == ETW_LZNT1_CHUNK) return ETW_E_CORRUPT;
                out[pos++] = *p++;
                continue;
            }
            if (end - p < 2) return ETW_E_CORRUPT;
            unsigned token = (unsigned)p[0] | (unsigned)p[1] << 8;
            p += 2;
            /* [MS-XCA] 2.5: 12 length bits and 4 distance bits at first; one
             * bit moves from length to distance each time the bytes produced
             * so far (minus one) pass another power of two from 16 up */
            unsigned length_mask = 0xFFFu, distance_shift = 12;
            for (size_t k = pos ? pos - 1 : 0; k >= 0x10; k >>= 1) {
                length_mask >>= 1;
                distance_shift--;
            }
            size_t length = (token & length_mask) + 3;
            size_t distance = (token >> distance_shift) + 1;
            if (distance > pos || length > ETW_LZNT1_CHUNK - pos) return ETW_E_CORRUPT;
            for (size_t i = 0; i < length; i++, pos++) out[pos] = out[pos - distance]; /* may overlap */
        }
    }
    *produced = pos;
    return ETW_OK;
}

etw_status etw_lznt1_decompress(const uint8_t *src, size_t n, size_t max_out, etw_lznt1_emit emit,
                                void *ctx, size_t *out_total) {
    uint8_t out[ETW_LZNT1_CHUNK];
    size_t total = 0, at = 0;
    etw_status st = ETW_OK;
    while (n - at >= 2) {
        unsigned header = (unsigned)src[at] | (unsigned)src[at + 1] << 8;
        if (!header) break;
        if (((header >> 12) & 7u) != 3u) {
            st = ETW_E_CORRUPT;
            break;
        }
        size_t body = (header & 0xFFFu) + 1;
        at += 2;
        if (body > n - at) {
            st = ETW_E_CORRUPT;
            break;
        }
        const uint8_t *p = src + at;
        size_t produced;
        if (header & 0x8000u) {
            st = chunk_body(p, p + body, out, &produced);
            if (st != ETW_OK) break;
            p = out;
        } else {
            produced = body; /* at most 4096: the size field has 12 bits */
        }
        at += body;
        if (produced > max_out - total) {
            st = ETW_E_LIMIT;
            break;
        }
        total += produced;
        if (emit && produced) {
            st = emit(ctx, p, produced);
            if (st != ETW_OK) break;
        }
    }
    if (out_total) *out_total = total;
    return st;
}
