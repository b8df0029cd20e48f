/* etw_event_names.h - the provider and event names of docs/json-output.md
 * (the public entry point is etw_event_names_get, etw_decoder.h). */
#ifndef ETW_EVENT_NAMES_H
#define ETW_EVENT_NAMES_H

#include "../format/etw_text.h"
#include "etwdecode/etw_decoder.h"
#include "etwdecode/etw_event.h"

/* PerfView's provider name for NT kernel logger events. */
#define ETW_KERNEL_PROVIDER_NAME "Windows Kernel"
/* PerfView's event name for the log-file header record. */
#define ETW_LOGFILE_EVENT_NAME "EventTrace"

/* The fallback names of etw_event_names_get (for an event without a
 * schema), appended as JSON strings. */
void etw_names_provider(etw_text *t, const etw_event *ev);
void etw_names_event(etw_text *t, const etw_event *ev);

#endif
