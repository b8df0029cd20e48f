/* etw_metadata.c - KernelTraceControl MetaData records (TRACE_EVENT_INFO and
 * EVENT_MAP_INFO merged into a trace) as a schema source. The layouts:
 * docs FORMATS.md sections 3 and 9; the mapping: etw_metadata.h.
 *
 * Each record kept is one allocation ("chunk") holding its entry, its
 * properties or map entries, and all its strings converted to UTF-8. A
 * record is parsed in two passes over the same bytes: the first checks
 * every offset and measures the strings, the second fills the chunk, so a
 * damaged record allocates nothing and a kept one allocates exactly once.
 * Every read goes through etw_bytes.h loads after an explicit bounds check
 * against the payload length. */
#include "etw_metadata.h"

#include <stdio.h>
#include <string.h>

#include "../common/etw_alloc.h"
#include "../common/etw_bytes.h"
#include "../common/etw_utf16.h"
#include "../schema/etw_cache.h"

/* ---- layout constants (FORMATS.md 9) ------------------------------------ */

#define TEI_FIXED 112u        /* TRACE_EVENT_INFO up to EventPropertyInfoArray */
#define TEI_PROP_SIZE 24u     /* EVENT_PROPERTY_INFO */
#define TEI_OFF_DESCRIPTOR 32u
#define TEI_OFF_DECODING 48u
#define TEI_OFF_PROVIDER_NAME 52u
#define TEI_OFF_TASK_NAME 68u
#define TEI_OFF_OPCODE_NAME 72u
#define TEI_OFF_MESSAGE 76u
#define TEI_OFF_EVENT_NAME 92u /* EventNameOffset (was ActivityIDNameOffset) */
#define TEI_OFF_PROP_COUNT 100u
#define TEI_OFF_TOP_COUNT 104u
#define TEI_OFF_FLAGS 108u

#define DECODING_XML 0u
#define DECODING_WBEM 1u

#define EMI_GUID 16u         /* provider GUID before the EVENT_MAP_INFO */
#define EMI_FIXED 16u        /* EVENT_MAP_INFO up to MapEntryArray */
#define EMI_ENTRY_SIZE 8u

/* MAP_FLAGS */
#define MAPF_MANIFEST_VALUEMAP 0x1u
#define MAPF_MANIFEST_BITMAP 0x2u
#define MAPF_WBEM_VALUEMAP 0x8u
#define MAPF_WBEM_BITMAP 0x10u
#define MAPF_WBEM_FLAG 0x20u

/* The strings of one record may not exceed this many UTF-8 bytes, nor take
 * this many UTF-16 code units to find, per payload byte (plus a constant):
 * real blobs need at most 1.5 bytes (3 UTF-8 bytes per 2 UTF-16 bytes) and
 * half a unit; hostile ones that point many names at one long string would
 * otherwise cost quadratic memory or time. */
#define STRING_BUDGET(len) ((uint64_t)(len) * 8u + 65536u)

static const etw_guid k_metadata_guid = {
    0xbbccf6c1u, 0x6cd1u, 0x48c4u, {0x80, 0xff, 0x83, 0x94, 0x82, 0xe3, 0x76, 0x71}};

/* ---- the set ------------------------------------------------------------ */

typedef struct md_node {
    struct md_node *next;
    uint64_t hash;
} md_node;

typedef struct md_table {
    md_node **buckets;
    size_t mask; /* buckets - 1; 0 buckets when NULL */
    uint32_t count;
} md_table;

typedef struct md_event {
    md_node node;
    uint8_t key[ETW_DESCRIPTOR_KEY_SIZE];
    uint8_t classic;     /* keyed by (EventGuid, opcode, version) */
    etw_guid provider;   /* ProviderGuid: the maps' key */
    etw_guid event_guid; /* EventGuid: maps of MOF entries may use it */
    etw_schema draft;    /* props and strings in this chunk; maps NULL */
    const char **map_names; /* per property (NULL: none), or NULL */
} md_event;

typedef struct md_map {
    md_node node;
    etw_guid provider;
    etw_map map;
} md_map;

