/* etw_status_names.c - status value -> name (etw_status_names.h). */
#include "etw_status_names.h"

#include "etw_status_tables.h"

static const char *find(const etw_status_name *t, size_t n, uint32_t value) {
    size_t lo = 0, hi = n; /* first entry with value >= the one asked */
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (t[mid].value < value)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < n && t[lo].value == value ? t[lo].name : NULL;
}

const char *etw_ntstatus_name(uint32_t value) {
    return find(etw_ntstatus_names, etw_ntstatus_names_count, value);
}

const char *etw_win32_error_name(uint32_t value) {
    return find(etw_win32_error_names, etw_win32_error_names_count, value);
}

#define FACILITY_WIN32_ERRORS 0x80070000u /* HRESULT_FROM_WIN32: severity 1, facility 7 */
#define FACILITY_NT_BIT 0x10000000u       /* HRESULT_FROM_NT: the N bit */

const char *etw_hresult_name(uint32_t value) {
    const char *name = find(etw_hresult_names, etw_hresult_names_count, value);
    if (name) return name;
    if ((value & 0xFFFF0000u) == FACILITY_WIN32_ERRORS) return etw_win32_error_name(value & 0xFFFFu);
    if (value & FACILITY_NT_BIT) return etw_ntstatus_name(value & ~FACILITY_NT_BIT);
    return NULL;
}
