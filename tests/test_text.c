/* test_text.c - the text buffer and value formatters (src/format/etw_text.c).
 *
 * Expected times were computed independently with Python's datetime. */
#include "format/etw_text.h"

#include <float.h>
#include <locale.h>
#include <math.h>
#include <stdlib.h>

/* etw_test.h's first comment contains "tests/" "*.c", which -Wall
 * (-Wcomment) turns into an error under -Werror; silence that one warning
 * for the harness only, until the harness is fixed. */
#if defined(__GNUC__) || defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wcomment"
#endif
#include "etw_test.h"
#if defined(__GNUC__) || defined(__clang__)
#pragma GCC diagnostic pop
#endif

/* Runs `calls` on a cleared buffer and compares the text with `expected`. */
#define T_IS(calls, expected)                                                  \
    do {                                                                       \
        etw_text_clear(&t);                                                    \
        calls;                                                                 \
        ETW_CHECK_STR(etw_text_cstr(&t), expected);                            \
        ETW_CHECK_INT(etw_text_status(&t), ETW_OK);                            \
    } while (0)

/* ---- buffer ---- */

static void test_buffer(void)
{
    etw_text t;
    size_t i, cap;
    char *data;

    etw_text_init(&t, NULL);
    ETW_CHECK(t.data == NULL && t.len == 0);
    ETW_CHECK_STR(etw_text_cstr(&t), "");
    ETW_CHECK_INT(etw_text_status(&t), ETW_OK);

    etw_text_put(&t, NULL, 0);
    ETW_CHECK_INT(t.len, 0);
    ETW_CHECK_INT(etw_text_status(&t), ETW_OK);

    etw_text_puts(&t, "abc");
    etw_text_putc(&t, '-');
    etw_text_put(&t, "xyz123", 3);
    etw_text_puts(&t, "");
    ETW_CHECK_INT(t.len, 7);
    ETW_CHECK_STR(etw_text_cstr(&t), "abc-xyz");
    ETW_CHECK(t.len < t.cap);

    /* growth keeps the content */
    etw_text_clear(&t);
    for (i = 0; i < 100000; i++)
        etw_text_putc(&t, (char)('a' + i % 26));
    ETW_CHECK_INT(t.len, 100000);
    ETW_CHECK(t.len < t.cap);
    {
        int ok = 1;
        for (i = 0; i < 100000; i++)
            if (t.data[i] != (char)('a' + i % 26))
                ok = 0;
        ETW_CHECK(ok);
    }
    /* one large put */
    {
        char *big = malloc(1 << 20);
        memset(big, 'q', 1 << 20);
        etw_text_put(&t, big, 1 << 20);
        ETW_CHECK_INT(t.len, 100000 + (1 << 20));
        ETW_CHECK(t.data[100000] == 'q' && t.data[t.len - 1] == 'q');
        free(big);
    }

    /* clear keeps memory: no reallocation when the text fits again */
    data = t.data;
    cap = t.cap;
    etw_text_clear(&t);
    ETW_CHECK_INT(t.len, 0);
    ETW_CHECK_STR(etw_text_cstr(&t), "");
    for (i = 0; i < 1000; i++)
        etw_text_puts(&t, "0123456789");
    ETW_CHECK(t.data == data && t.cap == cap);

    /* reserve + commit */
    etw_text_clear(&t);
    {
        char *o = etw_text_reserve(&t, 5);
        ETW_CHECK(o != NULL);
        if (o) {
            memcpy(o, "hello", 5);
            t.len += 5;
        }
        ETW_CHECK_STR(etw_text_cstr(&t), "hello");
    }

    etw_text_free(&t);
    ETW_CHECK(t.data == NULL && t.len == 0 && t.cap == 0);
    /* reusable after free */
    etw_text_puts(&t, "again");
    ETW_CHECK_STR(etw_text_cstr(&t), "again");
    etw_text_free(&t);
}

/* ---- integers ---- */

static void test_integers(void)
{
    etw_text t;
    char ref[32];
    uint64_t p;
    int ok = 1;

    etw_text_init(&t, NULL);
    T_IS(etw_text_u64(&t, 0), "0");
    T_IS(etw_text_u64(&t, 9), "9");
    T_IS(etw_text_u64(&t, 10), "10");
    T_IS(etw_text_u64(&t, 99), "99");
    T_IS(etw_text_u64(&t, 100), "100");
    T_IS(etw_text_u64(&t, 4294967295u), "4294967295");
    T_IS(etw_text_u64(&t, UINT64_C(12345678901234567890)),
         "12345678901234567890");
    T_IS(etw_text_u64(&t, UINT64_MAX), "18446744073709551615");

    /* every power of ten, and its neighbours */
    for (p = 1;; p *= 10) {
        uint64_t vals[3];
        int k;
        vals[0] = p - 1;
        vals[1] = p;
        vals[2] = p + 1;
        for (k = 0; k < 3; k++) {
            etw_text_clear(&t);
            etw_text_u64(&t, vals[k]);
            snprintf(ref, sizeof ref, "%" PRIu64, vals[k]);
            if (strcmp(etw_text_cstr(&t), ref) != 0)
                ok = 0;
        }
        if (p > UINT64_MAX / 10)
            break;
    }
    ETW_CHECK(ok);
    /* pseudo-random values against printf */
    {
        uint64_t x = UINT64_C(0x9E3779B97F4A7C15);
        int i;
        ok = 1;
        for (i = 0; i < 100000; i++) {
            int64_t s;
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            etw_text_clear(&t);
            etw_text_u64(&t, x >> (i % 64));
            snprintf(ref, sizeof ref, "%" PRIu64, x >> (i % 64));
            if (strcmp(etw_text_cstr(&t), ref) != 0)
                ok = 0;
            s = (int64_t)(x >> (i % 64)) * ((i & 1) ? -1 : 1);
            etw_text_clear(&t);
            etw_text_i64(&t, s);
            snprintf(ref, sizeof ref, "%" PRId64, s);
            if (strcmp(etw_text_cstr(&t), ref) != 0)
                ok = 0;
            etw_text_clear(&t);
            etw_text_hex(&t, x >> (i % 64));
            snprintf(ref, sizeof ref, "0x%" PRIx64, x >> (i % 64));
            if (strcmp(etw_text_cstr(&t), ref) != 0)
                ok = 0;
        }
        ETW_CHECK(ok);
    }

    T_IS(etw_text_i64(&t, 0), "0");
    T_IS(etw_text_i64(&t, -1), "-1");
    T_IS(etw_text_i64(&t, 42), "42");
    T_IS(etw_text_i64(&t, INT64_MAX), "9223372036854775807");
    T_IS(etw_text_i64(&t, INT64_MIN), "-9223372036854775808");
    T_IS(etw_text_i64(&t, INT64_MIN + 1), "-9223372036854775807");

    T_IS(etw_text_hex(&t, 0), "0x0");
    T_IS(etw_text_hex(&t, 0xF), "0xf");
    T_IS(etw_text_hex(&t, 0x10), "0x10");
    T_IS(etw_text_hex(&t, UINT64_C(0x1b0f1000028)), "0x1b0f1000028");
    T_IS(etw_text_hex(&t, UINT64_C(0xFFFFF80001234ABC)), "0xfffff80001234abc");
    T_IS(etw_text_hex(&t, UINT64_MAX), "0xffffffffffffffff");

    T_IS(etw_text_hex16(&t, 0), "0x0000000000000000");
    T_IS(etw_text_hex16(&t, UINT64_C(0x8000000000000000)), "0x8000000000000000");
    T_IS(etw_text_hex16(&t, 0x1234), "0x0000000000001234");
    T_IS(etw_text_hex16(&t, UINT64_MAX), "0xffffffffffffffff");

    /* appends after existing text */
    T_IS((etw_text_puts(&t, "a="), etw_text_u64(&t, 7), etw_text_putc(&t, ','),
          etw_text_i64(&t, -7)),
         "a=7,-7");
    etw_text_free(&t);
}

