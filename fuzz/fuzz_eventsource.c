/* fuzz_eventsource.c - libFuzzer target for the EventSource manifest
 * assembler (src/source/etw_eventsource.c).
 *
 * Build: clang -g -O1 -fsanitize=fuzzer,address,undefined -Iinclude -Isrc \
 *            fuzz/fuzz_eventsource.c src/source/etw_eventsource.c \
 *            src/common/etw_common.c -o /tmp/fes
 * Seeds: fuzz/corpus/eventsource/.
 *
 * Input: a sequence of records
 *   u8 provider choice  bits 0-1: one of 4 provider GUIDs; bit 7: the event
 *                       is not a manifest event (id 0xFFFD), bit 6: it has
 *                       the CLASSIC_HEADER flag (also not one)
 *   u8 process choice   bits 0-1: pid 1000..1003; bit 2: tid 1 or 2
 *   u16 length (LE)     then that many bytes of user data (envelope and
 *                       chunk; the last record takes what is left)
 * Each record becomes an etw_event whose user data is an exactly-sized copy
 * (AddressSanitizer sees any overread) and is offered to two assemblers:
 *   A: small bounds (4 live sequences, 4096 bytes) through a counting
 *      allocator. After every offer: live sequences <= 4, pending bytes
 *      (stats) <= 4096, and the bytes really allocated beyond the table
 *      <= 4096; anything A delivers, the reference model delivers at the
 *      same event with the same bytes.
 *   B: bounds large enough that nothing is ever evicted (32 keys <= 64
 *      slots), compared exactly with a straightforward reference model of
 *      the rules in etw_eventsource.h: same deliveries (bytes, provider,
 *      pid) at the same events, same number of problems per event, same
 *      stats.
 * At the end both are finished: B reports exactly the model's unfinished
 * sequences; both hold nothing afterwards. etw_es_envelope_read and
 * etw_es_manifest_version run on every record and delivered manifest. */
