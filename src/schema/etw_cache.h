/* etw_cache.h - the schema cache: one append-only arena of decoded schemas
 * and one index map per (source, pointer width).
 *
 * Why this shape (see shared/seeds and docs/design.md):
 *  - every source keys its schemas on its natural key: TraceLogging on the
 *    full EVENT_SCHEMA_TL metadata bytes (two events that share a name but
 *    differ in fields can never collide), manifest-like sources on
 *    (provider GUID, id, version), MOF on (class GUID, opcode, version);
 *  - a lookup hashes its key once (XXH3, Debian's libxxhash); the caller
 *    computes the hash and may probe several maps with it (user manifest,
 *    then EventSource, then merged metadata, which share the descriptor key);
 *    a hit compares the full key bytes and allocates nothing;
 *  - schemas are deep-copied into the arena on insert and never move; those
 *    of manifest-like and MOF sources never die before the cache does, so a
 *    `const etw_schema *` of theirs stays valid;
 *  - TraceLogging schemas can always be parsed again from the event, so
 *    they live in two generations under a byte budget (etw_decoder.h's
 *    tl_cache_bytes): inserts go to the current generation; when it holds
 *    half the budget the older one is freed whole and the current one
 *    becomes the older. A lookup probes the current map, then the older,
 *    with the one hash; a hit in either allocates nothing. A TraceLogging
 *    schema pointer is valid until the second insert-time rotation after
 *    it was handed out, so whoever keeps one across events must also keep
 *    its id and compare both (ids are never reused);
 *    inserting a key that is already present re-points the map at the new
 *    schema (a newer manifest replaces an older one for later events) while
 *    the old schema stays readable;
 *  - schema ids number all schemas of all sources in one sequence;
 *  - a bounded negative cache remembers keys no source could resolve, so a
 *    chatty provider with no manifest costs one probe per event; it is
 *    cleared whenever a source learns something new.
 */
#ifndef ETW_CACHE_H
#define ETW_CACHE_H

#include <stddef.h>
#include <stdint.h>

#include "etwdecode/etw_decoder.h"
#include "etwdecode/etw_schema.h"
#include "etwdecode/etw_status.h"
#include "etwdecode/etw_types.h"

/* Key of manifest-like sources: provider GUID (16 bytes as on disk), u16 id
 * (LE), u8 version. */
#define ETW_DESCRIPTOR_KEY_SIZE 19
void etw_key_descriptor(uint8_t out[ETW_DESCRIPTOR_KEY_SIZE], const etw_guid *g,
                        uint16_t id, uint8_t version);

/* Key of classic (MOF) schemas: the descriptor layout with the opcode in the
 * id slot, then one tag byte, so a classic key can never equal a descriptor
 * key (they differ in length) in a map or in the negative cache. */
#define ETW_CLASSIC_KEY_SIZE 20
#define ETW_CLASSIC_KEY_TAG 0x43 /* 'C' */
void etw_key_classic(uint8_t out[ETW_CLASSIC_KEY_SIZE], const etw_guid *g, uint8_t opcode,
                     uint8_t version);

/* The 16 GUID bytes of a key, as stored on disk. */
void etw_key_descriptor_guid(uint8_t out[16], const etw_guid *g);

typedef struct etw_cache etw_cache;

/* The TraceLogging budget (bytes of arena blocks and map slots of both
 * generations); the default and the smallest accepted are in etw_decoder.h. */
#define ETW_TL_CACHE_DEFAULT ETW_DECODER_TL_CACHE_DEFAULT
#define ETW_TL_CACHE_MIN ETW_DECODER_TL_CACHE_MIN
etw_status etw_cache_set_tl_budget(etw_cache *c, size_t bytes); /* 0: the default */

