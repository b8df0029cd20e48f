/* etwdump - the selected events, as JSON Lines, text or CSV (etw_render.h). */
#define _DEFAULT_SOURCE /* tm_gmtoff */
#include <errno.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "etwdump.h"

/* FILETIME of 1970-01-01 (MS-DTYP 2.3.3: 100 ns ticks since 1601). */
#define FILETIME_UNIX_EPOCH 116444736000000000LL

/* --time trace: the offset of the file of the event being rendered, from
 * its log-file header's time zone (Bias, and StandardBias or DaylightBias
 * by the zone's daylight-saving rule at that instant:
 * etw_logfile_utc_offset). One per renderer (a -j worker has its own): set
 * before each event. */
static long trace_offset(void *ctx, int64_t ft) {
    const trace_zone *tz = ctx;
    return tz->header ? etw_logfile_utc_offset(tz->header, ft) : 0;
}

void trace_zone_set(void *tz, const etw_reader *r) { ((trace_zone *)tz)->header = etw_reader_logfile(r); }

/* --time local: this machine's offset from UTC at that instant (TZ rules). */
static long local_offset(void *ctx, int64_t ft) {
    (void)ctx;
    time_t t = (time_t)((ft - FILETIME_UNIX_EPOCH) / 10000000LL);
    struct tm tm;
    if (!localtime_r(&t, &tm)) return 0;
    return tm.tm_gmtoff;
}

static int out_of_memory(void) {
    fprintf(stderr, "etwdump: out of memory\n");
    return EXIT_FATAL;
}

/* CSV without --fields: one pass over the selected events to learn the
 * columns (schemas only: no payload is decoded), then back to the start. */
static int learn_columns(session *s, etw_renderer *rd) {
    const options *o = s->o;
    etw_event ev;
    size_t file;
    unsigned long long n = 0;
    s->dc->muted = 1; /* the same problems are reported by the real pass */
    /* no selection: every event is in, and nothing is labelled (the labeller
     * walks each payload; the renderer resolves the schema itself) */
    int all = etw_filter_is_empty(s->filter);
    while (etw_multi_next(s->m, &ev, &file) == ETW_OK && !stop_requested()) {
        int sel = all ? 1 : etw_filter_match(s->filter, s->dec, &ev, NULL);
        if (sel < 0) return out_of_memory();
        if (!sel || (o->no_manifest_events && etw_decoder_is_manifest_event(&ev))) continue;
        if (etw_renderer_learn(rd, etw_multi_reader(s->m, file), &ev) != ETW_OK) return out_of_memory();
        if (o->max_events && ++n >= o->max_events) break;
    }
    s->dc->muted = 0;
    if (etw_multi_rewind(s->m) != ETW_OK) {
        fprintf(stderr, "etwdump: cannot go back to the start of the input\n");
        return EXIT_FATAL;
    }
    return EXIT_CLEAN;
}

/* run_events' output, gathered into chunks: one write per chunk instead of
 * one per event (a CSV row is mostly commas, and long). */
#define OUT_CHUNK (256u * 1024u)
typedef struct out_chunk {
    FILE *f;
    char *buf; /* NULL (no memory): every event written as it comes */
    size_t len;
} out_chunk;

/* write_out's result (0, 1 a closed pipe, -1 an error) */
static int chunk_flush(out_chunk *c) {
    if (!c->len) return 0;
    size_t n = c->len;
    c->len = 0;
    return write_out(c->f, c->buf, n);
}

static int chunk_put(out_chunk *c, const char *p, size_t n) {
    if (c->buf && n < OUT_CHUNK) {
        if (c->len + n > OUT_CHUNK) {
            int w = chunk_flush(c);
            if (w) return w;
        }
        memcpy(c->buf + c->len, p, n);
        c->len += n;
        return 0;
    }
    int w = chunk_flush(c);
    return w ? w : write_out(c->f, p, n);
}

