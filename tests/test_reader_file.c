/* test_reader_file.c - reading a trace by path: the mapped file (buffers read
 * in place), pread (etw_reader_options.no_map) and bytes in memory give the
 * same events, byte for byte, and so does etw_reader_next_ref mixed with
 * etw_reader_next; and a mapped file's resident pages stay a few
 * MiB however large the file, for the ordered reader (with a rewind) and for
 * the pipeline's scan on two threads. */
#if !defined(_POSIX_C_SOURCE)
#define _POSIX_C_SOURCE 200809L
#endif
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "etw_test.h"
#include "etwdecode/etw_pipeline.h"
#include "etwdecode/etw_reader.h"

/* Buffer header: its on-disk size is the first u32 (FORMATS.md section 1). */
#define BUF_SIZE_FIELD 0
#define MIB (1024 * 1024)

static uint8_t *load(const char *path, size_t *n) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    uint8_t *p = NULL;
    if (fseek(f, 0, SEEK_END) == 0) {
        long sz = ftell(f);
        if (sz > 0 && fseek(f, 0, SEEK_SET) == 0 && (p = malloc((size_t)sz)) != NULL &&
            fread(p, 1, (size_t)sz, f) != (size_t)sz) {
            free(p);
            p = NULL;
        }
        if (p) *n = (size_t)sz;
    }
    fclose(f);
    return p;
}

static int same_event(const etw_event *a, const etw_event *b) {
    return a->form == b->form && a->flags == b->flags && a->event_property == b->event_property &&
           a->pointer_size == b->pointer_size && !memcmp(&a->provider, &b->provider, sizeof a->provider) &&
           a->id == b->id && a->version == b->version && a->opcode == b->opcode && a->level == b->level &&
           a->task == b->task && a->keywords == b->keywords && a->group == b->group && a->pid == b->pid &&
           a->tid == b->tid && a->cpu == b->cpu && a->raw_timestamp == b->raw_timestamp &&
           a->timestamp == b->timestamp && a->buffer_file_offset == b->buffer_file_offset &&
           a->record_offset == b->record_offset && a->buffer_compressed == b->buffer_compressed &&
           a->is_logfile_header == b->is_logfile_header && a->ext_size == b->ext_size &&
           a->ext_count == b->ext_count && a->user_data_len == b->user_data_len &&
           (!a->ext_size || !memcmp(a->ext_data, b->ext_data, a->ext_size)) &&
           (!a->user_data_len || !memcmp(a->user_data, b->user_data, a->user_data_len));
}

/* The three inputs of one trace, read side by side. */
static void same_three_ways(const char *name, long long expected) {
    char path[512];
    snprintf(path, sizeof path, "%s/%s", ETW_TEST_DATA_DIR, name);
    size_t n = 0;
    uint8_t *bytes = load(path, &n);
    ETW_CHECK(bytes != NULL);
    if (!bytes) return;
    etw_reader_options pread_opt;
    memset(&pread_opt, 0, sizeof pread_opt);
    pread_opt.no_map = 1;
    etw_reader *mapped = NULL, *pread = NULL, *mem = NULL, *ref = NULL;
    ETW_CHECK_INT(etw_reader_open_file(&mapped, path, NULL), ETW_OK);
    ETW_CHECK_INT(etw_reader_open_memory(&ref, bytes, n, NULL), ETW_OK);
    ETW_CHECK_INT(etw_reader_open_file(&pread, path, &pread_opt), ETW_OK);
    ETW_CHECK_INT(etw_reader_open_memory(&mem, bytes, n, NULL), ETW_OK);
    if (mapped && pread && mem && ref) {
        for (int pass = 0; pass < 2; pass++) {
            long long count = 0, differ = 0;
            etw_event a, b, c, d;
            const etw_event *e = NULL;
            etw_status sa, sb, sc, sd;
            for (;;) {
                sa = etw_reader_next(mapped, &a);
                sb = etw_reader_next(pread, &b);
                sc = etw_reader_next(mem, &c);
                /* etw_reader_next_ref, mixed with etw_reader_next: one position */
                if (count % 3 == 2) {
                    sd = etw_reader_next(ref, &d);
                    e = &d;
                } else {
                    sd = etw_reader_next_ref(ref, &e);
                }
                if (sa != ETW_OK || sb != ETW_OK || sc != ETW_OK || sd != ETW_OK) break;
                count++;
                if (!same_event(&a, &b) || !same_event(&a, &c) || !same_event(&a, e)) differ++;
            }
            ETW_CHECK_INT(sa, ETW_END);
            ETW_CHECK_INT(sb, ETW_END);
            ETW_CHECK_INT(sc, ETW_END);
            ETW_CHECK_INT(sd, ETW_END);
            if (sd == ETW_END && count % 3 != 2) ETW_CHECK(e == NULL);
            ETW_CHECK_INT(etw_reader_next_ref(ref, &e), ETW_END);
            ETW_CHECK(e == NULL);
            ETW_CHECK_INT(etw_reader_next_ref(ref, NULL), ETW_E_INVALID_ARG);
            ETW_CHECK_INT(etw_reader_next_ref(NULL, &e), ETW_E_INVALID_ARG);
            ETW_CHECK_INT(etw_reader_stats_get(ref)->events, expected);
            ETW_CHECK_INT(count, expected);
            ETW_CHECK_INT(differ, 0);
            const etw_reader_stats *x = etw_reader_stats_get(mapped), *y = etw_reader_stats_get(pread);
            ETW_CHECK_INT(x->events, y->events);
            ETW_CHECK_INT(x->bytes_decompressed, y->bytes_decompressed);
            ETW_CHECK_INT(x->problems, y->problems);
            ETW_CHECK_INT(x->first_timestamp, y->first_timestamp);
            ETW_CHECK_INT(x->last_timestamp, y->last_timestamp);
            /* a second pass after a rewind reads the same again */
            etw_reader_rewind(mapped);
            etw_reader_rewind(pread);
            etw_reader_rewind(mem);
            etw_reader_rewind(ref);
        }
    }
    etw_reader_close(ref);
    etw_reader_close(mapped);
    etw_reader_close(pread);
    etw_reader_close(mem);
    free(bytes);
}

