/* etw_eventsource.c - reassembly of in-trace EventSource manifests (event
 * 0xFFFE). Rules and bounds: etw_eventsource.h.
 *
 * State: one table of sequence slots, allocated once (2 x max_pending
 * slots). A slot is FREE, LIVE (an unfinished manifest: its chunks so far in
 * one buffer) or DEAD (a tombstone for a key whose run was aborted and
 * reported, so that the rest of that run is ignored without a second
 * report). At most max_pending slots are LIVE; DEAD slots are reused
 * (oldest first) when a slot is needed, so there is always room for a
 * tombstone. Lookups are linear over the table: only manifest events pay
 * for them, and there are few of those.
 */
#include "etw_eventsource.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "../common/etw_alloc.h"
#include "../common/etw_bytes.h"

enum { SEQ_FREE = 0, SEQ_LIVE = 1, SEQ_DEAD = 2 };

typedef struct es_seq {
    etw_guid provider;
    uint32_t pid, tid;
    uint8_t state;
    uint8_t format, major, minor;
    uint16_t total;  /* TotalChunks of the run */
    uint16_t next;   /* the chunk number expected next */
    uint8_t *buf;    /* chunks so far (LIVE) */
    size_t len, cap; /* bytes used / allocated (cap is what is charged) */
    uint64_t stamp;  /* LIVE: last chunk taken; DEAD: when it died */
    uint64_t offset; /* file offset of the last chunk taken */
} es_seq;

struct etw_es_assembler {
    etw_allocator alloc;
    size_t max_bytes;
    uint32_t max_pending;
    uint32_t slots; /* 2 * max_pending */
    etw_es_manifest_fn on_manifest;
    void *ctx;
    etw_diag_fn on_diag;
    void *diag_ctx;
    es_seq *seq;
    uint64_t clock;
    etw_es_stats st;
    char msg[320];
};

/* ---- small helpers ---- */

int etw_es_is_manifest_event(const etw_event *ev) {
    return ev && ev->form == ETW_FORM_EVENT_HEADER &&
           !(ev->flags & ETW_EVENT_FLAG_CLASSIC_HEADER) && ev->id == ETW_ES_MANIFEST_ID &&
           ev->task == ETW_ES_MANIFEST_TASK && ev->opcode == ETW_ES_MANIFEST_OPCODE;
}

etw_status etw_es_envelope_read(const etw_event *ev, etw_es_envelope *out) {
    if (!ev || !out) return ETW_E_INVALID_ARG;
    memset(out, 0, sizeof *out);
    if (ev->user_data_len < ETW_ES_ENVELOPE_SIZE || !ev->user_data) return ETW_E_TRUNCATED;
    const uint8_t *p = ev->user_data;
    out->format = p[0];
    out->major = p[1];
    out->minor = p[2];
    out->magic = p[3];
    out->total_chunks = etw_le16(p + 4);
    out->chunk_number = etw_le16(p + 6);
    out->payload_length = ev->user_data_len;
    return ETW_OK;
}

#if defined(__GNUC__) || defined(__clang__)
__attribute__((format(printf, 5, 6)))
#endif
static void report(etw_es_assembler *a, etw_status st, uint64_t offset, const es_seq *key,
                   const char *fmt, ...) {
    a->st.problems++;
    if (!a->on_diag) return;
    char g[ETW_GUID_STRING_SIZE];
    etw_guid_format(&key->provider, g);
    int n = snprintf(a->msg, sizeof a->msg, "EventSource manifest of provider %s (pid %u, tid %u): ",
                     g, (unsigned)key->pid, (unsigned)key->tid);
    if (n < 0) n = 0;
    if ((size_t)n < sizeof a->msg) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(a->msg + n, sizeof a->msg - (size_t)n, fmt, ap);
        va_end(ap);
    }
    etw_diag d;
    d.status = st;
    d.file_offset = offset;
    d.message = a->msg;
    a->on_diag(a->diag_ctx, &d);
}

