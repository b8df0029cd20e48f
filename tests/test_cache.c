/* test_cache.c - the schema cache: keys, maps per (source, width), ids,
 * replacement, deep copy, validation, growth, allocation failure and the
 * negative cache. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "etw_test.h"
#include "schema/etw_cache.h"
#include "schema/etw_names.h"

/* ---- a counting allocator that can fail on demand ------------------------ */

typedef struct test_alloc {
    long live;   /* blocks allocated and not freed */
    long calls;  /* alloc calls since armed */
    long fail_at; /* fail the call with this number (0-based) once armed; -1: never */
    int fail_all_after; /* fail every call from fail_at on, not just that one */
    int armed;
    long failures;
    long total;  /* every alloc call, armed or not */
    size_t bytes; /* bytes requested by every successful alloc */
} test_alloc;

static void *ta_alloc(void *ctx, size_t n) {
    test_alloc *t = ctx;
    t->total++;
    if (t->armed) {
        long k = t->calls++;
        if (t->fail_at >= 0 && (k == t->fail_at || (t->fail_all_after && k > t->fail_at))) {
            t->failures++;
            return NULL;
        }
    }
    void *p = malloc(n);
    if (p) {
        t->live++;
        t->bytes += n;
    }
    return p;
}

static void ta_free(void *ctx, void *p) {
    test_alloc *t = ctx;
    if (p) t->live--;
    free(p);
}

static etw_allocator ta_make(test_alloc *t) {
    memset(t, 0, sizeof *t);
    t->fail_at = -1;
    etw_allocator a = {ta_alloc, ta_free, t};
    return a;
}

static void ta_arm(test_alloc *t, long fail_at, int all_after) {
    t->calls = 0;
    t->fail_at = fail_at;
    t->fail_all_after = all_after;
    t->failures = 0;
    t->armed = 1;
}

static void ta_disarm(test_alloc *t) { t->armed = 0; }

/* ---- drafts --------------------------------------------------------------- */

static etw_property prop(const char *name, uint16_t in_type) {
    etw_property p;
    memset(&p, 0, sizeof p);
    p.name = name;
    p.in_type = in_type;
    return p;
}

static etw_schema schema(const char *event_name, etw_property *props, uint16_t n, uint16_t top) {
    etw_schema s;
    memset(&s, 0, sizeof s);
    s.event_name = event_name;
    s.props = props;
    s.prop_count = n;
    s.top_count = top;
    return s;
}

/* A key from a number: looks like the start of TraceLogging metadata
 * (u16 size, one tag byte, a NUL-terminated name). */
static size_t make_key(uint8_t *out, size_t cap, uint32_t n, size_t len) {
    uint8_t head[24];
    int w = snprintf((char *)head + 3, sizeof head - 3, "Ev%u", (unsigned)n);
    head[0] = (uint8_t)len;
    head[1] = (uint8_t)(len >> 8);
    head[2] = (uint8_t)n; /* with the bytes below, short keys stay distinct */
    size_t hl = 3 + (size_t)w + 1;
    if (len > cap) len = cap;
    for (size_t i = 0; i < len; i++) out[i] = (uint8_t)(i * 31u + n);
    memcpy(out, head, hl < len ? hl : len);
    if (len >= 8) { /* n itself at the end */
        out[len - 4] = (uint8_t)n;
        out[len - 3] = (uint8_t)(n >> 8);
        out[len - 2] = (uint8_t)(n >> 16);
        out[len - 1] = (uint8_t)(n >> 24);
    }
    return len;
}

static const etw_schema *ins(etw_cache *c, etw_schema_source src, uint8_t w, const void *key,
                             size_t len, const etw_schema *d) {
    const etw_schema *out = NULL;
    etw_status st = etw_cache_insert(c, src, w, key, len, etw_cache_hash(key, len), d, &out, NULL);
    ETW_CHECK_INT(st, ETW_OK);
    return out;
}

static const etw_schema *fnd(const etw_cache *c, etw_schema_source src, uint8_t w,
                             const void *key, size_t len) {
    return etw_cache_find(c, src, w, key, len, etw_cache_hash(key, len));
}

/* ---- tests ---------------------------------------------------------------- */

static void test_key_descriptor(void) {
    etw_guid g = {0x01020304u, 0x0506u, 0x0708u, {9, 10, 11, 12, 13, 14, 15, 16}};
    uint8_t k[ETW_DESCRIPTOR_KEY_SIZE];
    etw_key_descriptor(k, &g, 0x1234u, 7);
    static const uint8_t want[19] = {4, 3, 2, 1, 6, 5, 8, 7, 9, 10, 11, 12,
                                     13, 14, 15, 16, 0x34, 0x12, 7};
    ETW_CHECK(memcmp(k, want, sizeof want) == 0);
    /* the hash is a pure function of the bytes */
    ETW_CHECK(etw_cache_hash(k, sizeof k) == etw_cache_hash(want, sizeof want));
    ETW_CHECK(etw_cache_hash(k, 18) != etw_cache_hash(k, 19));
    ETW_CHECK(etw_cache_hash(NULL, 0) == etw_cache_hash(k, 0));
}

static void test_hit_miss(void) {
    etw_cache *c = NULL;
    ETW_CHECK_INT(etw_cache_new(&c, NULL), ETW_OK);
    etw_property p[2] = {prop("a", ETW_INTYPE_UINT32), prop("b", ETW_INTYPE_ANSISTRING)};
    etw_schema d = schema("Ev", p, 2, 2);
    d.event_id = 5;
    etw_guid g = {0xdeadbeefu, 1, 2, {3, 4, 5, 6, 7, 8, 9, 10}};
    uint8_t k[ETW_DESCRIPTOR_KEY_SIZE], k2[ETW_DESCRIPTOR_KEY_SIZE];
    etw_key_descriptor(k, &g, 5, 0);
    etw_key_descriptor(k2, &g, 5, 1);

    ETW_CHECK(fnd(c, ETW_SOURCE_MANIFEST, 8, k, sizeof k) == NULL);
    const etw_schema *s = ins(c, ETW_SOURCE_MANIFEST, 8, k, sizeof k, &d);
    ETW_CHECK(s != NULL);
    ETW_CHECK(fnd(c, ETW_SOURCE_MANIFEST, 8, k, sizeof k) == s);
    ETW_CHECK(fnd(c, ETW_SOURCE_MANIFEST, 8, k2, sizeof k2) == NULL);
    ETW_CHECK(fnd(c, ETW_SOURCE_EVENTSOURCE, 8, k, sizeof k) == NULL);
    ETW_CHECK(fnd(c, ETW_SOURCE_METADATA, 8, k, sizeof k) == NULL);
    ETW_CHECK(fnd(c, ETW_SOURCE_MANIFEST, 8, k, sizeof k - 1) == NULL);
    /* same bytes, different hash value: the hash is part of the lookup */
    ETW_CHECK(etw_cache_find(c, ETW_SOURCE_MANIFEST, 8, k, sizeof k, 12345) == NULL);
    ETW_CHECK_INT(etw_cache_count(c), 1);
    ETW_CHECK(etw_cache_get(c, 0) == s);
    ETW_CHECK(etw_cache_get(c, 1) == NULL);
    ETW_CHECK_INT(s->id, 0);
    ETW_CHECK_INT(s->source, ETW_SOURCE_MANIFEST);
    ETW_CHECK_INT(s->pointer_size, 8);
    ETW_CHECK_INT(s->event_id, 5);
    ETW_CHECK_INT(s->prop_count, 2);
    ETW_CHECK_STR(s->props[1].name, "b");
    ETW_CHECK(((uintptr_t)s & 7u) == 0);
    ETW_CHECK(((uintptr_t)s->props & 7u) == 0);
    etw_cache_free(c);
}

