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
    int sorted; /* 1: blocks ascending and disjoint (binary search), 0: scan */
} etw_msgtable;

/* Open a message table resource. ETW_E_CORRUPT (why set) when its block
 * table does not fit, a block's ids run backwards (low > high) or its first
 * entry is past the end. Entries are checked on each lookup. */
etw_status etw_msgtable_open(etw_msgtable *t, const uint8_t *data, size_t len, const char **why);

/* The text of message id as UTF-8 into buf[0..cap) (NUL-terminated,
 * *len set to its length without the NUL), with the trailing CR, LF and
 * NUL characters the message compiler appends removed. ANSI entries are
 * read as Windows-1252. Invalid UTF-16 becomes U+FFFD. ETW_E_NOT_FOUND
 * when no block holds id; ETW_E_CORRUPT when the entry does not fit (or an
 * entry before it in its block is shorter than its 4-byte header);
 * ETW_E_LIMIT when the text does not fit buf (cut at a character);
 * ETW_E_UNSUPPORTED for flags other than 0 (ANSI), 1 (UTF-16) and 2
 * (UTF-8, winnt.h MESSAGE_RESOURCE_UTF8), ETW_E_INVALID_ARG when cap is 0. */
etw_status etw_msgtable_get(const etw_msgtable *t, uint32_t id, char *buf, size_t cap, size_t *len);

/* The raw entry of message id: its text bytes as stored (*text_len counts
 * everything after the 4-byte entry header: text, CR LF, NULs, padding)
 * and its flags (0 ANSI, 1 UTF-16LE, 2 UTF-8). Same errors as
 * etw_msgtable_get, less the text ones. Added for callers and tests that
 * need the encoding. */
etw_status etw_msgtable_entry(const etw_msgtable *t, uint32_t id, const uint8_t **text, size_t *text_len,
                              uint16_t *flags);

/* Number of messages (sum of the blocks' id ranges, bounded). */
uint32_t etw_msgtable_count(const etw_msgtable *t);

/* Walk every message in block order: fn(ctx, id, utf8, len); return
 * nonzero to stop. buf is scratch of cap bytes for the text. Stops at the
 * first entry etw_msgtable_get would refuse, with its status; the walk
 * visits at most len / 4 entries (ETW_E_CORRUPT past that: blocks that
 * repeat one range of entries). */
typedef int (*etw_msgtable_fn)(void *ctx, uint32_t id, const char *text, size_t len);
etw_status etw_msgtable_foreach(const etw_msgtable *t, char *buf, size_t cap, etw_msgtable_fn fn, void *ctx);

#endif