/* ---- floating point ---- */

/* 1 when s is a JSON number (RFC 8259 grammar). */
static int is_json_number(const char *s)
{
    if (*s == '-')
        s++;
    if (*s == '0')
        s++;
    else if (*s >= '1' && *s <= '9')
        while (*s >= '0' && *s <= '9')
            s++;
    else
        return 0;
    if (*s == '.') {
        s++;
        if (!(*s >= '0' && *s <= '9'))
            return 0;
        while (*s >= '0' && *s <= '9')
            s++;
    }
    if (*s == 'e' || *s == 'E') {
        s++;
        if (*s == '+' || *s == '-')
            s++;
        if (!(*s >= '0' && *s <= '9'))
            return 0;
        while (*s >= '0' && *s <= '9')
            s++;
    }
    return *s == '\0';
}

/* Significant digits of a number text. */
static int sig_digits(const char *s)
{
    int n = 0, started = 0, trailing_zeros = 0;
    for (; *s && *s != 'e'; s++) {
        if (*s < '0' || *s > '9')
            continue;
        if (*s != '0')
            started = 1;
        if (!started)
            continue;
        n++;
        trailing_zeros = *s == '0' ? trailing_zeros + 1 : 0;
    }
    return n - trailing_zeros;
}

static void test_double(void)
{
    etw_text t;
    etw_text_init(&t, NULL);

    T_IS(etw_text_double(&t, 0.0), "0");
    T_IS(etw_text_double(&t, -0.0), "-0");
    T_IS(etw_text_double(&t, 0.1), "0.1");
    T_IS(etw_text_double(&t, 1.5), "1.5");
    T_IS(etw_text_double(&t, -2.5), "-2.5");
    T_IS(etw_text_double(&t, 100.0), "100");
    T_IS(etw_text_double(&t, -42.0), "-42");
    T_IS(etw_text_double(&t, 123.456), "123.456");
    T_IS(etw_text_double(&t, 0.1 + 0.2), "0.30000000000000004");
    T_IS(etw_text_double(&t, 1.0 / 3.0), "0.3333333333333333");
    T_IS(etw_text_double(&t, 1e15), "1e+15");
    T_IS(etw_text_double(&t, 999999999999999.0), "999999999999999");
    T_IS(etw_text_double(&t, 9007199254740992.0), "9007199254740992");
    T_IS(etw_text_double(&t, 9223372036854775808.0), "9.223372036854776e+18");
    T_IS(etw_text_double(&t, 1e21), "1e+21");
    T_IS(etw_text_double(&t, 1e22), "1e+22");
    T_IS(etw_text_double(&t, 1e300), "1e+300");
    T_IS(etw_text_double(&t, 0.0001), "0.0001");
    T_IS(etw_text_double(&t, 1e-5), "1e-5");
    T_IS(etw_text_double(&t, 1e-7), "1e-7");
    T_IS(etw_text_double(&t, 5e-324), "5e-324");
    T_IS(etw_text_double(&t, -1e-320), "-1e-320");
    T_IS(etw_text_double(&t, DBL_MAX), "1.7976931348623157e+308");
    T_IS(etw_text_double(&t, DBL_MIN), "2.2250738585072014e-308");
    T_IS(etw_text_double(&t, NAN), "\"NaN\"");
    T_IS(etw_text_double(&t, -NAN), "\"NaN\"");
    T_IS(etw_text_double(&t, INFINITY), "\"Infinity\"");
    T_IS(etw_text_double(&t, -INFINITY), "\"-Infinity\"");

    /* round trip, JSON syntax and shortness for many bit patterns */
    {
        uint64_t x = UINT64_C(0x2545F4914F6CDD1D);
        int i, ok_rt = 1, ok_json = 1, ok_short = 1;
        for (i = 0; i < 20000; i++) {
            double v, back;
            const char *s;
            char ref[400];
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            memcpy(&v, &x, 8);
            if (i % 4 == 1)
                v = (double)(x >> 11) / 9007199254740992.0 * 1000;
            if (i % 4 == 2)
                v = (double)(int64_t)(x >> 20) / 1000.0;
            if (v != v || v > DBL_MAX || v < -DBL_MAX)
                continue;
            etw_text_clear(&t);
            etw_text_double(&t, v);
            s = etw_text_cstr(&t);
            back = strtod(s, NULL);
            if (back != v || (v == 0 && signbit(v) != signbit(back)))
                ok_rt = 0;
            if (!is_json_number(s))
                ok_json = 0;
            /* no precision below ours round-trips */
            {
                int d = sig_digits(s);
                if (d > 1) {
                    snprintf(ref, sizeof ref, "%.*g", d - 1, v);
                    if (strtod(ref, NULL) == v)
                        ok_short = 0;
                }
            }
        }
        ETW_CHECK(ok_rt);
        ETW_CHECK(ok_json);
        ETW_CHECK(ok_short);
    }
    etw_text_free(&t);
}

