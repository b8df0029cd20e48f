/* etw_kernel_stackwalk.c - the StackWalk kernel class family (etw_kernel_tables.h).
 * Layouts: shared/docs/kernel/kernel-mof.md section 4.2 (StackWalk_Event v2, the
 * stack-key reference and definition events); names: shared/docs/kernel/naming.md.
 * The frames are the MOF's Stack1..Stack192, pointer-sized, present as far as the
 * payload goes (ETW_PROP_OPTIONAL): N = (length - 16) / P for Stack, length / P - 1
 * for the key definitions.
 * pid/tid (kernel-mof.md section 6): Stack, StackKeyKernel and StackKeyUser name
 * StackProcess and StackThread. */
#include "etw_kernel_props.h"

/* Event types: Stack 32, KeyCreate 34, KeyDelete 35, KeyRundown 36,
 * StackKeyKernel 37, StackKeyUser 38. */
static const uint8_t k_stack[] = {32};
static const uint8_t k_keydef[] = {34, 35, 36};
static const uint8_t k_keyref[] = {37, 38};

/* The frames Stack1..Stack192 (kernel-mof.md section 4.2), written once for
 * both classes that carry them: one pointer each, present as far as the
 * payload goes. */
#define K_FRAME(n) {.name = "Stack" #n, .in_type = ETW_INTYPE_POINTER, .flags = ETW_PROP_OPTIONAL}
#define K_FRAMES_TENS(t)                                                                \
    K_FRAME(t##0), K_FRAME(t##1), K_FRAME(t##2), K_FRAME(t##3), K_FRAME(t##4),          \
    K_FRAME(t##5), K_FRAME(t##6), K_FRAME(t##7), K_FRAME(t##8), K_FRAME(t##9)
#define ETW_KSTACK_FRAMES                                                               \
    K_FRAME(1), K_FRAME(2), K_FRAME(3), K_FRAME(4), K_FRAME(5),                         \
    K_FRAME(6), K_FRAME(7), K_FRAME(8), K_FRAME(9),                                     \
    K_FRAMES_TENS(1), K_FRAMES_TENS(2), K_FRAMES_TENS(3), K_FRAMES_TENS(4),             \
    K_FRAMES_TENS(5), K_FRAMES_TENS(6), K_FRAMES_TENS(7), K_FRAMES_TENS(8),             \
    K_FRAMES_TENS(9), K_FRAMES_TENS(10), K_FRAMES_TENS(11), K_FRAMES_TENS(12),          \
    K_FRAMES_TENS(13), K_FRAMES_TENS(14), K_FRAMES_TENS(15), K_FRAMES_TENS(16),         \
    K_FRAMES_TENS(17), K_FRAMES_TENS(18),                                               \
    K_FRAME(190), K_FRAME(191), K_FRAME(192)
/* The MOF's maximum frame count. */
#define K_MAX_FRAMES 192

static const etw_property k_stack_v2[] = {
    ETW_KU64("EventTimeStamp"),
    ETW_KU32("StackProcess"),
    ETW_KU32("StackThread"),
    ETW_KSTACK_FRAMES
};

static const etw_property k_keydef_v2[] = {
    ETW_KPTR("StackKey"),
    ETW_KSTACK_FRAMES
};

_Static_assert(ETW_KCOUNT(k_stack_v2) == 3 + K_MAX_FRAMES, "Stack: 3 fields + 192 frames");
_Static_assert(ETW_KCOUNT(k_keydef_v2) == 1 + K_MAX_FRAMES, "key definition: key + 192 frames");

static const etw_property k_keyref_v2[] = {
    ETW_KU64("EventTimeStamp"),
    ETW_KU32("StackProcess"),
    ETW_KU32("StackThread"),
    ETW_KPTR("StackKey"),
};

static const etw_kernel_layout k_layouts[] = {
    ETW_KLAYOUT("StackWalk_Event", 2, k_stack, k_stack_v2),
    ETW_KLAYOUT("StackWalk_KeyDefinition", 2, k_keydef, k_keydef_v2),
    ETW_KLAYOUT("StackWalk_KeyReference", 2, k_keyref, k_keyref_v2),
};

static const etw_kernel_event k_events[] = {
    ETW_KEV_IDS(32, "Stack", "StackProcess", "StackThread", 0),
    ETW_KEV(34, "KeyCreate"),
    ETW_KEV(35, "KeyDelete"),
    ETW_KEV(36, "KeyRundown"),
    ETW_KEV_IDS(37, "StackKeyKernel", "StackProcess", "StackThread", 0),
    ETW_KEV_IDS(38, "StackKeyUser", "StackProcess", "StackThread", 0),
};

const etw_kernel_family etw_kernel_family_stackwalk = {
    .guid = ETW_KGUID(0xdef2fe46,0x7bd6,0x4b80,0xbd,0x94,0xf5,0x7f,0xe2,0x0d,0x0c,0xe3),
    .provider = "Windows Kernel",
    .group = "StackWalk",
    .events = k_events,
    .event_count = ETW_KCOUNT(k_events),
    .layouts = k_layouts,
    .layout_count = ETW_KCOUNT(k_layouts),
};
