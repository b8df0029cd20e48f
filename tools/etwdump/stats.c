/* etwdump --stats and --schemas: summaries of the selected events, made by
 * the library (etw_stats.h, etw_schemas.h) so that every embedder gets the
 * same ones. */
#include <stdio.h>
#include <stdlib.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>

#include "etwdump.h"

typedef struct summary {
    etw_stats *stats;     /* --stats */
    etw_schemas *schemas; /* --schemas */
    int want_schemas;     /* --schemas (scan_again makes schemas, not stats) */
    cpu_feed *cpu;        /* --stats -j 1 without -n: the CPU samples, in the same pass */
    ahead *ahead;         /* --stats -j 1, --schemas: without the pre-scan (ahead.c) */
} summary;

/* The log-file header record kept until the CPU profile can start. */
typedef struct held_header {
    etw_event ev;
    uint8_t *data;
    int sel, have;
} held_header;

static int hold_header(held_header *h, const etw_event *ev, int sel) {
    h->ev = *ev;
    h->ev.ext_data = NULL; /* the log-file header has none */
    h->ev.ext_count = 0;
    h->ev.ext_size = 0;
    h->data = ev->user_data_len ? malloc(ev->user_data_len) : NULL;
    if (ev->user_data_len && !h->data) return 0;
    if (h->data) memcpy(h->data, ev->user_data, ev->user_data_len);
    h->ev.user_data = h->data;
    h->sel = sel;
    h->have = 1;
    return 1;
}

/* Read every event; feed the selected ones to the summary. */
static int scan(session *s, summary *sm) {
    const options *o = s->o;
    progress *pg = progress_start(o, s->m, input_bytes(s->m));
    const etw_event *ev;
    size_t file;
    unsigned long long n = 0, read = 0;
    int rc = EXIT_CLEAN;
    static etw_label l; /* large: not on the stack of every call */
    ahead *ah = sm->ahead;
    int watching = ah && ah->r; /* one file: its buffers watched */
    int take = sm->stats && s->dec && etw_filter_is_empty(s->filter) && !o->no_manifest_events;
    held_header hh = {0};
    while (etw_multi_next_ref(s->m, &ev, &file) == ETW_OK) {
        progress_tick(pg, ++read, file, ev);
        if (stop_requested()) {
            rc = EXIT_INTERRUPTED;
            break;
        }
        /* watched: the first buffers of every processor are loaded with the
         * first event after the log-file header; stacks there start the
         * CPU profile now, with the header it has not seen */
        if (watching && read == 2) ahead_metadata_only(ah); /* later stacks: counted again */
        if (watching && read == 2 && ah->stacks && !sm->cpu && !o->max_events) {
            if (cpu_feed_new(s, &sm->cpu) == EXIT_FATAL) {
                rc = EXIT_FATAL;
                break;
            }
            if (hh.have && !cpu_feed_add(sm->cpu, &hh.ev, NULL, hh.sel, NULL)) {
                fprintf(stderr, "etwdump: out of memory\n");
                rc = EXIT_FATAL;
                break;
            }
        }
        /* without the pre-scan: a problem said, a StackWalk event before
         * the CPU samples are fed, or a MetaData record not learned ahead
         * in time, and the run is made again with it (run_stats) */
        if (ah && ((sm->stats && has_stacks(ev) && !sm->cpu) || ahead_missed(ah, s, ev))) {
            s->rescan = 1;
            break;
        }
        if (!s->saw_stacks && has_stacks(ev)) s->saw_stacks = 1;
        int sel;
        etw_status st = ETW_OK;
        if (take) { /* every event counted: labelled and counted at once */
            sel = 1;
            st = etw_stats_take(sm->stats, s->dec, ev, &l);
        } else {
            sel = etw_filter_match(s->filter, s->dec, ev, &l);
            if (sel >= 0 && sm->stats) st = etw_stats_observe(sm->stats, s->dec, ev, &l);
        }
        if (sel >= 0 && st == ETW_OK && sm->cpu) {
            /* etw_stats_take's label always has the event's ids */
            const uint32_t ids[2] = {l.pid, l.tid};
            if (!cpu_feed_add(sm->cpu, ev, l.schema, sel, take ? ids : NULL)) st = ETW_E_NOMEM;
        }
        if (sel >= 0 && st == ETW_OK && watching && read == 1 && ev->is_logfile_header && !hold_header(&hh, ev, sel))
            st = ETW_E_NOMEM;
        if (sel < 0 || st != ETW_OK) {
            fprintf(stderr, "etwdump: out of memory\n");
            rc = EXIT_FATAL;
            break;
        }
        if (!sel || (o->no_manifest_events && etw_decoder_is_manifest_event(ev))) continue;
        if (!take) st = sm->stats ? etw_stats_add(sm->stats, ev, &l) : etw_schemas_add(sm->schemas, &l);
        if (st != ETW_OK) {
            fprintf(stderr, "etwdump: out of memory\n");
            rc = EXIT_FATAL;
            break;
        }
        if (o->max_events && ++n >= o->max_events) {
            s->cut_short = 1;
            break;
        }
    }
    progress_end(pg);
    free(hh.data);
    if (!s->rescan) etw_decoder_finish(s->dec);
    if (s->no_prescan && s->dc->held) s->rescan = 1;
    return rc;
}

