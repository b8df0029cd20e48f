/* fuzz_manifest_path.c - libFuzzer target for the whole path a manifest
 * named with -m takes (issue 23.1), under a small memory limit.
 *
 * The input is a repetition byte and a document: when the byte's high bit
 * is set, the document is prefix NUL unit NUL suffix and the unit is
 * repeated 2^(byte & 15) times (up to DOC_MAX bytes), so that a few bytes
 * ("<x>", "<data/>", a long attribute) become the large hostile manifests
 * the limits are about: 10^5 nested elements, a million template items.
 * The document is written to a file, then:
 *
 *   1. a manifest catalog scans it and (up to DECODER_MAX bytes, for the
 *      time per input) a decoder is given the catalog, which loads it as a
 *      file named directly (as etwdump -m FILE does: size bound, PE / WEVT
 *      / XML sniffing, the XML walk, compilation);
 *   2. a manifest set loads the same file by path with a counting
 *      allocator, and every event of it (up to 4096) is resolved into a
 *      cache for both pointer widths.
 *
 * Checks: statuses are the documented ones, a failed load leaves nothing,
 * the set's allocations peak within twice ETW_MANIFEST_MAX_MEMORY plus the
 * file, and every allocation is given back. Memory the library does not
 * allocate itself (expat's) is bounded by the process limit:
 * scripts/run-fuzz.sh runs this target with -rss_limit_mb=RSS_LIMIT (see
 * rss_limit_for there), so an expat blow-up fails it: without the nesting
 * limit the seed nested_x22 (700,000 nested elements) takes 201 MB.
 */
#define _POSIX_C_SOURCE 200809L

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "etwdecode/etw_decoder.h"
#include "etwdecode/etw_manifest_catalog.h"
#include "schema/etw_cache.h"
#include "source/etw_manifest.h"
#include "source/etw_manifest_ext.h"

#define DOC_MAX ((size_t)2 << 20)
#define DECODER_MAX ((size_t)256 << 10)

