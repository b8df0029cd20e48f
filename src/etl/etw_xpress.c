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
 * Speed: literal runs are found with a count-leading-zeros on the flag word
 * and copied together; matches are copied 8 bytes at a time when the offset
 * is at least 8 or the match does not overlap its source (each 8-byte step
 * then reads only finished bytes), with a memset for offset 1 and a byte
 * loop for the other overlapping cases, so an overlapping match gives
 * exactly the byte-by-byte result of MS-XCA 2.4.4. Away from the ends of
 * the input and the output (XP_FAST_IN / XP_FAST_OUT bytes left) a literal
 * run is one or two unconditional 16-byte copies and a match is copied in
 * whole 16- or 8-byte steps that may run up to 15 bytes past its end - bytes
 * the next items overwrite; near the ends every copy is exact. Nothing is
 * written past out_cap; bytes past *out_len may have been written.
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

/* Input left and output room that make an item safe to take the wide way:
 * its literal run (at most 31 bytes before a match) is copied as 32, then
 * come at most 2 + 8 bytes of match word and long length. */
#define XP_FAST_IN 48u
#define XP_FAST_OUT 48u
/* A wide match copy runs past the match's end by less than this. */
#define XP_MATCH_SLOP 16u

static inline void xp_copy16(uint8_t *dst, const uint8_t *src) { memcpy(dst, src, 16); }

