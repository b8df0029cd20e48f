/* etw_kernel_imageid.c - the ImageID kernel class family (etw_kernel_tables.h).
 * Layouts: shared/docs/kernel/kernel-mof.md; names: shared/docs/kernel/naming.md.
 * TO BE FILLED: no event types or layouts yet. */
#include "etw_kernel_tables.h"

const etw_kernel_family etw_kernel_family_imageid = {
    .guid = ETW_KGUID(0xb3e675d7,0x2554,0x4f18,0x83,0x0b,0x27,0x62,0x73,0x25,0x60,0xde),
    .provider = "KernelTraceControl",
    .group = "ImageID",
};
