/* test_eventsource.c - reassembly of in-trace EventSource manifests
 * (src/source/etw_eventsource.c): synthetic chunk sequences built into
 * etw_event structs (user data in exactly-sized allocations so that
 * AddressSanitizer sees any overread), every malformed case, the bounds,
 * the version score, and the manifests of the real traces in tests/data
 * (compared with PerfView's baseline where there is one). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "etw_test.h"
#include "etwdecode/etw_reader.h"
#include "source/etw_eventsource.h"
/* The manifest loader (src/source/etw_manifest.c) is exercised with the
 * reassembled manifests unless this is built without it. */
#ifndef ETW_ES_TEST_NO_MANIFEST_LOADER
#include "schema/etw_cache.h"
#include "schema/etw_source.h"
#include "source/etw_manifest.h"
#endif

/* ---- capture of callbacks ---- */

#define CAP_MAX_MAN 32
#define CAP_MAX_DIAG 64

typedef struct cap_man {
    etw_guid provider;
    uint32_t pid;
    uint8_t *xml;
    size_t len;
} cap_man;

typedef struct cap_diag {
    etw_status status;
    uint64_t offset;
    char msg[400];
} cap_diag;

typedef struct cap {
    int n;
    cap_man m[CAP_MAX_MAN];
    int nd;
    cap_diag d[CAP_MAX_DIAG];
    etw_status ret; /* what on_manifest returns */
    const etw_es_assembler *a; /* to check the stats inside the callback */
} cap;

static etw_status on_man(void *ctx, const etw_guid *provider, uint32_t pid, const uint8_t *xml,
                         size_t len) {
    cap *c = ctx;
    if (c->n < CAP_MAX_MAN) {
        cap_man *m = &c->m[c->n];
        m->provider = *provider;
        m->pid = pid;
        m->len = len;
        m->xml = malloc(len ? len : 1);
        if (len) memcpy(m->xml, xml, len);
    }
    c->n++;
    return c->ret;
}

static void on_diag(void *ctx, const etw_diag *d) {
    cap *c = ctx;
    if (c->nd < CAP_MAX_DIAG) {
        c->d[c->nd].status = d->status;
        c->d[c->nd].offset = d->file_offset;
        snprintf(c->d[c->nd].msg, sizeof c->d[c->nd].msg, "%s", d->message);
    }
    c->nd++;
}

static void cap_reset(cap *c) {
    for (int i = 0; i < c->n && i < CAP_MAX_MAN; i++) free(c->m[i].xml);
    c->n = 0;
    c->nd = 0;
    c->ret = ETW_OK;
}

static etw_es_assembler *new_asm(cap *c, size_t max_bytes, uint32_t max_pending) {
    memset(c, 0, sizeof *c);
    etw_es_options o;
    memset(&o, 0, sizeof o);
    o.max_pending_bytes = max_bytes;
    o.max_pending = max_pending;
    o.on_manifest = on_man;
    o.ctx = c;
    o.on_diag = on_diag;
    o.diag_ctx = c;
    etw_es_assembler *a = NULL;
    ETW_CHECK_INT(etw_es_new(&a, &o), ETW_OK);
    c->a = a;
    return a;
}

static void free_asm(etw_es_assembler *a, cap *c) {
    etw_es_free(a);
    cap_reset(c);
}

/* ---- synthetic events ---- */

static const etw_guid PROV_A = {0x11111111u, 0x2222, 0x3333, {0x44, 0x55, 0x66, 0x77, 0x88, 0x99, 0xaa, 0xbb}};
static const etw_guid PROV_B = {0xdeadbeefu, 0x0001, 0x0002, {1, 2, 3, 4, 5, 6, 7, 8}};

typedef struct envl {
    uint8_t format, major, minor, magic;
    uint16_t total, num;
} envl;

static envl env_ok(uint16_t total, uint16_t num) {
    envl e = {1, 1, 0, 0x5B, total, num};
    return e;
}

static uint64_t g_offset = 0x10000; /* each event gets its own file offset */

static void fill_event(etw_event *ev, const etw_guid *prov, uint32_t pid, uint32_t tid) {
    memset(ev, 0, sizeof *ev);
    ev->form = ETW_FORM_EVENT_HEADER;
    ev->flags = ETW_EVENT_FLAG_64_BIT_HEADER;
    ev->pointer_size = 8;
    ev->provider = *prov;
    ev->pid = pid;
    ev->tid = tid;
    ev->id = 0xFFFE;
    ev->task = 0xFFFE;
    ev->opcode = 0xFE;
    ev->version = 1;
    ev->keywords = 0x00FFFFFFFFFFFFFFull;
    ev->buffer_file_offset = g_offset & ~(uint64_t)0xFFF;
    ev->record_offset = (uint32_t)(g_offset & 0xFFF);
    g_offset += 8;
}

/* Offer one manifest event whose user data is exactly ulen bytes: the
 * envelope (as much of it as fits) then chunk bytes. Returns offer's status;
 * *offset gets the event's file offset. */
static etw_status offer_raw(etw_es_assembler *a, const etw_guid *prov, uint32_t pid, uint32_t tid,
                            envl e, const uint8_t *chunk, size_t clen, size_t ulen,
                            uint64_t *offset) {
    uint8_t full[8 + 0x10000 + 16];
    full[0] = e.format;
    full[1] = e.major;
    full[2] = e.minor;
    full[3] = e.magic;
    full[4] = (uint8_t)e.total;
    full[5] = (uint8_t)(e.total >> 8);
    full[6] = (uint8_t)e.num;
    full[7] = (uint8_t)(e.num >> 8);
    if (clen > sizeof full - 8) clen = sizeof full - 8;
    if (clen) memcpy(full + 8, chunk, clen);
    if (ulen > 8 + clen) ulen = 8 + clen;
    uint8_t *ud = ulen ? malloc(ulen) : NULL;
    if (ulen) memcpy(ud, full, ulen);
    etw_event ev;
    fill_event(&ev, prov, pid, tid);
    ev.user_data = ud;
    ev.user_data_len = (uint32_t)ulen;
    if (offset) *offset = ev.buffer_file_offset + ev.record_offset;
    etw_status st = etw_es_offer(a, &ev);
    free(ud);
    return st;
}

static etw_status offer(etw_es_assembler *a, const etw_guid *prov, uint32_t pid, uint32_t tid, envl e,
                        const uint8_t *chunk, size_t clen) {
    return offer_raw(a, prov, pid, tid, e, chunk, clen, 8 + clen, NULL);
}

/* A document of n bytes: "<m>" + filler + "</m>" style, deterministic. */
static uint8_t *make_doc(size_t n, unsigned seed) {
    uint8_t *d = malloc(n ? n : 1);
    for (size_t i = 0; i < n; i++) d[i] = (uint8_t)('a' + (i * 7 + seed * 13 + i / 97) % 26);
    if (n) d[0] = '<';
    return d;
}

/* Send doc[0..n) as chunks of `chunk` bytes (last one shorter), chunk
 * numbers in `order` (NULL: 0..k-1). Returns the chunk count. */
static uint16_t chunk_count(size_t n, size_t chunk) {
    return (uint16_t)((n + chunk - 1) / chunk);
}
static void send_chunk(etw_es_assembler *a, const etw_guid *prov, uint32_t pid, uint32_t tid,
                       const uint8_t *doc, size_t n, size_t chunk, uint16_t num) {
    uint16_t total = chunk_count(n, chunk);
    size_t off = (size_t)num * chunk;
    size_t len = off < n ? (n - off < chunk ? n - off : chunk) : 0;
    ETW_CHECK_INT(offer(a, prov, pid, tid, env_ok(total, num), doc + off, len), ETW_OK);
}
static void send_doc(etw_es_assembler *a, const etw_guid *prov, uint32_t pid, uint32_t tid,
                     const uint8_t *doc, size_t n, size_t chunk) {
    uint16_t total = chunk_count(n, chunk);
    for (uint16_t i = 0; i < total; i++) send_chunk(a, prov, pid, tid, doc, n, chunk, i);
}

static int man_is(const cap_man *m, const etw_guid *g, uint32_t pid, const uint8_t *doc, size_t n) {
    return etw_guid_equal(&m->provider, g) && m->pid == pid && m->len == n &&
           (n == 0 || memcmp(m->xml, doc, n) == 0);
}

static int diag_has(const cap *c, int i, const char *needle) {
    return i < c->nd && i < CAP_MAX_DIAG && strstr(c->d[i].msg, needle) != NULL;
}

/* ---- synthetic tests ---- */

