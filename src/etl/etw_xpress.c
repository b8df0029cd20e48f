/* etw_xpress.c - plain LZ77 Xpress decompression (MS-XCA 2.3/2.4).
 *
 * Stream layout (MS-XCA 2.3.4 / 2.4.4):
 *   A little-endian 32-bit flag word precedes each group of up to 32 items.
 *   Its bits are read from the most significant down: 0 = a literal byte
 *   follows, 1 = a match follows. A match is a little-endian 16-bit word,
 *   offset-1 in the high 13 bits and length-3 in the low 3 bits; a length
 *   field of 7 means "longer", continued in a half byte (two long matches
 *   share one extra byte: low nibble first, high nibble for the next one),
 *   then a byte, then a 16-bit and finally a 32-bit field.
 *   The encoder pads the last flag word with 1 bits, so the stream ends at a
 *   match flag with no input left; input ending at a flag word boundary or
 *   inside a literal run is accepted as the end too.
 *
 * Speed: a flag word's bits are put in item order, so a count of trailing
 * zeros finds the next match and gives the literal run before it (no shift
 * chain from item to item). Away from the ends - a whole word's worth of
 * input (XP_WORD_IN) and of output room (XP_WORD_OUT) left - a word is
 * decoded without input or output checks (only a match with a byte length,
 * which has no small bound, checks the room after it), the length form
 * picked by one multi-way branch rather than a chain of dependent ones
 * (with hints that keep the common path straight): a literal run (at most
 * 32) is one or two unconditional 16-byte copies, a match is copied in 16-byte
 * steps (offset >= 16), 8-byte steps (8..15) or, below 8, one 8-byte copy
 * when it is no longer than its offset, else its first 8 bytes gathered from
 * the period and then 8-byte steps from the nearest multiple of the offset
 * at least 8 back. Every byte a match writes below its length is copied
 * from a byte already final, so an overlapping match gives exactly the
 * byte-by-byte result of MS-XCA 2.4.4; the steps may run up to 31 bytes
 * past the item's end - bytes the next items overwrite. Near the ends every
 * item checks the input and the output left, still copies wide while
 * XP_LIT_COPY input / XP_FAST_ROOM output room remain, and copies exactly
 * after that (a memset for offset 1, a byte loop for other overlaps).
 * Nothing is written past out_cap; bytes past *out_len may have been
 * written.
 */
#include "etl/etw_xpress.h"

#include <string.h>

#include "common/etw_bytes.h"

/* Bits in one flag word (MS-XCA 2.4.4: BufferedFlagCount = 32). */
#define XP_FLAG_BITS 32u
/* Bytes in one flag word, read little-endian (MS-XCA 2.4.4: "read 4 bytes"). */
#define XP_FLAG_BYTES 4u
/* Bytes of the match word, little-endian (MS-XCA 2.4.4: MatchBytes, 2 bytes). */
#define XP_MATCH_BYTES 2u
/* Low bits of the match word holding length-3 (MS-XCA 2.4.4: MatchBytes mod 8). */
#define XP_LEN_MASK 7u
/* Shift of the offset field in the match word (MS-XCA 2.4.4: MatchBytes / 8). */
#define XP_OFF_SHIFT 3u
/* Offsets are stored minus one (MS-XCA 2.4.4: MatchOffset = MatchBytes/8 + 1). */
#define XP_OFF_BIAS 1u
/* Shortest match; stored lengths are biased by it (MS-XCA 2.4.4: += 3). */
#define XP_MIN_MATCH 3u
/* Length field value meaning "read a half byte" (MS-XCA 2.4.4: == 7). */
#define XP_LEN_HALF 7u
/* Half-byte value meaning "read a whole byte" (MS-XCA 2.4.4: == 15). */
#define XP_LEN_BYTE 15u
/* Byte value meaning "read a 16-bit length" (MS-XCA 2.4.4: == 255). */
#define XP_LEN_WORD 255u
/* 16-bit value meaning "read a 32-bit length" (MS-XCA 2.4.4: == 0). */
#define XP_LEN_DWORD 0u
/* 16/32-bit lengths hold length-3 in full; below 15+7 is invalid
 * (MS-XCA 2.4.4: "If MatchLength < 15 + 7 Return error"). */
