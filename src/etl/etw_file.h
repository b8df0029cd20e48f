/* etw_file.h - random-access reads of a file by path (the etw_input used by
 * etw_reader_open_file). POSIX pread; stdio with 64-bit seeks elsewhere. */
#ifndef ETW_FILE_H
#define ETW_FILE_H

#include "etwdecode/etw_reader.h"

typedef struct etw_file etw_file;

/* Open path for reading and fill *in (read_at, size, ctx = the file).
 * ETW_E_IO when it cannot be opened or is not a regular file. */
etw_status etw_file_open(const etw_allocator *a, const char *path, etw_file **out,
                         etw_input *in);
void etw_file_close(const etw_allocator *a, etw_file *f);

#endif
