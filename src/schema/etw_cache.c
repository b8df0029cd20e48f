/* etw_cache.c - the schema cache (see etw_cache.h for the why).
 *
 * Layout:
 *  - an append-only arena of blocks that never move (64 KiB blocks; a schema
 *    bigger than a quarter block gets a block of its own). Each insert deep
 *    copies the draft into ONE arena chunk: the etw_schema, its props, its
 *    maps and their entries, every string, and (for a new key) the key bytes;
 *  - twelve index maps, one per (source 1..6) x (pointer width 4, 8): open
 *    addressing with linear probing, power-of-two capacity, load <= 1/2. Each
 *    slot stores the key's 64-bit hash, so a probe compares hashes before
 *    keys and growth re-slots entries from the stored hash (no rehash);
 *  - a growable array of schema pointers indexed by id (never handed out);
 *  - a direct-mapped negative cache of 1024 slots holding keys of up to 32
 *    bytes, cleared in O(1) by bumping a generation number.
 *
 * Insert is all-or-nothing: every fallible step (map growth, id array
 * growth, the pointer sets that dedupe maps and strings, the one arena
 * chunk) happens before anything visible changes; a later failure leaves at
 * most spare map or id capacity behind, owned by the cache.
 *
 * Slot placement multiplies (hash ^ salt) by 2^64/phi and keeps the top bits
 * (Fibonacci hashing). The salt is taken from the cache's address, so with
 * ASLR a trace crafted to pile its keys into one probe run of the map has to
 * find full 64-bit XXH3 collisions instead of a few low bits.
 */
#include "schema/etw_cache.h"

#include <stdlib.h>
#include <string.h>

#include "common/etw_alloc.h"
#include "schema/etw_fixup.h"
#include "schema/etw_subject.h"
#include "schema/etw_names.h"

/* XXH3 comes from libxxhash (link -lxxhash), through its run-time x86
 * dispatcher when the library has one (xxh_x86dispatch.h is only installed
 * by builds that do, Debian's among them): it picks AVX2 or AVX-512 for long
 * keys. Measured on x86-64 against XXH_INLINE_ALL (bench/bench_cache.c):
 * equal up to 64-byte keys, where XXH3 needs no vector code and the call
 * costs ~0.2 ns, and 2-2.5x faster from 256 bytes on. The inlined copy is
 * built for the baseline target (SSE2) like the library's plain XXH3_64bits,
 * and GCC's build of its long loop is also sensitive to the input's address
 * (210-740 ns for the same 4 KiB key). Define ETW_XXH_INLINE to inline
 * instead (no library needed), ETW_XXH_NO_DISPATCH to skip the dispatcher. */
#ifdef ETW_XXH_INLINE
#define XXH_INLINE_ALL
#endif
#include <xxhash.h>
#if !defined(ETW_XXH_INLINE) && !defined(ETW_XXH_NO_DISPATCH) && defined(__has_include) && \
    (defined(__x86_64__) || defined(__i386__) || defined(_M_X64) || defined(_M_IX86))
#if __has_include(<xxh_x86dispatch.h>)
#include <xxh_x86dispatch.h> /* XXH3_64bits becomes XXH3_64bits_dispatch */
#endif
#endif

/* ---- arena --------------------------------------------------------------- */

#define ARENA_BLOCK_SIZE ((size_t)64 * 1024)
#define ARENA_BIG (ARENA_BLOCK_SIZE / 4)

typedef struct arena_block {
    struct arena_block *next;
    unsigned char *data; /* 8-aligned */
    size_t cap;
    size_t used;
} arena_block;

typedef struct arena {
    arena_block *head; /* every block, newest first */
    arena_block *cur;  /* the block small allocations bump in */
    size_t bytes;      /* the blocks' capacity, for the TraceLogging budget */
} arena;

static size_t align_up(size_t v, size_t a) { return (v + (a - 1)) & ~(a - 1); }

/* 1 when n * size does not fit a size_t (32-bit targets). */
static int mul_overflows(size_t n, size_t size) { return size && n > (size_t)-1 / size; }

static arena_block *arena_block_new(const etw_allocator *al, size_t cap) {
    size_t hdr = align_up(sizeof(arena_block), 8);
    if (cap > (size_t)-1 - hdr - 8) return NULL;
    unsigned char *raw = etw_alloc(al, hdr + 8 + cap);
    if (!raw) return NULL;
    arena_block *b = (arena_block *)(void *)raw;
    /* 8-align by address: an allocator is not required to align more. */
    uintptr_t d = (uintptr_t)(raw + hdr);
    b->data = raw + hdr + ((8 - (size_t)(d & 7u)) & 7u);
    b->cap = cap;
    b->used = 0;
    b->next = NULL;
    return b;
}

/* n bytes, 8-aligned, that never move; NULL when the allocator fails (and
 * then nothing changed). */
static void *arena_alloc(arena *ar, const etw_allocator *al, size_t n) {
    arena_block *b = ar->cur;
    if (b) {
        size_t o = align_up(b->used, 8);
        if (o <= b->cap && n <= b->cap - o) {
            b->used = o + n;
            return b->data + o;
        }
    }
    if (n > ARENA_BIG) { /* its own block; the current one keeps bumping */
        b = arena_block_new(al, n);
        if (!b) return NULL;
        b->used = n;
        b->next = ar->head;
        ar->head = b;
        ar->bytes += n;
        return b->data;
    }
    b = arena_block_new(al, ARENA_BLOCK_SIZE);
    if (!b) return NULL;
    ar->bytes += ARENA_BLOCK_SIZE;
    b->used = n;
    b->next = ar->head;
    ar->head = b;
    ar->cur = b;
    return b->data;
}

