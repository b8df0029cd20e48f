/* test_decode.c - the property decoder (etw_decode.h): item sequences for
 * hand-built schemas and payloads, every in-type size, arrays, references,
 * truncation, lying counts and depth limits. */
#include <stdlib.h>
#include <time.h>

#include "etw_test.h"
#include "etwdecode/etw_decode.h"

/* ---- helpers ---- */

#define P(nm, in, out, fl) \
    { .name = (nm), .in_type = (in), .out_type = (out), .flags = (fl) }
#define PS(nm, fl, first, cnt) \
    { .name = (nm), .flags = ETW_PROP_STRUCT | (fl), .struct_first = (first), \
      .struct_count = (cnt) }
#define NPROPS(a) ((uint16_t)(sizeof(a) / sizeof((a)[0])))

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

/* A payload builder. */
typedef struct buf {
    uint8_t b[4096];
    uint32_t n;
} buf;

static void put8(buf *b, unsigned v) { b->b[b->n++] = (uint8_t)v; }
static void put16(buf *b, unsigned v) {
    put8(b, v & 0xff);
    put8(b, (v >> 8) & 0xff);
}
static void put32(buf *b, uint32_t v) {
    put16(b, v & 0xffff);
    put16(b, v >> 16);
}
static void put64(buf *b, uint64_t v) {
    put32(b, (uint32_t)v);
    put32(b, (uint32_t)(v >> 32));
}
static void putbytes(buf *b, const void *p, size_t n) {
    memcpy(b->b + b->n, p, n);
    b->n += (uint32_t)n;
}
/* ASCII text as UTF-16LE, optionally with a NUL. */
static void putw(buf *b, const char *s, int nul) {
    for (; *s; s++) put16(b, (unsigned char)*s);
    if (nul) put16(b, 0);
}

/* Enumerate everything; returns the number of items (at most max stored). */
#define MAX_ITEMS 256
static etw_value items[MAX_ITEMS];
static uint64_t refs[1024];

static int collect(const etw_schema *s, const void *p, uint32_t n, uint8_t ptr,
                   uint32_t *remaining) {
    etw_decode_cursor c;
    etw_event ev = make_event(p, n, ptr);
    etw_value v;
    int count = 0;
    if (etw_decode_begin(&c, s, &ev, refs, 1024) != ETW_OK) return -1;
    while (etw_decode_next(&c, &v) == ETW_OK) {
        if (count < MAX_ITEMS) items[count] = v;
        count++;
        if (count > 10000000) break;
    }
    /* after END it stays at END */
    ETW_CHECK_INT(etw_decode_next(&c, &v), ETW_END);
    if (remaining) *remaining = etw_decode_remaining(&c);
    return count;
}

typedef struct expect {
    etw_value_kind kind;
    const char *name;
    uint32_t size;
    uint8_t depth;
} expect;

static void check_seq(int line, int n, const expect *e, int ne) {
    if (n != ne) {
        etw_test_failed_++;
        fprintf(stderr, "line %d: %s: %d items, expected %d\n", line, etw_test_name_, n, ne);
        return;
    }
    for (int i = 0; i < ne; i++) {
        const etw_value *v = &items[i];
        if (v->kind != e[i].kind || strcmp(v->name, e[i].name) != 0 ||
            v->size != e[i].size || v->depth != e[i].depth) {
            etw_test_failed_++;
            fprintf(stderr,
                    "line %d: %s: item %d is (%d %s size %u depth %u), expected (%d %s size %u depth %u)\n",
                    line, etw_test_name_, i, (int)v->kind, v->name, v->size, v->depth,
                    (int)e[i].kind, e[i].name, e[i].size, e[i].depth);
            return;
        }
    }
    etw_test_passed_++;
}
#define CHECK_SEQ(n, e) check_seq(__LINE__, (n), (e), (int)(sizeof(e) / sizeof((e)[0])))

#define S ETW_VALUE_SCALAR
#define SB ETW_VALUE_STRUCT_BEGIN
#define SE ETW_VALUE_STRUCT_END
#define AB ETW_VALUE_ARRAY_BEGIN
#define AE ETW_VALUE_ARRAY_END
#define U ETW_VALUE_UNSUPPORTED

/* ---- tests ---- */

static void test_fixed_sizes(void) {
    static const etw_property props[] = {
        P("i8", ETW_INTYPE_INT8, 0, 0),         P("u8", ETW_INTYPE_UINT8, 0, 0),
        P("i16", ETW_INTYPE_INT16, 0, 0),       P("u16", ETW_INTYPE_UINT16, 0, 0),
        P("i32", ETW_INTYPE_INT32, 0, 0),       P("u32", ETW_INTYPE_UINT32, 0, 0),
        P("h32", ETW_INTYPE_HEXINT32, 0, 0),    P("f", ETW_INTYPE_FLOAT, 0, 0),
        P("b", ETW_INTYPE_BOOLEAN, 0, 0),       P("i64", ETW_INTYPE_INT64, 0, 0),
        P("u64", ETW_INTYPE_UINT64, 0, 0),      P("h64", ETW_INTYPE_HEXINT64, 0, 0),
        P("d", ETW_INTYPE_DOUBLE, 0, 0),        P("ft", ETW_INTYPE_FILETIME, 0, 0),
        P("g", ETW_INTYPE_GUID, 0, 0),          P("st", ETW_INTYPE_SYSTEMTIME, 0, 0),
        P("uc", ETW_INTYPE_UNICODECHAR, 0, 0),  P("ac", ETW_INTYPE_ANSICHAR, 0, 0),
        P("null", ETW_INTYPE_NULL, 0, 0),       P("last", ETW_INTYPE_UINT8, 0, 0),
    };
    static const uint32_t sizes[] = {1, 1, 2, 2, 4, 4, 4, 4, 4, 8, 8, 8, 8, 8, 16, 16, 2, 1, 0, 1};
    static const uint16_t outs[] = {
        ETW_OUTTYPE_BYTE,     ETW_OUTTYPE_UNSIGNEDBYTE, ETW_OUTTYPE_SHORT,   ETW_OUTTYPE_UNSIGNEDSHORT,
        ETW_OUTTYPE_INT,      ETW_OUTTYPE_UNSIGNEDINT,  ETW_OUTTYPE_HEXINT32, ETW_OUTTYPE_FLOAT,
        ETW_OUTTYPE_BOOLEAN,  ETW_OUTTYPE_LONG,         ETW_OUTTYPE_UNSIGNEDLONG, ETW_OUTTYPE_HEXINT64,
        ETW_OUTTYPE_DOUBLE,   ETW_OUTTYPE_DATETIME,     ETW_OUTTYPE_GUID,    ETW_OUTTYPE_DATETIME,
        ETW_OUTTYPE_STRING,   ETW_OUTTYPE_STRING,       ETW_OUTTYPE_NULL,    ETW_OUTTYPE_UNSIGNEDBYTE};
    etw_schema s = make_schema(props, NPROPS(props), NPROPS(props));
    uint8_t payload[256];
    uint32_t total = 0, off = 0, rem = 99;
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) total += sizes[i];
    for (uint32_t i = 0; i < total; i++) payload[i] = (uint8_t)(i + 1);
    int n = collect(&s, payload, total, 8, &rem);
    ETW_CHECK_INT(n, NPROPS(props));
    ETW_CHECK_INT(rem, 0);
    for (int i = 0; i < n && i < NPROPS(props); i++) {
        ETW_CHECK_INT(items[i].kind, ETW_VALUE_SCALAR);
        ETW_CHECK_STR(items[i].name, props[i].name);
        ETW_CHECK_INT(items[i].size, sizes[i]);
        ETW_CHECK_INT(items[i].in_type, props[i].in_type);
        ETW_CHECK_INT(items[i].out_type, outs[i]);
        ETW_CHECK_INT(items[i].depth, 0);
        ETW_CHECK_INT(items[i].in_array, 0);
        ETW_CHECK_INT(items[i].pointer_size, 8);
        if (sizes[i]) ETW_CHECK(items[i].data == payload + off);
        off += sizes[i];
    }
    /* trailing bytes are left over */
    payload[total] = 0xAA;
    n = collect(&s, payload, total + 3, 8, &rem);
    ETW_CHECK_INT(n, NPROPS(props));
    ETW_CHECK_INT(rem, 3);
}

