/* fuzz_decode.c - libFuzzer target for the property decoder and the fields
 * JSON writer (src/decode/etw_decode.c, src/format/etw_fields_json.c).
 *
 * Build: clang -g -O1 -fsanitize=fuzzer,address,undefined -Iinclude -Isrc \
 *            fuzz/fuzz_decode.c src/decode/etw_decode.c \
 *            src/format/etw_fields_json.c src/format/etw_text.c \
 *            src/common/etw_common.c -o /tmp/fd
 *
 * Faster exploration: add -DETW_ARRAY_CAP=300u (the decoder's cap; the
 * checks below follow it and ETW_ZERO_ITEMS_BASE).
 *
 * Input: byte 0 picks the number of properties (1..16), the pointer size and
 * the top-level count; then 4 bytes per property choose its in-type,
 * out-type, flags, struct range, counts, lengths and map, always within the
 * tree rules of etw_schema.h (struct_first > own index, references to
 * smaller indexes) - members of different structs may overlap, which the
 * rules allow. The rest of the input is the payload.
 *
 * Checks: the enumeration ends within a bounded number of items, every
 * value lies inside the payload, depths are bounded and BEGIN/END pair up;
 * the JSON is well formed (an independent iterative validator: structure,
 * strings, escapes, numbers, literals) and valid UTF-8. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "etwdecode/etw_decode.h"
#include "format/etw_fields_json.h"
#include "format/etw_text.h"

#define FUZZ_ASSERT(c)                                                         \
    do {                                                                       \
        if (!(c)) {                                                            \
            fprintf(stderr, "%s:%d: assertion failed: %s\n", __FILE__,         \
                    __LINE__, #c);                                             \
            abort();                                                           \
        }                                                                      \
    } while (0)

#define MAX_PROPS 16

static const uint16_t intypes[] = {
    ETW_INTYPE_NULL,
    ETW_INTYPE_UNICODESTRING,
    ETW_INTYPE_ANSISTRING,
    ETW_INTYPE_INT8,
    ETW_INTYPE_UINT8,
    ETW_INTYPE_INT16,
    ETW_INTYPE_UINT16,
    ETW_INTYPE_INT32,
    ETW_INTYPE_UINT32,
    ETW_INTYPE_INT64,
    ETW_INTYPE_UINT64,
    ETW_INTYPE_FLOAT,
    ETW_INTYPE_DOUBLE,
    ETW_INTYPE_BOOLEAN,
    ETW_INTYPE_BINARY,
    ETW_INTYPE_GUID,
    ETW_INTYPE_POINTER,
    ETW_INTYPE_FILETIME,
    ETW_INTYPE_SYSTEMTIME,
    ETW_INTYPE_SID,
    ETW_INTYPE_HEXINT32,
    ETW_INTYPE_HEXINT64,
    ETW_INTYPE_MANIFEST_COUNTEDSTRING,
    ETW_INTYPE_MANIFEST_COUNTEDANSISTRING,
    ETW_INTYPE_RESERVED24,
    ETW_INTYPE_MANIFEST_COUNTEDBINARY,
    ETW_INTYPE_COUNTEDSTRING,
    ETW_INTYPE_COUNTEDANSISTRING,
    ETW_INTYPE_REVERSEDCOUNTEDSTRING,
    ETW_INTYPE_REVERSEDCOUNTEDANSISTRING,
    ETW_INTYPE_NONNULLTERMINATEDSTRING,
    ETW_INTYPE_NONNULLTERMINATEDANSISTRING,
    ETW_INTYPE_UNICODECHAR,
    ETW_INTYPE_ANSICHAR,
    ETW_INTYPE_SIZET,
    ETW_INTYPE_HEXDUMP,
    ETW_INTYPE_WBEMSID,
    26,
    299,
    0xffff,
};
#define N_INTYPES (sizeof intypes / sizeof intypes[0])

static const etw_map_entry vmap_entries[] = {{0, "Zero"}, {1, "One"}, {2, "T\"wo"}, {0xffffffff, "Max"}};
static const etw_map vmap = {"V", ETW_MAP_VALUEMAP, 4, vmap_entries};
static const etw_map_entry bmap_entries[] = {{1, "A"}, {2, "B"}, {0x80, "\xc3\xa9"}, {0x300, "CD"}};
static const etw_map bmap = {"B", ETW_MAP_BITMAP, 4, bmap_entries};
static const etw_map_entry bmap0_entries[] = {{0, "None"}, {4, "C"}};
static const etw_map bmap0 = {"B0", ETW_MAP_BITMAP, 2, bmap0_entries};

static const char *const names[] = {"a", "b", "a", "n\"q", "\xe2\x82\xac", "x\ny", "s", "t"};

#include "fuzz_json.h"

/* ---- the target ---- */