static void arena_free(arena *ar, const etw_allocator *al) {
    arena_block *b = ar->head;
    while (b) {
        arena_block *next = b->next;
        etw_free(al, b);
        b = next;
    }
    ar->head = ar->cur = NULL;
    ar->bytes = 0;
}

/* ---- index maps ---------------------------------------------------------- */

typedef struct map_slot {
    uint64_t hash;
    const uint8_t *key; /* in the arena */
    size_t len;
    const etw_schema *schema; /* NULL: empty slot */
} map_slot;

typedef struct index_map {
    map_slot *slots;
    size_t mask; /* capacity - 1; capacity 0 when slots is NULL */
    size_t used;
    unsigned shift; /* 64 - log2(capacity) */
} index_map;

#define MAP_MIN_CAP 16u
#define FIB64 UINT64_C(0x9E3779B97F4A7C15)

#define MISS_SLOTS 1024u
#define MISS_SHIFT 54u /* 64 - log2(MISS_SLOTS) */
#define MISS_KEY_MAX 32u

typedef struct miss_slot {
    uint64_t hash;
    uint32_t gen; /* valid when equal to the cache's miss_gen */
    uint8_t len;
    uint8_t key[MISS_KEY_MAX];
} miss_slot;

/* A generation of TraceLogging schemas: their own arena and maps, freed
 * together when the generation is dropped. */
typedef struct tl_gen {
    arena ar;
    index_map maps[2]; /* [ptr_size == 8] */
} tl_gen;

/* The TraceLogging negative cache: keys of any length (metadata blobs are
 * up to 64 KiB), each copied whole so a hit compares every byte; the copies
 * together stay under TL_MISS_BYTES, past which the table is emptied. */
#define TL_MISS_SLOTS 256u
#define TL_MISS_SHIFT 56u /* 64 - log2(TL_MISS_SLOTS) */
#define TL_MISS_BYTES ((size_t)1 << 20)

typedef struct tl_miss_slot {
    uint64_t hash;
    uint8_t *key; /* NULL: empty */
    size_t len;
    const char *why; /* the parser's reason (a string literal) */
    etw_status status;
} tl_miss_slot;

struct etw_cache {
    etw_allocator al;
    uint64_t salt;
    /* [source - 1][ptr_size == 8]; TraceLogging's row stays empty: its
     * schemas live in tl[] */
    index_map maps[ETW_SOURCE_WPP][2];
    const etw_schema **by_id; /* the schemas of other sources, in id order */
    uint32_t nby_id;
    uint32_t id_cap;
    uint32_t count; /* ids handed out */
    uint64_t epoch; /* etw_cache_epoch: forgets and negative-cache clears so far */
    arena ar;
    tl_gen tl[2];
    unsigned tl_cur; /* tl[tl_cur] takes inserts; tl[tl_cur ^ 1] is older */
    size_t tl_budget;
    etw_cache_tl_stats tl_stats;
    uint64_t gen; /* etw_cache_generation: bumped by every insert and forget */
    uint32_t miss_gen;
    miss_slot miss[MISS_SLOTS];
    tl_miss_slot tl_miss[TL_MISS_SLOTS];
    size_t tl_miss_bytes;
};

static inline size_t slot_home(const etw_cache *c, const index_map *m, uint64_t hash) {
    return (size_t)(((hash ^ c->salt) * FIB64) >> m->shift);
}

static inline index_map *map_for(etw_cache *c, etw_schema_source source, uint8_t ptr_size) {
    return &c->maps[(int)source - 1][ptr_size == 4 ? 0 : 1];
}

static inline uint64_t load64(const uint8_t *p) {
    uint64_t v;
    memcpy(&v, p, 8);
    return v;
}

/* Equal keys of length len; short keys (descriptors are 19 bytes) are
 * compared with overlapping 8-byte loads instead of a call to memcmp. */
static inline int keys_equal(const uint8_t *a, const uint8_t *b, size_t len) {
    if (len >= 8 && len <= 32) {
        uint64_t d = (load64(a) ^ load64(b)) | (load64(a + len - 8) ^ load64(b + len - 8));
        if (len > 16) {
            d |= load64(a + 8) ^ load64(b + 8);
            d |= load64(a + len - 16) ^ load64(b + len - 16);
        }
        return d == 0;
    }
    return len == 0 || memcmp(a, b, len) == 0;
}

static map_slot *map_lookup(const etw_cache *c, const index_map *m, const void *key,
                            size_t len, uint64_t hash) {
    if (!m->slots) return NULL;
    size_t i = slot_home(c, m, hash);
    for (;;) {
        map_slot *s = &m->slots[i];
        if (!s->schema) return NULL;
        if (s->hash == hash && s->len == len && keys_equal(s->key, key, len)) return s;
        i = (i + 1) & m->mask;
    }
}

