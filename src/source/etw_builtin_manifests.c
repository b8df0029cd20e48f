/* etw_builtin_manifests.c - the manifests compiled into the library and
 * their lazy loader (etw_builtin_manifests.h). */
#include "etw_builtin_manifests.h"

#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#include "../common/etw_alloc.h"
#include "../common/etw_thread.h"
#include "etw_manifest_ext.h"

/* Generated at build time from data/manifests/ClrEtwAll.man
 * (tools/embed/etw_embed.c): the XML as expat reports it, records replayed
 * by etw_manifest_load_replay (etw_manifest_replay.h), in one part per
 * provider, and the size and FNV-1a hash of the XML they were made from.
 * The XML itself is not kept: nothing reads it (tests/test_manifest_replay.c
 * reads the file and checks the two loads give the same schemas). */
extern const unsigned char etw_builtin_clretwall[];
extern const size_t etw_builtin_clretwall_len;
extern const size_t etw_builtin_clretwall_nparts;
extern const size_t etw_builtin_clretwall_part_len[];
extern const size_t etw_builtin_clretwall_xml_len;
extern const uint64_t etw_builtin_clretwall_xml_fnv;

/* The providers ClrEtwAll.man declares (its <provider guid=...>), in its
 * order, which is that of the parts; tests/test_builtin.c checks this list
 * against the parsed manifest and each part. */
static const etw_guid clr_providers[] = {
    /* Microsoft-Windows-DotNETRuntime */
    {0xe13c0d23, 0xccbc, 0x4e12, {0x93, 0x1b, 0xd9, 0xcc, 0x2e, 0xee, 0x27, 0xe4}},
    /* Microsoft-Windows-DotNETRuntimeRundown */
    {0xa669021c, 0xc450, 0x4609, {0xa0, 0x35, 0x5a, 0xf5, 0x9a, 0xf4, 0xdf, 0x18}},
    /* Microsoft-Windows-DotNETRuntimeStress */
    {0xcc2bcbba, 0x16b6, 0x4cf3, {0x89, 0x90, 0xd7, 0x4c, 0x2e, 0x8a, 0xf5, 0x00}},
    /* Microsoft-Windows-DotNETRuntimePrivate */
    {0x763fd754, 0x7086, 0x4dfe, {0x95, 0xeb, 0xc0, 0x1a, 0x46, 0xfa, 0xf4, 0xca}},
    /* Microsoft-DotNETRuntimeMonoProfiler */
    {0x7f442d82, 0x0f1d, 0x5155, {0x4b, 0x8c, 0x15, 0x29, 0xeb, 0x2e, 0x31, 0xc2}},
};

/* The compiled-in manifests. Their lengths are const objects of the
 * generated translation unit, not constant expressions, so they are read
 * when a manifest is handed out. */
#define NMANIFESTS 1
static const struct {
    const char *name;
    const unsigned char *rec;
    const size_t *rec_len;
    const size_t *part_len;
    const size_t *nparts;
    const size_t *xml_len;
    const uint64_t *xml_fnv;
    const etw_guid *providers;
    size_t nproviders;
} manifests[NMANIFESTS] = {
    {"ClrEtwAll.man", etw_builtin_clretwall, &etw_builtin_clretwall_len, etw_builtin_clretwall_part_len,
     &etw_builtin_clretwall_nparts, &etw_builtin_clretwall_xml_len, &etw_builtin_clretwall_xml_fnv, clr_providers,
     sizeof clr_providers / sizeof clr_providers[0]},
};

/* The parts of all the manifests, numbered across them (etw_builtin_loader):
 * one per provider of every manifest above (one manifest today). At most 32:
 * the loader's bits. */
#define NPARTS (sizeof clr_providers / sizeof clr_providers[0])
_Static_assert(NPARTS <= 32, "etw_builtin_loader holds a bit per part");

size_t etw_builtin_manifest_count(void) { return NMANIFESTS; }

etw_status etw_builtin_manifest_get(size_t i, etw_builtin_manifest *out) {
    if (i >= NMANIFESTS) return ETW_E_NOT_FOUND;
    if (out) {
        out->name = manifests[i].name;
        out->rec = manifests[i].rec;
        out->rec_len = *manifests[i].rec_len;
        out->part_len = manifests[i].part_len;
        out->nparts = *manifests[i].nparts;
        out->xml_len = *manifests[i].xml_len;
        out->xml_fnv = *manifests[i].xml_fnv;
        out->providers = manifests[i].providers;
        out->nproviders = manifests[i].nproviders;
    }
    return ETW_OK;
}

etw_status etw_builtin_manifest_part(const etw_builtin_manifest *b, size_t j, const unsigned char **rec,
                                     size_t *len) {
    if (!b || j >= b->nparts) return ETW_E_NOT_FOUND;
    size_t off = 0;
    for (size_t k = 0; k < j; k++) off += b->part_len[k];
    if (off > b->rec_len || b->part_len[j] > b->rec_len - off) return ETW_E_CORRUPT;
    *rec = b->rec + off;
    *len = b->part_len[j];
    return ETW_OK;
}

/* The part (numbered across the manifests) that declares provider, or
 * NPARTS; *manifest its manifest (NMANIFESTS: none), *j its index there. */