static void test_is_manifest_event(void) {
    etw_event ev;
    fill_event(&ev, &PROV_A, 1, 2);
    ETW_CHECK_INT(etw_es_is_manifest_event(&ev), 1);
    ev.id = 0xFFFD;
    ETW_CHECK_INT(etw_es_is_manifest_event(&ev), 0);
    fill_event(&ev, &PROV_A, 1, 2);
    ev.task = 0;
    ETW_CHECK_INT(etw_es_is_manifest_event(&ev), 0);
    fill_event(&ev, &PROV_A, 1, 2);
    ev.opcode = 0;
    ETW_CHECK_INT(etw_es_is_manifest_event(&ev), 0);
    fill_event(&ev, &PROV_A, 1, 2);
    ev.flags |= ETW_EVENT_FLAG_CLASSIC_HEADER;
    ETW_CHECK_INT(etw_es_is_manifest_event(&ev), 0);
    for (int f = 1; f < ETW_FORM_COUNT_; f++) {
        fill_event(&ev, &PROV_A, 1, 2);
        ev.form = (etw_header_form)f;
        ETW_CHECK_INT(etw_es_is_manifest_event(&ev), 0);
    }
    ETW_CHECK_INT(etw_es_is_manifest_event(NULL), 0);

    /* Non-manifest events cost nothing and are not counted. */
    cap c;
    etw_es_assembler *a = new_asm(&c, 0, 0);
    uint8_t ud[16] = {1, 1, 0, 0x5B, 1, 0, 0, 0, '<', 'x', '/', '>'};
    fill_event(&ev, &PROV_A, 1, 2);
    ev.id = 1;
    ev.user_data = ud;
    ev.user_data_len = 12;
    ETW_CHECK_INT(etw_es_offer(a, &ev), ETW_OK);
    ETW_CHECK_INT(etw_es_stats_get(a)->manifest_events, 0);
    ETW_CHECK_INT(c.n, 0);
    ETW_CHECK_INT(c.nd, 0);
    ETW_CHECK_INT(etw_es_offer(NULL, &ev), ETW_E_INVALID_ARG);
    ETW_CHECK_INT(etw_es_offer(a, NULL), ETW_E_INVALID_ARG);
    ETW_CHECK(etw_es_stats_get(NULL) == NULL);
    free_asm(a, &c);
    ETW_CHECK_INT(etw_es_new(NULL, NULL), ETW_E_INVALID_ARG);
    etw_es_free(NULL);
    etw_es_finish(NULL);
}

static void test_envelope_read(void) {
    etw_event ev;
    fill_event(&ev, &PROV_A, 1, 2);
    uint8_t ud[12] = {1, 1, 0, 0x5B, 0x34, 0x12, 0x02, 0x00, 'a', 'b', 'c', 'd'};
    ev.user_data = ud;
    ev.user_data_len = sizeof ud;
    etw_es_envelope e;
    ETW_CHECK_INT(etw_es_envelope_read(&ev, &e), ETW_OK);
    ETW_CHECK_INT(e.format, 1);
    ETW_CHECK_INT(e.major, 1);
    ETW_CHECK_INT(e.minor, 0);
    ETW_CHECK_INT(e.magic, 91);
    ETW_CHECK_INT(e.total_chunks, 0x1234);
    ETW_CHECK_INT(e.chunk_number, 2);
    ETW_CHECK_INT(e.payload_length, 12);
    uint8_t *exact = malloc(7);
    memcpy(exact, ud, 7);
    ev.user_data = exact;
    ev.user_data_len = 7;
    ETW_CHECK_INT(etw_es_envelope_read(&ev, &e), ETW_E_TRUNCATED);
    free(exact);
    ev.user_data = NULL;
    ev.user_data_len = 0;
    ETW_CHECK_INT(etw_es_envelope_read(&ev, &e), ETW_E_TRUNCATED);
    ETW_CHECK_INT(etw_es_envelope_read(NULL, &e), ETW_E_INVALID_ARG);
    ETW_CHECK_INT(etw_es_envelope_read(&ev, NULL), ETW_E_INVALID_ARG);
}

static void test_one_chunk(void) {
    cap c;
    etw_es_assembler *a = new_asm(&c, 0, 0);
    const char *xml = "<instrumentationManifest><provider name=\"X\"/></instrumentationManifest>";
    size_t n = strlen(xml);
    ETW_CHECK_INT(offer(a, &PROV_A, 100, 200, env_ok(1, 0), (const uint8_t *)xml, n), ETW_OK);
    ETW_CHECK_INT(c.n, 1);
    ETW_CHECK(man_is(&c.m[0], &PROV_A, 100, (const uint8_t *)xml, n));
    ETW_CHECK_INT(c.nd, 0);
    const etw_es_stats *st = etw_es_stats_get(a);
    ETW_CHECK_INT(st->manifest_events, 1);
    ETW_CHECK_INT(st->chunks_accepted, 1);
    ETW_CHECK_INT(st->manifests, 1);
    ETW_CHECK_INT(st->pending, 0);
    ETW_CHECK_INT(st->pending_bytes, 0);
    ETW_CHECK_INT(st->peak_pending_bytes, 0); /* one chunk: nothing held */
    /* The same manifest again (rundown) is delivered again. */
    ETW_CHECK_INT(offer(a, &PROV_A, 100, 200, env_ok(1, 0), (const uint8_t *)xml, n), ETW_OK);
    ETW_CHECK_INT(c.n, 2);
    /* A one-byte chunk (user data of 9 bytes) is the smallest valid one. */
    ETW_CHECK_INT(offer(a, &PROV_A, 100, 200, env_ok(1, 0), (const uint8_t *)"<", 1), ETW_OK);
    ETW_CHECK_INT(c.n, 3);
    ETW_CHECK_INT(c.n >= 3 ? (long long)c.m[2].len : -1, 1);
    /* A single chunk of exactly 0xFF00 bytes is accepted, even with a
     * pending bound smaller than it (nothing is held). */
    uint8_t *big = make_doc(0xFF00, 1);
    ETW_CHECK_INT(offer(a, &PROV_B, 1, 1, env_ok(1, 0), big, 0xFF00), ETW_OK);
    ETW_CHECK_INT(c.n, 4);
    ETW_CHECK(c.n >= 4 && man_is(&c.m[3], &PROV_B, 1, big, 0xFF00));
    ETW_CHECK_INT(c.nd, 0);
    etw_es_finish(a);
    ETW_CHECK_INT(c.nd, 0);
    free(big);
    free_asm(a, &c);
}

static void test_many_chunks(void) {
    cap c;
    etw_es_assembler *a = new_asm(&c, 0, 0);
    size_t n = 10000;
    uint8_t *doc = make_doc(n, 2);
    size_t chunk = 1000; /* 10 equal chunks */
    uint16_t total = chunk_count(n, chunk);
    ETW_CHECK_INT(total, 10);
    for (uint16_t i = 0; i < total; i++) {
        send_chunk(a, &PROV_A, 7, 8, doc, n, chunk, i);
        const etw_es_stats *st = etw_es_stats_get(a);
        if (i + 1 < total) {
            ETW_CHECK_INT(st->pending, 1);
            ETW_CHECK(st->pending_bytes >= (size_t)(i + 1) * chunk);
            ETW_CHECK_INT(c.n, 0);
        }
    }
    ETW_CHECK_INT(c.n, 1);
    ETW_CHECK(man_is(&c.m[0], &PROV_A, 7, doc, n));
    const etw_es_stats *st = etw_es_stats_get(a);
    ETW_CHECK_INT(st->pending, 0);
    ETW_CHECK_INT(st->pending_bytes, 0);
    /* equal chunks: one allocation of exactly TotalChunks x chunk */
    ETW_CHECK_INT(st->peak_pending_bytes, n);
    ETW_CHECK_INT(st->chunks_accepted, 10);
    ETW_CHECK_INT(c.nd, 0);
    free(doc);

    /* Uneven: a short last chunk, and the largest chunks EventSource
     * writes (3 x 0xFF00 + 5). */
    n = 3 * 0xFF00 + 5;
    doc = make_doc(n, 3);
    send_doc(a, &PROV_B, 9, 9, doc, n, 0xFF00);
    ETW_CHECK_INT(c.n, 2);
    ETW_CHECK(c.n >= 2 && man_is(&c.m[1], &PROV_B, 9, doc, n));
    ETW_CHECK_INT(c.nd, 0);
    free(doc);

    /* Chunks smaller than the first one after it (not what EventSource
     * does, but not wrong either): the buffer grows. */
    const char *parts[] = {"<aaaaaaaaaa", "bb", "cccccccccccccccccccccccccccccccccccccc", "d>"};
    for (uint16_t i = 0; i < 4; i++)
        ETW_CHECK_INT(offer(a, &PROV_A, 1, 1, env_ok(4, i), (const uint8_t *)parts[i], strlen(parts[i])),
                      ETW_OK);
    ETW_CHECK_INT(c.n, 3);
    char joined[128];
    snprintf(joined, sizeof joined, "%s%s%s%s", parts[0], parts[1], parts[2], parts[3]);
    ETW_CHECK(c.n >= 3 && man_is(&c.m[2], &PROV_A, 1, (const uint8_t *)joined, strlen(joined)));
    ETW_CHECK_INT(etw_es_stats_get(a)->pending_bytes, 0);
    ETW_CHECK_INT(c.nd, 0);
    free_asm(a, &c);
}

