/* bench_floor.c - the least any summary of a trace costs, as a process to
 * time against `etwdump --stats` and its peers (bench/stats_vs_snail.py).
 *
 *   bench_floor read FILE     start, read every byte of FILE (read(2) into
 *                             a 1 MiB buffer) and look at one byte in 64:
 *                             what a tool that reads the file at all pays
 *   bench_floor events FILE   start, open FILE with the library's reader and
 *                             take every event (etw_reader_next_ref:
 *                             buffers decompressed, records parsed, the
 *                             processors' streams merged) and look at its
 *                             header: the library's own floor, before any
 *                             schema, name or count
 *   bench_floor names FILE    events, and each one's schema from a decoder
 *                             (etw_decoder_resolve; MetaData records and
 *                             EventSource manifests learned as they come):
 *                             the least a summary that names its events
 *                             costs with this library, before any count,
 *                             process, payload check or stack
 *
 * Prints the sum of what it looked at (so that nothing is optimized away)
 * and the number of events. With no arguments (make bench) it does all three,
 * in process, on tests/data's ShutdownPerfDiagLogger.etl and
 * net.4.5.2.x64.etl, and prints the CPU time of each (without the start
 * of a process). This is a program, not a test.
 */
#if !defined(_WIN32) && !defined(_POSIX_C_SOURCE)
#define _POSIX_C_SOURCE 200809L
#endif
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "etwdecode/etw_decoder.h"
#include "etwdecode/etw_reader.h"

#define READ_CHUNK ((size_t)1 << 20)

static int floor_read(const char *path) {
    FILE *f = fopen(path, "rb");
    if (!f) {
        perror(path);
        return 1;
    }
    static unsigned char buf[READ_CHUNK];
    uint64_t sum = 0, bytes = 0;
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, f)) > 0) {
        for (size_t i = 0; i < n; i += 64) sum += buf[i];
        bytes += n;
    }
    fclose(f);
    printf("read %llu bytes, sum %llu\n", (unsigned long long)bytes, (unsigned long long)sum);
    return 0;
}

/* The library's reader on path (its defaults: mapped), or NULL, said. */
static etw_reader *open_reader(const char *path) {
    etw_reader *r = NULL;
    etw_status s = etw_reader_open_file(&r, path, NULL);
    if (s != ETW_OK) fprintf(stderr, "%s: %s\n", path, etw_strerror(s));
    return s == ETW_OK ? r : NULL;
}

static int floor_events(const char *path) {
    etw_reader *r = open_reader(path);
    if (!r) return 1;
    const etw_event *ev;
    uint64_t events = 0, sum = 0;
    while (etw_reader_next_ref(r, &ev) == ETW_OK) {
        events++;
        sum += (uint64_t)ev->timestamp + ev->provider.data1 + ev->id + ev->opcode + ev->user_data_len;
    }
    etw_reader_close(r);
    printf("%llu events, sum %llu\n", (unsigned long long)events, (unsigned long long)sum);
    return 0;
}

static int floor_names(const char *path) {
    etw_reader *r = open_reader(path);
    if (!r) return 1;
    etw_decoder *d = NULL;
    if (etw_decoder_new(&d, NULL) != ETW_OK) {
        etw_reader_close(r);
        return 1;
    }
    const etw_event *ev;
    uint64_t events = 0, named = 0, sum = 0;
    while (etw_reader_next_ref(r, &ev) == ETW_OK) {
        events++;
        if (etw_decoder_learn_kind(d, ev) != ETW_LEARN_NONE) (void)etw_decoder_learn(d, ev);
        const etw_schema *sc = NULL;
        if (etw_decoder_resolve(d, ev, &sc, NULL) == ETW_OK) {
            named++;
            sum += sc->id;
        }
    }
    etw_decoder_free(d);
    etw_reader_close(r);
    printf("%llu events, %llu named, sum %llu\n", (unsigned long long)events, (unsigned long long)named,
           (unsigned long long)sum);
    return 0;
}

#ifndef ETW_BENCH_DATA_DIR
#define ETW_BENCH_DATA_DIR "tests/data"
#endif

static void timed(const char *mode, const char *path) {
    clock_t t0 = clock();
    int rc = !strcmp(mode, "read") ? floor_read(path) : !strcmp(mode, "names") ? floor_names(path) : floor_events(path);
    double ms = (double)(clock() - t0) * 1000.0 / CLOCKS_PER_SEC;
    if (!rc) printf("  %-6s %7.2f ms CPU  %s\n", mode, ms, path);
}

int main(int argc, char **argv) {
    if (argc == 1) {
        static const char *const traces[] = {ETW_BENCH_DATA_DIR "/ShutdownPerfDiagLogger.etl",
                                             ETW_BENCH_DATA_DIR "/net.4.5.2.x64.etl"};
        for (size_t i = 0; i < sizeof traces / sizeof traces[0]; i++) {
            timed("read", traces[i]);
            timed("events", traces[i]);
            timed("names", traces[i]);
        }
        return 0;
    }
    if (argc != 3 || (strcmp(argv[1], "read") && strcmp(argv[1], "events") && strcmp(argv[1], "names"))) {
        fprintf(stderr, "usage: bench_floor read|events|names FILE\n");
        return 2;
    }
    if (!strcmp(argv[1], "read")) return floor_read(argv[2]);
    return !strcmp(argv[1], "names") ? floor_names(argv[2]) : floor_events(argv[2]);
}