struct etw_metadata_set {
    etw_allocator al;
    md_table events;
    md_table maps;
    etw_metadata_stats stats;
    char why[192];
    /* etw_metadata_added_key: the event schema the last add kept */
    uint8_t added_key[ETW_DESCRIPTOR_KEY_SIZE];
    int added;
};

static size_t align_up(size_t v, size_t a) { return (v + (a - 1)) & ~(a - 1); }

/* Room for one more node (load <= 1). */
static etw_status table_reserve(const etw_allocator *al, md_table *t) {
    size_t cap = t->buckets ? t->mask + 1 : 0;
    if (t->buckets && t->count < cap) return ETW_OK;
    size_t ncap = cap ? cap * 2 : 64;
    md_node **nb = etw_calloc(al, ncap, sizeof *nb);
    if (!nb) return ETW_E_NOMEM;
    for (size_t i = 0; i < cap; i++) {
        md_node *n = t->buckets[i];
        while (n) {
            md_node *next = n->next;
            size_t j = (size_t)n->hash & (ncap - 1);
            n->next = nb[j];
            nb[j] = n;
            n = next;
        }
    }
    etw_free(al, t->buckets);
    t->buckets = nb;
    t->mask = ncap - 1;
    return ETW_OK;
}

static void table_add(md_table *t, md_node *n) {
    size_t j = (size_t)n->hash & t->mask;
    n->next = t->buckets[j];
    t->buckets[j] = n;
    t->count++;
}

static void table_free(const etw_allocator *al, md_table *t) {
    if (t->buckets) {
        for (size_t i = 0; i <= t->mask; i++) {
            md_node *n = t->buckets[i];
            while (n) {
                md_node *next = n->next;
                etw_free(al, n);
                n = next;
            }
        }
    }
    etw_free(al, t->buckets);
    t->buckets = NULL;
    t->mask = 0;
    t->count = 0;
}

static const md_event *find_event(const etw_metadata_set *m, const uint8_t *key,
                                  uint64_t hash, int classic) {
    if (!m->events.buckets) return NULL;
    for (const md_node *n = m->events.buckets[hash & m->events.mask]; n; n = n->next) {
        const md_event *e = (const md_event *)n;
        if (n->hash == hash && e->classic == classic &&
            memcmp(e->key, key, ETW_DESCRIPTOR_KEY_SIZE) == 0)
            return e;
    }
    return NULL;
}

static uint64_t map_hash(const etw_guid *provider, const char *name) {
    uint8_t g[ETW_DESCRIPTOR_KEY_SIZE];
    etw_key_descriptor(g, provider, 0, 0);
    return etw_cache_hash(name, strlen(name)) ^
           (etw_cache_hash(g, 16) * UINT64_C(0x9E3779B97F4A7C15));
}

static const md_map *find_map(const etw_metadata_set *m, const etw_guid *provider,
                              const char *name) {
    if (!m->maps.buckets) return NULL;
    uint64_t h = map_hash(provider, name);
    for (const md_node *n = m->maps.buckets[h & m->maps.mask]; n; n = n->next) {
        const md_map *e = (const md_map *)n;
        if (n->hash == h && etw_guid_equal(&e->provider, provider) &&
            strcmp(e->map.name, name) == 0)
            return e;
    }
    return NULL;
}

etw_status etw_metadata_set_new(etw_metadata_set **out, const etw_allocator *a) {
    if (!out) return ETW_E_INVALID_ARG;
    *out = NULL;
    etw_allocator al = etw_allocator_resolve(a);
    etw_metadata_set *m = etw_calloc(&al, 1, sizeof *m);
    if (!m) return ETW_E_NOMEM;
    m->al = al;
    *out = m;
    return ETW_OK;
}

void etw_metadata_set_free(etw_metadata_set *m) {
    if (!m) return;
    etw_allocator al = m->al;
    table_free(&al, &m->events);
    table_free(&al, &m->maps);
    etw_free(&al, m);
}

