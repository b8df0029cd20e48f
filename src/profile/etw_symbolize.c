/* etw_symbolize.c - images, identities, JIT methods and process names, and
 * the resolution of every frame at the end of the trace (see
 * etw_symbolize.h). The CLR's rundown comes at the end of a trace, after
 * the samples it names: frames are interned with the time they were first
 * seen and resolved only in etw_profile_finish. */
#include "profile/etw_symbolize.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/etw_alloc.h"
#include "common/etw_bytes.h"
#include "common/etw_utf16.h"
#include "decode/etw_decode_walk.h"
#include "etwdecode/etw_pdb.h"
#include "schema/etw_source.h"
#include "profile/etw_profile_internal.h"

struct etw_raw_chunk {
    struct etw_raw_chunk *next;
    size_t cap, used;
    uint8_t data[];
};

#define RAW_CHUNK ((size_t)64 << 10)

/* ---- fields by name ------------------------------------------------------ */

typedef struct field {
    const char *name;
    const uint8_t *data;
    uint32_t size;
    uint16_t in_type;
    uint8_t found;
} field;

/* The fields read in one flat walk (etw_decode_walk_fields) of their
 * top-level properties, remembered per schema and field list: 1 when it
 * could (f then holds what the decode gives), 0 when the decode must tell. */
static int read_fields(etw_profile *p, const etw_event *ev, const etw_schema *s, field *f, size_t n) {
    /* TraceLogging schemas are evicted: their ids are never kept */
    if (n > ETW_FIELDS_MEMO_MAX || s->source == ETW_SOURCE_TRACELOGGING) return 0;
    etw_fields_memo *m = &p->sym.fields[(s->id ^ ((uintptr_t)f[0].name >> 4)) & (ETW_FIELDS_MEMO_SLOTS - 1u)];
    if (m->schema != s || m->id != s->id || m->first != f[0].name) {
        /* names are unique among the top-level properties (etw_names.h):
         * a field without one is never found */
        uint32_t top = s->top_count < s->prop_count ? s->top_count : s->prop_count;
        m->n = 0;
        for (uint32_t j = 0; j < top; j++)
            for (size_t i = 0; s->props[j].name && i < n; i++)
                if (!strcmp(s->props[j].name, f[i].name)) {
                    m->prop[m->n] = (uint16_t)j;
                    m->slot[m->n++] = (uint8_t)i;
                    break;
                }
        m->schema = s;
        m->id = s->id;
        m->first = f[0].name;
    }
    uint64_t *refs;
    size_t refs_len;
    etw_decoder_scratch(p->opt.decoder, &refs, &refs_len);
    const uint8_t *data[ETW_FIELDS_MEMO_MAX];
    uint32_t size[ETW_FIELDS_MEMO_MAX];
    int8_t got[ETW_FIELDS_MEMO_MAX];
    if (etw_decode_walk_fields(s, ev, refs_len, m->prop, m->n, data, size, got) != 1) return 0;
    for (uint32_t k = 0; k < m->n; k++) {
        if (!got[k]) continue;
        field *x = &f[m->slot[k]];
        x->data = data[k];
        x->size = size[k];
        x->in_type = s->props[m->prop[k]].in_type;
        x->found = 1;
    }
    return 1;
}

/* Decode ev's top-level fields named in f (s resolved when NULL). 0 when
 * the event has no schema. */
static int get_fields(etw_profile *p, const etw_event *ev, const etw_schema *s, field *f, size_t n) {
    for (size_t i = 0; i < n; i++) f[i].found = 0;
    if (!s && etw_decoder_resolve(p->opt.decoder, ev, &s, NULL) != ETW_OK) return 0;
    if (!s) return 0;
    if (read_fields(p, ev, s, f, n)) return 1;
    etw_decode_cursor c;
    if (etw_decoder_begin(p->opt.decoder, ev, s, &c) != ETW_OK) return 0;
    etw_value v;
    size_t left = n;
    while (left && etw_decode_next(&c, &v) == ETW_OK) {
        if (v.kind != ETW_VALUE_SCALAR || v.depth != 0 || v.in_array || !v.data) continue;
        for (size_t i = 0; i < n; i++) {
            if (!f[i].found && !strcmp(f[i].name, v.name)) {
                f[i].data = v.data;
                f[i].size = v.size;
                f[i].in_type = v.in_type;
                f[i].found = 1;
                left--;
                break;
            }
        }
    }
    return 1;
}

static uint64_t fu(const field *f) {
    if (!f->found) return 0;
    switch (f->size) {
    case 1: return f->data[0];
    case 2: return etw_le16(f->data);
    case 4: return etw_le32(f->data);
    case 8: return etw_le64(f->data);
    default: return 0;
    }
}

/* Append a string field as UTF-8 to the scratch buffer at *pos (NUL
 * after it). */
