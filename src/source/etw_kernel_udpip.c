/* etw_kernel_udpip.c - the UdpIp kernel class family (etw_kernel_tables.h).
 * Layouts: shared/docs/kernel/kernel-mof.md; names: shared/docs/kernel/naming.md.
 * TO BE FILLED: no event types or layouts yet. */
#include "etw_kernel_tables.h"

const etw_kernel_family etw_kernel_family_udpip = {
    .guid = ETW_KGUID(0xbf3a50c5,0xa9c9,0x4988,0xa0,0x05,0x2d,0xf0,0xb7,0xc8,0x0f,0x80),
    .provider = "Windows Kernel",
    .group = "UdpIp",
};