static void test_interleaved(void) {
    cap c;
    etw_es_assembler *a = new_asm(&c, 0, 0);
    /* Four streams: two providers x two processes, plus a second thread of
     * one process sending the same provider (keyed apart by tid). */
    struct {
        const etw_guid *g;
        uint32_t pid, tid;
        size_t n, chunk;
        uint8_t *doc;
    } s[5] = {{&PROV_A, 10, 1, 5000, 700, NULL},
              {&PROV_B, 10, 1, 3000, 500, NULL},
              {&PROV_A, 20, 2, 4000, 1000, NULL},
              {&PROV_B, 20, 2, 2500, 250, NULL},
              {&PROV_A, 10, 3, 1200, 100, NULL}};
    uint16_t total[5], next[5] = {0};
    for (int k = 0; k < 5; k++) {
        s[k].doc = make_doc(s[k].n, (unsigned)k + 10);
        total[k] = chunk_count(s[k].n, s[k].chunk);
    }
    int left = 5;
    int order[5] = {-1, -1, -1, -1, -1}, done = 0;
    while (left) {
        for (int k = 0; k < 5; k++) {
            if (next[k] >= total[k]) continue;
            int before = c.n;
            send_chunk(a, s[k].g, s[k].pid, s[k].tid, s[k].doc, s[k].n, s[k].chunk, next[k]++);
            if (c.n != before) order[done++] = k;
            if (next[k] == total[k]) left--;
        }
    }
    ETW_CHECK_INT(c.n, 5);
    ETW_CHECK_INT(c.nd, 0);
    for (int i = 0; i < 5 && i < c.n; i++) {
        int k = order[i];
        ETW_CHECK(k >= 0 && man_is(&c.m[i], s[k].g, s[k].pid, s[k].doc, s[k].n));
    }
    ETW_CHECK_INT(etw_es_stats_get(a)->pending, 0);
    ETW_CHECK_INT(etw_es_stats_get(a)->pending_bytes, 0);
    for (int k = 0; k < 5; k++) free(s[k].doc);
    free_asm(a, &c);
}

static void test_restart(void) {
    cap c;
    etw_es_assembler *a = new_asm(&c, 0, 0);
    size_t n = 3000;
    uint8_t *doc = make_doc(n, 4);
    /* First attempt: chunks of 1000 (3 chunks), only 2 arrive... */
    send_chunk(a, &PROV_A, 5, 6, doc, n, 1000, 0);
    send_chunk(a, &PROV_A, 5, 6, doc, n, 1000, 1);
    ETW_CHECK_INT(etw_es_stats_get(a)->pending, 1);
    /* ...then the retry with smaller chunks: 6 chunks of 500. */
    uint64_t off = 0;
    ETW_CHECK_INT(offer_raw(a, &PROV_A, 5, 6, env_ok(6, 0), doc, 500, 508, &off), ETW_OK);
    ETW_CHECK_INT(c.nd, 1);
    ETW_CHECK_INT(c.d[0].status, ETW_E_TRUNCATED);
    ETW_CHECK_INT(c.d[0].offset, off);
    ETW_CHECK(diag_has(&c, 0, "restarted at chunk 0"));
    ETW_CHECK(diag_has(&c, 0, "2 of 3 chunks"));
    ETW_CHECK(diag_has(&c, 0, "11111111-2222-3333-4455-66778899aabb"));
    for (uint16_t i = 1; i < 6; i++) send_chunk(a, &PROV_A, 5, 6, doc, n, 500, i);
    ETW_CHECK_INT(c.n, 1);
    ETW_CHECK(man_is(&c.m[0], &PROV_A, 5, doc, n));
    ETW_CHECK_INT(c.nd, 1);
    const etw_es_stats *st = etw_es_stats_get(a);
    ETW_CHECK_INT(st->dropped, 1);
    ETW_CHECK_INT(st->pending, 0);
    ETW_CHECK_INT(st->pending_bytes, 0);

    /* A restart straight into a one-chunk manifest also drops (and
     * reports) the unfinished one. */
    send_chunk(a, &PROV_A, 5, 6, doc, n, 1000, 0);
    ETW_CHECK_INT(offer(a, &PROV_A, 5, 6, env_ok(1, 0), doc, n), ETW_OK);
    ETW_CHECK_INT(c.n, 2);
    ETW_CHECK_INT(c.nd, 2);
    ETW_CHECK(diag_has(&c, 1, "restarted"));
    ETW_CHECK_INT(etw_es_stats_get(a)->pending, 0);
    ETW_CHECK_INT(etw_es_stats_get(a)->pending_bytes, 0);
    etw_es_finish(a);
    ETW_CHECK_INT(c.nd, 2);
    free(doc);
    free_asm(a, &c);
}

/* Sends chunks `nums` of a 5 x 100-byte document for PROV_A/1/1 and
 * returns through c what happened. */
static void run_nums(etw_es_assembler *a, const uint16_t *nums, int k, const uint8_t *doc) {
    for (int i = 0; i < k; i++) send_chunk(a, &PROV_A, 1, 1, doc, 500, 100, nums[i]);
}

static void test_sequence_errors(void) {
    uint8_t *doc = make_doc(500, 5);
    cap c;
    etw_es_assembler *a;

    /* missing: 0 1 3 4 -> reported once at 3, 4 ignored silently */
    a = new_asm(&c, 0, 0);
    uint16_t missing[] = {0, 1, 3, 4};
    run_nums(a, missing, 4, doc);
    ETW_CHECK_INT(c.n, 0);
    ETW_CHECK_INT(c.nd, 1);
    ETW_CHECK_INT(c.d[0].status, ETW_E_CORRUPT);
    ETW_CHECK(diag_has(&c, 0, "chunk 3 of 5 while 2 was expected"));
    ETW_CHECK_INT(etw_es_stats_get(a)->pending, 0);
    ETW_CHECK_INT(etw_es_stats_get(a)->pending_bytes, 0);
    ETW_CHECK_INT(etw_es_stats_get(a)->dropped, 1);
    /* the key recovers at the next chunk 0 */
    uint16_t all[] = {0, 1, 2, 3, 4};
    run_nums(a, all, 5, doc);
    ETW_CHECK_INT(c.n, 1);
    ETW_CHECK(c.n == 1 && man_is(&c.m[0], &PROV_A, 1, doc, 500));
    ETW_CHECK_INT(c.nd, 1);
    etw_es_finish(a);
    ETW_CHECK_INT(c.nd, 1);
    free_asm(a, &c);

    /* duplicate: 0 1 1 2 3 4 */
    a = new_asm(&c, 0, 0);
    uint16_t dup[] = {0, 1, 1, 2, 3, 4};
    run_nums(a, dup, 6, doc);
    ETW_CHECK_INT(c.n, 0);
    ETW_CHECK_INT(c.nd, 1);
    ETW_CHECK(diag_has(&c, 0, "chunk 1 of 5 again"));
    etw_es_finish(a);
    ETW_CHECK_INT(c.nd, 1);
    free_asm(a, &c);

    /* reordered: 0 2 1 3 4 */
    a = new_asm(&c, 0, 0);
    uint16_t reord[] = {0, 2, 1, 3, 4};
    run_nums(a, reord, 5, doc);
    ETW_CHECK_INT(c.n, 0);
    ETW_CHECK_INT(c.nd, 1);
    ETW_CHECK(diag_has(&c, 0, "chunk 2 of 5 while 1 was expected"));
    free_asm(a, &c);

    /* start missing: 1 2 3 4 -> one report */
    a = new_asm(&c, 0, 0);
    uint16_t nostart[] = {1, 2, 3, 4};
    run_nums(a, nostart, 4, doc);
    ETW_CHECK_INT(c.n, 0);
    ETW_CHECK_INT(c.nd, 1);
    ETW_CHECK(diag_has(&c, 0, "without its chunk 0"));
    ETW_CHECK_INT(etw_es_stats_get(a)->pending, 0);
    free_asm(a, &c);

    /* never completes: reported by finish, once */
    a = new_asm(&c, 0, 0);
    uint16_t part[] = {0, 1, 2};
    run_nums(a, part, 3, doc);
    send_chunk(a, &PROV_B, 2, 2, doc, 500, 250, 0);
    ETW_CHECK_INT(c.nd, 0);
    ETW_CHECK_INT(etw_es_stats_get(a)->pending, 2);
    etw_es_finish(a);
    ETW_CHECK_INT(c.n, 0);
    ETW_CHECK_INT(c.nd, 2);
    ETW_CHECK_INT(c.d[0].status, ETW_E_TRUNCATED);
    ETW_CHECK(diag_has(&c, 0, "never completed (3 of 5 chunks, 300 bytes"));
    ETW_CHECK(diag_has(&c, 1, "never completed (1 of 2 chunks, 250 bytes"));
    ETW_CHECK(diag_has(&c, 1, "deadbeef-0001-0002-0102-030405060708 (pid 2, tid 2)"));
    ETW_CHECK_INT(etw_es_stats_get(a)->pending, 0);
    ETW_CHECK_INT(etw_es_stats_get(a)->pending_bytes, 0);
    ETW_CHECK_INT(etw_es_stats_get(a)->dropped, 2);
    etw_es_finish(a);
    ETW_CHECK_INT(c.nd, 2);
    /* still usable after finish; the tombstones are gone too */
    run_nums(a, all, 5, doc);
    ETW_CHECK_INT(c.n, 1);
    free_asm(a, &c);
    free(doc);
}

