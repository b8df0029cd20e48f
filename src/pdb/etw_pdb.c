/* etw_pdb.c - function names from a PDB's streams (etwdecode/etw_pdb.h).
 *
 * Layouts (LLVM's llvm.org/docs/PDB/: PdbStream, DbiStream, PublicStream,
 * ModiStream, CodeViewSymbols; microsoft-pdb's include/cvinfo.h):
 *
 *   info stream (1): u32 version, u32 signature, u32 age, GUID (16 bytes)
 *   DBI stream (3), a 64-byte header: i32 version signature (-1), u32
 *     version, u32 age, u16 global symbol stream, u16 build, u16 public
 *     stream, u16 dll version, u16 symbol record stream, u16 rebuild, then
 *     i32 sizes of: module info, section contributions, section map, file
 *     info, type server map; u32 MFC type server index; i32 sizes of the
 *     optional debug header and the EC substream; u16 flags, u16 machine,
 *     u32 padding. The substreams follow in the order: module info, section
 *     contributions, section map, file info, type server map, EC, optional
 *     debug header.
 *   module info entry: u32, a 28-byte section contribution, u16 flags, u16
 *     symbol stream, u32 symbol bytes (with the 4-byte signature), u32 C11
 *     lines bytes, u32 C13 lines bytes, u16 file count, 2 pad, u32, u32, u32,
 *     then the module and object names (NUL-terminated), padded to 4 bytes.
 *   optional debug header: u16 stream numbers; [4] OMAP from source, [5]
 *     section headers, [10] original section headers (0xFFFF: none).
 *   symbol record: u16 length (of what follows), u16 kind, data.
 *     S_PUB32 (0x110E): u32 flags, u32 offset, u16 section, name.
 *     PROCSYM32 (S_LPROC32 0x110F, S_GPROC32 0x1110, S_LPROC32_ID 0x1146,
 *     S_GPROC32_ID 0x1147, S_LPROC32_DPC 0x1155, S_LPROC32_DPC_ID 0x1156):
 *     u32 parent, u32 end, u32 next, u32 code size, u32 debug start, u32
 *     debug end, u32 type, u32 offset, u16 section, u8 flags, name.
 *
 * A section:offset becomes an RVA through the section headers (section i is
 * entry i-1; RVA = its VirtualAddress + offset). A PDB whose image was
 * rearranged after linking (OMAP, Windows' own binaries of the 2000s) places
 * symbols in the original sections and maps their RVAs through the OMAP
 * from-source table: the RVA is the entry's target plus the distance from
 * the last entry at or below it; a target of 0 means the code was dropped.
 */
#include "etw_pdb_internal.h"

#include <stdlib.h>
#include <string.h>

#include "../common/etw_alloc.h"
#include "../common/etw_bytes.h"
#include "../etl/etw_file.h"
#include "etw_msf.h"

#define STREAM_INFO 1u
#define STREAM_DBI 3u
#define NO_STREAM 0xFFFFu
#define DBI_HEADER_SIZE 64u
#define MODI_FIXED 64u
#define SECTION_HEADER_SIZE 40u

#define S_PUB32 0x110Eu
#define S_LPROC32 0x110Fu
#define S_GPROC32 0x1110u
#define S_LPROC32_ID 0x1146u
#define S_GPROC32_ID 0x1147u
#define S_LPROC32_DPC 0x1155u
#define S_LPROC32_DPC_ID 0x1156u

#define NONE 0xFFFFFFFFu

typedef struct sym {
    uint32_t name_off; /* into names */
    uint32_t name_len;
    uint32_t rva;
    uint32_t size;
    uint32_t prev_proc; /* the last procedure at or before this index, NONE */
    uint32_t prev_pub;  /* the last public at or before this index, NONE */
    uint8_t kind;
} sym;

typedef struct span {
    uint32_t va;
    uint32_t size;
} span;

typedef struct omap_entry {
    uint32_t from;
    uint32_t to;
} omap_entry;

struct etw_pdb {
    etw_allocator al;
    etw_guid guid;
    uint32_t info_age;
    uint32_t dbi_age;
    int has_dbi;
    sym *syms;
    size_t nsyms;
    size_t cap;
    char *names;
    size_t names_len;
    size_t names_cap;
    span *sections; /* the image's sections, sorted by va (lookup) */
    uint32_t nsections;
};

