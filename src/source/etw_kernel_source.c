/* etw_kernel_source.c - classic kernel (MOF) schemas from the class tables
 * (see etw_kernel_source.h). Facts: shared/docs/kernel/kernel-mof.md. */
#include "etw_kernel_source.h"

#include <stdio.h>
#include <string.h>

#include "../common/etw_alloc.h"
#include "../common/etw_bytes.h"
#include "../decode/etw_decode_walk.h"
#include "etwdecode/etw_decode.h"

/* The field a newer class version's trailing bytes are shown in. */
#define EXTRA_FIELD "ExtraData"
/* (class, version) pairs warned about; beyond that newer versions still
 * decode, without a warning. */
#define MAX_WARNED 64
/* Offsets and sizes that cannot be known without walking the payload. */
#define OFF_WALK 0xFFFFu

/* What the source keeps of each schema it built, by schema id. */
typedef struct kinfo {
    uint8_t valid;
    uint8_t flags;      /* ETW_KID_* */
    uint8_t newer;      /* decoded with an older layout (ExtraData last) */
    uint8_t no_layout;  /* the family lists the type but has no layout */
    uint16_t pid_prop;  /* top-level index of pid_field, or OFF_WALK when none */
    uint16_t tid_prop;
    uint16_t pid_off;   /* byte offset, or OFF_WALK when variable */
    uint16_t tid_off;
    uint8_t pid_size;   /* 4 or 8 (a pointer-sized ProcessId reads its low half) */
    uint8_t tid_size;
    uint32_t min_size;  /* bytes of the fixed part */
    const etw_kernel_layout *layout;
} kinfo;

typedef struct warned {
    etw_guid guid;
    uint8_t version;
} warned;

typedef struct thread_slot {
    uint32_t tid; /* ETW_NO_ID: empty */
    uint32_t pid;
} thread_slot;

/* Event types flagged ETW_KID_RECORDS_THREAD, at most (Thread/Start,
 * DCStart... a handful). */
#define MAX_RECORDING 64

struct etw_kernel_source {
    etw_allocator alloc;
    etw_diag_fn on_diag;
    void *diag_ctx;
    kinfo *info; /* indexed by schema id */
    uint32_t info_cap;
    warned warned[MAX_WARNED];
    uint32_t nwarned;
    thread_slot *threads;  /* SETS x WAYS, allocated on the first thread */
    uint8_t *victim;       /* per set: the way replaced next when the set is full */
    char problem[192];
    /* (class GUID, event type) of the events flagged ETW_KID_RECORDS_THREAD */
    etw_guid rec_guid[MAX_RECORDING];
    uint8_t rec_type[MAX_RECORDING];
    uint32_t nrec;
    uint8_t rec_types[32]; /* bit t: some of them has event type t (a quick no) */
};

etw_status etw_kernel_source_new(etw_kernel_source **out, const etw_allocator *alloc,
                                 etw_diag_fn on_diag, void *diag_ctx) {
    if (!out) return ETW_E_INVALID_ARG;
    etw_allocator a = etw_allocator_resolve(alloc);
    etw_kernel_source *k = etw_calloc(&a, 1, sizeof *k);
    if (!k) return ETW_E_NOMEM;
    k->alloc = a;
    k->on_diag = on_diag;
    k->diag_ctx = diag_ctx;
    for (uint32_t f = 0; f < etw_kernel_family_count; f++) {
        const etw_kernel_family *fam = etw_kernel_families[f];
        for (uint16_t e = 0; e < fam->event_count; e++)
            if ((fam->events[e].id_flags & ETW_KID_RECORDS_THREAD) && k->nrec < MAX_RECORDING) {
                k->rec_guid[k->nrec] = fam->guid;
                k->rec_types[fam->events[e].type >> 3] |= (uint8_t)(1u << (fam->events[e].type & 7u));
                k->rec_type[k->nrec++] = fam->events[e].type;
            }
    }
    *out = k;
    return ETW_OK;
}

