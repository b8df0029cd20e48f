/* test_manifest_catalog.c - the manifest catalog: the provider scanner on
 * encodings and hostile bytes, a folder's catalog (order, duplicates,
 * groups, limits), and a decoder loading lazily from it. */
#define _POSIX_C_SOURCE 200809L

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "etw_test.h"
#include "etwdecode/etwdecode.h"
#include "source/etw_manifest_catalog.h"

#define G1 "{11111111-2222-3333-4444-555555555555}"
#define G2 "{aaaaaaaa-bbbb-cccc-dddd-eeeeeeeeeeee}"
#define HTTP_GUID "{dd5ef90a-6398-47a4-ad34-4dcecdef795f}"

static int guid_is(const etw_guid *g, const char *text) {
    char s[ETW_GUID_STRING_SIZE];
    etw_guid_format(g, s);
    /* text is braced: compare case-insensitively without the braces */
    size_t n = strlen(text);
    if (n != ETW_GUID_STRING_SIZE + 1) return 0;
    for (size_t i = 0; i + 1 < ETW_GUID_STRING_SIZE; i++) {
        char a = s[i], b = text[i + 1];
        if (a >= 'A' && a <= 'Z') a = (char)(a - 'A' + 'a');
        if (b >= 'A' && b <= 'Z') b = (char)(b - 'A' + 'a');
        if (a != b) return 0;
    }
    return 1;
}

static etw_status scan(const char *text, size_t len, etw_guid *g, size_t max, size_t *n, size_t *total,
                       size_t *bad) {
    return etw_manifest_scan_providers(text, len, g, max, n, total, bad);
}

/* text as UTF-16 (big: BE) with a BOM, into a malloc'd buffer */
static unsigned char *utf16(const char *text, int big, size_t *len) {
    size_t n = strlen(text);
    unsigned char *b = malloc(2 * n + 2);
    if (!b) return NULL;
    b[0] = big ? 0xFE : 0xFF;
    b[1] = big ? 0xFF : 0xFE;
    for (size_t i = 0; i < n; i++) {
        b[2 + 2 * i + (big ? 1 : 0)] = (unsigned char)text[i];
        b[2 + 2 * i + (big ? 0 : 1)] = 0;
    }
    *len = 2 * n + 2;
    return b;
}

