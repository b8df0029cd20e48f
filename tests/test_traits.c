/* test_traits.c - provider traits blobs (include/etwdecode/etw_traits.h):
 * real-looking blobs (name only; name + group; name + group + custom
 * traits), build -> parse round trips over many combinations, every size
 * edge case (in exactly-sized allocations so AddressSanitizer sees any
 * overread), and the builder's buffer-size contract. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "etw_test.h"
#include "etw_test_builder.h"
#include "etwdecode/etw_traits.h"
#include "source/etw_tracelogging.h"

/* Parse from an exactly-sized copy kept until the next call (the result
 * borrows it). */
static uint8_t *g_copy;
static void release_copy(void) {
    free(g_copy);
    g_copy = NULL;
}
static etw_status parse_exact(const void *p, size_t n, etw_traits *t) {
    release_copy();
    g_copy = etb_dup_exact(p, n);
    return etw_traits_parse(g_copy, n, t);
}

static int name_is(const etw_traits *t, const char *want) {
    return t->name && t->name_len == strlen(want) && memcmp(t->name, want, t->name_len) == 0;
}

static const etw_guid k_group = {0x4f50731a, 0x89cf, 0x4782,
                                 {0xb3, 0xe0, 0xdc, 0xe8, 0xc9, 0x04, 0x76, 0xba}};

static void test_name_only(void) {
    /* the primitive-types.etl traits bytes */
    static const uint8_t blob[] = {0x0f, 0x00, 's', 'o', 'l', 'a', 'r', '_', 's',
                                   'y', 's', 't', 'e', 'm', 0x00};
    etw_traits t;
    ETW_CHECK_INT(parse_exact(blob, sizeof blob, &t), ETW_OK);
    ETW_CHECK(name_is(&t, "solar_system"));
    ETW_CHECK(!t.has_group);
    ETW_CHECK(!t.has_decode_guid);
    ETW_CHECK_INT(t.traits_len, 0);
    size_t pos = 0;
    etw_trait tr;
    ETW_CHECK_INT(etw_traits_next(&t, &pos, &tr), ETW_END);
    /* the provider-name helper agrees */
    const char *n;
    size_t l;
    ETW_CHECK_INT(etw_tl_provider_name(g_copy, sizeof blob, &n, &l), ETW_OK);
    ETW_CHECK(n == t.name && l == t.name_len);
}

static void test_name_group(void) {
    /* the lxcore_kernel.etl traits bytes */
    static const uint8_t blob[] = {
        0x38, 0x00, 'M', 'i', 'c', 'r', 'o', 's', 'o', 'f', 't', '.', 'W', 'i', 'n', 'd',
        'o', 'w', 's', '.', 'S', 'u', 'b', 's', 'y', 's', 't', 'e', 'm', '.', 'L', 'x',
        'C', 'o', 'r', 'e', 0x00, 0x13, 0x00, 0x01, 0x1a, 0x73, 0x50, 0x4f, 0xcf, 0x89,
        0x82, 0x47, 0xb3, 0xe0, 0xdc, 0xe8, 0xc9, 0x04, 0x76, 0xba};
    ETW_CHECK_INT(sizeof blob, 56);
    etw_traits t;
    ETW_CHECK_INT(parse_exact(blob, sizeof blob, &t), ETW_OK);
    ETW_CHECK(name_is(&t, "Microsoft.Windows.Subsystem.LxCore"));
    ETW_CHECK(t.has_group);
    ETW_CHECK(etw_guid_equal(&t.group, &k_group));
    char g[ETW_GUID_STRING_SIZE];
    etw_guid_format(&t.group, g);
    ETW_CHECK_STR(g, "4f50731a-89cf-4782-b3e0-dce8c90476ba");
    ETW_CHECK_INT(t.traits_len, 19);
    size_t pos = 0;
    etw_trait tr;
    ETW_CHECK_INT(etw_traits_next(&t, &pos, &tr), ETW_OK);
    ETW_CHECK_INT(tr.type, ETW_TRAIT_GROUP);
    ETW_CHECK_INT(tr.size, 16);
    ETW_CHECK(tr.data == g_copy + 40);
    ETW_CHECK_INT(etw_traits_next(&t, &pos, &tr), ETW_END);
    ETW_CHECK_INT(etw_traits_next(&t, &pos, &tr), ETW_END); /* stays at the end */
    /* the builder produces the same bytes */
    uint8_t out[64];
    size_t len = 0;
    ETW_CHECK_INT(etw_traits_build(out, sizeof out, &len, "Microsoft.Windows.Subsystem.LxCore",
                                   &k_group, NULL, 0),
                  ETW_OK);
    ETW_CHECK_INT(len, sizeof blob);
    ETW_CHECK(memcmp(out, blob, sizeof blob) == 0);
}

