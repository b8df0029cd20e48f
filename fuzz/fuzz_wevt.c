/* fuzz_wevt.c - libFuzzer target for the WEVT_TEMPLATE reader
 * (src/wevt/etw_wevt.c) and the manifest compiler behind it.
 * Seeds: fuzz/corpus/wevt/ (CRIM blobs mc.exe compiled).
 *
 * The input is a CRIM blob, loaded twice: with no message table, and with
 * the input itself opened as a message table (so message ids resolve to
 * whatever the bytes hold). Every event the set lists must resolve, for
 * both pointer widths, into a schema that passes etw_schema_validate;
 * diagnostics are one line naming the origin.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "schema/etw_cache.h"
#include "source/etw_manifest.h"
#include "source/etw_manifest_ext.h"
#include "wevt/etw_msgtable.h"
#include "wevt/etw_wevt.h"

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
    FUZZ_ASSERT(strncmp(d->message, "fuzz.bin:", 9) == 0);
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
        uint8_t width = k ? 8 : 4;
        const etw_schema *s = NULL;
        FUZZ_ASSERT(etw_manifest_resolve(w->m, w->c, g, id, v, width, &s, NULL) == ETW_OK);
        FUZZ_ASSERT(etw_schema_validate(s, NULL) == ETW_OK);
        FUZZ_ASSERT(s->event_id == id && s->version == v && s->event_name);
        for (uint32_t i = 0; i < s->prop_count; i++) FUZZ_ASSERT(s->props[i].name != NULL);
    }
    return w->seen > 4096;
}

static void run(const uint8_t *data, size_t size, const etw_msgtable *mt) {
    etw_manifest_options o;
    memset(&o, 0, sizeof o);
    o.on_diag = on_diag;
    etw_manifest_set *m = NULL;
    if (etw_manifest_set_new(&m, &o) != ETW_OK) return;
    uint32_t n = 0;
    etw_wevt_load_blob(m, data, size, mt, "fuzz.bin", &n);
    walk w = {m, NULL, 0};
    if (etw_cache_new(&w.c, NULL) == ETW_OK) {
        etw_manifest_foreach_event(m, resolve_one, &w);
        etw_cache_free(w.c);
    }
    etw_manifest_set_free(m);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    run(data, size, NULL);
    etw_msgtable mt;
    const char *why = NULL;
    if (etw_msgtable_open(&mt, data, size, &why) == ETW_OK) run(data, size, &mt);
    return 0;
}
