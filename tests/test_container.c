/* test_container.c - the buffer chain of the container reader (src/etl)
 * against real traces whose buffers do not all look alike, and its cost
 * against hostile ones.
 *
 *   1. LoggerId: every trace of tests/data with its first buffer's LoggerId
 *      set to 0 (or another id), and with the Windows 7 relogger's shape
 *      (first buffer 0, every later one 0x8001), gives every event identical
 *      to the unmodified file, in the same order, with no diagnostic;
 *   2. mixed buffer sizes: the uncompressed traces re-laid with every
 *      buffer cut to its own data (sizes differ buffer to buffer) give the
 *      same events;
 *   3. a lying BufferSize in the first and in the last buffer: reported,
 *      and every event still comes back (each buffer's data is intact);
 *   4. records whose timestamp is far outside the trace's time range are
 *      reported and skipped; every event returned has a valid time;
 *   5. decompression bombs (issue 9.1): compressed buffers that claim a
 *      64 MiB decompressed size on 48 processors, and 1 MB of them on one
 *      processor: peak memory (a counting allocator) and bytes decompressed
 *      stay within the trace's BufferSize per processor;
 *   6. resync cost (issue 9.4): megabytes of `08 00` after the first buffer
 *      are scanned with a number of reads linear in their size.
 *
 * With ETW_TEST_WRITE_DIR set, the hostile inputs of 5 and 6 are also
 * written there (bomb48.etl, bomb1mb.etl, resync.etl) for measuring
 * etwdump by hand.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "etw_test.h"
#include "etwdecode/etw_reader.h"
#include "etwdecode/etw_types.h"

/* WMI_BUFFER_HEADER (ntwmi.h): size, field offsets, flags. */
#define HDR 0x48u
#define OFF_BUFSIZE 0x00u
#define OFF_SAVED 0x04u
#define OFF_CPU 0x28u
#define OFF_LOGGER 0x2Au
#define OFF_FILLED 0x30u
#define OFF_FLAGS 0x34u
#define FLAG_COMPRESSED 0x0040u
/* TRACE_LOGFILE_HEADER fields, from the start of the log-file header
 * record's payload (after its 0x20-byte SYSTEM header): BufferSize +0,
 * NumberOfProcessors +12. */
#define LF_PAYLOAD 0x68u

static uint16_t rd16(const uint8_t *p) { return (uint16_t)(p[0] | (p[1] << 8)); }
static uint32_t rd32(const uint8_t *p) {
    return (uint32_t)p[0] | ((uint32_t)p[1] << 8) | ((uint32_t)p[2] << 16) | ((uint32_t)p[3] << 24);
}
static void wr16(uint8_t *p, uint16_t v) {
    p[0] = (uint8_t)v;
    p[1] = (uint8_t)(v >> 8);
}
static void wr32(uint8_t *p, uint32_t v) {
    for (int i = 0; i < 4; i++) p[i] = (uint8_t)(v >> (8 * i));
}
static void wr64(uint8_t *p, uint64_t v) {
    for (int i = 0; i < 8; i++) p[i] = (uint8_t)(v >> (8 * i));
}

typedef struct blob {
    uint8_t *p;
    size_t n;
} blob;

static blob load(const char *name) {
    blob b = {NULL, 0};
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", ETW_TEST_DATA_DIR, name);
    FILE *f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "cannot open %s\n", path);
        return b;
    }
    if (fseek(f, 0, SEEK_END) == 0) {
        long n = ftell(f);
        if (n > 0 && fseek(f, 0, SEEK_SET) == 0) {
            b.p = malloc((size_t)n);
            if (b.p && fread(b.p, 1, (size_t)n, f) == (size_t)n) {
                b.n = (size_t)n;
            } else {
                free(b.p);
                b.p = NULL;
            }
        }
    }
    fclose(f);
    return b;
}

static uint8_t *dup_exact(const uint8_t *p, size_t n) {
    uint8_t *d = malloc(n ? n : 1);
    if (d && n) memcpy(d, p, n);
    return d;
}

/* The buffers of an intact trace, walked by BufferSize (the test's own
 * reading of the format, independent of the reader). */
#define MAX_BUFS 1024
typedef struct layout {
    size_t n;
    uint64_t off[MAX_BUFS];
    uint32_t size[MAX_BUFS];
} layout;

static void walk(const blob *b, layout *L) {
    L->n = 0;
    uint64_t off = 0;
    while (off + HDR <= b->n && L->n < MAX_BUFS) {
        uint32_t s = rd32(b->p + off);
        if (s < HDR || s > b->n - off) break;
        L->off[L->n] = off;
        L->size[L->n++] = s;
        off += s;
    }
}

