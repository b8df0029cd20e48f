/* etw_pipeline.c - the parallel decode pipeline of include/etwdecode/etw_pipeline.h:
 * buffers decompressed ahead on workers, the merge on the calling thread,
 * batches of references to the events rendered on every thread (the
 * calling one too), written in order. The scan and pre-scan are in
 * etw_pipeline_scan.c, the types both share in etw_pipeline_internal.h. */
#include "etwdecode/etw_pipeline.h"

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#if defined(__unix__) || defined(__APPLE__)
#include <unistd.h>
#endif

#include "../common/etw_alloc.h"
#include "../common/etw_thread.h"
#include "../etl/etw_multi_internal.h"
#include "../etl/etw_reader_internal.h"
#include "etw_pipeline_internal.h"

/* Inputs whose buffers average fewer bytes than this are decoded without
 * worker threads (see pipeline_new). */
#define SMALL_BUFFERS_SERIAL 2048u

/* --- output ------------------------------------------------------------------ */

etw_status etw_pipeline_emit(etw_pipeline_out *o, const void *data, size_t len) {
    batch *b = o->b;
    if (b->olen + len < b->olen || b->olen + len > UINT32_MAX - 1) return ETW_E_LIMIT;
    if (!grow_bytes(&o->p->alloc, (void **)&b->out, &b->ocap, b->olen + len, 1)) return ETW_E_NOMEM;
    memcpy(b->out + b->olen, data, len);
    b->olen += len;
    return ETW_OK;
}

unsigned etw_pipeline_cpu_count(void) {
#if defined(_SC_NPROCESSORS_ONLN)
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n > 0 ? (unsigned)n : 1u;
#else
    return 1u;
#endif
}

/* --- decoder diagnostics ------------------------------------------------ */

static void batch_diag(etw_pipeline *p, batch *b, const etw_diag *d) {
    size_t len = strlen(d->message) + 1;
    if (!grow_bytes(&p->alloc, (void **)&b->diags, &b->dcap, b->ndiags + 1, sizeof *b->diags) ||
        !grow_bytes(&p->alloc, (void **)&b->dtext, &b->dtcap, b->dtlen + len, 1))
        return; /* no memory: the message is lost, the count is kept */
    diag_rec *r = &b->diags[b->ndiags++];
    r->status = d->status;
    r->offset = d->file_offset;
    r->msg_at = b->dtlen;
    memcpy(b->dtext + b->dtlen, d->message, len);
    b->dtlen += len;
}

static void on_decoder_diag(void *ctx, const etw_diag *d) {
    worker *w = ctx;
    etw_pipeline *p = w->p;
    if (w->muted) return;
    if (w->cur) {
        batch_diag(p, w->cur, d);
    } else {
        /* on the calling thread: setup or the end of the trace; status
         * ETW_OK is a warning (nothing lost), not a problem */
        if (d->status != ETW_OK) p->stats.decoder_problems++;
        if (p->opt.decoder.on_diag) p->opt.decoder.on_diag(p->opt.decoder.diag_ctx, d);
    }
}

/* --- workers: rendering ---------------------------------------------------- */

static void learn_muted(worker *w, const etw_event *ev, int report) {
    w->muted = !report;
    etw_decoder_learn(w->dec, ev);
    w->muted = 0;
}

/* The entry after done up to last; the log's head (read only then: the
 * calling thread moves a head only past entries every decoder learned). */
static log_entry *next_entry(log_entry *done, log_entry *const *head, log_entry *last) {
    if (!last) return NULL;
    if (!done) return *head;
    return done == last ? NULL : done->next;
}

static etw_status render_event(worker *w, batch *b, const etw_event *ev) {
    etw_pipeline *p = w->p;
    etw_pipeline_out o = {p, b};
    if (p->opt.render) return p->opt.render(p->opt.ctx, w->state, w->dec, ev, &o);
    const char *line;
    size_t len;
    etw_status s = etw_json_event(w->json, p->readers[w->file], ev, &line, &len);
    if (s != ETW_OK) return s;
    return etw_pipeline_emit(&o, line, len);
}

/* Give b an output buffer from w's pool (under the mutex with threads). */
static void take_output(worker *w, batch *b) {
    b->out_owner = w->index;
    if (w->npool) {
        out_buf *o = &w->pool[--w->npool];
        b->out = o->data;
        b->ocap = o->cap;
    } else {
        b->out = NULL;
        b->ocap = 0;
    }
}

/* Put b's output buffer back in the pool of the thread that wrote it
 * (under the mutex with threads). */
static void give_output(etw_pipeline *p, batch *b) {
    if (!b->out) return;
    worker *w = &p->workers[b->out_owner];
    if (w->npool < OUT_POOL) {
        w->pool[w->npool].data = b->out;
        w->pool[w->npool].cap = b->ocap;
        w->npool++;
    } else {
        etw_free(&p->alloc, b->out);
    }
    b->out = NULL;
    b->ocap = 0;
}

