/* etw_stats.c - the summary of a trace (see etw_stats.h). */
#include "etwdecode/etw_stats.h"

#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "../common/etw_alloc.h"
#include "../decode/etw_decode_walk.h"
#include "../schema/etw_source.h"
#include "etwdecode/etw_decode.h"
#include "etw_jscan.h"
#include "etw_label_internal.h"
#include "etw_strmap.h"
#include "etw_text.h"

typedef struct agg {
    uint64_t count, bytes;
    int64_t first, last;
} agg;

typedef struct proc_rec {
    agg a;
    uint32_t pid;
} proc_rec;

typedef struct image_rec {
    char *json; /* the image name as a JSON string (quotes included), or NULL */
    size_t len;
} image_rec;

typedef struct error_rec {
    uint64_t count;
    char *example;
} error_rec;

/* The records an event kind was counted in last, so that the next event
 * of the kind finds them without hashing its names again: a slot per
 * (provider, event) name, checked byte for byte. */
#define MEMO_SLOTS 256
#define MEMO_KEY 112
typedef struct memo_slot {
    agg *prov, *evt;
    uint32_t prov_len, event_len;
    char key[MEMO_KEY]; /* provider, then event */
} memo_slot;

/* The records an event kind was counted in last, found by its schema
 * (pointer and id: a TraceLogging schema may be dropped, and its memory
 * reused, but ids are never reused) and the header fields the names are
 * made of besides (etw_event_names_get): a few compares instead of hashing
 * the names. Events without a schema go by their names (memo_slot). */
#define KIND_SLOTS 512
typedef struct kind_memo {
    const etw_schema *schema;
    uint32_t sid;
    uint16_t id, message;
    uint8_t opcode, group, form, classic;
    uint8_t lost;   /* a lost-event record (etw_stats_count) */
    uint8_t naming; /* an event that names a process (etw_stats_observe) */
    agg *prov, *evt, *guid;
} kind_memo;

typedef struct guid_memo {
    agg *a;
    uint8_t key[17];
} guid_memo;

typedef struct pid_memo {
    proc_rec *p;
    uint32_t pid;
} pid_memo;

struct etw_stats {
    etw_allocator alloc;
    memo_slot memo[MEMO_SLOTS];
    kind_memo kinds[KIND_SLOTS];
    guid_memo gmemo[16];
    pid_memo pmemo[256];
    etw_strmap providers; /* agg */
    etw_strmap events;    /* agg, key provider NUL event */
    etw_strmap procs;     /* proc_rec, key pid (4 bytes) */
    etw_strmap images;    /* image_rec, key pid */
    etw_strmap errors;    /* error_rec, key kind */
    etw_strmap guids;     /* agg, key GUID (16 bytes) + kernel flag: the header's provider */
    agg all;
    uint64_t lost_records;
    etw_text text, scratch;
};

etw_status etw_stats_new(etw_stats **out, const etw_allocator *alloc) {
    if (!out) return ETW_E_INVALID_ARG;
    etw_allocator a = etw_allocator_resolve(alloc);
    etw_stats *st = etw_calloc(&a, 1, sizeof *st);
    if (!st) return ETW_E_NOMEM;
    st->alloc = a;
    etw_strmap_init(&st->providers, &a, sizeof(agg), ETW_STATS_MAX_KEYS);
    etw_strmap_init(&st->events, &a, sizeof(agg), ETW_STATS_MAX_KEYS);
    etw_strmap_init(&st->procs, &a, sizeof(proc_rec), ETW_STATS_MAX_KEYS);
    etw_strmap_init(&st->images, &a, sizeof(image_rec), ETW_STATS_MAX_KEYS);
    etw_strmap_init(&st->errors, &a, sizeof(error_rec), ETW_STATS_MAX_KEYS);
    etw_strmap_init(&st->guids, &a, sizeof(agg), ETW_STATS_MAX_KEYS);
    etw_text_init(&st->text, &a);
    etw_text_init(&st->scratch, &a);
    *out = st;
    return ETW_OK;
}

static void free_recs(etw_stats *st, etw_strmap *m, int images) {
    size_t n;
    etw_strmap_entry **v = etw_strmap_list(m, &n);
    for (size_t i = 0; i < n; i++) {
        if (images) etw_free(&st->alloc, ((image_rec *)v[i]->rec)->json);
        else etw_free(&st->alloc, ((error_rec *)v[i]->rec)->example);
    }
    etw_free(&st->alloc, v);
}

void etw_stats_free(etw_stats *st) {
    if (!st) return;
    etw_allocator a = st->alloc;
    free_recs(st, &st->images, 1);
    free_recs(st, &st->errors, 0);
    etw_strmap_free(&st->providers);
    etw_strmap_free(&st->events);
    etw_strmap_free(&st->procs);
    etw_strmap_free(&st->images);
    etw_strmap_free(&st->errors);
    etw_strmap_free(&st->guids);
    etw_text_free(&st->text);
    etw_text_free(&st->scratch);
    etw_free(&a, st);
}

static void agg_add(agg *a, const etw_event *ev) {
    if (!a->count || ev->timestamp < a->first) a->first = ev->timestamp;
    if (!a->count || ev->timestamp > a->last) a->last = ev->timestamp;
    a->count++;
    a->bytes += ev->user_data_len;
}

static const char other[] = "(other)"; /* past ETW_STATS_MAX_KEYS */

static agg *agg_get(etw_strmap *m, const char *k, size_t n) {
    agg *a = etw_strmap_get(m, k, n, NULL);
    if (!a && m->count >= m->max_count) {
        m->max_count++; /* one more slot, for "(other)" itself */
        a = etw_strmap_get(m, other, sizeof other - 1, NULL);
        m->max_count--;
    }
    return a;
}

static int name_is(const etw_label *l, const char *s) {
    size_t n = strlen(s);
    return l->event_len == n && !memcmp(l->event, s, n);
}

/* Microsoft-Windows-Kernel-Process {22fb2cd6-0e7b-422b-a0c7-2fad1fd0e716}:
 * ProcessStart (event 1) and ProcessRundown (event 15) name a process by
 * its ProcessID and ImageName (a full path) - the manifest counterparts of
 * the kernel's Process/Start and Process/DCStart. */
