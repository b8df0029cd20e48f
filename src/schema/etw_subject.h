/* etw_subject.h - payload subjects: manifest events that name the process
 * they are about in a payload field rather than in their header.
 *
 * Some providers log from a DPC or a system thread on behalf of another
 * process: Microsoft-Windows-Kernel-Network writes each TCP/UDP event with
 * the header's pid of whatever ran (often 0 or 4) and the owning process in
 * its payload's PID. The kernel (MOF) form of the same events is handled by
 * the kernel class tables (etw_kernel_tables.h, pid_field); this is the rule
 * for descriptor-keyed schemas (manifest, built-in manifest, EventSource,
 * merged TRACE_EVENT_INFO), whichever source described the event.
 *
 * The cache resolves the rule once per schema, when the schema enters it
 * (etw_schema_subject), and stores the field's index and offset in the
 * schema (subject_prop, subject_off, subject_flags); per event the decoder
 * reads one integer (etw_subject_ids): no lookup, no allocation. The table
 * and where each fact comes from are in etw_subject.c and docs/kernel.md
 * ("Payload subjects of manifest providers").
 */
#ifndef ETW_SUBJECT_H
#define ETW_SUBJECT_H

#include <stdint.h>

#include "etwdecode/etw_event.h"
#include "etwdecode/etw_schema.h"

/* Set s->subject_* from the table: the top-level property of s that names
 * its process, when s's provider and event id are listed and s has that
 * property as a top-level 32-bit integer; ETW_SUBJECT_NONE otherwise. */
void etw_schema_subject(etw_schema *s);

/* ev's pid and tid by s's subject rule: *pid and *tid start as the header's;
 * when s has a subject property the payload holds, *pid is its value (and
 * *tid as the rule's flags say). Reads within ev's payload only; allocates
 * nothing. */
void etw_subject_ids(const etw_schema *s, const etw_event *ev, uint32_t *pid, uint32_t *tid);

#endif
