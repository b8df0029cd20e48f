/* etw_tracelogging.h - the TraceLogging source: EVENT_SCHEMA_TL metadata
 * (the event's extended item 11) -> a draft etw_schema, and the provider
 * name from a PROV_TRAITS blob (extended item 12).
 *
 * Metadata layout (FORMATS.md 2.3, TraceLoggingProvider.h):
 *   u16 Size (whole blob), event tag bytes (while byte & 0x80), event name
 *   (UTF-8, NUL), then fields until Size: name (UTF-8, NUL), InType byte,
 *   OutType byte if InType & 0x80, field tag bytes if OutType & 0x80, u16
 *   ValueCount for constant-count arrays, u16 TypeInfoSize + TypeInfo for
 *   custom fields. A struct (in-type 24) takes the next N logical fields
 *   (N = OutType & 0x7F) as members; the draft puts them in the TDH tree
 *   layout of etw_schema.h (top-level first, then members struct by struct,
 *   breadth first, payload order kept at every level).
 *
 * Mapping to the schema model:
 *   - in-types 0..23, 25 and unknown values keep their number (16, which
 *     TraceLogging reserves and never emits, is TDH's POINTER and decodes
 *     as a pointer of the event's width; 26..31 are reported unsupported by
 *     the decoder); BINARY (14) becomes MANIFEST_COUNTEDBINARY (25);
 *   - out-types 0..18 are translated to TDH numbers (HEX, SIGNED and
 *     UNSIGNED by the in-type's size), 32..38 are kept, others become 0;
 *     binary fields (14 and 25) with out-type NULL or HEX get HEXBINARY;
 *   - const count -> ETW_PROP_COUNT_FIXED + count; var count ->
 *     ETW_PROP_COUNT_IN_DATA (count 0); custom -> ETW_PROP_CUSTOM_SIZED
 *     (in-type kept, type info skipped); scalars have count 1;
 *   - struct properties: ETW_PROP_STRUCT, in_type/out_type 0;
 *   - field tags != 0 -> tags + ETW_PROP_HAS_TAGS; event tags -> draft->tags.
 * Bounds: at most ETW_TL_MAX_PROPS fields, struct nesting at most
 * ETW_TL_MAX_DEPTH; parsing never recurses and never reads past Size.
 */
#ifndef ETW_TRACELOGGING_H
#define ETW_TRACELOGGING_H

#include <stddef.h>
#include <stdint.h>

#include "etwdecode/etw_schema.h"
#include "etwdecode/etw_status.h"
#include "etwdecode/etw_types.h"

#define ETW_TL_MAX_PROPS 65535u
#define ETW_TL_MAX_DEPTH 32u

/* TraceLogging in-type bits (TlgIn_t) and out-type bits (TlgOut_t). */
#define ETW_TL_IN_TYPE_MASK 0x1Fu
#define ETW_TL_IN_COUNT_MASK 0x60u
#define ETW_TL_IN_CCOUNT 0x20u
#define ETW_TL_IN_VCOUNT 0x40u
#define ETW_TL_IN_CUSTOM 0x60u
#define ETW_TL_IN_CHAIN 0x80u
#define ETW_TL_OUT_MASK 0x7Fu
#define ETW_TL_OUT_CHAIN 0x80u
#define ETW_TL_IN_STRUCT 24u

struct etw_tl_node; /* private: one field in metadata order */

/* Scratch reused across parses. Memory grows on demand through the
 * allocator and is kept, so a parse allocates only when an event has more
 * fields than any event parsed before with this scratch. */
typedef struct etw_tl_scratch {
    etw_allocator alloc;
    etw_property *props;       /* the draft's properties (TDH layout) */
    struct etw_tl_node *nodes; /* fields in metadata (pre-)order */
    size_t cap;                /* capacity of both arrays, in fields */
} etw_tl_scratch;

/* a: NULL gives malloc/free. */
void etw_tl_scratch_init(etw_tl_scratch *s, const etw_allocator *a);
void etw_tl_scratch_free(etw_tl_scratch *s);

/* Parse EVENT_SCHEMA_TL metadata meta[0..len) into *draft. The draft's
 * props live in scratch (valid until the next parse with it or its free);
 * every string points into meta (names are NUL-terminated inside Size).
 * draft->event_name = the event name, draft->tags = event tags,
 * draft->source = ETW_SOURCE_TRACELOGGING; provider_name and the descriptor
 * fields stay 0/NULL (the caller fills them from the event and its traits).
 * Size < len is valid (the item may be padded): only Size bytes are read.
 * Returns ETW_OK; ETW_E_TRUNCATED (Size > len, a field running past Size),
 * ETW_E_CORRUPT (Size < 4, a name without NUL, a struct claiming more
 * fields than remain or none), ETW_E_LIMIT (too many fields, nesting too
 * deep), ETW_E_NOMEM or ETW_E_INVALID_ARG, with a static English reason in
 * *why (why may be NULL). On failure *draft is zeroed. */
etw_status etw_tl_parse(const uint8_t *meta, size_t len, etw_tl_scratch *scratch,
                        etw_schema *draft, const char **why);

/* The TDH in-type / out-type for a TraceLogging in-type (low five bits,
 * not 24) and out-type (low seven bits). */
uint16_t etw_tl_map_intype(uint8_t tl_in);
uint16_t etw_tl_map_outtype(uint8_t tl_in, uint8_t tl_out);

/* The provider name of a PROV_TRAITS blob, for naming events: *name is
 * borrowed from blob and NOT NUL-terminated within *name_len. Checks only
 * what the name needs (TraitsSize within len and >= 3, a NUL inside it);
 * etw_traits_parse() validates the whole blob. ETW_E_TRUNCATED /
 * ETW_E_CORRUPT otherwise. */
etw_status etw_tl_provider_name(const uint8_t *blob, size_t len, const char **name,
                                size_t *name_len);

#endif
