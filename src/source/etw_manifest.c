/* etw_manifest.c - instrumentation manifests (XML) as a schema source.
 *
 * Loading (etw_manifest_load_xml):
 *   1. expat reads the document; the start-element handler keeps a small
 *      stack of element kinds (matched on the local name, so prefixed and
 *      unprefixed elements are the same) and records the raw attributes it
 *      cares about: providers with their events, templates (data/struct
 *      items in document order with their parent), maps, tasks (with
 *      task-scoped opcodes), opcodes, keywords, levels, channels, and the
 *      string tables of every <resources> culture. Nothing is interpreted
 *      yet, so a malformed document costs nothing but its parse records.
 *   2. At the end of a well-formed document everything is compiled: the
 *      string table of the chosen culture (en-US, else the first), each
 *      provider's name tables, its maps (messages resolved and trimmed), its
 *      templates (flattened into the TDH tree layout with count/length
 *      references resolved to indices) and its events (descriptor values,
 *      names, message, template). Problems found here are warnings with the
 *      manifest line.
 *   3. The compiled providers replace same-GUID providers of the set.
 * A document's compiled data lives in one arena (mf_doc) that is freed when
 * the last of its providers has been replaced, or with the set.
 *
 * Resolving (the etw_source callback) is then a hash lookup of the provider
 * and of (id, version), and an etw_cache_insert of a draft pointing into the
 * document's arena (the cache deep-copies it).
 *
 * This file holds the set, the loading entry points, the queries and the
 * source; the XML walk, string tables, templates and event compilation are
 * in etw_manifest_{xml,strings,template,compile}.c (etw_manifest_internal.h).
 */
#define _POSIX_C_SOURCE 200809L

#include "etw_manifest.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <errno.h>
#include <string.h>
#include <sys/stat.h>


#include "etw_manifest_internal.h"
#include "../common/etw_dir.h"
#include "../wevt/etw_wevt.h"

/* ---- arena ---------------------------------------------------------------- */

void *etw_mf_ar_alloc(mf_arena *a, size_t n) {
    ar_block *b = a->head;
    n = (n + 7) & ~(size_t)7;
    if (n == 0) n = 8;
    if (b && b->cap - b->used >= n) {
        void *p = (unsigned char *)b + AR_HDR + b->used;
        b->used += n;
        return p;
    }
    /* Blocks double from AR_FIRST up to AR_BLOCK: a small manifest (most of
     * a Windows folder's) keeps a few KiB, not a whole 64 KiB block. */
    size_t block = a->bytes < AR_FIRST ? AR_FIRST : a->bytes < AR_BLOCK ? a->bytes : AR_BLOCK;
    size_t cap = n > block / 4 ? n : block;
    if (cap > (size_t)-1 - AR_HDR) return NULL;
    ar_block *nb = etw_alloc(a->al, AR_HDR + cap);
    if (!nb) return NULL;
    a->bytes += AR_HDR + cap;
    nb->cap = cap;
    nb->used = n;
    if (b && cap != block) { /* a big block goes behind the current one */
        nb->next = b->next;
        b->next = nb;
    } else {
        nb->next = b;
        a->head = nb;
    }
    return (unsigned char *)nb + AR_HDR;
}

/* Free every block. The arena may live in one of its own blocks (an
 * mf_doc does), so nothing is read from or written to *a once freeing
 * starts. */
void etw_mf_ar_free(mf_arena *a) {
    ar_block *b = a->head;
    const etw_allocator *al = a->al;
    while (b) {
        ar_block *n = b->next;
        etw_free(al, b);
        b = n;
    }
}

char *etw_mf_ar_strndup(mf_arena *a, const char *s, size_t n) {
    char *d = etw_mf_ar_alloc(a, n + 1);
    if (!d) return NULL;
    memcpy(d, s, n);
    d[n] = 0;
    return d;
}

char *etw_mf_ar_strdup(mf_arena *a, const char *s) { return etw_mf_ar_strndup(a, s, strlen(s)); }

static uint64_t guid_hash(const etw_manifest_set *m, const etw_guid *g) {
    uint64_t a = (uint64_t)g->data1 << 32 | (uint64_t)g->data2 << 16 | g->data3;
    uint64_t b;
    memcpy(&b, g->data4, 8);
    return mix64(a ^ mix64(b ^ m->seed));
}