static int names_process(const etw_event *ev, const etw_label *l);
static kind_memo *kind_of(etw_stats *st, const etw_event *ev, const etw_schema *sc);
static int kind_is(const kind_memo *k, const etw_event *ev, const etw_schema *s);
static void count_kind(etw_stats *st, const kind_memo *k, const etw_event *ev, uint32_t pid);

static int is_kernel_process_naming(const etw_event *ev) {
    static const uint8_t d4[8] = {0xa0, 0xc7, 0x2f, 0xad, 0x1f, 0xd0, 0xe7, 0x16};
    return ev->form == ETW_FORM_EVENT_HEADER && !(ev->flags & ETW_EVENT_FLAG_CLASSIC_HEADER) &&
           ev->provider.data1 == 0x22fb2cd6u && ev->provider.data2 == 0x0e7b && ev->provider.data3 == 0x422b &&
           !memcmp(ev->provider.data4, d4, 8) && (ev->id == 1 || ev->id == 15);
}

/* Index of the top-level property called name, -1 when none, -2 when
 * several (the walk then sees which the payload reaches). */
static int top_prop(const etw_schema *s, const char *name) {
    uint32_t n = s->top_count < s->prop_count ? s->top_count : s->prop_count;
    int at = -1;
    for (uint32_t i = 0; i < n; i++)
        if (!strcmp(s->props[i].name, name)) at = at == -1 ? (int)i : -2;
    return at;
}

typedef struct name_field {
    const uint8_t *data;
    uint32_t size;
    uint16_t in_type;
    int found;
} name_field;

/* The two fields by walking the payload (a schema whose properties before
 * them are not all flat scalars). */
static void walk_fields(etw_decoder *d, const etw_event *ev, const etw_schema *s, const char *pid_name,
                        const char *img_name, name_field *pid, name_field *img) {
    etw_decode_cursor c;
    if (etw_decoder_begin(d, ev, s, &c) != ETW_OK) return;
    etw_value v;
    while (etw_decode_next(&c, &v) == ETW_OK) {
        if (v.kind != ETW_VALUE_SCALAR || v.depth != 0) continue;
        if (!strcmp(v.name, pid_name) && etw_value_is_integer(&v)) {
            pid->data = v.data; /* the last one counts, as in the payload */
            pid->size = v.size;
            pid->found = 1;
        } else if (!strcmp(v.name, img_name)) {
            img->data = v.data;
            img->size = v.size;
            img->in_type = v.in_type;
            img->found = 1;
        }
    }
}

/* One field read directly from the payload: 1 when it could be (*f set
 * when the payload holds it), 0 when only the walk can tell. */
static int direct_field(etw_decoder *d, const etw_event *ev, const etw_schema *s, int idx, name_field *f) {
    if (idx == -1) return 1; /* no such property */
    if (idx < 0) return 0;
    uint64_t *refs;
    size_t refs_len;
    etw_decoder_scratch(d, &refs, &refs_len);
    int r = etw_decode_walk_field(s, ev, refs_len, (uint16_t)idx, &f->data, &f->size);
    if (r < 0) return 0;
    f->found = r;
    f->in_type = s->props[idx].in_type;
    return 1;
}

etw_status etw_stats_process_name(etw_stats *st, etw_decoder *d, const etw_event *ev, const etw_label *l,
                                  uint32_t *pid_out, const char **json, size_t *len) {
    if (!st || !ev || !l || !pid_out || !json || !len) return ETW_E_INVALID_ARG;
    *json = NULL;
    *len = 0;
    if (!d || !l->schema) return ETW_OK;
    int kp = is_kernel_process_naming(ev);
    if (!kp && !names_process(ev, l)) return ETW_OK;
    const etw_schema *s = l->schema;
    const char *pid_name = kp ? "ProcessID" : "ProcessId", *img_name = kp ? "ImageName" : "ImageFileName";
    name_field pid = {0}, img = {0};
    /* the two fields straight from the payload (the properties before them
     * are fixed-size integers and a SID), else the walk */
    int pi = top_prop(s, pid_name), ii = top_prop(s, img_name);
    if (!direct_field(d, ev, s, pi, &pid) || !direct_field(d, ev, s, ii, &img)) {
        memset(&pid, 0, sizeof pid);
        memset(&img, 0, sizeof img);
        walk_fields(d, ev, s, pid_name, img_name, &pid, &img);
    }
    if (pid.found && pid.size != 1 && pid.size != 2 && pid.size != 4 && pid.size != 8) pid.found = 0;
    if (!img.found || !img.data) return ETW_OK;
    uint32_t id = l->pid;
    if (pid.found)
        id = pid.size == 1   ? pid.data[0]
             : pid.size == 2 ? (uint32_t)(pid.data[0] | pid.data[1] << 8)
                             : (uint32_t)pid.data[0] | (uint32_t)pid.data[1] << 8 |
                                   (uint32_t)pid.data[2] << 16 | (uint32_t)pid.data[3] << 24;
    const uint8_t *img_data = img.data;
    uint32_t img_len = img.size;
    uint16_t img_type = img.in_type;
    int utf16 = img_type == ETW_INTYPE_UNICODESTRING || img_type == ETW_INTYPE_MANIFEST_COUNTEDSTRING ||
                img_type == ETW_INTYPE_COUNTEDSTRING || img_type == ETW_INTYPE_NONNULLTERMINATEDSTRING;
    if (kp) { /* a full path: the process is named by its file name, as the kernel's ImageFileName */
        unsigned unit = utf16 ? 2 : 1;
        uint32_t from = 0;
        for (uint32_t i = 0; i + unit <= img_len; i += unit)
            if (img_data[i] == '\\' && (unit == 1 || img_data[i + 1] == 0)) from = i + unit;
        img_data += from;
        img_len -= from;
    }
    etw_text_clear(&st->scratch);
    if (utf16) etw_text_json_utf16le(&st->scratch, img_data, img_len);
    else etw_text_json_ansi(&st->scratch, img_data, img_len);
    if (etw_text_status(&st->scratch) != ETW_OK) return ETW_E_NOMEM;
    *pid_out = id;
    *json = st->scratch.data;
    *len = st->scratch.len;
    return ETW_OK;
}

