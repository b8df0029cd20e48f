/* etw_schemas.c - the schemas a trace uses, as JSON (see etw_schemas.h). */
#include "etwdecode/etw_schemas.h"

#include <stdlib.h>
#include <string.h>

#include "../common/etw_alloc.h"
#include "etw_strmap.h"
#include "etw_text.h"

/* A schema's entry, its JSON written when first seen: a TraceLogging schema
 * may be dropped from the decoder's cache (etw_cache.h), so nothing here
 * points into the decoder. */
typedef struct used {
    uint64_t events;
    char *text;      /* the object without "events": head, then tail */
    size_t head_len; /* up to and with "pointer_size":N */
    size_t tail_len; /* ,"message"... ,"fields":[...]} */
    size_t order;
} used;

typedef struct by_id {
    used *u;
} by_id;

struct etw_schemas {
    etw_allocator alloc;
    etw_strmap ids;     /* key: schema id (4 bytes) -> by_id */
    etw_strmap content; /* key: the JSON (TraceLogging), or the id and the JSON -> used */
    size_t next_order;
    etw_text text;
};

etw_status etw_schemas_new(etw_schemas **out, const etw_allocator *alloc) {
    if (!out) return ETW_E_INVALID_ARG;
    etw_allocator a = etw_allocator_resolve(alloc);
    etw_schemas *sc = etw_calloc(&a, 1, sizeof *sc);
    if (!sc) return ETW_E_NOMEM;
    sc->alloc = a;
    /* one entry per schema id the events use; a TraceLogging schema the
     * decoder parsed again (a new id) joins the entry of its first id */
    etw_strmap_init(&sc->ids, &a, sizeof(by_id), 0);
    etw_strmap_init(&sc->content, &a, sizeof(used), 0);
    etw_text_init(&sc->text, &a);
    *out = sc;
    return ETW_OK;
}

void etw_schemas_free(etw_schemas *sc) {
    if (!sc) return;
    size_t n;
    etw_strmap_entry **v = etw_strmap_list(&sc->content, &n);
    for (size_t i = 0; i < n; i++) etw_free(&sc->alloc, ((used *)v[i]->rec)->text);
    etw_free(&sc->alloc, v);
    etw_allocator a = sc->alloc;
    etw_strmap_free(&sc->ids);
    etw_strmap_free(&sc->content);
    etw_text_free(&sc->text);
    etw_free(&a, sc);
}

const char *etw_outtype_name(uint16_t t) {
    /* _TDH_OUT_TYPE (tdh.h) */
    static const char *const names[] = {
        "NULL", "STRING", "DATETIME", "BYTE", "UNSIGNEDBYTE", "SHORT", "UNSIGNEDSHORT", "INT", "UNSIGNEDINT",
        "LONG", "UNSIGNEDLONG", "FLOAT", "DOUBLE", "BOOLEAN", "GUID", "HEXBINARY", "HEXINT8", "HEXINT16",
        "HEXINT32", "HEXINT64", "PID", "TID", "PORT", "IPV4", "IPV6", "SOCKETADDRESS", "CIMDATETIME", "ETWTIME",
        "XML", "ERRORCODE", "WIN32ERROR", "NTSTATUS", "HRESULT", "CULTURE_INSENSITIVE_DATETIME", "JSON", "UTF8",
        "PKCS7_WITH_TYPE_INFO", "CODE_POINTER", "DATETIME_UTC"};
    if (t < sizeof names / sizeof names[0]) return names[t];
    if (t == ETW_OUTTYPE_REDUCEDSTRING) return "REDUCEDSTRING";
    if (t == ETW_OUTTYPE_NOPRINT) return "NOPRINT";
    if (t == ETW_OUTTYPE_LZNT1_UTF16) return "LZNT1_UTF16";
    return "UNKNOWN";
}

static const char *source_name(uint8_t s) {
    switch (s) {
    case ETW_SOURCE_TRACELOGGING: return "tracelogging";
    case ETW_SOURCE_MANIFEST: return "manifest";
    case ETW_SOURCE_EVENTSOURCE: return "eventsource";
    case ETW_SOURCE_METADATA: return "metadata";
    case ETW_SOURCE_MOF: return "mof";
    case ETW_SOURCE_BUILTIN: return "builtin";
    case ETW_SOURCE_WPP: return "wpp";
    default: return "none";
    }
}

