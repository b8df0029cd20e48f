/* test_names.c - the names a cached schema keeps (etw_names.h): unique among
 * siblings with the "_N" suffix rule, at most ETW_NAME_MAX bytes cut at a
 * character boundary, in the cache and in the JSON of an event (issues 9.3
 * and 9.6). */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "etw_test.h"
#include "etwdecode/etw_decode.h"
#include "format/etw_fields_json.h"
#include "format/etw_text.h"
#include "schema/etw_cache.h"
#include "schema/etw_names.h"

static etw_property P(const char *name) {
    etw_property p;
    memset(&p, 0, sizeof p);
    p.name = name;
    p.in_type = ETW_INTYPE_UINT8;
    return p;
}

static etw_property PSTRUCT(const char *name, uint16_t first, uint16_t count) {
    etw_property p = P(name);
    p.in_type = 0;
    p.flags = ETW_PROP_STRUCT;
    p.struct_first = first;
    p.struct_count = count;
    return p;
}

static const etw_schema *put(etw_cache *c, const char *key, etw_property *props, uint16_t n,
                             uint16_t top) {
    etw_schema d;
    memset(&d, 0, sizeof d);
    d.event_name = "E";
    d.props = props;
    d.prop_count = n;
    d.top_count = top;
    const etw_schema *out = NULL;
    ETW_CHECK_INT(etw_cache_insert(c, ETW_SOURCE_EVENTSOURCE, 8, key, strlen(key),
                                   etw_cache_hash(key, strlen(key)), &d, &out, NULL),
                  ETW_OK);
    return out;
}

/* The fields JSON of schema s over payload. */
static const char *fields(const etw_schema *s, const void *payload, uint32_t len) {
    static etw_text t;
    static int ready;
    static uint64_t refs[1024];
    if (!ready) {
        etw_text_init(&t, NULL);
        ready = 1;
    }
    etw_event ev;
    memset(&ev, 0, sizeof ev);
    ev.form = ETW_FORM_EVENT_HEADER;
    ev.pointer_size = 8;
    ev.user_data = payload;
    ev.user_data_len = len;
    etw_text_clear(&t);
    etw_fields_json(&t, s, &ev, refs, 1024);
    return etw_text_cstr(&t);
}

static void test_suffix_rule(void) {
    etw_cache *c;
    ETW_CHECK_INT(etw_cache_new(&c, NULL), ETW_OK);
    /* dup, dup, dup -> dup, dup_2, dup_3 (the issue's {"dup":1,"dup":2}) */
    etw_property a[] = {P("dup"), P("dup"), P("dup")};
    const etw_schema *s = put(c, "a", a, 3, 3);
    ETW_CHECK_STR(s->props[0].name, "dup");
    ETW_CHECK_STR(s->props[1].name, "dup_2");
    ETW_CHECK_STR(s->props[2].name, "dup_3");
    ETW_CHECK_STR(fields(s, "\x01\x02\x03", 3), "{\"dup\":1,\"dup_2\":2,\"dup_3\":3}");
    /* a sibling that already has the suffixed name is stepped over, even a
     * later one: dup, dup, dup_2 -> dup, dup_3, dup_2 */
    etw_property b[] = {P("dup"), P("dup"), P("dup_2"), P("dup"), P("dup_4")};
    s = put(c, "b", b, 5, 5);
    ETW_CHECK_STR(s->props[0].name, "dup");
    ETW_CHECK_STR(s->props[1].name, "dup_3");
    ETW_CHECK_STR(s->props[2].name, "dup_2");
    ETW_CHECK_STR(s->props[3].name, "dup_5");
    ETW_CHECK_STR(s->props[4].name, "dup_4");
    /* original names are claimed first: the second x steps over x_2 to
     * x_3, and the repeated x_2 becomes x_2_2 */
    etw_property b2[] = {P("x"), P("x_2"), P("x"), P("x_2")};
    s = put(c, "b2", b2, 4, 4);
    ETW_CHECK_STR(s->props[0].name, "x");
    ETW_CHECK_STR(s->props[1].name, "x_2");
    ETW_CHECK_STR(s->props[2].name, "x_3");
    ETW_CHECK_STR(s->props[3].name, "x_2_2");
    /* siblings only: the same name at the top level and in a struct, and in
     * two structs, is kept; twice in one struct is not */
    etw_property d[] = {PSTRUCT("s", 3, 2), P("a"), PSTRUCT("t", 5, 1), P("a"), P("a"), P("a")};
    s = put(c, "d", d, 6, 3);
    ETW_CHECK_STR(s->props[1].name, "a");
    ETW_CHECK_STR(s->props[3].name, "a");
    ETW_CHECK_STR(s->props[4].name, "a_2");
    ETW_CHECK_STR(s->props[5].name, "a");
    ETW_CHECK_STR(fields(s, "\x01\x02\x03\x04", 4), "{\"s\":{\"a\":1,\"a_2\":2},\"a\":3,\"t\":{\"a\":4}}");
    /* no duplicate: nothing renamed, names shared as before */
    etw_property e[] = {P("one"), P("two")};
    s = put(c, "e", e, 2, 2);
    ETW_CHECK_STR(s->props[0].name, "one");
    ETW_CHECK_STR(s->props[1].name, "two");
    etw_cache_free(c);
}

