/* etw_pdb_internal.h - what etw_symstore.c needs of the PDB reader. */
#ifndef ETW_PDB_INTERNAL_H
#define ETW_PDB_INTERNAL_H

#include "etwdecode/etw_pdb.h"
#include "etwdecode/etw_reader.h"

/* Open from any random-access input; with identity_only, read the info
 * stream and the DBI header only (no symbols: etw_pdb_symbol_count is 0). */
etw_status etw_pdb_open_input(etw_pdb **out, const etw_input *in, const etw_pdb_options *opt, int identity_only);

/* Open path with identity_only (etw_symstore_find's check of a flat store). */
etw_status etw_pdb_open_identity(etw_pdb **out, const char *path, const etw_pdb_options *opt);

#endif
