/* etwdump - decode a Windows ETW trace (.etl) to JSON Lines, or summarize it.
 * Uses only the public API of libetwdecode. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "etwdecode/etwdecode.h"

#define EXIT_CLEAN 0   /* everything read */
#define EXIT_SKIPPED 1 /* decoded, but something was skipped (see stderr) */
#define EXIT_FATAL 2   /* bad usage, missing file, not an ETL file */

static const char usage_text[] =
    "usage: etwdump [OPTIONS] FILE.etl\n"
    "\n"
    "Decode a Windows ETW trace into JSON Lines (one object per event, in\n"
    "timestamp order; the first one is the log-file header), or summarize it.\n"
    "\n"
    "options:\n"
    "  --format json        output format (json is the only one so far)\n"
    "  -m, --manifest PATH  decode manifest-based events with this instrumentation\n"
    "                       manifest (a .man/.xml file, or a directory of them);\n"
    "                       repeatable; takes precedence over schemas in the trace\n"
    "  --no-manifest-events leave out the EventSource manifest chunks (ManifestData)\n"
    "  --messages           add \"message\": the event's message string with its\n"
    "                       %1..%n inserts filled in from the fields\n"
    "  --stats              print a summary table instead of the events\n"
    "  --raw                add \"raw\" (user data in hex) to every event\n"
    "  --file-order         keep the file's record order (no merge by time)\n"
    "  -n, --max-events N   stop after N events\n"
    "  -o, --output FILE    write to FILE instead of standard output\n"
    "  -q, --quiet          do not report damaged data on standard error\n"
    "  -h, --help           show this help\n"
    "  -V, --version        show the version\n"
    "\n"
    "exit status: 0 all data read; 1 some data was damaged and skipped (each\n"
    "problem is reported on standard error with its file offset); 2 the file\n"
    "could not be read at all or the command line is wrong.\n";

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

static int parse_args(int argc, char **argv, options *o) {
    memset(o, 0, sizeof *o);
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            fputs(usage_text, stdout);
            exit(EXIT_CLEAN);
        } else if (!strcmp(a, "-V") || !strcmp(a, "--version")) {
            printf("etwdump %s\n", etw_version_string());
            exit(EXIT_CLEAN);
        } else if (!strcmp(a, "--stats")) {
            o->stats = 1;
        } else if (!strcmp(a, "-m") || !strcmp(a, "--manifest")) {
            if (++i >= argc) goto missing;
            if (o->nmanifests == MAX_MANIFESTS) {
                fprintf(stderr, "etwdump: at most %d --manifest options\n", MAX_MANIFESTS);
                return 0;
            }
            o->manifests[o->nmanifests++] = argv[i];
        } else if (!strcmp(a, "--no-manifest-events")) {
            o->no_manifest_events = 1;
        } else if (!strcmp(a, "--messages")) {
            o->messages = 1;
        } else if (!strcmp(a, "--raw")) {
            o->raw = 1;
        } else if (!strcmp(a, "--file-order")) {
            o->file_order = 1;
        } else if (!strcmp(a, "-q") || !strcmp(a, "--quiet")) {
            o->quiet = 1;
        } else if (!strcmp(a, "--format")) {
            if (++i >= argc) goto missing;
            if (strcmp(argv[i], "json") != 0) {
                fprintf(stderr, "etwdump: unknown format '%s' (known: json)\n", argv[i]);
                return 0;
            }
        } else if (!strcmp(a, "-o") || !strcmp(a, "--output")) {
            if (++i >= argc) goto missing;
            o->output = argv[i];
        } else if (!strcmp(a, "-n") || !strcmp(a, "--max-events")) {
            if (++i >= argc) goto missing;
            char *end;
            errno = 0;
            o->max_events = strtoull(argv[i], &end, 10);
            if (errno || *end || argv[i][0] == '-' || !argv[i][0]) {
                fprintf(stderr, "etwdump: --max-events needs a number, not '%s'\n", argv[i]);
                return 0;
            }
        } else if (a[0] == '-' && a[1]) {
            fprintf(stderr, "etwdump: unknown option '%s' (see --help)\n", a);
            return 0;
        } else if (o->path) {
            fprintf(stderr, "etwdump: one trace at a time ('%s' and '%s')\n", o->path, a);
            return 0;
        } else {
            o->path = a;
        }
        continue;
    missing:
        fprintf(stderr, "etwdump: option '%s' needs a value\n", a);
        return 0;
    }
    if (!o->path) {
        fputs(usage_text, stderr);
        return 0;
    }
    return 1;
}

/* --- --stats --------------------------------------------------------------- */

typedef struct provider_count {
    etw_guid guid;
    int kernel;
    unsigned long long n;
} provider_count;

typedef struct provider_table {
    provider_count *slots;
    size_t cap, used;
} provider_table;

static size_t guid_hash(const etw_guid *g, int kernel) {
    size_t h = g->data1 ^ ((size_t)g->data2 << 7) ^ ((size_t)g->data3 << 13) ^ (size_t)kernel;
    for (int i = 0; i < 8; i++) h = h * 31 + g->data4[i];
    return h;
}

static int table_add(provider_table *t, const etw_guid *g, int kernel) {
    if ((t->used + 1) * 2 > t->cap) {
        size_t nc = t->cap ? t->cap * 2 : 64;
        provider_count *ns = calloc(nc, sizeof *ns);
        if (!ns) return 0;
        for (size_t i = 0; i < t->cap; i++) {
            if (!t->slots[i].n) continue;
            size_t j = guid_hash(&t->slots[i].guid, t->slots[i].kernel) & (nc - 1);
            while (ns[j].n) j = (j + 1) & (nc - 1);
            ns[j] = t->slots[i];
        }
        free(t->slots);
        t->slots = ns;
        t->cap = nc;
    }
    size_t j = guid_hash(g, kernel) & (t->cap - 1);
    while (t->slots[j].n && !(t->slots[j].kernel == kernel && etw_guid_equal(&t->slots[j].guid, g)))
        j = (j + 1) & (t->cap - 1);
    if (!t->slots[j].n) {
        t->slots[j].guid = *g;
        t->slots[j].kernel = kernel;
        t->used++;
    }
    t->slots[j].n++;
    return 1;
}

