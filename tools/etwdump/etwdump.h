/* etwdump - shared declarations of the CLI's parts. The tool uses only the
 * public API of libetwdecode.
 *
 *   options.c   the command line
 *   inputs.c    files and directories -> the traces to read (etw_multi)
 *   filter.c    selection options -> etw_filter
 *   output.c    the selected events as JSON, text or CSV (etw_render)
 *   split.c     --split-by event: one output file per event kind
 *   fieldcheck.c  the --fields names no selected event had
 *   perfetto.c  --format perfetto (etw_perfetto)
 *   stats.c     --stats and --schemas
 *   profile.c   --profile and --stacks (the profile stage, etw_profile.h)
 *   report.c    --report (etw_report.h)
 *   tmfpdb.c    --tmf-from-pdb (etw_pdb_annotations_file)
 *   progress.c  the progress line, Ctrl-C and broken pipes
 *   heap.c      the process's heap, set up once the options are read
 *   main.c      puts them together
 */
#ifndef ETWDUMP_H
#define ETWDUMP_H

#include <stdio.h>

#include "etwdecode/etwdecode.h"

#define EXIT_CLEAN 0   /* everything read */
#define EXIT_SKIPPED 1 /* decoded, but something was skipped (see stderr) */
#define EXIT_FATAL 2   /* bad usage, missing file, not an ETL file */
#define EXIT_INTERRUPTED 130 /* Ctrl-C (128 + SIGINT, the shell convention) */

#define MAX_MANIFESTS 64
#define MAX_TMF 64
#define MAX_WINDOWS ETW_DECODER_MAX_WINDOWS
#define MAX_FILTERS 256
#define MAX_INPUTS 4096
/* A trace read from standard input ("-") or another stream (a pipe, a
 * device) is held in memory: at most this many bytes (docs/limits.md). */
#define STREAM_MAX ((size_t)1 << 30)
#define MAX_JOBS 256
#define MAX_TL_CACHE_MB 1048576 /* --tl-cache: 1 TiB, so the bytes fit a 64-bit size_t */
#define MAX_SYMBOLS 64

/* One selection option as given: --provider X is {"provider", 0, "X"},
 * --exclude-pid 4 is {"pid", 1, "4"}. */
typedef struct filter_spec {
    const char *option; /* as typed, for messages */
    const char *key;
    int exclude;
    const char *value;
} filter_spec;

typedef struct options {
    const char *inputs[MAX_INPUTS]; /* files and directories, as given */
    int ninputs;
    const char *manifests[MAX_MANIFESTS];
    int nmanifests;
    const char *windows[MAX_WINDOWS]; /* --windows DIR */
    int nwindows;
    etw_windows_index *win_index[MAX_WINDOWS]; /* opened by main, shared by every decoder */
    const char *tmf[MAX_TMF];         /* --tmf DIR|FILE */
    int ntmf;
    struct etw_wpp_set *tmf_set;      /* loaded by main, shared by every decoder */
    const char *lang;                 /* --lang */
    size_t tl_cache_bytes;            /* --tl-cache, in bytes; 0: the library's default */
    int no_manifest_events;
    int no_default_manifests; /* etw_decoder_options.no_default_manifests */
    int messages;
    const char *output;
    int stats;
    int schemas;
    int raw;
    int csv_lf;        /* --csv-eol lf */
    int int64_as_string; /* --int64-as-string */
    int file_order;
    int no_map;     /* etw_reader_options.no_map: 1 unless --map */
    int quiet;
    int verbose;    /* --verbose: every problem of the -m folders' manifests */
    int no_progress;
    int with_file;      /* -H: "file" on every event, also of one input */
    int time_trace;     /* --time trace: local times in the trace header's zone */
    int split_by_event; /* --split-by event: one output file per event kind in -o DIR */
    unsigned long long max_events;
    etw_render_format format;
    int format_given;  /* --format was on the command line (--stats: json vs the table) */
    int perfetto;      /* --format perfetto: a Trace Event Format timeline (perfetto.c) */
    etw_time_form time;
    const char *fields[ETW_RENDER_MAX_FIELDS]; /* --fields, split at commas */
    int nfields;
    filter_spec filters[MAX_FILTERS];
    int nfilters;
    unsigned jobs; /* -j; 0: the processors available */
    int stacks;        /* --stacks: "stack" (frame labels) on every event that has one */
    int report;        /* --report NAME given */
    etw_report_kind report_kind;
    int profile;       /* --profile FORMAT given */
    etw_profile_format profile_format;
    const char *weight; /* --weight FIELD: a --profile sample's weight */
    const char *symbols[MAX_SYMBOLS]; /* --symbols DIR */
    int nsymbols;
    const char *tmf_pdb; /* --tmf-from-pdb FILE: print its TMF, read no trace */
} options;

