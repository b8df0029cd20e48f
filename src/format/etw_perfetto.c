/* etw_perfetto.c - the Trace Event Format timeline (etw_perfetto.h).
 *
 * Each event is first written as the contract's JSON (etw_json, with the
 * spans of its keys recorded: etw_json_spans.h); the trace events take their
 * names, values and args from those spans, so what the timeline shows is
 * exactly what etwdump's JSON says. The pairing state (open processes,
 * threads, GC pauses and GCs, disk lanes) lives in two open-addressing
 * tables that grow by doubling up to their bounds. */
#include "etwdecode/etw_perfetto.h"

#include <string.h>

#include "../common/etw_alloc.h"
#include "etw_jscan.h"
#include "etw_json_spans.h"
#include "etw_text.h"

/* Top-level fields recorded per event (an event with more is read from its
 * "fields" span instead). */
#define MAX_FIELDS 256
/* GCs started and not yet ended, per process (a background GC and the
 * foreground GCs inside it). */
#define GC_PENDING 4
/* Longest JSON value text (a GC reason or type) kept for a span's args. */
#define ARG_TEXT 48
/* The process of events without one (a multiple of 4, as Windows ids). */
#define NO_PROCESS 0xFFFFFFFCu

/* The writer's own tracks: tid = pid + these (Windows ids are multiples of
 * 4, so the sums never name a real thread). */
#define TRACK_GC 1u
#define TRACK_PROCESS 3u
#define TRACK_PAUSE 5u
#define TRACK_DISK(k) (2u + 4u * (uint32_t)(k))

/* The bits of proc.tracks_named. */
#define NAMED_GC 1u
#define NAMED_PROCESS 2u
#define NAMED_PAUSE 4u

typedef struct pending_gc {
    uint64_t count;
    int64_t start;
    char depth[ARG_TEXT], reason[ARG_TEXT], type[ARG_TEXT];
    uint8_t depth_len, reason_len, type_len;
} pending_gc;

typedef struct proc {
    uint32_t pid;
    uint8_t used;
    uint8_t open;        /* a lifetime span is open since start */
    uint8_t named;       /* 0: no process_name yet; 1: "pid N"; 2: its image name */
    uint8_t tracks_named;
    uint8_t pause_open;
    uint8_t pause_reason_len;
    uint8_t ngc;
    uint8_t name_len;    /* name: its JSON string (quotes included), 0: none kept */
    uint16_t lanes_named;
    char name[64];
    int64_t start;
    int64_t pause_start;
    char pause_reason[ARG_TEXT];
    pending_gc gc[GC_PENDING];
    int64_t lane_end[ETW_PERFETTO_DISK_LANES];
} proc;

typedef struct thread {
    uint32_t tid;
    uint32_t pid;
    uint8_t used;
    uint8_t open;
    int64_t start;
} thread;

struct etw_perfetto {
    etw_allocator alloc;
    etw_perfetto_options opt;
    etw_json *json;
    etw_text out;
    etw_json_spans sp;
    etw_field_span fields[MAX_FIELDS];
    const char *line; /* the current event's JSON */
    size_t line_len;
    proc *procs;
    size_t proc_cap, proc_used;
    thread *threads;
    size_t thread_cap, thread_used;
    int64_t last; /* latest event time given */
    int any_time;
    int first;    /* no trace event written yet */
    int finished;
    etw_perfetto_stats stats;
};

/* ---- the GUIDs the mapping knows ---------------------------------------- */

static const etw_guid G_PROCESS = {0x3d6fa8d0, 0xfe05, 0x11d0, {0x9d, 0xda, 0x00, 0xc0, 0x4f, 0xd7, 0xba, 0x7c}};
static const etw_guid G_THREAD = {0x3d6fa8d1, 0xfe05, 0x11d0, {0x9d, 0xda, 0x00, 0xc0, 0x4f, 0xd7, 0xba, 0x7c}};
static const etw_guid G_DISKIO = {0x3d6fa8d4, 0xfe05, 0x11d0, {0x9d, 0xda, 0x00, 0xc0, 0x4f, 0xd7, 0xba, 0x7c}};
static const etw_guid G_PERFINFO = {0xce1dbfb4, 0x137e, 0x4da6, {0x87, 0xb0, 0x3f, 0x59, 0xaa, 0x10, 0x2c, 0xbc}};
/* Microsoft-Windows-DotNETRuntime */
static const etw_guid G_CLR = {0xe13c0d23, 0xccbc, 0x4e12, {0x93, 0x1b, 0xd9, 0xcc, 0x2e, 0xee, 0x27, 0xe4}};

