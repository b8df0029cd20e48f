/* etw_manifest_types.c - name tables and text parsers of the manifest
 * source (see etw_manifest_types.h). */
#include "etw_manifest_types.h"

#include <string.h>

#include "etwdecode/etw_schema.h"

typedef struct name_num {
    const char *name;
    uint16_t value;
    uint16_t implied_out;
} name_num;

/* win: in-types (winmeta.xml), matched on the local name. */
static const name_num win_intypes[] = {
    {"UnicodeString", ETW_INTYPE_UNICODESTRING, 0},
    {"AnsiString", ETW_INTYPE_ANSISTRING, 0},
    {"Int8", ETW_INTYPE_INT8, 0},
    {"UInt8", ETW_INTYPE_UINT8, 0},
    {"Int16", ETW_INTYPE_INT16, 0},
    {"UInt16", ETW_INTYPE_UINT16, 0},
    {"Int32", ETW_INTYPE_INT32, 0},
    {"UInt32", ETW_INTYPE_UINT32, 0},
    {"Int64", ETW_INTYPE_INT64, 0},
    {"UInt64", ETW_INTYPE_UINT64, 0},
    {"Float", ETW_INTYPE_FLOAT, 0},
    {"Double", ETW_INTYPE_DOUBLE, 0},
    {"Boolean", ETW_INTYPE_BOOLEAN, 0},
    {"Binary", ETW_INTYPE_BINARY, 0},
    {"GUID", ETW_INTYPE_GUID, 0},
    {"Pointer", ETW_INTYPE_POINTER, 0},
    {"FILETIME", ETW_INTYPE_FILETIME, 0},
    {"SYSTEMTIME", ETW_INTYPE_SYSTEMTIME, 0},
    {"SID", ETW_INTYPE_SID, 0},
    {"HexInt32", ETW_INTYPE_HEXINT32, 0},
    {"HexInt64", ETW_INTYPE_HEXINT64, 0},
    {"CountedUnicodeString", ETW_INTYPE_MANIFEST_COUNTEDSTRING, 0},
    {"CountedString", ETW_INTYPE_MANIFEST_COUNTEDSTRING, 0},
    {"CountedAnsiString", ETW_INTYPE_MANIFEST_COUNTEDANSISTRING, 0},
    {"CountedBinary", ETW_INTYPE_MANIFEST_COUNTEDBINARY, 0},
};

/* trace: in-types of older (WMI-era) manifests. */
static const name_num trace_intypes[] = {
    {"SizeT", ETW_INTYPE_SIZET, 0},
    {"Port", ETW_INTYPE_UINT16, ETW_OUTTYPE_PORT},
    {"IPAddrV4", ETW_INTYPE_UINT32, ETW_OUTTYPE_IPV4},
    {"IPAddrV6", ETW_INTYPE_BINARY, ETW_OUTTYPE_IPV6},
    {"IPAddr", ETW_INTYPE_UINT32, ETW_OUTTYPE_IPV4},
    {"WmiTime", ETW_INTYPE_UINT64, 0},
    {"UnicodeChar", ETW_INTYPE_UNICODECHAR, 0},
    {"AnsiChar", ETW_INTYPE_ANSICHAR, 0},
    {"HexDump", ETW_INTYPE_HEXDUMP, 0},
    {"WBEMSID", ETW_INTYPE_WBEMSID, 0},
    {"CountedString", ETW_INTYPE_COUNTEDSTRING, 0},
    {"CountedAnsiString", ETW_INTYPE_COUNTEDANSISTRING, 0},
    {"ReversedCountedString", ETW_INTYPE_REVERSEDCOUNTEDSTRING, 0},
    {"ReversedCountedAnsiString", ETW_INTYPE_REVERSEDCOUNTEDANSISTRING, 0},
    {"NonNullTerminatedString", ETW_INTYPE_NONNULLTERMINATEDSTRING, 0},
    {"NonNullTerminatedAnsiString", ETW_INTYPE_NONNULLTERMINATEDANSISTRING, 0},
};

