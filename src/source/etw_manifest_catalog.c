/* etw_manifest_catalog.c - provider GUID -> manifest file, from a scan of
 * the files' bytes (no XML parse), for lazy loading of manifest folders.
 *
 * The scanner walks the document in code units (bytes for UTF-8, 16-bit
 * units for UTF-16 with a BOM, so nothing is converted or copied): at each
 * '<' it skips comments and CDATA sections, reads the element name and, for
 * a local name "provider", its attributes up to the end of the tag, keeping
 * the value of the first one whose local name is "guid". Everything is
 * bounded by the input length; an input that ends inside a construct gives
 * the GUIDs found before it and ETW_E_TRUNCATED.
 *
 * The catalog keeps the files (path, kind, named or found), every GUID each
 * declares (once per file), an open-addressing table GUID -> the winning
 * declaration (the last file's), and a union-find over files linked by a
 * GUID in common, flattened after each add into per-group lists in file
 * order (etw_manifest_catalog.h, internal header).
 */
#define _POSIX_C_SOURCE 200809L

#include "etw_manifest_catalog.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>


#include "../common/etw_alloc.h"
#include "../common/etw_dir.h"
#include "etw_manifest_types.h"
#include "../wevt/etw_pe.h"
#include "../wevt/etw_wevt.h"

/* How deep a directory is searched (as etw_manifest_load_path). */
#define CAT_MAX_DEPTH 16

typedef struct cat_file {
    char *path;
    uint32_t first, n;   /* its GUIDs: decl[first .. first+n) */
    uint32_t group_head; /* first file of its group */
    uint32_t group_next; /* next file of its group, ETW_CATALOG_NONE */
    uint8_t kind;        /* etw_catalog_kind */
    uint8_t named;       /* given directly to add_path */
} cat_file;

struct etw_manifest_catalog {
    etw_allocator al;
    etw_diag_fn on_diag;
    void *diag_ctx;
    cat_file *files;
    uint32_t nfiles, cfiles;
    uint32_t *parent; /* union-find over files (cfiles) */
    etw_guid *decl;   /* every (file, GUID) declaration */
    uint32_t *decl_file;
    uint32_t ndecl, cdecl;
    uint32_t *slots; /* index+1 of the winning declaration; 0 empty */
    uint32_t smask, nprov;
    uint32_t ndup;
    uint64_t problems;
    uint64_t seed;
    unsigned char *buf; /* file bytes while scanning */
    size_t bufcap;
    etw_guid *scan; /* ETW_CATALOG_MAX_FILE_PROVIDERS */
    char msg[1024];
};

/* ---- the scanner ---------------------------------------------------------- */

typedef struct units {
    const unsigned char *p;
    size_t n;  /* code units */
    int width; /* 1: bytes; 2: 16-bit units */
    int big;   /* UTF-16BE */
} units;

/* Unit i as an ASCII character; anything else maps to 0x80. */
static inline unsigned u_at(const units *u, size_t i) {
    unsigned c;
    if (u->width == 1) return u->p[i];
    c = u->big ? (unsigned)u->p[2 * i] << 8 | u->p[2 * i + 1] : (unsigned)u->p[2 * i + 1] << 8 | u->p[2 * i];
    return c < 0x80 ? c : 0x80;
}

static size_t u_find(const units *u, size_t i, unsigned c) {
    if (u->width == 1) {
        if (i >= u->n) return u->n;
        const unsigned char *q = memchr(u->p + i, (int)c, u->n - i);
        return q ? (size_t)(q - u->p) : u->n;
    }
    for (; i < u->n; i++)
        if (u_at(u, i) == c) return i;
    return u->n;
}

/* 1 when the units at i spell s. */
static int u_match(const units *u, size_t i, const char *s) {
    size_t l = strlen(s);
    if (i > u->n || u->n - i < l) return 0;
    for (size_t k = 0; k < l; k++)
        if (u_at(u, i + k) != (unsigned char)s[k]) return 0;
    return 1;
}