static void test_pointer_sizes(void) {
    static const etw_property props[] = {
        P("p", ETW_INTYPE_POINTER, 0, 0),
        P("sz", ETW_INTYPE_SIZET, 0, 0),
        P("pu", ETW_INTYPE_POINTER, ETW_OUTTYPE_UNSIGNEDLONG, 0),
        P("end", ETW_INTYPE_UINT8, 0, 0),
    };
    etw_schema s = make_schema(props, 4, 4);
    uint8_t payload[32];
    for (int i = 0; i < 32; i++) payload[i] = (uint8_t)i;
    uint32_t rem;
    int n = collect(&s, payload, 25, 8, &rem);
    ETW_CHECK_INT(n, 4);
    ETW_CHECK_INT(rem, 0);
    ETW_CHECK_INT(items[0].size, 8);
    ETW_CHECK_INT(items[0].in_type, ETW_INTYPE_POINTER);
    ETW_CHECK_INT(items[0].out_type, ETW_OUTTYPE_HEXINT64);
    ETW_CHECK_INT(items[1].size, 8);
    ETW_CHECK_INT(items[1].in_type, ETW_INTYPE_POINTER);
    ETW_CHECK_INT(items[1].out_type, ETW_OUTTYPE_HEXINT64);
    ETW_CHECK_INT(items[2].out_type, ETW_OUTTYPE_UNSIGNEDLONG);
    ETW_CHECK_INT(items[3].data[0], 24);
    ETW_CHECK(etw_value_u64(&items[0]) == UINT64_C(0x0706050403020100));

    n = collect(&s, payload, 13, 4, &rem);
    ETW_CHECK_INT(n, 4);
    ETW_CHECK_INT(rem, 0);
    ETW_CHECK_INT(items[0].size, 4);
    ETW_CHECK_INT(items[0].pointer_size, 4);
    ETW_CHECK_INT(items[0].out_type, ETW_OUTTYPE_HEXINT32);
    ETW_CHECK_INT(items[1].size, 4);
    ETW_CHECK_INT(items[1].in_type, ETW_INTYPE_POINTER);
    ETW_CHECK_INT(items[1].out_type, ETW_OUTTYPE_HEXINT32);
    ETW_CHECK_INT(items[3].data[0], 12);
    ETW_CHECK(etw_value_u64(&items[1]) == 0x07060504u);

    /* an event without a pointer size uses the schema's */
    etw_schema s4 = s;
    s4.pointer_size = 4;
    etw_event ev = make_event(payload, 13, 0);
    etw_decode_cursor c;
    etw_value v;
    ETW_CHECK_INT(etw_decode_begin(&c, &s4, &ev, refs, 4), ETW_OK);
    ETW_CHECK_INT(etw_decode_next(&c, &v), ETW_OK);
    ETW_CHECK_INT(v.size, 4);
}

static void test_nested_structs(void) {
    /* a, s{ b, t{ c }, d }, e */
    static const etw_property props[] = {
        P("a", ETW_INTYPE_UINT32, 0, 0),
        PS("s", 0, 3, 3),
        P("e", ETW_INTYPE_UINT8, 0, 0),
        P("b", ETW_INTYPE_UINT8, 0, 0),
        PS("t", 0, 6, 1),
        P("d", ETW_INTYPE_UINT16, 0, 0),
        P("c", ETW_INTYPE_UINT64, 0, 0),
    };
    etw_schema s = make_schema(props, NPROPS(props), 3);
    uint8_t payload[4 + 1 + 8 + 2 + 1] = {0};
    int n = collect(&s, payload, sizeof payload, 8, NULL);
    static const expect e[] = {
        {S, "a", 4, 0}, {SB, "s", 0, 0}, {S, "b", 1, 1}, {SB, "t", 0, 1}, {S, "c", 8, 2},
        {SE, "t", 0, 1}, {S, "d", 2, 1}, {SE, "s", 0, 0}, {S, "e", 1, 0},
    };
    CHECK_SEQ(n, e);
    ETW_CHECK(items[1].data == NULL);

    /* an empty struct */
    static const etw_property p2[] = {PS("empty", 0, 1, 0), P("x", ETW_INTYPE_UINT8, 0, 0)};
    etw_schema s2 = make_schema(p2, 2, 2);
    n = collect(&s2, payload, 1, 8, NULL);
    static const expect e2[] = {{SB, "empty", 0, 0}, {SE, "empty", 0, 0}, {S, "x", 1, 0}};
    CHECK_SEQ(n, e2);
}