#define XP_LEN_FULL_MIN (XP_LEN_BYTE + XP_LEN_HALF)

/* A literal run is copied 32 bytes at a time (a run is at most 32 long). */
#define XP_LIT_COPY 32u
/* Most input one item takes on the fast way: a match word, a half byte and
 * a byte (MS-XCA 2.4.4). A 16- or 32-bit length, 2 or 6 bytes more (read
 * while XP_LIT_COPY are sure to be left), ends the fast way for the rest of
 * its word unless XP_WORD_IN are still left after it. */
#define XP_ITEM_MAX_IN (XP_MATCH_BYTES + 1u + 1u)
/* Input left before a flag word that lets the word and all its 32 items skip
 * the input checks: the word, 32 items of at most XP_ITEM_MAX_IN bytes, and
 * a literal copy of XP_LIT_COPY bytes from where the last one ends. */
#define XP_WORD_IN (XP_FLAG_BYTES + XP_FLAG_BITS * XP_ITEM_MAX_IN + XP_LIT_COPY)
/* Output room kept free past every item on the fast way: the next literal
 * copy (XP_LIT_COPY) and a wide match copy's overrun both fit in it. */
#define XP_FAST_ROOM 32u
/* Longest match whose length needs no byte: a half byte of 14 (MS-XCA
 * 2.4.4: 3 + 7 + 14). */
#define XP_SHORT_MAX (XP_MIN_MATCH + XP_LEN_HALF + XP_LEN_BYTE - 1u)
/* Output room before a flag word that lets its items skip the output
 * checks: 32 items of at most XP_SHORT_MAX bytes and XP_FAST_ROOM of copy
 * overrun; a match with a byte length checks for itself (leaving this much
 * room after it). */
#define XP_WORD_OUT (XP_FLAG_BITS * XP_SHORT_MAX + XP_FAST_ROOM)
/* A flag word is kept with its bits in item order (bit i = item i, 1 = a
 * match) and this bit set above them, so a count of trailing zeros gives the
 * next match or, at the word's end, XP_FLAG_BITS. */
#define XP_FLAG_END ((uint64_t)1 << XP_FLAG_BITS)
/* A long match that opened a shared length byte leaves its high nibble for
 * the next one as XP_HALF_PENDING | nibble; 0 = none pending. */
#define XP_HALF_PENDING 0x10u

/* Branch hints for the fast loop's rare cases. */
#if defined(__GNUC__) || defined(__clang__)
#define XP_LIKELY(c) __builtin_expect(!!(c), 1)
#define XP_UNLIKELY(c) __builtin_expect(!!(c), 0)
#else
#define XP_LIKELY(c) (c)
#define XP_UNLIKELY(c) (c)
#endif

static inline void xp_copy16(uint8_t *dst, const uint8_t *src) { memcpy(dst, src, 16); }
static inline void xp_copy8(uint8_t *dst, const uint8_t *src) { memcpy(dst, src, 8); }

/* Number of trailing zero bits of a nonzero 64-bit value. */
static inline unsigned xp_ctz64(uint64_t v) {
#if defined(__GNUC__) || defined(__clang__)
    return (unsigned)__builtin_ctzll(v);
#else
    unsigned n = 0;
    if (!(v & 0xFFFFFFFFu)) { n += 32; v >>= 32; }
    if (!(v & 0xFFFFu)) { n += 16; v >>= 16; }
    if (!(v & 0xFFu)) { n += 8; v >>= 8; }
    if (!(v & 0xFu)) { n += 4; v >>= 4; }
    if (!(v & 0x3u)) { n += 2; v >>= 2; }
    if (!(v & 0x1u)) { n += 1; }
    return n;
#endif
}

/* The flag word at p with its bits in item order, XP_FLAG_END above them:
 * the little-endian word's bits from the most significant down (MS-XCA
 * 2.4.4), i.e. the bytes from the last, each from its high bit. */
