/* test_pipeline.c - the parallel pipeline (etw_pipeline.h) against the
 * single-threaded library on the real traces: the same bytes for any number
 * of threads, the merged metadata found in one pass as the pre-scan finds
 * it, the unordered scan counting what the reader counts, selection and
 * max_events, and several files merged as etw_multi merges them. */
#include <stdlib.h>
#include <string.h>

#include "etw_test.h"
#include "etwdecode/etwdecode.h"

#ifndef ETW_TEST_DATA_DIR
#define ETW_TEST_DATA_DIR "tests/data"
#endif

typedef struct sink {
    char *p;
    size_t len, cap;
    uint64_t copied; /* etw_pipeline_stats.batches_copied */
} sink;

static etw_status sink_write(void *ctx, const void *data, size_t len) {
    sink *s = ctx;
    if (s->len + len > s->cap) {
        size_t c = s->cap ? s->cap : 1 << 16;
        while (c < s->len + len) c *= 2;
        char *q = realloc(s->p, c);
        if (!q) return ETW_E_NOMEM;
        s->p = q;
        s->cap = c;
    }
    memcpy(s->p + s->len, data, len);
    s->len += len;
    return ETW_OK;
}

/* Readers in file order (no merge by time): the pipeline then pre-scans. */
static int file_order;

static etw_reader *open_trace(const char *name) {
    char path[512];
    snprintf(path, sizeof path, "%s/%s", ETW_TEST_DATA_DIR, name);
    etw_reader *r = NULL;
    etw_reader_options ro = {0};
    ro.file_order = file_order;
    ETW_CHECK(etw_reader_open_file(&r, path, &ro) == ETW_OK);
    return r;
}

/* The reference: one decoder, the pre-scan, etw_reader_next in order. */
static sink json_sequential(const char *name, const char *manifest) {
    sink s = {0};
    etw_reader *r = open_trace(name);
    etw_decoder *d;
    if (!r || etw_decoder_new(&d, NULL) != ETW_OK) return s;
    if (manifest) {
        char path[512];
        snprintf(path, sizeof path, "%s/%s", ETW_TEST_DATA_DIR, manifest);
        ETW_CHECK(etw_decoder_add_manifest(d, path, NULL) == ETW_OK);
    }
    ETW_CHECK(etw_decoder_prescan(d, r) == ETW_OK);
    etw_json_options jo = {0};
    jo.decoder = d;
    jo.messages = 1;
    etw_json *j;
    ETW_CHECK(etw_json_new(&j, NULL, &jo) == ETW_OK);
    etw_event ev;
    while (etw_reader_next(r, &ev) == ETW_OK) {
        const char *line;
        size_t len;
        if (etw_json_event(j, r, &ev, &line, &len) == ETW_OK) sink_write(&s, line, len);
    }
    etw_json_free(j);
    etw_decoder_free(d);
    etw_reader_close(r);
    return s;
}

static const char *setup_manifest;
static etw_status setup(void *ctx, etw_decoder *d) {
    (void)ctx;
    if (!setup_manifest) return ETW_OK;
    char path[512];
    snprintf(path, sizeof path, "%s/%s", ETW_TEST_DATA_DIR, setup_manifest);
    return etw_decoder_add_manifest(d, path, NULL);
}

static sink json_pipeline(const char *name, const char *manifest, unsigned threads, uint64_t max_events) {
    sink s = {0};
    etw_reader *r = open_trace(name);
    if (!r) return s;
    etw_pipeline_options po = {0};
    po.threads = threads;
    po.setup = setup;
    po.json.messages = 1;
    po.write = sink_write;
    po.ctx = &s;
    po.max_events = max_events;
    setup_manifest = manifest;
    etw_pipeline *p;
    ETW_CHECK(etw_pipeline_new(&p, r, &po) == ETW_OK);
    if (file_order) ETW_CHECK(etw_pipeline_prescan(p) == ETW_OK);
    ETW_CHECK(etw_pipeline_run(p) == ETW_OK);
    s.copied = etw_pipeline_stats_get(p)->batches_copied;
    etw_pipeline_free(p);
    etw_reader_close(r);
    return s;
}

static size_t count_lines(const sink *s) {
    size_t n = 0;
    for (size_t i = 0; i < s->len; i++) n += s->p[i] == '\n';
    return n;
}

static size_t count_str(const sink *s, const char *needle) {
    size_t n = 0, k = strlen(needle);
    for (size_t i = 0; i + k <= s->len; i++)
        if (memcmp(s->p + i, needle, k) == 0) n++;
    return n;
}

/* net.4.5.2.x64.etl decoded as json_sequential decodes it (its 61
 * EventInfo records describe DNS-Client, Immersive-Shell,
 * Kernel-EventTracing... events), on any number of threads. */
