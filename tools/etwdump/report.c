/* etwdump --report NAME: the library's reports (etw_report.h) over the
 * selected events, as text tables, one JSON object or CSV. */
#include <stdio.h>
#include <string.h>

#include "etwdump.h"

static etw_status out_write(void *ctx, const char *data, size_t len) {
    int w = write_out((FILE *)ctx, data, len);
    return w == 0 ? ETW_OK : ETW_E_IO;
}

/* One pass over the events into r; with a: without the pre-scan, stopping
 * (s->rescan) where ahead_missed says the run may differ from one with it. */
static int report_pass(session *s, etw_report *r, ahead *a) {
    const options *o = s->o;
    progress *pg = progress_start(o, s->m, input_bytes(s->m));
    etw_event ev;
    size_t file;
    unsigned long long n = 0, read = 0;
    int rc = EXIT_CLEAN;
    static etw_label l; /* large: not on the stack */
    while (etw_multi_next(s->m, &ev, &file) == ETW_OK) {
        progress_tick(pg, ++read, file, &ev);
        if (stop_requested()) {
            rc = EXIT_INTERRUPTED;
            break;
        }
        if (a && ahead_missed(a, s, &ev)) {
            s->rescan = 1;
            break;
        }
        int sel = etw_filter_match(s->filter, s->dec, &ev, &l);
        if (sel < 0) {
            rc = EXIT_FATAL;
            break;
        }
        etw_status st = sel ? etw_report_add(r, s->dec, &ev, l.schema) : etw_report_skip(r, s->dec, &ev, l.schema);
        if (st != ETW_OK) {
            fprintf(stderr, "etwdump: --report %s: %s\n", etw_report_kind_name(o->report_kind), etw_strerror(st));
            rc = EXIT_FATAL;
            break;
        }
        if (sel && o->max_events && ++n >= o->max_events) {
            s->cut_short = 1;
            break;
        }
    }
    progress_end(pg);
    if (!s->rescan) etw_decoder_finish(s->dec);
    if (a && s->dc->held) s->rescan = 1; /* a problem held, up to the end */
    return rc;
}

static int report_new(session *s, etw_report **out) {
    const options *o = s->o;
    etw_report_options ro;
    memset(&ro, 0, sizeof ro);
    ro.decoder = s->dec;
    ro.origin = s->origin;
    ro.perf_freq = etw_multi_count(s->m) ? etw_reader_logfile(etw_multi_reader(s->m, 0))->perf_freq : 0;
    ro.symbol_paths = o->nsymbols ? o->symbols : NULL;
    ro.nsymbol_paths = (size_t)o->nsymbols;
    ro.on_diag = on_decoder_diag;
    ro.diag_ctx = s->dc;
    if (etw_report_new(out, o->report_kind, &ro) != ETW_OK) {
        fprintf(stderr, "etwdump: out of memory\n");
        return EXIT_FATAL;
    }
    return EXIT_CLEAN;
}

int run_report(session *s) {
    const options *o = s->o;
    etw_report_format fmt = ETW_REPORT_TEXT;
    if (o->format_given) {
        if (o->format == ETW_RENDER_JSON) fmt = ETW_REPORT_JSON;
        else if (o->format == ETW_RENDER_CSV) fmt = ETW_REPORT_CSV;
        else if (o->format != ETW_RENDER_TEXT) {
            fprintf(stderr, "etwdump: --report writes text, json or csv\n");
            return EXIT_FATAL;
        }
    }
    etw_report *r = NULL;
    int rc = report_new(s, &r);
    if (rc == EXIT_FATAL) return rc;
    if (s->no_prescan) {
        ahead a;
        ahead_start(&a, s, s->dec, AHEAD_HOLD);
        rc = report_pass(s, r, &a);
        ahead_stop(&a, s);
        if (s->rescan && rc != EXIT_FATAL && rc != EXIT_INTERRUPTED) {
            /* made again as before: the pre-scan, a new filter, report */
            etw_report_free(r);
            r = NULL;
            rc = session_again(s, NULL);
            if (rc != EXIT_FATAL) rc = report_new(s, &r);
            if (rc != EXIT_FATAL) rc = report_pass(s, r, NULL);
        }
    } else {
        rc = report_pass(s, r, NULL);
    }
    if (r && (rc == EXIT_CLEAN || rc == EXIT_INTERRUPTED)) {
        etw_status st = etw_report_write(r, fmt, out_write, s->out);
        if (st != ETW_OK && st != ETW_E_IO) {
            fprintf(stderr, "etwdump: --report %s: %s\n", etw_report_kind_name(o->report_kind), etw_strerror(st));
            rc = EXIT_FATAL;
        } else if (st == ETW_E_IO) {
            rc = EXIT_FATAL; /* write_out said why (or the pipe closed) */
        }
    }
    etw_report_free(r);
    if (rc == EXIT_CLEAN && run_problems(s)) rc = EXIT_SKIPPED;
    return rc;
}
