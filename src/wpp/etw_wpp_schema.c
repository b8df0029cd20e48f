/* etw_wpp_schema.c - a TMF message as an etw_schema (etw_wpp_schema.h). */
#include "etw_wpp_schema.h"

#include <stdlib.h>
#include <string.h>

#include "../common/etw_alloc.h"
#include "etw_wpp_types.h"

void etw_wpp_key(uint8_t out[ETW_WPP_KEY_SIZE], const etw_guid *g, uint16_t number) {
    etw_key_descriptor_guid(out, g);
    out[16] = (uint8_t)number;
    out[17] = (uint8_t)(number >> 8);
    out[18] = ETW_WPP_KEY_TAG;
}

static int cmp_entry(const void *a, const void *b) {
    const etw_map_entry *x = a, *y = b;
    return x->value < y->value ? -1 : x->value > y->value;
}

/* TRACE_LEVEL_* names (evntrace.h) -> level numbers. */
static uint8_t level_of(const char *s) {
    static const char *const names[] = {"TRACE_LEVEL_NONE", "TRACE_LEVEL_CRITICAL", "TRACE_LEVEL_ERROR",
                                        "TRACE_LEVEL_WARNING", "TRACE_LEVEL_INFORMATION",
                                        "TRACE_LEVEL_VERBOSE"};
    for (uint8_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (strcmp(s, names[i]) == 0) return i;
    return 0;
}

etw_status etw_wpp_schema_get(etw_cache *c, const etw_allocator *al, const etw_wpp_message *m,
                              uint8_t ptr_size, const etw_schema **out, const char **why) {
    uint8_t key[ETW_WPP_KEY_SIZE];
    etw_wpp_key(key, &m->guid, m->number);
    uint64_t h = etw_cache_hash(key, sizeof key);
    const etw_schema *s = etw_cache_find(c, ETW_SOURCE_WPP, ptr_size, key, sizeof key, h);
    if (s) {
        *out = s;
        return ETW_OK;
    }
    /* fields up to the first argument of an unknown type (its size is unknown) */
    uint16_t nprops = m->unknown_arg ? (uint16_t)(m->unknown_arg - 1) : m->argc;
    size_t nentries = 0;
    for (uint16_t i = 0; i < nprops; i++) nentries += m->args[i].list_count;
    etw_property *props = nprops ? etw_calloc(al, nprops, sizeof *props) : NULL;
    etw_map *maps = nprops ? etw_calloc(al, nprops, sizeof *maps) : NULL;
    etw_map_entry *entries = nentries ? etw_calloc(al, nentries, sizeof *entries) : NULL;
    etw_status st = ETW_OK;
    if ((nprops && (!props || !maps)) || (nentries && !entries)) st = ETW_E_NOMEM;
    size_t e = 0;
    for (uint16_t i = 0; st == ETW_OK && i < nprops; i++) {
        const etw_wpp_arg *a = &m->args[i];
        const etw_wpp_type_info *ti = etw_wpp_type_get(a->type);
        etw_property *p = &props[i];
        p->name = a->name[0] ? a->name : a->type_name;
        p->in_type = ti->in_type;
        p->out_type = ti->out_type;
        p->count = 1;
        if (a->list_count && (ti->kind == WPP_K_LIST || ti->kind == WPP_K_SET)) {
            etw_map *mp = &maps[i];
            mp->name = a->type_name;
            mp->flags = ti->kind == WPP_K_LIST ? ETW_MAP_VALUEMAP : ETW_MAP_BITMAP;
            mp->entries = entries + e;
            uint32_t k = 0;
            for (uint32_t j = 0; j < a->list_count; j++) {
                uint64_t v = a->list_values[j];
                int dup = 0; /* a repeated value keeps its first name */
                for (uint32_t q = 0; q < k; q++) dup |= entries[e + q].value == v;
                if (dup || (ti->kind == WPP_K_SET && !v)) continue;
                entries[e + k].value = v;
                entries[e + k].name = a->list_names[j];
                k++;
            }
            qsort(entries + e, k, sizeof *entries, cmp_entry);
            mp->count = k;
            e += a->list_count;
            if (k) p->map = mp;
        }
    }
    if (st == ETW_OK) {
        etw_schema draft;
        memset(&draft, 0, sizeof draft);
        draft.provider = m->guid;
        draft.provider_name = m->component[0] ? m->component : NULL;
        draft.event_name = m->tag;
        draft.event_id = m->number;
        draft.level = level_of(m->level);
        draft.prop_count = nprops;
        draft.top_count = nprops;
        draft.props = props;
        draft.wpp = m;
        st = etw_cache_insert(c, ETW_SOURCE_WPP, ptr_size, key, sizeof key, h, &draft, out, why);
    }
    etw_free(al, props);
    etw_free(al, maps);
    etw_free(al, entries);
    return st;
}
