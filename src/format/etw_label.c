/* etw_label.c - an event's provider and event names as plain text (see
 * etw_label.h). The names come from etw_event_names_get, the function the
 * JSON writer uses too, so that the two can never disagree. */
#include "etwdecode/etw_label.h"

#include <string.h>

#include "../common/etw_alloc.h"

struct etw_labeler {
    etw_allocator alloc;
    etw_event_names names; /* the last label's names (fallbacks are built in it) */
};

etw_status etw_labeler_new(etw_labeler **out, const etw_allocator *alloc) {
    if (!out) return ETW_E_INVALID_ARG;
    etw_allocator a = etw_allocator_resolve(alloc);
    etw_labeler *lb = etw_calloc(&a, 1, sizeof *lb);
    if (!lb) return ETW_E_NOMEM;
    lb->alloc = a;
    *out = lb;
    return ETW_OK;
}

void etw_labeler_free(etw_labeler *lb) {
    if (!lb) return;
    etw_allocator a = lb->alloc;
    etw_free(&a, lb);
}

etw_status etw_labeler_label(etw_labeler *lb, etw_decoder *d, const etw_event *ev, etw_label *out) {
    if (!lb || !ev || !out) return ETW_E_INVALID_ARG;
    memset(out, 0, sizeof *out);
    out->status = ETW_OK;
    if (d && !ev->is_logfile_header)
        out->status = etw_decoder_resolve(d, ev, &out->schema, &out->error);
    if (out->status != ETW_OK) out->schema = NULL;
    etw_event_names_get(ev, out->schema, &lb->names);
    out->provider = lb->names.provider;
    out->provider_len = lb->names.provider_len;
    out->event = lb->names.event;
    out->event_len = lb->names.event_len;
    return ETW_OK;
}
