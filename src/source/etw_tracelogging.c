/* etw_tracelogging.c - EVENT_SCHEMA_TL metadata -> draft schema.
 * Formats: docs FORMATS.md 2.2-2.5 (TraceLoggingProvider.h encoding comment,
 * TraceLoggingDynamic.h, the provider traits doc). */
#include "etw_tracelogging.h"

#include <string.h>

#include "../common/etw_alloc.h"
#include "../common/etw_bytes.h"

#define NONE 0xFFFFFFFFu

/* One field as read, in metadata order, with its place in the tree. */
struct etw_tl_node {
    etw_property prop;
    uint32_t first_child;  /* struct: first member (node index) or NONE */
    uint32_t last_child;   /* struct: last member linked so far */
    uint32_t next_sibling; /* next field at the same level or NONE */
    uint32_t placed;       /* layout: the node placed at output position i */
};

void etw_tl_scratch_init(etw_tl_scratch *s, const etw_allocator *a) {
    memset(s, 0, sizeof *s);
    s->alloc = etw_allocator_resolve(a);
}

void etw_tl_scratch_free(etw_tl_scratch *s) {
    if (!s) return;
    if (s->alloc.free) {
        etw_free(&s->alloc, s->props);
        etw_free(&s->alloc, s->nodes);
    }
    s->props = NULL;
    s->nodes = NULL;
    s->cap = 0;
}

/* Make room for `need` fields (need <= ETW_TL_MAX_PROPS). Contents of the
 * node array are kept; props are rebuilt by every parse. */
static etw_status scratch_reserve(etw_tl_scratch *s, size_t need) {
    if (need <= s->cap) return ETW_OK;
    if (!s->alloc.alloc) s->alloc = etw_allocator_resolve(NULL);
    size_t cap = s->cap ? s->cap : 16;
    while (cap < need) cap *= 2;
    if (cap > ETW_TL_MAX_PROPS) cap = ETW_TL_MAX_PROPS;
    struct etw_tl_node *nodes = etw_calloc(&s->alloc, cap, sizeof *nodes);
    etw_property *props = etw_calloc(&s->alloc, cap, sizeof *props);
    if (!nodes || !props) {
        etw_free(&s->alloc, nodes);
        etw_free(&s->alloc, props);
        return ETW_E_NOMEM;
    }
    if (s->nodes && s->cap) memcpy(nodes, s->nodes, s->cap * sizeof *nodes);
    etw_free(&s->alloc, s->nodes);
    etw_free(&s->alloc, s->props);
    s->nodes = nodes;
    s->props = props;
    s->cap = cap;
    return ETW_OK;
}

/* Tag bytes: 7 bits each while bit 7 is set; the first four make a 28-bit
 * tag, most significant first; later bytes are skipped. Returns 0 when the
 * chain runs past the cursor's end. */
static int read_tags(etw_cursor *c, uint32_t *tags) {
    uint32_t t = 0;
    unsigned i = 0;
    for (;;) {
        const uint8_t *b = etw_cursor_take(c, 1);
        if (!b) return 0;
        if (i < 4) t |= (uint32_t)(b[0] & 0x7Fu) << (21 - 7 * i);
        i++;
        if (!(b[0] & 0x80u)) break;
    }
    *tags = t;
    return 1;
}

/* A NUL-terminated name inside the cursor's span (the NUL search never
 * goes past it). NULL when there is no NUL. */
static const char *read_name(etw_cursor *c) {
    size_t left = etw_cursor_left(c);
    const uint8_t *start = c->p + c->pos;
    const uint8_t *nul = left ? memchr(start, 0, left) : NULL;
    if (!nul) return NULL;
    etw_cursor_skip(c, (size_t)(nul - start) + 1);
    return (const char *)start;
}

uint16_t etw_tl_map_intype(uint8_t tl_in) {
    tl_in &= ETW_TL_IN_TYPE_MASK;
    if (tl_in == ETW_INTYPE_BINARY) return ETW_INTYPE_MANIFEST_COUNTEDBINARY;
    return tl_in;
}

/* Size in bytes of a fixed-size integer-like TL in-type, 0 otherwise. */
static unsigned int_size(uint8_t tl_in) {
    switch (tl_in) {
    case ETW_INTYPE_INT8: case ETW_INTYPE_UINT8: return 1;
    case ETW_INTYPE_INT16: case ETW_INTYPE_UINT16: return 2;
    case ETW_INTYPE_INT32: case ETW_INTYPE_UINT32: case ETW_INTYPE_BOOLEAN:
    case ETW_INTYPE_HEXINT32: return 4;
    case ETW_INTYPE_INT64: case ETW_INTYPE_UINT64: case ETW_INTYPE_HEXINT64: return 8;
    default: return 0;
    }
}

