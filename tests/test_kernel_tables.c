/* test_kernel_tables.c - the kernel class tables (src/source/etw_kernel_*.c)
 * on their own, without the schema source that serves them:
 *   - every family of etw_kernel_families[]: the etw_schema.h tree rules,
 *     names on every event type a layout serves, no (type, version) served
 *     twice, one family per GUID;
 *   - the families DiskIO, FileIO, Memory, TcpIp, UdpIp, Registry,
 *     SystemConfig, ALPC, SplitIo, Object, LostEvent, ImageID and SysConfig:
 *     each field's offset for 4- and 8-byte pointers, computed from the
 *     properties, against the offsets of shared/docs/kernel/kernel-mof.md
 *     §4.2 (and TraceEvent's getters where the doc has no table), copied
 *     here as data with the section they come from;
 *   - every layout of those families, for both pointer sizes: a synthetic
 *     payload built from the table, decoded by the library's decoder
 *     (etw_decode.h), lands every value at its offset with its value; the
 *     same payload cut at every length, grown by trailing bytes and replaced
 *     by garbage decodes without reading outside the payload (exactly sized
 *     heap copies, so AddressSanitizer sees any overread);
 *   - every record of these families in tests/data/net.4.5.2.x64.etl (the
 *     only trace in tests/data that has them) decodes with its layout, whole;
 *     selected records field by field, with values read from the bytes by a
 *     separate script and shown by PerfView's baseline;
 *   - the same trace through the decoder and JSON writer: the contract's
 *     forms of those values, pid/tid, and an error only for the one record
 *     whose class no public source describes;
 *   - every layout's synthetic payload as a kernel (or classic) record
 *     through the decoder and JSON writer, both pointer sizes: named, no
 *     error; cut, grown and garbage records still give one line each;
 *   - the (group, type, version) triples that occur in tests/data's traces
 *     (counted with etwdump) each find a layout.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "etw_test.h"
#include "etwdecode/etw_decode.h"
#include "etwdecode/etw_decoder.h"
#include "etwdecode/etw_json.h"
#include "etwdecode/etw_event.h"
#include "etwdecode/etw_reader.h"
#include "etwdecode/etw_schema.h"
#include "source/etw_kernel_tables.h"

extern const etw_kernel_family etw_kernel_family_diskio;
extern const etw_kernel_family etw_kernel_family_fileio;
extern const etw_kernel_family etw_kernel_family_memory;
extern const etw_kernel_family etw_kernel_family_tcpip;
extern const etw_kernel_family etw_kernel_family_udpip;
extern const etw_kernel_family etw_kernel_family_registry;
extern const etw_kernel_family etw_kernel_family_sysconfig;
extern const etw_kernel_family etw_kernel_family_alpc;
extern const etw_kernel_family etw_kernel_family_splitio;
extern const etw_kernel_family etw_kernel_family_object;
extern const etw_kernel_family etw_kernel_family_lostevent;
extern const etw_kernel_family etw_kernel_family_imageid;
extern const etw_kernel_family etw_kernel_family_sysconfigex;

/* The families this file checks field by field. */
static const etw_kernel_family *const k_mine[] = {
    &etw_kernel_family_diskio,   &etw_kernel_family_fileio,    &etw_kernel_family_memory,
    &etw_kernel_family_tcpip,    &etw_kernel_family_udpip,     &etw_kernel_family_registry,
    &etw_kernel_family_sysconfig, &etw_kernel_family_alpc,     &etw_kernel_family_splitio,
    &etw_kernel_family_object,   &etw_kernel_family_lostevent, &etw_kernel_family_imageid,
    &etw_kernel_family_sysconfigex,
};
#define MINE_COUNT (sizeof k_mine / sizeof k_mine[0])

/* ---- helpers ------------------------------------------------------------ */

static int has_event_type(const etw_kernel_family *f, uint8_t type) {
    for (uint16_t i = 0; i < f->event_count; i++)
        if (f->events[i].type == type) return 1;
    return 0;
}

static const etw_kernel_event *event_of(const etw_kernel_family *f, uint8_t type) {
    for (uint16_t i = 0; i < f->event_count; i++)
        if (f->events[i].type == type) return &f->events[i];
    return NULL;
}

static int serves(const etw_kernel_layout *l, uint8_t type) {
    for (uint16_t i = 0; i < l->type_count; i++)
        if (l->types[i] == type) return 1;
    return 0;
}

static const etw_kernel_layout *find_layout(const etw_kernel_family *f, uint8_t type,
                                            uint8_t version) {
    for (uint16_t i = 0; i < f->layout_count; i++)
        if (f->layouts[i].version == version && serves(&f->layouts[i], type))
            return &f->layouts[i];
    return NULL;
}

static const etw_kernel_layout *layout_by_class(const etw_kernel_family *f, const char *cls,
                                                uint8_t version) {
    for (uint16_t i = 0; i < f->layout_count; i++)
        if (f->layouts[i].version == version && strcmp(f->layouts[i].mof_class, cls) == 0)
            return &f->layouts[i];
    return NULL;
}

static const etw_kernel_family *family_by_group(const char *group) {
    for (size_t i = 0; i < MINE_COUNT; i++)
        if (strcmp(k_mine[i]->group, group) == 0) return k_mine[i];
    return NULL;
}

/* The fixed size of a flat property for a pointer size, or 0 when its size
 * depends on the payload (strings without a fixed length, SIDs, arrays). */
static uint32_t fixed_size(const etw_property *p, unsigned ptr) {
    if (p->flags & ETW_PROP_ARRAY_MASK) return 0;
    switch (p->in_type) {
    case ETW_INTYPE_INT8: case ETW_INTYPE_UINT8: return 1;
    case ETW_INTYPE_INT16: case ETW_INTYPE_UINT16: return 2;
    case ETW_INTYPE_INT32: case ETW_INTYPE_UINT32: case ETW_INTYPE_HEXINT32:
    case ETW_INTYPE_BOOLEAN: case ETW_INTYPE_FLOAT: return 4;
    case ETW_INTYPE_INT64: case ETW_INTYPE_UINT64: case ETW_INTYPE_HEXINT64:
    case ETW_INTYPE_DOUBLE: case ETW_INTYPE_FILETIME: return 8;
    case ETW_INTYPE_GUID: case ETW_INTYPE_SYSTEMTIME: return 16;
    case ETW_INTYPE_POINTER: case ETW_INTYPE_SIZET: return ptr;
    case ETW_INTYPE_UNICODESTRING:
        return (p->flags & ETW_PROP_LENGTH_FIXED) ? 2u * p->length : 0;
    case ETW_INTYPE_ANSISTRING:
    case ETW_INTYPE_BINARY:
        return (p->flags & ETW_PROP_LENGTH_FIXED) ? p->length : 0;
    default: return 0;
    }
}

/* The offset of property `name` of layout l (flat) for pointer size ptr:
 * >= 0, -1 when it follows a variable-length property, -2 when absent.
 * name NULL: the end of the fixed part (-1 when the layout has a variable
 * property). */
static long field_offset(const etw_kernel_layout *l, const char *name, unsigned ptr) {
    long off = 0;
    for (uint16_t i = 0; i < l->prop_count; i++) {
        const etw_property *p = &l->props[i];
        if (name && strcmp(p->name, name) == 0) return off;
        if (off >= 0) {
            uint32_t n = fixed_size(p, ptr);
            off = n ? off + (long)n : -1;
        }
    }
    return name ? -2 : off;
}

/* ---- 1. the tree rules and names, every family -------------------------- */

static void check_tree(const etw_kernel_family *f, const etw_kernel_layout *l) {
    ETW_CHECK(l->mof_class != NULL && l->mof_class[0] != 0);
    ETW_CHECK(l->type_count > 0 && l->types != NULL);
    ETW_CHECK(l->top_count <= l->prop_count);
    ETW_CHECK(l->prop_count == 0 || l->props != NULL);
    for (uint16_t i = 0; i < l->prop_count; i++) {
        const etw_property *p = &l->props[i];
        ETW_CHECK(p->name != NULL && p->name[0] != 0);
        if (p->flags & ETW_PROP_STRUCT) {
            ETW_CHECK(p->struct_first > i);
            ETW_CHECK((uint32_t)p->struct_first + p->struct_count <= l->prop_count);
        }
        if (p->flags & (ETW_PROP_COUNT_REF)) ETW_CHECK(p->count < i);
        if (p->flags & (ETW_PROP_LENGTH_REF)) ETW_CHECK(p->length < i);
        /* a fixed length of 0 would be a zero-size field */
        if (p->flags & ETW_PROP_LENGTH_FIXED) ETW_CHECK(p->length > 0);
        /* names unique within the top level */
        for (uint16_t j = 0; j < i && i < l->top_count; j++)
            if (strcmp(l->props[j].name, p->name) == 0) {
                fprintf(stderr, "%s %s v%u: duplicate property %s\n", f->group, l->mof_class,
                        l->version, p->name);
                ETW_CHECK(0);
            }
    }
    /* every member index is reached from exactly one parent (or is top level) */
    for (uint16_t i = l->top_count; i < l->prop_count; i++) {
        int parents = 0;
        for (uint16_t j = 0; j < l->prop_count; j++) {
            const etw_property *q = &l->props[j];
            if ((q->flags & ETW_PROP_STRUCT) && i >= q->struct_first &&
                i < q->struct_first + q->struct_count)
                parents++;
        }
        ETW_CHECK_INT(parents, 1);
    }
    for (uint16_t t = 0; t < l->type_count; t++) {
        const etw_kernel_event *e = event_of(f, l->types[t]);
        if (!e || !e->name) {
            fprintf(stderr, "%s %s v%u: event type %u has no name\n", f->group, l->mof_class,
                    l->version, l->types[t]);
            ETW_CHECK(0);
        }
    }
}

static void test_tree_rules_every_family(void) {
    ETW_CHECK(etw_kernel_family_count >= 19);
    for (uint32_t i = 0; i < etw_kernel_family_count; i++) {
        const etw_kernel_family *f = etw_kernel_families[i];
        ETW_CHECK(f->provider != NULL && f->group != NULL);
        ETW_CHECK(f->event_count == 0 || f->events != NULL);
        ETW_CHECK(f->layout_count == 0 || f->layouts != NULL);
        for (uint32_t j = 0; j < i; j++)
            ETW_CHECK(memcmp(&etw_kernel_families[j]->guid, &f->guid, sizeof f->guid) != 0);
        for (uint16_t e = 0; e < f->event_count; e++) {
            ETW_CHECK(f->events[e].name != NULL);
            for (uint16_t g = 0; g < e; g++) ETW_CHECK(f->events[g].type != f->events[e].type);
        }
        for (uint16_t k = 0; k < f->layout_count; k++) {
            const etw_kernel_layout *l = &f->layouts[k];
            check_tree(f, l);
            /* no (type, version) served by two layouts */
            for (uint16_t m = 0; m < k; m++) {
                if (f->layouts[m].version != l->version) continue;
                for (uint16_t t = 0; t < l->type_count; t++)
                    if (serves(&f->layouts[m], l->types[t])) {
                        fprintf(stderr, "%s: type %u v%u served twice\n", f->group, l->types[t],
                                l->version);
                        ETW_CHECK(0);
                    }
            }
        }
    }
}

/* The providers and groups the contract names (docs/json-output.md keys
 * provider/event; kernel-mof.md §2.3, §5; naming.md). */
