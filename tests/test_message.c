/* test_message.c - event messages (etw_message.h): every FormatMessage
 * escape, inserts of every value kind, maps, structs and arrays, missing
 * and undecodable inserts, %0, printf-style formats, plain-text values, and
 * the messages of real HTTP_Server.etl and gcevents.etl events with their
 * manifests. */
#include <stdlib.h>

#include "etw_test.h"
#include "etw_test_builder.h"
#include "etwdecode/etw_decode.h"
#include "etwdecode/etw_decoder.h"
#include "etwdecode/etw_reader.h"
#include "format/etw_message.h"
#include "format/etw_text.h"
#include "schema/etw_source.h"

static etw_text T, S;
static uint64_t refs[256];

static etw_schema make_schema(const char *msg, const etw_property *props, uint16_t n, uint16_t top) {
    etw_schema s;
    memset(&s, 0, sizeof s);
    s.pointer_size = 8;
    s.props = props;
    s.prop_count = n;
    s.top_count = top;
    s.event_name = "Test";
    s.message = msg;
    return s;
}

static etw_event make_event(const void *data, uint32_t len, uint8_t ptr) {
    etw_event ev;
    memset(&ev, 0, sizeof ev);
    ev.form = ETW_FORM_EVENT_HEADER;
    ev.pointer_size = ptr;
    ev.user_data = (const uint8_t *)data;
    ev.user_data_len = len;
    return ev;
}

/* The message JSON of msg over props/payload (the payload copied to an
 * exact-size block so ASan sees any over-read); "<status N>" on failure. */
static const char *msg_json(const char *msg, const etw_property *props, uint16_t n, uint16_t top,
                            const void *data, uint32_t len) {
    static char fail[32];
    uint8_t *copy = etb_dup_exact(data, len);
    etw_schema s = make_schema(msg, props, n, top);
    etw_event ev = make_event(copy, len, 8);
    etw_text_clear(&T);
    etw_status st = etw_message_json(&T, &S, &s, &ev, refs, 256);
    free(copy);
    if (st != ETW_OK) {
        snprintf(fail, sizeof fail, "<status %d>", (int)st);
        return fail;
    }
    return etw_text_cstr(&T);
}

/* A message over no properties. */
#define PLAIN(msg, expected) ETW_CHECK_STR(msg_json((msg), NULL, 0, 0, "", 0), "\"" expected "\"")

/* ------------------------------------------------------------------------ */

static void test_escapes(void) {
    PLAIN("", "");
    PLAIN("no inserts at all", "no inserts at all");
    PLAIN("100%% sure", "100% sure");
    PLAIN("a%.b%!c% d", "a.b!c d");
    PLAIN("line1%nline2", "line1\\nline2");
    PLAIN("cr%rtab%tend", "cr\\rtab\\tend");
    PLAIN("%n%n", "\\n\\n");
    /* any other character: itself without the '%' (ClrEtwAll.man has these) */
    PLAIN("ClrInstanceID=%1;%ModuleID=%2", "ClrInstanceID=%1;ModuleID=%2");
    PLAIN("ClrInstanceID=%s", "ClrInstanceID=s");
    PLAIN("%N %R %T %b %x %%%%", "N R T b x %%");
    PLAIN("%\xc3\xa9t\xc3\xa9", "\xc3\xa9t\xc3\xa9"); /* %é: the UTF-8 sequence kept whole */
    /* %0 ends the message */
    PLAIN("abc%0def", "abc");
    PLAIN("%0", "");
    PLAIN("x%0%1%n", "x");
    PLAIN("%%0", "%0");
    /* a lone '%' at the end */
    PLAIN("100%", "100%");
    PLAIN("%", "%");
    PLAIN("%%%", "%%");
    /* JSON escaping of the literal text */
    PLAIN("quote \" back \\ ctl \x01 del \x7f", "quote \\\" back \\\\ ctl \\u0001 del \\u007f");
    PLAIN("bad \xff utf8", "bad \xef\xbf\xbd utf8");
    /* inserts with nothing to fill them: left as written */
    PLAIN("%1 %2!x! %99 %10", "%1 %2!x! %99 %10");
}

static void test_api(void) {
    etw_schema s = make_schema(NULL, NULL, 0, 0);
    etw_event ev = make_event("", 0, 8);
    etw_text_clear(&T);
    etw_text_puts(&T, "keep");
    ETW_CHECK_INT(etw_message_json(&T, &S, &s, &ev, refs, 256), ETW_E_NOT_FOUND);
    ETW_CHECK_STR(etw_text_cstr(&T), "keep");
    s.message = "m";
    ETW_CHECK_INT(etw_message_json(&T, &T, &s, &ev, refs, 256), ETW_E_INVALID_ARG);
    ETW_CHECK_INT(etw_message_json(NULL, &S, &s, &ev, refs, 256), ETW_E_INVALID_ARG);
    ETW_CHECK_INT(etw_message_json(&T, NULL, &s, &ev, refs, 256), ETW_E_INVALID_ARG);
    ETW_CHECK_INT(etw_message_json(&T, &S, NULL, &ev, refs, 256), ETW_E_INVALID_ARG);
    ETW_CHECK_STR(etw_text_cstr(&T), "keep");
    /* appends after what t holds */
    ETW_CHECK_INT(etw_message_json(&T, &S, &s, &ev, refs, 256), ETW_OK);
    ETW_CHECK_STR(etw_text_cstr(&T), "keep\"m\"");
    /* no insert: nothing is decoded, so refs and ev may be absent */
    etw_text_clear(&T);
    ETW_CHECK_INT(etw_message_json(&T, &S, &s, NULL, NULL, 0), ETW_OK);
    ETW_CHECK_STR(etw_text_cstr(&T), "\"m\"");
    /* with an insert the decoder checks its arguments: refs too short */
    static const etw_property p[] = {{.name = "a", .in_type = ETW_INTYPE_UINT8},
                                     {.name = "b", .in_type = ETW_INTYPE_UINT8}};
    etw_schema s2 = make_schema("v=%1", p, 2, 2);
    etw_event ev2 = make_event("\x07\x08", 2, 8);
    etw_text_clear(&T);
    ETW_CHECK_INT(etw_message_json(&T, &S, &s2, &ev2, refs, 1), ETW_E_INVALID_ARG);
    ETW_CHECK_INT((long long)T.len, 0);
    ETW_CHECK_INT(etw_message_json(&T, &S, &s2, NULL, refs, 256), ETW_E_INVALID_ARG);
    ETW_CHECK_INT((long long)T.len, 0);
    ETW_CHECK_INT(etw_message_json(&T, &S, &s2, &ev2, refs, 2), ETW_OK);
    ETW_CHECK_STR(etw_text_cstr(&T), "\"v=7\"");
    /* scratch is reused: same answer twice, whatever it held before */
    etw_text_clear(&S);
    etw_text_puts(&S, "garbage that must not leak into the message");
    etw_text_clear(&T);
    ETW_CHECK_INT(etw_message_json(&T, &S, &s2, &ev2, refs, 2), ETW_OK);
    ETW_CHECK_INT(etw_message_json(&T, &S, &s2, &ev2, refs, 2), ETW_OK);
    ETW_CHECK_STR(etw_text_cstr(&T), "\"v=7\"\"v=7\"");
}

