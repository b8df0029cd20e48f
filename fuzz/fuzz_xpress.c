/* fuzz_xpress.c - libFuzzer target for etw_xpress_decompress.
 *
 * Decompresses the input into a heap block of exactly out_cap bytes (so ASan
 * catches any write past it; the input is what libFuzzer hands over, so a
 * read past in_len is caught too) and checks the contract: a known status,
 * *out_len never above out_cap, ETW_E_SMALL_BUFFER only with a full buffer.
 * Then decodes again with the byte-by-byte reference of tests/xpress_ref.h
 * and aborts unless status, *out_len and the bytes below it are the same:
 * the fast paths must give exactly what MS-XCA 2.4.4's pseudocode gives.
 * The first input byte also picks a smaller out_cap now and then, so the
 * "output full" paths are reached as often as the normal ones.
 *
 * Build: clang -g -O1 -fsanitize=fuzzer,address,undefined -Iinclude -Isrc \
 *        fuzz/fuzz_xpress.c src/etl/etw_xpress.c -o fuzz_xpress
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../tests/xpress_ref.h"
#include "etl/etw_xpress.h"

#define FUZZ_OUT_CAP (64u * 1024u)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    size_t cap = FUZZ_OUT_CAP;
    size_t out_len = 0, ref_len = 0;
    uint8_t *out, *ref;
    etw_status st, ref_st;

    /* Inputs whose first byte is below 0x10 use a small output buffer whose
     * size comes from the next byte; the stream still starts at data[0]. */
    if (size >= 2 && data[0] < 0x10) cap = (size_t)data[1] * 17u;
    out = malloc(cap ? cap : 1);
    ref = malloc(cap ? cap : 1);
    if (!out || !ref) {
        free(out);
        free(ref);
        return 0;
    }

    st = etw_xpress_decompress(data, size, out, cap, &out_len);
    if (st != ETW_OK && st != ETW_E_DECOMPRESS && st != ETW_E_SMALL_BUFFER) abort();
    if (out_len > cap) abort();
    if (st == ETW_E_SMALL_BUFFER && out_len != cap) abort();

    ref_st = xref_decompress(data, size, ref, cap, &ref_len);
    if (st != ref_st || out_len != ref_len || memcmp(out, ref, out_len) != 0) abort();

    free(out);
    free(ref);
    return 0;
}