static size_t find_part(const etw_guid *provider, size_t *manifest, size_t *j) {
    size_t part = 0;
    *manifest = NMANIFESTS;
    *j = 0;
    for (size_t i = 0; provider && i < NMANIFESTS; i++)
        for (size_t k = 0; k < manifests[i].nproviders; k++, part++)
            if (etw_guid_equal(&manifests[i].providers[k], provider)) {
                *manifest = i;
                *j = k;
                return part;
            }
    return NPARTS;
}

etw_status etw_builtin_manifest_find(const etw_guid *provider, etw_builtin_manifest *out) {
    size_t i, j;
    find_part(provider, &i, &j);
    return etw_builtin_manifest_get(i, out);
}

/* Parse provider j of manifest i (its part) into m. A manifest made with
 * another count of parts than of providers (a stale generated file) loads
 * nothing. */
static etw_status load_part(etw_manifest_set *m, size_t i, size_t j, uint32_t *providers) {
    etw_builtin_manifest b;
    const unsigned char *rec = NULL;
    size_t len = 0;
    etw_status s = etw_builtin_manifest_get(i, &b);
    if (s == ETW_OK && b.nparts != b.nproviders) s = ETW_E_CORRUPT;
    if (s == ETW_OK) s = etw_builtin_manifest_part(&b, j, &rec, &len);
    if (s != ETW_OK) return s;
    char origin[64];
    snprintf(origin, sizeof origin, "the built-in %s", b.name);
    return etw_manifest_load_replay(m, rec, len, origin, providers);
}

int etw_builtin_manifests_lazy(void *ctx, etw_manifest_set *m, const etw_guid *provider) {
    etw_builtin_loader *st = ctx;
    size_t i, j, part = find_part(provider, &i, &j);
    if (!st || !m || part == NPARTS || (st->tried & (1u << part))) return 0;
    st->tried |= 1u << part;
    if (load_part(m, i, j, NULL) != ETW_OK) return 0;
    st->loaded |= 1u << part;
    return 1;
}

etw_status etw_builtin_manifests_attach(etw_manifest_set *m, etw_builtin_loader *state) {
    if (!m || !state) return ETW_E_INVALID_ARG;
    return etw_manifest_set_lazy(m, etw_builtin_manifests_lazy, state);
}

etw_status etw_builtin_manifests_load_all(etw_manifest_set *m, uint32_t *providers) {
    if (!m) return ETW_E_INVALID_ARG;
    uint32_t total = 0;
    etw_status s = ETW_OK;
    for (size_t i = 0; i < NMANIFESTS && s == ETW_OK; i++)
        for (size_t j = 0; j < manifests[i].nproviders && s == ETW_OK; j++) {
            uint32_t n = 0;
            s = load_part(m, i, j, &n);
            total += n;
        }
    if (providers) *providers = total;
    return s;
}

/* ---- shared by several decoders (etw_builtins, etw_decoder.h) ------------ */

struct etw_builtins {
    etw_allocator alloc;
    etw_mutex lock;                /* held while a part is parsed */
    atomic_uint ready;             /* bit i: sets[i] is final (parsed or failed) */
    etw_manifest_set *sets[NPARTS]; /* one per part: a parse writes only its own */
};

etw_status etw_builtins_new(etw_builtins **out, const etw_allocator *allocator) {
    if (!out) return ETW_E_INVALID_ARG;
    *out = NULL;
    etw_allocator a = etw_allocator_resolve(allocator);
    etw_builtins *b = etw_calloc(&a, 1, sizeof *b);
    if (!b) return ETW_E_NOMEM;
    b->alloc = a;
    atomic_init(&b->ready, 0);
    if (etw_mutex_init(&b->lock) != 0) {
        etw_free(&a, b);
        return ETW_E_NOMEM;
    }
    *out = b;
    return ETW_OK;
}

void etw_builtins_free(etw_builtins *b) {
    if (!b) return;
    etw_allocator a = b->alloc;
    for (size_t i = 0; i < NPARTS; i++) etw_manifest_set_free(b->sets[i]);
    etw_mutex_destroy(&b->lock);
    etw_free(&a, b);
}

etw_manifest_set *etw_builtins_set_for(etw_builtins *b, const etw_guid *provider) {
    size_t i, j, part = find_part(provider, &i, &j);
    if (!b || part == NPARTS) return NULL;
    unsigned bit = 1u << part;
    if (!(atomic_load_explicit(&b->ready, memory_order_acquire) & bit)) {
        etw_mutex_lock(&b->lock);
        if (!(atomic_load_explicit(&b->ready, memory_order_relaxed) & bit)) {
            etw_manifest_options mo;
            memset(&mo, 0, sizeof mo);
            mo.allocator = &b->alloc;
            mo.kind = ETW_SOURCE_BUILTIN; /* no on_diag: the built-in manifests load cleanly (test_builtin) */
            etw_manifest_set *m = NULL;
            if (etw_manifest_set_new(&m, &mo) == ETW_OK && load_part(m, i, j, NULL) != ETW_OK) {
                etw_manifest_set_free(m);
                m = NULL;
            }
            b->sets[part] = m;
            atomic_fetch_or_explicit(&b->ready, bit, memory_order_release);
        }
        etw_mutex_unlock(&b->lock);
    }
    return b->sets[part];
}

uint32_t etw_builtins_provider_count(etw_builtins *b) {
    uint32_t n = 0;
    unsigned ready = b ? atomic_load_explicit(&b->ready, memory_order_acquire) : 0;
    for (size_t i = 0; i < NPARTS; i++)
        if (ready & (1u << i)) n += etw_manifest_provider_count(b->sets[i]);
    return n;
}
