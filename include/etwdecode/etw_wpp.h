/* etw_wpp.h - WPP trace messages: TMF (trace message format) files and the
 * text of a WPP MESSAGE record formatted from them, as tracefmt does.
 *
 * A WPP record (etw_event form ETW_FORM_MESSAGE) carries a message GUID, a
 * message number and the argument values, nothing else: what it means is in
 * the TMF files tracepdb extracts from the driver's PDB. An etw_wpp_set holds
 * the messages of any number of TMF texts, keyed by (message GUID, number).
 *
 * Accepted TMF grammar (tracepdb's output; one construct per line, leading
 * and trailing blanks ignored, CR LF or LF line ends):
 *
 *   // any comment                       ignored ("// PDB:  x.pdb", "// PDB:  Last Updated ...")
 *   <GUID> <component> [// SRC=<file> MJ=<n> MN=<n>]
 *                                        starts the messages of a message GUID
 *                                        (several may follow each other in one file)
 *   #typev <tag> <number> "<format>" [// LEVEL=<l> FLAGS=<f> FUNC=<function>]
 *                                        one message of the current GUID; the format
 *                                        runs from the first to the last '"' of the line
 *   {                                    its argument block, then one line per argument:
 *   <expression>, <ItemType>[(<list>)] -- <argument number>
 *   }
 *
 * The argument block is optional (no block: no argument). Argument numbers
 * run from 10 (1..9 are tracefmt's prefix variables) up to 99 without gap or
 * repeat, in any order; the payload holds the arguments in number order. The
 * expression may hold commas: the type is found at the last ", Item". A (GUID, number) met twice keeps the first
 * definition. Item types: those of WPP's default type table (defaultwpp.ini):
 *
 *   ItemString ItemRString          NUL-terminated 8-bit string
 *   ItemWString ItemRWString        NUL-terminated UTF-16LE string
 *   ItemPString                     u16 byte count + 8-bit chars (ANSI_STRING, CSTRING)
 *   ItemPWString                    u16 byte count + UTF-16LE chars (UNICODE_STRING)
 *   ItemChar ItemUChar              1 byte          ItemShort ItemUShort   2 bytes
 *   ItemLong ItemULong              4 bytes         ItemLongLong ItemULongLong 8 bytes
 *   ItemLongLongX ItemLongLongXX ItemLongLongO, ItemULongX ItemULongXX ...  hex forms
 *   ItemPtr                         the record's pointer size (4 or 8)
 *   ItemDouble                      8-byte IEEE double
 *   ItemNTSTATUS ItemWINERROR ItemHRESULT ItemNDIS_STATUS ItemNDIS_OID  4 bytes
 *   ItemGuid ItemCLSID ItemIID ItemLIBID                                 16 bytes
 *   ItemIPAddr                      4 bytes, network order
 *   ItemPort                        2 bytes, network order
 *   ItemTimestamp ItemWaitTime      8-byte FILETIME
 *   ItemTimeDelta                   8 bytes, 100-ns units
 *   ItemListByte/Short/Long(a,b,..) 1/2/4 bytes: value i names the i-th entry
 *                                   (an entry "name=value" moves the count)
 *   ItemSetByte/Short/Long(a,b,..)  1/2/4 bytes: bit i names the i-th entry
 *   ItemEnum(Name) ItemFlagsEnum(Name)  4 bytes, shown as a number (the enum's
 *                                   names live in the PDB, not in the TMF)
 *   ItemSid                         a SID (8 + 4 * its sub-authority count bytes)
 *   ItemHexDump (ItemHEXDump)       u16 byte count + bytes
 *   ItemChar4                       4 bytes shown as 4 characters
 * A type not in this table makes its message undecodable (an error names
 * the argument and the type); the rest of the file still loads.
 *
 * Formatting (etw_wpp_format): the format string with
 *   %0            tracefmt's default prefix "[%9!d!]%8!04X!.%3!04X!::%4!s! [%1!s!]":
 *                 [cpu]pid.tid::MM/DD/YYYY-HH:MM:SS.mmm [component] (time in UTC)
 *   %1 .. %9      the prefix variables: 1 component, 2 message tag, 3 tid,
 *                 4 time, 5 kernel time, 6 user time, 7 sequence (0: not kept),
 *                 8 pid, 9 cpu
 *   %N!fmt!       argument N (10..99) with a printf conversion
 *                 ([-+ #0][width][.prec][h|l|ll|I|I32|I64|w|z]d i u x X o c p s S);
 *                 's' gives the type's own text: strings, NTSTATUS / Win32 error /
 *                 HRESULT names where the name is public (else 0x%08X),
 *                 dotted IPv4, port numbers, GUIDs, times, list and set names
 *   %!FUNC! %!FILE! %!LINE! %!LEVEL! %!FLAGS! %!COMPNAME!
 *                 the message's function, source file, line (from the tag's
 *                 _c<line> / _cpp<line> suffix), level, flags, component
 *   %% %n %t      '%', a line break, a tab
 * The other %!NAME! specifiers of WPP sources (%!STATUS!, %!HRESULT!,
 * %!IPADDR!, %!bool!, %!irql!, ...) reach the TMF as %N!s! arguments of the
 * matching Item type and are shown as that type says.
 */
#ifndef ETWDECODE_ETW_WPP_H
#define ETWDECODE_ETW_WPP_H

