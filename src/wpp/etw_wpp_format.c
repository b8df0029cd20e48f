/* etw_wpp_format.c - WPP message text (etw_wpp_format.h). */
#include "etw_wpp_format.h"

#include <stdio.h>
#include <string.h>

#include "../common/etw_bytes.h"
#include "../common/etw_utf16.h"
#include "etw_status_names.h"
#include "etw_wpp_types.h"

#define MAX_ARGS (ETW_WPP_LAST_ARG - ETW_WPP_FIRST_ARG + 1u)

/* tracefmt's default prefix (docs: "Trace Message Prefix"). */
static const char DEFAULT_PREFIX[] = "[%9!d!]%8!04X!.%3!04X!::%4!s! [%1!s!]";

static void say(char *why, size_t cap, const etw_wpp_message *m, const etw_wpp_arg *a, const char *what,
                unsigned long need, unsigned long left) {
    if (!why || !cap) return;
    char g[ETW_GUID_STRING_SIZE];
    etw_guid_format(&m->guid, g);
    char detail[96];
    snprintf(detail, sizeof detail, what, need, left);
    snprintf(why, cap, "WPP message %s %u (%s): argument %u (%s, %s) %s", g, m->number, m->tag, a->number, a->name,
             a->type_name, detail);
}

etw_status etw_wpp_locate(const etw_wpp_message *m, const etw_event *ev, uint32_t *off, uint32_t *len,
                          char *why, size_t why_cap) {
    const uint8_t *p = ev->user_data;
    uint32_t n = ev->user_data_len;
    uint32_t pos = 0;
    for (uint16_t i = 0; i < m->argc; i++) {
        const etw_wpp_arg *a = &m->args[i];
        const etw_wpp_type_info *ti = etw_wpp_type_get(a->type);
        uint32_t left = n - pos;
        if (!ti) {
            say(why, why_cap, m, a, "has a type etwdecode does not know%.0lu%.0lu", 0, 0);
            return ETW_E_UNSUPPORTED;
        }
        uint32_t need = ti->size;
        switch (ti->kind) {
        case WPP_K_PTR:
            need = ev->pointer_size == 4 ? 4 : 8;
            break;
        case WPP_K_STR: {
            const uint8_t *z = left ? memchr(p + pos, 0, left) : NULL;
            if (!z) {
                say(why, why_cap, m, a, "is not NUL-terminated in the %lu bytes left%.0lu", left, 0);
                return ETW_E_TRUNCATED;
            }
            need = (uint32_t)(z - (p + pos)) + 1u;
            break;
        }
        case WPP_K_WSTR: {
            uint32_t k = 0;
            while (k + 1 < left && (p[pos + k] | p[pos + k + 1])) k += 2;
            if (k + 1 >= left) {
                say(why, why_cap, m, a, "is not NUL-terminated in the %lu bytes left%.0lu", left, 0);
                return ETW_E_TRUNCATED;
            }
            need = k + 2;
            break;
        }
        case WPP_K_CSTR: case WPP_K_CWSTR: case WPP_K_HEXDUMP:
            if (left < 2) {
                say(why, why_cap, m, a, "needs a 2-byte length, %lu bytes left%.0lu", left, 0);
                return ETW_E_TRUNCATED;
            }
            need = 2u + etw_le16(p + pos);
            break;
        case WPP_K_SID:
            if (left < 8) {
                say(why, why_cap, m, a, "needs %lu bytes, %lu left", 8, left);
                return ETW_E_TRUNCATED;
            }
            need = 8u + 4u * p[pos + 1];
            break;
        default:
            break;
        }
        if (need > left) {
            say(why, why_cap, m, a, "needs %lu bytes, %lu left", need, left);
            return ETW_E_TRUNCATED;
        }
        off[i] = pos;
        len[i] = need;
        pos += need;
    }
    return ETW_OK;
}

/* ---- printf-like conversions, by hand ---- */

