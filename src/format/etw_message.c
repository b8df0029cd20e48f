/* etw_message.c - event messages with their inserts filled in (see
 * etw_message.h for the syntax and the choices made). */
#include "format/etw_message.h"

#include <string.h>

#include "common/etw_bytes.h"
#include "format/etw_fields_json.h"

/* ------------------------------------------------------------------------ */
/* plain text of one value                                                  */

static size_t put_utf8(char *o, uint32_t c) {
    if (c < 0x80) {
        o[0] = (char)c;
        return 1;
    }
    if (c < 0x800) {
        o[0] = (char)(0xC0 | (c >> 6));
        o[1] = (char)(0x80 | (c & 0x3F));
        return 2;
    }
    if (c < 0x10000) {
        o[0] = (char)(0xE0 | (c >> 12));
        o[1] = (char)(0x80 | ((c >> 6) & 0x3F));
        o[2] = (char)(0x80 | (c & 0x3F));
        return 3;
    }
    o[0] = (char)(0xF0 | (c >> 18));
    o[1] = (char)(0x80 | ((c >> 12) & 0x3F));
    o[2] = (char)(0x80 | ((c >> 6) & 0x3F));
    o[3] = (char)(0x80 | (c & 0x3F));
    return 4;
}

/* Four hex digits at p (p[0..3] readable): the value, or -1. */
static long hex4(const char *p) {
    long v = 0;
    for (int i = 0; i < 4; i++) {
        char c = p[i];
        int d;
        if (c >= '0' && c <= '9')
            d = c - '0';
        else if (c >= 'a' && c <= 'f')
            d = c - 'a' + 10;
        else if (c >= 'A' && c <= 'F')
            d = c - 'A' + 10;
        else
            return -1;
        v = v * 16 + d;
    }
    return v;
}

/* Decodes the JSON string body d[r..e) in place, writing from w (w <= r):
 * every escape is at least as long as what it stands for, so the write
 * position never passes the read position. Returns the new end. */
static size_t json_unescape(char *d, size_t w, size_t r, size_t e) {
    while (r < e) {
        char c = d[r];
        if (c != '\\' || r + 1 >= e) {
            d[w++] = c;
            r++;
            continue;
        }
        char x = d[r + 1];
        switch (x) {
        case '"':
        case '\\':
        case '/': d[w++] = x; r += 2; continue;
        case 'b': d[w++] = '\b'; r += 2; continue;
        case 'f': d[w++] = '\f'; r += 2; continue;
        case 'n': d[w++] = '\n'; r += 2; continue;
        case 'r': d[w++] = '\r'; r += 2; continue;
        case 't': d[w++] = '\t'; r += 2; continue;
        case 'u': break;
        default: /* not JSON: keep as is (our writers never produce it) */
            d[w++] = c;
            r++;
            continue;
        }
        long u = r + 6 <= e ? hex4(d + r + 2) : -1;
        if (u < 0) {
            d[w++] = c;
            r++;
            continue;
        }
        r += 6;
        uint32_t cp = (uint32_t)u;
        if (cp >= 0xD800 && cp <= 0xDBFF) {
            long lo = (r + 6 <= e && d[r] == '\\' && d[r + 1] == 'u') ? hex4(d + r + 2) : -1;
            if (lo >= 0xDC00 && lo <= 0xDFFF) {
                cp = 0x10000 + ((cp - 0xD800) << 10) + ((uint32_t)lo - 0xDC00);
                r += 6;
            } else {
                cp = 0xFFFD;
            }
        } else if (cp >= 0xDC00 && cp <= 0xDFFF) {
            cp = 0xFFFD;
        }
        /* 6 (or 12) bytes read, at most 3 (or 4) written: no overtaking */
        char buf[4];
        size_t n = put_utf8(buf, cp);
        memcpy(d + w, buf, n);
        w += n;
    }
    return w;
}

etw_status etw_value_text(etw_text *t, const etw_value *v) {
    if (!t || !v) return ETW_E_INVALID_ARG;
    if (v->kind != ETW_VALUE_SCALAR) return ETW_E_UNSUPPORTED;
    size_t start = t->len;
    etw_value_json(t, v);
    if (etw_text_status(t) != ETW_OK) return ETW_E_NOMEM;
    if (t->len >= start + 2 && t->data[start] == '"' && t->data[t->len - 1] == '"')
        t->len = json_unescape(t->data, start, start + 1, t->len - 1);
    return ETW_OK;
}