/* xs: and win: out-types; the local names are distinct, so one table. */
static const name_num outtypes[] = {
    {"string", ETW_OUTTYPE_STRING, 0},
    {"dateTime", ETW_OUTTYPE_DATETIME, 0},
    {"byte", ETW_OUTTYPE_BYTE, 0},
    {"unsignedByte", ETW_OUTTYPE_UNSIGNEDBYTE, 0},
    {"short", ETW_OUTTYPE_SHORT, 0},
    {"unsignedShort", ETW_OUTTYPE_UNSIGNEDSHORT, 0},
    {"int", ETW_OUTTYPE_INT, 0},
    {"unsignedInt", ETW_OUTTYPE_UNSIGNEDINT, 0},
    {"long", ETW_OUTTYPE_LONG, 0},
    {"unsignedLong", ETW_OUTTYPE_UNSIGNEDLONG, 0},
    {"float", ETW_OUTTYPE_FLOAT, 0},
    {"double", ETW_OUTTYPE_DOUBLE, 0},
    {"boolean", ETW_OUTTYPE_BOOLEAN, 0},
    {"GUID", ETW_OUTTYPE_GUID, 0},
    {"hexBinary", ETW_OUTTYPE_HEXBINARY, 0},
    {"HexInt8", ETW_OUTTYPE_HEXINT8, 0},
    {"HexInt16", ETW_OUTTYPE_HEXINT16, 0},
    {"HexInt32", ETW_OUTTYPE_HEXINT32, 0},
    {"HexInt64", ETW_OUTTYPE_HEXINT64, 0},
    {"PID", ETW_OUTTYPE_PID, 0},
    {"TID", ETW_OUTTYPE_TID, 0},
    {"Port", ETW_OUTTYPE_PORT, 0},
    {"IPv4", ETW_OUTTYPE_IPV4, 0},
    {"IPv6", ETW_OUTTYPE_IPV6, 0},
    {"SocketAddress", ETW_OUTTYPE_SOCKETADDRESS, 0},
    {"CIMDateTime", ETW_OUTTYPE_CIMDATETIME, 0},
    {"ETWTIME", ETW_OUTTYPE_ETWTIME, 0},
    {"Xml", ETW_OUTTYPE_XML, 0},
    {"ErrorCode", ETW_OUTTYPE_ERRORCODE, 0},
    {"Win32Error", ETW_OUTTYPE_WIN32ERROR, 0},
    {"NTSTATUS", ETW_OUTTYPE_NTSTATUS, 0},
    {"HResult", ETW_OUTTYPE_HRESULT, 0},
    {"DateTimeCultureInsensitive", ETW_OUTTYPE_CULTURE_INSENSITIVE_DATETIME, 0},
    {"Json", ETW_OUTTYPE_JSON, 0},
    {"Utf8", ETW_OUTTYPE_UTF8, 0},
    {"Pkcs7WithTypeInfo", ETW_OUTTYPE_PKCS7_WITH_TYPE_INFO, 0},
    {"CodePointer", ETW_OUTTYPE_CODE_POINTER, 0},
    {"DateTimeUtc", ETW_OUTTYPE_DATETIME_UTC, 0},
    {"ReducedString", ETW_OUTTYPE_REDUCEDSTRING, 0},
    {"NoPrint", ETW_OUTTYPE_NOPRINT, 0},
};

static const name_num std_levels[] = {
    {"LogAlways", 0, 0}, {"Critical", 1, 0}, {"Error", 2, 0},
    {"Warning", 3, 0},   {"Informational", 4, 0}, {"Verbose", 5, 0},
};

static const name_num std_opcodes[] = {
    {"Info", 0, 0},     {"Start", 1, 0},     {"Stop", 2, 0},    {"DC_Start", 3, 0},
    {"DC_Stop", 4, 0},  {"Extension", 5, 0}, {"Reply", 6, 0},   {"Resume", 7, 0},
    {"Suspend", 8, 0},  {"Send", 9, 0},      {"Receive", 240, 0},
};

/* Display names of the predefined opcodes: winmeta.xml's opcode messages
 * resolved in its string table (the names TDH reports as OpcodeName). Only
 * the two data-collection opcodes differ from their names (win:DC_Start is
 * shown as DCStart). Indexed like std_opcodes. */
static const char *const std_opcode_display[] = {
    "Info",    "Start", "Stop", "DCStart", "DCStop", "Extension",
    "Reply",   "Resume", "Suspend", "Send", "Receive",
};

