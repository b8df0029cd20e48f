/* fuzz_lznt1.c - libFuzzer target for LZNT1 decompression (src/common/etw_lznt1.c)
 * and the JSON writer's LZNT1 text values (ETW_OUTTYPE_LZNT1_UTF16).
 *
 * Checks: a known status; counting alone and decompressing with a sink agree
 * on status and size; the size never passes the bound (the first input byte
 * picks a small one now and then, so the limit path is reached); no sink call
 * gives more than 4096 bytes or passes the bound. Then the rest of the input
 * as a WinSat Xml value through etw_value_json: valid UTF-8 and one valid
 * JSON string (the text, or hex when it does not decompress).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/etw_lznt1.h"
#include "etwdecode/etw_decode.h"
#include "format/etw_fields_json.h"
#include "format/etw_text.h"
#include "fuzz_json.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

typedef struct {
    size_t total, max;
} count_sink;

static etw_status count(void *ctx, const uint8_t *p, size_t n) {
    count_sink *c = ctx;
    (void)p;
    if (n == 0 || n > ETW_LZNT1_CHUNK || n > c->max - c->total) abort();
    c->total += n;
    return ETW_OK;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 1) return 0;
    size_t max = data[0] < 0x20 ? (size_t)data[0] * 300u : (size_t)1 << 20;
    const uint8_t *src = data + 1;
    size_t n = size - 1;

    size_t counted = 0;
    etw_status a = etw_lznt1_decompress(src, n, max, NULL, NULL, &counted);
    if (a != ETW_OK && a != ETW_E_CORRUPT && a != ETW_E_LIMIT) abort();
    count_sink c = {0, max};
    size_t total = 0;
    etw_status b = etw_lznt1_decompress(src, n, max, count, &c, &total);
    if (a != b || counted != total || c.total != total || total > max) abort();

    etw_value v;
    memset(&v, 0, sizeof v);
    v.kind = ETW_VALUE_SCALAR;
    v.in_type = ETW_INTYPE_BINARY;
    v.out_type = ETW_OUTTYPE_LZNT1_UTF16;
    v.data = n ? src : NULL;
    v.size = (uint32_t)n;
    etw_text t;
    etw_text_init(&t, NULL);
    etw_value_json(&t, &v);
    if (!t.failed) {
        if (!utf8_valid((const unsigned char *)t.data, t.len)) abort();
        if (!json_valid(t.data, t.len)) abort();
        if (t.len < 2 || t.data[0] != '"') abort();
    }
    etw_text_free(&t);
    return 0;
}