/* ---- diagnostics ------------------------------------------------------------- */

void etw_mf_diag(etw_manifest_set *m, etw_status st, const char *origin, uint32_t line,
                 const char *fmt, ...) {
    if (st != ETW_OK) m->problems++; /* ETW_OK: a warning, nothing lost */
    if (!m->on_diag) return;
    int n = snprintf(m->msg, sizeof m->msg, "%s:%u: ", origin, (unsigned)line);
    if (n < 0) n = 0;
    if ((size_t)n < sizeof m->msg) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(m->msg + n, sizeof m->msg - (size_t)n, fmt, ap);
        va_end(ap);
    }
    etw_diag d;
    d.status = st;
    d.file_offset = line;
    d.message = m->msg;
    m->on_diag(m->diag_ctx, &d);
}

/* ---- the set ------------------------------------------------------------------ */

static mf_provider **prov_slot(const etw_manifest_set *m, const etw_guid *g) {
    if (!m->pslots) return NULL;
    for (uint32_t i = (uint32_t)guid_hash(m, g) & m->pmask;; i = (i + 1) & m->pmask) {
        mf_provider **s = &m->pslots[i];
        if (!*s || etw_guid_equal(&(*s)->guid, g)) return s;
    }
}

static const mf_provider *find_provider(const etw_manifest_set *m, const etw_guid *g) {
    mf_provider **s = prov_slot(m, g);
    return s ? *s : NULL;
}

static const etw_guid zero_guid;

/* 1 when g was offered to the lazy loader before; else remember it. A set
 * that cannot remember (no memory) reports it as offered: nothing loads. */
static int offered_before(etw_manifest_set *m, const etw_guid *g) {
    if ((uint64_t)(m->noffered + 1) * 2 > (uint64_t)m->omask + 1 || !m->offered) {
        uint64_t ncap = m->offered ? ((uint64_t)m->omask + 1) * 2 : 64;
        if (ncap > ((uint64_t)1 << 28)) return 1;
        etw_guid *ns = etw_calloc(&m->al, (size_t)ncap, sizeof *ns);
        if (!ns) return 1;
        uint32_t nmask = (uint32_t)ncap - 1;
        for (uint64_t i = 0; m->offered && i <= m->omask; i++) {
            if (etw_guid_equal(&m->offered[i], &zero_guid)) continue;
            uint32_t j = (uint32_t)guid_hash(m, &m->offered[i]) & nmask;
            while (!etw_guid_equal(&ns[j], &zero_guid)) j = (j + 1) & nmask;
            ns[j] = m->offered[i];
        }
        etw_free(&m->al, m->offered);
        m->offered = ns;
        m->omask = nmask;
    }
    if (etw_guid_equal(g, &zero_guid)) return 1;
    uint32_t j = (uint32_t)guid_hash(m, g) & m->omask;
    for (;; j = (j + 1) & m->omask) {
        if (etw_guid_equal(&m->offered[j], g)) return 1;
        if (etw_guid_equal(&m->offered[j], &zero_guid)) break;
    }
    m->offered[j] = *g;
    m->noffered++;
    return 0;
}

/* The provider of GUID g, offered to the lazy loader when the set does not
 * hold it yet. */
static const mf_provider *get_provider(etw_manifest_set *m, const etw_guid *g) {
    const mf_provider *p = find_provider(m, g);
    if (p || !m->lazy || m->lazy_depth || offered_before(m, g)) return p;
    m->lazy_depth++;
    int loaded = m->lazy(m->lazy_ctx, m, g);
    m->lazy_depth--;
    return loaded ? find_provider(m, g) : NULL;
}

etw_status etw_manifest_set_lang(etw_manifest_set *m, const char *lang) {
    if (!m) return ETW_E_INVALID_ARG;
    m->lang[0] = 0;
    if (lang) {
        size_t n = strlen(lang);
        if (n >= sizeof m->lang) return ETW_E_INVALID_ARG;
        memcpy(m->lang, lang, n + 1);
    }
    return ETW_OK;
}

void etw_manifest_set_keep_existing(etw_manifest_set *m, int on) {
    if (m) m->keep_existing = on != 0;
}

