/* etw_kernel_udpip.c - the UdpIp kernel class family (etw_kernel_tables.h).
 *
 * Class GUID bf3a50c5-a9c9-4988-a005-2df0b7c80f80 (UdpIpGuid, hook group 0x08).
 * Layouts: the Vista MOF in PerfView (kerneltraceeventparser.mof: UdpIp_V0_TypeGroup1,
 * UdpIp_V1_TypeGroup1, UdpIp_TypeGroup1/2 and UdpIp_Fail v2) and
 * shared/docs/kernel/kernel-mof.md §4.2 (v2 offsets; connid is pointer-sized,
 * §7.2). Addresses and ports in network order (§4.0). Names:
 * shared/docs/kernel/naming.md.
 * pid/tid (kernel-mof.md §6): the payload's PID names the process (v0 has
 * only a pointer-sized "context").
 */
#include "etw_kernel_props.h"

#define UDP_EV(t, n) ETW_KEV_IDS(t, n, "PID", NULL, 0)

static const etw_kernel_event udpip_events[] = {
    UDP_EV(10, "Send"),     UDP_EV(11, "Recv"),     ETW_KEV(17, "Fail"),
    UDP_EV(26, "SendIPV6"), UDP_EV(27, "RecvIPV6"),
};

static const uint8_t t_v4[] = {10, 11};
static const etw_property p_v0[] = {
    ETW_KPTR("context"), ETW_KIPV4("saddr"), ETW_KPORT("sport"), ETW_KU16("size"),
    ETW_KIPV4("daddr"),  ETW_KPORT("dport"), ETW_KU16("dsize"),
};
static const etw_property p_v1[] = {
    ETW_KU32("PID"),    ETW_KU32("size"),   ETW_KIPV4("daddr"), ETW_KIPV4("saddr"),
    ETW_KPORT("dport"), ETW_KPORT("sport"),
};
static const etw_property p_v2_4[] = {
    ETW_KU32("PID"),    ETW_KU32("size"),   ETW_KIPV4("daddr"), ETW_KIPV4("saddr"),
    ETW_KPORT("dport"), ETW_KPORT("sport"), ETW_KU32("seqnum"), ETW_KPTR("connid"),
};
static const uint8_t t_fail[] = {17};
static const etw_property p_fail[] = {ETW_KU16("Proto"), ETW_KU16("FailureCode")};
static const uint8_t t_v6[] = {26, 27};
static const etw_property p_v2_6[] = {
    ETW_KU32("PID"),    ETW_KU32("size"),   ETW_KIPV6("daddr"), ETW_KIPV6("saddr"),
    ETW_KPORT("dport"), ETW_KPORT("sport"), ETW_KU32("seqnum"), ETW_KPTR("connid"),
};

static const etw_kernel_layout udpip_layouts[] = {
    ETW_KLAYOUT("UdpIp_V0_TypeGroup1", 0, t_v4, p_v0),
    ETW_KLAYOUT("UdpIp_V1_TypeGroup1", 1, t_v4, p_v1),
    ETW_KLAYOUT("UdpIp_TypeGroup1", 2, t_v4, p_v2_4),
    ETW_KLAYOUT("UdpIp_Fail", 2, t_fail, p_fail),
    ETW_KLAYOUT("UdpIp_TypeGroup2", 2, t_v6, p_v2_6),
};

const etw_kernel_family etw_kernel_family_udpip = {
    .guid = ETW_KGUID(0xbf3a50c5,0xa9c9,0x4988,0xa0,0x05,0x2d,0xf0,0xb7,0xc8,0x0f,0x80),
    .provider = "Windows Kernel",
    .group = "UdpIp",
    .events = udpip_events,
    .event_count = ETW_KCOUNT(udpip_events),
    .layouts = udpip_layouts,
    .layout_count = ETW_KCOUNT(udpip_layouts),
};