typedef struct spec {
    int minus, plus, space, hash, zero;
    int width;     /* -1 none */
    int prec;      /* -1 none */
    char conv;     /* d i u x X o c p s S, or 0: the argument's own text */
} spec;

/* Parse "[flags][width][.prec][length]conv" (n bytes). 0 when it is not
 * one this formatter honours. */
static int parse_spec(const char *s, size_t n, spec *sp) {
    memset(sp, 0, sizeof *sp);
    sp->width = -1;
    sp->prec = -1;
    size_t i = 0;
    for (; i < n; i++) {
        char c = s[i];
        if (c == '-') sp->minus = 1;
        else if (c == '+') sp->plus = 1;
        else if (c == ' ') sp->space = 1;
        else if (c == '#') sp->hash = 1;
        else if (c == '0') sp->zero = 1;
        else break;
    }
    if (i < n && s[i] >= '1' && s[i] <= '9') {
        sp->width = 0;
        while (i < n && s[i] >= '0' && s[i] <= '9') {
            sp->width = sp->width * 10 + (s[i] - '0');
            if (sp->width > (int)ETW_WPP_MAX_WIDTH) return 0;
            i++;
        }
    }
    if (i < n && s[i] == '.') {
        i++;
        sp->prec = 0;
        while (i < n && s[i] >= '0' && s[i] <= '9') {
            sp->prec = sp->prec * 10 + (s[i] - '0');
            if (sp->prec > (int)ETW_WPP_MAX_WIDTH) return 0;
            i++;
        }
    }
    /* length modifiers: the payload's width decides, these are read and ignored */
    for (;;) {
        if (i + 3 <= n && (memcmp(s + i, "I64", 3) == 0 || memcmp(s + i, "I32", 3) == 0)) i += 3;
        else if (i < n && (s[i] == 'I' || s[i] == 'l' || s[i] == 'h' || s[i] == 'w' || s[i] == 'z' ||
                           s[i] == 'L' || s[i] == 'q' || s[i] == 'j' || s[i] == 't'))
            i++;
        else break;
    }
    if (i + 1 != n) return 0;
    switch (s[i]) {
    case 'd': case 'i': case 'u': case 'x': case 'X': case 'o': case 'c': case 'p': case 's': case 'S':
        sp->conv = s[i];
        return 1;
    default:
        return 0;
    }
}

static void pad(etw_text *t, char c, int n) {
    for (int i = 0; i < n; i++) etw_text_putc(t, c);
}

/* UTF-8 characters (lead bytes) in s[0..n). */
static size_t chars_of(const char *s, size_t n) {
    size_t k = 0;
    for (size_t i = 0; i < n; i++) k += ((unsigned char)s[i] & 0xC0u) != 0x80u;
    return k;
}

/* Apply width / precision to the text t[start..]: cut to prec characters,
 * pad to width with spaces. */
static void justify_text(etw_text *t, size_t start, const spec *sp) {
    if (etw_text_status(t) != ETW_OK) return;
    size_t n = t->len - start;
    if (sp->prec >= 0) {
        size_t k = 0, i = 0;
        for (; i < n; i++) {
            if (((unsigned char)t->data[start + i] & 0xC0u) != 0x80u) {
                if (k == (size_t)sp->prec) break;
                k++;
            }
        }
        t->len = start + i;
        n = i;
    }
    size_t chars = chars_of(t->data + start, n);
    if (sp->width < 0 || chars >= (size_t)sp->width) return;
    int fill = sp->width - (int)chars;
    if (sp->minus) {
        pad(t, ' ', fill);
        return;
    }
    /* right-justify: move the text up */
    char *r = etw_text_reserve(t, (size_t)fill);
    if (!r) return;
    memmove(t->data + start + fill, t->data + start, n);
    memset(t->data + start, ' ', (size_t)fill);
    t->len += (size_t)fill;
}