/* Count again from the start on one thread, everything made again as -j 1
 * with the pre-scan makes it (a new decoder that learned the MetaData
 * records ahead, knowing whether the trace has stacks; a new filter, which
 * notes what it met by that decoder's schema ids). For --stats -j 1
 * without the pre-scan, when the scan met what the pre-scan changes (the
 * problems said this time), and for a -j N count whose tables reached
 * their bounds (mute: the problems were told the first time). */
static int scan_again(session *s, summary *sm, int mute) {
    s->saw_stacks = 0;
    etw_stats_free(sm->stats);
    sm->stats = NULL;
    etw_schemas_free(sm->schemas);
    sm->schemas = NULL;
    cpu_feed_free(sm->cpu);
    sm->cpu = NULL;
    int stacks = 0;
    int rc = (sm->want_schemas ? etw_schemas_new(&sm->schemas, NULL) : etw_stats_new(&sm->stats, NULL)) == ETW_OK
                 ? session_again(s, sm->want_schemas ? NULL : &stacks)
                 : EXIT_FATAL;
    s->stacks_ahead = stacks;
    if (rc != EXIT_FATAL && s->stacks_ahead && !s->o->max_events && cpu_feed_new(s, &sm->cpu) == EXIT_FATAL)
        rc = EXIT_FATAL;
    s->dc->muted = mute; /* the pre-scan unmutes when it ends */
    if (rc != EXIT_FATAL) {
        int r2 = scan(s, sm);
        if (r2 > rc) rc = r2;
    }
    s->dc->muted = 0;
    return rc;
}

/* scan, without the pre-scan when the session's decoder was made without
 * it (ahead.c; stacks: watch for StackWalk records too, for the CPU
 * summary), and from the start with it when that pass says so. */
static int scan_ahead(session *s, summary *sm, int stacks) {
    ahead ah;
    if (s->no_prescan) {
        ahead_start(&ah, s, s->dec, AHEAD_HOLD | (stacks ? AHEAD_STACKS : 0));
        sm->ahead = &ah;
    }
    int rc = scan(s, sm);
    if (sm->ahead) ahead_stop(&ah, s);
    sm->ahead = NULL;
    if (s->rescan && rc != EXIT_FATAL && rc != EXIT_INTERRUPTED) rc = scan_again(s, sm, 0);
    return rc;
}

/* --- MetaData records kept -------------------------------------------------- */

/* Past this many bytes, or METADATA_KEEP_RECORDS records, the later
 * decoder pre-scans instead. */
#define METADATA_KEEP_MAX ((size_t)64 << 20)
#define METADATA_KEEP_RECORDS 65536

