/* test_pdb.c - the PDB reader (src/pdb/): CppCon.pdb's identity and
 * symbols (values from llvm-pdbutil-14; tests/test_pdb.py compares all of
 * them), PDBs built here (sections, publics, procedures, OMAP) and their
 * hostile variants (pages out of range or used twice, directories and counts
 * larger than the file, records running past their stream), the WPP
 * annotations (S_ANNOTATION "TMF:"/"TMC:") and their hostile variants, the
 * allocator contract, and the symbol-store lookup.
 *
 * `test_pdb --write-seeds DIR` writes the built PDBs as fuzz seeds
 * (fuzz/corpus/pdb/). */
#define _POSIX_C_SOURCE 200809L

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "etw_test.h"
#include "etwdecode/etwdecode.h"

#define CPPCON ETW_TEST_DATA_DIR "/CppCon.pdb"

/* ---- a little PDB writer ---- */

#define BS 512u
#define MAXB 64u

static void put16(uint8_t *p, uint32_t v) {
    p[0] = (uint8_t)v;
    p[1] = (uint8_t)(v >> 8);
}
static uint32_t get32(const uint8_t *p) {
    return (uint32_t)p[0] | ((uint32_t)p[1] << 8) | ((uint32_t)p[2] << 16) | ((uint32_t)p[3] << 24);
}
static void put32(uint8_t *p, uint32_t v) {
    put16(p, v & 0xFFFF);
    put16(p + 2, v >> 16);
}

typedef struct bytes {
    uint8_t b[2048];
    size_t n;
} bytes;

static void b16(bytes *x, uint32_t v) {
    put16(x->b + x->n, v);
    x->n += 2;
}
static void b32(bytes *x, uint32_t v) {
    put32(x->b + x->n, v);
    x->n += 4;
}
static void bstr(bytes *x, const char *s) {
    size_t k = strlen(s) + 1;
    memcpy(x->b + x->n, s, k);
    x->n += k;
}
static void bpad4(bytes *x) {
    while (x->n & 3) x->b[x->n++] = 0;
}

static void pub(bytes *x, uint16_t seg, uint32_t off, const char *name) {
    size_t at = x->n;
    b16(x, 0);
    b16(x, 0x110E);
    b32(x, 2); /* function */
    b32(x, off);
    b16(x, seg);
    bstr(x, name);
    bpad4(x);
    put16(x->b + at, (uint32_t)(x->n - at - 2));
}

static void proc(bytes *x, uint16_t kind, uint16_t seg, uint32_t off, uint32_t size, const char *name) {
    size_t at = x->n;
    b16(x, 0);
    b16(x, kind);
    for (int i = 0; i < 3; i++) b32(x, 0); /* parent, end, next */
    b32(x, size);
    b32(x, 0);
    b32(x, size);
    b32(x, 0x1000); /* type */
    b32(x, off);
    b16(x, seg);
    x->b[x->n++] = 0; /* flags */
    bstr(x, name);
    bpad4(x);
    put16(x->b + at, (uint32_t)(x->n - at - 2));
    /* S_END */
    b16(x, 2);
    b16(x, 6);
}

/* S_ANNOTATION: offset, section, count, the strings; padded with zeros (as
 * MSVC does) */
static void annot(bytes *x, uint16_t seg, uint32_t off, const char *const *strs, int n) {
    size_t at = x->n;
    b16(x, 0);
    b16(x, 0x1019);
    b32(x, off);
    b16(x, seg);
    b16(x, (uint32_t)n);
    for (int i = 0; i < n; i++) bstr(x, strs[i]);
    bpad4(x);
    put16(x->b + at, (uint32_t)(x->n - at - 2));
}

/* The annotations build() puts after the procedures: message 10 of
 * BthPS3's Bluetooth.Context.c (nefarius-tmf/e4b27b5e-....tmf), MSVC's
 * __annotation example (not WPP), a made-up TMC record, and one whose
 * strings hold a line feed and a byte that is not UTF-8. */
#define TYPEV10                                                                                      \
    "#typev Bluetooth.Context_c58 10 \"%0 [%!FUNC!] --> Entry\" //   LEVEL=TRACE_LEVEL_VERBOSE "           \
    "FLAGS=TRACE_BTH FUNC=BthPS3_DeviceContextHeaderInit"
static const char *const TMF10[] = {
    "TMF:", "e4b27b5e-24d0-369f-a4b5-23228e160bd2 BthPS3 // SRC=Bluetooth.Context.c MJ= MN=", TYPEV10, "{", "}"};
static const char *const HELLO[] = {"Hello!", "World!"};
static const char *const TMC[] = {"TMC:", "0b0c1d2e-3f40-4a5b-8c6d-7e8f90a1b2c3", "CtlName", "FLAG_A"};
static const char *const ODD[] = {"TMF:", "a\nb\rc", "\xE9t\xC3\xA9"};

static void section(bytes *x, const char *name, uint32_t va, uint32_t size) {
    uint8_t *h = x->b + x->n;
    memset(h, 0, 40);
    memcpy(h, name, strlen(name));
    put32(h + 8, size);
    put32(h + 12, va);
    x->n += 40;
}

/* Stream numbers of the built PDB. */
enum { S_OLD, S_INFO, S_TPI, S_DBI, S_SECT, S_REC, S_MOD, S_PAD, S_ORIG, S_OMAP, NSTREAMS };

typedef struct pdbimg {
    uint8_t f[MAXB * BS];
    size_t len;
    uint32_t nblocks;
    size_t dir_off;             /* file offset of the stream directory */
    uint32_t first[NSTREAMS];   /* first page of each stream */
    uint32_t npages[NSTREAMS];
    size_t data_off[NSTREAMS];  /* file offset of each stream's first page */
    size_t annot_off;           /* offset in S_MOD of the TMF10 annotation */
} pdbimg;

static const uint8_t GUID_BYTES[16] = {0x4f, 0x0a, 0xdc, 0x12, 0x7d, 0xbd, 0x2a, 0x4f,
                                       0xa9, 0xbe, 0x26, 0x3b, 0xac, 0xae, 0xb4, 0x67};

/* omap: place the symbols in original sections moved by an OMAP table.
 * two_mods: a second module entry naming the same symbol stream. */
