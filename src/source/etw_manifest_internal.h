/* etw_manifest_internal.h - what the files of the manifest source share
 * (internal to src/source/etw_manifest*.c; the API is etw_manifest.h).
 *
 * The source is split by concept:
 *   etw_manifest.c          the set, loading a document or a path, queries
 *                           and the etw_source callback; the arena and the
 *                           diagnostics;
 *   etw_manifest_xml.c      the XML walk: expat handlers that record the
 *                           raw attributes of the elements the loader uses,
 *                           and the replay of pre-parsed manifests through
 *                           them (etw_manifest_replay.h);
 *   etw_manifest_strings.c  name tables and string tables: $(string.X)
 *                           resolution and task/opcode display names;
 *   etw_manifest_template.c value maps and templates (flattened into the
 *                           TDH property layout);
 *   etw_manifest_compile.c  providers and events: names, descriptor values,
 *                           messages, template references.
 */
#ifndef ETW_MANIFEST_INTERNAL_H
#define ETW_MANIFEST_INTERNAL_H

#include <expat.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "../common/etw_alloc.h"
#include "etw_manifest.h"
#include "etw_manifest_ext.h"
#include "etw_manifest_types.h"

/* ---- limits --------------------------------------------------------------- */

#define MAX_DEPTH 64              /* element nesting: deeper stops the parse (ETW_E_LIMIT) */
#define MAX_STRUCT_DEPTH 4        /* struct within struct: TDH uses 1 */
#define MAX_TEMPLATE_ITEMS 65535u /* props are indexed by u16 */
#define MAX_RECORDS 0x7FFFFFFFu   /* entries of one parse vector */
/* An attribute value longer than this stops the parse (ETW_E_LIMIT); the
 * file and memory bounds are ETW_MANIFEST_MAX_FILE_BYTES and
 * ETW_MANIFEST_MAX_MEMORY (etw_manifest.h). */
#define MAX_ATTR_BYTES ((size_t)1 << 20)
#define ETW_MF_STR_(x) #x
#define ETW_MF_STR(x) ETW_MF_STR_(x)

/* ---- arena ---------------------------------------------------------------- */

typedef struct ar_block {
    struct ar_block *next;
    size_t cap, used;
    /* data follows, 8-aligned */
} ar_block;

#define AR_HDR (((sizeof(ar_block) + 15) / 16) * 16)
#define AR_BLOCK ((size_t)64 * 1024) /* the largest ordinary block */
#define AR_FIRST ((size_t)2 * 1024)  /* the first block */

typedef struct mf_arena {
    const etw_allocator *al;
    ar_block *head;
    size_t bytes; /* held by the blocks (for the loader's memory bound) */
} mf_arena;

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
    const char *task_symbol;   /* the task's name attribute, or NULL */
    const char *opcode_symbol; /* the opcode's name attribute ("win:" dropped), or NULL */
    const char *event_symbol;  /* the event's symbol attribute, or NULL */
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
    /* lazy loading: the GUIDs already offered (open addressing) */
    etw_manifest_lazy_fn lazy;
    void *lazy_ctx;
    etw_guid *offered;
    uint32_t omask, noffered;
    uint32_t lazy_depth; /* a loader that loads again does not recurse */
    uint8_t keep_existing; /* loads do not replace providers the set holds */
    char lang[24];       /* message tables of PE files: this language's .mui ("": en-US) */
    char msg[640];
};

/* ---- small helpers ---------------------------------------------------------- */

