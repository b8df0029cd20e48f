/* etw_pdb_internal.h - what etw_symstore.c and etw_pdb_tmf.c need of the
 * PDB reader. */
#ifndef ETW_PDB_INTERNAL_H
#define ETW_PDB_INTERNAL_H

#include "etwdecode/etw_pdb.h"
#include "etwdecode/etw_reader.h"
#include "etw_msf.h"

/* Open from any random-access input; with identity_only, read the info
 * stream and the DBI header only (no symbols: etw_pdb_symbol_count is 0). */
/* Bytes in memory as an etw_input (ctx: a mem_src): the PDB readers' read_at. */
typedef struct mem_src {
    const uint8_t *data;
    size_t size;
} mem_src;
long long etw_pdb_mem_read_at(void *ctx, uint64_t off, void *buf, size_t n);

etw_status etw_pdb_open_input(etw_pdb **out, const etw_input *in, const etw_pdb_options *opt, int identity_only);

/* Open path with identity_only (etw_symstore_find's check of a flat store). */
etw_status etw_pdb_open_identity(etw_pdb **out, const char *path, const etw_pdb_options *opt);

/* Called with module number index (its place in the DBI module list) and
 * the first symbol-bytes of its symbol stream (the 4-byte signature
 * first); data is freed when fn returns. A status other than ETW_OK stops
 * the walk and is returned. */
typedef etw_status (*etw_pdb_module_fn)(void *ctx, uint32_t index, const uint8_t *data, size_t len);

/* Walk the module info substream mi[0, milen) of a DBI stream: for each
 * module with a symbol stream, read that stream (one at a time) and call fn.
 * Entries that run past the substream, streams out of range, named twice,
 * or shorter than the module's symbol bytes are ETW_E_CORRUPT (*why set). */
etw_status etw_pdb_walk_modules(const etw_msf *m, const etw_allocator *al, const uint8_t *mi, size_t milen,
                                const char **why, etw_pdb_module_fn fn, void *ctx);

#endif
