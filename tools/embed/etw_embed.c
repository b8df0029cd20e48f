/* etw_embed - write a C source file that holds a manifest compiled into the
 * library (data/manifests/, CMakeLists.txt), parsed: what expat reports
 * while parsing the XML (each element's start with its name, attributes and
 * line, each element's end), in the form src/source/etw_manifest_replay.h
 * describes. At run time the library replays it through the loader's own
 * element handlers, so the schemas are those the XML gives, without the
 * XML parse (about 54 M instructions for ClrEtwAll.man).
 *
 *   etw_embed SYMBOL INPUT OUTPUT
 *
 * The records are cut into one part per <provider>, so that a trace pays
 * for the providers it uses only (ClrEtwAll.man declares five; a trace with
 * one Rundown event needs an eighth of it). A part is a whole manifest of its
 * own: every element but the other providers, and of the string table only
 * the <string> elements whose ids the part's provider (or anything outside
 * the providers) names as $(string.ID); lines stay those of the XML. A
 * manifest without a provider is one part.
 *
 * OUTPUT defines `const unsigned char SYMBOL[]` (the parts, one after the
 * other, each starting with its magic), `const size_t SYMBOL_len` (their
 * size), `const size_t SYMBOL_nparts` and `const size_t SYMBOL_part_len[]`
 * (the parts in the order of the providers in the XML), and, to tell which
 * file they were made from, `const size_t SYMBOL_xml_len` and
 * `const uint64_t SYMBOL_xml_fnv` (the XML's size and FNV-1a 64-bit hash).
 * Its text depends on the input's bytes alone (the input is named without
 * its directory).
 *
 * The XML is parsed as the loader parses a manifest (etw_manifest_load_xml:
 * XML_ParserCreate(NULL), a document type declaration refused), and a file
 * the replay could not carry (more than ETW_MR_MAX_ATTRS attributes on an
 * element, a line past UINT32_MAX) fails the build. A build tool only: it
 * runs once per build, and writes OUTPUT through a temporary name so an
 * interrupted run leaves no half file that make would take as up to date. */
#include <expat.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "source/etw_manifest_replay.h"

static void die(const char *what) {
    fprintf(stderr, "etw_embed: %s\n", what);
    exit(1);
}

static void *xrealloc(void *p, size_t n) {
    p = realloc(p, n ? n : 1);
    if (!p) die("out of memory");
    return p;
}

/* ---- distinct strings, counted ------------------------------------------------- */

typedef struct str {
    char *s;
    size_t len; /* without the NUL */
    uint64_t uses;
    uint32_t offset; /* in the table, once laid out */
} str;

typedef struct strtab {
    str *v;
    uint32_t n, cap;
    uint32_t *slots; /* index + 1, 0 empty */
    uint32_t mask;
} strtab;

static uint32_t hash(const char *s, size_t n) {
    uint32_t h = 2166136261u;
    for (size_t i = 0; i < n; i++) h = (h ^ (unsigned char)s[i]) * 16777619u;
    return h;
}

static void st_grow(strtab *t) {
    uint32_t ncap = t->mask ? (t->mask + 1) * 2 : 1024;
    if (ncap < t->mask) die("too many strings");
    uint32_t *ns = calloc(ncap, sizeof *ns);
    if (!ns) die("out of memory");
    for (uint32_t i = 0; i < t->n; i++) {
        uint32_t h = hash(t->v[i].s, t->v[i].len) & (ncap - 1);
        while (ns[h]) h = (h + 1) & (ncap - 1);
        ns[h] = i + 1;
    }
    free(t->slots);
    t->slots = ns;
    t->mask = ncap - 1;
}

static uint32_t st_put(strtab *t, const char *s) {
    size_t n = strlen(s);
    if (!t->slots || (uint64_t)(t->n + 1) * 2 > (uint64_t)t->mask + 1) st_grow(t);
    uint32_t h = hash(s, n) & t->mask;
    for (; t->slots[h]; h = (h + 1) & t->mask) {
        str *e = &t->v[t->slots[h] - 1];
        if (e->len == n && memcmp(e->s, s, n) == 0) {
            e->uses++;
            return t->slots[h] - 1;
        }
    }
    if (t->n == t->cap) {
        t->cap = t->cap ? t->cap * 2 : 1024;
        t->v = xrealloc(t->v, (size_t)t->cap * sizeof *t->v);
    }
    str *e = &t->v[t->n];
    e->s = xrealloc(NULL, n + 1);
    memcpy(e->s, s, n + 1);
    e->len = n;
    e->uses = 1;
    e->offset = 0;
    t->slots[h] = ++t->n;
    return t->n - 1;
}

