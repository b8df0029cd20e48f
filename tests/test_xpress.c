/* test_xpress.c - plain LZ77 Xpress decompression (src/etl/etw_xpress.c).
 *
 * Holds a small test-only encoder (a token writer plus a greedy LZ77 match
 * finder, MS-XCA 2.3) so that every length encoding, overlapping matches and
 * the shared length half byte can be round-tripped; the MS-XCA 3.1 example
 * vectors; hostile inputs (truncation at every offset, offsets before the
 * output start, bad long lengths, short output buffers); one real
 * compressed ETL buffer; and a differential check against the byte-by-byte
 * decoder of tests/xpress_ref.h on every compressed buffer of
 * net.4.5.2.x64.etl, their truncations and short outputs, and mutated copies.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "etl/etw_xpress.h"
#include "etw_test.h"
#include "xpress_ref.h"

/* ------------------------------------------------------------------------ */
/* Test-only encoder                                                        */
/* ------------------------------------------------------------------------ */

typedef struct tenc {
    uint8_t *buf;
    size_t cap;
    size_t len;      /* bytes written (may exceed cap: then overflow is set) */
    size_t flag_pos; /* where the current flag word goes */
    uint32_t flags;
    unsigned nflags;
    size_t half_pos; /* byte whose high nibble is free, or 0 for none */
    int overflow;
} tenc;

static void tenc_put8(tenc *e, unsigned v) {
    if (e->len < e->cap)
        e->buf[e->len] = (uint8_t)v;
    else
        e->overflow = 1;
    e->len++;
}
static void tenc_put16(tenc *e, unsigned v) {
    tenc_put8(e, v & 0xFF);
    tenc_put8(e, (v >> 8) & 0xFF);
}
static void tenc_put32(tenc *e, uint32_t v) {
    tenc_put16(e, v & 0xFFFF);
    tenc_put16(e, v >> 16);
}
static void tenc_store32(tenc *e, size_t pos, uint32_t v) {
    for (int i = 0; i < 4; i++)
        if (pos + (size_t)i < e->cap) e->buf[pos + (size_t)i] = (uint8_t)(v >> (8 * i));
}
static void tenc_init(tenc *e, uint8_t *buf, size_t cap) {
    memset(e, 0, sizeof *e);
    e->buf = buf;
    e->cap = cap;
    e->flag_pos = 0;
    tenc_put32(e, 0); /* room for the first flag word */
}
/* Record one flag after the item's bytes are written; a full word is stored
 * and room for the next one is made. */
static void tenc_flag(tenc *e, unsigned bit) {
    e->flags = (e->flags << 1) | bit;
    if (++e->nflags == 32) {
        tenc_store32(e, e->flag_pos, e->flags);
        e->flag_pos = e->len;
        tenc_put32(e, 0);
        e->flags = 0;
        e->nflags = 0;
    }
}
static void tenc_literal(tenc *e, uint8_t b) {
    tenc_put8(e, b);
    tenc_flag(e, 0);
}
/* mode: 0 = canonical; 1 = force the 16-bit form when len >= 25;
 * 2 = force the 32-bit form when len >= 25. */
static void tenc_match_mode(tenc *e, size_t off, uint64_t len, int mode) {
    uint64_t l = len - 3;
    size_t o = off - 1;
    if (l < 7) {
        tenc_put16(e, (unsigned)((o << 3) | (size_t)l));
    } else {
        unsigned nib;
        tenc_put16(e, (unsigned)((o << 3) | 7u));
        l -= 7;
        nib = l < 15 ? (unsigned)l : 15u;
        if (mode && l >= 15) nib = 15;
        if (e->half_pos == 0) {
            e->half_pos = e->len;
            tenc_put8(e, nib);
        } else {
            if (e->half_pos < e->cap) e->buf[e->half_pos] |= (uint8_t)(nib << 4);
            e->half_pos = 0;
        }
        if (nib == 15) {
            l -= 15;
            if (l < 255 && mode == 0) {
                tenc_put8(e, (unsigned)l);
            } else {
                tenc_put8(e, 255);
                l += 15 + 7; /* the 16/32-bit forms hold length-3 in full */
                if (l < 65536 && mode != 2) {
                    tenc_put16(e, (unsigned)l);
                } else {
                    tenc_put16(e, 0);
                    tenc_put32(e, (uint32_t)l);
                }
            }
        }
    }
    tenc_flag(e, 1);
}
static void tenc_match(tenc *e, size_t off, uint64_t len) { tenc_match_mode(e, off, len, 0); }
/* Store the last flag word, unused bits set to 1 as MS-XCA 2.3 does. With
 * trailer == 0 an all-padding last word is left out, so the stream ends
 * right after a complete flag group. Returns the stream length. */
static size_t tenc_finish(tenc *e, int trailer) {
    if (e->nflags == 0 && !trailer) {
        e->len -= 4;
        return e->len;
    }
    uint32_t w = e->nflags == 0
                     ? 0xFFFFFFFFu
                     : (e->flags << (32 - e->nflags)) | ((1u << (32 - e->nflags)) - 1u);
    tenc_store32(e, e->flag_pos, w);
    return e->len;
}

