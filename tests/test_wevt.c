/* test_wevt.c - WEVT_TEMPLATE blobs as a schema source: for every test case
 * mc.exe compiled (tests/data/wevt/event-trace-kit: the .man, its CRIM blob
 * in v3.1, v5.1 and the 8.1 compat form, its message table), the schemas
 * read from the blob and its message table equal the ones read from the
 * .man: providers, events, names, descriptor values, messages, fields with
 * their types, counts, lengths and references, maps. Then hostile blobs. */
#define _POSIX_C_SOURCE 200809L

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "etw_test.h"
#include "schema/etw_cache.h"
#include "source/etw_manifest.h"
#include "source/etw_manifest_ext.h"
#include "source/etw_manifest_types.h"
#include "wevt/etw_msgtable.h"
#include "wevt/etw_wevt.h"

#define KIT ETW_TEST_DATA_DIR "/wevt/event-trace-kit/"

static uint8_t *slurp(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    uint8_t *b = malloc(n > 0 ? (size_t)n : 1);
    if (b && fread(b, 1, (size_t)n, f) != (size_t)n) {
        free(b);
        b = NULL;
    }
    fclose(f);
    *len = (size_t)n;
    return b;
}

typedef struct diags {
    int n, errors;
    char first[640];
} diags;

static void on_diag(void *ctx, const etw_diag *d) {
    diags *x = ctx;
    if (x->n++ == 0) snprintf(x->first, sizeof x->first, "%s", d->message);
    if (d->status < 0) x->errors++;
}

static etw_manifest_set *new_set(diags *dg) {
    etw_manifest_options o;
    memset(&o, 0, sizeof o);
    o.on_diag = on_diag;
    o.diag_ctx = dg;
    etw_manifest_set *m = NULL;
    etw_manifest_set_new(&m, &o);
    return m;
}

static int print_event(void *ctx, const etw_guid *g, uint16_t id, uint8_t v) {
    (void)ctx;
    char b[ETW_GUID_STRING_SIZE];
    etw_guid_format(g, b);
    fprintf(stderr, "  set has %s id %u version %u\n", b, id, v);
    return 0;
}

/* ---- schema comparison ------------------------------------------------------ */

typedef struct cmp_ctx {
    etw_manifest_set *xml, *bin;
    etw_cache *cx, *cb;
    const char *label;
    int events, mismatches;
    int no_provider_name;
} cmp_ctx;

static int str_eq(const char *a, const char *b) {
    if (!a || !b) return a == b;
    return strcmp(a, b) == 0;
}

#define DIFF(what, fmt, a, b)                                                                       \
    do {                                                                                            \
        if (c->mismatches++ < 12)                                                                   \
            fprintf(stderr, "  %s: event %u v%u: %s: xml " fmt ", blob " fmt "\n", c->label, id, ver, \
                    what, a, b);                                                                    \
    } while (0)

#define SDIFF(what, a, b) \
    if (!str_eq(a, b)) DIFF(what, "\"%s\"", (a) ? (a) : "(null)", (b) ? (b) : "(null)")
#define NDIFF(what, a, b) \
    if ((uint64_t)(a) != (uint64_t)(b)) DIFF(what, "%llu", (unsigned long long)(a), (unsigned long long)(b))

static void compare_maps(cmp_ctx *c, uint16_t id, uint8_t ver, const etw_map *a, const etw_map *b) {
    if (!a || !b) {
        if (a != b) DIFF("map", "%s", a ? a->name : "(none)", b ? b->name : "(none)");
        return;
    }
    SDIFF("map name", a->name, b->name);
    NDIFF("map flags", a->flags, b->flags);
    NDIFF("map count", a->count, b->count);
    for (uint32_t i = 0; i < a->count && i < b->count; i++) {
        NDIFF("map value", a->entries[i].value, b->entries[i].value);
        SDIFF("map entry", a->entries[i].name, b->entries[i].name);
    }
}

