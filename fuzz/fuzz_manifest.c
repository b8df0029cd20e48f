/* fuzz_manifest.c - libFuzzer target for the instrumentation manifest source
 * (src/source/etw_manifest*.c).
 *
 * Build: clang -g -O1 -fsanitize=fuzzer,address,undefined -Iinclude -Isrc \
 *            fuzz/fuzz_manifest.c src/source/etw_manifest*.c \
 *            src/schema/etw_cache.c src/common/etw_common.c -lexpat -lxxhash \
 *            -o /tmp/fman
 * Seeds: fuzz/corpus/manifest/ (small hand-written manifests, and *.emr:
 * some of them pre-parsed by tools/embed/etw_embed.c).
 *
 * An input that starts with "EMR1" is pre-parsed records
 * (etw_manifest_replay.h, as the built-in manifests are compiled in) and
 * loads through etw_manifest_load_replay; any other through expat.
 * For every input: load it as a manifest into a fresh set (diagnostics are
 * checked to be one NUL-terminated line naming the origin), resolve every
 * (provider, id, version) into a fresh cache for both pointer widths, check
 * each schema against the tree rules and the manifest set's own promises,
 * then load the same input again into the same set (every provider now
 * replaces itself, with the cache attached) and resolve everything again.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "schema/etw_cache.h"
#include "source/etw_manifest.h"
#include "source/etw_manifest_ext.h"

#define FUZZ_ASSERT(c)                                                                             \
    do {                                                                                           \
        if (!(c)) {                                                                                \
            fprintf(stderr, "%s:%d: assertion failed: %s\n", __FILE__, __LINE__, #c);             \
            abort();                                                                               \
        }                                                                                          \
    } while (0)

static void on_diag(void *ctx, const etw_diag *d) {
    (void)ctx;
    FUZZ_ASSERT(d->message != NULL);
    size_t n = strlen(d->message);
    FUZZ_ASSERT(n > 0 && n < 1024);
    FUZZ_ASSERT(strncmp(d->message, "fuzz.man:", 9) == 0);
}

typedef struct walk {
    etw_manifest_set *m;
    etw_cache *c;
    uint32_t seen;
} walk;

static void check_schema(const etw_schema *s, const etw_guid *g, uint16_t id, uint8_t v, uint8_t w) {
    FUZZ_ASSERT(etw_schema_validate(s, NULL) == ETW_OK);
    FUZZ_ASSERT(etw_guid_equal(&s->provider, g));
    FUZZ_ASSERT(s->event_id == id && s->version == v);
    FUZZ_ASSERT(s->pointer_size == w);
    FUZZ_ASSERT(s->source == ETW_SOURCE_MANIFEST);
    FUZZ_ASSERT(s->event_name && s->event_name[0]);
    for (uint32_t i = 0; i < s->prop_count; i++) {
        const etw_property *p = &s->props[i];
        FUZZ_ASSERT(p->name != NULL);
        if (p->map) {
            FUZZ_ASSERT(p->map->name != NULL);
            for (uint32_t k = 1; k < p->map->count; k++)
                FUZZ_ASSERT(p->map->entries[k - 1].value <= p->map->entries[k].value);
        }
    }
}

static int resolve_one(void *ctx, const etw_guid *g, uint16_t id, uint8_t v) {
    walk *w = ctx;
    w->seen++;
    for (int k = 0; k < 2; k++) {
        uint8_t width = k ? 8 : 4;
        const etw_schema *s = NULL;
        const char *why = NULL;
        etw_status st = etw_manifest_resolve(w->m, w->c, g, id, v, width, &s, &why);
        FUZZ_ASSERT(st == ETW_OK); /* every listed event resolves */
        check_schema(s, g, id, v, width);
        /* a second resolve is a cache hit */
        const etw_schema *again = NULL;
        FUZZ_ASSERT(etw_manifest_resolve(w->m, w->c, g, id, v, width, &again, NULL) == ETW_OK);
        FUZZ_ASSERT(again == s);
    }
    return w->seen > 4096; /* bound the work per input */
}

static etw_status load(etw_manifest_set *m, const uint8_t *data, size_t size, uint32_t *np) {
    if (size >= 4 && memcmp(data, "EMR1", 4) == 0) return etw_manifest_load_replay(m, data, size, "fuzz.man", np);
    return etw_manifest_load_xml(m, (const char *)data, size, "fuzz.man", np);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    etw_manifest_options o;
    memset(&o, 0, sizeof o);
    o.on_diag = on_diag;
    etw_manifest_set *m = NULL;
    if (etw_manifest_set_new(&m, &o) != ETW_OK) return 0;
    uint32_t np = 0;
    etw_status st = load(m, data, size, &np);
    FUZZ_ASSERT(st == ETW_OK || st == ETW_E_CORRUPT || st == ETW_E_LIMIT || st == ETW_E_NOMEM);
    if (st != ETW_OK) {
        FUZZ_ASSERT(np == 0);
        FUZZ_ASSERT(etw_manifest_provider_count(m) == 0);
        FUZZ_ASSERT(etw_manifest_event_count(m) == 0);
    } else {
        FUZZ_ASSERT(etw_manifest_provider_count(m) <= np);
    }
    uint32_t providers = etw_manifest_provider_count(m);
    uint32_t events = etw_manifest_event_count(m);

    walk w = {m, NULL, 0};
    if (etw_cache_new(&w.c, NULL) == ETW_OK) {
        etw_manifest_foreach_event(m, resolve_one, &w);
        FUZZ_ASSERT(w.seen == events || w.seen > 4096);
        /* again into the same set, cache attached: every provider replaces itself */
        etw_manifest_set_cache(m, w.c);
        st = load(m, data, size, NULL);
        FUZZ_ASSERT(etw_manifest_provider_count(m) == providers);
        FUZZ_ASSERT(etw_manifest_event_count(m) == events);
        w.seen = 0;
        etw_manifest_foreach_event(m, resolve_one, &w);
        etw_cache_free(w.c);
    }
    etw_manifest_set_free(m);
    return 0;
}
