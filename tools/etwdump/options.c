/* etwdump - the command line: usage text and option parsing. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "etwdump.h"

static const char usage_text[] =
    "usage: etwdump [OPTIONS] [--] FILE.etl|DIR|-...\n"
    "\n"
    "Decode Windows ETW traces into JSON Lines (one object per event, in\n"
    "timestamp order; the first one is the log-file header), text or CSV, or\n"
    "summarize them. Several files (directories: their *.etl files, recursively)\n"
    "are merged into one timeline; each event then says its \"file\".\n"
    "'-' reads a trace from standard input (held in memory, at most 1 GiB;\n"
    "pipes and devices given by name too); '--' ends the options.\n"
    "Compressed traces are read as they are handed over, known by their first\n"
    "bytes: .etl.gz, .etl.zst, .etl.xz, .etl.bz2, and ZIP archives such as\n"
    "PerfView's .etl.zip (every *.etl inside, each named ARCHIVE:ENTRY);\n"
    "unpacked into memory, at most 256 times their size (docs/limits.md).\n"
    "A file that is not a trace (an EVTX log, text) is named as such.\n"
    "\n"
    "options:\n"
    "  --format FMT         json (the contract, default), text (one readable line\n"
    "                       per event), csv (RFC 4180, a header row, one column\n"
    "                       per field name), timesketch (Timesketch/plaso JSONL:\n"
    "                       message, datetime, timestamp, timestamp_desc, the\n"
    "                       event's keys, payload fields as field_NAME) or xml\n"
    "                       (<Events>, then one <Event> a line in the Windows\n"
    "                       event schema's shape: System, EventData) or perfetto\n"
    "                       (one Trace Event Format JSON timeline for\n"
    "                       ui.perfetto.dev: docs/timeline.md)\n"
    "  --csv-eol EOL        line ends of csv: crlf (RFC 4180, default) or lf\n"
    "  --fields A,B,...     keep only these payload fields (repeatable)\n"
    "  --time FORM          utc (RFC 3339, default for json and csv), relative\n"
    "                       (seconds from the trace start, default for text) or\n"
    "                       local (RFC 3339 with this machine's UTC offset)\n"
    "  -m, --manifest PATH  decode manifest-based events with this instrumentation\n"
    "                       or Windows component manifest (a .man/.xml file, or a\n"
    "                       directory: every such file in it and below, each\n"
    "                       loaded when the trace uses a provider it declares);\n"
    "                       repeatable, the later file wins for a provider in two;\n"
    "                       takes precedence over schemas in the trace.\n"
    "                       A PE file (.dll/.exe/.sys) gives its WEVT_TEMPLATE\n"
    "                       resource with its message table (its own, else\n"
    "                       LANG/FILE.mui beside it); a bare WEVT_TEMPLATE blob too\n"
    "  --windows DIR        find providers in a Windows image: DIR is a mounted\n"
    "                       Windows volume or a copy of its Windows folder; the\n"
    "                       PE files of System32, drivers, SysWOW64, .NET and\n"
    "                       WinSxS are indexed by the provider GUIDs of their\n"
    "                       WEVT_TEMPLATE (kept in $XDG_CACHE_HOME/etwdecode for\n"
    "                       the next run) and a provider's file is loaded when a\n"
    "                       trace first uses it; below -m; repeatable\n"
    "  --lang TAG           the language of messages and names from PE files\n"
    "                       (en-US by default): TAG/FILE.mui beside each file\n"
    "  --no-default-manifests  do not decode .NET runtime events with the CLR's\n"
    "                       manifest built into etwdump (ClrEtwAll.man: used for\n"
    "                       the events no -m manifest or schema in the trace\n"
    "                       describes)\n"
    "  --no-manifest-events leave out the EventSource manifest chunks (ManifestData)\n"
    "  --messages           add \"message\": the event's message string with its\n"
    "                       %1..%n inserts filled in from the fields\n"
    "  --stats              print a summary instead of the events: the files,\n"
    "                       events by provider, event and process (count, first\n"
    "                       and last time, bytes), lost events, decode errors;\n"
    "                       with --format json, the same as one JSON object;\n"
    "                       a trace with stacks adds the top modules and\n"
    "                       functions by CPU samples (\"cpu_samples\")\n"
    "  --schemas            print the schemas the selected events use (provider,\n"
    "                       event, version, fields with types and maps, source)\n"
    "                       as one JSON object\n"
    "  --stacks             add \"stack\" to every event that has one: its frames,\n"
    "                       innermost first, named module!function (a PDB from\n"
    "                       --symbols), a .NET method, module+0xRVA or 0xADDRESS;\n"
    "                       the stacks are gathered as PerfView does (StackWalk\n"
    "                       events and stack keys, extended items, ClrStack), so\n"
    "                       the trace is read twice and -j is ignored (one thread)\n"
    "  --profile FORMAT     write a profile instead of the events: folded (one\n"
    "                       line per process, thread and stack, root first, for\n"
    "                       flamegraph.pl, inferno, speedscope), speedscope (its\n"
    "                       JSON file format) or firefox (the Firefox Profiler's\n"
    "                       processed format). Samples: the kernel's CPU samples\n"
    "                       (PerfInfo/Sample, PerfView's idle filter applied) of\n"
    "                       the selected processes, threads and time range; with\n"
    "                       --event, the selected events instead (one without a\n"
    "                       stack counts under its process and thread alone),\n"
    "                       each of weight 1 unless --weight; the trace\n"
    "                       is read once on one thread; -n does not apply\n"
    "  --weight FIELD       with --profile --event: a sample's weight is its\n"
    "                       payload field FIELD (a number; events without it are\n"
    "                       left out), e.g. --event GC/AllocationTick --weight\n"
    "                       AllocationAmount\n"
    "  --symbols DIR        a local symbol store to name native frames from\n"
    "                       their PDBs (a folder in the symbol-server layout, or\n"
    "                       srv*DIR[*URL]: the network is never used); repeatable\n"
    "  --no-progress        no progress line (it is shown on standard error only\n"
    "                       when that is a terminal, the input is over 4 MiB and\n"
    "                       the events do not go to a terminal too)\n"
    "  --raw                add \"raw\" (user data in hex) to every event\n"
    "  --int64-as-string    payload integers beyond +-2^53 as strings (for readers\n"
    "                       that parse numbers as doubles: JavaScript,\n"
    "                       Elasticsearch); exact numbers otherwise\n"
    "  --file-order         keep the file's record order (no merge by time)\n"
    "  --map                read files in place through a mapping instead of\n"
    "                       with pread (less CPU for --stats on uncompressed\n"
    "                       traces; a few MiB more resident memory)\n"
    "  --no-map             read files with pread (the default; a file cut\n"
    "                       shorter while it is read gives a read error)\n"
    "  -n, --max-events N   stop after N (selected) events (0: no limit)\n"
    "  -j, --jobs N         decode on N threads (default: the processors\n"
    "                       available); the output is the same for every N\n"
    "  -o, --output FILE    write to FILE instead of standard output\n"
    "  -q, --quiet          do not report damaged data on standard error\n"
    "  --verbose            report each problem of the manifests of -m folders\n"
    "                       (by default: one summary line per folder)\n"
    "  -h, --help           show this help\n"
    "  -V, --version        show the version\n"
    "\n"
    "selection (before payloads are decoded; every event is still read, so\n"
    "schemas carried in the trace keep working). Options of one kind are\n"
    "alternatives, different kinds must all hold; a value starting with '!'\n"
    "or an --exclude-... option leaves the matching events out; a --provider\n"
    "or --event name or glob that matches no event of the run is reported at\n"
    "the end, with the nearest names seen:\n"
    "  --provider P         provider name, GUID, or glob on names\n"
    "                       ('Microsoft-Windows-Kernel-*'); case-insensitive\n"
    "  --event E            event name or glob ('Process/*', 'GC/*'); manifest\n"
    "                       events also by their symbolic names: Task/Opcode\n"
    "                       ('GarbageCollection/*'), the task alone, the event\n"
    "                       symbol ('GCSuspendEEBegin_V1')\n"
    "  --id N[,N-M...]      event ids (descriptor id)\n"
    "  --level N            level at most N (1 critical .. 5 verbose)\n"
    "  --keywords MASK      any bit of MASK (0x... or decimal)\n"
    "  --pid N[,N...]       process ids\n"
    "  --process NAME       processes by image name or glob, the \"process\" key\n"
    "                       ('powershell.exe', 'svc*'; case-insensitive); events\n"
    "                       whose process has no known name are not selected\n"
    "  --tid N[,N...]       thread ids\n"
    "  --since T            from T on (inclusive): RFC 3339 ('2021-09-09T12:59:35Z')\n"
    "                       or seconds from the trace start ('12.5')\n"
    "  --until T            before T (exclusive), same forms\n"
    "  --where 'FIELD OP VALUE'  a payload field's value: OP one of = != < > <=\n"
    "                       >=; strings take = and != with a glob, numbers are\n"
    "                       compared as numbers; events without the field are\n"
    "                       not selected; repeated --where must all hold\n"
    "                       (--where 'ImageFileName=powershell*' --where\n"
    "                       'Size>1048576')\n"
    "  --errors             only the events that failed to decode\n"
    "  --exclude-provider P leave out a provider (= --provider '!P')\n"
    "  --exclude-event E    leave out events by name\n"
    "  --exclude-id N       leave out event ids\n"
    "  --exclude-pid N      leave out processes\n"
    "  --exclude-process NAME leave out processes by image name or glob\n"
    "  --exclude-tid N      leave out threads\n"
    "  --exclude-keywords MASK leave out events with any bit of MASK\n"
    "  --exclude-errors     only the events that decoded\n"
    "\n"
    "exit status: 0 all data read; 1 some data was damaged and skipped (each\n"
    "problem is reported on standard error with its file offset), or a file of\n"
    "several could not be read (a manifest's problems never count); 2 no file\n"
    "could be read, a -m path cannot be read, or the command line is wrong; 130 stopped by Ctrl-C (the output ends with a complete line). A\n"
    "closed pipe (etwdump ... | head) ends the run quietly.\n";

/* The selection options: each adds one predicate of the library's filter. */
static const struct {
    const char *name;
    const char *key; /* etw_filter_key_from_name */
    int exclude;
    int has_value;
} filter_options[] = {
    {"--provider", "provider", 0, 1},         {"--event", "event", 0, 1},
    {"--id", "id", 0, 1},                     {"--level", "level", 0, 1},
    {"--keywords", "keywords", 0, 1},         {"--pid", "pid", 0, 1},
    {"--tid", "tid", 0, 1},                   {"--since", "since", 0, 1},
    {"--until", "until", 0, 1},               {"--errors", "errors", 0, 0},
    {"--exclude-provider", "provider", 1, 1}, {"--exclude-event", "event", 1, 1},
    {"--exclude-id", "id", 1, 1},             {"--exclude-pid", "pid", 1, 1},
    {"--exclude-tid", "tid", 1, 1},           {"--exclude-keywords", "keywords", 1, 1},
    {"--exclude-errors", "errors", 1, 0},     {"--process", "process", 0, 1},
    {"--exclude-process", "process", 1, 1},   {"--where", "where", 0, 1},
};

