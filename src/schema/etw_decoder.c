/* etw_decoder.c - which schema decodes this event? The dispatch rules of
 * include/etwdecode/etw_decoder.h over the cache and the sources. */
#include "etwdecode/etw_decoder.h"

#include <stdio.h>
#include <string.h>

#include "../common/etw_alloc.h"
#include "../source/etw_tracelogging.h"
#include "etw_cache.h"
#include "etw_source.h"
#include "etwdecode/etw_traits.h"

/* Sources a decoder can hold (manifest, EventSource, metadata, MOF). */
#define MAX_SOURCES 8

struct etw_decoder {
    etw_allocator alloc;
    etw_cache *cache;
    etw_tl_scratch tl;
    etw_source sources[MAX_SOURCES];
    uint32_t nsources;
    uint64_t *refs;      /* count/length scratch for the cursor */
    size_t refs_len;
    etw_decoder_stats stats;
    char why[160];
};

etw_status etw_decoder_new(etw_decoder **out, const etw_decoder_options *opt) {
    if (!out) return ETW_E_INVALID_ARG;
    *out = NULL;
    etw_allocator a = etw_allocator_resolve(opt ? opt->allocator : NULL);
    etw_decoder *d = etw_calloc(&a, 1, sizeof *d);
    if (!d) return ETW_E_NOMEM;
    d->alloc = a;
    etw_status s = etw_cache_new(&d->cache, &a);
    if (s != ETW_OK) {
        etw_free(&a, d);
        return s;
    }
    etw_tl_scratch_init(&d->tl, &a);
    *out = d;
    return ETW_OK;
}

void etw_decoder_free(etw_decoder *d) {
    if (!d) return;
    etw_allocator a = d->alloc;
    etw_tl_scratch_free(&d->tl);
    etw_cache_free(d->cache);
    etw_free(&a, d->refs);
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
    d->stats.misses++;
    etw_schema draft;
    const char *reason = NULL;
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
        snprintf(d->why, sizeof d->why, "bad TraceLogging metadata: %s",
                 reason ? reason : etw_strerror(st));
        return fail(d, st, why);
    }
    d->stats.schemas = etw_cache_count(d->cache);
    *out = s;
    return ETW_OK;
}

/* Rules 2 and 4: keyed lookups in the maps of the sources that answer to
 * this kind of key, in precedence order, then the sources themselves. */
static etw_status resolve_keyed(etw_decoder *d, const etw_event *ev, etw_source_key kind,
                                const etw_schema **out, const char **why) {
    uint8_t key[ETW_DESCRIPTOR_KEY_SIZE];
    uint8_t w = width_of(ev);
    int classic = kind == ETW_SOURCE_KEY_CLASSIC;
    etw_key_descriptor(key, &ev->provider, classic ? ev->opcode : ev->id, ev->version);
    /* The two key kinds share a layout; keep them apart in the negative
     * cache by the (otherwise unused) high id byte of classic keys. */
    if (classic) key[17] = 0xFF;
    uint64_t h = etw_cache_hash(key, sizeof key);
    for (uint32_t i = 0; i < d->nsources; i++) {
        if (d->sources[i].key != kind) continue;
        const etw_schema *s = etw_cache_find(d->cache, d->sources[i].kind, w, key, sizeof key, h);
        if (s) {
            d->stats.hits++;
            *out = s;
            return ETW_OK;
        }
    }
    if (etw_cache_miss_known(d->cache, key, sizeof key, h)) {
        d->stats.negative_hits++;
    } else {
        d->stats.misses++;
        for (uint32_t i = 0; i < d->nsources; i++) {
            etw_source *src = &d->sources[i];
            if (src->key != kind) continue;
            const etw_schema *s = NULL;
            const char *reason = NULL;
            etw_status st = src->resolve(src->ctx, d->cache, ev, key, sizeof key, h, &s, &reason);
            if (st == ETW_OK && (st = refs_reserve(d, s->prop_count)) == ETW_OK) {
                d->stats.schemas = etw_cache_count(d->cache);
                *out = s;
                return ETW_OK;
            }
            if (st != ETW_E_NOT_FOUND) {
                snprintf(d->why, sizeof d->why, "bad schema: %s", reason ? reason : etw_strerror(st));
                return fail(d, st, why);
            }
        }
        etw_cache_miss_note(d->cache, key, sizeof key, h);
    }
    char g[ETW_GUID_STRING_SIZE];
    etw_guid_format(&ev->provider, g);
    if (classic)
        snprintf(d->why, sizeof d->why, "no schema: no MOF class for event class %s, opcode %u, version %u", g,
                 ev->opcode, ev->version);
    else
        snprintf(d->why, sizeof d->why, "no schema: manifest not found for provider %s, id %u, version %u", g,
                 ev->id, ev->version);
    return fail(d, ETW_E_NOT_FOUND, why);
}

etw_status etw_decoder_resolve(etw_decoder *d, const etw_event *ev, const etw_schema **out,
                               const char **why) {
    if (!d || !ev || !out) return ETW_E_INVALID_ARG;
    *out = NULL;
    d->stats.lookups++;
    etw_ext_item meta;
    if (ev->ext_count && etw_event_find_ext(ev, ETW_EXT_EVENT_SCHEMA_TL, &meta) == ETW_OK)
        return resolve_tracelogging(d, ev, &meta, out, why);
    if (ev->form == ETW_FORM_MESSAGE) {
        snprintf(d->why, sizeof d->why, "no schema: WPP message %u needs TMF data", ev->message_number);
        return fail(d, ETW_E_NOT_FOUND, why);
    }
    if (ev->form != ETW_FORM_EVENT_HEADER || (ev->flags & ETW_EVENT_FLAG_CLASSIC_HEADER))
        return resolve_keyed(d, ev, ETW_SOURCE_KEY_CLASSIC, out, why);
    return resolve_keyed(d, ev, ETW_SOURCE_KEY_DESCRIPTOR, out, why);
}

etw_status etw_decoder_begin(etw_decoder *d, const etw_event *ev, const etw_schema *s,
                             etw_decode_cursor *c) {
    if (!d || !ev || !s || !c) return ETW_E_INVALID_ARG;
    return etw_decode_begin(c, s, ev, d->refs, d->refs_len);
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

etw_status etw_decoder_add_source(etw_decoder *d, const etw_source *src) {
    if (!d || !src || !src->resolve) return ETW_E_INVALID_ARG;
    if (d->nsources == MAX_SOURCES) return ETW_E_LIMIT;
    d->sources[d->nsources++] = *src;
    etw_cache_miss_clear(d->cache);
    return ETW_OK;
}

void etw_decoder_scratch(etw_decoder *d, uint64_t **refs, size_t *len) {
    *refs = d->refs;
    *len = d->refs_len;
}
