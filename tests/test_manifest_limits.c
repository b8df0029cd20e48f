/* test_manifest_limits.c - the bounds of one manifest load (docs/limits.md,
 * issue 23.1), with hostile documents generated here (none committed):
 *
 *   1. element nesting: 64 levels load, 65 stop the parse (ETW_E_LIMIT);
 *      10^6 nested elements (7 MB) are refused without the memory expat
 *      would hold for every open element (290 MB before);
 *   2. an attribute value of 1 MiB loads, one byte more is refused;
 *   3. a document or file over 64 MiB is refused before it is read (a
 *      sparse file: no disk);
 *   4. a document of a million template items (7 MB) stops at the 64 MiB
 *      memory bound: the allocator's peak stays within twice the bound;
 *   5. the real manifests of tests/data keep at most 3 bytes per byte of
 *      file (+ 8 KiB) once loaded, and small ones no longer a 64 KiB
 *      block each.
 *
 * The limits are the documented ones (64, 1 MiB, 64 MiB, 64 MiB); the
 * sizes checked against them come from the generated inputs and the files.
 */
#define _POSIX_C_SOURCE 200809L

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "etw_test.h"
#include "source/etw_manifest.h"

typedef struct counting {
    size_t cur, peak;
    int n;
    char last[640];
    etw_status last_status;
} counting;

static void *c_alloc(void *ctx, size_t n) {
    counting *c = ctx;
    size_t *p = malloc(n + sizeof(max_align_t));
    if (!p) return NULL;
    p[0] = n;
    c->cur += n;
    if (c->cur > c->peak) c->peak = c->cur;
    return (unsigned char *)p + sizeof(max_align_t);
}

static void c_free(void *ctx, void *q) {
    counting *c = ctx;
    size_t *p = (size_t *)(void *)((unsigned char *)q - sizeof(max_align_t));
    c->cur -= p[0];
    free(p);
}

static void on_diag(void *ctx, const etw_diag *d) {
    counting *c = ctx;
    c->n++;
    c->last_status = d->status;
    snprintf(c->last, sizeof c->last, "%s", d->message);
}

typedef struct env {
    counting c;
    etw_allocator al;
    etw_manifest_set *m;
} env;

static void env_open(env *e) {
    memset(e, 0, sizeof *e);
    e->al.alloc = c_alloc;
    e->al.free = c_free;
    e->al.ctx = &e->c;
    etw_manifest_options o;
    memset(&o, 0, sizeof o);
    o.allocator = &e->al;
    o.on_diag = on_diag;
    o.diag_ctx = &e->c;
    ETW_CHECK_INT(etw_manifest_set_new(&e->m, &o), ETW_OK);
}

static void env_close(env *e) {
    etw_manifest_set_free(e->m);
    ETW_CHECK_INT(e->c.cur, 0);
}

#define HEAD "<instrumentationManifest><instrumentation><events>"
#define PROV "<provider name='P' guid='{5a1b2c3d-0000-4000-8000-00000000abcd}'>"
#define TAIL "</events></instrumentation></instrumentationManifest>"

static long maxrss_kb(void) {
    struct rusage ru;
    return getrusage(RUSAGE_SELF, &ru) == 0 ? ru.ru_maxrss : 0;
}

/* A document of `depth` nested elements: the root and depth - 1 <x>. */
static char *nested(size_t depth, size_t *len) {
    size_t n = strlen("<r>") + strlen("</r>") + (depth - 1) * 7;
    char *s = malloc(n + 1), *p = s;
    if (!s) return NULL;
    memcpy(p, "<r>", 3), p += 3;
    for (size_t i = 1; i < depth; i++) memcpy(p, "<x>", 3), p += 3;
    for (size_t i = 1; i < depth; i++) memcpy(p, "</x>", 4), p += 4;
    memcpy(p, "</r>", 4), p += 4;
    *p = 0;
    *len = (size_t)(p - s);
    return s;
}

static void test_nesting(void) {
    env e;
    env_open(&e);
    size_t len;
    char *s = nested(64, &len);
    ETW_CHECK(s != NULL);
    uint32_t np = 9;
    ETW_CHECK_INT(etw_manifest_load_xml(e.m, s, len, "d64.man", &np), ETW_OK); /* no provider, no error */
    ETW_CHECK_INT(np, 0);
    free(s);
    s = nested(65, &len);
    ETW_CHECK_INT(etw_manifest_load_xml(e.m, s, len, "d65.man", &np), ETW_E_LIMIT);
    ETW_CHECK_INT(e.c.last_status, ETW_E_LIMIT);
    ETW_CHECK(strstr(e.c.last, "d65.man:1: elements are nested more than 64 deep") != NULL);
    free(s);
    /* 10^6 elements: refused at the 65th, so expat never holds the rest */
    long before = maxrss_kb();
    s = nested(1000000, &len);
    ETW_CHECK(s != NULL && len == 7000000);
    ETW_CHECK_INT(etw_manifest_load_xml(e.m, s, len, "deep.man", &np), ETW_E_LIMIT);
    ETW_CHECK(strstr(e.c.last, "nested more than 64 deep") != NULL);
    free(s);
    long grew = maxrss_kb() - before;
    /* the 7 MB input and its shadow under ASan; 290 MB before the limit */
    ETW_CHECK(grew < 48 * 1024);
    if (grew >= 48 * 1024) fprintf(stderr, "peak RSS grew by %ld KiB\n", grew);
    ETW_CHECK_INT(etw_manifest_provider_count(e.m), 0);
    env_close(&e);
}