/* Greedy LZ77 with a hash chain plus explicit short offsets 1..8 (to make
 * overlapping matches). Matches are capped at max_len. Returns the stream
 * length (0 with *ok = 0 if dst was too small). */
#define HBITS 14
static size_t test_compress(const uint8_t *src, size_t n, uint8_t *dst, size_t cap,
                            size_t max_len, int trailer, int *ok) {
    tenc e;
    int32_t *head = malloc(sizeof(int32_t) << HBITS);
    int32_t *prev = malloc(sizeof(int32_t) * (n ? n : 1));
    size_t pos = 0;
    tenc_init(&e, dst, cap);
    for (size_t i = 0; i < ((size_t)1 << HBITS); i++) head[i] = -1;
#define HASH3(p) ((((uint32_t)(p)[0] << 16 | (uint32_t)(p)[1] << 8 | (p)[2]) * 2654435761u) >> (32 - HBITS))
    while (pos < n) {
        size_t best_len = 0, best_off = 0;
        size_t lim = n - pos < max_len ? n - pos : max_len;
        if (lim >= 3) {
            for (size_t off = 1; off <= 8 && off <= pos; off++) {
                size_t l = 0;
                while (l < lim && src[pos + l] == src[pos + l - off]) l++;
                if (l > best_len) {
                    best_len = l;
                    best_off = off;
                }
            }
            int32_t c = head[HASH3(src + pos)];
            for (int depth = 0; c >= 0 && depth < 48; depth++) {
                size_t off = pos - (size_t)c;
                if (off > 8192) break;
                size_t l = 0;
                while (l < lim && src[pos + l] == src[(size_t)c + l]) l++;
                if (l > best_len) {
                    best_len = l;
                    best_off = off;
                }
                c = prev[c];
            }
        }
        size_t step = best_len >= 3 ? best_len : 1;
        if (best_len >= 3)
            tenc_match(&e, best_off, best_len);
        else
            tenc_literal(&e, src[pos]);
        for (size_t k = 0; k < step; k++, pos++) {
            if (pos + 3 <= n) {
                uint32_t h = HASH3(src + pos);
                prev[pos] = head[h];
                head[h] = (int32_t)pos;
            }
        }
    }
#undef HASH3
    free(head);
    free(prev);
    size_t len = tenc_finish(&e, trailer);
    *ok = !e.overflow;
    return e.overflow ? 0 : len;
}

/* ------------------------------------------------------------------------ */
/* Data generators                                                          */
/* ------------------------------------------------------------------------ */

static uint64_t rng_state = 0x9E3779B97F4A7C15ull;
static uint32_t rnd(void) {
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return (uint32_t)(rng_state >> 16);
}

static void gen(uint8_t *p, size_t n, int kind) {
    static const char *words[] = {"Microsoft-Windows-", "Kernel", "Process", "Thread", " ", "\0\0\0\0",
                                  "GC", "Heap", "0123", "ETW", "\xff\xff", "abcabc"};
    size_t i = 0;
    switch (kind) {
    case 0: /* random */
        for (; i < n; i++) p[i] = (uint8_t)rnd();
        break;
    case 1: /* four-letter alphabet: many short matches */
        for (; i < n; i++) p[i] = (uint8_t)("ACGT"[rnd() & 3]);
        break;
    case 2: /* runs of one byte, random lengths (long overlapping matches) */
        while (i < n) {
            uint8_t b = (uint8_t)rnd();
            size_t r = 1 + rnd() % ((rnd() & 7) ? 40 : 2000);
            for (size_t k = 0; k < r && i < n; k++) p[i++] = b;
        }
        break;
    case 3: /* all zero */
        memset(p, 0, n);
        break;
    case 4: /* a word salad */
        while (i < n) {
            const char *w = words[rnd() % (sizeof words / sizeof words[0])];
            size_t wl = (w[0] == 0) ? 4 : strlen(w);
            for (size_t k = 0; k < wl && i < n; k++) p[i++] = (uint8_t)w[k];
            if ((rnd() & 15) == 0 && i < n) p[i++] = (uint8_t)rnd();
        }
        break;
    default: /* short periods 1..12 with occasional noise */
        while (i < n) {
            size_t per = 1 + rnd() % 12, r = 1 + rnd() % 300;
            uint8_t pat[12];
            for (size_t k = 0; k < per; k++) pat[k] = (uint8_t)rnd();
            for (size_t k = 0; k < r && i < n; k++) p[i++] = pat[k % per];
        }
        break;
    }
}

/* Reference expansion of a match, byte by byte (MS-XCA 2.4.4). */
static void ref_match(uint8_t *out, size_t pos, size_t off, size_t len) {
    for (size_t k = 0; k < len; k++) out[pos + k] = out[pos + k - off];
}

/* ------------------------------------------------------------------------ */
/* Known vectors (MS-XCA 3.1)                                               */
/* ------------------------------------------------------------------------ */