etw_status etw_stats_name_process(etw_stats *st, uint32_t pid, const char *json, size_t len) {
    if (!st || (!json && len)) return ETW_E_INVALID_ARG;
    uint8_t key[4] = {(uint8_t)pid, (uint8_t)(pid >> 8), (uint8_t)(pid >> 16), (uint8_t)(pid >> 24)};
    image_rec *r = etw_strmap_get(&st->images, key, 4, NULL);
    if (!r) return ETW_OK; /* bounded: names past the bound are not kept */
    if (r->json && r->len == len && !memcmp(r->json, json, len)) return ETW_OK;
    char *copy = etw_alloc(&st->alloc, len + 1);
    if (!copy) return ETW_E_NOMEM;
    if (len) memcpy(copy, json, len);
    copy[len] = 0;
    etw_free(&st->alloc, r->json);
    r->json = copy; /* the latest start or end names the pid */
    r->len = len;
    return ETW_OK;
}

static void agg_merge(agg *a, const agg *b) {
    if (!b->count) return;
    if (!a->count || b->first < a->first) a->first = b->first;
    if (!a->count || b->last > a->last) a->last = b->last;
    a->count += b->count;
    a->bytes += b->bytes;
}

/* Every key of from into into. A map that reached its bound in either may
 * have put a key in "(other)" (or dropped it) where one pass over all the
 * events would not: ETW_E_LIMIT. */
static etw_status map_merge(etw_strmap *into, etw_strmap *from, int procs) {
    size_t n;
    if (from->count >= from->max_count) return ETW_E_LIMIT;
    etw_strmap_entry **v = etw_strmap_list(from, &n);
    if (!v && from->count) return ETW_E_NOMEM;
    etw_status s = ETW_OK;
    for (size_t i = 0; i < n && s == ETW_OK; i++) {
        if (!etw_strmap_find(into, v[i]->key, v[i]->key_len) && into->count + 1 >= into->max_count) {
            s = ETW_E_LIMIT;
            break;
        }
        void *r = etw_strmap_get(into, v[i]->key, v[i]->key_len, NULL);
        if (!r) {
            s = ETW_E_NOMEM;
        } else if (procs) {
            proc_rec *a = r;
            const proc_rec *b = v[i]->rec;
            a->pid = b->pid;
            agg_merge(&a->a, &b->a);
        } else {
            agg_merge(r, v[i]->rec);
        }
    }
    etw_free(&from->alloc, v);
    return s;
}

etw_status etw_stats_merge(etw_stats *into, etw_stats *from) {
    if (!into || !from) return ETW_E_INVALID_ARG;
    etw_status s;
    if ((s = map_merge(&into->providers, &from->providers, 0)) != ETW_OK ||
        (s = map_merge(&into->events, &from->events, 0)) != ETW_OK ||
        (s = map_merge(&into->procs, &from->procs, 1)) != ETW_OK ||
        (s = map_merge(&into->guids, &from->guids, 0)) != ETW_OK)
        return s;
    agg_merge(&into->all, &from->all);
    into->lost_records += from->lost_records;
    return ETW_OK;
}

etw_status etw_stats_observe(etw_stats *st, etw_decoder *d, const etw_event *ev, const etw_label *l) {
    uint32_t pid = 0;
    const char *json;
    size_t len;
    etw_status s = etw_stats_process_name(st, d, ev, l, &pid, &json, &len);
    if (s != ETW_OK || !json) return s;
    return etw_stats_name_process(st, pid, json, len);
}

etw_status etw_stats_add(etw_stats *st, const etw_event *ev, const etw_label *l) {
    etw_status s = etw_stats_count(st, ev, l);
    return s == ETW_OK ? etw_stats_count_error(st, l) : s;
}

etw_status etw_stats_take(etw_stats *st, etw_decoder *d, const etw_event *ev, etw_label *l) {
    if (!st || !ev || !l) return ETW_E_INVALID_ARG;
    etw_label_unnamed(d, ev, l);
    kind_memo *k = kind_of(st, ev, l->schema);
    if (k && kind_is(k, ev, l->schema) && !k->naming) {
        agg_add(&st->all, ev);
        count_kind(st, k, ev, l->pid);
        return etw_stats_count_error(st, l);
    }
    /* a kind not met yet (or one that names a process): as
     * etw_stats_observe and etw_stats_add, with the names */
    etw_label_names(ev, l);
    etw_status s = etw_stats_observe(st, d, ev, l);
    return s == ETW_OK ? etw_stats_add(st, ev, l) : s;
}

/* The provider and (provider, event) records of l's names. */
static etw_status name_aggs(etw_stats *st, const etw_label *l, agg **prov, agg **evt) {
    size_t pl = l->provider_len, el = l->event_len;
    memo_slot *m = NULL;
    if (pl + el <= MEMO_KEY) {
        /* any spread will do: the slot is checked byte for byte */
        uint32_t h = (uint32_t)(pl * 31u + el * 131u);
        if (el) h += (uint32_t)((unsigned char)l->event[0] * 7u + (unsigned char)l->event[el - 1] * 17u + (unsigned char)l->event[el / 2] * 257u);
        if (pl) h += (unsigned char)l->provider[pl / 2] * 1031u;
        m = &st->memo[(h ^ (h >> 8)) & (MEMO_SLOTS - 1)];
        if (m->evt && m->prov_len == pl && m->event_len == el && !memcmp(m->key, l->provider, pl) &&
            !memcmp(m->key + pl, l->event, el)) {
            *prov = m->prov;
            *evt = m->evt;
            return ETW_OK;
        }
    }
    agg *a = agg_get(&st->providers, l->provider, l->provider_len);
    if (!a) return ETW_E_NOMEM;
    /* provider NUL event */
    etw_text_clear(&st->scratch);
    etw_text_put(&st->scratch, l->provider, l->provider_len);
    etw_text_putc(&st->scratch, 0);
    etw_text_put(&st->scratch, l->event, l->event_len);
    if (etw_text_status(&st->scratch) != ETW_OK) return ETW_E_NOMEM;
    agg *e = agg_get(&st->events, st->scratch.data, st->scratch.len);
    if (!e) return ETW_E_NOMEM;
    /* the records stay where they are; a key past the bound stays in
     * "(other)" (the map stays full) */
    if (m) {
        m->prov = a;
        m->evt = e;
        m->prov_len = (uint32_t)pl;
        m->event_len = (uint32_t)el;
        if (pl) memcpy(m->key, l->provider, pl);
        if (el) memcpy(m->key + pl, l->event, el);
    }
    *prov = a;
    *evt = e;
    return ETW_OK;
}