/* ---- allocation failures ---- */

static int fail_after;
static void *failing_alloc(void *ctx, size_t n) {
    (void)ctx;
    if (fail_after-- <= 0) return NULL;
    return malloc(n);
}
static void failing_free(void *ctx, void *p) {
    (void)ctx;
    free(p);
}

static void test_nomem(void) {
    static const etw_allocator fa = {failing_alloc, failing_free, NULL};
    static const etw_property p[] = {{.name = "a", .in_type = ETW_INTYPE_UNICODESTRING}};
    etw_schema s = make_schema("v=%1", p, 1, 1);
    etw_event ev = make_event("h\0i\0\0\0", 6, 8);
    etw_text t, sc;
    /* scratch cannot grow: nothing appended to t */
    etw_text_init(&t, NULL);
    etw_text_init(&sc, &fa);
    fail_after = 0;
    etw_text_puts(&t, "x");
    ETW_CHECK_INT(etw_message_json(&t, &sc, &s, &ev, refs, 256), ETW_E_NOMEM);
    ETW_CHECK_STR(etw_text_cstr(&t), "x");
    /* scratch recovers on the next call (it is cleared) */
    fail_after = 100;
    ETW_CHECK_INT(etw_message_json(&t, &sc, &s, &ev, refs, 256), ETW_OK);
    ETW_CHECK_STR(etw_text_cstr(&t), "x\"v=hi\"");
    etw_text_free(&t);
    etw_text_free(&sc);
    /* t cannot grow */
    etw_text_init(&t, &fa);
    etw_text_init(&sc, NULL);
    fail_after = 0;
    ETW_CHECK_INT(etw_message_json(&t, &sc, &s, &ev, refs, 256), ETW_E_NOMEM);
    ETW_CHECK_INT(etw_text_status(&t), ETW_E_NOMEM);
    etw_text_free(&t);
    etw_text_free(&sc);
}

/* ---- inserts of every value kind ---- */

