/* etw_kernel_alpc.c - the ALPC kernel class family (etw_kernel_tables.h).
 *
 * Class GUID 45d8cccd-539f-4b72-a8b7-5c683142609a (ALPCGuid, hook group 0x1A).
 * Layouts: the Vista MOF in PerfView (kerneltraceeventparser.mof:
 * ALPC_Send_Message, ALPC_Receive_Message, ALPC_Wait_For_Reply,
 * ALPC_Wait_For_New_Message, ALPC_Unwait). The MOF classes carry no
 * EventVersion (version 0) while Vista-era kernel events log version 2;
 * TraceEvent accepts both with the same layout, so both are listed.
 * Names: shared/docs/kernel/naming.md. pid/tid: the header's.
 */
#include "etw_kernel_props.h"

static const etw_kernel_event alpc_events[] = {
    ETW_KEV(33, "SendMessage"),       ETW_KEV(34, "ReceiveMessage"),
    ETW_KEV(35, "WaitForReply"),      ETW_KEV(36, "WaitForNewMessage"),
    ETW_KEV(37, "Unwait"),
};

static const uint8_t t_send[] = {33};
static const uint8_t t_recv[] = {34};
static const uint8_t t_reply[] = {35};
static const etw_property p_message[] = {ETW_KU32("MessageID")};
static const uint8_t t_wait_new[] = {36};
static const etw_property p_wait_new[] = {ETW_KU32("IsServerPort"), ETW_KSTR("PortName")};
static const uint8_t t_unwait[] = {37};
static const etw_property p_unwait[] = {ETW_KU32("Status")};

static const etw_kernel_layout alpc_layouts[] = {
    ETW_KLAYOUT("ALPC_Send_Message", 0, t_send, p_message),
    ETW_KLAYOUT("ALPC_Receive_Message", 0, t_recv, p_message),
    ETW_KLAYOUT("ALPC_Wait_For_Reply", 0, t_reply, p_message),
    ETW_KLAYOUT("ALPC_Wait_For_New_Message", 0, t_wait_new, p_wait_new),
    ETW_KLAYOUT("ALPC_Unwait", 0, t_unwait, p_unwait),
    ETW_KLAYOUT("ALPC_Send_Message", 2, t_send, p_message),
    ETW_KLAYOUT("ALPC_Receive_Message", 2, t_recv, p_message),
    ETW_KLAYOUT("ALPC_Wait_For_Reply", 2, t_reply, p_message),
    ETW_KLAYOUT("ALPC_Wait_For_New_Message", 2, t_wait_new, p_wait_new),
    ETW_KLAYOUT("ALPC_Unwait", 2, t_unwait, p_unwait),
};

const etw_kernel_family etw_kernel_family_alpc = {
    .guid = ETW_KGUID(0x45d8cccd,0x539f,0x4b72,0xa8,0xb7,0x5c,0x68,0x31,0x42,0x60,0x9a),
    .provider = "Windows Kernel",
    .group = "ALPC",
    .events = alpc_events,
    .event_count = ETW_KCOUNT(alpc_events),
    .layouts = alpc_layouts,
    .layout_count = ETW_KCOUNT(alpc_layouts),
};
