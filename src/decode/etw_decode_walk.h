/* etw_decode_walk.h - one top-level integer of a payload whose offset varies
 * (a string or other variable-size property precedes it): the payload is
 * decoded up to it. Used for the ids some events carry in their payload
 * (the kernel classes' pid/tid fields, manifest payload subjects). */
#ifndef ETW_DECODE_WALK_H
#define ETW_DECODE_WALK_H

#include <stdint.h>

#include "etwdecode/etw_event.h"
#include "etwdecode/etw_schema.h"

/* Properties a walk may cross (the reference scratch lives on the stack). */
#define ETW_DECODE_WALK_MAX 32

/* The low 32 bits of top-level property `index` of ev's payload: 1 and *v,
 * or 0 when it is not an integer (with size4: not a 4-byte one), a struct
 * or array comes before it or is it, index passes ETW_DECODE_WALK_MAX, or
 * the payload does not reach it. */
int etw_decode_walk_u32(const etw_schema *s, const etw_event *ev, uint16_t index, int size4, uint32_t *v);

/* The payload bytes a whole decode of ev leaves after the last property
 * (etw_decode_remaining once etw_decode_next has returned ETW_END), found
 * without making the values: 1 and *trailing when every top-level
 * property is a scalar whose size the payload alone gives (no struct or
 * length reference; bit fields of earlier integers and arrays of
 * fixed-size scalars counted by a literal, the data or an earlier integer
 * are fine) and refs_len holds the schema's references, else 0 (walk it
 * with etw_decode_next). The same number as the walk, byte for byte, for
 * any payload. */
int etw_decode_walk_trailing(const etw_schema *s, const etw_event *ev, size_t refs_len, uint32_t *trailing);

/* A schema's payload as the few things whose size the bytes decide, for
 * finding its trailing bytes faster than etw_decode_walk_trailing: steps
 * of `skip` fixed bytes (the fixed-size scalars, strings and binaries of
 * a fixed length, arrays of them with a literal count), each followed by
 * a NUL-terminated string, an array counted by an integer at a fixed
 * offset, or the end. */
#define ETW_DECODE_PLAN_STEPS 8
enum { ETW_PLAN_END = 0, ETW_PLAN_STR8, ETW_PLAN_STR16, ETW_PLAN_ARRAY };
typedef struct etw_decode_plan_step {
    uint32_t skip;
    uint8_t kind;       /* ETW_PLAN_* */
    uint8_t elem;       /* ETW_PLAN_ARRAY: bytes per element */
    uint8_t count_size; /* ETW_PLAN_ARRAY: the count integer's bytes, at */
    uint32_t count_off; /* this payload offset */
} etw_decode_plan_step;
typedef struct etw_decode_plan_t {
    uint32_t nsteps;
    etw_decode_plan_step steps[ETW_DECODE_PLAN_STEPS];
} etw_decode_plan_t;

/* The plan of schema s's payloads with pointers of ptr bytes (4 or 8): 1
 * and *pl, or 0 when the schema has more than that (a struct, a length
 * reference, a bit field, more variable parts than the steps hold, ...).
 * Depends on the schema alone. */
int etw_decode_plan(const etw_schema *s, uint8_t ptr, etw_decode_plan_t *pl);

/* The trailing bytes of a payload data[0..size) of a planned schema:
 * exactly what etw_decode_walk_trailing gives (and the walk). */
uint32_t etw_decode_plan_trailing(const etw_decode_plan_t *pl, const uint8_t *data, uint32_t size);

/* Top-level property `index` of ev's payload as etw_decode_next gives it,
 * read directly when the properties up to it are flat (as above) and it
 * is an integer (not a bit field or array) or a NUL-terminated string
 * (ANSI, UTF-16) with no fixed length: 1 and its bytes (*data, *size: a string without its NUL),
 * 0 when the walk gives it no value (the payload ends first), -1 when
 * only the walk can tell. */
int etw_decode_walk_field(const etw_schema *s, const etw_event *ev, size_t refs_len, uint16_t index,
                          const uint8_t **data, uint32_t *size);

/* Most fields etw_decode_walk_fields reads in one walk. */
#define ETW_DECODE_WALK_FIELDS 8u

/* etw_decode_walk_field for n top-level properties index[0..n) (strictly
 * increasing, at most ETW_DECODE_WALK_FIELDS) in one walk: 1 and for each
 * got[k] (1: data[k], size[k] as etw_decode_walk_field gives them; 0: the
 * walk gives it no value), or -1 when only the walk can tell (for any of
 * them). */
int etw_decode_walk_fields(const etw_schema *s, const etw_event *ev, size_t refs_len, const uint16_t *index,
                           uint32_t n, const uint8_t **data, uint32_t *size, int8_t *got);

/* Bytes before the first NUL unit (unit 1: a byte, 2: a UTF-16 unit) of the
 * n bytes at p, *found 1; without a NUL, n (UTF-16: rounded down to whole
 * units), *found 0. How the decoder ends a NUL-terminated string. */
uint32_t etw_decode_str_len(const uint8_t *p, uint32_t n, unsigned unit, int *found);

#endif
