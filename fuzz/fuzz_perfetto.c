/* fuzz_perfetto.c - libFuzzer target for the Trace Event Format writer
 * (etw_perfetto.h) on hostile traces: the input is a trace file, every
 * event is given to the writer (as etwdump --format perfetto does with no
 * selection), and the whole output - header, every event's text, finish -
 * is checked.
 *
 * Checks (abort on violation): every call returns ETW_OK; the output is
 * valid UTF-8, ends with a line end, and is one well-formed JSON value
 * (once its line ends are taken out) (fuzz_json.h's validator:
 * keys may repeat only inside an event's args, which are its payload
 * fields as the JSON writer gives them); every event is counted once, as
 * an instant or a span end (instants + span_ends = events).
 *
 * Seeds: fuzz/corpus/etwdump/ (small real traces).
 * Build: cmake -DETW_FUZZ=ON -DCMAKE_C_COMPILER=clang (target fuzz_perfetto).
 * Run:   build-fuzz/fuzz_perfetto -max_len=262144 /tmp/c fuzz/corpus/etwdump */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "etwdecode/etwdecode.h"
#include "fuzz_json.h"

#define FUZZ_ASSERT(c)                                                         \
    do {                                                                       \
        if (!(c)) {                                                            \
            fprintf(stderr, "%s:%d: assertion failed: %s\n", __FILE__,         \
                    __LINE__, #c);                                             \
            abort();                                                           \
        }                                                                      \
    } while (0)

/* The output, gathered. */
typedef struct sink {
    char *p;
    size_t n, cap;
} sink;

static void add(sink *s, const char *t, size_t n) {
    if (s->n + n + 1 > s->cap) {
        size_t c = s->cap ? s->cap : 4096;
        while (c < s->n + n + 1) c *= 2;
        char *q = realloc(s->p, c);
        FUZZ_ASSERT(q != NULL);
        s->p = q;
        s->cap = c;
    }
    if (n) memcpy(s->p + s->n, t, n);
    s->n += n;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    etw_reader_options ro;
    memset(&ro, 0, sizeof ro);
    ro.max_buffer_size = 1u << 20;
    etw_reader *r;
    if (etw_reader_open_memory(&r, data, size, &ro) != ETW_OK) return 0;
    etw_decoder *dec;
    FUZZ_ASSERT(etw_decoder_new(&dec, NULL) == ETW_OK);
    etw_perfetto_options po;
    memset(&po, 0, sizeof po);
    po.decoder = dec;
    po.time_origin = etw_reader_to_filetime(r, etw_reader_logfile(r)->raw_timestamp);
    etw_perfetto *pf;
    FUZZ_ASSERT(etw_perfetto_new(&pf, NULL, &po) == ETW_OK);
    sink out = {0};
    const char *t;
    size_t n;
    FUZZ_ASSERT(etw_perfetto_header(pf, &t, &n) == ETW_OK);
    add(&out, t, n);
    etw_event ev;
    uint64_t count = 0;
    while (etw_reader_next(r, &ev) == ETW_OK && count++ < 100000) {
        FUZZ_ASSERT(etw_perfetto_event(pf, r, &ev, &t, &n) == ETW_OK);
        add(&out, t, n);
    }
    FUZZ_ASSERT(etw_perfetto_finish(pf, &t, &n) == ETW_OK);
    add(&out, t, n);
    FUZZ_ASSERT(utf8_valid((const unsigned char *)out.p, out.n));
    FUZZ_ASSERT(out.n >= 2 && out.p[out.n - 1] == '\n');
    /* the writer puts a line end between trace events, the validator takes
     * no whitespace: JSON strings hold no raw line end, so drop them all */
    size_t k = 0;
    for (size_t i = 0; i < out.n; i++)
        if (out.p[i] != '\n') out.p[k++] = out.p[i];
    FUZZ_ASSERT(json_valid(out.p, k));
    const etw_perfetto_stats *st = etw_perfetto_stats_get(pf);
    FUZZ_ASSERT(st->instants + st->span_ends == st->events);
    free(out.p);
    etw_perfetto_free(pf);
    etw_decoder_free(dec);
    etw_reader_close(r);
    return 0;
}
