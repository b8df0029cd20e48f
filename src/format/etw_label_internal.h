/* etw_label_internal.h - etw_label_event in its two halves, for the
 * library's own callers that need the names only sometimes (etw_stats_take). */
#ifndef ETW_LABEL_INTERNAL_H
#define ETW_LABEL_INTERNAL_H

#include "etwdecode/etw_label.h"

/* Schema, error, status, pid and tid, as etw_label_event; the names "". */
void etw_label_unnamed(etw_decoder *d, const etw_event *ev, etw_label *out);
/* Then the provider and event names of out's schema and ev. */
void etw_label_names(const etw_event *ev, etw_label *out);

#endif