static void test_provider_and_group_names(void) {
    ETW_CHECK_STR(etw_kernel_family_imageid.provider, "KernelTraceControl");
    ETW_CHECK_STR(etw_kernel_family_imageid.group, "ImageID");
    ETW_CHECK_STR(etw_kernel_family_sysconfigex.provider, "Windows Kernel");
    ETW_CHECK_STR(etw_kernel_family_sysconfigex.group, "SysConfig");
    ETW_CHECK_STR(etw_kernel_family_sysconfig.group, "SystemConfig");
    ETW_CHECK_STR(etw_kernel_family_memory.group, "Memory");
    ETW_CHECK_STR(etw_kernel_family_diskio.group, "DiskIO");
    ETW_CHECK_STR(etw_kernel_family_fileio.group, "FileIO");
    ETW_CHECK_STR(etw_kernel_family_lostevent.group, "LostEvent");
    for (size_t i = 0; i < MINE_COUNT; i++)
        if (k_mine[i] != &etw_kernel_family_imageid)
            ETW_CHECK_STR(k_mine[i]->provider, "Windows Kernel");
    /* GUIDs: b3e675d7-2554-4f18-830b-2762732560de, 9b79ee91-b5fd-41c0-a243-4248e266e9d0 */
    ETW_CHECK(etw_kernel_family_imageid.guid.data1 == 0xb3e675d7u);
    ETW_CHECK(etw_kernel_family_imageid.guid.data4[7] == 0xde);
    ETW_CHECK(etw_kernel_family_sysconfigex.guid.data1 == 0x9b79ee91u);
    ETW_CHECK(etw_kernel_family_sysconfigex.guid.data4[7] == 0xd0);
    /* event names PerfView gives (naming.md) */
    ETW_CHECK_STR(event_of(&etw_kernel_family_memory, 32)->name, "HardFault");
    ETW_CHECK_STR(event_of(&etw_kernel_family_memory, 98)->name, "VirtualMem/Alloc");
    ETW_CHECK_STR(event_of(&etw_kernel_family_memory, 13)->name, "GuardMemory");
    ETW_CHECK_STR(event_of(&etw_kernel_family_tcpip, 10)->name, "Send");
    ETW_CHECK_STR(event_of(&etw_kernel_family_tcpip, 27)->name, "RecvIPV6");
    ETW_CHECK_STR(event_of(&etw_kernel_family_udpip, 26)->name, "SendIPV6");
    ETW_CHECK_STR(event_of(&etw_kernel_family_fileio, 0)->name, "");
    ETW_CHECK_STR(event_of(&etw_kernel_family_fileio, 36)->name, "FileRundown");
    ETW_CHECK_STR(event_of(&etw_kernel_family_imageid, 0x00)->name, "");
    ETW_CHECK_STR(event_of(&etw_kernel_family_imageid, 0x24)->name, "DbgID_RSDS");
    ETW_CHECK_STR(event_of(&etw_kernel_family_sysconfigex, 0x23)->name, "VolumeMapping");
    ETW_CHECK_STR(event_of(&etw_kernel_family_sysconfig, 25)->name, "Platform");
    ETW_CHECK_STR(event_of(&etw_kernel_family_diskio, 34)->name, "DriverMajorFunctionCall");
    /* types TraceEvent does not know stay unnamed: Opcode(34), Opcode(41), Opcode(37) */
    ETW_CHECK(event_of(&etw_kernel_family_imageid, 0x22) == NULL);
    ETW_CHECK(event_of(&etw_kernel_family_imageid, 0x29) == NULL);
    ETW_CHECK(event_of(&etw_kernel_family_sysconfigex, 0x25) == NULL);
    /* pid/tid fields (kernel-mof.md §6) */
    ETW_CHECK_STR(event_of(&etw_kernel_family_diskio, 10)->tid_field, "IssuingThreadId");
    ETW_CHECK(event_of(&etw_kernel_family_diskio, 12)->tid_field == NULL); /* the header's */
    ETW_CHECK_STR(event_of(&etw_kernel_family_memory, 32)->tid_field, "TThreadId");
    ETW_CHECK_STR(event_of(&etw_kernel_family_fileio, 67)->tid_field, "TTID");
    ETW_CHECK_STR(event_of(&etw_kernel_family_tcpip, 26)->pid_field, "PID");
    ETW_CHECK_STR(event_of(&etw_kernel_family_udpip, 11)->pid_field, "PID");
    ETW_CHECK_STR(event_of(&etw_kernel_family_sysconfig, 15)->pid_field, "ProcessId");
}

/* A pid_field/tid_field names a property of every layout serving its type
 * that has one at all (older versions may lack it: the header is kept). */
static void test_id_fields_exist(void) {
    for (size_t i = 0; i < MINE_COUNT; i++) {
        const etw_kernel_family *f = k_mine[i];
        for (uint16_t e = 0; e < f->event_count; e++) {
            const etw_kernel_event *ev = &f->events[e];
            const char *names[2] = {ev->pid_field, ev->tid_field};
            for (int k = 0; k < 2; k++) {
                if (!names[k]) continue;
                int found = 0;
                for (uint16_t m = 0; m < f->layout_count; m++)
                    if (serves(&f->layouts[m], ev->type) &&
                        field_offset(&f->layouts[m], names[k], 8) != -2)
                        found = 1;
                if (!found) fprintf(stderr, "%s/%s: no layout has %s\n", f->group, ev->name, names[k]);
                ETW_CHECK(found);
            }
        }
    }
}

/* ---- 2. offsets against the documented layouts -------------------------- */

/* A field's offset for 4- and 8-byte pointers; VAR: after a variable field.
 * field NULL: the end of the fixed part. */
#define VAR (-1L)
typedef struct expected_offset {
    const char *group;
    const char *mof_class;
    uint8_t version;
    const char *field;
    long off4, off8;
    const char *source;
} expected_offset;

#define D42 "kernel-mof.md 4.2"
#define TEV "TraceEvent getters"
#define MOF "PerfView Vista MOF + 4.0 sizes"
#define D5 "kernel-mof.md 5 (SystemConfig v2 types 29-35)"