static etw_status fappend(etw_profile *p, const field *f, size_t *pos) {
    etw_symbols *y = &p->sym;
    size_t n = 0, units = 0;
    int utf16 = f->found && f->in_type == ETW_INTYPE_UNICODESTRING;
    int ansi = f->found && f->in_type == ETW_INTYPE_ANSISTRING;
    if (utf16) {
        units = f->size / 2;
        while (units && !f->data[2 * units - 2] && !f->data[2 * units - 1]) units--;
        n = units * 3;
    } else if (ansi) {
        n = f->size;
        const void *z = memchr(f->data, 0, n);
        if (z) n = (size_t)((const uint8_t *)z - f->data);
    }
    etw_status st = etw_grow_array(&p->alloc, (void **)&y->buf, &y->buf_cap, *pos + n + 1, 1, &y->bytes);
    if (st != ETW_OK) return st;
    if (utf16) n = etw_utf16_to_utf8(f->data, units, y->buf + *pos);
    else if (ansi) memcpy(y->buf + *pos, f->data, n);
    *pos += n;
    y->buf[*pos] = 0;
    return ETW_OK;
}

/* A string field as UTF-8 in the scratch buffer; *len its length. */
static const char *fstr(etw_profile *p, const field *f, size_t *len) {
    size_t pos = 0;
    *len = 0;
    if (fappend(p, f, &pos) != ETW_OK) return "";
    *len = pos;
    return p->sym.buf;
}

/* The file name of a path ("\Device\...\ntdll.dll" -> "ntdll.dll"). */
static void basename_of(const char **s, size_t *len) {
    for (size_t i = *len; i-- > 0;) {
        if ((*s)[i] == '\\' || (*s)[i] == '/') {
            *s += i + 1;
            *len -= i + 1;
            return;
        }
    }
}

/* ---- range tables -------------------------------------------------------- */

typedef struct open_key {
    const etw_rangetab *t;
    uint32_t pid;
    uint64_t base;
} open_key;

static int open_eq(const void *ctx, uint32_t id) {
    const open_key *k = ctx;
    return k->t->v[id].pid == k->pid && k->t->v[id].base == k->base;
}

static uint64_t open_hash(const etw_profile *p, uint32_t pid, uint64_t base) {
    uint8_t kb[12];
    memcpy(kb, &pid, 4);
    memcpy(kb + 4, &base, 8);
    return etw_idx_hash(p->tree.seed ^ 0x72616e6765730000u, kb, sizeof kb);
}

static uint32_t open_find(const etw_profile *p, const etw_rangetab *t, uint32_t pid, uint64_t base, size_t *slot) {
    open_key k = {t, pid, base};
    return etw_idx_find(&t->open, open_hash(p, pid, base), open_eq, &k, slot);
}

static etw_status range_add(etw_profile *p, etw_rangetab *t, const etw_range *r, int open) {
    etw_symbols *y = &p->sym;
    if (t->n >= UINT32_MAX - 1) return ETW_E_LIMIT;
    etw_status st = etw_grow_array(&p->alloc, (void **)&t->v, &t->cap, t->n + 1, sizeof *t->v, &y->bytes);
    if (st != ETW_OK) return st;
    uint32_t id = (uint32_t)t->n;
    t->v[t->n++] = *r;
    if (!open) return ETW_OK;
    st = etw_idx_reserve(&t->open, &p->alloc, &y->bytes);
    if (st != ETW_OK) return st;
    size_t slot;
    uint32_t old = open_find(p, t, r->pid, r->base, &slot);
    if (old != ETW_NO_ID) t->open.slots[slot].id1 = id + 1; /* the newer load is the open one */
    else etw_idx_set(&t->open, slot, open_hash(p, r->pid, r->base), id);
    return ETW_OK;
}

/* kind: 0 load (from t), 1 rundown at the start (from always), 2 unload
 * (until t), 3 rundown at the end (still loaded at t). */
static etw_status range_event(etw_profile *p, etw_rangetab *t, int kind, uint32_t pid, uint64_t base,
                              uint64_t size, int64_t time, uint32_t name, uint32_t tds) {
    etw_range r;
    memset(&r, 0, sizeof r);
    r.pid = pid;
    r.base = base;
    r.size = size;
    r.name = name;
    r.tds = tds;
    r.start = INT64_MIN;
    r.end = INT64_MAX;
    if (kind == 0 || kind == 1) {
        if (kind == 0) r.start = time;
        return range_add(p, t, &r, 1);
    }
    size_t slot;
    uint32_t id = open_find(p, t, pid, base, &slot);
    if (id != ETW_NO_ID) {
        if (kind == 2) {
            t->v[id].end = time;
            etw_idx_remove(&t->open, slot);
        }
        if (!t->v[id].name) t->v[id].name = name;
        return ETW_OK;
    }
    /* no load seen: it was loaded before the trace began */
    if (kind == 2) r.end = time;
    return range_add(p, t, &r, 0);
}

/* ---- identities ---------------------------------------------------------- */

typedef struct ident_key {
    const etw_symbols *y;
    uint32_t pid;
    uint64_t base;
} ident_key;

static int ident_eq(const void *ctx, uint32_t id) {
    const ident_key *k = ctx;
    return k->y->idents[id].pid == k->pid && k->y->idents[id].base == k->base;
}

