/* test_decoder.c - the dispatch rules of etw_decoder (etw_decoder.h):
 *
 *   1. TraceLogging: schemas keyed by the full metadata bytes and the
 *      pointer width; provider names from PROV_TRAITS; damaged metadata;
 *   2. classic headers (EVENT_TRACE_HEADER, CLASSIC_HEADER flag) never take
 *      the manifest path, even when a manifest has (GUID, 0, 0);
 *   3. manifests: (provider, id, version) keys, version bumps, the negative
 *      cache, a manifest added after a miss, a provider replaced;
 *   4. precedence: user manifest > EventSource manifest from the trace >
 *      merged TRACE_EVENT_INFO metadata (net.4.5.2.x64.etl);
 *   5. WPP and unknown events, a manifest chunk resolved twice;
 *   6. the JSON writer with a decoder ("error", "raw").
 * Synthetic events come from tests/etw_test_builder.h. */
#define _POSIX_C_SOURCE 200809L

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "etw_test.h"
#include "etw_test_builder.h"
#include "etwdecode/etw_decode.h"
#include "etwdecode/etw_decoder.h"
#include "etwdecode/etw_json.h"
#include "etwdecode/etw_label.h"
#include "etwdecode/etw_reader.h"

/* ---- helpers ------------------------------------------------------------- */

typedef struct diags {
    int n;
    char last[512];
    char all[8192];
} diags;

static void on_diag(void *ctx, const etw_diag *d) {
    diags *g = ctx;
    g->n++;
    snprintf(g->last, sizeof g->last, "%s", d->message ? d->message : "");
    size_t l = strlen(g->all), m = strlen(g->last);
    if (l + m + 2 < sizeof g->all) {
        memcpy(g->all + l, g->last, m);
        g->all[l + m] = '\n';
        g->all[l + m + 1] = 0;
    }
    if (getenv("ETW_TEST_VERBOSE")) fprintf(stderr, "diag: %s\n", g->last);
}

static etw_decoder *new_decoder(diags *g) {
    etw_decoder_options o;
    memset(&o, 0, sizeof o);
    if (g) {
        memset(g, 0, sizeof *g);
        o.on_diag = on_diag;
        o.diag_ctx = g;
    }
    etw_decoder *d = NULL;
    ETW_CHECK_INT(etw_decoder_new(&d, &o), ETW_OK);
    return d;
}

static etw_json *new_json(etw_decoder *d, int raw_always) {
    etw_json_options jo;
    memset(&jo, 0, sizeof jo);
    jo.decoder = d;
    jo.raw_always = raw_always;
    etw_json *j = NULL;
    ETW_CHECK_INT(etw_json_new(&j, NULL, &jo), ETW_OK);
    return j;
}

/* The JSON line of ev (NUL-terminated copy in a static buffer). */
static const char *json_line(etw_json *j, const etw_event *ev) {
    static char buf[16384];
    const char *line = NULL;
    size_t len = 0;
    buf[0] = 0;
    etw_status st = etw_json_event(j, NULL, ev, &line, &len);
    ETW_CHECK_INT(st, ETW_OK);
    if (st != ETW_OK) return buf;
    ETW_CHECK(len > 0 && line[len - 1] == '\n');
    if (len >= sizeof buf) len = sizeof buf - 1;
    memcpy(buf, line, len);
    buf[len] = 0;
    return buf;
}

/* The "fields" object of a JSON line ("" when absent). */
static const char *fields_of(const char *line) {
    static char buf[8192];
    buf[0] = 0;
    const char *p = strstr(line, ",\"fields\":");
    if (!p) return buf;
    p += 10;
    int depth = 0, in_str = 0;
    const char *q = p;
    for (; *q; q++) {
        if (in_str) {
            if (*q == '\\' && q[1]) q++;
            else if (*q == '"') in_str = 0;
            continue;
        }
        if (*q == '"') in_str = 1;
        else if (*q == '{' || *q == '[') depth++;
        else if (*q == '}' || *q == ']') {
            if (--depth == 0) {
                q++;
                break;
            }
        }
    }
    size_t n = (size_t)(q - p);
    if (n >= sizeof buf) n = sizeof buf - 1;
    memcpy(buf, p, n);
    buf[n] = 0;
    return buf;
}

/* Every item the decoder yields for ev with s. */
#define MAX_ITEMS 32
static int decode_all(etw_decoder *d, const etw_event *ev, const etw_schema *s, etw_value *out,
                      int max) {
    etw_decode_cursor c;
    if (etw_decoder_begin(d, ev, s, &c) != ETW_OK) return -1;
    int n = 0;
    etw_value v;
    while (etw_decode_next(&c, &v) == ETW_OK) {
        if (n < max) out[n] = v;
        n++;
    }
    if (etw_decode_remaining(&c) != 0) return -2;
    return n;
}

static const etw_property *prop_named(const etw_schema *s, const char *name) {
    for (uint32_t i = 0; s && i < s->prop_count; i++)
        if (strcmp(s->props[i].name, name) == 0) return &s->props[i];
    return NULL;
}

static int value_is(const etw_value *v, const char *name, uint16_t in_type) {
    return v->kind == ETW_VALUE_SCALAR && strcmp(v->name, name) == 0 && v->in_type == in_type;
}

static int value_str(const etw_value *v, const char *s) {
    return v->size == strlen(s) && memcmp(v->data, s, v->size) == 0;
}

/* UTF-16LE of ASCII text equals v's bytes. */
static int value_wstr(const etw_value *v, const char *s) {
    size_t n = strlen(s);
    if (v->size != 2 * n) return 0;
    for (size_t i = 0; i < n; i++)
        if (v->data[2 * i] != (uint8_t)s[i] || v->data[2 * i + 1] != 0) return 0;
    return 1;
}

static char *guid_text(const etw_guid *g) {
    static char s[4][ETW_GUID_STRING_SIZE];
    static int k;
    char *o = s[k++ & 3];
    etw_guid_format(g, o);
    return o;
}

/* A manifest document with one provider. */
static char *manifest_doc(const char *name, const etw_guid *g, const char *body) {
    static const char head[] = "<?xml version='1.0' encoding='utf-8'?>\n"
                               "<instrumentationManifest xmlns='http://schemas.microsoft.com/win/2004/08/events'\n"
                               "    xmlns:win='http://manifests.microsoft.com/win/2004/08/windows/events'>\n"
                               "<instrumentation><events>\n";
    static const char tail[] = "</events></instrumentation>\n</instrumentationManifest>\n";
    size_t n = strlen(head) + strlen(name) + strlen(body) + strlen(tail) + 128;
    char *d = malloc(n);
    if (!d) abort();
    snprintf(d, n, "%s<provider name='%s' guid='{%s}' symbol='P'>\n%s</provider>\n%s", head, name,
             guid_text(g), body, tail);
    return d;
}

static etw_status add_manifest(etw_decoder *d, const char *name, const etw_guid *g, const char *body,
                               const char *origin, uint32_t *np) {
    char *doc = manifest_doc(name, g, body);
    etw_status st = etw_decoder_add_manifest_xml(d, doc, strlen(doc), origin, np);
    free(doc);
    return st;
}

/* An EVENT_HEADER event (64-bit) of provider g with a descriptor. */
static void event_init(etb_event *e, const etw_guid *g, uint16_t id, uint8_t version) {
    etb_event_init(e, 8);
    e->ev.provider = *g;
    e->ev.id = id;
    e->ev.version = version;
    e->ev.level = 4;
    e->ev.channel = 0;
}

/* EventSource manifest chunk events. Every chunk gets its own position in
 * the "file" (buffer_file_offset, record_offset), as a reader gives. */
static uint64_t g_next_offset = 0x100000;

static void chunk_event(etb_event *e, const etw_guid *g, uint16_t total, uint16_t num, const char *chunk,
                        size_t n) {
    etb_event_init(e, 8);
    e->ev.provider = *g;
    e->ev.id = 0xFFFE;
    e->ev.task = 0xFFFE;
    e->ev.opcode = 0xFE;
    e->ev.version = 1;
    e->ev.level = 0;
    e->ev.keywords = 0xF0000000000000ull;
    e->ev.buffer_file_offset = g_next_offset;
    e->ev.record_offset = (uint32_t)(g_next_offset & 0xFFF);
    g_next_offset += 0x10000;
    etb_u8(&e->payload, 1);    /* Format: UTF-8 XML */
    etb_u8(&e->payload, 1);    /* MajorVersion */
    etb_u8(&e->payload, 0);    /* MinorVersion */
    etb_u8(&e->payload, 0x5B); /* Magic */
    etb_u16(&e->payload, total);
    etb_u16(&e->payload, num);
    etb_bytes(&e->payload, chunk, n);
}

/* Send a whole EventSource manifest through etw_decoder_resolve in `parts`
 * chunks; every chunk must resolve to "ManifestData". The last chunk's
 * schema in *last (may be NULL). */
static void send_es_manifest(etw_decoder *d, const etw_guid *g, const char *xml, uint16_t parts,
                             const etw_schema **last) {
    size_t len = strlen(xml), at = 0;
    for (uint16_t i = 0; i < parts; i++) {
        size_t n = i + 1 == parts ? len - at : len / parts;
        etb_event e;
        chunk_event(&e, g, parts, i, xml + at, n);
        at += n;
        const etw_schema *s = NULL;
        const char *why = NULL;
        ETW_CHECK_INT(etw_decoder_resolve(d, etb_event_get(&e), &s, &why), ETW_OK);
        ETW_CHECK(s != NULL);
        if (s) ETW_CHECK_STR(s->event_name, "ManifestData");
        if (last) *last = s;
        etb_event_free(&e);
    }
}

static etw_status resolve(etw_decoder *d, const etw_event *ev, const etw_schema **s, const char **why) {
    *s = NULL;
    *why = NULL;
    return etw_decoder_resolve(d, ev, s, why);
}

/* ---- 1. TraceLogging ---------------------------------------------------- */

static const etw_guid TL_PROVIDER = {0x4f50731a, 0x89cf, 0x4782, {0xb3, 0xe0, 0xdc, 0xe8, 0xc9, 0x04, 0x76, 0xba}};

/* Two events of one provider, same name and descriptor, different fields:
 * two schemas, each decoding its own payload, 1000 times in alternation. */