static const expected_offset k_offsets[] = {
    /* kernel-mof.md §4.2 "DiskIo_V2_TypeGroup1 v2 / DiskIo_TypeGroup1 v3" */
    {"DiskIO", "DiskIo_V3_TypeGroup1", 3, "DiskNumber", 0, 0, D42},
    {"DiskIO", "DiskIo_V3_TypeGroup1", 3, "IrpFlags", 4, 4, D42},
    {"DiskIO", "DiskIo_V3_TypeGroup1", 3, "TransferSize", 8, 8, D42},
    {"DiskIO", "DiskIo_V3_TypeGroup1", 3, "Reserved", 12, 12, D42},
    {"DiskIO", "DiskIo_V3_TypeGroup1", 3, "ByteOffset", 16, 16, D42},
    {"DiskIO", "DiskIo_V3_TypeGroup1", 3, "FileObject", 24, 24, D42},
    {"DiskIO", "DiskIo_V3_TypeGroup1", 3, "Irp", 28, 32, D42},
    {"DiskIO", "DiskIo_V3_TypeGroup1", 3, "HighResResponseTime", 32, 40, D42},
    {"DiskIO", "DiskIo_V3_TypeGroup1", 3, "IssuingThreadId", 40, 48, D42},
    {"DiskIO", "DiskIo_V3_TypeGroup1", 3, NULL, 44, 52, D42},
    {"DiskIO", "DiskIo_V2_TypeGroup1", 2, "Irp", 28, 32, D42},
    {"DiskIO", "DiskIo_V2_TypeGroup1", 2, "HighResResponseTime", 32, 40, D42},
    {"DiskIO", "DiskIo_V2_TypeGroup1", 2, NULL, 40, 48, D42},
    /* §4.2 DiskIo_TypeGroup2 v2/v3 */
    {"DiskIO", "DiskIo_V3_TypeGroup2", 3, "Irp", 0, 0, D42},
    {"DiskIO", "DiskIo_V3_TypeGroup2", 3, "IssuingThreadId", 4, 8, D42},
    {"DiskIO", "DiskIo_V3_TypeGroup2", 3, NULL, 8, 12, D42},
    {"DiskIO", "DiskIo_V2_TypeGroup2", 2, NULL, 4, 8, D42},
    /* §4.2 DiskIo_TypeGroup3 v2/v3 */
    {"DiskIO", "DiskIo_V3_TypeGroup3", 3, "HighResResponseTime", 8, 8, D42},
    {"DiskIO", "DiskIo_V3_TypeGroup3", 3, "Irp", 16, 16, D42},
    {"DiskIO", "DiskIo_V3_TypeGroup3", 3, "IssuingThreadId", 20, 24, D42},
    {"DiskIO", "DiskIo_V3_TypeGroup3", 3, NULL, 24, 28, D42},
    {"DiskIO", "DiskIo_V2_TypeGroup3", 2, NULL, 20, 24, D42},
    /* Vista MOF DriverMajorFunctionCall: 2 u32, 3 pointers, u32 */
    {"DiskIO", "DriverMajorFunctionCall", 2, "RoutineAddr", 8, 8, MOF},
    {"DiskIO", "DriverMajorFunctionCall", 2, "Irp", 16, 24, MOF},
    {"DiskIO", "DriverMajorFunctionCall", 2, NULL, 24, 36, MOF},
    /* §4.2 PageFault_TypeGroup1 v2, PageFault_HardFault v2 */
    {"Memory", "PageFault_TypeGroup1", 2, "ProgramCounter", 4, 8, D42},
    {"Memory", "PageFault_TypeGroup1", 2, NULL, 8, 16, D42},
    {"Memory", "PageFault_HardFault", 2, "InitialTime", 0, 0, D42},
    {"Memory", "PageFault_HardFault", 2, "ReadOffset", 8, 8, D42},
    {"Memory", "PageFault_HardFault", 2, "VirtualAddress", 16, 16, D42},
    {"Memory", "PageFault_HardFault", 2, "FileObject", 20, 24, D42},
    {"Memory", "PageFault_HardFault", 2, "TThreadId", 24, 32, D42},
    {"Memory", "PageFault_HardFault", 2, "ByteCount", 28, 36, D42},
    {"Memory", "PageFault_HardFault", 2, NULL, 32, 40, D42},
    /* TraceEvent VirtualAllocTraceData: HostOffset(4,1), (8,2), (0xC,2), length (0x10,2) */
    {"Memory", "PageFault_VirtualAlloc", 2, "RegionSize", 4, 8, TEV},
    {"Memory", "PageFault_VirtualAlloc", 2, "ProcessId", 8, 16, TEV},
    {"Memory", "PageFault_VirtualAlloc", 2, "Flags", 12, 20, TEV},
    {"Memory", "PageFault_VirtualAlloc", 2, NULL, 16, 24, TEV},
    /* §4.2 FileIo_Name v0-v3 */
    {"FileIO", "FileIo_Name", 2, "FileObject", 0, 0, D42},
    {"FileIO", "FileIo_Name", 2, "FileName", 4, 8, D42},
    {"FileIO", "FileIo_V0_Name", 0, "FileName", 4, 8, D42},
    {"FileIO", "FileIo_V3_Name", 3, "FileName", 4, 8, D42},
    /* §4.2 FileIo_Create v2, v3 */
    {"FileIO", "FileIo_Create", 2, "TTID", 4, 8, D42},
    {"FileIO", "FileIo_Create", 2, "FileObject", 8, 16, D42},
    {"FileIO", "FileIo_Create", 2, "CreateOptions", 12, 24, D42},
    {"FileIO", "FileIo_Create", 2, "FileAttributes", 16, 28, D42},
    {"FileIO", "FileIo_Create", 2, "ShareAccess", 20, 32, D42},
    {"FileIO", "FileIo_Create", 2, "OpenPath", 24, 36, D42},
    {"FileIO", "FileIo_V3_Create", 3, "FileObject", 4, 8, D42},
    {"FileIO", "FileIo_V3_Create", 3, "TTID", 8, 16, D42},
    {"FileIO", "FileIo_V3_Create", 3, "CreateOptions", 12, 20, D42},
    {"FileIO", "FileIo_V3_Create", 3, "FileAttributes", 16, 24, D42},
    {"FileIO", "FileIo_V3_Create", 3, "ShareAccess", 20, 28, D42},
    {"FileIO", "FileIo_V3_Create", 3, "OpenPath", 24, 32, D42},
    /* §4.2 FileIo_ReadWrite v3; v2 from TraceEvent (Version <= 2 branches) */
    {"FileIO", "FileIo_V3_ReadWrite", 3, "IrpPtr", 8, 8, D42},
    {"FileIO", "FileIo_V3_ReadWrite", 3, "FileObject", 12, 16, D42},
    {"FileIO", "FileIo_V3_ReadWrite", 3, "FileKey", 16, 24, D42},
    {"FileIO", "FileIo_V3_ReadWrite", 3, "TTID", 20, 32, D42},
    {"FileIO", "FileIo_V3_ReadWrite", 3, "IoSize", 24, 36, D42},
    {"FileIO", "FileIo_V3_ReadWrite", 3, "IoFlags", 28, 40, D42},
    {"FileIO", "FileIo_V3_ReadWrite", 3, NULL, 32, 44, D42},
    {"FileIO", "FileIo_ReadWrite", 2, "TTID", 12, 16, TEV},
    {"FileIO", "FileIo_ReadWrite", 2, "FileObject", 16, 24, TEV},
    {"FileIO", "FileIo_ReadWrite", 2, "FileKey", 20, 32, TEV},
    {"FileIO", "FileIo_ReadWrite", 2, "IoSize", 24, 40, TEV},
    {"FileIO", "FileIo_ReadWrite", 2, "IoFlags", 28, 44, TEV},
    {"FileIO", "FileIo_ReadWrite", 2, NULL, 32, 48, TEV},
    /* §4.2 FileIo_SimpleOp v3; v2 from TraceEvent */
    {"FileIO", "FileIo_V3_SimpleOp", 3, "FileObject", 4, 8, D42},
    {"FileIO", "FileIo_V3_SimpleOp", 3, "FileKey", 8, 16, D42},
    {"FileIO", "FileIo_V3_SimpleOp", 3, "TTID", 12, 24, D42},
    {"FileIO", "FileIo_V3_SimpleOp", 3, NULL, 16, 28, D42},
    {"FileIO", "FileIo_SimpleOp", 2, "FileObject", 8, 16, TEV},
    {"FileIO", "FileIo_SimpleOp", 2, "FileKey", 12, 24, TEV},
    {"FileIO", "FileIo_SimpleOp", 2, NULL, 16, 32, TEV},
    /* TraceEvent FileIOInfoTraceData, FileIODirEnumTraceData (v2 and v3) */
    {"FileIO", "FileIo_Info", 2, "ExtraInfo", 16, 32, TEV},
    {"FileIO", "FileIo_Info", 2, "InfoClass", 20, 40, TEV},
    {"FileIO", "FileIo_Info", 2, NULL, 24, 44, TEV},
    {"FileIO", "FileIo_V3_Info", 3, "ExtraInfo", 12, 24, TEV},
    {"FileIO", "FileIo_V3_Info", 3, "TTID", 16, 32, TEV},
    {"FileIO", "FileIo_V3_Info", 3, "InfoClass", 20, 36, TEV},
    {"FileIO", "FileIo_V3_Info", 3, NULL, 24, 40, TEV},
    {"FileIO", "FileIo_DirEnum", 2, "Length", 16, 32, TEV},
    {"FileIO", "FileIo_DirEnum", 2, "FileName", 28, 44, TEV},
    {"FileIO", "FileIo_V3_DirEnum", 3, "TTID", 12, 24, TEV},
    {"FileIO", "FileIo_V3_DirEnum", 3, "Length", 16, 28, TEV},
    {"FileIO", "FileIo_V3_DirEnum", 3, "InfoClass", 20, 32, TEV},
    {"FileIO", "FileIo_V3_DirEnum", 3, "FileIndex", 24, 36, TEV},
    {"FileIO", "FileIo_V3_DirEnum", 3, "FileName", 28, 40, TEV},
    /* TraceEvent MapFileTraceData */
    {"FileIO", "FileIo_MapFile", 2, "MiscInfo", 8, 16, TEV},
    {"FileIO", "FileIo_MapFile", 2, "ViewSize", 16, 24, TEV},
    {"FileIO", "FileIo_MapFile", 2, "ProcessId", 20, 32, TEV},
    {"FileIO", "FileIo_V3_MapFile", 3, "ByteOffset", 20, 32, TEV},
    {"FileIO", "FileIo_V3_MapFile", 3, "ProcessId", 28, 40, TEV},
    /* TraceEvent RegistryTraceData: KeyName at HostOffset(16,2), (20,2), (20,1) */
    {"Registry", "Registry_V0_TypeGroup1", 0, "KeyName", 16, 24, TEV},
    {"Registry", "Registry_V1_TypeGroup1", 1, "KeyName", 20, 28, TEV},
    {"Registry", "Registry_TypeGroup1", 2, "KeyName", 20, 24, TEV},
    /* TraceEvent Driver*TraceData lengths: HostOffset(12,2), HostOffset(8,1) */
    {"DiskIO", "DriverCompletionRoutine", 2, NULL, 12, 20, TEV},
    {"DiskIO", "DriverCompleteRequest", 2, NULL, 12, 20, TEV},
    {"DiskIO", "DriverCompleteRequestReturn", 2, NULL, 8, 12, TEV},
    /* §4.2 FileIo_OpEnd v2/v3 */
    {"FileIO", "FileIo_OpEnd", 2, "ExtraInfo", 4, 8, D42},
    {"FileIO", "FileIo_OpEnd", 2, "NtStatus", 8, 16, D42},
    {"FileIO", "FileIo_OpEnd", 2, NULL, 12, 20, D42},
    {"FileIO", "FileIo_V3_OpEnd", 3, NULL, 12, 20, D42},
    /* §4.2 TcpIp_SendIPV4 v2 */
    {"TcpIp", "TcpIp_SendIPV4", 2, "daddr", 8, 8, D42},
    {"TcpIp", "TcpIp_SendIPV4", 2, "saddr", 12, 12, D42},
    {"TcpIp", "TcpIp_SendIPV4", 2, "dport", 16, 16, D42},
    {"TcpIp", "TcpIp_SendIPV4", 2, "sport", 18, 18, D42},
    {"TcpIp", "TcpIp_SendIPV4", 2, "startime", 20, 20, D42},
    {"TcpIp", "TcpIp_SendIPV4", 2, "endtime", 24, 24, D42},
    {"TcpIp", "TcpIp_SendIPV4", 2, "seqnum", 28, 28, D42},
    {"TcpIp", "TcpIp_SendIPV4", 2, "connid", 32, 32, D42},
    {"TcpIp", "TcpIp_SendIPV4", 2, NULL, 36, 40, D42},
    /* §4.2 TcpIp_TypeGroup1 v2 */
    {"TcpIp", "TcpIp_TypeGroup1", 2, "seqnum", 20, 20, D42},
    {"TcpIp", "TcpIp_TypeGroup1", 2, "connid", 24, 24, D42},
    {"TcpIp", "TcpIp_TypeGroup1", 2, NULL, 28, 32, D42},
    /* §4.2 TcpIp_SendIPV6 v2 */
    {"TcpIp", "TcpIp_SendIPV6", 2, "daddr", 8, 8, D42},
    {"TcpIp", "TcpIp_SendIPV6", 2, "saddr", 24, 24, D42},
    {"TcpIp", "TcpIp_SendIPV6", 2, "dport", 40, 40, D42},
    {"TcpIp", "TcpIp_SendIPV6", 2, "sport", 42, 42, D42},
    {"TcpIp", "TcpIp_SendIPV6", 2, "startime", 44, 44, D42},
    {"TcpIp", "TcpIp_SendIPV6", 2, "endtime", 48, 48, D42},
    {"TcpIp", "TcpIp_SendIPV6", 2, "seqnum", 52, 52, D42},
    {"TcpIp", "TcpIp_SendIPV6", 2, "connid", 56, 56, D42},
    {"TcpIp", "TcpIp_SendIPV6", 2, NULL, 60, 64, D42},
    /* §4.2 TcpIp_TypeGroup3 v2 */
    {"TcpIp", "TcpIp_TypeGroup3", 2, "saddr", 24, 24, D42},
    {"TcpIp", "TcpIp_TypeGroup3", 2, "seqnum", 44, 44, D42},
    {"TcpIp", "TcpIp_TypeGroup3", 2, "connid", 48, 48, D42},
    {"TcpIp", "TcpIp_TypeGroup3", 2, NULL, 52, 56, D42},
    /* Vista MOF TcpIp_TypeGroup2 v2 (connect): 24 bytes of options after the ports */
    {"TcpIp", "TcpIp_TypeGroup2", 2, "mss", 20, 20, MOF},
    {"TcpIp", "TcpIp_TypeGroup2", 2, "rcvwin", 28, 28, MOF},
    {"TcpIp", "TcpIp_TypeGroup2", 2, "seqnum", 36, 36, MOF},
    {"TcpIp", "TcpIp_TypeGroup2", 2, "connid", 40, 40, MOF},
    {"TcpIp", "TcpIp_TypeGroup2", 2, NULL, 44, 48, MOF},
    /* TraceEvent TcpIpTraceData (v0: 20 bytes, size at 12, PID at 16) and
     * TcpIpConnectTraceData (v2: seqnum at 36, connid at 40, HostOffset(44,1)) */
    {"TcpIp", "TcpIp_V0_TypeGroup1", 0, "dport", 8, 8, TEV},
    {"TcpIp", "TcpIp_V0_TypeGroup1", 0, "size", 12, 12, TEV},
    {"TcpIp", "TcpIp_V0_TypeGroup1", 0, "PID", 16, 16, TEV},
    {"TcpIp", "TcpIp_V0_TypeGroup1", 0, NULL, 20, 20, TEV},
    {"TcpIp", "TcpIp_TypeGroup2", 2, "sndwinscale", 34, 34, TEV},
    {"TcpIp", "TcpIp_TypeGroup4", 2, "connid", 64, 64, MOF},
    {"TcpIp", "TcpIp_TypeGroup4", 2, NULL, 68, 72, MOF},
    {"TcpIp", "TcpIp_V1_Receive", 1, "connid", 20, 20, MOF},
    {"TcpIp", "TcpIp_V1_Receive", 1, "seqnum", 24, 28, MOF},
    /* §4.2 UdpIp_TypeGroup1 v2 */
    {"UdpIp", "UdpIp_TypeGroup1", 2, "dport", 16, 16, D42},
    {"UdpIp", "UdpIp_TypeGroup1", 2, "sport", 18, 18, D42},
    {"UdpIp", "UdpIp_TypeGroup1", 2, "seqnum", 20, 20, D42},
    {"UdpIp", "UdpIp_TypeGroup1", 2, "connid", 24, 24, D42},
    {"UdpIp", "UdpIp_TypeGroup1", 2, NULL, 28, 32, D42},
    {"UdpIp", "UdpIp_TypeGroup2", 2, "seqnum", 44, 44, D42},
    {"UdpIp", "UdpIp_TypeGroup2", 2, NULL, 52, 56, D42},
    {"UdpIp", "UdpIp_V0_TypeGroup1", 0, "saddr", 4, 8, MOF},
    {"UdpIp", "UdpIp_V0_TypeGroup1", 0, "dsize", 18, 22, MOF},
    {"UdpIp", "UdpIp_V0_TypeGroup1", 0, NULL, 20, 24, MOF},
    /* §4.2 Registry_TypeGroup1 v2 */
    {"Registry", "Registry_TypeGroup1", 2, "Status", 8, 8, D42},
    {"Registry", "Registry_TypeGroup1", 2, "Index", 12, 12, D42},
    {"Registry", "Registry_TypeGroup1", 2, "KeyHandle", 16, 16, D42},
    {"Registry", "Registry_TypeGroup1", 2, "KeyName", 20, 24, D42},
    {"Registry", "Registry_V0_TypeGroup1", 0, "ElapsedTime", 8, 16, MOF},
    {"Registry", "Registry_V1_TypeGroup1", 1, "KeyName", 20, 28, MOF},
    /* §4.2 SystemConfig_CPU v2 (v3 appends) */
    {"SystemConfig", "SystemConfig_CPU", 2, "ComputerName", 20, 20, D42},
    {"SystemConfig", "SystemConfig_CPU", 2, "DomainName", 532, 532, D42},
    {"SystemConfig", "SystemConfig_CPU", 2, "HyperThreadingFlag", 800, 800, D42},
    {"SystemConfig", "SystemConfig_CPU", 2, NULL, 804, 808, TEV},
    {"SystemConfig", "SystemConfig_V3_CPU", 3, "HighestUserAddress", 804, 808, D42},
    {"SystemConfig", "SystemConfig_V3_CPU", 3, "ProcessorArchitecture", 808, 816, D42},
    {"SystemConfig", "SystemConfig_V3_CPU", 3, "ProcessorLevel", 810, 818, D42},
    {"SystemConfig", "SystemConfig_V3_CPU", 3, "ProcessorRevision", 812, 820, D42},
    {"SystemConfig", "SystemConfig_V3_CPU", 3, "PaeEnabled", 814, 822, D42},
    {"SystemConfig", "SystemConfig_V3_CPU", 3, "NxEnabled", 815, 823, D42},
    {"SystemConfig", "SystemConfig_V3_CPU", 3, "MemorySpeed", 816, 824, D42},
    {"SystemConfig", "SystemConfig_V3_CPU", 3, NULL, 820, 828, D42},
    {"SystemConfig", "SystemConfig_V0_CPU", 0, "HyperThreadingFlag", 796, 796, TEV},
    /* §5: Processors = 12 + 128 + 256 + 32 = 428 bytes, names in that order */
    {"SystemConfig", "SystemConfig_Processors", 2, "ProcessorName", 12, 12, D5},
    {"SystemConfig", "SystemConfig_Processors", 2, "ProcessorIdentifier", 140, 140, D5},
    {"SystemConfig", "SystemConfig_Processors", 2, "VendorIdentifier", 396, 396, D5},
    {"SystemConfig", "SystemConfig_Processors", 2, NULL, 428, 428, D5},
    /* §5: DeviceFamily u64, u32, u32; CodeIntegrity u32; TelemetryConfiguration GUID */
    {"SystemConfig", "SystemConfig_DeviceFamily", 2, "DeviceForm", 12, 12, D5},
    {"SystemConfig", "SystemConfig_DeviceFamily", 2, NULL, 16, 16, D5},
    {"SystemConfig", "SystemConfig_CodeIntegrity", 2, NULL, 4, 4, D5},
    {"SystemConfig", "SystemConfig_TelemetryConfiguration", 2, NULL, 16, 16, D5},
    /* TraceEvent SystemConfigPhyDiskTraceData / LogDisk / Video / NIC / Services */
    {"SystemConfig", "SystemConfig_PhyDisk", 2, "Manufacturer", 40, 40, TEV},
    {"SystemConfig", "SystemConfig_PhyDisk", 2, "PartitionCount", 552, 552, TEV},
    {"SystemConfig", "SystemConfig_PhyDisk", 2, "WriteCacheEnabled", 556, 556, TEV},
    {"SystemConfig", "SystemConfig_PhyDisk", 2, "BootDriveLetter", 558, 558, TEV},
    {"SystemConfig", "SystemConfig_PhyDisk", 2, "Spare", 564, 564, TEV},
    {"SystemConfig", "SystemConfig_PhyDisk", 2, NULL, 568, 568, TEV},
    {"SystemConfig", "SystemConfig_LogDisk", 2, "DriveLetterString", 28, 28, TEV},
    {"SystemConfig", "SystemConfig_LogDisk", 2, "PartitionNumber", 40, 40, TEV},
    {"SystemConfig", "SystemConfig_LogDisk", 2, "NumberOfFreeClusters", 56, 56, TEV},
    {"SystemConfig", "SystemConfig_LogDisk", 2, "FileSystem", 72, 72, TEV},
    {"SystemConfig", "SystemConfig_LogDisk", 2, "VolumeExt", 104, 104, TEV},
    {"SystemConfig", "SystemConfig_LogDisk", 2, NULL, 112, 112, TEV},
    {"SystemConfig", "SystemConfig_V0_LogDisk", 0, NULL, 108, 108, TEV},
    {"SystemConfig", "SystemConfig_Video", 2, "DACType", 532, 532, TEV},
    {"SystemConfig", "SystemConfig_Video", 2, "DeviceId", 2068, 2068, TEV},
    {"SystemConfig", "SystemConfig_Video", 2, "StateFlags", 2580, 2580, TEV},
    {"SystemConfig", "SystemConfig_Video", 2, NULL, 2584, 2584, TEV},
    {"SystemConfig", "SystemConfig_NIC", 2, "PhysicalAddrLen", 8, 8, TEV},
    {"SystemConfig", "SystemConfig_NIC", 2, "Ipv6Index", 16, 16, TEV},
    {"SystemConfig", "SystemConfig_NIC", 2, "NICDescription", 20, 20, TEV},
    {"SystemConfig", "SystemConfig_V0_NIC", 0, "Index", 512, 512, TEV},
    {"SystemConfig", "SystemConfig_V0_NIC", 0, "PhysicalAddrLen", 516, 516, TEV},
    {"SystemConfig", "SystemConfig_V0_NIC", 0, NULL, 584, 584, TEV},
    {"SystemConfig", "SystemConfig_V0_Services", 0, "DisplayName", 68, 68, TEV},
    {"SystemConfig", "SystemConfig_V0_Services", 0, "ProcessName", 580, 580, TEV},
    {"SystemConfig", "SystemConfig_V0_Services", 0, "ProcessId", 648, 648, TEV},
    {"SystemConfig", "SystemConfig_V0_Services", 0, NULL, 652, 652, TEV},
    /* §4.2 SystemConfig_Services v2/v3 */
    {"SystemConfig", "SystemConfig_Services", 2, "ServiceState", 4, 4, D42},
    {"SystemConfig", "SystemConfig_Services", 2, "SubProcessTag", 8, 8, D42},
    {"SystemConfig", "SystemConfig_Services", 2, "ServiceName", 12, 12, D42},
    {"SystemConfig", "SystemConfig_V3_Services", 3, "ServiceName", 12, 12, D42},
    {"SystemConfig", "SystemConfig_Power", 2, NULL, 8, 8, TEV},
    {"SystemConfig", "SystemConfig_Network", 2, "TcpTimedWaitDelay", 12, 12, TEV},
    {"SystemConfig", "SystemConfig_Network", 2, NULL, 16, 16, TEV},
    {"SystemConfig", "SystemConfig_IRQ", 2, "DeviceDescriptionLen", 12, 12, TEV},
    {"SystemConfig", "SystemConfig_IRQ", 2, "DeviceDescription", 16, 16, TEV},
    {"SystemConfig", "SystemConfig_IDEChannel", 2, "LocationInformation", 16, 16, TEV},
    {"SystemConfig", "SystemConfig_PnP", 2, "DeviceID", 12, 12, TEV},
    {"SystemConfig", "SystemConfig_V4_PnP", 4, "DeviceID", 24, 24, TEV},
    {"SystemConfig", "SystemConfig_V5_PnP", 5, "DeviceID", 32, 32, TEV},
    /* System Informer ntwmi.h: OPTICAL_MEDIA_RECORD, WMI_DPI_RECORD, WMI_IRQ_RECORD */
    {"SystemConfig", "SystemConfig_OpticalDisk", 2, "StartingOffset", 8, 8, "ntwmi.h"},
    {"SystemConfig", "SystemConfig_OpticalDisk", 2, "NumberOfSessions", 48, 48, "ntwmi.h"},
    {"SystemConfig", "SystemConfig_OpticalDisk", 2, "BytesPerSector", 56, 56, "ntwmi.h"},
    {"SystemConfig", "SystemConfig_OpticalDisk", 2, "Data", 64, 64, "ntwmi.h"},
    {"SystemConfig", "SystemConfig_DPI", 2, NULL, 8, 8, "ntwmi.h"},
    {"SystemConfig", "SystemConfig_V3_IRQ", 3, "IRQNum", 12, 12, "ntwmi.h"},
    {"SystemConfig", "SystemConfig_V3_IRQ", 3, "DeviceDescriptionLen", 16, 16, "ntwmi.h + TEV"},
    {"SystemConfig", "SystemConfig_V3_IRQ", 3, "DeviceDescription", 20, 20, "ntwmi.h + TEV"},
    /* §4.2 SystemConfig_Platform v2 */
    {"SystemConfig", "SystemConfig_Platform", 2, "SystemManufacturer", 0, 0, D42},
    /* §4.2 KernelTraceControl ImageID Info v2, DbgID_RSDS v2, DbgPPDB v2, DbgDeterm v1, FileVersion v0 */
    {"ImageID", "ImageId_Info", 2, "ImageSize", 4, 8, D42},
    {"ImageID", "ImageId_Info", 2, "ProcessId", 8, 16, D42},
    {"ImageID", "ImageId_Info", 2, "TimeDateStamp", 12, 20, D42},
    {"ImageID", "ImageId_Info", 2, "OriginalFileName", 16, 24, D42},
    {"ImageID", "ImageId_DbgId_RSDS", 2, "ProcessId", 4, 8, D42},
    {"ImageID", "ImageId_DbgId_RSDS", 2, "GuidSig", 8, 12, D42},
    {"ImageID", "ImageId_DbgId_RSDS", 2, "Age", 24, 28, D42},
    {"ImageID", "ImageId_DbgId_RSDS", 2, "PdbFileName", 28, 32, D42},
    {"ImageID", "ImageId_DbgId_PPDB", 2, "TimeDateStamp", 8, 12, D42},
    {"ImageID", "ImageId_DbgId_PPDB", 2, "MajorVersion", 12, 16, D42},
    {"ImageID", "ImageId_DbgId_PPDB", 2, "MinorVersion", 14, 18, D42},
    {"ImageID", "ImageId_DbgId_PPDB", 2, NULL, 16, 20, D42},
    {"ImageID", "ImageId_DbgId_Determ", 1, "ProcessId", 4, 8, D42},
    {"ImageID", "ImageId_DbgId_Determ", 1, NULL, 8, 12, D42},
    {"ImageID", "ImageId_None", 2, NULL, 8, 12, "net.4.5.2.x64.etl bytes"},
    {"ImageID", "ImageId_FileVersion", 0, "TimeDateStamp", 4, 4, D42},
    {"ImageID", "ImageId_FileVersion", 0, "OrigFileName", 8, 8, D42},
    {"ImageID", "ImageId_FileVersion", 0, "FileDescription", VAR, VAR, D42},
    /* §4.2 SystemConfigEx BuildInfo, SystemPaths, VolumeMapping v0 */
    {"SysConfig", "SystemConfigEx_BuildInfo", 0, "BuildLab", 8, 8, D42},
    {"SysConfig", "SystemConfigEx_BuildInfo", 0, "ProductName", VAR, VAR, D42},
    {"SysConfig", "SystemConfigEx_SystemPaths", 0, "SystemDirectory", 0, 0, D42},
    {"SysConfig", "SystemConfigEx_SystemPaths", 0, "SystemWindowsDirectory", VAR, VAR, D42},
    {"SysConfig", "SystemConfigEx_VolumeMapping", 0, "DosPath", VAR, VAR, D42},
    /* TraceEvent Object*TraceData getters */
    {"Object", "ObHandleEvent", 2, "Handle", 4, 8, TEV},
    {"Object", "ObHandleEvent", 2, "ObjectType", 8, 12, TEV},
    {"Object", "ObHandleDuplicateEvent", 2, "TargetHandle", 8, 12, TEV},
    {"Object", "ObHandleDuplicateEvent", 2, "TargetProcessId", 12, 16, TEV},
    {"Object", "ObHandleDuplicateEvent", 2, "ObjectType", 16, 20, TEV},
    {"Object", "ObHandleDuplicateEvent", 2, "SourceProcessId", 18, 22, TEV},
    {"Object", "ObHandleRundownEvent", 2, "Handle", 8, 12, TEV},
    {"Object", "ObHandleRundownEvent", 2, "ObjectType", 12, 16, TEV},
    {"Object", "ObHandleRundownEvent", 2, "ObjectName", 14, 18, TEV},
    {"Object", "ObTypeEvent", 2, "ObjectTypeName", 4, 4, TEV},
    /* Vista MOF: ALPC, SplitIo */
    {"ALPC", "ALPC_Wait_For_New_Message", 2, "PortName", 4, 4, MOF},
    {"ALPC", "ALPC_Send_Message", 2, NULL, 4, 4, MOF},
    {"SplitIo", "SplitIo_Info", 2, "ChildIrp", 4, 8, MOF},
    {"SplitIo", "SplitIo_Info", 2, NULL, 8, 16, MOF},
};

