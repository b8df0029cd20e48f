/* etwdump - the command line: usage text and option parsing. */
#include <errno.h>
#include <getopt.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "etwdump.h"

static const char usage_text[] =
    "usage: etwdump [OPTIONS] [--] FILE.etl|DIR|-...\n"
    "       etwdump --tmf-from-pdb FILE.pdb [-o FILE]\n"
    "\n"
    "Decode Windows ETW traces into JSON Lines (one object per event, in\n"
    "timestamp order; the first one is the log-file header), text or CSV, or\n"
    "summarize them. Several files (directories: their *.etl files, recursively)\n"
    "are merged into one timeline; each event then says its \"file\".\n"
    "'-' reads a trace from standard input (held in memory, at most 1 GiB;\n"
    "pipes and devices given by name too); '--' ends the options.\n"
    "Options and inputs come in any order. A long option may be cut to a\n"
    "prefix no other option has (--form csv) and takes its value joined\n"
    "or next (--jobs=4, --jobs 4); short options bundle (-qn 10, -j4).\n"
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
    "  --fields A,B,...     keep only these payload fields (repeatable); a name\n"
    "                       no selected event has is reported at the end\n"
    "  --time FORM          utc (RFC 3339, default for json and csv), relative\n"
    "                       (seconds from the trace start, default for text),\n"
    "                       local (RFC 3339 with this machine's UTC offset) or\n"
    "                       trace (RFC 3339 with the recording machine's offset:\n"
    "                       the trace header's time zone, daylight saving time\n"
    "                       applied by its rules, each file its own)\n"
    "  -H, --with-file      add \"file\" to every event, also of one input (text:\n"
    "                       file=, csv: the file column)\n"
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
    "  --tmf PATH           format WPP messages with these trace message format\n"
    "                       files: a .tmf file or a folder of them (whatever\n"
    "                       their names), or a driver's PDB (its TMF\n"
    "                       annotations); repeatable, the first definition of a\n"
    "                       message wins; \"message\" is then always written\n"
    "  --lang TAG           the language of messages and names from PE files\n"
    "                       (en-US by default): TAG/FILE.mui beside each file\n"
    "  --no-default-manifests  do not decode .NET runtime events with the CLR's\n"
    "                       manifest built into etwdump (ClrEtwAll.man: used for\n"
    "                       the events no -m manifest or schema in the trace\n"
    "                       describes)\n"
    "  --no-manifest-events leave out the EventSource manifest chunks (ManifestData)\n"
    "  --tl-cache MB        memory for TraceLogging schemas (default 32, at least\n"
    "                       1): past it the oldest half is dropped and parsed\n"
    "                       again from the events that need it\n"
    "  --messages           add \"message\": the event's message string with its\n"
    "                       %1..%n inserts filled in from the fields\n"
    "  --stats              print a summary instead of the events: the files,\n"
    "                       events by provider, event and process (count, first\n"
    "                       and last time, bytes), lost events, decode errors;\n"
    "                       with --format json, the same as one JSON object;\n"
    "                       a trace with stacks adds the top modules and\n"
    "                       functions by CPU samples (\"cpu_samples\")\n"
    "  --report NAME        a report instead of the events (docs/reports.md):\n"
    "                       processes, gc, disk, files, network or cpu; tables\n"
    "                       as text, or with --format json / csv\n"
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
    "                       srv*DIR[*URL]: the network is never used); its PDBs'\n"
    "                       TMF annotations also format WPP messages; repeatable\n"
    "  --tmf-from-pdb FILE  print the WPP trace message formats (TMF) kept in the\n"
    "                       PDB FILE (its S_ANNOTATION \"TMF:\" records), as\n"
    "                       tracepdb would write them to .tmf files: each\n"
    "                       message GUID line once, then its messages; no\n"
    "                       trace is read (not with trace inputs)\n"
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
    "                       available; --stats on less than 64 MiB of input:\n"
    "                       1); the output is the same for every N\n"
    "  -o, --output FILE    write to FILE instead of standard output (with\n"
    "                       --split-by: the directory of the files)\n"
    "  --split-by event     with -o DIR: one file per event kind in DIR (made\n"
    "                       when missing), DIR/PROVIDER-EVENT.EXT (csv, jsonl,\n"
    "                       txt, xml): '/', '\\', ':', *?\"<>|, control characters\n"
    "                       and a leading '.' become '_', at most 200 bytes, a\n"
    "                       name taken (ignoring case) gets -2, -3...; csv: each\n"
    "                       file with its kind's columns only. At most 64 files\n"
    "                       are open at once (the others reopened to append) and\n"
    "                       65536 kinds; read on one thread (the trace's order)\n"
    "  -q, --quiet          do not report damaged data on standard error (fatal\n"
    "                       errors, such as a -m manifest that cannot be read, are said)\n"
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
    "  --since T            from T on (inclusive): RFC 3339 ('2021-09-09T12:59:35Z'),\n"
    "                       the same with a space and the zone optional (UTC:\n"
    "                       '2021-09-09 12:59:35.5', '2021-09-09 14:59:35+02:00'),\n"
    "                       a date ('2021-09-09': its midnight UTC), or a time\n"
    "                       from the trace start: seconds ('12.5', '+3') or with\n"
    "                       a unit ('3s', '250ms', '100us', '500ns', '2m', '1h')\n"
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
    "could be read, a -m path cannot be read (a file named with -m that does not\n"
    "load: malformed or over a limit), or the command line is wrong; 130 stopped by Ctrl-C (the output ends with a complete line). A\n"
    "closed pipe (etwdump ... | head) ends the run quietly.\n";