int run_events(session *s) {
    const options *o = s->o;
    etw_render_options ro;
    memset(&ro, 0, sizeof ro);
    ro.format = o->format;
    ro.json.decoder = s->dec;
    ro.json.raw_always = o->raw;
    ro.json.messages = o->messages;
    ro.fields = o->nfields ? o->fields : NULL;
    ro.nfields = (size_t)o->nfields;
    ro.csv_lf = o->csv_lf;
    ro.json.int64_as_string = o->int64_as_string;
    ro.time = o->time;
    ro.time_origin = s->origin;
    trace_zone tz = {0};
    ro.utc_offset = o->time_trace ? trace_offset : local_offset;
    ro.utc_offset_ctx = &tz;
    if (o->split_by_event) return run_split(s, &ro);
    stack_source *src = NULL;
    if (o->stacks) { /* the first pass: every event's stack */
        int sr = stack_source_build(s, &src);
        if (sr != EXIT_CLEAN) return sr;
        ro.json.stack = stack_source_fn;
        ro.json.stack_ctx = src;
    }
    etw_renderer *rd;
    if (etw_renderer_new(&rd, NULL, &ro) != ETW_OK) {
        stack_source_free(src);
        return out_of_memory();
    }
    if (s->with_file) etw_renderer_set_file(rd, etw_multi_name(s->m, 0)); /* CSV: the column */
    int rc = EXIT_CLEAN;
    if (o->format == ETW_RENDER_CSV && !o->nfields) rc = learn_columns(s, rd);
    const char *text;
    size_t len;
    int stopped = 0; /* a closed pipe */
    if (rc == EXIT_CLEAN) {
        if (etw_renderer_header(rd, &text, &len) != ETW_OK) rc = out_of_memory();
        else if (len) {
            int w = write_out(s->out, text, len);
            if (w < 0) rc = EXIT_FATAL;
            if (w > 0) stopped = 1;
        }
    }
    progress *pg = rc == EXIT_CLEAN && !stopped ? progress_start(o, s->m, input_bytes(s->m)) : NULL;
    int all = etw_filter_is_empty(s->filter);
    out_chunk oc = {s->out, malloc(OUT_CHUNK), 0};
    etw_event ev;
    size_t file;
    unsigned long long n = 0, read = 0;
    while (rc == EXIT_CLEAN && !stopped && etw_multi_next(s->m, &ev, &file) == ETW_OK) {
        progress_tick(pg, ++read, file, &ev);
        stack_source_next(src); /* counted as the first pass counted: every event */
        if (stop_requested()) {
            rc = EXIT_INTERRUPTED;
            break;
        }
        /* every event goes through the decoder (the filter resolves it), so
         * EventSource manifests are learned from events left out; with no
         * selection every event is rendered, which resolves it */
        int sel = all ? 1 : etw_filter_match(s->filter, s->dec, &ev, NULL);
        if (sel < 0) {
            rc = out_of_memory();
            break;
        }
        if (!sel || (o->no_manifest_events && etw_decoder_is_manifest_event(&ev))) continue;
        if (s->several) etw_renderer_set_file(rd, etw_multi_name(s->m, file));
        trace_zone_set(&tz, etw_multi_reader(s->m, file));
        field_check_event(s->fields_seen, s->dec, &ev);
        if (etw_renderer_event(rd, etw_multi_reader(s->m, file), &ev, &text, &len) != ETW_OK) {
            rc = out_of_memory();
            break;
        }
        int w = chunk_put(&oc, text, len);
        if (w < 0) rc = EXIT_FATAL;
        if (w > 0) stopped = 1;
        if (o->max_events && ++n >= o->max_events) {
            s->cut_short = 1;
            break;
        }
    }
    if (!stopped && rc != EXIT_FATAL) { /* what was rendered, also after an interruption */
        int w = chunk_flush(&oc);
        if (w < 0) rc = EXIT_FATAL;
        if (w > 0) stopped = 1;
    }
    free(oc.buf);
    if (stopped) s->cut_short = 1;
    progress_end(pg);
    if (!stopped && rc != EXIT_FATAL && etw_renderer_footer(rd, &text, &len) == ETW_OK && len &&
        write_out(s->out, text, len) < 0)
        rc = EXIT_FATAL; /* XML's closing tag, also after an interruption: the output stays well-formed */
    etw_renderer_free(rd);
    stack_source_free(src);
    etw_decoder_finish(s->dec);
    if (stop_requested() && rc == EXIT_CLEAN) rc = EXIT_INTERRUPTED;
    if (rc == EXIT_CLEAN && run_problems(s)) rc = EXIT_SKIPPED;
    return rc;
}