static void test_name_group_custom(void) {
    /* "P" + group + trait 200 (3 bytes) + trait 255 (empty) + decode GUID */
    etb_buf b;
    etb_init(&b);
    etb_u16(&b, 0);
    etb_bytes(&b, "P", 2);
    etb_u16(&b, 19);
    etb_u8(&b, 1);
    etb_guid(&b, &k_group);
    etb_u16(&b, 6);
    etb_u8(&b, 200);
    etb_bytes(&b, "abc", 3);
    etb_u16(&b, 3);
    etb_u8(&b, 255);
    etw_guid dg = etb_make_guid(0x11223344, 0x5566, 0x7788, 0x99aabbccddeeff00ull);
    etb_u16(&b, 19);
    etb_u8(&b, ETW_TRAIT_DECODE_GUID);
    etb_guid(&b, &dg);
    etb_put16_at(&b, 0, (uint16_t)b.len);
    etw_traits t;
    ETW_CHECK_INT(parse_exact(b.data, b.len, &t), ETW_OK);
    ETW_CHECK(name_is(&t, "P"));
    ETW_CHECK(t.has_group && etw_guid_equal(&t.group, &k_group));
    ETW_CHECK(t.has_decode_guid && etw_guid_equal(&t.decode_guid, &dg));
    size_t pos = 0;
    etw_trait tr;
    ETW_CHECK_INT(etw_traits_next(&t, &pos, &tr), ETW_OK);
    ETW_CHECK_INT(tr.type, 1);
    ETW_CHECK_INT(etw_traits_next(&t, &pos, &tr), ETW_OK);
    ETW_CHECK_INT(tr.type, 200);
    ETW_CHECK_INT(tr.size, 3);
    ETW_CHECK(memcmp(tr.data, "abc", 3) == 0);
    ETW_CHECK_INT(etw_traits_next(&t, &pos, &tr), ETW_OK);
    ETW_CHECK_INT(tr.type, 255);
    ETW_CHECK_INT(tr.size, 0);
    ETW_CHECK_INT(etw_traits_next(&t, &pos, &tr), ETW_OK);
    ETW_CHECK_INT(tr.type, ETW_TRAIT_DECODE_GUID);
    ETW_CHECK_INT(tr.size, 16);
    ETW_CHECK_INT(etw_traits_next(&t, &pos, &tr), ETW_END);

    /* a decode-GUID trait of another size stays raw, not an error */
    etb_reset(&b);
    etb_u16(&b, 0);
    etb_bytes(&b, "Q", 2);
    etb_u16(&b, 7);
    etb_u8(&b, ETW_TRAIT_DECODE_GUID);
    etb_u32(&b, 1);
    etb_put16_at(&b, 0, (uint16_t)b.len);
    ETW_CHECK_INT(parse_exact(b.data, b.len, &t), ETW_OK);
    ETW_CHECK(!t.has_decode_guid);
    /* two group traits: the first one counts */
    etb_reset(&b);
    etb_u16(&b, 0);
    etb_bytes(&b, "G", 2);
    etb_u16(&b, 19);
    etb_u8(&b, 1);
    etb_guid(&b, &k_group);
    etb_u16(&b, 19);
    etb_u8(&b, 1);
    etb_guid(&b, &dg);
    etb_put16_at(&b, 0, (uint16_t)b.len);
    ETW_CHECK_INT(parse_exact(b.data, b.len, &t), ETW_OK);
    ETW_CHECK(etw_guid_equal(&t.group, &k_group));
    /* type 0 is kept raw */
    etb_reset(&b);
    etb_u16(&b, 0);
    etb_bytes(&b, "Z", 2);
    etb_u16(&b, 4);
    etb_u8(&b, 0);
    etb_u8(&b, 9);
    etb_put16_at(&b, 0, (uint16_t)b.len);
    ETW_CHECK_INT(parse_exact(b.data, b.len, &t), ETW_OK);
    pos = 0;
    ETW_CHECK_INT(etw_traits_next(&t, &pos, &tr), ETW_OK);
    ETW_CHECK_INT(tr.type, 0);
    ETW_CHECK_INT(tr.size, 1);
    etb_free(&b);
}

