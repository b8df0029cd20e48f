/* etw_subject.c - payload subjects of manifest providers (see etw_subject.h).
 *
 * The table. One row per provider (and optionally per set of event ids):
 * the payload property naming the process the event is about, and what
 * becomes of the tid.
 *
 * 1. Microsoft-Windows-Kernel-Network {7dd42a49-5329-4832-8dfd-43d979153a88}
 *    (the GUID, event ids, tasks and templates: the provider's manifest as
 *    repnz/etw-providers-docs dumps it, Manifests-Win10-18990/
 *    Microsoft-Windows-Kernel-Network.xml; airbus-cert/etl-parser
 *    etl/parsers/etw/Microsoft_Windows_Kernel_Network.py agrees on every
 *    layout). Every TCP/UDP data and connection event (KERNEL_NETWORK_TASK_TCPIP
 *    10-16, 18 and IPv6 26-32, 34; KERNEL_NETWORK_TASK_UDPIP 42, 43 and IPv6
 *    58, 59) starts with `PID` (win:UInt32); the two failure events (17, 49:
 *    Proto, FailureCode) have none and keep the header's ids. The stack
 *    writes these events from whatever context sends or receives, a DPC
 *    most of the time, so the header's pid is the interrupted process (0,
 *    4, any). They are the manifest twins of the kernel's TcpIp and UdpIp
 *    MOF events (same opcodes 10-18, same fields, same PID first), whose
 *    subject TraceEvent takes from the payload: microsoft/perfview
 *    src/TraceEvent/Parsers/KernelTraceEventParser.cs, the FixupData of
 *    TcpIpTraceData, TcpIpSendTraceData, TcpIpConnectTraceData,
 *    TcpIpV6TraceData, TcpIpV6SendTraceData, TcpIpV6ConnectTraceData and
 *    UdpIpTraceData set EventHeader.ProcessId to the payload's PID (and
 *    TcpIpFailTraceData / UdpIpFailTraceData, without one, have no
 *    FixupData). TraceEvent itself has no parser for the manifest provider
 *    (no Kernel-Network in src/TraceEvent), so it shows these events under
 *    the header's pid; we apply its kernel rule to the twins instead, so
 *    that both forms of a trace agree. The kernel events carry no thread
 *    (PERFINFO headers: tid -1); here the header's thread is kept when it
 *    belongs to the payload's process (the header pid is the PID), and is
 *    unknown (-1) otherwise.
 */
#include "schema/etw_subject.h"

#include <string.h>

#include "../common/etw_bytes.h"
#include "../decode/etw_decode_walk.h"
#include "etwdecode/etw_decode.h"

typedef struct subject_rule {
    etw_guid provider;
    const uint16_t *ids; /* event ids the rule covers; NULL: every event */
    uint16_t id_count;
    const char *pid_field; /* top-level 32-bit integer naming the process */
    uint8_t flags;         /* ETW_SUBJECT_TID_* */
} subject_rule;

/* 1: the Kernel-Network events with a PID (all but 17 and 49). */
static const uint16_t kernel_network_ids[] = {10, 11, 12, 13, 14, 15, 16, 18, 26, 27, 28,
                                              29, 30, 31, 32, 34, 42, 43, 58, 59};

static const subject_rule rules[] = {
    {{0x7dd42a49u, 0x5329, 0x4832, {0x8d, 0xfd, 0x43, 0xd9, 0x79, 0x15, 0x3a, 0x88}},
     kernel_network_ids,
     (uint16_t)(sizeof kernel_network_ids / sizeof kernel_network_ids[0]),
     "PID",
     ETW_SUBJECT_TID_NONE_IF_MOVED},
};

/* The bytes a top-level property always takes, 0 when that varies (or is
 * unknown). */
