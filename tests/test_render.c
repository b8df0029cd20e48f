/* test_render.c - the library layers behind etwdump's investigation options,
 * called as an embedder calls them: two real traces merged (etw_multi), the
 * CSV and text renderings (etw_render), the JSON read-back they rest on
 * (etw_jscan), and the summaries (etw_stats, etw_schemas). Expected values
 * come from the traces' own records (counts the reader tests establish:
 * 7 events in primitive-types.etl, 71 in gcevents.etl), from PerfView's
 * baseline (primitive-types.baseline.txt: the first PrimitiveTypesTest event
 * has string_type=Mercury, int32_type=-102), or are worked out by hand in
 * the comments. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "etw_test.h"
#include "etw_test_builder.h"
#include "etwdecode/etwdecode.h"
#include "format/etw_jscan.h"

#define PT ETW_TEST_DATA_DIR "/primitive-types.etl"
#define GC ETW_TEST_DATA_DIR "/gcevents.etl"

/* Renderer output is not NUL-terminated: a copy that is, for strstr. */
static char zbuf[1 << 16];
static const char *z(const char *s, size_t n) {
    if (n >= sizeof zbuf) n = sizeof zbuf - 1;
    memcpy(zbuf, s, n);
    zbuf[n] = 0;
    return zbuf;
}

static void test_multi_merge(void) {
    etw_multi *m;
    ETW_CHECK_INT(etw_multi_new(&m, NULL), ETW_OK);
    ETW_CHECK_INT(etw_multi_add_file(m, PT), ETW_OK);
    ETW_CHECK_INT(etw_multi_add_file(m, ETW_TEST_DATA_DIR "/no-such.etl"), ETW_E_IO);
    ETW_CHECK_INT(etw_multi_add_file(m, GC), ETW_OK);
    ETW_CHECK_INT(etw_multi_count(m), 2);
    ETW_CHECK_STR(etw_multi_name(m, 1), GC);
    etw_event ev;
    size_t file, n[2] = {0, 0}, headers = 0;
    int64_t last = INT64_MIN;
    int ordered = 1, first_is_header[2] = {0, 0};
    while (etw_multi_next(m, &ev, &file) == ETW_OK) {
        if (file > 1) break;
        if (n[file] == 0) first_is_header[file] = ev.is_logfile_header;
        n[file]++;
        headers += ev.is_logfile_header;
        if (ev.timestamp < last) ordered = 0;
        last = ev.timestamp;
        ETW_CHECK(etw_multi_current(m) == file);
    }
    ETW_CHECK_INT(n[0], 7);
    ETW_CHECK_INT(n[1], 71);
    ETW_CHECK_INT(headers, 2);
    ETW_CHECK(ordered);
    ETW_CHECK(first_is_header[0] && first_is_header[1]);
    /* adding after the first event is refused; rewind reads it all again */
    ETW_CHECK_INT(etw_multi_add_file(m, PT), ETW_E_INVALID_ARG);
    ETW_CHECK_INT(etw_multi_rewind(m), ETW_OK);
    size_t again = 0;
    while (etw_multi_next(m, &ev, NULL) == ETW_OK) again++;
    ETW_CHECK_INT(again, 78);
    /* without the copy: the same events, in the same order, from both
     * files, mixed with copying calls; NULL at the end */
    ETW_CHECK_INT(etw_multi_rewind(m), ETW_OK);
    const etw_event *e = NULL;
    size_t refs = 0, same = 0, f2 = 0;
    etw_multi *m2;
    ETW_CHECK_INT(etw_multi_new(&m2, NULL), ETW_OK);
    ETW_CHECK_INT(etw_multi_add_file(m2, PT), ETW_OK);
    ETW_CHECK_INT(etw_multi_add_file(m2, GC), ETW_OK);
    for (;;) {
        etw_status a = refs % 3 == 2 ? etw_multi_next(m, &ev, &file) : etw_multi_next_ref(m, &e, &file);
        if (refs % 3 == 2 && a == ETW_OK) e = &ev;
        etw_event ev2;
        etw_status b = etw_multi_next(m2, &ev2, &f2);
        ETW_CHECK_INT(a, b);
        if (a != ETW_OK) break;
        refs++;
        same += e && file == f2 && e->timestamp == ev2.timestamp && e->user_data_len == ev2.user_data_len &&
                (!e->user_data_len || !memcmp(e->user_data, ev2.user_data, e->user_data_len));
    }
    ETW_CHECK_INT(refs, 78);
    ETW_CHECK_INT(same, 78);
    ETW_CHECK_INT(etw_multi_next_ref(m, &e, NULL), ETW_END);
    ETW_CHECK(e == NULL);
    ETW_CHECK_INT(etw_multi_next_ref(NULL, &e, NULL), ETW_E_INVALID_ARG);
    etw_multi_free(m2);
    etw_multi_free(m);
}

