/* etw_decoder.h - find the schema of an event and decode its payload.
 *
 * An etw_decoder owns the schema cache (one arena of schemas, one index map
 * per source and pointer width) and the schema sources. For each event it
 * picks the source by the event's shape, following these rules:
 *
 *   1. an event with TraceLogging metadata (extended item EVENT_SCHEMA_TL)
 *      takes the TraceLogging path: the key is the full metadata bytes, so
 *      two events that share a name but differ in fields get two schemas;
 *   2. an event with a classic header (EVENT_TRACE_HEADER, kernel SYSTEM /
 *      PERFINFO records; EVENT_HEADER_FLAG_CLASSIC_HEADER) never takes the
 *      manifest path: its key is (event-class GUID, opcode, version);
 *   3. a WPP (MESSAGE) record is keyed by (message GUID, message number)
 *      and found in the TMF messages given to the decoder (etw_wpp.h), in a
 *      map of its own: a WPP schema never reaches the manifest maps;
 *   4. every other event is keyed by (provider GUID, id, version), looked up
 *      in the maps of the manifest-like sources in precedence order (user
 *      manifests, then EventSource manifests from the trace, then metadata
 *      merged into the trace, then the manifests shipped with the library:
 *      the CLR's, unless no_default_manifests; docs/schema-sources.md).
 *
 * A lookup hashes its key once. A key no source knows is remembered in a
 * bounded negative cache, which is cleared whenever a source learns
 * something, so a manifest added later is found on the next event.
 *
 * A decoder is single-threaded; schemas it hands out stay valid until
 * etw_decoder_free().
 */
#ifndef ETWDECODE_ETW_DECODER_H
#define ETWDECODE_ETW_DECODER_H

#include <stddef.h>
#include <stdint.h>

#include "etw_decode.h"
#include "etw_event.h"
#include "etw_manifest_catalog.h"
#include "etw_reader.h"
#include "etw_schema.h"
#include "etw_status.h"
#include "etw_types.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct etw_decoder etw_decoder;

typedef struct etw_decoder_options {
    const etw_allocator *allocator; /* NULL: malloc/free */
    /* Problems met while learning schemas: a malformed or replaced manifest
     * (the message names the file, line and reason), an EventSource
     * manifest whose chunks are missing, duplicated or never complete, a
     * damaged merged-metadata record. NULL: only counted. */
    etw_diag_fn on_diag;
    void *diag_ctx;
    /* 1: do not learn .NET EventSource manifests from the trace. */
    int no_eventsource;
    /* The language of the message tables PE files (WEVT_TEMPLATE) give names
     * and messages in, e.g. "de-DE": the file's own table in that language,
     * else <dir>/<lang>/<file>.mui. NULL: en-US. */
    const char *lang;
    /* 1: do not use the manifests shipped with the library (the CLR's
     * ClrEtwAll.man: Microsoft-Windows-DotNETRuntime, -Rundown, -Stress,
     * -Private, Microsoft-DotNETRuntimeMonoProfiler). By default they decode
     * those providers' events that no other source describes, below user
     * manifests, EventSource manifests and metadata merged into the trace;
     * the XML is parsed the first time such an event is met. */
    int no_default_manifests;
    /* Problems and warnings of the user's manifests (etw_decoder_add_manifest*,
     * and the files of a catalog, which may load in the middle of a run):
     * when set they go here instead of on_diag. Called on the thread that
     * uses the decoder (etw_pipeline passes it to every worker's decoder
     * unchanged, so it may be called from several threads at once). */
    etw_diag_fn on_manifest_diag;
    void *manifest_diag_ctx;
    /* Memory budget of the TraceLogging schema cache, in bytes. Every
     * TraceLogging event carries its schema, so a trace can bring a new one
     * with each event; the cache keeps them in two generations and drops the
     * older one whole when the newer one holds half the budget (a dropped
     * schema is parsed again from its next event). 0: the default
     * ETW_DECODER_TL_CACHE_DEFAULT (32 MiB); at least ETW_DECODER_TL_CACHE_MIN
     * (1 MiB), else etw_decoder_new fails with ETW_E_INVALID_ARG. Manifest,
     * EventSource, metadata and MOF schemas are not counted: they come from
     * files or from records each decoded once. */
    size_t tl_cache_bytes;
    /* The built-in manifests parsed once for several decoders (see
     * etw_builtins_new): decoders given the same object, on one thread or
     * many, share one parse. NULL: this decoder parses them itself, the
     * first time it needs them. Must outlive the decoder. Ignored with
     * no_default_manifests. */
    struct etw_builtins *builtins;
} etw_decoder_options;

