/* test_builtin.c - the manifests compiled into the library
 * (src/source/etw_builtin_manifests.c) and their place in the decoder:
 * the CLR's providers are known without any file, lazily, below every other
 * schema source, and not at all with no_default_manifests.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "etw_test.h"
#include "etw_test_builder.h"
#include "etwdecode/etw_decode.h"
#include "etwdecode/etw_decoder.h"
#include "etwdecode/etw_reader.h"
#include "common/etw_thread.h"
#include "schema/etw_cache.h"
#include "source/etw_builtin_manifests.h"
#include "source/etw_manifest.h"
#include "source/etw_manifest_ext.h"

static const etw_guid CLR = {0xe13c0d23, 0xccbc, 0x4e12, {0x93, 0x1b, 0xd9, 0xcc, 0x2e, 0xee, 0x27, 0xe4}};
static const etw_guid RUNDOWN = {0xa669021c, 0xc450, 0x4609, {0xa0, 0x35, 0x5a, 0xf5, 0x9a, 0xf4, 0xdf, 0x18}};
static const etw_guid STRESS = {0xcc2bcbba, 0x16b6, 0x4cf3, {0x89, 0x90, 0xd7, 0x4c, 0x2e, 0x8a, 0xf5, 0x00}};
static const etw_guid PRIVATE = {0x763fd754, 0x7086, 0x4dfe, {0x95, 0xeb, 0xc0, 0x1a, 0x46, 0xfa, 0xf4, 0xca}};
static const etw_guid MONO = {0x7f442d82, 0x0f1d, 0x5155, {0x4b, 0x8c, 0x15, 0x29, 0xeb, 0x2e, 0x31, 0xc2}};
static const etw_guid OTHER = {0x12345678, 0x1234, 0x5678, {0x9a, 0xbc, 0xde, 0xf0, 0x12, 0x34, 0x56, 0x78}};

static etw_manifest_set *new_set(etw_schema_source kind) {
    etw_manifest_options mo;
    memset(&mo, 0, sizeof mo);
    mo.kind = kind;
    etw_manifest_set *m = NULL;
    ETW_CHECK_INT(etw_manifest_set_new(&m, &mo), ETW_OK);
    return m;
}

/* A decoder; b: the built-ins it shares (NULL: its own). */
static etw_decoder *new_decoder_with(int no_default, etw_builtins *b) {
    etw_decoder_options o;
    memset(&o, 0, sizeof o);
    o.no_default_manifests = no_default;
    o.builtins = b;
    etw_decoder *d = NULL;
    ETW_CHECK_INT(etw_decoder_new(&d, &o), ETW_OK);
    return d;
}

static etw_decoder *new_decoder(int no_default) { return new_decoder_with(no_default, NULL); }

static uint64_t fnv1a64(const char *s, size_t n) {
    uint64_t h = UINT64_C(14695981039346656037);
    for (size_t i = 0; i < n; i++) h = (h ^ (unsigned char)s[i]) * UINT64_C(1099511628211);
    return h;
}

/* The embedded records were made from the shipped file, which is the test
 * copy (tests/test_manifest_replay.c checks they give its schemas). */
static void test_embedded_bytes(void) {
    ETW_CHECK_INT(etw_builtin_manifest_count(), 1);
    etw_builtin_manifest b;
    ETW_CHECK_INT(etw_builtin_manifest_get(0, &b), ETW_OK);
    ETW_CHECK_INT(etw_builtin_manifest_get(1, &b), ETW_E_NOT_FOUND);
    ETW_CHECK_INT(etw_builtin_manifest_get(0, &b), ETW_OK);
    ETW_CHECK_STR(b.name, "ClrEtwAll.man");
    ETW_CHECK_INT(b.nproviders, 5);
    ETW_CHECK(b.rec != NULL && b.rec_len > 4 && memcmp(b.rec, "EMR1", 4) == 0);
    ETW_CHECK(b.rec_len < b.xml_len / 2); /* ClrEtwAll.man: 267 KB of records for 723 KB of XML */
    /* one part per provider, back to back, each a whole manifest */
    ETW_CHECK_INT(b.nparts, 5);
    size_t sum = 0;
    for (size_t j = 0; j < b.nparts; j++) {
        const unsigned char *rec = NULL;
        size_t len = 0;
        ETW_CHECK_INT(etw_builtin_manifest_part(&b, j, &rec, &len), ETW_OK);
        ETW_CHECK(rec == b.rec + sum && len > 4 && memcmp(rec, "EMR1", 4) == 0);
        sum += len;
    }
    ETW_CHECK_INT(sum, b.rec_len);
    const unsigned char *past = NULL;
    size_t past_len = 0;
    ETW_CHECK_INT(etw_builtin_manifest_part(&b, 5, &past, &past_len), ETW_E_NOT_FOUND);
    ETW_CHECK_INT(etw_builtin_manifest_part(NULL, 0, &past, &past_len), ETW_E_NOT_FOUND);
    const char *paths[] = {ETW_TEST_DATA_DIR "/../../data/manifests/ClrEtwAll.man",
                           ETW_TEST_DATA_DIR "/ClrEtwAll.man"};
    for (size_t i = 0; i < 2; i++) {
        size_t len = 0;
        char *file = etw_test_read_file(paths[i], &len);
        ETW_CHECK(file != NULL);
        if (!file) continue;
        ETW_CHECK_INT(len, b.xml_len);
        ETW_CHECK(fnv1a64(file, len) == b.xml_fnv);
        free(file);
    }
}

