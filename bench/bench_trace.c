/* bench_trace.c - whole real traces, as etwdump reads them: from the file,
 * every record (etw_reader_next_ref; and etw_reader_next, which copies each
 * event out), then decoded to JSON and written to a file, on one thread and
 * on two; and the unordered scan (counts) on one and two.
 *
 *   bench_trace [runs]
 *
 * Traces: net.4.5.2.x64.etl (compressed, 8 processors, manifest + kernel
 * events), and a kernel-only trace ten times the size of
 * ShutdownPerfDiagLogger.etl (its first buffer, then all its other buffers
 * 10 times - 31.5 MB - written to /tmp and removed at the end). Each figure is
 * `runs` (default 5) runs: best and median of events per second of wall time
 * and of process CPU time (user + sys, getrusage). Two threads can only be
 * faster in wall time when two cores are free: the load average is printed.
 * A program, not a test: it prints a table and returns 0.
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

#include "etwdecode/etwdecode.h"

#ifndef ETW_BENCH_DATA_DIR
#define ETW_BENCH_DATA_DIR "tests/data"
#endif
/* Buffer header: its on-disk size is the first u32 (docs/FORMATS.md section 1). */
#define BUF_HEADER 0x48u
#define KERNEL_REPEAT 10
#define MAX_RUNS 15