static void test_same_events(void) {
    /* counts: tests/test_reader_counts.c and test_etwdump.py */
    same_three_ways("net.4.5.2.x64.etl", 179474);         /* compressed, 8 processors */
    same_three_ways("ShutdownPerfDiagLogger.etl", 17078); /* uncompressed kernel trace */
    same_three_ways("HTTP_Server.etl", 2042);
}

/* Resident pages mapped from files (Linux /proc), in bytes; -1 elsewhere. */
static long long rss_file(void) {
    FILE *f = fopen("/proc/self/status", "r");
    if (!f) return -1;
    char line[256];
    long long kb = -1;
    while (fgets(line, sizeof line, f))
        if (sscanf(line, "RssFile: %lld kB", &kb) == 1) break;
    fclose(f);
    return kb < 0 ? -1 : kb * 1024;
}

/* The uncompressed kernel trace's first buffer, then its other buffers
 * `repeat` times: the copies repeat the same timestamps, so one processor's
 * stream reads through the whole file before the other's starts (the worst
 * case for giving pages back: a stream far behind the others). */
static int make_large(const char *dst, int repeat, size_t *size) {
    size_t n = 0;
    uint8_t *d = load(ETW_TEST_DATA_DIR "/ShutdownPerfDiagLogger.etl", &n);
    if (!d) return 0;
    uint32_t first = (uint32_t)d[BUF_SIZE_FIELD] | (uint32_t)d[BUF_SIZE_FIELD + 1] << 8 |
                     (uint32_t)d[BUF_SIZE_FIELD + 2] << 16 | (uint32_t)d[BUF_SIZE_FIELD + 3] << 24;
    FILE *o = first < n ? fopen(dst, "wb") : NULL;
    int ok = o != NULL && fwrite(d, 1, first, o) == first;
    for (int i = 0; ok && i < repeat; i++) ok = fwrite(d + first, 1, n - first, o) == n - first;
    if (o && fclose(o) != 0) ok = 0;
    *size = first + (size_t)repeat * (n - first);
    free(d);
    return ok;
}

typedef struct scan_peak {
    atomic_llong peak;
    atomic_llong events;
} scan_peak;

/* On the pipeline's threads: sample every 1024th event. */
static int scan_watch(void *ctx, void *state, const etw_event *ev) {
    (void)state;
    (void)ev;
    scan_peak *sp = ctx;
    if ((atomic_fetch_add(&sp->events, 1) & 1023) == 1023) {
        long long r = rss_file();
        long long cur = atomic_load(&sp->peak);
        while (r > cur && !atomic_compare_exchange_weak(&sp->peak, &cur, r)) {
        }
    }
    return 0;
}