uint32_t etw_metadata_event_count(const etw_metadata_set *m) { return m ? m->events.count : 0; }
uint32_t etw_metadata_map_count(const etw_metadata_set *m) { return m ? m->maps.count : 0; }
const etw_metadata_stats *etw_metadata_stats_get(const etw_metadata_set *m) {
    return m ? &m->stats : NULL;
}

/* ---- strings ------------------------------------------------------------ */

/* The UTF-16LE string at off in blob[0..len): *units = code units before
 * its NUL, trailing spaces trimmed; *scanned = code units read. Returns
 * NULL on success, else why. */
static const char *string_at(const uint8_t *blob, size_t len, uint32_t off, size_t *units,
                             size_t *scanned) {
    if (off >= len) return "string offset past the end";
    size_t n = 0;
    size_t p = off;
    for (;;) {
        if (len - p < 2) return "string not NUL-terminated inside the blob";
        if (blob[p] == 0 && blob[p + 1] == 0) break;
        p += 2;
        n++;
    }
    *scanned = n + 1;
    while (n && etw_le16(blob + off + 2 * (n - 1)) == 0x0020u) n--;
    *units = n;
    return NULL;
}

/* Where the strings of one record go. Pass 1 (base NULL) checks and
 * measures; pass 2 writes. Both passes ask for the same strings in the same
 * order. */
typedef struct strpool {
    const uint8_t *blob;
    size_t len;
    char *base; /* NULL in pass 1 */
    uint64_t used;   /* UTF-8 bytes (with NULs) */
    uint64_t work;   /* UTF-16 code units read */
    uint64_t budget; /* bound of both */
    const char *why; /* first problem */
} strpool;

/* The string at off (0 = absent: returns NULL without error when optional,
 * else an error). Pass 1 returns a non-NULL dummy for present strings. */
static const char *pool_string(strpool *sp, uint32_t off, int required, const char *what) {
    static const char dummy[] = "";
    if (sp->why) return NULL;
    if (off == 0) {
        if (required) sp->why = what;
        return NULL;
    }
    size_t units, scanned;
    const char *bad = string_at(sp->blob, sp->len, off, &units, &scanned);
    if (bad) {
        sp->why = bad;
        return NULL;
    }
    const uint8_t *s = sp->blob + off;
    if (!sp->base) {
        sp->used += etw_utf16_to_utf8(s, units, NULL) + 1;
        sp->work += scanned;
        if (sp->used > sp->budget || sp->work > sp->budget)
            sp->why = "strings exceed what the blob can hold (overlapping names)";
        return dummy;
    }
    char *d = sp->base + sp->used;
    sp->used += etw_utf16_to_utf8(s, units, d) + 1;
    return d;
}

/* ---- event names (etw_metadata.h) --------------------------------------- */

static const char *standard_opcode(uint8_t op) {
    switch (op) {
    case 1: return "Start";
    case 2: return "Stop";
    case 3: return "DCStart";
    case 4: return "DCStop";
    case 5: return "Extension";
    case 6: return "Reply";
    case 7: return "Resume";
    case 8: return "Suspend";
    case 9: return "Send";
    default: return NULL;
    }
}

/* PerfView's MakeLegalIdentifier: spaces removed, '-' made '_'. */
static char *put_identifier(char *d, const char *s) {
    for (; *s; s++) {
        if (*s == ' ') continue;
        *d++ = *s == '-' ? '_' : *s;
    }
    return d;
}

/* Upper bound of the event name's size given the parts' lengths. */
static size_t event_name_bound(size_t task, size_t opcode, size_t name) {
    size_t t = task > name ? task : name;
    return t + 1 + opcode + 32; /* '/', "EventID(65535)", "Opcode(255)", NUL */
}

static void build_event_name(char *d, const char *task, const char *opcode,
                             const char *event_name, uint16_t id, uint8_t op) {
    if (task && *task) {
        d = put_identifier(d, task);
    } else {
        if (event_name && *event_name)
            d = d + sprintf(d, "%s", event_name);
        else
            d = d + sprintf(d, "EventID(%u)", (unsigned)id);
        *d = 0;
        return;
    }
    if (op != 0) {
        *d++ = '/';
        if (opcode && strncmp(opcode, "win:", 4) == 0) opcode += 4;
        char *start = d;
        if (opcode) d = put_identifier(d, opcode);
        if (d == start) {
            const char *std = standard_opcode(op);
            d += std ? sprintf(d, "%s", std) : sprintf(d, "Opcode(%u)", (unsigned)op);
        }
    }
    *d = 0;
}