static inline int is_space(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n'; }

/* Text without surrounding white space, as (start, length). */
static inline const char *trim(const char *s, size_t *len) {
    while (is_space(*s)) s++;
    size_t n = strlen(s);
    while (n && is_space(s[n - 1])) n--;
    *len = n;
    return s;
}

static inline int ascii_lower(int c) { return c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c; }
static inline int eq_nocase(const char *a, const char *b) {
    for (; *a && *b; a++, b++)
        if (ascii_lower((unsigned char)*a) != ascii_lower((unsigned char)*b)) return 0;
    return *a == *b;
}

static inline uint64_t mix64(uint64_t x) {
    x ^= x >> 33;
    x *= UINT64_C(0xff51afd7ed558ccd);
    x ^= x >> 33;
    x *= UINT64_C(0xc4ceb9fe1a85ec53);
    x ^= x >> 33;
    return x;
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

/* The bytes a load may hold in parse records and the document arena, and
 * where the parse stops past it (ETW_MANIFEST_MAX_MEMORY). */

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
    const char *name; /* the event's name attribute (TDH's EventName) */
    uint32_t line;
    /* A binary manifest (WEVT_TEMPLATE) gives the event descriptor itself:
     * these values win over the ones looked up by name (which still give
     * the task and opcode display names). */
    uint8_t has_desc;
    uint8_t d_level, d_opcode, d_channel;
    uint16_t d_task;
    uint64_t d_keywords;
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

typedef struct loader {
    etw_manifest_set *m;
    mf_doc *doc;
    XML_Parser xp; /* NULL while a pre-parsed manifest is replayed (etw_mf_replay) */
    uint32_t line; /* the replay: the line of the element being started */
    etw_status st;      /* first fatal problem */
    const char *reason; /* its text when we stopped the parser */
    uint32_t depth;
    uint8_t kinds[MAX_DEPTH];
    size_t vec_bytes; /* held by the parse vectors */
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
    /* texts are final (a binary manifest's message table): no $(string.X) */
    uint8_t literal_text;
} loader;

/* The line of the element being started (expat's, or the one the replay
 * recorded). */
static inline uint32_t cur_line(loader *L) {
    if (!L->xp) return L->line;
    XML_Size l = XML_GetCurrentLineNumber(L->xp);
    return l > UINT32_MAX ? UINT32_MAX : (uint32_t)l;
}

#define VAT(type, vecp, i) (((type *)(vecp)->v)[i])

#define WARN(L, st, line, ...) etw_mf_diag((L)->m, (st), (L)->doc->origin, (line), __VA_ARGS__)


static inline const char *nz(const char *s) { return s ? s : ""; }
typedef struct c_map {
    etw_map map;
} c_map;

typedef struct c_tmpl {
    const etw_property *props;
    uint16_t prop_count, top_count;
    uint8_t valid;
} c_tmpl;

static inline uint32_t ev_hash(uint16_t id, uint8_t version) {
    return (uint32_t)(mix64((uint64_t)id << 8 | version) >> 32);
}


/* ---- functions shared by the files ------------------------------------------ */

/* Arena (etw_manifest.c). */
void *etw_mf_ar_alloc(mf_arena *a, size_t n);
void etw_mf_ar_free(mf_arena *a);
char *etw_mf_ar_strndup(mf_arena *a, const char *s, size_t n);
char *etw_mf_ar_strdup(mf_arena *a, const char *s);

/* A problem or warning "origin:line: text" (etw_manifest.c). */
#if defined(__GNUC__) || defined(__clang__)
__attribute__((format(printf, 5, 6)))
#endif
void etw_mf_diag(etw_manifest_set *m, etw_status st, const char *origin, uint32_t line, const char *fmt, ...);

/* Name tables (etw_manifest_strings.c). */
int etw_mf_nt_reset(nametab *t, const etw_allocator *al, uint32_t n);
void etw_mf_nt_free(nametab *t, const etw_allocator *al);
uint32_t etw_mf_nt_put(nametab *t, uint64_t seed, uint32_t scope, const char *name, size_t len, uint32_t value);
int etw_mf_nt_get(const nametab *t, uint64_t seed, uint32_t scope, const char *name, size_t len, uint32_t *value);

/* Strings (etw_manifest_strings.c). */
const char *etw_mf_resolve_text(loader *L, const char *s, uint32_t line, int *missing);
const char *etw_mf_display_name(loader *L, const p_named *x);

/* Parse vectors and the XML walk (etw_manifest_xml.c). */
/* 0 (and L->st = ETW_E_LIMIT) when the load holds more than
 * ETW_MANIFEST_MAX_MEMORY bytes of parse records and arena. */
int etw_mf_within_budget(loader *L);
void *etw_mf_vec_push(loader *L, vec *x, size_t sz);
void etw_mf_vec_free(loader *L, vec *x, size_t sz);
/* Set the expat handlers of L->xp and parse xml[0..len). */
enum XML_Status etw_mf_xml_parse(loader *L, const char *xml, size_t len);
/* Replay the pre-parsed manifest rec[0..len) (etw_manifest_replay.h)
 * through the same handlers as the XML walk, with L->xp NULL; returns L->st:
 * ETW_OK, what the handlers stopped on, or ETW_E_CORRUPT (L->reason says
 * why) for malformed records, which are never read past len. */
etw_status etw_mf_replay(loader *L, const unsigned char *rec, size_t len);

/* Maps and templates (etw_manifest_template.c). */
int etw_mf_compile_maps(loader *L, p_provider *pp, c_map *out);
int etw_mf_compile_template(loader *L, p_provider *pp, const p_tmpl *t, const c_map *maps, c_tmpl *out);

/* Providers (etw_manifest_compile.c). */
int etw_mf_compile_provider(loader *L, p_provider *pp, mf_provider **out);

/* Loading (etw_manifest.c), for the other front ends (WEVT_TEMPLATE):
 * a loader with a new document of this origin; compile and install what
 * the loader parsed; free the loader (and the document if not installed). */
etw_status etw_mf_loader_init(loader *L, etw_manifest_set *m, const char *origin);
etw_status etw_mf_commit(loader *L, uint32_t *loaded);
void etw_mf_loader_free(loader *L);

#endif
