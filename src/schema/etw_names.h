/* etw_names.h - the names a cached schema keeps: bounded in length and
 * unique among siblings, so that the JSON of an event never repeats a key
 * ({"dup":1,"dup":2}, which most JSON readers collapse to one member) and a
 * schema from a hostile trace cannot multiply a megabyte name by every item.
 *
 * Rules (docs/json-output.md "Field names", docs/limits.md):
 *   - every name (property, event, task, opcode, provider, map and map entry
 *     names) is at most ETW_NAME_MAX bytes: a longer one is cut before the
 *     first UTF-8 character that does not fit;
 *   - siblings are the top-level properties, or the members of one struct.
 *     A property whose (cut) name an earlier sibling already has gets "_N"
 *     appended, N the smallest number from 2 up that gives a name no other
 *     sibling has (the original names of later siblings included):
 *     dup, dup, dup -> dup, dup_2, dup_3; dup, dup_2, dup -> dup, dup_2, dup_3.
 *
 * The cache applies them when it copies a draft (etw_cache_insert), once per
 * schema: nothing is done per event. */
#ifndef ETW_NAMES_H
#define ETW_NAMES_H

#include <stddef.h>

#include "etwdecode/etw_schema.h"
#include "etwdecode/etw_status.h"
#include "etwdecode/etw_types.h"

/* Longest name kept, in bytes: a C# identifier, which EventSource event and
 * field names are, has at most 511 characters (compiler error CS0645), so
 * any ASCII EventSource name fits whole; TraceLogging, manifests and
 * TRACE_EVENT_INFO document no bound but the 64 KB of an event. */
#define ETW_NAME_MAX 512u

/* Length of s cut to at most max bytes, before a UTF-8 character that would
 * be split (continuation bytes are never left at the end). */
size_t etw_name_cut_len(const char *s, size_t max);

/* New names for the draft's properties: names[i] is the name property i must
 * take (already cut and suffixed), or NULL to keep its own name (cut to
 * ETW_NAME_MAX). names is NULL when no property is renamed. */
typedef struct etw_name_plan {
    const char **names;
    char *buf;
} etw_name_plan;

/* Plan the renames of d (a draft that passed etw_schema_validate). ETW_OK,
 * or ETW_E_NOMEM (then *plan holds nothing). Temporary memory only. */
etw_status etw_names_plan(const etw_schema *d, const etw_allocator *al, etw_name_plan *plan);
void etw_names_plan_free(etw_name_plan *plan, const etw_allocator *al);

#endif