static void test_value_kinds(void) {
    static const etw_map_entry ve[] = {{1, "One"}, {2, "Two \"2\""}};
    static const etw_map vmap = {"V", ETW_MAP_VALUEMAP, 2, ve};
    static const etw_map_entry be[] = {{1, "A"}, {2, "B"}, {4, "C"}};
    static const etw_map bmap = {"B", ETW_MAP_BITMAP, 3, be};
    static const etw_property p[] = {
        /* 1 */ {.name = "u32", .in_type = ETW_INTYPE_UINT32},
        /* 2 */ {.name = "i8", .in_type = ETW_INTYPE_INT8},
        /* 3 */ {.name = "i64", .in_type = ETW_INTYPE_INT64},
        /* 4 */ {.name = "hex32", .in_type = ETW_INTYPE_HEXINT32},
        /* 5 */ {.name = "u64hex", .in_type = ETW_INTYPE_UINT64, .out_type = ETW_OUTTYPE_HEXINT64},
        /* 6 */ {.name = "ptr", .in_type = ETW_INTYPE_POINTER},
        /* 7 */ {.name = "ustr", .in_type = ETW_INTYPE_UNICODESTRING},
        /* 8 */ {.name = "astr", .in_type = ETW_INTYPE_ANSISTRING},
        /* 9 */ {.name = "guid", .in_type = ETW_INTYPE_GUID},
        /* 10 */ {.name = "ft", .in_type = ETW_INTYPE_FILETIME},
        /* 11 */ {.name = "st", .in_type = ETW_INTYPE_SYSTEMTIME},
        /* 12 */ {.name = "b", .in_type = ETW_INTYPE_BOOLEAN},
        /* 13 */ {.name = "d", .in_type = ETW_INTYPE_DOUBLE},
        /* 14 */ {.name = "f", .in_type = ETW_INTYPE_FLOAT},
        /* 15 */ {.name = "sid", .in_type = ETW_INTYPE_SID},
        /* 16 */ {.name = "bin", .in_type = ETW_INTYPE_BINARY, .flags = ETW_PROP_LENGTH_FIXED, .length = 3},
        /* 17 */ {.name = "ip", .in_type = ETW_INTYPE_UINT32, .out_type = ETW_OUTTYPE_IPV4},
        /* 18 */ {.name = "port", .in_type = ETW_INTYPE_UINT16, .out_type = ETW_OUTTYPE_PORT},
        /* 19 */ {.name = "vm", .in_type = ETW_INTYPE_UINT32, .map = &vmap},
        /* 20 */ {.name = "vm2", .in_type = ETW_INTYPE_UINT32, .map = &vmap},
        /* 21 */ {.name = "vm3", .in_type = ETW_INTYPE_UINT32, .map = &vmap},
        /* 22 */ {.name = "bm", .in_type = ETW_INTYPE_UINT32, .map = &bmap},
        /* 23 */ {.name = "ftz", .in_type = ETW_INTYPE_FILETIME},
        /* 24 */ {.name = "dnan", .in_type = ETW_INTYPE_DOUBLE},
        /* 25 */ {.name = "u8b", .in_type = ETW_INTYPE_UINT8, .out_type = ETW_OUTTYPE_BOOLEAN},
        /* 26 */ {.name = "ch", .in_type = ETW_INTYPE_UINT16, .out_type = ETW_OUTTYPE_STRING},
        /* 27 */ {.name = "cs", .in_type = ETW_INTYPE_MANIFEST_COUNTEDSTRING},
    };
    etb_buf b;
    etb_init(&b);
    etb_u32(&b, 4000000000u);
    etb_i8(&b, -5);
    etb_i64(&b, INT64_MIN);
    etb_u32(&b, 0xbeef);
    etb_u64(&b, 0x1b0f1000028ull);
    etb_u64(&b, 0xfffffa8003e92010ull);
    etb_utf16(&b, "say \"hi\"\\\n\tend");
    etb_ansi(&b, "caf\xe9"); /* Latin-1 */
    etw_guid g = etb_make_guid(0xdd5ef90a, 0x6398, 0x47a4, 0xad344dcecdef795full);
    etb_guid(&b, &g);
    etb_filetime(&b, 129402940472257591ull);
    etb_systemtime(&b, 2011, 1, 0, 23, 22, 7, 27, 225);
    etb_u32(&b, 1);
    etb_f64(&b, 0.1);
    etb_f32(&b, 3.14f);
    static const uint32_t sub[] = {18};
    etb_sid(&b, 5, sub, 1);
    etb_bytes(&b, "\xab\xcd\xef", 3);
    etb_bytes(&b, "\xc0\xa8\x01\x02", 4);
    etb_bytes(&b, "\x01\xbb", 2);
    etb_u32(&b, 1);
    etb_u32(&b, 2);
    etb_u32(&b, 3);
    etb_u32(&b, 0x45);
    etb_u64(&b, 0);
    double nan = 0.0 / 0.0;
    etb_f64(&b, nan);
    etb_u8(&b, 7);
    etb_u16(&b, 0x263a); /* U+263A as a UTF-16 char */
    etb_counted_utf16(&b, "cnt");

#define KIND(msg, expected) \
    ETW_CHECK_STR(msg_json((msg), p, 27, 27, b.data, (uint32_t)b.len), "\"" expected "\"")
    KIND("%1", "4000000000");
    KIND("%2", "-5");
    KIND("%3", "-9223372036854775808");
    KIND("%4", "0xbeef");
    KIND("%5", "0x1b0f1000028");
    KIND("%6", "0xfffffa8003e92010");
    KIND("[%7]", "[say \\\"hi\\\"\\\\\\n\\tend]");
    KIND("%8", "caf\xc3\xa9");
    KIND("%9", "dd5ef90a-6398-47a4-ad34-4dcecdef795f");
    KIND("%10", "2011-01-23T22:07:27.2257591Z");
    KIND("%11", "2011-01-23T22:07:27.2250000Z");
    KIND("%12", "true");
    KIND("%13", "0.1");
    KIND("%14", "3.14");
    KIND("%15", "S-1-5-18");
    KIND("%16", "abcdef");
    KIND("%17", "192.168.1.2");
    KIND("%18", "443");
    KIND("%19 %20 %21", "One Two \\\"2\\\" 3");
    KIND("%22", "A|C|0x40");
    KIND("%23", "null");
    KIND("%24", "NaN");
    KIND("%25", "true");
    KIND("%26", "\xe2\x98\xba");
    KIND("%27", "cnt");
    /* everything at once, out of order, repeated, with text between */
    KIND("%27/%1/%2/%1/%9%n%22", "cnt/4000000000/-5/4000000000/dd5ef90a-6398-47a4-ad34-4dcecdef795f\\nA|C|0x40");
    /* inserts beyond the properties stay as written */
    KIND("%28 %99 %1", "%28 %99 4000000000");
#undef KIND
    etb_free(&b);
}

/* ---- structs, arrays, missing and undecodable inserts ---- */