static void test_mxca_alphabet(void) {
    /* MS-XCA 3.1: "abcdefghijklmnopqrstuvwxyz" as 26 literals. */
    static const uint8_t comp[] = {0x3f, 0x00, 0x00, 0x00, 0x61, 0x62, 0x63, 0x64, 0x65, 0x66,
                                   0x67, 0x68, 0x69, 0x6a, 0x6b, 0x6c, 0x6d, 0x6e, 0x6f, 0x70,
                                   0x71, 0x72, 0x73, 0x74, 0x75, 0x76, 0x77, 0x78, 0x79, 0x7a};
    uint8_t out[64];
    size_t n = 999;
    ETW_CHECK_INT(etw_xpress_decompress(comp, sizeof comp, out, sizeof out, &n), ETW_OK);
    ETW_CHECK_INT(n, 26);
    ETW_CHECK(memcmp(out, "abcdefghijklmnopqrstuvwxyz", 26) == 0);
    /* Exactly sized output is not "too small". */
    ETW_CHECK_INT(etw_xpress_decompress(comp, sizeof comp, out, 26, &n), ETW_OK);
    ETW_CHECK_INT(n, 26);
    ETW_CHECK_INT(etw_xpress_decompress(comp, sizeof comp, out, 25, &n), ETW_E_SMALL_BUFFER);
    ETW_CHECK_INT(n, 25);

    /* Our encoder produces the same bytes. */
    uint8_t enc[64];
    int ok;
    size_t cl = test_compress((const uint8_t *)"abcdefghijklmnopqrstuvwxyz", 26, enc, sizeof enc,
                              SIZE_MAX, 1, &ok);
    ETW_CHECK(ok);
    ETW_CHECK_INT(cl, sizeof comp);
    ETW_CHECK(cl == sizeof comp && memcmp(enc, comp, cl) == 0);
}

static void test_mxca_abc300(void) {
    /* MS-XCA 3.1: "abc" x 100 = abc[match: distance = 3, length = 297]. */
    static const uint8_t comp[] = {0xff, 0xff, 0xff, 0x1f, 0x61, 0x62, 0x63,
                                   0x17, 0x00, 0x0f, 0xff, 0x26, 0x01};
    uint8_t want[300], out[400];
    size_t n = 0;
    for (int i = 0; i < 300; i++) want[i] = (uint8_t)("abc"[i % 3]);
    ETW_CHECK_INT(etw_xpress_decompress(comp, sizeof comp, out, sizeof out, &n), ETW_OK);
    ETW_CHECK_INT(n, 300);
    ETW_CHECK(memcmp(out, want, 300) == 0);
    ETW_CHECK_INT(etw_xpress_decompress(comp, sizeof comp, out, 300, &n), ETW_OK);
    ETW_CHECK_INT(n, 300);
    memset(out, 0, sizeof out);
    ETW_CHECK_INT(etw_xpress_decompress(comp, sizeof comp, out, 299, &n), ETW_E_SMALL_BUFFER);
    ETW_CHECK_INT(n, 299);
    ETW_CHECK(memcmp(out, want, 299) == 0 && out[299] == 0);

    uint8_t enc[64];
    int ok;
    size_t cl = test_compress(want, 300, enc, sizeof enc, SIZE_MAX, 1, &ok);
    ETW_CHECK(ok);
    ETW_CHECK_INT(cl, sizeof comp);
    ETW_CHECK(cl == sizeof comp && memcmp(enc, comp, cl) == 0);
}

/* ------------------------------------------------------------------------ */
/* Hand-built streams                                                       */
/* ------------------------------------------------------------------------ */

/* Decode `comp` into a fresh buffer of exactly `cap` bytes and compare with
 * want[0..want_len). The input is copied to an exactly sized heap block so
 * that ASan sees any over-read. */
static int decode_equals(const uint8_t *comp, size_t cl, size_t cap, const uint8_t *want,
                         size_t want_len, etw_status want_st) {
    uint8_t *in = malloc(cl ? cl : 1);
    uint8_t *out = malloc(cap ? cap : 1);
    size_t n = (size_t)-1;
    int good;
    memcpy(in, comp, cl);
    etw_status st = etw_xpress_decompress(in, cl, out, cap, &n);
    good = st == want_st && n == want_len && (want_len == 0 || memcmp(out, want, want_len) == 0);
    if (!good)
        fprintf(stderr, "  decode: status %d (want %d), %zu bytes (want %zu)\n", (int)st,
                (int)want_st, n, want_len);
    free(in);
    free(out);
    return good;
}

