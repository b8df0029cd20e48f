/* etw_kernel_eventtrace.c - the EventTrace kernel class family (etw_kernel_tables.h).
 * Layouts: shared/docs/kernel/kernel-mof.md section 4.2 (EventTrace_Header,
 * Header_Extension, Header_PartitionInfoExtension); names: shared/docs/kernel/naming.md.
 *
 * The trace's first record, the log-file header, is decoded apart (etw_json.c,
 * PerfView's field names); this layout serves a header record met later in the
 * stream. Its two stale user pointers are named LoggerNamePtr and LogFileNamePtr so
 * that they do not collide with the strings after the fixed part (SessionName,
 * LogFileName, the names the first header shows).
 *
 * PartitionInfoExtension: the layout of its EventVersion 0 form (two GUIDs, 48 bytes,
 * the only form in the samples); the EventVersion 2 form (two strings) is reported
 * by etw_kernel_payload_problem-like checks as not decoded (see docs/kernel.md).
 * DbgIdRSDS (64), BuildInfo (66), ProviderBinaryPath (67): their layouts are not
 * in the public sources, so they are named and their bytes shown raw. */
#include "etw_kernel_props.h"

/* Event types: Header 0, Extension 5, RundownComplete 8, EndExtension 32,
 * DbgIdRSDS 64, BuildInfo 66, ProviderBinaryPath 67, PartitionInfoExtension 80. */
static const uint8_t k_header[] = {0};
static const uint8_t k_ext[] = {5, 32};
static const uint8_t k_partition[] = {80};

static const etw_property k_header_v2[] = {
    ETW_KU32("BufferSize"),
    ETW_KU32("Version"),
    ETW_KU32("ProviderVersion"),
    ETW_KU32("NumberOfProcessors"),
    ETW_KFILETIME("EndTime"),
    ETW_KU32("TimerResolution"),
    ETW_KU32("MaximumFileSize"),
    ETW_KU32("LogFileMode"),
    ETW_KU32("BuffersWritten"),
    ETW_KU32("StartBuffers"),
    ETW_KU32("PointerSize"),
    ETW_KU32("EventsLost"),
    ETW_KU32("CPUSpeed"),
    ETW_KPTR("LoggerNamePtr"),
    ETW_KPTR("LogFileNamePtr"),
    {.name = "TimeZoneInformation", .in_type = ETW_INTYPE_BINARY, .flags = ETW_PROP_LENGTH_FIXED, .length = 176},
    ETW_KFILETIME("BootTime"),
    ETW_KI64("PerfFreq"),
    ETW_KFILETIME("StartTime"),
    ETW_KU32("ReservedFlags"),
    ETW_KU32("BuffersLost"),
    ETW_KWSTR("SessionName"),
    ETW_KWSTR("LogFileName"),
};

static const etw_property k_ext_v2[] = {
    ETW_KU32("GroupMask1"), ETW_KU32("GroupMask2"), ETW_KU32("GroupMask3"), ETW_KU32("GroupMask4"),
    ETW_KU32("GroupMask5"), ETW_KU32("GroupMask6"), ETW_KU32("GroupMask7"), ETW_KU32("GroupMask8"),
    ETW_KU32("KernelEventVersion"),
};

static const etw_property k_partition_v2[] = {
    ETW_KU16("EventVersion"),
    ETW_KU16("Reserved"),
    ETW_KU32("PartitionType"),
    ETW_KI64("QpcOffsetFromRoot"),
    ETW_KGUIDV("PartitionId"),
    ETW_KGUIDV("ParentId"),
};

static const etw_kernel_layout k_layouts[] = {
    ETW_KLAYOUT("EventTrace_Header_V0", 0, k_header, k_header_v2),
    ETW_KLAYOUT("EventTrace_Header_V1", 1, k_header, k_header_v2),
    ETW_KLAYOUT("EventTrace_Header", 2, k_header, k_header_v2),
    ETW_KLAYOUT("Header_Extension", 2, k_ext, k_ext_v2),
    ETW_KLAYOUT("Header_PartitionInfoExtensionV2_TypeGroup", 2, k_partition, k_partition_v2),
};

static const etw_kernel_event k_events[] = {
    ETW_KEV(0, ""),
    ETW_KEV(5, "Extension"),
    ETW_KEV(8, "RundownComplete"),
    ETW_KEV(32, "EndExtension"),
    ETW_KEV(64, "DbgIdRSDS"),
    ETW_KEV(66, "BuildInfo"),
    ETW_KEV(67, "ProviderBinaryPath"),
    ETW_KEV(80, "PartitionInfoExtension"),
};

const etw_kernel_family etw_kernel_family_eventtrace = {
    .guid = ETW_KGUID(0x68fdd900,0x4a3e,0x11d1,0x84,0xf4,0x00,0x00,0xf8,0x04,0x64,0xe3),
    .provider = "Windows Kernel",
    .group = "EventTrace",
    .events = k_events,
    .event_count = ETW_KCOUNT(k_events),
    .layouts = k_layouts,
    .layout_count = ETW_KCOUNT(k_layouts),
};
