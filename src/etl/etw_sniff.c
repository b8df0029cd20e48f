/* etw_sniff.c - a file's kind from its magic bytes (see etw_sniff.h).
 * Magic numbers: EVTX "ElfFile\0" ([MS-EVEN6] file header Signature), legacy
 * EVT "LfLe" at offset 4 ([MS-EVEN] ELF_LOGFILE_HEADER), ZIP "PK\3\4"
 * (APPNOTE.TXT 4.3.7), gzip 1F 8B (RFC 1952), zstd 28 B5 2F FD (RFC 8878),
 * xz FD 37 7A 58 5A 00, bzip2 "BZh1".."BZh9", 7z 37 7A BC AF 27 1C, CAB
 * "MSCF", PE "MZ", PDB "Microsoft C/C++ MSF 7.00". */
#include "etwdecode/etw_sniff.h"

#include <string.h>

static int starts(const unsigned char *p, size_t n, const char *magic, size_t m) {
    return n >= m && memcmp(p, magic, m) == 0;
}

/* An ETL file starts with a WMI buffer header (0x48 bytes) whose first
 * record is a SYSTEM_TRACE_HEADER: version 2, header type 1 or 2 (system,
 * compact), the TRACE_HEADER_FLAG | EVENT_TRACE flags (0xC0). */
static int looks_etl(const unsigned char *p, size_t n) {
    if (n < 0x50) return 0;
    return p[0x48] == 2 && p[0x49] == 0 && (p[0x4A] == 1 || p[0x4A] == 2) && (p[0x4B] & 0xC0) == 0xC0;
}

static int looks_text(const unsigned char *p, size_t n) {
    if (n >= 2 && ((p[0] == 0xFF && p[1] == 0xFE) || (p[0] == 0xFE && p[1] == 0xFF))) return 1;
    for (size_t i = 0; i < n; i++) {
        unsigned c = p[i];
        if (c >= 0x80) continue; /* UTF-8 (not validated: a last character may be cut) */
        if (c < 0x20 && c != '\t' && c != '\n' && c != '\r' && c != '\f') return 0;
        if (c == 0x7F) return 0;
    }
    return 1;
}

etw_file_kind etw_sniff(const void *head, size_t n) {
    const unsigned char *p = head;
    if (!p || n == 0) return ETW_KIND_EMPTY;
    if (n > ETW_SNIFF_BYTES) n = ETW_SNIFF_BYTES;
    if (starts(p, n, "ElfFile\0", 8)) return ETW_KIND_EVTX;
    if (n >= 8 && memcmp(p + 4, "LfLe", 4) == 0) return ETW_KIND_EVT;
    if (starts(p, n, "PK\3\4", 4) || starts(p, n, "PK\5\6", 4)) return ETW_KIND_ZIP;
    if (starts(p, n, "\x1f\x8b", 2)) return ETW_KIND_GZIP;
    if (starts(p, n, "\x28\xb5\x2f\xfd", 4)) return ETW_KIND_ZSTD;
    if (starts(p, n, "\xfd" "7zXZ\0", 6)) return ETW_KIND_XZ;
    if (n >= 4 && starts(p, n, "BZh", 3) && p[3] >= '1' && p[3] <= '9') return ETW_KIND_BZIP2;
    if (starts(p, n, "7z\xbc\xaf\x27\x1c", 6)) return ETW_KIND_7Z;
    if (starts(p, n, "MSCF", 4)) return ETW_KIND_CAB;
    if (starts(p, n, "Microsoft C/C++ MSF 7.00", 24)) return ETW_KIND_PDB;
    if (looks_etl(p, n)) return ETW_KIND_ETL;
    if (starts(p, n, "MZ", 2)) return ETW_KIND_PE;
    if (looks_text(p, n)) return ETW_KIND_TEXT;
    return ETW_KIND_UNKNOWN;
}

const char *etw_file_kind_describe(etw_file_kind k) {
    switch (k) {
    case ETW_KIND_EMPTY: return "an empty file";
    case ETW_KIND_ETL: return "an ETL trace";
    case ETW_KIND_EVTX: return "an EVTX event log";
    case ETW_KIND_EVT: return "a legacy EVT event log";
    case ETW_KIND_ZIP: return "a ZIP archive";
    case ETW_KIND_GZIP: return "a gzip-compressed file";
    case ETW_KIND_ZSTD: return "a zstd-compressed file";
    case ETW_KIND_XZ: return "an xz-compressed file";
    case ETW_KIND_BZIP2: return "a bzip2-compressed file";
    case ETW_KIND_7Z: return "a 7-Zip archive";
    case ETW_KIND_CAB: return "a CAB archive";
    case ETW_KIND_PE: return "a Windows executable or DLL";
    case ETW_KIND_PDB: return "a PDB symbol file";
    case ETW_KIND_TEXT: return "a text file";
    case ETW_KIND_UNKNOWN:
    case ETW_KIND_COUNT_: break;
    }
    return "not an ETW trace";
}

int etw_file_kind_compressed(etw_file_kind k) {
    return k == ETW_KIND_ZIP || k == ETW_KIND_GZIP || k == ETW_KIND_ZSTD || k == ETW_KIND_XZ ||
           k == ETW_KIND_BZIP2;
}
