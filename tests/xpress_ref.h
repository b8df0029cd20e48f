/* xpress_ref.h - a plain byte-by-byte LZ77 Xpress decoder, the test oracle
 * for src/etl/etw_xpress.c (tests/test_xpress.c, fuzz/fuzz_xpress.c).
 *
 * Follows the decompression pseudocode of MS-XCA 2.4.4 one item and one byte
 * at a time, with no fast paths, and ends the way etw_xpress_decompress
 * documents: ETW_OK when the input runs out at a flag word boundary, inside
 * a literal run or at a match flag; ETW_E_DECOMPRESS for a truncated flag
 * word, match word or long length, an invalid 16/32-bit length or a match
 * reaching before the output start; ETW_E_SMALL_BUFFER when a byte is due
 * and out is full. *out_len counts the bytes written.
 */
#ifndef XPRESS_REF_H
#define XPRESS_REF_H

#include <stddef.h>
#include <stdint.h>

#include "etwdecode/etw_status.h"

static etw_status xref_decompress(const uint8_t *in, size_t in_len, uint8_t *out, size_t out_cap,
                                  size_t *out_len) {
    size_t ip = 0, op = 0;
    size_t half = 0; /* LastLengthHalfByte: 0 = none */
    uint32_t flags = 0;
    unsigned left = 0; /* flags not yet used in `flags` */
    etw_status st = ETW_OK;

    for (;;) {
        if (left == 0) {
            if (ip == in_len) break;
            if (in_len - ip < 4) {
                st = ETW_E_DECOMPRESS;
                break;
            }
            flags = (uint32_t)in[ip] | (uint32_t)in[ip + 1] << 8 | (uint32_t)in[ip + 2] << 16 |
                    (uint32_t)in[ip + 3] << 24;
            ip += 4;
            left = 32;
        }
        left--;
        if (!(flags >> left & 1u)) { /* a literal */
            if (ip == in_len) break;
            if (op == out_cap) {
                st = ETW_E_SMALL_BUFFER;
                break;
            }
            out[op++] = in[ip++];
            continue;
        }
        /* a match, or the end */
        if (ip == in_len) break;
        if (in_len - ip < 2) {
            st = ETW_E_DECOMPRESS;
            break;
        }
        unsigned mb = (unsigned)in[ip] | (unsigned)in[ip + 1] << 8;
        ip += 2;
        size_t off = (mb >> 3) + 1;
        uint64_t len = mb & 7u;
        if (len == 7) {
            if (half == 0) {
                if (ip == in_len) {
                    st = ETW_E_DECOMPRESS;
                    break;
                }
                half = ip;
                len = in[ip++] & 15u;
            } else {
                len = in[half] >> 4;
                half = 0;
            }
            if (len == 15) {
                if (ip == in_len) {
                    st = ETW_E_DECOMPRESS;
                    break;
                }
                len = in[ip++];
                if (len == 255) {
                    if (in_len - ip < 2) {
                        st = ETW_E_DECOMPRESS;
                        break;
                    }
                    len = (uint64_t)in[ip] | (uint64_t)in[ip + 1] << 8;
                    ip += 2;
                    if (len == 0) {
                        if (in_len - ip < 4) {
                            st = ETW_E_DECOMPRESS;
                            break;
                        }
                        len = (uint64_t)in[ip] | (uint64_t)in[ip + 1] << 8 | (uint64_t)in[ip + 2] << 16 |
                              (uint64_t)in[ip + 3] << 24;
                        ip += 4;
                    }
                    if (len < 15 + 7) {
                        st = ETW_E_DECOMPRESS;
                        break;
                    }
                    len -= 15 + 7;
                }
                len += 15;
            }
            len += 7;
        }
        len += 3;
        if (off > op) {
            st = ETW_E_DECOMPRESS;
            break;
        }
        for (; len; len--) {
            if (op == out_cap) {
                st = ETW_E_SMALL_BUFFER;
                break;
            }
            out[op] = out[op - off];
            op++;
        }
        if (st != ETW_OK) break;
    }
    *out_len = op;
    return st;
}

#endif
