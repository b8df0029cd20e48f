/* etw_decode.c - walk a schema over an event's payload (see etw_decode.h).
 *
 * The cursor is a small state machine over an explicit stack of frames (no
 * recursion, no allocation):
 *   LEVEL         the properties of the top level or of one struct (or of one
 *                 element of an array of structs): first .. first+count;
 *   ARRAY         an array of scalars: elems elements of props[prop];
 *   ARRAY_STRUCT  an array of structs: each element pushes a LEVEL frame.
 * An item is emitted at the depth of the frame it comes from; BEGIN/END items
 * of a struct or array at the depth of their parent.
 *
 * Termination whatever the schema or payload says:
 *   - every index taken from the schema is bounded by prop_count (and the
 *     refs scratch), every read by the payload;
 *   - frames are bounded by ETW_DECODE_MAX_DEPTH;
 *   - an array count that cannot fit the payload (more elements than bytes
 *     left and more than ETW_ARRAY_CAP) is clamped to max(bytes left,
 *     ETW_ARRAY_CAP): an element that takes at least one byte cannot exceed
 *     the bytes left, one that takes none is capped;
 *   - an array element that consumed no payload byte leaves the cursor as
 *     it found it (no byte read, no reference changed), so every later
 *     element would be the same again: they are replaced by one UNSUPPORTED
 *     element and the array ends;
 *   - an event may emit at most zero_max = ETW_ZERO_ITEMS_BASE + payload
 *     bytes counted items that consume no payload byte (BEGIN markers of
 *     properties, NULL values, empty strings at the end, ...; END markers and
 *     the BEGIN of an array's struct element are not counted: each pairs
 *     with a counted item or with an element that took a byte); beyond that
 *     the next property or element is UNSUPPORTED and the enumeration ends.
 * So the items of one event are at most a small multiple (the nesting
 * depth) of payload bytes + ETW_ZERO_ITEMS_BASE, and its JSON is at most
 * that many names (each at most ETW_NAME_MAX bytes, etw_cache.h) and values.
 */
#if defined(__SSE2__)
#include <emmintrin.h> /* str_len: 16-bit lanes compared at once */
#endif
#include "etwdecode/etw_decode.h"

#include <string.h>

#include "common/etw_bytes.h"
#include "decode/etw_decode_walk.h"

/* Overridable at build time (the fuzz target may lower them to explore
 * more inputs per second). */
#ifndef ETW_ARRAY_CAP
#define ETW_ARRAY_CAP 65535u
#endif

enum { FR_LEVEL = 0, FR_ARRAY = 1, FR_ARRAY_STRUCT = 2 };

/* Returned for an empty payload so that data + 0 is never NULL + 0. */
static const uint8_t empty_payload[1] = {0};

/* The bytes an ETW_PROP_BITS value points to: byte_values[b] == b, so the
 * value stays valid as long as payload bytes do. */
static const uint8_t byte_values[256] = {
#define B4(n) (n), (n) + 1, (n) + 2, (n) + 3
#define B16(n) B4(n), B4((n) + 4), B4((n) + 8), B4((n) + 12)
#define B64(n) B16(n), B16((n) + 16), B16((n) + 32), B16((n) + 48)
    B64(0), B64(64), B64(128), B64(192)
#undef B64
#undef B16
#undef B4
};

/* ------------------------------------------------------------------------ */
/* in-type names and defaults                                               */

const char *etw_intype_name(uint16_t in_type) {
    static const char *const low[] = {
        "NULL",      "UNICODESTRING", "ANSISTRING", "INT8",
        "UINT8",     "INT16",         "UINT16",     "INT32",
        "UINT32",    "INT64",         "UINT64",     "FLOAT",
        "DOUBLE",    "BOOLEAN",       "BINARY",     "GUID",
        "POINTER",   "FILETIME",      "SYSTEMTIME", "SID",
        "HEXINT32",  "HEXINT64",      "MANIFEST_COUNTEDSTRING",
        "MANIFEST_COUNTEDANSISTRING", "STRUCT",    "MANIFEST_COUNTEDBINARY"};
    static const char *const high[] = {
        "COUNTEDSTRING",           "COUNTEDANSISTRING",
        "REVERSEDCOUNTEDSTRING",   "REVERSEDCOUNTEDANSISTRING",
        "NONNULLTERMINATEDSTRING", "NONNULLTERMINATEDANSISTRING",
        "UNICODECHAR",             "ANSICHAR",
        "SIZET",                   "HEXDUMP",
        "WBEMSID"};
    if (in_type < sizeof low / sizeof low[0]) return low[in_type];
    if (in_type >= 300 && in_type - 300u < sizeof high / sizeof high[0])
        return high[in_type - 300];
    return "UNKNOWN";
}

uint16_t etw_default_outtype(uint16_t in, uint8_t ptr) {
    switch (in) {
    case ETW_INTYPE_UNICODESTRING:
    case ETW_INTYPE_ANSISTRING:
    case ETW_INTYPE_SID:
    case ETW_INTYPE_MANIFEST_COUNTEDSTRING:
    case ETW_INTYPE_MANIFEST_COUNTEDANSISTRING:
    case ETW_INTYPE_COUNTEDSTRING:
    case ETW_INTYPE_COUNTEDANSISTRING:
    case ETW_INTYPE_REVERSEDCOUNTEDSTRING:
    case ETW_INTYPE_REVERSEDCOUNTEDANSISTRING:
    case ETW_INTYPE_NONNULLTERMINATEDSTRING:
    case ETW_INTYPE_NONNULLTERMINATEDANSISTRING:
    case ETW_INTYPE_UNICODECHAR:
    case ETW_INTYPE_ANSICHAR:
    case ETW_INTYPE_WBEMSID: return ETW_OUTTYPE_STRING;
    case ETW_INTYPE_INT8: return ETW_OUTTYPE_BYTE;
    case ETW_INTYPE_UINT8: return ETW_OUTTYPE_UNSIGNEDBYTE;
    case ETW_INTYPE_INT16: return ETW_OUTTYPE_SHORT;
    case ETW_INTYPE_UINT16: return ETW_OUTTYPE_UNSIGNEDSHORT;
    case ETW_INTYPE_INT32: return ETW_OUTTYPE_INT;
    case ETW_INTYPE_UINT32: return ETW_OUTTYPE_UNSIGNEDINT;
    case ETW_INTYPE_INT64: return ETW_OUTTYPE_LONG;
    case ETW_INTYPE_UINT64: return ETW_OUTTYPE_UNSIGNEDLONG;
    case ETW_INTYPE_FLOAT: return ETW_OUTTYPE_FLOAT;
    case ETW_INTYPE_DOUBLE: return ETW_OUTTYPE_DOUBLE;
    case ETW_INTYPE_BOOLEAN: return ETW_OUTTYPE_BOOLEAN;
    case ETW_INTYPE_BINARY:
    case ETW_INTYPE_MANIFEST_COUNTEDBINARY:
    case ETW_INTYPE_HEXDUMP: return ETW_OUTTYPE_HEXBINARY;
    case ETW_INTYPE_GUID: return ETW_OUTTYPE_GUID;
    case ETW_INTYPE_POINTER:
    case ETW_INTYPE_SIZET:
        return ptr == 4 ? ETW_OUTTYPE_HEXINT32 : ETW_OUTTYPE_HEXINT64;
    case ETW_INTYPE_FILETIME:
    case ETW_INTYPE_SYSTEMTIME: return ETW_OUTTYPE_DATETIME;
    case ETW_INTYPE_HEXINT32: return ETW_OUTTYPE_HEXINT32;
    case ETW_INTYPE_HEXINT64: return ETW_OUTTYPE_HEXINT64;
    default: return ETW_OUTTYPE_NULL;
    }
}

