/* fuzz_pdb.c - libFuzzer target for the PDB reader (src/pdb/).
 *
 * Opens the input as an MSF container and reads every stream (their sizes
 * together never past the input's: a page is never in two streams), then as
 * a PDB. Checks the contract, not just the absence of crashes: known
 * statuses only, a reason with every failure of the container; symbols
 * sorted by RVA with NUL-terminated names of their stated length; every
 * lookup at a symbol's first and last byte finds a symbol at or below it,
 * at the offset it reports. Then the WPP annotations (etw_pdb_annotations_mem):
 * known statuses with a reason; each annotation's text is its strings, each
 * ended by '\n', with no NUL, CR or LF inside a string.
 *
 * Build: make fuzz-build (CMake, -DETW_FUZZ=ON); run: scripts/run-fuzz.sh
 * build-fuzz 60 fuzz_pdb (seeds in fuzz/corpus/pdb/, the PDBs test_pdb
 * builds: test_pdb --write-seeds DIR).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "etwdecode/etw_pdb.h"
#include "pdb/etw_msf.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

typedef struct mem {
    const uint8_t *data;
    size_t size;
} mem;

static long long read_at(void *ctx, uint64_t off, void *buf, size_t n) {
    const mem *m = ctx;
    if (off >= m->size) return 0;
    if (n > m->size - off) n = (size_t)(m->size - off);
    memcpy(buf, m->data + off, n);
    return (long long)n;
}

static void check_lookup(const etw_pdb *p, uint32_t rva) {
    etw_pdb_symbol s;
    uint32_t off = 0;
    etw_status st = etw_pdb_lookup(p, rva, &s, &off);
    if (st == ETW_E_NOT_FOUND) return;
    if (st != ETW_OK || s.rva > rva || rva - s.rva != off || !s.name || s.name[s.name_len] != 0) abort();
    if (s.kind == ETW_PDB_PROCEDURE && (uint64_t)off >= s.size) abort();
}

static etw_status check_annotation(void *ctx, const etw_pdb_annotation *a) {
    size_t *n = ctx;
    (*n)++;
    if ((a->kind != ETW_PDB_TMF && a->kind != ETW_PDB_TMC) || !a->text || a->text[a->text_len] != 0) abort();
    if (a->strings[a->count] != NULL || a->text_len > 65535) abort();
    size_t q = 0;
    for (size_t i = 0; i < a->count; i++) {
        size_t k = strlen(a->strings[i]);
        if (q + k + 1 > a->text_len || memcmp(a->text + q, a->strings[i], k) != 0 || a->text[q + k] != '\n')
            abort();
        if (memchr(a->strings[i], '\n', k) || memchr(a->strings[i], '\r', k)) abort();
        q += k + 1;
    }
    if (q != a->text_len) abort();
    return ETW_OK;
}

static void check_annotations(const uint8_t *data, size_t size) {
    const char *why = NULL;
    etw_pdb_options o = {NULL, &why};
    size_t n = 0;
    etw_status st = etw_pdb_annotations_mem(data, size, &o, check_annotation, &n);
    if (st != ETW_OK && ((st != ETW_E_CORRUPT && st != ETW_E_TRUNCATED && st != ETW_E_UNSUPPORTED) || !why))
        abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    check_annotations(data, size);
    mem m = {data, size};
    etw_input in = {read_at, size, &m};
    etw_msf msf;
    const char *why = NULL;
    etw_status st = etw_msf_open(&msf, NULL, &in, &why);
    if (st == ETW_OK) {
        uint64_t total = 0;
        for (uint32_t s = 0; s < msf.num_streams; s++) {
            uint8_t *b;
            size_t len;
            st = etw_msf_read_stream(&msf, s, (size_t)-1, &b, &len);
            if (st != ETW_OK || len != etw_msf_stream_size(&msf, s)) abort();
            total += len;
            free(b);
        }
        if (total > size) abort();
        etw_msf_close(&msf);
    } else if ((st != ETW_E_CORRUPT && st != ETW_E_TRUNCATED && st != ETW_E_UNSUPPORTED) || !why) {
        abort();
    }

    etw_pdb *p = NULL;
    why = NULL;
    etw_pdb_options o = {NULL, &why};
    st = etw_pdb_open_mem(&p, data, size, &o);
    if (st != ETW_OK) {
        if (p || (st != ETW_E_CORRUPT && st != ETW_E_TRUNCATED && st != ETW_E_UNSUPPORTED && st != ETW_E_LIMIT))
            abort();
        return 0;
    }
    etw_guid g;
    uint32_t age;
    etw_pdb_identity(p, &g, &age);
    size_t n = etw_pdb_symbol_count(p);
    uint32_t prev = 0;
    for (size_t i = 0; i < n; i++) {
        etw_pdb_symbol s;
        if (etw_pdb_symbol_at(p, i, &s) != ETW_OK) abort();
        if (s.rva < prev || strlen(s.name) != s.name_len) abort();
        if (s.kind != ETW_PDB_PUBLIC && s.kind != ETW_PDB_PROCEDURE) abort();
        if (s.kind == ETW_PDB_PUBLIC && s.size != 0) abort();
        prev = s.rva;
        if (i < 512) {
            check_lookup(p, s.rva);
            check_lookup(p, s.rva + (s.size ? s.size - 1 : 7));
        }
    }
    etw_pdb_symbol s;
    if (etw_pdb_symbol_at(p, n, &s) != ETW_E_NOT_FOUND) abort();
    check_lookup(p, 0);
    check_lookup(p, 0xFFFFFFFFu);
    etw_pdb_free(p);
    return 0;
}