/* Put an entry known to be absent into a map with room. */
static void map_place(const etw_cache *c, index_map *m, const map_slot *e) {
    size_t i = slot_home(c, m, e->hash);
    while (m->slots[i].schema) i = (i + 1) & m->mask;
    m->slots[i] = *e;
    m->used++;
}

/* Room for one more entry at load <= 1/2. */
static etw_status map_reserve(etw_cache *c, index_map *m) {
    size_t cap = m->slots ? m->mask + 1 : 0;
    if (m->slots && (m->used + 1) <= cap / 2) return ETW_OK;
    size_t ncap = cap ? cap * 2 : MAP_MIN_CAP;
    if (ncap < cap || mul_overflows(ncap, sizeof(map_slot))) return ETW_E_NOMEM;
    map_slot *ns = etw_calloc(&c->al, ncap, sizeof *ns);
    if (!ns) return ETW_E_NOMEM;
    map_slot *old = m->slots;
    unsigned bits = 0;
    while (((size_t)1 << bits) < ncap) bits++;
    m->slots = ns;
    m->mask = ncap - 1;
    m->shift = 64u - bits;
    m->used = 0;
    for (size_t i = 0; i < cap; i++)
        if (old[i].schema) map_place(c, m, &old[i]);
    etw_free(&c->al, old);
    return ETW_OK;
}

/* Empty slot i and shift later entries of its probe run back (linear
 * probing needs no tombstones this way). Entries only move to the hole or
 * to positions after it, so a caller scanning slots upwards and re-checking
 * slot i after a removal visits every entry once. */
static void map_remove_at(const etw_cache *c, index_map *m, size_t i) {
    size_t j = i;
    for (;;) {
        j = (j + 1) & m->mask;
        if (!m->slots[j].schema) break;
        size_t k = slot_home(c, m, m->slots[j].hash);
        /* Can the entry at j live at i? Yes unless its home lies cyclically in (i, j]. */
        int home_between = i <= j ? (k > i && k <= j) : (k > i || k <= j);
        if (!home_between) {
            m->slots[i] = m->slots[j];
            i = j;
        }
    }
    memset(&m->slots[i], 0, sizeof m->slots[i]);
    m->used--;
}

void etw_cache_forget_provider(etw_cache *c, etw_schema_source source, const etw_guid *provider) {
    if (!c || !provider || source < ETW_SOURCE_TRACELOGGING || source > ETW_SOURCE_WPP) return;
    c->epoch++;
    uint8_t g[16];
    etw_key_descriptor_guid(g, provider);
    c->gen++;
    for (int w = 0; w < 2; w++) {
        index_map *m = &c->maps[(int)source - 1][w];
        if (source == ETW_SOURCE_TRACELOGGING) continue; /* keyed on metadata, not on a GUID */
        if (!m->slots) continue;
        for (size_t i = 0; i <= m->mask; i++) {
            while (m->slots[i].schema && m->slots[i].len >= 16 && memcmp(m->slots[i].key, g, 16) == 0)
                map_remove_at(c, m, i);
        }
    }
}

static etw_status ids_reserve(etw_cache *c) {
    if (c->nby_id < c->id_cap) return ETW_OK;
    uint32_t ncap = c->id_cap ? (c->id_cap > UINT32_MAX / 2 ? UINT32_MAX : c->id_cap * 2) : 64;
    if (mul_overflows(ncap, sizeof *c->by_id)) return ETW_E_NOMEM;
    const etw_schema **n = etw_alloc(&c->al, (size_t)ncap * sizeof *n);
    if (!n) return ETW_E_NOMEM;
    if (c->nby_id) memcpy(n, c->by_id, (size_t)c->nby_id * sizeof *n);
    etw_free(&c->al, (void *)c->by_id);
    c->by_id = n;
    c->id_cap = ncap;
    return ETW_OK;
}

/* ---- public: keys, hash, lifetime ---------------------------------------- */

void etw_key_classic(uint8_t out[ETW_CLASSIC_KEY_SIZE], const etw_guid *g, uint8_t opcode,
                     uint8_t version) {
    etw_key_descriptor(out, g, opcode, version);
    out[ETW_DESCRIPTOR_KEY_SIZE] = ETW_CLASSIC_KEY_TAG;
}

void etw_key_descriptor_guid(uint8_t out[16], const etw_guid *g) {
    uint8_t k[ETW_DESCRIPTOR_KEY_SIZE];
    etw_key_descriptor(k, g, 0, 0);
    memcpy(out, k, 16);
}

void etw_key_descriptor(uint8_t out[ETW_DESCRIPTOR_KEY_SIZE], const etw_guid *g,
                        uint16_t id, uint8_t version) {
#if defined(__BYTE_ORDER__) && defined(__ORDER_LITTLE_ENDIAN__) && \
    __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    /* few wide stores: the key is hashed right after, with wide loads */
    uint64_t a = (uint64_t)g->data1 | ((uint64_t)g->data2 << 32) | ((uint64_t)g->data3 << 48);
    memcpy(out, &a, 8);
    memcpy(out + 8, g->data4, 8);
    memcpy(out + 16, &id, 2);
    out[18] = version;
#else
    out[0] = (uint8_t)g->data1;
    out[1] = (uint8_t)(g->data1 >> 8);
    out[2] = (uint8_t)(g->data1 >> 16);
    out[3] = (uint8_t)(g->data1 >> 24);
    out[4] = (uint8_t)g->data2;
    out[5] = (uint8_t)(g->data2 >> 8);
    out[6] = (uint8_t)g->data3;
    out[7] = (uint8_t)(g->data3 >> 8);
    memcpy(out + 8, g->data4, 8);
    out[16] = (uint8_t)id;
    out[17] = (uint8_t)(id >> 8);
    out[18] = version;
#endif
}