/* ---- tables -------------------------------------------------------------- */

static size_t hash32(uint32_t k, size_t cap) {
    uint32_t h = k * 0x9E3779B1u;
    h ^= h >> 15;
    return h & (cap - 1);
}

/* The entry of pid, made when absent (NULL: the table is at its bound or no
 * memory; ETW_E_NOMEM is then told by *nomem). */
static proc *proc_get(etw_perfetto *pf, uint32_t pid, int *nomem) {
    if (pf->proc_cap) {
        for (size_t i = hash32(pid, pf->proc_cap);; i = (i + 1) & (pf->proc_cap - 1)) {
            if (!pf->procs[i].used) break;
            if (pf->procs[i].pid == pid) return &pf->procs[i];
        }
    }
    if (pf->proc_used + 1 > ETW_PERFETTO_MAX_PROCESSES) return NULL;
    if ((pf->proc_used + 1) * 2 > pf->proc_cap) {
        size_t ncap = pf->proc_cap ? pf->proc_cap * 2 : 64;
        proc *n = etw_calloc(&pf->alloc, ncap, sizeof *n);
        if (!n) {
            *nomem = 1;
            return NULL;
        }
        for (size_t j = 0; j < pf->proc_cap; j++) {
            if (!pf->procs[j].used) continue;
            size_t i = hash32(pf->procs[j].pid, ncap);
            while (n[i].used) i = (i + 1) & (ncap - 1);
            n[i] = pf->procs[j];
        }
        etw_free(&pf->alloc, pf->procs);
        pf->procs = n;
        pf->proc_cap = ncap;
    }
    size_t i = hash32(pid, pf->proc_cap);
    while (pf->procs[i].used) i = (i + 1) & (pf->proc_cap - 1);
    memset(&pf->procs[i], 0, sizeof pf->procs[i]);
    pf->procs[i].used = 1;
    pf->procs[i].pid = pid;
    pf->proc_used++;
    return &pf->procs[i];
}

static thread *thread_get(etw_perfetto *pf, uint32_t tid, int *nomem) {
    if (pf->thread_cap) {
        for (size_t i = hash32(tid, pf->thread_cap);; i = (i + 1) & (pf->thread_cap - 1)) {
            if (!pf->threads[i].used) break;
            if (pf->threads[i].tid == tid) return &pf->threads[i];
        }
    }
    if (pf->thread_used + 1 > ETW_PERFETTO_MAX_THREADS) return NULL;
    if ((pf->thread_used + 1) * 2 > pf->thread_cap) {
        size_t ncap = pf->thread_cap ? pf->thread_cap * 2 : 256;
        thread *n = etw_calloc(&pf->alloc, ncap, sizeof *n);
        if (!n) {
            *nomem = 1;
            return NULL;
        }
        for (size_t j = 0; j < pf->thread_cap; j++) {
            if (!pf->threads[j].used) continue;
            size_t i = hash32(pf->threads[j].tid, ncap);
            while (n[i].used) i = (i + 1) & (ncap - 1);
            n[i] = pf->threads[j];
        }
        etw_free(&pf->alloc, pf->threads);
        pf->threads = n;
        pf->thread_cap = ncap;
    }
    size_t i = hash32(tid, pf->thread_cap);
    while (pf->threads[i].used) i = (i + 1) & (pf->thread_cap - 1);
    memset(&pf->threads[i], 0, sizeof pf->threads[i]);
    pf->threads[i].used = 1;
    pf->threads[i].tid = tid;
    pf->thread_used++;
    return &pf->threads[i];
}

/* ---- the current event's values ------------------------------------------ */

/* The JSON value of a fixed key (NULL when absent). */
static const char *key_value(const etw_perfetto *pf, int k, size_t *n) {
    if (!pf->sp.len[k]) return NULL;
    *n = pf->sp.len[k];
    return pf->line + pf->sp.off[k];
}

/* The JSON value text of the top-level field name (NULL when absent). */
static const char *field(const etw_perfetto *pf, const char *name, size_t *n) {
    size_t nl = strlen(name);
    for (size_t i = 0; i < pf->sp.n; i++) {
        const etw_field_span *f = &pf->sp.fields[i];
        if (f->name && !strcmp(f->name, name)) {
            *n = f->val_len;
            return pf->line + f->val_off;
        }
    }
    if (pf->sp.complete) return NULL;
    size_t fl;
    const char *fs = key_value(pf, ETW_JK_FIELDS, &fl);
    if (!fs || fs[0] != '{') return NULL;
    size_t pos = 0;
    etw_jmember m;
    while (etw_jscan_next_member(fs, fl, &pos, &m))
        if (etw_jscan_key_is(m.key, m.key_len, name, nl)) {
            *n = m.value_len;
            return m.value;
        }
    return NULL;
}