int etw_kernel_records_thread(const etw_kernel_source *k, const etw_event *ev) {
    if (!(k->rec_types[ev->opcode >> 3] & (1u << (ev->opcode & 7u)))) return 0;
    for (uint32_t i = 0; i < k->nrec; i++)
        if (ev->opcode == k->rec_type[i] && ev->provider.data1 == k->rec_guid[i].data1 &&
            etw_guid_equal(&ev->provider, &k->rec_guid[i]))
            return 1;
    return 0;
}

void etw_kernel_source_free(etw_kernel_source *k) {
    if (!k) return;
    etw_allocator a = k->alloc;
    etw_free(&a, k->info);
    etw_free(&a, k->threads);
    etw_free(&a, k->victim);
    etw_free(&a, k);
}

size_t etw_kernel_state_bytes(const etw_kernel_source *k) {
    if (!k || !k->threads) return 0;
    return (size_t)ETW_KERNEL_THREAD_SETS * ETW_KERNEL_THREAD_WAYS * sizeof(thread_slot) +
           ETW_KERNEL_THREAD_SETS;
}

/* ---- tables -------------------------------------------------------------- */

const etw_kernel_family *etw_kernel_family_find(const etw_guid *g) {
    if (!g) return NULL;
    for (uint32_t i = 0; i < etw_kernel_family_count; i++)
        if (etw_guid_equal(&etw_kernel_families[i]->guid, g)) return etw_kernel_families[i];
    return NULL;
}

static const etw_kernel_event *find_event(const etw_kernel_family *f, uint8_t type) {
    for (uint16_t i = 0; i < f->event_count; i++)
        if (f->events[i].type == type) return &f->events[i];
    return NULL;
}

static int serves(const etw_kernel_layout *l, uint8_t type) {
    for (uint16_t i = 0; i < l->type_count; i++)
        if (l->types[i] == type) return 1;
    return 0;
}

/* The layout of (type, version): the exact version, else (newer = 1) the
 * newest known version below it; NULL when every known one is newer. */
static const etw_kernel_layout *find_layout(const etw_kernel_family *f, uint8_t type, uint8_t version,
                                            int *newer, int *any) {
    const etw_kernel_layout *below = NULL;
    *newer = 0;
    *any = 0;
    for (uint16_t i = 0; i < f->layout_count; i++) {
        const etw_kernel_layout *l = &f->layouts[i];
        if (!serves(l, type)) continue;
        *any = 1;
        if (l->version == version) return l;
        if (l->version < version && (!below || l->version > below->version)) below = l;
    }
    if (below) *newer = 1;
    return below;
}

static void put_name(char *buf, size_t n, const char *group, const char *name) {
    if (!name || !*name)
        snprintf(buf, n, "%s", group);
    else if (strchr(name, '/'))
        snprintf(buf, n, "%s", name);
    else
        snprintf(buf, n, "%s/%s", group, name);
}

const char *etw_kernel_event_name(const etw_kernel_family *fam, uint8_t type, char *buf, size_t n) {
    if (!buf || !n) return buf;
    buf[0] = 0;
    if (!fam) return buf;
    const etw_kernel_event *e = find_event(fam, type);
    if (e)
        put_name(buf, n, fam->group, e->name);
    else
        snprintf(buf, n, "%s/Opcode(%u)", fam->group, type);
    return buf;
}

/* ---- layout arithmetic --------------------------------------------------- */

/* Bytes a top-level property always takes at pointer width ptr, or 0 when
 * its size depends on the payload. */