/* A tiny deterministic generator. */
static uint32_t g_rng = 12345;
static uint32_t rnd(void) {
    g_rng = g_rng * 1103515245u + 12345u;
    return g_rng >> 8;
}

static void test_round_trip(void) {
    static const char *names[] = {"", "a", "solar_system", "Microsoft.Windows.Subsystem.LxCore",
                                  "\xc3\xa9t\xc3\xa9", "x y z"};
    uint8_t data[300];
    for (size_t i = 0; i < sizeof data; i++) data[i] = (uint8_t)(i * 7 + 1);
    int cases = 0;
    for (size_t ni = 0; ni < sizeof names / sizeof names[0]; ni++)
        for (int grp = 0; grp < 2; grp++)
            for (int nc = 0; nc <= 4; nc++)
                for (int rep = 0; rep < 8; rep++) {
                    etw_trait custom[4];
                    for (int k = 0; k < nc; k++) {
                        uint32_t r = rnd();
                        custom[k].type = (uint8_t)(128 + r % 128);
                        if (rep == 7 && k == 0) custom[k].type = ETW_TRAIT_DECODE_GUID;
                        custom[k].size = (uint16_t)((r >> 8) % 40);
                        if (rep == 7 && k == 0) custom[k].size = 16;
                        if (rep == 6) custom[k].size = (uint16_t)(200 + k);
                        custom[k].data = data + (r >> 16) % 50;
                    }
                    etw_guid g = etb_make_guid(rnd(), (uint16_t)rnd(), (uint16_t)rnd(),
                                               ((uint64_t)rnd() << 32) | rnd());
                    size_t need = 0;
                    ETW_CHECK_INT(etw_traits_build(NULL, 0, &need, names[ni], grp ? &g : NULL,
                                                   custom, (size_t)nc),
                                  ETW_E_SMALL_BUFFER);
                    uint8_t *out = malloc(need);
                    size_t len = 0;
                    ETW_CHECK_INT(etw_traits_build(out, need, &len, names[ni], grp ? &g : NULL,
                                                   custom, (size_t)nc),
                                  ETW_OK);
                    ETW_CHECK_INT(len, need);
                    size_t expect = 2 + strlen(names[ni]) + 1 + (grp ? 19 : 0);
                    for (int k = 0; k < nc; k++) expect += 3 + custom[k].size;
                    ETW_CHECK_INT(len, expect);
                    ETW_CHECK_INT(out[0] | out[1] << 8, expect);
                    etw_traits t;
                    ETW_CHECK_INT(etw_traits_parse(out, len, &t), ETW_OK);
                    ETW_CHECK(name_is(&t, names[ni]));
                    ETW_CHECK_INT(t.has_group, grp);
                    if (grp) ETW_CHECK(etw_guid_equal(&t.group, &g));
                    ETW_CHECK_INT(t.has_decode_guid, rep == 7 && nc > 0);
                    size_t pos = 0;
                    etw_trait tr;
                    if (grp) {
                        ETW_CHECK_INT(etw_traits_next(&t, &pos, &tr), ETW_OK);
                        ETW_CHECK_INT(tr.type, ETW_TRAIT_GROUP);
                    }
                    for (int k = 0; k < nc; k++) {
                        ETW_CHECK_INT(etw_traits_next(&t, &pos, &tr), ETW_OK);
                        ETW_CHECK_INT(tr.type, custom[k].type);
                        ETW_CHECK_INT(tr.size, custom[k].size);
                        ETW_CHECK(memcmp(tr.data, custom[k].data, tr.size) == 0);
                    }
                    ETW_CHECK_INT(etw_traits_next(&t, &pos, &tr), ETW_END);
                    /* with trailing padding: same result */
                    uint8_t *padded = malloc(len + 5);
                    memcpy(padded, out, len);
                    memset(padded + len, 0xAB, 5);
                    etw_traits t2;
                    ETW_CHECK_INT(etw_traits_parse(padded, len + 5, &t2), ETW_OK);
                    ETW_CHECK_INT(t2.traits_len, t.traits_len);
                    ETW_CHECK_INT(t2.name_len, t.name_len);
                    /* truncated at every shorter length: an error */
                    for (size_t cut = 0; cut < len; cut++) {
                        uint8_t *c = etb_dup_exact(out, cut);
                        ETW_CHECK_INT(etw_traits_parse(c, cut, &t2), ETW_E_TRUNCATED);
                        free(c);
                    }
                    free(padded);
                    free(out);
                    cases++;
                }
    ETW_CHECK_INT(cases, 6 * 2 * 5 * 8);
}

