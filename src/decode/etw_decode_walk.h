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

#endif
