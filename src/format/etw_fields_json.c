/* etw_fields_json.c - the "fields" object of an event (see etw_fields_json.h). */
#include "format/etw_fields_json.h"

#include <stdio.h>
#include <string.h>

#include "common/etw_bytes.h"
#include "common/etw_lznt1.h"
#include "etwdecode/etw_decoder.h"
#include "format/etw_json_spans.h"

/* ------------------------------------------------------------------------ */
/* addresses                                                                */

static char *put_dec8(char *o, unsigned v) {
    if (v >= 100) {
        *o++ = (char)('0' + v / 100);
        v %= 100;
        *o++ = (char)('0' + v / 10);
        *o++ = (char)('0' + v % 10);
    } else if (v >= 10) {
        *o++ = (char)('0' + v / 10);
        *o++ = (char)('0' + v % 10);
    } else {
        *o++ = (char)('0' + v);
    }
    return o;
}

static char *put_ipv4(char *o, const uint8_t a[4]) {
    for (int i = 0; i < 4; i++) {
        if (i) *o++ = '.';
        o = put_dec8(o, a[i]);
    }
    return o;
}

void etw_text_ipv4(etw_text *t, const uint8_t addr[4]) {
    char buf[16];
    char *o = put_ipv4(buf, addr);
    etw_text_put(t, buf, (size_t)(o - buf));
}

static char *put_ipv6(char *o, const uint8_t a[16]) {
    static const char hex[] = "0123456789abcdef";
    unsigned g[8];
    int best = -1, best_len = 0, i;
    for (i = 0; i < 8; i++) g[i] = (unsigned)a[2 * i] << 8 | a[2 * i + 1];
    for (i = 0; i < 8;) {
        if (g[i] != 0) {
            i++;
            continue;
        }
        int j = i;
        while (j < 8 && g[j] == 0) j++;
        if (j - i > best_len) {
            best = i;
            best_len = j - i;
        }
        i = j;
    }
    if (best_len < 2) best = -1;
    /* IPv4-mapped ::ffff:a.b.c.d (RFC 5952 section 5) */
    if (best == 0 && best_len == 5 && g[5] == 0xffff) {
        memcpy(o, "::ffff:", 7);
        return put_ipv4(o + 7, a + 12);
    }
    for (i = 0; i < 8; i++) {
        if (i == best) {
            *o++ = ':';
            *o++ = ':';
            i += best_len - 1;
            continue;
        }
        if (i && i != best + best_len) *o++ = ':';
        unsigned v = g[i];
        int started = 0;
        for (int s = 12; s >= 0; s -= 4) {
            unsigned d = (v >> s) & 15;
            if (d || started || s == 0) {
                *o++ = hex[d];
                started = 1;
            }
        }
    }
    return o;
}

void etw_text_ipv6(etw_text *t, const uint8_t addr[16]) {
    char buf[48];
    char *o = put_ipv6(buf, addr);
    etw_text_put(t, buf, (size_t)(o - buf));
}

static void hex_string(etw_text *t, const uint8_t *p, size_t n) {
    etw_text_putc(t, '"');
    etw_text_bytes_hex(t, p, n);
    etw_text_putc(t, '"');
}

/* SOCKADDR_IN (family 2) / SOCKADDR_IN6 (family 23); other forms as hex. */
static void sockaddr_json(etw_text *t, const uint8_t *p, uint32_t n) {
    char buf[64];
    char *o = buf;
    uint16_t fam = n >= 2 ? etw_le16(p) : 0;
    if (fam == 2 && n >= 8) {
        *o++ = '"';
        o = put_ipv4(o, p + 4);
    } else if (fam == 23 && n >= 24) {
        *o++ = '"';
        *o++ = '[';
        o = put_ipv6(o, p + 8);
        *o++ = ']';
    } else {
        hex_string(t, p, n);
        return;
    }
    etw_text_put(t, buf, (size_t)(o - buf));
    etw_text_putc(t, ':');
    etw_text_u64(t, etw_be16(p + 2));
    etw_text_putc(t, '"');
}