static void test_arrays_of_scalars(void) {
    static const etw_property props[] = {
        {.name = "one", .in_type = ETW_INTYPE_UINT16, .flags = ETW_PROP_COUNT_FIXED, .count = 1},
        {.name = "three", .in_type = ETW_INTYPE_UINT8, .flags = ETW_PROP_COUNT_FIXED, .count = 3},
        P("n", ETW_INTYPE_UINT32, 0, 0),
        {.name = "byref", .in_type = ETW_INTYPE_INT16, .flags = ETW_PROP_COUNT_REF, .count = 2},
        {.name = "indata", .in_type = ETW_INTYPE_UNICODESTRING, .flags = ETW_PROP_COUNT_IN_DATA},
        {.name = "none", .in_type = ETW_INTYPE_UINT32, .flags = ETW_PROP_COUNT_FIXED, .count = 0},
        P("end", ETW_INTYPE_UINT8, 0, 0),
    };
    etw_schema s = make_schema(props, NPROPS(props), NPROPS(props));
    buf b = {{0}, 0};
    put16(&b, 7);
    put8(&b, 1);
    put8(&b, 2);
    put8(&b, 3);
    put32(&b, 2);
    put16(&b, 0xfffe);
    put16(&b, 5);
    put16(&b, 2);
    putw(&b, "ab", 1);
    putw(&b, "", 1);
    put8(&b, 9);
    uint32_t rem;
    int n = collect(&s, b.b, b.n, 8, &rem);
    static const expect e[] = {
        {AB, "one", 0, 0}, {S, "one", 2, 1}, {AE, "one", 0, 0},
        {AB, "three", 0, 0}, {S, "three", 1, 1}, {S, "three", 1, 1}, {S, "three", 1, 1}, {AE, "three", 0, 0},
        {S, "n", 4, 0},
        {AB, "byref", 0, 0}, {S, "byref", 2, 1}, {S, "byref", 2, 1}, {AE, "byref", 0, 0},
        {AB, "indata", 0, 0}, {S, "indata", 4, 1}, {S, "indata", 0, 1}, {AE, "indata", 0, 0},
        {AB, "none", 0, 0}, {AE, "none", 0, 0},
        {S, "end", 1, 0},
    };
    CHECK_SEQ(n, e);
    ETW_CHECK_INT(rem, 0);
    ETW_CHECK_INT(items[0].array_count, 1);
    ETW_CHECK_INT(items[3].array_count, 3);
    ETW_CHECK_INT(items[7].array_count, 3);
    ETW_CHECK_INT(items[6].array_index, 2);
    ETW_CHECK_INT(items[6].in_array, 1);
    ETW_CHECK_INT(items[6].array_count, 3);
    ETW_CHECK_INT(items[9].array_count, 2);
    ETW_CHECK_INT(items[13].array_count, 2);
    ETW_CHECK_INT(items[13].out_type, ETW_OUTTYPE_STRING);
    ETW_CHECK_INT(etw_value_i64(&items[10]), -2);
    ETW_CHECK_INT(etw_value_i64(&items[11]), 5);
    ETW_CHECK_INT(items[19].data[0], 9);
}

static void test_arrays_of_structs(void) {
    /* n, arr[n]{ x u8, inner[x] u16 }, tail */
    static const etw_property props[] = {
        P("n", ETW_INTYPE_UINT8, 0, 0),
        PS("arr", ETW_PROP_COUNT_REF, 3, 2),
        P("tail", ETW_INTYPE_UINT8, 0, 0),
        P("x", ETW_INTYPE_UINT8, 0, 0),
        {.name = "inner", .in_type = ETW_INTYPE_UINT16, .flags = ETW_PROP_COUNT_REF, .count = 3},
    };
    etw_schema s = make_schema(props, NPROPS(props), 3);
    buf b = {{0}, 0};
    put8(&b, 2);
    put8(&b, 1);
    put16(&b, 0x1111);
    put8(&b, 2);
    put16(&b, 0x2222);
    put16(&b, 0x3333);
    put8(&b, 0xEE);
    int n = collect(&s, b.b, b.n, 8, NULL);
    static const expect e[] = {
        {S, "n", 1, 0},
        {AB, "arr", 0, 0},
        {SB, "arr", 0, 1}, {S, "x", 1, 2}, {AB, "inner", 0, 2}, {S, "inner", 2, 3}, {AE, "inner", 0, 2}, {SE, "arr", 0, 1},
        {SB, "arr", 0, 1}, {S, "x", 1, 2}, {AB, "inner", 0, 2}, {S, "inner", 2, 3}, {S, "inner", 2, 3}, {AE, "inner", 0, 2}, {SE, "arr", 0, 1},
        {AE, "arr", 0, 0},
        {S, "tail", 1, 0},
    };
    CHECK_SEQ(n, e);
    ETW_CHECK_INT(items[1].array_count, 2);
    ETW_CHECK_INT(items[2].in_array, 1);
    ETW_CHECK_INT(items[2].array_index, 0);
    ETW_CHECK_INT(items[8].array_index, 1);
    ETW_CHECK_INT(items[14].array_index, 1);
    ETW_CHECK_INT(items[3].in_array, 0);
    ETW_CHECK(etw_value_u64(&items[12]) == 0x3333);

    /* COUNT_IN_DATA array of structs, fixed count array of structs */
    static const etw_property p2[] = {
        PS("v", ETW_PROP_COUNT_IN_DATA, 2, 1),
        {.name = "f", .flags = ETW_PROP_STRUCT | ETW_PROP_COUNT_FIXED, .struct_first = 2,
         .struct_count = 1, .count = 1},
        P("m", ETW_INTYPE_UINT8, 0, 0),
    };
    etw_schema s2 = make_schema(p2, 3, 2);
    uint8_t d2[] = {1, 0, 0x41, 0x42};
    n = collect(&s2, d2, sizeof d2, 8, NULL);
    static const expect e2[] = {
        {AB, "v", 0, 0}, {SB, "v", 0, 1}, {S, "m", 1, 2}, {SE, "v", 0, 1}, {AE, "v", 0, 0},
        {AB, "f", 0, 0}, {SB, "f", 0, 1}, {S, "m", 1, 2}, {SE, "f", 0, 1}, {AE, "f", 0, 0},
    };
    CHECK_SEQ(n, e2);
    ETW_CHECK_INT(items[2].data[0], 0x41);
    ETW_CHECK_INT(items[7].data[0], 0x42);
}