static etw_status ident_get(etw_profile *p, uint32_t pid, uint64_t base, etw_ident **out) {
    etw_symbols *y = &p->sym;
    uint64_t h = open_hash(p, pid, base) ^ 0x1d;
    ident_key k = {y, pid, base};
    size_t slot;
    uint32_t i = etw_idx_find(&y->ident_idx, h, ident_eq, &k, &slot);
    if (i == ETW_NO_ID) {
        if (y->nidents >= UINT32_MAX - 1) return ETW_E_LIMIT;
        etw_status st =
            etw_grow_array(&p->alloc, (void **)&y->idents, &y->idents_cap, y->nidents + 1, sizeof *y->idents, &y->bytes);
        if (st != ETW_OK) return st;
        if ((y->ident_idx.count + 1) * 4 > y->ident_idx.cap * 3) {
            st = etw_idx_reserve(&y->ident_idx, &p->alloc, &y->bytes);
            if (st != ETW_OK) return st;
            etw_idx_find(&y->ident_idx, h, ident_eq, &k, &slot);
        }
        i = (uint32_t)y->nidents++;
        memset(&y->idents[i], 0, sizeof y->idents[i]);
        y->idents[i].pid = pid;
        y->idents[i].base = base;
        etw_idx_set(&y->ident_idx, slot, h, i);
    }
    *out = &y->idents[i];
    return ETW_OK;
}

/* ---- events -------------------------------------------------------------- */

etw_status etw_symbols_init(etw_profile *p) {
    memset(&p->sym, 0, sizeof p->sym);
    return ETW_OK;
}

static void rangetab_free(etw_profile *p, etw_rangetab *t) {
    etw_free(&p->alloc, t->v);
    etw_free(&p->alloc, t->order);
    etw_free(&p->alloc, t->max_end);
    etw_idx_free(&t->open, &p->alloc);
}

void etw_symbols_free(etw_profile *p) {
    etw_symbols *y = &p->sym;
    rangetab_free(p, &y->images);
    rangetab_free(p, &y->methods);
    etw_free(&p->alloc, y->idents);
    etw_idx_free(&y->ident_idx, &p->alloc);
    for (size_t i = 0; i < y->npdbs; i++) etw_pdb_free(y->pdbs[i].pdb);
    etw_free(&p->alloc, y->pdbs);
    etw_idx_free(&y->pdb_idx, &p->alloc);
    etw_free(&p->alloc, y->buf);
    etw_free(&p->alloc, y->defers);
    while (y->raw) {
        struct etw_raw_chunk *c = y->raw;
        y->raw = c->next;
        etw_free(&p->alloc, c);
    }
    memset(y, 0, sizeof *y);
}

static etw_status image_event(etw_profile *p, const etw_event *ev, const etw_schema *s) {
    int kind;
    switch (ev->opcode) {
    case 10: kind = 0; break; /* Load */
    case 3: kind = 1; break;  /* DCStart */
    case 2: kind = 2; break;  /* Unload */
    case 4: kind = 3; break;  /* DCEnd */
    default: return ETW_OK;
    }
    field f[] = {{"ImageBase", 0, 0, 0, 0}, {"ImageSize", 0, 0, 0, 0}, {"ProcessId", 0, 0, 0, 0},
                 {"TimeDateStamp", 0, 0, 0, 0}, {"FileName", 0, 0, 0, 0}};
    if (!get_fields(p, ev, s, f, 5) || !f[0].found || !f[1].found) return ETW_OK;
    size_t len;
    const char *name = fstr(p, &f[4], &len);
    basename_of(&name, &len);
    uint32_t sid = 0;
    if (len) {
        etw_status st = etw_stacktree_str(&p->tree, name, len, &sid);
        if (st != ETW_OK) return st;
    }
    uint32_t pid = f[2].found ? (uint32_t)fu(&f[2]) : ev->pid;
    return range_event(p, &p->sym.images, kind, pid, fu(&f[0]), fu(&f[1]), ev->raw_timestamp, sid,
                       (uint32_t)fu(&f[3]));
}

static etw_status process_event(etw_profile *p, const etw_event *ev, const etw_schema *s) {
    if (ev->opcode != 1 && ev->opcode != 2 && ev->opcode != 3 && ev->opcode != 4 && ev->opcode != 39)
        return ETW_OK;
    field f[] = {{"ProcessId", 0, 0, 0, 0}, {"ImageFileName", 0, 0, 0, 0}};
    if (!get_fields(p, ev, s, f, 2) || !f[0].found || !f[1].found) return ETW_OK;
    size_t len;
    const char *name = fstr(p, &f[1], &len);
    if (!len) return ETW_OK;
    uint32_t pid = (uint32_t)fu(&f[0]);
    if (etw_stacktree_process(&p->tree, pid)) {
        /* keep the name a process had while the trace ran (Start, DCStart) */
        if (ev->opcode == 2 || ev->opcode == 4 || ev->opcode == 39) return ETW_OK;
    }
    return etw_stacktree_set_process(&p->tree, pid, name, len);
}