/* The provider list of the table is what the manifest declares. */
static void test_providers(void) {
    etw_manifest_set *m = new_set(ETW_SOURCE_BUILTIN);
    uint32_t np = 0;
    ETW_CHECK_INT(etw_builtin_manifests_load_all(m, &np), ETW_OK);
    ETW_CHECK_INT(np, 5);
    ETW_CHECK_INT(etw_manifest_provider_count(m), 5);
    ETW_CHECK(etw_manifest_event_count(m) > 400);
    struct {
        const etw_guid *g;
        const char *name;
    } want[] = {{&CLR, "Microsoft-Windows-DotNETRuntime"},
                {&RUNDOWN, "Microsoft-Windows-DotNETRuntimeRundown"},
                {&STRESS, "Microsoft-Windows-DotNETRuntimeStress"},
                {&PRIVATE, "Microsoft-Windows-DotNETRuntimePrivate"},
                {&MONO, "Microsoft-DotNETRuntimeMonoProfiler"}};
    etw_builtin_manifest b;
    ETW_CHECK_INT(etw_builtin_manifest_get(0, &b), ETW_OK);
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        const char *name = NULL, *origin = NULL;
        ETW_CHECK(etw_manifest_provider_info(m, want[i].g, &name, &origin));
        ETW_CHECK_STR(name, want[i].name);
        ETW_CHECK_STR(origin, "the built-in ClrEtwAll.man");
        ETW_CHECK(etw_guid_equal(&b.providers[i], want[i].g));
        etw_builtin_manifest f;
        ETW_CHECK_INT(etw_builtin_manifest_find(want[i].g, &f), ETW_OK);
        ETW_CHECK_STR(f.name, "ClrEtwAll.man");
    }
    ETW_CHECK_INT(etw_builtin_manifest_find(&OTHER, NULL), ETW_E_NOT_FOUND);
    ETW_CHECK_INT(etw_builtin_manifest_find(NULL, NULL), ETW_E_NOT_FOUND);
    etw_manifest_set_free(m);
}

/* Each part alone loads its provider, and nothing else. */
static void test_parts(void) {
    etw_builtin_manifest b;
    ETW_CHECK_INT(etw_builtin_manifest_get(0, &b), ETW_OK);
    etw_manifest_set *all = new_set(ETW_SOURCE_BUILTIN);
    ETW_CHECK_INT(etw_builtin_manifests_load_all(all, NULL), ETW_OK);
    uint32_t events = 0;
    for (size_t j = 0; j < b.nparts; j++) {
        const unsigned char *rec = NULL;
        size_t len = 0;
        ETW_CHECK_INT(etw_builtin_manifest_part(&b, j, &rec, &len), ETW_OK);
        etw_manifest_set *m = new_set(ETW_SOURCE_BUILTIN);
        uint32_t np = 0;
        ETW_CHECK_INT(etw_manifest_load_replay(m, rec, len, "the built-in ClrEtwAll.man", &np), ETW_OK);
        ETW_CHECK_INT(np, 1);
        ETW_CHECK_INT(etw_manifest_provider_count(m), 1);
        ETW_CHECK(etw_manifest_has_provider(m, &b.providers[j]));
        ETW_CHECK_INT(etw_manifest_problem_count(m), 0);
        events += etw_manifest_event_count(m);
        etw_manifest_set_free(m);
    }
    /* the parts hold every event once (tests/test_manifest_replay.c compares
     * them with the XML, schema by schema) */
    ETW_CHECK_INT(events, etw_manifest_event_count(all));
    ETW_CHECK(events > 400);
    etw_manifest_set_free(all);
}

