/* test_subject.c - payload subjects (src/schema/etw_subject.c): a
 * Microsoft-Windows-Kernel-Network schema names its process by its payload's
 * PID whichever descriptor-keyed source described it (user manifest,
 * EventSource, merged TRACE_EVENT_INFO, built-in), and etw_decoder_event_ids
 * gives that pid; the tid goes unknown when the process moved; events
 * without the field, short payloads, a PID of another type, other
 * providers and MOF schemas keep the header's ids. The templates are the
 * provider's (tests/data/SOURCES.md, "kernel-network.man"); end-to-end
 * behaviour through etwdump is in tests/test_subject.py.
 */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "etw_test.h"
#include "etwdecode/etw_decoder.h"
#include "schema/etw_cache.h"

static const etw_guid KNET = {0x7dd42a49u, 0x5329, 0x4832, {0x8d, 0xfd, 0x43, 0xd9, 0x79, 0x15, 0x3a, 0x88}};
static const etw_guid OTHER = {0x12345678u, 0x1111, 0x2222, {1, 2, 3, 4, 5, 6, 7, 8}};

#define P(n, t) {.name = (n), .in_type = (t)}

/* KERNEL_NETWORK_TASK_TCPIPDatareceived.Args (events 11, 13, 14, 16, 18, 42, 43) */
static const etw_property recv_props[] = {
    P("PID", ETW_INTYPE_UINT32),   P("size", ETW_INTYPE_UINT32),  P("daddr", ETW_INTYPE_UINT32),
    P("saddr", ETW_INTYPE_UINT32), P("dport", ETW_INTYPE_UINT16), P("sport", ETW_INTYPE_UINT16),
    P("seqnum", ETW_INTYPE_UINT32), P("connid", ETW_INTYPE_UINT32)};
/* ...TCPconnectionattemptfailed.Args (events 17, 49) */
static const etw_property fail_props[] = {P("Proto", ETW_INTYPE_UINT16), P("FailureCode", ETW_INTYPE_UINT16)};
/* Not a Kernel-Network layout: PID after a counted string (a walk) */
static const etw_property walk_props[] = {P("Name", ETW_INTYPE_UNICODESTRING), P("PID", ETW_INTYPE_UINT32)};
/* PID of another size */
static const etw_property wide_props[] = {P("PID", ETW_INTYPE_UINT64)};

static const etw_schema *insert(etw_cache *c, etw_schema_source src, const etw_guid *g, uint16_t id,
                                const etw_property *props, uint16_t n) {
    etw_schema d;
    memset(&d, 0xA5, sizeof d); /* whatever a draft holds, the cache decides */
    memset(&d, 0, offsetof(etw_schema, subject_prop));
    d.provider = *g;
    d.event_id = id;
    d.event_name = "Event";
    d.props = props;
    d.prop_count = n;
    d.top_count = n;
    uint8_t key[ETW_CLASSIC_KEY_SIZE];
    size_t klen = ETW_DESCRIPTOR_KEY_SIZE;
    if (src == ETW_SOURCE_MOF) {
        etw_key_classic(key, g, (uint8_t)id, 0);
        klen = ETW_CLASSIC_KEY_SIZE;
    } else {
        etw_key_descriptor(key, g, id, 0);
    }
    const etw_schema *s = NULL;
    ETW_CHECK_INT(etw_cache_insert(c, src, 8, key, klen, etw_cache_hash(key, klen), &d, &s, NULL), ETW_OK);
    return s;
}

static etw_event event(const etw_guid *g, uint16_t id, uint32_t pid, uint32_t tid, const uint8_t *p,
                       uint32_t n) {
    etw_event ev;
    memset(&ev, 0, sizeof ev);
    ev.provider = *g;
    ev.id = id;
    ev.pid = pid;
    ev.tid = tid;
    ev.user_data = p;
    ev.user_data_len = n;
    ev.form = ETW_FORM_EVENT_HEADER;
    return ev;
}

static void put32(uint8_t *p, uint32_t v) {
    for (int i = 0; i < 4; i++) p[i] = (uint8_t)(v >> (8 * i));
}

static void ids(const etw_schema *s, const etw_event *ev, uint32_t *pid, uint32_t *tid) {
    *pid = *tid = 0x5555;
    etw_decoder_event_ids(NULL, ev, s, pid, tid);
}

