/* fuzz_message.c - libFuzzer target for event messages (etw_message_json,
 * etw_value_text: src/format/etw_message.c): a fuzzed template with its
 * FormatMessage escapes, %N inserts and %N!fmt! formats, over a fuzzed
 * schema and payload.
 *
 * Input: byte 0: bits 0-2 the number of top-level properties - 1 (1..8),
 * bit 3 a 4-byte pointer size; then 2 bytes per property: [0] the in-type
 * (an index into intypes[]), [1] flags: bit 0 a fixed-count array of
 * (bits 4-7) elements, bit 1 hex out-type, bit 2 the value map, bit 3 a
 * struct of one member of the in-type [0] >> 4 (members follow the top
 * level); then u16 template length + template bytes (cut at a NUL); the
 * rest is the payload.
 * Seeds: fuzz/corpus/message/ (the escapes, formats and inserts of
 * tests/test_message.c and HTTP_Server.man's messages).
 *
 * Checks: the status is ETW_OK, or ETW_E_LIMIT for a message cut at
 * ETW_MESSAGE_MAX bytes; the output is exactly one JSON string, valid UTF-8,
 * whose text is at most ETW_MESSAGE_MAX bytes (and, when cut, was cut close
 * to it or the template was longer); the same input gives the same text
 * twice (the scratch buffer is reused); etw_value_text writes valid UTF-8
 * for every scalar of the payload. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "etwdecode/etw_decode.h"
#include "format/etw_message.h"
#include "format/etw_text.h"
#include "fuzz_json.h"

#define FUZZ_ASSERT(c)                                                         \
    do {                                                                       \
        if (!(c)) {                                                            \
            fprintf(stderr, "%s:%d: assertion failed: %s\n", __FILE__,         \
                    __LINE__, #c);                                             \
            abort();                                                           \
        }                                                                      \
    } while (0)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const uint16_t intypes[] = {
    ETW_INTYPE_ANSISTRING, ETW_INTYPE_UNICODESTRING, ETW_INTYPE_UINT8,      ETW_INTYPE_INT8,
    ETW_INTYPE_UINT16,     ETW_INTYPE_INT32,         ETW_INTYPE_UINT64,     ETW_INTYPE_INT64,
    ETW_INTYPE_HEXINT32,   ETW_INTYPE_POINTER,       ETW_INTYPE_GUID,       ETW_INTYPE_FILETIME,
    ETW_INTYPE_SYSTEMTIME, ETW_INTYPE_SID,           ETW_INTYPE_BOOLEAN,    ETW_INTYPE_FLOAT,
    ETW_INTYPE_DOUBLE,     ETW_INTYPE_BINARY,        ETW_INTYPE_COUNTEDSTRING, ETW_INTYPE_NULL,
    ETW_INTYPE_UNICODECHAR, ETW_INTYPE_ANSICHAR,     ETW_INTYPE_SIZET,      999};
#define N_INTYPES (sizeof intypes / sizeof intypes[0])

static const etw_map_entry vmap_entries[] = {{0, "Zero"}, {1, "One"}, {2, "T%1wo"}, {7, "\xc3\xa9"}};
static const etw_map vmap = {"V", ETW_MAP_VALUEMAP, 4, vmap_entries};
static const char *const names[] = {"a", "b", "c", "d", "e", "f", "g", "h"};

#define MAX_TOP 8
#define MAX_PROPS (2 * MAX_TOP)

static etw_text t1, t2, scratch, vt;
static int ready;
static uint64_t refs[MAX_PROPS];

/* Bytes of the text of JSON string body [p, e) (escapes decoded). */
static size_t decoded_len(const char *p, const char *e) {
    size_t n = 0;
    while (p < e) {
        if (*p != '\\') {
            n++;
            p++;
            continue;
        }
        if (p[1] != 'u') {
            n++;
            p += 2;
            continue;
        }
        unsigned u = (unsigned)strtoul((char[5]){p[2], p[3], p[4], p[5], 0}, NULL, 16);
        p += 6;
        if (u >= 0xD800 && u <= 0xDBFF && p + 6 <= e && p[0] == '\\' && p[1] == 'u') {
            n += 4;
            p += 6;
        } else {
            n += u < 0x80 ? 1 : u < 0x800 ? 2 : 3;
        }
    }
    return n;
}

