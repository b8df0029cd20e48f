/* etw_manifest_xml.c - the XML walk of a manifest: expat handlers that keep
 * a stack of element kinds and record the raw attributes the loader uses,
 * and the replay that calls the same handlers with what expat reported of
 * a built-in manifest at build time (etw_manifest_replay.h).
 * (see etw_manifest_internal.h for how the manifest source is split). */
#include "etw_manifest_internal.h"
#include "etw_manifest_replay.h"

/* Element kinds of the parser's stack. */
enum {
    K_IGNORE = 0,
    K_ROOT,
    K_OUTER, /* outside any <events>: <instrumentation>, <events> and
              * <localization> are looked for in it */
    K_MANIFEST,
    K_INSTR,
    K_EVENTS_TOP,
    K_PROVIDER,
    K_P_EVENTS,
    K_EVENT,
    K_P_TEMPLATES,
    K_TEMPLATE,
    K_STRUCT,
    K_DATA,
    K_P_MAPS,
    K_MAP,
    K_MAPENT,
    K_P_TASKS,
    K_TASK,
    K_TASK_OPCODES,
    K_OPCODE,
    K_P_OPCODES,
    K_P_KEYWORDS,
    K_KEYWORD,
    K_P_LEVELS,
    K_LEVEL,
    K_P_CHANNELS,
    K_CHANNEL,
    K_LOCALIZATION,
    K_RESOURCES,
    K_STRINGTABLE,
    K_STRING
};

static size_t nt_bytes(const nametab *t) { return t->s ? ((size_t)t->mask + 1) * sizeof *t->s : 0; }

int etw_mf_within_budget(loader *L) {
    size_t held = L->vec_bytes + L->doc->ar.bytes + nt_bytes(&L->names) + nt_bytes(&L->strtab) + nt_bytes(&L->reftab);
    if (held <= ETW_MANIFEST_MAX_MEMORY) return 1;
    if (L->st == ETW_OK) {
        L->st = ETW_E_LIMIT;
        L->reason = "loading the manifest needs more than " ETW_MF_STR(ETW_MANIFEST_MAX_MEMORY_MIB)
                    " MiB of memory (the limit)";
    }
    return 0;
}

void *etw_mf_vec_push(loader *L, vec *x, size_t sz) {
    if (x->n == x->cap) {
        /* grown by half (not doubled): a large table wastes less room */
        uint32_t ncap = x->cap ? (x->cap > MAX_RECORDS / 3 * 2 ? MAX_RECORDS : x->cap + x->cap / 2) : 16;
        if (ncap <= x->n) {
            if (L->st == ETW_OK) L->st = ETW_E_LIMIT, L->reason = "too many elements";
            return NULL;
        }
        size_t more = (size_t)(ncap - x->cap) * sz;
        L->vec_bytes += more;
        void *p = etw_mf_within_budget(L) ? etw_calloc(&L->m->al, ncap, sz) : NULL;
        if (!p) {
            L->vec_bytes -= more; /* L->st says why: ETW_E_LIMIT over the bound */
            if (L->st == ETW_OK) L->st = ETW_E_NOMEM, L->reason = "out of memory";
            return NULL;
        }
        if (x->n) memcpy(p, x->v, (size_t)x->n * sz);
        etw_free(&L->m->al, x->v);
        x->v = p;
        x->cap = ncap;
    }
    void *r = (unsigned char *)x->v + (size_t)x->n * sz;
    memset(r, 0, sz);
    x->n++;
    return r;
}

void etw_mf_vec_free(loader *L, vec *x, size_t sz) {
    L->vec_bytes -= (size_t)x->cap * sz;
    etw_free(&L->m->al, x->v);
    x->v = NULL;
    x->n = x->cap = 0;
}

static void stop(loader *L, etw_status st, const char *reason) {
    if (L->st == ETW_OK) {
        L->st = st;
        L->reason = reason;
    }
    if (L->xp) XML_StopParser(L->xp, XML_FALSE); /* the replay stops on L->st */
}