static void test_every_descriptor_source(void) {
    static const etw_schema_source srcs[] = {ETW_SOURCE_MANIFEST, ETW_SOURCE_EVENTSOURCE, ETW_SOURCE_METADATA,
                                             ETW_SOURCE_BUILTIN};
    uint8_t pay[28];
    memset(pay, 0x11, sizeof pay);
    put32(pay, 2716);
    for (size_t k = 0; k < sizeof srcs / sizeof srcs[0]; k++) {
        etw_cache *c = NULL;
        ETW_CHECK_INT(etw_cache_new(&c, NULL), ETW_OK);
        if (!c) return;
        const etw_schema *s = insert(c, srcs[k], &KNET, 11, recv_props, 8);
        ETW_CHECK(s != NULL);
        if (!s) {
            etw_cache_free(c);
            return;
        }
        ETW_CHECK_INT(s->subject_flags & ETW_SUBJECT_PID, ETW_SUBJECT_PID);
        ETW_CHECK_INT(s->subject_prop, 0);
        ETW_CHECK_INT(s->subject_off, 0);
        uint32_t pid, tid;
        /* a DPC: header pid 0, the idle thread */
        etw_event ev = event(&KNET, 11, 0, 0, pay, sizeof pay);
        ids(s, &ev, &pid, &tid);
        ETW_CHECK_INT(pid, 2716);
        ETW_CHECK_INT(tid, ETW_NO_ID);
        /* the System process's thread */
        ev = event(&KNET, 11, 4, 88, pay, sizeof pay);
        ids(s, &ev, &pid, &tid);
        ETW_CHECK_INT(pid, 2716);
        ETW_CHECK_INT(tid, ETW_NO_ID);
        /* logged by the process itself: its thread stays */
        ev = event(&KNET, 11, 2716, 3000, pay, sizeof pay);
        ids(s, &ev, &pid, &tid);
        ETW_CHECK_INT(pid, 2716);
        ETW_CHECK_INT(tid, 3000);
        /* a payload too short for PID: the header's */
        ev = event(&KNET, 11, 4, 88, pay, 3);
        ids(s, &ev, &pid, &tid);
        ETW_CHECK_INT(pid, 4);
        ETW_CHECK_INT(tid, 88);
        ev = event(&KNET, 11, 4, 88, NULL, 0);
        ids(s, &ev, &pid, &tid);
        ETW_CHECK_INT(pid, 4);
        ETW_CHECK_INT(tid, 88);
        etw_cache_free(c);
    }
}

static void test_not_subjects(void) {
    etw_cache *c = NULL;
    ETW_CHECK_INT(etw_cache_new(&c, NULL), ETW_OK);
    if (!c) return;
    uint8_t pay[28];
    memset(pay, 0, sizeof pay);
    put32(pay, 2716);
    uint32_t pid, tid;
    /* the failure events have no PID */
    const etw_schema *fail = insert(c, ETW_SOURCE_MANIFEST, &KNET, 17, fail_props, 2);
    /* an event id the provider does not list, with the same layout */
    const etw_schema *unlisted = insert(c, ETW_SOURCE_MANIFEST, &KNET, 99, recv_props, 8);
    /* another provider's PID */
    const etw_schema *other = insert(c, ETW_SOURCE_MANIFEST, &OTHER, 11, recv_props, 8);
    /* a 64-bit PID is not taken */
    const etw_schema *wide = insert(c, ETW_SOURCE_MANIFEST, &KNET, 10, wide_props, 1);
    /* MOF schemas have the kernel tables, TraceLogging none */
    const etw_schema *mof = insert(c, ETW_SOURCE_MOF, &KNET, 11, recv_props, 8);
    const etw_schema *all[] = {fail, unlisted, other, wide, mof};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) {
        ETW_CHECK(all[i] != NULL);
        if (!all[i]) continue;
        ETW_CHECK_INT(all[i]->subject_flags, 0);
        ETW_CHECK_INT(all[i]->subject_prop, ETW_SUBJECT_NONE);
        etw_event ev = event(&all[i]->provider, all[i]->event_id, 0, 0, pay, sizeof pay);
        ids(all[i], &ev, &pid, &tid);
        ETW_CHECK_INT(pid, 0);
        ETW_CHECK_INT(tid, 0);
    }
    /* a schema made by hand, zero-filled: no subject */
    etw_schema hand;
    memset(&hand, 0, sizeof hand);
    hand.provider = KNET;
    hand.event_id = 11;
    hand.props = recv_props;
    hand.prop_count = hand.top_count = 8;
    etw_event ev = event(&KNET, 11, 4, 88, pay, sizeof pay);
    ids(&hand, &ev, &pid, &tid);
    ETW_CHECK_INT(pid, 4);
    ETW_CHECK_INT(tid, 88);
    etw_cache_free(c);
}

/* PID after a variable-size property: found by walking the payload. The
 * rule is per provider and event id, so test it on a listed id. */
static void test_walk(void) {
    etw_cache *c = NULL;
    ETW_CHECK_INT(etw_cache_new(&c, NULL), ETW_OK);
    if (!c) return;
    const etw_schema *s = insert(c, ETW_SOURCE_METADATA, &KNET, 43, walk_props, 2);
    ETW_CHECK(s != NULL);
    if (s) {
        ETW_CHECK_INT(s->subject_prop, 1);
        ETW_CHECK_INT(s->subject_off, ETW_SUBJECT_NONE);
        /* "ab\0" in UTF-16, then PID 2716 */
        uint8_t pay[10] = {'a', 0, 'b', 0, 0, 0};
        put32(pay + 6, 2716);
        uint32_t pid, tid;
        etw_event ev = event(&KNET, 43, 0, 0, pay, sizeof pay);
        ids(s, &ev, &pid, &tid);
        ETW_CHECK_INT(pid, 2716);
        ETW_CHECK_INT(tid, ETW_NO_ID);
        /* the string runs to the end: no PID */
        ev = event(&KNET, 43, 0, 0, pay, 4);
        ids(s, &ev, &pid, &tid);
        ETW_CHECK_INT(pid, 0);
        ETW_CHECK_INT(tid, 0);
        ev = event(&KNET, 43, 0, 0, pay, 8);
        ids(s, &ev, &pid, &tid);
        ETW_CHECK_INT(pid, 0);
    }
    etw_cache_free(c);
}

int main(void) {
    ETW_RUN(test_every_descriptor_source);
    ETW_RUN(test_not_subjects);
    ETW_RUN(test_walk);
    return ETW_TEST_DONE();
}
