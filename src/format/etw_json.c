/* etw_json.c - one event -> one JSON line (docs/json-output.md). */
#include "etwdecode/etw_json.h"

#include "../common/etw_alloc.h"
#include <string.h>

#include "../common/etw_bytes.h"
#include "../schema/etw_source.h"
#include "../source/etw_eventsource.h"
#include "etw_event_names.h"
#include "etw_fields_json.h"
#include "etw_json_spans.h"
#include "etw_message.h"
#include "../wpp/etw_wpp_format.h"
#include "etw_text.h"

/* The keys from "provider" to "keywords" depend only on the schema and the
 * descriptor, so the text written for the last event of each schema is kept
 * and copied when the next one matches (a memo: the bytes are the same as
 * formatting them again). Slots are picked by schema id. */
#define SEG_SLOTS 64u
#define SEG_MAX 256u

typedef struct seg {
    const etw_schema *schema; /* NULL: empty slot; never dereferenced (a
                               * TraceLogging schema may be gone, etw_cache.h) */
    uint32_t schema_id;       /* with the pointer: ids are never reused */
    etw_guid provider;
    uint64_t keywords;
    uint16_t id, task;
    uint8_t version, level, opcode, channel;
    uint16_t len;
    uint64_t made; /* bumped whenever the slot's text is made anew (etw_json_spans.seg) */
    /* the values' spans of the keys ETW_JK_PROVIDER..ETW_JK_KEYWORDS, from
     * the segment's start */
    uint16_t voff[ETW_JK_KEYWORDS - ETW_JK_PROVIDER + 1], vlen[ETW_JK_KEYWORDS - ETW_JK_PROVIDER + 1];
    char text[SEG_MAX];
} seg;

struct etw_json {
    etw_allocator alloc;
    etw_json_options opt;
    etw_text text;
    etw_text scratch; /* work space of the message formatter */
    char wpp_why[320]; /* why a WPP message could not be formatted */
    const char *file; /* the "file" key's value (borrowed), or NULL */
    seg *segs;        /* SEG_SLOTS, allocated with the writer */
};

void etw_json_set_file(etw_json *j, const char *file) {
    if (j) j->file = file;
}

etw_status etw_json_new(etw_json **out, const etw_allocator *alloc,
                        const etw_json_options *opt) {
    if (!out) return ETW_E_INVALID_ARG;
    etw_allocator a = etw_allocator_resolve(alloc);
    etw_json *j = etw_calloc(&a, 1, sizeof *j);
    if (!j) return ETW_E_NOMEM;
    j->alloc = a;
    if (opt) j->opt = *opt;
    etw_text_init(&j->text, &a);
    etw_text_init(&j->scratch, &a);
    j->segs = etw_calloc(&a, SEG_SLOTS, sizeof *j->segs); /* NULL: no memo, same output */
    *out = j;
    return ETW_OK;
}

void etw_json_free(etw_json *j) {
    if (!j) return;
    etw_allocator a = j->alloc;
    etw_text_free(&j->text);
    etw_text_free(&j->scratch);
    etw_free(&a, j->segs);
    etw_free(&a, j);
}

static void key(etw_text *t, const char *k) {
    etw_text_putc(t, ',');
    etw_text_putc(t, '"');
    etw_text_puts(t, k);
    etw_text_putc(t, '"');
    etw_text_putc(t, ':');
}

/* A key outside the memo's part (provider..keywords): only its comma when
 * the caller reads the values by their spans alone (no_keys, CSV). */
static void skey(const etw_json_spans *sp, etw_text *t, const char *k) {
    if (sp && sp->no_keys) etw_text_putc(t, ',');
    else key(t, k);
}

/* The value of key k starts / ended here (sp NULL: not recorded). */
static void vbegin(etw_json_spans *sp, const etw_text *t, int k) {
    if (sp) sp->off[k] = t->len;
}
static void vend(etw_json_spans *sp, const etw_text *t, int k) {
    if (sp) sp->len[k] = t->len - sp->off[k];
}

static void guid_value(etw_text *t, const etw_guid *g) {
    char s[ETW_GUID_STRING_SIZE];
    etw_guid_format(g, s);
    etw_text_putc(t, '"');
    etw_text_put(t, s, ETW_GUID_STRING_SIZE - 1);
    etw_text_putc(t, '"');
}

