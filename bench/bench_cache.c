/* bench_cache.c - schema cache lookup cost (a program, not a test).
 *
 * For TraceLogging keys of 64 B, 256 B, 1 KiB and 4 KiB (100 distinct,
 * realistic EVENT_SCHEMA_TL metadata blobs per size, looked up round-robin),
 * it measures one cache hit:
 *   ours:    XXH3-64 of the full key (etw_cache_hash) + probe + memcmp;
 *   FNV-1a:  a 64-bit FNV-1a of the same key computed byte by byte, as
 *            krabsetw's opt-in full-schema hashing does, with the same probe +
 *            memcmp (the FNV hashes are fed to a second etw_cache, whose API
 *            takes the hash from the caller, so only the hash differs);
 * and a (GUID, id, version) descriptor hit (19-byte key), the same with the
 * key built just before, and an unknown descriptor answered by the negative
 * cache. "XXH3 only" and "FNV only" are the hash alone.
 *
 * Build: gcc -O2 -std=c11 -Iinclude -Isrc bench/bench_cache.c \
 *            src/schema/etw_cache.c src/common/etw_common.c -lxxhash
 * Each figure is the best of 11 runs of a timed loop of at least 30 ms of
 * process CPU time.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "schema/etw_cache.h"

#define NKEYS 100

/* ---- the krabsetw-style variant ------------------------------------------ */

#if defined(__GNUC__)
#define BENCH_NOINLINE __attribute__((noinline))
#else
#define BENCH_NOINLINE
#endif

static BENCH_NOINLINE uint64_t fnv1a64(const void *data, size_t len) {
    const uint8_t *p = data;
    uint64_t h = UINT64_C(0xcbf29ce484222325);
    for (size_t i = 0; i < len; i++) {
        h ^= p[i];
        h *= UINT64_C(0x100000001b3);
    }
    return h;
}

/* ---- realistic TraceLogging metadata -------------------------------------- */

/* EVENT_SCHEMA_TL event metadata: u16 size, u8 tag byte, event name NUL,
 * then per field: name NUL, u8 in-type (| 0x80 when an out-type follows),
 * [u8 out-type]. The last field name is padded so the blob has exactly len
 * bytes. */
static void make_tl(uint8_t *out, size_t len, unsigned n) {
    static const struct {
        uint8_t in, out;
        const char *stem;
    } kinds[] = {
        {8, 0, "ProcessId"},        {1, 0, "FileName"},       {15, 0, "ActivityId"},
        {9, 0, "Duration"},         {2, 35, "Message"},       {7, 0, "Status"},
        {13, 0, "Succeeded"},       {10, 0, "Timestamp"},     {8, 20, "ThreadId"},
        {20, 0, "HResult"},         {1, 0, "Component"},      {6, 0, "Port"},
    };
    size_t pos = 0;
    char name[96];
    out[pos++] = (uint8_t)len;
    out[pos++] = (uint8_t)(len >> 8);
    out[pos++] = 0; /* no event tags */
    int w = snprintf(name, sizeof name, "Microsoft.Windows.Shell.Component%02u.Event%u", n % 17, n);
    memcpy(out + pos, name, (size_t)w + 1);
    pos += (size_t)w + 1;
    for (unsigned f = 0;; f++) {
        unsigned k = (n + f) % (sizeof kinds / sizeof kinds[0]);
        w = snprintf(name, sizeof name, "%s%u", kinds[k].stem, f);
        size_t need = (size_t)w + 1 + 1 + (kinds[k].out ? 1 : 0);
        size_t left = len - pos;
        if (need + 24 > left) { /* the last field takes the rest */
            size_t tail = kinds[k].out ? 3 : 2; /* NUL, in-type, [out-type] */
            size_t nl = left - tail;
            for (size_t i = 0; i < nl; i++)
                out[pos + i] = i < (size_t)w ? (uint8_t)name[i] : (uint8_t)('a' + (i + n) % 26);
            pos += nl;
            out[pos++] = 0;
            out[pos++] = (uint8_t)(kinds[k].in | (kinds[k].out ? 0x80 : 0));
            if (kinds[k].out) out[pos++] = kinds[k].out;
            break;
        }
        memcpy(out + pos, name, (size_t)w + 1);
        pos += (size_t)w + 1;
        out[pos++] = (uint8_t)(kinds[k].in | (kinds[k].out ? 0x80 : 0));
        if (kinds[k].out) out[pos++] = kinds[k].out;
    }
}

/* ---- timing ---------------------------------------------------------------- */

/* Process CPU time: on a shared, loaded machine, time spent preempted is
 * not counted. */
static double now_ns(void) { return (double)clock() * (1e9 / CLOCKS_PER_SEC); }

static volatile uint64_t sink;

typedef struct keyset {
    const uint8_t *k[NKEYS];
    size_t len;
} keyset;

enum { MODE_OURS, MODE_FNV, MODE_XXH_ONLY, MODE_FNV_ONLY, MODE_DESC_BUILD, MODE_NEGATIVE };