uint64_t etw_cache_hash(const void *key, size_t len) {
    return XXH3_64bits(len ? key : NULL, len);
}

/* ---- TraceLogging generations --------------------------------------------- */

static size_t map_bytes(const index_map *m) { return m->slots ? (m->mask + 1) * sizeof(map_slot) : 0; }

static size_t tl_gen_bytes(const tl_gen *g) { return g->ar.bytes + map_bytes(&g->maps[0]) + map_bytes(&g->maps[1]); }

static void tl_gen_free(etw_cache *c, tl_gen *g) {
    for (int w = 0; w < 2; w++) {
        c->tl_stats.evicted += g->maps[w].used;
        etw_free(&c->al, g->maps[w].slots);
    }
    arena_free(&g->ar, &c->al);
    memset(g, 0, sizeof *g);
}

/* Before an insert into the current generation: when it holds half the
 * budget, the older generation is freed and the current one becomes the
 * older (its schemas are still found; they are parsed anew once it goes). */
static void tl_maybe_rotate(etw_cache *c) {
    tl_gen *cur = &c->tl[c->tl_cur];
    if (tl_gen_bytes(cur) < c->tl_budget / 2) return;
    c->tl_cur ^= 1u;
    tl_gen_free(c, &c->tl[c->tl_cur]);
    c->tl_stats.generations++;
}

static void tl_miss_empty(etw_cache *c) {
    for (size_t i = 0; i < TL_MISS_SLOTS; i++) {
        etw_free(&c->al, c->tl_miss[i].key);
        memset(&c->tl_miss[i], 0, sizeof c->tl_miss[i]);
    }
    c->tl_miss_bytes = 0;
}

etw_status etw_cache_set_tl_budget(etw_cache *c, size_t bytes) {
    if (!c) return ETW_E_INVALID_ARG;
    if (bytes == 0) bytes = ETW_TL_CACHE_DEFAULT;
    if (bytes < ETW_TL_CACHE_MIN) return ETW_E_INVALID_ARG;
    c->tl_budget = bytes;
    return ETW_OK;
}

const etw_cache_tl_stats *etw_cache_tl_stats_get(etw_cache *c) {
    if (!c) return NULL;
    c->tl_stats.bytes = tl_gen_bytes(&c->tl[0]) + tl_gen_bytes(&c->tl[1]);
    c->tl_stats.live = c->tl[0].maps[0].used + c->tl[0].maps[1].used + c->tl[1].maps[0].used +
                       c->tl[1].maps[1].used;
    return &c->tl_stats;
}

static uint64_t splitmix64(uint64_t x) {
    x += UINT64_C(0x9E3779B97F4A7C15);
    x = (x ^ (x >> 30)) * UINT64_C(0xBF58476D1CE4E5B9);
    x = (x ^ (x >> 27)) * UINT64_C(0x94D049BB133111EB);
    return x ^ (x >> 31);
}

etw_status etw_cache_new(etw_cache **out, const etw_allocator *alloc) {
    if (!out) return ETW_E_INVALID_ARG;
    *out = NULL;
    etw_allocator al = etw_allocator_resolve(alloc);
    etw_cache *c = etw_alloc(&al, sizeof *c);
    if (!c) return ETW_E_NOMEM;
    memset(c, 0, sizeof *c);
    c->al = al;
    c->salt = splitmix64((uint64_t)(uintptr_t)c ^ ((uint64_t)(uintptr_t)&al << 17));
    c->miss_gen = 1;
    c->tl_budget = ETW_TL_CACHE_DEFAULT;
    *out = c;
    return ETW_OK;
}

void etw_cache_free(etw_cache *c) {
    if (!c) return;
    etw_allocator al = c->al;
    for (int s = 0; s < ETW_SOURCE_WPP; s++)
        for (int w = 0; w < 2; w++) etw_free(&al, c->maps[s][w].slots);
    etw_free(&al, (void *)c->by_id);
    arena_free(&c->ar, &al);
    for (int g = 0; g < 2; g++) tl_gen_free(c, &c->tl[g]);
    tl_miss_empty(c);
    etw_free(&al, c);
}

/* ---- validation ---------------------------------------------------------- */

static int is_integer_intype(uint16_t t) {
    return (t >= ETW_INTYPE_INT8 && t <= ETW_INTYPE_UINT64) || t == ETW_INTYPE_HEXINT32 ||
           t == ETW_INTYPE_HEXINT64 || t == ETW_INTYPE_POINTER || t == ETW_INTYPE_SIZET;
}

/* The property at index ref (< the referrer's index) can give a count or a
 * length: a scalar integer. */
static int is_scalar_integer(const etw_property *p) {
    return !(p->flags & (ETW_PROP_STRUCT | ETW_PROP_ARRAY_MASK)) && is_integer_intype(p->in_type);
}

