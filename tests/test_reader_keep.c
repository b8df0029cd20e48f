/* test_reader_keep.c - etw_reader_keep_decompressed: a compressed trace
 * (net.4.5.2.x64.etl: Xpress buffers) read, rewound and read again gives
 * the same events, payloads and counts as reading it the first time, with
 * every buffer kept, with a bound that keeps only some, and with none; with
 * all kept the second read makes no copy (its buffers come from them). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "etw_test.h"
#include "etwdecode/etw_reader.h"

static unsigned long allocs;

static void *count_alloc(void *ctx, size_t n) {
    (void)ctx;
    allocs++;
    return malloc(n);
}

static void count_free(void *ctx, void *p) {
    (void)ctx;
    free(p);
}

typedef struct pass {
    uint64_t events, digest, bytes_decompressed;
} pass;

/* FNV-1a over what each event says and its payload, in read order. */
static uint64_t mix(uint64_t h, const void *p, size_t n) {
    const uint8_t *b = p;
    for (size_t i = 0; i < n; i++) h = (h ^ b[i]) * 0x100000001b3ull;
    return h;
}

static pass read_all(etw_reader *r) {
    pass p = {0, 0xcbf29ce484222325ull, 0};
    etw_event ev;
    while (etw_reader_next(r, &ev) == ETW_OK) {
        p.events++;
        p.digest = mix(p.digest, &ev.raw_timestamp, sizeof ev.raw_timestamp);
        p.digest = mix(p.digest, &ev.provider, sizeof ev.provider);
        p.digest = mix(p.digest, &ev.buffer_file_offset, sizeof ev.buffer_file_offset);
        if (ev.user_data_len) p.digest = mix(p.digest, ev.user_data, ev.user_data_len);
    }
    p.bytes_decompressed = etw_reader_stats_get(r)->bytes_decompressed;
    return p;
}

static void check_keep(size_t bound, int all_kept) {
    char path[512];
    snprintf(path, sizeof path, "%s/net.4.5.2.x64.etl", ETW_TEST_DATA_DIR);
    etw_allocator al = {count_alloc, count_free, NULL};
    etw_reader_options opt;
    memset(&opt, 0, sizeof opt);
    opt.allocator = &al;
    etw_reader *r = NULL;
    ETW_CHECK_INT(etw_reader_open_file(&r, path, &opt), ETW_OK);
    if (!r) return;
    pass plain = read_all(r);
    ETW_CHECK(plain.events == 179474 && plain.bytes_decompressed > 0);
    ETW_CHECK_INT(etw_reader_rewind(r), ETW_OK);
    ETW_CHECK_INT(etw_reader_keep_decompressed(r, bound), ETW_OK);
    pass first = read_all(r);
    ETW_CHECK_INT(etw_reader_rewind(r), ETW_OK);
    unsigned long before = allocs;
    pass again = read_all(r);
    /* every buffer kept: read from there, not copied again (a load that
     * missed them would decompress and keep a new copy) */
    if (all_kept) ETW_CHECK(allocs == before);
    ETW_CHECK(first.events == plain.events && again.events == plain.events);
    ETW_CHECK(first.digest == plain.digest && again.digest == plain.digest);
    ETW_CHECK(first.bytes_decompressed == plain.bytes_decompressed);
    ETW_CHECK(again.bytes_decompressed == plain.bytes_decompressed);
    etw_reader_close(r);
}

static void test_keep_all(void) { check_keep((size_t)256 << 20, 1); }
static void test_keep_some(void) { check_keep((size_t)1 << 20, 0); }
static void test_keep_none(void) { check_keep(0, 0); }

int main(void) {
    ETW_RUN(test_keep_all);
    ETW_RUN(test_keep_some);
    ETW_RUN(test_keep_none);
    return ETW_TEST_DONE();
}
