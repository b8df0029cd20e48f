/* fuzz_etwdump.c - libFuzzer target for the whole path etwdump runs: the
 * input's bytes are a trace file, read by the container reader, decoded
 * with every schema source (a user manifest given, EventSource manifests
 * and MetaData records learned from the trace by the pre-scan and as the
 * events go, TraceLogging, MOF) and written as JSON Lines with messages on,
 * as `etwdump --messages -m HTTP_Server.man TRACE` does (tools/etwdump/
 * main.c and output.c).
 *
 * Seeds: fuzz/corpus/etwdump/ - small real traces of tests/data (whole, or
 * their first buffers): primitive-types (TraceLogging), SelfDescribingSingle-
 * Event (EventSource self-describing), smallEtlFile (32-bit, MOF),
 * lxcore_kernel (kernel), HTTP_Server (manifest events the given manifest
 * decodes, with messages), net.4.5.2.x64 (MetaData records, EventSource
 * manifest chunks, compressed buffers).
 *
 * Checks (abort on violation): open fails only with a known status; every
 * line is one JSON object ending in '\n', valid UTF-8, with no key repeated
 * in any object (docs/json-output.md), at most LINE_MAX_BYTES; iteration
 * ends with ETW_END within
 * a bound on the events; the output of one input is at most OUT_MAX bytes
 * (the amplification bounds of docs/limits.md keep it far below).
 *
 * The manifest is read once from ETW_TEST_DATA_DIR (set by CMake) and
 * parsed into a fresh decoder for every input, so no state crosses inputs.
 * Build: cmake -DETW_FUZZ=ON -DCMAKE_C_COMPILER=clang (target fuzz_etwdump).
 * Run:   build-fuzz/fuzz_etwdump -max_len=262144 /tmp/c fuzz/corpus/etwdump */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "etwdecode/etwdecode.h"
#include "fuzz_json.h"

#ifndef ETW_TEST_DATA_DIR
#define ETW_TEST_DATA_DIR "tests/data"
#endif

#define FUZZ_ASSERT(c)                                                         \
    do {                                                                       \
        if (!(c)) {                                                            \
            fprintf(stderr, "%s:%d: assertion failed: %s\n", __FILE__,         \
                    __LINE__, #c);                                             \
            abort();                                                           \
        }                                                                      \
    } while (0)

#define FUZZ_MAX_BUFFER (1u << 20)
/* As fuzz_reader.c: buffers start at least 0x48 bytes apart and hold at
 * most max_buffer_size / 8 records. */
#define EVENT_BOUND(size) (((uint64_t)(size) / 0x48u + 1u) * (FUZZ_MAX_BUFFER / 8u) + 2u)
#define LINE_MAX_BYTES ((size_t)64 << 20)
#define OUT_MAX ((uint64_t)1 << 30)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static char *manifest;
static size_t manifest_len;

static void load_manifest(void) {
    static int tried;
    if (tried) return;
    tried = 1;
    FILE *f = fopen(ETW_TEST_DATA_DIR "/HTTP_Server.man", "rb");
    if (!f) {
        fprintf(stderr, "fuzz_etwdump: %s/HTTP_Server.man not found: no manifest\n", ETW_TEST_DATA_DIR);
        return;
    }
    static char buf[1 << 17];
    manifest_len = fread(buf, 1, sizeof buf, f);
    fclose(f);
    manifest = buf;
}

static volatile uint64_t g_sink;

static void on_diag(void *ctx, const etw_diag *d) {
    (void)ctx;
    FUZZ_ASSERT(d->message != NULL);
    g_sink += strlen(d->message);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    load_manifest();
    etw_reader_options ro;
    memset(&ro, 0, sizeof ro);
    ro.max_buffer_size = FUZZ_MAX_BUFFER;
    ro.on_diag = on_diag;
    ro.file_order = size > 0 && (data[size - 1] & 0x80); /* --file-order on some inputs */
    etw_reader *r = NULL;
    etw_status s = etw_reader_open_memory(&r, data, size, &ro);
    if (s != ETW_OK) {
        FUZZ_ASSERT(r == NULL);
        FUZZ_ASSERT(s == ETW_E_NOT_ETL || s == ETW_E_TRUNCATED || s == ETW_E_CORRUPT ||
                    s == ETW_E_LIMIT || s == ETW_E_UNSUPPORTED || s == ETW_E_NOMEM);
        return 0;
    }

    etw_decoder *dec = NULL;
    etw_decoder_options dopt;
    memset(&dopt, 0, sizeof dopt);
    dopt.on_diag = on_diag;
    FUZZ_ASSERT(etw_decoder_new(&dec, &dopt) == ETW_OK);
    if (manifest) {
        etw_status ms = etw_decoder_add_manifest_xml(dec, manifest, manifest_len, "HTTP_Server.man", NULL);
        FUZZ_ASSERT(ms == ETW_OK);
    }
    s = etw_decoder_prescan(dec, r);
    FUZZ_ASSERT(s == ETW_OK || s == ETW_E_NOMEM);

    etw_json *j = NULL;
    etw_json_options jo;
    memset(&jo, 0, sizeof jo);
    jo.decoder = dec;
    jo.messages = 1;
    jo.raw_always = size > 0 && (data[0] & 1); /* --raw on some inputs */
    FUZZ_ASSERT(etw_json_new(&j, NULL, &jo) == ETW_OK);

    etw_event ev;
    uint64_t n = 0, out = 0;
    while ((s = etw_reader_next(r, &ev)) == ETW_OK) {
        const char *line;
        size_t len;
        FUZZ_ASSERT(++n <= EVENT_BOUND(size));
        FUZZ_ASSERT(etw_json_event(j, r, &ev, &line, &len) == ETW_OK);
        FUZZ_ASSERT(len >= 3 && line[len - 1] == '\n' && line[0] == '{');
        FUZZ_ASSERT(len <= LINE_MAX_BYTES);
        FUZZ_ASSERT(memchr(line, 0, len) == NULL);
        FUZZ_ASSERT(utf8_valid((const unsigned char *)line, len - 1));
        FUZZ_ASSERT(json_valid_unique(line, len - 1));
        out += len;
        FUZZ_ASSERT(out <= OUT_MAX);
    }
    FUZZ_ASSERT(s == ETW_END);
    etw_decoder_finish(dec);
    FUZZ_ASSERT(etw_reader_stats_get(r)->events == n);
    g_sink += out;
    etw_json_free(j);
    etw_decoder_free(dec);
    etw_reader_close(r);
    return 0;
}