static void test_length_refs(void) {
    static const etw_property props[] = {
        P("len", ETW_INTYPE_UINT16, 0, 0),
        {.name = "w", .in_type = ETW_INTYPE_UNICODESTRING, .flags = ETW_PROP_LENGTH_REF, .length = 0},
        {.name = "a", .in_type = ETW_INTYPE_ANSISTRING, .flags = ETW_PROP_LENGTH_FIXED, .length = 8},
        P("blen", ETW_INTYPE_UINT8, 0, 0),
        {.name = "bin", .in_type = ETW_INTYPE_BINARY, .flags = ETW_PROP_LENGTH_REF, .length = 3},
        {.name = "fbin", .in_type = ETW_INTYPE_BINARY, .flags = ETW_PROP_LENGTH_FIXED, .length = 2},
        {.name = "w0", .in_type = ETW_INTYPE_UNICODESTRING, .flags = ETW_PROP_LENGTH_FIXED, .length = 0},
        P("end", ETW_INTYPE_UINT8, 0, 0),
    };
    etw_schema s = make_schema(props, NPROPS(props), NPROPS(props));
    buf b = {{0}, 0};
    put16(&b, 3);
    putw(&b, "xyz", 0);           /* 3 characters = 6 bytes, no NUL */
    putbytes(&b, "abc\0\0\0\0\0", 8); /* fixed 8, NUL padded */
    put8(&b, 5);
    putbytes(&b, "\x01\x02\x03\x04\x05", 5);
    putbytes(&b, "\xaa\xbb", 2);
    put8(&b, 0x77);
    uint32_t rem;
    int n = collect(&s, b.b, b.n, 8, &rem);
    static const expect e[] = {
        {S, "len", 2, 0}, {S, "w", 6, 0}, {S, "a", 3, 0}, {S, "blen", 1, 0},
        {S, "bin", 5, 0}, {S, "fbin", 2, 0}, {S, "w0", 0, 0}, {S, "end", 1, 0},
    };
    CHECK_SEQ(n, e);
    ETW_CHECK_INT(rem, 0);
    ETW_CHECK(memcmp(items[1].data, "x\0y\0z\0", 6) == 0);
    ETW_CHECK(memcmp(items[2].data, "abc", 3) == 0);
    ETW_CHECK_INT(items[4].out_type, ETW_OUTTYPE_HEXBINARY);
    ETW_CHECK_INT(items[7].data[0], 0x77);

    /* a length larger than the payload: UNSUPPORTED with the rest, end */
    b.n = 0;
    put16(&b, 100);
    putw(&b, "xyz", 1);
    n = collect(&s, b.b, b.n, 8, &rem);
    static const expect e2[] = {{S, "len", 2, 0}, {U, "w", 8, 0}};
    CHECK_SEQ(n, e2);
    ETW_CHECK_INT(rem, 0);
}

static void test_strings(void) {
    static const etw_property props[] = {
        P("w", ETW_INTYPE_UNICODESTRING, 0, 0),
        P("a", ETW_INTYPE_ANSISTRING, 0, 0),
        P("w2", ETW_INTYPE_UNICODESTRING, 0, 0),
    };
    etw_schema s = make_schema(props, 3, 3);
    buf b = {{0}, 0};
    putw(&b, "hello", 1);
    putbytes(&b, "abc", 4);
    putw(&b, "end", 0); /* runs to the end of the payload */
    uint32_t rem;
    int n = collect(&s, b.b, b.n, 8, &rem);
    static const expect e[] = {{S, "w", 10, 0}, {S, "a", 3, 0}, {S, "w2", 6, 0}};
    CHECK_SEQ(n, e);
    ETW_CHECK_INT(rem, 0);
    ETW_CHECK_INT(items[0].out_type, ETW_OUTTYPE_STRING);

    /* an odd byte at the end of an unterminated UTF-16 string is dropped */
    b.n = 0;
    putw(&b, "hi", 1);
    putbytes(&b, "x", 2);
    putbytes(&b, "a\0b", 3);
    n = collect(&s, b.b, b.n, 8, &rem);
    static const expect e2[] = {{S, "w", 4, 0}, {S, "a", 1, 0}, {S, "w2", 2, 0}};
    CHECK_SEQ(n, e2);
    ETW_CHECK_INT(rem, 0);

    /* strings with no bytes left are empty */
    n = collect(&s, b.b, 0, 8, &rem);
    static const expect e3[] = {{S, "w", 0, 0}, {S, "a", 0, 0}, {S, "w2", 0, 0}};
    CHECK_SEQ(n, e3);

    /* an ANSI string without NUL at the end */
    n = collect(&s, "\0\0xyz", 5, 8, &rem);
    static const expect e4[] = {{S, "w", 0, 0}, {S, "a", 3, 0}, {S, "w2", 0, 0}};
    CHECK_SEQ(n, e4);
}

/* UTF-16 strings of every length up to 80 units, at an even and an odd
 * offset, their NUL at every place (or none): the string ends at the first
 * NUL unit, whatever the width its scan takes at a time. */
static void test_long_utf16(void) {
    static const etw_property props[] = {
        P("pad", ETW_INTYPE_UINT8, 0, 0),
        P("w", ETW_INTYPE_UNICODESTRING, 0, 0),
    };
    for (int odd = 0; odd < 2; odd++) {
        etw_schema s = make_schema(odd ? props : props + 1, odd ? 2 : 1, odd ? 2 : 1);
        for (uint32_t len = 0; len <= 80; len++)
            for (uint32_t k = 0; k <= len; k++) {
                buf b = {{0}, 0};
                if (odd) b.b[b.n++] = 7;
                for (uint32_t i = 0; i < len; i++) put16(&b, i == k ? 0 : 0x0100u + i); /* high byte set: no zero byte */
                uint32_t rem;
                int n = collect(&s, b.b, b.n, 8, &rem);
                ETW_CHECK_INT(n, odd ? 2 : 1);
                const etw_value *w = &items[odd ? 1 : 0];
                ETW_CHECK_INT(w->size, 2 * k);
                /* after the NUL, the units left are trailing bytes */
                ETW_CHECK_INT(rem, k < len ? 2 * (len - k - 1) : 0);
            }
    }
}

