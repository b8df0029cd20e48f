/* etw_manifest_strings.c - name tables and string tables of a manifest:
 * $(string.X) references and the display names of tasks and opcodes.
 * (see etw_manifest_internal.h for how the manifest source is split). */
#define XXH_INLINE_ALL
#include <xxhash.h>

#include "etw_manifest_internal.h"

static uint32_t nt_hash(uint64_t seed, uint32_t scope, const char *name, size_t len) {
    return (uint32_t)XXH3_64bits_withSeed(name, len, seed ^ ((uint64_t)scope * UINT64_C(0x9E3779B97F4A7C15)));
}

/* Empty the table and make room for n entries at load <= 1/2. */
int etw_mf_nt_reset(nametab *t, const etw_allocator *al, uint32_t n) {
    uint64_t need = (uint64_t)n * 2 + 2;
    if (!t->s || need > (uint64_t)t->mask + 1) {
        uint64_t cap = 16;
        while (cap < need) cap <<= 1;
        if (cap > ((uint64_t)1 << 31)) return 0;
        nt_slot *s = etw_calloc(al, (size_t)cap, sizeof *s);
        if (!s) return 0;
        etw_free(al, t->s);
        t->s = s;
        t->mask = (uint32_t)cap - 1;
        t->gen = 1;
        return 1;
    }
    if (++t->gen == 0) { /* wrapped: clear for real */
        memset(t->s, 0, ((size_t)t->mask + 1) * sizeof *t->s);
        t->gen = 1;
    }
    return 1;
}

void etw_mf_nt_free(nametab *t, const etw_allocator *al) {
    etw_free(al, t->s);
    t->s = NULL;
    t->mask = 0;
}

/* Insert or overwrite; returns the previous value + 1, or 0 when new. The
 * table must have room (nt_reset with the total count). */
uint32_t etw_mf_nt_put(nametab *t, uint64_t seed, uint32_t scope, const char *name, size_t len,
                       uint32_t value) {
    uint32_t h = nt_hash(seed, scope, name, len);
    for (uint32_t i = h & t->mask;; i = (i + 1) & t->mask) {
        nt_slot *s = &t->s[i];
        if (s->gen != t->gen) {
            s->name = name;
            s->len = len;
            s->scope = scope;
            s->value = value;
            s->gen = t->gen;
            s->hash = h;
            return 0;
        }
        if (s->hash == h && s->scope == scope && s->len == len && memcmp(s->name, name, len) == 0) {
            uint32_t old = s->value;
            s->value = value;
            return old + 1;
        }
    }
}

int etw_mf_nt_get(const nametab *t, uint64_t seed, uint32_t scope, const char *name, size_t len,
                  uint32_t *value) {
    if (!t->s) return 0;
    uint32_t h = nt_hash(seed, scope, name, len);
    for (uint32_t i = h & t->mask;; i = (i + 1) & t->mask) {
        const nt_slot *s = &t->s[i];
        if (s->gen != t->gen) return 0;
        if (s->hash == h && s->scope == scope && s->len == len && memcmp(s->name, name, len) == 0) {
            *value = s->value;
            return 1;
        }
    }
}

/* Resolve every $(string.ID) of s through the string table. A reference
 * that does not resolve keeps its text, sets *missing and is counted for
 * the document's warning (line: where s was written). Returns s itself
 * when it has none; NULL on NOMEM. */
const char *etw_mf_resolve_text(loader *L, const char *s, uint32_t line, int *missing) {
    *missing = 0;
    if (!s || L->literal_text || !strstr(s, "$(")) return s;
    static const char pre[] = "$(string.";
    const size_t pl = sizeof pre - 1;
    size_t total = 0;
    for (int pass = 0; pass < 2; pass++) {
        char *out = NULL;
        if (pass == 1) {
            out = etw_mf_ar_alloc(&L->doc->ar, total + 1);
            if (!out) return NULL;
        }
        size_t o = 0;
        const char *p = s;
        while (*p) {
            const char *q = strstr(p, pre);
            const char *close = q ? strchr(q + pl, ')') : NULL;
            if (!q || !close) {
                size_t n = strlen(p);
                if (out) memcpy(out + o, p, n);
                o += n;
                break;
            }
            size_t lit = (size_t)(q - p);
            if (out) memcpy(out + o, p, lit);
            o += lit;
            uint32_t idx;
            const char *rep;
            size_t rl;
            if (etw_mf_nt_get(&L->strtab, L->m->seed, 0, q + pl, (size_t)(close - (q + pl)), &idx)) {
                rep = VAT(p_string, &L->strings, idx).value;
                rl = strlen(rep);
            } else {
                rep = q;
                rl = (size_t)(close + 1 - q);
                if (pass == 0) {
                    *missing = 1;
                    if (L->unresolved++ == 0) {
                        L->unresolved_ref = q;
                        L->unresolved_len = rl;
                        L->unresolved_line = line;
                    }
                }
            }
            if (out) memcpy(out + o, rep, rl);
            o += rl;
            p = close + 1;
        }
        if (out) {
            out[o] = 0;
            return out;
        }
        total = o;
    }
    return NULL; /* not reached */
}

/* The name TDH shows for a task or opcode (docs/json-output.md, "event"):
 * its message resolved in the string table, without surrounding white
 * space; its name where it has no message, or one that is empty or
 * resolves nowhere. "" for an item with neither. NULL on NOMEM. */
const char *etw_mf_display_name(loader *L, const p_named *x) {
    const char *fallback = x->name ? x->name : "";
    if (!x->message) return fallback;
    int missing;
    const char *r = etw_mf_resolve_text(L, x->message, x->line, &missing);
    if (!r) return NULL;
    size_t n;
    const char *t = trim(r, &n);
    if (missing || n == 0) return fallback;
    if (t[n] == 0) return t;
    return etw_mf_ar_strndup(&L->doc->ar, t, n);
}