/* Copy the wanted attributes (by local name) into out[] as arena strings,
 * without surrounding white space unless keep_space (string values). */
static int get_attrs_ex(loader *L, const XML_Char **atts, const char *const *names, const char **out,
                        int k, int keep_space) {
    for (int j = 0; j < k; j++) out[j] = NULL;
    for (int i = 0; atts[i]; i += 2) {
        const char *ln = etw_mf_local(atts[i]);
        for (int j = 0; j < k; j++) {
            if (!out[j] && strcmp(ln, names[j]) == 0) {
                size_t n;
                const char *v = keep_space ? (n = strlen(atts[i + 1]), atts[i + 1]) : trim(atts[i + 1], &n);
                out[j] = etw_mf_ar_strndup(&L->doc->ar, v, n);
                if (!out[j]) {
                    stop(L, ETW_E_NOMEM, "out of memory");
                    return 0;
                }
                break;
            }
        }
    }
    return 1;
}

static int get_attrs(loader *L, const XML_Char **atts, const char *const *names, const char **out, int k) {
    return get_attrs_ex(L, atts, names, out, k, 0);
}

static uint8_t child_kind(uint8_t parent, const char *n) {
    switch (parent) {
    /* Outside <events>, wherever they sit: an instrumentation manifest is
     * <instrumentationManifest><instrumentation><events>; a Windows
     * component manifest is <assembly> with <instrumentation><events> (and
     * <localization>) among its other children. */
    case K_ROOT:
    case K_OUTER:
    case K_MANIFEST:
    case K_INSTR:
        if (!strcmp(n, "instrumentationManifest")) return K_MANIFEST;
        if (!strcmp(n, "instrumentation")) return K_INSTR;
        if (!strcmp(n, "events")) return K_EVENTS_TOP;
        if (!strcmp(n, "localization")) return K_LOCALIZATION;
        return K_OUTER;
    case K_EVENTS_TOP:
        return !strcmp(n, "provider") ? K_PROVIDER : K_IGNORE;
    case K_PROVIDER:
        if (!strcmp(n, "events")) return K_P_EVENTS;
        if (!strcmp(n, "templates")) return K_P_TEMPLATES;
        if (!strcmp(n, "maps")) return K_P_MAPS;
        if (!strcmp(n, "tasks")) return K_P_TASKS;
        if (!strcmp(n, "opcodes")) return K_P_OPCODES;
        if (!strcmp(n, "keywords")) return K_P_KEYWORDS;
        if (!strcmp(n, "levels")) return K_P_LEVELS;
        if (!strcmp(n, "channels")) return K_P_CHANNELS;
        return K_IGNORE;
    case K_P_EVENTS:
        return !strcmp(n, "event") ? K_EVENT : K_IGNORE;
    case K_P_TEMPLATES:
        return !strcmp(n, "template") ? K_TEMPLATE : K_IGNORE;
    case K_TEMPLATE:
    case K_STRUCT:
        if (!strcmp(n, "data")) return K_DATA;
        if (!strcmp(n, "struct")) return K_STRUCT;
        return K_IGNORE; /* UserData and anything else */
    case K_P_MAPS:
        return !strcmp(n, "valueMap") || !strcmp(n, "bitMap") ? K_MAP : K_IGNORE;
    case K_MAP:
        return !strcmp(n, "map") ? K_MAPENT : K_IGNORE;
    case K_P_TASKS:
        return !strcmp(n, "task") ? K_TASK : K_IGNORE;
    case K_TASK:
        return !strcmp(n, "opcodes") ? K_TASK_OPCODES : K_IGNORE;
    case K_TASK_OPCODES:
    case K_P_OPCODES:
        return !strcmp(n, "opcode") ? K_OPCODE : K_IGNORE;
    case K_P_KEYWORDS:
        return !strcmp(n, "keyword") ? K_KEYWORD : K_IGNORE;
    case K_P_LEVELS:
        return !strcmp(n, "level") ? K_LEVEL : K_IGNORE;
    case K_P_CHANNELS:
        return !strcmp(n, "channel") || !strcmp(n, "importChannel") ? K_CHANNEL : K_IGNORE;
    case K_LOCALIZATION:
        return !strcmp(n, "resources") ? K_RESOURCES : K_IGNORE;
    case K_RESOURCES:
        return !strcmp(n, "stringTable") ? K_STRINGTABLE : K_IGNORE;
    case K_STRINGTABLE:
        return !strcmp(n, "string") ? K_STRING : K_IGNORE;
    default:
        return K_IGNORE;
    }
}