/* ------------------------------------------------------------------------ */
/* begin                                                                    */

etw_status etw_decode_begin(etw_decode_cursor *c, const etw_schema *s,
                            const etw_event *ev, uint64_t *refs, size_t refs_len) {
    if (!c || !s || !ev) return ETW_E_INVALID_ARG;
    if (s->prop_count && (!s->props || !refs || refs_len < s->prop_count))
        return ETW_E_INVALID_ARG;
    if (!ev->user_data && ev->user_data_len) return ETW_E_INVALID_ARG;
    c->schema = s;
    c->data = ev->user_data ? ev->user_data : empty_payload;
    c->size = ev->user_data ? ev->user_data_len : 0;
    c->pos = 0;
    if (ev->pointer_size == 4 || ev->pointer_size == 8)
        c->pointer_size = ev->pointer_size;
    else
        c->pointer_size = s->pointer_size == 4 ? 4 : 8;
    c->done = 0;
    c->depth = 0;
    c->zero_items = 0;
    c->zero_max = c->size > UINT32_MAX - ETW_ZERO_ITEMS_BASE ? UINT32_MAX : ETW_ZERO_ITEMS_BASE + c->size;
    c->refs = refs;
    c->refs_len = refs_len;
    if (s->prop_count) memset(refs, 0, (size_t)s->prop_count * sizeof *refs);
    etw_decode_frame *f = &c->stack[0];
    f->first = 0;
    f->count = s->top_count < s->prop_count ? s->top_count : s->prop_count;
    f->next = 0;
    f->prop = 0;
    f->elems = 0;
    f->elem = 0;
    f->kind = FR_LEVEL;
    f->c_align = 0;
    f->c_base = 0;
    return ETW_OK;
}

uint32_t etw_decode_remaining(const etw_decode_cursor *c) {
    return c ? c->size - c->pos : 0;
}

/* ------------------------------------------------------------------------ */
/* items                                                                    */

static void value_init(etw_decode_cursor *c, etw_value *v, etw_value_kind kind,
                       const etw_property *p) {
    v->kind = kind;
    v->prop = p;
    v->name = p->name;
    v->in_type = p->in_type;
    v->out_type = p->out_type;
    v->data = NULL;
    v->size = 0;
    v->array_count = 0;
    v->array_index = 0;
    v->in_array = 0;
    v->depth = (uint8_t)c->depth;
    v->pointer_size = c->pointer_size;
}

/* The rest of the payload as one UNSUPPORTED value; the enumeration ends. */
static etw_status take_rest(etw_decode_cursor *c, etw_value *v) {
    v->kind = ETW_VALUE_UNSUPPORTED;
    v->data = c->data + c->pos;
    v->size = c->size - c->pos;
    c->pos = c->size;
    c->done = 1;
    return ETW_OK;
}

/* The position of the first NUL unit in p[0..n) (n rounded down to the
 * unit), or that rounded length when there is none. */
uint32_t etw_decode_str_len(const uint8_t *p, uint32_t n, unsigned unit, int *found) {
    if (unit == 1) {
        const uint8_t *z = n ? memchr(p, 0, n) : NULL;
        *found = z != NULL;
        return z ? (uint32_t)(z - p) : n;
    }
    uint32_t end = n & ~1u, i = 0;
#if defined(__SSE2__)
    /* sixteen units a turn (the 16-bit lanes compared with zero) */
    const __m128i zero = _mm_setzero_si128();
    for (; i + 32 <= end; i += 32) {
        __m128i a = _mm_loadu_si128((const __m128i *)(const void *)(p + i));
        __m128i b = _mm_loadu_si128((const __m128i *)(const void *)(p + i + 16));
        uint32_t m = (uint32_t)_mm_movemask_epi8(_mm_cmpeq_epi16(a, zero)) |
                     (uint32_t)_mm_movemask_epi8(_mm_cmpeq_epi16(b, zero)) << 16;
        if (m) { /* a zero lane sets both its bits: the lowest is the unit's first byte */
            *found = 1;
            return i + (uint32_t)__builtin_ctz(m);
        }
    }
    if (i < end && end >= 32) {
        /* the rest in one turn: the last 32 bytes, which overlap units
         * already seen to be nonzero (end is even, so the lanes are units) */
        uint32_t at = end - 32;
        __m128i a = _mm_loadu_si128((const __m128i *)(const void *)(p + at));
        __m128i b = _mm_loadu_si128((const __m128i *)(const void *)(p + at + 16));
        uint32_t m = (uint32_t)_mm_movemask_epi8(_mm_cmpeq_epi16(a, zero)) |
                     (uint32_t)_mm_movemask_epi8(_mm_cmpeq_epi16(b, zero)) << 16;
        *found = m != 0;
        return m ? at + (uint32_t)__builtin_ctz(m) : end;
    }
#endif
    /* four units at a time while none of them is NUL: a 16-bit lane of
     * the word is zero exactly when both its bytes are, in either byte
     * order, and (x - 0x0001...) & ~x & 0x8000... is nonzero exactly when
     * some lane of x is zero; eight units (two words) a turn first */
    for (; i + 16 <= end; i += 16) {
        uint64_t x, y;
        memcpy(&x, p + i, 8);
        memcpy(&y, p + i + 8, 8);
        if ((((x - 0x0001000100010001ull) & ~x) | ((y - 0x0001000100010001ull) & ~y)) & 0x8000800080008000ull)
            break;
    }
    for (; i + 8 <= end; i += 8) {
        uint64_t x;
        memcpy(&x, p + i, 8);
        if ((x - 0x0001000100010001ull) & ~x & 0x8000800080008000ull) break;
    }
    for (; i < end; i += 2)
        if ((p[i] | p[i + 1]) == 0) {
            *found = 1;
            return i;
        }
    *found = 0;
    return end;
}

/* A length/count from a property flagged *_REF or *_FIXED: 1 and *out, or 0
 * when the referenced index is out of range. */
static int ref_value(const etw_decode_cursor *c, uint16_t index, uint64_t *out) {
    if (index >= c->schema->prop_count || index >= c->refs_len) return 0;
    *out = c->refs[index];
    return 1;
}

static uint64_t load_n(const uint8_t *d, uint32_t size);

/* An integer of `size` bytes at the cursor: its value is remembered for
 * count/length references to property idx. */
static etw_status fixed_int(etw_decode_cursor *c, etw_value *v, uint32_t idx, uint32_t size) {
    if (c->size - c->pos < size) return take_rest(c, v);
    c->refs[idx] = load_n(c->data + c->pos, size);
    v->size = size;
    c->pos += size;
    return ETW_OK;
}

/* Decode one scalar of property p (index idx) at the cursor into *v, whose
 * common fields are already set. */
