/* bench_decode.c - decode throughput of etw_decoder + the JSON writer, on
 * one core (a program, not a test: it prints a table and returns 0).
 *
 *   bench_decode [seconds] [data-dir]
 *
 * (a) TraceLogging: tests/data/primitive-types.etl is read into memory, its
 *     5 TraceLogging events (solar_system/PrimitiveTypesTest) are copied out
 *     once, then decoded in a loop for >= `seconds` (default 2);
 * (b) manifest: tests/data/gcevents.etl with tests/data/ClrEtwAll.man loaded,
 *     its 69 Microsoft-Windows-DotNETRuntime events in a loop;
 *   for both, three figures per event:
 *     resolve  etw_decoder_resolve alone (a cache hit),
 *     walk     resolve + etw_decoder_begin + etw_decode_next to the end,
 *     json     etw_json_event with the decoder (it resolves, then renders
 *              every field), as etwdump does for each event;
 * (c) the whole etwdump pipeline on tests/data/net.4.5.2.x64.etl (4.9 MB,
 *     compressed buffers) with the CLR manifest: per pass a new decoder
 *     (manifest load timed apart), etw_decoder_prescan, then every event
 *     through etw_reader_next + etw_json_event, lines appended to a
 *     discarded buffer; events/s, file MB/s and JSON MB/s, with and
 *     without the manifest load;
 * (d) the CLR manifest load: etw_decoder_new + etw_decoder_add_manifest of
 *     ClrEtwAll.man (720 KB), best and median of repeated loads;
 * (e) kernel (MOF) events: the 17,077 NT Kernel Logger events of
 *     tests/data/ShutdownPerfDiagLogger.etl (Image, Thread, Process,
 *     EventTrace) copied out once and decoded in a loop, as (a).
 *
 * Every figure is given against wall time (CLOCK_MONOTONIC) and process CPU
 * time (CLOCK_PROCESS_CPUTIME_ID): on a loaded machine the CPU figure is the
 * one to trust. Targets: >= 1 million events/s for (a) and (b) json, >= 2
 * million for (e) json.
 *
 * Data files: the data-dir argument, else tests/data relative to the working
 * directory, else relative to this source file (so the binary works from a
 * build tree). */
#if !defined(_WIN32) && !defined(_POSIX_C_SOURCE)
#define _POSIX_C_SOURCE 200809L
#endif
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "etwdecode/etw_decode.h"
#include "etwdecode/etw_decoder.h"
#include "etwdecode/etw_json.h"
#include "etwdecode/etw_reader.h"

#define MB (1000.0 * 1000.0)

/* ---- clocks ---- */

typedef struct stamp {
    double wall, cpu;
} stamp;

