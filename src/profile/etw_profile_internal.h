/* etw_profile_internal.h - the etw_profile object, shared by the files of
 * src/profile/ (the tree, the attacher, the symbolizer, the writers). */
#ifndef ETW_PROFILE_INTERNAL_H
#define ETW_PROFILE_INTERNAL_H

#include "etwdecode/etw_profile.h"
#include "profile/etw_stacktree.h"

struct etw_profile {
    etw_allocator alloc;
    etw_profile_options opt;
    etw_stacktree tree;
    etw_profile_stats stats;
    int finished;
};

#endif