/* ------------------------------------------------------------------------ */
/* values                                                                   */

static void quoted_hex(etw_text *t, uint64_t v) {
    etw_text_putc(t, '"');
    etw_text_hex(t, v);
    etw_text_putc(t, '"');
}

static void put_bool(etw_text *t, int b) {
    if (b)
        etw_text_put(t, "true", 4);
    else
        etw_text_put(t, "false", 5);
}

static void put_null(etw_text *t) { etw_text_put(t, "null", 4); }

static void filetime_json(etw_text *t, uint64_t ft) {
    size_t len0 = t->len;
    if (ft == 0 || ft > (uint64_t)ETW_FILETIME_MAX) {
        put_null(t);
        return;
    }
    etw_text_putc(t, '"');
    if (etw_text_filetime(t, (int64_t)ft) != ETW_OK) {
        t->len = len0;
        put_null(t);
        return;
    }
    etw_text_putc(t, '"');
}

static void systemtime_json(etw_text *t, const uint8_t *p) {
    uint16_t st[8];
    unsigned any = 0;
    size_t len0 = t->len;
    for (int i = 0; i < 8; i++) {
        st[i] = etw_le16(p + 2 * i);
        any |= st[i];
    }
    if (!any) {
        put_null(t);
        return;
    }
    etw_text_putc(t, '"');
    if (etw_text_systemtime(t, st) != ETW_OK) {
        t->len = len0;
        put_null(t);
        return;
    }
    etw_text_putc(t, '"');
}

static void sid_json(etw_text *t, const uint8_t *p, size_t n) {
    if (n < 8) {
        put_null(t);
        return;
    }
    etw_text_putc(t, '"');
    etw_text_sid(t, p, n);
    etw_text_putc(t, '"');
}

/* A map name as the body of a JSON string (no quotes): written quoted, then
 * the opening quote is replaced by sep (or kept when sep is 0) and the
 * closing one dropped. */
static void map_name_body(etw_text *t, const char *name, char sep) {
    size_t len0 = t->len;
    etw_text_json_utf8(t, name, strlen(name));
    if (t->len >= len0 + 2) {
        if (sep) t->data[len0] = sep;
        t->len--;
    }
}

/* Value map / bitmap: 1 when the value was written from the map. */
static int map_json(etw_text *t, const etw_map *m, uint64_t u) {
    if (!m || !m->entries || m->count == 0) return 0;
    if (m->flags & ETW_MAP_BITMAP) {
        if (u == 0) {
            for (uint32_t i = 0; i < m->count; i++)
                if (m->entries[i].value == 0 && m->entries[i].name) {
                    etw_text_json_utf8(t, m->entries[i].name, strlen(m->entries[i].name));
                    return 1;
                }
            return 0;
        }
        uint64_t covered = 0;
        int first = 1;
        for (uint32_t i = 0; i < m->count; i++) {
            uint64_t e = m->entries[i].value;
            if (e == 0 || (u & e) != e || !m->entries[i].name) continue;
            map_name_body(t, m->entries[i].name, first ? 0 : '|');
            first = 0;
            covered |= e;
        }
        uint64_t left = u & ~covered;
        if (first)
            etw_text_putc(t, '"');
        else if (left)
            etw_text_putc(t, '|');
        if (left) etw_text_hex(t, left);
        etw_text_putc(t, '"');
        return 1;
    }
    if (m->flags & ETW_MAP_VALUEMAP) {
        uint32_t lo = 0, hi = m->count;
        while (lo < hi) {
            uint32_t mid = lo + (hi - lo) / 2;
            uint64_t e = m->entries[mid].value;
            if (e == u) {
                if (!m->entries[mid].name) return 0;
                etw_text_json_utf8(t, m->entries[mid].name, strlen(m->entries[mid].name));
                return 1;
            }
            if (e < u)
                lo = mid + 1;
            else
                hi = mid;
        }
    }
    return 0;
}