static uint64_t run(const etw_cache *c, etw_schema_source src, const keyset *ks, int mode,
                    long iters) {
    uint64_t acc = 0;
    size_t len = ks->len;
    unsigned i = 0;
    for (long it = 0; it < iters; it++) {
        const uint8_t *k = ks->k[i];
        if (++i == NKEYS) i = 0;
        switch (mode) {
        case MODE_OURS: {
            const etw_schema *s = etw_cache_find(c, src, 8, k, len, etw_cache_hash(k, len));
            acc += s->id;
            break;
        }
        case MODE_FNV: {
            const etw_schema *s = etw_cache_find(c, src, 8, k, len, fnv1a64(k, len));
            acc += s->id;
            break;
        }
        case MODE_NEGATIVE: { /* no manifest: a map miss, then the negative cache */
            uint64_t h = etw_cache_hash(k, len);
            if (!etw_cache_find(c, src, 8, k, len, h)) acc += (uint64_t)etw_cache_miss_known(c, k, len, h);
            break;
        }
        case MODE_XXH_ONLY: acc += etw_cache_hash(k, len); break;
        case MODE_FNV_ONLY: acc += fnv1a64(k, len); break;
        case MODE_DESC_BUILD: { /* from the event header's fields, as a decoder would */
            etw_guid g;
            uint8_t key[ETW_DESCRIPTOR_KEY_SIZE];
            memcpy(&g, k, sizeof g);
            etw_key_descriptor(key, &g, (uint16_t)(k[16] | (k[17] << 8)), k[18]);
            const etw_schema *s = etw_cache_find(c, src, 8, key, sizeof key,
                                                 etw_cache_hash(key, sizeof key));
            acc += s->id;
            break;
        }
        }
    }
    return acc;
}

/* Best ns per lookup over 11 runs of at least 30 ms each. */
static double measure(const etw_cache *c, etw_schema_source src, const keyset *ks, int mode) {
    long iters = 1000;
    for (;;) { /* calibrate */
        double t0 = now_ns();
        sink += run(c, src, ks, mode, iters);
        double dt = now_ns() - t0;
        if (dt >= 30e6) break;
        iters = dt < 1e6 ? iters * 10 : (long)((double)iters * 36e6 / dt);
    }
    double best = 1e300;
    for (int r = 0; r < 11; r++) {
        double t0 = now_ns();
        sink += run(c, src, ks, mode, iters);
        double ns = (now_ns() - t0) / (double)iters;
        if (ns < best) best = ns;
    }
    return best;
}

static void die(const char *what, etw_status st) {
    fprintf(stderr, "bench_cache: %s: %s\n", what, etw_strerror(st));
    exit(1);
}

