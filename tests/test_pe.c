/* test_pe.c - the PE resource reader (src/wevt/etw_pe.c) and the message
 * table reader (src/wevt/etw_msgtable.c).
 *
 * Real files: three DLLs of tests/data/wevt/pe (a PE32 with WEVT_TEMPLATE
 * and a UTF-16 message table, a PE32 with an ANSI message table, an x64
 * PE32+ with only MUI resources), the message tables mc.exe compiled for
 * the event-trace-kit manifests (texts checked against the manifests'
 * string tables), and the DLLs tests/make_wevt_dlls.sh builds from those
 * blobs (the resources read back byte for byte). Hostile inputs: a real DLL
 * cut at every length, a small synthetic PE whose tree is damaged one way
 * at a time (loops, huge counts, data past the end), and damaged message
 * tables (huge block counts, entry lengths 0 and 2, ids running backwards).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "etw_test.h"
#include "wevt/etw_msgtable.h"
#include "wevt/etw_pe.h"

#define WEVT_DIR ETW_TEST_DATA_DIR "/wevt"

static uint8_t *read_all(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    uint8_t *buf = NULL;
    long n;
    *len = 0;
    if (!f) return NULL;
    if (fseek(f, 0, SEEK_END) == 0 && (n = ftell(f)) >= 0 && fseek(f, 0, SEEK_SET) == 0) {
        buf = malloc((size_t)n + 1);
        if (buf && fread(buf, 1, (size_t)n, f) == (size_t)n) {
            *len = (size_t)n;
        } else {
            free(buf);
            buf = NULL;
        }
    }
    fclose(f);
    return buf;
}

/* The resource's bytes as a message table, opened. */
static int open_msgtable(const etw_pe *pe, etw_msgtable *t) {
    etw_pe_resource r;
    const char *why = NULL;
    if (etw_pe_find_resource(pe, NULL, ETW_RT_MESSAGETABLE, 0x0409, &r, &why) != ETW_OK) return 0;
    return etw_msgtable_open(t, r.data, r.len, &why) == ETW_OK;
}

/* Collects what etw_msgtable_foreach hands over. */
typedef struct collected {
    int n;
    uint32_t ids[256];
    char texts[256][80];
    int bad_tail; /* a text that still ends in CR or LF */
} collected;

static int collect(void *ctx, uint32_t id, const char *text, size_t len) {
    collected *c = ctx;
    if (len > 0 && (text[len - 1] == '\r' || text[len - 1] == '\n')) c->bad_tail++;
    if (strlen(text) != len) c->bad_tail++;
    if (c->n < 256) {
        c->ids[c->n] = id;
        snprintf(c->texts[c->n], sizeof c->texts[0], "%s", text);
    }
    c->n++;
    return 0;
}

/* ------------------------------------------------------------------------ */
/* Real DLLs                                                                */
/* ------------------------------------------------------------------------ */

static void test_wevt_template_dll(void) {
    size_t len;
    uint8_t *buf = read_all(WEVT_DIR "/pe/wrc-test-wevt_template.dll", &len);
    ETW_CHECK(buf != NULL);
    if (!buf) return;
    etw_pe pe;
    const char *why = NULL;
    ETW_CHECK_INT(etw_pe_open(&pe, buf, len, &why), ETW_OK);
    ETW_CHECK_INT(pe.is_pe32plus, 0);
    ETW_CHECK_INT(pe.machine, 0x14C); /* IMAGE_FILE_MACHINE_I386 */
    ETW_CHECK(pe.rsrc_rva != 0);

    etw_pe_resource r;
    ETW_CHECK_INT(etw_pe_find_resource(&pe, "WEVT_TEMPLATE", 0, 0x0409, &r, &why), ETW_OK);
    ETW_CHECK_INT(r.len, 538);
    ETW_CHECK(r.len >= 4 && memcmp(r.data, "CRIM", 4) == 0);
    ETW_CHECK_INT(r.type_id, 0);
    ETW_CHECK_INT(r.name_id, 1);
    ETW_CHECK_INT(r.lang, 0x0409);
    /* CRIM's own size field (u32 at +4): 536, the resource 2 bytes more
     * (the resource compiler's padding) */
    ETW_CHECK_INT(r.data[4] | (r.data[5] << 8), 536);
    /* type names compare case-insensitively; a longer or shorter name is
     * another type */
    ETW_CHECK_INT(etw_pe_find_resource(&pe, "wevt_template", 0, 0, &r, &why), ETW_OK);
    ETW_CHECK_INT(etw_pe_find_resource(&pe, "WEVT_TEMPLAT", 0, 0, &r, &why), ETW_E_NOT_FOUND);
    ETW_CHECK_INT(etw_pe_find_resource(&pe, "WEVT_TEMPLATEX", 0, 0, &r, &why), ETW_E_NOT_FOUND);
    ETW_CHECK_INT(etw_pe_has_resource_type(&pe, "WEVT_TEMPLATE", 0), 1);
    ETW_CHECK_INT(etw_pe_has_resource_type(&pe, NULL, 24), 1); /* RT_MANIFEST */
    ETW_CHECK_INT(etw_pe_has_resource_type(&pe, "MUI", 0), 0);
    ETW_CHECK_INT(etw_pe_has_resource_type(&pe, NULL, 16), 0); /* no RT_VERSION */

    ETW_CHECK_INT(etw_pe_find_resource(&pe, NULL, ETW_RT_MESSAGETABLE, 0x0407, &r, &why), ETW_OK);
    ETW_CHECK_INT(r.len, 52);
    ETW_CHECK_INT(r.type_id, 11);
    ETW_CHECK_INT(r.lang, 0x0409); /* no de-DE: en-US */
    etw_msgtable t;
    ETW_CHECK_INT(etw_msgtable_open(&t, r.data, r.len, &why), ETW_OK);
    ETW_CHECK_INT(t.nblocks, 1);
    ETW_CHECK_INT(etw_msgtable_count(&t), 1);
    collected *c = calloc(1, sizeof *c);
    char text[256];
    ETW_CHECK_INT(etw_msgtable_foreach(&t, text, sizeof text, collect, c), ETW_OK);
    ETW_CHECK_INT(c->n, 1);
    ETW_CHECK_INT(c->ids[0], 0xB0010001u);
    ETW_CHECK_STR(c->texts[0], "A test value");
    ETW_CHECK_INT(c->bad_tail, 0);
    size_t tl = 0;
    ETW_CHECK_INT(etw_msgtable_get(&t, 0xB0010001u, text, sizeof text, &tl), ETW_OK);
    ETW_CHECK_STR(text, "A test value");
    ETW_CHECK_INT(tl, 12);
    ETW_CHECK_INT(etw_msgtable_get(&t, 0xB0010002u, text, sizeof text, &tl), ETW_E_NOT_FOUND);
    ETW_CHECK_INT(etw_msgtable_get(&t, 0xB0010000u, text, sizeof text, &tl), ETW_E_NOT_FOUND);
    /* the raw entry: UTF-16, "A test value\r\n" then NULs to a multiple of 4 */
    const uint8_t *raw;
    size_t rawlen;
    uint16_t flags;
    ETW_CHECK_INT(etw_msgtable_entry(&t, 0xB0010001u, &raw, &rawlen, &flags), ETW_OK);
    ETW_CHECK_INT(flags, 1);
    ETW_CHECK_INT(rawlen, 32);
    ETW_CHECK(rawlen >= 28 && raw[24] == '\r' && raw[26] == '\n' && raw[28] == 0);
    /* too small a buffer: cut at a character, still terminated */
    ETW_CHECK_INT(etw_msgtable_get(&t, 0xB0010001u, text, 5, &tl), ETW_E_LIMIT);
    ETW_CHECK_STR(text, "A te");
    ETW_CHECK_INT(tl, 4);
    ETW_CHECK_INT(etw_msgtable_get(&t, 0xB0010001u, text, 0, &tl), ETW_E_INVALID_ARG);
    free(c);
    free(buf);
}

