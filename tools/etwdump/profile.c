/* etwdump - the profile stage (etw_profile.h): --profile writes a CPU (or
 * --event) profile of the selected events, --stacks names every event's
 * stack. Both read the trace on one thread. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "etwdump.h"

/* Kernel PerfInfo class (TraceEvent's PerfInfoTaskGuid) and its Sample
 * opcode (SampledProfile). */
static const etw_guid perfinfo_guid = {0xce1dbfb4, 0x137e, 0x4da6, {0x87, 0xb0, 0x3f, 0x59, 0xaa, 0x10, 0x2c, 0xbc}};
#define PERFINFO_SAMPLE 46

static int out_of_memory(void) {
    fprintf(stderr, "etwdump: out of memory\n");
    return EXIT_FATAL;
}

void profile_options_init(const session *s, etw_decoder *dec, etw_profile_options *po) {
    memset(po, 0, sizeof *po);
    po->decoder = dec;
    po->symbol_paths = s->o->nsymbols ? s->o->symbols : NULL;
    po->nsymbol_paths = (size_t)s->o->nsymbols;
    po->on_diag = on_decoder_diag;
    po->diag_ctx = s->dc;
}

/* The number a top-level scalar field of ev holds: 1 and *out set, 0 when
 * ev has no such field or it is not a number. */
static int field_number(etw_decoder *dec, const etw_event *ev, const etw_schema *sc, const char *name, double *out) {
    if (!sc) return 0;
    etw_decode_cursor c;
    if (etw_decoder_begin(dec, ev, sc, &c) != ETW_OK) return 0;
    etw_value v;
    while (etw_decode_next(&c, &v) == ETW_OK) {
        if (v.depth != 0 || v.kind != ETW_VALUE_SCALAR || !v.name || strcmp(v.name, name)) continue;
        if (etw_value_is_integer(&v)) {
            *out = (double)etw_value_u64(&v);
            return 1;
        }
        if (v.in_type == ETW_INTYPE_FLOAT || v.in_type == ETW_INTYPE_DOUBLE) {
            double d = etw_value_double(&v);
            if (d != d) return 0; /* NaN: no weight */
            *out = d;
            return 1;
        }
        return 0;
    }
    return 0;
}

/* --- --profile ---------------------------------------------------------------- */

typedef struct pick_ctx {
    session *s;
    int by_event;       /* --event given: the selected events are the samples */
    int oom;
} pick_ctx;

/* etw_profile_sample_fn: the selection options decide. CPU samples keep
 * PerfView's idle filter (docs/stacks.md: a sample of thread 0 is idle
 * unless the low bits of Reserved say NonProcess). */
static int pick(void *ctx, const etw_event *ev, const etw_schema *sc, uint32_t pid, uint32_t tid, double *weight) {
    pick_ctx *c = ctx;
    (void)pid;
    int cpu = etw_guid_equal(&ev->provider, &perfinfo_guid) && ev->opcode == PERFINFO_SAMPLE;
    if (!c->by_event && !cpu) {
        /* still shown to the filter: it learns the names it reports */
        if (etw_filter_match(c->s->filter, c->s->dec, ev, NULL) < 0) c->oom = 1;
        return 0;
    }
    int sel = etw_filter_match(c->s->filter, c->s->dec, ev, NULL);
    if (sel < 0) c->oom = 1;
    if (sel <= 0) return 0;
    if (cpu && !c->by_event && tid == 0) {
        double reserved = 0;
        if (!field_number(c->s->dec, ev, sc, "Reserved", &reserved) || ((uint64_t)reserved & 3) == 0) return 0;
    }
    *weight = 1.0;
    if (c->s->o->weight && !field_number(c->s->dec, ev, sc, c->s->o->weight, weight)) return 0;
    return 1;
}

static int has_event_option(const options *o) {
    for (int i = 0; i < o->nfilters; i++)
        if (!strcmp(o->filters[i].key, "event") && !o->filters[i].exclude && o->filters[i].value[0] != '!')
            return 1;
    return 0;
}

