/* etw_manifest.c - instrumentation manifests (XML) as a schema source.
 *
 * Loading (etw_manifest_load_xml):
 *   1. expat reads the document; the start-element handler keeps a small
 *      stack of element kinds (matched on the local name, so prefixed and
 *      unprefixed elements are the same) and records the raw attributes it
 *      cares about: providers with their events, templates (data/struct
 *      items in document order with their parent), maps, tasks (with
 *      task-scoped opcodes), opcodes, keywords, levels, channels, and the
 *      string tables of every <resources> culture. Nothing is interpreted
 *      yet, so a malformed document costs nothing but its parse records.
 *   2. At the end of a well-formed document everything is compiled: the
 *      string table of the chosen culture (en-US, else the first), each
 *      provider's name tables, its maps (messages resolved and trimmed), its
 *      templates (flattened into the TDH tree layout with count/length
 *      references resolved to indices) and its events (descriptor values,
 *      names, message, template). Problems found here are warnings with the
 *      manifest line.
 *   3. The compiled providers replace same-GUID providers of the set.
 * A document's compiled data lives in one arena (mf_doc) that is freed when
 * the last of its providers has been replaced, or with the set.
 *
 * Resolving (the etw_source callback) is then a hash lookup of the provider
 * and of (id, version), and an etw_cache_insert of a draft pointing into the
 * document's arena (the cache deep-copies it).
 */
#define _POSIX_C_SOURCE 200809L

#include "etw_manifest.h"

#include <expat.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <errno.h>
#include <string.h>
#include <sys/stat.h>

#ifndef _WIN32
#include <dirent.h>
#endif

#include "../common/etw_alloc.h"
#include "etw_manifest_ext.h"
#include "etw_manifest_types.h"

#define XXH_INLINE_ALL
#include <xxhash.h>


/* ---- limits --------------------------------------------------------------- */

#define MAX_DEPTH 64              /* element nesting the parser tracks */
#define MAX_STRUCT_DEPTH 4        /* struct within struct: TDH uses 1 */
#define MAX_TEMPLATE_ITEMS 65535u /* props are indexed by u16 */
#define MAX_RECORDS 0x7FFFFFFFu   /* entries of one parse vector */

/* ---- arena ---------------------------------------------------------------- */

typedef struct ar_block {
    struct ar_block *next;
    size_t cap, used;
    /* data follows, 8-aligned */
} ar_block;

#define AR_HDR (((sizeof(ar_block) + 15) / 16) * 16)
#define AR_BLOCK ((size_t)64 * 1024)

typedef struct mf_arena {
    const etw_allocator *al;
    ar_block *head;
} mf_arena;

static void *ar_alloc(mf_arena *a, size_t n) {
    ar_block *b = a->head;
    n = (n + 7) & ~(size_t)7;
    if (n == 0) n = 8;
    if (b && b->cap - b->used >= n) {
        void *p = (unsigned char *)b + AR_HDR + b->used;
        b->used += n;
        return p;
    }
    size_t cap = n > AR_BLOCK / 4 ? n : AR_BLOCK;
    if (cap > (size_t)-1 - AR_HDR) return NULL;
    ar_block *nb = etw_alloc(a->al, AR_HDR + cap);
    if (!nb) return NULL;
    nb->cap = cap;
    nb->used = n;
    if (b && cap != AR_BLOCK) { /* a big block goes behind the current one */
        nb->next = b->next;
        b->next = nb;
    } else {
        nb->next = b;
        a->head = nb;
    }
    return (unsigned char *)nb + AR_HDR;
}

/* Free every block. The arena may live in one of its own blocks (an
 * mf_doc does), so nothing is read from or written to *a once freeing
 * starts. */
static void ar_free(mf_arena *a) {
    ar_block *b = a->head;
    const etw_allocator *al = a->al;
    while (b) {
        ar_block *n = b->next;
        etw_free(al, b);
        b = n;
    }
}

static char *ar_strndup(mf_arena *a, const char *s, size_t n) {
    char *d = ar_alloc(a, n + 1);
    if (!d) return NULL;
    memcpy(d, s, n);
    d[n] = 0;
    return d;
}

static char *ar_strdup(mf_arena *a, const char *s) { return ar_strndup(a, s, strlen(s)); }

/* ---- compiled data ---------------------------------------------------------- */

typedef struct mf_doc {
    struct mf_doc *prev, *next;
    mf_arena ar;
    const char *origin; /* in ar */
    uint32_t live;      /* providers of this document in the set */
} mf_doc;

typedef struct mf_event {
    uint16_t id;
    uint8_t version;
    uint8_t level;
    uint8_t opcode;
    uint8_t channel;
    uint16_t task;
    uint64_t keywords;
    const char *name;
    const char *task_name;
    const char *opcode_name;
    const char *message;
    const etw_property *props;
    uint16_t prop_count;
    uint16_t top_count;
    uint32_t line;
} mf_event;

typedef struct mf_provider {
    etw_guid guid;
    const char *name;
    mf_doc *doc;
    uint32_t line;
    uint32_t order; /* load order, for enumeration */
    mf_event *events;
    uint32_t nevents;
    uint32_t *slots; /* (id, version) -> event index + 1 */
    uint32_t mask;
} mf_provider;

struct etw_manifest_set {
    etw_allocator al;
    etw_schema_source kind;
    etw_diag_fn on_diag;
    void *diag_ctx;
    etw_cache *cache;
    mf_doc *docs;
    mf_provider **pslots; /* GUID -> provider, open addressing */
    uint32_t pmask;
    uint32_t nprov;
    uint32_t nevents;
    uint32_t next_order;
    uint64_t problems;
    uint64_t seed;
    char msg[640];
};

/* ---- small helpers ---------------------------------------------------------- */

