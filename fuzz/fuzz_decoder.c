/* fuzz_decoder.c - libFuzzer target for the decoder as a whole: dispatch
 * (src/schema/etw_decoder.c), the sources behind it (TraceLogging metadata,
 * user manifests, EventSource manifest chunks, the MetaData records, MOF
 * misses), the schema cache, the property decoder and the JSON writer.
 *
 * Build: cmake -S . -B /tmp/fb -DCMAKE_C_COMPILER=clang -DETW_FUZZ=ON -DETW_TESTS=OFF
 *        cmake --build /tmp/fb --target fuzz_decoder
 *        /tmp/fb/fuzz_decoder -max_len=4096 fuzz/corpus/decoder
 * The CMake build instruments only this file for coverage (the library is
 * built with ASan/UBSan but without -fsanitize=fuzzer-no-link), so for real
 * exploration build everything with coverage:
 *   clang -std=c11 -g -O1 -fsanitize=fuzzer,address,undefined -Iinclude -Isrc \
 *         fuzz/fuzz_decoder.c $(find src -name '*.c') $(pkg-config --cflags --libs libxxhash expat) \
 *         -o /tmp/fuzz_decoder
 * Seeds: fuzz/corpus/decoder/ - tl_alternate (two layouts of one name,
 * re-resolved), tl_width (32/64-bit pointers), tl_corrupt (Size past the
 * item, name without NUL, then a good event), manifest_user and
 * manifest_counts (generated manifests with maps, counts, lengths and a
 * struct, and their events), eventsource (a generated manifest sent in 3
 * chunks, then replaced by a user manifest), chunks (raw chunks, resolved
 * twice, a repeat position, an unfinished sequence), classic (MOF misses,
 * MetaData records, classic flag vs manifest), user_xml, wpp.
 *
 * One decoder and one JSON writer live for the whole input; the input is a
 * sequence of records (at most MAX_RECORDS), each starting with a kind byte
 * (low 3 bits):
 *   0 TraceLogging event: u8 flags (bit 0: 32-bit writer; bit 1: traits from
 *     a name, bit 2: raw traits bytes; bit 3: patch the metadata's Size to
 *     its length; bit 4: add a RELATED_ACTIVITYID item first; bit 5: an
 *     EVENT_HEADER CLASSIC flag; bits 6-7: provider), u16 metadata length +
 *     metadata, u8 traits length + traits bytes (a name or a raw blob),
 *     u16 payload length + payload;
 *   1 EventSource manifest chunk: u8 flags (bits 0-1: provider, bit 2: bad
 *     magic, bit 3: 32-bit, bit 4: same position as the previous chunk,
 *     bit 5: 2 threads), u16 total, u16 number, u16 length + chunk bytes;
 *   2 classic event: u8 form (FULL, SYSTEM, COMPACT, PERFINFO, INSTANCE, or
 *     EVENT_HEADER with the CLASSIC flag), u8 provider (bit 7: the MetaData
 *     class; else bit 6: the kernel class family (low 6 bits) %
 *     etw_kernel_family_count of src/source/etw_kernel_families.c), u8
 *     opcode, u8 version, u16 payload length + payload;
 *   3 EVENT_HEADER event: u8 provider/width, u16 id, u8 version, u16 payload
 *     length + payload;
 *   4 user manifest from the input: u16 length + XML;
 *   5 generated manifest: u8 flags (bits 0-1: provider, bit 2: send it as an
 *     EventSource manifest in (bits 3-4) + 1 chunks, else as a user
 *     manifest), u16 id, u8 version, u8 n (fields, at most 12) and one byte
 *     per field (type, array/length modifiers);
 *   6 WPP message event: u16 message number, u16 payload length + payload;
 *   7 the same event as the previous record, resolved again.
 * Lengths that run past the input take what is left.
 *
 * For every event: etw_decoder_resolve (status from the documented set; a
 * reason on failure; on success a schema whose source and width match the
 * dispatch rules: classic headers never get a manifest or EventSource
 * schema, MESSAGE never resolves, TraceLogging metadata gives a
 * TraceLogging schema), a walk of the payload with etw_decoder_begin /
 * etw_decode_next (values inside the payload, bounded item count), then
 * etw_json_event (ETW_OK, one line ending in '\n', valid UTF-8, well-formed
 * JSON with "error" whenever resolve failed; for kernel (MOF) schemas the
 * pid/tid and payload-problem calls too). Payloads and extended
 * items are exactly-sized copies, so AddressSanitizer sees any overread. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "etwdecode/etw_decode.h"
#include "etwdecode/etw_decoder.h"
#include "etwdecode/etw_json.h"
#include "etwdecode/etw_traits.h"
#include "source/etw_kernel_tables.h"

#define FUZZ_ASSERT(c)                                                         \
    do {                                                                       \
        if (!(c)) {                                                            \
            fprintf(stderr, "%s:%d: assertion failed: %s\n", __FILE__,         \
                    __LINE__, #c);                                             \
            abort();                                                           \
        }                                                                      \
    } while (0)

#define MAX_RECORDS 48
#define MAX_ITEMS (1u << 20)

static const etw_guid PROVIDERS[4] = {
    {0x11111111u, 0x2222, 0x3333, {0x44, 0x55, 0x66, 0x77, 0x88, 0x99, 0xaa, 0xbb}},
    {0xe13c0d23u, 0xccbc, 0x4e12, {0x93, 0x1b, 0xd9, 0xcc, 0x2e, 0xee, 0x27, 0xe4}},
    {0x2e5dba47u, 0xa3d2, 0x4d16, {0x8e, 0xe0, 0x66, 0x71, 0xff, 0xdc, 0xd7, 0xb5}},
    {0x00000000u, 0x0000, 0x0000, {0, 0, 0, 0, 0, 0, 0, 1}},
};
/* KernelTraceControl MetaData records (EventInfo 32, EventMapInfo 33). */
static const etw_guid METADATA_CLASS = {0xbbccf6c1u, 0x6cd1, 0x48c4, {0x80, 0xff, 0x83, 0x94, 0x82, 0xe3, 0x76, 0x71}};