static void integer_json(etw_text *t, const etw_value *v) {
    const uint8_t *d = v->data;
    uint32_t size = v->size;
    uint16_t in = v->in_type, out = v->out_type;
    uint64_t u;

    switch (size) {
    case 1: u = d[0]; break;
    case 2: u = etw_le16(d); break;
    case 4: u = etw_le32(d); break;
    case 8: u = etw_le64(d); break;
    default: put_null(t); return;
    }
    if (v->prop && v->prop->map && map_json(t, v->prop->map, u)) return;

    switch (out) {
    case ETW_OUTTYPE_BOOLEAN:
        put_bool(t, u != 0);
        return;
    case ETW_OUTTYPE_STRING:
        if (size == 1) {
            etw_text_json_ansi(t, d, 1);
            return;
        }
        if (size == 2) {
            etw_text_json_utf16le(t, d, 2);
            return;
        }
        break;
    case ETW_OUTTYPE_HEXINT8:
    case ETW_OUTTYPE_HEXINT16:
    case ETW_OUTTYPE_HEXINT32:
    case ETW_OUTTYPE_HEXINT64:
    case ETW_OUTTYPE_HEXBINARY:
    case ETW_OUTTYPE_CODE_POINTER:
    case ETW_OUTTYPE_WIN32ERROR: /* status codes read in hex: "0xc0000022", "0x80004005" */
    case ETW_OUTTYPE_NTSTATUS:
    case ETW_OUTTYPE_HRESULT:
        quoted_hex(t, u);
        return;
    case ETW_OUTTYPE_IPV4:
        if (size == 4) {
            etw_text_putc(t, '"');
            etw_text_ipv4(t, d);
            etw_text_putc(t, '"');
            return;
        }
        break;
    case ETW_OUTTYPE_PORT:
        if (size == 2) {
            etw_text_u64(t, etw_be16(d));
            return;
        }
        break;
    case ETW_OUTTYPE_DATETIME:
    case ETW_OUTTYPE_DATETIME_UTC:
    case ETW_OUTTYPE_CULTURE_INSENSITIVE_DATETIME:
        if (size == 8) {
            filetime_json(t, u);
            return;
        }
        break;
    default: break;
    }

    switch (in) {
    case ETW_INTYPE_HEXINT32:
    case ETW_INTYPE_HEXINT64:
    case ETW_INTYPE_POINTER:
    case ETW_INTYPE_SIZET:
        quoted_hex(t, u);
        return;
    case ETW_INTYPE_INT8:
    case ETW_INTYPE_INT16:
    case ETW_INTYPE_INT32:
    case ETW_INTYPE_INT64: break;
    default:
        if (out != ETW_OUTTYPE_BYTE && out != ETW_OUTTYPE_SHORT &&
            out != ETW_OUTTYPE_INT && out != ETW_OUTTYPE_LONG) {
            etw_text_u64(t, u);
            return;
        }
    }
    /* signed: sign-extend from the value's width */
    int64_t s;
    switch (size) {
    case 1: s = (int8_t)d[0]; break;
    case 2: s = (int16_t)(uint16_t)u; break;
    case 4: s = (int32_t)(uint32_t)u; break;
    default: s = (int64_t)u; break;
    }
    etw_text_i64(t, s);
}

/* ------------------------------------------------------------------------ */
/* LZNT1-compressed UTF-16 text (ETW_OUTTYPE_LZNT1_UTF16)                   */

/* The most text one value decompresses to; past it, or when the data does
 * not decompress, the value is shown as hex like any binary (docs/limits.md). */
#define LZNT1_TEXT_MAX (1u << 20)