int metadata_keep(metadata_kept *k, const etw_event *ev) {
    if (k->too_many) return 1;
    if (ev->user_data_len > METADATA_KEEP_MAX - k->used || k->n >= METADATA_KEEP_RECORDS) {
        k->too_many = 1; /* not an error: the pre-scan learns them */
        return 1;
    }
    if (k->n == k->cap) {
        size_t cap = k->cap ? k->cap * 2 : 16;
        etw_event *ne = realloc(k->ev, cap * sizeof *ne);
        if (!ne) return 0;
        k->ev = ne;
        size_t *no = realloc(k->off, cap * sizeof *no);
        if (!no) return 0;
        k->off = no;
        k->cap = cap;
    }
    size_t len = ev->user_data_len;
    if (k->data_cap - k->used < len) {
        size_t cap = k->data_cap ? k->data_cap : 4096;
        while (cap - k->used < len) cap *= 2; /* at most 2 * METADATA_KEEP_MAX */
        uint8_t *nd = realloc(k->data, cap);
        if (!nd) return 0;
        k->data = nd;
        k->data_cap = cap;
    }
    if (len) memcpy(k->data + k->used, ev->user_data, len);
    etw_event *e = &k->ev[k->n];
    *e = *ev;
    e->user_data = NULL; /* set when learned: data may move */
    e->ext_data = NULL;  /* not kept (a MetaData record's learning reads none) */
    e->ext_count = 0;
    k->off[k->n++] = k->used;
    k->used += len;
    return 1;
}

etw_status metadata_learn(const metadata_kept *k, etw_decoder *d) {
    for (size_t i = 0; i < k->n; i++) {
        etw_event ev = k->ev[i];
        ev.user_data = k->data + k->off[i];
        etw_status st = etw_decoder_learn(d, &ev);
        if (st != ETW_OK) return st;
    }
    return ETW_OK;
}

void metadata_kept_free(metadata_kept *k) {
    free(k->ev);
    free(k->off);
    free(k->data);
    memset(k, 0, sizeof *k);
}

/* --- --stats -j N ------------------------------------------------------------
 * The workers of the pipeline (etw_pipeline.h) decompress, resolve and
 * filter the events, each with its own decoder, and count them in their
 * own etw_stats (etw_stats_count: sums, minima and maxima, the same in any
 * order). What depends on the order - the name of a pid is the last one a
 * Process event gives, an error's example is the first of its kind - they
 * pass on as small records, which the pipeline hands over in event order,
 * so this thread applies them exactly as scan() does; the workers' counts
 * are merged at the end. Where a table reached its bound the merge says
 * so, and the trace is counted again on one thread. */

#define EXIT_AGAIN 100 /* scan_parallel: count on one thread instead */

typedef struct stat_rec {
    uint32_t size; /* the whole record */
    uint8_t named, error;
    int32_t status;     /* the label's */
    uint32_t name_pid;
    uint32_t error_len; /* UINT32_MAX: no error text */
    uint32_t name_len;
} stat_rec;

typedef struct stat_run {
    session *s;
    etw_stats *st;
    progress *pg;
    int setups, setup_rc, interrupted;
    etw_decoder *dec; /* the calling thread's (etw_decoder_learn_kind) */
    atomic_int oom;
} stat_run;

typedef struct stat_worker {
    etw_filter *filter;
    etw_stats *st; /* this worker's counts */
    etw_label label;
} stat_worker;

static etw_status stat_setup(void *ctx, etw_decoder *dec) {
    stat_run *sr = ctx;
    sr->setups++;
    /* manifest problems are told, never counted in the exit status */
    if (manifests_attach(sr->s->dc->mf, dec) == EXIT_FATAL) {
        /* said; the pipeline makes no more decoders (each would load it again) */
        sr->setup_rc = EXIT_FATAL;
        return ETW_E_LIMIT;
    }
    add_windows(sr->s->o, dec);
    return ETW_OK;
}

static void *stat_worker_new(void *ctx, etw_decoder *dec) {
    stat_run *sr = ctx;
    (void)dec;
    stat_worker *w = calloc(1, sizeof *w);
    if (!w) return NULL;
    if (!(w->filter = build_filter(sr->s->o)) || etw_stats_new(&w->st, NULL) != ETW_OK) {
        etw_filter_free(w->filter);
        free(w);
        return NULL;
    }
    etw_filter_set_origin(w->filter, sr->s->origin);
    return w;
}

static void stat_worker_free(void *ctx, void *state) {
    stat_run *sr = ctx;
    stat_worker *w = state;
    etw_filter_merge_names(sr->s->filter, w->filter); /* on the calling thread */
    etw_stats_free(w->st);
    etw_filter_free(w->filter);
    free(w);
}

