/* etw_kernel_splitio.c - the SplitIo kernel class family (etw_kernel_tables.h).
 *
 * Class GUID d837ca92-12b9-44a5-ad6a-3a65b3578aa8 (SplitIoGuid, hook group 0x1B).
 * Layout: the Vista MOF in PerfView (kerneltraceeventparser.mof: SplitIo_Info,
 * event type 32 "VolMgr"). The class carries no EventVersion (version 0)
 * while Vista-era kernel events log version 2: both are listed.
 * Names: shared/docs/kernel/naming.md. pid/tid: the header's.
 */
#include "etw_kernel_props.h"

static const etw_kernel_event splitio_events[] = {
    ETW_KEV(32, "VolMgr"),
};

static const uint8_t t_volmgr[] = {32};
static const etw_property p_volmgr[] = {ETW_KPTR("ParentIrp"), ETW_KPTR("ChildIrp")};

static const etw_kernel_layout splitio_layouts[] = {
    ETW_KLAYOUT("SplitIo_Info", 0, t_volmgr, p_volmgr),
    ETW_KLAYOUT("SplitIo_Info", 2, t_volmgr, p_volmgr),
};

const etw_kernel_family etw_kernel_family_splitio = {
    .guid = ETW_KGUID(0xd837ca92,0x12b9,0x44a5,0xad,0x6a,0x3a,0x65,0xb3,0x57,0x8a,0xa8),
    .provider = "Windows Kernel",
    .group = "SplitIo",
    .events = splitio_events,
    .event_count = ETW_KCOUNT(splitio_events),
    .layouts = splitio_layouts,
    .layout_count = ETW_KCOUNT(splitio_layouts),
};