static void test_event_errors(void) {
    uint8_t *doc = make_doc(300, 6);
    cap c;
    etw_es_assembler *a = new_asm(&c, 0, 0);
    struct {
        envl e;
        size_t ulen; /* user data length (<= 8 + 100) */
        const char *msg;
    } bad[] = {
        {{1, 1, 0, 0x5C, 3, 0}, 108, "bad envelope magic 0x5c"},
        {{1, 1, 0, 0x5B, 0, 0}, 108, "TotalChunks is 0"},
        {{1, 1, 0, 0x5B, 3, 3}, 108, "ChunkNumber 3 is not below TotalChunks 3"},
        {{1, 1, 0, 0x5B, 3, 0xFFFF}, 108, "ChunkNumber 65535"},
        {{1, 1, 0, 0x5B, 3, 0}, 8, "user data of 8 bytes"},
        {{1, 1, 0, 0x5B, 3, 0}, 3, "user data of 3 bytes"},
        {{1, 1, 0, 0x5B, 3, 0}, 0, "user data of 0 bytes"},
    };
    int nb = (int)(sizeof bad / sizeof bad[0]);
    for (int i = 0; i < nb; i++) {
        int nd = c.nd;
        /* alone */
        uint64_t off = 0;
        ETW_CHECK_INT(offer_raw(a, &PROV_A, 1, 1, bad[i].e, doc, 100, bad[i].ulen, &off), ETW_OK);
        ETW_CHECK_INT(c.nd, nd + 1);
        ETW_CHECK(diag_has(&c, nd, bad[i].msg));
        ETW_CHECK(diag_has(&c, nd, "event ignored"));
        ETW_CHECK_INT(c.nd > nd ? (long long)c.d[nd].status : 0, ETW_E_CORRUPT);
        ETW_CHECK_INT(c.nd > nd ? c.d[nd].offset : 0, off);
        /* in the middle of a sequence of another key: that key goes on; in
         * the middle of its own key's sequence: that one is aborted. */
        send_chunk(a, &PROV_B, 1, 1, doc, 300, 100, 0);
        send_chunk(a, &PROV_A, 1, 1, doc, 300, 100, 0);
        ETW_CHECK_INT(offer_raw(a, &PROV_A, 1, 1, bad[i].e, doc, 100, bad[i].ulen, NULL), ETW_OK);
        ETW_CHECK_INT(c.nd, nd + 2);
        ETW_CHECK(diag_has(&c, nd + 1, bad[i].msg));
        ETW_CHECK(diag_has(&c, nd + 1, "unfinished manifest (1 of 3 chunks) dropped"));
        int nm = c.n;
        send_chunk(a, &PROV_A, 1, 1, doc, 300, 100, 1); /* silent: run aborted */
        send_chunk(a, &PROV_A, 1, 1, doc, 300, 100, 2);
        send_chunk(a, &PROV_B, 1, 1, doc, 300, 100, 1);
        send_chunk(a, &PROV_B, 1, 1, doc, 300, 100, 2);
        ETW_CHECK_INT(c.n, nm + 1);
        ETW_CHECK(c.n == nm + 1 && man_is(&c.m[nm], &PROV_B, 1, doc, 300));
        ETW_CHECK_INT(c.nd, nd + 2);
        ETW_CHECK_INT(etw_es_stats_get(a)->pending, 0);
        cap_reset(&c);
    }

    /* oversized: a chunk of 0xFF01 bytes, alone and mid-sequence */
    uint8_t *big = make_doc(0xFF01, 7);
    ETW_CHECK_INT(offer(a, &PROV_A, 3, 3, env_ok(1, 0), big, 0xFF01), ETW_OK);
    ETW_CHECK_INT(c.n, 0);
    ETW_CHECK_INT(c.nd, 1);
    ETW_CHECK(diag_has(&c, 0, "chunk 0 of 1 has 65281 bytes (more than 0xFF00)"));
    ETW_CHECK_INT(offer(a, &PROV_A, 3, 3, env_ok(3, 0), big, 0xFF00), ETW_OK);
    ETW_CHECK_INT(offer(a, &PROV_A, 3, 3, env_ok(3, 1), big, 0xFF01), ETW_OK);
    ETW_CHECK_INT(offer(a, &PROV_A, 3, 3, env_ok(3, 2), big, 10), ETW_OK);
    ETW_CHECK_INT(c.n, 0);
    ETW_CHECK_INT(c.nd, 2);
    ETW_CHECK(diag_has(&c, 1, "chunk 1 of 3 has 65281 bytes"));
    ETW_CHECK(diag_has(&c, 1, "dropped"));
    ETW_CHECK_INT(etw_es_stats_get(a)->pending_bytes, 0);
    free(big);
    cap_reset(&c);

    /* the envelope changes mid-sequence: format, major, minor, total */
    envl changes[4] = {{2, 1, 0, 0x5B, 3, 1}, {1, 2, 0, 0x5B, 3, 1}, {1, 1, 1, 0x5B, 3, 1},
                       {1, 1, 0, 0x5B, 4, 1}};
    for (int i = 0; i < 4; i++) {
        int nd = c.nd;
        send_chunk(a, &PROV_A, 4, 4, doc, 300, 100, 0);
        ETW_CHECK_INT(offer(a, &PROV_A, 4, 4, changes[i], doc + 100, 100), ETW_OK);
        send_chunk(a, &PROV_A, 4, 4, doc, 300, 100, 2);
        ETW_CHECK_INT(c.n, 0);
        ETW_CHECK_INT(c.nd, nd + 1);
        ETW_CHECK(diag_has(&c, nd, "changes the envelope"));
    }
    ETW_CHECK(diag_has(&c, 0, "format 2, version 1.0, 3 chunks; was 1, 1.0, 3"));
    ETW_CHECK(diag_has(&c, 3, "format 1, version 1.0, 4 chunks; was 1, 1.0, 3"));
    /* a format other than 1 is carried as it is when consistent */
    envl f2 = {2, 1, 0, 0x5B, 2, 0};
    ETW_CHECK_INT(offer(a, &PROV_A, 4, 4, f2, doc, 100), ETW_OK);
    f2.num = 1;
    ETW_CHECK_INT(offer(a, &PROV_A, 4, 4, f2, doc + 100, 100), ETW_OK);
    ETW_CHECK_INT(c.n, 1);
    ETW_CHECK_INT(c.nd, 4);
    etw_es_finish(a);
    ETW_CHECK_INT(c.nd, 4);
    ETW_CHECK_INT(etw_es_stats_get(a)->problems, 7 * 2 + 2 + 4);
    free_asm(a, &c);
    free(doc);
}

static void test_bounds_count(void) {
    uint8_t *doc = make_doc(400, 8);
    cap c;
    etw_es_assembler *a = new_asm(&c, 0, 2);
    /* three sequences started with room for two: the least recently
     * extended one (key 1) is evicted */
    send_chunk(a, &PROV_A, 1, 1, doc, 400, 100, 0);
    send_chunk(a, &PROV_A, 2, 2, doc, 400, 100, 0);
    send_chunk(a, &PROV_A, 2, 2, doc, 400, 100, 1);
    ETW_CHECK_INT(etw_es_stats_get(a)->pending, 2);
    ETW_CHECK_INT(c.nd, 0);
    send_chunk(a, &PROV_A, 3, 3, doc, 400, 100, 0);
    ETW_CHECK_INT(etw_es_stats_get(a)->pending, 2);
    ETW_CHECK_INT(c.nd, 1);
    ETW_CHECK_INT(c.d[0].status, ETW_E_LIMIT);
    ETW_CHECK(diag_has(&c, 0, "(pid 1, tid 1)"));
    ETW_CHECK(diag_has(&c, 0, "max_pending (1 of 4 chunks, 100 bytes)"));
    ETW_CHECK_INT(etw_es_stats_get(a)->evicted, 1);
    /* the rest of the evicted run is ignored silently; the others finish */
    for (uint16_t i = 1; i < 4; i++) send_chunk(a, &PROV_A, 1, 1, doc, 400, 100, i);
    for (uint16_t i = 2; i < 4; i++) send_chunk(a, &PROV_A, 2, 2, doc, 400, 100, i);
    for (uint16_t i = 1; i < 4; i++) send_chunk(a, &PROV_A, 3, 3, doc, 400, 100, i);
    ETW_CHECK_INT(c.n, 2);
    ETW_CHECK(c.n == 2 && man_is(&c.m[0], &PROV_A, 2, doc, 400));
    ETW_CHECK(c.n == 2 && man_is(&c.m[1], &PROV_A, 3, doc, 400));
    ETW_CHECK_INT(c.nd, 1);
    ETW_CHECK_INT(etw_es_stats_get(a)->pending, 0);

    /* a key with a tombstone (its last run was bad) starting again also
     * needs room: the least recent live sequence is evicted */
    cap_reset(&c);
    send_chunk(a, &PROV_A, 1, 1, doc, 400, 100, 0);
    send_chunk(a, &PROV_A, 2, 2, doc, 400, 100, 0);
    ETW_CHECK_INT(offer(a, &PROV_A, 3, 3, env_ok(0, 0), doc, 100), ETW_OK); /* bad: tombstone */
    ETW_CHECK_INT(c.nd, 1);
    send_chunk(a, &PROV_A, 3, 3, doc, 400, 100, 0);
    ETW_CHECK_INT(etw_es_stats_get(a)->pending, 2);
    ETW_CHECK_INT(c.nd, 2);
    ETW_CHECK(diag_has(&c, 1, "(pid 1, tid 1)"));
    ETW_CHECK(diag_has(&c, 1, "evicted"));
    for (uint16_t i = 1; i < 4; i++) send_chunk(a, &PROV_A, 2, 2, doc, 400, 100, i);
    for (uint16_t i = 1; i < 4; i++) send_chunk(a, &PROV_A, 3, 3, doc, 400, 100, i);
    ETW_CHECK_INT(c.n, 2);
    ETW_CHECK_INT(c.nd, 2);
    ETW_CHECK_INT(etw_es_stats_get(a)->pending, 0);

    /* many keys through a small table: never more than max_pending live,
     * each evicted once */
    cap_reset(&c);
    for (uint32_t k = 0; k < 50; k++) {
        send_chunk(a, &PROV_B, k, k, doc, 400, 100, 0);
        ETW_CHECK(etw_es_stats_get(a)->pending <= 2);
    }
    ETW_CHECK_INT(c.nd, 48);
    etw_es_finish(a);
    ETW_CHECK_INT(c.nd, 50);
    free_asm(a, &c);

    /* the default and the clamp */
    etw_es_options o;
    memset(&o, 0, sizeof o);
    o.max_pending = 1000000;
    ETW_CHECK_INT(etw_es_new(&a, &o), ETW_OK);
    for (uint32_t k = 0; k < ETW_ES_MAX_PENDING_LIMIT + 10; k++)
        ETW_CHECK_INT(offer(a, &PROV_B, k, 0, env_ok(2, 0), doc, 1), ETW_OK);
    ETW_CHECK_INT(etw_es_stats_get(a)->pending, ETW_ES_MAX_PENDING_LIMIT);
    ETW_CHECK_INT(etw_es_stats_get(a)->evicted, 10);
    etw_es_free(a); /* frees unfinished ones without reports */
    free(doc);
}