/* The index of string s, or UINT32_MAX; counts no use. */
static uint32_t st_find(const strtab *t, const char *s, size_t n) {
    if (!t->slots) return UINT32_MAX;
    for (uint32_t h = hash(s, n) & t->mask; t->slots[h]; h = (h + 1) & t->mask) {
        const str *e = &t->v[t->slots[h] - 1];
        if (e->len == n && memcmp(e->s, s, n) == 0) return t->slots[h] - 1;
    }
    return UINT32_MAX;
}

/* ---- what expat reports ------------------------------------------------------- */

/* The events as words: ETW_MR_TAG_END, or 1 + n, name, line, then n pairs
 * (string indexes, offsets once the table is laid out). */
typedef struct walk {
    XML_Parser xp;
    strtab strings;
    uint32_t *w;
    size_t n, cap;
    uint64_t elements, attributes;
    const char *fail; /* why the parse was stopped */
} walk;

static void put(walk *k, uint32_t v) {
    if (k->n == k->cap) {
        k->cap = k->cap ? k->cap * 2 : 65536;
        k->w = xrealloc(k->w, k->cap * sizeof *k->w);
    }
    k->w[k->n++] = v;
}

static void stop(walk *k, const char *why) {
    if (!k->fail) k->fail = why;
    XML_StopParser(k->xp, XML_FALSE);
}

static void XMLCALL on_start(void *ud, const XML_Char *name, const XML_Char **atts) {
    walk *k = ud;
    if (k->fail) return;
    uint32_t n = 0;
    while (atts[2 * n]) n++;
    if (n > ETW_MR_MAX_ATTRS) {
        stop(k, "an element has more attributes than ETW_MR_MAX_ATTRS (etw_manifest_replay.h)");
        return;
    }
    XML_Size line = XML_GetCurrentLineNumber(k->xp);
    if ((uint64_t)line > UINT32_MAX) {
        stop(k, "a line number past UINT32_MAX");
        return;
    }
    put(k, 1 + n);
    put(k, st_put(&k->strings, name));
    put(k, (uint32_t)line);
    for (uint32_t i = 0; i < 2 * n; i++) put(k, st_put(&k->strings, atts[i]));
    k->elements++;
    k->attributes += n;
}

static void XMLCALL on_end(void *ud, const XML_Char *name) {
    walk *k = ud;
    (void)name;
    if (!k->fail) put(k, ETW_MR_TAG_END);
}

/* The loader refuses a document type declaration (etw_manifest_xml.c): a
 * manifest with one is no manifest the library can hold. */
static void XMLCALL on_doctype(void *ud, const XML_Char *name, const XML_Char *sysid, const XML_Char *pubid,
                               int has_internal_subset) {
    (void)name, (void)sysid, (void)pubid, (void)has_internal_subset;
    stop(ud, "document type declarations are not allowed in a manifest");
}

/* ---- the records -------------------------------------------------------------- */

typedef struct bytes {
    unsigned char *b;
    size_t n, cap;
} bytes;

static void put_byte(bytes *o, unsigned char c) {
    if (o->n == o->cap) {
        o->cap = o->cap ? o->cap * 2 : 65536;
        o->b = xrealloc(o->b, o->cap);
    }
    o->b[o->n++] = c;
}

static void put_varint(bytes *o, uint32_t v) {
    while (v >= 0x80) {
        put_byte(o, (unsigned char)(v | 0x80));
        v >>= 7;
    }
    put_byte(o, (unsigned char)v);
}

/* The most used strings first (small offsets), then by their bytes: an
 * order that depends on the input alone. */
static int by_use(const void *a, const void *b) {
    const str *x = *(const str *const *)a, *y = *(const str *const *)b;
    if (x->uses != y->uses) return x->uses > y->uses ? -1 : 1;
    return strcmp(x->s, y->s);
}

