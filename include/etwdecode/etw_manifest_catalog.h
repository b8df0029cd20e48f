/* etw_manifest_catalog.h - which manifest file declares which provider, so a
 * folder of hundreds of manifests is loaded lazily.
 *
 * A catalog is built from manifest paths (files and directories, in the
 * order given). A directory is searched like etw_decoder_add_manifest
 * searches it: every *.man / *.xml file of it and of its subdirectories, in
 * name order, symbolic links to directories not followed, at most 16 levels.
 * Each file is not parsed: its bytes are scanned for <provider> start tags
 * (any namespace prefix: <win:provider>) and their guid attribute (quoted
 * with ' or ", with or without braces). UTF-8 files and UTF-16LE/BE files
 * with a byte order mark are scanned; comments (<!-- -->) and CDATA
 * sections are skipped, so a commented-out provider is not cataloged.
 *
 * A decoder given the catalog (etw_decoder_add_manifest_catalog) loads a
 * file only when the trace has an event of a provider the file declares.
 * Files named directly (not found in a directory) are loaded at once, as
 * etw_decoder_add_manifest would.
 *
 * Precedence: as if every file were loaded in catalog order, a provider
 * declared by several files is the one of the LAST file (as "a provider
 * loaded twice keeps the later file" of etw_decoder_add_manifest). Files
 * that declare a provider in common are loaded together, in catalog order,
 * so a lazy load gives what loading everything would have given.
 *
 * Building is single-threaded. Once built, a catalog is read-only: any
 * number of decoders, on any threads, may use it at once; it must outlive
 * them. Limits (docs/limits.md): files larger than
 * ETW_CATALOG_MAX_FILE_BYTES are not cataloged (reported), at most
 * ETW_CATALOG_MAX_FILE_PROVIDERS providers per file and
 * ETW_CATALOG_MAX_ENTRIES files or providers per catalog.
 */
#ifndef ETWDECODE_ETW_MANIFEST_CATALOG_H
#define ETWDECODE_ETW_MANIFEST_CATALOG_H

#include <stddef.h>
#include <stdint.h>

#include "etw_reader.h"
#include "etw_status.h"
#include "etw_types.h"

#ifdef __cplusplus
extern "C" {
#endif

#define ETW_CATALOG_MAX_FILE_BYTES ((uint64_t)64 << 20)
#define ETW_CATALOG_MAX_FILE_PROVIDERS 4096u
#define ETW_CATALOG_MAX_ENTRIES (1u << 20)

typedef struct etw_manifest_catalog etw_manifest_catalog;

/* What a catalog file is: a folder's *.man and *.xml files are manifests,
 * its *.dll, *.exe and *.sys files PE images whose WEVT_TEMPLATE declares
 * the providers (a file's first bytes decide: "MZ", "CRIM", else XML). */
typedef enum etw_catalog_kind {
    ETW_CATALOG_XML = 1, /* an instrumentation or component manifest */
    ETW_CATALOG_PE = 2   /* a PE image (*.dll, *.exe, *.sys) with a WEVT_TEMPLATE, or a bare
                          * WEVT_TEMPLATE blob */
} etw_catalog_kind;

typedef struct etw_manifest_catalog_options {
    const etw_allocator *allocator; /* NULL: malloc/free */
    /* Problems met while building, each naming its file: an unreadable
     * file, a file over a limit, a file that declares no provider, a guid
     * attribute that is not a GUID, a provider declared by two files.
     * Status ETW_OK for a warning. file_offset is the line (0: none).
     * NULL: only counted. */
    etw_diag_fn on_diag;
    void *diag_ctx;
} etw_manifest_catalog_options;

etw_status etw_manifest_catalog_new(etw_manifest_catalog **out,
                                    const etw_manifest_catalog_options *opt);
void etw_manifest_catalog_free(etw_manifest_catalog *c);

/* Add a manifest file or directory after those added before (it ranks
 * after them). ETW_E_IO when path itself cannot be read (reported); a file
 * inside a directory that cannot be read or is over a limit is reported and
 * skipped (not an error). ETW_E_LIMIT when the catalog is full. *files (may
 * be NULL) receives the number of files cataloged by this call. */
etw_status etw_manifest_catalog_add_path(etw_manifest_catalog *c, const char *path, uint32_t *files);

/* Counts: files cataloged, distinct provider GUIDs, provider GUIDs declared
 * by more than one file, diagnostics reported while building. */
uint32_t etw_manifest_catalog_file_count(const etw_manifest_catalog *c);
uint32_t etw_manifest_catalog_provider_count(const etw_manifest_catalog *c);
uint32_t etw_manifest_catalog_duplicate_count(const etw_manifest_catalog *c);
uint64_t etw_manifest_catalog_problem_count(const etw_manifest_catalog *c);

/* The file whose provider GUID wins (the last one declaring it), or NULL;
 * *kind (may be NULL) receives its kind. Valid until the catalog is freed. */
const char *etw_manifest_catalog_lookup(const etw_manifest_catalog *c, const etw_guid *provider,
                                        etw_catalog_kind *kind);

/* The scanner alone: the provider GUIDs that the manifest bytes
 * data[0..len) declare, in document order, into out[0..max). *count
 * receives how many were stored, *total (may be NULL) how many were found
 * (more than max: the rest were not stored), *bad (may be NULL) how many
 * guid attributes were not GUIDs. ETW_E_TRUNCATED when the bytes end
 * inside a tag, comment or attribute (the GUIDs found before it are
 * given); ETW_E_LIMIT when len exceeds ETW_CATALOG_MAX_FILE_BYTES. data is
 * not changed. */
etw_status etw_manifest_scan_providers(const void *data, size_t len, etw_guid *out, size_t max,
                                       size_t *count, size_t *total, size_t *bad);

#ifdef __cplusplus
}
#endif
#endif