/* The lazy loader parses a provider's part once, for that provider only. */
static void test_lazy(void) {
    etw_manifest_set *m = new_set(ETW_SOURCE_BUILTIN);
    etw_builtin_loader st;
    memset(&st, 0, sizeof st);
    ETW_CHECK_INT(etw_builtin_manifests_attach(m, &st), ETW_OK);
    ETW_CHECK_INT(etw_builtin_manifests_attach(NULL, &st), ETW_E_INVALID_ARG);
    ETW_CHECK(!etw_manifest_has_provider(m, &OTHER));
    ETW_CHECK_INT(etw_manifest_provider_count(m), 0); /* nothing parsed */
    ETW_CHECK_INT(st.tried, 0);
    ETW_CHECK(etw_manifest_has_provider(m, &RUNDOWN));
    ETW_CHECK_INT(etw_manifest_provider_count(m), 1); /* its part alone */
    ETW_CHECK_INT(st.tried, 1u << 1);
    ETW_CHECK_INT(st.loaded, 1u << 1);
    ETW_CHECK(etw_manifest_has_provider(m, &RUNDOWN)); /* already there */
    ETW_CHECK_INT(st.tried, 1u << 1);
    ETW_CHECK(etw_manifest_has_provider(m, &CLR)); /* the next part, into the same set */
    ETW_CHECK_INT(etw_manifest_provider_count(m), 2);
    ETW_CHECK_INT(st.tried, 3);
    ETW_CHECK_INT(st.loaded, 3);
    ETW_CHECK(!etw_manifest_has_provider(m, &OTHER));
    ETW_CHECK_INT(etw_manifest_provider_count(m), 2);
    /* the loader itself: a part is tried once */
    ETW_CHECK_INT(etw_builtin_manifests_lazy(&st, m, &CLR), 0);
    ETW_CHECK_INT(etw_builtin_manifests_lazy(&st, m, &RUNDOWN), 0);
    ETW_CHECK_INT(etw_builtin_manifests_lazy(&st, m, &OTHER), 0);
    etw_manifest_set_free(m);
}

/* Microsoft-Windows-DotNETRuntime GCSuspendEEBegin_V1 (id 9, version 1):
 * Reason (map), Count, ClrInstanceID. */
static void clr_event(etb_event *e, uint16_t id, uint8_t version) {
    etb_event_init(e, 8);
    e->ev.provider = CLR;
    e->ev.id = id;
    e->ev.version = version;
    e->ev.level = 4;
    e->ev.opcode = 10;
    e->ev.task = 1;
}

