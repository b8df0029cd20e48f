/* etw_decoder.c - which schema decodes this event? The dispatch rules of
 * include/etwdecode/etw_decoder.h over the cache and the sources. */
#include "etwdecode/etw_decoder.h"

#include <stdio.h>
#include <string.h>

#include "../common/etw_alloc.h"
#include "../common/etw_bytes.h"
#include "../common/etw_utf16.h"
#include "../decode/etw_decode_walk.h"
#include "../source/etw_builtin_manifests.h"
#include "../source/etw_eventsource.h"
#include "../source/etw_kernel_source.h"
#include "../source/etw_manifest.h"
#include "../source/etw_manifest_catalog.h"
#include "../source/etw_manifest_ext.h"
#include "etwdecode/etw_windows.h"
#include "../source/etw_metadata.h"
#include "../source/etw_tracelogging.h"
#include "etw_cache.h"
#include "etw_names.h"
#include "etw_source.h"
#include "etw_subject.h"
#include "etw_tstate.h"
#include "etwdecode/etw_traits.h"
#include "etwdecode/etw_wpp.h"
#include "../wpp/etw_wpp_schema.h"

/* Tag byte of the keys of built-in schemas (ManifestData, MetaData names). */
#define BUILTIN_KEY_TAG 0x42 /* 'B' */

/* Sources a decoder can hold (manifest, EventSource, metadata, MOF). */
#define MAX_SOURCES 8

/* What is kept of each EventSource manifest loaded, to tell a repeat (the
 * same manifest sent again on rundown) from a newer one. */
typedef struct es_loaded {
    etw_guid provider;
    uint64_t hash;   /* of the XML */
    int64_t score;   /* etw_es_manifest_version */
    size_t len;
} es_loaded;

/* etw_decoder_payload_problem's memo of etw_decode_plan: slots
 * direct-mapped by schema id (a power of two; a slot holds the last
 * schema that mapped to it, so the memory is fixed) */
#define PLAN_MEMO_SLOTS 256u
/* a slot's state for one pointer width */
enum { PLAN_UNSET = 0, PLAN_NONE, PLAN_SET };
typedef struct plan_memo {
    const etw_schema *s; /* NULL: empty */
    uint32_t id;
    uint8_t state[2];           /* pointers of 4, 8 bytes */
    etw_decode_plan_t plan[2];
} plan_memo;

/* resolve_keyed's memo of what the cache answered for a key (the sources
 * in precedence order): slots direct-mapped by a few key bytes, right
 * while the cache's generation and the sources are the same */
#define KEY_MEMO_SLOTS 64u
typedef struct key_memo {
    uint64_t gen; /* etw_cache_generation + 1 when filled (0: empty) */
    const etw_schema *s;
    uint8_t kind, w, klen;
    uint8_t key[ETW_CLASSIC_KEY_SIZE];
} key_memo;

#define OUTRANKED_BITS 65536u

struct etw_decoder {
    etw_allocator alloc;
    etw_decoder_options opt;
    etw_cache *cache;
    etw_manifest_set *user;  /* manifests the user passed (first in precedence) */
    etw_manifest_set *es_set; /* EventSource manifests learned from the trace */
    etw_metadata_set *meta;  /* TRACE_EVENT_INFO merged into the trace */
    etw_manifest_set *builtin; /* the library's own manifests (last in precedence;
                                * NULL with no_default_manifests), parsed lazily */
    etw_builtin_loader builtin_state;
    etw_builtins *shared; /* instead of builtin: parsed once for several decoders */
    int builtin_cached; /* a built-in schema was handed out since the last
                         * time merged metadata was learned */
    etw_kernel_source *kernel; /* classic kernel (MOF) classes shipped with the library */
    etw_tstate *ts;            /* process names, volume mappings (learned in order) */
    etw_es_assembler *es;
    es_loaded *es_loaded;
    size_t es_loaded_n, es_loaded_cap;
    uint64_t last_offer_buf; /* the manifest chunk offered last (resolve may */
    uint32_t last_offer_rec; /* be called twice for one event) */
    int offered_any;
    etw_tl_scratch tl;
    etw_source sources[MAX_SOURCES];
    uint32_t nsources;
    uint64_t *refs;      /* count/length scratch for the cursor */
    size_t refs_len;
    etw_decoder_stats stats;
    const etw_manifest_catalog *cat; /* user manifests loaded lazily from it */
    uint8_t *cat_loaded;             /* per catalog file: 1 once loaded */
    char why[640]; /* room for a manifest's path and provider name */
    char problem[ETW_NAME_MAX + 64]; /* etw_decoder_payload_problem's text (non-MOF schemas) */
    /* Windows images whose providers load lazily into the user set */
    const etw_windows_index *windows[ETW_DECODER_MAX_WINDOWS];
    uint32_t nwindows;
    /* WPP messages: TMF text added to this decoder, then borrowed sets */
    etw_wpp_set *wpp_own;
    const etw_wpp_set *wpp_sets[ETW_DECODER_MAX_WPP];
    uint32_t nwpp;
    plan_memo plans[PLAN_MEMO_SLOTS];
    key_memo keys[KEY_MEMO_SLOTS];
    uint64_t keys_gen0; /* bumped when the sources change: added to the cache's */
    /* etw_decoder_learn_early: a bit per hash of the keys (their first
     * ETW_DESCRIPTOR_KEY_SIZE bytes) answered by a source that merged
     * metadata outranks, or by none; never cleared */
    uint64_t outranked[OUTRANKED_BITS / 64];
};

static void report(void *ctx, const etw_diag *diag) {
    etw_decoder *d = ctx;
    if (diag->status == ETW_OK) /* a warning: nothing was lost */
        d->stats.warnings++;
    else
        d->stats.problems++;
    if (d->opt.on_diag) d->opt.on_diag(d->opt.diag_ctx, diag);
}

/* The user's manifests: counted as every diagnostic, and in
 * manifest_problems; told to on_manifest_diag when there is one. */
static void report_manifest(void *ctx, const etw_diag *diag) {
    etw_decoder *d = ctx;
    if (diag->status == ETW_OK) {
        d->stats.warnings++;
    } else {
        d->stats.problems++;
        d->stats.manifest_problems++;
    }
    if (d->opt.on_manifest_diag) d->opt.on_manifest_diag(d->opt.manifest_diag_ctx, diag);
    else if (d->opt.on_diag) d->opt.on_diag(d->opt.diag_ctx, diag);
}

static etw_status es_manifest(void *ctx, const etw_guid *provider, uint32_t pid, const uint8_t *xml,
                              size_t len);

/* The user set's lazy loader: the file of a Windows image that holds the
 * provider (its WEVT_TEMPLATE), loaded without replacing what the set
 * holds. */
static int catalog_lazy(etw_decoder *d, const etw_guid *provider);

static int user_lazy(void *ctx, etw_manifest_set *m, const etw_guid *provider) {
    etw_decoder *d = ctx;
    /* the -m folders first (they rank with the -m files), then the images */
    if (d->cat && catalog_lazy(d, provider)) return 1;
    for (uint32_t i = 0; i < d->nwindows; i++) {
        const char *path = etw_windows_index_find(d->windows[i], provider);
        if (!path) continue;
        uint32_t n = 0;
        etw_manifest_set_keep_existing(m, 1);
        etw_manifest_load_path(m, path, &n);
        etw_manifest_set_keep_existing(m, 0);
        if (etw_manifest_has_provider(m, provider)) {
            d->stats.manifest_providers = etw_manifest_provider_count(m);
            return 1;
        }
    }
    return 0;
}