static double wall_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static double cpu_s(void) {
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (double)ru.ru_utime.tv_sec + (double)ru.ru_stime.tv_sec +
           ((double)ru.ru_utime.tv_usec + (double)ru.ru_stime.tv_usec) * 1e-6;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* The kernel trace x10: first buffer once, the others KERNEL_REPEAT times. */
static int make_kernel10(const char *src, const char *dst) {
    FILE *f = fopen(src, "rb");
    if (!f) return 0;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    uint8_t *d = malloc((size_t)n);
    int ok = d && fread(d, 1, (size_t)n, f) == (size_t)n;
    fclose(f);
    if (!ok) {
        free(d);
        return 0;
    }
    uint32_t first = (uint32_t)d[0] | (uint32_t)d[1] << 8 | (uint32_t)d[2] << 16 | (uint32_t)d[3] << 24;
    FILE *o = fopen(dst, "wb");
    if (!o || first < BUF_HEADER || first > (uint32_t)n) {
        if (o) fclose(o);
        free(d);
        return 0;
    }
    fwrite(d, 1, first, o);
    for (int i = 0; i < KERNEL_REPEAT; i++) fwrite(d + first, 1, (size_t)n - first, o);
    ok = fclose(o) == 0;
    free(d);
    return ok;
}

static etw_status write_file(void *ctx, const void *data, size_t len) {
    return fwrite(data, 1, len, ctx) == len ? ETW_OK : ETW_E_IO;
}

static int count_event(void *ctx, void *state, const etw_event *ev) {
    (void)ctx;
    (void)state;
    (void)ev;
    return 0;
}

enum { READ, READ_COPY, DECODE, SCAN };

/* The decode rows write here (a file system on disk, like a user's). */
#define BENCH_OUT "/tmp/etwdecode-bench-trace.json"

/* One run: events done, and its wall and CPU seconds. */
static uint64_t one_run(const char *path, int what, unsigned threads, double *wall, double *cpu) {
    double w0 = wall_s(), c0 = cpu_s();
    uint64_t n = 0;
    etw_reader *r;
    *wall = *cpu = 0;
    if (etw_reader_open_file(&r, path, NULL) != ETW_OK) return 0;
    if (what == READ) {
        const etw_event *ev;
        while (etw_reader_next_ref(r, &ev) == ETW_OK) n++;
    } else if (what == READ_COPY) {
        etw_event ev;
        while (etw_reader_next(r, &ev) == ETW_OK) n++;
    } else {
        /* a new file each run: truncating the last run's 80 MB made fopen
         * wait for its writeback (a 1-thread run took 85-150 ms) */
        if (what == DECODE) remove(BENCH_OUT);
        FILE *out = what == DECODE ? fopen(BENCH_OUT, "wb") : NULL;
        etw_pipeline_options po;
        memset(&po, 0, sizeof po);
        po.threads = threads;
        po.write = write_file;
        po.ctx = out;
        etw_pipeline *p;
        if ((what == SCAN || out) && etw_pipeline_new(&p, r, &po) == ETW_OK) {
            if (what == DECODE) {
                if (etw_pipeline_run(p) == ETW_OK) n = etw_pipeline_stats_get(p)->events_written;
            } else {
                etw_reader_stats st;
                if (etw_pipeline_scan(p, count_event, &st) == ETW_OK) n = st.events;
            }
            etw_pipeline_free(p);
        }
        if (out) fclose(out);
    }
    etw_reader_close(r);
    *wall = wall_s() - w0;
    *cpu = cpu_s() - c0;
    return n;
}

static void row(const char *trace, const char *what_name, int what, unsigned threads, const char *path, int runs) {
    double wr[MAX_RUNS], cr[MAX_RUNS];
    uint64_t n = 0;
    for (int i = 0; i < runs; i++) {
        double w = 0, c = 0;
        n = one_run(path, what, threads, &w, &c);
        wr[i] = w > 0 ? (double)n / w : 0;
        cr[i] = c > 0 ? (double)n / c : 0;
    }
    qsort(wr, (size_t)runs, sizeof wr[0], cmp_double);
    qsort(cr, (size_t)runs, sizeof cr[0], cmp_double);
    printf("%-22s %-22s %3u %9llu %10.2f %10.2f %10.2f %10.2f\n", trace, what_name, threads ? threads : 1,
           (unsigned long long)n, wr[runs - 1] / 1e6, wr[runs / 2] / 1e6, cr[runs - 1] / 1e6, cr[runs / 2] / 1e6);
}

int main(int argc, char **argv) {
    int runs = argc > 1 ? atoi(argv[1]) : 5;
    if (runs < 1) runs = 1;
    if (runs > MAX_RUNS) runs = MAX_RUNS;
    const char *net = ETW_BENCH_DATA_DIR "/net.4.5.2.x64.etl";
    const char *k10 = "/tmp/etwdecode-bench-kernel10.etl";
    int have_k10 = make_kernel10(ETW_BENCH_DATA_DIR "/ShutdownPerfDiagLogger.etl", k10);
    double load[1] = {0};
    FILE *la = fopen("/proc/loadavg", "r");
    if (la) {
        if (fscanf(la, "%lf", &load[0]) != 1) load[0] = -1;
        fclose(la);
    }
    printf("etwdecode whole traces from the file (%d runs each; M events/s; load average %.2f, %u processors)\n\n",
           runs, load[0], etw_pipeline_cpu_count());
    printf("%-22s %-22s %3s %9s %10s %10s %10s %10s\n", "trace", "work", "thr", "events", "best wall",
           "med wall", "best CPU", "med CPU");
    struct {
        const char *name, *path;
        int ok;
    } t[2] = {{"net.4.5.2.x64.etl", net, 1}, {"kernel x10 (31.5 MB)", k10, have_k10}};
    for (int i = 0; i < 2; i++) {
        if (!t[i].ok) continue;
        row(t[i].name, "read every record", READ, 0, t[i].path, runs);
        row(t[i].name, "read, copy each event", READ_COPY, 0, t[i].path, runs);
        row(t[i].name, "decode + JSON to file", DECODE, 0, t[i].path, runs);
        row(t[i].name, "decode + JSON to file", DECODE, 2, t[i].path, runs);
        row(t[i].name, "scan (count)", SCAN, 0, t[i].path, runs);
        row(t[i].name, "scan (count)", SCAN, 2, t[i].path, runs);
    }
    remove(BENCH_OUT);
    if (have_k10) remove(k10);
    return 0;
}