static void build(pdbimg *im, int omap, int two_mods) {
    bytes *s = calloc(NSTREAMS, sizeof(bytes));
    /* info */
    b32(&s[S_INFO], 20000404);
    b32(&s[S_INFO], 0x5f5e100);
    b32(&s[S_INFO], 7);
    memcpy(s[S_INFO].b + 12, GUID_BYTES, 16);
    s[S_INFO].n = 28;
    /* section headers: .text at 0x1000, .data at 0x2000 */
    section(&s[S_SECT], ".text", 0x1000, 0x100);
    section(&s[S_SECT], ".data", 0x2000, 0x100);
    /* publics, and one in the absolute section 3 (no header) */
    pub(&s[S_REC], 1, 0x10, "_f");
    pub(&s[S_REC], 1, 0x80, "_g");
    pub(&s[S_REC], 2, 0x0, "_d");
    pub(&s[S_REC], 3, 0x0, "_abs");
    if (omap) pub(&s[S_REC], 1, 0x20, "_dropped");
    /* module: f (global), h (local, _ID) */
    b32(&s[S_MOD], 4);
    proc(&s[S_MOD], 0x1110, 1, 0x10, 0x20, "f");
    proc(&s[S_MOD], 0x1146, 1, 0x40, 0x10, "h");
    annot(&s[S_MOD], 1, 0x12, HELLO, 2);
    size_t annot_off = s[S_MOD].n;
    annot(&s[S_MOD], 1, 0x58, TMF10, 5);
    annot(&s[S_MOD], 0, 0, TMC, 4);
    annot(&s[S_MOD], 2, 0x8, ODD, 3);
    /* 3 pages of nothing (a stream to repeat pages in) */
    s[S_PAD].n = 3 * BS - 100;
    if (omap) {
        /* the symbols' sections were at 0x5000; OMAP moves them back */
        section(&s[S_ORIG], ".text", 0x5000, 0x100);
        section(&s[S_ORIG], ".data", 0x6000, 0x100);
        uint32_t map[][2] = {{0x5000, 0x1000}, {0x5020, 0}, {0x5030, 0x1030}, {0x6000, 0x2000}};
        for (size_t i = 0; i < 4; i++) {
            b32(&s[S_OMAP], map[i][0]);
            b32(&s[S_OMAP], map[i][1]);
        }
    }
    /* DBI: header, module info, optional debug header */
    bytes mi;
    memset(&mi, 0, sizeof mi);
    for (int k = 0; k < (two_mods ? 2 : 1); k++) {
        uint8_t *e = mi.b + mi.n;
        memset(e, 0, 64);
        put16(e + 34, S_MOD);
        put32(e + 36, (uint32_t)s[S_MOD].n);
        mi.n += 64;
        bstr(&mi, "C:\\src\\a.obj");
        bstr(&mi, "C:\\src\\a.obj");
        bpad4(&mi);
    }
    bytes *d = &s[S_DBI];
    b32(d, 0xFFFFFFFFu);
    b32(d, 19990903);
    b32(d, 9); /* DBI age: the one etw_pdb_identity gives */
    b16(d, 0xFFFF);
    b16(d, 0);
    b16(d, 0xFFFF);
    b16(d, 0);
    b16(d, S_REC);
    b16(d, 0);
    b32(d, (uint32_t)mi.n);
    for (int i = 0; i < 5; i++) b32(d, 0);
    b32(d, 22); /* optional debug header */
    b32(d, 0);  /* EC */
    b16(d, 0);
    b16(d, 0x14c);
    b32(d, 0);
    memcpy(d->b + d->n, mi.b, mi.n);
    d->n += mi.n;
    for (int i = 0; i < 11; i++) {
        uint32_t v = 0xFFFF;
        if (i == 5) v = S_SECT;
        if (omap && i == 4) v = S_OMAP;
        if (omap && i == 10) v = S_ORIG;
        b16(d, v);
    }

    /* lay out: 0 superblock, 1-2 free block maps, 3 block map, 4 directory,
     * then the streams */
    memset(im, 0, sizeof *im);
    im->annot_off = annot_off;
    uint32_t next = 5;
    bytes dir;
    memset(&dir, 0, sizeof dir);
    b32(&dir, NSTREAMS);
    for (int i = 0; i < NSTREAMS; i++) b32(&dir, i == S_OLD ? 0xFFFFFFFFu : (uint32_t)s[i].n);
    for (int i = 0; i < NSTREAMS; i++) {
        uint32_t np = (uint32_t)((s[i].n + BS - 1) / BS);
        im->first[i] = next;
        im->npages[i] = np;
        im->data_off[i] = (size_t)next * BS;
        for (uint32_t k = 0; k < np; k++) {
            memcpy(im->f + (size_t)(next + k) * BS, s[i].b + (size_t)k * BS,
                   s[i].n - k * BS < BS ? s[i].n - k * BS : BS);
            b32(&dir, next + k);
        }
        next += np;
    }
    static const char magic[] = "Microsoft C/C++ MSF 7.00\r\n\x1a" "DS\0\0";
    memcpy(im->f, magic, 32);
    put32(im->f + 32, BS);
    put32(im->f + 36, 1);
    put32(im->f + 40, next);
    put32(im->f + 44, (uint32_t)dir.n);
    put32(im->f + 52, 3);
    put32(im->f + 3 * BS, 4);
    memcpy(im->f + 4 * BS, dir.b, dir.n);
    im->dir_off = 4 * BS;
    im->nblocks = next;
    im->len = (size_t)next * BS;
    free(s);
}

/* file offset of the directory entry holding page k of stream st */
static size_t page_entry(const pdbimg *im, int st, uint32_t k) {
    size_t off = im->dir_off + 4 + 4 * NSTREAMS;
    for (int i = 0; i < st; i++) off += 4 * im->npages[i];
    return off + 4 * k;
}

static etw_status open_img(const pdbimg *im, const char **why, etw_pdb **out) {
    etw_pdb_options o = {NULL, why};
    return etw_pdb_open_mem(out, im->f, im->len, &o);
}

/* Opening fails with st and a reason. */
static void expect_fail(const pdbimg *im, etw_status st, const char *what) {
    const char *why = NULL;
    etw_pdb *p = NULL;
    etw_status got = etw_pdb_open_mem(&p, im->f, im->len, &(etw_pdb_options){NULL, &why});
    if (got != st) fprintf(stderr, "  %s: %s (%s)\n", what, etw_strerror(got), why ? why : "-");
    ETW_CHECK_INT(got, st);
    ETW_CHECK(why != NULL);
    ETW_CHECK(p == NULL);
    etw_pdb_free(p);
}

static void check_lookup(const etw_pdb *p, uint32_t rva, const char *name, uint32_t off) {
    etw_pdb_symbol s;
    uint32_t o = 0xdead;
    etw_status st = etw_pdb_lookup(p, rva, &s, &o);
    if (!name) {
        ETW_CHECK_INT(st, ETW_E_NOT_FOUND);
        return;
    }
    ETW_CHECK_INT(st, ETW_OK);
    if (st != ETW_OK) return;
    ETW_CHECK_STR(s.name, name);
    ETW_CHECK_INT(o, off);
}

