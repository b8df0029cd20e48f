/* etw_kernel_imageid.c - KernelTraceControl's ImageID class family (etw_kernel_tables.h).
 *
 * Class GUID b3e675d7-2554-4f18-830b-2762732560de: a classic (EVENT_TRACE_HEADER)
 * class that xperf/WPR/PerfView merging writes, provider KernelTraceControl
 * (shared/docs/kernel/kernel-mof.md §2.3). Identity is (GUID, Class.Type,
 * Class.Version); the pointer size is the header's (FULL32/FULL64).
 * Layouts: kernel-mof.md §4.2 (Info v2, DbgID_RSDS/DbgID_ILRSDS v2, DbgPPDB v2,
 * DbgDeterm v1, FileVersion v0), offsets from TraceEvent's
 * SymbolTraceEventParser.cs getters. "None" (type 0x20): TraceEvent reads no
 * field of it; its 12-byte payloads in net.4.5.2.x64.etl are an image base and
 * the process id of the header (ImageBase 0x7f9ccc50000, ProcessId 724 = the
 * event's PID), the DbgDeterm layout. No MOF is registered for these classes:
 * the property names are TraceEvent's, with Id spelled as the kernel classes
 * spell it (ProcessId). Types 0x22 and 0x29 are unknown (Opcode(34/41)).
 * Names: kernel-mof.md §5: type 0 is shown as just "ImageID".
 */
#include "etw_kernel_props.h"

static const etw_kernel_event imageid_events[] = {
    ETW_KEV(0x00, ""), /* PerfView: "ImageID" (opcode name "Info" not shown) */
    ETW_KEV(0x20, "None"),
    ETW_KEV(0x24, "DbgID_RSDS"),
    ETW_KEV(0x25, "DbgID_ILRSDS"),
    ETW_KEV(0x26, "DbgPPDB"),
    ETW_KEV(0x28, "DbgDeterm"),
    ETW_KEV(0x40, "FileVersion"),
};

static const uint8_t t_info[] = {0x00};
static const etw_property p_info[] = {
    ETW_KPTR("ImageBase"), ETW_KSIZET("ImageSize"), ETW_KU32("ProcessId"),
    ETW_KU32("TimeDateStamp"), ETW_KWSTR("OriginalFileName"),
};

static const uint8_t t_none[] = {0x20};
static const uint8_t t_determ[] = {0x28};
static const etw_property p_base_pid[] = {ETW_KPTR("ImageBase"), ETW_KU32("ProcessId")};

static const uint8_t t_rsds[] = {0x24, 0x25};
static const etw_property p_rsds[] = {
    ETW_KPTR("ImageBase"), ETW_KU32("ProcessId"), ETW_KGUIDV("GuidSig"), ETW_KU32("Age"),
    ETW_KSTR("PdbFileName"),
};

static const uint8_t t_ppdb[] = {0x26};
static const etw_property p_ppdb[] = {
    ETW_KPTR("ImageBase"), ETW_KU32("ProcessId"), ETW_KU32("TimeDateStamp"),
    ETW_KU16("MajorVersion"), ETW_KU16("MinorVersion"),
};

static const uint8_t t_filever[] = {0x40};
static const etw_property p_filever[] = {
    ETW_KU32("ImageSize"),       ETW_KU32("TimeDateStamp"),  ETW_KWSTR("OrigFileName"),
    ETW_KWSTR("FileDescription"), ETW_KWSTR("FileVersion"),  ETW_KWSTR("BinFileVersion"),
    ETW_KWSTR("VerLanguage"),    ETW_KWSTR("ProductName"),   ETW_KWSTR("CompanyName"),
    ETW_KWSTR("ProductVersion"), ETW_KWSTR("FileId"),        ETW_KWSTR("ProgramId"),
};

static const etw_kernel_layout imageid_layouts[] = {
    ETW_KLAYOUT("ImageId_Info", 2, t_info, p_info),
    ETW_KLAYOUT("ImageId_None", 2, t_none, p_base_pid),
    ETW_KLAYOUT("ImageId_DbgId_RSDS", 2, t_rsds, p_rsds),
    ETW_KLAYOUT("ImageId_DbgId_PPDB", 2, t_ppdb, p_ppdb),
    ETW_KLAYOUT("ImageId_DbgId_Determ", 1, t_determ, p_base_pid),
    ETW_KLAYOUT("ImageId_FileVersion", 0, t_filever, p_filever),
};

const etw_kernel_family etw_kernel_family_imageid = {
    .guid = ETW_KGUID(0xb3e675d7,0x2554,0x4f18,0x83,0x0b,0x27,0x62,0x73,0x25,0x60,0xde),
    .provider = "KernelTraceControl",
    .group = "ImageID",
    .events = imageid_events,
    .event_count = ETW_KCOUNT(imageid_events),
    .layouts = imageid_layouts,
    .layout_count = ETW_KCOUNT(imageid_layouts),
};
