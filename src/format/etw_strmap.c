/* etw_strmap.c - string-keyed records for summaries (see etw_strmap.h). */
#include "etw_strmap.h"

#include <string.h>

#include "../common/etw_alloc.h"

static uint64_t fnv(const void *p, size_t n) {
    const unsigned char *s = p;
    uint64_t h = 1469598103934665603u; /* FNV-1a 64-bit offset basis */
    for (size_t i = 0; i < n; i++) h = (h ^ s[i]) * 1099511628211u;
    return h;
}

void etw_strmap_init(etw_strmap *m, const etw_allocator *alloc, size_t record_size, size_t max_count) {
    memset(m, 0, sizeof *m);
    m->alloc = etw_allocator_resolve(alloc);
    m->record_size = record_size;
    m->max_count = max_count;
}

void etw_strmap_free(etw_strmap *m) {
    for (size_t i = 0; i < m->nblocks; i++) etw_free(&m->alloc, m->blocks[i]);
    etw_free(&m->alloc, m->blocks);
    etw_free(&m->alloc, m->slots);
    memset(m, 0, sizeof *m);
}

static int grow(etw_strmap *m) {
    size_t nc = m->cap ? m->cap * 2 : 64;
    etw_strmap_entry **ns = etw_calloc(&m->alloc, nc, sizeof *ns);
    if (!ns) return 0;
    for (size_t i = 0; i < m->cap; i++) {
        etw_strmap_entry *e = m->slots[i];
        if (!e) continue;
        size_t j = (size_t)e->hash & (nc - 1);
        while (ns[j]) j = (j + 1) & (nc - 1);
        ns[j] = e;
    }
    etw_free(&m->alloc, m->slots);
    m->slots = ns;
    m->cap = nc;
    return 1;
}

void *etw_strmap_get(etw_strmap *m, const void *key, size_t len, int *created) {
    if (created) *created = 0;
    if ((m->count + 1) * 2 > m->cap && !grow(m)) return NULL;
    uint64_t h = fnv(key, len);
    size_t j = (size_t)h & (m->cap - 1);
    while (m->slots[j]) {
        etw_strmap_entry *e = m->slots[j];
        if (e->hash == h && e->key_len == len && !memcmp(e->key, key, len)) return e->rec;
        j = (j + 1) & (m->cap - 1);
    }
    if (m->max_count && m->count >= m->max_count) return NULL;
    if (m->nblocks == m->blocks_cap) {
        size_t nc = m->blocks_cap ? m->blocks_cap * 2 : 64;
        void **nb = etw_calloc(&m->alloc, nc, sizeof *nb);
        if (!nb) return NULL;
        if (m->nblocks) memcpy(nb, m->blocks, m->nblocks * sizeof *nb);
        etw_free(&m->alloc, m->blocks);
        m->blocks = nb;
        m->blocks_cap = nc;
    }
    /* entry, then the record (aligned to 16), then the key */
    size_t head = (sizeof(etw_strmap_entry) + 15) & ~(size_t)15;
    size_t rec = (m->record_size + 15) & ~(size_t)15;
    if (len > SIZE_MAX - head - rec - 1) return NULL;
    unsigned char *b = etw_alloc(&m->alloc, head + rec + len + 1);
    if (!b) return NULL;
    etw_strmap_entry *e = (etw_strmap_entry *)(void *)b;
    e->rec = b + head;
    memset(e->rec, 0, rec);
    char *k = (char *)b + head + rec;
    if (len) memcpy(k, key, len);
    k[len] = 0;
    e->key = k;
    e->key_len = len;
    e->hash = h;
    m->blocks[m->nblocks++] = b;
    m->slots[j] = e;
    m->count++;
    if (created) *created = 1;
    return e->rec;
}

void *etw_strmap_find(const etw_strmap *m, const void *key, size_t len) {
    if (!m->cap) return NULL;
    uint64_t h = fnv(key, len);
    size_t j = (size_t)h & (m->cap - 1);
    while (m->slots[j]) {
        const etw_strmap_entry *e = m->slots[j];
        if (e->hash == h && e->key_len == len && !memcmp(e->key, key, len)) return e->rec;
        j = (j + 1) & (m->cap - 1);
    }
    return NULL;
}

etw_strmap_entry **etw_strmap_list(const etw_strmap *m, size_t *n) {
    *n = 0;
    if (!m->count) return NULL;
    etw_strmap_entry **v = etw_calloc(&m->alloc, m->count, sizeof *v);
    if (!v) return NULL;
    for (size_t i = 0; i < m->cap; i++)
        if (m->slots[i]) v[(*n)++] = m->slots[i];
    return v;
}
