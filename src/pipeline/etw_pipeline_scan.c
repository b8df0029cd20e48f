/* etw_pipeline_scan.c - the pipeline's passes over every buffer in no
 * particular order (etw_pipeline.h): the scan that counts (--stats) and the
 * pre-scan that learns the merged metadata of each file, both on every
 * thread, their results added up in file order on the calling thread. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "etw_pipeline_internal.h"

/* --- one buffer, on any thread --------------------------------------------- */

static void scan_diag(void *ctx, const etw_diag *d) {
    scan_task *t = ctx;
    if (t->ndiag >= 2) return; /* a buffer has at most a load and a record problem */
    snprintf(t->msg[t->ndiag], sizeof t->msg[0], "%s", d->message);
    t->d[t->ndiag] = *d;
    t->d[t->ndiag].message = t->msg[t->ndiag];
    t->ndiag++;
}

/* The pre-scan's callback: keep a copy of a MetaData record (learned, in
 * order, on the calling thread): the event, then its extended data and
 * payload (scan_merge points the copy at them). 1 (stop) when out of
 * memory. */
static int collect_metadata(worker *w, const etw_event *ev) {
    if (etw_decoder_learn_kind(w->dec, ev) != ETW_LEARN_AHEAD) return 0;
    scan_task *t = w->scanning;
    size_t need = (sizeof(etw_event) + event_bytes(ev) + LOG_ALIGN - 1) & ~(size_t)(LOG_ALIGN - 1);
    if (!grow_bytes(&w->p->alloc, (void **)&t->meta, &t->mcap, t->mlen + need, 1)) {
        t->nomem = 1;
        return 1;
    }
    etw_event copy;
    copy_event(&copy, ev, t->meta + t->mlen + sizeof(etw_event));
    memcpy(t->meta + t->mlen, &copy, sizeof copy);
    t->mlen += need;
    return 0;
}

static int scan_each(void *ctx, const etw_event *ev) {
    worker *w = ctx;
    if (w->p->prescanning) return collect_metadata(w, ev);
    return w->scan_fn ? w->scan_fn(w->p->opt.ctx, w->state, ev) : 0;
}

void etw_pl_process_scan(worker *w, scan_task *t) {
    etw_pipeline *p = w->p;
    memset(&t->st, 0, sizeof t->st);
    t->st.first_timestamp = INT64_MAX;
    t->st.last_timestamp = INT64_MIN;
    t->ndiag = 0;
    t->mlen = 0;
    t->nomem = 0;
    w->scanning = t;
    etw_reader_load_buffer(p->r, &p->alloc, t->bi, &t->L);
    if (t->L.has_diag) {
        etw_diag d;
        d.status = t->L.diag_status;
        d.file_offset = t->L.diag_offset;
        d.message = t->L.msg;
        scan_diag(t, &d);
        t->st.problems++;
    }
    if (t->L.skipped) t->st.buffers_skipped++;
    t->st.bytes_decompressed += t->L.bytes_decompressed;
    etw_reader_scan_buffer(p->r, &t->L, &t->st, scan_diag, t, scan_each, w);
}

scan_task *etw_pl_take_scan(etw_pipeline *p) {
    scan_task *t = p->scan_head;
    if (t) {
        p->scan_head = t->next;
        if (!p->scan_head) p->scan_tail = NULL;
    }
    return t;
}

/* Add up a scanned buffer (in buffer order, on the calling thread); the
 * pre-scan logs its MetaData records. */
static etw_status scan_merge(etw_pipeline *p, etw_reader_stats *st, scan_task *t) {
    for (int i = 0; i < t->ndiag; i++)
        if (p->reader_diag) p->reader_diag(p->reader_diag_ctx, &t->d[i]);
    st->events += t->st.events;
    for (int f = 0; f < ETW_FORM_COUNT_; f++) st->events_by_form[f] += t->st.events_by_form[f];
    st->records_skipped += t->st.records_skipped;
    st->buffers_skipped += t->st.buffers_skipped;
    st->problems += t->st.problems;
    st->bytes_decompressed += t->st.bytes_decompressed;
    if (t->st.events) {
        if (t->st.first_timestamp < st->first_timestamp) st->first_timestamp = t->st.first_timestamp;
        if (t->st.last_timestamp > st->last_timestamp) st->last_timestamp = t->st.last_timestamp;
    }
    if (t->nomem) return ETW_E_NOMEM;
    for (size_t at = 0; at < t->mlen;) {
        etw_event ev;
        memcpy(&ev, t->meta + at, sizeof ev);
        /* its bytes follow it (the storage may have moved since: the
         * pointers are set again) */
        const uint8_t *bytes = t->meta + at + sizeof ev;
        if (ev.ext_size) ev.ext_data = bytes;
        if (ev.user_data_len) ev.user_data = bytes + ev.ext_size;
        etw_status s = etw_pl_log_event(p, &ev, 0, ETW_LEARN_AHEAD);
        if (s != ETW_OK) return s;
        at += (sizeof ev + event_bytes(&ev) + LOG_ALIGN - 1) & ~(size_t)(LOG_ALIGN - 1);
    }
    return ETW_OK;
}