static void test_structs_arrays(void) {
    /* a, s{ b, t{ c } }, arr[2] u8, sa[2]{ x }, a */
    static const etw_property props[] = {
        {.name = "a", .in_type = ETW_INTYPE_UINT8},
        {.name = "s", .flags = ETW_PROP_STRUCT, .struct_first = 5, .struct_count = 2},
        {.name = "arr", .in_type = ETW_INTYPE_UINT8, .flags = ETW_PROP_COUNT_FIXED, .count = 2},
        {.name = "sa", .flags = ETW_PROP_STRUCT | ETW_PROP_COUNT_IN_DATA, .struct_first = 8, .struct_count = 1},
        {.name = "a", .in_type = ETW_INTYPE_UINT8},
        {.name = "b", .in_type = ETW_INTYPE_UINT8},
        {.name = "t", .flags = ETW_PROP_STRUCT, .struct_first = 7, .struct_count = 1},
        {.name = "c", .in_type = ETW_INTYPE_UINT8},
        {.name = "x", .in_type = ETW_INTYPE_UNICODESTRING},
    };
    static const uint8_t payload[] = {1, 2, 3, 4, 5, 2, 0, 'p', 0, 0, 0, 'q', 0, 0, 0, 9};
    ETW_CHECK_STR(msg_json("a=%1 s=%2 arr=%3 sa=%4 a=%5", props, 9, 5, payload, sizeof payload),
                  "\"a=1 s={\\\"b\\\":2,\\\"t\\\":{\\\"c\\\":3}} arr=[4,5] "
                  "sa=[{\\\"x\\\":\\\"p\\\"},{\\\"x\\\":\\\"q\\\"}] a=9\"");
    /* unused containers before a used value are skipped correctly */
    ETW_CHECK_STR(msg_json("last=%5", props, 9, 5, payload, sizeof payload), "\"last=9\"");
    ETW_CHECK_STR(msg_json("%3%3", props, 9, 5, payload, sizeof payload), "\"[4,5][4,5]\"");
    /* empty containers; a payload cut inside the array of structs */
    static const uint8_t p0[] = {1, 2, 3, 0, 0, 9};
    static const etw_property props0[] = {
        {.name = "a", .in_type = ETW_INTYPE_UINT8},
        {.name = "s", .flags = ETW_PROP_STRUCT, .struct_first = 4, .struct_count = 0},
        {.name = "arr", .in_type = ETW_INTYPE_UINT8, .flags = ETW_PROP_COUNT_FIXED, .count = 0},
        {.name = "sa", .flags = ETW_PROP_STRUCT | ETW_PROP_COUNT_IN_DATA, .struct_first = 4, .struct_count = 1},
        {.name = "x", .in_type = ETW_INTYPE_UINT8},
    };
    ETW_CHECK_STR(msg_json("%1|%2|%3|%4", props0, 5, 4, p0 + 2, 3), "\"3|{}|[]|[]\"");
    /* sa's count is cut: an UNSUPPORTED top-level value stays "%4" */
    ETW_CHECK_STR(msg_json("%1|%2|%3|%4", props0, 5, 4, p0, 2), "\"1|{}|[]|%4\"");
    /* an element that cannot be decoded is shown as its JSON placeholder */
    ETW_CHECK_STR(msg_json("%4", props0, 5, 4, p0, 3),
                  "\"[{\\\"x\\\":{\\\"unsupported\\\":\\\"UINT8\\\",\\\"raw\\\":\\\"\\\"}}]\"");
    /* an array of strings with a count reference, and of mapped values */
    static const etw_map_entry ve[] = {{1, "One"}};
    static const etw_map vmap = {"V", ETW_MAP_VALUEMAP, 1, ve};
    static const etw_property pc[] = {
        {.name = "n", .in_type = ETW_INTYPE_UINT16},
        {.name = "names", .in_type = ETW_INTYPE_UNICODESTRING, .flags = ETW_PROP_COUNT_REF, .count = 0},
        {.name = "m", .in_type = ETW_INTYPE_UINT8, .flags = ETW_PROP_COUNT_FIXED, .count = 3, .map = &vmap},
    };
    ETW_CHECK_STR(msg_json("%1 names: %2, maps: %3", pc, 3, 3,
                           "\x02\x00" "a\0\0\0" "b\0c\0\0\0" "\x01\x02\x01", 15),
                  "\"2 names: [\\\"a\\\",\\\"bc\\\"], maps: [\\\"One\\\",2,\\\"One\\\"]\"");
}

static void test_missing(void) {
    /* an unknown in-type takes the rest of the payload: it and everything
     * after it are left as written */
    static const etw_property p[] = {
        {.name = "a", .in_type = ETW_INTYPE_UINT8},
        {.name = "weird", .in_type = 99},
        {.name = "never", .in_type = ETW_INTYPE_UINT8},
    };
    ETW_CHECK_STR(msg_json("a=%1 w=%2 n=%3 z=%4", p, 3, 3, "\x05\x01\x02\x03", 4), "\"a=5 w=%2 n=%3 z=%4\"");
    /* a value cut by the end of the payload */
    static const etw_property q[] = {
        {.name = "a", .in_type = ETW_INTYPE_UINT8},
        {.name = "b", .in_type = ETW_INTYPE_UINT32},
        {.name = "c", .in_type = ETW_INTYPE_UINT8},
    };
    ETW_CHECK_STR(msg_json("%1,%2,%3", q, 3, 3, "\x05\x01\x02", 3), "\"5,%2,%3\"");
    ETW_CHECK_STR(msg_json("%1,%2!x!,%3", q, 3, 3, "\x05", 1), "\"5,%2!x!,%3\"");
    /* empty payload, no properties */
    ETW_CHECK_STR(msg_json("%1", q, 3, 3, "", 0), "\"%1\"");
    ETW_CHECK_STR(msg_json("%1", NULL, 0, 0, "", 0), "\"%1\"");
}

/* ---- insert numbers: two digits at most ---- */

static void test_numbers(void) {
    static etw_property p[20];
    static char names[20][4];
    uint8_t payload[20];
    for (int i = 0; i < 20; i++) {
        snprintf(names[i], sizeof names[i], "p%d", i + 1);
        p[i].name = names[i];
        p[i].in_type = ETW_INTYPE_UINT8;
        payload[i] = (uint8_t)(100 + i + 1); /* property N has the value 100 + N */
    }
#define NUM(msg, expected) ETW_CHECK_STR(msg_json((msg), p, 20, 20, payload, 20), "\"" expected "\"")
    NUM("%1 %9 %10 %19 %20", "101 109 110 119 120");
    NUM("%01", "");                 /* %0 ends it */
    NUM("%100", "1100");            /* insert 10, then "0" */
    NUM("%123456789", "1123456789"); /* insert 12, then "3456789" */
    NUM("%21%99", "%21%99");        /* beyond the properties */
    NUM("%999999999999999999999", "%99" "9999999999999999999");
    NUM("%1%2%3", "101102103");
    NUM("%%1 %%%1", "%1 %101");
    NUM("%1%", "101%");
    NUM("%1%0%2", "101");
    /* 99 inserts in one message */
    char big[400];
    char want[1200];
    size_t o = 0, w = 0;
    want[w++] = '"';
    for (int i = 1; i <= 99; i++) {
        o += (size_t)snprintf(big + o, sizeof big - o, "%%%d", i);
        if (i <= 20)
            w += (size_t)snprintf(want + w, sizeof want - w, "%d", 100 + i);
        else
            w += (size_t)snprintf(want + w, sizeof want - w, "%%%d", i);
    }
    want[w++] = '"';
    want[w] = 0;
    ETW_CHECK_STR(msg_json(big, p, 20, 20, payload, 20), want);
#undef NUM
}