etw_status etw_manifest_set_lazy(etw_manifest_set *m, etw_manifest_lazy_fn fn, void *ctx) {
    if (!m) return ETW_E_INVALID_ARG;
    m->lazy = fn;
    m->lazy_ctx = ctx;
    return ETW_OK;
}

/* Room for `more` new providers at load <= 1/2. */
static int prov_reserve(etw_manifest_set *m, uint32_t more) {
    uint64_t need = ((uint64_t)m->nprov + more) * 2 + 1;
    uint64_t cap = m->pslots ? (uint64_t)m->pmask + 1 : 0;
    if (need <= cap) return 1;
    uint64_t ncap = 16;
    while (ncap < need) ncap <<= 1;
    if (ncap > ((uint64_t)1 << 30)) return 0;
    mf_provider **ns = etw_calloc(&m->al, (size_t)ncap, sizeof *ns);
    if (!ns) return 0;
    mf_provider **old = m->pslots;
    m->pslots = ns;
    m->pmask = (uint32_t)ncap - 1;
    for (uint64_t i = 0; i < cap; i++) {
        if (!old[i]) continue;
        mf_provider **s = prov_slot(m, &old[i]->guid);
        *s = old[i];
    }
    etw_free(&m->al, old);
    return 1;
}

static void doc_unlink_free(etw_manifest_set *m, mf_doc *d) {
    if (d->prev) d->prev->next = d->next;
    else m->docs = d->next;
    if (d->next) d->next->prev = d->prev;
    (void)m;
    etw_mf_ar_free(&d->ar); /* d lives in its own arena */
}

static void install(loader *L, mf_provider *p) {
    etw_manifest_set *m = L->m;
    mf_provider **s = prov_slot(m, &p->guid);
    mf_provider *old = *s;
    /* while keep_existing is set (a Windows image's file, loaded for one of
     * its providers), what the set holds stays: the user's files come first */
    if (old && m->keep_existing) return;
    p->order = m->next_order++;
    p->doc->live++;
    *s = p;
    m->nevents += p->nevents;
    if (!old) {
        m->nprov++;
        return;
    }
    char g[ETW_GUID_STRING_SIZE];
    etw_guid_format(&p->guid, g);
    WARN(L, ETW_OK, p->line, "provider %s {%s} replaces the one loaded from %s:%u", nz(p->name), g,
         old->doc->origin, old->line);
    m->nevents -= old->nevents;
    if (m->cache) etw_cache_forget_provider(m->cache, m->kind, &p->guid);
    if (--old->doc->live == 0 && old->doc != L->doc) doc_unlink_free(m, old->doc);
}

etw_status etw_manifest_set_new(etw_manifest_set **out, const etw_manifest_options *opt) {
    if (!out) return ETW_E_INVALID_ARG;
    *out = NULL;
    etw_allocator a = etw_allocator_resolve(opt ? opt->allocator : NULL);
    etw_manifest_set *m = etw_calloc(&a, 1, sizeof *m);
    if (!m) return ETW_E_NOMEM;
    m->al = a;
    m->kind = opt && opt->kind ? opt->kind : ETW_SOURCE_MANIFEST;
    m->on_diag = opt ? opt->on_diag : NULL;
    m->diag_ctx = opt ? opt->diag_ctx : NULL;
    m->seed = mix64((uint64_t)(uintptr_t)m ^ UINT64_C(0x6d616e6966657374));
    *out = m;
    return ETW_OK;
}

void etw_manifest_set_free(etw_manifest_set *m) {
    if (!m) return;
    while (m->docs) doc_unlink_free(m, m->docs);
    etw_allocator a = m->al;
    etw_free(&a, m->pslots);
    etw_free(&a, m->offered);
    etw_free(&a, m);
}