static p_provider *cur_prov(loader *L) {
    return L->cur_prov >= 0 ? &VAT(p_provider, &L->provs, L->cur_prov) : NULL;
}

/* One template item (data or struct); returns the kind to push. */
static uint8_t start_item(loader *L, const XML_Char **atts, uint8_t k) {
    p_provider *pp = cur_prov(L);
    if (!pp || L->cur_tmpl < 0) return K_IGNORE;
    p_tmpl *t = &VAT(p_tmpl, &pp->tmpls, L->cur_tmpl);
    if (t->too_deep || t->too_big) return K_IGNORE;
    if (k == K_STRUCT && L->sdepth >= MAX_STRUCT_DEPTH) {
        t->too_deep = 1;
        return K_IGNORE;
    }
    if (t->n >= MAX_TEMPLATE_ITEMS) {
        t->too_big = 1;
        return K_IGNORE;
    }
    static const char *const names[] = {"name", "inType", "outType", "count", "length", "map"};
    const char *a[6];
    if (!get_attrs(L, atts, names, a, 6)) return K_IGNORE;
    uint32_t line = cur_line(L);
    p_item *it = etw_mf_vec_push(L, &pp->items, sizeof *it);
    if (!it) {
        stop(L, L->st, L->reason);
        return K_IGNORE;
    }
    t = &VAT(p_tmpl, &pp->tmpls, L->cur_tmpl);
    it->name = a[0];
    it->in = a[1];
    it->out = a[2];
    it->count = a[3];
    it->length = a[4];
    it->map = a[5];
    it->parent = L->sdepth ? L->sparent[L->sdepth - 1] : -1;
    it->line = line;
    it->is_struct = k == K_STRUCT;
    uint32_t rel = t->n++;
    if (k == K_STRUCT) L->sparent[L->sdepth++] = (int32_t)rel;
    return k;
}

static p_named *push_named(loader *L, vec *v, const XML_Char **atts, const char *n0, const char *n1,
                           const char *n2) {
    const char *names[4] = {n0, n1, "message", n2};
    const char *a[4];
    if (!get_attrs(L, atts, names, a, n2 ? 4 : 3)) return NULL;
    uint32_t line = cur_line(L);
    p_named *e = etw_mf_vec_push(L, v, sizeof *e);
    if (!e) {
        stop(L, L->st, L->reason);
        return NULL;
    }
    e->name = a[0];
    e->value = a[1];
    e->message = a[2];
    e->extra = n2 ? a[3] : NULL;
    e->task = -1;
    e->line = line;
    return e;
}

