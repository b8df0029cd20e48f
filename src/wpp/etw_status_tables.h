/* etw_status_tables.h - the generated tables behind etw_status_names.h
 * (etw_status_ntstatus.c, etw_status_win32.c, etw_status_hresult.c): each
 * sorted by value, no value twice (tests/test_status_names.c checks). */
#ifndef ETW_STATUS_TABLES_H
#define ETW_STATUS_TABLES_H

#include <stddef.h>
#include <stdint.h>

typedef struct etw_status_name {
    uint32_t value;
    const char *name;
} etw_status_name;

extern const etw_status_name etw_ntstatus_names[];
extern const size_t etw_ntstatus_names_count;
extern const etw_status_name etw_win32_error_names[];
extern const size_t etw_win32_error_names_count;
extern const etw_status_name etw_hresult_names[];
extern const size_t etw_hresult_names_count;

#endif