static void test_float(void)
{
    etw_text t;
    etw_text_init(&t, NULL);

    T_IS(etw_text_float(&t, 0.0f), "0");
    T_IS(etw_text_float(&t, -0.0f), "-0");
    T_IS(etw_text_float(&t, 3.14f), "3.14");
    T_IS(etw_text_float(&t, 0.1f), "0.1");
    T_IS(etw_text_float(&t, -1.5f), "-1.5");
    T_IS(etw_text_float(&t, 100.0f), "100");
    T_IS(etw_text_float(&t, 1.0f / 3.0f), "0.33333334");
    T_IS(etw_text_float(&t, 16777216.0f), "16777216");
    T_IS(etw_text_float(&t, 1e10f), "1e+10");
    T_IS(etw_text_float(&t, FLT_MAX), "3.4028235e+38");
    T_IS(etw_text_float(&t, FLT_MIN), "1.1754944e-38");
    T_IS(etw_text_float(&t, 1e-45f), "1e-45");
    T_IS(etw_text_float(&t, NAN), "\"NaN\"");
    T_IS(etw_text_float(&t, INFINITY), "\"Infinity\"");
    T_IS(etw_text_float(&t, -INFINITY), "\"-Infinity\"");
    {
        uint32_t x = 0x9E3779B9u;
        int i, ok_rt = 1, ok_json = 1;
        for (i = 0; i < 20000; i++) {
            float v;
            const char *s;
            x ^= x << 13;
            x ^= x >> 17;
            x ^= x << 5;
            memcpy(&v, &x, 4);
            if (v != v || v > FLT_MAX || v < -FLT_MAX)
                continue;
            etw_text_clear(&t);
            etw_text_float(&t, v);
            s = etw_text_cstr(&t);
            if (strtof(s, NULL) != v)
                ok_rt = 0;
            if (!is_json_number(s))
                ok_json = 0;
        }
        ETW_CHECK(ok_rt);
        ETW_CHECK(ok_json);
    }
    etw_text_free(&t);
}

/* With a locale whose decimal point is ',' (when one is installed). */
static void test_locale(void)
{
    static const char *names[] = {"de_DE.UTF-8", "de_DE.utf8", "fr_FR.UTF-8",
                                  "fr_FR.utf8", "de_DE", "fr_FR"};
    etw_text t;
    size_t i;
    const char *found = NULL;
    for (i = 0; i < sizeof names / sizeof names[0] && !found; i++)
        if (setlocale(LC_NUMERIC, names[i]))
            found = names[i];
    if (!found) {
        printf("test_locale: no ',' locale installed, skipped\n");
        return;
    }
    etw_text_init(&t, NULL);
    T_IS(etw_text_double(&t, 1.5), "1.5");
    T_IS(etw_text_double(&t, 0.30000000000000004), "0.30000000000000004");
    T_IS(etw_text_float(&t, 3.14f), "3.14");
    etw_text_free(&t);
    setlocale(LC_NUMERIC, "C");
}

/* ---- bytes, GUIDs ---- */

static void test_bytes_guid(void)
{
    static const uint8_t b[] = {0x00, 0xab, 0xff, 0x10, 0x09};
    /* Windows Kernel: 9e814aad-3204-11d2-9a82-006008a86939 */
    static const uint8_t g[16] = {0xad, 0x4a, 0x81, 0x9e, 0x04, 0x32,
                                  0xd2, 0x11, 0x9a, 0x82, 0x00, 0x60,
                                  0x08, 0xa8, 0x69, 0x39};
    static const uint8_t z[16] = {0};
    static const uint8_t f[16] = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
                                  0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
                                  0xff, 0xff, 0xff, 0xff};
    etw_text t;
    etw_text_init(&t, NULL);
    T_IS(etw_text_bytes_hex(&t, b, 5), "00abff1009");
    T_IS(etw_text_bytes_hex(&t, b, 0), "");
    T_IS(etw_text_bytes_hex(&t, NULL, 0), "");
    T_IS(etw_text_guid(&t, g), "9e814aad-3204-11d2-9a82-006008a86939");
    T_IS(etw_text_guid(&t, z), "00000000-0000-0000-0000-000000000000");
    T_IS(etw_text_guid(&t, f), "ffffffff-ffff-ffff-ffff-ffffffffffff");
    etw_text_free(&t);
}

/* ---- JSON strings ---- */

#define U8(s) etw_text_json_utf8(&t, s, sizeof(s) - 1)
#define U16(s) etw_text_json_utf16le(&t, (const uint8_t *)(s), sizeof(s) - 1)
#define ANSI(s) etw_text_json_ansi(&t, (const uint8_t *)(s), sizeof(s) - 1)
#define FFFD "\xef\xbf\xbd"

/* Reference escaping of one code point < 0x80 or C1, slow and obvious. */
static void ref_escape(char *out, unsigned c)
{
    switch (c) {
    case '"': strcpy(out, "\\\""); break;
    case '\\': strcpy(out, "\\\\"); break;
    case '\b': strcpy(out, "\\b"); break;
    case '\f': strcpy(out, "\\f"); break;
    case '\n': strcpy(out, "\\n"); break;
    case '\r': strcpy(out, "\\r"); break;
    case '\t': strcpy(out, "\\t"); break;
    default:
        if (c < 0x20 || (c >= 0x7f && c < 0xa0))
            snprintf(out, 8, "\\u%04x", c);
        else if (c < 0x80) {
            out[0] = (char)c;
            out[1] = 0;
        } else {
            out[0] = (char)(0xC0 | (c >> 6));
            out[1] = (char)(0x80 | (c & 0x3F));
            out[2] = 0;
        }
    }
}

