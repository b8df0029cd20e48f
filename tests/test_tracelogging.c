/* test_tracelogging.c - the TraceLogging metadata parser
 * (src/source/etw_tracelogging.c): synthetic blobs from etw_test_builder.h
 * with exact expectations (names, mapped in/out types, flags, counts, tags,
 * TDH tree layout), every in-type and out-type mapping, malformed and
 * truncated blobs (in exactly-sized allocations so AddressSanitizer sees any
 * overread), scratch reuse, and the TraceLogging events of the real traces
 * in tests/data. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "etw_test.h"
#include "etw_test_builder.h"
#include "etwdecode/etw_reader.h"
#include "etwdecode/etw_traits.h"
#include "source/etw_tracelogging.h"

/* ---- helpers ---- */

/* The tree rules of etw_schema.h, checked independently: top-level first;
 * struct members after the struct, inside the array, each non-top property
 * a member of exactly one struct; non-structs have no member range; names
 * never NULL. Returns 1 when all hold. */
static int tree_ok(const etw_schema *d) {
    if (d->top_count > d->prop_count) return 0;
    if (d->prop_count && !d->props) return 0;
    if (!d->event_name) return 0;
    unsigned char *owner = calloc(d->prop_count + 1u, 1);
    if (!owner) return 0;
    int ok = 1;
    for (uint32_t i = 0; i < d->prop_count && ok; i++) {
        const etw_property *p = &d->props[i];
        if (!p->name) ok = 0;
        if (p->flags & ETW_PROP_STRUCT) {
            if (p->struct_count == 0 || p->struct_first <= i ||
                p->struct_first < d->top_count ||
                (uint32_t)p->struct_first + p->struct_count > d->prop_count) {
                ok = 0;
                break;
            }
            for (uint32_t k = p->struct_first; k < (uint32_t)p->struct_first + p->struct_count; k++) {
                if (owner[k]) ok = 0;
                owner[k] = 1;
            }
        } else if (p->struct_first || p->struct_count) {
            ok = 0;
        }
    }
    for (uint32_t i = 0; i < d->prop_count && ok; i++)
        if ((i < d->top_count) == (owner[i] != 0)) ok = 0;
    free(owner);
    return ok;
}

/* Parse b's bytes from an exactly-sized copy. The draft's strings point
 * into the copy, which is returned in *keep (free it after use). */
static etw_status parse_exact(const etb_buf *b, etw_tl_scratch *s, etw_schema *d,
                              uint8_t **keep) {
    const char *why = NULL;
    *keep = etb_dup_exact(b->data, b->len);
    etw_status st = etw_tl_parse(*keep, b->len, s, d, &why);
    if (st != ETW_OK && !why) st = (etw_status)-1000; /* a reason is always given */
    return st;
}

/* Parse p[0..n) from an exactly-sized copy, which is kept (the draft's
 * names point into it) until the next call or parse_bytes_release(). */
static uint8_t *g_last_copy;
static void parse_bytes_release(void) {
    free(g_last_copy);
    g_last_copy = NULL;
}
static etw_status parse_bytes(const uint8_t *p, size_t n, etw_tl_scratch *s, etw_schema *d) {
    parse_bytes_release();
    g_last_copy = etb_dup_exact(p, n);
    const char *why = NULL;
    etw_status st = etw_tl_parse(g_last_copy, n, s, d, &why);
    if (st != ETW_OK && !why) st = (etw_status)-1000;
    return st;
}

static void check_prop(const etw_schema *d, uint32_t i, const char *name, uint16_t in,
                       uint16_t out, uint32_t flags, uint16_t count) {
    ETW_CHECK(i < d->prop_count);
    if (i >= d->prop_count) return;
    const etw_property *p = &d->props[i];
    ETW_CHECK_STR(p->name, name);
    ETW_CHECK_INT(p->in_type, in);
    ETW_CHECK_INT(p->out_type, out);
    ETW_CHECK_INT(p->flags, flags);
    ETW_CHECK_INT(p->count, count);
}

static void check_struct(const etw_schema *d, uint32_t i, const char *name, uint32_t flags,
                         uint16_t count, uint16_t first, uint16_t members) {
    check_prop(d, i, name, 0, 0, ETW_PROP_STRUCT | flags, count);
    if (i >= d->prop_count) return;
    ETW_CHECK_INT(d->props[i].struct_first, first);
    ETW_CHECK_INT(d->props[i].struct_count, members);
}

/* ---- tests ---- */

static void test_basic(void) {
    etb_buf m;
    etb_init(&m);
    etb_tl_begin(&m, "MyEvent", 0);
    etb_tl_field(&m, "a", ETB_TL_INT32, 0, 0);
    etb_tl_field(&m, "s", ETB_TL_UNICODESTRING, 0, 0);
    etb_tl_field(&m, "h", ETB_TL_UINT64, ETB_TLO_HEX, 0);
    etb_tl_end(&m);

    etw_tl_scratch s;
    etw_tl_scratch_init(&s, NULL);
    etw_schema d;
    uint8_t *keep;
    ETW_CHECK_INT(parse_exact(&m, &s, &d, &keep), ETW_OK);
    ETW_CHECK_STR(d.event_name, "MyEvent");
    ETW_CHECK(d.provider_name == NULL);
    ETW_CHECK_INT(d.source, ETW_SOURCE_TRACELOGGING);
    ETW_CHECK_INT(d.tags, 0);
    ETW_CHECK_INT(d.event_id, 0);
    ETW_CHECK_INT(d.keywords, 0);
    ETW_CHECK_INT(d.prop_count, 3);
    ETW_CHECK_INT(d.top_count, 3);
    check_prop(&d, 0, "a", ETW_INTYPE_INT32, 0, 0, 1);
    check_prop(&d, 1, "s", ETW_INTYPE_UNICODESTRING, 0, 0, 1);
    check_prop(&d, 2, "h", ETW_INTYPE_UINT64, ETW_OUTTYPE_HEXINT64, 0, 1);
    ETW_CHECK(tree_ok(&d));
    /* names point into the blob */
    ETW_CHECK(d.event_name == (const char *)keep + 3);
    free(keep);

    /* an event with no fields */
    etb_tl_begin(&m, "Empty", 0);
    etb_tl_end(&m);
    ETW_CHECK_INT(parse_exact(&m, &s, &d, &keep), ETW_OK);
    ETW_CHECK_STR(d.event_name, "Empty");
    ETW_CHECK_INT(d.prop_count, 0);
    ETW_CHECK_INT(d.top_count, 0);
    free(keep);

    /* empty names are allowed */
    etb_tl_begin(&m, "", 0);
    etb_tl_field(&m, "", ETB_TL_UINT8, 0, 0);
    etb_tl_end(&m);
    ETW_CHECK_INT(parse_exact(&m, &s, &d, &keep), ETW_OK);
    ETW_CHECK_STR(d.event_name, "");
    check_prop(&d, 0, "", ETW_INTYPE_UINT8, 0, 0, 1);
    free(keep);

    /* bad arguments */
    const char *why = NULL;
    ETW_CHECK_INT(etw_tl_parse(NULL, 4, &s, &d, &why), ETW_E_INVALID_ARG);
    ETW_CHECK_INT(etw_tl_parse(m.data, m.len, NULL, &d, &why), ETW_E_INVALID_ARG);
    ETW_CHECK_INT(etw_tl_parse(m.data, m.len, &s, NULL, &why), ETW_E_INVALID_ARG);
    ETW_CHECK_INT(etw_tl_parse(m.data, m.len, &s, &d, NULL), ETW_OK); /* why optional */
    etw_tl_scratch_free(&s);
    etw_tl_scratch_free(&s); /* twice is harmless */
    etb_free(&m);
}

/* Every TL in-type 0..31 (24 = struct excepted) with out-type NULL. */
static void test_intype_mapping(void) {
    etw_tl_scratch s;
    etw_tl_scratch_init(&s, NULL);
    etb_buf m;
    etb_init(&m);
    etb_tl_begin(&m, "AllInTypes", 0);
    for (int t = 0; t < 32; t++) {
        if (t == ETB_TL_STRUCT) continue;
        char name[8];
        snprintf(name, sizeof name, "f%d", t);
        etb_tl_field(&m, name, (uint8_t)t, 0, 0);
    }
    etb_tl_end(&m);
    etw_schema d;
    uint8_t *keep;
    ETW_CHECK_INT(parse_exact(&m, &s, &d, &keep), ETW_OK);
    ETW_CHECK_INT(d.prop_count, 31);
    ETW_CHECK_INT(d.top_count, 31);
    uint32_t i = 0;
    for (int t = 0; t < 32; t++) {
        if (t == ETB_TL_STRUCT) continue;
        /* expected: the same number, except BINARY -> MANIFEST_COUNTEDBINARY;
         * binaries default to HEXBINARY */
        uint16_t in = t == 14 ? 25 : (uint16_t)t;
        uint16_t out = (t == 14 || t == 25) ? ETW_OUTTYPE_HEXBINARY : 0;
        char name[8];
        snprintf(name, sizeof name, "f%d", t);
        check_prop(&d, i, name, in, out, 0, 1);
        i++;
    }
    free(keep);

    /* the helper agrees */
    ETW_CHECK_INT(etw_tl_map_intype(14), ETW_INTYPE_MANIFEST_COUNTEDBINARY);
    ETW_CHECK_INT(etw_tl_map_intype(16), 16);
    ETW_CHECK_INT(etw_tl_map_intype(31), 31);
    ETW_CHECK_INT(etw_tl_map_intype(0x80 | 7), 7); /* flag bits ignored */
    etb_free(&m);
    etw_tl_scratch_free(&s);
}