etw_status etw_symbols_kernel_process(etw_profile *p, const etw_event *ev, const etw_schema *s) {
    field f[] = {{"ProcessID", 0, 0, 0, 0}, {"ImageName", 0, 0, 0, 0}};
    if (!get_fields(p, ev, s, f, 2) || !f[0].found || !f[1].found) return ETW_OK;
    uint32_t pid = (uint32_t)fu(&f[0]);
    if (etw_stacktree_process(&p->tree, pid)) return ETW_OK; /* the kernel's own name wins */
    size_t len;
    const char *name = fstr(p, &f[1], &len);
    basename_of(&name, &len); /* a full path: the kernel's ImageFileName is the file name */
    if (!len) return ETW_OK;
    return etw_stacktree_set_process(&p->tree, pid, name, len);
}

static etw_status ktc_event(etw_profile *p, const etw_event *ev, const etw_schema *s) {
    /* the identities name PDBs only: none to look for, nothing to read */
    if (!p->opt.nsymbol_paths) return ETW_OK;
    if (ev->opcode == 0) { /* ImageID */
        field f[] = {{"ImageBase", 0, 0, 0, 0}, {"ImageSize", 0, 0, 0, 0}, {"ProcessId", 0, 0, 0, 0},
                     {"TimeDateStamp", 0, 0, 0, 0}, {"OriginalFileName", 0, 0, 0, 0}};
        if (!get_fields(p, ev, s, f, 5) || !f[0].found || !f[2].found) return ETW_OK;
        etw_ident *id;
        etw_status st = ident_get(p, (uint32_t)fu(&f[2]), fu(&f[0]), &id);
        if (st != ETW_OK) return st;
        id->tds = (uint32_t)fu(&f[3]);
        id->image_size = (uint32_t)fu(&f[1]);
        size_t len;
        const char *name = fstr(p, &f[4], &len);
        if (len) {
            uint32_t sid;
            st = etw_stacktree_str(&p->tree, name, len, &sid);
            if (st != ETW_OK) return st;
            id->orig_name = sid;
        }
        return ETW_OK;
    }
    if (ev->opcode == 36) { /* ImageID/DbgID_RSDS */
        field f[] = {{"ImageBase", 0, 0, 0, 0}, {"ProcessId", 0, 0, 0, 0}, {"GuidSig", 0, 0, 0, 0},
                     {"Age", 0, 0, 0, 0}, {"PdbFileName", 0, 0, 0, 0}};
        if (!get_fields(p, ev, s, f, 5) || !f[0].found || !f[1].found || !f[2].found || f[2].size != 16)
            return ETW_OK;
        etw_ident *id;
        etw_status st = ident_get(p, (uint32_t)fu(&f[1]), fu(&f[0]), &id);
        if (st != ETW_OK) return st;
        id->guid = etw_guid_at(f[2].data);
        id->age = (uint32_t)fu(&f[3]);
        id->has_rsds = 1;
        size_t len;
        const char *name = fstr(p, &f[4], &len);
        if (len) {
            uint32_t sid;
            st = etw_stacktree_str(&p->tree, name, len, &sid);
            if (st != ETW_OK) return st;
            id->pdb_name = sid;
        }
    }
    return ETW_OK;
}

/* MethodFlags: Jitted (TraceEvent's MethodFlags.Jitted) */
#define METHOD_JITTED 0x8u

static const char *const method_field_names[6] = {"MethodStartAddress", "MethodSize",     "MethodFlags",
                                                  "MethodNamespace",    "MethodName",     "MethodSignature"};

/* Bytes of a fixed-size integer property, 0 for anything else. */
static unsigned fixed_int_size(const etw_property *pr) {
    if (pr->flags & ~(uint32_t)(ETW_PROP_HAS_TAGS | ETW_PROP_OPTIONAL)) return 0;
    switch (pr->in_type) {
    case ETW_INTYPE_INT8:
    case ETW_INTYPE_UINT8: return 1;
    case ETW_INTYPE_INT16:
    case ETW_INTYPE_UINT16: return 2;
    case ETW_INTYPE_INT32:
    case ETW_INTYPE_UINT32:
    case ETW_INTYPE_HEXINT32: return 4;
    case ETW_INTYPE_INT64:
    case ETW_INTYPE_UINT64:
    case ETW_INTYPE_HEXINT64: return 8;
    default: return 0;
    }
}

/* The layout of a method event's schema (etw_method_memo). */
static void method_layout(const etw_schema *s, etw_method_memo *m) {
    m->ok = 0;
    uint32_t top = s->top_count < s->prop_count ? s->top_count : s->prop_count;
    uint32_t at = 0, run = 0;
    int strings = 0, ints = 0;
    for (uint32_t j = 0; j < top && strings < 3; j++) {
        const etw_property *pr = &s->props[j];
        int which = -1;
        for (int i = 0; i < 6; i++)
            if (pr->name && !strcmp(pr->name, method_field_names[i])) which = i;
        if (which >= 3) { /* the strings, in their order */
            if (which != 3 + strings || pr->in_type != ETW_INTYPE_UNICODESTRING ||
                (pr->flags & ~(uint32_t)(ETW_PROP_HAS_TAGS | ETW_PROP_OPTIONAL)))
                return;
            m->skip[strings++] = run;
            run = 0;
            continue;
        }
        unsigned n = fixed_int_size(pr);
        if (!n) return;
        if (which >= 0) {
            if (strings) return; /* its offset would vary */
            m->off[which] = at;
            m->size[which] = (uint8_t)n;
            ints |= 1 << which;
        }
        at += n;
        run += n;
    }
    m->ok = strings == 3 && ints == 7;
}