static void test_json_utf8(void)
{
    etw_text t;
    etw_text_init(&t, NULL);

    T_IS(U8(""), "\"\"");
    T_IS(etw_text_json_utf8(&t, NULL, 0), "\"\"");
    T_IS(U8("abc"), "\"abc\"");
    T_IS(U8("say \"hi\"\\"), "\"say \\\"hi\\\"\\\\\"");
    T_IS(U8("a\nb\rc\td\be\ff"), "\"a\\nb\\rc\\td\\be\\ff\"");
    T_IS(U8("\x01\x1f\x7f"), "\"\\u0001\\u001f\\u007f\"");
    T_IS(U8("a\0b"), "\"a\\u0000b\"");
    T_IS(U8("C:\\Windows\\System32\\ntdll.dll"),
         "\"C:\\\\Windows\\\\System32\\\\ntdll.dll\"");
    T_IS(U8("/path/"), "\"/path/\"");
    /* valid multi-byte sequences pass through */
    T_IS(U8("caf\xc3\xa9"), "\"caf\xc3\xa9\"");
    T_IS(U8("\xe2\x82\xac"), "\"\xe2\x82\xac\"");             /* U+20AC */
    T_IS(U8("\xf0\x9f\x98\x80"), "\"\xf0\x9f\x98\x80\"");     /* U+1F600 */
    T_IS(U8("\xf4\x8f\xbf\xbf"), "\"\xf4\x8f\xbf\xbf\"");     /* U+10FFFF */
    T_IS(U8("\xed\x9f\xbf"), "\"\xed\x9f\xbf\"");             /* U+D7FF */
    T_IS(U8("\xee\x80\x80"), "\"\xee\x80\x80\"");             /* U+E000 */
    T_IS(U8("\xef\xbb\xbf"), "\"\xef\xbb\xbf\"");             /* BOM kept */
    /* C1 controls escaped */
    T_IS(U8("\xc2\x85\xc2\x9f\xc2\xa0"), "\"\\u0085\\u009f\xc2\xa0\"");
    /* overlong forms */
    T_IS(U8("\xc0\x80"), "\"" FFFD FFFD "\"");
    T_IS(U8("\xc1\xbf"), "\"" FFFD FFFD "\"");
    T_IS(U8("\xe0\x80\xaf"), "\"" FFFD FFFD FFFD "\"");
    T_IS(U8("\xf0\x80\x80\xaf"), "\"" FFFD FFFD FFFD FFFD "\"");
    /* surrogates encoded in UTF-8 (CESU) */
    T_IS(U8("\xed\xa0\x80"), "\"" FFFD FFFD FFFD "\"");
    T_IS(U8("\xed\xa0\xbd\xed\xb8\x80"),
         "\"" FFFD FFFD FFFD FFFD FFFD FFFD "\"");
    /* above U+10FFFF, and bytes never used */
    T_IS(U8("\xf4\x90\x80\x80"), "\"" FFFD FFFD FFFD FFFD "\"");
    T_IS(U8("\xf5\xf8\xfe\xff"), "\"" FFFD FFFD FFFD FFFD "\"");
    /* stray continuation bytes */
    T_IS(U8("a\x80" "b\xbf"), "\"a" FFFD "b" FFFD "\"");
    /* truncated sequences: one U+FFFD per maximal subpart */
    T_IS(U8("\xe2\x82"), "\"" FFFD "\"");
    T_IS(U8("\xe2\x82" "A"), "\"" FFFD "A\"");
    T_IS(U8("\xf0\x9f\x98"), "\"" FFFD "\"");
    T_IS(U8("\xf0\x9f\x98" "\xf0\x9f\x98\x80"), "\"" FFFD "\xf0\x9f\x98\x80\"");
    T_IS(U8("\xc3"), "\"" FFFD "\"");
    T_IS(U8("\xc3\"x"), "\"" FFFD "\\\"x\"");
    T_IS(U8("\xf0"), "\"" FFFD "\"");
    /* long runs mixing the fast path and specials */
    T_IS(U8("0123456789abcdefghij\"klmnopqrstuvwxyz0123456789\xc3\xa9"
            "ABCDEFGHIJKLMNOP\n"),
         "\"0123456789abcdefghij\\\"klmnopqrstuvwxyz0123456789\xc3\xa9"
         "ABCDEFGHIJKLMNOP\\n\"");

    /* every ASCII byte at every position of a 19-byte run, against the
     * reference escaping (exercises the 8-byte fast path boundaries) */
    {
        int ok = 1;
        unsigned c, pos;
        for (c = 0; c < 128; c++) {
            for (pos = 0; pos < 19; pos++) {
                char in[19], expect[64], esc[8];
                memset(in, 'x', sizeof in);
                in[pos] = (char)c;
                ref_escape(esc, c);
                snprintf(expect, sizeof expect, "\"%.*s%s%.*s\"", (int)pos,
                         "xxxxxxxxxxxxxxxxxxx", esc, (int)(18 - pos),
                         "xxxxxxxxxxxxxxxxxxx");
                etw_text_clear(&t);
                etw_text_json_utf8(&t, in, sizeof in);
                if (strcmp(etw_text_cstr(&t), expect) != 0) {
                    ok = 0;
                    fprintf(stderr, "utf8 byte %u at %u: %s\n", c, pos,
                            etw_text_cstr(&t));
                }
            }
        }
        ETW_CHECK(ok);
    }
    etw_text_free(&t);
}