static void test_edge_cases(void) {
    etw_traits t;
    static const uint8_t z[8] = {0};
    /* len below the size field */
    ETW_CHECK_INT(parse_exact(z, 0, &t), ETW_E_TRUNCATED);
    ETW_CHECK_INT(parse_exact(z, 1, &t), ETW_E_TRUNCATED);
    /* TraitsSize 0, 1, 2 */
    static const uint8_t s0[] = {0, 0, 0, 0};
    static const uint8_t s1[] = {1, 0, 0, 0};
    static const uint8_t s2[] = {2, 0, 0, 0};
    ETW_CHECK_INT(parse_exact(s0, sizeof s0, &t), ETW_E_CORRUPT);
    ETW_CHECK_INT(parse_exact(s1, sizeof s1, &t), ETW_E_CORRUPT);
    ETW_CHECK_INT(parse_exact(s2, sizeof s2, &t), ETW_E_CORRUPT);
    ETW_CHECK_INT(parse_exact(s2, 2, &t), ETW_E_CORRUPT);
    /* TraitsSize 3: empty name */
    static const uint8_t s3[] = {3, 0, 0};
    ETW_CHECK_INT(parse_exact(s3, sizeof s3, &t), ETW_OK);
    ETW_CHECK(name_is(&t, ""));
    ETW_CHECK_INT(t.traits_len, 0);
    /* TraitsSize 3 without a NUL */
    static const uint8_t s3n[] = {3, 0, 'x'};
    ETW_CHECK_INT(parse_exact(s3n, sizeof s3n, &t), ETW_E_CORRUPT);
    ETW_CHECK(t.name == NULL && t.name_len == 0);
    /* TraitsSize > len */
    static const uint8_t big[] = {6, 0, 'a', 'b', 0};
    ETW_CHECK_INT(parse_exact(big, sizeof big, &t), ETW_E_TRUNCATED);
    static const uint8_t huge[] = {0xFF, 0xFF, 'a', 0};
    ETW_CHECK_INT(parse_exact(huge, sizeof huge, &t), ETW_E_TRUNCATED);
    /* trailing bytes after TraitsSize are ignored, even a broken trait */
    static const uint8_t trail[] = {5, 0, 'a', 'b', 0, 0x01, 0x00, 0x07, 0xFF};
    ETW_CHECK_INT(parse_exact(trail, sizeof trail, &t), ETW_OK);
    ETW_CHECK(name_is(&t, "ab"));
    ETW_CHECK_INT(t.traits_len, 0);
    /* the name's NUL only in the trailing bytes: corrupt */
    static const uint8_t nulpast[] = {4, 0, 'a', 'b', 0};
    ETW_CHECK_INT(parse_exact(nulpast, sizeof nulpast, &t), ETW_E_CORRUPT);
    /* name exactly filling the blob without NUL (exact allocation) */
    static const uint8_t fill[] = {7, 0, 'a', 'b', 'c', 'd', 'e'};
    ETW_CHECK_INT(parse_exact(fill, sizeof fill, &t), ETW_E_CORRUPT);
    /* trait sizes 0, 1, 2 */
    for (uint8_t ts = 0; ts < 3; ts++) {
        uint8_t b[] = {8, 0, 'a', 0, ts, 0, 200, 0};
        ETW_CHECK_INT(parse_exact(b, sizeof b, &t), ETW_E_CORRUPT);
    }
    /* trait size exactly 3 (no data) */
    static const uint8_t t3[] = {7, 0, 'a', 0, 3, 0, 200};
    ETW_CHECK_INT(parse_exact(t3, sizeof t3, &t), ETW_OK);
    /* trait overrunning TraitsSize (but not the item) */
    static const uint8_t over[] = {8, 0, 'a', 0, 5, 0, 200, 1, 2, 3};
    ETW_CHECK_INT(parse_exact(over, sizeof over, &t), ETW_E_TRUNCATED);
    static const uint8_t overmax[] = {8, 0, 'a', 0, 0xFF, 0xFF, 200, 1};
    ETW_CHECK_INT(parse_exact(overmax, sizeof overmax, &t), ETW_E_TRUNCATED);
    /* one or two bytes left after the name: not a trait header */
    static const uint8_t left1[] = {5, 0, 'a', 0, 3};
    static const uint8_t left2[] = {6, 0, 'a', 0, 3, 0};
    ETW_CHECK_INT(parse_exact(left1, sizeof left1, &t), ETW_E_TRUNCATED);
    ETW_CHECK_INT(parse_exact(left2, sizeof left2, &t), ETW_E_TRUNCATED);
    /* group trait of 15 and 17 bytes */
    for (int gs = 15; gs <= 17; gs++) {
        etb_buf b;
        etb_init(&b);
        etb_u16(&b, 0);
        etb_bytes(&b, "g", 2);
        etb_u16(&b, (uint16_t)(3 + gs));
        etb_u8(&b, ETW_TRAIT_GROUP);
        for (int i = 0; i < gs; i++) etb_u8(&b, (uint8_t)i);
        etb_put16_at(&b, 0, (uint16_t)b.len);
        ETW_CHECK_INT(parse_exact(b.data, b.len, &t), gs == 16 ? ETW_OK : ETW_E_CORRUPT);
        if (gs != 16) ETW_CHECK(!t.has_group && t.name == NULL);
        etb_free(&b);
    }
    /* NULL arguments */
    ETW_CHECK_INT(etw_traits_parse(NULL, 4, &t), ETW_E_INVALID_ARG);
    ETW_CHECK_INT(etw_traits_parse(s3, 3, NULL), ETW_E_INVALID_ARG);
    ETW_CHECK_INT(etw_traits_parse(NULL, 0, &t), ETW_E_TRUNCATED);
}