uint16_t etw_tl_map_outtype(uint8_t tl_in, uint8_t tl_out) {
    tl_in &= ETW_TL_IN_TYPE_MASK;
    tl_out &= ETW_TL_OUT_MASK;
    int binary = tl_in == ETW_INTYPE_BINARY || tl_in == ETW_INTYPE_MANIFEST_COUNTEDBINARY;
    unsigned sz = int_size(tl_in);
    switch (tl_out) {
    case 0: return binary ? ETW_OUTTYPE_HEXBINARY : ETW_OUTTYPE_NULL;
    case 1: return ETW_OUTTYPE_NOPRINT;
    case 2: return ETW_OUTTYPE_STRING;
    case 3: return ETW_OUTTYPE_BOOLEAN;
    case 4: /* HEX */
        if (binary) return ETW_OUTTYPE_HEXBINARY;
        switch (sz) {
        case 1: return ETW_OUTTYPE_HEXINT8;
        case 2: return ETW_OUTTYPE_HEXINT16;
        case 4: return ETW_OUTTYPE_HEXINT32;
        case 8: return ETW_OUTTYPE_HEXINT64;
        default: return ETW_OUTTYPE_NULL;
        }
    case 5: return ETW_OUTTYPE_PID;
    case 6: return ETW_OUTTYPE_TID;
    case 7: return ETW_OUTTYPE_PORT;
    case 8: return ETW_OUTTYPE_IPV4;
    case 9: return ETW_OUTTYPE_IPV6;
    case 10: return ETW_OUTTYPE_SOCKETADDRESS;
    case 11: return ETW_OUTTYPE_XML;
    case 12: return ETW_OUTTYPE_JSON;
    case 13: return ETW_OUTTYPE_WIN32ERROR;
    case 14: return ETW_OUTTYPE_NTSTATUS;
    case 15: return ETW_OUTTYPE_HRESULT;
    case 16: return ETW_OUTTYPE_DATETIME;
    case 17: /* SIGNED */
        switch (sz) {
        case 1: return ETW_OUTTYPE_BYTE;
        case 2: return ETW_OUTTYPE_SHORT;
        case 4: return ETW_OUTTYPE_INT;
        case 8: return ETW_OUTTYPE_LONG;
        default: return ETW_OUTTYPE_NULL;
        }
    case 18: /* UNSIGNED */
        switch (sz) {
        case 1: return ETW_OUTTYPE_UNSIGNEDBYTE;
        case 2: return ETW_OUTTYPE_UNSIGNEDSHORT;
        case 4: return ETW_OUTTYPE_UNSIGNEDINT;
        case 8: return ETW_OUTTYPE_UNSIGNEDLONG;
        default: return ETW_OUTTYPE_NULL;
        }
    default:
        if (tl_out >= 32 && tl_out <= 38) return tl_out; /* equal to TDH */
        return ETW_OUTTYPE_NULL;
    }
}

static etw_status fail(etw_schema *draft, const char **why, etw_status st,
                       const char *reason) {
    memset(draft, 0, sizeof *draft);
    if (why) *why = reason;
    return st;
}

/* An open struct while reading: its node and the members still to come. */
typedef struct open_struct {
    uint32_t node;
    uint32_t remaining;
} open_struct;