static etw_status emit(etw_pipeline_out *out, const char *p, size_t n) {
    return n ? etw_pipeline_emit(out, p, n) : ETW_OK;
}

static etw_status stat_render(void *ctx, void *state, etw_decoder *dec, const etw_event *ev,
                              etw_pipeline_out *out) {
    stat_run *sr = ctx;
    stat_worker *w = state;
    etw_label *l = &w->label;
    int sel = etw_filter_match(w->filter, dec, ev, l); /* as scan() */
    if (sel < 0) {
        atomic_store(&sr->oom, 1);
        return ETW_E_NOMEM;
    }
    stat_rec r;
    memset(&r, 0, sizeof r);
    const char *name = NULL;
    size_t name_len = 0;
    etw_status st = etw_stats_process_name(w->st, dec, ev, l, &r.name_pid, &name, &name_len);
    if (st != ETW_OK) return st;
    int counted = sel && !(sr->s->o->no_manifest_events && etw_decoder_is_manifest_event(ev));
    r.named = name != NULL;
    r.error = counted && etw_stats_has_error(l);
    /* counted after the record is out: name lives in w->st's scratch */
    if (!r.named && !r.error) return counted ? etw_stats_count(w->st, ev, l) : ETW_OK;
    size_t err_len = r.error && l->error ? strlen(l->error) : 0;
    if (err_len > UINT32_MAX / 4 || name_len > UINT32_MAX / 4) return ETW_E_LIMIT;
    r.status = (int32_t)l->status;
    r.error_len = r.error && l->error ? (uint32_t)err_len : UINT32_MAX;
    r.name_len = (uint32_t)name_len;
    r.size = (uint32_t)(sizeof r + err_len + name_len);
    if ((st = emit(out, (const char *)&r, sizeof r)) != ETW_OK || (st = emit(out, name, name_len)) != ETW_OK ||
        (st = emit(out, l->error, err_len)) != ETW_OK)
        return st;
    return counted ? etw_stats_count(w->st, ev, l) : ETW_OK;
}

/* The records of a batch, in event order (a batch holds whole records). */
static etw_status stat_write(void *ctx, const void *data, size_t len) {
    stat_run *sr = ctx;
    const char *p = data, *end = p + len;
    char err[1024];
    while ((size_t)(end - p) >= sizeof(stat_rec)) {
        stat_rec r;
        memcpy(&r, p, sizeof r);
        if (r.size < sizeof r || r.size > (size_t)(end - p)) return ETW_E_CORRUPT; /* cannot happen */
        const char *q = p + sizeof r;
        etw_status st = ETW_OK;
        if (r.named) st = etw_stats_name_process(sr->st, r.name_pid, q, r.name_len); /* as observe */
        if (st == ETW_OK && r.error) {
            etw_label l;
            memset(&l, 0, sizeof l);
            l.status = (etw_status)r.status;
            char *big = NULL;
            if (r.error_len != UINT32_MAX) {
                /* NUL-terminated, as etw_stats_count_error reads it */
                char *e = r.error_len < sizeof err ? err : (big = malloc((size_t)r.error_len + 1));
                if (!e) return ETW_E_NOMEM;
                memcpy(e, q + r.name_len, r.error_len);
                e[r.error_len] = 0;
                l.error = e;
            }
            st = etw_stats_count_error(sr->st, &l);
            free(big);
        }
        if (st != ETW_OK) return st;
        p += r.size;
    }
    return p == end ? ETW_OK : ETW_E_CORRUPT;
}

static int stat_on_read(void *ctx, uint64_t n, const etw_event *ev) {
    stat_run *sr = ctx;
    progress_tick(sr->pg, n, 0, ev);
    if (!sr->s->saw_stacks && has_stacks(ev)) sr->s->saw_stacks = 1;
    /* kept for cpu_summary's decoder, which learns them instead of a
     * pre-scan (the same answer on any decoder: the event alone decides) */
    if (ev->provider.data1 == METADATA_PROVIDER_DATA1 &&
        etw_decoder_learn_kind(sr->dec, ev) == ETW_LEARN_AHEAD && !metadata_keep(&sr->s->metadata, ev)) {
        atomic_store(&sr->oom, 1);
        return 1;
    }
    if (stop_requested()) {
        sr->interrupted = 1;
        return 1;
    }
    return 0;
}

