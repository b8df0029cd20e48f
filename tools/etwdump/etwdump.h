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
#define MAX_FILTERS 256

/* One selection option as given: --provider X is {"provider", 0, "X"},
 * --exclude-pid 4 is {"pid", 1, "4"}. */
typedef struct filter_spec {
    const char *option; /* as typed, for messages */
    const char *key;
    int exclude;
    const char *value;
} filter_spec;

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
    filter_spec filters[MAX_FILTERS];
    int nfilters;
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

/* filter.c: the library filter the selection options describe; NULL after
 * reporting a bad value. */
etw_filter *build_filter(const options *o);

/* output.c: the selected events, one JSON line each. */
int run_json(etw_reader *r, etw_decoder *dec, etw_filter *f, FILE *out, const options *o);

#endif