static void test_pointer_width(void) {
    etw_cache *c = NULL;
    ETW_CHECK_INT(etw_cache_new(&c, NULL), ETW_OK);
    etw_property p[1] = {prop("ptr", ETW_INTYPE_POINTER)};
    etw_schema d = schema("Ev", p, 1, 1);
    uint8_t key[64];
    size_t len = make_key(key, sizeof key, 1, sizeof key);

    const etw_schema *s8 = ins(c, ETW_SOURCE_TRACELOGGING, 8, key, len, &d);
    ETW_CHECK(fnd(c, ETW_SOURCE_TRACELOGGING, 4, key, len) == NULL);
    const etw_schema *s4 = ins(c, ETW_SOURCE_TRACELOGGING, 4, key, len, &d);
    ETW_CHECK(s4 != s8);
    ETW_CHECK(fnd(c, ETW_SOURCE_TRACELOGGING, 8, key, len) == s8);
    ETW_CHECK(fnd(c, ETW_SOURCE_TRACELOGGING, 4, key, len) == s4);
    ETW_CHECK_INT(s8->pointer_size, 8);
    ETW_CHECK_INT(s4->pointer_size, 4);
    /* any width other than 4 is 8 */
    ETW_CHECK(fnd(c, ETW_SOURCE_TRACELOGGING, 0, key, len) == s8);
    ETW_CHECK(fnd(c, ETW_SOURCE_TRACELOGGING, 16, key, len) == s8);
    const etw_schema *s0 = ins(c, ETW_SOURCE_MOF, 0, key, len, &d);
    ETW_CHECK_INT(s0->pointer_size, 8);
    ETW_CHECK(fnd(c, ETW_SOURCE_MOF, 8, key, len) == s0);
    ETW_CHECK_INT(etw_cache_count(c), 3);
    etw_cache_free(c);
}

static void test_tracelogging_keys(void) {
    etw_cache *c = NULL;
    ETW_CHECK_INT(etw_cache_new(&c, NULL), ETW_OK);
    etw_property p[1] = {prop("x", ETW_INTYPE_UINT8)};
    etw_schema d = schema("Same", p, 1, 1);
    uint8_t base[200], prefix[150], onebyte[200], longer[201], tail0[200];
    make_key(base, sizeof base, 7, sizeof base);
    memcpy(prefix, base, sizeof prefix);
    memcpy(onebyte, base, sizeof onebyte);
    onebyte[120] ^= 1;
    memcpy(longer, base, sizeof base);
    longer[200] = 0;
    memcpy(tail0, base, sizeof tail0);
    tail0[199] ^= 0x80; /* differs in the last byte */

    struct {
        const uint8_t *k;
        size_t n;
        const etw_schema *s;
    } v[] = {{base, sizeof base, NULL},       {prefix, sizeof prefix, NULL},
             {onebyte, sizeof onebyte, NULL}, {longer, sizeof longer, NULL},
             {tail0, sizeof tail0, NULL},     {base, 1, NULL},
             {base, 0, NULL}};
    size_t nv = sizeof v / sizeof v[0];
    for (size_t i = 0; i < nv; i++) {
        d.event_id = (uint16_t)i;
        v[i].s = ins(c, ETW_SOURCE_TRACELOGGING, 8, v[i].k, v[i].n, &d);
    }
    ETW_CHECK_INT(etw_cache_count(c), nv);
    for (size_t i = 0; i < nv; i++) {
        const etw_schema *s = fnd(c, ETW_SOURCE_TRACELOGGING, 8, v[i].k, v[i].n);
        ETW_CHECK(s == v[i].s);
        ETW_CHECK(s && s->event_id == i);
    }
    /* a key of the same length differing elsewhere is a miss */
    uint8_t other[200];
    memcpy(other, base, sizeof other);
    other[0] ^= 0xff;
    ETW_CHECK(fnd(c, ETW_SOURCE_TRACELOGGING, 8, other, sizeof other) == NULL);
    etw_cache_free(c);
}

static void test_forced_collision(void) {
    etw_cache *c = NULL;
    ETW_CHECK_INT(etw_cache_new(&c, NULL), ETW_OK);
    etw_property p[1] = {prop("x", ETW_INTYPE_UINT8)};
    etw_schema d = schema("Coll", p, 1, 1);
    const uint64_t H = 0x1234567890abcdefu;
    const etw_schema *got[100];
    uint8_t key[40];
    for (uint32_t i = 0; i < 100; i++) {
        /* same length for most, so only the byte compare separates them */
        size_t len = make_key(key, sizeof key, i, i % 10 ? 40 : 24);
        d.event_id = (uint16_t)i;
        got[i] = NULL;
        ETW_CHECK_INT(etw_cache_insert(c, ETW_SOURCE_TRACELOGGING, 8, key, len, H, &d, &got[i], NULL),
                      ETW_OK);
    }
    for (uint32_t i = 0; i < 100; i++) {
        size_t len = make_key(key, sizeof key, i, i % 10 ? 40 : 24);
        const etw_schema *s = etw_cache_find(c, ETW_SOURCE_TRACELOGGING, 8, key, len, H);
        ETW_CHECK(s == got[i]);
        ETW_CHECK(s && s->event_id == i);
    }
    size_t len = make_key(key, sizeof key, 1000, 40);
    ETW_CHECK(etw_cache_find(c, ETW_SOURCE_TRACELOGGING, 8, key, len, H) == NULL);
    ETW_CHECK(etw_cache_find(c, ETW_SOURCE_TRACELOGGING, 8, key, len, 0) == NULL);
    /* hash 0 and all-ones are ordinary values */
    const etw_schema *z = NULL;
    ETW_CHECK_INT(etw_cache_insert(c, ETW_SOURCE_TRACELOGGING, 8, key, len, 0, &d, &z, NULL), ETW_OK);
    ETW_CHECK(etw_cache_find(c, ETW_SOURCE_TRACELOGGING, 8, key, len, 0) == z);
    ETW_CHECK_INT(etw_cache_insert(c, ETW_SOURCE_TRACELOGGING, 8, key, len, UINT64_MAX, &d, &z, NULL),
                  ETW_OK);
    ETW_CHECK(etw_cache_find(c, ETW_SOURCE_TRACELOGGING, 8, key, len, UINT64_MAX) == z);
    etw_cache_free(c);
}

static void test_replacement(void) {
    etw_cache *c = NULL;
    ETW_CHECK_INT(etw_cache_new(&c, NULL), ETW_OK);
    etw_property p1[1] = {prop("old", ETW_INTYPE_UINT32)};
    etw_property p2[2] = {prop("new1", ETW_INTYPE_UINT64), prop("new2", ETW_INTYPE_GUID)};
    etw_schema d1 = schema("V1", p1, 1, 1), d2 = schema("V2", p2, 2, 2);
    etw_guid g = {1, 2, 3, {4, 5, 6, 7, 8, 9, 10, 11}};
    uint8_t k[ETW_DESCRIPTOR_KEY_SIZE];
    etw_key_descriptor(k, &g, 1, 0);
    const etw_schema *a = ins(c, ETW_SOURCE_MANIFEST, 8, k, sizeof k, &d1);
    const etw_schema *b = ins(c, ETW_SOURCE_MANIFEST, 8, k, sizeof k, &d2);
    ETW_CHECK(a != b);
    ETW_CHECK_INT(etw_cache_count(c), 2);
    ETW_CHECK(fnd(c, ETW_SOURCE_MANIFEST, 8, k, sizeof k) == b);
    ETW_CHECK(etw_cache_get(c, 0) == a);
    ETW_CHECK(etw_cache_get(c, 1) == b);
    ETW_CHECK_INT(a->id, 0);
    ETW_CHECK_INT(b->id, 1);
    ETW_CHECK_STR(a->event_name, "V1");
    ETW_CHECK_STR(a->props[0].name, "old");
    ETW_CHECK_STR(b->event_name, "V2");
    ETW_CHECK_INT(b->prop_count, 2);
    /* a third version, then the key is still the one entry of the map */
    const etw_schema *c3 = ins(c, ETW_SOURCE_MANIFEST, 8, k, sizeof k, &d1);
    ETW_CHECK(fnd(c, ETW_SOURCE_MANIFEST, 8, k, sizeof k) == c3);
    ETW_CHECK_INT(c3->id, 2);
    ETW_CHECK_STR(etw_cache_get(c, 1)->event_name, "V2");
    /* replacing under width 4 leaves width 8 alone */
    const etw_schema *w4 = ins(c, ETW_SOURCE_MANIFEST, 4, k, sizeof k, &d2);
    ETW_CHECK(fnd(c, ETW_SOURCE_MANIFEST, 8, k, sizeof k) == c3);
    ETW_CHECK(fnd(c, ETW_SOURCE_MANIFEST, 4, k, sizeof k) == w4);
    etw_cache_free(c);
}

