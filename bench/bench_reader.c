/* bench_reader.c - throughput and memory of the ETL container reader.
 *
 *   bench_reader [uncompressed.etl] [compressed.etl] [repeat] [seconds]
 *
 * (a) Loads the uncompressed trace (default tests/data/ShutdownPerfDiagLogger.etl)
 *     into memory and iterates all its events through etw_reader_open_memory,
 *     rewinding, for at least `seconds` (default 2) on one core: events/s,
 *     user-data MB/s and file MB/s.
 * (b) The same for a compressed trace (default tests/data/net.4.5.2.x64.etl),
 *     also giving decompressed MB/s (etw_reader_stats.bytes_decompressed).
 * (c) Peak RSS (getrusage ru_maxrss) after reading a small trace and then a
 *     large one through etw_reader_open_file. The large file is synthetic:
 *     the uncompressed trace's first buffer followed by all its other buffers
 *     `repeat` times (default 200, ~600 MB), written to /tmp by streaming
 *     copies and removed at the end. Memory must stay at about one buffer
 *     per processor plus the buffer index, whatever the file size.
 *
 * Default paths are tried relative to the working directory, then relative
 * to this source file's directory (so the binary works from the build tree).
 * This is a program, not a test: it prints a table and returns 0.
 */
#if !defined(_WIN32) && !defined(_POSIX_C_SOURCE)
#define _POSIX_C_SOURCE 200809L
#endif
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "etwdecode/etw_reader.h"

#define MIB (1024.0 * 1024.0)

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Peak resident set size so far, in MiB (Linux: ru_maxrss is in KiB). */
static double peak_rss_mib(void) {
    struct rusage ru;
    if (getrusage(RUSAGE_SELF, &ru) != 0) return -1.0;
    return (double)ru.ru_maxrss / 1024.0;
}

/* Current resident set size in MiB (Linux /proc), or -1. */
static double current_rss_mib(void) {
    FILE *f = fopen("/proc/self/statm", "r");
    if (!f) return -1.0;
    unsigned long size = 0, resident = 0;
    int ok = fscanf(f, "%lu %lu", &size, &resident) == 2;
    fclose(f);
    if (!ok) return -1.0;
    return (double)resident * (double)sysconf(_SC_PAGESIZE) / MIB;
}

/* A default input: relative to the working directory, else to the source
 * tree this file was compiled from. */
static const char *default_path(const char *rel, char *buf, size_t cap) {
    FILE *f = fopen(rel, "rb");
    if (f) {
        fclose(f);
        return rel;
    }
    const char *src = __FILE__; /* .../bench/bench_reader.c */
    const char *cut = strstr(src, "bench/bench_reader.c");
    if (cut) {
        snprintf(buf, cap, "%.*s%s", (int)(cut - src), src, rel);
        return buf;
    }
    return rel;
}

static uint8_t *load(const char *path, size_t *n) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    uint8_t *p = NULL;
    if (fseek(f, 0, SEEK_END) == 0) {
        long sz = ftell(f);
        if (sz > 0 && fseek(f, 0, SEEK_SET) == 0 && (p = malloc((size_t)sz)) != NULL) {
            if (fread(p, 1, (size_t)sz, f) != (size_t)sz) {
                free(p);
                p = NULL;
            } else {
                *n = (size_t)sz;
            }
        }
    }
    fclose(f);
    return p;
}

typedef struct pass_totals {
    uint64_t passes;
    uint64_t events;
    uint64_t user_bytes;
    uint64_t file_bytes;
    uint64_t decompressed;
    uint64_t problems;
    double seconds;
} pass_totals;

/* One full iteration of r; adds to t. */
static void one_pass(etw_reader *r, pass_totals *t, uint64_t file_size) {
    etw_event ev;
    uint64_t events = 0, ud = 0;
    while (etw_reader_next(r, &ev) == ETW_OK) {
        events++;
        ud += ev.user_data_len;
    }
    const etw_reader_stats *st = etw_reader_stats_get(r);
    t->passes++;
    t->events += events;
    t->user_bytes += ud;
    t->file_bytes += file_size;
    t->decompressed += st->bytes_decompressed;
    t->problems += st->problems;
}

