/* etw_text.h - a growable text buffer and the value formatters of the JSON
 * output (the low-level half of the writer: no knowledge of events here).
 *
 * An etw_text is reused across events: etw_text_clear() keeps its memory, so
 * once it has grown to the size of the largest event nothing is allocated
 * any more. Appends that fit are inline (one compare and a copy); the buffer
 * grows by doubling. After an allocation failure the buffer is "failed":
 * every later append does nothing and etw_text_status() says ETW_E_NOMEM,
 * until etw_text_clear() discards the (incomplete) text.
 *
 * Invariant: when data != NULL, len < cap, i.e. there is always room for a
 * terminating NUL after the text (etw_text_cstr() writes it).
 *
 * Value forms follow docs/json-output.md. Unless said otherwise a formatter
 * writes no quotes: the JSON writer adds them where the value is a string
 * (hex numbers, GUIDs, times, SIDs). The etw_text_json_* writers and
 * etw_text_double/float for NaN and infinities write the quotes themselves.
 *
 * Nothing here uses global mutable state, the locale or the time zone.
 */
#ifndef ETWDECODE_ETW_TEXT_H
#define ETWDECODE_ETW_TEXT_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "etwdecode/etw_status.h"
#include "etwdecode/etw_types.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct etw_text {
    char *data;          /* the text (not NUL-terminated: see etw_text_cstr) */
    size_t len;          /* bytes of text */
    size_t cap;          /* usable capacity; len < cap when data != NULL */
    etw_allocator alloc; /* where data comes from */
    int failed;          /* 1 after an allocation failure: appends do nothing */
} etw_text;

/* An empty buffer; allocates nothing yet. alloc NULL = malloc/free. */
void etw_text_init(etw_text *t, const etw_allocator *alloc);
/* Gives the memory back; t is then empty (and may be reused). */
void etw_text_free(etw_text *t);
/* len = 0 and clears the failed state; keeps the memory. */
void etw_text_clear(etw_text *t);
/* ETW_OK, or ETW_E_NOMEM when an append failed since the last clear. */
etw_status etw_text_status(const etw_text *t);
/* The text with a NUL after it (not counted in len); "" when nothing was
 * ever allocated. Valid until the next append. */
const char *etw_text_cstr(etw_text *t);

/* Slow paths of the inline functions below; not for direct use. */
char *etw_text_reserve_slow_(etw_text *t, size_t n);
void etw_text_put_slow_(etw_text *t, const char *s, size_t n);

/* Room for n more bytes at the end of the text: returns where to write them
 * (then add the count written, at most n, to t->len), or NULL when the
 * buffer failed. Lets formatters write in place without per-byte checks. */
inline char *etw_text_reserve(etw_text *t, size_t n)
{
    if (n < t->cap - t->len)
        return t->data + t->len;
    return etw_text_reserve_slow_(t, n);
}

/* Append n bytes (s may be NULL when n is 0). */
inline void etw_text_put(etw_text *t, const char *s, size_t n)
{
    if (n < t->cap - t->len && n != 0) {
        memcpy(t->data + t->len, s, n);
        t->len += n;
    } else {
        etw_text_put_slow_(t, s, n);
    }
}

inline void etw_text_putc(etw_text *t, char c)
{
    if (1 < t->cap - t->len)
        t->data[t->len++] = c;
    else
        etw_text_put_slow_(t, &c, 1);
}

inline void etw_text_puts(etw_text *t, const char *s)
{
    etw_text_put(t, s, strlen(s));
}

/* ---- numbers (no quotes) ---- */

/* Writes the low 7 decimal digits of v, zero-padded, at o[0..7). */
void etw_text_digits7(char *o, uint32_t v);

void etw_text_u64(etw_text *t, uint64_t v);   /* decimal */
void etw_text_i64(etw_text *t, int64_t v);    /* decimal, INT64_MIN correct */
void etw_text_hex(etw_text *t, uint64_t v);   /* "0x1b0f1000028", 0 -> "0x0" */
void etw_text_hex16(etw_text *t, uint64_t v); /* "0x%016llx" (keywords) */
/* Shortest text that strtod turns back into v: "0.1", "100", "1e+21",
 * "5e-324", "-0". Forms are those of printf %g (exponent without leading
 * zeros), always with '.', whatever the locale. NaN and infinities are JSON
 * strings, quotes included: "\"NaN\"", "\"Infinity\"", "\"-Infinity\"". */
