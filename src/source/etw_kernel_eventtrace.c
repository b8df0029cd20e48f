/* etw_kernel_eventtrace.c - the EventTrace kernel class family (etw_kernel_tables.h).
 * Layouts: shared/docs/kernel/kernel-mof.md; names: shared/docs/kernel/naming.md.
 * TO BE FILLED: no event types or layouts yet. */
#include "etw_kernel_tables.h"

const etw_kernel_family etw_kernel_family_eventtrace = {
    .guid = ETW_KGUID(0x68fdd900,0x4a3e,0x11d1,0x84,0xf4,0x00,0x00,0xf8,0x04,0x64,0xe3),
    .provider = "Windows Kernel",
    .group = "EventTrace",
};