static void test_long_names(void) {
    etw_cache *c;
    ETW_CHECK_INT(etw_cache_new(&c, NULL), ETW_OK);
    /* 1 MB names (the EventSource names with no cap) */
    size_t big = 1u << 20;
    char *n1 = malloc(big + 1), *n2 = malloc(big + 1);
    memset(n1, 'N', big);
    n1[big] = 0;
    memcpy(n2, n1, big + 1);
    n2[big - 1] = 'M'; /* differs only past the cut: a duplicate once cut */
    /* a name whose cut would split a character: 511 'u' then U+00E9 */
    char n3[520];
    memset(n3, 'u', 511);
    memcpy(n3 + 511, "\xc3\xa9zz", 5);
    etw_property p[] = {P(n1), P(n2), P(n3)};
    const etw_schema *s = put(c, "long", p, 3, 3);
    ETW_CHECK_INT(strlen(s->props[0].name), ETW_NAME_MAX);
    ETW_CHECK(strncmp(s->props[0].name, n1, ETW_NAME_MAX) == 0);
    ETW_CHECK_INT(strlen(s->props[1].name), ETW_NAME_MAX + 2);
    ETW_CHECK_STR(s->props[1].name + ETW_NAME_MAX, "_2");
    ETW_CHECK_INT(strlen(s->props[2].name), 511);
    /* event, task and map names are cut too */
    etw_map_entry ent = {5, n1};
    etw_map m = {n1, ETW_MAP_VALUEMAP, 1, &ent};
    etw_property q = P("v");
    q.map = &m;
    etw_schema d;
    memset(&d, 0, sizeof d);
    d.event_name = n1;
    d.task_name = n2;
    d.opcode_name = n3;
    d.provider_name = n1;
    d.message = n1; /* a message is not a name: kept whole */
    d.props = &q;
    d.prop_count = 1;
    d.top_count = 1;
    const etw_schema *out = NULL;
    ETW_CHECK_INT(etw_cache_insert(c, ETW_SOURCE_MANIFEST, 8, "m", 1, etw_cache_hash("m", 1), &d, &out, NULL),
                  ETW_OK);
    ETW_CHECK_INT(strlen(out->event_name), ETW_NAME_MAX);
    ETW_CHECK_INT(strlen(out->task_name), ETW_NAME_MAX);
    ETW_CHECK_INT(strlen(out->opcode_name), 511);
    ETW_CHECK_INT(strlen(out->provider_name), ETW_NAME_MAX);
    ETW_CHECK_INT(strlen(out->message), big);
    ETW_CHECK_INT(strlen(out->props[0].map->name), ETW_NAME_MAX);
    ETW_CHECK_INT(strlen(out->props[0].map->entries[0].name), ETW_NAME_MAX);
    /* the JSON of one field named by a 1 MB name: ~520 bytes, not 1 MB */
    const char *j = fields(s, "\x01\x02\x03", 3);
    ETW_CHECK(strlen(j) < 3 * (ETW_NAME_MAX + 8) + 2);
    free(n1);
    free(n2);
    etw_cache_free(c);
}

static void test_many_duplicates(void) {
    /* 65535 properties all named "d": renamed d, d_2 .. d_65535 in linear
     * time (a quadratic search would take minutes) */
    enum { N = 65535 };
    etw_property *p = malloc(N * sizeof *p);
    for (int i = 0; i < N; i++) p[i] = P("d");
    etw_cache *c;
    ETW_CHECK_INT(etw_cache_new(&c, NULL), ETW_OK);
    clock_t t0 = clock();
    const etw_schema *s = put(c, "many", p, N, N);
    ETW_CHECK(clock() - t0 < CLOCKS_PER_SEC);
    ETW_CHECK_STR(s->props[0].name, "d");
    ETW_CHECK_STR(s->props[1].name, "d_2");
    ETW_CHECK_STR(s->props[N - 1].name, "d_65535");
    etw_cache_free(c);
    free(p);
}

static void test_cut_len(void) {
    ETW_CHECK_INT(etw_name_cut_len("", 4), 0);
    ETW_CHECK_INT(etw_name_cut_len("abcd", 4), 4);
    ETW_CHECK_INT(etw_name_cut_len("abcde", 4), 4);
    ETW_CHECK_INT(etw_name_cut_len("ab\xc3\xa9", 3), 2);   /* é would be split */
    ETW_CHECK_INT(etw_name_cut_len("ab\xc3\xa9z", 4), 4);  /* é fits */
    ETW_CHECK_INT(etw_name_cut_len("a\xe2\x82\xac", 3), 1); /* € (3 bytes) would be split */
    ETW_CHECK_INT(etw_name_cut_len("\x80\x80\x80\x80\x80", 3), 0); /* stray continuations */
}

int main(void) {
    ETW_RUN(test_suffix_rule);
    ETW_RUN(test_long_names);
    ETW_RUN(test_many_duplicates);
    ETW_RUN(test_cut_len);
    return ETW_TEST_DONE();
}
