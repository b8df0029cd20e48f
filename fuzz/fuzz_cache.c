/* fuzz_cache.c - libFuzzer target for schema validation and insertion
 * (src/schema/etw_cache.c).
 *
 * Build: clang -g -O1 -fsanitize=fuzzer,address,undefined -Iinclude -Isrc \
 *            fuzz/fuzz_cache.c src/schema/etw_cache.c src/common/etw_common.c \
 *            -lxxhash -o /tmp/fc
 *
 * Each input builds a draft schema of up to 48 properties (flags, struct
 * ranges, count/length references, in-types, NULL names, shared maps with
 * NULL or unsorted entries) and inserts it under a key taken from the input.
 * Checks: etw_cache_insert accepts exactly the drafts an independent,
 * recursive reference validator accepts; a rejected draft changes nothing;
 * an accepted one is found again under its key and id, is a faithful deep
 * copy (strings, shared maps shared, value maps sorted), and a walk of its
 * tree visits every reachable property once. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "schema/etw_cache.h"
#include "schema/etw_names.h"

/* The cache keeps a name cut to ETW_NAME_MAX, with "_N" appended when an
 * earlier sibling has it already (etw_names.h). */
static int name_kept(const char *copy, const char *orig) {
    size_t base = etw_name_cut_len(orig, ETW_NAME_MAX);
    if (strncmp(copy, orig, base) != 0) return 0;
    if (copy[base] == 0) return 1;
    if (copy[base] != '_' || copy[base + 1] < '1' || copy[base + 1] > '9') return 0;
    for (const char *c = copy + base + 1; *c; c++)
        if (*c < '0' || *c > '9') return 0;
    return 1;
}