static void time_value(etw_text *t, int64_t ft) {
    size_t mark = t->len;
    etw_text_putc(t, '"');
    if (etw_text_filetime(t, ft) != ETW_OK) {
        t->len = mark;
        etw_text_puts(t, "null");
        return;
    }
    etw_text_putc(t, '"');
}

/* A FILETIME field: 0 means "no time" (null), per the contract. */
static void filetime_field(etw_text *t, const char *k, int64_t ft) {
    key(t, k);
    if (ft == 0) etw_text_puts(t, "null");
    else time_value(t, ft);
}

static void id_value(etw_text *t, uint32_t v) {
    if (v == ETW_NO_ID) etw_text_puts(t, "-1");
    else etw_text_u64(t, v);
}

static void u64_field(etw_text *t, const char *k, uint64_t v) {
    key(t, k);
    etw_text_u64(t, v);
}

/* The log-file header's members, named as PerfView names them. */
static void logfile_fields(etw_text *t, const etw_logfile_header *h) {
    etw_text_puts(t, "{\"BufferSize\":");
    etw_text_u64(t, h->buffer_size);
    u64_field(t, "Version", h->version);
    u64_field(t, "ProviderVersion", h->provider_version);
    u64_field(t, "NumberOfProcessors", h->number_of_processors);
    filetime_field(t, "EndTime", h->end_time);
    u64_field(t, "TimerResolution", h->timer_resolution);
    u64_field(t, "MaxFileSize", h->maximum_file_size);
    u64_field(t, "LogFileMode", h->log_file_mode);
    u64_field(t, "BuffersWritten", h->buffers_written);
    u64_field(t, "StartBuffers", h->start_buffers);
    u64_field(t, "PointerSize", h->pointer_size);
    u64_field(t, "EventsLost", h->events_lost);
    u64_field(t, "CPUSpeed", h->cpu_speed_mhz);
    filetime_field(t, "BootTime", h->boot_time);
    key(t, "PerfFreq");
    etw_text_i64(t, h->perf_freq);
    filetime_field(t, "StartTime", h->start_time);
    u64_field(t, "ReservedFlags", h->reserved_flags);
    u64_field(t, "BuffersLost", h->buffers_lost);
    key(t, "SessionName");
    etw_text_json_utf16le(t, h->session_name, h->session_name_bytes);
    key(t, "LogFileName");
    etw_text_json_utf16le(t, h->logfile_name, h->logfile_name_bytes);
    key(t, "UtcOffsetMinutes");
    etw_text_i64(t, h->timezone_bias);
    etw_text_putc(t, '}');
}

/* An EventSource manifest chunk: its envelope, named as PerfView names it
 * (PayloadLength is the whole user data, as PerfView shows it). */
static int manifest_fields(etw_text *t, const etw_event *ev) {
    etw_es_envelope e;
    if (etw_es_envelope_read(ev, &e) != ETW_OK) return 0;
    etw_text_puts(t, "{\"Format\":");
    etw_text_u64(t, e.format);
    u64_field(t, "MajorVersion", e.major);
    u64_field(t, "MinorVersion", e.minor);
    u64_field(t, "Magic", e.magic);
    u64_field(t, "TotalChunks", e.total_chunks);
    u64_field(t, "ChunkNumber", e.chunk_number);
    u64_field(t, "PayloadLength", e.payload_length);
    etw_text_putc(t, '}');
    return 1;
}

/* activity ids, container id and stack from the extended items. */
static void hex_value(etw_text *t, uint64_t v) {
    etw_text_putc(t, '"');
    etw_text_hex(t, v);
    etw_text_putc(t, '"');
}

/* A stack item's addresses: u64 MatchId, then 4- or 8-byte addresses
 * (evntcons.h; a partial last address is left out). */
static void stack_addresses(etw_text *t, const etw_ext_item *it) {
    uint32_t w = it->type == ETW_EXT_STACK_TRACE64 ? 8 : 4;
    etw_text_putc(t, '[');
    for (uint32_t o = 8, n = 0; o + w <= it->size; o += w, n++) {
        if (n) etw_text_putc(t, ',');
        hex_value(t, w == 8 ? etw_le64(it->data + o) : etw_le32(it->data + o));
    }
    etw_text_putc(t, ']');
}

