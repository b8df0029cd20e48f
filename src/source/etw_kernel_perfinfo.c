/* etw_kernel_perfinfo.c - the PerfInfo kernel class family (etw_kernel_tables.h).
 * Layouts: shared/docs/kernel/kernel-mof.md; names: shared/docs/kernel/naming.md.
 * TO BE FILLED: no event types or layouts yet. */
#include "etw_kernel_tables.h"

const etw_kernel_family etw_kernel_family_perfinfo = {
    .guid = ETW_KGUID(0xce1dbfb4,0x137e,0x4da6,0x87,0xb0,0x3f,0x59,0xaa,0x10,0x2c,0xbc),
    .provider = "Windows Kernel",
    .group = "PerfInfo",
};