typedef struct {
    etw_text *t;
    uint8_t buf[ETW_LZNT1_CHUNK + 4]; /* a chunk after the bytes carried from the last one */
    size_t carry;                     /* an odd byte and/or a high surrogate left over */
    int ended;                        /* a NUL unit was met: the text ends there */
} lznt1_text;

static etw_status lznt1_text_emit(void *ctx, const uint8_t *p, size_t n) {
    lznt1_text *x = ctx;
    if (x->ended) return ETW_OK;
    memcpy(x->buf + x->carry, p, n);
    size_t len = x->carry + n, keep = len & 1;
    for (size_t i = 0; i + 1 < len - keep; i += 2)
        if (!x->buf[i] && !x->buf[i + 1]) {
            etw_text_json_utf16le_body(x->t, x->buf, i);
            x->ended = 1;
            return ETW_OK;
        }
    if (len - keep >= 2 && (x->buf[len - keep - 1] & 0xFC) == 0xD8) keep += 2; /* a pair may straddle */
    etw_text_json_utf16le_body(x->t, x->buf, len - keep);
    memmove(x->buf, x->buf + len - keep, keep);
    x->carry = keep;
    return ETW_OK;
}

/* 1 when the value was written as text, 0 when it does not decompress. */
static int lznt1_text_json(etw_text *t, const etw_value *v) {
    size_t total = 0;
    if (etw_lznt1_decompress(v->data, v->size, LZNT1_TEXT_MAX, NULL, NULL, &total) != ETW_OK) return 0;
    lznt1_text x;
    x.t = t;
    x.carry = 0;
    x.ended = 0;
    etw_text_putc(t, '"');
    etw_lznt1_decompress(v->data, v->size, LZNT1_TEXT_MAX, lznt1_text_emit, &x, NULL);
    if (!x.ended && x.carry >= 2) etw_text_json_utf16le_body(t, x.buf, x.carry & ~(size_t)1);
    etw_text_putc(t, '"');
    return 1;
}

static void binary_json(etw_text *t, const etw_value *v) {
    switch (v->out_type) {
    case ETW_OUTTYPE_LZNT1_UTF16:
        if (lznt1_text_json(t, v)) return;
        break;
    case ETW_OUTTYPE_IPV6:
        if (v->size == 16) {
            etw_text_putc(t, '"');
            etw_text_ipv6(t, v->data);
            etw_text_putc(t, '"');
            return;
        }
        break;
    case ETW_OUTTYPE_IPV4:
        if (v->size == 4) {
            etw_text_putc(t, '"');
            etw_text_ipv4(t, v->data);
            etw_text_putc(t, '"');
            return;
        }
        break;
    case ETW_OUTTYPE_SOCKETADDRESS:
        sockaddr_json(t, v->data, v->size);
        return;
    default: break;
    }
    hex_string(t, v->data, v->size);
}

static void unsupported_json(etw_text *t, const etw_value *v) {
    etw_text_puts(t, "{\"unsupported\":\"");
    etw_text_puts(t, etw_intype_name(v->in_type));
    etw_text_puts(t, "\",\"raw\":\"");
    etw_text_bytes_hex(t, v->data, v->size);
    etw_text_put(t, "\"}", 2);
}