static int compare_one(void *ctx, const etw_guid *g, uint16_t id, uint8_t ver) {
    cmp_ctx *c = ctx;
    const etw_schema *a = NULL, *b = NULL;
    c->events++;
    etw_manifest_resolve(c->xml, c->cx, g, id, ver, 8, &a, NULL);
    etw_manifest_resolve(c->bin, c->cb, g, id, ver, 8, &b, NULL);
    if (!a || !b) {
        DIFF("resolved", "%d", a != NULL, b != NULL);
        return 0;
    }
    /* v3.1 blobs carry no provider name: the provider's message, else
     * the GUID, stand in */
    if (!c->no_provider_name) SDIFF("provider", a->provider_name, b->provider_name);
    /* a symbol is not compiled into the blob: an event with neither task
     * nor name is EventID(N) there, as tdh.dll names it */
    if (a->task_name || strncmp(b->event_name, "EventID(", 8) != 0) SDIFF("event name", a->event_name, b->event_name);
    SDIFF("task name", a->task_name, b->task_name);
    SDIFF("opcode name", a->opcode_name, b->opcode_name);
    SDIFF("task symbol", a->task_symbol, b->task_symbol);
    SDIFF("opcode symbol", a->opcode_symbol, b->opcode_symbol);
    SDIFF("message", a->message, b->message);
    NDIFF("level", a->level, b->level);
    NDIFF("opcode", a->opcode, b->opcode);
    NDIFF("task", a->task, b->task);
    NDIFF("channel", a->channel, b->channel);
    /* mc.exe adds the channel's keyword bit (the top byte) to the blob's
     * descriptor, which is what tdh.dll reports */
    NDIFF("keywords", a->keywords & UINT64_C(0x00FFFFFFFFFFFFFF), b->keywords & UINT64_C(0x00FFFFFFFFFFFFFF));
    NDIFF("prop count", a->prop_count, b->prop_count);
    NDIFF("top count", a->top_count, b->top_count);
    for (uint16_t i = 0; i < a->prop_count && i < b->prop_count; i++) {
        const etw_property *p = &a->props[i], *q = &b->props[i];
        SDIFF("prop name", p->name, q->name);
        NDIFF("prop flags", p->flags, q->flags);
        if (!(p->flags & ETW_PROP_STRUCT)) {
            NDIFF("in type", p->in_type, q->in_type);
            /* the blob writes out the default a manifest leaves implied */
            uint16_t po = p->out_type ? p->out_type : etw_default_outtype(p->in_type, 8);
            uint16_t qo = q->out_type ? q->out_type : etw_default_outtype(q->in_type, 8);
            NDIFF("out type", po, qo);
            compare_maps(c, id, ver, p->map, q->map);
        } else {
            NDIFF("struct first", p->struct_first, q->struct_first);
            NDIFF("struct count", p->struct_count, q->struct_count);
        }
        if (p->flags & (ETW_PROP_COUNT_REF | ETW_PROP_COUNT_FIXED)) NDIFF("count", p->count, q->count);
        if (p->flags & (ETW_PROP_LENGTH_REF | ETW_PROP_LENGTH_FIXED)) NDIFF("length", p->length, q->length);
    }
    return 0;
}