/* What building the symbol table needs and then drops. */
typedef struct build {
    etw_pdb *p;
    const etw_msf *msf;
    span *place;      /* sections symbols are placed in (original ones under OMAP) */
    uint32_t nplace;
    omap_entry *omap; /* sorted by from; NULL: none */
    size_t nomap;
    const char **why;
} build;

static etw_status fail(const char **why, const char *text, etw_status st) {
    if (why && !*why) *why = text;
    return st;
}

/* ---- the name pool and the symbol array ---- */

static int grow(const etw_allocator *al, void **buf, size_t *cap, size_t need, size_t elem) {
    if (need <= *cap) return 1;
    size_t n = *cap ? *cap : 64;
    while (n < need) {
        if (n > ((size_t)-1 / 2) / elem) return 0;
        n *= 2;
    }
    void *nb = etw_alloc(al, n * elem);
    if (!nb) return 0;
    if (*buf) memcpy(nb, *buf, *cap * elem);
    etw_free(al, *buf);
    *buf = nb;
    *cap = n;
    return 1;
}

/* Length of the valid UTF-8 sequence at s[0..n), 0 when it is not one. */
static size_t utf8_seq(const uint8_t *s, size_t n) {
    uint8_t c = s[0];
    if (c < 0x80) return 1;
    size_t len;
    uint8_t lo = 0x80, hi = 0xBF;
    if (c >= 0xC2 && c <= 0xDF)
        len = 2;
    else if (c >= 0xE0 && c <= 0xEF) {
        len = 3;
        if (c == 0xE0) lo = 0xA0;
        if (c == 0xED) hi = 0x9F; /* no surrogates */
    } else if (c >= 0xF0 && c <= 0xF4) {
        len = 4;
        if (c == 0xF0) lo = 0x90;
        if (c == 0xF4) hi = 0x8F;
    } else
        return 0;
    if (len > n) return 0;
    if (s[1] < lo || s[1] > hi) return 0;
    for (size_t i = 2; i < len; i++)
        if (s[i] < 0x80 || s[i] > 0xBF) return 0;
    return len;
}

static etw_status add_symbol(build *b, const uint8_t *name, size_t max, uint32_t rva, uint32_t size,
                             uint8_t kind) {
    etw_pdb *p = b->p;
    size_t len = 0;
    while (len < max && name[len]) len++;
    if (p->nsyms >= ETW_PDB_MAX_SYMBOLS) return fail(b->why, "more symbols than ETW_PDB_MAX_SYMBOLS", ETW_E_LIMIT);
    if (p->names_len + len + 1 > 0xFFFFFFFFu) return fail(b->why, "symbol names past 4 GiB", ETW_E_LIMIT);
    if (!grow(&p->al, (void **)&p->syms, &p->cap, p->nsyms + 1, sizeof(sym)) ||
        !grow(&p->al, (void **)&p->names, &p->names_cap, p->names_len + len + 1, 1))
        return ETW_E_NOMEM;
    char *dst = p->names + p->names_len;
    for (size_t i = 0; i < len;) {
        size_t k = utf8_seq(name + i, len - i);
        if (k == 0) {
            dst[i++] = '?';
        } else {
            memcpy(dst + i, name + i, k);
            i += k;
        }
    }
    dst[len] = 0;
    sym *s = &p->syms[p->nsyms++];
    s->name_off = (uint32_t)p->names_len;
    s->name_len = (uint32_t)len;
    s->rva = rva;
    s->size = size;
    s->kind = kind;
    s->prev_proc = s->prev_pub = NONE;
    p->names_len += len + 1;
    return ETW_OK;
}

/* section:offset -> RVA; 0 when it has none (absolute, unknown section,
 * past 4 GiB, dropped by OMAP). */
static int place(const build *b, uint16_t seg, uint32_t off, uint32_t *rva) {
    if (seg == 0 || seg > b->nplace) return 0;
    uint64_t r = (uint64_t)b->place[seg - 1].va + off;
    if (r > 0xFFFFFFFFu) return 0;
    if (b->omap) {
        size_t lo = 0, hi = b->nomap; /* first entry with from > r */
        while (lo < hi) {
            size_t mid = lo + (hi - lo) / 2;
            if (b->omap[mid].from <= r)
                lo = mid + 1;
            else
                hi = mid;
        }
        if (lo == 0) return 0;
        const omap_entry *e = &b->omap[lo - 1];
        if (e->to == 0) return 0;
        r = (uint64_t)e->to + (r - e->from);
        if (r > 0xFFFFFFFFu) return 0;
    }
    *rva = (uint32_t)r;
    return 1;
}

