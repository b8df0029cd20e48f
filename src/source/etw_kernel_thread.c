/* etw_kernel_thread.c - the Thread kernel class family (etw_kernel_tables.h).
 * Layouts: shared/docs/kernel/kernel-mof.md section 4.2 (Thread_V0..V3_TypeGroup1,
 * CSwitch, ReadyThread); names: shared/docs/kernel/naming.md. SetName: ProcessId,
 * ThreadId, ThreadName (TraceEvent's ThreadSetName reads them at 0, 4, 8).
 * pid/tid (kernel-mof.md section 6): Start, DCStart, DCStop from the payload, and
 * Start and DCStart feed the thread -> process table; Stop keeps the header;
 * CSwitch names the new thread. */
#include "etw_kernel_tables.h"

/* Event types (naming.md): Start 1, End 2, DCStart 3, DCEnd 4, CSwitch 36,
 * CompCS 37, ReadyThread 50, SetName 72. */
static const uint8_t k_group1[] = {1, 2, 3, 4};
static const uint8_t k_group1_v1[] = {1, 3, 4}; /* v1 End is TypeGroup2 */
static const uint8_t k_end_v1[] = {2};
static const uint8_t k_cswitch[] = {36};
static const uint8_t k_ready[] = {50};
static const uint8_t k_setname[] = {72};

static const etw_property k_v0[] = {
    ETW_KPROP("TThreadId", UINT32),
    ETW_KPROP("ProcessId", UINT32),
};

static const etw_property k_v1[] = {
    ETW_KPROP("ProcessId", UINT32),
    ETW_KPROP("TThreadId", UINT32),
    ETW_KPROP("StackBase", POINTER),
    ETW_KPROP("StackLimit", POINTER),
    ETW_KPROP("UserStackBase", POINTER),
    ETW_KPROP("UserStackLimit", POINTER),
    ETW_KPROP("StartAddr", POINTER),
    ETW_KPROP("Win32StartAddr", POINTER),
    ETW_KPROP("WaitMode", INT8),
};

static const etw_property k_end_v1_props[] = {
    ETW_KPROP("ProcessId", UINT32),
    ETW_KPROP("TThreadId", UINT32),
};

static const etw_property k_v2[] = {
    ETW_KPROP("ProcessId", UINT32),
    ETW_KPROP("TThreadId", UINT32),
    ETW_KPROP("StackBase", POINTER),
    ETW_KPROP("StackLimit", POINTER),
    ETW_KPROP("UserStackBase", POINTER),
    ETW_KPROP("UserStackLimit", POINTER),
    ETW_KPROP("StartAddr", POINTER),
    ETW_KPROP("Win32StartAddr", POINTER),
    ETW_KPROP("TebBase", POINTER),
    ETW_KPROP("SubProcessTag", UINT32),
};

/* v3: StartAddr's slot is Affinity; four priority bytes; ThreadName, which
 * v4 declares, is appended to v3 by later builds (kernel-mof.md section 7.6). */
static const etw_property k_v3[] = {
    ETW_KPROP("ProcessId", UINT32),
    ETW_KPROP("TThreadId", UINT32),
    ETW_KPROP("StackBase", POINTER),
    ETW_KPROP("StackLimit", POINTER),
    ETW_KPROP("UserStackBase", POINTER),
    ETW_KPROP("UserStackLimit", POINTER),
    ETW_KPROP("Affinity", POINTER),
    ETW_KPROP("Win32StartAddr", POINTER),
    ETW_KPROP("TebBase", POINTER),
    ETW_KPROP("SubProcessTag", UINT32),
    ETW_KPROP("BasePriority", UINT8),
    ETW_KPROP("PagePriority", UINT8),
    ETW_KPROP("IoPriority", UINT8),
    ETW_KPROP("ThreadFlags", UINT8),
    ETW_KPROP_OPT("ThreadName", UNICODESTRING),
};

/* CSwitch v1: bytes 10 and 11 are the quanta; byte 13 the wait mode. */
static const etw_property k_cswitch_v1[] = {
    ETW_KPROP("NewThreadId", UINT32),
    ETW_KPROP("OldThreadId", UINT32),
    ETW_KPROP("NewThreadPriority", INT8),
    ETW_KPROP("OldThreadPriority", INT8),
    ETW_KPROP("NewThreadQuantum", INT8),
    ETW_KPROP("OldThreadQuantum", INT8),
    ETW_KPROP("OldThreadWaitReason", INT8),
    ETW_KPROP("OldThreadWaitMode", INT8),
    ETW_KPROP("OldThreadState", INT8),
    ETW_KPROP("OldThreadWaitIdealProcessor", INT8),
    ETW_KPROP("NewThreadWaitTime", UINT32),
    ETW_KPROP("Reserved", UINT32),
};

