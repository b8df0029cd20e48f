/* test_filter.c - the selection predicates, on events built by hand and on
 * a real trace. Expected times were computed with Python's datetime
 * (independently of the parser under test). */
#include <stdlib.h>
#include <string.h>

#include "etw_test.h"
#include "etwdecode/etwdecode.h"
#include "filter/etw_glob.h"

static int glob(const char *p, const char *t) { return etw_glob_match(p, strlen(p), t, strlen(t)); }

static void test_glob(void) {
    ETW_CHECK(glob("Microsoft-Windows-Kernel-*", "Microsoft-Windows-Kernel-Process"));
    ETW_CHECK(glob("microsoft-windows-kernel-*", "Microsoft-Windows-Kernel-Process"));
    ETW_CHECK(!glob("Microsoft-Windows-Kernel-*", "Microsoft-Windows-Kernel"));
    ETW_CHECK(glob("Process/*", "Process/Start"));
    ETW_CHECK(glob("*/Start", "Process/Start"));
    ETW_CHECK(glob("GC/*", "GC/Start"));
    ETW_CHECK(!glob("GC/*", "GCHeap/Start"));
    ETW_CHECK(glob("*a*b*c", "xxaybzzc"));
    ETW_CHECK(!glob("*a*b*c", "xxaybzzcd"));
    ETW_CHECK(glob("?a", "ba"));
    ETW_CHECK(!glob("?a", "a"));
    ETW_CHECK(glob("*", ""));
    ETW_CHECK(!glob("a", ""));
    ETW_CHECK(glob("Process/Start", "process/start"));
    ETW_CHECK(!glob("Process/Start", "Process/Stop"));
    /* many stars against a long miss stays linear-ish and correct */
    char text[2001];
    memset(text, 'a', 2000);
    text[2000] = 0;
    ETW_CHECK(!glob("*a*a*a*a*a*a*a*a*b", text));
}

static void test_time_parse(void) {
    int64_t t;
    int rel;
    ETW_CHECK_INT(etw_filter_parse_time("2021-09-09T12:59:35.7912345Z", &t, &rel), ETW_OK);
    ETW_CHECK_INT(t, 132756659757912345LL);
    ETW_CHECK_INT(rel, 0);
    /* +02:00: two hours earlier in UTC */
    ETW_CHECK_INT(etw_filter_parse_time("2021-09-09T12:59:35+02:00", &t, &rel), ETW_OK);
    ETW_CHECK_INT(t, 132756587750000000LL);
    ETW_CHECK_INT(etw_filter_parse_time("2000-02-29T00:00:00Z", &t, &rel), ETW_OK);
    ETW_CHECK_INT(t, 125962560000000000LL);
    ETW_CHECK_INT(etw_filter_parse_time("2001-02-29T00:00:00Z", &t, &rel), ETW_E_INVALID_ARG);
    ETW_CHECK_INT(etw_filter_parse_time("2021-09-09T12:59:35", &t, &rel), ETW_E_INVALID_ARG);
    ETW_CHECK_INT(etw_filter_parse_time("2021-13-09T12:59:35Z", &t, &rel), ETW_E_INVALID_ARG);
    ETW_CHECK_INT(etw_filter_parse_time("12.5", &t, &rel), ETW_OK);
    ETW_CHECK_INT(t, 125000000);
    ETW_CHECK_INT(rel, 1);
    ETW_CHECK_INT(etw_filter_parse_time("0.0000001", &t, &rel), ETW_OK);
    ETW_CHECK_INT(t, 1);
    ETW_CHECK_INT(etw_filter_parse_time("", &t, &rel), ETW_E_INVALID_ARG);
    ETW_CHECK_INT(etw_filter_parse_time("1e3", &t, &rel), ETW_E_INVALID_ARG);
    ETW_CHECK_INT(etw_filter_parse_time("99999999999999999999", &t, &rel), ETW_E_INVALID_ARG);
}

