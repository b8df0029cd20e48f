/* fuzz_report.c - libFuzzer target for the reports (src/report/,
 * etw_report.h): hostile payloads read by field name, bounded tables.
 *
 * Two modes, by the first byte:
 *  - even: the rest is a trace file; every event is resolved and fed to a
 *    report of every kind (selected or skipped by a bit of the event's
 *    time, so both paths run), with tables bounded to 8 rows so that the
 *    drop-with-count paths are reached;
 *  - odd: the rest is a script of synthetic events, 4-byte headers {class,
 *    opcode or id, version, payload length} and that many payload bytes,
 *    made into the events the reports read (kernel Process, DiskIo, FileIo,
 *    TcpIp, UdpIp, PerfInfo as SYSTEM records; the CLR's GC events and
 *    Microsoft-Windows-Kernel-Process as EVENT_HEADER records).
 *
 * Checks (abort on violation): add, skip and every write format return
 * ETW_OK; JSON output is one line starting with {"report": and ending }\n;
 * a second write gives the same bytes.
 * Build: cmake -DETW_FUZZ=ON -DCMAKE_C_COMPILER=clang (target fuzz_report).
 * Seeds: fuzz/corpus/report/ (a trace prefixed by a 0 byte; events.bin, a
 * script touching every report).
 * Run:   build-fuzz/fuzz_report -max_len=262144 /tmp/c fuzz/corpus/report */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "etwdecode/etwdecode.h"