/* Iterate the in-memory trace, rewinding, for at least min_s seconds. */
static int bench_memory(const char *path, double min_s, pass_totals *t) {
    size_t n = 0;
    uint8_t *data = load(path, &n);
    memset(t, 0, sizeof *t);
    if (!data) {
        fprintf(stderr, "cannot read %s\n", path);
        return 0;
    }
    etw_reader *r;
    etw_status s = etw_reader_open_memory(&r, data, n, NULL);
    if (s != ETW_OK) {
        fprintf(stderr, "%s: open failed: %s\n", path, etw_strerror(s));
        free(data);
        return 0;
    }
    /* Warm-up pass (not counted): faults the input in. */
    pass_totals warm;
    memset(&warm, 0, sizeof warm);
    one_pass(r, &warm, n);
    double t0 = now_s(), t1;
    do {
        etw_reader_rewind(r);
        one_pass(r, t, n);
        t1 = now_s();
    } while (t1 - t0 < min_s);
    t->seconds = t1 - t0;
    etw_reader_close(r);
    free(data);
    return 1;
}

/* Read a file once through the file API. */
static int read_file_once(const char *path, pass_totals *t) {
    memset(t, 0, sizeof *t);
    etw_reader *r;
    double t0 = now_s();
    etw_status s = etw_reader_open_file(&r, path, NULL);
    if (s != ETW_OK) {
        fprintf(stderr, "%s: open failed: %s\n", path, etw_strerror(s));
        return 0;
    }
    FILE *f = fopen(path, "rb");
    uint64_t size = 0;
    if (f) {
        if (fseek(f, 0, SEEK_END) == 0) size = (uint64_t)ftell(f);
        fclose(f);
    }
    one_pass(r, t, size);
    t->seconds = now_s() - t0;
    etw_reader_close(r);
    return 1;
}

/* Write dst: src's first buffer, then the rest of src `repeat` times, by
 * streaming copies (nothing large held in memory). Returns bytes written. */
static uint64_t make_large(const char *src, const char *dst, int repeat) {
    FILE *in = fopen(src, "rb");
    if (!in) return 0;
    uint8_t hdr[4];
    uint64_t written = 0;
    FILE *out = NULL;
    uint8_t *chunk = malloc(1u << 16);
    if (!chunk || fread(hdr, 1, 4, in) != 4) goto done;
    uint32_t first = (uint32_t)hdr[0] | ((uint32_t)hdr[1] << 8) | ((uint32_t)hdr[2] << 16) |
                     ((uint32_t)hdr[3] << 24);
    if (fseek(in, 0, SEEK_END) != 0) goto done;
    long total = ftell(in);
    if (total <= (long)first) goto done;
    out = fopen(dst, "wb");
    if (!out) goto done;
    for (int rep = -1; rep < repeat; rep++) {
        /* rep -1: the first buffer; then the rest of the file each time. */
        long from = rep < 0 ? 0 : (long)first, to = rep < 0 ? (long)first : total;
        if (fseek(in, from, SEEK_SET) != 0) goto fail;
        for (long pos = from; pos < to;) {
            size_t want = (size_t)(to - pos < (1 << 16) ? to - pos : (1 << 16));
            if (fread(chunk, 1, want, in) != want || fwrite(chunk, 1, want, out) != want) goto fail;
            pos += (long)want;
            written += want;
        }
    }
    if (fclose(out) != 0) written = 0;
    out = NULL;
    goto done;
fail:
    written = 0;
done:
    if (out) fclose(out);
    fclose(in);
    free(chunk);
    return written;
}