static void test_next_defensive(void) {
    /* a hand-made etw_traits whose records are broken */
    static const uint8_t recs[] = {5, 0, 200, 1, 2, 2, 0, 201};
    etw_traits t;
    memset(&t, 0, sizeof t);
    t.traits = recs;
    t.traits_len = sizeof recs;
    size_t pos = 0;
    etw_trait tr;
    ETW_CHECK_INT(etw_traits_next(&t, &pos, &tr), ETW_OK);
    ETW_CHECK_INT(tr.type, 200);
    ETW_CHECK_INT(tr.size, 2);
    ETW_CHECK_INT(etw_traits_next(&t, &pos, &tr), ETW_E_CORRUPT); /* size 2 */
    t.traits_len = 6;
    pos = 5;
    ETW_CHECK_INT(etw_traits_next(&t, &pos, &tr), ETW_E_CORRUPT); /* 1 byte left */
    static const uint8_t over[] = {9, 0, 200, 1};
    t.traits = over;
    t.traits_len = sizeof over;
    pos = 0;
    ETW_CHECK_INT(etw_traits_next(&t, &pos, &tr), ETW_E_CORRUPT);
    t.traits = NULL;
    t.traits_len = 3;
    pos = 0;
    ETW_CHECK_INT(etw_traits_next(&t, &pos, &tr), ETW_E_CORRUPT);
    ETW_CHECK_INT(etw_traits_next(NULL, &pos, &tr), ETW_E_INVALID_ARG);
    ETW_CHECK_INT(etw_traits_next(&t, NULL, &tr), ETW_E_INVALID_ARG);
    ETW_CHECK_INT(etw_traits_next(&t, &pos, NULL), ETW_E_INVALID_ARG);
}

