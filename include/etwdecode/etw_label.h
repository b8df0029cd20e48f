/* etw_label.h - the names an event is shown under, as plain UTF-8 text.
 *
 * The JSON writer's "provider" and "event" keys (docs/json-output.md) are
 * computed from the event's schema, its TraceLogging traits, or the fallback
 * rules for events no source knows (kernel records "Windows Kernel" and
 * "Group/Opcode(N)", else the provider GUID and "EventID(N)").
 * etw_label_event() gives the same names without writing JSON and without
 * decoding the payload: one schema lookup per event (a cache hit after the
 * first event of a kind), so filters, summaries and other renderers can use
 * names cheaply.
 *
 *   etw_label l;
 *   etw_label_event(decoder, &ev, &l);   // l.provider, l.event, l.schema ...
 *
 * The strings of a label are borrowed from the schema or the event's bytes,
 * or held in the label itself (fallback names: so a label must not be
 * copied, only filled in place); they stay valid while the label and the
 * event are. They are not NUL-terminated (use the lengths). No state is
 * kept: calls on different decoders may run on different threads at once.
 *
 * etw_labeler is the same with an object around it (kept for the callers
 * that were written against it; it holds no state either).
 */
#ifndef ETWDECODE_ETW_LABEL_H
#define ETWDECODE_ETW_LABEL_H

#include <stddef.h>
#include <stdint.h>

#include "etw_decoder.h"
#include "etw_event.h"
#include "etw_schema.h"
#include "etw_status.h"
#include "etw_types.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct etw_label {
    const etw_schema *schema; /* NULL when no source knows the event (or the log-file header) */
    const char *error;        /* the JSON "error": why the schema could not be had, or what is
                               * wrong with the payload for it (a kernel payload shorter
                               * than its class); NULL when nothing. Valid until the
                               * decoder's next resolve */
    etw_status status;        /* the resolve status: ETW_OK, ETW_E_NOT_FOUND, ETW_E_CORRUPT... */
    const char *provider;     /* the JSON "provider" */
    size_t provider_len;
    const char *event;        /* the JSON "event" */
    size_t event_len;
    uint32_t pid, tid;        /* the JSON "pid"/"tid": the process and thread the event is
                               * about (etw_decoder_event_ids), ETW_NO_ID for none */
    etw_event_names names_;   /* where fallback names are built (etw_event_names_get) */
} etw_label;

/* Resolve ev through d (d may be NULL: no schema, fallback names only) and
 * fill *out. The log-file header is never resolved (its schema is NULL and
 * its names are "Windows Kernel"/"EventTrace"). ETW_OK (ETW_E_INVALID_ARG
 * for NULL pointers). A failed resolve is not a failure of this call: it
 * sets out->error and out->status. */
etw_status etw_label_event(etw_decoder *d, const etw_event *ev, etw_label *out);

typedef struct etw_labeler etw_labeler;
/* A labeler from alloc (NULL: the default allocator). ETW_OK; ETW_E_INVALID_ARG when
 * out is NULL; ETW_E_NOMEM when the allocator returns NULL (*out is then
 * left as it was). */
etw_status etw_labeler_new(etw_labeler **out, const etw_allocator *alloc);
/* lb may be NULL. */
void etw_labeler_free(etw_labeler *lb);
/* etw_label_event(d, ev, out), and its status; ETW_E_INVALID_ARG when lb is
 * NULL. It allocates nothing: it never returns ETW_E_NOMEM. */
etw_status etw_labeler_label(etw_labeler *lb, etw_decoder *d, const etw_event *ev, etw_label *out);

#ifdef __cplusplus
}
#endif
#endif
