/* etw_names.c - bounded, unique names for cached schemas (see etw_names.h).
 *
 * One pass puts every property's (cut) name in a hash set keyed by (sibling
 * group, name); a name already there marks a duplicate. Only when there is
 * one, a second pass gives each duplicate the first free "name_N", resuming
 * for each name where its previous duplicate stopped, so the work is linear
 * in the properties plus the names the suffixes collide with. The set is
 * open addressing (load <= 1/2) on XXH3 mixed with a salt from the set's
 * address, so crafted names cannot pile into one probe run. */
#include "schema/etw_names.h"

#include <stdint.h>
#include <string.h>

#include "common/etw_alloc.h"
#include "schema/etw_cache.h"

#define NO_GROUP 0xFFFFFFFFu
#define DUP_FLAG 0x80000000u
#define FIB64 UINT64_C(0x9E3779B97F4A7C15)
#define STACK_SLOTS 64u

size_t etw_name_cut_len(const char *s, size_t max) {
    size_t n = 0;
    while (n <= max && s[n]) n++;
    if (n <= max) return n;
    n = max;
    while (n > 0 && ((unsigned char)s[n] & 0xC0) == 0x80) n--;
    return n;
}

typedef struct name_slot {
    uint64_t hash;
    const char *name; /* NULL: empty */
    uint32_t len;
    uint32_t group;
    uint32_t next_n; /* the suffix the next duplicate of this name tries first */
} name_slot;

typedef struct name_set {
    name_slot *v;
    size_t mask;
    unsigned shift;
    uint64_t salt;
} name_set;

static uint64_t name_hash(uint32_t group, const char *s, size_t n) {
    return etw_cache_hash(s, n) ^ ((uint64_t)group * FIB64);
}

/* The slot holding (group, s[0..n)), or the empty slot where it would go. */
static name_slot *set_find(const name_set *t, uint64_t h, uint32_t group, const char *s, size_t n) {
    size_t i = (size_t)(((h ^ t->salt) * FIB64) >> t->shift);
    for (;;) {
        name_slot *e = &t->v[i];
        if (!e->name) return e;
        if (e->hash == h && e->group == group && e->len == n && memcmp(e->name, s, n) == 0) return e;
        i = (i + 1) & t->mask;
    }
}

static void slot_fill(name_slot *e, uint64_t h, uint32_t group, const char *s, size_t n) {
    e->hash = h;
    e->name = s;
    e->len = (uint32_t)n;
    e->group = group;
    e->next_n = 2;
}

static size_t put_u32(char *o, uint32_t v) {
    char d[10];
    size_t n = 0;
    do {
        d[n++] = (char)('0' + v % 10);
        v /= 10;
    } while (v);
    for (size_t i = 0; i < n; i++) o[i] = d[n - 1 - i];
    return n;
}

void etw_names_plan_free(etw_name_plan *plan, const etw_allocator *al) {
    if (!plan) return;
    etw_free(al, (void *)plan->names);
    etw_free(al, plan->buf);
    plan->names = NULL;
    plan->buf = NULL;
}

etw_status etw_names_plan(const etw_schema *d, const etw_allocator *al, etw_name_plan *plan) {
    plan->names = NULL;
    plan->buf = NULL;
    uint32_t n = d->prop_count;
    if (n < 2) return ETW_OK;

    /* room: the names and their renames at load <= 1/2 */
    size_t cap = 16;
    unsigned bits = 4;
    while (cap / 4 < n) {
        cap *= 2;
        bits++;
    }
    name_slot stack_slots[STACK_SLOTS];
    uint32_t stack_groups[STACK_SLOTS / 4];
    name_slot *slots = cap <= STACK_SLOTS ? stack_slots : etw_calloc(al, cap, sizeof *slots);
    uint32_t *grp = n <= STACK_SLOTS / 4 ? stack_groups : etw_calloc(al, n, sizeof *grp);
    etw_status st = ETW_OK;
    if (!slots || !grp) {
        st = ETW_E_NOMEM;
        goto done;
    }
    if (slots == stack_slots) memset(stack_slots, 0, sizeof stack_slots);
    name_set t = {slots, cap - 1, 64u - bits, (uint64_t)(uintptr_t)slots * FIB64};

    /* sibling groups: 0 for the top level, i + 1 for the members of struct i
     * (a property reached twice keeps its first group; validation already
     * refused two parents among the properties the decoder reaches) */
    for (uint32_t i = 0; i < n; i++) grp[i] = i < d->top_count ? 0 : NO_GROUP;
    for (uint32_t i = 0; i < n; i++) {
        const etw_property *p = &d->props[i];
        if (!(p->flags & ETW_PROP_STRUCT)) continue;
        for (uint32_t j = p->struct_first; j < (uint32_t)p->struct_first + p->struct_count && j < n; j++)
            if (grp[j] == NO_GROUP) grp[j] = i + 1;
    }

    /* every name once; a second one is a duplicate */
    size_t need = 0;
    for (uint32_t i = 0; i < n; i++) {
        if (grp[i] == NO_GROUP) continue;
        const char *s = d->props[i].name;
        size_t len = etw_name_cut_len(s, ETW_NAME_MAX);
        uint64_t h = name_hash(grp[i], s, len);
        name_slot *e = set_find(&t, h, grp[i], s, len);
        if (e->name) {
            grp[i] |= DUP_FLAG;
            need += len + 12; /* "_" + up to 10 digits + NUL */
        } else {
            slot_fill(e, h, grp[i], s, len);
        }
    }
    if (!need) goto done;

    plan->names = etw_calloc(al, n, sizeof *plan->names);
    plan->buf = etw_alloc(al, need);
    if (!plan->names || !plan->buf) {
        etw_names_plan_free(plan, al);
        st = ETW_E_NOMEM;
        goto done;
    }
    size_t off = 0;
    for (uint32_t i = 0; i < n; i++) {
        if (grp[i] == NO_GROUP || !(grp[i] & DUP_FLAG)) continue;
        uint32_t g = grp[i] & ~DUP_FLAG;
        const char *s = d->props[i].name;
        size_t len = etw_name_cut_len(s, ETW_NAME_MAX);
        name_slot *base = set_find(&t, name_hash(g, s, len), g, s, len);
        char *o = plan->buf + off;
        memcpy(o, s, len);
        o[len] = '_';
        for (uint32_t k = base->next_n;; k++) {
            size_t cl = len + 1 + put_u32(o + len + 1, k);
            uint64_t h = name_hash(g, o, cl);
            name_slot *e = set_find(&t, h, g, o, cl);
            if (e->name) continue; /* taken: by a sibling or an earlier rename */
            o[cl] = 0;
            slot_fill(e, h, g, o, cl);
            base->next_n = k + 1;
            plan->names[i] = o;
            off += cl + 1;
            break;
        }
    }

done:
    if (slots != stack_slots) etw_free(al, slots);
    if (grp != stack_groups) etw_free(al, grp);
    return st;
}
