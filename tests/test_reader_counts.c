/* test_reader_counts.c - exact event counts of every real trace in
 * tests/data through the file API, in merged (timestamp) order and in file
 * order.
 *
 * For each trace:
 *   - merged order: the exact count; the log-file header record comes first;
 *     raw timestamps never decrease after it; no diagnostic is reported and
 *     the stats agree with what was returned;
 *   - file order (etw_reader_options.file_order = 1): the same count, the
 *     same set of records (an order-independent digest of their positions
 *     and timestamps), and positions strictly increasing (buffer file
 *     offset, then record offset);
 *   - etw_reader_rewind() gives the same count and digest again.
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "etw_test.h"
#include "etwdecode/etw_reader.h"

typedef struct trace_count {
    const char *name;
    uint64_t events;
} trace_count;

static const trace_count k_traces[] = {
    {"ShutdownPerfDiagLogger.etl", 17078},
    {"net.4.5.2.x64.etl", 179474},
    {"HTTP_Server.etl", 2042},
    {"powershell.etl", 114},
    {"AMSITrace.etl", 21},
    {"SelfDescribingSingleEvent.etl", 22},
    {"BondEtwSample.etl", 13},
    {"gcevents.etl", 71},
    {"primitive-types.etl", 7},
    {"lxcore_kernel.etl", 4},
    {"smallEtlFile.etl", 2},
};

static int g_diags;

static void count_diag(void *ctx, const etw_diag *d) {
    (void)ctx;
    g_diags++;
    fprintf(stderr, "  diag %d at %llu: %s\n", (int)d->status,
            (unsigned long long)d->file_offset, d->message);
}

/* Order-independent digest of one record: where it is and when. */
static uint64_t mix(uint64_t x) {
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdull;
    x ^= x >> 33;
    x *= 0xc4ceb9fe1a85ec53ull;
    x ^= x >> 33;
    return x;
}

static uint64_t event_digest(const etw_event *ev) {
    return mix(ev->buffer_file_offset * 0x100000001b3ull ^ ev->record_offset ^
               mix((uint64_t)ev->raw_timestamp) ^ ((uint64_t)ev->user_data_len << 40));
}

typedef struct pass_result {
    etw_status end;        /* status that ended the loop */
    uint64_t events;
    uint64_t digest;       /* sum of event_digest over all events */
    uint64_t ts_backwards; /* merged order: raw timestamps that went back */
    uint64_t pos_backwards;/* file order: positions that did not increase */
    int header_first;
} pass_result;

static void run_pass(etw_reader *r, int file_order, uint64_t bound, pass_result *pr) {
    etw_event ev;
    etw_status s;
    int64_t last_ts = INT64_MIN;
    uint64_t last_bfo = 0;
    uint32_t last_ro = 0;
    memset(pr, 0, sizeof *pr);
    while ((s = etw_reader_next(r, &ev)) == ETW_OK) {
        if (pr->events == 0) {
            pr->header_first = ev.is_logfile_header && ev.buffer_file_offset == 0;
        } else if (ev.is_logfile_header) {
            pr->header_first = 0; /* a second header event */
        } else if (!file_order) {
            if (pr->events > 1 && ev.raw_timestamp < last_ts) {
                if (pr->ts_backwards < 5)
                    fprintf(stderr, "  timestamp back: %lld after %lld at %llu+%u\n",
                            (long long)ev.raw_timestamp, (long long)last_ts,
                            (unsigned long long)ev.buffer_file_offset, ev.record_offset);
                pr->ts_backwards++;
            }
            last_ts = ev.raw_timestamp;
        }
        if (file_order && pr->events > 0) {
            if (ev.buffer_file_offset < last_bfo ||
                (ev.buffer_file_offset == last_bfo && ev.record_offset <= last_ro))
                pr->pos_backwards++;
        }
        last_bfo = ev.buffer_file_offset;
        last_ro = ev.record_offset;
        pr->digest += event_digest(&ev);
        if (++pr->events > bound) break;
    }
    pr->end = s;
}

static void check_trace(const trace_count *t) {
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", ETW_TEST_DATA_DIR, t->name);
    const uint64_t bound = t->events * 10 + 10;

    pass_result merged, again, filed;
    etw_reader_options opt;
    memset(&opt, 0, sizeof opt);
    opt.on_diag = count_diag;
    g_diags = 0;

    etw_reader *r = NULL;
    etw_status s = etw_reader_open_file(&r, path, &opt);
    ETW_CHECK_INT(s, ETW_OK);
    if (s != ETW_OK) {
        fprintf(stderr, "  cannot open %s\n", path);
        return;
    }
    run_pass(r, 0, bound, &merged);
    ETW_CHECK_INT(merged.end, ETW_END);
    ETW_CHECK_INT(merged.events, t->events);
    ETW_CHECK(merged.header_first);
    ETW_CHECK_INT(merged.ts_backwards, 0);
    const etw_reader_stats *st = etw_reader_stats_get(r);
    ETW_CHECK_INT(st->events, t->events);
    ETW_CHECK_INT(st->problems, 0);
    ETW_CHECK_INT(st->buffers_skipped, 0);
    ETW_CHECK_INT(st->records_skipped, 0);
    uint64_t by_form = 0;
    for (int f = 0; f < ETW_FORM_COUNT_; f++) by_form += st->events_by_form[f];
    ETW_CHECK_INT(by_form, t->events);
    ETW_CHECK(st->first_timestamp <= st->last_timestamp);
    ETW_CHECK_INT(g_diags, 0);

    /* Rewind: the same events again. */
    ETW_CHECK_INT(etw_reader_rewind(r), ETW_OK);
    run_pass(r, 0, bound, &again);
    ETW_CHECK_INT(again.end, ETW_END);
    ETW_CHECK_INT(again.events, t->events);
    ETW_CHECK(again.digest == merged.digest);
    ETW_CHECK_INT(etw_reader_stats_get(r)->events, t->events);
    etw_reader_close(r);

    /* File order: the same set, positions increasing. */
    opt.file_order = 1;
    r = NULL;
    s = etw_reader_open_file(&r, path, &opt);
    ETW_CHECK_INT(s, ETW_OK);
    if (s != ETW_OK) return;
    run_pass(r, 1, bound, &filed);
    ETW_CHECK_INT(filed.end, ETW_END);
    ETW_CHECK_INT(filed.events, t->events);
    ETW_CHECK(filed.header_first);
    ETW_CHECK_INT(filed.pos_backwards, 0);
    ETW_CHECK(filed.digest == merged.digest);
    ETW_CHECK_INT(g_diags, 0);
    etw_reader_close(r);

    if (merged.events != t->events || filed.events != t->events)
        fprintf(stderr, "  %s: merged %llu, file order %llu, expected %llu\n", t->name,
                (unsigned long long)merged.events, (unsigned long long)filed.events,
                (unsigned long long)t->events);
}

static void test_exact_counts(void) {
    for (size_t i = 0; i < sizeof k_traces / sizeof k_traces[0]; i++) check_trace(&k_traces[i]);
}

int main(void) {
    ETW_RUN(test_exact_counts);
    return ETW_TEST_DONE();
}