static void test_wrc_test_dll(void) {
    size_t len;
    uint8_t *buf = read_all(WEVT_DIR "/pe/wrc_test.dll", &len);
    ETW_CHECK(buf != NULL);
    if (!buf) return;
    etw_pe pe;
    const char *why = NULL;
    ETW_CHECK_INT(etw_pe_open(&pe, buf, len, &why), ETW_OK);
    ETW_CHECK_INT(pe.is_pe32plus, 0);
    ETW_CHECK_INT(pe.machine, 0x14C);
    etw_pe_resource r;
    ETW_CHECK_INT(etw_pe_find_resource(&pe, "WEVT_TEMPLATE", 0, 0, &r, &why), ETW_E_NOT_FOUND);
    ETW_CHECK_INT(etw_pe_has_resource_type(&pe, NULL, 6), 1);  /* RT_STRING */
    ETW_CHECK_INT(etw_pe_has_resource_type(&pe, NULL, 16), 1); /* RT_VERSION */
    ETW_CHECK_INT(etw_pe_find_resource(&pe, NULL, 16, 0, &r, &why), ETW_OK);
    ETW_CHECK_INT(r.len, 764);
    ETW_CHECK_INT(r.data[0] | (r.data[1] << 8), 764); /* VS_VERSIONINFO wLength */
    /* RT_STRING: two names (63, 70); the first is returned */
    ETW_CHECK_INT(etw_pe_find_resource(&pe, NULL, 6, 0, &r, &why), ETW_OK);
    ETW_CHECK_INT(r.name_id, 63);
    ETW_CHECK_INT(r.len, 50);

    ETW_CHECK_INT(etw_pe_find_resource(&pe, NULL, ETW_RT_MESSAGETABLE, 0x0409, &r, &why), ETW_OK);
    ETW_CHECK_INT(r.len, 120);
    etw_msgtable t;
    ETW_CHECK_INT(etw_msgtable_open(&t, r.data, r.len, &why), ETW_OK);
    ETW_CHECK_INT(t.nblocks, 2);
    ETW_CHECK_INT(etw_msgtable_count(&t), 3);
    collected *c = calloc(1, sizeof *c);
    char text[256];
    ETW_CHECK_INT(etw_msgtable_foreach(&t, text, sizeof text, collect, c), ETW_OK);
    ETW_CHECK_INT(c->n, 3);
    ETW_CHECK_INT(c->ids[0], 1);
    ETW_CHECK_STR(c->texts[0], "Category");
    ETW_CHECK_INT(c->ids[1], 2);
    ETW_CHECK_STR(c->texts[1], "My messgage with parameters %1 %2"); /* sic */
    ETW_CHECK_INT(c->ids[2], 1000);
    ETW_CHECK_STR(c->texts[2], "My message without parameters");
    ETW_CHECK_INT(c->bad_tail, 0);
    static const uint32_t ids[3] = {1, 2, 1000};
    static const size_t rawlens[3] = {12, 36, 32};
    for (int i = 0; i < 3; i++) {
        const uint8_t *raw;
        size_t rawlen;
        uint16_t flags = 99;
        ETW_CHECK_INT(etw_msgtable_entry(&t, ids[i], &raw, &rawlen, &flags), ETW_OK);
        ETW_CHECK_INT(flags, 0); /* ANSI */
        ETW_CHECK_INT(rawlen, rawlens[i]);
        /* one byte per character: the text, then CR LF */
        size_t tl = strlen(c->texts[i]);
        ETW_CHECK(rawlen >= tl + 2 && memcmp(raw, c->texts[i], tl) == 0 && raw[tl] == '\r' && raw[tl + 1] == '\n');
    }
    ETW_CHECK_INT(etw_msgtable_get(&t, 3, text, sizeof text, NULL), ETW_E_NOT_FOUND);
    ETW_CHECK_INT(etw_msgtable_get(&t, 999, text, sizeof text, NULL), ETW_E_NOT_FOUND);
    ETW_CHECK_INT(etw_msgtable_get(&t, 1000, text, sizeof text, NULL), ETW_OK);
    ETW_CHECK_STR(text, "My message without parameters");
    free(c);
    free(buf);
}