static const char *map_problem(const etw_map *m) {
    if (m->flags != ETW_MAP_VALUEMAP && m->flags != ETW_MAP_BITMAP)
        return "map is neither a value map nor a bitmap";
    if (m->count && !m->entries) return "map entries are NULL";
    for (uint32_t i = 0; i < m->count; i++)
        if (!m->entries[i].name) return "map entry name is NULL";
    return NULL;
}

#define FAIL(msg)                                                              \
    do {                                                                       \
        if (why) *why = (msg);                                                 \
        return ETW_E_CORRUPT;                                                  \
    } while (0)

/* One forward pass. Members always follow their struct (struct_first > own
 * index, checked), so when index i is visited every possible parent of i has
 * been visited already: index order is a topological order of the tree and
 * no stack is needed. `reached` marks the indices reached from the top level;
 * marking an index twice means two parents (or a top-level property that is
 * also a member). Each index is marked at most once before a failure, so the
 * pass is O(prop_count) plus the entries of each distinct map. */
etw_status etw_schema_validate(const etw_schema *d, const char **why) {
    if (!d) return ETW_E_INVALID_ARG;
    if (!d->event_name) FAIL("event_name is NULL");
    if (d->top_count > d->prop_count) FAIL("top_count exceeds prop_count");
    uint32_t n = d->prop_count;
    if (n && !d->props) FAIL("props is NULL");

    uint64_t reached[(UINT16_MAX + 1) / 64]; /* 8 KiB */
    memset(reached, 0, ((n + 63) / 64) * sizeof reached[0]);
    const etw_map *checked[256] = {NULL};
    for (uint32_t i = 0; i < d->top_count; i++) reached[i >> 6] |= UINT64_C(1) << (i & 63);

    for (uint32_t i = 0; i < n; i++) {
        const etw_property *p = &d->props[i];
        if (!p->name) FAIL("property name is NULL");
        if (p->flags & ETW_PROP_STRUCT) {
            uint32_t first = p->struct_first, cnt = p->struct_count;
            if (first <= i) FAIL("struct members do not follow the struct");
            if (first + cnt > n) FAIL("struct members run past prop_count");
            if (reached[i >> 6] & (UINT64_C(1) << (i & 63))) {
                for (uint32_t j = first; j < first + cnt; j++) {
                    uint64_t bit = UINT64_C(1) << (j & 63);
                    if (reached[j >> 6] & bit) FAIL("property has two parents");
                    reached[j >> 6] |= bit;
                }
            }
        }
        if (p->flags & ETW_PROP_COUNT_REF) {
            if (p->count >= i) FAIL("count property does not precede its array");
            if (!is_scalar_integer(&d->props[p->count])) FAIL("count property is not a scalar integer");
        }
        if (p->flags & ETW_PROP_BITS) {
            unsigned shift = p->length & 0xFFu, width = p->length >> 8;
            if (p->count >= i) FAIL("bits property does not follow its integer");
            if (!is_scalar_integer(&d->props[p->count]) || (d->props[p->count].flags & ETW_PROP_BITS))
                FAIL("bits of a property that is not a scalar integer");
            if (p->in_type != ETW_INTYPE_UINT8 || (p->flags & (ETW_PROP_STRUCT | ETW_PROP_ARRAY_MASK |
                                                               ETW_PROP_LENGTH_REF | ETW_PROP_CUSTOM_SIZED)))
                FAIL("bits property is not a UINT8 scalar");
            if (width < 1 || width > 8 || shift + width > 64) FAIL("bits out of range");
        }
        if (p->flags & ETW_PROP_LENGTH_REF) {
            if (p->length >= i) FAIL("length property does not precede its user");
            if (!is_scalar_integer(&d->props[p->length])) FAIL("length property is not a scalar integer");
        }
        if (p->map) {
            /* a map shared by many properties is checked once, unless
             * evicted from this small memo by a colliding map */
            size_t slot = (size_t)(((uint64_t)(uintptr_t)p->map * FIB64) >> (64 - 8));
            if (checked[slot] != p->map) {
                const char *problem = map_problem(p->map);
                if (problem) FAIL(problem);
                checked[slot] = p->map;
            }
        }
    }
    return ETW_OK;
}
#undef FAIL

/* ---- deep copy ----------------------------------------------------------- */

/* A set of pointers of the draft (maps, strings) and their copies, so each
 * is copied once per insert however many properties or entries share it:
 * two properties sharing a map share its copy, and a string a source reuses
 * (an interned name, a localized "Unknown" in a thousand map entries) costs
 * its bytes once, so a copy is never larger than the draft's distinct
 * content. Open addressing on the pointer, load <= 1/2, sized up front. */
typedef struct ptr_pair {
    const void *src;
    const void *dst;
} ptr_pair;

typedef struct ptr_set {
    ptr_pair *v;
    size_t mask;
    unsigned shift;
} ptr_set;

static ptr_pair *ptr_set_get(ptr_set *s, const void *p, int *isnew) {
    size_t i = (size_t)(((uint64_t)(uintptr_t)p * FIB64) >> s->shift);
    while (s->v[i].src && s->v[i].src != p) i = (i + 1) & s->mask;
    *isnew = s->v[i].src == NULL;
    s->v[i].src = p;
    return &s->v[i];
}

