/* etw_kernel_tcpip.c - the TcpIp kernel class family (etw_kernel_tables.h).
 *
 * Class GUID 9a280ac0-c8e0-11d1-84e2-00c04fb998a2 (TcpIpGuid, hook group 0x06).
 * Layouts: the Vista MOF in PerfView (kerneltraceeventparser.mof: TcpIp_V0_*,
 * TcpIp_V1_*, TcpIp_* v2) and shared/docs/kernel/kernel-mof.md §4.2 (v2
 * offsets) and §7.1-7.2: the v2 classes put seqnum before connid (v1: after),
 * and connid (PointerType) is pointer-sized. Addresses and ports in network
 * order (§4.0). Names: shared/docs/kernel/naming.md (PerfView keeps the v1
 * names Send/Recv/... for the IPv4 events).
 * pid/tid (kernel-mof.md §6): the payload's PID names the process.
 */
#include "etw_kernel_props.h"

#define TCP_EV(t, n) ETW_KEV_IDS(t, n, "PID", NULL, 0)

static const etw_kernel_event tcpip_events[] = {
    TCP_EV(10, "Send"),           TCP_EV(11, "Recv"),
    TCP_EV(12, "Connect"),        TCP_EV(13, "Disconnect"),
    TCP_EV(14, "Retransmit"),     TCP_EV(15, "Accept"),
    TCP_EV(16, "Reconnect"),      ETW_KEV(17, "Fail"),
    TCP_EV(18, "TCPCopy"),        TCP_EV(19, "ARPCopy"),
    TCP_EV(20, "FullACK"),        TCP_EV(21, "PartACK"),
    TCP_EV(22, "DupACK"),         TCP_EV(26, "SendIPV6"),
    TCP_EV(27, "RecvIPV6"),       TCP_EV(28, "ConnectIPV6"),
    TCP_EV(29, "DisconnectIPV6"), TCP_EV(30, "RetransmitIPV6"),
    TCP_EV(31, "AcceptIPV6"),     TCP_EV(32, "ReconnectIPV6"),
    TCP_EV(34, "TCPCopyIPV6"),
};

/* v0 (TcpIp_V0_TypeGroup1): addresses first, PID last. */
static const uint8_t t_v0[] = {10, 11, 12, 13, 14, 15};
static const etw_property p_v0[] = {
    ETW_KIPV4("daddr"), ETW_KIPV4("saddr"), ETW_KPORT("dport"), ETW_KPORT("sport"),
    ETW_KU32("size"),   ETW_KU32("PID"),
};

/* v1 */
static const uint8_t t_v1_send[] = {10};
static const etw_property p_v1_send[] = {
    ETW_KU32("PID"),      ETW_KU32("size"),    ETW_KIPV4("daddr"), ETW_KIPV4("saddr"),
    ETW_KPORT("dport"),   ETW_KPORT("sport"),  ETW_KU32("startime"), ETW_KU32("endtime"),
    ETW_KPTR("connid"),   ETW_KU32("seqnum"),
};
static const uint8_t t_v1_recv[] = {11};
static const uint8_t t_v1_group1[] = {13, 14, 16};
static const uint8_t t_v1_group3[] = {18, 19, 20, 21, 22};
static const etw_property p_v1_generic[] = {
    ETW_KU32("PID"),    ETW_KU32("size"),   ETW_KIPV4("daddr"), ETW_KIPV4("saddr"),
    ETW_KPORT("dport"), ETW_KPORT("sport"), ETW_KPTR("connid"), ETW_KU32("seqnum"),
};
static const uint8_t t_v1_group2[] = {12, 15};
static const etw_property p_v1_connect[] = {
    ETW_KU32("PID"),        ETW_KU32("size"),        ETW_KIPV4("daddr"), ETW_KIPV4("saddr"),
    ETW_KPORT("dport"),     ETW_KPORT("sport"),      ETW_KU16("mss"),    ETW_KU16("sackopt"),
    ETW_KU16("tsopt"),      ETW_KU16("wsopt"),       ETW_KU32("rcvwin"), ETW_KI16("rcvwinscale"),
    ETW_KI16("sndwinscale"), ETW_KPTR("connid"),     ETW_KU32("seqnum"),
};
static const uint8_t t_fail[] = {17};
static const etw_property p_v1_fail[] = {ETW_KU32("Proto")};

