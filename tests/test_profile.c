/* test_profile.c - the profile stage: the interned stack tree, stacks
 * attached to their events and symbolized on a real trace, hostile input. */
#include <stdlib.h>
#include <string.h>

#include "etw_test.h"
#include "etwdecode/etwdecode.h"
#include "profile/etw_profile_internal.h"
#include "profile/etw_stacktree.h"

/* The tree interns: same (space, address) -> same frame, same (parent,
 * frame) -> same node, depth counted from the root. */
static void test_tree_interning(void) {
    etw_stacktree t;
    ETW_CHECK(etw_stacktree_init(&t, NULL) == ETW_OK);
    const uint64_t kmin = 0xFFFF000000000000u;
    /* leaf first, as ETW logs them: kernel leaf, user root */
    uint64_t a[3] = {0xFFFFF80000001000u, 0x7FF700001000u, 0x7FF700002000u};
    uint32_t s1, s2, s3;
    ETW_CHECK(etw_stacktree_push_leaf_first(&t, &t.stacks, 0, 100, a, 3, kmin, 5, &s1) == ETW_OK);
    ETW_CHECK(etw_stacktree_push_leaf_first(&t, &t.stacks, 0, 100, a, 3, kmin, 6, &s2) == ETW_OK);
    ETW_CHECK_INT(s1, s2);
    ETW_CHECK_INT(t.stacks.nodes[s1].depth, 3);
    ETW_CHECK_INT(t.frames[t.stacks.nodes[s1].frame].pid, ETW_PROFILE_KERNEL_PID);
    ETW_CHECK_INT(t.frames[t.stacks.nodes[t.stacks.nodes[s1].parent].frame].pid, 100);
    /* another process: the user frames are new, the kernel one is shared */
    ETW_CHECK(etw_stacktree_push_leaf_first(&t, &t.stacks, 0, 200, a, 3, kmin, 7, &s3) == ETW_OK);
    ETW_CHECK(s3 != s1);
    ETW_CHECK_INT(t.stacks.nodes[s3].frame, t.stacks.nodes[s1].frame);
    ETW_CHECK_INT(t.nframes, 5);
    ETW_CHECK_INT(t.stacks.n, 7);
    /* many distinct frames: the indexes grow and keep finding them */
    uint32_t first = 0, again = 0;
    for (uint64_t i = 0; i < 100000; i++) {
        uint32_t f;
        ETW_CHECK(etw_stacktree_frame(&t, 1, 0x10000 + i * 16, 0, &f) == ETW_OK);
        if (i == 0) first = f;
    }
    ETW_CHECK(etw_stacktree_frame(&t, 1, 0x10000, 0, &again) == ETW_OK);
    ETW_CHECK_INT(first, again);
    ETW_CHECK_INT(t.nframes, 100005);
    /* samples sum per (pid, tid, stack) */
    ETW_CHECK(etw_stacktree_sample(&t, 100, 7, s1, 1.0, 30) == ETW_OK);
    ETW_CHECK(etw_stacktree_sample(&t, 100, 7, s1, 2.0, 10) == ETW_OK);
    ETW_CHECK(etw_stacktree_sample(&t, 100, 8, s1, 1.0, 20) == ETW_OK);
    ETW_CHECK_INT(t.nsamples, 2);
    ETW_CHECK_INT(t.samples[0].count, 2);
    ETW_CHECK(t.samples[0].weight == 3.0);
    ETW_CHECK_INT(t.samples[0].first_time, 10);
    ETW_CHECK_INT(t.samples[0].last_time, 30);
    /* strings and process names */
    uint32_t x, y;
    ETW_CHECK(etw_stacktree_str(&t, "ntdll.dll", 9, &x) == ETW_OK);
    ETW_CHECK(etw_stacktree_str(&t, "ntdll.dll", 9, &y) == ETW_OK);
    ETW_CHECK_INT(x, y);
    ETW_CHECK(etw_stacktree_set_process(&t, 100, "Test.x64.exe", 12) == ETW_OK);
    size_t len;
    const char *nm = etw_stacktree_str_at(&t, etw_stacktree_process(&t, 100), &len);
    ETW_CHECK(nm && len == 12 && !memcmp(nm, "Test.x64.exe", 12));
    ETW_CHECK_INT(etw_stacktree_process(&t, 101), 0);
    etw_stacktree_free(&t);
}

/* Run a whole trace through a profile. leaf: LEAF_ONLY, and LEAF_IDS to
 * feed resolved events through etw_profile_add_ids with the decoder's ids. */
#define LEAF_ONLY 1
#define LEAF_IDS 2
static etw_profile *profile_trace_leaf(const char *name, int keep, int no_schema, int leaf, etw_decoder **dec_out) {
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", ETW_TEST_DATA_DIR, name);
    etw_reader_options ro;
    memset(&ro, 0, sizeof ro);
    etw_reader *r = NULL;
    if (etw_reader_open_file(&r, path, &ro) != ETW_OK) {
        ETW_CHECK(!"trace opens");
        return NULL;
    }
    etw_decoder_options dop;
    memset(&dop, 0, sizeof dop);
    etw_decoder *d = NULL;
    ETW_CHECK(etw_decoder_new(&d, &dop) == ETW_OK);
    etw_profile_options po;
    memset(&po, 0, sizeof po);
    po.decoder = d;
    po.keep_event_stacks = keep;
    po.leaf_only = (leaf & LEAF_ONLY) != 0;
    etw_profile *p = NULL;
    ETW_CHECK(etw_profile_new(&p, &po) == ETW_OK);
    const etw_event *ev;
    etw_status st;
    while ((st = etw_reader_next_ref(r, &ev)) == ETW_OK) {
        const etw_schema *s = NULL;
        if (etw_decoder_learns(d, ev, NULL)) etw_decoder_learn(d, ev);
        if (!no_schema) etw_decoder_resolve(d, ev, &s, NULL);
        etw_status a;
        if ((leaf & LEAF_IDS) && s && !ev->is_logfile_header) {
            uint32_t pid, tid;
            etw_decoder_event_ids(d, ev, s, &pid, &tid);
            a = etw_profile_add_ids(p, ev, s, pid, tid);
        } else {
            a = etw_profile_add(p, ev, s);
        }
        if (a != ETW_OK) {
            ETW_CHECK_INT(a, ETW_OK);
            break;
        }
    }
    ETW_CHECK_INT(st, ETW_END);
    ETW_CHECK(etw_profile_finish(p) == ETW_OK);
    etw_reader_close(r);
    *dec_out = d;
    return p;
}