static void test_counted(void) {
    static const etw_property props[] = {
        P("mcs", ETW_INTYPE_MANIFEST_COUNTEDSTRING, 0, 0),
        P("mca", ETW_INTYPE_MANIFEST_COUNTEDANSISTRING, 0, 0),
        P("mcb", ETW_INTYPE_MANIFEST_COUNTEDBINARY, 0, 0),
        P("cs", ETW_INTYPE_COUNTEDSTRING, 0, 0),
        P("ca", ETW_INTYPE_COUNTEDANSISTRING, 0, 0),
        P("rcs", ETW_INTYPE_REVERSEDCOUNTEDSTRING, 0, 0),
        P("rca", ETW_INTYPE_REVERSEDCOUNTEDANSISTRING, 0, 0),
        P("hd", ETW_INTYPE_HEXDUMP, 0, 0),
        {.name = "cust", .in_type = ETW_INTYPE_UINT32, .flags = ETW_PROP_CUSTOM_SIZED},
        P("nnt", ETW_INTYPE_NONNULLTERMINATEDSTRING, 0, 0),
    };
    etw_schema s = make_schema(props, NPROPS(props), NPROPS(props));
    buf b = {{0}, 0};
    put16(&b, 4);
    putw(&b, "ab", 0);
    put16(&b, 3);
    putbytes(&b, "xyz", 3);
    put16(&b, 2);
    putbytes(&b, "\x01\x02", 2);
    put16(&b, 6);
    putw(&b, "a", 1); /* counted string with a NUL inside: cut at the NUL */
    put16(&b, 'b');
    put16(&b, 0);     /* empty counted ANSI string */
    put8(&b, 0);      /* big-endian count 2 */
    put8(&b, 2);
    putw(&b, "q", 0);
    put8(&b, 0);
    put8(&b, 1);
    put8(&b, 'r');
    put32(&b, 3);
    putbytes(&b, "\xde\xad\xbe", 3);
    put16(&b, 5);
    putbytes(&b, "\x01\x02\x03\x04\x05", 5);
    putw(&b, "rest", 0);
    uint32_t rem;
    int n = collect(&s, b.b, b.n, 8, &rem);
    static const expect e[] = {
        {S, "mcs", 4, 0}, {S, "mca", 3, 0}, {S, "mcb", 2, 0}, {S, "cs", 2, 0}, {S, "ca", 0, 0},
        {S, "rcs", 2, 0}, {S, "rca", 1, 0}, {S, "hd", 3, 0}, {S, "cust", 5, 0}, {S, "nnt", 8, 0},
    };
    CHECK_SEQ(n, e);
    ETW_CHECK_INT(rem, 0);
    ETW_CHECK_INT(items[6].data[0], 'r');
    ETW_CHECK_INT(items[7].data[0], 0xde);
    ETW_CHECK_INT(items[8].out_type, ETW_OUTTYPE_HEXBINARY);
    ETW_CHECK_INT(items[8].data[0], 1);
    ETW_CHECK_INT(items[2].out_type, ETW_OUTTYPE_HEXBINARY);

    /* a count past the end: UNSUPPORTED, rest */
    uint8_t bad[] = {9, 0, 'a', 'b'};
    n = collect(&s, bad, sizeof bad, 8, &rem);
    static const expect e2[] = {{U, "mcs", 4, 0}};
    CHECK_SEQ(n, e2);
}

static void test_sids(void) {
    static const etw_property props[] = {
        P("sid", ETW_INTYPE_SID, 0, 0),
        P("w", ETW_INTYPE_WBEMSID, 0, 0),
        P("w0", ETW_INTYPE_WBEMSID, 0, 0),
        P("end", ETW_INTYPE_UINT8, 0, 0),
    };
    etw_schema s = make_schema(props, 4, 4);
    static const uint8_t sid[] = {1, 1, 0, 0, 0, 0, 0, 5, 18, 0, 0, 0};
    for (int ptr = 4; ptr <= 8; ptr += 4) {
        buf b = {{0}, 0};
        putbytes(&b, sid, sizeof sid);
        put32(&b, 0x1234); /* TOKEN_USER: 2 pointers */
        for (int i = 4; i < 2 * ptr; i++) put8(&b, 0);
        putbytes(&b, sid, sizeof sid);
        put32(&b, 0);
        put8(&b, 0x55);
        uint32_t rem;
        int n = collect(&s, b.b, b.n, (uint8_t)ptr, &rem);
        expect e[] = {{S, "sid", 12, 0}, {S, "w", (uint32_t)(2 * ptr + 12), 0}, {S, "w0", 4, 0}, {S, "end", 1, 0}};
        CHECK_SEQ(n, e);
        ETW_CHECK_INT(rem, 0);
        ETW_CHECK_INT(items[3].data[0], 0x55);
        ETW_CHECK_INT(items[0].out_type, ETW_OUTTYPE_STRING);
    }
    /* more than 15 subauthorities: UNSUPPORTED, rest, end */
    uint8_t bad[40] = {1, 16};
    uint32_t rem;
    int n = collect(&s, bad, sizeof bad, 8, &rem);
    static const expect e2[] = {{U, "sid", 40, 0}};
    CHECK_SEQ(n, e2);
    /* cut: 2 subauthorities, one present */
    uint8_t cut[12] = {1, 2, 0, 0, 0, 0, 0, 5, 1, 0, 0, 0};
    n = collect(&s, cut, sizeof cut, 8, &rem);
    static const expect e3[] = {{U, "sid", 12, 0}};
    CHECK_SEQ(n, e3);
}

static void test_binary_and_unknown(void) {
    static const etw_property props[] = {
        P("ip6", ETW_INTYPE_BINARY, ETW_OUTTYPE_IPV6, 0),
        P("nul", ETW_INTYPE_NULL, 0, 0),
        P("bin", ETW_INTYPE_BINARY, 0, 0),
        P("never", ETW_INTYPE_UINT8, 0, 0),
    };
    etw_schema s = make_schema(props, 4, 4);
    uint8_t payload[24] = {0};
    uint32_t rem;
    int n = collect(&s, payload, sizeof payload, 8, &rem);
    static const expect e[] = {{S, "ip6", 16, 0}, {S, "nul", 0, 0}, {U, "bin", 8, 0}};
    CHECK_SEQ(n, e);
    ETW_CHECK_INT(rem, 0);
    ETW_CHECK(items[2].data == payload + 16);

    static const etw_property p2[] = {
        P("a", ETW_INTYPE_UINT8, 0, 0),
        P("weird", 99, 0, 0),
        P("never", ETW_INTYPE_UINT8, 0, 0),
    };
    etw_schema s2 = make_schema(p2, 3, 3);
    n = collect(&s2, payload, 5, 8, &rem);
    static const expect e2[] = {{S, "a", 1, 0}, {U, "weird", 4, 0}};
    CHECK_SEQ(n, e2);
    ETW_CHECK_INT(items[1].in_type, 99);
    ETW_CHECK_STR(etw_intype_name(items[1].in_type), "UNKNOWN");
}