etw_status etw_decoder_add_windows(etw_decoder *d, const etw_windows_index *x) {
    if (!d || !x) return ETW_E_INVALID_ARG;
    if (d->nwindows == ETW_DECODER_MAX_WINDOWS) return ETW_E_LIMIT;
    d->windows[d->nwindows++] = x;
    etw_cache_miss_clear(d->cache);
    return etw_manifest_set_lazy(d->user, user_lazy, d);
}

/* The source of the shared built-in manifests (etw_decoder_options.builtins):
 * the set of the key's provider, parsed the first time any decoder asks,
 * answers as a decoder's own set would. */
static etw_status shared_builtin_resolve(void *ctx, etw_cache *cache, const etw_event *ev, const uint8_t *key,
                                         size_t key_len, uint64_t hash, const etw_schema **out, const char **why) {
    if (key_len != ETW_DESCRIPTOR_KEY_SIZE) return ETW_E_NOT_FOUND;
    etw_guid g = etw_guid_read(key);
    etw_manifest_set *m = etw_builtins_set_for(ctx, &g);
    if (!m) return ETW_E_NOT_FOUND;
    etw_source src = etw_manifest_as_source(m);
    return src.resolve(src.ctx, cache, ev, key, key_len, hash, out, why);
}

etw_status etw_decoder_new(etw_decoder **out, const etw_decoder_options *opt) {
    if (!out) return ETW_E_INVALID_ARG;
    *out = NULL;
    etw_allocator a = etw_allocator_resolve(opt ? opt->allocator : NULL);
    etw_decoder *d = etw_calloc(&a, 1, sizeof *d);
    if (!d) return ETW_E_NOMEM;
    d->alloc = a;
    if (opt) d->opt = *opt;
    etw_tl_scratch_init(&d->tl, &a);
    etw_manifest_options mo;
    memset(&mo, 0, sizeof mo);
    mo.allocator = &d->alloc;
    mo.on_diag = report;
    mo.diag_ctx = d;
    etw_es_options eo;
    memset(&eo, 0, sizeof eo);
    eo.allocator = &d->alloc;
    eo.on_manifest = es_manifest;
    eo.ctx = d;
    eo.on_diag = report;
    eo.diag_ctx = d;
    etw_status s = etw_cache_new(&d->cache, &a);
    if (s == ETW_OK) s = etw_cache_set_tl_budget(d->cache, d->opt.tl_cache_bytes);
    if (s == ETW_OK) {
        mo.kind = ETW_SOURCE_MANIFEST;
        mo.on_diag = report_manifest;
        s = etw_manifest_set_new(&d->user, &mo);
        mo.on_diag = report;
    }
    if (s == ETW_OK) {
        mo.kind = ETW_SOURCE_EVENTSOURCE;
        s = etw_manifest_set_new(&d->es_set, &mo);
    }
    if (!d->opt.no_default_manifests) d->shared = d->opt.builtins;
    if (s == ETW_OK && !d->opt.no_default_manifests && !d->shared) {
        mo.kind = ETW_SOURCE_BUILTIN;
        s = etw_manifest_set_new(&d->builtin, &mo);
        if (s == ETW_OK) s = etw_builtin_manifests_attach(d->builtin, &d->builtin_state);
    }
    if (s == ETW_OK) s = etw_metadata_set_new(&d->meta, &a);
    if (s == ETW_OK) s = etw_es_new(&d->es, &eo);
    if (s == ETW_OK) s = etw_kernel_source_new(&d->kernel, &d->alloc, report, d);
    if (s == ETW_OK) s = etw_tstate_new(&d->ts, &d->alloc);
    if (s != ETW_OK) {
        etw_decoder_free(d);
        return s;
    }
    etw_manifest_set_cache(d->user, d->cache);
    etw_manifest_set_cache(d->es_set, d->cache);
    if (d->opt.lang && etw_manifest_set_lang(d->user, d->opt.lang) != ETW_OK) {
        etw_decoder_free(d);
        return ETW_E_INVALID_ARG;
    }
    etw_manifest_set_cache(d->builtin, d->cache);
    /* Precedence: the user's manifests, then EventSource manifests from the
     * trace, then metadata merged into the trace, then the manifests shipped
     * with the library (docs/schema-sources.md). */
    etw_source src = etw_manifest_as_source(d->user);
    etw_decoder_add_source(d, &src);
    src = etw_manifest_as_source(d->es_set);
    etw_decoder_add_source(d, &src);
    src = etw_metadata_as_source(d->meta);
    etw_decoder_add_source(d, &src);
    if (d->builtin) {
        src = etw_manifest_as_source(d->builtin);
        etw_decoder_add_source(d, &src);
    } else if (d->shared) {
        memset(&src, 0, sizeof src);
        src.kind = ETW_SOURCE_BUILTIN;
        src.key = ETW_SOURCE_KEY_DESCRIPTOR;
        src.resolve = shared_builtin_resolve;
        src.ctx = d->shared;
        etw_decoder_add_source(d, &src);
    }
    src = etw_metadata_as_classic_source(d->meta);
    etw_decoder_add_source(d, &src);
    /* Classic keys the trace's own metadata does not describe: the kernel
     * (MOF) classes of the library's tables. */
    src = etw_kernel_as_source(d->kernel);
    etw_decoder_add_source(d, &src);
    *out = d;
    return ETW_OK;
}

void etw_decoder_free(etw_decoder *d) {
    if (!d) return;
    etw_allocator a = d->alloc;
    etw_es_free(d->es);
    etw_manifest_set_free(d->user);
    etw_manifest_set_free(d->es_set);
    etw_manifest_set_free(d->builtin);
    etw_free(&a, d->cat_loaded);
    etw_metadata_set_free(d->meta);
    etw_wpp_set_free(d->wpp_own);
    etw_kernel_source_free(d->kernel);
    etw_tstate_free(d->ts);
    etw_tl_scratch_free(&d->tl);
    etw_cache_free(d->cache);
    etw_free(&a, d->refs);
    etw_free(&a, d->es_loaded);
    etw_free(&a, d);
}

const etw_decoder_stats *etw_decoder_stats_get(const etw_decoder *d) {
    return d ? &d->stats : NULL;
}

/* Make the count/length scratch hold at least n entries (on a miss only). */
static etw_status refs_reserve(etw_decoder *d, size_t n) {
    if (n <= d->refs_len) return ETW_OK;
    uint64_t *p = etw_calloc(&d->alloc, n, sizeof *p);
    if (!p) return ETW_E_NOMEM;
    etw_free(&d->alloc, d->refs);
    d->refs = p;
    d->refs_len = n;
    return ETW_OK;
}

static uint8_t width_of(const etw_event *ev) { return ev->pointer_size == 4 ? 4 : 8; }

static etw_status fail(etw_decoder *d, etw_status s, const char **why) {
    d->stats.errors++;
    if (why) *why = d->why;
    return s;
}