static void fill_prop(etw_property *p, const char *name, uint8_t type, uint8_t flags) {
    memset(p, 0, sizeof *p);
    p->name = name;
    p->in_type = intypes[type % N_INTYPES];
    if (p->in_type == ETW_INTYPE_BINARY) {
        p->flags |= ETW_PROP_LENGTH_FIXED;
        p->length = (uint16_t)(type >> 5);
    }
    if (flags & 1) {
        p->flags |= ETW_PROP_COUNT_FIXED;
        p->count = (uint16_t)(flags >> 4);
    }
    if (flags & 2) p->out_type = ETW_OUTTYPE_HEXINT32;
    if (flags & 4) p->map = &vmap;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 1) return 0;
    if (!ready) {
        etw_text_init(&t1, NULL);
        etw_text_init(&t2, NULL);
        etw_text_init(&scratch, NULL);
        etw_text_init(&vt, NULL);
        ready = 1;
    }
    unsigned top = (data[0] & 7u) + 1;
    uint8_t ptr = (data[0] & 8) ? 4 : 8;
    size_t pos = 1;
    if (size < pos + 2 * top + 2) return 0;
    etw_property props[MAX_PROPS];
    unsigned n = top;
    for (unsigned i = 0; i < top; i++) {
        uint8_t type = data[pos + 2 * i], flags = data[pos + 2 * i + 1];
        fill_prop(&props[i], names[i], type, flags);
        if (flags & 8) { /* a struct of one member */
            props[i].flags = (props[i].flags & ETW_PROP_COUNT_FIXED) | ETW_PROP_STRUCT;
            props[i].in_type = 0;
            props[i].out_type = 0;
            props[i].map = NULL;
            props[i].struct_first = (uint16_t)n;
            props[i].struct_count = 1;
            fill_prop(&props[n], names[n % MAX_TOP], (uint8_t)(type >> 4), 0);
            n++;
        }
    }
    pos += 2 * top;
    size_t tlen = (size_t)data[pos] | (size_t)data[pos + 1] << 8;
    pos += 2;
    if (tlen > size - pos) tlen = size - pos;
    char *tmpl = malloc(tlen + 1);
    if (!tmpl) return 0;
    memcpy(tmpl, data + pos, tlen);
    tmpl[tlen] = 0;
    size_t real_tlen = strlen(tmpl);
    pos += tlen;
    size_t plen = size - pos;
    uint8_t *payload = malloc(plen ? plen : 1);
    if (!payload) {
        free(tmpl);
        return 0;
    }
    memcpy(payload, data + pos, plen);

    etw_schema s;
    memset(&s, 0, sizeof s);
    s.pointer_size = ptr;
    s.props = props;
    s.prop_count = (uint16_t)n;
    s.top_count = (uint16_t)top;
    s.event_name = "Fuzz";
    s.message = tmpl;
    etw_event ev;
    memset(&ev, 0, sizeof ev);
    ev.form = ETW_FORM_EVENT_HEADER;
    ev.pointer_size = ptr;
    ev.user_data = plen ? payload : NULL;
    ev.user_data_len = (uint32_t)plen;

    etw_text_clear(&t1);
    etw_status st = etw_message_json(&t1, &scratch, &s, &ev, refs, MAX_PROPS);
    FUZZ_ASSERT(st == ETW_OK || st == ETW_E_LIMIT);
    const char *j = etw_text_cstr(&t1);
    FUZZ_ASSERT(strlen(j) == t1.len);
    FUZZ_ASSERT(t1.len >= 2 && j[0] == '"' && j[t1.len - 1] == '"');
    FUZZ_ASSERT(utf8_valid((const unsigned char *)j, t1.len));
    FUZZ_ASSERT(json_valid(j, t1.len));
    const char *sp = j;
    FUZZ_ASSERT(json_string(&sp, j + t1.len) && sp == j + t1.len); /* one string, nothing after */
    size_t text = decoded_len(j + 1, j + t1.len - 1);
    /* at most ETW_MESSAGE_MAX bytes; ill-formed UTF-8 in the template is
     * written as U+FFFD (3 bytes per byte at worst) */
    if (utf8_valid((const unsigned char *)tmpl, real_tlen)) {
        FUZZ_ASSERT(text <= ETW_MESSAGE_MAX);
        if (st == ETW_E_LIMIT) FUZZ_ASSERT(text + 4 > ETW_MESSAGE_MAX || real_tlen > ETW_MESSAGE_MAX);
    } else {
        FUZZ_ASSERT(text <= 3u * ETW_MESSAGE_MAX);
    }

    /* the same again: the scratch buffer's old contents do not leak in */
    etw_text_clear(&t2);
    FUZZ_ASSERT(etw_message_json(&t2, &scratch, &s, &ev, refs, MAX_PROPS) == st);
    FUZZ_ASSERT(t2.len == t1.len && memcmp(t2.data, t1.data, t1.len) == 0);

    /* plain text of every scalar */
    etw_decode_cursor c;
    etw_value v;
    FUZZ_ASSERT(etw_decode_begin(&c, &s, &ev, refs, MAX_PROPS) == ETW_OK);
    while (etw_decode_next(&c, &v) == ETW_OK) {
        etw_text_clear(&vt);
        etw_status vs = etw_value_text(&vt, &v);
        FUZZ_ASSERT(vs == ETW_OK || vs == ETW_E_UNSUPPORTED);
        if (vs == ETW_OK) FUZZ_ASSERT(utf8_valid((const unsigned char *)vt.data, vt.len));
    }
    free(tmpl);
    free(payload);
    return 0;
}
