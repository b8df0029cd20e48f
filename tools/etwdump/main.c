/* etwdump - decode Windows ETW traces (.etl) to JSON Lines, text or CSV, or
 * summarize them. Uses only the public API of libetwdecode. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "etwdump.h"

static const char *diag_file(const diag_ctx *c) {
    if (c->path) return c->path; /* while opening */
    if (c->multi && etw_multi_count(c->multi))
        return etw_multi_name(c->multi, etw_multi_current(c->multi));
    return "?";
}

static void on_diag(void *ctx, const etw_diag *d) {
    diag_ctx *c = ctx;
    /* an archive's entry that is not a trace: skipped like a file */
    if (c->path && c->lost_entries && d->status == ETW_E_NOT_ETL) (*c->lost_entries)++;
    if (c->hold) c->held = 1;
    if (c->quiet || c->muted || c->hold) return;
    fprintf(stderr, "etwdump: %s: offset 0x%llx: %s\n", diag_file(c), (unsigned long long)d->file_offset,
            d->message);
}

/* Problems learning schemas (manifests name their own file and line); a
 * manifest that cannot be read is said even with --quiet (it stops the
 * run); status ETW_OK is a warning (nothing lost). */
void on_decoder_diag(void *ctx, const etw_diag *d) {
    diag_ctx *c = ctx;
    if (c->hold) {
        c->held = 1;
        return;
    }
    if (c->quiet && d->status != ETW_E_IO) return;
    fprintf(stderr, "etwdump: %s%s\n", d->status == ETW_OK ? "warning: " : "", d->message);
}

/* etw_decoder_prescan, noting whether the trace has stacks on the way:
 * the same MetaData records learned (etw_decoder_learn learns one as the
 * pre-scan does), the reader rewound. */
static etw_status prescan_noting(etw_decoder *d, etw_reader *r, int *stacks) {
    etw_event ev;
    etw_status s;
    while ((s = etw_reader_next(r, &ev)) == ETW_OK) {
        if (!*stacks && has_stacks(&ev)) *stacks = 1;
        /* the pre-scan's fast path: only the MetaData provider's records are learned */
        if (ev.provider.data1 == METADATA_PROVIDER_DATA1 && etw_decoder_learn_kind(d, &ev) == ETW_LEARN_AHEAD &&
            etw_decoder_learn(d, &ev) == ETW_E_NOMEM)
            return ETW_E_NOMEM;
    }
    if (s != ETW_END) return s;
    return etw_reader_rewind(r);
}

int setup_decoder(const options *o, etw_multi *m, diag_ctx *dc, etw_decoder **out) {
    return setup_decoder_ex(o, m, dc, 1, NULL, out);
}

/* The decoder with the user's manifests and each file's merged schemas. */
int setup_decoder_ex(const options *o, etw_multi *m, diag_ctx *dc, int prescan, int *stacks, etw_decoder **out) {
    if (stacks) *stacks = 0;
    etw_decoder_options dopt = {0};
    dopt.on_diag = on_decoder_diag;
    dopt.diag_ctx = dc;
    dopt.lang = o->lang;
    dopt.tl_cache_bytes = o->tl_cache_bytes;
    dopt.no_default_manifests = o->no_default_manifests;
    dopt.builtins = dc->builtins;
    dopt.on_manifest_diag = on_manifest_diag;
    dopt.manifest_diag_ctx = dc->mf;
    if (etw_decoder_new(out, &dopt) != ETW_OK) {
        fprintf(stderr, "etwdump: out of memory\n");
        return EXIT_FATAL;
    }
    /* manifest problems are told, never counted in the exit status */
    int rc = manifests_attach(dc->mf, *out);
    if (rc == EXIT_FATAL) return rc;
    add_windows(o, *out);
    dc->muted = 1;
    for (size_t i = 0; prescan && i < etw_multi_count(m); i++) {
        etw_status ps = stacks ? prescan_noting(*out, etw_multi_reader(m, i), stacks)
                               : etw_decoder_prescan(*out, etw_multi_reader(m, i));
        if (ps != ETW_OK) {
            dc->muted = 0;
            fprintf(stderr, "etwdump: %s: %s\n", etw_multi_name(m, i), etw_strerror(ps));
            return EXIT_FATAL;
        }
    }
    dc->muted = 0;
    return rc;
}

int run_problems(const session *s) {
    /* no decoder of its own (--stats -j N): the pipeline's, said by it */
    const etw_decoder_stats *ds = s->dec ? etw_decoder_stats_get(s->dec) : NULL;
    int problems = ds ? ds->problems - ds->manifest_problems != 0 : s->par_problems; /* manifests: told, not counted */
    for (size_t i = 0; i < etw_multi_count(s->m); i++)
        if (etw_reader_stats_get(etw_multi_reader(s->m, i))->problems) problems = 1;
    return problems;
}

