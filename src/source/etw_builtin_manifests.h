/* etw_builtin_manifests.h - the instrumentation manifests compiled into the
 * library (data/manifests/: the CLR's ClrEtwAll.man), as a lazy loader for a
 * manifest set.
 *
 * Each is const data generated at build time (tools/embed/etw_embed.c):
 * its XML already parsed, as records the loader replays through its XML
 * handlers (etw_manifest_load_replay), so loading it costs no XML parse.
 * A decoder keeps them in a manifest set of its own (kind
 * ETW_SOURCE_BUILTIN), below every schema the user or the trace supplies
 * (docs/schema-sources.md). The set starts empty: the first time it is asked
 * for a provider one of the manifests declares, that provider's part of the
 * manifest (etw_embed cuts one per provider, each a whole manifest with the
 * strings its provider names) is parsed into it, so a trace without .NET
 * events never pays the parse, and one with the Rundown provider alone pays
 * an eighth of it.
 */
#ifndef ETW_BUILTIN_MANIFESTS_H
#define ETW_BUILTIN_MANIFESTS_H

#include <stddef.h>
#include <stdint.h>

#include "etw_manifest.h"
#include "etwdecode/etw_decoder.h"
#include "etwdecode/etw_types.h"

/* One compiled-in manifest: its file name (its messages and "why no
 * schema" texts name it as "the built-in NAME"), its pre-parsed records
 * (etw_manifest_replay.h, for etw_manifest_load_replay) in one part per
 * provider, back to back (part j, of part_len[j] bytes, holds
 * providers[j]), the size and FNV-1a 64-bit hash of the XML file they were
 * made from (the XML is not kept), and the providers it declares. */
typedef struct etw_builtin_manifest {
    const char *name;
    const unsigned char *rec; /* every part */
    size_t rec_len;
    const size_t *part_len;   /* nparts of them */
    size_t nparts;
    size_t xml_len;
    uint64_t xml_fnv;
    const etw_guid *providers;
    size_t nproviders;
} etw_builtin_manifest;

/* The records of part j of b (providers[j]'s) in *rec and *len;
 * ETW_E_NOT_FOUND past the last part, ETW_E_CORRUPT when the parts' lengths
 * run past the records. */
etw_status etw_builtin_manifest_part(const etw_builtin_manifest *b, size_t j, const unsigned char **rec,
                                     size_t *len);

/* The number of built-in manifests; the i-th one in *out (ETW_E_NOT_FOUND
 * past the end). */
size_t etw_builtin_manifest_count(void);
etw_status etw_builtin_manifest_get(size_t i, etw_builtin_manifest *out);

/* The built-in manifest that declares provider in *out (out may be NULL);
 * ETW_E_NOT_FOUND when none does. */
etw_status etw_builtin_manifest_find(const etw_guid *provider, etw_builtin_manifest *out);

/* State of the loader of one set: which parts were parsed into it (each at
 * most once, even when the parse failed). Parts are numbered across the
 * manifests: the first manifest's in provider order, then the next one's.
 * Zero it before use. */
typedef struct etw_builtin_loader {
    uint32_t tried;  /* bit i: part i was parsed into the set */
    uint32_t loaded; /* bit i: and it loaded without error */
} etw_builtin_loader;

/* The lazy loader (etw_manifest_lazy_fn): ctx is an etw_builtin_loader.
 * Loads the part that declares provider into m when it was not tried yet;
 * 1 when it loaded. */
int etw_builtin_manifests_lazy(void *ctx, etw_manifest_set *m, const etw_guid *provider);

/* Make m load the built-in manifests lazily, keeping its state in *state
 * (which must outlive m). */
etw_status etw_builtin_manifests_attach(etw_manifest_set *m, etw_builtin_loader *state);

/* The set of shared built-ins b (etw_builtins_new, etw_decoder.h) that
 * holds provider (its part alone), parsed now if no decoder asked for it before
 * (under b's lock; later calls read it without one). NULL when no built-in
 * manifest declares provider, or its parse failed. The set is never
 * written again: any number of threads may read it. */
etw_manifest_set *etw_builtins_set_for(etw_builtins *b, const etw_guid *provider);

/* The providers of b parsed so far. */
uint32_t etw_builtins_provider_count(etw_builtins *b);

/* Load every built-in manifest into m now, part by part (tests, tools
 * listing them).
 * *providers (may be NULL) receives the number of providers loaded. */
etw_status etw_builtin_manifests_load_all(etw_manifest_set *m, uint32_t *providers);

#endif
