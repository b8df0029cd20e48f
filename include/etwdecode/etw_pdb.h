/* etw_pdb.h - function names from a native PDB file, and finding the PDB of
 * an image in a local symbol store.
 *
 * A PDB (MSF 7.00 "program database" written by MSVC's and LLVM's linkers)
 * is read once at open into one array of symbols sorted by RVA; nothing of
 * the file is kept. What is read (docs/symbols.md):
 *
 *   - stream 1, the PDB info stream: GUID and age (the key a symbol server
 *     files the PDB under, and what an image's RSDS debug record, or the
 *     ETW ImageID/DbgID_RSDS event, names);
 *   - stream 3, the DBI stream: its age, the module list, and the optional
 *     debug header's section header stream (IMAGE_SECTION_HEADER array), which
 *     turns a symbol's section:offset into an RVA; its symbol record stream;
 *   - the public symbols (S_PUB32 in the symbol record stream): every
 *     external name the linker saw, decorated as the linker saw it
 *     ("?main@@YAHXZ", "_printf", "@__security_check_cookie@4"), size unknown;
 *   - each module's symbol stream: the procedures (S_GPROC32, S_LPROC32 and
 *     their _ID and _DPC variants), with their code size and the name the
 *     compiler gave them ("main", "std::vector<int>::push_back"), static
 *     functions included;
 *   - on request only (etw_pdb_annotations_*, below): each module's WPP
 *     trace message formats (S_ANNOTATION records tagged "TMF:"/"TMC:").
 *
 * Names are shown as the PDB holds them: no demangling (as PerfView and WPA
 * show a decorated public name when there is no procedure). They are UTF-8;
 * a byte that does not make valid UTF-8 (an old PDB's ANSI name) is shown
 * as '?'.
 *
 * Every input is hostile: page numbers outside the file, a page used twice,
 * a directory or stream larger than the file, counts that do not fit their
 * stream, records that run past their stream are ETW_E_CORRUPT or
 * ETW_E_TRUNCATED with a reason (etw_pdb_options.reason). Memory is
 * proportional to the file (one stream at a time) and to the symbol count;
 * at most ETW_PDB_MAX_SYMBOLS symbols (docs/limits.md).
 *
 * A PDB object is read-only after open and may be shared by threads.
 */
#ifndef ETWDECODE_ETW_PDB_H
#define ETWDECODE_ETW_PDB_H

#include <stddef.h>
#include <stdint.h>

#include "etw_status.h"
#include "etw_types.h"