static void process_batch(worker *w, batch *b) {
    etw_pipeline *p = w->p;
    w->cur = b;
    b->olen = 0;
    b->status = ETW_OK;
    for (uint32_t i = 0; i < b->n && b->status == ETW_OK; i++) {
        uint64_t q = b->first + i;
        const etw_event *ev = &b->evs[i];
        log_entry *e;
        /* merged metadata: learned ETW_PIPELINE_LOOKAHEAD events ahead, the
         * first decoder to learn a record reports its problems */
        while ((e = next_entry(w->ahead_done, &p->ahead.head, b->ahead_last)) && e->pos < q + ETW_PIPELINE_LOOKAHEAD) {
            learn_muted(w, &e->ev, atomic_exchange(&e->reported, 1) == 0);
            w->ahead_done = e;
        }
        /* in-order state: what other workers decoded since this one's last
         * batch, before its first event; the batch's own such events are
         * learned as they come, and their entries skipped unread (each
         * entry was written on the calling thread: a cache miss) */
        if (i == 0) {
            while ((e = next_entry(w->order_done, &p->order.head, b->order_last)) && e->pos < q) {
                learn_muted(w, &e->ev, 0);
                w->order_done = e;
            }
            if (b->order_own) w->order_done = b->order_own;
        }
        w->file = b->files[i];
        if (b->kinds[i] == ETW_LEARN_IN_ORDER) etw_decoder_learn(w->dec, ev);
        if (p->opt.select && !p->opt.select(p->opt.ctx, w->state, w->dec, ev)) {
            b->ends[i] = NOT_SELECTED;
            continue;
        }
        b->status = render_event(w, b, ev);
        b->ends[i] = (uint32_t)b->olen;
    }
    w->cur = NULL;
}

/* --- workers: the queues ---------------------------------------------------- */

/* Where the worker is in the logs (under the mutex with threads). */
static void tell_cursors(worker *w) {
    w->pub_ahead = w->ahead_done ? w->ahead_done->seq + 1 : 0;
    w->pub_order = w->order_done ? w->order_done->seq + 1 : 0;
}

/* The oldest batch no thread has taken (under the mutex), or NULL. */
static batch *take_render(etw_pipeline *p) {
    batch *b = p->render_head;
    if (b) {
        p->render_head = b->qnext;
        if (!p->render_head) p->render_tail = NULL;
        p->untaken--;
    }
    return b;
}

static etw_status worker_init(etw_pipeline *p, worker *w, unsigned index);

static ETW_THREAD_RETURN worker_main(void *arg) {
    worker *w = arg;
    etw_pipeline *p = w->p;
    etw_status is = worker_init(p, w, w->index);
    etw_mutex_lock(&p->mu);
    w->init_status = is;
    w->init_done = 1;
    etw_cond_broadcast(&p->done_cv);
    if (is != ETW_OK) {
        etw_mutex_unlock(&p->mu);
        return 0;
    }
    for (;;) {
        batch *b;
        scan_task *t;
        if (p->load_head) {
            slot *s = p->load_head;
            p->load_head = s->next;
            if (!p->load_head) p->load_tail = NULL;
            s->state = S_LOADING;
            etw_mutex_unlock(&p->mu);
            etw_reader_load_buffer(p->readers[s->file], &p->alloc, s->L.buf, &s->L);
            etw_mutex_lock(&p->mu);
            s->state = S_READY;
            wake_caller(p);
        } else if ((b = take_render(p))) {
            take_output(w, b);
            etw_mutex_unlock(&p->mu);
            process_batch(w, b);
            etw_mutex_lock(&p->mu);
            tell_cursors(w);
            b->done = 1;
            wake_caller(p);
        } else if ((t = etw_pl_take_scan(p))) {
            etw_mutex_unlock(&p->mu);
            etw_pl_process_scan(w, t);
            etw_mutex_lock(&p->mu);
            t->state = 2;
            wake_caller(p);
        } else if (p->quit) {
            break;
        } else {
            p->idle++;
            etw_cond_wait(&p->work_cv, &p->mu);
            p->idle--;
        }
    }
    etw_mutex_unlock(&p->mu);
    return 0;
}

/* --- buffers for the reader (its hooks; on the calling thread) ------------ */

static slot *find_ahead(etw_pipeline *p, uint32_t file, uint32_t stream, uint32_t k) {
    for (uint32_t i = 0; i < p->nslots; i++) {
        slot *s = &p->slots[i];
        if ((s->state == S_QUEUED || s->state == S_LOADING || s->state == S_READY) && s->file == file &&
            s->stream == stream && s->k == k)
            return s;
    }
    return NULL;
}

static slot *take_free(etw_pipeline *p) {
    slot *s = p->free_slots;
    if (s) p->free_slots = s->next;
    return s;
}

static int cmp_u32(const void *a, const void *b) {
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return x < y ? -1 : x > y;
}

/* Tell a reader which of its buffers are done with (calling thread). */
static void flush_done(source *f) {
    qsort(f->done, f->ndone, sizeof f->done[0], cmp_u32);
    etw_reader_buffers_done(f->r, f->done, f->ndone);
    f->ndone = 0;
}

static void slot_free(etw_pipeline *p, slot *s) {
    source *f = &p->files[s->file];
    f->done[f->ndone++] = s->L.buf;
    if (f->ndone == DONE_BATCH) flush_done(f);
    s->state = S_FREE;
    s->next = p->free_slots;
    p->free_slots = s;
}

/* The calling thread keeps the slots' references: a batch counts in the
 * slots its events point into until it is written. */
