/* etw_kernel_fileio.c - the FileIO kernel class family (etw_kernel_tables.h).
 *
 * Class GUID 90cbdc39-4a3e-11d1-84f4-0000f80464e3 (FileIoGuid, hook group 0x04).
 * Layouts: v0-v2 from the Vista MOF in PerfView (kerneltraceeventparser.mof:
 * FileIo_V0_Name, FileIo_V1_Name, FileIo_Name, FileIo_Create, _SimpleOp,
 * _ReadWrite, _Info, _DirEnum, _OpEnd); v3 from shared/docs/kernel/kernel-mof.md
 * §4.2 and §7.9 and TraceEvent's FileIO*TraceData getters (v3 moves TTID from
 * a pointer-sized field after IrpPtr to a u32 after the last pointer).
 * Names: shared/docs/kernel/naming.md.
 * pid/tid (kernel-mof.md §6): the operation events name their thread (TTID),
 * the process comes from the thread table; the name events keep the header.
 */
#include "etw_kernel_props.h"

#define FILEIO_OP(t, n) ETW_KEV_IDS(t, n, NULL, "TTID", ETW_KID_PID_FROM_THREAD)

static const etw_kernel_event fileio_events[] = {
    ETW_KEV(0, ""), /* PerfView: "FileIO" (FileIo_Name, type 0) */
    ETW_KEV(32, "FileCreate"),
    ETW_KEV(35, "FileDelete"),
    ETW_KEV(36, "FileRundown"),
    ETW_KEV_IDS(37, "MapFile", "ProcessId", NULL, 0),
    ETW_KEV_IDS(38, "UnmapFile", "ProcessId", NULL, 0),
    ETW_KEV_IDS(39, "MapFileDCStart", "ProcessId", NULL, 0),
    ETW_KEV_IDS(40, "MapFileDCStop", "ProcessId", NULL, 0),
    FILEIO_OP(64, "Create"),
    FILEIO_OP(65, "Cleanup"),
    FILEIO_OP(66, "Close"),
    FILEIO_OP(67, "Read"),
    FILEIO_OP(68, "Write"),
    FILEIO_OP(69, "SetInfo"),
    FILEIO_OP(70, "Delete"),
    FILEIO_OP(71, "Rename"),
    FILEIO_OP(72, "DirEnum"),
    FILEIO_OP(73, "Flush"),
    FILEIO_OP(74, "QueryInfo"),
    FILEIO_OP(75, "FSControl"),
    ETW_KEV(76, "OperationEnd"),
    FILEIO_OP(77, "DirNotify"),
    /* v3 types PerfView has no name for: the MOF event type names */
    ETW_KEV(79, "DletePath"),
    ETW_KEV(80, "RenamePath"),
    ETW_KEV(81, "SetLinkPath"),
    ETW_KEV(96, "PreOpInit"),
    ETW_KEV(97, "PostOpInit"),
    ETW_KEV(98, "PreOpCompletion"),
    ETW_KEV(99, "PostOpCompletion"),
    ETW_KEV(100, "PreOpFailure"),
    ETW_KEV(101, "PostOpFailure"),
};

/* Name events: FileObject, FileName in every version. */
static const uint8_t t_name_v0[] = {0};
static const uint8_t t_name_v1[] = {0, 32};
static const uint8_t t_name_v2[] = {0, 32, 35, 36};
static const etw_property p_name[] = {ETW_KPTR("FileObject"), ETW_KWSTR("FileName")};

/* Create */
static const uint8_t t_create[] = {64};
static const etw_property p_create_v2[] = {
    ETW_KPTR("IrpPtr"),         ETW_KPTR("TTID"),           ETW_KPTR("FileObject"),
    ETW_KU32("CreateOptions"),  ETW_KU32("FileAttributes"), ETW_KU32("ShareAccess"),
    ETW_KWSTR("OpenPath"),
};
static const etw_property p_create_v3[] = {
    ETW_KPTR("IrpPtr"),         ETW_KPTR("FileObject"),     ETW_KU32("TTID"),
    ETW_KU32("CreateOptions"),  ETW_KU32("FileAttributes"), ETW_KU32("ShareAccess"),
    ETW_KWSTR("OpenPath"),
};

/* Cleanup, Close, Flush */
static const uint8_t t_simple[] = {65, 66, 73};
static const etw_property p_simple_v2[] = {
    ETW_KPTR("IrpPtr"), ETW_KPTR("TTID"), ETW_KPTR("FileObject"), ETW_KPTR("FileKey"),
};
static const etw_property p_simple_v3[] = {
    ETW_KPTR("IrpPtr"), ETW_KPTR("FileObject"), ETW_KPTR("FileKey"), ETW_KU32("TTID"),
};

/* Read, Write */
static const uint8_t t_rw[] = {67, 68};
static const etw_property p_rw_v2[] = {
    ETW_KU64("Offset"),  ETW_KPTR("IrpPtr"), ETW_KPTR("TTID"),    ETW_KPTR("FileObject"),
    ETW_KPTR("FileKey"), ETW_KU32("IoSize"), ETW_KU32("IoFlags"),
};
static const etw_property p_rw_v3[] = {
    ETW_KU64("Offset"),  ETW_KPTR("IrpPtr"), ETW_KPTR("FileObject"), ETW_KPTR("FileKey"),
    ETW_KU32("TTID"),    ETW_KU32("IoSize"), ETW_KU32("IoFlags"),
};

