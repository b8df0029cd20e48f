/* etw_unpack.h - the traces inside a compressed file or an archive (a
 * PerfView .etl.zip, an .etl.gz / .etl.zst / .etl.xz / .etl.bz2),
 * decompressed into memory with libarchive.
 *
 * Bounds (docs/limits.md): all entries of one input together decompress to
 * at most min(ETW_UNPACK_MAX, max(ETW_UNPACK_FLOOR, ETW_UNPACK_RATIO x the
 * input's compressed size)); past it the input is refused (ETW_E_LIMIT)
 * after at most that many bytes were produced. */
#ifndef ETW_UNPACK_H
#define ETW_UNPACK_H

#include <stddef.h>
#include <stdint.h>

#include "etwdecode/etw_status.h"
#include "etwdecode/etw_types.h"

/* Called once per trace found. inner: the entry's path in the archive, or
 * NULL for the content of a single compressed stream (.etl.gz). data (size
 * bytes, allocated with the allocator given) belongs to the callee from
 * then on, even when it fails. A status other than ETW_OK stops the walk
 * and is returned. */
typedef etw_status (*etw_unpack_fn)(void *ctx, const char *inner, uint8_t *data, size_t size);

/* Unpack the file at path (mem NULL) or the bytes mem[0..mem_size). Only
 * entries named *.etl (any case) are given from an archive; a single
 * compressed stream is given whatever its content. ETW_E_IO (errno set)
 * when the file cannot be opened, ETW_E_DECOMPRESS when the data does not
 * decompress (damaged, cut short, encrypted), ETW_E_LIMIT past the bound,
 * ETW_E_NOT_ETL when an archive holds no .etl entry, ETW_E_NOMEM,
 * ETW_E_UNSUPPORTED when libarchive is opened on demand (dlopen) and
 * cannot be. */
etw_status etw_unpack(const etw_allocator *a, const char *path, const void *mem, size_t mem_size,
                      etw_unpack_fn fn, void *ctx);

#endif