static void batch_ref(batch *b, slot *s) {
    if (s->tag == b->id) return;
    s->tag = b->id;
    s->refs++;
    b->slots[b->nslots++] = s;
}

static void batch_unref(etw_pipeline *p, batch *b) {
    for (uint32_t i = 0; i < b->nslots; i++) {
        slot *s = b->slots[i];
        if (--s->refs == 0 && s->state == S_DONE) slot_free(p, s);
    }
    b->nslots = 0;
}

/* Copy the bytes of b's events into the batch itself and let go of its
 * slots. 0: no memory. */
static int batch_detach(etw_pipeline *p, batch *b) {
    if (!b->nslots) return 1;
    size_t need = 0;
    for (uint32_t i = 0; i < b->n; i++) need += event_bytes(&b->evs[i]);
    uint8_t *nb = etw_alloc(&p->alloc, need ? need : 1);
    if (!nb) return 0;
    size_t at = 0;
    for (uint32_t i = 0; i < b->n; i++) {
        etw_event ev = b->evs[i];
        copy_event(&b->evs[i], &ev, nb + at);
        at += event_bytes(&ev);
    }
    etw_free(&p->alloc, b->bytes);
    b->bytes = nb;
    batch_unref(p, b);
    b->id = ++p->batch_ids; /* later events of the same slots count again */
    p->stats.batches_copied++;
    return 1;
}

static void drain(etw_pipeline *p, unsigned keep);

/* A slot to load a buffer into, for the calling thread. When every one is
 * held, loading ahead or pointed into: write what is published, then make
 * the batches that still wait copy their events. NULL: no memory. */
static slot *get_slot(etw_pipeline *p) {
    slot *s = take_free(p);
    if (s) return s;
    drain(p, 0);
    if ((s = take_free(p))) return s;
    int ok = 1;
    for (batch *b = p->order_head; b; b = b->next) ok &= batch_detach(p, b);
    if (p->cur) ok &= batch_detach(p, p->cur);
    /* nstreams + window + REF_SLOTS slots: at most nstreams - 1 held, window
     * ahead, none pointed into */
    return ok ? take_free(p) : NULL;
}

static void prefetch(source *f, uint32_t stream, uint32_t k) {
    etw_pipeline *p = f->p;
    const uint32_t *order;
    uint32_t n = etw_reader_stream_buffers(f->r, stream, &order);
    for (uint32_t j = k + 1; j <= k + PREFETCH_DEPTH && j < n; j++) {
        if (p->in_window >= p->window) return;
        if (etw_reader_buffer_in_place(f->r, order[j]) || find_ahead(p, f->index, stream, j)) continue;
        slot *s = take_free(p);
        if (!s) return;
        s->state = S_QUEUED;
        s->file = f->index;
        s->stream = stream;
        s->k = j;
        s->L.buf = order[j];
        s->next = NULL;
        if (p->load_tail) p->load_tail->next = s;
        else p->load_head = s;
        p->load_tail = s;
        p->in_window++;
        wake_worker(p);
    }
}

static void unqueue(etw_pipeline *p, slot *s) {
    slot **pp = &p->load_head, *prev = NULL;
    while (*pp && *pp != s) {
        prev = *pp;
        pp = &(*pp)->next;
    }
    if (!*pp) return;
    *pp = s->next;
    if (p->load_tail == s) p->load_tail = prev;
}

/* The hooks of each file's reader, ctx its source. */
static const etw_buffer_load *hook_acquire(void *ctx, uint32_t stream, uint32_t k, uint32_t bi) {
    source *f = ctx;
    etw_pipeline *p = f->p;
    slot *s = NULL;
    if (p->threaded) {
        etw_mutex_lock(&p->mu);
        s = find_ahead(p, f->index, stream, k);
        if (s) {
            p->in_window--;
            if (s->state == S_QUEUED) {
                unqueue(p, s);
                s->state = S_LOADING;
                etw_mutex_unlock(&p->mu);
                etw_reader_load_buffer(f->r, &p->alloc, bi, &s->L);
                etw_mutex_lock(&p->mu);
            } else {
                while (s->state == S_LOADING) caller_wait(p);
            }
        }
        etw_mutex_unlock(&p->mu);
    }
    if (!s) {
        if (!(s = get_slot(p))) {
            p->fail = ETW_E_NOMEM;
            p->stop = 1;
            return &p->no_memory;
        }
        s->file = f->index;
        s->stream = stream;
        s->k = k;
        etw_reader_load_buffer(f->r, &p->alloc, bi, &s->L);
    }
    s->state = S_HELD;
    f->held[stream] = s;
    if (p->threaded) {
        etw_mutex_lock(&p->mu);
        prefetch(f, stream, k);
        etw_mutex_unlock(&p->mu);
    }
    return &s->L;
}

static void hook_release(void *ctx, uint32_t stream, uint32_t bi) {
    source *f = ctx;
    (void)bi;
    slot *s = f->held[stream];
    if (!s) return;
    f->held[stream] = NULL;
    s->state = S_DONE;
    if (!s->refs) slot_free(f->p, s);
}

/* --- batches (calling thread) -------------------------------------------- */