static void test_json_utf16(void)
{
    etw_text t;
    etw_text_init(&t, NULL);

    T_IS(U16(""), "\"\"");
    T_IS(etw_text_json_utf16le(&t, NULL, 0), "\"\"");
    T_IS(U16("A\0"), "\"A\"");
    T_IS(U16("A\0B"), "\"A\""); /* odd byte ignored */
    T_IS(U16("H\0e\0l\0l\0o\0,\0 \0w\0o\0r\0l\0d\0!\0"), "\"Hello, world!\"");
    T_IS(U16("\"\0\\\0\n\0\x01\0\x7f\0"), "\"\\\"\\\\\\n\\u0001\\u007f\"");
    T_IS(U16("\0\0"), "\"\\u0000\"");
    T_IS(U16("\xe9\0"), "\"\xc3\xa9\"");                 /* U+00E9 */
    T_IS(U16("\x85\0\xa0\0"), "\"\\u0085\xc2\xa0\"");     /* C1, NBSP */
    T_IS(U16("\xff\x07"), "\"\xdf\xbf\"");               /* U+07FF */
    T_IS(U16("\x00\x08"), "\"\xe0\xa0\x80\"");           /* U+0800 */
    T_IS(U16("\xac\x20"), "\"\xe2\x82\xac\"");           /* U+20AC */
    T_IS(U16("\xff\xd7"), "\"\xed\x9f\xbf\"");           /* U+D7FF */
    T_IS(U16("\x00\xe0"), "\"\xee\x80\x80\"");           /* U+E000 */
    T_IS(U16("\xff\xff"), "\"\xef\xbf\xbf\"");           /* U+FFFF */
    /* surrogate pairs */
    T_IS(U16("\x3d\xd8\x00\xde"), "\"\xf0\x9f\x98\x80\""); /* U+1F600 */
    T_IS(U16("\x00\xd8\x00\xdc"), "\"\xf0\x90\x80\x80\""); /* U+10000 */
    T_IS(U16("\xff\xdb\xff\xdf"), "\"\xf4\x8f\xbf\xbf\""); /* U+10FFFF */
    T_IS(U16("a\0\x3d\xd8\x00\xde" "b\0"), "\"a\xf0\x9f\x98\x80" "b\"");
    /* lone surrogates */
    T_IS(U16("\x00\xd8"), "\"" FFFD "\"");
    T_IS(U16("\x00\xd8" "A\0"), "\"" FFFD "A\"");
    T_IS(U16("\x00\xdc"), "\"" FFFD "\"");
    T_IS(U16("\x00\xdc\x00\xd8"), "\"" FFFD FFFD "\"");       /* reversed */
    T_IS(U16("\x00\xd8\x00\xd8\x00\xdc"), "\"" FFFD "\xf0\x90\x80\x80\"");
    T_IS(U16("\x3d\xd8\x00"), "\"" FFFD "\""); /* pair cut by odd length */

    /* every BMP non-surrogate unit at every position of a 13-unit run */
    {
        int ok = 1;
        unsigned u, pos;
        for (u = 0; u < 0x10000; u++) {
            char enc[8];
            if (u >= 0xD800 && u < 0xE000)
                continue;
            if (u < 0xA0)
                ref_escape(enc, u);
            else if (u < 0x800) {
                enc[0] = (char)(0xC0 | (u >> 6));
                enc[1] = (char)(0x80 | (u & 0x3F));
                enc[2] = 0;
            } else {
                enc[0] = (char)(0xE0 | (u >> 12));
                enc[1] = (char)(0x80 | ((u >> 6) & 0x3F));
                enc[2] = (char)(0x80 | (u & 0x3F));
                enc[3] = 0;
            }
            for (pos = 0; pos < 13; pos += (u < 0x100 ? 1 : 6)) {
                uint8_t in[26];
                char expect[64];
                unsigned k;
                for (k = 0; k < 13; k++) {
                    in[2 * k] = 'y';
                    in[2 * k + 1] = 0;
                }
                in[2 * pos] = (uint8_t)u;
                in[2 * pos + 1] = (uint8_t)(u >> 8);
                snprintf(expect, sizeof expect, "\"%.*s%s%.*s\"", (int)pos,
                         "yyyyyyyyyyyyy", enc, (int)(12 - pos),
                         "yyyyyyyyyyyyy");
                etw_text_clear(&t);
                etw_text_json_utf16le(&t, in, sizeof in);
                if (strcmp(etw_text_cstr(&t), expect) != 0) {
                    if (ok)
                        fprintf(stderr, "utf16 unit %04x at %u: %s\n", u, pos,
                                etw_text_cstr(&t));
                    ok = 0;
                }
            }
        }
        ETW_CHECK(ok);
    }
    etw_text_free(&t);
}

static void test_json_ansi(void)
{
    etw_text t;
    etw_text_init(&t, NULL);
    T_IS(ANSI(""), "\"\"");
    T_IS(ANSI("plain ascii \"q\""), "\"plain ascii \\\"q\\\"\"");
    T_IS(ANSI("caf\xe9"), "\"caf\xc3\xa9\"");             /* Latin-1 */
    T_IS(ANSI("caf\xc3\xa9"), "\"caf\xc3\xa9\"");         /* valid UTF-8 */
    T_IS(ANSI("\xff\xa0\xc3"), "\"\xc3\xbf\xc2\xa0\xc3\x83\"");
    T_IS(ANSI("\x80\x9f"), "\"\\u0080\\u009f\"");        /* C1 escaped */
    T_IS(ANSI("\xc2\x85"), "\"\\u0085\"");               /* UTF-8 C1 */
    T_IS(ANSI("a\tb\x01"), "\"a\\tb\\u0001\"");
    /* one bad byte makes the whole string Latin-1 */
    T_IS(ANSI("\xe2\x82\xac=\x80"), "\"\xc3\xa2\\u0082\xc2\xac=\\u0080\"");
    T_IS(ANSI("0123456789abcdef\xe9" "0123456789abcdef"),
         "\"0123456789abcdef\xc3\xa9" "0123456789abcdef\"");
    T_IS(ANSI("0123456789abcdef\xf0\x9f\x98\x80" "0123456789abcdef"),
         "\"0123456789abcdef\xf0\x9f\x98\x80" "0123456789abcdef\"");

    ETW_CHECK(etw_utf8_valid((const uint8_t *)"", 0));
    ETW_CHECK(etw_utf8_valid((const uint8_t *)"abc\xc3\xa9", 5));
    ETW_CHECK(!etw_utf8_valid((const uint8_t *)"abcdefghijk\xc3", 12));
    ETW_CHECK(!etw_utf8_valid((const uint8_t *)"\xed\xa0\x80", 3));
    etw_text_free(&t);
}

