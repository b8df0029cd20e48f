/* test_decode_flat.c - etw_decode_walk_trailing and etw_decode_walk_field
 * (the payload read without making its values) against the walk they
 * stand in for (etw_decode_next to the end), on every event of every
 * trace in tests/data and on each such payload cut short at every length:
 * the same trailing byte count and the same field bytes, or "walk it". */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "decode/etw_decode_walk.h"
#include "etw_test.h"
#include "etwdecode/etw_decode.h"
#include "etwdecode/etw_decoder.h"
#include "etwdecode/etw_reader.h"
#include "schema/etw_source.h"

#define MAX_TOP 64

typedef struct tally {
    unsigned long events, flat, walked, fields, cuts, planned, together;
    unsigned long trailing_mismatch, field_mismatch, plan_mismatch;
} tally;

/* The walk: the bytes left after the last value, and each top-level
 * scalar's bytes (data NULL when the walk gives no scalar for it). */
static uint32_t walk(etw_decoder *d, const etw_event *ev, const etw_schema *s, const uint8_t **data,
                     uint32_t *size) {
    for (int i = 0; i < MAX_TOP; i++) data[i] = NULL;
    etw_decode_cursor c;
    if (etw_decoder_begin(d, ev, s, &c) != ETW_OK) return 0;
    etw_value v;
    int top = -1;
    while (etw_decode_next(&c, &v) == ETW_OK) {
        /* one item per top-level property, in order (an array's BEGIN) */
        if (v.depth != 0 || v.kind == ETW_VALUE_ARRAY_END || v.kind == ETW_VALUE_STRUCT_END) continue;
        top++;
        if (top < MAX_TOP && v.kind == ETW_VALUE_SCALAR) {
            data[top] = v.data;
            size[top] = v.size;
        }
    }
    return etw_decode_remaining(&c);
}

static void check_event(etw_decoder *d, const etw_event *ev, const etw_schema *s, tally *t) {
    uint64_t *refs;
    size_t refs_len;
    etw_decoder_scratch(d, &refs, &refs_len);
    const uint8_t *wd[MAX_TOP];
    uint32_t ws[MAX_TOP];
    uint32_t fast = 0;
    int flat = etw_decode_walk_trailing(s, ev, refs_len, &fast);
    uint32_t slow = walk(d, ev, s, wd, ws);
    /* the plan (etw_decode_plan) gives the walk's trailing bytes too; the
     * pointer width is the one flat_walk uses */
    etw_decode_plan_t pl;
    uint8_t ptr = ev->pointer_size == 4 || ev->pointer_size == 8 ? ev->pointer_size : s->pointer_size == 4 ? 4 : 8;
    if ((!s->prop_count || refs_len >= s->prop_count) && etw_decode_plan(s, ptr, &pl)) {
        t->planned++;
        uint32_t planned = etw_decode_plan_trailing(&pl, ev->user_data, ev->user_data_len);
        if (planned != slow && t->plan_mismatch++ < 5)
            fprintf(stderr, "%s: planned trailing %u, the walk %u (%u bytes)\n",
                    s->event_name ? s->event_name : "?", planned, slow, ev->user_data_len);
    }
    if (!flat) {
        t->walked++;
        return;
    }
    t->flat++;
    if (fast != slow) {
        if (t->trailing_mismatch++ < 5)
            fprintf(stderr, "%s: trailing %u, the walk %u (%u bytes)\n", s->event_name ? s->event_name : "?",
                    fast, slow, ev->user_data_len);
    }
    uint32_t n = s->top_count < s->prop_count ? s->top_count : s->prop_count;
    /* the fields read one by one, then (those that can be) together */
    uint16_t many[ETW_DECODE_WALK_FIELDS];
    const uint8_t *one_d[ETW_DECODE_WALK_FIELDS];
    uint32_t one_s[ETW_DECODE_WALK_FIELDS], nmany = 0;
    int8_t one_r[ETW_DECODE_WALK_FIELDS];
    for (uint32_t i = 0; i < n && i < MAX_TOP; i++) {
        const uint8_t *fd = NULL;
        uint32_t fs = 0;
        int r = etw_decode_walk_field(s, ev, refs_len, (uint16_t)i, &fd, &fs);
        if (r >= 0 && nmany < ETW_DECODE_WALK_FIELDS && (i % 3 != 1 || nmany < 2)) {
            many[nmany] = (uint16_t)i;
            one_d[nmany] = fd;
            one_s[nmany] = fs;
            one_r[nmany++] = (int8_t)r;
        }
        if (r < 0) continue;
        t->fields++;
        int same = r == 1 ? wd[i] && wd[i] == fd && ws[i] == fs : wd[i] == NULL;
        if (!same && t->field_mismatch++ < 5)
            fprintf(stderr, "%s field %u: direct %d/%u, the walk %s/%u\n", s->event_name ? s->event_name : "?",
                    i, r, fs, wd[i] ? "value" : "none", wd[i] ? ws[i] : 0);
    }
    if (nmany) {
        const uint8_t *md[ETW_DECODE_WALK_FIELDS];
        uint32_t ms[ETW_DECODE_WALK_FIELDS];
        int8_t mg[ETW_DECODE_WALK_FIELDS];
        int r = etw_decode_walk_fields(s, ev, refs_len, many, nmany, md, ms, mg);
        int same = r == 1;
        for (uint32_t k = 0; same && k < nmany; k++)
            same = mg[k] == one_r[k] && (!mg[k] || (md[k] == one_d[k] && ms[k] == one_s[k]));
        t->together++;
        if (!same && t->field_mismatch++ < 5)
            fprintf(stderr, "%s: %u fields together: %d, not as one by one\n", s->event_name ? s->event_name : "?",
                    nmany, r);
    }
}