static int by_count_desc(const void *a, const void *b) {
    const provider_count *x = a, *y = b;
    return x->n < y->n ? 1 : x->n > y->n ? -1 : 0;
}

static void print_time(FILE *out, int64_t ft) {
    /* FILETIME -> calendar (UTC), days-from-civil inverse. */
    long long secs = ft / 10000000 - 11644473600LL;
    long long frac = ft % 10000000;
    long long days = secs / 86400, rem = secs % 86400;
    if (rem < 0) {
        rem += 86400;
        days--;
    }
    long long z = days + 719468, era = (z >= 0 ? z : z - 146096) / 146097;
    long long doe = z - era * 146097, yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
    long long y = yoe + era * 400, doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    long long mp = (5 * doy + 2) / 153, d = doy - (153 * mp + 2) / 5 + 1, m = mp < 10 ? mp + 3 : mp - 9;
    if (m <= 2) y++;
    fprintf(out, "%04lld-%02lld-%02lldT%02lld:%02lld:%02lld.%07lldZ", y, m, d, rem / 3600,
            rem / 60 % 60, rem % 60, frac);
}

static void print_utf16(FILE *out, const uint8_t *p, uint32_t n) {
    for (uint32_t i = 0; i + 1 < n; i += 2) {
        unsigned c = (unsigned)(p[i] | (p[i + 1] << 8));
        fputc(c < 0x80 && c >= 0x20 ? (int)c : '?', out);
    }
}

static int run_stats(etw_reader *r, FILE *out, const options *o) {
    provider_table t = {0};
    etw_event ev;
    etw_status s;
    unsigned long long n = 0;
    while ((s = etw_reader_next(r, &ev)) == ETW_OK) {
        int kernel = ev.form == ETW_FORM_SYSTEM || ev.form == ETW_FORM_COMPACT ||
                     ev.form == ETW_FORM_PERFINFO || ev.is_logfile_header;
        if (!table_add(&t, &ev.provider, kernel)) {
            fprintf(stderr, "etwdump: out of memory\n");
            return EXIT_FATAL;
        }
        if (o->max_events && ++n >= o->max_events) break;
    }
    const etw_logfile_header *h = etw_reader_logfile(r);
    const etw_reader_stats *st = etw_reader_stats_get(r);
    fprintf(out, "file               %s\n", o->path);
    fprintf(out, "session            ");
    print_utf16(out, h->session_name, h->session_name_bytes);
    fprintf(out, "\nOS version         %u.%u build %u\n", h->version & 0xFF, (h->version >> 8) & 0xFF,
            h->provider_version);
    fprintf(out, "pointer size       %u\n", h->pointer_size);
    fprintf(out, "processors         %u\n", h->number_of_processors);
    fprintf(out, "clock              %s (%lld Hz)\n",
            h->reserved_flags == 1 ? "QPC" : h->reserved_flags == 2 ? "system time"
                                         : h->reserved_flags == 3 ? "CPU cycles" : "raw",
            (long long)h->perf_freq);
    fprintf(out, "time range         ");
    print_time(out, st->first_timestamp);
    fprintf(out, " .. ");
    print_time(out, st->last_timestamp);
    fprintf(out, "\nduration           %.3f s\n", (double)(st->last_timestamp - st->first_timestamp) / 1e7);
    fprintf(out, "buffers            %llu (compressed %llu, flagged lost %llu, skipped %llu; %u lost per header)\n",
            (unsigned long long)st->buffers, (unsigned long long)st->buffers_compressed,
            (unsigned long long)st->buffers_lost_flag, (unsigned long long)st->buffers_skipped,
            h->buffers_lost);
    fprintf(out, "events             %llu (lost per header %u, records skipped %llu)\n",
            (unsigned long long)st->events, h->events_lost, (unsigned long long)st->records_skipped);
    fprintf(out, "\nevents by header form\n");
    for (int f = 0; f < ETW_FORM_COUNT_; f++)
        if (st->events_by_form[f])
            fprintf(out, "  %-20s %12llu\n", etw_header_form_name((etw_header_form)f),
                    (unsigned long long)st->events_by_form[f]);
    qsort(t.slots, t.cap, sizeof *t.slots, by_count_desc);
    fprintf(out, "\nevents by provider\n");
    for (size_t i = 0; i < t.cap && t.slots[i].n; i++) {
        char g[ETW_GUID_STRING_SIZE];
        etw_guid_format(&t.slots[i].guid, g);
        fprintf(out, "  %s %12llu%s\n", g, t.slots[i].n, t.slots[i].kernel ? "  (Windows Kernel)" : "");
    }
    free(t.slots);
    if (s < 0) return EXIT_FATAL;
    return st->problems ? EXIT_SKIPPED : EXIT_CLEAN;
}

/* --- JSON ---------------------------------------------------------------- */

static int run_json(etw_reader *r, etw_decoder *dec, FILE *out, const options *o) {
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
        if (o->no_manifest_events && etw_decoder_is_manifest_event(&ev)) {
            /* still learned from: the decoder sees every chunk */
            const etw_schema *schema;
            etw_decoder_resolve(dec, &ev, &schema, NULL);
            continue;
        }
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
                    int jrc = run_json(r, dec, out, &o);
                    if (jrc > rc) rc = jrc;
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