/* raw: the payload's value of `size` bytes. 'd' / 'i' sign-extend it from
 * that width, except an unsigned value narrower than an int, which C's
 * promotion keeps positive (an ItemUChar 200 under %d is 200). */
static void put_int_s(etw_text *t, const spec *sp, uint64_t raw, unsigned size, int ptr_size, int is_signed) {
    uint64_t mask = size >= 8 ? UINT64_MAX : (((uint64_t)1 << (size * 8)) - 1u);
    uint64_t u = raw & mask;
    char conv = sp->conv;
    int neg = 0;
    if (conv == 'c') {
        size_t start = t->len;
        uint8_t b = (uint8_t)u;
        if (b < 0x80) etw_text_putc(t, (char)b);
        else { /* Latin-1 */
            etw_text_putc(t, (char)(0xC0 | (b >> 6)));
            etw_text_putc(t, (char)(0x80 | (b & 0x3F)));
        }
        spec s2 = *sp;
        s2.prec = -1;
        justify_text(t, start, &s2);
        return;
    }
    if ((conv == 'd' || conv == 'i') && (is_signed || size >= 4)) {
        uint64_t sign = (uint64_t)1 << (size * 8 - 1);
        if (u & sign) {
            neg = 1;
            u = (~u + 1u) & mask;
        }
    }
    char digits[32];
    int nd = 0;
    const char *hexd = conv == 'X' || conv == 'p' ? "0123456789ABCDEF" : "0123456789abcdef";
    unsigned base = (conv == 'x' || conv == 'X' || conv == 'p') ? 16u : conv == 'o' ? 8u : 10u;
    uint64_t v = u;
    do {
        digits[nd++] = hexd[v % base];
        v /= base;
    } while (v);
    int prec = sp->prec;
    if (conv == 'p') prec = ptr_size * 2; /* MSVC's %p: all the pointer's digits */
    if (prec == 0 && u == 0 && conv != 'p') nd = 0;
    int zeros = prec > nd ? prec - nd : 0;
    const char *pre = "";
    if (neg) pre = "-";
    else if ((conv == 'd' || conv == 'i') && sp->plus) pre = "+";
    else if ((conv == 'd' || conv == 'i') && sp->space) pre = " ";
    else if (sp->hash && u && conv == 'x') pre = "0x";
    else if (sp->hash && u && conv == 'X') pre = "0X";
    else if (sp->hash && conv == 'o' && zeros == 0 && (nd == 0 || digits[nd - 1] != '0')) pre = "0";
    int body = (int)strlen(pre) + zeros + nd;
    int fill = sp->width > body ? sp->width - body : 0;
    if (!sp->minus && !(sp->zero && prec < 0)) pad(t, ' ', fill);
    etw_text_puts(t, pre);
    if (!sp->minus && sp->zero && prec < 0) pad(t, '0', fill);
    pad(t, '0', zeros);
    while (nd) etw_text_putc(t, digits[--nd]);
    if (sp->minus) pad(t, ' ', fill);
}

static void put_int(etw_text *t, const spec *sp, uint64_t raw, unsigned size, int ptr_size) {
    put_int_s(t, sp, raw, size, ptr_size, 1);
}

static void put_hex32(etw_text *t, uint32_t v) {
    spec sp = {0, 0, 0, 0, 1, 8, -1, 'X'};
    etw_text_puts(t, "0x");
    put_int(t, &sp, v, 4, 8);
}

/* 8-bit text: as it is when valid UTF-8, else each byte as Latin-1. */
static void put_ansi(etw_text *t, const uint8_t *p, size_t n) {
    if (etw_utf8_valid(p, n)) {
        etw_text_put(t, (const char *)p, n);
        return;
    }
    for (size_t i = 0; i < n; i++) {
        if (p[i] < 0x80) etw_text_putc(t, (char)p[i]);
        else {
            etw_text_putc(t, (char)(0xC0 | (p[i] >> 6)));
            etw_text_putc(t, (char)(0x80 | (p[i] & 0x3F)));
        }
    }
}