static batch *get_batch(etw_pipeline *p) {
    batch *b = p->free_batches;
    if (b) {
        p->free_batches = b->next;
    } else {
        b = etw_calloc(&p->alloc, 1, sizeof *b);
        if (!b) return NULL;
        b->cap = ETW_PIPELINE_BATCH;
        b->evs = etw_calloc(&p->alloc, b->cap, sizeof *b->evs);
        b->ends = etw_calloc(&p->alloc, b->cap, sizeof *b->ends);
        b->kinds = etw_calloc(&p->alloc, b->cap, sizeof *b->kinds);
        b->files = etw_calloc(&p->alloc, b->cap, sizeof *b->files);
        b->slots = etw_calloc(&p->alloc, p->nslots, sizeof *b->slots);
        if (!b->evs || !b->ends || !b->kinds || !b->files || !b->slots) {
            etw_free(&p->alloc, b->evs);
            etw_free(&p->alloc, b->files);
            etw_free(&p->alloc, b->kinds);
            etw_free(&p->alloc, b->slots);
            etw_free(&p->alloc, b->ends);
            etw_free(&p->alloc, b);
            return NULL;
        }
    }
    b->next = b->qnext = NULL;
    b->id = ++p->batch_ids;
    b->n = 0;
    b->order_own = NULL;
    b->nslots = 0;
    b->blen = 0;
    b->olen = 0;
    b->ndiags = 0;
    b->dtlen = 0;
    b->published = 0;
    b->done = 0;
    return b;
}

static void put_batch(etw_pipeline *p, batch *b) {
    if (b->out) {
        if (p->threaded) etw_mutex_lock(&p->mu);
        give_output(p, b);
        if (p->threaded) etw_mutex_unlock(&p->mu);
    }
    batch_unref(p, b);
    etw_free(&p->alloc, b->bytes);
    b->bytes = NULL;
    b->next = p->free_batches;
    p->free_batches = b;
}

static void free_batch(etw_pipeline *p, batch *b) {
    etw_free(&p->alloc, b->evs);
    etw_free(&p->alloc, b->files);
    etw_free(&p->alloc, b->slots);
    etw_free(&p->alloc, b->ends);
    etw_free(&p->alloc, b->kinds);
    etw_free(&p->alloc, b->bytes);
    etw_free(&p->alloc, b->out);
    etw_free(&p->alloc, b->diags);
    etw_free(&p->alloc, b->dtext);
    etw_free(&p->alloc, b);
}

/* Write a rendered batch (the head of the order list). */
static void write_batch(etw_pipeline *p, batch *b) {
    for (size_t i = 0; i < b->ndiags; i++) {
        etw_diag d;
        d.status = b->diags[i].status;
        d.file_offset = b->diags[i].offset;
        d.message = b->dtext + b->diags[i].msg_at;
        if (d.status != ETW_OK) p->stats.decoder_problems++;
        if (p->opt.decoder.on_diag) p->opt.decoder.on_diag(p->opt.decoder.diag_ctx, &d);
    }
    if (p->stop) return;
    if (b->status != ETW_OK) {
        p->fail = b->status;
        p->stop = 1;
        return;
    }
    size_t upto = b->olen;
    if (p->opt.max_events) {
        for (uint32_t i = 0; i < b->n; i++) {
            if (b->ends[i] == NOT_SELECTED) continue;
            p->stats.events_written++;
            if (p->stats.events_written >= p->opt.max_events) {
                upto = b->ends[i];
                p->stop = 1;
                break;
            }
        }
    } else {
        for (uint32_t i = 0; i < b->n; i++) p->stats.events_written += b->ends[i] != NOT_SELECTED;
    }
    if (upto && p->opt.write) {
        etw_status s = p->opt.write(p->opt.ctx, b->out, upto);
        if (s != ETW_OK) {
            p->fail = s;
            p->stop = 1;
            return;
        }
    }
    p->stats.bytes_written += upto;
}

/* Publish closed batches whose lookahead is read (all of them at the end). */
static void publish(etw_pipeline *p, uint64_t pos, int all) {
    for (batch *b = p->order_head; b; b = b->next) {
        if (b->published) continue;
        if (!all && b->first + b->n + ETW_PIPELINE_LOOKAHEAD > pos) break;
        b->ahead_last = p->ahead.tail;
        b->order_last = p->order.tail;
        b->published = 1;
        if (!p->threaded) {
            take_output(&p->workers[0], b);
            process_batch(&p->workers[0], b);
            tell_cursors(&p->workers[0]);
            b->done = 1;
            continue;
        }
        etw_mutex_lock(&p->mu);
        b->qnext = NULL;
        if (p->render_tail) p->render_tail->qnext = b;
        else p->render_head = b;
        p->render_tail = b;
        p->queued++;
        p->untaken++;
        wake_worker(p);
        etw_mutex_unlock(&p->mu);
    }
}

/* Free the log entries every worker has gone past (each keeps its last one:
 * it follows that entry's link), so the logs hold what the batches in
 * flight may still need, not the whole trace's. */
static void trim_log(etw_pipeline *p, event_log *L, uint64_t min_next) {
    log_entry *h = L->head;
    while (h && h->next && h->seq + 1 < min_next) h = h->next;
    /* written only when it moves: a decoder that learned nothing yet reads
     * it, and then nothing is trimmed */
    if (h != L->head) L->head = h;
    while (h && L->chunks != L->last && L->chunks->last_seq < h->seq) {
        log_chunk *c = L->chunks;
        L->chunks = c->next;
        etw_free(&p->alloc, L->spare);
        L->spare = c;
    }
}

