/* etw_wpp_types.c - WPP's default type table. Sizes and forms from WPP's
 * defaultwpp.ini (DEFINE_SIMPLE_TYPE: sizeof the C type; DEFINE_CPLX_TYPE:
 * the WPP_LOG* helper macro: WPP_LOGASTR / WPP_LOGWSTR log the string with
 * its NUL, WPP_LOGPCSTR / WPP_LOGPUSTR / WPP_LOGCSTR a u16 byte count then
 * the bytes, WPP_LOGPSID the SID); docs/wpp.md lists the sources. */
#include "etw_wpp_types.h"

#include <string.h>

#include "etwdecode/etw_schema.h"

#define T(nm, k, sz, sg, cv, it, ot) {nm, k, sz, sg, cv, it, ot}

static const etw_wpp_type_info TYPES[] = {
    T("", WPP_K_UNKNOWN, 0, 0, 's', 0, 0),
    T("ItemChar", WPP_K_INT, 1, 1, 'c', ETW_INTYPE_INT8, 0),
    T("ItemUChar", WPP_K_INT, 1, 0, 'c', ETW_INTYPE_UINT8, 0),
    T("ItemShort", WPP_K_INT, 2, 1, 'd', ETW_INTYPE_INT16, 0),
    T("ItemUShort", WPP_K_INT, 2, 0, 'u', ETW_INTYPE_UINT16, 0),
    T("ItemLong", WPP_K_INT, 4, 1, 'd', ETW_INTYPE_INT32, 0),
    T("ItemULong", WPP_K_INT, 4, 0, 'u', ETW_INTYPE_UINT32, 0),
    T("ItemULongX", WPP_K_INT, 4, 0, 'x', ETW_INTYPE_HEXINT32, 0),
    T("ItemULongXX", WPP_K_INT, 4, 0, 'X', ETW_INTYPE_HEXINT32, 0),
    T("ItemLongLong", WPP_K_INT, 8, 1, 'd', ETW_INTYPE_INT64, 0),
    T("ItemULongLong", WPP_K_INT, 8, 0, 'u', ETW_INTYPE_UINT64, 0),
    T("ItemLongLongX", WPP_K_INT, 8, 0, 'x', ETW_INTYPE_HEXINT64, 0),
    T("ItemLongLongXX", WPP_K_INT, 8, 0, 'X', ETW_INTYPE_HEXINT64, 0),
    T("ItemLongLongO", WPP_K_INT, 8, 0, 'o', ETW_INTYPE_HEXINT64, 0),
    T("ItemULongLongX", WPP_K_INT, 8, 0, 'x', ETW_INTYPE_HEXINT64, 0),
    T("ItemULongLongXX", WPP_K_INT, 8, 0, 'X', ETW_INTYPE_HEXINT64, 0),
    T("ItemPtr", WPP_K_PTR, 0, 0, 'p', ETW_INTYPE_POINTER, 0),
    T("ItemDouble", WPP_K_DOUBLE, 8, 1, 's', ETW_INTYPE_DOUBLE, 0),
    T("ItemNTSTATUS", WPP_K_NTSTATUS, 4, 0, 's', ETW_INTYPE_UINT32, ETW_OUTTYPE_NTSTATUS),
    T("ItemWINERROR", WPP_K_WINERROR, 4, 0, 's', ETW_INTYPE_UINT32, ETW_OUTTYPE_WIN32ERROR),
    T("ItemHRESULT", WPP_K_HRESULT, 4, 0, 's', ETW_INTYPE_UINT32, ETW_OUTTYPE_HRESULT),
    T("ItemNDIS_STATUS", WPP_K_HEX32, 4, 0, 's', ETW_INTYPE_HEXINT32, 0),
    T("ItemNDIS_OID", WPP_K_HEX32, 4, 0, 's', ETW_INTYPE_HEXINT32, 0),
    T("ItemGuid", WPP_K_GUID, 16, 0, 's', ETW_INTYPE_GUID, 0),
    T("ItemCLSID", WPP_K_GUID, 16, 0, 's', ETW_INTYPE_GUID, 0),
    T("ItemIID", WPP_K_GUID, 16, 0, 's', ETW_INTYPE_GUID, 0),
    T("ItemLIBID", WPP_K_GUID, 16, 0, 's', ETW_INTYPE_GUID, 0),
    T("ItemIPAddr", WPP_K_IPADDR, 4, 0, 's', ETW_INTYPE_UINT32, ETW_OUTTYPE_IPV4),
    T("ItemPort", WPP_K_PORT, 2, 0, 's', ETW_INTYPE_UINT16, ETW_OUTTYPE_PORT),
    T("ItemTimestamp", WPP_K_TIMESTAMP, 8, 1, 's', ETW_INTYPE_FILETIME, 0),
    T("ItemWaitTime", WPP_K_TIMESTAMP, 8, 1, 's', ETW_INTYPE_FILETIME, 0),
    T("ItemTimeDelta", WPP_K_DELTA, 8, 1, 's', ETW_INTYPE_INT64, 0),
    T("ItemListByte", WPP_K_LIST, 1, 0, 's', ETW_INTYPE_UINT8, 0),
    T("ItemListShort", WPP_K_LIST, 2, 0, 's', ETW_INTYPE_UINT16, 0),
    T("ItemListLong", WPP_K_LIST, 4, 0, 's', ETW_INTYPE_UINT32, 0),
    T("ItemSetByte", WPP_K_SET, 1, 0, 's', ETW_INTYPE_UINT8, ETW_OUTTYPE_HEXINT8),
    T("ItemSetShort", WPP_K_SET, 2, 0, 's', ETW_INTYPE_UINT16, ETW_OUTTYPE_HEXINT16),
    T("ItemSetLong", WPP_K_SET, 4, 0, 's', ETW_INTYPE_UINT32, ETW_OUTTYPE_HEXINT32),
    T("ItemEnum", WPP_K_ENUM, 4, 0, 'u', ETW_INTYPE_UINT32, 0),
    T("ItemFlagsEnum", WPP_K_ENUM, 4, 0, 'x', ETW_INTYPE_HEXINT32, 0),
    T("ItemString", WPP_K_STR, 0, 0, 's', ETW_INTYPE_ANSISTRING, 0),
    T("ItemRString", WPP_K_STR, 0, 0, 's', ETW_INTYPE_ANSISTRING, 0),
    T("ItemWString", WPP_K_WSTR, 0, 0, 's', ETW_INTYPE_UNICODESTRING, 0),
    T("ItemRWString", WPP_K_WSTR, 0, 0, 's', ETW_INTYPE_UNICODESTRING, 0),
    T("ItemPString", WPP_K_CSTR, 0, 0, 's', ETW_INTYPE_MANIFEST_COUNTEDANSISTRING, 0),
    T("ItemPWString", WPP_K_CWSTR, 0, 0, 's', ETW_INTYPE_MANIFEST_COUNTEDSTRING, 0),
    T("ItemHexDump", WPP_K_HEXDUMP, 0, 0, 's', ETW_INTYPE_MANIFEST_COUNTEDBINARY, 0),
    T("ItemSid", WPP_K_SID, 0, 0, 's', ETW_INTYPE_SID, 0),
    T("ItemChar4", WPP_K_CHAR4, 4, 0, 's', ETW_INTYPE_UINT32, ETW_OUTTYPE_HEXINT32),
};

#define NTYPES (sizeof TYPES / sizeof TYPES[0])

uint16_t etw_wpp_type_lookup(const char *name, size_t n) {
    if (n == 11 && memcmp(name, "ItemHEXDump", 11) == 0) name = "ItemHexDump";
    for (uint16_t i = 1; i < NTYPES; i++) {
        if (strlen(TYPES[i].name) == n && memcmp(TYPES[i].name, name, n) == 0) return i;
    }
    return 0;
}

const etw_wpp_type_info *etw_wpp_type_get(uint16_t type) {
    return type && type < NTYPES ? &TYPES[type] : NULL;
}
