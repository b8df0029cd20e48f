/* etw_kernel_lostevent.c - the LostEvent kernel class family (etw_kernel_tables.h).
 * Layouts: shared/docs/kernel/kernel-mof.md; names: shared/docs/kernel/naming.md.
 * TO BE FILLED: no event types or layouts yet. */
#include "etw_kernel_tables.h"

const etw_kernel_family etw_kernel_family_lostevent = {
    .guid = ETW_KGUID(0x6a399ae0,0x4bc6,0x4de9,0x87,0x0b,0x36,0x57,0xf8,0x94,0x7e,0x7e),
    .provider = "Windows Kernel",
    .group = "LostEvent",
};