static etw_status resolve_tracelogging(etw_decoder *d, const etw_event *ev, const etw_ext_item *meta,
                                       const etw_schema **out, const char **why) {
    uint8_t w = width_of(ev);
    uint64_t h = etw_cache_hash(meta->data, meta->size);
    const etw_schema *s = etw_cache_find(d->cache, ETW_SOURCE_TRACELOGGING, w, meta->data, meta->size, h);
    if (s) {
        d->stats.hits++;
        *out = s;
        return ETW_OK;
    }
    etw_status known = ETW_OK;
    const char *reason = etw_cache_tl_miss_known(d->cache, meta->data, meta->size, h, &known);
    if (reason) { /* this metadata failed before: the same answer, no parse */
        d->stats.negative_hits++; /* not a miss: no source is asked (etw_decoder_stats) */
        snprintf(d->why, sizeof d->why, "bad TraceLogging metadata: %s", reason);
        return fail(d, known, why);
    }
    d->stats.misses++;
    etw_schema draft;
    etw_status st = etw_tl_parse(meta->data, meta->size, &d->tl, &draft, &reason);
    if (st == ETW_OK) {
        draft.provider = ev->provider;
        draft.event_id = ev->id;
        draft.version = ev->version;
        draft.channel = ev->channel;
        draft.level = ev->level;
        draft.opcode = ev->opcode;
        draft.task = ev->task;
        draft.keywords = ev->keywords;
        st = etw_cache_insert(d->cache, ETW_SOURCE_TRACELOGGING, w, meta->data, meta->size, h, &draft, &s,
                              &reason);
    }
    if (st == ETW_OK) st = refs_reserve(d, s->prop_count);
    if (st != ETW_OK) {
        /* undecodable metadata fails the same way next time (a memory
         * failure is not remembered: it may pass) */
        if (st != ETW_E_NOMEM && st != ETW_E_INVALID_ARG && reason)
            etw_cache_tl_miss_note(d->cache, meta->data, meta->size, h, reason, st);
        snprintf(d->why, sizeof d->why, "bad TraceLogging metadata: %s",
                 reason ? reason : etw_strerror(st));
        return fail(d, st, why);
    }
    d->stats.schemas = etw_cache_count(d->cache);
    d->stats.tl_evicted = etw_cache_tl_stats_get(d->cache)->evicted;
    *out = s;
    return ETW_OK;
}

/* Why no manifest-like source decodes ev (a descriptor key): the provider
 * is known to none, or a manifest has it but not this event. */
static void no_event_reason(etw_decoder *d, const etw_event *ev, const char *guid) {
    const char *name = NULL, *origin = NULL;
    const char *from = NULL;
    if (etw_manifest_provider_info(d->user, &ev->provider, &name, &origin))
        from = origin;
    else if (etw_manifest_provider_info(d->es_set, &ev->provider, &name, NULL))
        from = "its EventSource manifest in the trace";
    else if (etw_manifest_provider_info(d->shared ? etw_builtins_set_for(d->shared, &ev->provider) : d->builtin,
                                        &ev->provider, &name, &origin))
        from = origin; /* "the built-in ClrEtwAll.man" */
    if (from)
        snprintf(d->why, sizeof d->why, "no schema: provider %s (from %s) has no event id %u version %u",
                 name && *name ? name : guid, from, ev->id, ev->version);
    else
        snprintf(d->why, sizeof d->why, "no schema: manifest not found for provider %s, id %u, version %u", guid,
                 ev->id, ev->version);
}

/* Rules 2 and 4: keyed lookups in the maps of the sources that answer to
 * this kind of key, in precedence order, then the sources themselves. */
/* A key answered by a source merged metadata outranks (a built-in
 * manifest, the kernel tables) or by none (etw_decoder_learn_early). */
static uint32_t outranked_bit(const uint8_t *key) {
    return (uint32_t)etw_cache_hash(key, ETW_DESCRIPTOR_KEY_SIZE) & (OUTRANKED_BITS - 1u);
}

static void note_outranked(etw_decoder *d, const uint8_t *key) {
    uint32_t b = outranked_bit(key);
    d->outranked[b / 64] |= (uint64_t)1 << (b % 64);
}

static etw_status resolve_keyed(etw_decoder *d, const etw_event *ev, etw_source_key kind,
                                const etw_schema **out, const char **why) {
    uint8_t key[ETW_CLASSIC_KEY_SIZE];
    uint8_t w = width_of(ev);
    int classic = kind == ETW_SOURCE_KEY_CLASSIC;
    size_t klen = classic ? ETW_CLASSIC_KEY_SIZE : ETW_DESCRIPTOR_KEY_SIZE;
    if (classic) {
        etw_key_classic(key, &ev->provider, ev->opcode, ev->version);
    } else {
        etw_key_descriptor(key, &ev->provider, ev->id, ev->version);
        key[ETW_DESCRIPTOR_KEY_SIZE] = 0; /* the memo compares (and keeps) the whole array */
    }
    /* the same key as an event before, the cache unchanged since: its answer */
    uint64_t gen = etw_cache_generation(d->cache) + d->keys_gen0 + 1;
    key_memo *km = &d->keys[(key[0] ^ key[3] ^ key[15] * 7u ^ key[16] * 31u ^ key[klen - 1] * 131u) &
                            (KEY_MEMO_SLOTS - 1u)];
    if (km->gen == gen && km->kind == (uint8_t)kind && km->w == w && km->klen == klen &&
        !memcmp(km->key, key, sizeof key)) {
        d->stats.hits++;
        d->builtin_cached |= km->s->source == ETW_SOURCE_BUILTIN;
        *out = km->s;
        return ETW_OK;
    }
    uint64_t h = etw_cache_hash(key, klen);
    for (uint32_t i = 0; i < d->nsources; i++) {
        if (d->sources[i].key != kind) continue;
        const etw_schema *s = etw_cache_find(d->cache, d->sources[i].kind, w, key, klen, h);
        if (s) {
            d->stats.hits++;
            d->builtin_cached |= s->source == ETW_SOURCE_BUILTIN;
            km->gen = gen;
            km->s = s;
            km->kind = (uint8_t)kind;
            km->w = w;
            km->klen = (uint8_t)klen;
            memcpy(km->key, key, sizeof key);
            *out = s;
            return ETW_OK;
        }
    }
    if (etw_cache_miss_known(d->cache, key, klen, h)) {
        d->stats.negative_hits++;
    } else {
        d->stats.misses++;
        for (uint32_t i = 0; i < d->nsources; i++) {
            etw_source *src = &d->sources[i];
            if (src->key != kind) continue;
            const etw_schema *s = NULL;
            const char *reason = NULL;
            etw_status st = src->resolve(src->ctx, d->cache, ev, key, klen, h, &s, &reason);
            if (src->kind == ETW_SOURCE_BUILTIN) /* it may have just loaded */
                d->stats.builtin_providers = d->shared ? etw_builtins_provider_count(d->shared)
                                                       : etw_manifest_provider_count(d->builtin);
            if (st == ETW_OK && (st = refs_reserve(d, s->prop_count)) == ETW_OK) {
                d->stats.schemas = etw_cache_count(d->cache);
                d->builtin_cached |= s->source == ETW_SOURCE_BUILTIN;
                if (s->source == ETW_SOURCE_BUILTIN || s->source == ETW_SOURCE_MOF) note_outranked(d, key);
                *out = s;
                return ETW_OK;
            }
            if (st != ETW_E_NOT_FOUND) {
                snprintf(d->why, sizeof d->why, "bad schema: %s", reason ? reason : etw_strerror(st));
                return fail(d, st, why);
            }
        }
        etw_cache_miss_note(d->cache, key, klen, h);
        note_outranked(d, key);
    }
    char g[ETW_GUID_STRING_SIZE];
    etw_guid_format(&ev->provider, g);
    if (classic)
        snprintf(d->why, sizeof d->why, "no schema: no MOF class for event class %s, opcode %u, version %u", g,
                 ev->opcode, ev->version);
    else
        no_event_reason(d, ev, g);
    return fail(d, ETW_E_NOT_FOUND, why);
}

/* A source of higher precedence learned `provider`: drop the provider's
 * schemas from the maps below it, so its next event resolves anew, and let
 * keys that missed before be asked again. */
static void learned_provider(etw_decoder *d, etw_schema_source from, const etw_guid *provider) {
    for (etw_schema_source s = from; s <= ETW_SOURCE_METADATA; s++) etw_cache_forget_provider(d->cache, s, provider);
    etw_cache_forget_provider(d->cache, ETW_SOURCE_BUILTIN, provider);
    etw_cache_miss_clear(d->cache);
}