static int is_lost_record(const etw_label *l) {
    return (l->event_len >= 11 && !memcmp(l->event, "Lost_Event/", 11)) ||
           (l->event_len >= 10 && !memcmp(l->event + l->event_len - 10, "/LostEvent", 10));
}

static kind_memo *kind_slot(etw_stats *st, const etw_event *ev, const etw_schema *s) {
    uint32_t h = s->id * 2654435761u ^ (uint32_t)ev->opcode * 40503u ^ (uint32_t)ev->id * 9176u ^ ev->group;
    return &st->kinds[(h >> 16) & (KIND_SLOTS - 1)];
}

static int kind_is(const kind_memo *k, const etw_event *ev, const etw_schema *s) {
    return k->schema == s && k->sid == s->id && k->opcode == ev->opcode && k->id == ev->id &&
           k->group == ev->group && k->form == (uint8_t)ev->form &&
           k->classic == ((ev->flags & ETW_EVENT_FLAG_CLASSIC_HEADER) != 0) && k->message == ev->message_number;
}

static agg *guid_agg(etw_stats *st, const etw_event *ev);
static void proc_add(etw_stats *st, const etw_event *ev, uint32_t pid);

/* The memo slot of ev's kind, or NULL for an event whose names are not
 * made of its schema alone: without one, a TraceLogging schema (it serves
 * any provider), provider traits in the event (they name its provider). */
static kind_memo *kind_of(etw_stats *st, const etw_event *ev, const etw_schema *sc) {
    etw_ext_item it;
    if (!sc || ev->is_logfile_header || sc->source == ETW_SOURCE_TRACELOGGING ||
        (ev->ext_count && etw_event_find_ext(ev, ETW_EXT_PROV_TRAITS, &it) == ETW_OK))
        return NULL;
    return kind_slot(st, ev, sc);
}

static void count_kind(etw_stats *st, const kind_memo *k, const etw_event *ev, uint32_t pid) {
    agg_add(k->prov, ev);
    agg_add(k->evt, ev);
    if (k->guid) agg_add(k->guid, ev);
    proc_add(st, ev, pid);
    st->lost_records += k->lost;
}

static int names_process(const etw_event *ev, const etw_label *l) {
    return is_kernel_process_naming(ev) || name_is(l, "Process/Start") || name_is(l, "Process/DCStart") ||
           name_is(l, "Process/End") || name_is(l, "Process/DCEnd");
}

etw_status etw_stats_count(etw_stats *st, const etw_event *ev, const etw_label *l) {
    if (!st || !ev || !l) return ETW_E_INVALID_ARG;
    agg_add(&st->all, ev);
    const etw_schema *sc = l->schema;
    kind_memo *k = kind_of(st, ev, sc);
    if (k && kind_is(k, ev, sc)) {
        count_kind(st, k, ev, l->pid);
        return ETW_OK;
    }
    agg *a, *e;
    etw_status s = name_aggs(st, l, &a, &e);
    if (s != ETW_OK) return s;
    agg_add(a, ev);
    agg_add(e, ev);
    agg *g = guid_agg(st, ev);
    if (g) agg_add(g, ev);
    proc_add(st, ev, l->pid);
    int lost = is_lost_record(l);
    if (lost) st->lost_records++;
    if (k) {
        k->schema = sc;
        k->sid = sc->id;
        k->opcode = ev->opcode;
        k->id = ev->id;
        k->group = ev->group;
        k->form = (uint8_t)ev->form;
        k->classic = (ev->flags & ETW_EVENT_FLAG_CLASSIC_HEADER) != 0;
        k->message = ev->message_number;
        k->lost = (uint8_t)lost;
        k->naming = (uint8_t)names_process(ev, l);
        k->prov = a;
        k->evt = e;
        k->guid = g;
    }
    return ETW_OK;
}

/* The header GUID's record. */
static agg *guid_agg(etw_stats *st, const etw_event *ev) {
    agg *a;
    /* the header's GUID, kernel records apart (the NT kernel logger's
     * classes share GUIDs with nothing else, but say so) */
    uint8_t gk[17];
    memcpy(gk, &ev->provider.data1, 4); /* host order: a key, never written out as is */
    memcpy(gk + 4, &ev->provider.data2, 2);
    memcpy(gk + 6, &ev->provider.data3, 2);
    memcpy(gk + 8, ev->provider.data4, 8);
    gk[16] = ev->form == ETW_FORM_SYSTEM || ev->form == ETW_FORM_COMPACT || ev->form == ETW_FORM_PERFINFO ||
             ev->is_logfile_header;
    guid_memo *gm = &st->gmemo[(ev->provider.data1 ^ gk[15] ^ gk[16]) & 15u];
    if (gm->a && !memcmp(gm->key, gk, sizeof gk)) {
        a = gm->a;
    } else {
        a = etw_strmap_get(&st->guids, gk, sizeof gk, NULL);
        if (a) {
            gm->a = a;
            memcpy(gm->key, gk, sizeof gk);
        }
    }
    return a;
}

/* The event counted for its process. */
static void proc_add(etw_stats *st, const etw_event *ev, uint32_t pid) {
    pid_memo *pm = &st->pmemo[(pid >> 2) & 255u];
    proc_rec *p;
    if (pm->p && pm->pid == pid) {
        p = pm->p;
    } else {
        uint8_t key[4] = {(uint8_t)pid, (uint8_t)(pid >> 8), (uint8_t)(pid >> 16), (uint8_t)(pid >> 24)};
        p = etw_strmap_get(&st->procs, key, 4, NULL);
        if (p) {
            pm->p = p;
            pm->pid = pid;
        }
    }
    if (p) {
        p->pid = pid;
        agg_add(&p->a, ev);
    }
}

