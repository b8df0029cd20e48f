/* fuzz_profile.c - libFuzzer target for the profile stage (src/profile/,
 * etw_profile.h): stack attachment, pending stacks, symbolization.
 *
 * Two modes, by the first byte:
 *  - even: the rest is a trace file, read by the container reader and every
 *    event fed to a profile (as a profiling tool does);
 *  - odd: the rest is a script of synthetic events, 8-byte headers
 *    {kind, time delta, thread, cpu, pid, opcode, payload length, flags}
 *    and that many payload bytes, made into kernel StackWalk (Stack, keys,
 *    definitions), PerfInfo/Sample, Image, KernelTraceControl, CLR
 *    (ClrStack/Walk, method) events with extended items: the attacher's
 *    states are reached far more often than through whole traces. The
 *    profile's pending bound is set small (16) so that dropping is fuzzed.
 *
 * Checks (abort on violation): add and finish return ETW_OK (or
 * ETW_E_LIMIT/ETW_E_NOMEM, never here); every stack node's parent is smaller
 * than itself and its depth one more than its parent's; every frame reads;
 * samples add up to the number of events counted as samples; the pending
 * records never exceed the bound.
 *
 * Seeds: fuzz/corpus/etwdump/ (traces: prefix a 0 byte) and the script
 * seeds of fuzz/corpus/profile/.
 * Build: cmake -DETW_FUZZ=ON -DCMAKE_C_COMPILER=clang (target fuzz_profile).
 * Run:   build-fuzz/fuzz_profile -max_len=65536 /tmp/c fuzz/corpus/profile */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "etwdecode/etwdecode.h"
#include "profile/etw_profile_internal.h"

