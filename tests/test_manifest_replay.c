/* test_manifest_replay.c - the built-in manifest's pre-parsed records
 * (etw_manifest_replay.h, made at build time by tools/embed/etw_embed.c, one
 * part per provider, and loaded by etw_manifest_load_replay; here every part
 * into one set, in order) against the XML they were made from,
 * loaded through expat (etw_manifest_load_xml): the same providers, events,
 * descriptor values, names, symbols, messages, lines, and for every
 * (provider, id, version) at both pointer sizes the same schema (properties
 * with their types, flags, counts, lengths, struct members, maps and their
 * entries). The comparison is shown to catch a replay with one attribute
 * dropped or one line moved in one part. Then malformed records (cut at many lengths,
 * bytes changed, each kind of bad record) fail cleanly, loading nothing,
 * and the loader's limits hold in the replay as in the XML walk. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "etw_test.h"
#include "schema/etw_cache.h"
#include "source/etw_builtin_manifests.h"
#include "source/etw_manifest.h"
#include "source/etw_manifest_ext.h"
#include "source/etw_manifest_internal.h"
#include "source/etw_manifest_replay.h"

#define CLR_XML ETW_TEST_DATA_DIR "/../../data/manifests/ClrEtwAll.man"
#define ORIGIN "the built-in ClrEtwAll.man"

/* ---- diagnostics ------------------------------------------------------------ */

typedef struct diags {
    int n, errors;
    char text[4096]; /* the messages with their lines, one per line */
} diags;

static void on_diag(void *ctx, const etw_diag *d) {
    diags *x = ctx;
    x->n++;
    if (d->status < 0) x->errors++;
    size_t used = strlen(x->text);
    snprintf(x->text + used, sizeof x->text - used, "%d %llu %s\n", (int)d->status,
             (unsigned long long)d->file_offset, d->message);
}

static etw_manifest_set *new_set(diags *dg) {
    etw_manifest_options o;
    memset(&o, 0, sizeof o);
    o.kind = ETW_SOURCE_BUILTIN;
    o.on_diag = on_diag;
    o.diag_ctx = dg;
    etw_manifest_set *m = NULL;
    ETW_CHECK_INT(etw_manifest_set_new(&m, &o), ETW_OK);
    return m;
}

static etw_builtin_manifest builtin(void) {
    etw_builtin_manifest b;
    memset(&b, 0, sizeof b);
    ETW_CHECK_INT(etw_builtin_manifest_get(0, &b), ETW_OK);
    return b;
}

/* The records of part j of the built-in manifest (provider j's). */
typedef struct part {
    const unsigned char *rec;
    size_t len;
} part;

static part part_of(size_t j) {
    etw_builtin_manifest b = builtin();
    part p = {NULL, 0};
    ETW_CHECK_INT(etw_builtin_manifest_part(&b, j, &p.rec, &p.len), ETW_OK);
    return p;
}

/* ---- the comparison ------------------------------------------------------------ */

typedef struct cmp {
    etw_manifest_set *x, *r; /* XML through expat, the replay */
    etw_cache *cx, *cr;
    int quiet;
    long events, schemas, props, map_entries;
    long mismatches;
    const etw_guid *g;
    uint16_t id;
    uint8_t ver;
} cmp;

static int str_eq(const char *a, const char *b) {
    if (!a || !b) return a == b;
    return strcmp(a, b) == 0;
}

static void diff(cmp *c, const char *what, const char *a, const char *b) {
    if (!c->quiet && c->mismatches < 12)
        fprintf(stderr, "  event %u v%u: %s: xml %s, replay %s\n", c->id, c->ver, what, a, b);
    c->mismatches++;
}

static void sdiff(cmp *c, const char *what, const char *a, const char *b) {
    if (!str_eq(a, b)) diff(c, what, a ? a : "(null)", b ? b : "(null)");
}

static void ndiff(cmp *c, const char *what, uint64_t a, uint64_t b) {
    if (a == b) return;
    char sa[32], sb[32];
    snprintf(sa, sizeof sa, "%llu", (unsigned long long)a);
    snprintf(sb, sizeof sb, "%llu", (unsigned long long)b);
    diff(c, what, sa, sb);
}

