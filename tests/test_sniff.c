/* test_sniff.c - etw_sniff names a file's kind from its magic bytes (the
 * formats' own specifications: [MS-EVEN6] "ElfFile\0", APPNOTE.TXT "PK\3\4",
 * RFC 1952 1F 8B, RFC 8878 28 B5 2F FD, ...), every trace in tests/data is an
 * ETL trace, and a file of another kind given to etw_multi_add_file is
 * ETW_E_NOT_ETL without one reader diagnostic about its "buffers". */
#if !defined(_POSIX_C_SOURCE)
#define _POSIX_C_SOURCE 200809L
#endif
#include <dirent.h>
#include <stdio.h>
#include <string.h>

#include "etw_test.h"
#include "etwdecode/etw_multi.h"
#include "etwdecode/etw_sniff.h"

static void test_magic(void) {
    unsigned char b[1024];
    memset(b, 0, sizeof b);
    memcpy(b, "ElfFile\0", 8);
    ETW_CHECK_INT(etw_sniff(b, 4096 > sizeof b ? sizeof b : 4096), ETW_KIND_EVTX);
    ETW_CHECK_STR(etw_file_kind_describe(ETW_KIND_EVTX), "an EVTX event log");
    memset(b, 0, sizeof b);
    b[0] = 0x30;
    memcpy(b + 4, "LfLe", 4);
    ETW_CHECK_INT(etw_sniff(b, 48), ETW_KIND_EVT);
    ETW_CHECK_INT(etw_sniff("PK\3\4\24\0\0\0", 8), ETW_KIND_ZIP);
    ETW_CHECK_INT(etw_sniff("PK\5\6", 4), ETW_KIND_ZIP);
    ETW_CHECK_INT(etw_sniff("\x1f\x8b\x08\0", 4), ETW_KIND_GZIP);
    ETW_CHECK_INT(etw_sniff("\x28\xb5\x2f\xfd\x04", 5), ETW_KIND_ZSTD);
    ETW_CHECK_INT(etw_sniff("\xfd" "7zXZ\0\0", 7), ETW_KIND_XZ);
    ETW_CHECK_INT(etw_sniff("BZh9", 4), ETW_KIND_BZIP2);
    ETW_CHECK_INT(etw_sniff("BZhx", 4), ETW_KIND_TEXT);
    ETW_CHECK_INT(etw_sniff("7z\xbc\xaf\x27\x1c", 6), ETW_KIND_7Z);
    ETW_CHECK_INT(etw_sniff("MSCF\0\0\0\0", 8), ETW_KIND_CAB);
    ETW_CHECK_INT(etw_sniff("MZ\x90\0", 4), ETW_KIND_PE);
    ETW_CHECK_INT(etw_sniff("Microsoft C/C++ MSF 7.00\r\n\x1a" "DS", 29), ETW_KIND_PDB);
    ETW_CHECK_INT(etw_sniff("<?xml version=\"1.0\"?>\n", 22), ETW_KIND_TEXT);
    ETW_CHECK_INT(etw_sniff("\xff\xfe<\0?\0", 6), ETW_KIND_TEXT);
    ETW_CHECK_INT(etw_sniff("\x01\x02\x03\x04", 4), ETW_KIND_UNKNOWN);
    ETW_CHECK_INT(etw_sniff("", 0), ETW_KIND_EMPTY);
    ETW_CHECK_INT(etw_sniff(NULL, 5), ETW_KIND_EMPTY);
    ETW_CHECK_INT(etw_sniff("\x1f", 1), ETW_KIND_UNKNOWN); /* one byte of a gzip magic is not one */
    ETW_CHECK(etw_file_kind_compressed(ETW_KIND_ZIP) && etw_file_kind_compressed(ETW_KIND_ZSTD) &&
              !etw_file_kind_compressed(ETW_KIND_7Z) && !etw_file_kind_compressed(ETW_KIND_ETL));
    for (int k = 0; k <= ETW_KIND_COUNT_; k++) ETW_CHECK(etw_file_kind_describe((etw_file_kind)k)[0] != 0);
}

static void test_every_trace_is_etl(void) {
    DIR *d = opendir(ETW_TEST_DATA_DIR);
    ETW_CHECK(d != NULL);
    if (!d) return;
    struct dirent *e;
    int seen = 0;
    while ((e = readdir(d)) != NULL) {
        size_t n = strlen(e->d_name);
        if (n < 5 || strcmp(e->d_name + n - 4, ".etl") != 0) continue;
        char path[512];
        snprintf(path, sizeof path, "%s/%s", ETW_TEST_DATA_DIR, e->d_name);
        FILE *f = fopen(path, "rb");
        if (!f) continue;
        unsigned char head[ETW_SNIFF_BYTES];
        size_t got = fread(head, 1, sizeof head, f);
        fclose(f);
        if (etw_sniff(head, got) != ETW_KIND_ETL) fprintf(stderr, "  %s: kind %d\n", e->d_name, etw_sniff(head, got));
        ETW_CHECK_INT(etw_sniff(head, got), ETW_KIND_ETL);
        seen++;
    }
    closedir(d);
    ETW_CHECK(seen >= 10);
}

static int diags;
static void count_diag(void *ctx, const etw_diag *d) {
    (void)ctx;
    (void)d;
    diags++;
}

static void test_foreign_files_not_read_as_buffers(void) {
    const char *manifest = ETW_TEST_DATA_DIR "/HTTP_Server.man"; /* XML text */
    etw_reader_options ro;
    memset(&ro, 0, sizeof ro);
    ro.on_diag = count_diag;
    etw_multi *m = NULL;
    ETW_CHECK_INT(etw_multi_new(&m, &ro), ETW_OK);
    diags = 0;
    ETW_CHECK_INT(etw_multi_add_file(m, manifest), ETW_E_NOT_ETL);
    unsigned char evtx[4096];
    memset(evtx, 0, sizeof evtx);
    memcpy(evtx, "ElfFile\0", 8);
    ETW_CHECK_INT(etw_multi_add_memory(m, evtx, sizeof evtx, "x.evtx"), ETW_E_NOT_ETL);
    ETW_CHECK_INT(diags, 0);
    ETW_CHECK_INT((int)etw_multi_count(m), 0);
    /* bytes of no known kind: still refused, still quietly */
    unsigned char junk[300];
    for (size_t i = 0; i < sizeof junk; i++) junk[i] = (unsigned char)(i * 37 + 1);
    ETW_CHECK_INT(etw_multi_add_memory(m, junk, sizeof junk, "junk"), ETW_E_NOT_ETL);
    ETW_CHECK_INT(diags, 0);
    /* a damaged gzip (the magic, then nothing usable) */
    ETW_CHECK_INT(etw_multi_add_memory(m, "\x1f\x8b\x08\0\0\0\0\0\0\x03\xff\xff", 12, "cut.gz"), ETW_E_DECOMPRESS);
    ETW_CHECK_INT((int)etw_multi_count(m), 0);
    etw_multi_free(m);
}

int main(void) {
    ETW_RUN(test_magic);
    ETW_RUN(test_every_trace_is_etl);
    ETW_RUN(test_foreign_files_not_read_as_buffers);
    return ETW_TEST_DONE();
}
