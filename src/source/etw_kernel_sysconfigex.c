/* etw_kernel_sysconfigex.c - KernelTraceControl's SystemConfigEx class family (etw_kernel_tables.h).
 *
 * Class GUID 9b79ee91-b5fd-41c0-a243-4248e266e9d0: a classic (EVENT_TRACE_HEADER)
 * class written by trace merging (shared/docs/kernel/kernel-mof.md §2.3).
 * PerfView files it under provider "Windows Kernel", task "SysConfig"
 * (contract docs/json-output.md, key provider; kernel-mof.md §5).
 * Layouts (all v0): kernel-mof.md §4.2 (BuildInfo, SystemPaths,
 * VolumeMapping; checked against snail-server's system_config_ex views);
 * UnknownVolume: TraceEvent reads it as one UTF-16 string (StringTraceData,
 * field "Value"), seen in net.4.5.2.x64.etl as "\Device\HarddiskVolume1\".
 * BuildInfo's InstallDate is a FILETIME (net.4.5.2.x64.etl:
 * 0x019db1ded53e8000 = 1970-01-01, as PerfView shows it). No MOF is
 * registered for these classes: the property names are TraceEvent's.
 * Type 0x25 is unknown to TraceEvent (Opcode(37)) and stays unnamed.
 */
#include "etw_kernel_props.h"

static const etw_kernel_event sysconfigex_events[] = {
    ETW_KEV(0x20, "BuildInfo"),
    ETW_KEV(0x21, "SystemPaths"),
    ETW_KEV(0x22, "UnknownVolume"),
    ETW_KEV(0x23, "VolumeMapping"),
};

static const uint8_t t_build[] = {0x20};
static const etw_property p_build[] = {
    ETW_KFILETIME("InstallDate"), ETW_KWSTR("BuildLab"), ETW_KWSTR("ProductName"),
};
static const uint8_t t_paths[] = {0x21};
static const etw_property p_paths[] = {
    ETW_KWSTR("SystemDirectory"), ETW_KWSTR("SystemWindowsDirectory"),
};
static const uint8_t t_unknown[] = {0x22};
static const etw_property p_unknown[] = {ETW_KWSTR("Value")};
static const uint8_t t_volume[] = {0x23};
static const etw_property p_volume[] = {ETW_KWSTR("NtPath"), ETW_KWSTR("DosPath")};

static const etw_kernel_layout sysconfigex_layouts[] = {
    ETW_KLAYOUT("SystemConfigEx_BuildInfo", 0, t_build, p_build),
    ETW_KLAYOUT("SystemConfigEx_SystemPaths", 0, t_paths, p_paths),
    ETW_KLAYOUT("SystemConfigEx_UnknownVolume", 0, t_unknown, p_unknown),
    ETW_KLAYOUT("SystemConfigEx_VolumeMapping", 0, t_volume, p_volume),
};

const etw_kernel_family etw_kernel_family_sysconfigex = {
    .guid = ETW_KGUID(0x9b79ee91,0xb5fd,0x41c0,0xa2,0x43,0x42,0x48,0xe2,0x66,0xe9,0xd0),
    .provider = "Windows Kernel",
    .group = "SysConfig",
    .events = sysconfigex_events,
    .event_count = ETW_KCOUNT(sysconfigex_events),
    .layouts = sysconfigex_layouts,
    .layout_count = ETW_KCOUNT(sysconfigex_layouts),
};