static void put_utf16(etw_text *t, const uint8_t *p, size_t nbytes) {
    size_t units = nbytes / 2;
    char *o = etw_text_reserve(t, units * 3 + 1);
    if (!o) return;
    size_t w = etw_utf16_to_utf8(p, units, t->data + t->len);
    t->len += w;
}

/* Civil date of a day count from 1970-01-01 (proleptic Gregorian). */
static void civil(int64_t days, int64_t *y, unsigned *mo, unsigned *d) {
    days += 719468;
    int64_t era = (days >= 0 ? days : days - 146096) / 146097;
    unsigned doe = (unsigned)(days - era * 146097);
    unsigned yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
    unsigned doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    unsigned mp = (5 * doy + 2) / 153;
    *d = doy - (153 * mp + 2) / 5 + 1;
    *mo = mp < 10 ? mp + 3 : mp - 9;
    *y = (int64_t)yoe + era * 400 + (*mo <= 2);
}

static void put_dec(etw_text *t, uint64_t v, int width) {
    spec sp = {0, 0, 0, 0, 1, width, -1, 'u'};
    put_int(t, &sp, v, 8, 8);
}

etw_status etw_wpp_time_text(etw_text *t, int64_t ft) {
    if (ft < 0 || ft > INT64_C(2650467743999999999)) return ETW_E_CORRUPT;
    int64_t secs = ft / 10000000 - INT64_C(11644473600);
    unsigned ms = (unsigned)((ft % 10000000) / 10000);
    int64_t days = secs >= 0 ? secs / 86400 : -((-secs + 86399) / 86400);
    int64_t sod = secs - days * 86400;
    int64_t y;
    unsigned mo, d;
    civil(days, &y, &mo, &d);
    put_dec(t, mo, 2);
    etw_text_putc(t, '/');
    put_dec(t, d, 2);
    etw_text_putc(t, '/');
    put_dec(t, (uint64_t)y, 4);
    etw_text_putc(t, '-');
    put_dec(t, (uint64_t)(sod / 3600), 2);
    etw_text_putc(t, ':');
    put_dec(t, (uint64_t)(sod / 60 % 60), 2);
    etw_text_putc(t, ':');
    put_dec(t, (uint64_t)(sod % 60), 2);
    etw_text_putc(t, '.');
    put_dec(t, ms, 3);
    return ETW_OK;
}

static uint64_t load(const uint8_t *p, unsigned size) {
    switch (size) {
    case 1: return p[0];
    case 2: return etw_le16(p);
    case 4: return etw_le32(p);
    default: return etw_le64(p);
    }
}