/* Room for n pointers: the stack buffer when it is enough, else the heap. */
static etw_status ptr_set_init(ptr_set *s, size_t n, ptr_pair *stack, size_t stack_cap,
                               const etw_allocator *al) {
    size_t cap = 16;
    unsigned bits = 4;
    while (cap / 2 < n) {
        if (cap > (size_t)-1 / 2 / sizeof(ptr_pair)) return ETW_E_NOMEM;
        cap *= 2;
        bits++;
    }
    if (cap <= stack_cap) {
        s->v = stack;
        memset(stack, 0, cap * sizeof *stack);
    } else {
        s->v = etw_calloc(al, cap, sizeof *s->v);
        if (!s->v) return ETW_E_NOMEM;
    }
    s->mask = cap - 1;
    s->shift = 64u - bits;
    return ETW_OK;
}

/* Runs twice over the same draft: once with base == NULL to size the chunk,
 * then over the chunk to fill it. Both runs take the same pieces in the same
 * order (a string or a map at its first use), so the offsets agree. */
typedef struct copier {
    unsigned char *base;
    size_t off;
    int overflow;
    ptr_set *maps; /* the draft's distinct maps, filled before the two runs */
    ptr_set *strs; /* empty before the sizing run */
    const char *const *renamed; /* etw_names_plan: new property names, or NULL */
} copier;

static void *cp_take(copier *k, size_t n, size_t align) {
    size_t o = align_up(k->off, align);
    if (o < k->off || n > (size_t)-1 - o) {
        k->overflow = 1;
        return NULL;
    }
    k->off = o + n;
    return k->base ? k->base + o : NULL;
}

/* n bytes of s and a NUL. */
static const char *cp_bytes(copier *k, const char *s, size_t n) {
    char *d = cp_take(k, n + 1, 1);
    if (!d) return NULL;
    memcpy(d, s, n);
    d[n] = 0;
    return d;
}

/* A name: cut to ETW_NAME_MAX bytes (etw_names.h), copied once however many
 * places of the draft share the pointer. */
static const char *cp_str(copier *k, const char *s) {
    if (!s) return NULL;
    int isnew;
    ptr_pair *e = ptr_set_get(k->strs, s, &isnew);
    if (!k->base) { /* sizing: count each string once */
        if (isnew) cp_take(k, etw_name_cut_len(s, ETW_NAME_MAX) + 1, 1);
        return NULL;
    }
    if (!e->dst) e->dst = cp_bytes(k, s, etw_name_cut_len(s, ETW_NAME_MAX));
    return e->dst;
}

/* Value maps are sorted by value; equal values by name, so the order never
 * depends on the qsort at hand. */
static int entry_cmp(const void *a, const void *b) {
    const etw_map_entry *x = a, *y = b;
    if (x->value != y->value) return x->value < y->value ? -1 : 1;
    return strcmp(x->name, y->name);
}

static etw_map *cp_map(copier *k, const etw_map *src) {
    etw_map *m = cp_take(k, sizeof *m, 8);
    if (mul_overflows(src->count, sizeof(etw_map_entry))) {
        k->overflow = 1;
        return NULL;
    }
    etw_map_entry *e = cp_take(k, (size_t)src->count * sizeof *e, 8);
    const char *name = cp_str(k, src->name);
    int sorted = 1;
    for (uint32_t i = 0; i < src->count; i++) {
        const char *en = cp_str(k, src->entries[i].name);
        if (e) {
            e[i].value = src->entries[i].value;
            e[i].name = en;
            if (i && e[i - 1].value > e[i].value) sorted = 0;
        }
    }
    if (!m) return NULL;
    m->name = name;
    m->flags = src->flags;
    m->count = src->count;
    m->entries = src->count ? e : NULL;
    if (!sorted && src->flags == ETW_MAP_VALUEMAP) qsort(e, src->count, sizeof *e, entry_cmp);
    return m;
}

/* Chunk layout: schema, props, the schema's strings, each distinct map (in
 * map-set order) with its entries and strings, property names, key. */
static etw_schema *cp_schema(copier *k, const etw_schema *d, const void *key, size_t key_len,
                             int copy_key, int fixup, const uint8_t **out_key) {
    etw_schema *s = cp_take(k, sizeof *s, 8);
    /* prop_count is a u16: the props array size cannot overflow */
    etw_property *props = cp_take(k, (size_t)d->prop_count * sizeof *props, 8);
    if (s) {
        *s = *d;
        s->props = props;
    }
    if (props && d->prop_count) memcpy(props, d->props, (size_t)d->prop_count * sizeof *props);
    const char *str;
    str = cp_str(k, d->provider_name);
    if (s) s->provider_name = str;
    str = cp_str(k, d->event_name);
    if (s) s->event_name = str;
    str = cp_str(k, d->task_name);
    if (s) s->task_name = str;
    str = cp_str(k, d->opcode_name);
    if (s) s->opcode_name = str;
    str = cp_str(k, d->task_symbol);
    if (s) s->task_symbol = str;
    str = cp_str(k, d->opcode_symbol);
    if (s) s->opcode_symbol = str;
    str = cp_str(k, d->event_symbol);
    if (s) s->event_symbol = str;
    /* the message is not a name: copied whole, on its own */
    str = d->message ? cp_bytes(k, d->message, strlen(d->message)) : NULL;
    if (s) s->message = str;
    for (size_t i = 0; i <= k->maps->mask; i++) {
        ptr_pair *e = &k->maps->v[i];
        if (e->src) e->dst = cp_map(k, e->src);
    }
    for (uint32_t i = 0; i < d->prop_count; i++) {
        const etw_property *p = &d->props[i];
        const char *rn = k->renamed ? k->renamed[i] : NULL;
        str = rn ? cp_bytes(k, rn, strlen(rn)) : cp_str(k, p->name);
        if (props) {
            props[i].name = str;
            if (p->map) {
                int isnew;
                props[i].map = ptr_set_get(k->maps, p->map, &isnew)->dst;
            }
        }
    }
    if (fixup && s && props) etw_schema_fixup(s, props);
    uint8_t *kc = copy_key ? cp_take(k, key_len, 1) : NULL;
    if (kc && key_len) memcpy(kc, key, key_len);
    *out_key = kc;
    return s;
}