/* The manifests shipped with the library (no_default_manifests above),
 * parsed at most once for every decoder given this object, each the first
 * time one of them needs it; safe to share between decoders on several
 * threads (a lock covers the parse, which every other reader waits for;
 * reading the parsed manifests takes no lock). The XML of the CLR's
 * manifest costs about 55 million instructions to parse: a tool that makes
 * several decoders for one input (etw_pipeline's threads, a second pass)
 * pays it once. etw_pipeline makes one for its decoders when its options
 * give none. */
typedef struct etw_builtins etw_builtins;
etw_status etw_builtins_new(etw_builtins **out, const etw_allocator *allocator);
/* Free b once no decoder that was given it is used any more (their
 * built-in schemas point into it). NULL is a no-op. */
void etw_builtins_free(etw_builtins *b);

#define ETW_DECODER_TL_CACHE_DEFAULT ((size_t)32 << 20)
#define ETW_DECODER_TL_CACHE_MIN ((size_t)1 << 20)

typedef struct etw_decoder_stats {
    uint64_t lookups;        /* events resolved */
    uint64_t hits;           /* found in the cache */
    uint64_t misses;         /* not in the cache: a source was asked */
    uint64_t negative_hits;  /* answered by the negative cache */
    uint64_t errors;         /* events whose schema could not be had */
    uint32_t schemas;        /* schema ids handed out */
    uint64_t tl_evicted;     /* TraceLogging schemas dropped to keep tl_cache_bytes.
                              * Their names and properties are freed with them:
                              * a cache keyed by the addresses of schema strings
                              * must be emptied whenever this count moves. */
    uint64_t problems;       /* diagnostics reported through on_diag for data
                              * that was lost (status other than ETW_OK) */
    uint64_t warnings;       /* diagnostics with status ETW_OK: reported, nothing
                              * lost (a provider replaced by a later manifest,
                              * a newer kernel class version) */
    uint32_t manifest_providers;    /* providers loaded from user manifests */
    uint32_t eventsource_manifests; /* EventSource manifests learned from the trace */
    uint32_t metadata_events;       /* TRACE_EVENT_INFO schemas merged into the trace */
    uint32_t builtin_providers;     /* providers parsed from the built-in manifests,
                                     * each when an event of it is first met (0
                                     * until then) */
    uint64_t manifest_problems;     /* the part of `problems` that came from the user's
                                     * manifests (a malformed or unreadable file): not
                                     * trace data */
} etw_decoder_stats;

etw_status etw_decoder_new(etw_decoder **out, const etw_decoder_options *opt);
void etw_decoder_free(etw_decoder *d);

