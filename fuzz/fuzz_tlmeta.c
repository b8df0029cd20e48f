/* fuzz_tlmeta.c - libFuzzer target for the TraceLogging metadata parser
 * (src/source/etw_tracelogging.c).
 *
 * Build: clang -g -O1 -fsanitize=fuzzer,address,undefined -Iinclude -Isrc \
 *            fuzz/fuzz_tlmeta.c src/source/etw_tracelogging.c \
 *            src/common/etw_common.c -o /tmp/ftl
 * Seeds: any EVENT_SCHEMA_TL blobs (ext item 11 of TraceLogging events).
 *
 * Checks, for every input (libFuzzer's buffer is exactly sized, so ASan
 * catches any read past it):
 *   - a status from the documented set, with a reason on failure and a
 *     zeroed draft;
 *   - on success: the tree rules of etw_schema.h hold (own checker), every
 *     string lies inside the first Size bytes and ends there with a NUL,
 *     the field count fits the Size, flags/types are ones the parser makes;
 *   - a scratch reused across inputs gives the same draft as a fresh one
 *     (the second input of each run is the same bytes with Size patched to
 *     a shorter value: that parse must not crash either). */
#include "source/etw_tracelogging.h"

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

static etw_tl_scratch g_reused;
static int g_init;

/* A string lies in [base, base+size) and its NUL does too. */
static int string_inside(const char *s, const uint8_t *base, size_t size) {
    const uint8_t *p = (const uint8_t *)s;
    if (!s || p < base || p >= base + size) return 0;
    return memchr(p, 0, (size_t)(base + size - p)) != NULL;
}

static void check_draft(const etw_schema *d, const uint8_t *data, size_t size) {
    FUZZ_ASSERT(d->source == ETW_SOURCE_TRACELOGGING);
    FUZZ_ASSERT(d->provider_name == NULL);
    FUZZ_ASSERT(d->event_id == 0 && d->keywords == 0 && d->version == 0);
    FUZZ_ASSERT(d->tags <= 0x0FFFFFFFu);
    FUZZ_ASSERT(string_inside(d->event_name, data, size));
    FUZZ_ASSERT(d->top_count <= d->prop_count);
    /* every field takes at least a NUL and an in-type byte */
    FUZZ_ASSERT((size_t)d->prop_count * 2 <= size);
    FUZZ_ASSERT(d->prop_count == 0 || d->props != NULL);
    if (d->prop_count == 0) return;
    unsigned char *owner = calloc(d->prop_count, 1);
    FUZZ_ASSERT(owner);
    for (uint32_t i = 0; i < d->prop_count; i++) {
        const etw_property *p = &d->props[i];
        FUZZ_ASSERT(string_inside(p->name, data, size));
        FUZZ_ASSERT(p->tags <= 0x0FFFFFFFu);
        FUZZ_ASSERT(((p->flags & ETW_PROP_HAS_TAGS) != 0) == (p->tags != 0));
        FUZZ_ASSERT((p->flags & ~(uint32_t)(ETW_PROP_STRUCT | ETW_PROP_COUNT_FIXED |
                                             ETW_PROP_COUNT_IN_DATA | ETW_PROP_CUSTOM_SIZED |
                                             ETW_PROP_HAS_TAGS)) == 0);
        /* at most one count kind */
        uint32_t kinds = p->flags & (ETW_PROP_COUNT_FIXED | ETW_PROP_COUNT_IN_DATA |
                                     ETW_PROP_CUSTOM_SIZED);
        FUZZ_ASSERT((kinds & (kinds - 1)) == 0);
        if (!(p->flags & ETW_PROP_COUNT_FIXED))
            FUZZ_ASSERT(p->count == ((p->flags & ETW_PROP_COUNT_IN_DATA) ? 0 : 1));
        FUZZ_ASSERT(p->length == 0 && p->map == NULL);
        if (p->flags & ETW_PROP_STRUCT) {
            FUZZ_ASSERT(!(p->flags & ETW_PROP_CUSTOM_SIZED));
            FUZZ_ASSERT(p->in_type == 0 && p->out_type == 0);
            FUZZ_ASSERT(p->struct_count >= 1 && p->struct_count <= 127);
            FUZZ_ASSERT(p->struct_first > i && p->struct_first >= d->top_count);
            FUZZ_ASSERT((uint32_t)p->struct_first + p->struct_count <= d->prop_count);
            for (uint32_t k = p->struct_first; k < (uint32_t)p->struct_first + p->struct_count;
                 k++) {
                FUZZ_ASSERT(!owner[k]);
                owner[k] = 1;
            }
        } else {
            FUZZ_ASSERT(p->struct_first == 0 && p->struct_count == 0);
            FUZZ_ASSERT(p->in_type <= 31 && p->in_type != 24 && p->in_type != 14);
            FUZZ_ASSERT(p->out_type <= 38 || p->out_type == ETW_OUTTYPE_NOPRINT);
        }
    }
    /* each non-top property belongs to exactly one struct, top ones to none */
    for (uint32_t i = 0; i < d->prop_count; i++)
        FUZZ_ASSERT((i < d->top_count) == (owner[i] == 0));
    free(owner);
}

static void same_draft(const etw_schema *a, const etw_schema *b) {
    FUZZ_ASSERT(a->event_name == b->event_name);
    FUZZ_ASSERT(a->tags == b->tags);
    FUZZ_ASSERT(a->prop_count == b->prop_count && a->top_count == b->top_count);
    for (uint32_t i = 0; i < a->prop_count; i++) {
        const etw_property *p = &a->props[i], *q = &b->props[i];
        FUZZ_ASSERT(p->name == q->name && p->in_type == q->in_type &&
                    p->out_type == q->out_type && p->flags == q->flags &&
                    p->struct_first == q->struct_first &&
                    p->struct_count == q->struct_count && p->count == q->count &&
                    p->tags == q->tags);
    }
}

static void run_one(const uint8_t *data, size_t size) {
    etw_tl_scratch fresh;
    etw_tl_scratch_init(&fresh, NULL);
    etw_schema d1, d2;
    const char *why1 = NULL, *why2 = NULL;
    etw_status s1 = etw_tl_parse(data, size, &fresh, &d1, &why1);
    etw_status s2 = etw_tl_parse(data, size, &g_reused, &d2, &why2);
    FUZZ_ASSERT(s1 == s2);
    FUZZ_ASSERT(s1 == ETW_OK || s1 == ETW_E_TRUNCATED || s1 == ETW_E_CORRUPT ||
                s1 == ETW_E_LIMIT);
    if (s1 != ETW_OK) {
        FUZZ_ASSERT(why1 != NULL && why2 != NULL);
        FUZZ_ASSERT(d1.event_name == NULL && d1.prop_count == 0 && d1.props == NULL);
    } else {
        size_t msize = (size_t)(data[0] | data[1] << 8);
        FUZZ_ASSERT(msize <= size && msize >= 4);
        check_draft(&d1, data, msize);
        same_draft(&d1, &d2);
    }
    etw_tl_scratch_free(&fresh);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (!g_init) {
        etw_tl_scratch_init(&g_reused, NULL);
        g_init = 1;
    }
    run_one(data, size);
    /* the same bytes claiming a shorter Size (a padded item) */
    if (size >= 4) {
        uint8_t *copy = malloc(size);
        FUZZ_ASSERT(copy);
        memcpy(copy, data, size);
        size_t cut = (size_t)(data[size - 1] % size);
        copy[0] = (uint8_t)(cut & 0xFF);
        copy[1] = (uint8_t)(cut >> 8);
        run_one(copy, size);
        free(copy);
    }
    return 0;
}
