/* etw_wevt.h - WEVT_TEMPLATE resources (compiled instrumentation manifests)
 * as a schema source.
 *
 * mc.exe compiles an instrumentation manifest into a binary "CRIM" blob that
 * the linker stores in the provider's DLL/EXE/SYS as the resource of type
 * "WEVT_TEMPLATE", and the manifest's strings into the RT_MESSAGETABLE
 * resource (of the same file, or of <lang>/<file>.mui beside it). tdh.dll
 * reads schemas from there; this reader does the same offline.
 *
 * The blob (all little-endian; offsets are from the start of the blob):
 *   CRIM  {magic "CRIM", u32 size, u16 major, u16 minor, u32 providers}
 *         then per provider {GUID, u32 offset of its WEVT}
 *   WEVT  {magic, u32 size, u32 message id, u32 n} then n {u32 kind,
 *         u32 offset} naming the provider's elements: CHAN, LEVL, TASK,
 *         OPCO, KEYW, EVNT, MAPS, TTBL, and in v5 blobs PRVA (provider
 *         attributes: its name), EVTA (event names), FLTR, QTAB, ...
 *   Each element is {magic, u32 size, u32 count, ...entries}; names are
 *   counted UTF-16 strings {u32 size of the whole, chars} except PRVA and
 *   EVTA strings, which are NUL-terminated UTF-16 without a size.
 * Elements are reached by the offsets, so kinds this reader does not know
 * are skipped by construction. Every offset, size and count is checked
 * against the blob; entries that do not fit are reported and skipped.
 *
 * The blob is read into the same parse records as an XML manifest and
 * compiled by the same code (etw_manifest_compile.c), so a blob and its
 * .man give the same schemas. Facts: libfwevt's "Windows Event manifest
 * binary format", event-trace-kit's Crimson block types (layouts only).
 */
#ifndef ETW_WEVT_H
#define ETW_WEVT_H

#include <stddef.h>
#include <stdint.h>

#include "../source/etw_manifest.h"
#include "etw_msgtable.h"

/* Load every provider of the CRIM blob[0..len) into m. msgs (may be NULL)
 * gives the message table the blob's message ids refer to: task, opcode,
 * level, keyword, channel and map display names, event messages. origin
 * names the blob in messages ("file.dll" or "file.dll!WEVT_TEMPLATE");
 * positions in messages are byte offsets into the blob. A blob whose
 * header does not fit is ETW_E_CORRUPT and loads nothing. *providers (may
 * be NULL) receives the number loaded. */
etw_status etw_wevt_load_blob(etw_manifest_set *m, const uint8_t *blob, size_t len, const etw_msgtable *msgs,
                              const char *origin, uint32_t *providers);

/* Load the WEVT_TEMPLATE of the PE image data[0..len) (path names it and
 * locates <dir>/<lang>/<file>.mui when the image has no message table of
 * its own; lang NULL: "en-US"). A PE without WEVT_TEMPLATE is reported
 * (saying when it is a language-neutral file whose resources live in a
 * .mui) and is ETW_E_NOT_FOUND. */
etw_status etw_wevt_load_pe(etw_manifest_set *m, const uint8_t *data, size_t len, const char *path,
                            const char *lang, uint32_t *providers);

/* 1 when data starts like a CRIM blob / a PE image ("MZ"). */
int etw_wevt_is_blob(const uint8_t *data, size_t len);
int etw_wevt_is_pe(const uint8_t *data, size_t len);

/* The provider GUIDs of a CRIM blob, for indexing without a full load:
 * fn(ctx, guid) for each; ETW_E_CORRUPT when the header does not fit. */
typedef void (*etw_wevt_guid_fn)(void *ctx, const etw_guid *provider);
etw_status etw_wevt_blob_providers(const uint8_t *blob, size_t len, etw_wevt_guid_fn fn, void *ctx);

#endif
