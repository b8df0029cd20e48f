/* etwdecode.h - the whole public API of libetwdecode.
 *
 * libetwdecode decodes Windows ETW traces (.etl files) on any OS without
 * tdh.dll. The data flows one way:
 *
 *   etw_reader   (etw_reader.h)  file -> buffers -> records -> etw_event,
 *                                merged across processors in timestamp order
 *   etw_multi    (etw_multi.h)   several files merged into one timeline
 *   etw_event    (etw_event.h)   one normalized record, borrowed bytes
 *   etw_decoder  (etw_decoder.h) which schema decodes an event: one cache,
 *                                every schema source (etw_schema.h)
 *   etw_manifest_catalog (etw_manifest_catalog.h) which manifest file of
 *                                a folder declares which provider: lazy
 *                                loading of manifest folders
 *   etw_decode   (etw_decode.h)  pull typed values from a payload
 *   etw_traits   (etw_traits.h)  provider traits: parse and build
 *   etw_json     (etw_json.h)    an event as one JSON line (the contract in
 *                                docs/json-output.md)
 *   etw_label    (etw_label.h)   an event's provider and event names as text
 *   etw_render   (etw_render.h)  events as JSON, text or CSV
 *   etw_stats    (etw_stats.h)   the summary etwdump --stats prints
 *   etw_report   (etw_report.h)  processes, gc, disk, files, network, cpu tables
 *   etw_schemas  (etw_schemas.h) the schemas a trace uses, as JSON
 *   etw_pdb      (etw_pdb.h)     function names from a PDB; a PDB in a local
 *                                symbol store
 *   etw_filter   (etw_filter.h)  select events (provider, event, id, level,
 *                                keywords, pid, tid, time, errors)
 *
 * Every call returns an etw_status (etw_status.h); nothing keeps global
 * state; objects take an optional etw_allocator (etw_types.h).
 */
#ifndef ETWDECODE_H
#define ETWDECODE_H

#include "etw_decode.h"
#include "etw_decoder.h"
#include "etw_event.h"
#include "etw_filter.h"
#include "etw_json.h"
#include "etw_label.h"
#include "etw_manifest_catalog.h"
#include "etw_multi.h"
#include "etw_sniff.h"
#include "etw_pdb.h"
#include "etw_perfetto.h"
#include "etw_pipeline.h"
#include "etw_profile.h"
#include "etw_report.h"
#include "etw_reader.h"
#include "etw_render.h"
#include "etw_schema.h"
#include "etw_schemas.h"
#include "etw_stats.h"
#include "etw_status.h"
#include "etw_traits.h"
#include "etw_types.h"
#include "etw_windows.h"
#include "etw_wpp.h"

#ifdef __cplusplus
extern "C" {
#endif

#define ETWDECODE_VERSION_MAJOR 0
#define ETWDECODE_VERSION_MINOR 1
#define ETWDECODE_VERSION_PATCH 0

/* "0.1.0" */
const char *etw_version_string(void);

#ifdef __cplusplus
}
#endif
#endif