/* ---- symbol records ---- */

static int is_proc(uint16_t kind) {
    return kind == S_LPROC32 || kind == S_GPROC32 || kind == S_LPROC32_ID || kind == S_GPROC32_ID ||
           kind == S_LPROC32_DPC || kind == S_LPROC32_DPC_ID;
}

/* Walk the records of data[start, len): publics (want_pub) or procedures. */
static etw_status walk_records(build *b, const uint8_t *data, size_t len, size_t start, int want_pub) {
    size_t pos = start;
    while (pos < len) {
        if (len - pos < 4) return fail(b->why, "symbol record header runs past its stream", ETW_E_CORRUPT);
        uint16_t reclen = etw_le16(data + pos);
        uint16_t kind = etw_le16(data + pos + 2);
        if (reclen < 2) return fail(b->why, "symbol record shorter than its kind", ETW_E_CORRUPT);
        if (reclen > len - pos - 2) return fail(b->why, "symbol record runs past its stream", ETW_E_CORRUPT);
        const uint8_t *body = data + pos + 4;
        size_t blen = (size_t)reclen - 2;
        pos += 2 + (size_t)reclen;
        uint32_t rva;
        if (want_pub && kind == S_PUB32) {
            if (blen < 10) return fail(b->why, "S_PUB32 record too short", ETW_E_CORRUPT);
            if (!place(b, etw_le16(body + 8), etw_le32(body + 4), &rva)) continue;
            etw_status st = add_symbol(b, body + 10, blen - 10, rva, 0, ETW_PDB_PUBLIC);
            if (st != ETW_OK) return st;
        } else if (!want_pub && is_proc(kind)) {
            if (blen < 35) return fail(b->why, "procedure record too short", ETW_E_CORRUPT);
            if (!place(b, etw_le16(body + 32), etw_le32(body + 28), &rva)) continue;
            etw_status st = add_symbol(b, body + 35, blen - 35, rva, etw_le32(body + 12), ETW_PDB_PROCEDURE);
            if (st != ETW_OK) return st;
        }
    }
    return ETW_OK;
}

/* ---- section headers and OMAP ---- */

static etw_status read_sections(build *b, uint32_t stream, span **out, uint32_t *n) {
    *out = NULL;
    *n = 0;
    if (stream == NO_STREAM) return ETW_OK;
    uint8_t *data;
    size_t len;
    etw_status st = etw_msf_read_stream(b->msf, stream, (size_t)-1, &data, &len);
    if (st == ETW_E_NOT_FOUND) return fail(b->why, "section header stream out of range", ETW_E_CORRUPT);
    if (st != ETW_OK) return fail(b->why, "cannot read the section header stream", st);
    size_t count = len / SECTION_HEADER_SIZE;
    if (count > 0xFFFF) count = 0xFFFF; /* sections are numbered with 16 bits */
    span *s = etw_calloc(&b->p->al, count ? count : 1, sizeof *s);
    if (!s) {
        etw_free(&b->p->al, data);
        return ETW_E_NOMEM;
    }
    for (size_t i = 0; i < count; i++) {
        const uint8_t *h = data + i * SECTION_HEADER_SIZE;
        s[i].size = etw_le32(h + 8);
        s[i].va = etw_le32(h + 12);
    }
    etw_free(&b->p->al, data);
    *out = s;
    *n = (uint32_t)count;
    return ETW_OK;
}

static int cmp_omap(const void *x, const void *y) {
    const omap_entry *a = x, *c = y;
    return a->from < c->from ? -1 : a->from > c->from;
}
static int cmp_span(const void *x, const void *y) {
    const span *a = x, *c = y;
    return a->va < c->va ? -1 : a->va > c->va;
}