void etw_mf_loader_free(loader *L) {
    for (uint32_t i = 0; i < L->provs.n; i++) {
        p_provider *pp = &VAT(p_provider, &L->provs, i);
        etw_mf_vec_free(L, &pp->items, sizeof(p_item));
        etw_mf_vec_free(L, &pp->tmpls, sizeof(p_tmpl));
        etw_mf_vec_free(L, &pp->events, sizeof(p_event));
        etw_mf_vec_free(L, &pp->tasks, sizeof(p_named));
        etw_mf_vec_free(L, &pp->opcodes, sizeof(p_named));
        etw_mf_vec_free(L, &pp->keywords, sizeof(p_named));
        etw_mf_vec_free(L, &pp->levels, sizeof(p_named));
        etw_mf_vec_free(L, &pp->channels, sizeof(p_named));
        etw_mf_vec_free(L, &pp->maps, sizeof(p_map));
        etw_mf_vec_free(L, &pp->mapents, sizeof(p_mapent));
    }
    etw_mf_vec_free(L, &L->provs, sizeof(p_provider));
    etw_mf_vec_free(L, &L->strings, sizeof(p_string));
    etw_mf_nt_free(&L->names, &L->m->al);
    etw_mf_nt_free(&L->strtab, &L->m->al);
    etw_mf_nt_free(&L->reftab, &L->m->al);
    if (L->doc) etw_mf_ar_free(&L->doc->ar); /* not committed */
    L->doc = NULL;
}

/* Compile the parsed document and install its providers. */
etw_status etw_mf_commit(loader *L, uint32_t *loaded) {
    etw_manifest_set *m = L->m;
    /* string table of the chosen culture */
    uint32_t group = L->en_us_group >= 0 ? (uint32_t)L->en_us_group : 0;
    if (!etw_mf_nt_reset(&L->strtab, &m->al, L->strings.n)) return ETW_E_NOMEM;
    for (uint32_t i = 0; i < L->strings.n; i++) {
        const p_string *s = &VAT(p_string, &L->strings, i);
        if (s->group != group) continue;
        size_t n;
        const char *id = trim(s->id, &n);
        etw_mf_nt_put(&L->strtab, m->seed, 0, id, n, i);
    }
    uint32_t np = L->provs.n;
    mf_provider **compiled = etw_calloc(&m->al, np ? np : 1, sizeof *compiled);
    if (!compiled) return ETW_E_NOMEM;
    uint32_t nc = 0;
    for (uint32_t i = 0; i < np; i++) {
        mf_provider *p;
        if (!etw_mf_compile_provider(L, &VAT(p_provider, &L->provs, i), &p)) {
            etw_free(&m->al, compiled);
            return L->st != ETW_OK ? L->st : ETW_E_NOMEM; /* ETW_E_LIMIT: the memory bound */
        }
        if (p) compiled[nc++] = p;
    }
    if (L->unresolved)
        WARN(L, ETW_OK, L->unresolved_line,
             "%llu string reference%s resolve%s in no string table of this file (the first: %.*s); "
             "names fall back to the name attribute and such messages are left out",
             (unsigned long long)L->unresolved, L->unresolved == 1 ? "" : "s", L->unresolved == 1 ? "s" : "",
             (int)(L->unresolved_len > 200 ? 200 : L->unresolved_len), L->unresolved_ref);
    if (!prov_reserve(m, nc)) {
        etw_free(&m->al, compiled);
        return ETW_E_NOMEM;
    }
    /* the document joins the set before its providers do */
    L->doc->prev = NULL;
    L->doc->next = m->docs;
    if (m->docs) m->docs->prev = L->doc;
    m->docs = L->doc;
    for (uint32_t i = 0; i < nc; i++) install(L, compiled[i]);
    etw_free(&m->al, compiled);
    if (nc == 0) {
        if (L->events_elements == 0)
            WARN(L, ETW_OK, 0,
                 "no provider loaded: no <events> element (neither an instrumentation manifest nor a "
                 "component manifest with <instrumentation>)");
        else if (np == 0)
            WARN(L, ETW_OK, 0, "no provider loaded: its <events> element%s hold%s no <provider>",
                 L->events_elements == 1 ? "" : "s", L->events_elements == 1 ? "s" : "");
        else
            WARN(L, ETW_OK, 0, "no provider loaded: none of its %u <provider> elements is usable",
                 (unsigned)np);
    }
    if (nc && m->cache) etw_cache_miss_clear(m->cache);
    if (L->doc->live == 0) doc_unlink_free(m, L->doc);
    L->doc = NULL;
    if (loaded) *loaded = nc;
    return ETW_OK;
}