/* The argument's own text (conversion 's'). */
static void natural(etw_text *t, const etw_wpp_arg *a, const etw_wpp_type_info *ti, const uint8_t *p,
                    uint32_t n, int ptr_size) {
    spec sp = {0, 0, 0, 0, 0, -1, -1, ti->conv};
    switch (ti->kind) {
    case WPP_K_INT:
        if (sp.conv == 's') sp.conv = ti->is_signed ? 'd' : 'u';
        put_int(t, &sp, load(p, ti->size), ti->size, ptr_size);
        return;
    case WPP_K_PTR:
        sp.conv = 'p';
        put_int(t, &sp, load(p, n), n, (int)n);
        return;
    case WPP_K_DOUBLE: {
        uint64_t bits = etw_le64(p);
        double d;
        memcpy(&d, &bits, sizeof d);
        if (d != d) etw_text_puts(t, "NaN");
        else if (d > 1.7976931348623157e308) etw_text_puts(t, "Infinity");
        else if (d < -1.7976931348623157e308) etw_text_puts(t, "-Infinity");
        else etw_text_double(t, d);
        return;
    }
    case WPP_K_NTSTATUS: case WPP_K_WINERROR: case WPP_K_HRESULT: {
        uint32_t v = etw_le32(p);
        const char *nm = ti->kind == WPP_K_NTSTATUS ? etw_ntstatus_name(v)
                         : ti->kind == WPP_K_WINERROR ? etw_win32_error_name(v)
                                                       : etw_hresult_name(v);
        if (nm) etw_text_puts(t, nm);
        else put_hex32(t, v);
        return;
    }
    case WPP_K_HEX32:
        put_hex32(t, etw_le32(p));
        return;
    case WPP_K_GUID:
        etw_text_guid(t, p);
        return;
    case WPP_K_IPADDR:
        for (int i = 0; i < 4; i++) {
            if (i) etw_text_putc(t, '.');
            etw_text_u64(t, p[i]);
        }
        return;
    case WPP_K_PORT:
        etw_text_u64(t, etw_be16(p));
        return;
    case WPP_K_TIMESTAMP:
        if (etw_wpp_time_text(t, (int64_t)etw_le64(p)) != ETW_OK) etw_text_i64(t, (int64_t)etw_le64(p));
        return;
    case WPP_K_DELTA: { /* 100-ns units as seconds with 7 decimals */
        int64_t v = (int64_t)etw_le64(p);
        uint64_t a64 = v < 0 ? (uint64_t)0 - (uint64_t)v : (uint64_t)v;
        if (v < 0) etw_text_putc(t, '-');
        etw_text_u64(t, a64 / 10000000u);
        etw_text_putc(t, '.');
        put_dec(t, a64 % 10000000u, 7);
        etw_text_puts(t, " s");
        return;
    }
    case WPP_K_LIST: {
        uint64_t v = load(p, ti->size);
        for (uint32_t i = 0; i < a->list_count; i++) {
            if (a->list_values[i] == v) {
                etw_text_puts(t, a->list_names[i]);
                return;
            }
        }
        etw_text_u64(t, v);
        return;
    }
    case WPP_K_SET: {
        uint64_t v = load(p, ti->size), rest = v;
        int any = 0;
        for (uint32_t i = 0; i < a->list_count; i++) {
            uint64_t bit = a->list_values[i];
            if (!bit || (v & bit) != bit) continue;
            if (any) etw_text_putc(t, '|');
            etw_text_puts(t, a->list_names[i]);
            rest &= ~bit;
            any = 1;
        }
        if (rest || !any) {
            if (any) etw_text_putc(t, '|');
            etw_text_hex(t, rest);
        }
        return;
    }
    case WPP_K_ENUM:
        if (ti->conv == 'x') etw_text_hex(t, etw_le32(p));
        else etw_text_u64(t, etw_le32(p));
        return;
    case WPP_K_STR:
        put_ansi(t, p, n - 1);
        return;
    case WPP_K_WSTR:
        put_utf16(t, p, n - 2);
        return;
    case WPP_K_CSTR:
        put_ansi(t, p + 2, n - 2);
        return;
    case WPP_K_CWSTR:
        put_utf16(t, p + 2, n - 2);
        return;
    case WPP_K_HEXDUMP:
        for (uint32_t i = 2; i < n; i++) {
            if (i > 2) etw_text_putc(t, ' ');
            etw_text_bytes_hex(t, p + i, 1);
        }
        return;
    case WPP_K_SID:
        etw_text_sid(t, p, n);
        return;
    case WPP_K_CHAR4:
        put_ansi(t, p, 4);
        return;
    default:
        return;
    }
}