/* The six fields read directly when the schema's layout allows and the
 * payload holds all of them (the strings NUL-terminated): what the decode
 * gives then. 1 when read, 0 when the fields must be decoded. */
static int method_fields_fast(etw_profile *p, const etw_event *ev, const etw_schema *s, field *f) {
    if (s->source == ETW_SOURCE_TRACELOGGING) return 0; /* ids not kept */
    etw_method_memo *m = &p->sym.method_memo[s->id & (ETW_METHOD_MEMO_SLOTS - 1u)];
    if (m->schema != s || m->id != s->id) {
        method_layout(s, m);
        m->schema = s;
        m->id = s->id;
    }
    if (!m->ok || !ev->user_data) return 0;
    const uint8_t *d = ev->user_data;
    size_t len = ev->user_data_len;
    for (int i = 0; i < 3; i++) {
        if (len < m->size[i] || m->off[i] > len - m->size[i]) return 0;
        f[i].data = d + m->off[i];
        f[i].size = m->size[i];
        f[i].in_type = ETW_INTYPE_UINT64; /* fu reads by size */
        f[i].found = 1;
    }
    size_t pos = 0;
    for (int i = 0; i < 3; i++) {
        if (len - pos < m->skip[i]) return 0;
        pos += m->skip[i];
        int nul;
        size_t sl = etw_decode_str_len(d + pos, (uint32_t)(len - pos), 2, &nul);
        if (!nul) return 0; /* no NUL: the decode says what it takes */
        field *x = &f[3 + i];
        x->data = d + pos;
        x->size = (uint32_t)sl;
        x->in_type = ETW_INTYPE_UNICODESTRING;
        x->found = 1;
        pos += sl + 2;
    }
    return 1;
}

/* TraceLog's GetFullName: Namespace.Name(args), args cut from the
 * signature at its first '(' (f: namespace, name, signature). */
static etw_status method_name(etw_profile *p, const field *f, uint32_t *sid) {
    etw_symbols *y = &p->sym;
    size_t pos = 0;
    etw_status st = fappend(p, &f[0], &pos);
    if (st == ETW_OK) {
        field dot = {".", (const uint8_t *)".", 1, ETW_INTYPE_ANSISTRING, 1};
        st = fappend(p, &dot, &pos);
    }
    if (st == ETW_OK) st = fappend(p, &f[1], &pos);
    size_t head = pos;
    if (st == ETW_OK) st = fappend(p, &f[2], &pos);
    if (st != ETW_OK) return st;
    const char *paren = pos > head ? memchr(y->buf + head, '(', pos - head) : NULL;
    size_t largs = paren ? pos - (size_t)(paren - y->buf) : 0;
    if (paren) memmove(y->buf + head, paren, largs);
    return etw_stacktree_str(&p->tree, y->buf, head + largs, sid);
}

/* Keep a method's name strings undecoded: *defer its id + 1, 0 when past
 * ETW_PROFILE_MAX_DEFERRED_NAMES (then made now). */
static etw_status method_defer(etw_profile *p, const field *f, uint32_t *defer) {
    etw_symbols *y = &p->sym;
    *defer = 0;
    size_t need = 0;
    for (int i = 0; i < 3; i++)
        if (f[i].found) need += f[i].size;
    if (need > ETW_PROFILE_MAX_DEFERRED_NAMES - y->raw_len || y->ndefers >= UINT32_MAX - 1) return ETW_OK;
    etw_status st = etw_grow_array(&p->alloc, (void **)&y->defers, &y->defers_cap, y->ndefers + 1,
                                   sizeof *y->defers, &y->bytes);
    if (st != ETW_OK) return st;
    struct etw_raw_chunk *c = y->raw;
    if (!c || c->cap - c->used < need) {
        size_t cap = need > RAW_CHUNK ? need : RAW_CHUNK;
        c = etw_alloc(&p->alloc, sizeof *c + cap);
        if (!c) return ETW_E_NOMEM;
        c->next = y->raw;
        c->cap = cap;
        c->used = 0;
        y->raw = c;
        y->bytes += sizeof *c + cap;
    }
    etw_defer_name *dn = &y->defers[y->ndefers];
    memset(dn, 0, sizeof *dn);
    dn->data = c->data + c->used;
    for (int i = 0; i < 3; i++) {
        if (!f[i].found) continue;
        dn->found[i] = 1;
        dn->size[i] = f[i].size;
        dn->in_type[i] = f[i].in_type;
        if (f[i].size) memcpy(c->data + c->used, f[i].data, f[i].size);
        c->used += f[i].size;
    }
    y->raw_len += need;
    *defer = (uint32_t)++y->ndefers;
    return ETW_OK;
}

