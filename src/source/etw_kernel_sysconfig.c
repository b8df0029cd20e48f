/* etw_kernel_sysconfig.c - the SystemConfig kernel class family (etw_kernel_tables.h).
 *
 * Class GUID 01853a65-418f-4f36-aefc-dc0f1d2fd235 (EventTraceConfigGuid, hook
 * group 0x0B). Layouts:
 *   v0-v2: the Vista MOF in PerfView (kerneltraceeventparser.mof:
 *          SystemConfig_V0_*, SystemConfig_V1_*, SystemConfig_* v2), offsets
 *          checked against TraceEvent's SystemConfig*TraceData getters;
 *   CPU v3: shared/docs/kernel/kernel-mof.md §4.2 (SystemConfig_V3_CPU);
 *   Services v3: kernel-mof.md §4.2 (LoadOrderGroup, SvchostGroup appended);
 *   PnP v3-v5: TraceEvent's SystemConfigPnPTraceData (v3 = the v2 layout; v4
 *          starts with ClassGuid, UpperFilterCount, LowerFilterCount and adds
 *          PdoName, ServiceName; v5 adds DevStatus, DevProblem) and snail-server
 *          (the filter name arrays, counted by the two counts);
 *   PnP v3 also: the PDO name after the three strings (kernel-mof.md §5);
 *   Platform v2: kernel-mof.md §4.2;
 *   CodeIntegrity, TelemetryConfiguration, DeviceFamily, FlightIds,
 *          Processors v2: kernel-mof.md §5 (names from dissect.etl's kernel
 *          dump; checked on the diaghub kernel trace's payloads: 4, 16, 16,
 *          238 and 428 bytes);
 *   OpticalDisk v2, DPI v2, IRQ v3: System Informer's ntwmi.h (MIT; the
 *          OPTICAL_MEDIA_RECORD, WMI_DPI_RECORD and WMI_IRQ_RECORD structs, whose
 *          member names are used), consistent with net.4.5.2.x64.etl's records
 *          (OpticalDisk: BytesPerSector 2048 at offset 56, then "D:", "UDF" in
 *          UTF-16 and "Virtual CD/ROM", "Msft" in 8-bit characters, kept as
 *          Data; DPI: 96, 96). IRQ v3 has IRQGroup and Reserved (u16 each)
 *          before IRQNum, which puts DeviceDescriptionLen at 16 as TraceEvent
 *          reads it.
 * Names: shared/docs/kernel/naming.md (PerfView's; the MOF event type names
 * for the types PerfView has no template for).
 * pid/tid (kernel-mof.md §6): Services v2+ names the service's process.
 */
#include "etw_kernel_props.h"

static const etw_kernel_event sysconfig_events[] = {
    ETW_KEV(10, "CPU"),
    ETW_KEV(11, "PhyDisk"),
    ETW_KEV(12, "LogDisk"),
    ETW_KEV(13, "NIC"),
    ETW_KEV(14, "Video"),
    ETW_KEV_IDS(15, "Services", "ProcessId", NULL, 0),
    ETW_KEV(16, "Power"),
    ETW_KEV(17, "Network"),
    ETW_KEV(18, "OpticalDisk"),
    ETW_KEV(21, "IRQ"),
    ETW_KEV(22, "PnP"),
    ETW_KEV(23, "IDEChannel"),
    ETW_KEV(24, "NumaNode"),
    ETW_KEV(25, "Platform"),
    ETW_KEV(26, "ProcessorGroup"),
    ETW_KEV(27, "ProcessorNumber"),
    ETW_KEV(28, "DPI"),
    ETW_KEV(29, "CodeIntegrity"),
    ETW_KEV(30, "TelemetryConfiguration"),
    ETW_KEV(31, "Defragmentation"),
    ETW_KEV(32, "MobilePlatform"),
    ETW_KEV(33, "DeviceFamily"),
    ETW_KEV(34, "FlightIds"),
    ETW_KEV(35, "Processors"),
};

