/* etw_wevt.c - a WEVT_TEMPLATE blob (CRIM) read into the manifest source's
 * parse records, then compiled as an XML manifest is (see etw_wevt.h for
 * the layout).
 *
 * Each provider's elements are read into p_* records whose attributes are
 * text, as the XML walk records them: names are the element names, values
 * are numbers written in decimal, template item references (maps, count
 * and length properties) become the names they point to, and texts come
 * resolved from the message table (the loader's literal_text mode). The
 * event descriptor of the blob is kept as it is (p_event.has_desc): mc.exe
 * adds the channel's keyword bit to it, as tdh.dll then reports.
 */
#include "etw_wevt.h"

#include <stdio.h>
#include <string.h>

#include "../common/etw_bytes.h"
#include "../common/etw_utf16.h"
#include "../source/etw_manifest_internal.h"
#include "etw_pe.h"

/* Element magics (event-trace-kit CrimsonTags; libfwevt). */
#define MAGIC(a, b, c, d) ((uint32_t)(a) | (uint32_t)(b) << 8 | (uint32_t)(c) << 16 | (uint32_t)(d) << 24)
#define M_CRIM MAGIC('C', 'R', 'I', 'M')
#define M_WEVT MAGIC('W', 'E', 'V', 'T')
#define M_CHAN MAGIC('C', 'H', 'A', 'N')
#define M_LEVL MAGIC('L', 'E', 'V', 'L')
#define M_TASK MAGIC('T', 'A', 'S', 'K')
#define M_OPCO MAGIC('O', 'P', 'C', 'O')
#define M_KEYW MAGIC('K', 'E', 'Y', 'W')
#define M_EVNT MAGIC('E', 'V', 'N', 'T')
#define M_MAPS MAGIC('M', 'A', 'P', 'S')
#define M_VMAP MAGIC('V', 'M', 'A', 'P')
#define M_BMAP MAGIC('B', 'M', 'A', 'P')
#define M_TTBL MAGIC('T', 'T', 'B', 'L')
#define M_TEMP MAGIC('T', 'E', 'M', 'P')
#define M_PRVA MAGIC('P', 'R', 'V', 'A')
#define M_EVTA MAGIC('E', 'V', 'T', 'A')

/* Entry sizes (event-trace-kit BlockTypes.cs). */
#define CRIM_HEADER 16u   /* magic, size, u16 major, u16 minor, providers */
#define CRIM_PROVIDER 20u /* GUID, u32 offset */
#define WEVT_HEADER 16u   /* magic, size, message id, element count */
#define LIST_HEADER 12u   /* magic, size, count */
#define CHAN_ENTRY 16u    /* flags, name offset, value, message id */
#define LEVL_ENTRY 12u    /* value, message id, name offset */
#define TASK_ENTRY 28u    /* value, message id, event GUID, name offset */
#define OPCO_ENTRY 12u    /* u16 task, u16 value, message id, name offset */
#define KEYW_ENTRY 16u    /* u64 mask, message id, name offset */
#define EVNT_HEADER 16u   /* magic, size, count, unknown */
#define EVNT_ENTRY 48u    /* descriptor (16), message id, 7 offsets/counts */
#define MAP_HEADER 20u    /* magic, size, name offset, flags, count */
#define MAP_ITEM 8u       /* value, message id */
#define TEMP_HEADER 40u   /* magic, size, params, properties, property offset, flags, GUID */
#define PROP_ENTRY 20u    /* flags, types or struct range, map offset, count, length, name */
#define PRVA_ENTRY 8u     /* flags, value offset */
#define EVTA_ENTRY 8u     /* u8 flags, u8 version, u16 id, string offset */
#define NO_MESSAGE 0xFFFFFFFFu

/* Property flags (PropertyFlags, BlockTypes.cs; tdh.h PROPERTY_FLAGS). */
#define WP_STRUCT 0x1u
#define WP_FIXED_LENGTH 0x2u
#define WP_VAR_LENGTH 0x4u
#define WP_FIXED_COUNT 0x8u
#define WP_VAR_COUNT 0x10u

/* PRVA and EVTA entry kinds. */
#define PRVA_NAME 0x10000001u
#define EVTA_NAME 0x11u

/* The most text one string may take (UTF-8 bytes): longer ones are cut. */
#define MAX_TEXT 65536u

/* An element's offset and its index, sorted by offset for lookups. */
typedef struct off_index {
    uint32_t off, index;
} off_index;

typedef struct wevt {
    loader *L;
    const uint8_t *b;
    size_t len;
    const etw_msgtable *msgs;
    char *text; /* MAX_TEXT scratch for message texts */
    p_provider *pp;
    const char *pname; /* for messages */
    /* offsets of the provider's entries, by kind, for references */
    uint32_t tasks_at, ntasks, opco_at, nopco, levl_at, nlevl, chan_at, nchan;
    uint32_t *tmpl_off; /* TEMP offsets, in TTBL order (p_tmpl index) */
    uint32_t ntmpl;
    uint32_t *map_off; /* VMAP/BMAP offsets, in MAPS order */
    uint32_t nmaps;
    off_index *maps_by_off; /* the same, sorted by offset, for lookups */
    const char **task_names, **opco_names; /* by entry index: the name given to the compiler */
} wevt;

static uint32_t rd32(const wevt *w, uint64_t off) { return off + 4 <= w->len ? etw_le32(w->b + off) : 0; }
static uint16_t rd16(const wevt *w, uint64_t off) { return off + 2 <= w->len ? etw_le16(w->b + off) : 0; }