/* Expected TDH out-type for (TL in-type, TL out-type): written out by hand
 * from FORMATS.md 2.5 / 3.2. */
typedef struct out_case {
    uint8_t in, out;
    uint16_t expect;
} out_case;

static const out_case k_out_cases[] = {
    /* NULL */
    {ETB_TL_INT32, 0, 0}, {ETB_TL_UNICODESTRING, 0, 0},
    {ETB_TL_BINARY, 0, ETW_OUTTYPE_HEXBINARY}, {ETB_TL_COUNTEDBINARY, 0, ETW_OUTTYPE_HEXBINARY},
    /* NOPRINT */
    {ETB_TL_UINT8, 1, ETW_OUTTYPE_NOPRINT},
    /* STRING */
    {ETB_TL_UINT8, 2, ETW_OUTTYPE_STRING}, {ETB_TL_INT8, 2, ETW_OUTTYPE_STRING},
    {ETB_TL_UINT16, 2, ETW_OUTTYPE_STRING},
    /* BOOLEAN */
    {ETB_TL_UINT8, 3, ETW_OUTTYPE_BOOLEAN}, {ETB_TL_BOOL32, 3, ETW_OUTTYPE_BOOLEAN},
    /* HEX by size */
    {ETB_TL_INT8, 4, ETW_OUTTYPE_HEXINT8}, {ETB_TL_UINT8, 4, ETW_OUTTYPE_HEXINT8},
    {ETB_TL_INT16, 4, ETW_OUTTYPE_HEXINT16}, {ETB_TL_UINT16, 4, ETW_OUTTYPE_HEXINT16},
    {ETB_TL_INT32, 4, ETW_OUTTYPE_HEXINT32}, {ETB_TL_UINT32, 4, ETW_OUTTYPE_HEXINT32},
    {ETB_TL_HEXINT32, 4, ETW_OUTTYPE_HEXINT32}, {ETB_TL_BOOL32, 4, ETW_OUTTYPE_HEXINT32},
    {ETB_TL_INT64, 4, ETW_OUTTYPE_HEXINT64}, {ETB_TL_UINT64, 4, ETW_OUTTYPE_HEXINT64},
    {ETB_TL_HEXINT64, 4, ETW_OUTTYPE_HEXINT64},
    {ETB_TL_BINARY, 4, ETW_OUTTYPE_HEXBINARY}, {ETB_TL_COUNTEDBINARY, 4, ETW_OUTTYPE_HEXBINARY},
    {ETB_TL_UNICODESTRING, 4, 0}, {ETB_TL_GUID, 4, 0},
    /* 5..15 */
    {ETB_TL_UINT32, 5, ETW_OUTTYPE_PID}, {ETB_TL_UINT32, 6, ETW_OUTTYPE_TID},
    {ETB_TL_UINT16, 7, ETW_OUTTYPE_PORT}, {ETB_TL_UINT32, 8, ETW_OUTTYPE_IPV4},
    {ETB_TL_BINARY, 9, ETW_OUTTYPE_IPV6}, {ETB_TL_BINARY, 10, ETW_OUTTYPE_SOCKETADDRESS},
    {ETB_TL_ANSISTRING, 11, ETW_OUTTYPE_XML}, {ETB_TL_ANSISTRING, 12, ETW_OUTTYPE_JSON},
    {ETB_TL_UINT32, 13, ETW_OUTTYPE_WIN32ERROR}, {ETB_TL_UINT32, 14, ETW_OUTTYPE_NTSTATUS},
    {ETB_TL_INT32, 15, ETW_OUTTYPE_HRESULT},
    /* FILETIME */
    {ETB_TL_INT64, 16, ETW_OUTTYPE_DATETIME},
    /* SIGNED / UNSIGNED by size */
    {ETB_TL_UINT8, 17, ETW_OUTTYPE_BYTE}, {ETB_TL_UINT16, 17, ETW_OUTTYPE_SHORT},
    {ETB_TL_UINT32, 17, ETW_OUTTYPE_INT}, {ETB_TL_UINT64, 17, ETW_OUTTYPE_LONG},
    {ETB_TL_HEXINT32, 17, ETW_OUTTYPE_INT}, {ETB_TL_HEXINT64, 17, ETW_OUTTYPE_LONG},
    {ETB_TL_INT8, 18, ETW_OUTTYPE_UNSIGNEDBYTE}, {ETB_TL_INT16, 18, ETW_OUTTYPE_UNSIGNEDSHORT},
    {ETB_TL_INT32, 18, ETW_OUTTYPE_UNSIGNEDINT}, {ETB_TL_INT64, 18, ETW_OUTTYPE_UNSIGNEDLONG},
    {ETB_TL_DOUBLE, 17, 0}, {ETB_TL_UNICODESTRING, 18, 0},
    /* unknown 19..31 */
    {ETB_TL_INT32, 19, 0}, {ETB_TL_INT32, 20, 0}, {ETB_TL_INT32, 28, 0}, {ETB_TL_INT32, 31, 0},
    /* 32..38 equal */
    {ETB_TL_INT32, 32, ETW_OUTTYPE_HRESULT},
    {ETB_TL_FILETIME, 33, ETW_OUTTYPE_CULTURE_INSENSITIVE_DATETIME},
    {ETB_TL_ANSISTRING, 34, ETW_OUTTYPE_JSON}, {ETB_TL_ANSISTRING, 35, ETW_OUTTYPE_UTF8},
    {ETB_TL_BINARY, 36, ETW_OUTTYPE_PKCS7_WITH_TYPE_INFO},
    {ETB_TL_UINT64, 37, ETW_OUTTYPE_CODE_POINTER}, {ETB_TL_FILETIME, 38, ETW_OUTTYPE_DATETIME_UTC},
    /* unknown above 38 */
    {ETB_TL_INT32, 39, 0}, {ETB_TL_INT32, 100, 0}, {ETB_TL_INT32, 127, 0},
};

static void test_outtype_mapping(void) {
    size_t n = sizeof k_out_cases / sizeof k_out_cases[0];
    /* through the helper */
    for (size_t i = 0; i < n; i++) {
        uint16_t got = etw_tl_map_outtype(k_out_cases[i].in, k_out_cases[i].out);
        if (got != k_out_cases[i].expect)
            fprintf(stderr, "  out case %zu: in %u out %u\n", i, k_out_cases[i].in,
                    k_out_cases[i].out);
        ETW_CHECK_INT(got, k_out_cases[i].expect);
    }
    /* through a parsed blob, every case as one field */
    etb_buf m;
    etb_init(&m);
    etb_tl_begin(&m, "AllOutTypes", 0);
    for (size_t i = 0; i < n; i++) {
        char name[16];
        snprintf(name, sizeof name, "o%zu", i);
        etb_tl_field_full(&m, name, k_out_cases[i].in, ETB_TL_SCALAR, k_out_cases[i].out, 0, 0,
                          NULL, 0, 1);
    }
    etb_tl_end(&m);
    etw_tl_scratch s;
    etw_tl_scratch_init(&s, NULL);
    etw_schema d;
    uint8_t *keep;
    ETW_CHECK_INT(parse_exact(&m, &s, &d, &keep), ETW_OK);
    ETW_CHECK_INT(d.prop_count, n);
    for (size_t i = 0; i < n && i < d.prop_count; i++) {
        uint16_t in = k_out_cases[i].in == 14 ? 25 : k_out_cases[i].in;
        ETW_CHECK_INT(d.props[i].in_type, in);
        ETW_CHECK_INT(d.props[i].out_type, k_out_cases[i].expect);
    }
    free(keep);

    /* the whole 32 x 128 space: never crashes, results stay in the TDH
     * out-type set, 32..38 pass through for every in-type */
    for (int in = 0; in < 32; in++)
        for (int out = 0; out < 128; out++) {
            uint16_t o = etw_tl_map_outtype((uint8_t)in, (uint8_t)out);
            ETW_CHECK(o <= 38 || o == ETW_OUTTYPE_NOPRINT);
            if (out >= 32 && out <= 38) ETW_CHECK_INT(o, out);
            if (out > 38) ETW_CHECK_INT(o, 0);
        }
    etb_free(&m);
    etw_tl_scratch_free(&s);
}

/* a, s1[var]{ x, inner[4]{ p, deep{ r } }, y }, b, s2{ z }:
 * TDH layout [a s1 b s2] [x inner y] [z] [p deep] [r]. */