/* The name of a method whose name was deferred, made now. */
static etw_status method_undefer(etw_profile *p, etw_range *r) {
    etw_symbols *y = &p->sym;
    const etw_defer_name *dn = &y->defers[r->defer - 1];
    field f[3];
    const uint8_t *at = dn->data;
    for (int i = 0; i < 3; i++) {
        memset(&f[i], 0, sizeof f[i]);
        f[i].name = method_field_names[3 + i];
        f[i].found = dn->found[i];
        if (!f[i].found) continue;
        f[i].data = at;
        f[i].size = dn->size[i];
        f[i].in_type = dn->in_type[i];
        at += dn->size[i];
    }
    uint32_t sid;
    etw_status st = method_name(p, f, &sid);
    if (st != ETW_OK) return st;
    r->name = sid;
    r->defer = 0;
    return ETW_OK;
}

static etw_status method_event(etw_profile *p, const etw_event *ev, const etw_schema *s, int rundown) {
    int kind;
    if (!rundown) {
        switch (ev->id) {
        case 143: kind = 0; break; /* MethodLoadVerbose */
        case 144: kind = 2; break; /* MethodUnloadVerbose */
        case 139: kind = 1; break; /* MethodDCStartVerboseV2 */
        case 140: kind = 3; break; /* MethodDCEndVerboseV2 */
        default: return ETW_OK;
        }
    } else {
        switch (ev->id) {
        case 143: kind = 1; break; /* MethodDCStartVerbose */
        case 144: kind = 3; break; /* MethodDCEndVerbose */
        default: return ETW_OK;
        }
    }
    field f[6];
    memset(f, 0, sizeof f);
    for (int i = 0; i < 6; i++) f[i].name = method_field_names[i];
    const etw_schema *rs = s;
    if (!rs && etw_decoder_resolve(p->opt.decoder, ev, &rs, NULL) != ETW_OK) return ETW_OK;
    if (!rs) return ETW_OK;
    if (!method_fields_fast(p, ev, rs, f) && !get_fields(p, ev, rs, f, 6)) return ETW_OK;
    if (!f[0].found || !f[1].found) return ETW_OK;
    if (!(fu(&f[2]) & METHOD_JITTED)) return ETW_OK; /* other code is inside an image */
    etw_symbols *y = &p->sym;
    uint32_t pid, tid;
    etw_decoder_event_ids(p->opt.decoder, ev, s, &pid, &tid);
    uint64_t base = fu(&f[0]);
    if (kind >= 2) {
        /* an unload or a rundown's end of a method loaded in the trace: it
         * keeps the load's name (never empty) */
        size_t slot;
        uint32_t id = open_find(p, &y->methods, pid, base, &slot);
        if (id != ETW_NO_ID) {
            if (kind == 2) {
                y->methods.v[id].end = ev->raw_timestamp;
                etw_idx_remove(&y->methods.open, slot);
            }
            return ETW_OK;
        }
    }
    /* a new range: its name made when a frame falls in it */
    uint32_t defer, sid = 0;
    etw_status st = method_defer(p, &f[3], &defer);
    if (st == ETW_OK && !defer) st = method_name(p, &f[3], &sid);
    if (st != ETW_OK) return st;
    size_t n = y->methods.n;
    st = range_event(p, &y->methods, kind, pid, base, fu(&f[1]), ev->raw_timestamp, sid, 0);
    if (st == ETW_OK && y->methods.n > n) y->methods.v[n].defer = defer;
    return st;
}

etw_status etw_symbols_event(etw_profile *p, const etw_event *ev, const etw_schema *s, int ktc) {
    if (ktc) return ktc_event(p, ev, s);
    if (ev->form != ETW_FORM_EVENT_HEADER) {
        /* kernel: Image class or Process class (the caller checked) */
        if (ev->provider.data1 == 0x2cb15d1du) return image_event(p, ev, s);
        return process_event(p, ev, s);
    }
    return method_event(p, ev, s, ev->provider.data1 == 0xa669021cu);
}

/* ---- resolution ---------------------------------------------------------- */

/* Sort the ranges by (pid, base, start) with an index array, and keep the
 * largest end address so far within each pid, so a lookup walks down only
 * while a range below can still cover the address. */