/* Merged metadata was learned: it outranks the built-in manifests, so the
 * built-in schemas handed out so far must not answer for the events it may
 * now describe (a MetaData record can follow the first event it describes).
 * The record does not say its provider here: forget the built-in providers,
 * which is nothing to do unless a built-in schema was used since last time. */
static void metadata_learned(etw_decoder *d) {
    if (d->builtin_cached) {
        etw_builtin_manifest b;
        for (size_t i = 0; etw_builtin_manifest_get(i, &b) == ETW_OK; i++)
            for (size_t j = 0; j < b.nproviders; j++)
                etw_cache_forget_provider(d->cache, ETW_SOURCE_BUILTIN, &b.providers[j]);
        d->builtin_cached = 0;
    }
    etw_cache_miss_clear(d->cache);
}

typedef struct forget_walk {
    etw_decoder *d;
    etw_guid last;
    int any;
} forget_walk;

static int forget_each(void *ctx, const etw_guid *provider, uint16_t id, uint8_t version) {
    forget_walk *w = ctx;
    (void)id;
    (void)version;
    if (!w->any || !etw_guid_equal(&w->last, provider)) {
        learned_provider(w->d, ETW_SOURCE_EVENTSOURCE, provider);
        w->last = *provider;
        w->any = 1;
    }
    return 0;
}

static void user_manifests_changed(etw_decoder *d) {
    forget_walk w;
    memset(&w, 0, sizeof w);
    w.d = d;
    etw_manifest_foreach_event(d->user, forget_each, &w);
    etw_cache_miss_clear(d->cache);
    d->stats.manifest_providers = etw_manifest_provider_count(d->user);
}

/* ---- a manifest catalog: the user's manifests loaded lazily --------------- */

/* Load the not yet loaded files of catalog file f's group, in catalog
 * order. *any: a provider was loaded; the first failure is returned. */
static etw_status load_group(etw_decoder *d, uint32_t f, int *any) {
    etw_status st = ETW_OK;
    for (uint32_t g = etw_catalog_group_first(d->cat, f); g != ETW_CATALOG_NONE;
         g = etw_catalog_group_next(d->cat, g)) {
        if (d->cat_loaded[g]) continue;
        d->cat_loaded[g] = 1;
        /* XML, PE or blob: etw_manifest_load_path tells them apart */
        uint32_t n = 0;
        etw_status s = etw_manifest_load_path(d->user, etw_catalog_path(d->cat, g), &n);
        if (n) *any = 1;
        if (s != ETW_OK && st == ETW_OK) st = s;
    }
    return st;
}

/* The catalog's part of the user set's lazy loader (user_lazy): a
 * provider the set does not hold. */
static int catalog_lazy(etw_decoder *d, const etw_guid *provider) {
    uint32_t f = etw_catalog_find(d->cat, provider);
    if (f == ETW_CATALOG_NONE) return 0;
    int any = 0;
    (void)load_group(d, f, &any);
    /* no other source was asked for this provider yet (the user's manifests
     * come first), so there is nothing to forget: only count */
    if (any) d->stats.manifest_providers = etw_manifest_provider_count(d->user);
    return any;
}

/* Before providers are loaded from outside the catalog (they rank after
 * it), load the catalog's files that declare the same GUIDs, so that the
 * later load replaces them as loading everything in order would. */
static etw_status catalog_before(etw_decoder *d, const etw_guid *g, size_t n) {
    etw_status st = ETW_OK;
    int any = 0;
    for (size_t i = 0; i < n; i++) {
        uint32_t f = etw_catalog_find(d->cat, &g[i]);
        if (f == ETW_CATALOG_NONE) continue;
        etw_status s = load_group(d, f, &any);
        if (s != ETW_OK && st == ETW_OK) st = s;
    }
    return st;
}

typedef struct guid_list {
    etw_decoder *d;
    etw_guid *g;
    size_t n, cap;
    int oom;
} guid_list;

static int collect_provider(void *ctx, const etw_guid *provider, uint16_t id, uint8_t version) {
    guid_list *l = ctx;
    (void)id;
    (void)version;
    if (l->n && etw_guid_equal(&l->g[l->n - 1], provider)) return 0;
    if (l->n == l->cap) {
        size_t ncap = l->cap ? l->cap * 2 : 64;
        etw_guid *ng = etw_calloc(&l->d->alloc, ncap, sizeof *ng);
        if (!ng) {
            l->oom = 1;
            return 1;
        }
        if (l->n) memcpy(ng, l->g, l->n * sizeof *ng);
        etw_free(&l->d->alloc, l->g);
        l->g = ng;
        l->cap = ncap;
    }
    l->g[l->n++] = *provider;
    return 0;
}

etw_status etw_decoder_add_manifest_catalog(etw_decoder *d, const etw_manifest_catalog *cat) {
    if (!d || !cat || d->cat) return ETW_E_INVALID_ARG;
    uint32_t nf = etw_catalog_count(cat);
    d->cat_loaded = etw_calloc(&d->alloc, nf ? nf : 1, 1);
    if (!d->cat_loaded) return ETW_E_NOMEM;
    d->cat = cat;
    /* the providers loaded before rank before the catalog */
    guid_list l;
    memset(&l, 0, sizeof l);
    l.d = d;
    etw_manifest_foreach_event(d->user, collect_provider, &l);
    etw_status st = l.oom ? ETW_E_NOMEM : catalog_before(d, l.g, l.n);
    etw_free(&d->alloc, l.g);
    /* files named directly load now, as etw_decoder_add_manifest would */
    int any = 0;
    for (uint32_t f = 0; f < nf; f++) {
        if (!etw_catalog_named(cat, f) || d->cat_loaded[f]) continue;
        etw_status s = load_group(d, f, &any);
        if (s != ETW_OK && st == ETW_OK) st = s;
    }
    etw_manifest_set_lazy(d->user, user_lazy, d);
    user_manifests_changed(d);
    return st;
}

etw_status etw_decoder_add_manifest(etw_decoder *d, const char *path, uint32_t *providers) {
    if (!d || !path) return ETW_E_INVALID_ARG;
    if (d->cat) {
        /* what path declares, found as the catalog finds it */
        etw_manifest_catalog *pre = NULL;
        etw_manifest_catalog_options co;
        memset(&co, 0, sizeof co);
        co.allocator = &d->alloc;
        if (etw_manifest_catalog_new(&pre, &co) == ETW_OK &&
            etw_manifest_catalog_add_path(pre, path, NULL) != ETW_E_NOMEM) {
            for (uint32_t i = 0; i < etw_catalog_count(pre); i++) {
                size_t n;
                const etw_guid *g = etw_catalog_file_guids(pre, i, &n);
                (void)catalog_before(d, g, n);
            }
        }
        etw_manifest_catalog_free(pre);
    }
    etw_status s = etw_manifest_load_path(d->user, path, providers);
    user_manifests_changed(d);
    return s;
}

etw_status etw_decoder_add_manifest_xml(etw_decoder *d, const char *xml, size_t len, const char *origin,
                                        uint32_t *providers) {
    if (!d || (!xml && len)) return ETW_E_INVALID_ARG;
    if (d->cat) {
        etw_guid *g = etw_calloc(&d->alloc, ETW_CATALOG_MAX_FILE_PROVIDERS, sizeof *g);
        size_t n = 0;
        if (g) {
            (void)etw_manifest_scan_providers(xml, len, g, ETW_CATALOG_MAX_FILE_PROVIDERS, &n, NULL, NULL);
            (void)catalog_before(d, g, n);
            etw_free(&d->alloc, g);
        }
    }
    etw_status s = etw_manifest_load_xml(d->user, xml, len, origin ? origin : "(memory)", providers);
    user_manifests_changed(d);
    return s;
}