static void build_nested(etb_buf *m) {
    etb_tl_begin(m, "Nested", 0);
    etb_tl_field(m, "a", ETB_TL_INT32, 0, 0);
    etb_tl_struct_ex(m, "s1", 3, 0, ETB_TL_VCOUNT, 0);
    etb_tl_field(m, "x", ETB_TL_UINT8, 0, 0);
    etb_tl_struct_ex(m, "inner", 2, 0x1234, ETB_TL_CCOUNT, 4);
    etb_tl_field(m, "p", ETB_TL_UINT16, ETB_TLO_HEX, 0);
    etb_tl_struct(m, "deep", 1, 0);
    etb_tl_field(m, "r", ETB_TL_UNICODESTRING, 0, 0);
    etb_tl_field(m, "y", ETB_TL_DOUBLE, 0, 0);
    etb_tl_field(m, "b", ETB_TL_UINT64, 0, 0);
    etb_tl_struct(m, "s2", 1, 0);
    etb_tl_field(m, "z", ETB_TL_GUID, 0, 0);
    etb_tl_end(m);
}

static void test_nested_structs(void) {
    etb_buf m;
    etb_init(&m);
    build_nested(&m);
    etw_tl_scratch s;
    etw_tl_scratch_init(&s, NULL);
    etw_schema d;
    uint8_t *keep;
    ETW_CHECK_INT(parse_exact(&m, &s, &d, &keep), ETW_OK);
    ETW_CHECK_STR(d.event_name, "Nested");
    ETW_CHECK_INT(d.prop_count, 11);
    ETW_CHECK_INT(d.top_count, 4);
    ETW_CHECK(tree_ok(&d));
    check_prop(&d, 0, "a", ETW_INTYPE_INT32, 0, 0, 1);
    check_struct(&d, 1, "s1", ETW_PROP_COUNT_IN_DATA, 0, 4, 3);
    check_prop(&d, 2, "b", ETW_INTYPE_UINT64, 0, 0, 1);
    check_struct(&d, 3, "s2", 0, 1, 7, 1);
    check_prop(&d, 4, "x", ETW_INTYPE_UINT8, 0, 0, 1);
    check_struct(&d, 5, "inner", ETW_PROP_COUNT_FIXED | ETW_PROP_HAS_TAGS, 4, 8, 2);
    ETW_CHECK_INT(d.props[5].tags, 0x1234);
    check_prop(&d, 6, "y", ETW_INTYPE_DOUBLE, 0, 0, 1);
    check_prop(&d, 7, "z", ETW_INTYPE_GUID, 0, 0, 1);
    check_prop(&d, 8, "p", ETW_INTYPE_UINT16, ETW_OUTTYPE_HEXINT16, 0, 1);
    check_struct(&d, 9, "deep", 0, 1, 10, 1);
    check_prop(&d, 10, "r", ETW_INTYPE_UNICODESTRING, 0, 0, 1);
    free(keep);

    /* a struct as the last member of a struct, closing two levels at once,
     * followed by a top-level field */
    etb_tl_begin(&m, "Close2", 0);
    etb_tl_struct(&m, "o", 2, 0);
    etb_tl_field(&m, "o1", ETB_TL_INT8, 0, 0);
    etb_tl_struct(&m, "i", 1, 0);
    etb_tl_field(&m, "i1", ETB_TL_INT16, 0, 0);
    etb_tl_field(&m, "t", ETB_TL_INT32, 0, 0);
    etb_tl_end(&m);
    ETW_CHECK_INT(parse_exact(&m, &s, &d, &keep), ETW_OK);
    ETW_CHECK_INT(d.prop_count, 5);
    ETW_CHECK_INT(d.top_count, 2);
    ETW_CHECK(tree_ok(&d));
    check_struct(&d, 0, "o", 0, 1, 2, 2);
    check_prop(&d, 1, "t", ETW_INTYPE_INT32, 0, 0, 1);
    check_prop(&d, 2, "o1", ETW_INTYPE_INT8, 0, 0, 1);
    check_struct(&d, 3, "i", 0, 1, 4, 1);
    check_prop(&d, 4, "i1", ETW_INTYPE_INT16, 0, 0, 1);
    free(keep);

    /* two structs side by side, each with a nested struct: BFS order */
    etb_tl_begin(&m, "Wide", 0);
    etb_tl_struct(&m, "A", 2, 0);
    etb_tl_struct(&m, "A1", 1, 0);
    etb_tl_field(&m, "a11", ETB_TL_UINT8, 0, 0);
    etb_tl_field(&m, "a2", ETB_TL_UINT8, 0, 0);
    etb_tl_struct(&m, "B", 1, 0);
    etb_tl_struct(&m, "B1", 1, 0);
    etb_tl_field(&m, "b11", ETB_TL_UINT8, 0, 0);
    etb_tl_end(&m);
    ETW_CHECK_INT(parse_exact(&m, &s, &d, &keep), ETW_OK);
    ETW_CHECK_INT(d.prop_count, 7);
    ETW_CHECK_INT(d.top_count, 2);
    ETW_CHECK(tree_ok(&d));
    /* [A B] [A1 a2] [B1] [a11] [b11] */
    check_struct(&d, 0, "A", 0, 1, 2, 2);
    check_struct(&d, 1, "B", 0, 1, 4, 1);
    check_struct(&d, 2, "A1", 0, 1, 5, 1);
    check_prop(&d, 3, "a2", ETW_INTYPE_UINT8, 0, 0, 1);
    check_struct(&d, 4, "B1", 0, 1, 6, 1);
    check_prop(&d, 5, "a11", ETW_INTYPE_UINT8, 0, 0, 1);
    check_prop(&d, 6, "b11", ETW_INTYPE_UINT8, 0, 0, 1);
    free(keep);
    etb_free(&m);
    etw_tl_scratch_free(&s);
}

static void test_arrays_and_custom(void) {
    etb_buf m;
    etb_init(&m);
    static const uint8_t ti[] = {0x05, 0x01, 0x02, 0x03, 0x00, 0x80};
    etb_tl_begin(&m, "Arrays", 0);
    etb_tl_carray(&m, "fixed", ETB_TL_UINT32, ETB_TLO_HEX, 0, 3);
    etb_tl_carray(&m, "fixed0", ETB_TL_UINT8, 0, 0, 0);
    etb_tl_varray(&m, "var", ETB_TL_UNICODESTRING, 0, 0);
    etb_tl_varray(&m, "bins", ETB_TL_BINARY, 0, 0);
    etb_tl_custom(&m, "cust", ETB_TL_BINARY, 0, 0x20, ti, sizeof ti);
    etb_tl_custom(&m, "cust0", ETB_TL_INT32, ETB_TLO_JSON, 0, NULL, 0);
    etb_tl_field(&m, "after", ETB_TL_SID, 0, 0);
    etb_tl_end(&m);
    etw_tl_scratch s;
    etw_tl_scratch_init(&s, NULL);
    etw_schema d;
    uint8_t *keep;
    ETW_CHECK_INT(parse_exact(&m, &s, &d, &keep), ETW_OK);
    ETW_CHECK_INT(d.prop_count, 7);
    check_prop(&d, 0, "fixed", ETW_INTYPE_UINT32, ETW_OUTTYPE_HEXINT32, ETW_PROP_COUNT_FIXED, 3);
    check_prop(&d, 1, "fixed0", ETW_INTYPE_UINT8, 0, ETW_PROP_COUNT_FIXED, 0);
    check_prop(&d, 2, "var", ETW_INTYPE_UNICODESTRING, 0, ETW_PROP_COUNT_IN_DATA, 0);
    check_prop(&d, 3, "bins", ETW_INTYPE_MANIFEST_COUNTEDBINARY, ETW_OUTTYPE_HEXBINARY,
               ETW_PROP_COUNT_IN_DATA, 0);
    check_prop(&d, 4, "cust", ETW_INTYPE_MANIFEST_COUNTEDBINARY, ETW_OUTTYPE_HEXBINARY,
               ETW_PROP_CUSTOM_SIZED | ETW_PROP_HAS_TAGS, 1);
    ETW_CHECK_INT(d.props[4].tags, 0x20);
    check_prop(&d, 5, "cust0", ETW_INTYPE_INT32, ETW_OUTTYPE_JSON, ETW_PROP_CUSTOM_SIZED, 1);
    check_prop(&d, 6, "after", ETW_INTYPE_SID, 0, 0, 1);
    ETW_CHECK(tree_ok(&d));
    free(keep);

    /* a custom struct is refused */
    etb_tl_begin(&m, "CustStruct", 0);
    etb_tl_field_full(&m, "cs", ETB_TL_STRUCT, ETB_TL_CUSTOM, 1, 0, 0, NULL, 0, 1);
    etb_tl_field(&m, "m", ETB_TL_INT8, 0, 0);
    etb_tl_end(&m);
    ETW_CHECK_INT(parse_exact(&m, &s, &d, &keep), ETW_E_CORRUPT);
    free(keep);
    etb_free(&m);
    etw_tl_scratch_free(&s);
}