static void test_scan_forms(void) {
    etw_guid g[8];
    size_t n, total, bad;
    const char *plain = "<?xml version='1.0'?>\n<instrumentationManifest><instrumentation><events>\n"
                        "<provider name=\"A\" guid=\"" G1 "\" symbol=\"x\">\n<events/></provider>\n"
                        "</events></instrumentation></instrumentationManifest>\n";
    ETW_CHECK_INT(scan(plain, strlen(plain), g, 8, &n, &total, &bad), ETW_OK);
    ETW_CHECK_INT(n, 1);
    ETW_CHECK(guid_is(&g[0], G1));

    /* UTF-8 with a BOM */
    char bom[512];
    snprintf(bom, sizeof bom, "\xEF\xBB\xBF%s", plain);
    ETW_CHECK_INT(scan(bom, strlen(bom), g, 8, &n, &total, &bad), ETW_OK);
    ETW_CHECK_INT(n, 1);

    /* UTF-16LE and BE with a BOM */
    size_t len;
    unsigned char *le = utf16(plain, 0, &len);
    ETW_CHECK(le != NULL);
    if (le) {
        ETW_CHECK_INT(scan((const char *)le, len, g, 8, &n, &total, &bad), ETW_OK);
        ETW_CHECK_INT(n, 1);
        ETW_CHECK(guid_is(&g[0], G1));
        /* an odd trailing byte is ignored */
        ETW_CHECK_INT(scan((const char *)le, len - 1, g, 8, &n, &total, &bad), ETW_OK);
        free(le);
    }
    unsigned char *be = utf16(plain, 1, &len);
    if (be) {
        ETW_CHECK_INT(scan((const char *)be, len, g, 8, &n, &total, &bad), ETW_OK);
        ETW_CHECK_INT(n, 1);
        ETW_CHECK(guid_is(&g[0], G1));
        free(be);
    }

    /* a prefix, single quotes, a GUID without braces, another attribute
     * holding '>' before guid, white space around '=' */
    const char *prefixed = "<win:events><win:provider name='x>y' guid = '11111111-2222-3333-4444-555555555555'/>"
                           "<ns:provider\tguid='" G2 "'></ns:provider></win:events>";
    ETW_CHECK_INT(scan(prefixed, strlen(prefixed), g, 8, &n, &total, &bad), ETW_OK);
    ETW_CHECK_INT(n, 2);
    ETW_CHECK(guid_is(&g[0], G1));
    ETW_CHECK(guid_is(&g[1], G2));

    /* a commented-out provider and one in CDATA are not cataloged; names
     * that only start like provider are not providers */
    const char *commented = "<events><!-- <provider guid=\"" G1 "\"/> -->"
                            "<![CDATA[<provider guid=\"" G1 "\"/>]]>"
                            "<providers guid=\"" G1 "\"/><providerX guid=\"" G1 "\"/>"
                            "<provider providerGuid=\"" G1 "\" guid=\"" G2 "\"/></events>";
    ETW_CHECK_INT(scan(commented, strlen(commented), g, 8, &n, &total, &bad), ETW_OK);
    ETW_CHECK_INT(n, 1);
    ETW_CHECK(guid_is(&g[0], G2));

    /* no provider at all; empty input */
    const char *none = "<instrumentationManifest><instrumentation/></instrumentationManifest>";
    ETW_CHECK_INT(scan(none, strlen(none), g, 8, &n, &total, &bad), ETW_OK);
    ETW_CHECK_INT(n, 0);
    ETW_CHECK_INT(scan("", 0, g, 8, &n, &total, &bad), ETW_OK);
    ETW_CHECK_INT(n, 0);

    /* a guid attribute that is not a GUID is counted as bad */
    const char *badg = "<provider guid=\"{not-a-guid}\"/><provider guid=\"{" "11111111-2222-3333-4444-5555555555\"/>";
    ETW_CHECK_INT(scan(badg, strlen(badg), g, 8, &n, &total, &bad), ETW_OK);
    ETW_CHECK_INT(n, 0);
    ETW_CHECK_INT(bad, 2);

    ETW_CHECK_INT(scan(NULL, 1, g, 8, &n, NULL, NULL), ETW_E_INVALID_ARG);
}

static void test_scan_truncated(void) {
    etw_guid g[8];
    size_t n, total, bad;
    const char *full = "<events><provider guid=\"" G1 "\"/><provider name=\"b\" guid=\"" G2 "\"/></events>";
    size_t len = strlen(full);
    /* every prefix: a bounded result, never more than the full scan */
    for (size_t cut = 0; cut <= len; cut++) {
        etw_status st = scan(full, cut, g, 8, &n, &total, &bad);
        ETW_CHECK(st == ETW_OK || st == ETW_E_TRUNCATED);
        ETW_CHECK(n <= 2);
    }
    /* cut inside the second provider's guid value: the first is given */
    const char *second = strstr(full, G2);
    ETW_CHECK_INT(scan(full, (size_t)(second - full) + 5, g, 8, &n, &total, &bad), ETW_E_TRUNCATED);
    ETW_CHECK_INT(n, 1);
    ETW_CHECK(guid_is(&g[0], G1));
    /* an unterminated comment and an unterminated attribute */
    const char *cm = "<provider guid='" G1 "'/><!-- <provider guid='" G2 "'/>";
    ETW_CHECK_INT(scan(cm, strlen(cm), g, 8, &n, &total, &bad), ETW_E_TRUNCATED);
    ETW_CHECK_INT(n, 1);
    const char *ua = "<provider name='x guid='" G1 "'/>";
    etw_status st = scan(ua, strlen(ua), g, 8, &n, &total, &bad);
    ETW_CHECK(st == ETW_OK || st == ETW_E_TRUNCATED);
    ETW_CHECK(n <= 1);
}