/* The first i' >= i where s starts, or n. */
static size_t u_find_str(const units *u, size_t i, const char *s) {
    for (;;) {
        i = u_find(u, i, (unsigned char)s[0]);
        if (i >= u->n || u_match(u, i, s)) return i;
        i++;
    }
}

static int is_ws(unsigned c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n'; }

/* The local name (after the last ':') of units [a, b) equals s. */
static int local_is(const units *u, size_t a, size_t b, const char *s) {
    for (size_t k = a; k < b; k++)
        if (u_at(u, k) == ':') a = k + 1;
    size_t l = strlen(s);
    return b - a == l && u_match(u, a, s);
}

etw_status etw_manifest_scan_providers(const void *data, size_t len, etw_guid *out, size_t max,
                                       size_t *count, size_t *total, size_t *bad) {
    if (count) *count = 0;
    if (total) *total = 0;
    if (bad) *bad = 0;
    if ((!data && len) || !count || (!out && max)) return ETW_E_INVALID_ARG;
    if ((uint64_t)len > ETW_CATALOG_MAX_FILE_BYTES) return ETW_E_LIMIT;
    const unsigned char *b = data;
    units u = {b, len, 1, 0};
    size_t i = 0;
    if (len >= 2 && b[0] == 0xFF && b[1] == 0xFE) {
        u.width = 2;
        u.n = len / 2;
        i = 1;
    } else if (len >= 2 && b[0] == 0xFE && b[1] == 0xFF) {
        u.width = 2;
        u.big = 1;
        u.n = len / 2;
        i = 1;
    } else if (len >= 3 && b[0] == 0xEF && b[1] == 0xBB && b[2] == 0xBF) {
        i = 3;
    }
    size_t stored = 0, found = 0, nbad = 0;
    etw_status st = ETW_OK;
    for (;;) {
        i = u_find(&u, i, '<');
        if (i >= u.n) break;
        i++;
        if (u_match(&u, i, "!--")) {
            size_t e = u_find_str(&u, i + 3, "-->");
            if (e >= u.n) {
                st = ETW_E_TRUNCATED;
                break;
            }
            i = e + 3;
            continue;
        }
        if (u_match(&u, i, "![CDATA[")) {
            size_t e = u_find_str(&u, i + 8, "]]>");
            if (e >= u.n) {
                st = ETW_E_TRUNCATED;
                break;
            }
            i = e + 3;
            continue;
        }
        if (i < u.n && u_at(&u, i) == '/') continue; /* an end tag */
        size_t ns = i;
        while (i < u.n) {
            unsigned c = u_at(&u, i);
            if (is_ws(c) || c == '/' || c == '>' || c == '<') break;
            i++;
        }
        if (i >= u.n) {
            st = ETW_E_TRUNCATED;
            break;
        }
        if (i == ns || !local_is(&u, ns, i, "provider")) continue;
        /* the attributes of a <provider> start tag */
        int have = 0;
        for (;;) {
            while (i < u.n && is_ws(u_at(&u, i))) i++;
            if (i >= u.n) {
                st = ETW_E_TRUNCATED;
                break;
            }
            unsigned c = u_at(&u, i);
            if (c == '>' || c == '/' || c == '<') break;
            size_t as = i;
            while (i < u.n) {
                c = u_at(&u, i);
                if (is_ws(c) || c == '=' || c == '>' || c == '/' || c == '<') break;
                i++;
            }
            size_t ae = i;
            while (i < u.n && is_ws(u_at(&u, i))) i++;
            if (i >= u.n) {
                st = ETW_E_TRUNCATED;
                break;
            }
            if (u_at(&u, i) != '=' || ae == as) break; /* not an attribute: leave the tag */
            i++;
            while (i < u.n && is_ws(u_at(&u, i))) i++;
            if (i >= u.n) {
                st = ETW_E_TRUNCATED;
                break;
            }
            unsigned q = u_at(&u, i);
            if (q != '"' && q != '\'') break;
            size_t vs = ++i;
            size_t ve = u_find(&u, vs, q);
            if (ve >= u.n) {
                st = ETW_E_TRUNCATED;
                break;
            }
            i = ve + 1;
            if (have || !local_is(&u, as, ae, "guid")) continue;
            have = 1;
            char v[64];
            etw_guid g;
            size_t vl = ve - vs;
            int ok = vl < sizeof v;
            for (size_t k = 0; ok && k < vl; k++) {
                unsigned ch = u_at(&u, vs + k);
                if (ch == 0 || ch >= 0x80) ok = 0;
                else v[k] = (char)ch;
            }
            if (ok) {
                v[vl] = 0;
                ok = etw_mf_parse_guid(v, &g);
            }
            if (!ok) {
                nbad++;
                continue;
            }
            found++;
            if (stored < max) out[stored++] = g;
        }
        if (st != ETW_OK) break;
    }
    *count = stored;
    if (total) *total = found;
    if (bad) *bad = nbad;
    return st;
}

/* ---- the catalog ------------------------------------------------------------ */

static void cat_diag(etw_manifest_catalog *c, etw_status st, const char *path, const char *fmt, ...) {
    c->problems++;
    if (!c->on_diag) return;
    int n = snprintf(c->msg, sizeof c->msg, "%s: ", path);
    if (n < 0) n = 0;
    if ((size_t)n < sizeof c->msg) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(c->msg + n, sizeof c->msg - (size_t)n, fmt, ap);
        va_end(ap);
    }
    etw_diag d;
    d.status = st;
    d.file_offset = 0;
    d.message = c->msg;
    c->on_diag(c->diag_ctx, &d);
}