/* Same name, different fields: different drafts. */
static void test_same_name_different_fields(void) {
    etb_buf m1, m2;
    etb_init(&m1);
    etb_init(&m2);
    etb_tl_begin(&m1, "Same", 0);
    etb_tl_field(&m1, "v", ETB_TL_INT32, 0, 0);
    etb_tl_end(&m1);
    etb_tl_begin(&m2, "Same", 0);
    etb_tl_field(&m2, "v", ETB_TL_UNICODESTRING, 0, 0);
    etb_tl_field(&m2, "w", ETB_TL_UINT8, 0, 0);
    etb_tl_end(&m2);
    etw_tl_scratch s1, s2;
    etw_tl_scratch_init(&s1, NULL);
    etw_tl_scratch_init(&s2, NULL);
    etw_schema d1, d2;
    uint8_t *k1, *k2;
    ETW_CHECK_INT(parse_exact(&m1, &s1, &d1, &k1), ETW_OK);
    ETW_CHECK_INT(parse_exact(&m2, &s2, &d2, &k2), ETW_OK);
    ETW_CHECK_STR(d1.event_name, "Same");
    ETW_CHECK_STR(d2.event_name, "Same");
    ETW_CHECK_INT(d1.prop_count, 1);
    ETW_CHECK_INT(d2.prop_count, 2);
    ETW_CHECK_INT(d1.props[0].in_type, ETW_INTYPE_INT32);
    ETW_CHECK_INT(d2.props[0].in_type, ETW_INTYPE_UNICODESTRING);
    /* and the blobs themselves differ: the cache keys on them */
    ETW_CHECK(m1.len != m2.len || memcmp(m1.data, m2.data, m1.len) != 0);
    free(k1);
    free(k2);
    etb_free(&m1);
    etb_free(&m2);
    etw_tl_scratch_free(&s1);
    etw_tl_scratch_free(&s2);
}

static void test_tags(void) {
    etw_tl_scratch s;
    etw_tl_scratch_init(&s, NULL);
    etw_schema d;
    /* single event tag byte 0x12 -> 0x02400000 */
    static const uint8_t one[] = {8, 0, 0x12, 'E', 0, 'f', 0, 0x07};
    ETW_CHECK_INT(parse_bytes(one, sizeof one, &s, &d), ETW_OK);
    ETW_CHECK_INT(d.tags, 0x02400000);
    ETW_CHECK_INT(d.prop_count, 1);
    /* multi-byte: 0x81 0x82 0x03 -> 1<<21 | 2<<14 | 3<<7 */
    uint8_t b3[] = {10, 0, 0x81, 0x82, 0x03, 'E', 0, 'f', 0, 0x07};
    ETW_CHECK_INT(parse_bytes(b3, sizeof b3, &s, &d), ETW_OK);
    ETW_CHECK_INT(d.tags, (1u << 21) | (2u << 14) | (3u << 7));
    ETW_CHECK_STR(d.props[0].name, "f");
    /* more than four bytes: the fifth and later are skipped */
    static const uint8_t six[] = {13, 0, 0x81, 0x82, 0x83, 0x84, 0xFF, 0x7F,
                                  'E', 0, 'f', 0, 0x07};
    ETW_CHECK_INT(parse_bytes(six, sizeof six, &s, &d), ETW_OK);
    ETW_CHECK_INT(d.tags, (1u << 21) | (2u << 14) | (3u << 7) | 4u);
    ETW_CHECK_STR(d.event_name, "E");
    ETW_CHECK_INT(d.props[0].in_type, ETW_INTYPE_INT32);
    /* field tags: in 0x87, out 0x80 (NULL + chain), tag bytes 0x12 */
    static const uint8_t ft[] = {10, 0, 0x00, 'E', 0, 'f', 0, 0x87, 0x80, 0x12};
    ETW_CHECK_INT(parse_bytes(ft, sizeof ft, &s, &d), ETW_OK);
    ETW_CHECK_INT(d.tags, 0);
    ETW_CHECK_INT(d.props[0].tags, 0x02400000);
    ETW_CHECK_INT(d.props[0].flags, ETW_PROP_HAS_TAGS);
    ETW_CHECK_INT(d.props[0].out_type, 0);
    /* field tag bytes giving 0: no HAS_TAGS */
    static const uint8_t f0[] = {10, 0, 0x00, 'E', 0, 'f', 0, 0x87, 0x84, 0x00};
    ETW_CHECK_INT(parse_bytes(f0, sizeof f0, &s, &d), ETW_OK);
    ETW_CHECK_INT(d.props[0].flags, 0);
    ETW_CHECK_INT(d.props[0].out_type, ETW_OUTTYPE_HEXINT32);
    /* field tags with five bytes, then another field */
    static const uint8_t f5[] = {19, 0, 0x00, 'E', 0, 'f', 0, 0x87, 0x80, 0xC0, 0x80, 0x80,
                                 0x81, 0x01, 'g', 0, 0x04};
    ETW_CHECK_INT(parse_bytes(f5, 17, &s, &d), ETW_E_TRUNCATED); /* Size 19 > 17 */
    uint8_t f5b[17];
    memcpy(f5b, f5, 17);
    f5b[0] = 17;
    ETW_CHECK_INT(parse_bytes(f5b, sizeof f5b, &s, &d), ETW_OK);
    ETW_CHECK_INT(d.prop_count, 2);
    ETW_CHECK_INT(d.props[0].tags, 0x40u << 21 | 1u);
    ETW_CHECK_STR(d.props[1].name, "g");
    /* builder round trip for assorted tags */
    static const uint32_t tagv[] = {0, 1, 0x7F, 0x80, 0x3FFF, 0x4000, 0x0FFFFFFF, 0x02400000,
                                    0x00200000, 0x0ABCDEF1};
    etb_buf m;
    etb_init(&m);
    for (size_t i = 0; i < sizeof tagv / sizeof tagv[0]; i++) {
        etb_tl_begin(&m, "T", tagv[i]);
        etb_tl_field(&m, "v", ETB_TL_INT8, 0, tagv[i]);
        etb_tl_struct(&m, "st", 1, tagv[i]);
        etb_tl_field(&m, "w", ETB_TL_INT8, 0, 0);
        etb_tl_end(&m);
        uint8_t *keep;
        ETW_CHECK_INT(parse_exact(&m, &s, &d, &keep), ETW_OK);
        ETW_CHECK_INT(d.tags, tagv[i]);
        ETW_CHECK_INT(d.props[0].tags, tagv[i]);
        ETW_CHECK_INT(d.props[0].flags, tagv[i] ? ETW_PROP_HAS_TAGS : 0);
        ETW_CHECK_INT(d.props[1].tags, tagv[i]);
        ETW_CHECK_INT(d.props[1].struct_count, 1);
        free(keep);
    }
    etb_free(&m);
    etw_tl_scratch_free(&s);
}

static void test_size_field(void) {
    etw_tl_scratch s;
    etw_tl_scratch_init(&s, NULL);
    etw_schema d;
    etb_buf m;
    etb_init(&m);
    etb_tl_begin(&m, "Padded", 0);
    etb_tl_field(&m, "a", ETB_TL_INT32, 0, 0);
    etb_tl_end(&m);
    size_t real = m.len;

    /* Size smaller than the item: the item is padded (zeros, or junk) */
    for (int pad = 1; pad <= 9; pad++) {
        etb_buf p;
        etb_init(&p);
        etb_bytes(&p, m.data, real);
        for (int i = 0; i < pad; i++) etb_u8(&p, pad & 1 ? 0 : 0xFF);
        uint8_t *keep;
        ETW_CHECK_INT(parse_exact(&p, &s, &d, &keep), ETW_OK);
        ETW_CHECK_STR(d.event_name, "Padded");
        ETW_CHECK_INT(d.prop_count, 1);
        check_prop(&d, 0, "a", ETW_INTYPE_INT32, 0, 0, 1);
        free(keep);
        etb_free(&p);
    }
    /* Size larger than the item */
    etb_put16_at(&m, 0, (uint16_t)(real + 1));
    uint8_t *keep;
    ETW_CHECK_INT(parse_exact(&m, &s, &d, &keep), ETW_E_TRUNCATED);
    ETW_CHECK(d.event_name == NULL && d.prop_count == 0);
    free(keep);
    etb_put16_at(&m, 0, 0xFFFF);
    ETW_CHECK_INT(parse_exact(&m, &s, &d, &keep), ETW_E_TRUNCATED);
    free(keep);
    /* Size below the minimum */
    for (uint16_t sz = 0; sz < 4; sz++) {
        etb_put16_at(&m, 0, sz);
        ETW_CHECK_INT(parse_exact(&m, &s, &d, &keep), ETW_E_CORRUPT);
        free(keep);
    }
    /* Size 4: tag byte + empty name */
    static const uint8_t min4[] = {4, 0, 0, 0};
    ETW_CHECK_INT(parse_bytes(min4, 4, &s, &d), ETW_OK);
    ETW_CHECK_STR(d.event_name, "");
    ETW_CHECK_INT(d.prop_count, 0);
    /* shorter than the size field */
    ETW_CHECK_INT(parse_bytes(min4, 0, &s, &d), ETW_E_TRUNCATED);
    ETW_CHECK_INT(parse_bytes(min4, 1, &s, &d), ETW_E_TRUNCATED);
    /* Size cuts a field: the field is truncated even though the item has it */
    etb_put16_at(&m, 0, (uint16_t)(real - 1)); /* cuts the in-type byte */
    ETW_CHECK_INT(parse_exact(&m, &s, &d, &keep), ETW_E_TRUNCATED);
    free(keep);
    etb_free(&m);
    etw_tl_scratch_free(&s);
}