/* A field's value as an unsigned integer (decimal, or "0x..." hex as the
 * JSON writes pointers and flags); 0 when absent or not a number. */
static uint64_t field_u64(const etw_perfetto *pf, const char *name, int *found) {
    size_t n;
    const char *v = field(pf, name, &n);
    *found = 0;
    if (!v || !n) return 0;
    size_t i = 0;
    if (v[0] == '"') i = 1;
    uint64_t x = 0;
    int digits = 0;
    if (i + 1 < n && v[i] == '0' && (v[i + 1] == 'x' || v[i + 1] == 'X')) {
        for (i += 2; i < n; i++) {
            char c = v[i];
            unsigned d = c >= '0' && c <= '9' ? (unsigned)(c - '0')
                         : c >= 'a' && c <= 'f' ? (unsigned)(c - 'a' + 10)
                         : c >= 'A' && c <= 'F' ? (unsigned)(c - 'A' + 10)
                                                : 16u;
            if (d == 16) break;
            x = x << 4 | d;
            digits = 1;
        }
    } else {
        for (; i < n && v[i] >= '0' && v[i] <= '9'; i++) {
            x = x * 10 + (uint64_t)(v[i] - '0');
            digits = 1;
        }
    }
    *found = digits;
    return x;
}

/* Keep a field's value text (when it fits) for a span's args later. */
static uint8_t keep_field(const etw_perfetto *pf, const char *name, char dst[ARG_TEXT]) {
    size_t n;
    const char *v = field(pf, name, &n);
    if (!v || n > ARG_TEXT) return 0;
    memcpy(dst, v, n);
    return (uint8_t)n;
}

/* ---- writing ------------------------------------------------------------- */

/* Microseconds from the origin, one decimal: ticks are 100 ns. */
static void put_us(etw_text *t, int64_t ticks) {
    uint64_t a;
    if (ticks < 0) {
        etw_text_putc(t, '-');
        a = (uint64_t)(-(ticks + 1)) + 1u;
    } else {
        a = (uint64_t)ticks;
    }
    etw_text_u64(t, a / 10u);
    if (a % 10u) {
        etw_text_putc(t, '.');
        etw_text_putc(t, (char)('0' + (int)(a % 10u)));
    }
}

/* The start of one trace event, up to and including "ts". name is written
 * as given when quoted, else as a JSON string. */
static void begin(etw_perfetto *pf, const char *ph, const char *cat, uint32_t pid, uint32_t tid, int64_t at) {
    etw_text *t = &pf->out;
    etw_text_puts(t, pf->first ? "\n{\"ph\":\"" : ",\n{\"ph\":\"");
    pf->first = 0;
    etw_text_puts(t, ph);
    etw_text_puts(t, "\"");
    if (cat) {
        etw_text_puts(t, ",\"cat\":\"");
        etw_text_puts(t, cat);
        etw_text_puts(t, "\"");
    }
    etw_text_puts(t, ",\"pid\":");
    etw_text_u64(t, pid);
    etw_text_puts(t, ",\"tid\":");
    etw_text_u64(t, tid);
    etw_text_puts(t, ",\"ts\":");
    put_us(t, at - pf->opt.time_origin);
}

/* "Provider/Event" from the current event's JSON strings (both valid JSON
 * string texts: the join is one). */
static void put_event_name(etw_perfetto *pf) {
    etw_text *t = &pf->out;
    size_t pl = 0, el = 0;
    const char *p = key_value(pf, ETW_JK_PROVIDER, &pl);
    const char *e = key_value(pf, ETW_JK_EVENT, &el);
    if (p && pl >= 2 && p[0] == '"') etw_text_put(t, p, pl - 1);
    else etw_text_puts(t, "\"?");
    etw_text_putc(t, '/');
    if (e && el >= 2 && e[0] == '"') etw_text_put(t, e + 1, el - 1);
    else etw_text_puts(t, "?\"");
}

/* A metadata event: process_name/thread_name with args.name. quoted: the
 * name is already a JSON string value. */