static void test_jscan(void) {
    etw_text t;
    etw_text_init(&t, NULL);
    /* "a\"b\\c\u00e9\ud83d\ude00\n": é is C3 A9, U+1F600 is F0 9F 98 80 */
    const char *js = "\"a\\\"b\\\\c\\u00e9\\ud83d\\ude00\\n\"";
    etw_jscan_unescape(&t, js, strlen(js));
    ETW_CHECK_INT(t.len, 12);
    ETW_CHECK(t.data && !memcmp(t.data, "a\"b\\c\xC3\xA9\xF0\x9F\x98\x80\n", 12));
    etw_text_clear(&t);
    /* an unpaired surrogate becomes U+FFFD (EF BF BD) */
    js = "\"\\ud800x\"";
    etw_jscan_unescape(&t, js, strlen(js));
    ETW_CHECK(t.len == 4 && !memcmp(t.data, "\xEF\xBF\xBDx", 4));
    etw_text_free(&t);
    const char *obj = "{\"a\":1,\"b\":{\"c\":[1,{\"d\":\"}\"}]},\"e\":\"x\\\"y\"}";
    size_t pos = 0;
    etw_jmember mb;
    const char *want[3][2] = {{"a", "1"}, {"b", "{\"c\":[1,{\"d\":\"}\"}]}"}, {"e", "\"x\\\"y\""}};
    int k = 0;
    while (etw_jscan_next_member(obj, strlen(obj), &pos, &mb) && k < 3) {
        ETW_CHECK(mb.key_len == strlen(want[k][0]) && !memcmp(mb.key, want[k][0], mb.key_len));
        ETW_CHECK(mb.value_len == strlen(want[k][1]) && !memcmp(mb.value, want[k][1], mb.value_len));
        k++;
    }
    ETW_CHECK_INT(k, 3);
    /* cut text ends the walk, never reads past the end */
    pos = 0;
    int members = 0;
    while (etw_jscan_next_member(obj, 12, &pos, &mb)) members++;
    ETW_CHECK(members <= 2);
}

