/* etw_multi_internal.h - what the parallel pipeline (src/pipeline/) needs
 * from an etw_multi beyond its public API, to merge the files' readers
 * itself the way etw_multi_next does. */
#ifndef ETW_MULTI_INTERNAL_H
#define ETW_MULTI_INTERNAL_H

#include "etwdecode/etw_multi.h"

/* 1 when the files are concatenated (file_order in the reader options the
 * multi was made with), 0 when they are merged by timestamp. */
int etw_multi_file_order(const etw_multi *m);

/* Make etw_multi_current() say file i: the file being read, so that a
 * diagnostics callback names it, then the file of the event returned. */
void etw_multi_set_current(etw_multi *m, size_t i);

#endif
