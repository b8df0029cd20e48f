/* etw_kernel_tcpip.c - the TcpIp kernel class family (etw_kernel_tables.h).
 * Layouts: shared/docs/kernel/kernel-mof.md; names: shared/docs/kernel/naming.md.
 * TO BE FILLED: no event types or layouts yet. */
#include "etw_kernel_tables.h"

const etw_kernel_family etw_kernel_family_tcpip = {
    .guid = ETW_KGUID(0x9a280ac0,0xc8e0,0x11d1,0x84,0xe2,0x00,0xc0,0x4f,0xb9,0x98,0xa2),
    .provider = "Windows Kernel",
    .group = "TcpIp",
};
