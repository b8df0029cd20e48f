/* etw_msf.h - the MSF container of a PDB file (multi-stream file).
 *
 * A PDB is a file of fixed-size pages ("blocks") holding numbered streams.
 * Page 0 starts with the superblock: the 32-byte magic
 * "Microsoft C/C++ MSF 7.00\r\n\x1a" "DS\0\0\0", then six little-endian u32:
 * block size, free block map page (1 or 2), number of blocks, number of
 * bytes of the stream directory, (unused), block map address. The block map
 * address is a page holding the page numbers of the stream directory; the
 * directory is: u32 stream count, u32 size of each stream (0xFFFFFFFF: nil
 * stream), then the page numbers of each stream in order. Facts: LLVM's
 * "The MSF File Format" (llvm.org/docs/PDB/MsfFile.html) and
 * microsoft-pdb's PDB/msf/msf.cpp.
 *
 * Every page number is checked against the block count, the block count
 * against the file's size; a page used twice (in one stream or two: MSF never
 * shares pages), page 0 (the superblock) in a stream, a directory that does
 * not hold the page lists its sizes need, are ETW_E_CORRUPT with a reason. So
 * the streams together are never larger than the file, and reading all of
 * them costs at most the file's size.
 */
#ifndef ETW_MSF_H
#define ETW_MSF_H

#include <stddef.h>
#include <stdint.h>

#include "etwdecode/etw_reader.h"
#include "etwdecode/etw_status.h"
#include "etwdecode/etw_types.h"

#define ETW_MSF_NIL_STREAM 0xFFFFFFFFu

typedef struct etw_msf {
    etw_allocator al;
    etw_input in;          /* borrowed: read_at, size, ctx */
    uint32_t block_size;
    uint32_t num_blocks;
    uint32_t num_streams;
    uint32_t *stream_size; /* num_streams; nil streams are 0 */
    uint32_t *stream_first;/* num_streams + 1: index of the first page in pages */
    uint32_t *pages;       /* every stream's pages, in stream order */
} etw_msf;

/* Read the superblock and the stream directory of in (which must outlive
 * m). On failure m owns nothing and *why (when not NULL) is a static
 * English reason. Statuses: ETW_E_CORRUPT (not an MSF 7.00 file, or a bad
 * field), ETW_E_UNSUPPORTED (a .NET portable PDB), ETW_E_TRUNCATED (the file is shorter than its blocks), ETW_E_IO,
 * ETW_E_NOMEM. */
etw_status etw_msf_open(etw_msf *m, const etw_allocator *a, const etw_input *in, const char **why);
void etw_msf_close(etw_msf *m);

/* Size of stream s in bytes; 0 for a nil stream or s out of range. */
uint32_t etw_msf_stream_size(const etw_msf *m, uint32_t s);

/* A copy of the first min(max_len, size) bytes of stream s, in memory from
 * m's allocator (free with etw_free(&m->al, *out); *out is never NULL on
 * ETW_OK, even for an empty stream). ETW_E_NOT_FOUND when s is out of range. */
etw_status etw_msf_read_stream(const etw_msf *m, uint32_t s, size_t max_len, uint8_t **out, size_t *len);

#endif