/* ---- input cursor ---- */
typedef struct in {
    const uint8_t *p;
    size_t n, pos;
} in;
static uint8_t in_u8(in *c) { return c->pos < c->n ? c->p[c->pos++] : 0; }
static uint16_t in_u16(in *c) {
    uint16_t lo = in_u8(c);
    return (uint16_t)(lo | (uint16_t)in_u8(c) << 8);
}
/* n bytes (fewer at the end of the input). */
static const uint8_t *in_bytes(in *c, size_t want, size_t *got) {
    size_t left = c->n - c->pos;
    *got = want < left ? want : left;
    const uint8_t *r = c->p + c->pos;
    c->pos += *got;
    return r;
}

/* ---- a growing byte buffer ---- */
typedef struct buf {
    uint8_t *d;
    size_t len, cap;
} buf;
static void b_put(buf *b, const void *p, size_t n) {
    if (b->cap - b->len < n) {
        size_t cap = b->cap ? b->cap : 256;
        while (cap - b->len < n) cap *= 2;
        b->d = realloc(b->d, cap);
        FUZZ_ASSERT(b->d);
        b->cap = cap;
    }
    if (n) memcpy(b->d + b->len, p, n);
    b->len += n;
}
static void b_u8(buf *b, uint8_t v) { b_put(b, &v, 1); }
static void b_u16(buf *b, uint16_t v) {
    uint8_t x[2] = {(uint8_t)v, (uint8_t)(v >> 8)};
    b_put(b, x, 2);
}
static void b_str(buf *b, const char *s) { b_put(b, s, strlen(s)); }
/* One extended item in the in-buffer layout (size rounded up to 8). */
static void b_ext(buf *b, uint16_t type, const uint8_t *data, size_t size, int more) {
    if (size > 65535 - 15) size = 65535 - 15;
    size_t total = (8 + size + 7) & ~(size_t)7;
    b_u16(b, (uint16_t)total);
    b_u16(b, type);
    b_u16(b, (uint16_t)more);
    b_u16(b, (uint16_t)size);
    b_put(b, data, size);
    static const uint8_t zero[8] = {0};
    b_put(b, zero, total - 8 - size);
}

static uint8_t *dup_exact(const void *p, size_t n) {
    uint8_t *d = malloc(n ? n : 1);
    FUZZ_ASSERT(d);
    if (n) memcpy(d, p, n);
    return d;
}

/* ---- output checks ---- */

static int utf8_valid(const uint8_t *s, size_t n) {
    size_t i = 0;
    while (i < n) {
        uint8_t c = s[i];
        if (c < 0x80) {
            i++;
            continue;
        }
        size_t k;
        uint32_t cp, min;
        if ((c & 0xE0) == 0xC0) k = 1, cp = c & 0x1F, min = 0x80;
        else if ((c & 0xF0) == 0xE0) k = 2, cp = c & 0x0F, min = 0x800;
        else if ((c & 0xF8) == 0xF0) k = 3, cp = c & 0x07, min = 0x10000;
        else return 0;
        if (n - i <= k) return 0;
        for (size_t j = 1; j <= k; j++) {
            if ((s[i + j] & 0xC0) != 0x80) return 0;
            cp = cp << 6 | (s[i + j] & 0x3F);
        }
        if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return 0;
        i += k + 1;
    }
    return 1;
}