static void compare_maps(cmp *c, const etw_map *a, const etw_map *b) {
    if (!a || !b) {
        if (a != b) diff(c, "map", a ? a->name : "(none)", b ? b->name : "(none)");
        return;
    }
    sdiff(c, "map name", a->name, b->name);
    ndiff(c, "map flags", a->flags, b->flags);
    ndiff(c, "map count", a->count, b->count);
    for (uint32_t i = 0; i < a->count && i < b->count; i++) {
        ndiff(c, "map value", a->entries[i].value, b->entries[i].value);
        sdiff(c, "map entry", a->entries[i].name, b->entries[i].name);
        c->map_entries++;
    }
}

static void compare_schemas(cmp *c, uint8_t ptr_size) {
    const etw_schema *a = NULL, *b = NULL;
    etw_status sa = etw_manifest_resolve(c->x, c->cx, c->g, c->id, c->ver, ptr_size, &a, NULL);
    etw_status sb = etw_manifest_resolve(c->r, c->cr, c->g, c->id, c->ver, ptr_size, &b, NULL);
    ndiff(c, "resolve status", (uint64_t)(int64_t)sa, (uint64_t)(int64_t)sb);
    if (!a || !b) {
        if (a != b) diff(c, "resolved", a ? "yes" : "no", b ? "yes" : "no");
        return;
    }
    c->schemas++;
    sdiff(c, "provider", a->provider_name, b->provider_name);
    sdiff(c, "event name", a->event_name, b->event_name);
    sdiff(c, "task name", a->task_name, b->task_name);
    sdiff(c, "opcode name", a->opcode_name, b->opcode_name);
    sdiff(c, "task symbol", a->task_symbol, b->task_symbol);
    sdiff(c, "opcode symbol", a->opcode_symbol, b->opcode_symbol);
    sdiff(c, "event symbol", a->event_symbol, b->event_symbol);
    sdiff(c, "message", a->message, b->message);
    ndiff(c, "source", a->source, b->source);
    ndiff(c, "id", a->event_id, b->event_id);
    ndiff(c, "version", a->version, b->version);
    ndiff(c, "level", a->level, b->level);
    ndiff(c, "opcode", a->opcode, b->opcode);
    ndiff(c, "task", a->task, b->task);
    ndiff(c, "channel", a->channel, b->channel);
    ndiff(c, "keywords", a->keywords, b->keywords);
    ndiff(c, "tags", a->tags, b->tags);
    ndiff(c, "prop count", a->prop_count, b->prop_count);
    ndiff(c, "top count", a->top_count, b->top_count);
    ndiff(c, "subject prop", a->subject_prop, b->subject_prop);
    ndiff(c, "subject off", a->subject_off, b->subject_off);
    ndiff(c, "subject flags", a->subject_flags, b->subject_flags);
    for (uint16_t i = 0; i < a->prop_count && i < b->prop_count; i++) {
        const etw_property *p = &a->props[i], *q = &b->props[i];
        c->props++;
        sdiff(c, "prop name", p->name, q->name);
        ndiff(c, "in type", p->in_type, q->in_type);
        ndiff(c, "out type", p->out_type, q->out_type);
        ndiff(c, "prop flags", p->flags, q->flags);
        ndiff(c, "struct first", p->struct_first, q->struct_first);
        ndiff(c, "struct count", p->struct_count, q->struct_count);
        ndiff(c, "count", p->count, q->count);
        ndiff(c, "length", p->length, q->length);
        ndiff(c, "prop tags", p->tags, q->tags);
        compare_maps(c, p->map, q->map);
    }
}

static const mf_provider *provider_of(const etw_manifest_set *m, const etw_guid *g) {
    for (uint32_t i = 0; m->pslots && i <= m->pmask; i++)
        if (m->pslots[i] && etw_guid_equal(&m->pslots[i]->guid, g)) return m->pslots[i];
    return NULL;
}

/* The compiled events themselves (their lines too, which only messages
 * show), then the schemas at both pointer sizes. */