/* Problems of the run, as run_events counts them. */
static int run_problems(session *s) {
    const etw_decoder_stats *ds = etw_decoder_stats_get(s->dec);
    int problems = ds->problems - ds->manifest_problems != 0;
    for (size_t i = 0; i < etw_multi_count(s->m); i++)
        if (etw_reader_stats_get(etw_multi_reader(s->m, i))->problems) problems = 1;
    return problems;
}

int run_profile(session *s) {
    const options *o = s->o;
    pick_ctx pk = {s, has_event_option(o), 0};
    etw_profile_options po;
    profile_options_init(s, s->dec, &po);
    /* no selection: the profile's own CPU samples (the same rule) */
    if (pk.by_event || !etw_filter_is_empty(s->filter)) {
        po.is_sample = pick;
        po.sample_ctx = &pk;
    }
    etw_profile *p;
    if (etw_profile_new(&p, &po) != ETW_OK) return out_of_memory();
    progress *pg = progress_start(o, s->m, input_bytes(s->m));
    etw_event ev;
    size_t file;
    unsigned long long read = 0;
    int rc = EXIT_CLEAN;
    while (etw_multi_next(s->m, &ev, &file) == ETW_OK) {
        progress_tick(pg, ++read, file, &ev);
        if (stop_requested()) {
            rc = EXIT_INTERRUPTED;
            break;
        }
        const etw_schema *sc = NULL;
        if (!ev.is_logfile_header) etw_decoder_resolve(s->dec, &ev, &sc, NULL);
        if (etw_profile_add(p, &ev, sc) != ETW_OK || pk.oom) {
            rc = out_of_memory();
            break;
        }
    }
    progress_end(pg);
    etw_decoder_finish(s->dec);
    if (rc == EXIT_CLEAN && etw_profile_finish(p) != ETW_OK) rc = out_of_memory();
    if (rc == EXIT_CLEAN) {
        errno = 0;
        etw_status st = etw_profile_write(p, o->profile_format, s->out);
        if (st == ETW_E_IO && errno == EPIPE) {
            s->cut_short = 1; /* the reader of the pipe went away: a quiet stop */
        } else if (st == ETW_E_IO) {
            fprintf(stderr, "etwdump: %s: write error: %s\n", o->output ? o->output : "standard output",
                    strerror(errno));
            rc = EXIT_FATAL;
        } else if (st != ETW_OK) {
            rc = out_of_memory();
        }
    }
    if (rc == EXIT_CLEAN) {
        etw_profile_stats ps;
        etw_profile_stats_get(p, &ps);
        if (!ps.samples && !o->quiet)
            fprintf(stderr, "etwdump: --profile: no sample selected (%s)\n",
                    pk.by_event ? "no selected event" : "no PerfInfo/Sample event of the selection");
        if (o->verbose)
            fprintf(stderr,
                    "etwdump: profile: %llu samples, %llu with a stack; %u stacks, %u frames; "
                    "%llu of %llu stack events attached\n",
                    (unsigned long long)ps.samples, (unsigned long long)ps.samples_with_stack,
                    etw_profile_stack_count(p), etw_profile_frame_count(p),
                    (unsigned long long)ps.stacks_attached, (unsigned long long)ps.stack_events);
        if (run_problems(s)) rc = EXIT_SKIPPED;
    }
    etw_profile_free(p);
    return rc;
}

/* --- --stacks ------------------------------------------------------------------- */

struct stack_source {
    etw_profile *p;
    etw_decoder *dec;     /* the first pass's own: the second decodes as a plain run */
    uint64_t seen;        /* events counted by stack_source_next */
    char *pool;           /* every frame's label */
    size_t *off;
    size_t *len;
    etw_json_frame *fr;
    size_t frcap;
};

void stack_source_free(stack_source *src) {
    if (!src) return;
    etw_profile_free(src->p);
    etw_decoder_free(src->dec);
    free(src->pool);
    free(src->off);
    free(src->len);
    free(src->fr);
    free(src);
}