/* 1 when [off, off+n) lies inside the blob. */
static int fits(const wevt *w, uint64_t off, uint64_t n) { return off <= w->len && n <= w->len - off; }

/* UTF-16LE units [p, p+units) as UTF-8 into the arena; stops at a NUL. */
static char *utf16_dup(wevt *w, const uint8_t *p, size_t units) {
    size_t n = 0;
    while (n < units && (p[2 * n] | p[2 * n + 1])) n++;
    if (n > MAX_TEXT / 3) n = MAX_TEXT / 3;
    char *o = etw_mf_ar_alloc(&w->L->doc->ar, n * 3 + 1);
    if (o) etw_utf16_to_utf8(p, n, o);
    return o;
}

/* A counted name {u32 size of the whole, UTF-16 chars} at off; "" when off
 * is 0 or the string does not fit (reported by the caller's check), NULL
 * on NOMEM. */
static const char *counted_name(wevt *w, uint32_t off, int *bad) {
    if (off == 0) return "";
    uint32_t size = rd32(w, off);
    if (!fits(w, off, 4) || size < 4 || !fits(w, off, size)) {
        *bad = 1;
        return "";
    }
    return utf16_dup(w, w->b + off + 4, (size - 4) / 2);
}

/* A NUL-terminated UTF-16 string at off (PRVA, EVTA), bounded by the blob. */
static const char *zstring(wevt *w, uint32_t off, int *bad) {
    if (off == 0 || !fits(w, off, 2)) {
        *bad = 1;
        return "";
    }
    return utf16_dup(w, w->b + off, (w->len - off) / 2);
}

/* The message table text of id, in the arena; NULL when there is none. */
static const char *message(wevt *w, uint32_t id, int *nomem) {
    if (id == NO_MESSAGE || !w->msgs) return NULL;
    size_t n = 0;
    etw_status st = etw_msgtable_get(w->msgs, id, w->text, MAX_TEXT, &n);
    if (st != ETW_OK && st != ETW_E_LIMIT) return NULL;
    char *s = etw_mf_ar_strndup(&w->L->doc->ar, w->text, n);
    if (!s) *nomem = 1;
    return s;
}

static char *num_text(wevt *w, uint64_t v) {
    char buf[24];
    snprintf(buf, sizeof buf, "%llu", (unsigned long long)v);
    return etw_mf_ar_strdup(&w->L->doc->ar, buf);
}

#define BAD(w, off, ...) WARN((w)->L, ETW_E_CORRUPT, (uint32_t)(off), __VA_ARGS__)

/* The list element at off with the expected magic: its entry count, the
 * offset of its first entry (after `header` bytes) and room for `entry`
 * bytes each, bounded by the element's size and the blob. 0 when it does
 * not fit (reported). */
static int list_at(wevt *w, uint32_t off, uint32_t magic, uint32_t header, uint32_t entry, uint32_t *first,
                   uint32_t *count, const char *what) {
    if (!fits(w, off, header) || rd32(w, off) != magic) {
        BAD(w, off, "provider %s: %s element does not fit or has a wrong signature; skipped", w->pname, what);
        return 0;
    }
    uint32_t size = rd32(w, off + 4), n = rd32(w, off + 8);
    uint64_t room = fits(w, off, size) && size >= header ? size - header : w->len - off - header;
    if ((uint64_t)n * entry > room) {
        BAD(w, off, "provider %s: %s element claims %u entries; %llu fit", w->pname, what, (unsigned)n,
            (unsigned long long)(room / entry));
        n = (uint32_t)(room / entry);
    }
    *first = off + header;
    *count = n;
    return 1;
}

/* Index of the entry an offset refers to in a fixed-stride list, or -1. */
static int32_t entry_index(uint32_t off, uint32_t first, uint32_t n, uint32_t stride) {
    if (off < first || (off - first) % stride) return -1;
    uint32_t i = (off - first) / stride;
    return i < n ? (int32_t)i : -1;
}

/* By offset, then by index: equal offsets keep their order. */
static int off_index_cmp(const void *a, const void *b) {
    const off_index *x = a, *y = b;
    if (x->off != y->off) return (x->off > y->off) - (x->off < y->off);
    return (x->index > y->index) - (x->index < y->index);
}

/* The index of the first entry at off in v[0..n) (sorted by
 * off_index_cmp), or -1. */
static int32_t find_sorted(const off_index *v, uint32_t n, uint32_t off) {
    uint32_t lo = 0, hi = n;
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        if (v[mid].off < off) lo = mid + 1;
        else hi = mid;
    }
    return lo < n && v[lo].off == off ? (int32_t)v[lo].index : -1;
}

/* The index of off in the ascending offs[0..n) (templates, laid end to
 * end), or -1. */
static int32_t find_ascending(const uint32_t *offs, uint32_t n, uint32_t off) {
    uint32_t lo = 0, hi = n;
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        if (offs[mid] == off) return (int32_t)mid;
        if (offs[mid] < off) lo = mid + 1;
        else hi = mid;
    }
    return -1;
}

static int is_std_name(const char *name) { return strncmp(name, "win:", 4) == 0; }

