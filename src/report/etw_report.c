/* etw_report.c - the report object (etw_report.h): dispatch to the report
 * of each kind, and the bounded tables and field lookups they share. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/etw_utf16.h"
#include "report/etw_report_internal.h"

const etw_guid rep_guid_process = {0x3d6fa8d0, 0xfe05, 0x11d0, {0x9d, 0xda, 0x00, 0xc0, 0x4f, 0xd7, 0xba, 0x7c}};
const etw_guid rep_guid_kernel_process = {0x22fb2cd6, 0x0e7b, 0x422b, {0xa0, 0xc7, 0x2f, 0xad, 0x1f, 0xd0, 0xe7, 0x16}};
const etw_guid rep_guid_clr = {0xe13c0d23, 0xccbc, 0x4e12, {0x93, 0x1b, 0xd9, 0xcc, 0x2e, 0xee, 0x27, 0xe4}};
const etw_guid rep_guid_diskio = {0x3d6fa8d4, 0xfe05, 0x11d0, {0x9d, 0xda, 0x00, 0xc0, 0x4f, 0xd7, 0xba, 0x7c}};
const etw_guid rep_guid_fileio = {0x90cbdc39, 0x4a3e, 0x11d1, {0x84, 0xf4, 0x00, 0x00, 0xf8, 0x04, 0x64, 0xe3}};
const etw_guid rep_guid_tcpip = {0x9a280ac0, 0xc8e0, 0x11d1, {0x84, 0xe2, 0x00, 0xc0, 0x4f, 0xb9, 0x98, 0xa2}};
const etw_guid rep_guid_udpip = {0xbf3a50c5, 0xa9c9, 0x4988, {0xa0, 0x05, 0x2d, 0xf0, 0xb7, 0xc8, 0x0f, 0x80}};
const etw_guid rep_guid_perfinfo = {0xce1dbfb4, 0x137e, 0x4da6, {0x87, 0xb0, 0x3f, 0x59, 0xaa, 0x10, 0x2c, 0xbc}};

static const char *const kind_names[ETW_REPORT_KIND_COUNT_] = {"processes", "gc", "disk", "files", "network", "cpu"};

etw_status etw_report_kind_parse(const char *name, etw_report_kind *out) {
    if (!name || !out) return ETW_E_INVALID_ARG;
    for (int i = 0; i < ETW_REPORT_KIND_COUNT_; i++)
        if (!strcmp(name, kind_names[i])) {
            *out = (etw_report_kind)i;
            return ETW_OK;
        }
    return ETW_E_INVALID_ARG;
}

const char *etw_report_kind_name(etw_report_kind kind) {
    return (unsigned)kind < ETW_REPORT_KIND_COUNT_ ? kind_names[kind] : "?";
}

static void *def_alloc(void *ctx, size_t n) {
    (void)ctx;
    return malloc(n);
}
static void def_free(void *ctx, void *p) {
    (void)ctx;
    free(p);
}

void *rep_alloc(etw_report *r, size_t n) {
    void *p = r->alloc.alloc(r->alloc.ctx, n ? n : 1);
    if (p) memset(p, 0, n);
    return p;
}

void rep_free(etw_report *r, void *p) {
    if (p) r->alloc.free(r->alloc.ctx, p);
}

static const rep_vtable *const vtables[ETW_REPORT_KIND_COUNT_] = {
    &etw_rep_processes_vt, &etw_rep_gc_vt, &etw_rep_disk_vt, &etw_rep_files_vt, &etw_rep_network_vt, &etw_rep_cpu_vt,
};

etw_status etw_report_new(etw_report **out, etw_report_kind kind, const etw_report_options *opt) {
    if (!out || (unsigned)kind >= ETW_REPORT_KIND_COUNT_) return ETW_E_INVALID_ARG;
    *out = NULL;
    etw_report_options o;
    memset(&o, 0, sizeof o);
    if (opt) o = *opt;
    if (kind == ETW_REPORT_CPU && !o.decoder) return ETW_E_INVALID_ARG;
    etw_allocator a = {def_alloc, def_free, NULL};
    if (o.allocator) a = *o.allocator;
    etw_report *r = a.alloc(a.ctx, sizeof *r);
    if (!r) return ETW_E_NOMEM;
    memset(r, 0, sizeof *r);
    r->alloc = a;
    r->opt = o;
    r->kind = kind;
    r->vt = vtables[kind];
    r->origin = o.origin;
    r->origin_set = o.origin != 0;
    etw_status st = r->vt->init(r);
    if (st != ETW_OK) {
        etw_report_free(r);
        return st;
    }
    *out = r;
    return ETW_OK;
}

void etw_report_free(etw_report *r) {
    if (!r) return;
    if (r->vt && r->vt->free) r->vt->free(r);
    r->alloc.free(r->alloc.ctx, r);
}

etw_status etw_report_add(etw_report *r, etw_decoder *d, const etw_event *ev, const etw_schema *s) {
    if (!r || !ev) return ETW_E_INVALID_ARG;
    if (r->finished) return ETW_E_INVALID_ARG;
    if (!r->origin_set) {
        r->origin = ev->timestamp;
        r->origin_set = 1;
    }
    r->events++;
    if (ev->is_logfile_header) return r->vt->skip ? r->vt->skip(r, d, ev, s) : ETW_OK;
    return r->vt->add(r, d, ev, s);
}

etw_status etw_report_skip(etw_report *r, etw_decoder *d, const etw_event *ev, const etw_schema *s) {
    if (!r || !ev) return ETW_E_INVALID_ARG;
    if (r->finished) return ETW_E_INVALID_ARG;
    return r->vt->skip ? r->vt->skip(r, d, ev, s) : ETW_OK;
}

etw_status etw_report_write(etw_report *r, etw_report_format fmt, etw_report_write_fn fn, void *ctx) {
    if (!r || !fn || (unsigned)fmt > ETW_REPORT_CSV) return ETW_E_INVALID_ARG;
    if (!r->finished) {
        r->finished = 1;
        r->finish_status = r->vt->finish ? r->vt->finish(r) : ETW_OK;
    }
    if (r->finish_status != ETW_OK) return r->finish_status;
    return rep_out_run(r, fmt, fn, ctx);
}

static etw_status file_write(void *ctx, const char *data, size_t len) {
    return fwrite(data, 1, len, (FILE *)ctx) == len ? ETW_OK : ETW_E_IO;
}

etw_status etw_report_write_file(etw_report *r, etw_report_format fmt, FILE *out) {
    if (!out) return ETW_E_INVALID_ARG;
    return etw_report_write(r, fmt, file_write, out);
}

void etw_report_stats_get(const etw_report *r, etw_report_stats *out) {
    if (!out) return;
    memset(out, 0, sizeof *out);
    if (!r) return;
    out->events = r->events;
    out->used = r->used;
    out->dropped = r->dropped;
    out->memory_bytes = sizeof *r + (r->vt->memory ? r->vt->memory(r) : 0);
}

uint32_t rep_max_rows(const etw_report *r) {
    return r->opt.max_rows ? r->opt.max_rows : ETW_REPORT_MAX_ROWS;
}

double rep_seconds(const etw_report *r, int64_t filetime) {
    return (double)(filetime - r->origin) / 1e7;
}

/* --- rep_map ------------------------------------------------------------- */