static const etw_property k_cswitch_v2[] = {
    ETW_KPROP("NewThreadId", UINT32),
    ETW_KPROP("OldThreadId", UINT32),
    ETW_KPROP("NewThreadPriority", INT8),
    ETW_KPROP("OldThreadPriority", INT8),
    ETW_KPROP("PreviousCState", UINT8),
    ETW_KPROP("SpareByte", INT8),
    ETW_KPROP("OldThreadWaitReason", INT8),
    ETW_KPROP("OldThreadWaitMode", INT8),
    ETW_KPROP("OldThreadState", INT8),
    ETW_KPROP("OldThreadWaitIdealProcessor", INT8),
    ETW_KPROP("NewThreadWaitTime", UINT32),
    ETW_KPROP("Reserved", UINT32),
};

/* v3/v4: byte 13 is ThreadFlags (the modern MOF, kernel-mof.md section 7.4). */
static const etw_property k_cswitch_v3[] = {
    ETW_KPROP("NewThreadId", UINT32),
    ETW_KPROP("OldThreadId", UINT32),
    ETW_KPROP("NewThreadPriority", INT8),
    ETW_KPROP("OldThreadPriority", INT8),
    ETW_KPROP("PreviousCState", UINT8),
    ETW_KPROP("SpareByte", INT8),
    ETW_KPROP("OldThreadWaitReason", INT8),
    ETW_KPROP("ThreadFlags", INT8),
    ETW_KPROP("OldThreadState", INT8),
    ETW_KPROP("OldThreadWaitIdealProcessor", INT8),
    ETW_KPROP("NewThreadWaitTime", UINT32),
    ETW_KPROP("Reserved", UINT32),
};

static const etw_property k_ready_v2[] = {
    ETW_KPROP("TThreadId", UINT32),
    ETW_KPROP("AdjustReason", INT8),
    ETW_KPROP("AdjustIncrement", INT8),
    ETW_KPROP("Flag", INT8),
    ETW_KPROP("Reserved", INT8),
};

static const etw_property k_setname_v2[] = {
    ETW_KPROP("ProcessId", UINT32),
    ETW_KPROP("ThreadId", UINT32),
    ETW_KPROP("ThreadName", UNICODESTRING),
};

#define L(cls, ver, types, props) \
    { cls, ver, types, ETW_KCOUNT(types), props, ETW_KCOUNT(props), ETW_KCOUNT(props) }

static const etw_kernel_layout k_layouts[] = {
    L("Thread_V0_TypeGroup1", 0, k_group1, k_v0),
    L("Thread_V1_TypeGroup1", 1, k_group1_v1, k_v1),
    L("Thread_V1_TypeGroup2", 1, k_end_v1, k_end_v1_props),
    L("Thread_V2_TypeGroup1", 2, k_group1, k_v2),
    L("Thread_V3_TypeGroup1", 3, k_group1, k_v3),
    L("Thread_TypeGroup1", 4, k_group1, k_v3),
    L("CSwitch_V1", 1, k_cswitch, k_cswitch_v1),
    L("CSwitch_V2", 2, k_cswitch, k_cswitch_v2),
    L("CSwitch_V3", 3, k_cswitch, k_cswitch_v3),
    L("CSwitch", 4, k_cswitch, k_cswitch_v3),
    L("ReadyThread", 2, k_ready, k_ready_v2),
    L("Thread_SetName", 2, k_setname, k_setname_v2),
};

static const etw_kernel_event k_events[] = {
    {1, "Start", "ProcessId", "TThreadId", ETW_KID_RECORDS_THREAD},
    {2, "Stop", NULL, NULL, 0},
    {3, "DCStart", "ProcessId", "TThreadId", ETW_KID_RECORDS_THREAD},
    {4, "DCStop", "ProcessId", "TThreadId", 0},
    {36, "CSwitch", NULL, "NewThreadId", ETW_KID_PID_NONE | ETW_KID_PID_FROM_THREAD},
    {37, "CompCS", NULL, NULL, 0},
    {50, "Dispatcher/ReadyThread", NULL, NULL, 0},
    {72, "SetName", "ProcessId", "ThreadId", 0},
};

const etw_kernel_family etw_kernel_family_thread = {
    .guid = ETW_KGUID(0x3d6fa8d1,0xfe05,0x11d0,0x9d,0xda,0x00,0xc0,0x4f,0xd7,0xba,0x7c),
    .provider = "Windows Kernel",
    .group = "Thread",
    .events = k_events,
    .event_count = ETW_KCOUNT(k_events),
    .layouts = k_layouts,
    .layout_count = ETW_KCOUNT(k_layouts),
};