static int is_space(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n'; }

/* Text without surrounding white space, as (start, length). */
static const char *trim(const char *s, size_t *len) {
    while (is_space(*s)) s++;
    size_t n = strlen(s);
    while (n && is_space(s[n - 1])) n--;
    *len = n;
    return s;
}

static int ascii_lower(int c) { return c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c; }
static int eq_nocase(const char *a, const char *b) {
    for (; *a && *b; a++, b++)
        if (ascii_lower((unsigned char)*a) != ascii_lower((unsigned char)*b)) return 0;
    return *a == *b;
}

static uint64_t mix64(uint64_t x) {
    x ^= x >> 33;
    x *= UINT64_C(0xff51afd7ed558ccd);
    x ^= x >> 33;
    x *= UINT64_C(0xc4ceb9fe1a85ec53);
    x ^= x >> 33;
    return x;
}

static uint64_t guid_hash(const etw_manifest_set *m, const etw_guid *g) {
    uint64_t a = (uint64_t)g->data1 << 32 | (uint64_t)g->data2 << 16 | g->data3;
    uint64_t b;
    memcpy(&b, g->data4, 8);
    return mix64(a ^ mix64(b ^ m->seed));
}

/* ---- name tables (temporary, during compilation) ----------------------------- */

typedef struct nt_slot {
    const char *name; /* NULL: empty */
    size_t len;
    uint32_t scope;
    uint32_t value;
    uint32_t gen;
    uint32_t hash;
} nt_slot;

typedef struct nametab {
    nt_slot *s;
    uint32_t mask; /* capacity - 1 */
    uint32_t gen;  /* slots of another generation are empty */
} nametab;

static uint32_t nt_hash(uint64_t seed, uint32_t scope, const char *name, size_t len) {
    return (uint32_t)XXH3_64bits_withSeed(name, len, seed ^ ((uint64_t)scope * UINT64_C(0x9E3779B97F4A7C15)));
}

/* Empty the table and make room for n entries at load <= 1/2. */
static int nt_reset(nametab *t, const etw_allocator *al, uint32_t n) {
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

static void nt_free(nametab *t, const etw_allocator *al) {
    etw_free(al, t->s);
    t->s = NULL;
    t->mask = 0;
}

/* Insert or overwrite; returns the previous value + 1, or 0 when new. The
 * table must have room (nt_reset with the total count). */
static uint32_t nt_put(nametab *t, uint64_t seed, uint32_t scope, const char *name, size_t len,
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

static int nt_get(const nametab *t, uint64_t seed, uint32_t scope, const char *name, size_t len,
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

/* Scopes of the provider name table. */
enum {
    S_TASK = 1,
    S_OPCODE, /* | (task index + 1) << 4 for task-scoped opcodes */
    S_KEYWORD,
    S_LEVEL,
    S_CHANNEL, /* by chid */
    S_CHANNAME,
    S_MAP,
    S_TEMPLATE
};
#define SCOPE_OPCODE(task_plus_1) ((uint32_t)S_OPCODE | (uint32_t)(task_plus_1) << 4)

/* ---- parse records ----------------------------------------------------------- */

typedef struct vec {
    void *v;
    uint32_t n, cap;
} vec;

typedef struct p_item {
    const char *name, *in, *out, *count, *length, *map;
    int32_t parent; /* index within the template, -1 for top level */
    uint32_t line;
    uint8_t is_struct;
} p_item;

typedef struct p_tmpl {
    const char *tid;
    uint32_t line;
    uint32_t first, n; /* items */
    uint8_t too_deep, too_big;
} p_tmpl;

typedef struct p_event {
    const char *value, *version, *level, *task, *opcode, *keywords, *channel, *tmpl, *symbol,
        *message;
    uint32_t line;
} p_event;

/* tasks, opcodes, keywords, levels, channels */
typedef struct p_named {
    const char *name, *value, *extra;
    const char *message; /* the display name (tasks, opcodes) */
    int32_t task; /* opcodes: the task they are scoped to, or -1 */
    uint32_t line;
    uint8_t import;
} p_named;

typedef struct p_map {
    const char *name;
    uint32_t line, first, n;
    uint8_t bitmap;
} p_map;

typedef struct p_mapent {
    const char *value, *message;
    uint32_t line;
} p_mapent;

typedef struct p_string {
    const char *id, *value;
    uint32_t group;
} p_string;

typedef struct p_provider {
    const char *name, *guid;
    uint32_t line;
    vec items, tmpls, events, tasks, opcodes, keywords, levels, channels, maps, mapents;
} p_provider;

/* Element kinds of the parser's stack. */
enum {
    K_IGNORE = 0,
    K_ROOT,
    K_OUTER, /* outside any <events>: <instrumentation>, <events> and
              * <localization> are looked for in it */
    K_MANIFEST,
    K_INSTR,
    K_EVENTS_TOP,
    K_PROVIDER,
    K_P_EVENTS,
    K_EVENT,
    K_P_TEMPLATES,
    K_TEMPLATE,
    K_STRUCT,
    K_DATA,
    K_P_MAPS,
    K_MAP,
    K_MAPENT,
    K_P_TASKS,
    K_TASK,
    K_TASK_OPCODES,
    K_OPCODE,
    K_P_OPCODES,
    K_P_KEYWORDS,
    K_KEYWORD,
    K_P_LEVELS,
    K_LEVEL,
    K_P_CHANNELS,
    K_CHANNEL,
    K_LOCALIZATION,
    K_RESOURCES,
    K_STRINGTABLE,
    K_STRING
};

typedef struct loader {
    etw_manifest_set *m;
    mf_doc *doc;
    XML_Parser xp;
    etw_status st;      /* first fatal problem */
    const char *reason; /* its text when we stopped the parser */
    uint32_t depth;
    uint8_t kinds[MAX_DEPTH];
    vec provs; /* p_provider */
    int32_t cur_prov, cur_tmpl, cur_task, cur_map;
    int32_t sparent[MAX_STRUCT_DEPTH];
    uint32_t sdepth;
    vec strings; /* p_string */
    uint32_t events_elements; /* <events> elements outside providers */
    uint32_t groups;
    int32_t cur_group, en_us_group;
    /* compilation */
    nametab names, strtab, reftab;
    uint8_t warned_in, warned_out;
    /* $(string.X) references the string table does not resolve: the first
     * one (reported once per document, with the count) */
    uint64_t unresolved;
    const char *unresolved_ref;
    size_t unresolved_len;
    uint32_t unresolved_line;
} loader;

static uint32_t cur_line(loader *L) {
    XML_Size l = XML_GetCurrentLineNumber(L->xp);
    return l > UINT32_MAX ? UINT32_MAX : (uint32_t)l;
}

static void *vec_push(loader *L, vec *x, size_t sz) {
    if (x->n == x->cap) {
        uint32_t ncap = x->cap ? (x->cap > MAX_RECORDS / 2 ? MAX_RECORDS : x->cap * 2) : 16;
        if (ncap <= x->n) {
            if (L->st == ETW_OK) L->st = ETW_E_LIMIT, L->reason = "too many elements";
            return NULL;
        }
        void *p = etw_calloc(&L->m->al, ncap, sz);
        if (!p) {
            if (L->st == ETW_OK) L->st = ETW_E_NOMEM, L->reason = "out of memory";
            return NULL;
        }
        if (x->n) memcpy(p, x->v, (size_t)x->n * sz);
        etw_free(&L->m->al, x->v);
        x->v = p;
        x->cap = ncap;
    }
    void *r = (unsigned char *)x->v + (size_t)x->n * sz;
    memset(r, 0, sz);
    x->n++;
    return r;
}

static void vec_free(loader *L, vec *x) {
    etw_free(&L->m->al, x->v);
    x->v = NULL;
    x->n = x->cap = 0;
}

#define VAT(type, vecp, i) (((type *)(vecp)->v)[i])

static void stop(loader *L, etw_status st, const char *reason) {
    if (L->st == ETW_OK) {
        L->st = st;
        L->reason = reason;
    }
    XML_StopParser(L->xp, XML_FALSE);
}

/* Copy the wanted attributes (by local name) into out[] as arena strings,
 * without surrounding white space unless keep_space (string values). */
static int get_attrs_ex(loader *L, const XML_Char **atts, const char *const *names, const char **out,
                        int k, int keep_space) {
    for (int j = 0; j < k; j++) out[j] = NULL;
    for (int i = 0; atts[i]; i += 2) {
        const char *ln = etw_mf_local(atts[i]);
        for (int j = 0; j < k; j++) {
            if (!out[j] && strcmp(ln, names[j]) == 0) {
                size_t n;
                const char *v = keep_space ? (n = strlen(atts[i + 1]), atts[i + 1]) : trim(atts[i + 1], &n);
                out[j] = ar_strndup(&L->doc->ar, v, n);
                if (!out[j]) {
                    stop(L, ETW_E_NOMEM, "out of memory");
                    return 0;
                }
                break;
            }
        }
    }
    return 1;
}

static int get_attrs(loader *L, const XML_Char **atts, const char *const *names, const char **out, int k) {
    return get_attrs_ex(L, atts, names, out, k, 0);
}

static uint8_t child_kind(uint8_t parent, const char *n) {
    switch (parent) {
    /* Outside <events>, wherever they sit: an instrumentation manifest is
     * <instrumentationManifest><instrumentation><events>; a Windows
     * component manifest is <assembly> with <instrumentation><events> (and
     * <localization>) among its other children. */
    case K_ROOT:
    case K_OUTER:
    case K_MANIFEST:
    case K_INSTR:
        if (!strcmp(n, "instrumentationManifest")) return K_MANIFEST;
        if (!strcmp(n, "instrumentation")) return K_INSTR;
        if (!strcmp(n, "events")) return K_EVENTS_TOP;
        if (!strcmp(n, "localization")) return K_LOCALIZATION;
        return K_OUTER;
    case K_EVENTS_TOP:
        return !strcmp(n, "provider") ? K_PROVIDER : K_IGNORE;
    case K_PROVIDER:
        if (!strcmp(n, "events")) return K_P_EVENTS;
        if (!strcmp(n, "templates")) return K_P_TEMPLATES;
        if (!strcmp(n, "maps")) return K_P_MAPS;
        if (!strcmp(n, "tasks")) return K_P_TASKS;
        if (!strcmp(n, "opcodes")) return K_P_OPCODES;
        if (!strcmp(n, "keywords")) return K_P_KEYWORDS;
        if (!strcmp(n, "levels")) return K_P_LEVELS;
        if (!strcmp(n, "channels")) return K_P_CHANNELS;
        return K_IGNORE;
    case K_P_EVENTS:
        return !strcmp(n, "event") ? K_EVENT : K_IGNORE;
    case K_P_TEMPLATES:
        return !strcmp(n, "template") ? K_TEMPLATE : K_IGNORE;
    case K_TEMPLATE:
    case K_STRUCT:
        if (!strcmp(n, "data")) return K_DATA;
        if (!strcmp(n, "struct")) return K_STRUCT;
        return K_IGNORE; /* UserData and anything else */
    case K_P_MAPS:
        return !strcmp(n, "valueMap") || !strcmp(n, "bitMap") ? K_MAP : K_IGNORE;
    case K_MAP:
        return !strcmp(n, "map") ? K_MAPENT : K_IGNORE;
    case K_P_TASKS:
        return !strcmp(n, "task") ? K_TASK : K_IGNORE;
    case K_TASK:
        return !strcmp(n, "opcodes") ? K_TASK_OPCODES : K_IGNORE;
    case K_TASK_OPCODES:
    case K_P_OPCODES:
        return !strcmp(n, "opcode") ? K_OPCODE : K_IGNORE;
    case K_P_KEYWORDS:
        return !strcmp(n, "keyword") ? K_KEYWORD : K_IGNORE;
    case K_P_LEVELS:
        return !strcmp(n, "level") ? K_LEVEL : K_IGNORE;
    case K_P_CHANNELS:
        return !strcmp(n, "channel") || !strcmp(n, "importChannel") ? K_CHANNEL : K_IGNORE;
    case K_LOCALIZATION:
        return !strcmp(n, "resources") ? K_RESOURCES : K_IGNORE;
    case K_RESOURCES:
        return !strcmp(n, "stringTable") ? K_STRINGTABLE : K_IGNORE;
    case K_STRINGTABLE:
        return !strcmp(n, "string") ? K_STRING : K_IGNORE;
    default:
        return K_IGNORE;
    }
}

static p_provider *cur_prov(loader *L) {
    return L->cur_prov >= 0 ? &VAT(p_provider, &L->provs, L->cur_prov) : NULL;
}

/* One template item (data or struct); returns the kind to push. */
static uint8_t start_item(loader *L, const XML_Char **atts, uint8_t k) {
    p_provider *pp = cur_prov(L);
    if (!pp || L->cur_tmpl < 0) return K_IGNORE;
    p_tmpl *t = &VAT(p_tmpl, &pp->tmpls, L->cur_tmpl);
    if (t->too_deep || t->too_big) return K_IGNORE;
    if (k == K_STRUCT && L->sdepth >= MAX_STRUCT_DEPTH) {
        t->too_deep = 1;
        return K_IGNORE;
    }
    if (t->n >= MAX_TEMPLATE_ITEMS) {
        t->too_big = 1;
        return K_IGNORE;
    }
    static const char *const names[] = {"name", "inType", "outType", "count", "length", "map"};
    const char *a[6];
    if (!get_attrs(L, atts, names, a, 6)) return K_IGNORE;
    uint32_t line = cur_line(L);
    p_item *it = vec_push(L, &pp->items, sizeof *it);
    if (!it) {
        stop(L, L->st, L->reason);
        return K_IGNORE;
    }
    t = &VAT(p_tmpl, &pp->tmpls, L->cur_tmpl);
    it->name = a[0];
    it->in = a[1];
    it->out = a[2];
    it->count = a[3];
    it->length = a[4];
    it->map = a[5];
    it->parent = L->sdepth ? L->sparent[L->sdepth - 1] : -1;
    it->line = line;
    it->is_struct = k == K_STRUCT;
    uint32_t rel = t->n++;
    if (k == K_STRUCT) L->sparent[L->sdepth++] = (int32_t)rel;
    return k;
}

static p_named *push_named(loader *L, vec *v, const XML_Char **atts, const char *n0, const char *n1,
                           const char *n2) {
    const char *names[4] = {n0, n1, "message", n2};
    const char *a[4];
    if (!get_attrs(L, atts, names, a, n2 ? 4 : 3)) return NULL;
    uint32_t line = cur_line(L);
    p_named *e = vec_push(L, v, sizeof *e);
    if (!e) {
        stop(L, L->st, L->reason);
        return NULL;
    }
    e->name = a[0];
    e->value = a[1];
    e->message = a[2];
    e->extra = n2 ? a[3] : NULL;
    e->task = -1;
    e->line = line;
    return e;
}

static void XMLCALL on_start(void *ud, const XML_Char *name, const XML_Char **atts) {
    loader *L = ud;
    if (L->st != ETW_OK) return;
    uint8_t parent = L->depth == 0 ? K_ROOT : L->depth <= MAX_DEPTH ? L->kinds[L->depth - 1] : K_IGNORE;
    uint8_t k = parent == K_IGNORE ? K_IGNORE : child_kind(parent, etw_mf_local(name));
    p_provider *pp = cur_prov(L);
    switch (k) {
    case K_EVENTS_TOP:
        L->events_elements++;
        break;
    case K_PROVIDER: {
        static const char *const names[] = {"name", "guid"};
        const char *a[2];
        if (!get_attrs(L, atts, names, a, 2)) return;
        uint32_t line = cur_line(L);
        p_provider *np = vec_push(L, &L->provs, sizeof *np);
        if (!np) { stop(L, L->st, L->reason); return; }
        np->name = a[0];
        np->guid = a[1];
        np->line = line;
        L->cur_prov = (int32_t)(L->provs.n - 1);
        break;
    }
    case K_EVENT: {
        if (!pp) break;
        static const char *const names[] = {"value",    "version", "level",    "task",   "opcode",
                                            "keywords", "channel", "template", "symbol", "message"};
        const char *a[10];
        if (!get_attrs(L, atts, names, a, 10)) return;
        uint32_t line = cur_line(L);
        p_event *e = vec_push(L, &pp->events, sizeof *e);
        if (!e) { stop(L, L->st, L->reason); return; }
        e->value = a[0];
        e->version = a[1];
        e->level = a[2];
        e->task = a[3];
        e->opcode = a[4];
        e->keywords = a[5];
        e->channel = a[6];
        e->tmpl = a[7];
        e->symbol = a[8];
        e->message = a[9];
        e->line = line;
        break;
    }
    case K_TEMPLATE: {
        if (!pp) break;
        static const char *const names[] = {"tid"};
        const char *a[1];
        if (!get_attrs(L, atts, names, a, 1)) return;
        uint32_t line = cur_line(L);
        p_tmpl *t = vec_push(L, &pp->tmpls, sizeof *t);
        if (!t) { stop(L, L->st, L->reason); return; }
        t->tid = a[0];
        t->line = line;
        t->first = pp->items.n;
        L->cur_tmpl = (int32_t)(pp->tmpls.n - 1);
        L->sdepth = 0;
        break;
    }
    case K_DATA:
    case K_STRUCT:
        k = start_item(L, atts, k);
        if (L->st != ETW_OK) return;
        break;
    case K_MAP: {
        if (!pp) break;
        static const char *const names[] = {"name"};
        const char *a[1];
        if (!get_attrs(L, atts, names, a, 1)) return;
        uint32_t line = cur_line(L);
        p_map *mp = vec_push(L, &pp->maps, sizeof *mp);
        if (!mp) { stop(L, L->st, L->reason); return; }
        mp->name = a[0];
        mp->line = line;
        mp->first = pp->mapents.n;
        mp->bitmap = strcmp(etw_mf_local(name), "bitMap") == 0;
        L->cur_map = (int32_t)(pp->maps.n - 1);
        break;
    }
    case K_MAPENT: {
        if (!pp || L->cur_map < 0) break;
        static const char *const names[] = {"value", "message"};
        const char *a[2];
        if (!get_attrs(L, atts, names, a, 2)) return;
        uint32_t line = cur_line(L);
        p_mapent *e = vec_push(L, &pp->mapents, sizeof *e);
        if (!e) { stop(L, L->st, L->reason); return; }
        e->value = a[0];
        e->message = a[1];
        e->line = line;
        VAT(p_map, &pp->maps, L->cur_map).n++;
        break;
    }
    case K_TASK:
        if (!pp) break;
        if (!push_named(L, &pp->tasks, atts, "name", "value", NULL)) return;
        L->cur_task = (int32_t)(pp->tasks.n - 1);
        break;
    case K_OPCODE: {
        if (!pp) break;
        p_named *e = push_named(L, &pp->opcodes, atts, "name", "value", NULL);
        if (!e) return;
        e->task = parent == K_TASK_OPCODES ? L->cur_task : -1;
        break;
    }
    case K_KEYWORD:
        if (pp && !push_named(L, &pp->keywords, atts, "name", "mask", NULL)) return;
        break;
    case K_LEVEL:
        if (pp && !push_named(L, &pp->levels, atts, "name", "value", NULL)) return;
        break;
    case K_CHANNEL: {
        if (!pp) break;
        p_named *e = push_named(L, &pp->channels, atts, "chid", "value", "name");
        if (!e) return;
        e->import = strcmp(etw_mf_local(name), "importChannel") == 0;
        break;
    }
    case K_RESOURCES: {
        static const char *const names[] = {"culture"};
        const char *a[1];
        if (!get_attrs(L, atts, names, a, 1)) return;
        L->cur_group = (int32_t)L->groups++;
        if (L->en_us_group < 0 && a[0] && eq_nocase(a[0], "en-US")) L->en_us_group = L->cur_group;
        break;
    }
    case K_STRING: {
        if (L->cur_group < 0) break;
        static const char *const names[] = {"id", "value"};
        const char *a[2];
        if (!get_attrs_ex(L, atts, names, a, 2, 1)) return;
        if (!a[0] || !a[1]) break;
        p_string *s = vec_push(L, &L->strings, sizeof *s);
        if (!s) { stop(L, L->st, L->reason); return; }
        s->id = a[0];
        s->value = a[1];
        s->group = (uint32_t)L->cur_group;
        break;
    }
    default:
        break;
    }
    if (L->depth < MAX_DEPTH) L->kinds[L->depth] = k;
    L->depth++;
}

static void XMLCALL on_end(void *ud, const XML_Char *name) {
    loader *L = ud;
    (void)name;
    if (L->st != ETW_OK || L->depth == 0) return;
    L->depth--;
    if (L->depth >= MAX_DEPTH) return;
    switch (L->kinds[L->depth]) {
    case K_PROVIDER: L->cur_prov = -1; break;
    case K_TEMPLATE: L->cur_tmpl = -1; L->sdepth = 0; break;
    case K_STRUCT: if (L->sdepth) L->sdepth--; break;
    case K_MAP: L->cur_map = -1; break;
    case K_TASK: L->cur_task = -1; break;
    case K_RESOURCES: L->cur_group = -1; break;
    default: break;
    }
}

static void XMLCALL on_doctype(void *ud, const XML_Char *name, const XML_Char *sysid,
                               const XML_Char *pubid, int has_internal_subset) {
    (void)name, (void)sysid, (void)pubid, (void)has_internal_subset;
    stop((loader *)ud, ETW_E_CORRUPT, "document type declarations are not allowed in a manifest");
}

/* ---- diagnostics ------------------------------------------------------------- */

#if defined(__GNUC__) || defined(__clang__)
__attribute__((format(printf, 5, 6)))
#endif
static void diag(etw_manifest_set *m, etw_status st, const char *origin, uint32_t line,
                 const char *fmt, ...) {
    if (st != ETW_OK) m->problems++; /* ETW_OK: a warning, nothing lost */
    if (!m->on_diag) return;
    int n = snprintf(m->msg, sizeof m->msg, "%s:%u: ", origin, (unsigned)line);
    if (n < 0) n = 0;
    if ((size_t)n < sizeof m->msg) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(m->msg + n, sizeof m->msg - (size_t)n, fmt, ap);
        va_end(ap);
    }
    etw_diag d;
    d.status = st;
    d.file_offset = line;
    d.message = m->msg;
    m->on_diag(m->diag_ctx, &d);
}

#define WARN(L, st, line, ...) diag((L)->m, (st), (L)->doc->origin, (line), __VA_ARGS__)

static const char *nz(const char *s) { return s ? s : ""; }

/* ---- compilation ------------------------------------------------------------- */

/* Resolve every $(string.ID) of s through the string table. A reference
 * that does not resolve keeps its text, sets *missing and is counted for
 * the document's warning (line: where s was written). Returns s itself
 * when it has none; NULL on NOMEM. */
static const char *resolve_text(loader *L, const char *s, uint32_t line, int *missing) {
    *missing = 0;
    if (!s || !strstr(s, "$(")) return s;
    static const char pre[] = "$(string.";
    const size_t pl = sizeof pre - 1;
    size_t total = 0;
    for (int pass = 0; pass < 2; pass++) {
        char *out = NULL;
        if (pass == 1) {
            out = ar_alloc(&L->doc->ar, total + 1);
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
            if (nt_get(&L->strtab, L->m->seed, 0, q + pl, (size_t)(close - (q + pl)), &idx)) {
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

typedef struct c_map {
    etw_map map;
} c_map;

typedef struct c_tmpl {
    const etw_property *props;
    uint16_t prop_count, top_count;
    uint8_t valid;
} c_tmpl;

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
    const char *r = e->message ? resolve_text(L, e->message, e->line, &missing) : NULL;
    if (e->message && !r) return NULL;
    if (!r || missing) { /* no message (or one that resolves nowhere): the value */
        char buf[24];
        snprintf(buf, sizeof buf, "%llu", (unsigned long long)v);
        return ar_strdup(&L->doc->ar, buf);
    }
    size_t n;
    const char *t = trim(r, &n);
    if (t == r && t[n] == 0) return r;
    return ar_strndup(&L->doc->ar, t, n);
}

static int compile_maps(loader *L, p_provider *pp, c_map *out) {
    for (uint32_t i = 0; i < pp->maps.n; i++) {
        const p_map *pm = &VAT(p_map, &pp->maps, i);
        etw_map *m = &out[i].map;
        m->name = pm->name ? pm->name : "";
        m->flags = pm->bitmap ? ETW_MAP_BITMAP : ETW_MAP_VALUEMAP;
        m->count = 0;
        m->entries = NULL;
        if (!pm->n) continue;
        etw_map_entry *e = ar_alloc(&L->doc->ar, (size_t)pm->n * sizeof *e);
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
        if (nt_get(&L->reftab, L->m->seed, (uint32_t)(level + 1), name, len, &v)) return (int32_t)v;
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
static int compile_template(loader *L, p_provider *pp, const p_tmpl *t, const c_map *maps,
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
    etw_property *props = ar_alloc(&L->doc->ar, (size_t)n * sizeof *props);
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
            p->name = ar_strdup(&L->doc->ar, buf);
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
            if (nt_get(&L->names, L->m->seed, S_MAP, mn, ml, &mi)) {
                p->map = &maps[mi].map;
            } else {
                WARN(L, ETW_E_NOT_FOUND, it->line, "template %s: %s uses map \"%s\", which is not defined",
                     nz(t->tid), p->name, it->map);
            }
        }
    }

    /* count and length references, in document order */
    if (!nt_reset(&L->reftab, al, n)) {
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
            nt_put(&L->reftab, L->m->seed, (uint32_t)(it->parent + 1), nm, nl, i);
        }
    }
    etw_free(al, scratch);
    out->props = props;
    out->prop_count = (uint16_t)n;
    out->top_count = (uint16_t)top;
    return 1;
}

/* Look up a reference attribute (trimmed) in the provider name table. */
static int lookup(loader *L, uint32_t scope, const char *s, uint32_t *v) {
    size_t n;
    const char *t = trim(s, &n);
    return nt_get(&L->names, L->m->seed, scope, t, n, v);
}

static char *join(loader *L, const char *a, const char *sep, const char *b) {
    size_t la = strlen(a), ls = strlen(sep), lb = strlen(b);
    char *d = ar_alloc(&L->doc->ar, la + ls + lb + 1);
    if (!d) return NULL;
    memcpy(d, a, la);
    memcpy(d + la, sep, ls);
    memcpy(d + la + ls, b, lb + 1);
    return d;
}

/* Parse a numeric attribute that must fit `max`. */
static int num_attr(const char *s, uint64_t max, uint64_t *v) {
    return s && etw_mf_parse_u64(s, v) && *v <= max;
}

/* Values of the provider's named items, by parse index (temporary, in
 * the document arena). */
typedef struct c_prov_tables {
    const p_named *tasks;
    const char **task_display;   /* display names (display_name) */
    const char **opcode_display;
    uint64_t *task_values;
    uint64_t *opcode_values;
    uint64_t *level_values;
    uint64_t *channel_values;
    uint64_t *keyword_masks;
} c_prov_tables;

/* Compile one event into *e. Returns -1 on NOMEM, 0 when the event is
 * skipped, 1 when compiled. */
static int compile_event(loader *L, p_provider *pp, const p_event *pe, const c_prov_tables *pt,
                         const c_tmpl *tmpls, mf_event *e) {
    uint64_t v;
    memset(e, 0, sizeof *e);
    e->line = pe->line;
    if (!num_attr(pe->value, 0xFFFF, &v)) {
        WARN(L, ETW_E_CORRUPT, pe->line, "provider %s: event value \"%s\" is not a number up to 65535; skipped",
             nz(pp->name), nz(pe->value));
        return 0;
    }
    e->id = (uint16_t)v;
    if (pe->version) {
        if (!num_attr(pe->version, 0xFF, &v)) {
            WARN(L, ETW_E_CORRUPT, pe->line, "provider %s: event %u: version \"%s\" is not a number up to 255; skipped",
                 nz(pp->name), e->id, pe->version);
            return 0;
        }
        e->version = (uint8_t)v;
    }
    uint32_t idx;
    /* level */
    if (pe->level) {
        if (lookup(L, S_LEVEL, pe->level, &idx)) e->level = (uint8_t)pt->level_values[idx];
        else if (etw_mf_std_level(pe->level, &e->level)) {
        } else if (num_attr(pe->level, 0xFF, &v)) e->level = (uint8_t)v;
        else
            WARN(L, ETW_E_NOT_FOUND, pe->line, "provider %s: event %u: unknown level \"%s\"", nz(pp->name), e->id,
                 pe->level);
    }
    /* task */
    int32_t task = -1;
    if (pe->task) {
        size_t tl;
        const char *tn = trim(pe->task, &tl);
        uint16_t tv;
        if (tl == 0 || etw_mf_std_task(pe->task, &tv)) {
        } else if (lookup(L, S_TASK, pe->task, &idx)) {
            task = (int32_t)idx;
            e->task = (uint16_t)pt->task_values[idx];
            e->task_name = pt->task_display[idx];
        } else {
            WARN(L, ETW_E_NOT_FOUND, pe->line, "provider %s: event %u: unknown task \"%s\"", nz(pp->name), e->id,
                 pe->task);
            e->task_name = ar_strndup(&L->doc->ar, tn, tl);
            if (!e->task_name) return -1;
        }
    }
    /* opcode: the task's own, the provider's, the predefined ones */
    if (pe->opcode) {
        size_t ol;
        const char *on = trim(pe->opcode, &ol);
        if (ol == 0) {
        } else if ((task >= 0 && lookup(L, SCOPE_OPCODE(task + 1), pe->opcode, &idx)) ||
                   lookup(L, SCOPE_OPCODE(0), pe->opcode, &idx)) {
            e->opcode = (uint8_t)pt->opcode_values[idx];
            e->opcode_name = pt->opcode_display[idx];
        } else if (etw_mf_std_opcode(on, &e->opcode)) {
            e->opcode_name = etw_mf_std_opcode_display(on); /* attributes come trimmed */
        } else {
            WARN(L, ETW_E_NOT_FOUND, pe->line, "provider %s: event %u: unknown opcode \"%s\"", nz(pp->name),
                 e->id, pe->opcode);
        }
    }
    /* keywords: space-separated names */
    if (pe->keywords) {
        const char *p = pe->keywords;
        for (;;) {
            while (is_space(*p)) p++;
            if (!*p) break;
            const char *q = p;
            while (*q && !is_space(*q)) q++;
            size_t kl = (size_t)(q - p);
            uint64_t mask;
            if (nt_get(&L->names, L->m->seed, S_KEYWORD, p, kl, &idx)) {
                e->keywords |= pt->keyword_masks[idx];
            } else {
                char buf[64];
                int ok = 0;
                if (kl < sizeof buf) {
                    memcpy(buf, p, kl);
                    buf[kl] = 0;
                    ok = etw_mf_std_keyword(buf, &mask);
                }
                if (ok) e->keywords |= mask;
                else
                    WARN(L, ETW_E_NOT_FOUND, pe->line, "provider %s: event %u: unknown keyword \"%.*s\"",
                         nz(pp->name), e->id, (int)(kl > 200 ? 200 : kl), p);
            }
            p = q;
        }
    }
    /* channel: by chid, then by name, then predefined */
    if (pe->channel) {
        size_t cl;
        trim(pe->channel, &cl);
        if (cl == 0) {
        } else if (lookup(L, S_CHANNEL, pe->channel, &idx) || lookup(L, S_CHANNAME, pe->channel, &idx)) {
            e->channel = (uint8_t)pt->channel_values[idx];
        } else if (etw_mf_std_channel(pe->channel, &e->channel)) {
        } else {
            WARN(L, ETW_E_NOT_FOUND, pe->line, "provider %s: event %u: unknown channel \"%s\"", nz(pp->name),
                 e->id, pe->channel);
        }
    }
    /* template */
    if (pe->tmpl) {
        size_t tl;
        trim(pe->tmpl, &tl);
        if (tl && lookup(L, S_TEMPLATE, pe->tmpl, &idx)) {
            if (tmpls[idx].valid) {
                e->props = tmpls[idx].props;
                e->prop_count = tmpls[idx].prop_count;
                e->top_count = tmpls[idx].top_count;
            } else {
                WARN(L, ETW_E_NOT_FOUND, pe->line,
                     "provider %s: event %u version %u: template %s was skipped; the event has no fields",
                     nz(pp->name), e->id, e->version, pe->tmpl);
            }
        } else if (tl) {
            WARN(L, ETW_E_NOT_FOUND, pe->line,
                 "provider %s: event %u version %u: template \"%s\" is not defined; the event has no fields",
                 nz(pp->name), e->id, e->version, pe->tmpl);
        }
    }
    /* message */
    if (pe->message) {
        int missing;
        e->message = resolve_text(L, pe->message, pe->line, &missing);
        if (!e->message) return -1;
        if (missing) e->message = NULL; /* a message that resolves nowhere is none */
    }
    /* name (docs/json-output.md): Task/Opcode from their display names, Task alone for opcode 0,
     * the symbol when there is no task, else EventID(N) */
    const char *sym = NULL;
    if (pe->symbol) {
        size_t sl;
        sym = trim(pe->symbol, &sl);
        if (sl == 0) sym = NULL;
        else if (sym[sl] != 0 && !(sym = ar_strndup(&L->doc->ar, sym, sl))) return -1;
    }
    if (e->task_name) {
        if (e->opcode == 0 || !e->opcode_name) e->name = e->task_name;
        else if (!(e->name = join(L, e->task_name, "/", e->opcode_name))) return -1;
    } else if (sym) {
        e->name = sym;
    } else {
        char buf[32];
        snprintf(buf, sizeof buf, "EventID(%u)", (unsigned)e->id);
        if (!(e->name = ar_strdup(&L->doc->ar, buf))) return -1;
    }
    return 1;
}

static uint32_t ev_hash(uint16_t id, uint8_t version) {
    return (uint32_t)(mix64((uint64_t)id << 8 | version) >> 32);
}

/* Enter the named items of v (tasks, opcodes, keywords, levels) into the
 * provider name table and their numeric values into values[]. Opcodes are
 * entered under the scope of their task (or the provider's). */
static void put_named(loader *L, const p_provider *pp, const vec *v, uint32_t scope, const char *what,
                      uint64_t maxv, uint64_t *values) {
    for (uint32_t i = 0; i < v->n; i++) {
        const p_named *x = &VAT(p_named, v, i);
        uint64_t val = 0;
        values[i] = 0;
        if (!x->name || !*x->name) {
            WARN(L, ETW_E_CORRUPT, x->line, "provider %s: %s without a name; ignored", nz(pp->name), what);
            continue;
        }
        if (!num_attr(x->value, maxv, &val)) {
            WARN(L, ETW_E_CORRUPT, x->line, "provider %s: %s %s: value \"%s\" is not a number up to %llu; 0 used",
                 nz(pp->name), what, x->name, nz(x->value), (unsigned long long)maxv);
            val = 0;
        }
        values[i] = val;
        uint32_t sc = scope == S_OPCODE ? SCOPE_OPCODE(x->task + 1) : scope;
        if (nt_put(&L->names, L->m->seed, sc, x->name, strlen(x->name), i))
            WARN(L, ETW_E_CORRUPT, x->line, "provider %s: %s %s is defined again; the later one is used",
                 nz(pp->name), what, x->name);
    }
}

/* The name TDH shows for a task or opcode (docs/json-output.md, "event"):
 * its message resolved in the string table, without surrounding white
 * space; its name where it has no message, or one that is empty or
 * resolves nowhere. "" for an item with neither. NULL on NOMEM. */
static const char *display_name(loader *L, const p_named *x) {
    const char *fallback = x->name ? x->name : "";
    if (!x->message) return fallback;
    int missing;
    const char *r = resolve_text(L, x->message, x->line, &missing);
    if (!r) return NULL;
    size_t n;
    const char *t = trim(r, &n);
    if (missing || n == 0) return fallback;
    if (t[n] == 0) return t;
    return ar_strndup(&L->doc->ar, t, n);
}

/* Compile provider pp. *out = NULL when it is skipped. 0 on NOMEM. */
static int compile_provider(loader *L, p_provider *pp, mf_provider **out) {
    *out = NULL;
    etw_guid guid;
    if (!etw_mf_parse_guid(pp->guid, &guid)) {
        WARN(L, ETW_E_CORRUPT, pp->line, "provider %s has no valid guid (\"%s\"); skipped", nz(pp->name),
             pp->guid ? pp->guid : "missing");
        return 1;
    }
    L->warned_in = L->warned_out = 0;
    const etw_allocator *al = &L->m->al;
    mf_arena *ar = &L->doc->ar;
    uint64_t seed = L->m->seed;

    /* name table */
    uint64_t total = (uint64_t)pp->tasks.n + pp->opcodes.n + pp->keywords.n + pp->levels.n +
                     2 * (uint64_t)pp->channels.n + pp->maps.n + pp->tmpls.n;
    if (total > 0x3FFFFFFF || !nt_reset(&L->names, al, (uint32_t)total)) return 0;

    c_prov_tables pt;
    pt.tasks = pp->tasks.v;
    pt.task_values = ar_alloc(ar, (size_t)pp->tasks.n * sizeof(uint64_t));
    pt.opcode_values = ar_alloc(ar, (size_t)pp->opcodes.n * sizeof(uint64_t));
    pt.level_values = ar_alloc(ar, (size_t)pp->levels.n * sizeof(uint64_t));
    pt.channel_values = ar_alloc(ar, (size_t)pp->channels.n * sizeof(uint64_t));
    pt.keyword_masks = ar_alloc(ar, (size_t)pp->keywords.n * sizeof(uint64_t));
    if (!pt.task_values || !pt.opcode_values || !pt.level_values || !pt.channel_values || !pt.keyword_masks)
        return 0;
    put_named(L, pp, &pp->tasks, S_TASK, "task", 0xFFFF, pt.task_values);
    put_named(L, pp, &pp->opcodes, S_OPCODE, "opcode", 0xFF, pt.opcode_values);
    put_named(L, pp, &pp->keywords, S_KEYWORD, "keyword", UINT64_MAX, pt.keyword_masks);
    put_named(L, pp, &pp->levels, S_LEVEL, "level", 0xFF, pt.level_values);
    pt.task_display = ar_alloc(ar, (size_t)pp->tasks.n * sizeof(const char *));
    pt.opcode_display = ar_alloc(ar, (size_t)pp->opcodes.n * sizeof(const char *));
    if (!pt.task_display || !pt.opcode_display) return 0;
    for (uint32_t i = 0; i < pp->tasks.n; i++)
        if (!(pt.task_display[i] = display_name(L, &VAT(p_named, &pp->tasks, i)))) return 0;
    for (uint32_t i = 0; i < pp->opcodes.n; i++)
        if (!(pt.opcode_display[i] = display_name(L, &VAT(p_named, &pp->opcodes, i)))) return 0;

    /* channels: chid (or name) -> value; missing values numbered from 16 */
    {
        uint8_t used[256] = {0};
        uint32_t nch = pp->channels.n;
        for (uint32_t i = 0; i < nch; i++) {
            const p_named *x = &VAT(p_named, &pp->channels, i);
            uint64_t v;
            pt.channel_values[i] = 0;
            if (x->value && num_attr(x->value, 0xFF, &v)) {
                pt.channel_values[i] = v;
                used[v] = 1;
            } else if (x->value) {
                WARN(L, ETW_E_CORRUPT, x->line, "provider %s: channel %s: value \"%s\" is not a number up to 255",
                     nz(pp->name), nz(x->name), x->value);
            }
        }
        unsigned next = 16;
        for (uint32_t i = 0; i < nch; i++) {
            const p_named *x = &VAT(p_named, &pp->channels, i);
            if (x->value) continue;
            uint8_t sv;
            if (x->import && ((x->extra && etw_mf_std_channel(x->extra, &sv)) ||
                              (x->name && etw_mf_std_channel(x->name, &sv)))) {
                pt.channel_values[i] = sv;
                continue;
            }
            while (next < 256 && used[next]) next++;
            if (next < 256) {
                pt.channel_values[i] = next;
                used[next] = 1;
            }
        }
        for (uint32_t i = 0; i < nch; i++) {
            const p_named *x = &VAT(p_named, &pp->channels, i);
            size_t nl;
            if (x->name && *x->name) {
                const char *nm = trim(x->name, &nl);
                nt_put(&L->names, seed, S_CHANNEL, nm, nl, i);
            }
            if (x->extra && *x->extra) {
                const char *nm = trim(x->extra, &nl);
                nt_put(&L->names, seed, S_CHANNAME, nm, nl, i);
            }
        }
    }

    /* maps */
    c_map *maps = ar_alloc(ar, (size_t)pp->maps.n * sizeof *maps);
    if (!maps) return 0;
    for (uint32_t i = 0; i < pp->maps.n; i++) {
        const p_map *x = &VAT(p_map, &pp->maps, i);
        if (!x->name || !*x->name) continue;
        size_t nl;
        const char *nm = trim(x->name, &nl);
        if (nt_put(&L->names, seed, S_MAP, nm, nl, i))
            WARN(L, ETW_E_CORRUPT, x->line, "provider %s: map %s is defined again; the later one is used",
                 nz(pp->name), x->name);
    }
    if (!compile_maps(L, pp, maps)) return 0;

    /* templates */
    c_tmpl *tmpls = ar_alloc(ar, (size_t)pp->tmpls.n * sizeof *tmpls);
    if (!tmpls) return 0;
    for (uint32_t i = 0; i < pp->tmpls.n; i++) {
        const p_tmpl *x = &VAT(p_tmpl, &pp->tmpls, i);
        if (!compile_template(L, pp, x, maps, &tmpls[i])) return 0;
    }
    for (uint32_t i = 0; i < pp->tmpls.n; i++) {
        const p_tmpl *x = &VAT(p_tmpl, &pp->tmpls, i);
        if (!x->tid || !*x->tid) {
            WARN(L, ETW_E_CORRUPT, x->line, "provider %s: template without a tid; ignored", nz(pp->name));
            continue;
        }
        size_t nl;
        const char *nm = trim(x->tid, &nl);
        if (nt_put(&L->names, seed, S_TEMPLATE, nm, nl, i))
            WARN(L, ETW_E_CORRUPT, x->line, "provider %s: template %s is defined again; the later one is used",
                 nz(pp->name), x->tid);
    }

    /* events, deduplicated on (id, version): the later definition wins */
    mf_provider *p = ar_alloc(ar, sizeof *p);
    if (!p) return 0;
    memset(p, 0, sizeof *p);
    p->guid = guid;
    p->name = pp->name;
    p->doc = L->doc;
    p->line = pp->line;
    uint32_t nev = pp->events.n;
    uint64_t cap = 8;
    while (cap < (uint64_t)nev * 2) cap <<= 1;
    p->events = ar_alloc(ar, (size_t)(nev ? nev : 1) * sizeof *p->events);
    p->slots = ar_alloc(ar, (size_t)cap * sizeof *p->slots);
    if (!p->events || !p->slots) return 0;
    memset(p->slots, 0, (size_t)cap * sizeof *p->slots);
    p->mask = (uint32_t)cap - 1;
    for (uint32_t i = 0; i < nev; i++) {
        const p_event *pe = &VAT(p_event, &pp->events, i);
        mf_event tmp;
        int r = compile_event(L, pp, pe, &pt, tmpls, &tmp);
        if (r < 0) return 0;
        if (r == 0) continue;
        uint32_t h = ev_hash(tmp.id, tmp.version);
        for (uint32_t s = h & p->mask;; s = (s + 1) & p->mask) {
            uint32_t x = p->slots[s];
            if (!x) {
                p->events[p->nevents] = tmp;
                p->slots[s] = ++p->nevents;
                break;
            }
            mf_event *old = &p->events[x - 1];
            if (old->id == tmp.id && old->version == tmp.version) {
                WARN(L, ETW_E_CORRUPT, tmp.line,
                     "provider %s: event %u version %u is defined again (first at line %u); the later one is used",
                     nz(pp->name), tmp.id, tmp.version, old->line);
                *old = tmp;
                break;
            }
        }
    }
    *out = p;
    return 1;
}

/* ---- the set ------------------------------------------------------------------ */

static mf_provider **prov_slot(const etw_manifest_set *m, const etw_guid *g) {
    if (!m->pslots) return NULL;
    for (uint32_t i = (uint32_t)guid_hash(m, g) & m->pmask;; i = (i + 1) & m->pmask) {
        mf_provider **s = &m->pslots[i];
        if (!*s || etw_guid_equal(&(*s)->guid, g)) return s;
    }
}

static const mf_provider *find_provider(const etw_manifest_set *m, const etw_guid *g) {
    mf_provider **s = prov_slot(m, g);
    return s ? *s : NULL;
}

/* Room for `more` new providers at load <= 1/2. */
static int prov_reserve(etw_manifest_set *m, uint32_t more) {
    uint64_t need = ((uint64_t)m->nprov + more) * 2 + 1;
    uint64_t cap = m->pslots ? (uint64_t)m->pmask + 1 : 0;
    if (need <= cap) return 1;
    uint64_t ncap = 16;
    while (ncap < need) ncap <<= 1;
    if (ncap > ((uint64_t)1 << 30)) return 0;
    mf_provider **ns = etw_calloc(&m->al, (size_t)ncap, sizeof *ns);
    if (!ns) return 0;
    mf_provider **old = m->pslots;
    m->pslots = ns;
    m->pmask = (uint32_t)ncap - 1;
    for (uint64_t i = 0; i < cap; i++) {
        if (!old[i]) continue;
        mf_provider **s = prov_slot(m, &old[i]->guid);
        *s = old[i];
    }
    etw_free(&m->al, old);
    return 1;
}

static void doc_unlink_free(etw_manifest_set *m, mf_doc *d) {
    if (d->prev) d->prev->next = d->next;
    else m->docs = d->next;
    if (d->next) d->next->prev = d->prev;
    (void)m;
    ar_free(&d->ar); /* d lives in its own arena */
}

static void install(loader *L, mf_provider *p) {
    etw_manifest_set *m = L->m;
    mf_provider **s = prov_slot(m, &p->guid);
    mf_provider *old = *s;
    p->order = m->next_order++;
    p->doc->live++;
    *s = p;
    m->nevents += p->nevents;
    if (!old) {
        m->nprov++;
        return;
    }
    char g[ETW_GUID_STRING_SIZE];
    etw_guid_format(&p->guid, g);
    WARN(L, ETW_OK, p->line, "provider %s {%s} replaces the one loaded from %s:%u", nz(p->name), g,
         old->doc->origin, old->line);
    m->nevents -= old->nevents;
    if (m->cache) etw_cache_forget_provider(m->cache, m->kind, &p->guid);
    if (--old->doc->live == 0 && old->doc != L->doc) doc_unlink_free(m, old->doc);
}

etw_status etw_manifest_set_new(etw_manifest_set **out, const etw_manifest_options *opt) {
    if (!out) return ETW_E_INVALID_ARG;
    *out = NULL;
    etw_allocator a = etw_allocator_resolve(opt ? opt->allocator : NULL);
    etw_manifest_set *m = etw_calloc(&a, 1, sizeof *m);
    if (!m) return ETW_E_NOMEM;
    m->al = a;
    m->kind = opt && opt->kind ? opt->kind : ETW_SOURCE_MANIFEST;
    m->on_diag = opt ? opt->on_diag : NULL;
    m->diag_ctx = opt ? opt->diag_ctx : NULL;
    m->seed = mix64((uint64_t)(uintptr_t)m ^ UINT64_C(0x6d616e6966657374));
    *out = m;
    return ETW_OK;
}

void etw_manifest_set_free(etw_manifest_set *m) {
    if (!m) return;
    while (m->docs) doc_unlink_free(m, m->docs);
    etw_allocator a = m->al;
    etw_free(&a, m->pslots);
    etw_free(&a, m);
}

static void loader_free(loader *L) {
    for (uint32_t i = 0; i < L->provs.n; i++) {
        p_provider *pp = &VAT(p_provider, &L->provs, i);
        vec_free(L, &pp->items);
        vec_free(L, &pp->tmpls);
        vec_free(L, &pp->events);
        vec_free(L, &pp->tasks);
        vec_free(L, &pp->opcodes);
        vec_free(L, &pp->keywords);
        vec_free(L, &pp->levels);
        vec_free(L, &pp->channels);
        vec_free(L, &pp->maps);
        vec_free(L, &pp->mapents);
    }
    vec_free(L, &L->provs);
    vec_free(L, &L->strings);
    nt_free(&L->names, &L->m->al);
    nt_free(&L->strtab, &L->m->al);
    nt_free(&L->reftab, &L->m->al);
}

/* Compile the parsed document and install its providers. */
static etw_status commit(loader *L, uint32_t *loaded) {
    etw_manifest_set *m = L->m;
    /* string table of the chosen culture */
    uint32_t group = L->en_us_group >= 0 ? (uint32_t)L->en_us_group : 0;
    if (!nt_reset(&L->strtab, &m->al, L->strings.n)) return ETW_E_NOMEM;
    for (uint32_t i = 0; i < L->strings.n; i++) {
        const p_string *s = &VAT(p_string, &L->strings, i);
        if (s->group != group) continue;
        size_t n;
        const char *id = trim(s->id, &n);
        nt_put(&L->strtab, m->seed, 0, id, n, i);
    }
    uint32_t np = L->provs.n;
    mf_provider **compiled = etw_calloc(&m->al, np ? np : 1, sizeof *compiled);
    if (!compiled) return ETW_E_NOMEM;
    uint32_t nc = 0;
    for (uint32_t i = 0; i < np; i++) {
        mf_provider *p;
        if (!compile_provider(L, &VAT(p_provider, &L->provs, i), &p)) {
            etw_free(&m->al, compiled);
            return ETW_E_NOMEM;
        }
        if (p) compiled[nc++] = p;
    }
    if (L->unresolved)
        WARN(L, ETW_OK, L->unresolved_line,
             "%llu string reference%s resolve%s in no string table of this file (the first: %.*s); "
             "names fall back to the name attribute and such messages are left out",
             (unsigned long long)L->unresolved, L->unresolved == 1 ? "" : "s", L->unresolved == 1 ? "s" : "",
             (int)(L->unresolved_len > 200 ? 200 : L->unresolved_len), L->unresolved_ref);
    if (!prov_reserve(m, nc)) {
        etw_free(&m->al, compiled);
        return ETW_E_NOMEM;
    }
    /* the document joins the set before its providers do */
    L->doc->prev = NULL;
    L->doc->next = m->docs;
    if (m->docs) m->docs->prev = L->doc;
    m->docs = L->doc;
    for (uint32_t i = 0; i < nc; i++) install(L, compiled[i]);
    etw_free(&m->al, compiled);
    if (nc == 0) {
        if (L->events_elements == 0)
            WARN(L, ETW_OK, 0,
                 "no provider loaded: no <events> element (neither an instrumentation manifest nor a "
                 "component manifest with <instrumentation>)");
        else if (np == 0)
            WARN(L, ETW_OK, 0, "no provider loaded: its <events> element%s hold%s no <provider>",
                 L->events_elements == 1 ? "" : "s", L->events_elements == 1 ? "s" : "");
        else
            WARN(L, ETW_OK, 0, "no provider loaded: none of its %u <provider> elements is usable",
                 (unsigned)np);
    }
    if (nc && m->cache) etw_cache_miss_clear(m->cache);
    if (L->doc->live == 0) doc_unlink_free(m, L->doc);
    L->doc = NULL;
    if (loaded) *loaded = nc;
    return ETW_OK;
}

etw_status etw_manifest_load_xml(etw_manifest_set *m, const char *xml, size_t len, const char *origin,
                                 uint32_t *providers) {
    if (providers) *providers = 0;
    if (!m || (!xml && len)) return ETW_E_INVALID_ARG;
    if (!origin) origin = "<memory>";

    /* the document's arena holds the mf_doc itself */
    mf_arena ar = {&m->al, NULL};
    mf_doc *doc = ar_alloc(&ar, sizeof *doc);
    if (!doc) return ETW_E_NOMEM;
    memset(doc, 0, sizeof *doc);
    doc->ar = ar;
    doc->origin = ar_strdup(&doc->ar, origin);
    if (!doc->origin) {
        ar_free(&doc->ar);
        return ETW_E_NOMEM;
    }

    loader L;
    memset(&L, 0, sizeof L);
    L.m = m;
    L.doc = doc;
    L.cur_prov = L.cur_tmpl = L.cur_task = L.cur_map = L.cur_group = L.en_us_group = -1;
    L.xp = XML_ParserCreate(NULL);
    if (!L.xp) {
        ar_free(&doc->ar);
        return ETW_E_NOMEM;
    }
    XML_SetUserData(L.xp, &L);
    XML_SetElementHandler(L.xp, on_start, on_end);
    XML_SetStartDoctypeDeclHandler(L.xp, on_doctype);

    enum XML_Status xs = XML_STATUS_OK;
    size_t off = 0;
    const size_t chunk = (size_t)1 << 30;
    do {
        size_t n = len - off > chunk ? chunk : len - off;
        int final = off + n == len;
        xs = XML_Parse(L.xp, xml ? xml + off : "", (int)n, final);
        off += n;
    } while (xs == XML_STATUS_OK && off < len);

    etw_status st = ETW_OK;
    if (xs != XML_STATUS_OK || L.st != ETW_OK) {
        st = L.st != ETW_OK ? L.st : ETW_E_CORRUPT;
        enum XML_Error code = XML_GetErrorCode(L.xp);
        const char *reason = L.reason ? L.reason : XML_ErrorString(code);
        diag(m, st, doc->origin, cur_line(&L), "%s; nothing of this manifest is loaded",
             reason ? reason : "malformed XML");
    } else {
        st = commit(&L, providers);
        if (st != ETW_OK) diag(m, st, doc->origin, 0, "%s; nothing of this manifest is loaded", etw_strerror(st));
    }
    XML_ParserFree(L.xp);
    loader_free(&L);
    if (L.doc) ar_free(&L.doc->ar); /* not committed */
    return st;
}

/* ---- files --------------------------------------------------------------------- */

static etw_status load_file(etw_manifest_set *m, const char *path, uint32_t *providers) {
    FILE *f = fopen(path, "rb");
    if (!f) {
        int e = errno;
        diag(m, ETW_E_IO, path, 0, "cannot read the manifest: %s", strerror(e));
        errno = e;
        return ETW_E_IO;
    }
    etw_status st = ETW_OK;
    char *buf = NULL;
    size_t len = 0, cap = 0;
    for (;;) {
        if (len == cap) {
            size_t ncap = cap ? cap * 2 : 256 * 1024;
            if (ncap < cap) {
                st = ETW_E_LIMIT;
                break;
            }
            char *nb = etw_alloc(&m->al, ncap);
            if (!nb) {
                st = ETW_E_NOMEM;
                break;
            }
            if (len) memcpy(nb, buf, len);
            etw_free(&m->al, buf);
            buf = nb;
            cap = ncap;
        }
        size_t r = fread(buf + len, 1, cap - len, f);
        len += r;
        if (r == 0) {
            if (ferror(f)) st = ETW_E_IO;
            break;
        }
    }
    fclose(f);
    if (st == ETW_OK) st = etw_manifest_load_xml(m, buf, len, path, providers);
    else diag(m, st, path, 0, "cannot read the manifest: %s", etw_strerror(st));
    etw_free(&m->al, buf);
    return st;
}

#ifndef _WIN32
static int name_cmp(const void *a, const void *b) {
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

static int has_manifest_ext(const char *n) {
    size_t l = strlen(n);
    return (l > 4 && eq_nocase(n + l - 4, ".man")) || (l > 4 && eq_nocase(n + l - 4, ".xml"));
}
#endif

#ifndef _WIN32
/* How deep -m DIR looks into subdirectories. */
#define MAX_DIR_DEPTH 16

typedef struct dir_walk {
    uint32_t files;     /* manifest files met */
    uint32_t providers; /* providers they loaded */
} dir_walk;

/* Load every *.man / *.xml file of dir and of its subdirectories (symbolic
 * links to directories are not followed), in name order. */
static etw_status load_dir(etw_manifest_set *m, const char *path, uint32_t depth, dir_walk *w) {
    DIR *d = opendir(path);
    if (!d) {
        int e = errno;
        diag(m, ETW_E_IO, path, 0, "cannot read the directory: %s", strerror(e));
        errno = e;
        return ETW_E_IO;
    }
    char **names = NULL;
    size_t n = 0, cap = 0;
    etw_status st = ETW_OK;
    struct dirent *de;
    while ((de = readdir(d)) != NULL) {
        if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, "..")) continue;
        if (n == cap) {
            size_t ncap = cap ? cap * 2 : 16;
            char **nn = etw_calloc(&m->al, ncap, sizeof *nn);
            if (!nn) {
                st = ETW_E_NOMEM;
                break;
            }
            if (n) memcpy(nn, names, n * sizeof *nn);
            etw_free(&m->al, names);
            names = nn;
            cap = ncap;
        }
        size_t pl = strlen(path), nl = strlen(de->d_name);
        char *full = etw_alloc(&m->al, pl + nl + 2);
        if (!full) {
            st = ETW_E_NOMEM;
            break;
        }
        memcpy(full, path, pl);
        full[pl] = '/';
        memcpy(full + pl + 1, de->d_name, nl + 1);
        names[n++] = full;
    }
    closedir(d);
    if (st == ETW_OK) {
        if (n) qsort(names, n, sizeof *names, name_cmp);
        for (size_t i = 0; i < n; i++) {
            struct stat ls, fs;
            if (lstat(names[i], &ls) != 0 || stat(names[i], &fs) != 0) continue;
            etw_status s = ETW_OK;
            if (S_ISDIR(fs.st_mode)) {
                if (S_ISLNK(ls.st_mode)) continue;
                if (depth + 1 >= MAX_DIR_DEPTH) {
                    diag(m, ETW_E_LIMIT, names[i], 0, "more than %d directories deep; not searched",
                         MAX_DIR_DEPTH);
                    continue;
                }
                s = load_dir(m, names[i], depth + 1, w);
            } else if (has_manifest_ext(names[i])) {
                uint32_t got = 0;
                w->files++;
                s = load_file(m, names[i], &got);
                w->providers += got;
            }
            if (s != ETW_OK && st == ETW_OK) st = s;
        }
    }
    for (size_t i = 0; i < n; i++) etw_free(&m->al, names[i]);
    etw_free(&m->al, names);
    return st;
}
#endif

etw_status etw_manifest_load_path(etw_manifest_set *m, const char *path, uint32_t *providers) {
    if (providers) *providers = 0;
    if (!m || !path) return ETW_E_INVALID_ARG;
    struct stat sb;
    if (stat(path, &sb) != 0) {
        int e = errno;
        diag(m, ETW_E_IO, path, 0, "cannot read the manifest: %s", strerror(e));
        errno = e;
        return ETW_E_IO;
    }
    if (!S_ISDIR(sb.st_mode)) return load_file(m, path, providers);
#ifdef _WIN32
    diag(m, ETW_E_UNSUPPORTED, path, 0, "loading a directory is not supported on this platform");
    return ETW_E_UNSUPPORTED;
#else
    dir_walk w = {0, 0};
    etw_status st = load_dir(m, path, 0, &w);
    if (providers) *providers = w.providers;
    if (w.files == 0)
        diag(m, ETW_OK, path, 0, "no provider loaded: no *.man or *.xml file in this directory or below");
    else if (w.providers == 0)
        diag(m, ETW_OK, path, 0, "no provider loaded: none of its %u manifest file%s has a usable provider",
             (unsigned)w.files, w.files == 1 ? "" : "s");
    return st;
#endif
}

/* ---- queries -------------------------------------------------------------------- */

int etw_manifest_has_provider(const etw_manifest_set *m, const etw_guid *provider) {
    return m && provider && find_provider(m, provider) != NULL;
}

const char *etw_manifest_provider_name(const etw_manifest_set *m, const etw_guid *provider) {
    const mf_provider *p = m && provider ? find_provider(m, provider) : NULL;
    return p ? p->name : NULL;
}

int etw_manifest_provider_info(const etw_manifest_set *m, const etw_guid *provider, const char **name,
                               const char **origin) {
    const mf_provider *p = m && provider ? find_provider(m, provider) : NULL;
    if (!p) return 0;
    if (name) *name = p->name;
    if (origin) *origin = p->doc->origin;
    return 1;
}

uint32_t etw_manifest_provider_count(const etw_manifest_set *m) { return m ? m->nprov : 0; }

uint32_t etw_manifest_event_count(const etw_manifest_set *m) { return m ? m->nevents : 0; }

uint64_t etw_manifest_problem_count(const etw_manifest_set *m) { return m ? m->problems : 0; }

void etw_manifest_set_cache(etw_manifest_set *m, etw_cache *cache) {
    if (m) m->cache = cache;
}

static int prov_order_cmp(const void *a, const void *b) {
    const mf_provider *x = *(const mf_provider *const *)a, *y = *(const mf_provider *const *)b;
    return (x->order > y->order) - (x->order < y->order);
}

void etw_manifest_foreach_event(const etw_manifest_set *m, etw_manifest_event_fn fn, void *ctx) {
    if (!m || !fn || !m->nprov) return;
    etw_allocator a = m->al;
    mf_provider **list = etw_calloc(&a, m->nprov, sizeof *list);
    uint32_t n = 0;
    if (list) {
        for (uint32_t i = 0; i <= m->pmask; i++)
            if (m->pslots[i]) list[n++] = m->pslots[i];
        qsort(list, n, sizeof *list, prov_order_cmp);
        for (uint32_t i = 0; i < n; i++)
            for (uint32_t j = 0; j < list[i]->nevents; j++)
                if (fn(ctx, &list[i]->guid, list[i]->events[j].id, list[i]->events[j].version)) goto done;
    done:
        etw_free(&a, list);
        return;
    }
    /* no memory for the ordering: table order */
    for (uint32_t i = 0; i <= m->pmask; i++) {
        const mf_provider *p = m->pslots[i];
        if (!p) continue;
        for (uint32_t j = 0; j < p->nevents; j++)
            if (fn(ctx, &p->guid, p->events[j].id, p->events[j].version)) return;
    }
}

static const mf_event *find_event(const mf_provider *p, uint16_t id, uint8_t version) {
    for (uint32_t s = ev_hash(id, version) & p->mask;; s = (s + 1) & p->mask) {
        uint32_t x = p->slots[s];
        if (!x) return NULL;
        const mf_event *e = &p->events[x - 1];
        if (e->id == id && e->version == version) return e;
    }
}

/* ---- the source ------------------------------------------------------------------- */

static etw_status build(etw_manifest_set *m, etw_cache *cache, uint8_t ptr_size, const etw_guid *g,
                        uint16_t id, uint8_t version, const uint8_t *key, size_t key_len, uint64_t hash,
                        const etw_schema **out, const char **why) {
    const mf_provider *p = find_provider(m, g);
    if (!p) return ETW_E_NOT_FOUND;
    const mf_event *e = find_event(p, id, version);
    if (!e) return ETW_E_NOT_FOUND; /* another version is another layout */
    etw_schema d;
    memset(&d, 0, sizeof d);
    d.source = (uint8_t)m->kind;
    d.pointer_size = ptr_size;
    d.provider = p->guid;
    d.provider_name = p->name;
    d.event_name = e->name;
    d.task_name = e->task_name;
    d.opcode_name = e->opcode_name;
    d.message = e->message;
    d.event_id = e->id;
    d.version = e->version;
    d.channel = e->channel;
    d.level = e->level;
    d.opcode = e->opcode;
    d.task = e->task;
    d.keywords = e->keywords;
    d.prop_count = e->prop_count;
    d.top_count = e->top_count;
    d.props = e->props;
    return etw_cache_insert(cache, m->kind, ptr_size, key, key_len, hash, &d, out, why);
}

static etw_status mf_resolve(void *ctx, etw_cache *cache, const etw_event *ev, const uint8_t *key,
                             size_t key_len, uint64_t hash, const etw_schema **out, const char **why) {
    etw_manifest_set *m = ctx;
    if (!m || !cache || !key || !out) return ETW_E_INVALID_ARG;
    if (key_len != ETW_DESCRIPTOR_KEY_SIZE) return ETW_E_NOT_FOUND;
    etw_guid g = etw_guid_read(key);
    uint16_t id = (uint16_t)(key[16] | key[17] << 8);
    uint8_t ptr = ev && ev->pointer_size == 4 ? 4 : 8;
    return build(m, cache, ptr, &g, id, key[18], key, key_len, hash, out, why);
}

etw_source etw_manifest_as_source(etw_manifest_set *m) {
    etw_source s;
    memset(&s, 0, sizeof s);
    s.kind = m ? m->kind : ETW_SOURCE_MANIFEST;
    s.key = ETW_SOURCE_KEY_DESCRIPTOR;
    s.resolve = mf_resolve;
    s.ctx = m;
    return s;
}

etw_status etw_manifest_resolve(etw_manifest_set *m, etw_cache *cache, const etw_guid *provider,
                                uint16_t id, uint8_t version, uint8_t ptr_size, const etw_schema **out,
                                const char **why) {
    if (!m || !cache || !provider || !out) return ETW_E_INVALID_ARG;
    *out = NULL;
    uint8_t key[ETW_DESCRIPTOR_KEY_SIZE];
    etw_key_descriptor(key, provider, id, version);
    uint64_t h = etw_cache_hash(key, sizeof key);
    uint8_t w = ptr_size == 4 ? 4 : 8;
    const etw_schema *s = etw_cache_find(cache, m->kind, w, key, sizeof key, h);
    if (s) {
        *out = s;
        return ETW_OK;
    }
    return build(m, cache, w, provider, id, version, key, sizeof key, h, out, why);
}