static void test_ids_across_sources(void) {
    etw_cache *c = NULL;
    ETW_CHECK_INT(etw_cache_new(&c, NULL), ETW_OK);
    etw_property p[1] = {prop("x", ETW_INTYPE_UINT8)};
    etw_schema d = schema("E", p, 1, 1);
    const etw_schema *got[50];
    for (uint32_t i = 0; i < 50; i++) {
        etw_schema_source src = (etw_schema_source)(1 + i % 5);
        uint8_t k[ETW_DESCRIPTOR_KEY_SIZE];
        etw_guid g = {i, 0, 0, {0}};
        etw_key_descriptor(k, &g, (uint16_t)i, 0);
        d.event_id = (uint16_t)i;
        got[i] = ins(c, src, (i & 8) ? 4 : 8, k, sizeof k, &d);
        ETW_CHECK_INT(got[i]->id, i);
        ETW_CHECK_INT(got[i]->source, src);
    }
    ETW_CHECK_INT(etw_cache_count(c), 50);
    for (uint32_t i = 0; i < 50; i++) {
        ETW_CHECK(etw_cache_get(c, i) == got[i]);
        ETW_CHECK_INT(etw_cache_get(c, i)->event_id, i);
    }
    ETW_CHECK(etw_cache_get(c, 50) == NULL);
    ETW_CHECK(etw_cache_get(c, UINT32_MAX) == NULL);
    etw_cache_free(c);
}

static void test_deep_copy(void) {
    etw_cache *c = NULL;
    ETW_CHECK_INT(etw_cache_new(&c, NULL), ETW_OK);
    /* every string of the draft lives in buf, which is overwritten later */
    char *buf = malloc(512);
    size_t at = 0;
#define PUT(s) (strcpy(buf + at, s), at += strlen(s) + 1, buf + at - strlen(s) - 1)
    const char *prov = PUT("Provider"), *ev = PUT("Event"), *task = PUT("Task"),
               *opc = PUT("Opcode"), *msg = PUT("Msg %1"), *n0 = PUT("f0"), *n1 = PUT("f1"),
               *n2 = PUT("f2"), *mname = PUT("Colors"), *red = PUT("red"),
               *green = PUT("green"), *blue = PUT("blue"), *dup = PUT("dup"),
               *bname = PUT("Bits"), *b1 = PUT("b1"), *b0 = PUT("b0");
#undef PUT
    etw_map_entry *ents = malloc(4 * sizeof *ents);
    ents[0].value = 3; ents[0].name = blue;   /* unsorted */
    ents[1].value = 1; ents[1].name = red;
    ents[2].value = 2; ents[2].name = green;
    ents[3].value = 1; ents[3].name = dup;    /* equal to entry 1: ordered by name */
    etw_map *vm = malloc(sizeof *vm);
    vm->name = mname; vm->flags = ETW_MAP_VALUEMAP; vm->count = 4; vm->entries = ents;
    etw_map_entry *bents = malloc(2 * sizeof *bents);
    bents[0].value = 2; bents[0].name = b1;
    bents[1].value = 1; bents[1].name = b0;
    etw_map *bm = malloc(sizeof *bm);
    bm->name = bname; bm->flags = ETW_MAP_BITMAP; bm->count = 2; bm->entries = bents;

    etw_property *props = malloc(3 * sizeof *props);
    props[0] = prop(n0, ETW_INTYPE_UINT32);
    props[0].map = vm;
    props[1] = prop(n1, ETW_INTYPE_UINT32);
    props[1].map = bm;
    props[2] = prop(n2, ETW_INTYPE_UINT8);
    props[2].map = vm; /* shares the value map with f0 */
    etw_schema *d = malloc(sizeof *d);
    *d = schema(ev, props, 3, 3);
    d->provider_name = prov;
    d->task_name = task;
    d->opcode_name = opc;
    d->message = msg;
    d->keywords = 0x8000000000000001u;
    d->id = 999;      /* overwritten by the cache */
    d->source = 77;   /* likewise */
    d->provider.data1 = 0xabcdef01u;

    uint8_t key[3] = {1, 2, 3};
    const etw_schema *s = ins(c, ETW_SOURCE_EVENTSOURCE, 4, key, sizeof key, d);
    ETW_CHECK(s != NULL && s != d);
    if (!s) return;

    /* destroy the draft */
    memset(buf, 'X', 511);
    buf[511] = 0;
    memset(ents, 0x55, 4 * sizeof *ents);
    memset(bents, 0x55, 2 * sizeof *bents);
    memset(vm, 0x55, sizeof *vm);
    memset(bm, 0x55, sizeof *bm);
    memset(props, 0x55, 3 * sizeof *props);
    memset(d, 0x55, sizeof *d);
    free(buf);
    free(ents);
    free(bents);
    free(vm);
    free(bm);
    free(props);
    free(d);
    key[0] = 9;

    ETW_CHECK_INT(s->id, 0);
    ETW_CHECK_INT(s->source, ETW_SOURCE_EVENTSOURCE);
    ETW_CHECK_INT(s->pointer_size, 4);
    ETW_CHECK(s->keywords == 0x8000000000000001u);
    ETW_CHECK(s->provider.data1 == 0xabcdef01u);
    ETW_CHECK_STR(s->provider_name, "Provider");
    ETW_CHECK_STR(s->event_name, "Event");
    ETW_CHECK_STR(s->task_name, "Task");
    ETW_CHECK_STR(s->opcode_name, "Opcode");
    ETW_CHECK_STR(s->message, "Msg %1");
    ETW_CHECK_INT(s->prop_count, 3);
    ETW_CHECK_INT(s->top_count, 3);
    ETW_CHECK_STR(s->props[0].name, "f0");
    ETW_CHECK_STR(s->props[1].name, "f1");
    ETW_CHECK_STR(s->props[2].name, "f2");
    ETW_CHECK_INT(s->props[0].in_type, ETW_INTYPE_UINT32);
    ETW_CHECK(s->props[0].map != NULL && s->props[0].map == s->props[2].map);
    ETW_CHECK(s->props[1].map != NULL && s->props[1].map != s->props[0].map);
    const etw_map *m = s->props[0].map;
    ETW_CHECK_STR(m->name, "Colors");
    ETW_CHECK_INT(m->flags, ETW_MAP_VALUEMAP);
    ETW_CHECK_INT(m->count, 4);
    ETW_CHECK(((uintptr_t)m & 7u) == 0 && ((uintptr_t)m->entries & 7u) == 0);
    /* sorted by value, equal values by name */
    ETW_CHECK(m->entries[0].value == 1);
    ETW_CHECK_STR(m->entries[0].name, "dup");
    ETW_CHECK(m->entries[1].value == 1);
    ETW_CHECK_STR(m->entries[1].name, "red");
    ETW_CHECK(m->entries[2].value == 2);
    ETW_CHECK_STR(m->entries[2].name, "green");
    ETW_CHECK(m->entries[3].value == 3);
    ETW_CHECK_STR(m->entries[3].name, "blue");
    const etw_map *bmc = s->props[1].map;
    ETW_CHECK_STR(bmc->name, "Bits");
    ETW_CHECK_INT(bmc->flags, ETW_MAP_BITMAP);
    ETW_CHECK_INT(bmc->count, 2);
    ETW_CHECK(bmc->entries[0].value == 2); /* bitmaps keep their order */
    ETW_CHECK_STR(bmc->entries[0].name, "b1");
    ETW_CHECK_STR(bmc->entries[1].name, "b0");
    /* the key was copied too */
    uint8_t k0[3] = {1, 2, 3};
    ETW_CHECK(fnd(c, ETW_SOURCE_EVENTSOURCE, 4, k0, 3) == s);
    ETW_CHECK(fnd(c, ETW_SOURCE_EVENTSOURCE, 4, key, 3) == NULL);
    etw_cache_free(c);
}

static void test_optional_strings_null(void) {
    etw_cache *c = NULL;
    ETW_CHECK_INT(etw_cache_new(&c, NULL), ETW_OK);
    etw_map m = {NULL, ETW_MAP_VALUEMAP, 0, NULL}; /* unnamed, empty */
    etw_property p[1] = {prop("x", ETW_INTYPE_UINT8)};
    p[0].map = &m;
    etw_schema d = schema("E", p, 1, 1);
    const etw_schema *s = ins(c, ETW_SOURCE_TRACELOGGING, 8, "k", 1, &d);
    ETW_CHECK(s && s->provider_name == NULL && s->task_name == NULL && s->opcode_name == NULL &&
              s->message == NULL);
    ETW_CHECK(s && s->props[0].map && s->props[0].map->name == NULL &&
              s->props[0].map->count == 0);
    /* a schema with no properties */
    etw_schema e = schema("Empty", NULL, 0, 0);
    const etw_schema *s2 = ins(c, ETW_SOURCE_TRACELOGGING, 8, "k2", 2, &e);
    ETW_CHECK(s2 && s2->prop_count == 0);
    ETW_CHECK_STR(s2 ? s2->event_name : NULL, "Empty");
    etw_cache_free(c);
}

