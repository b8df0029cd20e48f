/* etw_file.h - random-access reads of a file by path (the etw_input used by
 * etw_reader_open_file). POSIX: pread, and the file mapped read-only so that
 * buffers are read in place; stdio with 64-bit seeks elsewhere (no mapping).
 *
 * A mapped file's size is the one fstat gave at open. If the file is cut
 * shorter while it is mapped, touching a page past its new end raises SIGBUS
 * (docs/limits.md); etw_reader_options.no_map avoids the mapping. */
#ifndef ETW_FILE_H
#define ETW_FILE_H

#include "etwdecode/etw_reader.h"

typedef struct etw_file etw_file;

/* Open path for reading and fill *in (read_at, size, ctx = the file); with
 * map nonzero, also map it when the platform can (etw_file_bytes). ETW_E_IO
 * when it cannot be opened or is not a regular file. */
etw_status etw_file_open(const etw_allocator *a, const char *path, int map, etw_file **out,
                         etw_input *in);
void etw_file_close(const etw_allocator *a, etw_file *f);

/* The whole file in memory (in->size bytes, read-only), or NULL when it is
 * not mapped. */
const uint8_t *etw_file_bytes(const etw_file *f);

/* Bytes [off, off+len) of the mapping are no longer needed: their pages are
 * given back once the furthest finished range is a window (1 MiB) past them,
 * in chunks of at least 512 KiB, so resident memory stays a few MiB whatever
 * the file's size. A range finished behind the window is given back at once.
 * Pages given back are read again from the file if touched: a release never
 * invalidates bytes, it only costs a page fault. Safe on several threads at
 * once. No-op when not mapped. */
void etw_file_done(etw_file *f, uint64_t off, uint64_t len);

/* Give back the pages of [off, off+len) now, outside the window (one-off
 * reads far from the reading position). */
void etw_file_drop(etw_file *f, uint64_t off, uint64_t len);

/* A new pass from the start: give back the window and reset it. Not while
 * other threads call etw_file_done. */
void etw_file_restart(etw_file *f);

#endif
