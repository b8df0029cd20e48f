/* etw_multi.h - several traces read as one timeline.
 *
 * A session recorded by WPR, xperf or PerfView often leaves a kernel .etl
 * beside the user one (and .clrRundown.etl companions); investigations want
 * them as one stream, as `xperf -merge` and PerfView give it. An etw_multi
 * holds one etw_reader per file and merges their events by timestamp:
 *
 *   etw_multi *m;
 *   etw_multi_new(&m, NULL);
 *   etw_multi_add_file(m, "a.etl");          // an unreadable file is not added
 *   etw_multi_add_file(m, "a.kernel.etl");
 *   etw_event ev; size_t file;
 *   while (etw_multi_next(m, &ev, &file) == ETW_OK) { ... }
 *   etw_multi_free(m);
 *
 * Order: the event with the smallest timestamp (UTC FILETIME) goes first;
 * equal timestamps keep the order in which the files were added, and each
 * file keeps its own order (its reader's: merged across processors, or file
 * order when the reader options ask for it). Each file's log-file header
 * stays its own first event; its time is that file's session start. With
 * file_order set in the reader options the files are concatenated instead,
 * in the order they were added.
 *
 * The event returned borrows the bytes of its file's reader, as
 * etw_reader_next() does: valid until the next etw_multi_next() or
 * etw_multi_free(). Memory: one reader per file (one buffer per processor
 * each) and nothing per event. Single-threaded; no global state.
 */
#ifndef ETWDECODE_ETW_MULTI_H
#define ETWDECODE_ETW_MULTI_H

#include <stddef.h>

#include "etw_event.h"
#include "etw_reader.h"
#include "etw_status.h"
#include "etw_types.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct etw_multi etw_multi;

/* Most files one etw_multi merges. */
#define ETW_MULTI_MAX_FILES 4096

/* opt (may be NULL) is used for every reader the multi opens; its on_diag
 * receives each reader's problems (diag_ctx as given: to know the file, call
 * etw_multi_current() in the callback, or keep one context per file with
 * etw_multi_add_reader). */
etw_status etw_multi_new(etw_multi **out, const etw_reader_options *opt);

/* Open a file and add it. On failure the file is not added and the status
 * says why (ETW_E_IO with errno set, ETW_E_NOT_ETL, ETW_E_NOMEM, ETW_E_LIMIT);
 * the files added before are not touched. Adding is allowed only before the
 * first etw_multi_next() (or after etw_multi_rewind()). name is copied.
 *
 * A compressed file or archive, known by its first bytes (etw_sniff.h), is
 * unpacked into memory the multi owns: a gzip, zstd, xz or bzip2 stream
 * (x.etl.gz) is one file named path; a ZIP (PerfView's .etl.zip) gives
 * every entry named *.etl, each named "path:entry" (an entry that is not a
 * trace is reported through on_diag, status ETW_E_NOT_ETL, and skipped).
 * All entries of one input together decompress to at most ETW_UNPACK_RATIO
 * times its size (at least ETW_UNPACK_FLOOR, at most ETW_UNPACK_MAX): past it nothing of
 * the input is added and the status is ETW_E_LIMIT. ETW_E_DECOMPRESS: the
 * compressed data is damaged; ETW_E_NOT_ETL: no trace inside. */
etw_status etw_multi_add_file(etw_multi *m, const char *path);

/* The same for bytes in memory (a trace read from a pipe): a plain ETL
 * trace is read in place (data must stay valid until etw_multi_free); a
 * compressed one is unpacked as above (data may be freed on return). */
etw_status etw_multi_add_memory(etw_multi *m, const void *data, size_t size, const char *name);

/* Bounds of the unpacking above (docs/limits.md). */
#define ETW_UNPACK_MAX ((unsigned long long)1 << 30)   /* 1 GiB */
#define ETW_UNPACK_FLOOR ((unsigned long long)64 << 20) /* 64 MiB */
#define ETW_UNPACK_RATIO 256u

/* Add a reader opened by the caller; the multi owns it from then on (it is
 * closed by etw_multi_free, or at once when this call fails). name (copied)
 * is what etw_multi_name() returns. */
etw_status etw_multi_add_reader(etw_multi *m, etw_reader *r, const char *name);

/* Number of files added, their readers and names (index = order added). */
size_t etw_multi_count(const etw_multi *m);
etw_reader *etw_multi_reader(const etw_multi *m, size_t i);
const char *etw_multi_name(const etw_multi *m, size_t i);

/* The next event of the merged stream: ETW_OK with *ev filled and *file
 * (may be NULL) set to its file's index; ETW_END after the last event of
 * every file. Damage is handled by each reader (reported, skipped). */
etw_status etw_multi_next(etw_multi *m, etw_event *ev, size_t *file);

/* The same without the copy (etw_reader_next_ref): *ev points at an event
 * the object holds, valid with the bytes it borrows until the next call
 * of etw_multi_next / etw_multi_next_ref / etw_multi_rewind; NULL at the
 * end. The two calls may be mixed. */
etw_status etw_multi_next_ref(etw_multi *m, const etw_event **ev, size_t *file);

/* Index of the file of the event being read (during etw_multi_next, also
 * inside diagnostics callbacks), or of the last event returned. */
size_t etw_multi_current(const etw_multi *m);

/* Go back to the first event of every file. */
etw_status etw_multi_rewind(etw_multi *m);

void etw_multi_free(etw_multi *m);

#ifdef __cplusplus
}
#endif
#endif
