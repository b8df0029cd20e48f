/* Record header forms the sample traces do not all contain (built by hand
 * from the layouts in evntcons.h / ntwmi.h), and time conversion for every
 * clock type (the sample traces all use QPC at 10 MHz, so the log-file
 * header of a real trace is rewritten to each clock). */
#include <stdlib.h>

#include "etl/etw_record.h"
#include "etw_test.h"
#include "etwdecode/etw_reader.h"

static void put16(uint8_t *p, uint16_t v) {
    p[0] = (uint8_t)v;
    p[1] = (uint8_t)(v >> 8);
}
static void put32(uint8_t *p, uint32_t v) {
    put16(p, (uint16_t)v);
    put16(p + 2, (uint16_t)(v >> 16));
}
static void put64(uint8_t *p, uint64_t v) {
    put32(p, (uint32_t)v);
    put32(p + 4, (uint32_t)(v >> 32));
}
static void put_guid(uint8_t *p, uint32_t d1) {
    put32(p, d1);
    put16(p + 4, 0x1122);
    put16(p + 6, 0x3344);
    for (int i = 0; i < 8; i++) p[8 + i] = (uint8_t)(0xA0 + i);
}

static etw_status parse(const uint8_t *p, size_t n, etw_event *ev, uint32_t *adv) {
    const char *msg = NULL;
    etw_status s = etw_record_parse(p, n, 8, ev, adv, &msg);
    if (s != ETW_OK && s != ETW_END) ETW_CHECK(msg != NULL && msg[0] != 0);
    return s;
}

static void test_system_forms(void) {
    uint8_t r[0x30] = {0};
    /* SYSTEM32: version 2, header type 1, flags 0xC0; size 0x28; type 1 group 3 (Process/Start) */
    put16(r, 2);
    r[2] = 0x01;
    r[3] = 0xC0;
    put16(r + 4, 0x28);
    r[6] = 1;
    r[7] = 3;
    put32(r + 8, 77);
    put32(r + 12, 66);
    put64(r + 16, 123456789);
    put32(r + 24, 5);
    put32(r + 28, 6);
    etw_event ev;
    uint32_t adv = 0;
    ETW_CHECK_INT(parse(r, sizeof r, &ev, &adv), ETW_OK);
    ETW_CHECK_INT(ev.form, ETW_FORM_SYSTEM);
    ETW_CHECK_INT(ev.pointer_size, 4);
    ETW_CHECK_INT(ev.version, 2);
    ETW_CHECK_INT(ev.opcode, 1);
    ETW_CHECK_INT(ev.group, 3);
    ETW_CHECK_INT(ev.tid, 77);
    ETW_CHECK_INT(ev.pid, 66);
    ETW_CHECK_INT(ev.raw_timestamp, 123456789);
    ETW_CHECK_INT(ev.kernel_time, 5);
    ETW_CHECK_INT(ev.user_time, 6);
    ETW_CHECK_INT(ev.user_data_len, 8);
    ETW_CHECK(ev.user_data == r + 0x20);
    ETW_CHECK_INT(adv, 0x28);
    ETW_CHECK(ev.flags & ETW_EVENT_FLAG_CLASSIC_HEADER);
    ETW_CHECK(ev.flags & ETW_EVENT_FLAG_32_BIT_HEADER);
    ETW_CHECK_INT(ev.provider.data1, 0x3d6fa8d0); /* Process class */

    /* Process group, type 10 (image load) belongs to the Image class */
    r[6] = 10;
    ETW_CHECK_INT(parse(r, sizeof r, &ev, &adv), ETW_OK);
    ETW_CHECK_INT(ev.provider.data1, 0x2cb15d1d);

    /* COMPACT64: no kernel/user time, payload at 0x18 */
    r[2] = 0x04;
    put16(r + 4, 0x1C);
    ETW_CHECK_INT(parse(r, sizeof r, &ev, &adv), ETW_OK);
    ETW_CHECK_INT(ev.form, ETW_FORM_COMPACT);
    ETW_CHECK_INT(ev.pointer_size, 8);
    ETW_CHECK_INT(ev.user_data_len, 4);
    ETW_CHECK(ev.flags & ETW_EVENT_FLAG_NO_CPUTIME);
    ETW_CHECK_INT(adv, 0x20);

    /* PERFINFO64 with a PEBS index and 2 PMC counters: payload after 0x10 + 8 + 16 */
    memset(r, 0, sizeof r);
    put16(r, (uint16_t)(0x8000 | (2 << 8) | 3));
    r[2] = 0x11;
    r[3] = 0xC0;
    put16(r + 4, 0x30);
    r[6] = 0x2E;
    r[7] = 0x0F;
    put64(r + 8, 42);
    ETW_CHECK_INT(parse(r, sizeof r, &ev, &adv), ETW_OK);
    ETW_CHECK_INT(ev.form, ETW_FORM_PERFINFO);
    ETW_CHECK_INT(ev.version, 3);
    ETW_CHECK_INT(ev.pid, ETW_NO_ID);
    ETW_CHECK_INT(ev.tid, ETW_NO_ID);
    ETW_CHECK_INT(ev.raw_timestamp, 42);
    ETW_CHECK(ev.user_data == r + 0x28);
    ETW_CHECK_INT(ev.user_data_len, 8);
    ETW_CHECK_INT(ev.provider.data1, 0xce1dbfb4); /* PerfInfo */

    /* the same with a size too small for its PEBS/PMC items */
    put16(r + 4, 0x18);
    ETW_CHECK_INT(parse(r, sizeof r, &ev, &adv), ETW_E_CORRUPT);
}