/* ---- EventInfo ---------------------------------------------------------- */

/* Flags of a stored property from the raw EVENT_PROPERTY_INFO fields. */
static uint32_t property_flags(uint32_t raw, uint16_t in_type, uint16_t count, uint16_t length) {
    uint32_t f = raw & 0xFFu;
    /* pre-Windows 10 TDH: literal counts/lengths without the Fixed flags */
    if (!(f & (ETW_PROP_COUNT_REF | ETW_PROP_COUNT_FIXED)) && count > 1) f |= ETW_PROP_COUNT_FIXED;
    if (!(f & (ETW_PROP_STRUCT | ETW_PROP_LENGTH_REF | ETW_PROP_LENGTH_FIXED)) && length > 0 &&
        (in_type == ETW_INTYPE_UNICODESTRING || in_type == ETW_INTYPE_ANSISTRING ||
         in_type == ETW_INTYPE_BINARY))
        f |= ETW_PROP_LENGTH_FIXED;
    return f;
}

/* The strings and properties of a TRACE_EVENT_INFO, pass 1 or 2. With
 * e == NULL only strings are visited (pass 1). */
static void event_strings(strpool *sp, const uint8_t *b, uint32_t pc, md_event *e,
                          etw_property *props, const char **map_names,
                          size_t *task_len, size_t *opcode_len, size_t *name_len) {
    const char *prov = pool_string(sp, etw_le32(b + TEI_OFF_PROVIDER_NAME), 0, NULL);
    uint64_t before = sp->used;
    const char *task = pool_string(sp, etw_le32(b + TEI_OFF_TASK_NAME), 0, NULL);
    *task_len = (size_t)(sp->used - before);
    before = sp->used;
    const char *opcode = pool_string(sp, etw_le32(b + TEI_OFF_OPCODE_NAME), 0, NULL);
    *opcode_len = (size_t)(sp->used - before);
    const char *msg = pool_string(sp, etw_le32(b + TEI_OFF_MESSAGE), 0, NULL);
    const char *ename = NULL;
    before = sp->used;
    if (etw_le32(b + TEI_OFF_DECODING) == DECODING_XML)
        ename = pool_string(sp, etw_le32(b + TEI_OFF_EVENT_NAME), 0, NULL);
    *name_len = (size_t)(sp->used - before);
    if (e) {
        e->draft.provider_name = prov;
        e->draft.task_name = task;
        e->draft.opcode_name = opcode;
        e->draft.message = msg;
        /* event_name is built by the caller; keep the symbol for it */
        e->draft.event_name = ename;
    }
    for (uint32_t i = 0; i < pc && !sp->why; i++) {
        const uint8_t *p = b + TEI_FIXED + (size_t)i * TEI_PROP_SIZE;
        uint32_t raw = etw_le32(p);
        const char *name = pool_string(sp, etw_le32(p + 4), 1, "property without a name");
        const char *map = NULL;
        if (!(raw & (ETW_PROP_STRUCT | ETW_PROP_CUSTOM_SCHEMA)))
            map = pool_string(sp, etw_le32(p + 12), 0, NULL);
        if (props) props[i].name = name;
        if (map_names) map_names[i] = map;
    }
}