static void test_bounds_bytes(void) {
    uint8_t *doc = make_doc(3000, 9);
    cap c;
    etw_es_assembler *a = new_asm(&c, 1000, 0);
    const etw_es_stats *st = etw_es_stats_get(a);
    /* A: 3 chunks of 400 (estimate 1200 > bound: grows as needed) */
    send_chunk(a, &PROV_A, 1, 1, doc, 1200, 400, 0);
    send_chunk(a, &PROV_A, 1, 1, doc, 1200, 400, 1);
    ETW_CHECK_INT(st->pending_bytes, 800);
    ETW_CHECK_INT(c.nd, 0);
    /* B: 300 bytes would exceed the bound: A (least recent) is evicted */
    send_chunk(a, &PROV_B, 1, 1, doc, 600, 300, 0);
    ETW_CHECK(st->pending_bytes <= 1000);
    ETW_CHECK_INT(st->pending, 1);
    ETW_CHECK_INT(c.nd, 1);
    ETW_CHECK_INT(c.d[0].status, ETW_E_LIMIT);
    ETW_CHECK(diag_has(&c, 0, "max_pending_bytes (2 of 3 chunks, 800 bytes)"));
    send_chunk(a, &PROV_A, 1, 1, doc, 1200, 400, 2); /* silent */
    send_chunk(a, &PROV_B, 1, 1, doc, 600, 300, 1);
    ETW_CHECK_INT(c.n, 1);
    ETW_CHECK(c.n == 1 && man_is(&c.m[0], &PROV_B, 1, doc, 600));
    ETW_CHECK_INT(c.nd, 1);
    ETW_CHECK(st->peak_pending_bytes <= 1000);
    ETW_CHECK_INT(st->pending_bytes, 0);

    /* A manifest larger than the bound by itself is dropped without
     * evicting the others: refused at chunk 0 when its chunk size and
     * count say so... */
    cap_reset(&c);
    send_chunk(a, &PROV_B, 2, 2, doc, 400, 200, 0); /* 400 held */
    ETW_CHECK_INT(st->pending_bytes, 400);
    send_chunk(a, &PROV_A, 2, 2, doc, 1500, 500, 0);
    ETW_CHECK_INT(c.nd, 1);
    ETW_CHECK_INT(c.nd ? (long long)c.d[0].status : 0, ETW_E_LIMIT);
    ETW_CHECK(diag_has(&c, 0, "chunk 0 announces 3 chunks of 500 bytes, more than max_pending_bytes (1000)"));
    send_chunk(a, &PROV_A, 2, 2, doc, 1500, 500, 1); /* silent */
    send_chunk(a, &PROV_A, 2, 2, doc, 1500, 500, 2);
    ETW_CHECK_INT(c.nd, 1);
    ETW_CHECK_INT(st->pending, 1);
    ETW_CHECK_INT(st->pending_bytes, 400);
    /* ...or when it grows past it (chunks of unequal sizes) */
    static const size_t sizes[3] = {100, 100, 900};
    size_t pos = 0;
    for (uint16_t i = 0; i < 3; i++) {
        ETW_CHECK_INT(offer(a, &PROV_A, 5, 5, env_ok(3, i), doc + pos, sizes[i]), ETW_OK);
        pos += sizes[i];
        if (i == 1) ETW_CHECK_INT(st->pending_bytes, 700);
    }
    ETW_CHECK_INT(c.nd, 2);
    ETW_CHECK(diag_has(&c, 1, "manifest larger than max_pending_bytes (1100 bytes after 3 of 3 chunks"));
    ETW_CHECK_INT(st->pending, 1);
    ETW_CHECK_INT(st->pending_bytes, 400);
    send_chunk(a, &PROV_B, 2, 2, doc, 400, 200, 1);
    ETW_CHECK_INT(c.n, 1);
    ETW_CHECK(c.n == 1 && man_is(&c.m[0], &PROV_B, 2, doc, 400));
    ETW_CHECK_INT(c.nd, 2);
    ETW_CHECK(st->peak_pending_bytes <= 1000);

    /* A one-chunk manifest larger than the bound is not held: delivered. */
    ETW_CHECK_INT(offer(a, &PROV_A, 9, 9, env_ok(1, 0), doc, 3000), ETW_OK);
    ETW_CHECK_INT(c.n, 2);
    ETW_CHECK_INT(st->pending_bytes, 0);
    free_asm(a, &c);
    free(doc);
}

static etw_status on_man_check(void *ctx, const etw_guid *provider, uint32_t pid, const uint8_t *xml,
                               size_t len) {
    cap *c = ctx;
    /* the sequence is already detached when the callback runs */
    ETW_CHECK_INT(etw_es_stats_get(c->a)->pending, 0);
    return on_man(ctx, provider, pid, xml, len);
}

static void test_callback_status(void) {
    uint8_t *doc = make_doc(300, 11);
    cap c;
    etw_es_assembler *a = new_asm(&c, 0, 0);
    c.ret = ETW_E_CORRUPT;
    ETW_CHECK_INT(offer(a, &PROV_A, 1, 1, env_ok(1, 0), doc, 300), ETW_E_CORRUPT);
    send_chunk(a, &PROV_A, 1, 1, doc, 300, 100, 0);
    send_chunk(a, &PROV_A, 1, 1, doc, 300, 100, 1);
    ETW_CHECK_INT(offer(a, &PROV_A, 1, 1, env_ok(3, 2), doc + 200, 100), ETW_E_CORRUPT);
    ETW_CHECK_INT(c.n, 2);
    ETW_CHECK_INT(etw_es_stats_get(a)->pending, 0);
    ETW_CHECK_INT(etw_es_stats_get(a)->pending_bytes, 0);
    free_asm(a, &c);

    /* no callbacks at all: manifests and problems are counted */
    etw_es_options o;
    memset(&o, 0, sizeof o);
    ETW_CHECK_INT(etw_es_new(&a, &o), ETW_OK);
    for (uint16_t i = 0; i < 3; i++)
        ETW_CHECK_INT(offer(a, &PROV_A, 1, 1, env_ok(3, i), doc + 100 * i, 100), ETW_OK);
    ETW_CHECK_INT(offer(a, &PROV_A, 1, 1, env_ok(3, 2), doc, 100), ETW_OK);
    ETW_CHECK_INT(etw_es_stats_get(a)->manifests, 1);
    ETW_CHECK_INT(etw_es_stats_get(a)->problems, 1);
    etw_es_free(a);

    /* the stats seen from inside the callback */
    memset(&c, 0, sizeof c);
    memset(&o, 0, sizeof o);
    o.on_manifest = on_man_check;
    o.ctx = &c;
    ETW_CHECK_INT(etw_es_new(&a, &o), ETW_OK);
    c.a = a;
    send_doc(a, &PROV_A, 1, 1, doc, 300, 70);
    ETW_CHECK_INT(c.n, 1);
    free_asm(a, &c);
    free(doc);
}