static void check_built(const etw_pdb *p) {
    etw_guid g;
    uint32_t age = 0;
    char gs[ETW_GUID_STRING_SIZE];
    etw_pdb_identity(p, &g, &age);
    etw_guid_format(&g, gs);
    ETW_CHECK_STR(gs, "12dc0a4f-bd7d-4f2a-a9be-263bacaeb467");
    ETW_CHECK_INT(age, 9);
    ETW_CHECK_INT(etw_pdb_symbol_count(p), 5);
    static const struct {
        const char *name;
        uint32_t rva, size;
        etw_pdb_symbol_kind kind;
    } want[] = {{"f", 0x1010, 0x20, ETW_PDB_PROCEDURE},
                {"_f", 0x1010, 0, ETW_PDB_PUBLIC},
                {"h", 0x1040, 0x10, ETW_PDB_PROCEDURE},
                {"_g", 0x1080, 0, ETW_PDB_PUBLIC},
                {"_d", 0x2000, 0, ETW_PDB_PUBLIC}};
    for (size_t i = 0; i < 5; i++) {
        etw_pdb_symbol s;
        ETW_CHECK_INT(etw_pdb_symbol_at(p, i, &s), ETW_OK);
        ETW_CHECK_STR(s.name, want[i].name);
        ETW_CHECK_INT(s.name_len, strlen(want[i].name));
        ETW_CHECK_INT(s.rva, want[i].rva);
        ETW_CHECK_INT(s.size, want[i].size);
        ETW_CHECK_INT(s.kind, want[i].kind);
    }
    etw_pdb_symbol s;
    ETW_CHECK_INT(etw_pdb_symbol_at(p, 5, &s), ETW_E_NOT_FOUND);
    check_lookup(p, 0x1000, NULL, 0);     /* below the first symbol */
    check_lookup(p, 0x1010, "f", 0);      /* the procedure before its public */
    check_lookup(p, 0x102F, "f", 0x1F);   /* its last byte */
    check_lookup(p, 0x1030, "_f", 0x20);  /* past f: the public below */
    check_lookup(p, 0x1045, "h", 5);
    check_lookup(p, 0x1050, "_f", 0x40);  /* past h, which has no public */
    check_lookup(p, 0x10FF, "_g", 0x7F);
    check_lookup(p, 0x1100, NULL, 0);     /* past .text: not _g's */
    check_lookup(p, 0x2050, "_d", 0x50);
    check_lookup(p, 0xFFFFFFFFu, NULL, 0);
}

static void test_built(void) {
    pdbimg *im = malloc(sizeof *im);
    build(im, 0, 0);
    etw_pdb *p = NULL;
    const char *why = "unset";
    ETW_CHECK_INT(open_img(im, &why, &p), ETW_OK);
    ETW_CHECK(why == NULL);
    if (p) check_built(p);
    etw_pdb_free(p);
    /* OMAP: symbols placed in the original sections, moved to the final
     * RVAs; a public in a dropped range left out */
    build(im, 1, 0);
    p = NULL;
    ETW_CHECK_INT(open_img(im, &why, &p), ETW_OK);
    if (p) check_built(p);
    etw_pdb_free(p);
    /* OMAP without original section headers (a stream too short for one):
     * the final ones place the symbols, unmapped */
    put32(im->f + im->dir_off + 4 + 4 * S_ORIG, 10);
    p = NULL;
    ETW_CHECK_INT(open_img(im, &why, &p), ETW_OK);
    ETW_CHECK_INT(etw_pdb_symbol_count(p), 6);
    if (p) check_lookup(p, 0x1025, "f", 0x15);
    etw_pdb_free(p);
    free(im);
}

static void test_hostile_msf(void) {
    pdbimg *im = malloc(sizeof *im);
    pdbimg *ok = malloc(sizeof *ok);
    build(ok, 0, 0);

#define FRESH() memcpy(im, ok, sizeof *im)
    FRESH();
    im->f[0] = 'm';
    expect_fail(im, ETW_E_CORRUPT, "magic");
    FRESH();
    memcpy(im->f, "BSJB", 4);
    expect_fail(im, ETW_E_UNSUPPORTED, "portable PDB");
    FRESH();
    im->len = 40;
    expect_fail(im, ETW_E_CORRUPT, "shorter than a superblock");
    FRESH();
    put32(im->f + 32, 1000);
    expect_fail(im, ETW_E_CORRUPT, "block size");
    FRESH();
    put32(im->f + 36, 7);
    expect_fail(im, ETW_E_CORRUPT, "free block map page");
    FRESH();
    put32(im->f + 40, im->nblocks + 100);
    expect_fail(im, ETW_E_TRUNCATED, "more blocks than the file");
    FRESH();
    im->len -= BS;
    expect_fail(im, ETW_E_TRUNCATED, "file cut by a page");
    FRESH();
    put32(im->f + 52, 0xFFFFFFF0u);
    expect_fail(im, ETW_E_CORRUPT, "block map address out of range");
    /* directory larger than the file, than its block map */
    FRESH();
    put32(im->f + 44, 0x7FFFFFFFu);
    expect_fail(im, ETW_E_CORRUPT, "directory size past the file");
    FRESH();
    put32(im->f + 44, 40 * BS);
    expect_fail(im, ETW_E_CORRUPT, "directory of 40 pages, 1 listed");
    FRESH();
    put32(im->f + 3 * BS, im->nblocks);
    expect_fail(im, ETW_E_CORRUPT, "directory page out of range");
    /* huge counts */
    FRESH();
    put32(im->f + im->dir_off, 0xFFFFFFFFu);
    expect_fail(im, ETW_E_CORRUPT, "stream count");
    FRESH();
    put32(im->f + im->dir_off, 1u << 28);
    expect_fail(im, ETW_E_CORRUPT, "stream count 2^28");
    FRESH();
    put32(im->f + im->dir_off + 4 + 4 * S_PAD, 0xFFFFFFF0u);
    expect_fail(im, ETW_E_CORRUPT, "stream size 4 GiB");
    FRESH();
    put32(im->f + im->dir_off + 4 + 4 * S_PAD, 3 * BS + 1); /* one page more than listed */
    expect_fail(im, ETW_E_CORRUPT, "stream size one page past its list");
    /* page numbers */
    FRESH();
    put32(im->f + page_entry(im, S_PAD, 1), im->nblocks);
    expect_fail(im, ETW_E_CORRUPT, "page = block count");
    FRESH();
    put32(im->f + page_entry(im, S_PAD, 2), 0xFFFFFFFFu);
    expect_fail(im, ETW_E_CORRUPT, "page 0xFFFFFFFF");
    FRESH();
    put32(im->f + page_entry(im, S_PAD, 1), im->first[S_PAD]);
    expect_fail(im, ETW_E_CORRUPT, "a page twice in one stream (a cycle)");
    FRESH();
    put32(im->f + page_entry(im, S_PAD, 2), im->first[S_PAD]);
    expect_fail(im, ETW_E_CORRUPT, "a stream's first page again as its last");
    FRESH();
    put32(im->f + page_entry(im, S_SECT, 0), im->first[S_DBI]);
    expect_fail(im, ETW_E_CORRUPT, "a page in two streams");
    FRESH();
    put32(im->f + page_entry(im, S_SECT, 0), 0);
    expect_fail(im, ETW_E_CORRUPT, "the superblock as a stream page");
    FRESH();
    put32(im->f + page_entry(im, S_SECT, 0), 4);
    expect_fail(im, ETW_E_CORRUPT, "the directory's page as a stream page");
    FRESH();
    put32(im->f + page_entry(im, S_SECT, 0), 1);
    expect_fail(im, ETW_E_CORRUPT, "the free block map as a stream page");
#undef FRESH
    free(im);
    free(ok);
}

