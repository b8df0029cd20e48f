/* etw_buffer_index.h - where the buffers of an ETL file are (part of the
 * reader, etw_reader_state.h). Each buffer's BufferSize leads to the next
 * one when it is right; when it does not, the trace's own buffer size is
 * tried, then the next believable buffer header is searched for, so that a
 * damaged or cut file loses only what is damaged. The compressed buffers'
 * decompressed sizes are bounded by the file's size (a decompression bomb). */
#ifndef ETW_BUFFER_INDEX_H
#define ETW_BUFFER_INDEX_H

#include "etw_reader_state.h"

/* Fill r->bufs / r->nbufs from offset 0 (the log-file header was read), with
 * buffers_compressed, buffers_lost_flag, buffers_skipped and problems
 * counted in r->stats. ETW_E_NOT_ETL when no buffer is found. */
etw_status etw_buffer_index_build(etw_reader *r);

/* A BufferSize a buffer may have: a header's worth, at most r->max_buffer. */
int etw_buffer_size_ok(const etw_reader *r, uint32_t size);

/* The index entry of the buffer at off (header h) that takes `extent` bytes
 * of the file (its BufferSize when that is right, else what the chain
 * found). */
buf_entry etw_buffer_index_entry(const etw_reader *r, uint64_t off, const etw_buffer_header *h,
                                 uint64_t extent);

#endif
