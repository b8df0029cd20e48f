/* test_merge.c - the k-way merge (src/etl/etw_merge.c) against a sort: for
 * 1 to 40 streams of records with many equal timestamps across streams, the
 * merged order is (timestamp, buffer file offset) exactly, every record once,
 * with streams ending at different times. */
#include <stdlib.h>

#include "etl/etw_merge.h"
#include "etw_test.h"

#define MAX_STREAMS 40
#define PER_STREAM 300

typedef struct rec {
    int64_t ts;
    uint64_t off;
} rec;

static int rec_cmp(const void *a, const void *b) {
    const rec *x = a, *y = b;
    if (x->ts != y->ts) return x->ts < y->ts ? -1 : 1;
    return x->off < y->off ? -1 : x->off > y->off;
}

static uint32_t rng_state = 12345;
static uint32_t rnd(void) {
    rng_state = rng_state * 1103515245u + 12345u;
    return rng_state >> 8;
}

static void merge_case(uint32_t n) {
    static rec recs[MAX_STREAMS][PER_STREAM], all[MAX_STREAMS * PER_STREAM];
    uint32_t len[MAX_STREAMS], pos[MAX_STREAMS];
    uint32_t total = 0;
    for (uint32_t s = 0; s < n; s++) {
        /* a stream's records: timestamps that never go down, few distinct
         * values (ties across streams); its buffers at offsets of its own */
        len[s] = rnd() % PER_STREAM;
        int64_t ts = (int64_t)(rnd() % 8) - 4; /* negative raw clocks too */
        for (uint32_t i = 0; i < len[s]; i++) {
            ts += rnd() % 3;
            recs[s][i].ts = ts;
            recs[s][i].off = (uint64_t)(i / 16) * 1000 + s; /* 16 records a buffer */
            all[total++] = recs[s][i];
        }
    }
    qsort(all, total, sizeof all[0], rec_cmp);
    uint32_t size = etw_merge_size(n);
    etw_merge m;
    m.tree = calloc(size, sizeof *m.tree);
    m.leaf = calloc(size, sizeof *m.leaf);
    m.size = size;
    etw_merge_clear(&m);
    for (uint32_t s = 0; s < n; s++) {
        pos[s] = 0;
        if (len[s]) etw_merge_set(&m, s, recs[s][0].ts, recs[s][0].off);
    }
    etw_merge_build(&m);
    uint32_t got = 0, wrong = 0;
    while (m.live > 0) {
        uint32_t s = etw_merge_top(&m);
        const rec *r = &recs[s][pos[s]];
        if (got >= total || r->ts != all[got].ts || r->off != all[got].off) wrong++;
        got++;
        if (++pos[s] < len[s]) etw_merge_replace_top(&m, recs[s][pos[s]].ts, recs[s][pos[s]].off);
        else etw_merge_pop(&m);
    }
    ETW_CHECK_INT(got, total);
    ETW_CHECK_INT(wrong, 0);
    free(m.tree);
    free(m.leaf);
}

static void test_merge_order(void) {
    for (uint32_t n = 1; n <= MAX_STREAMS; n++)
        for (int rep = 0; rep < 3; rep++) merge_case(n);
}

int main(void) {
    ETW_RUN(test_merge_order);
    return ETW_TEST_DONE();
}