static void test_hostile_streams(void) {
    pdbimg *im = malloc(sizeof *im);
    pdbimg *ok = malloc(sizeof *ok);
    build(ok, 0, 0);
    size_t dbi = ok->data_off[S_DBI], rec = ok->data_off[S_REC], mod = ok->data_off[S_MOD];
#define FRESH() memcpy(im, ok, sizeof *im)
    FRESH();
    put32(im->f + im->dir_off + 4 + 4 * S_INFO, 0xFFFFFFFFu);
    expect_fail(im, ETW_E_CORRUPT, "no info stream");
    FRESH();
    put32(im->f + im->dir_off + 4 + 4 * S_INFO, 20);
    expect_fail(im, ETW_E_CORRUPT, "short info stream");
    FRESH();
    put32(im->f + im->dir_off + 4 + 4 * S_DBI, 40);
    expect_fail(im, ETW_E_CORRUPT, "DBI shorter than its header");
    FRESH();
    put32(im->f + dbi, 0);
    expect_fail(im, ETW_E_UNSUPPORTED, "old DBI");
    FRESH();
    put32(im->f + dbi + 24, 0x7FFFFFF0u);
    expect_fail(im, ETW_E_CORRUPT, "module info size");
    FRESH();
    put32(im->f + dbi + 24, 0xFFFFFFF0u);
    expect_fail(im, ETW_E_CORRUPT, "module info size negative");
    FRESH();
    put32(im->f + dbi + 28, 0x7FFFFFF0u);
    put32(im->f + dbi + 32, 0x7FFFFFF0u);
    put32(im->f + dbi + 36, 0x7FFFFFF0u);
    expect_fail(im, ETW_E_CORRUPT, "substream sizes summing past 4 GiB");
    FRESH();
    /* module name cut (the section contributions start earlier, so the
     * debug header stays where it is) */
    put32(im->f + dbi + 28, get32(im->f + dbi + 24) - (64 + 3));
    put32(im->f + dbi + 24, 64 + 3);
    expect_fail(im, ETW_E_CORRUPT, "module name without its NUL");
    FRESH();
    put32(im->f + dbi + 28, get32(im->f + dbi + 24) - 20); /* entry cut */
    put32(im->f + dbi + 24, 20);
    expect_fail(im, ETW_E_CORRUPT, "module entry cut");
    FRESH();
    put16(im->f + dbi + 64 + 34, 500);
    expect_fail(im, ETW_E_CORRUPT, "module stream out of range");
    FRESH();
    put32(im->f + dbi + 64 + 36, 0xFFFFFFF0u);
    expect_fail(im, ETW_E_CORRUPT, "module symbol bytes past its stream");
    FRESH();
    put16(im->f + dbi + 20, 400);
    expect_fail(im, ETW_E_CORRUPT, "symbol record stream out of range");
    FRESH();
    put16(im->f + rec, 0xFFFF);
    expect_fail(im, ETW_E_CORRUPT, "public record length past the stream");
    FRESH();
    put16(im->f + rec, 1);
    expect_fail(im, ETW_E_CORRUPT, "record length 1");
    FRESH();
    put16(im->f + rec, 6);
    expect_fail(im, ETW_E_CORRUPT, "S_PUB32 too short for its fields");
    FRESH();
    put16(im->f + mod + 4, 0x7000);
    expect_fail(im, ETW_E_CORRUPT, "procedure record length past the stream");
    FRESH();
    put16(im->f + mod + 4, 20);
    expect_fail(im, ETW_E_CORRUPT, "procedure record too short");
    FRESH();
    /* module symbol bytes ending inside a record header */
    put32(im->f + dbi + 64 + 36, 6);
    expect_fail(im, ETW_E_CORRUPT, "record header cut");
    build(im, 0, 1);
    expect_fail(im, ETW_E_CORRUPT, "two modules, one stream");

    /* a name without its NUL is read to the record's end; a name that is
     * not UTF-8 is shown with '?' */
    FRESH();
    uint8_t *name = im->f + rec + 14; /* "_f" */
    name[1] = 0xE9;
    etw_pdb *p = NULL;
    ETW_CHECK_INT(open_img(im, NULL, &p), ETW_OK);
    etw_pdb_symbol s;
    if (p && etw_pdb_symbol_at(p, 1, &s) == ETW_OK) ETW_CHECK_STR(s.name, "_?");
    etw_pdb_free(p);

    /* every truncation and a few thousand byte changes: a status, never a
     * crash (ASan builds run this too) */
    int opened = 0;
    for (size_t len = 0; len <= ok->len; len = len + 7 > ok->len && len < ok->len ? ok->len : len + 7) {
        p = NULL;
        etw_status st = etw_pdb_open_mem(&p, ok->f, len, NULL);
        ETW_CHECK(st == ETW_OK || st == ETW_E_CORRUPT || st == ETW_E_TRUNCATED);
        opened += st == ETW_OK;
        etw_pdb_free(p);
    }
    ETW_CHECK(opened >= 1);
    uint32_t seed = 12345;
    int bad = 0;
    for (int i = 0; i < 3000; i++) {
        memcpy(im, ok, sizeof *im);
        for (int k = 0; k < 4; k++) {
            seed = seed * 1103515245u + 12345u;
            size_t at = (seed >> 8) % im->len;
            seed = seed * 1103515245u + 12345u;
            im->f[at] = (uint8_t)(seed >> 16);
        }
        p = NULL;
        etw_status st = etw_pdb_open_mem(&p, im->f, im->len, NULL);
        if (st != ETW_OK && st != ETW_E_CORRUPT && st != ETW_E_TRUNCATED && st != ETW_E_UNSUPPORTED) bad++;
        if (p) {
            etw_pdb_symbol sy;
            uint32_t off;
            for (uint32_t r = 0xFF0; r < 0x2100; r += 0x21) (void)etw_pdb_lookup(p, r, &sy, &off);
        }
        etw_pdb_free(p);
    }
    ETW_CHECK_INT(bad, 0);
#undef FRESH
    free(im);
    free(ok);
}

