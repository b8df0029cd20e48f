/* etw_kernel_sysconfig.c - the SystemConfig kernel class family (etw_kernel_tables.h).
 * Layouts: shared/docs/kernel/kernel-mof.md; names: shared/docs/kernel/naming.md.
 * TO BE FILLED: no event types or layouts yet. */
#include "etw_kernel_tables.h"

const etw_kernel_family etw_kernel_family_sysconfig = {
    .guid = ETW_KGUID(0x01853a65,0x418f,0x4f36,0xae,0xfc,0xdc,0x0f,0x1d,0x2f,0xd2,0x35),
    .provider = "Windows Kernel",
    .group = "SystemConfig",
};