/* End of an uncompressed buffer's data: SavedOffset, else FilledBytes. */
static uint32_t data_end(const uint8_t *buf, uint32_t size) {
    uint32_t e = rd32(buf + OFF_SAVED);
    if (e < HDR || e > size) e = rd32(buf + OFF_FILLED);
    if (e < HDR || e > size) e = size;
    return e;
}

/* ------------------------------------------------------------------------ */
/* Event fingerprints                                                       */
/* ------------------------------------------------------------------------ */

static uint64_t fnv(uint64_t h, const void *p, size_t n) {
    const uint8_t *b = p;
    for (size_t i = 0; i < n; i++) h = (h ^ b[i]) * 0x100000001b3ull;
    return h;
}
#define FNV_FIELD(h, x) ((h) = fnv((h), &(x), sizeof(x)))

/* Every field of the event and every byte it borrows. `buffer_ordinal`
 * replaces the buffer's file offset when a test moves buffers. */
static uint64_t fingerprint(const etw_event *ev, uint64_t where) {
    uint64_t h = 0xcbf29ce484222325ull;
    int form = ev->form;
    FNV_FIELD(h, form);
    FNV_FIELD(h, ev->flags);
    FNV_FIELD(h, ev->event_property);
    FNV_FIELD(h, ev->pointer_size);
    FNV_FIELD(h, ev->has_activity_id);
    FNV_FIELD(h, ev->provider);
    FNV_FIELD(h, ev->id);
    FNV_FIELD(h, ev->version);
    FNV_FIELD(h, ev->channel);
    FNV_FIELD(h, ev->level);
    FNV_FIELD(h, ev->opcode);
    FNV_FIELD(h, ev->task);
    FNV_FIELD(h, ev->keywords);
    FNV_FIELD(h, ev->group);
    FNV_FIELD(h, ev->message_number);
    FNV_FIELD(h, ev->message_flags);
    FNV_FIELD(h, ev->pid);
    FNV_FIELD(h, ev->tid);
    FNV_FIELD(h, ev->cpu);
    FNV_FIELD(h, ev->kernel_time);
    FNV_FIELD(h, ev->user_time);
    FNV_FIELD(h, ev->processor_time);
    FNV_FIELD(h, ev->raw_timestamp);
    FNV_FIELD(h, ev->timestamp);
    FNV_FIELD(h, ev->activity_id);
    FNV_FIELD(h, ev->ext_size);
    FNV_FIELD(h, ev->ext_count);
    FNV_FIELD(h, ev->user_data_len);
    FNV_FIELD(h, where);
    FNV_FIELD(h, ev->record_offset);
    FNV_FIELD(h, ev->buffer_compressed);
    FNV_FIELD(h, ev->is_logfile_header);
    if (ev->ext_size) h = fnv(h, ev->ext_data, ev->ext_size);
    if (ev->user_data_len) h = fnv(h, ev->user_data, ev->user_data_len);
    return h;
}

typedef struct diag_log {
    int count;
    char first[240];
} diag_log;

static void on_diag(void *ctx, const etw_diag *d) {
    diag_log *L = ctx;
    if (L->count == 0) snprintf(L->first, sizeof L->first, "%s", d->message ? d->message : "(null)");
    L->count++;
}

typedef struct run_result {
    etw_status open, end;
    size_t n;
    uint64_t *fp;         /* fingerprints in the order returned */
    int bad_time;         /* events whose FILETIME is not a valid time */
    diag_log diags;
    uint64_t buffers_skipped;
} run_result;

/* The file offset of each buffer of `L`, so moved buffers can be named by
 * their ordinal; NULL: use the offset itself. */
static uint64_t where_of(const layout *L, uint64_t bfo) {
    if (!L) return bfo;
    for (size_t i = 0; i < L->n; i++)
        if (L->off[i] == bfo) return i;
    return UINT64_MAX;
}

/* FILETIME of 9999-12-31T23:59:59.9999999Z, the last time the JSON writes. */
#define FILETIME_MAX INT64_C(2650467743999999999)

