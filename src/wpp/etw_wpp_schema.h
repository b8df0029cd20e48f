/* etw_wpp_schema.h - the schema of a WPP message, for the decoder's cache:
 * one top-level field per TMF argument (named as in the argument block, in
 * argument-number order, which is payload order), typed from WPP's type
 * table, ItemList/ItemSet names as value maps / bitmaps. Kept in the
 * cache's ETW_SOURCE_WPP map under its own key (message GUID, number, tag
 * byte 'W'), apart from every manifest map. */
#ifndef ETW_WPP_SCHEMA_H
#define ETW_WPP_SCHEMA_H

#include <stddef.h>
#include <stdint.h>

#include "etwdecode/etw_wpp.h"
#include "schema/etw_cache.h"

#define ETW_WPP_KEY_SIZE 19
#define ETW_WPP_KEY_TAG 0x57 /* 'W' */

void etw_wpp_key(uint8_t out[ETW_WPP_KEY_SIZE], const etw_guid *g, uint16_t number);

/* The cached schema of m for pointer width ptr_size (4 or 8): found, or
 * built and inserted. ETW_E_NOMEM; ETW_E_CORRUPT (and *why) when the draft
 * breaks a schema rule. */
etw_status etw_wpp_schema_get(etw_cache *c, const etw_allocator *al, const etw_wpp_message *m,
                              uint8_t ptr_size, const etw_schema **out, const char **why);

#endif