/* An allocator that fails after a budget of calls. */
typedef struct fail_alloc {
    int left;
    int live;
} fail_alloc;
static void *fa_alloc(void *ctx, size_t n) {
    fail_alloc *f = ctx;
    if (f->left <= 0) return NULL;
    f->left--;
    void *p = malloc(n);
    if (p) f->live++;
    return p;
}
static void fa_free(void *ctx, void *p) {
    fail_alloc *f = ctx;
    if (p) f->live--;
    free(p);
}

static void test_alloc_failure(void) {
    uint8_t *doc = make_doc(300, 12);
    for (int budget = 0; budget < 6; budget++) {
        fail_alloc f = {budget, 0};
        etw_allocator al = {fa_alloc, fa_free, &f};
        cap c;
        memset(&c, 0, sizeof c);
        etw_es_options o;
        memset(&o, 0, sizeof o);
        o.allocator = &al;
        o.on_manifest = on_man;
        o.ctx = &c;
        o.on_diag = on_diag;
        o.diag_ctx = &c;
        etw_es_assembler *a = NULL;
        etw_status st = etw_es_new(&a, &o);
        if (budget < 2) {
            ETW_CHECK_INT(st, ETW_E_NOMEM);
            ETW_CHECK(a == NULL);
            ETW_CHECK_INT(f.live, 0);
            continue;
        }
        ETW_CHECK_INT(st, ETW_OK);
        /* growing chunks force reallocations */
        etw_status worst = ETW_OK;
        const size_t sizes[4] = {10, 40, 100, 150};
        size_t pos = 0;
        for (uint16_t i = 0; i < 4; i++) {
            st = offer(a, &PROV_A, 1, 1, env_ok(4, i), doc + pos, sizes[i]);
            pos += sizes[i];
            if (st != ETW_OK) worst = st;
        }
        if (worst == ETW_OK) {
            ETW_CHECK_INT(c.n, 1);
            ETW_CHECK(c.n == 1 && man_is(&c.m[0], &PROV_A, 1, doc, 300));
        } else {
            ETW_CHECK_INT(worst, ETW_E_NOMEM);
            ETW_CHECK_INT(c.n, 0);
            ETW_CHECK_INT(c.nd, 1);
            ETW_CHECK(diag_has(&c, 0, "out of memory"));
        }
        ETW_CHECK_INT(etw_es_stats_get(a)->pending, 0);
        ETW_CHECK_INT(etw_es_stats_get(a)->pending_bytes, 0);
        etw_es_free(a);
        ETW_CHECK_INT(f.live, 0);
        cap_reset(&c);
    }
    free(doc);
}

static void test_version_score(void) {
    const char *m1 =
        "\xEF\xBB\xBF<?xml version=\"1.0\"?>\n"
        "<instrumentationManifest><!-- <event value=\"999\" version=\"9\"/> -->\n"
        "<instrumentation><events><provider name=\"P\" guid=\"{x}\">\n"
        "<events>\n"
        " <event value=\"1\" version=\"0\" task=\"A\"/>\n"
        " <event value = '7' version=\"2\" level=\"win:Informational\"></event>\n"
        " <event symbol=\"x\" value=\"3\" version=\" 1 \" message=\"a&gt;b\"/>\n"
        " <event value=\"abc\" version=\"99999999999\"/>\n"
        " <eventX value=\"50\" version=\"5\"/>\n"
        "</events><![CDATA[ <event value=\"500\"/> ]]>\n"
        "<template tid=\"t\"><data name=\"value\" inType=\"win:Int32\"/></template>\n"
        "</provider></events></instrumentation></instrumentationManifest>";
    /* 4 events + versions 0+2+1 + 100 x 7 */
    ETW_CHECK_INT(etw_es_manifest_version((const uint8_t *)m1, strlen(m1)), 4 + 3 + 700);
    const char *m2 = "<m><events><event value=\"7\" version=\"3\"/></events></m>";
    ETW_CHECK_INT(etw_es_manifest_version((const uint8_t *)m2, strlen(m2)), 1 + 3 + 700);
    const char *m3 = "<m><events><event value=\"7\" version=\"3\"/> </events></m>";
    ETW_CHECK_INT(etw_es_manifest_better((const uint8_t *)m1, strlen(m1), (const uint8_t *)m2, strlen(m2)),
                  1);
    ETW_CHECK_INT(etw_es_manifest_better((const uint8_t *)m2, strlen(m2), (const uint8_t *)m1, strlen(m1)),
                  0);
    /* equal score: the longer one wins, never the same one */
    ETW_CHECK_INT(etw_es_manifest_better((const uint8_t *)m3, strlen(m3), (const uint8_t *)m2, strlen(m2)),
                  1);
    ETW_CHECK_INT(etw_es_manifest_better((const uint8_t *)m2, strlen(m2), (const uint8_t *)m2, strlen(m2)),
                  0);
    ETW_CHECK_INT(etw_es_manifest_version((const uint8_t *)"", 0), -1);
    ETW_CHECK_INT(etw_es_manifest_version(NULL, 0), -1);
    ETW_CHECK_INT(etw_es_manifest_version((const uint8_t *)"hello", 5), -1);
    ETW_CHECK_INT(etw_es_manifest_version((const uint8_t *)"\xFF\xFE<\0", 4), -1);
    ETW_CHECK_INT(etw_es_manifest_version((const uint8_t *)"  <a/>", 6), 0);
    /* truncated text: never reads past len (exact allocation) */
    size_t n1 = strlen(m1);
    for (size_t cut = 0; cut <= n1; cut++) {
        uint8_t *p = malloc(cut ? cut : 1);
        memcpy(p, m1, cut);
        int64_t v = etw_es_manifest_version(p, cut);
        ETW_CHECK(v == -1 || (v >= 0 && v <= 4 + 3 + 700));
        free(p);
    }
}

/* ---- real traces ---- */

/* Copy the attribute `attr` of the first <provider element in xml into
 * out (empty when absent). */
static void provider_attr(const uint8_t *xml, size_t len, const char *attr, char *out, size_t out_size) {
    out[0] = 0;
    const char *end = (const char *)xml + len;
    const char *p = (const char *)xml;
    size_t alen = strlen(attr);
    for (; p + 10 <= end; p++)
        if (memcmp(p, "<provider ", 10) == 0) break;
    if (p + 10 > end) return;
    const char *tag_end = memchr(p, '>', (size_t)(end - p));
    if (!tag_end) return;
    for (const char *q = p; q + alen + 2 <= tag_end; q++) {
        if (q[-1] == ' ' && memcmp(q, attr, alen) == 0 && q[alen] == '=' && q[alen + 1] == '"') {
            const char *v = q + alen + 2;
            const char *ve = memchr(v, '"', (size_t)(tag_end - v));
            if (!ve) return;
            size_t n = (size_t)(ve - v);
            if (n >= out_size) n = out_size - 1;
            memcpy(out, v, n);
            out[n] = 0;
            return;
        }
    }
}

/* The text checks every delivered manifest must pass: starts with '<'
 * (after an optional UTF-8 BOM), no NUL bytes, valid UTF-8, a <provider
 * element whose guid attribute is the event's provider GUID. */
static int utf8_ok(const uint8_t *s, size_t n) {
    size_t i = 0;
    while (i < n) {
        uint8_t c = s[i];
        size_t k = c < 0x80 ? 0 : (c & 0xE0) == 0xC0 ? 1 : (c & 0xF0) == 0xE0 ? 2 : (c & 0xF8) == 0xF0 ? 3 : 9;
        if (c == 0 || k == 9 || k >= n - i) return 0;
        for (size_t j = 1; j <= k; j++)
            if ((s[i + j] & 0xC0) != 0x80) return 0;
        i += k + 1;
    }
    return 1;
}

static void check_xml_text(const cap_man *m, const char *name) {
    size_t i = (m->len >= 3 && memcmp(m->xml, "\xEF\xBB\xBF", 3) == 0) ? 3 : 0;
    ETW_CHECK(m->len > i && m->xml[i] == '<');
    ETW_CHECK(utf8_ok(m->xml, m->len));
    char got[128], guid[64], want_guid[ETW_GUID_STRING_SIZE + 2];
    provider_attr(m->xml, m->len, "name", got, sizeof got);
    ETW_CHECK_STR(got, name);
    provider_attr(m->xml, m->len, "guid", guid, sizeof guid);
    char g[ETW_GUID_STRING_SIZE];
    etw_guid_format(&m->provider, g);
    snprintf(want_guid, sizeof want_guid, "{%s}", g);
    for (char *p = guid; *p; p++)
        if (*p >= 'A' && *p <= 'F') *p = (char)(*p - 'A' + 'a');
    ETW_CHECK_STR(guid, want_guid);
    /* it ends like a document */
    size_t e = m->len;
    while (e > 0 && (m->xml[e - 1] == '\n' || m->xml[e - 1] == '\r' || m->xml[e - 1] == ' ' ||
                     m->xml[e - 1] == 0))
        e--;
    ETW_CHECK(e > 0 && m->xml[e - 1] == '>');
}

