/* etw_kernel_perfinfo.c - the PerfInfo kernel class family (etw_kernel_tables.h).
 * Layouts: shared/docs/kernel/kernel-mof.md section 4.2 (SampledProfile v2, SysCallEnter,
 * SysCallExit, ISR, DPC, CollectionStart/End/SetInterval v2/v3); names:
 * shared/docs/kernel/naming.md (PerfView's SysClEnter, Sample, PMCSample...).
 * SampledProfile v1: the same 4 + P + 4 bytes with Count as one u32 (the MS Learn
 * class, kernel-mof.md section 7.5). PMCSample (PmcCounterProf v2): InstructionPointer,
 * ThreadId, ProfileSource (u16), Reserved (u16), as TraceEvent's PMCCounterProf reads.
 * pid/tid (kernel-mof.md section 6): Sample and PMCSample name the payload's
 * thread, its process from the thread table.
 * SampledProfile v2's Reserved (u16) carries flags, split out as TraceEvent's
 * SampledProfileTraceData names them (microsoft/perfview
 * src/TraceEvent/Parsers/KernelTraceEventParser.cs; kernel-mof.md section 7.5):
 * byte 0 bit 0 ExecutingDPC, bit 1 ExecutingISR (bit 2 reserved), bits 3-7
 * Priority (the thread's current priority; Win8 and later); byte 1 Rank.
 * Reserved itself stays, as the MOF class and TDH have it: it is the raw word
 * (idle-sample filters test Reserved & 3, stacks.md rule 10). TraceEvent's
 * NonProcess (ExecutingDPC or ExecutingISR) is not one more field: it is
 * derived, and TraceEvent does not list it among the payload names. */
#include "etw_kernel_props.h"

/* Event types (naming.md): Mark 34, Sample 46, PMCSample 47, ISR (MSI) 50,
 * SysClEnter 51, SysClExit 52, DebuggerEnabled 58, ThreadedDPC 66, ISR 67,
 * DPC 68, TimerDPC 69, SetInterval 72, CollectionStart 73, CollectionEnd 74,
 * and 75/76 (CollectionStart/End again in the MOF, no PerfView name). */
static const uint8_t k_sample[] = {46};
static const uint8_t k_pmc[] = {47};
static const uint8_t k_isr[] = {50, 67};
static const uint8_t k_enter[] = {51};
static const uint8_t k_exit[] = {52};
static const uint8_t k_dpc[] = {66, 68, 69};
static const uint8_t k_interval[] = {72, 73, 74, 75, 76};

static const etw_property k_sample_v1[] = {
    ETW_KPTR("InstructionPointer"),
    ETW_KU32("ThreadId"),
    ETW_KU32("Count"),
};
static const etw_property k_sample_v2[] = {
    ETW_KPTR("InstructionPointer"),
    ETW_KU32("ThreadId"),
    ETW_KU16("Count"),
    ETW_KU16("Reserved"),
    ETW_KBITS("ExecutingDPC", 3, 0, 1, BOOLEAN),
    ETW_KBITS("ExecutingISR", 3, 1, 1, BOOLEAN),
    ETW_KBITS("Priority", 3, 3, 5, NULL),
    ETW_KBITS("Rank", 3, 8, 8, NULL),
};
static const etw_property k_pmc_v2[] = {
    ETW_KPTR("InstructionPointer"),
    ETW_KU32("ThreadId"),
    ETW_KU16("ProfileSource"),
    ETW_KU16("Reserved"),
};
static const etw_property k_isr_v2[] = {
    ETW_KU64("InitialTime"),
    ETW_KPTR("Routine"),
    ETW_KU8("ReturnValue"),
    ETW_KU16("Vector"),
    ETW_KU8("Reserved"),
};
static const etw_property k_enter_v2[] = {ETW_KPTR("SysCallAddress")};
static const etw_property k_exit_v2[] = {ETW_KX32("SysCallNtStatus")};
static const etw_property k_dpc_v2[] = {
    ETW_KU64("InitialTime"),
    ETW_KPTR("Routine"),
};
static const etw_property k_interval_v2[] = {
    ETW_KU32("Source"),
    ETW_KU32("NewInterval"),
    ETW_KU32("OldInterval"),
};
static const etw_property k_interval_v3[] = {
    ETW_KU32("Source"),
    ETW_KU32("NewInterval"),
    ETW_KU32("OldInterval"),
    ETW_KWSTR("SourceName"),
};

static const etw_kernel_layout k_layouts[] = {
    ETW_KLAYOUT("SampledProfile_V1", 1, k_sample, k_sample_v1),
    ETW_KLAYOUT("SampledProfile", 2, k_sample, k_sample_v2),
    ETW_KLAYOUT("PmcCounterProf", 2, k_pmc, k_pmc_v2),
    ETW_KLAYOUT("ISR", 2, k_isr, k_isr_v2),
    ETW_KLAYOUT("SysCallEnter", 2, k_enter, k_enter_v2),
    ETW_KLAYOUT("SysCallExit", 2, k_exit, k_exit_v2),
    ETW_KLAYOUT("DPC", 2, k_dpc, k_dpc_v2),
    ETW_KLAYOUT("SampledProfileInterval_V2", 2, k_interval, k_interval_v2),
    ETW_KLAYOUT("SampledProfileInterval", 3, k_interval, k_interval_v3),
};

#define THREAD_ONLY (ETW_KID_PID_NONE | ETW_KID_PID_FROM_THREAD)

static const etw_kernel_event k_events[] = {
    ETW_KEV(34, "Mark"),
    ETW_KEV_IDS(46, "Sample", NULL, "ThreadId", THREAD_ONLY),
    ETW_KEV_IDS(47, "PMCSample", NULL, "ThreadId", THREAD_ONLY),
    ETW_KEV(50, "ISR"),
    ETW_KEV(51, "SysClEnter"),
    ETW_KEV(52, "SysClExit"),
    ETW_KEV(58, "DebuggerEnabled"),
    ETW_KEV(66, "ThreadedDPC"),
    ETW_KEV(67, "ISR"),
    ETW_KEV(68, "DPC"),
    ETW_KEV(69, "TimerDPC"),
    ETW_KEV(72, "SetInterval"),
    ETW_KEV(73, "CollectionStart"),
    ETW_KEV(74, "CollectionEnd"),
    ETW_KEV(75, "CollectionStart"),
    ETW_KEV(76, "CollectionEnd"),
};

const etw_kernel_family etw_kernel_family_perfinfo = {
    .guid = ETW_KGUID(0xce1dbfb4,0x137e,0x4da6,0x87,0xb0,0x3f,0x59,0xaa,0x10,0x2c,0xbc),
    .provider = "Windows Kernel",
    .group = "PerfInfo",
    .events = k_events,
    .event_count = ETW_KCOUNT(k_events),
    .layouts = k_layouts,
    .layout_count = ETW_KCOUNT(k_layouts),
};
