/* etw_manifest.h - instrumentation manifests (XML) as a schema source.
 *
 * A manifest set holds the providers of every manifest loaded into it: their
 * events, templates, value maps and bitmaps, tasks, opcodes, keywords,
 * levels, channels and string tables. It answers (provider GUID, id,
 * version) keys through the etw_source interface (etw_source.h): on a cache
 * miss it builds the event's schema (etw_schema.h) and inserts it into the
 * cache under its own map.
 *
 * Two sets are used by a decoder: one for the manifests the user passes
 * (source ETW_SOURCE_MANIFEST, asked first) and one for the .NET EventSource
 * manifests found inside the trace (ETW_SOURCE_EVENTSOURCE). Loading a
 * provider that the set already has replaces it (later file wins) and
 * reports a warning; the replaced provider's cached schemas are dropped from
 * this set's cache map so later events use the new manifest.
 */
#ifndef ETW_MANIFEST_H
#define ETW_MANIFEST_H

#include <stddef.h>
#include <stdint.h>

#include "../schema/etw_source.h"
#include "etwdecode/etw_reader.h"

typedef struct etw_manifest_set etw_manifest_set;

/* Bounds of one load (docs/limits.md). A file (XML, PE or WEVT blob) or an
 * in-memory document larger than ETW_MANIFEST_MAX_FILE_BYTES is refused
 * before it is read; a load whose parse records and compiled tables pass
 * ETW_MANIFEST_MAX_MEMORY stops there. Both are ETW_E_LIMIT, reported, and
 * load nothing of the document. */
#define ETW_MANIFEST_MAX_FILE_BYTES ((uint64_t)64 << 20)
#define ETW_MANIFEST_MAX_MEMORY_MIB 64
#define ETW_MANIFEST_MAX_MEMORY ((size_t)ETW_MANIFEST_MAX_MEMORY_MIB << 20)

/* Problems and warnings met while loading: status, a one-line message that
 * names the origin (file name or "EventSource <guid>"), line and reason.
 * The etw_diag file_offset field carries the line number. */
typedef struct etw_manifest_options {
    const etw_allocator *allocator;  /* NULL: malloc/free */
    etw_schema_source kind;          /* ETW_SOURCE_MANIFEST or ETW_SOURCE_EVENTSOURCE */
    etw_diag_fn on_diag;             /* NULL: problems are only counted */
    void *diag_ctx;
} etw_manifest_options;

etw_status etw_manifest_set_new(etw_manifest_set **out, const etw_manifest_options *opt);
void etw_manifest_set_free(etw_manifest_set *m);

/* Load every provider of the manifest xml[0..len) (UTF-8, or UTF-16 with a
 * BOM). origin names it in messages. A malformed document is an error
 * (ETW_E_CORRUPT, reported with its line and reason) and loads nothing;
 * other manifests already loaded stay. *providers (may be NULL) receives
 * the number of providers loaded. */
etw_status etw_manifest_load_xml(etw_manifest_set *m, const char *xml, size_t len,
                                 const char *origin, uint32_t *providers);

/* Load a file, or every *.man / *.xml file of a directory and of its
 * subdirectories (in name order; symbolic links to directories are not
 * followed, at most 16 levels). A directory that yields no provider is
 * reported with the reason. */
etw_status etw_manifest_load_path(etw_manifest_set *m, const char *path, uint32_t *providers);

/* 1 when the set has a provider with this GUID (asking the lazy loader
 * first, see etw_manifest_set_lazy). */
int etw_manifest_has_provider(etw_manifest_set *m, const etw_guid *provider);

/* The language whose message tables PE files give names and messages in
 * ("de-DE"; NULL or "": en-US): a file's own table in that language, else
 * <dir>/<lang>/<file>.mui. ETW_E_INVALID_ARG for a tag over 23 bytes. */
etw_status etw_manifest_set_lang(etw_manifest_set *m, const char *lang);

/* Lazy loading: a provider GUID the set does not hold is offered once to
 * fn, which may load it into m (a file of a manifest folder, a Windows
 * image's PE file, a built-in manifest) and returns 1 when it loaded
 * something. Each GUID is offered at most once per set, so a provider
 * nobody has costs one call. fn must not free m. NULL turns it off. */
/* While on, a load leaves the providers the set already holds as they are
 * (its other providers are added): for files that fill in, such as a
 * Windows image's DLLs, which often declare several providers. */
void etw_manifest_set_keep_existing(etw_manifest_set *m, int on);

typedef int (*etw_manifest_lazy_fn)(void *ctx, etw_manifest_set *m, const etw_guid *provider);
etw_status etw_manifest_set_lazy(etw_manifest_set *m, etw_manifest_lazy_fn fn, void *ctx);

/* Number of providers and events loaded. */
uint32_t etw_manifest_provider_count(const etw_manifest_set *m);
uint32_t etw_manifest_event_count(const etw_manifest_set *m);

/* The set as a schema source for a decoder (register with
 * etw_decoder_add_source). The set must outlive the decoder's use of it. */
etw_source etw_manifest_as_source(etw_manifest_set *m);

/* Attach the cache the set inserts into, so that replacing a provider can
 * drop its cached schemas (etw_decoder does this when the source is added;
 * may be NULL). */
void etw_manifest_set_cache(etw_manifest_set *m, etw_cache *cache);

#endif