/* --- -j: the pipeline ------------------------------------------------------- */

/* --stats without -j: inputs smaller than this run on one thread. */
#define STATS_THREADS_MIN_BYTES ((unsigned long long)64 << 20)

int parallel_run(const options *o, etw_multi *m) {
    /* --stacks, --profile, --report and --format perfetto (its spans pair
     * events across the trace) read the trace in order, on one thread */
    if (o->schemas || o->stacks || o->profile || o->split_by_event || o->report || o->perfetto) return 0;
    int several = etw_multi_count(m) > 1;
    /* --stats: -j 1, -n (the reader's counts where it stops) and several
     * files stay in scan(); so does a small input without -j: one thread
     * reads it in about the time two take, with less CPU (the kernel trace
     * x10 of bench/stats_vs_snail.py, 31.5 MB: 22-27 ms CPU and wall at -j 1,
     * 35-50 ms CPU and 30-31 ms wall at -j 2; 63 MB: 41.7 vs 39.0 ms wall,
     * 41 vs 51 ms CPU) */
    if (o->stats)
        return !several && worker_threads(o) && !o->max_events && (o->jobs || input_bytes(m) >= STATS_THREADS_MIN_BYTES);
    /* several files with -j 1: run_events (the reference -j N is held to);
     * several files of tiny buffers too, where threads cost more than they
     * save (issue 23: two files of 10^6 buffers of 160 bytes took 5.4-6.4 s
     * at -j 2, 2.1-2.4 s at -j 1) */
    if (several && (!worker_threads(o) || etw_pipeline_small_buffers(m))) return 0;
    return 1;
}

/* CSV without --fields in the pipeline. When every input is a file, a
 * first pass learns the columns (learn_pass: the schemas only, no payload
 * decoded) and the run writes the header, then the rows as they come, on
 * any number of threads: nothing is held. From a stream (standard input,
 * a pipe: its bytes are in memory, but reading them twice is left to
 * files) the columns are learned as the events are rendered (etw_render.h
 * csv_stream), so the rows wait in a spill - memory first, then a
 * temporary file - until the header, which lists every column, is written
 * before them. One renderer: with one thread its columns come in the order
 * of the events, as the header wants them (workers would each learn their
 * own order). The spill cost a quarter of the run on net.4.5.2.x64.etl
 * (writing its 55 MB of rows to the file, reading them back, finding each
 * row's end mark and padding it), the first pass about a fifth of a JSON
 * run (the trace read and decompressed again, each event's schema
 * resolved).
 *
 * The memory is a list of SPILL_CHUNK blocks (each write of the pipeline,
 * whole rows, in one block), SPILL_MEM in all: small traces never touch the
 * disk. Past it the file: fresh memory costs more than the file's page
 * cache (net.4.5.2.x64.etl has 55 MB of rows; on the virtual machines
 * measured, faulting in 55 MB of new pages took as long as rendering them,
 * and the file took a quarter of that). */
#define SPILL_CHUNK (4u * 1024u * 1024u)
#define SPILL_MEM (4u * 1024u * 1024u)
#define SPILL_SLICE (1024u * 1024u)
typedef struct spill_chunk {
    struct spill_chunk *next;
    char *data;
    size_t len;
} spill_chunk;
typedef struct spill {
    spill_chunk *head, *tail;
    size_t mem;       /* bytes of the chunks */
    FILE *f;          /* past SPILL_MEM */
    size_t last_cols; /* the columns known at the last row kept */
    int failed;       /* no memory, or the temporary file failed (reported) */
} spill;

static spill_chunk *chunk_new(void) {
    spill_chunk *c = calloc(1, sizeof *c);
    if (c && !(c->data = malloc(SPILL_CHUNK))) {
        free(c);
        return NULL;
    }
    return c;
}

static void chunk_free(spill_chunk *c) {
    free(c->data);
    free(c);
}