/* Load an instrumentation manifest file or a Windows component manifest
 * (<assembly> with <instrumentation><events>: every provider in it,
 * wherever it sits), or every *.man / *.xml file of a directory and its
 * subdirectories. A file or directory that yields no provider is reported
 * (naming it and why) and is not an error. User manifests take precedence over every schema found in the
 * trace; a provider loaded twice keeps the later file (with a warning). May
 * be called at any time: events after the call see the new schemas. A
 * malformed file loads nothing and returns ETW_E_CORRUPT (reported with its
 * line); ETW_E_IO when the path cannot be read; ETW_E_LIMIT (reported, nothing
 * loaded) for a file over 64 MiB, elements nested more than 64 deep, an
 * attribute value over 1 MiB, or a load needing more than 64 MiB of memory
 * (docs/limits.md; the same for etw_decoder_add_manifest_xml and the files
 * of a catalog). *providers (may be NULL)
 * receives the number of providers loaded by this call. A directory is
 * parsed whole, now; etw_decoder_add_manifest_catalog loads a folder lazily.
 * Problems of the user's manifests go to on_manifest_diag when it is set. */
etw_status etw_decoder_add_manifest(etw_decoder *d, const char *path, uint32_t *providers);

/* A manifest path may also be a PE file (DLL, EXE, SYS) whose WEVT_TEMPLATE
 * resource is read with its message table (the file's own, else
 * <dir>/<lang>/<file>.mui), or a bare WEVT_TEMPLATE blob (CRIM). */

/* Providers of a Windows image (etw_windows.h): each loads, from the file
 * the index names, the first time an event of it needs a schema, into the
 * user manifests without replacing a provider they hold. The index must
 * outlive the decoder; at most ETW_DECODER_MAX_WINDOWS. */
#define ETW_DECODER_MAX_WINDOWS 8
struct etw_windows_index;
etw_status etw_decoder_add_windows(etw_decoder *d, const struct etw_windows_index *x);

/* WPP trace message formats (etw_wpp.h). A decoder looks a MESSAGE record
 * up in the TMF text added to it (etw_decoder_add_tmf, _add_tmf_text: the
 * first definition of a (GUID, number) wins), then in the borrowed sets in
 * the order they were added (read-only: one set may serve any number of
 * decoders, one per thread; it must outlive them; at most
 * ETW_DECODER_MAX_WPP). A TMF that breaks the grammar adds nothing: its
 * error (file:line: reason) goes to on_manifest_diag (else on_diag) and is
 * returned. A record whose message no TMF describes keeps the error "no
 * schema: WPP message N needs TMF data". */
#define ETW_DECODER_MAX_WPP 8
struct etw_wpp_set;
etw_status etw_decoder_add_wpp_set(etw_decoder *d, const struct etw_wpp_set *s);
/* A TMF file or a folder of them (etw_wpp_add_tmf_path). */
etw_status etw_decoder_add_tmf(etw_decoder *d, const char *path, uint32_t *added);
/* TMF text from memory (e.g. a PDB's S_ANNOTATION records); origin names it
 * in error messages. */
etw_status etw_decoder_add_tmf_text(etw_decoder *d, const char *text, size_t len, const char *origin);

/* The same from XML text in memory; origin names it in messages. */
etw_status etw_decoder_add_manifest_xml(etw_decoder *d, const char *xml, size_t len,
                                        const char *origin, uint32_t *providers);

/* Use a catalog of manifest files (etw_manifest_catalog.h) as user
 * manifests, loading each file only when the trace has an event of a
 * provider it declares (the first lookup of that provider loads it, in the
 * middle of the run: its problems are reported then). Files named directly
 * in the catalog are loaded now. The catalog is borrowed, read-only: build
 * it once and give it to any number of decoders (one per thread); it must
 * outlive them. One catalog per decoder (ETW_E_INVALID_ARG for a second:
 * put several paths into one catalog instead).
 *
 * Precedence is that of loading every file in order, the later file
 * winning: manifests added before this call rank before the catalog (a
 * provider they loaded that the catalog declares is loaded from the catalog
 * now), manifests added after it rank after (before loading them, the
 * catalog files declaring the same providers are loaded, so the later
 * manifest replaces them). Returns the first failure of the files loaded
 * now (ETW_E_CORRUPT, ETW_E_IO), else ETW_OK. */
etw_status etw_decoder_add_manifest_catalog(etw_decoder *d, const etw_manifest_catalog *cat);