/* CPU (10) */
static const uint8_t t_cpu[] = {10};
static const etw_property p_cpu_v0[] = { /* v0, v1: DomainName has 132 units */
    ETW_KU32("MHz"),        ETW_KU32("NumberOfProcessors"), ETW_KU32("MemSize"),
    ETW_KU32("PageSize"),   ETW_KU32("AllocationGranularity"),
    ETW_KWCHARS("ComputerName", 256), ETW_KWCHARS("DomainName", 132),
    ETW_KPTR("HyperThreadingFlag"),
};
static const etw_property p_cpu_v2[] = {
    ETW_KU32("MHz"),        ETW_KU32("NumberOfProcessors"), ETW_KU32("MemSize"),
    ETW_KU32("PageSize"),   ETW_KU32("AllocationGranularity"),
    ETW_KWCHARS("ComputerName", 256), ETW_KWCHARS("DomainName", 134),
    ETW_KPTR("HyperThreadingFlag"),
};
static const etw_property p_cpu_v3[] = {
    ETW_KU32("MHz"),        ETW_KU32("NumberOfProcessors"), ETW_KU32("MemSize"),
    ETW_KU32("PageSize"),   ETW_KU32("AllocationGranularity"),
    ETW_KWCHARS("ComputerName", 256), ETW_KWCHARS("DomainName", 134),
    ETW_KPTR("HyperThreadingFlag"), ETW_KPTR("HighestUserAddress"),
    ETW_KU16("ProcessorArchitecture"), ETW_KU16("ProcessorLevel"), ETW_KU16("ProcessorRevision"),
    ETW_KU8("PaeEnabled"), ETW_KU8("NxEnabled"), ETW_KU32("MemorySpeed"),
};

/* PhyDisk (11): the same 568 bytes in v0-v2. */
static const uint8_t t_phydisk[] = {11};
static const etw_property p_phydisk[] = {
    ETW_KU32("DiskNumber"),  ETW_KU32("BytesPerSector"), ETW_KU32("SectorsPerTrack"),
    ETW_KU32("TracksPerCylinder"), ETW_KU64("Cylinders"), ETW_KU32("SCSIPort"),
    ETW_KU32("SCSIPath"),    ETW_KU32("SCSITarget"),     ETW_KU32("SCSILun"),
    ETW_KWCHARS("Manufacturer", 256), ETW_KU32("PartitionCount"), ETW_KU8("WriteCacheEnabled"),
    ETW_KU8("Pad"),          ETW_KWCHARS("BootDriveLetter", 3), ETW_KWCHARS("Spare", 2),
};

/* LogDisk (12): v2 appends Pad3. */
static const uint8_t t_logdisk[] = {12};
static const etw_property p_logdisk_v0[] = {
    ETW_KU64("StartOffset"), ETW_KU64("PartitionSize"), ETW_KU32("DiskNumber"),
    ETW_KU32("Size"),        ETW_KU32("DriveType"),     ETW_KWCHARS("DriveLetterString", 4),
    ETW_KU32("Pad1"),        ETW_KU32("PartitionNumber"), ETW_KU32("SectorsPerCluster"),
    ETW_KU32("BytesPerSector"), ETW_KU32("Pad2"),       ETW_KI64("NumberOfFreeClusters"),
    ETW_KI64("TotalNumberOfClusters"), ETW_KWCHARS("FileSystem", 16), ETW_KU32("VolumeExt"),
};
static const etw_property p_logdisk_v2[] = {
    ETW_KU64("StartOffset"), ETW_KU64("PartitionSize"), ETW_KU32("DiskNumber"),
    ETW_KU32("Size"),        ETW_KU32("DriveType"),     ETW_KWCHARS("DriveLetterString", 4),
    ETW_KU32("Pad1"),        ETW_KU32("PartitionNumber"), ETW_KU32("SectorsPerCluster"),
    ETW_KU32("BytesPerSector"), ETW_KU32("Pad2"),       ETW_KI64("NumberOfFreeClusters"),
    ETW_KI64("TotalNumberOfClusters"), ETW_KWCHARS("FileSystem", 16), ETW_KU32("VolumeExt"),
    ETW_KU32("Pad3"),
};

/* NIC (13): v0/v1 fixed 584 bytes; v2 three strings. */
static const uint8_t t_nic[] = {13};
static const etw_property p_nic_v0[] = {
    ETW_KWCHARS("NICName", 256), ETW_KU32("Index"), ETW_KU32("PhysicalAddrLen"),
    ETW_KWCHARS("PhysicalAddr", 8), ETW_KU32("Size"), ETW_KI32("IpAddress"),
    ETW_KI32("SubnetMask"), ETW_KI32("DhcpServer"), ETW_KI32("Gateway"),
    ETW_KI32("PrimaryWinsServer"), ETW_KI32("SecondaryWinsServer"), ETW_KI32("DnsServer1"),
    ETW_KI32("DnsServer2"), ETW_KI32("DnsServer3"), ETW_KI32("DnsServer4"), ETW_KU32("Data"),
};
static const etw_property p_nic_v2[] = {
    ETW_KX64("PhysicalAddr"), ETW_KU32("PhysicalAddrLen"), ETW_KU32("Ipv4Index"),
    ETW_KU32("Ipv6Index"),    ETW_KWSTR("NICDescription"), ETW_KWSTR("IpAddresses"),
    ETW_KWSTR("DnsServerAddresses"),
};