/* A complete EventSource manifest from the trace. A provider the user gave
 * a manifest for keeps it (as PerfView keeps its own CLR parser over the
 * runtime's embedded manifest); the same manifest sent again is ignored; a
 * different one replaces the old for the events after it. */
static etw_status es_manifest(void *ctx, const etw_guid *provider, uint32_t pid, const uint8_t *xml,
                              size_t len) {
    etw_decoder *d = ctx;
    (void)pid;
    if (etw_manifest_has_provider(d->user, provider)) return ETW_OK;
    uint64_t h = etw_cache_hash(xml, len);
    es_loaded *seen = NULL;
    for (size_t i = 0; i < d->es_loaded_n; i++)
        if (etw_guid_equal(&d->es_loaded[i].provider, provider)) seen = &d->es_loaded[i];
    if (seen && seen->hash == h && seen->len == len) return ETW_OK;
    if (!seen) {
        if (d->es_loaded_n == d->es_loaded_cap) {
            size_t nc = d->es_loaded_cap ? d->es_loaded_cap * 2 : 8;
            es_loaded *n = etw_calloc(&d->alloc, nc, sizeof *n);
            if (!n) return ETW_E_NOMEM;
            if (d->es_loaded_n) memcpy(n, d->es_loaded, d->es_loaded_n * sizeof *n);
            etw_free(&d->alloc, d->es_loaded);
            d->es_loaded = n;
            d->es_loaded_cap = nc;
        }
        seen = &d->es_loaded[d->es_loaded_n++];
        seen->provider = *provider;
    }
    char g[ETW_GUID_STRING_SIZE], origin[64];
    etw_guid_format(provider, g);
    snprintf(origin, sizeof origin, "EventSource %s", g);
    if (etw_manifest_load_xml(d->es_set, (const char *)xml, len, origin, NULL) == ETW_OK) {
        seen->hash = h;
        seen->len = len;
        seen->score = etw_es_manifest_version(xml, len);
        d->stats.eventsource_manifests++;
        learned_provider(d, ETW_SOURCE_EVENTSOURCE, provider);
    }
    return ETW_OK;
}

int etw_decoder_is_manifest_event(const etw_event *ev) { return ev && etw_es_is_manifest_event(ev); }

void etw_decoder_finish(etw_decoder *d) {
    if (d) etw_es_finish(d->es);
}

static etw_status resolve_manifest_chunk(etw_decoder *d, const etw_event *ev, const etw_schema **out);

/* Offer one record to the merged-metadata source: 1 when it was one. */
static int learn_metadata(etw_decoder *d, const etw_event *ev) {
    etw_status st = ETW_OK;
    const char *why = NULL;
    if (!etw_metadata_offer(d->meta, ev, &st, &why)) return 0;
    if (st != ETW_OK) {
        etw_diag diag;
        diag.status = st;
        diag.file_offset = ev->buffer_file_offset;
        snprintf(d->why, sizeof d->why, "merged metadata record dropped: %s", why ? why : etw_strerror(st));
        diag.message = d->why;
        report(d, &diag);
    }
    return 1;
}

etw_status etw_decoder_prescan(etw_decoder *d, etw_reader *r) {
    if (!d || !r) return ETW_E_INVALID_ARG;
    etw_event ev;
    etw_status s;
    while ((s = etw_reader_next(r, &ev)) == ETW_OK) learn_metadata(d, &ev);
    d->stats.metadata_events = etw_metadata_event_count(d->meta);
    metadata_learned(d);
    if (s != ETW_END) return s;
    return etw_reader_rewind(r);
}

/* ---- state of the traced system (etw_tstate.h) ------------------------------ */

enum { ST_NONE, ST_PROC_SET, ST_PROC_END, ST_VOLUME };

static int is_classic(const etw_event *ev);

static int guid_is(const etw_guid *g, uint32_t d1, uint16_t d2, uint16_t d3, uint64_t d4) {
    if (g->data1 != d1 || g->data2 != d2 || g->data3 != d3) return 0;
    for (int i = 0; i < 8; i++)
        if (g->data4[i] != (uint8_t)(d4 >> (56 - 8 * i))) return 0;
    return 1;
}

/* The kernel's Process class, SystemConfigEx (VolumeMapping), and the
 * Microsoft-Windows-Kernel-Process provider. */
#define G_PROCESS 0x3d6fa8d0u, 0xfe05, 0x11d0, 0x9dda00c04fd7ba7cull
#define G_SYSCONFIGEX 0x9b79ee91u, 0xb5fd, 0x41c0, 0xa2434248e266e9d0ull
#define G_KERNEL_PROCESS 0x22fb2cd6u, 0x0e7b, 0x422b, 0xa0c72fad1fd0e716ull

/* What ev teaches the state: a process starts or is in the rundown
 * (kernel Process Start 1, DCStart 3, DCEnd 4; Kernel-Process ProcessStart
 * 1, ProcessRundown 15), ends (Process/End 2; ProcessStop 2), or a volume
 * mapping (SystemConfigEx 35). */
static int state_kind(const etw_event *ev, int classic) {
    uint32_t d1 = ev->provider.data1;
    if (d1 != 0x3d6fa8d0u && d1 != 0x9b79ee91u && d1 != 0x22fb2cd6u) return ST_NONE;
    if (classic) {
        if (guid_is(&ev->provider, G_PROCESS)) {
            if (ev->opcode == 1 || ev->opcode == 3 || ev->opcode == 4) return ST_PROC_SET;
            if (ev->opcode == 2) return ST_PROC_END;
        } else if (ev->opcode == 35 && guid_is(&ev->provider, G_SYSCONFIGEX)) {
            return ST_VOLUME;
        }
        return ST_NONE;
    }
    if (ev->form != ETW_FORM_EVENT_HEADER || !guid_is(&ev->provider, G_KERNEL_PROCESS)) return ST_NONE;
    if (ev->id == 1 || ev->id == 15) return ST_PROC_SET;
    if (ev->id == 2) return ST_PROC_END;
    return ST_NONE;
}

typedef struct sfield {
    const char *name;
    const uint8_t *data;
    uint32_t size;
    uint16_t in_type;
    int found;
} sfield;

/* Top-level scalar fields of ev by name. */
static void state_fields(etw_decoder *d, const etw_event *ev, const etw_schema *s, sfield *f, size_t n) {
    etw_decode_cursor c;
    if (etw_decode_begin(&c, s, ev, d->refs, d->refs_len) != ETW_OK) return;
    etw_value v;
    size_t left = n;
    while (left && etw_decode_next(&c, &v) == ETW_OK) {
        if (v.kind != ETW_VALUE_SCALAR || v.depth != 0 || v.in_array || !v.data) continue;
        for (size_t i = 0; i < n; i++)
            if (!f[i].found && !strcmp(f[i].name, v.name)) {
                f[i].data = v.data;
                f[i].size = v.size;
                f[i].in_type = v.in_type;
                f[i].found = 1;
                left--;
                break;
            }
    }
}

static uint32_t sfield_u32(const sfield *f) {
    if (f->size == 4 || f->size == 8) return etw_le32(f->data); /* a pointer-sized id: its low half */
    if (f->size == 2) return etw_le16(f->data);
    return ETW_NO_ID;
}

/* A string field as UTF-8 into buf (at most cap bytes, cut at a character):
 * its length. */
static size_t sfield_str(const sfield *f, char *buf, size_t cap) {
    if (!f->found) return 0;
    if (f->in_type == ETW_INTYPE_UNICODESTRING) {
        size_t units = f->size / 2;
        while (units && !f->data[2 * units - 2] && !f->data[2 * units - 1]) units--;
        /* the UTF-8 of a unit takes at most 3 bytes */
        char tmp[3 * 256];
        if (units > 256) units = 256;
        size_t n = etw_utf16_to_utf8(f->data, units, tmp);
        if (n > cap) {
            n = cap;
            while (n && ((unsigned char)tmp[n] & 0xC0) == 0x80) n--;
        }
        memcpy(buf, tmp, n);
        return n;
    }
    if (f->in_type == ETW_INTYPE_ANSISTRING) {
        size_t n = 0;
        while (n < f->size && f->data[n]) n++;
        if (n > cap) n = cap;
        memcpy(buf, f->data, n);
        return n;
    }
    return 0;
}