static int spill_put(spill *sp, const char *p, size_t n) {
    if (n >= ETW_CSV_STREAM_MARK) { /* a write ends with a row's mark: the columns known */
        const unsigned char *k = (const unsigned char *)p + n - 4;
        sp->last_cols = (size_t)k[0] | (size_t)k[1] << 8 | (size_t)k[2] << 16 | (size_t)k[3] << 24;
    }
    if (!sp->f && n <= SPILL_CHUNK) {
        if (!sp->tail || sp->tail->len + n > SPILL_CHUNK) {
            spill_chunk *c = sp->mem + SPILL_CHUNK <= SPILL_MEM ? chunk_new() : NULL;
            if (c) {
                if (sp->tail) sp->tail->next = c;
                else sp->head = c;
                sp->tail = c;
                sp->mem += SPILL_CHUNK;
            }
        }
        if (sp->tail && sp->tail->len + n <= SPILL_CHUNK) {
            memcpy(sp->tail->data + sp->tail->len, p, n);
            sp->tail->len += n;
            return 0;
        }
    }
    /* past the memory (or a write larger than a block): the file, from now on */
    if (!sp->f && !(sp->f = tmpfile())) {
        fprintf(stderr, "etwdump: a temporary file for the CSV rows: %s\n", strerror(errno));
        sp->failed = 1;
        return -1;
    }
    if (fwrite(p, 1, n, sp->f) != n) {
        fprintf(stderr, "etwdump: writing a temporary file for the CSV rows: %s\n", strerror(errno));
        sp->failed = 1;
        return -1;
    }
    return 0;
}

/* Whole rows of p[0..n) in their final form to out (*used: the bytes
 * taken): write_out's result, -1 out of memory. */
static int finish_rows(spill *sp, etw_renderer *rd, FILE *out, const char *p, size_t n, size_t *used) {
    const char *text;
    size_t len;
    if (etw_renderer_csv_finish(rd, p, n, sp->last_cols, used, &text, &len) != ETW_OK) {
        out_of_memory();
        return -1;
    }
    return len ? write_out(out, text, len) : 0;
}

/* The header and the kept rows, padded to every column, to out: write_out's
 * result (1 a closed pipe), or -1 on an error (reported). Every write to the
 * spill ended a row, so the memory part holds whole rows. */
static int spill_finish(spill *sp, etw_renderer *rd, FILE *out) {
    const char *text;
    size_t len;
    if (etw_renderer_csv_header(rd, sp->last_cols, &text, &len) != ETW_OK) {
        out_of_memory();
        return -1;
    }
    int w = write_out(out, text, len);
    for (spill_chunk *c = sp->head; c && !w; c = c->next) {
        size_t pos = 0, slice = SPILL_SLICE;
        while (!w && pos < c->len) { /* a slice at a time: the text made stays small */
            size_t n = c->len - pos < slice ? c->len - pos : slice, used;
            w = finish_rows(sp, rd, out, c->data + pos, n, &used);
            if (!used && pos + n == c->len) break; /* a cut row (cannot happen) */
            if (!used) slice *= 2;                 /* a row longer than the slice */
            pos += used;
        }
    }
    if (w || !sp->f) return w;
    if (fflush(sp->f) != 0 || fseek(sp->f, 0, SEEK_SET) != 0) {
        fprintf(stderr, "etwdump: reading a temporary file for the CSV rows: %s\n", strerror(errno));
        return -1;
    }
    size_t cap = SPILL_SLICE, have = 0;
    char *buf = malloc(cap);
    if (!buf) {
        out_of_memory();
        return -1;
    }
    for (;;) {
        size_t k = fread(buf + have, 1, cap - have, sp->f);
        if (k == 0 && ferror(sp->f)) {
            fprintf(stderr, "etwdump: reading a temporary file for the CSV rows: %s\n", strerror(errno));
            w = -1;
            break;
        }
        have += k;
        if (!have) break;
        size_t used;
        w = finish_rows(sp, rd, out, buf, have, &used);
        if (w) break;
        if (!used && k == 0) break; /* a cut row at the end (cannot happen) */
        if (used) {
            memmove(buf, buf + used, have - used);
            have -= used;
        } else if (have == cap) { /* a row longer than the buffer */
            char *nb = realloc(buf, cap * 2);
            if (!nb) {
                out_of_memory();
                w = -1;
                break;
            }
            buf = nb;
            cap *= 2;
        }
    }
    free(buf);
    return w;
}

static void spill_free(spill *sp) {
    while (sp->head) {
        spill_chunk *n = sp->head->next;
        chunk_free(sp->head);
        sp->head = n;
    }
    if (sp->f) fclose(sp->f);
}