/* A schema of varied types; the payload truncated at every length. */
static void test_truncation(void) {
    static const etw_property props[] = {
        P("w", ETW_INTYPE_UNICODESTRING, 0, 0),
        P("n", ETW_INTYPE_UINT16, 0, 0),
        PS("s", ETW_PROP_COUNT_REF, 5, 3),
        P("g", ETW_INTYPE_GUID, 0, 0),
        P("sid", ETW_INTYPE_SID, 0, 0),
        P("x", ETW_INTYPE_UINT32, 0, 0),
        {.name = "v", .in_type = ETW_INTYPE_INT64, .flags = ETW_PROP_COUNT_IN_DATA},
        P("c", ETW_INTYPE_COUNTEDSTRING, 0, 0),
    };
    /* the struct's count refers to n (index 1) */
    etw_property pr[NPROPS(props)];
    memcpy(pr, props, sizeof props);
    pr[2].count = 1;
    etw_schema s = make_schema(pr, NPROPS(pr), 5);
    buf b = {{0}, 0};
    putw(&b, "str", 1);
    put16(&b, 2);
    for (int i = 0; i < 2; i++) {
        put32(&b, 0x11111111);
        put16(&b, 2);
        put64(&b, 5);
        put64(&b, 6);
        put16(&b, 4);
        putw(&b, "ok", 0);
    }
    putbytes(&b, "0123456789abcdef", 16);
    putbytes(&b, "\x01\x01\x00\x00\x00\x00\x00\x05\x12\x00\x00\x00", 12);
    uint32_t full = b.n, rem;
    int n = collect(&s, b.b, full, 8, &rem);
    ETW_CHECK_INT(rem, 0);
    ETW_CHECK_INT(n, 1 + 1 + 1 + 2 * (1 + 1 + 4 + 1 + 1) + 1 + 1 + 1);
    ETW_CHECK_INT(items[n - 1].kind, ETW_VALUE_SCALAR);
    int unsupported_ends = 0;
    for (uint32_t len = 0; len < full; len++) {
        uint8_t *copy = malloc(len ? len : 1); /* exact size: ASan sees any overread */
        memcpy(copy, b.b, len);
        n = collect(&s, copy, len, 8, &rem);
        ETW_CHECK(n >= 1 && n <= 40);
        ETW_CHECK_INT(rem, 0);
        if (n >= 1 && n <= MAX_ITEMS) {
            /* never a full value past the end */
            for (int i = 0; i < n; i++)
                if (items[i].data) ETW_CHECK(items[i].data + items[i].size <= copy + len);
            if (items[n - 1].kind == ETW_VALUE_UNSUPPORTED) unsupported_ends++;
        }
        free(copy);
    }
    /* every cut ends with UNSUPPORTED: g and sid always need bytes */
    ETW_CHECK_INT(unsupported_ends, full);
    n = collect(&s, b.b, full - 12 - 16 + 0, 8, &rem); /* cut before the GUID */
    ETW_CHECK_INT(items[n - 1].kind, ETW_VALUE_UNSUPPORTED);
    ETW_CHECK_STR(items[n - 1].name, "g");
    ETW_CHECK_INT(items[n - 1].size, 0);
    n = collect(&s, b.b, full - 5, 8, &rem);
    ETW_CHECK_INT(items[n - 1].kind, ETW_VALUE_UNSUPPORTED);
    ETW_CHECK_STR(items[n - 1].name, "sid");
    ETW_CHECK_INT(items[n - 1].size, 7);
}

static void test_lying_counts(void) {
    /* a 4-billion count from a reference over a 12-byte array */
    static const etw_property props[] = {
        P("n", ETW_INTYPE_UINT32, 0, 0),
        {.name = "arr", .in_type = ETW_INTYPE_UINT32, .flags = ETW_PROP_COUNT_REF, .count = 0},
        P("never", ETW_INTYPE_UINT8, 0, 0),
    };
    etw_schema s = make_schema(props, 3, 3);
    buf b = {{0}, 0};
    put32(&b, 0xFFFFFFFF);
    put32(&b, 1);
    put32(&b, 2);
    put32(&b, 3);
    clock_t t0 = clock();
    uint32_t rem;
    int n = collect(&s, b.b, b.n, 8, &rem);
    static const expect e[] = {
        {S, "n", 4, 0}, {AB, "arr", 0, 0}, {S, "arr", 4, 1}, {S, "arr", 4, 1}, {S, "arr", 4, 1}, {U, "arr", 0, 1},
    };
    CHECK_SEQ(n, e);
    ETW_CHECK(items[1].array_count <= 65535);
    ETW_CHECK(clock() - t0 < CLOCKS_PER_SEC);

    /* zero-size elements (issue 9.3): the first one is shown, the 65534
     * others, which would repeat it, are one UNSUPPORTED element; the array
     * ends and decoding goes on after it */
    static const etw_property p2[] = {
        P("n", ETW_INTYPE_UINT32, 0, 0),
        {.name = "nulls", .in_type = ETW_INTYPE_NULL, .flags = ETW_PROP_COUNT_REF, .count = 0},
        PS("empties", ETW_PROP_COUNT_REF, 0, 0),
        P("after", ETW_INTYPE_UINT8, 0, 0),
    };
    etw_property pp[4];
    memcpy(pp, p2, sizeof p2);
    pp[2].struct_first = 3;
    pp[2].struct_count = 0;
    etw_schema s2 = make_schema(pp, 4, 4);
    b.n = 0;
    put32(&b, 0xFFFFFFFF);
    put8(&b, 0x42);
    n = collect(&s2, b.b, b.n, 8, &rem);
    static const expect e2[] = {
        {S, "n", 4, 0},       {AB, "nulls", 0, 0},   {S, "nulls", 0, 1}, {U, "nulls", 0, 1},
        {AE, "nulls", 0, 0},  {AB, "empties", 0, 0}, {SB, "empties", 0, 1}, {SE, "empties", 0, 1},
        {U, "empties", 0, 1}, {AE, "empties", 0, 0}, {S, "after", 1, 0},
    };
    CHECK_SEQ(n, e2);
    ETW_CHECK_INT(items[1].array_count, 65535);
    ETW_CHECK_INT(items[3].array_index, 1);
    ETW_CHECK_INT(items[8].array_index, 1);
    ETW_CHECK_INT(items[8].in_type, ETW_INTYPE_RESERVED24);
    ETW_CHECK_INT(items[10].data[0], 0x42);
    ETW_CHECK_INT(rem, 0);

    /* nested zero-size arrays: 65535 x 65535 would hang; each level stops
     * after its first element */
    static const etw_property p3[] = {
        P("n", ETW_INTYPE_UINT32, 0, 0),
        PS("outer", ETW_PROP_COUNT_REF, 2, 1),
        {.name = "inner", .in_type = ETW_INTYPE_NULL, .flags = ETW_PROP_COUNT_REF, .count = 0},
    };
    etw_schema s3 = make_schema(p3, 3, 2);
    n = collect(&s3, b.b, 4, 8, &rem);
    static const expect e3[] = {
        {S, "n", 4, 0},      {AB, "outer", 0, 0}, {SB, "outer", 0, 1}, {AB, "inner", 0, 2},
        {S, "inner", 0, 3},  {U, "inner", 0, 3},  {AE, "inner", 0, 2}, {SE, "outer", 0, 1},
        {U, "outer", 0, 1},  {AE, "outer", 0, 0},
    };
    CHECK_SEQ(n, e3);
    ETW_CHECK(clock() - t0 < CLOCKS_PER_SEC);

    /* the per-event budget: ETW_ZERO_ITEMS_BASE + payload bytes items that
     * take no byte; 400 NULL properties over a 10-byte payload stop at 138,
     * the next one is UNSUPPORTED (with the payload left) and nothing
     * follows */
    static etw_property p5[401];
    for (int i = 0; i < 401; i++) p5[i] = (etw_property){.name = "z", .in_type = ETW_INTYPE_NULL};
    p5[0] = (etw_property){.name = "a", .in_type = ETW_INTYPE_UINT8};
    etw_schema s5 = make_schema(p5, 401, 401);
    uint8_t d5[10] = {9, 1, 2, 3, 4, 5, 6, 7, 8, 9};
    etw_decode_cursor c5;
    etw_event ev5 = make_event(d5, sizeof d5, 8);
    etw_value v5;
    ETW_CHECK_INT(etw_decode_begin(&c5, &s5, &ev5, refs, 1024), ETW_OK);
    int nulls = 0, unsup = 0, total = 0;
    while (etw_decode_next(&c5, &v5) == ETW_OK) {
        total++;
        if (v5.kind == ETW_VALUE_SCALAR && v5.in_type == ETW_INTYPE_NULL) nulls++;
        if (v5.kind == ETW_VALUE_UNSUPPORTED) {
            unsup++;
            ETW_CHECK_INT(v5.size, 9);
        }
    }
    ETW_CHECK_INT(nulls, ETW_ZERO_ITEMS_BASE + 10);
    ETW_CHECK_INT(unsup, 1);
    ETW_CHECK_INT(total, 1 + ETW_ZERO_ITEMS_BASE + 10 + 1);

    /* count in data larger than the payload */
    static const etw_property p4[] = {
        {.name = "v", .in_type = ETW_INTYPE_UINT16, .flags = ETW_PROP_COUNT_IN_DATA},
    };
    etw_schema s4 = make_schema(p4, 1, 1);
    uint8_t d4[] = {0xff, 0xff, 1, 0, 2};
    n = collect(&s4, d4, sizeof d4, 8, &rem);
    static const expect e4[] = {{AB, "v", 0, 0}, {S, "v", 2, 1}, {U, "v", 1, 1}};
    CHECK_SEQ(n, e4);
    ETW_CHECK_INT(items[0].array_count, 65535);
    /* count in data cut */
    n = collect(&s4, d4, 1, 8, &rem);
    static const expect e5[] = {{U, "v", 1, 0}};
    CHECK_SEQ(n, e5);
}