/* ---- printf-style formats ---- */

static void test_formats(void) {
    static const etw_map_entry ve[] = {{200, "OK"}};
    static const etw_map vmap = {"V", ETW_MAP_VALUEMAP, 1, ve};
    static const etw_property p[] = {
        /* 1 */ {.name = "u32", .in_type = ETW_INTYPE_UINT32},
        /* 2 */ {.name = "s", .in_type = ETW_INTYPE_UNICODESTRING},
        /* 3 */ {.name = "i8", .in_type = ETW_INTYPE_INT8},
        /* 4 */ {.name = "i32", .in_type = ETW_INTYPE_INT32},
        /* 5 */ {.name = "mapped", .in_type = ETW_INTYPE_UINT32, .map = &vmap},
        /* 6 */ {.name = "u64", .in_type = ETW_INTYPE_UINT64},
        /* 7 */ {.name = "zero", .in_type = ETW_INTYPE_UINT32},
        /* 8 */ {.name = "d", .in_type = ETW_INTYPE_DOUBLE},
        /* 9 */ {.name = "ptr", .in_type = ETW_INTYPE_POINTER},
        /* 10 */ {.name = "utf", .in_type = ETW_INTYPE_UNICODESTRING},
        /* 11 */ {.name = "b", .in_type = ETW_INTYPE_BOOLEAN},
    };
    etb_buf b;
    etb_init(&b);
    etb_u32(&b, 48879);
    etb_utf16(&b, "hello");
    etb_i8(&b, -5);
    etb_i32(&b, -1);
    etb_u32(&b, 200);
    etb_u64(&b, 0xffffffffffffffffull);
    etb_u32(&b, 0);
    etb_f64(&b, 2.5);
    etb_u64(&b, 0x7ffb485e1c08ull);
    etb_bytes(&b, "\xe9\x00\x74\x00\xe9\x00\x00\x00", 8); /* "été" */
    etb_u32(&b, 1);
#define FMT(msg, expected) \
    ETW_CHECK_STR(msg_json((msg), p, 11, 11, b.data, (uint32_t)b.len), "\"" expected "\"")
    /* integers */
    FMT("%1!d!", "48879");
    FMT("%1!u!", "48879");
    FMT("%1!x!", "beef");
    FMT("%1!X!", "BEEF");
    FMT("%1!#x! %1!#X!", "0xbeef 0XBEEF");
    FMT("%1!o! %1!#o!", "137357 0137357");
    FMT("%1!08x!|%1!8x!|%1!-8x!|", "0000beef|    beef|beef    |");
    FMT("%1!.6d!|%1!8.6d!|%1!08.6d!", "048879|  048879|  048879");
    FMT("%1!+d! %1! d!", "+48879  48879");
    FMT("%1!lu! %1!ld! %1!llx! %1!I64x! %1!I32u! %1!hu! %1!zu! %1!lX!", "48879 48879 beef beef 48879 48879 48879 BEEF");
    FMT("%3!d! %3!i! %3!u! %3!x! %3!05d! %3!+d!", "-5 -5 251 fb -0005 -5");
    FMT("%4!d! %4!u! %4!x! %4!X!", "-1 4294967295 ffffffff FFFFFFFF");
    FMT("%6!d! %6!u! %6!x!", "-1 18446744073709551615 ffffffffffffffff");
    FMT("%7!d! %7!.0d!| %7!#x! %7!#o! %7!x!", "0 | 0 0 0");
    FMT("%9!x! %9!#x!", "7ffb485e1c08 0x7ffb485e1c08");
    FMT("%11!d!", "1");
    /* a value map: the integer format prints the number, no format the name */
    FMT("%5 %5!d! %5!x! %5!s!", "OK 200 c8 OK");
    /* strings */
    FMT("%2!s! %2!S! %2!ls! %2!ws! %2!hs!", "hello hello hello hello hello");
    FMT("[%2!8s!] [%2!-8s!] [%2!.3s!] [%2!6.2s!]", "[   hello] [hello   ] [hel] [    he]");
    FMT("[%10!.2s!] [%10!5s!]", "[\xc3\xa9t] [  \xc3\xa9t\xc3\xa9]");
    FMT("[%1!6s!]", "[ 48879]");
    /* not honoured: the normal form */
    FMT("%8!f! %8!.2f! %8!g! %8!d!", "2.5 2.5 2.5 2.5");
    FMT("%2!d! %2!x!", "hello hello");
    FMT("%1!c! %1!p! %1!n! %1!*d! %1!.*d! %1!!", "48879 48879 48879 48879 48879 48879");
    FMT("%1!5000d! %1!.2000d!", "48879 48879");
    /* "!d %1!" is taken as the format "d %1" (not honoured); "q!" is text */
    FMT("%1!d %1!q!", "48879q!");
    FMT("%1!d", "48879!d");
    /* a '!' with no closing '!' within 32 bytes is literal text */
    FMT("%1!0123456789012345678901234567890123456789!", "48879!0123456789012345678901234567890123456789!");
    FMT("%1!", "48879!");
    FMT("%1!x!%2!s!%1", "beefhello48879");
    FMT("%%1!x!", "%1!x!");
#undef FMT
    etb_free(&b);
}

/* ---- etw_value_text ---- */