static etw_status read_omap(build *b, uint32_t stream) {
    if (stream == NO_STREAM) return ETW_OK;
    uint8_t *data;
    size_t len;
    etw_status st = etw_msf_read_stream(b->msf, stream, (size_t)-1, &data, &len);
    if (st == ETW_E_NOT_FOUND) return fail(b->why, "OMAP stream out of range", ETW_E_CORRUPT);
    if (st != ETW_OK) return fail(b->why, "cannot read the OMAP stream", st);
    size_t count = len / 8;
    if (count == 0) {
        etw_free(&b->p->al, data);
        return ETW_OK;
    }
    b->omap = etw_alloc(&b->p->al, count * sizeof *b->omap);
    if (!b->omap) {
        etw_free(&b->p->al, data);
        return ETW_E_NOMEM;
    }
    for (size_t i = 0; i < count; i++) {
        b->omap[i].from = etw_le32(data + i * 8);
        b->omap[i].to = etw_le32(data + i * 8 + 4);
    }
    etw_free(&b->p->al, data);
    b->nomap = count;
    qsort(b->omap, count, sizeof *b->omap, cmp_omap);
    return ETW_OK;
}

/* ---- the DBI stream ---- */

etw_status etw_pdb_walk_modules(const etw_msf *m, const etw_allocator *al, const uint8_t *mi, size_t milen,
                                const char **why, etw_pdb_module_fn fn, void *ctx) {
    uint8_t *seen = etw_calloc(al, (size_t)m->num_streams / 8 + 1, 1);
    if (!seen) return ETW_E_NOMEM;
    etw_status st = ETW_OK;
    size_t pos = 0;
    uint32_t index = 0;
    for (; pos < milen; index++) {
        if (milen - pos < MODI_FIXED) {
            st = fail(why, "module info entry runs past its substream", ETW_E_CORRUPT);
            break;
        }
        const uint8_t *e = mi + pos;
        uint16_t stream = etw_le16(e + 34);
        uint32_t sym_bytes = etw_le32(e + 36);
        /* the module and object names, then padding to 4 */
        size_t q = pos + MODI_FIXED;
        for (int k = 0; k < 2 && st == ETW_OK; k++) {
            const uint8_t *z = q < milen ? memchr(mi + q, 0, milen - q) : NULL;
            if (!z)
                st = fail(why, "module name runs past the module info substream", ETW_E_CORRUPT);
            else
                q = (size_t)(z - mi) + 1;
        }
        if (st != ETW_OK) break;
        pos = q + ((4 - (q & 3)) & 3);
        if (stream == NO_STREAM || sym_bytes <= 4) continue;
        if (stream >= m->num_streams) {
            st = fail(why, "module symbol stream out of range", ETW_E_CORRUPT);
            break;
        }
        if (seen[stream >> 3] & (1u << (stream & 7))) {
            st = fail(why, "two modules name one symbol stream", ETW_E_CORRUPT);
            break;
        }
        seen[stream >> 3] |= (uint8_t)(1u << (stream & 7));
        if (sym_bytes > etw_msf_stream_size(m, stream)) {
            st = fail(why, "module symbol bytes larger than its stream", ETW_E_CORRUPT);
            break;
        }
        uint8_t *data;
        size_t len;
        st = etw_msf_read_stream(m, stream, sym_bytes, &data, &len);
        if (st != ETW_OK) {
            fail(why, "cannot read a module symbol stream", st);
            break;
        }
        st = fn(ctx, index, data, len);
        etw_free(al, data);
        if (st != ETW_OK) break;
    }
    etw_free(al, seen);
    return st;
}

static etw_status module_procedures(void *ctx, uint32_t index, const uint8_t *data, size_t len) {
    (void)index;
    return walk_records(ctx, data, len, 4, 0);
}

static etw_status read_modules(build *b, const uint8_t *mi, size_t milen) {
    return etw_pdb_walk_modules(b->msf, &b->p->al, mi, milen, b->why, module_procedures, b);
}