/* A named item (task, opcode, level, keyword, channel) into v. */
static p_named *push_named(wevt *w, vec *v, const char *name, uint64_t value, uint32_t msgid, uint32_t off,
                           int *nomem) {
    p_named *x = etw_mf_vec_push(w->L, v, sizeof *x);
    if (!x) {
        *nomem = 1;
        return NULL;
    }
    x->name = name;
    x->value = num_text(w, value);
    x->message = message(w, msgid, nomem);
    x->task = -1;
    x->line = off;
    if (!x->value) *nomem = 1;
    return x;
}

/* ---- the elements --------------------------------------------------------- */

static int read_levels(wevt *w, uint32_t off) {
    uint32_t first, n;
    if (!list_at(w, off, M_LEVL, LIST_HEADER, LEVL_ENTRY, &first, &n, "LEVL")) return 1;
    w->levl_at = first;
    w->nlevl = n;
    int nomem = 0;
    for (uint32_t i = 0; i < n && !nomem; i++) {
        uint32_t e = first + i * LEVL_ENTRY;
        int bad = 0;
        const char *name = counted_name(w, rd32(w, e + 8), &bad);
        if (!name) return 0;
        uint32_t msg = rd32(w, e + 4);
        /* a predefined level without its text keeps winmeta's meaning */
        if (is_std_name(name) && (msg == NO_MESSAGE || !w->msgs)) continue;
        push_named(w, &w->pp->levels, name, rd32(w, e), msg, e, &nomem);
    }
    return !nomem;
}

static int read_tasks(wevt *w, uint32_t off) {
    uint32_t first, n;
    if (!list_at(w, off, M_TASK, LIST_HEADER, TASK_ENTRY, &first, &n, "TASK")) return 1;
    w->tasks_at = first;
    w->ntasks = n;
    w->task_names = etw_mf_ar_alloc(&w->L->doc->ar, (size_t)(n ? n : 1) * sizeof *w->task_names);
    if (!w->task_names) return 0;
    int nomem = 0;
    for (uint32_t i = 0; i < n && !nomem; i++) {
        uint32_t e = first + i * TASK_ENTRY;
        int bad = 0;
        const char *name = counted_name(w, rd32(w, e + 24), &bad);
        if (!name) return 0;
        if (bad) BAD(w, e, "provider %s: task %u: its name does not fit", w->pname, (unsigned)rd32(w, e));
        push_named(w, &w->pp->tasks, name, rd32(w, e), rd32(w, e + 4), e, &nomem);
        w->task_names[i] = name;
    }
    return !nomem;
}

/* Opcodes after tasks: a task-scoped opcode names its task by value. */
static int read_opcodes(wevt *w, uint32_t off) {
    uint32_t first, n;
    if (!list_at(w, off, M_OPCO, LIST_HEADER, OPCO_ENTRY, &first, &n, "OPCO")) return 1;
    w->opco_at = first;
    w->nopco = n;
    w->opco_names = etw_mf_ar_alloc(&w->L->doc->ar, (size_t)(n ? n : 1) * sizeof *w->opco_names);
    if (!w->opco_names) return 0;
    /* tasks by value, for the task-scoped opcodes */
    uint32_t nt = w->pp->tasks.n;
    off_index *tv = etw_calloc(&w->L->m->al, nt ? nt : 1, sizeof *tv);
    if (!tv) return 0;
    for (uint32_t t = 0; t < nt; t++) {
        uint64_t v = 0;
        etw_mf_parse_u64(VAT(p_named, &w->pp->tasks, t).value, &v);
        tv[t].off = (uint32_t)v;
        tv[t].index = t;
    }
    qsort(tv, nt, sizeof *tv, off_index_cmp);
    int nomem = 0;
    for (uint32_t i = 0; i < n && !nomem; i++) {
        uint32_t e = first + i * OPCO_ENTRY;
        int bad = 0;
        const char *name = counted_name(w, rd32(w, e + 8), &bad);
        if (!name) {
            nomem = 1;
            break;
        }
        w->opco_names[i] = name;
        uint16_t task = rd16(w, e);
        uint32_t msg = rd32(w, e + 4);
        /* a predefined opcode without its text: the compiler's winmeta names */
        if (task == 0 && is_std_name(name) && (msg == NO_MESSAGE || !w->msgs)) continue;
        p_named *x = push_named(w, &w->pp->opcodes, name, rd16(w, e + 2), msg, e, &nomem);
        if (!x || !task) continue;
        x->task = find_sorted(tv, nt, task); /* the first task of that value */
    }
    etw_free(&w->L->m->al, tv);
    return !nomem;
}

static int read_keywords(wevt *w, uint32_t off) {
    uint32_t first, n;
    if (!list_at(w, off, M_KEYW, LIST_HEADER, KEYW_ENTRY, &first, &n, "KEYW")) return 1;
    int nomem = 0;
    for (uint32_t i = 0; i < n && !nomem; i++) {
        uint32_t e = first + i * KEYW_ENTRY;
        int bad = 0;
        const char *name = counted_name(w, rd32(w, e + 12), &bad);
        if (!name) return 0;
        push_named(w, &w->pp->keywords, name, etw_le64(w->b + e), rd32(w, e + 8), e, &nomem);
    }
    return !nomem;
}