static etw_status add_event_info(etw_metadata_set *m, const uint8_t *b, size_t len,
                                 const char **why) {
    if (len < TEI_FIXED) {
        *why = "payload shorter than the TRACE_EVENT_INFO fixed part (112 bytes)";
        return ETW_E_TRUNCATED;
    }
    uint32_t pc = etw_le32(b + TEI_OFF_PROP_COUNT);
    uint32_t tc = etw_le32(b + TEI_OFF_TOP_COUNT);
    if ((uint64_t)TEI_FIXED + (uint64_t)pc * TEI_PROP_SIZE > len) {
        *why = "PropertyCount: the property array runs past the payload";
        return ETW_E_TRUNCATED;
    }
    if (pc > UINT16_MAX) {
        *why = "PropertyCount above 65535";
        return ETW_E_LIMIT;
    }
    if (tc > pc) {
        *why = "TopLevelPropertyCount exceeds PropertyCount";
        return ETW_E_CORRUPT;
    }
    uint32_t decoding = etw_le32(b + TEI_OFF_DECODING);
    int classic = decoding == DECODING_WBEM;
    etw_guid provider = etw_guid_read(b);
    etw_guid event_guid = etw_guid_read(b + 16);
    const uint8_t *dsc = b + TEI_OFF_DESCRIPTOR;
    uint16_t id = etw_le16(dsc);
    uint8_t version = dsc[2];
    uint8_t opcode = dsc[5];

    uint8_t key[ETW_DESCRIPTOR_KEY_SIZE];
    if (classic) {
        /* kept apart from descriptor keys by the entry's classic flag; the
         * decoder's 20-byte classic key carries the same first 19 bytes */
        etw_key_descriptor(key, &event_guid, opcode, version);
    } else {
        etw_key_descriptor(key, &provider, id, version);
    }
    uint64_t hash = etw_cache_hash(key, sizeof key);

    /* pass 1: check and measure the strings */
    int has_maps = 0;
    for (uint32_t i = 0; i < pc; i++) {
        const uint8_t *p = b + TEI_FIXED + (size_t)i * TEI_PROP_SIZE;
        if (!(etw_le32(p) & (ETW_PROP_STRUCT | ETW_PROP_CUSTOM_SCHEMA)) && etw_le32(p + 12))
            has_maps = 1;
    }
    strpool sp = {b, len, NULL, 0, 0, STRING_BUDGET(len), NULL};
    size_t task_len, opcode_len, name_len;
    event_strings(&sp, b, pc, NULL, NULL, NULL, &task_len, &opcode_len, &name_len);
    if (sp.why) {
        *why = sp.why;
        return ETW_E_CORRUPT;
    }
    if (find_event(m, key, hash, classic)) {
        m->stats.duplicates++;
        return ETW_OK;
    }

    /* one chunk: entry, props, map names, strings, event name */
    size_t off_props = align_up(sizeof(md_event), 8);
    size_t off_maps = off_props + (size_t)pc * sizeof(etw_property);
    size_t off_strings = align_up(off_maps + (has_maps ? (size_t)pc * sizeof(char *) : 0), 8);
    size_t name_bound = event_name_bound(task_len, opcode_len, name_len);
    size_t total = off_strings + (size_t)sp.used + name_bound;
    etw_status st = table_reserve(&m->al, &m->events);
    if (st != ETW_OK) return st;
    unsigned char *chunk = etw_alloc(&m->al, total);
    if (!chunk) return ETW_E_NOMEM;
    memset(chunk, 0, off_strings);
    md_event *e = (md_event *)(void *)chunk;
    etw_property *props = (etw_property *)(void *)(chunk + off_props);
    const char **map_names = has_maps ? (const char **)(void *)(chunk + off_maps) : NULL;

    /* pass 2: fill */
    sp.base = (char *)chunk + off_strings;
    sp.used = 0;
    event_strings(&sp, b, pc, e, props, map_names, &task_len, &opcode_len, &name_len);
    char *ename = (char *)chunk + off_strings + sp.used;
    build_event_name(ename, e->draft.task_name, e->draft.opcode_name, e->draft.event_name, id,
                     opcode);
    e->draft.event_name = ename;

    for (uint32_t i = 0; i < pc; i++) {
        const uint8_t *p = b + TEI_FIXED + (size_t)i * TEI_PROP_SIZE;
        etw_property *q = &props[i];
        uint32_t raw = etw_le32(p);
        uint16_t a = etw_le16(p + 8), c = etw_le16(p + 10);
        q->count = etw_le16(p + 16);
        q->length = etw_le16(p + 18);
        if (raw & ETW_PROP_STRUCT) {
            q->struct_first = a;
            q->struct_count = c;
        } else {
            q->in_type = a;
            q->out_type = c;
        }
        q->flags = property_flags(raw, q->in_type, q->count, q->length);
        if (raw & ETW_PROP_HAS_TAGS) q->tags = etw_le32(p + 20) & 0x0FFFFFFFu;
    }

    e->node.hash = hash;
    memcpy(e->key, key, sizeof key);
    e->classic = (uint8_t)classic;
    e->provider = provider;
    e->event_guid = event_guid;
    e->map_names = map_names;
    etw_schema *d = &e->draft;
    d->source = ETW_SOURCE_METADATA;
    d->provider = classic ? event_guid : provider;
    d->event_id = id;
    d->version = version;
    d->channel = dsc[3];
    d->level = dsc[4];
    d->opcode = opcode;
    d->task = etw_le16(dsc + 6);
    d->keywords = etw_le64(dsc + 8);
    d->tags = etw_le32(b + TEI_OFF_FLAGS) >> 4;
    d->prop_count = (uint16_t)pc;
    d->top_count = (uint16_t)tc;
    d->props = pc ? props : NULL;

    st = etw_schema_validate(d, why);
    if (st != ETW_OK) {
        etw_free(&m->al, chunk);
        return st;
    }
    table_add(&m->events, &e->node);
    memcpy(m->added_key, key, sizeof key);
    m->added = 1;
    return ETW_OK;
}