static void test_offsets_match_the_documented_layouts(void) {
    for (size_t i = 0; i < sizeof k_offsets / sizeof k_offsets[0]; i++) {
        const expected_offset *x = &k_offsets[i];
        const etw_kernel_family *f = family_by_group(x->group);
        const etw_kernel_layout *l = f ? layout_by_class(f, x->mof_class, x->version) : NULL;
        if (!l) {
            fprintf(stderr, "no layout %s %s v%u\n", x->group, x->mof_class, x->version);
            ETW_CHECK(0);
            continue;
        }
        long o4 = field_offset(l, x->field, 4), o8 = field_offset(l, x->field, 8);
        if (o4 != x->off4 || o8 != x->off8) {
            fprintf(stderr, "%s %s v%u %s: offsets %ld/%ld, %s says %ld/%ld\n", x->group,
                    x->mof_class, x->version, x->field ? x->field : "(end)", o4, o8, x->source,
                    x->off4, x->off8);
            ETW_CHECK(0);
        } else {
            ETW_CHECK(1);
        }
    }
}

/* ---- 3. synthetic payloads through the decoder -------------------------- */

typedef struct buf {
    uint8_t d[8192];
    uint32_t n;
} buf;

static void put(buf *b, const void *p, uint32_t n) {
    if (b->n + n <= sizeof b->d) memcpy(b->d + b->n, p, n);
    b->n += n;
}

static void put_le(buf *b, uint64_t v, uint32_t size) {
    for (uint32_t i = 0; i < size; i++) {
        uint8_t c = (uint8_t)(v >> (8 * i));
        put(b, &c, 1);
    }
}

/* What the builder wrote for one top-level property. */
typedef struct written {
    uint32_t off;   /* value start (strings: first character) */
    uint32_t size;  /* value bytes (strings: without the NUL) */
    uint64_t value; /* integers */
    int is_int;
} written;

/* The integer written for property i of a payload: distinct per property,
 * fitting `size` bytes; properties used as array counts get 2. */
static uint64_t int_value(uint16_t i, uint32_t size, int is_count) {
    if (is_count) return 2;
    uint64_t v = 0x1122334455667788ull ^ ((uint64_t)(i + 1) * 0x0101010101010101ull);
    if (size < 8) v &= (1ull << (8 * size)) - 1;
    return v;
}

static int is_count_source(const etw_kernel_layout *l, uint16_t i) {
    for (uint16_t j = 0; j < l->prop_count; j++)
        if ((l->props[j].flags & ETW_PROP_COUNT_REF) && l->props[j].count == i) return 1;
    return 0;
}

/* A payload for flat layout l: every property gets a distinct value;
 * strings are "s<i>" (UTF-16) or "a<i>" (8-bit), fixed strings hold "F<i>"
 * padded with NULs, counted string arrays hold 2 strings. */
