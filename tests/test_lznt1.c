/* test_lznt1.c - LZNT1 decompression (src/common/etw_lznt1.c).
 *
 * The worked example of Microsoft's [MS-XCA] section 3.3 (a 59-byte chunk
 * that decompresses to the 142-byte string given there, with a reference
 * that overlaps its own output), an uncompressed chunk, the split of
 * distance and length bits at the first position where it changes (17
 * bytes produced: 5 distance bits), and hostile inputs: the example cut at
 * every length, every byte of it flipped, a bad signature, a reference
 * before the chunk's start, a chunk that would pass 4096 bytes, and the
 * output bound. Each hostile input is an exactly sized heap copy, so
 * AddressSanitizer sees any overread.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/etw_lznt1.h"
#include "etw_test.h"

/* [MS-XCA] 3.3: the compressed bytes and the text they give (with its NUL) */
static const uint8_t example[59] = {
    0x38, 0xb0, 0x88, 0x46, 0x23, 0x20, 0x00, 0x20, 0x47, 0x20, 0x41, 0x00, 0x10, 0xa2, 0x47,
    0x01, 0xa0, 0x45, 0x20, 0x44, 0x00, 0x08, 0x45, 0x01, 0x50, 0x79, 0x00, 0xc0, 0x45, 0x20,
    0x05, 0x24, 0x13, 0x88, 0x05, 0xb4, 0x02, 0x4a, 0x44, 0xef, 0x03, 0x58, 0x02, 0x8c, 0x09,
    0x16, 0x01, 0x48, 0x45, 0x00, 0xbe, 0x00, 0x9e, 0x00, 0x04, 0x01, 0x18, 0x90, 0x00,
};
static const char example_text[] =
    "F# F# G A A G F# E D D E F# F# E E F# F# G A A G F# E D D E F# E D D E E F# D E F# G F# D "
    "E F# G F# E D E A F# F# G A A G F# E D D E F# E D D";

typedef struct {
    uint8_t out[3 * ETW_LZNT1_CHUNK];
    size_t len;
    int calls;
} sink;

static etw_status collect(void *ctx, const uint8_t *p, size_t n) {
    sink *s = ctx;
    if (n > sizeof s->out - s->len) return ETW_E_LIMIT;
    memcpy(s->out + s->len, p, n);
    s->len += n;
    s->calls++;
    return ETW_OK;
}

static etw_status run(const uint8_t *src, size_t n, size_t max, sink *s, size_t *total) {
    uint8_t *copy = malloc(n ? n : 1);
    memcpy(copy, src, n);
    memset(s, 0, sizeof *s);
    etw_status st = etw_lznt1_decompress(copy, n, max, collect, s, total);
    free(copy);
    return st;
}

static void test_example(void) {
    sink s;
    size_t total = 0;
    ETW_CHECK_INT(run(example, sizeof example, 1 << 20, &s, &total), ETW_OK);
    ETW_CHECK_INT((int)total, 142);
    ETW_CHECK_INT((int)s.len, 142);
    ETW_CHECK(s.len == sizeof example_text && !memcmp(s.out, example_text, sizeof example_text));
    /* counting alone gives the same size */
    ETW_CHECK_INT(etw_lznt1_decompress(example, sizeof example, 1 << 20, NULL, NULL, &total), ETW_OK);
    ETW_CHECK_INT((int)total, 142);
    /* a zero header after the chunk ends the stream; bytes after it are not read */
    uint8_t more[sizeof example + 4];
    memcpy(more, example, sizeof example);
    memcpy(more + sizeof example, "\0\0\xff\xff", 4);
    ETW_CHECK_INT(run(more, sizeof more, 1 << 20, &s, &total), ETW_OK);
    ETW_CHECK_INT((int)total, 142);
    /* the bound: one byte short of the output is refused, nothing given */
    ETW_CHECK_INT(run(example, sizeof example, 141, &s, &total), ETW_E_LIMIT);
    ETW_CHECK_INT(s.calls, 0);
}