static etw_status scalar(etw_decode_cursor *c, etw_value *v, const etw_property *p,
                         uint32_t idx) {
    const uint8_t *d = c->data + c->pos;
    uint32_t rest = c->size - c->pos;
    uint32_t size, take, n;
    uint16_t in = p->in_type;
    int found;

    v->kind = ETW_VALUE_SCALAR;
    v->data = d;
    if (p->flags & ETW_PROP_BITS) { /* bits of an earlier integer: no payload byte */
        uint64_t src;
        unsigned shift = p->length & 0xFFu, width = p->length >> 8;
        if (width < 1 || width > 8 || shift + width > 64 || p->count >= idx || !ref_value(c, p->count, &src))
            return take_rest(c, v);
        uint8_t b = (uint8_t)((src >> shift) & ((1u << width) - 1u));
        c->refs[idx] = b;
        v->in_type = ETW_INTYPE_UINT8;
        if (v->out_type == 0) v->out_type = ETW_OUTTYPE_UNSIGNEDBYTE;
        v->data = &byte_values[b];
        v->size = 1;
        return ETW_OK;
    }
    if (p->flags & ETW_PROP_CUSTOM_SIZED) {
        if (rest < 2) return take_rest(c, v);
        n = etw_le16(d);
        if (n > rest - 2) return take_rest(c, v);
        v->out_type = ETW_OUTTYPE_HEXBINARY;
        v->data = d + 2;
        v->size = n;
        c->pos += 2 + n;
        return ETW_OK;
    }
    if (v->out_type == 0) v->out_type = etw_default_outtype(in, c->pointer_size);

    switch (in) {
    /* integers: fixed size, and remembered for count/length references */
    case ETW_INTYPE_INT8:
    case ETW_INTYPE_UINT8:
    case ETW_INTYPE_ANSICHAR:
        return fixed_int(c, v, idx, 1);
    case ETW_INTYPE_INT16:
    case ETW_INTYPE_UINT16:
    case ETW_INTYPE_UNICODECHAR:
        return fixed_int(c, v, idx, 2);
    case ETW_INTYPE_INT32:
    case ETW_INTYPE_UINT32:
    case ETW_INTYPE_HEXINT32:
    case ETW_INTYPE_BOOLEAN:
        return fixed_int(c, v, idx, 4);
    case ETW_INTYPE_INT64:
    case ETW_INTYPE_UINT64:
    case ETW_INTYPE_HEXINT64:
        return fixed_int(c, v, idx, 8);
    case ETW_INTYPE_POINTER:
    case ETW_INTYPE_SIZET:
        v->in_type = ETW_INTYPE_POINTER;
        size = c->pointer_size;
        if (rest < size) return take_rest(c, v);
        c->refs[idx] = size == 4 ? etw_le32(d) : etw_le64(d);
        v->size = size;
        c->pos += size;
        return ETW_OK;

    /* other fixed sizes */
    case ETW_INTYPE_NULL:
        v->size = 0;
        return ETW_OK;
    case ETW_INTYPE_FLOAT: size = 4; goto fixed;
    case ETW_INTYPE_DOUBLE:
    case ETW_INTYPE_FILETIME: size = 8; goto fixed;
    case ETW_INTYPE_GUID:
    case ETW_INTYPE_SYSTEMTIME: size = 16; goto fixed;

    /* NUL-terminated or length-given strings, length-given binary */
    case ETW_INTYPE_UNICODESTRING:
    case ETW_INTYPE_ANSISTRING: {
        unsigned unit = in == ETW_INTYPE_UNICODESTRING ? 2 : 1;
        if (p->flags & (ETW_PROP_LENGTH_REF | ETW_PROP_LENGTH_FIXED)) {
            uint64_t len = p->length;
            if ((p->flags & ETW_PROP_LENGTH_REF) && !ref_value(c, p->length, &len))
                return take_rest(c, v);
            if (len > rest / unit) return take_rest(c, v);
            take = (uint32_t)len * unit;
            size = etw_decode_str_len(d, take, unit, &found);
        } else {
            size = etw_decode_str_len(d, rest, unit, &found);
            take = found ? size + unit : rest;
        }
        v->size = size;
        c->pos += take;
        return ETW_OK;
    }
    case ETW_INTYPE_BINARY:
        if (p->flags & ETW_PROP_LENGTH_TO_END) {
            size = rest;
            goto fixed;
        }
        if (p->flags & (ETW_PROP_LENGTH_REF | ETW_PROP_LENGTH_FIXED)) {
            uint64_t len = p->length;
            if ((p->flags & ETW_PROP_LENGTH_REF) && !ref_value(c, p->length, &len))
                return take_rest(c, v);
            if (len > rest) return take_rest(c, v);
            size = (uint32_t)len;
            goto fixed;
        }
        if (p->out_type == ETW_OUTTYPE_IPV6) {
            size = 16;
            goto fixed;
        }
        return take_rest(c, v); /* size unknown */

    /* counted strings and binary */
    case ETW_INTYPE_MANIFEST_COUNTEDSTRING:
    case ETW_INTYPE_MANIFEST_COUNTEDANSISTRING:
    case ETW_INTYPE_COUNTEDSTRING:
    case ETW_INTYPE_COUNTEDANSISTRING:
    case ETW_INTYPE_REVERSEDCOUNTEDSTRING:
    case ETW_INTYPE_REVERSEDCOUNTEDANSISTRING:
    case ETW_INTYPE_MANIFEST_COUNTEDBINARY: {
        unsigned unit;
        if (rest < 2) return take_rest(c, v);
        if (in == ETW_INTYPE_REVERSEDCOUNTEDSTRING ||
            in == ETW_INTYPE_REVERSEDCOUNTEDANSISTRING)
            n = etw_be16(d);
        else
            n = etw_le16(d);
        if (n > rest - 2) return take_rest(c, v);
        v->data = d + 2;
        c->pos += 2 + n;
        if (in == ETW_INTYPE_MANIFEST_COUNTEDBINARY) {
            v->size = n;
            return ETW_OK;
        }
        unit = (in == ETW_INTYPE_MANIFEST_COUNTEDSTRING ||
                in == ETW_INTYPE_COUNTEDSTRING ||
                in == ETW_INTYPE_REVERSEDCOUNTEDSTRING) ? 2 : 1;
        v->size = etw_decode_str_len(d + 2, n, unit, &found);
        if (!found && unit == 2) v->size = n; /* keep an odd last byte: ignored by writers */
        return ETW_OK;
    }
    case ETW_INTYPE_NONNULLTERMINATEDSTRING:
    case ETW_INTYPE_NONNULLTERMINATEDANSISTRING:
        v->size = etw_decode_str_len(d, rest, in == ETW_INTYPE_NONNULLTERMINATEDSTRING ? 2 : 1,
                          &found);
        c->pos = c->size;
        return ETW_OK;
    case ETW_INTYPE_HEXDUMP:
        if (rest < 4) return take_rest(c, v);
        n = etw_le32(d);
        if (n > rest - 4) return take_rest(c, v);
        v->data = d + 4;
        v->size = n;
        c->pos += 4 + n;
        return ETW_OK;

    /* SIDs */
    case ETW_INTYPE_SID:
        if (rest < 8 || d[1] > 15) return take_rest(c, v);
        size = 8 + 4u * d[1];
        goto fixed;
    case ETW_INTYPE_WBEMSID: {
        uint32_t off = 2u * c->pointer_size;
        if (rest < 4) return take_rest(c, v);
        if (etw_le32(d) == 0) {
            size = 4;
            goto fixed;
        }
        if (rest < off + 8 || d[off + 1] > 15) return take_rest(c, v);
        size = off + 8 + 4u * d[off + 1];
        goto fixed;
    }

    default:
        return take_rest(c, v); /* unknown in-type: size unknown */
    }

fixed:
    if (rest < size) return take_rest(c, v);
    v->size = size;
    c->pos += size;
    return ETW_OK;
}

