/* etwdump - writing the events (JSON Lines). */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "etwdump.h"

/* --- JSON ---------------------------------------------------------------- */

int run_json(etw_reader *r, etw_decoder *dec, etw_filter *f, FILE *out, const options *o) {
    etw_json *j;
    etw_json_options jo = {0};
    jo.raw_always = o->raw;
    jo.decoder = dec;
    jo.messages = o->messages;
    if (etw_json_new(&j, NULL, &jo) != ETW_OK) {
        fprintf(stderr, "etwdump: out of memory\n");
        return EXIT_FATAL;
    }
    etw_event ev;
    etw_status s;
    unsigned long long n = 0;
    int rc = EXIT_CLEAN;
    while ((s = etw_reader_next(r, &ev)) == ETW_OK) {
        const char *line;
        size_t len;
        /* every event goes through the decoder (the filter resolves it), so
         * EventSource manifests are learned from events left out */
        int m = etw_filter_match(f, dec, &ev, NULL);
        if (m < 0) {
            fprintf(stderr, "etwdump: out of memory\n");
            rc = EXIT_FATAL;
            break;
        }
        if (!m || (o->no_manifest_events && etw_decoder_is_manifest_event(&ev))) continue;
        if (etw_json_event(j, r, &ev, &line, &len) != ETW_OK) {
            fprintf(stderr, "etwdump: out of memory\n");
            rc = EXIT_FATAL;
            break;
        }
        if (fwrite(line, 1, len, out) != len) {
            fprintf(stderr, "etwdump: write error: %s\n", strerror(errno));
            rc = EXIT_FATAL;
            break;
        }
        if (o->max_events && ++n >= o->max_events) break;
    }
    etw_json_free(j);
    etw_decoder_finish(dec);
    if (s < 0 && rc == EXIT_CLEAN) {
        fprintf(stderr, "etwdump: %s: %s\n", o->path, etw_strerror(s));
        rc = EXIT_FATAL;
    }
    if (rc == EXIT_CLEAN && (etw_reader_stats_get(r)->problems || etw_decoder_stats_get(dec)->problems))
        rc = EXIT_SKIPPED;
    return rc;
}