typedef struct manifests manifests;
typedef struct field_check field_check;

typedef struct diag_ctx {
    const char *path;    /* the file being opened */
    etw_multi *multi;    /* once open: names the file of the current event */
    int quiet;
    int muted; /* during the pre-scan: the same problems come again later */
    int hold;  /* --stats -j 1 without a pre-scan: problems are not said, only */
    int held;  /* noted here (the run is made again the old way: run_stats) */
    manifests *mf; /* the -m options (NULL: none) */
    etw_builtins *builtins; /* the built-in manifests, parsed once for every decoder of the run */
    int *lost_entries; /* while opening: archive entries skipped as no trace (counted as skipped files) */
} diag_ctx;

/* The first GUID word of the provider of MetaData records (TRACE_EVENT_INFO
 * schemas merged into the trace: bbccf6c1-6cd1-48c4-80ff-839482e37671,
 * src/source/etw_metadata.h): a cheap test before etw_decoder_learn_kind. */
#define METADATA_PROVIDER_DATA1 0xbbccf6c1u

/* The MetaData records of a trace, in read order: all a pre-scan learns
 * (etw_decoder_prescan), kept by a run that reads every event so that a
 * later decoder learns them without reading the trace again. */
typedef struct metadata_kept {
    etw_event *ev; /* user_data: data + off[i] when learned */
    size_t *off;
    size_t n, cap;
    uint8_t *data;
    size_t used, data_cap;
    int complete; /* every event of the trace was offered, every record kept */
    int too_many; /* past METADATA_KEEP_MAX (stats.c): none kept from then on */
} metadata_kept;

/* stats.c: keep a copy of ev (0: out of memory); learn them all (an
 * etw_decoder_learn status other than ETW_OK); free them. */
int metadata_keep(metadata_kept *k, const etw_event *ev);
etw_status metadata_learn(const metadata_kept *k, etw_decoder *d);
void metadata_kept_free(metadata_kept *k);

/* Everything a run works with. */
typedef struct session {
    const options *o;
    etw_multi *m;
    etw_decoder *dec;
    etw_filter *filter;
    FILE *out;
    diag_ctx *dc;
    int64_t origin;      /* FILETIME of the earliest log-file header: "0 s" */
    int several;         /* more than one file is read */
    int with_file;       /* several or -H: the events say their "file" */
    int par_problems;    /* --stats -j N: the decoders reported problems */
    int cut_short;       /* the run stopped before the end (-n reached, a closed pipe) */
    int saw_stacks;      /* --stats: a StackWalk event was read (CPU samples by module follow) */
    int stacks_ahead;    /* --stats -j 1: the pre-scan met a StackWalk event (or did not look) */
    int no_prescan;      /* one thread (main.c): the decoder was made without the pre-scan (ahead.c) */
    int rescan;          /* ... and the scan met what the pre-scan changes: made again with it */
    metadata_kept metadata; /* --stats -j N: the MetaData records the run read */
    field_check *fields_seen; /* --fields: the names the selected events had (NULL: none) */
} session;

/* main.c: 1 when the run met damaged data - the decoder's problems (not
 * the manifests': told, never counted) or records a reader skipped - for
 * exit status 1 (EXIT_SKIPPED) at the end of a clean run. */
int run_problems(const session *s);

/* ahead.c: a one-thread run over one file without the pre-scan, learning
 * the MetaData records into dec as their buffers load. ahead_start
 * watches the file (AHEAD_STACKS: the StackWalk records too, until the
 * first one, which sets a->stacks) and with AHEAD_HOLD holds the problems
 * told to s->dc (diag_ctx.hold: a run whose problems are said);
 * ahead_metadata_only stops watching for stacks; ahead_stop ends both.
 * ahead_missed: 1 when ev (each event read, in order) shows that the run
 * may differ from one with the pre-scan - a problem held, a record learned
 * too late, out of memory, or a MetaData record not seen ahead - and is to
 * be made again with it. */
enum { AHEAD_STACKS = 1, AHEAD_HOLD = 2 };
typedef struct ahead {
    etw_reader *r;     /* the file watched; NULL: none (several files) */
    etw_decoder *dec;
    uint64_t learned;  /* MetaData records learned ahead */
    uint64_t met;      /* MetaData records met in order */
    int stale, nomem;  /* a record came too late; out of memory */
    int stacks;        /* a StackWalk record was loaded */
    int hold;          /* AHEAD_HOLD */
} ahead;
void ahead_start(ahead *a, session *s, etw_decoder *dec, int flags);
void ahead_metadata_only(ahead *a);
void ahead_stop(ahead *a, session *s);
int ahead_missed(ahead *a, const session *s, const etw_event *ev);
/* ahead.c: after ahead_missed, the session made again as before it: the
 * files from their start, a new filter, a new decoder that pre-scanned
 * (stacks: set when the pre-scan met a StackWalk event; may be NULL).
 * EXIT_CLEAN, or the failure (reported). */