/* ------------------------------------------------------------------------ */
/* message tokens                                                           */

enum { TK_TEXT, TK_CHAR, TK_END, TK_INSERT };

/* Longest !format! looked for after an insert (bytes between the '!'s). */
#define FMT_MAX 32

typedef struct msg_tok {
    int kind;
    size_t len;      /* bytes of the message the token takes */
    char ch;         /* TK_CHAR: the character written */
    unsigned n;      /* TK_INSERT: 1..99 */
    const char *fmt; /* TK_INSERT: the format between the '!'s, or NULL */
    size_t fmt_len;
} msg_tok;

/* The token at p (p < e). */
static void next_tok(const char *p, const char *e, msg_tok *k) {
    k->fmt = NULL;
    k->fmt_len = 0;
    if (*p != '%') {
        const char *q = memchr(p, '%', (size_t)(e - p));
        k->kind = TK_TEXT;
        k->len = (size_t)((q ? q : e) - p);
        return;
    }
    if (p + 1 >= e) { /* a lone '%' at the end */
        k->kind = TK_CHAR;
        k->ch = '%';
        k->len = 1;
        return;
    }
    char c = p[1];
    k->len = 2;
    k->kind = TK_CHAR;
    switch (c) {
    case '0': k->kind = TK_END; return;
    case 'n': k->ch = '\n'; return;
    case 'r': k->ch = '\r'; return;
    case 't': k->ch = '\t'; return;
    default: break;
    }
    if (c < '1' || c > '9') {
        k->ch = c;
        return;
    }
    k->kind = TK_INSERT;
    k->n = (unsigned)(c - '0');
    if (p + 2 < e && p[2] >= '0' && p[2] <= '9') {
        k->n = k->n * 10 + (unsigned)(p[2] - '0');
        k->len = 3;
    }
    const char *f = p + k->len;
    if (f < e && *f == '!') {
        size_t room = (size_t)(e - (f + 1));
        if (room > FMT_MAX + 1) room = FMT_MAX + 1;
        const char *q = memchr(f + 1, '!', room);
        if (q) {
            k->fmt = f + 1;
            k->fmt_len = (size_t)(q - (f + 1));
            k->len = (size_t)(q + 1 - p);
        }
    }
}

/* ------------------------------------------------------------------------ */
/* printf-style formats                                                     */

#define FMT_WIDTH_MAX 1024

typedef struct fmt_spec {
    uint8_t minus, plus, space, hash, zero;
    int width; /* -1: none */
    int prec;  /* -1: none */
    char conv;
} fmt_spec;

/* 1 when f[0..n) is a format we honour (etw_message.h). */
static int parse_fmt(const char *f, size_t n, fmt_spec *s) {
    size_t i = 0;
    memset(s, 0, sizeof *s);
    s->width = -1;
    s->prec = -1;
    for (; i < n; i++) {
        char c = f[i];
        if (c == '-')
            s->minus = 1;
        else if (c == '+')
            s->plus = 1;
        else if (c == ' ')
            s->space = 1;
        else if (c == '#')
            s->hash = 1;
        else if (c == '0')
            s->zero = 1;
        else
            break;
    }
    if (i < n && f[i] == '*') return 0;
    if (i < n && f[i] >= '1' && f[i] <= '9') {
        int w = 0;
        while (i < n && f[i] >= '0' && f[i] <= '9') {
            w = w * 10 + (f[i++] - '0');
            if (w > FMT_WIDTH_MAX) return 0;
        }
        s->width = w;
    }
    if (i < n && f[i] == '.') {
        int pr = 0;
        i++;
        if (i < n && f[i] == '*') return 0;
        while (i < n && f[i] >= '0' && f[i] <= '9') {
            pr = pr * 10 + (f[i++] - '0');
            if (pr > FMT_WIDTH_MAX) return 0;
        }
        s->prec = pr;
    }
    /* length modifiers: read and ignored */
    while (i < n) {
        if (n - i >= 3 && f[i] == 'I' && ((f[i + 1] == '6' && f[i + 2] == '4') ||
                                          (f[i + 1] == '3' && f[i + 2] == '2'))) {
            i += 3;
            continue;
        }
        char c = f[i];
        if (c == 'h' || c == 'l' || c == 'L' || c == 'q' || c == 'j' || c == 'z' || c == 't' ||
            c == 'w' || c == 'I') {
            i++;
            continue;
        }
        break;
    }
    if (i + 1 != n) return 0;
    s->conv = f[i];
    return strchr("diuxXosS", s->conv) != NULL && s->conv != '\0';
}

