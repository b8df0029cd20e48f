/* etw_wpp_types.h - WPP's default argument types (defaultwpp.ini's MofType
 * names, the "Item*" words of a TMF argument block): how many payload bytes
 * each takes, how it is shown, and the schema in-type / out-type its field
 * gets in JSON. */
#ifndef ETW_WPP_TYPES_H
#define ETW_WPP_TYPES_H

#include <stddef.h>
#include <stdint.h>

/* How a type's bytes are laid out and shown. */
typedef enum etw_wpp_kind {
    WPP_K_UNKNOWN = 0,
    WPP_K_INT,       /* fixed-size integer (size 1, 2, 4, 8), signed or not */
    WPP_K_PTR,       /* the record's pointer size */
    WPP_K_DOUBLE,    /* 8-byte IEEE */
    WPP_K_NTSTATUS,  /* u32 shown by name */
    WPP_K_WINERROR,
    WPP_K_HRESULT,
    WPP_K_HEX32,     /* NDIS_STATUS / NDIS_OID: 0x%08X */
    WPP_K_GUID,      /* 16 bytes */
    WPP_K_IPADDR,    /* 4 bytes in network order */
    WPP_K_PORT,      /* u16 in network order */
    WPP_K_TIMESTAMP, /* FILETIME */
    WPP_K_DELTA,     /* i64, 100-ns units */
    WPP_K_LIST,      /* size 1/2/4: i-th name */
    WPP_K_SET,       /* size 1/2/4: bit names */
    WPP_K_ENUM,      /* u32, numeric */
    WPP_K_STR,       /* NUL-terminated 8-bit */
    WPP_K_WSTR,      /* NUL-terminated UTF-16LE */
    WPP_K_CSTR,      /* u16 byte count + 8-bit */
    WPP_K_CWSTR,     /* u16 byte count + UTF-16LE */
    WPP_K_HEXDUMP,   /* u16 byte count + bytes */
    WPP_K_SID,       /* 8 + 4 * sub-authority count bytes */
    WPP_K_CHAR4      /* 4 bytes shown as characters */
} etw_wpp_kind;

typedef struct etw_wpp_type_info {
    const char *name;   /* "ItemLong" */
    uint8_t kind;       /* etw_wpp_kind */
    uint8_t size;       /* payload bytes for fixed sizes; 0 variable or pointer */
    uint8_t is_signed;  /* WPP_K_INT: sign-extend */
    char conv;          /* the conversion its FormatSpec uses ('d', 'u', 'X', 's', ...) */
    uint16_t in_type;   /* etw_intype of its JSON field */
    uint16_t out_type;  /* etw_outtype of its JSON field (0: default) */
} etw_wpp_type_info;

/* The type of a name (n bytes, exact, case-sensitive but "ItemHEXDump" is
 * taken for "ItemHexDump"); 0 when unknown. Types are numbered from 1. */
uint16_t etw_wpp_type_lookup(const char *name, size_t n);
/* The info of a type number, NULL for 0 or out of range. */
const etw_wpp_type_info *etw_wpp_type_get(uint16_t type);

#endif