static void test_mui_dll(void) {
    size_t len;
    uint8_t *buf = read_all(WEVT_DIR "/pe/wrc_test.mui.dll", &len);
    ETW_CHECK(buf != NULL);
    if (!buf) return;
    etw_pe pe;
    const char *why = NULL;
    ETW_CHECK_INT(etw_pe_open(&pe, buf, len, &why), ETW_OK);
    ETW_CHECK_INT(pe.is_pe32plus, 1);
    ETW_CHECK_INT(pe.machine, 0x8664); /* IMAGE_FILE_MACHINE_AMD64 */
    ETW_CHECK_INT(etw_pe_has_resource_type(&pe, "MUI", 0), 1);
    ETW_CHECK_INT(etw_pe_has_resource_type(&pe, "mui", 0), 1);
    ETW_CHECK_INT(etw_pe_has_resource_type(&pe, "WEVT_TEMPLATE", 0), 0);
    ETW_CHECK_INT(etw_pe_has_resource_type(&pe, NULL, ETW_RT_MESSAGETABLE), 0);
    etw_pe_resource r;
    ETW_CHECK_INT(etw_pe_find_resource(&pe, NULL, ETW_RT_MESSAGETABLE, 0x0409, &r, &why), ETW_E_NOT_FOUND);
    ETW_CHECK_INT(etw_pe_find_resource(&pe, "WEVT_TEMPLATE", 0, 0x0409, &r, &why), ETW_E_NOT_FOUND);
    ETW_CHECK_INT(etw_pe_find_resource(&pe, "MUI", 0, 0x0409, &r, &why), ETW_OK);
    ETW_CHECK_INT(r.len, 200);
    /* the MUI resource starts with its signature 0xFECDFECD and its size */
    ETW_CHECK(r.len >= 8 && r.data[0] == 0xCD && r.data[1] == 0xFE && r.data[2] == 0xCD && r.data[3] == 0xFE);
    ETW_CHECK_INT(r.data[4] | (r.data[5] << 8), 200);
    free(buf);
}

/* ------------------------------------------------------------------------ */
/* mc.exe's message tables (event-trace-kit)                                */
/* ------------------------------------------------------------------------ */

static const struct {
    const char *file;
    uint32_t nblocks, count;
} msg_bins[] = {
    {"EventAttributes.msg.bin", 2, 5},
    {"ImportChannelFromProvider.msg.bin", 6, 16},
    {"ImportChannels.msg.bin", 5, 14},
    {"Large.msg.bin", 49, 140},
    {"ProviderTraits.msg.bin", 3, 3},
    {"ReferenceChannels.msg.bin", 7, 20},
    {"TaskOpcodes.msg.bin", 6, 12},
    {"wpf-etw.msg.bin", 3, 32},
    {"wpf-etw.msg.v3-8.1-compat.bin", 3, 32},
};

static void test_msg_bins(void) {
    for (size_t i = 0; i < sizeof msg_bins / sizeof msg_bins[0]; i++) {
        char path[512];
        size_t len;
        snprintf(path, sizeof path, "%s/event-trace-kit/%s", WEVT_DIR, msg_bins[i].file);
        uint8_t *buf = read_all(path, &len);
        ETW_CHECK(buf != NULL);
        if (!buf) continue;
        etw_msgtable t;
        const char *why = NULL;
        ETW_CHECK_INT(etw_msgtable_open(&t, buf, len, &why), ETW_OK);
        ETW_CHECK_INT(t.nblocks, msg_bins[i].nblocks);
        ETW_CHECK_INT(t.sorted, 1);
        ETW_CHECK_INT(etw_msgtable_count(&t), msg_bins[i].count);
        collected *c = calloc(1, sizeof *c);
        char text[256];
        ETW_CHECK_INT(etw_msgtable_foreach(&t, text, sizeof text, collect, c), ETW_OK);
        ETW_CHECK_INT(c->n, (int)msg_bins[i].count);
        ETW_CHECK_INT(c->bad_tail, 0);
        /* every message by id too, the same text, UTF-16 as mc.exe writes */
        int same = 0, utf16 = 0, crlf = 0;
        for (int k = 0; k < c->n && k < 256; k++) {
            size_t tl;
            const uint8_t *raw;
            size_t rawlen;
            uint16_t flags = 0;
            if (etw_msgtable_get(&t, c->ids[k], text, sizeof text, &tl) == ETW_OK && strcmp(text, c->texts[k]) == 0 &&
                tl == strlen(c->texts[k]) && tl > 0)
                same++;
            if (etw_msgtable_entry(&t, c->ids[k], &raw, &rawlen, &flags) == ETW_OK && flags == 1) {
                utf16++;
                /* mc.exe ends every text with CR LF, then a NUL, padded */
                size_t at = 2 * tl;
                if (rawlen % 4 == 0 && rawlen >= at + 6 && raw[at] == '\r' && raw[at + 1] == 0 &&
                    raw[at + 2] == '\n' && raw[at + 3] == 0 && raw[at + 4] == 0 && raw[at + 5] == 0)
                    crlf++;
            }
        }
        ETW_CHECK_INT(same, c->n);
        ETW_CHECK_INT(utf16, c->n);
        ETW_CHECK_INT(crlf, c->n);
        if (strcmp(msg_bins[i].file, "wpf-etw.msg.bin") == 0) {
            /* wpf-etw.man: <string id="...DispatcherPriority.0.message"
             * value="Inactive"/>, the Layout_ and IRT_ strings, and the
             * winmeta.xml names of the opcodes and levels it uses */
            static const struct {
                uint32_t id;
                const char *text;
            } want[] = {
                {0x30000000u, "Info"},     {0x30000001u, "Start"},
                {0x30000002u, "Stop"},     {0x50000004u, "Information"},
                {0x50000005u, "Verbose"},  {0xD0000001u, "Inactive"},
                {0xD000000Bu, "Send"},     {0xD0000011u, "HwndSource_SetLayoutSize"},
                {0xD0000014u, "Clip_and_Opacity"}, {0xD000001Bu, "TileBrush"},
            };
            for (size_t k = 0; k < sizeof want / sizeof want[0]; k++) {
                ETW_CHECK_INT(etw_msgtable_get(&t, want[k].id, text, sizeof text, NULL), ETW_OK);
                ETW_CHECK_STR(text, want[k].text);
            }
            ETW_CHECK_INT(etw_msgtable_get(&t, 0xD000001Cu, text, sizeof text, NULL), ETW_E_NOT_FOUND);
            ETW_CHECK_INT(etw_msgtable_get(&t, 0x30000003u, text, sizeof text, NULL), ETW_E_NOT_FOUND);
        }
        if (strcmp(msg_bins[i].file, "Large.msg.bin") == 0) {
            ETW_CHECK_INT(etw_msgtable_get(&t, 0x10000031u, text, sizeof text, NULL), ETW_OK);
            ETW_CHECK_STR(text, "Response Time");
            ETW_CHECK_INT(etw_msgtable_get(&t, 0xB0FFFFFFu, text, sizeof text, NULL), ETW_OK);
            ETW_CHECK_STR(text, "event.1.10");
            ETW_CHECK_INT(etw_msgtable_get(&t, 0x5080FFFFu, text, sizeof text, NULL), ETW_OK);
            ETW_CHECK_STR(text, "Filter.1.5");
        }
        free(c);
        free(buf);
    }
}

