/* etw_profile_folded.c - the "folded" (collapsed) stack format of Brendan
 * Gregg's stackcollapse scripts, the input of flamegraph.pl, inferno and
 * speedscope: one line per (process, thread, stack), frames root first,
 * separated by ';', then a space and the count:
 *
 *   Test.x64.exe (4120);thread (2468);ntdll.dll!RtlUserThreadStart;...;System.DateTime.GetDatePart(int64) 17
 *
 * The count is the summed weight: an integer when it is integral, else a
 * decimal with at most 6 fractional digits (flamegraph.pl accepts both; no
 * exponent). The format has no escapes, so names are made safe: ';' becomes
 * ':', control characters (C0, DEL) become '?', and bytes that are not
 * UTF-8 become U+FFFD. A sample whose stack never came has only the process
 * and thread frames. Lines come in the order pid, tid, first time.
 */
#include <string.h>

#include "common/etw_alloc.h"
#include "profile/etw_profile_out.h"

/* The length of the well-formed UTF-8 sequence at p (n bytes left), or 0. */
static size_t utf8_seq(const unsigned char *p, size_t n) {
    unsigned c = p[0];
    if (c < 0x80) return 1;
    size_t len;
    unsigned lo = 0x80, hi = 0xBF;
    if (c >= 0xC2 && c <= 0xDF) len = 2;
    else if (c == 0xE0) len = 3, lo = 0xA0;
    else if (c >= 0xE1 && c <= 0xEC) len = 3;
    else if (c == 0xED) len = 3, hi = 0x9F;
    else if (c >= 0xEE && c <= 0xEF) len = 3;
    else if (c == 0xF0) len = 4, lo = 0x90;
    else if (c >= 0xF1 && c <= 0xF3) len = 4;
    else if (c == 0xF4) len = 4, hi = 0x8F;
    else return 0;
    if (n < len) return 0;
    if (p[1] < lo || p[1] > hi) return 0;
    for (size_t i = 2; i < len; i++)
        if (p[i] < 0x80 || p[i] > 0xBF) return 0;
    return len;
}

/* A name made safe for the format (see the top). */
static void put_name(etw_text *t, const char *s, size_t n) {
    const unsigned char *p = (const unsigned char *)s;
    size_t i = 0;
    while (i < n) {
        size_t k = utf8_seq(p + i, n - i);
        if (!k) {
            etw_text_put(t, "\xEF\xBF\xBD", 3);
            i++;
            continue;
        }
        if (k == 1) {
            unsigned char c = p[i];
            etw_text_putc(t, c == ';' ? ':' : (c < 0x20 || c == 0x7F) ? '?' : (char)c);
        } else {
            etw_text_put(t, s + i, k);
        }
        i += k;
    }
}

/* A count: integral, else at most 6 decimals (no exponent, any size; no
 * libm: casts of non-negative values truncate, which is floor). */
static void put_count(etw_text *t, double w) {
    if (!(w >= 0) || w > 1.7e308) w = 0; /* negative, NaN, infinite: nothing */
    if (w >= 18446744073709551616.0) { /* huge: the integer part, digit by digit */
        char d[400];
        size_t n = 0;
        while (w >= 1 && n < sizeof d) {
            double q = w / 10;
            if (q < 18446744073709551616.0) q = (double)(uint64_t)q; /* above 2^53 a double is integral */
            int r = (int)(w - q * 10);
            d[n++] = (char)('0' + (r < 0 ? 0 : r > 9 ? 9 : r));
            w = q;
        }
        while (n) etw_text_putc(t, d[--n]);
        return;
    }
    uint64_t ip = (uint64_t)w;
    uint64_t frac = (uint64_t)((w - (double)ip) * 1e6 + 0.5);
    if (frac >= 1000000) {
        ip++;
        frac -= 1000000;
    }
    etw_text_u64(t, ip);
    if (!frac) return;
    char f[6];
    for (int i = 5; i >= 0; i--) {
        f[i] = (char)('0' + frac % 10);
        frac /= 10;
    }
    int len = 6;
    while (len > 0 && f[len - 1] == '0') len--;
    etw_text_putc(t, '.');
    etw_text_put(t, f, (size_t)len);
}

etw_status etw_profile_write_folded(etw_pout *o) {
    uint32_t *path = etw_calloc(&o->alloc, (size_t)o->max_depth + 1, sizeof *path);
    if (!path) return ETW_E_NOMEM;
    etw_status st = ETW_OK;
    for (size_t i = 0; i < o->nsamples && st == ETW_OK; i++) {
        const etw_profile_sample *s = &o->samples[i].s;
        etw_text *t = &o->t;
        const char *pn;
        size_t pl;
        etw_pout_process(o, s->pid, &pn, &pl);
        put_name(t, pn, pl);
        etw_text_puts(t, " (");
        etw_pout_id(t, s->pid);
        etw_text_puts(t, ");thread (");
        etw_pout_id(t, s->tid);
        etw_text_putc(t, ')');
        size_t n = 0;
        for (uint32_t node = s->stack; node != ETW_STACK_NONE && n <= o->max_depth;
             node = o->parent[node])
            path[n++] = o->node_name[node];
        while (n) {
            uint32_t name = path[--n];
            etw_text_putc(t, ';');
            if (name == ETW_POUT_NONE) {
                etw_text_puts(t, "?");
                continue;
            }
            size_t len;
            const char *str = etw_pout_str(&o->names, name, &len);
            put_name(t, str, len);
        }
        etw_text_putc(t, ' ');
        put_count(t, s->weight);
        etw_text_putc(t, '\n');
        st = etw_pout_flush(o, 0);
    }
    etw_free(&o->alloc, path);
    return st;
}
