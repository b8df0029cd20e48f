/* etw_manifest_template.c - value maps and templates of a manifest: map
 * entries sorted by value, templates flattened into the TDH property layout
 * with their count and length references resolved.
 * (see etw_manifest_internal.h for how the manifest source is split). */
#include <stdio.h>
#include <stdlib.h>

#include "etw_manifest_internal.h"

typedef struct ent_key {
    uint64_t value;
    uint32_t idx;
} ent_key;

static int ent_key_cmp(const void *a, const void *b) {
    const ent_key *x = a, *y = b;
    if (x->value != y->value) return x->value < y->value ? -1 : 1;
    return (x->idx > y->idx) - (x->idx < y->idx);
}

/* A map entry name: the resolved message without surrounding white space
 * (TDH returns manifest map strings with a trailing space; PerfView prints
 * them without). */
static const char *map_name(loader *L, const p_mapent *e, uint64_t v) {
    int missing = 0;
    const char *r = e->message ? etw_mf_resolve_text(L, e->message, e->line, &missing) : NULL;
    if (e->message && !r) return NULL;
    if (!r || missing) { /* no message (or one that resolves nowhere): the value */
        char buf[24];
        snprintf(buf, sizeof buf, "%llu", (unsigned long long)v);
        return etw_mf_ar_strdup(&L->doc->ar, buf);
    }
    size_t n;
    const char *t = trim(r, &n);
    if (t == r && t[n] == 0) return r;
    return etw_mf_ar_strndup(&L->doc->ar, t, n);
}

int etw_mf_compile_maps(loader *L, p_provider *pp, c_map *out) {
    for (uint32_t i = 0; i < pp->maps.n; i++) {
        const p_map *pm = &VAT(p_map, &pp->maps, i);
        etw_map *m = &out[i].map;
        m->name = pm->name ? pm->name : "";
        m->flags = pm->bitmap ? ETW_MAP_BITMAP : ETW_MAP_VALUEMAP;
        m->count = 0;
        m->entries = NULL;
        if (!pm->n) continue;
        etw_map_entry *e = etw_mf_ar_alloc(&L->doc->ar, (size_t)pm->n * sizeof *e);
        ent_key *keys = etw_calloc(&L->m->al, pm->n, sizeof *keys);
        const char **names = etw_calloc(&L->m->al, pm->n, sizeof *names);
        if (!e || !keys || !names) {
            etw_free(&L->m->al, keys);
            etw_free(&L->m->al, names);
            return 0;
        }
        uint32_t k = 0;
        for (uint32_t j = 0; j < pm->n; j++) {
            const p_mapent *pe = &VAT(p_mapent, &pp->mapents, pm->first + j);
            uint64_t v;
            if (!etw_mf_parse_u64(pe->value, &v)) {
                WARN(L, ETW_E_CORRUPT, pe->line, "map %s: entry value \"%s\" is not a number; skipped",
                     m->name, nz(pe->value));
                continue;
            }
            const char *nm = map_name(L, pe, v);
            if (!nm) {
                etw_free(&L->m->al, keys);
                etw_free(&L->m->al, names);
                return 0;
            }
            keys[k].value = v;
            keys[k].idx = k;
            names[k] = nm;
            k++;
        }
        /* sorted by value; equal values keep manifest order */
        qsort(keys, k, sizeof *keys, ent_key_cmp);
        for (uint32_t j = 0; j < k; j++) {
            e[j].value = keys[j].value;
            e[j].name = names[keys[j].idx];
        }
        etw_free(&L->m->al, keys);
        etw_free(&L->m->al, names);
        m->entries = e;
        m->count = k;
    }
    return 1;
}

static int is_integer_intype(uint16_t t) {
    return (t >= ETW_INTYPE_INT8 && t <= ETW_INTYPE_UINT64) || t == ETW_INTYPE_HEXINT32 ||
           t == ETW_INTYPE_HEXINT64 || t == ETW_INTYPE_POINTER || t == ETW_INTYPE_SIZET;
}

/* Find the item a count/length name refers to: an earlier item of that name
 * at the item's level, then at each enclosing level. -1 when none. The
 * reference table holds, per (level, name), the latest item seen so far. */
static int32_t find_ref(loader *L, const p_item *items, int32_t level, const char *name, size_t len) {
    for (;;) {
        uint32_t v;
        if (etw_mf_nt_get(&L->reftab, L->m->seed, (uint32_t)(level + 1), name, len, &v)) return (int32_t)v;
        if (level < 0) return -1;
        level = items[level].parent;
    }
}