static void run_bytes(const uint8_t *data, size_t n, const layout *L, size_t bound, run_result *o) {
    memset(o, 0, sizeof *o);
    uint8_t *copy = dup_exact(data, n);
    etw_reader_options opt;
    memset(&opt, 0, sizeof opt);
    opt.on_diag = on_diag;
    opt.diag_ctx = &o->diags;
    etw_reader *r = NULL;
    o->open = etw_reader_open_memory(&r, copy, n, &opt);
    if (o->open == ETW_OK) {
        o->fp = malloc((bound + 1) * sizeof *o->fp);
        etw_event ev;
        etw_status s;
        while ((s = etw_reader_next(r, &ev)) == ETW_OK && o->n < bound) {
            o->fp[o->n++] = fingerprint(&ev, where_of(L, ev.buffer_file_offset));
            if (ev.timestamp < 0 || ev.timestamp > FILETIME_MAX) o->bad_time++;
        }
        o->end = s;
        o->buffers_skipped = etw_reader_stats_get(r)->buffers_skipped;
        etw_reader_close(r);
    }
    free(copy);
}

static void result_free(run_result *o) {
    free(o->fp);
    o->fp = NULL;
}

/* Same events, same order. */
static int same_events(const run_result *a, const run_result *b) {
    if (a->n != b->n) return 0;
    for (size_t i = 0; i < a->n; i++)
        if (a->fp[i] != b->fp[i]) return 0;
    return 1;
}

static const char *k_traces[] = {
    "ShutdownPerfDiagLogger.etl", "net.4.5.2.x64.etl", "HTTP_Server.etl",
    "powershell.etl",             "AMSITrace.etl",     "SelfDescribingSingleEvent.etl",
    "BondEtwSample.etl",          "gcevents.etl",      "primitive-types.etl",
    "lxcore_kernel.etl",          "smallEtlFile.etl",
};
#define NTRACES (sizeof k_traces / sizeof k_traces[0])

/* ------------------------------------------------------------------------ */
/* 1. LoggerId                                                              */
/* ------------------------------------------------------------------------ */

static void check_variant(const char *name, const char *what, const uint8_t *m, size_t n,
                          const layout *L, const run_result *want, int diags_expected) {
    run_result got;
    run_bytes(m, n, L, want->n * 4 + 16, &got);
    int ok = got.open == ETW_OK && got.end == ETW_END && same_events(&got, want) &&
             (diags_expected ? got.diags.count > 0 : got.diags.count == 0) && got.bad_time == 0;
    if (!ok)
        fprintf(stderr, "  %s, %s: open %d end %d, %zu events (want %zu), %d diags (%s), %d bad times\n",
                name, what, (int)got.open, (int)got.end, got.n, want->n, got.diags.count,
                got.diags.first, got.bad_time);
    ETW_CHECK(ok);
    result_free(&got);
}

static void test_logger_id(void) {
    for (size_t t = 0; t < NTRACES; t++) {
        blob b = load(k_traces[t]);
        if (!b.p) {
            ETW_CHECK(!"trace loads");
            continue;
        }
        layout L;
        walk(&b, &L);
        run_result want;
        run_bytes(b.p, b.n, NULL, 2000000, &want);
        ETW_CHECK(want.open == ETW_OK && want.diags.count == 0 && want.n > 0);
        uint8_t *m = dup_exact(b.p, b.n);
        uint16_t orig = rd16(b.p + OFF_LOGGER);
        /* First buffer 0 (another id when it is 0 already). */
        wr16(m + OFF_LOGGER, orig ? 0 : 0x8001);
        check_variant(k_traces[t], "first LoggerId changed", m, b.n, NULL, &want, 0);
        wr16(m + OFF_LOGGER, 0x1234);
        check_variant(k_traces[t], "first LoggerId 0x1234", m, b.n, NULL, &want, 0);
        /* The relogger's shape: first 0, every later buffer 0x8001. */
        wr16(m + OFF_LOGGER, 0);
        for (size_t i = 1; i < L.n; i++) wr16(m + L.off[i] + OFF_LOGGER, 0x8001);
        check_variant(k_traces[t], "first 0, later 0x8001", m, b.n, NULL, &want, 0);
        /* Every buffer a different id. */
        for (size_t i = 0; i < L.n; i++) wr16(m + L.off[i] + OFF_LOGGER, (uint16_t)(0x40 + i * 7));
        check_variant(k_traces[t], "every LoggerId different", m, b.n, NULL, &want, 0);
        free(m);
        result_free(&want);
        free(b.p);
    }
}

/* ------------------------------------------------------------------------ */
/* 2. Mixed buffer sizes                                                    */
/* ------------------------------------------------------------------------ */

/* Rewrite an uncompressed trace with buffer i cut to its data rounded up to
 * 8, plus (i % 4) * 0x100 bytes of 0xFF: every buffer a different size. */
