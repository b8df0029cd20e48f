/* etw_msgtable.h - an RT_MESSAGETABLE resource, read in place.
 *
 * Layout (winnt.h MESSAGE_RESOURCE_DATA): u32 block count, then blocks of
 * {u32 low id, u32 high id, u32 offset of the first entry}; entries are
 * {u16 length (of the whole entry, header included), u16 flags (1: UTF-16,
 * 0: ANSI), text}, one per id from low to high, laid end to end. Every
 * offset and length is checked; lookups are a binary search over the
 * blocks (bounded by the resource's size) and a walk within one block.
 */
#ifndef ETW_MSGTABLE_H
#define ETW_MSGTABLE_H

#include <stddef.h>
#include <stdint.h>

#include "etwdecode/etw_status.h"

typedef struct etw_msgtable {
    const uint8_t *data;
    size_t len;
    uint32_t nblocks;
} etw_msgtable;

/* Open a message table resource. ETW_E_CORRUPT (why set) when its block
 * table does not fit. Blocks are checked again on each lookup. */
etw_status etw_msgtable_open(etw_msgtable *t, const uint8_t *data, size_t len, const char **why);

/* The text of message id as UTF-8 into buf[0..cap) (NUL-terminated,
 * *len set to its length without the NUL), with the trailing CR, LF and
 * NUL characters the message compiler appends removed. ANSI entries are
 * read as Windows-1252. Invalid UTF-16 becomes U+FFFD. ETW_E_NOT_FOUND
 * when no block holds id; ETW_E_CORRUPT when the entry does not fit;
 * ETW_E_LIMIT when the text does not fit buf (cut at a character). */
etw_status etw_msgtable_get(const etw_msgtable *t, uint32_t id, char *buf, size_t cap, size_t *len);

/* Number of messages (sum of the blocks' id ranges, bounded). */
uint32_t etw_msgtable_count(const etw_msgtable *t);

/* Walk every message: fn(ctx, id, utf8, len); return nonzero to stop. buf
 * is scratch of cap bytes for the text. */
typedef int (*etw_msgtable_fn)(void *ctx, uint32_t id, const char *text, size_t len);
etw_status etw_msgtable_foreach(const etw_msgtable *t, char *buf, size_t cap, etw_msgtable_fn fn, void *ctx);

#endif