static void test_match_lengths(void) {
    /* Every length tier: 3..9 inline, 10..24 half byte, 25..279 byte,
     * 280..65538 16-bit, 65539.. 32-bit; at several offsets, overlapping
     * (offset < length) and not. */
    static const size_t lens[] = {3,   4,   9,   10,  17,    18,    24,    25,   26,
                                  100, 279, 280, 300, 65538, 65539, 70000, 131072};
    static const size_t offs[] = {1, 2, 3, 4, 7, 8, 9, 15, 16, 33, 100, 8191, 8192};
    size_t maxlen = 131072 + 8192 + 16;
    uint8_t *want = malloc(maxlen);
    uint8_t *comp = malloc(maxlen + 64);
    for (size_t li = 0; li < sizeof lens / sizeof lens[0]; li++) {
        for (size_t oi = 0; oi < sizeof offs / sizeof offs[0]; oi++) {
            for (int mode = 0; mode < 3; mode++) {
                size_t off = offs[oi], len = lens[li];
                if (mode && len < 25) continue;
                tenc e;
                tenc_init(&e, comp, maxlen + 64);
                for (size_t k = 0; k < off; k++) {
                    want[k] = (uint8_t)rnd();
                    tenc_literal(&e, want[k]);
                }
                ref_match(want, off, off, len);
                tenc_match_mode(&e, off, len, mode);
                size_t cl = tenc_finish(&e, 1);
                ETW_CHECK(!e.overflow);
                if (!decode_equals(comp, cl, off + len, want, off + len, ETW_OK)) {
                    fprintf(stderr, "  len %zu off %zu mode %d\n", len, off, mode);
                    ETW_CHECK(0);
                } else {
                    ETW_CHECK(1);
                }
                /* One byte short: the first off+len-1 bytes, ETW_E_SMALL_BUFFER. */
                ETW_CHECK(decode_equals(comp, cl, off + len - 1, want, off + len - 1,
                                        ETW_E_SMALL_BUFFER));
            }
        }
    }
    free(want);
    free(comp);
}

static void test_shared_half_byte(void) {
    /* Sequences of long matches share half bytes pairwise, including across
     * flag words and with literals and short matches between them. */
    static const size_t longs[] = {10, 11, 24, 25, 26, 279, 280, 300, 65538, 70000};
    size_t cap = 8 * 70000 + 4096;
    uint8_t *want = malloc(cap);
    uint8_t *comp = malloc(cap);
    for (int round = 0; round < 60; round++) {
        tenc e;
        size_t n = 0;
        tenc_init(&e, comp, cap);
        for (int k = 0; k < 8; k++) {
            want[n] = (uint8_t)rnd();
            tenc_literal(&e, want[n++]);
        }
        int items = 2 + (int)(rnd() % 70);
        for (int it = 0; it < items; it++) {
            unsigned r = rnd() % 4;
            if (r == 0) {
                want[n] = (uint8_t)rnd();
                tenc_literal(&e, want[n++]);
            } else {
                size_t len = r == 1 ? 3 + rnd() % 7 : longs[rnd() % (round < 30 ? 6 : 10)];
                size_t off = 1 + rnd() % (n < 8192 ? n : 8192);
                if (n + len > cap - 16) break;
                ref_match(want, n, off, len);
                tenc_match(&e, off, len);
                n += len;
            }
        }
        size_t cl = tenc_finish(&e, (int)(rnd() & 1));
        ETW_CHECK(!e.overflow);
        ETW_CHECK(decode_equals(comp, cl, n, want, n, ETW_OK));
    }
    free(want);
    free(comp);
}

static void test_stream_ends(void) {
    uint8_t comp[64], out[64];
    size_t n;
    /* 32 literals and no trailing flag word: input ends after a full group. */
    memset(comp, 0, 4);
    for (int i = 0; i < 32; i++) comp[4 + i] = (uint8_t)('A' + i);
    ETW_CHECK_INT(etw_xpress_decompress(comp, 36, out, sizeof out, &n), ETW_OK);
    ETW_CHECK_INT(n, 32);
    ETW_CHECK(out[0] == 'A' && out[31] == 'A' + 31);
    /* ... and with the encoder's all-ones trailer. */
    memset(comp + 36, 0xFF, 4);
    ETW_CHECK_INT(etw_xpress_decompress(comp, 40, out, sizeof out, &n), ETW_OK);
    ETW_CHECK_INT(n, 32);
    /* Input ending inside a literal run (flag word promised more literals). */
    ETW_CHECK_INT(etw_xpress_decompress(comp, 10, out, sizeof out, &n), ETW_OK);
    ETW_CHECK_INT(n, 6);
    /* Empty input, empty output. */
    ETW_CHECK_INT(etw_xpress_decompress(comp, 0, out, sizeof out, &n), ETW_OK);
    ETW_CHECK_INT(n, 0);
    ETW_CHECK_INT(etw_xpress_decompress(NULL, 0, NULL, 0, &n), ETW_OK);
    ETW_CHECK_INT(n, 0);
    /* Only a flag word. */
    ETW_CHECK_INT(etw_xpress_decompress(comp + 36, 4, out, sizeof out, &n), ETW_OK);
    ETW_CHECK_INT(n, 0);
    /* A partial flag word is a truncated token. */
    ETW_CHECK_INT(etw_xpress_decompress(comp, 3, out, sizeof out, &n), ETW_E_DECOMPRESS);
    ETW_CHECK_INT(n, 0);
    ETW_CHECK_INT(etw_xpress_decompress(comp, 38, out, sizeof out, &n), ETW_E_DECOMPRESS);
    ETW_CHECK_INT(n, 32);
    /* Output exactly full and only padding left: still ETW_OK. */
    ETW_CHECK_INT(etw_xpress_decompress(comp, 40, out, 32, &n), ETW_OK);
    ETW_CHECK_INT(n, 32);
    /* Zero-capacity output with data to produce. */
    ETW_CHECK_INT(etw_xpress_decompress(comp, 40, out, 0, &n), ETW_E_SMALL_BUFFER);
    ETW_CHECK_INT(n, 0);
    /* Bad arguments. */
    ETW_CHECK_INT(etw_xpress_decompress(comp, 40, out, sizeof out, NULL), ETW_E_INVALID_ARG);
    ETW_CHECK_INT(etw_xpress_decompress(NULL, 4, out, sizeof out, &n), ETW_E_INVALID_ARG);
    ETW_CHECK_INT(etw_xpress_decompress(comp, 40, NULL, 4, &n), ETW_E_INVALID_ARG);
}