static void check_trace(const char *name, tally *t) {
    char path[512];
    snprintf(path, sizeof path, "%s/%s", ETW_TEST_DATA_DIR, name);
    etw_reader *r = NULL;
    if (etw_reader_open_file(&r, path, NULL) != ETW_OK) {
        fprintf(stderr, "cannot open %s\n", path);
        ETW_CHECK(0);
        return;
    }
    etw_decoder *d = NULL;
    ETW_CHECK_INT(etw_decoder_new(&d, NULL), ETW_OK);
    if (!d) {
        etw_reader_close(r);
        return;
    }
    etw_decoder_prescan(d, r);
    etw_event ev;
    /* one payload per schema is also cut at every length (at most 512 of
     * them: the hostile shapes, strings without their NUL, SIDs and
     * arrays cut inside) */
    uint32_t cut_schemas[4096];
    size_t ncut = 0;
    uint8_t *copy = malloc(0x10000);
    while (copy && etw_reader_next(r, &ev) == ETW_OK) {
        const etw_schema *s = NULL;
        if (ev.is_logfile_header || etw_decoder_resolve(d, &ev, &s, NULL) != ETW_OK || !s) continue;
        t->events++;
        check_event(d, &ev, s, t);
        int seen = 0;
        for (size_t i = 0; i < ncut && !seen; i++) seen = cut_schemas[i] == s->id;
        if (seen || ncut == 4096 || !ev.user_data_len || ev.user_data_len > 0x10000) continue;
        cut_schemas[ncut++] = s->id;
        memcpy(copy, ev.user_data, ev.user_data_len);
        etw_event cut = ev;
        cut.user_data = copy;
        for (uint32_t len = 0; len < ev.user_data_len; len++) {
            /* every length of a short payload; the ends of a long one */
            if (len == 256 && ev.user_data_len > 512) len = ev.user_data_len - 256;
            cut.user_data_len = len;
            check_event(d, &cut, s, t);
            t->cuts++;
        }
    }
    free(copy);
    etw_decoder_free(d);
    etw_reader_close(r);
}

