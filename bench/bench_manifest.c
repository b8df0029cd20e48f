/* bench_manifest.c - how long loading an instrumentation manifest takes,
 * and how long building every one of its schemas takes.
 *
 *   bench_manifest [manifest.man] [loads]
 *
 * Defaults: tests/data/ClrEtwAll.man (the .NET runtime manifest, 720 KB,
 * 5 providers, 510 events), 200 loads. The file is read into memory once;
 * each load parses it into a fresh set (so the time is parse + compile, no
 * I/O). Also reported: loading into one set again and again (every load
 * replaces the providers of the previous one), and resolving every
 * (provider, id, version) of the set once into a fresh schema cache
 * (pointer width 8), which is what a decoder pays on the first event of
 * each kind.
 */
#define _POSIX_C_SOURCE 200809L

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "schema/etw_cache.h"
#include "source/etw_manifest.h"
#include "source/etw_manifest_ext.h"

#ifndef ETW_BENCH_DATA_DIR
#define ETW_BENCH_DATA_DIR "tests/data"
#endif

static double now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* CPU time of this process: steadier than wall time on a busy machine. */
static double cpu_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static char *read_all(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    if (fseek(f, 0, SEEK_END) != 0) {
        fclose(f);
        return NULL;
    }
    long n = ftell(f);
    if (n < 0 || fseek(f, 0, SEEK_SET) != 0) {
        fclose(f);
        return NULL;
    }
    char *buf = malloc((size_t)n + 1);
    if (buf && fread(buf, 1, (size_t)n, f) != (size_t)n) {
        free(buf);
        buf = NULL;
    }
    fclose(f);
    *len = (size_t)n;
    return buf;
}

typedef struct resolve_ctx {
    etw_manifest_set *m;
    etw_cache *cache;
    uint32_t ok, failed;
} resolve_ctx;

static int resolve_one(void *ctx, const etw_guid *g, uint16_t id, uint8_t version) {
    resolve_ctx *r = ctx;
    const etw_schema *s;
    if (etw_manifest_resolve(r->m, r->cache, g, id, version, 8, &s, NULL) == ETW_OK) r->ok++;
    else r->failed++;
    return 0;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int main(int argc, char **argv) {
    const char *path = argc > 1 ? argv[1] : ETW_BENCH_DATA_DIR "/ClrEtwAll.man";
    int loads = argc > 2 ? atoi(argv[2]) : 200;
    if (loads < 1) loads = 1;
    size_t len;
    char *xml = read_all(path, &len);
    if (!xml) {
        fprintf(stderr, "cannot read %s\n", path);
        return 1;
    }

    /* fresh set per load */
    double *t = malloc(sizeof(double) * (size_t)loads);
    if (!t) return 1;
    uint32_t providers = 0, events = 0;
    double cpu0 = cpu_ms();
    for (int i = 0; i < loads; i++) {
        etw_manifest_set *m;
        if (etw_manifest_set_new(&m, NULL) != ETW_OK) return 1;
        double t0 = now_ms();
        etw_status st = etw_manifest_load_xml(m, xml, len, path, &providers);
        t[i] = now_ms() - t0;
        if (st != ETW_OK) {
            fprintf(stderr, "load failed: %s\n", etw_strerror(st));
            return 1;
        }
        events = etw_manifest_event_count(m);
        etw_manifest_set_free(m);
    }
    double cpu = (cpu_ms() - cpu0) / loads; /* includes set_new/free */
    qsort(t, (size_t)loads, sizeof *t, cmp_double);
    double sum = 0;
    for (int i = 0; i < loads; i++) sum += t[i];
    printf("%s: %zu bytes, %u providers, %u events\n", path, len, providers, events);
    printf("load (fresh set):   mean %.3f ms, median %.3f ms, min %.3f ms, max %.3f ms over %d loads (%.1f MB/s)\n",
           sum / loads, t[loads / 2], t[0], t[loads - 1], loads, (double)len / 1e3 / t[loads / 2]);
    printf("load (fresh set):   %.3f ms CPU time per load (process CPU clock)\n", cpu);

    /* one set, every load replaces the previous providers */
    etw_manifest_set *m;
    if (etw_manifest_set_new(&m, NULL) != ETW_OK) return 1;
    int reloads = loads < 50 ? loads : 50;
    double t0 = now_ms();
    for (int i = 0; i < reloads; i++) {
        if (etw_manifest_load_xml(m, xml, len, path, NULL) != ETW_OK) return 1;
    }
    printf("load (replacing):   mean %.3f ms over %d loads into one set\n", (now_ms() - t0) / reloads, reloads);

    /* resolve every event once into a fresh cache */
    double best = 1e30;
    uint32_t ok = 0, failed = 0;
    for (int round = 0; round < 20; round++) {
        resolve_ctx r = {m, NULL, 0, 0};
        if (etw_cache_new(&r.cache, NULL) != ETW_OK) return 1;
        t0 = now_ms();
        etw_manifest_foreach_event(m, resolve_one, &r);
        double dt = now_ms() - t0;
        if (dt < best) best = dt;
        ok = r.ok;
        failed = r.failed;
        etw_cache_free(r.cache);
    }
    printf("resolve all:        %.3f ms for %u schemas (%.2f us each, best of 20), %u failed\n", best, ok,
           ok ? best * 1e3 / ok : 0.0, failed);
    etw_manifest_set_free(m);
    free(t);
    free(xml);
    return failed != 0;
}