/* Learn the schemas merged into the trace (KernelTraceControl MetaData
 * EventInfo / EventMapInfo records). They are written after the first event
 * they describe, so this reads the whole trace once (without decoding
 * payloads) and rewinds r to its first event. */
etw_status etw_decoder_prescan(etw_decoder *d, etw_reader *r);

/* What ev teaches the decoder, for an event whose schema s came from
 * etw_decoder_resolve (s may be NULL): ETW_LEARN_TRACE for a merged-metadata
 * record (EventInfo / EventMapInfo: its schemas hold for the whole trace, as
 * etw_decoder_prescan() learns them), ETW_LEARN_LATER for an event that
 * changes how later events decode (an EventSource manifest chunk; a kernel
 * event that records a thread's process), 0 for the others. */
#define ETW_LEARN_TRACE 1
#define ETW_LEARN_LATER 2
int etw_decoder_learns(const etw_decoder *d, const etw_event *ev, const etw_schema *s);

/* Decoder state that events of the trace change, for readers that do not
 * decode every event in order on one decoder (etw_pipeline.h):
 *   ETW_LEARN_AHEAD     a MetaData record (TRACE_EVENT_INFO / map merged
 *                       into the trace). It sorts next to the first event it
 *                       describes - just before or just after it - so it must
 *                       be learned a little ahead: learning it earlier never
 *                       changes a result (that is what etw_decoder_prescan
 *                       does for the whole file).
 *   ETW_LEARN_IN_ORDER  state that holds from this event on and not before
 *                       (an EventSource manifest chunk: a newer manifest
 *                       replaces the old one for the events after it). Every
 *                       decoder must see these events, each once, in order.
 *   ETW_LEARN_NONE      everything else: decoding the event changes nothing
 *                       another event's output depends on.
 * A source that adds state built from earlier events must make its events
 * ETW_LEARN_IN_ORDER here, or the parallel pipeline's output will differ
 * from one decoder's. */
typedef enum etw_learn_kind {
    ETW_LEARN_NONE = 0,
    ETW_LEARN_AHEAD = 1,
    ETW_LEARN_IN_ORDER = 2
} etw_learn_kind;

etw_learn_kind etw_decoder_learn_kind(const etw_decoder *d, const etw_event *ev);

/* Learn from ev as a whole-file decode would: a merged-metadata record as
 * etw_decoder_prescan() does; any other event as etw_decoder_resolve() does
 * (manifest chunks and kernel thread records, in trace order). Used to
 * decode part of a trace (etw_reader_set_range()): feed it the events
 * etw_decoder_learns() flagged in a whole-file pass. */
etw_status etw_decoder_learn(etw_decoder *d, const etw_event *ev);

/* Learn a merged-metadata record (ETW_LEARN_AHEAD) as soon as it is found,
 * wherever that is (etw_reader_watch shows records as their buffers load):
 * as etw_decoder_learn, and *stale (may be NULL) says whether the results
 * already handed out may differ from a prescanned decoder's: 1 when the
 * record adds an event schema whose key (provider or class, id or opcode,
 * version) this decoder has already answered from a source the record
 * outranks (a built-in manifest, the kernel tables) or from none - or a
 * key of the same hash (65,536 bits, never cleared: it errs towards 1).
 * Then the caller starts over with etw_decoder_prescan. Map records never
 * set it: a map changes the values a schema renders, not which schema
 * answers nor the payload's layout - a caller that renders values learns
 * maps with etw_decoder_prescan or the pipeline's look-ahead. Any other
 * event: etw_decoder_learn, *stale 0. */
etw_status etw_decoder_learn_early(etw_decoder *d, const etw_event *ev, int *stale);

/* End of the trace: report EventSource manifests that never completed. */
void etw_decoder_finish(etw_decoder *d);

/* 1 when ev is a .NET EventSource manifest chunk (id 0xFFFE, task 0xFFFE,
 * opcode 0xFE): it is shown as a "ManifestData" event. */