static uint32_t fixed_size(const etw_property *p, uint8_t ptr) {
    if (p->flags & (ETW_PROP_STRUCT | ETW_PROP_COUNT_REF | ETW_PROP_COUNT_IN_DATA | ETW_PROP_LENGTH_REF |
                    ETW_PROP_CUSTOM_SIZED | ETW_PROP_LENGTH_TO_END))
        return 0;
    uint32_t n = (p->flags & ETW_PROP_COUNT_FIXED) ? p->count : 1;
    uint32_t one;
    switch (p->in_type) {
    case ETW_INTYPE_INT8: case ETW_INTYPE_UINT8: case ETW_INTYPE_ANSICHAR: one = 1; break;
    case ETW_INTYPE_INT16: case ETW_INTYPE_UINT16: case ETW_INTYPE_UNICODECHAR: one = 2; break;
    case ETW_INTYPE_INT32: case ETW_INTYPE_UINT32: case ETW_INTYPE_HEXINT32: case ETW_INTYPE_BOOLEAN:
    case ETW_INTYPE_FLOAT: one = 4; break;
    case ETW_INTYPE_INT64: case ETW_INTYPE_UINT64: case ETW_INTYPE_HEXINT64: case ETW_INTYPE_DOUBLE:
    case ETW_INTYPE_FILETIME: one = 8; break;
    case ETW_INTYPE_GUID: case ETW_INTYPE_SYSTEMTIME: one = 16; break;
    case ETW_INTYPE_POINTER: case ETW_INTYPE_SIZET: one = ptr; break;
    case ETW_INTYPE_UNICODESTRING:
        one = (p->flags & ETW_PROP_LENGTH_FIXED) ? 2u * p->length : 0;
        break;
    case ETW_INTYPE_ANSISTRING:
    case ETW_INTYPE_BINARY:
        one = (p->flags & ETW_PROP_LENGTH_FIXED) ? p->length : 0;
        break;
    default: one = 0; break;
    }
    return n * one;
}

static int int_size_ok(const etw_property *p, uint8_t ptr, uint8_t *size) {
    uint32_t s = fixed_size(p, ptr);
    if (p->flags & ETW_PROP_ARRAY_MASK) return 0;
    switch (p->in_type) {
    case ETW_INTYPE_INT32: case ETW_INTYPE_UINT32: case ETW_INTYPE_HEXINT32:
    case ETW_INTYPE_INT64: case ETW_INTYPE_UINT64: case ETW_INTYPE_HEXINT64:
    case ETW_INTYPE_POINTER: case ETW_INTYPE_SIZET: break;
    default: return 0;
    }
    if (s != 4 && s != 8) return 0;
    *size = (uint8_t)s;
    return 1;
}

/* Where top-level property `name` is: its index, offset (OFF_WALK when a
 * variable-size property precedes it) and size. 0 when absent or not a
 * 4/8-byte integer. */
static int locate(const etw_property *props, uint16_t top, uint8_t ptr, const char *name, uint16_t *index,
                  uint16_t *off, uint8_t *size) {
    if (!name) return 0;
    uint32_t o = 0;
    int fixed = 1;
    for (uint16_t i = 0; i < top; i++) {
        const etw_property *p = &props[i];
        if (p->flags & ETW_PROP_BITS) continue; /* no payload byte, not an id */
        if (!strcmp(p->name, name)) {
            if (!int_size_ok(p, ptr, size)) return 0;
            *index = i;
            *off = fixed && o < OFF_WALK ? (uint16_t)o : OFF_WALK;
            return 1;
        }
        uint32_t s = fixed_size(p, ptr);
        if (!s) fixed = 0;
        o += s;
    }
    return 0;
}

/* The fixed part: bytes before the first variable-size or optional
 * property (a SID takes at least its 4-byte "no user" form). */
static uint32_t fixed_part(const etw_property *props, uint16_t top, uint8_t ptr) {
    uint32_t o = 0;
    for (uint16_t i = 0; i < top; i++) {
        const etw_property *p = &props[i];
        if (p->flags & ETW_PROP_OPTIONAL) break;
        if (p->flags & ETW_PROP_BITS) continue; /* no payload byte */
        uint32_t s = fixed_size(p, ptr);
        if (!s) {
            if (p->in_type == ETW_INTYPE_WBEMSID) o += 4;
            break;
        }
        o += s;
    }
    return o;
}

/* ---- resolve ------------------------------------------------------------- */

