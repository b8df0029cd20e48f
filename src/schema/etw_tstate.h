/* etw_tstate.h - state of the traced system that events teach and later
 * events are shown with (docs/kernel.md, "Process names" and "Drive
 * paths"): the image name of each process id, and the NT device -> drive
 * mapping of the volumes. Owned by the decoder, learned in trace order
 * (ETW_LEARN_IN_ORDER events), bounded (docs/limits.md): a few fixed
 * tables allocated on first use, nothing per event. */
#ifndef ETWDECODE_ETW_TSTATE_H
#define ETWDECODE_ETW_TSTATE_H

#include <stddef.h>
#include <stdint.h>

#include "etwdecode/etw_status.h"
#include "etwdecode/etw_types.h"

/* Process table: sets x ways entries of (pid, name); a fifth process in a
 * full set replaces the set's entries in turn. */
#define ETW_TSTATE_PROC_SETS 1024
#define ETW_TSTATE_PROC_WAYS 4
/* Bytes of a process name kept (UTF-8; a longer name is cut at a character
 * boundary). */
#define ETW_TSTATE_NAME_MAX 57
/* Volume mappings kept (a trace has one per volume and network redirector:
 * 9 in net.4.5.2.x64.etl), and their longest paths (UTF-8 bytes). */
#define ETW_TSTATE_VOLUMES 64
#define ETW_TSTATE_NT_MAX 126
#define ETW_TSTATE_DOS_MAX 62

typedef struct etw_tstate etw_tstate;

etw_status etw_tstate_new(etw_tstate **out, const etw_allocator *alloc);
void etw_tstate_free(etw_tstate *t);

/* A process runs under `name` from now on (Start, rundown). */
void etw_tstate_process_set(etw_tstate *t, uint32_t pid, const char *name, size_t len);
/* The process has ended: its name is no longer given (but to ended_too). */
void etw_tstate_process_end(etw_tstate *t, uint32_t pid);
/* 1 and the name of pid (borrowed, not NUL-terminated), 0 when unknown;
 * ended_too: also the name of a process that has ended since. */
int etw_tstate_process(const etw_tstate *t, uint32_t pid, int ended_too, const char **name, size_t *len);

/* A volume mapping (SystemConfig VolumeMapping): NT prefix -> DOS prefix. */
void etw_tstate_volume_set(etw_tstate *t, const char *nt, size_t nt_len, const char *dos, size_t dos_len);
/* The drive form of an NT path: 1 and the mapped prefix (*dos, *dos_len)
 * replacing path's first *nt_len bytes when a mapping of a drive letter
 * ("C:\") holds the longest prefix of path, ASCII case-insensitive;
 * else 0. */
int etw_tstate_drive_path(const etw_tstate *t, const char *path, size_t len, const char **dos, size_t *dos_len,
                          size_t *nt_len);
/* 1 once any volume mapping is known (a cheap test before the lookup). */
int etw_tstate_has_volumes(const etw_tstate *t);

size_t etw_tstate_bytes(const etw_tstate *t);

#endif
