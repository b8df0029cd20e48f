/* etw_merge.c - the min-heap behind the timestamp-ordered event stream. */
#include "etw_merge.h"

static int key_less(const etw_merge_key *a, const etw_merge_key *b) {
    if (a->timestamp != b->timestamp) return a->timestamp < b->timestamp;
    if (a->file_offset != b->file_offset) return a->file_offset < b->file_offset;
    return a->record_offset < b->record_offset;
}

static void sift_down(etw_merge *m, uint32_t i) {
    uint32_t n = m->count;
    uint32_t s = m->heap[i];
    for (;;) {
        uint32_t l = 2 * i + 1;
        if (l >= n) break;
        uint32_t c = l;
        if (l + 1 < n && key_less(&m->keys[m->heap[l + 1]], &m->keys[m->heap[l]])) c = l + 1;
        if (!key_less(&m->keys[m->heap[c]], &m->keys[s])) break;
        m->heap[i] = m->heap[c];
        i = c;
    }
    m->heap[i] = s;
}

void etw_merge_push(etw_merge *m, uint32_t s) {
    uint32_t i = m->count++;
    while (i > 0) {
        uint32_t parent = (i - 1) / 2;
        if (!key_less(&m->keys[s], &m->keys[m->heap[parent]])) break;
        m->heap[i] = m->heap[parent];
        i = parent;
    }
    m->heap[i] = s;
}

void etw_merge_update_top(etw_merge *m) {
    if (m->count > 1) sift_down(m, 0);
}

void etw_merge_pop(etw_merge *m) {
    if (m->count == 0) return;
    m->heap[0] = m->heap[--m->count];
    if (m->count > 1) sift_down(m, 0);
}