static uint64_t mix(uint64_t x) {
    x ^= x >> 33;
    x *= UINT64_C(0xff51afd7ed558ccd);
    x ^= x >> 33;
    x *= UINT64_C(0xc4ceb9fe1a85ec53);
    x ^= x >> 33;
    return x;
}

static uint32_t ghash(const etw_manifest_catalog *c, const etw_guid *g) {
    uint64_t a = (uint64_t)g->data1 << 32 | (uint64_t)g->data2 << 16 | g->data3;
    uint64_t b;
    memcpy(&b, g->data4, 8);
    return (uint32_t)mix(a ^ mix(b ^ c->seed));
}

/* The slot of g: its declaration index + 1, or the empty slot it goes to. */
static uint32_t *gslot(const etw_manifest_catalog *c, const etw_guid *g) {
    for (uint32_t i = ghash(c, g) & c->smask;; i = (i + 1) & c->smask) {
        uint32_t *s = &c->slots[i];
        if (!*s || etw_guid_equal(&c->decl[*s - 1], g)) return s;
    }
}

static int slots_reserve(etw_manifest_catalog *c, uint32_t more) {
    uint64_t need = ((uint64_t)c->nprov + more) * 2 + 1;
    uint64_t cap = c->slots ? (uint64_t)c->smask + 1 : 0;
    if (need <= cap) return 1;
    uint64_t ncap = 64;
    while (ncap < need) ncap <<= 1;
    uint32_t *ns = etw_calloc(&c->al, (size_t)ncap, sizeof *ns);
    if (!ns) return 0;
    uint32_t *old = c->slots;
    c->slots = ns;
    c->smask = (uint32_t)ncap - 1;
    for (uint64_t i = 0; i < cap; i++)
        if (old[i]) *gslot(c, &c->decl[old[i] - 1]) = old[i];
    etw_free(&c->al, old);
    return 1;
}

static uint32_t uf_find(uint32_t *parent, uint32_t x) {
    uint32_t r = x;
    while (parent[r] != r) r = parent[r];
    while (parent[x] != r) {
        uint32_t n = parent[x];
        parent[x] = r;
        x = n;
    }
    return r;
}

static void uf_union(uint32_t *parent, uint32_t a, uint32_t b) {
    a = uf_find(parent, a);
    b = uf_find(parent, b);
    if (a == b) return;
    if (a < b) parent[b] = a; /* the root is the group's first file */
    else parent[a] = b;
}

