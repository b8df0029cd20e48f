/* etw_kernel_object.c - the Object (MOF ObTrace) kernel class family (etw_kernel_tables.h).
 *
 * Class GUID 89497f50-effe-4440-8cf2-ce6b1cdcaca7 (ObjectGuid, hook group 0x11).
 * Names: shared/docs/kernel/naming.md (PerfView's where it has one, else the
 * MOF event type names). Layouts: TraceEvent's getters (KernelTraceEventParser.cs
 * ObjectHandleTraceData, ObjectDuplicateHandleTraceData, ObjectNameTraceData,
 * ObjectTypeNameTraceData), version 2; no sample trace has Object events, so
 * these are not verified on real bytes. Bytes past the last known property
 * stay visible as trailing data.
 * pid/tid: the header's.
 */
#include "etw_kernel_props.h"

static const etw_kernel_event object_events[] = {
    ETW_KEV(32, "CreateHandle"),   ETW_KEV(33, "CloseHandle"),
    ETW_KEV(34, "DuplicateHandle"), ETW_KEV(36, "TypeDCStart"),
    ETW_KEV(37, "TypeDCEnd"),      ETW_KEV(38, "HandleDCStart"),
    ETW_KEV(39, "HandleDCEnd"),    ETW_KEV(48, "CreateObject"),
    ETW_KEV(49, "DeleteObject"),   ETW_KEV(50, "ReferenceObject"),
    ETW_KEV(51, "DereferenceObject"),
};

/* CreateHandle, CloseHandle: Object at 0, Handle at HostOffset(4,1),
 * ObjectType (u16) at HostOffset(8,1), then the (usually empty) name. */
static const uint8_t t_handle[] = {32, 33};
static const etw_property p_handle[] = {
    ETW_KPTR("Object"), ETW_KX32("Handle"), ETW_KU16("ObjectType"), ETW_KWSTR("ObjectName"),
};
/* DuplicateHandle: SourceHandle HostOffset(4,1), TargetHandle (8,1),
 * TargetProcessId (12,1), ObjectType u16 (16,1), SourceProcessId (18,1). */
static const uint8_t t_dup[] = {34};
static const etw_property p_dup[] = {
    ETW_KPTR("Object"),        ETW_KX32("SourceHandle"), ETW_KX32("TargetHandle"),
    ETW_KU32("TargetProcessId"), ETW_KU16("ObjectType"), ETW_KU32("SourceProcessId"),
};
/* TypeDCStart, TypeDCEnd: ObjectType u16, 2 reserved bytes, the type name. */
static const uint8_t t_type[] = {36, 37};
static const etw_property p_type[] = {
    ETW_KU16("ObjectType"), ETW_KU16("Reserved"), ETW_KWSTR("ObjectTypeName"),
};
/* HandleDCStart, HandleDCEnd: Object, ProcessId at HostOffset(4,1), Handle
 * (8,1), ObjectType u16 (12,1), ObjectName (14,1). */
static const uint8_t t_handle_dc[] = {38, 39};
static const etw_property p_handle_dc[] = {
    ETW_KPTR("Object"), ETW_KU32("ProcessId"), ETW_KX32("Handle"), ETW_KU16("ObjectType"),
    ETW_KWSTR("ObjectName"),
};

static const etw_kernel_layout object_layouts[] = {
    ETW_KLAYOUT("ObHandleEvent", 2, t_handle, p_handle),
    ETW_KLAYOUT("ObHandleDuplicateEvent", 2, t_dup, p_dup),
    ETW_KLAYOUT("ObTypeEvent", 2, t_type, p_type),
    ETW_KLAYOUT("ObHandleRundownEvent", 2, t_handle_dc, p_handle_dc),
};

const etw_kernel_family etw_kernel_family_object = {
    .guid = ETW_KGUID(0x89497f50,0xeffe,0x4440,0x8c,0xf2,0xce,0x6b,0x1c,0xdc,0xac,0xa7),
    .provider = "Windows Kernel",
    .group = "Object",
    .events = object_events,
    .event_count = ETW_KCOUNT(object_events),
    .layouts = object_layouts,
    .layout_count = ETW_KCOUNT(object_layouts),
};