#include "source/etw_eventsource.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FUZZ_ASSERT(c)                                                         \
    do {                                                                       \
        if (!(c)) {                                                            \
            fprintf(stderr, "%s:%d: assertion failed: %s\n", __FILE__,         \
                    __LINE__, #c);                                             \
            abort();                                                           \
        }                                                                      \
    } while (0)

#define A_MAX_PENDING 4u
#define A_MAX_BYTES 4096u
#define B_MAX_PENDING 64u
#define B_MAX_BYTES (64u * 1024u * 1024u)
#define NKEYS 32 /* 4 providers x 4 pids x 2 tids */

static const etw_guid PROVIDERS[4] = {
    {0x11111111u, 0x2222, 0x3333, {0x44, 0x55, 0x66, 0x77, 0x88, 0x99, 0xaa, 0xbb}},
    {0xa8a71ac1u, 0x040f, 0x54a2, {0x07, 0xca, 0x00, 0xa8, 0x9b, 0x5a, 0xb7, 0x61}},
    {0x2e5dba47u, 0xa3d2, 0x4d16, {0x8e, 0xe0, 0x66, 0x71, 0xff, 0xdc, 0xd7, 0xb5}},
    {0x00000000u, 0x0000, 0x0000, {0, 0, 0, 0, 0, 0, 0, 1}},
};

/* ---- counting allocator (assembler A) ---- */
typedef struct counting {
    size_t live_bytes;
    size_t live_blocks;
} counting;
static void *c_alloc(void *ctx, size_t n) {
    counting *c = ctx;
    unsigned char *p = malloc(n + 16);
    if (!p) return NULL;
    memcpy(p, &n, sizeof n);
    c->live_bytes += n;
    c->live_blocks++;
    return p + 16;
}
static void c_free(void *ctx, void *q) {
    counting *c = ctx;
    if (!q) return;
    unsigned char *p = (unsigned char *)q - 16;
    size_t n;
    memcpy(&n, p, sizeof n);
    c->live_bytes -= n;
    c->live_blocks--;
    free(p);
}

/* ---- what an assembler did during one offer ---- */
typedef struct seen {
    int delivered;
    etw_guid provider;
    uint32_t pid;
    uint8_t *xml;
    size_t len;
    uint64_t problems;
    const etw_es_assembler *self;
    size_t max_bytes;
} seen;

static etw_status on_manifest(void *ctx, const etw_guid *provider, uint32_t pid, const uint8_t *xml,
                              size_t len) {
    seen *s = ctx;
    FUZZ_ASSERT(!s->delivered); /* at most one manifest per event */
    FUZZ_ASSERT(len > 0 && xml != NULL);
    s->delivered = 1;
    s->provider = *provider;
    s->pid = pid;
    s->xml = malloc(len);
    FUZZ_ASSERT(s->xml);
    memcpy(s->xml, xml, len);
    s->len = len;
    (void)etw_es_manifest_version(xml, len);
    /* the finished sequence is no longer counted as pending */
    const etw_es_stats *st = etw_es_stats_get(s->self);
    FUZZ_ASSERT(st->pending_bytes <= s->max_bytes);
    return ETW_OK;
}

static void on_diag(void *ctx, const etw_diag *d) {
    seen *s = ctx;
    FUZZ_ASSERT(d->message && d->message[0]);
    FUZZ_ASSERT(d->status == ETW_E_CORRUPT || d->status == ETW_E_TRUNCATED || d->status == ETW_E_LIMIT ||
                d->status == ETW_E_NOMEM);
    s->problems++;
}

static void seen_clear(seen *s) {
    free(s->xml);
    s->xml = NULL;
    s->len = 0;
    s->delivered = 0;
}

/* ---- reference model of the rules, no eviction ---- */
enum { M_NONE, M_LIVE, M_DEAD };
typedef struct mkey {
    int state;
    uint8_t format, major, minor;
    uint16_t total, next;
    uint8_t *buf;
    size_t len;
} mkey;

typedef struct model {
    mkey k[NKEYS];
    uint64_t problems;
    uint64_t manifests;
    /* this event's delivery */
    int delivered;
    uint8_t *xml;
    size_t len;
} model;

static void mkey_reset(mkey *k, int state) {
    free(k->buf);
    k->buf = NULL;
    k->len = 0;
    k->state = state;
}

static void model_offer(model *m, int key, const uint8_t *p, size_t ulen, size_t max_bytes) {
    mkey *k = &m->k[key];
    free(m->xml);
    m->xml = NULL;
    m->len = 0;
    m->delivered = 0;
    int bad = ulen <= 8 || p[3] != 0x5B;
    uint16_t total = 0, num = 0;
    if (!bad) {
        total = (uint16_t)(p[4] | (p[5] << 8));
        num = (uint16_t)(p[6] | (p[7] << 8));
        bad = total == 0 || num >= total || ulen - 8 > 0xFF00;
    }
    if (bad) {
        m->problems++;
        mkey_reset(k, M_DEAD);
        return;
    }
    const uint8_t *chunk = p + 8;
    size_t clen = ulen - 8;
    if (num == 0) {
        if (k->state == M_LIVE) m->problems++;
        mkey_reset(k, M_NONE);
        if (total == 1) {
            m->delivered = 1;
            m->manifests++;
            m->xml = malloc(clen);
            FUZZ_ASSERT(m->xml);
            memcpy(m->xml, chunk, clen);
            m->len = clen;
            return;
        }
        if ((uint64_t)(total - 1u) * clen + 1u > max_bytes) {
            m->problems++;
            k->state = M_DEAD;
            return;
        }
        k->state = M_LIVE;
        k->format = p[0];
        k->major = p[1];
        k->minor = p[2];
        k->total = total;
        k->next = 0;
    } else {
        if (k->state == M_NONE) {
            m->problems++;
            k->state = M_DEAD;
            return;
        }
        if (k->state == M_DEAD) return;
        if (k->format != p[0] || k->major != p[1] || k->minor != p[2] || k->total != total ||
            num != k->next) {
            m->problems++;
            mkey_reset(k, M_DEAD);
            return;
        }
    }
    if (k->len + clen > max_bytes) {
        m->problems++;
        mkey_reset(k, M_DEAD);
        return;
    }
    uint8_t *nb = realloc(k->buf, k->len + clen);
    FUZZ_ASSERT(nb);
    k->buf = nb;
    memcpy(k->buf + k->len, chunk, clen);
    k->len += clen;
    k->next++;
    if (k->next == k->total) {
        m->delivered = 1;
        m->manifests++;
        m->xml = k->buf;
        m->len = k->len;
        k->buf = NULL;
        k->len = 0;
        k->state = M_NONE;
    }
}

static etw_es_assembler *make(seen *s, size_t max_bytes, uint32_t max_pending, const etw_allocator *al) {
    etw_es_options o;
    memset(&o, 0, sizeof o);
    o.allocator = al;
    o.max_pending_bytes = max_bytes;
    o.max_pending = max_pending;
    o.on_manifest = on_manifest;
    o.ctx = s;
    o.on_diag = on_diag;
    o.diag_ctx = s;
    etw_es_assembler *a = NULL;
    FUZZ_ASSERT(etw_es_new(&a, &o) == ETW_OK && a);
    s->self = a;
    s->max_bytes = max_bytes;
    return a;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    counting cnt = {0, 0};
    etw_allocator al = {c_alloc, c_free, &cnt};
    seen sa, sb;
    memset(&sa, 0, sizeof sa);
    memset(&sb, 0, sizeof sb);
    etw_es_assembler *a = make(&sa, A_MAX_BYTES, A_MAX_PENDING, &al);
    size_t base_bytes = cnt.live_bytes; /* the assembler and its table */
    etw_es_assembler *b = make(&sb, B_MAX_BYTES, B_MAX_PENDING, NULL);
    model *m = calloc(1, sizeof *m);
    FUZZ_ASSERT(m);
    uint64_t manifest_events = 0, record = 0;

    size_t pos = 0;
    while (pos + 4 <= size) {
        uint8_t pc = data[pos], qc = data[pos + 1];
        size_t len = (size_t)data[pos + 2] | ((size_t)data[pos + 3] << 8);
        pos += 4;
        if (len > size - pos) len = size - pos;
        uint8_t *ud = len ? malloc(len) : NULL;
        if (len) memcpy(ud, data + pos, len);
        pos += len;

        etw_event ev;
        memset(&ev, 0, sizeof ev);
        ev.form = ETW_FORM_EVENT_HEADER;
        ev.provider = PROVIDERS[pc & 3];
        ev.pid = 1000u + (qc & 3u);
        ev.tid = 1u + ((qc >> 2) & 1u);
        ev.id = (pc & 0x80) ? 0xFFFD : 0xFFFE;
        ev.task = 0xFFFE;
        ev.opcode = 0xFE;
        ev.version = 1;
        if (pc & 0x40) ev.flags |= ETW_EVENT_FLAG_CLASSIC_HEADER;
        ev.user_data = ud;
        ev.user_data_len = (uint32_t)len;
        ev.buffer_file_offset = record * 0x100;
        record++;
        int is_man = etw_es_is_manifest_event(&ev);
        FUZZ_ASSERT(is_man == !(pc & 0xC0));

        etw_es_envelope env;
        etw_status es = etw_es_envelope_read(&ev, &env);
        if (len >= 8) {
            FUZZ_ASSERT(es == ETW_OK && env.payload_length == len && env.magic == ud[3] &&
                        env.total_chunks == (uint16_t)(ud[4] | (ud[5] << 8)));
        } else {
            FUZZ_ASSERT(es == ETW_E_TRUNCATED);
        }

        uint64_t pa = sa.problems, pb = sb.problems;
        FUZZ_ASSERT(etw_es_offer(a, &ev) == ETW_OK);
        FUZZ_ASSERT(etw_es_offer(b, &ev) == ETW_OK);
        if (is_man) {
            manifest_events++;
            int key = (pc & 3) * 8 + (qc & 3) * 2 + ((qc >> 2) & 1);
            model_offer(m, key, ud, len, B_MAX_BYTES);
        } else {
            m->delivered = 0;
            FUZZ_ASSERT(sa.problems == pa && sb.problems == pb);
        }

        /* A: bounds */
        const etw_es_stats *st = etw_es_stats_get(a);
        FUZZ_ASSERT(st->pending <= A_MAX_PENDING);
        FUZZ_ASSERT(st->pending_bytes <= A_MAX_BYTES);
        FUZZ_ASSERT(st->peak_pending_bytes <= A_MAX_BYTES);
        FUZZ_ASSERT(cnt.live_bytes - base_bytes == st->pending_bytes);
        FUZZ_ASSERT(st->manifest_events == manifest_events);
        /* A delivers a subset of the model, at the same events */
        if (sa.delivered) {
            FUZZ_ASSERT(m->delivered && sa.len == m->len && memcmp(sa.xml, m->xml, m->len) == 0);
            FUZZ_ASSERT(etw_guid_equal(&sa.provider, &ev.provider) && sa.pid == ev.pid);
        }
        /* B equals the model */
        FUZZ_ASSERT(sb.delivered == m->delivered);
        if (sb.delivered) {
            FUZZ_ASSERT(sb.len == m->len && memcmp(sb.xml, m->xml, m->len) == 0);
            FUZZ_ASSERT(etw_guid_equal(&sb.provider, &ev.provider) && sb.pid == ev.pid);
        }
        FUZZ_ASSERT(sb.problems == m->problems);
        const etw_es_stats *sbs = etw_es_stats_get(b);
        FUZZ_ASSERT(sbs->manifests == m->manifests);
        FUZZ_ASSERT(sbs->evicted == 0);
        FUZZ_ASSERT(sbs->problems == sb.problems && st->problems == sa.problems);
        seen_clear(&sa);
        seen_clear(&sb);
        free(ud);
    }
    (void)etw_es_manifest_version(data, size);

    /* finish: B reports exactly the model's unfinished sequences */
    uint32_t live = 0;
    for (int i = 0; i < NKEYS; i++) live += m->k[i].state == M_LIVE;
    FUZZ_ASSERT(etw_es_stats_get(b)->pending == live);
    uint64_t pb = sb.problems;
    etw_es_finish(b);
    FUZZ_ASSERT(sb.problems == pb + live);
    etw_es_finish(a);
    FUZZ_ASSERT(etw_es_stats_get(a)->pending == 0 && etw_es_stats_get(a)->pending_bytes == 0);
    FUZZ_ASSERT(etw_es_stats_get(b)->pending == 0 && etw_es_stats_get(b)->pending_bytes == 0);
    FUZZ_ASSERT(cnt.live_bytes == base_bytes);
    /* a second finish reports nothing */
    uint64_t pa = sa.problems;
    etw_es_finish(a);
    FUZZ_ASSERT(sa.problems == pa);

    etw_es_free(a);
    etw_es_free(b);
    FUZZ_ASSERT(cnt.live_bytes == 0 && cnt.live_blocks == 0);
    for (int i = 0; i < NKEYS; i++) free(m->k[i].buf);
    free(m->xml);
    free(m);
    return 0;
}