int etw_metadata_added_key(const etw_metadata_set *m, uint8_t key[ETW_DESCRIPTOR_KEY_SIZE]) {
    if (!m || !m->added) return 0;
    memcpy(key, m->added_key, ETW_DESCRIPTOR_KEY_SIZE);
    return 1;
}

/* ---- EventMapInfo ------------------------------------------------------- */

/* Names of a map and its entries, pass 1 or 2. */
static void map_strings(strpool *sp, const uint8_t *mi, uint32_t count, md_map *e,
                        etw_map_entry *entries) {
    const char *name = pool_string(sp, etw_le32(mi), 1, "map without a name");
    if (e) e->map.name = name;
    for (uint32_t i = 0; i < count && !sp->why; i++) {
        const uint8_t *p = mi + EMI_FIXED + (size_t)i * EMI_ENTRY_SIZE;
        const char *s = pool_string(sp, etw_le32(p), 1, "map entry without a name");
        if (entries) {
            entries[i].name = s;
            entries[i].value = etw_le32(p + 4);
        }
    }
}

static etw_status add_map_info(etw_metadata_set *m, const uint8_t *b, size_t len,
                               const char **why) {
    if (len < EMI_GUID + EMI_FIXED) {
        *why = "payload shorter than the GUID and the EVENT_MAP_INFO fixed part (32 bytes)";
        return ETW_E_TRUNCATED;
    }
    etw_guid provider = etw_guid_read(b);
    const uint8_t *mi = b + EMI_GUID;
    size_t mlen = len - EMI_GUID;
    uint32_t flag = etw_le32(mi + 4);
    uint32_t count = etw_le32(mi + 8);
    uint32_t value_type = etw_le32(mi + 12);
    if ((uint64_t)EMI_FIXED + (uint64_t)count * EMI_ENTRY_SIZE > mlen) {
        *why = "EntryCount: the map entries run past the payload";
        return ETW_E_TRUNCATED;
    }
    uint32_t kind;
    if ((flag & (MAPF_MANIFEST_BITMAP | MAPF_WBEM_BITMAP)) ||
        ((flag & MAPF_WBEM_VALUEMAP) && (flag & MAPF_WBEM_FLAG)))
        kind = ETW_MAP_BITMAP;
    else if (flag & (MAPF_MANIFEST_VALUEMAP | MAPF_WBEM_VALUEMAP))
        kind = ETW_MAP_VALUEMAP;
    else
        kind = 0; /* pattern map or no map */

    strpool sp = {mi, mlen, NULL, 0, 0, STRING_BUDGET(mlen), NULL};
    map_strings(&sp, mi, count, NULL, NULL);
    if (sp.why) {
        *why = sp.why;
        return ETW_E_CORRUPT;
    }
    if (kind == 0 || value_type != 0) { /* pattern or string-valued: no use */
        m->stats.skipped_maps++;
        return ETW_OK;
    }
    size_t off_entries = align_up(sizeof(md_map), 8);
    size_t off_strings = off_entries + (size_t)count * sizeof(etw_map_entry);
    size_t total = off_strings + (size_t)sp.used;
    etw_status st = table_reserve(&m->al, &m->maps);
    if (st != ETW_OK) return st;
    unsigned char *chunk = etw_alloc(&m->al, total);
    if (!chunk) return ETW_E_NOMEM;
    memset(chunk, 0, off_strings);
    md_map *e = (md_map *)(void *)chunk;
    etw_map_entry *entries = (etw_map_entry *)(void *)(chunk + off_entries);
    sp.base = (char *)chunk + off_strings;
    sp.used = 0;
    map_strings(&sp, mi, count, e, entries);
    e->provider = provider;
    e->map.flags = kind;
    e->map.count = count;
    e->map.entries = count ? entries : NULL;
    if (find_map(m, &provider, e->map.name)) {
        etw_free(&m->al, chunk);
        m->stats.duplicates++;
        return ETW_OK;
    }
    e->node.hash = map_hash(&provider, e->map.name);
    table_add(&m->maps, &e->node);
    return ETW_OK;
}