/* Every buffer of p->r in file order, on every thread (fn on each record). */
static etw_status scan_all(etw_pipeline *p, etw_pipeline_scan_fn fn, etw_reader_stats *stats) {
    etw_status s = etw_reader_rewind(p->r);
    if (s != ETW_OK) return s;
    etw_event ev;
    if ((s = etw_reader_next(p->r, &ev)) != ETW_OK) return s; /* the log-file header */
    *stats = *etw_reader_stats_get(p->r);
    for (unsigned i = 0; i < p->nworkers; i++) p->workers[i].scan_fn = fn;
    if (fn) fn(p->opt.ctx, p->workers[0].state, &ev);
    uint32_t nb = etw_reader_buffer_count(p->r);
    unsigned ntasks = p->threaded ? p->window + p->nworkers : 1;
    scan_task *tasks = etw_calloc(&p->alloc, ntasks, sizeof *tasks);
    if (!tasks) return ETW_E_NOMEM;
    uint32_t issued = 0, merged = 0;
    while (merged < nb && s == ETW_OK) {
        if (!p->threaded) {
            tasks[0].bi = merged; /* one task, on this thread */
            etw_pl_process_scan(&p->workers[0], &tasks[0]);
            s = scan_merge(p, stats, &tasks[0]);
            merged++;
            continue;
        }
        etw_mutex_lock(&p->mu);
        while (issued < nb && issued - merged < ntasks) {
            scan_task *t = &tasks[issued % ntasks];
            t->bi = issued++;
            t->state = 1;
            t->next = NULL;
            if (p->scan_tail) p->scan_tail->next = t;
            else p->scan_head = t;
            p->scan_tail = t;
            wake_worker(p);
        }
        /* the calling thread scans too while the next one is not done */
        scan_task *t = &tasks[merged % ntasks], *mine;
        while (t->state != 2) {
            if ((mine = etw_pl_take_scan(p))) {
                etw_mutex_unlock(&p->mu);
                etw_pl_process_scan(&p->workers[0], mine);
                etw_mutex_lock(&p->mu);
                mine->state = 2;
            } else {
                caller_wait(p);
            }
        }
        t->state = 0;
        etw_mutex_unlock(&p->mu);
        s = scan_merge(p, stats, t);
        merged++;
    }
    if (p->threaded && merged < issued) {
        /* stopped early: take back the tasks not started, wait for the rest */
        etw_mutex_lock(&p->mu);
        while (p->scan_head) etw_pl_take_scan(p)->state = 0;
        for (uint32_t i = merged; i < issued; i++)
            while (tasks[i % ntasks].state == 1) caller_wait(p);
        etw_mutex_unlock(&p->mu);
    }
    for (unsigned i = 0; i < ntasks; i++) {
        etw_buffer_load_free(&p->alloc, &tasks[i].L);
        etw_free(&p->alloc, tasks[i].meta);
    }
    etw_free(&p->alloc, tasks);
    for (unsigned i = 0; i < p->nworkers; i++) p->workers[i].scan_fn = NULL;
    return s;
}

etw_status etw_pipeline_scan(etw_pipeline *p, etw_pipeline_scan_fn fn, etw_reader_stats *stats) {
    if (!p || !stats || p->nfiles != 1) return ETW_E_INVALID_ARG;
    return scan_all(p, fn, stats);
}

/* The pre-scan of one file's reader (p->r): its buffers are scanned on
 * every thread, each keeping copies of its MetaData records, which the
 * calling thread logs in file order, after those of the files before it. */
static etw_status prescan_reader(etw_pipeline *p) {
    etw_reader_stats st;
    p->prescanning = 1;
    etw_status s = scan_all(p, NULL, &st);
    p->prescanning = 0;
    if (s != ETW_OK && s != ETW_END) return s; /* ETW_END: no log-file header, no events */
    return etw_reader_rewind(p->r);
}

/* Every file's reader in turn, in the order of the files (as etwdump -j 1
 * pre-scans them). */
etw_status etw_pipeline_prescan(etw_pipeline *p) {
    if (!p) return ETW_E_INVALID_ARG;
    etw_status s = ETW_OK;
    for (uint32_t i = 0; i < p->nfiles && s == ETW_OK; i++) {
        etw_pl_tell_file(p, i);
        p->r = p->files[i].r;
        etw_reader_diag_target(p->r, &p->reader_diag, &p->reader_diag_ctx);
        s = prescan_reader(p);
    }
    p->r = p->files[0].r;
    etw_reader_diag_target(p->r, &p->reader_diag, &p->reader_diag_ctx);
    if (s == ETW_OK) p->prescanned = 1;
    return s;
}