#include <stddef.h>
#include <stdint.h>

#include "etw_event.h"
#include "etw_status.h"
#include "etw_types.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Bounds (hostile TMF text). */
#define ETW_WPP_MAX_TEXT (64u << 20)    /* bytes of one TMF text */
#define ETW_WPP_MAX_MESSAGES (1u << 20) /* distinct messages of a set */
#define ETW_WPP_MAX_LIST 1024u          /* entries of one ItemList/ItemSet */
#define ETW_WPP_FIRST_ARG 10u
#define ETW_WPP_LAST_ARG 99u
#define ETW_WPP_MAX_FILES 100000u       /* files of one directory */

/* One argument of a message. */
typedef struct etw_wpp_arg {
    const char *name;      /* the expression of the argument block ("status") */
    const char *type_name; /* as written, without its list ("ItemNTSTATUS") */
    uint16_t type;         /* etw_wpp_type (src/wpp/etw_wpp_types.h); 0: unknown */
    uint16_t number;       /* 10.. */
    uint32_t list_count;   /* ItemList / ItemSet entries */
    const char *const *list_names;
    const uint64_t *list_values;
} etw_wpp_arg;

/* One message of a TMF. Strings are UTF-8 (as in the file), never NULL
 * ("" when absent). */
typedef struct etw_wpp_message {
    etw_guid guid;
    uint16_t number;
    uint16_t argc;          /* arguments, sorted by number (10, 11, ...) */
    const etw_wpp_arg *args;
    const char *tag;        /* the #typev name ("Bluetooth_Context_c312") */
    const char *component;  /* the GUID line's name ("BthPS3") */
    const char *file;       /* SRC= ("Bluetooth.Context.c") */
    const char *func;       /* FUNC= */
    const char *level;      /* LEVEL= ("TRACE_LEVEL_VERBOSE") */
    const char *flags;      /* FLAGS= ("TRACE_BTH") */
    const char *format;     /* the format string, without its quotes */
    const char *origin;     /* the file (or origin name) it came from */
    uint32_t line;          /* from the tag's _c<line> suffix; 0 when none */
    uint16_t unknown_arg;   /* index + 1 of the first argument of an unknown type; 0: none */
} etw_wpp_message;

typedef struct etw_wpp_set etw_wpp_set;

etw_status etw_wpp_set_new(etw_wpp_set **out, const etw_allocator *alloc);
void etw_wpp_set_free(etw_wpp_set *s);

/* Add the messages of one TMF text (len bytes, no NUL needed); origin names
 * it in error messages. A text that breaks the grammar adds nothing and
 * returns ETW_E_CORRUPT (ETW_E_LIMIT for a bound), etw_wpp_set_error()
 * then says "<origin>:<line>: <reason>". */
etw_status etw_wpp_add_tmf_text(etw_wpp_set *s, const char *text, size_t len, const char *origin);

/* A TMF file, or every file of a directory (not its subdirectories) in name
 * order, whatever the names (the usual name is "<message GUID>.tmf"; files
 * that are not TMF text, e.g. a LICENSE, are skipped when they hold no GUID
 * or #typev line). *added (may be NULL) counts the distinct messages that
 * are new. ETW_E_IO when the path cannot be read; the first file error
 * otherwise (the other files still load). */
etw_status etw_wpp_add_tmf_path(etw_wpp_set *s, const char *path, uint32_t *added);

/* A PDB file (recognised by its MSF 7.00 magic), given as path or met in a
 * directory above, gives the TMF messages tracepdb would extract: its
 * S_ANNOTATION records whose first string is "TMF:" (etw_pdb.h).
 *
 * etw_wpp_add_symbol_store: the TMF messages of every PDB in the local
 * folders of a symbol store (etw_symstore_find's syntax: DIR, srv*DIR*URL,
 * ...; URLs are never used), each laid out as DIR/name.pdb/<GUID><age>/
 * name.pdb or flat (folders at most two levels below DIR; other files are
 * skipped). Each PDB is read again for its annotations only: the cost is
 * that of the store's DBI and module streams. *added as above; the first
 * folder or PDB error otherwise (the others still load). */
etw_status etw_wpp_add_symbol_store(etw_wpp_set *s, const char *store, uint32_t *added);

/* The last error's text ("" when none). */
const char *etw_wpp_set_error(const etw_wpp_set *s);

/* Distinct (GUID, number) messages held. */
uint32_t etw_wpp_count(const etw_wpp_set *s);

/* A message by key; NULL when absent. Valid until etw_wpp_set_free(). */
const etw_wpp_message *etw_wpp_find(const etw_wpp_set *s, const etw_guid *guid, uint16_t number);

/* The formatted text of ev (a MESSAGE record of m) into out (cap bytes, NUL
 * terminated, cut at a whole character when too small: ETW_E_LIMIT);
 * *len (may be NULL) gets its length. ETW_E_TRUNCATED / ETW_E_CORRUPT /
 * ETW_E_UNSUPPORTED when the payload does not fit the arguments: why (may
 * be NULL, why_cap bytes) then names the message and argument. */
etw_status etw_wpp_format(const etw_wpp_message *m, const etw_event *ev, char *out, size_t cap, size_t *len,
                          char *why, size_t why_cap);

#ifdef __cplusplus
}
#endif
#endif