etw_status etw_mf_loader_init(loader *L, etw_manifest_set *m, const char *origin) {
    memset(L, 0, sizeof *L);
    /* the document's arena holds the mf_doc itself */
    mf_arena ar = {&m->al, NULL, 0};
    mf_doc *doc = etw_mf_ar_alloc(&ar, sizeof *doc);
    if (!doc) return ETW_E_NOMEM;
    memset(doc, 0, sizeof *doc);
    doc->ar = ar;
    doc->origin = etw_mf_ar_strdup(&doc->ar, origin);
    if (!doc->origin) {
        etw_mf_ar_free(&doc->ar);
        return ETW_E_NOMEM;
    }
    L->m = m;
    L->doc = doc;
    L->cur_prov = L->cur_tmpl = L->cur_task = L->cur_map = L->cur_group = L->en_us_group = -1;
    return ETW_OK;
}

/* After the XML walk or the replay: a failed one (st, reason) reported,
 * else the document compiled and installed. */
static etw_status load_parsed(loader *L, etw_status st, const char *reason, uint32_t *providers) {
    if (st != ETW_OK) {
        etw_mf_diag(L->m, st, L->doc->origin, cur_line(L), "%s; nothing of this manifest is loaded",
                    reason ? reason : "malformed XML");
        return st;
    }
    const char *org = L->doc->origin;
    st = etw_mf_commit(L, providers);
    if (st != ETW_OK)
        etw_mf_diag(L->m, st, org, 0, "%s; nothing of this manifest is loaded",
                    L->st != ETW_OK && L->reason ? L->reason : etw_strerror(st));
    return st;
}

etw_status etw_manifest_load_xml(etw_manifest_set *m, const char *xml, size_t len, const char *origin,
                                 uint32_t *providers) {
    if (providers) *providers = 0;
    if (!m || (!xml && len)) return ETW_E_INVALID_ARG;
    if (!origin) origin = "<memory>";
    if ((uint64_t)len > ETW_MANIFEST_MAX_FILE_BYTES) {
        etw_mf_diag(m, ETW_E_LIMIT, origin, 0,
                    "the manifest is %llu bytes, more than the %llu MiB a manifest may be; nothing of it is loaded",
                    (unsigned long long)len, (unsigned long long)(ETW_MANIFEST_MAX_FILE_BYTES >> 20));
        return ETW_E_LIMIT;
    }

    loader L;
    etw_status st = etw_mf_loader_init(&L, m, origin);
    if (st != ETW_OK) return st;
    L.xp = XML_ParserCreate(NULL);
    if (!L.xp) {
        etw_mf_loader_free(&L);
        return ETW_E_NOMEM;
    }
    enum XML_Status xs = etw_mf_xml_parse(&L, xml, len);
    const char *reason = NULL;
    if (xs != XML_STATUS_OK || L.st != ETW_OK) {
        st = L.st != ETW_OK ? L.st : ETW_E_CORRUPT;
        reason = L.reason ? L.reason : XML_ErrorString(XML_GetErrorCode(L.xp));
    }
    st = load_parsed(&L, st, reason, providers);
    XML_ParserFree(L.xp);
    etw_mf_loader_free(&L);
    return st;
}

etw_status etw_manifest_load_replay(etw_manifest_set *m, const unsigned char *rec, size_t len,
                                    const char *origin, uint32_t *providers) {
    if (providers) *providers = 0;
    if (!m || (!rec && len)) return ETW_E_INVALID_ARG;
    if (!origin) origin = "<memory>";
    /* no size bound as for XML (ETW_MANIFEST_MAX_FILE_BYTES): the records
     * are the library's own, and what they make is bounded by the memory
     * budget on_start checks, as for XML */
    loader L;
    etw_status st = etw_mf_loader_init(&L, m, origin);
    if (st != ETW_OK) return st;
    st = etw_mf_replay(&L, rec, len); /* L.xp NULL: cur_line is the replay's */
    st = load_parsed(&L, st, L.reason, providers);
    etw_mf_loader_free(&L);
    return st;
}

/* ---- files --------------------------------------------------------------------- */