static const char *vtext(uint16_t in, uint16_t out, const etw_map *map, const void *data, uint32_t size) {
    static etw_property prop;
    etw_value v;
    memset(&prop, 0, sizeof prop);
    memset(&v, 0, sizeof v);
    prop.name = "v";
    prop.in_type = in;
    prop.out_type = out;
    prop.map = map;
    v.kind = ETW_VALUE_SCALAR;
    v.prop = &prop;
    v.name = "v";
    v.in_type = in;
    v.out_type = out;
    v.data = (const uint8_t *)data;
    v.size = size;
    v.pointer_size = 8;
    etw_text_clear(&T);
    etw_text_puts(&T, "<");
    if (etw_value_text(&T, &v) != ETW_OK) return "<fail>";
    etw_text_putc(&T, '>');
    return etw_text_cstr(&T);
}

static void test_value_text(void) {
    ETW_CHECK_STR(vtext(ETW_INTYPE_UINT32, 0, NULL, "\x2a\0\0\0", 4), "<42>");
    ETW_CHECK_STR(vtext(ETW_INTYPE_INT16, 0, NULL, "\xfe\xff", 2), "<-2>");
    ETW_CHECK_STR(vtext(ETW_INTYPE_UINT32, ETW_OUTTYPE_HEXINT32, NULL, "\x2a\0\0\0", 4), "<0x2a>");
    ETW_CHECK_STR(vtext(ETW_INTYPE_UNICODESTRING, 0, NULL, "a\0\"\0\\\0\n\0\x01\0b\0", 12), "<a\"\\\n\x01" "b>");
    ETW_CHECK_STR(vtext(ETW_INTYPE_UNICODESTRING, 0, NULL, "\x3d\xd8\x00\xde", 4), "<\xf0\x9f\x98\x80>");
    ETW_CHECK_STR(vtext(ETW_INTYPE_UNICODESTRING, 0, NULL, "\x00\xd8z\0", 4), "<\xef\xbf\xbdz>");
    ETW_CHECK_STR(vtext(ETW_INTYPE_UNICODESTRING, 0, NULL, "\x85\x00\x7f\x00", 4), "<\xc2\x85\x7f>");
    ETW_CHECK_STR(vtext(ETW_INTYPE_UNICODESTRING, 0, NULL, "", 0), "<>");
    ETW_CHECK_STR(vtext(ETW_INTYPE_ANSISTRING, 0, NULL, "x\xffy", 3), "<x\xc3\xbfy>");
    ETW_CHECK_STR(vtext(ETW_INTYPE_ANSISTRING, ETW_OUTTYPE_UTF8, NULL, "x\xffy", 3), "<x\xef\xbf\xbdy>");
    ETW_CHECK_STR(vtext(ETW_INTYPE_BOOLEAN, 0, NULL, "\0\0\0\0", 4), "<false>");
    ETW_CHECK_STR(vtext(ETW_INTYPE_FILETIME, 0, NULL, "\0\0\0\0\0\0\0\0", 8), "<null>");
    ETW_CHECK_STR(vtext(ETW_INTYPE_FLOAT, 0, NULL, "\0\0", 2), "<null>");
    static const etw_map_entry qe[] = {{1, "Quo\"te\\"}};
    static const etw_map qmap = {"Q", ETW_MAP_BITMAP, 1, qe};
    ETW_CHECK_STR(vtext(ETW_INTYPE_UINT16, 0, &qmap, "\x03\0", 2), "<Quo\"te\\|0x2>");
    /* a NUL inside a counted string survives as a byte */
    etw_value v;
    etw_property prop;
    memset(&v, 0, sizeof v);
    memset(&prop, 0, sizeof prop);
    prop.name = "v";
    prop.in_type = ETW_INTYPE_UNICODESTRING;
    v.kind = ETW_VALUE_SCALAR;
    v.prop = &prop;
    v.in_type = ETW_INTYPE_UNICODESTRING;
    v.data = (const uint8_t *)"a\0\0\0b\0";
    v.size = 6;
    etw_text_clear(&T);
    ETW_CHECK_INT(etw_value_text(&T, &v), ETW_OK);
    ETW_CHECK_INT((long long)T.len, 3);
    ETW_CHECK(T.len == 3 && memcmp(T.data, "a\0b", 3) == 0);
    /* not a scalar */
    etw_text_clear(&T);
    v.kind = ETW_VALUE_UNSUPPORTED;
    ETW_CHECK_INT(etw_value_text(&T, &v), ETW_E_UNSUPPORTED);
    v.kind = ETW_VALUE_STRUCT_BEGIN;
    ETW_CHECK_INT(etw_value_text(&T, &v), ETW_E_UNSUPPORTED);
    ETW_CHECK_INT((long long)T.len, 0);
    ETW_CHECK_INT(etw_value_text(NULL, &v), ETW_E_INVALID_ARG);
    ETW_CHECK_INT(etw_value_text(&T, NULL), ETW_E_INVALID_ARG);
}

/* ------------------------------------------------------------------------ */
/* real traces                                                              */

typedef struct want_msg {
    uint16_t id;
    uint8_t version;
    const char *json; /* expected etw_message_json output */
    int seen;
} want_msg;

/* Reads path with manifest man; for each want, the message of the first
 * manifest-decoded event with that id and version (in time order). */