static void test_hostile(void) {
    uint8_t out[256];
    size_t n;
    /* A match first: offset 1 but no output yet. */
    static const uint8_t m0[] = {0x00, 0x00, 0x00, 0x80, 0x00, 0x00};
    ETW_CHECK_INT(etw_xpress_decompress(m0, sizeof m0, out, sizeof out, &n), ETW_E_DECOMPRESS);
    ETW_CHECK_INT(n, 0);
    /* One literal, then a match at offset 2. */
    static const uint8_t m1[] = {0x00, 0x00, 0x00, 0x40, 0x61, 0x08, 0x00};
    ETW_CHECK_INT(etw_xpress_decompress(m1, sizeof m1, out, sizeof out, &n), ETW_E_DECOMPRESS);
    ETW_CHECK_INT(n, 1);
    /* ... at offset 1 it is fine ("aaaa"). */
    static const uint8_t m2[] = {0x00, 0x00, 0x00, 0x40, 0x61, 0x00, 0x00};
    ETW_CHECK_INT(etw_xpress_decompress(m2, sizeof m2, out, sizeof out, &n), ETW_OK);
    ETW_CHECK_INT(n, 4);
    ETW_CHECK(memcmp(out, "aaaa", 4) == 0);
    /* The largest offset, 8192, with 10 literals of output. */
    uint8_t m3[20] = {0x00, 0x00, 0x20, 0x00};
    for (int i = 0; i < 10; i++) m3[4 + i] = (uint8_t)i;
    m3[14] = 0xF8;
    m3[15] = 0xFF;
    ETW_CHECK_INT(etw_xpress_decompress(m3, 16, out, sizeof out, &n), ETW_E_DECOMPRESS);
    ETW_CHECK_INT(n, 10);
    /* Truncated match word (1 byte). */
    ETW_CHECK_INT(etw_xpress_decompress(m2, 6, out, sizeof out, &n), ETW_E_DECOMPRESS);
    ETW_CHECK_INT(n, 1);
    /* Long-length tiers cut short: "a", match len code 7 then nothing, then
     * half byte 15 and nothing, then 255 and 1 byte, then 0x0000 and 3 bytes. */
    static const uint8_t t[] = {0x00, 0x00, 0x00, 0x40, 0x61, 0x07, 0x00,
                                0x0F, 0xFF, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00};
    static const size_t cut_st[] = {7, 8, 9, 10, 11, 12, 13, 14};
    for (size_t i = 0; i < sizeof cut_st / sizeof cut_st[0]; i++) {
        ETW_CHECK_INT(etw_xpress_decompress(t, cut_st[i], out, sizeof out, &n), ETW_E_DECOMPRESS);
        ETW_CHECK_INT(n, 1);
    }
    /* The complete one has a 32-bit length of 0: below 15+7, invalid. */
    ETW_CHECK_INT(etw_xpress_decompress(t, 15, out, sizeof out, &n), ETW_E_DECOMPRESS);
    /* A 16-bit length of 21 (< 15+7) is invalid, 22 is the shortest valid. */
    uint8_t u[] = {0x00, 0x00, 0x00, 0x40, 0x61, 0x07, 0x00, 0x0F, 0xFF, 21, 0x00};
    ETW_CHECK_INT(etw_xpress_decompress(u, sizeof u, out, sizeof out, &n), ETW_E_DECOMPRESS);
    u[9] = 22;
    ETW_CHECK_INT(etw_xpress_decompress(u, sizeof u, out, sizeof out, &n), ETW_OK);
    ETW_CHECK_INT(n, 1 + 25);
    /* A 4 GiB match length into a small buffer: clipped, ETW_E_SMALL_BUFFER. */
    static const uint8_t big[] = {0x00, 0x00, 0x00, 0x40, 0x61, 0x07, 0x00, 0x0F, 0xFF,
                                  0x00, 0x00, 0xFF, 0xFF, 0xFF, 0xFF};
    memset(out, 0, sizeof out);
    ETW_CHECK_INT(etw_xpress_decompress(big, sizeof big, out, 200, &n), ETW_E_SMALL_BUFFER);
    ETW_CHECK_INT(n, 200);
    ETW_CHECK(out[0] == 'a' && out[199] == 'a' && out[200] == 0);
}

