/* etw_fixup.c - schema corrections (see etw_fixup.h).
 *
 * 1. CLR stack walks. The CLR's ClrStackWalk template (ClrEtwAll.man; the
 *    Stack/Walk event 82 of Microsoft-Windows-DotNETRuntime, event 0 of
 *    ...Rundown, 1 of ...Stress, 151 of ...Private) declares
 *    `<data name="Stack" count="2" inType="win:Pointer"/>` after FrameCount,
 *    and Windows' TRACE_EVENT_INFO for it says the same, but the runtime
 *    writes FrameCount pointers. TraceEvent reads FrameCount frames
 *    (microsoft/perfview src/TraceEvent/Parsers/ClrTraceEventParser.cs,
 *    ClrStackWalkTraceData: FrameCount, InstructionPointer(i)); samply
 *    (samply/src/windows/coreclr.rs) says "'Stack' is explicitly declared as
 *    length 2 in the manifest ... rest are in user data buffer". So Stack
 *    counts by FrameCount.
 * 2. GC records with C padding. GC/GCFitBucketInfo (event 209) and
 *    GC/GCLOHCompact (event 208) of Microsoft-Windows-DotNETRuntime write
 *    arrays of C structs as they are in memory (dotnet/runtime
 *    src/coreclr/gc/gcpriv.h: etw_bucket_info {uint16_t index; uint32_t
 *    count; size_t size;}, etw_loh_compact_info {uint32_t time_plan,
 *    time_compact, time_relocate; size_t total_refs, zero_refs;}), padding
 *    included: 16-byte and 32-byte elements on 64-bit where the manifest's
 *    members add up to 14 and 28. Those struct properties get
 *    ETW_PROP_C_ALIGNED (etw_schema.h), which the decoder lays out as a C
 *    compiler does.
 * 3. PerfView's ClrEnableParameters. PerfView's EventSource ("PerfView",
 *    event 13) calls WriteEvent(13, (long)keywords, (int)level)
 *    (microsoft/perfview src/PerfView/PerfViewLogger.cs), which C# binds to
 *    EventSource's WriteEvent(int, long, long) overload (there is no
 *    (int, long, int) one): level is written as 8 bytes, where the manifest
 *    the EventSource generates from the method declares a UInt32 enum.
 *    net.4.5.2.x64.etl: both events are 16 bytes, the last 4 zero. So level
 *    is read as a 64-bit integer (its value map kept).
 */
#include "schema/etw_fixup.h"

#include <string.h>

/* The CLR providers whose manifests use the ClrStackWalk template. */
static const etw_guid clr_providers[] = {
    /* Microsoft-Windows-DotNETRuntime */
    {0xe13c0d23u, 0xccbc, 0x4e12, {0x93, 0x1b, 0xd9, 0xcc, 0x2e, 0xee, 0x27, 0xe4}},
    /* Microsoft-Windows-DotNETRuntimeRundown */
    {0xa669021cu, 0xc450, 0x4609, {0xa0, 0x35, 0x5a, 0xf5, 0x9a, 0xf4, 0xdf, 0x18}},
    /* Microsoft-Windows-DotNETRuntimeStress */
    {0xcc2bcbbau, 0x16b6, 0x4cf3, {0x89, 0x90, 0xd7, 0x4c, 0x2e, 0x8a, 0xf5, 0x00}},
    /* Microsoft-Windows-DotNETRuntimePrivate */
    {0x763fd754u, 0x7086, 0x4dfe, {0x95, 0xeb, 0xc0, 0x1a, 0x46, 0xfa, 0xf4, 0xca}},
};

static int same_guid(const etw_guid *a, const etw_guid *b) {
    return a->data1 == b->data1 && a->data2 == b->data2 && a->data3 == b->data3 &&
           memcmp(a->data4, b->data4, sizeof a->data4) == 0;
}

static int is_name(const etw_property *p, const char *name) {
    return p->name && strcmp(p->name, name) == 0;
}

static int is_pointer(const etw_property *p) {
    return !(p->flags & ETW_PROP_STRUCT) &&
           (p->in_type == ETW_INTYPE_POINTER || p->in_type == ETW_INTYPE_SIZET);
}

static int is_uint(const etw_property *p, uint16_t in_type) {
    return !(p->flags & (ETW_PROP_STRUCT | ETW_PROP_ARRAY_MASK)) && p->in_type == in_type;
}