/* Push a LEVEL frame for the members of struct property p. */
static void push_level(etw_decode_cursor *c, const etw_property *p, uint32_t prop) {
    uint16_t pc = c->schema->prop_count;
    etw_decode_frame *f = &c->stack[++c->depth];
    f->first = p->struct_first;
    if (p->struct_first >= pc)
        f->count = 0;
    else
        f->count = p->struct_count < pc - p->struct_first
                       ? p->struct_count
                       : (uint16_t)(pc - p->struct_first);
    f->next = 0;
    f->prop = (uint16_t)prop;
    f->elems = 0;
    f->elem = 0;
    f->kind = FR_LEVEL;
    f->c_align = (p->flags & ETW_PROP_C_ALIGNED) ? 1 : 0;
    f->c_base = c->pos;
}

/* The alignment a C compiler gives a member of property p's type (1 for
 * anything but a fixed-size scalar: ETW_PROP_C_ALIGNED). */
static uint32_t c_alignment(const etw_property *p, uint8_t ptr) {
    if (p->flags & (ETW_PROP_STRUCT | ETW_PROP_ARRAY_MASK | ETW_PROP_CUSTOM_SIZED)) return 1;
    switch (p->in_type) {
    case ETW_INTYPE_INT16:
    case ETW_INTYPE_UINT16:
    case ETW_INTYPE_UNICODECHAR:
    case ETW_INTYPE_SYSTEMTIME: return 2;
    case ETW_INTYPE_INT32:
    case ETW_INTYPE_UINT32:
    case ETW_INTYPE_HEXINT32:
    case ETW_INTYPE_BOOLEAN:
    case ETW_INTYPE_FLOAT:
    case ETW_INTYPE_GUID:
    case ETW_INTYPE_FILETIME: return 4;
    case ETW_INTYPE_INT64:
    case ETW_INTYPE_UINT64:
    case ETW_INTYPE_HEXINT64:
    case ETW_INTYPE_DOUBLE: return 8;
    case ETW_INTYPE_POINTER:
    case ETW_INTYPE_SIZET: return ptr;
    default: return 1;
    }
}

/* In a C-aligned level f, skip the padding before a position aligned to a
 * (from the instance's start), when the payload holds it; a payload that
 * ends inside the padding is left to the next read, which takes the rest. */
static void c_pad(etw_decode_cursor *c, etw_decode_frame *f, uint32_t a) {
    if (a > f->c_align) f->c_align = (uint8_t)a;
    uint32_t off = c->pos - f->c_base;
    uint32_t pad = (a - off % a) % a;
    if (pad <= c->size - c->pos) c->pos += pad;
}

/* A property at a LEVEL frame: scalar, struct or array. */

/* The in/out types an ARRAY_BEGIN/END item reports: STRUCT for arrays of
 * structs, else the element's effective types. */
static void array_types(const etw_decode_cursor *c, etw_value *v, const etw_property *p, int of_structs) {
    if (of_structs) {
        v->in_type = ETW_INTYPE_RESERVED24;
        v->out_type = 0;
        return;
    }
    if (v->in_type == ETW_INTYPE_SIZET) v->in_type = ETW_INTYPE_POINTER;
    if (p->flags & ETW_PROP_CUSTOM_SIZED)
        v->out_type = ETW_OUTTYPE_HEXBINARY;
    else if (v->out_type == 0)
        v->out_type = etw_default_outtype(p->in_type, c->pointer_size);
}

static etw_status property(etw_decode_cursor *c, etw_value *v, uint32_t idx) {
    const etw_property *p = &c->schema->props[idx];
    int is_struct = (p->flags & ETW_PROP_STRUCT) != 0;

    value_init(c, v, ETW_VALUE_SCALAR, p);
    if (c->zero_items >= c->zero_max) {
        if (is_struct) v->in_type = ETW_INTYPE_RESERVED24;
        return take_rest(c, v);
    }
    if (p->flags & ETW_PROP_ARRAY_MASK) {
        unsigned need = is_struct ? 2 : 1;
        uint64_t n;
        uint32_t rest;
        array_types(c, v, p, is_struct);
        if (c->depth + need > ETW_DECODE_MAX_DEPTH) return take_rest(c, v);
        if (p->flags & ETW_PROP_COUNT_IN_DATA) {
            if (c->size - c->pos < 2) return take_rest(c, v);
            n = etw_le16(c->data + c->pos);
            c->pos += 2;
        } else if (p->flags & ETW_PROP_COUNT_REF) {
            if (!ref_value(c, p->count, &n)) return take_rest(c, v);
        } else {
            n = p->count;
        }
        if (n > UINT32_MAX) n = UINT32_MAX;
        rest = c->size - c->pos;
        if (n > ETW_ARRAY_CAP && n > rest) n = rest > ETW_ARRAY_CAP ? rest : ETW_ARRAY_CAP;
        v->kind = ETW_VALUE_ARRAY_BEGIN;
        v->array_count = (uint32_t)n;
        etw_decode_frame *f = &c->stack[++c->depth];
        f->first = p->struct_first;
        f->count = 0;
        f->next = 0;
        f->prop = (uint16_t)idx;
        f->elems = (uint32_t)n;
        f->elem = 0;
        f->elem_pos = c->pos;
        f->kind = is_struct ? FR_ARRAY_STRUCT : FR_ARRAY;
        f->c_align = 0;
        f->c_base = 0;
        return ETW_OK;
    }
    if (is_struct) {
        v->in_type = ETW_INTYPE_RESERVED24;
        v->out_type = 0;
        if (c->depth + 1u > ETW_DECODE_MAX_DEPTH) return take_rest(c, v);
        v->kind = ETW_VALUE_STRUCT_BEGIN;
        push_level(c, p, idx);
        return ETW_OK;
    }
    return scalar(c, v, p, idx);
}