static void test_mixed_sizes(void) {
    static const char *names[] = {"gcevents.etl", "powershell.etl", "ShutdownPerfDiagLogger.etl",
                                  "HTTP_Server.etl", "AMSITrace.etl"};
    for (size_t t = 0; t < sizeof names / sizeof names[0]; t++) {
        blob b = load(names[t]);
        if (!b.p) {
            ETW_CHECK(!"trace loads");
            continue;
        }
        layout L, M;
        walk(&b, &L);
        uint8_t *m = malloc(b.n);
        size_t n = 0;
        M.n = L.n;
        for (size_t i = 0; i < L.n; i++) {
            const uint8_t *src = b.p + L.off[i];
            uint32_t end = (data_end(src, L.size[i]) + 7u) & ~7u;
            uint32_t size = end + (uint32_t)(i % 4) * 0x100u;
            if (size > L.size[i]) size = L.size[i];
            memset(m + n, 0xFF, size);
            memcpy(m + n, src, end < size ? end : size);
            wr32(m + n + OFF_BUFSIZE, size);
            M.off[i] = n;
            M.size[i] = size;
            n += size;
        }
        run_result want;
        run_bytes(b.p, b.n, &L, 2000000, &want);
        char what[64];
        snprintf(what, sizeof what, "mixed sizes (%zu of %zu bytes)", n, b.n);
        check_variant(names[t], what, m, n, &M, &want, 0);
        result_free(&want);
        free(m);
        free(b.p);
    }
}

/* ------------------------------------------------------------------------ */
/* 3. A lying BufferSize in the first and in the last buffer                */
/* ------------------------------------------------------------------------ */

static void lie_case(const char *name, const blob *b, size_t which, const layout *L,
                     const run_result *want, uint32_t lie) {
    uint8_t *m = dup_exact(b->p, b->n);
    wr32(m + L->off[which] + OFF_BUFSIZE, lie);
    char what[96];
    snprintf(what, sizeof what, "buffer %zu of %zu BufferSize %u (is %u)", which, L->n, lie,
             L->size[which]);
    check_variant(name, what, m, b->n, NULL, want, 1);
    free(m);
}

static void test_lying_first_last(void) {
    static const char *names[] = {"gcevents.etl", "primitive-types.etl", "powershell.etl",
                                  "net.4.5.2.x64.etl", "HTTP_Server.etl", "SelfDescribingSingleEvent.etl"};
    for (size_t t = 0; t < sizeof names / sizeof names[0]; t++) {
        blob b = load(names[t]);
        if (!b.p) {
            ETW_CHECK(!"trace loads");
            continue;
        }
        layout L;
        walk(&b, &L);
        run_result want;
        run_bytes(b.p, b.n, NULL, 2000000, &want);
        size_t ends[2] = {0, L.n - 1};
        for (int k = 0; k < 2; k++) {
            size_t w = ends[k];
            uint32_t s = L.size[w];
            uint32_t dend = data_end(b.p + L.off[w], s);
            const uint32_t lies[] = {0, 0x10, HDR - 1, HDR, s / 2 > dend ? s / 2 : dend + 8,
                                     s + 8, s * 2, s * 16, 0x01000000u, 0x7FFFFFFFu, 0xFFFFFFFFu};
            for (size_t i = 0; i < sizeof lies / sizeof lies[0]; i++) lie_case(names[t], &b, w, &L, &want, lies[i]);
        }
        result_free(&want);
        free(b.p);
    }
}

/* After real damage, a header-like pattern inside a payload is not taken
 * for the next buffer when a header further on chains on to another
 * buffer: gcevents.etl with buffer 3's header destroyed and a copy of
 * buffer 4's header and first record planted in buffer 3's payload. Every
 * event outside buffer 3 comes back identical; nothing comes from the copy. */
