/* etw_status_names.c - a minimal table of status names (ntstatus.h,
 * winerror.h); the full tables come from another branch. */
#include "etw_status_names.h"

#include <stddef.h>

const char *etw_ntstatus_name(uint32_t value) {
    switch (value) {
    case 0x00000000u: return "STATUS_SUCCESS";
    case 0xC0000001u: return "STATUS_UNSUCCESSFUL";
    default: return NULL;
    }
}

const char *etw_win32_error_name(uint32_t value) {
    switch (value) {
    case 0: return "ERROR_SUCCESS";
    case 2: return "ERROR_FILE_NOT_FOUND";
    default: return NULL;
    }
}

const char *etw_hresult_name(uint32_t value) {
    switch (value) {
    case 0x00000000u: return "S_OK";
    case 0x80004005u: return "E_FAIL";
    default: return NULL;
    }
}