#define FUZZ_ASSERT(c)                                                         \
    do {                                                                       \
        if (!(c)) {                                                            \
            fprintf(stderr, "%s:%d: assertion failed: %s\n", __FILE__,         \
                    __LINE__, #c);                                             \
            abort();                                                           \
        }                                                                      \
    } while (0)

static const etw_guid G_STACKWALK = {0xdef2fe46u, 0x7bd6, 0x4b80, {0xbd, 0x94, 0xf5, 0x7f, 0xe2, 0x0d, 0x0c, 0xe3}};
static const etw_guid G_PERFINFO = {0xce1dbfb4u, 0x137e, 0x4da6, {0x87, 0xb0, 0x3f, 0x59, 0xaa, 0x10, 0x2c, 0xbc}};
static const etw_guid G_IMAGE = {0x2cb15d1du, 0x5fc1, 0x11d2, {0xab, 0xe1, 0x00, 0xa0, 0xc9, 0x11, 0xf5, 0x18}};
static const etw_guid G_KTC = {0xb3e675d7u, 0x2554, 0x4f18, {0x83, 0x0b, 0x27, 0x62, 0x73, 0x25, 0x60, 0xde}};
static const etw_guid G_CLR = {0xe13c0d23u, 0xccbc, 0x4e12, {0x93, 0x1b, 0xd9, 0xcc, 0x2e, 0xee, 0x27, 0xe4}};
static const etw_guid G_PROCESS = {0x3d6fa8d0u, 0xfe05, 0x11d0, {0x9d, 0xda, 0x00, 0xc0, 0x4f, 0xd7, 0xba, 0x7c}};

/* The pending records' lists are consistent: every thread's waiting list
 * holds live records that know they wait there, linked both ways; the age
 * list holds every live record once. */
static void check_lists(const etw_profile *p) {
    const etw_attach *a = &p->att;
    uint32_t waiting = 0;
    for (uint32_t ti = 0; ti < a->nthreads; ti++) {
        uint32_t prev = 0, n = 0;
        for (uint32_t it = a->threads[ti].waiting; it; it = a->pends[it - 1].next[ETW_L_THREAD]) {
            const etw_pend *x = &a->pends[it - 1];
            FUZZ_ASSERT(it <= a->npends);
            FUZZ_ASSERT((x->flags & (ETW_PEND_LIVE | ETW_PEND_WAITING)) == (ETW_PEND_LIVE | ETW_PEND_WAITING));
            FUZZ_ASSERT(x->wait_ti == ti);
            FUZZ_ASSERT(x->prev[ETW_L_THREAD] == prev);
            prev = it;
            FUZZ_ASSERT(++n <= a->npends);
        }
        waiting += n;
    }
    uint32_t live = 0, w = 0;
    for (uint32_t it = a->age_head; it; it = a->pends[it - 1].next[ETW_L_AGE]) {
        FUZZ_ASSERT(a->pends[it - 1].flags & ETW_PEND_LIVE);
        if (a->pends[it - 1].flags & ETW_PEND_WAITING) w++;
        FUZZ_ASSERT(++live <= a->npends);
    }
    FUZZ_ASSERT(live == a->live);
    FUZZ_ASSERT(w == waiting);
}

static void add(etw_profile *p, etw_decoder *d, const etw_event *ev) {
    const etw_schema *s = NULL;
    etw_decoder_resolve(d, ev, &s, NULL);
    etw_status st = etw_profile_add(p, ev, s);
    FUZZ_ASSERT(st == ETW_OK);
    FUZZ_ASSERT(p->att.live <= p->att.max_pending);
    if (p->att.npends <= 64) check_lists(p);
}

static void check(etw_profile *p) {
    uint32_t n = etw_profile_stack_count(p);
    for (uint32_t s = 1; s <= n; s++) {
        uint32_t parent = etw_profile_stack_parent(p, s);
        FUZZ_ASSERT(parent < s);
        FUZZ_ASSERT(etw_profile_stack_depth(p, s) == etw_profile_stack_depth(p, parent) + 1);
        FUZZ_ASSERT(!p->tree.leaf_only || parent == ETW_STACK_NONE); /* one-frame stacks */
        FUZZ_ASSERT(etw_profile_stack_frame(p, s) < etw_profile_frame_count(p));
    }
    for (uint32_t f = 0; f < etw_profile_frame_count(p); f++) {
        etw_frame_info fi;
        FUZZ_ASSERT(etw_profile_frame(p, f, &fi) == ETW_OK);
        FUZZ_ASSERT(!fi.module || fi.module_len < (1u << 20));
    }
    etw_profile_stats st;
    etw_profile_stats_get(p, &st);
    uint64_t total = 0;
    for (size_t i = 0; i < etw_profile_sample_count(p); i++) {
        etw_profile_sample sm;
        FUZZ_ASSERT(etw_profile_sample_at(p, i, &sm) == ETW_OK);
        FUZZ_ASSERT(sm.stack <= n);
        total += sm.count;
    }
    FUZZ_ASSERT(total == st.samples);
    FUZZ_ASSERT(st.stacks_attached + st.stacks_orphaned <= st.stack_events);
}

static void run_script(etw_profile *p, etw_decoder *d, const uint8_t *data, size_t size) {
    int64_t t = 1000;
    size_t pos = 0;
    static uint8_t ext[8 + 8 + 8 * 32];
    while (size - pos >= 8) {
        const uint8_t *h = data + pos;
        pos += 8;
        size_t len = h[6];
        if (len > size - pos) len = size - pos;
        etw_event ev;
        memset(&ev, 0, sizeof ev);
        ev.form = ETW_FORM_SYSTEM;
        ev.flags = ETW_EVENT_FLAG_CLASSIC_HEADER | ETW_EVENT_FLAG_64_BIT_HEADER;
        ev.pointer_size = (h[7] & 1) ? 4 : 8;
        t += h[1] & 0x7f; /* the same time again often */
        ev.raw_timestamp = t;
        ev.timestamp = t;
        ev.tid = h[2] & 0x0f;
        ev.cpu = h[3] & 3;
        ev.pid = h[4] & 7;
        ev.opcode = h[5];
        ev.version = 2;
        ev.user_data = data + pos;
        ev.user_data_len = (uint32_t)len;
        switch (h[0] % 7) {
        case 0: ev.provider = G_STACKWALK; break;
        case 1: ev.provider = G_PERFINFO; ev.form = ETW_FORM_PERFINFO; ev.opcode = 46; break;
        case 2: ev.provider = G_IMAGE; break;
        case 3: ev.provider = G_KTC; ev.form = ETW_FORM_FULL; break;
        case 4: ev.provider = G_CLR; ev.form = ETW_FORM_EVENT_HEADER; ev.id = h[5] & 1 ? 82 : 143;
            ev.opcode = h[5] & 1 ? 82 : 37; break;
        case 5: ev.provider = G_PROCESS; break;
        default: ev.provider = G_CLR; ev.form = ETW_FORM_EVENT_HEADER; ev.id = 80; ev.opcode = 1; break;
        }
        if (h[7] & 2) { /* a STACK_TRACE64 extended item from the payload */
            /* EVENT_HEADER_EXTENDED_DATA_ITEM: reserved, type, reserved, size */
            size_t n = len < sizeof ext - 8 ? len : sizeof ext - 8;
            memset(ext, 0, 8);
            ext[2] = 6; /* STACK_TRACE64 */
            ext[6] = (uint8_t)n;
            ext[7] = (uint8_t)(n >> 8);
            memcpy(ext + 8, data + pos, n);
            ev.ext_data = ext;
            ev.ext_size = (uint32_t)(8 + n);
            ev.ext_count = 1;
            ev.flags |= ETW_EVENT_FLAG_EXTENDED_INFO;
        }
        pos += len;
        add(p, d, &ev);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 1) return 0;
    etw_decoder_options dop;
    memset(&dop, 0, sizeof dop);
    etw_decoder *d = NULL;
    if (etw_decoder_new(&d, &dop) != ETW_OK) return 0;
    etw_profile_options po;
    memset(&po, 0, sizeof po);
    po.decoder = d;
    po.keep_event_stacks = 1;
    po.leaf_only = (data[0] >> 1) & 1; /* innermost frames only (etwdump --stats) */
    etw_profile *p = NULL;
    FUZZ_ASSERT(etw_profile_new(&p, &po) == ETW_OK);
    if (data[0] & 1) {
        p->att.max_pending = 16;
        run_script(p, d, data + 1, size - 1);
    } else {
        etw_reader_options ro;
        memset(&ro, 0, sizeof ro);
        ro.max_buffer_size = 1u << 20;
        etw_reader *r = NULL;
        if (etw_reader_open_memory(&r, data + 1, size - 1, &ro) == ETW_OK) {
            const etw_event *ev;
            int n = 0;
            while (n++ < 100000 && etw_reader_next_ref(r, &ev) == ETW_OK) {
                if (etw_decoder_learns(d, ev, NULL)) etw_decoder_learn(d, ev);
                add(p, d, ev);
            }
            etw_reader_close(r);
        }
    }
    FUZZ_ASSERT(etw_profile_finish(p) == ETW_OK);
    FUZZ_ASSERT(p->att.live == 0);
    check(p);
    etw_profile_free(p);
    etw_decoder_free(d);
    return 0;
}
