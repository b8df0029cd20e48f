/* etw_kernel_memory.c - the Memory (MOF PageFault) kernel class family (etw_kernel_tables.h).
 *
 * Class GUID 3d6fa8d3-fe05-11d0-9dda-00c04fd7ba7c (PageFaultGuid, hook group 0x02).
 * Layouts: shared/docs/kernel/kernel-mof.md §4.2 (PageFault_TypeGroup1 v2,
 * PageFault_HardFault v2) and the Vista MOF in PerfView
 * (kerneltraceeventparser.mof: the heap-range and ImageLoadBacked classes);
 * PageFault_VirtualAlloc v2: TraceEvent's VirtualAllocTraceData getters
 * (BaseAddress at 0, RegionSize at HostOffset(4,1), ProcessId at
 * HostOffset(8,2), Flags at HostOffset(0xC,2), length HostOffset(0x10,2)),
 * with the MOF property names. Names: shared/docs/kernel/naming.md (PerfView
 * files types 98/99 under the task VirtualMem).
 * pid/tid (kernel-mof.md §6): HardFault names its thread (TThreadId);
 * VirtualAlloc/Free name the process whose memory it is (ProcessId).
 */
#include "etw_kernel_props.h"

static const etw_kernel_event memory_events[] = {
    ETW_KEV(10, "TransitionFault"),
    ETW_KEV(11, "DemandZeroFault"),
    ETW_KEV(12, "CopyOnWrite"),
    ETW_KEV(13, "GuardMemory"),
    ETW_KEV(14, "HardMemory"),
    ETW_KEV(15, "AccessViolation"),
    ETW_KEV_IDS(32, "HardFault", NULL, "TThreadId", ETW_KID_PID_FROM_THREAD),
    ETW_KEV(35, "InMemory"),
    ETW_KEV(73, "PFMappedSectionCreate"),
    ETW_KEV(76, "SessionDCStop"),
    ETW_KEV(79, "PFMappedSectionDelete"),
    ETW_KEV_IDS(98, "VirtualMem/Alloc", "ProcessId", NULL, 0),
    ETW_KEV_IDS(99, "VirtualMem/Free", "ProcessId", NULL, 0),
    ETW_KEV(100, "HeapRangeRundown"),
    ETW_KEV(101, "HeapRangeCreate"),
    ETW_KEV(102, "HeapRangeReserve"),
    ETW_KEV(103, "HeapRangeRelease"),
    ETW_KEV(104, "HeapRangeDestroy"),
    ETW_KEV(105, "ImageLoadBacked"),
    ETW_KEV(112, "SystemMemInfo"),
    ETW_KEV(115, "InMemoryStoreFault"),
    ETW_KEV(117, "InMemoryActive"),
    ETW_KEV(118, "PageAccess"),
    ETW_KEV(119, "PageRelease"),
    ETW_KEV(120, "RangeAccess"),
    ETW_KEV(121, "RangeRelease"),
    ETW_KEV(122, "Combine"),
    ETW_KEV(123, "KernelMemUsage"),
    ETW_KEV(124, "MMStats"),
    ETW_KEV(125, "ProcessMemInfo"),
    ETW_KEV(126, "MemInfoSessionWS"),
    ETW_KEV(127, "VirtualRotate"),
    ETW_KEV(128, "VirtualAllocDCStart"),
    ETW_KEV(129, "VirtualAllocDCStop"),
    ETW_KEV(130, "PageAccess"),
    ETW_KEV(131, "RemoveFromWS"),
    ETW_KEV(132, "WSSharableRundown"),
    ETW_KEV(133, "InMemoryActiveRundown"),
    ETW_KEV(134, "MemResetInfo"),
};

static const uint8_t t_fault[] = {10, 11, 12, 13, 14, 15};
static const etw_property p_fault[] = {ETW_KPTR("VirtualAddress"), ETW_KPTR("ProgramCounter")};

static const uint8_t t_hard[] = {32};
static const etw_property p_hard[] = {
    ETW_KU64("InitialTime"),   ETW_KX64("ReadOffset"), ETW_KPTR("VirtualAddress"),
    ETW_KPTR("FileObject"),    ETW_KU32("TThreadId"),  ETW_KU32("ByteCount"),
};

static const uint8_t t_valloc[] = {98, 99};
static const etw_property p_valloc[] = {
    ETW_KPTR("BaseAddress"), ETW_KSIZET("RegionSize"), ETW_KU32("ProcessId"), ETW_KX32("Flags"),
};

static const uint8_t t_hr_rundown[] = {100};
static const etw_property p_hr_rundown[] = {
    ETW_KPTR("HeapHandle"), ETW_KX32("HRFlags"), ETW_KU32("HRPid"), ETW_KU32("HRRangeCount"),
};
static const uint8_t t_hr_create[] = {101};
static const etw_property p_hr_create[] = {
    ETW_KPTR("HeapHandle"), ETW_KSIZET("FirstRangeSize"), ETW_KX32("HRCreateFlags"),
};
static const uint8_t t_hr_range[] = {102, 103};
static const etw_property p_hr_range[] = {
    ETW_KPTR("HeapHandle"), ETW_KPTR("HRAddress"), ETW_KSIZET("HRSize"),
};
static const uint8_t t_hr_destroy[] = {104};
static const etw_property p_hr_destroy[] = {ETW_KPTR("HeapHandle")};
static const uint8_t t_backed[] = {105};
static const etw_property p_backed[] = {
    ETW_KPTR("FileObject"), ETW_KX32("DeviceChar"), ETW_KX16("FileChar"), ETW_KX16("LoadFlags"),
};

static const etw_kernel_layout memory_layouts[] = {
    ETW_KLAYOUT("PageFault_TypeGroup1", 2, t_fault, p_fault),
    ETW_KLAYOUT("PageFault_HardFault", 2, t_hard, p_hard),
    ETW_KLAYOUT("PageFault_VirtualAlloc", 2, t_valloc, p_valloc),
    ETW_KLAYOUT("PageFault_HeapRangeRundown", 2, t_hr_rundown, p_hr_rundown),
    ETW_KLAYOUT("PageFault_HeapRangeCreate", 2, t_hr_create, p_hr_create),
    ETW_KLAYOUT("PageFault_HeapRangeTypeGroup", 2, t_hr_range, p_hr_range),
    ETW_KLAYOUT("PageFault_HeapRangeDestroy", 2, t_hr_destroy, p_hr_destroy),
    ETW_KLAYOUT("PageFault_ImageLoadBacked", 2, t_backed, p_backed),
};

const etw_kernel_family etw_kernel_family_memory = {
    .guid = ETW_KGUID(0x3d6fa8d3,0xfe05,0x11d0,0x9d,0xda,0x00,0xc0,0x4f,0xd7,0xba,0x7c),
    .provider = "Windows Kernel",
    .group = "Memory",
    .events = memory_events,
    .event_count = ETW_KCOUNT(memory_events),
    .layouts = memory_layouts,
    .layout_count = ETW_KCOUNT(memory_layouts),
};