static void test_classic_forms(void) {
    uint8_t r[0x58] = {0};
    /* EVENT_TRACE_HEADER 32-bit: size, type 0x0A, flags 0xC0, Class.Type 7, Level 3, Version 2 */
    put16(r, 0x34);
    r[2] = 0x0A;
    r[3] = 0xC0;
    r[4] = 7;
    r[5] = 3;
    put16(r + 6, 2);
    put32(r + 8, 11);
    put32(r + 12, 22);
    put64(r + 16, 999);
    put_guid(r + 0x18, 0xdeadbeef);
    etw_event ev;
    uint32_t adv;
    ETW_CHECK_INT(parse(r, sizeof r, &ev, &adv), ETW_OK);
    ETW_CHECK_INT(ev.form, ETW_FORM_FULL);
    ETW_CHECK_INT(ev.pointer_size, 4);
    ETW_CHECK_INT(ev.opcode, 7);
    ETW_CHECK_INT(ev.level, 3);
    ETW_CHECK_INT(ev.version, 2);
    ETW_CHECK_INT(ev.tid, 11);
    ETW_CHECK_INT(ev.pid, 22);
    ETW_CHECK_INT(ev.provider.data1, 0xdeadbeef);
    ETW_CHECK_INT(ev.provider.data4[7], 0xA7);
    ETW_CHECK_INT(ev.user_data_len, 4);
    ETW_CHECK_INT(adv, 0x38);

    /* EVENT_INSTANCE_GUID_HEADER 64-bit: payload at 0x48 */
    put16(r, 0x50);
    r[2] = 0x15;
    ETW_CHECK_INT(parse(r, sizeof r, &ev, &adv), ETW_OK);
    ETW_CHECK_INT(ev.form, ETW_FORM_INSTANCE);
    ETW_CHECK_INT(ev.pointer_size, 8);
    ETW_CHECK(ev.user_data == r + 0x48);
    ETW_CHECK_INT(ev.user_data_len, 8);

    /* an INSTANCE record smaller than its header */
    put16(r, 0x40);
    ETW_CHECK_INT(parse(r, sizeof r, &ev, &adv), ETW_E_CORRUPT);
}

static void test_message_form(void) {
    uint8_t r[0x40] = {0};
    /* MESSAGE: u16 size, reserved, flags byte 0x90; u16 message number, u16 option flags:
     * SEQUENCE | GUID | TIMESTAMP | SYSTEMINFO | POINTER32 */
    put16(r, 0x3C);
    r[3] = 0x90;
    put16(r + 4, 12);
    put16(r + 6, 0x01 | 0x02 | 0x08 | 0x20 | 0x40);
    put32(r + 8, 5);              /* sequence */
    put_guid(r + 12, 0x12345678); /* message GUID */
    put64(r + 28, 31337);         /* timestamp */
    put32(r + 36, 44);            /* thread */
    put32(r + 40, 55);            /* process */
    etw_event ev;
    uint32_t adv;
    ETW_CHECK_INT(parse(r, sizeof r, &ev, &adv), ETW_OK);
    ETW_CHECK_INT(ev.form, ETW_FORM_MESSAGE);
    ETW_CHECK_INT(ev.message_number, 12);
    ETW_CHECK_INT(ev.provider.data1, 0x12345678);
    ETW_CHECK_INT(ev.raw_timestamp, 31337);
    ETW_CHECK_INT(ev.tid, 44);
    ETW_CHECK_INT(ev.pid, 55);
    ETW_CHECK_INT(ev.pointer_size, 4);
    ETW_CHECK(ev.user_data == r + 44);
    ETW_CHECK_INT(ev.user_data_len, 0x3C - 44);
    ETW_CHECK(ev.flags & ETW_EVENT_FLAG_TRACE_MESSAGE);
    /* optional items larger than the record */
    put16(r, 0x10);
    ETW_CHECK_INT(parse(r, sizeof r, &ev, &adv), ETW_E_CORRUPT);
}