int etw_stats_has_error(const etw_label *l) {
    return l && (l->error || l->status != ETW_OK);
}

etw_status etw_stats_count_error(etw_stats *st, const etw_label *l) {
    if (!st || !l) return ETW_E_INVALID_ARG;
    if (l->error || l->status != ETW_OK) {
        const char *msg = l->error ? l->error : etw_strerror(l->status);
        const char *colon = strchr(msg, ':');
        size_t kl = colon ? (size_t)(colon - msg) : strlen(msg);
        error_rec *e = etw_strmap_get(&st->errors, msg, kl, NULL);
        if (e) {
            if (!e->count) {
                size_t n = strlen(msg);
                e->example = etw_alloc(&st->alloc, n + 1);
                if (e->example) memcpy(e->example, msg, n + 1);
            }
            e->count++;
        }
    }
    return ETW_OK;
}

/* ---- rendering ------------------------------------------------------------ */

static uint64_t rec_count(const etw_strmap_entry *e, int kind) {
    if (kind == 1) return ((const proc_rec *)e->rec)->a.count;
    if (kind == 2) return ((const error_rec *)e->rec)->count;
    return ((const agg *)e->rec)->count;
}

static int order(const etw_strmap_entry *a, const etw_strmap_entry *b, uint64_t ca, uint64_t cb) {
    if (ca != cb) return ca < cb ? 1 : -1;
    size_t n = a->key_len < b->key_len ? a->key_len : b->key_len;
    int c = memcmp(a->key, b->key, n);
    if (c) return c;
    return a->key_len < b->key_len ? -1 : a->key_len > b->key_len;
}

#define ENTRY(p) (*(etw_strmap_entry *const *)(p))
static int by_count0(const void *a, const void *b) {
    return order(ENTRY(a), ENTRY(b), rec_count(ENTRY(a), 0), rec_count(ENTRY(b), 0));
}
static int by_count1(const void *a, const void *b) {
    return order(ENTRY(a), ENTRY(b), rec_count(ENTRY(a), 1), rec_count(ENTRY(b), 1));
}
static int by_count2(const void *a, const void *b) {
    return order(ENTRY(a), ENTRY(b), rec_count(ENTRY(a), 2), rec_count(ENTRY(b), 2));
}

static etw_strmap_entry **sorted(etw_strmap *m, int kind, size_t *n) {
    etw_strmap_entry **v = etw_strmap_list(m, n);
    if (v && *n > 1) qsort(v, *n, sizeof *v, kind == 0 ? by_count0 : kind == 1 ? by_count1 : by_count2);
    return v;
}

static void jkey(etw_text *t, const char *k, int *first) {
    if (!*first) etw_text_putc(t, ',');
    *first = 0;
    etw_text_putc(t, '"');
    etw_text_puts(t, k);
    etw_text_puts(t, "\":");
}

static void jtime(etw_text *t, int64_t ft) {
    size_t mark = t->len;
    etw_text_putc(t, '"');
    if (etw_text_filetime(t, ft) != ETW_OK) {
        t->len = mark;
        etw_text_puts(t, "null");
        return;
    }
    etw_text_putc(t, '"');
}

static void jagg(etw_text *t, const agg *a, int *first) {
    jkey(t, "count", first);
    etw_text_u64(t, a->count);
    jkey(t, "first", first);
    if (a->count) jtime(t, a->first);
    else etw_text_puts(t, "null");
    jkey(t, "last", first);
    if (a->count) jtime(t, a->last);
    else etw_text_puts(t, "null");
    jkey(t, "bytes", first);
    etw_text_u64(t, a->bytes);
}

static const char *clock_name(uint32_t c) {
    /* TRACE_LOGFILE_HEADER.ReservedFlags (FORMATS.md 1.8) */
    return c == 1 ? "QPC" : c == 2 ? "system time" : c == 3 ? "CPU cycles" : "raw";
}

static void jfile(etw_text *t, const etw_reader *r, const char *name) {
    const etw_logfile_header *h = etw_reader_logfile(r);
    const etw_reader_stats *rs = etw_reader_stats_get(r);
    int f = 1;
    etw_text_putc(t, '{');
    if (name) {
        jkey(t, "file", &f);
        etw_text_json_utf8(t, name, strlen(name));
    }
    jkey(t, "session", &f);
    etw_text_json_utf16le(t, h->session_name, h->session_name_bytes);
    jkey(t, "os_version", &f);
    etw_text_putc(t, '"');
    etw_text_u64(t, h->version & 0xFF);
    etw_text_putc(t, '.');
    etw_text_u64(t, (h->version >> 8) & 0xFF);
    etw_text_putc(t, '"');
    jkey(t, "os_build", &f);
    etw_text_u64(t, h->provider_version);
    jkey(t, "pointer_size", &f);
    etw_text_u64(t, h->pointer_size);
    jkey(t, "processors", &f);
    etw_text_u64(t, h->number_of_processors);
    jkey(t, "clock", &f);
    etw_text_putc(t, '"');
    etw_text_puts(t, clock_name(h->reserved_flags));
    etw_text_putc(t, '"');
    jkey(t, "clock_hz", &f);
    etw_text_i64(t, h->perf_freq);
    jkey(t, "start", &f);
    if (rs->events) jtime(t, rs->first_timestamp);
    else etw_text_puts(t, "null");
    jkey(t, "end", &f);
    if (rs->events) jtime(t, rs->last_timestamp);
    else etw_text_puts(t, "null");
    static const struct {
        const char *k;
        size_t off;
    } counts[] = {{"buffers", offsetof(etw_reader_stats, buffers)},
                  {"buffers_compressed", offsetof(etw_reader_stats, buffers_compressed)},
                  {"buffers_lost_flag", offsetof(etw_reader_stats, buffers_lost_flag)},
                  {"buffers_skipped", offsetof(etw_reader_stats, buffers_skipped)},
                  {"events", offsetof(etw_reader_stats, events)},
                  {"records_skipped", offsetof(etw_reader_stats, records_skipped)}};
    for (size_t i = 0; i < sizeof counts / sizeof counts[0]; i++) {
        uint64_t v;
        memcpy(&v, (const char *)rs + counts[i].off, sizeof v);
        jkey(t, counts[i].k, &f);
        etw_text_u64(t, v);
    }
    jkey(t, "events_lost", &f);
    etw_text_u64(t, h->events_lost);
    jkey(t, "buffers_lost", &f);
    etw_text_u64(t, h->buffers_lost);
    etw_text_putc(t, '}');
}