static void build_payload(const etw_kernel_layout *l, unsigned ptr, buf *b, written *w) {
    b->n = 0;
    for (uint16_t i = 0; i < l->prop_count; i++) {
        const etw_property *p = &l->props[i];
        char text[8];
        snprintf(text, sizeof text, "%c%u", p->in_type == ETW_INTYPE_ANSISTRING ? 'a' : 's',
                 (unsigned)i);
        w[i].off = b->n;
        w[i].is_int = 0;
        if (p->flags & ETW_PROP_COUNT_REF) {
            for (int k = 0; k < 2; k++) {
                for (const char *c = text; *c; c++) put_le(b, (uint8_t)*c, 2);
                put_le(b, 0, 2);
            }
            w[i].size = b->n - w[i].off;
            continue;
        }
        uint32_t fs = fixed_size(p, ptr);
        if (p->in_type == ETW_INTYPE_UNICODESTRING && fs) {
            put_le(b, 'F', 2);
            put_le(b, '0' + i % 10, 2);
            for (uint32_t k = 4; k < fs; k++) put_le(b, 0, 1);
            w[i].size = 4;
        } else if (p->in_type == ETW_INTYPE_UNICODESTRING) {
            for (const char *c = text; *c; c++) put_le(b, (uint8_t)*c, 2);
            put_le(b, 0, 2);
            w[i].size = (uint32_t)strlen(text) * 2;
        } else if (p->in_type == ETW_INTYPE_ANSISTRING) {
            put(b, text, (uint32_t)strlen(text) + 1);
            w[i].size = (uint32_t)strlen(text);
        } else if (p->in_type == ETW_INTYPE_BINARY || p->in_type == ETW_INTYPE_GUID) {
            if (p->flags & ETW_PROP_LENGTH_TO_END) fs = 5; /* the rest of the payload */
            for (uint32_t k = 0; k < fs; k++) put_le(b, (uint8_t)(0xa0 + i + k), 1);
            w[i].size = fs;
        } else {
            uint64_t v = int_value(i, fs, is_count_source(l, i));
            put_le(b, v, fs);
            w[i].size = fs;
            w[i].value = v;
            w[i].is_int = p->in_type != ETW_INTYPE_FILETIME; /* a date, not read as an integer */
        }
    }
}

static etw_event event_over(const uint8_t *data, uint32_t n, unsigned ptr) {
    etw_event ev;
    memset(&ev, 0, sizeof ev);
    ev.pointer_size = (uint8_t)ptr;
    ev.user_data = data;
    ev.user_data_len = n;
    return ev;
}

static etw_schema schema_of(const etw_kernel_layout *l, unsigned ptr) {
    etw_schema s;
    memset(&s, 0, sizeof s);
    s.source = ETW_SOURCE_MOF;
    s.pointer_size = (uint8_t)ptr;
    s.props = l->props;
    s.prop_count = l->prop_count;
    s.top_count = l->top_count;
    s.version = l->version;
    return s;
}

/* Decode data[0..n) with l; every item must lie inside the payload. Returns
 * the number of items, *unsupported the number of UNSUPPORTED ones. */
static int decode_all(const etw_kernel_layout *l, unsigned ptr, const uint8_t *data, uint32_t n,
                      int *unsupported, uint32_t *remaining) {
    etw_schema s = schema_of(l, ptr);
    etw_event ev = event_over(data, n, ptr);
    uint64_t refs[64];
    etw_decode_cursor c;
    etw_value v;
    int items = 0;
    *unsupported = 0;
    if (etw_decode_begin(&c, &s, &ev, refs, 64) != ETW_OK) return -1;
    while (etw_decode_next(&c, &v) == ETW_OK) {
        items++;
        if (v.kind == ETW_VALUE_UNSUPPORTED) ++*unsupported;
        if (v.data) {
            ETW_CHECK(v.data >= data && v.data + v.size <= data + n);
        }
        if (items > 10000) break;
    }
    *remaining = etw_decode_remaining(&c);
    return items;
}

/* One layout, one pointer size: exact values, then hostile variants. */
static void check_synthetic(const etw_kernel_family *f, const etw_kernel_layout *l, unsigned ptr) {
    static buf b;
    written w[64];
    if (l->prop_count > 64) {
        ETW_CHECK(0);
        return;
    }
    build_payload(l, ptr, &b, w);
    ETW_CHECK(b.n <= sizeof b.d);
    /* an exactly sized heap copy: ASan sees a read past its end */
    uint8_t *data = malloc(b.n ? b.n : 1);
    if (!data) return;
    memcpy(data, b.d, b.n);

    etw_schema s = schema_of(l, ptr);
    etw_event ev = event_over(data, b.n, ptr);
    uint64_t refs[64];
    etw_decode_cursor c;
    etw_value v;
    ETW_CHECK(etw_decode_begin(&c, &s, &ev, refs, 64) == ETW_OK);
    uint16_t top = 0;
    int bad = 0;
    while (etw_decode_next(&c, &v) == ETW_OK) {
        if (v.kind == ETW_VALUE_UNSUPPORTED) bad++;
        if (v.depth != 0) continue;
        if (v.kind == ETW_VALUE_ARRAY_END || v.kind == ETW_VALUE_STRUCT_END) continue;
        if (v.kind == ETW_VALUE_SCALAR && v.in_array) continue;
        if (top >= l->prop_count) {
            bad++;
            break;
        }
        const written *x = &w[top];
        if (strcmp(v.name, l->props[top].name) != 0) bad++;
        if (v.kind == ETW_VALUE_SCALAR) {
            uint32_t off = (uint32_t)(v.data - data);
            if (off != x->off || v.size != x->size) {
                fprintf(stderr, "%s %s v%u ptr %u %s: at %u size %u, built at %u size %u\n",
                        f->group, l->mof_class, l->version, ptr, v.name, off, v.size, x->off,
                        x->size);
                bad++;
            }
            if (x->is_int && etw_value_u64(&v) != x->value) {
                fprintf(stderr, "%s %s %s: value %llx, built %llx\n", f->group, l->mof_class,
                        v.name, (unsigned long long)etw_value_u64(&v),
                        (unsigned long long)x->value);
                bad++;
            }
        } else if (v.kind == ETW_VALUE_ARRAY_BEGIN) {
            if (v.array_count != 2) bad++;
        }
        top++;
    }
    if (top != l->prop_count || etw_decode_remaining(&c) != 0 || bad) {
        fprintf(stderr, "%s %s v%u ptr %u: %u of %u properties, %u bytes left, %d bad\n",
                f->group, l->mof_class, l->version, ptr, top, l->prop_count,
                etw_decode_remaining(&c), bad);
        ETW_CHECK(0);
    } else {
        ETW_CHECK(1);
    }
    /* the fixed part's end equals the built size when nothing is variable */
    long end = field_offset(l, NULL, ptr);
    if (end >= 0) ETW_CHECK_INT(end, b.n);

    /* short: every cut decodes inside the payload and ends */
    for (uint32_t n = 0; n < b.n; n++) {
        uint8_t *cut = malloc(n ? n : 1);
        if (!cut) break;
        memcpy(cut, data, n);
        int unsup;
        uint32_t rem;
        int items = decode_all(l, ptr, cut, n, &unsup, &rem);
        ETW_CHECK(items >= 0 && items <= 4 * (int)l->prop_count + 4);
        /* a cut inside the fixed part can never decode cleanly */
        if (end >= 0 && l->prop_count) ETW_CHECK(unsup > 0);
        free(cut);
    }
    /* long: trailing bytes stay visible as remaining */
    {
        uint8_t *big = malloc(b.n + 7);
        if (big) {
            memcpy(big, data, b.n);
            memset(big + b.n, 0xee, 7);
            int unsup;
            uint32_t rem;
            decode_all(l, ptr, big, b.n + 7, &unsup, &rem);
            ETW_CHECK_INT(unsup, 0);
            /* a last "rest of the payload" property takes them */
            int to_end = l->prop_count && (l->props[l->prop_count - 1].flags & ETW_PROP_LENGTH_TO_END);
            ETW_CHECK_INT(rem, to_end ? 0 : 7);
            free(big);
        }
    }
    /* garbage: pseudo-random bytes of several lengths */
    {
        uint32_t seed = 0x9e3779b9u ^ (uint32_t)(l->version * 131u + ptr + l->prop_count);
        const uint32_t lens[] = {1, 3, 7, 16, 61, 200, 1000, 3000};
        for (size_t k = 0; k < sizeof lens / sizeof lens[0]; k++) {
            uint8_t *g = malloc(lens[k]);
            if (!g) break;
            for (uint32_t j = 0; j < lens[k]; j++) {
                seed = seed * 1103515245u + 12345u;
                g[j] = (uint8_t)(seed >> 16);
            }
            int unsup;
            uint32_t rem;
            int items = decode_all(l, ptr, g, lens[k], &unsup, &rem);
            ETW_CHECK(items >= 0);
            ETW_CHECK(rem <= lens[k]);
            free(g);
        }
    }
    free(data);
}

static void test_synthetic_payloads_every_layout(void) {
    int layouts = 0;
    for (size_t i = 0; i < MINE_COUNT; i++) {
        const etw_kernel_family *f = k_mine[i];
        for (uint16_t k = 0; k < f->layout_count; k++) {
            const etw_kernel_layout *l = &f->layouts[k];
            ETW_CHECK_INT(l->top_count, l->prop_count); /* flat */
            check_synthetic(f, l, 4);
            check_synthetic(f, l, 8);
            layouts++;
        }
    }
    ETW_CHECK(layouts >= 100);
}


/* ---- 4. the real records of net.4.5.2.x64.etl through the layouts ------- */

#define NET_ETL ETW_TEST_DATA_DIR "/net.4.5.2.x64.etl"

static const etw_kernel_family *family_by_guid(const etw_guid *g) {
    for (size_t i = 0; i < MINE_COUNT; i++)
        if (memcmp(&k_mine[i]->guid, g, sizeof *g) == 0) return k_mine[i];
    return NULL;
}

/* The first decoded value of property `name` in ev with layout l. */
static int field_of(const etw_kernel_layout *l, const etw_event *ev, const char *name,
                    etw_value *out) {
    etw_schema s = schema_of(l, ev->pointer_size);
    uint64_t refs[64];
    etw_decode_cursor c;
    if (etw_decode_begin(&c, &s, ev, refs, 64) != ETW_OK) return 0;
    while (etw_decode_next(&c, out) == ETW_OK)
        if (out->depth == 0 && strcmp(out->name, name) == 0) return 1;
    return 0;
}

static uint64_t u64_of(const etw_kernel_layout *l, const etw_event *ev, const char *name) {
    etw_value v;
    return field_of(l, ev, name, &v) ? etw_value_u64(&v) : 0xdeadbeefdeadbeefull;
}

/* A UTF-16 or 8-bit string field as ASCII (non-ASCII as '?'). */
static const char *str_of(const etw_kernel_layout *l, const etw_event *ev, const char *name) {
    static char out[256];
    etw_value v;
    out[0] = 0;
    if (!field_of(l, ev, name, &v) || v.kind != ETW_VALUE_SCALAR) return "(none)";
    unsigned unit = v.in_type == ETW_INTYPE_UNICODESTRING ? 2 : 1;
    uint32_t n = 0;
    for (uint32_t i = 0; i + unit <= v.size && n + 1 < sizeof out; i += unit) {
        unsigned ch = v.data[i] | (unit == 2 ? v.data[i + 1] << 8 : 0);
        out[n++] = ch < 128 ? (char)ch : '?';
    }
    out[n] = 0;
    return out;
}

/* ---- 5. what the sample traces hold finds a layout ---------------------- */

/* (group, type, version) triples in tests/data/net.4.5.2.x64.etl, counted with
 * `etwdump --raw` (provider_guid, opcode, version): all 64-bit. The
 * other traces in tests/data hold no event of these families. The one type
 * there without a layout: SysConfig 0x25 (unknown to TraceEvent too). */