static void test_tl_same_name_different_fields(void) {
    etw_decoder *d = new_decoder(NULL);
    etw_json *j = new_json(d, 0);
    etb_buf ma, mb;
    etb_init(&ma);
    etb_init(&mb);
    etb_tl_begin(&ma, "Same", 0);
    etb_tl_field(&ma, "a", ETB_TL_INT32, 0, 0);
    etb_tl_field(&ma, "b", ETB_TL_UINT16, 0, 0);
    etb_tl_end(&ma);
    etb_tl_begin(&mb, "Same", 0);
    etb_tl_field(&mb, "x", ETB_TL_UINT64, 0, 0);
    etb_tl_field(&mb, "s", ETB_TL_ANSISTRING, 0, 0);
    etb_tl_end(&mb);

    etb_event ea, eb;
    etb_event_init(&ea, 8);
    etb_event_init(&eb, 8);
    etb_event *both[2] = {&ea, &eb};
    for (int k = 0; k < 2; k++) {
        both[k]->ev.provider = TL_PROVIDER;
        both[k]->ev.id = 0;
        both[k]->ev.version = 0;
        both[k]->ev.opcode = 0;
        both[k]->ev.level = 5;
        both[k]->ev.keywords = 0x0000400000000000ull;
        etb_event_add_traits(both[k], "Test.Alternation", NULL);
    }
    etb_event_add_ext(&ea, ETW_EXT_EVENT_SCHEMA_TL, ma.data, ma.len);
    etb_event_add_ext(&eb, ETW_EXT_EVENT_SCHEMA_TL, mb.data, mb.len);

    const etw_schema *sa = NULL, *sb = NULL;
    int bad_ptr = 0, bad_decode = 0, bad_json = 0;
    for (int i = 0; i < 1000; i++) {
        etb_reset(&ea.payload);
        etb_i32(&ea.payload, -i);
        etb_u16(&ea.payload, (uint16_t)(i * 7));
        etb_reset(&eb.payload);
        etb_u64(&eb.payload, (uint64_t)i * 1000000007ull);
        char str[32];
        snprintf(str, sizeof str, "n%d", i);
        etb_ansi(&eb.payload, str);

        const etw_event *a = etb_event_get(&ea), *b = etb_event_get(&eb);
        const etw_schema *s;
        const char *why;
        etw_value v[MAX_ITEMS];
        char want[256];

        ETW_CHECK_INT(resolve(d, a, &s, &why), ETW_OK);
        if (i == 0) sa = s;
        if (s != sa || !s) {
            bad_ptr++;
            continue;
        }
        int n = decode_all(d, a, s, v, MAX_ITEMS);
        if (n != 2 || !value_is(&v[0], "a", ETW_INTYPE_INT32) || etw_value_i64(&v[0]) != -i ||
            !value_is(&v[1], "b", ETW_INTYPE_UINT16) || etw_value_u64(&v[1]) != (uint64_t)(uint16_t)(i * 7))
            bad_decode++;
        snprintf(want, sizeof want, "{\"a\":%d,\"b\":%u}", -i, (unsigned)(uint16_t)(i * 7));
        if (strcmp(fields_of(json_line(j, a)), want) != 0) bad_json++;

        ETW_CHECK_INT(resolve(d, b, &s, &why), ETW_OK);
        if (i == 0) sb = s;
        if (s != sb || !s) {
            bad_ptr++;
            continue;
        }
        n = decode_all(d, b, s, v, MAX_ITEMS);
        if (n != 2 || !value_is(&v[0], "x", ETW_INTYPE_UINT64) ||
            etw_value_u64(&v[0]) != (uint64_t)i * 1000000007ull || !value_is(&v[1], "s", ETW_INTYPE_ANSISTRING) ||
            !value_str(&v[1], str))
            bad_decode++;
        snprintf(want, sizeof want, "{\"x\":%llu,\"s\":\"%s\"}", (unsigned long long)i * 1000000007ull, str);
        if (strcmp(fields_of(json_line(j, b)), want) != 0) bad_json++;
    }
    ETW_CHECK(sa != NULL && sb != NULL && sa != sb);
    ETW_CHECK_INT(bad_ptr, 0);
    ETW_CHECK_INT(bad_decode, 0);
    ETW_CHECK_INT(bad_json, 0);
    if (sa && sb) {
        ETW_CHECK_STR(sa->event_name, "Same");
        ETW_CHECK_STR(sb->event_name, "Same");
        ETW_CHECK_INT(sa->source, ETW_SOURCE_TRACELOGGING);
        ETW_CHECK_INT(sb->source, ETW_SOURCE_TRACELOGGING);
        ETW_CHECK(sa->id != sb->id);
        ETW_CHECK_INT(sa->prop_count, 2);
        ETW_CHECK_INT(sb->prop_count, 2);
        ETW_CHECK(prop_named(sa, "b") && !prop_named(sa, "s"));
        ETW_CHECK(prop_named(sb, "s") && !prop_named(sb, "b"));
    }
    /* the JSON line: the event's own name, the traits' provider name */
    const char *line = json_line(j, etb_event_get(&ea));
    ETW_CHECK(strstr(line, "\"provider\":\"Test.Alternation\"") != NULL);
    ETW_CHECK(strstr(line, "\"event\":\"Same\"") != NULL);
    ETW_CHECK(strstr(line, "\"error\"") == NULL);
    ETW_CHECK(strstr(line, "\"raw\"") == NULL);

    const etw_decoder_stats *st = etw_decoder_stats_get(d);
    ETW_CHECK_INT(st->schemas, 2);
    ETW_CHECK_INT(st->misses, 2);
    ETW_CHECK_INT(st->lookups, 4001); /* resolve + JSON per event, and the line above */
    ETW_CHECK_INT(st->hits, 3999);
    ETW_CHECK_INT(st->errors, 0);
    ETW_CHECK_INT(st->negative_hits, 0);

    etb_event_free(&ea);
    etb_event_free(&eb);
    etb_free(&ma);
    etb_free(&mb);
    etw_json_free(j);
    etw_decoder_free(d);
}

/* The same metadata from a 32-bit and a 64-bit writer: two cache entries,
 * pointers decoded with the event's width. */
static void test_tl_pointer_width(void) {
    etw_decoder *d = new_decoder(NULL);
    etw_json *j = new_json(d, 0);
    etb_buf m;
    etb_init(&m);
    etb_tl_begin(&m, "WithPointer", 0);
    etb_tl_field(&m, "p", ETB_TL_POINTER_UNSUPPORTED, 0, 0); /* in-type 16: the writer's width */
    etb_tl_field(&m, "n", ETB_TL_UINT32, 0, 0);
    etb_tl_end(&m);

    etb_event e32, e64;
    etb_event_init(&e32, 4);
    etb_event_init(&e64, 8);
    ETW_CHECK(e32.ev.flags & ETW_EVENT_FLAG_32_BIT_HEADER);
    ETW_CHECK(e64.ev.flags & ETW_EVENT_FLAG_64_BIT_HEADER);
    e32.ev.provider = e64.ev.provider = TL_PROVIDER;
    etb_event_add_traits(&e32, "Test.Width", NULL);
    etb_event_add_traits(&e64, "Test.Width", NULL);
    etb_event_add_ext(&e32, ETW_EXT_EVENT_SCHEMA_TL, m.data, m.len);
    etb_event_add_ext(&e64, ETW_EXT_EVENT_SCHEMA_TL, m.data, m.len);
    etb_u32(&e32.payload, 0x12345678u);
    etb_u32(&e32.payload, 7);
    etb_u64(&e64.payload, 0x1122334455667788ull);
    etb_u32(&e64.payload, 8);
    const etw_event *a = etb_event_get(&e32), *b = etb_event_get(&e64);

    const etw_schema *s32, *s64, *s;
    const char *why;
    ETW_CHECK_INT(resolve(d, a, &s32, &why), ETW_OK);
    ETW_CHECK_INT(resolve(d, b, &s64, &why), ETW_OK);
    ETW_CHECK(s32 && s64 && s32 != s64);
    if (s32 && s64) {
        ETW_CHECK_INT(s32->pointer_size, 4);
        ETW_CHECK_INT(s64->pointer_size, 8);
        ETW_CHECK_STR(s32->event_name, "WithPointer");
        ETW_CHECK_STR(s64->event_name, "WithPointer");
    }
    ETW_CHECK_INT(etw_decoder_stats_get(d)->schemas, 2);
    /* each width hits its own entry again */
    ETW_CHECK_INT(resolve(d, a, &s, &why), ETW_OK);
    ETW_CHECK(s == s32);
    ETW_CHECK_INT(resolve(d, b, &s, &why), ETW_OK);
    ETW_CHECK(s == s64);
    ETW_CHECK_INT(etw_decoder_stats_get(d)->misses, 2);
    ETW_CHECK_INT(etw_decoder_stats_get(d)->hits, 2);

    etw_value v[MAX_ITEMS];
    if (s32) {
        ETW_CHECK_INT(decode_all(d, a, s32, v, MAX_ITEMS), 2);
        ETW_CHECK(value_is(&v[0], "p", ETW_INTYPE_POINTER));
        ETW_CHECK_INT(v[0].size, 4);
        ETW_CHECK_INT(etw_value_u64(&v[0]), 0x12345678u);
        ETW_CHECK_INT(etw_value_u64(&v[1]), 7);
    }
    if (s64) {
        ETW_CHECK_INT(decode_all(d, b, s64, v, MAX_ITEMS), 2);
        ETW_CHECK(value_is(&v[0], "p", ETW_INTYPE_POINTER));
        ETW_CHECK_INT(v[0].size, 8);
        ETW_CHECK(etw_value_u64(&v[0]) == 0x1122334455667788ull);
        ETW_CHECK_INT(etw_value_u64(&v[1]), 8);
    }
    ETW_CHECK_STR(fields_of(json_line(j, a)), "{\"p\":\"0x12345678\",\"n\":7}");
    ETW_CHECK_STR(fields_of(json_line(j, b)), "{\"p\":\"0x1122334455667788\",\"n\":8}");
    ETW_CHECK_INT(etw_decoder_stats_get(d)->schemas, 2);

    etb_event_free(&e32);
    etb_event_free(&e64);
    etb_free(&m);
    etw_json_free(j);
    etw_decoder_free(d);
}

/* The provider name is the event's PROV_TRAITS name, per event: the same
 * metadata from two providers shares one schema but keeps its names. */
static void test_tl_provider_name(void) {
    etw_decoder *d = new_decoder(NULL);
    etw_json *j = new_json(d, 0);
    etb_buf m;
    etb_init(&m);
    etb_tl_begin(&m, "Named", 0);
    etb_tl_field(&m, "v", ETB_TL_UINT8, 0, 0);
    etb_tl_end(&m);
    etb_event e1, e2, e3;
    etb_event_init(&e1, 8);
    etb_event_init(&e2, 8);
    etb_event_init(&e3, 8);
    e1.ev.provider = TL_PROVIDER;
    e2.ev.provider = etb_make_guid(0x01020304, 0x0506, 0x0708, 0x090a0b0c0d0e0f10ull);
    e3.ev.provider = TL_PROVIDER;
    etb_event_add_traits(&e1, "Contoso.First", NULL);
    etb_event_add_traits(&e2, "Contoso.Second", NULL);
    /* e3: no traits item */
    etb_event_add_ext(&e1, ETW_EXT_EVENT_SCHEMA_TL, m.data, m.len);
    etb_event_add_ext(&e2, ETW_EXT_EVENT_SCHEMA_TL, m.data, m.len);
    etb_event_add_ext(&e3, ETW_EXT_EVENT_SCHEMA_TL, m.data, m.len);
    etb_u8(&e1.payload, 1);
    etb_u8(&e2.payload, 2);
    etb_u8(&e3.payload, 3);
    const etw_event *a = etb_event_get(&e1), *b = etb_event_get(&e2), *c = etb_event_get(&e3);

    const etw_schema *s1, *s2, *s3;
    const char *why, *name = NULL;
    size_t len = 0;
    ETW_CHECK_INT(resolve(d, a, &s1, &why), ETW_OK);
    ETW_CHECK_INT(resolve(d, b, &s2, &why), ETW_OK);
    ETW_CHECK_INT(resolve(d, c, &s3, &why), ETW_OK);
    ETW_CHECK(s1 && s1 == s2 && s2 == s3); /* keyed by the metadata alone */
    if (s1) ETW_CHECK(s1->provider_name == NULL);
    ETW_CHECK_INT(etw_decoder_provider_name(a, s1, &name, &len), ETW_OK);
    ETW_CHECK(len == 13 && memcmp(name, "Contoso.First", 13) == 0);
    ETW_CHECK_INT(etw_decoder_provider_name(b, s2, &name, &len), ETW_OK);
    ETW_CHECK(len == 14 && memcmp(name, "Contoso.Second", 14) == 0);
    ETW_CHECK_INT(etw_decoder_provider_name(c, s3, &name, &len), ETW_E_NOT_FOUND);

    const char *line = json_line(j, a);
    ETW_CHECK(strstr(line, "\"provider\":\"Contoso.First\"") != NULL);
    ETW_CHECK(strstr(line, "\"provider_guid\":\"4f50731a-89cf-4782-b3e0-dce8c90476ba\"") != NULL);
    ETW_CHECK_STR(fields_of(line), "{\"v\":1}");
    line = json_line(j, b);
    ETW_CHECK(strstr(line, "\"provider\":\"Contoso.Second\"") != NULL);
    ETW_CHECK(strstr(line, "\"provider_guid\":\"01020304-0506-0708-090a-0b0c0d0e0f10\"") != NULL);
    ETW_CHECK_STR(fields_of(line), "{\"v\":2}");
    line = json_line(j, c); /* no traits: the GUID names the provider */
    ETW_CHECK(strstr(line, "\"provider\":\"4f50731a-89cf-4782-b3e0-dce8c90476ba\"") != NULL);
    ETW_CHECK_STR(fields_of(line), "{\"v\":3}");
    ETW_CHECK_INT(etw_decoder_stats_get(d)->schemas, 1);

    etb_event_free(&e1);
    etb_event_free(&e2);
    etb_event_free(&e3);
    etb_free(&m);
    etw_json_free(j);
    etw_decoder_free(d);
}