/* ---- times ---- */

static void test_filetime(void)
{
    static const struct {
        int64_t ft;
        const char *text;
    } cases[] = {
        /* computed with Python: datetime(1601,1,1) + timedelta(...) */
        {INT64_C(0), "1601-01-01T00:00:00.0000000Z"},
        {INT64_C(116444736000000000), "1970-01-01T00:00:00.0000000Z"},
        {INT64_C(129402376472257591), "2011-01-23T06:27:27.2257591Z"},
        {INT64_C(125963012967890123), "2000-02-29T12:34:56.7890123Z"},
        {INT64_C(94405823999999999), "1900-02-28T23:59:59.9999999Z"},
        {INT64_C(94405824000000000), "1900-03-01T00:00:00.0000000Z"},
        {INT64_C(157520159999999999), "2100-02-28T23:59:59.9999999Z"},
        {INT64_C(157520160000000000), "2100-03-01T00:00:00.0000000Z"},
        {INT64_C(315359999999999), "1601-12-31T23:59:59.9999999Z"},
        {INT64_C(315360000000000), "1602-01-01T00:00:00.0000000Z"},
        {INT64_C(997093230000045), "1604-02-29T01:02:03.0000045Z"},
        {INT64_C(2650467743999999999), "9999-12-31T23:59:59.9999999Z"},
        {INT64_C(132756659757912345), "2021-09-09T12:59:35.7912345Z"},
        {INT64_C(1820801989368220983), "7370-11-22T17:02:16.8220983Z"},
        {INT64_C(222681842206352464), "2306-08-27T14:43:40.6352464Z"},
        {INT64_C(434098205243707435), "2976-08-08T11:28:44.3707435Z"},
        {INT64_C(990120612517596917), "4738-07-27T22:20:51.7596917Z"},
        {INT64_C(396361666957758680), "2857-01-07T22:18:15.7758680Z"},
        {INT64_C(1928478689004316506), "7712-02-09T12:28:20.4316506Z"},
    };
    etw_text t;
    size_t i;
    etw_text_init(&t, NULL);
    for (i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        etw_text_clear(&t);
        ETW_CHECK_INT(etw_text_filetime(&t, cases[i].ft), ETW_OK);
        ETW_CHECK_STR(etw_text_cstr(&t), cases[i].text);
    }
    ETW_CHECK_INT(ETW_FILETIME_MAX, INT64_C(2650467743999999999));

    /* out of range: error, nothing written */
    etw_text_clear(&t);
    etw_text_puts(&t, "x");
    ETW_CHECK_INT(etw_text_filetime(&t, -1), ETW_E_CORRUPT);
    ETW_CHECK_INT(etw_text_filetime(&t, ETW_FILETIME_MAX + 1), ETW_E_CORRUPT);
    ETW_CHECK_INT(etw_text_filetime(&t, INT64_MAX), ETW_E_CORRUPT);
    ETW_CHECK_INT(etw_text_filetime(&t, INT64_MIN), ETW_E_CORRUPT);
    ETW_CHECK_STR(etw_text_cstr(&t), "x");
    ETW_CHECK_INT(etw_text_status(&t), ETW_OK);

    /* every day 1601..9999 against a plain day counter (independent of the
     * civil-from-days formula) */
    {
        static const unsigned char md[12] = {31, 28, 31, 30, 31, 30,
                                             31, 31, 30, 31, 30, 31};
        unsigned y = 1601, m = 1, d = 1;
        int64_t day = 0;
        int ok = 1;
        char expect[64];
        while (y <= 9999) {
            unsigned dim;
            int64_t ft = day * INT64_C(864000000000) +
                         (day % 86400) * INT64_C(10000000) + day % 10000000;
            unsigned sod = (unsigned)(day % 86400);
            snprintf(expect, sizeof expect,
                     "%04u-%02u-%02uT%02u:%02u:%02u.%07uZ", y, m, d,
                     sod / 3600, sod / 60 % 60, sod % 60,
                     (unsigned)(day % 10000000));
            etw_text_clear(&t);
            if (etw_text_filetime(&t, ft) != ETW_OK ||
                strcmp(etw_text_cstr(&t), expect) != 0) {
                if (ok)
                    fprintf(stderr, "filetime day %lld: %s, expected %s\n",
                            (long long)day, etw_text_cstr(&t), expect);
                ok = 0;
            }
            day++;
            dim = md[m - 1];
            if (m == 2 && y % 4 == 0 && (y % 100 != 0 || y % 400 == 0))
                dim = 29;
            if (++d > dim) {
                d = 1;
                if (++m > 12) {
                    m = 1;
                    y++;
                }
            }
        }
        ETW_CHECK(ok);
        ETW_CHECK_INT(day, 3067671); /* Python: date(9999,12,31) - date(1601,1,1) + 1 */
    }
    etw_text_free(&t);
}