/* Event values of the <event> elements of a manifest (simple scan). */
static int manifest_has_event(const cap_man *m, unsigned id) {
    char pat[32];
    snprintf(pat, sizeof pat, "value=\"%u\"", id);
    size_t pl = strlen(pat);
    const char *s = (const char *)m->xml, *end = s + m->len;
    for (const char *p = s; p + 7 <= end; p++) {
        if (memcmp(p, "<event ", 7) != 0) continue;
        const char *te = memchr(p, '>', (size_t)(end - p));
        if (!te) return 0;
        for (const char *q = p; q + pl <= te; q++)
            if (memcmp(q, pat, pl) == 0) return 1;
    }
    return 0;
}

typedef struct trace_run {
    etw_es_envelope env[16];
    uint32_t pid[16], tid[16];
    etw_guid prov[16];
    int nenv;
    unsigned other_ids[16];
    int nother;
    uint64_t events;
} trace_run;

static int run_trace(const char *name, etw_es_assembler *a, trace_run *tr) {
    char path[512];
    snprintf(path, sizeof path, "%s/%s", ETW_TEST_DATA_DIR, name);
    etw_reader *r = NULL;
    etw_status st = etw_reader_open_file(&r, path, NULL);
    ETW_CHECK_INT(st, ETW_OK);
    if (st != ETW_OK) return 0;
    memset(tr, 0, sizeof *tr);
    etw_event ev;
    while ((st = etw_reader_next(r, &ev)) == ETW_OK) {
        tr->events++;
        if (etw_es_is_manifest_event(&ev)) {
            if (tr->nenv < 16) {
                ETW_CHECK_INT(etw_es_envelope_read(&ev, &tr->env[tr->nenv]), ETW_OK);
                tr->pid[tr->nenv] = ev.pid;
                tr->tid[tr->nenv] = ev.tid;
                tr->prov[tr->nenv] = ev.provider;
            }
            tr->nenv++;
        } else if (ev.form == ETW_FORM_EVENT_HEADER && tr->nother < 16) {
            int seen = 0;
            for (int i = 0; i < tr->nother; i++)
                if (tr->other_ids[i] == ev.id) seen = 1;
            if (!seen) tr->other_ids[tr->nother++] = ev.id;
        }
        ETW_CHECK_INT(etw_es_offer(a, &ev), ETW_OK);
    }
    ETW_CHECK_INT(st, ETW_END);
    etw_es_finish(a);
    etw_reader_close(r);
    return 1;
}

#ifndef ETW_ES_TEST_NO_MANIFEST_LOADER
static void load_with_loader(const cap_man *m, uint32_t min_events) {
    etw_manifest_options mo;
    memset(&mo, 0, sizeof mo);
    mo.kind = ETW_SOURCE_EVENTSOURCE;
    etw_manifest_set *set = NULL;
    ETW_CHECK_INT(etw_manifest_set_new(&set, &mo), ETW_OK);
    if (!set) return;
    uint32_t providers = 0;
    ETW_CHECK_INT(etw_manifest_load_xml(set, (const char *)m->xml, m->len, "EventSource test", &providers),
                  ETW_OK);
    ETW_CHECK_INT(providers, 1);
    ETW_CHECK_INT(etw_manifest_has_provider(set, &m->provider), 1);
    ETW_CHECK(etw_manifest_event_count(set) >= min_events);
    etw_manifest_set_free(set);
}
#endif

static void test_trace_bond(void) {
    cap c;
    etw_es_assembler *a = new_asm(&c, 0, 0);
    trace_run tr;
    if (!run_trace("BondEtwSample.etl", a, &tr)) {
        free_asm(a, &c);
        return;
    }
    ETW_CHECK_INT(tr.events, 13);
    ETW_CHECK_INT(tr.nenv, 1);
    ETW_CHECK_INT(c.n, 1);
    ETW_CHECK_INT(c.nd, 0);
    const etw_es_stats *st = etw_es_stats_get(a);
    ETW_CHECK_INT(st->manifest_events, 1);
    ETW_CHECK_INT(st->manifests, 1);
    ETW_CHECK_INT(st->problems, 0);
    ETW_CHECK_INT(st->peak_pending_bytes, 0);
    const etw_guid bond = {0x4f8f06bfu, 0x8261, 0x4099, {0xae, 0x5f, 0x07, 0xc5, 0x4b, 0xbc, 0xfa, 0xb3}};
    ETW_CHECK_INT(tr.env[0].format, 1);
    ETW_CHECK_INT(tr.env[0].major, 1);
    ETW_CHECK_INT(tr.env[0].minor, 0);
    ETW_CHECK_INT(tr.env[0].magic, 91);
    ETW_CHECK_INT(tr.env[0].total_chunks, 1);
    ETW_CHECK_INT(tr.env[0].chunk_number, 0);
    ETW_CHECK_INT(tr.env[0].payload_length, 6329);
    if (c.n == 1) {
        ETW_CHECK(etw_guid_equal(&c.m[0].provider, &bond));
        ETW_CHECK_INT(c.m[0].pid, 16808);
        ETW_CHECK_INT(c.m[0].len, 6329 - 8);
        check_xml_text(&c.m[0], "MSOpenTech-Tx-BinaryEventSource");
        /* the provider defines the events the trace's other events use */
        ETW_CHECK_INT(tr.nother, 2);
        for (int i = 0; i < tr.nother; i++) ETW_CHECK(manifest_has_event(&c.m[0], tr.other_ids[i]));
        ETW_CHECK(etw_es_manifest_version(c.m[0].xml, c.m[0].len) > 0);
#ifndef ETW_ES_TEST_NO_MANIFEST_LOADER
        load_with_loader(&c.m[0], 2);
#endif
    }
    free_asm(a, &c);
}

#ifndef ETW_ES_TEST_NO_MANIFEST_LOADER
/* As a decoder would: every manifest the assembler completes goes to an
 * EventSource manifest set, and later events resolve through it. */
typedef struct loader_ctx {
    etw_manifest_set *set;
    int loaded;
    etw_status last;
} loader_ctx;

static etw_status load_manifest(void *ctx, const etw_guid *provider, uint32_t pid, const uint8_t *xml,
                                size_t len) {
    loader_ctx *l = ctx;
    (void)provider;
    (void)pid;
    uint32_t providers = 0;
    l->last = etw_manifest_load_xml(l->set, (const char *)xml, len, "EventSource (test)", &providers);
    if (l->last == ETW_OK && providers == 1) l->loaded++;
    return ETW_OK;
}

static void test_trace_bond_loader(void) {
    loader_ctx l;
    memset(&l, 0, sizeof l);
    etw_manifest_options mo;
    memset(&mo, 0, sizeof mo);
    mo.kind = ETW_SOURCE_EVENTSOURCE;
    ETW_CHECK_INT(etw_manifest_set_new(&l.set, &mo), ETW_OK);
    etw_cache *cache = NULL;
    ETW_CHECK_INT(etw_cache_new(&cache, NULL), ETW_OK);
    etw_es_options o;
    memset(&o, 0, sizeof o);
    o.on_manifest = load_manifest;
    o.ctx = &l;
    etw_es_assembler *a = NULL;
    ETW_CHECK_INT(etw_es_new(&a, &o), ETW_OK);
    etw_reader *r = NULL;
    ETW_CHECK_INT(etw_reader_open_file(&r, ETW_TEST_DATA_DIR "/BondEtwSample.etl", NULL), ETW_OK);
    if (!l.set || !cache || !a || !r) {
        etw_reader_close(r);
        etw_es_free(a);
        etw_cache_free(cache);
        etw_manifest_set_free(l.set);
        return;
    }
    etw_source src = etw_manifest_as_source(l.set);
    etw_manifest_set_cache(l.set, cache);
    etw_event ev;
    int resolved = 0, others = 0;
    while (etw_reader_next(r, &ev) == ETW_OK) {
        ETW_CHECK_INT(etw_es_offer(a, &ev), ETW_OK);
        if (ev.form != ETW_FORM_EVENT_HEADER || etw_es_is_manifest_event(&ev)) continue;
        others++;
        uint8_t key[ETW_DESCRIPTOR_KEY_SIZE];
        etw_key_descriptor(key, &ev.provider, ev.id, ev.version);
        uint64_t h = etw_cache_hash(key, sizeof key);
        const etw_schema *sc = NULL;
        const char *why = NULL;
        etw_status st = src.resolve(src.ctx, cache, &ev, key, sizeof key, h, &sc, &why);
        ETW_CHECK_INT(st, ETW_OK);
        if (st != ETW_OK) fprintf(stderr, "  resolve id %u: %s\n", ev.id, why ? why : "?");
        if (st == ETW_OK && sc) {
            resolved++;
            ETW_CHECK(etw_guid_equal(&sc->provider, &ev.provider));
            ETW_CHECK_INT(sc->event_id, ev.id);
            ETW_CHECK_INT(sc->source, ETW_SOURCE_EVENTSOURCE);
            ETW_CHECK_STR(sc->provider_name, "MSOpenTech-Tx-BinaryEventSource");
        }
    }
    etw_es_finish(a);
    ETW_CHECK_INT(l.loaded, 1);
    ETW_CHECK_INT(l.last, ETW_OK);
    ETW_CHECK_INT(others, 11);
    ETW_CHECK_INT(resolved, 11);
    etw_reader_close(r);
    etw_es_free(a);
    etw_cache_free(cache);
    etw_manifest_set_free(l.set);
}
#endif