etw_status etw_manifest_catalog_new(etw_manifest_catalog **out, const etw_manifest_catalog_options *opt) {
    if (!out) return ETW_E_INVALID_ARG;
    *out = NULL;
    etw_allocator a = etw_allocator_resolve(opt ? opt->allocator : NULL);
    etw_manifest_catalog *c = etw_calloc(&a, 1, sizeof *c);
    if (!c) return ETW_E_NOMEM;
    c->al = a;
    c->on_diag = opt ? opt->on_diag : NULL;
    c->diag_ctx = opt ? opt->diag_ctx : NULL;
    c->seed = mix((uint64_t)(uintptr_t)c ^ UINT64_C(0x636174616c6f6721));
    *out = c;
    return ETW_OK;
}

void etw_manifest_catalog_free(etw_manifest_catalog *c) {
    if (!c) return;
    etw_allocator a = c->al;
    for (uint32_t i = 0; i < c->nfiles; i++) etw_free(&a, c->files[i].path);
    etw_free(&a, c->files);
    etw_free(&a, c->parent);
    etw_free(&a, c->decl);
    etw_free(&a, c->decl_file);
    etw_free(&a, c->slots);
    etw_free(&a, c->buf);
    etw_free(&a, c->scan);
    etw_free(&a, c);
}

static int grow(const etw_allocator *al, void **p, uint32_t *cap, uint32_t need, size_t sz) {
    if (need <= *cap) return 1;
    uint64_t ncap = *cap ? (uint64_t)*cap * 2 : 64;
    while (ncap < need) ncap *= 2;
    if (ncap > ETW_CATALOG_MAX_ENTRIES) ncap = ETW_CATALOG_MAX_ENTRIES;
    if (ncap < need) return 0;
    void *np = etw_calloc(al, (size_t)ncap, sz);
    if (!np) return 0;
    if (*p) memcpy(np, *p, (size_t)*cap * sz);
    etw_free(al, *p);
    *p = np;
    *cap = (uint32_t)ncap;
    return 1;
}

/* Make c->buf hold at least need bytes (contents not kept). */
static etw_status buf_reserve(etw_manifest_catalog *c, size_t need) {
    if (need <= c->bufcap) return ETW_OK;
    size_t ncap = c->bufcap ? c->bufcap : 256 * 1024;
    while (ncap < need) ncap *= 2;
    if ((uint64_t)ncap > ETW_CATALOG_MAX_FILE_BYTES + 1) ncap = (size_t)ETW_CATALOG_MAX_FILE_BYTES + 1;
    if (ncap < need) return ETW_E_LIMIT;
    unsigned char *nb = etw_alloc(&c->al, ncap);
    if (!nb) return ETW_E_NOMEM;
    etw_free(&c->al, c->buf);
    c->buf = nb;
    c->bufcap = ncap;
    return ETW_OK;
}

/* Read path into c->buf: ETW_E_IO (errno kept), ETW_E_LIMIT (over
 * ETW_CATALOG_MAX_FILE_BYTES: refused unread when its size says so),
 * ETW_E_NOMEM. The buffer is sized from the file's size and read into
 * directly; a file that grows while read is read up to the limit and one
 * byte. */