static etw_status build_order(etw_profile *p, etw_rangetab *t) {
    if (!t->n) return ETW_OK;
    t->order = etw_calloc(&p->alloc, t->n, sizeof *t->order);
    t->max_end = etw_calloc(&p->alloc, t->n, sizeof *t->max_end);
    if (!t->order || !t->max_end) return ETW_E_NOMEM;
    p->sym.bytes += t->n * (sizeof *t->order + sizeof *t->max_end);
    for (size_t i = 0; i < t->n; i++) t->order[i] = (uint32_t)i;
    /* a bottom-up merge sort: qsort has no context argument in C11, and
     * no global state is kept */
    uint32_t *tmp = etw_calloc(&p->alloc, t->n, sizeof *tmp);
    if (!tmp) return ETW_E_NOMEM;
    for (size_t w = 1; w < t->n; w *= 2) {
        for (size_t lo = 0; lo < t->n; lo += 2 * w) {
            size_t mid = lo + w < t->n ? lo + w : t->n, hi = lo + 2 * w < t->n ? lo + 2 * w : t->n;
            size_t i = lo, j = mid, k = lo;
            while (i < mid && j < hi) {
                const etw_range *a = &t->v[t->order[i]], *b = &t->v[t->order[j]];
                int le = a->pid != b->pid ? a->pid < b->pid
                         : a->base != b->base ? a->base < b->base
                                               : a->start <= b->start;
                tmp[k++] = le ? t->order[i++] : t->order[j++];
            }
            while (i < mid) tmp[k++] = t->order[i++];
            while (j < hi) tmp[k++] = t->order[j++];
        }
        memcpy(t->order, tmp, t->n * sizeof *tmp);
    }
    etw_free(&p->alloc, tmp);
    for (size_t i = 0; i < t->n; i++) {
        const etw_range *r = &t->v[t->order[i]];
        uint64_t end = r->base + r->size < r->base ? UINT64_MAX : r->base + r->size;
        if (i && t->v[t->order[i - 1]].pid == r->pid && t->max_end[i - 1] > end) end = t->max_end[i - 1];
        t->max_end[i] = end;
    }
    return ETW_OK;
}

/* The range of pid covering addr, best the one loaded at time `when`, else
 * the one nearest in time. NULL when none. */
static const etw_range *range_lookup(const etw_rangetab *t, uint32_t pid, uint64_t addr, int64_t when) {
    if (!t->n) return NULL;
    /* last entry with (pid, base) <= (pid, addr) */
    size_t lo = 0, hi = t->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        const etw_range *r = &t->v[t->order[mid]];
        if (r->pid < pid || (r->pid == pid && r->base <= addr)) lo = mid + 1;
        else hi = mid;
    }
    const etw_range *best = NULL;
    uint64_t best_dist = UINT64_MAX;
    unsigned scanned = 0;
    for (size_t i = lo; i-- > 0 && scanned < ETW_SYMBOLS_MAX_SCAN; scanned++) {
        const etw_range *r = &t->v[t->order[i]];
        if (r->pid != pid || t->max_end[i] <= addr) break;
        if (addr - r->base >= r->size) continue;
        uint64_t dist;
        if (when < r->start) dist = (uint64_t)r->start - (uint64_t)when;
        else if (when > r->end) dist = (uint64_t)when - (uint64_t)r->end;
        else dist = 0;
        if (!best || dist < best_dist) {
            best = r;
            best_dist = dist;
            if (!dist) break;
        }
    }
    return best;
}

/* ---- PDBs ---------------------------------------------------------------- */

typedef struct pdb_key {
    const etw_symbols *y;
    const etw_ident *id;
} pdb_key;

static int pdb_eq(const void *ctx, uint32_t i) {
    const pdb_key *k = ctx;
    const etw_pdbent *e = &k->y->pdbs[i];
    return e->age == k->id->age && e->name == k->id->pdb_name && !memcmp(&e->guid, &k->id->guid, sizeof e->guid);
}

/* The PDB of an identity: looked for in the symbol paths and opened the
 * first time, remembered (found or not) after. NULL when there is none. */
static etw_status pdb_for(etw_profile *p, const etw_ident *id, const struct etw_pdb **out) {
    etw_symbols *y = &p->sym;
    *out = NULL;
    uint8_t kb[24];
    memcpy(kb, &id->guid, 16);
    memcpy(kb + 16, &id->age, 4);
    memcpy(kb + 20, &id->pdb_name, 4);
    uint64_t h = etw_idx_hash(p->tree.seed ^ 0x706462u, kb, sizeof kb);
    pdb_key k = {y, id};
    size_t slot;
    uint32_t i = etw_idx_find(&y->pdb_idx, h, pdb_eq, &k, &slot);
    if (i != ETW_NO_ID) {
        *out = y->pdbs[i].pdb;
        return ETW_OK;
    }
    etw_status st = etw_grow_array(&p->alloc, (void **)&y->pdbs, &y->pdbs_cap, y->npdbs + 1, sizeof *y->pdbs, &y->bytes);
    if (st != ETW_OK) return st;
    if ((y->pdb_idx.count + 1) * 4 > y->pdb_idx.cap * 3) {
        st = etw_idx_reserve(&y->pdb_idx, &p->alloc, &y->bytes);
        if (st != ETW_OK) return st;
        etw_idx_find(&y->pdb_idx, h, pdb_eq, &k, &slot);
    }
    etw_pdbent *e = &y->pdbs[y->npdbs];
    memset(e, 0, sizeof *e);
    e->guid = id->guid;
    e->age = id->age;
    e->name = id->pdb_name;
    etw_idx_set(&y->pdb_idx, slot, h, (uint32_t)y->npdbs);
    y->npdbs++;
    size_t nlen;
    const char *name = etw_stacktree_str_at(&p->tree, id->pdb_name, &nlen); /* NUL-terminated */
    if (!name || !nlen) return ETW_OK;
    char path[4096];
    for (size_t j = 0; j < p->opt.nsymbol_paths; j++) {
        if (!p->opt.symbol_paths[j]) continue;
        if (etw_symstore_find(p->opt.symbol_paths[j], name, &id->guid, id->age, path, sizeof path) != ETW_OK)
            continue;
        const char *why = NULL;
        etw_pdb_options o;
        memset(&o, 0, sizeof o);
        o.allocator = &p->alloc;
        o.reason = &why;
        struct etw_pdb *pdb = NULL;
        st = etw_pdb_open_file(&pdb, path, &o);
        if (st == ETW_OK) {
            y->pdbs[y->npdbs - 1].pdb = pdb;
            p->stats.pdbs_loaded++;
            *out = pdb;
            return ETW_OK;
        }
        if (st == ETW_E_NOMEM) return st;
        char msg[512];
        snprintf(msg, sizeof msg, "PDB %.400s does not open: %.80s", path, why ? why : etw_strerror(st));
        etw_profile_diag(p, st, msg);
        p->stats.pdbs_failed++;
    }
    return ETW_OK;
}

