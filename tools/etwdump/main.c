/* etwdump - decode a Windows ETW trace (.etl) to JSON Lines, or summarize it.
 * Uses only the public API of libetwdecode. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "etwdump.h"

static void on_diag(void *ctx, const etw_diag *d) {
    const diag_ctx *c = ctx;
    if (c->quiet || c->muted) return;
    fprintf(stderr, "etwdump: %s: offset 0x%llx: %s\n", c->path,
            (unsigned long long)d->file_offset, d->message);
}

/* Problems learning schemas (manifests name their own file and line). */
static void on_decoder_diag(void *ctx, const etw_diag *d) {
    const diag_ctx *c = ctx;
    if (c->quiet) return;
    fprintf(stderr, "etwdump: %s\n", d->message);
}

int main(int argc, char **argv) {
    options o;
    if (!parse_args(argc, argv, &o)) return EXIT_FATAL;
    diag_ctx dc = {o.path, o.quiet, 0};
    etw_reader_options ro = {0};
    ro.on_diag = on_diag;
    ro.diag_ctx = &dc;
    ro.file_order = o.file_order;
    etw_reader *r;
    etw_status s = etw_reader_open_file(&r, o.path, &ro);
    if (s != ETW_OK) {
        if (s == ETW_E_IO)
            fprintf(stderr, "etwdump: %s: cannot read: %s\n", o.path, strerror(errno));
        else if (s == ETW_E_NOT_ETL)
            fprintf(stderr, "etwdump: %s: not an ETL file (no buffer header and log-file header at offset 0)\n",
                    o.path);
        else
            fprintf(stderr, "etwdump: %s: %s\n", o.path, etw_strerror(s));
        return EXIT_FATAL;
    }
    FILE *out = stdout;
    if (o.output && !(out = fopen(o.output, "wb"))) {
        fprintf(stderr, "etwdump: %s: %s\n", o.output, strerror(errno));
        etw_reader_close(r);
        return EXIT_FATAL;
    }
    int rc;
    if (o.stats) {
        rc = run_stats(r, out, &o);
    } else {
        etw_decoder *dec;
        etw_decoder_options dopt = {0};
        dopt.on_diag = on_decoder_diag;
        dopt.diag_ctx = &dc;
        if (etw_decoder_new(&dec, &dopt) != ETW_OK) {
            fprintf(stderr, "etwdump: out of memory\n");
            rc = EXIT_FATAL;
        } else {
            rc = EXIT_CLEAN;
            for (int i = 0; i < o.nmanifests; i++) {
                etw_status ms = etw_decoder_add_manifest(dec, o.manifests[i], NULL);
                if (ms == ETW_E_IO) {
                    fprintf(stderr, "etwdump: %s: cannot read manifest: %s\n", o.manifests[i], strerror(errno));
                    rc = EXIT_FATAL;
                } else if (ms != ETW_OK) {
                    rc = EXIT_SKIPPED; /* reported with its line; the other manifests still load */
                }
            }
            if (rc != EXIT_FATAL) {
                dc.muted = 1;
                etw_status ps = etw_decoder_prescan(dec, r);
                dc.muted = 0;
                if (ps != ETW_OK) {
                    fprintf(stderr, "etwdump: %s: %s\n", o.path, etw_strerror(ps));
                    rc = EXIT_FATAL;
                } else {
                    etw_filter *f = build_filter(&o);
                    int jrc = f ? run_json(r, dec, f, out, &o) : EXIT_FATAL;
                    if (jrc > rc) rc = jrc;
                    etw_filter_free(f);
                }
            }
            etw_decoder_free(dec);
        }
    }
    if (fflush(out) != 0 && rc != EXIT_FATAL) {
        fprintf(stderr, "etwdump: write error: %s\n", strerror(errno));
        rc = EXIT_FATAL;
    }
    if (out != stdout) fclose(out);
    etw_reader_close(r);
    return rc;
}