/* Video (14): the same 2584 bytes in v0-v2. */
static const uint8_t t_video[] = {14};
static const etw_property p_video[] = {
    ETW_KU32("MemorySize"),   ETW_KU32("XResolution"), ETW_KU32("YResolution"),
    ETW_KU32("BitsPerPixel"), ETW_KU32("VRefresh"),    ETW_KWCHARS("ChipType", 256),
    ETW_KWCHARS("DACType", 256), ETW_KWCHARS("AdapterString", 256),
    ETW_KWCHARS("BiosString", 256), ETW_KWCHARS("DeviceId", 256), ETW_KX32("StateFlags"),
};

/* Services (15): v0/v1 fixed strings; v2 counted ids then strings; v3
 * appends two strings. */
static const uint8_t t_services[] = {15};
static const etw_property p_services_v0[] = {
    ETW_KWCHARS("ServiceName", 34), ETW_KWCHARS("DisplayName", 256),
    ETW_KWCHARS("ProcessName", 34), ETW_KU32("ProcessId"),
};
static const etw_property p_services_v2[] = {
    ETW_KU32("ProcessId"),    ETW_KX32("ServiceState"), ETW_KX32("SubProcessTag"),
    ETW_KWSTR("ServiceName"), ETW_KWSTR("DisplayName"), ETW_KWSTR("ProcessName"),
};
static const etw_property p_services_v3[] = {
    ETW_KU32("ProcessId"),    ETW_KX32("ServiceState"), ETW_KX32("SubProcessTag"),
    ETW_KWSTR("ServiceName"), ETW_KWSTR("DisplayName"), ETW_KWSTR("ProcessName"),
    ETW_KWSTR("LoadOrderGroup"), ETW_KWSTR("SvchostGroup"),
};

/* Power (16): 8 bytes in v0-v2. */
static const uint8_t t_power[] = {16};
static const etw_property p_power[] = {
    ETW_KU8("S1"), ETW_KU8("S2"), ETW_KU8("S3"), ETW_KU8("S4"), ETW_KU8("S5"),
    ETW_KU8("Pad1"), ETW_KU8("Pad2"), ETW_KU8("Pad3"),
};

/* Network (17), v2. */
static const uint8_t t_network[] = {17};
static const etw_property p_network[] = {
    ETW_KU32("TcbTablePartitions"), ETW_KU32("MaxHashTableSize"), ETW_KU32("MaxUserPort"),
    ETW_KU32("TcpTimedWaitDelay"),
};

/* IRQ (21), v0-v2; v3 adds the processor group. */
static const uint8_t t_irq[] = {21};
static const etw_property p_irq[] = {
    ETW_KX64("IRQAffinity"), ETW_KU32("IRQNum"), ETW_KU32("DeviceDescriptionLen"),
    ETW_KWSTR("DeviceDescription"),
};
static const etw_property p_irq_v3[] = {
    ETW_KX64("IRQAffinity"), ETW_KU16("IRQGroup"), ETW_KU16("Reserved"), ETW_KU32("IRQNum"),
    ETW_KU32("DeviceDescriptionLen"), ETW_KWSTR("DeviceDescription"),
};

/* OpticalDisk (18), v2: a fixed part, then strings kept as bytes. */
static const uint8_t t_optical[] = {18};
static const etw_property p_optical[] = {
    ETW_KU16("DiskNumber"), ETW_KU16("BusType"), ETW_KU16("DeviceType"), ETW_KU16("MediaType"),
    ETW_KU64("StartingOffset"), ETW_KU64("Size"), ETW_KU64("NumberOfFreeBlocks"),
    ETW_KU64("TotalNumberOfBlocks"), ETW_KU64("NextWritableAddress"), ETW_KU32("NumberOfSessions"),
    ETW_KU32("NumberOfTracks"), ETW_KU32("BytesPerSector"), ETW_KU16("DiscStatus"),
    ETW_KU16("LastSessionStatus"),
    { .name = "Data", .in_type = ETW_INTYPE_BINARY, .flags = ETW_PROP_LENGTH_TO_END },
};

/* DPI (28), v2. */
static const uint8_t t_dpi[] = {28};
static const etw_property p_dpi[] = {ETW_KU32("MachineDPI"), ETW_KU32("UserDPI")};