static inline uint64_t xp_flags(const uint8_t *p) {
    uint32_t v = (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
    v = (v >> 1 & 0x55555555u) | (v & 0x55555555u) << 1;
    v = (v >> 2 & 0x33333333u) | (v & 0x33333333u) << 2;
    v = (v >> 4 & 0x0F0F0F0Fu) | (v & 0x0F0F0F0Fu) << 4;
    return (uint64_t)v | XP_FLAG_END;
}

/* Copy n bytes forward from src to dst where either the spans do not overlap
 * or dst - src >= 8. Whole 8-byte steps, then one last 8-byte step that ends
 * exactly at n and may rewrite a few bytes with the same values; with
 * dst - src >= 8 every step reads only bytes that are already final, so the
 * result is that of a byte-by-byte copy. Nothing outside dst[0..n) is touched. */
static inline void xp_copy_fwd8(uint8_t *dst, const uint8_t *src, size_t n) {
    if (n >= 8) {
        size_t k = 0;
        do {
            memcpy(dst + k, src + k, 8);
            k += 8;
        } while (k + 8 <= n);
        if (k < n) memcpy(dst + n - 8, src + n - 8, 8);
    } else if (n >= 4) {
        /* 4..7 bytes: two 4-byte steps; callers guarantee dst - src >= 4 or
         * no overlap here (offset >= length for short overlapping matches). */
        memcpy(dst, src, 4);
        memcpy(dst + n - 4, src + n - 4, 4);
    } else {
        while (n--) *dst++ = *src++;
    }
}

/* out[0..len) = out[-off..-off+len) with byte-by-byte (overlapping) semantics,
 * touching nothing past out[len). */
static inline void xp_copy_match(uint8_t *dst, size_t off, size_t len) {
    const uint8_t *src = dst - off;
    if (off >= 8 || off >= len) {
        xp_copy_fwd8(dst, src, len);
    } else if (off == 1) {
        memset(dst, src[0], len);
    } else {
        while (len--) *dst++ = *src++;
    }
}

/* The rest of a long match length after a length field of 7 (MS-XCA
 * 2.4.4): a half byte (shared by two long matches: low nibble first), then a
 * byte, a 16-bit and a 32-bit field. *len receives the length minus 3.
 * 0 when the input ends or the length is invalid. */
static inline int xp_long_len(const uint8_t *in, size_t in_len, size_t *ipp, unsigned *halfp, uint64_t *len) {
    size_t ip = *ipp;
    uint64_t n;
    if (*halfp == 0) {
        /* First long match: low nibble of a new byte, whose high nibble is
         * kept for the next one. */
        if (ip == in_len) return 0;
        n = in[ip] & 0x0Fu;
        *halfp = XP_HALF_PENDING | (unsigned)(in[ip] >> 4);
        ip++;
    } else {
        /* Second long match: high nibble of that shared byte. */
        n = *halfp & 0x0Fu;
        *halfp = 0;
    }
    if (n == XP_LEN_BYTE) {
        if (ip == in_len) return 0;
        n = in[ip++];
        if (n == XP_LEN_WORD) {
            if (in_len - ip < 2) return 0;
            n = etw_le16(in + ip);
            ip += 2;
            if (n == XP_LEN_DWORD) {
                if (in_len - ip < 4) return 0;
                n = etw_le32(in + ip);
                ip += 4;
            }
            if (n < XP_LEN_FULL_MIN) return 0;
            n -= XP_LEN_FULL_MIN;
        }
        n += XP_LEN_BYTE;
    }
    *len = n + XP_LEN_HALF;
    *ipp = ip;
    return 1;
}

/* For a match at distance off < 8, xp_pat[off][i] = i mod off: the first 8
 * bytes of the match are src[i mod off] (the match repeats with period off). */
static const uint8_t xp_pat[8][8] = {
    {0, 0, 0, 0, 0, 0, 0, 0}, {0, 0, 0, 0, 0, 0, 0, 0}, {0, 1, 0, 1, 0, 1, 0, 1},
    {0, 1, 2, 0, 1, 2, 0, 1}, {0, 1, 2, 3, 0, 1, 2, 3}, {0, 1, 2, 3, 4, 0, 1, 2},
    {0, 1, 2, 3, 4, 5, 0, 1}, {0, 1, 2, 3, 4, 5, 6, 0},
};
/* For off < 8, the smallest multiple of off that is at least 8: past its
 * first 8 bytes the match equals itself that far back. */
static const uint8_t xp_period8[8] = {0, 8, 8, 9, 8, 10, 12, 14};

/* A match of len bytes at distance off with room - len >= XP_FAST_ROOM:
 * whole 16- or 8-byte steps, each reading only bytes that are final (the
 * step is at most the distance it copies from), running past the match's
 * end by less than 32 bytes. */
static inline void xp_match_wide(uint8_t *d, size_t off, size_t len) {
    const uint8_t *src = d - off;
    if (off >= 16) {
        xp_copy16(d, src);
        xp_copy16(d + 16, src + 16);
        if (XP_UNLIKELY(len > 32)) {
            size_t k = 32;
            do {
                xp_copy16(d + k, src + k);
                k += 16;
            } while (k < len);
        }
    } else if (off >= 8) {
        xp_copy8(d, src);
        xp_copy8(d + 8, src + 8);
        if (len > 16) {
            size_t k = 16;
            do {
                xp_copy8(d + k, src + k);
                k += 8;
            } while (k < len);
        }
    } else if (XP_LIKELY(off >= len)) {
        /* Source and target overlap, but every byte below len comes from
         * before d: a copy through a register. */
        uint8_t t[8];
        memcpy(t, src, 8);
        memcpy(d, t, 8);
    } else {
        const uint8_t *pat = xp_pat[off];
        size_t k;
        for (k = 0; k < 8; k++) d[k] = src[pat[k]];
        if (len > 8) {
            src = d + 8 - xp_period8[off];
            k = 8;
            do {
                xp_copy8(d + k, src + k - 8);
                k += 8;
            } while (k < len);
        }
    }
}

/* Where a decode stands between the fast and the careful way. */
typedef struct xp_state {
    size_t ip;     /* InputPosition */
    size_t op;     /* OutputPosition */
    unsigned half; /* pending shared half byte (XP_HALF_PENDING), or 0 */
    uint64_t g;    /* match flags of the current word not yet reached (xp_flags) */
    unsigned cur;  /* the word's next item */
} xp_state;

/* What xp_fast stopped at. */
enum { XP_AT_WORD, XP_IN_WORD, XP_CORRUPT, XP_FULL };

/* Decodes whole flag words while a whole word fits in the input left
 * (XP_WORD_IN) and in the output room (XP_WORD_OUT): no input or output
 * checks per item, wide copies. Stops before a flag word (XP_AT_WORD), after
 * a match that came near the output's end and was copied alone (XP_IN_WORD:
 * s->g holds the rest of the word), at an invalid match (XP_CORRUPT) or with
 * the output full (XP_FULL). */
static int xp_fast(const uint8_t *in, size_t in_len, uint8_t *out, size_t out_cap, xp_state *s) {
    const uint8_t *ip, *in_end;
    uint8_t *op, *out_end;
    unsigned half = s->half;
    uint64_t g = 0;
    unsigned cur = 0;
    int why = XP_AT_WORD;

    /* Not even one word: in or out may be NULL (with a length of 0). */
    if (in_len - s->ip < XP_WORD_IN || out_cap - s->op < XP_WORD_OUT) return XP_AT_WORD;
    ip = in + s->ip;
    in_end = in + in_len;
    op = out + s->op;
    out_end = out + out_cap;

    while ((size_t)(in_end - ip) >= XP_WORD_IN && (size_t)(out_end - op) >= XP_WORD_OUT) {
        g = xp_flags(ip);
        ip += XP_FLAG_BYTES;
        cur = 0;
        for (;;) {
            unsigned pos = xp_ctz64(g); /* the next match, or XP_FLAG_BITS */
            unsigned run = pos - cur;   /* literals before it */
            size_t mb, off, room;
            uint64_t len;

            xp_copy16(op, ip);
            if (XP_UNLIKELY(run > 16)) xp_copy16(op + 16, ip + 16);
            ip += run;
            op += run;
            if (XP_UNLIKELY(pos == XP_FLAG_BITS)) break;
            g &= g - 1;
            cur = pos + 1;
            mb = etw_le16(ip);
            off = (mb >> XP_OFF_SHIFT) + XP_OFF_BIAS;
            len = mb & XP_LEN_MASK;
            {
                /* One multi-way branch on the length form instead of a chain
                 * of dependent ones (as xp_long_len, no input checks). */
                unsigned b = ip[2];
                unsigned is_long = len == XP_LEN_HALF;
                unsigned first = half == 0;
                unsigned nib = (first ? b : half) & 0x0Fu;
                unsigned form = is_long ? 1u + first + 2u * (nib == XP_LEN_BYTE) : 0u;
                switch (form) {
                case 0:
                    ip += XP_MATCH_BYTES;
                    break;
                case 1: /* high nibble of the pending byte */
                    half = 0;
                    len = (uint64_t)nib + XP_LEN_HALF;
                    ip += XP_MATCH_BYTES;
                    break;
                case 2: /* low nibble of a new byte */
                    half = XP_HALF_PENDING | (b >> 4);
                    len = (uint64_t)nib + XP_LEN_HALF;
                    ip += XP_MATCH_BYTES + 1;
                    break;
                default: { /* then a byte */
                    uint64_t n;
                    if (first) {
                        half = XP_HALF_PENDING | (b >> 4);
                        ip += 1;
                    } else {
                        half = 0;
                    }
                    ip += XP_MATCH_BYTES;
                    n = *ip++;
                    if (XP_UNLIKELY(n == XP_LEN_WORD)) {
                        n = etw_le16(ip);
                        ip += 2;
                        if (n == XP_LEN_DWORD) {
                            n = etw_le32(ip);
                            ip += 4;
                        }
                        if (n < XP_LEN_FULL_MIN) {
                            why = XP_CORRUPT;
                            goto out;
                        }
                        len = n;
                        /* more than XP_ITEM_MAX_IN taken: the rest of the
                         * word may not fit */
                        if ((size_t)(in_end - ip) < XP_WORD_IN) goto near_end;
                        n -= XP_LEN_FULL_MIN;
                    }
                    len = n + XP_LEN_BYTE + XP_LEN_HALF;
                    /* The one form whose length has no small bound: it must
                     * leave the room of a whole word behind it. */
                    if (XP_UNLIKELY((size_t)(out_end - op) < len + XP_MIN_MATCH + XP_WORD_OUT)) goto near_end;
                    break;
                }
                }
            }
            len += XP_MIN_MATCH;
            if (XP_UNLIKELY(off > (size_t)(op - out))) { /* refers before the output start */
                why = XP_CORRUPT;
                goto out;
            }
            xp_match_wide(op, off, (size_t)len);
            op += (size_t)len;
            continue;

        near_end:
            len += XP_MIN_MATCH;
            if (off > (size_t)(op - out)) { /* refers before the output start */
                why = XP_CORRUPT;
                goto out;
            }
            room = (size_t)(out_end - op);
            if (room >= len + XP_FAST_ROOM) {
                xp_match_wide(op, off, (size_t)len);
                op += (size_t)len;
                why = XP_IN_WORD;
                goto out;
            }
            /* Near the output's end: this match exactly, then the rest of the
             * word the careful way. */
            if (len > room) {
                xp_copy_match(op, off, room);
                op += room;
                why = XP_FULL;
                goto out;
            }
            xp_copy_match(op, off, (size_t)len);
            op += (size_t)len;
            why = XP_IN_WORD;
            goto out;
        }
    }
out:
    s->ip = (size_t)(ip - in);
    s->op = (size_t)(op - out);
    s->half = half;
    s->g = g;
    s->cur = cur;
    return why;
}

/* xp_careful ran to the end of the word (not an etw_status value). */
#define XP_WORD_END 1000

/* The careful way, to the end of the current word: every step checks the
 * input and the output left and copies exactly. Returns XP_WORD_END when the
 * word is used up, else the status to end the decode with. */
#if defined(__GNUC__) || defined(__clang__)
__attribute__((noinline))
#endif
static int xp_careful(const uint8_t *in, size_t in_len, uint8_t *out, size_t out_cap, xp_state *s) {
    for (;;) {
        unsigned pos = xp_ctz64(s->g); /* the next match, or XP_FLAG_BITS */
        unsigned run = pos - s->cur;
        size_t mb, off, room;
        uint64_t len;
        if (run && in_len - s->ip >= XP_LIT_COPY && out_cap - s->op >= XP_LIT_COPY) {
            /* the whole run is in the input and fits: wide copies */
            xp_copy16(out + s->op, in + s->ip);
            if (run > 16) xp_copy16(out + s->op + 16, in + s->ip + 16);
            s->ip += run;
            s->op += run;
        } else if (run) {
            size_t n = run;
            size_t in_left = in_len - s->ip;
            size_t out_left = out_cap - s->op;
            int input_ends = 0;
            if (n > in_left) {
                n = in_left; /* input ends inside the run: accepted */
                input_ends = 1;
            }
            if (n > out_left) {
                xp_copy_fwd8(out + s->op, in + s->ip, out_left);
                s->op = out_cap;
                return ETW_E_SMALL_BUFFER;
            }
            xp_copy_fwd8(out + s->op, in + s->ip, n);
            s->ip += n;
            s->op += n;
            if (input_ends) return ETW_OK;
        }
        if (pos == XP_FLAG_BITS) return XP_WORD_END;
        s->g &= s->g - 1;
        s->cur = pos + 1;

        /* A 1 flag: a match, or the end marker if the input is used up. */
        if (s->ip == in_len) return ETW_OK;
        if (in_len - s->ip < XP_MATCH_BYTES) return ETW_E_DECOMPRESS;
        mb = etw_le16(in + s->ip);
        s->ip += XP_MATCH_BYTES;
        off = (mb >> XP_OFF_SHIFT) + XP_OFF_BIAS;
        len = mb & XP_LEN_MASK;
        if (len == XP_LEN_HALF && !xp_long_len(in, in_len, &s->ip, &s->half, &len)) return ETW_E_DECOMPRESS;
        len += XP_MIN_MATCH;
        if (off > s->op) return ETW_E_DECOMPRESS; /* refers before the output start */
        room = out_cap - s->op;
        if (room >= len + XP_FAST_ROOM) {
            xp_match_wide(out + s->op, off, (size_t)len);
            s->op += (size_t)len;
            continue;
        }
        if (len > room) {
            xp_copy_match(out + s->op, off, room);
            s->op = out_cap;
            return ETW_E_SMALL_BUFFER;
        }
        xp_copy_match(out + s->op, off, (size_t)len);
        s->op += (size_t)len;
    }
}

etw_status etw_xpress_decompress(const uint8_t *in, size_t in_len,
                                 uint8_t *out, size_t out_cap, size_t *out_len) {
    xp_state s = {0, 0, 0, 0, 0};
    int r;

    if (!out_len) return ETW_E_INVALID_ARG;
    *out_len = 0;
    if ((!in && in_len) || (!out && out_cap)) return ETW_E_INVALID_ARG;

    for (;;) {
        switch (xp_fast(in, in_len, out, out_cap, &s)) {
        case XP_CORRUPT: r = ETW_E_DECOMPRESS; goto done;
        case XP_FULL: r = ETW_E_SMALL_BUFFER; goto done;
        case XP_IN_WORD: break;
        default:
            if (s.ip == in_len) { /* input ends at a flag word boundary */
                r = ETW_OK;
                goto done;
            }
            if (in_len - s.ip < XP_FLAG_BYTES) { /* truncated flag word */
                r = ETW_E_DECOMPRESS;
                goto done;
            }
            s.g = xp_flags(in + s.ip);
            s.cur = 0;
            s.ip += XP_FLAG_BYTES;
            break;
        }
        r = xp_careful(in, in_len, out, out_cap, &s);
        if (r != XP_WORD_END) break;
    }
done:
    *out_len = s.op;
    return (etw_status)r;
}