static int scan_parallel(session *s, etw_stats *stats) {
    const options *o = s->o;
    stat_run sr;
    memset(&sr, 0, sizeof sr);
    sr.s = s;
    sr.st = stats;
    atomic_init(&sr.oom, 0);
    etw_pipeline_options po;
    memset(&po, 0, sizeof po);
    po.threads = worker_threads(o);
    po.decoder.on_diag = on_decoder_diag;
    po.decoder.lang = s->o->lang;
    po.decoder.tl_cache_bytes = o->tl_cache_bytes;
    po.decoder.diag_ctx = s->dc;
    po.decoder.no_default_manifests = o->no_default_manifests;
    po.decoder.builtins = s->dc->builtins;
    po.decoder.on_manifest_diag = on_manifest_diag;
    po.decoder.manifest_diag_ctx = s->dc->mf;
    po.setup = stat_setup;
    po.worker_new = stat_worker_new;
    po.worker_free = stat_worker_free;
    po.render = stat_render;
    po.write = stat_write;
    po.on_read = stat_on_read;
    po.ctx = &sr;
    etw_pipeline *p;
    if (etw_pipeline_new(&p, etw_multi_reader(s->m, 0), &po) != ETW_OK) {
        if (sr.setup_rc != EXIT_FATAL) fprintf(stderr, "etwdump: out of memory\n"); /* a manifest: said */
        return EXIT_FATAL;
    }
    etw_status st = ETW_OK;
    sr.dec = etw_pipeline_decoder(p, 0);
    if (pipeline_run_session(p, s, &sr.pg, &st) != EXIT_CLEAN) {
        etw_pipeline_free(p);
        return EXIT_FATAL;
    }
    int rc = sr.setup_rc;
    if (atomic_load(&sr.oom)) st = ETW_E_NOMEM;
    if (sr.interrupted || stop_requested()) {
        rc = EXIT_INTERRUPTED;
    } else if (st != ETW_OK) {
        fprintf(stderr, "etwdump: %s\n", st == ETW_E_NOMEM ? "out of memory" : etw_strerror(st));
        rc = EXIT_FATAL;
    }
    s->par_problems = etw_pipeline_stats_get(p)->decoder_problems != 0;
    /* every event was read: cpu_summary's decoder needs no pre-scan */
    s->metadata.complete = rc == EXIT_CLEAN && st == ETW_OK && !s->metadata.too_many;
    for (unsigned i = 0; rc != EXIT_FATAL && rc != EXIT_INTERRUPTED && i < po.threads; i++) {
        stat_worker *w = etw_pipeline_worker_state(p, i);
        if (!w && i > 0) break; /* the pipeline ran fewer threads (inputs of tiny buffers) */
        st = w ? etw_stats_merge(stats, w->st) : ETW_E_INVALID_ARG;
        if (st == ETW_E_LIMIT) {
            rc = EXIT_AGAIN;
        } else if (st != ETW_OK) {
            fprintf(stderr, "etwdump: out of memory\n");
            rc = EXIT_FATAL;
        }
        if (st != ETW_OK) break;
    }
    etw_pipeline_free(p);
    return rc;
}

static int finish(session *s, int rc, const char *text, size_t len, int newline) {
    if (rc == EXIT_FATAL) return rc;
    int w = write_out(s->out, text, len);
    if (w == 0 && newline) w = write_out(s->out, "\n", 1);
    if (w < 0) return EXIT_FATAL;
    if (rc == EXIT_CLEAN && run_problems(s)) rc = EXIT_SKIPPED;
    return rc;
}