static int read_channels(wevt *w, uint32_t off) {
    uint32_t first, n;
    if (!list_at(w, off, M_CHAN, LIST_HEADER, CHAN_ENTRY, &first, &n, "CHAN")) return 1;
    w->chan_at = first;
    w->nchan = n;
    int nomem = 0;
    for (uint32_t i = 0; i < n && !nomem; i++) {
        uint32_t e = first + i * CHAN_ENTRY;
        int bad = 0;
        const char *name = counted_name(w, rd32(w, e + 4), &bad);
        if (!name) return 0;
        p_named *x = push_named(w, &w->pp->channels, name, rd32(w, e + 8) & 0xFF, rd32(w, e + 12), e, &nomem);
        if (x) x->import = (rd32(w, e) & 1) != 0;
    }
    return !nomem;
}

static int read_maps(wevt *w, uint32_t off) {
    uint32_t first, n;
    if (!list_at(w, off, M_MAPS, LIST_HEADER, 4, &first, &n, "MAPS")) return 1;
    w->map_off = etw_mf_ar_alloc(&w->L->doc->ar, (size_t)(n ? n : 1) * sizeof *w->map_off);
    if (!w->map_off) return 0;
    int nomem = 0;
    for (uint32_t i = 0; i < n && !nomem; i++) {
        uint32_t mo = rd32(w, first + 4 * i);
        uint32_t magic = rd32(w, mo);
        if (!fits(w, mo, MAP_HEADER) || (magic != M_VMAP && magic != M_BMAP)) {
            BAD(w, mo, "provider %s: map %u does not fit or has a wrong signature; skipped", w->pname, i);
            continue;
        }
        uint32_t items = rd32(w, mo + 16);
        uint64_t room = w->len - mo - MAP_HEADER;
        uint32_t size = rd32(w, mo + 4);
        if (size >= MAP_HEADER && fits(w, mo, size)) room = size - MAP_HEADER;
        if ((uint64_t)items * MAP_ITEM > room) {
            BAD(w, mo, "provider %s: map %u claims %u entries; %llu fit", w->pname, i, (unsigned)items,
                (unsigned long long)(room / MAP_ITEM));
            items = (uint32_t)(room / MAP_ITEM);
        }
        int bad = 0;
        const char *name = counted_name(w, rd32(w, mo + 8), &bad);
        if (!name) return 0;
        p_map *pm = etw_mf_vec_push(w->L, &w->pp->maps, sizeof *pm);
        if (!pm) return 0;
        pm->name = name;
        pm->line = mo;
        pm->first = w->pp->mapents.n;
        pm->bitmap = magic == M_BMAP;
        for (uint32_t j = 0; j < items && !nomem; j++) {
            uint32_t e = mo + MAP_HEADER + j * MAP_ITEM;
            p_mapent *pe = etw_mf_vec_push(w->L, &w->pp->mapents, sizeof *pe);
            if (!pe) return 0;
            pe->value = num_text(w, rd32(w, e));
            pe->message = message(w, rd32(w, e + 4), &nomem);
            pe->line = e;
            if (!pe->value) return 0;
            pm->n++;
        }
        w->map_off[w->nmaps++] = mo;
    }
    if (nomem) return 0;
    w->maps_by_off = etw_mf_ar_alloc(&w->L->doc->ar, (size_t)(w->nmaps ? w->nmaps : 1) * sizeof *w->maps_by_off);
    if (!w->maps_by_off) return 0;
    for (uint32_t i = 0; i < w->nmaps; i++) {
        w->maps_by_off[i].off = w->map_off[i];
        w->maps_by_off[i].index = i;
    }
    qsort(w->maps_by_off, w->nmaps, sizeof *w->maps_by_off, off_index_cmp);
    return 1;
}

/* The name of the property at index r of a template's flat array. */
static const char *prop_name(wevt *w, uint32_t props, uint32_t r, int *bad) {
    return counted_name(w, rd32(w, props + r * PROP_ENTRY + 16), bad);
}

/* One TEMP: its properties (the TDH flat array: top-level first, struct
 * members at [start, start + count)) become items with their parents. */
