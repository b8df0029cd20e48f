/* etw_source.h - the one small interface every schema source implements.
 *
 * A source is asked when the cache misses a key of its kind. It builds a
 * draft schema (etw_schema.h) and inserts it into the cache under its own
 * (source, pointer width) map, then returns the cached copy. The cache never
 * knows where schemas come from; the decoder knows only this interface.
 * Manifest files, EventSource manifests from the trace, merged
 * TRACE_EVENT_INFO metadata and MOF classes plug in here.
 */
#ifndef ETW_SOURCE_H
#define ETW_SOURCE_H

#include <stddef.h>
#include <stdint.h>

#include "etw_cache.h"
#include "etwdecode/etw_event.h"

/* Which key a source answers to. */
typedef enum etw_source_key {
    ETW_SOURCE_KEY_DESCRIPTOR = 0, /* (provider GUID, id, version) */
    ETW_SOURCE_KEY_CLASSIC = 1     /* (event-class GUID, opcode, version) */
} etw_source_key;

typedef struct etw_source {
    etw_schema_source kind;
    etw_source_key key;
    /* Resolve key (its hash given) for ev: insert the schema into `cache`
     * under (kind, ev->pointer_size) and set *out; ETW_E_NOT_FOUND when the
     * source does not know the event. */
    etw_status (*resolve)(void *ctx, etw_cache *cache, const etw_event *ev,
                          const uint8_t *key, size_t key_len, uint64_t hash,
                          const etw_schema **out, const char **why);
    void *ctx;
} etw_source;

/* Register a source with a decoder (sources answer in registration order,
 * so register the user's manifests first). Clears the negative cache. */
struct etw_decoder;
etw_status etw_decoder_add_source(struct etw_decoder *d, const etw_source *src);

/* The decoder's count/length scratch (at least the largest prop_count of
 * any schema it resolved), for renderers that walk a schema themselves. */
void etw_decoder_scratch(struct etw_decoder *d, uint64_t **refs, size_t *len);

/* The epoch of the decoder's cache (etw_cache_epoch): while it stays the
 * same, etw_decoder_resolve gives the same schema for two events of the same
 * provider, id, opcode, version, form and pointer size that teach nothing
 * (etw_decoder_learn_kind ETW_LEARN_NONE) and carry no TraceLogging
 * metadata (a WPP message aside). */
uint64_t etw_decoder_epoch(const struct etw_decoder *d);

#endif