/* ------------------------------------------------------------------------ */
/* Round trips through the greedy encoder                                   */
/* ------------------------------------------------------------------------ */

static int roundtrip_one(const uint8_t *src, size_t n, size_t max_len, int trailer) {
    size_t cap = n + n / 8 + 64;
    uint8_t *comp = malloc(cap);
    int ok, good;
    size_t cl = test_compress(src, n, comp, cap, max_len, trailer, &ok);
    good = ok && decode_equals(comp, cl, n, src, n, ETW_OK) &&
           decode_equals(comp, cl, n + 37, src, n, ETW_OK);
    if (good && n > 0) good = decode_equals(comp, cl, n - 1, src, n - 1, ETW_E_SMALL_BUFFER);
    free(comp);
    return good;
}

static void test_roundtrip_sizes(void) {
    static const size_t big[] = {127,  128,  255,  256,  257,   1000,  4095,  4096,  4097,
                                 8191, 8192, 8193, 9000, 65535, 65536, 65537, 70000, 200000};
    for (int kind = 0; kind < 6; kind++) {
        int fails = 0;
        for (size_t n = 0; n <= 100; n++) {
            uint8_t buf[100];
            gen(buf, n, kind);
            fails += !roundtrip_one(buf, n, SIZE_MAX, (int)(n & 1));
        }
        ETW_CHECK_INT(fails, 0);
        for (size_t i = 0; i < sizeof big / sizeof big[0]; i++) {
            uint8_t *buf = malloc(big[i]);
            gen(buf, big[i], kind);
            if (!roundtrip_one(buf, big[i], SIZE_MAX, (int)(i & 1))) {
                fprintf(stderr, "  kind %d size %zu\n", kind, big[i]);
                ETW_CHECK(0);
            } else {
                ETW_CHECK(1);
            }
            /* Capped lengths give many more matches per byte. */
            static const size_t caps[] = {3, 9, 10, 17, 18, 24, 25, 279, 280};
            ETW_CHECK(roundtrip_one(buf, big[i], caps[i % 9], 1));
            free(buf);
        }
    }
}

static void test_roundtrip_random(void) {
    int fails = 0;
    for (int r = 0; r < 400; r++) {
        size_t n = rnd() % 5000;
        uint8_t *buf = malloc(n ? n : 1);
        /* A mix of kinds inside one buffer. */
        size_t i = 0;
        while (i < n) {
            size_t piece = 1 + rnd() % 700;
            if (piece > n - i) piece = n - i;
            gen(buf + i, piece, (int)(rnd() % 6));
            i += piece;
        }
        fails += !roundtrip_one(buf, n, (rnd() & 1) ? SIZE_MAX : 3 + rnd() % 400, (int)(rnd() & 1));
        free(buf);
    }
    ETW_CHECK_INT(fails, 0);
}

/* ------------------------------------------------------------------------ */
/* Truncation and short output at every offset                              */
/* ------------------------------------------------------------------------ */

static void test_truncation_every_offset(void) {
    for (int kind = 0; kind < 6; kind++) {
        size_t n = 3000;
        uint8_t *src = malloc(n);
        uint8_t *comp = malloc(n + n / 8 + 64);
        uint8_t *out = malloc(n);
        int ok, bad = 0;
        gen(src, n, kind);
        size_t cl = test_compress(src, n, comp, n + n / 8 + 64, kind == 5 ? 300 : SIZE_MAX, 1, &ok);
        ETW_CHECK(ok);
        size_t last = 0;
        for (size_t k = 0; k <= cl; k++) {
            uint8_t *in = malloc(k ? k : 1);
            size_t got = (size_t)-1;
            memcpy(in, comp, k);
            etw_status st = etw_xpress_decompress(in, k, out, n, &got);
            /* Never a crash; OK or DECOMPRESS; the output is a prefix of the
             * original and grows with k. */
            if (!(st == ETW_OK || st == ETW_E_DECOMPRESS)) bad++;
            else if (got > n || memcmp(out, src, got) != 0) bad++;
            else if (got < last) bad++;
            last = got;
            if (k == cl && (st != ETW_OK || got != n)) bad++;
            free(in);
        }
        ETW_CHECK_INT(bad, 0);
        free(src);
        free(comp);
        free(out);
    }
}