static int read_template(wevt *w, uint32_t to, uint32_t index) {
    p_tmpl *t = etw_mf_vec_push(w->L, &w->pp->tmpls, sizeof *t);
    if (!t) return 0;
    char tid[32];
    snprintf(tid, sizeof tid, "template@0x%x", (unsigned)to);
    t->tid = etw_mf_ar_strdup(&w->L->doc->ar, tid);
    if (!t->tid) return 0;
    t->line = to;
    t->first = w->pp->items.n;
    (void)index;
    uint32_t top = rd32(w, to + 8), total = rd32(w, to + 12), props = rd32(w, to + 16);
    if (total == 0) return 1;
    if (total > MAX_TEMPLATE_ITEMS || top > total) {
        BAD(w, to, "provider %s: template at 0x%x claims %u properties (%u at the top); skipped", w->pname,
            (unsigned)to, (unsigned)total, (unsigned)top);
        t->too_big = 1;
        return 1;
    }
    if (!fits(w, props, (uint64_t)total * PROP_ENTRY)) {
        BAD(w, to, "provider %s: template at 0x%x: its %u properties do not fit; skipped", w->pname, (unsigned)to,
            (unsigned)total);
        t->too_big = 1;
        return 1;
    }
    /* parents: each member belongs to one struct placed before it */
    int32_t *parent = etw_calloc(&w->L->m->al, total, sizeof *parent);
    if (!parent) return 0;
    for (uint32_t i = 0; i < total; i++) parent[i] = i < top ? -1 : -2;
    int ok = 1;
    for (uint32_t i = 0; i < total && ok; i++) {
        uint32_t e = props + i * PROP_ENTRY;
        if (!(rd32(w, e) & WP_STRUCT) || parent[i] == -2) continue;
        uint32_t start = rd16(w, e + 4), cnt = rd16(w, e + 6);
        if (start <= i || start + cnt > total) {
            ok = 0;
            break;
        }
        for (uint32_t j = start; j < start + cnt; j++) {
            if (parent[j] != -2) {
                ok = 0;
                break;
            }
            parent[j] = (int32_t)i;
        }
    }
    for (uint32_t i = 0; i < total && ok; i++)
        if (parent[i] == -2) ok = 0;
    /* depth: a member's parent comes before it, so one pass suffices */
    uint8_t depth_ok = 1;
    if (ok) {
        uint8_t *depth = etw_calloc(&w->L->m->al, total, 1);
        if (!depth) {
            etw_free(&w->L->m->al, parent);
            return 0;
        }
        for (uint32_t i = 0; i < total; i++) {
            depth[i] = parent[i] < 0 ? 0 : (uint8_t)(depth[parent[i]] + 1 > 250 ? 250 : depth[parent[i]] + 1);
            if ((rd32(w, props + i * PROP_ENTRY) & WP_STRUCT) && depth[i] + 1 > MAX_STRUCT_DEPTH) depth_ok = 0;
        }
        etw_free(&w->L->m->al, depth);
    }
    if (!ok) {
        BAD(w, to,
            "provider %s: template at 0x%x: a struct's member range overlaps, runs past the end or "
            "points back; skipped",
            w->pname, (unsigned)to);
        t->too_big = 1;
        etw_free(&w->L->m->al, parent);
        return 1;
    }
    if (!depth_ok) t->too_deep = 1;
    int nomem = 0;
    for (uint32_t i = 0; i < total && !nomem; i++) {
        uint32_t e = props + i * PROP_ENTRY, flags = rd32(w, e);
        p_item *it = etw_mf_vec_push(w->L, &w->pp->items, sizeof *it);
        if (!it) {
            nomem = 1;
            break;
        }
        int bad = 0;
        it->name = prop_name(w, props, i, &bad);
        it->parent = parent[i];
        it->line = e;
        it->is_struct = (flags & WP_STRUCT) != 0;
        if (!it->name) {
            nomem = 1;
            break;
        }
        if (!it->is_struct) {
            it->in = num_text(w, w->b[e + 4]);
            it->out = w->b[e + 5] ? num_text(w, w->b[e + 5]) : NULL;
            if (!it->in || (w->b[e + 5] && !it->out)) nomem = 1;
            uint32_t mo = rd32(w, e + 8);
            if (mo) {
                int32_t mi = find_sorted(w->maps_by_off, w->nmaps, mo);
                if (mi >= 0) it->map = VAT(p_map, &w->pp->maps, mi).name;
                else
                    BAD(w, e, "provider %s: template at 0x%x: property %s names a map at 0x%x that is not in MAPS",
                        w->pname, (unsigned)to, it->name, (unsigned)mo);
            }
        }
        uint16_t count = rd16(w, e + 12), length = rd16(w, e + 14);
        if (flags & WP_FIXED_COUNT) it->count = num_text(w, count);
        else if (flags & WP_VAR_COUNT) {
            if (count < total && count != i) it->count = prop_name(w, props, count, &bad);
            else BAD(w, e, "provider %s: template at 0x%x: the count of %s names property %u", w->pname,
                     (unsigned)to, it->name, (unsigned)count);
        }
        if (flags & WP_FIXED_LENGTH) it->length = num_text(w, length);
        else if (flags & WP_VAR_LENGTH) {
            if (length < total && length != i) it->length = prop_name(w, props, length, &bad);
            else BAD(w, e, "provider %s: template at 0x%x: the length of %s names property %u", w->pname,
                     (unsigned)to, it->name, (unsigned)length);
        }
        if (((flags & (WP_FIXED_COUNT | WP_VAR_COUNT)) && !it->count && count < total && count != i) ||
            ((flags & (WP_FIXED_LENGTH | WP_VAR_LENGTH)) && !it->length && length < total && length != i))
            nomem = 1;
        t->n++;
    }
    etw_free(&w->L->m->al, parent);
    return !nomem;
}

static int read_templates(wevt *w, uint32_t off) {
    uint32_t first, n;
    if (!list_at(w, off, M_TTBL, LIST_HEADER, TEMP_HEADER, &first, &n, "TTBL")) return 1;
    uint32_t size = rd32(w, off + 4);
    uint64_t end = fits(w, off, size) ? (uint64_t)off + size : w->len;
    w->tmpl_off = etw_mf_ar_alloc(&w->L->doc->ar, (size_t)(n ? n : 1) * sizeof *w->tmpl_off);
    if (!w->tmpl_off) return 0;
    uint64_t to = first;
    for (uint32_t i = 0; i < n; i++) {
        if (to + TEMP_HEADER > end || rd32(w, to) != M_TEMP) {
            BAD(w, to, "provider %s: template %u does not fit or has a wrong signature; the rest are skipped",
                w->pname, (unsigned)i);
            break;
        }
        uint32_t tsize = rd32(w, to + 4);
        w->tmpl_off[w->ntmpl++] = (uint32_t)to;
        if (!read_template(w, (uint32_t)to, i)) return 0;
        if (tsize < TEMP_HEADER) {
            BAD(w, to, "provider %s: template %u has size %u; the rest are skipped", w->pname, (unsigned)i,
                (unsigned)tsize);
            break;
        }
        to += tsize;
    }
    return 1;
}