static void test_event_header_ext(void) {
    uint8_t r[0x50 + 24 + 32 + 16 + 8] = {0};
    size_t size = sizeof r;
    put16(r, (uint16_t)size);
    put16(r + 2, 0xC012); /* 32-bit writer */
    put16(r + 4, ETW_EVENT_FLAG_EXTENDED_INFO);
    put32(r + 8, 1);
    put32(r + 12, 2);
    put64(r + 16, 3);
    put_guid(r + 0x18, 0xabcdef01);
    put16(r + 0x28, 21); /* id */
    r[0x2A] = 1;         /* version */
    r[0x2B] = 16;        /* channel */
    r[0x2C] = 4;         /* level */
    r[0x2D] = 28;        /* opcode */
    put16(r + 0x2E, 4);  /* task */
    put64(r + 0x30, 0x8000000000000010ull);
    put_guid(r + 0x40, 0x00000100);
    uint8_t *x = r + 0x50;
    /* related activity id: 16 bytes, linkage 1 */
    put16(x, 24);
    put16(x + 2, ETW_EXT_RELATED_ACTIVITYID);
    put16(x + 4, 1);
    put16(x + 6, 16);
    put_guid(x + 8, 0x55555555);
    x += 24;
    /* a 32-bit stack: match id + 3 addresses = 20 bytes, padded to 24 + 8 */
    put16(x, 32);
    put16(x + 2, ETW_EXT_STACK_TRACE32);
    put16(x + 4, 1);
    put16(x + 6, 20);
    put32(x + 16, 0x401000);
    x += 32;
    /* an unknown type, kept raw; last item */
    put16(x, 16);
    put16(x + 2, 0x0099);
    put16(x + 4, 0);
    put16(x + 6, 3);
    x[8] = 'a';
    x[9] = 'b';
    x[10] = 'c';
    x += 16;
    etw_event ev;
    uint32_t adv;
    ETW_CHECK_INT(parse(r, size, &ev, &adv), ETW_OK);
    ETW_CHECK_INT(ev.form, ETW_FORM_EVENT_HEADER);
    ETW_CHECK_INT(ev.pointer_size, 4);
    ETW_CHECK(ev.flags & ETW_EVENT_FLAG_32_BIT_HEADER);
    ETW_CHECK_INT(ev.id, 21);
    ETW_CHECK_INT(ev.version, 1);
    ETW_CHECK_INT(ev.channel, 16);
    ETW_CHECK_INT(ev.level, 4);
    ETW_CHECK_INT(ev.opcode, 28);
    ETW_CHECK_INT(ev.task, 4);
    ETW_CHECK(ev.keywords == 0x8000000000000010ull);
    ETW_CHECK_INT(ev.activity_id.data1, 0x100);
    ETW_CHECK_INT(ev.ext_count, 3);
    ETW_CHECK(ev.user_data == x);
    ETW_CHECK_INT(ev.user_data_len, 8);
    uint32_t pos = 0;
    etw_ext_item it;
    ETW_CHECK_INT(etw_event_next_ext(&ev, &pos, &it), ETW_OK);
    ETW_CHECK_INT(it.type, ETW_EXT_RELATED_ACTIVITYID);
    ETW_CHECK_INT(it.size, 16);
    ETW_CHECK_INT(etw_event_next_ext(&ev, &pos, &it), ETW_OK);
    ETW_CHECK_INT(it.type, ETW_EXT_STACK_TRACE32);
    ETW_CHECK_INT(it.size, 20);
    ETW_CHECK_INT(etw_event_next_ext(&ev, &pos, &it), ETW_OK);
    ETW_CHECK_INT(it.type, 0x99);
    ETW_CHECK(it.size == 3 && memcmp(it.data, "abc", 3) == 0);
    ETW_CHECK_INT(etw_event_next_ext(&ev, &pos, &it), ETW_END);
    ETW_CHECK_INT(etw_event_find_ext(&ev, ETW_EXT_STACK_TRACE32, &it), ETW_OK);
    ETW_CHECK_INT(etw_event_find_ext(&ev, ETW_EXT_CONTAINER_ID, &it), ETW_E_NOT_FOUND);

    /* the chain says another item follows but the record ends there */
    put16(r + 0x50 + 24 + 32 + 4, 1);
    put16(r, (uint16_t)(size - 8));
    ETW_CHECK_INT(parse(r, size, &ev, &adv), ETW_E_CORRUPT);
    put16(r, (uint16_t)size);
    put16(r + 0x50 + 24 + 32 + 4, 0);
    /* an item whose data size runs past the record */
    put16(r + 0x50 + 6, 0x4000);
    ETW_CHECK_INT(parse(r, size, &ev, &adv), ETW_E_CORRUPT);
    put16(r + 0x50 + 6, 16);
    /* ERROR header type: same layout */
    put16(r + 2, 0xC00D);
    ETW_CHECK_INT(parse(r, size, &ev, &adv), ETW_OK);
    ETW_CHECK_INT(ev.form, ETW_FORM_ERROR);
}