static etw_status next_item(etw_decode_cursor *c, etw_value *v) {
    const etw_property *props = c->schema->props;
    etw_decode_frame *f = &c->stack[c->depth];

    if (f->kind == FR_LEVEL) {
        if (f->next < f->count) {
            uint32_t idx = (uint32_t)f->first + f->next++;
            if (c->depth == 0 && c->pos == c->size && (props[idx].flags & ETW_PROP_OPTIONAL)) {
                c->done = 1; /* the payload ends before an optional property */
                return ETW_END;
            }
            if (f->c_align) c_pad(c, f, c_alignment(&props[idx], c->pointer_size));
            return property(c, v, idx);
        }
        if (c->depth == 0) {
            c->done = 1;
            return ETW_END;
        }
        /* end of a struct (or of one struct element of an array) */
        const etw_property *p = &props[f->prop];
        if (f->c_align) c_pad(c, f, f->c_align); /* the instance's tail padding */
        c->depth--;
        value_init(c, v, ETW_VALUE_STRUCT_END, p);
        v->in_type = ETW_INTYPE_RESERVED24;
        v->out_type = 0;
        f = &c->stack[c->depth];
        if (f->kind == FR_ARRAY_STRUCT) {
            v->in_array = 1;
            v->array_index = f->elem;
            v->array_count = f->elems;
            f->elem++;
        }
        return ETW_OK;
    }

    /* an array frame */
    const etw_property *p = &props[f->prop];
    if (f->elem >= f->elems) {
        c->depth--;
        value_init(c, v, ETW_VALUE_ARRAY_END, p);
        v->array_count = f->elems;
        array_types(c, v, p, f->kind == FR_ARRAY_STRUCT);
        return ETW_OK;
    }
    value_init(c, v, ETW_VALUE_SCALAR, p);
    v->in_array = 1;
    v->array_index = f->elem;
    v->array_count = f->elems;
    if (f->kind == FR_ARRAY_STRUCT) v->in_type = ETW_INTYPE_RESERVED24;
    if (c->zero_items >= c->zero_max) return take_rest(c, v);
    if (f->elem > 0 && c->pos == f->elem_pos) {
        /* the previous element took no byte: the rest would repeat it */
        v->kind = ETW_VALUE_UNSUPPORTED;
        v->data = c->data + c->pos;
        v->size = 0;
        f->elem = f->elems;
        return ETW_OK;
    }
    f->elem_pos = c->pos;
    if (f->kind == FR_ARRAY_STRUCT) {
        v->kind = ETW_VALUE_STRUCT_BEGIN;
        v->in_type = ETW_INTYPE_RESERVED24;
        v->out_type = 0;
        push_level(c, p, f->prop);
        return ETW_OK;
    }
    f->elem++;
    return scalar(c, v, p, f->prop);
}

etw_status etw_decode_next(etw_decode_cursor *c, etw_value *v) {
    if (!c || !v) return ETW_E_INVALID_ARG;
    if (c->done) return ETW_END;
    uint32_t pos0 = c->pos;
    etw_status st = next_item(c, v);
    /* END markers and the BEGIN of a struct element are not counted */
    if (st == ETW_OK && c->pos == pos0 && v->kind != ETW_VALUE_STRUCT_END &&
        v->kind != ETW_VALUE_ARRAY_END && !(v->kind == ETW_VALUE_STRUCT_BEGIN && v->in_array))
        c->zero_items++;
    return st;
}

/* ------------------------------------------------------------------------ */
/* convenience readers                                                      */

static int is_integer(uint16_t in) {
    switch (in) {
    case ETW_INTYPE_INT8:
    case ETW_INTYPE_UINT8:
    case ETW_INTYPE_INT16:
    case ETW_INTYPE_UINT16:
    case ETW_INTYPE_INT32:
    case ETW_INTYPE_UINT32:
    case ETW_INTYPE_INT64:
    case ETW_INTYPE_UINT64:
    case ETW_INTYPE_BOOLEAN:
    case ETW_INTYPE_POINTER:
    case ETW_INTYPE_SIZET:
    case ETW_INTYPE_HEXINT32:
    case ETW_INTYPE_HEXINT64:
    case ETW_INTYPE_UNICODECHAR:
    case ETW_INTYPE_ANSICHAR: return 1;
    default: return 0;
    }
}

static uint64_t load_n(const uint8_t *d, uint32_t size) {
    switch (size) {
    case 1: return d[0];
    case 2: return etw_le16(d);
    case 4: return etw_le32(d);
    case 8: return etw_le64(d);
    default: return 0;
    }
}

uint64_t etw_value_u64(const etw_value *v) {
    if (!v || v->kind != ETW_VALUE_SCALAR || !v->data || !is_integer(v->in_type) ||
        (v->prop && (v->prop->flags & ETW_PROP_CUSTOM_SIZED)))
        return 0;
    return load_n(v->data, v->size);
}

int etw_value_is_integer(const etw_value *v) {
    return v && v->kind == ETW_VALUE_SCALAR && v->data && is_integer(v->in_type) &&
           !(v->prop && (v->prop->flags & ETW_PROP_CUSTOM_SIZED)) &&
           (v->size == 1 || v->size == 2 || v->size == 4 || v->size == 8);
}

int64_t etw_value_i64(const etw_value *v) {
    uint64_t u = etw_value_u64(v);
    if (!v) return 0;
    switch (v->in_type) {
    case ETW_INTYPE_INT8: return (int8_t)(uint8_t)u;
    case ETW_INTYPE_INT16: return (int16_t)(uint16_t)u;
    case ETW_INTYPE_INT32: return (int32_t)(uint32_t)u;
    default: return (int64_t)u; /* INT64 and unsigned types: the 64 bits */
    }
}

double etw_value_double(const etw_value *v) {
    if (!v || v->kind != ETW_VALUE_SCALAR || !v->data ||
        (v->prop && (v->prop->flags & ETW_PROP_CUSTOM_SIZED)))
        return 0;
    if (v->in_type == ETW_INTYPE_FLOAT && v->size == 4) {
        uint32_t b = etw_le32(v->data);
        float f;
        memcpy(&f, &b, sizeof f);
        return f;
    }
    if (v->in_type == ETW_INTYPE_DOUBLE && v->size == 8) {
        uint64_t b = etw_le64(v->data);
        double d;
        memcpy(&d, &b, sizeof d);
        return d;
    }
    return 0;
}

int etw_decode_walk_u32(const etw_schema *s, const etw_event *ev, uint16_t index, int size4, uint32_t *v) {
    if (index >= ETW_DECODE_WALK_MAX || index >= s->top_count || index >= s->prop_count) return 0;
    /* scalars only before it, so the small scratch holds every reference */
    for (uint16_t i = 0; i <= index; i++)
        if (s->props[i].flags & (ETW_PROP_STRUCT | ETW_PROP_ARRAY_MASK)) return 0;
    etw_schema part = *s;
    part.prop_count = (uint16_t)(index + 1);
    part.top_count = (uint16_t)(index + 1);
    uint64_t refs[ETW_DECODE_WALK_MAX];
    etw_decode_cursor c;
    etw_value val;
    if (etw_decode_begin(&c, &part, ev, refs, ETW_DECODE_WALK_MAX) != ETW_OK) return 0;
    for (uint16_t i = 0; etw_decode_next(&c, &val) == ETW_OK; i++) {
        if (val.kind != ETW_VALUE_SCALAR) return 0;
        if (i == index) {
            if (!etw_value_is_integer(&val) || (size4 && val.size != 4)) return 0;
            *v = (uint32_t)etw_value_u64(&val);
            return 1;
        }
    }
    return 0;
}

/* Bytes scalar() takes for property p at d[0..rest): 0..rest, or
 * UINT32_MAX when it takes the rest (take_rest: the walk ends there), or
 * UINT32_MAX - 1 when the size depends on more than the payload. The
 * cases and their order are scalar()'s. */