static void observe_state(etw_decoder *d, const etw_event *ev, const etw_schema *s, int classic) {
    int k = state_kind(ev, classic);
    if (k == ST_NONE || !s) return;
    int kp = !classic; /* Microsoft-Windows-Kernel-Process */
    if (k == ST_VOLUME) {
        sfield f[2] = {{"NtPath", 0, 0, 0, 0}, {"DosPath", 0, 0, 0, 0}};
        state_fields(d, ev, s, f, 2);
        char nt[ETW_TSTATE_NT_MAX + 1], dos[ETW_TSTATE_DOS_MAX + 1];
        size_t nn = sfield_str(&f[0], nt, sizeof nt), dn = sfield_str(&f[1], dos, sizeof dos);
        if (nn <= ETW_TSTATE_NT_MAX && dn <= ETW_TSTATE_DOS_MAX) etw_tstate_volume_set(d->ts, nt, nn, dos, dn);
        return;
    }
    sfield f[2] = {{kp ? "ProcessID" : "ProcessId", 0, 0, 0, 0}, {kp ? "ImageName" : "ImageFileName", 0, 0, 0, 0}};
    state_fields(d, ev, s, f, k == ST_PROC_END ? 1 : 2);
    if (!f[0].found) return;
    uint32_t pid = sfield_u32(&f[0]);
    if (k == ST_PROC_END) {
        etw_tstate_process_end(d->ts, pid);
        return;
    }
    char name[256];
    size_t n = sfield_str(&f[1], name, sizeof name);
    const char *b = name;
    if (kp) /* a full path: the kernel's ImageFileName is the file name */
        for (size_t i = 0; i < n; i++)
            if (name[i] == '\\') b = name + i + 1;
    n -= (size_t)(b - name);
    etw_tstate_process_set(d->ts, pid, b, n);
}

int etw_decoder_process_name(const etw_decoder *d, const etw_event *ev, const etw_schema *s, uint32_t pid,
                             const char **name, size_t *len) {
    if (!d || !name || !len) return 0;
    /* the End event itself still names its process */
    int ending = ev && s && state_kind(ev, is_classic(ev)) == ST_PROC_END;
    return etw_tstate_process(d->ts, pid, ending, name, len);
}

int etw_decoder_drive_path(const etw_decoder *d, const char *path, size_t len, const char **dos,
                           size_t *dos_len, size_t *nt_len) {
    if (!d || !etw_tstate_has_volumes(d->ts)) return 0;
    return etw_tstate_drive_path(d->ts, path, len, dos, dos_len, nt_len);
}

int etw_decoder_value_drive_path(const etw_decoder *d, const etw_value *v, char *buf, size_t cap, size_t *len) {
    if (!d || !v || !buf || !len || !etw_tstate_has_volumes(d->ts) || v->kind != ETW_VALUE_SCALAR || !v->data ||
        v->depth || v->in_array)
        return 0;
    char path[ETW_DRIVE_PATH_MAX];
    size_t n = 0;
    if (v->in_type == ETW_INTYPE_UNICODESTRING) {
        size_t units = v->size / 2;
        if (!units || v->data[0] != '\\' || v->data[1]) return 0; /* an NT path starts with a backslash */
        while (units && !v->data[2 * units - 2] && !v->data[2 * units - 1]) units--;
        if (units > sizeof path / 3) return 0; /* the UTF-8 of a unit takes at most 3 bytes */
        n = etw_utf16_to_utf8(v->data, units, path);
    } else if (v->in_type == ETW_INTYPE_ANSISTRING) {
        if (!v->size || v->data[0] != '\\') return 0;
        while (n < v->size && v->data[n]) n++;
        if (n > sizeof path) return 0;
        memcpy(path, v->data, n);
    } else {
        return 0;
    }
    const char *dos;
    size_t dos_len, nt_len;
    if (!etw_tstate_drive_path(d->ts, path, n, &dos, &dos_len, &nt_len)) return 0;
    if (dos_len + (n - nt_len) > cap) return 0;
    memcpy(buf, dos, dos_len);
    memcpy(buf + dos_len, path + nt_len, n - nt_len);
    *len = dos_len + (n - nt_len);
    return 1;
}

int etw_decoder_learns(const etw_decoder *d, const etw_event *ev, const etw_schema *s) {
    if (!ev) return 0;
    if (etw_metadata_event_name(ev) != NULL) return ETW_LEARN_TRACE;
    if (etw_es_is_manifest_event(ev)) return d && d->opt.no_eventsource ? 0 : ETW_LEARN_LATER;
    if (d && s && s->source == ETW_SOURCE_MOF && etw_kernel_records_state(d->kernel, s)) return ETW_LEARN_LATER;
    if (state_kind(ev, is_classic(ev)) != ST_NONE) return ETW_LEARN_LATER;
    return 0;
}

static int is_classic(const etw_event *ev) {
    return ev->form != ETW_FORM_MESSAGE &&
           (ev->form != ETW_FORM_EVENT_HEADER || (ev->flags & ETW_EVENT_FLAG_CLASSIC_HEADER));
}

etw_learn_kind etw_decoder_learn_kind(const etw_decoder *d, const etw_event *ev) {
    if (!d || !ev) return ETW_LEARN_NONE;
    if (ev->provider.data1 == ETW_METADATA_GUID_DATA1 && etw_metadata_is_metadata_event(ev) &&
        (ev->opcode == ETW_METADATA_OPCODE_EVENT_INFO || ev->opcode == ETW_METADATA_OPCODE_MAP_INFO))
        return ETW_LEARN_AHEAD;
    if (!d->opt.no_eventsource && etw_es_is_manifest_event(ev)) return ETW_LEARN_IN_ORDER;
    /* Thread/Start, Thread/DCStart...: the kernel's thread -> process state */
    int classic = is_classic(ev);
    if (classic && etw_kernel_records_thread(d->kernel, ev)) return ETW_LEARN_IN_ORDER;
    /* process names, volume mappings */
    if (state_kind(ev, classic) != ST_NONE) return ETW_LEARN_IN_ORDER;
    return ETW_LEARN_NONE;
}

etw_status etw_decoder_learn(etw_decoder *d, const etw_event *ev) {
    if (!d || !ev) return ETW_E_INVALID_ARG;
    if (learn_metadata(d, ev)) {
        d->stats.metadata_events = etw_metadata_event_count(d->meta);
        metadata_learned(d);
        return ETW_OK;
    }
    const etw_schema *s;
    etw_status st = etw_decoder_resolve(d, ev, &s, NULL);
    return st == ETW_E_NOMEM ? st : ETW_OK;
}

etw_status etw_decoder_learn_early(etw_decoder *d, const etw_event *ev, int *stale) {
    if (stale) *stale = 0;
    if (!d || !ev) return ETW_E_INVALID_ARG;
    if (!learn_metadata(d, ev)) return etw_decoder_learn(d, ev);
    uint8_t key[ETW_DESCRIPTOR_KEY_SIZE];
    int answered = 0;
    if (etw_metadata_added_key(d->meta, key)) {
        uint32_t b = outranked_bit(key);
        answered = (d->outranked[b / 64] >> (b % 64)) & 1u;
    }
    if (stale) *stale = answered;
    d->stats.metadata_events = etw_metadata_event_count(d->meta);
    /* The answers already given change only for the new key, and only
     * where a source the record outranks (or none) gave them: then they
     * are asked again. A key nobody asked for, or a map record, changes
     * none - forgetting every built-in schema then would copy each again
     * (one copy per record, under new schema ids, for nothing). */
    if (answered) metadata_learned(d);
    return ETW_OK;
}