/* Load X.man and X.<blob> (+ X.<msg>) and compare every event. */
static void compare_case(const char *name, const char *blob, const char *msg) {
    char path[512];
    diags dx = {0}, db = {0};
    etw_manifest_set *xml = new_set(&dx), *bin = new_set(&db);
    snprintf(path, sizeof path, KIT "%s.man", name);
    uint32_t nx = 0, nb = 0;
    ETW_CHECK_INT(etw_manifest_load_path(xml, path, &nx), ETW_OK);
    size_t blen = 0, mlen = 0;
    snprintf(path, sizeof path, KIT "%s.%s", name, blob);
    uint8_t *b = slurp(path, &blen);
    uint8_t *mbytes = NULL;
    etw_msgtable mt, *mtp = NULL;
    if (msg) {
        snprintf(path, sizeof path, KIT "%s.%s", name, msg);
        mbytes = slurp(path, &mlen);
        const char *why = NULL;
        ETW_CHECK(mbytes != NULL);
        if (mbytes) {
            ETW_CHECK_INT(etw_msgtable_open(&mt, mbytes, mlen, &why), ETW_OK);
            mtp = &mt;
        }
    }
    if (strstr(blob, ".dll")) { /* a DLL made of the v5 blob and the message table */
        free(b);
        b = NULL;
        snprintf(path, sizeof path, "%s", blob);
        ETW_CHECK_INT(etw_manifest_load_path(bin, path, &nb), ETW_OK);
    } else {
        ETW_CHECK(b != NULL);
        if (b) ETW_CHECK_INT(etw_wevt_load_blob(bin, b, blen, mtp, path, &nb), ETW_OK);
    }
    ETW_CHECK_INT(nb, nx);
    ETW_CHECK_INT(etw_manifest_event_count(bin), etw_manifest_event_count(xml));
    if (db.errors) fprintf(stderr, "  %s.%s: %d problems, first: %s\n", name, blob, db.errors, db.first);
    ETW_CHECK_INT(db.errors, 0);
    cmp_ctx c;
    memset(&c, 0, sizeof c);
    c.xml = xml;
    c.bin = bin;
    char label[128];
    snprintf(label, sizeof label, "%s.%s", name, strrchr(blob, '/') ? strrchr(blob, '/') + 1 : blob);
    c.label = label;
    c.no_provider_name = strstr(blob, "v3") != NULL;
    etw_cache_new(&c.cx, NULL);
    etw_cache_new(&c.cb, NULL);
    etw_manifest_foreach_event(xml, compare_one, &c);
    if (c.mismatches) fprintf(stderr, "  %s: %d of %d events' fields differ\n", label, c.mismatches, c.events);
    ETW_CHECK_INT(c.mismatches, 0);
    printf("  %-40s %u providers, %d events equal\n", label, nb, c.events);
    etw_cache_free(c.cx);
    etw_cache_free(c.cb);
    etw_manifest_set_free(xml);
    etw_manifest_set_free(bin);
    free(b);
    free(mbytes);
}

static void test_blob_equals_manifest(void) {
    compare_case("Empty", "wevt.v3.bin", NULL);
    compare_case("Empty", "wevt.v5.bin", NULL);
    compare_case("EventAttributes", "wevt.v5.bin", "msg.bin");
    compare_case("ImportChannelFromProvider", "wevt.v3.bin", "msg.bin");
    compare_case("ImportChannelFromProvider", "wevt.v5.bin", "msg.bin");
    compare_case("ImportChannels", "wevt.v3.bin", "msg.bin");
    compare_case("ImportChannels", "wevt.v5.bin", "msg.bin");
    compare_case("Large", "wevt.v5.bin", "msg.bin");
    compare_case("ProviderTraits", "wevt.v5.bin", "msg.bin");
    compare_case("ReferenceChannels", "wevt.v5.bin", "msg.bin");
    compare_case("TaskOpcodes", "wevt.v3.bin", "msg.bin");
    compare_case("TaskOpcodes", "wevt.v5.bin", "msg.bin");
    compare_case("TypeMangling", "wevt.v5.bin", NULL);
    compare_case("wpf-etw", "wevt.v3.bin", "msg.bin");
    compare_case("wpf-etw", "wevt.v5.bin", "msg.bin");
    compare_case("wpf-etw", "wevt.v3-8.1-compat.bin", "msg.v3-8.1-compat.bin");
}


/* ---- hostile blobs ----------------------------------------------------------- */

/* Load b as a blob (with and without its message table) and resolve every
 * event it lists: must not crash, hang or read out of bounds (ASan). */
