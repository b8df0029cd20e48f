/* test_reader_range.c - one file read as consecutive time ranges
 * (etw_reader_set_range) gives exactly the whole-file event sequence, with
 * the same decoded values.
 *
 * For every real trace in tests/data: the whole file is decoded to JSON lines
 * (prescan, as etwdump does); then it is read again as n ranges (from
 * etw_reader_split, and from boundaries placed on event timestamps, so that
 * events sit exactly on a boundary), each range with a fresh decoder that
 * learned the records a first pass flagged (etw_decoder_learns: merged
 * metadata, EventSource chunks, kernel thread records), read on their own
 * (etw_reader_event_at, etw_decoder_learn); the concatenated lines must equal
 * the whole-file lines one for one.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "etw_test.h"
#include "etwdecode/etwdecode.h"

static const char *const k_traces[] = {
    "net.4.5.2.x64.etl", "ShutdownPerfDiagLogger.etl", "HTTP_Server.etl", "powershell.etl",
    "AMSITrace.etl", "SelfDescribingSingleEvent.etl", "BondEtwSample.etl", "gcevents.etl",
    "primitive-types.etl", "lxcore_kernel.etl", "smallEtlFile.etl",
};

/* A whole decode: every line, with a hash of each to compare quickly. */
typedef struct lines {
    uint64_t *hash;
    size_t n, cap;
} lines;

static uint64_t fnv(const char *s, size_t n) {
    uint64_t h = 0xcbf29ce484222325ull;
    for (size_t i = 0; i < n; i++) h = (h ^ (uint8_t)s[i]) * 0x100000001b3ull;
    return h;
}

static int push(lines *l, uint64_t h) {
    if (l->n == l->cap) {
        size_t nc = l->cap ? l->cap * 2 : 1024;
        uint64_t *p = realloc(l->hash, nc * sizeof *p);
        if (!p) return 0;
        l->hash = p;
        l->cap = nc;
    }
    l->hash[l->n++] = h;
    return 1;
}

/* Where the schema records are, and their order times. */
typedef struct place {
    uint64_t buf;
    uint32_t rec;
    int64_t order_ft;
    int later; /* ETW_LEARN_LATER (else ETW_LEARN_TRACE) */
} place;

typedef struct places {
    place *p;
    size_t n, cap;
} places;

static void decode(etw_reader *r, etw_decoder *dec, lines *out) {
    etw_json *j;
    etw_json_options jo;
    memset(&jo, 0, sizeof jo);
    jo.decoder = dec;
    if (etw_json_new(&j, NULL, &jo) != ETW_OK) return;
    etw_event ev;
    while (etw_reader_next(r, &ev) == ETW_OK) {
        const char *line;
        size_t len;
        if (etw_json_event(j, r, &ev, &line, &len) != ETW_OK || !push(out, fnv(line, len))) break;
    }
    etw_json_free(j);
}

static void first_pass(etw_reader *r, places *pl, int64_t *ts, size_t *nts, size_t ts_cap) {
    etw_event ev;
    etw_decoder *dec;
    *nts = 0;
    if (etw_decoder_new(&dec, NULL) != ETW_OK) return;
    while (etw_reader_next(r, &ev) == ETW_OK) {
        if (*nts < ts_cap) ts[(*nts)++] = ev.timestamp;
        const etw_schema *s = NULL;
        if (!ev.is_logfile_header) etw_decoder_resolve(dec, &ev, &s, NULL);
        int learns = etw_decoder_learns(dec, &ev, s);
        if (!learns) continue;
        if (pl->n == pl->cap) {
            size_t nc = pl->cap ? pl->cap * 2 : 64;
            place *p = realloc(pl->p, nc * sizeof *p);
            if (!p) return;
            pl->p = p;
            pl->cap = nc;
        }
        place *x = &pl->p[pl->n++];
        x->buf = ev.buffer_file_offset;
        x->rec = ev.record_offset;
        x->order_ft = etw_reader_order_time(r);
        x->later = learns == ETW_LEARN_LATER;
    }
    etw_decoder_free(dec);
}

/* Decode the ranges [bounds[i], bounds[i+1]) one after the other, each with
 * its own reader and decoder, and compare with the whole decode. */
