/* fuzz_etwdump.c - libFuzzer target for the whole path etwdump runs: the
 * input's bytes are a trace file, read by the container reader and decoded
 * through the pipeline (etw_pipeline.h) as `etwdump -j 1 --messages -m
 * HTTP_Server.man TRACE` does (tools/etwdump/output.c, run_events_parallel):
 * no worker threads, one decoder with every schema source (the user
 * manifest added by the setup callback, EventSource manifests and MetaData
 * records learned from the trace as the events go, TraceLogging, MOF), a
 * JSON renderer (etw_render.h) per worker, messages on, the output taken
 * from the pipeline's write callback. Some inputs also take --raw (first
 * byte odd) or --file-order (last byte >= 0x80, with the pipeline's
 * pre-scan, as etwdump does then).
 *
 * Seeds: fuzz/corpus/etwdump/ - small real traces of tests/data (whole, or
 * their first buffers): primitive-types (TraceLogging), SelfDescribingSingle-
 * Event (EventSource self-describing), smallEtlFile (32-bit, MOF),
 * lxcore_kernel (kernel), HTTP_Server (manifest events the given manifest
 * decodes, with messages), net.4.5.2.x64 (MetaData records, EventSource
 * manifest chunks, compressed buffers), ShutdownPerfDiagLogger.
 *
 * Checks (abort on violation): open fails only with a known status; the
 * run ends with ETW_OK; what is written is whole lines, each one JSON
 * object ending in '\n', valid UTF-8, with no key repeated in any object
 * (docs/json-output.md), at most LINE_MAX_BYTES; one line per event read
 * (no selection), as many events as the reader counted, within a bound on
 * the events; the output of one input is at most OUT_MAX bytes (the
 * amplification bounds of docs/limits.md keep it far below).
 *
 * The manifest file is read once (LLVMFuzzerInitialize) but parsed into the
 * fresh decoder of every input, so no state crosses inputs: the library has
 * no way to share parsed manifests between decoders (a decoder owns its
 * manifest set, which compiles schemas into that decoder's cache). Parsing
 * costs about a quarter of the time per seed.
 * Build: cmake -DETW_FUZZ=ON -DCMAKE_C_COMPILER=clang (target fuzz_etwdump).
 * Run:   build-fuzz/fuzz_etwdump -max_len=262144 /tmp/c fuzz/corpus/etwdump */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "etwdecode/etw_pipeline.h"
#include "etwdecode/etw_render.h"
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

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static char *manifest;
static size_t manifest_len;

/* The manifest's text, read once per process (parsed once per input). */
int LLVMFuzzerInitialize(int *argc, char ***argv) {
    (void)argc;
    (void)argv;
    FILE *f = fopen(ETW_TEST_DATA_DIR "/HTTP_Server.man", "rb");
    if (!f) {
        fprintf(stderr, "fuzz_etwdump: %s/HTTP_Server.man not found: no manifest\n", ETW_TEST_DATA_DIR);
        return 0;
    }
    static char buf[1 << 17];
    manifest_len = fread(buf, 1, sizeof buf, f);
    fclose(f);
    manifest = buf;
    return 0;
}

static volatile uint64_t g_sink;

static void on_diag(void *ctx, const etw_diag *d) {
    (void)ctx;
    FUZZ_ASSERT(d->message != NULL);
    g_sink += strlen(d->message);
}

/* One run: what the pipeline's callbacks see. */
typedef struct run {
    const etw_reader *r;
    int raw;
    int setups;
    uint64_t rendered, rendered_bytes; /* by render */
    uint64_t lines, out;               /* by write, split into lines */
    char *line;                        /* a line cut across two writes */
    size_t line_len, line_cap;
} run;

/* As etwdump's par_setup: the user's manifest, into every decoder. */
static etw_status fz_setup(void *ctx, etw_decoder *d) {
    run *ru = ctx;
    ru->setups++;
    if (manifest) {
        etw_status ms = etw_decoder_add_manifest_xml(d, manifest, manifest_len, "HTTP_Server.man", NULL);
        FUZZ_ASSERT(ms == ETW_OK);
    }
    return ETW_OK;
}

/* As etwdump's par_worker_new: a JSON renderer per worker decoder. */
static void *fz_worker_new(void *ctx, etw_decoder *d) {
    run *ru = ctx;
    etw_render_options ro;
    memset(&ro, 0, sizeof ro);
    ro.format = ETW_RENDER_JSON;
    ro.json.decoder = d;
    ro.json.raw_always = ru->raw;
    ro.json.messages = 1;
    etw_renderer *rd = NULL;
    FUZZ_ASSERT(etw_renderer_new(&rd, NULL, &ro) == ETW_OK);
    return rd;
}

