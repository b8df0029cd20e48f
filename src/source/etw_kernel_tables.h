/* etw_kernel_tables.h - the kernel (MOF) class tables the kernel schema source serves.
 *
 * Windows has no manifest for NT Kernel Logger events; TDH decodes them from
 * the MOF classes of MSNT_SystemTrace that Windows registers. The library
 * ships those classes as data: one file per class family
 * (src/source/etw_kernel_<family>.c), each defining one etw_kernel_family,
 * all listed in etw_kernel_families.c. Facts: shared/docs/kernel/kernel-mof.md
 * (layouts, encodings, pid/tid rules) and shared/docs/kernel/naming.md (names).
 *
 * A family is one event-class GUID (a kernel hook group's GUID, as
 * etw_kernel_group_guid() maps it, or a classic class GUID such as
 * KernelTraceControl's ImageID). It names its event types (PerfView's names)
 * and lists its layouts: one per (MOF class, class version), each serving a
 * set of event types. A layout's properties are etw_property entries in the
 * etw_schema.h tree rules, written so that one table serves both pointer
 * widths (ETW_INTYPE_POINTER / ETW_INTYPE_SIZET are the event's pointer size;
 * a SID with its TOKEN_USER prefix is ETW_INTYPE_WBEMSID; a fixed char16[N]
 * is ETW_INTYPE_UNICODESTRING with ETW_PROP_LENGTH_FIXED and length N; ports
 * are UINT16 with ETW_OUTTYPE_PORT; IPv4 addresses UINT32 with
 * ETW_OUTTYPE_IPV4; WmiTime is UINT64).
 *
 * Extending: a family file may be written by another hand than the source
 * that serves it. New members go at the end of these structs so that every
 * table, written with designated initializers, stays valid.
 */
#ifndef ETW_KERNEL_TABLES_H
#define ETW_KERNEL_TABLES_H

#include <stdint.h>

#include "etwdecode/etw_schema.h"
#include "etwdecode/etw_types.h"

/* How an event type's pid and tid are taken (kernel-mof.md §6, as TraceEvent
 * does): by default both come from the header. */
#define ETW_KID_PID_NONE 0x01u        /* pid is -1 whatever the header says */
#define ETW_KID_TID_NONE 0x02u        /* tid is -1 whatever the header says */
#define ETW_KID_PID_FROM_THREAD 0x04u /* pid from the thread -> process state when unknown */
#define ETW_KID_RECORDS_THREAD 0x08u  /* the event's pid_field/tid_field feed the thread -> process
                                       * state (Thread/Start, Thread/DCStart) */

/* One event type of a family. */
typedef struct etw_kernel_event {
    uint8_t type;          /* event type: the header's opcode (hook id low byte) */
    const char *name;      /* PerfView's event name ("Start", "HardFault"), or the
                            * MOF event type name where PerfView has none. The event is
                            * shown as "Group/name"; NULL or "" shows the group alone
                            * (type 0: "FileIO"); a name with a '/' is shown as it is
                            * (PerfView files some types under another task:
                            * "VirtualMem/Alloc", "Dispatcher/ReadyThread"). */
    const char *pid_field; /* payload property naming the process, or NULL */
    const char *tid_field; /* payload property naming the thread, or NULL */
    uint8_t id_flags;      /* ETW_KID_* */
} etw_kernel_event;

/* One MOF class version: the payload layout of some event types. */
typedef struct etw_kernel_layout {
    const char *mof_class;      /* "Process_V4_TypeGroup1" */
    uint8_t version;            /* class version: Marker.Version / Class.Version */
    const uint8_t *types;       /* event types this layout serves */
    uint16_t type_count;
    const etw_property *props;  /* etw_schema.h tree, payload order */
    uint16_t prop_count;
    uint16_t top_count;         /* top-level properties: props[0 .. top_count) */
} etw_kernel_layout;

/* One event-class GUID and everything known of it. */
typedef struct etw_kernel_family {
    etw_guid guid;              /* event-class GUID */
    const char *provider;       /* "Windows Kernel", "KernelTraceControl" */
    const char *group;          /* PerfView's task/group name: "Process", "DiskIO" */
    const etw_kernel_event *events;
    uint16_t event_count;
    const etw_kernel_layout *layouts;
    uint16_t layout_count;
} etw_kernel_family;

/* Writing tables: a GUID literal, a plain property, and an array's length. */
#define ETW_KGUID(a, b, c, d0, d1, d2, d3, d4, d5, d6, d7) \
    { a, b, c, { d0, d1, d2, d3, d4, d5, d6, d7 } }
#define ETW_KPROP(n, in) { .name = (n), .in_type = ETW_INTYPE_##in }
#define ETW_KPROP_OUT(n, in, out) { .name = (n), .in_type = ETW_INTYPE_##in, .out_type = ETW_OUTTYPE_##out }
#define ETW_KCOUNT(a) ((uint16_t)(sizeof(a) / sizeof((a)[0])))
/* A property the payload may end before (ETW_PROP_OPTIONAL: appended by a later build). */
#define ETW_KPROP_OPT(n, in) { .name = (n), .in_type = ETW_INTYPE_##in, .flags = ETW_PROP_OPTIONAL }

/* Bits [shift, shift + width) of top-level property `of` (its index), a value that takes
 * no payload byte (ETW_PROP_BITS); out is an ETW_OUTTYPE_ suffix (BOOLEAN for a flag). */
#define ETW_KBITS(n, of, shift, width, out)                                                   \
    { .name = (n), .in_type = ETW_INTYPE_UINT8, .out_type = ETW_OUTTYPE_##out, .flags = ETW_PROP_BITS, \
      .count = (of), .length = ETW_BITS_LENGTH(shift, width) }

/* Every family the library knows (etw_kernel_families.c). */
extern const etw_kernel_family *const etw_kernel_families[];
extern const uint32_t etw_kernel_family_count;

#endif