static void test_depth_limit(void) {
    /* a chain of 40 nested structs, the innermost holding a UINT8 */
    static etw_property props[41];
    for (int i = 0; i < 40; i++) {
        props[i].name = "s";
        props[i].flags = ETW_PROP_STRUCT;
        props[i].struct_first = (uint16_t)(i + 1);
        props[i].struct_count = 1;
    }
    props[40].name = "leaf";
    props[40].in_type = ETW_INTYPE_UINT8;
    etw_schema s = make_schema(props, 41, 1);
    uint8_t payload[3] = {1, 2, 3};
    uint32_t rem;
    int n = collect(&s, payload, 3, 8, &rem);
    /* 32 STRUCT_BEGIN (depths 0..31), then the 33rd struct is UNSUPPORTED,
     * and the enumeration ends */
    ETW_CHECK_INT(n, ETW_DECODE_MAX_DEPTH + 1);
    ETW_CHECK_INT(items[ETW_DECODE_MAX_DEPTH - 1].kind, ETW_VALUE_STRUCT_BEGIN);
    ETW_CHECK_INT(items[ETW_DECODE_MAX_DEPTH - 1].depth, ETW_DECODE_MAX_DEPTH - 1);
    ETW_CHECK_INT(items[ETW_DECODE_MAX_DEPTH].kind, ETW_VALUE_UNSUPPORTED);
    ETW_CHECK_INT(items[ETW_DECODE_MAX_DEPTH].size, 3);
    ETW_CHECK_STR(etw_intype_name(items[ETW_DECODE_MAX_DEPTH].in_type), "STRUCT");

    /* 31 levels: the leaf decodes at depth 31 */
    s.props = props + 9;
    for (int i = 0; i < 41; i++) {
        if (props[i].flags) props[i].struct_first = (uint16_t)(i + 1 - 9);
    }
    s.prop_count = 32;
    n = collect(&s, payload, 3, 8, &rem);
    ETW_CHECK_INT(n, 31 * 2 + 1);
    ETW_CHECK_INT(items[31].kind, ETW_VALUE_SCALAR);
    ETW_CHECK_INT(items[31].depth, 31);
    ETW_CHECK_INT(rem, 2);
}

static void test_defensive_indexes(void) {
    /* indexes beyond prop_count (a schema that skipped the cache checks) */
    static const etw_property props[] = {
        PS("s", 0, 200, 5),
        {.name = "a", .in_type = ETW_INTYPE_UINT8, .flags = ETW_PROP_COUNT_REF, .count = 77},
        {.name = "b", .in_type = ETW_INTYPE_UNICODESTRING, .flags = ETW_PROP_LENGTH_REF, .length = 300},
        PS("t", 0, 2, 60000),
    };
    etw_schema s = make_schema(props, 3, 3);
    uint8_t payload[4] = {1, 2, 3, 4};
    uint32_t rem;
    int n = collect(&s, payload, 4, 8, &rem);
    static const expect e[] = {{SB, "s", 0, 0}, {SE, "s", 0, 0}, {U, "a", 4, 0}};
    CHECK_SEQ(n, e);
    etw_schema s2 = make_schema(props, 4, 60000);
    s2.top_count = 60000; /* clamped to prop_count */
    n = collect(&s2, payload, 4, 8, &rem);
    ETW_CHECK_INT(n, 3);
    etw_schema s3 = make_schema(props + 2, 2, 1);
    n = collect(&s3, payload, 4, 8, &rem);
    static const expect e3[] = {{U, "b", 4, 0}};
    CHECK_SEQ(n, e3);
    /* the struct t with members 2.. (itself included would loop without the
     * depth bound; its count is clamped to prop_count - 2) */
    etw_property p4[4];
    memcpy(p4, props, sizeof p4);
    p4[3].struct_first = 3;
    etw_schema s4 = make_schema(p4, 4, 4);
    p4[0].struct_first = 3; /* s holds t, which holds itself */
    p4[0].struct_count = 1;
    p4[1].flags = 0;
    p4[2].flags = 0;
    n = collect(&s4, payload, 4, 8, &rem);
    ETW_CHECK(n > 0 && n < 200);
    ETW_CHECK_INT(items[n - 1].kind, ETW_VALUE_UNSUPPORTED);
}