/* etw_record_find: a provider GUID whose first 32 bits are zero is a
 * provider like another (a fuzzed trace: etw_reader_watch missed its
 * records, which the reader then returned); a kernel record of no known
 * group has none and never matches. */
static void test_record_find(void) {
    uint8_t b[0x50 * 2 + 0x28 * 2 + 8] = {0};
    uint8_t *r = b;
    for (int i = 0; i < 2; i++, r += 0x50) { /* EVENT_HEADER records, GUIDs 00000000-... and abcdef01-... */
        put16(r, 0x50);
        put16(r + 2, 0xC013);
        put_guid(r + 0x18, i ? 0xabcdef01u : 0);
    }
    for (int i = 0; i < 2; i++, r += 0x28) { /* SYSTEM records: group 0xEE (none), then Process/Start */
        put16(r, 2);
        r[2] = 0x01;
        r[3] = 0xC0;
        put16(r + 4, 0x28);
        r[6] = 1;
        r[7] = i ? 3 : 0xEE;
    }
    put32(r, 0xFFFFFFFFu); /* the end marker */
    const uint32_t end = (uint32_t)sizeof b;
    struct {
        uint32_t data1;
        uint32_t at; /* UINT32_MAX: none */
    } cases[] = {{0, 0}, {0xabcdef01u, 0x50}, {0x3d6fa8d0u, 0xA0 + 0x28}, {0x12345678u, UINT32_MAX}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        uint32_t pos = 0, at = 0;
        int found = etw_record_find(b, &pos, end, &cases[i].data1, 1, &at);
        ETW_CHECK_INT(found, cases[i].at != UINT32_MAX);
        if (found) ETW_CHECK_INT(at, cases[i].at);
        /* past it, nothing more of that provider (the kernel record of no
         * group is not a zero GUID's) */
        ETW_CHECK_INT(etw_record_find(b, &pos, end, &cases[i].data1, 1, &at), 0);
        ETW_CHECK_INT(pos, end);
    }
}

static void test_bad_markers(void) {
    uint8_t r[16];
    etw_event ev;
    uint32_t adv;
    memset(r, 0xFF, sizeof r);
    ETW_CHECK_INT(parse(r, sizeof r, &ev, &adv), ETW_END);   /* unused tail */
    ETW_CHECK_INT(parse(r, 3, &ev, &adv), ETW_END);          /* nothing left */
    memset(r, 0, sizeof r);
    ETW_CHECK_INT(parse(r, sizeof r, &ev, &adv), ETW_E_CORRUPT); /* no marker */
    put16(r, 0x10);
    r[2] = 0x0C; /* TIMED: not used in files */
    r[3] = 0xC0;
    ETW_CHECK_INT(parse(r, sizeof r, &ev, &adv), ETW_E_UNSUPPORTED);
    put16(r, 0x60);
    r[2] = 0x13;
    ETW_CHECK_INT(parse(r, sizeof r, &ev, &adv), ETW_E_TRUNCATED); /* larger than the buffer */
    put16(r, 0x08);
    ETW_CHECK_INT(parse(r, sizeof r, &ev, &adv), ETW_E_CORRUPT); /* smaller than EVENT_HEADER */
}