static etw_status read_dbi(build *b, int identity_only) {
    etw_pdb *p = b->p;
    const etw_msf *m = b->msf;
    uint32_t dbi_size = etw_msf_stream_size(m, STREAM_DBI);
    if (dbi_size == 0) return ETW_OK; /* a PDB of types only */
    if (dbi_size < DBI_HEADER_SIZE) return fail(b->why, "DBI stream shorter than its header", ETW_E_CORRUPT);
    uint8_t *dbi;
    size_t len;
    etw_status st = etw_msf_read_stream(m, STREAM_DBI, identity_only ? DBI_HEADER_SIZE : (size_t)-1, &dbi, &len);
    if (st != ETW_OK) return fail(b->why, "cannot read the DBI stream", st);
    if (etw_le32(dbi) != 0xFFFFFFFFu) {
        etw_free(&p->al, dbi);
        return fail(b->why, "DBI stream of a format before VC 4.1", ETW_E_UNSUPPORTED);
    }
    p->has_dbi = 1;
    p->dbi_age = etw_le32(dbi + 8);
    if (identity_only) {
        etw_free(&p->al, dbi);
        return ETW_OK;
    }
    uint16_t symrec = etw_le16(dbi + 20);
    /* substream sizes, in header order */
    uint32_t modi = etw_le32(dbi + 24), secc = etw_le32(dbi + 28), secm = etw_le32(dbi + 32);
    uint32_t file = etw_le32(dbi + 36), tsm = etw_le32(dbi + 40), dbgh = etw_le32(dbi + 48);
    uint32_t ec = etw_le32(dbi + 52);
    uint64_t sum = (uint64_t)modi + secc + secm + file + tsm + ec + dbgh;
    if (modi > 0x7FFFFFFFu || secc > 0x7FFFFFFFu || secm > 0x7FFFFFFFu || file > 0x7FFFFFFFu ||
        tsm > 0x7FFFFFFFu || dbgh > 0x7FFFFFFFu || ec > 0x7FFFFFFFu || sum > len - DBI_HEADER_SIZE) {
        etw_free(&p->al, dbi);
        return fail(b->why, "DBI substream sizes larger than the DBI stream", ETW_E_CORRUPT);
    }
    const uint8_t *mi = dbi + DBI_HEADER_SIZE;
    const uint8_t *dh = mi + (size_t)modi + secc + secm + file + tsm + ec;
    uint32_t sec_stream = dbgh >= 12 ? etw_le16(dh + 10) : NO_STREAM;
    uint32_t omap_stream = dbgh >= 10 ? etw_le16(dh + 8) : NO_STREAM;
    uint32_t orig_stream = dbgh >= 22 ? etw_le16(dh + 20) : NO_STREAM;

    st = read_sections(b, sec_stream, &p->sections, &p->nsections);
    if (st == ETW_OK && omap_stream != NO_STREAM && orig_stream != NO_STREAM) {
        st = read_omap(b, omap_stream);
        if (st == ETW_OK && b->omap) st = read_sections(b, orig_stream, &b->place, &b->nplace);
        if (st == ETW_OK && b->nplace == 0) { /* no original sections: OMAP cannot apply */
            etw_free(&p->al, b->omap);
            etw_free(&p->al, b->place);
            b->omap = NULL;
            b->place = NULL;
            b->nomap = 0;
        }
    }
    if (st == ETW_OK && !b->place) {
        if (p->nsections) {
            b->place = etw_alloc(&p->al, (size_t)p->nsections * sizeof *b->place);
            if (!b->place)
                st = ETW_E_NOMEM;
            else
                memcpy(b->place, p->sections, (size_t)p->nsections * sizeof *b->place);
        }
        b->nplace = p->nsections;
    }
    if (st == ETW_OK && p->nsections) qsort(p->sections, p->nsections, sizeof *p->sections, cmp_span);
    /* without section headers nothing can be placed: no symbols */
    if (st == ETW_OK && b->nplace && symrec != NO_STREAM) {
        if (symrec >= m->num_streams) {
            st = fail(b->why, "symbol record stream out of range", ETW_E_CORRUPT);
        } else {
            uint8_t *rec;
            size_t rlen;
            st = etw_msf_read_stream(m, symrec, (size_t)-1, &rec, &rlen);
            if (st != ETW_OK)
                fail(b->why, "cannot read the symbol record stream", st);
            else {
                st = walk_records(b, rec, rlen, 0, 1);
                etw_free(&p->al, rec);
            }
        }
    }
    if (st == ETW_OK && b->nplace) st = read_modules(b, mi, modi);
    etw_free(&p->al, dbi);
    return st;
}

/* ---- sorting and the lookup links ---- */

