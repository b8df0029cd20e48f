/* etwdump - --format perfetto: the selected events as a Trace Event Format
 * timeline (etw_perfetto.h) for ui.perfetto.dev and chrome://tracing.
 * Always on the calling thread, in time order: the spans pair events across
 * the whole trace (a process's start with its end), which the -j pipeline's
 * independent workers could not see (docs/timeline.md). */
#include <stdio.h>
#include <string.h>

#include "etwdump.h"

static int out_of_memory(void) {
    fprintf(stderr, "etwdump: out of memory\n");
    return EXIT_FATAL;
}

/* Write a piece; *stopped when the reader of the pipe went away. */
static int put(session *s, const char *text, size_t len, int *stopped) {
    if (!len) return EXIT_CLEAN;
    int w = write_out(s->out, text, len);
    if (w < 0) return EXIT_FATAL;
    if (w > 0) *stopped = 1;
    return EXIT_CLEAN;
}

int run_perfetto(session *s) {
    const options *o = s->o;
    etw_perfetto_options po;
    memset(&po, 0, sizeof po);
    po.decoder = s->dec;
    po.time_origin = s->origin;
    po.int64_as_string = o->int64_as_string;
    stack_source *src = NULL;
    if (o->stacks) { /* the first pass: every event's stack */
        int sr = stack_source_build(s, &src);
        if (sr != EXIT_CLEAN) return sr;
        po.stack = stack_source_fn;
        po.stack_ctx = src;
    }
    etw_perfetto *pf;
    if (etw_perfetto_new(&pf, NULL, &po) != ETW_OK) {
        stack_source_free(src);
        return out_of_memory();
    }
    const char *text;
    size_t len;
    int stopped = 0;
    int rc = etw_perfetto_header(pf, &text, &len) == ETW_OK ? put(s, text, len, &stopped) : out_of_memory();
    progress *pg = rc == EXIT_CLEAN && !stopped ? progress_start(o, s->m, input_bytes(s->m)) : NULL;
    etw_event ev;
    size_t file;
    unsigned long long n = 0, read = 0;
    while (rc == EXIT_CLEAN && !stopped && etw_multi_next(s->m, &ev, &file) == ETW_OK) {
        progress_tick(pg, ++read, file, &ev);
        stack_source_next(src);
        if (stop_requested()) {
            rc = EXIT_INTERRUPTED;
            break;
        }
        /* no selection: every event is written, which resolves it anyway */
        int sel = etw_filter_is_empty(s->filter) ? 1 : etw_filter_match(s->filter, s->dec, &ev, NULL);
        if (sel < 0) {
            rc = out_of_memory();
            break;
        }
        if (!sel || (o->no_manifest_events && etw_decoder_is_manifest_event(&ev))) continue;
        if (etw_perfetto_event(pf, etw_multi_reader(s->m, file), &ev, &text, &len) != ETW_OK) {
            rc = out_of_memory();
            break;
        }
        rc = put(s, text, len, &stopped);
        if (o->max_events && ++n >= o->max_events) {
            s->cut_short = 1;
            break;
        }
    }
    if (stopped) s->cut_short = 1;
    progress_end(pg);
    /* the open spans and the closing brackets, also after an interruption:
     * the output stays one JSON object */
    if (!stopped && rc != EXIT_FATAL) {
        if (etw_perfetto_finish(pf, &text, &len) != ETW_OK) rc = out_of_memory();
        else if (put(s, text, len, &stopped) == EXIT_FATAL) rc = EXIT_FATAL;
    }
    etw_perfetto_free(pf);
    stack_source_free(src);
    etw_decoder_finish(s->dec);
    if (stop_requested() && rc == EXIT_CLEAN) rc = EXIT_INTERRUPTED;
    if (rc == EXIT_CLEAN && run_problems(s)) rc = EXIT_SKIPPED;
    return rc;
}