static void test_decoder_default(void) {
    etw_decoder *d = new_decoder(0);
    const etw_decoder_stats *st = etw_decoder_stats_get(d);
    const etw_schema *s = NULL;
    const char *why = NULL;

    /* another provider: no parse */
    etb_event eo;
    etb_event_init(&eo, 8);
    eo.ev.provider = OTHER;
    eo.ev.id = 1;
    ETW_CHECK_INT(etw_decoder_resolve(d, etb_event_get(&eo), &s, &why), ETW_E_NOT_FOUND);
    ETW_CHECK(why && strstr(why, "no schema: manifest not found for provider 12345678-") == why);
    ETW_CHECK_INT(st->builtin_providers, 0);

    etb_event e;
    clr_event(&e, 9, 1);
    etb_u32(&e.payload, 1); /* SuspendForGC */
    etb_u32(&e.payload, 7);
    etb_u16(&e.payload, 8);
    const etw_event *ev = etb_event_get(&e);
    ETW_CHECK_INT(etw_decoder_resolve(d, ev, &s, &why), ETW_OK);
    ETW_CHECK_INT(st->builtin_providers, 1); /* the DotNETRuntime part alone */
    ETW_CHECK(s != NULL);
    if (s) {
        ETW_CHECK_INT(s->source, ETW_SOURCE_BUILTIN);
        ETW_CHECK_STR(s->provider_name, "Microsoft-Windows-DotNETRuntime");
        ETW_CHECK_INT(s->prop_count, 3);
        etw_decode_cursor c;
        etw_value v;
        ETW_CHECK_INT(etw_decoder_begin(d, ev, s, &c), ETW_OK);
        const char *names[] = {"Reason", "Count", "ClrInstanceID"};
        uint32_t vals[] = {1, 7, 8};
        for (int i = 0; i < 3; i++) {
            ETW_CHECK_INT(etw_decode_next(&c, &v), ETW_OK);
            ETW_CHECK_STR(v.name, names[i]);
            uint32_t x = 0;
            memcpy(&x, v.data, v.size < 4 ? v.size : 4);
            ETW_CHECK_INT(x, vals[i]);
        }
        ETW_CHECK_INT(etw_decode_next(&c, &v), ETW_END);
    }
    /* the cache answers the next one */
    uint64_t misses = st->misses;
    const etw_schema *s2 = NULL;
    ETW_CHECK_INT(etw_decoder_resolve(d, ev, &s2, &why), ETW_OK);
    ETW_CHECK(s2 == s);
    ETW_CHECK_INT(st->misses, misses);

    /* a provider the built-in manifest knows, an event it does not */
    etb_event eu;
    clr_event(&eu, 9999, 0);
    ETW_CHECK_INT(etw_decoder_resolve(d, etb_event_get(&eu), &s2, &why), ETW_E_NOT_FOUND);
    ETW_CHECK_STR(why, "no schema: provider Microsoft-Windows-DotNETRuntime (from the built-in ClrEtwAll.man) "
                       "has no event id 9999 version 0");

    /* a user manifest of the provider, added later, outranks it */
    static const char user_xml[] =
        "<instrumentationManifest xmlns='http://schemas.microsoft.com/win/2004/08/events'"
        " xmlns:win='http://manifests.microsoft.com/win/2004/08/windows/events'>"
        "<instrumentation><events>"
        "<provider name='My-Runtime' guid='{e13c0d23-ccbc-4e12-931b-d9cc2eee27e4}' symbol='P'>"
        "<templates><template tid='T'><data name='Only' inType='win:UInt32'/></template></templates>"
        "<events><event value='9' version='1' template='T' symbol='E9'/></events>"
        "</provider></events></instrumentation></instrumentationManifest>";
    ETW_CHECK_INT(etw_decoder_add_manifest_xml(d, user_xml, strlen(user_xml), "user.man", NULL), ETW_OK);
    ETW_CHECK_INT(etw_decoder_resolve(d, ev, &s2, &why), ETW_OK);
    ETW_CHECK(s2 != NULL && s2 != s);
    if (s2) {
        ETW_CHECK_INT(s2->source, ETW_SOURCE_MANIFEST);
        ETW_CHECK_STR(s2->provider_name, "My-Runtime");
        ETW_CHECK_INT(s2->prop_count, 1);
    }
    /* and its "why" names the user's file */
    ETW_CHECK_INT(etw_decoder_resolve(d, etb_event_get(&eu), &s2, &why), ETW_E_NOT_FOUND);
    ETW_CHECK_STR(why, "no schema: provider My-Runtime (from user.man) has no event id 9999 version 0");
    /* an event the user's manifest lacks still comes from the built-in one
     * (GCSuspendEEEnd_V1, id 8 version 1: ClrInstanceID) */
    etb_event e8;
    clr_event(&e8, 8, 1);
    etb_u16(&e8.payload, 8);
    ETW_CHECK_INT(etw_decoder_resolve(d, etb_event_get(&e8), &s2, &why), ETW_OK);
    ETW_CHECK(s2 && s2->source == ETW_SOURCE_BUILTIN && s2->prop_count == 1);
    etb_event_free(&e8);
    etb_event_free(&e);
    etb_event_free(&eu);
    etb_event_free(&eo);
    etw_decoder_free(d);
}