typedef struct par_run {
    session *s;
    etw_pipeline *p;  /* set before the run: the renderers ask it the event's file */
    /* Each file's reader and name, for the renderers on the workers (the
     * etw_multi's own fields share a cache line with its current file,
     * which the calling thread writes as the merge moves between files). */
    etw_reader **readers;
    const char **names;
    progress *pg;
    int setups;       /* decoders set up so far: problems are told for the first */
    int setup_rc;
    int stopped;      /* the reader of the pipe went away */
    int write_failed; /* reported */
    int interrupted;
    atomic_int oom;   /* a filter ran out of memory (on a worker) */
    int stream;       /* CSV without --fields: rows to the spill (one renderer) */
    spill sp;
    etw_renderer *stream_rd; /* the renderer of the one worker */
    /* CSV without --fields, every input a file: a first pass learns the
     * columns (learn_pass), then the rows go straight out */
    int learning;            /* that first pass is running */
    etw_renderer *cols;      /* the columns it learned, for the run's renderers */
    unsigned long long learned; /* the events learned from (-n: at most that many) */
} par_run;

/* One worker: its filter and renderer (single-threaded, like its decoder). */
typedef struct par_worker {
    etw_filter *filter;
    etw_renderer *rd;
    trace_zone tz; /* --time trace: the offset of the event's file */
    field_check *fc; /* --fields: the names this worker's events had */
} par_worker;

static void render_options(const session *s, etw_decoder *dec, etw_render_options *ro, trace_zone *tz, int stream) {
    const options *o = s->o;
    memset(ro, 0, sizeof *ro);
    ro->format = o->format;
    ro->json.decoder = dec;
    ro->json.raw_always = o->raw;
    ro->json.messages = o->messages;
    ro->fields = o->nfields ? o->fields : NULL;
    ro->nfields = (size_t)o->nfields;
    ro->csv_lf = o->csv_lf;
    ro->json.int64_as_string = o->int64_as_string;
    ro->time = o->time;
    ro->time_origin = s->origin;
    ro->utc_offset = o->time_trace ? trace_offset : local_offset;
    ro->utc_offset_ctx = tz;
    ro->csv_stream = stream;
}

static etw_status par_setup(void *ctx, etw_decoder *dec) {
    par_run *pr = ctx;
    pr->setups++;
    /* manifest problems are told, never counted in the exit status */
    if (manifests_attach(pr->s->dc->mf, dec) == EXIT_FATAL) {
        /* said; the pipeline makes no more decoders (each would load it again) */
        pr->setup_rc = EXIT_FATAL;
        return ETW_E_LIMIT;
    }
    add_windows(pr->s->o, dec);
    return ETW_OK;
}

static void *par_worker_new(void *ctx, etw_decoder *dec) {
    par_run *pr = ctx;
    par_worker *w = calloc(1, sizeof *w);
    if (!w) return NULL;
    etw_render_options ro;
    render_options(pr->s, dec, &ro, &w->tz, pr->stream);
    w->fc = field_check_new(pr->s->o);
    if (!(w->filter = build_filter(pr->s->o)) || etw_renderer_new(&w->rd, NULL, &ro) != ETW_OK) {
        field_check_free(w->fc);
        etw_filter_free(w->filter);
        free(w);
        return NULL;
    }
    etw_filter_set_origin(w->filter, pr->s->origin);
    if (pr->cols && !pr->learning && etw_renderer_learn_from(w->rd, pr->cols) != ETW_OK) {
        field_check_free(w->fc);
        etw_renderer_free(w->rd);
        etw_filter_free(w->filter);
        free(w);
        return NULL;
    }
    if (pr->stream) {
        pr->stream_rd = w->rd;
        /* the file column is in the header also when no event is kept */
        if (pr->s->with_file) etw_renderer_set_file(w->rd, pr->names[0]);
    }
    return w;
}

static void par_worker_free(void *ctx, void *state) {
    par_run *pr = ctx;
    par_worker *w = state;
    if (pr->learning) { /* the columns learned, kept for the run; the run's filters see the events again */
        if (pr->cols && etw_renderer_learn_from(pr->cols, w->rd) != ETW_OK) atomic_store(&pr->oom, 1);
        field_check_free(w->fc);
        etw_renderer_free(w->rd);
        etw_filter_free(w->filter);
        free(w);
        return;
    }
    /* on the calling thread: what each worker's filter saw, added up (out
     * of memory: fewer names to suggest, never a value wrongly unmatched) */
    etw_filter_merge_names(pr->s->filter, w->filter);
    field_check_merge(pr->s->fields_seen, w->fc);
    field_check_free(w->fc);
    etw_renderer_free(w->rd);
    etw_filter_free(w->filter);
    free(w);
}