/* The other forms: a space for the T (zone optional: UTC), a date alone,
 * durations with units. Expected FILETIMEs from Python's datetime:
 * (datetime(2020,7,29,0,7,3,tzinfo=utc) - datetime(1601,1,1,tzinfo=utc))
 * // timedelta(microseconds=1) * 10 = 132404548230000000. */
static void test_time_forms(void) {
    int64_t t;
    int rel;
    ETW_CHECK_INT(etw_filter_parse_time("2020-07-29 00:07:03", &t, &rel), ETW_OK);
    ETW_CHECK_INT(t, 132404548230000000LL);
    ETW_CHECK_INT(rel, 0);
    ETW_CHECK_INT(etw_filter_parse_time("2020-07-29 00:07:03.25", &t, &rel), ETW_OK);
    ETW_CHECK_INT(t, 132404548232500000LL);
    ETW_CHECK_INT(etw_filter_parse_time("2020-07-29 00:07:03Z", &t, &rel), ETW_OK);
    ETW_CHECK_INT(t, 132404548230000000LL);
    /* 02:07:03+02:00 is 00:07:03 UTC; with a space before the zone too */
    ETW_CHECK_INT(etw_filter_parse_time("2020-07-29 02:07:03+02:00", &t, &rel), ETW_OK);
    ETW_CHECK_INT(t, 132404548230000000LL);
    ETW_CHECK_INT(etw_filter_parse_time("2020-07-29 02:07:03 +02:00", &t, &rel), ETW_OK);
    ETW_CHECK_INT(t, 132404548230000000LL);
    /* a date alone: midnight UTC, 7 min 3 s (423 s) before the above */
    ETW_CHECK_INT(etw_filter_parse_time("2020-07-29", &t, &rel), ETW_OK);
    ETW_CHECK_INT(t, 132404548230000000LL - 423LL * 10000000LL);
    ETW_CHECK_INT(rel, 0);
    ETW_CHECK_INT(etw_filter_parse_time("2020-07-29 ", &t, &rel), ETW_E_INVALID_ARG);
    ETW_CHECK_INT(etw_filter_parse_time("2020-07-29 00:07", &t, &rel), ETW_E_INVALID_ARG);
    ETW_CHECK_INT(etw_filter_parse_time("2020-07-29 00:07:03 ", &t, &rel), ETW_E_INVALID_ARG);
    ETW_CHECK_INT(etw_filter_parse_time("2020-07-29T00:07:03", &t, &rel), ETW_E_INVALID_ARG);
    ETW_CHECK_INT(etw_filter_parse_time("2020-02-30", &t, &rel), ETW_E_INVALID_ARG);
    /* durations: 100 ns ticks */
    static const struct {
        const char *text;
        int64_t ticks;
    } d[] = {{"3s", 30000000},    {"+3s", 30000000},     {"250ms", 2500000}, {"1.5s", 15000000},
             {"2m", 1200000000},  {"100us", 1000},       {"1h", 36000000000LL}, {"0.5ms", 5000},
             {"250ns", 2},        {"1.25m", 750000000},  {"+0.5", 5000000},   {".5s", 5000000}};
    for (size_t i = 0; i < sizeof d / sizeof d[0]; i++) {
        ETW_CHECK_INT(etw_filter_parse_time(d[i].text, &t, &rel), ETW_OK);
        ETW_CHECK_INT(t, d[i].ticks);
        ETW_CHECK_INT(rel, 1);
    }
    static const char *bad[] = {"3x", "3 s", "s", "ms", "3S", "-3s", "3s5", "1..5s", "+", "3sec", "3.s.",
                                "99999999999999999ns", "999999999999h"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        ETW_CHECK_INT(etw_filter_parse_time(bad[i], &t, &rel), ETW_E_INVALID_ARG);
    /* the bound: 10^11 s in any unit */
    ETW_CHECK_INT(etw_filter_parse_time("100000000000s", &t, &rel), ETW_OK);
    ETW_CHECK_INT(etw_filter_parse_time("100000000001s", &t, &rel), ETW_E_INVALID_ARG);
    ETW_CHECK_INT(etw_filter_parse_time("1666666667m", &t, &rel), ETW_E_INVALID_ARG);
}

static etw_event mk(uint16_t id, uint8_t level, uint64_t kw, uint32_t pid, uint32_t tid, int64_t ts) {
    etw_event ev;
    memset(&ev, 0, sizeof ev);
    ev.form = ETW_FORM_EVENT_HEADER;
    ev.provider.data1 = 0x12345678;
    ev.id = id;
    ev.level = level;
    ev.keywords = kw;
    ev.pid = pid;
    ev.tid = tid;
    ev.timestamp = ts;
    return ev;
}

static etw_filter *filter(const char *key, const char *value) {
    etw_filter *f;
    if (etw_filter_new(&f, NULL) != ETW_OK) abort();
    if (key) ETW_CHECK_INT(etw_filter_add(f, etw_filter_key_from_name(key), value, NULL), ETW_OK);
    return f;
}

static void test_header_predicates(void) {
    etw_event a = mk(1, 4, 0x10, 100, 7, 1000), b = mk(2, 2, 0x3, 200, 8, 2000),
              c = mk(15, 5, 0, 300, 9, 3000);
    etw_filter *f = filter(NULL, NULL);
    ETW_CHECK(etw_filter_is_empty(f));
    ETW_CHECK_INT(etw_filter_match(f, NULL, &a, NULL), 1);
    etw_filter_free(f);

    f = filter("id", "1,10-20");
    ETW_CHECK(!etw_filter_is_empty(f));
    ETW_CHECK_INT(etw_filter_match(f, NULL, &a, NULL), 1);
    ETW_CHECK_INT(etw_filter_match(f, NULL, &b, NULL), 0);
    ETW_CHECK_INT(etw_filter_match(f, NULL, &c, NULL), 1);
    etw_filter_free(f);

    f = filter("id", "!2");
    ETW_CHECK_INT(etw_filter_match(f, NULL, &a, NULL), 1);
    ETW_CHECK_INT(etw_filter_match(f, NULL, &b, NULL), 0);
    etw_filter_free(f);

    f = filter("level", "3");
    ETW_CHECK_INT(etw_filter_match(f, NULL, &a, NULL), 0);
    ETW_CHECK_INT(etw_filter_match(f, NULL, &b, NULL), 1);
    etw_filter_free(f);

    f = filter("keywords", "0x2");
    ETW_CHECK_INT(etw_filter_match(f, NULL, &a, NULL), 0);
    ETW_CHECK_INT(etw_filter_match(f, NULL, &b, NULL), 1);
    ETW_CHECK_INT(etw_filter_match(f, NULL, &c, NULL), 0);
    etw_filter_free(f);

    /* two pids OR'd, AND'd with a tid exclusion */
    f = filter("pid", "100");
    ETW_CHECK_INT(etw_filter_add(f, ETW_FILTER_PID, "300", NULL), ETW_OK);
    ETW_CHECK_INT(etw_filter_add(f, ETW_FILTER_TID, "!9", NULL), ETW_OK);
    ETW_CHECK_INT(etw_filter_match(f, NULL, &a, NULL), 1);
    ETW_CHECK_INT(etw_filter_match(f, NULL, &b, NULL), 0);
    ETW_CHECK_INT(etw_filter_match(f, NULL, &c, NULL), 0);
    etw_filter_free(f);

    /* relative time: origin is the first event asked about (a, at 1000) */
    f = filter("since", "0.0001"); /* 1000 ticks */
    ETW_CHECK_INT(etw_filter_add(f, ETW_FILTER_UNTIL, "0.0002", NULL), ETW_OK);
    ETW_CHECK_INT(etw_filter_match(f, NULL, &a, NULL), 0);
    ETW_CHECK_INT(etw_filter_match(f, NULL, &b, NULL), 1);
    ETW_CHECK_INT(etw_filter_match(f, NULL, &c, NULL), 0); /* until is exclusive */
    etw_filter_free(f);

    f = filter("provider", "{12345678-0000-0000-0000-000000000000}");
    ETW_CHECK_INT(etw_filter_match(f, NULL, &a, NULL), 1);
    a.provider.data1 = 1;
    ETW_CHECK_INT(etw_filter_match(f, NULL, &a, NULL), 0);
    ETW_CHECK_INT(etw_filter_match_header(f, &a), 0);
    etw_filter_free(f);

    const char *why = NULL;
    f = filter(NULL, NULL);
    ETW_CHECK_INT(etw_filter_add(f, ETW_FILTER_ID, "1,x", &why), ETW_E_INVALID_ARG);
    ETW_CHECK(why && *why);
    ETW_CHECK_INT(etw_filter_add(f, ETW_FILTER_ID, "70000", NULL), ETW_E_INVALID_ARG);
    ETW_CHECK_INT(etw_filter_add(f, ETW_FILTER_ID, "5-3", NULL), ETW_E_INVALID_ARG);
    ETW_CHECK_INT(etw_filter_add(f, ETW_FILTER_LEVEL, "!3", NULL), ETW_E_INVALID_ARG);
    ETW_CHECK_INT(etw_filter_add(f, ETW_FILTER_LEVEL, "256", NULL), ETW_E_INVALID_ARG);
    ETW_CHECK_INT(etw_filter_add(f, ETW_FILTER_SINCE, "yesterday", NULL), ETW_E_INVALID_ARG);
    ETW_CHECK_INT(etw_filter_add(f, ETW_FILTER_EVENT, "", NULL), ETW_E_INVALID_ARG);
    /* WHERE: FIELD OP VALUE; < > <= >= take numbers */
    ETW_CHECK_INT(etw_filter_add(f, ETW_FILTER_WHERE, "Size", NULL), ETW_E_INVALID_ARG);
    ETW_CHECK_INT(etw_filter_add(f, ETW_FILTER_WHERE, "=5", NULL), ETW_E_INVALID_ARG);
    ETW_CHECK_INT(etw_filter_add(f, ETW_FILTER_WHERE, "Size!5", NULL), ETW_E_INVALID_ARG);
    ETW_CHECK_INT(etw_filter_add(f, ETW_FILTER_WHERE, "Name<abc", NULL), ETW_E_INVALID_ARG);
    {
        etw_filter *w = filter(NULL, NULL);
        ETW_CHECK_INT(etw_filter_add(w, ETW_FILTER_WHERE, "Size >= 0x10", NULL), ETW_OK);
        ETW_CHECK_INT(etw_filter_add(w, ETW_FILTER_WHERE, "Delta<-1.5", NULL), ETW_OK);
        ETW_CHECK_INT(etw_filter_add(w, ETW_FILTER_WHERE, "Name=power*", NULL), ETW_OK);
        ETW_CHECK(!etw_filter_is_empty(w));
        etw_filter_free(w);
    }
    ETW_CHECK_INT(etw_filter_add(f, ETW_FILTER_PROCESS, "", NULL), ETW_E_INVALID_ARG);
    ETW_CHECK_INT(etw_filter_key_from_name("where"), ETW_FILTER_WHERE);
    ETW_CHECK_INT(etw_filter_key_from_name("process"), ETW_FILTER_PROCESS);
    ETW_CHECK(etw_filter_is_empty(f)); /* nothing half-added */
    ETW_CHECK_INT(etw_filter_key_from_name("bogus"), 0);
    etw_filter_free(f);
}

/* Names and errors on a real trace: HTTP_Server.etl has manifest events of
 * Microsoft-Windows-HttpService that no schema describes without
 * HTTP_Server.man, and the log-file header. */
static void test_names_on_trace(void) {
    etw_reader *r;
    ETW_CHECK_INT(etw_reader_open_file(&r, ETW_TEST_DATA_DIR "/HTTP_Server.etl", NULL), ETW_OK);
    if (!r) return;
    etw_decoder *d;
    ETW_CHECK_INT(etw_decoder_new(&d, NULL), ETW_OK);
    etw_filter *hdr = filter("event", "EventTrace"), *err = filter("errors", ""),
               *ok = filter("errors", "!"), *kern = filter("provider", "windows KERNEL");
    etw_event ev;
    unsigned long long n = 0, nhdr = 0, nerr = 0, nok = 0, nkern = 0;
    while (etw_reader_next(r, &ev) == ETW_OK) {
        n++;
        etw_label l;
        nhdr += etw_filter_match(hdr, d, &ev, &l) == 1;
        if (ev.is_logfile_header) {
            ETW_CHECK(l.provider_len == 14 && !memcmp(l.provider, "Windows Kernel", 14));
            ETW_CHECK(l.event_len == 10 && !memcmp(l.event, "EventTrace", 10));
        }
        nerr += etw_filter_match(err, d, &ev, NULL) == 1;
        nok += etw_filter_match(ok, d, &ev, NULL) == 1;
        nkern += etw_filter_match(kern, d, &ev, NULL) == 1;
    }
    ETW_CHECK_INT(n, 2042);
    ETW_CHECK_INT(nhdr, 1);
    ETW_CHECK_INT(nerr + nok, n);
    ETW_CHECK(nerr > 0);
    ETW_CHECK(nkern >= 1);
    etw_filter_free(hdr);
    etw_filter_free(err);
    etw_filter_free(ok);
    etw_filter_free(kern);
    etw_decoder_free(d);
    etw_reader_close(r);
}

/* The display and the symbolic names of a manifest's events select the
 * same events: gcevents.etl with ClrEtwAll.man, where task
 * name="GarbageCollection" shows as "GC" and opcode name="GCSuspendEEBegin"
 * as "SuspendEEStart" (event 9 version 1, symbol "GCSuspendEEBegin_V1"). */
static void test_symbolic_names(void) {
    etw_reader *r;
    ETW_CHECK_INT(etw_reader_open_file(&r, ETW_TEST_DATA_DIR "/gcevents.etl", NULL), ETW_OK);
    if (!r) return;
    etw_decoder *d;
    ETW_CHECK_INT(etw_decoder_new(&d, NULL), ETW_OK);
    ETW_CHECK_INT(etw_decoder_add_manifest(d, ETW_TEST_DATA_DIR "/ClrEtwAll.man", NULL), ETW_OK);
    enum { NF = 10 };
    static const char *const vals[NF] = {
        "GC/*",                               /* display */
        "GarbageCollection/*",                /* TaskSymbol/OpcodeSymbol */
        "GarbageCollection",                  /* the task symbol alone */
        "GC/SuspendEEStart",                  /* display, whole */
        "garbagecollection/gcsuspendeebegin", /* symbolic, whole, any case */
        "GCSuspendEEBegin_V1",                /* the event symbol */
        "GarbageCollection/Start",            /* win:Start's symbol is "Start" */
        "GarbageCollection/win:Start",        /* ... not "win:Start" */
        "!GarbageCollection/*",               /* exclusion */
        "GC",                                 /* a display task alone is not a name */
    };
    etw_filter *f[NF];
    for (int i = 0; i < NF; i++) f[i] = filter("event", vals[i]);
    /* tracking: two values that match nothing, one that does */
    etw_filter *t = filter("event", "GarbageColection/*");
    ETW_CHECK_INT(etw_filter_add(t, ETW_FILTER_PROVIDER, "Microsoft-Windows-DotNETRuntim", NULL), ETW_OK);
    ETW_CHECK_INT(etw_filter_add(t, ETW_FILTER_EVENT, "GCSuspendEEBegin_V1", NULL), ETW_OK);
    ETW_CHECK_INT(etw_filter_add(t, ETW_FILTER_PROVIDER, "{e13c0d23-ccbc-4e12-931b-d9cc2eee27e4}", NULL), ETW_OK);
    ETW_CHECK_INT(etw_filter_track_names(t), ETW_OK);
    etw_filter_unmatched_info u;
    ETW_CHECK_INT(etw_filter_unmatched(f[0], 0, &u), 0); /* not tracking */
    unsigned long long n = 0, hits[NF] = {0};
    etw_event ev;
    while (etw_reader_next(r, &ev) == ETW_OK) {
        n++;
        for (int i = 0; i < NF; i++) hits[i] += etw_filter_match(f[i], d, &ev, NULL) == 1;
        ETW_CHECK(etw_filter_match(t, d, &ev, NULL) >= 0);
    }
    ETW_CHECK_INT(hits[0], 68);
    ETW_CHECK_INT(hits[1], 68);
    ETW_CHECK_INT(hits[2], 68);
    ETW_CHECK_INT(hits[3], 2);
    ETW_CHECK_INT(hits[4], 2);
    ETW_CHECK_INT(hits[5], 2);
    ETW_CHECK_INT(hits[6], 2); /* GC/Start, version 1 */
    ETW_CHECK_INT(hits[7], 0);
    ETW_CHECK_INT(hits[8], n - 68);
    ETW_CHECK_INT(hits[9], 0);

    ETW_CHECK_INT(etw_filter_unmatched(t, 0, &u), 1);
    ETW_CHECK_INT(u.key, ETW_FILTER_EVENT);
    ETW_CHECK_INT(u.exclude, 0);
    ETW_CHECK_STR(u.value, "GarbageColection/*");
    ETW_CHECK_INT(u.nnear, 5);
    for (size_t k = 0; k < u.nnear; k++) ETW_CHECK(!strncmp(u.near[k], "GC/", 3)); /* shares "G" */
    ETW_CHECK_INT(etw_filter_unmatched(t, 1, &u), 1);
    ETW_CHECK_INT(u.key, ETW_FILTER_PROVIDER);
    ETW_CHECK_STR(u.value, "Microsoft-Windows-DotNETRuntim");
    ETW_CHECK(u.nnear >= 1);
    if (u.nnear) ETW_CHECK_STR(u.near[0], "Microsoft-Windows-DotNETRuntime"); /* holds the value */
    ETW_CHECK_INT(etw_filter_unmatched(t, 2, &u), 0);

    /* merging: what either matched is matched */
    etw_filter *t2 = filter("event", "GarbageColection/*");
    ETW_CHECK_INT(etw_filter_add(t2, ETW_FILTER_PROVIDER, "Microsoft-Windows-DotNETRuntim", NULL), ETW_OK);
    ETW_CHECK_INT(etw_filter_add(t2, ETW_FILTER_EVENT, "GCSuspendEEBegin_V1", NULL), ETW_OK);
    ETW_CHECK_INT(etw_filter_add(t2, ETW_FILTER_PROVIDER, "{e13c0d23-ccbc-4e12-931b-d9cc2eee27e4}", NULL), ETW_OK);
    ETW_CHECK_INT(etw_filter_track_names(t2), ETW_OK);
    ETW_CHECK_INT(etw_filter_unmatched(t2, 2, &u), 1); /* nothing seen: all three names */
    ETW_CHECK_INT(u.nnear, 0);
    ETW_CHECK_INT(etw_filter_merge_names(t2, t), ETW_OK);
    ETW_CHECK_INT(etw_filter_unmatched(t2, 2, &u), 0);
    ETW_CHECK_INT(etw_filter_unmatched(t2, 0, &u), 1);
    ETW_CHECK_INT(u.nnear, 5);
    ETW_CHECK_INT(etw_filter_merge_names(t2, f[0]), ETW_E_INVALID_ARG); /* built otherwise */

    for (int i = 0; i < NF; i++) etw_filter_free(f[i]);
    etw_filter_free(t);
    etw_filter_free(t2);
    etw_decoder_free(d);
    etw_reader_close(r);
}

int main(void) {
    ETW_RUN(test_glob);
    ETW_RUN(test_time_parse);
    ETW_RUN(test_time_forms);
    ETW_RUN(test_header_predicates);
    ETW_RUN(test_names_on_trace);
    ETW_RUN(test_symbolic_names);
    return ETW_TEST_DONE();
}