/* Damaged metadata: an error with its reason, nothing cached, and the next
 * good event still decodes. */
static void test_tl_corrupt_metadata(void) {
    etw_decoder *d = new_decoder(NULL);
    etw_json *j = new_json(d, 0);
    const etw_schema *s;
    const char *why;

    /* Size larger than the item */
    etb_buf big;
    etb_init(&big);
    etb_tl_begin(&big, "TooBig", 0);
    etb_tl_field(&big, "a", ETB_TL_INT32, 0, 0);
    etb_tl_end(&big);
    etb_put16_at(&big, 0, (uint16_t)(big.len + 10));
    etb_event e1;
    etb_event_init(&e1, 8);
    e1.ev.provider = TL_PROVIDER;
    etb_event_add_traits(&e1, "Test.Corrupt", NULL);
    etb_event_add_ext(&e1, ETW_EXT_EVENT_SCHEMA_TL, big.data, big.len);
    etb_i32(&e1.payload, 5);
    const etw_event *ev1 = etb_event_get(&e1);
    ETW_CHECK_INT(resolve(d, ev1, &s, &why), ETW_E_TRUNCATED);
    ETW_CHECK(s == NULL);
    ETW_CHECK_STR(why, "bad TraceLogging metadata: metadata size exceeds the item");

    /* event name without its NUL */
    etb_buf nonul;
    etb_init(&nonul);
    etb_u16(&nonul, 0);
    etb_u8(&nonul, 0); /* no tags */
    etb_bytes(&nonul, "NoTerminator", 12);
    etb_tl_end(&nonul);
    etb_event e2;
    etb_event_init(&e2, 8);
    e2.ev.provider = TL_PROVIDER;
    etb_event_add_ext(&e2, ETW_EXT_EVENT_SCHEMA_TL, nonul.data, nonul.len);
    etb_u8(&e2.payload, 0xAB);
    const etw_event *ev2 = etb_event_get(&e2);
    ETW_CHECK_INT(resolve(d, ev2, &s, &why), ETW_E_CORRUPT);
    ETW_CHECK(s == NULL);
    ETW_CHECK_STR(why, "bad TraceLogging metadata: event name is not NUL-terminated");

    /* a field name without its NUL */
    etb_buf fnonul;
    etb_init(&fnonul);
    etb_tl_begin(&fnonul, "FieldNoNul", 0);
    etb_bytes(&fnonul, "abc", 3);
    etb_tl_end(&fnonul);
    etb_event e3;
    etb_event_init(&e3, 8);
    e3.ev.provider = TL_PROVIDER;
    etb_event_add_ext(&e3, ETW_EXT_EVENT_SCHEMA_TL, fnonul.data, fnonul.len);
    const etw_event *ev3 = etb_event_get(&e3);
    ETW_CHECK_INT(resolve(d, ev3, &s, &why), ETW_E_CORRUPT);
    ETW_CHECK_STR(why, "bad TraceLogging metadata: field name is not NUL-terminated");

    const etw_decoder_stats *st = etw_decoder_stats_get(d);
    ETW_CHECK_INT(st->errors, 3);
    ETW_CHECK_INT(st->schemas, 0);
    /* still an error the second time (nothing was cached) */
    ETW_CHECK_INT(resolve(d, ev1, &s, &why), ETW_E_TRUNCATED);
    ETW_CHECK_INT(st->errors, 4);

    /* the JSON line carries the reason and the raw payload */
    const char *line = json_line(j, ev2);
    ETW_CHECK(strstr(line, "\"error\":\"bad TraceLogging metadata: event name is not NUL-terminated\"") != NULL);
    ETW_CHECK(strstr(line, "\"raw\":\"ab\"") != NULL);
    ETW_CHECK_STR(fields_of(line), "{}");
    line = json_line(j, ev1);
    ETW_CHECK(strstr(line, "\"provider\":\"Test.Corrupt\"") != NULL);
    ETW_CHECK(strstr(line, "\"raw\":\"05000000\"") != NULL);

    /* the next good event decodes */
    etb_buf good;
    etb_init(&good);
    etb_tl_begin(&good, "Good", 0);
    etb_tl_field(&good, "a", ETB_TL_INT32, 0, 0);
    etb_tl_field(&good, "w", ETB_TL_UNICODESTRING, 0, 0);
    etb_tl_end(&good);
    etb_event e4;
    etb_event_init(&e4, 8);
    e4.ev.provider = TL_PROVIDER;
    etb_event_add_traits(&e4, "Test.Corrupt", NULL);
    etb_event_add_ext(&e4, ETW_EXT_EVENT_SCHEMA_TL, good.data, good.len);
    etb_i32(&e4.payload, -42);
    etb_utf16(&e4.payload, "ok");
    const etw_event *ev4 = etb_event_get(&e4);
    ETW_CHECK_INT(resolve(d, ev4, &s, &why), ETW_OK);
    ETW_CHECK(s != NULL);
    if (s) {
        ETW_CHECK_STR(s->event_name, "Good");
        etw_value v[MAX_ITEMS];
        ETW_CHECK_INT(decode_all(d, ev4, s, v, MAX_ITEMS), 2);
        ETW_CHECK(etw_value_i64(&v[0]) == -42);
        ETW_CHECK(value_is(&v[1], "w", ETW_INTYPE_UNICODESTRING) && value_wstr(&v[1], "ok"));
    }
    line = json_line(j, ev4);
    ETW_CHECK_STR(fields_of(line), "{\"a\":-42,\"w\":\"ok\"}");
    ETW_CHECK(strstr(line, "\"error\"") == NULL);
    ETW_CHECK_INT(st->schemas, 1);

    etb_event_free(&e1);
    etb_event_free(&e2);
    etb_event_free(&e3);
    etb_event_free(&e4);
    etb_free(&big);
    etb_free(&nonul);
    etb_free(&fnonul);
    etb_free(&good);
    etw_json_free(j);
    etw_decoder_free(d);
}

/* ---- 2. classic events never take the manifest path --------------------- */

static const etw_guid G_CLASSIC = {0x9a3e5e2b, 0x17c4, 0x4d5b, {0x8a, 0x01, 0x11, 0x22, 0x33, 0x44, 0x55, 0x66}};

static const char classic_body[] =
    " <tasks><task name='Zero' value='3'/></tasks>\n"
    " <templates><template tid='t0'><data name='Value' inType='win:UInt32'/></template></templates>\n"
    " <events><event value='0' version='0' task='Zero' template='t0' symbol='E0'/></events>\n";

static void test_classic_never_manifest(void) {
    etw_decoder *d = new_decoder(NULL);
    uint32_t np = 0;
    ETW_CHECK_INT(add_manifest(d, "Test-Classic", &G_CLASSIC, classic_body, "classic.man", &np), ETW_OK);
    ETW_CHECK_INT(np, 1);
    ETW_CHECK_INT(etw_decoder_stats_get(d)->manifest_providers, 1);

    char want[256];
    snprintf(want, sizeof want, "no schema: no MOF class for event class %s, opcode 0, version 0",
             guid_text(&G_CLASSIC));

    /* EVENT_TRACE_HEADER (classic TraceEvent), (G, 0, 0) */
    etb_event ef;
    event_init(&ef, &G_CLASSIC, 0, 0);
    ef.ev.form = ETW_FORM_FULL;
    ef.ev.flags = ETW_EVENT_FLAG_CLASSIC_HEADER | ETW_EVENT_FLAG_64_BIT_HEADER;
    etb_u32(&ef.payload, 99);
    /* EVENT_HEADER with the CLASSIC_HEADER flag */
    etb_event ec;
    event_init(&ec, &G_CLASSIC, 0, 0);
    ec.ev.flags |= ETW_EVENT_FLAG_CLASSIC_HEADER;
    etb_u32(&ec.payload, 98);
    /* EVENT_HEADER without it */
    etb_event em;
    event_init(&em, &G_CLASSIC, 0, 0);
    etb_u32(&em.payload, 97);
    const etw_event *full = etb_event_get(&ef), *flag = etb_event_get(&ec), *man = etb_event_get(&em);

    const etw_schema *s;
    const char *why;
    ETW_CHECK_INT(resolve(d, full, &s, &why), ETW_E_NOT_FOUND);
    ETW_CHECK(s == NULL);
    ETW_CHECK_STR(why, want);
    ETW_CHECK_INT(resolve(d, flag, &s, &why), ETW_E_NOT_FOUND);
    ETW_CHECK(s == NULL);
    ETW_CHECK_STR(why, want);

    const etw_schema *sm = NULL;
    ETW_CHECK_INT(resolve(d, man, &sm, &why), ETW_OK);
    ETW_CHECK(sm != NULL);
    if (sm) {
        ETW_CHECK_INT(sm->source, ETW_SOURCE_MANIFEST);
        ETW_CHECK_STR(sm->event_name, "Zero");
        ETW_CHECK_STR(sm->provider_name, "Test-Classic");
        ETW_CHECK_INT(sm->prop_count, 1);
        etw_value v[MAX_ITEMS];
        ETW_CHECK_INT(decode_all(d, man, sm, v, MAX_ITEMS), 1);
        ETW_CHECK(value_is(&v[0], "Value", ETW_INTYPE_UINT32) && etw_value_u64(&v[0]) == 97);
    }
    /* with the manifest schema now cached, the classic forms still miss
     * (answered by the negative cache, with the same reason) */
    uint64_t neg = etw_decoder_stats_get(d)->negative_hits;
    ETW_CHECK_INT(resolve(d, full, &s, &why), ETW_E_NOT_FOUND);
    ETW_CHECK(s == NULL);
    ETW_CHECK_STR(why, want);
    ETW_CHECK_INT(resolve(d, flag, &s, &why), ETW_E_NOT_FOUND);
    ETW_CHECK(s == NULL);
    ETW_CHECK_STR(why, want);
    ETW_CHECK_INT(etw_decoder_stats_get(d)->negative_hits, neg + 2);
    ETW_CHECK_INT(resolve(d, man, &s, &why), ETW_OK);
    ETW_CHECK(s == sm);

    /* other classic header forms, same GUID: never the manifest */
    static const etw_header_form forms[] = {ETW_FORM_SYSTEM, ETW_FORM_COMPACT, ETW_FORM_PERFINFO,
                                            ETW_FORM_INSTANCE};
    for (size_t i = 0; i < sizeof forms / sizeof forms[0]; i++) {
        ef.ev.form = forms[i];
        ETW_CHECK_INT(resolve(d, etb_event_get(&ef), &s, &why), ETW_E_NOT_FOUND);
        ETW_CHECK(s == NULL);
        ETW_CHECK_STR(why, want);
    }
    /* the opcode (event type) and version are the classic key */
    ef.ev.form = ETW_FORM_FULL;
    ef.ev.opcode = 12;
    ef.ev.version = 2;
    ETW_CHECK_INT(resolve(d, etb_event_get(&ef), &s, &why), ETW_E_NOT_FOUND);
    snprintf(want, sizeof want, "no schema: no MOF class for event class %s, opcode 12, version 2",
             guid_text(&G_CLASSIC));
    ETW_CHECK_STR(why, want);

    /* the JSON line of the classic event: an error, never the manifest's fields */
    etw_json *j = new_json(d, 0);
    ef.ev.opcode = 0;
    ef.ev.version = 0;
    const char *line = json_line(j, etb_event_get(&ef));
    ETW_CHECK(strstr(line, "\"error\":\"no schema: no MOF class for event class") != NULL);
    ETW_CHECK(strstr(line, "Value") == NULL);
    ETW_CHECK(strstr(line, "\"raw\":\"63000000\"") != NULL);
    etw_json_free(j);

    etb_event_free(&ef);
    etb_event_free(&ec);
    etb_event_free(&em);
    etw_decoder_free(d);
}