static etw_profile *profile_trace_opt(const char *name, int keep, int no_schema, etw_decoder **dec_out) {
    return profile_trace_leaf(name, keep, no_schema, 0, dec_out);
}

static etw_profile *profile_trace(const char *name, int keep, etw_decoder **dec_out) {
    return profile_trace_opt(name, keep, 0, dec_out);
}

/* Events given without their schema (allowed): the profile resolves what
 * it needs and counts the same. */
static void test_net452_no_schema(void) {
    etw_decoder *d = NULL;
    etw_profile *p = profile_trace_opt("net.4.5.2.x64.etl", 0, 1, &d);
    if (!p) return;
    etw_profile_stats st;
    etw_profile_stats_get(p, &st);
    ETW_CHECK_INT(st.samples, 6320);
    ETW_CHECK_INT(st.keys_resolved, 9107);
    ETW_CHECK_INT(st.samples_with_stack, 6318);
    ETW_CHECK(st.frames_resolved * 1000 >= st.frames * 995);
    etw_profile_free(p);
    etw_decoder_free(d);
}

static uint64_t le(const uint8_t *d, unsigned n) {
    uint64_t v = 0;
    for (unsigned i = 0; i < n; i++) v |= (uint64_t)d[i] << (8 * i);
    return v;
}

static int guid_eq(const etw_guid *g, const char *text) {
    char buf[40];
    snprintf(buf, sizeof buf, "%08x-%04x-%04x-%02x%02x-%02x%02x%02x%02x%02x%02x", g->data1, g->data2, g->data3,
             g->data4[0], g->data4[1], g->data4[2], g->data4[3], g->data4[4], g->data4[5], g->data4[6],
             g->data4[7]);
    return !strcmp(buf, text);
}

static int frame_label_is(const etw_profile *p, uint32_t frame, const char *prefix) {
    etw_frame_info fi;
    if (etw_profile_frame(p, frame, &fi) != ETW_OK || !fi.function) return 0;
    size_t n = strlen(prefix);
    return fi.function_len >= n && !memcmp(fi.function, prefix, n);
}

/* net.4.5.2.x64.etl (PerfView's test trace: a .NET 4.5.2 program, Test.x64.exe,
 * sampled with kernel and user stacks, CLR stacks and the end rundown). The
 * expected numbers are PerfView's (the CPU sample COUNT of its baseline) and
 * the payload's own (InstructionPointer, FrameCount). */