static void test_build_contract(void) {
    uint8_t out[64];
    size_t len = 99;
    /* too small: SMALL_BUFFER with the needed size, nothing written past cap */
    memset(out, 0xCC, sizeof out);
    ETW_CHECK_INT(etw_traits_build(out, 5, &len, "abcdef", NULL, NULL, 0), ETW_E_SMALL_BUFFER);
    ETW_CHECK_INT(len, 9);
    ETW_CHECK_INT(out[0], 0xCC);
    ETW_CHECK_INT(etw_traits_build(out, 8, &len, "abcdef", NULL, NULL, 0), ETW_E_SMALL_BUFFER);
    ETW_CHECK_INT(len, 9);
    ETW_CHECK_INT(etw_traits_build(out, 9, &len, "abcdef", NULL, NULL, 0), ETW_OK);
    ETW_CHECK_INT(len, 9);
    ETW_CHECK_INT(out[9], 0xCC);
    ETW_CHECK_INT(etw_traits_build(NULL, 0, &len, "abcdef", &k_group, NULL, 0),
                  ETW_E_SMALL_BUFFER);
    ETW_CHECK_INT(len, 28);
    /* build into an exact allocation */
    uint8_t *ex = malloc(28);
    ETW_CHECK_INT(etw_traits_build(ex, 28, &len, "abcdef", &k_group, NULL, 0), ETW_OK);
    etw_traits t;
    ETW_CHECK_INT(etw_traits_parse(ex, 28, &t), ETW_OK);
    ETW_CHECK(t.has_group);
    free(ex);
    /* invalid arguments */
    ETW_CHECK_INT(etw_traits_build(out, sizeof out, NULL, "a", NULL, NULL, 0), ETW_E_INVALID_ARG);
    ETW_CHECK_INT(etw_traits_build(out, sizeof out, &len, NULL, NULL, NULL, 0), ETW_E_INVALID_ARG);
    ETW_CHECK_INT(etw_traits_build(NULL, 10, &len, "a", NULL, NULL, 0), ETW_E_INVALID_ARG);
    ETW_CHECK_INT(etw_traits_build(out, sizeof out, &len, "a", NULL, NULL, 1), ETW_E_INVALID_ARG);
    etw_trait bad = {0, 1, (const uint8_t *)"x"};
    ETW_CHECK_INT(etw_traits_build(out, sizeof out, &len, "a", NULL, &bad, 1), ETW_E_INVALID_ARG);
    etw_trait nodata = {200, 4, NULL};
    ETW_CHECK_INT(etw_traits_build(out, sizeof out, &len, "a", NULL, &nodata, 1),
                  ETW_E_INVALID_ARG);
    etw_trait badgroup = {ETW_TRAIT_GROUP, 15, (const uint8_t *)"0123456789abcde"};
    ETW_CHECK_INT(etw_traits_build(out, sizeof out, &len, "a", NULL, &badgroup, 1),
                  ETW_E_INVALID_ARG);
    /* types 1..127 accepted for tests */
    etw_trait ms = {5, 2, (const uint8_t *)"hi"};
    ETW_CHECK_INT(etw_traits_build(out, sizeof out, &len, "a", NULL, &ms, 1), ETW_OK);
    ETW_CHECK_INT(len, 9);
    /* limits: 65535 is the largest blob */
    uint8_t *blk = calloc(65535, 1);
    etw_trait bigt = {200, (uint16_t)(65535 - 3 - 3), blk};
    ETW_CHECK_INT(etw_traits_build(NULL, 0, &len, "", NULL, &bigt, 1), ETW_E_SMALL_BUFFER);
    ETW_CHECK_INT(len, 65535);
    uint8_t *whole = malloc(65535);
    ETW_CHECK_INT(etw_traits_build(whole, 65535, &len, "", NULL, &bigt, 1), ETW_OK);
    ETW_CHECK_INT(etw_traits_parse(whole, len, &t), ETW_OK);
    free(whole);
    bigt.size++;
    ETW_CHECK_INT(etw_traits_build(NULL, 0, &len, "", NULL, &bigt, 1), ETW_E_LIMIT);
    etw_trait two[2] = {{200, 40000, blk}, {201, 40000, blk}};
    ETW_CHECK_INT(etw_traits_build(NULL, 0, &len, "", NULL, two, 2), ETW_E_LIMIT);
    char *longname = malloc(70000);
    memset(longname, 'n', 69999);
    longname[69999] = 0;
    ETW_CHECK_INT(etw_traits_build(NULL, 0, &len, longname, NULL, NULL, 0), ETW_E_LIMIT);
    longname[65532] = 0; /* 2 + 65532 + 1 = 65535 */
    ETW_CHECK_INT(etw_traits_build(NULL, 0, &len, longname, NULL, NULL, 0), ETW_E_SMALL_BUFFER);
    ETW_CHECK_INT(len, 65535);
    longname[65532] = 'n';
    longname[65533] = 0;
    ETW_CHECK_INT(etw_traits_build(NULL, 0, &len, longname, NULL, NULL, 0), ETW_E_LIMIT);
    free(longname);
    free(blk);
}