/* The first PrimitiveTypesTest event through CSV and text. */
static void test_csv_and_text(void) {
    etw_reader *r;
    ETW_CHECK_INT(etw_reader_open_file(&r, PT, NULL), ETW_OK);
    if (!r) return;
    etw_decoder *d;
    ETW_CHECK_INT(etw_decoder_new(&d, NULL), ETW_OK);
    etw_render_options ro;
    memset(&ro, 0, sizeof ro);
    ro.format = ETW_RENDER_CSV;
    ro.json.decoder = d;
    etw_renderer *csv;
    ETW_CHECK_INT(etw_renderer_new(&csv, NULL, &ro), ETW_OK);
    ro.format = ETW_RENDER_TEXT;
    ro.time_origin = etw_reader_to_filetime(r, etw_reader_logfile(r)->raw_timestamp);
    etw_renderer *txt;
    ETW_CHECK_INT(etw_renderer_new(&txt, NULL, &ro), ETW_OK);
    etw_event ev;
    while (etw_reader_next(r, &ev) == ETW_OK) ETW_CHECK_INT(etw_renderer_learn(csv, r, &ev), ETW_OK);
    const char *s;
    size_t n;
    ETW_CHECK_INT(etw_renderer_header(csv, &s, &n), ETW_OK);
    /* 20 fixed columns (no file, message, raw), 21 log-file header fields,
     * 6 of the kernel's EventTrace/PartitionInfoExtension (decoded since the
     * EventTrace family has its layouts), 12 PrimitiveTypesTest fields */
    ETW_CHECK_INT(etw_renderer_columns(csv), 20 + 21 + 6 + 12);
    ETW_CHECK(n > 2 && !memcmp(s, "time,provider,provider_guid,event,", 34) && !memcmp(s + n - 2, "\r\n", 2));
    ETW_CHECK_INT(etw_reader_rewind(r), ETW_OK);
    int seen = 0;
    while (etw_reader_next(r, &ev) == ETW_OK) {
        ETW_CHECK_INT(etw_renderer_event(csv, r, &ev, &s, &n), ETW_OK);
        s = z(s, n);
        if (ev.is_logfile_header || seen || !strstr(s, "PrimitiveTypesTest")) {
            if (!ev.is_logfile_header && strstr(s, "no schema"))
                /* the error text has commas: quoted (RFC 4180) */
                ETW_CHECK(strstr(s, ",\"no schema: ") != NULL);
            continue;
        }
        seen = 1;
        ETW_CHECK(strstr(s, ",Mercury,false,M,-51,-102,51,102,") != NULL);
        ETW_CHECK(!memcmp(s + n - 2, "\r\n", 2));
        ETW_CHECK_INT(etw_renderer_event(txt, r, &ev, &s, &n), ETW_OK);
        s = z(s, n);
        /* 2.9423057 s after the session start (the baseline's 2,942.306 ms) */
        ETW_CHECK(n > 10 && !memcmp(s, "2.9423057 solar_system/PrimitiveTypesTest pid=", 46));
        ETW_CHECK(strstr(s, " string_type=Mercury ") && strstr(s, " int32_type=-102 "));
        ETW_CHECK(s[n - 1] == '\n');
    }
    ETW_CHECK(seen);
    etw_renderer_free(csv);
    etw_renderer_free(txt);
    etw_decoder_free(d);
    etw_reader_close(r);
}

static void test_summaries(void) {
    etw_reader *r;
    ETW_CHECK_INT(etw_reader_open_file(&r, PT, NULL), ETW_OK);
    if (!r) return;
    etw_decoder *d;
    ETW_CHECK_INT(etw_decoder_new(&d, NULL), ETW_OK);
    etw_stats *st;
    etw_schemas *sc;
    ETW_CHECK_INT(etw_stats_new(&st, NULL), ETW_OK);
    ETW_CHECK_INT(etw_schemas_new(&sc, NULL), ETW_OK);
    etw_event ev;
    static etw_label l;
    while (etw_reader_next(r, &ev) == ETW_OK) {
        ETW_CHECK_INT(etw_label_event(d, &ev, &l), ETW_OK);
        ETW_CHECK_INT(etw_stats_observe(st, d, &ev, &l), ETW_OK);
        ETW_CHECK_INT(etw_stats_add(st, &ev, &l), ETW_OK);
        ETW_CHECK_INT(etw_schemas_add(sc, &l), ETW_OK);
    }
    const etw_reader *rs[1] = {r};
    const char *s;
    size_t n;
    ETW_CHECK_INT(etw_stats_json(st, rs, NULL, 1, &s, &n), ETW_OK);
    s = z(s, n);
    ETW_CHECK(n > 0 && s[0] == '{' && s[n - 1] == '}');
    ETW_CHECK(strstr(s, "\"events\":7,") != NULL);
    ETW_CHECK(strstr(s, "{\"provider\":\"solar_system\",\"count\":5,") != NULL);
    ETW_CHECK(strstr(s, "\"session\":\"solar_system\"") != NULL);
    ETW_CHECK_INT(etw_schemas_json(sc, &s, &n), ETW_OK);
    s = z(s, n);
    ETW_CHECK(strstr(s, "\"event\":\"PrimitiveTypesTest\"") != NULL);
    ETW_CHECK(strstr(s, "\"source\":\"tracelogging\",\"pointer_size\":8,\"events\":5,") != NULL);
    ETW_CHECK(strstr(s, "{\"name\":\"boolean_type\",\"type\":\"UINT8\",\"out_type\":\"BOOLEAN\"}") != NULL);
    ETW_CHECK_STR(etw_outtype_name(ETW_OUTTYPE_HEXINT64), "HEXINT64");
    ETW_CHECK_STR(etw_outtype_name(999), "UNKNOWN");
    etw_stats_free(st);
    etw_schemas_free(sc);
    etw_decoder_free(d);
    etw_reader_close(r);
}

