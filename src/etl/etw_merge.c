/* etw_merge.c - the loser tree behind the timestamp-ordered event stream. */
#include "etw_merge.h"

/* A key no record has: records lie at file offsets below the file's size.
 * Ended streams and padding leaves hold it, so they never win over a record. */
#define END_TIMESTAMP INT64_MAX
#define END_OFFSET UINT64_MAX

static inline int key_less(const etw_merge_key *a, const etw_merge_key *b) {
    return a->timestamp < b->timestamp || (a->timestamp == b->timestamp && a->file_offset < b->file_offset);
}

uint32_t etw_merge_size(uint32_t n) {
    uint32_t size = 1;
    while (size < n) size *= 2;
    return size;
}

void etw_merge_clear(etw_merge *m) {
    for (uint32_t i = 0; i < m->size; i++) {
        m->keys[i].timestamp = END_TIMESTAMP;
        m->keys[i].file_offset = END_OFFSET;
    }
    m->live = 0;
    m->winner = 0;
}

void etw_merge_set(etw_merge *m, uint32_t s, int64_t timestamp, uint64_t file_offset) {
    m->keys[s].timestamp = timestamp;
    m->keys[s].file_offset = file_offset;
    m->live++;
}

/* The winner of the subtree at node i (leaves are nodes size..2*size-1);
 * the loser of each match stays at its node. Depth is log2(size) <= 11. */
static uint32_t play(etw_merge *m, uint32_t i) {
    if (i >= m->size) return i - m->size;
    uint32_t a = play(m, 2 * i), b = play(m, 2 * i + 1);
    if (key_less(&m->keys[b], &m->keys[a])) {
        m->tree[i] = a;
        return b;
    }
    m->tree[i] = b;
    return a;
}

void etw_merge_build(etw_merge *m) { m->winner = play(m, 1); }

/* Leaf s's key changed and s was the winner: replay its path to the root.
 * At each match the smaller key goes on up and the other stays; on equal
 * keys (only ended streams) the one at the node stays. (A form with masks
 * instead of branches measured no faster.) */
static void replay(etw_merge *m, uint32_t s) {
    const etw_merge_key *keys = m->keys;
    uint32_t cur = s;
    for (uint32_t node = (m->size + s) / 2; node > 0; node /= 2) {
        uint32_t other = m->tree[node];
        if (key_less(&keys[other], &keys[cur])) {
            m->tree[node] = cur;
            cur = other;
        }
    }
    m->winner = cur;
}

void etw_merge_replace_top(etw_merge *m, int64_t timestamp, uint64_t file_offset) {
    uint32_t s = m->winner;
    m->keys[s].timestamp = timestamp;
    m->keys[s].file_offset = file_offset;
    replay(m, s);
}

void etw_merge_pop(etw_merge *m) {
    if (m->live == 0) return;
    uint32_t s = m->winner;
    m->keys[s].timestamp = END_TIMESTAMP;
    m->keys[s].file_offset = END_OFFSET;
    m->live--;
    replay(m, s);
}
