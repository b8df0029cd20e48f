/* etw_utf16.h - UTF-16LE text to UTF-8, for the schema sources that read
 * names from bytes (merged TRACE_EVENT_INFO, WEVT_TEMPLATE blobs). */
#ifndef ETW_UTF16_H
#define ETW_UTF16_H

#include <stddef.h>
#include <stdint.h>

/* Convert `units` UTF-16LE code units at s to UTF-8 at dst (and a NUL);
 * unpaired surrogates become U+FFFD. dst NULL: only measure. Returns the
 * byte count without the NUL (at most 3 per unit). */
size_t etw_utf16_to_utf8(const uint8_t *s, size_t units, char *dst);

#endif