static int compare_event(void *ctx, const etw_guid *g, uint16_t id, uint8_t ver) {
    cmp *c = ctx;
    c->g = g;
    c->id = id;
    c->ver = ver;
    c->events++;
    const mf_provider *px = provider_of(c->x, g), *pr = provider_of(c->r, g);
    if (!px || !pr) {
        diff(c, "provider", px ? "present" : "absent", pr ? "present" : "absent");
        return 0;
    }
    const mf_event *a = NULL, *b = NULL;
    for (uint32_t i = 0; i < px->nevents && !a; i++)
        if (px->events[i].id == id && px->events[i].version == ver) a = &px->events[i];
    for (uint32_t i = 0; i < pr->nevents && !b; i++)
        if (pr->events[i].id == id && pr->events[i].version == ver) b = &pr->events[i];
    if (!a || !b) {
        diff(c, "event", a ? "present" : "absent", b ? "present" : "absent");
        return 0;
    }
    ndiff(c, "event line", a->line, b->line);
    ndiff(c, "provider line", px->line, pr->line);
    ndiff(c, "provider order", px->order, pr->order);
    ndiff(c, "provider events", px->nevents, pr->nevents);
    sdiff(c, "provider origin", px->doc->origin, pr->doc->origin);
    sdiff(c, "compiled event name", a->name, b->name);
    sdiff(c, "compiled task name", a->task_name, b->task_name);
    sdiff(c, "compiled opcode name", a->opcode_name, b->opcode_name);
    sdiff(c, "compiled message", a->message, b->message);
    ndiff(c, "compiled keywords", a->keywords, b->keywords);
    compare_schemas(c, 8);
    compare_schemas(c, 4);
    return 0;
}

typedef struct key_list {
    etw_guid g[2048];
    uint32_t id[2048];
    size_t n;
} key_list;

static int list_event(void *ctx, const etw_guid *g, uint16_t id, uint8_t ver) {
    key_list *l = ctx;
    if (l->n < 2048) {
        l->g[l->n] = *g;
        l->id[l->n] = (uint32_t)id << 8 | ver;
    }
    l->n++;
    return 0;
}

/* Mismatches of set r (and its diagnostics dr) against x (and dx). */
static long compare_sets(etw_manifest_set *x, const diags *dx, etw_manifest_set *r, const diags *dr, int quiet,
                         cmp *out) {
    cmp c;
    memset(&c, 0, sizeof c);
    c.x = x;
    c.r = r;
    c.quiet = quiet;
    ETW_CHECK_INT(etw_cache_new(&c.cx, NULL), ETW_OK);
    ETW_CHECK_INT(etw_cache_new(&c.cr, NULL), ETW_OK);
    ndiff(&c, "providers", etw_manifest_provider_count(x), etw_manifest_provider_count(r));
    ndiff(&c, "events", etw_manifest_event_count(x), etw_manifest_event_count(r));
    ndiff(&c, "problems", etw_manifest_problem_count(x), etw_manifest_problem_count(r));
    sdiff(&c, "diagnostics", dx->text, dr->text);
    /* the same keys in the same order (providers in load order, events in
     * manifest order) */
    static key_list lx, lr;
    lx.n = lr.n = 0;
    etw_manifest_foreach_event(x, list_event, &lx);
    etw_manifest_foreach_event(r, list_event, &lr);
    ndiff(&c, "keys", lx.n, lr.n);
    for (size_t i = 0; i < lx.n && i < lr.n && i < 2048; i++)
        if (!etw_guid_equal(&lx.g[i], &lr.g[i]) || lx.id[i] != lr.id[i]) {
            ndiff(&c, "key order", lx.id[i], lr.id[i]);
            break;
        }
    etw_manifest_foreach_event(x, compare_event, &c);
    etw_cache_free(c.cx);
    etw_cache_free(c.cr);
    if (out) *out = c;
    return c.mismatches;
}

/* ---- records, read and written as the test's own code ------------------------ */

typedef struct buf {
    unsigned char *b;
    size_t n, cap;
} buf;

static void put(buf *o, unsigned c) {
    if (o->n == o->cap) {
        o->cap = o->cap ? o->cap * 2 : 4096;
        o->b = realloc(o->b, o->cap);
        if (!o->b) abort();
    }
    o->b[o->n++] = (unsigned char)c;
}

static void put_var(buf *o, uint32_t v) {
    for (; v >= 0x80; v >>= 7) put(o, (v & 0x7F) | 0x80);
    put(o, v);
}

static uint32_t get_var(const unsigned char **p) {
    uint32_t v = 0;
    for (unsigned s = 0;; s += 7) {
        unsigned c = *(*p)++;
        v |= (uint32_t)(c & 0x7F) << s;
        if (!(c & 0x80)) return v;
    }
}