/* Number of leading zero bits of a nonzero 32-bit value. */
static inline unsigned xp_clz32(uint32_t v) {
#if defined(__GNUC__) || defined(__clang__)
    return (unsigned)__builtin_clz(v);
#else
    unsigned n = 0;
    if (!(v & 0xFFFF0000u)) { n += 16; v <<= 16; }
    if (!(v & 0xFF000000u)) { n += 8; v <<= 8; }
    if (!(v & 0xF0000000u)) { n += 4; v <<= 4; }
    if (!(v & 0xC0000000u)) { n += 2; v <<= 2; }
    if (!(v & 0x80000000u)) { n += 1; }
    return n;
#endif
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

/* out[0..len) = out[-off..-off+len) with byte-by-byte (overlapping) semantics. */
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
static inline int xp_long_len(const uint8_t *in, size_t in_len, size_t *ipp, size_t *halfp, uint64_t *len) {
    size_t ip = *ipp;
    uint64_t n;
    if (*halfp == 0) {
        /* First long match: low nibble of a new byte, whose high nibble is
         * kept for the next one. */
        if (ip == in_len) return 0;
        n = in[ip] & 0x0Fu;
        *halfp = ip;
        ip++;
    } else {
        /* Second long match: high nibble of that shared byte. */
        n = in[*halfp] >> 4;
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

/* A match of len bytes at distance off with room - len >= XP_MATCH_SLOP:
 * whole 16- or 8-byte steps (each reads only final bytes when off is at
 * least the step), overrunning the end by less than a step. */
static inline void xp_match_wide(uint8_t *d, size_t off, size_t len) {
    const uint8_t *src = d - off;
    uint8_t *end = d + len;
    if (off >= 16) {
        do {
            xp_copy16(d, src);
            d += 16;
            src += 16;
        } while (d < end);
    } else if (off >= 8) {
        do {
            memcpy(d, src, 8);
            d += 8;
            src += 8;
        } while (d < end);
    } else {
        xp_copy_match(d, off, len);
    }
}

etw_status etw_xpress_decompress(const uint8_t *in, size_t in_len,
                                 uint8_t *out, size_t out_cap, size_t *out_len) {
    size_t ip = 0;   /* InputPosition */
    size_t op = 0;   /* OutputPosition */
    size_t half = 0; /* LastLengthHalfByte: 0 = none (never a valid position,
                        the first 4 bytes are a flag word) */
    etw_status st = ETW_OK;

    if (!out_len) return ETW_E_INVALID_ARG;
    *out_len = 0;
    if ((!in && in_len) || (!out && out_cap)) return ETW_E_INVALID_ARG;

    for (;;) {
        uint32_t flags;
        unsigned nbits;

        if (ip == in_len) goto done; /* input ends at a flag word boundary */
        if (in_len - ip < XP_FLAG_BYTES) goto corrupt; /* truncated flag word */
        flags = etw_le32(in + ip);
        ip += XP_FLAG_BYTES;
        nbits = XP_FLAG_BITS;

        /* `flags` keeps the unread flags left-aligned; shifted-in bits are 0,
         * so its leading zeros (capped by nbits) are the next literal run. */
        while (nbits) {
            unsigned run = flags ? xp_clz32(flags) : nbits;
            size_t mb, off;
            uint64_t len;
            size_t room;

            if (in_len - ip >= XP_FAST_IN && out_cap - op >= XP_FAST_OUT) {
                /* The wide way: the run (<= 32 bytes, all present) as one or
                 * two 16-byte copies, then the match (whose word and long
                 * length are present too). */
                xp_copy16(out + op, in + ip);
                if (run > 16) xp_copy16(out + op + 16, in + ip + 16);
                ip += run;
                op += run;
                nbits -= run;
                if (!nbits) break;
                flags <<= run; /* run < 32 here */
                flags <<= 1;
                nbits--;
                mb = etw_le16(in + ip);
                ip += XP_MATCH_BYTES;
                off = (mb >> XP_OFF_SHIFT) + XP_OFF_BIAS;
                len = mb & XP_LEN_MASK;
                if (len == XP_LEN_HALF && !xp_long_len(in, in_len, &ip, &half, &len)) goto corrupt;
                len += XP_MIN_MATCH;
                if (off > op) goto corrupt; /* refers before the output start */
                room = out_cap - op;
                if (len <= room && room - len >= XP_MATCH_SLOP) {
                    xp_match_wide(out + op, off, (size_t)len);
                    op += (size_t)len;
                    continue;
                }
                if (len > room) {
                    len = room;
                    st = ETW_E_SMALL_BUFFER;
                }
                xp_copy_match(out + op, off, (size_t)len);
                op += (size_t)len;
                if (st != ETW_OK) goto done;
                continue;
            }

            if (run) {
                size_t n = run;
                size_t in_left = in_len - ip;
                size_t out_left = out_cap - op;
                int input_ends = 0;
                if (n > in_left) {
                    n = in_left; /* input ends inside the run: accepted */
                    input_ends = 1;
                }
                if (n > out_left) {
                    xp_copy_fwd8(out + op, in + ip, out_left);
                    op = out_cap;
                    st = ETW_E_SMALL_BUFFER;
                    goto done;
                }
                xp_copy_fwd8(out + op, in + ip, n);
                ip += n;
                op += n;
                if (input_ends) goto done;
                nbits -= run;
                if (!nbits) break;
                flags <<= run; /* run < 32 here: nbits was > run */
            }

            /* A 1 flag: a match, or the end marker if the input is used up. */
            flags <<= 1;
            nbits--;
            if (ip == in_len) goto done;
            if (in_len - ip < XP_MATCH_BYTES) goto corrupt;
            mb = etw_le16(in + ip);
            ip += XP_MATCH_BYTES;
            off = (mb >> XP_OFF_SHIFT) + XP_OFF_BIAS;
            len = mb & XP_LEN_MASK;
            if (len == XP_LEN_HALF && !xp_long_len(in, in_len, &ip, &half, &len)) goto corrupt;
            len += XP_MIN_MATCH;

            if (off > op) goto corrupt; /* refers before the output start */
            room = out_cap - op;
            if (len > room) {
                len = room;
                st = ETW_E_SMALL_BUFFER;
            }
            xp_copy_match(out + op, off, (size_t)len);
            op += (size_t)len;
            if (st != ETW_OK) goto done;
        }
    }

corrupt:
    st = ETW_E_DECOMPRESS;
done:
    *out_len = op;
    return st;
}
