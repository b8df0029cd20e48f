/* etw_text.c - growable text buffer and value formatters (see etw_text.h). */
#include "format/etw_text.h"

#include <float.h>
#include <math.h> /* signbit: a macro, no -lm needed */
#include <stdio.h>
#include <stdlib.h>

/* External definitions of the inline functions of etw_text.h (C11 6.7.4). */
extern inline char *etw_text_reserve(etw_text *t, size_t n);
extern inline void etw_text_put(etw_text *t, const char *s, size_t n);
extern inline void etw_text_putc(etw_text *t, char c);
extern inline void etw_text_puts(etw_text *t, const char *s);

/* SWAR fast paths read 8 bytes at a time; the UTF-16 one needs to know the
 * host byte order (the UTF-8 one does not). */
#if defined(__BYTE_ORDER__) && defined(__ORDER_LITTLE_ENDIAN__) &&            \
    __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
#define ETW_TEXT_LE 1
#elif defined(_M_X64) || defined(_M_IX86) || defined(_M_ARM64) ||            \
    defined(_M_ARM)
#define ETW_TEXT_LE 1
#else
#define ETW_TEXT_LE 0
#endif

/* ------------------------------------------------------------------------ */
/* buffer                                                                   */

static void *default_alloc(void *ctx, size_t size)
{
    (void)ctx;
    return malloc(size ? size : 1);
}

static void default_free(void *ctx, void *ptr)
{
    (void)ctx;
    free(ptr);
}

void etw_text_init(etw_text *t, const etw_allocator *alloc)
{
    t->data = NULL;
    t->len = 0;
    t->cap = 0;
    t->failed = 0;
    if (alloc && alloc->alloc) {
        t->alloc = *alloc;
    } else {
        t->alloc.alloc = default_alloc;
        t->alloc.free = default_free;
        t->alloc.ctx = NULL;
    }
}

void etw_text_free(etw_text *t)
{
    if (t->data && t->alloc.free)
        t->alloc.free(t->alloc.ctx, t->data);
    t->data = NULL;
    t->len = 0;
    t->cap = 0;
    t->failed = 0;
}

void etw_text_clear(etw_text *t)
{
    t->len = 0;
    t->failed = 0;
}

etw_status etw_text_status(const etw_text *t)
{
    return t->failed ? ETW_E_NOMEM : ETW_OK;
}

const char *etw_text_cstr(etw_text *t)
{
    /* len < real allocation size whenever data != NULL (also after a
     * failure, which only lowers cap to len). */
    if (!t->data)
        return "";
    t->data[t->len] = '\0';
    return t->data;
}

/* Marks the buffer failed: cap = len makes every inline fast path miss. */
static char *text_fail(etw_text *t)
{
    t->failed = 1;
    t->cap = t->len;
    return NULL;
}

char *etw_text_reserve_slow_(etw_text *t, size_t n)
{
    size_t need, nc;
    char *nd;

    if (t->failed)
        return NULL;
    if (t->data && n < t->cap - t->len)
        return t->data + t->len;
    if (n > SIZE_MAX - 1 - t->len)
        return text_fail(t);
    need = t->len + n + 1; /* + 1: room for the NUL of etw_text_cstr */
    nc = t->cap >= 64 ? t->cap : 64;
    while (nc < need) {
        if (nc > SIZE_MAX / 2) {
            nc = need;
            break;
        }
        nc *= 2;
    }
    nd = (char *)t->alloc.alloc(t->alloc.ctx, nc);
    if (!nd)
        return text_fail(t);
    if (t->len)
        memcpy(nd, t->data, t->len);
    if (t->data && t->alloc.free)
        t->alloc.free(t->alloc.ctx, t->data);
    t->data = nd;
    t->cap = nc;
    return nd + t->len;
}

void etw_text_put_slow_(etw_text *t, const char *s, size_t n)
{
    char *o;
    if (n == 0)
        return;
    o = etw_text_reserve_slow_(t, n);
    if (!o)
        return;
    memcpy(o, s, n);
    t->len += n;
}

/* ------------------------------------------------------------------------ */
/* integers                                                                 */

