/* The hot path allocates nothing per event: once every buffer size, schema
 * and output length has been seen, a second pass over a trace (reader +
 * decoder + JSON writer) makes no allocation at all. Checked with a counting
 * allocator on real traces that exercise every schema source. */
#include <stdlib.h>

#include "etw_test.h"
#include "etwdecode/etwdecode.h"

typedef struct counter {
    long allocs;
} counter;

static void *count_alloc(void *ctx, size_t n) {
    ((counter *)ctx)->allocs++;
    return malloc(n);
}
static void count_free(void *ctx, void *p) {
    (void)ctx;
    free(p);
}

/* Allocations made by pass 2 of (reader + decoder + JSON) over one trace;
 * csv: a CSV renderer without a field list instead, its columns learned by
 * a first pass (etw_renderer_learn), then two passes of rows. */
static long second_pass_allocs(const char *name, const char *manifest, long *events, int csv) {
    char path[512], man[512];
    snprintf(path, sizeof path, "%s/%s", ETW_TEST_DATA_DIR, name);
    counter c = {0};
    etw_allocator a = {count_alloc, count_free, &c};
    etw_reader_options ro = {0};
    ro.allocator = &a;
    etw_reader *r = NULL;
    etw_decoder *d = NULL;
    etw_json *j = NULL;
    etw_decoder_options dopt = {0};
    dopt.allocator = &a;
    ETW_CHECK_INT(etw_reader_open_file(&r, path, &ro), ETW_OK);
    ETW_CHECK_INT(etw_decoder_new(&d, &dopt), ETW_OK);
    if (!r || !d) return -1;
    if (manifest) {
        snprintf(man, sizeof man, "%s/%s", ETW_TEST_DATA_DIR, manifest);
        ETW_CHECK_INT(etw_decoder_add_manifest(d, man, NULL), ETW_OK);
    }
    ETW_CHECK_INT(etw_decoder_prescan(d, r), ETW_OK);
    etw_json_options jo = {0};
    jo.decoder = d;
    jo.messages = 1;
    ETW_CHECK_INT(etw_json_new(&j, &a, &jo), ETW_OK);
    etw_renderer *rd = NULL;
    if (csv) {
        etw_render_options rop = {0};
        rop.format = ETW_RENDER_CSV;
        rop.json = jo;
        ETW_CHECK_INT(etw_renderer_new(&rd, &a, &rop), ETW_OK);
        if (!rd) return -1;
    }
    long before = 0;
    int passes = csv ? 3 : 2;
    for (int pass = 0; pass < passes; pass++) {
        if (pass > 0) ETW_CHECK_INT(etw_reader_rewind(r), ETW_OK);
        if (pass == passes - 1) before = c.allocs;
        etw_event ev;
        *events = 0;
        while (etw_reader_next(r, &ev) == ETW_OK) {
            const char *line;
            size_t len;
            if (csv && pass == 0) ETW_CHECK_INT(etw_renderer_learn(rd, r, &ev), ETW_OK);
            else if (csv) ETW_CHECK_INT(etw_renderer_event(rd, r, &ev, &line, &len), ETW_OK);
            else ETW_CHECK_INT(etw_json_event(j, r, &ev, &line, &len), ETW_OK);
            (*events)++;
        }
    }
    long during = c.allocs - before;
    etw_renderer_free(rd);
    etw_json_free(j);
    etw_decoder_free(d);
    etw_reader_close(r);
    return during;
}

static void test_second_pass_allocates_nothing(void) {
    static const struct {
        const char *trace, *manifest;
        long events;
    } cases[] = {
        {"primitive-types.etl", NULL, 7},            /* TraceLogging */
        {"AMSITrace.etl", NULL, 21},                 /* TraceLogging arrays */
        {"gcevents.etl", "ClrEtwAll.man", 71},        /* manifest, messages */
        {"HTTP_Server.etl", "HTTP_Server.man", 2042}, /* manifest, maps */
        {"net.4.5.2.x64.etl", NULL, 179474},          /* compressed; metadata, EventSource, kernel */
        {"ShutdownPerfDiagLogger.etl", NULL, 17078},  /* kernel (MOF) records, the thread table */
        {"lxcore_kernel.etl", NULL, 4},               /* kernel + TraceLogging */
    };
    for (int csv = 0; csv < 2; csv++)
        for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
            long events = 0;
            long n = second_pass_allocs(cases[i].trace, cases[i].manifest, &events, csv);
            if (n != 0) fprintf(stderr, "%s%s: %ld allocations in the second pass\n", cases[i].trace, csv ? " (CSV)" : "", n);
            ETW_CHECK_INT(n, 0);
            ETW_CHECK_INT(events, cases[i].events);
        }
}

int main(void) {
    ETW_RUN(test_second_pass_allocates_nothing);
    return ETW_TEST_DONE();
}
