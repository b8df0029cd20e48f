/* etw_kernel_diskio.c - the DiskIO kernel class family (etw_kernel_tables.h).
 *
 * Class GUID 3d6fa8d4-fe05-11d0-9dda-00c04fd7ba7c (DiskIoGuid, hook group 0x01).
 * Layouts: shared/docs/kernel/kernel-mof.md §4.2 (DiskIo_TypeGroup1/2/3 v2/v3;
 * offsets from TraceEvent's DiskIOTraceData getters), the Vista MOF in
 * PerfView (kerneltraceeventparser.mof: property names, driver-delay
 * classes) and the MS Learn DiskIo_TypeGroup1 page (IssuingThreadId is v3,
 * Windows 8 and later). Names: shared/docs/kernel/naming.md.
 * pid/tid (TraceEvent, as PerfView's baseline of net.4.5.2.x64.etl shows):
 * the completion events of v3 (Read, Write, FlushBuffers) name their issuing
 * thread, whose process comes from the thread table; the *Init events keep
 * the header's thread, which is the issuing one: their payload's
 * IssuingThreadId may differ (WriteInit at 1,276.155 ms: header TID 412,
 * IssuingThreadId 44, PerfView shows TID=412), though kernel-mof.md §6 says
 * TraceEvent takes it.
 */
#include "etw_kernel_props.h"

static const etw_kernel_event diskio_events[] = {
    ETW_KEV_IDS(10, "Read", NULL, "IssuingThreadId", ETW_KID_PID_FROM_THREAD),
    ETW_KEV_IDS(11, "Write", NULL, "IssuingThreadId", ETW_KID_PID_FROM_THREAD),
    ETW_KEV(12, "ReadInit"),
    ETW_KEV(13, "WriteInit"),
    ETW_KEV_IDS(14, "FlushBuffers", NULL, "IssuingThreadId", ETW_KID_PID_FROM_THREAD),
    ETW_KEV(15, "FlushInit"),
    ETW_KEV(34, "DriverMajorFunctionCall"),
    ETW_KEV(35, "DriverMajorFunctionReturn"),
    ETW_KEV(37, "DriverCompletionRoutine"),
    ETW_KEV(52, "DriverCompleteRequest"),
    ETW_KEV(53, "DriverCompleteRequestReturn"),
    /* v3 optical-drive twins of 10..15 (MOF names; PerfView has none) */
    ETW_KEV_IDS(55, "OpticalRead", NULL, "IssuingThreadId", ETW_KID_PID_FROM_THREAD),
    ETW_KEV_IDS(56, "OpticalWrite", NULL, "IssuingThreadId", ETW_KID_PID_FROM_THREAD),
    ETW_KEV_IDS(57, "OpticalFlushBuffers", NULL, "IssuingThreadId", ETW_KID_PID_FROM_THREAD),
    ETW_KEV(58, "OpticalReadInit"),
    ETW_KEV(59, "OpticalWriteInit"),
    ETW_KEV(60, "OpticalFlushInit"),
};

/* Read/Write: DiskIo_V2_TypeGroup1 (v2), DiskIo_V3_TypeGroup1 (v3 adds
 * IssuingThreadId; the optical types share it). */
static const uint8_t t_rw_v2[] = {10, 11};
static const uint8_t t_rw_v3[] = {10, 11, 55, 56};
static const etw_property p_rw_v2[] = {
    ETW_KU32("DiskNumber"),   ETW_KX32("IrpFlags"),  ETW_KU32("TransferSize"),
    ETW_KU32("Reserved"),     ETW_KI64("ByteOffset"), ETW_KPTR("FileObject"),
    ETW_KPTR("Irp"),          ETW_KU64("HighResResponseTime"),
};
static const etw_property p_rw_v3[] = {
    ETW_KU32("DiskNumber"),   ETW_KX32("IrpFlags"),  ETW_KU32("TransferSize"),
    ETW_KU32("Reserved"),     ETW_KI64("ByteOffset"), ETW_KPTR("FileObject"),
    ETW_KPTR("Irp"),          ETW_KU64("HighResResponseTime"), ETW_KU32("IssuingThreadId"),
};