/* Every option: its long name, its short letter (0: none), whether it takes
 * a value, and for the selection options the library filter key it adds a
 * predicate of (etw_filter_key_from_name) and whether it excludes. One
 * table: getopt_long's is built from it, and the typo suggestions and
 * ambiguity messages read it. */
enum opt_id {
    O_HELP, O_VERSION, O_STATS, O_MANIFEST, O_WINDOWS, O_TMF, O_LANG, O_TL_CACHE, O_NO_DEFAULT_MANIFESTS, O_NO_MANIFEST_EVENTS,
    O_MESSAGES, O_RAW, O_INT64, O_FILE_ORDER, O_NO_MAP, O_MAP, O_QUIET, O_VERBOSE, O_FORMAT, O_CSV_EOL,
    O_TIME, O_FIELDS, O_STACKS, O_REPORT, O_PROFILE, O_WEIGHT, O_SYMBOLS, O_TMF_FROM_PDB, O_SCHEMAS, O_NO_PROGRESS, O_OUTPUT, O_JOBS,
    O_MAX_EVENTS, O_WITH_FILE, O_SPLIT_BY, O_FILTER
};

static const struct opt_def {
    const char *name; /* without "--" */
    int short_name;   /* 0: none */
    int has_value;
    enum opt_id id;
    const char *key;  /* O_FILTER: the library filter key */
    int exclude;
} opt_defs[] = {
    {"help", 'h', 0, O_HELP, NULL, 0},
    {"version", 'V', 0, O_VERSION, NULL, 0},
    {"stats", 0, 0, O_STATS, NULL, 0},
    {"manifest", 'm', 1, O_MANIFEST, NULL, 0},
    {"windows", 0, 1, O_WINDOWS, NULL, 0},
    {"tmf", 0, 1, O_TMF, NULL, 0},
    {"lang", 0, 1, O_LANG, NULL, 0},
    {"tl-cache", 0, 1, O_TL_CACHE, NULL, 0},
    {"no-default-manifests", 0, 0, O_NO_DEFAULT_MANIFESTS, NULL, 0},
    {"no-manifest-events", 0, 0, O_NO_MANIFEST_EVENTS, NULL, 0},
    {"messages", 0, 0, O_MESSAGES, NULL, 0},
    {"raw", 0, 0, O_RAW, NULL, 0},
    {"int64-as-string", 0, 0, O_INT64, NULL, 0},
    {"file-order", 0, 0, O_FILE_ORDER, NULL, 0},
    {"no-map", 0, 0, O_NO_MAP, NULL, 0},
    {"map", 0, 0, O_MAP, NULL, 0},
    {"quiet", 'q', 0, O_QUIET, NULL, 0},
    {"verbose", 0, 0, O_VERBOSE, NULL, 0},
    {"format", 0, 1, O_FORMAT, NULL, 0},
    {"csv-eol", 0, 1, O_CSV_EOL, NULL, 0},
    {"time", 0, 1, O_TIME, NULL, 0},
    {"fields", 0, 1, O_FIELDS, NULL, 0},
    {"stacks", 0, 0, O_STACKS, NULL, 0},
    {"report", 0, 1, O_REPORT, NULL, 0},
    {"profile", 0, 1, O_PROFILE, NULL, 0},
    {"weight", 0, 1, O_WEIGHT, NULL, 0},
    {"symbols", 0, 1, O_SYMBOLS, NULL, 0},
    {"tmf-from-pdb", 0, 1, O_TMF_FROM_PDB, NULL, 0},
    {"schemas", 0, 0, O_SCHEMAS, NULL, 0},
    {"no-progress", 0, 0, O_NO_PROGRESS, NULL, 0},
    {"output", 'o', 1, O_OUTPUT, NULL, 0},
    {"jobs", 'j', 1, O_JOBS, NULL, 0},
    {"max-events", 'n', 1, O_MAX_EVENTS, NULL, 0},
    {"with-file", 'H', 0, O_WITH_FILE, NULL, 0},
    {"split-by", 0, 1, O_SPLIT_BY, NULL, 0},
    /* selection: each adds one predicate of the library's filter */
    {"provider", 0, 1, O_FILTER, "provider", 0},
    {"event", 0, 1, O_FILTER, "event", 0},
    {"id", 0, 1, O_FILTER, "id", 0},
    {"level", 0, 1, O_FILTER, "level", 0},
    {"keywords", 0, 1, O_FILTER, "keywords", 0},
    {"pid", 0, 1, O_FILTER, "pid", 0},
    {"tid", 0, 1, O_FILTER, "tid", 0},
    {"since", 0, 1, O_FILTER, "since", 0},
    {"until", 0, 1, O_FILTER, "until", 0},
    {"errors", 0, 0, O_FILTER, "errors", 0},
    {"process", 0, 1, O_FILTER, "process", 0},
    {"where", 0, 1, O_FILTER, "where", 0},
    {"exclude-provider", 0, 1, O_FILTER, "provider", 1},
    {"exclude-event", 0, 1, O_FILTER, "event", 1},
    {"exclude-id", 0, 1, O_FILTER, "id", 1},
    {"exclude-pid", 0, 1, O_FILTER, "pid", 1},
    {"exclude-tid", 0, 1, O_FILTER, "tid", 1},
    {"exclude-keywords", 0, 1, O_FILTER, "keywords", 1},
    {"exclude-errors", 0, 0, O_FILTER, "errors", 1},
    {"exclude-process", 0, 1, O_FILTER, "process", 1},
};

