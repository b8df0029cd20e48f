/* etw_merge.h - k-way merge of per-processor record streams: a tournament
 * (loser) tree over the streams ordered by (timestamp, buffer file offset),
 * so equal timestamps keep file order. Two streams never share a buffer, so
 * that pair orders any two streams' records; within a stream records come
 * in buffer order already.
 *
 * A loser tree replays one leaf-to-root path per event: log2(streams)
 * comparisons, where a binary heap's sift-down makes two per level (8
 * streams whose events alternate, net.4.5.2.x64.etl: the heap took a fifth
 * of the reader's time outside decompression). */
#ifndef ETW_MERGE_H
#define ETW_MERGE_H

#include <stdint.h>

typedef struct etw_merge_key {
    int64_t timestamp;
    uint64_t file_offset;
} etw_merge_key;

typedef struct etw_merge {
    uint32_t *tree;      /* tree[1..size): the loser at each match; caller-allocated, size entries */
    etw_merge_key *keys; /* keys[leaf]: streams 0..n-1, then padding; caller-allocated, size entries */
    uint32_t size;       /* leaves: n rounded up to a power of two */
    uint32_t n;          /* streams */
    uint32_t winner;     /* the stream with the smallest key (when live > 0) */
    uint32_t live;       /* streams that still have a record */
} etw_merge;

/* Leaves for n streams (the entries tree and keys need). */
uint32_t etw_merge_size(uint32_t n);

/* Start over: every stream ended (no record). */
void etw_merge_clear(etw_merge *m);
/* Stream s has a record with key k (before etw_merge_build). */
void etw_merge_set(etw_merge *m, uint32_t s, int64_t timestamp, uint64_t file_offset);
/* Play every match after the etw_merge_set calls. */
void etw_merge_build(etw_merge *m);

/* The stream with the smallest key; live must be > 0. */
static inline uint32_t etw_merge_top(const etw_merge *m) { return m->winner; }

/* The winner's record changed to one with this key: play its matches again. */
void etw_merge_replace_top(etw_merge *m, int64_t timestamp, uint64_t file_offset);
/* The winner has no more records. */
void etw_merge_pop(etw_merge *m);

#endif