/* A STACK_KEY item's key: {u64 MatchId; u32 or u64 StackKey} (evntcons.h
 * EVENT_EXTENDED_ITEM_STACK_KEY32/64); 0 when the item is too short. */
static int stack_key_of(const etw_ext_item *it, uint64_t *k) {
    uint32_t w = it->type == ETW_EXT_STACK_KEY64 ? 8 : 4;
    if (it->size < 8 + w) return 0;
    *k = w == 8 ? etw_le64(it->data + 8) : etw_le32(it->data + 8);
    return 1;
}

/* The extended items (docs/json-output.md): GUIDs in item order; then the
 * stacks: the first STACK_TRACE item as "stack" (+ "stack_match_id" when its
 * MatchId is not 0), any later one in "more_stacks"; then the STACK_KEY
 * items the same way ("stack_key", "stack_key_match_id", "more_stack_keys").
 * The Python module (python/etwdecode/_native.c ext_items) builds the same
 * keys in the same order. no_stack: the caller supplies "stack"
 * (etw_json_options.stack), so the STACK_TRACE items are left out. */
static void ext_fields(etw_text *t, const etw_event *ev, etw_json_spans *sp, int no_stack) {
    etw_ext_item it;
    uint32_t pos = 0, nstack = 0, nkey = 0;
    int stacks = 0, keys = 0;
    while (etw_event_next_ext(ev, &pos, &it) == ETW_OK) {
        switch (it.type) {
        case ETW_EXT_RELATED_ACTIVITYID:
        case ETW_EXT_CONTAINER_ID:
            if (it.size >= 16) {
                etw_guid g = etw_guid_read(it.data);
                if (!etw_guid_is_zero(&g)) {
                    int k = it.type == ETW_EXT_CONTAINER_ID ? ETW_JK_CONTAINER : ETW_JK_RELATED;
                    key(t, k == ETW_JK_CONTAINER ? "container_id" : "related_activity_id");
                    vbegin(sp, t, k);
                    guid_value(t, &g);
                    vend(sp, t, k);
                }
            }
            break;
        case ETW_EXT_STACK_TRACE32:
        case ETW_EXT_STACK_TRACE64: stacks = !no_stack; break;
        case ETW_EXT_STACK_KEY32:
        case ETW_EXT_STACK_KEY64: keys = 1; break;
        default: break;
        }
    }
    for (pos = 0; stacks && etw_event_next_ext(ev, &pos, &it) == ETW_OK;) {
        if ((it.type != ETW_EXT_STACK_TRACE32 && it.type != ETW_EXT_STACK_TRACE64) || it.size < 8) continue;
        uint64_t match = etw_le64(it.data);
        if (nstack++ == 0) {
            key(t, "stack");
            vbegin(sp, t, ETW_JK_STACK);
            stack_addresses(t, &it);
            vend(sp, t, ETW_JK_STACK);
            if (match) {
                key(t, "stack_match_id");
                hex_value(t, match);
            }
            continue;
        }
        if (nstack == 2) key(t, "more_stacks");
        etw_text_puts(t, nstack == 2 ? "[{" : ",{");
        if (match) {
            etw_text_puts(t, "\"match_id\":");
            hex_value(t, match);
            etw_text_putc(t, ',');
        }
        etw_text_puts(t, "\"stack\":");
        stack_addresses(t, &it);
        etw_text_putc(t, '}');
    }
    if (nstack > 1) etw_text_putc(t, ']');
    for (pos = 0; keys && etw_event_next_ext(ev, &pos, &it) == ETW_OK;) {
        uint64_t k;
        if ((it.type != ETW_EXT_STACK_KEY32 && it.type != ETW_EXT_STACK_KEY64) || !stack_key_of(&it, &k)) continue;
        uint64_t match = etw_le64(it.data);
        if (nkey++ == 0) {
            key(t, "stack_key");
            hex_value(t, k);
            if (match) {
                key(t, "stack_key_match_id");
                hex_value(t, match);
            }
            continue;
        }
        if (nkey == 2) key(t, "more_stack_keys");
        etw_text_puts(t, nkey == 2 ? "[{" : ",{");
        if (match) {
            etw_text_puts(t, "\"match_id\":");
            hex_value(t, match);
            etw_text_putc(t, ',');
        }
        etw_text_puts(t, "\"stack_key\":");
        hex_value(t, k);
        etw_text_putc(t, '}');
    }
    if (nkey > 1) etw_text_putc(t, ']');
}

