/* etw_profile.c - the profile object: creation, which events it reads (a
 * cheap look at the provider and opcode first), the end of the trace,
 * statistics. */
#include "profile/etw_profile_internal.h"

#include <string.h>

#include "common/etw_alloc.h"
#include "common/etw_bytes.h"

static int guid_is(const etw_guid *g, uint32_t d1, uint16_t d2, uint16_t d3, uint64_t d4) {
    if (g->data1 != d1 || g->data2 != d2 || g->data3 != d3) return 0;
    for (int i = 0; i < 8; i++)
        if (g->data4[i] != (uint8_t)(d4 >> (56 - 8 * i))) return 0;
    return 1;
}

/* Kernel classes and providers the profile reads. */
#define G_STACKWALK 0xdef2fe46u, 0x7bd6, 0x4b80, 0xbd94f57fe20d0ce3ull
#define G_PERFINFO 0xce1dbfb4u, 0x137e, 0x4da6, 0x87b03f59aa102cbcull
#define G_PROCESS 0x3d6fa8d0u, 0xfe05, 0x11d0, 0x9dda00c04fd7ba7cull
#define G_THREAD 0x3d6fa8d1u, 0xfe05, 0x11d0, 0x9dda00c04fd7ba7cull
#define G_DISKIO 0x3d6fa8d4u, 0xfe05, 0x11d0, 0x9dda00c04fd7ba7cull
#define G_IMAGE 0x2cb15d1du, 0x5fc1, 0x11d2, 0xabe100a0c911f518ull
#define G_KTC 0xb3e675d7u, 0x2554, 0x4f18, 0x830b2762732560deull
#define G_CLR 0xe13c0d23u, 0xccbc, 0x4e12, 0x931bd9cc2eee27e4ull
#define G_CLR_RUNDOWN 0xa669021cu, 0xc450, 0x4609, 0xa0355af59af4df18ull
#define G_CLR_PRIVATE 0x763fd754u, 0x7086, 0x4dfe, 0x95ebc01a46faf4caull
#define G_KERNEL_PROCESS 0x22fb2cd6u, 0x0e7b, 0x422b, 0xa0c72fad1fd0e716ull
#define G_EVENTTRACING 0xb675ec37u, 0xbdb6, 0x4648, 0xbc92f3fdc74d3ca2ull

void etw_profile_diag(etw_profile *p, etw_status st, const char *msg) {
    if (!p->opt.on_diag) return;
    etw_diag d;
    memset(&d, 0, sizeof d);
    d.status = st;
    d.message = msg;
    p->opt.on_diag(p->opt.diag_ctx, &d);
}

etw_status etw_profile_new(etw_profile **out, const etw_profile_options *opt) {
    if (!out) return ETW_E_INVALID_ARG;
    *out = NULL;
    if (!opt || !opt->decoder) return ETW_E_INVALID_ARG;
    etw_allocator a = etw_allocator_resolve(opt->allocator);
    etw_profile *p = etw_calloc(&a, 1, sizeof *p);
    if (!p) return ETW_E_NOMEM;
    p->alloc = a;
    p->opt = *opt;
    p->opt.allocator = NULL; /* p->alloc holds it */
    etw_status st = etw_stacktree_init(&p->tree, &a);
    p->tree.leaf_only = opt->leaf_only != 0;
    if (st == ETW_OK) st = etw_attach_init(p);
    if (st == ETW_OK) st = etw_symbols_init(p);
    if (st != ETW_OK) {
        etw_profile_free(p);
        return st;
    }
    *out = p;
    return ETW_OK;
}

void etw_profile_free(etw_profile *p) {
    if (!p) return;
    etw_allocator a = p->alloc;
    etw_symbols_free(p);
    etw_attach_free(p);
    etw_stacktree_free(&p->tree);
    etw_free(&a, p);
}

/* PerfView's idle filter: a PerfInfo/Sample of thread 0 that is not
 * "NonProcess" (DPC/ISR time: the low bits of the byte at ptr+6) is idle. */
static int is_idle_sample(const etw_event *ev) {
    unsigned ptr = ev->pointer_size == 4 ? 4 : 8;
    if (ev->user_data_len < ptr + 7) return 0;
    uint32_t thread = etw_le32(ev->user_data + ptr);
    int non_process = (ev->user_data[ptr + 6] & 3) != 0;
    return thread == 0 && !non_process;
}

/* etw_profile_add; ids: the event's process and thread ids as
 * etw_decoder_event_ids gives them for ev and s, or NULL to get them here. */