static void test_small_output_every_size(void) {
    size_t n = 1500;
    uint8_t *src = malloc(n);
    uint8_t *comp = malloc(n + n / 8 + 64);
    uint8_t *out = malloc(n + 64);
    int ok, bad = 0;
    /* Mixed content so that the cut falls in literal runs and in matches of
     * every copy kind. */
    gen(src, 500, 4);
    gen(src + 500, 500, 5);
    gen(src + 1000, 500, 2);
    size_t cl = test_compress(src, n, comp, n + n / 8 + 64, SIZE_MAX, 1, &ok);
    ETW_CHECK(ok);
    for (size_t cap = 0; cap < n; cap++) {
        size_t got = (size_t)-1;
        memset(out, 0xA5, n + 64);
        etw_status st = etw_xpress_decompress(comp, cl, out, cap, &got);
        if (st != ETW_E_SMALL_BUFFER || got != cap || memcmp(out, src, cap) != 0) bad++;
        for (size_t k = cap; k < n + 64; k++)
            if (out[k] != 0xA5) {
                bad++; /* wrote past out_cap */
                break;
            }
    }
    ETW_CHECK_INT(bad, 0);
    free(src);
    free(comp);
    free(out);
}

/* ------------------------------------------------------------------------ */
/* A real compressed ETL buffer                                             */
/* ------------------------------------------------------------------------ */