/* no_default_manifests: the CLR's providers are unknown. */
static void test_decoder_off(void) {
    etw_decoder *d = new_decoder(1);
    const etw_decoder_stats *st = etw_decoder_stats_get(d);
    const etw_guid *gs[] = {&CLR, &RUNDOWN, &STRESS, &PRIVATE, &MONO};
    for (size_t i = 0; i < sizeof gs / sizeof gs[0]; i++) {
        etb_event e;
        etb_event_init(&e, 8);
        e.ev.provider = *gs[i];
        e.ev.id = 1;
        const etw_schema *s = NULL;
        const char *why = NULL;
        ETW_CHECK_INT(etw_decoder_resolve(d, etb_event_get(&e), &s, &why), ETW_E_NOT_FOUND);
        ETW_CHECK(why && strstr(why, "no schema: manifest not found for provider ") == why);
        etb_event_free(&e);
    }
    ETW_CHECK_INT(st->builtin_providers, 0);
    etw_decoder_free(d);
    /* and by default each of them is known */
    d = new_decoder(0);
    st = etw_decoder_stats_get(d);
    /* each is known to the built-in manifest: an id none declares says so */
    for (size_t i = 0; i < sizeof gs / sizeof gs[0]; i++) {
        etb_event e;
        etb_event_init(&e, 8);
        e.ev.provider = *gs[i];
        e.ev.id = 65000;
        const etw_schema *s = NULL;
        const char *why = NULL;
        ETW_CHECK_INT(etw_decoder_resolve(d, etb_event_get(&e), &s, &why), ETW_E_NOT_FOUND);
        ETW_CHECK(why && strstr(why, "(from the built-in ClrEtwAll.man) has no event id 65000") != NULL);
        etb_event_free(&e);
    }
    ETW_CHECK_INT(st->builtin_providers, 5);
    etw_decoder_free(d);
}

/* A real trace: gcevents.etl (.NET 8, recorded on Windows) decodes with no
 * manifest given; HTTP_Server.etl (no .NET events) never parses the XML. */
static void count_trace(const char *path, int no_default, uint64_t *events, uint64_t *errors,
                        uint64_t *builtin, uint32_t *builtin_providers) {
    etw_reader *r = NULL;
    *events = *errors = *builtin = 0;
    *builtin_providers = 0;
    ETW_CHECK_INT(etw_reader_open_file(&r, path, NULL), ETW_OK);
    if (!r) return;
    etw_decoder *d = new_decoder(no_default);
    ETW_CHECK_INT(etw_decoder_prescan(d, r), ETW_OK);
    etw_event ev;
    while (etw_reader_next(r, &ev) == ETW_OK) {
        const etw_schema *s = NULL;
        const char *why = NULL;
        (*events)++;
        if (etw_decoder_resolve(d, &ev, &s, &why) != ETW_OK)
            (*errors)++;
        else if (s->source == ETW_SOURCE_BUILTIN)
            (*builtin)++;
    }
    *builtin_providers = etw_decoder_stats_get(d)->builtin_providers;
    etw_decoder_free(d);
    etw_reader_close(r);
}

static void test_traces(void) {
    uint64_t n, err, bi;
    uint32_t bp;
    count_trace(ETW_TEST_DATA_DIR "/gcevents.etl", 0, &n, &err, &bi, &bp);
    ETW_CHECK_INT(n, 71);
    ETW_CHECK_INT(err, 0);
    ETW_CHECK_INT(bi, 69);
    ETW_CHECK_INT(bp, 1); /* its events are all DotNETRuntime's: one part parsed */
    count_trace(ETW_TEST_DATA_DIR "/gcevents.etl", 1, &n, &err, &bi, &bp);
    ETW_CHECK_INT(err, 69);
    ETW_CHECK_INT(bi, 0);
    ETW_CHECK_INT(bp, 0);
    count_trace(ETW_TEST_DATA_DIR "/HTTP_Server.etl", 0, &n, &err, &bi, &bp);
    ETW_CHECK(n > 0);
    ETW_CHECK_INT(bi, 0);
    ETW_CHECK_INT(bp, 0);
}

/* Merged metadata outranks the built-in manifest even when it is learned
 * after built-in schemas were handed out (etw_decoder_learn of MetaData
 * records, as a reader of part of a trace does): the CLR events of
 * net.4.5.2.x64.etl then resolve exactly as after a pre-scan. */