static void test_fake_header_after_damage(void) {
    blob b = load("gcevents.etl");
    if (!b.p) {
        ETW_CHECK(!"gcevents.etl");
        return;
    }
    layout L;
    walk(&b, &L);
    if (L.n != 5) {
        ETW_CHECK(!"five buffers");
        free(b.p);
        return;
    }
    run_result want;
    run_bytes(b.p, b.n, NULL, 2000000, &want);
    uint8_t *m = dup_exact(b.p, b.n);
    uint64_t b3 = L.off[2], b4 = L.off[3], fake = L.off[2] + 0x8000;
    memset(m + b3, 0xEE, HDR);
    memcpy(m + fake, b.p + b4, HDR + 0x60);
    run_result got;
    run_bytes(m, b.n, NULL, want.n * 4, &got);
    ETW_CHECK_INT(got.open, ETW_OK);
    ETW_CHECK_INT(got.end, ETW_END);
    ETW_CHECK(got.diags.count > 0);
    /* The intact run's events of the other buffers, in order. */
    uint8_t *ucopy = dup_exact(b.p, b.n);
    etw_reader *r;
    size_t kept = 0, k = 0, extra = 0;
    if (etw_reader_open_memory(&r, ucopy, b.n, NULL) == ETW_OK) {
        etw_event ev;
        size_t i = 0;
        while (etw_reader_next(r, &ev) == ETW_OK && i < want.n) {
            uint64_t fp = want.fp[i++];
            if (ev.buffer_file_offset == b3) continue;
            kept++;
            while (k < got.n && got.fp[k] != fp) {
                extra++;
                k++;
            }
            if (k < got.n) k++;
        }
        etw_reader_close(r);
    }
    extra += got.n - k;
    printf("  fake header: %zu of %zu events, %zu kept expected, %zu not in the intact trace\n", got.n,
           want.n, kept, extra);
    ETW_CHECK(kept > 0);
    ETW_CHECK_INT(got.n, kept);
    ETW_CHECK_INT(extra, 0);
    free(ucopy);
    result_free(&got);
    result_free(&want);
    free(m);
    free(b.p);
}

/* ------------------------------------------------------------------------ */
/* 4. Timestamps far outside the trace                                      */
/* ------------------------------------------------------------------------ */

static void test_impossible_timestamps(void) {
    blob b = load("gcevents.etl");
    if (!b.p) {
        ETW_CHECK(!"gcevents.etl");
        return;
    }
    run_result want;
    run_bytes(b.p, b.n, NULL, 2000000, &want);
    /* 0x10048 is the first record of buffer 2 (an EVENT_HEADER record: its
     * raw timestamp at +0x10); this trace's clock is QPC at 10 MHz. */
    const uint64_t at = 0x10048 + 0x10;
    ETW_CHECK_INT(rd32(b.p + 0x10048) >> 16 & 0xFF, 0x13); /* EVENT_HEADER64 */
    const uint64_t lies[] = {0x8000000000000000ull, 0x7FFFFFFFFFFFFFFFull, 0xFFFFFFFFFFFFFFFFull,
                             /* ~100 years after the trace's clock origin */
                             (uint64_t)100 * 365 * 86400 * 10000000ull};
    for (size_t i = 0; i < sizeof lies / sizeof lies[0]; i++) {
        uint8_t *m = dup_exact(b.p, b.n);
        wr64(m + at, lies[i]);
        run_result got;
        run_bytes(m, b.n, NULL, want.n * 4, &got);
        ETW_CHECK_INT(got.open, ETW_OK);
        ETW_CHECK_INT(got.end, ETW_END);
        ETW_CHECK_INT(got.bad_time, 0);
        ETW_CHECK(got.diags.count > 0);
        /* Exactly that record is missing: the others are all there. */
        ETW_CHECK_INT(got.n, want.n - 1);
        size_t common = 0;
        for (size_t j = 0, k = 0; j < want.n && k < got.n; j++)
            if (want.fp[j] == got.fp[k]) {
                common++;
                k++;
            }
        ETW_CHECK_INT(common, want.n - 1);
        result_free(&got);
        free(m);
    }
    result_free(&want);
    free(b.p);
}

/* ------------------------------------------------------------------------ */
/* 5. Decompression bombs                                                   */
/* ------------------------------------------------------------------------ */

typedef struct counting_alloc {
    size_t live, peak, budget;
    int refused;
} counting_alloc;

/* Each block is prefixed with its size so free can count it. */
static void *ca_alloc(void *ctx, size_t n) {
    counting_alloc *c = ctx;
    if (n > c->budget || c->live > c->budget - n) {
        c->refused++;
        return NULL;
    }
    uint8_t *p = malloc(n + 16);
    if (!p) return NULL;
    memcpy(p, &n, sizeof n);
    c->live += n;
    if (c->live > c->peak) c->peak = c->live;
    return p + 16;
}
static void ca_free(void *ctx, void *q) {
    counting_alloc *c = ctx;
    if (!q) return;
    uint8_t *p = (uint8_t *)q - 16;
    size_t n;
    memcpy(&n, p, sizeof n);
    c->live -= n;
    free(p);
}