static void test_systemtime(void)
{
    etw_text t;
    etw_text_init(&t, NULL);
#define ST(y, mo, d, h, mi, s, ms)                                             \
    {                                                                          \
        (uint16_t)(y), (uint16_t)(mo), 0, (uint16_t)(d), (uint16_t)(h),        \
            (uint16_t)(mi), (uint16_t)(s), (uint16_t)(ms)                      \
    }
#define ST_OK(y, mo, d, h, mi, s, ms, text)                                    \
    do {                                                                       \
        const uint16_t st_[8] = ST(y, mo, d, h, mi, s, ms);                    \
        etw_text_clear(&t);                                                    \
        ETW_CHECK_INT(etw_text_systemtime(&t, st_), ETW_OK);                   \
        ETW_CHECK_STR(etw_text_cstr(&t), text);                                \
    } while (0)
#define ST_BAD(y, mo, d, h, mi, s, ms)                                         \
    do {                                                                       \
        const uint16_t st_[8] = ST(y, mo, d, h, mi, s, ms);                    \
        etw_text_clear(&t);                                                    \
        etw_text_putc(&t, '#');                                                \
        ETW_CHECK_INT(etw_text_systemtime(&t, st_), ETW_E_CORRUPT);            \
        ETW_CHECK_STR(etw_text_cstr(&t), "#");                                 \
    } while (0)

    ST_OK(2011, 1, 23, 22, 7, 27, 225, "2011-01-23T22:07:27.2250000Z");
    ST_OK(1601, 1, 1, 0, 0, 0, 0, "1601-01-01T00:00:00.0000000Z");
    ST_OK(2000, 2, 29, 23, 59, 59, 999, "2000-02-29T23:59:59.9990000Z");
    ST_OK(2024, 2, 29, 12, 0, 0, 1, "2024-02-29T12:00:00.0010000Z");
    ST_OK(1900, 2, 28, 0, 0, 0, 0, "1900-02-28T00:00:00.0000000Z");
    ST_OK(2023, 4, 30, 1, 2, 3, 45, "2023-04-30T01:02:03.0450000Z");
    ST_OK(2023, 12, 31, 23, 59, 59, 999, "2023-12-31T23:59:59.9990000Z");
    ST_OK(9999, 12, 31, 23, 59, 59, 999, "9999-12-31T23:59:59.9990000Z");
    ST_OK(10000, 1, 1, 0, 0, 0, 0, "10000-01-01T00:00:00.0000000Z");
    ST_OK(30827, 12, 31, 23, 59, 59, 999, "30827-12-31T23:59:59.9990000Z");
    {
        /* DayOfWeek is ignored */
        const uint16_t st[8] = {2021, 9, 6, 9, 12, 59, 35, 791};
        etw_text_clear(&t);
        ETW_CHECK_INT(etw_text_systemtime(&t, st), ETW_OK);
        ETW_CHECK_STR(etw_text_cstr(&t), "2021-09-09T12:59:35.7910000Z");
    }

    ST_BAD(0, 0, 0, 0, 0, 0, 0); /* all zero */
    ST_BAD(2001, 2, 29, 0, 0, 0, 0);
    ST_BAD(1900, 2, 29, 0, 0, 0, 0);
    ST_BAD(2100, 2, 29, 0, 0, 0, 0);
    ST_BAD(2000, 2, 30, 0, 0, 0, 0);
    ST_BAD(2023, 4, 31, 0, 0, 0, 0);
    ST_BAD(2023, 1, 32, 0, 0, 0, 0);
    ST_BAD(2023, 1, 0, 0, 0, 0, 0);
    ST_BAD(2023, 0, 1, 0, 0, 0, 0);
    ST_BAD(2023, 13, 1, 0, 0, 0, 0);
    ST_BAD(2023, 1, 1, 24, 0, 0, 0);
    ST_BAD(2023, 1, 1, 0, 60, 0, 0);
    ST_BAD(2023, 1, 1, 0, 0, 60, 0);
    ST_BAD(2023, 1, 1, 0, 0, 0, 1000);
    ST_BAD(1600, 12, 31, 0, 0, 0, 0);
    ST_BAD(30828, 1, 1, 0, 0, 0, 0);
    ST_BAD(65535, 65535, 65535, 65535, 65535, 65535, 65535);
    etw_text_free(&t);
}

/* ---- SIDs ---- */

static void test_sid(void)
{
    static const uint8_t system[] = {1, 1, 0, 0, 0, 0, 0, 5, 18, 0, 0, 0};
    static const uint8_t everyone[] = {1, 1, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0};
    static const uint8_t admins[] = {1, 2, 0, 0, 0, 0, 0, 5,
                                     32, 0, 0, 0, 0x20, 0x02, 0, 0};
    /* S-1-5-21-3623811015-3361044348-30300820-1013 */
    static const uint8_t user[] = {
        1,    5,    0,    0,    0,    0,    0,    5,    21,   0,    0,    0,
        0xc7, 0xf7, 0xfe, 0xd7, 0x7c, 0x77, 0x55, 0xc8, 0x94, 0x5a, 0xce, 0x01,
        0xf5, 0x03, 0x00, 0x00};
    static const uint8_t nosub[] = {1, 0, 0, 0, 0, 0, 0, 5};
    static const uint8_t bigauth[] = {1, 1, 0x01, 0x02, 0x03, 0x04, 0x0a, 0xbc,
                                      0xff, 0xff, 0xff, 0xff};
    static const uint8_t auth32[] = {1, 0, 0, 0, 0xff, 0xff, 0xff, 0xff};
    etw_text t;
    etw_text_init(&t, NULL);
    T_IS(etw_text_sid(&t, system, sizeof system), "S-1-5-18");
    T_IS(etw_text_sid(&t, everyone, sizeof everyone), "S-1-1-0");
    T_IS(etw_text_sid(&t, admins, sizeof admins), "S-1-5-32-544");
    T_IS(etw_text_sid(&t, user, sizeof user),
         "S-1-5-21-3623811015-3361044348-30300820-1013");
    T_IS(etw_text_sid(&t, nosub, sizeof nosub), "S-1-5");
    T_IS(etw_text_sid(&t, bigauth, sizeof bigauth),
         "S-1-0x010203040ABC-4294967295");
    T_IS(etw_text_sid(&t, auth32, sizeof auth32), "S-1-4294967295");
    /* defensive: count larger than the bytes given */
    T_IS(etw_text_sid(&t, user, 20), "S-1-5-21-3623811015-3361044348");
    T_IS(etw_text_sid(&t, user, 7), "");
    etw_text_free(&t);
}

/* ---- allocation failure ---- */

typedef struct {
    int left;  /* allocations that still succeed */
    int count; /* allocations made */
    int live;  /* blocks not freed */
} budget;

static void *budget_alloc(void *ctx, size_t n)
{
    budget *b = ctx;
    void *p;
    if (b->left <= 0)
        return NULL;
    p = malloc(n);
    if (p) {
        b->left--;
        b->count++;
        b->live++;
    }
    return p;
}