static void clr_sources(etw_decoder *d, etw_reader *r, uint64_t *md, uint64_t *bi) {
    etw_event ev;
    *md = *bi = 0;
    ETW_CHECK_INT(etw_reader_rewind(r), ETW_OK);
    while (etw_reader_next(r, &ev) == ETW_OK) {
        const etw_schema *s = NULL;
        if (!etw_guid_equal(&ev.provider, &CLR) || etw_decoder_resolve(d, &ev, &s, NULL) != ETW_OK) continue;
        if (s->source == ETW_SOURCE_METADATA) (*md)++;
        else if (s->source == ETW_SOURCE_BUILTIN) (*bi)++;
    }
}

static void test_metadata_learned_late(void) {
    etw_reader *r = NULL;
    ETW_CHECK_INT(etw_reader_open_file(&r, ETW_TEST_DATA_DIR "/net.4.5.2.x64.etl", NULL), ETW_OK);
    if (!r) return;
    uint64_t md_a, bi_a, md_b, bi_b, md_c, bi_c;
    /* no metadata learned: the built-in manifest answers */
    etw_decoder *d = new_decoder(0);
    clr_sources(d, r, &md_a, &bi_a);
    ETW_CHECK_INT(md_a, 0);
    ETW_CHECK(bi_a > 1000);
    /* the MetaData records learned now, after those schemas were used */
    etw_event ev;
    ETW_CHECK_INT(etw_reader_rewind(r), ETW_OK);
    while (etw_reader_next(r, &ev) == ETW_OK)
        if (etw_decoder_learn_kind(d, &ev) == ETW_LEARN_AHEAD) ETW_CHECK_INT(etw_decoder_learn(d, &ev), ETW_OK);
    clr_sources(d, r, &md_b, &bi_b);
    etw_decoder_free(d);
    /* a pre-scan before the first event */
    d = new_decoder(0);
    ETW_CHECK_INT(etw_reader_rewind(r), ETW_OK);
    ETW_CHECK_INT(etw_decoder_prescan(d, r), ETW_OK);
    clr_sources(d, r, &md_c, &bi_c);
    etw_decoder_free(d);
    ETW_CHECK(md_c > 1000);
    ETW_CHECK_INT(md_b, md_c);
    ETW_CHECK_INT(bi_b, bi_c);
    ETW_CHECK_INT(md_a + bi_a, md_c + bi_c);
    etw_reader_close(r);
}

/* etw_builtins: decoders given the same object parse the XML once between
 * them (the allocator of the object sees the parse once), each answering as
 * a decoder with its own copy does; on several threads at once too. */
typedef struct counting {
    size_t allocs;
} counting;
static void *count_alloc(void *ctx, size_t n) {
    ((counting *)ctx)->allocs++;
    return malloc(n);
}
static void count_free(void *ctx, void *p) {
    (void)ctx;
    free(p);
}

static void test_shared(void) {
    counting cnt = {0};
    etw_allocator al = {count_alloc, count_free, &cnt};
    etw_builtins *b = NULL;
    ETW_CHECK_INT(etw_builtins_new(&b, &al), ETW_OK);
    if (!b) return;
    etw_decoder *d1 = new_decoder_with(0, b), *d2 = new_decoder_with(0, b);
    const etw_schema *s1 = NULL, *s2 = NULL;
    const char *why = NULL;
    size_t at_new = cnt.allocs;
    /* another provider: nothing parsed */
    etb_event eo;
    etb_event_init(&eo, 8);
    eo.ev.provider = OTHER;
    eo.ev.id = 1;
    ETW_CHECK_INT(etw_decoder_resolve(d1, etb_event_get(&eo), &s1, &why), ETW_E_NOT_FOUND);
    ETW_CHECK_INT(cnt.allocs, at_new);
    ETW_CHECK_INT(etw_decoder_stats_get(d1)->builtin_providers, 0);
    /* the first CLR event parses it, in the object's memory */
    etb_event e;
    clr_event(&e, 9, 1);
    etb_u32(&e.payload, 1);
    etb_u32(&e.payload, 7);
    etb_u16(&e.payload, 8);
    ETW_CHECK_INT(etw_decoder_resolve(d1, etb_event_get(&e), &s1, &why), ETW_OK);
    size_t parsed = cnt.allocs;
    ETW_CHECK(parsed > at_new + 100);
    ETW_CHECK_INT(etw_decoder_stats_get(d1)->builtin_providers, 1);
    /* the second decoder reads that parse */
    ETW_CHECK_INT(etw_decoder_resolve(d2, etb_event_get(&e), &s2, &why), ETW_OK);
    ETW_CHECK_INT(cnt.allocs, parsed);
    ETW_CHECK_INT(etw_decoder_stats_get(d2)->builtin_providers, 1);
    ETW_CHECK(s1 && s2 && s1 != s2); /* each decoder's own cached schema */
    if (s1 && s2) {
        ETW_CHECK_INT(s2->source, ETW_SOURCE_BUILTIN);
        ETW_CHECK_STR(s2->provider_name, s1->provider_name);
        ETW_CHECK_STR(s2->event_name, s1->event_name);
        ETW_CHECK_INT(s2->prop_count, 3);
    }
    etb_event eu;
    clr_event(&eu, 9999, 0);
    ETW_CHECK_INT(etw_decoder_resolve(d2, etb_event_get(&eu), &s2, &why), ETW_E_NOT_FOUND);
    ETW_CHECK_STR(why, "no schema: provider Microsoft-Windows-DotNETRuntime (from the built-in ClrEtwAll.man) "
                       "has no event id 9999 version 0");
    etw_decoder_free(d1);
    etw_decoder_free(d2);
    etb_event_free(&e);
    etb_event_free(&eu);
    etb_event_free(&eo);
    etw_builtins_free(b);
    etw_builtins_free(NULL);
}