static void write_file(const char *name, const uint8_t *p, size_t n) {
    const char *dir = getenv("ETW_TEST_WRITE_DIR");
    if (!dir) return;
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "wb");
    if (f) {
        fwrite(p, 1, n, f);
        fclose(f);
        printf("  wrote %s (%zu bytes)\n", path, n);
    }
}

typedef struct etl_builder {
    uint8_t *p;
    size_t n, cap;
} etl_builder;

static uint8_t *eb_grow(etl_builder *e, size_t k) {
    if (e->cap - e->n < k) {
        while (e->cap - e->n < k) e->cap = e->cap ? e->cap * 2 : 65536;
        e->p = realloc(e->p, e->cap);
        if (!e->p) abort();
    }
    uint8_t *q = e->p + e->n;
    memset(q, 0, k);
    e->n += k;
    return q;
}

/* The first buffer of gcevents.etl cut to its own data: a real log-file
 * header (BufferSize 64 KiB) in a small buffer; NumberOfProcessors set. */
static int eb_header(etl_builder *e, uint32_t nproc, uint16_t logger_id, uint64_t *raw) {
    blob g = load("gcevents.etl");
    if (!g.p) return 0;
    uint32_t end = (data_end(g.p, rd32(g.p)) + 7u) & ~7u;
    uint8_t *q = eb_grow(e, end);
    memcpy(q, g.p, end);
    wr32(q + OFF_BUFSIZE, end);
    wr16(q + OFF_LOGGER, logger_id);
    wr32(q + LF_PAYLOAD + 12, nproc);
    if (raw) *raw = (uint64_t)rd32(q + HDR + 0x10) | (uint64_t)rd32(q + HDR + 0x14) << 32;
    free(g.p);
    return rd32(q + LF_PAYLOAD) == 65536;
}

/* A compressed buffer of `disk` bytes on processor cpu whose FilledBytes
 * claims `claim` bytes. The Xpress stream is 16 literal bytes, a PERFINFO64
 * record header (size 0x10, timestamp `raw`), then matches of offset 1 and
 * a 32-bit length (0x7FFFFFFF each) until the buffer is full: a few bytes
 * that decompress to one event and then as many zeros as the decoder
 * allows. */
static void eb_bomb(etl_builder *e, uint16_t cpu, uint32_t disk, uint32_t claim, uint16_t logger_id,
                    uint64_t raw) {
    uint8_t *q = eb_grow(e, disk);
    wr32(q + OFF_BUFSIZE, disk);
    wr32(q + OFF_SAVED, disk);
    wr16(q + OFF_CPU, cpu);
    wr16(q + OFF_LOGGER, logger_id);
    wr32(q + 0x2C, 3);          /* state: flushed */
    wr32(q + OFF_FILLED, claim);
    wr16(q + OFF_FLAGS, 0x0001 | FLAG_COMPRESSED);
    uint8_t *s = q + HDR;
    size_t left = disk - HDR, pos = 0;
    wr32(s, 0x0000FFFFu);       /* flag bits: 16 literals, then 16 matches */
    pos = 4;
    wr16(s + pos, 2);           /* version */
    s[pos + 2] = 0x11;          /* TRACE_HEADER_TYPE_PERFINFO64 */
    s[pos + 3] = 0xC0;          /* TRACE_HEADER_FLAG | TRACE_HEADER_EVENT_TRACE */
    wr16(s + pos + 4, 0x10);    /* record size */
    s[pos + 6] = 0x2E;          /* type */
    s[pos + 7] = 0x0F;          /* group: PerfInfo */
    wr64(s + pos + 8, raw);
    pos += 16;
    int half_open = 0;
    while (left - pos >= 8 + 2 && pos < 4 + 16 + 16 * 8) {
        wr16(s + pos, 0x0007); /* offset 1, length "longer" */
        pos += 2;
        if (!half_open) {
            s[pos++] = 0xFF;   /* both nibbles 15: read a byte */
            half_open = 1;
        } else {
            half_open = 0;
        }
        s[pos++] = 0xFF;       /* read a 16-bit length */
        wr16(s + pos, 0);      /* 0: read a 32-bit length */
        pos += 2;
        wr32(s + pos, 0x7FFFFFFFu);
        pos += 4;
    }
}