static void test_net452(void) {
    etw_decoder *d = NULL;
    etw_profile *p = profile_trace("net.4.5.2.x64.etl", 1, &d);
    if (!p) return;
    etw_profile_stats st;
    etw_profile_stats_get(p, &st);
    fprintf(stderr,
            "net.4.5.2: events %llu stack_events %llu attached %llu orphaned %llu hdr %llu removed %llu clr %llu/%llu "
            "keyrefs %llu resolved %llu undefined %llu kcompleted %llu dropped %llu samples %llu with_stack %llu "
            "idle %llu frames %llu resolved %llu pending peak %llu mem %zu\n",
            (unsigned long long)st.events, (unsigned long long)st.stack_events,
            (unsigned long long)st.stacks_attached, (unsigned long long)st.stacks_orphaned,
            (unsigned long long)st.attached_by_header_thread, (unsigned long long)st.stacks_on_removed,
            (unsigned long long)st.clr_stacks, (unsigned long long)st.clr_stacks_attached,
            (unsigned long long)st.key_references, (unsigned long long)st.keys_resolved,
            (unsigned long long)st.keys_undefined, (unsigned long long)st.kernel_completed,
            (unsigned long long)st.pending_dropped, (unsigned long long)st.samples,
            (unsigned long long)st.samples_with_stack, (unsigned long long)st.idle_samples,
            (unsigned long long)st.frames, (unsigned long long)st.frames_resolved,
            (unsigned long long)st.pending_peak, st.memory_bytes);
    ETW_CHECK_INT(st.samples, 6320); /* PerfView's CPU sample count */
    ETW_CHECK_INT(st.idle_samples, 79528 - 6320);
    ETW_CHECK_INT(st.key_references, 2061 + 7046);
    ETW_CHECK_INT(st.keys_resolved, 9107);
    ETW_CHECK_INT(st.keys_undefined, 0);
    ETW_CHECK_INT(st.attached_by_header_thread, 16);
    ETW_CHECK_INT(st.clr_stacks, 14983);
    ETW_CHECK_INT(st.clr_stacks_attached, 14983);
    ETW_CHECK_INT(st.pending_dropped, 0);
    ETW_CHECK_INT(st.samples_with_stack, 6318);
    /* every stack event finds its event: all 9,359 kernel ones (below),
     * the 14,983 CLR ones and the 655 extended items. One StackKeyUser is
     * logged 405 ms (5,500 events) after the event it names, beyond the
     * 2,048-event window: it finds the event's kernel fragment waiting on
     * its thread (TraceLog drops it) */
    ETW_CHECK_INT(st.stacks_orphaned, 0);
    ETW_CHECK_INT(st.stacks_attached, st.stack_events);
    ETW_CHECK_INT(st.attached_after_window, 1);
    ETW_CHECK_INT(st.stack_events, 9359 + 14983 + 655);
    ETW_CHECK(st.frames_resolved * 1000 >= st.frames * 995);

    /* second pass: the events as the profile numbered them */
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", ETW_TEST_DATA_DIR, "net.4.5.2.x64.etl");
    etw_reader_options ro;
    memset(&ro, 0, sizeof ro);
    etw_reader *r = NULL;
    ETW_CHECK(etw_reader_open_file(&r, path, &ro) == ETW_OK);
    const etw_event *ev;
    uint64_t seq = 0, kernel_stacks = 0, samples = 0, ip_match = 0, clr_checked = 0, clr_ok = 0;
    enum { NT = 65536 };
    static uint64_t last_clr[NT]; /* per thread: seq + 1 of its last CLR event */
    memset(last_clr, 0, sizeof last_clr);
    while (r && etw_reader_next_ref(r, &ev) == ETW_OK) {
        uint64_t my = seq++;
        if (guid_eq(&ev->provider, "def2fe46-7bd6-4b80-bd94-f57fe20d0ce3") &&
            (ev->opcode == 32 || ev->opcode == 37 || ev->opcode == 38))
            kernel_stacks++;
        if (guid_eq(&ev->provider, "ce1dbfb4-137e-4da6-87b0-3f59aa102cbc") && ev->opcode == 46 &&
            ev->user_data_len >= 16) {
            uint32_t thread = (uint32_t)le(ev->user_data + 8, 4);
            if (thread == 0 && !(ev->user_data[14] & 3)) continue; /* idle */
            samples++;
            uint32_t stack = etw_profile_event_stack(p, my);
            if (stack && etw_profile_stack_frame(p, stack) != ETW_NO_ID) {
                etw_frame_info fi;
                if (etw_profile_frame(p, etw_profile_stack_frame(p, stack), &fi) == ETW_OK &&
                    fi.address == le(ev->user_data, 8))
                    ip_match++;
            }
        }
        int clr = guid_eq(&ev->provider, "e13c0d23-ccbc-4e12-931b-d9cc2eee27e4");
        if (clr && ev->tid < NT) {
            if (ev->id == 82 && ev->user_data_len >= 8) {
                uint32_t fc = (uint32_t)le(ev->user_data + 4, 4);
                unsigned ptr = ev->pointer_size;
                if (last_clr[ev->tid]) {
                    clr_checked++;
                    uint32_t stack = etw_profile_event_stack(p, last_clr[ev->tid] - 1);
                    etw_frame_info fi;
                    if (stack && etw_profile_stack_depth(p, stack) == fc &&
                        etw_profile_frame(p, etw_profile_stack_frame(p, stack), &fi) == ETW_OK &&
                        fi.address == le(ev->user_data + 8, ptr))
                        clr_ok++;
                }
            } else {
                last_clr[ev->tid] = my + 1;
            }
        }
    }
    etw_reader_close(r);
    ETW_CHECK_INT(seq, st.events);
    ETW_CHECK_INT(kernel_stacks, 9359);
    ETW_CHECK_INT(samples, 6320);
    ETW_CHECK(ip_match >= 6316);
    fprintf(stderr, "net.4.5.2: innermost frame == InstructionPointer: %llu of %llu; CLR stacks with FrameCount "
            "frames: %llu of %llu\n", (unsigned long long)ip_match, (unsigned long long)samples,
            (unsigned long long)clr_ok, (unsigned long long)clr_checked);
    ETW_CHECK_INT(clr_checked, 14983);
    ETW_CHECK_INT(clr_ok, clr_checked);

    /* the hot path of Test.x64.exe: its stack with the most samples (all
     * threads), and the frame most samples were in */
    uint32_t test_pid = ETW_NO_ID;
    for (size_t i = 0; i < etw_profile_sample_count(p); i++) {
        etw_profile_sample sm;
        etw_profile_sample_at(p, i, &sm);
        const char *nm;
        size_t nl;
        if (etw_profile_process_name(p, sm.pid, &nm, &nl) == ETW_OK && nl == 12 && !memcmp(nm, "Test.x64.exe", 12)) {
            test_pid = sm.pid;
            break;
        }
    }
    ETW_CHECK(test_pid != ETW_NO_ID);
    uint32_t n = etw_profile_stack_count(p) + 1;
    uint64_t *excl = calloc(n, sizeof *excl);
    uint64_t *byframe = calloc(etw_profile_frame_count(p) + 1, sizeof *byframe);
    uint32_t hot = 0, hot_frame = 0;
    if (excl && byframe) {
        for (size_t i = 0; i < etw_profile_sample_count(p); i++) {
            etw_profile_sample sm;
            etw_profile_sample_at(p, i, &sm);
            if (sm.pid != test_pid || !sm.stack) continue;
            excl[sm.stack] += sm.count;
            byframe[etw_profile_stack_frame(p, sm.stack)] += sm.count;
        }
        for (uint32_t sk = 1; sk < n; sk++)
            if (excl[sk] > excl[hot]) hot = sk;
        for (uint32_t f = 0; f < etw_profile_frame_count(p); f++)
            if (byframe[f] > byframe[hot_frame]) hot_frame = f;
    }
    ETW_CHECK(hot != 0);
    ETW_CHECK(frame_label_is(p, etw_profile_stack_frame(p, hot), "System.DateTime.GetDatePart("));
    ETW_CHECK(frame_label_is(p, hot_frame, "System.DateTime.GetDatePart("));
    /* and it runs down from Test.Program.Main */
    int via_main = 0;
    for (uint32_t sk = hot; sk; sk = etw_profile_stack_parent(p, sk))
        if (frame_label_is(p, etw_profile_stack_frame(p, sk), "Test.Program.Main(")) via_main = 1;
    ETW_CHECK(via_main);
    fprintf(stderr, "net.4.5.2: Test.x64.exe hottest stack: %llu samples, depth %u\n",
            (unsigned long long)(excl ? excl[hot] : 0), etw_profile_stack_depth(p, hot));
    free(excl);
    free(byframe);
    etw_profile_free(p);
    etw_decoder_free(d);
}

/* ---- hostile input ------------------------------------------------------ */

static const etw_guid G_STACKWALK = {0xdef2fe46u, 0x7bd6, 0x4b80, {0xbd, 0x94, 0xf5, 0x7f, 0xe2, 0x0d, 0x0c, 0xe3}};
static const etw_guid G_PERFINFO = {0xce1dbfb4u, 0x137e, 0x4da6, {0x87, 0xb0, 0x3f, 0x59, 0xaa, 0x10, 0x2c, 0xbc}};
static const etw_guid G_CLR = {0xe13c0d23u, 0xccbc, 0x4e12, {0x93, 0x1b, 0xd9, 0xcc, 0x2e, 0xee, 0x27, 0xe4}};