int etw_decoder_is_manifest_event(const etw_event *ev);

/* The schema of ev. Calling it again for the same event is harmless: an
 * EventSource manifest chunk is recognized by its place in the trace
 * (buffer_file_offset, record_offset) and counted once, so events built by
 * hand must give each chunk its own place. ETW_OK and *out set; ETW_E_NOT_FOUND when no source
 * knows the event; ETW_E_CORRUPT / ETW_E_LIMIT / ETW_E_TRUNCATED when its
 * metadata is damaged. On failure *why (if not NULL) receives a one-line
 * reason, valid until the next call, in the contract's wording ("no schema:
 * manifest not found for provider …, id 1, version 0"). */
etw_status etw_decoder_resolve(etw_decoder *d, const etw_event *ev,
                               const etw_schema **out, const char **why);

/* Start decoding ev's payload with s (from etw_decoder_resolve): the
 * decoder lends the cursor its count/length scratch. */
etw_status etw_decoder_begin(etw_decoder *d, const etw_event *ev,
                             const etw_schema *s, etw_decode_cursor *c);

/* The number the top-level scalar field `name` of ev holds, ev decoded
 * with s (from etw_decoder_resolve; NULL: ETW_E_NOT_FOUND). Integer
 * in-types (1, 2, 4 or 8 bytes) give their value: INT8..INT64 signed, the
 * others (unsigned, pointers, hex, booleans, characters) unsigned, exact up
 * to 2^53; FLOAT and DOUBLE give theirs. This is what etwdump --weight and
 * Python's profile(weight=) add up.
 * ETW_OK and *out set; ETW_E_NOT_FOUND when the payload has no top-level
 * field of that name (the first of that name is the one read);
 * ETW_E_UNSUPPORTED when it is not a number (a string, a struct or array,
 * NaN); ETW_E_INVALID_ARG for a NULL d, ev, name or out. *out is left
 * alone on failure. */
etw_status etw_decoder_field_number(etw_decoder *d, const etw_event *ev, const etw_schema *s,
                                    const char *name, double *out);

/* The provider name of ev: a TraceLogging event's traits name, else the
 * schema's provider name. ETW_E_NOT_FOUND when neither exists. The name is
 * borrowed (from the event or the schema) and not NUL-terminated. */
etw_status etw_decoder_provider_name(const etw_event *ev, const etw_schema *s,
                                     const char **name, size_t *len);

/* The process and thread ev is about, for an event whose schema s came from
 * etw_decoder_resolve (s may be NULL). Most events: the header's pid/tid.
 * Kernel (MOF) events as TraceEvent attributes them: the payload's
 * ProcessId for Process events, its ThreadId for PerfInfo/Sample, IssuingThreadId
 * for DiskIO, StackProcess/StackThread for StackWalk, ..., and the process of
 * a thread from the Thread/Start and Thread/DCStart events resolved before
 * (a bounded table: docs/kernel.md). Manifest events of providers that log
 * on another process's behalf, whatever source described them: the
 * payload's process (Microsoft-Windows-Kernel-Network: PID; the tid is
 * ETW_NO_ID when that is not the header's process; the schema's subject_*
 * members, docs/kernel.md "Payload subjects of manifest providers").
 * ETW_NO_ID where none is known. Allocates nothing. */
void etw_decoder_event_ids(const etw_decoder *d, const etw_event *ev, const etw_schema *s,
                           uint32_t *pid, uint32_t *tid);

/* The image name of process pid (e.g. "powershell.exe") when ev happens:
 * 1 and *name (UTF-8, not NUL-terminated, borrowed from the decoder: valid
 * until its next resolve), 0 when unknown. Learned in trace order from the
 * kernel's Process Start, DCStart and DCEnd events (ImageFileName) and
 * Microsoft-Windows-Kernel-Process ProcessStart and ProcessRundown (the file
 * name of ImageName); a process's Process/Stop (End) or ProcessStop ends it (that
 * event still has it; a pid reused later gets its new name). A bounded
 * table (docs/kernel.md, "Process names"); names are cut at
 * 57 bytes. pid is the one etw_decoder_event_ids gives; ev and s (may be
 * NULL) tell an End event. Allocates nothing. */