/* 1 when a and b give the same JSON summary of r's events; *json_b gets
 * b's, NUL-ended (malloc'd: the caller frees it). */
static int same_summary(etw_stats *a, etw_stats *b, etw_reader *r, char **json_b) {
    const etw_reader *rs[1] = {r};
    const char *s;
    size_t n, n2;
    *json_b = NULL;
    ETW_CHECK_INT(etw_stats_json(a, rs, NULL, 1, &s, &n), ETW_OK);
    char *want = malloc(n + 1);
    if (want) memcpy(want, s, n);
    ETW_CHECK_INT(etw_stats_json(b, rs, NULL, 1, &s, &n2), ETW_OK);
    int same = want && n == n2 && !memcmp(want, s, n);
    free(want);
    if ((*json_b = malloc(n2 + 1)) != NULL) {
        memcpy(*json_b, s, n2);
        (*json_b)[n2] = 0;
    }
    return same;
}

/* Counting split between two objects (alternate events) and merged, with
 * names and errors applied in order, is the one-pass summary. */
static void test_stats_merge(void) {
    etw_reader *r;
    ETW_CHECK_INT(etw_reader_open_file(&r, ETW_TEST_DATA_DIR "/net.4.5.2.x64.etl", NULL), ETW_OK);
    if (!r) return;
    etw_decoder *d;
    ETW_CHECK_INT(etw_decoder_new(&d, NULL), ETW_OK);
    etw_stats *one, *main_st, *part[2];
    ETW_CHECK_INT(etw_stats_new(&one, NULL), ETW_OK);
    ETW_CHECK_INT(etw_stats_new(&main_st, NULL), ETW_OK);
    ETW_CHECK_INT(etw_stats_new(&part[0], NULL), ETW_OK);
    ETW_CHECK_INT(etw_stats_new(&part[1], NULL), ETW_OK);
    etw_event ev;
    static etw_label l;
    uint64_t i = 0, errors = 0;
    while (etw_reader_next(r, &ev) == ETW_OK) {
        ETW_CHECK_INT(etw_label_event(d, &ev, &l), ETW_OK);
        ETW_CHECK_INT(etw_stats_observe(one, d, &ev, &l), ETW_OK);
        ETW_CHECK_INT(etw_stats_add(one, &ev, &l), ETW_OK);
        uint32_t pid = 0;
        const char *name;
        size_t len;
        etw_stats *p = part[(i++ / 7) % 2];
        ETW_CHECK_INT(etw_stats_process_name(p, d, &ev, &l, &pid, &name, &len), ETW_OK);
        if (name) ETW_CHECK_INT(etw_stats_name_process(main_st, pid, name, len), ETW_OK);
        ETW_CHECK_INT(etw_stats_count(p, &ev, &l), ETW_OK);
        if (etw_stats_has_error(&l)) {
            errors++;
            ETW_CHECK_INT(etw_stats_count_error(main_st, &l), ETW_OK);
        }
    }
    ETW_CHECK(errors > 0);
    ETW_CHECK_INT(etw_stats_merge(main_st, part[1]), ETW_OK);
    ETW_CHECK_INT(etw_stats_merge(main_st, part[0]), ETW_OK);
    char *json = NULL;
    ETW_CHECK(same_summary(one, main_st, r, &json));
    ETW_CHECK(json && strstr(json, "\"image\":\"Test.x64.exe\"") != NULL);
    free(json);
    for (int k = 0; k < 2; k++) etw_stats_free(part[k]);
    etw_stats_free(main_st);
    etw_stats_free(one);
    etw_decoder_free(d);
    etw_reader_close(r);
}

/* CSV's first pass remembers the kinds of event it learned from and skips
 * their schema lookup; once the decoder learns a provider's manifest the
 * same kind teaches again: its fields become columns. */