/* Give back a slot's buffer and leave it in `state` (FREE or DEAD). */
static void seq_clear(etw_es_assembler *a, es_seq *s, uint8_t state) {
    if (s->state == SEQ_LIVE) {
        a->st.pending--;
        a->st.pending_bytes -= s->cap;
    }
    etw_free(&a->alloc, s->buf);
    s->buf = NULL;
    s->len = s->cap = 0;
    s->state = state;
    if (state == SEQ_DEAD) s->stamp = ++a->clock;
}

/* Abort a LIVE sequence (already reported by the caller). */
static void seq_abort(etw_es_assembler *a, es_seq *s) {
    a->st.dropped++;
    seq_clear(a, s, SEQ_DEAD);
}

static int same_key(const es_seq *s, const etw_guid *g, uint32_t pid, uint32_t tid) {
    return s->pid == pid && s->tid == tid && etw_guid_equal(&s->provider, g);
}

static es_seq *seq_find(etw_es_assembler *a, const etw_guid *g, uint32_t pid, uint32_t tid) {
    for (uint32_t i = 0; i < a->slots; i++) {
        es_seq *s = &a->seq[i];
        if (s->state != SEQ_FREE && same_key(s, g, pid, tid)) return s;
    }
    return NULL;
}

/* The least recently extended LIVE sequence other than `except`. */
static es_seq *oldest_live(etw_es_assembler *a, const es_seq *except) {
    es_seq *best = NULL;
    for (uint32_t i = 0; i < a->slots; i++) {
        es_seq *s = &a->seq[i];
        if (s->state == SEQ_LIVE && s != except && (!best || s->stamp < best->stamp)) best = s;
    }
    return best;
}

static void evict(etw_es_assembler *a, es_seq *s, const char *why) {
    report(a, ETW_E_LIMIT, s->offset, s,
           "unfinished manifest evicted to stay within %s (%u of %u chunks, %zu bytes); dropped",
           why, (unsigned)s->next, (unsigned)s->total, s->len);
    a->st.evicted++;
    seq_abort(a, s);
}

/* Before a sequence becomes LIVE: evict the oldest LIVE one when
 * max_pending are already live. */
static void live_room(etw_es_assembler *a) {
    if (a->st.pending >= a->max_pending) {
        es_seq *victim = oldest_live(a, NULL);
        if (victim) evict(a, victim, "max_pending");
    }
}

/* A slot for a new key: a FREE one, else the oldest DEAD one. The table
 * has 2 x max_pending slots and at most max_pending are LIVE, so a slot is
 * always found. */
static es_seq *slot_take(etw_es_assembler *a) {
    es_seq *dead = NULL;
    for (uint32_t i = 0; i < a->slots; i++) {
        es_seq *s = &a->seq[i];
        if (s->state == SEQ_FREE) return s;
        if (s->state == SEQ_DEAD && (!dead || s->stamp < dead->stamp)) dead = s;
    }
    return dead; /* never NULL: see above */
}

/* Leave a tombstone for a key that has no slot, so that the rest of a bad
 * run is not reported again. */
static void tombstone(etw_es_assembler *a, const etw_guid *g, uint32_t pid, uint32_t tid) {
    es_seq *s = slot_take(a);
    if (!s) return;
    seq_clear(a, s, SEQ_FREE);
    s->provider = *g;
    s->pid = pid;
    s->tid = tid;
    s->state = SEQ_DEAD;
    s->stamp = ++a->clock;
}

/* Make room for `needed` bytes in s's buffer, within max_bytes (evicting
 * other sequences, oldest first). On failure s is aborted and reported. */