static etw_status read_file(etw_manifest_catalog *c, const char *path, size_t *len) {
    *len = 0;
    FILE *f = fopen(path, "rb");
    if (!f) return ETW_E_IO;
    etw_status st = ETW_OK;
    struct stat sb;
    uint64_t size = 0;
    if (fstat(fileno(f), &sb) == 0 && S_ISREG(sb.st_mode) && sb.st_size > 0) size = (uint64_t)sb.st_size;
    if (size > ETW_CATALOG_MAX_FILE_BYTES) st = ETW_E_LIMIT;
    else st = buf_reserve(c, (size_t)size + 1);
    size_t n = 0;
    while (st == ETW_OK) {
        if (n == c->bufcap) {
            /* grown since fstat: keep what was read */
            unsigned char *old = c->buf;
            size_t oldcap = c->bufcap;
            c->buf = NULL;
            c->bufcap = 0;
            st = buf_reserve(c, oldcap + 1);
            if (st == ETW_OK) memcpy(c->buf, old, n);
            etw_free(&c->al, old);
            if (st != ETW_OK) break;
        }
        size_t r = fread(c->buf + n, 1, c->bufcap - n, f);
        n += r;
        if ((uint64_t)n > ETW_CATALOG_MAX_FILE_BYTES) st = ETW_E_LIMIT;
        else if (r == 0 && ferror(f)) st = ETW_E_IO;
        else if (r == 0 || feof(f)) break;
    }
    int e = errno;
    fclose(f);
    errno = e;
    *len = n;
    return st;
}

typedef struct pe_sink {
    etw_guid *out;
    size_t max, n, total;
} pe_sink;

static void pe_guid(void *ctx, const etw_guid *g) {
    pe_sink *k = ctx;
    if (k->n < k->max) k->out[k->n++] = *g;
    k->total++;
}

/* The provider GUIDs of a PE image's WEVT_TEMPLATE, or of a bare CRIM blob,
 * in buf[0..len). 0 GUIDs (and a note unless the file was named) when it
 * has none. */
static void pe_providers(etw_manifest_catalog *c, const char *path, size_t len, int named, size_t *n,
                         size_t *total) {
    pe_sink k = {c->scan, ETW_CATALOG_MAX_FILE_PROVIDERS, 0, 0};
    const uint8_t *b = c->buf;
    size_t bl = len;
    const char *why = NULL;
    etw_status st = ETW_OK;
    if (etw_wevt_is_pe(b, len)) {
        etw_pe pe;
        etw_pe_resource r;
        st = etw_pe_open(&pe, b, len, &why);
        if (st == ETW_OK) st = etw_pe_find_resource(&pe, "WEVT_TEMPLATE", 0, 0x0409, &r, &why);
        if (st == ETW_OK) {
            b = r.data;
            bl = r.len;
        }
    }
    if (st == ETW_OK && etw_wevt_blob_providers(b, bl, pe_guid, &k) != ETW_OK) {
        st = ETW_E_CORRUPT;
        why = "its WEVT_TEMPLATE is not a CRIM blob";
    }
    if (st == ETW_E_NOT_FOUND && !named)
        cat_diag(c, ETW_OK, path, "no provider loaded: no WEVT_TEMPLATE resource in this PE file");
    else if (st != ETW_OK && st != ETW_E_NOT_FOUND && !named) /* a named file's load says it */
        cat_diag(c, ETW_E_CORRUPT, path, "not cataloged: %s", why ? why : etw_strerror(st));
    *n = k.n;
    *total = k.total;
}