static etw_status info_reserve(etw_kernel_source *k, uint32_t id) {
    if (id < k->info_cap) return ETW_OK;
    uint32_t nc = k->info_cap ? k->info_cap : 64;
    while (nc <= id) {
        if (nc > UINT32_MAX / 2) return ETW_E_LIMIT;
        nc *= 2;
    }
    kinfo *n = etw_calloc(&k->alloc, nc, sizeof *n);
    if (!n) return ETW_E_NOMEM;
    if (k->info_cap) memcpy(n, k->info, k->info_cap * sizeof *n);
    etw_free(&k->alloc, k->info);
    k->info = n;
    k->info_cap = nc;
    return ETW_OK;
}

static void warn_newer(etw_kernel_source *k, const etw_event *ev, const etw_kernel_family *f,
                       const etw_kernel_layout *l) {
    for (uint32_t i = 0; i < k->nwarned; i++)
        if (k->warned[i].version == ev->version && etw_guid_equal(&k->warned[i].guid, &ev->provider)) return;
    if (k->nwarned == MAX_WARNED) return;
    k->warned[k->nwarned].guid = ev->provider;
    k->warned[k->nwarned].version = ev->version;
    k->nwarned++;
    if (!k->on_diag) return;
    char msg[192];
    snprintf(msg, sizeof msg,
             "kernel class %s version %u is newer than the known ones: decoded as %s v%u, "
             "the bytes after it shown as " EXTRA_FIELD,
             f->group, ev->version, l->mof_class ? l->mof_class : f->group, l->version);
    etw_diag d;
    d.status = ETW_OK; /* a warning: the known fields and the rest (ExtraData) are all shown */
    d.file_offset = ev->buffer_file_offset + ev->record_offset;
    d.message = msg;
    k->on_diag(k->diag_ctx, &d);
}

static etw_status k_resolve(void *ctx, etw_cache *cache, const etw_event *ev, const uint8_t *key,
                            size_t key_len, uint64_t hash, const etw_schema **out, const char **why) {
    etw_kernel_source *k = ctx;
    const etw_kernel_family *f = etw_kernel_family_find(&ev->provider);
    if (!f) return ETW_E_NOT_FOUND;
    const etw_kernel_event *e = find_event(f, ev->opcode);
    if (!e) return ETW_E_NOT_FOUND;
    int newer = 0, any = 0;
    const etw_kernel_layout *l = find_layout(f, ev->opcode, ev->version, &newer, &any);
    if (any && !l) return ETW_E_NOT_FOUND; /* older than every known version */
    uint8_t ptr = ev->pointer_size == 4 ? 4 : 8;

    char name[128];
    put_name(name, sizeof name, f->group, e->name);
    etw_schema draft;
    memset(&draft, 0, sizeof draft);
    draft.provider = ev->provider;
    draft.provider_name = f->provider;
    draft.event_name = name;
    draft.task_name = f->group;
    draft.opcode_name = e->name && *e->name ? e->name : NULL;
    draft.version = ev->version;
    draft.opcode = ev->opcode;

    etw_property *copy = NULL;
    uint16_t top = l ? l->top_count : 0;
    if (l) {
        draft.props = l->props;
        draft.prop_count = l->prop_count;
        draft.top_count = l->top_count;
    }
    if (newer) {
        /* the layout with ExtraData appended to the top level; members and
         * references past the top level move up by one */
        uint32_t n = (uint32_t)l->prop_count + 1;
        if (n > UINT16_MAX) return ETW_E_LIMIT;
        copy = etw_calloc(&k->alloc, n, sizeof *copy);
        if (!copy) return ETW_E_NOMEM;
        for (uint32_t i = 0, j = 0; i < l->prop_count; i++, j++) {
            if (i == l->top_count) j++;
            etw_property p = l->props[i];
            if ((p.flags & ETW_PROP_STRUCT) && p.struct_first >= l->top_count) p.struct_first++;
            if ((p.flags & ETW_PROP_COUNT_REF) && p.count >= l->top_count) p.count++;
            if ((p.flags & ETW_PROP_LENGTH_REF) && p.length >= l->top_count) p.length++;
            if ((p.flags & ETW_PROP_BITS) && p.count >= l->top_count) p.count++;
            copy[j] = p;
        }
        etw_property *x = &copy[l->top_count];
        memset(x, 0, sizeof *x);
        x->name = EXTRA_FIELD;
        x->in_type = ETW_INTYPE_BINARY;
        x->out_type = ETW_OUTTYPE_HEXBINARY;
        x->flags = ETW_PROP_OPTIONAL | ETW_PROP_LENGTH_TO_END;
        draft.props = copy;
        draft.prop_count = (uint16_t)n;
        draft.top_count = (uint16_t)(l->top_count + 1);
    }
    const etw_schema *s = NULL;
    etw_status st = etw_cache_insert(cache, ETW_SOURCE_MOF, ptr, key, key_len, hash, &draft, &s, why);
    etw_free(&k->alloc, copy);
    if (st != ETW_OK) return st;
    st = info_reserve(k, s->id);
    if (st != ETW_OK) return st;
    kinfo *in = &k->info[s->id];
    memset(in, 0, sizeof *in);
    in->valid = 1;
    in->flags = e->id_flags;
    in->newer = (uint8_t)newer;
    in->no_layout = l == NULL;
    in->layout = l;
    in->pid_prop = in->tid_prop = OFF_WALK;
    if (l) {
        if (!locate(l->props, top, ptr, e->pid_field, &in->pid_prop, &in->pid_off, &in->pid_size))
            in->pid_prop = OFF_WALK;
        if (!locate(l->props, top, ptr, e->tid_field, &in->tid_prop, &in->tid_off, &in->tid_size))
            in->tid_prop = OFF_WALK;
        in->min_size = fixed_part(l->props, top, ptr);
    }
    if (newer) warn_newer(k, ev, f, l);
    *out = s;
    return ETW_OK;
}