#define NOPTS ((int)(sizeof opt_defs / sizeof opt_defs[0]))
/* getopt_long's value of an option without a short letter: past every char */
#define LONG_VAL(k) (256 + (k))
/* The option names a message shows ("--format"): "--" and the name. */
static char option_names[NOPTS][32];

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

/* Edit distance of a and b (b at most 31 characters, a cut there too),
 * an adjacent transposition counting as one edit ("fromat" -> "format"). */
static int edit_distance(const char *a, size_t la, const char *b) {
    size_t lb = strlen(b);
    if (la > 31) la = 31;
    if (lb > 31) lb = 31;
    int d[32][32];
    for (size_t i = 0; i <= la; i++) d[i][0] = (int)i;
    for (size_t j = 0; j <= lb; j++) d[0][j] = (int)j;
    for (size_t i = 1; i <= la; i++)
        for (size_t j = 1; j <= lb; j++) {
            int cost = a[i - 1] != b[j - 1];
            int v = d[i - 1][j] + 1;
            if (d[i][j - 1] + 1 < v) v = d[i][j - 1] + 1;
            if (d[i - 1][j - 1] + cost < v) v = d[i - 1][j - 1] + cost;
            if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] && d[i - 2][j - 2] + 1 < v)
                v = d[i - 2][j - 2] + 1;
            d[i][j] = v;
        }
    return d[la][lb];
}

/* A long option getopt_long refused (arg: the word as typed, "--fromat" or
 * "--ma=x"): ambiguous (the candidates named), or unknown (the nearest
 * name suggested when it is close: at most 2 edits, and fewer than half
 * the typed name). */
