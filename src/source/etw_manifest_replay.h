/* etw_manifest_replay.h - the pre-parsed form of an XML manifest: what
 * expat reported while parsing it, recorded at build time
 * (tools/embed/etw_embed.c) and replayed at run time through the loader's
 * own element handlers (etw_mf_replay, etw_manifest_xml.c), so the
 * manifests compiled into the library cost no XML parse.
 *
 * A byte array, read byte by byte (never cast to a struct):
 *
 *   "EMR1"                      magic
 *   varint T                    size of the string table
 *   T bytes                     the strings, each ended by a NUL (so the
 *                               table's last byte is a NUL); a string is
 *                               named by its byte offset in the table
 *   records, to the end of the array:
 *     0                         the end of the innermost open element
 *     1 + n                     the start of an element with n attributes
 *                               (n <= ETW_MR_MAX_ATTRS), then
 *       varint name             its name (offset)
 *       varint line delta       its line (expat's XML_GetCurrentLineNumber
 *                               in the start handler) less the line of the
 *                               previous start (the first: less 0)
 *       n x (varint, varint)    its attributes in expat's order: name and
 *                               value offsets
 *
 * varint: unsigned LEB128, at most 5 bytes, at most UINT32_MAX. Exactly one
 * root element, every start ended. The strings are what expat hands the
 * handlers (UTF-8, attribute values normalized, entities replaced); the
 * generator stores each distinct one once, the most used first (small
 * offsets, one-byte varints). */
#ifndef ETW_MANIFEST_REPLAY_H
#define ETW_MANIFEST_REPLAY_H

#define ETW_MR_MAGIC "EMR1"
#define ETW_MR_MAGIC_LEN 4
#define ETW_MR_TAG_END 0
/* Attributes of one element at most (ClrEtwAll.man has 9): the replay
 * builds expat's NULL-terminated array on the stack. */
#define ETW_MR_MAX_ATTRS 64

#endif
