/* etw_manifest_catalog.h - the library's side of the manifest catalog
 * (include/etwdecode/etw_manifest_catalog.h): what a decoder needs to load
 * a catalog's files lazily.
 *
 * Files are numbered 0..count-1 in catalog order (the order they would be
 * loaded in). Files that declare a provider GUID in common form one group
 * (transitively); a group is loaded as a whole, in file order, so that the
 * last file declaring a GUID wins as when everything is loaded.
 */
#ifndef ETW_MANIFEST_CATALOG_INTERNAL_H
#define ETW_MANIFEST_CATALOG_INTERNAL_H

#include <stdint.h>

#include "etwdecode/etw_manifest_catalog.h"

#define ETW_CATALOG_NONE UINT32_MAX

/* Number of files (as etw_manifest_catalog_file_count). */
uint32_t etw_catalog_count(const etw_manifest_catalog *c);

/* The file whose GUID wins, or ETW_CATALOG_NONE. */
uint32_t etw_catalog_find(const etw_manifest_catalog *c, const etw_guid *provider);

/* The first file of f's group, and the file after f in its group
 * (ETW_CATALOG_NONE after the last). */
uint32_t etw_catalog_group_first(const etw_manifest_catalog *c, uint32_t f);
uint32_t etw_catalog_group_next(const etw_manifest_catalog *c, uint32_t f);

/* The GUIDs file f declares (each once, in document order). */
const etw_guid *etw_catalog_file_guids(const etw_manifest_catalog *c, uint32_t f, size_t *n);

const char *etw_catalog_path(const etw_manifest_catalog *c, uint32_t f);
etw_catalog_kind etw_catalog_file_kind(const etw_manifest_catalog *c, uint32_t f);
/* 1 for a file named directly to etw_manifest_catalog_add_path (loaded
 * when the catalog is attached), 0 for one found in a directory. */
int etw_catalog_named(const etw_manifest_catalog *c, uint32_t f);

#endif