static int sym_less(const etw_pdb *p, const sym *a, const sym *c) {
    if (a->rva != c->rva) return a->rva < c->rva;
    if (a->kind != c->kind) return a->kind > c->kind; /* procedures first */
    size_t n = a->name_len < c->name_len ? a->name_len : c->name_len;
    int r = memcmp(p->names + a->name_off, p->names + c->name_off, n);
    if (r != 0) return r < 0;
    if (a->name_len != c->name_len) return a->name_len < c->name_len;
    return a->size < c->size;
}

static void sift_down(const etw_pdb *p, sym *s, size_t i, size_t n) {
    for (;;) {
        size_t big = i, l = 2 * i + 1, r = l + 1;
        if (l < n && sym_less(p, &s[big], &s[l])) big = l;
        if (r < n && sym_less(p, &s[big], &s[r])) big = r;
        if (big == i) return;
        sym t = s[i];
        s[i] = s[big];
        s[big] = t;
        i = big;
    }
}

/* Heap sort: in place, O(n log n) whatever the input, with the name pool at
 * hand (qsort's comparator has no context). */
static void sort_symbols(etw_pdb *p) {
    size_t n = p->nsyms;
    sym *s = p->syms;
    for (size_t i = n / 2; i-- > 0;) sift_down(p, s, i, n);
    for (size_t end = n; end > 1; end--) {
        sym t = s[0];
        s[0] = s[end - 1];
        s[end - 1] = t;
        sift_down(p, s, 0, end - 1);
    }
    uint32_t proc = NONE, pub = NONE;
    for (size_t i = 0; i < n; i++) {
        if (s[i].kind == ETW_PDB_PROCEDURE)
            proc = (uint32_t)i;
        else
            pub = (uint32_t)i;
        s[i].prev_proc = proc;
        s[i].prev_pub = pub;
    }
}

/* ---- open ---- */

void etw_pdb_free(etw_pdb *p) {
    if (!p) return;
    etw_allocator al = p->al;
    etw_free(&al, p->syms);
    etw_free(&al, p->names);
    etw_free(&al, p->sections);
    etw_free(&al, p);
}

etw_status etw_pdb_open_input(etw_pdb **out, const etw_input *in, const etw_pdb_options *opt, int identity_only) {
    const char **why = opt ? opt->reason : NULL;
    if (why) *why = NULL;
    if (!out || !in) return ETW_E_INVALID_ARG;
    *out = NULL;
    etw_allocator al = etw_allocator_resolve(opt ? opt->allocator : NULL);
    etw_pdb *p = etw_calloc(&al, 1, sizeof *p);
    if (!p) return ETW_E_NOMEM;
    p->al = al;
    etw_msf msf;
    etw_status st = etw_msf_open(&msf, &al, in, why);
    if (st != ETW_OK) {
        etw_free(&al, p);
        return st;
    }
    build b;
    memset(&b, 0, sizeof b);
    b.p = p;
    b.msf = &msf;
    b.why = why;
    uint8_t *info;
    size_t ilen;
    st = etw_msf_read_stream(&msf, STREAM_INFO, 28, &info, &ilen);
    if (st == ETW_E_NOT_FOUND || (st == ETW_OK && ilen < 28)) st = fail(why, "PDB info stream missing or short", ETW_E_CORRUPT);
    if (st == ETW_OK) {
        p->info_age = etw_le32(info + 8);
        p->guid = etw_guid_at(info + 12);
    } else {
        fail(why, "cannot read the PDB info stream", st);
    }
    if (info) etw_free(&al, info);
    if (st == ETW_OK) st = read_dbi(&b, identity_only);
    if (st == ETW_OK) sort_symbols(p);
    etw_free(&al, b.place);
    etw_free(&al, b.omap);
    etw_msf_close(&msf);
    if (st != ETW_OK) {
        etw_pdb_free(p);
        return st;
    }
    *out = p;
    return ETW_OK;
}

long long etw_pdb_mem_read_at(void *ctx, uint64_t off, void *buf, size_t n) {
    const mem_src *m = ctx;
    if (off >= m->size) return 0;
    if (n > m->size - off) n = (size_t)(m->size - off);
    memcpy(buf, m->data + off, n);
    return (long long)n;
}