static void check_net_same_bytes(void) {
    sink ref = json_sequential("net.4.5.2.x64.etl", NULL);
    ETW_CHECK_INT(count_lines(&ref), 179474);
    /* the merged schemas are used: DNS-Client events carry their fields */
    ETW_CHECK(count_str(&ref, "\"provider\":\"Microsoft-Windows-DNS-Client\"") > 0);
    unsigned threads[] = {0, 2, 5}; /* the calling thread alone, with one worker, with four */
    for (size_t i = 0; i < sizeof threads / sizeof threads[0]; i++) {
        sink got = json_pipeline("net.4.5.2.x64.etl", NULL, threads[i], 0);
        ETW_CHECK_INT(got.len, ref.len);
        ETW_CHECK(got.len == ref.len && memcmp(got.p, ref.p, ref.len) == 0);
        free(got.p);
    }
    free(ref.p);
}

/* Merged by time, one pass learns the merged metadata as the pre-scan
 * does. */
static void test_net_one_pass_same_bytes(void) { check_net_same_bytes(); }

/* In file order the pipeline's pre-scan (on every thread, each buffer's
 * MetaData records logged in file order) learns what etw_decoder_prescan
 * learns: the EventInfo records lie in other processors' buffers than the
 * events they describe. */
static void test_file_order_prescan_same_bytes(void) {
    file_order = 1;
    check_net_same_bytes();
    file_order = 0;
}

/* gcevents.etl with the CLR manifest; HTTP_Server.etl with its manifest. */
static void test_manifests_same_bytes(void) {
    const char *pairs[][2] = {{"gcevents.etl", "ClrEtwAll.man"}, {"HTTP_Server.etl", "HTTP_Server.man"},
                              {"powershell.etl", NULL}, {"SelfDescribingSingleEvent.etl", NULL}};
    for (size_t k = 0; k < 4; k++) {
        sink ref = json_sequential(pairs[k][0], pairs[k][1]);
        ETW_CHECK(ref.len > 0);
        for (unsigned t = 0; t <= 3; t += 3) {
            sink got = json_pipeline(pairs[k][0], pairs[k][1], t, 0);
            ETW_CHECK(got.len == ref.len && memcmp(got.p, ref.p, ref.len) == 0);
            /* powershell.etl on one thread: the buffers batches point into
             * reach their bound, and waiting batches copy their events */
            if (k == 2 && t == 0) ETW_CHECK(got.copied > 0);
            free(got.p);
        }
        free(ref.p);
    }
}

/* max_events cuts the output after N events, whatever the batches. */
static void test_max_events(void) {
    sink all = json_pipeline("net.4.5.2.x64.etl", NULL, 0, 0);
    uint64_t ns[] = {1, 1024, 1025};
    for (size_t i = 0; i < 3; i++) {
        sink got = json_pipeline("net.4.5.2.x64.etl", NULL, 2, ns[i]);
        ETW_CHECK_INT(count_lines(&got), ns[i]);
        ETW_CHECK(got.len <= all.len && memcmp(got.p, all.p, got.len) == 0);
        free(got.p);
    }
    free(all.p);
}

/* A custom render and a selection: kernel (classic header) events only,
 * rendered as "timestamp opcode". The selection runs on workers; the output
 * is the selected events in order. */
static int select_kernel(void *ctx, void *state, etw_decoder *d, const etw_event *ev) {
    (void)ctx;
    (void)state;
    (void)d;
    return ev->form == ETW_FORM_PERFINFO || ev->form == ETW_FORM_SYSTEM;
}

static etw_status render_short(void *ctx, void *state, etw_decoder *d, const etw_event *ev,
                               etw_pipeline_out *out) {
    (void)ctx;
    (void)state;
    (void)d;
    char line[64];
    int n = snprintf(line, sizeof line, "%lld %u\n", (long long)ev->timestamp, ev->opcode);
    return etw_pipeline_emit(out, line, (size_t)n);
}