/* Every frame's label, once. */
static int label_frames(stack_source *src) {
    uint32_t n = etw_profile_frame_count(src->p);
    src->off = calloc(n ? n : 1, sizeof *src->off);
    src->len = calloc(n ? n : 1, sizeof *src->len);
    if (!src->off || !src->len) return 0;
    size_t cap = 4096, used = 0;
    src->pool = malloc(cap);
    if (!src->pool) return 0;
    for (uint32_t f = 0; f < n; f++) {
        etw_frame_info fi;
        if (etw_profile_frame(src->p, f, &fi) != ETW_OK) continue;
        size_t need = etw_frame_label(&fi, NULL, 0);
        if (cap - used < need + 1) {
            while (cap - used < need + 1) cap *= 2;
            char *np = realloc(src->pool, cap);
            if (!np) return 0;
            src->pool = np;
        }
        etw_frame_label(&fi, src->pool + used, need + 1);
        src->off[f] = used;
        src->len[f] = need;
        used += need;
    }
    return 1;
}

int stack_source_build(session *s, stack_source **out) {
    *out = NULL;
    stack_source *src = calloc(1, sizeof *src);
    if (!src) return out_of_memory();
    /* its own decoder, told nothing (the second pass tells the problems) */
    diag_ctx quiet = *s->dc;
    quiet.quiet = 1;
    int rc = setup_decoder(s->o, s->m, &quiet, &src->dec);
    if (rc == EXIT_FATAL) {
        stack_source_free(src);
        return rc;
    }
    etw_profile_options po;
    profile_options_init(s, src->dec, &po);
    po.keep_event_stacks = 1;
    if (etw_profile_new(&src->p, &po) != ETW_OK) {
        stack_source_free(src);
        return out_of_memory();
    }
    s->dc->muted = 1;
    etw_event ev;
    size_t file;
    rc = EXIT_CLEAN;
    while (etw_multi_next(s->m, &ev, &file) == ETW_OK) {
        if (stop_requested()) {
            rc = EXIT_INTERRUPTED;
            break;
        }
        const etw_schema *sc = NULL;
        if (!ev.is_logfile_header) etw_decoder_resolve(src->dec, &ev, &sc, NULL);
        if (etw_profile_add(src->p, &ev, sc) != ETW_OK) {
            rc = out_of_memory();
            break;
        }
    }
    s->dc->muted = 0;
    if (rc == EXIT_CLEAN && etw_profile_finish(src->p) != ETW_OK) rc = out_of_memory();
    if (rc == EXIT_CLEAN && !label_frames(src)) rc = out_of_memory();
    if (rc == EXIT_CLEAN && etw_multi_rewind(s->m) != ETW_OK) {
        fprintf(stderr, "etwdump: cannot go back to the start of the input\n");
        rc = EXIT_FATAL;
    }
    if (rc != EXIT_CLEAN) {
        stack_source_free(src);
        return rc;
    }
    *out = src;
    return EXIT_CLEAN;
}

void stack_source_next(stack_source *src) {
    if (src) src->seen++;
}

size_t stack_source_fn(void *ctx, const etw_event *ev, const etw_json_frame **frames) {
    stack_source *src = ctx;
    (void)ev;
    if (!src->seen) return 0;
    uint32_t node = etw_profile_event_stack(src->p, src->seen - 1);
    if (node == ETW_STACK_NONE) return 0;
    size_t depth = etw_profile_stack_depth(src->p, node);
    if (depth > src->frcap) {
        etw_json_frame *nf = realloc(src->fr, depth * sizeof *nf);
        if (!nf) return 0;
        src->fr = nf;
        src->frcap = depth;
    }
    uint32_t nframes = etw_profile_frame_count(src->p);
    size_t n = 0;
    for (; node != ETW_STACK_NONE && n < depth; node = etw_profile_stack_parent(src->p, node)) {
        uint32_t f = etw_profile_stack_frame(src->p, node);
        if (f >= nframes) {
            src->fr[n].s = "?";
            src->fr[n].len = 1;
        } else {
            src->fr[n].s = src->pool + src->off[f];
            src->fr[n].len = src->len[f];
        }
        n++;
    }
    *frames = src->fr;
    return n;
}