static double clock_s(clockid_t id) {
    struct timespec ts;
    clock_gettime(id, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}
static stamp now(void) {
    stamp s;
    s.wall = clock_s(CLOCK_MONOTONIC);
    s.cpu = clock_s(CLOCK_PROCESS_CPUTIME_ID);
    return s;
}
static stamp since(stamp a) {
    stamp b = now();
    b.wall -= a.wall;
    b.cpu -= a.cpu;
    return b;
}

/* ---- files ---- */

static char g_dir[1024];

static const char *data_path(const char *name, char *buf, size_t cap) {
    snprintf(buf, cap, "%s/%s", g_dir, name);
    return buf;
}

static void pick_dir(const char *arg) {
    if (arg) {
        snprintf(g_dir, sizeof g_dir, "%s", arg);
        return;
    }
    FILE *f = fopen("tests/data/gcevents.etl", "rb");
    if (f) {
        fclose(f);
        snprintf(g_dir, sizeof g_dir, "tests/data");
        return;
    }
    const char *src = __FILE__; /* .../bench/bench_decode.c */
    const char *cut = strstr(src, "bench/bench_decode.c");
    if (cut) snprintf(g_dir, sizeof g_dir, "%.*stests/data", (int)(cut - src), src);
    else snprintf(g_dir, sizeof g_dir, "tests/data");
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

/* ---- events copied out of a reader ---- */

typedef struct owned {
    etw_event ev;
    uint8_t *ext, *ud;
} owned;

static int owned_add(owned **v, size_t *n, size_t *cap, const etw_event *ev) {
    if (*n == *cap) {
        size_t nc = *cap ? *cap * 2 : 16;
        owned *p = realloc(*v, nc * sizeof *p);
        if (!p) return 0;
        *v = p;
        *cap = nc;
    }
    owned *o = &(*v)[*n];
    o->ev = *ev;
    o->ext = ev->ext_size ? malloc(ev->ext_size) : NULL;
    o->ud = ev->user_data_len ? malloc(ev->user_data_len) : NULL;
    if ((ev->ext_size && !o->ext) || (ev->user_data_len && !o->ud)) return 0;
    if (o->ext) memcpy(o->ext, ev->ext_data, ev->ext_size);
    if (o->ud) memcpy(o->ud, ev->user_data, ev->user_data_len);
    o->ev.ext_data = o->ext;
    o->ev.user_data = o->ud;
    (*n)++;
    return 1;
}

static void owned_free(owned *v, size_t n) {
    for (size_t i = 0; i < n; i++) {
        free(v[i].ext);
        free(v[i].ud);
    }
    free(v);
}

static const etw_guid CLR_GUID = {0xe13c0d23, 0xccbc, 0x4e12, {0x93, 0x1b, 0xd9, 0xcc, 0x2e, 0xee, 0x27, 0xe4}};

static int is_tl(const etw_event *ev) {
    etw_ext_item it;
    return ev->ext_count && etw_event_find_ext(ev, ETW_EXT_EVENT_SCHEMA_TL, &it) == ETW_OK;
}
static int is_kernel(const etw_event *ev) {
    return !ev->is_logfile_header && (ev->form == ETW_FORM_SYSTEM || ev->form == ETW_FORM_COMPACT ||
                                      ev->form == ETW_FORM_PERFINFO);
}
static int is_clr(const etw_event *ev) {
    return ev->form == ETW_FORM_EVENT_HEADER && etw_guid_equal(&ev->provider, &CLR_GUID);
}

/* Every event of a trace in memory that `keep` accepts. */
static owned *collect(const uint8_t *file, size_t size, int (*keep)(const etw_event *), size_t *n) {
    etw_reader *r = NULL;
    *n = 0;
    if (etw_reader_open_memory(&r, file, size, NULL) != ETW_OK) return NULL;
    owned *v = NULL;
    size_t cap = 0;
    etw_event ev;
    while (etw_reader_next(r, &ev) == ETW_OK)
        if (keep(&ev) && !owned_add(&v, n, &cap, &ev)) break;
    etw_reader_close(r);
    return v;
}

/* ---- (a) and (b): a loop over a few events ---- */

typedef struct loop_result {
    double ev_wall, ev_cpu; /* events per second */
    double ns_cpu;          /* CPU ns per event */
    double out_bytes;       /* JSON bytes per event (json mode) */
    int failures;           /* events that did not resolve or render */
} loop_result;

enum { MODE_RESOLVE, MODE_WALK, MODE_JSON };

static volatile uint64_t g_sink;

static loop_result run_loop(etw_decoder *d, etw_json *j, const owned *evs, size_t n, int mode, double min_s) {
    loop_result res;
    memset(&res, 0, sizeof res);
    uint64_t done = 0, bytes = 0, sink = 0;
    /* warm up: every schema resolved once, the text buffer grown */
    for (size_t i = 0; i < n; i++) {
        const etw_schema *s;
        const char *line;
        size_t len;
        if (etw_decoder_resolve(d, &evs[i].ev, &s, NULL) != ETW_OK) res.failures++;
        if (etw_json_event(j, NULL, &evs[i].ev, &line, &len) != ETW_OK) res.failures++;
    }
    stamp t0 = now();
    stamp el;
    for (;;) {
        for (int rep = 0; rep < 256; rep++) {
            for (size_t i = 0; i < n; i++) {
                const etw_event *ev = &evs[i].ev;
                if (mode == MODE_JSON) {
                    const char *line;
                    size_t len;
                    if (etw_json_event(j, NULL, ev, &line, &len) == ETW_OK) {
                        bytes += len;
                        sink += (uint8_t)line[len / 2];
                    }
                    continue;
                }
                const etw_schema *s = NULL;
                if (etw_decoder_resolve(d, ev, &s, NULL) != ETW_OK) continue;
                sink += s->prop_count;
                if (mode == MODE_WALK) {
                    etw_decode_cursor c;
                    etw_value v;
                    if (etw_decoder_begin(d, ev, s, &c) != ETW_OK) continue;
                    while (etw_decode_next(&c, &v) == ETW_OK) sink += v.size;
                }
            }
            done += n;
        }
        el = since(t0);
        if (el.wall >= min_s) break;
    }
    g_sink += sink;
    res.ev_wall = (double)done / el.wall;
    res.ev_cpu = (double)done / el.cpu;
    res.ns_cpu = el.cpu * 1e9 / (double)done;
    res.out_bytes = mode == MODE_JSON ? (double)bytes / (double)done : 0;
    return res;
}

static void print_row(const char *what, const char *mode, const loop_result *r) {
    printf("%-34s %-8s %12.0f %12.0f %9.1f", what, mode, r->ev_wall, r->ev_cpu, r->ns_cpu);
    if (r->out_bytes > 0) printf("   %6.0f B/event", r->out_bytes);
    if (r->failures) printf("   (%d failures!)", r->failures);
    printf("\n");
}

static int bench_events(const char *title, owned *evs, size_t n, const char *manifest, double min_s,
                        loop_result *json_out) {
    etw_decoder *d = NULL;
    if (etw_decoder_new(&d, NULL) != ETW_OK) return 0;
    if (manifest && etw_decoder_add_manifest(d, manifest, NULL) != ETW_OK) {
        fprintf(stderr, "bench_decode: cannot load %s\n", manifest);
        etw_decoder_free(d);
        return 0;
    }
    etw_json *j = NULL;
    etw_json_options jo;
    memset(&jo, 0, sizeof jo);
    jo.decoder = d;
    if (etw_json_new(&j, NULL, &jo) != ETW_OK) {
        etw_decoder_free(d);
        return 0;
    }
    static const char *names[] = {"resolve", "walk", "json"};
    for (int mode = MODE_RESOLVE; mode <= MODE_JSON; mode++) {
        loop_result r = run_loop(d, j, evs, n, mode, mode == MODE_JSON ? min_s : min_s / 2);
        print_row(title, names[mode], &r);
        if (mode == MODE_JSON) *json_out = r;
    }
    const etw_decoder_stats *st = etw_decoder_stats_get(d);
    printf("%-44s schemas %u, lookups %llu, hits %llu, misses %llu, errors %llu\n", "", st->schemas,
           (unsigned long long)st->lookups, (unsigned long long)st->hits, (unsigned long long)st->misses,
           (unsigned long long)st->errors);
    etw_json_free(j);
    etw_decoder_free(d);
    return 1;
}

/* ---- (c) the etwdump pipeline ---- */

typedef struct sink_buf {
    char *d;
    size_t len, cap;
} sink_buf;

/* Append a line to a fixed buffer that is reused (the output is discarded
 * but still copied, as a buffered fwrite would). */
static void sink_put(sink_buf *b, const char *p, size_t n) {
    if (b->len + n > b->cap) b->len = 0;
    if (n > b->cap) return;
    memcpy(b->d + b->len, p, n);
    b->len += n;
}

typedef struct pipe_result {
    stamp load, prescan, total; /* total: prescan + events (manifest load not included) */
    uint64_t events, out_bytes, errors;
    int passes;
} pipe_result;

static int bench_pipeline(const uint8_t *file, size_t size, const char *manifest, double min_s, pipe_result *pr) {
    memset(pr, 0, sizeof *pr);
    sink_buf out = {malloc(1 << 16), 0, 1 << 16};
    if (!out.d) return 0;
    stamp wall0 = now();
    do {
        stamp t = now();
        etw_decoder *d = NULL;
        if (etw_decoder_new(&d, NULL) != ETW_OK || etw_decoder_add_manifest(d, manifest, NULL) != ETW_OK) {
            etw_decoder_free(d);
            free(out.d);
            return 0;
        }
        stamp l = since(t);
        pr->load.wall += l.wall;
        pr->load.cpu += l.cpu;

        t = now();
        etw_reader *r = NULL;
        if (etw_reader_open_memory(&r, file, size, NULL) != ETW_OK) {
            etw_decoder_free(d);
            free(out.d);
            return 0;
        }
        etw_json *j = NULL;
        etw_json_options jo;
        memset(&jo, 0, sizeof jo);
        jo.decoder = d;
        etw_json_new(&j, NULL, &jo);
        stamp p0 = now();
        etw_decoder_prescan(d, r);
        stamp p = since(p0);
        pr->prescan.wall += p.wall;
        pr->prescan.cpu += p.cpu;
        etw_event ev;
        while (etw_reader_next(r, &ev) == ETW_OK) {
            const char *line;
            size_t len;
            if (etw_json_event(j, r, &ev, &line, &len) == ETW_OK) {
                sink_put(&out, line, len);
                pr->out_bytes += len;
            }
            pr->events++;
        }
        etw_decoder_finish(d);
        pr->errors += etw_decoder_stats_get(d)->errors;
        etw_json_free(j);
        etw_reader_close(r);
        etw_decoder_free(d);
        stamp e = since(t);
        pr->total.wall += e.wall;
        pr->total.cpu += e.cpu;
        pr->passes++;
    } while (since(wall0).wall < min_s || pr->passes < 2);
    free(out.d);
    return 1;
}

/* ---- (d) manifest load ---- */

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static void bench_manifest_load(const char *manifest, double min_s) {
    double wall[512], cpu[512];
    int n = 0;
    stamp w0 = now();
    uint32_t providers = 0;
    while (n < 512 && (n < 5 || since(w0).wall < min_s / 2)) {
        stamp t = now();
        etw_decoder *d = NULL;
        if (etw_decoder_new(&d, NULL) != ETW_OK) return;
        etw_status s = etw_decoder_add_manifest(d, manifest, &providers);
        stamp e = since(t);
        etw_decoder_free(d);
        if (s != ETW_OK) {
            fprintf(stderr, "bench_decode: cannot load %s\n", manifest);
            return;
        }
        wall[n] = e.wall * 1e3;
        cpu[n] = e.cpu * 1e3;
        n++;
    }
    qsort(wall, (size_t)n, sizeof wall[0], cmp_double);
    qsort(cpu, (size_t)n, sizeof cpu[0], cmp_double);
    printf("%-34s %-8s %9.2f ms %9.2f ms %9.2f ms %9.2f ms   (%d loads, %u providers)\n", "(d) CLR manifest load",
           "", wall[0], wall[n / 2], cpu[0], cpu[n / 2], n, providers);
}

int main(int argc, char **argv) {
    double min_s = argc > 1 ? atof(argv[1]) : 2.0;
    if (min_s <= 0) min_s = 2.0;
    pick_dir(argc > 2 ? argv[2] : NULL);
    char p1[1200], p2[1200], p3[1200], pm[1200], p5[1200];
    const char *tl_path = data_path("primitive-types.etl", p1, sizeof p1);
    const char *gc_path = data_path("gcevents.etl", p2, sizeof p2);
    const char *net_path = data_path("net.4.5.2.x64.etl", p3, sizeof p3);
    const char *man_path = data_path("ClrEtwAll.man", pm, sizeof pm);
    const char *k_path = data_path("ShutdownPerfDiagLogger.etl", p5, sizeof p5);

    size_t tl_size = 0, gc_size = 0, net_size = 0, k_size = 0;
    uint8_t *tl_file = load(tl_path, &tl_size);
    uint8_t *gc_file = load(gc_path, &gc_size);
    uint8_t *net_file = load(net_path, &net_size);
    uint8_t *k_file = load(k_path, &k_size);
    if (!tl_file || !gc_file || !net_file || !k_file) {
        fprintf(stderr, "bench_decode: cannot read the traces in %s (give the data directory as argument 2)\n",
                g_dir);
        return 1;
    }
    size_t n_tl = 0, n_gc = 0;
    owned *tl = collect(tl_file, tl_size, is_tl, &n_tl);
    owned *gc = collect(gc_file, gc_size, is_clr, &n_gc);
    size_t n_k = 0;
    owned *kev = collect(k_file, k_size, is_kernel, &n_k);

    printf("bench_decode: one core, >= %.1f s per figure; events/s against wall and process CPU time\n\n", min_s);
    printf("%-34s %-8s %12s %12s %9s\n", "case", "mode", "ev/s wall", "ev/s CPU", "ns/ev CPU");
    printf("%-34s %-8s %12s %12s %9s\n", "----", "----", "---------", "--------", "---------");
    loop_result a, b;
    memset(&a, 0, sizeof a);
    memset(&b, 0, sizeof b);
    char title[64];
    snprintf(title, sizeof title, "(a) TraceLogging, %zu events", n_tl);
    if (n_tl) bench_events(title, tl, n_tl, NULL, min_s, &a);
    snprintf(title, sizeof title, "(b) CLR manifest, %zu events", n_gc);
    if (n_gc) bench_events(title, gc, n_gc, man_path, min_s, &b);
    loop_result e;
    memset(&e, 0, sizeof e);
    snprintf(title, sizeof title, "(e) kernel MOF, %zu events", n_k);
    if (n_k) bench_events(title, kev, n_k, NULL, min_s, &e);

    pipe_result pr;
    if (bench_pipeline(net_file, net_size, man_path, min_s, &pr)) {
        double ev_pass = (double)pr.events / pr.passes;
        printf("\n(c) etwdump pipeline, net.4.5.2.x64.etl (%.2f MB, %.0f events/pass, %d passes, %.1f MB JSON/pass,\n"
               "    %llu events/pass without a schema)\n",
               (double)net_size / MB, ev_pass, pr.passes, (double)pr.out_bytes / pr.passes / MB,
               (unsigned long long)(pr.errors / (uint64_t)pr.passes));
        printf("    %-38s %12s %12s %10s %10s %10s %10s\n", "", "ev/s wall", "ev/s CPU", "file MB/s", "(CPU)",
               "JSON MB/s", "(CPU)");
        double in_mb = (double)net_size * pr.passes / MB, out_mb = (double)pr.out_bytes / MB;
        printf("    %-38s %12.0f %12.0f %10.1f %10.1f %10.1f %10.1f\n", "prescan + read + resolve + JSON",
               (double)pr.events / pr.total.wall, (double)pr.events / pr.total.cpu, in_mb / pr.total.wall,
               in_mb / pr.total.cpu, out_mb / pr.total.wall, out_mb / pr.total.cpu);
        double tw = pr.total.wall + pr.load.wall, tc = pr.total.cpu + pr.load.cpu;
        printf("    %-38s %12.0f %12.0f %10.1f %10.1f %10.1f %10.1f\n", "... + CLR manifest load",
               (double)pr.events / tw, (double)pr.events / tc, in_mb / tw, in_mb / tc, out_mb / tw, out_mb / tc);
        printf("    %-38s %9.1f ms wall %9.1f ms CPU per pass\n", "of which prescan",
               pr.prescan.wall * 1e3 / pr.passes, pr.prescan.cpu * 1e3 / pr.passes);
    }
    printf("\n%-34s %-8s %12s %12s %12s %12s\n", "", "", "best wall", "median wall", "best CPU", "median CPU");
    bench_manifest_load(man_path, min_s);

    printf("\ntargets: (a) json %s 1M events/s (%.2fM CPU), (b) json %s 1M events/s (%.2fM CPU), "
           "(e) json %s 2M events/s (%.2fM CPU)\n",
           a.ev_cpu >= 1e6 ? ">=" : "BELOW", a.ev_cpu / 1e6, b.ev_cpu >= 1e6 ? ">=" : "BELOW", b.ev_cpu / 1e6,
           e.ev_cpu >= 2e6 ? ">=" : "BELOW", e.ev_cpu / 1e6);
    owned_free(tl, n_tl);
    owned_free(gc, n_gc);
    owned_free(kev, n_k);
    free(k_file);
    free(tl_file);
    free(gc_file);
    free(net_file);
    return (int)(g_sink & 0); /* keep the sink alive */
}