static void put_spaces(char *o, int n) {
    if (n > 0) memset(o, ' ', (size_t)n);
}

/* An integer of `size` payload bytes under a d/i/u/x/X/o format. */
static void put_int_fmt(etw_text *t, const fmt_spec *f, uint64_t u, unsigned size) {
    static const char lower[] = "0123456789abcdef", upper[] = "0123456789ABCDEF";
    const char *digs = f->conv == 'X' ? upper : lower;
    unsigned base = (f->conv == 'x' || f->conv == 'X') ? 16 : f->conv == 'o' ? 8 : 10;
    char dig[24], pre[2];
    int nd = 0, np = 0;
    uint64_t mag;

    if (size < 8) u &= (UINT64_C(1) << (size * 8)) - 1;
    if (f->conv == 'd' || f->conv == 'i') {
        int64_t sv;
        if (size < 8 && (u >> (size * 8 - 1)) & 1)
            sv = (int64_t)(u | ~((UINT64_C(1) << (size * 8)) - 1));
        else
            sv = (int64_t)u;
        if (sv < 0) {
            mag = UINT64_C(0) - (uint64_t)sv;
            pre[np++] = '-';
        } else {
            mag = (uint64_t)sv;
            if (f->plus)
                pre[np++] = '+';
            else if (f->space)
                pre[np++] = ' ';
        }
    } else {
        mag = u;
        if (f->hash && base == 16 && u != 0) {
            pre[np++] = '0';
            pre[np++] = f->conv;
        }
    }
    if (!(f->prec == 0 && mag == 0)) {
        do {
            dig[nd++] = digs[mag % base];
            mag /= base;
        } while (mag);
    }
    int zeros = f->prec > nd ? f->prec - nd : 0;
    if (base == 8 && f->hash && zeros == 0 && (nd == 0 || dig[nd - 1] != '0')) zeros = 1;
    int total = np + zeros + nd;
    int pad = f->width > total ? f->width - total : 0;
    if (!f->minus && f->zero && f->prec < 0) {
        zeros += pad;
        pad = 0;
    }
    char *o = etw_text_reserve(t, (size_t)(pad + total + zeros));
    if (!o) return;
    char *o0 = o;
    if (!f->minus) {
        put_spaces(o, pad);
        o += pad;
    }
    memcpy(o, pre, (size_t)np);
    o += np;
    memset(o, '0', (size_t)(zeros > 0 ? zeros : 0));
    o += zeros;
    while (nd) *o++ = dig[--nd];
    if (f->minus) {
        put_spaces(o, pad);
        o += pad;
    }
    t->len += (size_t)(o - o0);
}

/* Copies scratch bytes [a, a+n) to the end of scratch. */
static void copy_within(etw_text *t, size_t a, size_t n) {
    if (n == 0) return;
    char *o = etw_text_reserve(t, n);
    if (!o) return;
    memcpy(o, t->data + a, n); /* o is at len >= a + n: no overlap */
    t->len += n;
}

/* copy_within, but the copy ends where scratch reaches `stop` bytes. */
static void copy_capped(etw_text *t, size_t a, size_t n, size_t stop) {
    if (t->len >= stop) return;
    if (n > stop - t->len) n = stop - t->len;
    copy_within(t, a, n);
}

/* Text [a, b) under an s/S format: cut to prec code points, padded to width. */
static void put_str_fmt(etw_text *t, const fmt_spec *f, size_t a, size_t b) {
    size_t i = a;
    int chars = 0;
    while (i < b && (f->prec < 0 || chars < f->prec)) {
        i++; /* a character: its first byte and its continuation bytes */
        while (i < b && ((unsigned char)t->data[i] & 0xC0) == 0x80) i++;
        chars++;
    }
    size_t n = i - a;
    int pad = f->width > chars ? f->width - chars : 0;
    char *o;
    if (!f->minus && pad) {
        if (!(o = etw_text_reserve(t, (size_t)pad))) return;
        put_spaces(o, pad);
        t->len += (size_t)pad;
    }
    copy_within(t, a, n);
    if (f->minus && pad) {
        if (!(o = etw_text_reserve(t, (size_t)pad))) return;
        put_spaces(o, pad);
        t->len += (size_t)pad;
    }
}