static etw_text text;
static int text_ready;
static uint64_t refs[MAX_PROPS];

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    etw_property props[MAX_PROPS];
    etw_schema s;
    etw_event ev;
    size_t i;

    if (size < 1) return 0;
    unsigned n = 1 + (data[0] & 15);
    if (size < 1 + 4 * (size_t)n) return 0;
    uint8_t ptr = (data[0] & 0x10) ? 4 : 8;
    unsigned top = (data[0] & 0x20) ? n : 1 + (data[0] >> 6) % n;
    memset(props, 0, sizeof props);
    for (i = 0; i < n; i++) {
        const uint8_t *b = data + 1 + 4 * i;
        etw_property *p = &props[i];
        p->name = names[i % (sizeof names / sizeof names[0])];
        p->in_type = intypes[b[0] % N_INTYPES];
        /* out-types: mostly 0, else any number up to 40 */
        p->out_type = (b[0] & 0x80) ? (uint16_t)(b[1] % 41) : 0;
        uint8_t f = b[2], param = b[3];
        if ((f & 0x01) && i + 1 < n) {
            p->flags |= ETW_PROP_STRUCT;
            p->struct_first = (uint16_t)(i + 1 + param % (n - i - 1));
            p->struct_count = (uint16_t)((param >> 4) % (n - p->struct_first + 1));
        }
        switch ((f >> 1) & 7) {
        case 1:
            p->flags |= ETW_PROP_COUNT_FIXED;
            p->count = (uint16_t)(param & 7);
            break;
        case 2:
            if (i > 0) {
                p->flags |= ETW_PROP_COUNT_REF;
                p->count = (uint16_t)(param % i);
            }
            break;
        case 3: p->flags |= ETW_PROP_COUNT_IN_DATA; break;
        default: break;
        }
        switch ((f >> 4) & 3) {
        case 1:
            p->flags |= ETW_PROP_LENGTH_FIXED;
            p->length = (uint16_t)(param & 15);
            break;
        case 2:
            if (i > 0) {
                p->flags |= ETW_PROP_LENGTH_REF;
                p->length = (uint16_t)((param >> 3) % i);
            }
            break;
        default: break;
        }
        if ((f & 0xC0) == 0xC0) p->flags |= ETW_PROP_CUSTOM_SIZED;
        switch (b[1] >> 6) {
        case 1: p->map = &vmap; break;
        case 2: p->map = &bmap; break;
        case 3: p->map = (b[1] & 0x20) ? &bmap0 : NULL; break;
        default: break;
        }
    }
    memset(&s, 0, sizeof s);
    s.pointer_size = ptr;
    s.props = props;
    s.prop_count = (uint16_t)n;
    s.top_count = (uint16_t)top;
    s.event_name = "Fuzz";

    /* the payload in its own allocation so that ASan sees any overread */
    size_t plen = size - (1 + 4 * (size_t)n);
    uint8_t *payload = malloc(plen ? plen : 1);
    if (!payload) return 0;
    memcpy(payload, data + 1 + 4 * n, plen);
    memset(&ev, 0, sizeof ev);
    ev.form = ETW_FORM_EVENT_HEADER;
    ev.pointer_size = (data[0] & 0x80) && plen ? 0 : ptr; /* 0: the schema's */
    ev.user_data = plen ? payload : NULL;
    ev.user_data_len = (uint32_t)plen;

    /* the enumerator's invariants */
    etw_decode_cursor c;
    etw_value v;
    FUZZ_ASSERT(etw_decode_begin(&c, &s, &ev, refs, MAX_PROPS) == ETW_OK);
    size_t items = 0;
    int open = 0;
    etw_status st;
    while ((st = etw_decode_next(&c, &v)) == ETW_OK) {
        items++;
        /* counted zero-size items <= ETW_ZERO_ITEMS_BASE + plen; items
         * taking bytes, per nesting level, <= plen; markers pair with them */
        FUZZ_ASSERT(items <= 4 * (ETW_DECODE_MAX_DEPTH + 2) * (plen + ETW_ZERO_ITEMS_BASE + 1));
        FUZZ_ASSERT(v.depth <= ETW_DECODE_MAX_DEPTH);
        FUZZ_ASSERT(v.prop >= props && v.prop < props + n);
        FUZZ_ASSERT(v.name == v.prop->name);
        if (v.kind == ETW_VALUE_SCALAR || v.kind == ETW_VALUE_UNSUPPORTED) {
            if (v.size) {
                FUZZ_ASSERT(v.data >= payload && v.data + v.size <= payload + plen);
            }
        } else {
            FUZZ_ASSERT(v.data == NULL && v.size == 0);
        }
        if (v.kind == ETW_VALUE_STRUCT_BEGIN || v.kind == ETW_VALUE_ARRAY_BEGIN) open++;
        if (v.kind == ETW_VALUE_STRUCT_END || v.kind == ETW_VALUE_ARRAY_END) {
            FUZZ_ASSERT(open > 0);
            open--;
        }
        /* UNSUPPORTED takes the rest of the payload, except the element
         * that stands for the repeats of a zero-size element */
        if (v.kind == ETW_VALUE_UNSUPPORTED && !(v.in_array && v.size == 0))
            FUZZ_ASSERT(etw_decode_remaining(&c) == 0);
        (void)etw_value_u64(&v);
        (void)etw_value_i64(&v);
        (void)etw_value_double(&v);
    }
    FUZZ_ASSERT(st == ETW_END);
    FUZZ_ASSERT(etw_decode_next(&c, &v) == ETW_END);
    FUZZ_ASSERT(etw_decode_remaining(&c) <= plen);

    /* the JSON */
    if (!text_ready) {
        etw_text_init(&text, NULL);
        text_ready = 1;
    }
    etw_text_clear(&text);
    FUZZ_ASSERT(etw_fields_json(&text, &s, &ev, refs, MAX_PROPS) == ETW_OK);
    const char *j = etw_text_cstr(&text);
    FUZZ_ASSERT(strlen(j) == text.len); /* no raw NUL */
    FUZZ_ASSERT(utf8_valid((const unsigned char *)j, text.len));
    FUZZ_ASSERT(json_valid(j, text.len));
    free(payload);
    return 0;
}
