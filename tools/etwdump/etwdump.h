/* etwdump - shared declarations of the CLI's parts (options, stats, output, main).
 * The tool uses only the public API of libetwdecode. */
#ifndef ETWDUMP_H
#define ETWDUMP_H

#include <stdio.h>

#include "etwdecode/etwdecode.h"

#define EXIT_CLEAN 0   /* everything read */
#define EXIT_SKIPPED 1 /* decoded, but something was skipped (see stderr) */
#define EXIT_FATAL 2   /* bad usage, missing file, not an ETL file */

#define MAX_MANIFESTS 64

typedef struct options {
    const char *path;
    const char *manifests[MAX_MANIFESTS];
    int nmanifests;
    int no_manifest_events;
    int messages;
    const char *output;
    int stats;
    int raw;
    int file_order;
    int quiet;
    unsigned long long max_events;
} options;

typedef struct diag_ctx {
    const char *path;
    int quiet;
    int muted; /* during the pre-scan: the same problems come again later */
} diag_ctx;

/* options.c: the command line. Returns 1 when o is filled, 0 on a usage error
 * (already reported); --help and --version print and exit. */
int parse_args(int argc, char **argv, options *o);

/* stats.c: --stats, a summary table instead of the events. */
int run_stats(etw_reader *r, FILE *out, const options *o);

/* output.c: the events, one JSON line each. */
int run_json(etw_reader *r, etw_decoder *dec, FILE *out, const options *o);

#endif