static const image_rec *image_of(etw_stats *st, uint32_t pid) {
    uint8_t key[4] = {(uint8_t)pid, (uint8_t)(pid >> 8), (uint8_t)(pid >> 16), (uint8_t)(pid >> 24)};
    const image_rec *r = etw_strmap_find(&st->images, key, 4);
    return r && r->json ? r : NULL;
}

etw_status etw_stats_json(etw_stats *st, const etw_reader *const *readers, const char *const *names,
                          size_t nfiles, const char **out, size_t *len) {
    if (!st || !out || !len || (nfiles && !readers)) return ETW_E_INVALID_ARG;
    etw_text *t = &st->text;
    etw_text_clear(t);
    int f = 1;
    etw_text_putc(t, '{');
    jkey(t, "files", &f);
    etw_text_putc(t, '[');
    uint64_t ev_lost = 0, buf_lost = 0, buf_flag = 0, buf_skip = 0, rec_skip = 0;
    for (size_t i = 0; i < nfiles; i++) {
        if (i) etw_text_putc(t, ',');
        jfile(t, readers[i], names ? names[i] : NULL);
        const etw_reader_stats *rs = etw_reader_stats_get(readers[i]);
        ev_lost += etw_reader_logfile(readers[i])->events_lost;
        buf_lost += etw_reader_logfile(readers[i])->buffers_lost;
        buf_flag += rs->buffers_lost_flag;
        buf_skip += rs->buffers_skipped;
        rec_skip += rs->records_skipped;
    }
    etw_text_putc(t, ']');
    jkey(t, "events", &f);
    etw_text_u64(t, st->all.count);
    jkey(t, "first", &f);
    if (st->all.count) jtime(t, st->all.first);
    else etw_text_puts(t, "null");
    jkey(t, "last", &f);
    if (st->all.count) jtime(t, st->all.last);
    else etw_text_puts(t, "null");
    jkey(t, "bytes", &f);
    etw_text_u64(t, st->all.bytes);
    jkey(t, "lost", &f);
    {
        int g = 1;
        etw_text_putc(t, '{');
        jkey(t, "events_lost", &g);
        etw_text_u64(t, ev_lost);
        jkey(t, "buffers_lost", &g);
        etw_text_u64(t, buf_lost);
        jkey(t, "buffers_lost_flag", &g);
        etw_text_u64(t, buf_flag);
        jkey(t, "buffers_skipped", &g);
        etw_text_u64(t, buf_skip);
        jkey(t, "records_skipped", &g);
        etw_text_u64(t, rec_skip);
        jkey(t, "lost_event_records", &g);
        etw_text_u64(t, st->lost_records);
        etw_text_putc(t, '}');
    }
    size_t n;
    etw_strmap_entry **v;

    jkey(t, "providers", &f);
    etw_text_putc(t, '[');
    v = sorted(&st->providers, 0, &n);
    for (size_t i = 0; i < n; i++) {
        int g = 1;
        if (i) etw_text_putc(t, ',');
        etw_text_putc(t, '{');
        jkey(t, "provider", &g);
        etw_text_json_utf8(t, v[i]->key, v[i]->key_len);
        jagg(t, v[i]->rec, &g);
        etw_text_putc(t, '}');
    }
    etw_free(&st->alloc, v);
    etw_text_putc(t, ']');

    jkey(t, "events_by_name", &f);
    etw_text_putc(t, '[');
    v = sorted(&st->events, 0, &n);
    for (size_t i = 0; i < n; i++) {
        int g = 1;
        const char *k = v[i]->key;
        size_t pl = strlen(k); /* provider, then NUL, then event */
        if (i) etw_text_putc(t, ',');
        etw_text_putc(t, '{');
        jkey(t, "provider", &g);
        etw_text_json_utf8(t, k, pl);
        jkey(t, "event", &g);
        etw_text_json_utf8(t, k + pl + 1, v[i]->key_len > pl ? v[i]->key_len - pl - 1 : 0);
        jagg(t, v[i]->rec, &g);
        etw_text_putc(t, '}');
    }
    etw_free(&st->alloc, v);
    etw_text_putc(t, ']');

    jkey(t, "processes", &f);
    etw_text_putc(t, '[');
    v = sorted(&st->procs, 1, &n);
    for (size_t i = 0; i < n; i++) {
        int g = 1;
        const proc_rec *p = v[i]->rec;
        if (i) etw_text_putc(t, ',');
        etw_text_putc(t, '{');
        jkey(t, "pid", &g);
        if (p->pid == ETW_NO_ID) etw_text_puts(t, "-1");
        else etw_text_u64(t, p->pid);
        jkey(t, "image", &g);
        const image_rec *im = p->pid == ETW_NO_ID ? NULL : image_of(st, p->pid);
        if (im) etw_text_put(t, im->json, im->len);
        else etw_text_puts(t, "null");
        jagg(t, &p->a, &g);
        etw_text_putc(t, '}');
    }
    etw_free(&st->alloc, v);
    etw_text_putc(t, ']');

    jkey(t, "errors", &f);
    etw_text_putc(t, '[');
    v = sorted(&st->errors, 2, &n);
    for (size_t i = 0; i < n; i++) {
        int g = 1;
        const error_rec *e = v[i]->rec;
        if (i) etw_text_putc(t, ',');
        etw_text_putc(t, '{');
        jkey(t, "kind", &g);
        etw_text_json_utf8(t, v[i]->key, v[i]->key_len);
        jkey(t, "count", &g);
        etw_text_u64(t, e->count);
        jkey(t, "example", &g);
        if (e->example) etw_text_json_utf8(t, e->example, strlen(e->example));
        else etw_text_puts(t, "null");
        etw_text_putc(t, '}');
    }
    etw_free(&st->alloc, v);
    etw_text_putc(t, ']');
    etw_text_putc(t, '}');
    etw_status s = etw_text_status(t);
    if (s != ETW_OK) return s;
    *out = t->data;
    *len = t->len;
    return ETW_OK;
}

