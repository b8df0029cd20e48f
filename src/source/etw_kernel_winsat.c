/* etw_kernel_winsat.c - KernelTraceControl's WinSat class family (etw_kernel_tables.h).
 *
 * Class GUID ed54dff8-c409-4cf6-bf83-05e1e61a09c4: classic records that
 * xperf/WPR merging writes with the machine's WinSAT assessment
 * (shared/docs/kernel/kernel-mof.md §2.3 and its 2026-12-01 correction; the
 * names are TraceEvent's SymbolTraceEventParser: task "WinSat", opcodes 33
 * WinSPR, 35 Metrics, 37 SystemConfig). Payload: u32 State, u32
 * UncompressedLength, then UTF-16LE XML compressed with LZNT1 to the end of
 * the payload; the Xml property's out-type ETW_OUTTYPE_LZNT1_UTF16 makes the
 * writers show it as the XML text (src/common/etw_lznt1.h). In
 * SelfDescribingSingleEvent.etl the three decompress to exactly their
 * UncompressedLength (1052, 2348, 17888 bytes).
 */
#include "etw_kernel_props.h"

static const etw_kernel_event winsat_events[] = {
    ETW_KEV(33, "WinSPR"),
    ETW_KEV(35, "Metrics"),
    ETW_KEV(37, "SystemConfig"),
};

static const uint8_t t_xml[] = {33, 35, 37};
static const etw_property p_xml[] = {
    ETW_KU32("State"),
    ETW_KU32("UncompressedLength"),
    { .name = "Xml", .in_type = ETW_INTYPE_BINARY, .out_type = ETW_OUTTYPE_LZNT1_UTF16,
      .flags = ETW_PROP_LENGTH_TO_END },
};

static const etw_kernel_layout winsat_layouts[] = {
    ETW_KLAYOUT("WinSat_Xml", 0, t_xml, p_xml),
};

const etw_kernel_family etw_kernel_family_winsat = {
    .guid = ETW_KGUID(0xed54dff8,0xc409,0x4cf6,0xbf,0x83,0x05,0xe1,0xe6,0x1a,0x09,0xc4),
    .provider = "KernelTraceControl",
    .group = "WinSat",
    .events = winsat_events,
    .event_count = ETW_KCOUNT(winsat_events),
    .layouts = winsat_layouts,
    .layout_count = ETW_KCOUNT(winsat_layouts),
};