etw_status etw_tl_parse(const uint8_t *meta, size_t len, etw_tl_scratch *s,
                        etw_schema *draft, const char **why) {
    if (why) *why = NULL;
    if (!draft) {
        if (why) *why = "invalid argument";
        return ETW_E_INVALID_ARG;
    }
    memset(draft, 0, sizeof *draft);
    if (!s || (!meta && len)) return fail(draft, why, ETW_E_INVALID_ARG, "invalid argument");
    if (len < 2) return fail(draft, why, ETW_E_TRUNCATED, "metadata shorter than its size field");
    size_t size = etw_le16(meta);
    if (size > len) return fail(draft, why, ETW_E_TRUNCATED, "metadata size exceeds the item");
    if (size < 4) return fail(draft, why, ETW_E_CORRUPT, "metadata size too small");

    etw_cursor c = etw_cursor_make(meta, size);
    etw_cursor_skip(&c, 2);
    uint32_t event_tags = 0;
    if (!read_tags(&c, &event_tags))
        return fail(draft, why, ETW_E_TRUNCATED, "event tags run past the metadata");
    const char *event_name = read_name(&c);
    if (!event_name)
        return fail(draft, why, ETW_E_CORRUPT, "event name is not NUL-terminated");

    open_struct stack[ETW_TL_MAX_DEPTH];
    uint32_t depth = 0;
    uint32_t n = 0;
    uint32_t first_top = NONE, last_top = NONE;

    while (etw_cursor_left(&c) > 0) {
        if (n >= ETW_TL_MAX_PROPS)
            return fail(draft, why, ETW_E_LIMIT, "too many fields");
        if (scratch_reserve(s, (size_t)n + 1) != ETW_OK)
            return fail(draft, why, ETW_E_NOMEM, "out of memory");

        const char *name = read_name(&c);
        if (!name) return fail(draft, why, ETW_E_CORRUPT, "field name is not NUL-terminated");
        uint8_t in = etw_cursor_u8(&c);
        uint8_t out = 0;
        uint32_t ftags = 0;
        if (in & ETW_TL_IN_CHAIN) {
            out = etw_cursor_u8(&c);
            if ((out & ETW_TL_OUT_CHAIN) && !read_tags(&c, &ftags))
                return fail(draft, why, ETW_E_TRUNCATED, "field tags run past the metadata");
        }
        uint8_t type = in & ETW_TL_IN_TYPE_MASK;
        uint8_t kind = in & ETW_TL_IN_COUNT_MASK;

        etw_property *p = &s->nodes[n].prop;
        memset(p, 0, sizeof *p);
        p->name = name;
        p->count = 1;
        if (kind == ETW_TL_IN_CCOUNT) {
            p->count = etw_cursor_u16(&c);
            p->flags |= ETW_PROP_COUNT_FIXED;
        } else if (kind == ETW_TL_IN_VCOUNT) {
            p->count = 0;
            p->flags |= ETW_PROP_COUNT_IN_DATA;
        } else if (kind == ETW_TL_IN_CUSTOM) {
            uint16_t tis = etw_cursor_u16(&c);
            etw_cursor_skip(&c, tis);
            p->flags |= ETW_PROP_CUSTOM_SIZED;
        }
        if (c.bad) return fail(draft, why, ETW_E_TRUNCATED, "field runs past the metadata");
        if (ftags) {
            p->tags = ftags;
            p->flags |= ETW_PROP_HAS_TAGS;
        }

        uint32_t members = 0;
        if (type == ETW_TL_IN_STRUCT) {
            if (kind == ETW_TL_IN_CUSTOM)
                return fail(draft, why, ETW_E_CORRUPT, "struct field with a custom serializer");
            members = out & ETW_TL_OUT_MASK;
            if (members == 0)
                return fail(draft, why, ETW_E_CORRUPT, "struct field with no members");
            p->flags |= ETW_PROP_STRUCT;
        } else {
            p->in_type = etw_tl_map_intype(type);
            p->out_type = etw_tl_map_outtype(type, out);
        }

        /* Link the node under its parent (the innermost open struct). */
        struct etw_tl_node *node = &s->nodes[n];
        node->first_child = node->last_child = node->next_sibling = NONE;
        if (depth > 0) {
            struct etw_tl_node *parent = &s->nodes[stack[depth - 1].node];
            if (parent->last_child == NONE) parent->first_child = n;
            else s->nodes[parent->last_child].next_sibling = n;
            parent->last_child = n;
            stack[depth - 1].remaining--;
        } else {
            if (last_top == NONE) first_top = n;
            else s->nodes[last_top].next_sibling = n;
            last_top = n;
        }
        if (members) {
            if (depth >= ETW_TL_MAX_DEPTH)
                return fail(draft, why, ETW_E_LIMIT, "structs nested too deep");
            stack[depth].node = n;
            stack[depth].remaining = members;
            depth++;
        }
        while (depth > 0 && stack[depth - 1].remaining == 0) depth--;
        n++;
    }
    if (depth > 0)
        return fail(draft, why, ETW_E_CORRUPT, "struct claims more fields than remain");

    /* TDH layout, breadth first: the output array is the work queue. */
    uint32_t outn = 0;
    for (uint32_t i = first_top; i != NONE; i = s->nodes[i].next_sibling) {
        s->props[outn] = s->nodes[i].prop;
        s->nodes[outn++].placed = i;
    }
    uint32_t top = outn;
    for (uint32_t k = 0; k < outn; k++) {
        if (!(s->props[k].flags & ETW_PROP_STRUCT)) continue;
        uint32_t src = s->nodes[k].placed;
        uint32_t cnt = 0;
        s->props[k].struct_first = (uint16_t)outn;
        for (uint32_t i = s->nodes[src].first_child; i != NONE; i = s->nodes[i].next_sibling) {
            s->props[outn] = s->nodes[i].prop;
            s->nodes[outn++].placed = i;
            cnt++;
        }
        s->props[k].struct_count = (uint16_t)cnt;
    }
    /* outn == n: every node has exactly one parent. */

    draft->source = ETW_SOURCE_TRACELOGGING;
    draft->event_name = event_name;
    draft->tags = event_tags;
    draft->prop_count = (uint16_t)outn;
    draft->top_count = (uint16_t)top;
    draft->props = outn ? s->props : NULL;
    return ETW_OK;
}

etw_status etw_tl_provider_name(const uint8_t *blob, size_t len, const char **name,
                                size_t *name_len) {
    if (!name || !name_len || (!blob && len)) return ETW_E_INVALID_ARG;
    *name = NULL;
    *name_len = 0;
    if (len < 2) return ETW_E_TRUNCATED;
    size_t size = etw_le16(blob);
    if (size > len) return ETW_E_TRUNCATED;
    if (size < 3) return ETW_E_CORRUPT;
    const uint8_t *nul = memchr(blob + 2, 0, size - 2);
    if (!nul) return ETW_E_CORRUPT;
    *name = (const char *)(blob + 2);
    *name_len = (size_t)(nul - (blob + 2));
    return ETW_OK;
}