static void test_select_render(void) {
    /* reference: the reader alone */
    etw_reader *r = open_trace("net.4.5.2.x64.etl");
    if (!r) return;
    sink ref = {0};
    etw_event ev;
    size_t kernel = 0;
    while (etw_reader_next(r, &ev) == ETW_OK) {
        if (!select_kernel(NULL, NULL, NULL, &ev)) continue;
        char line[64];
        int n = snprintf(line, sizeof line, "%lld %u\n", (long long)ev.timestamp, ev.opcode);
        sink_write(&ref, line, (size_t)n);
        kernel++;
    }
    ETW_CHECK(kernel > 100000); /* PERFINFO 100157 + SYSTEM 3191 */
    for (unsigned t = 0; t <= 2; t++) {
        ETW_CHECK(etw_reader_rewind(r) == ETW_OK);
        sink got = {0};
        etw_pipeline_options po = {0};
        po.threads = t;
        po.select = select_kernel;
        po.render = render_short;
        po.write = sink_write;
        po.ctx = &got;
        etw_pipeline *p;
        ETW_CHECK(etw_pipeline_new(&p, r, &po) == ETW_OK);
        ETW_CHECK(etw_pipeline_run(p) == ETW_OK);
        ETW_CHECK_INT(etw_pipeline_stats_get(p)->events_written, kernel);
        ETW_CHECK_INT(etw_pipeline_stats_get(p)->events_read, 179474);
        etw_pipeline_free(p);
        ETW_CHECK(got.len == ref.len && memcmp(got.p, ref.p, ref.len) == 0);
        free(got.p);
    }
    free(ref.p);
    etw_reader_close(r);
}

/* The unordered scan counts exactly what etw_reader_next counts. */
static int count_one(void *ctx, void *state, const etw_event *ev) {
    (void)ctx;
    (void)ev;
    (*(uint64_t *)state)++;
    return 0;
}
static void *counter_new(void *ctx, etw_decoder *d) {
    (void)ctx;
    (void)d;
    return calloc(1, sizeof(uint64_t));
}
static void counter_free(void *ctx, void *state) {
    (void)ctx;
    free(state);
}

static void test_scan_counts(void) {
    const char *names[] = {"net.4.5.2.x64.etl", "ShutdownPerfDiagLogger.etl", "HTTP_Server.etl", "lxcore_kernel.etl"};
    for (size_t k = 0; k < 4; k++) {
        etw_reader *r = open_trace(names[k]);
        if (!r) continue;
        etw_event ev;
        while (etw_reader_next(r, &ev) == ETW_OK) {
        }
        etw_reader_stats want = *etw_reader_stats_get(r);
        for (unsigned t = 0; t <= 3; t += 3) {
            etw_pipeline_options po = {0};
            po.threads = t;
            po.worker_new = counter_new;
            po.worker_free = counter_free;
            etw_pipeline *p;
            ETW_CHECK(etw_pipeline_new(&p, r, &po) == ETW_OK);
            etw_reader_stats got;
            ETW_CHECK(etw_pipeline_scan(p, count_one, &got) == ETW_OK);
            uint64_t seen = 0;
            uint64_t *c;
            for (unsigned i = 0; (c = etw_pipeline_worker_state(p, i)) != NULL; i++) seen += *c;
            etw_pipeline_free(p);
            ETW_CHECK_INT(seen, want.events);
            ETW_CHECK_INT(got.events, want.events);
            ETW_CHECK_INT(got.buffers, want.buffers);
            ETW_CHECK_INT(got.buffers_skipped, want.buffers_skipped);
            ETW_CHECK_INT(got.records_skipped, want.records_skipped);
            ETW_CHECK_INT(got.problems, want.problems);
            ETW_CHECK_INT(got.bytes_decompressed, want.bytes_decompressed);
            ETW_CHECK_INT(got.first_timestamp, want.first_timestamp);
            ETW_CHECK_INT(got.last_timestamp, want.last_timestamp);
            for (int f = 0; f < ETW_FORM_COUNT_; f++) ETW_CHECK_INT(got.events_by_form[f], want.events_by_form[f]);
        }
        etw_reader_close(r);
    }
}

/* Several files (etw_pipeline_new_multi) against etw_multi_next with a
 * decoder that pre-scanned every file: net.4.5.2.x64.etl, two more, and net
 * again under another name, whose events all tie with the first's - merged
 * by time and concatenated (file_order), with a selection and a render that
 * both ask each event's file (lxcore_kernel.etl, file 1, is left out). */
typedef struct multi_run {
    etw_multi *m;
    etw_pipeline *p;
    sink s;
} multi_run;

static int select_not_file_1(void *ctx, void *state, etw_decoder *d, const etw_event *ev) {
    multi_run *mr = ctx;
    (void)state;
    (void)ev;
    return etw_pipeline_event_file(mr->p, d) != 1;
}

static void *json_new(void *ctx, etw_decoder *d) {
    (void)ctx;
    etw_json_options jo = {0};
    jo.decoder = d;
    etw_json *j;
    return etw_json_new(&j, NULL, &jo) == ETW_OK ? j : NULL;
}

static void json_free(void *ctx, void *state) {
    (void)ctx;
    etw_json_free(state);
}

