/* etw_traits.h - provider traits: the blob a provider attaches to itself
 * (EventSetInformation(EventProviderSetTraits)), which TraceLogging events
 * carry in their PROV_TRAITS extended item.
 *
 * Layout (Microsoft "Provider Traits" doc, evntcons.h):
 *   u16  TraitsSize      whole blob, including this field
 *   char ProviderName[]  UTF-8, NUL-terminated
 *   then traits until TraitsSize is used up:
 *     u16 TraitSize      this trait, including these 3 header bytes
 *     u8  TraitType      1 = provider group GUID (16 bytes); 2 = decode GUID;
 *                        1..127 reserved to Microsoft; 128..255 custom
 *     u8  Data[TraitSize - 3]
 * A blob is valid when every size is within the blob (trailing bytes after
 * TraitsSize are ignored: the item carrying it may be padded).
 */
#ifndef ETWDECODE_ETW_TRAITS_H
#define ETWDECODE_ETW_TRAITS_H

#include <stddef.h>
#include <stdint.h>

#include "etw_status.h"
#include "etw_types.h"

#ifdef __cplusplus
extern "C" {
#endif

#define ETW_TRAIT_GROUP 1        /* EtwProviderTraitTypeGroup: 16-byte group GUID */
#define ETW_TRAIT_DECODE_GUID 2  /* EtwProviderTraitDecodeGuid */
#define ETW_TRAIT_CUSTOM_FIRST 128

typedef struct etw_trait {
    uint8_t type;
    uint16_t size;        /* data bytes (TraitSize - 3) */
    const uint8_t *data;  /* borrowed */
} etw_trait;

typedef struct etw_traits {
    const char *name;     /* borrowed, NOT NUL-terminated within name_len; UTF-8 */
    size_t name_len;
    int has_group;
    etw_guid group;
    int has_decode_guid;
    etw_guid decode_guid;
    const uint8_t *traits; /* the trait records after the name (borrowed) */
    size_t traits_len;
} etw_traits;

/* Parse blob[0..len). ETW_E_TRUNCATED / ETW_E_CORRUPT for a bad size, a name
 * without a NUL inside TraitsSize, a trait that overruns, a group trait of
 * the wrong size. */
etw_status etw_traits_parse(const uint8_t *blob, size_t len, etw_traits *out);

/* Iterate the traits of a parsed blob: *pos starts at 0. ETW_END after the
 * last. */
etw_status etw_traits_next(const etw_traits *t, size_t *pos, etw_trait *trait);

/* Build a blob: name (UTF-8, no NUL inside), optional group GUID, optional
 * custom traits (types must be >= 128, except that any type 1..255 is
 * accepted to allow tests; sizes checked). Writes at most cap bytes; *len =
 * the blob size. ETW_E_SMALL_BUFFER (with *len = needed size) when cap is too
 * small; ETW_E_LIMIT when the blob would exceed 65535 bytes. */
etw_status etw_traits_build(uint8_t *out, size_t cap, size_t *len, const char *name,
                            const etw_guid *group, const etw_trait *custom,
                            size_t ncustom);

#ifdef __cplusplus
}
#endif
#endif