static int load_any(const uint8_t *b, size_t len, const etw_msgtable *mt, uint32_t *events) {
    diags dg = {0};
    etw_manifest_set *m = new_set(&dg);
    uint32_t n = 0;
    etw_status st = etw_wevt_load_blob(m, b, len, mt, "hostile.bin", &n);
    *events = etw_manifest_event_count(m);
    etw_cache *c = NULL;
    etw_cache_new(&c, NULL);
    cmp_ctx x;
    memset(&x, 0, sizeof x);
    x.xml = x.bin = m;
    x.cx = x.cb = c;
    x.label = "hostile";
    etw_manifest_foreach_event(m, compare_one, &x); /* resolves each twice */
    etw_cache_free(c);
    etw_manifest_set_free(m);
    return st == ETW_OK ? (int)n : -1;
}

static uint8_t *kit_file(const char *name, size_t *len) {
    char path[512];
    snprintf(path, sizeof path, KIT "%s", name);
    return slurp(path, len);
}

static void put32(uint8_t *p, uint32_t v) {
    p[0] = (uint8_t)v;
    p[1] = (uint8_t)(v >> 8);
    p[2] = (uint8_t)(v >> 16);
    p[3] = (uint8_t)(v >> 24);
}
static uint32_t get32(const uint8_t *p) { return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24; }

/* The offset of the first element with this magic, or 0. */
static size_t find_magic(const uint8_t *b, size_t len, const char *magic) {
    for (size_t i = 0; i + 4 <= len; i += 4)
        if (memcmp(b + i, magic, 4) == 0) return i;
    return 0;
}

static void test_truncated(void) {
    size_t len = 0, mlen = 0;
    uint8_t *b = kit_file("wpf-etw.wevt.v5.bin", &len);
    uint8_t *mb = kit_file("wpf-etw.msg.bin", &mlen);
    ETW_CHECK(b && mb);
    if (!b || !mb) return;
    etw_msgtable mt;
    const char *why;
    ETW_CHECK_INT(etw_msgtable_open(&mt, mb, mlen, &why), ETW_OK);
    uint32_t full = 0, ev = 0;
    ETW_CHECK_INT(load_any(b, len, &mt, &full), 1);
    ETW_CHECK_INT(full, 333);
    /* every cut point below 4 KB, then every 97th byte: a copy of exactly
     * that size, so ASan sees a read past the cut */
    int ok = 1;
    for (size_t cut = 0; cut < len; cut += cut < 4096 ? 1 : 97) {
        uint8_t *c = malloc(cut ? cut : 1);
        memcpy(c, b, cut);
        int r = load_any(c, cut, &mt, &ev);
        if (cut < 36 && r >= 0 && ev) ok = 0; /* no provider table, no event */
        if (ev > full) ok = 0;
        free(c);
    }
    ETW_CHECK(ok);
    /* the message table cut too */
    for (size_t cut = 0; cut < mlen; cut += 7) {
        etw_msgtable m2;
        if (etw_msgtable_open(&m2, mb, cut, &why) == ETW_OK) load_any(b, len, &m2, &ev);
    }
    free(b);
    free(mb);
}