/* A string or map shared by many properties or entries is copied once, so a
 * source that interns strings cannot make a copy larger than its draft. */
static void test_shared_strings(void) {
    enum { NP = 2000, NE = 5000, SLEN = 20000 };
    char *big = malloc(SLEN + 1);
    memset(big, 'n', SLEN);
    big[SLEN] = 0;
    etw_map_entry *ents = malloc(NE * sizeof *ents);
    for (uint32_t i = 0; i < NE; i++) {
        ents[i].value = NE - i; /* unsorted */
        ents[i].name = big;     /* all the same string */
    }
    etw_map map = {big, ETW_MAP_VALUEMAP, NE, ents};
    etw_property *p = malloc(NP * sizeof *p);
    for (uint32_t i = 0; i < NP; i++) {
        p[i] = prop(big, ETW_INTYPE_UINT32);
        p[i].map = &map;
    }
    etw_schema d = schema(big, p, NP, NP);
    d.task_name = big;

    test_alloc t;
    etw_allocator al = ta_make(&t);
    etw_cache *c = NULL;
    ETW_CHECK_INT(etw_cache_new(&c, &al), ETW_OK);
    size_t before = t.bytes;
    const etw_schema *s = ins(c, ETW_SOURCE_EVENTSOURCE, 8, "shared", 6, &d);
    size_t used = t.bytes - before;
    /* without sharing: (NP + NE + 3) * 20 KB = 140 MB; with: the shared
     * name once (cut to ETW_NAME_MAX), and the NP - 1 properties that repeat
     * it renamed (etw_names.h), ~1 MB, plus as much for the renaming's
     * temporary names */
    ETW_CHECK(used < 4 * 1024 * 1024);
    ETW_CHECK(s != NULL);
    if (s) {
        ETW_CHECK(s->props[0].name != big && strlen(s->props[0].name) == ETW_NAME_MAX &&
                  strncmp(s->props[0].name, big, ETW_NAME_MAX) == 0);
        ETW_CHECK(strlen(s->props[NP - 1].name) == ETW_NAME_MAX + 5 &&
                  strcmp(s->props[NP - 1].name + ETW_NAME_MAX, "_2000") == 0);
        ETW_CHECK(s->event_name == s->props[0].name && s->task_name == s->event_name);
        ETW_CHECK(s->props[0].map == s->props[NP - 1].map);
        ETW_CHECK(s->props[0].map->entries[0].value == 1);
        ETW_CHECK(s->props[0].map->entries[NE - 1].value == NE);
        ETW_CHECK(s->props[0].map->entries[7].name == s->props[0].name);
    }
    etw_cache_free(c);
    ETW_CHECK_INT(t.live, 0);
    free(p);
    free(ents);
    free(big);
}

/* Insert must fail with ETW_E_CORRUPT, a reason, and change nothing. */
static void expect_corrupt(etw_cache *c, const etw_schema *d, const char *what) {
    const char *why = NULL;
    const etw_schema *out = (const etw_schema *)(uintptr_t)1;
    uint32_t before = etw_cache_count(c);
    etw_status st = etw_cache_insert(c, ETW_SOURCE_TRACELOGGING, 8, what, strlen(what),
                                     etw_cache_hash(what, strlen(what)), d, &out, &why);
    if (st != ETW_E_CORRUPT) fprintf(stderr, "  case: %s\n", what);
    ETW_CHECK_INT(st, ETW_E_CORRUPT);
    ETW_CHECK(why != NULL && why[0] != 0);
    ETW_CHECK(out == NULL);
    ETW_CHECK_INT(etw_cache_count(c), before);
    ETW_CHECK(fnd(c, ETW_SOURCE_TRACELOGGING, 8, what, strlen(what)) == NULL);
    const char *why2 = NULL;
    ETW_CHECK_INT(etw_schema_validate(d, &why2), ETW_E_CORRUPT);
    ETW_CHECK(why2 == why);
    ETW_CHECK_INT(etw_schema_validate(d, NULL), ETW_E_CORRUPT);
}

static void expect_ok(etw_cache *c, const etw_schema *d, const char *what) {
    const char *why = NULL;
    etw_status st = etw_schema_validate(d, &why);
    if (st != ETW_OK) fprintf(stderr, "  case: %s: %s\n", what, why ? why : "?");
    ETW_CHECK_INT(st, ETW_OK);
    const etw_schema *s = ins(c, ETW_SOURCE_TRACELOGGING, 8, what, strlen(what), d);
    ETW_CHECK(s && s->prop_count == d->prop_count);
}

