/* etw_kernel_stackwalk.c - the StackWalk kernel class family (etw_kernel_tables.h).
 * Layouts: shared/docs/kernel/kernel-mof.md; names: shared/docs/kernel/naming.md.
 * TO BE FILLED: no event types or layouts yet. */
#include "etw_kernel_tables.h"

const etw_kernel_family etw_kernel_family_stackwalk = {
    .guid = ETW_KGUID(0xdef2fe46,0x7bd6,0x4b80,0xbd,0x94,0xf5,0x7f,0xe2,0x0d,0x0c,0xe3),
    .provider = "Windows Kernel",
    .group = "StackWalk",
};
