/* fuzz_wpp.c - libFuzzer target for the TMF parser (src/wpp/etw_tmf.c) and
 * the WPP formatter (src/wpp/etw_wpp_format.c).
 *
 * Input: byte 0: bit 0 a 4-byte pointer size; bytes 1-2 (u16 LE) the TMF
 * text length n; then n bytes of TMF text, parsed after a fixed GUID line
 * (so #typev lines have a GUID), and again as a whole text of its own;
 * the rest is the payload given to every message 0..511 of that GUID.
 * Seeds: fuzz/corpus/wpp/ (messages of the nefarius TMF files).
 *
 * Checks: the parser returns ETW_OK, ETW_E_CORRUPT or ETW_E_LIMIT (never
 * anything else) and adds nothing on error; formatting returns ETW_OK,
 * ETW_E_LIMIT, ETW_E_TRUNCATED or ETW_E_UNSUPPORTED; a message is at most
 * ETW_WPP_MAX_OUT bytes, cut at a whole character; the same event gives
 * the same text twice; its JSON form is valid UTF-8. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "etwdecode/etw_wpp.h"
#include "format/etw_text.h"
#include "fuzz_json.h"
#include "wpp/etw_tmf.h"
#include "wpp/etw_wpp_format.h"

#define FUZZ_ASSERT(c)                                                         \
    do {                                                                       \
        if (!(c)) {                                                            \
            fprintf(stderr, "%s:%d: assertion failed: %s\n", __FILE__,         \
                    __LINE__, #c);                                             \
            abort();                                                           \
        }                                                                      \
    } while (0)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define HEAD "aaaaaaaa-bbbb-cccc-dddd-eeeeeeeeeeee Fuzz // SRC=f.c MJ= MN=\n"

static etw_text t1, t2, js;
static int ready;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (!ready) {
        etw_text_init(&t1, NULL);
        etw_text_init(&t2, NULL);
        etw_text_init(&js, NULL);
        ready = 1;
    }
    if (size < 3) return 0;
    uint8_t ptr = (data[0] & 1) ? 4 : 8;
    size_t n = (size_t)(data[1] | (data[2] << 8));
    if (n > size - 3) n = size - 3;
    const char *tmf = (const char *)data + 3;
    const uint8_t *payload = data + 3 + n;
    size_t plen = size - 3 - n;

    etw_wpp_set *alone = NULL;
    if (etw_wpp_set_new(&alone, NULL) != ETW_OK) return 0;
    etw_status st = etw_wpp_add_tmf_text(alone, tmf, n, "fuzz");
    FUZZ_ASSERT(st == ETW_OK || st == ETW_E_CORRUPT || st == ETW_E_LIMIT);
    if (st != ETW_OK) FUZZ_ASSERT(etw_wpp_count(alone) == 0);
    etw_wpp_set_free(alone);

    char *text = malloc(sizeof HEAD + n);
    if (!text) return 0;
    memcpy(text, HEAD, sizeof HEAD - 1);
    memcpy(text + sizeof HEAD - 1, tmf, n);
    etw_wpp_set *s = NULL;
    if (etw_wpp_set_new(&s, NULL) != ETW_OK) {
        free(text);
        return 0;
    }
    st = etw_wpp_add_tmf_text(s, text, sizeof HEAD - 1 + n, "fuzz");
    FUZZ_ASSERT(st == ETW_OK || st == ETW_E_CORRUPT || st == ETW_E_LIMIT);
    if (st == ETW_OK) {
        etw_event ev;
        memset(&ev, 0, sizeof ev);
        ev.form = ETW_FORM_MESSAGE;
        ev.pointer_size = ptr;
        ev.user_data = plen ? payload : NULL;
        ev.user_data_len = (uint32_t)plen;
        ev.timestamp = 132000000000000000LL;
        etw_tmf_parse_guid("aaaaaaaa-bbbb-cccc-dddd-eeeeeeeeeeee", 36, &ev.provider);
        for (uint32_t num = 0; num < 512; num++) {
            const etw_wpp_message *m = etw_wpp_find(s, &ev.provider, (uint16_t)num);
            if (!m) continue;
            ev.message_number = (uint16_t)num;
            char why[256];
            etw_text_clear(&t1);
            etw_text_clear(&t2);
            etw_status a = etw_wpp_format_text(&t1, m, &ev, why, sizeof why);
            etw_status b = etw_wpp_format_text(&t2, m, &ev, why, sizeof why);
            FUZZ_ASSERT(a == b);
            FUZZ_ASSERT(a == ETW_OK || a == ETW_E_LIMIT || a == ETW_E_TRUNCATED || a == ETW_E_UNSUPPORTED ||
                        a == ETW_E_NOMEM);
            FUZZ_ASSERT(t1.len == t2.len && (t1.len == 0 || memcmp(t1.data, t2.data, t1.len) == 0));
            FUZZ_ASSERT(t1.len <= ETW_WPP_MAX_OUT);
            if (a != ETW_OK && a != ETW_E_LIMIT) FUZZ_ASSERT(t1.len == 0);
            etw_text_clear(&js);
            etw_text_json_utf8(&js, t1.data ? t1.data : "", t1.len);
            FUZZ_ASSERT(etw_text_status(&js) != ETW_OK || utf8_valid((const unsigned char *)js.data, js.len));
        }
    }
    etw_wpp_set_free(s);
    free(text);
    return 0;
}