static void test_validation(void) {
    etw_cache *c = NULL;
    ETW_CHECK_INT(etw_cache_new(&c, NULL), ETW_OK);
    etw_property p[8];
    etw_schema d;

    /* a valid nested tree: top = s1, n; s1 = {a, s2}; s2 = {b, c} */
#define TREE()                                                                 \
    do {                                                                       \
        p[0] = prop("s1", 0);                                                  \
        p[0].flags = ETW_PROP_STRUCT;                                          \
        p[0].struct_first = 2;                                                 \
        p[0].struct_count = 2;                                                 \
        p[1] = prop("n", ETW_INTYPE_UINT16);                                   \
        p[2] = prop("a", ETW_INTYPE_UINT32);                                   \
        p[3] = prop("s2", 0);                                                  \
        p[3].flags = ETW_PROP_STRUCT;                                          \
        p[3].struct_first = 4;                                                 \
        p[3].struct_count = 2;                                                 \
        p[4] = prop("b", ETW_INTYPE_UINT8);                                    \
        p[5] = prop("c", ETW_INTYPE_UINT8);                                    \
        d = schema("T", p, 6, 2);                                              \
    } while (0)

    TREE();
    expect_ok(c, &d, "tree");

    TREE();
    p[3].struct_first = 3; /* points at itself */
    expect_corrupt(c, &d, "struct_first self");
    TREE();
    p[3].struct_first = 2; /* backwards: would be a cycle s2 -> a, s2 */
    expect_corrupt(c, &d, "struct_first backwards");
    TREE();
    p[0].struct_first = 0;
    expect_corrupt(c, &d, "struct_first zero");
    TREE();
    p[3].struct_count = 3; /* 4 + 3 > 6 */
    expect_corrupt(c, &d, "struct range past prop_count");
    TREE();
    p[3].struct_first = 0xffff;
    p[3].struct_count = 0xffff;
    expect_corrupt(c, &d, "struct range overflow");
    TREE();
    p[0].struct_count = 3; /* s1 = {a, s2, b}; s2 = {b, c}: b has two parents */
    expect_corrupt(c, &d, "two parents");
    TREE();
    p[0].struct_first = 1; /* s1 = {n, a}: n is also top-level */
    expect_corrupt(c, &d, "top-level member");
    TREE();
    d.top_count = 3; /* a is top-level and a member of s1 */
    expect_corrupt(c, &d, "top-level member 2");
    TREE();
    d.top_count = 7;
    expect_corrupt(c, &d, "top_count > prop_count");
    TREE();
    p[4].name = NULL;
    expect_corrupt(c, &d, "NULL property name");
    TREE();
    p[5].name = NULL; /* the last property */
    expect_corrupt(c, &d, "NULL property name 2");
    TREE();
    d.event_name = NULL;
    expect_corrupt(c, &d, "NULL event name");
    TREE();
    d.props = NULL;
    expect_corrupt(c, &d, "NULL props");

    /* counts and lengths */
    TREE();
    p[2].flags = ETW_PROP_COUNT_REF;
    p[2].count = 5; /* a later property */
    expect_corrupt(c, &d, "count ref later");
    TREE();
    p[2].flags = ETW_PROP_COUNT_REF;
    p[2].count = 2; /* itself */
    expect_corrupt(c, &d, "count ref self");
    TREE();
    p[1] = prop("str", ETW_INTYPE_UNICODESTRING);
    p[2].flags = ETW_PROP_COUNT_REF;
    p[2].count = 1; /* a string */
    expect_corrupt(c, &d, "count ref to string");
    TREE();
    p[1].flags = ETW_PROP_COUNT_FIXED;
    p[1].count = 4;
    p[2].flags = ETW_PROP_COUNT_REF;
    p[2].count = 1; /* an array of integers */
    expect_corrupt(c, &d, "count ref to array");
    TREE();
    p[4].flags = ETW_PROP_COUNT_REF;
    p[4].count = 3; /* a struct */
    expect_corrupt(c, &d, "count ref to struct");
    TREE();
    p[2].flags = ETW_PROP_LENGTH_REF;
    p[2].length = 4;
    expect_corrupt(c, &d, "length ref later");
    TREE();
    p[1] = prop("d", ETW_INTYPE_DOUBLE);
    p[2].flags = ETW_PROP_LENGTH_REF;
    p[2].length = 1;
    expect_corrupt(c, &d, "length ref to double");
    TREE();
    p[2].flags = ETW_PROP_COUNT_REF;
    p[2].count = 1; /* UINT16: fine */
    p[5].flags = ETW_PROP_LENGTH_REF;
    p[5].length = 2; /* an array (count ref) */
    expect_corrupt(c, &d, "length ref to array");

    /* maps */
    etw_map_entry ents[2] = {{1, "one"}, {2, NULL}};
    etw_map m = {"M", ETW_MAP_VALUEMAP, 2, ents};
    TREE();
    p[4].map = &m;
    expect_corrupt(c, &d, "map entry NULL name");
    ents[1].name = "two";
    m.entries = NULL;
    expect_corrupt(c, &d, "map entries NULL");
    m.entries = ents;
    m.flags = 0;
    expect_corrupt(c, &d, "map flags 0");
    m.flags = ETW_MAP_VALUEMAP | ETW_MAP_BITMAP;
    expect_corrupt(c, &d, "map flags both");
    m.flags = ETW_MAP_VALUEMAP;
    expect_ok(c, &d, "map ok");

    /* allowed: empty struct, integer kinds as counts, orphans */
    TREE();
    p[1] = prop("e", 0);
    p[1].flags = ETW_PROP_STRUCT;
    p[1].struct_first = 2;
    p[1].struct_count = 0;
    expect_ok(c, &d, "empty struct");
    static const uint16_t ok_counts[] = {ETW_INTYPE_INT8,    ETW_INTYPE_UINT8,
                                         ETW_INTYPE_INT16,   ETW_INTYPE_UINT32,
                                         ETW_INTYPE_UINT64,  ETW_INTYPE_HEXINT32,
                                         ETW_INTYPE_HEXINT64, ETW_INTYPE_POINTER,
                                         ETW_INTYPE_SIZET};
    for (size_t i = 0; i < sizeof ok_counts / sizeof ok_counts[0]; i++) {
        char name[32];
        TREE();
        p[1].in_type = ok_counts[i];
        p[2].flags = ETW_PROP_COUNT_REF | ETW_PROP_LENGTH_REF;
        p[2].count = 1;
        p[2].length = 1;
        snprintf(name, sizeof name, "count kind %u", (unsigned)ok_counts[i]);
        expect_ok(c, &d, name);
    }
    TREE();
    d.top_count = 1; /* n is now an orphan; s1's members still reached once */
    expect_ok(c, &d, "orphan");
    TREE();
    d.top_count = 0; /* nothing reachable: only the per-property rules apply */
    p[0].struct_first = 2;
    p[3].struct_first = 4;
    expect_ok(c, &d, "no top level");
    /* two struct ranges overlap but only one struct is reachable */
    TREE();
    d.top_count = 1;
    p[1] = prop("orphan", 0);
    p[1].flags = ETW_PROP_STRUCT;
    p[1].struct_first = 2;
    p[1].struct_count = 1;
    expect_ok(c, &d, "overlap under an orphan");
    /* ... and both reachable: rejected */
    d.top_count = 2;
    expect_corrupt(c, &d, "overlap reachable");

    /* ETW_PROP_BITS: a UINT8 view of bits of an earlier scalar integer */
    p[0] = prop("w", ETW_INTYPE_UINT16);
    p[1] = prop("f", ETW_INTYPE_UINT8);
    p[1].flags = ETW_PROP_BITS;
    p[1].count = 0;
    p[1].length = ETW_BITS_LENGTH(3, 5);
    d = schema("Bits", p, 2, 2);
    expect_ok(c, &d, "bits");
    p[1].count = 1;
    expect_corrupt(c, &d, "bits of itself");
    p[1].count = 0;
    p[1].length = ETW_BITS_LENGTH(3, 9);
    expect_corrupt(c, &d, "bits wider than a byte");
    p[1].length = ETW_BITS_LENGTH(60, 8);
    expect_corrupt(c, &d, "bits past 64");
    p[1].length = ETW_BITS_LENGTH(0, 0);
    expect_corrupt(c, &d, "no bits");
    p[1].length = ETW_BITS_LENGTH(0, 1);
    p[1].in_type = ETW_INTYPE_UINT32;
    expect_corrupt(c, &d, "bits not UINT8");
    p[1].in_type = ETW_INTYPE_UINT8;
    p[0] = prop("s", ETW_INTYPE_UNICODESTRING);
    expect_corrupt(c, &d, "bits of a string");

    ETW_CHECK_INT(etw_schema_validate(NULL, NULL), ETW_E_INVALID_ARG);
#undef TREE
    etw_cache_free(c);
}

static void test_validation_large(void) {
    /* 65535 properties: a long chain of nested one-member structs, then a
     * flat struct: no recursion, no stack limits */
    enum { N = 65535 };
    etw_property *p = calloc(N, sizeof *p);
    for (uint32_t i = 0; i < N; i++) {
        p[i].name = "p";
        p[i].in_type = ETW_INTYPE_UINT8;
        if (i + 1 < 40000) {
            p[i].flags = ETW_PROP_STRUCT;
            p[i].struct_first = (uint16_t)(i + 1);
            p[i].struct_count = 1;
        }
    }
    p[39999].flags = ETW_PROP_STRUCT;
    p[39999].struct_first = 40000;
    p[39999].struct_count = N - 40000;
    etw_schema d = schema("Deep", p, N, 1);
    ETW_CHECK_INT(etw_schema_validate(&d, NULL), ETW_OK);
    etw_cache *c = NULL;
    ETW_CHECK_INT(etw_cache_new(&c, NULL), ETW_OK);
    const etw_schema *s = ins(c, ETW_SOURCE_METADATA, 8, "deep", 4, &d);
    ETW_CHECK(s && s->prop_count == N && s->props[N - 1].name && s->props[N - 1].name[0] == 'p');
    p[N - 1].flags = ETW_PROP_STRUCT; /* last one points past the end */
    p[N - 1].struct_first = 0xffff;
    p[N - 1].struct_count = 1;
    ETW_CHECK_INT(etw_schema_validate(&d, NULL), ETW_E_CORRUPT);
    etw_cache_free(c);
    free(p);
}

static void test_many(void) {
    enum { N = 100000 };
    etw_cache *c = NULL;
    ETW_CHECK_INT(etw_cache_new(&c, NULL), ETW_OK);
    etw_property p[2] = {prop("a", ETW_INTYPE_UINT32), prop("b", ETW_INTYPE_UNICODESTRING)};
    etw_schema d = schema("Many", p, 2, 2);
    uint8_t key[300];
    int bad_insert = 0, bad_find = 0, bad_get = 0;
    for (uint32_t i = 0; i < N; i++) {
        size_t len = make_key(key, sizeof key, i, 8 + (i * 7919u) % 280u);
        etw_schema_source src = (etw_schema_source)(1 + i % 5);
        d.event_id = (uint16_t)i;
        d.keywords = i;
        const etw_schema *out = NULL;
        if (etw_cache_insert(c, src, (i & 1) ? 4 : 8, key, len, etw_cache_hash(key, len), &d,
                             &out, NULL) != ETW_OK || !out || out->id != i)
            bad_insert++;
    }
    ETW_CHECK_INT(bad_insert, 0);
    ETW_CHECK_INT(etw_cache_count(c), N);
    for (uint32_t i = 0; i < N; i++) {
        size_t len = make_key(key, sizeof key, i, 8 + (i * 7919u) % 280u);
        etw_schema_source src = (etw_schema_source)(1 + i % 5);
        const etw_schema *s = fnd(c, src, (i & 1) ? 4 : 8, key, len);
        if (!s || s->id != i || s->keywords != i || s->event_id != (uint16_t)i) bad_find++;
        /* the other width and the next source miss */
        if (fnd(c, src, (i & 1) ? 8 : 4, key, len)) bad_find++;
        if (fnd(c, (etw_schema_source)(1 + (i + 1) % 5), (i & 1) ? 4 : 8, key, len)) bad_find++;
        const etw_schema *g = etw_cache_get(c, i);
        if (g != s || strcmp(g->props[1].name, "b") != 0) bad_get++;
    }
    ETW_CHECK_INT(bad_find, 0);
    ETW_CHECK_INT(bad_get, 0);
    etw_cache_free(c);
}