etw_source etw_kernel_as_source(etw_kernel_source *k) {
    etw_source s;
    memset(&s, 0, sizeof s);
    s.kind = ETW_SOURCE_MOF;
    s.key = ETW_SOURCE_KEY_CLASSIC;
    s.resolve = k_resolve;
    s.ctx = k;
    return s;
}

/* ---- per event ----------------------------------------------------------- */

static const kinfo *info_of(const etw_kernel_source *k, const etw_schema *s) {
    if (!k || !s || s->source != ETW_SOURCE_MOF || s->id >= k->info_cap) return NULL;
    const kinfo *in = &k->info[s->id];
    return in->valid ? in : NULL;
}

/* The value of top-level integer property `index` (at `off` when fixed):
 * 1 and *v, or 0 when the payload does not reach it. */
static int read_id(const etw_event *ev, const etw_schema *s, uint16_t index, uint16_t off, uint8_t size,
                   uint32_t *v) {
    if (index == OFF_WALK) return 0;
    if (off != OFF_WALK) {
        if (!ev->user_data || ev->user_data_len < (uint32_t)off + size) return 0;
        *v = etw_le32(ev->user_data + off); /* a pointer-sized id: its low half */
        return 1;
    }
    return etw_decode_walk_u32(s, ev, index, 0, v); /* a variable-size property precedes it */
}

/* ---- thread -> process ----------------------------------------------------- */

static uint32_t set_of(uint32_t tid) {
    /* thread ids are multiples of 4 on Windows */
    return (uint32_t)(((uint64_t)(tid >> 2) * 0x9E3779B1u) & 0xFFFFFFFFu) >> (32 - 12);
}

static int thread_process(const etw_kernel_source *k, uint32_t tid, uint32_t *pid) {
    if (!k->threads || tid == ETW_NO_ID) return 0;
    const thread_slot *set = &k->threads[set_of(tid) * ETW_KERNEL_THREAD_WAYS];
    for (uint32_t w = 0; w < ETW_KERNEL_THREAD_WAYS; w++)
        if (set[w].tid == tid) {
            *pid = set[w].pid;
            return 1;
        }
    return 0;
}