static void test_names_without_nul(void) {
    etw_tl_scratch s;
    etw_tl_scratch_init(&s, NULL);
    etw_schema d;
    /* event name filling the blob, no NUL (exact allocation) */
    static const uint8_t ev[] = {8, 0, 0, 'A', 'B', 'C', 'D', 'E'};
    ETW_CHECK_INT(parse_bytes(ev, sizeof ev, &s, &d), ETW_E_CORRUPT);
    /* event tags running to the end */
    static const uint8_t tg[] = {5, 0, 0x80, 0x80, 0x80};
    ETW_CHECK_INT(parse_bytes(tg, sizeof tg, &s, &d), ETW_E_TRUNCATED);
    /* the NUL lies after Size (in the item's padding): still corrupt */
    static const uint8_t pad[] = {6, 0, 0, 'A', 'B', 'C', 0, 0};
    ETW_CHECK_INT(parse_bytes(pad, sizeof pad, &s, &d), ETW_E_CORRUPT);
    /* field name without NUL */
    static const uint8_t fn[] = {9, 0, 0, 'E', 0, 'f', 'i', 'e', 'l'};
    ETW_CHECK_INT(parse_bytes(fn, sizeof fn, &s, &d), ETW_E_CORRUPT);
    /* field name then nothing (no in-type) */
    static const uint8_t fi[] = {7, 0, 0, 'E', 0, 'f', 0};
    ETW_CHECK_INT(parse_bytes(fi, sizeof fi, &s, &d), ETW_E_TRUNCATED);
    /* out-type byte missing */
    static const uint8_t fo[] = {8, 0, 0, 'E', 0, 'f', 0, 0x87};
    ETW_CHECK_INT(parse_bytes(fo, sizeof fo, &s, &d), ETW_E_TRUNCATED);
    /* field tag bytes running out */
    static const uint8_t ftr[] = {10, 0, 0, 'E', 0, 'f', 0, 0x87, 0x80, 0x81};
    ETW_CHECK_INT(parse_bytes(ftr, sizeof ftr, &s, &d), ETW_E_TRUNCATED);
    /* const count cut */
    static const uint8_t cc[] = {9, 0, 0, 'E', 0, 'f', 0, 0x27, 0x03};
    ETW_CHECK_INT(parse_bytes(cc, sizeof cc, &s, &d), ETW_E_TRUNCATED);
    /* custom type info longer than the blob */
    static const uint8_t cu[] = {12, 0, 0, 'E', 0, 'f', 0, 0x6E, 0x05, 0x00, 1, 2};
    ETW_CHECK_INT(parse_bytes(cu, sizeof cu, &s, &d), ETW_E_TRUNCATED);
    etw_tl_scratch_free(&s);
}

static void test_struct_errors(void) {
    etw_tl_scratch s;
    etw_tl_scratch_init(&s, NULL);
    etw_schema d;
    uint8_t *keep;
    etb_buf m;
    etb_init(&m);
    /* claims 3, 2 follow */
    etb_tl_begin(&m, "Over", 0);
    etb_tl_struct(&m, "s", 3, 0);
    etb_tl_field(&m, "a", ETB_TL_INT8, 0, 0);
    etb_tl_field(&m, "b", ETB_TL_INT8, 0, 0);
    etb_tl_end(&m);
    ETW_CHECK_INT(parse_exact(&m, &s, &d, &keep), ETW_E_CORRUPT);
    free(keep);
    /* inner struct claims too many */
    etb_tl_begin(&m, "Over2", 0);
    etb_tl_struct(&m, "s", 2, 0);
    etb_tl_field(&m, "a", ETB_TL_INT8, 0, 0);
    etb_tl_struct(&m, "t", 2, 0);
    etb_tl_field(&m, "b", ETB_TL_INT8, 0, 0);
    etb_tl_end(&m);
    ETW_CHECK_INT(parse_exact(&m, &s, &d, &keep), ETW_E_CORRUPT);
    free(keep);
    /* struct as the last field */
    etb_tl_begin(&m, "Last", 0);
    etb_tl_field(&m, "a", ETB_TL_INT8, 0, 0);
    etb_tl_struct(&m, "s", 1, 0);
    etb_tl_end(&m);
    ETW_CHECK_INT(parse_exact(&m, &s, &d, &keep), ETW_E_CORRUPT);
    free(keep);
    /* zero members, and a struct without an out-type byte */
    etb_tl_begin(&m, "Zero", 0);
    etb_tl_struct(&m, "s", 0, 0);
    etb_tl_field(&m, "a", ETB_TL_INT8, 0, 0);
    etb_tl_end(&m);
    ETW_CHECK_INT(parse_exact(&m, &s, &d, &keep), ETW_E_CORRUPT);
    free(keep);
    static const uint8_t noout[] = {11, 0, 0, 'E', 0, 's', 0, 0x18, 'a', 0, 0x03};
    ETW_CHECK_INT(parse_bytes(noout, sizeof noout, &s, &d), ETW_E_CORRUPT);
    /* zero members but tags present (0x80): still zero members */
    static const uint8_t zt[] = {13, 0, 0, 'E', 0, 's', 0, 0x98, 0x80, 0x01, 'a', 0, 0x03};
    ETW_CHECK_INT(parse_bytes(zt, sizeof zt, &s, &d), ETW_E_CORRUPT);
    /* 127 members (the maximum) */
    etb_tl_begin(&m, "Max", 0);
    etb_tl_struct(&m, "s", 127, 0);
    for (int i = 0; i < 127; i++) etb_tl_field(&m, "m", ETB_TL_INT8, 0, 0);
    etb_tl_field(&m, "t", ETB_TL_INT8, 0, 0);
    etb_tl_end(&m);
    ETW_CHECK_INT(parse_exact(&m, &s, &d, &keep), ETW_OK);
    ETW_CHECK_INT(d.prop_count, 129);
    ETW_CHECK_INT(d.top_count, 2);
    ETW_CHECK_INT(d.props[0].struct_first, 2);
    ETW_CHECK_INT(d.props[0].struct_count, 127);
    ETW_CHECK_STR(d.props[1].name, "t");
    ETW_CHECK(tree_ok(&d));
    free(keep);
    etb_free(&m);
    etw_tl_scratch_free(&s);
}

static void build_chain(etb_buf *m, int depth) {
    etb_tl_begin(m, "Deep", 0);
    for (int i = 0; i < depth; i++) etb_tl_struct(m, "s", 1, 0);
    etb_tl_field(m, "leaf", ETB_TL_INT32, 0, 0);
    etb_tl_end(m);
}

static void test_depth(void) {
    etw_tl_scratch s;
    etw_tl_scratch_init(&s, NULL);
    etw_schema d;
    uint8_t *keep;
    etb_buf m;
    etb_init(&m);
    build_chain(&m, (int)ETW_TL_MAX_DEPTH);
    ETW_CHECK_INT(parse_exact(&m, &s, &d, &keep), ETW_OK);
    ETW_CHECK_INT(d.prop_count, ETW_TL_MAX_DEPTH + 1);
    ETW_CHECK_INT(d.top_count, 1);
    ETW_CHECK(tree_ok(&d));
    for (uint32_t i = 0; i < ETW_TL_MAX_DEPTH; i++) {
        ETW_CHECK_INT(d.props[i].struct_first, i + 1);
        ETW_CHECK_INT(d.props[i].struct_count, 1);
    }
    ETW_CHECK_STR(d.props[ETW_TL_MAX_DEPTH].name, "leaf");
    free(keep);
    build_chain(&m, (int)ETW_TL_MAX_DEPTH + 1);
    ETW_CHECK_INT(parse_exact(&m, &s, &d, &keep), ETW_E_LIMIT);
    free(keep);
    /* 1000 levels: limit, no recursion */
    build_chain(&m, 1000);
    ETW_CHECK_INT(parse_exact(&m, &s, &d, &keep), ETW_E_LIMIT);
    free(keep);
    /* many siblings at depth 32 are fine (depth, not breadth, is bounded) */
    etb_tl_begin(&m, "DeepWide", 0);
    for (int i = 0; i < 31; i++) etb_tl_struct(&m, "s", 1, 0);
    etb_tl_struct(&m, "last", 100, 0);
    for (int i = 0; i < 100; i++) etb_tl_field(&m, "x", ETB_TL_UINT8, 0, 0);
    etb_tl_end(&m);
    ETW_CHECK_INT(parse_exact(&m, &s, &d, &keep), ETW_OK);
    ETW_CHECK_INT(d.prop_count, 132);
    ETW_CHECK(tree_ok(&d));
    free(keep);
    etb_free(&m);
    etw_tl_scratch_free(&s);
}

