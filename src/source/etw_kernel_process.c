/* etw_kernel_process.c - the Process kernel class family (etw_kernel_tables.h).
 * Layouts: shared/docs/kernel/kernel-mof.md section 4.2 (Process_V0..V4_TypeGroup1,
 * Process_TypeGroup2 PerfCtr, Process_Terminate); names: shared/docs/kernel/naming.md.
 * pid/tid (kernel-mof.md section 6): Process events name the payload's ProcessId, no thread. */
#include "etw_kernel_tables.h"

/* Event types (ntwmi.h / naming.md): Start 1, End 2, DCStart 3, DCEnd 4,
 * Terminate 11, PerfCtr 32, PerfCtrRundown 33, Defunct 39. */
static const uint8_t k_group1[] = {1, 2, 3, 4, 39};
static const uint8_t k_group1_v5[] = {39}; /* v5 exists for Defunct only (naming.md) */
static const uint8_t k_perfctr[] = {32, 33};
static const uint8_t k_terminate[] = {11};

/* Process_V0_TypeGroup1: pointer-sized ids. */
static const etw_property k_v0[] = {
    ETW_KPROP("ProcessId", POINTER),
    ETW_KPROP("ParentId", POINTER),
    ETW_KPROP("UserSID", WBEMSID),
    ETW_KPROP("ImageFileName", ANSISTRING),
};

static const etw_property k_v1[] = {
    ETW_KPROP("PageDirectoryBase", POINTER),
    ETW_KPROP("ProcessId", UINT32),
    ETW_KPROP("ParentId", UINT32),
    ETW_KPROP("SessionId", UINT32),
    ETW_KPROP("ExitStatus", INT32),
    ETW_KPROP("UserSID", WBEMSID),
    ETW_KPROP("ImageFileName", ANSISTRING),
};

static const etw_property k_v2[] = {
    ETW_KPROP("UniqueProcessKey", POINTER),
    ETW_KPROP("ProcessId", UINT32),
    ETW_KPROP("ParentId", UINT32),
    ETW_KPROP("SessionId", UINT32),
    ETW_KPROP("ExitStatus", INT32),
    ETW_KPROP("UserSID", WBEMSID),
    ETW_KPROP("ImageFileName", ANSISTRING),
    ETW_KPROP("CommandLine", UNICODESTRING),
};

static const etw_property k_v3[] = {
    ETW_KPROP("UniqueProcessKey", POINTER),
    ETW_KPROP("ProcessId", UINT32),
    ETW_KPROP("ParentId", UINT32),
    ETW_KPROP("SessionId", UINT32),
    ETW_KPROP("ExitStatus", INT32),
    ETW_KPROP("DirectoryTableBase", POINTER),
    ETW_KPROP("UserSID", WBEMSID),
    ETW_KPROP("ImageFileName", ANSISTRING),
    ETW_KPROP("CommandLine", UNICODESTRING),
};

static const etw_property k_v4[] = {
    ETW_KPROP("UniqueProcessKey", POINTER),
    ETW_KPROP("ProcessId", UINT32),
    ETW_KPROP("ParentId", UINT32),
    ETW_KPROP("SessionId", UINT32),
    ETW_KPROP("ExitStatus", INT32),
    ETW_KPROP("DirectoryTableBase", POINTER),
    ETW_KPROP("Flags", UINT32),
    ETW_KPROP("UserSID", WBEMSID),
    ETW_KPROP("ImageFileName", ANSISTRING),
    ETW_KPROP("CommandLine", UNICODESTRING),
    ETW_KPROP("PackageFullName", UNICODESTRING),
    ETW_KPROP("ApplicationId", UNICODESTRING),
};

