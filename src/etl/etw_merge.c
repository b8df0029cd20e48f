/* etw_merge.c - building the loser tree behind the timestamp-ordered event
 * stream (the per-event replay is inline in etw_merge.h). */
#include "etw_merge.h"

static int key_less(const etw_merge_node *a, const etw_merge_node *b) {
    return a->timestamp < b->timestamp || (a->timestamp == b->timestamp && a->file_offset < b->file_offset);
}

uint32_t etw_merge_size(uint32_t n) {
    uint32_t size = 1;
    while (size < n) size *= 2;
    return size;
}

void etw_merge_clear(etw_merge *m) {
    for (uint32_t i = 0; i < m->size; i++) {
        m->leaf[i].timestamp = ETW_MERGE_END_TIMESTAMP;
        m->leaf[i].file_offset = ETW_MERGE_END_OFFSET;
        m->leaf[i].stream = i;
    }
    m->live = 0;
    m->win = m->leaf[0];
}

void etw_merge_set(etw_merge *m, uint32_t s, int64_t timestamp, uint64_t file_offset) {
    m->leaf[s].timestamp = timestamp;
    m->leaf[s].file_offset = file_offset;
    m->live++;
}

/* The winner of the subtree at node i (leaves are nodes size..2*size-1);
 * the loser of each match stays in its node. Depth is log2(size) <= 11. */
static etw_merge_node play(etw_merge *m, uint32_t i) {
    if (i >= m->size) return m->leaf[i - m->size];
    etw_merge_node a = play(m, 2 * i), b = play(m, 2 * i + 1);
    if (key_less(&b, &a)) {
        m->tree[i] = a;
        return b;
    }
    m->tree[i] = b;
    return a;
}

void etw_merge_build(etw_merge *m) { m->win = play(m, 1); }