static void test_every_trace(void) {
    static const char *traces[] = {"ShutdownPerfDiagLogger.etl", "net.4.5.2.x64.etl", "gcevents.etl",
                                   "lxcore_kernel.etl", "AMSITrace.etl", "powershell.etl", "HTTP_Server.etl",
                                   "BondEtwSample.etl", "primitive-types.etl", "SelfDescribingSingleEvent.etl",
                                   "smallEtlFile.etl"};
    tally t;
    memset(&t, 0, sizeof t);
    for (size_t i = 0; i < sizeof traces / sizeof *traces; i++) check_trace(traces[i], &t);
    fprintf(stderr, "%lu events (%lu flat, %lu walked, %lu planned), %lu fields read directly, %lu cut payloads\n",
            t.events, t.flat, t.walked, t.planned, t.fields, t.cuts);
    ETW_CHECK_INT(t.trailing_mismatch, 0);
    ETW_CHECK_INT(t.plan_mismatch, 0);
    ETW_CHECK(t.planned > 17000);
    ETW_CHECK(t.together > 17000);
    ETW_CHECK_INT(t.field_mismatch, 0);
    /* the kernel trace alone has 17,077 events with a schema, most flat */
    ETW_CHECK(t.events > 17000);
    ETW_CHECK(t.flat > 17000);
    ETW_CHECK(t.fields > 100000);
    ETW_CHECK(t.cuts > 10000);
}

/* A hand-made schema: a UTF-16 string without its NUL takes the rest, a
 * WBEMSID whose sub-authority count passes the payload takes the rest (no
 * trailing byte, as the walk), and a struct makes it "walk it". */
static void test_shapes(void) {
    etw_property props[3];
    memset(props, 0, sizeof props);
    props[0].name = "Id";
    props[0].in_type = ETW_INTYPE_UINT32;
    props[1].name = "Name";
    props[1].in_type = ETW_INTYPE_UNICODESTRING;
    props[2].name = "Tail";
    props[2].in_type = ETW_INTYPE_UINT16;
    etw_schema s;
    memset(&s, 0, sizeof s);
    s.prop_count = 3;
    s.top_count = 3;
    s.props = props;
    s.pointer_size = 8;
    uint8_t p[] = {1, 0, 0, 0, 'a', 0, 'b', 0, 0, 0, 7, 0, 0xEE}; /* 1 byte after Tail */
    etw_event ev;
    memset(&ev, 0, sizeof ev);
    ev.user_data = p;
    ev.user_data_len = sizeof p;
    ev.pointer_size = 8;
    uint32_t tr = 99;
    ETW_CHECK_INT(etw_decode_walk_trailing(&s, &ev, 8, &tr), 1);
    ETW_CHECK_INT(tr, 1);
    const uint8_t *d;
    uint32_t n;
    ETW_CHECK_INT(etw_decode_walk_field(&s, &ev, 8, 1, &d, &n), 1);
    ETW_CHECK(d == p + 4);
    ETW_CHECK_INT(n, 4); /* "ab" without the NUL */
    ETW_CHECK_INT(etw_decode_walk_field(&s, &ev, 8, 2, &d, &n), 1);
    ETW_CHECK_INT(d[0], 7);
    /* without the NUL: the string takes the rest, Tail is not reached */
    ev.user_data_len = 8;
    ETW_CHECK_INT(etw_decode_walk_trailing(&s, &ev, 8, &tr), 1);
    ETW_CHECK_INT(tr, 0);
    ETW_CHECK_INT(etw_decode_walk_field(&s, &ev, 8, 2, &d, &n), 0);
    /* too few references for the schema: the walk decides (it refuses) */
    ETW_CHECK_INT(etw_decode_walk_trailing(&s, &ev, 2, &tr), 0);
    /* a struct: the walk */
    props[2].flags = ETW_PROP_STRUCT;
    ETW_CHECK_INT(etw_decode_walk_trailing(&s, &ev, 8, &tr), 0);
    ETW_CHECK_INT(etw_decode_walk_field(&s, &ev, 8, 1, &d, &n), -1);
}

/* Bits of an earlier integer (no byte) and an array whose count is an
 * earlier integer: sizes by hand. */