/* Argument text under a conversion. */
static void put_arg(etw_text *t, const spec *sp, const etw_wpp_arg *a, const uint8_t *p, uint32_t n,
                    int ptr_size) {
    const etw_wpp_type_info *ti = etw_wpp_type_get(a->type);
    int integer = ti->kind == WPP_K_INT || ti->kind == WPP_K_PTR || ti->kind == WPP_K_LIST ||
                  ti->kind == WPP_K_SET || ti->kind == WPP_K_ENUM || ti->kind == WPP_K_NTSTATUS ||
                  ti->kind == WPP_K_WINERROR || ti->kind == WPP_K_HRESULT || ti->kind == WPP_K_HEX32 ||
                  ti->kind == WPP_K_PORT || ti->kind == WPP_K_IPADDR;
    if (sp->conv && sp->conv != 's' && sp->conv != 'S' && integer) {
        unsigned size = ti->kind == WPP_K_PTR ? n : ti->size;
        uint64_t v = ti->kind == WPP_K_PORT ? etw_be16(p) : load(p, size);
        put_int_s(t, sp, v, size, ptr_size, ti->kind == WPP_K_INT && ti->is_signed);
        return;
    }
    size_t start = t->len;
    natural(t, a, ti, p, n, ptr_size);
    justify_text(t, start, sp);
}

/* ---- the format string ---- */

typedef struct fmt_ctx {
    const etw_wpp_message *m;
    const etw_event *ev;
    const uint32_t *off, *len;
} fmt_ctx;

static void put_prefix_var(etw_text *t, const fmt_ctx *c, unsigned k, const spec *sp) {
    const etw_event *ev = c->ev;
    size_t start = t->len;
    spec num = *sp;
    if (!num.conv || num.conv == 's' || num.conv == 'S') num.conv = 'u';
    switch (k) {
    case 1: etw_text_puts(t, c->m->component); justify_text(t, start, sp); return;
    case 2: etw_text_puts(t, c->m->tag); justify_text(t, start, sp); return;
    case 4:
        if (etw_wpp_time_text(t, ev->timestamp) != ETW_OK) etw_text_i64(t, ev->timestamp);
        justify_text(t, start, sp);
        return;
    case 3: put_int(t, &num, ev->tid, 4, 8); return;
    case 5: put_int(t, &num, ev->kernel_time, 4, 8); return;
    case 6: put_int(t, &num, ev->user_time, 4, 8); return;
    case 7: put_int(t, &num, 0, 4, 8); return; /* the sequence number is not kept by the reader */
    case 8: put_int(t, &num, ev->pid, 4, 8); return;
    case 9: put_int(t, &num, ev->cpu, 4, 8); return;
    default: return;
    }
}

static const char *extended(const etw_wpp_message *m, const char *name, size_t n, char *buf, size_t cap) {
    if (n == 4 && memcmp(name, "FUNC", 4) == 0) return m->func;
    if (n == 4 && memcmp(name, "FILE", 4) == 0) return m->file;
    if (n == 5 && memcmp(name, "LEVEL", 5) == 0) return m->level;
    if (n == 5 && memcmp(name, "FLAGS", 5) == 0) return m->flags;
    if (n == 8 && memcmp(name, "COMPNAME", 8) == 0) return m->component;
    if (n == 4 && memcmp(name, "LINE", 4) == 0) {
        snprintf(buf, cap, "%u", m->line);
        return buf;
    }
    return NULL;
}