static void metadata(etw_perfetto *pf, const char *what, uint32_t pid, uint32_t tid, int64_t at, const char *name,
                     size_t n, int quoted) {
    begin(pf, "M", NULL, pid, tid, at);
    etw_text *t = &pf->out;
    etw_text_puts(t, ",\"name\":\"");
    etw_text_puts(t, what);
    etw_text_puts(t, "\",\"args\":{\"name\":");
    if (quoted) etw_text_put(t, name, n);
    else etw_text_json_utf8(t, name, n);
    etw_text_puts(t, "}}");
}

static void name_track(etw_perfetto *pf, uint32_t pid, uint32_t tid, int64_t at, const char *name) {
    metadata(pf, "thread_name", pid, tid, at, name, strlen(name), 0);
}

/* process_name for pid: its image name when the event tells it, else
 * "pid N" the first time. */
static void name_process(etw_perfetto *pf, proc *p, uint32_t pid, int64_t at) {
    if (!p || p->named == 2) return;
    size_t n;
    const char *v = key_value(pf, ETW_JK_PROCESS, &n);
    if (v && n >= 2 && v[0] == '"') {
        metadata(pf, "process_name", pid, pid, at, v, n, 1);
        p->named = 2;
        if (n <= sizeof p->name) { /* for its lifetime span at the trace end */
            memcpy(p->name, v, n);
            p->name_len = (uint8_t)n;
        }
    } else if (!p->named) {
        char buf[32];
        size_t k = 0;
        if (pid == NO_PROCESS) {
            memcpy(buf, "(no process)", 12);
            k = 12;
        } else {
            char d[12];
            size_t nd = 0;
            uint32_t x = pid;
            do d[nd++] = (char)('0' + x % 10); while ((x /= 10) && nd < sizeof d);
            memcpy(buf, "pid ", 4);
            k = 4;
            while (nd) buf[k++] = d[--nd];
        }
        metadata(pf, "process_name", pid, pid, at, buf, k, 0);
        p->named = 1;
    }
}

/* The args of an instant: the event's fields (an object), with "stack"
 * and "error" added when the event has them and the fields do not use
 * those names. */
static void put_event_args(etw_perfetto *pf) {
    etw_text *t = &pf->out;
    size_t fl = 0, sl = 0, el = 0, dummy;
    const char *f = key_value(pf, ETW_JK_FIELDS, &fl);
    const char *s = key_value(pf, ETW_JK_STACK, &sl);
    const char *e = key_value(pf, ETW_JK_ERROR, &el);
    if (s && field(pf, "stack", &dummy)) s = NULL;
    if (e && field(pf, "error", &dummy)) e = NULL;
    int has_members = 0;
    etw_text_puts(t, ",\"args\":");
    if (f && fl >= 2 && f[0] == '{') {
        etw_text_put(t, f, fl - 1); /* without its '}' */
        for (size_t i = 1; i + 1 < fl; i++)
            if (f[i] != ' ' && f[i] != '\n' && f[i] != '\t' && f[i] != '\r') {
                has_members = 1;
                break;
            }
    } else {
        etw_text_putc(t, '{');
    }
    if (s) {
        etw_text_puts(t, has_members ? ",\"stack\":" : "\"stack\":");
        etw_text_put(t, s, sl);
        has_members = 1;
    }
    if (e) {
        etw_text_puts(t, has_members ? ",\"error\":" : "\"error\":");
        etw_text_put(t, e, el);
    }
    etw_text_putc(t, '}');
}

static void instant(etw_perfetto *pf, const char *cat, uint32_t pid, uint32_t tid, int64_t at) {
    begin(pf, "i", cat, pid, tid, at);
    etw_text *t = &pf->out;
    etw_text_puts(t, ",\"s\":\"t\",\"name\":");
    put_event_name(pf);
    put_event_args(pf);
    etw_text_puts(t, "}");
    pf->stats.instants++;
}

/* The start of a span ("X") from start to the current event; the caller
 * writes the name and then args members after "args":{"end_event":...
 * and closes with "}}" (span_end). */
static void span_begin(etw_perfetto *pf, const char *cat, uint32_t pid, uint32_t tid, int64_t start, int64_t end) {
    if (end < start) end = start;
    begin(pf, "X", cat, pid, tid, start);
    etw_text_puts(&pf->out, ",\"dur\":");
    put_us(&pf->out, end - start);
}

static void span_args_end_event(etw_perfetto *pf) {
    etw_text_puts(&pf->out, ",\"args\":{\"end_event\":");
    put_event_name(pf);
    pf->stats.span_ends++;
}

static void arg_text(etw_text *t, const char *key, const char *v, size_t n) {
    if (!v || !n) return;
    etw_text_puts(t, ",\"");
    etw_text_puts(t, key);
    etw_text_puts(t, "\":");
    etw_text_put(t, v, n);
}