static int filter_option(const char *a) {
    for (int k = 0; k < (int)(sizeof filter_options / sizeof filter_options[0]); k++)
        if (!strcmp(a, filter_options[k].name)) return k;
    return -1;
}

/* --fields A,B,C: the names are cut out of the argument itself (argv
 * strings are the program's to change). */
static int add_fields(options *o, char *list) {
    for (char *p = list;;) {
        char *comma = strchr(p, ',');
        if (comma) *comma = 0;
        if (*p) {
            if (o->nfields == ETW_RENDER_MAX_FIELDS) {
                fprintf(stderr, "etwdump: at most %d --fields names\n", ETW_RENDER_MAX_FIELDS);
                return 0;
            }
            o->fields[o->nfields++] = p;
        }
        if (!comma) break;
        p = comma + 1;
    }
    if (!o->nfields) {
        fprintf(stderr, "etwdump: --fields needs at least one name\n");
        return 0;
    }
    return 1;
}

static int add_input(options *o, const char *a) {
    if (o->ninputs == MAX_INPUTS) {
        fprintf(stderr, "etwdump: at most %d files and directories\n", MAX_INPUTS);
        return 0;
    }
    o->inputs[o->ninputs++] = a;
    return 1;
}

int parse_args(int argc, char **argv, options *o) {
    memset(o, 0, sizeof *o);
    /* pread by default: a mapped file's pages are faulted in whole large
     * folios (up to 2 MiB) and stay resident behind the reader, several MiB
     * more than the buffers pread copies (docs/limits.md); full decoding
     * costs the same CPU either way */
    o->no_map = 1;
    int options_done = 0; /* after "--" every argument is an input */
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (options_done || a[0] != '-' || !a[1]) { /* "-" is standard input */
            if (!add_input(o, a)) return 0;
        } else if (!strcmp(a, "--")) {
            options_done = 1;
        } else if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
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
        } else if (!strcmp(a, "--windows")) {
            if (++i >= argc) goto missing;
            if (o->nwindows == MAX_WINDOWS) {
                fprintf(stderr, "etwdump: at most %d --windows options\n", MAX_WINDOWS);
                return 0;
            }
            o->windows[o->nwindows++] = argv[i];
        } else if (!strcmp(a, "--lang")) {
            if (++i >= argc) goto missing;
            if (strlen(argv[i]) > 23 || !*argv[i]) {
                fprintf(stderr, "etwdump: --lang takes a language tag such as en-US or de-DE\n");
                return 0;
            }
            o->lang = argv[i];
        } else if (!strcmp(a, "--no-default-manifests")) {
            o->no_default_manifests = 1;
        } else if (!strcmp(a, "--no-manifest-events")) {
            o->no_manifest_events = 1;
        } else if (!strcmp(a, "--messages")) {
            o->messages = 1;
        } else if (!strcmp(a, "--raw")) {
            o->raw = 1;
        } else if (!strcmp(a, "--int64-as-string")) {
            o->int64_as_string = 1;
        } else if (!strcmp(a, "--file-order")) {
            o->file_order = 1;
        } else if (!strcmp(a, "--no-map")) {
            o->no_map = 1;
        } else if (!strcmp(a, "--map")) {
            o->no_map = 0;
        } else if (!strcmp(a, "-q") || !strcmp(a, "--quiet")) {
            o->quiet = 1;
        } else if (!strcmp(a, "--verbose")) {
            o->verbose = 1;
        } else if (!strcmp(a, "--format")) {
            if (++i >= argc) goto missing;
            o->format_given = 1;
            if (!strcmp(argv[i], "json")) {
                o->format = ETW_RENDER_JSON;
            } else if (!strcmp(argv[i], "text")) {
                o->format = ETW_RENDER_TEXT;
            } else if (!strcmp(argv[i], "csv")) {
                o->format = ETW_RENDER_CSV;
            } else if (!strcmp(argv[i], "timesketch")) {
                o->format = ETW_RENDER_TIMESKETCH;
            } else if (!strcmp(argv[i], "xml")) {
                o->format = ETW_RENDER_XML;
            } else if (!strcmp(argv[i], "perfetto")) {
                o->perfetto = 1; /* o->format stays json: unused */
            } else {
                fprintf(stderr, "etwdump: unknown format '%s' (known: json, text, csv, timesketch, xml, perfetto)\n",
                        argv[i]);
                return 0;
            }
        } else if (!strcmp(a, "--csv-eol")) {
            if (++i >= argc) goto missing;
            if (!strcmp(argv[i], "lf")) {
                o->csv_lf = 1;
            } else if (!strcmp(argv[i], "crlf")) {
                o->csv_lf = 0;
            } else {
                fprintf(stderr, "etwdump: unknown --csv-eol '%s' (known: crlf, lf)\n", argv[i]);
                return 0;
            }
        } else if (!strcmp(a, "--time")) {
            if (++i >= argc) goto missing;
            if (!strcmp(argv[i], "utc")) {
                o->time = ETW_TIME_UTC;
            } else if (!strcmp(argv[i], "relative")) {
                o->time = ETW_TIME_RELATIVE;
            } else if (!strcmp(argv[i], "local")) {
                o->time = ETW_TIME_LOCAL;
            } else {
                fprintf(stderr, "etwdump: unknown time form '%s' (known: utc, relative, local)\n", argv[i]);
                return 0;
            }
        } else if (!strcmp(a, "--fields")) {
            if (++i >= argc) goto missing;
            if (!add_fields(o, argv[i])) return 0;
        } else if (!strcmp(a, "--stacks")) {
            o->stacks = 1;
        } else if (!strcmp(a, "--profile")) {
            if (++i >= argc) goto missing;
            if (etw_profile_format_parse(argv[i], &o->profile_format) != ETW_OK) {
                fprintf(stderr, "etwdump: unknown profile format '%s' (known: folded, speedscope, firefox)\n",
                        argv[i]);
                return 0;
            }
            o->profile = 1;
        } else if (!strcmp(a, "--weight")) {
            if (++i >= argc) goto missing;
            if (!*argv[i]) {
                fprintf(stderr, "etwdump: --weight needs a field name\n");
                return 0;
            }
            o->weight = argv[i];
        } else if (!strcmp(a, "--symbols")) {
            if (++i >= argc) goto missing;
            if (o->nsymbols == MAX_SYMBOLS) {
                fprintf(stderr, "etwdump: at most %d --symbols options\n", MAX_SYMBOLS);
                return 0;
            }
            o->symbols[o->nsymbols++] = argv[i];
        } else if (!strcmp(a, "--schemas")) {
            o->schemas = 1;
        } else if (!strcmp(a, "--no-progress")) {
            o->no_progress = 1;
        } else if (!strcmp(a, "-o") || !strcmp(a, "--output")) {
            if (++i >= argc) goto missing;
            o->output = argv[i];
        } else if (!strcmp(a, "-j") || !strcmp(a, "--jobs")) {
            if (++i >= argc) goto missing;
            char *end;
            errno = 0;
            unsigned long long j = strtoull(argv[i], &end, 10);
            if (errno || *end || argv[i][0] == '-' || !argv[i][0] || j < 1 || j > MAX_JOBS) {
                fprintf(stderr, "etwdump: --jobs needs a number from 1 to %d, not '%s'\n", MAX_JOBS, argv[i]);
                return 0;
            }
            o->jobs = (unsigned)j;
        } else if (!strcmp(a, "-n") || !strcmp(a, "--max-events")) {
            if (++i >= argc) goto missing;
            char *end;
            errno = 0;
            o->max_events = strtoull(argv[i], &end, 10);
            if (errno || *end || argv[i][0] == '-' || !argv[i][0]) {
                fprintf(stderr, "etwdump: --max-events needs a number, not '%s'\n", argv[i]);
                return 0;
            }
        } else if (filter_option(a) >= 0) {
            int k = filter_option(a);
            const char *v = "";
            if (filter_options[k].has_value) {
                if (++i >= argc) goto missing;
                v = argv[i];
            }
            if (o->nfilters == MAX_FILTERS) {
                fprintf(stderr, "etwdump: at most %d selection options\n", MAX_FILTERS);
                return 0;
            }
            filter_spec *fs = &o->filters[o->nfilters++];
            fs->option = a;
            fs->key = filter_options[k].key;
            fs->exclude = filter_options[k].exclude;
            fs->value = v;
        } else {
            fprintf(stderr, "etwdump: unknown option '%s' (see --help)\n", a);
            return 0;
        }
        continue;
    missing:
        fprintf(stderr, "etwdump: option '%s' needs a value\n", a);
        return 0;
    }
    if (!o->ninputs) {
        fputs(usage_text, stderr);
        return 0;
    }
    if (o->stats && o->schemas) {
        fprintf(stderr, "etwdump: --stats and --schemas: one summary at a time\n");
        return 0;
    }
    if (o->profile && (o->stats || o->schemas)) {
        fprintf(stderr, "etwdump: --profile writes a profile: not with --%s\n", o->stats ? "stats" : "schemas");
        return 0;
    }
    if (o->profile && o->stacks) {
        fprintf(stderr, "etwdump: --stacks adds stacks to the events; --profile writes a profile instead\n");
        return 0;
    }
    if (o->weight && !o->profile) {
        fprintf(stderr, "etwdump: --weight is the weight of --profile's samples: it needs --profile\n");
        return 0;
    }
    if (o->weight) {
        int event = 0;
        for (int i = 0; i < o->nfilters; i++)
            if (!strcmp(o->filters[i].key, "event") && !o->filters[i].exclude && o->filters[i].value[0] != '!')
                event = 1;
        if (!event) {
            fprintf(stderr, "etwdump: --weight FIELD weighs the events --event selects: give --event too\n");
            return 0;
        }
    }
    return 1;
}