/* Cut a rich blob at every offset: with its original Size (> len) it must
 * fail; with Size patched to the cut it may parse or fail, never crash, and
 * an OK result obeys the tree rules. */
static void test_truncation_every_offset(void) {
    etb_buf m;
    etb_init(&m);
    static const uint8_t ti[] = {1, 2, 3};
    etb_tl_begin(&m, "Rich", 0x0ABCDEF);
    etb_tl_field(&m, "a", ETB_TL_INT32, ETB_TLO_HEX, 0x1FFFFF);
    etb_tl_struct_ex(&m, "s1", 3, 0, ETB_TL_VCOUNT, 0);
    etb_tl_field(&m, "x", ETB_TL_UINT8, 0, 0);
    etb_tl_struct_ex(&m, "inner", 2, 7, ETB_TL_CCOUNT, 4);
    etb_tl_field(&m, "p", ETB_TL_UINT16, 0, 0);
    etb_tl_struct(&m, "deep", 1, 0);
    etb_tl_custom(&m, "c", ETB_TL_BINARY, 0, 0, ti, sizeof ti);
    etb_tl_carray(&m, "y", ETB_TL_DOUBLE, 0, 0, 2);
    etb_tl_varray(&m, "b", ETB_TL_ANSISTRING, ETB_TLO_UTF8, 0);
    etb_tl_end(&m);
    etw_tl_scratch s;
    etw_tl_scratch_init(&s, NULL);
    etw_schema d;
    int oks = 0;
    ETW_CHECK_INT(parse_bytes(m.data, m.len, &s, &d), ETW_OK);
    ETW_CHECK_INT(d.prop_count, 9);
    ETW_CHECK(tree_ok(&d));
    for (size_t k = 0; k < m.len; k++) {
        ETW_CHECK_INT(parse_bytes(m.data, k, &s, &d), ETW_E_TRUNCATED);
        if (k >= 2) {
            uint8_t *c = etb_dup_exact(m.data, k);
            c[0] = (uint8_t)k;
            c[1] = 0;
            const char *why = NULL;
            etw_status st = etw_tl_parse(c, k, &s, &d, &why);
            ETW_CHECK(st == ETW_OK || st == ETW_E_TRUNCATED || st == ETW_E_CORRUPT);
            if (st == ETW_OK) {
                oks++;
                ETW_CHECK(tree_ok(&d));
            } else {
                ETW_CHECK(why != NULL);
            }
            free(c);
        }
    }
    /* a cut ending right after a complete top-level field parses */
    ETW_CHECK(oks >= 1);
    /* every single-byte corruption of the valid blob: never crashes */
    for (size_t k = 2; k < m.len; k++) {
        for (int v = 0; v < 256; v += 17) {
            uint8_t *c = etb_dup_exact(m.data, m.len);
            c[k] = (uint8_t)v;
            etw_status st = etw_tl_parse(c, m.len, &s, &d, NULL);
            if (st == ETW_OK) ETW_CHECK(tree_ok(&d));
            else ETW_CHECK(st == ETW_E_TRUNCATED || st == ETW_E_CORRUPT || st == ETW_E_LIMIT);
            free(c);
        }
    }
    etb_free(&m);
    etw_tl_scratch_free(&s);
}

/* Counting allocator: the scratch allocates only when it must grow. */
typedef struct count_alloc {
    int allocs, frees;
    int fail_after; /* -1: never */
} count_alloc;
static void *ca_alloc(void *ctx, size_t n) {
    count_alloc *c = ctx;
    if (c->fail_after >= 0 && c->allocs >= c->fail_after) return NULL;
    c->allocs++;
    return malloc(n);
}
static void ca_free(void *ctx, void *p) {
    count_alloc *c = ctx;
    c->frees++;
    free(p);
}

static void test_scratch_reuse(void) {
    count_alloc ca = {0, 0, -1};
    etw_allocator a = {ca_alloc, ca_free, &ca};
    etw_tl_scratch s;
    etw_tl_scratch_init(&s, &a);
    ETW_CHECK_INT(ca.allocs, 0);
    etb_buf small, big;
    etb_init(&small);
    etb_init(&big);
    etb_tl_begin(&small, "Small", 0);
    etb_tl_field(&small, "a", ETB_TL_INT8, 0, 0);
    etb_tl_end(&small);
    etb_tl_begin(&big, "Big", 0);
    for (int i = 0; i < 5000; i++) {
        char name[16];
        snprintf(name, sizeof name, "f%d", i);
        if (i % 100 == 0) etb_tl_struct(&big, name, 2, 0);
        else etb_tl_field(&big, name, (uint8_t)(3 + i % 8), 0, 0);
    }
    etb_tl_field(&big, "tail", ETB_TL_INT8, 0, 0);
    etb_tl_end(&big);

    etw_schema d;
    ETW_CHECK_INT(etw_tl_parse(small.data, small.len, &s, &d, NULL), ETW_OK);
    int after_small = ca.allocs;
    ETW_CHECK(after_small > 0);
    ETW_CHECK_INT(etw_tl_parse(small.data, small.len, &s, &d, NULL), ETW_OK);
    ETW_CHECK_INT(ca.allocs, after_small); /* no allocation when it fits */
    ETW_CHECK_INT(etw_tl_parse(big.data, big.len, &s, &d, NULL), ETW_OK);
    ETW_CHECK_INT(d.prop_count, 5001);
    ETW_CHECK(tree_ok(&d));
    ETW_CHECK_STR(d.event_name, "Big");
    int after_big = ca.allocs;
    ETW_CHECK_INT(etw_tl_parse(big.data, big.len, &s, &d, NULL), ETW_OK);
    ETW_CHECK_INT(etw_tl_parse(small.data, small.len, &s, &d, NULL), ETW_OK);
    ETW_CHECK_INT(ca.allocs, after_big);
    ETW_CHECK_INT(d.prop_count, 1);
    ETW_CHECK_STR(d.props[0].name, "a");
    etw_tl_scratch_free(&s);
    ETW_CHECK_INT(ca.allocs, ca.frees);

    /* allocation failure -> ETW_E_NOMEM, nothing leaks */
    count_alloc cf = {0, 0, 1};
    etw_allocator af = {ca_alloc, ca_free, &cf};
    etw_tl_scratch_init(&s, &af);
    const char *why = NULL;
    ETW_CHECK_INT(etw_tl_parse(small.data, small.len, &s, &d, &why), ETW_E_NOMEM);
    ETW_CHECK(why != NULL);
    etw_tl_scratch_free(&s);
    ETW_CHECK_INT(cf.allocs, cf.frees);
    /* failure while growing keeps the old arrays usable */
    count_alloc cg = {0, 0, 2};
    etw_allocator ag = {ca_alloc, ca_free, &cg};
    etw_tl_scratch_init(&s, &ag);
    ETW_CHECK_INT(etw_tl_parse(small.data, small.len, &s, &d, NULL), ETW_OK);
    ETW_CHECK_INT(etw_tl_parse(big.data, big.len, &s, &d, NULL), ETW_E_NOMEM);
    ETW_CHECK_INT(etw_tl_parse(small.data, small.len, &s, &d, NULL), ETW_OK);
    ETW_CHECK_STR(d.props[0].name, "a");
    etw_tl_scratch_free(&s);
    ETW_CHECK_INT(cg.allocs, cg.frees);

    /* a blob with the most fields a 16-bit Size allows */
    etb_buf many;
    etb_init(&many);
    etb_tl_begin(&many, "", 0);
    while (many.len + 3 <= 65535) etb_tl_field(&many, "", ETB_TL_INT8, 0, 0);
    etb_tl_end(&many);
    etw_tl_scratch_init(&s, NULL);
    ETW_CHECK_INT(etw_tl_parse(many.data, many.len, &s, &d, NULL), ETW_OK);
    ETW_CHECK_INT(d.prop_count, (65535 - 4) / 2);
    ETW_CHECK_INT(d.top_count, d.prop_count);
    etw_tl_scratch_free(&s);
    etb_free(&many);
    etb_free(&small);
    etb_free(&big);
}

/* The builder's event: ext items in the in-buffer layout, found by
 * etw_event_find_ext, and parsed. */
