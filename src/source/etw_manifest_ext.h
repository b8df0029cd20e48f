/* etw_manifest_ext.h - additions to the manifest set API (etw_manifest.h):
 * enumeration of what a set knows and its problem count. Kept apart from
 * etw_manifest.h only so that header stays as it was specified; they may be
 * merged at any time.
 */
#ifndef ETW_MANIFEST_EXT_H
#define ETW_MANIFEST_EXT_H

#include <stdint.h>

#include "etw_manifest.h"

/* Called once per event the set can resolve: provider GUID, event id and
 * version. Return nonzero to stop the walk. */
typedef int (*etw_manifest_event_fn)(void *ctx, const etw_guid *provider, uint16_t id,
                                     uint8_t version);

/* Walk every (provider, id, version) of the set (providers in load order,
 * events in manifest order). */
void etw_manifest_foreach_event(const etw_manifest_set *m, etw_manifest_event_fn fn, void *ctx);

/* The provider@name of a provider of the set, or NULL when the set has no
 * such provider (or it has no name). Valid until the provider is replaced
 * or the set is freed. */
const char *etw_manifest_provider_name(etw_manifest_set *m, const etw_guid *provider);

/* 1 when the set has this provider: *name (may be NULL: its provider@name,
 * NULL when it has none) and *origin (may be NULL: the file it came from,
 * as given to the load call) are set. Valid until the provider is replaced
 * or the set is freed. */
int etw_manifest_provider_info(etw_manifest_set *m, const etw_guid *provider, const char **name,
                               const char **origin);

/* Load every provider of a pre-parsed manifest rec[0..len)
 * (etw_manifest_replay.h: what tools/embed/etw_embed.c recorded of an XML
 * manifest at build time), as etw_manifest_load_xml loads that XML: the
 * same element handlers, the same schemas, the same messages with the same
 * lines; no XML parse. Malformed records are ETW_E_CORRUPT, reported, and
 * load nothing. The built-in manifests (etw_builtin_manifests.c) load so. */
etw_status etw_manifest_load_replay(etw_manifest_set *m, const unsigned char *rec, size_t len,
                                    const char *origin, uint32_t *providers);

/* Problems and warnings reported (or, without on_diag, only counted) so far. */
uint64_t etw_manifest_problem_count(const etw_manifest_set *m);

/* Resolve (provider, id, version) for pointer width ptr_size (4 or 8) into
 * cache, as the source's resolve callback does for an event: the cached
 * schema in *out, ETW_E_NOT_FOUND when the set does not know the event. */
etw_status etw_manifest_resolve(etw_manifest_set *m, etw_cache *cache, const etw_guid *provider,
                                uint16_t id, uint8_t version, uint8_t ptr_size,
                                const etw_schema **out, const char **why);

#endif