static void trim_logs(etw_pipeline *p) {
    if (p->threaded) etw_mutex_lock(&p->mu);
    uint64_t ma = UINT64_MAX, mo = UINT64_MAX;
    for (unsigned i = 0; i < p->nworkers; i++) {
        if (p->workers[i].pub_ahead < ma) ma = p->workers[i].pub_ahead;
        if (p->workers[i].pub_order < mo) mo = p->workers[i].pub_order;
    }
    /* a head moves only when every worker is past it, so no worker reads
     * it then (a worker reads a head only before its first entry) */
    trim_log(p, &p->ahead, ma);
    trim_log(p, &p->order, mo);
    if (p->threaded) etw_mutex_unlock(&p->mu);
}

/* Write finished batches from the head, until at most `keep` published
 * batches remain unwritten. The calling thread renders too, with its own
 * decoder (workers[0]), the oldest batch no worker has taken: when each
 * worker has SPARE_PER_WORKER more waiting (so none runs dry while this
 * thread renders and publishes nothing), or rather than wait for the head.
 * With as many threads as cores, nobody idles. */
static void drain(etw_pipeline *p, unsigned keep) {
    worker *w0 = &p->workers[0];
    for (;;) {
        batch *b = p->order_head;
        if (!b || !b->published) return;
        if (p->threaded) {
            etw_mutex_lock(&p->mu);
            while (!b->done) {
                if (p->untaken < SPARE_PER_WORKER * (p->nworkers - 1) + 1 && p->queued <= keep) {
                    etw_mutex_unlock(&p->mu);
                    return;
                }
                batch *h = take_render(p);
                if (h) {
                    take_output(w0, h);
                    etw_mutex_unlock(&p->mu);
                    process_batch(w0, h);
                    etw_mutex_lock(&p->mu);
                    tell_cursors(w0);
                    h->done = 1;
                } else {
                    caller_wait(p);
                }
            }
            p->queued--;
            etw_mutex_unlock(&p->mu);
        }
        p->order_head = b->next;
        if (!p->order_head) p->order_tail = NULL;
        write_batch(p, b);
        put_batch(p, b);
        trim_logs(p);
    }
}

static void close_batch(etw_pipeline *p, batch *b) {
    b->next = NULL;
    if (p->order_tail) p->order_tail->next = b;
    else p->order_head = b;
    p->order_tail = b;
}

etw_status etw_pl_log_event(etw_pipeline *p, const etw_event *ev, uint64_t pos, etw_learn_kind kind) {
    event_log *L = kind == ETW_LEARN_AHEAD ? &p->ahead : &p->order;
    size_t bytes = event_bytes(ev);
    if (bytes > SIZE_MAX / 2) return ETW_E_NOMEM;
    size_t need = (sizeof(log_entry) + bytes + LOG_ALIGN - 1) & ~(size_t)(LOG_ALIGN - 1);
    log_chunk *c = L->last;
    if (!c || c->cap - c->used < need) {
        size_t cap = need > LOG_CHUNK_BYTES ? need : LOG_CHUNK_BYTES;
        if (L->spare && L->spare->cap >= cap) {
            c = L->spare;
            L->spare = NULL;
        } else if (!(c = etw_alloc(&p->alloc, sizeof *c + cap))) {
            return ETW_E_NOMEM;
        } else {
            c->cap = cap;
        }
        c->next = NULL;
        c->used = 0;
        if (L->last) L->last->next = c;
        else L->chunks = c;
        L->last = c;
    }
    log_entry *e = (log_entry *)((unsigned char *)c->data + c->used);
    c->used += need;
    copy_event(&e->ev, ev, (uint8_t *)(e + 1));
    e->next = NULL;
    e->pos = pos;
    atomic_init(&e->reported, 0);
    /* No lock: a worker reads an entry, and the link to it, only through a
     * batch published (under the mutex) after both were written; the head
     * is set here once, before any batch points at the entry. */
    e->seq = L->seq++;
    c->last_seq = e->seq;
    if (L->tail) L->tail->next = e;
    else L->head = e;
    L->tail = e;
    return ETW_OK;
}

static void free_log(etw_pipeline *p, event_log *L) {
    for (log_chunk *c = L->chunks, *n; c; c = n) {
        n = c->next;
        etw_free(&p->alloc, c);
    }
    etw_free(&p->alloc, L->spare);
    memset(L, 0, sizeof *L);
}

/* --- the merge of several files (calling thread) -------------------------- */

/* Read file f's next event into its head, unless it has one or has ended. */
static etw_status fill(etw_pipeline *p, source *f) {
    if (f->has_head || f->ended) return ETW_OK;
    etw_pl_tell_file(p, f->index);
    etw_status s = etw_reader_next_ref(f->r, &f->head);
    if (s == ETW_OK) f->has_head = 1;
    else f->ended = 1;
    return s == ETW_END ? ETW_OK : s;
}

/* The next event of the files, picked as etw_multi_next picks it: the
 * smallest timestamp, the lower file index on a tie; with file_order the
 * files one after the other. The event is its reader's: its bytes stay in
 * the buffer that reader's stream holds until that reader advances, which
 * it does only when the next event is asked for. */