/* ---- insert / find / get ------------------------------------------------- */

#define MAPSET_STACK 64u
#define STRSET_STACK 256u

etw_status etw_cache_insert(etw_cache *c, etw_schema_source source, uint8_t ptr_size,
                            const void *key, size_t len, uint64_t hash,
                            const etw_schema *draft, const etw_schema **out,
                            const char **why) {
    if (out) *out = NULL;
    if (why) *why = NULL;
    if (!c || !draft || (!key && len) || source < ETW_SOURCE_TRACELOGGING ||
        source > ETW_SOURCE_WPP)
        return ETW_E_INVALID_ARG;
    etw_status st = etw_schema_validate(draft, why);
    if (st != ETW_OK) return st;
    if (c->count == UINT32_MAX) return ETW_E_LIMIT;

    int tl = source == ETW_SOURCE_TRACELOGGING;
    c->gen++; /* before anything changes (a rehash, a rotation) */
    if (tl) tl_maybe_rotate(c);
    index_map *m = tl ? &c->tl[c->tl_cur].maps[ptr_size == 4 ? 0 : 1] : map_for(c, source, ptr_size);
    arena *ar = tl ? &c->tl[c->tl_cur].ar : &c->ar;
    map_slot *old = map_lookup(c, m, key, len, hash);
    if (!old && (st = map_reserve(c, m)) != ETW_OK) return st;
    if (!tl && (st = ids_reserve(c)) != ETW_OK) return st;

    /* the draft's distinct maps, then room for every distinct string */
    ptr_pair map_stack[MAPSET_STACK], str_stack[STRSET_STACK];
    ptr_set maps, strs;
    size_t nref = 0;
    for (uint32_t i = 0; i < draft->prop_count; i++) nref += draft->props[i].map != NULL;
    if ((st = ptr_set_init(&maps, nref, map_stack, MAPSET_STACK, &c->al)) != ETW_OK) return st;
    size_t nstr = 8 + (size_t)draft->prop_count; /* the schema's names, props' names */
    for (uint32_t i = 0; i < draft->prop_count; i++) {
        const etw_map *mp = draft->props[i].map;
        if (!mp) continue;
        int isnew;
        ptr_set_get(&maps, mp, &isnew);
        if (isnew) nstr += 1 + (size_t)mp->count;
    }
    if ((st = ptr_set_init(&strs, nstr, str_stack, STRSET_STACK, &c->al)) != ETW_OK) {
        if (maps.v != map_stack) etw_free(&c->al, maps.v);
        return st;
    }

    /* unique names among siblings (etw_names.h) */
    etw_name_plan plan;
    if ((st = etw_names_plan(draft, &c->al, &plan)) != ETW_OK) {
        if (maps.v != map_stack) etw_free(&c->al, maps.v);
        if (strs.v != str_stack) etw_free(&c->al, strs.v);
        return st;
    }

    /* size, allocate, fill */
    copier k = {NULL, 0, 0, &maps, &strs, plan.names};
    const uint8_t *kc = NULL;
    /* descriptor-keyed sources get the corrections of etw_fixup.h */
    int fixup = source != ETW_SOURCE_MOF && source != ETW_SOURCE_TRACELOGGING && source != ETW_SOURCE_WPP;
    (void)cp_schema(&k, draft, key, len, !old, fixup, &kc); /* a replaced key keeps its copy */
    unsigned char *chunk = k.overflow ? NULL : arena_alloc(ar, &c->al, k.off);
    etw_schema *s = NULL;
    if (chunk) {
        copier fill = {chunk, 0, 0, &maps, &strs, plan.names};
        s = cp_schema(&fill, draft, key, len, !old, fixup, &kc);
    }
    if (maps.v != map_stack) etw_free(&c->al, maps.v);
    if (strs.v != str_stack) etw_free(&c->al, strs.v);
    etw_names_plan_free(&plan, &c->al);
    if (!s) return ETW_E_NOMEM;

    s->id = c->count;
    s->source = (uint8_t)source;
    s->pointer_size = ptr_size == 4 ? 4 : 8;
    /* payload subjects (etw_subject.h): descriptor-keyed schemas only, the
     * kernel's MOF schemas have the class tables' pid_field */
    if (fixup) {
        etw_schema_subject(s);
    } else {
        s->subject_prop = ETW_SUBJECT_NONE;
        s->subject_off = ETW_SUBJECT_NONE;
        s->subject_flags = 0;
    }
    c->count++;
    if (!tl) c->by_id[c->nby_id++] = s;
    if (old) {
        old->schema = s;
    } else {
        map_slot e = {hash, kc, len, s};
        map_place(c, m, &e);
    }
    if (out) *out = s;
    return ETW_OK;
}

