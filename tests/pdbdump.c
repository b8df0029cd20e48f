/* pdbdump.c (etw_pdbdump) - print what etw_pdb reads from a PDB (tests/test_pdb.py
 * compares it with llvm-pdbutil's own reading).
 *
 *   etw_pdbdump FILE.pdb            guid, age, count, then one line per symbol:
 *                                   "public|procedure RVA(hex) SIZE NAME"
 *   etw_pdbdump FILE.pdb RVA...     the lookup of each RVA (hex):
 *                                   "RVA NAME+0xOFFSET" or "RVA -"
 *   etw_pdbdump -t FILE.pdb N       open N times, print the mean time (ms)
 *   etw_pdbdump -a FILE.pdb         the WPP annotations (etw_pdb_annotations_file):
 *                                   "annotation TMF|TMC MODULE SECTION OFFSET COUNT"
 *                                   then the annotation's text (COUNT lines)
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "etwdecode/etw_pdb.h"

static double now_ms(void) {
    struct timespec ts;
    timespec_get(&ts, TIME_UTC);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static etw_status print_annotation(void *ctx, const etw_pdb_annotation *a) {
    (void)ctx;
    printf("annotation %s %u %u %u %zu\n", a->kind == ETW_PDB_TMF ? "TMF" : "TMC", (unsigned)a->module,
           (unsigned)a->section, (unsigned)a->offset, a->count);
    fwrite(a->text, 1, a->text_len, stdout);
    return ETW_OK;
}

int main(int argc, char **argv) {
    if (argc == 3 && strcmp(argv[1], "-a") == 0) {
        const char *reason = NULL;
        etw_pdb_options o = {NULL, &reason};
        etw_status st = etw_pdb_annotations_file(argv[2], &o, print_annotation, NULL);
        if (st != ETW_OK) {
            fprintf(stderr, "etw_pdbdump: %s: %s%s%s\n", argv[2], etw_strerror(st), reason ? ": " : "",
                    reason ? reason : "");
            return 1;
        }
        return 0;
    }
    if (argc >= 4 && strcmp(argv[1], "-t") == 0) {
        int n = atoi(argv[3]);
        if (n <= 0) n = 1;
        double t0 = now_ms();
        for (int i = 0; i < n; i++) {
            etw_pdb *p;
            etw_status st = etw_pdb_open_file(&p, argv[2], NULL);
            if (st != ETW_OK) {
                fprintf(stderr, "etw_pdbdump: %s: %s\n", argv[2], etw_strerror(st));
                return 1;
            }
            etw_pdb_free(p);
        }
        printf("%.3f ms per open\n", (now_ms() - t0) / n);
        return 0;
    }
    if (argc < 2) {
        fprintf(stderr, "usage: etw_pdbdump FILE.pdb [RVA...] | -t FILE.pdb N | -a FILE.pdb\n");
        return 2;
    }
    const char *reason = NULL;
    etw_pdb_options o = {NULL, &reason};
    etw_pdb *p;
    etw_status st = etw_pdb_open_file(&p, argv[1], &o);
    if (st != ETW_OK) {
        fprintf(stderr, "etw_pdbdump: %s: %s%s%s\n", argv[1], etw_strerror(st), reason ? ": " : "",
                reason ? reason : "");
        return 1;
    }
    if (argc > 2) {
        for (int i = 2; i < argc; i++) {
            uint32_t rva = (uint32_t)strtoul(argv[i], NULL, 16), off = 0;
            etw_pdb_symbol s;
            if (etw_pdb_lookup(p, rva, &s, &off) == ETW_OK)
                printf("%X %s+0x%X\n", (unsigned)rva, s.name, (unsigned)off);
            else
                printf("%X -\n", (unsigned)rva);
        }
        etw_pdb_free(p);
        return 0;
    }
    etw_guid g;
    uint32_t age;
    char gs[ETW_GUID_STRING_SIZE];
    etw_pdb_identity(p, &g, &age);
    etw_guid_format(&g, gs);
    size_t n = etw_pdb_symbol_count(p);
    printf("guid %s\nage %u\nsymbols %zu\n", gs, (unsigned)age, n);
    for (size_t i = 0; i < n; i++) {
        etw_pdb_symbol s;
        if (etw_pdb_symbol_at(p, i, &s) != ETW_OK) return 1;
        printf("%s %X %u %s\n", s.kind == ETW_PDB_PUBLIC ? "public" : "procedure", (unsigned)s.rva,
               (unsigned)s.size, s.name);
    }
    etw_pdb_free(p);
    return 0;
}
