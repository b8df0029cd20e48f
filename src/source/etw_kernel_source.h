/* etw_kernel_source.h - the schema source of classic kernel (MOF) events.
 *
 * NT Kernel Logger records (SYSTEM / COMPACT / PERFINFO headers) and the
 * classic EVENT_TRACE_HEADER classes PerfView names (KernelTraceControl's
 * ImageID, SystemConfigEx) are decoded from the class tables of
 * etw_kernel_tables.h. The source answers classic keys (event-class GUID,
 * event type, class version, pointer width) with schemas built from those
 * tables and inserted into the decoder's cache under ETW_SOURCE_MOF:
 *
 *   - a class version the tables know decodes with its layout;
 *   - a version newer than every known one decodes with the newest known
 *     layout and its trailing bytes as a last field "ExtraData" (hex), with
 *     one warning (status ETW_OK: nothing is lost) per (class, version)
 *     through the diagnostics callback;
 *   - a version older than every known one, an event type the family does
 *     not list and an unknown class GUID are not found (the event keeps the
 *     fallback name Group/Opcode(N) and its raw bytes);
 *   - pointer-sized fields follow the event's pointer width (WOW64 records
 *     in 64-bit traces, 32-bit kernels).
 *
 * Beside the schemas it keeps, per schema, where the payload names the
 * event's process and thread (pid_field / tid_field, kernel-mof.md section
 * 6), and a bounded thread -> process table fed by the events flagged
 * ETW_KID_RECORDS_THREAD (Thread/Start and Thread/DCStart, rundown
 * included): docs/kernel.md gives the rule per class and the bound.
 */
#ifndef ETW_KERNEL_SOURCE_H
#define ETW_KERNEL_SOURCE_H

#include <stddef.h>
#include <stdint.h>

#include "../schema/etw_source.h"
#include "etw_kernel_tables.h"
#include "etwdecode/etw_reader.h"

typedef struct etw_kernel_source etw_kernel_source;

/* on_diag (may be NULL) receives the newer-version warnings. */
etw_status etw_kernel_source_new(etw_kernel_source **out, const etw_allocator *alloc,
                                 etw_diag_fn on_diag, void *diag_ctx);
void etw_kernel_source_free(etw_kernel_source *k);

/* The source to register with a decoder (kind ETW_SOURCE_MOF, classic keys). */
etw_source etw_kernel_as_source(etw_kernel_source *k);

/* The family of an event-class GUID, or NULL (a linear scan: for misses and
 * names, not for the hot path). */
const etw_kernel_family *etw_kernel_family_find(const etw_guid *g);

/* The name an event of `fam` with event type `type` is shown under when no
 * layout decodes it: "Group/Name" for a listed type, else
 * "Group/Opcode(N)". Writes at most n bytes with the NUL; returns buf. */
const char *etw_kernel_event_name(const etw_kernel_family *fam, uint8_t type, char *buf, size_t n);

/* Every event after its schema was resolved: an event flagged
 * ETW_KID_RECORDS_THREAD records its thread's process. s may be any schema
 * (only MOF schemas built here are looked at). Allocates once, on the first
 * recording event (the table is fixed-size). */
void etw_kernel_observe(etw_kernel_source *k, const etw_event *ev, const etw_schema *s);

/* 1 when events of schema s feed the thread -> process table (so a decode
 * that starts mid-trace must see the earlier ones first). */
int etw_kernel_records_state(const etw_kernel_source *k, const etw_schema *s);

/* 1 when ev (a classic record) is of an event type flagged
 * ETW_KID_RECORDS_THREAD: it changes the thread -> process state, so a
 * decoder must see it in order (etw_decoder_learn_kind). Reads only what
 * etw_kernel_source_new set up. */
int etw_kernel_records_thread(const etw_kernel_source *k, const etw_event *ev);

/* The process and thread ev is about (kernel-mof.md section 6): the
 * header's pid/tid unless s says otherwise. Allocates nothing. */
void etw_kernel_ids(const etw_kernel_source *k, const etw_event *ev, const etw_schema *s,
                    uint32_t *pid, uint32_t *tid);

/* A one-line problem of ev's payload against its layout: shorter than the
 * layout's fixed part, or bytes where the class has no layout. NULL when
 * none. The text stays valid until the next call. */
const char *etw_kernel_payload_problem(etw_kernel_source *k, const etw_event *ev,
                                       const etw_schema *s, uint32_t trailing);

/* Bytes the thread -> process table holds (0 before the first thread). */
size_t etw_kernel_state_bytes(const etw_kernel_source *k);

/* Thread -> process table geometry: sets x ways entries of (tid, pid). */
#define ETW_KERNEL_THREAD_SETS 4096u
#define ETW_KERNEL_THREAD_WAYS 4u

#endif
