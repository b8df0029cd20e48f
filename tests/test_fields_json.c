/* test_fields_json.c - the "fields" object: every value form of
 * docs/json-output.md, structs, arrays, maps, placeholders, truncation. */
#include <stdlib.h>

#include "etw_test.h"
#include "etwdecode/etw_decode.h"
#include "format/etw_fields_json.h"
#include "format/etw_json_spans.h"
#include "format/etw_text.h"

static etw_text T;
static uint64_t refs[256];

static etw_schema make_schema(const etw_property *props, uint16_t n, uint16_t top) {
    etw_schema s;
    memset(&s, 0, sizeof s);
    s.pointer_size = 8;
    s.props = props;
    s.prop_count = n;
    s.top_count = top;
    s.event_name = "Test";
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

static const char *render(const etw_property *props, uint16_t n, uint16_t top,
                          const void *data, uint32_t len, uint8_t ptr) {
    etw_schema s = make_schema(props, n, top);
    etw_event ev = make_event(data, len, ptr);
    etw_text_clear(&T);
    ETW_CHECK_INT(etw_fields_json(&T, &s, &ev, refs, 256), ETW_OK);
    return etw_text_cstr(&T);
}

/* One property "v" of the given types over the given bytes. */
static const char *one(uint16_t in, uint16_t out, uint32_t flags, uint16_t length,
                       const etw_map *map, const void *data, uint32_t len, uint8_t ptr) {
    static etw_property p[1];
    memset(p, 0, sizeof p);
    p[0].name = "v";
    p[0].in_type = in;
    p[0].out_type = out;
    p[0].flags = flags;
    p[0].length = length;
    p[0].map = map;
    return render(p, 1, 1, data, len, ptr);
}

#define ONE(in, out, bytes, expected) \
    ETW_CHECK_STR(one((in), (out), 0, 0, NULL, (bytes), sizeof(bytes) - 1, 8), "{\"v\":" expected "}")
#define ONE_LEN(in, out, bytes, n, expected) \
    ETW_CHECK_STR(one((in), (out), 0, 0, NULL, (bytes), (n), 8), "{\"v\":" expected "}")
#define ONE_FIXED(in, out, len, bytes, expected)                                             \
    ETW_CHECK_STR(one((in), (out), ETW_PROP_LENGTH_FIXED, (len), NULL, (bytes), sizeof(bytes) - 1, 8), \
                  "{\"v\":" expected "}")
#define ONE_MAP(in, out, map, bytes, expected) \
    ETW_CHECK_STR(one((in), (out), 0, 0, (map), (bytes), sizeof(bytes) - 1, 8), "{\"v\":" expected "}")
#define IPV6(bytes, expected) ONE(ETW_INTYPE_BINARY, ETW_OUTTYPE_IPV6, bytes, "\"" expected "\"")

/* ---- a JSON validator (iterative) for the well-formedness checks ---- */

static int json_valid(const char *s) {
    char stack[256];
    int top = 0, expect_value = 1, after_key = 0;
    (void)after_key;
    while (*s) {
        char c = *s;
        if (c == ' ') {
            s++;
            continue;
        }
        if (expect_value) {
            if (c == '{' || c == '[') {
                if (top >= 255) return 0;
                stack[top++] = c;
                s++;
                if (*s == (c == '{' ? '}' : ']')) {
                    top--;
                    s++;
                    expect_value = 0;
                    continue;
                }
                if (c == '{') {
                    if (*s != '"') return 0;
                    /* key */
                    s++;
                    while (*s && *s != '"') s += (*s == '\\') ? 2 : 1;
                    if (*s != '"' || s[1] != ':') return 0;
                    s += 2;
                }
                continue;
            }
            if (c == '"') {
                s++;
                while (*s && *s != '"') {
                    if ((unsigned char)*s < 0x20) return 0;
                    s += (*s == '\\') ? 2 : 1;
                }
                if (*s != '"') return 0;
                s++;
            } else if (strncmp(s, "true", 4) == 0) {
                s += 4;
            } else if (strncmp(s, "false", 5) == 0) {
                s += 5;
            } else if (strncmp(s, "null", 4) == 0) {
                s += 4;
            } else if (c == '-' || (c >= '0' && c <= '9')) {
                char *end;
                strtod(s, &end);
                if (end == s) return 0;
                s = end;
            } else {
                return 0;
            }
            expect_value = 0;
            continue;
        }
        /* after a value: , or a closer */
        if (top == 0) return 0;
        if (c == ',') {
            s++;
            if (stack[top - 1] == '{') {
                if (*s != '"') return 0;
                s++;
                while (*s && *s != '"') s += (*s == '\\') ? 2 : 1;
                if (*s != '"' || s[1] != ':') return 0;
                s += 2;
            }
            expect_value = 1;
            continue;
        }
        if ((c == '}' && stack[top - 1] == '{') || (c == ']' && stack[top - 1] == '[')) {
            top--;
            s++;
            continue;
        }
        return 0;
    }
    return top == 0 && !expect_value;
}

/* ---- tests ---- */

static void test_primitive_types(void) {
    static const etw_property props[] = {
        {.name = "string_type", .in_type = ETW_INTYPE_ANSISTRING},
        {.name = "boolean_type", .in_type = ETW_INTYPE_UINT8, .out_type = ETW_OUTTYPE_BOOLEAN},
        {.name = "char_type", .in_type = ETW_INTYPE_INT8},
        {.name = "int16_type", .in_type = ETW_INTYPE_INT16},
        {.name = "int32_type", .in_type = ETW_INTYPE_INT32},
        {.name = "uint16_type", .in_type = ETW_INTYPE_UINT16},
        {.name = "uint32_type", .in_type = ETW_INTYPE_UINT32},
        {.name = "int64_type", .in_type = ETW_INTYPE_INT64},
        {.name = "uint64_type", .in_type = ETW_INTYPE_UINT64},
        {.name = "guid_type", .in_type = ETW_INTYPE_GUID},
        {.name = "file_time_type", .in_type = ETW_INTYPE_FILETIME},
        {.name = "system_time_type", .in_type = ETW_INTYPE_SYSTEMTIME},
    };
    static const uint8_t payload[] = {
        'M', 'e', 'r', 'c', 'u', 'r', 'y', 0,
        0,
        77,
        0xcd, 0xff,
        0x9a, 0xff, 0xff, 0xff,
        51, 0,
        102, 0, 0, 0,
        0x34, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
        204, 0, 0, 0, 0, 0, 0, 0,
        0xc4, 0x14, 0xd6, 0x0a, 0xf4, 0x0e, 0x25, 0x42, 0x8f, 0x2c, 0x01, 0x23, 0x45, 0x67, 0x89, 0xab,
        0x19, 0x29, 0xc3, 0xdc, 0x9e, 0xa5, 0xd7, 0x01,
        0xe5, 0x07, 9, 0, 4, 0, 9, 0, 14, 0, 59, 0, 35, 0, 30, 0,
    };
    ETW_CHECK_INT(sizeof payload, 78);
    ETW_CHECK_STR(render(props, 12, 12, payload, sizeof payload, 8),
                  "{\"string_type\":\"Mercury\",\"boolean_type\":false,\"char_type\":77,"
                  "\"int16_type\":-51,\"int32_type\":-102,\"uint16_type\":51,\"uint32_type\":102,"
                  "\"int64_type\":-204,\"uint64_type\":204,"
                  "\"guid_type\":\"0ad614c4-0ef4-4225-8f2c-0123456789ab\","
                  "\"file_time_type\":\"2021-09-09T17:19:35.7912345Z\","
                  "\"system_time_type\":\"2021-09-09T14:59:35.0300000Z\"}");
}

static void test_integers(void) {
    ONE(ETW_INTYPE_INT8, 0, "\x80", "-128");
    ONE(ETW_INTYPE_UINT8, 0, "\x80", "128");
    ONE(ETW_INTYPE_INT16, 0, "\x00\x80", "-32768");
    ONE(ETW_INTYPE_UINT16, 0, "\xff\xff", "65535");
    ONE(ETW_INTYPE_INT32, 0, "\x00\x00\x00\x80", "-2147483648");
    ONE(ETW_INTYPE_UINT32, 0, "\xff\xff\xff\xff", "4294967295");
    ONE(ETW_INTYPE_INT64, 0, "\x00\x00\x00\x00\x00\x00\x00\x80", "-9223372036854775808");
    ONE(ETW_INTYPE_UINT64, 0, "\xff\xff\xff\xff\xff\xff\xff\xff", "18446744073709551615");
    ONE(ETW_INTYPE_UINT64, 0, "\x01\x00\x00\x00\x00\x00\x20\x00", "9007199254740993");
    /* signed out-types on unsigned in-types */
    ONE(ETW_INTYPE_UINT32, ETW_OUTTYPE_INT, "\xff\xff\xff\xff", "-1");
    ONE(ETW_INTYPE_UINT8, ETW_OUTTYPE_BYTE, "\xfe", "-2");
    ONE(ETW_INTYPE_UINT16, ETW_OUTTYPE_SHORT, "\xfe\xff", "-2");
    ONE(ETW_INTYPE_UINT64, ETW_OUTTYPE_LONG, "\xfe\xff\xff\xff\xff\xff\xff\xff", "-2");
    /* hex */
    ONE(ETW_INTYPE_UINT8, ETW_OUTTYPE_HEXINT8, "\xab", "\"0xab\"");
    ONE(ETW_INTYPE_UINT16, ETW_OUTTYPE_HEXINT16, "\x00\x00", "\"0x0\"");
    ONE(ETW_INTYPE_UINT32, ETW_OUTTYPE_HEXINT32, "\x10\x00\x00\x00", "\"0x10\"");
    ONE(ETW_INTYPE_INT32, ETW_OUTTYPE_HEXINT32, "\xff\xff\xff\xff", "\"0xffffffff\"");
    ONE(ETW_INTYPE_UINT64, ETW_OUTTYPE_HEXINT64, "\x28\x00\x00\xf1\xb0\x01\x00\x00", "\"0x1b0f1000028\"");
    ONE(ETW_INTYPE_HEXINT32, 0, "\xef\xbe\xad\xde", "\"0xdeadbeef\"");
    ONE(ETW_INTYPE_HEXINT64, 0, "\x28\x00\x00\xf1\xb0\x01\x00\x00", "\"0x1b0f1000028\"");
    ONE(ETW_INTYPE_UINT64, ETW_OUTTYPE_CODE_POINTER, "\x00\x10\x40\x00\x00\x00\x00\x00", "\"0x401000\"");
    ONE(ETW_INTYPE_POINTER, 0, "\x00\x00\xfe\x7f\x00\x00\x00\x00", "\"0x7ffe0000\"");
    ONE(ETW_INTYPE_SIZET, 0, "\x00\x01\x00\x00\x00\x00\x00\x00", "\"0x100\"");
    /* pointers of 32-bit writers */
    ETW_CHECK_STR(one(ETW_INTYPE_POINTER, 0, 0, 0, NULL, "\x78\x56\x34\x12", 4, 4),
                  "{\"v\":\"0x12345678\"}");
    ETW_CHECK_STR(one(ETW_INTYPE_SIZET, 0, 0, 0, NULL, "\x10\x00\x00\x00", 4, 4), "{\"v\":\"0x10\"}");
    /* ids are numbers, signed by in-type; status codes (WIN32ERROR, NTSTATUS,
     * HRESULT) hex strings of the unsigned value, as they are read
     * (docs/json-output.md): ERROR_ACCESS_VIOLATION, STATUS_ACCESS_VIOLATION,
     * E_FAIL... whatever the in-type's sign */
    ONE(ETW_INTYPE_UINT32, ETW_OUTTYPE_PID, "\xd2\x04\x00\x00", "1234");
    ONE(ETW_INTYPE_UINT32, ETW_OUTTYPE_TID, "\xd3\x04\x00\x00", "1235");
    ONE(ETW_INTYPE_UINT32, ETW_OUTTYPE_WIN32ERROR, "\x05\x00\x00\x00", "\"0x5\"");
    ONE(ETW_INTYPE_UINT32, ETW_OUTTYPE_NTSTATUS, "\x05\x00\x00\xc0", "\"0xc0000005\"");
    ONE(ETW_INTYPE_INT32, ETW_OUTTYPE_HRESULT, "\x05\x40\x00\x80", "\"0x80004005\"");
    ONE(ETW_INTYPE_UINT32, ETW_OUTTYPE_HRESULT, "\x05\x40\x00\x80", "\"0x80004005\"");
    ONE(ETW_INTYPE_UINT32, ETW_OUTTYPE_ERRORCODE, "\x02\x00\x00\x00", "2");
    /* a combination that means nothing: the in-type's default */
    ONE(ETW_INTYPE_UINT32, ETW_OUTTYPE_GUID, "\x02\x00\x00\x00", "2");
    /* port: stored big-endian */
    ONE(ETW_INTYPE_UINT16, ETW_OUTTYPE_PORT, "\x01\xbb", "443");
    /* a 64-bit integer shown as a time */
    ONE(ETW_INTYPE_UINT64, ETW_OUTTYPE_DATETIME, "\x19\x29\xc3\xdc\x9e\xa5\xd7\x01",
        "\"2021-09-09T17:19:35.7912345Z\"");
}

/* --int64-as-string: integers beyond +-2^53 as strings, the rest (and
 * every other value form) unchanged. Two properties "v" (in) and "w" (the
 * same in-type) over 16 bytes. */
static const char *big(uint16_t in, const void *data) {
    static etw_property p[2];
    memset(p, 0, sizeof p);
    p[0].name = "v";
    p[0].in_type = in;
    p[1].name = "w";
    p[1].in_type = in;
    etw_schema s = make_schema(p, 2, 2);
    etw_event ev = make_event(data, 16, 8);
    etw_text_clear(&T);
    ETW_CHECK_INT(etw_fields_json_spans(&T, &s, &ev, refs, 256, NULL, NULL, ETW_FIELDS_INT64_AS_STRING, NULL), ETW_OK);
    return etw_text_cstr(&T);
}

static void test_int64_as_string(void) {
    /* 2^53 stays a number, 2^53 + 1 becomes a string */
    ETW_CHECK_STR(big(ETW_INTYPE_UINT64, "\x00\x00\x00\x00\x00\x00\x20\x00\x01\x00\x00\x00\x00\x00\x20\x00"),
                  "{\"v\":9007199254740992,\"w\":\"9007199254740993\"}");
    ETW_CHECK_STR(big(ETW_INTYPE_UINT64, "\xff\xff\xff\xff\xff\xff\xff\xff\x05\x00\x00\x00\x00\x00\x00\x00"),
                  "{\"v\":\"18446744073709551615\",\"w\":5}");
    /* -2^53 - 1 and INT64_MIN */
    ETW_CHECK_STR(big(ETW_INTYPE_INT64, "\xff\xff\xff\xff\xff\xff\xdf\xff\x00\x00\x00\x00\x00\x00\x00\x80"),
                  "{\"v\":\"-9007199254740993\",\"w\":\"-9223372036854775808\"}");
    /* -2^53 stays a number */
    ETW_CHECK_STR(big(ETW_INTYPE_INT64, "\x00\x00\x00\x00\x00\x00\xe0\xff\x00\x00\x00\x00\x00\x00\x00\x00"),
                  "{\"v\":-9007199254740992,\"w\":0}");
    /* a double of that size stays a number */
    ETW_CHECK_STR(big(ETW_INTYPE_DOUBLE, "\x00\x00\x00\x00\x00\x00\x50\x43\x00\x00\x00\x00\x00\x00\x00\x00"),
                  "{\"v\":18014398509481984,\"w\":0}");
}

static void test_booleans_and_chars(void) {
    ONE(ETW_INTYPE_BOOLEAN, 0, "\x00\x00\x00\x00", "false");
    ONE(ETW_INTYPE_BOOLEAN, 0, "\x02\x00\x00\x00", "true");
    ONE(ETW_INTYPE_BOOLEAN, 0, "\x00\x00\x00\x01", "true");
    ONE(ETW_INTYPE_UINT8, ETW_OUTTYPE_BOOLEAN, "\x01", "true");
    ONE(ETW_INTYPE_UINT8, ETW_OUTTYPE_BOOLEAN, "\x00", "false");
    ONE(ETW_INTYPE_UINT8, ETW_OUTTYPE_BOOLEAN, "\xff", "true");
    ONE(ETW_INTYPE_INT8, ETW_OUTTYPE_STRING, "A", "\"A\"");
    ONE(ETW_INTYPE_UINT8, ETW_OUTTYPE_STRING, "\xe9", "\"\xc3\xa9\"");
    ONE(ETW_INTYPE_UINT8, ETW_OUTTYPE_STRING, "\n", "\"\\n\"");
    ONE(ETW_INTYPE_UINT8, ETW_OUTTYPE_STRING, "\"", "\"\\\"\"");
    ONE(ETW_INTYPE_UINT16, ETW_OUTTYPE_STRING, "\xac\x20", "\"\xe2\x82\xac\"");
    ONE(ETW_INTYPE_UINT16, ETW_OUTTYPE_STRING, "\x00\xd8", "\"\xef\xbf\xbd\"");
    ONE(ETW_INTYPE_ANSICHAR, 0, "z", "\"z\"");
    ONE(ETW_INTYPE_UNICODECHAR, 0, "\xa9\x03", "\"\xce\xa9\"");
    ONE(ETW_INTYPE_UNICODECHAR, ETW_OUTTYPE_UNSIGNEDSHORT, "\xa9\x03", "937");
}

static void test_floats(void) {
    ONE(ETW_INTYPE_FLOAT, 0, "\xc3\xf5\x48\x40", "3.14");
    ONE(ETW_INTYPE_FLOAT, 0, "\x00\x00\x80\xbf", "-1");
    ONE(ETW_INTYPE_DOUBLE, 0, "\x9a\x99\x99\x99\x99\x99\xb9\x3f", "0.1");
    ONE(ETW_INTYPE_DOUBLE, 0, "\x00\x00\x00\x00\x00\x00\xf8\x7f", "\"NaN\"");
    ONE(ETW_INTYPE_DOUBLE, 0, "\x00\x00\x00\x00\x00\x00\xf0\xff", "\"-Infinity\"");
    ONE(ETW_INTYPE_FLOAT, 0, "\x00\x00\x80\x7f", "\"Infinity\"");
    ONE(ETW_INTYPE_FLOAT, 0, "\x00\x00\xc0\x7f", "\"NaN\"");
    ONE(ETW_INTYPE_DOUBLE, 0, "\x00\x00\x00\x00\x00\x00\x00\x80", "-0");
    ONE(ETW_INTYPE_DOUBLE, 0, "\x00\x00\x00\x00\x00\x00\x00\x00", "0");
}

static void test_strings(void) {
    ONE(ETW_INTYPE_UNICODESTRING, 0, "h\0i\0\0\0", "\"hi\"");
    ONE(ETW_INTYPE_UNICODESTRING, 0, "a\0\"\0b\0\n\0\0\0", "\"a\\\"b\\n\"");
    ONE(ETW_INTYPE_UNICODESTRING, 0, "\x00\xd8x\0", "\"\xef\xbf\xbdx\"");
    ONE(ETW_INTYPE_UNICODESTRING, 0, "\x3d\xd8\x00\xde", "\"\xf0\x9f\x98\x80\"");
    ONE(ETW_INTYPE_UNICODESTRING, 0, "\x01\0\x7f\0", "\"\\u0001\\u007f\"");
    ONE(ETW_INTYPE_UNICODESTRING, 0, "", "\"\"");
    ONE(ETW_INTYPE_ANSISTRING, 0, "caf\xe9", "\"caf\xc3\xa9\"");
    ONE(ETW_INTYPE_ANSISTRING, 0, "caf\xc3\xa9\0", "\"caf\xc3\xa9\"");
    ONE(ETW_INTYPE_ANSISTRING, ETW_OUTTYPE_UTF8, "a\xff" "b", "\"a\xef\xbf\xbd" "b\"");
    ONE(ETW_INTYPE_ANSISTRING, ETW_OUTTYPE_XML, "<a x=\"1\"/>\0", "\"<a x=\\\"1\\\"/>\"");
    ONE(ETW_INTYPE_ANSISTRING, ETW_OUTTYPE_JSON, "{\"k\":1}\0", "\"{\\\"k\\\":1}\"");
    ONE(ETW_INTYPE_UNICODESTRING, ETW_OUTTYPE_XML, "<\0/\0>\0\0\0", "\"</>\"");
    ONE(ETW_INTYPE_MANIFEST_COUNTEDSTRING, 0, "\x04\x00o\0k\0", "\"ok\"");
    ONE(ETW_INTYPE_COUNTEDANSISTRING, 0, "\x02\x00ok", "\"ok\"");
    ONE(ETW_INTYPE_REVERSEDCOUNTEDSTRING, 0, "\x00\x04o\0k\0", "\"ok\"");
    ONE(ETW_INTYPE_NONNULLTERMINATEDANSISTRING, 0, "rest", "\"rest\"");
    ONE(ETW_INTYPE_NONNULLTERMINATEDSTRING, 0, "r\0e\0", "\"re\"");
    ONE_FIXED(ETW_INTYPE_UNICODESTRING, 0, 3, "a\0b\0\0\0", "\"ab\"");
    ONE_FIXED(ETW_INTYPE_ANSISTRING, 0, 4, "ab\0\0", "\"ab\"");
}

static void test_times(void) {
    ONE(ETW_INTYPE_FILETIME, 0, "\0\0\0\0\0\0\0\0", "null");
    ONE(ETW_INTYPE_FILETIME, 0, "\x01\0\0\0\0\0\0\0", "\"1601-01-01T00:00:00.0000001Z\"");
    ONE(ETW_INTYPE_FILETIME, 0, "\xff\xff\xff\xff\xff\xff\xff\xff", "null");
    ONE(ETW_INTYPE_FILETIME, ETW_OUTTYPE_DATETIME_UTC, "\x19\x29\xc3\xdc\x9e\xa5\xd7\x01",
        "\"2021-09-09T17:19:35.7912345Z\"");
    ONE(ETW_INTYPE_SYSTEMTIME, 0, "\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0", "null");
    ONE(ETW_INTYPE_SYSTEMTIME, 0, "\xe5\x07\x0d\0\0\0\x01\0\0\0\0\0\0\0\0\0", "null");
    ONE(ETW_INTYPE_SYSTEMTIME, 0, "\xe4\x07\x02\0\0\0\x1d\0\x17\0\x3b\0\x3b\0\xe7\x03",
        "\"2020-02-29T23:59:59.9990000Z\"");
    ONE(ETW_INTYPE_SYSTEMTIME, 0, "\xe5\x07\x02\0\0\0\x1d\0\x17\0\x3b\0\x3b\0\xe7\x03", "null");
}

static void test_sids_guids_binary(void) {
    ONE(ETW_INTYPE_SID, 0, "\x01\x01\0\0\0\0\0\x05\x12\0\0\0", "\"S-1-5-18\"");
    ONE(ETW_INTYPE_SID, 0,
        "\x01\x05\0\0\0\0\0\x05\x15\0\0\0\x01\0\0\0\x02\0\0\0\x03\0\0\0\xe9\x03\0\0",
        "\"S-1-5-21-1-2-3-1001\"");
    ONE(ETW_INTYPE_WBEMSID, 0, "\0\0\0\0", "null");
    ONE(ETW_INTYPE_WBEMSID, 0,
        "\x10\x20\x30\x40\0\0\0\0\0\0\0\0\0\0\0\0\x01\x01\0\0\0\0\0\x05\x12\0\0\0",
        "\"S-1-5-18\"");
    ETW_CHECK_STR(one(ETW_INTYPE_WBEMSID, 0, 0, 0, NULL,
                      "\x10\x20\x30\x40\0\0\0\0\x01\x01\0\0\0\0\0\x05\x13\0\0\0", 20, 4),
                  "{\"v\":\"S-1-5-19\"}");
    ONE(ETW_INTYPE_GUID, 0, "\x33\x22\x11\x00\x55\x44\x77\x66\x88\x99\xAA\xBB\xCC\xDD\xEE\xFF",
        "\"00112233-4455-6677-8899-aabbccddeeff\"");
    ONE_FIXED(ETW_INTYPE_BINARY, 0, 3, "\x0a\x0b\xff", "\"0a0bff\"");
    ONE_FIXED(ETW_INTYPE_BINARY, ETW_OUTTYPE_HEXBINARY, 2, "\xAB\xCD", "\"abcd\"");
    ONE_FIXED(ETW_INTYPE_BINARY, 0, 0, "", "\"\"");
    ONE(ETW_INTYPE_MANIFEST_COUNTEDBINARY, 0, "\x02\x00\x01\x02", "\"0102\"");
    ONE(ETW_INTYPE_HEXDUMP, 0, "\x01\x00\x00\x00\xfe", "\"fe\"");
    ETW_CHECK_STR(one(ETW_INTYPE_UINT32, 0, ETW_PROP_CUSTOM_SIZED, 0, NULL, "\x03\x00\x01\x02\x03", 5, 8),
                  "{\"v\":\"010203\"}");
    ONE(ETW_INTYPE_NULL, 0, "", "null");
}

static void test_addresses(void) {
    ONE(ETW_INTYPE_UINT32, ETW_OUTTYPE_IPV4, "\xc0\xa8\x00\x01", "\"192.168.0.1\"");
    ONE(ETW_INTYPE_UINT32, ETW_OUTTYPE_IPV4, "\xff\xff\xff\xff", "\"255.255.255.255\"");
    ONE(ETW_INTYPE_UINT32, ETW_OUTTYPE_IPV4, "\x0a\x00\x00\x00", "\"10.0.0.0\"");
    ONE_FIXED(ETW_INTYPE_BINARY, ETW_OUTTYPE_IPV4, 4, "\x7f\x00\x00\x01", "\"127.0.0.1\"");
    IPV6("\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0", "::");
    IPV6("\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\x01", "::1");
    IPV6("\0\x01\0\0\0\0\0\0\0\0\0\0\0\0\0\0", "1::");
    IPV6("\x20\x01\x0d\xb8\0\0\0\0\0\x01\0\0\0\0\0\x01", "2001:db8::1:0:0:1");
    IPV6("\x20\x01\x0d\xb8\0\0\0\x01\0\x01\0\x01\0\x01\0\x01", "2001:db8:0:1:1:1:1:1");
    IPV6("\xfe\x80\0\0\0\0\0\0\0\0\0\0\0\0\0\x01", "fe80::1");
    IPV6("\x20\x01\0\0\0\0\0\x01\0\0\0\0\0\x01\0\x01", "2001::1:0:0:1:1");
    IPV6("\x20\x01\x0D\xB8\xAB\xCD\x12\x34\x56\x78\x9a\xbc\xde\xf0\x00\x10",
         "2001:db8:abcd:1234:5678:9abc:def0:10");
    IPV6("\0\0\0\0\0\0\0\0\0\0\xff\xff\xc0\x00\x02\x01", "::ffff:192.0.2.1");
    IPV6("\0\x01\0\0\0\x01\0\0\0\0\0\x01\0\0\0\0", "1:0:1::1:0:0");
    ONE(ETW_INTYPE_BINARY, 0, "", "{\"unsupported\":\"BINARY\",\"raw\":\"\"}");
    /* socket addresses */
    static const uint8_t in4[16] = {2, 0, 0x01, 0xbb, 10, 0, 0, 1};
    ETW_CHECK_STR(one(ETW_INTYPE_BINARY, ETW_OUTTYPE_SOCKETADDRESS, ETW_PROP_LENGTH_FIXED, 16, NULL, in4, 16, 8),
                  "{\"v\":\"10.0.0.1:443\"}");
    static const uint8_t in6[28] = {23, 0, 0x01, 0xbb, 0, 0, 0, 0, 0xfe, 0x80, 0, 0, 0, 0, 0, 0,
                                    0,  0, 0,    0,    0, 0, 0, 1, 0,    0,    0, 0};
    ETW_CHECK_STR(one(ETW_INTYPE_BINARY, ETW_OUTTYPE_SOCKETADDRESS, ETW_PROP_LENGTH_FIXED, 28, NULL, in6, 28, 8),
                  "{\"v\":\"[fe80::1]:443\"}");
    ETW_CHECK_STR(one(ETW_INTYPE_MANIFEST_COUNTEDBINARY, ETW_OUTTYPE_SOCKETADDRESS, 0, 0, NULL,
                      "\x04\x00\x01\x00\xab\xcd", 6, 8),
                  "{\"v\":\"0100abcd\"}");
}

static void test_maps(void) {
    static const etw_map_entry ve[] = {{1, "One"}, {2, "Two"}, {10, "Ten"}, {0xffffffff, "All"}};
    static const etw_map vmap = {"V", ETW_MAP_VALUEMAP, 4, ve};
    static const etw_map_entry be[] = {{1, "A"}, {2, "B"}, {4, "C"}};
    static const etw_map bmap = {"B", ETW_MAP_BITMAP, 3, be};
    static const etw_map_entry be0[] = {{0, "None"}, {1, "A"}, {6, "BC"}};
    static const etw_map bmap0 = {"B0", ETW_MAP_BITMAP, 3, be0};
    static const etw_map_entry qe[] = {{1, "Quo\"te"}};
    static const etw_map qmap = {"Q", ETW_MAP_BITMAP, 1, qe};
    ONE_MAP(ETW_INTYPE_UINT32, 0, &vmap, "\x02\0\0\0", "\"Two\"");
    ONE_MAP(ETW_INTYPE_UINT32, 0, &vmap, "\x01\0\0\0", "\"One\"");
    ONE_MAP(ETW_INTYPE_UINT32, 0, &vmap, "\x0a\0\0\0", "\"Ten\"");
    ONE_MAP(ETW_INTYPE_UINT32, 0, &vmap, "\x03\0\0\0", "3");
    ONE_MAP(ETW_INTYPE_UINT32, 0, &vmap, "\x00\0\0\0", "0");
    ONE_MAP(ETW_INTYPE_UINT32, 0, &vmap, "\x0b\0\0\0", "11");
    ONE_MAP(ETW_INTYPE_INT32, 0, &vmap, "\xff\xff\xff\xff", "\"All\"");
    ONE_MAP(ETW_INTYPE_UINT8, 0, &vmap, "\x02", "\"Two\"");
    ONE_MAP(ETW_INTYPE_HEXINT32, 0, &vmap, "\x03\0\0\0", "\"0x3\"");
    ONE_MAP(ETW_INTYPE_UINT32, 0, &bmap, "\x05\0\0\0", "\"A|C\"");
    ONE_MAP(ETW_INTYPE_UINT32, 0, &bmap, "\x07\0\0\0", "\"A|B|C\"");
    ONE_MAP(ETW_INTYPE_UINT32, 0, &bmap, "\x41\0\0\0", "\"A|0x40\"");
    ONE_MAP(ETW_INTYPE_UINT32, 0, &bmap, "\x40\0\0\0", "\"0x40\"");
    ONE_MAP(ETW_INTYPE_UINT32, 0, &bmap, "\0\0\0\0", "0");
    ONE_MAP(ETW_INTYPE_UINT32, 0, &bmap0, "\0\0\0\0", "\"None\"");
    ONE_MAP(ETW_INTYPE_UINT32, 0, &bmap0, "\x07\0\0\0", "\"A|BC\"");
    ONE_MAP(ETW_INTYPE_UINT32, 0, &bmap0, "\x03\0\0\0", "\"A|0x2\"");
    ONE_MAP(ETW_INTYPE_UINT16, 0, &qmap, "\x03\0", "\"Quo\\\"te|0x2\"");
    ONE_MAP(ETW_INTYPE_UINT16, 0, &qmap, "\x01\0", "\"Quo\\\"te\"");
}

static void test_structs_arrays(void) {
    /* a, s{ b, t{ c } }, arr[2] u8, sa[2]{ x }, a (a duplicate name) */
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
    ETW_CHECK_STR(render(props, 9, 5, payload, sizeof payload, 8),
                  "{\"a\":1,\"s\":{\"b\":2,\"t\":{\"c\":3}},\"arr\":[4,5],"
                  "\"sa\":[{\"x\":\"p\"},{\"x\":\"q\"}],\"a\":9}");
    /* empty array, empty struct, empty array of structs */
    static const uint8_t p0[] = {1, 2, 3, 0, 0, 9};
    static const etw_property props0[] = {
        {.name = "a", .in_type = ETW_INTYPE_UINT8},
        {.name = "s", .flags = ETW_PROP_STRUCT, .struct_first = 4, .struct_count = 0},
        {.name = "arr", .in_type = ETW_INTYPE_UINT8, .flags = ETW_PROP_COUNT_FIXED, .count = 0},
        {.name = "sa", .flags = ETW_PROP_STRUCT | ETW_PROP_COUNT_IN_DATA, .struct_first = 4, .struct_count = 1},
        {.name = "x", .in_type = ETW_INTYPE_UINT8},
    };
    ETW_CHECK_STR(render(props0, 5, 4, p0, 2, 8), "{\"a\":1,\"s\":{},\"arr\":[],\"sa\":{\"unsupported\":\"STRUCT\",\"raw\":\"02\"}}");
    ETW_CHECK_STR(render(props0, 5, 4, p0, 3, 8), "{\"a\":1,\"s\":{},\"arr\":[],\"sa\":[{\"x\":{\"unsupported\":\"UINT8\",\"raw\":\"\"}}]}");
    ETW_CHECK_STR(render(props0, 5, 4, p0 + 2, 3, 8), "{\"a\":3,\"s\":{},\"arr\":[],\"sa\":[]}");
    /* names are escaped */
    static const etw_property pn[] = {{.name = "na\"me\n", .in_type = ETW_INTYPE_UINT8}};
    ETW_CHECK_STR(render(pn, 1, 1, "\x07", 1, 8), "{\"na\\\"me\\n\":7}");
    /* array of strings with a count reference */
    static const etw_property pc[] = {
        {.name = "n", .in_type = ETW_INTYPE_UINT16},
        {.name = "names", .in_type = ETW_INTYPE_UNICODESTRING, .flags = ETW_PROP_COUNT_REF, .count = 0},
    };
    ETW_CHECK_STR(render(pc, 2, 2, "\x02\x00" "a\0\0\0" "b\0c\0\0\0", 12, 8),
                  "{\"n\":2,\"names\":[\"a\",\"bc\"]}");
    /* array of maps */
    static const etw_map_entry ve[] = {{1, "One"}};
    static const etw_map vmap = {"V", ETW_MAP_VALUEMAP, 1, ve};
    static const etw_property pm[] = {
        {.name = "m", .in_type = ETW_INTYPE_UINT8, .flags = ETW_PROP_COUNT_FIXED, .count = 3, .map = &vmap},
    };
    ETW_CHECK_STR(render(pm, 1, 1, "\x01\x02\x01", 3, 8), "{\"m\":[\"One\",2,\"One\"]}");
}

static void test_unsupported(void) {
    /* an unknown in-type takes the rest; a BINARY with no length too */
    static const etw_property props[] = {
        {.name = "a", .in_type = ETW_INTYPE_UINT8},
        {.name = "weird", .in_type = 99},
        {.name = "never", .in_type = ETW_INTYPE_UINT8},
    };
    ETW_CHECK_STR(render(props, 3, 3, "\x05\x01\x02\x03", 4, 8),
                  "{\"a\":5,\"weird\":{\"unsupported\":\"UNKNOWN\",\"raw\":\"010203\"}}");
    /* a value cut inside a struct inside an array: the object still closes */
    static const etw_property p2[] = {
        {.name = "arr", .flags = ETW_PROP_STRUCT | ETW_PROP_COUNT_FIXED, .count = 2, .struct_first = 1, .struct_count = 2},
        {.name = "x", .in_type = ETW_INTYPE_UINT8},
        {.name = "y", .in_type = ETW_INTYPE_UINT32},
    };
    ETW_CHECK_STR(render(p2, 3, 1, "\x01\x02\x00\x00\x00\x03\x04\x05", 8, 8),
                  "{\"arr\":[{\"x\":1,\"y\":2},{\"x\":3,\"y\":{\"unsupported\":\"UINT32\",\"raw\":\"0405\"}}]}");
    ETW_CHECK_STR(render(p2, 3, 1, "\x01\x02\x00\x00\x00", 5, 8),
                  "{\"arr\":[{\"x\":1,\"y\":2},{\"x\":{\"unsupported\":\"UINT8\",\"raw\":\"\"}}]}");
    /* a SID with too many subauthorities */
    ONE(ETW_INTYPE_SID, 0, "\x01\x10\0\0\0\0\0\x05", "{\"unsupported\":\"SID\",\"raw\":\"0110000000000005\"}");
    /* a pointer cut */
    ETW_CHECK_STR(one(ETW_INTYPE_SIZET, 0, 0, 0, NULL, "\x01\x02\x03", 3, 4),
                  "{\"v\":{\"unsupported\":\"POINTER\",\"raw\":\"010203\"}}");
}

static void test_empty_and_args(void) {
    etw_event ev = make_event(NULL, 0, 8);
    etw_schema s = make_schema(NULL, 0, 0);
    etw_text_clear(&T);
    ETW_CHECK_INT(etw_fields_json(&T, &s, &ev, NULL, 0), ETW_OK);
    ETW_CHECK_STR(etw_text_cstr(&T), "{}");
    etw_text_clear(&T);
    ETW_CHECK_INT(etw_fields_json(&T, NULL, &ev, NULL, 0), ETW_OK);
    ETW_CHECK_STR(etw_text_cstr(&T), "{}");
    static const etw_property props[] = {{.name = "a", .in_type = ETW_INTYPE_UINT8}};
    s = make_schema(props, 1, 1);
    etw_text_clear(&T);
    ETW_CHECK_INT(etw_fields_json(&T, &s, &ev, refs, 0), ETW_E_INVALID_ARG);
    ETW_CHECK_STR(etw_text_cstr(&T), "{}");
    /* appended after existing text */
    etw_text_clear(&T);
    etw_text_puts(&T, "\"fields\":");
    ev = make_event("\x07", 1, 8);
    ETW_CHECK_INT(etw_fields_json(&T, &s, &ev, refs, 1), ETW_OK);
    ETW_CHECK_STR(etw_text_cstr(&T), "\"fields\":{\"a\":7}");
}

static void *failing_alloc(void *ctx, size_t n) {
    (void)ctx;
    (void)n;
    return NULL;
}
static void failing_free(void *ctx, void *p) {
    (void)ctx;
    (void)p;
}

static void test_text_failure(void) {
    etw_allocator a = {failing_alloc, failing_free, NULL};
    etw_text t;
    etw_text_init(&t, &a);
    static const etw_property props[] = {{.name = "a", .in_type = ETW_INTYPE_UINT8}};
    etw_schema s = make_schema(props, 1, 1);
    etw_event ev = make_event("\x07", 1, 8);
    ETW_CHECK_INT(etw_fields_json(&t, &s, &ev, refs, 1), ETW_E_NOMEM);
    etw_text_free(&t);
}

/* Every truncation of a rich payload renders valid JSON. */
static void test_truncation_valid(void) {
    static const etw_map_entry be[] = {{1, "A"}, {2, "B"}};
    static const etw_map bmap = {"B", ETW_MAP_BITMAP, 2, be};
    static const etw_property props[] = {
        {.name = "w", .in_type = ETW_INTYPE_UNICODESTRING},
        {.name = "n", .in_type = ETW_INTYPE_UINT16},
        {.name = "s", .flags = ETW_PROP_STRUCT | ETW_PROP_COUNT_REF, .count = 1, .struct_first = 5, .struct_count = 3},
        {.name = "g", .in_type = ETW_INTYPE_GUID},
        {.name = "f", .in_type = ETW_INTYPE_FILETIME},
        {.name = "m", .in_type = ETW_INTYPE_UINT32, .map = &bmap},
        {.name = "v", .in_type = ETW_INTYPE_DOUBLE, .flags = ETW_PROP_COUNT_IN_DATA},
        {.name = "t", .flags = ETW_PROP_STRUCT, .struct_first = 8, .struct_count = 1},
        {.name = "ip", .in_type = ETW_INTYPE_BINARY, .out_type = ETW_OUTTYPE_IPV6},
    };
    uint8_t payload[200];
    uint32_t n = 0;
    const char *w = "h\0\xe9\0\0\0";
    memcpy(payload, w, 6);
    n = 6;
    payload[n++] = 2;
    payload[n++] = 0;
    for (int e = 0; e < 2; e++) {
        payload[n++] = 3;
        payload[n++] = 0;
        payload[n++] = 0;
        payload[n++] = 0;
        payload[n++] = 1;
        payload[n++] = 0;
        for (int i = 0; i < 8; i++) payload[n++] = (uint8_t)(0x40 * (i == 7));
        for (int i = 0; i < 16; i++) payload[n++] = (uint8_t)i;
    }
    for (int i = 0; i < 16; i++) payload[n++] = (uint8_t)(i * 7);
    for (int i = 0; i < 8; i++) payload[n++] = (uint8_t)(i + 1);
    for (uint32_t len = 0; len <= n; len++) {
        uint8_t *copy = malloc(len ? len : 1);
        memcpy(copy, payload, len);
        const char *j = render(props, 9, 5, copy, len, 8);
        ETW_CHECK(json_valid(j));
        if (!json_valid(j)) fprintf(stderr, "  len %u: %s\n", len, j);
        free(copy);
    }
    ETW_CHECK_STR(render(props, 9, 5, payload, n, 8),
                  "{\"w\":\"h\xc3\xa9\",\"n\":2,\"s\":[{\"m\":\"A|B\",\"v\":[2],\"t\":{\"ip\":\"1:203:405:607:809:a0b:c0d:e0f\"}},"
                  "{\"m\":\"A|B\",\"v\":[2],\"t\":{\"ip\":\"1:203:405:607:809:a0b:c0d:e0f\"}}],"
                  "\"g\":\"150e0700-231c-312a-383f-464d545b6269\",\"f\":\"3433-12-31T01:46:15.2307201Z\"}");
}

int main(void) {
    etw_text_init(&T, NULL);
    ETW_RUN(test_primitive_types);
    ETW_RUN(test_integers);
    ETW_RUN(test_int64_as_string);
    ETW_RUN(test_booleans_and_chars);
    ETW_RUN(test_floats);
    ETW_RUN(test_strings);
    ETW_RUN(test_times);
    ETW_RUN(test_sids_guids_binary);
    ETW_RUN(test_addresses);
    ETW_RUN(test_maps);
    ETW_RUN(test_structs_arrays);
    ETW_RUN(test_unsupported);
    ETW_RUN(test_empty_and_args);
    ETW_RUN(test_text_failure);
    ETW_RUN(test_truncation_valid);
    etw_text_free(&T);
    return ETW_TEST_DONE();
}
