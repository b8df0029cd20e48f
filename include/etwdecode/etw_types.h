/* etw_types.h - small value types shared by the public API. */
#ifndef ETWDECODE_ETW_TYPES_H
#define ETWDECODE_ETW_TYPES_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* A GUID in its natural fields. On disk it is u32 Data1, u16 Data2, u16 Data3
 * (all little-endian) then 8 raw bytes; etw_guid_read() converts. */
typedef struct etw_guid {
    uint32_t data1;
    uint16_t data2;
    uint16_t data3;
    uint8_t data4[8];
} etw_guid;

/* Length of a GUID as text without braces, plus the terminating NUL. */
#define ETW_GUID_STRING_SIZE 37

/* Read a GUID from 16 bytes in Windows' little-endian layout. */
etw_guid etw_guid_read(const uint8_t bytes[16]);
/* Write "xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx" (lower case) and a NUL into out. */
void etw_guid_format(const etw_guid *g, char out[ETW_GUID_STRING_SIZE]);
/* 1 when every byte of g is zero. */
int etw_guid_is_zero(const etw_guid *g);
/* 1 when a and b are the same GUID. */
int etw_guid_equal(const etw_guid *a, const etw_guid *b);

/* A caller-supplied allocator. Every object of the library that allocates
 * takes one; a NULL pointer means malloc/free. alloc returns NULL on failure
 * and never needs to zero memory. */
typedef struct etw_allocator {
    void *(*alloc)(void *ctx, size_t size);
    void (*free)(void *ctx, void *ptr);
    void *ctx;
} etw_allocator;

#ifdef __cplusplus
}
#endif
#endif