static void test_scan_many(void) {
    /* a million <provider tags: max stored, all counted, linear time */
    const char *one = "<provider guid='" G1 "'/>";
    size_t ol = strlen(one), count = 1000000;
    char *big = malloc(ol * count);
    ETW_CHECK(big != NULL);
    if (!big) return;
    for (size_t i = 0; i < count; i++) memcpy(big + i * ol, one, ol);
    etw_guid g[4];
    size_t n, total, bad;
    ETW_CHECK_INT(scan(big, ol * count, g, 4, &n, &total, &bad), ETW_OK);
    ETW_CHECK_INT(n, 4);
    ETW_CHECK_INT(total, count);
    /* bare "<provider" a million times, never closed */
    memset(big, ' ', ol * count);
    for (size_t i = 0; i + 9 < ol * count; i += 10) memcpy(big + i, "<provider ", 10);
    etw_status st = scan(big, ol * count, g, 4, &n, &total, &bad);
    ETW_CHECK(st == ETW_OK || st == ETW_E_TRUNCATED);
    ETW_CHECK_INT(n, 0);
    free(big);
    /* over the size limit: refused before reading a byte */
    ETW_CHECK_INT(scan(one, (size_t)ETW_CATALOG_MAX_FILE_BYTES + 1, g, 4, &n, &total, &bad), ETW_E_LIMIT);
}

/* ---- catalogs of a folder ------------------------------------------------ */

static etw_guid gid(const char *braced) {
    char t[128];
    snprintf(t, sizeof t, "<provider guid='%s'/>", braced);
    etw_guid g;
    memset(&g, 0, sizeof g);
    size_t n;
    ETW_CHECK_INT(etw_manifest_scan_providers(t, strlen(t), &g, 1, &n, NULL, NULL), ETW_OK);
    ETW_CHECK_INT(n, 1);
    return g;
}

static void remove_dir(const char *d) {
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", d);
    ETW_CHECK_INT(system(cmd), 0);
}

static char dir_[64];

static void put(const char *rel, const char *text) {
    char p[256];
    snprintf(p, sizeof p, "%s/%s", dir_, rel);
    FILE *f = fopen(p, "wb");
    ETW_CHECK(f != NULL);
    if (!f) return;
    fwrite(text, 1, strlen(text), f);
    fclose(f);
}

typedef struct diags {
    int n, warnings;
    char last[1024];
} diags;

static void on_diag(void *ctx, const etw_diag *d) {
    diags *s = ctx;
    s->n++;
    if (d->status == ETW_OK) s->warnings++;
    snprintf(s->last, sizeof s->last, "%s", d->message);
}

