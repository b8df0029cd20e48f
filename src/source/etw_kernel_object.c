/* etw_kernel_object.c - the Object kernel class family (etw_kernel_tables.h).
 * Layouts: shared/docs/kernel/kernel-mof.md; names: shared/docs/kernel/naming.md.
 * TO BE FILLED: no event types or layouts yet. */
#include "etw_kernel_tables.h"

const etw_kernel_family etw_kernel_family_object = {
    .guid = ETW_KGUID(0x89497f50,0xeffe,0x4440,0x8c,0xf2,0xce,0x6b,0x1c,0xdc,0xac,0xa7),
    .provider = "Windows Kernel",
    .group = "Object",
};
