/* etwdump --stats and --schemas: summaries of the selected events, made by
 * the library (etw_stats.h, etw_schemas.h) so that every embedder gets the
 * same ones. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "etwdump.h"

typedef struct summary {
    etw_stats *stats;     /* --stats */
    etw_schemas *schemas; /* --schemas */
} summary;

/* Read every event; feed the selected ones to the summary. */
static int scan(session *s, summary *sm) {
    const options *o = s->o;
    progress *pg = progress_start(o, s->m, input_bytes(s->m));
    etw_event ev;
    size_t file;
    unsigned long long n = 0, read = 0;
    int rc = EXIT_CLEAN;
    static etw_label l; /* large: not on the stack of every call */
    while (etw_multi_next(s->m, &ev, &file) == ETW_OK) {
        progress_tick(pg, ++read, file, &ev);
        if (stop_requested()) {
            rc = EXIT_INTERRUPTED;
            break;
        }
        int sel = etw_filter_match(s->filter, s->dec, &ev, &l);
        etw_status st = ETW_OK;
        if (sel >= 0 && sm->stats) st = etw_stats_observe(sm->stats, s->dec, &ev, &l);
        if (sel < 0 || st != ETW_OK) {
            fprintf(stderr, "etwdump: out of memory\n");
            rc = EXIT_FATAL;
            break;
        }
        if (!sel || (o->no_manifest_events && etw_decoder_is_manifest_event(&ev))) continue;
        st = sm->stats ? etw_stats_add(sm->stats, &ev, &l) : etw_schemas_add(sm->schemas, &l);
        if (st != ETW_OK) {
            fprintf(stderr, "etwdump: out of memory\n");
            rc = EXIT_FATAL;
            break;
        }
        if (o->max_events && ++n >= o->max_events) break;
    }
    progress_end(pg);
    etw_decoder_finish(s->dec);
    return rc;
}

static int finish(session *s, int rc, const char *text, size_t len, int newline) {
    if (rc == EXIT_FATAL) return rc;
    int w = write_out(s->out, text, len);
    if (w == 0 && newline) w = write_out(s->out, "\n", 1);
    if (w < 0) return EXIT_FATAL;
    if (rc == EXIT_CLEAN) {
        int problems = etw_decoder_stats_get(s->dec)->problems != 0;
        for (size_t i = 0; i < etw_multi_count(s->m); i++)
            if (etw_reader_stats_get(etw_multi_reader(s->m, i))->problems) problems = 1;
        if (problems) rc = EXIT_SKIPPED;
    }
    return rc;
}

int run_stats(session *s) {
    summary sm = {0};
    if (etw_stats_new(&sm.stats, NULL) != ETW_OK) {
        fprintf(stderr, "etwdump: out of memory\n");
        return EXIT_FATAL;
    }
    int rc = scan(s, &sm);
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
    rc = finish(s, rc, text, len, s->o->format == ETW_RENDER_JSON && s->o->format_given);
    free(readers);
    free(names);
    etw_stats_free(sm.stats);
    return rc;
}

int run_schemas(session *s) {
    summary sm = {0};
    if (etw_schemas_new(&sm.schemas, NULL) != ETW_OK) {
        fprintf(stderr, "etwdump: out of memory\n");
        return EXIT_FATAL;
    }
    int rc = scan(s, &sm);
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