/* EVTA: event names by (id, version). */
typedef struct ev_name {
    uint32_t key; /* id | version << 16 */
    const char *name;
} ev_name;

static int ev_name_cmp(const void *a, const void *b) {
    const ev_name *x = a, *y = b;
    return (x->key > y->key) - (x->key < y->key);
}

static int read_event_names(wevt *w, uint32_t off, ev_name **out, uint32_t *nout) {
    uint32_t first, n;
    *out = NULL;
    *nout = 0;
    if (!list_at(w, off, M_EVTA, LIST_HEADER, EVTA_ENTRY, &first, &n, "EVTA")) return 1;
    ev_name *v = etw_mf_ar_alloc(&w->L->doc->ar, (size_t)(n ? n : 1) * sizeof *v);
    if (!v) return 0;
    uint32_t k = 0;
    for (uint32_t i = 0; i < n; i++) {
        uint32_t e = first + i * EVTA_ENTRY;
        if (w->b[e] != EVTA_NAME) continue;
        int bad = 0;
        const char *s = zstring(w, rd32(w, e + 4), &bad);
        if (!s) return 0;
        if (bad) continue;
        v[k].key = (uint32_t)rd16(w, e + 2) | (uint32_t)w->b[e + 1] << 16;
        v[k].name = s;
        k++;
    }
    /* by key (stable for equal keys is not needed: the first found wins) */
    qsort(v, k, sizeof *v, ev_name_cmp);
    *out = v;
    *nout = k;
    return 1;
}

/* The name of the task or opcode entry at ref (an offset into its list),
 * or NULL when ref is none of its entries. */
static const char *named_at(const char *const *names, uint32_t ref, uint32_t first, uint32_t n, uint32_t stride) {
    int32_t i = names ? entry_index(ref, first, n, stride) : -1;
    return i < 0 ? NULL : names[i];
}

static int read_events(wevt *w, uint32_t off, const ev_name *names, uint32_t nnames) {
    uint32_t first, n;
    if (!list_at(w, off, M_EVNT, EVNT_HEADER, EVNT_ENTRY, &first, &n, "EVNT")) return 1;
    int nomem = 0;
    for (uint32_t i = 0; i < n && !nomem; i++) {
        uint32_t e = first + i * EVNT_ENTRY;
        p_event *pe = etw_mf_vec_push(w->L, &w->pp->events, sizeof *pe);
        if (!pe) return 0;
        uint16_t id = rd16(w, e);
        uint8_t version = w->b[e + 2];
        pe->line = e;
        pe->value = num_text(w, id);
        pe->version = num_text(w, version);
        if (!pe->value || !pe->version) return 0;
        pe->has_desc = 1;
        pe->d_channel = w->b[e + 3];
        pe->d_level = w->b[e + 4];
        pe->d_opcode = w->b[e + 5];
        pe->d_task = rd16(w, e + 6);
        pe->d_keywords = etw_le64(w->b + e + 8);
        pe->message = message(w, rd32(w, e + 16), &nomem);
        uint32_t to = rd32(w, e + 20);
        if (to) {
            int32_t ti = find_ascending(w->tmpl_off, w->ntmpl, to);
            if (ti >= 0) pe->tmpl = VAT(p_tmpl, &w->pp->tmpls, ti).tid;
            else
                BAD(w, e, "provider %s: event %u version %u names a template at 0x%x that is not in TTBL; no fields",
                    w->pname, id, version, (unsigned)to);
        }
        /* names (a predefined opcode left out of the list keeps its winmeta
         * name, which the compiler knows) */
        pe->opcode = named_at(w->opco_names, rd32(w, e + 24), w->opco_at, w->nopco, OPCO_ENTRY);
        pe->task = named_at(w->task_names, rd32(w, e + 32), w->tasks_at, w->ntasks, TASK_ENTRY);
        ev_name key = {(uint32_t)id | (uint32_t)version << 16, NULL};
        const ev_name *nm = nnames ? bsearch(&key, names, nnames, sizeof *names, ev_name_cmp) : NULL;
        if (nm) pe->name = nm->name;
    }
    return !nomem;
}

