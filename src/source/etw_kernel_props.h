/* etw_kernel_props.h - shorthands for writing kernel class tables (etw_kernel_tables.h).
 *
 * One macro per MOF property encoding of shared/docs/kernel/kernel-mof.md
 * §4.0, so that a family file reads like the MOF class it transcribes:
 *   uint32 with format("x")        ETW_KX32      (TDH shows it in hex)
 *   uint32 with pointer/PointerType ETW_KPTR     (the event's pointer size)
 *   object with extension("SizeT") ETW_KSIZET    (the event's pointer size)
 *   string (8-bit, NUL-terminated) ETW_KSTR
 *   string with format("w")        ETW_KWSTR     (NUL-terminated UTF-16LE)
 *   char16 X[N]                    ETW_KWCHARS   (N UTF-16 units, NUL-padded)
 *   extension("Port")              ETW_KPORT     (u16, network byte order)
 *   extension("IPAddr"/"IPAddrV4") ETW_KIPV4     (4 bytes, first octet first)
 *   extension("IPAddrV6")          ETW_KIPV6     (16-byte IN6_ADDR)
 *   extension("Guid")              ETW_KGUIDV
 *   extension("WmiTime")           ETW_KU64      (a raw timestamp)
 * Every table is flat (no structs): a layout's top_count is its prop_count.
 */
#ifndef ETW_KERNEL_PROPS_H
#define ETW_KERNEL_PROPS_H

#include "etw_kernel_tables.h"

#define ETW_KI8(n) ETW_KPROP(n, INT8)
#define ETW_KU8(n) ETW_KPROP(n, UINT8)
#define ETW_KI16(n) ETW_KPROP(n, INT16)
#define ETW_KU16(n) ETW_KPROP(n, UINT16)
#define ETW_KI32(n) ETW_KPROP(n, INT32)
#define ETW_KU32(n) ETW_KPROP(n, UINT32)
#define ETW_KI64(n) ETW_KPROP(n, INT64)
#define ETW_KU64(n) ETW_KPROP(n, UINT64)
#define ETW_KX16(n) ETW_KPROP_OUT(n, UINT16, HEXINT16)
#define ETW_KX32(n) ETW_KPROP_OUT(n, UINT32, HEXINT32)
#define ETW_KX64(n) ETW_KPROP_OUT(n, UINT64, HEXINT64)
#define ETW_KPTR(n) ETW_KPROP(n, POINTER)
#define ETW_KSIZET(n) ETW_KPROP(n, SIZET)
#define ETW_KFILETIME(n) ETW_KPROP(n, FILETIME)
#define ETW_KGUIDV(n) ETW_KPROP(n, GUID)
#define ETW_KSTR(n) ETW_KPROP(n, ANSISTRING)
#define ETW_KWSTR(n) ETW_KPROP(n, UNICODESTRING)
#define ETW_KWCHARS(n, units) \
    { .name = (n), .in_type = ETW_INTYPE_UNICODESTRING, .flags = ETW_PROP_LENGTH_FIXED, .length = (units) }
/* (etw_kernel_tables.h may define the next three the same way.) */
#ifndef ETW_KPORT
#define ETW_KPORT(n) ETW_KPROP_OUT(n, UINT16, PORT)
#endif
#ifndef ETW_KIPV4
#define ETW_KIPV4(n) ETW_KPROP_OUT(n, UINT32, IPV4)
#endif
#ifndef ETW_KIPV6
#define ETW_KIPV6(n) \
    { .name = (n), .in_type = ETW_INTYPE_BINARY, .out_type = ETW_OUTTYPE_IPV6, \
      .flags = ETW_PROP_LENGTH_FIXED, .length = 16 }
#endif
/* An array of NUL-terminated UTF-16 strings whose count is the value of
 * the earlier property props[count_index]. */
#define ETW_KWSTRS_COUNTED(n, count_index) \
    { .name = (n), .in_type = ETW_INTYPE_UNICODESTRING, .flags = ETW_PROP_COUNT_REF, .count = (count_index) }

/* One layout: MOF class name, class version, the event types it serves
 * (a uint8_t array) and its properties (an etw_property array). */
#define ETW_KLAYOUT(cls, ver, type_array, prop_array)                                   \
    {                                                                                   \
        .mof_class = (cls), .version = (ver), .types = (type_array),                    \
        .type_count = ETW_KCOUNT(type_array), .props = (prop_array),                    \
        .prop_count = ETW_KCOUNT(prop_array), .top_count = ETW_KCOUNT(prop_array)       \
    }
/* A layout with no payload properties. */
#define ETW_KLAYOUT_EMPTY(cls, ver, type_array)                                         \
    {                                                                                   \
        .mof_class = (cls), .version = (ver), .types = (type_array),                    \
        .type_count = ETW_KCOUNT(type_array), .props = NULL, .prop_count = 0,           \
        .top_count = 0                                                                  \
    }

/* Event names. The table's group comes first in the shown name
 * ("DiskIO" + "Read" = "DiskIO/Read"); an empty name is the group alone
 * (PerfView: opcode 0, or no opcode name, e.g. "FileIO", "ImageID"); a
 * name with a '/' is the whole event name, for the few types PerfView files
 * under another task ("VirtualMem/Alloc" in the Memory group). */
#define ETW_KEV(t, n) { .type = (t), .name = (n) }
#define ETW_KEV_IDS(t, n, pid, tid, fl) \
    { .type = (t), .name = (n), .pid_field = (pid), .tid_field = (tid), .id_flags = (fl) }

#endif