#define FUZZ_ASSERT(c)                                                                         \
    do {                                                                                       \
        if (!(c)) {                                                                            \
            fprintf(stderr, "%s:%d: assertion failed: %s\n", __FILE__, __LINE__, #c);          \
            abort();                                                                           \
        }                                                                                      \
    } while (0)

static const etw_guid G[] = {
    {0x3d6fa8d0u, 0xfe05, 0x11d0, {0x9d, 0xda, 0x00, 0xc0, 0x4f, 0xd7, 0xba, 0x7c}}, /* Process */
    {0x3d6fa8d4u, 0xfe05, 0x11d0, {0x9d, 0xda, 0x00, 0xc0, 0x4f, 0xd7, 0xba, 0x7c}}, /* DiskIo */
    {0x90cbdc39u, 0x4a3e, 0x11d1, {0x84, 0xf4, 0x00, 0x00, 0xf8, 0x04, 0x64, 0xe3}}, /* FileIo */
    {0x9a280ac0u, 0xc8e0, 0x11d1, {0x84, 0xe2, 0x00, 0xc0, 0x4f, 0xb9, 0x98, 0xa2}}, /* TcpIp */
    {0xbf3a50c5u, 0xa9c9, 0x4988, {0xa0, 0x05, 0x2d, 0xf0, 0xb7, 0xc8, 0x0f, 0x80}}, /* UdpIp */
    {0xce1dbfb4u, 0x137e, 0x4da6, {0x87, 0xb0, 0x3f, 0x59, 0xaa, 0x10, 0x2c, 0xbc}}, /* PerfInfo */
    {0xe13c0d23u, 0xccbc, 0x4e12, {0x93, 0x1b, 0xd9, 0xcc, 0x2e, 0xee, 0x27, 0xe4}}, /* CLR */
    {0x22fb2cd6u, 0x0e7b, 0x422b, {0xa0, 0xc7, 0x2f, 0xad, 0x1f, 0xd0, 0xe7, 0x16}}, /* Kernel-Process */
};
#define NG (sizeof G / sizeof *G)

typedef struct sink {
    char *data;
    size_t len, cap;
} sink;

static etw_status sink_write(void *ctx, const char *p, size_t n) {
    sink *s = ctx;
    if (s->len + n > s->cap) {
        size_t c = s->cap ? s->cap : 4096;
        while (c < s->len + n) c *= 2;
        char *d = realloc(s->data, c);
        FUZZ_ASSERT(d);
        s->data = d;
        s->cap = c;
    }
    memcpy(s->data + s->len, p, n);
    s->len += n;
    return ETW_OK;
}

static void feed(etw_report **reps, etw_decoder *d, const etw_event *ev) {
    const etw_schema *s = NULL;
    if (!ev->is_logfile_header) etw_decoder_resolve(d, ev, &s, NULL);
    for (int k = 0; k < ETW_REPORT_KIND_COUNT_; k++) {
        etw_status st = (ev->timestamp & 8) ? etw_report_skip(reps[k], d, ev, s) : etw_report_add(reps[k], d, ev, s);
        FUZZ_ASSERT(st == ETW_OK);
    }
}

static void run_script(etw_report **reps, etw_decoder *d, const uint8_t *p, size_t n) {
    int64_t t = 132000000000000000ll;
    size_t i = 0;
    int count = 0;
    while (i + 4 <= n && count++ < 4096) {
        uint8_t cls = p[i], op = p[i + 1], ver = p[i + 2], len = p[i + 3];
        i += 4;
        if (len > n - i) len = (uint8_t)(n - i);
        etw_event ev;
        memset(&ev, 0, sizeof ev);
        const etw_guid *g = &G[cls % NG];
        ev.provider = *g;
        ev.pointer_size = (cls & 0x80) ? 4 : 8;
        ev.flags = ev.pointer_size == 4 ? ETW_EVENT_FLAG_32_BIT_HEADER : ETW_EVENT_FLAG_64_BIT_HEADER;
        ev.pid = 100u + (op & 3);
        ev.tid = 200u + (ver & 3);
        t += (cls >> 3) * 1000;
        ev.timestamp = ev.raw_timestamp = t;
        if (cls % NG >= 6) { /* manifest events */
            ev.form = ETW_FORM_EVENT_HEADER;
            ev.id = op % 16;
            ev.version = ver % 4;
        } else {
            ev.form = ETW_FORM_SYSTEM;
            ev.flags |= ETW_EVENT_FLAG_CLASSIC_HEADER;
            ev.opcode = op;
            ev.version = ver % 6;
        }
        ev.user_data = p + i;
        ev.user_data_len = len;
        ev.buffer_file_offset = i;
        i += len;
        feed(reps, d, &ev);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 1) return 0;
    etw_decoder *d = NULL;
    FUZZ_ASSERT(etw_decoder_new(&d, NULL) == ETW_OK);
    etw_report *reps[ETW_REPORT_KIND_COUNT_];
    for (int k = 0; k < ETW_REPORT_KIND_COUNT_; k++) {
        etw_report_options o;
        memset(&o, 0, sizeof o);
        o.decoder = d;
        o.max_rows = 8;
        o.perf_freq = (data[0] & 2) ? 0 : 3579545;
        FUZZ_ASSERT(etw_report_new(&reps[k], (etw_report_kind)k, &o) == ETW_OK);
    }
    if (data[0] & 1) {
        run_script(reps, d, data + 1, size - 1);
    } else {
        etw_reader_options ro;
        memset(&ro, 0, sizeof ro);
        ro.max_buffer_size = 1u << 20;
        etw_reader *r = NULL;
        if (etw_reader_open_memory(&r, data + 1, size - 1, &ro) == ETW_OK) {
            const etw_event *ev;
            int n = 0;
            while (n++ < 100000 && etw_reader_next_ref(r, &ev) == ETW_OK) feed(reps, d, ev);
            etw_reader_close(r);
        }
    }
    for (int k = 0; k < ETW_REPORT_KIND_COUNT_; k++) {
        for (int f = ETW_REPORT_TEXT; f <= ETW_REPORT_CSV; f++) {
            sink a = {0}, b = {0};
            FUZZ_ASSERT(etw_report_write(reps[k], (etw_report_format)f, sink_write, &a) == ETW_OK);
            FUZZ_ASSERT(etw_report_write(reps[k], (etw_report_format)f, sink_write, &b) == ETW_OK);
            FUZZ_ASSERT(a.len == b.len && (!a.len || !memcmp(a.data, b.data, a.len)));
            if (f == ETW_REPORT_JSON) {
                FUZZ_ASSERT(a.len >= 12 && !memcmp(a.data, "{\"report\":", 10) && a.data[a.len - 1] == '\n' &&
                            a.data[a.len - 2] == '}');
                FUZZ_ASSERT(memchr(a.data, '\n', a.len) == a.data + a.len - 1);
            }
            free(a.data);
            free(b.data);
        }
        etw_report_stats rs;
        etw_report_stats_get(reps[k], &rs);
        FUZZ_ASSERT(rs.used <= rs.events);
        etw_report_free(reps[k]);
    }
    etw_decoder_free(d);
    return 0;
}