static void bomb_case(const char *name, const uint8_t *p, size_t n, size_t nbufs, size_t ncpus) {
    uint64_t first_buffer = rd32(p);
    uint32_t lf_size = rd32(p + LF_PAYLOAD);
    counting_alloc ca = {0, 0, (size_t)256 << 20, 0};
    etw_allocator a = {ca_alloc, ca_free, &ca};
    etw_reader_options opt;
    memset(&opt, 0, sizeof opt);
    opt.allocator = &a;
    diag_log dl;
    memset(&dl, 0, sizeof dl);
    opt.on_diag = on_diag;
    opt.diag_ctx = &dl;
    etw_reader *r;
    ETW_CHECK_INT(etw_reader_open_memory(&r, p, n, &opt), ETW_OK);
    if (!r) return;
    etw_event ev;
    size_t events = 0;
    while (etw_reader_next(r, &ev) == ETW_OK) events += ev.buffer_file_offset >= first_buffer;
    const etw_reader_stats *st = etw_reader_stats_get(r);
    /* Each buffer decompresses to at most the trace's BufferSize (64 KiB),
     * and a file to at most 256 times its size (or 64 MiB). */
    uint64_t bound = (uint64_t)nbufs * 65536;
    if (lf_size > 65536) bound = n * 256 > (64u << 20) ? n * 256 : (64u << 20);
    printf("  %s: %zu bytes, %zu buffers on %zu cpus: %llu bytes decompressed, peak %zu bytes "
           "allocated, %d refused, %d diags, %zu events\n",
           name, n, nbufs, ncpus, (unsigned long long)st->bytes_decompressed, ca.peak, ca.refused,
           dl.count, events);
    ETW_CHECK(st->bytes_decompressed <= bound);
    ETW_CHECK_INT(ca.refused, 0);
    /* Memory: a small multiple of BufferSize x processors present, plus
     * the index (a few dozen bytes per buffer). */
    ETW_CHECK(ca.peak <= 3 * 65536 * ncpus + 64 * nbufs + (256 << 10));
    ETW_CHECK(dl.count > 0);
    /* The one real record of each bomb buffer. */
    ETW_CHECK_INT(events, nbufs);
    etw_reader_close(r);
    ETW_CHECK_INT(ca.live, 0);
}

static void test_decompression_bomb(void) {
    /* 48 processors, one 112-byte buffer each claiming 64 MiB: ~6 KB. */
    etl_builder e = {NULL, 0, 0};
    uint64_t raw = 0;
    if (!eb_header(&e, 48, 0x2c, &raw)) {
        ETW_CHECK(!"header");
        free(e.p);
        return;
    }
    for (uint16_t c = 0; c < 48; c++) eb_bomb(&e, c, 112, 64u << 20, 0x2c, raw);
    write_file("bomb48.etl", e.p, e.n);
    bomb_case("48 cpus", e.p, e.n, 48, 48);

    /* 1 MB of such buffers on one processor. */
    etl_builder f = {NULL, 0, 0};
    eb_header(&f, 1, 0x2c, NULL);
    size_t nb = 0;
    while (f.n < (1u << 20)) {
        eb_bomb(&f, 0, 120, 64u << 20, 0x2c, raw);
        nb++;
    }
    write_file("bomb1mb.etl", f.p, f.n);
    bomb_case("1 cpu", f.p, f.n, nb, 1);

    /* The same two with the log-file header's BufferSize set to 64 MiB:
     * buffers are still bounded (Windows' largest buffer is 16 MiB, and the
     * file's decompressed total by its size). */
    wr32(e.p + LF_PAYLOAD, 64u << 20);
    write_file("bomb48big.etl", e.p, e.n);
    bomb_case("48 cpus, BufferSize 64 MiB", e.p, e.n, 48, 48);
    wr32(f.p + LF_PAYLOAD, 64u << 20);
    write_file("bomb1mbbig.etl", f.p, f.n);
    bomb_case("1 cpu, BufferSize 64 MiB", f.p, f.n, nb, 1);
    free(e.p);
    free(f.p);
}

/* A processor's memory does not stay at its high-water mark: one buffer
 * that decompresses to 4 MiB, then small ones; once those are read the
 * reader holds far less than 4 MiB. */