/* The shared schema sources of every decoder: --windows images and the
 * --tmf messages. */
void add_windows(const options *o, etw_decoder *dec) {
    for (int i = 0; i < o->nwindows; i++)
        if (o->win_index[i]) etw_decoder_add_windows(dec, o->win_index[i]);
    if (o->tmf_set) etw_decoder_add_wpp_set(dec, o->tmf_set);
}

/* Load the --tmf files (TMF text or PDBs) and the TMF annotations of the
 * PDBs in the --symbols stores into one set all decoders share
 * (read-only). A file that breaks the TMF grammar, or a damaged PDB, is
 * told and left out; a --tmf path that cannot be read stops the run. */
static int open_tmf(options *o) {
    if (!o->ntmf && !o->nsymbols) return 1;
    if (etw_wpp_set_new(&o->tmf_set, NULL) != ETW_OK) {
        fprintf(stderr, "etwdump: out of memory\n");
        return 0;
    }
    for (int i = 0; i < o->ntmf + o->nsymbols; i++) {
        int tmf = i < o->ntmf;
        etw_status st = tmf ? etw_wpp_add_tmf_path(o->tmf_set, o->tmf[i], NULL)
                            : etw_wpp_add_symbol_store(o->tmf_set, o->symbols[i - o->ntmf], NULL);
        if (st == ETW_OK) continue;
        const char *opt = tmf ? "--tmf" : "--symbols";
        if (st == ETW_E_NOMEM || (tmf && st == ETW_E_IO)) {
            fprintf(stderr, "etwdump: %s %s\n", opt, etw_wpp_set_error(o->tmf_set));
            return 0;
        }
        if (!o->quiet) fprintf(stderr, "etwdump: warning: %s %s\n", opt, etw_wpp_set_error(o->tmf_set));
    }
    return 1;
}

/* Problems indexing a Windows folder: damaged files are warnings (the
 * scan goes on), a folder that is not a Windows image is an error. */
static void on_windows_diag(void *ctx, const etw_diag *d) {
    const diag_ctx *c = ctx;
    if (c->quiet && d->status != ETW_E_NOT_FOUND) return;
    fprintf(stderr, "etwdump: %s%s\n", d->status == ETW_E_NOT_FOUND ? "" : "warning: ", d->message);
}

/* Open the --windows indexes (a cache file keeps each between runs). */
static int open_windows(options *o, diag_ctx *dc) {
    for (int i = 0; i < o->nwindows; i++) {
        etw_windows_options wo = {0};
        wo.on_diag = on_windows_diag;
        wo.diag_ctx = dc;
        etw_status st = etw_windows_index_open(&o->win_index[i], o->windows[i], &wo);
        if (st == ETW_E_NOT_FOUND) return 0; /* said by on_windows_diag */
        if (st != ETW_OK) {
            fprintf(stderr, "etwdump: --windows %s: %s\n", o->windows[i], etw_strerror(st));
            return 0;
        }
    }
    return 1;
}

static void close_windows(options *o) {
    for (int i = 0; i < o->nwindows; i++) {
        etw_windows_index_free(o->win_index[i]);
        o->win_index[i] = NULL;
    }
}

unsigned worker_threads(const options *o) {
    unsigned j = o->jobs ? o->jobs : etw_pipeline_cpu_count();
    if (j > MAX_JOBS) j = MAX_JOBS;
    return j <= 1 ? 0 : j;
}