/* Resolve the count or length attribute `a` of item i (prop p). */
static void resolve_size(loader *L, const p_tmpl *t, const p_item *items, const uint32_t *pos,
                         etw_property *props, uint32_t i, int is_count) {
    const p_item *it = &items[i];
    etw_property *p = &props[pos[i]];
    const char *a = is_count ? it->count : it->length;
    const char *what = is_count ? "count" : "length";
    size_t len;
    const char *s = trim(a, &len);
    if (len == 0) return;
    if (s[0] >= '0' && s[0] <= '9') {
        uint64_t v;
        if (!etw_mf_parse_u64(s, &v) || v > 0xFFFF) {
            WARN(L, ETW_E_CORRUPT, it->line, "template %s: %s \"%s\" of %s is not a number up to 65535; ignored",
                 nz(t->tid), what, a, p->name);
            return;
        }
        /* mc.exe compiles a count of 0 and a string's length of 0 as none
         * (its blob has no flag: one value, a string up to its NUL), and a
         * SID's length as none (a SID gives its own size): the
         * event-trace-kit Large manifest and blob */
        int is_string = p->in_type == ETW_INTYPE_UNICODESTRING || p->in_type == ETW_INTYPE_ANSISTRING;
        if ((v == 0 && (is_count || is_string)) || (!is_count && p->in_type == ETW_INTYPE_SID)) return;
        if (is_count) {
            p->flags |= ETW_PROP_COUNT_FIXED;
            p->count = (uint16_t)v;
        } else {
            p->flags |= ETW_PROP_LENGTH_FIXED;
            p->length = (uint16_t)v;
        }
        return;
    }
    int32_t j = find_ref(L, items, it->parent, s, len);
    if (j < 0) {
        WARN(L, ETW_E_NOT_FOUND, it->line,
             "template %s: %s \"%s\" of %s names no earlier data item; the %s is unknown", nz(t->tid),
             what, a, p->name, what);
        return;
    }
    const etw_property *r = &props[pos[j]];
    if ((r->flags & (ETW_PROP_STRUCT | ETW_PROP_ARRAY_MASK)) || !is_integer_intype(r->in_type)) {
        WARN(L, ETW_E_UNSUPPORTED, it->line,
             "template %s: %s \"%s\" of %s is not a scalar integer; the %s is unknown", nz(t->tid), what,
             a, p->name, what);
        return;
    }
    if (is_count) {
        p->flags |= ETW_PROP_COUNT_REF;
        p->count = (uint16_t)pos[j];
    } else {
        p->flags |= ETW_PROP_LENGTH_REF;
        p->length = (uint16_t)pos[j];
    }
}