static uint32_t hash64(uint64_t k) {
    k ^= k >> 33;
    k *= 0xff51afd7ed558ccdull;
    k ^= k >> 33;
    k *= 0xc4ceb9fe1a85ec53ull;
    k ^= k >> 33;
    return (uint32_t)k;
}

uint32_t rep_map_get(const rep_map *m, uint64_t key) {
    if (!m->cap) return REP_NONE;
    uint32_t mask = m->cap - 1;
    for (uint32_t i = hash64(key) & mask;; i = (i + 1) & mask) {
        if (m->vals[i] == REP_NONE) return REP_NONE;
        if (m->keys[i] == key) return m->vals[i];
    }
}

static void map_insert(rep_map *m, uint64_t key, uint32_t val) {
    uint32_t mask = m->cap - 1;
    for (uint32_t i = hash64(key) & mask;; i = (i + 1) & mask) {
        if (m->vals[i] == REP_NONE) {
            m->keys[i] = key;
            m->vals[i] = val;
            m->count++;
            return;
        }
        if (m->keys[i] == key) {
            m->vals[i] = val;
            return;
        }
    }
}

etw_status rep_map_put(etw_report *r, rep_map *m, uint64_t key, uint32_t val) {
    if (m->cap && (uint64_t)(m->count + 1) * 2 <= m->cap) {
        map_insert(m, key, val);
        return ETW_OK;
    }
    if (m->cap >= (1u << 30)) return ETW_E_LIMIT;
    uint32_t ncap = m->cap ? m->cap * 2 : 64;
    rep_map n = {0};
    n.keys = rep_alloc(r, (size_t)ncap * sizeof *n.keys);
    n.vals = rep_alloc(r, (size_t)ncap * sizeof *n.vals);
    if (!n.keys || !n.vals) {
        rep_free(r, n.keys);
        rep_free(r, n.vals);
        return ETW_E_NOMEM;
    }
    n.cap = ncap;
    memset(n.vals, 0xFF, (size_t)ncap * sizeof *n.vals);
    for (uint32_t i = 0; i < m->cap; i++)
        if (m->vals[i] != REP_NONE) map_insert(&n, m->keys[i], m->vals[i]);
    rep_map_free(r, m);
    *m = n;
    map_insert(m, key, val);
    return ETW_OK;
}