/* Scan one file and add it (its GUIDs win over earlier files'). */
static etw_status add_file(etw_manifest_catalog *c, const char *path, int named, uint32_t *files) {
    if (c->nfiles >= ETW_CATALOG_MAX_ENTRIES) {
        cat_diag(c, ETW_E_LIMIT, path, "not cataloged: the catalog holds %u files already",
                 (unsigned)ETW_CATALOG_MAX_ENTRIES);
        return ETW_E_LIMIT;
    }
    size_t len;
    etw_status st = read_file(c, path, &len);
    size_t n = 0, total = 0, bad = 0;
    etw_catalog_kind kind = ETW_CATALOG_XML;
    if (st == ETW_E_IO) {
        int e = errno;
        cat_diag(c, ETW_E_IO, path, "cannot read the manifest: %s", strerror(e));
        return named ? ETW_E_IO : ETW_OK;
    }
    if (st == ETW_E_NOMEM) return st;
    if (st == ETW_E_LIMIT) {
        if (!named) {
            cat_diag(c, ETW_E_LIMIT, path, "not cataloged: larger than %llu MiB",
                     (unsigned long long)(ETW_CATALOG_MAX_FILE_BYTES >> 20));
            return ETW_OK;
        }
        /* a file named directly is loaded anyway; its GUIDs are not known */
        len = 0;
        st = ETW_OK;
    } else if (etw_wevt_is_pe(c->buf, len) || etw_wevt_is_blob(c->buf, len)) {
        /* a PE image (its WEVT_TEMPLATE) or a bare WEVT_TEMPLATE blob */
        if (!c->scan && !(c->scan = etw_calloc(&c->al, ETW_CATALOG_MAX_FILE_PROVIDERS, sizeof *c->scan)))
            return ETW_E_NOMEM;
        kind = ETW_CATALOG_PE;
        pe_providers(c, path, len, named, &n, &total);
        if (total > n)
            cat_diag(c, ETW_E_LIMIT, path, "declares %zu providers; the first %u are cataloged", total,
                     (unsigned)ETW_CATALOG_MAX_FILE_PROVIDERS);
    } else {
        if (!c->scan && !(c->scan = etw_calloc(&c->al, ETW_CATALOG_MAX_FILE_PROVIDERS, sizeof *c->scan)))
            return ETW_E_NOMEM;
        st = etw_manifest_scan_providers(c->buf, len, c->scan, ETW_CATALOG_MAX_FILE_PROVIDERS, &n, &total,
                                         &bad);
        if (st == ETW_E_TRUNCATED)
            cat_diag(c, ETW_OK, path, "the file ends inside a tag, comment or attribute");
        if (total > n)
            cat_diag(c, ETW_E_LIMIT, path, "declares %zu providers; the first %u are cataloged", total,
                     (unsigned)ETW_CATALOG_MAX_FILE_PROVIDERS);
        if (bad)
            cat_diag(c, ETW_OK, path, "%zu <provider> guid attribute%s not a GUID", bad,
                     bad == 1 ? " is" : "s are");
        if (!named && total == 0 && st == ETW_OK && !bad)
            cat_diag(c, ETW_OK, path, "no provider loaded: no <provider> element with a guid attribute");
        st = ETW_OK;
    }
    /* the file */
    uint32_t f = c->nfiles;
    uint32_t fcap = c->cfiles;
    if (!grow(&c->al, (void **)&c->files, &c->cfiles, f + 1, sizeof *c->files)) return ETW_E_NOMEM;
    if (c->cfiles != fcap || !c->parent) { /* parent has the capacity of files */
        uint32_t *np = etw_calloc(&c->al, c->cfiles, sizeof *np);
        if (!np) return ETW_E_NOMEM;
        if (c->parent) memcpy(np, c->parent, (size_t)f * sizeof *np);
        etw_free(&c->al, c->parent);
        c->parent = np;
    }
    if ((uint64_t)c->ndecl + n > ETW_CATALOG_MAX_ENTRIES) {
        cat_diag(c, ETW_E_LIMIT, path, "not cataloged: the catalog holds %u providers already",
                 (unsigned)ETW_CATALOG_MAX_ENTRIES);
        return ETW_E_LIMIT;
    }
    uint32_t dcap = c->cdecl;
    if (!grow(&c->al, (void **)&c->decl, &c->cdecl, c->ndecl + (uint32_t)n, sizeof *c->decl))
        return ETW_E_NOMEM;
    if (c->cdecl != dcap || (c->cdecl && !c->decl_file)) { /* decl_file has the capacity of decl */
        uint32_t *nf = etw_calloc(&c->al, c->cdecl, sizeof *nf);
        if (!nf) return ETW_E_NOMEM;
        if (c->decl_file) memcpy(nf, c->decl_file, (size_t)c->ndecl * sizeof *nf);
        etw_free(&c->al, c->decl_file);
        c->decl_file = nf;
    }
    if (!slots_reserve(c, (uint32_t)n)) return ETW_E_NOMEM;
    size_t pl = strlen(path);
    char *p = etw_alloc(&c->al, pl + 1);
    if (!p) return ETW_E_NOMEM;
    memcpy(p, path, pl + 1);
    cat_file *cf = &c->files[f];
    memset(cf, 0, sizeof *cf);
    cf->path = p;
    cf->kind = (uint8_t)kind;
    cf->named = (uint8_t)(named != 0);
    cf->first = c->ndecl;
    c->parent[f] = f;
    c->nfiles++;
    for (size_t k = 0; k < n; k++) {
        const etw_guid *g = &c->scan[k];
        uint32_t *s = gslot(c, g);
        if (*s && c->decl_file[*s - 1] == f) continue; /* twice in this file */
        uint32_t d = c->ndecl++;
        c->decl[d] = *g;
        c->decl_file[d] = f;
        cf->n++;
        if (*s) {
            uint32_t prev = c->decl_file[*s - 1];
            char gs[ETW_GUID_STRING_SIZE];
            etw_guid_format(g, gs);
            c->ndup++;
            cat_diag(c, ETW_OK, path, "provider {%s} is declared again (first in %s); the later file is used",
                     gs, c->files[prev].path);
            uf_union(c->parent, prev, f);
        } else {
            c->nprov++;
        }
        *s = d + 1;
    }
    if (files) (*files)++;
    return st;
}