static const char digit_pairs[201] = "00010203040506070809"
                                     "10111213141516171819"
                                     "20212223242526272829"
                                     "30313233343536373839"
                                     "40414243444546474849"
                                     "50515253545556575859"
                                     "60616263646566676869"
                                     "70717273747576777879"
                                     "80818283848586878889"
                                     "90919293949596979899";

static const char hex_lower[17] = "0123456789abcdef";
static const char hex_upper[17] = "0123456789ABCDEF";

static const uint64_t pow10_u64[20] = {
    UINT64_C(1),
    UINT64_C(10),
    UINT64_C(100),
    UINT64_C(1000),
    UINT64_C(10000),
    UINT64_C(100000),
    UINT64_C(1000000),
    UINT64_C(10000000),
    UINT64_C(100000000),
    UINT64_C(1000000000),
    UINT64_C(10000000000),
    UINT64_C(100000000000),
    UINT64_C(1000000000000),
    UINT64_C(10000000000000),
    UINT64_C(100000000000000),
    UINT64_C(1000000000000000),
    UINT64_C(10000000000000000),
    UINT64_C(100000000000000000),
    UINT64_C(1000000000000000000),
    UINT64_C(10000000000000000000)};

static unsigned count_digits(uint64_t v)
{
#if defined(__GNUC__) || defined(__clang__)
    /* bit length * log10(2) is the digit count or one less */
    unsigned bits = 64u - (unsigned)__builtin_clzll(v | 1);
    unsigned n = (bits * 1233u) >> 12;
    return n + ((v | 1) >= pow10_u64[n]);
#else
    unsigned n = 1;
    while (n < 20 && v >= pow10_u64[n])
        n++;
    return n;
#endif
}

/* Writes r (< 10^8) as exactly 8 digits at o. */
static void write8(char *o, uint32_t r)
{
    uint32_t a = r / 10000, b = r % 10000;
    memcpy(o, digit_pairs + 2 * (a / 100), 2);
    memcpy(o + 2, digit_pairs + 2 * (a % 100), 2);
    memcpy(o + 4, digit_pairs + 2 * (b / 100), 2);
    memcpy(o + 6, digit_pairs + 2 * (b % 100), 2);
}

void etw_text_digits7(char *o, uint32_t v)
{
    /* the first digit alone, then three pairs */
    uint32_t r = v % 1000000;
    o[0] = (char)('0' + v / 1000000 % 10);
    memcpy(o + 1, digit_pairs + 2 * (r / 10000), 2);
    memcpy(o + 3, digit_pairs + 2 * (r / 100 % 100), 2);
    memcpy(o + 5, digit_pairs + 2 * (r % 100), 2);
}

/* Writes the decimal digits of v ending just before `end`. */
static void write_digits(char *end, uint64_t v)
{
    uint32_t w;
    while (v > UINT32_MAX) { /* 8 digits at a time with one 64-bit divide */
        uint64_t q = v / 100000000;
        end -= 8;
        write8(end, (uint32_t)(v - q * 100000000));
        v = q;
    }
    w = (uint32_t)v;
    while (w >= 100) {
        uint32_t r = w % 100;
        w /= 100;
        end -= 2;
        memcpy(end, digit_pairs + 2 * r, 2);
    }
    if (w >= 10) {
        end -= 2;
        memcpy(end, digit_pairs + 2 * w, 2);
    } else {
        *--end = (char)('0' + w);
    }
}

/* Writes v in decimal at o; returns the end. */
static char *put_u64(char *o, uint64_t v)
{
    unsigned nd = count_digits(v);
    write_digits(o + nd, v);
    return o + nd;
}

void etw_text_u64(etw_text *t, uint64_t v)
{
    char *o = etw_text_reserve(t, 20);
    if (!o)
        return;
    if (v < 10) { /* most descriptor numbers */
        *o = (char)('0' + v);
        t->len++;
        return;
    }
    t->len = (size_t)(put_u64(o, v) - t->data);
}

void etw_text_i64(etw_text *t, int64_t v)
{
    char *o = etw_text_reserve(t, 21);
    uint64_t u = (uint64_t)v;
    if (!o)
        return;
    if (v < 0) {
        *o++ = '-';
        u = 0 - u; /* two's complement magnitude: right for INT64_MIN too */
    }
    t->len = (size_t)(put_u64(o, u) - t->data);
}