static void test_builder_event(void) {
    for (int ps = 4; ps <= 8; ps += 4) {
        etb_event e;
        etb_event_init(&e, (uint8_t)ps);
        etb_buf meta;
        etb_init(&meta);
        etb_tl_begin(&meta, "BuiltEvent", 0);
        etb_tl_field(&meta, "n", ETB_TL_INT32, 0, 0);
        etb_tl_field(&meta, "s", ETB_TL_UNICODESTRING, 0, 0);
        etb_tl_end(&meta);
        etw_guid grp = etb_make_guid(0x4f50731a, 0x89cf, 0x4782, 0xb3e0dce8c90476baull);
        etb_event_add_traits(&e, "Built.Provider", &grp);
        etb_event_add_ext(&e, ETW_EXT_EVENT_SCHEMA_TL, meta.data, meta.len);
        etb_i32(&e.payload, -7);
        etb_utf16(&e.payload, "hi");
        const etw_event *ev = etb_event_get(&e);
        ETW_CHECK_INT(ev->pointer_size, ps);
        ETW_CHECK(ev->flags & ETW_EVENT_FLAG_EXTENDED_INFO);
        ETW_CHECK(ev->flags & (ps == 4 ? ETW_EVENT_FLAG_32_BIT_HEADER : ETW_EVENT_FLAG_64_BIT_HEADER));
        ETW_CHECK_INT(ev->ext_count, 2);
        ETW_CHECK_INT(ev->user_data_len, 4 + 6);
        ETW_CHECK_INT(ev->ext_size % 8, 0);
        /* item 1: size, type 12, linkage 1; item 2: linkage 0 */
        uint16_t sz1 = (uint16_t)(ev->ext_data[0] | ev->ext_data[1] << 8);
        ETW_CHECK_INT(ev->ext_data[2], ETW_EXT_PROV_TRAITS);
        ETW_CHECK_INT(ev->ext_data[4], 1);
        ETW_CHECK_INT(sz1 % 8, 0);
        ETW_CHECK_INT(ev->ext_data[sz1 + 2], ETW_EXT_EVENT_SCHEMA_TL);
        ETW_CHECK_INT(ev->ext_data[sz1 + 4], 0);
        etw_ext_item ti, mi;
        ETW_CHECK_INT(etw_event_find_ext(ev, ETW_EXT_PROV_TRAITS, &ti), ETW_OK);
        ETW_CHECK_INT(etw_event_find_ext(ev, ETW_EXT_EVENT_SCHEMA_TL, &mi), ETW_OK);
        ETW_CHECK_INT(mi.size, meta.len);
        const char *pn;
        size_t pl;
        ETW_CHECK_INT(etw_tl_provider_name(ti.data, ti.size, &pn, &pl), ETW_OK);
        ETW_CHECK(pl == 14 && memcmp(pn, "Built.Provider", 14) == 0);
        etw_traits tr;
        ETW_CHECK_INT(etw_traits_parse(ti.data, ti.size, &tr), ETW_OK);
        ETW_CHECK(tr.has_group && etw_guid_equal(&tr.group, &grp));
        etw_tl_scratch s;
        etw_tl_scratch_init(&s, NULL);
        etw_schema d;
        ETW_CHECK_INT(etw_tl_parse(mi.data, mi.size, &s, &d, NULL), ETW_OK);
        ETW_CHECK_STR(d.event_name, "BuiltEvent");
        ETW_CHECK_INT(d.prop_count, 2);
        ETW_CHECK_INT(ev->user_data[0], 0xF9);
        ETW_CHECK_INT(ev->user_data[4], 'h');
        etw_tl_scratch_free(&s);
        etb_free(&meta);
        etb_event_free(&e);
    }
    /* payload helpers lay bytes out as documented */
    etb_buf p;
    etb_init(&p);
    etb_u16(&p, 0x1234);
    etb_f32(&p, 1.0f);
    etb_counted_utf16(&p, "ab");
    etb_counted_ansi(&p, "xyz");
    static const uint32_t sub[] = {21, 500};
    etb_sid(&p, 5, sub, 2);
    etb_systemtime(&p, 2024, 2, 4, 29, 23, 59, 58, 999);
    etw_guid g = etb_make_guid(0x01020304, 0x0506, 0x0708, 0x090a0b0c0d0e0f10ull);
    etb_guid(&p, &g);
    static const uint8_t expect_head[] = {0x34, 0x12, 0x00, 0x00, 0x80, 0x3F, 4, 0, 'a', 0,
                                          'b', 0, 3, 0, 'x', 'y', 'z', 1, 2, 0, 0,
                                          0, 0, 0, 5, 21, 0, 0, 0, 0xF4, 1, 0, 0,
                                          0xE8, 0x07, 2, 0};
    ETW_CHECK(p.len == sizeof expect_head + 12 + 16);
    ETW_CHECK(memcmp(p.data, expect_head, sizeof expect_head) == 0);
    ETW_CHECK_INT(p.data[p.len - 16], 0x04);
    ETW_CHECK_INT(p.data[p.len - 8], 0x09);
    etb_free(&p);
}

static void test_provider_name(void) {
    const char *n;
    size_t l;
    static const uint8_t ok[] = {5, 0, 'a', 'b', 0, 0xEE};
    ETW_CHECK_INT(etw_tl_provider_name(ok, sizeof ok, &n, &l), ETW_OK);
    ETW_CHECK(l == 2 && n[0] == 'a');
    ETW_CHECK_INT(etw_tl_provider_name(ok, 1, &n, &l), ETW_E_TRUNCATED);
    ETW_CHECK_INT(etw_tl_provider_name(ok, 4, &n, &l), ETW_E_TRUNCATED);
    static const uint8_t nonul[] = {4, 0, 'a', 'b'};
    uint8_t *c = etb_dup_exact(nonul, sizeof nonul);
    ETW_CHECK_INT(etw_tl_provider_name(c, sizeof nonul, &n, &l), ETW_E_CORRUPT);
    free(c);
    static const uint8_t two[] = {2, 0};
    ETW_CHECK_INT(etw_tl_provider_name(two, 2, &n, &l), ETW_E_CORRUPT);
    static const uint8_t three[] = {3, 0, 0};
    ETW_CHECK_INT(etw_tl_provider_name(three, 3, &n, &l), ETW_OK);
    ETW_CHECK_INT(l, 0);
    ETW_CHECK_INT(etw_tl_provider_name(NULL, 3, &n, &l), ETW_E_INVALID_ARG);
}

/* ---- real traces ---- */

typedef struct tl_seen {
    int total;          /* all events */
    int events;         /* events with EVENT_SCHEMA_TL */
    int with_traits;    /* ... and PROV_TRAITS */
    int parse_errors;
    int traits_errors;
    int bad_trees;
} tl_seen;

/* Walk a trace; call fn for every TL event that parsed (ev, traits, draft). */
typedef void (*tl_event_fn)(void *ctx, const etw_event *ev, const etw_traits *tr,
                            const etw_schema *d, const uint8_t *meta, size_t meta_len);

static void walk_trace(const char *file, tl_seen *seen, tl_event_fn fn, void *ctx) {
    char path[512];
    snprintf(path, sizeof path, "%s/%s", ETW_TEST_DATA_DIR, file);
    etw_reader *r = NULL;
    memset(seen, 0, sizeof *seen);
    ETW_CHECK_INT(etw_reader_open_file(&r, path, NULL), ETW_OK);
    if (!r) return;
    etw_tl_scratch s;
    etw_tl_scratch_init(&s, NULL);
    etw_event ev;
    while (etw_reader_next(r, &ev) == ETW_OK) {
        etw_ext_item mi, ti;
        seen->total++;
        if (etw_event_find_ext(&ev, ETW_EXT_EVENT_SCHEMA_TL, &mi) != ETW_OK) continue;
        seen->events++;
        etw_traits tr;
        memset(&tr, 0, sizeof tr);
        if (etw_event_find_ext(&ev, ETW_EXT_PROV_TRAITS, &ti) == ETW_OK) {
            seen->with_traits++;
            /* exactly-sized copies: no overread of the item */
            uint8_t *tc = etb_dup_exact(ti.data, ti.size);
            if (etw_traits_parse(tc, ti.size, &tr) != ETW_OK) seen->traits_errors++;
            free(tc);
            if (etw_traits_parse(ti.data, ti.size, &tr) != ETW_OK) seen->traits_errors++;
        }
        etw_schema d;
        const char *why = NULL;
        etw_status st = etw_tl_parse(mi.data, mi.size, &s, &d, &why);
        if (st != ETW_OK) {
            seen->parse_errors++;
            fprintf(stderr, "  %s: TL parse: %d %s\n", file, (int)st, why ? why : "");
            continue;
        }
        if (!tree_ok(&d)) seen->bad_trees++;
        if (fn) fn(ctx, &ev, &tr, &d, mi.data, mi.size);
    }
    etw_tl_scratch_free(&s);
    etw_reader_close(r);
}

static int name_is(const etw_traits *tr, const char *want) {
    return tr->name && tr->name_len == strlen(want) && memcmp(tr->name, want, tr->name_len) == 0;
}

typedef struct prim_ctx {
    int checked;
} prim_ctx;