/* ---- the text table ------------------------------------------------------- */

/* Text for a terminal: control characters (C0, DEL) shown as '?'. */
static void tput(etw_text *t, const char *s, size_t n) {
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        etw_text_putc(t, c < 0x20 || c == 0x7F ? '?' : (char)c);
    }
}

static void tutf16(etw_text *t, const uint8_t *p, uint32_t n) {
    for (uint32_t i = 0; i + 1 < n; i += 2) {
        unsigned c = (unsigned)(p[i] | (p[i + 1] << 8));
        etw_text_putc(t, c < 0x80 && c >= 0x20 ? (char)c : '?');
    }
}

static void tpad(etw_text *t, size_t from, size_t width) {
    while (t->len < from + width) etw_text_putc(t, ' ');
}

/* Seconds from origin, 3 decimals: "12.345". */
static void tsecs(etw_text *t, int64_t ft, int64_t origin) {
    /* the difference in unsigned arithmetic: no overflow whatever the times */
    uint64_t d;
    if (ft >= origin) {
        d = (uint64_t)ft - (uint64_t)origin;
    } else {
        etw_text_putc(t, '-');
        d = (uint64_t)origin - (uint64_t)ft;
    }
    etw_text_u64(t, d / 10000000u);
    etw_text_putc(t, '.');
    uint64_t ms = (d % 10000000u) / 10000u;
    etw_text_putc(t, (char)('0' + ms / 100));
    etw_text_putc(t, (char)('0' + ms / 10 % 10));
    etw_text_putc(t, (char)('0' + ms % 10));
}

/* "  COUNT  FIRST  LAST  BYTES  NAME": numbers right-aligned, the name last
 * so that long names do not break the columns. */
static void tright(etw_text *t, size_t from, size_t width) {
    size_t w = t->len - from;
    if (w >= width) return;
    char buf[48];
    if (w > sizeof buf) return;
    memcpy(buf, t->data + from, w);
    t->len = from;
    for (size_t i = w; i < width; i++) etw_text_putc(t, ' ');
    etw_text_put(t, buf, w);
}

static void tline_agg(etw_text *t, const char *name, size_t nlen, const agg *a, int64_t origin) {
    etw_text_puts(t, "  ");
    size_t c = t->len;
    etw_text_u64(t, a->count);
    tright(t, c, 10);
    etw_text_putc(t, ' ');
    c = t->len;
    tsecs(t, a->first, origin);
    tright(t, c, 10);
    etw_text_putc(t, ' ');
    c = t->len;
    tsecs(t, a->last, origin);
    tright(t, c, 10);
    etw_text_putc(t, ' ');
    c = t->len;
    etw_text_u64(t, a->bytes);
    tright(t, c, 12);
    etw_text_puts(t, "  ");
    tput(t, name, nlen);
    etw_text_putc(t, '\n');
}

static void ttime(etw_text *t, int64_t ft) {
    size_t mark = t->len;
    if (etw_text_filetime(t, ft) != ETW_OK) {
        t->len = mark;
        etw_text_puts(t, "null"); /* as the JSON writes it */
    }
}

static void tfile(etw_text *t, const etw_reader *r, const char *name) {
    const etw_logfile_header *h = etw_reader_logfile(r);
    const etw_reader_stats *st = etw_reader_stats_get(r);
    if (name) {
        etw_text_puts(t, "file               ");
        tput(t, name, strlen(name));
        etw_text_putc(t, '\n');
    }
    etw_text_puts(t, "session            ");
    tutf16(t, h->session_name, h->session_name_bytes);
    etw_text_puts(t, "\nOS version         ");
    etw_text_u64(t, h->version & 0xFF);
    etw_text_putc(t, '.');
    etw_text_u64(t, (h->version >> 8) & 0xFF);
    etw_text_puts(t, " build ");
    etw_text_u64(t, h->provider_version);
    etw_text_puts(t, "\npointer size       ");
    etw_text_u64(t, h->pointer_size);
    etw_text_puts(t, "\nprocessors         ");
    etw_text_u64(t, h->number_of_processors);
    etw_text_puts(t, "\nclock              ");
    etw_text_puts(t, clock_name(h->reserved_flags));
    etw_text_puts(t, " (");
    etw_text_i64(t, h->perf_freq);
    etw_text_puts(t, " Hz)\ntime range         ");
    ttime(t, st->first_timestamp);
    etw_text_puts(t, " .. ");
    ttime(t, st->last_timestamp);
    etw_text_puts(t, "\nduration           ");
    tsecs(t, st->last_timestamp, st->first_timestamp);
    etw_text_puts(t, " s\nbuffers            ");
    etw_text_u64(t, st->buffers);
    etw_text_puts(t, " (compressed ");
    etw_text_u64(t, st->buffers_compressed);
    etw_text_puts(t, ", flagged lost ");
    etw_text_u64(t, st->buffers_lost_flag);
    etw_text_puts(t, ", skipped ");
    etw_text_u64(t, st->buffers_skipped);
    etw_text_puts(t, "; ");
    etw_text_u64(t, h->buffers_lost);
    etw_text_puts(t, " lost per header)\nevents             ");
    etw_text_u64(t, st->events);
    etw_text_puts(t, " (lost per header ");
    etw_text_u64(t, h->events_lost);
    etw_text_puts(t, ", records skipped ");
    etw_text_u64(t, st->records_skipped);
    etw_text_puts(t, ")\n\nevents by header form\n");
    for (int f = 0; f < ETW_FORM_COUNT_; f++) {
        if (!st->events_by_form[f]) continue;
        size_t s0 = t->len;
        etw_text_puts(t, "  ");
        etw_text_puts(t, etw_header_form_name((etw_header_form)f));
        tpad(t, s0, 22);
        size_t c = t->len;
        etw_text_u64(t, st->events_by_form[f]);
        size_t w = t->len - c;
        if (w < 12) {
            char buf[32];
            memcpy(buf, t->data + c, w);
            t->len = c;
            for (size_t i = w; i < 12; i++) etw_text_putc(t, ' ');
            etw_text_put(t, buf, w);
        }
        etw_text_putc(t, '\n');
    }
}