static void encode(walk *k, bytes *o) {
    strtab *t = &k->strings;
    str **order = xrealloc(NULL, (size_t)t->n * sizeof *order);
    for (uint32_t i = 0; i < t->n; i++) order[i] = &t->v[i];
    qsort(order, t->n, sizeof *order, by_use);
    uint64_t size = 0;
    for (uint32_t i = 0; i < t->n; i++) {
        if (size > UINT32_MAX) die("the string table is over 4 GiB");
        order[i]->offset = (uint32_t)size;
        size += order[i]->len + 1;
    }
    if (size > UINT32_MAX) die("the string table is over 4 GiB");
    for (size_t i = 0; i < ETW_MR_MAGIC_LEN; i++) put_byte(o, (unsigned char)ETW_MR_MAGIC[i]);
    put_varint(o, (uint32_t)size);
    for (uint32_t i = 0; i < t->n; i++)
        for (size_t j = 0; j <= order[i]->len; j++) put_byte(o, (unsigned char)order[i]->s[j]);
    free(order);
    uint32_t prev_line = 0;
    for (size_t i = 0; i < k->n;) {
        uint32_t tag = k->w[i++];
        put_byte(o, (unsigned char)tag);
        if (tag == ETW_MR_TAG_END) continue;
        put_varint(o, t->v[k->w[i++]].offset);
        uint32_t line = k->w[i++];
        if (line < prev_line) die("expat reported a line before the previous element's");
        put_varint(o, line - prev_line);
        prev_line = line;
        for (uint32_t a = 0; a < 2 * (tag - 1); a++) put_varint(o, t->v[k->w[i++]].offset);
    }
}

/* ---- one part per provider ------------------------------------------------------ */

/* The name without its namespace prefix ("e:provider" is a provider too). */
static const char *local(const char *name) {
    const char *c = strrchr(name, ':');
    return c ? c + 1 : name;
}

/* Mark in refs (one byte per string of t) the ids that the value names as
 * $(string.ID). */
static void mark_refs(const strtab *t, const char *value, unsigned char *refs) {
    static const char pre[] = "$(string.";
    for (const char *p = strstr(value, pre); p; p = strstr(p, pre)) {
        p += sizeof pre - 1;
        const char *e = strchr(p, ')');
        if (!e) return;
        uint32_t i = st_find(t, p, (size_t)(e - p));
        if (i != UINT32_MAX) refs[i] = 1;
        p = e;
    }
}

/* The word after the element that starts at word i (its end included). */
static size_t skip_element(const walk *k, size_t i) {
    size_t depth = 0;
    do {
        uint32_t tag = k->w[i];
        if (tag == ETW_MR_TAG_END) {
            depth--;
            i++;
        } else {
            depth++;
            i += 3 + 2 * (size_t)(tag - 1);
        }
    } while (depth > 0);
    return i;
}

/* An element's attribute named name, as a string index, or UINT32_MAX. */
static uint32_t attribute(const walk *k, size_t i, const char *name) {
    uint32_t n = k->w[i] - 1;
    for (uint32_t a = 0; a < n; a++)
        if (strcmp(k->strings.v[k->w[i + 3 + 2 * a]].s, name) == 0) return k->w[i + 4 + 2 * a];
    return UINT32_MAX;
}

typedef struct parts {
    size_t n;          /* parts: the providers, or 1 */
    size_t *provider;  /* per part: the word where its provider starts (SIZE_MAX: none) */
    unsigned char *refs; /* per part, a byte per string (and one more): an id its provider names */
    unsigned char *common; /* the same: an id named outside the providers */
} parts;

/* Find the providers and the ids each names (a byte per string, and one
 * more, so that no array is empty). */
static void find_parts(const walk *k, parts *pt) {
    size_t ns = (size_t)k->strings.n + 1;
    memset(pt, 0, sizeof *pt);
    pt->common = xrealloc(NULL, ns);
    memset(pt->common, 0, ns);
    size_t inside = SIZE_MAX; /* the end of the provider being walked */
    unsigned char *refs = pt->common;
    for (size_t i = 0; i < k->n;) {
        if (i >= inside) {
            inside = SIZE_MAX;
            refs = pt->common;
        }
        uint32_t tag = k->w[i];
        if (tag == ETW_MR_TAG_END) {
            i++;
            continue;
        }
        if (inside == SIZE_MAX && strcmp(local(k->strings.v[k->w[i + 1]].s), "provider") == 0) {
            pt->provider = xrealloc(pt->provider, (pt->n + 1) * sizeof *pt->provider);
            pt->refs = xrealloc(pt->refs, (pt->n + 1) * ns);
            refs = pt->refs + pt->n * ns;
            memset(refs, 0, ns);
            pt->provider[pt->n++] = i;
            inside = skip_element(k, i);
        }
        for (uint32_t a = 0; a < tag - 1; a++) mark_refs(&k->strings, k->strings.v[k->w[i + 4 + 2 * a]].s, refs);
        i += 3 + 2 * (size_t)(tag - 1);
    }
    if (!pt->n) { /* no provider: the whole manifest is the one part */
        pt->n = 1;
        pt->provider = xrealloc(NULL, sizeof *pt->provider);
        pt->provider[0] = SIZE_MAX;
        pt->refs = xrealloc(NULL, ns);
        memset(pt->refs, 1, ns);
    }
}