/* ---- 3. manifests ---------------------------------------------------------- */

static const etw_guid G_MAN = {0x3c8b5d2a, 0x1111, 0x4a5b, {0x8c, 0x6d, 0x00, 0x00, 0x00, 0x00, 0x00, 0x01}};
static const etw_guid G_LATE = {0x3c8b5d2a, 0x2222, 0x4a5b, {0x8c, 0x6d, 0x00, 0x00, 0x00, 0x00, 0x00, 0x02}};

static const char man_v1_body[] =
    " <tasks><task name='Alpha' value='1'/><task name='Beta' value='2'/></tasks>\n"
    " <templates>\n"
    "  <template tid='tA'><data name='A' inType='win:UInt32'/><data name='B' inType='win:UInt16'/></template>\n"
    "  <template tid='tB'><data name='A' inType='win:UInt32'/><data name='C' inType='win:UInt64'/>"
    "<data name='D' inType='win:UnicodeString'/></template>\n"
    " </templates>\n"
    " <events>\n"
    "  <event value='0' version='0' task='Alpha' template='tA' symbol='A0'/>\n"
    "  <event value='0' version='1' task='Alpha' template='tB' symbol='A1'/>\n"
    "  <event value='5' version='0' task='Beta' opcode='win:Start' template='tA' symbol='B5'/>\n"
    " </events>\n";

/* the same provider, later: event (0, 0) has another layout */
static const char man_v2_body[] =
    " <tasks><task name='Gamma' value='1'/></tasks>\n"
    " <templates><template tid='tC'><data name='X' inType='win:UInt8'/>"
    "<data name='Y' inType='win:AnsiString'/></template></templates>\n"
    " <events><event value='0' version='0' task='Gamma' template='tC' symbol='G0'/></events>\n";

static const char late_body[] =
    " <templates><template tid='tL'><data name='L' inType='win:Int64'/></template></templates>\n"
    " <events><event value='77' version='0' template='tL' symbol='LateEvent'/></events>\n";

static void test_manifest_keys(void) {
    diags g;
    etw_decoder *d = new_decoder(&g);
    uint32_t np = 0;
    ETW_CHECK_INT(add_manifest(d, "Test-Dispatch", &G_MAN, man_v1_body, "v1.man", &np), ETW_OK);
    ETW_CHECK_INT(np, 1);
    ETW_CHECK_INT(g.n, 0);
    const etw_decoder_stats *st = etw_decoder_stats_get(d);
    ETW_CHECK_INT(st->manifest_providers, 1);

    /* a version bump: two schemas, two layouts */
    etb_event e0, e1, e5;
    event_init(&e0, &G_MAN, 0, 0);
    etb_u32(&e0.payload, 0xAABBCCDDu);
    etb_u16(&e0.payload, 0x1234);
    event_init(&e1, &G_MAN, 0, 1);
    etb_u32(&e1.payload, 1);
    etb_u64(&e1.payload, 0x0102030405060708ull);
    etb_utf16(&e1.payload, "hey");
    event_init(&e5, &G_MAN, 5, 0);
    e5.ev.opcode = 1;
    e5.ev.task = 2;
    etb_u32(&e5.payload, 5);
    etb_u16(&e5.payload, 6);
    const etw_event *v0 = etb_event_get(&e0), *v1 = etb_event_get(&e1), *i5 = etb_event_get(&e5);

    const etw_schema *s0 = NULL, *s1 = NULL, *s5 = NULL, *s;
    const char *why;
    ETW_CHECK_INT(resolve(d, v0, &s0, &why), ETW_OK);
    ETW_CHECK_INT(resolve(d, v1, &s1, &why), ETW_OK);
    ETW_CHECK_INT(resolve(d, i5, &s5, &why), ETW_OK);
    ETW_CHECK(s0 && s1 && s5 && s0 != s1 && s0 != s5 && s1 != s5);
    ETW_CHECK_INT(st->schemas, 3);
    ETW_CHECK_INT(st->misses, 3);
    etw_value v[MAX_ITEMS];
    if (s0 && s1 && s5) {
        ETW_CHECK_INT(s0->source, ETW_SOURCE_MANIFEST);
        ETW_CHECK_STR(s0->provider_name, "Test-Dispatch");
        ETW_CHECK_STR(s0->event_name, "Alpha");
        ETW_CHECK_INT(s0->event_id, 0);
        ETW_CHECK_INT(s0->version, 0);
        ETW_CHECK_INT(s0->prop_count, 2);
        ETW_CHECK_STR(s0->props[0].name, "A");
        ETW_CHECK_STR(s0->props[1].name, "B");
        ETW_CHECK_INT(s0->props[1].in_type, ETW_INTYPE_UINT16);
        ETW_CHECK_STR(s1->event_name, "Alpha");
        ETW_CHECK_INT(s1->version, 1);
        ETW_CHECK_INT(s1->prop_count, 3);
        ETW_CHECK_STR(s1->props[1].name, "C");
        ETW_CHECK_INT(s1->props[1].in_type, ETW_INTYPE_UINT64);
        ETW_CHECK_STR(s1->props[2].name, "D");
        ETW_CHECK_INT(s1->props[2].in_type, ETW_INTYPE_UNICODESTRING);
        ETW_CHECK_STR(s5->event_name, "Beta/Start");
        ETW_CHECK_INT(s5->event_id, 5);

        ETW_CHECK_INT(decode_all(d, v0, s0, v, MAX_ITEMS), 2);
        ETW_CHECK(value_is(&v[0], "A", ETW_INTYPE_UINT32) && etw_value_u64(&v[0]) == 0xAABBCCDDu);
        ETW_CHECK(value_is(&v[1], "B", ETW_INTYPE_UINT16) && etw_value_u64(&v[1]) == 0x1234);
        ETW_CHECK_INT(decode_all(d, v1, s1, v, MAX_ITEMS), 3);
        ETW_CHECK(value_is(&v[1], "C", ETW_INTYPE_UINT64) && etw_value_u64(&v[1]) == 0x0102030405060708ull);
        ETW_CHECK(value_is(&v[2], "D", ETW_INTYPE_UNICODESTRING) && value_wstr(&v[2], "hey"));
    }
    /* hits: same pointers, no new schema */
    ETW_CHECK_INT(resolve(d, v0, &s, &why), ETW_OK);
    ETW_CHECK(s == s0);
    ETW_CHECK_INT(resolve(d, v1, &s, &why), ETW_OK);
    ETW_CHECK(s == s1);
    ETW_CHECK_INT(st->hits, 2);
    ETW_CHECK_INT(st->schemas, 3);

    /* 32-bit events of the same key: their own entry */
    etb_event e32;
    event_init(&e32, &G_MAN, 0, 0);
    e32.ev.pointer_size = 4;
    e32.ev.flags = ETW_EVENT_FLAG_32_BIT_HEADER;
    etb_u32(&e32.payload, 1);
    etb_u16(&e32.payload, 2);
    ETW_CHECK_INT(resolve(d, etb_event_get(&e32), &s, &why), ETW_OK);
    ETW_CHECK(s && s != s0);
    if (s) ETW_CHECK_INT(s->pointer_size, 4);
    if (s0) ETW_CHECK_INT(s0->pointer_size, 8);
    ETW_CHECK_INT(st->schemas, 4);

    /* an unknown id of a provider the manifest has: which provider, which
     * file, which event; repeated misses hit the negative cache */
    etb_event eu;
    event_init(&eu, &G_MAN, 1234, 3);
    etb_u8(&eu.payload, 1);
    const etw_event *unk = etb_event_get(&eu);
    char want[256];
    snprintf(want, sizeof want, "no schema: provider Test-Dispatch (from v1.man) has no event id 1234 version 3");
    uint64_t misses = st->misses, neg = st->negative_hits, errors = st->errors;
    ETW_CHECK_INT(resolve(d, unk, &s, &why), ETW_E_NOT_FOUND);
    ETW_CHECK(s == NULL);
    ETW_CHECK_STR(why, want);
    ETW_CHECK_INT(st->misses, misses + 1);
    ETW_CHECK_INT(st->negative_hits, neg);
    for (int i = 0; i < 10; i++) {
        ETW_CHECK_INT(resolve(d, unk, &s, &why), ETW_E_NOT_FOUND);
        ETW_CHECK_STR(why, want);
    }
    ETW_CHECK_INT(st->misses, misses + 1);
    ETW_CHECK_INT(st->negative_hits, neg + 10);
    ETW_CHECK_INT(st->errors, errors + 11);
    ETW_CHECK_INT(st->schemas, 4);
    /* the same id of another version is another key (a real miss) */
    eu.ev.version = 4;
    ETW_CHECK_INT(resolve(d, etb_event_get(&eu), &s, &why), ETW_E_NOT_FOUND);
    ETW_CHECK_INT(st->misses, misses + 2);
    snprintf(want, sizeof want, "no schema: provider Test-Dispatch (from v1.man) has no event id 1234 version 4");
    ETW_CHECK_STR(why, want);
    /* cached keys are still hits, not negative hits */
    ETW_CHECK_INT(resolve(d, v0, &s, &why), ETW_OK);
    ETW_CHECK(s == s0);
    ETW_CHECK_INT(st->negative_hits, neg + 10);

    etb_event_free(&e0);
    etb_event_free(&e1);
    etb_event_free(&e5);
    etb_event_free(&e32);
    etb_event_free(&eu);
    etw_decoder_free(d);
}