static void thread_record(etw_kernel_source *k, uint32_t tid, uint32_t pid) {
    if (tid == ETW_NO_ID || pid == ETW_NO_ID) return;
    if (!k->threads) {
        size_t n = (size_t)ETW_KERNEL_THREAD_SETS * ETW_KERNEL_THREAD_WAYS;
        k->threads = etw_alloc(&k->alloc, n * sizeof *k->threads);
        k->victim = etw_calloc(&k->alloc, ETW_KERNEL_THREAD_SETS, 1);
        if (!k->threads || !k->victim) {
            etw_free(&k->alloc, k->threads);
            etw_free(&k->alloc, k->victim);
            k->threads = NULL;
            k->victim = NULL;
            return; /* no memory: pids stay the headers' */
        }
        for (size_t i = 0; i < n; i++) k->threads[i].tid = ETW_NO_ID;
    }
    uint32_t si = set_of(tid);
    thread_slot *set = &k->threads[si * ETW_KERNEL_THREAD_WAYS];
    for (uint32_t w = 0; w < ETW_KERNEL_THREAD_WAYS; w++)
        if (set[w].tid == tid || set[w].tid == ETW_NO_ID) {
            set[w].tid = tid;
            set[w].pid = pid;
            return;
        }
    /* the set is full: replace its ways in turn (the oldest entry) */
    uint32_t w = k->victim[si];
    k->victim[si] = (uint8_t)((w + 1) % ETW_KERNEL_THREAD_WAYS);
    set[w].tid = tid;
    set[w].pid = pid;
}

void etw_kernel_observe(etw_kernel_source *k, const etw_event *ev, const etw_schema *s) {
    const kinfo *in = info_of(k, s);
    if (!in || !(in->flags & ETW_KID_RECORDS_THREAD)) return;
    uint32_t pid, tid;
    if (read_id(ev, s, in->pid_prop, in->pid_off, in->pid_size, &pid) &&
        read_id(ev, s, in->tid_prop, in->tid_off, in->tid_size, &tid))
        thread_record(k, tid, pid);
}

int etw_kernel_records_state(const etw_kernel_source *k, const etw_schema *s) {
    const kinfo *in = info_of(k, s);
    return in && (in->flags & ETW_KID_RECORDS_THREAD) != 0;
}

void etw_kernel_ids(const etw_kernel_source *k, const etw_event *ev, const etw_schema *s, uint32_t *pid,
                    uint32_t *tid) {
    *pid = ev->pid;
    *tid = ev->tid;
    const kinfo *in = info_of(k, s);
    if (!in) return;
    uint32_t v;
    if (in->flags & ETW_KID_TID_NONE)
        *tid = ETW_NO_ID;
    else if (read_id(ev, s, in->tid_prop, in->tid_off, in->tid_size, &v))
        *tid = v;
    if (in->flags & ETW_KID_PID_NONE)
        *pid = ETW_NO_ID;
    else if (read_id(ev, s, in->pid_prop, in->pid_off, in->pid_size, &v))
        *pid = v;
    if (*pid == ETW_NO_ID && (in->flags & ETW_KID_PID_FROM_THREAD) && thread_process(k, *tid, &v)) *pid = v;
}

const char *etw_kernel_payload_problem(etw_kernel_source *k, const etw_event *ev, const etw_schema *s,
                                       uint32_t trailing) {
    const kinfo *in = info_of(k, s);
    if (!in) return NULL;
    if (in->no_layout) {
        if (!ev->user_data_len) return NULL;
        snprintf(k->problem, sizeof k->problem, "no layout for %s version %u: %u payload bytes not decoded",
                 s->event_name, ev->version, ev->user_data_len);
        return k->problem;
    }
    if (ev->user_data_len < in->min_size) {
        snprintf(k->problem, sizeof k->problem,
                 "payload of %u bytes is shorter than the %u-byte fixed part of %s v%u",
                 ev->user_data_len, in->min_size, in->layout->mof_class ? in->layout->mof_class : s->event_name,
                 in->layout->version);
        return k->problem;
    }
    if (trailing && trailing <= ev->user_data_len) {
        snprintf(k->problem, sizeof k->problem, "%u payload bytes after the last field of %s v%u", trailing,
                 in->layout->mof_class ? in->layout->mof_class : s->event_name, in->layout->version);
        return k->problem;
    }
    return NULL;
}