static void test_stream_memory_shrinks(void) {
    etl_builder e = {NULL, 0, 0};
    uint64_t raw = 0;
    if (!eb_header(&e, 1, 0x2c, &raw)) {
        ETW_CHECK(!"header");
        free(e.p);
        return;
    }
    wr32(e.p + LF_PAYLOAD, 16u << 20); /* the trace's BufferSize: 16 MiB */
    uint64_t big = e.n;
    eb_bomb(&e, 0, 112, 4u << 20, 0x2c, raw);
    for (int i = 0; i < 20; i++) eb_bomb(&e, 0, 112, 4096, 0x2c, raw);
    counting_alloc ca = {0, 0, (size_t)256 << 20, 0};
    etw_allocator a = {ca_alloc, ca_free, &ca};
    etw_reader_options opt;
    memset(&opt, 0, sizeof opt);
    opt.allocator = &a;
    etw_reader *r;
    ETW_CHECK_INT(etw_reader_open_memory(&r, e.p, e.n, &opt), ETW_OK);
    if (r) {
        etw_event ev;
        size_t events = 0, after = 0;
        size_t live_during_big = 0;
        while (etw_reader_next(r, &ev) == ETW_OK) {
            events++;
            if (ev.buffer_file_offset == big) live_during_big = ca.live;
            if (ev.buffer_file_offset > big) after++;
        }
        printf("  high-water: %zu bytes live while the 4 MiB buffer is read, %zu after the small ones\n",
               live_during_big, ca.live);
        ETW_CHECK(live_during_big >= (4u << 20));
        ETW_CHECK_INT(after, 20);
        ETW_CHECK(ca.live < (1u << 20));
        etw_reader_close(r);
    }
    ETW_CHECK_INT(ca.live, 0);
    free(e.p);
}

/* ------------------------------------------------------------------------ */
/* 6. Resync cost                                                           */
/* ------------------------------------------------------------------------ */

typedef struct counting_input {
    const uint8_t *p;
    size_t n;
    uint64_t calls, bytes;
} counting_input;

static long long ci_read(void *ctx, uint64_t off, void *buf, size_t size) {
    counting_input *c = ctx;
    c->calls++;
    if (off >= c->n) return 0;
    if (size > c->n - off) size = (size_t)(c->n - off);
    memcpy(buf, c->p + off, size);
    c->bytes += size;
    return (long long)size;
}

static void test_resync_cost(void) {
    /* The real header buffer (LoggerId 8, so that `08 00` matches it), then
     * 4 MiB of `08 00`, then a real second buffer of gcevents.etl. */
    blob g = load("gcevents.etl");
    if (!g.p) {
        ETW_CHECK(!"gcevents.etl");
        return;
    }
    etl_builder e = {NULL, 0, 0};
    eb_header(&e, 8, 8, NULL);
    const size_t junk = (size_t)4 << 20;
    uint8_t *q = eb_grow(&e, junk);
    for (size_t i = 0; i < junk; i += 2) {
        q[i] = 0x08;
        q[i + 1] = 0x00;
    }
    uint8_t *b2 = eb_grow(&e, 65536);
    memcpy(b2, g.p + 65536, 65536);
    wr16(b2 + OFF_LOGGER, 8);
    write_file("resync.etl", e.p, e.n);

    counting_input ci = {e.p, e.n, 0, 0};
    etw_input in = {ci_read, e.n, &ci};
    diag_log dl;
    memset(&dl, 0, sizeof dl);
    etw_reader_options opt;
    memset(&opt, 0, sizeof opt);
    opt.on_diag = on_diag;
    opt.diag_ctx = &dl;
    etw_reader *r;
    ETW_CHECK_INT(etw_reader_open_input(&r, &in, &opt), ETW_OK);
    size_t events = 0, in_b2 = 0;
    if (r) {
        etw_event ev;
        while (etw_reader_next(r, &ev) == ETW_OK) {
            events++;
            in_b2 += ev.buffer_file_offset == e.n - 65536;
        }
        etw_reader_close(r);
    }
    printf("  resync over %zu bytes: %llu reads, %llu bytes read, %d diags, %zu events\n", junk,
           (unsigned long long)ci.calls, (unsigned long long)ci.bytes, dl.count, events);
    /* The second buffer is found and read. */
    ETW_CHECK(in_b2 > 0);
    ETW_CHECK(dl.count > 0);
    /* Linear: windows of tens of KiB, each byte read a bounded number of
     * times, not one read per candidate offset. */
    ETW_CHECK(ci.calls <= e.n / 16384 + 64);
    ETW_CHECK(ci.bytes <= 3 * (uint64_t)e.n);
    free(e.p);
    free(g.p);
}

int main(void) {
    ETW_RUN(test_logger_id);
    ETW_RUN(test_mixed_sizes);
    ETW_RUN(test_lying_first_last);
    ETW_RUN(test_fake_header_after_damage);
    ETW_RUN(test_impossible_timestamps);
    ETW_RUN(test_decompression_bomb);
    ETW_RUN(test_stream_memory_shrinks);
    ETW_RUN(test_resync_cost);
    return ETW_TEST_DONE();
}
