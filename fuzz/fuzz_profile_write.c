/* fuzz_profile_write.c - libFuzzer target for the profile writers
 * (etw_profile_write: folded, speedscope, Firefox) on profiles made from
 * hostile traces: the input is a trace file, every event fed to a profile
 * whose sample function counts every event (weight 1.5 for odd ids, so
 * fractional counts are written too), then the three formats are written to
 * memory. Frame and process names come from the trace (image file names,
 * .NET method names, process image names).
 *
 * Checks (abort on violation): every write returns ETW_OK; every output is
 * valid UTF-8 with no control character but the line ends; folded is lines
 * of "STACK COUNT" (COUNT digits with at most one '.', no ';' or control
 * character inside a frame since frames cannot hold them); speedscope and
 * Firefox are one JSON value (etw_jscan_value_end reaches the final '\n').
 *
 * Seeds: fuzz/corpus/etwdump/ (the same small real traces).
 * Build: cmake -DETW_FUZZ=ON -DCMAKE_C_COMPILER=clang (target fuzz_profile_write).
 * Run:   build-fuzz/fuzz_profile_write -max_len=262144 /tmp/c fuzz/corpus/etwdump */
#define _POSIX_C_SOURCE 200809L /* open_memstream */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "etwdecode/etwdecode.h"
#include "format/etw_jscan.h"
#include "format/etw_text.h"

#define FUZZ_ASSERT(c)                                                         \
    do {                                                                       \
        if (!(c)) {                                                            \
            fprintf(stderr, "%s:%d: assertion failed: %s\n", __FILE__,         \
                    __LINE__, #c);                                             \
            abort();                                                           \
        }                                                                      \
    } while (0)

static int every_event(void *ctx, const etw_event *ev, const etw_schema *s, uint32_t pid, uint32_t tid,
                       double *weight) {
    (void)ctx;
    (void)s;
    (void)pid;
    (void)tid;
    *weight = ev->id & 1 ? 1.5 : 1.0;
    return 1;
}

static void check_text(const char *s, size_t n) {
    FUZZ_ASSERT(etw_utf8_valid((const uint8_t *)s, n));
    for (size_t i = 0; i < n; i++) FUZZ_ASSERT((unsigned char)s[i] >= 0x20 || s[i] == '\n');
}

static void check_folded(const char *s, size_t n) {
    check_text(s, n);
    size_t start = 0;
    for (size_t i = 0; i < n; i++) {
        if (s[i] != '\n') continue;
        /* the count after the last space: digits, at most one '.' */
        size_t sp = i;
        while (sp > start && s[sp - 1] != ' ') sp--;
        FUZZ_ASSERT(sp > start && sp < i);
        int dots = 0;
        for (size_t k = sp; k < i; k++) {
            FUZZ_ASSERT((s[k] >= '0' && s[k] <= '9') || (s[k] == '.' && !dots++));
        }
        start = i + 1;
    }
    FUZZ_ASSERT(start == n);
}

static void check_json(const char *s, size_t n) {
    check_text(s, n);
    FUZZ_ASSERT(n >= 3 && s[0] == '{' && s[n - 1] == '\n');
    FUZZ_ASSERT(etw_jscan_value_end(s, n, 0) == n - 1);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    etw_reader_options ro;
    memset(&ro, 0, sizeof ro);
    ro.max_buffer_size = 1u << 20;
    etw_reader *r;
    if (etw_reader_open_memory(&r, data, size, &ro) != ETW_OK) return 0;
    etw_decoder *dec;
    FUZZ_ASSERT(etw_decoder_new(&dec, NULL) == ETW_OK);
    etw_profile_options po;
    memset(&po, 0, sizeof po);
    po.decoder = dec;
    po.is_sample = every_event;
    etw_profile *p;
    FUZZ_ASSERT(etw_profile_new(&p, &po) == ETW_OK);
    etw_event ev;
    uint64_t n = 0;
    while (etw_reader_next(r, &ev) == ETW_OK && n++ < 200000) {
        const etw_schema *s = NULL;
        if (!ev.is_logfile_header) etw_decoder_resolve(dec, &ev, &s, NULL);
        etw_status st = etw_profile_add(p, &ev, s);
        FUZZ_ASSERT(st == ETW_OK || st == ETW_E_LIMIT);
    }
    FUZZ_ASSERT(etw_profile_finish(p) == ETW_OK);
    for (int f = ETW_PROFILE_FOLDED; f <= ETW_PROFILE_FIREFOX; f++) {
        char *buf = NULL;
        size_t len = 0;
        FILE *out = open_memstream(&buf, &len);
        FUZZ_ASSERT(out != NULL);
        FUZZ_ASSERT(etw_profile_write(p, (etw_profile_format)f, out) == ETW_OK);
        FUZZ_ASSERT(fclose(out) == 0);
        if (f == ETW_PROFILE_FOLDED) check_folded(buf, len);
        else check_json(buf, len);
        free(buf);
    }
    etw_profile_free(p);
    etw_decoder_free(dec);
    etw_reader_close(r);
    return 0;
}