/* Every event goes through the worker's decoder (the filter resolves it),
 * and the pipeline makes every decoder learn EventSource manifests and
 * kernel thread records, so events left out still teach. */
static int par_select(void *ctx, void *state, etw_decoder *dec, const etw_event *ev) {
    par_run *pr = ctx;
    par_worker *w = state;
    /* no selection: nothing to match (rendering resolves the event anyway,
     * and the pipeline feeds every decoder the events that teach) */
    int sel = etw_filter_is_empty(w->filter) ? 1 : etw_filter_match(w->filter, dec, ev, NULL);
    if (sel < 0) {
        atomic_store(&pr->oom, 1);
        return 0;
    }
    return sel && !(pr->s->o->no_manifest_events && etw_decoder_is_manifest_event(ev));
}

static etw_status par_render(void *ctx, void *state, etw_decoder *dec, const etw_event *ev,
                             etw_pipeline_out *out) {
    par_run *pr = ctx;
    par_worker *w = state;
    const session *s = pr->s;
    size_t file = s->several ? etw_pipeline_event_file(pr->p, dec) : 0;
    if (pr->learning) {
        /* one thread: the selected events in order; a batch is rendered
         * whole, past -n too, but only the first -n are written */
        if (s->o->max_events && pr->learned >= s->o->max_events) return ETW_OK;
        pr->learned++;
        return etw_renderer_learn(w->rd, pr->readers[file], ev);
    }
    if (s->with_file) etw_renderer_set_file(w->rd, pr->names[file]);
    trace_zone_set(&w->tz, pr->readers[file]);
    field_check_event(w->fc, dec, ev);
    const char *text;
    size_t len;
    etw_status st = etw_renderer_event(w->rd, pr->readers[file], ev, &text, &len);
    return st == ETW_OK ? etw_pipeline_emit(out, text, len) : st;
}

static etw_status par_write(void *ctx, const void *data, size_t len) {
    par_run *pr = ctx;
    if (pr->stream) {
        if (spill_put(&pr->sp, data, len) == 0) return ETW_OK;
        pr->write_failed = 1;
        return ETW_E_IO;
    }
    int w = write_out(pr->s->out, data, len);
    if (w == 0) return ETW_OK;
    if (w > 0) pr->stopped = 1;
    else pr->write_failed = 1;
    return ETW_E_IO;
}

static int par_on_read(void *ctx, uint64_t n, const etw_event *ev) {
    par_run *pr = ctx;
    progress_tick(pr->pg, n, etw_multi_current(pr->s->m), ev);
    if (stop_requested()) {
        pr->interrupted = 1;
        return 1;
    }
    return 0;
}

/* Run p over the session's files: with --file-order or several files the
 * merged metadata of every file is learned first (without the merge by
 * time a MetaData record may come anywhere after the first event it
 * describes; with several files its place in the merged timeline depends
 * on the other files, and -j 1 pre-scans every file too); the
 * progress line runs meanwhile (*pg is set before the run: the pipeline's
 * on_read hook reads it). EXIT_FATAL, reported here, when the pre-scan
 * fails; else EXIT_CLEAN with the run's status in *st. */
int pipeline_run_session(etw_pipeline *p, session *s, progress **pg, etw_status *st) {
    const options *o = s->o;
    if (o->file_order || s->several) {
        s->dc->muted = 1;
        *st = etw_pipeline_prescan(p);
        s->dc->muted = 0;
        if (*st != ETW_OK) {
            fprintf(stderr, "etwdump: %s: %s\n", etw_multi_name(s->m, etw_multi_current(s->m)), etw_strerror(*st));
            return EXIT_FATAL;
        }
    }
    *pg = progress_start(o, s->m, input_bytes(s->m));
    *st = etw_pipeline_run(p);
    progress_end(*pg);
    return EXIT_CLEAN;
}

static int run_pipeline(session *s, par_run *pr);

