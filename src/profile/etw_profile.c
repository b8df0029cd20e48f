/* etw_profile.c - the profile object: creation, the events it reads, the
 * end of the trace, statistics. */
#include "profile/etw_profile_internal.h"

#include <string.h>

#include "common/etw_alloc.h"

etw_status etw_profile_new(etw_profile **out, const etw_profile_options *opt) {
    if (!out) return ETW_E_INVALID_ARG;
    *out = NULL;
    if (!opt || !opt->decoder) return ETW_E_INVALID_ARG;
    etw_allocator a = etw_allocator_resolve(opt->allocator);
    etw_profile *p = etw_calloc(&a, 1, sizeof *p);
    if (!p) return ETW_E_NOMEM;
    p->alloc = a;
    p->opt = *opt;
    p->opt.allocator = NULL; /* p->alloc holds it */
    etw_status st = etw_stacktree_init(&p->tree, &a);
    if (st != ETW_OK) {
        etw_profile_free(p);
        return st;
    }
    *out = p;
    return ETW_OK;
}

void etw_profile_free(etw_profile *p) {
    if (!p) return;
    etw_allocator a = p->alloc;
    etw_stacktree_free(&p->tree);
    etw_free(&a, p);
}

void etw_profile_stats_get(const etw_profile *p, etw_profile_stats *out) {
    if (!out) return;
    memset(out, 0, sizeof *out);
    if (!p) return;
    *out = p->stats;
    out->memory_bytes = sizeof *p + p->tree.bytes;
}