static void report_bad_long(const char *arg) {
    const char *name = arg + 2;
    size_t len = strcspn(name, "=");
    int hits = 0;
    for (int k = 0; k < NOPTS; k++)
        if (!strncmp(opt_defs[k].name, name, len) && len) hits++;
    if (hits > 1) {
        fprintf(stderr, "etwdump: option '--%.*s' is ambiguous; possibilities:", (int)len, name);
        for (int k = 0; k < NOPTS; k++)
            if (!strncmp(opt_defs[k].name, name, len)) fprintf(stderr, " '--%s'", opt_defs[k].name);
        fprintf(stderr, "\n");
        return;
    }
    int best = -1, best_d = 1 << 30;
    for (int k = 0; k < NOPTS; k++) {
        int d = edit_distance(name, len, opt_defs[k].name);
        if (d < best_d) best_d = d, best = k;
    }
    if (best >= 0 && best_d <= 2 && (size_t)best_d * 2 < len)
        fprintf(stderr, "etwdump: unknown option '--%.*s'; did you mean '--%s'?\n", (int)len, name,
                opt_defs[best].name);
    else
        fprintf(stderr, "etwdump: unknown option '--%.*s' (see --help)\n", (int)len, name);
}

/* The table entry of getopt_long's return value c; -1: none. */
static int def_of(int c) {
    if (c >= 256 && c < 256 + NOPTS) return c - 256;
    for (int k = 0; k < NOPTS; k++)
        if (opt_defs[k].short_name && opt_defs[k].short_name == c) return k;
    return -1;
}

/* One option k with its value v (NULL when it takes none). 1: done;
 * 0: a usage error, reported. */