static void test_bits_and_arrays(void) {
    etw_property props[4];
    memset(props, 0, sizeof props);
    props[0].name = "Count";
    props[0].in_type = ETW_INTYPE_UINT16;
    props[1].name = "Low";
    props[1].in_type = ETW_INTYPE_UINT8;
    props[1].flags = ETW_PROP_BITS;
    props[1].count = 0;
    props[1].length = (uint16_t)(4u << 8 | 0u); /* 4 bits from bit 0 */
    props[2].name = "Items";
    props[2].in_type = ETW_INTYPE_UINT32;
    props[2].flags = ETW_PROP_COUNT_REF;
    props[2].count = 0;
    props[3].name = "Tail";
    props[3].in_type = ETW_INTYPE_UINT8;
    etw_schema s;
    memset(&s, 0, sizeof s);
    s.prop_count = 4;
    s.top_count = 4;
    s.props = props;
    s.pointer_size = 8;
    /* Count 2, Items 2 x 4 bytes, Tail, then 2 bytes no field takes */
    uint8_t p[] = {2, 0, 1, 0, 0, 0, 2, 0, 0, 0, 9, 0xAA, 0xBB};
    etw_event ev;
    memset(&ev, 0, sizeof ev);
    ev.user_data = p;
    ev.user_data_len = sizeof p;
    ev.pointer_size = 8;
    uint32_t tr = 99;
    ETW_CHECK_INT(etw_decode_walk_trailing(&s, &ev, 8, &tr), 1);
    ETW_CHECK_INT(tr, 2);
    const uint8_t *d;
    uint32_t n;
    ETW_CHECK_INT(etw_decode_walk_field(&s, &ev, 8, 3, &d, &n), 1);
    ETW_CHECK(d == p + 10);
    ETW_CHECK_INT(n, 1);
    ETW_CHECK_INT(etw_decode_walk_field(&s, &ev, 8, 1, &d, &n), -1); /* a bit field: the walk */
    ETW_CHECK_INT(etw_decode_walk_field(&s, &ev, 8, 2, &d, &n), -1); /* an array: the walk */
    /* a count the payload cannot hold: the array takes the rest */
    p[0] = 200;
    ETW_CHECK_INT(etw_decode_walk_trailing(&s, &ev, 8, &tr), 1);
    ETW_CHECK_INT(tr, 0);
    ETW_CHECK_INT(etw_decode_walk_field(&s, &ev, 8, 3, &d, &n), 0);
    /* the count after the array: the walk */
    props[2].count = 3;
    ETW_CHECK_INT(etw_decode_walk_trailing(&s, &ev, 8, &tr), 0);
}

/* etw_decode_str_len against a unit-by-unit scan: every payload size up to
 * 96 bytes (odd ones too), the NUL at every unit or nowhere, the other units
 * nonzero, UTF-16 ones with a zero byte in a third of them (a unit is NUL
 * only when both its bytes are); each payload in a block of exactly its
 * size, so that a read past it is the sanitizers' to see. */
static void test_str_len(void) {
    unsigned long cases = 0;
    for (unsigned unit = 1; unit <= 2; unit++) {
        for (uint32_t n = 0; n <= 96; n++) {
            uint32_t units = n / unit;
            for (uint32_t nul = 0; nul <= units; nul++) { /* nul == units: none */
                uint8_t *p = malloc(n ? n : 1);
                ETW_CHECK(p != NULL);
                for (uint32_t i = 0; i < n; i++)
                    p[i] = (uint8_t)(unit == 2 && i % 3 == 0 ? 0 : 0x41 + i % 23);
                if (nul < units) memset(p + nul * unit, 0, unit);
                uint32_t want = units * unit;
                int want_found = 0;
                for (uint32_t u = 0; u < units; u++)
                    if (!p[u * unit] && (unit == 1 || !p[u * unit + 1])) {
                        want = u * unit;
                        want_found = 1;
                        break;
                    }
                ETW_CHECK_INT(want_found, nul < units);
                int found = -1;
                uint32_t got = etw_decode_str_len(p, n, unit, &found);
                ETW_CHECK_INT(got, want);
                ETW_CHECK_INT(found, want_found);
                free(p);
                cases++;
            }
        }
    }
    printf("  str_len: %lu payloads\n", cases);
}

int main(void) {
    ETW_RUN(test_str_len);
    ETW_RUN(test_shapes);
    ETW_RUN(test_bits_and_arrays);
    ETW_RUN(test_every_trace);
    return ETW_TEST_DONE();
}