/* The DLLs tests/make_wevt_dlls.sh built: the resources read back as the
 * bytes they were built from. */
static const char *const dll_cases[] = {
    "EventAttributes", "ImportChannelFromProvider", "ImportChannels", "Large",
    "ProviderTraits",  "ReferenceChannels",         "TaskOpcodes",    "wpf-etw",
};

static void test_built_dlls(void) {
#ifndef ETW_WEVT_DLL_DIR
    printf("test_built_dlls: skipped (configured with -DETW_WEVT_DLLS=OFF)\n");
#else
    for (size_t i = 0; i < sizeof dll_cases / sizeof dll_cases[0]; i++) {
        char path[512];
        size_t len, wlen, mlen;
        snprintf(path, sizeof path, "%s/%s.dll", ETW_WEVT_DLL_DIR, dll_cases[i]);
        uint8_t *dll = read_all(path, &len);
        snprintf(path, sizeof path, "%s/event-trace-kit/%s.wevt.v5.bin", WEVT_DIR, dll_cases[i]);
        uint8_t *wevt = read_all(path, &wlen);
        snprintf(path, sizeof path, "%s/event-trace-kit/%s.msg.bin", WEVT_DIR, dll_cases[i]);
        uint8_t *msg = read_all(path, &mlen);
        ETW_CHECK(dll != NULL && wevt != NULL && msg != NULL);
        if (dll && wevt && msg) {
            etw_pe pe;
            etw_pe_resource r;
            const char *why = NULL;
            ETW_CHECK_INT(etw_pe_open(&pe, dll, len, &why), ETW_OK);
            ETW_CHECK_INT(pe.is_pe32plus, 1);
            ETW_CHECK_INT(pe.machine, 0x8664);
            ETW_CHECK_INT(etw_pe_find_resource(&pe, "WEVT_TEMPLATE", 0, 0x0409, &r, &why), ETW_OK);
            ETW_CHECK(r.len == wlen && memcmp(r.data, wevt, wlen) == 0);
            ETW_CHECK_INT(r.name_id, 1);
            ETW_CHECK_INT(etw_pe_find_resource(&pe, NULL, ETW_RT_MESSAGETABLE, 0x0409, &r, &why), ETW_OK);
            ETW_CHECK(r.len == mlen && memcmp(r.data, msg, mlen) == 0);
            ETW_CHECK_INT(r.name_id, 1);
            ETW_CHECK_INT(etw_pe_has_resource_type(&pe, "MUI", 0), 0);
            etw_msgtable t;
            ETW_CHECK(open_msgtable(&pe, &t));
        }
        free(dll);
        free(wevt);
        free(msg);
    }
#endif
}

/* ------------------------------------------------------------------------ */
/* Hostile PEs                                                              */
/* ------------------------------------------------------------------------ */

/* A real DLL cut at every length: open refuses until the section table is
 * whole; the WEVT_TEMPLATE is found exactly when its bytes are all there,
 * and never reaches past the cut. */
static void test_truncated_pe(void) {
    size_t len;
    uint8_t *full = read_all(WEVT_DIR "/pe/wrc-test-wevt_template.dll", &len);
    ETW_CHECK(full != NULL);
    if (!full) return;
    etw_pe pe;
    etw_pe_resource r;
    const char *why = NULL;
    ETW_CHECK_INT(etw_pe_open(&pe, full, len, &why), ETW_OK);
    ETW_CHECK_INT(etw_pe_find_resource(&pe, "WEVT_TEMPLATE", 0, 0, &r, &why), ETW_OK);
    size_t wevt_end = (size_t)(r.data - full) + r.len;
    size_t sections_end = pe.sections_off + (size_t)pe.nsections * 40u;
    /* open needs the section table and the root resource directory */
    size_t open_from = pe.rsrc_off + 16u > sections_end ? pe.rsrc_off + 16u : sections_end;
    int open_ok = 0, open_bad = 0, found = 0, found_wrong = 0, past = 0, no_why = 0, odd = 0;
    for (size_t cut = 0; cut <= len; cut++) {
        /* a fresh heap copy of exactly cut bytes: ASan sees any overread */
        uint8_t *b = malloc(cut ? cut : 1);
        memcpy(b, full, cut);
        why = NULL;
        etw_status st = etw_pe_open(&pe, b, cut, &why);
        if (st == ETW_OK) {
            open_ok++;
            st = etw_pe_find_resource(&pe, "WEVT_TEMPLATE", 0, 0, &r, &why);
            if (st == ETW_OK) {
                if (cut >= wevt_end)
                    found++;
                else
                    found_wrong++;
                if (r.data + r.len > b + cut) past++;
            } else if (st == ETW_E_CORRUPT) {
                if (!why) no_why++;
            } else if (st != ETW_E_NOT_FOUND) {
                odd++;
            }
            etw_msgtable t;
            if (open_msgtable(&pe, &t)) {
                char text[64];
                (void)etw_msgtable_foreach(&t, text, sizeof text, collect, &(collected){0});
            }
        } else {
            open_bad++;
            if (st != ETW_E_CORRUPT || !why) no_why++;
        }
        free(b);
    }
    ETW_CHECK_INT(open_bad, (int)open_from);
    ETW_CHECK_INT(open_ok, (int)(len + 1 - open_from));
    ETW_CHECK_INT(found, (int)(len + 1 - wevt_end));
    ETW_CHECK_INT(found_wrong, 0);
    ETW_CHECK_INT(past, 0);
    ETW_CHECK_INT(no_why, 0);
    ETW_CHECK_INT(odd, 0);
    ETW_CHECK_INT(etw_pe_open(&pe, full, 0x3E, &why), ETW_E_CORRUPT);
    ETW_CHECK_STR(why, "no MZ signature");
    ETW_CHECK_INT(etw_pe_open(&pe, full, 0x80, &why), ETW_E_CORRUPT);
    free(full);
}

