/* etw_lznt1.h - LZNT1 decompression (Microsoft [MS-XCA] section 2.5), for the
 * compressed payloads some events carry (KernelTraceControl WinSat's XML).
 *
 * The stream is a sequence of chunks, each a u16 header then its body:
 * header bit 15 set = compressed body, bits 14..12 = 3 (signature), bits
 * 11..0 = body size - 1; a zero header or the end of the input ends the
 * stream. An uncompressed body is copied; a compressed one is groups of a
 * flag byte and eight tokens (bit clear: a literal byte; set: a u16 back
 * reference whose split between distance and length bits depends on how
 * many bytes the chunk has produced). A chunk produces at most 4096 bytes,
 * and references never leave their chunk. */
#ifndef ETW_LZNT1_H
#define ETW_LZNT1_H

#include <stddef.h>
#include <stdint.h>

#include "etwdecode/etw_status.h"

/* The most bytes one chunk produces ([MS-XCA] 2.5). */
#define ETW_LZNT1_CHUNK 4096u

/* Receives each chunk's output (n <= ETW_LZNT1_CHUNK bytes, valid only
 * during the call); a status other than ETW_OK stops the walk. */
typedef etw_status (*etw_lznt1_emit)(void *ctx, const uint8_t *p, size_t n);

/* Decompress src[0..n), giving each chunk's output to emit (NULL: only
 * check and count). *out_total (may be NULL) gets the bytes produced.
 * ETW_E_CORRUPT: a bad signature, a body running past the input, a
 * reference before the chunk's start or past its 4096 bytes; ETW_E_LIMIT:
 * more than max_out bytes would be produced (nothing past max_out is
 * given to emit). */
etw_status etw_lznt1_decompress(const uint8_t *src, size_t n, size_t max_out, etw_lznt1_emit emit,
                                void *ctx, size_t *out_total);

#endif