#define TAKES_REST UINT32_MAX
#define NOT_FLAT (UINT32_MAX - 1)
static uint32_t scalar_bytes(const etw_property *p, const uint8_t *d, uint32_t rest, uint8_t ptr) {
    uint32_t size, n;
    int found;
    if (p->flags & (ETW_PROP_BITS | ETW_PROP_LENGTH_REF | ETW_PROP_STRUCT | ETW_PROP_ARRAY_MASK)) return NOT_FLAT;
    if (p->flags & ETW_PROP_CUSTOM_SIZED) {
        if (rest < 2) return TAKES_REST;
        n = etw_le16(d);
        return n > rest - 2 ? TAKES_REST : 2 + n;
    }
    switch (p->in_type) {
    case ETW_INTYPE_INT8:
    case ETW_INTYPE_UINT8:
    case ETW_INTYPE_ANSICHAR: size = 1; break;
    case ETW_INTYPE_INT16:
    case ETW_INTYPE_UINT16:
    case ETW_INTYPE_UNICODECHAR: size = 2; break;
    case ETW_INTYPE_INT32:
    case ETW_INTYPE_UINT32:
    case ETW_INTYPE_HEXINT32:
    case ETW_INTYPE_BOOLEAN:
    case ETW_INTYPE_FLOAT: size = 4; break;
    case ETW_INTYPE_INT64:
    case ETW_INTYPE_UINT64:
    case ETW_INTYPE_HEXINT64:
    case ETW_INTYPE_DOUBLE:
    case ETW_INTYPE_FILETIME: size = 8; break;
    case ETW_INTYPE_POINTER:
    case ETW_INTYPE_SIZET: size = ptr; break;
    case ETW_INTYPE_GUID:
    case ETW_INTYPE_SYSTEMTIME: size = 16; break;
    case ETW_INTYPE_UNICODESTRING:
    case ETW_INTYPE_ANSISTRING: {
        unsigned unit = p->in_type == ETW_INTYPE_UNICODESTRING ? 2 : 1;
        if (p->flags & ETW_PROP_LENGTH_FIXED) {
            if (p->length > rest / unit) return TAKES_REST;
            return (uint32_t)p->length * unit;
        }
        size = etw_decode_str_len(d, rest, unit, &found);
        return found ? size + unit : rest;
    }
    case ETW_INTYPE_BINARY:
        if (p->flags & ETW_PROP_LENGTH_TO_END) return rest;
        if (p->flags & ETW_PROP_LENGTH_FIXED) size = p->length;
        else if (p->out_type == ETW_OUTTYPE_IPV6) size = 16;
        else return TAKES_REST;
        break;
    case ETW_INTYPE_MANIFEST_COUNTEDSTRING:
    case ETW_INTYPE_MANIFEST_COUNTEDANSISTRING:
    case ETW_INTYPE_COUNTEDSTRING:
    case ETW_INTYPE_COUNTEDANSISTRING:
    case ETW_INTYPE_REVERSEDCOUNTEDSTRING:
    case ETW_INTYPE_REVERSEDCOUNTEDANSISTRING:
    case ETW_INTYPE_MANIFEST_COUNTEDBINARY:
        if (rest < 2) return TAKES_REST;
        n = p->in_type == ETW_INTYPE_REVERSEDCOUNTEDSTRING || p->in_type == ETW_INTYPE_REVERSEDCOUNTEDANSISTRING
                ? etw_be16(d)
                : etw_le16(d);
        return n > rest - 2 ? TAKES_REST : 2 + n;
    case ETW_INTYPE_NONNULLTERMINATEDSTRING:
    case ETW_INTYPE_NONNULLTERMINATEDANSISTRING: return rest;
    case ETW_INTYPE_HEXDUMP:
        if (rest < 4) return TAKES_REST;
        n = etw_le32(d);
        return n > rest - 4 ? TAKES_REST : 4 + n;
    case ETW_INTYPE_SID:
        if (rest < 8 || d[1] > 15) return TAKES_REST;
        size = 8 + 4u * d[1];
        break;
    case ETW_INTYPE_WBEMSID: {
        uint32_t off = 2u * ptr;
        if (rest < 4) return TAKES_REST;
        if (etw_le32(d) == 0) {
            size = 4;
            break;
        }
        if (rest < off + 8 || d[off + 1] > 15) return TAKES_REST;
        size = off + 8 + 4u * d[off + 1];
        break;
    }
    default: return NOT_FLAT; /* NULL (zero bytes, counted) and unknown in-types: the walk */
    }
    return rest < size ? TAKES_REST : size;
}

/* The fixed size of an array element of in-type in (0: not fixed). */
static uint32_t elem_size(uint16_t in, uint8_t ptr) {
    switch (in) {
    case ETW_INTYPE_INT8:
    case ETW_INTYPE_UINT8:
    case ETW_INTYPE_ANSICHAR: return 1;
    case ETW_INTYPE_INT16:
    case ETW_INTYPE_UINT16:
    case ETW_INTYPE_UNICODECHAR: return 2;
    case ETW_INTYPE_INT32:
    case ETW_INTYPE_UINT32:
    case ETW_INTYPE_HEXINT32:
    case ETW_INTYPE_BOOLEAN:
    case ETW_INTYPE_FLOAT: return 4;
    case ETW_INTYPE_INT64:
    case ETW_INTYPE_UINT64:
    case ETW_INTYPE_HEXINT64:
    case ETW_INTYPE_DOUBLE:
    case ETW_INTYPE_FILETIME: return 8;
    case ETW_INTYPE_POINTER:
    case ETW_INTYPE_SIZET: return ptr;
    case ETW_INTYPE_GUID:
    case ETW_INTYPE_SYSTEMTIME: return 16;
    default: return 0;
    }
}

/* References the flat walk keeps (the integers an array's count names). */
#define FLAT_REFS 64

/* Whether top-level property i of s is one the flat walk handles: a
 * scalar (a bit field of an earlier integer too), or an array of
 * fixed-size scalars whose count is literal, in the data or an earlier
 * integer's (among the first FLAT_REFS). */
static int flat_prop(const etw_schema *s, uint32_t i) {
    const etw_property *p = &s->props[i];
    if (p->flags & (ETW_PROP_LENGTH_REF | ETW_PROP_STRUCT)) return 0;
    if (!(p->flags & ETW_PROP_ARRAY_MASK)) return 1;
    if (p->flags & (ETW_PROP_BITS | ETW_PROP_CUSTOM_SIZED) || !elem_size(p->in_type, 8)) return 0;
    if (p->flags & ETW_PROP_COUNT_IN_DATA) return 1;
    if (p->flags & ETW_PROP_COUNT_REF)
        return p->count < i && p->count < FLAT_REFS && !(s->props[p->count].flags & (ETW_PROP_BITS | ETW_PROP_ARRAY_MASK | ETW_PROP_STRUCT));
    return 1;
}

/* The flat walk of ev's top-level properties up to the last of `stops`
 * (nstops strictly increasing indices; none: all): 1 and the position
 * *pos_out where the last stop starts (the payload's end for all, or where
 * the walk stopped), and for each stop k whether the walk reached it as a
 * value (reached[k]), where it starts (at[k]) and its bytes (takes[k]); 0
 * when a property needs the walk. What it does at each property is what
 * property() and next_item() do; a stop is passed as any property is. */