/* An iterative JSON validator (RFC 8259; no recursion, explicit stack). */
typedef struct jp {
    const char *p, *e;
} jp;
static void j_ws(jp *j) {
    while (j->p < j->e && (*j->p == ' ' || *j->p == '\t' || *j->p == '\n' || *j->p == '\r')) j->p++;
}
static int j_hex(char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'); }
static int j_string(jp *j) {
    if (j->p >= j->e || *j->p != '"') return 0;
    j->p++;
    while (j->p < j->e) {
        unsigned char c = (unsigned char)*j->p;
        if (c == '"') {
            j->p++;
            return 1;
        }
        if (c < 0x20) return 0;
        if (c == '\\') {
            if (++j->p >= j->e) return 0;
            switch (*j->p) {
            case '"': case '\\': case '/': case 'b': case 'f': case 'n': case 'r': case 't': j->p++; break;
            case 'u':
                if (j->e - j->p < 5) return 0;
                for (int i = 1; i <= 4; i++)
                    if (!j_hex(j->p[i])) return 0;
                j->p += 5;
                break;
            default: return 0;
            }
        } else {
            j->p++;
        }
    }
    return 0;
}
static int j_digits(jp *j) {
    const char *s = j->p;
    while (j->p < j->e && *j->p >= '0' && *j->p <= '9') j->p++;
    return j->p > s;
}
static int j_number(jp *j) {
    if (j->p < j->e && *j->p == '-') j->p++;
    if (j->p >= j->e) return 0;
    if (*j->p == '0') j->p++;
    else if (!j_digits(j)) return 0;
    if (j->p < j->e && *j->p == '.') {
        j->p++;
        if (!j_digits(j)) return 0;
    }
    if (j->p < j->e && (*j->p == 'e' || *j->p == 'E')) {
        j->p++;
        if (j->p < j->e && (*j->p == '+' || *j->p == '-')) j->p++;
        if (!j_digits(j)) return 0;
    }
    return 1;
}
static int j_lit(jp *j, const char *w) {
    size_t n = strlen(w);
    if ((size_t)(j->e - j->p) < n || memcmp(j->p, w, n) != 0) return 0;
    j->p += n;
    return 1;
}
#define J_MAX_DEPTH 256
static int json_valid(const char *s, size_t n) {
    jp j = {s, s + n};
    char stack[J_MAX_DEPTH];
    int depth = 0;
    int need_value = 1;
    for (;;) {
        j_ws(&j);
        if (need_value) {
            if (j.p >= j.e) return 0;
            char c = *j.p;
            if (c == '{' || c == '[') {
                if (depth == J_MAX_DEPTH) return 0;
                stack[depth++] = c;
                j.p++;
                j_ws(&j);
                if (j.p < j.e && *j.p == (c == '{' ? '}' : ']')) {
                    j.p++;
                    depth--;
                    need_value = 0;
                    goto after;
                }
                if (c == '{') {
                    if (!j_string(&j)) return 0;
                    j_ws(&j);
                    if (j.p >= j.e || *j.p != ':') return 0;
                    j.p++;
                }
                continue;
            }
            int ok = c == '"' ? j_string(&j) : c == 't' ? j_lit(&j, "true") : c == 'f' ? j_lit(&j, "false")
                     : c == 'n' ? j_lit(&j, "null") : j_number(&j);
            if (!ok) return 0;
            need_value = 0;
        }
    after:
        j_ws(&j);
        if (depth == 0) return j.p == j.e;
        if (j.p >= j.e) return 0;
        if (*j.p == ',') {
            j.p++;
            if (stack[depth - 1] == '{') {
                j_ws(&j);
                if (!j_string(&j)) return 0;
                j_ws(&j);
                if (j.p >= j.e || *j.p != ':') return 0;
                j.p++;
            }
            need_value = 1;
            continue;
        }
        if (*j.p == (stack[depth - 1] == '{' ? '}' : ']')) {
            j.p++;
            depth--;
            goto after;
        }
        return 0;
    }
}

/* ---- the run ---- */

typedef struct run {
    etw_decoder *d;
    etw_json *j;
    uint64_t resolves; /* calls to etw_decoder_resolve, ours and the writer's */
    uint64_t position; /* a distinct record position per event */
    uint64_t last_pos;
    uint32_t last_rec;
    /* the previous event (for kind 7) */
    etw_event prev;
    uint8_t *prev_ext, *prev_data;
    int have_prev;
} run;

static int g_verbose = -1; /* FUZZ_DECODER_VERBOSE=1: print every JSON line */

static void on_diag(void *ctx, const etw_diag *d) {
    (void)ctx;
    FUZZ_ASSERT(d->message && d->message[0] && strlen(d->message) < 4096);
    if (g_verbose) fprintf(stderr, "diag: %s\n", d->message);
}

static int classic_shape(const etw_event *ev) {
    return ev->form != ETW_FORM_EVENT_HEADER || (ev->flags & ETW_EVENT_FLAG_CLASSIC_HEADER);
}

/* Does line[0..len) (not NUL-terminated) contain needle? */
static int contains(const char *line, size_t len, const char *needle) {
    size_t n = strlen(needle);
    for (size_t i = 0; i + n <= len; i++)
        if (memcmp(line + i, needle, n) == 0) return 1;
    return 0;
}

static void check_event(run *r, const etw_event *ev) {
    const etw_schema *s = (const etw_schema *)1;
    const char *why = NULL;
    etw_ext_item tl;
    int has_tl = ev->ext_count && etw_event_find_ext(ev, ETW_EXT_EVENT_SCHEMA_TL, &tl) == ETW_OK;
    etw_status st = etw_decoder_resolve(r->d, ev, &s, &why);
    r->resolves++;
    FUZZ_ASSERT(st == ETW_OK || st == ETW_E_NOT_FOUND || st == ETW_E_CORRUPT || st == ETW_E_TRUNCATED ||
                st == ETW_E_LIMIT);
    if (st != ETW_OK) {
        FUZZ_ASSERT(s == NULL);
        FUZZ_ASSERT(why && why[0] && strlen(why) < 160);
        if (ev->form == ETW_FORM_MESSAGE && !has_tl) FUZZ_ASSERT(strncmp(why, "no schema: WPP message ", 23) == 0);
        if (st == ETW_E_NOT_FOUND && !has_tl && ev->form != ETW_FORM_MESSAGE) {
            if (classic_shape(ev)) FUZZ_ASSERT(strncmp(why, "no schema: no MOF class for event class ", 40) == 0);
            else
                FUZZ_ASSERT(strncmp(why, "no schema: manifest not found for provider ", 43) == 0 ||
                            strncmp(why, "no schema: provider ", 20) == 0);
        }
    } else {
        FUZZ_ASSERT(s != NULL && s->event_name != NULL);
        FUZZ_ASSERT(s->pointer_size == (ev->pointer_size == 4 ? 4 : 8));
        FUZZ_ASSERT(s->top_count <= s->prop_count);
        FUZZ_ASSERT(ev->form != ETW_FORM_MESSAGE || has_tl);
        if (has_tl) {
            FUZZ_ASSERT(s->source == ETW_SOURCE_TRACELOGGING);
        } else if (classic_shape(ev)) {
            /* rule 2: never a manifest-like schema */
            FUZZ_ASSERT(s->source == ETW_SOURCE_METADATA || s->source == ETW_SOURCE_MOF);
        } else {
            FUZZ_ASSERT(s->source == ETW_SOURCE_MANIFEST || s->source == ETW_SOURCE_EVENTSOURCE ||
                        s->source == ETW_SOURCE_METADATA || s->source == ETW_SOURCE_BUILTIN);
            if (etw_decoder_is_manifest_event(ev)) FUZZ_ASSERT(strcmp(s->event_name, "ManifestData") == 0);
        }
        /* walk the payload */
        etw_decode_cursor c;
        FUZZ_ASSERT(etw_decoder_begin(r->d, ev, s, &c) == ETW_OK);
        etw_value v;
        uint32_t items = 0;
        int depth = 0;
        while (etw_decode_next(&c, &v) == ETW_OK) {
            FUZZ_ASSERT(++items <= MAX_ITEMS);
            if (v.kind == ETW_VALUE_STRUCT_BEGIN || v.kind == ETW_VALUE_ARRAY_BEGIN) depth++;
            if (v.kind == ETW_VALUE_STRUCT_END || v.kind == ETW_VALUE_ARRAY_END) depth--;
            FUZZ_ASSERT(depth >= 0 && depth <= ETW_DECODE_MAX_DEPTH + 1);
            if (v.kind == ETW_VALUE_UNSUPPORTED && v.size) FUZZ_ASSERT(v.data != NULL);
            if (v.data && v.size && !(v.prop && (v.prop->flags & ETW_PROP_BITS) && v.kind == ETW_VALUE_SCALAR)) {
                /* (a bitfield's value is one byte of the decoder's own: it takes no payload byte) */
                FUZZ_ASSERT(v.data >= ev->user_data && v.data + v.size <= ev->user_data + ev->user_data_len);
            }
        }
        /* (an UNSUPPORTED value that takes the rest of the payload ends the
         * enumeration inside its struct or array: ENDs may be missing) */
        FUZZ_ASSERT(etw_decode_next(&c, &v) == ETW_END);
        FUZZ_ASSERT(etw_decode_remaining(&c) <= ev->user_data_len);
        /* kernel schemas: the pid/tid the payload names, the payload checks */
        uint32_t pid = 0, tid = 0;
        etw_decoder_event_ids(r->d, ev, s, &pid, &tid);
        if (s->source != ETW_SOURCE_MOF) FUZZ_ASSERT(pid == ev->pid && tid == ev->tid);
        const char *p = etw_decoder_payload_problem(r->d, ev, s, etw_decode_remaining(&c));
        /* leftover bytes are told for every source, other problems for MOF classes only */
        FUZZ_ASSERT(!p || (p[0] && (s->source != ETW_SOURCE_MOF || strlen(p) < 192)));
        FUZZ_ASSERT(!p || s->source == ETW_SOURCE_MOF || etw_decode_remaining(&c) > 0);
        p = etw_decoder_payload_problem(r->d, ev, s, ETW_PAYLOAD_WALK);
        FUZZ_ASSERT(!p || p[0]);
    }

    /* the JSON line (it resolves again: a manifest chunk must not count twice) */
    const char *line = NULL;
    size_t len = 0;
    FUZZ_ASSERT(etw_json_event(r->j, NULL, ev, &line, &len) == ETW_OK);
    r->resolves++;
    FUZZ_ASSERT(line && len >= 2 && line[len - 1] == '\n');
    if (g_verbose) fwrite(line, 1, len, stderr);
    FUZZ_ASSERT(memchr(line, '\n', len - 1) == NULL);
    FUZZ_ASSERT(memcmp(line, "{\"time\":", 8) == 0);
    FUZZ_ASSERT(utf8_valid((const uint8_t *)line, len));
    FUZZ_ASSERT(json_valid(line, len - 1));
    /* "error" exactly when resolve failed (the second resolve agrees with
     * the first: nothing was learned in between) */
    int has_error = contains(line, len, ",\"error\":\"");
    if (st != ETW_OK) FUZZ_ASSERT(has_error);
    FUZZ_ASSERT(etw_decoder_stats_get(r->d)->lookups == r->resolves);
}

/* Remember ev (with copies of its bytes) for kind 7, and free the old. */
static void keep_prev(run *r, const etw_event *ev, uint8_t *ext, uint8_t *data) {
    free(r->prev_ext);
    free(r->prev_data);
    r->prev = *ev;
    r->prev_ext = ext;
    r->prev_data = data;
    r->have_prev = 1;
}

static void emit(run *r, etw_event *ev, const buf *ext, uint16_t ext_count, const uint8_t *ud, size_t ud_len) {
    uint8_t *e = ext && ext->len ? dup_exact(ext->d, ext->len) : NULL;
    uint8_t *u = dup_exact(ud, ud_len);
    ev->ext_data = e;
    ev->ext_size = e ? (uint32_t)ext->len : 0;
    ev->ext_count = e ? ext_count : 0;
    if (ev->ext_count) ev->flags |= ETW_EVENT_FLAG_EXTENDED_INFO;
    ev->user_data = ud_len ? u : NULL;
    ev->user_data_len = (uint32_t)ud_len;
    if (!ev->buffer_file_offset) {
        ev->buffer_file_offset = 0x10000 + (r->position << 8);
        ev->record_offset = (uint32_t)(r->position & 0xFF) * 8;
        r->position++;
    }
    r->last_pos = ev->buffer_file_offset;
    r->last_rec = ev->record_offset;
    check_event(r, ev);
    keep_prev(r, ev, e, u);
}

static void base_event(etw_event *ev, uint8_t width, const etw_guid *provider) {
    memset(ev, 0, sizeof *ev);
    ev->form = ETW_FORM_EVENT_HEADER;
    ev->pointer_size = width == 4 ? 4 : 8;
    ev->flags = width == 4 ? ETW_EVENT_FLAG_32_BIT_HEADER : ETW_EVENT_FLAG_64_BIT_HEADER;
    ev->provider = *provider;
    ev->pid = 100;
    ev->tid = 200;
    ev->timestamp = 132000000000000000LL;
}

static void rec_tracelogging(run *r, in *c) {
    uint8_t f = in_u8(c);
    size_t mlen, tlen, plen;
    const uint8_t *meta = in_bytes(c, in_u16(c), &mlen);
    uint8_t *m = dup_exact(meta, mlen);
    if ((f & 8) && mlen >= 2) {
        m[0] = (uint8_t)mlen;
        m[1] = (uint8_t)(mlen >> 8);
    }
    const uint8_t *traits = in_bytes(c, in_u8(c), &tlen);
    const uint8_t *payload = in_bytes(c, in_u16(c), &plen);
    etw_event ev;
    base_event(&ev, (f & 1) ? 4 : 8, &PROVIDERS[f >> 6]);
    if (f & 0x20) ev.flags |= ETW_EVENT_FLAG_CLASSIC_HEADER;
    buf ext = {0};
    uint16_t n = 0;
    if (f & 0x10) {
        uint8_t act[16];
        memset(act, 0x5A, sizeof act);
        b_ext(&ext, ETW_EXT_RELATED_ACTIVITYID, act, sizeof act, 1);
        n++;
    }
    if (f & 2) {
        char name[256];
        size_t k = 0;
        for (size_t i = 0; i < tlen; i++)
            if (traits[i]) name[k++] = (char)traits[i];
        name[k] = 0;
        uint8_t blob[512];
        size_t blen = 0;
        if (etw_traits_build(blob, sizeof blob, &blen, name, NULL, NULL, 0) == ETW_OK) {
            b_ext(&ext, ETW_EXT_PROV_TRAITS, blob, blen, 1);
            n++;
        }
    } else if (f & 4) {
        b_ext(&ext, ETW_EXT_PROV_TRAITS, traits, tlen, 1);
        n++;
    }
    b_ext(&ext, ETW_EXT_EVENT_SCHEMA_TL, m, mlen, 0);
    n++;
    emit(r, &ev, &ext, n, payload, plen);
    free(ext.d);
    free(m);
}

static void rec_chunk(run *r, in *c) {
    uint8_t f = in_u8(c);
    uint16_t total = in_u16(c), num = in_u16(c);
    size_t n;
    const uint8_t *chunk = in_bytes(c, in_u16(c), &n);
    etw_event ev;
    base_event(&ev, (f & 8) ? 4 : 8, &PROVIDERS[f & 3]);
    ev.id = 0xFFFE;
    ev.task = 0xFFFE;
    ev.opcode = 0xFE;
    ev.version = 1;
    if (f & 0x20) ev.tid = 201;
    if ((f & 0x10) && r->last_pos) { /* the position of the previous event: looks like a repeat */
        ev.buffer_file_offset = r->last_pos;
        ev.record_offset = r->last_rec;
    }
    buf ud = {0};
    b_u8(&ud, 1);
    b_u8(&ud, 1);
    b_u8(&ud, 0);
    b_u8(&ud, (f & 4) ? 0x5C : 0x5B);
    b_u16(&ud, total);
    b_u16(&ud, num);
    b_put(&ud, chunk, n);
    emit(r, &ev, NULL, 0, ud.d, ud.len);
    free(ud.d);
}

static void rec_classic(run *r, in *c) {
    static const etw_header_form forms[] = {ETW_FORM_FULL, ETW_FORM_SYSTEM, ETW_FORM_COMPACT,
                                            ETW_FORM_PERFINFO, ETW_FORM_INSTANCE, ETW_FORM_EVENT_HEADER};
    uint8_t fc = in_u8(c), pc = in_u8(c), opcode = in_u8(c), version = in_u8(c);
    size_t plen;
    const uint8_t *payload = in_bytes(c, in_u16(c), &plen);
    etw_event ev;
    const etw_guid *cls = (pc & 0x80)   ? &METADATA_CLASS
                          : (pc & 0x40) ? &etw_kernel_families[(pc & 0x3F) % etw_kernel_family_count]->guid
                                        : &PROVIDERS[pc & 3];
    base_event(&ev, (fc & 0x80) ? 4 : 8, cls);
    ev.form = forms[(fc & 0x7F) % 6];
    ev.flags |= ETW_EVENT_FLAG_CLASSIC_HEADER;
    ev.opcode = opcode;
    ev.version = version;
    if (ev.form == ETW_FORM_PERFINFO) ev.pid = ev.tid = ETW_NO_ID;
    emit(r, &ev, NULL, 0, payload, plen);
}

static void rec_descriptor(run *r, in *c) {
    uint8_t pc = in_u8(c);
    uint16_t id = in_u16(c);
    uint8_t version = in_u8(c);
    size_t plen;
    const uint8_t *payload = in_bytes(c, in_u16(c), &plen);
    etw_event ev;
    base_event(&ev, (pc & 4) ? 4 : 8, &PROVIDERS[pc & 3]);
    ev.id = id;
    ev.version = version;
    ev.opcode = pc >> 3;
    emit(r, &ev, NULL, 0, payload, plen);
}

static void rec_user_manifest(run *r, in *c) {
    size_t n;
    const uint8_t *xml = in_bytes(c, in_u16(c), &n);
    uint8_t *x = dup_exact(xml, n);
    uint32_t np = 99;
    etw_status st = etw_decoder_add_manifest_xml(r->d, (const char *)x, n, "fuzz.man", &np);
    FUZZ_ASSERT(st == ETW_OK || st == ETW_E_CORRUPT || st == ETW_E_LIMIT || st == ETW_E_UNSUPPORTED);
    if (st != ETW_OK) FUZZ_ASSERT(np == 0);
    free(x);
}

/* A manifest whose one event has fields chosen by the input. */
static void rec_generated(run *r, in *c) {
    static const char *types[] = {
        "win:Int8",    "win:UInt8",     "win:Int16",         "win:UInt16",       "win:Int32",
        "win:UInt32",  "win:Int64",     "win:UInt64",        "win:Float",        "win:Double",
        "win:Boolean", "win:Binary",    "win:GUID",          "win:Pointer",      "win:FILETIME",
        "win:SYSTEMTIME", "win:SID",    "win:HexInt32",      "win:HexInt64",     "win:UnicodeString",
        "win:AnsiString", "win:UInt8",  "win:UnicodeString", "win:AnsiString",   "win:UInt16",
        "win:UInt32",  "win:Binary",    "win:HexInt32",      "win:Pointer",      "win:Int32",
        "win:UInt64",  "win:UInt8",
    };
    static const char *outs[] = {"", " outType='xs:hexBinary'", " outType='win:HexInt32'", " outType='xs:string'",
                                 " outType='win:IPv4'", " outType='win:Port'", " outType='win:Win32Error'",
                                 " outType='xs:boolean'"};
    uint8_t f = in_u8(c);
    uint16_t id = in_u16(c);
    uint8_t version = in_u8(c);
    uint8_t nf = in_u8(c) % 13;
    const etw_guid *g = &PROVIDERS[f & 3];
    char gs[ETW_GUID_STRING_SIZE];
    etw_guid_format(g, gs);
    buf x = {0};
    char tmp[512];
    b_str(&x, "<?xml version='1.0'?>\n<instrumentationManifest "
              "xmlns='http://schemas.microsoft.com/win/2004/08/events' "
              "xmlns:win='http://manifests.microsoft.com/win/2004/08/windows/events' "
              "xmlns:xs='http://www.w3.org/2001/XMLSchema'>\n<instrumentation><events>\n");
    snprintf(tmp, sizeof tmp, "<provider name='Fuzz-%u' guid='{%s}' symbol='F'>\n", f & 3, gs);
    b_str(&x, tmp);
    b_str(&x, "<maps><valueMap name='VM'><map value='0' message='Zero'/><map value='1' message='One'/></valueMap>"
              "<bitMap name='BM'><map value='0x1' message='A'/><map value='0x4' message='C'/></bitMap></maps>\n");
    b_str(&x, "<templates><template tid='t'>");
    int prev_int = -1; /* index of the latest integer field, for count/length references */
    for (uint8_t i = 0; i < nf; i++) {
        uint8_t b = in_u8(c), m = in_u8(c);
        const char *type = types[b & 31];
        int is_int = strstr(type, "Int") != NULL && strstr(type, "Hex") == NULL;
        char extra[128] = "";
        switch (b >> 5) {
        case 1: snprintf(extra, sizeof extra, " count='%u'", m & 7); break;
        case 2:
            if (prev_int >= 0) snprintf(extra, sizeof extra, " count='f%d'", prev_int);
            break;
        case 3: snprintf(extra, sizeof extra, " length='%u'", m & 15); break;
        case 4:
            if (prev_int >= 0) snprintf(extra, sizeof extra, " length='f%d'", prev_int);
            break;
        case 5:
            if (is_int) snprintf(extra, sizeof extra, " map='%s'", (m & 1) ? "BM" : "VM");
            break;
        case 6: snprintf(extra, sizeof extra, "%s", outs[m & 7]); break;
        default: break;
        }
        if ((b >> 5) == 7 && i + 1 < nf) {
            /* a struct of the next field */
            uint8_t b2 = in_u8(c);
            snprintf(tmp, sizeof tmp, "<struct name='f%u'%s><data name='m%u' inType='%s'/></struct>", i,
                     (m & 1) ? " count='2'" : "", i, types[b2 & 31]);
            b_str(&x, tmp);
            continue;
        }
        snprintf(tmp, sizeof tmp, "<data name='f%u' inType='%s'%s/>", i, type, extra);
        b_str(&x, tmp);
        if (is_int && !strstr(type, "Int64")) prev_int = i;
    }
    b_str(&x, "</template></templates>\n<tasks><task name='FuzzTask' value='1'/></tasks>\n<events>");
    snprintf(tmp, sizeof tmp, "<event value='%u' version='%u' %s template='t' symbol='E'/>", id, version,
             (f & 0x80) ? "task='FuzzTask' opcode='win:Start'" : "");
    b_str(&x, tmp);
    b_str(&x, "</events>\n</provider>\n</events></instrumentation>\n</instrumentationManifest>\n");

    if (f & 4) {
        /* as an EventSource manifest, in chunks through the decoder */
        unsigned parts = ((f >> 3) & 3) + 1;
        size_t at = 0;
        for (unsigned i = 0; i < parts; i++) {
            size_t n = i + 1 == parts ? x.len - at : x.len / parts;
            etw_event ev;
            base_event(&ev, 8, g);
            ev.id = 0xFFFE;
            ev.task = 0xFFFE;
            ev.opcode = 0xFE;
            ev.version = 1;
            buf ud = {0};
            uint8_t env[4] = {1, 1, 0, 0x5B};
            b_put(&ud, env, 4);
            b_u16(&ud, (uint16_t)parts);
            b_u16(&ud, (uint16_t)i);
            b_put(&ud, x.d + at, n);
            at += n;
            emit(r, &ev, NULL, 0, ud.d, ud.len);
            free(ud.d);
        }
    } else {
        uint32_t np = 0;
        etw_status st = etw_decoder_add_manifest_xml(r->d, (const char *)x.d, x.len, "generated.man", &np);
        FUZZ_ASSERT(st == ETW_OK || st == ETW_E_CORRUPT);
        if (st == ETW_OK) FUZZ_ASSERT(np <= 1);
    }
    free(x.d);
}

static void rec_wpp(run *r, in *c) {
    uint16_t msg = in_u16(c);
    size_t plen;
    const uint8_t *payload = in_bytes(c, in_u16(c), &plen);
    etw_event ev;
    base_event(&ev, 8, &PROVIDERS[msg & 3]);
    ev.form = ETW_FORM_MESSAGE;
    ev.flags |= ETW_EVENT_FLAG_TRACE_MESSAGE | ETW_EVENT_FLAG_CLASSIC_HEADER;
    ev.message_number = msg;
    emit(r, &ev, NULL, 0, payload, plen);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (g_verbose < 0) g_verbose = getenv("FUZZ_DECODER_VERBOSE") != NULL;
    run r;
    memset(&r, 0, sizeof r);
    etw_decoder_options o;
    memset(&o, 0, sizeof o);
    o.on_diag = on_diag;
    FUZZ_ASSERT(etw_decoder_new(&r.d, &o) == ETW_OK);
    etw_json_options jo;
    memset(&jo, 0, sizeof jo);
    jo.decoder = r.d;
    jo.raw_always = size > 0 && (data[0] & 0x80);
    FUZZ_ASSERT(etw_json_new(&r.j, NULL, &jo) == ETW_OK);

    in c = {data, size, 1};
    for (int rec = 0; rec < MAX_RECORDS && c.pos < c.n; rec++) {
        switch (in_u8(&c) & 7) {
        case 0: rec_tracelogging(&r, &c); break;
        case 1: rec_chunk(&r, &c); break;
        case 2: rec_classic(&r, &c); break;
        case 3: rec_descriptor(&r, &c); break;
        case 4: rec_user_manifest(&r, &c); break;
        case 5: rec_generated(&r, &c); break;
        case 6: rec_wpp(&r, &c); break;
        case 7:
            if (r.have_prev) check_event(&r, &r.prev);
            break;
        }
    }
    etw_decoder_finish(r.d);
    const etw_decoder_stats *st = etw_decoder_stats_get(r.d);
    FUZZ_ASSERT(st->lookups == r.resolves);
    FUZZ_ASSERT(st->hits + st->misses + st->negative_hits <= st->lookups);
    free(r.prev_ext);
    free(r.prev_data);
    etw_json_free(r.j);
    etw_decoder_free(r.d);
    return 0;
}
