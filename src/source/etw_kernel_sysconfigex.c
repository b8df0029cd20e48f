/* etw_kernel_sysconfigex.c - the SysConfig kernel class family (etw_kernel_tables.h).
 * Layouts: shared/docs/kernel/kernel-mof.md; names: shared/docs/kernel/naming.md.
 * TO BE FILLED: no event types or layouts yet. */
#include "etw_kernel_tables.h"

const etw_kernel_family etw_kernel_family_sysconfigex = {
    .guid = ETW_KGUID(0x9b79ee91,0xb5fd,0x41c0,0xa2,0x43,0x42,0x48,0xe2,0x66,0xe9,0xd0),
    .provider = "Windows Kernel",
    .group = "SysConfig",
};
