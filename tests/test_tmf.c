/* test_tmf.c - the TMF parser (src/wpp/etw_tmf.c) on the 90 TMF files of
 * nefarius/Nefarius.Utilities.ETW (../shared/data/wpp/SOURCES.md), whose own
 * tests assert 2,610 distinct (message GUID, number) entries and one full
 * record; and on hostile TMF text. */
#include <stdlib.h>
#include <string.h>

#include "etw_test.h"
#include "etwdecode/etw_wpp.h"
#include "wpp/etw_tmf.h"
#include "wpp/etw_wpp_types.h"

#ifndef ETW_SHARED_DATA_DIR
#define ETW_SHARED_DATA_DIR "../shared/data"
#endif
#define NEFARIUS ETW_SHARED_DATA_DIR "/wpp/nefarius-tmf"

static void test_nefarius_all(void) {
    etw_wpp_set *s = NULL;
    ETW_CHECK_INT(etw_wpp_set_new(&s, NULL), ETW_OK);
    uint32_t added = 0;
    etw_status st = etw_wpp_add_tmf_path(s, NEFARIUS, &added);
    if (st != ETW_OK) fprintf(stderr, "error: %s\n", etw_wpp_set_error(s));
    ETW_CHECK_INT(st, ETW_OK);
    /* UnitTestParser.cs: 2,610 distinct (message GUID, number) */
    ETW_CHECK_INT(etw_wpp_count(s), 2610);
    ETW_CHECK_INT(added, 2610);
    /* UnitTestParser.cs's asserted record */
    etw_guid g;
    ETW_CHECK(etw_tmf_parse_guid("e4b27b5e-24d0-369f-a4b5-23228e160bd2", 36, &g));
    const etw_wpp_message *m = etw_wpp_find(s, &g, 12);
    ETW_CHECK(m != NULL);
    if (m) {
        ETW_CHECK_STR(m->component, "BthPS3");
        ETW_CHECK_STR(m->func, "BthPS3_DeviceContextHeaderInit");
        ETW_CHECK_STR(m->file, "Bluetooth.Context.c");
        ETW_CHECK_STR(m->flags, "TRACE_BTH");
        ETW_CHECK_STR(m->level, "TRACE_LEVEL_VERBOSE");
        ETW_CHECK_STR(m->format, "%0 [%!FUNC!] <-- Exit <status=%10!s!>");
        ETW_CHECK_INT(m->argc, 1);
        if (m->argc == 1) {
            ETW_CHECK_INT(m->args[0].number, 10);
            ETW_CHECK_STR(m->args[0].type_name, "ItemNTSTATUS");
        }
        ETW_CHECK_INT(m->unknown_arg, 0);
    }
    /* no key of another GUID or number */
    ETW_CHECK(etw_wpp_find(s, &g, 9999) == NULL);
    /* every argument type the files use is in the table */
    etw_guid z;
    memset(&z, 0, sizeof z);
    ETW_CHECK(etw_wpp_find(s, &z, 12) == NULL);
    /* loading the same folder again adds nothing */
    ETW_CHECK_INT(etw_wpp_add_tmf_path(s, NEFARIUS, &added), ETW_OK);
    ETW_CHECK_INT(added, 0);
    ETW_CHECK_INT(etw_wpp_count(s), 2610);
    etw_wpp_set_free(s);
}

/* The one file named after its GUID, and the argument types of the set:
 * an ItemListByte(Low,APC,DPC) list (defaultwpp.ini's irql). */
static void test_nefarius_list(void) {
    etw_wpp_set *s = NULL;
    etw_wpp_set_new(&s, NULL);
    ETW_CHECK_INT(etw_wpp_add_tmf_path(s, NEFARIUS, NULL), ETW_OK);
    /* find an ItemListByte argument by walking a known message GUID's numbers */
    int seen_list = 0, seen_unknown = 0;
    static const char *const guids[] = {
        "01e9b841-7d67-315a-7b92-23b2033356de", "028f1450-e0d5-3b03-31cd-6226d77778f9",
        "03fb1cb4-1c81-30e9-50db-4ecb4f47594e", "0a9ab260-f7e4-311e-a23e-f8ab6856dc72",
        "0e10805c-4632-3a74-c514-84b39bf9e7ba", "1464502d-ef6e-356d-1893-f4983a74dc3b",
        "153dfc4f-211a-3361-925c-7bdd12271740"};
    for (size_t gi = 0; gi < sizeof guids / sizeof guids[0]; gi++) {
        etw_guid g;
        etw_tmf_parse_guid(guids[gi], 36, &g);
        for (uint32_t n = 0; n < 400; n++) {
            const etw_wpp_message *m = etw_wpp_find(s, &g, (uint16_t)n);
            if (!m) continue;
            seen_unknown += m->unknown_arg != 0;
            for (uint16_t a = 0; a < m->argc; a++) {
                if (strcmp(m->args[a].type_name, "ItemListByte") != 0) continue;
                seen_list++;
                ETW_CHECK_INT(m->args[a].list_count, 3);
                if (m->args[a].list_count == 3) {
                    ETW_CHECK_STR(m->args[a].list_names[0], "Low");
                    ETW_CHECK_STR(m->args[a].list_names[2], "DPC");
                    ETW_CHECK_INT(m->args[a].list_values[2], 2);
                }
            }
        }
    }
    ETW_CHECK(seen_list > 0);
    ETW_CHECK_INT(seen_unknown, 0);
    etw_wpp_set_free(s);
}