#define FUZZ_ASSERT(c)                                                                             \
    do {                                                                                           \
        if (!(c)) {                                                                                \
            fprintf(stderr, "%s:%d: assertion failed: %s\n", __FILE__, __LINE__, #c);             \
            abort();                                                                               \
        }                                                                                          \
    } while (0)

/* ASan keeps freed memory in a quarantine (256 MB by default), which would
 * count against the small RSS limit without being the library's. */
const char *__asan_default_options(void);
const char *__asan_default_options(void) { return "quarantine_size_mb=8:malloc_context_size=8"; }

typedef struct counting {
    size_t cur, peak;
} counting;

static void *c_alloc(void *ctx, size_t n) {
    counting *c = ctx;
    unsigned char *p = malloc(n + sizeof(max_align_t));
    if (!p) return NULL;
    memcpy(p, &n, sizeof n);
    c->cur += n;
    if (c->cur > c->peak) c->peak = c->cur;
    return p + sizeof(max_align_t);
}

static void c_free(void *ctx, void *q) {
    counting *c = ctx;
    unsigned char *p = (unsigned char *)q - sizeof(max_align_t);
    size_t n;
    memcpy(&n, p, sizeof n);
    c->cur -= n;
    free(p);
}

static void on_diag(void *ctx, const etw_diag *d) {
    (void)ctx;
    FUZZ_ASSERT(d->message != NULL && d->message[0]);
}

typedef struct walk {
    etw_manifest_set *m;
    etw_cache *c;
    uint32_t seen;
} walk;

static int resolve_one(void *ctx, const etw_guid *g, uint16_t id, uint8_t v) {
    walk *w = ctx;
    w->seen++;
    for (int k = 0; k < 2; k++) {
        const etw_schema *s = NULL;
        FUZZ_ASSERT(etw_manifest_resolve(w->m, w->c, g, id, v, k ? 8 : 4, &s, NULL) == ETW_OK);
        FUZZ_ASSERT(etw_schema_validate(s, NULL) == ETW_OK);
        FUZZ_ASSERT(s->event_id == id && s->version == v);
    }
    return w->seen >= 4096;
}

static int documented(etw_status st) {
    return st == ETW_OK || st == ETW_E_CORRUPT || st == ETW_E_LIMIT || st == ETW_E_NOT_FOUND ||
           st == ETW_E_UNSUPPORTED || st == ETW_E_TRUNCATED;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 2) return 0;
    /* the first byte's high bit set: the rest is prefix NUL unit NUL suffix
     * (without two NULs: all unit), and the document the prefix, the unit
     * 2^(low 4 bits) times, the suffix; clear: the rest as it is (most
     * mutations stay small and fast) */
    const uint8_t *pre = data + 1, *unit = pre, *suf = pre + size - 1;
    size_t npre = 0, nunit = size - 1, nsuf = 0, copies = 1;
    if (data[0] & 0x80) {
        copies = (size_t)1 << (data[0] & 15);
        const uint8_t *z1 = memchr(pre, 0, size - 1);
        const uint8_t *z2 = z1 ? memchr(z1 + 1, 0, (size_t)(data + size - (z1 + 1))) : NULL;
        if (z2) {
            npre = (size_t)(z1 - pre);
            unit = z1 + 1;
            nunit = (size_t)(z2 - unit);
            suf = z2 + 1;
            nsuf = (size_t)(data + size - suf);
        }
    }
    char path[] = "/tmp/fuzz_manifest_path_XXXXXX";
    int fd = mkstemp(path);
    if (fd < 0) return 0;
    FILE *f = fdopen(fd, "wb");
    if (!f) {
        close(fd);
        unlink(path);
        return 0;
    }
    size_t len = fwrite(pre, 1, npre, f);
    for (size_t i = 0; i < copies && nunit && len + nunit <= DOC_MAX; i++) len += fwrite(unit, 1, nunit, f);
    len += fwrite(suf, 1, nsuf, f);
    fclose(f);

    /* 1. as etwdump -m FILE: the catalog, then the decoder loads it */
    etw_manifest_catalog_options co;
    memset(&co, 0, sizeof co);
    co.on_diag = on_diag;
    etw_manifest_catalog *cat = NULL;
    if (etw_manifest_catalog_new(&cat, &co) == ETW_OK) {
        etw_status st = etw_manifest_catalog_add_path(cat, path, NULL);
        FUZZ_ASSERT(st == ETW_OK || st == ETW_E_NOMEM);
        etw_decoder_options dopt;
        memset(&dopt, 0, sizeof dopt);
        dopt.on_diag = on_diag;
        dopt.no_default_manifests = 1;
        etw_decoder *dec = NULL;
        /* a large document is loaded once, by 2. (time per input) */
        if (st == ETW_OK && len <= DECODER_MAX && etw_decoder_new(&dec, &dopt) == ETW_OK) {
            st = etw_decoder_add_manifest_catalog(dec, cat);
            FUZZ_ASSERT(documented(st) || st == ETW_E_NOMEM);
            etw_decoder_free(dec);
        }
        etw_manifest_catalog_free(cat);
    }

    /* 2. the set by path, counted, and every event resolved */
    counting cnt = {0, 0};
    etw_allocator al = {c_alloc, c_free, &cnt};
    etw_manifest_options o;
    memset(&o, 0, sizeof o);
    o.allocator = &al;
    o.on_diag = on_diag;
    etw_manifest_set *m = NULL;
    if (etw_manifest_set_new(&m, &o) == ETW_OK) {
        uint32_t np = 0;
        etw_status st = etw_manifest_load_path(m, path, &np);
        FUZZ_ASSERT(documented(st) || st == ETW_E_NOMEM);
        if (st != ETW_OK) FUZZ_ASSERT(np == 0 && etw_manifest_provider_count(m) == 0);
        FUZZ_ASSERT(cnt.peak <= 2 * ETW_MANIFEST_MAX_MEMORY + len + ((size_t)1 << 20));
        walk w = {m, NULL, 0};
        if (etw_cache_new(&w.c, NULL) == ETW_OK) {
            etw_manifest_set_cache(m, w.c);
            etw_manifest_foreach_event(m, resolve_one, &w);
            etw_cache_free(w.c);
        }
        etw_manifest_set_free(m);
        FUZZ_ASSERT(cnt.cur == 0);
    }
    unlink(path);
    return 0;
}
