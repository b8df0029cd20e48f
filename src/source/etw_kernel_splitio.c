/* etw_kernel_splitio.c - the SplitIo kernel class family (etw_kernel_tables.h).
 * Layouts: shared/docs/kernel/kernel-mof.md; names: shared/docs/kernel/naming.md.
 * TO BE FILLED: no event types or layouts yet. */
#include "etw_kernel_tables.h"

const etw_kernel_family etw_kernel_family_splitio = {
    .guid = ETW_KGUID(0xd837ca92,0x12b9,0x44a5,0xad,0x6a,0x3a,0x65,0xb3,0x57,0x8a,0xa8),
    .provider = "Windows Kernel",
    .group = "SplitIo",
};