void etw_value_json(etw_text *t, const etw_value *v) {
    if (v->kind == ETW_VALUE_UNSUPPORTED) {
        unsupported_json(t, v);
        return;
    }
    if (v->kind != ETW_VALUE_SCALAR) return;
    if (v->size && !v->data) {
        put_null(t);
        return;
    }
    if (v->prop && (v->prop->flags & ETW_PROP_CUSTOM_SIZED)) {
        hex_string(t, v->data, v->size);
        return;
    }
    switch (v->in_type) {
    case ETW_INTYPE_UNICODESTRING:
    case ETW_INTYPE_MANIFEST_COUNTEDSTRING:
    case ETW_INTYPE_COUNTEDSTRING:
    case ETW_INTYPE_REVERSEDCOUNTEDSTRING:
    case ETW_INTYPE_NONNULLTERMINATEDSTRING:
        etw_text_json_utf16le(t, v->data, v->size);
        return;
    case ETW_INTYPE_ANSISTRING:
    case ETW_INTYPE_MANIFEST_COUNTEDANSISTRING:
    case ETW_INTYPE_COUNTEDANSISTRING:
    case ETW_INTYPE_REVERSEDCOUNTEDANSISTRING:
    case ETW_INTYPE_NONNULLTERMINATEDANSISTRING:
        if (v->out_type == ETW_OUTTYPE_UTF8 || v->out_type == ETW_OUTTYPE_XML ||
            v->out_type == ETW_OUTTYPE_JSON)
            etw_text_json_utf8(t, (const char *)v->data, v->size);
        else
            etw_text_json_ansi(t, v->data, v->size);
        return;
    case ETW_INTYPE_INT8:
    case ETW_INTYPE_UINT8:
    case ETW_INTYPE_INT16:
    case ETW_INTYPE_UINT16:
    case ETW_INTYPE_INT32:
    case ETW_INTYPE_UINT32:
    case ETW_INTYPE_INT64:
    case ETW_INTYPE_UINT64:
    case ETW_INTYPE_HEXINT32:
    case ETW_INTYPE_HEXINT64:
    case ETW_INTYPE_POINTER:
    case ETW_INTYPE_SIZET:
    case ETW_INTYPE_UNICODECHAR:
    case ETW_INTYPE_ANSICHAR:
        integer_json(t, v);
        return;
    case ETW_INTYPE_FLOAT:
        if (v->size == 4) {
            uint32_t b = etw_le32(v->data);
            float f;
            memcpy(&f, &b, sizeof f);
            etw_text_float(t, f);
            return;
        }
        break;
    case ETW_INTYPE_DOUBLE:
        if (v->size == 8) {
            uint64_t b = etw_le64(v->data);
            double f;
            memcpy(&f, &b, sizeof f);
            etw_text_double(t, f);
            return;
        }
        break;
    case ETW_INTYPE_BOOLEAN:
        if (v->size == 4) {
            put_bool(t, etw_le32(v->data) != 0);
            return;
        }
        break;
    case ETW_INTYPE_BINARY:
    case ETW_INTYPE_MANIFEST_COUNTEDBINARY:
    case ETW_INTYPE_HEXDUMP:
        binary_json(t, v);
        return;
    case ETW_INTYPE_GUID:
        if (v->size == 16) {
            etw_text_putc(t, '"');
            etw_text_guid(t, v->data);
            etw_text_putc(t, '"');
            return;
        }
        break;
    case ETW_INTYPE_FILETIME:
        if (v->size == 8) {
            filetime_json(t, etw_le64(v->data));
            return;
        }
        break;
    case ETW_INTYPE_SYSTEMTIME:
        if (v->size == 16) {
            systemtime_json(t, v->data);
            return;
        }
        break;
    case ETW_INTYPE_SID:
        sid_json(t, v->data, v->size);
        return;
    case ETW_INTYPE_WBEMSID: {
        uint32_t off = 2u * (v->pointer_size == 4 ? 4u : 8u);
        if (v->size > off)
            sid_json(t, v->data + off, v->size - off);
        else
            put_null(t); /* the 4-byte "no user" form */
        return;
    }
    default: break;
    }
    put_null(t);
}

/* ------------------------------------------------------------------------ */
/* the fields object                                                        */

/* A member name and its colon (after a comma when comma is set). Names are
 * the same for every event of a schema and nearly always plain ASCII: those
 * are copied in one go; others go through the escaping writer. */