/* ---- offering ----------------------------------------------------------- */

etw_status etw_metadata_add(etw_metadata_set *m, uint8_t opcode, const uint8_t *payload,
                            size_t len, const char **why) {
    const char *reason = NULL;
    etw_status st;
    if (why) *why = NULL;
    if (!m || (!payload && len)) {
        if (why) *why = "invalid argument";
        return ETW_E_INVALID_ARG;
    }
    m->added = 0;
    if (opcode == ETW_METADATA_OPCODE_EVENT_INFO)
        st = add_event_info(m, payload, len, &reason);
    else if (opcode == ETW_METADATA_OPCODE_MAP_INFO)
        st = add_map_info(m, payload, len, &reason);
    else {
        if (why) *why = "not an EventInfo or EventMapInfo opcode";
        return ETW_E_INVALID_ARG;
    }
    if (st == ETW_OK) {
        if (opcode == ETW_METADATA_OPCODE_EVENT_INFO)
            m->stats.event_records++;
        else
            m->stats.map_records++;
    } else if (st != ETW_E_NOMEM) {
        m->stats.damaged++;
    }
    if (why) *why = st == ETW_E_NOMEM ? "out of memory" : reason;
    return st;
}

int etw_metadata_is_metadata_event(const etw_event *ev) {
    if (!ev || ev->provider.data1 != ETW_METADATA_GUID_DATA1) return 0;
    if (!etw_guid_equal(&ev->provider, &k_metadata_guid)) return 0;
    return ev->form == ETW_FORM_FULL || ev->form == ETW_FORM_INSTANCE ||
           (ev->form == ETW_FORM_EVENT_HEADER && (ev->flags & ETW_EVENT_FLAG_CLASSIC_HEADER));
}

const char *etw_metadata_event_name(const etw_event *ev) {
    if (!etw_metadata_is_metadata_event(ev)) return NULL;
    if (ev->opcode == ETW_METADATA_OPCODE_EVENT_INFO) return "MetaData/EventInfo";
    if (ev->opcode == ETW_METADATA_OPCODE_MAP_INFO) return "MetaData/EventMapInfo";
    return NULL;
}