static void XMLCALL on_start(void *ud, const XML_Char *name, const XML_Char **atts) {
    loader *L = ud;
    if (L->st != ETW_OK) return;
    /* Stop, not skip: expat keeps every open element (its name and
     * bindings), so skipping deeper ones still cost memory (10^6 nested
     * elements: 290 MB). */
    if (L->depth >= MAX_DEPTH) {
        stop(L, ETW_E_LIMIT, "elements are nested more than " ETW_MF_STR(MAX_DEPTH) " deep (the limit)");
        return;
    }
    for (int i = 0; atts[i]; i += 2) {
        if (strlen(atts[i + 1]) > MAX_ATTR_BYTES) {
            stop(L, ETW_E_LIMIT, "an attribute value is longer than 1 MiB (the limit)");
            return;
        }
    }
    if (!etw_mf_within_budget(L)) {
        stop(L, L->st, L->reason);
        return;
    }
    uint8_t parent = L->depth == 0 ? K_ROOT : L->kinds[L->depth - 1];
    uint8_t k = parent == K_IGNORE ? K_IGNORE : child_kind(parent, etw_mf_local(name));
    p_provider *pp = cur_prov(L);
    switch (k) {
    case K_EVENTS_TOP:
        L->events_elements++;
        break;
    case K_PROVIDER: {
        static const char *const names[] = {"name", "guid"};
        const char *a[2];
        if (!get_attrs(L, atts, names, a, 2)) return;
        uint32_t line = cur_line(L);
        p_provider *np = etw_mf_vec_push(L, &L->provs, sizeof *np);
        if (!np) { stop(L, L->st, L->reason); return; }
        np->name = a[0];
        np->guid = a[1];
        np->line = line;
        L->cur_prov = (int32_t)(L->provs.n - 1);
        break;
    }
    case K_EVENT: {
        if (!pp) break;
        static const char *const names[] = {"value",    "version", "level",    "task",   "opcode",
                                            "keywords", "channel", "template", "symbol", "message",
                                            "name"};
        const char *a[11];
        if (!get_attrs(L, atts, names, a, 11)) return;
        uint32_t line = cur_line(L);
        p_event *e = etw_mf_vec_push(L, &pp->events, sizeof *e);
        if (!e) { stop(L, L->st, L->reason); return; }
        e->value = a[0];
        e->version = a[1];
        e->level = a[2];
        e->task = a[3];
        e->opcode = a[4];
        e->keywords = a[5];
        e->channel = a[6];
        e->tmpl = a[7];
        e->symbol = a[8];
        e->message = a[9];
        e->name = a[10];
        e->line = line;
        break;
    }
    case K_TEMPLATE: {
        if (!pp) break;
        static const char *const names[] = {"tid"};
        const char *a[1];
        if (!get_attrs(L, atts, names, a, 1)) return;
        uint32_t line = cur_line(L);
        p_tmpl *t = etw_mf_vec_push(L, &pp->tmpls, sizeof *t);
        if (!t) { stop(L, L->st, L->reason); return; }
        t->tid = a[0];
        t->line = line;
        t->first = pp->items.n;
        L->cur_tmpl = (int32_t)(pp->tmpls.n - 1);
        L->sdepth = 0;
        break;
    }
    case K_DATA:
    case K_STRUCT:
        k = start_item(L, atts, k);
        if (L->st != ETW_OK) return;
        break;
    case K_MAP: {
        if (!pp) break;
        static const char *const names[] = {"name"};
        const char *a[1];
        if (!get_attrs(L, atts, names, a, 1)) return;
        uint32_t line = cur_line(L);
        p_map *mp = etw_mf_vec_push(L, &pp->maps, sizeof *mp);
        if (!mp) { stop(L, L->st, L->reason); return; }
        mp->name = a[0];
        mp->line = line;
        mp->first = pp->mapents.n;
        mp->bitmap = strcmp(etw_mf_local(name), "bitMap") == 0;
        L->cur_map = (int32_t)(pp->maps.n - 1);
        break;
    }
    case K_MAPENT: {
        if (!pp || L->cur_map < 0) break;
        static const char *const names[] = {"value", "message"};
        const char *a[2];
        if (!get_attrs(L, atts, names, a, 2)) return;
        uint32_t line = cur_line(L);
        p_mapent *e = etw_mf_vec_push(L, &pp->mapents, sizeof *e);
        if (!e) { stop(L, L->st, L->reason); return; }
        e->value = a[0];
        e->message = a[1];
        e->line = line;
        VAT(p_map, &pp->maps, L->cur_map).n++;
        break;
    }
    case K_TASK:
        if (!pp) break;
        if (!push_named(L, &pp->tasks, atts, "name", "value", NULL)) return;
        L->cur_task = (int32_t)(pp->tasks.n - 1);
        break;
    case K_OPCODE: {
        if (!pp) break;
        p_named *e = push_named(L, &pp->opcodes, atts, "name", "value", NULL);
        if (!e) return;
        e->task = parent == K_TASK_OPCODES ? L->cur_task : -1;
        break;
    }
    case K_KEYWORD:
        if (pp && !push_named(L, &pp->keywords, atts, "name", "mask", NULL)) return;
        break;
    case K_LEVEL:
        if (pp && !push_named(L, &pp->levels, atts, "name", "value", NULL)) return;
        break;
    case K_CHANNEL: {
        if (!pp) break;
        p_named *e = push_named(L, &pp->channels, atts, "chid", "value", "name");
        if (!e) return;
        e->import = strcmp(etw_mf_local(name), "importChannel") == 0;
        break;
    }
    case K_RESOURCES: {
        static const char *const names[] = {"culture"};
        const char *a[1];
        if (!get_attrs(L, atts, names, a, 1)) return;
        L->cur_group = (int32_t)L->groups++;
        if (L->en_us_group < 0 && a[0] && eq_nocase(a[0], "en-US")) L->en_us_group = L->cur_group;
        break;
    }
    case K_STRING: {
        if (L->cur_group < 0) break;
        static const char *const names[] = {"id", "value"};
        const char *a[2];
        if (!get_attrs_ex(L, atts, names, a, 2, 1)) return;
        if (!a[0] || !a[1]) break;
        p_string *s = etw_mf_vec_push(L, &L->strings, sizeof *s);
        if (!s) { stop(L, L->st, L->reason); return; }
        s->id = a[0];
        s->value = a[1];
        s->group = (uint32_t)L->cur_group;
        break;
    }
    default:
        break;
    }
    L->kinds[L->depth++] = k;
}