/* SetInfo, Delete, Rename, QueryInfo, FSControl */
static const uint8_t t_info[] = {69, 70, 71, 74, 75};
static const etw_property p_info_v2[] = {
    ETW_KPTR("IrpPtr"),  ETW_KPTR("TTID"),      ETW_KPTR("FileObject"),
    ETW_KPTR("FileKey"), ETW_KPTR("ExtraInfo"), ETW_KU32("InfoClass"),
};
static const etw_property p_info_v3[] = {
    ETW_KPTR("IrpPtr"),    ETW_KPTR("FileObject"), ETW_KPTR("FileKey"),
    ETW_KPTR("ExtraInfo"), ETW_KU32("TTID"),       ETW_KU32("InfoClass"),
};

/* DirEnum, DirNotify */
static const uint8_t t_dir[] = {72, 77};
static const etw_property p_dir_v2[] = {
    ETW_KPTR("IrpPtr"),  ETW_KPTR("TTID"),      ETW_KPTR("FileObject"), ETW_KPTR("FileKey"),
    ETW_KU32("Length"),  ETW_KU32("InfoClass"), ETW_KU32("FileIndex"),  ETW_KWSTR("FileName"),
};
static const etw_property p_dir_v3[] = {
    ETW_KPTR("IrpPtr"),  ETW_KPTR("FileObject"), ETW_KPTR("FileKey"),   ETW_KU32("TTID"),
    ETW_KU32("Length"),  ETW_KU32("InfoClass"),  ETW_KU32("FileIndex"), ETW_KWSTR("FileName"),
};

/* MapFile, UnmapFile, MapFileDCStart, MapFileDCStop: TraceEvent's
 * MapFileTraceData getters (ViewBase at 0, the file at HostOffset(4,1),
 * MiscInfo (8,2), ViewSize (16,2); then ProcessId at (20,3) in v2, ByteOffset
 * (20,3) and ProcessId (28,3) in v3), which name the file FileKey where the
 * FileIo classes say FileObject. Not in the sample traces: not verified on
 * real bytes (TraceEvent itself doubts the 32-bit layout). */
static const uint8_t t_map[] = {37, 38, 39, 40};
static const etw_property p_map_v2[] = {
    ETW_KPTR("ViewBase"), ETW_KPTR("FileObject"), ETW_KX64("MiscInfo"), ETW_KSIZET("ViewSize"),
    ETW_KU32("ProcessId"),
};
static const etw_property p_map_v3[] = {
    ETW_KPTR("ViewBase"), ETW_KPTR("FileObject"), ETW_KX64("MiscInfo"), ETW_KSIZET("ViewSize"),
    ETW_KU64("ByteOffset"), ETW_KU32("ProcessId"),
};

/* OperationEnd: the same in v2 and v3. */
static const uint8_t t_opend[] = {76};
static const etw_property p_opend[] = {
    ETW_KPTR("IrpPtr"), ETW_KPTR("ExtraInfo"), ETW_KU32("NtStatus"),
};

static const etw_kernel_layout fileio_layouts[] = {
    ETW_KLAYOUT("FileIo_V0_Name", 0, t_name_v0, p_name),
    ETW_KLAYOUT("FileIo_V1_Name", 1, t_name_v1, p_name),
    ETW_KLAYOUT("FileIo_Name", 2, t_name_v2, p_name),
    ETW_KLAYOUT("FileIo_V3_Name", 3, t_name_v2, p_name),
    ETW_KLAYOUT("FileIo_Create", 2, t_create, p_create_v2),
    ETW_KLAYOUT("FileIo_V3_Create", 3, t_create, p_create_v3),
    ETW_KLAYOUT("FileIo_SimpleOp", 2, t_simple, p_simple_v2),
    ETW_KLAYOUT("FileIo_V3_SimpleOp", 3, t_simple, p_simple_v3),
    ETW_KLAYOUT("FileIo_ReadWrite", 2, t_rw, p_rw_v2),
    ETW_KLAYOUT("FileIo_V3_ReadWrite", 3, t_rw, p_rw_v3),
    ETW_KLAYOUT("FileIo_Info", 2, t_info, p_info_v2),
    ETW_KLAYOUT("FileIo_V3_Info", 3, t_info, p_info_v3),
    ETW_KLAYOUT("FileIo_DirEnum", 2, t_dir, p_dir_v2),
    ETW_KLAYOUT("FileIo_V3_DirEnum", 3, t_dir, p_dir_v3),
    ETW_KLAYOUT("FileIo_MapFile", 2, t_map, p_map_v2),
    ETW_KLAYOUT("FileIo_V3_MapFile", 3, t_map, p_map_v3),
    ETW_KLAYOUT("FileIo_OpEnd", 2, t_opend, p_opend),
    ETW_KLAYOUT("FileIo_V3_OpEnd", 3, t_opend, p_opend),
};

const etw_kernel_family etw_kernel_family_fileio = {
    .guid = ETW_KGUID(0x90cbdc39,0x4a3e,0x11d1,0x84,0xf4,0x00,0x00,0xf8,0x04,0x64,0xe3),
    .provider = "Windows Kernel",
    .group = "FileIO",
    .events = fileio_events,
    .event_count = ETW_KCOUNT(fileio_events),
    .layouts = fileio_layouts,
    .layout_count = ETW_KCOUNT(fileio_layouts),
};