/* A small PE32 built here: one section at RVA 0x1000, file offset 0x200,
 * holding a resource tree type 11 -> name 1 -> languages, each leaf's data
 * 8 bytes "DATA<lang as 4 hex digits>" placed after the data entries. */
#define SYN_RSRC_FILE 0x200u
#define SYN_RSRC_RVA 0x1000u
#define SYN_RSRC_SIZE 192u
#define SYN_LEN (SYN_RSRC_FILE + SYN_RSRC_SIZE)
/* offsets in the resource section */
#define SYN_ROOT 0u
#define SYN_NAMES 24u
#define SYN_LANGS 48u
#define SYN_LEAVES 96u
#define SYN_DATA 160u

static void put16(uint8_t *p, uint32_t v) {
    p[0] = (uint8_t)v;
    p[1] = (uint8_t)(v >> 8);
}
static void put32(uint8_t *p, uint32_t v) {
    put16(p, v & 0xFFFF);
    put16(p + 2, v >> 16);
}

static void syn_build(uint8_t *f, const uint16_t *langs, unsigned nlangs) {
    memset(f, 0, SYN_LEN);
    f[0] = 'M';
    f[1] = 'Z';
    put32(f + 0x3C, 0x40);
    memcpy(f + 0x40, "PE\0\0", 4);
    uint8_t *coff = f + 0x44;
    put16(coff, 0x14C);
    put16(coff + 2, 1);
    put16(coff + 16, 224);
    uint8_t *opt = coff + 20;
    put16(opt, 0x10B);
    put32(opt + 92, 16);
    put32(opt + 96 + 2 * 8, SYN_RSRC_RVA);
    put32(opt + 96 + 2 * 8 + 4, SYN_RSRC_SIZE);
    uint8_t *sec = opt + 224;
    memcpy(sec, ".rsrc", 5);
    put32(sec + 8, SYN_RSRC_SIZE);
    put32(sec + 12, SYN_RSRC_RVA);
    put32(sec + 16, SYN_RSRC_SIZE);
    put32(sec + 20, SYN_RSRC_FILE);
    uint8_t *rs = f + SYN_RSRC_FILE;
    put16(rs + SYN_ROOT + 14, 1);
    put32(rs + SYN_ROOT + 16, 11);
    put32(rs + SYN_ROOT + 20, 0x80000000u | SYN_NAMES);
    put16(rs + SYN_NAMES + 14, 1);
    put32(rs + SYN_NAMES + 16, 1);
    put32(rs + SYN_NAMES + 20, 0x80000000u | SYN_LANGS);
    put16(rs + SYN_LANGS + 14, (uint16_t)nlangs);
    for (unsigned i = 0; i < nlangs; i++) {
        char tag[9];
        put32(rs + SYN_LANGS + 16 + 8 * i, langs[i]);
        put32(rs + SYN_LANGS + 20 + 8 * i, SYN_LEAVES + 16 * i);
        put32(rs + SYN_LEAVES + 16 * i, SYN_RSRC_RVA + SYN_DATA + 8 * i);
        put32(rs + SYN_LEAVES + 16 * i + 4, 8);
        snprintf(tag, sizeof tag, "DATA%04X", langs[i]);
        memcpy(rs + SYN_DATA + 8 * i, tag, 8);
    }
}

/* find type 11 in f; the data as a string when found */
static etw_status syn_find(const uint8_t *f, size_t len, uint16_t lang, char *got, const char **why) {
    etw_pe pe;
    etw_pe_resource r;
    etw_status st = etw_pe_open(&pe, f, len, why);
    got[0] = 0;
    if (st != ETW_OK) return st;
    st = etw_pe_find_resource(&pe, NULL, 11, lang, &r, why);
    if (st == ETW_OK && r.len == 8) {
        memcpy(got, r.data, 8);
        got[8] = 0;
    }
    return st;
}

static void test_language_choice(void) {
    static uint8_t f[SYN_LEN];
    char got[16];
    const char *why = NULL;
    const uint16_t three[3] = {0x0407, 0x0000, 0x0409};
    syn_build(f, three, 3);
    ETW_CHECK_INT(syn_find(f, SYN_LEN, 0x0407, got, &why), ETW_OK);
    ETW_CHECK_STR(got, "DATA0407");
    ETW_CHECK_INT(syn_find(f, SYN_LEN, 0x040C, got, &why), ETW_OK);
    ETW_CHECK_STR(got, "DATA0409"); /* no fr-FR: en-US */
    const uint16_t two[2] = {0x0407, 0x0000};
    syn_build(f, two, 2);
    ETW_CHECK_INT(syn_find(f, SYN_LEN, 0x040C, got, &why), ETW_OK);
    ETW_CHECK_STR(got, "DATA0000"); /* no en-US: neutral */
    const uint16_t others[2] = {0x0411, 0x0407};
    syn_build(f, others, 2);
    ETW_CHECK_INT(syn_find(f, SYN_LEN, 0x040C, got, &why), ETW_OK);
    ETW_CHECK_STR(got, "DATA0411"); /* none of them: the first */
    syn_build(f, others, 0);
    ETW_CHECK_INT(syn_find(f, SYN_LEN, 0x0409, got, &why), ETW_E_NOT_FOUND);
    ETW_CHECK_INT(etw_pe_langid("en-US"), 0x0409);
    ETW_CHECK_INT(etw_pe_langid("DE-de"), 0x0407);
    ETW_CHECK_INT(etw_pe_langid("fr-FR"), 0x040C);
    ETW_CHECK_INT(etw_pe_langid("zh-CN"), 0x0804);
    ETW_CHECK_INT(etw_pe_langid("en"), 0);
    ETW_CHECK_INT(etw_pe_langid("en-USA"), 0);
    ETW_CHECK_INT(etw_pe_langid(NULL), 0);
}