void rep_map_free(etw_report *r, rep_map *m) {
    rep_free(r, m->keys);
    rep_free(r, m->vals);
    memset(m, 0, sizeof *m);
}

/* --- rep_vec ------------------------------------------------------------- */

void rep_vec_init(rep_vec *v, size_t elem) {
    memset(v, 0, sizeof *v);
    v->elem = (uint32_t)elem;
}

void *rep_vec_push(etw_report *r, rep_vec *v, uint32_t max, etw_status *st) {
    if (v->count >= max) {
        r->dropped++;
        return NULL;
    }
    if (v->count == v->cap) {
        uint32_t ncap = v->cap ? v->cap * 2 : 16;
        if (ncap > max) ncap = max;
        unsigned char *n = rep_alloc(r, (size_t)ncap * v->elem);
        if (!n) {
            *st = ETW_E_NOMEM;
            return NULL;
        }
        if (v->count) memcpy(n, v->data, (size_t)v->count * v->elem);
        rep_free(r, v->data);
        v->data = n;
        v->cap = ncap;
    }
    void *p = v->data + (size_t)v->count * v->elem;
    memset(p, 0, v->elem);
    v->count++;
    return p;
}

void rep_vec_free(etw_report *r, rep_vec *v) {
    rep_free(r, v->data);
    v->data = NULL;
    v->count = v->cap = 0;
}

/* --- rep_pool ------------------------------------------------------------ */

static uint64_t fnv1a(const char *s, size_t n) {
    uint64_t h = 0xcbf29ce484222325ull;
    for (size_t i = 0; i < n; i++) h = (h ^ (unsigned char)s[i]) * 0x100000001b3ull;
    return h;
}

etw_status rep_pool_add(etw_report *r, rep_pool *p, const char *s, size_t len, uint32_t *off) {
    *off = 0;
    if (!len) return ETW_OK;
    uint64_t h = fnv1a(s, len);
    uint32_t o = rep_map_get(&p->index, h);
    if (o != REP_NONE && strlen(p->data + o) == len && !memcmp(p->data + o, s, len)) {
        *off = o;
        return ETW_OK;
    }
    if (p->len + len + 1 > REP_POOL_MAX) {
        r->dropped++;
        return ETW_OK;
    }
    if (!p->data || p->len + len + 1 > p->cap) {
        size_t ncap = p->cap ? p->cap : 4096;
        while (ncap < p->len + len + 1 + (p->data ? 0 : 1)) ncap *= 2;
        char *n = rep_alloc(r, ncap);
        if (!n) return ETW_E_NOMEM;
        if (p->data) memcpy(n, p->data, p->len);
        else p->len = 1; /* offset 0 is "" */
        rep_free(r, p->data);
        p->data = n;
        p->cap = ncap;
    }
    o = (uint32_t)p->len;
    memcpy(p->data + o, s, len);
    p->data[o + len] = 0;
    p->len += len + 1;
    if (rep_map_get(&p->index, h) == REP_NONE) {
        etw_status st = rep_map_put(r, &p->index, h, o);
        if (st != ETW_OK) return st;
    }
    *off = o;
    return ETW_OK;
}

void rep_pool_free(etw_report *r, rep_pool *p) {
    rep_free(r, p->data);
    rep_map_free(r, &p->index);
    memset(p, 0, sizeof *p);
}

/* --- fields -------------------------------------------------------------- */