static uint32_t rd32(const uint8_t *p) {
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static void test_real_etl_buffer(void) {
    const char *path = ETW_TEST_DATA_DIR "/smallEtlFile.etl";
    uint8_t file[2048], out[1024];
    size_t fl = 0, n = 0;
    FILE *f = fopen(path, "rb");
    ETW_CHECK(f != NULL);
    if (!f) {
        fprintf(stderr, "  cannot open %s\n", path);
        return;
    }
    fl = fread(file, 1, sizeof file, f);
    fclose(f);
    ETW_CHECK_INT(fl, 1061);
    if (fl < 0x200 + 0x48) return;

    const uint8_t *hdr = file + 0x200;
    uint32_t bufsize = rd32(hdr + 0x00);
    uint32_t usize = rd32(hdr + 0x30);
    unsigned flags = (unsigned)(hdr[0x34] | hdr[0x35] << 8);
    ETW_CHECK_INT(bufsize, 549);
    ETW_CHECK_INT(usize, 736);
    ETW_CHECK((flags & 0x40) != 0); /* compressed buffer */
    if (bufsize != 549 || 0x200 + (size_t)bufsize > fl) return;

    const uint8_t *in = hdr + 0x48;
    size_t in_len = bufsize - 0x48;
    size_t want = usize - 0x48;
    ETW_CHECK_INT(want, 664);

    /* Exact size, as a reader that trusts the header would ask. */
    ETW_CHECK_INT(etw_xpress_decompress(in, in_len, out, want, &n), ETW_OK);
    ETW_CHECK_INT(n, 664);
    /* A larger buffer: the stream itself ends at 664 bytes. */
    ETW_CHECK_INT(etw_xpress_decompress(in, in_len, out, sizeof out, &n), ETW_OK);
    ETW_CHECK_INT(n, 664);
    /* First event record: u16 size 0x0298 (= 664, the whole payload), u16
     * 0xC012 (a header type with the 0xC0 marker byte). */
    ETW_CHECK_INT(rd32(out), 0xC0120298u);
    ETW_CHECK_INT(out[0] | out[1] << 8, 664);
    ETW_CHECK_INT(out[2] | out[3] << 8, 0xC012);
    ETW_CHECK_INT(out[3], 0xC0);
    /* One byte short. */
    ETW_CHECK_INT(etw_xpress_decompress(in, in_len, out, want - 1, &n), ETW_E_SMALL_BUFFER);
    ETW_CHECK_INT(n, 663);

    /* Re-encoding with the test encoder round-trips the same bytes. */
    uint8_t again[1024], comp[1024];
    int ok;
    ETW_CHECK_INT(etw_xpress_decompress(in, in_len, again, sizeof again, &n), ETW_OK);
    size_t cl = test_compress(again, n, comp, sizeof comp, SIZE_MAX, 1, &ok);
    ETW_CHECK(ok);
    ETW_CHECK(decode_equals(comp, cl, n, again, n, ETW_OK));
}

/* ------------------------------------------------------------------------ */
/* Against the byte-by-byte reference decoder                               */
/* ------------------------------------------------------------------------ */

/* Bytes after out[cap] that must stay untouched. */
#define GUARD 64

/* etw_xpress_decompress and xref_decompress agree on in[0..n) with an
 * output of cap bytes: status, *out_len, the bytes below it; nothing written
 * at or past cap. The input is copied to a block of exactly n bytes so that
 * ASan sees any read past its end. */
static int same_as_ref(const uint8_t *in, size_t n, size_t cap) {
    uint8_t *a = malloc(cap + GUARD), *b = malloc(cap ? cap : 1), *inc = malloc(n ? n : 1);
    size_t la = 0, lb = 0;
    int ok = 0;
    if (a && b && inc) {
        memcpy(inc, in, n);
        memset(a + cap, 0xA5, GUARD);
        etw_status sa = etw_xpress_decompress(inc, n, a, cap, &la);
        etw_status sb = xref_decompress(inc, n, b, cap, &lb);
        ok = sa == sb && la == lb && memcmp(a, b, la) == 0;
        for (size_t k = 0; k < GUARD; k++) ok &= a[cap + k] == 0xA5;
        if (!ok)
            fprintf(stderr, "  differs from the reference: n=%zu cap=%zu: %d/%zu, reference %d/%zu\n", n, cap,
                    (int)sa, la, (int)sb, lb);
    }
    free(a);
    free(b);
    free(inc);
    return ok;
}

typedef struct cbuf {
    const uint8_t *in;
    size_t in_len, out_len;
} cbuf;

/* The compressed buffers of an ETL file (buffer header: size at 0x00,
 * FilledBytes at 0x30, flags at 0x34 with 0x40 = compressed; payload from
 * 0x48). Returns how many, up to max; *data receives the file (to free). */
static size_t load_compressed(const char *path, uint8_t **data, cbuf *bufs, size_t max) {
    FILE *f = fopen(path, "rb");
    long sz;
    size_t nb = 0;
    *data = NULL;
    if (!f) return 0;
    if (fseek(f, 0, SEEK_END) != 0 || (sz = ftell(f)) <= 0 || fseek(f, 0, SEEK_SET) != 0 ||
        !(*data = malloc((size_t)sz)) || fread(*data, 1, (size_t)sz, f) != (size_t)sz) {
        fclose(f);
        return 0;
    }
    fclose(f);
    for (size_t off = 0; off + 0x48 <= (size_t)sz && nb < max;) {
        const uint8_t *h = *data + off;
        uint32_t size = rd32(h), filled = rd32(h + 0x30);
        if (size < 0x48 || size > (size_t)sz - off) break;
        if (((h[0x34] | h[0x35] << 8) & 0x40) && filled > 0x48 && filled - 0x48 <= 0x100000) {
            bufs[nb].in = h + 0x48;
            bufs[nb].in_len = size - 0x48;
            bufs[nb].out_len = filled - 0x48;
            nb++;
        }
        off += size;
    }
    return nb;
}

static void test_against_reference(void) {
    static cbuf bufs[512];
    uint8_t *data = NULL;
    size_t nb = load_compressed(ETW_TEST_DATA_DIR "/net.4.5.2.x64.etl", &data, bufs, 512);
    size_t bad = 0, runs = 0;
    /* perfview's net.4.5.2.x64.etl: 359 compressed buffers (23.0 MB out). */
    ETW_CHECK_INT(nb, 359);
    if (nb == 0) {
        free(data);
        return;
    }

    /* Every buffer, with its FilledBytes as the output size and with more. */
    for (size_t i = 0; i < nb; i++) {
        bad += !same_as_ref(bufs[i].in, bufs[i].in_len, bufs[i].out_len);
        bad += !same_as_ref(bufs[i].in, bufs[i].in_len, bufs[i].out_len + 1000);
        runs += 2;
    }

    /* One buffer cut short at every length near its start and end (where
     * the decoder leaves its fast way), and every output size there. */
    const cbuf *b = &bufs[nb / 2];
    for (size_t n = 0; n <= b->in_len; n++) {
        if (n == 1200 && b->in_len > 2000) n = b->in_len - 800;
        bad += !same_as_ref(b->in, n, b->out_len);
        runs++;
    }
    for (size_t cap = 0; cap <= b->out_len; cap++) {
        if (cap == 1200 && b->out_len > 2000) cap = b->out_len - 800;
        bad += !same_as_ref(b->in, b->in_len, cap);
        runs++;
    }

    /* Mutated pieces of real buffers: a few bytes changed, a random start
     * (flag words out of step), length and output size. */
    uint8_t *tmp = malloc(4096);
    for (int it = 0; tmp && it < 4000; it++) {
        const cbuf *m = &bufs[rnd() % nb];
        size_t start = (rnd() & 3) ? 0 : rnd() % m->in_len;
        size_t n = m->in_len - start;
        if (n > 4096) n = 256 + rnd() % (4096 - 256);
        memcpy(tmp, m->in + start, n);
        for (unsigned k = rnd() % 6; k && n; k--) {
            size_t pos = rnd() % n;
            tmp[pos] = (rnd() & 1) ? (uint8_t)rnd() : (uint8_t)(tmp[pos] ^ (1u << (rnd() & 7)));
        }
        size_t cap = (rnd() & 1) ? 65536 : rnd() % 20000;
        bad += !same_as_ref(tmp, n, cap);
        runs++;
    }
    free(tmp);
    ETW_CHECK(runs > 8000);
    ETW_CHECK_INT(bad, 0);
    free(data);
}

int main(void) {
    ETW_RUN(test_mxca_alphabet);
    ETW_RUN(test_mxca_abc300);
    ETW_RUN(test_match_lengths);
    ETW_RUN(test_shared_half_byte);
    ETW_RUN(test_stream_ends);
    ETW_RUN(test_hostile);
    ETW_RUN(test_roundtrip_sizes);
    ETW_RUN(test_roundtrip_random);
    ETW_RUN(test_truncation_every_offset);
    ETW_RUN(test_small_output_every_size);
    ETW_RUN(test_real_etl_buffer);
    ETW_RUN(test_against_reference);
    return ETW_TEST_DONE();
}