/* ---- WPP annotations (etw_pdb_annotations_*) ---- */

typedef struct seen {
    int n;
    int stop_after; /* return ETW_E_LIMIT from this call on; 0 never */
    etw_pdb_annotation_kind kind[8];
    uint32_t module[8], offset[8];
    uint16_t section[8];
    size_t count[8];
    char text[8][512];
    int text_ok; /* text is the strings joined, each ended by '\n' */
} seen;

static etw_status collect(void *ctx, const etw_pdb_annotation *a) {
    seen *v = ctx;
    if (v->stop_after && v->n >= v->stop_after) return ETW_E_LIMIT;
    if (v->n < 8) {
        int i = v->n;
        v->kind[i] = a->kind;
        v->module[i] = a->module;
        v->offset[i] = a->offset;
        v->section[i] = a->section;
        v->count[i] = a->count;
        snprintf(v->text[i], sizeof v->text[i], "%s", a->text);
        /* the text from the strings, independently */
        char join[70000]; /* more than a record's 65,535 bytes */
        size_t q = 0;
        join[0] = 0;
        for (size_t k = 0; k < a->count && q < sizeof join - 1; k++)
            q += (size_t)snprintf(join + q, sizeof join - q, "%s\n", a->strings[k]);
        if (strcmp(join, a->text) != 0 || q != a->text_len || a->strings[a->count] != NULL ||
            strlen(a->text) != a->text_len || memchr(a->text, '\r', a->text_len))
            v->text_ok = 0;
    }
    v->n++;
    return ETW_OK;
}

static etw_status annotations_img(const pdbimg *im, const char **why, seen *v) {
    memset(v, 0, sizeof *v);
    v->text_ok = 1;
    etw_pdb_options o = {NULL, why};
    return etw_pdb_annotations_mem(im->f, im->len, &o, collect, v);
}

/* The annotations fail with st and this reason (the symbols still open:
 * their path does not read annotations). */
static void expect_annotation_fail(const pdbimg *im, etw_status st, const char *reason) {
    seen v;
    const char *why = NULL;
    ETW_CHECK_INT(annotations_img(im, &why, &v), st);
    ETW_CHECK_STR(why, reason);
}

static void test_annotations(void) {
    pdbimg *im = malloc(sizeof *im);
    pdbimg *ok = malloc(sizeof *ok);
    build(ok, 0, 0);
    seen v;
    const char *why = "unset";
    ETW_CHECK_INT(annotations_img(ok, &why, &v), ETW_OK);
    ETW_CHECK(why == NULL);
    ETW_CHECK_INT(v.n, 3); /* TMF10, TMC, ODD; not HELLO */
    ETW_CHECK(v.text_ok);
    ETW_CHECK_INT(v.kind[0], ETW_PDB_TMF);
    ETW_CHECK_INT(v.module[0], 0);
    ETW_CHECK_INT(v.section[0], 1);
    ETW_CHECK_INT(v.offset[0], 0x58);
    ETW_CHECK_INT(v.count[0], 4);
    char want[512];
    snprintf(want, sizeof want, "%s\n%s\n%s\n%s\n", TMF10[1], TMF10[2], TMF10[3], TMF10[4]);
    ETW_CHECK_STR(v.text[0], want);
    ETW_CHECK_INT(v.kind[1], ETW_PDB_TMC);
    ETW_CHECK_INT(v.count[1], 3);
    ETW_CHECK_STR(v.text[1], "0b0c1d2e-3f40-4a5b-8c6d-7e8f90a1b2c3\nCtlName\nFLAG_A\n");
    ETW_CHECK_INT(v.section[1], 0);
    /* a line feed or carriage return inside a string: a space; not UTF-8: '?' */
    ETW_CHECK_INT(v.kind[2], ETW_PDB_TMF);
    ETW_CHECK_STR(v.text[2], "a b c\n?t\xC3\xA9\n");
    /* the symbols are what they were without annotations */
    etw_pdb *p = NULL;
    ETW_CHECK_INT(open_img(ok, NULL, &p), ETW_OK);
    if (p) check_built(p);
    etw_pdb_free(p);

    /* the callback stops the walk with its status */
    memset(&v, 0, sizeof v);
    v.stop_after = 1;
    v.text_ok = 1;
    ETW_CHECK_INT(etw_pdb_annotations_mem(ok->f, ok->len, NULL, collect, &v), ETW_E_LIMIT);
    ETW_CHECK_INT(v.n, 1);
    ETW_CHECK_INT(etw_pdb_annotations_mem(ok->f, ok->len, NULL, NULL, NULL), ETW_E_INVALID_ARG);
    ETW_CHECK_INT(etw_pdb_annotations_mem(NULL, 5, NULL, collect, &v), ETW_E_INVALID_ARG);
    ETW_CHECK_INT(etw_pdb_annotations_file(NULL, NULL, collect, &v), ETW_E_INVALID_ARG);
    why = NULL;
    ETW_CHECK_INT(etw_pdb_annotations_file(ETW_TEST_DATA_DIR "/no-such.pdb", &(etw_pdb_options){NULL, &why},
                                           collect, &v),
                  ETW_E_IO);
    ETW_CHECK(why != NULL);
    /* CppCon.pdb (MSVC, no WPP): none */
    memset(&v, 0, sizeof v);
    ETW_CHECK_INT(etw_pdb_annotations_file(CPPCON, NULL, collect, &v), ETW_OK);
    ETW_CHECK_INT(v.n, 0);

    size_t rec = ok->data_off[S_MOD] + ok->annot_off; /* the TMF10 record */
    uint32_t reclen = (uint32_t)ok->f[rec] | ((uint32_t)ok->f[rec + 1] << 8);
#define FRESH() memcpy(im, ok, sizeof *im)
    /* a string count beyond the record */
    FRESH();
    put16(im->f + rec + 10, 0x7FFF);
    expect_annotation_fail(im, ETW_E_CORRUPT, "S_ANNOTATION string count larger than its record");
    p = NULL;
    ETW_CHECK_INT(open_img(im, NULL, &p), ETW_OK);
    etw_pdb_free(p);
    /* one string more than the record holds (the padding gives one empty
     * string at most: count + 3 cannot be found) */
    FRESH();
    put16(im->f + rec + 10, 5 + 3);
    expect_annotation_fail(im, ETW_E_CORRUPT, "S_ANNOTATION string runs past its record");
    /* the last string's NUL outside the record (the record cut short: what
     * follows is read as the next record, never reached) */
    FRESH();
    put16(im->f + rec, reclen - 4);
    expect_annotation_fail(im, ETW_E_CORRUPT, "S_ANNOTATION string runs past its record");
    /* shorter than its fixed fields */
    FRESH();
    put16(im->f + rec, 2 + 6);
    expect_annotation_fail(im, ETW_E_CORRUPT, "S_ANNOTATION record too short");
    /* a record running past its stream */
    FRESH();
    put16(im->f + rec, 0x7000);
    expect_annotation_fail(im, ETW_E_CORRUPT, "symbol record runs past its stream");
    /* a damaged annotation that is not WPP's is an error too */
    FRESH();
    put16(im->f + rec, 2 + 6);
    memcpy(im->f + rec + 12, "XMF:", 4);
    expect_annotation_fail(im, ETW_E_CORRUPT, "S_ANNOTATION record too short");
    /* the tag is "TMF:" exactly (case matters) */
    FRESH();
    memcpy(im->f + rec + 12, "TMf:", 4);
    ETW_CHECK_INT(annotations_img(im, NULL, &v), ETW_OK);
    ETW_CHECK_INT(v.n, 2);
    /* a PDB of types only (no DBI stream): none, ETW_OK */
    FRESH();
    put32(im->f + im->dir_off + 4 + 4 * S_DBI, 0);
    ETW_CHECK_INT(annotations_img(im, NULL, &v), ETW_OK);
    ETW_CHECK_INT(v.n, 0);
    FRESH();
    put32(im->f + im->dir_off + 4 + 4 * S_DBI, 40);
    expect_annotation_fail(im, ETW_E_CORRUPT, "DBI stream shorter than its header");
    FRESH();
    put32(im->f + ok->data_off[S_DBI] + 24, 0x7FFFFFF0u);
    expect_annotation_fail(im, ETW_E_CORRUPT, "DBI substream sizes larger than the DBI stream");
    FRESH();
    put16(im->f + ok->data_off[S_DBI] + 64 + 34, 500);
    expect_annotation_fail(im, ETW_E_CORRUPT, "module symbol stream out of range");

    /* every truncation and a few thousand byte changes: a status, a reason
     * with every failure, never a crash (ASan builds run this too) */
    int bad = 0;
    for (size_t len = 0; len <= ok->len; len += 5) {
        why = NULL;
        memset(&v, 0, sizeof v);
        etw_status st = etw_pdb_annotations_mem(ok->f, len, &(etw_pdb_options){NULL, &why}, collect, &v);
        if (st != ETW_OK && ((st != ETW_E_CORRUPT && st != ETW_E_TRUNCATED) || !why)) {
            fprintf(stderr, "  truncated to %zu: %s (%s)\n", len, etw_strerror(st), why ? why : "-");
            bad++;
        }
    }
    uint32_t seed = 777;
    for (int i = 0; i < 3000; i++) {
        FRESH();
        for (int k = 0; k < 3; k++) {
            seed = seed * 1103515245u + 12345u;
            /* most changes inside the module stream */
            size_t at = k < 2 ? ok->data_off[S_MOD] + (seed >> 8) % (ok->npages[S_MOD] * BS) : (seed >> 8) % im->len;
            seed = seed * 1103515245u + 12345u;
            im->f[at] = (uint8_t)(seed >> 16);
        }
        why = NULL;
        etw_status st = annotations_img(im, &why, &v);
        if (st != ETW_OK && ((st != ETW_E_CORRUPT && st != ETW_E_TRUNCATED && st != ETW_E_UNSUPPORTED) || !why))
        {
            fprintf(stderr, "  change %d: %s (%s)\n", i, etw_strerror(st), why ? why : "-");
            bad++;
        }
        if (st == ETW_OK && !v.text_ok) {
            fprintf(stderr, "  change %d: text is not the strings joined\n", i);
            bad++;
        }
    }
    ETW_CHECK_INT(bad, 0);
#undef FRESH
    free(im);
    free(ok);
}

