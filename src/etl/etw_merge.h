/* etw_merge.h - k-way merge of per-processor record streams: a tournament
 * (loser) tree over the streams ordered by (timestamp, buffer file offset),
 * so equal timestamps keep file order. Two streams never share a buffer, so
 * that pair orders any two streams' records; within a stream records come
 * in buffer order already.
 *
 * A loser tree replays one leaf-to-root path per event: log2(streams)
 * comparisons, where a binary heap's sift-down makes two per level (8
 * streams whose events alternate, net.4.5.2.x64.etl: the heap took a fifth
 * of the reader's time outside decompression). Each match's loser is kept
 * in its node with its key, so a match is one load; the replay is inline
 * (it runs once per event). */
#ifndef ETW_MERGE_H
#define ETW_MERGE_H

#include <stdint.h>

/* A key no record has: records lie at file offsets below the file's size.
 * Ended streams and padding leaves hold it, so they never win over a record. */
#define ETW_MERGE_END_TIMESTAMP INT64_MAX
#define ETW_MERGE_END_OFFSET UINT64_MAX

typedef struct etw_merge_node {
    int64_t timestamp;
    uint64_t file_offset;
    uint32_t stream;
} etw_merge_node;

typedef struct etw_merge {
    etw_merge_node *tree; /* tree[1..size): the loser of each match; caller-allocated, size entries */
    etw_merge_node *leaf; /* the streams' first keys for etw_merge_build; caller-allocated, size entries */
    uint32_t size;        /* leaves: streams rounded up to a power of two */
    uint32_t live;        /* streams that still have a record */
    etw_merge_node win;   /* the stream with the smallest key and its key (when live > 0) */
} etw_merge;

/* Leaves for n streams (the entries tree and leaf need). */
uint32_t etw_merge_size(uint32_t n);

/* Start over: every stream ended (no record). */
void etw_merge_clear(etw_merge *m);
/* Stream s has a record with this key (before etw_merge_build). */
void etw_merge_set(etw_merge *m, uint32_t s, int64_t timestamp, uint64_t file_offset);
/* Play every match after the etw_merge_set calls. */
void etw_merge_build(etw_merge *m);

/* The stream with the smallest key; live must be > 0. */
static inline uint32_t etw_merge_top(const etw_merge *m) { return m->win.stream; }

/* The winner's record changed to one with this key: play its matches
 * again. At each match the smaller key goes on up and the other stays; on
 * equal keys (only ended streams) the one in the node stays. */
static inline void etw_merge_replace_top(etw_merge *m, int64_t timestamp, uint64_t file_offset) {
    etw_merge_node cur;
    cur.timestamp = timestamp;
    cur.file_offset = file_offset;
    cur.stream = m->win.stream;
    for (uint32_t node = (m->size + cur.stream) / 2; node > 0; node /= 2) {
        etw_merge_node *x = &m->tree[node];
        if (x->timestamp < cur.timestamp || (x->timestamp == cur.timestamp && x->file_offset < cur.file_offset)) {
            etw_merge_node t = *x;
            *x = cur;
            cur = t;
        }
    }
    m->win = cur;
}

/* The winner has no more records. */
static inline void etw_merge_pop(etw_merge *m) {
    if (m->live == 0) return;
    m->live--;
    etw_merge_replace_top(m, ETW_MERGE_END_TIMESTAMP, ETW_MERGE_END_OFFSET);
}

#endif