/* Part p of k as a walk of its own (strings counted anew). */
static void make_part(const walk *k, const parts *pt, size_t p, walk *out) {
    memset(out, 0, sizeof *out);
    const unsigned char *refs = pt->refs + p * ((size_t)k->strings.n + 1);
    size_t depth = 0;
    uint32_t table_depth = 0; /* depth of the <stringTable> being walked (0: none) */
    for (size_t i = 0; i < k->n;) {
        uint32_t tag = k->w[i];
        if (tag == ETW_MR_TAG_END) {
            if (depth == table_depth) table_depth = 0;
            depth--;
            put(out, tag);
            i++;
            continue;
        }
        const char *name = local(k->strings.v[k->w[i + 1]].s);
        int other_provider = pt->provider[p] != SIZE_MAX && i != pt->provider[p] && strcmp(name, "provider") == 0;
        int unused_string = 0;
        if (table_depth && depth == table_depth && strcmp(name, "string") == 0) {
            uint32_t id = attribute(k, i, "id");
            unused_string = id == UINT32_MAX || !(refs[id] || pt->common[id]);
        }
        if (other_provider || unused_string) {
            i = skip_element(k, i);
            continue;
        }
        depth++;
        if (strcmp(name, "stringTable") == 0) table_depth = (uint32_t)depth;
        put(out, tag);
        put(out, st_put(&out->strings, k->strings.v[k->w[i + 1]].s));
        put(out, k->w[i + 2]);
        for (uint32_t a = 0; a < 2 * (tag - 1); a++) put(out, st_put(&out->strings, k->strings.v[k->w[i + 3 + a]].s));
        out->elements++;
        out->attributes += tag - 1;
        i += 3 + 2 * (size_t)(tag - 1);
    }
}

static void walk_free(walk *k) {
    for (uint32_t i = 0; i < k->strings.n; i++) free(k->strings.v[i].s);
    free(k->strings.v);
    free(k->strings.slots);
    free(k->w);
}

static int valid_symbol(const char *s) {
    if (!*s || (*s >= '0' && *s <= '9')) return 0;
    for (; *s; s++)
        if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || (*s >= '0' && *s <= '9') || *s == '_'))
            return 0;
    return 1;
}

static unsigned char *read_all(const char *path, size_t *len) {
    FILE *in = fopen(path, "rb");
    if (!in) {
        perror(path);
        exit(1);
    }
    unsigned char *b = NULL;
    size_t n = 0, cap = 0, got;
    do {
        if (n == cap) {
            cap = cap ? cap * 2 : (size_t)1 << 20;
            b = xrealloc(b, cap);
        }
        got = fread(b + n, 1, cap - n, in);
        n += got;
    } while (got > 0);
    int bad = ferror(in);
    fclose(in);
    if (bad) {
        fprintf(stderr, "etw_embed: cannot read %s\n", path);
        exit(1);
    }
    *len = n;
    return b;
}

