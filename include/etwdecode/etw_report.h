/* etw_report.h - the standard questions about a trace, answered as tables:
 * which processes ran (processes), what the .NET garbage collector did
 * (gc), which processes and files used the disk (disk) and the file system
 * (files), who talked to whom over TCP and UDP (network), where the CPU
 * went (cpu). docs/reports.md lists every table's columns, the events each
 * is computed from and the rules (and where they come from: PerfView's
 * GCStats, Processes and Disk I/O views, TraceEvent).
 *
 * A report is a single-threaded object fed the decoded events of a trace,
 * in order, one by one:
 *
 *   etw_report_options o = {0};
 *   o.decoder = dec;  o.perf_freq = logfile->perf_freq;  o.origin = start;
 *   etw_report_new(&r, ETW_REPORT_GC, &o);
 *   for each event ev (s: its schema from etw_decoder_resolve, or NULL):
 *       selected ? etw_report_add(r, dec, &ev, s) : etw_report_skip(r, dec, &ev, s);
 *   etw_report_write_file(r, ETW_REPORT_TEXT, stdout);
 *   etw_report_free(r);
 *
 * Payload fields are read through the decoder (etw_decode.h), each field
 * found by name once per schema; nothing is allocated per event except
 * when a table gains a row (a new process, GC, file, connection), and
 * every table is bounded (ETW_REPORT_MAX_ROWS rows by default: past it new
 * keys are dropped and counted, and the output says how many;
 * docs/limits.md).
 */
#ifndef ETWDECODE_ETW_REPORT_H
#define ETWDECODE_ETW_REPORT_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "etw_decoder.h"
#include "etw_event.h"
#include "etw_schema.h"
#include "etw_status.h"
#include "etw_types.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum etw_report_kind {
    ETW_REPORT_PROCESSES = 0, /* kernel Process / Microsoft-Windows-Kernel-Process events */
    ETW_REPORT_GC = 1,        /* Microsoft-Windows-DotNETRuntime GC events, per GC */
    ETW_REPORT_DISK = 2,      /* kernel DiskIo Read/Write by process and by file */
    ETW_REPORT_FILES = 3,     /* kernel FileIo operations by file and process */
    ETW_REPORT_NETWORK = 4,   /* kernel TcpIp/UdpIp by process and remote address */
    ETW_REPORT_CPU = 5,       /* CPU samples by process, module and function (etw_profile.h) */
    ETW_REPORT_KIND_COUNT_
} etw_report_kind;

/* "processes", "gc", "disk", "files", "network", "cpu" -> kind;
 * ETW_E_INVALID_ARG for another name. */
etw_status etw_report_kind_parse(const char *name, etw_report_kind *out);
/* The name of a kind ("?" for an unknown value). */
const char *etw_report_kind_name(etw_report_kind kind);

typedef enum etw_report_format {
    ETW_REPORT_TEXT = 0, /* aligned tables with a title each */
    ETW_REPORT_JSON = 1, /* one JSON object: {"report":NAME,"TABLE":[{row},...],...} */
    ETW_REPORT_CSV = 2   /* the main table only, with a header line (RFC 4180, CRLF) */
} etw_report_format;

/* Default bound of every table of a report (rows: processes, GCs, files,
 * connections, (process, module) pairs...). */
#ifndef ETW_REPORT_MAX_ROWS
#define ETW_REPORT_MAX_ROWS 65536u
#endif

typedef struct etw_report_options {
    const etw_allocator *allocator; /* NULL: malloc/free */
    /* The decoder the events are resolved with. Required for the cpu report
     * (its profile reads stacks, images and symbols through it); the others
     * use the decoder given to each etw_report_add. */
    etw_decoder *decoder;
    /* QPC frequency in Hz (the log-file header's PerfFreq): DiskIo times are
     * in its ticks. 0: 10 MHz. */
    int64_t perf_freq;
    /* FILETIME (UTC) that times are counted from in the output ("0 s"): the
     * trace start. 0: the first event added. */
    int64_t origin;
    /* Rows each table keeps at most; 0: ETW_REPORT_MAX_ROWS. */
    uint32_t max_rows;
    /* Rows per table in the output of the cpu report's per-process module
     * and function tables (the top N of each process); 0: 10. */
    uint32_t top;
    /* cpu: local symbol stores (etw_profile_options.symbol_paths). */
    const char *const *symbol_paths;
    size_t nsymbol_paths;
    /* cpu: problems of the profile (a PDB that does not open); NULL: counted. */
    etw_diag_fn on_diag;
    void *diag_ctx;
} etw_report_options;

typedef struct etw_report etw_report;

/* ETW_OK; ETW_E_INVALID_ARG (no decoder for cpu, unknown kind); ETW_E_NOMEM. */
etw_status etw_report_new(etw_report **out, etw_report_kind kind, const etw_report_options *opt);
void etw_report_free(etw_report *r);

/* A selected event, in trace order. s: its schema (NULL: none). Events of
 * no interest to the report cost a GUID compare. ETW_OK, or ETW_E_NOMEM. */
etw_status etw_report_add(etw_report *r, etw_decoder *d, const etw_event *ev, const etw_schema *s);
/* An event the caller's selection leaves out: the cpu report still reads
 * it (stacks, images, JIT methods come in events nobody selects); the
 * others ignore it. */
etw_status etw_report_skip(etw_report *r, etw_decoder *d, const etw_event *ev, const etw_schema *s);

/* Writes the output in pieces; return ETW_OK to go on (anything else stops
 * the write, which returns it). */
typedef etw_status (*etw_report_write_fn)(void *ctx, const char *data, size_t len);

/* The report (the first write ends the input: no etw_report_add after it;
 * writing again gives the same output). ETW_E_NOMEM, or the callback's
 * status. */
etw_status etw_report_write(etw_report *r, etw_report_format fmt, etw_report_write_fn fn, void *ctx);
/* The same to a FILE (ETW_E_IO on a write error). */
etw_status etw_report_write_file(etw_report *r, etw_report_format fmt, FILE *out);

typedef struct etw_report_stats {
    uint64_t events;      /* events given to etw_report_add */
    uint64_t used;        /* of those, the ones the report read */
    uint64_t dropped;     /* rows not kept: a table was at its bound */
    size_t memory_bytes;  /* what the tables hold (the cpu report: its profile too) */
} etw_report_stats;

void etw_report_stats_get(const etw_report *r, etw_report_stats *out);

#ifdef __cplusplus
}
#endif
#endif