static etw_status load_file(etw_manifest_set *m, const char *path, uint32_t *providers) {
    FILE *f = fopen(path, "rb");
    if (!f) {
        int e = errno;
        etw_mf_diag(m, ETW_E_IO, path, 0, "cannot read the manifest: %s", strerror(e));
        errno = e;
        return ETW_E_IO;
    }
    /* read at its size (one allocation, no doubling), refused past the
     * bound before anything is read; a file that grows while it is read is
     * read up to the bound */
    const uint64_t max = ETW_MANIFEST_MAX_FILE_BYTES;
    struct stat sb;
    uint64_t size = fstat(fileno(f), &sb) == 0 && S_ISREG(sb.st_mode) && sb.st_size > 0 ? (uint64_t)sb.st_size : 0;
    etw_status st = ETW_OK;
    char *buf = NULL;
    size_t len = 0, cap = 0;
    if (size > max) {
        fclose(f);
        etw_mf_diag(m, ETW_E_LIMIT, path, 0,
                    "the file is %llu bytes, more than the %llu MiB a manifest may be; nothing of it is loaded",
                    (unsigned long long)size, (unsigned long long)(max >> 20));
        return ETW_E_LIMIT;
    }
    for (;;) {
        if (len == cap) {
            uint64_t want = cap ? (uint64_t)cap * 2 : size + 1;
            if (want < 4096) want = 4096;
            if (want > max + 1) want = max + 1;
            if (want <= cap) { /* read max + 1 bytes: over the bound */
                st = ETW_E_LIMIT;
                break;
            }
            char *nb = etw_alloc(&m->al, (size_t)want);
            if (!nb) {
                st = ETW_E_NOMEM;
                break;
            }
            if (len) memcpy(nb, buf, len);
            etw_free(&m->al, buf);
            buf = nb;
            cap = (size_t)want;
        }
        size_t r = fread(buf + len, 1, cap - len, f);
        len += r;
        if (r == 0) {
            if (ferror(f)) st = ETW_E_IO;
            break;
        }
    }
    fclose(f);
    if (st == ETW_E_LIMIT) {
        etw_free(&m->al, buf);
        etw_mf_diag(m, st, path, 0, "the file is more than the %llu MiB a manifest may be; nothing of it is loaded",
                    (unsigned long long)(max >> 20));
        return st;
    }
    /* a PE image (its WEVT_TEMPLATE) or a bare CRIM blob, else XML */
    if (st == ETW_OK && etw_wevt_is_pe((const uint8_t *)buf, len))
        st = etw_wevt_load_pe(m, (const uint8_t *)buf, len, path, m->lang, providers);
    else if (st == ETW_OK && etw_wevt_is_blob((const uint8_t *)buf, len))
        st = etw_wevt_load_blob(m, (const uint8_t *)buf, len, NULL, path, providers);
    else if (st == ETW_OK) st = etw_manifest_load_xml(m, buf, len, path, providers);
    else etw_mf_diag(m, st, path, 0, "cannot read the manifest: %s", etw_strerror(st));
    etw_free(&m->al, buf);
    return st;
}

#ifndef _WIN32
static int has_manifest_ext(const char *n) {
    size_t l = strlen(n);
    return (l > 4 && eq_nocase(n + l - 4, ".man")) || (l > 4 && eq_nocase(n + l - 4, ".xml"));
}
#endif

#ifndef _WIN32
/* How deep -m DIR looks into subdirectories. */
#define MAX_DIR_DEPTH 16

typedef struct dir_walk {
    uint32_t files;     /* manifest files met */
    uint32_t providers; /* providers they loaded */
} dir_walk;

/* Load every *.man / *.xml file of dir and of its subdirectories (symbolic
 * links to directories are not followed), in name order. */
static etw_status load_dir(etw_manifest_set *m, const char *path, uint32_t depth, dir_walk *w) {
    char **names = NULL;
    size_t n = 0;
    etw_status st = etw_dir_list(&m->al, path, 1, (size_t)-1, &names, &n);
    if (st == ETW_E_IO) {
        int e = errno;
        etw_mf_diag(m, ETW_E_IO, path, 0, "cannot read the directory: %s", strerror(e));
        errno = e;
        return ETW_E_IO;
    }
    if (st == ETW_OK) {
        for (size_t i = 0; i < n; i++) {
            struct stat ls, fs;
            if (lstat(names[i], &ls) != 0 || stat(names[i], &fs) != 0) continue;
            etw_status s = ETW_OK;
            if (S_ISDIR(fs.st_mode)) {
                if (S_ISLNK(ls.st_mode)) continue;
                if (depth + 1 >= MAX_DIR_DEPTH) {
                    etw_mf_diag(m, ETW_E_LIMIT, names[i], 0, "more than %d directories deep; not searched",
                         MAX_DIR_DEPTH);
                    continue;
                }
                s = load_dir(m, names[i], depth + 1, w);
            } else if (has_manifest_ext(names[i])) {
                uint32_t got = 0;
                w->files++;
                s = load_file(m, names[i], &got);
                w->providers += got;
            }
            if (s != ETW_OK && st == ETW_OK) st = s;
        }
    }
    etw_dir_free(&m->al, names, n);
    return st;
}
#endif

