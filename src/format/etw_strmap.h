/* etw_strmap.h - a map from byte strings to small records, for summaries:
 * open addressing on a 64-bit FNV-1a hash, keys copied into the map's own
 * blocks. Records are fixed-size (given at init) and zeroed when created;
 * they stay at the same address until the map is freed (they live in
 * blocks; the table holds pointers). */
#ifndef ETW_STRMAP_H
#define ETW_STRMAP_H

#include <stddef.h>
#include <stdint.h>

#include "etwdecode/etw_types.h"

typedef struct etw_strmap_entry {
    const char *key; /* NUL-terminated copy */
    size_t key_len;
    uint64_t hash;
    void *rec;       /* record_size bytes */
} etw_strmap_entry;

typedef struct etw_strmap {
    etw_allocator alloc;
    size_t record_size;
    etw_strmap_entry **slots;
    size_t cap, count;
    size_t max_count;       /* 0: no bound */
    void **blocks;          /* entry+key+record allocations, to free */
    size_t nblocks, blocks_cap;
} etw_strmap;

void etw_strmap_init(etw_strmap *m, const etw_allocator *alloc, size_t record_size, size_t max_count);
void etw_strmap_free(etw_strmap *m);

/* The record for key (created, zeroed, when new). NULL when out of memory
 * or when the map holds max_count keys already and key is new. *created
 * (may be NULL) says whether it was new. */
void *etw_strmap_get(etw_strmap *m, const void *key, size_t len, int *created);

/* The record for key, or NULL when it is not in the map (nothing created). */
void *etw_strmap_find(const etw_strmap *m, const void *key, size_t len);

/* The entries in an array the caller frees (with the map's allocator), or
 * NULL when empty or out of memory; *n receives the count. */
etw_strmap_entry **etw_strmap_list(const etw_strmap *m, size_t *n);

#endif