#define FUZZ_ASSERT(c)                                                         \
    do {                                                                       \
        if (!(c)) {                                                            \
            fprintf(stderr, "%s:%d: assertion failed: %s\n", __FILE__,         \
                    __LINE__, #c);                                             \
            abort();                                                           \
        }                                                                      \
    } while (0)

#define MAXP 48

typedef struct src {
    const uint8_t *p;
    size_t n, pos;
} src;

static uint8_t u8(src *s) { return s->pos < s->n ? s->p[s->pos++] : 0; }

/* ---- the reference validator: written from etw_schema.h, recursive ------ */

static int ref_int(const etw_property *p) {
    uint16_t t = p->in_type;
    int integer = (t >= 3 && t <= 10) || t == 20 || t == 21 || t == 16 || t == 308;
    return integer && !(p->flags & (ETW_PROP_STRUCT | ETW_PROP_COUNT_REF | ETW_PROP_COUNT_FIXED |
                                    ETW_PROP_COUNT_IN_DATA));
}

static int ref_visit(const etw_schema *d, uint32_t i, int *visits) {
    if (++visits[i] > 1) return 0;
    const etw_property *p = &d->props[i];
    if (p->flags & ETW_PROP_STRUCT)
        for (uint32_t j = p->struct_first; j < (uint32_t)p->struct_first + p->struct_count; j++)
            if (!ref_visit(d, j, visits)) return 0;
    return 1;
}

static int ref_valid(const etw_schema *d) {
    if (!d->event_name || d->top_count > d->prop_count) return 0;
    if (d->prop_count && !d->props) return 0;
    for (uint32_t i = 0; i < d->prop_count; i++) {
        const etw_property *p = &d->props[i];
        if (!p->name) return 0;
        if (p->flags & ETW_PROP_STRUCT) {
            if (p->struct_first <= i) return 0;
            if ((uint32_t)p->struct_first + p->struct_count > d->prop_count) return 0;
        }
        if ((p->flags & ETW_PROP_COUNT_REF) && (p->count >= i || !ref_int(&d->props[p->count])))
            return 0;
        if ((p->flags & ETW_PROP_LENGTH_REF) &&
            (p->length >= i || !ref_int(&d->props[p->length])))
            return 0;
        if (p->map) {
            const etw_map *m = p->map;
            if (m->flags != ETW_MAP_VALUEMAP && m->flags != ETW_MAP_BITMAP) return 0;
            if (m->count && !m->entries) return 0;
            for (uint32_t e = 0; e < m->count; e++)
                if (!m->entries[e].name) return 0;
        }
    }
    int visits[MAXP] = {0};
    for (uint32_t i = 0; i < d->top_count; i++)
        if (!ref_visit(d, i, visits)) return 0;
    return 1;
}

/* ---- draft construction ------------------------------------------------- */

static const char *const names[] = {"a", "bb", "", "count", "Length", "x.y", "\xc3\xa9t\xc3\xa9"};
static const uint16_t intypes[] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 13, 14, 15, 16, 20, 21, 22, 25, 300, 308};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    src s = {data, size, 0};
    static etw_cache *c; /* reused across inputs, so the maps grow and replace */
    if (!c && etw_cache_new(&c, NULL) != ETW_OK) abort();
    if (etw_cache_count(c) > 20000) {
        etw_cache_free(c);
        c = NULL;
        if (etw_cache_new(&c, NULL) != ETW_OK) abort();
    }

    /* maps: a small pool that properties share */
    etw_map_entry ents[4][6];
    etw_map maps[4];
    for (int m = 0; m < 4; m++) {
        uint8_t b = u8(&s);
        maps[m].name = (b & 1) ? NULL : names[b % 7];
        maps[m].flags = (b >> 1) & 3;
        maps[m].count = (b >> 3) % 7;
        maps[m].entries = (b & 0x80) && maps[m].count ? NULL : ents[m];
        for (int e = 0; e < 6; e++) {
            uint8_t v = u8(&s);
            ents[m][e].value = v & 7;
            ents[m][e].name = v == 0xff ? NULL : names[v % 7];
        }
    }

    etw_property props[MAXP];
    uint8_t h = u8(&s);
    uint32_t n = u8(&s) % (MAXP + 1);
    etw_schema d;
    memset(&d, 0, sizeof d);
    d.prop_count = (uint16_t)n;
    d.top_count = (uint16_t)(u8(&s) % (n + 2));
    d.props = (h & 1) && n ? NULL : props;
    d.event_name = (h & 2) ? NULL : "Event";
    d.provider_name = (h & 4) ? "Provider" : NULL;
    d.message = (h & 8) ? "%1 and %2" : NULL;
    d.event_id = (uint16_t)(h * 257u);
    for (uint32_t i = 0; i < n; i++) {
        etw_property *p = &props[i];
        memset(p, 0, sizeof *p);
        uint8_t f = u8(&s), a = u8(&s), b = u8(&s), t = u8(&s);
        p->name = (f & 0x80) && (t & 1) ? NULL : names[f % 7];
        p->in_type = intypes[t % (sizeof intypes / sizeof intypes[0])];
        p->flags = f & 0x3f;
        p->struct_first = (uint16_t)(a % (n + 3));
        p->struct_count = (uint16_t)(b % 5);
        p->count = (uint16_t)(a % (n + 1));
        p->length = (uint16_t)(b % (n + 1));
        p->map = (t & 0xc0) == 0xc0 ? &maps[(t >> 1) & 3] : NULL;
    }

    /* key: the rest of the input; hash: XXH3 or, now and then, a constant */
    uint8_t kw = u8(&s);
    const uint8_t *key = s.p + s.pos;
    size_t len = s.n - s.pos;
    uint64_t hash = (kw & 0x10) ? (uint64_t)(kw & 3) : etw_cache_hash(key, len);
    etw_schema_source source = (etw_schema_source)(1 + kw % ETW_SOURCE_BUILTIN);
    uint8_t width = (kw & 0x20) ? 4 : 8;

    int expect = ref_valid(&d);
    uint32_t before = etw_cache_count(c);
    const etw_schema *prev = etw_cache_find(c, source, width, key, len, hash);
    uint32_t prev_id = prev ? prev->id : 0; /* a replaced TraceLogging schema may be freed by the insert */
    const etw_schema *out = NULL;
    const char *why = NULL;
    etw_status st = etw_cache_insert(c, source, width, key, len, hash, &d, &out, &why);
    if (!expect) {
        FUZZ_ASSERT(st == ETW_E_CORRUPT && why && out == NULL);
        FUZZ_ASSERT(etw_cache_count(c) == before);
        FUZZ_ASSERT(etw_cache_find(c, source, width, key, len, hash) == prev);
        return 0;
    }
    FUZZ_ASSERT(st == ETW_OK && out);
    FUZZ_ASSERT(etw_cache_count(c) == before + 1 && out->id == before);
    FUZZ_ASSERT(etw_cache_get(c, before) == out);
    FUZZ_ASSERT(etw_cache_find(c, source, width, key, len, hash) == out);
    FUZZ_ASSERT(out->source == source && out->pointer_size == width);
    /* a replaced schema stays reachable by id, except TraceLogging's: the
     * generations keep only what their maps index (etw_cache.h) */
    if (prev && source != ETW_SOURCE_TRACELOGGING) FUZZ_ASSERT(etw_cache_get(c, prev_id) == prev);
    if (prev && source == ETW_SOURCE_TRACELOGGING) FUZZ_ASSERT(etw_cache_get(c, prev_id) == NULL);

    /* a faithful copy */
    FUZZ_ASSERT(strcmp(out->event_name, "Event") == 0);
    FUZZ_ASSERT((out->provider_name == NULL) == (d.provider_name == NULL));
    FUZZ_ASSERT(out->prop_count == n && out->top_count == d.top_count);
    FUZZ_ASSERT(out->event_id == d.event_id);
    for (uint32_t i = 0; i < n; i++) {
        const etw_property *p = &out->props[i], *q = &props[i];
        FUZZ_ASSERT(p->name != q->name && name_kept(p->name, q->name));
        FUZZ_ASSERT(p->flags == q->flags && p->in_type == q->in_type &&
                    p->struct_first == q->struct_first && p->struct_count == q->struct_count &&
                    p->count == q->count && p->length == q->length);
        FUZZ_ASSERT((p->map == NULL) == (q->map == NULL));
        if (!p->map) continue;
        FUZZ_ASSERT(p->map != q->map && p->map->count == q->map->count &&
                    p->map->flags == q->map->flags);
        for (uint32_t j = 0; j < i; j++) /* shared in the draft <=> shared in the copy */
            FUZZ_ASSERT((props[j].map == q->map) == (out->props[j].map == p->map));
        uint64_t sum_d = 0, sum_c = 0;
        for (uint32_t e = 0; e < p->map->count; e++) {
            sum_d += q->map->entries[e].value;
            sum_c += p->map->entries[e].value;
            if (e && p->map->flags == ETW_MAP_VALUEMAP)
                FUZZ_ASSERT(p->map->entries[e - 1].value <= p->map->entries[e].value);
            if (p->map->flags == ETW_MAP_BITMAP) {
                FUZZ_ASSERT(p->map->entries[e].value == q->map->entries[e].value);
                FUZZ_ASSERT(strcmp(p->map->entries[e].name, q->map->entries[e].name) == 0);
            }
        }
        FUZZ_ASSERT(sum_d == sum_c);
    }
    /* the cached tree walks without loops: iterative, bounded by prop_count */
    uint16_t stack[MAXP];
    int seen[MAXP] = {0};
    size_t sp = 0;
    for (uint32_t i = out->top_count; i-- > 0;) stack[sp++] = (uint16_t)i;
    uint32_t steps = 0;
    while (sp) {
        uint16_t i = stack[--sp];
        FUZZ_ASSERT(i < n && !seen[i]);
        seen[i] = 1;
        FUZZ_ASSERT(++steps <= n);
        const etw_property *p = &out->props[i];
        if (p->flags & ETW_PROP_STRUCT)
            for (uint32_t j = p->struct_count; j-- > 0;) {
                FUZZ_ASSERT(sp < MAXP);
                stack[sp++] = (uint16_t)(p->struct_first + j);
            }
    }
    /* the negative cache never claims a key it was not told */
    FUZZ_ASSERT(!etw_cache_miss_known(c, key, len, hash)); /* cleared after each note */
    etw_cache_miss_note(c, key, len, hash);
    FUZZ_ASSERT(etw_cache_miss_known(c, key, len, hash) == (len <= 32));
    etw_cache_miss_clear(c);
    FUZZ_ASSERT(!etw_cache_miss_known(c, key, len, hash));
    return 0;
}