/* Flatten one template into the TDH tree layout. Returns 0 on NOMEM. */
int etw_mf_compile_template(loader *L, p_provider *pp, const p_tmpl *t, const c_map *maps,
                            c_tmpl *out) {
    out->valid = 0;
    out->props = NULL;
    out->prop_count = out->top_count = 0;
    if (t->too_deep) {
        WARN(L, ETW_E_LIMIT, t->line, "template %s nests structs deeper than %d levels; skipped", nz(t->tid),
             MAX_STRUCT_DEPTH);
        return 1;
    }
    if (t->too_big) {
        WARN(L, ETW_E_LIMIT, t->line, "template %s has more than %u items; skipped", nz(t->tid),
             MAX_TEMPLATE_ITEMS);
        return 1;
    }
    uint32_t n = t->n;
    out->valid = 1;
    if (n == 0) return 1;
    const p_item *items = &VAT(p_item, &pp->items, t->first);
    const etw_allocator *al = &L->m->al;

    /* scratch: pos[n], order[n], child lists */
    uint32_t *scratch = etw_calloc(al, (size_t)n * 4, sizeof(uint32_t));
    if (!scratch) return 0;
    uint32_t *pos = scratch, *order = scratch + n, *first_child = scratch + 2 * (size_t)n,
             *next_sib = scratch + 3 * (size_t)n; /* child lists hold index + 1 */
    uint32_t *last_child = pos;                   /* reused before pos is filled */
    uint32_t placed = 0;
    for (uint32_t i = 0; i < n; i++) {
        int32_t par = items[i].parent;
        if (par < 0) {
            order[placed++] = i;
        } else {
            if (last_child[par]) next_sib[last_child[par] - 1] = i + 1;
            else first_child[par] = i + 1;
            last_child[par] = i + 1;
        }
    }
    uint32_t top = placed;
    etw_property *props = etw_mf_ar_alloc(&L->doc->ar, (size_t)n * sizeof *props);
    if (!props) {
        etw_free(al, scratch);
        return 0;
    }
    memset(props, 0, (size_t)n * sizeof *props);
    /* breadth first: members of each struct right after everything placed so far */
    for (uint32_t k = 0; k < placed; k++) {
        uint32_t i = order[k];
        pos[i] = k;
        if (!items[i].is_struct) continue;
        props[k].flags = ETW_PROP_STRUCT;
        props[k].struct_first = (uint16_t)placed;
        for (uint32_t c = first_child[i]; c; c = next_sib[c - 1]) order[placed++] = c - 1;
        props[k].struct_count = (uint16_t)(placed - props[k].struct_first);
    }
    if (placed != n) { /* cannot happen: every parent is a struct placed before its members */
        etw_free(al, scratch);
        out->valid = 0;
        return 1;
    }

    /* types, names, maps */
    for (uint32_t i = 0; i < n; i++) {
        const p_item *it = &items[i];
        etw_property *p = &props[pos[i]];
        if (it->name && *it->name) {
            p->name = it->name;
        } else {
            char buf[32];
            snprintf(buf, sizeof buf, "Field%u", (unsigned)(i + 1));
            p->name = etw_mf_ar_strdup(&L->doc->ar, buf);
            if (!p->name) {
                etw_free(al, scratch);
                return 0;
            }
            WARN(L, ETW_E_CORRUPT, it->line, "template %s: item %u has no name; called %s", nz(t->tid),
                 (unsigned)(i + 1), p->name);
        }
        if (it->is_struct) continue;
        uint16_t implied = 0;
        p->in_type = etw_mf_intype(it->in, &implied);
        if (!p->in_type && !L->warned_in) {
            L->warned_in = 1;
            WARN(L, ETW_E_UNSUPPORTED, it->line,
                 "provider %s: unknown inType \"%s\" (template %s, %s); such properties are undecodable "
                 "(reported once per provider)",
                 nz(pp->name), nz(it->in), nz(t->tid), p->name);
        }
        p->out_type = implied;
        if (it->out) {
            uint16_t o;
            if (etw_mf_outtype(it->out, &o)) {
                p->out_type = o;
            } else if (!L->warned_out) {
                L->warned_out = 1;
                WARN(L, ETW_E_UNSUPPORTED, it->line,
                     "provider %s: unknown outType \"%s\" (template %s, %s); the in-type's default is used "
                     "(reported once per provider)",
                     nz(pp->name), it->out, nz(t->tid), p->name);
            }
        }
        if (it->map) {
            size_t ml;
            const char *mn = trim(it->map, &ml);
            uint32_t mi;
            if (etw_mf_nt_get(&L->names, L->m->seed, S_MAP, mn, ml, &mi)) {
                p->map = &maps[mi].map;
            } else {
                WARN(L, ETW_E_NOT_FOUND, it->line, "template %s: %s uses map \"%s\", which is not defined",
                     nz(t->tid), p->name, it->map);
            }
        }
    }

    /* count and length references, in document order */
    if (!etw_mf_nt_reset(&L->reftab, al, n)) {
        etw_free(al, scratch);
        return 0;
    }
    for (uint32_t i = 0; i < n; i++) {
        const p_item *it = &items[i];
        etw_property *p = &props[pos[i]];
        if (it->count) resolve_size(L, t, items, pos, props, i, 1);
        if (it->length && !it->is_struct) resolve_size(L, t, items, pos, props, i, 0);
        if (p->in_type == ETW_INTYPE_BINARY && !it->is_struct &&
            !(p->flags & (ETW_PROP_LENGTH_REF | ETW_PROP_LENGTH_FIXED)) && p->out_type != ETW_OUTTYPE_IPV6 &&
            !it->length)
            WARN(L, ETW_E_UNSUPPORTED, it->line, "template %s: binary %s has no length; it is undecodable",
                 nz(t->tid), p->name);
        if (it->name && *it->name) {
            size_t nl;
            const char *nm = trim(it->name, &nl);
            etw_mf_nt_put(&L->reftab, L->m->seed, (uint32_t)(it->parent + 1), nm, nl, i);
        }
    }
    etw_free(al, scratch);
    out->props = props;
    out->prop_count = (uint16_t)n;
    out->top_count = (uint16_t)top;
    return 1;
}

