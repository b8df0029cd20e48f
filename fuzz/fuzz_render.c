/* fuzz_render.c - libFuzzer target for etwdump's investigation path: the
 * input's bytes are a trace file, selected with name, id, pid and time
 * predicates (etw_filter, one schema lookup per event), written as text and
 * as CSV (one learning pass for the columns, a rewind, the rows), counted
 * into the summaries (etw_stats, with process names from decoded Process
 * payloads, and etw_schemas) and rendered as their JSON and text.
 *
 * Seeds: fuzz/corpus/render/ (links to the etwdump seeds: small real traces).
 *
 * Checks (abort on violation): every text line ends in one '\n' and holds
 * no other control character; every CSV row ends in CRLF and has as many
 * cells as the header (counted with RFC 4180 quoting); the filter selects
 * no more events than were read; the summaries are one JSON object whose
 * event count is the number selected.
 * Build: cmake -DETW_FUZZ=ON -DCMAKE_C_COMPILER=clang (target fuzz_render). */
#define _GNU_SOURCE /* memmem */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "etwdecode/etwdecode.h"

#define FUZZ_ASSERT(c)                                                         \
    do {                                                                       \
        if (!(c)) {                                                            \
            fprintf(stderr, "%s:%d: assertion failed: %s\n", __FILE__,         \
                    __LINE__, #c);                                             \
            abort();                                                           \
        }                                                                      \
    } while (0)

#define FUZZ_MAX_BUFFER (1u << 20)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Cells of one CSV row (RFC 4180: quotes double inside quoted cells). */
static size_t csv_cells(const char *s, size_t n) {
    size_t cells = 1;
    int quoted = 0;
    for (size_t i = 0; i + 2 < n || (i < n && quoted); i++) {
        if (s[i] == '"') quoted = !quoted;
        else if (s[i] == ',' && !quoted) cells++;
    }
    return cells;
}

static void check_text(const char *s, size_t n) {
    FUZZ_ASSERT(n >= 1 && s[n - 1] == '\n');
    for (size_t i = 0; i + 1 < n; i++) FUZZ_ASSERT((unsigned char)s[i] >= 0x20 && s[i] != 0x7F);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    etw_reader_options ro;
    memset(&ro, 0, sizeof ro);
    ro.max_buffer_size = FUZZ_MAX_BUFFER;
    etw_reader *r = NULL;
    if (etw_reader_open_memory(&r, data, size, &ro) != ETW_OK) return 0;
    etw_decoder *dec = NULL;
    FUZZ_ASSERT(etw_decoder_new(&dec, NULL) == ETW_OK);
    etw_status s = etw_decoder_prescan(dec, r);
    FUZZ_ASSERT(s == ETW_OK || s == ETW_E_NOMEM);

    etw_filter *f;
    FUZZ_ASSERT(etw_filter_new(&f, NULL) == ETW_OK);
    unsigned sel = size ? data[size - 1] : 0; /* which predicates, from the input */
    if (sel & 1) FUZZ_ASSERT(etw_filter_add(f, ETW_FILTER_EVENT, "!*/Opcode(*", NULL) == ETW_OK);
    if (sel & 2) FUZZ_ASSERT(etw_filter_add(f, ETW_FILTER_PROVIDER, "*e*", NULL) == ETW_OK);
    if (sel & 4) FUZZ_ASSERT(etw_filter_add(f, ETW_FILTER_ID, "!1-3,7", NULL) == ETW_OK);
    if (sel & 8) FUZZ_ASSERT(etw_filter_add(f, ETW_FILTER_SINCE, "0.001", NULL) == ETW_OK);
    if (sel & 16) FUZZ_ASSERT(etw_filter_add(f, ETW_FILTER_PID, "!0,4", NULL) == ETW_OK);
    if (sel & 32) FUZZ_ASSERT(etw_filter_add(f, ETW_FILTER_ERRORS, (sel & 64) ? "!" : "", NULL) == ETW_OK);
    etw_filter_set_origin(f, etw_reader_to_filetime(r, etw_reader_logfile(r)->raw_timestamp));

    etw_render_options rop;
    memset(&rop, 0, sizeof rop);
    rop.json.decoder = dec;
    rop.json.messages = 1;
    rop.format = ETW_RENDER_CSV;
    rop.time = (sel & 128) ? ETW_TIME_RELATIVE : ETW_TIME_UTC;
    etw_renderer *csv, *txt;
    FUZZ_ASSERT(etw_renderer_new(&csv, NULL, &rop) == ETW_OK);
    rop.format = ETW_RENDER_TEXT;
    FUZZ_ASSERT(etw_renderer_new(&txt, NULL, &rop) == ETW_OK);
    etw_stats *st;
    etw_schemas *sc;
    FUZZ_ASSERT(etw_stats_new(&st, NULL) == ETW_OK);
    FUZZ_ASSERT(etw_schemas_new(&sc, NULL) == ETW_OK);

    static etw_label l;
    etw_event ev;
    uint64_t read = 0, selected = 0;
    while (etw_reader_next(r, &ev) == ETW_OK) {
        read++;
        int m = etw_filter_match(f, dec, &ev, &l);
        FUZZ_ASSERT(m == 0 || m == 1);
        if (m) FUZZ_ASSERT(etw_renderer_learn(csv, r, &ev) == ETW_OK);
    }
    const char *out;
    size_t len;
    FUZZ_ASSERT(etw_renderer_header(csv, &out, &len) == ETW_OK);
    FUZZ_ASSERT(len >= 2 && out[len - 2] == '\r' && out[len - 1] == '\n');
    size_t columns = etw_renderer_columns(csv);
    FUZZ_ASSERT(csv_cells(out, len) == columns);
    FUZZ_ASSERT(etw_reader_rewind(r) == ETW_OK);
    while (etw_reader_next(r, &ev) == ETW_OK) {
        int m = etw_filter_match(f, dec, &ev, &l);
        FUZZ_ASSERT(m == 0 || m == 1);
        FUZZ_ASSERT(etw_stats_observe(st, dec, &ev, &l) == ETW_OK);
        if (!m) continue;
        selected++;
        FUZZ_ASSERT(etw_stats_add(st, &ev, &l) == ETW_OK);
        FUZZ_ASSERT(etw_schemas_add(sc, &l) == ETW_OK);
        FUZZ_ASSERT(etw_renderer_event(csv, r, &ev, &out, &len) == ETW_OK);
        FUZZ_ASSERT(len >= 2 && out[len - 2] == '\r' && out[len - 1] == '\n');
        FUZZ_ASSERT(csv_cells(out, len) == columns);
        FUZZ_ASSERT(etw_renderer_event(txt, r, &ev, &out, &len) == ETW_OK);
        check_text(out, len);
    }
    FUZZ_ASSERT(selected <= read);
    const etw_reader *rs[1] = {r};
    FUZZ_ASSERT(etw_stats_json(st, rs, NULL, 1, &out, &len) == ETW_OK);
    FUZZ_ASSERT(len >= 2 && out[0] == '{' && out[len - 1] == '}');
    char want[64];
    snprintf(want, sizeof want, "],\"events\":%llu,", (unsigned long long)selected);
    FUZZ_ASSERT(memmem(out, len, want, strlen(want)) != NULL);
    FUZZ_ASSERT(etw_stats_text(st, rs, NULL, 1, &out, &len) == ETW_OK);
    FUZZ_ASSERT(etw_schemas_json(sc, &out, &len) == ETW_OK);
    FUZZ_ASSERT(len >= 2 && out[0] == '{' && out[len - 1] == '}');
    etw_decoder_finish(dec);
    etw_stats_free(st);
    etw_schemas_free(sc);
    etw_renderer_free(csv);
    etw_renderer_free(txt);
    etw_filter_free(f);
    etw_decoder_free(dec);
    etw_reader_close(r);
    return 0;
}
