/* etw_alloc.h - the library's use of a caller-supplied etw_allocator. */
#ifndef ETW_ALLOC_H
#define ETW_ALLOC_H

#include <stddef.h>

#include "etwdecode/etw_types.h"

/* Resolve an optional allocator: NULL gives malloc/free. */
etw_allocator etw_allocator_resolve(const etw_allocator *a);

static inline void *etw_alloc(const etw_allocator *a, size_t n) {
    return a->alloc(a->ctx, n ? n : 1);
}
static inline void etw_free(const etw_allocator *a, void *p) {
    if (p) a->free(a->ctx, p);
}
/* Allocate zeroed memory for n elements of size sz, NULL on overflow. */
void *etw_calloc(const etw_allocator *a, size_t n, size_t sz);

#endif