/* A copy of the records of part pt in which the nth start of an element
 * named elem loses its attribute named drop (NULL: none) and has its line
 * moved by dline (the next element's line stays). 0 when there is no such
 * element. */
static int mutate(part pt, const char *elem, int nth, const char *drop, int dline, buf *o) {
    const unsigned char *p = pt.rec + ETW_MR_MAGIC_LEN, *end = pt.rec + pt.len;
    uint32_t tlen = get_var(&p);
    const char *tab = (const char *)p;
    p += tlen;
    memset(o, 0, sizeof *o);
    for (size_t i = 0; i < (size_t)(p - pt.rec); i++) put(o, pt.rec[i]);
    int seen = 0, done = 0;
    int64_t carry = 0; /* taken from the next start's line delta */
    while (p < end) {
        unsigned tag = *p++;
        if (tag == ETW_MR_TAG_END) {
            put(o, tag);
            continue;
        }
        unsigned n = tag - 1;
        uint32_t name = get_var(&p);
        int64_t delta = (int64_t)get_var(&p) - carry;
        carry = 0;
        uint32_t att[2 * ETW_MR_MAX_ATTRS];
        for (unsigned i = 0; i < 2 * n; i++) att[i] = get_var(&p);
        int hit = !done && strcmp(tab + name, elem) == 0 && seen++ == nth;
        unsigned skip = 2 * n;
        if (hit) {
            done = 1;
            for (unsigned i = 0; drop && i < n; i++)
                if (strcmp(tab + att[2 * i], drop) == 0) skip = 2 * i;
            delta += dline;
            carry = dline;
        }
        put(o, 1 + n - (skip < 2 * n));
        put_var(o, name);
        put_var(o, (uint32_t)delta);
        for (unsigned i = 0; i < 2 * n; i++)
            if (i != skip && i != skip + 1) put_var(o, att[i]);
    }
    return done;
}

/* Records made by hand: strings kept once, elements as given. */
typedef struct mini {
    char tab[8192];
    uint32_t tlen;
    buf body;
    uint32_t line;
} mini;

static uint32_t m_str(mini *m, const char *s) {
    for (uint32_t off = 0; off < m->tlen; off += (uint32_t)strlen(m->tab + off) + 1)
        if (strcmp(m->tab + off, s) == 0) return off;
    size_t n = strlen(s) + 1;
    if (m->tlen + n > sizeof m->tab) abort();
    memcpy(m->tab + m->tlen, s, n);
    m->tlen += (uint32_t)n;
    return m->tlen - (uint32_t)n;
}

/* atts: name, value, ..., NULL */
static void m_start(mini *m, const char *name, uint32_t line, const char *const *atts) {
    unsigned n = 0;
    while (atts && atts[2 * n]) n++;
    put(&m->body, 1 + n);
    put_var(&m->body, m_str(m, name));
    put_var(&m->body, line - m->line);
    m->line = line;
    for (unsigned i = 0; i < 2 * n; i++) put_var(&m->body, m_str(m, atts[i]));
}

static void m_end(mini *m) { put(&m->body, ETW_MR_TAG_END); }

/* The records in a buffer of their exact size (so a read past them is
 * AddressSanitizer's to see). */
static unsigned char *m_finish(mini *m, size_t *len) {
    buf o;
    memset(&o, 0, sizeof o);
    for (size_t i = 0; i < ETW_MR_MAGIC_LEN; i++) put(&o, (unsigned char)ETW_MR_MAGIC[i]);
    put_var(&o, m->tlen);
    for (uint32_t i = 0; i < m->tlen; i++) put(&o, (unsigned char)m->tab[i]);
    for (size_t i = 0; i < m->body.n; i++) put(&o, m->body.b[i]);
    free(m->body.b);
    unsigned char *r = malloc(o.n ? o.n : 1);
    if (!r) abort();
    memcpy(r, o.b, o.n);
    free(o.b);
    *len = o.n;
    return r;
}

/* Load records into a new set: the status, the providers loaded, the
 * diagnostics. */