static void test_hostile_tree(void) {
    static uint8_t f[SYN_LEN];
    uint8_t *rs = f + SYN_RSRC_FILE;
    char got[16];
    const char *why;
    const uint16_t one[1] = {0x0409};
    syn_build(f, one, 1);
    why = NULL;
    ETW_CHECK_INT(syn_find(f, SYN_LEN, 0x0409, got, &why), ETW_OK);
    ETW_CHECK_STR(got, "DATA0409");

    /* the name directory's subdirectory is itself */
    syn_build(f, one, 1);
    put32(rs + SYN_NAMES + 20, 0x80000000u | SYN_NAMES);
    why = NULL;
    ETW_CHECK_INT(syn_find(f, SYN_LEN, 0x0409, got, &why), ETW_E_CORRUPT);
    ETW_CHECK_STR(why, "resource directory entered twice (a loop)");
    /* the type's subdirectory is the root */
    syn_build(f, one, 1);
    put32(rs + SYN_ROOT + 20, 0x80000000u | SYN_ROOT);
    why = NULL;
    ETW_CHECK_INT(syn_find(f, SYN_LEN, 0x0409, got, &why), ETW_E_CORRUPT);
    ETW_CHECK_STR(why, "resource directory entered twice (a loop)");
    /* the language level points back to the name level */
    syn_build(f, one, 1);
    put32(rs + SYN_NAMES + 20, 0x80000000u | SYN_ROOT);
    why = NULL;
    ETW_CHECK_INT(syn_find(f, SYN_LEN, 0x0409, got, &why), ETW_E_CORRUPT);
    ETW_CHECK(why != NULL);
    /* a language entry that is a directory */
    syn_build(f, one, 1);
    put32(rs + SYN_LANGS + 20, 0x80000000u | SYN_LEAVES);
    why = NULL;
    ETW_CHECK_INT(syn_find(f, SYN_LEN, 0x0409, got, &why), ETW_E_CORRUPT);
    ETW_CHECK_STR(why, "resource language entry is a directory");
    /* counts of 0xFFFF at each level */
    static const uint32_t dirs[3] = {SYN_ROOT, SYN_NAMES, SYN_LANGS};
    for (int d = 0; d < 3; d++) {
        syn_build(f, one, 1);
        put16(rs + dirs[d] + 12, 0xFFFF);
        put16(rs + dirs[d] + 14, 0xFFFF);
        why = NULL;
        ETW_CHECK_INT(syn_find(f, SYN_LEN, 0x0409, got, &why), ETW_E_CORRUPT);
        ETW_CHECK_STR(why, "resource directory entries run past the section");
    }
    /* a subdirectory offset past the section */
    syn_build(f, one, 1);
    put32(rs + SYN_ROOT + 20, 0x80000000u | 0x7FFFFFF0u);
    why = NULL;
    ETW_CHECK_INT(syn_find(f, SYN_LEN, 0x0409, got, &why), ETW_E_CORRUPT);
    ETW_CHECK_STR(why, "resource directory past the end of the section");
    /* a data entry whose size runs past the end of the file */
    syn_build(f, one, 1);
    put32(rs + SYN_LEAVES + 4, 0x1000);
    why = NULL;
    ETW_CHECK_INT(syn_find(f, SYN_LEN, 0x0409, got, &why), ETW_E_CORRUPT);
    ETW_CHECK_STR(why, "resource data runs past the end of the file");
    syn_build(f, one, 1);
    put32(rs + SYN_LEAVES + 4, 0xFFFFFFFFu);
    ETW_CHECK_INT(syn_find(f, SYN_LEN, 0x0409, got, &why), ETW_E_CORRUPT);
    /* a data RVA in no section */
    syn_build(f, one, 1);
    put32(rs + SYN_LEAVES, 0x9000);
    why = NULL;
    ETW_CHECK_INT(syn_find(f, SYN_LEN, 0x0409, got, &why), ETW_E_CORRUPT);
    ETW_CHECK_STR(why, "resource data is outside the file's sections");
    /* a data entry past the section */
    syn_build(f, one, 1);
    put32(rs + SYN_LANGS + 20, SYN_RSRC_SIZE - 8);
    why = NULL;
    ETW_CHECK_INT(syn_find(f, SYN_LEN, 0x0409, got, &why), ETW_E_CORRUPT);
    ETW_CHECK_STR(why, "resource data entry past the end of the section");
    /* a named type whose name offset is past the section / its length too */
    syn_build(f, one, 1);
    put32(rs + SYN_ROOT + 16, 0x80000000u | 0x10000u);
    why = NULL;
    etw_pe pe;
    etw_pe_resource r;
    ETW_CHECK_INT(etw_pe_open(&pe, f, SYN_LEN, &why), ETW_OK);
    ETW_CHECK_INT(etw_pe_find_resource(&pe, "MUI", 0, 0, &r, &why), ETW_E_CORRUPT);
    ETW_CHECK_STR(why, "resource name past the end of the section");
    ETW_CHECK_INT(etw_pe_has_resource_type(&pe, "MUI", 0), 0);
    put32(rs + SYN_ROOT + 16, 0x80000000u | SYN_DATA);
    put16(rs + SYN_DATA, 0xFFFF);
    ETW_CHECK_INT(etw_pe_find_resource(&pe, "MUI", 0, 0, &r, &why), ETW_E_CORRUPT);
    ETW_CHECK_STR(why, "resource name runs past the section");
    /* a named type that matches */
    put16(rs + SYN_DATA, 3);
    memcpy(rs + SYN_DATA + 2, "M\0u\0I\0", 6);
    ETW_CHECK_INT(etw_pe_find_resource(&pe, "MUI", 0, 0, &r, &why), ETW_OK);
    ETW_CHECK_INT(r.type_id, 0);
    ETW_CHECK_INT(etw_pe_has_resource_type(&pe, "mui", 0), 1);
    /* the resource directory's RVA in no section; a directory cut short */
    syn_build(f, one, 1);
    put32(f + 0x44 + 20 + 96 + 16, 0x5000);
    why = NULL;
    ETW_CHECK_INT(etw_pe_open(&pe, f, SYN_LEN, &why), ETW_E_CORRUPT);
    ETW_CHECK_STR(why, "resource directory is outside the file's sections");
    syn_build(f, one, 1);
    put32(f + 0x44 + 20 + 96 + 16, SYN_RSRC_RVA + SYN_RSRC_SIZE - 8);
    ETW_CHECK_INT(etw_pe_open(&pe, f, SYN_LEN, &why), ETW_E_CORRUPT);
    ETW_CHECK_STR(why, "resource directory is cut");
    /* headers: no PE signature, bad magic, 0xFFFF sections, no resources */
    syn_build(f, one, 1);
    put32(f + 0x3C, 0xFFFFFFF0u);
    ETW_CHECK_INT(etw_pe_open(&pe, f, SYN_LEN, &why), ETW_E_CORRUPT);
    ETW_CHECK_STR(why, "no PE signature");
    syn_build(f, one, 1);
    put16(f + 0x44 + 20, 0x107);
    ETW_CHECK_INT(etw_pe_open(&pe, f, SYN_LEN, &why), ETW_E_CORRUPT);
    ETW_CHECK_STR(why, "unknown optional header magic");
    syn_build(f, one, 1);
    put16(f + 0x44 + 2, 0xFFFF);
    ETW_CHECK_INT(etw_pe_open(&pe, f, SYN_LEN, &why), ETW_E_CORRUPT);
    ETW_CHECK_STR(why, "section table is cut");
    syn_build(f, one, 1);
    put16(f + 0x44 + 16, 0xFFFF);
    ETW_CHECK_INT(etw_pe_open(&pe, f, SYN_LEN, &why), ETW_E_CORRUPT);
    ETW_CHECK_STR(why, "optional header is cut");
    syn_build(f, one, 1);
    put32(f + 0x44 + 20 + 92, 2); /* NumberOfRvaAndSizes 2: no resource directory */
    ETW_CHECK_INT(etw_pe_open(&pe, f, SYN_LEN, &why), ETW_OK);
    ETW_CHECK_INT(pe.rsrc_rva, 0);
    ETW_CHECK_INT(etw_pe_find_resource(&pe, NULL, 11, 0, &r, &why), ETW_E_NOT_FOUND);
    ETW_CHECK_INT(etw_pe_has_resource_type(&pe, NULL, 11), 0);
}