static void put(uint8_t *d, uint64_t v, unsigned n) {
    for (unsigned i = 0; i < n; i++) d[i] = (uint8_t)(v >> (8 * i));
}

typedef struct fake {
    etw_decoder *d;
    etw_profile *p;
    uint8_t buf[256];
} fake;

static void fake_open(fake *f, int keep) {
    memset(f, 0, sizeof *f);
    etw_decoder_options dop;
    memset(&dop, 0, sizeof dop);
    ETW_CHECK(etw_decoder_new(&f->d, &dop) == ETW_OK);
    etw_profile_options po;
    memset(&po, 0, sizeof po);
    po.decoder = f->d;
    po.keep_event_stacks = keep;
    ETW_CHECK(etw_profile_new(&f->p, &po) == ETW_OK);
}

static void fake_add(fake *f, etw_event *ev) {
    const etw_schema *s = NULL;
    etw_decoder_resolve(f->d, ev, &s, NULL);
    ETW_CHECK(etw_profile_add(f->p, ev, s) == ETW_OK);
}

static void fake_close(fake *f) {
    etw_profile_free(f->p);
    etw_decoder_free(f->d);
}

/* A CPU sample of thread tid at raw time t. */
static void add_sample(fake *f, int64_t t, uint32_t tid) {
    etw_event ev;
    memset(&ev, 0, sizeof ev);
    ev.form = ETW_FORM_PERFINFO;
    ev.flags = ETW_EVENT_FLAG_CLASSIC_HEADER | ETW_EVENT_FLAG_64_BIT_HEADER;
    ev.pointer_size = 8;
    ev.provider = G_PERFINFO;
    ev.opcode = 46;
    ev.version = 2;
    ev.pid = ev.tid = ETW_NO_ID;
    ev.raw_timestamp = t;
    ev.timestamp = 130000000000000000 + t;
    put(f->buf, 0x7FF700001234u, 8);
    put(f->buf + 8, tid, 4);
    put(f->buf + 12, 1, 2);
    put(f->buf + 14, 0, 2);
    ev.user_data = f->buf;
    ev.user_data_len = 16;
    fake_add(f, &ev);
}

/* StackKeyKernel (37) / StackKeyUser (38) naming the event at raw time t. */
static void add_key_ref(fake *f, int opcode, int64_t t, uint32_t pid, uint32_t tid, uint64_t key) {
    etw_event ev;
    memset(&ev, 0, sizeof ev);
    ev.form = ETW_FORM_SYSTEM;
    ev.flags = ETW_EVENT_FLAG_CLASSIC_HEADER | ETW_EVENT_FLAG_64_BIT_HEADER;
    ev.pointer_size = 8;
    ev.provider = G_STACKWALK;
    ev.opcode = (uint8_t)opcode;
    ev.version = 2;
    ev.pid = pid;
    ev.tid = tid;
    ev.raw_timestamp = t + 1;
    put(f->buf, (uint64_t)t, 8);
    put(f->buf + 8, pid, 4);
    put(f->buf + 12, tid, 4);
    put(f->buf + 16, key, 8);
    ev.user_data = f->buf;
    ev.user_data_len = 24;
    fake_add(f, &ev);
}

/* KeyDelete (35) defining key with n frames from base. */
static void add_key_def(fake *f, uint64_t key, uint64_t base, unsigned n) {
    etw_event ev;
    memset(&ev, 0, sizeof ev);
    ev.form = ETW_FORM_SYSTEM;
    ev.pointer_size = 8;
    ev.provider = G_STACKWALK;
    ev.opcode = 35;
    ev.version = 2;
    ev.pid = ev.tid = ETW_NO_ID;
    put(f->buf, key, 8);
    for (unsigned i = 0; i < n; i++) put(f->buf + 8 + 8 * i, base + 16 * i, 8);
    ev.user_data = f->buf;
    ev.user_data_len = 8 + 8 * n;
    fake_add(f, &ev);
}

/* Stack references to keys that are never defined: counted, the samples
 * kept without a stack, nothing left pending. */
static void test_undefined_keys(void) {
    fake f;
    fake_open(&f, 0);
    for (int i = 0; i < 3; i++) {
        add_sample(&f, 1000 + 10 * i, 700);
        add_key_ref(&f, 37, 1000 + 10 * i, 600, 700, 0xFFFFFA8000000000u + (uint64_t)i);
        add_key_ref(&f, 38, 1000 + 10 * i, 600, 700, 0xFFFFFA8000001000u + (uint64_t)i);
    }
    ETW_CHECK(etw_profile_finish(f.p) == ETW_OK);
    etw_profile_stats st;
    etw_profile_stats_get(f.p, &st);
    ETW_CHECK_INT(st.samples, 3);
    ETW_CHECK_INT(st.key_references, 6);
    ETW_CHECK_INT(st.keys_resolved, 0);
    ETW_CHECK_INT(st.keys_undefined, 6);
    ETW_CHECK_INT(st.samples_with_stack, 0);
    uint64_t total = 0;
    for (size_t i = 0; i < etw_profile_sample_count(f.p); i++) {
        etw_profile_sample sm;
        ETW_CHECK(etw_profile_sample_at(f.p, i, &sm) == ETW_OK);
        ETW_CHECK_INT(sm.stack, ETW_STACK_NONE);
        total += sm.count;
    }
    ETW_CHECK_INT(total, 3);
    ETW_CHECK_INT(f.p->att.live, 0);
    fake_close(&f);
}