int main(int argc, char **argv) {
    if (argc != 4 || !valid_symbol(argv[1])) {
        fprintf(stderr, "usage: etw_embed SYMBOL INPUT OUTPUT\n");
        return 2;
    }
    const char *sym = argv[1], *in_path = argv[2], *out_path = argv[3];
    const char *base = in_path;
    for (const char *p = in_path; *p; p++)
        if (*p == '/' || *p == '\\') base = p + 1;

    size_t xml_len;
    unsigned char *xml = read_all(in_path, &xml_len);
    uint64_t fnv = UINT64_C(14695981039346656037);
    for (size_t i = 0; i < xml_len; i++) fnv = (fnv ^ xml[i]) * UINT64_C(1099511628211);

    walk k;
    memset(&k, 0, sizeof k);
    k.xp = XML_ParserCreate(NULL);
    if (!k.xp) die("out of memory");
    XML_SetUserData(k.xp, &k);
    XML_SetElementHandler(k.xp, on_start, on_end);
    XML_SetStartDoctypeDeclHandler(k.xp, on_doctype);
    if (xml_len > (size_t)1 << 30) die("the manifest is over 1 GiB");
    if (XML_Parse(k.xp, (const char *)xml, (int)xml_len, 1) != XML_STATUS_OK || k.fail) {
        fprintf(stderr, "etw_embed: %s:%lu: %s\n", in_path, (unsigned long)XML_GetCurrentLineNumber(k.xp),
                k.fail ? k.fail : XML_ErrorString(XML_GetErrorCode(k.xp)));
        return 1;
    }
    XML_ParserFree(k.xp);
    free(xml);
    parts pt;
    find_parts(&k, &pt);
    bytes o = {NULL, 0, 0};
    size_t *part_len = xrealloc(NULL, pt.n * sizeof *part_len);
    char **part_name = xrealloc(NULL, pt.n * sizeof *part_name);
    for (size_t p = 0; p < pt.n; p++) {
        walk kp;
        make_part(&k, &pt, p, &kp);
        size_t before = o.n;
        encode(&kp, &o);
        part_len[p] = o.n - before;
        uint32_t name = pt.provider[p] == SIZE_MAX ? UINT32_MAX : attribute(&k, pt.provider[p], "name");
        const char *pn = name == UINT32_MAX ? "(no provider)" : k.strings.v[name].s;
        part_name[p] = xrealloc(NULL, strlen(pn) + 1);
        strcpy(part_name[p], pn);
        walk_free(&kp);
    }

    size_t tlen = strlen(out_path) + 5;
    char *tmp = xrealloc(NULL, tlen);
    snprintf(tmp, tlen, "%s.tmp", out_path);
    FILE *out = fopen(tmp, "wb");
    if (!out) {
        perror(tmp);
        return 1;
    }
    fprintf(out,
            "/* Generated by etw_embed from %s: do not edit. Its XML (%zu bytes) as expat\n"
            " * reports it, to replay (src/source/etw_manifest_replay.h): %llu elements,\n"
            " * %llu attributes, %u distinct strings; %zu bytes in %zu parts:\n",
            base, xml_len, (unsigned long long)k.elements, (unsigned long long)k.attributes, k.strings.n, o.n,
            pt.n);
    for (size_t p = 0; p < pt.n; p++) fprintf(out, " *   %zu bytes  %s\n", part_len[p], part_name[p]);
    fprintf(out, " */\n#include <stddef.h>\n#include <stdint.h>\n\n");
    fprintf(out,
            "extern const unsigned char %s[];\nextern const size_t %s_len;\n"
            "extern const size_t %s_nparts;\nextern const size_t %s_part_len[];\n"
            "extern const size_t %s_xml_len;\nextern const uint64_t %s_xml_fnv;\n\n",
            sym, sym, sym, sym, sym, sym);
    fprintf(out, "const unsigned char %s[] = {\n", sym);
    for (size_t i = 0; i < o.n; i++) fprintf(out, "%u,%s", o.b[i], i % 24 == 23 || i + 1 == o.n ? "\n" : "");
    fprintf(out, "};\n\nconst size_t %s_len = %zu;\n", sym, o.n);
    fprintf(out, "const size_t %s_nparts = %zu;\n", sym, pt.n);
    fprintf(out, "const size_t %s_part_len[] = {", sym);
    for (size_t p = 0; p < pt.n; p++) fprintf(out, "%s%zu", p ? ", " : "", part_len[p]);
    fprintf(out, "};\n");
    fprintf(out, "const size_t %s_xml_len = %zu;\n", sym, xml_len);
    fprintf(out, "const uint64_t %s_xml_fnv = UINT64_C(0x%016llx);\n", sym, (unsigned long long)fnv);
    int bad = ferror(out);
    if (fclose(out) != 0) bad = 1;
    if (bad || rename(tmp, out_path) != 0) {
        fprintf(stderr, "etw_embed: cannot write %s\n", out_path);
        remove(tmp);
        return 1;
    }
    free(tmp);
    free(o.b);
    for (size_t p = 0; p < pt.n; p++) free(part_name[p]);
    free(part_name);
    free(part_len);
    free(pt.provider);
    free(pt.refs);
    free(pt.common);
    walk_free(&k);
    return 0;
}