/* ------------------------------------------------------------------------ */
/* Hostile message tables                                                   */
/* ------------------------------------------------------------------------ */

static int count_cb(void *ctx, uint32_t id, const char *text, size_t len) {
    (void)id;
    (void)text;
    (void)len;
    (*(int *)ctx)++;
    return 0;
}

static void test_hostile_msgtable(void) {
    uint8_t m[64];
    etw_msgtable t;
    const char *why;
    char text[64];
    int n;

    /* nblocks 0xFFFFFFFF */
    memset(m, 0, sizeof m);
    put32(m, 0xFFFFFFFFu);
    why = NULL;
    ETW_CHECK_INT(etw_msgtable_open(&t, m, sizeof m, &why), ETW_E_CORRUPT);
    ETW_CHECK_STR(why, "message table blocks run past the resource");
    ETW_CHECK_INT(etw_msgtable_open(&t, m, 3, &why), ETW_E_CORRUPT);
    /* no blocks: opens, nothing in it */
    put32(m, 0);
    ETW_CHECK_INT(etw_msgtable_open(&t, m, 4, &why), ETW_OK);
    ETW_CHECK_INT(etw_msgtable_count(&t), 0);
    ETW_CHECK_INT(etw_msgtable_get(&t, 0, text, sizeof text, NULL), ETW_E_NOT_FOUND);

    /* one block 1..3 at 16; entries of length 0 and 2 never move on */
    for (uint32_t bad = 0; bad <= 2; bad += 2) {
        memset(m, 0, sizeof m);
        put32(m, 1);
        put32(m + 4, 1);
        put32(m + 8, 3);
        put32(m + 12, 16);
        put16(m + 16, 8); /* id 1: "ab\r\n", ANSI */
        memcpy(m + 20, "ab\r\n", 4);
        put16(m + 24, bad); /* id 2 */
        ETW_CHECK_INT(etw_msgtable_open(&t, m, sizeof m, &why), ETW_OK);
        ETW_CHECK_INT(etw_msgtable_get(&t, 1, text, sizeof text, NULL), ETW_OK);
        ETW_CHECK_STR(text, "ab");
        ETW_CHECK_INT(etw_msgtable_get(&t, 2, text, sizeof text, NULL), ETW_E_CORRUPT);
        ETW_CHECK_INT(etw_msgtable_get(&t, 3, text, sizeof text, NULL), ETW_E_CORRUPT);
        n = 0;
        ETW_CHECK_INT(etw_msgtable_foreach(&t, text, sizeof text, count_cb, &n), ETW_E_CORRUPT);
        ETW_CHECK_INT(n, 1);
    }
    /* an entry length past the end */
    put16(m + 24, 0x1000);
    ETW_CHECK_INT(etw_msgtable_get(&t, 2, text, sizeof text, NULL), ETW_E_CORRUPT);

    /* low > high */
    memset(m, 0, sizeof m);
    put32(m, 1);
    put32(m + 4, 5);
    put32(m + 8, 4);
    put32(m + 12, 16);
    why = NULL;
    ETW_CHECK_INT(etw_msgtable_open(&t, m, sizeof m, &why), ETW_E_CORRUPT);
    ETW_CHECK_STR(why, "message block ids run backwards (low > high)");
    /* first entry past the end */
    put32(m + 8, 5);
    put32(m + 12, 62);
    ETW_CHECK_INT(etw_msgtable_open(&t, m, sizeof m, &why), ETW_E_CORRUPT);
    ETW_CHECK_STR(why, "message block entries past the end of the resource");

    /* ids 0..0xFFFFFFFF over a few 4-byte entries: the walks end */
    memset(m, 0, sizeof m);
    put32(m, 1);
    put32(m + 4, 0);
    put32(m + 8, 0xFFFFFFFFu);
    put32(m + 12, 16);
    for (int k = 16; k < 64; k += 4) put16(m + k, 4); /* empty texts */
    ETW_CHECK_INT(etw_msgtable_open(&t, m, sizeof m, &why), ETW_OK);
    ETW_CHECK_INT(etw_msgtable_count(&t), 16); /* bounded by len / 4 */
    ETW_CHECK_INT(etw_msgtable_get(&t, 0, text, sizeof text, NULL), ETW_OK);
    ETW_CHECK_STR(text, "");
    ETW_CHECK_INT(etw_msgtable_get(&t, 11, text, sizeof text, NULL), ETW_OK);
    ETW_CHECK_INT(etw_msgtable_get(&t, 12, text, sizeof text, NULL), ETW_E_CORRUPT);
    ETW_CHECK_INT(etw_msgtable_get(&t, 0xFFFFFFFFu, text, sizeof text, NULL), ETW_E_CORRUPT);
    n = 0;
    ETW_CHECK_INT(etw_msgtable_foreach(&t, text, sizeof text, count_cb, &n), ETW_E_CORRUPT);
    ETW_CHECK_INT(n, 12);

    /* blocks that all repeat one range: the walk's budget ends it */
    uint8_t rep[4 + 12 * 5 + 4];
    memset(rep, 0, sizeof rep);
    put32(rep, 5);
    for (int k = 0; k < 5; k++) {
        put32(rep + 4 + 12 * k, 7);
        put32(rep + 8 + 12 * k, 7);
        put32(rep + 12 + 12 * k, 64);
    }
    put16(rep + 64, 4);
    ETW_CHECK_INT(etw_msgtable_open(&t, rep, sizeof rep, &why), ETW_OK);
    ETW_CHECK_INT(t.sorted, 0);
    ETW_CHECK_INT(etw_msgtable_get(&t, 7, text, sizeof text, NULL), ETW_OK);
    n = 0;
    ETW_CHECK_INT(etw_msgtable_foreach(&t, text, sizeof text, count_cb, &n), ETW_OK);
    ETW_CHECK_INT(n, 5); /* 68 bytes hold 17 entries' worth: all five walked */

    /* unsorted blocks still found; unknown flags refused */
    memset(m, 0, sizeof m);
    put32(m, 2);
    put32(m + 4, 9);
    put32(m + 8, 9);
    put32(m + 12, 28);
    put32(m + 16, 2);
    put32(m + 20, 2);
    put32(m + 24, 36);
    put16(m + 28, 8);
    memcpy(m + 32, "nine", 4);
    put16(m + 36, 8);
    put16(m + 38, 7);
    ETW_CHECK_INT(etw_msgtable_open(&t, m, 44, &why), ETW_OK);
    ETW_CHECK_INT(t.sorted, 0);
    ETW_CHECK_INT(etw_msgtable_get(&t, 9, text, sizeof text, NULL), ETW_OK);
    ETW_CHECK_STR(text, "nine");
    ETW_CHECK_INT(etw_msgtable_get(&t, 2, text, sizeof text, NULL), ETW_E_UNSUPPORTED);
    ETW_CHECK_INT(etw_msgtable_get(&t, 5, text, sizeof text, NULL), ETW_E_NOT_FOUND);
}