static void arg_field(etw_perfetto *pf, const char *key, const char *name) {
    size_t n;
    const char *v = field(pf, name, &n);
    arg_text(&pf->out, key, v, n);
}

/* The process name of a lifetime span: the event's "process", else "pid N". */
static void put_process_span_name(etw_perfetto *pf, uint32_t pid) {
    size_t n;
    const char *v = key_value(pf, ETW_JK_PROCESS, &n);
    etw_text_puts(&pf->out, ",\"name\":");
    if (v && n >= 2 && v[0] == '"') {
        etw_text_put(&pf->out, v, n);
    } else {
        etw_text_puts(&pf->out, "\"pid ");
        etw_text_u64(&pf->out, pid);
        etw_text_putc(&pf->out, '"');
    }
}

static void process_track(etw_perfetto *pf, proc *p, uint32_t pid, int64_t at) {
    if (p && !(p->tracks_named & NAMED_PROCESS)) {
        name_track(pf, pid, pid + TRACK_PROCESS, at, "Process");
        p->tracks_named |= NAMED_PROCESS;
    }
}

/* ---- the kinds of events -------------------------------------------------- */

static etw_status on_process(etw_perfetto *pf, const etw_event *ev, proc *p, uint32_t pid) {
    int64_t at = ev->timestamp;
    uint32_t track = pid + TRACK_PROCESS;
    process_track(pf, p, pid, at);
    if (ev->opcode == 1 || ev->opcode == 3) { /* Start, DCStart */
        if (p && !p->open) {
            p->open = 1;
            p->start = ev->opcode == 1 ? at : pf->opt.time_origin;
        }
        if (!p) pf->stats.untracked++;
        instant(pf, "marker", pid, track, at);
        return ETW_OK;
    }
    /* End, DCEnd: a process not seen starting ran since before the trace */
    if (!p) {
        pf->stats.untracked++;
        instant(pf, "marker", pid, track, at);
        return ETW_OK;
    }
    int64_t start = p->open ? p->start : pf->opt.time_origin;
    p->open = 0;
    span_begin(pf, "process", pid, track, start, at);
    put_process_span_name(pf, pid);
    span_args_end_event(pf);
    arg_field(pf, "exit_status", "ExitStatus");
    arg_field(pf, "command_line", "CommandLine");
    etw_text_puts(&pf->out, "}}");
    return ETW_OK;
}

static etw_status on_thread(etw_perfetto *pf, const etw_event *ev, uint32_t pid, uint32_t tid) {
    int64_t at = ev->timestamp;
    int nomem = 0;
    thread *th = tid == ETW_NO_ID ? NULL : thread_get(pf, tid, &nomem);
    if (nomem) return ETW_E_NOMEM;
    uint32_t track = tid == ETW_NO_ID ? pid + TRACK_PROCESS : tid;
    if (ev->opcode == 1 || ev->opcode == 3) {
        if (th && !th->open) {
            th->open = 1;
            th->pid = pid;
            th->start = ev->opcode == 1 ? at : pf->opt.time_origin;
        }
        if (!th) pf->stats.untracked++;
        size_t n;
        const char *name = field(pf, "ThreadName", &n);
        if (tid != ETW_NO_ID && name && n > 2 && name[0] == '"')
            metadata(pf, "thread_name", pid, tid, at, name, n, 1);
        instant(pf, "marker", pid, track, at);
        return ETW_OK;
    }
    if (!th) {
        pf->stats.untracked++;
        instant(pf, "marker", pid, track, at);
        return ETW_OK;
    }
    int64_t start = th->open ? th->start : pf->opt.time_origin;
    th->open = 0;
    span_begin(pf, "thread", pid, tid, start, at);
    etw_text_puts(&pf->out, ",\"name\":\"Thread\"");
    span_args_end_event(pf);
    etw_text_puts(&pf->out, ",\"tid\":");
    etw_text_u64(&pf->out, tid);
    etw_text_puts(&pf->out, "}}");
    return ETW_OK;
}