/* A manifest added after a miss: the very next resolve finds it. */
static void test_manifest_late_add(void) {
    diags g;
    etw_decoder *d = new_decoder(&g);
    const etw_decoder_stats *st = etw_decoder_stats_get(d);
    etb_event e;
    event_init(&e, &G_LATE, 77, 0);
    etb_i64(&e.payload, -77);
    const etw_event *ev = etb_event_get(&e);
    const etw_schema *s;
    const char *why;
    char want[256];
    snprintf(want, sizeof want, "no schema: manifest not found for provider %s, id 77, version 0",
             guid_text(&G_LATE));
    ETW_CHECK_INT(resolve(d, ev, &s, &why), ETW_E_NOT_FOUND);
    ETW_CHECK_STR(why, want);
    ETW_CHECK_INT(resolve(d, ev, &s, &why), ETW_E_NOT_FOUND);
    ETW_CHECK_INT(st->negative_hits, 1);
    ETW_CHECK_INT(st->misses, 1);

    /* a manifest of another provider also clears the negative cache, and
     * the key still misses (a real miss this time) */
    uint32_t np = 0;
    ETW_CHECK_INT(add_manifest(d, "Test-Other", &G_MAN, man_v1_body, "other.man", &np), ETW_OK);
    ETW_CHECK_INT(resolve(d, ev, &s, &why), ETW_E_NOT_FOUND);
    ETW_CHECK_INT(st->misses, 2);
    ETW_CHECK_INT(st->negative_hits, 1);

    ETW_CHECK_INT(add_manifest(d, "Test-Late", &G_LATE, late_body, "late.man", &np), ETW_OK);
    ETW_CHECK_INT(np, 1);
    ETW_CHECK_INT(st->manifest_providers, 2);
    ETW_CHECK_INT(resolve(d, ev, &s, &why), ETW_OK);
    ETW_CHECK(s != NULL);
    if (s) {
        ETW_CHECK_INT(s->source, ETW_SOURCE_MANIFEST);
        ETW_CHECK_STR(s->event_name, "LateEvent");
        ETW_CHECK_STR(s->provider_name, "Test-Late");
        etw_value v[MAX_ITEMS];
        ETW_CHECK_INT(decode_all(d, ev, s, v, MAX_ITEMS), 1);
        ETW_CHECK(value_is(&v[0], "L", ETW_INTYPE_INT64) && etw_value_i64(&v[0]) == -77);
    }
    ETW_CHECK_INT(st->negative_hits, 1);
    ETW_CHECK_INT(g.n, 0);

    /* a malformed manifest: ETW_E_CORRUPT, reported, nothing changes */
    uint64_t problems = st->problems;
    static const char broken[] = "<instrumentationManifest><instrumentation><events>"
                                 "<provider name='x' guid='{00000000-0000-0000-0000-000000000001}'>"
                                 "</events></instrumentationManifest>";
    ETW_CHECK_INT(etw_decoder_add_manifest_xml(d, broken, strlen(broken), "broken.man", &np), ETW_E_CORRUPT);
    ETW_CHECK_INT(np, 0);
    ETW_CHECK(st->problems > problems);
    ETW_CHECK(strstr(g.last, "broken.man") != NULL);
    ETW_CHECK_INT(st->manifest_providers, 2);
    const etw_schema *again;
    ETW_CHECK_INT(resolve(d, ev, &again, &why), ETW_OK);
    ETW_CHECK(again == s);
    /* a file that cannot be read */
    ETW_CHECK_INT(etw_decoder_add_manifest(d, ETW_TEST_DATA_DIR "/no-such-file.man", &np), ETW_E_IO);

    etb_event_free(&e);
    etw_decoder_free(d);
}

/* A provider replaced by a later manifest: later events get the new layout,
 * the old schema stays readable. */
static void test_manifest_replaced(void) {
    diags g;
    etw_decoder *d = new_decoder(&g);
    const etw_decoder_stats *st = etw_decoder_stats_get(d);
    ETW_CHECK_INT(add_manifest(d, "Test-Dispatch", &G_MAN, man_v1_body, "v1.man", NULL), ETW_OK);
    etb_event e;
    event_init(&e, &G_MAN, 0, 0);
    etb_u32(&e.payload, 0x41424344u);
    etb_u16(&e.payload, 0x4546);
    const etw_event *ev = etb_event_get(&e);
    const etw_schema *old = NULL, *s5 = NULL, *now = NULL, *s;
    const char *why;
    ETW_CHECK_INT(resolve(d, ev, &old, &why), ETW_OK);
    etb_event e5;
    event_init(&e5, &G_MAN, 5, 0);
    ETW_CHECK_INT(resolve(d, etb_event_get(&e5), &s5, &why), ETW_OK);
    ETW_CHECK(old && s5);

    uint64_t problems = st->problems, warnings = st->warnings;
    ETW_CHECK_INT(add_manifest(d, "Test-Dispatch-2", &G_MAN, man_v2_body, "v2.man", NULL), ETW_OK);
    /* "replaces" is a warning: nothing is lost, so it is not a problem */
    ETW_CHECK_INT(st->problems, problems);
    ETW_CHECK_INT(st->warnings, warnings + 1);
    ETW_CHECK(strstr(g.last, "replaces") != NULL);
    ETW_CHECK(strstr(g.last, "v1.man") != NULL);
    ETW_CHECK_INT(st->manifest_providers, 1);

    ETW_CHECK_INT(resolve(d, ev, &now, &why), ETW_OK);
    ETW_CHECK(now && now != old);
    if (now) {
        ETW_CHECK_STR(now->event_name, "Gamma");
        ETW_CHECK_STR(now->provider_name, "Test-Dispatch-2");
        ETW_CHECK_INT(now->prop_count, 2);
        ETW_CHECK_STR(now->props[0].name, "X");
        ETW_CHECK_INT(now->props[0].in_type, ETW_INTYPE_UINT8);
        ETW_CHECK_STR(now->props[1].name, "Y");
        etw_value v[MAX_ITEMS];
        ETW_CHECK_INT(decode_all(d, ev, now, v, MAX_ITEMS), 2);
        ETW_CHECK(value_is(&v[0], "X", ETW_INTYPE_UINT8) && etw_value_u64(&v[0]) == 0x44);
        ETW_CHECK(value_is(&v[1], "Y", ETW_INTYPE_ANSISTRING) && value_str(&v[1], "CBAFE"));
    }
    /* the old schema is intact (its strings live in the cache's arena) */
    if (old) {
        ETW_CHECK_STR(old->event_name, "Alpha");
        ETW_CHECK_STR(old->provider_name, "Test-Dispatch");
        ETW_CHECK_INT(old->prop_count, 2);
        ETW_CHECK_STR(old->props[0].name, "A");
        ETW_CHECK_STR(old->props[1].name, "B");
        etw_value v[MAX_ITEMS];
        ETW_CHECK_INT(decode_all(d, ev, old, v, MAX_ITEMS), 2);
        ETW_CHECK(etw_value_u64(&v[0]) == 0x41424344u);
    }
    if (s5) ETW_CHECK_STR(s5->event_name, "Beta/Start");
    /* event 5 is gone with the old manifest */
    ETW_CHECK_INT(resolve(d, etb_event_get(&e5), &s, &why), ETW_E_NOT_FOUND);
    ETW_CHECK(s == NULL);
    /* and the new schema stays the answer */
    ETW_CHECK_INT(resolve(d, ev, &s, &why), ETW_OK);
    ETW_CHECK(s == now);

    etb_event_free(&e);
    etb_event_free(&e5);
    etw_decoder_free(d);
}

/* A classic key and a descriptor key with an id >= 0xFF00 must not be
 * confused: classic keys once put 0xFF in the high id byte, so
 * (G, opcode 5, version 0) and (G, id 0xFF05, version 0) were the same 19
 * bytes in the negative cache. Classic keys are now 20 bytes with a tag. */
static void test_classic_key_collision(void) {
    etw_decoder *d = new_decoder(NULL);
    static const char body[] =
        " <templates><template tid='t'><data name='V' inType='win:UInt32'/></template></templates>\n"
        " <events><event value='65285' version='0' template='t' symbol='High'/></events>\n";
    ETW_CHECK_INT(add_manifest(d, "Test-High", &G_CLASSIC, body, "high.man", NULL), ETW_OK);
    etb_event ec, em;
    event_init(&ec, &G_CLASSIC, 0, 0);
    ec.ev.form = ETW_FORM_FULL;
    ec.ev.flags = ETW_EVENT_FLAG_CLASSIC_HEADER;
    ec.ev.opcode = 5;
    event_init(&em, &G_CLASSIC, 0xFF05, 0);
    etb_u32(&em.payload, 1);
    const etw_schema *s;
    const char *why;
    ETW_CHECK_INT(resolve(d, etb_event_get(&ec), &s, &why), ETW_E_NOT_FOUND);
    ETW_CHECK_INT(resolve(d, etb_event_get(&em), &s, &why), ETW_OK);
    if (s) ETW_CHECK_STR(s->event_name, "High");
    etb_event_free(&ec);
    etb_event_free(&em);
    etw_decoder_free(d);
}

/* ---- 4. precedence ------------------------------------------------------- */

static const etw_guid G_ES = {0x7e8d1b3c, 0x5a5a, 0x5b5b, {0x9c, 0x9c, 0x01, 0x02, 0x03, 0x04, 0x05, 0x06}};
static const etw_guid G_ES2 = {0x7e8d1b3c, 0x6a6a, 0x6b6b, {0x9c, 0x9c, 0x01, 0x02, 0x03, 0x04, 0x05, 0x07}};

static const char es_body_v1[] =
    " <tasks><task name='Hello' value='1'/></tasks>\n"
    " <templates><template tid='tH'><data name='Name' inType='win:UnicodeString'/>"
    "<data name='Count' inType='win:Int32'/></template></templates>\n"
    " <events><event value='1' version='0' task='Hello' template='tH' symbol='Hello' level='win:Informational'/>"
    "</events>\n";

static const char es_body_v2[] =
    " <tasks><task name='HelloAgain' value='1'/></tasks>\n"
    " <templates><template tid='tH2'><data name='Count' inType='win:Int32'/>"
    "<data name='Extra' inType='win:UInt8'/></template></templates>\n"
    " <events><event value='1' version='0' task='HelloAgain' template='tH2' symbol='Hello'/>"
    "<event value='2' version='0' symbol='Second'/></events>\n";

static const char user_body[] =
    " <tasks><task name='Greet' value='1'/></tasks>\n"
    " <templates><template tid='tU'><data name='Who' inType='win:AnsiString'/></template></templates>\n"
    " <events><event value='1' version='0' task='Greet' template='tU' symbol='Greet'/></events>\n";

