/* fuzz_traits.c - libFuzzer target for provider traits
 * (src/source/etw_traits.c, include/etwdecode/etw_traits.h).
 *
 * Build: clang -g -O1 -fsanitize=fuzzer,address,undefined -Iinclude -Isrc \
 *            fuzz/fuzz_traits.c src/source/etw_traits.c src/common/etw_common.c \
 *            -o /tmp/ftr
 * Seeds: PROV_TRAITS blobs (ext item 12 of TraceLogging events).
 *
 * Checks:
 *   - parse: a status from the documented set; on success the name lies in
 *     the blob and ends with a NUL before TraitsSize, the trait records
 *     follow it and fill TraitsSize exactly, etw_traits_next walks them all
 *     with no error, and has_group/group agree with the first type-1 trait;
 *   - parse -> build: the parsed name and traits, rebuilt with
 *     etw_traits_build, give back the first TraitsSize bytes exactly (when
 *     no trait has type 0, which build refuses);
 *   - build -> parse: a blob built from parameters taken from the input
 *     parses back to the same name, group and traits; too small a buffer
 *     gives ETW_E_SMALL_BUFFER with the needed size and writes nothing. */
#include "etwdecode/etw_traits.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FUZZ_ASSERT(c)                                                         \
    do {                                                                       \
        if (!(c)) {                                                            \
            fprintf(stderr, "%s:%d: assertion failed: %s\n", __FILE__,         \
                    __LINE__, #c);                                             \
            abort();                                                           \
        }                                                                      \
    } while (0)

#define MAX_TRAITS 64

static void parse_side(const uint8_t *data, size_t size) {
    etw_traits t;
    etw_status st = etw_traits_parse(data, size, &t);
    FUZZ_ASSERT(st == ETW_OK || st == ETW_E_TRUNCATED || st == ETW_E_CORRUPT);
    if (st != ETW_OK) {
        FUZZ_ASSERT(t.name == NULL && t.name_len == 0 && !t.has_group);
        return;
    }
    size_t tsize = (size_t)(data[0] | data[1] << 8);
    FUZZ_ASSERT(tsize >= 3 && tsize <= size);
    FUZZ_ASSERT((const uint8_t *)t.name == data + 2);
    FUZZ_ASSERT(2 + t.name_len < tsize);
    FUZZ_ASSERT(t.name[t.name_len] == 0);
    FUZZ_ASSERT(memchr(t.name, 0, t.name_len) == NULL);
    FUZZ_ASSERT(t.traits == data + 3 + t.name_len);
    FUZZ_ASSERT(3 + t.name_len + t.traits_len == tsize);

    etw_trait list[MAX_TRAITS];
    size_t n = 0, pos = 0, sum = 0;
    int saw_group = 0, has_zero = 0;
    etw_trait tr;
    etw_status s;
    while ((s = etw_traits_next(&t, &pos, &tr)) == ETW_OK) {
        FUZZ_ASSERT(tr.data >= t.traits && tr.data + tr.size <= t.traits + t.traits_len);
        sum += 3u + tr.size;
        if (tr.type == ETW_TRAIT_GROUP) {
            FUZZ_ASSERT(tr.size == 16);
            if (!saw_group) {
                etw_guid g = etw_guid_read(tr.data);
                FUZZ_ASSERT(t.has_group && etw_guid_equal(&g, &t.group));
            }
            saw_group = 1;
        }
        if (tr.type == 0) has_zero = 1;
        if (n < MAX_TRAITS) list[n] = tr;
        n++;
    }
    FUZZ_ASSERT(s == ETW_END);
    FUZZ_ASSERT(sum == t.traits_len && pos == t.traits_len);
    FUZZ_ASSERT(saw_group == t.has_group);

    /* parse -> build gives the same bytes */
    if (!has_zero && n <= MAX_TRAITS) {
        char *name = malloc(t.name_len + 1);
        FUZZ_ASSERT(name);
        memcpy(name, t.name, t.name_len + 1);
        uint8_t *out = malloc(tsize);
        FUZZ_ASSERT(out);
        size_t len = 0;
        etw_status b = etw_traits_build(out, tsize, &len, name, NULL, list, n);
        FUZZ_ASSERT(b == ETW_OK);
        FUZZ_ASSERT(len == tsize && memcmp(out, data, tsize) == 0);
        free(out);
        free(name);
    }
}

/* Build a blob from parameters read out of the input, parse it back. */
static void build_side(const uint8_t *data, size_t size) {
    if (size < 2) return;
    size_t at = 0;
    size_t nl = data[at++] % 40;
    int grp = data[at++] & 1;
    char name[41];
    for (size_t i = 0; i < nl; i++) {
        uint8_t c = at < size ? data[at++] : 'x';
        name[i] = (char)(c ? c : 'z'); /* no NUL inside the name */
    }
    name[nl] = 0;
    etw_guid g;
    memset(&g, 0, sizeof g);
    if (grp && size - at >= 16) {
        g = etw_guid_read(data + at);
        at += 16;
    }
    etw_trait custom[8];
    size_t nc = 0;
    while (nc < 8 && size - at >= 2) {
        uint8_t type = data[at++];
        size_t sz = data[at++];
        if (type == 0) type = 128;
        if (type == ETW_TRAIT_GROUP) sz = 16;
        if (sz > size - at) break;
        custom[nc].type = type;
        custom[nc].size = (uint16_t)sz;
        custom[nc].data = data + at;
        at += sz;
        nc++;
    }
    size_t expect = 3 + nl + (grp ? 19u : 0u);
    for (size_t k = 0; k < nc; k++) expect += 3u + custom[k].size;
    size_t need = 0;
    etw_status st = etw_traits_build(NULL, 0, &need, name, grp ? &g : NULL, custom, nc);
    FUZZ_ASSERT(st == ETW_E_SMALL_BUFFER);
    FUZZ_ASSERT(need == expect);

    /* one byte short: refused, nothing written */
    uint8_t *out = malloc(need + 1);
    FUZZ_ASSERT(out);
    memset(out, 0xA5, need + 1);
    size_t len = 0;
    st = etw_traits_build(out, need - 1, &len, name, grp ? &g : NULL, custom, nc);
    FUZZ_ASSERT(st == ETW_E_SMALL_BUFFER && len == need);
    for (size_t k = 0; k <= need; k++) FUZZ_ASSERT(out[k] == 0xA5);

    st = etw_traits_build(out, need, &len, name, grp ? &g : NULL, custom, nc);
    FUZZ_ASSERT(st == ETW_OK && len == need);
    FUZZ_ASSERT(out[need] == 0xA5);

    etw_traits t;
    FUZZ_ASSERT(etw_traits_parse(out, len, &t) == ETW_OK);
    FUZZ_ASSERT(t.name_len == nl && memcmp(t.name, name, nl) == 0);
    /* the group is the explicit one, else the first type-1 custom trait */
    int want_group = grp;
    etw_guid want = g;
    for (size_t k = 0; k < nc && !want_group; k++)
        if (custom[k].type == ETW_TRAIT_GROUP) {
            want_group = 1;
            want = etw_guid_read(custom[k].data);
        }
    FUZZ_ASSERT(t.has_group == want_group);
    if (want_group) FUZZ_ASSERT(etw_guid_equal(&t.group, &want));
    size_t pos = 0;
    etw_trait tr;
    if (grp) {
        FUZZ_ASSERT(etw_traits_next(&t, &pos, &tr) == ETW_OK);
        FUZZ_ASSERT(tr.type == ETW_TRAIT_GROUP && tr.size == 16);
    }
    for (size_t k = 0; k < nc; k++) {
        FUZZ_ASSERT(etw_traits_next(&t, &pos, &tr) == ETW_OK);
        FUZZ_ASSERT(tr.type == custom[k].type && tr.size == custom[k].size);
        FUZZ_ASSERT(memcmp(tr.data, custom[k].data, tr.size) == 0);
    }
    FUZZ_ASSERT(etw_traits_next(&t, &pos, &tr) == ETW_END);
    free(out);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    parse_side(data, size);
    build_side(data, size);
    return 0;
}