static void prim_event(void *ctx, const etw_event *ev, const etw_traits *tr,
                       const etw_schema *d, const uint8_t *meta, size_t meta_len) {
    prim_ctx *pc = ctx;
    (void)ev;
    pc->checked++;
    ETW_CHECK(name_is(tr, "solar_system"));
    ETW_CHECK(!tr->has_group);
    ETW_CHECK_STR(d->event_name, "PrimitiveTypesTest");
    ETW_CHECK_INT(d->tags, 0);
    ETW_CHECK_INT(meta_len, 182);
    ETW_CHECK_INT(meta[0] | meta[1] << 8, 182);
    /* The metadata bytes (dumped once): string_type 02, boolean_type 84 03,
     * char_type 84 02, int16 05, int32 07, uint16 06, uint32 08,
     * int64_type 0A (UINT64 on the wire!), uint64 0A, guid 0F,
     * file_time 11, system_time 12. */
    ETW_CHECK_INT(d->prop_count, 12);
    ETW_CHECK_INT(d->top_count, 12);
    check_prop(d, 0, "string_type", ETW_INTYPE_ANSISTRING, 0, 0, 1);
    check_prop(d, 1, "boolean_type", ETW_INTYPE_UINT8, ETW_OUTTYPE_BOOLEAN, 0, 1);
    check_prop(d, 2, "char_type", ETW_INTYPE_UINT8, ETW_OUTTYPE_STRING, 0, 1);
    check_prop(d, 3, "int16_type", ETW_INTYPE_INT16, 0, 0, 1);
    check_prop(d, 4, "int32_type", ETW_INTYPE_INT32, 0, 0, 1);
    check_prop(d, 5, "uint16_type", ETW_INTYPE_UINT16, 0, 0, 1);
    check_prop(d, 6, "uint32_type", ETW_INTYPE_UINT32, 0, 0, 1);
    check_prop(d, 7, "int64_type", ETW_INTYPE_UINT64, 0, 0, 1);
    check_prop(d, 8, "uint64_type", ETW_INTYPE_UINT64, 0, 0, 1);
    check_prop(d, 9, "guid_type", ETW_INTYPE_GUID, 0, 0, 1);
    check_prop(d, 10, "file_time_type", ETW_INTYPE_FILETIME, 0, 0, 1);
    check_prop(d, 11, "system_time_type", ETW_INTYPE_SYSTEMTIME, 0, 0, 1);
}

static void test_real_primitive_types(void) {
    tl_seen seen;
    prim_ctx pc = {0};
    walk_trace("primitive-types.etl", &seen, prim_event, &pc);
    ETW_CHECK_INT(seen.events, 5);
    ETW_CHECK_INT(seen.with_traits, 5);
    ETW_CHECK_INT(seen.parse_errors, 0);
    ETW_CHECK_INT(seen.traits_errors, 0);
    ETW_CHECK_INT(seen.bad_trees, 0);
    ETW_CHECK_INT(pc.checked, 5);
}

static void sd_event(void *ctx, const etw_event *ev, const etw_traits *tr,
                     const etw_schema *d, const uint8_t *meta, size_t meta_len) {
    int *n = ctx;
    (void)ev;
    (void)meta;
    (void)meta_len;
    (*n)++;
    ETW_CHECK(name_is(tr, "MySource"));
    ETW_CHECK_STR(d->event_name, "TestEvent");
    /* a: 98 02 (struct, 2 members), b: 01, c: 01 */
    ETW_CHECK_INT(d->prop_count, 3);
    ETW_CHECK_INT(d->top_count, 1);
    check_struct(d, 0, "a", 0, 1, 1, 2);
    check_prop(d, 1, "b", ETW_INTYPE_UNICODESTRING, 0, 0, 1);
    check_prop(d, 2, "c", ETW_INTYPE_UNICODESTRING, 0, 0, 1);
}

static void test_real_self_describing(void) {
    tl_seen seen;
    int n = 0;
    walk_trace("SelfDescribingSingleEvent.etl", &seen, sd_event, &n);
    ETW_CHECK_INT(seen.events, 1);
    ETW_CHECK_INT(seen.with_traits, 1);
    ETW_CHECK_INT(seen.parse_errors, 0);
    ETW_CHECK_INT(seen.traits_errors, 0);
    ETW_CHECK_INT(n, 1);
}

static void amsi_event(void *ctx, const etw_event *ev, const etw_traits *tr,
                       const etw_schema *d, const uint8_t *meta, size_t meta_len) {
    int *n = ctx;
    (void)ev;
    (void)meta;
    (void)meta_len;
    (*n)++;
    ETW_CHECK(name_is(tr, "AmsiTrace"));
    ETW_CHECK_STR(d->event_name, "AmsiScript");
    /* Engine 01, Script 01, "Raw Script" C6 02 (var array of UINT16 as
     * STRING chars) */
    ETW_CHECK_INT(d->prop_count, 3);
    ETW_CHECK_INT(d->top_count, 3);
    check_prop(d, 0, "Engine", ETW_INTYPE_UNICODESTRING, 0, 0, 1);
    check_prop(d, 1, "Script", ETW_INTYPE_UNICODESTRING, 0, 0, 1);
    check_prop(d, 2, "Raw Script", ETW_INTYPE_UINT16, ETW_OUTTYPE_STRING,
               ETW_PROP_COUNT_IN_DATA, 0);
}

static void test_real_amsi(void) {
    tl_seen seen;
    int n = 0;
    walk_trace("AMSITrace.etl", &seen, amsi_event, &n);
    ETW_CHECK_INT(seen.events, 19);
    ETW_CHECK_INT(seen.with_traits, 19);
    ETW_CHECK_INT(seen.parse_errors, 0);
    ETW_CHECK_INT(seen.traits_errors, 0);
    ETW_CHECK_INT(seen.bad_trees, 0);
    ETW_CHECK_INT(n, 19);
}

static void lx_event(void *ctx, const etw_event *ev, const etw_traits *tr,
                     const etw_schema *d, const uint8_t *meta, size_t meta_len) {
    int *n = ctx;
    (void)ev;
    (void)meta_len;
    (*n)++;
    ETW_CHECK(name_is(tr, "Microsoft.Windows.Subsystem.LxCore"));
    /* group trait: {4f50731a-89cf-4782-b3e0-dce8c90476ba} */
    etw_guid grp = etb_make_guid(0x4f50731a, 0x89cf, 0x4782, 0xb3e0dce8c90476baull);
    ETW_CHECK(tr->has_group && etw_guid_equal(&tr->group, &grp));
    ETW_CHECK_STR(d->event_name, "BreakPoint");
    /* two event tag bytes 80 00: tags 0 */
    ETW_CHECK_INT(meta[2], 0x80);
    ETW_CHECK_INT(d->tags, 0);
    ETW_CHECK_INT(d->prop_count, 9);
    check_prop(d, 0, "ErrorLevel", ETW_INTYPE_UINT8, 0, 0, 1);
    check_prop(d, 1, "instanceId", ETW_INTYPE_GUID, 0, 0, 1);
    check_prop(d, 2, "LxPid", ETW_INTYPE_INT32, 0, 0, 1);
    check_prop(d, 3, "LxTid", ETW_INTYPE_INT32, 0, 0, 1);
    check_prop(d, 4, "LxNs", ETW_INTYPE_INT32, 0, 0, 1);
    check_prop(d, 5, "ExecutablePath", ETW_INTYPE_MANIFEST_COUNTEDANSISTRING, 0, 0, 1);
    check_prop(d, 6, "Function", ETW_INTYPE_ANSISTRING, 0, 0, 1);
    check_prop(d, 7, "Line", ETW_INTYPE_UINT32, 0, 0, 1);
    check_prop(d, 8, "Message", ETW_INTYPE_ANSISTRING, 0, 0, 1);
}

static void test_real_lxcore(void) {
    tl_seen seen;
    int n = 0;
    walk_trace("lxcore_kernel.etl", &seen, lx_event, &n);
    ETW_CHECK_INT(seen.events, 2);
    ETW_CHECK_INT(seen.with_traits, 2);
    ETW_CHECK_INT(seen.parse_errors, 0);
    ETW_CHECK_INT(seen.traits_errors, 0);
    ETW_CHECK_INT(n, 2);
}

/* Every other trace: whatever TL events they hold parse. */
static void test_real_others(void) {
    static const char *files[] = {"ShutdownPerfDiagLogger.etl", "HTTP_Server.etl",
                                  "powershell.etl", "BondEtwSample.etl", "gcevents.etl",
                                  "smallEtlFile.etl", "net.4.5.2.x64.etl"};
    for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
        tl_seen seen;
        walk_trace(files[i], &seen, NULL, NULL);
        ETW_CHECK(seen.total > 0);
        ETW_CHECK_INT(seen.parse_errors, 0);
        ETW_CHECK_INT(seen.traits_errors, 0);
        ETW_CHECK_INT(seen.bad_trees, 0);
        printf("  %s: %d events, %d TraceLogging\n", files[i], seen.total, seen.events);
    }
}

int main(void) {
    ETW_RUN(test_basic);
    ETW_RUN(test_intype_mapping);
    ETW_RUN(test_outtype_mapping);
    ETW_RUN(test_nested_structs);
    ETW_RUN(test_arrays_and_custom);
    ETW_RUN(test_same_name_different_fields);
    ETW_RUN(test_tags);
    ETW_RUN(test_size_field);
    ETW_RUN(test_names_without_nul);
    ETW_RUN(test_struct_errors);
    ETW_RUN(test_depth);
    ETW_RUN(test_truncation_every_offset);
    ETW_RUN(test_scratch_reuse);
    ETW_RUN(test_builder_event);
    ETW_RUN(test_provider_name);
    ETW_RUN(test_real_primitive_types);
    ETW_RUN(test_real_self_describing);
    ETW_RUN(test_real_amsi);
    ETW_RUN(test_real_lxcore);
    ETW_RUN(test_real_others);
    parse_bytes_release();
    return ETW_TEST_DONE();
}