/* The test builder's traits and event helpers. */
static void test_builder_helpers(void) {
    etb_buf b;
    etb_init(&b);
    etw_trait c[2] = {{130, 3, (const uint8_t *)"xyz"}, {250, 0, NULL}};
    etb_traits(&b, "Builder", &k_group, c, 2);
    etw_traits t;
    ETW_CHECK_INT(parse_exact(b.data, b.len, &t), ETW_OK);
    ETW_CHECK(name_is(&t, "Builder"));
    ETW_CHECK(t.has_group);
    size_t pos = 0;
    etw_trait tr;
    int n = 0;
    while (etw_traits_next(&t, &pos, &tr) == ETW_OK) n++;
    ETW_CHECK_INT(n, 3);
    etb_free(&b);

    etb_event e;
    etb_event_init(&e, 4);
    etb_event_add_traits(&e, "EvProv", NULL);
    const etw_event *ev = etb_event_get(&e);
    etw_ext_item it;
    ETW_CHECK_INT(etw_event_find_ext(ev, ETW_EXT_PROV_TRAITS, &it), ETW_OK);
    ETW_CHECK_INT(it.size, 2 + 7);
    ETW_CHECK_INT(ev->ext_size, 24);
    ETW_CHECK_INT(ev->ext_data[0], 24); /* item size: 8 + 9 rounded to 8 */
    ETW_CHECK_INT(ev->ext_data[16], 0); /* padding is zero */
    ETW_CHECK_INT(etw_traits_parse(it.data, it.size, &t), ETW_OK);
    ETW_CHECK(name_is(&t, "EvProv"));
    ETW_CHECK_INT(etw_event_find_ext(ev, ETW_EXT_EVENT_SCHEMA_TL, &it), ETW_E_NOT_FOUND);
    etb_event_free(&e);
}

int main(void) {
    ETW_RUN(test_name_only);
    ETW_RUN(test_name_group);
    ETW_RUN(test_name_group_custom);
    ETW_RUN(test_round_trip);
    ETW_RUN(test_edge_cases);
    ETW_RUN(test_next_defensive);
    ETW_RUN(test_build_contract);
    ETW_RUN(test_builder_helpers);
    release_copy();
    return ETW_TEST_DONE();
}
