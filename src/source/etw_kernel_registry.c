/* etw_kernel_registry.c - the Registry kernel class family (etw_kernel_tables.h).
 * Layouts: shared/docs/kernel/kernel-mof.md; names: shared/docs/kernel/naming.md.
 * TO BE FILLED: no event types or layouts yet. */
#include "etw_kernel_tables.h"

const etw_kernel_family etw_kernel_family_registry = {
    .guid = ETW_KGUID(0xae53722e,0xc863,0x11d2,0x86,0x59,0x00,0xc0,0x4f,0xa3,0x21,0xa1),
    .provider = "Windows Kernel",
    .group = "Registry",
};
