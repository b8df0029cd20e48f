/* etw_kernel_image.c - the Image kernel class family (etw_kernel_tables.h).
 * Layouts: shared/docs/kernel/kernel-mof.md section 4.2 (Image_V0_Load, Image_V1_Load,
 * Image_Load v2/v3, KernelBase); names: shared/docs/kernel/naming.md. Live loads
 * arrive as hook 0x030A (Process group, type 10), which the reader files under this
 * class (etw_kernel_group_guid). HypercallPage (type 34): one pointer, 8 bytes in
 * the 64-bit samples (its MOF property name is not in the public sources: ours).
 * pid/tid (kernel-mof.md section 6): Unload, DCStart, DCStop name the payload's
 * ProcessId and no thread; Load keeps the header. */
#include "etw_kernel_props.h"

/* Event types: Unload 2, DCStart 3, DCEnd 4, Load 10, KernelBase 33, HypercallPage 34. */
static const uint8_t k_load_v0[] = {10};
static const uint8_t k_all[] = {2, 3, 4, 10};
static const uint8_t k_kernelbase[] = {33};
static const uint8_t k_hypercall[] = {34};

static const etw_property k_v0[] = {
    ETW_KPTR("BaseAddress"),
    ETW_KU32("ModuleSize"),
    ETW_KWSTR("ImageFileName"),
};

static const etw_property k_v1[] = {
    ETW_KPTR("ImageBase"),
    ETW_KPTR("ImageSize"),
    ETW_KU32("ProcessId"),
    ETW_KWSTR("FileName"),
};

static const etw_property k_v2[] = {
    ETW_KPTR("ImageBase"),
    ETW_KPTR("ImageSize"),
    ETW_KU32("ProcessId"),
    ETW_KU32("ImageCheckSum"),
    ETW_KU32("TimeDateStamp"),
    ETW_KU32("Reserved0"),
    ETW_KPTR("DefaultBase"),
    ETW_KU32("Reserved1"),
    ETW_KU32("Reserved2"),
    ETW_KU32("Reserved3"),
    ETW_KU32("Reserved4"),
    ETW_KWSTR("FileName"),
};

/* v3: Reserved0's four bytes are SignatureLevel, SignatureType, Reserved0 (u16). */
static const etw_property k_v3[] = {
    ETW_KPTR("ImageBase"),
    ETW_KPTR("ImageSize"),
    ETW_KU32("ProcessId"),
    ETW_KU32("ImageCheckSum"),
    ETW_KU32("TimeDateStamp"),
    ETW_KU8("SignatureLevel"),
    ETW_KU8("SignatureType"),
    ETW_KU16("Reserved0"),
    ETW_KPTR("DefaultBase"),
    ETW_KU32("Reserved1"),
    ETW_KU32("Reserved2"),
    ETW_KU32("Reserved3"),
    ETW_KU32("Reserved4"),
    ETW_KWSTR("FileName"),
};

static const etw_property k_kernelbase_v2[] = {ETW_KPTR("ImageBase")};
static const etw_property k_hypercall_v2[] = {ETW_KPTR("HypercallPageVa")};

static const etw_kernel_layout k_layouts[] = {
    ETW_KLAYOUT("Image_V0_Load", 0, k_load_v0, k_v0),
    ETW_KLAYOUT("Image_V1_Load", 1, k_load_v0, k_v1),
    ETW_KLAYOUT("Image_V2_Load", 2, k_all, k_v2),
    ETW_KLAYOUT("Image_Load", 3, k_all, k_v3),
    ETW_KLAYOUT("Image_KernelBase", 2, k_kernelbase, k_kernelbase_v2),
    ETW_KLAYOUT("Image_HypercallPage", 2, k_hypercall, k_hypercall_v2),
};

static const etw_kernel_event k_events[] = {
    ETW_KEV_IDS(2, "Unload", "ProcessId", NULL, ETW_KID_TID_NONE),
    ETW_KEV_IDS(3, "DCStart", "ProcessId", NULL, ETW_KID_TID_NONE),
    ETW_KEV_IDS(4, "DCStop", "ProcessId", NULL, ETW_KID_TID_NONE),
    ETW_KEV(10, "Load"),
    ETW_KEV(33, "KernelBase"),
    ETW_KEV(34, "HypercallPage"),
};

const etw_kernel_family etw_kernel_family_image = {
    .guid = ETW_KGUID(0x2cb15d1d,0x5fc1,0x11d2,0xab,0xe1,0x00,0xa0,0xc9,0x11,0xf5,0x18),
    .provider = "Windows Kernel",
    .group = "Image",
    .events = k_events,
    .event_count = ETW_KCOUNT(k_events),
    .layouts = k_layouts,
    .layout_count = ETW_KCOUNT(k_layouts),
};
