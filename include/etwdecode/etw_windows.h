/* etw_windows.h - the providers of a Windows image, found without its
 * registry.
 *
 * On Windows, tdh.dll finds a provider's manifest through the registry
 * (WINEVT\Publishers\{GUID} -> ResourceFileName): the WEVT_TEMPLATE resource
 * of a DLL, EXE or SYS, with its names and messages in the file's message
 * table or in <lang>\<file>.mui beside it. An index of a Windows folder
 * answers the same question offline: which file holds provider {GUID}.
 *
 * etw_windows_index_open scans, in this order (the first file that holds a
 * GUID wins): Windows/System32, System32/drivers, SysWOW64, the .NET
 * Framework folders (Microsoft.NET/Framework64/<v>, Framework/<v>) and
 * WinSxS/<component>; the *.dll, *.exe and *.sys files of each folder
 * (names matched without regard to case, as on NTFS). For each file it
 * reads the resource directory in place (a mapping: only the pages it
 * touches are read) and the provider GUIDs of its WEVT_TEMPLATE.
 *
 * The index is kept in a cache file (by default
 * $XDG_CACHE_HOME/etwdecode/windows-<hash of the folder's real path>.idx,
 * else ~/.cache/etwdecode/...), one line per file with its size and
 * modification time: the next open over the same folder re-reads only the
 * files whose size or time changed, and lists the folders again.
 *
 * A decoder given the index (etw_decoder_add_windows) loads a provider's
 * file the first time an event of that provider needs a schema, into its
 * user manifests (below the manifests given with etw_decoder_add_manifest,
 * which keep their providers). An index is read-only once open and may be
 * shared by decoders on several threads.
 */
#ifndef ETWDECODE_ETW_WINDOWS_H
#define ETWDECODE_ETW_WINDOWS_H

#include <stdint.h>

#include "etw_reader.h"
#include "etw_status.h"
#include "etw_types.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct etw_windows_index etw_windows_index;

typedef struct etw_windows_options {
    const etw_allocator *allocator; /* NULL: malloc/free */
    /* The cache folder: NULL for the default ($XDG_CACHE_HOME/etwdecode,
     * else $HOME/.cache/etwdecode), "" for no cache file. */
    const char *cache_dir;
    /* Problems met (a damaged PE file, an unwritable cache): NULL to only
     * count them. A damaged file is skipped; the scan goes on. */
    etw_diag_fn on_diag;
    void *diag_ctx;
} etw_windows_options;

typedef struct etw_windows_stats {
    uint32_t files;         /* candidate files listed (*.dll, *.exe, *.sys) */
    uint32_t read;          /* of them, read this time (new or changed) */
    uint32_t cached;        /* of them, taken from the cache file */
    uint32_t with_manifest; /* files with a WEVT_TEMPLATE */
    uint32_t providers;     /* distinct provider GUIDs */
    uint32_t damaged;       /* files whose resources could not be read */
    int cache_written;      /* 1 when the cache file was (re)written */
} etw_windows_stats;

/* Index the Windows folder at dir: a mounted Windows volume (holding
 * Windows/System32) or a copy of its Windows folder (holding System32).
 * ETW_E_NOT_FOUND (reported) when dir has neither. */
etw_status etw_windows_index_open(etw_windows_index **out, const char *dir, const etw_windows_options *opt);
void etw_windows_index_free(etw_windows_index *x);

/* The file (a path under dir) that holds provider's manifest, or NULL. */
const char *etw_windows_index_find(const etw_windows_index *x, const etw_guid *provider);

void etw_windows_index_stats(const etw_windows_index *x, etw_windows_stats *out);

/* Where the cache file is (or would be), "" when none is kept. */
const char *etw_windows_index_cache_path(const etw_windows_index *x);

#ifdef __cplusplus
}
#endif

#endif