static etw_status load_rec(const unsigned char *rec, size_t len, diags *dg, uint32_t *providers,
                           etw_manifest_set **keep) {
    memset(dg, 0, sizeof *dg);
    etw_manifest_set *m = new_set(dg);
    etw_status s = etw_manifest_load_replay(m, rec, len, ORIGIN, providers);
    if (s != ETW_OK) {
        ETW_CHECK_INT(etw_manifest_provider_count(m), 0);
        ETW_CHECK_INT(dg->errors, 1);
        ETW_CHECK(strstr(dg->text, "nothing of this manifest is loaded") != NULL);
    }
    if (keep)
        *keep = m;
    else
        etw_manifest_set_free(m);
    return s;
}

/* Load every part of the built-in manifest into a new set, in order, part
 * j (when over is not NULL) replaced by over: the first status that is not
 * ETW_OK, the providers loaded, the diagnostics. */
static etw_status load_parts(size_t j, const buf *over, diags *dg, uint32_t *providers, etw_manifest_set **keep) {
    etw_builtin_manifest b = builtin();
    memset(dg, 0, sizeof *dg);
    etw_manifest_set *m = new_set(dg);
    etw_status s = ETW_OK;
    uint32_t total = 0;
    for (size_t k = 0; k < b.nparts; k++) {
        part p = part_of(k);
        if (over && k == j) {
            p.rec = over->b;
            p.len = over->n;
        }
        uint32_t n = 0;
        etw_status sk = etw_manifest_load_replay(m, p.rec, p.len, ORIGIN, &n);
        if (s == ETW_OK) s = sk;
        total += n;
    }
    if (providers) *providers = total;
    if (keep)
        *keep = m;
    else
        etw_manifest_set_free(m);
    return s;
}

/* ---- the tests ------------------------------------------------------------------ */

static etw_manifest_set *load_xml_file(diags *dx) {
    size_t len = 0;
    char *xml = etw_test_read_file(CLR_XML, &len);
    ETW_CHECK(xml != NULL);
    memset(dx, 0, sizeof *dx);
    etw_manifest_set *x = new_set(dx);
    uint32_t np = 0;
    if (xml) ETW_CHECK_INT(etw_manifest_load_xml(x, xml, len, ORIGIN, &np), ETW_OK);
    ETW_CHECK_INT(np, 5);
    free(xml);
    return x;
}

/* The replay of the parts, one after the other, gives what the XML gives,
 * event by event. */
static void test_same_schemas(void) {
    diags dx, dr;
    etw_manifest_set *x = load_xml_file(&dx), *r = NULL;
    uint32_t np = 0;
    ETW_CHECK_INT(load_parts(0, NULL, &dr, &np, &r), ETW_OK);
    ETW_CHECK_INT(np, 5);
    ETW_CHECK_INT(dx.n, 0); /* the built-in manifest loads cleanly */
    cmp c;
    ETW_CHECK_INT(compare_sets(x, &dx, r, &dr, 0, &c), 0);
    /* what was compared: every event of ClrEtwAll.man, twice */
    ETW_CHECK(c.events > 400);
    ETW_CHECK_INT(c.events, etw_manifest_event_count(x));
    ETW_CHECK_INT(c.schemas, 2 * c.events);
    ETW_CHECK(c.props > 3000);
    ETW_CHECK(c.map_entries > 1000);
    printf("compared %ld events, %ld schemas, %ld properties, %ld map entries\n", c.events, c.schemas, c.props,
           c.map_entries);
    etw_manifest_set_free(r);
    etw_manifest_set_free(x);
}

/* The comparison catches a replay that is wrong in one attribute or one
 * line of one part: the test above can fail. */