/* The options both passes give their pipelines. */
static void pipeline_options(session *s, par_run *pr, etw_pipeline_options *po) {
    const options *o = s->o;
    memset(po, 0, sizeof *po);
    po->threads = pr->stream || pr->learning ? 0 : worker_threads(o);
    po->decoder.on_diag = on_decoder_diag;
    po->decoder.lang = o->lang;
    po->decoder.tl_cache_bytes = o->tl_cache_bytes;
    po->decoder.diag_ctx = s->dc;
    po->decoder.no_default_manifests = o->no_default_manifests;
    po->decoder.builtins = s->dc->builtins;
    po->decoder.on_manifest_diag = on_manifest_diag;
    po->decoder.manifest_diag_ctx = s->dc->mf;
    po->setup = par_setup;
    po->worker_new = par_worker_new;
    po->worker_free = par_worker_free;
    po->select = par_select;
    po->render = par_render;
    po->write = par_write;
    po->on_read = par_on_read;
    po->ctx = pr;
    po->max_events = o->max_events;
}

/* CSV without --fields when every input is a file: the columns of the
 * events the run will write, learned by a first pass through a pipeline
 * of one thread set up as the run's (the same decoders, prescan, filter
 * and -n: the same schemas for the same events, in the same order), that
 * only resolves each event's schema (etw_renderer_learn: no payload is
 * decoded, nothing rendered). The header can then come first and the rows
 * go straight out, from any number of threads, with no spill. Its
 * problems come again in the run: muted. 1 with pr->cols set; 0 when the
 * pass did not end (interrupted, no memory, a fatal problem: the run in
 * one pass, which meets and tells the same), the input rewound either
 * way; -1 when it cannot be (reported). */
static int learn_pass(session *s, par_run *pr) {
    etw_render_options ro;
    trace_zone tz = {0};
    render_options(s, NULL, &ro, &tz, 0);
    if (etw_renderer_new(&pr->cols, NULL, &ro) != ETW_OK) return 0;
    etw_pipeline_options po;
    pr->learning = 1;
    pipeline_options(s, pr, &po);
    po.decoder.on_diag = NULL; /* the run tells them */
    po.write = NULL;           /* nothing is rendered */
    if (etw_filter_is_empty(s->filter) && !s->o->no_manifest_events) po.select = NULL; /* every event */
    etw_pipeline *p;
    etw_status st = etw_pipeline_new_multi(&p, s->m, &po);
    if (st == ETW_OK) {
        if (pr->setup_rc == EXIT_FATAL) st = ETW_E_INVALID_ARG;
        pr->p = p;
        s->dc->muted = 1;
        if (st == ETW_OK && (s->o->file_order || s->several)) st = etw_pipeline_prescan(p);
        if (st == ETW_OK) st = etw_pipeline_run(p);
        s->dc->muted = 0;
        etw_pipeline_free(p); /* the worker's columns into pr->cols */
    }
    pr->p = NULL;
    pr->learning = 0;
    pr->setups = 0;
    pr->setup_rc = EXIT_CLEAN;
    int ok = st == ETW_OK && !atomic_load(&pr->oom) && !pr->interrupted;
    atomic_store(&pr->oom, 0);
    pr->interrupted = 0;
    if (!ok) {
        etw_renderer_free(pr->cols);
        pr->cols = NULL;
    }
    if (etw_multi_rewind(s->m) != ETW_OK) {
        fprintf(stderr, "etwdump: cannot go back to the start of the input\n");
        return -1;
    }
    return ok;
}

int run_events_parallel(session *s) {
    par_run pr;
    memset(&pr, 0, sizeof pr);
    pr.s = s;
    atomic_init(&pr.oom, 0);
    size_t n = etw_multi_count(s->m);
    pr.readers = calloc(n, sizeof *pr.readers);
    pr.names = calloc(n, sizeof *pr.names);
    int rc = pr.readers && pr.names ? EXIT_CLEAN : out_of_memory();
    for (size_t i = 0; rc == EXIT_CLEAN && i < n; i++) {
        pr.readers[i] = etw_multi_reader(s->m, i);
        pr.names[i] = etw_multi_name(s->m, i);
    }
    pr.stream = s->o->format == ETW_RENDER_CSV && !s->o->nfields;
    if (rc == EXIT_CLEAN && pr.stream && inputs_all_files()) {
        int lp = learn_pass(s, &pr);
        if (lp < 0) rc = EXIT_FATAL;
        if (lp > 0) pr.stream = 0; /* the columns are known: no spill */
    }
    if (rc == EXIT_CLEAN) rc = run_pipeline(s, &pr);
    etw_renderer_free(pr.cols);
    spill_free(&pr.sp);
    free(pr.readers);
    free(pr.names);
    return rc;
}