/* A user key defined: the sample gets its frames, innermost first. */
static void test_defined_key(void) {
    fake f;
    fake_open(&f, 1);
    add_sample(&f, 5000, 701);
    add_key_ref(&f, 38, 5000, 600, 701, 0xFFFFFA8000002000u);
    add_key_def(&f, 0xFFFFFA8000002000u, 0x7FF700001000u, 4);
    ETW_CHECK(etw_profile_finish(f.p) == ETW_OK);
    etw_profile_stats st;
    etw_profile_stats_get(f.p, &st);
    ETW_CHECK_INT(st.keys_resolved, 1);
    ETW_CHECK_INT(st.samples_with_stack, 1);
    uint32_t s = etw_profile_event_stack(f.p, 0);
    ETW_CHECK_INT(etw_profile_stack_depth(f.p, s), 4);
    etw_frame_info fi;
    ETW_CHECK(etw_profile_frame(f.p, etw_profile_stack_frame(f.p, s), &fi) == ETW_OK);
    ETW_CHECK(fi.address == 0x7FF700001000u);
    ETW_CHECK_INT(fi.pid, 600);
    ETW_CHECK_INT(fi.kind, ETW_FRAME_ADDRESS);
    fake_close(&f);
}

/* A sample's kernel half by key, its user half by key 2,100 events later
 * (beyond the window): the user key still finds the kernel fragment waiting
 * on the thread; once both keys are defined the stack is the user frames
 * (root side) with the kernel frames on the leaf side. */
static void test_user_half_after_window(void) {
    fake f;
    fake_open(&f, 1);
    add_sample(&f, 3000, 702); /* seq 0 */
    add_key_ref(&f, 37, 3000, 600, 702, 0xFFFFFA8000003000u);
    for (int i = 0; i < 2100; i++) add_sample(&f, 4000 + 2 * i, 703);
    add_key_ref(&f, 38, 3000, 600, 702, 0xFFFFFA8000004000u);
    add_key_def(&f, 0xFFFFFA8000004000u, 0x7FF700001000u, 2);     /* user: 2 frames */
    add_key_def(&f, 0xFFFFFA8000003000u, 0xFFFFF80000001000u, 3); /* kernel: 3 frames */
    ETW_CHECK(etw_profile_finish(f.p) == ETW_OK);
    etw_profile_stats st;
    etw_profile_stats_get(f.p, &st);
    ETW_CHECK_INT(st.stacks_orphaned, 0);
    ETW_CHECK_INT(st.attached_after_window, 1);
    ETW_CHECK_INT(st.keys_resolved, 2);
    ETW_CHECK_INT(st.kernel_completed, 1);
    uint32_t s = etw_profile_event_stack(f.p, 0);
    ETW_CHECK_INT(etw_profile_stack_depth(f.p, s), 5);
    uint64_t want[5] = {0xFFFFF80000001000u, 0xFFFFF80000001010u, 0xFFFFF80000001020u, 0x7FF700001000u,
                        0x7FF700001010u}; /* innermost first */
    for (int i = 0; i < 5 && s; i++, s = etw_profile_stack_parent(f.p, s)) {
        etw_frame_info fi;
        ETW_CHECK(etw_profile_frame(f.p, etw_profile_stack_frame(f.p, s), &fi) == ETW_OK);
        ETW_CHECK(fi.address == want[i]);
        ETW_CHECK_INT(fi.pid, i < 3 ? ETW_PROFILE_KERNEL_PID : 600);
    }
    fake_close(&f);
}

/* More pending stacks than the bound: the oldest are dropped and counted,
 * their samples still counted (without a stack); memory stays bounded. */
static void test_pending_bound(void) {
    fake f;
    fake_open(&f, 0);
    f.p->att.max_pending = 8;
    for (int i = 0; i < 100; i++) {
        add_sample(&f, 20000 + 10 * i, 800);
        add_key_ref(&f, 38, 20000 + 10 * i, 600, 800, 0x10000u + (uint64_t)i);
        ETW_CHECK(f.p->att.live <= 8);
    }
    /* a definition for a dropped key finds nobody waiting */
    add_key_def(&f, 0x10000u, 0x7FF700001000u, 3);
    ETW_CHECK(f.p->att.npends <= 8);
    ETW_CHECK(etw_profile_finish(f.p) == ETW_OK);
    etw_profile_stats st;
    etw_profile_stats_get(f.p, &st);
    ETW_CHECK_INT(st.pending_dropped, 92);
    ETW_CHECK_INT(st.samples, 100);
    uint64_t total = 0;
    for (size_t i = 0; i < etw_profile_sample_count(f.p); i++) {
        etw_profile_sample sm;
        etw_profile_sample_at(f.p, i, &sm);
        total += sm.count;
    }
    ETW_CHECK_INT(total, 100);
    fake_close(&f);
}

/* ClrStack/Walk claiming 4 billion frames with 3 in its payload: 3 taken. */
static void test_clr_frame_count_claim(void) {
    fake f;
    fake_open(&f, 1);
    etw_event ev;
    memset(&ev, 0, sizeof ev);
    ev.form = ETW_FORM_EVENT_HEADER;
    ev.flags = ETW_EVENT_FLAG_64_BIT_HEADER;
    ev.pointer_size = 8;
    ev.provider = G_CLR;
    ev.id = 80; /* ExceptionThrown: any CLR event */
    ev.opcode = 1;
    ev.pid = 900;
    ev.tid = 901;
    ev.raw_timestamp = 100;
    ev.user_data = f.buf;
    ev.user_data_len = 0;
    fake_add(&f, &ev);
    ev.id = 82;
    ev.opcode = 82;
    ev.task = 11;
    ev.raw_timestamp = 101;
    put(f.buf, 9, 2);
    f.buf[2] = f.buf[3] = 0;
    put(f.buf + 4, 0xFFFFFFFFu, 4);
    for (int i = 0; i < 3; i++) put(f.buf + 8 + 8 * i, 0x7FF800000000u + (uint64_t)i, 8);
    ev.user_data_len = 8 + 24;
    fake_add(&f, &ev);
    ev.user_data_len = 5; /* and one too short to hold its count */
    fake_add(&f, &ev);
    ETW_CHECK(etw_profile_finish(f.p) == ETW_OK);
    etw_profile_stats st;
    etw_profile_stats_get(f.p, &st);
    ETW_CHECK_INT(st.clr_stacks, 2);
    ETW_CHECK_INT(st.clr_frames_cut, 1);
    uint32_t s = etw_profile_event_stack(f.p, 0);
    ETW_CHECK_INT(etw_profile_stack_depth(f.p, s), 3);
    fake_close(&f);
}

