/* fuzz_pe.c - libFuzzer target for the PE resource reader and the message
 * table reader (src/wevt/).
 *
 * Opens the input as a PE image and looks up WEVT_TEMPLATE, MESSAGETABLE
 * (in a few languages) and MUI; walks a found message table with
 * etw_msgtable_foreach and reads every id it reports back with
 * etw_msgtable_get. Then treats the whole input as a message table. Checks
 * the contract, not just the absence of crashes: known statuses only, a
 * reason with every ETW_E_CORRUPT from open and find, resource bytes inside
 * the input, texts as long as reported and NUL-terminated, the same text by
 * id as by walk. The input's last byte picks a small text buffer now and
 * then, so the "text does not fit" paths run too.
 *
 * Build: make fuzz-build (CMake, -DETW_FUZZ=ON); run: scripts/run-fuzz.sh
 * build-fuzz 60 fuzz_pe (seeds in fuzz/corpus/pe/).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "wevt/etw_msgtable.h"
#include "wevt/etw_pe.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

typedef struct walk_ctx {
    const etw_msgtable *t;
    size_t cap;
    int n;
} walk_ctx;

static int on_message(void *ctx, uint32_t id, const char *text, size_t len) {
    walk_ctx *w = ctx;
    char again[4096];
    size_t again_len = 0;
    if (len >= w->cap || strlen(text) != len) abort();
    /* the same id by lookup gives the same text (a repeated id in a later
     * block may be found in an earlier one: only compare unique walks) */
    etw_status st = etw_msgtable_get(w->t, id, again, w->cap, &again_len);
    if (st != ETW_OK && st != ETW_E_CORRUPT && st != ETW_E_LIMIT && st != ETW_E_UNSUPPORTED) abort();
    if (st == ETW_OK && w->t->sorted && (again_len != len || memcmp(again, text, len) != 0)) abort();
    return ++w->n >= 4096;
}

static void walk_table(const etw_msgtable *t, size_t cap) {
    char buf[4096];
    walk_ctx w = {t, cap, 0};
    etw_status st = etw_msgtable_foreach(t, buf, cap, on_message, &w);
    if (st != ETW_OK && st != ETW_E_CORRUPT && st != ETW_E_LIMIT && st != ETW_E_UNSUPPORTED) abort();
    if ((uint64_t)w.n > etw_msgtable_count(t) && t->sorted) abort();
    /* lookups of ids near the first block's */
    if (t->nblocks > 0) {
        uint32_t low = (uint32_t)t->data[4] | ((uint32_t)t->data[5] << 8) | ((uint32_t)t->data[6] << 16) |
                       ((uint32_t)t->data[7] << 24);
        for (uint32_t k = 0; k < 4; k++) {
            size_t len = 0;
            st = etw_msgtable_get(t, low + k, buf, cap, &len);
            if (st != ETW_OK && st != ETW_E_NOT_FOUND && st != ETW_E_CORRUPT && st != ETW_E_LIMIT &&
                st != ETW_E_UNSUPPORTED)
                abort();
            if (len >= cap || buf[len] != 0) abort();
        }
    }
}

static void check_resource(const uint8_t *data, size_t size, etw_status st, const etw_pe_resource *r,
                           const char *why) {
    if (st == ETW_OK) {
        if (r->len > size || (r->len && (r->data < data || (size_t)(r->data - data) > size - r->len))) abort();
    } else if (st == ETW_E_CORRUPT) {
        if (!why) abort();
    } else if (st != ETW_E_NOT_FOUND) {
        abort();
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    size_t cap = 4096;
    if (size > 0 && data[size - 1] < 0x20) cap = (size_t)data[size - 1] + 1u;

    etw_pe pe;
    const char *why = NULL;
    etw_status st = etw_pe_open(&pe, data, size, &why);
    if (st == ETW_OK) {
        etw_pe_resource r;
        why = NULL;
        st = etw_pe_find_resource(&pe, "WEVT_TEMPLATE", 0, 0x0409, &r, &why);
        check_resource(data, size, st, &r, why);
        static const uint16_t langs[3] = {0x0409, 0x0407, 0x0000};
        for (int i = 0; i < 3; i++) {
            why = NULL;
            st = etw_pe_find_resource(&pe, NULL, ETW_RT_MESSAGETABLE, langs[i], &r, &why);
            check_resource(data, size, st, &r, why);
            if (st == ETW_OK) {
                etw_msgtable t;
                if (etw_msgtable_open(&t, r.data, r.len, &why) == ETW_OK) walk_table(&t, cap);
            }
        }
        why = NULL;
        st = etw_pe_find_resource(&pe, "MUI", 0, 0, &r, &why);
        check_resource(data, size, st, &r, why);
        (void)etw_pe_has_resource_type(&pe, "MUI", 0);
        (void)etw_pe_has_resource_type(&pe, NULL, 16);
    } else if (st != ETW_E_CORRUPT || !why) {
        abort();
    }

    etw_msgtable t;
    why = NULL;
    st = etw_msgtable_open(&t, data, size, &why);
    if (st == ETW_OK)
        walk_table(&t, cap);
    else if (st != ETW_E_CORRUPT || !why)
        abort();
    return 0;
}