/* Text conversion: Windows-1252, UTF-16 surrogates, UTF-8, cuts. */
static void test_msgtable_text(void) {
    uint8_t m[64];
    etw_msgtable t;
    const char *why;
    char text[64];
    size_t tl;
    memset(m, 0, sizeof m);
    put32(m, 1);
    put32(m + 4, 1);
    put32(m + 8, 3);
    put32(m + 12, 16);
    /* id 1, ANSI: 0x80 (euro sign), 0xE9 (e acute), 0x81 (undefined) */
    put16(m + 16, 8);
    m[20] = 0x80;
    m[21] = 0xE9;
    m[22] = 0x81;
    /* id 2, UTF-16: U+1F600 as a pair, a lone low surrogate, 'x', CR LF */
    put16(m + 24, 20);
    put16(m + 26, 1);
    put16(m + 28, 0xD83D);
    put16(m + 30, 0xDE00);
    put16(m + 32, 0xDC00);
    put16(m + 34, 'x');
    put16(m + 36, '\r');
    put16(m + 38, '\n');
    put16(m + 40, 0);
    /* id 3, UTF-8: "\xC3\xA9" then a bad byte 0xFF, then "\n" */
    put16(m + 44, 8);
    put16(m + 46, 2);
    m[48] = 0xC3;
    m[49] = 0xA9;
    m[50] = 0xFF;
    m[51] = '\n';
    ETW_CHECK_INT(etw_msgtable_open(&t, m, 52, &why), ETW_OK);
    ETW_CHECK_INT(etw_msgtable_get(&t, 1, text, sizeof text, &tl), ETW_OK);
    ETW_CHECK_STR(text, "\xE2\x82\xAC\xC3\xA9\xC2\x81");
    ETW_CHECK_INT(etw_msgtable_get(&t, 2, text, sizeof text, &tl), ETW_OK);
    ETW_CHECK_STR(text, "\xF0\x9F\x98\x80\xEF\xBF\xBDx");
    ETW_CHECK_INT(tl, 8);
    ETW_CHECK_INT(etw_msgtable_get(&t, 3, text, sizeof text, &tl), ETW_OK);
    ETW_CHECK_STR(text, "\xC3\xA9\xEF\xBF\xBD");
    /* cuts fall between characters, never inside one */
    ETW_CHECK_INT(etw_msgtable_get(&t, 2, text, 4, &tl), ETW_E_LIMIT);
    ETW_CHECK_STR(text, "");
    ETW_CHECK_INT(etw_msgtable_get(&t, 2, text, 5, &tl), ETW_E_LIMIT);
    ETW_CHECK_STR(text, "\xF0\x9F\x98\x80");
    ETW_CHECK_INT(tl, 4);
    ETW_CHECK_INT(etw_msgtable_get(&t, 1, text, 6, &tl), ETW_E_LIMIT);
    ETW_CHECK_STR(text, "\xE2\x82\xAC\xC3\xA9");
}

int main(void) {
    ETW_RUN(test_wevt_template_dll);
    ETW_RUN(test_wrc_test_dll);
    ETW_RUN(test_mui_dll);
    ETW_RUN(test_msg_bins);
    ETW_RUN(test_built_dlls);
    ETW_RUN(test_truncated_pe);
    ETW_RUN(test_language_choice);
    ETW_RUN(test_hostile_tree);
    ETW_RUN(test_hostile_msgtable);
    ETW_RUN(test_msgtable_text);
    return ETW_TEST_DONE();
}