static const struct {
    const char *group;
    uint8_t type, version;
    uint16_t count;
    uint16_t len; /* one payload size seen (64-bit) */
} k_seen[] = {
    {"DiskIO", 10, 3, 1208, 52},     {"DiskIO", 11, 3, 21, 52},
    {"DiskIO", 12, 3, 1208, 12},     {"DiskIO", 13, 3, 21, 12},
    {"DiskIO", 14, 3, 2, 28},        {"DiskIO", 15, 3, 2, 12},
    {"FileIO", 32, 2, 16, 0},        {"FileIO", 35, 2, 14, 0},
    {"FileIO", 36, 2, 3054, 0},      {"ImageID", 0x00, 2, 3590, 0},
    {"ImageID", 0x20, 2, 12, 12},    {"ImageID", 0x24, 2, 3534, 0},
    {"ImageID", 0x25, 2, 44, 0},     {"ImageID", 0x40, 0, 705, 0},
    {"Memory", 32, 2, 153, 40},      {"SysConfig", 0x20, 0, 1, 0},
    {"SysConfig", 0x21, 0, 1, 0},    {"SysConfig", 0x22, 0, 1, 0},
    {"SysConfig", 0x23, 0, 9, 0},    {"SystemConfig", 10, 3, 1, 828},
    {"SystemConfig", 11, 2, 1, 568}, {"SystemConfig", 12, 2, 1, 112},
    {"SystemConfig", 13, 2, 3, 0},   {"SystemConfig", 15, 3, 157, 0},
    {"SystemConfig", 16, 2, 1, 8},   {"SystemConfig", 17, 2, 1, 16},
    {"SystemConfig", 22, 4, 78, 0},  {"SystemConfig", 23, 2, 2, 0},
    {"SystemConfig", 25, 2, 1, 0},   {"SystemConfig", 18, 2, 1, 0},
    {"SystemConfig", 28, 2, 1, 8},   {"TcpIp", 26, 2, 240, 64},
    {"TcpIp", 27, 2, 250, 56},       {"UdpIp", 10, 2, 1, 32},
    {"UdpIp", 11, 2, 19, 32},        {"UdpIp", 26, 2, 6, 56},
    {"UdpIp", 27, 2, 10, 56},
};

static void test_every_sampled_class_has_a_layout(void) {
    for (size_t i = 0; i < sizeof k_seen / sizeof k_seen[0]; i++) {
        const etw_kernel_family *f = family_by_group(k_seen[i].group);
        const etw_kernel_layout *l = f ? find_layout(f, k_seen[i].type, k_seen[i].version) : NULL;
        if (!l) {
            fprintf(stderr, "no layout for %s type %u v%u\n", k_seen[i].group, k_seen[i].type,
                    k_seen[i].version);
            ETW_CHECK(0);
            continue;
        }
        ETW_CHECK(has_event_type(f, k_seen[i].type));
        /* fixed-size classes: the table's size is the real payload's */
        if (k_seen[i].len) {
            long end = field_offset(l, NULL, 8);
            if (end >= 0) ETW_CHECK_INT(end, k_seen[i].len);
        }
    }
}


/* Every record of the families in net.4.5.2.x64.etl decodes with its
 * layout: no UNSUPPORTED value and no byte left over. */
typedef struct seen_stat {
    const etw_kernel_family *f;
    uint8_t type, version;
    uint32_t events, unsupported, leftover, no_layout;
} seen_stat;

static void test_real_records_decode_whole(void) {
    etw_reader *r = NULL;
    if (etw_reader_open_file(&r, NET_ETL, NULL) != ETW_OK) {
        ETW_CHECK(0);
        return;
    }
    static seen_stat st[128];
    uint32_t nst = 0, mine = 0;
    etw_event ev;
    while (etw_reader_next(r, &ev) == ETW_OK) {
        const etw_kernel_family *f = family_by_guid(&ev.provider);
        if (!f || ev.form == ETW_FORM_EVENT_HEADER) continue;
        mine++;
        seen_stat *x = NULL;
        for (uint32_t i = 0; i < nst; i++)
            if (st[i].f == f && st[i].type == ev.opcode && st[i].version == ev.version) x = &st[i];
        if (!x && nst < 128) {
            x = &st[nst++];
            x->f = f;
            x->type = ev.opcode;
            x->version = ev.version;
        }
        if (!x) continue;
        x->events++;
        const etw_kernel_layout *l = find_layout(f, ev.opcode, ev.version);
        if (!l) {
            x->no_layout++;
            continue;
        }
        int unsup;
        uint32_t rem;
        decode_all(l, ev.pointer_size, ev.user_data, ev.user_data_len, &unsup, &rem);
        x->unsupported += unsup != 0;
        x->leftover += rem != 0;
    }
    etw_reader_close(r);
    /* DiskIO 2462, FileIO 3084, ImageID 7885, Memory 153, SysConfig 13,
     * SystemConfig 248, TcpIp 490, UdpIp 36 (etwdump --stats, by provider) */
    ETW_CHECK_INT(mine, 14371);
    for (uint32_t i = 0; i < nst; i++) {
        seen_stat *x = &st[i];
        int known_gap = strcmp(x->f->group, "SysConfig") == 0 && x->type == 0x25;
        if (x->unsupported || x->leftover || (x->no_layout && !known_gap))
            fprintf(stderr, "%s type %u v%u: %u events, %u unsupported, %u with bytes left, %u without layout\n",
                    x->f->group, x->type, x->version, x->events, x->unsupported, x->leftover,
                    x->no_layout);
        ETW_CHECK_INT(x->unsupported, 0);
        ETW_CHECK_INT(x->leftover, 0);
        if (!known_gap) ETW_CHECK_INT(x->no_layout, 0);
    }
    ETW_CHECK(nst >= 30);
}

/* The first record of some classes, field by field: values read from the
 * record bytes with a separate script (python struct over `etwdump --raw`),
 * which are also the values PerfView's baseline shows
 * (tests/data/net.4.5.2.x64.baseline.txt) where it shows the field. */
static int first_of(etw_reader *r, const char *group, uint8_t type, etw_event *ev,
                    const etw_kernel_layout **l) {
    if (etw_reader_rewind(r) != ETW_OK) return 0;
    while (etw_reader_next(r, ev) == ETW_OK) {
        const etw_kernel_family *f = family_by_guid(&ev->provider);
        if (!f || ev->form == ETW_FORM_EVENT_HEADER || ev->opcode != type) continue;
        if (strcmp(f->group, group) != 0) continue;
        *l = find_layout(f, type, ev->version);
        return *l != NULL;
    }
    return 0;
}