int etw_decoder_process_name(const etw_decoder *d, const etw_event *ev, const etw_schema *s, uint32_t pid,
                             const char **name, size_t *len);

/* The drive form of an NT device path ("\Device\HarddiskVolume2\x.dll"):
 * 1 when a kernel SystemConfig VolumeMapping event seen so far maps a
 * prefix of path to a drive ("C:\"): the drive path is *dos (*dos_len
 * bytes, borrowed) followed by path + *nt_len. 0 otherwise. Allocates
 * nothing. */
int etw_decoder_drive_path(const etw_decoder *d, const char *path, size_t len, const char **dos,
                           size_t *dos_len, size_t *nt_len);

/* The drive form of a top-level string field v (from a cursor on an event
 * of this decoder) holding an NT path, as the JSON shows it next to the
 * field (key NAME_drive, docs/json-output.md): 1 and buf[0..*len) (UTF-8,
 * not NUL-terminated) when a VolumeMapping maps its prefix to a drive; 0
 * for other values, strings of ETW_DRIVE_PATH_MAX bytes and more, or a
 * result longer than cap. Allocates nothing. */
#define ETW_DRIVE_PATH_MAX 4096
int etw_decoder_value_drive_path(const etw_decoder *d, const etw_value *v, char *buf, size_t cap, size_t *len);

/* What is wrong with ev's payload for its schema s, in one line, or NULL:
 * `trailing` bytes (what etw_decode_remaining gave after a full walk; 0 when
 * not walked) after the last field, for every schema source ("N payload
 * bytes after the last field of NAME vV": the MOF class, else the event
 * name, and the version); for kernel (MOF) events also a payload shorter
 * than its class's fixed part, or bytes of an event type whose class has no
 * layout. The fields still decode as far as they go. The text stays valid
 * until the next call. */
const char *etw_decoder_payload_problem(etw_decoder *d, const etw_event *ev, const etw_schema *s,
                                        uint32_t trailing);
/* `trailing` for a caller that did not walk the payload: the decoder walks
 * it (allocates nothing). */
#define ETW_PAYLOAD_WALK UINT32_MAX

/* Bytes of per-trace state the decoder keeps besides its schemas (the
 * kernel thread -> process table, the process name table, the volume
 * mappings: each fixed once allocated, 0 until the trace has such an
 * event). */
size_t etw_decoder_state_bytes(const etw_decoder *d);

/* The names of ev as every output shows them (docs/json-output.md, keys
 * "provider" and "event"): the JSON writer uses this, and so should any list
 * of providers or events a program prints, so that the names agree. s is
 * ev's schema from etw_decoder_resolve, or NULL when there is none; without
 * a schema the contract's fallbacks are used ("Windows Kernel" and
 * Group/Opcode(N) for kernel records, the GUID and EventID(N) for others).
 * The names are UTF-8, not NUL-terminated, borrowed from ev, s or *out
 * itself (so *out must not be copied and must outlive their use). */
#define ETW_EVENT_NAMES_BUF 128
typedef struct etw_event_names {
    const char *provider;
    size_t provider_len;
    const char *event;
    size_t event_len;
    char provider_buf[ETW_EVENT_NAMES_BUF]; /* fallback names are built here */
    char event_buf[ETW_EVENT_NAMES_BUF];
} etw_event_names;

void etw_event_names_get(const etw_event *ev, const etw_schema *s, etw_event_names *out);

const etw_decoder_stats *etw_decoder_stats_get(const etw_decoder *d);

#ifdef __cplusplus
}
#endif
#endif