/* One provider's WEVT at off. 0 on NOMEM. */
static int read_provider(wevt *w, const etw_guid *guid, uint32_t off) {
    char g[ETW_GUID_STRING_SIZE + 2];
    g[0] = '{';
    etw_guid_format(guid, g + 1);
    strcat(g, "}");
    if (!fits(w, off, WEVT_HEADER) || rd32(w, off) != M_WEVT) {
        BAD(w, off, "provider %s: its WEVT element does not fit or has a wrong signature; skipped", g);
        return 1;
    }
    p_provider *pp = etw_mf_vec_push(w->L, &w->L->provs, sizeof *pp);
    if (!pp) return 0;
    pp->guid = etw_mf_ar_strdup(&w->L->doc->ar, g);
    pp->line = off;
    if (!pp->guid) return 0;
    w->pp = pp;
    w->pname = pp->guid;
    w->tasks_at = w->ntasks = w->opco_at = w->nopco = w->levl_at = w->nlevl = w->chan_at = w->nchan = 0;
    w->tmpl_off = w->map_off = NULL;
    w->ntmpl = w->nmaps = 0;
    w->maps_by_off = NULL;
    w->task_names = w->opco_names = NULL;
    int nomem = 0;
    const char *pmsg = message(w, rd32(w, off + 8), &nomem);
    if (nomem) return 0;
    uint32_t n = rd32(w, off + 12);
    uint32_t size = rd32(w, off + 4);
    uint64_t room = (fits(w, off, size) && size >= WEVT_HEADER ? size : w->len - off) - WEVT_HEADER;
    if ((uint64_t)n * 8 > room) {
        BAD(w, off, "provider %s: WEVT claims %u elements; %llu fit", g, (unsigned)n, (unsigned long long)(room / 8));
        n = (uint32_t)(room / 8);
    }
    /* by kind, in the order references need: names first, then maps,
     * templates, events */
    static const uint32_t order[] = {M_PRVA, M_CHAN, M_LEVL, M_TASK, M_OPCO, M_KEYW, M_MAPS, M_TTBL, M_EVTA, M_EVNT};
    ev_name *names = NULL;
    uint32_t nnames = 0;
    for (size_t k = 0; k < sizeof order / sizeof order[0]; k++) {
        for (uint32_t i = 0; i < n; i++) {
            uint32_t eo = rd32(w, off + WEVT_HEADER + 8 * i + 4);
            if (!fits(w, eo, 4) || rd32(w, eo) != order[k]) continue; /* unknown kinds: skipped */
            int ok = 1;
            switch (order[k]) {
            case M_PRVA: {
                uint32_t first, cnt;
                if (!list_at(w, eo, M_PRVA, LIST_HEADER, PRVA_ENTRY, &first, &cnt, "PRVA")) break;
                for (uint32_t j = 0; j < cnt; j++) {
                    if (rd32(w, first + 8 * j) != PRVA_NAME) continue;
                    int bad = 0;
                    const char *s = zstring(w, rd32(w, first + 8 * j + 4), &bad);
                    if (!s) return 0;
                    if (!bad && *s) pp->name = s;
                }
                break;
            }
            case M_CHAN: ok = read_channels(w, eo); break;
            case M_LEVL: ok = read_levels(w, eo); break;
            case M_TASK: ok = read_tasks(w, eo); break;
            case M_OPCO: ok = read_opcodes(w, eo); break;
            case M_KEYW: ok = read_keywords(w, eo); break;
            case M_MAPS: ok = read_maps(w, eo); break;
            case M_TTBL: ok = read_templates(w, eo); break;
            case M_EVTA: ok = read_event_names(w, eo, &names, &nnames); break;
            case M_EVNT: ok = read_events(w, eo, names, nnames); break;
            }
            if (!ok) return 0;
            break; /* one element of each kind */
        }
        if (order[k] == M_PRVA && pp->name) w->pname = pp->name;
    }
    /* no PRVA (v3 blobs): the provider's message, which Windows
     * manifests set to the provider's name (the name the registry's
     * Publishers key holds); else none (the GUID is shown) */
    if (!pp->name) pp->name = pmsg;
    return 1;
}

/* ---- entry points -------------------------------------------------------- */

int etw_wevt_is_blob(const uint8_t *data, size_t len) {
    return data && len >= 4 && etw_le32(data) == M_CRIM;
}

int etw_wevt_is_pe(const uint8_t *data, size_t len) { return data && len >= 2 && data[0] == 'M' && data[1] == 'Z'; }

/* The header: the number of providers whose entries fit. */
static etw_status crim_header(const uint8_t *blob, size_t len, uint32_t *nprov, const char **why) {
    if (!etw_wevt_is_blob(blob, len) || len < CRIM_HEADER) {
        *why = "not a WEVT_TEMPLATE blob (no CRIM signature)";
        return ETW_E_CORRUPT;
    }
    uint32_t n = etw_le32(blob + 12);
    if ((uint64_t)n * CRIM_PROVIDER > len - CRIM_HEADER) {
        *why = "its provider table runs past the end";
        return ETW_E_CORRUPT;
    }
    *nprov = n;
    return ETW_OK;
}

etw_status etw_wevt_blob_providers(const uint8_t *blob, size_t len, etw_wevt_guid_fn fn, void *ctx) {
    uint32_t n;
    const char *why;
    etw_status st = crim_header(blob, len, &n, &why);
    if (st != ETW_OK) return st;
    for (uint32_t i = 0; i < n; i++) {
        etw_guid g = etw_guid_at(blob + CRIM_HEADER + i * CRIM_PROVIDER);
        if (fn) fn(ctx, &g);
    }
    return ETW_OK;
}

etw_status etw_wevt_load_blob(etw_manifest_set *m, const uint8_t *blob, size_t len, const etw_msgtable *msgs,
                              const char *origin, uint32_t *providers) {
    if (providers) *providers = 0;
    if (!m || (!blob && len)) return ETW_E_INVALID_ARG;
    if (!origin) origin = "<memory>";
    uint32_t n;
    const char *why;
    etw_status st = crim_header(blob, len, &n, &why);
    if (st != ETW_OK) {
        etw_mf_diag(m, st, origin, 0, "%s; nothing of it is loaded", why);
        return st;
    }
    loader L;
    st = etw_mf_loader_init(&L, m, origin);
    if (st != ETW_OK) return st;
    L.literal_text = 1;
    wevt w;
    memset(&w, 0, sizeof w);
    w.L = &L;
    w.b = blob;
    w.len = len;
    w.msgs = msgs;
    w.text = etw_alloc(&m->al, MAX_TEXT);
    if (!w.text) st = ETW_E_NOMEM;
    for (uint32_t i = 0; i < n && st == ETW_OK; i++) {
        const uint8_t *e = blob + CRIM_HEADER + i * CRIM_PROVIDER;
        etw_guid g = etw_guid_at(e);
        if (!read_provider(&w, &g, etw_le32(e + 16))) st = L.st != ETW_OK ? L.st : ETW_E_NOMEM;
    }
    const char *org = L.doc->origin;
    if (st == ETW_OK) st = etw_mf_commit(&L, providers);
    /* ETW_E_LIMIT: the load's memory bound (L.reason) */
    if (st != ETW_OK)
        etw_mf_diag(m, st, org, 0, "%s; nothing of it is loaded",
                    L.st != ETW_OK && L.reason ? L.reason : etw_strerror(st));
    etw_free(&m->al, w.text);
    etw_mf_loader_free(&L);
    return st;
}