static etw_status seq_reserve(etw_es_assembler *a, es_seq *s, size_t needed, uint64_t offset) {
    if (needed <= s->cap) return ETW_OK;
    if (needed > a->max_bytes) {
        report(a, ETW_E_LIMIT, offset, s,
               "manifest larger than max_pending_bytes (%zu bytes after %u of %u chunks, bound %zu); dropped",
               needed, (unsigned)s->next + 1u, (unsigned)s->total, a->max_bytes);
        seq_abort(a, s);
        return ETW_E_LIMIT;
    }
    /* Aim at the whole manifest at once (TotalChunks x first chunk: exact
     * for EventSource's equal chunks, a little over for a short last one),
     * else double. */
    uint64_t est = (uint64_t)s->total * (s->len ? s->len / s->next : needed);
    uint64_t want = s->cap ? (uint64_t)s->cap * 2u : est;
    if (want < needed) want = needed;
    if (est >= needed && want > est) want = est;
    if (want > a->max_bytes) want = needed;
    /* Fit the bound: shrink to what is needed, then evict others. */
    while (a->st.pending_bytes - s->cap + want > a->max_bytes) {
        if (want > needed) {
            want = needed;
            continue;
        }
        es_seq *victim = oldest_live(a, s);
        if (!victim) break; /* cannot happen: needed <= max_bytes */
        evict(a, victim, "max_pending_bytes");
    }
    uint8_t *nb = etw_alloc(&a->alloc, (size_t)want);
    if (!nb && want > needed) {
        want = needed;
        nb = etw_alloc(&a->alloc, (size_t)want);
    }
    if (!nb) {
        report(a, ETW_E_NOMEM, offset, s, "out of memory for %zu bytes; dropped", needed);
        seq_abort(a, s);
        return ETW_E_NOMEM;
    }
    if (s->len) memcpy(nb, s->buf, s->len);
    etw_free(&a->alloc, s->buf);
    a->st.pending_bytes = a->st.pending_bytes - s->cap + (size_t)want;
    if (a->st.pending_bytes > a->st.peak_pending_bytes) a->st.peak_pending_bytes = a->st.pending_bytes;
    s->buf = nb;
    s->cap = (size_t)want;
    return ETW_OK;
}

static etw_status deliver(etw_es_assembler *a, const etw_guid *g, uint32_t pid, const uint8_t *xml,
                          size_t len) {
    a->st.manifests++;
    if (!a->on_manifest) return ETW_OK;
    return a->on_manifest(a->ctx, g, pid, xml, len);
}

/* ---- the API ---- */

etw_status etw_es_new(etw_es_assembler **out, const etw_es_options *opt) {
    if (!out) return ETW_E_INVALID_ARG;
    *out = NULL;
    etw_allocator al = etw_allocator_resolve(opt ? opt->allocator : NULL);
    etw_es_assembler *a = etw_alloc(&al, sizeof *a);
    if (!a) return ETW_E_NOMEM;
    memset(a, 0, sizeof *a);
    a->alloc = al;
    a->max_bytes = opt && opt->max_pending_bytes ? opt->max_pending_bytes
                                                 : (size_t)ETW_ES_DEFAULT_MAX_PENDING_BYTES;
    a->max_pending = opt && opt->max_pending ? opt->max_pending : ETW_ES_DEFAULT_MAX_PENDING;
    if (a->max_pending > ETW_ES_MAX_PENDING_LIMIT) a->max_pending = ETW_ES_MAX_PENDING_LIMIT;
    a->slots = a->max_pending * 2u;
    if (opt) {
        a->on_manifest = opt->on_manifest;
        a->ctx = opt->ctx;
        a->on_diag = opt->on_diag;
        a->diag_ctx = opt->diag_ctx;
    }
    a->seq = etw_calloc(&al, a->slots, sizeof *a->seq);
    if (!a->seq) {
        etw_free(&al, a);
        return ETW_E_NOMEM;
    }
    *out = a;
    return ETW_OK;
}

void etw_es_free(etw_es_assembler *a) {
    if (!a) return;
    for (uint32_t i = 0; i < a->slots; i++) etw_free(&a->alloc, a->seq[i].buf);
    etw_allocator al = a->alloc;
    etw_free(&al, a->seq);
    etw_free(&al, a);
}

const etw_es_stats *etw_es_stats_get(const etw_es_assembler *a) {
    return a ? &a->st : NULL;
}

void etw_es_finish(etw_es_assembler *a) {
    if (!a) return;
    /* Report in the order the sequences were last extended. */
    for (;;) {
        es_seq *s = oldest_live(a, NULL);
        if (!s) break;
        report(a, ETW_E_TRUNCATED, s->offset, s,
               "manifest never completed (%u of %u chunks, %zu bytes received); dropped",
               (unsigned)s->next, (unsigned)s->total, s->len);
        seq_abort(a, s);
    }
    for (uint32_t i = 0; i < a->slots; i++) seq_clear(a, &a->seq[i], SEQ_FREE);
}