static int apply(options *o, int k, char *v) {
    const char *name = option_names[k];
    switch (opt_defs[k].id) {
    case O_HELP:
        fputs(usage_text, stdout);
        exit(EXIT_CLEAN);
    case O_VERSION:
        printf("etwdump %s\n", etw_version_string());
        exit(EXIT_CLEAN);
    case O_STATS: o->stats = 1; break;
    case O_MANIFEST:
        if (o->nmanifests == MAX_MANIFESTS) {
            fprintf(stderr, "etwdump: at most %d --manifest options\n", MAX_MANIFESTS);
            return 0;
        }
        o->manifests[o->nmanifests++] = v;
        break;
    case O_WINDOWS:
        if (o->nwindows == MAX_WINDOWS) {
            fprintf(stderr, "etwdump: at most %d --windows options\n", MAX_WINDOWS);
            return 0;
        }
        o->windows[o->nwindows++] = v;
        break;
    case O_TMF:
        if (o->ntmf == MAX_TMF) {
            fprintf(stderr, "etwdump: at most %d --tmf options\n", MAX_TMF);
            return 0;
        }
        o->tmf[o->ntmf++] = v;
        break;
    case O_LANG:
        if (strlen(v) > 23 || !*v) {
            fprintf(stderr, "etwdump: --lang takes a language tag such as en-US or de-DE\n");
            return 0;
        }
        o->lang = v;
        break;
    case O_NO_DEFAULT_MANIFESTS: o->no_default_manifests = 1; break;
    case O_NO_MANIFEST_EVENTS: o->no_manifest_events = 1; break;
    case O_MESSAGES: o->messages = 1; break;
    case O_RAW: o->raw = 1; break;
    case O_INT64: o->int64_as_string = 1; break;
    case O_FILE_ORDER: o->file_order = 1; break;
    case O_NO_MAP: o->no_map = 1; break;
    case O_MAP: o->no_map = 0; break;
    case O_QUIET: o->quiet = 1; break;
    case O_VERBOSE: o->verbose = 1; break;
    case O_WITH_FILE: o->with_file = 1; break;
    case O_FORMAT:
        o->format_given = 1;
        o->perfetto = 0; /* the last --format wins */
        if (!strcmp(v, "json")) {
            o->format = ETW_RENDER_JSON;
        } else if (!strcmp(v, "text")) {
            o->format = ETW_RENDER_TEXT;
        } else if (!strcmp(v, "csv")) {
            o->format = ETW_RENDER_CSV;
        } else if (!strcmp(v, "timesketch")) {
            o->format = ETW_RENDER_TIMESKETCH;
        } else if (!strcmp(v, "xml")) {
            o->format = ETW_RENDER_XML;
        } else if (!strcmp(v, "perfetto")) {
            o->format = ETW_RENDER_JSON; /* unused: the timeline writer has its own */
            o->perfetto = 1;
        } else {
            fprintf(stderr, "etwdump: unknown format '%s' (known: json, text, csv, timesketch, xml, perfetto)\n", v);
            return 0;
        }
        break;
    case O_CSV_EOL:
        if (!strcmp(v, "lf")) {
            o->csv_lf = 1;
        } else if (!strcmp(v, "crlf")) {
            o->csv_lf = 0;
        } else {
            fprintf(stderr, "etwdump: unknown --csv-eol '%s' (known: crlf, lf)\n", v);
            return 0;
        }
        break;
    case O_TIME:
        o->time_trace = 0;
        if (!strcmp(v, "utc")) {
            o->time = ETW_TIME_UTC;
        } else if (!strcmp(v, "relative")) {
            o->time = ETW_TIME_RELATIVE;
        } else if (!strcmp(v, "local")) {
            o->time = ETW_TIME_LOCAL;
        } else if (!strcmp(v, "trace")) {
            o->time = ETW_TIME_LOCAL; /* with the trace header's offset (output.c) */
            o->time_trace = 1;
        } else {
            fprintf(stderr, "etwdump: unknown time form '%s' (known: utc, relative, local, trace)\n", v);
            return 0;
        }
        break;
    case O_FIELDS:
        if (!add_fields(o, v)) return 0;
        break;
    case O_STACKS: o->stacks = 1; break;
    case O_REPORT:
        if (etw_report_kind_parse(v, &o->report_kind) != ETW_OK) {
            fprintf(stderr, "etwdump: unknown report '%s' (known: processes, gc, disk, files, network, cpu)\n", v);
            return 0;
        }
        o->report = 1;
        break;
    case O_PROFILE:
        if (etw_profile_format_parse(v, &o->profile_format) != ETW_OK) {
            fprintf(stderr, "etwdump: unknown profile format '%s' (known: folded, speedscope, firefox)\n", v);
            return 0;
        }
        o->profile = 1;
        break;
    case O_WEIGHT:
        if (!*v) {
            fprintf(stderr, "etwdump: --weight needs a field name\n");
            return 0;
        }
        o->weight = v;
        break;
    case O_SYMBOLS:
        if (o->nsymbols == MAX_SYMBOLS) {
            fprintf(stderr, "etwdump: at most %d --symbols options\n", MAX_SYMBOLS);
            return 0;
        }
        o->symbols[o->nsymbols++] = v;
        break;
    case O_TMF_FROM_PDB:
        if (o->tmf_pdb) {
            fprintf(stderr, "etwdump: --tmf-from-pdb reads one PDB\n");
            return 0;
        }
        o->tmf_pdb = v;
        break;
    case O_SCHEMAS: o->schemas = 1; break;
    case O_NO_PROGRESS: o->no_progress = 1; break;
    case O_OUTPUT: o->output = v; break;
    case O_SPLIT_BY:
        if (strcmp(v, "event")) {
            fprintf(stderr, "etwdump: unknown --split-by '%s' (known: event)\n", v);
            return 0;
        }
        o->split_by_event = 1;
        break;
    case O_TL_CACHE: {
        char *end;
        errno = 0;
        unsigned long long mb = strtoull(v, &end, 10);
        if (errno || *end || v[0] == '-' || !v[0] || mb < 1 || mb > MAX_TL_CACHE_MB ||
            mb > (unsigned long long)(SIZE_MAX >> 20)) {
            fprintf(stderr, "etwdump: --tl-cache needs a number of MB from 1 to %d, not '%s'\n",
                    MAX_TL_CACHE_MB, v);
            return 0;
        }
        o->tl_cache_bytes = (size_t)mb << 20;
        break;
    }
    case O_JOBS: {
        char *end;
        errno = 0;
        unsigned long long j = strtoull(v, &end, 10);
        if (errno || *end || v[0] == '-' || !v[0] || j < 1 || j > MAX_JOBS) {
            fprintf(stderr, "etwdump: --jobs needs a number from 1 to %d, not '%s'\n", MAX_JOBS, v);
            return 0;
        }
        o->jobs = (unsigned)j;
        break;
    }
    case O_MAX_EVENTS: {
        char *end;
        errno = 0;
        o->max_events = strtoull(v, &end, 10);
        if (errno || *end || v[0] == '-' || !v[0]) {
            fprintf(stderr, "etwdump: --max-events needs a number, not '%s'\n", v);
            return 0;
        }
        break;
    }
    case O_FILTER: {
        if (o->nfilters == MAX_FILTERS) {
            fprintf(stderr, "etwdump: at most %d selection options\n", MAX_FILTERS);
            return 0;
        }
        filter_spec *fs = &o->filters[o->nfilters++];
        fs->option = name;
        fs->key = opt_defs[k].key;
        fs->exclude = opt_defs[k].exclude;
        fs->value = v ? v : "";
        break;
    }
    }
    return 1;
}

