/* test_fixup.c - the schema fix-ups of src/schema/etw_fixup.c on real
 * traces, for every schema source that describes the events:
 *   - ClrStack/Walk (CLR event 82) of net.4.5.2.x64.etl carries FrameCount
 *     frames where every schema declares Stack[2]: decoded with the merged
 *     TRACE_EVENT_INFO (pre-scan), the built-in ClrEtwAll.man, and the same
 *     manifest given as a user manifest, each Stack has FrameCount elements
 *     and the payload (8 bytes + FrameCount pointers) is used up;
 *   - GC/GCFitBucketInfo and GC/GCLOHCompact of gcevents.etl lay out their
 *     array elements as the runtime's C structs (16 and 32 bytes on x64):
 *     the bucket sizes add up to the event's own TotalSize, the buckets are
 *     numbered 0..Count-1, and the payload is used up.
 */
#include <stdint.h>
#include <string.h>

#include "etw_test.h"
#include "etwdecode/etw_decode.h"
#include "etwdecode/etw_decoder.h"
#include "etwdecode/etw_reader.h"

static const etw_guid CLR = {0xe13c0d23, 0xccbc, 0x4e12, {0x93, 0x1b, 0xd9, 0xcc, 0x2e, 0xee, 0x27, 0xe4}};

enum { VIA_METADATA, VIA_BUILTIN, VIA_USER };

static etw_decoder *decoder_for(int via, etw_reader *r) {
    etw_decoder_options o;
    memset(&o, 0, sizeof o);
    etw_decoder *d = NULL;
    ETW_CHECK_INT(etw_decoder_new(&d, &o), ETW_OK);
    if (!d) return NULL;
    if (via == VIA_METADATA) ETW_CHECK_INT(etw_decoder_prescan(d, r), ETW_OK);
    if (via == VIA_USER) {
        uint32_t np = 0;
        ETW_CHECK_INT(etw_decoder_add_manifest(d, ETW_TEST_DATA_DIR "/ClrEtwAll.man", &np), ETW_OK);
        ETW_CHECK(np > 0);
    }
    return d;
}

/* Decode ev; the top-level integer named `count` and the element count of
 * the array `array`; 1 when both were found and no byte is left. */
static int walk(etw_decoder *d, const etw_event *ev, const etw_schema *s, const char *count,
                const char *array, uint64_t *nvalue, uint32_t *nelems) {
    etw_decode_cursor c;
    etw_value v;
    int got_n = 0, got_a = 0;
    if (etw_decoder_begin(d, ev, s, &c) != ETW_OK) return 0;
    while (etw_decode_next(&c, &v) == ETW_OK) {
        if (v.kind == ETW_VALUE_UNSUPPORTED) return 0;
        if (v.depth == 0 && v.kind == ETW_VALUE_SCALAR && strcmp(v.name, count) == 0) {
            *nvalue = etw_value_u64(&v);
            got_n = 1;
        }
        if (v.depth == 0 && v.kind == ETW_VALUE_ARRAY_BEGIN && strcmp(v.name, array) == 0) {
            *nelems = v.array_count;
            got_a = 1;
        }
    }
    return got_n && got_a && etw_decode_remaining(&c) == 0;
}

static void stack_walks(int via, etw_schema_source want) {
    etw_reader *r = NULL;
    ETW_CHECK_INT(etw_reader_open_file(&r, ETW_TEST_DATA_DIR "/net.4.5.2.x64.etl", NULL), ETW_OK);
    if (!r) return;
    etw_decoder *d = decoder_for(via, r);
    if (!d) {
        etw_reader_close(r);
        return;
    }
    ETW_CHECK_INT(etw_reader_rewind(r), ETW_OK);
    uint64_t events = 0, good = 0, frames = 0, wrong_source = 0, size_ok = 0;
    etw_event ev;
    while (etw_reader_next(r, &ev) == ETW_OK) {
        if (!etw_guid_equal(&ev.provider, &CLR) || ev.id != 82 || ev.task != 11 || ev.opcode != 82) continue;
        events++;
        const etw_schema *s = NULL;
        if (etw_decoder_resolve(d, &ev, &s, NULL) != ETW_OK) continue;
        if (s->source != want) wrong_source++;
        uint64_t n = 0;
        uint32_t elems = 0;
        if (walk(d, &ev, s, "FrameCount", "Stack", &n, &elems) && n == elems) good++;
        frames += elems;
        /* ClrInstanceID u16, Reserved1 u8, Reserved2 u8, FrameCount u32, frames */
        if (ev.user_data_len == 8 + n * ev.pointer_size) size_ok++;
    }
    ETW_CHECK_INT(events, 14983);
    ETW_CHECK_INT(good, events);
    ETW_CHECK_INT(size_ok, events);
    ETW_CHECK_INT(wrong_source, 0);
    /* 2 per event before: 307,064 frames were dropped */
    ETW_CHECK_INT(frames, 337030);
    etw_decoder_free(d);
    etw_reader_close(r);
}