static void test_catalog_folder(void) {
    strcpy(dir_, "/tmp/etw-catalog-XXXXXX");
    ETW_CHECK(mkdtemp(dir_) != NULL);
    char p[256];
    put("a.man", "<provider guid='" G1 "'/>");
    put("b.MAN", "<provider guid='" G1 "'/><provider guid='" G2 "'/>");
    put("c.txt", "<provider guid='{00000000-0000-0000-0000-00000000000c}'/>");
    put("d.xml", "<nothing/>");
    snprintf(p, sizeof p, "%s/sub", dir_);
    ETW_CHECK_INT(mkdir(p, 0700), 0);
    put("sub/e.man", "<provider guid='{00000000-0000-0000-0000-00000000000e}'/>");
    /* a symbolic link to a directory is not followed */
    char l[256];
    snprintf(l, sizeof l, "%s/zlink", dir_);
    ETW_CHECK_INT(symlink(p, l), 0);

    diags dg;
    memset(&dg, 0, sizeof dg);
    etw_manifest_catalog_options co;
    memset(&co, 0, sizeof co);
    co.on_diag = on_diag;
    co.diag_ctx = &dg;
    etw_manifest_catalog *c;
    ETW_CHECK_INT(etw_manifest_catalog_new(&c, &co), ETW_OK);
    uint32_t files = 0;
    ETW_CHECK_INT(etw_manifest_catalog_add_path(c, dir_, &files), ETW_OK);
    ETW_CHECK_INT(files, 4); /* a.man b.MAN d.xml sub/e.man */
    ETW_CHECK_INT(etw_manifest_catalog_file_count(c), 4);
    ETW_CHECK_INT(etw_manifest_catalog_provider_count(c), 3);
    ETW_CHECK_INT(etw_manifest_catalog_duplicate_count(c), 1);
    ETW_CHECK_INT(dg.warnings, 2); /* G1 twice; d.xml declares nothing */
    etw_guid g1 = gid(G1), ge = gid("{00000000-0000-0000-0000-00000000000e}");
    etw_guid gc = gid("{00000000-0000-0000-0000-00000000000c}");
    etw_catalog_kind kind = 0;
    const char *f = etw_manifest_catalog_lookup(c, &g1, &kind);
    /* the later file wins */
    ETW_CHECK(f && strstr(f, "/b.MAN") != NULL);
    ETW_CHECK_INT(kind, ETW_CATALOG_XML);
    f = etw_manifest_catalog_lookup(c, &ge, NULL);
    ETW_CHECK(f && strstr(f, "/sub/e.man") != NULL && strstr(f, "zlink") == NULL);
    ETW_CHECK(etw_manifest_catalog_lookup(c, &gc, NULL) == NULL);
    /* a.man and b.MAN form one group, in file order */
    uint32_t fb = etw_catalog_find(c, &g1);
    uint32_t first = etw_catalog_group_first(c, fb);
    ETW_CHECK(strstr(etw_catalog_path(c, first), "/a.man") != NULL);
    ETW_CHECK_INT(etw_catalog_group_next(c, first), fb);
    ETW_CHECK_INT(etw_catalog_group_next(c, fb), ETW_CATALOG_NONE);
    uint32_t fe = etw_catalog_find(c, &ge);
    ETW_CHECK_INT(etw_catalog_group_first(c, fe), fe);
    ETW_CHECK_INT(etw_catalog_group_next(c, fe), ETW_CATALOG_NONE);
    /* a path that cannot be read is an error; a missing file too */
    ETW_CHECK_INT(etw_manifest_catalog_add_path(c, "/no/such/dir", NULL), ETW_E_IO);
    etw_manifest_catalog_free(c);

    /* hostile neighbours: a 2 GiB (sparse) file is refused unread, a FIFO
     * is not opened; the rest is cataloged as before */
    snprintf(p, sizeof p, "%s/big.man", dir_);
    FILE *bf = fopen(p, "wb");
    ETW_CHECK(bf != NULL);
    if (bf) fclose(bf);
    ETW_CHECK_INT(truncate(p, (off_t)2 << 30), 0);
    snprintf(p, sizeof p, "%s/fifo.man", dir_);
    ETW_CHECK_INT(mkfifo(p, 0600), 0);
    memset(&dg, 0, sizeof dg);
    ETW_CHECK_INT(etw_manifest_catalog_new(&c, &co), ETW_OK);
    ETW_CHECK_INT(etw_manifest_catalog_add_path(c, dir_, &files), ETW_OK);
    ETW_CHECK_INT(files, 4);
    ETW_CHECK_INT(dg.n, 3); /* big.man over the limit, G1 twice, d.xml */
    ETW_CHECK_INT(dg.warnings, 2);
    etw_manifest_catalog_free(c);
    remove_dir(dir_);
}

/* ---- a decoder loading lazily -------------------------------------------- */