static void test_real_values(void) {
    etw_reader *r = NULL;
    if (etw_reader_open_file(&r, NET_ETL, NULL) != ETW_OK) {
        ETW_CHECK(0);
        return;
    }
    etw_event ev;
    const etw_kernel_layout *l;
    /* DiskIO/Read v3 (baseline: TransferSize=16,384; ByteOffset=849,788,928;
     * Irp=0xfffffa8302a1dc60; FileKey=0xfffff8a0028e0140; ElapsedTimeMSec=25.821; TID=44) */
    if (first_of(r, "DiskIO", 10, &ev, &l)) {
        ETW_CHECK_INT(ev.version, 3);
        ETW_CHECK_INT(u64_of(l, &ev, "DiskNumber"), 0);
        ETW_CHECK(u64_of(l, &ev, "IrpFlags") == 0x20002);
        ETW_CHECK_INT(u64_of(l, &ev, "TransferSize"), 16384);
        ETW_CHECK_INT(u64_of(l, &ev, "ByteOffset"), 849788928);
        ETW_CHECK(u64_of(l, &ev, "FileObject") == 0xfffff8a0028e0140ull);
        ETW_CHECK(u64_of(l, &ev, "Irp") == 0xfffffa8302a1dc60ull);
        ETW_CHECK_INT(u64_of(l, &ev, "HighResResponseTime"), 258208);
        ETW_CHECK_INT(u64_of(l, &ev, "IssuingThreadId"), 44);
    } else ETW_CHECK(0);
    /* DiskIO/FlushInit v3 and FlushBuffers v3: the same Irp and the same
     * issuing thread 960 (PerfView shows TID 960 for the FlushInit, and for
     * FlushBuffers the HighResResponseTime's low half, 786,839) */
    if (first_of(r, "DiskIO", 15, &ev, &l)) {
        ETW_CHECK(u64_of(l, &ev, "Irp") == 0xfffffa83017ffb80ull);
        ETW_CHECK_INT(u64_of(l, &ev, "IssuingThreadId"), 960);
        ETW_CHECK_INT(ev.tid, 960);
    } else ETW_CHECK(0);
    if (first_of(r, "DiskIO", 14, &ev, &l)) {
        ETW_CHECK_INT(ev.user_data_len, 28);
        ETW_CHECK_INT(u64_of(l, &ev, "HighResResponseTime"), 786839);
        ETW_CHECK(u64_of(l, &ev, "Irp") == 0xfffffa83017ffb80ull);
        ETW_CHECK_INT(u64_of(l, &ev, "IssuingThreadId"), 960);
    } else ETW_CHECK(0);
    /* Memory/HardFault v2 (baseline: ReadOffset=283,648; VirtualAddress=0x7f9c7a891f0;
     * FileKey=0xfffff8a001300c50; ByteCount=8,704; TID=1716) */
    if (first_of(r, "Memory", 32, &ev, &l)) {
        ETW_CHECK_INT(u64_of(l, &ev, "ReadOffset"), 283648);
        ETW_CHECK(u64_of(l, &ev, "VirtualAddress") == 0x7f9c7a891f0ull);
        ETW_CHECK(u64_of(l, &ev, "FileObject") == 0xfffff8a001300c50ull);
        ETW_CHECK_INT(u64_of(l, &ev, "TThreadId"), 1716);
        ETW_CHECK_INT(u64_of(l, &ev, "ByteCount"), 8704);
    } else ETW_CHECK(0);
    /* TcpIp/SendIPV6 v2 (baseline: size=65,652; dport=445; sport=64,025;
     * startime=endtime=1,942; PID=4); ports are big-endian on the wire */
    if (first_of(r, "TcpIp", 26, &ev, &l)) {
        ETW_CHECK_INT(u64_of(l, &ev, "PID"), 4);
        ETW_CHECK_INT(u64_of(l, &ev, "size"), 65652);
        etw_value v;
        ETW_CHECK(field_of(l, &ev, "dport", &v) && v.size == 2 && v.data[0] == 0x01 &&
                  v.data[1] == 0xbd && v.out_type == ETW_OUTTYPE_PORT);
        ETW_CHECK(field_of(l, &ev, "daddr", &v) && v.size == 16 && v.data[0] == 0x20 &&
                  v.data[1] == 0x01 && v.out_type == ETW_OUTTYPE_IPV6);
        ETW_CHECK_INT(u64_of(l, &ev, "startime"), 1942);
        ETW_CHECK_INT(u64_of(l, &ev, "endtime"), 1942);
    } else ETW_CHECK(0);
    /* UdpIp/Recv v2 (baseline: size=173; daddr=239.255.255.250; saddr=10.128.0.117;
     * dport=1,900; sport=60,441; PID=2108) */
    if (first_of(r, "UdpIp", 11, &ev, &l)) {
        ETW_CHECK_INT(u64_of(l, &ev, "PID"), 2108);
        ETW_CHECK_INT(u64_of(l, &ev, "size"), 173);
        etw_value v;
        ETW_CHECK(field_of(l, &ev, "daddr", &v) && v.data[0] == 239 && v.data[3] == 250 &&
                  v.out_type == ETW_OUTTYPE_IPV4);
        ETW_CHECK(field_of(l, &ev, "saddr", &v) && v.data[0] == 10 && v.data[3] == 117);
        ETW_CHECK(field_of(l, &ev, "dport", &v) && v.data[0] * 256 + v.data[1] == 1900);
        ETW_CHECK(field_of(l, &ev, "sport", &v) && v.data[0] * 256 + v.data[1] == 60441);
    } else ETW_CHECK(0);
    /* FileIO/FileRundown v2 */
    if (first_of(r, "FileIO", 36, &ev, &l)) {
        ETW_CHECK(u64_of(l, &ev, "FileObject") == 0xfffffa8301607da0ull);
        ETW_CHECK_STR(str_of(l, &ev, "FileName"), "\\Device\\HarddiskVolume2\\$Mft");
    } else ETW_CHECK(0);
    /* KernelTraceControl/ImageID (baseline: ImageBase=0x77710000; ImageSize=1,404,928;
     * TimeDateStamp=1,343,270,522; OriginalFileName=ntdll.dll) */
    if (first_of(r, "ImageID", 0x00, &ev, &l)) {
        ETW_CHECK_INT(ev.pointer_size, 8);
        ETW_CHECK_INT(u64_of(l, &ev, "ImageBase"), 0x77710000);
        ETW_CHECK_INT(u64_of(l, &ev, "ImageSize"), 1404928);
        ETW_CHECK_INT(u64_of(l, &ev, "TimeDateStamp"), 1343270522);
        ETW_CHECK_STR(str_of(l, &ev, "OriginalFileName"), "ntdll.dll");
    } else ETW_CHECK(0);
    /* ImageID/DbgID_RSDS (baseline: GuidSig=ec83d8df-5559-46e0-b..., Age=2, wntdll.pdb) */
    if (first_of(r, "ImageID", 0x24, &ev, &l)) {
        etw_value v;
        ETW_CHECK(field_of(l, &ev, "GuidSig", &v) && v.size == 16 && v.data[0] == 0xdf &&
                  v.data[3] == 0xec);
        ETW_CHECK_INT(u64_of(l, &ev, "Age"), 2);
        ETW_CHECK_STR(str_of(l, &ev, "PdbFileName"), "wntdll.pdb");
    } else ETW_CHECK(0);
    /* ImageID/None: ImageBase and the header's process (PID 724 in the baseline) */
    if (first_of(r, "ImageID", 0x20, &ev, &l)) {
        ETW_CHECK(u64_of(l, &ev, "ImageBase") == 0x7f9ccc50000ull);
        ETW_CHECK_INT(u64_of(l, &ev, "ProcessId"), 724);
        ETW_CHECK_INT(ev.pid, 724);
    } else ETW_CHECK(0);
    /* ImageID/FileVersion (baseline: ImageSize=1,404,928; OrigFileName=ntdll.dll;
     * FileDescription=NT Layer DLL; BinFileVersion=6.2.9200.16384; VerLanguage=1033) */
    if (first_of(r, "ImageID", 0x40, &ev, &l)) {
        ETW_CHECK_INT(u64_of(l, &ev, "ImageSize"), 1404928);
        ETW_CHECK_STR(str_of(l, &ev, "OrigFileName"), "ntdll.dll");
        ETW_CHECK_STR(str_of(l, &ev, "FileDescription"), "NT Layer DLL");
        ETW_CHECK_STR(str_of(l, &ev, "BinFileVersion"), "6.2.9200.16384");
        ETW_CHECK_STR(str_of(l, &ev, "VerLanguage"), "1033");
        ETW_CHECK_STR(str_of(l, &ev, "ProgramId"), "");
    } else ETW_CHECK(0);
    /* SysConfig/SystemPaths, VolumeMapping, UnknownVolume, BuildInfo */
    if (first_of(r, "SysConfig", 0x21, &ev, &l)) {
        ETW_CHECK_STR(str_of(l, &ev, "SystemDirectory"), "C:\\Windows\\system32");
        ETW_CHECK_STR(str_of(l, &ev, "SystemWindowsDirectory"), "C:\\Windows\\");
    } else ETW_CHECK(0);
    if (first_of(r, "SysConfig", 0x23, &ev, &l)) {
        ETW_CHECK_STR(str_of(l, &ev, "NtPath"), "\\??\\");
        ETW_CHECK_STR(str_of(l, &ev, "DosPath"), "");
    } else ETW_CHECK(0);
    if (first_of(r, "SysConfig", 0x22, &ev, &l))
        ETW_CHECK_STR(str_of(l, &ev, "Value"), "\\Device\\HarddiskVolume1\\");
    else ETW_CHECK(0);
    if (first_of(r, "SysConfig", 0x20, &ev, &l)) {
        etw_value v;
        /* 0x019db1ded53e8000: 1970-01-01 as a FILETIME */
        ETW_CHECK(field_of(l, &ev, "InstallDate", &v) && v.size == 8 && v.data[7] == 0x01 &&
                  v.data[6] == 0x9d && v.data[0] == 0x00 && v.data[1] == 0x80);
        ETW_CHECK_STR(str_of(l, &ev, "ProductName"), "Windows 8 Pro");
    } else ETW_CHECK(0);
    /* SystemConfig/CPU v3 (baseline: MHz=3,592; NumberOfProcessors=8; MemSize=4,096;
     * PageSize=4,096; AllocationGranularity=65,536; ComputerName=BRIANROB-W8) */
    if (first_of(r, "SystemConfig", 10, &ev, &l)) {
        ETW_CHECK_INT(u64_of(l, &ev, "MHz"), 3592);
        ETW_CHECK_INT(u64_of(l, &ev, "NumberOfProcessors"), 8);
        ETW_CHECK_INT(u64_of(l, &ev, "MemSize"), 4096);
        ETW_CHECK_INT(u64_of(l, &ev, "AllocationGranularity"), 65536);
        ETW_CHECK_STR(str_of(l, &ev, "ComputerName"), "BRIANROB-W8");
        ETW_CHECK_STR(str_of(l, &ev, "DomainName"), "");
        ETW_CHECK_INT(u64_of(l, &ev, "HyperThreadingFlag"), 0);
    } else ETW_CHECK(0);
    /* SystemConfig/PhyDisk v2 (baseline: BytesPerSector=512; SectorsPerTrack=63;
     * TracksPerCylinder=255; Cylinders=16,578; PartitionCount=2; WriteCacheEnabled=1;
     * BootDriveLetter=C) */
    if (first_of(r, "SystemConfig", 11, &ev, &l)) {
        ETW_CHECK_INT(u64_of(l, &ev, "BytesPerSector"), 512);
        ETW_CHECK_INT(u64_of(l, &ev, "SectorsPerTrack"), 63);
        ETW_CHECK_INT(u64_of(l, &ev, "TracksPerCylinder"), 255);
        ETW_CHECK_INT(u64_of(l, &ev, "Cylinders"), 16578);
        ETW_CHECK_INT(u64_of(l, &ev, "PartitionCount"), 2);
        ETW_CHECK_INT(u64_of(l, &ev, "WriteCacheEnabled"), 1);
    } else ETW_CHECK(0);
    /* SystemConfig/LogDisk v2 (baseline: StartOffset=368,050,176;
     * PartitionSize=135,996,112,896; Size=112; DriveType=1; DriveLetterString=C:;
     * PartitionNumber=2; SectorsPerCluster=8; NumberOfFreeClusters=29,898,381;
     * TotalNumberOfClusters=33,202,175; FileSystem=NTFS) */
    if (first_of(r, "SystemConfig", 12, &ev, &l)) {
        ETW_CHECK_INT(u64_of(l, &ev, "StartOffset"), 368050176);
        ETW_CHECK_INT(u64_of(l, &ev, "PartitionSize"), 135996112896ll);
        ETW_CHECK_INT(u64_of(l, &ev, "Size"), 112);
        ETW_CHECK_STR(str_of(l, &ev, "DriveLetterString"), "C:");
        ETW_CHECK_INT(u64_of(l, &ev, "PartitionNumber"), 2);
        ETW_CHECK_INT(u64_of(l, &ev, "NumberOfFreeClusters"), 29898381);
        ETW_CHECK_INT(u64_of(l, &ev, "TotalNumberOfClusters"), 33202175);
        ETW_CHECK_STR(str_of(l, &ev, "FileSystem"), "NTFS");
    } else ETW_CHECK(0);
    /* SystemConfig/NIC v2 (baseline, first: PhysicalAddrLen=6;
     * PhysicalAddr=44,360,508,708,096; Ipv4Index=12; Ipv6Index=12) */
    if (first_of(r, "SystemConfig", 13, &ev, &l)) {
        ETW_CHECK_INT(u64_of(l, &ev, "PhysicalAddr"), 44360508708096ll);
        ETW_CHECK_INT(u64_of(l, &ev, "PhysicalAddrLen"), 6);
        ETW_CHECK_INT(u64_of(l, &ev, "Ipv4Index"), 12);
        ETW_CHECK_INT(u64_of(l, &ev, "Ipv6Index"), 12);
    } else ETW_CHECK(0);
    /* SystemConfig/Services v3 (baseline, first: ServiceName=AeLookupSvc;
     * ProcessID=0; ServiceState=1; SubProcessTag=1) */
    if (first_of(r, "SystemConfig", 15, &ev, &l)) {
        ETW_CHECK_INT(ev.version, 3);
        ETW_CHECK_STR(str_of(l, &ev, "ServiceName"), "AeLookupSvc");
        ETW_CHECK_INT(u64_of(l, &ev, "ProcessId"), 0);
        ETW_CHECK_INT(u64_of(l, &ev, "ServiceState"), 1);
        ETW_CHECK_INT(u64_of(l, &ev, "SubProcessTag"), 1);
    } else ETW_CHECK(0);
    /* SystemConfig/Network v2 (baseline: TcbTablePartitions=32; MaxHashTableSize=-1;
     * MaxUserPort=65,536; TcpTimedWaitDelay=120) */
    if (first_of(r, "SystemConfig", 17, &ev, &l)) {
        ETW_CHECK_INT(u64_of(l, &ev, "TcbTablePartitions"), 32);
        ETW_CHECK_INT(u64_of(l, &ev, "MaxHashTableSize"), 0xffffffffll);
        ETW_CHECK_INT(u64_of(l, &ev, "MaxUserPort"), 65536);
        ETW_CHECK_INT(u64_of(l, &ev, "TcpTimedWaitDelay"), 120);
    } else ETW_CHECK(0);
    /* SystemConfig/PnP v4 (baseline, first: DeviceID=PCI\VEN_1414&DEV_535...;
     * ServiceName=s3cap); no filters: both counts 0 */
    if (first_of(r, "SystemConfig", 22, &ev, &l)) {
        ETW_CHECK_INT(ev.version, 4);
        ETW_CHECK_STR(str_of(l, &ev, "DeviceID"), "PCI\\VEN_1414&DEV_5353&SUBSYS_00000000&REV_00\\3&267A616A&1&40");
        ETW_CHECK_STR(str_of(l, &ev, "FriendlyName"), "");
        ETW_CHECK_STR(str_of(l, &ev, "ServiceName"), "s3cap");
        ETW_CHECK_INT(u64_of(l, &ev, "UpperFilterCount"), 0);
        ETW_CHECK_INT(u64_of(l, &ev, "LowerFilterCount"), 0);
    } else ETW_CHECK(0);
    /* SystemConfig/IDEChannel v2 (baseline: TargetID=0; DeviceType=1;
     * DeviceTimingMode=1,040; LocationInformationLen=9; Channel 0) */
    if (first_of(r, "SystemConfig", 23, &ev, &l)) {
        ETW_CHECK_INT(u64_of(l, &ev, "DeviceType"), 1);
        ETW_CHECK_INT(u64_of(l, &ev, "DeviceTimingMode"), 1040);
        ETW_CHECK_INT(u64_of(l, &ev, "LocationInformationLen"), 9);
        ETW_CHECK_STR(str_of(l, &ev, "LocationInformation"), "Channel 0");
    } else ETW_CHECK(0);
    /* SystemConfig/Power v2 (baseline: S1..S4=0, S5=1) and Platform v2 */
    if (first_of(r, "SystemConfig", 16, &ev, &l)) {
        ETW_CHECK_INT(u64_of(l, &ev, "S4"), 0);
        ETW_CHECK_INT(u64_of(l, &ev, "S5"), 1);
    } else ETW_CHECK(0);
    if (first_of(r, "SystemConfig", 25, &ev, &l)) {
        ETW_CHECK_STR(str_of(l, &ev, "SystemProductName"), "Virtual Machine");
        ETW_CHECK_STR(str_of(l, &ev, "BiosDate"), "12/07/2018");
        ETW_CHECK_STR(str_of(l, &ev, "BiosVersion"), "090008");
    } else ETW_CHECK(0);
    etw_reader_close(r);
}

/* ---- 6. through the library: decoder + JSON writer on the real trace ----- */

/* The "fields" member of a JSON line, as written. */
static const char *fields_json(const char *line, size_t len, char *out, size_t cap) {
    out[0] = 0;
    const char *p = strstr(line, ",\"fields\":");
    if (!p || (size_t)(p - line) >= len) return out;
    p += 10;
    int depth = 0, in_str = 0;
    const char *q = p;
    for (; q < line + len; q++) {
        if (in_str) {
            if (*q == '\\') q++;
            else if (*q == '"') in_str = 0;
            continue;
        }
        if (*q == '"') in_str = 1;
        else if (*q == '{' || *q == '[') depth++;
        else if ((*q == '}' || *q == ']') && --depth == 0) break;
    }
    size_t n = (size_t)(q - p) + 1;
    if (n >= cap) n = cap - 1;
    memcpy(out, p, n);
    out[n] = 0;
    return out;
}

/* Expected fields of the first event of some names: the values of section
 * 4 (read from the bytes, shown by PerfView), in the contract's forms
 * (docs/json-output.md: pointers and format("x") values as hex strings,
 * ports in host order, addresses as text, FILETIME as RFC 3339). */