etw_status etw_manifest_load_path(etw_manifest_set *m, const char *path, uint32_t *providers) {
    if (providers) *providers = 0;
    if (!m || !path) return ETW_E_INVALID_ARG;
    struct stat sb;
    if (stat(path, &sb) != 0) {
        int e = errno;
        etw_mf_diag(m, ETW_E_IO, path, 0, "cannot read the manifest: %s", strerror(e));
        errno = e;
        return ETW_E_IO;
    }
    if (!S_ISDIR(sb.st_mode)) return load_file(m, path, providers);
#ifdef _WIN32
    etw_mf_diag(m, ETW_E_UNSUPPORTED, path, 0, "loading a directory is not supported on this platform");
    return ETW_E_UNSUPPORTED;
#else
    dir_walk w = {0, 0};
    etw_status st = load_dir(m, path, 0, &w);
    if (providers) *providers = w.providers;
    if (w.files == 0)
        etw_mf_diag(m, ETW_OK, path, 0, "no provider loaded: no *.man or *.xml file in this directory or below");
    else if (w.providers == 0)
        etw_mf_diag(m, ETW_OK, path, 0, "no provider loaded: none of its %u manifest file%s has a usable provider",
             (unsigned)w.files, w.files == 1 ? "" : "s");
    return st;
#endif
}

/* ---- queries -------------------------------------------------------------------- */

int etw_manifest_has_provider(etw_manifest_set *m, const etw_guid *provider) {
    return m && provider && get_provider(m, provider) != NULL;
}

const char *etw_manifest_provider_name(etw_manifest_set *m, const etw_guid *provider) {
    const mf_provider *p = m && provider ? get_provider(m, provider) : NULL;
    return p ? p->name : NULL;
}

int etw_manifest_provider_info(etw_manifest_set *m, const etw_guid *provider, const char **name,
                               const char **origin) {
    const mf_provider *p = m && provider ? get_provider(m, provider) : NULL;
    if (!p) return 0;
    if (name) *name = p->name;
    if (origin) *origin = p->doc->origin;
    return 1;
}

uint32_t etw_manifest_provider_count(const etw_manifest_set *m) { return m ? m->nprov : 0; }

uint32_t etw_manifest_event_count(const etw_manifest_set *m) { return m ? m->nevents : 0; }

uint64_t etw_manifest_problem_count(const etw_manifest_set *m) { return m ? m->problems : 0; }

void etw_manifest_set_cache(etw_manifest_set *m, etw_cache *cache) {
    if (m) m->cache = cache;
}

static int prov_order_cmp(const void *a, const void *b) {
    const mf_provider *x = *(const mf_provider *const *)a, *y = *(const mf_provider *const *)b;
    return (x->order > y->order) - (x->order < y->order);
}

void etw_manifest_foreach_event(const etw_manifest_set *m, etw_manifest_event_fn fn, void *ctx) {
    if (!m || !fn || !m->nprov) return;
    etw_allocator a = m->al;
    mf_provider **list = etw_calloc(&a, m->nprov, sizeof *list);
    uint32_t n = 0;
    if (list) {
        for (uint32_t i = 0; i <= m->pmask; i++)
            if (m->pslots[i]) list[n++] = m->pslots[i];
        qsort(list, n, sizeof *list, prov_order_cmp);
        for (uint32_t i = 0; i < n; i++)
            for (uint32_t j = 0; j < list[i]->nevents; j++)
                if (fn(ctx, &list[i]->guid, list[i]->events[j].id, list[i]->events[j].version)) goto done;
    done:
        etw_free(&a, list);
        return;
    }
    /* no memory for the ordering: table order */
    for (uint32_t i = 0; i <= m->pmask; i++) {
        const mf_provider *p = m->pslots[i];
        if (!p) continue;
        for (uint32_t j = 0; j < p->nevents; j++)
            if (fn(ctx, &p->guid, p->events[j].id, p->events[j].version)) return;
    }
}

