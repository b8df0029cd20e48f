/* etw_label.h - the names an event is shown under, as plain UTF-8 text.
 *
 * The JSON writer's "provider" and "event" keys (docs/json-output.md) are
 * computed from the event's schema, its TraceLogging traits, or the fallback
 * rules for events no source knows (kernel records "Windows Kernel" and
 * "Group/Opcode(N)", else the provider GUID and "EventID(N)"). A labeler
 * gives the same names without writing JSON and without decoding the
 * payload: one schema lookup per event (a cache hit after the first event of
 * a kind), so filters, summaries and other renderers can use names cheaply.
 *
 *   etw_labeler *lb;
 *   etw_labeler_new(&lb, NULL);
 *   etw_label l;
 *   etw_labeler_label(lb, decoder, &ev, &l);   // l.provider, l.event ...
 *   etw_labeler_free(lb);
 *
 * The strings of a label are borrowed: from the schema, the event's bytes,
 * or the labeler's own buffer; they stay valid until the next call on the
 * labeler or the next etw_reader_next() of the event's reader. They are not
 * NUL-terminated (use the lengths). A labeler is single-threaded.
 */
#ifndef ETWDECODE_ETW_LABEL_H
#define ETWDECODE_ETW_LABEL_H

#include <stddef.h>

#include "etw_decoder.h"
#include "etw_event.h"
#include "etw_schema.h"
#include "etw_status.h"
#include "etw_types.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct etw_labeler etw_labeler;

typedef struct etw_label {
    const etw_schema *schema; /* NULL when no source knows the event (or the log-file header) */
    const char *error;        /* why the schema could not be had (the JSON "error"), or NULL */
    etw_status status;        /* the resolve status: ETW_OK, ETW_E_NOT_FOUND, ETW_E_CORRUPT... */
    const char *provider;     /* the JSON "provider" */
    size_t provider_len;
    const char *event;        /* the JSON "event" */
    size_t event_len;
} etw_label;

etw_status etw_labeler_new(etw_labeler **out, const etw_allocator *alloc);
void etw_labeler_free(etw_labeler *lb);

/* Resolve ev through d (d may be NULL: no schema, fallback names only) and
 * fill *out. The log-file header is never resolved (its schema is NULL and
 * its names are "Windows Kernel"/"EventTrace"). ETW_OK, or ETW_E_NOMEM when
 * a fallback name could not be formatted. A failed resolve is not a failure
 * of this call: it sets out->error and out->status. */
etw_status etw_labeler_label(etw_labeler *lb, etw_decoder *d, const etw_event *ev, etw_label *out);

#ifdef __cplusplus
}
#endif
#endif
