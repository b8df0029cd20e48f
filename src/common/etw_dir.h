/* etw_dir.h - the entries of a directory, sorted by name (POSIX only).
 *
 * The manifest loader, the manifest catalog and the Windows image index
 * each walk folders in name order, so that what they load or which file
 * wins does not depend on the file system's listing order.
 */
#ifndef ETW_DIR_H
#define ETW_DIR_H

#include <stddef.h>

#include "etw_alloc.h"
#include "etwdecode/etw_status.h"

/* The entries of dir except "." and "..", sorted by strcmp, as paths
 * "dir/name" (full != 0) or as names: *out an array of *n strings from al
 * (free with etw_dir_free), at most max entries (the rest are left out).
 * ETW_E_IO (errno set) when dir cannot be opened, ETW_E_NOMEM. */
etw_status etw_dir_list(const etw_allocator *al, const char *dir, int full, size_t max, char ***out, size_t *n);
void etw_dir_free(const etw_allocator *al, char **names, size_t n);

#endif