/* ---- the allocator contract ---- */

typedef struct counting {
    long live;
    long calls;
    long fail_at; /* the call that fails; -1 never */
} counting;

static void *c_alloc(void *ctx, size_t n) {
    counting *c = ctx;
    if (c->calls++ == c->fail_at) return NULL;
    void *p = malloc(n);
    if (p) c->live++;
    return p;
}
static void c_free(void *ctx, void *p) {
    counting *c = ctx;
    if (p) c->live--;
    free(p);
}

static void test_allocator(void) {
    counting c = {0, 0, -1};
    etw_allocator a = {c_alloc, c_free, &c};
    etw_pdb_options o = {&a, NULL};
    etw_pdb *p = NULL;
    ETW_CHECK_INT(etw_pdb_open_file(&p, CPPCON, &o), ETW_OK);
    ETW_CHECK(c.live > 0);
    etw_pdb_free(p);
    ETW_CHECK_INT(c.live, 0);
    long total = c.calls;
    ETW_CHECK(total > 5);
    /* every allocation failing in turn: ETW_E_NOMEM and nothing left */
    int nomem = 0;
    for (long k = 0; k < total; k++) {
        c.live = 0;
        c.calls = 0;
        c.fail_at = k;
        p = NULL;
        etw_status st = etw_pdb_open_file(&p, CPPCON, &o);
        nomem += st == ETW_E_NOMEM;
        etw_pdb_free(p);
        ETW_CHECK_INT(c.live, 0);
    }
    ETW_CHECK_INT(nomem, total);

    /* etw_pdb_annotations_mem: the same contract */
    pdbimg *im = malloc(sizeof *im);
    build(im, 0, 0);
    seen v;
    memset(&v, 0, sizeof v);
    c.live = c.calls = 0;
    c.fail_at = -1;
    ETW_CHECK_INT(etw_pdb_annotations_mem(im->f, im->len, &o, collect, &v), ETW_OK);
    ETW_CHECK_INT(v.n, 3);
    ETW_CHECK_INT(c.live, 0);
    total = c.calls;
    nomem = 0;
    for (long k = 0; k < total; k++) {
        c.live = 0;
        c.calls = 0;
        c.fail_at = k;
        memset(&v, 0, sizeof v);
        nomem += etw_pdb_annotations_mem(im->f, im->len, &o, collect, &v) == ETW_E_NOMEM;
        ETW_CHECK_INT(c.live, 0);
    }
    ETW_CHECK_INT(nomem, total);
    free(im);
}

/* ---- CppCon.pdb (values from llvm-pdbutil-14 dump) ---- */