static const mf_event *find_event(const mf_provider *p, uint16_t id, uint8_t version) {
    for (uint32_t s = ev_hash(id, version) & p->mask;; s = (s + 1) & p->mask) {
        uint32_t x = p->slots[s];
        if (!x) return NULL;
        const mf_event *e = &p->events[x - 1];
        if (e->id == id && e->version == version) return e;
    }
}

/* ---- the source ------------------------------------------------------------------- */

static etw_status build(etw_manifest_set *m, etw_cache *cache, uint8_t ptr_size, const etw_guid *g,
                        uint16_t id, uint8_t version, const uint8_t *key, size_t key_len, uint64_t hash,
                        const etw_schema **out, const char **why) {
    const mf_provider *p = get_provider(m, g);
    if (!p) return ETW_E_NOT_FOUND;
    const mf_event *e = find_event(p, id, version);
    if (!e) return ETW_E_NOT_FOUND; /* another version is another layout */
    etw_schema d;
    memset(&d, 0, sizeof d);
    d.source = (uint8_t)m->kind;
    d.pointer_size = ptr_size;
    d.provider = p->guid;
    d.provider_name = p->name;
    d.event_name = e->name;
    d.task_name = e->task_name;
    d.opcode_name = e->opcode_name;
    d.task_symbol = e->task_symbol;
    d.opcode_symbol = e->opcode_symbol;
    d.event_symbol = e->event_symbol;
    d.message = e->message;
    d.event_id = e->id;
    d.version = e->version;
    d.channel = e->channel;
    d.level = e->level;
    d.opcode = e->opcode;
    d.task = e->task;
    d.keywords = e->keywords;
    d.prop_count = e->prop_count;
    d.top_count = e->top_count;
    d.props = e->props;
    return etw_cache_insert(cache, m->kind, ptr_size, key, key_len, hash, &d, out, why);
}

static etw_status mf_resolve(void *ctx, etw_cache *cache, const etw_event *ev, const uint8_t *key,
                             size_t key_len, uint64_t hash, const etw_schema **out, const char **why) {
    etw_manifest_set *m = ctx;
    if (!m || !cache || !key || !out) return ETW_E_INVALID_ARG;
    if (key_len != ETW_DESCRIPTOR_KEY_SIZE) return ETW_E_NOT_FOUND;
    etw_guid g = etw_guid_read(key);
    uint16_t id = (uint16_t)(key[16] | key[17] << 8);
    uint8_t ptr = ev && ev->pointer_size == 4 ? 4 : 8;
    return build(m, cache, ptr, &g, id, key[18], key, key_len, hash, out, why);
}

etw_source etw_manifest_as_source(etw_manifest_set *m) {
    etw_source s;
    memset(&s, 0, sizeof s);
    s.kind = m ? m->kind : ETW_SOURCE_MANIFEST;
    s.key = ETW_SOURCE_KEY_DESCRIPTOR;
    s.resolve = mf_resolve;
    s.ctx = m;
    return s;
}

etw_status etw_manifest_resolve(etw_manifest_set *m, etw_cache *cache, const etw_guid *provider,
                                uint16_t id, uint8_t version, uint8_t ptr_size, const etw_schema **out,
                                const char **why) {
    if (!m || !cache || !provider || !out) return ETW_E_INVALID_ARG;
    *out = NULL;
    uint8_t key[ETW_DESCRIPTOR_KEY_SIZE];
    etw_key_descriptor(key, provider, id, version);
    uint64_t h = etw_cache_hash(key, sizeof key);
    uint8_t w = ptr_size == 4 ? 4 : 8;
    const etw_schema *s = etw_cache_find(cache, m->kind, w, key, sizeof key, h);
    if (s) {
        *out = s;
        return ETW_OK;
    }
    return build(m, cache, w, provider, id, version, key, sizeof key, h, out, why);
}