static int flat_walk(const etw_schema *s, const etw_event *ev, size_t refs_len, const uint16_t *stops,
                     uint32_t nstops, uint32_t *pos_out, uint32_t *takes, uint32_t *at, uint8_t *reached) {
    /* where etw_decode_begin refuses, the walk leaves nothing */
    if ((s->prop_count && (!s->props || refs_len < s->prop_count)) || (!ev->user_data && ev->user_data_len))
        return 0;
    const uint8_t *data = ev->user_data ? ev->user_data : empty_payload;
    uint32_t size = ev->user_data ? ev->user_data_len : 0;
    uint8_t ptr = ev->pointer_size == 4 || ev->pointer_size == 8 ? ev->pointer_size : s->pointer_size == 4 ? 4 : 8;
    uint32_t zero_max = size > UINT32_MAX - ETW_ZERO_ITEMS_BASE ? UINT32_MAX : ETW_ZERO_ITEMS_BASE + size;
    uint32_t count = s->top_count < s->prop_count ? s->top_count : s->prop_count;
    uint32_t pos = 0, zero = 0;
    uint64_t refs[FLAT_REFS];
    /* first, whether the walk would need what only it has */
    int need_refs = 0; /* an array counted by an earlier integer */
    for (uint32_t i = 0; i < count; i++) {
        uint32_t f = s->props[i].flags;
        if (!(f & (ETW_PROP_LENGTH_REF | ETW_PROP_STRUCT | ETW_PROP_ARRAY_MASK))) continue; /* a scalar */
        if (!flat_prop(s, i)) return 0;
        if (f & ETW_PROP_COUNT_REF) need_refs = 1;
    }
    if (need_refs)
        for (uint32_t i = 0; i < count && i < FLAT_REFS; i++) refs[i] = 0;
    for (uint32_t k = 0; k < nstops; k++) reached[k] = 0;
    uint32_t next = 0; /* the stop to meet */
    for (uint32_t i = 0; i < count; i++) {
        const etw_property *p = &s->props[i];
        if (pos == size && (p->flags & ETW_PROP_OPTIONAL)) break;
        if (zero >= zero_max) {
            pos = size; /* the rest as one value: no more properties */
            break;
        }
        uint32_t rest = size - pos;
        if (p->flags & ETW_PROP_ARRAY_MASK) {
            if (next < nstops && i == stops[next]) return 0; /* no scalar: the walk */
            uint64_t n;
            uint32_t k = elem_size(p->in_type, ptr);
            int moved = 0;
            if (p->flags & ETW_PROP_COUNT_IN_DATA) {
                if (rest < 2) {
                    pos = size;
                    break;
                }
                n = etw_le16(data + pos);
                pos += 2;
                rest -= 2;
                moved = 1;
            } else if (p->flags & ETW_PROP_COUNT_REF) {
                n = refs[p->count];
            } else {
                n = p->count;
            }
            if (n > UINT32_MAX) n = UINT32_MAX;
            if (n > ETW_ARRAY_CAP && n > rest) n = rest > ETW_ARRAY_CAP ? rest : ETW_ARRAY_CAP;
            if (!moved) zero++; /* the ARRAY_BEGIN item took no byte */
            if (!n) continue;
            if (zero >= zero_max || n * k > rest) {
                pos = size; /* an element takes the rest */
                break;
            }
            pos += (uint32_t)(n * k);
            continue;
        }
        uint32_t take;
        if (p->flags & ETW_PROP_BITS) {
            unsigned shift = p->length & 0xFFu, width = p->length >> 8;
            /* no byte; its value is never a count here (flat_prop) */
            take = width < 1 || width > 8 || shift + width > 64 || p->count >= i ? TAKES_REST : 0;
        } else {
            take = scalar_bytes(p, data + pos, rest, ptr);
        }
        if (take == NOT_FLAT) return 0;
        if (take == TAKES_REST) {
            pos = size;
            break;
        }
        if (next < nstops && i == stops[next]) {
            reached[next] = 1;
            takes[next] = take;
            at[next] = pos;
            if (++next == nstops) break;
        }
        if (need_refs && i < FLAT_REFS && !(p->flags & ETW_PROP_BITS)) {
            /* an integer's value, as fixed_int() and the pointer case keep it */
            if (is_integer(p->in_type) && !(p->flags & ETW_PROP_CUSTOM_SIZED) && take && take <= 8)
                refs[i] = load_n(data + pos, take);
        }
        if (!take) zero++;
        pos += take;
    }
    *pos_out = pos;
    return 1;
}

int etw_decode_walk_trailing(const etw_schema *s, const etw_event *ev, size_t refs_len, uint32_t *trailing) {
    if (!s || !ev || !trailing) return 0;
    uint32_t pos;
    if (!flat_walk(s, ev, refs_len, NULL, 0, &pos, NULL, NULL, NULL)) return 0;
    *trailing = (ev->user_data ? ev->user_data_len : 0) - pos;
    return 1;
}

/* The bytes top-level property idx takes whatever the payload holds (see
 * etw_decode_plan), or UINT64_MAX when the payload decides: the cases of
 * scalar_bytes() and flat_walk() whose size is the schema's alone. *zero:
 * 1 when the walk counts it as an item that took no byte. */
_Static_assert(ETW_ARRAY_CAP >= UINT16_MAX, "a literal array count (16 bits) is never cut to the payload");
static uint64_t fixed_prop_bytes(const etw_property *p, uint32_t idx, uint8_t ptr, int *zero) {
    uint64_t n;
    *zero = 0;
    if (p->flags & (ETW_PROP_LENGTH_REF | ETW_PROP_STRUCT)) return UINT64_MAX;
    if (p->flags & ETW_PROP_BITS) {
        /* bits of an earlier integer take no byte (flat_walk); the
         * layouts it ends the walk at are left to it */
        unsigned shift = p->length & 0xFFu, width = p->length >> 8;
        if (p->flags & ETW_PROP_ARRAY_MASK || width < 1 || width > 8 || shift + width > 64 || p->count >= idx)
            return UINT64_MAX;
        *zero = 1;
        return 0;
    }
    if (p->flags & ETW_PROP_CUSTOM_SIZED) return UINT64_MAX;
    if (p->flags & ETW_PROP_ARRAY_MASK) {
        /* a literal count (16 bits: never past ETW_ARRAY_CAP, which the
         * walk would cut to the payload) of fixed-size elements; its
         * BEGIN item takes no byte */
        if (p->flags & (ETW_PROP_COUNT_IN_DATA | ETW_PROP_COUNT_REF) || !elem_size(p->in_type, ptr)) return UINT64_MAX;
        *zero = 1;
        return (uint64_t)p->count * elem_size(p->in_type, ptr);
    }
    switch (p->in_type) {
    case ETW_INTYPE_UNICODESTRING:
    case ETW_INTYPE_ANSISTRING:
        if (!(p->flags & ETW_PROP_LENGTH_FIXED)) return UINT64_MAX;
        n = (uint64_t)p->length * (p->in_type == ETW_INTYPE_UNICODESTRING ? 2 : 1);
        break;
    case ETW_INTYPE_BINARY:
        if (p->flags & ETW_PROP_LENGTH_TO_END) return UINT64_MAX;
        if (p->flags & ETW_PROP_LENGTH_FIXED) n = p->length;
        else if (p->out_type == ETW_OUTTYPE_IPV6) n = 16;
        else return UINT64_MAX;
        break;
    default:
        n = elem_size(p->in_type, ptr); /* the fixed-size scalars */
        if (!n) return UINT64_MAX;
    }
    *zero = n == 0;
    return n;
}

/* Starts a plan step; 0 when the plan has no room. */
static int plan_step(etw_decode_plan_t *pl, uint8_t kind) {
    if (pl->nsteps == ETW_DECODE_PLAN_STEPS) return 0;
    etw_decode_plan_step *st = &pl->steps[pl->nsteps++];
    memset(st, 0, sizeof *st);
    st->kind = kind;
    return 1;
}