static void test_lying_fields(void) {
    size_t len = 0;
    uint8_t *b = kit_file("Large.wevt.v5.bin", &len);
    ETW_CHECK(b != NULL);
    if (!b) return;
    uint32_t ev = 0, full = 0;
    ETW_CHECK_INT(load_any(b, len, NULL, &full), 4);
    uint8_t *c = malloc(len);
    /* a provider count of 0xFFFFFFFF: the header does not fit */
    memcpy(c, b, len);
    put32(c + 12, 0xFFFFFFFFu);
    ETW_CHECK_INT(load_any(c, len, NULL, &ev), -1);
    /* provider offsets past the end: each provider skipped, no crash */
    memcpy(c, b, len);
    for (uint32_t i = 0; i < get32(b + 12); i++) put32(c + 16 + 20 * i + 16, 0xFFFFFFF0u);
    ETW_CHECK_INT(load_any(c, len, NULL, &ev), 0);
    ETW_CHECK_INT(ev, 0);
    /* element counts of 0xFFFFFFFF in every list: bounded by the sizes */
    static const char *const lists[] = {"EVNT", "TTBL", "MAPS", "TASK", "OPCO", "LEVL", "KEYW", "CHAN"};
    for (size_t k = 0; k < sizeof lists / sizeof lists[0]; k++) {
        memcpy(c, b, len);
        size_t at = find_magic(c, len, lists[k]);
        ETW_CHECK(at != 0);
        put32(c + at + 8, 0xFFFFFFFFu);
        load_any(c, len, NULL, &ev);
        ETW_CHECK(ev <= len / 48); /* bounded by the element's size: at most its bytes' worth */
    }
    /* every TEMP: its struct ranges point back at themselves and its
     * counts and lengths name themselves */
    memcpy(c, b, len);
    size_t ttbl = find_magic(c, len, "TTBL");
    uint32_t nt = get32(c + ttbl + 8), at = (uint32_t)ttbl + 12, structs = 0;
    for (uint32_t t = 0; t < nt && at + 40 <= len; t++) {
        uint32_t total = get32(c + at + 12), props = get32(c + at + 16);
        for (uint32_t i = 0; i < total && props + 20 * (i + 1) <= len; i++) {
            uint8_t *e = c + props + 20 * i;
            if (get32(e) & 1) {
                e[4] = (uint8_t)i; /* members start at the struct itself */
                e[5] = 0;
                structs++;
            } else {
                put32(e, get32(e) | 0x14); /* var count and length: itself */
                e[12] = e[14] = (uint8_t)i;
                e[13] = e[15] = 0;
            }
        }
        at += get32(c + at + 4);
    }
    ETW_CHECK(structs > 0);
    diags dg = {0};
    etw_manifest_set *m = new_set(&dg);
    uint32_t n = 0;
    ETW_CHECK_INT(etw_wevt_load_blob(m, c, len, NULL, "self.bin", &n), ETW_OK);
    ETW_CHECK(dg.errors > 0);
    ETW_CHECK(strstr(dg.first, "self.bin:") == dg.first);
    etw_manifest_set_free(m);
    load_any(c, len, NULL, &ev);
    ETW_CHECK(ev <= full);
    /* deterministic byte mutations: 3000 blobs, each 1-8 bytes changed */
    uint64_t r = 0x9E3779B97F4A7C15u;
    for (int i = 0; i < 3000; i++) {
        memcpy(c, b, len);
        int k = 1 + (int)((r >> 60) & 7);
        for (int j = 0; j < k; j++) {
            r = r * 6364136223846793005u + 1442695040888963407u;
            c[(r >> 33) % len] = (uint8_t)(r >> 13);
        }
        load_any(c, len, NULL, &ev);
    }
    ETW_CHECK(1); /* reaching here under ASan is the check */
    free(c);
    free(b);
}

static void test_not_a_blob(void) {
    uint32_t ev = 0;
    ETW_CHECK_INT(load_any((const uint8_t *)"", 0, NULL, &ev), -1);
    ETW_CHECK_INT(load_any((const uint8_t *)"CRIM", 4, NULL, &ev), -1);
    ETW_CHECK_INT(load_any((const uint8_t *)"<?xml version", 13, NULL, &ev), -1);
    ETW_CHECK(!etw_wevt_is_blob((const uint8_t *)"CRI", 3));
    ETW_CHECK(etw_wevt_is_pe((const uint8_t *)"MZ\x90", 3));
}

/* The same through DLLs tests/make_wevt_dlls.sh builds from each v5 blob
 * and its message table (llvm-rc, llvm-cvtres, lld-link). */
static void test_dll_equals_manifest(void) {
#ifdef ETW_WEVT_DLL_DIR
    static const char *const names[] = {"EventAttributes", "ImportChannelFromProvider", "ImportChannels", "Large",
                                        "ProviderTraits",  "ReferenceChannels",         "TaskOpcodes",    "wpf-etw"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        char dll[512];
        snprintf(dll, sizeof dll, "%s/%s.dll", ETW_WEVT_DLL_DIR, names[i]);
        compare_case(names[i], dll, NULL);
    }
#else
    printf("  (no test DLLs: configured with -DETW_WEVT_DLLS=OFF)\n");
#endif
}