static void fz_worker_free(void *ctx, void *state) {
    (void)ctx;
    etw_renderer_free(state);
}

static etw_status fz_render(void *ctx, void *state, etw_decoder *d, const etw_event *ev,
                            etw_pipeline_out *out) {
    run *ru = ctx;
    (void)d;
    const char *text;
    size_t len;
    FUZZ_ASSERT(etw_renderer_event(state, ru->r, ev, &text, &len) == ETW_OK);
    ru->rendered++; /* threads = 0: on the calling thread */
    ru->rendered_bytes += len;
    return etw_pipeline_emit(out, text, len);
}

static void check_line(run *ru, const char *line, size_t len) {
    FUZZ_ASSERT(len >= 3 && line[len - 1] == '\n' && line[0] == '{');
    FUZZ_ASSERT(len <= LINE_MAX_BYTES);
    FUZZ_ASSERT(memchr(line, 0, len) == NULL);
    FUZZ_ASSERT(utf8_valid((const unsigned char *)line, len - 1));
    FUZZ_ASSERT(json_valid_unique(line, len - 1));
    ru->lines++;
}

/* What etwdump would write to its output: checked line by line (a line may
 * be split across two writes). */
static etw_status fz_write(void *ctx, const void *data, size_t len) {
    run *ru = ctx;
    const char *p = data, *end = p + len;
    ru->out += len;
    FUZZ_ASSERT(ru->out <= OUT_MAX);
    while (p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        size_t take = nl ? (size_t)(nl - p) + 1 : (size_t)(end - p);
        if (!nl || ru->line_len) {
            if (ru->line_len + take > ru->line_cap) {
                size_t cap = (ru->line_len + take) * 2;
                char *b = realloc(ru->line, cap);
                FUZZ_ASSERT(b != NULL);
                ru->line = b;
                ru->line_cap = cap;
            }
            memcpy(ru->line + ru->line_len, p, take);
            ru->line_len += take;
            if (nl) {
                check_line(ru, ru->line, ru->line_len);
                ru->line_len = 0;
            }
        } else {
            check_line(ru, p, take);
        }
        p += take;
    }
    return ETW_OK;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    etw_reader_options ro;
    memset(&ro, 0, sizeof ro);
    ro.max_buffer_size = FUZZ_MAX_BUFFER;
    ro.on_diag = on_diag;
    ro.file_order = size > 0 && (data[size - 1] & 0x80); /* --file-order on some inputs */
    etw_reader *r = NULL;
    etw_status s = etw_reader_open_memory(&r, data, size, &ro);
    if (s != ETW_OK) {
        /* etwdump stops here too: "cannot read", exit 2 */
        FUZZ_ASSERT(r == NULL);
        FUZZ_ASSERT(s == ETW_E_NOT_ETL || s == ETW_E_TRUNCATED || s == ETW_E_CORRUPT ||
                    s == ETW_E_LIMIT || s == ETW_E_UNSUPPORTED || s == ETW_E_NOMEM);
        return 0;
    }

    run ru;
    memset(&ru, 0, sizeof ru);
    ru.r = r;
    ru.raw = size > 0 && (data[0] & 1); /* --raw on some inputs */
    etw_pipeline_options po;
    memset(&po, 0, sizeof po);
    po.threads = 0; /* etwdump -j 1: everything on this thread */
    po.decoder.on_diag = on_diag;
    po.setup = fz_setup;
    po.worker_new = fz_worker_new;
    po.worker_free = fz_worker_free;
    po.render = fz_render;
    po.write = fz_write;
    po.ctx = &ru;
    etw_pipeline *p = NULL;
    FUZZ_ASSERT(etw_pipeline_new(&p, r, &po) == ETW_OK);
    FUZZ_ASSERT(ru.setups == 1);
    if (ro.file_order) FUZZ_ASSERT(etw_pipeline_prescan(p) == ETW_OK); /* as etwdump --file-order */
    s = etw_pipeline_run(p);
    FUZZ_ASSERT(s == ETW_OK);
    FUZZ_ASSERT(ru.line_len == 0); /* the output ends with a whole line */
    const etw_pipeline_stats *ps = etw_pipeline_stats_get(p);
    FUZZ_ASSERT(ps->events_read <= EVENT_BOUND(size));
    FUZZ_ASSERT(ps->events_read == etw_reader_stats_get(r)->events);
    FUZZ_ASSERT(ps->events_written == ps->events_read); /* no selection: every event */
    FUZZ_ASSERT(ru.rendered == ps->events_written && ru.lines == ru.rendered);
    FUZZ_ASSERT(ru.out == ru.rendered_bytes && ps->bytes_written == ru.out);
    g_sink += ru.out;
    free(ru.line);
    etw_pipeline_free(p);
    etw_reader_close(r);
    return 0;
}