/* Events shown with a name and built-in fields but no payload schema: an
 * EventSource manifest chunk ("ManifestData", under the EventSource's name
 * once its manifest is known) and the MetaData records themselves. Cached
 * as schemas without properties under their source's map. */
static etw_status builtin_schema(etw_decoder *d, const etw_event *ev, etw_schema_source source,
                                 const char *provider_name, const char *event_name,
                                 const etw_schema **out) {
    /* 20 bytes with their own tag: apart from descriptor and classic keys */
    uint8_t key[ETW_CLASSIC_KEY_SIZE];
    uint8_t w = width_of(ev);
    etw_key_descriptor(key, &ev->provider, source == ETW_SOURCE_METADATA ? ev->opcode : ev->id, ev->version);
    key[ETW_DESCRIPTOR_KEY_SIZE] = BUILTIN_KEY_TAG;
    uint64_t h = etw_cache_hash(key, sizeof key);
    const etw_schema *s = etw_cache_find(d->cache, source, w, key, sizeof key, h);
    if (s) {
        d->stats.hits++;
        *out = s;
        return ETW_OK;
    }
    etw_schema draft;
    memset(&draft, 0, sizeof draft);
    draft.provider = ev->provider;
    draft.provider_name = provider_name;
    draft.event_name = event_name;
    draft.event_id = ev->id;
    draft.version = ev->version;
    draft.opcode = ev->opcode;
    draft.task = ev->task;
    etw_status st = etw_cache_insert(d->cache, source, w, key, sizeof key, h, &draft, &s, NULL);
    if (st != ETW_OK) return st;
    d->stats.schemas = etw_cache_count(d->cache);
    *out = s;
    return ETW_OK;
}

static etw_status resolve_manifest_chunk(etw_decoder *d, const etw_event *ev, const etw_schema **out) {
    if (!d->offered_any || d->last_offer_buf != ev->buffer_file_offset ||
        d->last_offer_rec != ev->record_offset) {
        d->offered_any = 1;
        d->last_offer_buf = ev->buffer_file_offset;
        d->last_offer_rec = ev->record_offset;
        etw_status s = etw_es_offer(d->es, ev);
        if (s == ETW_E_NOMEM) return s;
    }
    return builtin_schema(d, ev, ETW_SOURCE_EVENTSOURCE, etw_manifest_provider_name(d->es_set, &ev->provider),
                          "ManifestData", out);
}

/* Rule 3: a WPP record's TMF message, in the sets in the order they came. */
static etw_status resolve_wpp(etw_decoder *d, const etw_event *ev, const etw_schema **out, const char **why) {
    const etw_wpp_message *m = NULL;
    /* a record without TRACE_MESSAGE_GUID (0x0002) has no message GUID: not looked up */
    int has_guid = (ev->message_flags & 0x0002u) != 0;
    if (has_guid && d->wpp_own) m = etw_wpp_find(d->wpp_own, &ev->provider, ev->message_number);
    for (uint32_t i = 0; has_guid && !m && i < d->nwpp; i++) m = etw_wpp_find(d->wpp_sets[i], &ev->provider, ev->message_number);
    if (!m) {
        snprintf(d->why, sizeof d->why, "no schema: WPP message %u needs TMF data", ev->message_number);
        return fail(d, ETW_E_NOT_FOUND, why);
    }
    uint32_t before = etw_cache_count(d->cache);
    const char *w = NULL;
    etw_status st = etw_wpp_schema_get(d->cache, &d->alloc, m, width_of(ev), out, &w);
    if (st == ETW_OK && etw_cache_count(d->cache) != before) {
        d->stats.misses++;
        d->stats.schemas = etw_cache_count(d->cache);
        st = refs_reserve(d, (*out)->prop_count);
    } else if (st == ETW_OK) {
        d->stats.hits++;
    }
    if (st != ETW_OK) {
        *out = NULL;
        snprintf(d->why, sizeof d->why, "WPP message %u (%s): %s", ev->message_number, m->origin,
                 w ? w : etw_strerror(st));
        return fail(d, st, why);
    }
    return ETW_OK;
}

etw_status etw_decoder_add_wpp_set(etw_decoder *d, const etw_wpp_set *s) {
    if (!d || !s) return ETW_E_INVALID_ARG;
    if (d->nwpp == ETW_DECODER_MAX_WPP) return ETW_E_LIMIT;
    d->wpp_sets[d->nwpp++] = s;
    return ETW_OK;
}

static etw_status wpp_own(etw_decoder *d) {
    return d->wpp_own ? ETW_OK : etw_wpp_set_new(&d->wpp_own, &d->alloc);
}

static etw_status tmf_problem(etw_decoder *d, etw_status st) {
    if (st == ETW_OK) return st;
    etw_diag diag = {st, 0, etw_wpp_set_error(d->wpp_own)};
    report_manifest(d, &diag);
    return st;
}

etw_status etw_decoder_add_tmf(etw_decoder *d, const char *path, uint32_t *added) {
    if (!d || !path) return ETW_E_INVALID_ARG;
    etw_status st = wpp_own(d);
    if (st != ETW_OK) return st;
    return tmf_problem(d, etw_wpp_add_tmf_path(d->wpp_own, path, added));
}

etw_status etw_decoder_add_tmf_text(etw_decoder *d, const char *text, size_t len, const char *origin) {
    if (!d || (!text && len)) return ETW_E_INVALID_ARG;
    etw_status st = wpp_own(d);
    if (st != ETW_OK) return st;
    return tmf_problem(d, etw_wpp_add_tmf_text(d->wpp_own, text, len, origin));
}

uint64_t etw_decoder_epoch(const etw_decoder *d) { return d ? etw_cache_epoch(d->cache) : 0; }

etw_status etw_decoder_resolve(etw_decoder *d, const etw_event *ev, const etw_schema **out,
                               const char **why) {
    if (!d || !ev || !out) return ETW_E_INVALID_ARG;
    *out = NULL;
    d->stats.lookups++;
    etw_ext_item meta;
    if (ev->ext_count && etw_event_find_ext(ev, ETW_EXT_EVENT_SCHEMA_TL, &meta) == ETW_OK)
        return resolve_tracelogging(d, ev, &meta, out, why);
    if (!d->opt.no_eventsource && etw_es_is_manifest_event(ev)) {
        etw_status st = resolve_manifest_chunk(d, ev, out);
        if (st != ETW_OK) {
            snprintf(d->why, sizeof d->why, "EventSource manifest chunk: %s", etw_strerror(st));
            return fail(d, st, why);
        }
        return ETW_OK;
    }
    const char *meta_name = etw_metadata_event_name(ev);
    if (meta_name) {
        etw_status st = builtin_schema(d, ev, ETW_SOURCE_METADATA, ETW_METADATA_PROVIDER_NAME, meta_name, out);
        if (st != ETW_OK) {
            snprintf(d->why, sizeof d->why, "%s", etw_strerror(st));
            return fail(d, st, why);
        }
        return ETW_OK;
    }
    if (ev->form == ETW_FORM_MESSAGE) return resolve_wpp(d, ev, out, why);
    if (ev->form != ETW_FORM_EVENT_HEADER || (ev->flags & ETW_EVENT_FLAG_CLASSIC_HEADER)) {
        etw_status st = resolve_keyed(d, ev, ETW_SOURCE_KEY_CLASSIC, out, why);
        if (st == ETW_OK && (*out)->source == ETW_SOURCE_MOF) etw_kernel_observe(d->kernel, ev, *out);
        if (st == ETW_OK) observe_state(d, ev, *out, 1);
        return st;
    }
    etw_status st = resolve_keyed(d, ev, ETW_SOURCE_KEY_DESCRIPTOR, out, why);
    if (st == ETW_OK && ev->provider.data1 == 0x22fb2cd6u) observe_state(d, ev, *out, 0);
    return st;
}

