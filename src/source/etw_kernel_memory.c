/* etw_kernel_memory.c - the Memory kernel class family (etw_kernel_tables.h).
 * Layouts: shared/docs/kernel/kernel-mof.md; names: shared/docs/kernel/naming.md.
 * TO BE FILLED: no event types or layouts yet. */
#include "etw_kernel_tables.h"

const etw_kernel_family etw_kernel_family_memory = {
    .guid = ETW_KGUID(0x3d6fa8d3,0xfe05,0x11d0,0x9d,0xda,0x00,0xc0,0x4f,0xd7,0xba,0x7c),
    .provider = "Windows Kernel",
    .group = "Memory",
};