/* The groups as lists in file order. */
static void flatten(etw_manifest_catalog *c) {
    for (uint32_t f = 0; f < c->nfiles; f++) c->files[f].group_next = ETW_CATALOG_NONE;
    /* from the last file down: each file goes in front of its group's list */
    uint32_t *head = c->parent; /* reused below; roots first */
    for (uint32_t f = 0; f < c->nfiles; f++) c->files[f].group_head = uf_find(head, f);
    for (uint32_t f = c->nfiles; f-- > 0;) {
        uint32_t r = c->files[f].group_head;
        if (r == f) continue;
        /* insert f right after r, keeping order: files after f are already
         * behind r (we go downward) */
        c->files[f].group_next = c->files[r].group_next;
        c->files[r].group_next = f;
    }
}

#ifndef _WIN32
static int ascii_lc(int ch) { return ch >= 'A' && ch <= 'Z' ? ch - 'A' + 'a' : ch; }

static int has_manifest_ext(const char *n) {
    size_t l = strlen(n);
    if (l <= 4 || n[l - 4] != '.') return 0;
    char e[4] = {(char)ascii_lc((unsigned char)n[l - 3]), (char)ascii_lc((unsigned char)n[l - 2]),
                 (char)ascii_lc((unsigned char)n[l - 1]), 0};
    /* manifests, and PE images that may hold a WEVT_TEMPLATE */
    return !strcmp(e, "man") || !strcmp(e, "xml") || !strcmp(e, "dll") || !strcmp(e, "exe") ||
           !strcmp(e, "sys");
}

static etw_status add_dir(etw_manifest_catalog *c, const char *path, uint32_t depth, uint32_t *files) {
    char **names = NULL;
    size_t n = 0;
    etw_status st = etw_dir_list(&c->al, path, 1, (size_t)-1, &names, &n);
    if (st == ETW_E_IO) {
        int e = errno;
        cat_diag(c, ETW_E_IO, path, "cannot read the directory: %s", strerror(e));
        return depth == 0 ? ETW_E_IO : ETW_OK;
    }
    for (size_t i = 0; st == ETW_OK && i < n; i++) {
        struct stat ls, fs;
        if (lstat(names[i], &ls) != 0 || stat(names[i], &fs) != 0) continue;
        if (S_ISDIR(fs.st_mode)) {
            if (S_ISLNK(ls.st_mode)) continue;
            if (depth + 1 >= CAT_MAX_DEPTH) {
                cat_diag(c, ETW_E_LIMIT, names[i], "more than %d directories deep; not searched", CAT_MAX_DEPTH);
                continue;
            }
            st = add_dir(c, names[i], depth + 1, files);
        } else if (S_ISREG(fs.st_mode) && has_manifest_ext(names[i])) {
            /* regular files only: a FIFO would block the scan */
            st = add_file(c, names[i], 0, files);
        }
    }
    etw_dir_free(&c->al, names, n);
    return st;
}
#endif