etw_status etw_es_offer(etw_es_assembler *a, const etw_event *ev) {
    if (!a || !ev) return ETW_E_INVALID_ARG;
    if (!etw_es_is_manifest_event(ev)) return ETW_OK;
    a->st.manifest_events++;

    const etw_guid *g = &ev->provider;
    uint64_t offset = ev->buffer_file_offset + ev->record_offset;
    es_seq *s = seq_find(a, g, ev->pid, ev->tid);
    es_seq key; /* names the key in reports when there is no slot */
    memset(&key, 0, sizeof key);
    key.provider = *g;
    key.pid = ev->pid;
    key.tid = ev->tid;

    /* The event on its own. */
    const uint8_t *p = ev->user_data;
    uint32_t ulen = p ? ev->user_data_len : 0;
    char why[96];
    why[0] = 0;
    uint16_t total = 0, num = 0;
    if (ulen <= ETW_ES_ENVELOPE_SIZE) {
        snprintf(why, sizeof why, "user data of %u bytes (a chunk needs more than 8)", (unsigned)ulen);
    } else if (p[3] != ETW_ES_MAGIC) {
        snprintf(why, sizeof why, "bad envelope magic 0x%02x (expected 0x5b)", p[3]);
    } else {
        total = etw_le16(p + 4);
        num = etw_le16(p + 6);
        if (total == 0)
            snprintf(why, sizeof why, "TotalChunks is 0");
        else if (num >= total)
            snprintf(why, sizeof why, "ChunkNumber %u is not below TotalChunks %u", (unsigned)num,
                     (unsigned)total);
        else if (ulen - ETW_ES_ENVELOPE_SIZE > ETW_ES_MAX_CHUNK)
            snprintf(why, sizeof why, "chunk %u of %u has %u bytes (more than 0xFF00)", (unsigned)num,
                     (unsigned)total, (unsigned)(ulen - ETW_ES_ENVELOPE_SIZE));
    }
    if (why[0]) {
        if (s && s->state == SEQ_LIVE) {
            report(a, ETW_E_CORRUPT, offset, s, "%s; unfinished manifest (%u of %u chunks) dropped", why,
                   (unsigned)s->next, (unsigned)s->total);
            seq_abort(a, s);
        } else {
            report(a, ETW_E_CORRUPT, offset, &key, "%s; event ignored", why);
            if (!s) tombstone(a, g, ev->pid, ev->tid);
        }
        return ETW_OK;
    }

    const uint8_t *chunk = p + ETW_ES_ENVELOPE_SIZE;
    size_t clen = ulen - ETW_ES_ENVELOPE_SIZE;

    if (num == 0) {
        if (s && s->state == SEQ_LIVE) {
            report(a, ETW_E_TRUNCATED, offset, s,
                   "restarted at chunk 0 (TotalChunks %u) after %u of %u chunks; unfinished manifest dropped",
                   (unsigned)total, (unsigned)s->next, (unsigned)s->total);
            a->st.dropped++;
        }
        if (total == 1) {
            if (s) seq_clear(a, s, SEQ_FREE);
            a->st.chunks_accepted++;
            return deliver(a, g, ev->pid, chunk, clen);
        }
        /* EventSource writes equal chunks (only the last is shorter), so
         * chunk 0 tells the least the whole needs: refuse at once what
         * cannot fit, rather than evict others for it first. */
        if ((uint64_t)(total - 1u) * clen + 1u > a->max_bytes) {
            report(a, ETW_E_LIMIT, offset, &key,
                   "chunk 0 announces %u chunks of %zu bytes, more than max_pending_bytes (%zu); "
                   "manifest dropped",
                   (unsigned)total, clen, a->max_bytes);
            a->st.dropped++;
            if (s)
                seq_clear(a, s, SEQ_DEAD);
            else
                tombstone(a, g, ev->pid, ev->tid);
            return ETW_OK;
        }
        if (s) seq_clear(a, s, SEQ_FREE); /* a LIVE one no longer counts */
        live_room(a);
        if (!s) {
            s = slot_take(a);
            seq_clear(a, s, SEQ_FREE);
        }
        s->provider = *g;
        s->pid = ev->pid;
        s->tid = ev->tid;
        s->state = SEQ_LIVE;
        s->format = p[0];
        s->major = p[1];
        s->minor = p[2];
        s->total = total;
        s->next = 0;
        s->stamp = ++a->clock;
        s->offset = offset;
        a->st.pending++;
        /* From here the sequence is LIVE: seq_reserve may abort it. */
    } else {
        if (!s) {
            report(a, ETW_E_CORRUPT, offset, &key,
                   "chunk %u of %u without its chunk 0 (start missing); event ignored", (unsigned)num,
                   (unsigned)total);
            tombstone(a, g, ev->pid, ev->tid);
            return ETW_OK;
        }
        if (s->state == SEQ_DEAD) return ETW_OK; /* rest of a run already reported */
        if (s->format != p[0] || s->major != p[1] || s->minor != p[2] || s->total != total) {
            report(a, ETW_E_CORRUPT, offset, s,
                   "chunk %u changes the envelope (format %u, version %u.%u, %u chunks; was %u, %u.%u, "
                   "%u); unfinished manifest (%u of %u chunks) dropped",
                   (unsigned)num, p[0], p[1], p[2], (unsigned)total, s->format, s->major, s->minor,
                   (unsigned)s->total, (unsigned)s->next, (unsigned)s->total);
            seq_abort(a, s);
            return ETW_OK;
        }
        if (num != s->next) {
            if (num < s->next)
                report(a, ETW_E_CORRUPT, offset, s,
                       "chunk %u of %u again (duplicate or reordered; %u expected); unfinished "
                       "manifest dropped",
                       (unsigned)num, (unsigned)total, (unsigned)s->next);
            else
                report(a, ETW_E_CORRUPT, offset, s,
                       "chunk %u of %u while %u was expected (missing or reordered); unfinished "
                       "manifest dropped",
                       (unsigned)num, (unsigned)total, (unsigned)s->next);
            seq_abort(a, s);
            return ETW_OK;
        }
    }

    /* Append the chunk (s is LIVE, num == s->next). */
    if (clen > SIZE_MAX - s->len) { /* not reachable: bounded by max_bytes */
        report(a, ETW_E_LIMIT, offset, s, "manifest size overflows; dropped");
        seq_abort(a, s);
        return ETW_OK;
    }
    etw_status st = seq_reserve(a, s, s->len + clen, offset);
    if (st == ETW_E_LIMIT) return ETW_OK;
    if (st != ETW_OK) return st;
    memcpy(s->buf + s->len, chunk, clen);
    s->len += clen;
    s->next++;
    s->stamp = ++a->clock;
    s->offset = offset;
    a->st.chunks_accepted++;
    if (s->next < s->total) return ETW_OK;

    /* Complete: detach the buffer, free the slot, then deliver. */
    uint8_t *xml = s->buf;
    size_t len = s->len;
    s->buf = NULL;
    a->st.pending--;
    a->st.pending_bytes -= s->cap;
    s->len = s->cap = 0;
    s->state = SEQ_FREE;
    st = deliver(a, g, ev->pid, xml, len);
    etw_free(&a->alloc, xml);
    return st;
}