static void XMLCALL on_end(void *ud, const XML_Char *name) {
    loader *L = ud;
    (void)name;
    if (L->st != ETW_OK || L->depth == 0) return;
    L->depth--;
    switch (L->kinds[L->depth]) {
    case K_PROVIDER: L->cur_prov = -1; break;
    case K_TEMPLATE: L->cur_tmpl = -1; L->sdepth = 0; break;
    case K_STRUCT: if (L->sdepth) L->sdepth--; break;
    case K_MAP: L->cur_map = -1; break;
    case K_TASK: L->cur_task = -1; break;
    case K_RESOURCES: L->cur_group = -1; break;
    default: break;
    }
}

static void XMLCALL on_doctype(void *ud, const XML_Char *name, const XML_Char *sysid,
                               const XML_Char *pubid, int has_internal_subset) {
    (void)name, (void)sysid, (void)pubid, (void)has_internal_subset;
    stop((loader *)ud, ETW_E_CORRUPT, "document type declarations are not allowed in a manifest");
}


enum XML_Status etw_mf_xml_parse(loader *L, const char *xml, size_t len) {
    XML_SetUserData(L->xp, L);
    XML_SetElementHandler(L->xp, on_start, on_end);
    XML_SetStartDoctypeDeclHandler(L->xp, on_doctype);
    enum XML_Status xs = XML_STATUS_OK;
    size_t off = 0;
    const size_t chunk = (size_t)1 << 30;
    do {
        size_t n = len - off > chunk ? chunk : len - off;
        int final = off + n == len;
        xs = XML_Parse(L->xp, xml ? xml + off : "", (int)n, final);
        off += n;
    } while (xs == XML_STATUS_OK && off < len);
    return xs;
}

/* ---- the replay of a pre-parsed manifest ------------------------------------- */

/* An unsigned LEB128 of at most 32 bits at *p, before end. */
static int mr_varint(const unsigned char **p, const unsigned char *end, uint32_t *out) {
    uint32_t v = 0;
    for (unsigned shift = 0; shift <= 28; shift += 7) {
        if (*p == end) return 0;
        unsigned c = *(*p)++;
        if (shift == 28 && c > 0x0F) return 0; /* past 32 bits, or a sixth byte */
        v |= (uint32_t)(c & 0x7F) << shift;
        if (!(c & 0x80)) {
            *out = v;
            return 1;
        }
    }
    return 0;
}