void etw_text_hex(etw_text *t, uint64_t v)
{
    char *o = etw_text_reserve(t, 18);
    unsigned nd, i;
    if (!o)
        return;
#if defined(__GNUC__) || defined(__clang__)
    nd = (67u - (unsigned)__builtin_clzll(v | 1)) / 4; /* hex digits of v (1 for 0) */
#else
    uint64_t x;
    nd = 1;
    for (x = v >> 4; x; x >>= 4)
        nd++;
#endif
    o[0] = '0';
    o[1] = 'x';
    for (i = nd; i > 0; i--) {
        o[1 + i] = hex_lower[v & 15];
        v >>= 4;
    }
    t->len += 2 + nd;
}

void etw_text_hex16(etw_text *t, uint64_t v)
{
    char *o = etw_text_reserve(t, 18);
    int i;
    if (!o)
        return;
    o[0] = '0';
    o[1] = 'x';
    for (i = 17; i >= 2; i--) {
        o[i] = hex_lower[v & 15];
        v >>= 4;
    }
    t->len += 18;
}

/* ------------------------------------------------------------------------ */
/* floating point                                                           */

/* Appends printf %g output as a JSON number: the decimal point (whatever
 * the locale made of it: ',' or even a multi-byte character) becomes '.',
 * and leading zeros of the exponent are dropped ("1e-05" -> "1e-5"). */
static void put_g_number(etw_text *t, const char *s, int n)
{
    char *o = etw_text_reserve(t, (size_t)n + 1);
    int i = 0, point = 0;
    if (!o)
        return;
    while (i < n) {
        char c = s[i];
        if ((c >= '0' && c <= '9') || c == '-' || c == '+') {
            *o++ = c;
            i++;
        } else if (c == 'e' || c == 'E') {
            *o++ = 'e';
            i++;
            if (i < n && (s[i] == '-' || s[i] == '+'))
                *o++ = s[i++];
            while (i + 1 < n && s[i] == '0')
                i++;
        } else {
            /* the decimal point: a run of other bytes */
            if (!point)
                *o++ = '.';
            point = 1;
            while (i < n && !((s[i] >= '0' && s[i] <= '9') || s[i] == 'e' ||
                              s[i] == 'E'))
                i++;
        }
    }
    t->len = (size_t)(o - t->data);
}

/* 0 = finite, 1 = NaN, 2 = +Inf, 3 = -Inf; written as quoted strings. */
static int put_nonfinite(etw_text *t, double v)
{
    if (v != v) {
        etw_text_put(t, "\"NaN\"", 5);
        return 1;
    }
    if (v > DBL_MAX) {
        etw_text_put(t, "\"Infinity\"", 10);
        return 1;
    }
    if (v < -DBL_MAX) {
        etw_text_put(t, "\"-Infinity\"", 11);
        return 1;
    }
    return 0;
}

/* Writes 0 or -0 (1 when v is a zero). */
static int put_zero(etw_text *t, double v)
{
    if (v != 0)
        return 0;
    if (signbit(v))
        etw_text_put(t, "-0", 2);
    else
        etw_text_putc(t, '0');
    return 1;
}

void etw_text_double(etw_text *t, double v)
{
    char buf[48];
    double a = v < 0 ? -v : v;
    int p, n = 0;

    if (put_nonfinite(t, v) || put_zero(t, v))
        return;
    /* Integers below 1e15: %.15g would print them as integers as well. */
    if (a < 1e15 && v == (double)(int64_t)v) {
        etw_text_i64(t, (int64_t)v);
        return;
    }
    /* Shortest round trip. For a normal double any decimal of <= 15
     * significant digits that reads back as v is the 15-digit rounding of v
     * (its distance to v, <= 2^-53 |v|, is far below half a 15-digit step),
     * and %g drops trailing zeros: so %.15g, when it round-trips, is the
     * shortest; else 16, else 17 digits (17 always round-trip).
     * Subnormals have fewer bits: try every precision. */
    for (p = a >= DBL_MIN ? 15 : 1; p <= 17; p++) {
        n = snprintf(buf, sizeof buf, "%.*g", p, v);
        if (n <= 0 || n >= (int)sizeof buf)
            return; /* cannot happen for a finite double */
        if (strtod(buf, NULL) == v)
            break;
    }
    put_g_number(t, buf, n);
}