int session_again(session *s, int *stacks);

/* options.c: the command line. Returns 1 when o is filled, 0 on a usage error
 * (already reported); --help and --version print and exit. */
int parse_args(int argc, char **argv, options *o);

/* inputs.c: open every input (directories: their *.etl files, recursively,
 * in name order; "-", pipes and devices read into memory, readers opened
 * with ro) into m. Unreadable ones are reported and skipped
 * (*skipped counts them); returns the number of files opened. */
int open_inputs(const options *o, const etw_reader_options *ro, etw_multi *m, diag_ctx *dc, int *skipped);

/* inputs.c: the size in bytes of every file of m. */
unsigned long long input_bytes(etw_multi *m);
/* inputs.c: 1 when every input opened is a file (none was read from a
 * stream: standard input, a pipe, a device). */
int inputs_all_files(void);
/* inputs.c: free the bytes of the traces read from streams (after m). */
void inputs_free(void);

/* filter.c: the library filter the selection options describe; NULL after
 * reporting a bad value. */
etw_filter *build_filter(const options *o);

/* filter.c: after a whole run, one warning for each --event/--provider
 * name or glob (and their --exclude- forms) that matched no event name,
 * with the nearest names seen. */
void report_unmatched(const options *o, const etw_filter *f);

/* fieldcheck.c: which --fields names the selected events' schemas have
 * (a warning at the end for those none had). NULL without --fields (every
 * call then does nothing) or out of memory (no warning). */
field_check *field_check_new(const options *o);
void field_check_free(field_check *fc);
/* A selected event (its schema looked at once). */
void field_check_event(field_check *fc, etw_decoder *dec, const etw_event *ev);
/* Add what from saw to into (-j: each worker has its own). */
void field_check_merge(field_check *into, const field_check *from);
/* One line on stderr per --fields name no selected event had. */
void field_check_report(const field_check *fc);

/* output.c: --time trace, the renderers' utc_offset context: the offset
 * of the file of the event about to be rendered (set before each). */
typedef struct trace_zone {
    const etw_logfile_header *header; /* of the event's file; NULL: UTC */
} trace_zone;
/* Set tz (a trace_zone) to r's log-file header (its time zone). */
void trace_zone_set(void *tz, const etw_reader *r);

/* split.c: --split-by event, one file per event kind in the -o directory
 * (the comment at its top says how); ro: the run's render options. Run by
 * run_events on one thread. */
int run_split(session *s, const etw_render_options *ro);

/* output.c: the selected events in the chosen format. */
int run_events(session *s);

/* output.c: 1 when run_events_parallel can do this run: one input file,
 * events (not --stats/--schemas), columns known without a first pass. */
int parallel_run(const options *o, etw_multi *m);

/* output.c: the same as run_events, decoded on -j threads by the library's
 * pipeline (one decoder and filter per thread, in one pass over the file:
 * no pre-scan). s->dec and s->filter are not used. */
int run_events_parallel(session *s);

/* main.c: give a decoder the --windows indexes (every decoder of a run). */
void add_windows(const options *o, etw_decoder *dec);

/* main.c: worker threads for -j (0: all on the calling thread, -j 1). */
unsigned worker_threads(const options *o);
/* main.c: the decoder of a run on one thread (manifests, merged metadata). */
int setup_decoder(const options *o, etw_multi *m, diag_ctx *dc, etw_decoder **out);
/* setup_decoder, without the pre-scan (prescan 0: for a trace known to have
 * no MetaData record, which is all it learns), or (stacks not NULL)
 * setting *stacks to whether the pre-scan met a StackWalk event. */
int setup_decoder_ex(const options *o, etw_multi *m, diag_ctx *dc, int prescan, int *stacks, etw_decoder **out);

/* main.c: problems learning schemas (manifests name their own file and line). */
void on_decoder_diag(void *ctx, const etw_diag *d);

/* manifests.c: the -m options as one manifest catalog (the manifests.c
 * comment says how their problems are told). manifests_open returns
 * EXIT_FATAL after reporting a -m path that cannot be read; *out stays NULL
 * without -m. */
int manifests_open(const options *o, manifests **out);
/* Give a decoder the catalog (NULL ms: nothing); EXIT_FATAL when it cannot. */
int manifests_attach(manifests *ms, etw_decoder *dec);
/* etw_decoder_options.on_manifest_diag (ctx: the manifests); thread-safe. */
void on_manifest_diag(void *ctx, const etw_diag *d);
/* One line per -m folder whose manifests had problems (not with --quiet). */
void manifests_summary(manifests *ms);
void manifests_free(manifests *ms);