static void test_comparison_catches(void) {
    diags dx;
    etw_manifest_set *x = load_xml_file(&dx);
    static const struct {
        size_t part;
        const char *elem;
        int nth;
        const char *drop;
        int dline;
    } cases[] = {
        {0, "data", 700, "inType", 0},    /* a property's type */
        {1, "data", 100, "name", 0},      /* a property's name */
        {0, "event", 200, "task", 0},     /* an event's task */
        {1, "event", 10, "message", 0},   /* an event's message */
        {0, "map", 40, "message", 0},     /* a map entry's name */
        {0, "opcode", 20, "message", 0},  /* an opcode's display name */
        {0, "string", 500, "value", 0},   /* a string of the string table */
        {4, "event", 20, NULL, 1},        /* an event's line */
        {2, "provider", 0, NULL, -1},     /* a provider's line */
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        buf o;
        part pt = part_of(cases[i].part);
        ETW_CHECK(mutate(pt, cases[i].elem, cases[i].nth, cases[i].drop, cases[i].dline, &o));
        ETW_CHECK(o.n != pt.len || memcmp(o.b, pt.rec, o.n) != 0);
        diags dr;
        etw_manifest_set *r = NULL;
        ETW_CHECK_INT(load_parts(cases[i].part, &o, &dr, NULL, &r), ETW_OK);
        long mm = compare_sets(x, &dx, r, &dr, 1, NULL);
        if (mm == 0) fprintf(stderr, "  mutation %zu (%s) not caught\n", i, cases[i].elem);
        ETW_CHECK(mm > 0);
        etw_manifest_set_free(r);
        free(o.b);
        /* and the unchanged copy compares equal: the mutation is the
         * difference */
        ETW_CHECK(mutate(pt, cases[i].elem, cases[i].nth, NULL, 0, &o));
        ETW_CHECK(o.n == pt.len && memcmp(o.b, pt.rec, o.n) == 0);
        free(o.b);
    }
    etw_manifest_set_free(x);
}

/* Every cut of the records (of the Rundown provider's part) fails as
 * corrupt and loads nothing; bytes changed anywhere fail or load, never read
 * past the records. */
static void test_damaged(void) {
    part b = part_of(1);
    size_t len = b.len;
    unsigned char *copy = malloc(len);
    ETW_CHECK(copy != NULL);
    if (!copy) return;
    diags dg;
    size_t cuts = 0;
    for (size_t n = 0; n < len; n = n < 80 ? n + 1 : n + len / 97 + 13) {
        unsigned char *cut = malloc(n ? n : 1);
        if (!cut) abort();
        memcpy(cut, b.rec, n);
        etw_status s = load_rec(cut, n, &dg, NULL, NULL);
        if (s != ETW_E_CORRUPT) fprintf(stderr, "  cut at %zu: %d\n", n, (int)s);
        ETW_CHECK_INT(s, ETW_E_CORRUPT);
        free(cut);
        cuts++;
    }
    ETW_CHECK(cuts > 150);
    /* one byte short: the root is not ended */
    ETW_CHECK_INT(load_rec(b.rec, len - 1, &dg, NULL, NULL), ETW_E_CORRUPT);
    ETW_CHECK(strstr(dg.text, "cut short") != NULL);
    static const unsigned char flips[] = {0x00, 0xFF, 0x80, 0x41, 0x01};
    int ok = 0, bad = 0;
    for (size_t k = 0; k < 120; k++) {
        size_t at = k < 20 ? k : (k * 7919 + 4) % len;
        memcpy(copy, b.rec, len);
        copy[at] = copy[at] != flips[k % 5] ? flips[k % 5] : (unsigned char)~flips[k % 5];
        uint32_t np = 0;
        etw_status s = load_rec(copy, len, &dg, &np, NULL);
        ETW_CHECK(s == ETW_OK || s == ETW_E_CORRUPT || s == ETW_E_LIMIT);
        if (s == ETW_OK) ok++;
        else bad++;
    }
    ETW_CHECK(bad > 10);
    printf("changed bytes: %d loaded, %d refused\n", ok, bad);
    free(copy);
    ETW_CHECK_INT(etw_manifest_load_replay(NULL, b.rec, len, ORIGIN, NULL), ETW_E_INVALID_ARG);
}