etw_status etw_decoder_begin(etw_decoder *d, const etw_event *ev, const etw_schema *s,
                             etw_decode_cursor *c) {
    if (!d || !ev || !s || !c) return ETW_E_INVALID_ARG;
    return etw_decode_begin(c, s, ev, d->refs, d->refs_len);
}

etw_status etw_decoder_field_number(etw_decoder *d, const etw_event *ev, const etw_schema *s, const char *name,
                                    double *out) {
    if (!d || !ev || !name || !out) return ETW_E_INVALID_ARG;
    if (!s) return ETW_E_NOT_FOUND;
    etw_decode_cursor c;
    etw_status st = etw_decode_begin(&c, s, ev, d->refs, d->refs_len);
    if (st != ETW_OK) return st;
    etw_value v;
    while (etw_decode_next(&c, &v) == ETW_OK) {
        if (v.depth != 0 || !v.name || strcmp(v.name, name) != 0) continue;
        if (v.kind != ETW_VALUE_SCALAR) return ETW_E_UNSUPPORTED; /* a struct or an array */
        if (etw_value_is_integer(&v)) {
            int is_signed = v.in_type == ETW_INTYPE_INT8 || v.in_type == ETW_INTYPE_INT16 ||
                            v.in_type == ETW_INTYPE_INT32 || v.in_type == ETW_INTYPE_INT64;
            *out = is_signed ? (double)etw_value_i64(&v) : (double)etw_value_u64(&v);
            return ETW_OK;
        }
        if ((v.in_type == ETW_INTYPE_FLOAT && v.size == 4) || (v.in_type == ETW_INTYPE_DOUBLE && v.size == 8)) {
            double x = etw_value_double(&v);
            if (x != x) return ETW_E_UNSUPPORTED; /* NaN is no number to add up */
            *out = x;
            return ETW_OK;
        }
        return ETW_E_UNSUPPORTED;
    }
    return ETW_E_NOT_FOUND;
}

etw_status etw_decoder_provider_name(const etw_event *ev, const etw_schema *s, const char **name,
                                     size_t *len) {
    etw_ext_item it;
    if (ev && ev->ext_count && etw_event_find_ext(ev, ETW_EXT_PROV_TRAITS, &it) == ETW_OK &&
        etw_tl_provider_name(it.data, it.size, name, len) == ETW_OK && *len > 0)
        return ETW_OK;
    if (s && s->provider_name) {
        *name = s->provider_name;
        *len = strlen(s->provider_name);
        return ETW_OK;
    }
    return ETW_E_NOT_FOUND;
}

void etw_decoder_event_ids(const etw_decoder *d, const etw_event *ev, const etw_schema *s, uint32_t *pid,
                           uint32_t *tid) {
    if (!ev || !pid || !tid) return;
    if (!d || !s || s->source != ETW_SOURCE_MOF) {
        *pid = ev->pid;
        *tid = ev->tid;
        /* manifest providers that name their process in the payload */
        if (s) etw_subject_ids(s, ev, pid, tid);
        return;
    }
    etw_kernel_ids(d->kernel, ev, s, pid, tid);
}

/* The plan of s for ev's pointer width (etw_decode_plan), memoized per
 * schema of this decoder's cache: NULL when the payload needs the flat
 * walk (or s is not one the memo may keep). */
static const etw_decode_plan_t *payload_plan(etw_decoder *d, const etw_event *ev, const etw_schema *s) {
    /* where etw_decode_begin refuses to walk, flat_walk's own checks */
    if ((s->prop_count && (!s->props || d->refs_len < s->prop_count)) || (!ev->user_data && ev->user_data_len))
        return NULL;
    /* the width flat_walk uses */
    uint8_t ptr = ev->pointer_size == 4 || ev->pointer_size == 8 ? ev->pointer_size : s->pointer_size == 4 ? 4 : 8;
    plan_memo *m = &d->plans[s->id & (PLAN_MEMO_SLOTS - 1u)];
    if (m->s != s || m->id != s->id) {
        /* a schema of the cache, which never changes while the decoder
         * lives: not TraceLogging's (evicted), nor one made by the caller */
        if (s->source == ETW_SOURCE_TRACELOGGING || etw_cache_get(d->cache, s->id) != s) return NULL;
        m->s = s;
        m->id = s->id;
        m->state[0] = m->state[1] = PLAN_UNSET;
    }
    int w = ptr == 8;
    if (m->state[w] == PLAN_UNSET) m->state[w] = etw_decode_plan(s, ptr, &m->plan[w]) ? PLAN_SET : PLAN_NONE;
    return m->state[w] == PLAN_SET ? &m->plan[w] : NULL;
}

const char *etw_decoder_payload_problem(etw_decoder *d, const etw_event *ev, const etw_schema *s,
                                        uint32_t trailing) {
    if (!d || !ev || !s) return NULL;
    if (trailing == ETW_PAYLOAD_WALK) {
        const etw_decode_plan_t *pl = payload_plan(d, ev, s);
        if (pl) trailing = etw_decode_plan_trailing(pl, ev->user_data, ev->user_data_len);
    }
    /* most payloads are flat scalars: their end without making the values */
    if (trailing == ETW_PAYLOAD_WALK && !etw_decode_walk_trailing(s, ev, d->refs_len, &trailing)) {
        etw_decode_cursor c;
        etw_value v;
        trailing = 0;
        if (etw_decode_begin(&c, s, ev, d->refs, d->refs_len) == ETW_OK) {
            while (etw_decode_next(&c, &v) == ETW_OK) {
            }
            trailing = etw_decode_remaining(&c);
        }
    }
    if (s->source == ETW_SOURCE_MOF) return etw_kernel_payload_problem(d->kernel, ev, s, trailing);
    /* MetaData records and EventSource manifest chunks: their payload is a
     * schema, which the decoder reads, not fields */
    if (!s->prop_count && etw_decoder_learn_kind(d, ev) != ETW_LEARN_NONE) return NULL;
    if (!trailing || trailing > ev->user_data_len) return NULL;
    /* the kernel's wording, with the event's name and the schema's version */
    const char *name = s->event_name ? s->event_name : "the event";
    if (!s->top_count)
        snprintf(d->problem, sizeof d->problem, "no fields in the schema of %s v%u: %u payload bytes not decoded",
                 name, (unsigned)s->version, trailing);
    else
        snprintf(d->problem, sizeof d->problem, "%u payload bytes after the last field of %s v%u", trailing, name,
                 (unsigned)s->version);
    return d->problem;
}

size_t etw_decoder_state_bytes(const etw_decoder *d) {
    return d ? etw_kernel_state_bytes(d->kernel) + etw_tstate_bytes(d->ts) : 0;
}

etw_status etw_decoder_add_source(etw_decoder *d, const etw_source *src) {
    if (!d || !src || !src->resolve) return ETW_E_INVALID_ARG;
    if (d->nsources == MAX_SOURCES) return ETW_E_LIMIT;
    d->sources[d->nsources++] = *src;
    etw_cache_miss_clear(d->cache);
    d->keys_gen0 += (uint64_t)1 << 32; /* the remembered answers asked fewer sources */
    return ETW_OK;
}

void etw_decoder_scratch(etw_decoder *d, uint64_t **refs, size_t *len) {
    *refs = d->refs;
    *len = d->refs_len;
}