static void check_trace(const char *path, const char *man, want_msg *w, size_t nw) {
    etw_reader *r = NULL;
    etw_decoder *d = NULL;
    etw_event ev;
    uint64_t *drefs;
    size_t drefs_len;
    size_t done = 0;

    ETW_CHECK_INT(etw_reader_open_file(&r, path, NULL), ETW_OK);
    ETW_CHECK_INT(etw_decoder_new(&d, NULL), ETW_OK);
    if (!r || !d) goto out;
    ETW_CHECK_INT(etw_decoder_add_manifest(d, man, NULL), ETW_OK);
    while (done < nw && etw_reader_next(r, &ev) == ETW_OK) {
        const etw_schema *s = NULL;
        if (etw_decoder_resolve(d, &ev, &s, NULL) != ETW_OK || !s) continue;
        if (s->source != ETW_SOURCE_MANIFEST) continue;
        for (size_t i = 0; i < nw; i++) {
            if (w[i].seen || w[i].id != s->event_id || w[i].version != s->version) continue;
            w[i].seen = 1;
            done++;
            etw_decoder_scratch(d, &drefs, &drefs_len);
            etw_text_clear(&T);
            ETW_CHECK_INT(etw_message_json(&T, &S, s, &ev, drefs, drefs_len), ETW_OK);
            ETW_CHECK_STR(etw_text_cstr(&T), w[i].json);
            break;
        }
    }
    for (size_t i = 0; i < nw; i++) {
        if (!w[i].seen) fprintf(stderr, "%s: no event %u v%u\n", path, w[i].id, w[i].version);
        ETW_CHECK(w[i].seen);
    }
out:
    etw_decoder_free(d);
    etw_reader_close(r);
}

/* Issue 9.2: a template of "%1" repeated with a long string insert. Without
 * a cap this message is 150,000 x 4,000 bytes = 600 MB (the audit's 1.1 MB
 * trace asked for ~15 GB and aborted the decode on out-of-memory). The
 * message is cut at ETW_MESSAGE_MAX bytes, the status says so, and the text
 * is the insert repeated, cut at a character boundary. */
static void test_message_cap(void) {
    static const etw_property p[] = {{.name = "s", .in_type = ETW_INTYPE_ANSISTRING}};
    enum { REPEAT = 150000, INSERT = 4000 };
    char *msg = malloc(2 * REPEAT + 1);
    uint8_t *payload = malloc(INSERT + 1);
    for (int i = 0; i < REPEAT; i++) memcpy(msg + 2 * i, "%1", 2);
    msg[2 * REPEAT] = 0;
    /* "é" (2 bytes in UTF-8) then ASCII: the cut lands inside a character
     * when 65536 is odd within the insert text */
    for (int i = 0; i < INSERT; i++) payload[i] = (uint8_t)('a' + i % 26);
    payload[INSERT - 1] = 0xE9; /* Latin-1 e-acute: 2 bytes of UTF-8 */
    payload[INSERT] = 0;
    etw_schema s = make_schema(msg, p, 1, 1);
    etw_event ev = make_event(payload, INSERT + 1, 8);
    etw_text_clear(&T);
    ETW_CHECK_INT(etw_message_json(&T, &S, &s, &ev, refs, 256), ETW_E_LIMIT);
    /* one insert is 4000 bytes of UTF-8 + 1 (the e-acute takes 2) */
    size_t one = INSERT + 1;
    ETW_CHECK((size_t)T.len <= ETW_MESSAGE_MAX + 2);
    ETW_CHECK(T.len > 2 && T.data[0] == '"' && T.data[T.len - 1] == '"');
    size_t body = T.len - 2;
    /* 65536 = 16 * 4001 + 1520: the cut is inside the 17th copy, in ASCII */
    ETW_CHECK_INT((long long)body, ETW_MESSAGE_MAX);
    ETW_CHECK(memcmp(T.data + 1, T.data + 1 + one, one) == 0);
    ETW_CHECK(memcmp(T.data + 1 + one - 2, "\xc3\xa9", 2) == 0);
    /* a cut that would split the 2-byte character backs up before it:
     * inserts of 65535 bytes + e-acute -> the character straddles 65536 */
    uint8_t *big = malloc(65536);
    memset(big, 'x', 65534);
    big[65534] = 0xE9;
    big[65535] = 0;
    etw_schema s2 = make_schema("%1%1", p, 1, 1);
    etw_event ev2 = make_event(big, 65536, 8);
    etw_text_clear(&T);
    ETW_CHECK_INT(etw_message_json(&T, &S, &s2, &ev2, refs, 256), ETW_E_LIMIT);
    /* 65534 x + e-acute (2) = 65536: fits exactly, then the second copy starts */
    ETW_CHECK_INT((long long)T.len - 2, 65536);
    /* "y%1" with the insert at 65535 bytes: 1 + 65536 -> cut before the
     * e-acute's second byte would split it: backs up to 65535 */
    etw_schema s3 = make_schema("y%1", p, 1, 1);
    etw_text_clear(&T);
    ETW_CHECK_INT(etw_message_json(&T, &S, &s3, &ev2, refs, 256), ETW_E_LIMIT);
    ETW_CHECK_INT((long long)T.len - 2, 65535);
    ETW_CHECK(T.data[T.len - 2] == 'x');
    /* a message just at the limit is not cut */
    char *exact = malloc(ETW_MESSAGE_MAX + 1);
    memset(exact, 'm', ETW_MESSAGE_MAX);
    exact[ETW_MESSAGE_MAX] = 0;
    etw_schema s4 = make_schema(exact, p, 1, 1);
    etw_text_clear(&T);
    ETW_CHECK_INT(etw_message_json(&T, &S, &s4, &ev, refs, 256), ETW_OK);
    ETW_CHECK_INT((long long)T.len - 2, ETW_MESSAGE_MAX);
    /* one byte more of template: only the first ETW_MESSAGE_MAX are read */
    char *over = malloc(ETW_MESSAGE_MAX + 2);
    memset(over, 'm', ETW_MESSAGE_MAX + 1);
    over[ETW_MESSAGE_MAX + 1] = 0;
    etw_schema s5 = make_schema(over, p, 1, 1);
    etw_text_clear(&T);
    ETW_CHECK_INT(etw_message_json(&T, &S, &s5, &ev, refs, 256), ETW_E_LIMIT);
    ETW_CHECK_INT((long long)T.len - 2, ETW_MESSAGE_MAX);
    free(over);
    free(exact);
    free(big);
    free(msg);
    free(payload);
}