/* Each kind of malformed record, made by hand. */
static void test_malformed(void) {
    static const char *const root_atts[] = {"xmlns", "http://schemas.microsoft.com/win/2004/08/events", NULL};
    diags dg;
    size_t len;
    unsigned char *r;
    struct {
        const char *what;
        int kind;
    } cases[] = {
        {"no EMR1 magic", 0},
        {"string table is cut short", 1}, /* its last byte not a NUL */
        {"string table is cut short", 2}, /* longer than the records */
        {"unknown record", 3},
        {"malformed start record", 4},    /* a string offset past the table */
        {"malformed start record", 5},    /* a varint of six bytes */
        {"malformed start record", 6},    /* a line past UINT32_MAX */
        {"ends an element it did not start", 7},
        {"second root element", 8},
        {"has no element", 9},
        {"cut short", 10}, /* an element not ended */
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        mini m;
        memset(&m, 0, sizeof m);
        int kind = cases[i].kind;
        if (kind != 9) {
            m_start(&m, "instrumentationManifest", 1, root_atts);
            m_start(&m, "instrumentation", 2, NULL);
            if (kind == 3) put(&m.body, 2 + ETW_MR_MAX_ATTRS);
            if (kind == 4) {
                put(&m.body, 1);
                put_var(&m.body, 100000);
                put_var(&m.body, 1);
            }
            if (kind == 5) {
                put(&m.body, 1);
                for (int j = 0; j < 5; j++) put(&m.body, 0x80);
                put(&m.body, 0);
                put_var(&m.body, 1);
            }
            if (kind == 6) {
                put(&m.body, 1);
                put_var(&m.body, 0);
                put_var(&m.body, UINT32_MAX - 1);
            }
            m_end(&m);
            if (kind != 10) m_end(&m);
            if (kind == 7) m_end(&m);
            if (kind == 8) {
                m_start(&m, "instrumentationManifest", 9, NULL);
                m_end(&m);
            }
        }
        if (kind == 9) (void)m_str(&m, "x"); /* a table, no records */
        r = m_finish(&m, &len);
        if (kind == 0) r[0] = 'X';
        if (kind == 1) r[4 + 1 + m.tlen - 1] = 'x'; /* the varint of tlen is one byte here */
        if (kind == 2) r[4] = 0x7F;
        etw_status s = load_rec(r, len, &dg, NULL, NULL);
        ETW_CHECK_INT(s, ETW_E_CORRUPT);
        if (!strstr(dg.text, cases[i].what)) fprintf(stderr, "  case %zu: %s", i, dg.text);
        ETW_CHECK(strstr(dg.text, cases[i].what) != NULL);
        free(r);
    }
}

/* A small manifest as XML and as records (written by hand, with the lines
 * expat reports): the same providers, the same warnings on the same lines;
 * the loader's limits (nesting, attribute length) stop the replay as they
 * stop the XML walk. */