/* ---- TraceEvent's manifest version score ---- */

static int is_space(uint8_t c) {
    return c == ' ' || c == '\t' || c == '\r' || c == '\n';
}

/* Position of `pat` at or after i, or len. */
static size_t find_str(const uint8_t *x, size_t len, size_t i, const char *pat) {
    size_t n = strlen(pat);
    if (n > len) return len;
    for (; i + n <= len; i++)
        if (x[i] == (uint8_t)pat[0] && memcmp(x + i, pat, n) == 0) return i;
    return len;
}

/* .NET int.TryParse (NumberStyles.Integer): blanks, optional sign, digits,
 * blanks; must fit an int32. */
static int parse_int32(const uint8_t *v, size_t n, int64_t *out) {
    size_t i = 0;
    while (i < n && is_space(v[i])) i++;
    int neg = 0;
    if (i < n && (v[i] == '+' || v[i] == '-')) neg = v[i++] == '-';
    size_t digits = 0;
    int64_t x = 0;
    while (i < n && v[i] >= '0' && v[i] <= '9') {
        x = x * 10 + (v[i++] - '0');
        if (x > 2147483648LL) return 0;
        digits++;
    }
    while (i < n && is_space(v[i])) i++;
    if (!digits || i != n) return 0;
    if (neg) x = -x;
    if (x > 2147483647LL) return 0;
    *out = x;
    return 1;
}