static void test_resident_pages_bounded(void) {
    if (rss_file() < 0) return; /* no /proc: nothing to measure */
    char path[128];
    snprintf(path, sizeof path, "/tmp/etwdecode-test-reader-file-%ld.etl", (long)getpid());
    size_t size = 0;
    ETW_CHECK(make_large(path, 16, &size));
    ETW_CHECK(size > 48 * MIB);
    /* What the mapping may hold: the window behind the furthest buffer read
     * (1 MiB) and a chunk (512 KiB), what faults map around the processors'
     * current buffers (2 MiB on each side), the libraries' own pages. */
    const long long bound = 12 * MIB;
    long long base = rss_file();
    etw_reader *r = NULL;
    ETW_CHECK_INT(etw_reader_open_file(&r, path, NULL), ETW_OK);
    if (r) {
        for (int pass = 0; pass < 2; pass++) {
            long long peak = 0, events = 0;
            etw_event ev;
            while (etw_reader_next(r, &ev) == ETW_OK) {
                if ((++events & 1023) == 0) {
                    long long now = rss_file() - base;
                    if (now > peak) peak = now;
                }
            }
            ETW_CHECK(events > 16 * 17000);
            ETW_CHECK(peak < bound);
            if (peak >= bound) fprintf(stderr, "  pass %d: %lld bytes mapped\n", pass, peak);
            etw_reader_rewind(r);
        }
        etw_reader_close(r);
    }
    /* the pipeline's unordered scan, on two threads */
    r = NULL;
    ETW_CHECK_INT(etw_reader_open_file(&r, path, NULL), ETW_OK);
    if (r) {
        etw_pipeline_options po;
        memset(&po, 0, sizeof po);
        po.threads = 2;
        scan_peak sp;
        atomic_init(&sp.peak, 0);
        atomic_init(&sp.events, 0);
        po.ctx = &sp;
        etw_pipeline *p = NULL;
        ETW_CHECK_INT(etw_pipeline_new(&p, r, &po), ETW_OK);
        etw_reader_stats st;
        if (p) {
            ETW_CHECK_INT(etw_pipeline_scan(p, scan_watch, &st), ETW_OK);
            ETW_CHECK(st.events > 16 * 17000);
            long long peak = atomic_load(&sp.peak) - base;
            ETW_CHECK(atomic_load(&sp.events) > 16 * 17000);
            ETW_CHECK(peak < bound);
            if (peak >= bound) fprintf(stderr, "  scan: %lld bytes mapped\n", peak);
            etw_pipeline_free(p);
        }
        etw_reader_close(r);
    }
    remove(path);
}

/* Issue 23 item 6: a file cut shorter while it is read with pread. The
 * reader opens a copy of ShutdownPerfDiagLogger.etl (its size and buffer
 * index taken then), the copy is cut to half after the first event, and the
 * rest is read: the reader says the file changed size (ETW_E_IO, "changed
 * size"), at an offset within the new size's last buffer or the first one
 * past it, and never reports damage at an offset past the new end. */
typedef struct shrink_diags {
    int changed, other_past_end, total;
    uint64_t new_size;
} shrink_diags;

static void shrink_diag(void *ctx, const etw_diag *d) {
    shrink_diags *s = ctx;
    s->total++;
    if (d->status == ETW_E_IO && strstr(d->message, "changed size")) s->changed++;
    else if (d->file_offset >= s->new_size) s->other_past_end++;
}

static void test_file_shrinks(void) {
    char src[512], path[128];
    snprintf(src, sizeof src, "%s/ShutdownPerfDiagLogger.etl", ETW_TEST_DATA_DIR);
    snprintf(path, sizeof path, "/tmp/etwdecode-test-shrink-%ld.etl", (long)getpid());
    size_t n = 0;
    uint8_t *bytes = load(src, &n);
    ETW_CHECK(bytes != NULL);
    if (!bytes) return;
    FILE *f = fopen(path, "wb");
    ETW_CHECK(f && fwrite(bytes, 1, n, f) == n);
    if (f) fclose(f);
    free(bytes);
    shrink_diags sd;
    memset(&sd, 0, sizeof sd);
    sd.new_size = (uint64_t)(n / 2);
    etw_reader_options o;
    memset(&o, 0, sizeof o);
    o.no_map = 1;
    o.on_diag = shrink_diag;
    o.diag_ctx = &sd;
    etw_reader *r = NULL;
    ETW_CHECK_INT(etw_reader_open_file(&r, path, &o), ETW_OK);
    if (r) {
        etw_event ev;
        long long events = 0;
        ETW_CHECK_INT(etw_reader_next(r, &ev), ETW_OK);
        ETW_CHECK_INT(truncate(path, (off_t)(n / 2)), 0);
        while (etw_reader_next(r, &ev) == ETW_OK) events++;
        ETW_CHECK(events > 0 && events < 17078);
        ETW_CHECK(sd.changed > 0);
        ETW_CHECK_INT(sd.other_past_end, 0);
        etw_reader_close(r);
    }
    remove(path);
}

int main(void) {
    ETW_RUN(test_file_shrinks);
    ETW_RUN(test_same_events);
    ETW_RUN(test_resident_pages_bounded);
    return ETW_TEST_DONE();
}