static void put_key(etw_text *t, const char *name, int comma) {
    /* 1 for the NUL and every byte that is not plain printable ASCII or
     * needs an escape */
    static const uint8_t stop[256] = {
        1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
        0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
        0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0,
        0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1,
        1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
        1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
        1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
        1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
    };
    const unsigned char *p = (const unsigned char *)name;
    size_t n = 0;
    while (!stop[p[n]]) n++;
    if (p[n] != 0) {
        if (comma) etw_text_putc(t, ',');
        etw_text_json_utf8(t, name, n + strlen(name + n));
        etw_text_putc(t, ':');
        return;
    }
    char *o = etw_text_reserve(t, n + 4);
    if (!o) return;
    if (comma) *o++ = ',';
    *o++ = '"';
    memcpy(o, name, n);
    o[n] = '"';
    o[n + 1] = ':';
    t->len += n + 3 + (comma != 0);
}

etw_status etw_fields_json(etw_text *t, const etw_schema *s, const etw_event *ev,
                           uint64_t *refs, size_t refs_len) {
    return etw_fields_json_ex(t, s, ev, refs, refs_len, NULL);
}

etw_status etw_fields_json_ex(etw_text *t, const etw_schema *s, const etw_event *ev,
                              uint64_t *refs, size_t refs_len, uint32_t *trailing) {
    return etw_fields_json_spans(t, s, ev, refs, refs_len, trailing, NULL, 0, NULL);
}

etw_status etw_fields_json_drive(etw_text *t, const etw_schema *s, const etw_event *ev, uint64_t *refs,
                                 size_t refs_len, uint32_t *trailing, const etw_decoder *d) {
    return etw_fields_json_spans(t, s, ev, refs, refs_len, trailing, NULL, 0, d);
}

/* The 64-bit integer just written from t->data[from] as a string when its
 * magnitude is above 2^53 (other forms of the value, such as a mapped name
 * or a time, are left alone: they are not all digits). */
static void big_int_as_string(etw_text *t, size_t from) {
    size_t n = t->len - from;
    if (n < 16 || n > 21 || etw_text_status(t) != ETW_OK) return;
    const char *v = t->data + from;
    size_t neg = v[0] == '-', digits = n - neg;
    for (size_t i = neg; i < n; i++)
        if (v[i] < '0' || v[i] > '9') return;
    if (digits < 16 || (digits == 16 && memcmp(v + neg, "9007199254740992", 16) <= 0)) return;
    if (!etw_text_reserve(t, 2)) return;
    memmove(t->data + from + 1, t->data + from, n);
    t->data[from] = '"';
    t->data[from + n + 1] = '"';
    t->len += 2;
}

/* The walk of etw_fields_json_spans, made twice by the compiler (keyless a
 * constant in each): JSON's form keeps the code it had before CSV's. */