static void test_cppcon(void) {
    etw_pdb *p = NULL;
    const char *why = NULL;
    etw_pdb_options o = {NULL, &why};
    ETW_CHECK_INT(etw_pdb_open_file(&p, CPPCON, &o), ETW_OK);
    if (!p) return;
    etw_guid g;
    uint32_t age = 0;
    char gs[ETW_GUID_STRING_SIZE];
    etw_pdb_identity(p, &g, &age);
    etw_guid_format(&g, gs);
    /* llvm-pdbutil --summary: GUID {12DC0A4F-BD7D-4F2A-A9BE-263BACAEB467}, Age 5 */
    ETW_CHECK_STR(gs, "12dc0a4f-bd7d-4f2a-a9be-263bacaeb467");
    ETW_CHECK_INT(age, 5);
    /* 198 S_PUB32 of which 10 in the absolute section 6; 58 S_GPROC32 */
    ETW_CHECK_INT(etw_pdb_symbol_count(p), 188 + 58);
    size_t pubs = 0, procs = 0;
    uint32_t prev = 0;
    for (size_t i = 0; i < etw_pdb_symbol_count(p); i++) {
        etw_pdb_symbol s;
        ETW_CHECK_INT(etw_pdb_symbol_at(p, i, &s), ETW_OK);
        ETW_CHECK(s.rva >= prev);
        prev = s.rva;
        ETW_CHECK_INT(strlen(s.name), s.name_len);
        pubs += s.kind == ETW_PDB_PUBLIC;
        procs += s.kind == ETW_PDB_PROCEDURE;
    }
    ETW_CHECK_INT(pubs, 188);
    ETW_CHECK_INT(procs, 58);
    /* main: S_GPROC32 at 0001:0000, code size 14; .text at 0x1000 */
    etw_pdb_symbol s;
    uint32_t off = 0;
    ETW_CHECK_INT(etw_pdb_lookup(p, 0x1005, &s, &off), ETW_OK);
    ETW_CHECK_STR(s.name, "main");
    ETW_CHECK_INT(s.kind, ETW_PDB_PROCEDURE);
    ETW_CHECK_INT(s.rva, 0x1000);
    ETW_CHECK_INT(s.size, 14);
    ETW_CHECK_INT(off, 5);
    /* __security_check_cookie: 0001:0746, 14 bytes; its public is
     * @__security_check_cookie@4 */
    ETW_CHECK_INT(etw_pdb_lookup(p, 0x1000 + 746 + 13, &s, &off), ETW_OK);
    ETW_CHECK_STR(s.name, "__security_check_cookie");
    ETW_CHECK_INT(off, 13);
    /* ___current_exception: a public (0001:3677) with no procedure */
    ETW_CHECK_INT(etw_pdb_lookup(p, 0x1000 + 3677 + 2, &s, &off), ETW_OK);
    ETW_CHECK_STR(s.name, "___current_exception");
    ETW_CHECK_INT(s.kind, ETW_PDB_PUBLIC);
    ETW_CHECK_INT(off, 2);
    ETW_CHECK_INT(etw_pdb_lookup(p, 0xFFF, &s, &off), ETW_E_NOT_FOUND);
    ETW_CHECK_INT(etw_pdb_lookup(p, 0x5000, &s, &off), ETW_E_NOT_FOUND); /* past every section */
    ETW_CHECK_INT(etw_pdb_symbol_at(p, 246, &s), ETW_E_NOT_FOUND);

    /* the same from memory */
    FILE *f = fopen(CPPCON, "rb");
    ETW_CHECK(f != NULL);
    if (f) {
        uint8_t *buf = malloc(708608);
        size_t n = fread(buf, 1, 708608, f);
        fclose(f);
        ETW_CHECK_INT(n, 708608);
        etw_pdb *q = NULL;
        ETW_CHECK_INT(etw_pdb_open_mem(&q, buf, n, NULL), ETW_OK);
        memset(buf, 0, n); /* not kept */
        free(buf);
        if (q) {
            ETW_CHECK_INT(etw_pdb_symbol_count(q), etw_pdb_symbol_count(p));
            etw_pdb_symbol a, b;
            for (size_t i = 0; i < etw_pdb_symbol_count(p); i++) {
                etw_pdb_symbol_at(p, i, &a);
                etw_pdb_symbol_at(q, i, &b);
                ETW_CHECK(a.rva == b.rva && a.size == b.size && a.kind == b.kind && strcmp(a.name, b.name) == 0);
            }
        }
        etw_pdb_free(q);
    }
    etw_pdb_free(p);

    p = (etw_pdb *)1;
    ETW_CHECK_INT(etw_pdb_open_file(&p, ETW_TEST_DATA_DIR "/no-such.pdb", &o), ETW_E_IO);
    ETW_CHECK(p == NULL);
    ETW_CHECK_INT(etw_pdb_open_file(&p, ETW_TEST_DATA_DIR "/smallEtlFile.etl", &o), ETW_E_CORRUPT);
    ETW_CHECK(why != NULL);
    ETW_CHECK_INT(etw_pdb_open_mem(NULL, NULL, 0, NULL), ETW_E_INVALID_ARG);
    ETW_CHECK_INT(etw_pdb_symbol_count(NULL), 0);
    etw_pdb_free(NULL);
}

/* ---- the symbol store ---- */

static char store_[64];

static void mkdirs(const char *rel) {
    char p[512];
    snprintf(p, sizeof p, "%s/%s", store_, rel);
    ETW_CHECK_INT(mkdir(p, 0700), 0);
}

static void copy_to(const char *rel) {
    char p[512];
    snprintf(p, sizeof p, "%s/%s", store_, rel);
    FILE *in = fopen(CPPCON, "rb"), *out = fopen(p, "wb");
    ETW_CHECK(in && out);
    if (in && out) {
        char buf[65536];
        size_t n;
        while ((n = fread(buf, 1, sizeof buf, in)) > 0) fwrite(buf, 1, n, out);
    }
    if (in) fclose(in);
    if (out) fclose(out);
}

static void rm(const char *rel) {
    char p[512];
    snprintf(p, sizeof p, "%s/%s", store_, rel);
    remove(p);
}