etw_status etw_pdb_open_mem(etw_pdb **out, const uint8_t *data, size_t size, const etw_pdb_options *opt) {
    if (opt && opt->reason) *opt->reason = NULL;
    if (!out || (!data && size)) return ETW_E_INVALID_ARG;
    mem_src src = {data, size};
    etw_input in;
    in.read_at = etw_pdb_mem_read_at;
    in.size = size;
    in.ctx = &src;
    return etw_pdb_open_input(out, &in, opt, 0);
}

static etw_status open_path(etw_pdb **out, const char *path, const etw_pdb_options *opt, int identity_only) {
    if (opt && opt->reason) *opt->reason = NULL;
    if (!out || !path) return ETW_E_INVALID_ARG;
    *out = NULL;
    etw_allocator al = etw_allocator_resolve(opt ? opt->allocator : NULL);
    etw_file *f;
    etw_input in;
    etw_status st = etw_file_open(&al, path, 0, &f, &in);
    if (st != ETW_OK) {
        if (opt && opt->reason) *opt->reason = "cannot open the file";
        return st;
    }
    st = etw_pdb_open_input(out, &in, opt, identity_only);
    etw_file_close(&al, f);
    return st;
}

etw_status etw_pdb_open_file(etw_pdb **out, const char *path, const etw_pdb_options *opt) {
    return open_path(out, path, opt, 0);
}

etw_status etw_pdb_open_identity(etw_pdb **out, const char *path, const etw_pdb_options *opt) {
    return open_path(out, path, opt, 1);
}

/* ---- queries ---- */

void etw_pdb_identity(const etw_pdb *p, etw_guid *guid, uint32_t *age) {
    if (guid) {
        if (p)
            *guid = p->guid;
        else
            memset(guid, 0, sizeof *guid);
    }
    if (age) *age = !p ? 0 : p->has_dbi ? p->dbi_age : p->info_age;
}

size_t etw_pdb_symbol_count(const etw_pdb *p) { return p ? p->nsyms : 0; }

static void fill(const etw_pdb *p, const sym *s, etw_pdb_symbol *out) {
    out->name = p->names + s->name_off;
    out->name_len = s->name_len;
    out->rva = s->rva;
    out->size = s->size;
    out->kind = (etw_pdb_symbol_kind)s->kind;
}

etw_status etw_pdb_symbol_at(const etw_pdb *p, size_t i, etw_pdb_symbol *out) {
    if (!p || !out) return ETW_E_INVALID_ARG;
    if (i >= p->nsyms) return ETW_E_NOT_FOUND;
    fill(p, &p->syms[i], out);
    return ETW_OK;
}

/* The section containing rva: its end (exclusive, 64-bit), 0 when none. */
static uint64_t section_end(const etw_pdb *p, uint32_t rva) {
    size_t lo = 0, hi = p->nsections; /* first section with va > rva */
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (p->sections[mid].va <= rva)
            lo = mid + 1;
        else
            hi = mid;
    }
    /* overlapping sections (hostile): the nearest start below decides */
    if (lo == 0) return 0;
    const span *s = &p->sections[lo - 1];
    uint64_t end = (uint64_t)s->va + s->size;
    return rva < end ? end : 0;
}

etw_status etw_pdb_lookup(const etw_pdb *p, uint32_t rva, etw_pdb_symbol *out, uint32_t *offset) {
    if (!p || !out) return ETW_E_INVALID_ARG;
    size_t lo = 0, hi = p->nsyms; /* first symbol with rva > the one asked */
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (p->syms[mid].rva <= rva)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo == 0) return ETW_E_NOT_FOUND;
    const sym *last = &p->syms[lo - 1];
    if (last->prev_proc != NONE) {
        const sym *s = &p->syms[last->prev_proc];
        if ((uint64_t)rva < (uint64_t)s->rva + s->size) {
            fill(p, s, out);
            if (offset) *offset = rva - s->rva;
            return ETW_OK;
        }
    }
    if (last->prev_pub != NONE) {
        const sym *s = &p->syms[last->prev_pub];
        if (p->nsections) {
            uint64_t end = section_end(p, s->rva);
            if (end && (uint64_t)rva >= end) return ETW_E_NOT_FOUND;
        }
        fill(p, s, out);
        if (offset) *offset = rva - s->rva;
        return ETW_OK;
    }
    return ETW_E_NOT_FOUND;
}
