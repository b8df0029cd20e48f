/* etwdump - the selected events, as JSON Lines, text or CSV (etw_render.h). */
#define _DEFAULT_SOURCE /* tm_gmtoff */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "etwdump.h"

/* FILETIME of 1970-01-01 (MS-DTYP 2.3.3: 100 ns ticks since 1601). */
#define FILETIME_UNIX_EPOCH 116444736000000000LL

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
    while (etw_multi_next(s->m, &ev, &file) == ETW_OK && !stop_requested()) {
        int sel = etw_filter_match(s->filter, s->dec, &ev, NULL);
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
    ro.time = o->time;
    ro.time_origin = s->origin;
    ro.utc_offset = local_offset;
    etw_renderer *rd;
    if (etw_renderer_new(&rd, NULL, &ro) != ETW_OK) return out_of_memory();
    if (s->several) etw_renderer_set_file(rd, etw_multi_name(s->m, 0)); /* CSV: the column */
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
    etw_event ev;
    size_t file;
    unsigned long long n = 0, read = 0;
    while (rc == EXIT_CLEAN && !stopped && etw_multi_next(s->m, &ev, &file) == ETW_OK) {
        progress_tick(pg, ++read, file, &ev);
        if (stop_requested()) {
            rc = EXIT_INTERRUPTED;
            break;
        }
        /* every event goes through the decoder (the filter resolves it), so
         * EventSource manifests are learned from events left out */
        int sel = etw_filter_match(s->filter, s->dec, &ev, NULL);
        if (sel < 0) {
            rc = out_of_memory();
            break;
        }
        if (!sel || (o->no_manifest_events && etw_decoder_is_manifest_event(&ev))) continue;
        if (s->several) etw_renderer_set_file(rd, etw_multi_name(s->m, file));
        if (etw_renderer_event(rd, etw_multi_reader(s->m, file), &ev, &text, &len) != ETW_OK) {
            rc = out_of_memory();
            break;
        }
        int w = write_out(s->out, text, len);
        if (w < 0) rc = EXIT_FATAL;
        if (w > 0) stopped = 1;
        if (o->max_events && ++n >= o->max_events) break;
    }
    progress_end(pg);
    etw_renderer_free(rd);
    etw_decoder_finish(s->dec);
    if (stop_requested() && rc == EXIT_CLEAN) rc = EXIT_INTERRUPTED;
    if (rc == EXIT_CLEAN) {
        int problems = etw_decoder_stats_get(s->dec)->problems != 0;
        for (size_t i = 0; i < etw_multi_count(s->m); i++)
            if (etw_reader_stats_get(etw_multi_reader(s->m, i))->problems) problems = 1;
        if (problems) rc = EXIT_SKIPPED;
    }
    return rc;
}