int parse_args(int argc, char **argv, options *o) {
    memset(o, 0, sizeof *o);
    /* pread by default: a mapped file's pages are faulted in whole large
     * folios (up to 2 MiB) and stay resident behind the reader, several MiB
     * more than the buffers pread copies (docs/limits.md); full decoding
     * costs the same CPU either way */
    o->no_map = 1;
    /* getopt_long's tables, from opt_defs: the short letters (a leading
     * ':' makes a missing value return ':') and the long options */
    struct option longs[NOPTS + 1];
    char shorts[2 * NOPTS + 2];
    size_t ns = 0;
    shorts[ns++] = ':';
    for (int k = 0; k < NOPTS; k++) {
        snprintf(option_names[k], sizeof option_names[k], "--%s", opt_defs[k].name);
        longs[k].name = opt_defs[k].name;
        longs[k].has_arg = opt_defs[k].has_value ? required_argument : no_argument;
        longs[k].flag = NULL;
        longs[k].val = opt_defs[k].short_name ? opt_defs[k].short_name : LONG_VAL(k);
        if (opt_defs[k].short_name) {
            shorts[ns++] = (char)opt_defs[k].short_name;
            if (opt_defs[k].has_value) shorts[ns++] = ':';
        }
    }
    memset(&longs[NOPTS], 0, sizeof longs[NOPTS]);
    shorts[ns] = 0;
    opterr = 0; /* the messages are ours */
    optind = 1;
    for (;;) {
        int prev = optind;
        int c = getopt_long(argc, argv, shorts, longs, NULL);
        if (c == -1) break;
        /* the word getopt_long last read (an option after permuted inputs:
         * optind moved past it) */
        const char *word = argv[optind > prev ? optind - 1 : prev];
        if (c == ':') { /* a missing value */
            int k = def_of(optopt);
            if (k >= 0 && optopt < 256 && strncmp(word, "--", 2))
                fprintf(stderr, "etwdump: option '-%c' needs a value\n", optopt);
            else
                fprintf(stderr, "etwdump: option '%s' needs a value\n", k >= 0 ? option_names[k] : word);
            return 0;
        }
        if (c == '?') {
            if (!strncmp(word, "--", 2) && optopt) { /* --stats=1 */
                int k = def_of(optopt);
                fprintf(stderr, "etwdump: option '%s' takes no value\n", k >= 0 ? option_names[k] : word);
            } else if (!strncmp(word, "--", 2)) {
                report_bad_long(word);
            } else {
                fprintf(stderr, "etwdump: unknown option '-%c' (see --help)\n", optopt);
            }
            return 0;
        }
        int k = def_of(c);
        if (k < 0 || !apply(o, k, opt_defs[k].has_value ? optarg : NULL)) {
            if (k < 0) fprintf(stderr, "etwdump: unknown option '%s' (see --help)\n", word);
            return 0;
        }
    }
    /* the inputs, in the order given (getopt_long moved them after the
     * options; after "--" every word is one) */
    for (int i = optind; i < argc; i++)
        if (!add_input(o, argv[i])) return 0;
    if (o->tmf_pdb) {
        if (o->ninputs) {
            fprintf(stderr, "etwdump: --tmf-from-pdb prints a PDB's trace message formats: no trace inputs with it\n");
            return 0;
        }
        return 1;
    }
    if (!o->ninputs) {
        fputs(usage_text, stderr);
        return 0;
    }
    if (o->split_by_event) {
        const char *other = o->stats     ? "--stats"
                            : o->schemas ? "--schemas"
                            : o->profile ? "--profile"
                            : o->stacks  ? "--stacks"
                            : o->report  ? "--report"
                            : o->perfetto ? "--format perfetto"
                                         : NULL;
        if (other) {
            fprintf(stderr, "etwdump: --split-by writes the events into files by kind: not with %s\n", other);
            return 0;
        }
        if (!o->output) {
            fprintf(stderr, "etwdump: --split-by event needs -o DIR, the directory of the files\n");
            return 0;
        }
    }
    if (o->stats && o->schemas) {
        fprintf(stderr, "etwdump: --stats and --schemas: one summary at a time\n");
        return 0;
    }
    if (o->profile && (o->stats || o->schemas)) {
        fprintf(stderr, "etwdump: --profile writes a profile: not with --%s\n", o->stats ? "stats" : "schemas");
        return 0;
    }
    if (o->report && (o->stats || o->schemas || o->profile || o->stacks || o->perfetto)) {
        fprintf(stderr, "etwdump: --report writes a report: not with --stats, --schemas, --profile, --stacks or --format perfetto\n");
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