static void test_stack_walk_metadata(void) { stack_walks(VIA_METADATA, ETW_SOURCE_METADATA); }
static void test_stack_walk_builtin(void) { stack_walks(VIA_BUILTIN, ETW_SOURCE_BUILTIN); }
static void test_stack_walk_user_manifest(void) { stack_walks(VIA_USER, ETW_SOURCE_MANIFEST); }

/* The elements of "Values": per element, its members in order. */
typedef struct gc_values {
    uint32_t n;
    uint64_t v[16][5];
} gc_values;

static int gc_event(etw_decoder *d, const etw_event *ev, const etw_schema *s, gc_values *out,
                    uint64_t *total) {
    etw_decode_cursor c;
    etw_value v;
    uint32_t member = 0;
    memset(out, 0, sizeof *out);
    *total = 0;
    if (etw_decoder_begin(d, ev, s, &c) != ETW_OK) return 0;
    while (etw_decode_next(&c, &v) == ETW_OK) {
        if (v.kind == ETW_VALUE_UNSUPPORTED) return 0;
        if (v.depth == 0 && v.kind == ETW_VALUE_SCALAR && strcmp(v.name, "TotalSize") == 0)
            *total = etw_value_u64(&v);
        if (v.kind == ETW_VALUE_STRUCT_BEGIN && v.in_array) member = 0;
        if (v.kind == ETW_VALUE_STRUCT_END && v.in_array) out->n++;
        if (v.kind == ETW_VALUE_SCALAR && v.depth == 2 && out->n < 16 && member < 5)
            out->v[out->n][member++] = etw_value_u64(&v);
    }
    return etw_decode_remaining(&c) == 0;
}

static void test_gc_padding(void) {
    etw_reader *r = NULL;
    ETW_CHECK_INT(etw_reader_open_file(&r, ETW_TEST_DATA_DIR "/gcevents.etl", NULL), ETW_OK);
    if (!r) return;
    etw_decoder *d = decoder_for(VIA_BUILTIN, r);
    etw_event ev;
    int fit = 0, loh = 0;
    while (d && etw_reader_next(r, &ev) == ETW_OK) {
        if (!etw_guid_equal(&ev.provider, &CLR) || (ev.id != 208 && ev.id != 209)) continue;
        const etw_schema *s = NULL;
        ETW_CHECK_INT(etw_decoder_resolve(d, &ev, &s, NULL), ETW_OK);
        if (!s) continue;
        gc_values g;
        uint64_t total;
        ETW_CHECK(gc_event(d, &ev, s, &g, &total));
        ETW_CHECK_INT(ev.pointer_size, 8);
        if (ev.id == 209) { /* GCFitBucketInfo: 14 bytes, then Count 16-byte elements */
            fit++;
            ETW_CHECK_INT(g.n, 9);
            ETW_CHECK_INT(ev.user_data_len, 14 + 16 * g.n);
            /* the first bucket: index 0, 215 items, 0x6720 bytes (not 14090240 items) */
            ETW_CHECK_INT(g.v[0][0], 0);
            ETW_CHECK_INT(g.v[0][1], 215);
            ETW_CHECK_INT(g.v[0][2], 0x6720);
            uint64_t sum = 0;
            for (uint32_t i = 0; i < g.n && i < 16; i++) {
                ETW_CHECK_INT(g.v[i][0], i); /* buckets are numbered in order */
                sum += g.v[i][2];
            }
            ETW_CHECK_INT(sum, total); /* the sizes add up to the event's TotalSize */
            ETW_CHECK_INT(total, 310848);
        } else { /* GCLOHCompact: 4 bytes, then Count 32-byte elements */
            loh++;
            ETW_CHECK_INT(g.n, 1);
            ETW_CHECK_INT(ev.user_data_len, 4 + 32 * g.n);
        }
    }
    ETW_CHECK_INT(fit, 1);
    ETW_CHECK_INT(loh, 1);
    etw_decoder_free(d);
    etw_reader_close(r);
}

int main(void) {
    ETW_RUN(test_stack_walk_metadata);
    ETW_RUN(test_stack_walk_builtin);
    ETW_RUN(test_stack_walk_user_manifest);
    ETW_RUN(test_gc_padding);
    return ETW_TEST_DONE();
}
