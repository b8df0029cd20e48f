/* etw_kernel_image.c - the Image kernel class family (etw_kernel_tables.h).
 * Layouts: shared/docs/kernel/kernel-mof.md; names: shared/docs/kernel/naming.md.
 * TO BE FILLED: no event types or layouts yet. */
#include "etw_kernel_tables.h"

const etw_kernel_family etw_kernel_family_image = {
    .guid = ETW_KGUID(0x2cb15d1d,0x5fc1,0x11d2,0xab,0xe1,0x00,0xa0,0xc9,0x11,0xf5,0x18),
    .provider = "Windows Kernel",
    .group = "Image",
};
