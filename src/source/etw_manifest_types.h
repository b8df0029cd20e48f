/* etw_manifest_types.h - the name tables of instrumentation manifests
 * (internal to the manifest source).
 *
 * win:/trace: in-type names and xs:/win: out-type names to their TDH numbers
 * (docs FORMATS.md sections 3 and 4), the predefined winmeta.xml levels,
 * opcodes, keywords and channels, and the small text parsers the loader
 * needs (numbers, GUIDs). Everything here is pure: no allocation, no state.
 */
#ifndef ETW_MANIFEST_TYPES_H
#define ETW_MANIFEST_TYPES_H

#include <stddef.h>
#include <stdint.h>

#include "etwdecode/etw_types.h"

/* In-type of a manifest inType attribute: "win:UInt32", "trace:SizeT",
 * "UInt32", numeric "win:29" or "29". Returns the TDH number, or 0 when the
 * name is unknown. *implied_out (may be NULL) receives the out-type a
 * trace: alias implies (trace:Port -> PORT, trace:IPAddrV4 -> IPV4,
 * trace:IPAddrV6 -> IPV6), else 0. */
uint16_t etw_mf_intype(const char *s, uint16_t *implied_out);

/* Out-type of an outType attribute ("xs:unsignedInt", "win:HexInt32",
 * numeric forms). 1 and *out set when known, 0 otherwise. */
int etw_mf_outtype(const char *s, uint16_t *out);

/* Predefined winmeta.xml values, by name (with or without "win:").
 * 1 and *value set when the name is predefined. */
int etw_mf_std_level(const char *name, uint8_t *value);
int etw_mf_std_opcode(const char *name, uint8_t *value);
int etw_mf_std_keyword(const char *name, uint64_t *mask);
int etw_mf_std_channel(const char *name, uint8_t *value);
int etw_mf_std_task(const char *name, uint16_t *value);

/* The display name of a predefined opcode ("win:DC_Start" -> "DCStart",
 * "win:Start" -> "Start"), or NULL when the name is not predefined. */
const char *etw_mf_std_opcode_display(const char *name);

/* The symbol of a predefined opcode: its name without the "win:" prefix, in
 * winmeta.xml's case ("win:DC_Start" -> "DC_Start"), as TraceEvent names
 * it; NULL when the name is not predefined. */
const char *etw_mf_std_opcode_symbol(const char *name);

/* A number: decimal, or hex with 0x/0X. Leading and trailing XML white
 * space is allowed. 1 when the whole text is one number that fits 64 bits
 * ("0x" alone reads as 0, as PerfView tolerates), 0 otherwise. */
int etw_mf_parse_u64(const char *s, uint64_t *out);

/* A GUID "{xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx}", braces optional, any
 * case, surrounding white space allowed. 1 when valid. */
int etw_mf_parse_guid(const char *s, etw_guid *out);

/* The local part of a possibly prefixed XML name ("win:UInt8" -> "UInt8"). */
const char *etw_mf_local(const char *name);

#endif