static void test_eventsource_precedence(void) {
    diags g;
    etw_decoder *d = new_decoder(&g);
    const etw_decoder_stats *st = etw_decoder_stats_get(d);
    etw_json *j = new_json(d, 0);
    const etw_schema *s, *md = NULL;
    const char *why;

    /* an event of the EventSource before its manifest: no schema */
    etb_event e;
    event_init(&e, &G_ES, 1, 0);
    etb_utf16(&e.payload, "abc");
    etb_i32(&e.payload, -3);
    const etw_event *ev = etb_event_get(&e);
    ETW_CHECK_INT(resolve(d, ev, &s, &why), ETW_E_NOT_FOUND);

    /* the manifest in three chunks */
    char *xml = manifest_doc("My-EventSource", &G_ES, es_body_v1);
    size_t len = strlen(xml), third = len / 3;
    etb_event c0, c1, c2;
    chunk_event(&c0, &G_ES, 3, 0, xml, third);
    chunk_event(&c1, &G_ES, 3, 1, xml + third, third);
    chunk_event(&c2, &G_ES, 3, 2, xml + 2 * third, len - 2 * third);
    ETW_CHECK(etw_decoder_is_manifest_event(etb_event_get(&c0)));
    ETW_CHECK(!etw_decoder_is_manifest_event(ev));
    ETW_CHECK_INT(resolve(d, etb_event_get(&c0), &md, &why), ETW_OK);
    ETW_CHECK(md != NULL);
    if (md) {
        ETW_CHECK_STR(md->event_name, "ManifestData");
        ETW_CHECK(md->provider_name == NULL); /* not known yet */
        ETW_CHECK_INT(md->source, ETW_SOURCE_EVENTSOURCE);
    }
    ETW_CHECK_INT(resolve(d, etb_event_get(&c1), &md, &why), ETW_OK);
    ETW_CHECK_INT(st->eventsource_manifests, 0);
    ETW_CHECK_INT(resolve(d, etb_event_get(&c2), &md, &why), ETW_OK);
    ETW_CHECK_INT(st->eventsource_manifests, 1);
    ETW_CHECK(md != NULL);
    if (md) {
        ETW_CHECK_STR(md->event_name, "ManifestData");
        ETW_CHECK_STR(md->provider_name, "My-EventSource");
    }
    ETW_CHECK_INT(g.n, 0);
    /* the chunk's JSON line: provider named, envelope as fields, no raw */
    const char *line = json_line(j, etb_event_get(&c2));
    ETW_CHECK(strstr(line, "\"provider\":\"My-EventSource\"") != NULL);
    ETW_CHECK(strstr(line, "\"event\":\"ManifestData\"") != NULL);
    ETW_CHECK(strstr(line, "\"TotalChunks\":3,\"ChunkNumber\":2") != NULL);
    ETW_CHECK(strstr(line, "\"raw\"") == NULL);
    ETW_CHECK(strstr(line, "\"error\"") == NULL);

    /* the EventSource's events now decode with its manifest */
    const etw_schema *ses = NULL;
    ETW_CHECK_INT(resolve(d, ev, &ses, &why), ETW_OK);
    ETW_CHECK(ses != NULL);
    if (ses) {
        ETW_CHECK_INT(ses->source, ETW_SOURCE_EVENTSOURCE);
        ETW_CHECK_STR(ses->event_name, "Hello");
        ETW_CHECK_STR(ses->provider_name, "My-EventSource");
    }
    line = json_line(j, ev);
    ETW_CHECK_STR(fields_of(line), "{\"Name\":\"abc\",\"Count\":-3}");
    ETW_CHECK(strstr(line, "\"provider\":\"My-EventSource\"") != NULL);
    ETW_CHECK(strstr(line, "\"event\":\"Hello\"") != NULL);
    /* an id its manifest lacks: the provider is known, the event is not */
    etb_event e9;
    event_init(&e9, &G_ES, 9, 0);
    ETW_CHECK_INT(resolve(d, etb_event_get(&e9), &ses, &why), ETW_E_NOT_FOUND);
    ETW_CHECK_STR(why, "no schema: provider My-EventSource (from its EventSource manifest in the trace) "
                       "has no event id 9 version 0");
    etb_event_free(&e9);

    /* a user manifest for the same provider takes over for the next events */
    uint32_t np = 0;
    ETW_CHECK_INT(add_manifest(d, "User-Name", &G_ES, user_body, "user.man", &np), ETW_OK);
    ETW_CHECK_INT(np, 1);
    etb_event eu;
    event_init(&eu, &G_ES, 1, 0);
    etb_ansi(&eu.payload, "me");
    const etw_event *uev = etb_event_get(&eu);
    const etw_schema *su = NULL;
    ETW_CHECK_INT(resolve(d, uev, &su, &why), ETW_OK);
    ETW_CHECK(su != NULL && su != ses);
    if (su) {
        ETW_CHECK_INT(su->source, ETW_SOURCE_MANIFEST);
        ETW_CHECK_STR(su->event_name, "Greet");
        ETW_CHECK_STR(su->provider_name, "User-Name");
    }
    ETW_CHECK_STR(fields_of(json_line(j, uev)), "{\"Who\":\"me\"}");
    if (ses) ETW_CHECK_STR(ses->event_name, "Hello"); /* still readable */

    /* an EventSource manifest for a provider the user gave: ignored */
    uint64_t problems = st->problems;
    char *xml2 = manifest_doc("My-EventSource", &G_ES, es_body_v2);
    send_es_manifest(d, &G_ES, xml2, 2, NULL);
    ETW_CHECK_INT(st->eventsource_manifests, 1);
    ETW_CHECK_INT(st->problems, problems);
    ETW_CHECK_INT(resolve(d, uev, &s, &why), ETW_OK);
    ETW_CHECK(s == su);
    /* event 2 exists only in the ignored manifest */
    etb_event e2;
    event_init(&e2, &G_ES, 2, 0);
    ETW_CHECK_INT(resolve(d, etb_event_get(&e2), &s, &why), ETW_E_NOT_FOUND);

    etb_event_free(&e);
    etb_event_free(&eu);
    etb_event_free(&e2);
    etb_event_free(&c0);
    etb_event_free(&c1);
    etb_event_free(&c2);
    free(xml);
    free(xml2);
    etw_json_free(j);
    etw_decoder_free(d);
}

/* The same EventSource manifest sent twice is ignored silently; a different
 * one replaces it for the events after it. */
static void test_eventsource_repeat_and_replace(void) {
    diags g;
    etw_decoder *d = new_decoder(&g);
    const etw_decoder_stats *st = etw_decoder_stats_get(d);
    char *v1 = manifest_doc("Repeat-Source", &G_ES2, es_body_v1);
    char *v2 = manifest_doc("Repeat-Source", &G_ES2, es_body_v2);
    const etw_schema *md = NULL, *s1 = NULL, *s2 = NULL, *s;
    const char *why;

    send_es_manifest(d, &G_ES2, v1, 1, &md); /* one chunk */
    ETW_CHECK_INT(st->eventsource_manifests, 1);
    if (md) ETW_CHECK_STR(md->provider_name, "Repeat-Source");
    etb_event e;
    event_init(&e, &G_ES2, 1, 0);
    etb_i32(&e.payload, 9);
    etb_u8(&e.payload, 0x10);
    const etw_event *ev = etb_event_get(&e);
    ETW_CHECK_INT(resolve(d, ev, &s1, &why), ETW_OK);
    ETW_CHECK(s1 != NULL);
    if (s1) {
        ETW_CHECK_INT(s1->source, ETW_SOURCE_EVENTSOURCE);
        ETW_CHECK_STR(s1->event_name, "Hello");
    }
    uint32_t schemas = st->schemas;

    /* the same manifest again (rundown), in another number of chunks */
    uint64_t problems = st->problems;
    send_es_manifest(d, &G_ES2, v1, 4, &md);
    ETW_CHECK_INT(st->eventsource_manifests, 1);
    ETW_CHECK_INT(st->problems, problems);
    ETW_CHECK_INT(g.n, 0);
    ETW_CHECK_INT(resolve(d, ev, &s, &why), ETW_OK);
    ETW_CHECK(s == s1);
    ETW_CHECK_INT(st->schemas, schemas); /* nothing resolved anew */

    /* a different one replaces it */
    send_es_manifest(d, &G_ES2, v2, 2, &md);
    ETW_CHECK_INT(st->eventsource_manifests, 2);
    if (md) ETW_CHECK_STR(md->provider_name, "Repeat-Source");
    ETW_CHECK_INT(resolve(d, ev, &s2, &why), ETW_OK);
    ETW_CHECK(s2 != NULL && s2 != s1);
    if (s2) {
        ETW_CHECK_INT(s2->source, ETW_SOURCE_EVENTSOURCE);
        ETW_CHECK_STR(s2->event_name, "HelloAgain");
        ETW_CHECK_INT(s2->prop_count, 2);
        etw_value v[MAX_ITEMS];
        ETW_CHECK_INT(decode_all(d, ev, s2, v, MAX_ITEMS), 2);
        ETW_CHECK(value_is(&v[0], "Count", ETW_INTYPE_INT32) && etw_value_i64(&v[0]) == 9);
        ETW_CHECK(value_is(&v[1], "Extra", ETW_INTYPE_UINT8) && etw_value_u64(&v[1]) == 0x10);
    }
    if (s1) {
        ETW_CHECK_STR(s1->event_name, "Hello");
        ETW_CHECK_STR(s1->props[0].name, "Name");
    }
    etb_event e2;
    event_init(&e2, &G_ES2, 2, 0);
    ETW_CHECK_INT(resolve(d, etb_event_get(&e2), &s, &why), ETW_OK);
    if (s) ETW_CHECK_STR(s->event_name, "Second");
    /* and the first one back again is a change too */
    send_es_manifest(d, &G_ES2, v1, 1, NULL);
    ETW_CHECK_INT(st->eventsource_manifests, 3);
    ETW_CHECK_INT(resolve(d, ev, &s, &why), ETW_OK);
    if (s) ETW_CHECK_STR(s->event_name, "Hello");

    /* no_eventsource: chunks are neither learned nor shown as ManifestData */
    etw_decoder_options o;
    memset(&o, 0, sizeof o);
    o.no_eventsource = 1;
    etw_decoder *d2 = NULL;
    ETW_CHECK_INT(etw_decoder_new(&d2, &o), ETW_OK);
    etb_event c;
    chunk_event(&c, &G_ES2, 1, 0, v1, strlen(v1));
    ETW_CHECK_INT(resolve(d2, etb_event_get(&c), &s, &why), ETW_E_NOT_FOUND);
    ETW_CHECK_INT(etw_decoder_stats_get(d2)->eventsource_manifests, 0);
    ETW_CHECK_INT(resolve(d2, ev, &s, &why), ETW_E_NOT_FOUND);
    etw_decoder_free(d2);
    etb_event_free(&c);

    etb_event_free(&e);
    etb_event_free(&e2);
    free(v1);
    free(v2);
    etw_decoder_free(d);
}

/* Merged metadata (net.4.5.2.x64.etl) < EventSource manifest < user
 * manifest, over the same (provider, id, version). */
static const etw_guid CLR_GUID = {0xe13c0d23, 0xccbc, 0x4e12, {0x93, 0x1b, 0xd9, 0xcc, 0x2e, 0xee, 0x27, 0xe4}};

