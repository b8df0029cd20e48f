/* etw_label.c - an event's provider and event names as plain text (see
 * etw_label.h). The names come from etw_event_names_get, the function the
 * JSON writer uses too, and pid/tid and payload problems from the decoder
 * calls the writer makes, so that the two can never disagree. */
#include "etwdecode/etw_label.h"

#include <string.h>

#include "../common/etw_alloc.h"
#include "etw_label_internal.h"

void etw_label_unnamed(etw_decoder *d, const etw_event *ev, etw_label *out) {
    out->schema = NULL;
    out->error = NULL;
    out->status = ETW_OK;
    if (d && !ev->is_logfile_header)
        out->status = etw_decoder_resolve(d, ev, &out->schema, &out->error);
    if (out->status != ETW_OK) out->schema = NULL;
    else out->error = NULL;
    /* as the JSON writer: a payload problem is an error too (not for the
     * EventSource manifest chunks, whose envelope is shown instead) */
    if (out->schema && !etw_decoder_is_manifest_event(ev))
        out->error = etw_decoder_payload_problem(d, ev, out->schema, ETW_PAYLOAD_WALK);
    etw_decoder_event_ids(d, ev, out->schema, &out->pid, &out->tid);
    out->provider = out->event = "";
    out->provider_len = out->event_len = 0;
}

void etw_label_names(const etw_event *ev, etw_label *out) {
    etw_event_names_get(ev, out->schema, &out->names_);
    out->provider = out->names_.provider;
    out->provider_len = out->names_.provider_len;
    out->event = out->names_.event;
    out->event_len = out->names_.event_len;
}

etw_status etw_label_event(etw_decoder *d, const etw_event *ev, etw_label *out) {
    if (!ev || !out) return ETW_E_INVALID_ARG;
    etw_label_unnamed(d, ev, out);
    etw_label_names(ev, out);
    return ETW_OK;
}

struct etw_labeler {
    etw_allocator alloc;
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
    if (!lb) return ETW_E_INVALID_ARG;
    return etw_label_event(d, ev, out);
}