/* --- clocks ----------------------------------------------------------------- */

typedef struct trace {
    uint8_t *data;
    size_t size;
} trace;

static trace load(const char *name) {
    trace t = {NULL, 0};
    char path[512];
    snprintf(path, sizeof path, "%s/%s", ETW_TEST_DATA_DIR, name);
    FILE *f = fopen(path, "rb");
    if (!f) return t;
    fseek(f, 0, SEEK_END);
    t.size = (size_t)ftell(f);
    fseek(f, 0, SEEK_SET);
    t.data = malloc(t.size);
    if (t.data && fread(t.data, 1, t.size, f) != t.size) t.size = 0;
    fclose(f);
    return t;
}

/* TRACE_LOGFILE_HEADER of a 64-bit writer starts at 0x48 + 0x20 (SYSTEM
 * header); offsets per evntrace.h (x64 column of FORMATS.md 1.4). */
#define LF 0x68
#define LF_CPU_SPEED (LF + 0x34)
#define LF_PERF_FREQ (LF + 0x100)
#define LF_START (LF + 0x108)
#define LF_CLOCK (LF + 0x110)

/* Read all events with the header rewritten to (clock, freq, mhz) and check
 * every timestamp against start + (raw - ref) * 1e7 / ticks-per-second,
 * computed independently in extended floating point (to one 100 ns tick). */
static void check_clock(const trace *base, uint32_t clock, uint64_t freq, uint32_t mhz, double ticks_per_s) {
    uint8_t *d = malloc(base->size);
    memcpy(d, base->data, base->size);
    put32(d + LF_CLOCK, clock);
    put64(d + LF_PERF_FREQ, freq);
    put32(d + LF_CPU_SPEED, mhz);
    etw_reader *r;
    ETW_CHECK_INT(etw_reader_open_memory(&r, d, base->size, NULL), ETW_OK);
    if (!r) {
        free(d);
        return;
    }
    const etw_logfile_header *h = etw_reader_logfile(r);
    ETW_CHECK_INT(h->reserved_flags, clock);
    etw_event ev;
    int n = 0, bad = 0;
    while (etw_reader_next(r, &ev) == ETW_OK) {
        /* long double: FILETIMEs (~1.3e17) do not fit a double's 53 bits */
        long double want = (long double)h->start_time +
                           (long double)(ev.raw_timestamp - h->raw_timestamp) * 1e7L / (long double)ticks_per_s;
        long double diff = (long double)ev.timestamp - want;
        if (diff > 1.0 || diff < -1.0) bad++;
        n++;
    }
    ETW_CHECK_INT(n, 7);
    ETW_CHECK_INT(bad, 0);
    etw_reader_close(r);
    free(d);
}

static void test_clock_types(void) {
    trace t = load("primitive-types.etl");
    ETW_CHECK(t.data != NULL && t.size == 16384);
    if (!t.data) return;
    check_clock(&t, 1, 10000000, 2304, 1e7);          /* QPC at 10 MHz (as recorded) */
    check_clock(&t, 1, 3579545, 2304, 3579545.0);     /* QPC at the ACPI PM timer rate */
    check_clock(&t, 2, 10000000, 2304, 1e7);          /* system time: already 100 ns */
    check_clock(&t, 3, 10000000, 2304, 2304e6);       /* CPU cycles at CpuSpeedInMHz */
    /* the header event is always at StartTime */
    etw_reader *r;
    ETW_CHECK_INT(etw_reader_open_memory(&r, t.data, t.size, NULL), ETW_OK);
    etw_event ev;
    ETW_CHECK_INT(etw_reader_next(r, &ev), ETW_OK);
    ETW_CHECK(ev.is_logfile_header);
    ETW_CHECK(ev.timestamp == etw_reader_logfile(r)->start_time);
    etw_reader_close(r);
    free(t.data);
}

int main(void) {
    ETW_RUN(test_system_forms);
    ETW_RUN(test_classic_forms);
    ETW_RUN(test_message_form);
    ETW_RUN(test_event_header_ext);
    ETW_RUN(test_record_find);
    ETW_RUN(test_bad_markers);
    ETW_RUN(test_clock_types);
    return ETW_TEST_DONE();
}