static void test_csv_learn_after_manifest(void) {
    static const etw_guid P = {0x0badf00d, 0x1234, 0x5678, {1, 2, 3, 4, 5, 6, 7, 8}};
    static const char xml[] =
        "<instrumentationManifest xmlns='http://schemas.microsoft.com/win/2004/08/events'"
        " xmlns:win='http://manifests.microsoft.com/win/2004/08/windows/events'>"
        "<instrumentation><events>"
        "<provider name='Late-Provider' guid='{0badf00d-1234-5678-0102-030405060708}' symbol='P'>"
        "<templates><template tid='T'><data name='LateField' inType='win:UInt32'/></template></templates>"
        "<events><event value='9' version='1' template='T' symbol='E9'/></events>"
        "</provider></events></instrumentation></instrumentationManifest>";
    etw_decoder_options dopt;
    memset(&dopt, 0, sizeof dopt);
    dopt.no_default_manifests = 1;
    etw_decoder *d = NULL;
    ETW_CHECK_INT(etw_decoder_new(&d, &dopt), ETW_OK);
    etw_render_options ro;
    memset(&ro, 0, sizeof ro);
    ro.format = ETW_RENDER_CSV;
    ro.json.decoder = d;
    etw_renderer *csv = NULL;
    ETW_CHECK_INT(etw_renderer_new(&csv, NULL, &ro), ETW_OK);
    etb_event e;
    etb_event_init(&e, 8);
    e.ev.provider = P;
    e.ev.id = 9;
    e.ev.version = 1;
    etb_u32(&e.payload, 77);
    const etw_event *ev = etb_event_get(&e);
    ETW_CHECK_INT(etw_renderer_learn(csv, NULL, ev), ETW_OK); /* no schema yet */
    ETW_CHECK_INT(etw_renderer_learn(csv, NULL, ev), ETW_OK); /* remembered */
    ETW_CHECK_INT(etw_decoder_add_manifest_xml(d, xml, strlen(xml), "late.man", NULL), ETW_OK);
    ETW_CHECK_INT(etw_renderer_learn(csv, NULL, ev), ETW_OK);
    const char *h;
    size_t hn;
    ETW_CHECK_INT(etw_renderer_header(csv, &h, &hn), ETW_OK);
    ETW_CHECK(hn > 12 && strcmp(z(h, hn) + hn - 12, ",LateField\r\n") == 0); /* the last column */
    etb_event_free(&e);
    etw_renderer_free(csv);
    etw_decoder_free(d);
}

/* etw_stats_take is etw_label_event, etw_stats_observe and etw_stats_add:
 * the same summary on traces of every kind (TraceLogging, manifest and
 * MetaData CLR events with stacks, kernel MOF with process names, an
 * EventSource manifest learned mid-trace), and the same label but for the
 * names of kinds met before. */
/* An independent tally of events by (provider, event) name, from the
 * labels etw_label_event gives: open addressing on the joined names. */
#define TALLY_SLOTS 8192
typedef struct name_tally {
    char *key[TALLY_SLOTS];
    uint64_t count[TALLY_SLOTS];
    size_t used;
} name_tally;

static void tally_add(name_tally *t, const etw_label *l) {
    char k[600];
    if (l->provider_len + l->event_len + 2 > sizeof k) return;
    memcpy(k, l->provider, l->provider_len);
    k[l->provider_len] = '\x01';
    memcpy(k + l->provider_len + 1, l->event, l->event_len);
    k[l->provider_len + 1 + l->event_len] = 0;
    uint32_t h = 2166136261u;
    for (const char *c = k; *c; c++) h = (h ^ (uint8_t)*c) * 16777619u;
    for (uint32_t i = h & (TALLY_SLOTS - 1);; i = (i + 1) & (TALLY_SLOTS - 1)) {
        if (!t->key[i]) {
            if (t->used + 1 >= TALLY_SLOTS) return;
            t->key[i] = malloc(strlen(k) + 1);
            if (!t->key[i]) return;
            strcpy(t->key[i], k);
            t->used++;
        }
        if (!strcmp(t->key[i], k)) {
            t->count[i]++;
            return;
        }
    }
}

/* Each tallied name is in json with its count (names that JSON escapes
 * are left out); frees the keys. Returns the names checked. */