/* PnP (22) */
static const uint8_t t_pnp[] = {22};
static const etw_property p_pnp_v0[] = { /* v0-v2 */
    ETW_KU32("IDLength"), ETW_KU32("DescriptionLength"), ETW_KU32("FriendlyNameLength"),
    ETW_KWSTR("DeviceID"), ETW_KWSTR("DeviceDescription"), ETW_KWSTR("FriendlyName"),
};
static const etw_property p_pnp_v3[] = { /* v2 and the PDO name (kernel-mof.md §5) */
    ETW_KU32("IDLength"), ETW_KU32("DescriptionLength"), ETW_KU32("FriendlyNameLength"),
    ETW_KWSTR("DeviceID"), ETW_KWSTR("DeviceDescription"), ETW_KWSTR("FriendlyName"),
    ETW_KWSTR("PdoName"),
};
static const etw_property p_pnp_v4[] = {
    ETW_KGUIDV("ClassGuid"), ETW_KU32("UpperFilterCount"), ETW_KU32("LowerFilterCount"),
    ETW_KWSTR("DeviceID"), ETW_KWSTR("DeviceDescription"), ETW_KWSTR("FriendlyName"),
    ETW_KWSTR("PdoName"),  ETW_KWSTR("ServiceName"),
    ETW_KWSTRS_COUNTED("UpperFilters", 1), ETW_KWSTRS_COUNTED("LowerFilters", 2),
};
static const etw_property p_pnp_v5[] = {
    ETW_KGUIDV("ClassGuid"), ETW_KU32("UpperFilterCount"), ETW_KU32("LowerFilterCount"),
    ETW_KX32("DevStatus"), ETW_KX32("DevProblem"),
    ETW_KWSTR("DeviceID"), ETW_KWSTR("DeviceDescription"), ETW_KWSTR("FriendlyName"),
    ETW_KWSTR("PdoName"),  ETW_KWSTR("ServiceName"),
    ETW_KWSTRS_COUNTED("UpperFilters", 1), ETW_KWSTRS_COUNTED("LowerFilters", 2),
};

/* CodeIntegrity (29), v2. */
static const uint8_t t_codeintegrity[] = {29};
static const etw_property p_codeintegrity[] = {ETW_KU32("CodeIntegrityInfo")};

/* TelemetryConfiguration (30), v2. */
static const uint8_t t_telemetry[] = {30};
static const etw_property p_telemetry[] = {ETW_KGUIDV("MachineId")};

/* DeviceFamily (33), v2: UAPInfo is the OS version packed 16:16:16:16. */
static const uint8_t t_devicefamily[] = {33};
static const etw_property p_devicefamily[] = {
    ETW_KU64("UAPInfo"), ETW_KU32("DeviceFamily"), ETW_KU32("DeviceForm"),
};

/* FlightIds (34), v2. */
static const uint8_t t_flightids[] = {34};
static const etw_property p_flightids[] = {ETW_KWSTR("UpdateId"), ETW_KWSTR("FlightIdList")};

/* Processors (35), v2: one event per processor, 428 bytes; the three names in
 * the order the bytes show (kernel-mof.md §5), not dissect.etl's dump order. */
static const uint8_t t_processors[] = {35};
static const etw_property p_processors[] = {
    ETW_KU32("ProcessorIndex"), ETW_KU32("FeatureSet"), ETW_KU32("ProcessorSpeed"),
    ETW_KWCHARS("ProcessorName", 64), ETW_KWCHARS("ProcessorIdentifier", 128),
    ETW_KWCHARS("VendorIdentifier", 16),
};

/* IDEChannel (23), v2. */
static const uint8_t t_ide[] = {23};
static const etw_property p_ide[] = {
    ETW_KU32("TargetId"), ETW_KX32("DeviceType"), ETW_KX32("DeviceTimingMode"),
    ETW_KU32("LocationInformationLen"), ETW_KWSTR("LocationInformation"),
};

/* Platform (25), v2. */
static const uint8_t t_platform[] = {25};
static const etw_property p_platform[] = {
    ETW_KWSTR("SystemManufacturer"), ETW_KWSTR("SystemProductName"), ETW_KWSTR("BiosDate"),
    ETW_KWSTR("BiosVersion"),
};