/* v5 (Defunct): v4 + ExitTime (WmiTime, u64). */
static const etw_property k_v5[] = {
    ETW_KPROP("UniqueProcessKey", POINTER),
    ETW_KPROP("ProcessId", UINT32),
    ETW_KPROP("ParentId", UINT32),
    ETW_KPROP("SessionId", UINT32),
    ETW_KPROP("ExitStatus", INT32),
    ETW_KPROP("DirectoryTableBase", POINTER),
    ETW_KPROP("Flags", UINT32),
    ETW_KPROP("UserSID", WBEMSID),
    ETW_KPROP("ImageFileName", ANSISTRING),
    ETW_KPROP("CommandLine", UNICODESTRING),
    ETW_KPROP("PackageFullName", UNICODESTRING),
    ETW_KPROP("ApplicationId", UNICODESTRING),
    ETW_KPROP("ExitTime", UINT64),
};

/* Process_TypeGroup2 (PerfCtr, PerfCtrRundown) v2: the sizes are SizeT. */
static const etw_property k_perfctr_v2[] = {
    ETW_KPROP("ProcessId", UINT32),
    ETW_KPROP("PageFaultCount", UINT32),
    ETW_KPROP("HandleCount", UINT32),
    ETW_KPROP("Reserved", UINT32),
    ETW_KPROP("PeakVirtualSize", SIZET),
    ETW_KPROP("PeakWorkingSetSize", SIZET),
    ETW_KPROP("PeakPagefileUsage", SIZET),
    ETW_KPROP("QuotaPeakPagedPoolUsage", SIZET),
    ETW_KPROP("QuotaPeakNonPagedPoolUsage", SIZET),
    ETW_KPROP("VirtualSize", SIZET),
    ETW_KPROP("WorkingSetSize", SIZET),
    ETW_KPROP("PagefileUsage", SIZET),
    ETW_KPROP("QuotaPagedPoolUsage", SIZET),
    ETW_KPROP("QuotaNonPagedPoolUsage", SIZET),
    ETW_KPROP("PrivatePageCount", SIZET),
};

static const etw_property k_terminate_v2[] = {
    ETW_KPROP("ProcessId", UINT32),
};

#define L(cls, ver, types, props) \
    { cls, ver, types, ETW_KCOUNT(types), props, ETW_KCOUNT(props), ETW_KCOUNT(props) }

static const etw_kernel_layout k_layouts[] = {
    L("Process_V0_TypeGroup1", 0, k_group1, k_v0),
    L("Process_V1_TypeGroup1", 1, k_group1, k_v1),
    L("Process_V2_TypeGroup1", 2, k_group1, k_v2),
    L("Process_V3_TypeGroup1", 3, k_group1, k_v3),
    L("Process_V4_TypeGroup1", 4, k_group1, k_v4),
    L("Process_V5_TypeGroup1", 5, k_group1_v5, k_v5),
    L("Process_V2_TypeGroup2", 2, k_perfctr, k_perfctr_v2),
    L("Process_Terminate", 2, k_terminate, k_terminate_v2),
};

#define PROC ETW_KID_TID_NONE

static const etw_kernel_event k_events[] = {
    {1, "Start", "ProcessId", NULL, PROC},
    {2, "Stop", "ProcessId", NULL, PROC},
    {3, "DCStart", "ProcessId", NULL, PROC},
    {4, "DCStop", "ProcessId", NULL, PROC},
    {11, "Terminate", "ProcessId", NULL, PROC},
    {32, "PerfCtr", "ProcessId", NULL, PROC},
    {33, "PerfCtrRundown", "ProcessId", NULL, PROC},
    {39, "Defunct", "ProcessId", NULL, PROC},
};

const etw_kernel_family etw_kernel_family_process = {
    .guid = ETW_KGUID(0x3d6fa8d0,0xfe05,0x11d0,0x9d,0xda,0x00,0xc0,0x4f,0xd7,0xba,0x7c),
    .provider = "Windows Kernel",
    .group = "Process",
    .events = k_events,
    .event_count = ETW_KCOUNT(k_events),
    .layouts = k_layouts,
    .layout_count = ETW_KCOUNT(k_layouts),
};