static etw_status on_disk(etw_perfetto *pf, const etw_reader *r, const etw_event *ev, proc *p, uint32_t pid) {
    int64_t end = ev->timestamp;
    int found;
    uint64_t hr = field_u64(pf, "HighResResponseTime", &found);
    int64_t freq = 0;
    const etw_logfile_header *h = r ? etw_reader_logfile(r) : NULL;
    if (h) freq = h->perf_freq;
    if (freq <= 0) freq = 10000000; /* 100 ns units */
    /* the elapsed time in 100 ns ticks; at most ~3 years (a hostile value
     * cannot overflow the start) */
    double el = (double)hr * 1e7 / (double)freq;
    if (!(el >= 0)) el = 0;
    if (el > 1e15) el = 1e15;
    int64_t ticks = (int64_t)(el + 0.5);
    int64_t start = end - ticks;
    unsigned lane = 0;
    if (p) {
        unsigned best = 0;
        int chosen = 0;
        for (unsigned k = 0; k < ETW_PERFETTO_DISK_LANES; k++) {
            if (p->lane_end[k] <= start) {
                lane = k;
                chosen = 1;
                break;
            }
            if (p->lane_end[k] < p->lane_end[best]) best = k;
        }
        if (!chosen) lane = best;
        if (p->lane_end[lane] < end) p->lane_end[lane] = end;
        if (!(p->lanes_named & (1u << lane))) {
            char nm[16] = "Disk I/O ";
            nm[9] = (char)(lane >= 10 ? '1' : '0' + lane);
            if (lane >= 10) {
                nm[10] = (char)('0' + lane - 10);
                nm[11] = 0;
            } else {
                nm[10] = 0;
            }
            name_track(pf, pid, pid + TRACK_DISK(lane), end, nm);
            p->lanes_named |= (uint16_t)(1u << lane);
        }
    }
    span_begin(pf, "disk", pid, pid + TRACK_DISK(lane), start, end);
    etw_text_puts(&pf->out, ",\"name\":");
    put_event_name(pf);
    span_args_end_event(pf);
    arg_field(pf, "bytes", "TransferSize");
    arg_field(pf, "offset", "ByteOffset");
    arg_field(pf, "disk", "DiskNumber");
    arg_field(pf, "file_object", "FileObject");
    arg_field(pf, "irp", "Irp");
    arg_field(pf, "irp_flags", "IrpFlags");
    etw_text_puts(&pf->out, "}}");
    return ETW_OK;
}

static void gc_track(etw_perfetto *pf, proc *p, uint32_t pid, int64_t at, unsigned bit) {
    if (p->tracks_named & bit) return;
    name_track(pf, pid, pid + (bit == NAMED_GC ? TRACK_GC : TRACK_PAUSE), at,
               bit == NAMED_GC ? "CLR GCs" : "CLR GC pauses");
    p->tracks_named |= (uint8_t)bit;
}

/* CLR GC events; 1 when the event was written (a span end), 0 when it is
 * to be an instant. */
static int on_clr_gc(etw_perfetto *pf, const etw_event *ev, proc *p, uint32_t pid) {
    int64_t at = ev->timestamp;
    int found;
    switch (ev->id) {
    case 9: /* GCSuspendEEBegin */
        p->pause_open = 1;
        p->pause_start = at;
        p->pause_reason_len = keep_field(pf, "Reason", p->pause_reason);
        return 0;
    case 3: /* GCRestartEEEnd */
        if (!p->pause_open) return 0;
        p->pause_open = 0;
        gc_track(pf, p, pid, at, NAMED_PAUSE);
        span_begin(pf, "gc-pause", pid, pid + TRACK_PAUSE, p->pause_start, at);
        etw_text_puts(&pf->out, ",\"name\":\"GC pause\"");
        span_args_end_event(pf);
        arg_text(&pf->out, "reason", p->pause_reason, p->pause_reason_len);
        etw_text_puts(&pf->out, "}}");
        return 1;
    case 1: { /* GCStart */
        uint64_t count = field_u64(pf, "Count", &found);
        if (p->ngc == GC_PENDING) { /* the oldest is given up */
            memmove(&p->gc[0], &p->gc[1], (GC_PENDING - 1) * sizeof p->gc[0]);
            p->ngc--;
        }
        pending_gc *g = &p->gc[p->ngc++];
        g->count = count;
        g->start = at;
        g->depth_len = keep_field(pf, "Depth", g->depth);
        g->reason_len = keep_field(pf, "Reason", g->reason);
        g->type_len = keep_field(pf, "Type", g->type);
        return 0;
    }
    case 2: { /* GCEnd */
        uint64_t count = field_u64(pf, "Count", &found);
        unsigned i = p->ngc;
        while (i > 0 && p->gc[i - 1].count != count) i--;
        if (!i) return 0;
        pending_gc g = p->gc[i - 1];
        memmove(&p->gc[i - 1], &p->gc[i], (p->ngc - i) * sizeof p->gc[0]);
        p->ngc--;
        gc_track(pf, p, pid, at, NAMED_GC);
        span_begin(pf, "gc", pid, pid + TRACK_GC, g.start, at);
        etw_text_puts(&pf->out, ",\"name\":\"GC");
        if (g.depth_len && g.depth[0] >= '0' && g.depth[0] <= '9') {
            etw_text_puts(&pf->out, " gen ");
            etw_text_put(&pf->out, g.depth, g.depth_len);
        }
        etw_text_putc(&pf->out, '"');
        span_args_end_event(pf);
        etw_text_puts(&pf->out, ",\"count\":");
        etw_text_u64(&pf->out, count);
        arg_text(&pf->out, "generation", g.depth, g.depth_len);
        arg_text(&pf->out, "reason", g.reason, g.reason_len);
        arg_text(&pf->out, "type", g.type, g.type_len);
        etw_text_puts(&pf->out, "}}");
        return 1;
    }
    default:
        return 0;
    }
}