static etw_status profile_add(etw_profile *p, const etw_event *ev, const etw_schema *s, const uint32_t *ids) {
    if (!p || !ev) return ETW_E_INVALID_ARG;
    if (p->finished) return ETW_E_INVALID_ARG;
    uint64_t seq = p->stats.events++;
    const etw_guid *g = &ev->provider;
    int kernel = ev->form != ETW_FORM_EVENT_HEADER;

    /* stack events: never targets themselves */
    if (kernel && guid_is(g, G_STACKWALK)) return etw_attach_stackwalk(p, ev);
    /* symbol events share the Image event's time and thread: never targets
     * (classic MOF events of the merge, or EVENT_HEADER ones) */
    if (guid_is(g, G_KTC)) return etw_symbols_event(p, ev, s, 1);
    /* the ids of kernel events come from their payloads: the schema is
     * needed (resolved here when the caller did not) */
    uint32_t pid, tid;
    if (ids) {
        pid = ids[0];
        tid = ids[1];
    } else {
        if (!s && kernel) etw_decoder_resolve(p->opt.decoder, ev, &s, NULL);
        etw_decoder_event_ids(p->opt.decoder, ev, s, &pid, &tid);
    }
    int is_clr = 0;
    if (!kernel && (guid_is(g, G_CLR) || guid_is(g, G_CLR_PRIVATE))) {
        is_clr = 1;
        if ((ev->id == 82 || ev->id == 151) && ev->opcode == 82) return etw_attach_clrstack(p, ev, pid, tid);
    }

    etw_ring_ent e;
    memset(&e, 0, sizeof e);
    e.qpc = ev->raw_timestamp;
    e.seq = seq;
    e.time = ev->timestamp;
    e.tid = tid;
    e.pid = pid;
    e.sample_tid = tid;
    e.cpu = ev->cpu;
    e.flags = ETW_RING_VALID;
    if (is_clr) e.flags |= ETW_RING_CLR;
    int in_ring = 1, user_exit = 0, perfinfo_sample = 0;
    if (kernel) {
        if (guid_is(g, G_PROCESS) || (guid_is(g, G_THREAD) && ev->opcode == 1)) {
            /* TraceEvent's ThreadIDforStacks: the thread that logged it */
            e.tid = ev->tid;
            if (e.tid != tid) e.flags |= ETW_RING_HDR_THREAD;
        } else if (guid_is(g, G_DISKIO) && (ev->opcode == 10 || ev->opcode == 11)) {
            in_ring = 0; /* completions never have stacks; their *Init do */
        } else if (ev->opcode == 46 && guid_is(g, G_PERFINFO)) {
            perfinfo_sample = 1;
            if (is_idle_sample(ev)) {
                e.flags &= (uint8_t)~ETW_RING_VALID;
                p->stats.idle_samples++;
            }
        }
    } else if (ev->id == 18 && ev->opcode == 24 && guid_is(g, G_EVENTTRACING)) {
        in_ring = 0;
        user_exit = 1;
    }

    if (e.flags & ETW_RING_VALID) {
        double w = 1.0;
        int sample;
        if (p->opt.is_sample) sample = p->opt.is_sample(p->opt.sample_ctx, ev, s, pid, tid, &w);
        else sample = perfinfo_sample;
        if (sample) {
            e.flags |= ETW_RING_SAMPLE;
            e.weight = w;
            p->stats.samples++;
        }
    }
    etw_status st = ETW_OK;
    uint32_t slot = ETW_NO_ID;
    if (in_ring) {
        slot = etw_attach_push(p, &e);
    }
    if (ev->ext_count) {
        st = etw_attach_ext(p, ev, slot, &e, pid, in_ring ? e.tid : tid, user_exit);
        if (st != ETW_OK) return st;
    }
    if (!in_ring && (e.flags & ETW_RING_SAMPLE) && !user_exit) {
        st = etw_attach_deliver_now(p, seq, pid, tid, e.weight, e.time);
        if (st != ETW_OK) return st;
    }
    /* what names frames and processes */
    if (kernel ? (guid_is(g, G_IMAGE) || guid_is(g, G_PROCESS))
               : (is_clr || guid_is(g, G_CLR_RUNDOWN)))
        st = etw_symbols_event(p, ev, s, 0);
    else if (!kernel && (ev->id == 1 || ev->id == 15) && guid_is(g, G_KERNEL_PROCESS))
        st = etw_symbols_kernel_process(p, ev, s);
    return st;
}

etw_status etw_profile_add(etw_profile *p, const etw_event *ev, const etw_schema *s) {
    return profile_add(p, ev, s, NULL);
}

etw_status etw_profile_add_ids(etw_profile *p, const etw_event *ev, const etw_schema *s, uint32_t pid,
                               uint32_t tid) {
    if (!s) return ETW_E_INVALID_ARG; /* the ids are those of a resolved event */
    const uint32_t ids[2] = {pid, tid};
    return profile_add(p, ev, s, ids);
}

etw_status etw_profile_finish(etw_profile *p) {
    if (!p || p->finished) return ETW_E_INVALID_ARG;
    p->finished = 1;
    etw_status st = etw_attach_finish(p);
    if (st != ETW_OK) return st;
    return etw_symbols_finish(p);
}

uint32_t etw_profile_event_stack(const etw_profile *p, uint64_t seq) {
    if (!p || !p->finished) return ETW_STACK_NONE;
    return etw_attach_event_stack(p, seq);
}

void etw_profile_stats_get(const etw_profile *p, etw_profile_stats *out) {
    if (!out) return;
    memset(out, 0, sizeof *out);
    if (!p) return;
    *out = p->stats;
    out->memory_bytes = sizeof *p + p->tree.bytes + p->sym.bytes;
}