/* A string of the table tab[0..tlen), whose last byte is a NUL: any offset
 * in it starts a string that ends inside it. */
static int mr_str(const unsigned char **p, const unsigned char *end, const char *tab, uint32_t tlen,
                  const char **out) {
    uint32_t off;
    if (!mr_varint(p, end, &off) || off >= tlen) return 0;
    *out = tab + off;
    return 1;
}

/* The limits of the XML walk hold here too, because they are checked where
 * the replay calls the same code: MAX_DEPTH, MAX_ATTR_BYTES and the memory
 * budget in on_start. A document type declaration (on_doctype) cannot occur:
 * the generator (tools/embed/etw_embed.c) parses with the same handler and
 * fails the build on one, and the records have no form for it. The checks
 * here are those of expat's well-formedness that the handlers rely on: one
 * root element, every end matching an open start, nothing left open. */
etw_status etw_mf_replay(loader *L, const unsigned char *rec, size_t len) {
    const unsigned char *p = rec, *end = rec ? rec + len : rec;
    const char *atts[2 * ETW_MR_MAX_ATTRS + 1];
    const char *names[MAX_DEPTH]; /* of the open elements, for on_end */
    uint32_t tlen = 0, line = 0, open = 0, roots = 0;
    if (!rec || len < ETW_MR_MAGIC_LEN || memcmp(rec, ETW_MR_MAGIC, ETW_MR_MAGIC_LEN) != 0) {
        stop(L, ETW_E_CORRUPT, "not a pre-parsed manifest (no EMR1 magic)");
        return L->st;
    }
    p += ETW_MR_MAGIC_LEN;
    if (!mr_varint(&p, end, &tlen) || tlen == 0 || tlen > (size_t)(end - p) || p[tlen - 1] != 0) {
        stop(L, ETW_E_CORRUPT, "the pre-parsed manifest's string table is cut short");
        return L->st;
    }
    const char *tab = (const char *)p;
    p += tlen;
    while (p < end && L->st == ETW_OK) {
        unsigned tag = *p++;
        if (tag == ETW_MR_TAG_END) {
            if (open == 0) {
                stop(L, ETW_E_CORRUPT, "the pre-parsed manifest ends an element it did not start");
                break;
            }
            open--;
            on_end(L, names[open]);
            continue;
        }
        unsigned n = tag - 1;
        if (n > ETW_MR_MAX_ATTRS) {
            stop(L, ETW_E_CORRUPT, "the pre-parsed manifest holds an unknown record");
            break;
        }
        if (open == 0 && roots++) {
            stop(L, ETW_E_CORRUPT, "the pre-parsed manifest has a second root element");
            break;
        }
        const char *name;
        uint32_t delta;
        int ok = mr_str(&p, end, tab, tlen, &name) && mr_varint(&p, end, &delta) && delta <= UINT32_MAX - line;
        for (unsigned i = 0; ok && i < 2 * n; i++) ok = mr_str(&p, end, tab, tlen, &atts[i]);
        if (!ok) {
            stop(L, ETW_E_CORRUPT, "the pre-parsed manifest holds a malformed start record");
            break;
        }
        atts[2 * n] = NULL;
        line += delta;
        L->line = line;
        on_start(L, name, atts);
        if (L->st != ETW_OK) break;
        /* on_start stops at MAX_DEPTH open elements (ETW_E_LIMIT), so one
         * it took is at most that deep: names[] holds it */
        if (open >= MAX_DEPTH) {
            stop(L, ETW_E_LIMIT, "elements are nested more than " ETW_MF_STR(MAX_DEPTH) " deep (the limit)");
            break;
        }
        names[open++] = name;
    }
    if (L->st == ETW_OK && (roots == 0 || open != 0))
        stop(L, ETW_E_CORRUPT,
             roots ? "the pre-parsed manifest is cut short (an element is not ended)"
                   : "the pre-parsed manifest has no element");
    return L->st;
}