/* ---- the API -------------------------------------------------------------- */

etw_status etw_perfetto_new(etw_perfetto **out, const etw_allocator *alloc, const etw_perfetto_options *opt) {
    if (!out || !opt || !opt->decoder) return ETW_E_INVALID_ARG;
    *out = NULL;
    etw_allocator a = etw_allocator_resolve(alloc);
    etw_perfetto *pf = etw_calloc(&a, 1, sizeof *pf);
    if (!pf) return ETW_E_NOMEM;
    pf->alloc = a;
    pf->opt = *opt;
    etw_json_options jo;
    memset(&jo, 0, sizeof jo);
    jo.decoder = opt->decoder;
    jo.stack = opt->stack;
    jo.stack_ctx = opt->stack_ctx;
    jo.int64_as_string = opt->int64_as_string;
    etw_status st = etw_json_new(&pf->json, &pf->alloc, &jo);
    if (st != ETW_OK) {
        etw_free(&a, pf);
        return st;
    }
    etw_text_init(&pf->out, &pf->alloc);
    pf->sp.fields = pf->fields;
    pf->sp.cap = MAX_FIELDS;
    pf->sp.no_time = 1; /* the time is ts */
    pf->first = 1;
    *out = pf;
    return ETW_OK;
}

void etw_perfetto_free(etw_perfetto *pf) {
    if (!pf) return;
    etw_json_free(pf->json);
    etw_text_free(&pf->out);
    etw_free(&pf->alloc, pf->procs);
    etw_free(&pf->alloc, pf->threads);
    etw_allocator a = pf->alloc;
    etw_free(&a, pf);
}

static etw_status give(etw_perfetto *pf, const char **out, size_t *len) {
    etw_status st = etw_text_status(&pf->out);
    if (st != ETW_OK) return st;
    *out = pf->out.data ? pf->out.data : "";
    *len = pf->out.len;
    return ETW_OK;
}

etw_status etw_perfetto_header(etw_perfetto *pf, const char **out, size_t *len) {
    if (!pf || !out || !len) return ETW_E_INVALID_ARG;
    etw_text_clear(&pf->out);
    etw_text_puts(&pf->out, "{\"traceEvents\":[");
    return give(pf, out, len);
}