static const etw_guid G_IMAGE = {0x2cb15d1du, 0x5fc1, 0x11d2, {0xab, 0xe1, 0x00, 0xa0, 0xc9, 0x11, 0xf5, 0x18}};
static const etw_guid G_KTC = {0xb3e675d7u, 0x2554, 0x4f18, {0x83, 0x0b, 0x27, 0x62, 0x73, 0x25, 0x60, 0xde}};

static size_t put_wstr(uint8_t *d, const char *s) {
    size_t n = 0;
    for (; *s; s++, n += 2) put(d + n, (uint8_t)*s, 2);
    put(d + n, 0, 2);
    return n + 2;
}

/* An image whose DbgID_RSDS names tests/data/CppCon.pdb (its GUID and age
 * as llvm-pdbutil prints them): a frame at main+5 is named "main" + 5, with
 * the symbol path a flat folder holding the PDB. */
static void test_pdb_frames(void) {
    fake f;
    memset(&f, 0, sizeof f);
    etw_decoder_options dop;
    memset(&dop, 0, sizeof dop);
    ETW_CHECK(etw_decoder_new(&f.d, &dop) == ETW_OK);
    const char *paths[] = {"/nonexistent-store", ETW_TEST_DATA_DIR};
    etw_profile_options po;
    memset(&po, 0, sizeof po);
    po.decoder = f.d;
    po.keep_event_stacks = 1;
    po.symbol_paths = paths;
    po.nsymbol_paths = 2;
    ETW_CHECK(etw_profile_new(&f.p, &po) == ETW_OK);
    const uint64_t base = 0x140000000u;

    etw_event ev;
    memset(&ev, 0, sizeof ev);
    ev.form = ETW_FORM_FULL;
    ev.flags = ETW_EVENT_FLAG_CLASSIC_HEADER | ETW_EVENT_FLAG_64_BIT_HEADER;
    ev.pointer_size = 8;
    ev.provider = G_KTC;
    ev.opcode = 36;
    ev.version = 2;
    ev.pid = 600;
    ev.tid = 700;
    ev.raw_timestamp = 50;
    static const uint8_t guid[16] = {0x4f, 0x0a, 0xdc, 0x12, 0x7d, 0xbd, 0x2a, 0x4f,
                                     0xa9, 0xbe, 0x26, 0x3b, 0xac, 0xae, 0xb4, 0x67};
    put(f.buf, base, 8);
    put(f.buf + 8, 600, 4);
    memcpy(f.buf + 12, guid, 16);
    put(f.buf + 28, 5, 4);
    const char *pdb = "C:\\PerfViewTestData\\CppCon\\Release\\CppCon.pdb";
    memcpy(f.buf + 32, pdb, strlen(pdb) + 1);
    ev.user_data = f.buf;
    ev.user_data_len = (uint32_t)(32 + strlen(pdb) + 1);
    fake_add(&f, &ev);

    memset(&ev, 0, sizeof ev);
    ev.form = ETW_FORM_SYSTEM;
    ev.flags = ETW_EVENT_FLAG_CLASSIC_HEADER | ETW_EVENT_FLAG_64_BIT_HEADER;
    ev.pointer_size = 8;
    ev.provider = G_IMAGE;
    ev.opcode = 10;
    ev.version = 2;
    ev.pid = 600;
    ev.tid = 700;
    ev.raw_timestamp = 50;
    memset(f.buf, 0, sizeof f.buf);
    put(f.buf, base, 8);
    put(f.buf + 8, 0x10000, 8);
    put(f.buf + 16, 600, 4);
    size_t n = 56 + put_wstr(f.buf + 56, "\\Device\\HarddiskVolume2\\x\\CppCon.exe");
    ev.user_data = f.buf;
    ev.user_data_len = (uint32_t)n;
    fake_add(&f, &ev);

    add_sample(&f, 100, 700);
    memset(&ev, 0, sizeof ev);
    ev.form = ETW_FORM_SYSTEM;
    ev.pointer_size = 8;
    ev.provider = G_STACKWALK;
    ev.opcode = 32;
    ev.version = 2;
    ev.pid = 600;
    ev.tid = 700;
    ev.raw_timestamp = 101;
    put(f.buf, 100, 8);
    put(f.buf + 8, 600, 4);
    put(f.buf + 12, 700, 4);
    put(f.buf + 16, base + 0x1005, 8);        /* main + 5 */
    put(f.buf + 24, base + 0x1000 + 746 + 13, 8); /* __security_check_cookie + 13 */
    put(f.buf + 32, 0x7FF700002000u, 8);      /* in no image */
    ev.user_data = f.buf;
    ev.user_data_len = 40;
    fake_add(&f, &ev);
    ETW_CHECK(etw_profile_finish(f.p) == ETW_OK);

    etw_profile_stats st;
    etw_profile_stats_get(f.p, &st);
    ETW_CHECK_INT(st.pdbs_loaded, 1);
    ETW_CHECK_INT(st.samples_with_stack, 1);
    uint32_t s = etw_profile_event_stack(f.p, 2);
    ETW_CHECK_INT(etw_profile_stack_depth(f.p, s), 3);
    etw_frame_info fi;
    ETW_CHECK(etw_profile_frame(f.p, etw_profile_stack_frame(f.p, s), &fi) == ETW_OK);
    ETW_CHECK_INT(fi.kind, ETW_FRAME_PDB);
    ETW_CHECK(fi.function && fi.function_len == 4 && !memcmp(fi.function, "main", 4));
    ETW_CHECK(fi.module && fi.module_len == 10 && !memcmp(fi.module, "CppCon.exe", 10));
    ETW_CHECK_INT(fi.offset, 5);
    s = etw_profile_stack_parent(f.p, s);
    ETW_CHECK(etw_profile_frame(f.p, etw_profile_stack_frame(f.p, s), &fi) == ETW_OK);
    ETW_CHECK_INT(fi.kind, ETW_FRAME_PDB);
    ETW_CHECK(fi.function && fi.function_len == 23 && !memcmp(fi.function, "__security_check_cookie", 23));
    ETW_CHECK_INT(fi.offset, 13);
    s = etw_profile_stack_parent(f.p, s);
    ETW_CHECK(etw_profile_frame(f.p, etw_profile_stack_frame(f.p, s), &fi) == ETW_OK);
    ETW_CHECK_INT(fi.kind, ETW_FRAME_ADDRESS);
    ETW_CHECK(fi.address == 0x7FF700002000u);
    fake_close(&f);
}