static void copy_http(const char *rel, const char *guid, const char *name) {
    FILE *in = fopen(ETW_TEST_DATA_DIR "/HTTP_Server.man", "rb");
    ETW_CHECK(in != NULL);
    if (!in) return;
    static char buf[1 << 17];
    size_t n = fread(buf, 1, sizeof buf - 1, in);
    fclose(in);
    buf[n] = 0;
    char out[256];
    snprintf(out, sizeof out, "%s/%s", dir_, rel);
    FILE *o = fopen(out, "wb");
    ETW_CHECK(o != NULL);
    if (!o) return;
    const char *at = strstr(buf, HTTP_GUID);
    const char *nm = strstr(buf, "Microsoft-Windows-HttpService");
    ETW_CHECK(at && nm && nm < at);
    if (guid && at && nm && nm < at) {
        fwrite(buf, 1, (size_t)(nm - buf), o);
        fputs(name, o);
        const char *after = nm + strlen("Microsoft-Windows-HttpService");
        fwrite(after, 1, (size_t)(at - after), o);
        fputs(guid, o);
        fputs(at + strlen(HTTP_GUID), o);
    } else {
        fwrite(buf, 1, n, o);
    }
    fclose(o);
}

/* Decode the HTTP_Server trace, counting events with a manifest schema
 * and the name of the HttpService provider. */
static void run_trace(etw_decoder *d, int *decoded, char *name, size_t cap) {
    etw_reader *r;
    *decoded = 0;
    name[0] = 0;
    ETW_CHECK_INT(etw_reader_open_file(&r, ETW_TEST_DATA_DIR "/HTTP_Server.etl", NULL), ETW_OK);
    const etw_event *ev;
    while (etw_reader_next_ref(r, &ev) == ETW_OK) {
        const etw_schema *s;
        if (etw_decoder_resolve(d, ev, &s, NULL) != ETW_OK || s->source != ETW_SOURCE_MANIFEST) continue;
        (*decoded)++;
        if (!name[0] && s->provider_name) snprintf(name, cap, "%s", s->provider_name);
    }
    etw_reader_close(r);
}

