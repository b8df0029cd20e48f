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

/* Run a whole trace through a profile. */
static etw_profile *profile_trace(const char *name, int keep, etw_decoder **dec_out) {
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
    etw_profile *p = NULL;
    ETW_CHECK(etw_profile_new(&p, &po) == ETW_OK);
    const etw_event *ev;
    etw_status st;
    while ((st = etw_reader_next_ref(r, &ev)) == ETW_OK) {
        const etw_schema *s = NULL;
        if (etw_decoder_learns(d, ev, NULL)) etw_decoder_learn(d, ev);
        etw_decoder_resolve(d, ev, &s, NULL);
        etw_status a = etw_profile_add(p, ev, s);
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

static void test_net452(void) {
    etw_decoder *d = NULL;
    etw_profile *p = profile_trace("net.4.5.2.x64.etl", 0, &d);
    if (!p) return;
    etw_profile_stats st;
    etw_profile_stats_get(p, &st);
    fprintf(stderr,
            "events %llu stack_events %llu attached %llu orphaned %llu hdr %llu removed %llu clr %llu/%llu "
            "keyrefs %llu resolved %llu undefined %llu kcompleted %llu dropped %llu samples %llu with_stack %llu "
            "idle %llu frames %llu resolved %llu mem %zu\n",
            (unsigned long long)st.events, (unsigned long long)st.stack_events,
            (unsigned long long)st.stacks_attached, (unsigned long long)st.stacks_orphaned,
            (unsigned long long)st.attached_by_header_thread, (unsigned long long)st.stacks_on_removed,
            (unsigned long long)st.clr_stacks, (unsigned long long)st.clr_stacks_attached,
            (unsigned long long)st.key_references, (unsigned long long)st.keys_resolved,
            (unsigned long long)st.keys_undefined, (unsigned long long)st.kernel_completed,
            (unsigned long long)st.pending_dropped, (unsigned long long)st.samples,
            (unsigned long long)st.samples_with_stack, (unsigned long long)st.idle_samples,
            (unsigned long long)st.frames, (unsigned long long)st.frames_resolved, st.memory_bytes);
    etw_profile_free(p);
    etw_decoder_free(d);
}

int main(void) {
    ETW_RUN(test_tree_interning);
    ETW_RUN(test_net452);
    return ETW_TEST_DONE();
}