/* A CLR MethodLoadVerbose (V1) or rundown MethodDCEndVerbose at raw time t:
 * MethodID, ModuleID, MethodStartAddress, MethodSize, MethodToken,
 * MethodFlags, MethodNamespace, MethodName, MethodSignature,
 * ClrInstanceID; cut: the payload ends that many bytes early. */
static const etw_guid G_CLR_RUNDOWN = {0xa669021cu, 0xc450, 0x4609, {0xa0, 0x35, 0x5a, 0xf5, 0x9a, 0xf4, 0xdf, 0x18}};
static void add_method(fake *f, int rundown_end, int64_t t, uint64_t start, uint32_t size, uint32_t flags,
                       const char *ns, const char *name, const char *sig, size_t cut) {
    etw_event ev;
    memset(&ev, 0, sizeof ev);
    ev.form = ETW_FORM_EVENT_HEADER;
    ev.flags = ETW_EVENT_FLAG_64_BIT_HEADER;
    ev.pointer_size = 8;
    ev.provider = rundown_end ? G_CLR_RUNDOWN : G_CLR;
    ev.id = rundown_end ? 144 : 143;
    ev.version = 1;
    ev.opcode = rundown_end ? 40 : 37;
    ev.task = rundown_end ? 1 : 9;
    ev.pid = 900;
    ev.tid = 901;
    ev.raw_timestamp = t;
    put(f->buf, 1, 8);
    put(f->buf + 8, 2, 8);
    put(f->buf + 16, start, 8);
    put(f->buf + 24, size, 4);
    put(f->buf + 28, 0x06000001u, 4);
    put(f->buf + 32, flags, 4);
    size_t n = 36;
    n += put_wstr(f->buf + n, ns);
    n += put_wstr(f->buf + n, name);
    n += put_wstr(f->buf + n, sig);
    put(f->buf + n, 9, 2);
    n += 2;
    ev.user_data = f->buf;
    ev.user_data_len = (uint32_t)(n - cut);
    fake_add(f, &ev);
}

/* The label of the frame at (pid 900, address) after finish. */
static void check_method_frame(const etw_profile *p, uint32_t frame, const char *want) {
    etw_frame_info fi;
    ETW_CHECK(etw_profile_frame(p, frame, &fi) == ETW_OK);
    char buf[256];
    etw_frame_label(&fi, buf, sizeof buf);
    ETW_CHECK_STR(buf, want);
}

/* JIT method names: read at fixed offsets and made only when a frame falls
 * in the method, or decoded when the payload is not what the layout says
 * (a string the payload ends in); a rundown's end keeps the load's name. */
static void test_method_names(void) {
    fake f;
    fake_open(&f, 0);
    add_method(&f, 0, 10, 0x10000, 0x100, 8, "NS", "Meth", "void  (int32,bool)", 0);
    add_method(&f, 0, 11, 0x20000, 0x100, 8, "NS", "Cut", "void  (int32)", 6); /* ends inside "(int32)" */
    add_method(&f, 0, 12, 0x30000, 0x100, 0, "NS", "NotJitted", "void  ()", 0);
    add_method(&f, 0, 13, 0x40000, 0x100, 8, "A.B", "Never", "void  ()", 0); /* no frame in it */
    add_method(&f, 1, 14, 0x10000, 0x100, 8, "Other", "Name", "void  ()", 0); /* its load's name stays */
    add_method(&f, 1, 15, 0x50000, 0x100, 8, "R", "Down", "int32  (class X)", 0); /* loaded before */
    etw_stacktree *t = &f.p->tree;
    uint32_t fr[4];
    ETW_CHECK(etw_stacktree_frame(t, 900, 0x10010, 20, &fr[0]) == ETW_OK);
    ETW_CHECK(etw_stacktree_frame(t, 900, 0x20020, 20, &fr[1]) == ETW_OK);
    ETW_CHECK(etw_stacktree_frame(t, 900, 0x30030, 20, &fr[2]) == ETW_OK);
    ETW_CHECK(etw_stacktree_frame(t, 900, 0x50000, 20, &fr[3]) == ETW_OK);
    ETW_CHECK_INT(f.p->sym.methods.n, 4);
    ETW_CHECK_INT(f.p->sym.ndefers, 4); /* the loads (the cut one decoded) and the rundown's own */
    ETW_CHECK(etw_profile_finish(f.p) == ETW_OK);
    check_method_frame(f.p, fr[0], "NS.Meth(int32,bool)");
    check_method_frame(f.p, fr[1], "NS.Cut(int32"); /* the decode's: the string to the end */
    check_method_frame(f.p, fr[2], "0x30030");
    check_method_frame(f.p, fr[3], "R.Down(class X)");
    etw_frame_info fi;
    ETW_CHECK(etw_profile_frame(f.p, fr[0], &fi) == ETW_OK);
    ETW_CHECK(fi.kind == ETW_FRAME_JIT && fi.offset == 0x10);
    /* the method no frame fell in was never named */
    for (size_t i = 0; i < f.p->sym.methods.n; i++)
        if (f.p->sym.methods.v[i].base == 0x40000) ETW_CHECK(f.p->sym.methods.v[i].name == 0);
    fake_close(&f);
}

/* The samples of a profile summed per (pid, tid, innermost frame), in the
 * order each was first seen: what a leaf_only profile keeps. */
typedef struct leaf_sum {
    uint32_t pid, tid, fpid, kind;
    uint64_t address, count;
    double weight;
    int64_t first, last;
    char label[256];
} leaf_sum;