int64_t etw_es_manifest_version(const uint8_t *x, size_t len) {
    if (!x) return -1;
    size_t i = 0;
    if (len >= 2 && ((x[0] == 0xFF && x[1] == 0xFE) || (x[0] == 0xFE && x[1] == 0xFF))) return -1;
    if (len >= 3 && x[0] == 0xEF && x[1] == 0xBB && x[2] == 0xBF) i = 3;
    while (i < len && is_space(x[i])) i++;
    if (i >= len || x[i] != '<') return -1;

    int64_t version = 0, max_id = 0;
    while (i < len) {
        while (i < len && x[i] != '<') i++;
        if (i >= len) break;
        size_t t = i + 1;
        if (t + 3 <= len && memcmp(x + t, "!--", 3) == 0) {
            i = find_str(x, len, t + 3, "-->");
            if (i >= len) return -1;
            i += 3;
            continue;
        }
        if (t + 8 <= len && memcmp(x + t, "![CDATA[", 8) == 0) {
            i = find_str(x, len, t + 8, "]]>");
            if (i >= len) return -1;
            i += 3;
            continue;
        }
        if (t < len && x[t] == '?') {
            i = find_str(x, len, t + 1, "?>");
            if (i >= len) return -1;
            i += 2;
            continue;
        }
        /* Element (or end tag / declaration): name, then attributes to '>'. */
        size_t n0 = t;
        while (t < len && !is_space(x[t]) && x[t] != '>' && x[t] != '/') t++;
        if (t == n0 && t < len && x[t] == '/') { /* end tag */
            while (t < len && x[t] != '>') t++;
            if (t >= len) return -1;
            i = t + 1;
            continue;
        }
        int is_event = (t - n0 == 5 && memcmp(x + n0, "event", 5) == 0);
        int64_t ver = 0, id = 0;
        int has_ver = 0, has_id = 0;
        while (t < len && x[t] != '>') {
            if (is_space(x[t]) || x[t] == '/') {
                t++;
                continue;
            }
            size_t a0 = t;
            while (t < len && !is_space(x[t]) && x[t] != '=' && x[t] != '>' && x[t] != '/') t++;
            size_t a1 = t;
            while (t < len && is_space(x[t])) t++;
            if (t >= len || x[t] != '=') continue;
            t++;
            while (t < len && is_space(x[t])) t++;
            size_t v0, v1;
            if (t < len && (x[t] == '"' || x[t] == '\'')) {
                uint8_t q = x[t++];
                v0 = t;
                while (t < len && x[t] != q) t++;
                if (t >= len) return -1;
                v1 = t;
                t++;
            } else {
                v0 = t;
                while (t < len && !is_space(x[t]) && x[t] != '>') t++;
                v1 = t;
            }
            if (!is_event) continue;
            if (a1 - a0 == 7 && memcmp(x + a0, "version", 7) == 0)
                has_ver = parse_int32(x + v0, v1 - v0, &ver);
            else if (a1 - a0 == 5 && memcmp(x + a0, "value", 5) == 0)
                has_id = parse_int32(x + v0, v1 - v0, &id);
        }
        if (t >= len) return -1; /* tag not closed */
        if (is_event) {
            version++;
            if (has_ver) version += ver;
            if (has_id && id > max_id) max_id = id;
        }
        i = t + 1;
    }
    return version + max_id * 100;
}

int etw_es_manifest_better(const uint8_t *a, size_t a_len, const uint8_t *b, size_t b_len) {
    int64_t va = etw_es_manifest_version(a, a_len);
    int64_t vb = etw_es_manifest_version(b, b_len);
    if (va != vb) return va > vb;
    return a_len > b_len;
}