static etw_status next_event(etw_pipeline *p, const etw_event **ev, uint32_t *file) {
    if (p->taken < p->nfiles) p->files[p->taken].has_head = 0;
    uint32_t best = p->nfiles;
    for (uint32_t i = 0; i < p->nfiles; i++) {
        source *f = &p->files[i];
        etw_status s = fill(p, f);
        if (s != ETW_OK) return s;
        if (!f->has_head) continue;
        if (p->file_order) {
            best = i;
            break;
        }
        if (best == p->nfiles || f->head->timestamp < p->files[best].head->timestamp) best = i;
    }
    p->taken = best;
    if (best == p->nfiles) return ETW_END;
    etw_pl_tell_file(p, best);
    *ev = p->files[best].head;
    *file = best;
    return ETW_OK;
}

/* --- the run ---------------------------------------------------------------- */

etw_status etw_pipeline_run(etw_pipeline *p) {
    if (!p) return ETW_E_INVALID_ARG;
    if (p->nfiles > 1 && !p->prescanned) return ETW_E_INVALID_ARG;
    for (uint32_t i = 0; i < p->nfiles; i++) {
        source *f = &p->files[i];
        etw_reader_hooks h = {hook_acquire, hook_release, f};
        etw_reader_set_hooks(f->r, &h);
        f->has_head = f->ended = 0;
    }
    p->taken = p->nfiles;
    p->stop = 0;
    p->fail = ETW_OK;
    uint64_t pos = 0;
    batch *cur = p->cur = get_batch(p);
    etw_status s = cur ? ETW_OK : ETW_E_NOMEM;
    const etw_event *ev;
    uint32_t file;
    while (s == ETW_OK && !p->stop) {
        etw_status rs = next_event(p, &ev, &file);
        if (rs != ETW_OK) {
            if (rs != ETW_END) s = rs;
            break;
        }
        if (p->opt.on_read && p->opt.on_read(p->opt.ctx, p->stats.events_read + 1, ev)) break;
        /* the kind depends on the event and the decoders' options only: the
         * same on every decoder */
        etw_learn_kind learns = etw_decoder_learn_kind(p->workers[0].dec, ev), kind = learns;
        if (kind == ETW_LEARN_AHEAD && p->prescanned) kind = ETW_LEARN_NONE;
        /* one decoder learns the in-order events as it renders them */
        if (kind == ETW_LEARN_IN_ORDER && !p->threaded) kind = ETW_LEARN_NONE;
        if (kind != ETW_LEARN_NONE && (s = etw_pl_log_event(p, ev, pos, kind)) != ETW_OK) break;
        size_t need = event_bytes(ev);
        if (cur->n && (cur->n == cur->cap || cur->blen + need > ETW_PIPELINE_BATCH_BYTES)) {
            close_batch(p, cur);
            if (!(cur = p->cur = get_batch(p))) {
                s = ETW_E_NOMEM;
                break;
            }
        }
        if (cur->n == 0) cur->first = pos;
        /* the event as the reader gave it: its bytes stay in the slot of its
         * stream's buffer, which the batch keeps (no copy) */
        cur->evs[cur->n] = *ev;
        cur->kinds[cur->n] = (uint8_t)learns;
        if (kind == ETW_LEARN_IN_ORDER) cur->order_own = p->order.tail; /* logged above */
        cur->files[cur->n] = file;
        if (need) {
            source *f = &p->files[file];
            int si = etw_reader_last_stream(f->r);
            if (si >= 0 && f->held[si]) batch_ref(cur, f->held[si]);
        }
        cur->blen += need;
        cur->n++;
        pos++;
        p->stats.events_read++;
        if (cur->n == 1 || pos % 64 == 0) {
            publish(p, pos, 0);
            drain(p, p->max_queued);
        }
    }
    if (cur && cur->n) close_batch(p, cur);
    else if (cur) put_batch(p, cur);
    p->cur = NULL;
    publish(p, pos, 1);
    drain(p, 0);
    /* the first decoder sees the rest of the in-order log, then says what
     * never completed */
    worker *w0 = &p->workers[0];
    log_entry *e;
    while ((e = next_entry(w0->order_done, &p->order.head, p->order.tail))) {
        learn_muted(w0, &e->ev, 0);
        w0->order_done = e;
    }
    etw_decoder_finish(w0->dec);
    for (uint32_t i = 0; i < p->nfiles; i++) {
        etw_reader_detach(p->files[i].r);
        flush_done(&p->files[i]);
    }
    if (s == ETW_OK) s = p->fail;
    return s;
}

/* --- life cycle ------------------------------------------------------------ */

static etw_status worker_init(etw_pipeline *p, worker *w, unsigned index) {
    w->p = p;
    w->index = index;
    w->muted = index != 0;
    etw_decoder_options dopt = p->opt.decoder;
    dopt.allocator = &p->alloc;
    dopt.on_diag = on_decoder_diag;
    dopt.diag_ctx = w;
    etw_status s = etw_decoder_new(&w->dec, &dopt);
    if (s != ETW_OK) return s;
    if (p->opt.setup && (s = p->opt.setup(p->opt.ctx, w->dec)) != ETW_OK) return s;
    w->muted = 0;
    if (p->opt.worker_new) {
        w->state = p->opt.worker_new(p->opt.ctx, w->dec);
        if (!w->state) return ETW_E_NOMEM;
    }
    if (!p->opt.render) {
        etw_json_options jo = p->opt.json;
        jo.decoder = w->dec;
        if ((s = etw_json_new(&w->json, &p->alloc, &jo)) != ETW_OK) return s;
    }
    return ETW_OK;
}