static const etw_kernel_layout sysconfig_layouts[] = {
    ETW_KLAYOUT("SystemConfig_V0_CPU", 0, t_cpu, p_cpu_v0),
    ETW_KLAYOUT("SystemConfig_V1_CPU", 1, t_cpu, p_cpu_v0),
    ETW_KLAYOUT("SystemConfig_CPU", 2, t_cpu, p_cpu_v2),
    ETW_KLAYOUT("SystemConfig_V3_CPU", 3, t_cpu, p_cpu_v3),
    ETW_KLAYOUT("SystemConfig_V0_PhyDisk", 0, t_phydisk, p_phydisk),
    ETW_KLAYOUT("SystemConfig_V1_PhyDisk", 1, t_phydisk, p_phydisk),
    ETW_KLAYOUT("SystemConfig_PhyDisk", 2, t_phydisk, p_phydisk),
    ETW_KLAYOUT("SystemConfig_V0_LogDisk", 0, t_logdisk, p_logdisk_v0),
    ETW_KLAYOUT("SystemConfig_V1_LogDisk", 1, t_logdisk, p_logdisk_v0),
    ETW_KLAYOUT("SystemConfig_LogDisk", 2, t_logdisk, p_logdisk_v2),
    ETW_KLAYOUT("SystemConfig_V0_NIC", 0, t_nic, p_nic_v0),
    ETW_KLAYOUT("SystemConfig_V1_NIC", 1, t_nic, p_nic_v0),
    ETW_KLAYOUT("SystemConfig_NIC", 2, t_nic, p_nic_v2),
    ETW_KLAYOUT("SystemConfig_V0_Video", 0, t_video, p_video),
    ETW_KLAYOUT("SystemConfig_V1_Video", 1, t_video, p_video),
    ETW_KLAYOUT("SystemConfig_Video", 2, t_video, p_video),
    ETW_KLAYOUT("SystemConfig_V0_Services", 0, t_services, p_services_v0),
    ETW_KLAYOUT("SystemConfig_V1_Services", 1, t_services, p_services_v0),
    ETW_KLAYOUT("SystemConfig_Services", 2, t_services, p_services_v2),
    ETW_KLAYOUT("SystemConfig_V3_Services", 3, t_services, p_services_v3),
    ETW_KLAYOUT("SystemConfig_V0_Power", 0, t_power, p_power),
    ETW_KLAYOUT("SystemConfig_V1_Power", 1, t_power, p_power),
    ETW_KLAYOUT("SystemConfig_Power", 2, t_power, p_power),
    ETW_KLAYOUT("SystemConfig_Network", 2, t_network, p_network),
    ETW_KLAYOUT("SystemConfig_V0_IRQ", 0, t_irq, p_irq),
    ETW_KLAYOUT("SystemConfig_V1_IRQ", 1, t_irq, p_irq),
    ETW_KLAYOUT("SystemConfig_IRQ", 2, t_irq, p_irq),
    ETW_KLAYOUT("SystemConfig_V3_IRQ", 3, t_irq, p_irq_v3),
    ETW_KLAYOUT("SystemConfig_OpticalDisk", 2, t_optical, p_optical),
    ETW_KLAYOUT("SystemConfig_DPI", 2, t_dpi, p_dpi),
    ETW_KLAYOUT("SystemConfig_V0_PnP", 0, t_pnp, p_pnp_v0),
    ETW_KLAYOUT("SystemConfig_V1_PnP", 1, t_pnp, p_pnp_v0),
    ETW_KLAYOUT("SystemConfig_PnP", 2, t_pnp, p_pnp_v0),
    ETW_KLAYOUT("SystemConfig_V3_PnP", 3, t_pnp, p_pnp_v3),
    ETW_KLAYOUT("SystemConfig_V4_PnP", 4, t_pnp, p_pnp_v4),
    ETW_KLAYOUT("SystemConfig_V5_PnP", 5, t_pnp, p_pnp_v5),
    ETW_KLAYOUT("SystemConfig_IDEChannel", 2, t_ide, p_ide),
    ETW_KLAYOUT("SystemConfig_Platform", 2, t_platform, p_platform),
    ETW_KLAYOUT("SystemConfig_CodeIntegrity", 2, t_codeintegrity, p_codeintegrity),
    ETW_KLAYOUT("SystemConfig_TelemetryConfiguration", 2, t_telemetry, p_telemetry),
    ETW_KLAYOUT("SystemConfig_DeviceFamily", 2, t_devicefamily, p_devicefamily),
    ETW_KLAYOUT("SystemConfig_FlightIds", 2, t_flightids, p_flightids),
    ETW_KLAYOUT("SystemConfig_Processors", 2, t_processors, p_processors),
};

const etw_kernel_family etw_kernel_family_sysconfig = {
    .guid = ETW_KGUID(0x01853a65,0x418f,0x4f36,0xae,0xfc,0xdc,0x0f,0x1d,0x2f,0xd2,0x35),
    .provider = "Windows Kernel",
    .group = "SystemConfig",
    .events = sysconfig_events,
    .event_count = ETW_KCOUNT(sysconfig_events),
    .layouts = sysconfig_layouts,
    .layout_count = ETW_KCOUNT(sysconfig_layouts),
};
