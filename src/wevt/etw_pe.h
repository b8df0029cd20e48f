/* etw_pe.h - the resources of a PE file (PE32 and PE32+), read in place.
 *
 * A PE image (DLL, EXE, SYS, MUI) keeps its resources in a three-level tree
 * (type -> name -> language) in the .rsrc section, reached through data
 * directory 2 (IMAGE_DIRECTORY_ENTRY_RESOURCE). Types are numbers (11 is
 * RT_MESSAGETABLE, 16 RT_VERSION) or UTF-16 names ("WEVT_TEMPLATE", "MUI").
 * Every offset is checked against the file; the walk is bounded (a loop in
 * the tree, an entry count larger than the section, a directory entered
 * twice end the walk with ETW_E_CORRUPT, never hang). Facts: the PE/COFF
 * specification (section 6.9, "The .rsrc Section").
 */
#ifndef ETW_PE_H
#define ETW_PE_H

#include <stddef.h>
#include <stdint.h>

#include "etwdecode/etw_status.h"

#define ETW_RT_MESSAGETABLE 11u /* winuser.h RT_MESSAGETABLE */

/* An opened PE image: borrowed bytes, nothing allocated. */
typedef struct etw_pe {
    const uint8_t *data;
    size_t len;
    int is_pe32plus;         /* 1 for PE32+ (64-bit) */
    uint16_t machine;        /* COFF header Machine */
    uint32_t rsrc_rva;       /* resource data directory (0: none) */
    uint32_t rsrc_size;
    uint32_t rsrc_off;       /* its file offset */
    uint32_t rsrc_avail;     /* bytes of the section in the file from rsrc_off */
    /* the section table, for RVA -> file offset */
    uint32_t sections_off;
    uint16_t nsections;
} etw_pe;

/* One resource's data: borrowed bytes within the file. */
typedef struct etw_pe_resource {
    const uint8_t *data;
    size_t len;
    uint32_t type_id;   /* numeric type, 0 for a named type */
    uint32_t name_id;   /* numeric name, 0 for a named entry */
    uint16_t lang;      /* LANGID (0x0409 en-US, 0 neutral) */
} etw_pe_resource;

/* Open data[0..len) as a PE image. ETW_E_CORRUPT (why set to a short
 * reason) when it is not one ("no MZ signature", "no PE signature",
 * "optional header is cut", ...). A PE without resources opens fine
 * (rsrc_rva 0). */
etw_status etw_pe_open(etw_pe *pe, const uint8_t *data, size_t len, const char **why);

/* The first resource of a type (type_name: a UTF-16 type name compared
 * case-insensitively in ASCII, e.g. "WEVT_TEMPLATE"; NULL to use type_id),
 * any name; among the languages of that name, `lang` when present, else
 * en-US (0x0409), else neutral (0), else the first. ETW_E_NOT_FOUND when
 * the image has no such resource; ETW_E_CORRUPT (why set) when the tree or
 * the data entry is damaged. */
etw_status etw_pe_find_resource(const etw_pe *pe, const char *type_name, uint32_t type_id, uint16_t lang,
                                etw_pe_resource *out, const char **why);

/* 1 when the image has a resource type of this name or number (e.g. "MUI":
 * a language-neutral file whose strings live in <lang>/<file>.mui). */
int etw_pe_has_resource_type(const etw_pe *pe, const char *type_name, uint32_t type_id);

/* A language tag ("en-US", "de-DE", "fr-FR", ...) -> LANGID, for the common
 * Windows display languages; 0 when unknown. */
uint16_t etw_pe_langid(const char *tag);

#endif
