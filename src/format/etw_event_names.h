/* etw_event_names.h - provider and event names for events that no schema
 * source has named (yet): the rules of docs/json-output.md. */
#ifndef ETW_EVENT_NAMES_H
#define ETW_EVENT_NAMES_H

#include "../format/etw_text.h"
#include "etwdecode/etw_event.h"

/* PerfView's provider name for NT kernel logger events. */
#define ETW_KERNEL_PROVIDER_NAME "Windows Kernel"
/* PerfView's event name for the log-file header record. */
#define ETW_LOGFILE_EVENT_NAME "EventTrace"

/* Append the provider name as a JSON string. */
void etw_names_provider(etw_text *t, const etw_event *ev);
/* Append the event name as a JSON string. */
void etw_names_event(etw_text *t, const etw_event *ev);

#endif