/* The readers' buffers average under SMALL_BUFFERS_SERIAL bytes. */
static int small_buffers(etw_reader *const *readers, uint32_t n) {
    uint64_t bytes = 0, nbufs = 0;
    for (uint32_t i = 0; i < n; i++) {
        bytes += etw_reader_input_size(readers[i]);
        nbufs += etw_reader_buffer_count(readers[i]);
    }
    return nbufs && bytes / nbufs < SMALL_BUFFERS_SERIAL;
}

int etw_pipeline_small_buffers(const etw_multi *m) {
    size_t n = m ? etw_multi_count(m) : 0;
    uint64_t bytes = 0, nbufs = 0;
    for (size_t i = 0; i < n; i++) {
        const etw_reader *r = etw_multi_reader(m, i);
        bytes += etw_reader_input_size(r);
        nbufs += etw_reader_buffer_count(r);
    }
    return nbufs && bytes / nbufs < SMALL_BUFFERS_SERIAL;
}

/* The files' readers, each with its held buffers (per stream). */
static etw_status add_files(etw_pipeline *p, etw_reader *const *readers, uint32_t n) {
    p->files = etw_calloc(&p->alloc, n, sizeof *p->files);
    p->readers = etw_calloc(&p->alloc, n, sizeof *p->readers);
    if (!p->files || !p->readers) return ETW_E_NOMEM;
    p->nfiles = n;
    for (uint32_t i = 0; i < n; i++) {
        source *f = &p->files[i];
        f->p = p;
        f->r = p->readers[i] = readers[i];
        f->index = i;
        f->nstreams = etw_reader_stream_count(f->r);
        f->held = etw_calloc(&p->alloc, f->nstreams ? f->nstreams : 1, sizeof *f->held);
        if (!f->held) return ETW_E_NOMEM;
        p->nstreams += f->nstreams;
    }
    return ETW_OK;
}

static etw_status pipeline_new(etw_pipeline **out, etw_reader *const *readers, uint32_t nfiles, etw_multi *m,
                               const etw_pipeline_options *opt) {
    *out = NULL;
    etw_allocator a = etw_allocator_resolve(opt ? opt->allocator : NULL);
    etw_pipeline *p = etw_calloc(&a, 1, sizeof *p);
    if (!p) return ETW_E_NOMEM;
    p->alloc = a;
    if (opt) p->opt = *opt;
    /* the workers' decoders parse the built-in manifests once between them */
    if (!p->opt.decoder.builtins && !p->opt.decoder.no_default_manifests) {
        if (etw_builtins_new(&p->own_builtins, &a) != ETW_OK) {
            etw_pipeline_free(p);
            return ETW_E_NOMEM;
        }
        p->opt.decoder.builtins = p->own_builtins;
    }
    /* one file is file 0 throughout: nothing to tell */
    p->multi = m && nfiles > 1 ? m : NULL;
    p->told = UINT32_MAX;
    p->file_order = m && etw_multi_file_order(m);
    if (add_files(p, readers, nfiles) != ETW_OK) {
        etw_pipeline_free(p);
        return ETW_E_NOMEM;
    }
    p->r = readers[0];
    etw_reader_diag_target(p->r, &p->reader_diag, &p->reader_diag_ctx);
    p->nworkers = p->opt.threads > 1 ? p->opt.threads : 1;
    /* Buffers of a few hundred bytes (an event or two each): handing each
     * to a thread costs more than its work, so N threads ran slower than
     * one (issue 23: 10^6 buffers of 160 bytes). Such an input (one file: the
     * merge of several files is always threaded) runs on the
     * calling thread alone (docs/limits.md). */
    if (nfiles == 1 && small_buffers(readers, nfiles)) p->nworkers = 1;
    p->threaded = p->nworkers > 1;
    p->window = p->opt.window;
    if (!p->window) {
        uint32_t ws = p->nstreams * PREFETCH_DEPTH;
        if (ws > WINDOW_STREAMS_MAX) ws = WINDOW_STREAMS_MAX;
        p->window = ws + WINDOW_PER_THREAD * p->nworkers;
    }
    p->max_queued = BATCHES_PER_THREAD * p->nworkers;
    p->nslots = p->nstreams + (p->threaded ? p->window : 0) + REF_SLOTS + BATCHES_PER_THREAD * p->nworkers;
    p->no_memory.status = ETW_E_NOMEM;
    p->no_memory.has_diag = 1;
    p->no_memory.diag_status = ETW_E_NOMEM;
    snprintf(p->no_memory.msg, sizeof p->no_memory.msg, "no memory for a buffer");
    p->slots = etw_calloc(&a, p->nslots ? p->nslots : 1, sizeof *p->slots);
    p->workers = etw_calloc(&a, p->nworkers, sizeof *p->workers);
    etw_status s = (p->slots && p->workers) ? ETW_OK : ETW_E_NOMEM;
    for (uint32_t i = p->nslots; i-- > 0;) {
        p->slots[i].next = p->free_slots;
        p->free_slots = &p->slots[i];
    }
    if (s == ETW_OK) s = worker_init(p, &p->workers[0], 0);
    if (s == ETW_OK && p->threaded) {
        if (etw_mutex_init(&p->mu)) {
            s = ETW_E_NOMEM;
        } else if (etw_cond_init(&p->work_cv)) {
            etw_mutex_destroy(&p->mu);
            s = ETW_E_NOMEM;
        } else if (etw_cond_init(&p->done_cv)) {
            etw_cond_destroy(&p->work_cv);
            etw_mutex_destroy(&p->mu);
            s = ETW_E_NOMEM;
        } else {
            p->sync_ok = 1;
        }
        for (unsigned i = 1; s == ETW_OK && i < p->nworkers; i++) {
            p->workers[i].p = p;
            p->workers[i].index = i;
            if (etw_thread_start(&p->workers[i].th, worker_main, &p->workers[i])) s = ETW_E_NOMEM;
            else p->workers[i].started = 1;
            if (s == ETW_OK) {
                etw_mutex_lock(&p->mu);
                while (!p->workers[i].init_done) etw_cond_wait(&p->done_cv, &p->mu);
                s = p->workers[i].init_status;
                etw_mutex_unlock(&p->mu);
            }
        }
    }
    if (s != ETW_OK) {
        etw_pipeline_free(p);
        return s;
    }
    *out = p;
    return ETW_OK;
}