#ifdef __cplusplus
extern "C" {
#endif

/* More symbols than this (publics and procedures together) is ETW_E_LIMIT:
 * 16,777,216, 28 bytes each at most (470 MiB). The largest PDBs known hold a
 * few million (a browser's). */
#define ETW_PDB_MAX_SYMBOLS ((size_t)1 << 24)

typedef struct etw_pdb etw_pdb;

typedef struct etw_pdb_options {
    const etw_allocator *allocator; /* NULL: malloc/free */
    /* When not NULL, an open that fails sets *reason to a static English
     * text saying what was wrong ("MSF stream page out of range"), or NULL
     * when there is nothing more to say than the status. */
    const char **reason;
} etw_pdb_options;

/* Open the PDB at path (read with pread or stdio: only the streams needed
 * are read, one at a time). opt may be NULL. ETW_E_IO when the file cannot
 * be opened; ETW_E_CORRUPT / ETW_E_TRUNCATED for a file that is not a PDB or
 * is damaged; ETW_E_UNSUPPORTED for a .NET portable PDB (ECMA-335 metadata,
 * no native symbols) or a DBI stream older than VC 4.1; ETW_E_NOMEM;
 * ETW_E_LIMIT past ETW_PDB_MAX_SYMBOLS. A .NET "Windows" PDB (MSF, managed
 * code) opens with its identity and no symbols: its methods have tokens,
 * not RVAs. */
etw_status etw_pdb_open_file(etw_pdb **out, const char *path, const etw_pdb_options *opt);

/* The same from size bytes in memory. The bytes are read during the call
 * only (neither copied whole nor kept): the caller may free them when it
 * returns. */
etw_status etw_pdb_open_mem(etw_pdb **out, const uint8_t *data, size_t size, const etw_pdb_options *opt);

void etw_pdb_free(etw_pdb *p);

/* The PDB's GUID and age, as a symbol server files it: the GUID of the info
 * stream; the age of the DBI stream, or the info stream's when there is no
 * DBI stream (the DBI age is the one images record; samply does the same).
 * Either pointer may be NULL. */
void etw_pdb_identity(const etw_pdb *p, etw_guid *guid, uint32_t *age);

typedef enum etw_pdb_symbol_kind {
    ETW_PDB_PUBLIC = 1,   /* S_PUB32: decorated linker name, size unknown */
    ETW_PDB_PROCEDURE = 2 /* S_*PROC32*: compiler name, with its code size */
} etw_pdb_symbol_kind;

typedef struct etw_pdb_symbol {
    const char *name; /* UTF-8, NUL-terminated, borrowed from the pdb object */
    size_t name_len;  /* bytes, without the NUL */
    uint32_t rva;     /* relative to the image base */
    uint32_t size;    /* bytes of code; 0 when unknown (publics) */
    etw_pdb_symbol_kind kind;
} etw_pdb_symbol;

/* Symbols whose section:offset maps to an RVA (publics of section 0, the
 * absolute ones, and symbols of sections the PDB does not list are left
 * out). Both kinds; a function usually has a public and a procedure at the
 * same RVA. */
size_t etw_pdb_symbol_count(const etw_pdb *p);

/* Symbol i, sorted by RVA (at one RVA: procedures first, then by name).
 * ETW_E_NOT_FOUND when i >= the count. */
etw_status etw_pdb_symbol_at(const etw_pdb *p, size_t i, etw_pdb_symbol *out);

/* The function that contains rva: the procedure starting last at or below
 * rva, when its [rva, rva + size) contains it; else the public nearest at or
 * below rva in the same section (when the PDB lists sections). *offset (may
 * be NULL) is rva minus the symbol's RVA. ETW_E_NOT_FOUND otherwise.
 * O(log n). */
etw_status etw_pdb_lookup(const etw_pdb *p, uint32_t rva, etw_pdb_symbol *out, uint32_t *offset);

/* ---- WPP trace message formats (TMF) kept in a PDB ----
 *
 * A driver built with WPP software tracing carries, for each trace call, an
 * S_ANNOTATION record (0x1019) in its module's symbol stream: u32 offset,
 * u16 section (where the call is), u16 string count, then that many
 * NUL-terminated strings (then padding to 4 bytes). WPP's first string is
 * the tag "TMF:" or "TMC:" (microsoft/pdb-rs docs/codeview/symbols/
 * s_annotation.md; Microsoft's "Tracepdb" documentation). After "TMF:" the
 * strings are the lines of one message's trace message format, as tracepdb
 * writes them to a .tmf file:
 *
 *   e4b27b5e-24d0-369f-a4b5-23228e160bd2 BthPS3 // SRC=Bluetooth.Context.c MJ= MN=
 *   #typev Bluetooth.Context_c149 12 "%0 [%!FUNC!] <-- Exit <status=%10!s!>" // ...
 *   {
 *   status, ItemNTSTATUS -- 10
 *   }
 *
 * After "TMC:" they describe a WPP control GUID (WPP_DEFINE_CONTROL_GUID:
 * its GUID, name and flag names); they are handed over as they are, not
 * interpreted here.
 *
 * Nothing of this is kept by etw_pdb_open_*: the symbolization path does not
 * grow. etw_pdb_annotations_* read the file again (the DBI module list and
 * each module's symbol stream, one stream at a time) and hand each TMF/TMC
 * annotation to a callback. Other annotations (any other first string) are
 * skipped. Every S_ANNOTATION is checked, whatever its tag: a record shorter
 * than its fixed part, a string count larger than the record, a string
 * without its NUL inside the record are ETW_E_CORRUPT with a reason, like a
 * record running past its stream. Memory: one module stream, plus the
 * current record's strings twice and a pointer to each (under 1 MiB: a
 * record is at most 65,535 bytes). */

typedef enum etw_pdb_annotation_kind {
    ETW_PDB_TMF = 1, /* first string "TMF:": one trace message's format */
    ETW_PDB_TMC = 2  /* first string "TMC:": a control GUID and its flag names */
} etw_pdb_annotation_kind;

typedef struct etw_pdb_annotation {
    etw_pdb_annotation_kind kind;
    uint32_t module;  /* the module's index in the DBI module list */
    /* the record's section:offset as stored: where the trace call is
     * (section 0: none) */
    uint32_t offset;
    uint16_t section;
    /* The strings after the tag ("TMF:"/"TMC:" itself is not among them),
     * each NUL-terminated. A byte that does not make valid UTF-8 is given as
     * '?', a CR or LF inside a string as a space (so that each string stays
     * one line of text). */
    size_t count;
    const char *const *strings;
    /* The same strings as one text: each followed by '\n', NUL-terminated
     * (text_len bytes without the NUL): for "TMF:" the text of a .tmf file
     * holding this one message, ready for a TMF parser (the tag line is not
     * in it). count 0: "". */
    const char *text;
    size_t text_len;
} etw_pdb_annotation;

/* Called for each TMF/TMC annotation, in module order, then record order.
 * a and everything it points to are valid during the call only. A status
 * other than ETW_OK stops the walk: etw_pdb_annotations_* return it. */
typedef etw_status (*etw_pdb_annotation_fn)(void *ctx, const etw_pdb_annotation *a);

/* Walk the TMF/TMC annotations of the PDB at path (or in size bytes of
 * memory, read during the call only). opt may be NULL (its reason works as
 * for etw_pdb_open_*). ETW_OK after the last one (a PDB without any, or
 * without a DBI stream, is ETW_OK with no call); ETW_E_IO, ETW_E_CORRUPT,
 * ETW_E_TRUNCATED, ETW_E_UNSUPPORTED, ETW_E_NOMEM as for etw_pdb_open_*;
 * ETW_E_INVALID_ARG when fn is NULL. The annotations seen before an error
 * were already handed to fn. */
etw_status etw_pdb_annotations_file(const char *path, const etw_pdb_options *opt, etw_pdb_annotation_fn fn,
                                    void *ctx);
etw_status etw_pdb_annotations_mem(const uint8_t *data, size_t size, const etw_pdb_options *opt,
                                   etw_pdb_annotation_fn fn, void *ctx);

/* The path of a PDB with this GUID and age in a local symbol store.
 *
 * pdb_name is the PDB's file name; a path (as an image's RSDS record holds,
 * "C:\src\app\Release\app.pdb") is cut to its last component, either slash.
 * store is one or more entries separated by ';', each:
 *   DIR               a folder laid out as a symbol server (cache):
 *                     DIR/<name>/<GUID><AGE>/<name>, where GUID is 32
 *                     upper-case hex digits without dashes (Data1, Data2,
 *                     Data3 as numbers, then the 8 bytes of Data4) and AGE
 *                     the age in upper-case hex without leading zeros;
 *                     else DIR/<name> itself (a flat folder) when its own
 *                     GUID and age are these;
 *   srv*DIR, srv*DIR*URL..., symsrv*DLL*DIR*URL..., cache*DIR
 *                     the same with DIR (upper or lower case keywords). URLs
 *                     are never used: nothing is downloaded. An entry with
 *                     no local folder (srv*URL) is skipped.
 * The first match is written into path (n bytes, NUL-terminated): ETW_OK.
 * ETW_E_NOT_FOUND when no entry has it; ETW_E_SMALL_BUFFER when the match
 * does not fit in n bytes; ETW_E_INVALID_ARG for NULL arguments. In each
 * folder the name is tried as given, then in lower case (Microsoft's symbol
 * server files names in lower case; on a case-sensitive file system the
 * store's spelling must match one of the two). */
etw_status etw_symstore_find(const char *store, const char *pdb_name, const etw_guid *guid, uint32_t age,
                             char *path, size_t n);

/* Each local folder of a store (the syntax above), in order: fn gets the
 * folder's text (dir, len bytes, not NUL-terminated). A status other than
 * ETW_E_NOT_FOUND from fn stops the walk and is returned; ETW_E_NOT_FOUND
 * when every folder was given (or there is none); ETW_E_INVALID_ARG for
 * NULL arguments. */
typedef etw_status (*etw_symstore_folder_fn)(void *ctx, const char *dir, size_t len);
etw_status etw_symstore_folders(const char *store, etw_symstore_folder_fn fn, void *ctx);

#ifdef __cplusplus
}
#endif
#endif