static const char HEAD[] = "// PDB:  x.pdb\n"
                           "11111111-2222-3333-4444-555555555555 Comp // SRC=a.c MJ= MN=\n";

/* Hostile text: clear errors, nothing added, no crash. */
static void expect_error(const char *body, etw_status want, const char *needle) {
    etw_wpp_set *s = NULL;
    etw_wpp_set_new(&s, NULL);
    size_t cap = strlen(HEAD) + strlen(body) + 1;
    char *text = malloc(cap);
    snprintf(text, cap, "%s%s", HEAD, body);
    etw_status st = etw_wpp_add_tmf_text(s, text, strlen(text), "hostile.tmf");
    ETW_CHECK_INT(st, want);
    if (!strstr(etw_wpp_set_error(s), needle) || !strstr(etw_wpp_set_error(s), "hostile.tmf:")) {
        fprintf(stderr, "  error was: %s (wanted %s)\n", etw_wpp_set_error(s), needle);
        ETW_CHECK(0);
    }
    ETW_CHECK_INT(etw_wpp_count(s), 0);
    etw_wpp_set_free(s);
    free(text);
}

static void test_hostile(void) {
    expect_error("#typev a_c1 10 \"x %10!d!\" //   LEVEL=L\n{\nv, ItemLong -- 10\n", ETW_E_CORRUPT, "not closed");
    expect_error("#typev a_c1 10 \"x\"\n{\nv, ItemLong -- 9\n}\n", ETW_E_CORRUPT, "out of range");
    expect_error("#typev a_c1 10 \"x\"\n{\nv, ItemLong -- 100\n}\n", ETW_E_CORRUPT, "out of range");
    expect_error("#typev a_c1 10 \"x\"\n{\nv, ItemLong -- 99999999999999999999999\n}\n", ETW_E_CORRUPT,
                 "bad number");
    expect_error("#typev a_c1 10 \"x\"\n{\nv, ItemLong -- 10\nw, ItemLong -- 12\n}\n", ETW_E_CORRUPT,
                 "missing one before 12");
    expect_error("#typev a_c1 10 \"x\"\n{\nv, ItemLong -- 10\nw, ItemLong -- 10\n}\n", ETW_E_CORRUPT, "twice");
    expect_error("#typev a_c1 70000 \"x\"\n", ETW_E_CORRUPT, "0..65535");
    expect_error("#typev a_c1 10 x\n", ETW_E_CORRUPT, "quoted");
    expect_error("}\n", ETW_E_CORRUPT, "outside");
    expect_error("{\n", ETW_E_CORRUPT, "without a #typev");
    expect_error("garbage line\n", ETW_E_CORRUPT, "not a comment");
    expect_error("#typev a_c1 10 \"x\"\n{\nv ItemLong 10\n}\n", ETW_E_CORRUPT, "-- <number>");
    expect_error("#typev a_c1 10 \"x\"\n{\nv, ItemListByte(a,b -- 10\n}\n", ETW_E_CORRUPT, "unclosed");
    /* a huge list */
    {
        size_t n = 3 * 2000 + 200;
        char *big = malloc(n);
        size_t k = (size_t)snprintf(big, n, "#typev a_c1 10 \"x\"\n{\nv, ItemListByte(");
        for (int i = 0; i < 2000; i++) k += (size_t)snprintf(big + k, n - k, "a,");
        k += (size_t)snprintf(big + k, n - k, "b) -- 10\n}\n");
        expect_error(big, ETW_E_LIMIT, "1024");
        free(big);
    }
    /* #typev before any GUID line */
    {
        etw_wpp_set *s = NULL;
        etw_wpp_set_new(&s, NULL);
        const char *t = "#typev a_c1 10 \"x\"\n";
        ETW_CHECK_INT(etw_wpp_add_tmf_text(s, t, strlen(t), "g.tmf"), ETW_E_CORRUPT);
        ETW_CHECK(strstr(etw_wpp_set_error(s), "before any message GUID") != NULL);
        /* a NUL in the text */
        const char nul[] = "// a\0b\n";
        ETW_CHECK_INT(etw_wpp_add_tmf_text(s, nul, sizeof nul - 1, "n.tmf"), ETW_E_CORRUPT);
        ETW_CHECK_INT(etw_wpp_add_tmf_text(NULL, t, 1, "x"), ETW_E_INVALID_ARG);
        ETW_CHECK_INT(etw_wpp_add_tmf_path(s, "/nonexistent/x.tmf", NULL), ETW_E_IO);
        etw_wpp_set_free(s);
    }
}