static const name_num std_channels[] = {
    {"TraceClassic", 0, 0}, {"System", 8, 0},        {"Application", 9, 0},
    {"Security", 10, 0},    {"TraceLogging", 11, 0}, {"ProviderMetadata", 12, 0},
};

typedef struct name_mask {
    const char *name;
    uint64_t mask;
} name_mask;

static const name_mask std_keywords[] = {
    {"AnyKeyword", 0},
    {"ResponseTime", UINT64_C(0x0001000000000000)},
    {"WDIContext", UINT64_C(0x0002000000000000)},
    {"WDIDiag", UINT64_C(0x0004000000000000)},
    {"SQM", UINT64_C(0x0008000000000000)},
    {"AuditFailure", UINT64_C(0x0010000000000000)},
    {"AuditSuccess", UINT64_C(0x0020000000000000)},
    {"CorrelationHint", UINT64_C(0x0040000000000000)},
    {"EventlogClassic", UINT64_C(0x0080000000000000)},
};

#define COUNT_OF(a) (sizeof(a) / sizeof((a)[0]))

_Static_assert(COUNT_OF(std_opcode_display) == COUNT_OF(std_opcodes), "one display name per opcode");

static int is_space(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n'; }

static int ascii_lower(int c) { return c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c; }

/* Case-insensitive ASCII equality (registry-rebuilt manifests are not
 * always careful with case). */
static int eq_nocase(const char *a, const char *b) {
    for (; *a && *b; a++, b++)
        if (ascii_lower((unsigned char)*a) != ascii_lower((unsigned char)*b)) return 0;
    return *a == *b;
}

const char *etw_mf_local(const char *name) {
    const char *c = strrchr(name, ':');
    return c ? c + 1 : name;
}

/* The prefix of s ("win", "trace", ...) in out (NUL-terminated, truncated). */
static void prefix_of(const char *s, char *out, size_t cap) {
    const char *c = strrchr(s, ':');
    size_t n = c ? (size_t)(c - s) : 0;
    if (n >= cap) n = cap - 1;
    memcpy(out, s, n);
    out[n] = 0;
}

static const name_num *find(const name_num *t, size_t n, const char *local) {
    for (size_t i = 0; i < n; i++)
        if (eq_nocase(t[i].name, local)) return &t[i];
    return NULL;
}

int etw_mf_parse_u64(const char *s, uint64_t *out) {
    if (!s) return 0;
    while (is_space(*s)) s++;
    uint64_t v = 0;
    const char *p = s;
    if (p[0] == '0' && (p[1] == 'x' || p[1] == 'X')) {
        p += 2;
        int digits = 0;
        for (;; p++, digits++) {
            int c = (unsigned char)*p, d;
            if (c >= '0' && c <= '9') d = c - '0';
            else if (c >= 'a' && c <= 'f') d = c - 'a' + 10;
            else if (c >= 'A' && c <= 'F') d = c - 'A' + 10;
            else break;
            if (v >> 60) return 0;
            v = v << 4 | (uint64_t)d;
        }
        (void)digits; /* "0x" alone is 0 */
    } else {
        if (!(*p >= '0' && *p <= '9')) return 0;
        for (; *p >= '0' && *p <= '9'; p++) {
            uint64_t d = (uint64_t)(*p - '0');
            if (v > (UINT64_MAX - d) / 10) return 0;
            v = v * 10 + d;
        }
    }
    while (is_space(*p)) p++;
    if (*p) return 0;
    *out = v;
    return 1;
}

/* A numeric type such as "win:29" or "29": 1 and *v when it is one. */
static int numeric_type(const char *s, uint16_t *v) {
    uint64_t n;
    if (!etw_mf_parse_u64(etw_mf_local(s), &n) || n > 0xFFFF) return 0;
    *v = (uint16_t)n;
    return 1;
}

uint16_t etw_mf_intype(const char *s, uint16_t *implied_out) {
    if (implied_out) *implied_out = 0;
    if (!s) return 0;
    uint16_t v;
    if (numeric_type(s, &v)) return v;
    char pre[16];
    prefix_of(s, pre, sizeof pre);
    const char *local = etw_mf_local(s);
    const name_num *e;
    if (eq_nocase(pre, "trace")) {
        e = find(trace_intypes, COUNT_OF(trace_intypes), local);
        if (!e) e = find(win_intypes, COUNT_OF(win_intypes), local);
    } else {
        e = find(win_intypes, COUNT_OF(win_intypes), local);
        if (!e) e = find(trace_intypes, COUNT_OF(trace_intypes), local);
    }
    if (!e) return 0;
    if (implied_out) *implied_out = e->implied_out;
    return e->value;
}

int etw_mf_outtype(const char *s, uint16_t *out) {
    if (!s) return 0;
    uint16_t v;
    if (numeric_type(s, &v)) {
        *out = v;
        return 1;
    }
    const name_num *e = find(outtypes, COUNT_OF(outtypes), etw_mf_local(s));
    if (!e) return 0;
    *out = e->value;
    return 1;
}

/* Predefined names are "win:X"; accept the bare "X" too, but no other
 * prefix (a provider may define its own "my:Start"). */
static const char *std_local(const char *name) {
    if (!name) return NULL;
    if (strncmp(name, "win:", 4) == 0) return name + 4;
    if (strchr(name, ':')) return NULL;
    return name;
}

int etw_mf_std_level(const char *name, uint8_t *value) {
    const char *l = std_local(name);
    const name_num *e = l ? find(std_levels, COUNT_OF(std_levels), l) : NULL;
    if (!e) return 0;
    *value = (uint8_t)e->value;
    return 1;
}

int etw_mf_std_opcode(const char *name, uint8_t *value) {
    const char *l = std_local(name);
    const name_num *e = l ? find(std_opcodes, COUNT_OF(std_opcodes), l) : NULL;
    if (!e) return 0;
    *value = (uint8_t)e->value;
    return 1;
}

const char *etw_mf_std_opcode_display(const char *name) {
    const char *l = std_local(name);
    const name_num *e = l ? find(std_opcodes, COUNT_OF(std_opcodes), l) : NULL;
    return e ? std_opcode_display[e - std_opcodes] : NULL;
}

const char *etw_mf_std_opcode_symbol(const char *name) {
    const char *l = std_local(name);
    const name_num *e = l ? find(std_opcodes, COUNT_OF(std_opcodes), l) : NULL;
    return e ? e->name : NULL;
}

int etw_mf_std_channel(const char *name, uint8_t *value) {
    const char *l = std_local(name);
    const name_num *e = l ? find(std_channels, COUNT_OF(std_channels), l) : NULL;
    if (!e) return 0;
    *value = (uint8_t)e->value;
    return 1;
}

int etw_mf_std_task(const char *name, uint16_t *value) {
    const char *l = std_local(name);
    if (!l || !eq_nocase(l, "None")) return 0;
    *value = 0;
    return 1;
}

int etw_mf_std_keyword(const char *name, uint64_t *mask) {
    const char *l = std_local(name);
    if (!l) return 0;
    for (size_t i = 0; i < COUNT_OF(std_keywords); i++) {
        if (eq_nocase(std_keywords[i].name, l)) {
            *mask = std_keywords[i].mask;
            return 1;
        }
    }
    return 0;
}

static int hexval(int c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

int etw_mf_parse_guid(const char *s, etw_guid *out) {
    if (!s) return 0;
    while (is_space(*s)) s++;
    int brace = *s == '{';
    if (brace) s++;
    /* 8-4-4-4-12 hex digits */
    static const int groups[5] = {8, 4, 4, 4, 12};
    uint8_t b[16];
    int nb = 0;
    for (int g = 0; g < 5; g++) {
        if (g > 0) {
            if (*s != '-') return 0;
            s++;
        }
        for (int i = 0; i < groups[g]; i += 2) {
            int hi = hexval((unsigned char)s[0]);
            if (hi < 0) return 0;
            int lo = hexval((unsigned char)s[1]);
            if (lo < 0) return 0;
            b[nb++] = (uint8_t)(hi << 4 | lo);
            s += 2;
        }
    }
    if (brace) {
        if (*s != '}') return 0;
        s++;
    }
    while (is_space(*s)) s++;
    if (*s) return 0;
    out->data1 = (uint32_t)b[0] << 24 | (uint32_t)b[1] << 16 | (uint32_t)b[2] << 8 | b[3];
    out->data2 = (uint16_t)(b[4] << 8 | b[5]);
    out->data3 = (uint16_t)(b[6] << 8 | b[7]);
    memcpy(out->data4, b + 8, 8);
    return 1;
}
