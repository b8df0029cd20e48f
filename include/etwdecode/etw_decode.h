/* etw_decode.h - walk a schema over an event's payload and pull typed values.
 *
 * A pull-style enumerator in the manner of LinuxTracepoints' eventheader
 * decoder: begin, then call next until ETW_END. Each call yields one item:
 *
 *   SCALAR        one value (a top-level property, a struct member, or one
 *                 element of an array)
 *   STRUCT_BEGIN  a struct property starts (its members follow), ..._END
 *   ARRAY_BEGIN   an array property starts: array_count elements follow
 *                 (each a SCALAR, or STRUCT_BEGIN..STRUCT_END), ..._END
 *   UNSUPPORTED   a property that cannot be decoded (unknown in-type, a
 *                 length it cannot determine, a value cut by the end of the
 *                 payload); data/size hold its bytes when they are known. If
 *                 its size is known decoding goes on after it; otherwise the
 *                 UNSUPPORTED value takes the rest of the payload and the
 *                 enumeration ends. Also, as an element (in_array, size 0,
 *                 array_index = the first element left out), the elements
 *                 of an array left out after one that took no payload byte
 *                 (each would be the same again); the array then ends and
 *                 decoding goes on after it.
 *
 * Output bounds (docs/limits.md): an array element that takes no payload
 * byte is followed by no other (the rest of the array is the UNSUPPORTED
 * element above), and one event yields at most ETW_ZERO_ITEMS_BASE + its
 * payload size items that take no payload byte (END markers and the
 * STRUCT_BEGIN of array elements are not counted); past that the next
 * property or element is UNSUPPORTED and the enumeration ends.
 *
 * Every read is bounded by the payload; strings and binaries are borrowed
 * (data/size point into the event's user data; the one exception is an
 * ETW_PROP_BITS value, which takes no payload byte: its data is one byte of
 * the library's own, valid for the life of the program). Nothing is allocated: the
 * cursor holds a fixed-depth stack, and count/length references are read
 * from a caller-supplied scratch array of at least schema->prop_count
 * entries (the etw_decoder supplies one sized to its largest schema).
 *
 * Strings: `data`/`size` exclude the terminating NUL and any count prefix;
 * a string that runs to the end of the payload without a NUL is valid
 * (manifests rely on it). UTF-16 strings are UTF-16LE bytes.
 */
#ifndef ETWDECODE_ETW_DECODE_H
#define ETWDECODE_ETW_DECODE_H

#include <stddef.h>
#include <stdint.h>

#include "etw_event.h"
#include "etw_schema.h"
#include "etw_status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Deepest struct/array nesting the cursor follows; deeper schemas decode
 * the too-deep property as UNSUPPORTED. */
#define ETW_DECODE_MAX_DEPTH 32

/* Items taking no payload byte an event may yield beyond one per payload
 * byte: MAX_EVENT_DATA_DESCRIPTORS (evntprov.h), the most data blocks one
 * EventWrite call takes, so the most empty values a real event can carry
 * that no payload byte pays for. */
#ifndef ETW_ZERO_ITEMS_BASE
#define ETW_ZERO_ITEMS_BASE 128u
#endif

typedef enum etw_value_kind {
    ETW_VALUE_SCALAR = 0,
    ETW_VALUE_STRUCT_BEGIN,
    ETW_VALUE_STRUCT_END,
    ETW_VALUE_ARRAY_BEGIN,
    ETW_VALUE_ARRAY_END,
    ETW_VALUE_UNSUPPORTED
} etw_value_kind;

typedef struct etw_value {
    etw_value_kind kind;
    const etw_property *prop; /* the schema property (for elements: the array's) */
    const char *name;         /* prop->name */
    uint16_t in_type;         /* effective in-type (POINTER/SIZET resolved by width) */
    uint16_t out_type;        /* effective out-type (0 replaced by the in-type's default) */
    const uint8_t *data;      /* the value's bytes (borrowed), NULL for BEGIN/END */
    uint32_t size;
    uint32_t array_count;     /* ARRAY_BEGIN/END: number of elements */
    uint32_t array_index;     /* element index, when in_array */
    uint8_t in_array;         /* 1 for an element of an array */
    uint8_t depth;            /* 0 for top-level properties */
    uint8_t pointer_size;     /* the event's pointer width */
} etw_value;

/* Cursor state: treat as opaque. */
typedef struct etw_decode_frame {
    uint16_t first;   /* properties of this level: first .. first+count */
    uint16_t count;
    uint16_t next;    /* next property index within the level (0..count) */
    uint16_t prop;    /* the struct/array property this frame belongs to */
    uint32_t elems;   /* array: number of elements; struct: 0 */
    uint32_t elem;    /* array: current element */
    uint32_t elem_pos; /* array: payload position where the current element began */
    uint8_t kind;     /* 0 level of properties, 1 array of scalars, 2 array of structs */
    uint8_t c_align;  /* level of an ETW_PROP_C_ALIGNED struct: its largest member alignment
                       * so far (at least 1); 0 otherwise */
    uint32_t c_base;  /* ... and the payload position where that struct instance began */
} etw_decode_frame;

typedef struct etw_decode_cursor {
    const etw_schema *schema;
    const uint8_t *data;
    uint32_t size;
    uint32_t pos;
    uint8_t pointer_size;
    uint8_t done;
    uint16_t depth;
    uint32_t zero_items;      /* counted items so far that consumed no payload byte */
    uint32_t zero_max;        /* ETW_ZERO_ITEMS_BASE + payload size */
    uint64_t *refs;           /* scratch: last integer value of each property */
    size_t refs_len;
    etw_decode_frame stack[ETW_DECODE_MAX_DEPTH + 1];
} etw_decode_cursor;

/* Start decoding ev's user data with schema s. refs must hold at least
 * s->prop_count entries (ETW_E_INVALID_ARG otherwise). */
etw_status etw_decode_begin(etw_decode_cursor *c, const etw_schema *s,
                            const etw_event *ev, uint64_t *refs, size_t refs_len);

/* The next item: ETW_OK and *v filled, or ETW_END when the schema is done. */
etw_status etw_decode_next(etw_decode_cursor *c, etw_value *v);

/* Bytes of the payload not consumed by the schema (after ETW_END). */
uint32_t etw_decode_remaining(const etw_decode_cursor *c);

/* Convenience readers for a SCALAR (0 when the value is not of that shape):
 * any integer, boolean, pointer or hex in-type as unsigned / signed 64-bit;
 * FLOAT/DOUBLE as double. */
uint64_t etw_value_u64(const etw_value *v);
/* 1 when v is a SCALAR of an integer, boolean, pointer, hex or character
 * in-type of 1, 2, 4 or 8 bytes (what etw_value_u64 reads). */
int etw_value_is_integer(const etw_value *v);
int64_t etw_value_i64(const etw_value *v);
double etw_value_double(const etw_value *v);

#ifdef __cplusplus
}
#endif
#endif