int main(void) {
    static const size_t sizes[] = {64, 256, 1024, 4096};
    enum { NSIZES = sizeof sizes / sizeof sizes[0] };
    etw_cache *ours = NULL, *fnv = NULL;
    etw_status st;
    if ((st = etw_cache_new(&ours, NULL)) != ETW_OK) die("etw_cache_new", st);
    if ((st = etw_cache_new(&fnv, NULL)) != ETW_OK) die("etw_cache_new", st);

    etw_property props[2];
    memset(props, 0, sizeof props);
    props[0].name = "ProcessId";
    props[0].in_type = ETW_INTYPE_UINT32;
    props[1].name = "FileName";
    props[1].in_type = ETW_INTYPE_UNICODESTRING;
    etw_schema d;
    memset(&d, 0, sizeof d);
    d.event_name = "Event";
    d.props = props;
    d.prop_count = 2;
    d.top_count = 2;

    keyset ks[NSIZES];
    uint8_t *store = malloc(NKEYS * (64 + 256 + 1024 + 4096));
    if (!store) return 1;
    uint8_t *at = store;
    for (size_t s = 0; s < NSIZES; s++) {
        ks[s].len = sizes[s];
        for (unsigned i = 0; i < NKEYS; i++) {
            make_tl(at, sizes[s], (unsigned)(s * 1000 + i));
            ks[s].k[i] = at;
            const uint8_t *k = at;
            at += sizes[s];
            if ((st = etw_cache_insert(ours, ETW_SOURCE_TRACELOGGING, 8, k, sizes[s],
                                       etw_cache_hash(k, sizes[s]), &d, NULL, NULL)) != ETW_OK)
                die("insert", st);
            if ((st = etw_cache_insert(fnv, ETW_SOURCE_TRACELOGGING, 8, k, sizes[s],
                                       fnv1a64(k, sizes[s]), &d, NULL, NULL)) != ETW_OK)
                die("insert", st);
        }
    }
    /* descriptor keys: 100 manifest events of 10 providers */
    static uint8_t dkeys[NKEYS][ETW_DESCRIPTOR_KEY_SIZE];
    keyset dks;
    dks.len = ETW_DESCRIPTOR_KEY_SIZE;
    for (unsigned i = 0; i < NKEYS; i++) {
        etw_guid g = {0x22fb2cd6u + i / 10, 0x0e7b, 0x422b, {0xa0, 0xc7, 0x2f, 0xad, 0x1f, 0xd0, 0xe7, (uint8_t)(i / 10)}};
        etw_key_descriptor(dkeys[i], &g, (uint16_t)(1 + i * 3), (uint8_t)(i % 3));
        dks.k[i] = dkeys[i];
        if ((st = etw_cache_insert(ours, ETW_SOURCE_MANIFEST, 8, dkeys[i], sizeof dkeys[i],
                                   etw_cache_hash(dkeys[i], sizeof dkeys[i]), &d, NULL, NULL)) !=
            ETW_OK)
            die("insert", st);
        if ((st = etw_cache_insert(fnv, ETW_SOURCE_MANIFEST, 8, dkeys[i], sizeof dkeys[i],
                                   fnv1a64(dkeys[i], sizeof dkeys[i]), &d, NULL, NULL)) != ETW_OK)
            die("insert", st);
    }
    /* descriptors no source knows, remembered by the negative cache */
    static uint8_t nkeys[NKEYS][ETW_DESCRIPTOR_KEY_SIZE];
    keyset nks;
    nks.len = ETW_DESCRIPTOR_KEY_SIZE;
    for (unsigned i = 0; i < NKEYS; i++) {
        etw_guid g = {0x5eadbeefu, (uint16_t)i, 7, {1, 2, 3, 4, 5, 6, 7, 8}};
        etw_key_descriptor(nkeys[i], &g, (uint16_t)i, 0);
        nks.k[i] = nkeys[i];
        etw_cache_miss_note(ours, nkeys[i], sizeof nkeys[i], etw_cache_hash(nkeys[i], sizeof nkeys[i]));
    }
    /* descriptor built from header fields: GUID as etw_guid then id, version */
    static uint8_t hdr[NKEYS][sizeof(etw_guid) + 3];
    keyset hks;
    hks.len = sizeof hdr[0];
    for (unsigned i = 0; i < NKEYS; i++) {
        etw_guid g = {0x22fb2cd6u + i / 10, 0x0e7b, 0x422b, {0xa0, 0xc7, 0x2f, 0xad, 0x1f, 0xd0, 0xe7, (uint8_t)(i / 10)}};
        uint16_t id = (uint16_t)(1 + i * 3);
        memcpy(hdr[i], &g, sizeof g);
        hdr[i][16] = (uint8_t)id;
        hdr[i][17] = (uint8_t)(id >> 8);
        hdr[i][18] = (uint8_t)(i % 3);
        hks.k[i] = hdr[i];
    }

    printf("etwdecode schema cache lookup, ns per hit (best of 11, CPU time), %d distinct keys per row\n\n",
           NKEYS);
    printf("%-22s %10s %12s %8s %12s %12s\n", "key", "ours ns", "FNV-1a ns", "ratio",
           "XXH3 only", "FNV only");
    for (size_t s = 0; s < NSIZES; s++) {
        double o = measure(ours, ETW_SOURCE_TRACELOGGING, &ks[s], MODE_OURS);
        double f = measure(fnv, ETW_SOURCE_TRACELOGGING, &ks[s], MODE_FNV);
        double xo = measure(ours, ETW_SOURCE_TRACELOGGING, &ks[s], MODE_XXH_ONLY);
        double fo = measure(ours, ETW_SOURCE_TRACELOGGING, &ks[s], MODE_FNV_ONLY);
        char label[32];
        snprintf(label, sizeof label, "TraceLogging %zu B", sizes[s]);
        printf("%-22s %10.1f %12.1f %7.1fx %12.1f %12.1f\n", label, o, f, f / o, xo, fo);
    }
    {
        double o = measure(ours, ETW_SOURCE_MANIFEST, &dks, MODE_OURS);
        double f = measure(fnv, ETW_SOURCE_MANIFEST, &dks, MODE_FNV);
        double xo = measure(ours, ETW_SOURCE_MANIFEST, &dks, MODE_XXH_ONLY);
        double fo = measure(ours, ETW_SOURCE_MANIFEST, &dks, MODE_FNV_ONLY);
        printf("%-22s %10.1f %12.1f %7.1fx %12.1f %12.1f\n", "descriptor 19 B", o, f, f / o, xo,
               fo);
        double b = measure(ours, ETW_SOURCE_MANIFEST, &hks, MODE_DESC_BUILD);
        double ng = measure(ours, ETW_SOURCE_MANIFEST, &nks, MODE_NEGATIVE);
        printf("\n%-22s %10.1f   etw_key_descriptor() just before the hash: the hash and\n"
               "%-22s %10s   compare reload the fresh stores (store forwarding stalls);\n"
               "%-22s %10s   \"descriptor 19 B\" hashes bytes already in memory, such as\n"
               "%-22s %10s   the record's EVENT_HEADER bytes 0x18..0x2A, which are this key\n",
               "descriptor + key build", b, "", "", "", "", "", "");
        printf("%-22s %10.1f   map miss + negative-cache hit (provider with no manifest)\n",
               "descriptor, unknown", ng);
    }
    etw_cache_free(ours);
    etw_cache_free(fnv);
    free(store);
    return sink == 42 ? 2 : 0;
}
