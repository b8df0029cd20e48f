/* fuzz_manifest_scan.c - libFuzzer target for the manifest catalog's
 * provider scanner (etw_manifest_scan_providers, src/source/
 * etw_manifest_catalog.c).
 *
 * Seeds: fuzz/corpus/manifest/ (shared with fuzz_manifest) when run as
 * fuzz_manifest_scan with that folder given by hand.
 *
 * For every input, as given and with each byte order mark put in front
 * (UTF-8, UTF-16LE, UTF-16BE): the scan ends with ETW_OK or
 * ETW_E_TRUNCATED, stores at most max GUIDs and never more than it found,
 * and a scan with room for fewer GUIDs stores a prefix of the same list.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "etwdecode/etw_manifest_catalog.h"

#define FUZZ_ASSERT(c)                                                                             \
    do {                                                                                           \
        if (!(c)) {                                                                                \
            fprintf(stderr, "%s:%d: assertion failed: %s\n", __FILE__, __LINE__, #c);             \
            abort();                                                                               \
        }                                                                                          \
    } while (0)

#define MAX 64

static void scan_one(const uint8_t *data, size_t size) {
    etw_guid all[MAX], few[2];
    size_t n, total, bad, n2, total2, bad2;
    etw_status st = etw_manifest_scan_providers(data, size, all, MAX, &n, &total, &bad);
    FUZZ_ASSERT(st == ETW_OK || st == ETW_E_TRUNCATED);
    FUZZ_ASSERT(n <= MAX && n <= total);
    FUZZ_ASSERT(total >= MAX || n == total);
    etw_status st2 = etw_manifest_scan_providers(data, size, few, 2, &n2, &total2, &bad2);
    FUZZ_ASSERT(st2 == st && total2 == total && bad2 == bad);
    FUZZ_ASSERT(n2 == (n < 2 ? n : 2));
    FUZZ_ASSERT(memcmp(few, all, n2 * sizeof *few) == 0);
    FUZZ_ASSERT(etw_manifest_scan_providers(data, size, NULL, 0, &n2, NULL, NULL) == st && n2 == 0);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    scan_one(data, size);
    static const uint8_t boms[3][3] = {{0xEF, 0xBB, 0xBF}, {0xFF, 0xFE, 0}, {0xFE, 0xFF, 0}};
    static const size_t bom_len[3] = {3, 2, 2};
    uint8_t *buf = malloc(size + 3);
    if (!buf) return 0;
    for (int b = 0; b < 3; b++) {
        memcpy(buf, boms[b], bom_len[b]);
        if (size) memcpy(buf + bom_len[b], data, size);
        scan_one(buf, size + bom_len[b]);
    }
    free(buf);
    return 0;
}