/* "stack" from the caller (etw_json_options.stack): frame labels. */
static void caller_stack(etw_json *j, etw_text *t, const etw_event *ev, etw_json_spans *sp) {
    const etw_json_frame *fr = NULL;
    size_t n = j->opt.stack(j->opt.stack_ctx, ev, &fr);
    if (!n || !fr) return;
    key(t, "stack");
    vbegin(sp, t, ETW_JK_STACK);
    etw_text_putc(t, '[');
    for (size_t i = 0; i < n; i++) {
        if (i) etw_text_putc(t, ',');
        etw_text_json_utf8(t, fr[i].s, fr[i].len);
    }
    etw_text_putc(t, ']');
    vend(sp, t, ETW_JK_STACK);
}

/* The memo slot that holds ev's descriptor keys, or NULL. Only for events
 * whose names come from the schema alone (no extended items, so no provider
 * traits: etw_event_names_get takes both names from the schema). */
static seg *seg_find(etw_json *j, const etw_event *ev, const etw_schema *s, int *hit) {
    *hit = 0;
    if (!j->segs || !s || ev->ext_count || ev->is_logfile_header || !s->provider_name || !s->event_name)
        return NULL;
    seg *g = &j->segs[s->id % SEG_SLOTS];
    *hit = g->schema == s && g->schema_id == s->id && g->id == ev->id && g->version == ev->version && g->level == ev->level &&
           g->opcode == ev->opcode && g->task == ev->task && g->channel == ev->channel &&
           g->keywords == ev->keywords && etw_guid_equal(&g->provider, &ev->provider);
    return g;
}

static void seg_keep(seg *g, const etw_event *ev, const etw_schema *s, const char *text, size_t n,
                     const etw_json_spans *sp, size_t start) {
    g->made++;
    if (n > SEG_MAX) {
        g->schema = NULL;
        return;
    }
    g->schema = s;
    g->schema_id = s->id;
    g->provider = ev->provider;
    g->keywords = ev->keywords;
    g->id = ev->id;
    g->task = ev->task;
    g->version = ev->version;
    g->level = ev->level;
    g->opcode = ev->opcode;
    g->channel = ev->channel;
    g->len = (uint16_t)n;
    memcpy(g->text, text, n);
    for (int k = ETW_JK_PROVIDER; sp && k <= ETW_JK_KEYWORDS; k++) {
        g->voff[k - ETW_JK_PROVIDER] = (uint16_t)(sp->off[k] - start);
        g->vlen[k - ETW_JK_PROVIDER] = (uint16_t)sp->len[k];
    }
}

/* python/etwdecode/_native.c (event_obj) builds the same event as a Python
 * dict: a change here needs the same change there (python/tests compare the
 * two on every trace). */
etw_status etw_json_event(etw_json *j, const etw_reader *r, const etw_event *ev,
                          const char **line, size_t *len) {
    return etw_json_event_spans(j, r, ev, line, len, NULL);
}