/* ReadInit/WriteInit/FlushInit: DiskIo_TypeGroup2. */
static const uint8_t t_init_v2[] = {12, 13, 15};
static const uint8_t t_init_v3[] = {12, 13, 15, 58, 59, 60};
static const etw_property p_init_v2[] = {ETW_KPTR("Irp")};
static const etw_property p_init_v3[] = {ETW_KPTR("Irp"), ETW_KU32("IssuingThreadId")};

/* FlushBuffers: DiskIo_TypeGroup3. */
static const uint8_t t_flush_v2[] = {14};
static const uint8_t t_flush_v3[] = {14, 57};
static const etw_property p_flush_v2[] = {
    ETW_KU32("DiskNumber"), ETW_KX32("IrpFlags"), ETW_KU64("HighResResponseTime"), ETW_KPTR("Irp"),
};
static const etw_property p_flush_v3[] = {
    ETW_KU32("DiskNumber"), ETW_KX32("IrpFlags"), ETW_KU64("HighResResponseTime"), ETW_KPTR("Irp"),
    ETW_KU32("IssuingThreadId"),
};

/* Driver delay events (Vista MOF: DriverMajorFunctionCall ... ; no
 * EventVersion qualifier there, and Vista-era kernel classes log version 2). */
static const uint8_t t_mjcall[] = {34};
static const etw_property p_mjcall[] = {
    ETW_KU32("MajorFunction"), ETW_KU32("MinorFunction"), ETW_KPTR("RoutineAddr"),
    ETW_KPTR("FileObject"),    ETW_KPTR("Irp"),           ETW_KU32("UniqMatchId"),
};
static const uint8_t t_mjret[] = {35};
static const uint8_t t_complreqret[] = {53};
static const etw_property p_irp_match[] = {ETW_KPTR("Irp"), ETW_KU32("UniqMatchId")};
static const uint8_t t_complrout[] = {37};
static const etw_property p_complrout[] = {
    ETW_KPTR("Routine"), ETW_KPTR("IrpPtr"), ETW_KU32("UniqMatchId"),
};
static const uint8_t t_complreq[] = {52};
static const etw_property p_complreq[] = {
    ETW_KPTR("RoutineAddr"), ETW_KPTR("Irp"), ETW_KU32("UniqMatchId"),
};

static const etw_kernel_layout diskio_layouts[] = {
    ETW_KLAYOUT("DiskIo_V2_TypeGroup1", 2, t_rw_v2, p_rw_v2),
    ETW_KLAYOUT("DiskIo_V3_TypeGroup1", 3, t_rw_v3, p_rw_v3),
    ETW_KLAYOUT("DiskIo_V2_TypeGroup2", 2, t_init_v2, p_init_v2),
    ETW_KLAYOUT("DiskIo_V3_TypeGroup2", 3, t_init_v3, p_init_v3),
    ETW_KLAYOUT("DiskIo_V2_TypeGroup3", 2, t_flush_v2, p_flush_v2),
    ETW_KLAYOUT("DiskIo_V3_TypeGroup3", 3, t_flush_v3, p_flush_v3),
    ETW_KLAYOUT("DriverMajorFunctionCall", 2, t_mjcall, p_mjcall),
    ETW_KLAYOUT("DriverMajorFunctionReturn", 2, t_mjret, p_irp_match),
    ETW_KLAYOUT("DriverCompletionRoutine", 2, t_complrout, p_complrout),
    ETW_KLAYOUT("DriverCompleteRequest", 2, t_complreq, p_complreq),
    ETW_KLAYOUT("DriverCompleteRequestReturn", 2, t_complreqret, p_irp_match),
};

const etw_kernel_family etw_kernel_family_diskio = {
    .guid = ETW_KGUID(0x3d6fa8d4,0xfe05,0x11d0,0x9d,0xda,0x00,0xc0,0x4f,0xd7,0xba,0x7c),
    .provider = "Windows Kernel",
    .group = "DiskIO",
    .events = diskio_events,
    .event_count = ETW_KCOUNT(diskio_events),
    .layouts = diskio_layouts,
    .layout_count = ETW_KCOUNT(diskio_layouts),
};