static void format_string(etw_text *t, const fmt_ctx *c, const char *f, size_t fn, int depth) {
    size_t i = 0;
    while (i < fn) {
        const char *pc = memchr(f + i, '%', fn - i);
        size_t lit = pc ? (size_t)(pc - (f + i)) : fn - i;
        etw_text_put(t, f + i, lit);
        i += lit;
        if (i >= fn) break;
        i++; /* the '%' */
        if (i >= fn) {
            etw_text_putc(t, '%');
            break;
        }
        char ch = f[i];
        if (ch >= '0' && ch <= '9') {
            unsigned k = (unsigned)(ch - '0');
            i++;
            if (i < fn && f[i] >= '0' && f[i] <= '9') k = k * 10 + (unsigned)(f[i++] - '0');
            spec sp;
            memset(&sp, 0, sizeof sp);
            sp.width = sp.prec = -1;
            if (i < fn && f[i] == '!') {
                const char *e = memchr(f + i + 1, '!', fn - i - 1);
                if (e && parse_spec(f + i + 1, (size_t)(e - f - i - 1), &sp)) i = (size_t)(e - f) + 1;
                else if (e) {
                    memset(&sp, 0, sizeof sp);
                    sp.width = sp.prec = -1;
                    i = (size_t)(e - f) + 1;
                }
            }
            if (k == 0) {
                if (depth == 0) format_string(t, c, DEFAULT_PREFIX, sizeof DEFAULT_PREFIX - 1, 1);
            } else if (k < ETW_WPP_FIRST_ARG) {
                put_prefix_var(t, c, k, &sp);
            } else if (k - ETW_WPP_FIRST_ARG < c->m->argc && depth == 0) {
                unsigned a = k - ETW_WPP_FIRST_ARG;
                put_arg(t, &sp, &c->m->args[a], c->ev->user_data + c->off[a], c->len[a],
                        c->ev->pointer_size == 4 ? 4 : 8);
            } else { /* no such argument: left as written */
                etw_text_putc(t, '%');
                etw_text_u64(t, k);
            }
            continue;
        }
        if (ch == '!') {
            const char *e = memchr(f + i + 1, '!', fn - i - 1);
            char buf[16];
            const char *v = e ? extended(c->m, f + i + 1, (size_t)(e - f - i - 1), buf, sizeof buf) : NULL;
            if (v) {
                etw_text_puts(t, v);
                i = (size_t)(e - f) + 1;
            } else {
                etw_text_putc(t, '%');
            }
            continue;
        }
        i++;
        if (ch == 'n') etw_text_putc(t, '\n');
        else if (ch == 't') etw_text_putc(t, '\t');
        else if (ch == 'r') etw_text_putc(t, '\r');
        else if (ch == '%') etw_text_putc(t, '%');
        else {
            etw_text_putc(t, '%');
            etw_text_putc(t, ch);
        }
    }
}

etw_status etw_wpp_format_text(etw_text *t, const etw_wpp_message *m, const etw_event *ev, char *why,
                               size_t why_cap) {
    uint32_t off[MAX_ARGS], len[MAX_ARGS];
    if (m->argc > MAX_ARGS) return ETW_E_CORRUPT;
    etw_status st = etw_wpp_locate(m, ev, off, len, why, why_cap);
    if (st != ETW_OK) return st;
    size_t start = t->len;
    fmt_ctx c = {m, ev, off, len};
    format_string(t, &c, m->format, strlen(m->format), 0);
    st = etw_text_status(t);
    if (st != ETW_OK) return st;
    if (t->len - start > ETW_WPP_MAX_OUT) {
        size_t cut = start + ETW_WPP_MAX_OUT;
        while (cut > start && ((unsigned char)t->data[cut] & 0xC0u) == 0x80u) cut--;
        t->len = cut;
        return ETW_E_LIMIT;
    }
    return ETW_OK;
}

etw_status etw_wpp_format(const etw_wpp_message *m, const etw_event *ev, char *out, size_t cap, size_t *len,
                          char *why, size_t why_cap) {
    if (why && why_cap) why[0] = 0;
    if (!m || !ev || !out || !cap) return ETW_E_INVALID_ARG;
    etw_text t;
    etw_text_init(&t, NULL);
    etw_status st = etw_wpp_format_text(&t, m, ev, why, why_cap);
    size_t n = 0;
    if (st == ETW_OK || st == ETW_E_LIMIT) {
        n = t.len;
        if (n >= cap) {
            n = cap - 1;
            while (n && ((unsigned char)t.data[n] & 0xC0u) == 0x80u) n--;
            st = ETW_E_LIMIT;
        }
        if (n) memcpy(out, t.data, n);
    }
    out[n] = 0;
    if (len) *len = n;
    etw_text_free(&t);
    return st;
}