void etw_text_float(etw_text *t, float v)
{
    char buf[48];
    float a = v < 0 ? -v : v;
    int p, n = 0;

    if (put_nonfinite(t, v) || put_zero(t, v))
        return;
    if (a < 1e6f && v == (float)(int32_t)v) {
        etw_text_i64(t, (int64_t)v);
        return;
    }
    /* As for doubles, with 6 digits (2^-24 |v| < half a 6-digit step). */
    for (p = a >= FLT_MIN ? 6 : 1; p <= 9; p++) {
        n = snprintf(buf, sizeof buf, "%.*g", p, (double)v);
        if (n <= 0 || n >= (int)sizeof buf)
            return;
        if (strtof(buf, NULL) == v)
            break;
    }
    put_g_number(t, buf, n);
}

/* ------------------------------------------------------------------------ */
/* bytes, GUIDs                                                             */

void etw_text_bytes_hex(etw_text *t, const uint8_t *p, size_t n)
{
    char *o;
    size_t i;
    if (n == 0)
        return;
    if (n > (SIZE_MAX - 2) / 2) {
        text_fail(t);
        return;
    }
    o = etw_text_reserve(t, 2 * n);
    if (!o)
        return;
    for (i = 0; i < n; i++) {
        o[2 * i] = hex_lower[p[i] >> 4];
        o[2 * i + 1] = hex_lower[p[i] & 15];
    }
    t->len += 2 * n;
}

void etw_text_guid(etw_text *t, const uint8_t raw16[16])
{
    /* byte order of the text: Data1, Data2, Data3 little-endian */
    static const unsigned char order[16] = {3, 2, 1,  0,  5,  4,  7,  6,
                                            8, 9, 10, 11, 12, 13, 14, 15};
    char *o = etw_text_reserve(t, 36);
    int i;
    if (!o)
        return;
    for (i = 0; i < 16; i++) {
        unsigned b = raw16[order[i]];
        if (i == 4 || i == 6 || i == 8 || i == 10)
            *o++ = '-';
        o[0] = hex_lower[b >> 4];
        o[1] = hex_lower[b & 15];
        o += 2;
    }
    t->len += 36;
}

/* ------------------------------------------------------------------------ */
/* JSON strings                                                             */

/* For ASCII: 0 = written as is; else the short escape letter, or 'u' for
 * \u00xx. */
static const unsigned char json_esc[128] = {
    'u', 'u', 'u', 'u', 'u', 'u', 'u', 'u', 'b', 't', 'n', 'u', 'f', 'r', 'u', 'u',
    'u', 'u', 'u', 'u', 'u', 'u', 'u', 'u', 'u', 'u', 'u', 'u', 'u', 'u', 'u', 'u',
    0,   0,   '"', 0,   0,   0,   0,   0,   0,   0,   0,   0,   0,   0,   0,   0,
    0,   0,   0,   0,   0,   0,   0,   0,   0,   0,   0,   0,   0,   0,   0,   0,
    0,   0,   0,   0,   0,   0,   0,   0,   0,   0,   0,   0,   0,   0,   0,   0,
    0,   0,   0,   0,   0,   0,   0,   0,   0,   0,   0,   0,   '\\', 0,  0,   0,
    0,   0,   0,   0,   0,   0,   0,   0,   0,   0,   0,   0,   0,   0,   0,   0,
    0,   0,   0,   0,   0,   0,   0,   0,   0,   0,   0,   0,   0,   0,   0,   'u'};

/* Worst-case output bytes per input byte / code unit: a control character
 * becomes \u00xx (6 bytes). */
#define JSON_WORST 6

/* Escapes code point c (< 0xA0, json_esc nonzero or C1) at o. */
static char *put_escape(char *o, unsigned c)
{
    unsigned e = c < 128 ? json_esc[c] : 'u';
    o[0] = '\\';
    if (e != 'u') {
        o[1] = (char)e;
        return o + 2;
    }
    o[1] = 'u';
    o[2] = '0';
    o[3] = '0';
    o[4] = hex_lower[c >> 4];
    o[5] = hex_lower[c & 15];
    return o + 6;
}