/* ------------------------------------------------------------------------ */
/* the message                                                              */

typedef struct msg_insert {
    size_t start, end; /* its text in scratch */
    uint64_t u;        /* the integer, when is_int */
    uint8_t have;      /* 1 when the text was rendered */
    uint8_t is_int;
    uint8_t size;      /* payload bytes of the integer */
} msg_insert;

/* 1 (and *u, *size) when v is an integer-like scalar the integer formats
 * may print. */
static int int_value(const etw_value *v, uint64_t *u, uint8_t *size) {
    if (!etw_value_is_integer(v)) return 0;
    *u = etw_value_u64(v);
    *size = (uint8_t)v->size;
    return 1;
}

/* Nesting of open containers in a top-level struct/array being rendered. */
#define MSG_STACK (ETW_DECODE_MAX_DEPTH + 2)

/* Decodes the payload up to insert max_n and renders the wanted top-level
 * values into sc. */
static etw_status render_inserts(etw_text *sc, const etw_schema *s, const etw_event *ev,
                                 uint64_t *refs, size_t refs_len, unsigned max_n,
                                 const uint64_t want[2], msg_insert *ins) {
    etw_decode_cursor c;
    etw_value v;
    uint8_t is_array[MSG_STACK], has_member[MSG_STACK];
    unsigned depth = 0, counter = 0;
    int cur = -1; /* the top-level container being rendered, or -1 */

    etw_status st = etw_decode_begin(&c, s, ev, refs, refs_len);
    if (st != ETW_OK) return st;
    while (etw_decode_next(&c, &v) == ETW_OK) {
        int begin = v.kind == ETW_VALUE_STRUCT_BEGIN || v.kind == ETW_VALUE_ARRAY_BEGIN;
        int end = v.kind == ETW_VALUE_STRUCT_END || v.kind == ETW_VALUE_ARRAY_END;
        if (depth == 0) {
            if (end) continue; /* cannot happen: markers pair */
            unsigned k = counter++;
            if (v.prop && s->props && (size_t)(v.prop - s->props) < s->top_count)
                k = (unsigned)(v.prop - s->props);
            if (k >= max_n) break; /* no later property is used */
            int wanted = (want[k >> 6] >> (k & 63)) & 1;
            msg_insert *in = &ins[k];
            if (begin) {
                depth = 1;
                cur = wanted ? (int)k : -1;
                if (wanted) {
                    in->start = sc->len;
                    is_array[1] = v.kind == ETW_VALUE_ARRAY_BEGIN;
                    has_member[1] = 0;
                    etw_text_putc(sc, is_array[1] ? '[' : '{');
                }
                continue;
            }
            if (v.kind != ETW_VALUE_SCALAR || !wanted) continue;
            in->start = sc->len;
            if (etw_value_text(sc, &v) != ETW_OK) {
                sc->len = in->start < sc->len ? in->start : sc->len;
                continue;
            }
            in->end = sc->len;
            in->have = 1;
            in->is_int = (uint8_t)int_value(&v, &in->u, &in->size);
            continue;
        }
        /* inside a top-level struct or array */
        if (end) {
            if (cur >= 0 && depth < MSG_STACK) etw_text_putc(sc, is_array[depth] ? ']' : '}');
            depth--;
            if (depth == 0 && cur >= 0) {
                ins[cur].end = sc->len;
                ins[cur].have = 1;
                cur = -1;
            }
            continue;
        }
        if (cur < 0 || depth + 1 >= MSG_STACK) { /* not rendered (or too deep: cannot happen) */
            if (begin) depth++;
            continue;
        }
        if (!is_array[depth]) {
            if (has_member[depth]) etw_text_putc(sc, ',');
            const char *name = v.name ? v.name : "";
            etw_text_json_utf8(sc, name, strlen(name));
            etw_text_putc(sc, ':');
        } else if (has_member[depth]) {
            etw_text_putc(sc, ',');
        }
        has_member[depth] = 1;
        if (begin) {
            depth++;
            is_array[depth] = v.kind == ETW_VALUE_ARRAY_BEGIN;
            has_member[depth] = 0;
            etw_text_putc(sc, is_array[depth] ? '[' : '{');
            continue;
        }
        etw_value_json(sc, &v);
    }
    if (depth > 0 && cur >= 0) { /* cannot happen: the decoder pairs its markers */
        while (depth > 0) {
            if (depth < MSG_STACK) etw_text_putc(sc, is_array[depth] ? ']' : '}');
            depth--;
        }
        ins[cur].end = sc->len;
        ins[cur].have = 1;
    }
    return ETW_OK;
}