/* A schema bigger than an arena block (about 80 KiB), so it always gets a block of its own, with 40 distinct maps (the
 * map-dedupe set then leaves the stack). */
typedef struct big_draft {
    etw_property p[1000];
    etw_map maps[40];
    etw_map_entry ents[40][3];
    char names[1000][48];
    etw_schema d;
} big_draft;

static void big_make(big_draft *b) {
    for (int i = 0; i < 1000; i++) {
        snprintf(b->names[i], sizeof b->names[i], "a_rather_long_property_name_number_%d", i);
        b->p[i] = prop(b->names[i], ETW_INTYPE_UINT32);
        if (i < 80) b->p[i].map = &b->maps[i % 40];
    }
    for (int m = 0; m < 40; m++) {
        for (int e = 0; e < 3; e++) {
            b->ents[m][e].value = (uint64_t)(3 - e); /* unsorted */
            b->ents[m][e].name = e == 0 ? "three" : e == 1 ? "two" : "one";
        }
        b->maps[m].name = "map";
        b->maps[m].flags = ETW_MAP_VALUEMAP;
        b->maps[m].count = 3;
        b->maps[m].entries = b->ents[m];
    }
    b->d = schema("Big", b->p, 1000, 1000);
}

static void big_check(const etw_schema *s) {
    ETW_CHECK(s != NULL);
    if (!s) return;
    ETW_CHECK_INT(s->prop_count, 1000);
    ETW_CHECK_STR(s->props[999].name, "a_rather_long_property_name_number_999");
    ETW_CHECK(s->props[0].map == s->props[40].map);
    ETW_CHECK(s->props[0].map != s->props[1].map);
    ETW_CHECK(s->props[100].map == NULL);
    ETW_CHECK_STR(s->props[79].map->entries[0].name, "one");
    ETW_CHECK_STR(s->props[79].map->entries[2].name, "three");
}

static void test_big_schema(void) {
    static big_draft b;
    big_make(&b);
    etw_cache *c = NULL;
    ETW_CHECK_INT(etw_cache_new(&c, NULL), ETW_OK);
    const etw_schema *small = ins(c, ETW_SOURCE_MANIFEST, 8, "s", 1, &b.d);
    for (int i = 0; i < 5; i++) {
        char k[16];
        snprintf(k, sizeof k, "b%d", i);
        big_check(ins(c, ETW_SOURCE_MANIFEST, 8, k, strlen(k), &b.d));
    }
    big_check(small);
    big_check(fnd(c, ETW_SOURCE_MANIFEST, 8, "b3", 2));
    etw_cache_free(c);
}

/* Fail the allocator at each step of one insert in turn. Scenario 0: the
 * first insert into a new cache (map slots, id array, the two pointer sets,
 * arena block).
 * Scenario 1: an insert that grows the map (16 -> 32 slots) and the id array
 * (64 -> 128) and needs a block of its own and both pointer sets. Scenario 2:
 * a replacement (no map growth). Mode 0 fails one call, mode 1 every call
 * from the Nth on. */
static void nomem_prepare(etw_cache *c, int scenario) {
    etw_property p[1] = {prop("x", ETW_INTYPE_UINT8)};
    etw_schema d = schema("Pre", p, 1, 1);
    uint8_t key[32];
    if (scenario == 0) return;
    for (uint32_t i = 0; i < 64; i++) {
        size_t len = make_key(key, sizeof key, i, 20);
        ins(c, i < 8 ? ETW_SOURCE_TRACELOGGING : ETW_SOURCE_MOF, 8, key, len, &d);
    }
}

static void test_nomem(void) {
    static big_draft b;
    big_make(&b);
    uint8_t key[32];
    size_t len = make_key(key, sizeof key, 5000, 32);
    for (int scenario = 0; scenario < 3; scenario++) {
        for (int mode = 0; mode < 2; mode++) {
            long n;
            int done = 0;
            for (n = 0; n < 64 && !done; n++) {
                test_alloc t;
                etw_allocator al = ta_make(&t);
                etw_cache *c = NULL;
                ETW_CHECK_INT(etw_cache_new(&c, &al), ETW_OK);
                nomem_prepare(c, scenario);
                const uint8_t *k = key;
                size_t kl = len;
                uint8_t rk[32];
                const etw_schema *prev = NULL;
                if (scenario == 2) {
                    kl = make_key(rk, sizeof rk, 3, 20); /* a TL key present already */
                    k = rk;
                    prev = fnd(c, ETW_SOURCE_TRACELOGGING, 8, k, kl);
                    ETW_CHECK(prev != NULL);
                }
                uint32_t before = etw_cache_count(c);
                ta_arm(&t, n, mode);
                const etw_schema *out = NULL;
                etw_status st = etw_cache_insert(c, ETW_SOURCE_TRACELOGGING, 8, k, kl,
                                                 etw_cache_hash(k, kl), &b.d, &out, NULL);
                ta_disarm(&t);
                if (t.failures == 0) {
                    ETW_CHECK_INT(st, ETW_OK);
                    big_check(out);
                    done = 1;
                } else {
                    ETW_CHECK_INT(st, ETW_E_NOMEM);
                    ETW_CHECK(out == NULL);
                    ETW_CHECK_INT(etw_cache_count(c), before);
                    ETW_CHECK(fnd(c, ETW_SOURCE_TRACELOGGING, 8, k, kl) == prev);
                    /* still usable */
                    out = NULL;
                    ETW_CHECK_INT(etw_cache_insert(c, ETW_SOURCE_TRACELOGGING, 8, k, kl,
                                                   etw_cache_hash(k, kl), &b.d, &out, NULL),
                                  ETW_OK);
                    big_check(out);
                    ETW_CHECK(fnd(c, ETW_SOURCE_TRACELOGGING, 8, k, kl) == out);
                    ETW_CHECK_INT(etw_cache_count(c), before + 1);
                }
                /* what was there before is intact */
                if (scenario != 0) {
                    uint8_t k2[32];
                    size_t l2 = make_key(k2, sizeof k2, 40, 20);
                    const etw_schema *s = fnd(c, ETW_SOURCE_MOF, 8, k2, l2);
                    ETW_CHECK(s && s->id == 40);
                }
                etw_cache_free(c);
                ETW_CHECK_INT(t.live, 0);
            }
            /* every step was failed once before the insert could succeed */
            ETW_CHECK(done);
            long steps = n - 1;
            /* (TraceLogging schemas are not in the id array)
             * 0: map slots, map set, string set, name set, name groups
             *    (etw_names.c), own block;
             * 1: map growth, map set, string set, name set, name groups,
             *    own block;
             * 2: map set, string set, name set, name groups, own block */
            if (scenario == 0) ETW_CHECK_INT(steps, 6);
            if (scenario == 1) ETW_CHECK_INT(steps, 6);
            if (scenario == 2) ETW_CHECK_INT(steps, 5);
        }
    }
    /* etw_cache_new itself */
    test_alloc t;
    etw_allocator al = ta_make(&t);
    ta_arm(&t, 0, 1);
    etw_cache *c = (etw_cache *)(uintptr_t)1;
    ETW_CHECK_INT(etw_cache_new(&c, &al), ETW_E_NOMEM);
    ETW_CHECK(c == NULL);
    ETW_CHECK_INT(t.live, 0);
}

