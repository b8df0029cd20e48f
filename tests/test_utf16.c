/* test_utf16.c - etw_utf16_to_utf8 (four ASCII units at a time, the rest
 * one by one) against a plain one-unit-at-a-time conversion, on strings
 * that mix ASCII runs of every length and alignment with 2- and 3-byte
 * characters, surrogate pairs and lone surrogates, and with the counting
 * call (dst NULL). */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "common/etw_utf16.h"
#include "etw_test.h"

/* The conversion one unit at a time: U+FFFD for a lone surrogate. */
static size_t reference(const uint16_t *u, size_t n, char *dst) {
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        uint32_t c = u[i];
        if (c >= 0xD800u && c <= 0xDBFFu && i + 1 < n && u[i + 1] >= 0xDC00u && u[i + 1] <= 0xDFFFu) {
            c = 0x10000u + ((c - 0xD800u) << 10) + (u[i + 1] - 0xDC00u);
            i++;
        } else if (c >= 0xD800u && c <= 0xDFFFu) {
            c = 0xFFFDu;
        }
        if (c < 0x80u) {
            dst[k++] = (char)c;
        } else if (c < 0x800u) {
            dst[k++] = (char)(0xC0u | (c >> 6));
            dst[k++] = (char)(0x80u | (c & 0x3Fu));
        } else if (c < 0x10000u) {
            dst[k++] = (char)(0xE0u | (c >> 12));
            dst[k++] = (char)(0x80u | ((c >> 6) & 0x3Fu));
            dst[k++] = (char)(0x80u | (c & 0x3Fu));
        } else {
            dst[k++] = (char)(0xF0u | (c >> 18));
            dst[k++] = (char)(0x80u | ((c >> 12) & 0x3Fu));
            dst[k++] = (char)(0x80u | ((c >> 6) & 0x3Fu));
            dst[k++] = (char)(0x80u | (c & 0x3Fu));
        }
    }
    return k;
}

static void test_mixed(void) {
    /* the units strings are made of: ASCII (the fast path), the last
     * ASCII and first non-ASCII unit, 2- and 3-byte characters, the halves
     * of a pair, NUL */
    static const uint16_t pool[] = {'a', 'Z', 0x7F, 0x80, 0xE9, 0x7FF, 0x800, 0x4E2D, 0xFFFF, 0xD83D, 0xDE00, 0};
    uint32_t seed = 12345;
    unsigned long mismatches = 0, strings = 0;
    for (int round = 0; round < 20000; round++) {
        uint16_t u[40];
        uint8_t bytes[80];
        size_t n = (size_t)(round % 37);
        for (size_t i = 0; i < n; i++) {
            seed = seed * 1103515245u + 12345u;
            /* mostly ASCII, so that runs of every length occur */
            unsigned r = (seed >> 16) % 16;
            u[i] = r < 10 ? (uint16_t)('0' + r) : pool[r % (sizeof pool / sizeof *pool)];
            bytes[2 * i] = (uint8_t)(u[i] & 0xFF);
            bytes[2 * i + 1] = (uint8_t)(u[i] >> 8);
        }
        char want[160], got[160];
        size_t wn = reference(u, n, want);
        size_t gn = etw_utf16_to_utf8(bytes, n, got);
        size_t cn = etw_utf16_to_utf8(bytes, n, NULL);
        strings++;
        if ((wn != gn || cn != gn || memcmp(want, got, wn)) && mismatches++ < 5)
            fprintf(stderr, "round %d: %zu units: %zu/%zu bytes, reference %zu\n", round, n, gn, cn, wn);
    }
    ETW_CHECK_INT(mismatches, 0);
    ETW_CHECK(strings == 20000);
}

/* A long ASCII run at every offset of the input: the same bytes. */
static void test_ascii_offsets(void) {
    uint8_t bytes[2 * 64];
    for (size_t i = 0; i < 64; i++) {
        bytes[2 * i] = (uint8_t)('A' + i % 26);
        bytes[2 * i + 1] = 0;
    }
    for (size_t off = 0; off < 8; off++) {
        char out[64 + 1]; /* and the NUL the conversion writes */
        size_t n = etw_utf16_to_utf8(bytes + 2 * off, 64 - off, out);
        ETW_CHECK(n == 64 - off);
        for (size_t i = 0; i < n; i++) ETW_CHECK(out[i] == (char)('A' + (i + off) % 26));
    }
}

int main(void) {
    ETW_RUN(test_mixed);
    ETW_RUN(test_ascii_offsets);
    return ETW_TEST_DONE();
}
