/* fuzz_xpress.c - libFuzzer target for etw_xpress_decompress.
 *
 * Decompresses the input into a 64 KiB heap block (allocated per call, so
 * ASan catches any write past out_cap) and checks the contract: a known
 * status, *out_len never above out_cap, ETW_E_SMALL_BUFFER only with a full
 * buffer. The first input byte also picks a smaller out_cap now and then, so
 * the "output full" paths are reached as often as the normal ones.
 *
 * Build: clang -g -O1 -fsanitize=fuzzer,address,undefined -Iinclude -Isrc \
 *        fuzz/fuzz_xpress.c src/etl/etw_xpress.c -o fuzz_xpress
 */
#include <stdint.h>
#include <stdlib.h>

#include "etl/etw_xpress.h"

#define FUZZ_OUT_CAP (64u * 1024u)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    uint8_t *out = malloc(FUZZ_OUT_CAP);
    size_t cap = FUZZ_OUT_CAP;
    size_t out_len = 0;
    etw_status st;

    if (!out) return 0;
    /* Inputs whose first byte is below 0x10 use a small output buffer whose
     * size comes from the next byte; the stream still starts at data[0]. */
    if (size >= 2 && data[0] < 0x10) cap = (size_t)data[1] * 17u;

    st = etw_xpress_decompress(data, size, out, cap, &out_len);
    if (st != ETW_OK && st != ETW_E_DECOMPRESS && st != ETW_E_SMALL_BUFFER) abort();
    if (out_len > cap) abort();
    if (st == ETW_E_SMALL_BUFFER && out_len != cap) abort();

    free(out);
    return 0;
}