int etw_decode_plan(const etw_schema *s, uint8_t ptr, etw_decode_plan_t *pl) {
    if (!s || !pl || (s->prop_count && !s->props) || (ptr != 4 && ptr != 8)) return 0;
    uint32_t count = s->top_count < s->prop_count ? s->top_count : s->prop_count;
    /* where each integer property starts while no string came before it
     * (UINT32_MAX: not known) */
    uint32_t off[FLAT_REFS];
    uint64_t run = 0;    /* fixed bytes since the last variable step */
    uint64_t at = 0;     /* the static offset while every step so far is fixed */
    int static_at = 1;
    uint32_t zeros = 0;  /* items that take no byte */
    pl->nsteps = 0;
    if (!plan_step(pl, ETW_PLAN_END)) return 0;
    for (uint32_t i = 0; i < count; i++) {
        const etw_property *p = &s->props[i];
        if (i < FLAT_REFS) off[i] = UINT32_MAX;
        int zero;
        uint64_t n = fixed_prop_bytes(p, i, ptr, &zero);
        if (n != UINT64_MAX) {
            if (i < FLAT_REFS && static_at && is_integer(p->in_type) && !(p->flags & (ETW_PROP_ARRAY_MASK | ETW_PROP_BITS)) && n && n <= 8)
                off[i] = (uint32_t)at;
            run += n;
            at += n;
            zeros += (uint32_t)zero;
        } else if (!(p->flags & ~(uint32_t)ETW_PROP_OPTIONAL) &&
                   (p->in_type == ETW_INTYPE_UNICODESTRING || p->in_type == ETW_INTYPE_ANSISTRING)) {
            /* a NUL-terminated string */
            pl->steps[pl->nsteps - 1].skip = (uint32_t)run;
            pl->steps[pl->nsteps - 1].kind = p->in_type == ETW_INTYPE_UNICODESTRING ? ETW_PLAN_STR16 : ETW_PLAN_STR8;
            if (!plan_step(pl, ETW_PLAN_END)) return 0;
            run = 0;
            static_at = 0;
        } else if ((p->flags & ETW_PROP_ARRAY_MASK) == ETW_PROP_COUNT_REF &&
                   !(p->flags & (ETW_PROP_BITS | ETW_PROP_LENGTH_REF | ETW_PROP_STRUCT | ETW_PROP_CUSTOM_SIZED)) &&
                   elem_size(p->in_type, ptr) && p->count < i && p->count < FLAT_REFS && off[p->count] != UINT32_MAX) {
            /* an array counted by an integer at a known offset */
            const etw_property *c = &s->props[p->count];
            if (c->flags & (ETW_PROP_BITS | ETW_PROP_ARRAY_MASK | ETW_PROP_STRUCT | ETW_PROP_CUSTOM_SIZED)) return 0;
            etw_decode_plan_step *st = &pl->steps[pl->nsteps - 1];
            st->skip = (uint32_t)run;
            st->kind = ETW_PLAN_ARRAY;
            st->elem = (uint8_t)elem_size(p->in_type, ptr);
            st->count_size = (uint8_t)elem_size(c->in_type, ptr);
            st->count_off = off[p->count];
            if (!plan_step(pl, ETW_PLAN_END)) return 0;
            run = 0;
            static_at = 0;
            zeros++;
        } else {
            return 0;
        }
        /* below the zero-item limit (at least ETW_ZERO_ITEMS_BASE) those
         * never end the walk; sizes stay 32-bit */
        if (zeros >= ETW_ZERO_ITEMS_BASE || run > UINT32_MAX) return 0;
    }
    pl->steps[pl->nsteps - 1].skip = (uint32_t)run;
    return 1;
}

uint32_t etw_decode_plan_trailing(const etw_decode_plan_t *pl, const uint8_t *data, uint32_t size) {
    uint32_t pos = 0;
    if (!data) {
        data = empty_payload;
        size = 0;
    }
    for (uint32_t i = 0; i < pl->nsteps; i++) {
        const etw_decode_plan_step *st = &pl->steps[i];
        /* a walk that runs out of payload ends there: nothing trails */
        if (size - pos < st->skip) return 0;
        pos += st->skip;
        uint32_t rest = size - pos;
        int found;
        switch (st->kind) {
        case ETW_PLAN_STR8:
        case ETW_PLAN_STR16: {
            unsigned unit = st->kind == ETW_PLAN_STR16 ? 2 : 1;
            uint32_t n = etw_decode_str_len(data + pos, rest, unit, &found);
            if (!found) return 0; /* it takes the rest */
            pos += n + unit;
            break;
        }
        case ETW_PLAN_ARRAY: {
            /* the count's bytes are before pos: the steps passed them */
            uint64_t n = load_n(data + st->count_off, st->count_size);
            if (n > UINT32_MAX) n = UINT32_MAX;
            if (n > ETW_ARRAY_CAP && n > rest) n = rest > ETW_ARRAY_CAP ? rest : ETW_ARRAY_CAP;
            if (n * st->elem > rest) return 0; /* an element takes the rest */
            pos += (uint32_t)(n * st->elem);
            break;
        }
        default: return rest;
        }
    }
    return size - pos;
}

int etw_decode_walk_fields(const etw_schema *s, const etw_event *ev, size_t refs_len, const uint16_t *index,
                           uint32_t n, const uint8_t **data, uint32_t *size, int8_t *got) {
    if (!s || !ev || !data || !size || !got || (n && !index) || n > ETW_DECODE_WALK_FIELDS) return -1;
    for (uint32_t k = 0; k < n; k++) {
        if (index[k] >= s->top_count || index[k] >= s->prop_count || (k && index[k] <= index[k - 1])) return -1;
        uint16_t in = s->props[index[k]].in_type;
        uint32_t f = s->props[index[k]].flags;
        /* the value's bytes are the property's for integers; a
         * NUL-terminated string's, without the NUL */
        int str = in == ETW_INTYPE_ANSISTRING || in == ETW_INTYPE_UNICODESTRING;
        if (f & (ETW_PROP_CUSTOM_SIZED | ETW_PROP_LENGTH_FIXED | ETW_PROP_BITS | ETW_PROP_ARRAY_MASK)) return -1;
        if (!str && !is_integer(in)) return -1;
    }
    uint32_t pos, takes[ETW_DECODE_WALK_FIELDS], at[ETW_DECODE_WALK_FIELDS];
    uint8_t reached[ETW_DECODE_WALK_FIELDS];
    if (!flat_walk(s, ev, refs_len, index, n, &pos, takes, at, reached)) return -1;
    const uint8_t *base = ev->user_data ? ev->user_data : empty_payload;
    for (uint32_t k = 0; k < n; k++) {
        got[k] = (int8_t)reached[k];
        if (!reached[k]) continue;
        uint16_t in = s->props[index[k]].in_type;
        data[k] = base + at[k];
        if (in == ETW_INTYPE_ANSISTRING || in == ETW_INTYPE_UNICODESTRING) {
            int found;
            size[k] = etw_decode_str_len(data[k], takes[k], in == ETW_INTYPE_UNICODESTRING ? 2 : 1, &found);
        } else {
            size[k] = takes[k];
        }
    }
    return 1;
}

int etw_decode_walk_field(const etw_schema *s, const etw_event *ev, size_t refs_len, uint16_t index,
                          const uint8_t **data, uint32_t *size) {
    if (!s || !ev || !data || !size) return -1;
    int8_t got;
    int r = etw_decode_walk_fields(s, ev, refs_len, &index, 1, data, size, &got);
    return r < 0 ? -1 : got;
}
