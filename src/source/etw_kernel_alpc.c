/* etw_kernel_alpc.c - the ALPC kernel class family (etw_kernel_tables.h).
 * Layouts: shared/docs/kernel/kernel-mof.md; names: shared/docs/kernel/naming.md.
 * TO BE FILLED: no event types or layouts yet. */
#include "etw_kernel_tables.h"

const etw_kernel_family etw_kernel_family_alpc = {
    .guid = ETW_KGUID(0x45d8cccd,0x539f,0x4b72,0xa8,0xb7,0x5c,0x68,0x31,0x42,0x60,0x9a),
    .provider = "Windows Kernel",
    .group = "ALPC",
};