etw_status etw_pipeline_new(etw_pipeline **out, etw_reader *r, const etw_pipeline_options *opt) {
    if (!out || !r) return ETW_E_INVALID_ARG;
    return pipeline_new(out, &r, 1, NULL, opt);
}

etw_status etw_pipeline_new_multi(etw_pipeline **out, etw_multi *m, const etw_pipeline_options *opt) {
    if (!out || !m || etw_multi_count(m) == 0 || etw_multi_count(m) > ETW_MULTI_MAX_FILES)
        return ETW_E_INVALID_ARG;
    size_t n = etw_multi_count(m);
    etw_allocator a = etw_allocator_resolve(opt ? opt->allocator : NULL);
    etw_reader **readers = etw_calloc(&a, n, sizeof *readers);
    if (!readers) return ETW_E_NOMEM;
    for (size_t i = 0; i < n; i++) readers[i] = etw_multi_reader(m, i);
    etw_status s = pipeline_new(out, readers, (uint32_t)n, m, opt);
    etw_free(&a, readers);
    return s;
}

size_t etw_pipeline_event_file(const etw_pipeline *p, const etw_decoder *d) {
    if (!p) return 0;
    for (unsigned i = 0; i < p->nworkers; i++)
        if (p->workers[i].dec == d) return p->workers[i].file;
    return 0;
}

void *etw_pipeline_worker_state(etw_pipeline *p, unsigned i) {
    return p && i < p->nworkers ? p->workers[i].state : NULL;
}

const etw_pipeline_stats *etw_pipeline_stats_get(const etw_pipeline *p) { return p ? &p->stats : NULL; }

etw_decoder *etw_pipeline_decoder(etw_pipeline *p, unsigned i) {
    return p && i < p->nworkers ? p->workers[i].dec : NULL;
}

void etw_pipeline_free(etw_pipeline *p) {
    if (!p) return;
    etw_allocator a = p->alloc;
    if (p->sync_ok) {
        etw_mutex_lock(&p->mu);
        p->quit = 1;
        etw_cond_broadcast(&p->work_cv);
        etw_mutex_unlock(&p->mu);
    }
    if (p->workers) {
        for (unsigned i = 0; i < p->nworkers; i++) {
            worker *w = &p->workers[i];
            if (w->started) etw_thread_join(w->th);
        }
        for (unsigned i = 0; i < p->nworkers; i++) {
            worker *w = &p->workers[i];
            if (w->state && p->opt.worker_free) p->opt.worker_free(p->opt.ctx, w->state);
            etw_json_free(w->json);
            etw_decoder_free(w->dec);
            for (unsigned k = 0; k < w->npool; k++) etw_free(&a, w->pool[k].data);
        }
    }
    if (p->sync_ok) {
        etw_cond_destroy(&p->done_cv);
        etw_cond_destroy(&p->work_cv);
        etw_mutex_destroy(&p->mu);
    }
    if (p->slots)
        for (uint32_t i = 0; i < p->nslots; i++) etw_buffer_load_free(&a, &p->slots[i].L);
    batch *b = p->free_batches;
    while (b) {
        batch *n = b->next;
        free_batch(p, b);
        b = n;
    }
    b = p->order_head;
    while (b) {
        batch *n = b->next;
        free_batch(p, b);
        b = n;
    }
    free_log(p, &p->ahead);
    free_log(p, &p->order);
    etw_builtins_free(p->own_builtins); /* after the decoders: their schemas point into it */
    etw_free(&a, p->slots);
    for (uint32_t i = 0; p->files && i < p->nfiles; i++) etw_free(&a, p->files[i].held);
    etw_free(&a, p->files);
    etw_free(&a, p->readers);
    etw_free(&a, p->workers);
    etw_free(&a, p);
}