static void test_metadata_precedence(void) {
    diags g;
    etw_reader *r = NULL;
    if (etw_reader_open_file(&r, ETW_TEST_DATA_DIR "/net.4.5.2.x64.etl", NULL) != ETW_OK) {
        ETW_CHECK(0);
        return;
    }
    etw_decoder *d = new_decoder(&g);
    const etw_decoder_stats *st = etw_decoder_stats_get(d);
    ETW_CHECK_INT(etw_decoder_prescan(d, r), ETW_OK);
    ETW_CHECK_INT(st->metadata_events, 61);
    ETW_CHECK_INT(st->problems, 0);

    /* the first DotNETRuntime event that metadata describes */
    etw_event ev;
    const etw_schema *s = NULL, *smd = NULL;
    const char *why;
    int found = 0, md_records = 0;
    while (etw_reader_next(r, &ev) == ETW_OK) {
        etw_status rs = resolve(d, &ev, &s, &why);
        if (rs == ETW_OK && s->event_name && strncmp(s->event_name, "MetaData/", 9) == 0) {
            md_records++;
            ETW_CHECK_STR(s->provider_name, "KernelTraceControl");
            ETW_CHECK_INT(s->source, ETW_SOURCE_METADATA);
        }
        if (!etw_guid_equal(&ev.provider, &CLR_GUID) || ev.form != ETW_FORM_EVENT_HEADER) continue;
        if (rs == ETW_OK && s->source == ETW_SOURCE_METADATA && ev.user_data_len > 0) {
            found = 1;
            smd = s;
            break;
        }
    }
    ETW_CHECK(found);
    if (!found) {
        etw_decoder_free(d);
        etw_reader_close(r);
        return;
    }
    ETW_CHECK_STR(smd->provider_name, "Microsoft-Windows-DotNETRuntime");
    uint16_t id = ev.id;
    uint8_t version = ev.version;
    char md_name[128];
    snprintf(md_name, sizeof md_name, "%s", smd->event_name);

    /* an EventSource manifest for the same provider knows (id, version) */
    char body[1024];
    snprintf(body, sizeof body,
             " <tasks><task name='FromEventSource' value='900'/></tasks>\n"
             " <templates><template tid='t'><data name='First' inType='win:UInt16'/></template></templates>\n"
             " <events><event value='%u' version='%u' task='FromEventSource' template='t' symbol='X'/></events>\n",
             id, version);
    char *xml = manifest_doc("Runtime-As-EventSource", &CLR_GUID, body);
    uint32_t es_before = st->eventsource_manifests; /* the trace's own, met so far */
    send_es_manifest(d, &CLR_GUID, xml, 2, NULL);
    free(xml);
    ETW_CHECK_INT(st->eventsource_manifests, es_before + 1);
    const etw_schema *ses = NULL;
    ETW_CHECK_INT(resolve(d, &ev, &ses, &why), ETW_OK); /* the same event, still valid */
    ETW_CHECK(ses && ses != smd);
    if (ses) {
        ETW_CHECK_INT(ses->source, ETW_SOURCE_EVENTSOURCE);
        ETW_CHECK_STR(ses->event_name, "FromEventSource");
    }
    ETW_CHECK_STR(smd->event_name, md_name);

    /* the user's manifest over both */
    uint32_t np = 0;
    ETW_CHECK_INT(etw_decoder_add_manifest(d, ETW_TEST_DATA_DIR "/ClrEtwAll.man", &np), ETW_OK);
    ETW_CHECK(np >= 1);
    const etw_schema *sman = NULL;
    ETW_CHECK_INT(resolve(d, &ev, &sman, &why), ETW_OK);
    ETW_CHECK(sman && sman != ses && sman != smd);
    if (sman) {
        ETW_CHECK_INT(sman->source, ETW_SOURCE_MANIFEST);
        ETW_CHECK_STR(sman->provider_name, "Microsoft-Windows-DotNETRuntime");
        ETW_CHECK_INT(sman->event_id, id);
        ETW_CHECK_INT(sman->version, version);
    }
    /* every later DotNETRuntime event the manifest knows comes from it */
    uint32_t from_manifest = 0, from_lower = 0;
    while (etw_reader_next(r, &ev) == ETW_OK) {
        if (!etw_guid_equal(&ev.provider, &CLR_GUID) || ev.form != ETW_FORM_EVENT_HEADER) continue;
        if (resolve(d, &ev, &s, &why) != ETW_OK) continue;
        if (s->source == ETW_SOURCE_MANIFEST) from_manifest++;
        else if (s->event_id == id && s->version == version) from_lower++;
    }
    ETW_CHECK(from_manifest > 1000);
    ETW_CHECK_INT(from_lower, 0);
    etw_decoder_free(d);

    /* a user manifest loaded before the trace wins from the first event */
    ETW_CHECK_INT(etw_reader_rewind(r), ETW_OK);
    d = new_decoder(&g);
    st = etw_decoder_stats_get(d);
    ETW_CHECK_INT(etw_decoder_add_manifest(d, ETW_TEST_DATA_DIR "/ClrEtwAll.man", NULL), ETW_OK);
    ETW_CHECK_INT(etw_decoder_prescan(d, r), ETW_OK);
    uint32_t clr_md = 0, clr_man = 0;
    while (etw_reader_next(r, &ev) == ETW_OK) {
        if (!etw_guid_equal(&ev.provider, &CLR_GUID) || ev.form != ETW_FORM_EVENT_HEADER) continue;
        if (resolve(d, &ev, &s, &why) != ETW_OK) continue;
        if (s->source == ETW_SOURCE_MANIFEST) clr_man++;
        else if (s->source == ETW_SOURCE_METADATA) clr_md++;
    }
    ETW_CHECK(clr_man > 1000);
    ETW_CHECK_INT(clr_md, 0);
    ETW_CHECK(md_records > 0);
    etw_decoder_free(d);
    etw_reader_close(r);
}

/* ---- 5. WPP, unknown events, a chunk resolved twice ---------------------- */

static void test_wpp_and_unknown(void) {
    etw_decoder *d = new_decoder(NULL);
    const etw_decoder_stats *st = etw_decoder_stats_get(d);
    const etw_schema *s;
    const char *why;
    etb_event w;
    etb_event_init(&w, 8);
    w.ev.form = ETW_FORM_MESSAGE;
    w.ev.flags = ETW_EVENT_FLAG_TRACE_MESSAGE | ETW_EVENT_FLAG_CLASSIC_HEADER;
    w.ev.provider = G_MAN; /* even a GUID a manifest knows */
    w.ev.message_number = 42;
    etb_u32(&w.payload, 1);
    ETW_CHECK_INT(add_manifest(d, "Test-Dispatch", &G_MAN, man_v1_body, "v1.man", NULL), ETW_OK);
    ETW_CHECK_INT(resolve(d, etb_event_get(&w), &s, &why), ETW_E_NOT_FOUND);
    ETW_CHECK(s == NULL);
    ETW_CHECK_STR(why, "no schema: WPP message 42 needs TMF data");
    w.ev.message_number = 0;
    ETW_CHECK_INT(resolve(d, etb_event_get(&w), &s, &why), ETW_E_NOT_FOUND);
    ETW_CHECK_STR(why, "no schema: WPP message 0 needs TMF data");

    /* an EVENT_HEADER event nobody knows */
    etw_guid nobody = etb_make_guid(0xdeadbeef, 0x0001, 0x0002, 0x0304050607080910ull);
    etb_event u;
    event_init(&u, &nobody, 65535, 255);
    ETW_CHECK_INT(resolve(d, etb_event_get(&u), &s, &why), ETW_E_NOT_FOUND);
    ETW_CHECK_STR(why, "no schema: manifest not found for provider deadbeef-0001-0002-0304-050607080910, "
                       "id 65535, version 255");
    /* a kernel event of an unknown class */
    u.ev.form = ETW_FORM_SYSTEM;
    u.ev.id = 0;
    u.ev.opcode = 33;
    u.ev.version = 2;
    ETW_CHECK_INT(resolve(d, etb_event_get(&u), &s, &why), ETW_E_NOT_FOUND);
    ETW_CHECK_STR(why, "no schema: no MOF class for event class deadbeef-0001-0002-0304-050607080910, "
                       "opcode 33, version 2");
    /* why may be NULL; out must not */
    ETW_CHECK_INT(etw_decoder_resolve(d, etb_event_get(&u), &s, NULL), ETW_E_NOT_FOUND);
    ETW_CHECK_INT(etw_decoder_resolve(d, etb_event_get(&u), NULL, NULL), ETW_E_INVALID_ARG);
    ETW_CHECK_INT(etw_decoder_resolve(NULL, etb_event_get(&u), &s, NULL), ETW_E_INVALID_ARG);
    ETW_CHECK_INT(st->errors, 5);
    ETW_CHECK_INT(st->schemas, 0);
    etb_event_free(&w);
    etb_event_free(&u);
    etw_decoder_free(d);
}

/* etw_decoder_resolve called twice for each chunk (etwdump does so for
 * --no-manifest-events, a caller may resolve then render): every chunk is
 * taken once, the manifest completes, nothing is reported. */
static void test_chunk_resolved_twice(void) {
    diags g;
    etw_decoder *d = new_decoder(&g);
    const etw_decoder_stats *st = etw_decoder_stats_get(d);
    etw_json *j = new_json(d, 0);
    char *xml = manifest_doc("Twice-Source", &G_ES, es_body_v1);
    size_t len = strlen(xml), half = len / 2;
    etb_event c0, c1;
    chunk_event(&c0, &G_ES, 2, 0, xml, half);
    chunk_event(&c1, &G_ES, 2, 1, xml + half, len - half);
    const etw_schema *s;
    const char *why;
    ETW_CHECK_INT(resolve(d, etb_event_get(&c0), &s, &why), ETW_OK);
    ETW_CHECK_INT(resolve(d, etb_event_get(&c0), &s, &why), ETW_OK);
    json_line(j, etb_event_get(&c0)); /* a third time, through the writer */
    ETW_CHECK_INT(st->eventsource_manifests, 0);
    ETW_CHECK_INT(resolve(d, etb_event_get(&c1), &s, &why), ETW_OK);
    ETW_CHECK_INT(st->eventsource_manifests, 1);
    ETW_CHECK_INT(resolve(d, etb_event_get(&c1), &s, &why), ETW_OK);
    const char *line = json_line(j, etb_event_get(&c1));
    ETW_CHECK(strstr(line, "\"provider\":\"Twice-Source\"") != NULL);
    ETW_CHECK_INT(st->eventsource_manifests, 1);
    ETW_CHECK_INT(st->problems, 0);
    ETW_CHECK_INT(g.n, 0);
    if (s) {
        ETW_CHECK_STR(s->event_name, "ManifestData");
        ETW_CHECK_STR(s->provider_name, "Twice-Source");
    }
    etb_event e;
    event_init(&e, &G_ES, 1, 0);
    ETW_CHECK_INT(resolve(d, etb_event_get(&e), &s, &why), ETW_OK);
    if (s) ETW_CHECK_INT(s->source, ETW_SOURCE_EVENTSOURCE);

    /* a chunk sequence left unfinished is reported by etw_decoder_finish */
    etb_event c2;
    chunk_event(&c2, &G_ES2, 2, 0, xml, half);
    ETW_CHECK_INT(resolve(d, etb_event_get(&c2), &s, &why), ETW_OK);
    ETW_CHECK_INT(st->problems, 0);
    etw_decoder_finish(d);
    ETW_CHECK_INT(st->problems, 1);
    ETW_CHECK_INT(g.n, 1);

    etb_event_free(&c0);
    etb_event_free(&c1);
    etb_event_free(&c2);
    etb_event_free(&e);
    free(xml);
    etw_json_free(j);
    etw_decoder_free(d);
}

/* ---- 6. the JSON writer with a decoder ----------------------------------- */

/* Stack extended items in JSON (docs/json-output.md): every STACK_TRACE item
 * with its MatchId, the STACK_KEY items; items too short for their form are
 * left out, a partial last address too. */