int etw_metadata_offer(etw_metadata_set *m, const etw_event *ev, etw_status *status,
                       const char **why) {
    if (status) *status = ETW_OK;
    if (why) *why = NULL;
    /* the fast path: one compare for almost every event */
    if (!ev || ev->provider.data1 != ETW_METADATA_GUID_DATA1) return 0;
    if (!etw_metadata_is_metadata_event(ev)) return 0;
    if (ev->opcode != ETW_METADATA_OPCODE_EVENT_INFO && ev->opcode != ETW_METADATA_OPCODE_MAP_INFO)
        return 0;
    const char *reason = NULL;
    etw_status st = etw_metadata_add(m, ev->opcode, ev->user_data, ev->user_data_len, &reason);
    if (status) *status = st;
    if (st != ETW_OK && why) {
        if (m) {
            snprintf(m->why, sizeof m->why, "bad MetaData %s record (%u bytes): %s",
                     ev->opcode == ETW_METADATA_OPCODE_EVENT_INFO ? "EventInfo" : "EventMapInfo",
                     (unsigned)ev->user_data_len, reason ? reason : etw_strerror(st));
            *why = m->why;
        } else {
            *why = reason;
        }
    }
    return 1;
}

/* ---- the source ----------------------------------------------------------- */

static etw_status resolve_common(etw_metadata_set *m, int classic, etw_cache *cache,
                                 const etw_event *ev, const uint8_t *key, size_t key_len,
                                 uint64_t hash, const etw_schema **out, const char **why) {
    if (out) *out = NULL;
    if (why) *why = NULL;
    if (!m || !cache || !key || !out) return ETW_E_INVALID_ARG;
    if (key_len != (classic ? ETW_CLASSIC_KEY_SIZE : ETW_DESCRIPTOR_KEY_SIZE)) return ETW_E_NOT_FOUND;
    /* classic keys: the entry is stored under the 19-byte descriptor form */
    uint64_t own_hash = classic ? etw_cache_hash(key, ETW_DESCRIPTOR_KEY_SIZE) : hash;
    const md_event *e = find_event(m, key, own_hash, classic);
    if (!e) return ETW_E_NOT_FOUND;
    etw_schema d = e->draft;
    etw_property *tmp = NULL;
    if (e->map_names) {
        tmp = etw_calloc(&m->al, d.prop_count, sizeof *tmp);
        if (!tmp) return ETW_E_NOMEM;
        memcpy(tmp, d.props, (size_t)d.prop_count * sizeof *tmp);
        for (uint32_t i = 0; i < d.prop_count; i++) {
            if (!e->map_names[i]) continue;
            const md_map *mp = find_map(m, &e->provider, e->map_names[i]);
            if (!mp && classic) mp = find_map(m, &e->event_guid, e->map_names[i]);
            tmp[i].map = mp ? &mp->map : NULL;
        }
        d.props = tmp;
    }
    uint8_t width = ev && ev->pointer_size == 4 ? 4 : 8;
    etw_status st = etw_cache_insert(cache, ETW_SOURCE_METADATA, width, key, key_len, hash, &d,
                                     out, why);
    etw_free(&m->al, tmp);
    return st;
}

static etw_status resolve_descriptor(void *ctx, etw_cache *cache, const etw_event *ev,
                                     const uint8_t *key, size_t key_len, uint64_t hash,
                                     const etw_schema **out, const char **why) {
    return resolve_common(ctx, 0, cache, ev, key, key_len, hash, out, why);
}

static etw_status resolve_classic(void *ctx, etw_cache *cache, const etw_event *ev,
                                  const uint8_t *key, size_t key_len, uint64_t hash,
                                  const etw_schema **out, const char **why) {
    return resolve_common(ctx, 1, cache, ev, key, key_len, hash, out, why);
}

etw_source etw_metadata_as_source(etw_metadata_set *m) {
    etw_source s;
    s.kind = ETW_SOURCE_METADATA;
    s.key = ETW_SOURCE_KEY_DESCRIPTOR;
    s.resolve = resolve_descriptor;
    s.ctx = m;
    return s;
}

etw_source etw_metadata_as_classic_source(etw_metadata_set *m) {
    etw_source s;
    s.kind = ETW_SOURCE_METADATA;
    s.key = ETW_SOURCE_KEY_CLASSIC;
    s.resolve = resolve_classic;
    s.ctx = m;
    return s;
}
