/* etw_label.c - an event's provider and event names as plain text (see
 * etw_label.h). Fallback names come from the JSON writer's own rules
 * (etw_event_names.c) so that the two can never disagree. */
#include "etwdecode/etw_label.h"

#include <string.h>

#include "../common/etw_alloc.h"
#include "etw_event_names.h"
#include "etw_text.h"

struct etw_labeler {
    etw_allocator alloc;
    etw_text provider; /* fallback names, JSON-quoted as etw_event_names writes them */
    etw_text event;
};

etw_status etw_labeler_new(etw_labeler **out, const etw_allocator *alloc) {
    if (!out) return ETW_E_INVALID_ARG;
    etw_allocator a = etw_allocator_resolve(alloc);
    etw_labeler *lb = etw_calloc(&a, 1, sizeof *lb);
    if (!lb) return ETW_E_NOMEM;
    lb->alloc = a;
    etw_text_init(&lb->provider, &a);
    etw_text_init(&lb->event, &a);
    *out = lb;
    return ETW_OK;
}

void etw_labeler_free(etw_labeler *lb) {
    if (!lb) return;
    etw_allocator a = lb->alloc;
    etw_text_free(&lb->provider);
    etw_text_free(&lb->event);
    etw_free(&a, lb);
}

/* The fallback writers produce a JSON string; names they make are plain
 * ASCII (GUIDs, group and opcode names, numbers), so the text between the
 * quotes is the name itself. */
static etw_status unquote(const etw_text *t, const char **s, size_t *n) {
    etw_status st = etw_text_status(t);
    if (st != ETW_OK) return st;
    if (t->len >= 2 && t->data[0] == '"' && t->data[t->len - 1] == '"') {
        *s = t->data + 1;
        *n = t->len - 2;
    } else {
        *s = t->data ? t->data : "";
        *n = t->len;
    }
    return ETW_OK;
}

etw_status etw_labeler_label(etw_labeler *lb, etw_decoder *d, const etw_event *ev, etw_label *out) {
    if (!lb || !ev || !out) return ETW_E_INVALID_ARG;
    memset(out, 0, sizeof *out);
    out->status = ETW_OK;
    if (d && !ev->is_logfile_header)
        out->status = etw_decoder_resolve(d, ev, &out->schema, &out->error);
    if (out->status != ETW_OK) out->schema = NULL;
    if (etw_decoder_provider_name(ev, out->schema, &out->provider, &out->provider_len) != ETW_OK) {
        etw_text_clear(&lb->provider);
        etw_names_provider(&lb->provider, ev);
        etw_status st = unquote(&lb->provider, &out->provider, &out->provider_len);
        if (st != ETW_OK) return st;
    }
    if (out->schema && out->schema->event_name) {
        out->event = out->schema->event_name;
        out->event_len = strlen(out->event);
    } else {
        etw_text_clear(&lb->event);
        etw_names_event(&lb->event, ev);
        etw_status st = unquote(&lb->event, &out->event, &out->event_len);
        if (st != ETW_OK) return st;
    }
    return ETW_OK;
}