static void check_ranges(const char *path, const lines *whole, const places *pl, const int64_t *bounds,
                         uint32_t n, const char *what) {
    lines got = {0};
    for (uint32_t i = 0; i < n; i++) {
        etw_reader *r;
        etw_decoder *dec;
        if (etw_reader_open_file(&r, path, NULL) != ETW_OK) return;
        if (etw_decoder_new(&dec, NULL) != ETW_OK) {
            etw_reader_close(r);
            return;
        }
        for (size_t k = 0; k < pl->n; k++) {
            const place *x = &pl->p[k];
            if (x->later && x->order_ft >= bounds[i]) continue;
            etw_event ev;
            ETW_CHECK_INT(etw_reader_event_at(r, x->buf, x->rec, &ev), ETW_OK);
            ETW_CHECK_INT(etw_decoder_learn(dec, &ev), ETW_OK);
        }
        ETW_CHECK_INT(etw_reader_set_range(r, bounds[i], bounds[i + 1]), ETW_OK);
        decode(r, dec, &got);
        etw_decoder_free(dec);
        etw_reader_close(r);
    }
    ETW_CHECK_INT(got.n, whole->n);
    size_t first_diff = SIZE_MAX;
    for (size_t i = 0; i < got.n && i < whole->n; i++)
        if (got.hash[i] != whole->hash[i]) {
            first_diff = i;
            break;
        }
    ETW_CHECK(first_diff == SIZE_MAX);
    if (got.n != whole->n || first_diff != SIZE_MAX)
        fprintf(stderr, "  %s (%s, %u ranges): %zu events, whole file %zu, first difference at %zu\n", path,
                what, n, got.n, whole->n, first_diff);
    free(got.hash);
}

static int cmp_i64(const void *a, const void *b) {
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return x < y ? -1 : x > y;
}

static void check_trace(const char *name) {
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", ETW_TEST_DATA_DIR, name);
    etw_reader *r;
    etw_decoder *dec;
    ETW_CHECK_INT(etw_reader_open_file(&r, path, NULL), ETW_OK);
    if (!r) return;
    ETW_CHECK_INT(etw_decoder_new(&dec, NULL), ETW_OK);
    lines whole = {0};
    places pl = {0};
    size_t ts_cap = 1u << 20, nts = 0;
    int64_t *ts = malloc(ts_cap * sizeof *ts);
    first_pass(r, &pl, ts, &nts, ts_cap);
    ETW_CHECK_INT(etw_reader_rewind(r), ETW_OK);
    ETW_CHECK_INT(etw_decoder_prescan(dec, r), ETW_OK);
    decode(r, dec, &whole);
    ETW_CHECK(whole.n > 0);

    /* etw_reader_split's own boundaries */
    int64_t bounds[10];
    uint32_t count = 0;
    ETW_CHECK_INT(etw_reader_split(r, 7, bounds, &count), ETW_OK);
    ETW_CHECK(count >= 1 && count <= 7);
    ETW_CHECK(bounds[0] == INT64_MIN && bounds[count] == INT64_MAX);
    for (uint32_t i = 0; i < count; i++) ETW_CHECK(bounds[i] < bounds[i + 1]);
    check_ranges(path, &whole, &pl, bounds, count, "split");

    /* boundaries on event timestamps: events exactly at a boundary */
    if (nts > 8) {
        qsort(ts, nts, sizeof *ts, cmp_i64);
        int64_t b[6];
        uint32_t m = 0;
        b[m++] = INT64_MIN;
        for (int k = 1; k <= 4; k++) {
            int64_t v = ts[nts * (size_t)k / 5];
            if (v > b[m - 1]) b[m++] = v;
        }
        b[m] = INT64_MAX;
        check_ranges(path, &whole, &pl, b, m, "on events");
    }
    if (!strcmp(name, "net.4.5.2.x64.etl")) ETW_CHECK(count >= 4);

    /* a record read on its own is the one the pass returned */
    if (pl.n) {
        etw_event ev;
        ETW_CHECK_INT(etw_reader_event_at(r, pl.p[0].buf, pl.p[0].rec, &ev), ETW_OK);
        ETW_CHECK(ev.buffer_file_offset == pl.p[0].buf && ev.record_offset == pl.p[0].rec);
        ETW_CHECK(etw_decoder_learns(NULL, &ev, NULL) != 0 || pl.p[0].later);
    }
    etw_event ev;
    ETW_CHECK_INT(etw_reader_event_at(r, 1, 0x48, &ev), ETW_E_NOT_FOUND);
    ETW_CHECK_INT(etw_reader_set_range(r, 5, 5), ETW_E_INVALID_ARG);

    free(ts);
    free(pl.p);
    free(whole.hash);
    etw_decoder_free(dec);
    etw_reader_close(r);
}

static void test_ranges_equal_whole_file(void) {
    for (size_t i = 0; i < sizeof k_traces / sizeof k_traces[0]; i++) check_trace(k_traces[i]);
}

int main(void) {
    ETW_RUN(test_ranges_equal_whole_file);
    return ETW_TEST_DONE();
}