static etw_status render_with_file(void *ctx, void *state, etw_decoder *d, const etw_event *ev,
                                   etw_pipeline_out *out) {
    multi_run *mr = ctx;
    size_t file = etw_pipeline_event_file(mr->p, d);
    etw_json_set_file(state, etw_multi_name(mr->m, file));
    const char *line;
    size_t len;
    etw_status s = etw_json_event(state, etw_multi_reader(mr->m, file), ev, &line, &len);
    return s == ETW_OK ? etw_pipeline_emit(out, line, len) : s;
}

static etw_status multi_write(void *ctx, const void *data, size_t len) {
    return sink_write(&((multi_run *)ctx)->s, data, len);
}

static etw_multi *open_multi(int by_file) {
    etw_reader_options ro = {0};
    ro.file_order = by_file;
    etw_multi *m;
    ETW_CHECK(etw_multi_new(&m, &ro) == ETW_OK);
    const char *names[] = {"net.4.5.2.x64.etl", "lxcore_kernel.etl", "HTTP_Server.etl", "net.4.5.2.x64.etl"};
    for (int i = 0; i < 4; i++) {
        char path[512];
        snprintf(path, sizeof path, "%s/%s", ETW_TEST_DATA_DIR, names[i]);
        etw_reader *r;
        ETW_CHECK(etw_reader_open_file(&r, path, &ro) == ETW_OK);
        ETW_CHECK(etw_multi_add_reader(m, r, i == 3 ? "copy" : names[i]) == ETW_OK);
    }
    return m;
}

static sink multi_sequential(int by_file) {
    sink s = {0};
    etw_multi *m = open_multi(by_file);
    etw_decoder *d;
    ETW_CHECK(etw_decoder_new(&d, NULL) == ETW_OK);
    for (size_t i = 0; i < etw_multi_count(m); i++) ETW_CHECK(etw_decoder_prescan(d, etw_multi_reader(m, i)) == ETW_OK);
    etw_json *j = json_new(NULL, d);
    etw_event ev;
    size_t file;
    while (etw_multi_next(m, &ev, &file) == ETW_OK) {
        etw_decoder_learn(d, &ev); /* what rendering an unselected event would teach */
        if (file == 1) continue;
        etw_json_set_file(j, etw_multi_name(m, file));
        const char *line;
        size_t len;
        if (etw_json_event(j, etw_multi_reader(m, file), &ev, &line, &len) == ETW_OK) sink_write(&s, line, len);
    }
    etw_json_free(j);
    etw_decoder_free(d);
    etw_multi_free(m);
    return s;
}

static void test_multi_same_bytes(void) {
    for (int by_file = 0; by_file <= 1; by_file++) {
        sink ref = multi_sequential(by_file);
        /* 179474 + 2042 + 179474 events, each file's header included */
        ETW_CHECK_INT(count_lines(&ref), 360990);
        ETW_CHECK_INT(count_str(&ref, "\"file\":\"copy\""), 179474);
        for (unsigned t = 0; t <= 3; t += 3) {
            multi_run mr = {0};
            mr.m = open_multi(by_file);
            etw_pipeline_options po = {0};
            po.threads = t;
            po.worker_new = json_new;
            po.worker_free = json_free;
            po.select = select_not_file_1;
            po.render = render_with_file;
            po.write = multi_write;
            po.ctx = &mr;
            ETW_CHECK(etw_pipeline_new_multi(&mr.p, mr.m, &po) == ETW_OK);
            if (!mr.p) continue;
            etw_reader_stats st;
            ETW_CHECK_INT(etw_pipeline_scan(mr.p, NULL, &st), ETW_E_INVALID_ARG);
            ETW_CHECK_INT(etw_pipeline_run(mr.p), ETW_E_INVALID_ARG); /* not pre-scanned */
            ETW_CHECK(etw_pipeline_prescan(mr.p) == ETW_OK);
            ETW_CHECK(etw_pipeline_run(mr.p) == ETW_OK);
            ETW_CHECK_INT(etw_pipeline_stats_get(mr.p)->events_read, 360994);
            etw_pipeline_free(mr.p);
            etw_multi_free(mr.m);
            ETW_CHECK_INT(mr.s.len, ref.len);
            ETW_CHECK(mr.s.len == ref.len && memcmp(mr.s.p, ref.p, ref.len) == 0);
            free(mr.s.p);
        }
        free(ref.p);
    }
}

int main(void) {
    ETW_RUN(test_net_one_pass_same_bytes);
    ETW_RUN(test_file_order_prescan_same_bytes);
    ETW_RUN(test_manifests_same_bytes);
    ETW_RUN(test_max_events);
    ETW_RUN(test_select_render);
    ETW_RUN(test_scan_counts);
    ETW_RUN(test_multi_same_bytes);
    return ETW_TEST_DONE();
}