static void test_negative_cache(void) {
    test_alloc t;
    etw_allocator al = ta_make(&t);
    etw_cache *c = NULL;
    ETW_CHECK_INT(etw_cache_new(&c, &al), ETW_OK);
    long live = t.live, total = t.total;
    etw_guid g = {7, 7, 7, {7}};
    uint8_t k[ETW_DESCRIPTOR_KEY_SIZE], k2[ETW_DESCRIPTOR_KEY_SIZE];
    etw_key_descriptor(k, &g, 1, 0);
    etw_key_descriptor(k2, &g, 2, 0);
    uint64_t h = etw_cache_hash(k, sizeof k), h2 = etw_cache_hash(k2, sizeof k2);

    ETW_CHECK(!etw_cache_miss_known(c, k, sizeof k, h));
    etw_cache_miss_note(c, k, sizeof k, h);
    ETW_CHECK(etw_cache_miss_known(c, k, sizeof k, h));
    ETW_CHECK(!etw_cache_miss_known(c, k2, sizeof k2, h2));
    /* same hash, other bytes: compared in full */
    ETW_CHECK(!etw_cache_miss_known(c, k2, sizeof k2, h));
    ETW_CHECK(!etw_cache_miss_known(c, k, sizeof k - 1, h));
    /* a key with the same hash evicts the older one */
    etw_cache_miss_note(c, k2, sizeof k2, h);
    ETW_CHECK(etw_cache_miss_known(c, k2, sizeof k2, h));
    ETW_CHECK(!etw_cache_miss_known(c, k, sizeof k, h));
    etw_cache_miss_clear(c);
    ETW_CHECK(!etw_cache_miss_known(c, k2, sizeof k2, h));

    /* 32 bytes are remembered, 33 are not */
    uint8_t big[33];
    memset(big, 0xaa, sizeof big);
    etw_cache_miss_note(c, big, 32, etw_cache_hash(big, 32));
    ETW_CHECK(etw_cache_miss_known(c, big, 32, etw_cache_hash(big, 32)));
    etw_cache_miss_note(c, big, 33, etw_cache_hash(big, 33));
    ETW_CHECK(!etw_cache_miss_known(c, big, 33, etw_cache_hash(big, 33)));
    /* the empty key */
    etw_cache_miss_note(c, NULL, 0, etw_cache_hash(NULL, 0));
    ETW_CHECK(etw_cache_miss_known(c, NULL, 0, etw_cache_hash(NULL, 0)));

    /* a flood of misses allocates nothing; the latest one is remembered */
    uint32_t recalled = 0;
    for (uint32_t i = 0; i < 1000000; i++) {
        etw_guid gi = {i, 1, 2, {3}};
        etw_key_descriptor(k, &gi, (uint16_t)i, 1);
        uint64_t hi = etw_cache_hash(k, sizeof k);
        etw_cache_miss_note(c, k, sizeof k, hi);
        recalled += (uint32_t)etw_cache_miss_known(c, k, sizeof k, hi);
    }
    ETW_CHECK_INT(recalled, 1000000);
    ETW_CHECK_INT(t.live, live);
    ETW_CHECK_INT(t.total, total); /* no allocation at all */
    /* recent distinct misses mostly survive (direct-mapped, 1024 slots) */
    uint32_t known = 0;
    for (uint32_t i = 1000000 - 100; i < 1000000; i++) {
        etw_guid gi = {i, 1, 2, {3}};
        etw_key_descriptor(k, &gi, (uint16_t)i, 1);
        known += (uint32_t)etw_cache_miss_known(c, k, sizeof k, etw_cache_hash(k, sizeof k));
    }
    ETW_CHECK(known >= 80);
    etw_cache_miss_clear(c);
    known = 0;
    for (uint32_t i = 1000000 - 100; i < 1000000; i++) {
        etw_guid gi = {i, 1, 2, {3}};
        etw_key_descriptor(k, &gi, (uint16_t)i, 1);
        known += (uint32_t)etw_cache_miss_known(c, k, sizeof k, etw_cache_hash(k, sizeof k));
    }
    ETW_CHECK_INT(known, 0);
    /* many clears (the generation counter) keep working */
    for (int i = 0; i < 100000; i++) etw_cache_miss_clear(c);
    etw_cache_miss_note(c, k, sizeof k, 1);
    ETW_CHECK(etw_cache_miss_known(c, k, sizeof k, 1));
    etw_cache_miss_clear(c);
    ETW_CHECK(!etw_cache_miss_known(c, k, sizeof k, 1));
    /* the negative cache and the maps are independent */
    ETW_CHECK(fnd(c, ETW_SOURCE_MANIFEST, 8, k, sizeof k) == NULL);
    etw_cache_free(c);
    ETW_CHECK_INT(t.live, 0);
}

static void test_bad_args(void) {
    etw_cache *c = NULL;
    ETW_CHECK_INT(etw_cache_new(NULL, NULL), ETW_E_INVALID_ARG);
    ETW_CHECK_INT(etw_cache_new(&c, NULL), ETW_OK);
    etw_property p[1] = {prop("x", ETW_INTYPE_UINT8)};
    etw_schema d = schema("E", p, 1, 1);
    const etw_schema *out;
    ETW_CHECK_INT(etw_cache_insert(NULL, ETW_SOURCE_MANIFEST, 8, "k", 1, 1, &d, &out, NULL),
                  ETW_E_INVALID_ARG);
    ETW_CHECK_INT(etw_cache_insert(c, ETW_SOURCE_NONE, 8, "k", 1, 1, &d, &out, NULL),
                  ETW_E_INVALID_ARG);
    ETW_CHECK_INT(etw_cache_insert(c, (etw_schema_source)(ETW_SOURCE_WPP + 1), 8, "k", 1, 1, &d, &out, NULL),
                  ETW_E_INVALID_ARG);
    ETW_CHECK_INT(etw_cache_insert(c, ETW_SOURCE_MANIFEST, 8, NULL, 1, 1, &d, &out, NULL),
                  ETW_E_INVALID_ARG);
    ETW_CHECK_INT(etw_cache_insert(c, ETW_SOURCE_MANIFEST, 8, "k", 1, 1, NULL, &out, NULL),
                  ETW_E_INVALID_ARG);
    ETW_CHECK_INT(etw_cache_count(c), 0);
    /* out may be NULL */
    ETW_CHECK_INT(etw_cache_insert(c, ETW_SOURCE_MANIFEST, 8, "k", 1, 1, &d, NULL, NULL), ETW_OK);
    ETW_CHECK(etw_cache_find(c, ETW_SOURCE_MANIFEST, 8, "k", 1, 1) == etw_cache_get(c, 0));
    ETW_CHECK(etw_cache_find(c, ETW_SOURCE_NONE, 8, "k", 1, 1) == NULL);
    ETW_CHECK(etw_cache_find(c, (etw_schema_source)9, 8, "k", 1, 1) == NULL);
    ETW_CHECK(etw_cache_find(NULL, ETW_SOURCE_MANIFEST, 8, "k", 1, 1) == NULL);
    ETW_CHECK(etw_cache_find(c, ETW_SOURCE_MANIFEST, 8, NULL, 1, 1) == NULL);
    ETW_CHECK_INT(etw_cache_count(NULL), 0);
    ETW_CHECK(etw_cache_get(NULL, 0) == NULL);
    ETW_CHECK(!etw_cache_miss_known(NULL, "k", 1, 1));
    etw_cache_miss_note(NULL, "k", 1, 1);
    etw_cache_miss_clear(NULL);
    etw_cache_free(c);
    etw_cache_free(NULL);
}

/* A replaced provider's keys vanish from one source's maps (both widths);
 * other providers and sources keep theirs; schemas stay readable by id. */
static void test_forget_provider(void) {
    etw_cache *c = NULL;
    ETW_CHECK_INT(etw_cache_new(&c, NULL), ETW_OK);
    etw_property p1[1] = {prop("x", ETW_INTYPE_UINT32)};
    etw_schema d = schema("E", p1, 1, 1);
    etw_guid a = {0xaaaa, 2, 3, {4, 5, 6, 7, 8, 9, 10, 11}};
    etw_guid b = {0xbbbb, 2, 3, {4, 5, 6, 7, 8, 9, 10, 11}};
    uint8_t k[ETW_DESCRIPTOR_KEY_SIZE];
    for (uint16_t id = 0; id < 500; id++) {
        for (int w = 4; w <= 8; w += 4) {
            etw_key_descriptor(k, &a, id, 0);
            ins(c, ETW_SOURCE_EVENTSOURCE, (uint8_t)w, k, sizeof k, &d);
            ins(c, ETW_SOURCE_MANIFEST, (uint8_t)w, k, sizeof k, &d);
            etw_key_descriptor(k, &b, id, 0);
            ins(c, ETW_SOURCE_EVENTSOURCE, (uint8_t)w, k, sizeof k, &d);
        }
    }
    uint32_t before = etw_cache_count(c);
    etw_cache_forget_provider(c, ETW_SOURCE_EVENTSOURCE, &a);
    int a_left = 0, b_found = 0, other_source = 0;
    for (uint16_t id = 0; id < 500; id++) {
        for (int w = 4; w <= 8; w += 4) {
            etw_key_descriptor(k, &a, id, 0);
            uint64_t h = etw_cache_hash(k, sizeof k);
            a_left += etw_cache_find(c, ETW_SOURCE_EVENTSOURCE, (uint8_t)w, k, sizeof k, h) != NULL;
            other_source += etw_cache_find(c, ETW_SOURCE_MANIFEST, (uint8_t)w, k, sizeof k, h) != NULL;
            etw_key_descriptor(k, &b, id, 0);
            h = etw_cache_hash(k, sizeof k);
            b_found += etw_cache_find(c, ETW_SOURCE_EVENTSOURCE, (uint8_t)w, k, sizeof k, h) != NULL;
        }
    }
    ETW_CHECK_INT(a_left, 0);
    ETW_CHECK_INT(b_found, 1000);
    ETW_CHECK_INT(other_source, 1000);
    ETW_CHECK_INT(etw_cache_count(c), before);
    ETW_CHECK_STR(etw_cache_get(c, 0)->event_name, "E");
    /* the keys can be inserted again */
    etw_key_descriptor(k, &a, 7, 0);
    ETW_CHECK(ins(c, ETW_SOURCE_EVENTSOURCE, 8, k, sizeof k, &d) != NULL);
    etw_cache_free(c);
}