#if defined(__GNUC__)
__attribute__((always_inline))
#endif
static inline etw_status fields_walk(etw_text *t, const etw_schema *s, const etw_event *ev, uint64_t *refs,
                                     size_t refs_len, uint32_t *trailing, etw_json_spans *sp, unsigned flags,
                                     const etw_decoder *d, const int keyless) {
    etw_decode_cursor c;
    etw_field_span *cur = NULL; /* the top-level member being written */
    etw_value v;
    /* per open container: 1 = array, and whether a member was written */
    uint8_t is_array[ETW_DECODE_MAX_DEPTH + 2];
    uint8_t has_member[ETW_DECODE_MAX_DEPTH + 2];
    unsigned top = 0;
    etw_status st;

    if (!t) return ETW_E_INVALID_ARG;
    etw_text_putc(t, '{');
    if (!s) {
        etw_text_putc(t, '}');
        return etw_text_status(t);
    }
    st = etw_decode_begin(&c, s, ev, refs, refs_len);
    if (st != ETW_OK) {
        etw_text_putc(t, '}');
        return st;
    }
    has_member[0] = 0;
    if (sp) {
        sp->n = 0;
        sp->complete = 1;
    }
    /* no keys: the top level is written as an array would be */
    is_array[0] = (uint8_t)keyless;
    while (etw_decode_next(&c, &v) == ETW_OK) {
        if (v.kind == ETW_VALUE_STRUCT_END || v.kind == ETW_VALUE_ARRAY_END) {
            if (top == 0) continue; /* cannot happen: markers pair */
            etw_text_putc(t, is_array[top] ? ']' : '}');
            top--;
            if (top == 0 && cur) cur->val_len = t->len - cur->val_off;
            continue;
        }
        if (top == 0 && sp) {
            cur = NULL;
            if (sp->n < sp->cap) {
                cur = &sp->fields[sp->n++];
                cur->name = v.name ? v.name : "";
                cur->key_off = t->len + (has_member[0] != 0);
                cur->drive_len = 0;
            } else {
                sp->complete = 0;
            }
        }
        if (!is_array[top])
            put_key(t, v.name ? v.name : "", has_member[top]);
        else if (has_member[top])
            etw_text_putc(t, ',');
        has_member[top] = 1;
        if (top == 0 && cur) {
            cur->key_len = keyless ? 0 : t->len - 1 - cur->key_off; /* without the colon */
            cur->val_off = t->len;
        }
        if (v.kind == ETW_VALUE_STRUCT_BEGIN || v.kind == ETW_VALUE_ARRAY_BEGIN) {
            int arr = v.kind == ETW_VALUE_ARRAY_BEGIN;
            if (top + 1 >= sizeof is_array) { /* cannot happen: depth is bounded */
                etw_text_put(t, arr ? "[]" : "{}", 2);
                if (top == 0 && cur) cur->val_len = 2;
                continue;
            }
            etw_text_putc(t, arr ? '[' : '{');
            top++;
            is_array[top] = (uint8_t)arr;
            has_member[top] = 0;
            continue;
        }
        size_t vstart = t->len;
        etw_value_json(t, &v);
        if ((flags & ETW_FIELDS_INT64_AS_STRING) && (v.in_type == ETW_INTYPE_INT64 || v.in_type == ETW_INTYPE_UINT64))
            big_int_as_string(t, vstart); /* only 64-bit integers reach 2^53 (doubles stay numbers) */
        if (top == 0 && cur) cur->val_len = t->len - cur->val_off;
        char drive[ETW_DRIVE_PATH_MAX];
        size_t dn;
        char key[320];
        if (d && !top && etw_decoder_value_drive_path(d, &v, drive, sizeof drive, &dn) &&
            snprintf(key, sizeof key, "%s_drive", v.name ? v.name : "") < (int)sizeof key) {
            /* NAME_drive: the drive form of an NT path, after the raw value
             * (keyless: one more element, the span says whose) */
            size_t kstart = t->len + 1;
            if (keyless) etw_text_putc(t, ',');
            else put_key(t, key, 1);
            if (cur) {
                cur->drive_key_off = kstart;
                cur->drive_key_len = keyless ? 0 : t->len - 1 - kstart; /* without the colon */
                cur->drive_off = t->len;
            }
            etw_text_json_utf8(t, drive, dn);
            if (cur) cur->drive_len = t->len - cur->drive_off;
        }
    }
    while (top > 0) {
        etw_text_putc(t, is_array[top] ? ']' : '}');
        top--;
        if (top == 0 && cur) cur->val_len = t->len - cur->val_off;
    }
    if (trailing) *trailing = etw_decode_remaining(&c);
    etw_text_putc(t, '}');
    return etw_text_status(t);
}

etw_status etw_fields_json_spans(etw_text *t, const etw_schema *s, const etw_event *ev, uint64_t *refs,
                                 size_t refs_len, uint32_t *trailing, etw_json_spans *sp, unsigned flags,
                                 const etw_decoder *d) {
    if (flags & ETW_FIELDS_NO_KEYS) return fields_walk(t, s, ev, refs, refs_len, trailing, sp, flags, d, 1);
    return fields_walk(t, s, ev, refs, refs_len, trailing, sp, flags, d, 0);
}