/* Name an image frame by its PDB's function, when the PDB is there. */
static etw_status pdb_name(etw_profile *p, etw_frame_rec *f, const etw_range *im) {
    etw_symbols *y = &p->sym;
    if (!p->opt.nsymbol_paths || f->offset > UINT32_MAX) return ETW_OK;
    ident_key k = {y, im->pid, im->base};
    uint32_t i = etw_idx_find(&y->ident_idx, open_hash(p, im->pid, im->base) ^ 0x1d, ident_eq, &k, NULL);
    if (i == ETW_NO_ID || !y->idents[i].has_rsds) return ETW_OK;
    const struct etw_pdb *pdb;
    etw_status st = pdb_for(p, &y->idents[i], &pdb);
    if (st != ETW_OK || !pdb) return st;
    etw_pdb_symbol sym;
    uint32_t off;
    if (etw_pdb_lookup(pdb, (uint32_t)f->offset, &sym, &off) != ETW_OK) return ETW_OK;
    uint32_t sid;
    st = etw_stacktree_str(&p->tree, sym.name, sym.name_len, &sid);
    if (st != ETW_OK) return st;
    f->kind = ETW_FRAME_PDB;
    f->function = sid;
    f->offset = off;
    return ETW_OK;
}

etw_status etw_symbols_finish(etw_profile *p) {
    etw_symbols *y = &p->sym;
    etw_stacktree *t = &p->tree;
    etw_status st = build_order(p, &y->images);
    if (st == ETW_OK) st = build_order(p, &y->methods);
    if (st != ETW_OK) return st;
    /* leaf_only without symbol paths: only the samples' frames are read
     * (with symbol paths every frame is, as PDBs open and say why not) */
    uint8_t *want = NULL;
    if (t->leaf_only && !p->opt.nsymbol_paths) {
        want = etw_calloc(&p->alloc, t->nframes ? t->nframes : 1, 1);
        if (!want) return ETW_E_NOMEM;
        for (size_t i = 0; i < t->nsamples; i++)
            if (t->samples[i].stack != ETW_STACK_NONE) want[t->stacks.nodes[t->samples[i].stack].frame] = 1;
    }
    for (uint32_t i = 0; i < t->nframes; i++) {
        if (want && !want[i]) continue;
        etw_frame_rec *f = &t->frames[i];
        int kernel = f->pid == ETW_PROFILE_KERNEL_PID;
        if (!kernel) {
            const etw_range *m = range_lookup(&y->methods, f->pid, f->address, f->first_raw);
            if (m && m->defer) {
                st = method_undefer(p, &y->methods.v[m - y->methods.v]);
                if (st != ETW_OK) {
                    etw_free(&p->alloc, want);
                    return st;
                }
            }
            if (m) {
                f->kind = ETW_FRAME_JIT;
                f->function = m->name;
                f->offset = f->address - m->base;
                continue;
            }
        }
        const etw_range *im = range_lookup(&y->images, kernel ? 0 : f->pid, f->address, f->first_raw);
        if (im) {
            f->kind = ETW_FRAME_IMAGE;
            f->module = im->name;
            f->offset = f->address - im->base;
            st = pdb_name(p, f, im);
            if (st != ETW_OK) {
                etw_free(&p->alloc, want);
                return st;
            }
        }
    }
    etw_free(&p->alloc, want);
    /* frames of the samples' stacks, with multiplicity: each node counts
     * the samples whose stack goes through it (children have larger ids) */
    uint32_t n = t->stacks.n;
    uint64_t *through = etw_calloc(&p->alloc, n, sizeof *through);
    if (!through) return ETW_E_NOMEM;
    for (size_t i = 0; i < t->nsamples; i++) through[t->samples[i].stack] += t->samples[i].count;
    for (uint32_t s = n; s-- > 1;) {
        const etw_stack_node *nd = &t->stacks.nodes[s];
        if (!through[s]) continue;
        p->stats.frames += through[s];
        if (t->frames[nd->frame].kind != ETW_FRAME_ADDRESS) p->stats.frames_resolved += through[s];
        through[nd->parent] += through[s];
    }
    etw_free(&p->alloc, through);
    return ETW_OK;
}