etw_status etw_json_event_spans(etw_json *j, const etw_reader *r, const etw_event *ev, const char **line,
                                size_t *len, etw_json_spans *sp) {
    if (!j || !ev || !line || !len) return ETW_E_INVALID_ARG;
    etw_json_spans own; /* the memo keeps the spans of its keys: always record them */
    if (!sp) {
        sp = &own;
        own.fields = NULL;
        own.cap = 0;
        own.no_time = 0;
        own.no_drive = 0;
        own.no_keys = 0;
    }
    {
        memset(sp->len, 0, sizeof sp->len);
        sp->n = 0;
        sp->complete = 0;
        sp->schema = NULL;
    }
    etw_text *t = &j->text;
    etw_text_clear(t);
    const etw_schema *schema = NULL;
    const char *error = NULL;
    if (j->opt.decoder && !ev->is_logfile_header)
        etw_decoder_resolve(j->opt.decoder, ev, &schema, &error);
    if (sp) sp->schema = schema;
    etw_text_puts(t, "{\"time\":");
    vbegin(sp, t, ETW_JK_TIME);
    if (sp->no_time) etw_text_puts(t, "null");
    else time_value(t, ev->timestamp);
    vend(sp, t, ETW_JK_TIME);
    if (j->file) {
        skey(sp, t, "file");
        vbegin(sp, t, ETW_JK_FILE);
        etw_text_json_utf8(t, j->file, strlen(j->file));
        vend(sp, t, ETW_JK_FILE);
    }
    int hit;
    seg *g = seg_find(j, ev, schema, &hit);
    size_t seg_start = t->len;
    if (sp) sp->seg = 0;
    if (hit) {
        if (sp) sp->seg = (uint64_t)g->made << 8 | (uint64_t)(g - j->segs + 1);
        etw_text_put(t, g->text, g->len);
        for (int k = ETW_JK_PROVIDER; sp && k <= ETW_JK_KEYWORDS; k++) {
            sp->off[k] = seg_start + g->voff[k - ETW_JK_PROVIDER];
            sp->len[k] = g->vlen[k - ETW_JK_PROVIDER];
        }
        goto ids;
    }
    etw_event_names names;
    etw_event_names_get(ev, schema, &names);
    key(t, "provider");
    vbegin(sp, t, ETW_JK_PROVIDER);
    etw_text_json_utf8(t, names.provider, names.provider_len);
    vend(sp, t, ETW_JK_PROVIDER);
    key(t, "provider_guid");
    vbegin(sp, t, ETW_JK_PROVIDER_GUID);
    guid_value(t, &ev->provider);
    vend(sp, t, ETW_JK_PROVIDER_GUID);
    key(t, "event");
    vbegin(sp, t, ETW_JK_EVENT);
    etw_text_json_utf8(t, names.event, names.event_len);
    vend(sp, t, ETW_JK_EVENT);
    static const char *const desc_keys[] = {"id", "version", "level", "opcode", "task", "channel"};
    const uint64_t desc[] = {ev->id, ev->version, ev->level, ev->opcode, ev->task, ev->channel};
    for (int i = 0; i < 6; i++) {
        key(t, desc_keys[i]);
        vbegin(sp, t, ETW_JK_ID + i);
        etw_text_u64(t, desc[i]);
        vend(sp, t, ETW_JK_ID + i);
    }
    key(t, "keywords");
    vbegin(sp, t, ETW_JK_KEYWORDS);
    etw_text_putc(t, '"');
    etw_text_hex16(t, ev->keywords);
    etw_text_putc(t, '"');
    vend(sp, t, ETW_JK_KEYWORDS);
    if (g && etw_text_status(t) == ETW_OK)
        seg_keep(g, ev, schema, t->data + seg_start, t->len - seg_start, sp, seg_start);
ids:;
    uint32_t pid, tid;
    etw_decoder_event_ids(j->opt.decoder, ev, schema, &pid, &tid);
    skey(sp, t, "pid");
    vbegin(sp, t, ETW_JK_PID);
    id_value(t, pid);
    vend(sp, t, ETW_JK_PID);
    const char *pname;
    size_t pname_len;
    if (etw_decoder_process_name(j->opt.decoder, ev, schema, pid, &pname, &pname_len)) {
        skey(sp, t, "process");
        vbegin(sp, t, ETW_JK_PROCESS);
        etw_text_json_utf8(t, pname, pname_len);
        vend(sp, t, ETW_JK_PROCESS);
    }
    skey(sp, t, "tid");
    vbegin(sp, t, ETW_JK_TID);
    id_value(t, tid);
    vend(sp, t, ETW_JK_TID);
    skey(sp, t, "cpu");
    vbegin(sp, t, ETW_JK_CPU);
    etw_text_u64(t, ev->cpu);
    vend(sp, t, ETW_JK_CPU);
    skey(sp, t, "data_len");
    vbegin(sp, t, ETW_JK_DATA_LEN);
    etw_text_u64(t, ev->user_data_len);
    vend(sp, t, ETW_JK_DATA_LEN);
    if (ev->has_activity_id && !etw_guid_is_zero(&ev->activity_id)) {
        skey(sp, t, "activity_id");
        vbegin(sp, t, ETW_JK_ACTIVITY);
        guid_value(t, &ev->activity_id);
        vend(sp, t, ETW_JK_ACTIVITY);
    }
    ext_fields(t, ev, sp, j->opt.stack != NULL);
    if (j->opt.stack) caller_stack(j, t, ev, sp);
    skey(sp, t, "fields");
    vbegin(sp, t, ETW_JK_FIELDS);
    int decoded = 0;
    if (ev->is_logfile_header && r) {
        logfile_fields(t, etw_reader_logfile(r));
        decoded = 1;
    } else if (schema && etw_decoder_is_manifest_event(ev) && manifest_fields(t, ev)) {
        decoded = 1;
    } else if (schema) {
        uint64_t *refs;
        size_t nrefs;
        uint32_t trailing = 0;
        etw_decoder_scratch(j->opt.decoder, &refs, &nrefs);
        unsigned ff = (j->opt.int64_as_string ? ETW_FIELDS_INT64_AS_STRING : 0) |
                      (sp->no_keys ? ETW_FIELDS_NO_KEYS : 0);
        etw_status fs = etw_fields_json_spans(t, schema, ev, refs, nrefs, &trailing, sp, ff,
                                              sp->no_drive ? NULL : j->opt.decoder);
        if (fs != ETW_OK) return fs;
        vend(sp, t, ETW_JK_FIELDS);
        if (!error) error = etw_decoder_payload_problem(j->opt.decoder, ev, schema, trailing);
        decoded = 1;
        if (schema->wpp) {
            /* WPP: the message is what its users read: always written */
            etw_text_clear(&j->scratch);
            j->wpp_why[0] = 0;
            etw_status ms = etw_wpp_format_text(&j->scratch, schema->wpp, ev, j->wpp_why, sizeof j->wpp_why);
            if (ms == ETW_E_NOMEM) return ms;
            if (ms == ETW_OK || ms == ETW_E_LIMIT) {
                skey(sp, t, "message");
                vbegin(sp, t, ETW_JK_MESSAGE);
                etw_text_json_utf8(t, j->scratch.data, j->scratch.len);
                vend(sp, t, ETW_JK_MESSAGE);
                if (ms == ETW_E_LIMIT) {
                    key(t, "message_cut");
                    etw_text_puts(t, "true");
                }
            } else {
                error = j->wpp_why; /* names the message and the argument */
            }
        } else if (j->opt.messages && schema->message) {
            size_t mark = t->len;
            skey(sp, t, "message");
            vbegin(sp, t, ETW_JK_MESSAGE);
            etw_status ms = etw_message_json(t, &j->scratch, schema, ev, refs, nrefs);
            if (ms == ETW_E_NOMEM) return ms;
            vend(sp, t, ETW_JK_MESSAGE);
            if (ms == ETW_E_LIMIT) { /* cut at ETW_MESSAGE_MAX bytes: say so */
                key(t, "message_cut");
                etw_text_puts(t, "true");
            } else if (ms != ETW_OK) {
                t->len = mark;
                if (sp) sp->len[ETW_JK_MESSAGE] = 0;
            }
        }
    } else {
        etw_text_puts(t, "{}");
    }
    if (sp && !sp->len[ETW_JK_FIELDS]) vend(sp, t, ETW_JK_FIELDS); /* the other forms of "fields" */
    if (error) {
        skey(sp, t, "error");
        vbegin(sp, t, ETW_JK_ERROR);
        etw_text_json_utf8(t, error, strlen(error));
        vend(sp, t, ETW_JK_ERROR);
    }
    if ((j->opt.raw_always || !decoded || error) && (ev->user_data_len || error)) {
        skey(sp, t, "raw");
        vbegin(sp, t, ETW_JK_RAW);
        etw_text_putc(t, '"');
        etw_text_bytes_hex(t, ev->user_data, ev->user_data_len);
        etw_text_putc(t, '"');
        vend(sp, t, ETW_JK_RAW);
    }
    etw_text_puts(t, "}\n");
    etw_status s = etw_text_status(t);
    if (s != ETW_OK) return s;
    *line = t->data;
    *len = t->len;
    return ETW_OK;
}

etw_status etw_json_time(int64_t filetime, char s[ETW_TIME_STRING_SIZE]) {
    etw_text t;
    etw_text_init(&t, NULL);
    etw_status st = etw_text_filetime(&t, filetime);
    if (st == ETW_OK) st = etw_text_status(&t);
    if (st == ETW_OK && t.len < ETW_TIME_STRING_SIZE) {
        memcpy(s, t.data, t.len);
        s[t.len] = '\0';
    } else {
        memcpy(s, "null", 5);
        if (st == ETW_OK) st = ETW_E_CORRUPT;
    }
    etw_text_free(&t);
    return st;
}