typedef struct etw_cache_tl_stats {
    uint64_t generations; /* generations dropped */
    uint64_t evicted;     /* schemas dropped with them */
    uint64_t live;        /* schemas in the two generations */
    size_t bytes;         /* their arena blocks and map slots */
} etw_cache_tl_stats;
const etw_cache_tl_stats *etw_cache_tl_stats_get(etw_cache *c);

etw_status etw_cache_new(etw_cache **out, const etw_allocator *alloc);
void etw_cache_free(etw_cache *c);

/* The one hash of a key (XXH3 64-bit). */
uint64_t etw_cache_hash(const void *key, size_t len);

/* Look key up in the map of (source, ptr_size); ptr_size is 4 or 8 (other
 * values are treated as 8). NULL when absent. Allocates nothing. */
const etw_schema *etw_cache_find(const etw_cache *c, etw_schema_source source,
                                 uint8_t ptr_size, const void *key, size_t len,
                                 uint64_t hash);

/* Validate `draft` (the tree rules of etw_schema.h; every string non-NULL
 * where required; maps well formed), deep-copy it with its strings,
 * properties and maps into the arena, give it the next schema id, set its
 * source and pointer_size, and index it under key. *out = the cached copy.
 * ETW_E_CORRUPT (and *why, if why is not NULL) when the draft breaks a
 * rule; ETW_E_NOMEM. The copy's names follow etw_names.h: at most
 * ETW_NAME_MAX bytes each, and unique among siblings ("dup", "dup_2", ...).
 * The message is copied whole. */
etw_status etw_cache_insert(etw_cache *c, etw_schema_source source,
                            uint8_t ptr_size, const void *key, size_t len,
                            uint64_t hash, const etw_schema *draft,
                            const etw_schema **out, const char **why);

/* The tree rules alone (used by insert; exposed for sources and tests). */
etw_status etw_schema_validate(const etw_schema *draft, const char **why);

/* Drop every key of `provider` (keys that start with its 16 GUID bytes) from
 * the maps of `source`, both widths: a replaced manifest's events resolve
 * anew. The schemas stay in the arena and valid. */
void etw_cache_forget_provider(etw_cache *c, etw_schema_source source, const etw_guid *provider);

/* Number of schema ids handed out, and a schema by id (NULL if none, or a
 * TraceLogging schema no longer in a generation's map). */
uint32_t etw_cache_count(const etw_cache *c);
const etw_schema *etw_cache_get(const etw_cache *c, uint32_t id);

/* Two counters for callers that remember answers per key.
 * etw_cache_generation changes whenever what etw_cache_find answers may
 * change (a schema inserted or replaced, a provider's schemas forgotten):
 * a remembered map lookup stays right while it is the same.
 * etw_cache_epoch changes less often: only when what a key resolves to
 * through the sources may change for a key resolved before - a provider's
 * schemas forgotten, the negative cache cleared (every source that learns
 * calls one of them); inserting the schema of a new key does not. */
uint64_t etw_cache_generation(const etw_cache *c);
uint64_t etw_cache_epoch(const etw_cache *c);

/* Negative cache, bounded (a fixed number of slots; a new miss may evict an
 * old one). Keys are compared in full. */
int etw_cache_miss_known(const etw_cache *c, const void *key, size_t len, uint64_t hash);
void etw_cache_miss_note(etw_cache *c, const void *key, size_t len, uint64_t hash);
void etw_cache_miss_clear(etw_cache *c);

/* TraceLogging metadata no parse could make a schema of: keys of any
 * length, compared in full, in a fixed number of slots whose key copies
 * stay under 1 MiB together; known returns the reason noted (NULL: not
 * known) and sets *status to the status noted. Not emptied by etw_cache_miss_clear: a parse does not depend on
 * what the sources learn. */
const char *etw_cache_tl_miss_known(const etw_cache *c, const void *key, size_t len, uint64_t hash,
                                    etw_status *status);
void etw_cache_tl_miss_note(etw_cache *c, const void *key, size_t len, uint64_t hash, const char *why,
                            etw_status status);

#endif