static void test_refs_and_readers(void) {
    static const etw_property props[] = {
        P("i8", ETW_INTYPE_INT8, 0, 0),   P("i16", ETW_INTYPE_INT16, 0, 0),
        P("i32", ETW_INTYPE_INT32, 0, 0), P("i64", ETW_INTYPE_INT64, 0, 0),
        P("f", ETW_INTYPE_FLOAT, 0, 0),   P("d", ETW_INTYPE_DOUBLE, 0, 0),
        P("b", ETW_INTYPE_BOOLEAN, 0, 0), P("w", ETW_INTYPE_UNICODESTRING, 0, 0),
    };
    etw_schema s = make_schema(props, 8, 8);
    buf b = {{0}, 0};
    put8(&b, 0xff);
    put16(&b, 0x8000);
    put32(&b, 0xfffffffe);
    put64(&b, UINT64_C(0x8000000000000000));
    put32(&b, 0x40490fdb); /* pi as float */
    put64(&b, UINT64_C(0x3fb999999999999a)); /* 0.1 */
    put32(&b, 7);
    putw(&b, "x", 1);
    int n = collect(&s, b.b, b.n, 8, NULL);
    ETW_CHECK_INT(n, 8);
    ETW_CHECK_INT(etw_value_i64(&items[0]), -1);
    ETW_CHECK(etw_value_u64(&items[0]) == 0xff);
    ETW_CHECK_INT(etw_value_i64(&items[1]), -32768);
    ETW_CHECK_INT(etw_value_i64(&items[2]), -2);
    ETW_CHECK(etw_value_i64(&items[3]) == INT64_MIN);
    ETW_CHECK(etw_value_double(&items[4]) == (double)3.14159274101257324f);
    ETW_CHECK(etw_value_double(&items[5]) == 0.1);
    ETW_CHECK(etw_value_u64(&items[6]) == 7);
    ETW_CHECK(etw_value_u64(&items[7]) == 0);
    ETW_CHECK(etw_value_double(&items[0]) == 0);
    /* refs hold the integers decoded */
    ETW_CHECK(refs[0] == 0xff);
    ETW_CHECK(refs[2] == 0xfffffffe);
    ETW_CHECK(refs[6] == 7);
}

static void test_begin_args(void) {
    static const etw_property props[] = {P("a", ETW_INTYPE_UINT8, 0, 0)};
    etw_schema s = make_schema(props, 1, 1);
    etw_event ev = make_event("x", 1, 8);
    etw_decode_cursor c;
    etw_value v;
    uint64_t r[1];
    ETW_CHECK_INT(etw_decode_begin(NULL, &s, &ev, r, 1), ETW_E_INVALID_ARG);
    ETW_CHECK_INT(etw_decode_begin(&c, NULL, &ev, r, 1), ETW_E_INVALID_ARG);
    ETW_CHECK_INT(etw_decode_begin(&c, &s, NULL, r, 1), ETW_E_INVALID_ARG);
    ETW_CHECK_INT(etw_decode_begin(&c, &s, &ev, r, 0), ETW_E_INVALID_ARG);
    ETW_CHECK_INT(etw_decode_begin(&c, &s, &ev, NULL, 1), ETW_E_INVALID_ARG);
    ev.user_data = NULL;
    ETW_CHECK_INT(etw_decode_begin(&c, &s, &ev, r, 1), ETW_E_INVALID_ARG);
    ev.user_data_len = 0;
    ETW_CHECK_INT(etw_decode_begin(&c, &s, &ev, r, 1), ETW_OK);
    ETW_CHECK_INT(etw_decode_next(&c, &v), ETW_OK);
    ETW_CHECK_INT(v.kind, ETW_VALUE_UNSUPPORTED);
    ETW_CHECK_INT(v.size, 0);
    ETW_CHECK_INT(etw_decode_next(&c, &v), ETW_END);
    /* no properties */
    etw_schema empty = make_schema(NULL, 0, 0);
    ev = make_event("abc", 3, 8);
    ETW_CHECK_INT(etw_decode_begin(&c, &empty, &ev, NULL, 0), ETW_OK);
    ETW_CHECK_INT(etw_decode_next(&c, &v), ETW_END);
    ETW_CHECK_INT(etw_decode_remaining(&c), 3);
}

static void test_intype_names(void) {
    ETW_CHECK_STR(etw_intype_name(ETW_INTYPE_NULL), "NULL");
    ETW_CHECK_STR(etw_intype_name(ETW_INTYPE_UNICODESTRING), "UNICODESTRING");
    ETW_CHECK_STR(etw_intype_name(ETW_INTYPE_INT32), "INT32");
    ETW_CHECK_STR(etw_intype_name(ETW_INTYPE_HEXINT64), "HEXINT64");
    ETW_CHECK_STR(etw_intype_name(ETW_INTYPE_MANIFEST_COUNTEDBINARY), "MANIFEST_COUNTEDBINARY");
    ETW_CHECK_STR(etw_intype_name(ETW_INTYPE_COUNTEDSTRING), "COUNTEDSTRING");
    ETW_CHECK_STR(etw_intype_name(ETW_INTYPE_WBEMSID), "WBEMSID");
    ETW_CHECK_STR(etw_intype_name(26), "UNKNOWN");
    ETW_CHECK_STR(etw_intype_name(299), "UNKNOWN");
    ETW_CHECK_STR(etw_intype_name(311), "UNKNOWN");
    ETW_CHECK_STR(etw_intype_name(0xffff), "UNKNOWN");
}

int main(void) {
    ETW_RUN(test_fixed_sizes);
    ETW_RUN(test_pointer_sizes);
    ETW_RUN(test_nested_structs);
    ETW_RUN(test_arrays_of_scalars);
    ETW_RUN(test_arrays_of_structs);
    ETW_RUN(test_length_refs);
    ETW_RUN(test_strings);
    ETW_RUN(test_long_utf16);
    ETW_RUN(test_counted);
    ETW_RUN(test_sids);
    ETW_RUN(test_binary_and_unknown);
    ETW_RUN(test_truncation);
    ETW_RUN(test_lying_counts);
    ETW_RUN(test_depth_limit);
    ETW_RUN(test_defensive_indexes);
    ETW_RUN(test_refs_and_readers);
    ETW_RUN(test_begin_args);
    ETW_RUN(test_intype_names);
    return ETW_TEST_DONE();
}