int run_stats(session *s) {
    summary sm = {0};
    if (etw_stats_new(&sm.stats, NULL) != ETW_OK) {
        fprintf(stderr, "etwdump: out of memory\n");
        return EXIT_FATAL;
    }
    int own_dec = !s->dec;
    /* on one thread the scan feeds the CPU profile too (used when the trace
     * has stacks; not with -n: the counts stop there) */
    int rc = s->dec && s->stacks_ahead && !s->o->max_events ? cpu_feed_new(s, &sm.cpu) : EXIT_CLEAN;
    if (rc == EXIT_CLEAN) rc = s->dec ? scan_ahead(s, &sm, 1) : scan_parallel(s, sm.stats);
    if (rc == EXIT_FATAL && !sm.stats) {
        fprintf(stderr, "etwdump: out of memory\n");
        return EXIT_FATAL;
    }
    if (rc == EXIT_AGAIN) {
        /* a table reached its bound: which keys it let in depends on the
         * order, so count again on one thread, as -j 1 (the problems of
         * the trace were told the first time) */
        s->dc->muted = 1;
        rc = scan_again(s, &sm, 1);
        if (rc == EXIT_FATAL && !sm.stats) {
            fprintf(stderr, "etwdump: out of memory\n");
            return EXIT_FATAL;
        }
    }
    size_t n = etw_multi_count(s->m);
    const etw_reader **readers = calloc(n ? n : 1, sizeof *readers);
    const char **names = calloc(n ? n : 1, sizeof *names);
    const char *text = "";
    size_t len = 0;
    if (!readers || !names) {
        fprintf(stderr, "etwdump: out of memory\n");
        rc = EXIT_FATAL;
    } else if (rc != EXIT_FATAL) {
        for (size_t i = 0; i < n; i++) {
            readers[i] = etw_multi_reader(s->m, i);
            names[i] = etw_multi_name(s->m, i);
        }
        etw_status st = s->o->format == ETW_RENDER_JSON && s->o->format_given
                            ? etw_stats_json(sm.stats, readers, names, n, &text, &len)
                            : etw_stats_text(sm.stats, readers, names, n, &text, &len);
        if (st != ETW_OK) {
            fprintf(stderr, "etwdump: out of memory\n");
            rc = EXIT_FATAL;
        }
    }
    /* a trace with stacks: where the CPU samples were (not with -n: the
     * counts above stop there) */
    char *cpu = NULL;
    size_t cpu_len = 0;
    int json = s->o->format == ETW_RENDER_JSON && s->o->format_given;
    if ((rc == EXIT_CLEAN || rc == EXIT_SKIPPED) && s->saw_stacks && !s->o->max_events) {
        int r2 = sm.cpu ? cpu_feed_summary(sm.cpu, json, &cpu, &cpu_len) : cpu_summary(s, json, &cpu, &cpu_len);
        if (r2 != EXIT_CLEAN) rc = r2;
    }
    char *joined = NULL;
    if (cpu && json && len && text[len - 1] == '}') {
        /* the library's object, with "cpu_samples" as its last member */
        joined = malloc(len + cpu_len + 32);
        if (joined) {
            memcpy(joined, text, len - 1);
            size_t k = len - 1;
            memcpy(joined + k, ",\"cpu_samples\":", 15);
            k += 15;
            memcpy(joined + k, cpu, cpu_len);
            k += cpu_len;
            joined[k++] = '}';
            text = joined;
            len = k;
        }
    } else if (cpu && !json) {
        joined = malloc(len + cpu_len + 1);
        if (joined) {
            memcpy(joined, text, len);
            memcpy(joined + len, cpu, cpu_len);
            text = joined;
            len += cpu_len;
        }
    }
    rc = finish(s, rc, text, len, json);
    free(joined);
    free(cpu);
    free(readers);
    free(names);
    etw_stats_free(sm.stats);
    cpu_feed_free(sm.cpu);
    metadata_kept_free(&s->metadata);
    if (own_dec) {
        etw_decoder_free(s->dec);
        s->dec = NULL;
    }
    return rc;
}

int run_schemas(session *s) {
    summary sm = {0};
    sm.want_schemas = 1;
    if (etw_schemas_new(&sm.schemas, NULL) != ETW_OK) {
        fprintf(stderr, "etwdump: out of memory\n");
        return EXIT_FATAL;
    }
    int rc = scan_ahead(s, &sm, 0);
    if (rc == EXIT_FATAL && !sm.schemas) {
        fprintf(stderr, "etwdump: out of memory\n");
        return EXIT_FATAL;
    }
    const char *text = "";
    size_t len = 0;
    if (rc != EXIT_FATAL && etw_schemas_json(sm.schemas, &text, &len) != ETW_OK) {
        fprintf(stderr, "etwdump: out of memory\n");
        rc = EXIT_FATAL;
    }
    rc = finish(s, rc, text, len, 1);
    etw_schemas_free(sm.schemas);
    return rc;
}