/* 1: Stack[2] right after a u32 FrameCount, both top-level. */
static void clr_stack_walk(const etw_schema *s, etw_property *props) {
    for (uint16_t i = 1; i < s->top_count && i < s->prop_count; i++) {
        etw_property *st = &props[i];
        const etw_property *fc = &props[i - 1];
        if (!is_name(st, "Stack") || !is_pointer(st) || !is_name(fc, "FrameCount") ||
            !is_uint(fc, ETW_INTYPE_UINT32))
            continue;
        if (!(st->flags & ETW_PROP_COUNT_FIXED) || (st->flags & (ETW_PROP_COUNT_REF | ETW_PROP_COUNT_IN_DATA)))
            continue;
        st->flags = (st->flags & ~(uint32_t)ETW_PROP_COUNT_FIXED) | ETW_PROP_COUNT_REF;
        st->count = (uint16_t)(i - 1);
        return;
    }
}

typedef struct member_shape {
    const char *name;
    uint16_t in_type; /* ETW_INTYPE_POINTER: POINTER or SIZET */
} member_shape;

static const member_shape fit_bucket[] = {
    {"Index", ETW_INTYPE_UINT16}, {"Count", ETW_INTYPE_UINT32}, {"Size", ETW_INTYPE_POINTER}};
static const member_shape loh_compact[] = {{"TimePlan", ETW_INTYPE_UINT32},
                                           {"TimeCompact", ETW_INTYPE_UINT32},
                                           {"TimeRelocate", ETW_INTYPE_UINT32},
                                           {"TotalRefs", ETW_INTYPE_POINTER},
                                           {"ZeroRefs", ETW_INTYPE_POINTER}};

static int struct_is(const etw_schema *s, const etw_property *props, const etw_property *p,
                     const member_shape *m, uint16_t n) {
    if (!(p->flags & ETW_PROP_STRUCT) || p->struct_count != n || p->struct_first >= s->prop_count ||
        s->prop_count - p->struct_first < n)
        return 0;
    for (uint16_t k = 0; k < n; k++) {
        const etw_property *q = &props[p->struct_first + k];
        if (!is_name(q, m[k].name)) return 0;
        if (m[k].in_type == ETW_INTYPE_POINTER ? !is_pointer(q) || (q->flags & ETW_PROP_ARRAY_MASK)
                                               : !is_uint(q, m[k].in_type))
            return 0;
    }
    return 1;
}

/* 2: the "Values" array of GCFitBucketInfo and GCLOHCompact. */
static void gc_padded(const etw_schema *s, etw_property *props) {
    for (uint16_t i = 0; i < s->top_count && i < s->prop_count; i++) {
        etw_property *p = &props[i];
        if (!is_name(p, "Values")) continue;
        if (struct_is(s, props, p, fit_bucket, 3) || struct_is(s, props, p, loh_compact, 5))
            p->flags |= ETW_PROP_C_ALIGNED;
    }
}

/* The EventSource named "PerfView" (its GUID is derived from the name). */
static const etw_guid perfview_provider = {0xa8a71ac1u, 0x040f, 0x54a2,
                                           {0x07, 0xca, 0x00, 0xa8, 0x9b, 0x5a, 0xb7, 0x61}};

/* 3: ClrEnableParameters(keywords u64, level u32 enum). */
static void perfview_clr_enable(const etw_schema *s, etw_property *props) {
    if (s->event_id != 13 || !s->event_name || strcmp(s->event_name, "ClrEnableParameters") != 0 ||
        s->top_count != 2 || s->prop_count != 2)
        return;
    etw_property *kw = &props[0], *lv = &props[1];
    if (!is_name(kw, "keywords") || !(is_uint(kw, ETW_INTYPE_UINT64) || is_uint(kw, ETW_INTYPE_INT64)) ||
        !is_name(lv, "level") || !(is_uint(lv, ETW_INTYPE_UINT32) || is_uint(lv, ETW_INTYPE_INT32)))
        return;
    lv->in_type = ETW_INTYPE_INT64;
}

void etw_schema_fixup(const etw_schema *s, etw_property *props) {
    if (!s || !props || !s->prop_count) return;
    if (same_guid(&s->provider, &perfview_provider)) {
        perfview_clr_enable(s, props);
        return;
    }
    int clr = -1;
    for (size_t k = 0; k < sizeof clr_providers / sizeof clr_providers[0]; k++)
        if (same_guid(&s->provider, &clr_providers[k])) clr = (int)k;
    if (clr < 0) return;
    clr_stack_walk(s, props);
    if (clr == 0) gc_padded(s, props);
}