static void test_symstore(void) {
    strcpy(store_, "/tmp/etw-symstore-XXXXXX");
    ETW_CHECK(mkdtemp(store_) != NULL);
    mkdirs("CppCon.pdb");
    mkdirs("CppCon.pdb/12DC0A4FBD7D4F2AA9BE263BACAEB4675");
    copy_to("CppCon.pdb/12DC0A4FBD7D4F2AA9BE263BACAEB4675/CppCon.pdb");
    etw_pdb *p = NULL;
    ETW_CHECK_INT(etw_pdb_open_file(&p, CPPCON, NULL), ETW_OK);
    etw_guid g;
    uint32_t age;
    etw_pdb_identity(p, &g, &age);
    etw_pdb_free(p);

    char want[512], path[512], spec[512];
    snprintf(want, sizeof want, "%s/CppCon.pdb/12DC0A4FBD7D4F2AA9BE263BACAEB4675/CppCon.pdb", store_);
    ETW_CHECK_INT(etw_symstore_find(store_, "CppCon.pdb", &g, age, path, sizeof path), ETW_OK);
    ETW_CHECK_STR(path, want);
    /* a path as an image's RSDS record holds it */
    ETW_CHECK_INT(etw_symstore_find(store_, "C:\\PerfViewTestData\\CppCon\\Release\\CppCon.pdb", &g, age, path,
                                    sizeof path),
                  ETW_OK);
    ETW_CHECK_STR(path, want);
    snprintf(spec, sizeof spec, "srv*%s*https://msdl.microsoft.com/download/symbols", store_);
    ETW_CHECK_INT(etw_symstore_find(spec, "CppCon.pdb", &g, age, path, sizeof path), ETW_OK);
    ETW_CHECK_STR(path, want);
    snprintf(spec, sizeof spec, "SRV*%s", store_);
    ETW_CHECK_INT(etw_symstore_find(spec, "CppCon.pdb", &g, age, path, sizeof path), ETW_OK);
    snprintf(spec, sizeof spec, "cache*%s", store_);
    ETW_CHECK_INT(etw_symstore_find(spec, "CppCon.pdb", &g, age, path, sizeof path), ETW_OK);
    snprintf(spec, sizeof spec, "/nonexistent;srv**https://msdl.microsoft.com/download/symbols;%s/", store_);
    ETW_CHECK_INT(etw_symstore_find(spec, "CppCon.pdb", &g, age, path, sizeof path), ETW_OK);
    ETW_CHECK(strstr(path, "12DC0A4FBD7D4F2AA9BE263BACAEB4675/CppCon.pdb") != NULL);
    /* wrong age, wrong GUID, another name, a URL only: not found */
    ETW_CHECK_INT(etw_symstore_find(store_, "CppCon.pdb", &g, age + 1, path, sizeof path), ETW_E_NOT_FOUND);
    ETW_CHECK_STR(path, "");
    etw_guid other = g;
    other.data4[7] ^= 1;
    ETW_CHECK_INT(etw_symstore_find(store_, "CppCon.pdb", &other, age, path, sizeof path), ETW_E_NOT_FOUND);
    ETW_CHECK_INT(etw_symstore_find(store_, "Other.pdb", &g, age, path, sizeof path), ETW_E_NOT_FOUND);
    ETW_CHECK_INT(etw_symstore_find("srv*https://msdl.microsoft.com/download/symbols", "CppCon.pdb", &g, age,
                                    path, sizeof path),
                  ETW_E_NOT_FOUND);
    ETW_CHECK_INT(etw_symstore_find(store_, "CppCon.pdb", &g, age, path, 10), ETW_E_SMALL_BUFFER);
    ETW_CHECK_INT(etw_symstore_find(NULL, "CppCon.pdb", &g, age, path, sizeof path), ETW_E_INVALID_ARG);

    /* a folder where the file should be is not a match */
    mkdirs("Dir.pdb");
    mkdirs("Dir.pdb/12DC0A4FBD7D4F2AA9BE263BACAEB4675");
    mkdirs("Dir.pdb/12DC0A4FBD7D4F2AA9BE263BACAEB4675/Dir.pdb");
    ETW_CHECK_INT(etw_symstore_find(store_, "Dir.pdb", &g, age, path, sizeof path), ETW_E_NOT_FOUND);
    rm("Dir.pdb/12DC0A4FBD7D4F2AA9BE263BACAEB4675/Dir.pdb");
    rm("Dir.pdb/12DC0A4FBD7D4F2AA9BE263BACAEB4675");
    rm("Dir.pdb");

    /* a store that spells the name in lower case */
    mkdirs("cppcon.pdb");
    mkdirs("cppcon.pdb/12DC0A4FBD7D4F2AA9BE263BACAEB4675");
    copy_to("cppcon.pdb/12DC0A4FBD7D4F2AA9BE263BACAEB4675/cppcon.pdb");
    rm("CppCon.pdb/12DC0A4FBD7D4F2AA9BE263BACAEB4675/CppCon.pdb");
    ETW_CHECK_INT(etw_symstore_find(store_, "CppCon.pdb", &g, age, path, sizeof path), ETW_OK);
    ETW_CHECK(strstr(path, "/cppcon.pdb/12DC0A4FBD7D4F2AA9BE263BACAEB4675/cppcon.pdb") != NULL);
    rm("cppcon.pdb/12DC0A4FBD7D4F2AA9BE263BACAEB4675/cppcon.pdb");
    rm("cppcon.pdb/12DC0A4FBD7D4F2AA9BE263BACAEB4675");
    rm("cppcon.pdb");
    ETW_CHECK_INT(etw_symstore_find(store_, "CppCon.pdb", &g, age, path, sizeof path), ETW_E_NOT_FOUND);

    /* a flat folder: the file's own GUID and age decide */
    char flat[128];
    snprintf(flat, sizeof flat, "%s/flat", store_);
    mkdirs("flat");
    copy_to("flat/CppCon.pdb");
    ETW_CHECK_INT(etw_symstore_find(flat, "CppCon.pdb", &g, age, path, sizeof path), ETW_OK);
    snprintf(want, sizeof want, "%s/CppCon.pdb", flat);
    ETW_CHECK_STR(path, want);
    ETW_CHECK_INT(etw_symstore_find(flat, "CppCon.pdb", &g, age + 1, path, sizeof path), ETW_E_NOT_FOUND);
    ETW_CHECK_INT(etw_symstore_find(flat, "CppCon.pdb", &other, age, path, sizeof path), ETW_E_NOT_FOUND);

    rm("flat/CppCon.pdb");
    rm("flat");
    rm("CppCon.pdb/12DC0A4FBD7D4F2AA9BE263BACAEB4675");
    rm("CppCon.pdb");
    ETW_CHECK_INT(remove(store_), 0); /* everything made was removed */
}

static int write_seeds(const char *dir) {
    pdbimg *im = malloc(sizeof *im);
    int rc = 0;
    for (int v = 0; v < 3; v++) {
        build(im, v == 1, v == 2);
        char p[512];
        snprintf(p, sizeof p, "%s/built-%s.pdb", dir, v == 0 ? "plain" : v == 1 ? "omap" : "two-modules");
        FILE *f = fopen(p, "wb");
        if (!f || fwrite(im->f, 1, im->len, f) != im->len) rc = 1;
        if (f) fclose(f);
    }
    free(im);
    return rc;
}

int main(int argc, char **argv) {
    if (argc == 3 && strcmp(argv[1], "--write-seeds") == 0) return write_seeds(argv[2]);
    ETW_RUN(test_cppcon);
    ETW_RUN(test_built);
    ETW_RUN(test_hostile_msf);
    ETW_RUN(test_hostile_streams);
    ETW_RUN(test_annotations);
    ETW_RUN(test_allocator);
    ETW_RUN(test_symstore);
    return ETW_TEST_DONE();
}