/* profile.c: --profile, a CPU (or --event) profile instead of the events. */
int run_profile(session *s);

/* profile.c: --stacks - read the whole trace once into a profile that keeps
 * every event's stack; *out is then what run_events gives the renderer
 * (stack_source_fn/ctx), freed with stack_source_free. EXIT_CLEAN or
 * EXIT_FATAL (reported). */
typedef struct stack_source stack_source;
int stack_source_build(session *s, stack_source **out);
/* The renderer's stack callback (etw_json_options.stack); ctx: the source. */
size_t stack_source_fn(void *ctx, const etw_event *ev, const etw_json_frame **frames);
/* Count one event read (every event, selected or not, in read order):
 * the next call of stack_source_fn is about it. */
void stack_source_next(stack_source *src);
void stack_source_free(stack_source *src);

/* profile.c: 1 when ev is a kernel StackWalk event (the trace has stacks). */
int has_stacks(const etw_event *ev);
/* profile.c: --stats on a trace with stacks: the selected CPU samples by
 * module and function (their innermost frame), the top 15 of each, as text
 * lines or (json) one JSON object; reads the trace again from the start on
 * one thread. *text is malloc'd (free it). EXIT_CLEAN, or the failure
 * (reported). */
int cpu_summary(session *s, int json, char **text, size_t *len);
/* profile.c: the same summary without reading the trace again: a profile
 * on s->dec that the single-threaded scan feeds every event it read, in
 * order, right after resolving it (sc: its label's schema) and matching
 * the filter (sel: etw_filter_match's answer; ids: the label's pid and
 * tid when the label has them for sc, else NULL). cpu_feed_new and
 * cpu_feed_summary return EXIT_CLEAN or the failure (reported);
 * cpu_feed_add 0 when out of memory (not reported). */
typedef struct cpu_feed cpu_feed;
int cpu_feed_new(session *s, cpu_feed **out);
int cpu_feed_add(cpu_feed *f, const etw_event *ev, const etw_schema *sc, int sel, const uint32_t *ids);
int cpu_feed_summary(cpu_feed *f, int json, char **text, size_t *len);
void cpu_feed_free(cpu_feed *f);

/* profile.c: the profile options every run shares (symbol stores, diag). */
void profile_options_init(const session *s, etw_decoder *dec, etw_profile_options *po);

/* report.c: --report NAME, a report's tables instead of the events. */
int run_report(session *s);
/* perfetto.c: --format perfetto, the selected events as one Trace Event
 * Format JSON object (etw_perfetto.h), on the calling thread. */
int run_perfetto(session *s);

/* stats.c: --stats, a summary instead of the events. */
int run_stats(session *s);

/* tmfpdb.c: --tmf-from-pdb, to -o FILE or standard output. EXIT_CLEAN or
 * EXIT_FATAL (reported). */
int run_tmf_from_pdb(const options *o);

/* stats.c: --schemas, the schemas the selected events use, as JSON. */
int run_schemas(session *s);

/* progress.c */
typedef struct progress progress;
/* A progress line on stderr, or NULL when it is off (not a TTY, small
 * input, --no-progress). total_bytes: the size of all inputs. */
progress *progress_start(const options *o, etw_multi *m, unsigned long long total_bytes);
/* Called for every event read (file: its index in the multi); cheap: looks
 * at the clock every 1024 events. p may be NULL. */
void progress_tick(progress *p, unsigned long long events, size_t file, const etw_event *ev);
/* Clear the line and free. */
void progress_end(progress *p);

/* heap.c: on Linux with glibc, the heap in transparent huge pages and
 * freed memory kept (fewer page faults); in main before the inputs open. */
void heap_setup(void);

/* Ctrl-C and SIGPIPE: install handlers; stop_requested() is 1 after Ctrl-C. */
void signals_install(void);
int stop_requested(void);
/* Write all of buf to out. 0 on success; 1 when the reader of a pipe went
 * away (quietly: stop); -1 on another error (reported). */
int write_out(FILE *out, const void *buf, size_t len);
/* Flush: same results as write_out. */
int flush_out(FILE *out);
/* The output as write errors name it (NULL: standard output). */
void output_name_set(const char *name);

/* output.c: run a pipeline over the session's one file (the --file-order
 * pre-scan, the progress line); EXIT_FATAL when the pre-scan fails, else
 * EXIT_CLEAN with the run's status in *st. */
int pipeline_run_session(etw_pipeline *p, session *s, progress **pg, etw_status *st);

#endif