static void budget_free(void *ctx, void *p)
{
    budget *b = ctx;
    if (p)
        b->live--;
    free(p);
}

static void test_nomem(void)
{
    static const uint8_t g[16] = {1};
    static const uint8_t sid[] = {1, 1, 0, 0, 0, 0, 0, 5, 18, 0, 0, 0};
    static const uint16_t st[8] = {2000, 1, 0, 1, 0, 0, 0, 0};
    budget b = {0, 0, 0};
    etw_allocator a;
    etw_text t;
    size_t len;
    int i;

    a.alloc = budget_alloc;
    a.free = budget_free;
    a.ctx = &b;

    /* an allocator that always fails */
    etw_text_init(&t, &a);
    etw_text_putc(&t, 'x');
    ETW_CHECK_INT(etw_text_status(&t), ETW_E_NOMEM);
    ETW_CHECK_INT(t.len, 0);
    ETW_CHECK_STR(etw_text_cstr(&t), "");
    etw_text_puts(&t, "more");
    etw_text_u64(&t, 1);
    etw_text_json_utf8(&t, "abc", 3);
    ETW_CHECK_INT(t.len, 0);
    ETW_CHECK_INT(etw_text_status(&t), ETW_E_NOMEM);
    etw_text_free(&t);

    /* fails on the second growth: the text stops where it was */
    b.left = 1;
    etw_text_init(&t, &a);
    for (i = 0; i < 1000; i++)
        etw_text_puts(&t, "0123456789");
    ETW_CHECK_INT(etw_text_status(&t), ETW_E_NOMEM);
    ETW_CHECK_INT(b.count, 1);
    len = t.len;
    ETW_CHECK(len > 0 && len < 10000);
    ETW_CHECK(len % 10 == 0);
    /* every writer does nothing now, even small ones that would fit */
    etw_text_putc(&t, 'x');
    etw_text_put(&t, "ab", 2);
    etw_text_puts(&t, "cd");
    etw_text_u64(&t, UINT64_MAX);
    etw_text_i64(&t, INT64_MIN);
    etw_text_hex(&t, 0x1234);
    etw_text_hex16(&t, 0x1234);
    etw_text_double(&t, 0.1);
    etw_text_double(&t, 100.0);
    etw_text_double(&t, NAN);
    etw_text_float(&t, 3.14f);
    etw_text_bytes_hex(&t, g, 16);
    etw_text_guid(&t, g);
    etw_text_json_utf8(&t, "abc", 3);
    etw_text_json_utf16le(&t, (const uint8_t *)"a\0", 2);
    etw_text_json_ansi(&t, (const uint8_t *)"caf\xe9", 4);
    etw_text_filetime(&t, 0);
    etw_text_systemtime(&t, st);
    etw_text_sid(&t, sid, sizeof sid);
    ETW_CHECK(etw_text_reserve(&t, 1) == NULL);
    ETW_CHECK_INT(t.len, len);
    ETW_CHECK_INT(etw_text_status(&t), ETW_E_NOMEM);
    ETW_CHECK(strlen(etw_text_cstr(&t)) == len);

    /* clear recovers; what fits the memory kept needs no allocation */
    etw_text_clear(&t);
    ETW_CHECK_INT(etw_text_status(&t), ETW_OK);
    etw_text_puts(&t, "ok");
    ETW_CHECK_STR(etw_text_cstr(&t), "ok");
    ETW_CHECK_INT(etw_text_status(&t), ETW_OK);
    /* and grows again when the allocator allows it */
    b.left = 100;
    for (i = 0; i < 1000; i++)
        etw_text_puts(&t, "0123456789");
    ETW_CHECK_INT(etw_text_status(&t), ETW_OK);
    ETW_CHECK_INT(t.len, 10002);
    etw_text_free(&t);
    ETW_CHECK_INT(b.live, 0);

    /* a huge request fails cleanly */
    b.left = 100;
    etw_text_init(&t, &a);
    etw_text_puts(&t, "x");
    ETW_CHECK(etw_text_reserve(&t, SIZE_MAX - 1) == NULL);
    ETW_CHECK_INT(etw_text_status(&t), ETW_E_NOMEM);
    etw_text_clear(&t);
    etw_text_json_utf8(&t, "x", SIZE_MAX / 2);
    ETW_CHECK_INT(etw_text_status(&t), ETW_E_NOMEM);
    etw_text_clear(&t);
    etw_text_bytes_hex(&t, g, SIZE_MAX / 2 + 1);
    ETW_CHECK_INT(etw_text_status(&t), ETW_E_NOMEM);
    etw_text_free(&t);
    ETW_CHECK_INT(b.live, 0);

    /* reuse: no allocation once the buffer is large enough */
    b.left = 100;
    b.count = 0;
    etw_text_init(&t, &a);
    for (i = 0; i < 3; i++) {
        int k;
        etw_text_clear(&t);
        for (k = 0; k < 200; k++) {
            etw_text_json_utf8(&t, "some text", 9);
            etw_text_u64(&t, (uint64_t)k);
        }
    }
    {
        int after_first = b.count;
        for (i = 0; i < 100; i++) {
            int k;
            etw_text_clear(&t);
            for (k = 0; k < 200; k++) {
                etw_text_json_utf8(&t, "some text", 9);
                etw_text_u64(&t, (uint64_t)k);
            }
        }
        ETW_CHECK_INT(b.count, after_first);
    }
    etw_text_free(&t);
    ETW_CHECK_INT(b.live, 0);
}

int main(void)
{
    ETW_RUN(test_buffer);
    ETW_RUN(test_integers);
    ETW_RUN(test_double);
    ETW_RUN(test_float);
    ETW_RUN(test_locale);
    ETW_RUN(test_bytes_guid);
    ETW_RUN(test_json_utf8);
    ETW_RUN(test_json_utf16);
    ETW_RUN(test_json_ansi);
    ETW_RUN(test_filetime);
    ETW_RUN(test_systemtime);
    ETW_RUN(test_sid);
    ETW_RUN(test_nomem);
    return ETW_TEST_DONE();
}