void etw_text_double(etw_text *t, double v);
/* Same for a float: shortest text that strtof turns back into v (3.14f ->
 * "3.14"). */
void etw_text_float(etw_text *t, float v);

/* ---- bytes and GUIDs (no quotes) ---- */

/* Lower-case hex, two digits a byte, no 0x. */
void etw_text_bytes_hex(etw_text *t, const uint8_t *p, size_t n);
/* 16 bytes in Windows' layout (Data1..3 little-endian) as
 * "xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx", lower case, no braces. */
void etw_text_guid(etw_text *t, const uint8_t raw16[16]);

/* ---- JSON strings (quotes included) ----
 * Escaping per RFC 8259: '"' and '\\' escaped, \b \f \n \r \t in short form,
 * other control characters - C0 (U+0000..U+001F), DEL (U+007F) and C1
 * (U+0080..U+009F) - as \u00xx. The output is always valid UTF-8. */

/* Text claimed to be UTF-8: each maximal ill-formed subsequence (overlong
 * forms, encoded surrogates, values above U+10FFFF, truncated sequences,
 * stray continuation bytes) becomes one U+FFFD. */
void etw_text_json_utf8(etw_text *t, const char *s, size_t n);
/* UTF-16LE code units; an odd last byte is ignored; unpaired surrogates
 * become U+FFFD; NULs are written (\u0000): the caller cuts strings. */
void etw_text_json_utf16le(etw_text *t, const uint8_t *p, size_t nbytes);
/* The same without the quotes: a piece of a string written in parts. */
void etw_text_json_utf16le_body(etw_text *t, const uint8_t *p, size_t nbytes);
/* 8-bit text: as UTF-8 when it is entirely valid UTF-8, else each byte as
 * the Latin-1 character U+0000..U+00FF. */
void etw_text_json_ansi(etw_text *t, const uint8_t *p, size_t n);
/* 1 when p[0..n) is well-formed UTF-8. */
int etw_utf8_valid(const uint8_t *p, size_t n);

/* ---- times (no quotes) ----
 * RFC 3339 UTC with 7 fractional digits: 2011-01-23T22:07:27.2257591Z. */

/* FILETIME: 100-ns ticks since 1601-01-01 UTC, valid 0 up to the last tick
 * of 9999-12-31 (ETW_FILETIME_MAX). Out of range: ETW_E_CORRUPT, nothing
 * written. (0 gives 1601-01-01T00:00:00.0000000Z; mapping 0 to null is the
 * caller's choice.) */
#define ETW_FILETIME_MAX INT64_C(2650467743999999999)
etw_status etw_text_filetime(etw_text *t, int64_t filetime);
/* SYSTEMTIME {Year, Month, DayOfWeek, Day, Hour, Minute, Second,
 * Milliseconds}, taken as UTC; DayOfWeek is ignored. The fraction is
 * ms * 10000. ETW_E_CORRUPT (nothing written) for an invalid date: month
 * not 1..12, day not 1..days of the month (leap years per the Gregorian
 * rules), hour > 23, minute > 59, second > 59, ms > 999, year outside
 * 1601..30827. Years above 9999 are written with 5 digits. */
etw_status etw_text_systemtime(etw_text *t, const uint16_t st[8]);

/* ---- SIDs (no quotes) ----
 * Binary SID (u8 revision, u8 subauthority count, 6-byte big-endian
 * authority, count u32 little-endian subauthorities) -> "S-1-5-18". An
 * authority >= 2^32 is written 0x%012llX as ConvertSidToStringSid does.
 * The caller guarantees n >= 8 + 4 * count; defensively, subauthorities that
 * do not fit in n are not written, and nothing is written when n < 8. */
void etw_text_sid(etw_text *t, const uint8_t *sid, size_t n);

#ifdef __cplusplus
}
#endif
#endif
