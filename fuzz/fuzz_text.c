/* fuzz_text.c - libFuzzer target for the JSON string writers and the
 * time/number formatters of src/format/etw_text.c.
 *
 * Build: clang -g -O1 -fsanitize=fuzzer,address,undefined -Iinclude -Isrc \
 *            fuzz/fuzz_text.c src/format/etw_text.c -o /tmp/ft
 *
 * Checks: every JSON string is quoted, valid UTF-8 (own validator below),
 * has no raw control character (C0, DEL, C1) and only well-formed escapes;
 * unescaped, it equals an independent reference conversion of the input.
 * Times parse back to the input; numbers read back with strtod/strtoull. */
#include "format/etw_text.h"

#include <stdio.h>
#include <stdlib.h>

#define FUZZ_ASSERT(c)                                                         \
    do {                                                                       \
        if (!(c)) {                                                            \
            fprintf(stderr, "%s:%d: assertion failed: %s\n", __FILE__,         \
                    __LINE__, #c);                                             \
            abort();                                                           \
        }                                                                      \
    } while (0)

/* ---- an independent UTF-8 validator / decoder ---- */

/* Decodes one scalar value at s[0..n); returns its length, 0 if invalid. */
static size_t decode_utf8(const uint8_t *s, size_t n, uint32_t *cp)
{
    uint32_t c;
    size_t len, i;
    if (n == 0)
        return 0;
    if (s[0] < 0x80) {
        *cp = s[0];
        return 1;
    }
    if ((s[0] & 0xE0) == 0xC0) {
        len = 2;
        c = s[0] & 0x1F;
    } else if ((s[0] & 0xF0) == 0xE0) {
        len = 3;
        c = s[0] & 0x0F;
    } else if ((s[0] & 0xF8) == 0xF0) {
        len = 4;
        c = s[0] & 0x07;
    } else {
        return 0;
    }
    if (n < len)
        return 0;
    for (i = 1; i < len; i++) {
        if ((s[i] & 0xC0) != 0x80)
            return 0;
        c = c << 6 | (s[i] & 0x3F);
    }
    if ((len == 2 && c < 0x80) || (len == 3 && c < 0x800) ||
        (len == 4 && c < 0x10000)) /* overlong */
        return 0;
    if (c > 0x10FFFF || (c >= 0xD800 && c <= 0xDFFF))
        return 0;
    *cp = c;
    return len;
}

static int valid_utf8(const uint8_t *s, size_t n)
{
    size_t i = 0;
    while (i < n) {
        uint32_t cp;
        size_t k = decode_utf8(s + i, n - i, &cp);
        if (!k)
            return 0;
        i += k;
    }
    return 1;
}

/* Appends code point cp as UTF-8 to out. */
static size_t put_cp(uint8_t *out, uint32_t cp)
{
    if (cp < 0x80) {
        out[0] = (uint8_t)cp;
        return 1;
    }
    if (cp < 0x800) {
        out[0] = (uint8_t)(0xC0 | cp >> 6);
        out[1] = (uint8_t)(0x80 | (cp & 0x3F));
        return 2;
    }
    if (cp < 0x10000) {
        out[0] = (uint8_t)(0xE0 | cp >> 12);
        out[1] = (uint8_t)(0x80 | ((cp >> 6) & 0x3F));
        out[2] = (uint8_t)(0x80 | (cp & 0x3F));
        return 3;
    }
    out[0] = (uint8_t)(0xF0 | cp >> 18);
    out[1] = (uint8_t)(0x80 | ((cp >> 12) & 0x3F));
    out[2] = (uint8_t)(0x80 | ((cp >> 6) & 0x3F));
    out[3] = (uint8_t)(0x80 | (cp & 0x3F));
    return 4;
}

static int hexval(int c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    return -1; /* the writer uses lower case only */
}

/* Checks a JSON string written by etw_text_json_* and unescapes its body
 * into out (capacity >= n); returns the length. */
static size_t check_json_string(const uint8_t *s, size_t n, uint8_t *out)
{
    size_t i, o = 0;
    FUZZ_ASSERT(n >= 2 && s[0] == '"' && s[n - 1] == '"');
    FUZZ_ASSERT(valid_utf8(s, n));
    for (i = 1; i < n - 1;) {
        uint32_t cp;
        size_t k;
        if (s[i] == '\\') {
            FUZZ_ASSERT(i + 1 < n - 1);
            switch (s[i + 1]) {
            case '"': out[o++] = '"'; i += 2; continue;
            case '\\': out[o++] = '\\'; i += 2; continue;
            case 'b': out[o++] = '\b'; i += 2; continue;
            case 'f': out[o++] = '\f'; i += 2; continue;
            case 'n': out[o++] = '\n'; i += 2; continue;
            case 'r': out[o++] = '\r'; i += 2; continue;
            case 't': out[o++] = '\t'; i += 2; continue;
            case 'u': {
                int h2, h3;
                FUZZ_ASSERT(i + 5 < n - 1);
                FUZZ_ASSERT(s[i + 2] == '0' && s[i + 3] == '0');
                h2 = hexval(s[i + 4]);
                h3 = hexval(s[i + 5]);
                FUZZ_ASSERT(h2 >= 0 && h3 >= 0);
                cp = (uint32_t)(h2 * 16 + h3);
                /* only controls without a short form use \u */
                FUZZ_ASSERT((cp < 0x20 || (cp >= 0x7F && cp < 0xA0)) &&
                            cp != '\b' && cp != '\f' && cp != '\n' &&
                            cp != '\r' && cp != '\t');
                o += put_cp(out + o, cp);
                i += 6;
                continue;
            }
            default:
                FUZZ_ASSERT(!"bad escape");
            }
        }
        k = decode_utf8(s + i, n - 1 - i, &cp);
        FUZZ_ASSERT(k > 0);
        /* no raw control characters, no raw quote */
        FUZZ_ASSERT(cp >= 0x20 && cp != '"' && !(cp >= 0x7F && cp < 0xA0));
        memcpy(out + o, s + i, k);
        o += k;
        i += k;
    }
    return o;
}

/* ---- reference conversions (slow and obvious) ---- */

static size_t ref_utf16(const uint8_t *p, size_t nbytes, uint8_t *out)
{
    size_t n = nbytes / 2, i, o = 0;
    for (i = 0; i < n; i++) {
        uint32_t u = (uint32_t)p[2 * i] | (uint32_t)p[2 * i + 1] << 8;
        if (u >= 0xD800 && u <= 0xDBFF && i + 1 < n) {
            uint32_t l = (uint32_t)p[2 * i + 2] | (uint32_t)p[2 * i + 3] << 8;
            if (l >= 0xDC00 && l <= 0xDFFF) {
                o += put_cp(out + o, 0x10000 + ((u - 0xD800) << 10) +
                                         (l - 0xDC00));
                i++;
                continue;
            }
        }
        if (u >= 0xD800 && u <= 0xDFFF)
            u = 0xFFFD;
        o += put_cp(out + o, u);
    }
    return o;
}

static size_t ref_latin1(const uint8_t *p, size_t n, uint8_t *out)
{
    size_t i, o = 0;
    for (i = 0; i < n; i++)
        o += put_cp(out + o, p[i]);
    return o;
}

/* ---- times ---- */

static unsigned num(const char *s, int n)
{
    unsigned v = 0;
    int i;
    for (i = 0; i < n; i++) {
        FUZZ_ASSERT(s[i] >= '0' && s[i] <= '9');
        v = v * 10 + (unsigned)(s[i] - '0');
    }
    return v;
}

/* H. Hinnant's days_from_civil (the inverse of what the library uses). */
static int64_t days_from_civil(int64_t y, unsigned m, unsigned d)
{
    int64_t era, yoe, doy, doe;
    y -= m <= 2;
    era = (y >= 0 ? y : y - 399) / 400;
    yoe = y - era * 400;
    doy = (153 * (m > 2 ? m - 3 : m + 9) + 2) / 5 + d - 1;
    doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    return era * 146097 + doe - 719468;
}

/* Parses "YYYY[Y]-MM-DDTHH:MM:SS.fffffffZ" into fields. */
static void parse_time(const char *s, size_t n, unsigned f[7])
{
    int yl = n == 29 ? 5 : 4;
    FUZZ_ASSERT(n == 28 || n == 29);
    f[0] = num(s, yl);
    s += yl;
    FUZZ_ASSERT(s[0] == '-' && s[3] == '-' && s[6] == 'T' && s[9] == ':' &&
                s[12] == ':' && s[15] == '.' && s[23] == 'Z');
    f[1] = num(s + 1, 2);
    f[2] = num(s + 4, 2);
    f[3] = num(s + 7, 2);
    f[4] = num(s + 10, 2);
    f[5] = num(s + 13, 2);
    f[6] = num(s + 16, 7);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    etw_text t;
    uint8_t *un, *ref;
    size_t m, r, cap = 6 * size + 16;

    un = malloc(cap);
    ref = malloc(cap);
    if (!un || !ref) {
        free(un);
        free(ref);
        return 0;
    }
    etw_text_init(&t, NULL);

    /* UTF-8: valid input survives unchanged; any output is valid */
    etw_text_clear(&t);
    etw_text_json_utf8(&t, (const char *)data, size);
    FUZZ_ASSERT(etw_text_status(&t) == ETW_OK);
    m = check_json_string((const uint8_t *)t.data, t.len, un);
    FUZZ_ASSERT(etw_utf8_valid(data, size) == valid_utf8(data, size));
    if (valid_utf8(data, size))
        FUZZ_ASSERT(m == size && memcmp(un, data, size) == 0);

    /* UTF-16LE against the reference conversion */
    etw_text_clear(&t);
    etw_text_json_utf16le(&t, data, size);
    FUZZ_ASSERT(etw_text_status(&t) == ETW_OK);
    m = check_json_string((const uint8_t *)t.data, t.len, un);
    r = ref_utf16(data, size, ref);
    FUZZ_ASSERT(m == r && memcmp(un, ref, r) == 0);

    /* ANSI: UTF-8 when valid, else Latin-1 */
    etw_text_clear(&t);
    etw_text_json_ansi(&t, data, size);
    m = check_json_string((const uint8_t *)t.data, t.len, un);
    if (valid_utf8(data, size)) {
        FUZZ_ASSERT(m == size && memcmp(un, data, size) == 0);
    } else {
        r = ref_latin1(data, size, ref);
        FUZZ_ASSERT(m == r && memcmp(un, ref, r) == 0);
    }

    if (size >= 8) {
        int64_t ft;
        uint64_t u = 0;
        double d;
        float f;
        int i;
        for (i = 7; i >= 0; i--)
            u = u << 8 | data[i];
        ft = (int64_t)u;

        /* FILETIME: parses back to the same tick count */
        etw_text_clear(&t);
        if (etw_text_filetime(&t, ft) == ETW_OK) {
            unsigned fl[7];
            int64_t back;
            FUZZ_ASSERT(ft >= 0 && ft <= ETW_FILETIME_MAX);
            parse_time(etw_text_cstr(&t), t.len, fl);
            FUZZ_ASSERT(fl[1] >= 1 && fl[1] <= 12 && fl[2] >= 1 &&
                        fl[2] <= 31 && fl[3] < 24 && fl[4] < 60 && fl[5] < 60);
            back = days_from_civil(fl[0], fl[1], fl[2]) + 134774;
            back = ((back * 24 + fl[3]) * 60 + fl[4]) * 60 + fl[5];
            back = back * 10000000 + fl[6];
            FUZZ_ASSERT(back == ft);
        } else {
            FUZZ_ASSERT(ft < 0 || ft > ETW_FILETIME_MAX);
            FUZZ_ASSERT(t.len == 0);
        }

        /* numbers read back */
        etw_text_clear(&t);
        etw_text_u64(&t, u);
        FUZZ_ASSERT(strtoull(etw_text_cstr(&t), NULL, 10) == u);
        etw_text_clear(&t);
        etw_text_i64(&t, ft);
        FUZZ_ASSERT(strtoll(etw_text_cstr(&t), NULL, 10) == ft);
        etw_text_clear(&t);
        etw_text_hex(&t, u);
        FUZZ_ASSERT(strtoull(etw_text_cstr(&t), NULL, 16) == u);
        etw_text_clear(&t);
        memcpy(&d, &u, 8);
        etw_text_double(&t, d);
        if (d == d && d <= 1.7976931348623157e308 &&
            d >= -1.7976931348623157e308)
            FUZZ_ASSERT(strtod(etw_text_cstr(&t), NULL) == d);
        else
            FUZZ_ASSERT(etw_text_cstr(&t)[0] == '"');
        etw_text_clear(&t);
        memcpy(&f, data, 4);
        etw_text_float(&t, f);
        if (f == f && f <= 3.40282347e38f && f >= -3.40282347e38f)
            FUZZ_ASSERT(strtof(etw_text_cstr(&t), NULL) == f);

        /* SID: "S-" then digits, '-', and 0xHEX for big authorities */
        etw_text_clear(&t);
        etw_text_sid(&t, data, size);
        {
            const char *s = etw_text_cstr(&t);
            FUZZ_ASSERT(s[0] == 'S' && s[1] == '-');
            for (s += 2; *s; s++)
                FUZZ_ASSERT((*s >= '0' && *s <= '9') || *s == '-' ||
                            *s == 'x' || (*s >= 'A' && *s <= 'F'));
        }
    }

    if (size >= 16) {
        uint16_t st[8];
        int i;
        for (i = 0; i < 8; i++)
            st[i] = (uint16_t)(data[2 * i] | data[2 * i + 1] << 8);
        /* independent validity: the day exists when it comes before the
         * first day of the next month in day numbers */
        {
            unsigned y = st[0], mo = st[1], d = st[3];
            int valid = y >= 1601 && y <= 30827 && mo >= 1 && mo <= 12 &&
                        d >= 1 && st[4] <= 23 && st[5] <= 59 && st[6] <= 59 &&
                        st[7] <= 999;
            if (valid) {
                int64_t next = mo == 12 ? days_from_civil(y + 1, 1, 1)
                                        : days_from_civil(y, mo + 1, 1);
                valid = days_from_civil(y, mo, 1) + (d - 1) < next;
            }
            etw_text_clear(&t);
            if (etw_text_systemtime(&t, st) == ETW_OK) {
                unsigned fl[7];
                FUZZ_ASSERT(valid);
                parse_time(etw_text_cstr(&t), t.len, fl);
                FUZZ_ASSERT(fl[0] == y && fl[1] == mo && fl[2] == d &&
                            fl[3] == st[4] && fl[4] == st[5] &&
                            fl[5] == st[6] &&
                            fl[6] == (unsigned)st[7] * 10000u);
            } else {
                FUZZ_ASSERT(!valid);
                FUZZ_ASSERT(t.len == 0);
            }
        }
    }

    etw_text_free(&t);
    free(un);
    free(ref);
    return 0;
}
