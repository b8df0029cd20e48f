/* etw_fixup.h - corrections to schemas whose declaration disagrees with the
 * payloads their providers write.
 *
 * Applied by the cache to its own copy of every descriptor-keyed schema
 * (manifest, built-in manifest, EventSource, merged TRACE_EVENT_INFO) when it
 * is inserted, so a fact holds whichever source described the event. Each
 * fix-up recognises its event by provider and property shape (names and
 * in-types as every source declares them), never by source, and leaves any
 * other schema untouched. Each fact and where it comes from is in
 * etw_fixup.c; the list is in docs/schema-sources.md.
 */
#ifndef ETW_FIXUP_H
#define ETW_FIXUP_H

#include "etwdecode/etw_schema.h"

/* Correct s (whose properties are `props`, the same array as s->props) in
 * place. Only flags and count fields change, within the tree rules of
 * etw_schema.h: a count reference set here always names an earlier
 * top-level property. */
void etw_schema_fixup(const etw_schema *s, etw_property *props);

#endif