static void k(etw_text *t, const char *key, int *first) {
    if (!*first) etw_text_putc(t, ',');
    *first = 0;
    etw_text_putc(t, '"');
    etw_text_puts(t, key);
    etw_text_puts(t, "\":");
}

static void jstr(etw_text *t, const char *s) {
    if (s) etw_text_json_utf8(t, s, strlen(s));
    else etw_text_puts(t, "null");
}

static void quoted(etw_text *t, const char *s) {
    etw_text_putc(t, '"');
    etw_text_puts(t, s);
    etw_text_putc(t, '"');
}

/* props[first .. first+count) at nesting depth (bounded by the cache's
 * checks: members always come after their struct, so depth < prop_count). */
static void props_json(etw_text *t, const etw_schema *s, uint32_t first, uint32_t count, unsigned depth) {
    etw_text_putc(t, '[');
    for (uint32_t i = first; i < first + count && i < s->prop_count; i++) {
        const etw_property *p = &s->props[i];
        int f = 1;
        if (i > first) etw_text_putc(t, ',');
        etw_text_putc(t, '{');
        k(t, "name", &f);
        jstr(t, p->name);
        k(t, "type", &f);
        quoted(t, p->flags & ETW_PROP_STRUCT ? "STRUCT" : etw_intype_name(p->in_type));
        k(t, "out_type", &f);
        if (p->out_type && !(p->flags & ETW_PROP_STRUCT)) quoted(t, etw_outtype_name(p->out_type));
        else etw_text_puts(t, "null");
        if (p->flags & ETW_PROP_COUNT_REF) {
            k(t, "count_field", &f);
            jstr(t, p->count < s->prop_count ? s->props[p->count].name : NULL);
        } else if (p->flags & (ETW_PROP_COUNT_FIXED | ETW_PROP_COUNT_IN_DATA)) {
            k(t, "count", &f);
            if (p->flags & ETW_PROP_COUNT_IN_DATA) quoted(t, "in data");
            else etw_text_u64(t, p->count);
        }
        if (p->flags & ETW_PROP_BITS) { /* "bits": {"of": "Reserved", "shift": 3, "width": 5} */
            int g = 1;
            k(t, "bits", &f);
            etw_text_putc(t, '{');
            k(t, "of", &g);
            jstr(t, p->count < s->prop_count ? s->props[p->count].name : NULL);
            k(t, "shift", &g);
            etw_text_u64(t, p->length & 0xFFu);
            k(t, "width", &g);
            etw_text_u64(t, p->length >> 8);
            etw_text_putc(t, '}');
        } else if (p->flags & ETW_PROP_LENGTH_REF) {
            k(t, "length_field", &f);
            jstr(t, p->length < s->prop_count ? s->props[p->length].name : NULL);
        } else if ((p->flags & ETW_PROP_LENGTH_FIXED) || (p->length && !(p->flags & ETW_PROP_STRUCT))) {
            k(t, "length", &f);
            etw_text_u64(t, p->length);
        }
        if (p->map) {
            int g = 1;
            k(t, "map", &f);
            etw_text_putc(t, '{');
            k(t, "name", &g);
            jstr(t, p->map->name);
            k(t, "kind", &g);
            quoted(t, p->map->flags & ETW_MAP_BITMAP ? "bitmap" : "valuemap");
            k(t, "entries", &g);
            etw_text_putc(t, '[');
            for (uint32_t e = 0; e < p->map->count; e++) {
                if (e) etw_text_putc(t, ',');
                etw_text_puts(t, "{\"value\":");
                etw_text_u64(t, p->map->entries[e].value);
                etw_text_puts(t, ",\"name\":");
                jstr(t, p->map->entries[e].name);
                etw_text_putc(t, '}');
            }
            etw_text_puts(t, "]}");
        }
        if ((p->flags & ETW_PROP_STRUCT) && depth < 32 && p->struct_first > i) {
            k(t, "fields", &f);
            props_json(t, s, p->struct_first, p->struct_count, depth + 1);
        }
        etw_text_putc(t, '}');
    }
    etw_text_putc(t, ']');
}

/* The schema object as etw_schemas_json writes it, but for "events": the
 * head in t, the tail after it; *head_len says where the tail starts. */