/* The pipeline over the session's files, with pr's file tables set. */
static int run_pipeline(session *s, par_run *pr) {
    const options *o = s->o;
    /* the header (CSV columns, text heading), from a renderer of our own */
    etw_render_options ro;
    trace_zone tz = {0};
    render_options(s, NULL, &ro, &tz, 0);
    if (!pr->stream) { /* else the header follows the run */
        etw_renderer *hd;
        if (etw_renderer_new(&hd, NULL, &ro) != ETW_OK) return out_of_memory();
        if (s->with_file) etw_renderer_set_file(hd, etw_multi_name(s->m, 0)); /* CSV: the column */
        const char *text;
        size_t len;
        etw_status hs = pr->cols ? etw_renderer_learn_from(hd, pr->cols) : ETW_OK;
        if (hs == ETW_OK) hs = etw_renderer_header(hd, &text, &len);
        int w = hs == ETW_OK && len ? write_out(s->out, text, len) : 0;
        etw_renderer_free(hd);
        if (hs != ETW_OK) return out_of_memory();
        if (w < 0) return EXIT_FATAL;
        if (w > 0) return EXIT_CLEAN;
    }
    etw_pipeline_options po;
    pipeline_options(s, pr, &po);
    etw_pipeline *p;
    etw_status st = etw_pipeline_new_multi(&p, s->m, &po);
    if (st != ETW_OK && pr->setup_rc == EXIT_FATAL) return EXIT_FATAL; /* a manifest: said */
    if (st != ETW_OK) return out_of_memory();
    pr->p = p;
    if (pipeline_run_session(p, s, &pr->pg, &st) != EXIT_CLEAN) {
        etw_pipeline_free(p);
        return EXIT_FATAL;
    }
    int rc = pr->setup_rc;
    if (st == ETW_OK && atomic_load(&pr->oom)) st = ETW_E_NOMEM;
    if (pr->stream && !pr->sp.failed && (st == ETW_OK || pr->interrupted)) {
        /* the header and the rows kept, also after an interruption */
        int fw = pr->stream_rd ? spill_finish(&pr->sp, pr->stream_rd, s->out) : -1;
        if (fw > 0) pr->stopped = 1;
        if (fw < 0) {
            pr->write_failed = 1;
            st = ETW_E_IO;
        }
    }
    if (pr->interrupted || (stop_requested() && !pr->stopped)) {
        rc = EXIT_INTERRUPTED;
    } else if (pr->stopped) {
        /* the reader of the pipe went away: a quiet stop */
        s->cut_short = 1;
    } else if (st != ETW_OK) {
        if (!pr->write_failed) fprintf(stderr, "etwdump: %s\n", etw_strerror(st));
        rc = EXIT_FATAL;
    } else if (rc == EXIT_CLEAN) {
        int problems = etw_pipeline_stats_get(p)->decoder_problems != 0;
        for (size_t i = 0; i < etw_multi_count(s->m); i++)
            if (etw_reader_stats_get(etw_multi_reader(s->m, i))->problems) problems = 1;
        if (problems) rc = EXIT_SKIPPED;
    }
    if (o->max_events && etw_pipeline_stats_get(p)->events_written >= o->max_events) s->cut_short = 1;
    etw_pipeline_free(p);
    if (!pr->stopped && rc != EXIT_FATAL) {
        /* XML's closing tag, also after an interruption: the output stays well-formed */
        const char *ft;
        size_t fl;
        etw_renderer *fr;
        if (etw_renderer_new(&fr, NULL, &ro) != ETW_OK) return out_of_memory();
        if (etw_renderer_footer(fr, &ft, &fl) == ETW_OK && fl && write_out(s->out, ft, fl) < 0) rc = EXIT_FATAL;
        etw_renderer_free(fr);
    }
    return rc;
}