#define ANY (-2L)
static const struct {
    const char *event;
    const char *fields;
    long pid, tid; /* kernel-mof.md 6 as PerfView shows them; ANY: not checked here */
} k_first_fields[] = {
    {"\"event\":\"DiskIO/Read\"",
     "{\"DiskNumber\":0,\"IrpFlags\":\"0x20002\",\"TransferSize\":16384,\"Reserved\":1,"
     "\"ByteOffset\":849788928,\"FileObject\":\"0xfffff8a0028e0140\",\"Irp\":\"0xfffffa8302a1dc60\","
     "\"HighResResponseTime\":258208,\"IssuingThreadId\":44}", ANY, 44},
    {"\"event\":\"Memory/HardFault\"",
     "{\"InitialTime\":1957487573,\"ReadOffset\":\"0x45400\",\"VirtualAddress\":\"0x7f9c7a891f0\","
     "\"FileObject\":\"0xfffff8a001300c50\",\"TThreadId\":1716,\"ByteCount\":8704}", ANY, 1716},
    {"\"event\":\"UdpIp/Recv\"",
     "{\"PID\":2108,\"size\":173,\"daddr\":\"239.255.255.250\",\"saddr\":\"10.128.0.117\","
     "\"dport\":1900,\"sport\":60441,\"seqnum\":0,\"connid\":\"0x0\"}", 2108, ANY},
    {"\"event\":\"ImageID/None\"", "{\"ImageBase\":\"0x7f9ccc50000\",\"ProcessId\":724}", 724, -1},
    {"\"event\":\"ImageID\"",
     "{\"ImageBase\":\"0x77710000\",\"ImageSize\":\"0x157000\",\"ProcessId\":4,"
     "\"TimeDateStamp\":1343270522,\"OriginalFileName\":\"ntdll.dll\"}", 4, -1},
    {"\"event\":\"SysConfig/BuildInfo\"",
     "{\"InstallDate\":\"1970-01-01T00:00:00.0000000Z\","
     "\"BuildLab\":\"9200.16384.amd64fre.win8_rtm.120725-1247\",\"ProductName\":\"Windows 8 Pro\"}", 0, 0},
    {"\"event\":\"SysConfig/UnknownVolume\"", "{\"Value\":\"\\\\Device\\\\HarddiskVolume1\\\\\"}", 0, 0},
    {"\"event\":\"SystemConfig/Power\"",
     "{\"S1\":0,\"S2\":0,\"S3\":0,\"S4\":0,\"S5\":1,\"Pad1\":0,\"Pad2\":0,\"Pad3\":0}", 3988, 3784},
    {"\"event\":\"SystemConfig/DPI\"", "{\"MachineDPI\":96,\"UserDPI\":96}", 3988, 3784},
    {"\"event\":\"SystemConfig/OpticalDisk\"",
     "{\"DiskNumber\":0,\"BusType\":2,\"DeviceType\":5,\"MediaType\":16,\"StartingOffset\":0,"
     "\"Size\":0,\"NumberOfFreeBlocks\":0,\"TotalNumberOfBlocks\":0,\"NextWritableAddress\":0,"
     "\"NumberOfSessions\":0,\"NumberOfTracks\":0,\"BytesPerSector\":2048,\"DiscStatus\":0,"
     "\"LastSessionStatus\":0,\"Data\":\"44003a00000055004400460000005669727475616c2043442f524f4d2020004d7366742020202000\"}",
     3988, 3784},
    {"\"event\":\"SystemConfig/Network\"",
     "{\"TcbTablePartitions\":32,\"MaxHashTableSize\":4294967295,\"MaxUserPort\":65536,"
     "\"TcpTimedWaitDelay\":120}", -1, -1},
};

static void test_through_the_library(void) {
    etw_reader *r = NULL;
    if (etw_reader_open_file(&r, NET_ETL, NULL) != ETW_OK) {
        ETW_CHECK(0);
        return;
    }
    etw_decoder_options o;
    memset(&o, 0, sizeof o);
    etw_decoder *d = NULL;
    ETW_CHECK_INT(etw_decoder_new(&d, &o), ETW_OK);
    etw_json_options jo;
    memset(&jo, 0, sizeof jo);
    jo.decoder = d;
    etw_json *j = NULL;
    ETW_CHECK_INT(etw_json_new(&j, NULL, &jo), ETW_OK);
    if (!d || !j) {
        etw_json_free(j);
        etw_decoder_free(d);
        etw_reader_close(r);
        return;
    }
    etw_decoder_prescan(d, r);
    etw_reader_rewind(r);
    etw_event ev;
    uint32_t mine = 0, errors = 0, unsupported = 0;
    int found[sizeof k_first_fields / sizeof k_first_fields[0]] = {0};
    static char fields[8192];
    while (etw_reader_next(r, &ev) == ETW_OK) {
        const char *line = NULL;
        size_t len = 0;
        if (etw_json_event(j, r, &ev, &line, &len) != ETW_OK) {
            ETW_CHECK(0);
            break;
        }
        const etw_kernel_family *f = family_by_guid(&ev.provider);
        if (!f || ev.form == ETW_FORM_EVENT_HEADER) continue;
        mine++;
        char *nl = memchr(line, '\n', len);
        size_t n = nl ? (size_t)(nl - line) : len;
        static char copy[65536];
        if (n >= sizeof copy) n = sizeof copy - 1;
        memcpy(copy, line, n);
        copy[n] = 0;
        if (strstr(copy, "\"error\":")) {
            errors++;
            /* the one record of a type no public source describes */
            int gap = strstr(copy, "\"event\":\"SysConfig/Opcode(37)\"") != NULL;
            if (!gap) fprintf(stderr, "unexpected: %.300s\n", copy);
            ETW_CHECK(gap);
        }
        if (strstr(copy, "\"unsupported\":")) unsupported++;
        for (size_t k = 0; k < sizeof found / sizeof found[0]; k++) {
            if (found[k]) continue;
            char want[80];
            snprintf(want, sizeof want, "%s,", k_first_fields[k].event);
            if (!strstr(copy, want)) continue;
            found[k] = 1;
            fields_json(copy, n, fields, sizeof fields);
            if (strcmp(fields, k_first_fields[k].fields) != 0)
                fprintf(stderr, "%s: fields %s\n  expected %s\n", k_first_fields[k].event, fields,
                        k_first_fields[k].fields);
            ETW_CHECK_STR(fields, k_first_fields[k].fields);
            long pid = ANY, tid = ANY;
            const char *pp = strstr(copy, "\"pid\":"), *tp = strstr(copy, "\"tid\":");
            if (pp) pid = strtol(pp + 6, NULL, 10);
            if (tp) tid = strtol(tp + 6, NULL, 10);
            if (k_first_fields[k].pid != ANY) ETW_CHECK_INT(pid, k_first_fields[k].pid);
            if (k_first_fields[k].tid != ANY) ETW_CHECK_INT(tid, k_first_fields[k].tid);
        }
    }
    ETW_CHECK_INT(mine, 14371);
    ETW_CHECK_INT(errors, 1);
    ETW_CHECK_INT(unsupported, 0);
    for (size_t k = 0; k < sizeof found / sizeof found[0]; k++) ETW_CHECK(found[k]);
    etw_json_free(j);
    etw_decoder_free(d);
    etw_reader_close(r);
}

/* ---- 7. synthetic records through the decoder and JSON writer ------------ */

/* A record as the reader makes it: a kernel header (SYSTEM) for the hook
 * families, an EVENT_TRACE_HEADER (FULL) for the classic ones. */
static etw_event record_of(const etw_kernel_family *f, uint8_t type, uint8_t version, uint8_t ptr,
                           const uint8_t *data, uint32_t n) {
    etw_event ev;
    memset(&ev, 0, sizeof ev);
    int classic = f == &etw_kernel_family_imageid || f == &etw_kernel_family_sysconfigex;
    ev.form = classic ? ETW_FORM_FULL : ETW_FORM_SYSTEM;
    ev.flags = ETW_EVENT_FLAG_CLASSIC_HEADER |
               (ptr == 4 ? ETW_EVENT_FLAG_32_BIT_HEADER : ETW_EVENT_FLAG_64_BIT_HEADER);
    ev.pointer_size = ptr;
    ev.provider = f->guid;
    ev.opcode = type;
    ev.version = version;
    ev.pid = 1111;
    ev.tid = 2222;
    ev.user_data = data;
    ev.user_data_len = n;
    return ev;
}

static const char *line_of(etw_json *j, const etw_event *ev, size_t *len) {
    static char copy[65536];
    const char *line = NULL;
    *len = 0;
    copy[0] = 0;
    if (etw_json_event(j, NULL, ev, &line, len) != ETW_OK || !line) return copy;
    size_t n = *len < sizeof copy - 1 ? *len : sizeof copy - 1;
    memcpy(copy, line, n);
    copy[n] = 0;
    return copy;
}

static void test_synthetic_records_through_the_decoder(void) {
    etw_decoder_options o;
    memset(&o, 0, sizeof o);
    etw_decoder *d = NULL;
    ETW_CHECK_INT(etw_decoder_new(&d, &o), ETW_OK);
    etw_json_options jo;
    memset(&jo, 0, sizeof jo);
    jo.decoder = d;
    etw_json *j = NULL;
    ETW_CHECK_INT(etw_json_new(&j, NULL, &jo), ETW_OK);
    if (!d || !j) {
        etw_json_free(j);
        etw_decoder_free(d);
        return;
    }
    static buf b;
    written w[64];
    char name[160];
    uint32_t records = 0;
    for (size_t i = 0; i < MINE_COUNT; i++) {
        const etw_kernel_family *f = k_mine[i];
        for (uint16_t k = 0; k < f->layout_count; k++) {
            const etw_kernel_layout *l = &f->layouts[k];
            for (uint8_t ptr = 4; ptr <= 8; ptr += 4) {
                build_payload(l, ptr, &b, w);
                uint8_t *data = malloc(b.n + 16);
                if (!data) continue;
                memcpy(data, b.d, b.n);
                for (uint16_t t = 0; t < l->type_count; t++) {
                    const etw_kernel_event *e = event_of(f, l->types[t]);
                    /* the whole payload: decoded, named, no error */
                    etw_event ev = record_of(f, l->types[t], l->version, ptr, data, b.n);
                    size_t len;
                    const char *line = line_of(j, &ev, &len);
                    records++;
                    if (!e || !e->name) continue;
                    if (!e->name[0])
                        snprintf(name, sizeof name, "\"event\":\"%s\",", f->group);
                    else if (strchr(e->name, '/'))
                        snprintf(name, sizeof name, "\"event\":\"%s\",", e->name);
                    else
                        snprintf(name, sizeof name, "\"event\":\"%s/%s\",", f->group, e->name);
                    int ok = strstr(line, name) && !strstr(line, "\"error\":") &&
                             !strstr(line, "\"unsupported\":") && strstr(line, "\"provider\":\"") &&
                             strstr(line, f->provider);
                    if (!ok)
                        fprintf(stderr, "%s %s v%u ptr %u type %u: %.400s\n", f->group, l->mof_class,
                                l->version, ptr, l->types[t], line);
                    ETW_CHECK(ok);
                    /* the first property's name is the first field */
                    if (l->prop_count) {
                        char first[96];
                        snprintf(first, sizeof first, "\"fields\":{\"%s\":", l->props[0].name);
                        ETW_CHECK(strstr(line, first) != NULL);
                    }
                    /* cut, grown, garbage: a line every time, an error when cut
                     * inside the fixed part */
                    long end = field_offset(l, NULL, ptr);
                    for (uint32_t n = 0; n < b.n; n += (b.n > 64 ? 7 : 1)) {
                        uint8_t *cut = malloc(n ? n : 1);
                        if (!cut) break;
                        memcpy(cut, data, n);
                        etw_event ce = record_of(f, l->types[t], l->version, ptr, cut, n);
                        const char *cl = line_of(j, &ce, &len);
                        ETW_CHECK(len > 0 && cl[len - 1] == '\n');
                        if (end > 0 && (long)n < end) ETW_CHECK(strstr(cl, "\"error\":") != NULL);
                        free(cut);
                    }
                    memset(data + b.n, 0x5a, 16);
                    etw_event ge = record_of(f, l->types[t], l->version, ptr, data, b.n + 16);
                    const char *gl = line_of(j, &ge, &len);
                    ETW_CHECK(len > 0 && gl[len - 1] == '\n');
                    for (uint32_t q = 0; q < b.n + 16; q++) data[q] = (uint8_t)(q * 131u + 7u);
                    ge = record_of(f, l->types[t], l->version, ptr, data, b.n + 16);
                    gl = line_of(j, &ge, &len);
                    ETW_CHECK(len > 0 && gl[len - 1] == '\n');
                    memcpy(data, b.d, b.n);
                }
                free(data);
            }
        }
    }
    ETW_CHECK(records > 300);
    etw_json_free(j);
    etw_decoder_free(d);
}

int main(void) {
    ETW_RUN(test_tree_rules_every_family);
    ETW_RUN(test_provider_and_group_names);
    ETW_RUN(test_id_fields_exist);
    ETW_RUN(test_offsets_match_the_documented_layouts);
    ETW_RUN(test_synthetic_payloads_every_layout);
    ETW_RUN(test_every_sampled_class_has_a_layout);
    ETW_RUN(test_real_records_decode_whole);
    ETW_RUN(test_real_values);
    ETW_RUN(test_through_the_library);
    ETW_RUN(test_synthetic_records_through_the_decoder);
    return ETW_TEST_DONE();
}
