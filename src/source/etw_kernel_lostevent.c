/* etw_kernel_lostevent.c - the LostEvent (MOF Lost_Event) class family (etw_kernel_tables.h).
 *
 * Class GUID 6a399ae0-4bc6-4de9-870b-3657f8947e7e: not a hook group but the
 * real-time delivery's lost-event notices (shared/docs/kernel/kernel-mof.md
 * §2.2 notes). The Vista MOF in PerfView (kerneltraceeventparser.mof) has
 * RT_LostEvent (type 32) with no properties; types 33 RTLostBuffer and 34
 * RTLostFile carry none either. TraceEvent registers type 32 as task
 * "LostEvent" with no opcode name, so its event is shown as "LostEvent".
 * The classes carry no EventVersion; versions 0 and 2 are listed.
 */
#include "etw_kernel_props.h"

static const etw_kernel_event lostevent_events[] = {
    ETW_KEV(32, ""), /* PerfView: "LostEvent" */
    ETW_KEV(33, "RTLostBuffer"),
    ETW_KEV(34, "RTLostFile"),
};

static const uint8_t t_lost[] = {32, 33, 34};

static const etw_kernel_layout lostevent_layouts[] = {
    ETW_KLAYOUT_EMPTY("RT_LostEvent", 0, t_lost),
    ETW_KLAYOUT_EMPTY("RT_LostEvent", 2, t_lost),
};

const etw_kernel_family etw_kernel_family_lostevent = {
    .guid = ETW_KGUID(0x6a399ae0,0x4bc6,0x4de9,0x87,0x0b,0x36,0x57,0xf8,0x94,0x7e,0x7e),
    .provider = "Windows Kernel",
    .group = "LostEvent",
    .events = lostevent_events,
    .event_count = ETW_KCOUNT(lostevent_events),
    .layouts = lostevent_layouts,
    .layout_count = ETW_KCOUNT(lostevent_layouts),
};
