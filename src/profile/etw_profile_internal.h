/* etw_profile_internal.h - the etw_profile object, shared by the files of
 * src/profile/ (the tree, the attacher, the symbolizer, the writers). */
#ifndef ETW_PROFILE_INTERNAL_H
#define ETW_PROFILE_INTERNAL_H

#include "etwdecode/etw_profile.h"
#include "profile/etw_stackattach.h"
#include "profile/etw_stacktree.h"
#include "profile/etw_symbolize.h"

struct etw_profile {
    etw_allocator alloc;
    etw_profile_options opt;
    etw_stacktree tree;
    etw_attach att;
    etw_symbols sym;
    etw_profile_stats stats;
    int finished;
};

/* Report a problem through opt.on_diag (when set). */
void etw_profile_diag(etw_profile *p, etw_status st, const char *msg);

#endif