static char *put_fffd(char *o)
{
    o[0] = (char)0xEF;
    o[1] = (char)0xBF;
    o[2] = (char)0xBD;
    return o + 3;
}

#define ONES8 UINT64_C(0x0101010101010101)
#define HIGH8 UINT64_C(0x8080808080808080)

/* Marks the bytes of x that need more than copying (non-ASCII, controls,
 * '"', '\\', DEL): 0 when there are none. The lowest marked byte (bit 7 of
 * it) is exact; bytes above it may be marked wrongly (carries), which is
 * harmless as only the first one is used. */
static uint64_t special8(uint64_t x)
{
    uint64_t q = x ^ (ONES8 * 0x22), b = x ^ (ONES8 * 0x5C);
    uint64_t bad = x | (x + ONES8);                /* >= 0x80, or 0x7F */
    bad |= (x - ONES8 * 0x20) & ~x;                /* < 0x20 */
    bad |= (q - ONES8) & ~q;                       /* == '"' */
    bad |= (b - ONES8) & ~b;                       /* == '\\' */
    return bad & HIGH8;
}

/* Index of the first marked byte (lane) of a nonzero mask, in memory
 * order; `lane` is 8 or 16 bits. */
static unsigned first_marked(uint64_t mask, unsigned lane)
{
#if ETW_TEXT_LE && (defined(__GNUC__) || defined(__clang__))
    return (unsigned)__builtin_ctzll(mask) / lane;
#else
    unsigned i = 0;
#if ETW_TEXT_LE
    while (!((mask >> (i * lane)) & ((UINT64_C(1) << lane) - 1)))
        i++;
#else
    /* big-endian: memory order is from the most significant end */
    while (!((mask >> (64 - (i + 1) * lane)) & ((UINT64_C(1) << lane) - 1)))
        i++;
#endif
    return i;
#endif
}

/* Classifies a sequence starting with a byte >= 0x80 (Unicode 15, table
 * 3-7): k > 0 = a well-formed sequence of k bytes; -k = an ill-formed
 * maximal subpart of k bytes, to be replaced by one U+FFFD. */
static int utf8_seq(const uint8_t *p, const uint8_t *end)
{
    unsigned c = p[0], lo = 0x80, hi = 0xBF;
    size_t need, avail = (size_t)(end - p) - 1, i;

    if (c < 0xC2)
        return -1; /* continuation byte, or C0/C1 (overlong) */
    if (c < 0xE0) {
        need = 1;
    } else if (c < 0xF0) {
        need = 2;
        if (c == 0xE0)
            lo = 0xA0; /* overlong */
        else if (c == 0xED)
            hi = 0x9F; /* surrogates */
    } else if (c < 0xF5) {
        need = 3;
        if (c == 0xF0)
            lo = 0x90; /* overlong */
        else if (c == 0xF4)
            hi = 0x8F; /* > U+10FFFF */
    } else {
        return -1;
    }
    if (avail == 0 || p[1] < lo || p[1] > hi)
        return -1;
    for (i = 2; i <= need; i++)
        if (i > avail || (p[i] & 0xC0) != 0x80)
            return -(int)i;
    return (int)need + 1;
}

int etw_utf8_valid(const uint8_t *p, size_t n)
{
    const uint8_t *end = p + n;
    while (p < end) {
        int k;
        while ((size_t)(end - p) >= 8) {
            uint64_t x;
            memcpy(&x, p, 8);
            if (x & HIGH8)
                break;
            p += 8;
        }
        while (p < end && *p < 0x80)
            p++;
        if (p >= end)
            break;
        k = utf8_seq(p, end);
        if (k < 0)
            return 0;
        p += k;
    }
    return 1;
}

/* Reserves the worst case for n input units plus the two quotes; NULL when
 * the buffer failed. */
static char *json_reserve(etw_text *t, size_t n)
{
    if (n > (SIZE_MAX - 8) / JSON_WORST) {
        if (!t->failed)
            text_fail(t);
        return NULL;
    }
    return etw_text_reserve(t, JSON_WORST * n + 2);
}