static rep_fieldmap *fieldmap(etw_report *r, const etw_schema *s, const char *const *names, size_t n) {
    uintptr_t k = (uintptr_t)s ^ ((uintptr_t)names >> 4);
    uint32_t slot = hash64((uint64_t)k) % REP_FIELD_CACHE;
    rep_fieldmap *f = &r->fields[slot];
    if (f->schema == s && f->schema_id == s->id && f->names == names) return f;
    /* a schema not seen (or another in this slot): look its fields up once */
    f->schema = s;
    f->schema_id = s->id;
    f->names = names;
    f->last = 0;
    for (size_t j = 0; j < n && j < REP_MAX_FIELDS; j++) {
        f->idx[j] = UINT16_MAX;
        for (uint16_t i = 0; i < s->top_count; i++)
            if (!strcmp(s->props[i].name, names[j])) {
                f->idx[j] = i;
                if (i + 1 > f->last) f->last = (uint16_t)(i + 1);
                break;
            }
    }
    return f;
}

uint32_t rep_fields(etw_report *r, etw_decoder *d, const etw_event *ev, const etw_schema *s,
                    const char *const *names, size_t n, etw_value *vals) {
    if (!s || !d || n > REP_MAX_FIELDS) return 0;
    const rep_fieldmap *f = fieldmap(r, s, names, n);
    if (!f->last) return 0;
    etw_decode_cursor c;
    if (etw_decoder_begin(d, ev, s, &c) != ETW_OK) return 0;
    uint32_t have = 0;
    etw_value v;
    while (etw_decode_next(&c, &v) == ETW_OK) {
        if (v.depth != 0 || !v.prop) continue;
        size_t pi = (size_t)(v.prop - s->props);
        if (pi >= f->last) break;
        if (v.kind != ETW_VALUE_SCALAR || v.in_array) continue;
        for (size_t j = 0; j < n; j++)
            if (f->idx[j] == pi) {
                vals[j] = v;
                have |= 1u << j;
            }
    }
    return have;
}

/* --- values -------------------------------------------------------------- */

uint64_t rep_value_u64(const etw_value *v) {
    return etw_value_is_integer(v) ? etw_value_u64(v) : 0;
}

const char *rep_value_map_name(const etw_value *v) {
    const etw_map *m = v->prop ? v->prop->map : NULL;
    if (!m || !(m->flags & ETW_MAP_VALUEMAP) || !etw_value_is_integer(v)) return NULL;
    uint64_t x = etw_value_u64(v);
    size_t lo = 0, hi = m->count;
    while (lo < hi) { /* value maps are sorted by value */
        size_t mid = lo + (hi - lo) / 2;
        if (m->entries[mid].value < x) lo = mid + 1;
        else hi = mid;
    }
    return lo < m->count && m->entries[lo].value == x ? m->entries[lo].name : NULL;
}

size_t rep_value_text(const etw_value *v, char *buf, size_t cap) {
    if (!cap) return 0;
    buf[0] = 0;
    if (v->kind != ETW_VALUE_SCALAR || !v->data) return 0;
    size_t n = 0;
    switch (v->in_type) {
    case ETW_INTYPE_UNICODESTRING:
    case ETW_INTYPE_MANIFEST_COUNTEDSTRING:
    case ETW_INTYPE_COUNTEDSTRING:
    case ETW_INTYPE_REVERSEDCOUNTEDSTRING:
    case ETW_INTYPE_NONNULLTERMINATEDSTRING: {
        /* each UTF-16 unit gives at most 3 UTF-8 bytes (a pair: 4 for 2) */
        size_t units = v->size / 2;
        if (units > (cap - 1) / 3) units = (cap - 1) / 3;
        n = etw_utf16_to_utf8(v->data, units, buf);
        break;
    }
    case ETW_INTYPE_ANSISTRING:
    case ETW_INTYPE_MANIFEST_COUNTEDANSISTRING:
    case ETW_INTYPE_COUNTEDANSISTRING:
    case ETW_INTYPE_REVERSEDCOUNTEDANSISTRING:
    case ETW_INTYPE_NONNULLTERMINATEDANSISTRING:
        /* 8-bit text: ASCII kept, other bytes as '?' (no code page known) */
        for (; n < v->size && n + 1 < cap && v->data[n]; n++) buf[n] = v->data[n] < 0x80 ? (char)v->data[n] : '?';
        break;
    default:
        if (etw_value_is_integer(v)) n = (size_t)snprintf(buf, cap, "%llu", (unsigned long long)etw_value_u64(v));
        if (n >= cap) n = cap - 1;
        break;
    }
    buf[n] = 0;
    return n;
}

const char *rep_basename(const char *s, size_t len, size_t *out_len) {
    size_t i = len;
    while (i > 0 && s[i - 1] != '\\' && s[i - 1] != '/') i--;
    *out_len = len - i;
    return s + i;
}
