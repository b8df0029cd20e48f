/* etw_kernel_registry.c - the Registry kernel class family (etw_kernel_tables.h).
 *
 * Class GUID ae53722e-c863-11d2-8659-00c04fa321a1 (RegistryGuid, hook group 0x09).
 * Layouts: the Vista MOF in PerfView (kerneltraceeventparser.mof:
 * Registry_V0_TypeGroup1, Registry_V1_TypeGroup1, Registry_TypeGroup1 v2)
 * and shared/docs/kernel/kernel-mof.md §4.2 (Registry_TypeGroup1 v2 offsets).
 * Names: shared/docs/kernel/naming.md (PerfView's names for 10..27, the MOF
 * event type names for the later types; type 22 is v1 "RunDown", v2
 * "KCBCreate": the v2 name is shown).
 * pid/tid: the header's.
 */
#include "etw_kernel_props.h"

static const etw_kernel_event registry_events[] = {
    ETW_KEV(10, "Create"),             ETW_KEV(11, "Open"),
    ETW_KEV(12, "Delete"),             ETW_KEV(13, "Query"),
    ETW_KEV(14, "SetValue"),           ETW_KEV(15, "DeleteValue"),
    ETW_KEV(16, "QueryValue"),         ETW_KEV(17, "EnumerateKey"),
    ETW_KEV(18, "EnumerateValueKey"),  ETW_KEV(19, "QueryMultipleValue"),
    ETW_KEV(20, "SetInformation"),     ETW_KEV(21, "Flush"),
    ETW_KEV(22, "KCBCreate"),          ETW_KEV(23, "KCBDelete"),
    ETW_KEV(24, "KCBRundownBegin"),    ETW_KEV(25, "KCBRundownEnd"),
    ETW_KEV(26, "Virtualize"),         ETW_KEV(27, "Close"),
    ETW_KEV(28, "SetSecurity"),        ETW_KEV(29, "QuerySecurity"),
    ETW_KEV(30, "TxRCommit"),          ETW_KEV(31, "TxRPrepare"),
    ETW_KEV(32, "TxRRollback"),        ETW_KEV(34, "Counters"),
    ETW_KEV(35, "Config"),             ETW_KEV(36, "HiveInit"),
    ETW_KEV(37, "HiveDestroy"),        ETW_KEV(38, "HiveLink"),
    ETW_KEV(39, "HiveDCEnd"),          ETW_KEV(40, "HiveDirty"),
    ETW_KEV(48, "ChangeNotify"),
};

static const uint8_t t_v0[] = {10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21};
static const etw_property p_v0[] = {
    ETW_KPTR("Status"), ETW_KPTR("KeyHandle"), ETW_KI64("ElapsedTime"), ETW_KWSTR("KeyName"),
};
static const uint8_t t_v1[] = {10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22};
static const etw_property p_v1[] = {
    ETW_KPTR("Status"), ETW_KPTR("KeyHandle"), ETW_KI64("ElapsedTime"), ETW_KU32("Index"),
    ETW_KWSTR("KeyName"),
};
static const uint8_t t_v2[] = {10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27};
static const etw_property p_v2[] = {
    ETW_KI64("InitialTime"), ETW_KU32("Status"), ETW_KU32("Index"), ETW_KPTR("KeyHandle"),
    ETW_KWSTR("KeyName"),
};

static const etw_kernel_layout registry_layouts[] = {
    ETW_KLAYOUT("Registry_V0_TypeGroup1", 0, t_v0, p_v0),
    ETW_KLAYOUT("Registry_V1_TypeGroup1", 1, t_v1, p_v1),
    ETW_KLAYOUT("Registry_TypeGroup1", 2, t_v2, p_v2),
};

const etw_kernel_family etw_kernel_family_registry = {
    .guid = ETW_KGUID(0xae53722e,0xc863,0x11d2,0x86,0x59,0x00,0xc0,0x4f,0xa3,0x21,0xa1),
    .provider = "Windows Kernel",
    .group = "Registry",
    .events = registry_events,
    .event_count = ETW_KCOUNT(registry_events),
    .layouts = registry_layouts,
    .layout_count = ETW_KCOUNT(registry_layouts),
};