/* Copies the run of plain ASCII at *pp (8 bytes at a time, while 8 are
 * left) to *po; stops at the first byte that is not plain or at the last
 * (< 8) bytes. The caller reserved 6 output bytes an input byte, so whole
 * 8-byte stores stay in bounds. */
static void copy_plain8(char **po, const uint8_t **pp, const uint8_t *end)
{
    char *o = *po;
    const uint8_t *p = *pp;
    while ((size_t)(end - p) >= 8) {
        uint64_t x, m;
        memcpy(&x, p, 8);
        m = special8(x);
        memcpy(o, p, 8);
        if (m) {
            unsigned k = first_marked(m, 8);
            o += k;
            p += k;
            break;
        }
        o += 8;
        p += 8;
    }
    *po = o;
    *pp = p;
}

/* The body of a JSON string from (claimed) UTF-8; returns the end. */
static char *json_utf8_body(char *o, const uint8_t *p, const uint8_t *end)
{
    while (p < end) {
        copy_plain8(&o, &p, end);
        /* one by one until a plain ASCII byte: then back to the fast path */
        while (p < end) {
            unsigned c = *p;
            int k;
            if (c < 0x80) {
                p++;
                if (!json_esc[c]) {
                    *o++ = (char)c;
                    break;
                }
                o = put_escape(o, c);
                continue;
            }
            k = utf8_seq(p, end);
            if (k < 0) {
                o = put_fffd(o);
                p += -k;
            } else if (k == 2 && c == 0xC2 && p[1] < 0xA0) {
                o = put_escape(o, p[1]); /* C1 control U+0080..U+009F */
                p += 2;
            } else {
                memcpy(o, p, (size_t)k);
                o += k;
                p += k;
            }
        }
    }
    return o;
}

void etw_text_json_utf8(etw_text *t, const char *s, size_t n)
{
    const uint8_t *p = (const uint8_t *)s;
    char *o = json_reserve(t, n);
    if (!o)
        return;
    *o++ = '"';
    if (n)
        o = json_utf8_body(o, p, p + n);
    *o++ = '"';
    t->len = (size_t)(o - t->data);
}

#if ETW_TEXT_LE
/* Marks the UTF-16LE units of x (4 units, little-endian host) that are not
 * plain ASCII (as special8); the lowest marked unit is exact. */
static uint64_t special4_u16(uint64_t x)
{
    const uint64_t ones = UINT64_C(0x0001000100010001);
    const uint64_t high = UINT64_C(0x0080008000800080);
    uint64_t q = x ^ (ones * 0x22), b = x ^ (ones * 0x5C);
    /* units >= 0x80; below the first such unit bit 7 flags a bad one */
    uint64_t bad = x & UINT64_C(0xFF80FF80FF80FF80);
    bad |= ((x + ones) | (x - ones * 0x20) | (q - ones) | (b - ones)) & high;
    return bad;
}
#endif