static void test_small_and_limits(void) {
    static const char xml[] =
        "<instrumentationManifest xmlns='http://schemas.microsoft.com/win/2004/08/events'\n"      /* 1 */
        " xmlns:win='http://manifests.microsoft.com/win/2004/08/windows/events'>\n"              /* 2 */
        "<instrumentation><events>\n"                                                            /* 3 */
        "<provider name='P' guid='{11111111-2222-3333-4444-555555555555}' symbol='P'>\n"        /* 4 */
        "<events><event value='1' version='0' template='T' symbol='E1'/>\n"                     /* 5 */
        "<event value='2' version='0' template='Missing' symbol='E2'/></events>\n"              /* 6 */
        "<templates><template tid='T'>\n"                                                        /* 7 */
        "<data name='A' inType='win:NoSuchType'/></template></templates>\n"                     /* 8 */
        "</provider></events></instrumentation></instrumentationManifest>\n";                    /* 9 */
    diags dx, dr;
    memset(&dx, 0, sizeof dx);
    etw_manifest_set *x = new_set(&dx);
    uint32_t nx = 0, nr = 0;
    ETW_CHECK_INT(etw_manifest_load_xml(x, xml, strlen(xml), ORIGIN, &nx), ETW_OK);
    ETW_CHECK_INT(nx, 1);
    ETW_CHECK(dx.n >= 2); /* the missing template, the unknown type */

    mini m;
    memset(&m, 0, sizeof m);
    const char *a_root[] = {"xmlns", "http://schemas.microsoft.com/win/2004/08/events", "xmlns:win",
                            "http://manifests.microsoft.com/win/2004/08/windows/events", NULL};
    const char *a_prov[] = {"name", "P", "guid", "{11111111-2222-3333-4444-555555555555}", "symbol", "P", NULL};
    const char *a_e1[] = {"value", "1", "version", "0", "template", "T", "symbol", "E1", NULL};
    const char *a_e2[] = {"value", "2", "version", "0", "template", "Missing", "symbol", "E2", NULL};
    const char *a_t[] = {"tid", "T", NULL};
    const char *a_d[] = {"name", "A", "inType", "win:NoSuchType", NULL};
    m_start(&m, "instrumentationManifest", 1, a_root);
    m_start(&m, "instrumentation", 3, NULL);
    m_start(&m, "events", 3, NULL);
    m_start(&m, "provider", 4, a_prov);
    m_start(&m, "events", 5, NULL);
    m_start(&m, "event", 5, a_e1);
    m_end(&m);
    m_start(&m, "event", 6, a_e2);
    m_end(&m);
    m_end(&m);
    m_start(&m, "templates", 7, NULL);
    m_start(&m, "template", 7, a_t);
    m_start(&m, "data", 8, a_d);
    m_end(&m);
    m_end(&m);
    m_end(&m);
    m_end(&m);
    m_end(&m);
    m_end(&m);
    m_end(&m);
    size_t len;
    unsigned char *rec = m_finish(&m, &len);
    etw_manifest_set *r = NULL;
    ETW_CHECK_INT(load_rec(rec, len, &dr, &nr, &r), ETW_OK);
    ETW_CHECK_INT(nr, 1);
    ETW_CHECK_STR(dr.text, dx.text);
    ETW_CHECK_INT(compare_sets(x, &dx, r, &dr, 0, NULL), 0);
    etw_manifest_set_free(r);
    etw_manifest_set_free(x);
    free(rec);

    /* nested 100 deep: ETW_E_LIMIT at the 65th, both ways */
    char deep[100 * 7 + 100 * 8 + 1], *w = deep;
    memset(&m, 0, sizeof m);
    for (int i = 0; i < 100; i++) {
        w += sprintf(w, "<a>");
        m_start(&m, "a", 1, NULL);
    }
    for (int i = 0; i < 100; i++) {
        w += sprintf(w, "</a>");
        m_end(&m);
    }
    memset(&dx, 0, sizeof dx);
    x = new_set(&dx);
    ETW_CHECK_INT(etw_manifest_load_xml(x, deep, strlen(deep), ORIGIN, NULL), ETW_E_LIMIT);
    etw_manifest_set_free(x);
    rec = m_finish(&m, &len);
    ETW_CHECK_INT(load_rec(rec, len, &dr, NULL, NULL), ETW_E_LIMIT);
    ETW_CHECK_STR(dr.text, dx.text);
    free(rec);

    /* an attribute value over 1 MiB: ETW_E_LIMIT, both ways (the value is
     * not in the records' fixed-size test table: built apart) */
    size_t vlen = MAX_ATTR_BYTES + 1;
    char *big = malloc(vlen + 64);
    if (!big) abort();
    memcpy(big, "<a v='", 6);
    memset(big + 6, 'x', vlen);
    memcpy(big + 6 + vlen, "'/>", 4);
    memset(&dx, 0, sizeof dx);
    x = new_set(&dx);
    ETW_CHECK_INT(etw_manifest_load_xml(x, big, strlen(big), ORIGIN, NULL), ETW_E_LIMIT);
    etw_manifest_set_free(x);
    buf o;
    memset(&o, 0, sizeof o);
    for (size_t i = 0; i < ETW_MR_MAGIC_LEN; i++) put(&o, (unsigned char)ETW_MR_MAGIC[i]);
    put_var(&o, (uint32_t)(2 + 2 + vlen + 1)); /* "a", "v", the value */
    put(&o, 'a');
    put(&o, 0);
    put(&o, 'v');
    put(&o, 0);
    for (size_t i = 0; i < vlen; i++) put(&o, 'x');
    put(&o, 0);
    put(&o, 2);     /* a start with one attribute */
    put_var(&o, 0); /* "a" */
    put_var(&o, 1); /* line 1 */
    put_var(&o, 2); /* "v" */
    put_var(&o, 4); /* the value */
    put(&o, ETW_MR_TAG_END);
    ETW_CHECK_INT(load_rec(o.b, o.n, &dr, NULL, NULL), ETW_E_LIMIT);
    ETW_CHECK_STR(dr.text, dx.text);
    free(o.b);
    free(big);
}

int main(void) {
    ETW_RUN(test_same_schemas);
    ETW_RUN(test_comparison_catches);
    ETW_RUN(test_damaged);
    ETW_RUN(test_malformed);
    ETW_RUN(test_small_and_limits);
    return ETW_TEST_DONE();
}