static void test_decoder_lazy(void) {
    strcpy(dir_, "/tmp/etw-catalog-lazy-XXXXXX");
    ETW_CHECK(mkdtemp(dir_) != NULL);
    copy_http("m1.man", "{00000000-1111-2222-3333-000000000001}", "Fake-One");
    copy_http("m2.man", NULL, NULL); /* the real one */
    copy_http("m3.man", "{00000000-1111-2222-3333-000000000003}", "Fake-Three");
    put("m4.man", "<broken>");

    diags dg;
    memset(&dg, 0, sizeof dg);
    etw_manifest_catalog *c;
    ETW_CHECK_INT(etw_manifest_catalog_new(&c, NULL), ETW_OK);
    ETW_CHECK_INT(etw_manifest_catalog_add_path(c, dir_, NULL), ETW_OK);
    ETW_CHECK_INT(etw_manifest_catalog_file_count(c), 4);

    /* two decoders share the catalog; nothing loads until an event asks */
    for (int i = 0; i < 2; i++) {
        etw_decoder_options o;
        memset(&o, 0, sizeof o);
        o.on_manifest_diag = on_diag;
        o.manifest_diag_ctx = &dg;
        etw_decoder *d;
        ETW_CHECK_INT(etw_decoder_new(&d, &o), ETW_OK);
        ETW_CHECK_INT(etw_decoder_add_manifest_catalog(d, c), ETW_OK);
        ETW_CHECK_INT(etw_decoder_add_manifest_catalog(d, c), ETW_E_INVALID_ARG);
        ETW_CHECK_INT(etw_decoder_stats_get(d)->manifest_providers, 0);
        int n;
        char name[128];
        run_trace(d, &n, name, sizeof name);
        ETW_CHECK_INT(n, 2041);
        ETW_CHECK_STR(name, "Microsoft-Windows-HttpService");
        ETW_CHECK_INT(etw_decoder_stats_get(d)->manifest_providers, 1); /* m2 only */
        ETW_CHECK_INT(etw_decoder_stats_get(d)->manifest_problems, 0);  /* m4 never loaded */
        etw_decoder_free(d);
    }

    /* a later file declaring the same GUID wins, also lazily */
    copy_http("m5.man", HTTP_GUID, "Later-Http");
    etw_manifest_catalog *c2;
    ETW_CHECK_INT(etw_manifest_catalog_new(&c2, NULL), ETW_OK);
    ETW_CHECK_INT(etw_manifest_catalog_add_path(c2, dir_, NULL), ETW_OK);
    ETW_CHECK_INT(etw_manifest_catalog_duplicate_count(c2), 1);
    etw_decoder *d;
    ETW_CHECK_INT(etw_decoder_new(&d, NULL), ETW_OK);
    ETW_CHECK_INT(etw_decoder_add_manifest_catalog(d, c2), ETW_OK);
    int n;
    char name[128];
    run_trace(d, &n, name, sizeof name);
    ETW_CHECK_INT(n, 2041);
    ETW_CHECK_STR(name, "Later-Http");
    etw_decoder_free(d);

    /* a manifest added after the catalog ranks after it: it wins */
    ETW_CHECK_INT(etw_decoder_new(&d, NULL), ETW_OK);
    ETW_CHECK_INT(etw_decoder_add_manifest_catalog(d, c2), ETW_OK);
    ETW_CHECK_INT(etw_decoder_add_manifest(d, ETW_TEST_DATA_DIR "/HTTP_Server.man", NULL), ETW_OK);
    run_trace(d, &n, name, sizeof name);
    ETW_CHECK_STR(name, "Microsoft-Windows-HttpService");
    etw_decoder_free(d);

    /* ... and one added before ranks before: the catalog's file wins */
    ETW_CHECK_INT(etw_decoder_new(&d, NULL), ETW_OK);
    ETW_CHECK_INT(etw_decoder_add_manifest(d, ETW_TEST_DATA_DIR "/HTTP_Server.man", NULL), ETW_OK);
    ETW_CHECK_INT(etw_decoder_add_manifest_catalog(d, c2), ETW_OK);
    run_trace(d, &n, name, sizeof name);
    ETW_CHECK_STR(name, "Later-Http");
    etw_decoder_free(d);

    /* a file named directly loads when attached, problems and all */
    etw_manifest_catalog *c3;
    ETW_CHECK_INT(etw_manifest_catalog_new(&c3, NULL), ETW_OK);
    char p[256];
    snprintf(p, sizeof p, "%s/m4.man", dir_);
    ETW_CHECK_INT(etw_manifest_catalog_add_path(c3, p, NULL), ETW_OK);
    memset(&dg, 0, sizeof dg);
    etw_decoder_options o;
    memset(&o, 0, sizeof o);
    o.on_manifest_diag = on_diag;
    o.manifest_diag_ctx = &dg;
    ETW_CHECK_INT(etw_decoder_new(&d, &o), ETW_OK);
    ETW_CHECK_INT(etw_decoder_add_manifest_catalog(d, c3), ETW_E_CORRUPT);
    ETW_CHECK_INT(dg.n, 1);
    ETW_CHECK(strstr(dg.last, "m4.man") != NULL);
    ETW_CHECK_INT(etw_decoder_stats_get(d)->manifest_problems, 1);
    ETW_CHECK_INT(etw_decoder_stats_get(d)->problems, 1);
    etw_decoder_free(d);

    etw_manifest_catalog_free(c3);
    etw_manifest_catalog_free(c2);
    etw_manifest_catalog_free(c);
    remove_dir(dir_);
}

int main(void) {
    ETW_RUN(test_scan_forms);
    ETW_RUN(test_scan_truncated);
    ETW_RUN(test_scan_many);
    ETW_RUN(test_catalog_folder);
    ETW_RUN(test_decoder_lazy);
    return ETW_TEST_DONE();
}