/* The body of a JSON string from n UTF-16LE units. */
static char *json_utf16_body(char *o, const uint8_t *p, size_t n)
{
    const uint8_t *end = p + 2 * n;
    while (p < end) {
#if ETW_TEXT_LE
        /* runs of plain ASCII, 4 units at a time (6 output bytes were
         * reserved a unit: the 4-byte store stays in bounds) */
        while ((size_t)(end - p) >= 8) {
            uint64_t x, y, m;
            uint32_t w;
            memcpy(&x, p, 8);
            m = special4_u16(x);
            y = x | (x >> 8); /* bytes a b b c c d d 0 */
            w = (uint32_t)(y & 0xFFFF) | (uint32_t)((y >> 16) & 0xFFFF0000u);
            memcpy(o, &w, 4);
            if (m) {
                unsigned k = first_marked(m, 16);
                o += k;
                p += 2 * k;
                break;
            }
            o += 4;
            p += 8;
        }
#endif
        /* one by one until a plain ASCII unit: then back to the fast path */
        while (p < end) {
            unsigned u = (unsigned)p[0] | (unsigned)p[1] << 8;
            p += 2;
            if (u < 0x80) {
                if (!json_esc[u]) {
                    *o++ = (char)u;
                    break;
                }
                o = put_escape(o, u);
            } else if (u < 0x800) {
                if (u < 0xA0) {
                    o = put_escape(o, u);
                } else {
                    o[0] = (char)(0xC0 | (u >> 6));
                    o[1] = (char)(0x80 | (u & 0x3F));
                    o += 2;
                }
            } else if ((u & 0xF800) != 0xD800) {
                o[0] = (char)(0xE0 | (u >> 12));
                o[1] = (char)(0x80 | ((u >> 6) & 0x3F));
                o[2] = (char)(0x80 | (u & 0x3F));
                o += 3;
            } else if (u < 0xDC00 && p < end && (p[1] & 0xFC) == 0xDC) {
                unsigned lo = (unsigned)p[0] | (unsigned)p[1] << 8;
                uint32_t cp = 0x10000 + (((uint32_t)u - 0xD800) << 10) +
                              (lo - 0xDC00);
                p += 2;
                o[0] = (char)(0xF0 | (cp >> 18));
                o[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
                o[2] = (char)(0x80 | ((cp >> 6) & 0x3F));
                o[3] = (char)(0x80 | (cp & 0x3F));
                o += 4;
            } else {
                o = put_fffd(o); /* lone high or low surrogate */
            }
        }
    }
    return o;
}

void etw_text_json_utf16le(etw_text *t, const uint8_t *p, size_t nbytes)
{
    size_t n = nbytes / 2;
    char *o = json_reserve(t, n);
    if (!o)
        return;
    *o++ = '"';
    if (n)
        o = json_utf16_body(o, p, n);
    *o++ = '"';
    t->len = (size_t)(o - t->data);
}

void etw_text_json_utf16le_body(etw_text *t, const uint8_t *p, size_t nbytes)
{
    size_t n = nbytes / 2;
    if (!n)
        return;
    char *o = json_reserve(t, n);
    if (!o)
        return;
    o = json_utf16_body(o, p, n);
    t->len = (size_t)(o - t->data);
}

/* The body of a JSON string from Latin-1 bytes. */
static char *json_latin1_body(char *o, const uint8_t *p, const uint8_t *end)
{
    while (p < end) {
        copy_plain8(&o, &p, end);
        while (p < end) {
            unsigned c = *p++;
            if (c < 0x80) {
                if (!json_esc[c]) {
                    *o++ = (char)c;
                    break;
                }
                o = put_escape(o, c);
            } else if (c < 0xA0) {
                o = put_escape(o, c);
            } else {
                o[0] = (char)(0xC0 | (c >> 6));
                o[1] = (char)(0x80 | (c & 0x3F));
                o += 2;
            }
        }
    }
    return o;
}

void etw_text_json_ansi(etw_text *t, const uint8_t *p, size_t n)
{
    char *o = json_reserve(t, n);
    if (!o)
        return;
    *o++ = '"';
    if (n) {
        if (etw_utf8_valid(p, n))
            o = json_utf8_body(o, p, p + n);
        else
            o = json_latin1_body(o, p, p + n);
    }
    *o++ = '"';
    t->len = (size_t)(o - t->data);
}

/* ------------------------------------------------------------------------ */
/* times                                                                    */

static char *put2(char *o, unsigned v)
{
    o[0] = digit_pairs[2 * v];
    o[1] = digit_pairs[2 * v + 1];
    return o + 2;
}

/* frac (< 10^7) as exactly 7 digits */
static char *put7(char *o, uint32_t frac)
{
    o[6] = (char)('0' + frac % 10);
    frac /= 10;
    put2(o + 4, frac % 100);
    frac /= 100;
    put2(o + 2, frac % 100);
    put2(o, frac / 100);
    return o + 7;
}

/* YYYY-MM-DDTHH:MM:SS.fffffffZ (5-digit years above 9999). At most 29
 * bytes. */
static void put_datetime(etw_text *t, unsigned y, unsigned mo, unsigned d,
                         unsigned h, unsigned mi, unsigned s, uint32_t frac7)
{
    char *o = etw_text_reserve(t, 32);
    if (!o)
        return;
    if (y >= 10000)
        *o++ = (char)('0' + y / 10000);
    o = put2(o, (y / 100) % 100);
    o = put2(o, y % 100);
    *o++ = '-';
    o = put2(o, mo);
    *o++ = '-';
    o = put2(o, d);
    *o++ = 'T';
    o = put2(o, h);
    *o++ = ':';
    o = put2(o, mi);
    *o++ = ':';
    o = put2(o, s);
    *o++ = '.';
    o = put7(o, frac7);
    *o++ = 'Z';
    t->len = (size_t)(o - t->data);
}

etw_status etw_text_filetime(etw_text *t, int64_t filetime)
{
    int64_t secs, z, era, doe, yoe, doy, mp, y, m, d;
    uint32_t frac, sod;

    if (filetime < 0 || filetime > ETW_FILETIME_MAX)
        return ETW_E_CORRUPT;
    secs = filetime / 10000000;
    frac = (uint32_t)(filetime % 10000000);
    sod = (uint32_t)(secs % 86400);
    /* days since 1970-01-01 (1601-01-01 is 134774 days before), then
     * H. Hinnant's civil_from_days; z >= 0 here, so era >= 0. */
    z = secs / 86400 - 134774 + 719468;
    era = z / 146097;
    doe = z - era * 146097;
    yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
    y = yoe + era * 400;
    doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    mp = (5 * doy + 2) / 153;
    d = doy - (153 * mp + 2) / 5 + 1;
    m = mp < 10 ? mp + 3 : mp - 9;
    y += m <= 2;
    put_datetime(t, (unsigned)y, (unsigned)m, (unsigned)d, sod / 3600,
                 sod / 60 % 60, sod % 60, frac);
    return ETW_OK;
}

etw_status etw_text_systemtime(etw_text *t, const uint16_t st[8])
{
    static const unsigned char mdays[12] = {31, 28, 31, 30, 31, 30,
                                            31, 31, 30, 31, 30, 31};
    unsigned y = st[0], mo = st[1], d = st[3], h = st[4], mi = st[5],
             s = st[6], ms = st[7], dim;

    if (y < 1601 || y > 30827 || mo < 1 || mo > 12 || h > 23 || mi > 59 ||
        s > 59 || ms > 999)
        return ETW_E_CORRUPT;
    dim = mdays[mo - 1];
    if (mo == 2 && y % 4 == 0 && (y % 100 != 0 || y % 400 == 0))
        dim = 29;
    if (d < 1 || d > dim)
        return ETW_E_CORRUPT;
    put_datetime(t, y, mo, d, h, mi, s, (uint32_t)ms * 10000u);
    return ETW_OK;
}

/* ------------------------------------------------------------------------ */
/* SIDs                                                                     */

void etw_text_sid(etw_text *t, const uint8_t *sid, size_t n)
{
    unsigned count, i;
    uint64_t auth = 0;
    char *o;

    if (!sid || n < 8)
        return;
    count = sid[1];
    if (count > (n - 8) / 4)
        count = (unsigned)((n - 8) / 4);
    for (i = 2; i < 8; i++)
        auth = auth << 8 | sid[i];
    /* "S-" rev "-" authority (<= 14) then "-" and <= 10 digits each */
    o = etw_text_reserve(t, 2 + 3 + 1 + 14 + 11 * (size_t)count);
    if (!o)
        return;
    *o++ = 'S';
    *o++ = '-';
    o = put_u64(o, sid[0]);
    *o++ = '-';
    if (auth >> 32) {
        int k;
        *o++ = '0';
        *o++ = 'x';
        for (k = 11; k >= 0; k--)
            *o++ = hex_upper[(auth >> (4 * k)) & 15];
    } else {
        o = put_u64(o, auth);
    }
    for (i = 0; i < count; i++) {
        const uint8_t *q = sid + 8 + 4 * i;
        uint32_t sub = (uint32_t)q[0] | (uint32_t)q[1] << 8 |
                       (uint32_t)q[2] << 16 | (uint32_t)q[3] << 24;
        *o++ = '-';
        o = put_u64(o, sub);
    }
    t->len = (size_t)(o - t->data);
}
