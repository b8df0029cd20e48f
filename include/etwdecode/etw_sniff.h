/* etw_sniff.h - what kind of file this is, from its first bytes.
 *
 * People hand over what they have: an EVTX event log instead of a trace, a
 * PerfView .etl.zip, a gzip'd .etl. The reader only says ETW_E_NOT_ETL; this
 * names the file's kind so that an error can say what the file is:
 *
 *   unsigned char head[ETW_SNIFF_BYTES]; size_t n = fread(head, 1, sizeof head, f);
 *   etw_file_kind k = etw_sniff(head, n);
 *   printf("%s: %s\n", path, etw_file_kind_describe(k));  // "an EVTX event log"
 *
 * Detection is by magic bytes only (never by the file's name). A file that
 * starts like an ETL trace is ETW_KIND_ETL even if damaged further on.
 * No allocation, no global state.
 */
#ifndef ETWDECODE_ETW_SNIFF_H
#define ETWDECODE_ETW_SNIFF_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Bytes etw_sniff() looks at, at most (fewer are fine: a short file). */
#define ETW_SNIFF_BYTES 512

typedef enum etw_file_kind {
    ETW_KIND_UNKNOWN = 0, /* none of the below: not an ETL trace */
    ETW_KIND_EMPTY,       /* no bytes */
    ETW_KIND_ETL,         /* an ETL trace (a WMI buffer header then the log-file header) */
    ETW_KIND_EVTX,        /* a Windows event log: "ElfFile\0" */
    ETW_KIND_EVT,         /* a legacy (pre-Vista) event log: "LfLe" at offset 4 */
    ETW_KIND_ZIP,         /* "PK\3\4" (or an empty zip: "PK\5\6") */
    ETW_KIND_GZIP,        /* 1F 8B */
    ETW_KIND_ZSTD,        /* 28 B5 2F FD */
    ETW_KIND_XZ,          /* FD "7zXZ" 00 */
    ETW_KIND_BZIP2,       /* "BZh" and a digit */
    ETW_KIND_7Z,          /* "7z" BC AF 27 1C */
    ETW_KIND_CAB,         /* "MSCF" */
    ETW_KIND_PE,          /* "MZ": a Windows executable or DLL */
    ETW_KIND_PDB,         /* "Microsoft C/C++ MSF 7.00" */
    ETW_KIND_TEXT,        /* the bytes looked at are printable text (UTF-8 or ASCII, or a UTF-16 BOM) */
    ETW_KIND_COUNT_
} etw_file_kind;

/* The kind of the file whose first n bytes are at head (n may be 0). */
etw_file_kind etw_sniff(const void *head, size_t n);

/* "an EVTX event log", "a ZIP archive", "a gzip-compressed file", ...:
 * an English noun phrase with its article, for messages. */
const char *etw_file_kind_describe(etw_file_kind k);

/* 1 for the kinds etw_multi_add_file() and etw_multi_add_memory() unpack
 * (ZIP, gzip, zstd, xz, bzip2), 0 otherwise. */
int etw_file_kind_compressed(etw_file_kind k);

#ifdef __cplusplus
}
#endif
#endif