static void print_row(const char *label, const char *api, const pass_totals *t) {
    double s = t->seconds > 0 ? t->seconds : 1e-9;
    printf("%-34s %-6s %6llu %8.3f %10.2f %9.1f %9.1f", label, api, (unsigned long long)t->passes,
           s, (double)t->events / s / 1e6, (double)t->user_bytes / s / MIB,
           (double)t->file_bytes / s / MIB);
    if (t->decompressed)
        printf(" %11.1f", (double)t->decompressed / s / MIB);
    else
        printf(" %11s", "-");
    printf(" %8llu\n", (unsigned long long)(t->passes ? t->events / t->passes : 0));
}

static const char *base_name(const char *p) {
    const char *s = strrchr(p, '/');
    return s ? s + 1 : p;
}

int main(int argc, char **argv) {
    char b1[4096], b2[4096], b3[4096];
    const char *plain = argc > 1 ? argv[1] : default_path("tests/data/ShutdownPerfDiagLogger.etl", b1, sizeof b1);
    const char *packed = argc > 2 ? argv[2] : default_path("tests/data/net.4.5.2.x64.etl", b2, sizeof b2);
    int repeat = argc > 3 ? atoi(argv[3]) : 200;
    double min_s = argc > 4 ? atof(argv[4]) : 2.0;
    const char *small = default_path("tests/data/primitive-types.etl", b3, sizeof b3);
    char large[256];
    snprintf(large, sizeof large, "/tmp/etwdecode_bench_large_%ld.etl", (long)getpid());
    if (repeat < 1) repeat = 1;

    /* (c) first, so the in-memory passes do not raise the high-water mark. */
    double rss0 = peak_rss_mib();
    pass_totals small_t, large_t;
    int small_ok = read_file_once(small, &small_t);
    double rss_small = peak_rss_mib();
    double t0 = now_s();
    uint64_t large_size = make_large(plain, large, repeat);
    double make_s = now_s() - t0;
    double rss_made = peak_rss_mib();
    int large_ok = large_size > 0 && read_file_once(large, &large_t);
    double rss_large = peak_rss_mib();
    double rss_large_now = current_rss_mib();
    if (large_size) remove(large);

    /* (a) and (b). */
    pass_totals plain_t, packed_t;
    int plain_ok = bench_memory(plain, min_s, &plain_t);
    int packed_ok = bench_memory(packed, min_s, &packed_t);

    printf("etwdecode container reader benchmark (one core)\n\n");
    printf("%-34s %-6s %6s %8s %10s %9s %9s %11s %8s\n", "input", "api", "passes", "seconds",
           "Mevents/s", "user MB/s", "file MB/s", "decomp MB/s", "ev/pass");
    printf("%-34s %-6s %6s %8s %10s %9s %9s %11s %8s\n", "-----", "---", "------", "-------",
           "---------", "---------", "---------", "-----------", "-------");
    if (plain_ok) print_row(base_name(plain), "memory", &plain_t);
    if (packed_ok) print_row(base_name(packed), "memory", &packed_t);
    if (small_ok) print_row(base_name(small), "file", &small_t);
    if (large_ok) {
        char label[64];
        snprintf(label, sizeof label, "synthetic %.0f MiB (%dx)", (double)large_size / MIB, repeat);
        print_row(label, "file", &large_t);
    }
    printf("(MB = MiB; user = payload bytes returned; file = input bytes; decomp = "
           "decompressor output)\n\n");

    printf("peak RSS (getrusage ru_maxrss)\n");
    printf("  at start                              %8.1f MiB\n", rss0);
    printf("  after reading %-22s  %8.1f MiB\n", base_name(small), rss_small);
    printf("  after writing the synthetic file      %8.1f MiB  (%.1f s)\n", rss_made, make_s);
    printf("  after reading the synthetic file      %8.1f MiB  (file %.0f MiB; +%.1f MiB; current %.1f MiB)\n",
           rss_large, (double)large_size / MIB, rss_large - rss_made, rss_large_now);
    if (plain_ok && plain_t.problems) printf("note: %llu problems reported reading %s\n",
                                             (unsigned long long)plain_t.problems, plain);
    return plain_ok && packed_ok ? 0 : 1;
}