static void test_uncompressed_and_split(void) {
    /* an uncompressed chunk of 5 bytes: header 0x3004 (bit 15 clear, sig 3, size-1 = 4) */
    const uint8_t raw[] = {0x04, 0x30, 'h', 'e', 'l', 'l', 'o'};
    sink s;
    size_t total;
    ETW_CHECK_INT(run(raw, sizeof raw, 100, &s, &total), ETW_OK);
    ETW_CHECK(s.len == 5 && !memcmp(s.out, "hello", 5));
    /* 17 literals "ABCDEFGHIJKLMNOPQ", then a reference 17 back of length 3:
     * with 17 bytes produced, (17 - 1) = 16 >= 16 moves one bit, so 5
     * distance bits and 11 length bits: token = (17 - 1) << 11 | (3 - 3) */
    uint8_t c[2 + 3 + 17 + 2];
    size_t k = 2;
    c[k++] = 0x00; /* eight literals */
    for (int i = 0; i < 8; i++) c[k++] = (uint8_t)('A' + i);
    c[k++] = 0x00;
    for (int i = 8; i < 16; i++) c[k++] = (uint8_t)('A' + i);
    c[k++] = 0x02; /* a literal, then a reference */
    c[k++] = 'Q';
    unsigned token = 16u << 11;
    c[k++] = (uint8_t)token;
    c[k++] = (uint8_t)(token >> 8);
    unsigned header = 0x8000u | 0x3000u | (unsigned)(k - 2 - 1);
    c[0] = (uint8_t)header;
    c[1] = (uint8_t)(header >> 8);
    ETW_CHECK_INT(run(c, k, 100, &s, &total), ETW_OK);
    ETW_CHECK(s.len == 20 && !memcmp(s.out, "ABCDEFGHIJKLMNOPQABC", 20));
}

static void test_hostile(void) {
    sink s;
    size_t total;
    /* cut at every length: never an overread; a cut inside the chunk is an error */
    for (size_t n = 0; n < sizeof example; n++) {
        etw_status st = run(example, n, 1 << 20, &s, &total);
        ETW_CHECK(n < 2 ? st == ETW_OK && total == 0 : st == ETW_E_CORRUPT);
    }
    /* every byte flipped: an error or at most 4096 bytes a chunk */
    for (size_t i = 0; i < sizeof example; i++) {
        uint8_t m[sizeof example];
        memcpy(m, example, sizeof m);
        m[i] ^= 0xFF;
        etw_status st = run(m, sizeof m, 1 << 20, &s, &total);
        ETW_CHECK(st == ETW_OK || st == ETW_E_CORRUPT);
        ETW_CHECK(total <= ETW_LZNT1_CHUNK);
    }
    /* a bad signature */
    const uint8_t badsig[] = {0x04, 0x20, 'h', 'e', 'l', 'l', 'o'};
    ETW_CHECK_INT(run(badsig, sizeof badsig, 100, &s, &total), ETW_E_CORRUPT);
    /* a reference before anything was produced */
    const uint8_t early[] = {0x02, 0xb0, 0x01, 0x00, 0x00};
    ETW_CHECK_INT(run(early, sizeof early, 100, &s, &total), ETW_E_CORRUPT);
    /* references that would take a chunk past 4096 bytes: a literal, then
     * references of the longest length at distance 1, more than enough */
    uint8_t big[2 + 2 + 1 + 2 * 7 + 40 * 17];
    size_t k = 2;
    big[k++] = 0xFE;
    big[k++] = 'x';
    for (int i = 0; i < 7; i++) { big[k++] = 0xFF; big[k++] = 0x0F; } /* length 18, distance 1 */
    while (k + 17 <= sizeof big) {
        big[k++] = 0xFF;
        for (int i = 0; i < 8; i++) { big[k++] = 0x3F; big[k++] = 0x00; }
    }
    unsigned header = 0xB000u | (unsigned)(k - 3);
    big[0] = (uint8_t)header;
    big[1] = (uint8_t)(header >> 8);
    ETW_CHECK_INT(run(big, k, 1 << 20, &s, &total), ETW_E_CORRUPT);
}

int main(void) {
    ETW_RUN(test_example);
    ETW_RUN(test_uncompressed_and_split);
    ETW_RUN(test_hostile);
    return ETW_TEST_DONE();
}