/* The ManifestData lines of a PerfView baseline, in order. */
typedef struct base_line {
    char provider[128];
    uint32_t pid, tid, datalen, format, major, minor, magic, total, num, payload_length;
} base_line;

static int base_field(const char *line, const char *key, uint32_t *out) {
    char pat[48];
    snprintf(pat, sizeof pat, " %s=", key);
    const char *p = strstr(line, pat);
    if (!p) return 0;
    p += strlen(pat);
    uint64_t v = 0;
    int digits = 0;
    for (; *p && *p != ';'; p++) {
        if (*p == ',') continue;
        if (*p < '0' || *p > '9') return 0;
        v = v * 10 + (uint64_t)(*p - '0');
        digits++;
    }
    if (!digits || v > 0xFFFFFFFFu) return 0;
    *out = (uint32_t)v;
    return 1;
}

static int read_baseline(const char *name, base_line *out, int max) {
    char path[512];
    snprintf(path, sizeof path, "%s/%s", ETW_TEST_DATA_DIR, name);
    FILE *f = fopen(path, "r");
    ETW_CHECK(f != NULL);
    if (!f) return 0;
    static char line[65536];
    int n = 0;
    while (fgets(line, sizeof line, f)) {
        if (strncmp(line, "EVENT ", 6) != 0) continue;
        char *tag = strstr(line, "/ManifestData ");
        char *colon = strstr(line, ": ");
        if (!tag || !colon || colon > tag || n >= max) continue;
        base_line *b = &out[n];
        memset(b, 0, sizeof *b);
        size_t pl = (size_t)(tag - (colon + 2));
        if (pl >= sizeof b->provider) pl = sizeof b->provider - 1;
        memcpy(b->provider, colon + 2, pl);
        int ok = base_field(line, "PID", &b->pid) & base_field(line, "TID", &b->tid) &
                 base_field(line, "DataLen", &b->datalen) & base_field(line, "Format", &b->format) &
                 base_field(line, "MajorVersion", &b->major) & base_field(line, "MinorVersion", &b->minor) &
                 base_field(line, "Magic", &b->magic) & base_field(line, "TotalChunks", &b->total) &
                 base_field(line, "ChunkNumber", &b->num) &
                 base_field(line, "PayloadLength", &b->payload_length);
        ETW_CHECK(ok);
        n++;
    }
    fclose(f);
    return n;
}

static void test_trace_net452(void) {
    base_line base[16];
    int nb = read_baseline("net.4.5.2.x64.baseline.txt", base, 16);
    ETW_CHECK_INT(nb, 4);

    cap c;
    etw_es_assembler *a = new_asm(&c, 0, 0);
    trace_run tr;
    if (!run_trace("net.4.5.2.x64.etl", a, &tr)) {
        free_asm(a, &c);
        return;
    }
    ETW_CHECK_INT(tr.nenv, 4);
    ETW_CHECK_INT(c.n, 4);
    ETW_CHECK_INT(c.nd, 0);
    const etw_es_stats *st = etw_es_stats_get(a);
    ETW_CHECK_INT(st->manifest_events, 4);
    ETW_CHECK_INT(st->manifests, 4);
    ETW_CHECK_INT(st->problems, 0);

    static const struct {
        const char *name;
        etw_guid guid;
        uint32_t size;
    } want[4] = {
        {"PerfView", {0xa8a71ac1u, 0x040f, 0x54a2, {0x07, 0xca, 0x00, 0xa8, 0x9b, 0x5a, 0xb7, 0x61}}, 13046},
        {"System.Threading.Tasks.TplEventSource",
         {0x2e5dba47u, 0xa3d2, 0x4d16, {0x8e, 0xe0, 0x66, 0x71, 0xff, 0xdc, 0xd7, 0xb5}}, 8839},
        {"System.Diagnostics.Eventing.FrameworkEventSource",
         {0x8e9f5090u, 0x2d75, 0x4d03, {0x8a, 0x81, 0xe5, 0xaf, 0xbf, 0x85, 0xda, 0xf1}}, 50588},
        {"PerfView", {0xa8a71ac1u, 0x040f, 0x54a2, {0x07, 0xca, 0x00, 0xa8, 0x9b, 0x5a, 0xb7, 0x61}}, 13046},
    };
    for (int i = 0; i < 4 && i < c.n && i < tr.nenv && i < nb; i++) {
        const cap_man *m = &c.m[i];
        ETW_CHECK(etw_guid_equal(&m->provider, &want[i].guid));
        ETW_CHECK(etw_guid_equal(&tr.prov[i], &want[i].guid));
        ETW_CHECK_INT(m->pid, 3988);
        ETW_CHECK_INT(m->len, want[i].size - 8);
        check_xml_text(m, want[i].name);
        /* the envelope of each manifest event equals PerfView's view */
        const base_line *b = &base[i];
        ETW_CHECK_STR(b->provider, want[i].name);
        ETW_CHECK_INT(tr.pid[i], b->pid);
        ETW_CHECK_INT(tr.tid[i], b->tid);
        ETW_CHECK_INT(tr.env[i].format, b->format);
        ETW_CHECK_INT(tr.env[i].major, b->major);
        ETW_CHECK_INT(tr.env[i].minor, b->minor);
        ETW_CHECK_INT(tr.env[i].magic, b->magic);
        ETW_CHECK_INT(tr.env[i].total_chunks, b->total);
        ETW_CHECK_INT(tr.env[i].chunk_number, b->num);
        ETW_CHECK_INT(tr.env[i].payload_length, b->payload_length);
        ETW_CHECK_INT(tr.env[i].payload_length, b->datalen);
        ETW_CHECK_INT(tr.env[i].format, 1);
        ETW_CHECK_INT(tr.env[i].magic, 91);
        ETW_CHECK_INT(tr.env[i].total_chunks, 1);
#ifndef ETW_ES_TEST_NO_MANIFEST_LOADER
        load_with_loader(m, 1);
#endif
    }
    if (c.n == 4) {
        /* the PerfView manifest was sent twice, identical: not better */
        ETW_CHECK(c.m[0].len == c.m[3].len && memcmp(c.m[0].xml, c.m[3].xml, c.m[0].len) == 0);
        ETW_CHECK_INT(etw_es_manifest_better(c.m[3].xml, c.m[3].len, c.m[0].xml, c.m[0].len), 0);
        for (int i = 0; i < 4; i++) ETW_CHECK(etw_es_manifest_version(c.m[i].xml, c.m[i].len) > 0);
    }
    free_asm(a, &c);
}

/* Re-chunk a real manifest into small chunks interleaved with a second
 * one, as a newer EventSource would send them after a failed write. */
static void test_trace_rechunked(void) {
    cap c;
    etw_es_assembler *a = new_asm(&c, 0, 0);
    trace_run tr;
    if (!run_trace("net.4.5.2.x64.etl", a, &tr) || c.n < 3) {
        free_asm(a, &c);
        return;
    }
    size_t n1 = c.m[1].len, n2 = c.m[2].len;
    uint8_t *d1 = malloc(n1), *d2 = malloc(n2);
    memcpy(d1, c.m[1].xml, n1);
    memcpy(d2, c.m[2].xml, n2);
    etw_guid g1 = c.m[1].provider, g2 = c.m[2].provider;
    cap_reset(&c);
    uint16_t t1 = chunk_count(n1, 1000), t2 = chunk_count(n2, 0x3000);
    for (uint16_t i = 0; i < t1 || i < t2; i++) {
        if (i < t1) send_chunk(a, &g1, 3988, 4032, d1, n1, 1000, i);
        if (i < t2) send_chunk(a, &g2, 3988, 4032, d2, n2, 0x3000, i);
    }
    ETW_CHECK_INT(c.n, 2);
    ETW_CHECK_INT(c.nd, 0);
    ETW_CHECK(c.n == 2 && man_is(&c.m[0], &g2, 3988, d2, n2));
    ETW_CHECK(c.n == 2 && man_is(&c.m[1], &g1, 3988, d1, n1));
    if (c.n == 2) check_xml_text(&c.m[1], "System.Threading.Tasks.TplEventSource");
    free(d1);
    free(d2);
    free_asm(a, &c);
}

int main(void) {
    ETW_RUN(test_is_manifest_event);
    ETW_RUN(test_envelope_read);
    ETW_RUN(test_one_chunk);
    ETW_RUN(test_many_chunks);
    ETW_RUN(test_interleaved);
    ETW_RUN(test_restart);
    ETW_RUN(test_sequence_errors);
    ETW_RUN(test_event_errors);
    ETW_RUN(test_bounds_count);
    ETW_RUN(test_bounds_bytes);
    ETW_RUN(test_callback_status);
    ETW_RUN(test_alloc_failure);
    ETW_RUN(test_version_score);
    ETW_RUN(test_trace_bond);
#ifndef ETW_ES_TEST_NO_MANIFEST_LOADER
    ETW_RUN(test_trace_bond_loader);
#endif
    ETW_RUN(test_trace_net452);
    ETW_RUN(test_trace_rechunked);
    return ETW_TEST_DONE();
}