/* Grammar details: lists with name=value, sets, an unknown type, the line
 * from the tag, a block-less last message, CR LF. */
static void test_grammar(void) {
    const char *t = "// PDB:  x.pdb\r\n"
                    "aaaaaaaa-bbbb-cccc-dddd-eeeeeeeeeeee My Comp // SRC=my file.c MJ= MN=\r\n"
                    "#typev my_file_c77 10 \"%0 a \"quoted\" %10!s! %11!s!\" //   LEVEL=TRACE_LEVEL_ERROR FLAGS=F1 FUNC=ns::f\r\n"
                    "{\r\n"
                    "x, ItemListLong(A=5,B,C=0x10) -- 10\r\n"
                    "f(a, b), ItemSetByte(R,W,X) -- 11\r\n"
                    "}\r\n"
                    "#typev my_file_c80 11 \"%10!s!\"\r\n"
                    "{\r\n"
                    "q, ItemMystery -- 10\r\n"
                    "}\r\n"
                    "#typev my_file_c90 12 \"no args\"\r\n";
    etw_wpp_set *s = NULL;
    etw_wpp_set_new(&s, NULL);
    etw_status st = etw_wpp_add_tmf_text(s, t, strlen(t), "g.tmf");
    if (st) fprintf(stderr, "%s\n", etw_wpp_set_error(s));
    ETW_CHECK_INT(st, ETW_OK);
    ETW_CHECK_INT(etw_wpp_count(s), 3);
    etw_guid g;
    etw_tmf_parse_guid("AAAAAAAA-BBBB-CCCC-DDDD-EEEEEEEEEEEE", 36, &g);
    ETW_CHECK_INT(g.data1, 0xaaaaaaaau);
    ETW_CHECK_INT(g.data4[7], 0xee);
    const etw_wpp_message *m = etw_wpp_find(s, &g, 10);
    ETW_CHECK(m != NULL);
    if (m) {
        ETW_CHECK_STR(m->component, "My Comp");
        ETW_CHECK_STR(m->file, "my file.c");
        ETW_CHECK_STR(m->format, "%0 a \"quoted\" %10!s! %11!s!");
        ETW_CHECK_STR(m->func, "ns::f");
        ETW_CHECK_STR(m->flags, "F1");
        ETW_CHECK_STR(m->tag, "my_file_c77");
        ETW_CHECK_INT(m->line, 77);
        ETW_CHECK_INT(m->argc, 2);
        ETW_CHECK_STR(m->args[0].name, "x");
        ETW_CHECK_INT(m->args[0].list_count, 3);
        ETW_CHECK_INT(m->args[0].list_values[0], 5);
        ETW_CHECK_INT(m->args[0].list_values[1], 6);
        ETW_CHECK_INT(m->args[0].list_values[2], 16);
        ETW_CHECK_STR(m->args[1].name, "f(a, b)");
        ETW_CHECK_INT(m->args[1].list_values[2], 4);
    }
    m = etw_wpp_find(s, &g, 11);
    ETW_CHECK(m && m->unknown_arg == 1 && m->args[0].type == 0);
    m = etw_wpp_find(s, &g, 12);
    ETW_CHECK(m && m->argc == 0 && m->level[0] == 0);
    ETW_CHECK(etw_wpp_type_lookup("ItemHEXDump", 11) == etw_wpp_type_lookup("ItemHexDump", 11));
    etw_wpp_set_free(s);
}

int main(void) {
    ETW_RUN(test_nefarius_all);
    ETW_RUN(test_nefarius_list);
    ETW_RUN(test_hostile);
    ETW_RUN(test_grammar);
    return ETW_TEST_DONE();
}