/* ---- PE images ------------------------------------------------------------- */

/* Read a whole (small) file: the .mui beside a PE. NULL when absent. */
static uint8_t *read_small_file(const etw_allocator *al, const char *path, size_t max, size_t *len) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    uint8_t *buf = NULL;
    size_t n = 0, cap = 0;
    for (;;) {
        if (n == cap) {
            size_t ncap = cap ? cap * 2 : 64 * 1024;
            if (ncap > max) ncap = max;
            if (ncap <= cap) break; /* at the limit: what was read */
            uint8_t *nb = etw_alloc(al, ncap);
            if (!nb) break;
            if (n) memcpy(nb, buf, n);
            etw_free(al, buf);
            buf = nb;
            cap = ncap;
        }
        size_t r = fread(buf + n, 1, cap - n, f);
        n += r;
        if (r == 0) break;
    }
    fclose(f);
    *len = n;
    return buf;
}

/* The most a .mui file may take (docs/limits.md). */
#define MAX_MUI_BYTES ((size_t)64 << 20)

etw_status etw_wevt_load_pe(etw_manifest_set *m, const uint8_t *data, size_t len, const char *path,
                            const char *lang, uint32_t *providers) {
    if (providers) *providers = 0;
    if (!m || (!data && len)) return ETW_E_INVALID_ARG;
    if (!path) path = "<memory>";
    if (!lang || !*lang) lang = "en-US";
    const etw_allocator *al = &m->al;
    etw_pe pe;
    const char *why = NULL;
    etw_status st = etw_pe_open(&pe, data, len, &why);
    if (st != ETW_OK) {
        etw_mf_diag(m, st, path, 0, "not a PE image: %s", why ? why : etw_strerror(st));
        return st;
    }
    uint16_t langid = etw_pe_langid(lang);
    etw_pe_resource tmpl;
    st = etw_pe_find_resource(&pe, "WEVT_TEMPLATE", 0, langid, &tmpl, &why);
    if (st != ETW_OK) {
        if (st == ETW_E_NOT_FOUND && etw_pe_has_resource_type(&pe, "MUI", 0))
            etw_mf_diag(m, st, path, 0,
                        "no WEVT_TEMPLATE resource: a language-neutral file (it has a MUI resource); its "
                        "strings are in %s/<file>.mui beside it and its manifest, if any, in the file it "
                        "belongs to",
                        lang);
        else if (st == ETW_E_NOT_FOUND)
            etw_mf_diag(m, st, path, 0, "no WEVT_TEMPLATE resource: no instrumentation manifest in this file");
        else
            etw_mf_diag(m, st, path, 0, "its resources are damaged: %s", why ? why : etw_strerror(st));
        return st;
    }
    /* the message table: the file's own, else <dir>/<lang>/<file>.mui */
    etw_msgtable mt, *mtp = NULL;
    uint8_t *mui = NULL;
    size_t mui_len = 0;
    etw_pe_resource res;
    if (etw_pe_find_resource(&pe, NULL, ETW_RT_MESSAGETABLE, langid, &res, &why) == ETW_OK &&
        etw_msgtable_open(&mt, res.data, res.len, &why) == ETW_OK) {
        mtp = &mt;
    } else {
        const char *slash = strrchr(path, '/');
        size_t dl = slash ? (size_t)(slash - path) : 0;
        const char *base = slash ? slash + 1 : path;
        size_t need = dl + 1 + strlen(lang) + 1 + strlen(base) + 5;
        char *mp = etw_alloc(al, need);
        if (mp) {
            snprintf(mp, need, "%.*s%s%s/%s.mui", (int)dl, path, slash ? "/" : "", lang, base);
            mui = read_small_file(al, mp, MAX_MUI_BYTES, &mui_len);
            etw_pe mpe;
            if (mui && etw_pe_open(&mpe, mui, mui_len, &why) == ETW_OK &&
                etw_pe_find_resource(&mpe, NULL, ETW_RT_MESSAGETABLE, langid, &res, &why) == ETW_OK &&
                etw_msgtable_open(&mt, res.data, res.len, &why) == ETW_OK)
                mtp = &mt;
            else
                etw_mf_diag(m, ETW_OK, path, 0,
                            "no message table in the file nor in %s: names fall back to the manifest's symbols "
                            "and events have no message",
                            mp);
            etw_free(al, mp);
        }
    }
    st = etw_wevt_load_blob(m, tmpl.data, tmpl.len, mtp, path, providers);
    etw_free(al, mui);
    return st;
}