static void test_http_server(void) {
    /* Microsoft-Windows-HttpService: message strings from HTTP_Server.man,
     * values as etwdump decodes them */
    want_msg w[] = {
        /* string155, tid_48: %3 = LocalAddr, %5 = RemoteAddr (SocketAddress) */
        {21, 0,
         "\"New connection created (local IP address [2001:4898:0:fff:0:5efe:a78:109d]:80 and "
         "remote address [2001:4898:0:fff:0:5efe:a50:e410]:37837).\"",
         0},
        /* string194, tid_61 */
        {1, 0,
         "\"Request received (request ID 0xff0000008000060d) on connection (connection ID "
         "0xff0000006000060c) from remote address [2001:4898:0:fff:0:5efe:a50:e410]:37838.\"",
         0},
        /* string192, tid_60: pointer, u32, UnicodeString */
        {2, 0,
         "\"Parsed request (request pointer 0xfffffa80037c4530, method 4) with URI "
         "http://georgis2:80/windir.txt.\"",
         0},
        /* string190, tid_59 */
        {3, 0,
         "\"Delivered request to server application (request pointer 0xfffffa80037c4530, request ID "
         "0xff0000008000060d, site ID 1) from request queue DefaultAppPool for URI "
         "http://georgis2:80/windir.txt with status 0.\"",
         0},
        /* string182, tid_57: inserts out of order */
        {4, 0,
         "\"Server application passed response (request ID 0xff0000008000060d, connection ID "
         "0xff0000006000060c, method GET, header length 165, number of entity chunks 1, cache "
         "policy 0) with status code 200.\"",
         0},
        /* string178 */
        {10, 0,
         "\"Response ready for send (corresponding to request ID 0xff0000008000060d) with status "
         "code 200.\"",
         0},
        /* string96, tid_28: %3 = Type, a value map (HTTP_TEMPLATE_LOGGING_LogType_ValueMap) */
        {51, 0, "\"Entry has been written to ResponseLogging log file.\"", 0},
    };
    check_trace(ETW_TEST_DATA_DIR "/HTTP_Server.etl", ETW_TEST_DATA_DIR "/HTTP_Server.man", w,
                sizeof w / sizeof w[0]);
}

static void test_gcevents(void) {
    /* Microsoft-Windows-DotNETRuntime with ClrEtwAll.man: %n line breaks */
    want_msg w[] = {
        /* GCCreateSegment_V1: hex out-types, a value map (GCSegmentTypeMap) */
        {5, 1, "\"Address=0x1b0f1000028;\\nSize=0x1ffffd8;\\nType=PinnedHeap;\\nClrInstanceID=8\"", 0},
        /* GCStart_V2 */
        {1, 2,
         "\"Count=1;\\nDepth=1;\\nReason=Induced;\\nType=NonConcurrentGC;\\nClrInstanceID=8;\\n"
         "ClientSequenceNumber=0\"",
         0},
        /* GCSuspendEE_V1 */
        {9, 1, "\"Reason=SuspendForGC;\\nCount=0;\\nClrInstanceID=8\"", 0},
        /* GCAllocationTick_V4: note "ClrInstanceID=%3;Amount64=%4" has no %n */
        {10, 4,
         "\"Amount=0x1aa40;\\nKind=Small;\\nClrInstanceID=8;Amount64=0x1aa40;\\nTypeID=0x7ffb485e1c08;\\n"
         "TypeName=System.String;\\nHeapIndex=0;\\nAddress=0x1b0f3818b30;\\nObjectSize=0x20\"",
         0},
        /* PinObjectAtGCTime: "%4;%n;%n" */
        {33, 0,
         "\"HandleID=0x1b0f0a815f8;\\nObjectID=0x1b0f3800208;\\nObjectSize=24;\\nTypeName=System.Object;"
         "\\n;\\nClrInstanceID=8\"",
         0},
        /* RuntimeInformation: inserts 10..15, a bitmap with an unnamed bit, an empty
         * string, a GUID, a path with backslashes */
        {187, 0,
         "\"ClrInstanceID=8;\\nSKU=CoreClr;\\nBclMajorVersion=8;\\nBclMinorVersion=0;\\n"
         "BclBuildNumber=0;\\nBclQfeNumber=0;\\nVMMajorVersion=42;\\nVMMinorVersion=42;\\n"
         "VMBuildNumber=42;\\nVMQfeNumber=42424;\\n"
         "StartupFlags=CONCURRENT_GC|LOADER_OPTIMIZATION_SINGLE_DOMAIN|0x800000;\\nStartupMode=0;\\n"
         "CommandLine=;\\nComObjectGUID=00000000-0000-0000-0000-000000000000;\\n"
         "RuntimeDllPath=C:\\\\Dev\\\\runtime\\\\artifacts\\\\bin\\\\CoreLab\\\\Release\\\\net7.0\\\\"
         "win-x64\\\\publish\\\\coreclr.dll\"",
         0},
        /* GCFitBucketInfo: the struct array Values (%5) is not in the message */
        {209, 0, "\"ClrInstanceID=8;\\nBucketKind=Plug;\\nTotalSize=310848;\\nCount=9\"", 0},
    };
    check_trace(ETW_TEST_DATA_DIR "/gcevents.etl", ETW_TEST_DATA_DIR "/ClrEtwAll.man", w,
                sizeof w / sizeof w[0]);
}

int main(void) {
    etw_text_init(&T, NULL);
    etw_text_init(&S, NULL);
    ETW_RUN(test_escapes);
    ETW_RUN(test_api);
    ETW_RUN(test_nomem);
    ETW_RUN(test_value_kinds);
    ETW_RUN(test_structs_arrays);
    ETW_RUN(test_missing);
    ETW_RUN(test_numbers);
    ETW_RUN(test_formats);
    ETW_RUN(test_value_text);
    ETW_RUN(test_message_cap);
    ETW_RUN(test_http_server);
    ETW_RUN(test_gcevents);
    etw_text_free(&T);
    etw_text_free(&S);
    return ETW_TEST_DONE();
}