/* Four threads, each its own decoder and reader of net.4.5.2.x64.etl, one
 * etw_builtins: every thread counts the CLR events a decoder of its own
 * resolves from the built-in manifest. */
typedef struct shared_job {
    etw_builtins *b;
    uint64_t builtin, events;
    int ok;
} shared_job;

static void clr_count(etw_decoder *d, uint64_t *builtin, uint64_t *events, int *ok) {
    etw_reader *r = NULL;
    *builtin = *events = 0;
    *ok = etw_reader_open_file(&r, ETW_TEST_DATA_DIR "/net.4.5.2.x64.etl", NULL) == ETW_OK;
    if (!*ok) return;
    etw_event ev;
    while (etw_reader_next(r, &ev) == ETW_OK) {
        const etw_schema *s = NULL;
        (*events)++;
        if (etw_decoder_resolve(d, &ev, &s, NULL) == ETW_OK && s->source == ETW_SOURCE_BUILTIN) (*builtin)++;
    }
    etw_reader_close(r);
}

#if !(defined(__unix__) || defined(__APPLE__))
static int shared_thread(void *arg) {
#else
static void *shared_thread(void *arg) {
#endif
    shared_job *j = arg;
    etw_decoder *d = new_decoder_with(0, j->b);
    clr_count(d, &j->builtin, &j->events, &j->ok);
    etw_decoder_free(d);
#if !(defined(__unix__) || defined(__APPLE__))
    return 0;
#else
    return NULL;
#endif
}

static void test_shared_threads(void) {
    uint64_t want_bi, want_n;
    int ok;
    etw_decoder *d = new_decoder(0);
    clr_count(d, &want_bi, &want_n, &ok);
    etw_decoder_free(d);
    ETW_CHECK(ok && want_bi > 1000);
    etw_builtins *b = NULL;
    ETW_CHECK_INT(etw_builtins_new(&b, NULL), ETW_OK);
    shared_job jobs[4];
    etw_thread th[4];
    int started[4] = {0};
    for (int i = 0; i < 4; i++) {
        jobs[i].b = b;
        jobs[i].builtin = jobs[i].events = 0;
        jobs[i].ok = 0;
        started[i] = etw_thread_start(&th[i], shared_thread, &jobs[i]) == 0;
        ETW_CHECK(started[i]);
    }
    for (int i = 0; i < 4; i++) {
        if (!started[i]) continue;
        etw_thread_join(th[i]);
        ETW_CHECK(jobs[i].ok);
        ETW_CHECK_INT(jobs[i].events, want_n);
        ETW_CHECK_INT(jobs[i].builtin, want_bi);
    }
    etw_builtins_free(b);
}

int main(void) {
    ETW_RUN(test_embedded_bytes);
    ETW_RUN(test_providers);
    ETW_RUN(test_parts);
    ETW_RUN(test_lazy);
    ETW_RUN(test_decoder_default);
    ETW_RUN(test_decoder_off);
    ETW_RUN(test_traces);
    ETW_RUN(test_metadata_learned_late);
    ETW_RUN(test_shared);
    ETW_RUN(test_shared_threads);
    return ETW_TEST_DONE();
}