etw_status etw_stats_text(etw_stats *st, const etw_reader *const *readers, const char *const *names,
                          size_t nfiles, const char **out, size_t *len) {
    if (!st || !out || !len || (nfiles && !readers)) return ETW_E_INVALID_ARG;
    etw_text *t = &st->text;
    etw_text_clear(t);
    int64_t origin = 0;
    for (size_t i = 0; i < nfiles; i++) {
        if (i) etw_text_putc(t, '\n');
        tfile(t, readers[i], names ? names[i] : NULL);
        int64_t f = etw_reader_stats_get(readers[i])->first_timestamp;
        if (i == 0 || f < origin) origin = f;
    }
    etw_text_puts(t, "\nsummary of ");
    etw_text_u64(t, st->all.count);
    etw_text_puts(t, " events (times in seconds from ");
    ttime(t, origin);
    etw_text_puts(t, ")\n");
    size_t n;
    etw_strmap_entry **v;
    /* by provider GUID, as etwdump printed it before names were known
     * (and as scripts read it): "  GUID  COUNT[  (Windows Kernel)]" */
    etw_text_puts(t, "\nevents by provider\n");
    v = sorted(&st->guids, 0, &n);
    for (size_t i = 0; i < n; i++) {
        const uint8_t *gk = (const uint8_t *)v[i]->key;
        etw_guid g;
        memcpy(&g.data1, gk, 4);
        memcpy(&g.data2, gk + 4, 2);
        memcpy(&g.data3, gk + 6, 2);
        memcpy(g.data4, gk + 8, 8);
        char gs[ETW_GUID_STRING_SIZE];
        etw_guid_format(&g, gs);
        etw_text_puts(t, "  ");
        etw_text_puts(t, gs);
        etw_text_putc(t, ' ');
        size_t c = t->len;
        etw_text_u64(t, ((const agg *)v[i]->rec)->count);
        tright(t, c, 12);
        if (v[i]->key_len == 17 && gk[16]) etw_text_puts(t, "  (Windows Kernel)");
        etw_text_putc(t, '\n');
    }
    etw_free(&st->alloc, v);
    static const char cols[] = "       count      first       last        bytes  ";
    etw_text_puts(t, "\nevents by provider name\n");
    etw_text_puts(t, cols);
    etw_text_puts(t, "provider\n");
    v = sorted(&st->providers, 0, &n);
    for (size_t i = 0; i < n; i++) tline_agg(t, v[i]->key, v[i]->key_len, v[i]->rec, origin);
    etw_free(&st->alloc, v);
    etw_text_puts(t, "\nevents by event name\n");
    etw_text_puts(t, cols);
    etw_text_puts(t, "provider/event\n");
    v = sorted(&st->events, 0, &n);
    for (size_t i = 0; i < n; i++) {
        etw_text_clear(&st->scratch);
        size_t pl = strlen(v[i]->key);
        etw_text_put(&st->scratch, v[i]->key, pl);
        etw_text_putc(&st->scratch, '/');
        etw_text_put(&st->scratch, v[i]->key + pl + 1, v[i]->key_len > pl ? v[i]->key_len - pl - 1 : 0);
        if (etw_text_status(&st->scratch) != ETW_OK) break;
        tline_agg(t, st->scratch.data, st->scratch.len, v[i]->rec, origin);
    }
    etw_free(&st->alloc, v);
    etw_text_puts(t, "\nevents by process\n");
    etw_text_puts(t, cols);
    etw_text_puts(t, "pid image\n");
    v = sorted(&st->procs, 1, &n);
    for (size_t i = 0; i < n; i++) {
        const proc_rec *p = v[i]->rec;
        etw_text_clear(&st->scratch);
        if (p->pid == ETW_NO_ID) etw_text_puts(&st->scratch, "-1 (no process)");
        else etw_text_u64(&st->scratch, p->pid);
        const image_rec *im = p->pid == ETW_NO_ID ? NULL : image_of(st, p->pid);
        if (im) {
            etw_text_putc(&st->scratch, ' ');
            etw_jscan_unescape(&st->scratch, im->json, im->len);
        }
        if (etw_text_status(&st->scratch) != ETW_OK) break;
        tline_agg(t, st->scratch.data, st->scratch.len, &p->a, origin);
    }
    etw_free(&st->alloc, v);
    uint64_t ev_lost = 0, buf_lost = 0, buf_flag = 0;
    for (size_t i = 0; i < nfiles; i++) {
        ev_lost += etw_reader_logfile(readers[i])->events_lost;
        buf_lost += etw_reader_logfile(readers[i])->buffers_lost;
        buf_flag += etw_reader_stats_get(readers[i])->buffers_lost_flag;
    }
    etw_text_puts(t, "\nlost               events ");
    etw_text_u64(t, ev_lost);
    etw_text_puts(t, ", buffers ");
    etw_text_u64(t, buf_lost);
    etw_text_puts(t, " (per header); buffers flagged lost ");
    etw_text_u64(t, buf_flag);
    etw_text_puts(t, "; lost-event records ");
    etw_text_u64(t, st->lost_records);
    etw_text_puts(t, "\n\ndecode errors by kind\n");
    v = sorted(&st->errors, 2, &n);
    if (!n) etw_text_puts(t, "  none\n");
    for (size_t i = 0; i < n; i++) {
        const error_rec *e = v[i]->rec;
        size_t s0 = t->len;
        etw_text_puts(t, "  ");
        tput(t, v[i]->key, v[i]->key_len);
        tpad(t, s0, 24);
        etw_text_putc(t, ' ');
        etw_text_u64(t, e->count);
        if (e->example) {
            etw_text_puts(t, "  e.g. ");
            tput(t, e->example, strlen(e->example));
        }
        etw_text_putc(t, '\n');
    }
    etw_free(&st->alloc, v);
    etw_status s = etw_text_status(t);
    if (s != ETW_OK) return s;
    *out = t->data;
    *len = t->len;
    return ETW_OK;
}