/* v2: IPv4 */
static const uint8_t t_v2_send4[] = {10};
static const etw_property p_v2_send4[] = {
    ETW_KU32("PID"),    ETW_KU32("size"),   ETW_KIPV4("daddr"),   ETW_KIPV4("saddr"),
    ETW_KPORT("dport"), ETW_KPORT("sport"), ETW_KU32("startime"), ETW_KU32("endtime"),
    ETW_KU32("seqnum"), ETW_KPTR("connid"),
};
static const uint8_t t_v2_group1[] = {11, 13, 14, 16, 18};
static const etw_property p_v2_generic4[] = {
    ETW_KU32("PID"),    ETW_KU32("size"),   ETW_KIPV4("daddr"), ETW_KIPV4("saddr"),
    ETW_KPORT("dport"), ETW_KPORT("sport"), ETW_KU32("seqnum"), ETW_KPTR("connid"),
};
static const uint8_t t_v2_group2[] = {12, 15};
static const etw_property p_v2_connect4[] = {
    ETW_KU32("PID"),         ETW_KU32("size"),   ETW_KIPV4("daddr"), ETW_KIPV4("saddr"),
    ETW_KPORT("dport"),      ETW_KPORT("sport"), ETW_KU16("mss"),    ETW_KU16("sackopt"),
    ETW_KU16("tsopt"),       ETW_KU16("wsopt"),  ETW_KU32("rcvwin"), ETW_KI16("rcvwinscale"),
    ETW_KI16("sndwinscale"), ETW_KU32("seqnum"), ETW_KPTR("connid"),
};
static const etw_property p_v2_fail[] = {ETW_KU16("Proto"), ETW_KU16("FailureCode")};

/* v2: IPv6 */
static const uint8_t t_v2_send6[] = {26};
static const etw_property p_v2_send6[] = {
    ETW_KU32("PID"),    ETW_KU32("size"),   ETW_KIPV6("daddr"),   ETW_KIPV6("saddr"),
    ETW_KPORT("dport"), ETW_KPORT("sport"), ETW_KU32("startime"), ETW_KU32("endtime"),
    ETW_KU32("seqnum"), ETW_KPTR("connid"),
};
static const uint8_t t_v2_group3[] = {27, 29, 30, 32, 34};
static const etw_property p_v2_generic6[] = {
    ETW_KU32("PID"),    ETW_KU32("size"),   ETW_KIPV6("daddr"), ETW_KIPV6("saddr"),
    ETW_KPORT("dport"), ETW_KPORT("sport"), ETW_KU32("seqnum"), ETW_KPTR("connid"),
};
static const uint8_t t_v2_group4[] = {28, 31};
static const etw_property p_v2_connect6[] = {
    ETW_KU32("PID"),         ETW_KU32("size"),   ETW_KIPV6("daddr"), ETW_KIPV6("saddr"),
    ETW_KPORT("dport"),      ETW_KPORT("sport"), ETW_KU16("mss"),    ETW_KU16("sackopt"),
    ETW_KU16("tsopt"),       ETW_KU16("wsopt"),  ETW_KU32("rcvwin"), ETW_KI16("rcvwinscale"),
    ETW_KI16("sndwinscale"), ETW_KU32("seqnum"), ETW_KPTR("connid"),
};

static const etw_kernel_layout tcpip_layouts[] = {
    ETW_KLAYOUT("TcpIp_V0_TypeGroup1", 0, t_v0, p_v0),
    ETW_KLAYOUT("TcpIp_V1_Send", 1, t_v1_send, p_v1_send),
    ETW_KLAYOUT("TcpIp_V1_Receive", 1, t_v1_recv, p_v1_generic),
    ETW_KLAYOUT("TcpIp_V1_TypeGroup1", 1, t_v1_group1, p_v1_generic),
    ETW_KLAYOUT("TcpIp_V1_TypeGroup2", 1, t_v1_group2, p_v1_connect),
    ETW_KLAYOUT("TcpIp_V1_TypeGroup3", 1, t_v1_group3, p_v1_generic),
    ETW_KLAYOUT("TcpIp_V1_Fail", 1, t_fail, p_v1_fail),
    ETW_KLAYOUT("TcpIp_SendIPV4", 2, t_v2_send4, p_v2_send4),
    ETW_KLAYOUT("TcpIp_TypeGroup1", 2, t_v2_group1, p_v2_generic4),
    ETW_KLAYOUT("TcpIp_TypeGroup2", 2, t_v2_group2, p_v2_connect4),
    ETW_KLAYOUT("TcpIp_Fail", 2, t_fail, p_v2_fail),
    ETW_KLAYOUT("TcpIp_SendIPV6", 2, t_v2_send6, p_v2_send6),
    ETW_KLAYOUT("TcpIp_TypeGroup3", 2, t_v2_group3, p_v2_generic6),
    ETW_KLAYOUT("TcpIp_TypeGroup4", 2, t_v2_group4, p_v2_connect6),
};

const etw_kernel_family etw_kernel_family_tcpip = {
    .guid = ETW_KGUID(0x9a280ac0,0xc8e0,0x11d1,0x84,0xe2,0x00,0xc0,0x4f,0xb9,0x98,0xa2),
    .provider = "Windows Kernel",
    .group = "TcpIp",
    .events = tcpip_events,
    .event_count = ETW_KCOUNT(tcpip_events),
    .layouts = tcpip_layouts,
    .layout_count = ETW_KCOUNT(tcpip_layouts),
};
