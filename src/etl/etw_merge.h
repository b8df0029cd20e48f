/* etw_merge.h - k-way merge of per-processor record streams: a binary
 * min-heap of stream numbers ordered by (timestamp, buffer file offset,
 * record offset), so equal timestamps keep file order. */
#ifndef ETW_MERGE_H
#define ETW_MERGE_H

#include <stdint.h>

typedef struct etw_merge_key {
    int64_t timestamp;
    uint64_t file_offset;
    uint32_t record_offset;
} etw_merge_key;

typedef struct etw_merge {
    uint32_t *heap;          /* stream numbers, caller-allocated, capacity cap */
    etw_merge_key *keys;     /* keys[stream], caller-allocated */
    uint32_t count;
    uint32_t cap;
} etw_merge;

/* Insert stream s whose key is already in keys[s]. */
void etw_merge_push(etw_merge *m, uint32_t s);
/* The stream with the smallest key; count must be > 0. */
static inline uint32_t etw_merge_top(const etw_merge *m) { return m->heap[0]; }
/* keys[top] changed (the stream advanced): restore order. */
void etw_merge_update_top(etw_merge *m);
/* Remove the top stream (it ended). */
void etw_merge_pop(etw_merge *m);

#endif