static void test_attribute(void) {
    env e;
    env_open(&e);
    const size_t max = (size_t)1 << 20;
    static const char pre[] = HEAD "<provider guid='{5a1b2c3d-0000-4000-8000-00000000abcd}' name='";
    static const char post[] = "'><events><event value='1'/></events></provider>" TAIL;
    char *s = malloc(sizeof pre + max + 1 + sizeof post);
    ETW_CHECK(s != NULL);
    for (int extra = 0; extra < 2; extra++) {
        size_t n = max + (size_t)extra, len = 0;
        memcpy(s, pre, sizeof pre - 1), len += sizeof pre - 1;
        memset(s + len, 'A', n), len += n;
        memcpy(s + len, post, sizeof post - 1), len += sizeof post - 1;
        uint32_t np = 9;
        etw_status st = etw_manifest_load_xml(e.m, s, len, "attr.man", &np);
        if (!extra) {
            ETW_CHECK_INT(st, ETW_OK);
            ETW_CHECK_INT(np, 1);
        } else {
            ETW_CHECK_INT(st, ETW_E_LIMIT);
            ETW_CHECK_INT(np, 0);
            ETW_CHECK(strstr(e.c.last, "attr.man:1: an attribute value is longer than 1 MiB") != NULL);
        }
    }
    /* the provider of the first load stays */
    ETW_CHECK_INT(etw_manifest_provider_count(e.m), 1);
    free(s);
    env_close(&e);
}

static void test_size(void) {
    env e;
    env_open(&e);
    const size_t over = ((size_t)64 << 20) + 1;
    /* never read: refused on its length */
    char *s = malloc(over);
    ETW_CHECK(s != NULL);
    ETW_CHECK_INT(etw_manifest_load_xml(e.m, s, over, "big.man", NULL), ETW_E_LIMIT);
    ETW_CHECK(strstr(e.c.last, "big.man:0: the manifest is 67108865 bytes, more than the 64 MiB") != NULL);
    free(s);
    /* a sparse file of that size: refused on its size, before any read */
    char path[] = "/tmp/etw_big_manifest_XXXXXX";
    int fd = mkstemp(path);
    ETW_CHECK(fd >= 0);
    if (fd >= 0) {
        ETW_CHECK_INT(ftruncate(fd, (off_t)over), 0);
        close(fd);
        size_t peak = e.c.peak;
        ETW_CHECK_INT(etw_manifest_load_path(e.m, path, NULL), ETW_E_LIMIT);
        ETW_CHECK(strstr(e.c.last, "the file is 67108865 bytes, more than the 64 MiB") != NULL);
        ETW_CHECK(e.c.peak == peak); /* nothing allocated for it */
        unlink(path);
    }
    env_close(&e);
}

static void test_memory_bound(void) {
    env e;
    env_open(&e);
    /* 17 templates of 65,000 <data/> (TDH's 65,535 per template): each
     * item a parse record, 1.1 million in 7.7 MB */
    const int tmpls = 17, items = 65000;
    size_t cap = strlen(HEAD PROV "<templates>") + (size_t)tmpls * (32 + (size_t)items * 7) + 64 + strlen(TAIL);
    char *s = malloc(cap), *p = s;
    ETW_CHECK(s != NULL);
    p += sprintf(p, "%s", HEAD PROV "<templates>");
    for (int t = 0; t < tmpls; t++) {
        p += sprintf(p, "<template tid='t%d'>", t);
        for (int i = 0; i < items; i++) memcpy(p, "<data/>", 7), p += 7;
        p += sprintf(p, "</template>");
    }
    p += sprintf(p, "</templates></provider>%s", TAIL);
    ETW_CHECK((size_t)(p - s) < cap);
    uint32_t np = 9;
    ETW_CHECK_INT(etw_manifest_load_xml(e.m, s, (size_t)(p - s), "items.man", &np), ETW_E_LIMIT);
    ETW_CHECK_INT(np, 0);
    ETW_CHECK(strstr(e.c.last, "loading the manifest needs more than 64 MiB of memory (the limit)") != NULL);
    /* the bound, plus the old copy of the vector being grown */
    ETW_CHECK(e.c.peak <= 2 * ETW_MANIFEST_MAX_MEMORY);
    if (e.c.peak > 2 * ETW_MANIFEST_MAX_MEMORY) fprintf(stderr, "peak %zu bytes\n", e.c.peak);
    free(s);
    env_close(&e);
}

static void test_real_manifests(void) {
    static const char *const files[] = {"ClrEtwAll.man", "HTTP_Server.man", "kernel-network.man"};
    for (size_t i = 0; i < sizeof files / sizeof *files; i++) {
        env e;
        env_open(&e);
        char path[1024];
        snprintf(path, sizeof path, "%s/%s", ETW_TEST_DATA_DIR, files[i]);
        struct stat sb;
        ETW_CHECK_INT(stat(path, &sb), 0);
        size_t base = e.c.cur;
        uint32_t np = 0;
        ETW_CHECK_INT(etw_manifest_load_path(e.m, path, &np), ETW_OK);
        ETW_CHECK(np > 0);
        size_t kept = e.c.cur - base, size = (size_t)sb.st_size;
        ETW_CHECK(kept <= 3 * size + 8192);
        if (kept > 3 * size + 8192) fprintf(stderr, "%s: %zu bytes kept for %zu of file\n", files[i], kept, size);
        env_close(&e);
    }
}

int main(void) {
    ETW_RUN(test_nesting); /* first: it reads the process's peak RSS */
    ETW_RUN(test_attribute);
    ETW_RUN(test_size);
    ETW_RUN(test_memory_bound);
    ETW_RUN(test_real_manifests);
    return ETW_TEST_DONE();
}