static void test_json_stack_items(void) {
    etw_decoder *d = new_decoder(NULL);
    etw_json *j = new_json(d, 0);
    etb_event e;
    event_init(&e, &G_MAN, 0, 0);
    etb_buf x;
    etb_init(&x);
    etb_u64(&x, 0); /* MatchId 0 */
    etb_u32(&x, 0x10);
    etb_u32(&x, 0x20);
    etb_u8(&x, 0xAA); /* a partial address: left out */
    etb_event_add_ext(&e, ETW_EXT_STACK_TRACE32, x.data, x.len);
    etb_event_add_ext(&e, ETW_EXT_STACK_TRACE64, x.data, 7); /* too short for a MatchId */
    etb_reset(&x);
    etb_u64(&x, 0xfedcba9876543210ull);
    etb_u64(&x, 0xfffff80021434313ull);
    etb_event_add_ext(&e, ETW_EXT_STACK_TRACE64, x.data, x.len);
    etb_reset(&x);
    etb_u64(&x, 5);
    etb_event_add_ext(&e, ETW_EXT_STACK_TRACE64, x.data, x.len); /* no address */
    etb_reset(&x);
    etb_u64(&x, 9);
    etb_u32(&x, 0xabc);
    etb_event_add_ext(&e, ETW_EXT_STACK_KEY64, x.data, x.len); /* 12 bytes: too short for a u64 key */
    etb_event_add_ext(&e, ETW_EXT_STACK_KEY32, x.data, x.len);
    const char *line = json_line(j, etb_event_get(&e));
    ETW_CHECK(strstr(line, "\"stack\":[\"0x10\",\"0x20\"],\"more_stacks\":[{\"match_id\":\"0xfedcba9876543210\","
                           "\"stack\":[\"0xfffff80021434313\"]},{\"match_id\":\"0x5\",\"stack\":[]}],"
                           "\"stack_key\":\"0xabc\",\"stack_key_match_id\":\"0x9\",\"fields\":") != NULL);
    ETW_CHECK(strstr(line, "stack_match_id") == NULL);
    ETW_CHECK(strstr(line, "more_stack_keys") == NULL);
    etb_free(&x);
    etb_event_free(&e);
    etw_json_free(j);
    etw_decoder_free(d);
}

static void test_json_error_and_raw(void) {
    etw_decoder *d = new_decoder(NULL);
    ETW_CHECK_INT(add_manifest(d, "Test-Dispatch", &G_MAN, man_v1_body, "v1.man", NULL), ETW_OK);
    etw_json *j = new_json(d, 0);
    etw_json *jr = new_json(d, 1);

    /* no schema: "error" and "raw", empty fields */
    etb_event u;
    event_init(&u, &G_MAN, 999, 0);
    etb_u8(&u.payload, 0xDE);
    etb_u8(&u.payload, 0xAD);
    etb_u8(&u.payload, 0x01);
    const etw_event *ue = etb_event_get(&u);
    char want[256];
    snprintf(want, sizeof want,
             "\"error\":\"no schema: provider Test-Dispatch (from v1.man) has no event id 999 version 0\","
             "\"raw\":\"dead01\"}\n");
    const char *line = json_line(j, ue);
    ETW_CHECK_STR(fields_of(line), "{}");
    ETW_CHECK(strstr(line, want) != NULL);
    ETW_CHECK(strstr(line, "\"data_len\":3") != NULL);
    ETW_CHECK(strstr(line, "\"event\":\"EventID(999)\"") != NULL);
    /* a provider no source knows: the contract's text */
    etb_event nobody;
    etw_guid g_nobody = etb_make_guid(0x0badf00du, 0x1234, 0x4567, 0x89abcdef01234567ull);
    event_init(&nobody, &g_nobody, 5, 1);
    line = json_line(j, etb_event_get(&nobody));
    ETW_CHECK(strstr(line, "\"error\":\"no schema: manifest not found for provider "
                           "0badf00d-1234-4567-89ab-cdef01234567, id 5, version 1\"") != NULL);
    etb_event_free(&nobody);
    /* no payload: still "raw" (empty) with the error */
    etb_reset(&u.payload);
    line = json_line(j, etb_event_get(&u));
    ETW_CHECK(strstr(line, "\"raw\":\"\"") != NULL);
    ETW_CHECK(strstr(line, "\"error\":") != NULL);

    /* decoded: no "raw" unless raw_always */
    etb_event e;
    event_init(&e, &G_MAN, 0, 0);
    etb_u32(&e.payload, 3);
    etb_u16(&e.payload, 4);
    const etw_event *ev = etb_event_get(&e);
    line = json_line(j, ev);
    ETW_CHECK_STR(fields_of(line), "{\"A\":3,\"B\":4}");
    ETW_CHECK(strstr(line, "\"raw\"") == NULL);
    ETW_CHECK(strstr(line, "\"error\"") == NULL);
    ETW_CHECK(strstr(line, "\"provider\":\"Test-Dispatch\"") != NULL);
    ETW_CHECK(strstr(line, "\"event\":\"Alpha\"") != NULL);
    line = json_line(jr, ev);
    ETW_CHECK_STR(fields_of(line), "{\"A\":3,\"B\":4}");
    ETW_CHECK(strstr(line, ",\"raw\":\"030000000400\"}\n") != NULL);
    ETW_CHECK(strstr(line, "\"error\"") == NULL);

    /* bytes after the last field of a manifest event: said in "error" (the
     * kernel's wording), with "raw"; the fields still decode. The label (text,
     * --stats, filters, Python) says the same. */
    etb_event tr;
    event_init(&tr, &G_MAN, 0, 0);
    etb_u32(&tr.payload, 3);
    etb_u16(&tr.payload, 4);
    etb_u8(&tr.payload, 0xEE);
    etb_u8(&tr.payload, 0xFF);
    const etw_event *tev = etb_event_get(&tr);
    line = json_line(j, tev);
    ETW_CHECK_STR(fields_of(line), "{\"A\":3,\"B\":4}");
    ETW_CHECK(strstr(line, "\"error\":\"2 payload bytes after the last field of Alpha v0\","
                           "\"raw\":\"030000000400eeff\"}\n") != NULL);
    etw_label lab;
    ETW_CHECK_INT(etw_label_event(d, tev, &lab), ETW_OK);
    ETW_CHECK(lab.error && strcmp(lab.error, "2 payload bytes after the last field of Alpha v0") == 0);
    etb_event_free(&tr);

    /* a WPP message */
    etb_event w;
    etb_event_init(&w, 8);
    w.ev.form = ETW_FORM_MESSAGE;
    w.ev.message_number = 7;
    etb_u16(&w.payload, 0xBEEF);
    line = json_line(j, etb_event_get(&w));
    ETW_CHECK(strstr(line, "\"error\":\"no schema: WPP message 7 needs TMF data\",\"raw\":\"efbe\"") != NULL);

    /* without a decoder: "raw" for every event with user data, no error */
    etw_json *jn = new_json(NULL, 0);
    line = json_line(jn, ev);
    ETW_CHECK_STR(fields_of(line), "{}");
    ETW_CHECK(strstr(line, "\"raw\":\"030000000400\"") != NULL);
    ETW_CHECK(strstr(line, "\"error\"") == NULL);
    etw_json_free(jn);

    etb_event_free(&u);
    etb_event_free(&e);
    etb_event_free(&w);
    etw_json_free(j);
    etw_json_free(jr);
    etw_decoder_free(d);
}

/* etw_decoder_field_number on net.4.5.2.x64.etl, against PerfView's
 * baseline (tests/data/net.4.5.2.x64.baseline.txt): the EventTrace
 * Extension's KernelEventVersion=42, and the Image/Load of ntdll.dll in
 * process 3676 (ImageBase=0x7f9d02f0000; ImageSize=1,826,816;
 * TimeDateStamp=1,343,270,098). A string field is no number; a name the
 * payload lacks, or no schema, is not found. */
static void test_field_number(void) {
    etw_reader *r = NULL;
    if (etw_reader_open_file(&r, ETW_TEST_DATA_DIR "/net.4.5.2.x64.etl", NULL) != ETW_OK) {
        ETW_CHECK(0);
        return;
    }
    etw_decoder *d = new_decoder(NULL);
    ETW_CHECK_INT(etw_decoder_prescan(d, r), ETW_OK);
    static etw_label lab; /* large: not on the stack */
    etw_event ev;
    int extension = 0, loads = 0, ntdll = 0;
    while (etw_reader_next(r, &ev) == ETW_OK) {
        if (etw_label_event(d, &ev, &lab) != ETW_OK || !lab.schema || !lab.event) continue;
        double x = -1;
        if (!extension && lab.event_len == 20 && !memcmp(lab.event, "EventTrace/Extension", 20)) {
            extension = 1;
            ETW_CHECK_INT(etw_decoder_field_number(d, &ev, lab.schema, "KernelEventVersion", &x), ETW_OK);
            ETW_CHECK(x == 42.0);
        }
        if (lab.event_len != 10 || memcmp(lab.event, "Image/Load", 10)) continue;
        uint32_t pid = 0, tid = 0;
        etw_decoder_event_ids(d, &ev, lab.schema, &pid, &tid);
        if (pid != 3676 || ++loads != 2) continue; /* the first is Test.x64.exe itself */
        ntdll = 1;
        ETW_CHECK_INT(etw_decoder_field_number(d, &ev, lab.schema, "ImageBase", &x), ETW_OK);
        ETW_CHECK(x == (double)UINT64_C(0x7f9d02f0000));
        ETW_CHECK_INT(etw_decoder_field_number(d, &ev, lab.schema, "ImageSize", &x), ETW_OK);
        ETW_CHECK(x == 1826816.0);
        ETW_CHECK_INT(etw_decoder_field_number(d, &ev, lab.schema, "TimeDateStamp", &x), ETW_OK);
        ETW_CHECK(x == 1343270098.0);
        x = 7;
        ETW_CHECK_INT(etw_decoder_field_number(d, &ev, lab.schema, "FileName", &x), ETW_E_UNSUPPORTED);
        ETW_CHECK_INT(etw_decoder_field_number(d, &ev, lab.schema, "NoSuchField", &x), ETW_E_NOT_FOUND);
        ETW_CHECK(x == 7.0); /* left alone */
        ETW_CHECK_INT(etw_decoder_field_number(d, &ev, NULL, "ImageBase", &x), ETW_E_NOT_FOUND);
        ETW_CHECK_INT(etw_decoder_field_number(d, &ev, lab.schema, NULL, &x), ETW_E_INVALID_ARG);
        break;
    }
    ETW_CHECK(extension);
    ETW_CHECK(ntdll);
    etw_decoder_free(d);
    etw_reader_close(r);
}

int main(void) {
    ETW_RUN(test_tl_same_name_different_fields);
    ETW_RUN(test_tl_pointer_width);
    ETW_RUN(test_tl_provider_name);
    ETW_RUN(test_tl_corrupt_metadata);
    ETW_RUN(test_classic_never_manifest);
    ETW_RUN(test_manifest_keys);
    ETW_RUN(test_manifest_late_add);
    ETW_RUN(test_manifest_replaced);
    ETW_RUN(test_classic_key_collision);
    ETW_RUN(test_eventsource_precedence);
    ETW_RUN(test_eventsource_repeat_and_replace);
    ETW_RUN(test_metadata_precedence);
    ETW_RUN(test_wpp_and_unknown);
    ETW_RUN(test_chunk_resolved_twice);
    ETW_RUN(test_json_error_and_raw);
    ETW_RUN(test_json_stack_items);
    ETW_RUN(test_field_number);
    return ETW_TEST_DONE();
}