etw_status etw_message_json(etw_text *t, etw_text *scratch, const etw_schema *s,
                            const etw_event *ev, uint64_t *refs, size_t refs_len) {
    msg_insert ins[ETW_MESSAGE_MAX_INSERT];
    uint64_t want[2] = {0, 0};
    unsigned max_n = 0;
    msg_tok k;

    if (!t || !scratch || !s || scratch == t) return ETW_E_INVALID_ARG;
    if (!s->message) return ETW_E_NOT_FOUND;
    /* the template: at most ETW_MESSAGE_MAX bytes of it are read (a longer
     * one, which can only come from a hostile schema, is cut) */
    const char *msg = s->message, *e, *p;
    size_t mlen = 0;
    int cut = 0;
    while (mlen <= ETW_MESSAGE_MAX && msg[mlen]) mlen++;
    if (mlen > ETW_MESSAGE_MAX) {
        mlen = ETW_MESSAGE_MAX;
        cut = 1;
    }
    e = msg + mlen;

    /* which inserts the message uses */
    for (p = msg; p < e; p += k.len) {
        next_tok(p, e, &k);
        if (k.kind == TK_END) break;
        if (k.kind == TK_INSERT) {
            unsigned i = k.n - 1;
            want[i >> 6] |= UINT64_C(1) << (i & 63);
            if (k.n > max_n) max_n = k.n;
        }
    }

    etw_text_clear(scratch);
    if (max_n) {
        memset(ins, 0, (size_t)max_n * sizeof ins[0]);
        etw_status st = render_inserts(scratch, s, ev, refs, refs_len, max_n, want, ins);
        if (st != ETW_OK) return st;
    }

    /* the plain message, after the insert texts; writing stops a little past
     * ETW_MESSAGE_MAX bytes (an insert is copied only up to there), so the
     * work per event is bounded whatever the template repeats */
    size_t msg_start = scratch->len;
    size_t stop = msg_start + ETW_MESSAGE_MAX + 4;
    for (p = msg; p < e; p += k.len) {
        if (scratch->len >= stop) break;
        next_tok(p, e, &k);
        if (k.kind == TK_END) break;
        switch (k.kind) {
        case TK_TEXT: etw_text_put(scratch, p, k.len); break;
        case TK_CHAR: etw_text_putc(scratch, k.ch); break;
        default: {
            const msg_insert *in = &ins[k.n - 1];
            fmt_spec f;
            if (!in->have) {
                etw_text_put(scratch, p, k.len); /* left as written */
            } else if (k.fmt && parse_fmt(k.fmt, k.fmt_len, &f)) {
                if (f.conv == 's' || f.conv == 'S')
                    put_str_fmt(scratch, &f, in->start, in->end);
                else if (in->is_int)
                    put_int_fmt(scratch, &f, in->u, in->size);
                else
                    copy_capped(scratch, in->start, in->end - in->start, stop);
            } else {
                copy_capped(scratch, in->start, in->end - in->start, stop);
            }
            break;
        }
        }
    }
    if (etw_text_status(scratch) != ETW_OK) return ETW_E_NOMEM;
    size_t n = scratch->len - msg_start;
    if (n > ETW_MESSAGE_MAX) { /* cut before the character that crosses the limit */
        n = ETW_MESSAGE_MAX;
        while (n > 0 && ((unsigned char)scratch->data[msg_start + n] & 0xC0) == 0x80) n--;
        cut = 1;
    }
    etw_text_json_utf8(t, n ? scratch->data + msg_start : "", n);
    if (etw_text_status(t) != ETW_OK) return ETW_E_NOMEM;
    return cut ? ETW_E_LIMIT : ETW_OK;
}