/* The TraceLogging budget: 200k distinct one-field schemas (each key a
 * 40-byte metadata blob) through a 1 MiB budget. The memory the cache holds
 * (counted by the allocator: blocks live) stays bounded, the newest schemas
 * are found, the dropped ones are not, other sources are untouched, and a
 * hit in either generation allocates nothing. */
static void test_tl_budget(void) {
    test_alloc t;
    etw_allocator al = ta_make(&t);
    etw_cache *c = NULL;
    ETW_CHECK_INT(etw_cache_new(&c, &al), ETW_OK);
    ETW_CHECK_INT(etw_cache_set_tl_budget(c, ((size_t)1 << 20) - 1), ETW_E_INVALID_ARG);
    ETW_CHECK_INT(etw_cache_set_tl_budget(c, (size_t)1 << 20), ETW_OK);
    etw_property p = prop("F", ETW_INTYPE_UINT32);
    etw_schema d = schema("E", &p, 1, 1);
    uint8_t mk[32];
    size_t ml = make_key(mk, sizeof mk, 7, 20);
    const etw_schema *mof = ins(c, ETW_SOURCE_MOF, 8, mk, ml, &d);
    uint8_t k[40];
    long most_live = 0;
    const uint32_t n = 200000;
    for (uint32_t i = 0; i < n; i++) {
        size_t kl = make_key(k, sizeof k, i, sizeof k);
        const etw_schema *s = ins(c, ETW_SOURCE_TRACELOGGING, 8, k, kl, &d);
        if (!s) break;
        ETW_CHECK(s->id == i + 1); /* ids are never reused */
        if (t.live > most_live) most_live = t.live;
    }
    const etw_cache_tl_stats *st = etw_cache_tl_stats_get(c);
    ETW_CHECK(st->generations > 10);
    ETW_CHECK(st->bytes <= ((size_t)1 << 20) + 64 * 1024);
    ETW_CHECK_INT(st->live + st->evicted, n);
    /* the allocations held: at most a budget's worth of 64 KiB blocks and
     * four maps, plus the cache and the other sources' few */
    ETW_CHECK(most_live < 40);
    /* the newest schema is found, the first one is gone, MOF stays */
    size_t kl = make_key(k, sizeof k, n - 1, sizeof k);
    const etw_schema *last = fnd(c, ETW_SOURCE_TRACELOGGING, 8, k, kl);
    ETW_CHECK(last && last->id == n);
    kl = make_key(k, sizeof k, 0, sizeof k);
    ETW_CHECK(fnd(c, ETW_SOURCE_TRACELOGGING, 8, k, kl) == NULL);
    ETW_CHECK(fnd(c, ETW_SOURCE_MOF, 8, mk, ml) == mof);
    ETW_CHECK(etw_cache_get(c, 0) == mof);
    ETW_CHECK(etw_cache_get(c, 1) == NULL);
    ETW_CHECK(etw_cache_get(c, n) == last);
    /* a schema in the older generation is still found: insert until one
     * rotation happened, then look the pre-rotation schema up */
    uint64_t gens = st->generations;
    uint32_t i = n;
    const etw_schema *before = last;
    while (etw_cache_tl_stats_get(c)->generations == gens) {
        kl = make_key(k, sizeof k, i++, sizeof k);
        ins(c, ETW_SOURCE_TRACELOGGING, 8, k, kl, &d);
    }
    kl = make_key(k, sizeof k, n - 1, sizeof k);
    long calls = t.total;
    ETW_CHECK(fnd(c, ETW_SOURCE_TRACELOGGING, 8, k, kl) == before);
    ETW_CHECK(fnd(c, ETW_SOURCE_TRACELOGGING, 4, k, kl) == NULL); /* the width is part of the key */
    ETW_CHECK_INT(t.total, calls);
    etw_cache_free(c);
    ETW_CHECK_INT(t.live, 0);
}

/* The TraceLogging negative cache keeps keys of any length whole: a long
 * key is known after a note, a key differing in its last byte only (same
 * length, checked against a forced equal hash) is not, and the copies stay
 * under 1 MiB however many are noted. */
static void test_tl_negative(void) {
    test_alloc t;
    etw_allocator al = ta_make(&t);
    etw_cache *c = NULL;
    ETW_CHECK_INT(etw_cache_new(&c, &al), ETW_OK);
    static uint8_t k[4000], k2[4000];
    for (size_t i = 0; i < sizeof k; i++) k[i] = (uint8_t)(i * 7u + 1u);
    memcpy(k2, k, sizeof k);
    k2[sizeof k2 - 1] ^= 1u;
    uint64_t h = etw_cache_hash(k, sizeof k);
    etw_status st = ETW_OK;
    ETW_CHECK(etw_cache_tl_miss_known(c, k, sizeof k, h, &st) == NULL);
    etw_cache_tl_miss_note(c, k, sizeof k, h, "bad field", ETW_E_TRUNCATED);
    ETW_CHECK_STR(etw_cache_tl_miss_known(c, k, sizeof k, h, &st), "bad field");
    ETW_CHECK_INT(st, ETW_E_TRUNCATED);
    ETW_CHECK(etw_cache_tl_miss_known(c, k2, sizeof k2, h, NULL) == NULL); /* same hash, other bytes */
    ETW_CHECK(etw_cache_tl_miss_known(c, k, sizeof k - 1, h, NULL) == NULL);
    /* the descriptor negative cache is another table */
    ETW_CHECK(!etw_cache_miss_known(c, k, 19, etw_cache_hash(k, 19)));
    etw_cache_miss_clear(c); /* does not forget TraceLogging misses */
    ETW_CHECK_STR(etw_cache_tl_miss_known(c, k, sizeof k, h, NULL), "bad field");
    /* 5000 distinct 4000-byte keys: 20 MB noted, at most 1 MiB kept */
    long most = 0;
    for (uint32_t i = 0; i < 5000; i++) {
        memcpy(k2, &i, sizeof i);
        etw_cache_tl_miss_note(c, k2, sizeof k2, etw_cache_hash(k2, sizeof k2), "x", ETW_E_CORRUPT);
        if (t.live > most) most = t.live;
    }
    ETW_CHECK(most <= 1 + (long)(((size_t)1 << 20) / sizeof k2) + 1);
    uint32_t last = 4999;
    memcpy(k2, &last, sizeof last);
    ETW_CHECK_STR(etw_cache_tl_miss_known(c, k2, sizeof k2, etw_cache_hash(k2, sizeof k2), NULL), "x");
    etw_cache_free(c);
    ETW_CHECK_INT(t.live, 0);
}

int main(void) {
    ETW_RUN(test_key_descriptor);
    ETW_RUN(test_hit_miss);
    ETW_RUN(test_pointer_width);
    ETW_RUN(test_tracelogging_keys);
    ETW_RUN(test_forced_collision);
    ETW_RUN(test_replacement);
    ETW_RUN(test_ids_across_sources);
    ETW_RUN(test_deep_copy);
    ETW_RUN(test_optional_strings_null);
    ETW_RUN(test_shared_strings);
    ETW_RUN(test_validation);
    ETW_RUN(test_validation_large);
    ETW_RUN(test_many);
    ETW_RUN(test_big_schema);
    ETW_RUN(test_nomem);
    ETW_RUN(test_negative_cache);
    ETW_RUN(test_bad_args);
    ETW_RUN(test_forget_provider);
    ETW_RUN(test_tl_budget);
    ETW_RUN(test_tl_negative);
    return ETW_TEST_DONE();
}