static size_t tally_check(name_tally *t, const char *json) {
    size_t checked = 0;
    for (size_t i = 0; i < TALLY_SLOTS; i++) {
        char *k = t->key[i];
        if (!k) continue;
        char *sep = strchr(k, '\x01');
        int plain = sep != NULL;
        for (const char *c = k; *c && plain; c++)
            plain = c == sep || (*c != '"' && *c != '\\' && (uint8_t)*c >= 0x20);
        if (plain) {
            *sep = 0;
            char want[700];
            snprintf(want, sizeof want, "{\"provider\":\"%s\",\"event\":\"%s\",\"count\":%llu,", k, sep + 1,
                     (unsigned long long)t->count[i]);
            ETW_CHECK(strstr(json, want) != NULL);
            if (!strstr(json, want)) fprintf(stderr, "not in the summary: %s\n", want);
            checked++;
        }
        free(k);
        t->key[i] = NULL;
        t->count[i] = 0;
    }
    t->used = 0;
    return checked;
}

static void take_matches(const char *path) {
    etw_reader *r;
    ETW_CHECK_INT(etw_reader_open_file(&r, path, NULL), ETW_OK);
    if (!r) return;
    etw_decoder *d1, *d2;
    ETW_CHECK_INT(etw_decoder_new(&d1, NULL), ETW_OK);
    ETW_CHECK_INT(etw_decoder_new(&d2, NULL), ETW_OK);
    ETW_CHECK_INT(etw_decoder_prescan(d1, r), ETW_OK);
    ETW_CHECK_INT(etw_decoder_prescan(d2, r), ETW_OK);
    etw_stats *a, *b;
    ETW_CHECK_INT(etw_stats_new(&a, NULL), ETW_OK);
    ETW_CHECK_INT(etw_stats_new(&b, NULL), ETW_OK);
    etw_event ev;
    static etw_label la, lb;
    static name_tally names;
    uint64_t named = 0, unnamed = 0, diff = 0;
    while (etw_reader_next(r, &ev) == ETW_OK) {
        ETW_CHECK_INT(etw_label_event(d1, &ev, &la), ETW_OK);
        ETW_CHECK_INT(etw_stats_observe(a, d1, &ev, &la), ETW_OK);
        ETW_CHECK_INT(etw_stats_add(a, &ev, &la), ETW_OK);
        ETW_CHECK_INT(etw_stats_take(b, d2, &ev, &lb), ETW_OK);
        tally_add(&names, &la);
        if (la.status != lb.status || la.pid != lb.pid || la.tid != lb.tid || !la.schema != !lb.schema ||
            !la.error != !lb.error || (la.error && strcmp(la.error, lb.error)) ||
            (la.schema && la.schema->id != lb.schema->id))
            diff++;
        if (lb.event_len) {
            named++;
            if (lb.event_len != la.event_len || memcmp(lb.event, la.event, la.event_len)) diff++;
        } else {
            unnamed++;
        }
    }
    ETW_CHECK_INT(diff, 0);
    ETW_CHECK(named > 0);
    char *json = NULL;
    int same = same_summary(a, b, r, &json);
    ETW_CHECK(same);
    if (!same) fprintf(stderr, "take differs on %s\n", path);
    /* and both agree with counting the labels' names */
    ETW_CHECK(json && tally_check(&names, json) > 0);
    free(json);
    etw_stats_free(a);
    etw_stats_free(b);
    etw_decoder_free(d1);
    etw_decoder_free(d2);
    etw_reader_close(r);
}

static void test_stats_take(void) {
    take_matches(PT);
    take_matches(ETW_TEST_DATA_DIR "/net.4.5.2.x64.etl");
    take_matches(ETW_TEST_DATA_DIR "/ShutdownPerfDiagLogger.etl");
    take_matches(ETW_TEST_DATA_DIR "/gcevents.etl");
    take_matches(ETW_TEST_DATA_DIR "/SelfDescribingSingleEvent.etl");
    take_matches(ETW_TEST_DATA_DIR "/powershell.etl");
    take_matches(ETW_TEST_DATA_DIR "/HTTP_Server.etl");
    ETW_CHECK_INT(etw_stats_take(NULL, NULL, NULL, NULL), ETW_E_INVALID_ARG);
}

int main(void) {
    ETW_RUN(test_multi_merge);
    ETW_RUN(test_jscan);
    ETW_RUN(test_csv_and_text);
    ETW_RUN(test_summaries);
    ETW_RUN(test_stats_merge);
    ETW_RUN(test_stats_take);
    ETW_RUN(test_csv_learn_after_manifest);
    return ETW_TEST_DONE();
}
