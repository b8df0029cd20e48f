/* etw_xpress.h - plain LZ77 "Xpress" decompression (MS-XCA 2.3/2.4).
 *
 * ETL buffers whose header flags carry the compressed bit hold their payload
 * in the Plain LZ77 variant of the Xpress Compression Algorithm, the one
 * behind COMPRESSION_FORMAT_XPRESS (3). This is neither LZ77+Huffman
 * (COMPRESSION_FORMAT_XPRESS_HUFF) nor LZNT1.
 *
 * The stream does not record its uncompressed size, so the caller bounds the
 * output; decoding stops at the end of the input or when the output is full.
 * No allocation, no global state: the function is reentrant.
 */
#ifndef ETW_XPRESS_H
#define ETW_XPRESS_H

#include <stddef.h>
#include <stdint.h>

#include "etwdecode/etw_status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Decompress plain LZ77 Xpress data in[0..in_len) into out[0..out_cap).
 * Stops at the end of the input or when out is full (ETL buffers do not store
 * the uncompressed size; the caller bounds it). *out_len = bytes produced.
 * Returns ETW_OK; ETW_E_DECOMPRESS for a match that refers before the start
 * of the output or a truncated token/length; ETW_E_SMALL_BUFFER when the data
 * would produce more than out_cap bytes (out then holds the first out_cap
 * bytes and *out_len = out_cap); ETW_E_INVALID_ARG when out_len is NULL, or
 * in / out is NULL with a nonzero length.
 * On an error, *out_len still counts the bytes decoded before it. Nothing is
 * ever read at or past in[in_len], nor written at or past out[out_cap]. */
etw_status etw_xpress_decompress(const uint8_t *in, size_t in_len,
                                 uint8_t *out, size_t out_cap, size_t *out_len);

#ifdef __cplusplus
}
#endif
#endif