static void schema_json(etw_text *t, const etw_schema *s, const etw_label *l, size_t *head_len) {
    int f = 1;
    etw_text_putc(t, '{');
    k(t, "provider", &f);
    etw_text_json_utf8(t, l->provider, l->provider_len);
    k(t, "provider_guid", &f);
    char g[ETW_GUID_STRING_SIZE];
    etw_guid_format(&s->provider, g);
    quoted(t, g);
    k(t, "event", &f);
    jstr(t, s->event_name);
    k(t, "id", &f);
    etw_text_u64(t, s->event_id);
    k(t, "version", &f);
    etw_text_u64(t, s->version);
    k(t, "opcode", &f);
    etw_text_u64(t, s->opcode);
    k(t, "task", &f);
    etw_text_u64(t, s->task);
    k(t, "level", &f);
    etw_text_u64(t, s->level);
    k(t, "channel", &f);
    etw_text_u64(t, s->channel);
    k(t, "keywords", &f);
    etw_text_putc(t, '"');
    etw_text_hex16(t, s->keywords);
    etw_text_putc(t, '"');
    k(t, "source", &f);
    quoted(t, source_name(s->source));
    k(t, "pointer_size", &f);
    etw_text_u64(t, s->pointer_size);
    *head_len = t->len;
    if (s->message) {
        k(t, "message", &f);
        jstr(t, s->message);
    }
    k(t, "fields", &f);
    props_json(t, s, 0, s->top_count, 0);
    etw_text_putc(t, '}');
}

etw_status etw_schemas_add(etw_schemas *sc, const etw_label *l) {
    if (!sc || !l) return ETW_E_INVALID_ARG;
    const etw_schema *s = l->schema;
    if (!s) return ETW_OK;
    uint32_t id = s->id;
    uint8_t key[4] = {(uint8_t)id, (uint8_t)(id >> 8), (uint8_t)(id >> 16), (uint8_t)(id >> 24)};
    int created;
    by_id *b = etw_strmap_get(&sc->ids, key, 4, &created);
    if (!b) return ETW_E_NOMEM;
    if (!created && b->u) {
        b->u->events++;
        return ETW_OK;
    }
    /* first sight of this id: its JSON, then the entry of that JSON */
    etw_text *t = &sc->text;
    etw_text_clear(t);
    if (s->source != ETW_SOURCE_TRACELOGGING) etw_text_put(t, (const char *)key, 4);
    size_t at = t->len, head;
    schema_json(t, s, l, &head);
    etw_status st = etw_text_status(t);
    if (st != ETW_OK) return st;
    used *u = etw_strmap_get(&sc->content, t->data, t->len, &created);
    if (!u) return ETW_E_NOMEM;
    if (created) {
        size_t n = t->len - at;
        u->text = etw_alloc(&sc->alloc, n);
        if (!u->text) return ETW_E_NOMEM;
        memcpy(u->text, t->data + at, n);
        u->head_len = head - at;
        u->tail_len = n - u->head_len;
        u->order = sc->next_order++;
    }
    b->u = u;
    u->events++;
    return ETW_OK;
}

static int by_order(const void *a, const void *b) {
    const used *x = (*(etw_strmap_entry *const *)a)->rec, *y = (*(etw_strmap_entry *const *)b)->rec;
    return x->order < y->order ? -1 : x->order > y->order;
}

etw_status etw_schemas_json(etw_schemas *sc, const char **out, size_t *len) {
    if (!sc || !out || !len) return ETW_E_INVALID_ARG;
    etw_text *t = &sc->text;
    etw_text_clear(t);
    size_t n;
    etw_strmap_entry **v = etw_strmap_list(&sc->content, &n);
    if (!v && n) return ETW_E_NOMEM;
    if (n > 1) qsort(v, n, sizeof *v, by_order);
    etw_text_puts(t, "{\"schemas\":[");
    for (size_t i = 0; i < n; i++) {
        const used *u = v[i]->rec;
        if (!u->text) continue; /* its text could not be had */
        if (i) etw_text_putc(t, ',');
        etw_text_put(t, u->text, u->head_len);
        etw_text_puts(t, ",\"events\":");
        etw_text_u64(t, u->events);
        etw_text_put(t, u->text + u->head_len, u->tail_len);
    }
    etw_text_puts(t, "]}");
    etw_free(&sc->alloc, v);
    etw_status st = etw_text_status(t);
    if (st != ETW_OK) return st;
    *out = t->data;
    *len = t->len;
    return ETW_OK;
}
