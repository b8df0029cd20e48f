/* etw_status.h - result codes shared by every etwdecode call.
 *
 * Every fallible function returns an etw_status. ETW_OK (0) is success;
 * ETW_END is not an error but the normal end of a stream; every other value
 * names what went wrong. etw_strerror() gives a short English text for logs.
 */
#ifndef ETWDECODE_ETW_STATUS_H
#define ETWDECODE_ETW_STATUS_H

#ifdef __cplusplus
extern "C" {
#endif

typedef enum etw_status {
    ETW_OK = 0,              /* success */
    ETW_END = 1,             /* no more items: end of file, list or payload */
    ETW_E_INVALID_ARG = -1,  /* a NULL pointer or an out-of-range argument */
    ETW_E_NOMEM = -2,        /* the allocator returned NULL */
    ETW_E_IO = -3,           /* reading the input failed (errno-level failure) */
    ETW_E_NOT_ETL = -4,      /* the input does not start like an ETL file */
    ETW_E_TRUNCATED = -5,    /* a structure runs past the end of its container */
    ETW_E_CORRUPT = -6,      /* a size, count, offset or marker is inconsistent */
    ETW_E_UNSUPPORTED = -7,  /* a valid construct this version cannot handle */
    ETW_E_DECOMPRESS = -8,   /* a compressed buffer does not decompress */
    ETW_E_NOT_FOUND = -9,    /* a lookup found nothing (schema, item, name) */
    ETW_E_LIMIT = -10,       /* a configured bound (size, depth, count) was hit */
    ETW_E_SMALL_BUFFER = -11 /* the caller's output buffer is too small */
} etw_status;

/* A short, static, English description of `s` (never NULL). */
const char *etw_strerror(etw_status s);

#ifdef __cplusplus
}
#endif
#endif