const etw_schema *etw_cache_find(const etw_cache *c, etw_schema_source source,
                                 uint8_t ptr_size, const void *key, size_t len,
                                 uint64_t hash) {
    if (!c || source < ETW_SOURCE_TRACELOGGING || source > ETW_SOURCE_WPP) return NULL;
    if (!key && len) return NULL;
    int w = ptr_size == 4 ? 0 : 1;
    if (source == ETW_SOURCE_TRACELOGGING) {
        /* the current generation, then the older one, with the same hash */
        const map_slot *s = map_lookup(c, &c->tl[c->tl_cur].maps[w], key, len, hash);
        if (!s) s = map_lookup(c, &c->tl[c->tl_cur ^ 1u].maps[w], key, len, hash);
        return s ? s->schema : NULL;
    }
    const index_map *m = &c->maps[(int)source - 1][w];
    const map_slot *s = map_lookup(c, m, key, len, hash);
    return s ? s->schema : NULL;
}

uint32_t etw_cache_count(const etw_cache *c) { return c ? c->count : 0; }

uint64_t etw_cache_generation(const etw_cache *c) { return c ? c->gen : 0; }

const etw_schema *etw_cache_get(const etw_cache *c, uint32_t id) {
    if (!c || id >= c->count) return NULL;
    /* other sources: by_id is in id order */
    uint32_t lo = 0, hi = c->nby_id;
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        if (c->by_id[mid]->id < id) lo = mid + 1;
        else hi = mid;
    }
    if (lo < c->nby_id && c->by_id[lo]->id == id) return c->by_id[lo];
    /* TraceLogging: the live generations' maps (a test and debugging aid) */
    for (int g = 0; g < 2; g++)
        for (int w = 0; w < 2; w++) {
            const index_map *m = &c->tl[g].maps[w];
            for (size_t i = 0; m->slots && i <= m->mask; i++)
                if (m->slots[i].schema && m->slots[i].schema->id == id) return m->slots[i].schema;
        }
    return NULL;
}

/* ---- negative cache ------------------------------------------------------ */

static inline size_t miss_index(const etw_cache *c, uint64_t hash) {
    return (size_t)(((hash ^ c->salt) * FIB64) >> MISS_SHIFT);
}

int etw_cache_miss_known(const etw_cache *c, const void *key, size_t len, uint64_t hash) {
    if (!c || len > MISS_KEY_MAX || (!key && len)) return 0;
    const miss_slot *s = &c->miss[miss_index(c, hash)];
    return s->gen == c->miss_gen && s->hash == hash && s->len == len &&
           keys_equal(s->key, key, len);
}

void etw_cache_miss_note(etw_cache *c, const void *key, size_t len, uint64_t hash) {
    if (!c || len > MISS_KEY_MAX || (!key && len)) return;
    miss_slot *s = &c->miss[miss_index(c, hash)];
    s->hash = hash;
    s->gen = c->miss_gen;
    s->len = (uint8_t)len;
    if (len) memcpy(s->key, key, len);
}

uint64_t etw_cache_epoch(const etw_cache *c) { return c ? c->epoch : 0; }

void etw_cache_miss_clear(etw_cache *c) {
    if (!c) return;
    c->epoch++;
    if (++c->miss_gen == 0) { /* wrapped: forget every slot for real */
        memset(c->miss, 0, sizeof c->miss);
        c->miss_gen = 1;
    }
}

/* ---- TraceLogging negative cache ------------------------------------------ */

static inline size_t tl_miss_index(const etw_cache *c, uint64_t hash) {
    return (size_t)(((hash ^ c->salt) * FIB64) >> TL_MISS_SHIFT);
}

const char *etw_cache_tl_miss_known(const etw_cache *c, const void *key, size_t len, uint64_t hash,
                                    etw_status *status) {
    if (!c || !key || !len) return NULL;
    const tl_miss_slot *s = &c->tl_miss[tl_miss_index(c, hash)];
    if (s->key && s->hash == hash && s->len == len && memcmp(s->key, key, len) == 0) {
        if (status) *status = s->status;
        return s->why;
    }
    return NULL;
}

void etw_cache_tl_miss_note(etw_cache *c, const void *key, size_t len, uint64_t hash, const char *why,
                            etw_status status) {
    if (!c || !key || !len || len > TL_MISS_BYTES) return;
    tl_miss_slot *s = &c->tl_miss[tl_miss_index(c, hash)];
    if (s->key) {
        c->tl_miss_bytes -= s->len;
        etw_free(&c->al, s->key);
        s->key = NULL;
    }
    if (c->tl_miss_bytes + len > TL_MISS_BYTES) tl_miss_empty(c);
    uint8_t *k = etw_alloc(&c->al, len);
    if (!k) return; /* not remembered: parsed again next time */
    memcpy(k, key, len);
    s->key = k;
    s->len = len;
    s->hash = hash;
    s->why = why ? why : "undecodable";
    s->status = status;
    c->tl_miss_bytes += len;
}