static uint32_t fixed_size(const etw_property *p, uint8_t ptr) {
    if (p->flags & (ETW_PROP_STRUCT | ETW_PROP_ARRAY_MASK | ETW_PROP_LENGTH_REF | ETW_PROP_CUSTOM_SIZED |
                    ETW_PROP_LENGTH_TO_END | ETW_PROP_OPTIONAL))
        return 0;
    switch (p->in_type) {
    case ETW_INTYPE_INT8: case ETW_INTYPE_UINT8: case ETW_INTYPE_ANSICHAR: return 1;
    case ETW_INTYPE_INT16: case ETW_INTYPE_UINT16: case ETW_INTYPE_UNICODECHAR: return 2;
    case ETW_INTYPE_INT32: case ETW_INTYPE_UINT32: case ETW_INTYPE_HEXINT32: case ETW_INTYPE_BOOLEAN:
    case ETW_INTYPE_FLOAT: return 4;
    case ETW_INTYPE_INT64: case ETW_INTYPE_UINT64: case ETW_INTYPE_HEXINT64: case ETW_INTYPE_DOUBLE:
    case ETW_INTYPE_FILETIME: return 8;
    case ETW_INTYPE_GUID: case ETW_INTYPE_SYSTEMTIME: return 16;
    case ETW_INTYPE_POINTER: case ETW_INTYPE_SIZET: return ptr;
    case ETW_INTYPE_ANSISTRING: case ETW_INTYPE_BINARY:
        return (p->flags & ETW_PROP_LENGTH_FIXED) ? p->length : 0;
    case ETW_INTYPE_UNICODESTRING:
        return (p->flags & ETW_PROP_LENGTH_FIXED) ? 2u * p->length : 0;
    default: return 0;
    }
}

static int is_pid_type(const etw_property *p) {
    if (p->flags & (ETW_PROP_STRUCT | ETW_PROP_ARRAY_MASK | ETW_PROP_BITS | ETW_PROP_LENGTH_REF)) return 0;
    return p->in_type == ETW_INTYPE_UINT32 || p->in_type == ETW_INTYPE_INT32 || p->in_type == ETW_INTYPE_HEXINT32;
}

static const subject_rule *rule_for(const etw_schema *s) {
    for (size_t r = 0; r < sizeof rules / sizeof rules[0]; r++) {
        const subject_rule *u = &rules[r];
        if (!etw_guid_equal(&s->provider, &u->provider)) continue;
        if (!u->ids) return u;
        for (uint16_t i = 0; i < u->id_count; i++)
            if (u->ids[i] == s->event_id) return u;
    }
    return NULL;
}

void etw_schema_subject(etw_schema *s) {
    if (!s) return;
    s->subject_prop = ETW_SUBJECT_NONE;
    s->subject_off = ETW_SUBJECT_NONE;
    s->subject_flags = 0;
    const subject_rule *u = rule_for(s);
    if (!u || !s->props) return;
    uint32_t off = 0;
    int fixed = 1;
    for (uint16_t i = 0; i < s->top_count && i < s->prop_count; i++) {
        const etw_property *p = &s->props[i];
        if (p->name && strcmp(p->name, u->pid_field) == 0) {
            if (!is_pid_type(p)) return;
            s->subject_prop = i;
            s->subject_off = fixed && off < ETW_SUBJECT_NONE ? (uint16_t)off : ETW_SUBJECT_NONE;
            s->subject_flags = (uint8_t)(ETW_SUBJECT_PID | u->flags);
            return;
        }
        if (p->flags & ETW_PROP_BITS) continue; /* takes no payload byte */
        uint32_t n = fixed_size(p, s->pointer_size);
        if (!n) fixed = 0;
        off += n;
    }
}

/* The subject's value: 1 and *v, or 0 when the payload does not hold it. */
static int read_subject(const etw_schema *s, const etw_event *ev, uint32_t *v) {
    uint16_t index = s->subject_prop;
    if (index >= s->top_count || index >= s->prop_count) return 0;
    if (s->subject_off != ETW_SUBJECT_NONE) {
        uint32_t off = s->subject_off;
        if (!ev->user_data || ev->user_data_len < off + 4u) return 0;
        *v = etw_le32(ev->user_data + off);
        return 1;
    }
    return etw_decode_walk_u32(s, ev, index, 1, v); /* a variable-size property precedes it */
}

void etw_subject_ids(const etw_schema *s, const etw_event *ev, uint32_t *pid, uint32_t *tid) {
    if (!s || !ev || !(s->subject_flags & ETW_SUBJECT_PID)) return;
    uint32_t v;
    if (!read_subject(s, ev, &v)) return;
    if ((s->subject_flags & ETW_SUBJECT_TID_NONE_IF_MOVED) && v != *pid) *tid = ETW_NO_ID;
    *pid = v;
}