int main(int argc, char **argv) {
    static options o; /* large (the input and field lists): not on the stack */
    if (!parse_args(argc, argv, &o)) return EXIT_FATAL;
    heap_setup(); /* after the options: --help and --version touch no huge page */
    if (o.tmf_pdb) return run_tmf_from_pdb(&o);
    signals_install();
    diag_ctx dc = {0};
    dc.quiet = o.quiet;
    etw_reader_options ro = {0};
    ro.on_diag = on_diag;
    ro.diag_ctx = &dc;
    ro.file_order = o.file_order;
    ro.no_map = o.no_map;
    etw_multi *m;
    if (etw_multi_new(&m, &ro) != ETW_OK) {
        fprintf(stderr, "etwdump: out of memory\n");
        return EXIT_FATAL;
    }
    int skipped = 0;
    int opened = open_inputs(&o, &ro, m, &dc, &skipped);
    if (!opened) {
        etw_multi_free(m);
        inputs_free();
        return EXIT_FATAL;
    }
    dc.multi = m;
    if (manifests_open(&o, &dc.mf) == EXIT_FATAL) {
        manifests_free(dc.mf);
        etw_multi_free(m);
        inputs_free();
        return EXIT_FATAL;
    }
    FILE *out = stdout;
    if (o.output && !o.split_by_event && !(out = fopen(o.output, "wb"))) {
        fprintf(stderr, "etwdump: %s: %s\n", o.output, strerror(errno));
        manifests_free(dc.mf);
        etw_multi_free(m);
        inputs_free();
        return EXIT_FATAL;
    }
    output_name_set(o.output);
    etw_decoder *dec = NULL;
    etw_filter *filter = NULL;
    if (!open_windows(&o, &dc) || !open_tmf(&o)) {
        close_windows(&o);
        etw_wpp_set_free(o.tmf_set);
        etw_multi_free(m);
        inputs_free();
        return EXIT_FATAL;
    }
    int parallel = parallel_run(&o, m);
    /* the pipeline makes its own decoders and filters, one per thread */
    /* --stats: whether the trace has stacks is known before the scan; on
     * one thread without -n and the options whose sources load lazily,
     * --stats, --report, --profile and --schemas go without the pre-scan
     * first (ahead.c), and so does --stacks over one file (its first pass
     * keeps the MetaData records for the run's decoder:
     * stack_source_build) */
    int stacks = 1;
    int no_prescan = (o.stats || o.report || o.profile || o.schemas || (o.stacks && etw_multi_count(m) == 1)) &&
                     !parallel && !o.max_events && !o.nmanifests && !o.nwindows && !o.ntmf && !o.nsymbols;
    int rc = EXIT_CLEAN;
    if (etw_builtins_new(&dc.builtins, NULL) != ETW_OK) {
        fprintf(stderr, "etwdump: out of memory\n");
        rc = EXIT_FATAL;
    }
    if (rc != EXIT_FATAL && !parallel)
        rc = setup_decoder_ex(&o, m, &dc, !no_prescan, o.stats && !no_prescan ? &stacks : NULL, &dec);
    if (no_prescan) stacks = 0;
    if (rc != EXIT_FATAL && !(filter = build_filter(&o))) rc = EXIT_FATAL;
    if (rc != EXIT_FATAL) {
        session s;
        memset(&s, 0, sizeof s);
        s.o = &o;
        s.m = m;
        s.dec = dec;
        s.stacks_ahead = stacks;
        s.no_prescan = no_prescan;
        s.filter = filter;
        s.out = out;
        s.dc = &dc;
        s.several = etw_multi_count(m) > 1;
        s.with_file = s.several || o.with_file;
        /* "0 s" is the earliest session start (the earliest log-file header) */
        for (size_t i = 0; i < etw_multi_count(m); i++) {
            const etw_reader *r = etw_multi_reader(m, i);
            int64_t t = etw_reader_to_filetime(r, etw_reader_logfile(r)->raw_timestamp);
            if (i == 0 || t < s.origin) s.origin = t;
        }
        etw_filter_set_origin(filter, s.origin);
        int events_run = !o.report && !o.profile && !o.stats && !o.schemas && !o.perfetto;
        if (events_run) s.fields_seen = field_check_new(&o);
        int r2 = o.report    ? run_report(&s)
                 : o.profile ? run_profile(&s)
                 : o.stats   ? run_stats(&s)
                 : o.schemas ? run_schemas(&s)
                 : o.perfetto ? run_perfetto(&s)
                 : parallel  ? run_events_parallel(&s)
                             : run_events(&s);
        dec = s.dec; /* run_stats may have made them again */
        filter = s.filter;
        if (r2 > rc) rc = r2;
        if ((r2 == EXIT_CLEAN || r2 == EXIT_SKIPPED) && !s.cut_short && !o.quiet) {
            report_unmatched(&o, filter);
            field_check_report(s.fields_seen);
        }
        field_check_free(s.fields_seen);
        if (rc == EXIT_CLEAN && skipped) rc = EXIT_SKIPPED;
    }
    int fr = flush_out(out);
    if (fr < 0 && rc != EXIT_FATAL) rc = EXIT_FATAL;
    if (out != stdout && fclose(out) != 0 && fr == 0 && rc != EXIT_FATAL) {
        fprintf(stderr, "etwdump: %s: write error: %s\n", o.output, strerror(errno));
        rc = EXIT_FATAL;
    }
    manifests_summary(dc.mf);
    etw_filter_free(filter);
    etw_decoder_free(dec);
    etw_builtins_free(dc.builtins); /* after every decoder */
    close_windows(&o);
    etw_wpp_set_free(o.tmf_set);
    manifests_free(dc.mf);
    etw_multi_free(m);
    inputs_free();
    return rc;
}
