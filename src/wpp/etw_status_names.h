/* etw_status_names.h - public symbolic names of NTSTATUS, Win32 error and
 * HRESULT values, for WPP's %!STATUS!, %!WINERROR!, %!HRESULT! (ItemNTSTATUS,
 * ItemWINERROR, ItemHRESULT arguments). */
#ifndef ETW_STATUS_NAMES_H
#define ETW_STATUS_NAMES_H

#include <stdint.h>

/* The public symbolic name of a status value ("STATUS_SUCCESS"), or NULL when the table does not know it. */
const char *etw_ntstatus_name(uint32_t value);
const char *etw_win32_error_name(uint32_t value);
const char *etw_hresult_name(uint32_t value);

#endif