etw_status etw_perfetto_event(etw_perfetto *pf, const etw_reader *r, const etw_event *ev, const char **out,
                              size_t *len) {
    if (!pf || !ev || !out || !len || pf->finished) return ETW_E_INVALID_ARG;
    etw_text_clear(&pf->out);
    etw_status st = etw_json_event_spans(pf->json, r, ev, &pf->line, &pf->line_len, &pf->sp);
    if (st != ETW_OK) return st;
    pf->stats.events++;
    uint32_t pid, tid;
    etw_decoder_event_ids(pf->opt.decoder, ev, pf->sp.schema, &pid, &tid);
    if (pid == ETW_NO_ID) pid = NO_PROCESS;
    int64_t at = ev->timestamp;
    if (!pf->any_time || at > pf->last) pf->last = at;
    pf->any_time = 1;
    int nomem = 0;
    proc *p = proc_get(pf, pid, &nomem);
    if (nomem) return ETW_E_NOMEM;
    name_process(pf, p, pid, at);
    uint32_t track = tid == ETW_NO_ID ? pid + TRACK_PROCESS : tid;
    const int kernel = ev->form != ETW_FORM_EVENT_HEADER;
    if (kernel && etw_guid_equal(&ev->provider, &G_PROCESS) && ev->opcode >= 1 && ev->opcode <= 4) {
        st = on_process(pf, ev, p, pid);
    } else if (kernel && etw_guid_equal(&ev->provider, &G_THREAD) && ev->opcode >= 1 && ev->opcode <= 4) {
        st = on_thread(pf, ev, pid, tid);
    } else if (kernel && etw_guid_equal(&ev->provider, &G_THREAD) && ev->opcode == 72 && tid != ETW_NO_ID) {
        size_t n;
        const char *name = field(pf, "ThreadName", &n);
        if (name && n > 2 && name[0] == '"') metadata(pf, "thread_name", pid, tid, at, name, n, 1);
        instant(pf, "marker", pid, track, at);
    } else if (kernel && etw_guid_equal(&ev->provider, &G_DISKIO) &&
               (ev->opcode == 10 || ev->opcode == 11 || ev->opcode == 14 || ev->opcode == 55 ||
                ev->opcode == 56 || ev->opcode == 57)) {
        st = on_disk(pf, r, ev, p, pid);
    } else if (kernel && etw_guid_equal(&ev->provider, &G_PERFINFO) && ev->opcode == 46) {
        if (tid == ETW_NO_ID) process_track(pf, p, pid, at);
        instant(pf, "sample", pid, track, at);
    } else if (!kernel && p && etw_guid_equal(&ev->provider, &G_CLR) && ev->task == 1 &&
               (ev->id == 1 || ev->id == 2 || ev->id == 3 || ev->id == 9) && on_clr_gc(pf, ev, p, pid)) {
        /* written as the end of a span */
    } else {
        if (tid == ETW_NO_ID) process_track(pf, p, pid, at);
        instant(pf, "marker", pid, track, at);
    }
    if (st != ETW_OK) return st;
    return give(pf, out, len);
}

etw_status etw_perfetto_finish(etw_perfetto *pf, const char **out, size_t *len) {
    if (!pf || !out || !len || pf->finished) return ETW_E_INVALID_ARG;
    pf->finished = 1;
    etw_text_clear(&pf->out);
    etw_text *t = &pf->out;
    int64_t end = pf->any_time ? pf->last : pf->opt.time_origin;
    for (size_t i = 0; i < pf->proc_cap; i++) {
        proc *p = &pf->procs[i];
        if (!p->used || !p->open) continue;
        span_begin(pf, "process", p->pid, p->pid + TRACK_PROCESS, p->start, end);
        etw_text_puts(t, ",\"name\":");
        if (p->name_len) {
            etw_text_put(t, p->name, p->name_len);
        } else if (p->pid == NO_PROCESS) {
            etw_text_puts(t, "\"(no process)\"");
        } else {
            etw_text_puts(t, "\"pid ");
            etw_text_u64(t, p->pid);
            etw_text_putc(t, '"');
        }
        etw_text_puts(t, ",\"args\":{\"end\":\"trace end\"}}");
        pf->stats.open_at_end++;
    }
    for (size_t i = 0; i < pf->thread_cap; i++) {
        thread *th = &pf->threads[i];
        if (!th->used || !th->open) continue;
        span_begin(pf, "thread", th->pid, th->tid, th->start, end);
        etw_text_puts(t, ",\"name\":\"Thread\",\"args\":{\"end\":\"trace end\",\"tid\":");
        etw_text_u64(t, th->tid);
        etw_text_puts(t, "}}");
        pf->stats.open_at_end++;
    }
    char start[ETW_TIME_STRING_SIZE];
    etw_json_time(pf->opt.time_origin, start);
    etw_text_puts(t, "\n],\"displayTimeUnit\":\"ms\",\"otherData\":{\"generator\":\"etwdecode\",\"trace_start\":");
    if (strcmp(start, "null")) {
        etw_text_putc(t, '"');
        etw_text_puts(t, start);
        etw_text_putc(t, '"');
    } else {
        etw_text_puts(t, "null");
    }
    etw_text_puts(t, ",\"ts_unit\":\"microseconds since trace_start\",\"events\":");
    etw_text_u64(t, pf->stats.events);
    etw_text_puts(t, ",\"instants\":");
    etw_text_u64(t, pf->stats.instants);
    etw_text_puts(t, ",\"span_ends\":");
    etw_text_u64(t, pf->stats.span_ends);
    etw_text_puts(t, ",\"spans_to_trace_end\":");
    etw_text_u64(t, pf->stats.open_at_end);
    etw_text_puts(t, ",\"untracked\":");
    etw_text_u64(t, pf->stats.untracked);
    etw_text_puts(t, "}}\n");
    return give(pf, out, len);
}

const etw_perfetto_stats *etw_perfetto_stats_get(const etw_perfetto *pf) {
    return pf ? &pf->stats : NULL;
}