/* Resolve one event of a set. */
static const etw_schema *resolve(etw_manifest_set *m, etw_cache *c, const char *guid, uint16_t id, uint8_t v) {
    etw_guid g;
    const etw_schema *s = NULL;
    if (!etw_mf_parse_guid(guid, &g)) return NULL;
    etw_manifest_resolve(m, c, &g, id, v, 8, &s, NULL);
    return s;
}

/* plaso's test DLL (PE32): one provider, one event with a UnicodeString
 * and an Int32, its message "A test value" from the file's own table. */
static void test_plaso_dll(void) {
    diags dg = {0};
    etw_manifest_set *m = new_set(&dg);
    uint32_t n = 0;
    ETW_CHECK_INT(etw_manifest_load_path(m, ETW_TEST_DATA_DIR "/wevt/pe/wrc-test-wevt_template.dll", &n), ETW_OK);
    ETW_CHECK_INT(n, 1);
    ETW_CHECK_INT(etw_manifest_event_count(m), 1);
    ETW_CHECK_INT(dg.errors, 0);
    etw_cache *c = NULL;
    etw_cache_new(&c, NULL);
    const etw_schema *s = resolve(m, c, "67883bbc-d592-4d02-8e29-66907fcb07d6", 1, 1);
    if (!s) { /* the GUID as the blob has it: print what there is */
        etw_manifest_foreach_event(m, print_event, NULL);
    }
    ETW_CHECK(s != NULL);
    if (s) {
        ETW_CHECK_INT(s->prop_count, 2);
        ETW_CHECK_INT(s->props[0].in_type, ETW_INTYPE_UNICODESTRING);
        ETW_CHECK_INT(s->props[1].in_type, ETW_INTYPE_INT32);
        ETW_CHECK_STR(s->message, "A test value");
        ETW_CHECK_STR(s->props[0].name, "name");
        ETW_CHECK_STR(s->props[1].name, "value");
        ETW_CHECK_STR(s->event_name, "EventID(1)"); /* no task, no name: json-output.md */
        ETW_CHECK(s->provider_name == NULL);        /* a v3.1 blob, no provider message */
    }
    etw_cache_free(c);
    etw_manifest_set_free(m);
}

/* A file with a message table and no WEVT_TEMPLATE, and a language-neutral
 * file with only a MUI resource: each said clearly, nothing loaded. */
static void test_pe_without_manifest(void) {
    diags dg = {0};
    etw_manifest_set *m = new_set(&dg);
    uint32_t n = 9;
    ETW_CHECK_INT(etw_manifest_load_path(m, ETW_TEST_DATA_DIR "/wevt/pe/wrc_test.dll", &n), ETW_E_NOT_FOUND);
    ETW_CHECK_INT(n, 0);
    ETW_CHECK(strstr(dg.first, "wrc_test.dll:0: no WEVT_TEMPLATE resource: no instrumentation manifest") != NULL);
    diags d2 = {0};
    etw_manifest_set *m2 = new_set(&d2);
    ETW_CHECK_INT(etw_manifest_load_path(m2, ETW_TEST_DATA_DIR "/wevt/pe/wrc_test.mui.dll", &n), ETW_E_NOT_FOUND);
    ETW_CHECK(strstr(d2.first, "language-neutral file") != NULL);
    ETW_CHECK(strstr(d2.first, "en-US/<file>.mui") != NULL);
    etw_manifest_set_free(m);
    etw_manifest_set_free(m2);
}

int main(void) {
    ETW_RUN(test_blob_equals_manifest);
    ETW_RUN(test_dll_equals_manifest);
    ETW_RUN(test_plaso_dll);
    ETW_RUN(test_pe_without_manifest);
    ETW_RUN(test_truncated);
    ETW_RUN(test_lying_fields);
    ETW_RUN(test_not_a_blob);
    return ETW_TEST_DONE();
}