static size_t leaf_sums(const etw_profile *p, leaf_sum **out) {
    size_t ns = etw_profile_sample_count(p), n = 0;
    leaf_sum *v = calloc(ns ? ns : 1, sizeof *v);
    ETW_CHECK(v != NULL);
    for (size_t i = 0; v && i < ns; i++) {
        etw_profile_sample sm;
        ETW_CHECK(etw_profile_sample_at(p, i, &sm) == ETW_OK);
        leaf_sum k;
        memset(&k, 0, sizeof k);
        k.pid = sm.pid;
        k.tid = sm.tid;
        k.kind = 99; /* no stack */
        if (sm.stack != ETW_STACK_NONE) {
            etw_frame_info fi;
            ETW_CHECK(etw_profile_frame(p, etw_profile_stack_frame(p, sm.stack), &fi) == ETW_OK);
            k.fpid = fi.pid;
            k.kind = (uint32_t)fi.kind;
            k.address = fi.address;
            etw_frame_label(&fi, k.label, sizeof k.label);
        }
        size_t j = 0;
        while (j < n && (v[j].pid != k.pid || v[j].tid != k.tid || v[j].fpid != k.fpid || v[j].kind != k.kind ||
                         v[j].address != k.address || strcmp(v[j].label, k.label)))
            j++;
        if (j == n) {
            v[n++] = k;
            v[j].first = sm.first_time;
            v[j].last = sm.last_time;
        }
        v[j].count += sm.count;
        v[j].weight += sm.weight;
        if (sm.first_time < v[j].first) v[j].first = sm.first_time;
        if (sm.last_time > v[j].last) v[j].last = sm.last_time;
    }
    *out = v;
    return n;
}

/* leaf_only (etwdump --stats) against the whole stacks, on every trace of
 * tests/data: the same samples by innermost frame, resolved the same, in
 * the same order, and the same counts of samples and stacks attached. */
static void test_leaf_only_agrees(void) {
    static const char *const traces[] = {"net.4.5.2.x64.etl",      "gcevents.etl",   "lxcore_kernel.etl",
                                         "ShutdownPerfDiagLogger.etl", "AMSITrace.etl", "powershell.etl",
                                         "HTTP_Server.etl",        "BondEtwSample.etl", "smallEtlFile.etl",
                                         "primitive-types.etl",    "SelfDescribingSingleEvent.etl"};
    int stacked = 0;
    for (size_t t = 0; t < sizeof traces / sizeof traces[0]; t++) {
        etw_decoder *d1 = NULL, *d2 = NULL;
        etw_profile *full = profile_trace_leaf(traces[t], 0, 0, 0, &d1);
        etw_profile *leaf = profile_trace_leaf(traces[t], 0, 0, LEAF_ONLY, &d2);
        /* the ids given (as etwdump --stats gives its labels' ids) */
        etw_decoder *d3 = NULL;
        etw_profile *given = profile_trace_leaf(traces[t], 0, 0, LEAF_ONLY | LEAF_IDS, &d3);
        if (full && leaf && given) {
            etw_profile_stats a, b;
            etw_profile_stats_get(full, &a);
            etw_profile_stats_get(leaf, &b);
            ETW_CHECK_INT(a.samples, b.samples);
            ETW_CHECK_INT(a.samples_with_stack, b.samples_with_stack);
            ETW_CHECK_INT(a.stacks_attached, b.stacks_attached);
            ETW_CHECK_INT(a.kernel_completed, b.kernel_completed);
            if (a.samples_with_stack) stacked++;
            leaf_sum *x = NULL, *y = NULL, *z = NULL;
            size_t nx = leaf_sums(full, &x), ny = leaf_sums(leaf, &y), nz = leaf_sums(given, &z);
            ETW_CHECK_INT(nx, ny);
            ETW_CHECK_INT(ny, nz);
            for (size_t i = 0; y && z && i < ny && i < nz; i++) {
                ETW_CHECK_INT(y[i].pid, z[i].pid);
                ETW_CHECK_INT(y[i].tid, z[i].tid);
                ETW_CHECK(y[i].address == z[i].address);
                ETW_CHECK_STR(y[i].label, z[i].label);
                ETW_CHECK_INT(y[i].count, z[i].count);
            }
            free(z);
            ETW_CHECK_INT(ny, etw_profile_sample_count(leaf)); /* already one per innermost frame */
            for (size_t i = 0; x && y && i < nx && i < ny; i++) {
                ETW_CHECK_INT(x[i].pid, y[i].pid);
                ETW_CHECK_INT(x[i].tid, y[i].tid);
                ETW_CHECK_INT(x[i].kind, y[i].kind);
                ETW_CHECK(x[i].address == y[i].address);
                ETW_CHECK_STR(x[i].label, y[i].label);
                ETW_CHECK_INT(x[i].count, y[i].count);
                ETW_CHECK(x[i].weight == y[i].weight);
                ETW_CHECK(x[i].first == y[i].first && x[i].last == y[i].last);
            }
            for (uint32_t s = 1; s <= etw_profile_stack_count(leaf); s++)
                ETW_CHECK_INT(etw_profile_stack_depth(leaf, s), 1);
            free(x);
            free(y);
        }
        etw_profile_free(full);
        etw_profile_free(leaf);
        etw_profile_free(given);
        etw_decoder_free(d1);
        etw_decoder_free(d2);
        etw_decoder_free(d3);
    }
    ETW_CHECK(stacked >= 1); /* net.4.5.2 at least */
}

int main(void) {
    ETW_RUN(test_tree_interning);
    ETW_RUN(test_net452);
    ETW_RUN(test_net452_no_schema);
    ETW_RUN(test_undefined_keys);
    ETW_RUN(test_defined_key);
    ETW_RUN(test_user_half_after_window);
    ETW_RUN(test_pending_bound);
    ETW_RUN(test_clr_frame_count_claim);
    ETW_RUN(test_pdb_frames);
    ETW_RUN(test_leaf_only_agrees);
    ETW_RUN(test_method_names);
    return ETW_TEST_DONE();
}