etw_status etw_manifest_catalog_add_path(etw_manifest_catalog *c, const char *path, uint32_t *files) {
    if (files) *files = 0;
    if (!c || !path) return ETW_E_INVALID_ARG;
    uint32_t got = 0;
    struct stat sb;
    etw_status st;
    if (stat(path, &sb) != 0) {
        int e = errno;
        cat_diag(c, ETW_E_IO, path, "cannot read the manifest: %s", strerror(e));
        return ETW_E_IO;
    }
    if (!S_ISDIR(sb.st_mode)) {
        st = add_file(c, path, 1, &got);
    } else {
#ifdef _WIN32
        cat_diag(c, ETW_E_UNSUPPORTED, path, "loading a directory is not supported on this platform");
        return ETW_E_UNSUPPORTED;
#else
        st = add_dir(c, path, 0, &got);
        if (st == ETW_OK && got == 0)
            cat_diag(c, ETW_OK, path, "no provider loaded: no *.man or *.xml file in this directory or below");
#endif
    }
    flatten(c);
    /* the scan buffer is only needed while adding */
    etw_free(&c->al, c->buf);
    c->buf = NULL;
    c->bufcap = 0;
    if (files) *files = got;
    return st;
}

uint32_t etw_manifest_catalog_file_count(const etw_manifest_catalog *c) { return c ? c->nfiles : 0; }
uint32_t etw_manifest_catalog_provider_count(const etw_manifest_catalog *c) { return c ? c->nprov : 0; }
uint32_t etw_manifest_catalog_duplicate_count(const etw_manifest_catalog *c) { return c ? c->ndup : 0; }
uint64_t etw_manifest_catalog_problem_count(const etw_manifest_catalog *c) { return c ? c->problems : 0; }

uint32_t etw_catalog_find(const etw_manifest_catalog *c, const etw_guid *provider) {
    if (!c || !provider || !c->slots) return ETW_CATALOG_NONE;
    uint32_t s = *gslot(c, provider);
    return s ? c->decl_file[s - 1] : ETW_CATALOG_NONE;
}

const char *etw_manifest_catalog_lookup(const etw_manifest_catalog *c, const etw_guid *provider,
                                        etw_catalog_kind *kind) {
    uint32_t f = etw_catalog_find(c, provider);
    if (f == ETW_CATALOG_NONE) return NULL;
    if (kind) *kind = (etw_catalog_kind)c->files[f].kind;
    return c->files[f].path;
}

uint32_t etw_catalog_group_first(const etw_manifest_catalog *c, uint32_t f) {
    return c && f < c->nfiles ? c->files[f].group_head : ETW_CATALOG_NONE;
}

uint32_t etw_catalog_group_next(const etw_manifest_catalog *c, uint32_t f) {
    return c && f < c->nfiles ? c->files[f].group_next : ETW_CATALOG_NONE;
}

const char *etw_catalog_path(const etw_manifest_catalog *c, uint32_t f) {
    return c && f < c->nfiles ? c->files[f].path : NULL;
}

etw_catalog_kind etw_catalog_file_kind(const etw_manifest_catalog *c, uint32_t f) {
    return c && f < c->nfiles ? (etw_catalog_kind)c->files[f].kind : ETW_CATALOG_XML;
}

int etw_catalog_named(const etw_manifest_catalog *c, uint32_t f) {
    return c && f < c->nfiles ? c->files[f].named : 0;
}

uint32_t etw_catalog_count(const etw_manifest_catalog *c) { return c ? c->nfiles : 0; }

const etw_guid *etw_catalog_file_guids(const etw_manifest_catalog *c, uint32_t f, size_t *n) {
    *n = 0;
    if (!c || f >= c->nfiles || !c->files[f].n) return NULL;
    *n = c->files[f].n;
    return &c->decl[c->files[f].first];
}
