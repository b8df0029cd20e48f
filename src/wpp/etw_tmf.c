/* etw_tmf.c - TMF text -> etw_wpp_message, and the set that keeps them
 * (grammar: include/etwdecode/etw_wpp.h; facts: docs/wpp.md).
 *
 * Every text is hostile: lines are read through lengths, never past the
 * end; counts are bounded (ETW_WPP_MAX_*); a text that breaks the grammar
 * adds nothing (its messages are gathered first and indexed only once the
 * whole text parsed). Strings live in one bump arena per set. */
#include "etw_tmf.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "../common/etw_alloc.h"
#include "../common/etw_dir.h"
#include "etwdecode/etw_pdb.h"
#include "../schema/etw_cache.h"
#include "etw_wpp_types.h"

#define CHUNK_SIZE (64u * 1024u)
#define MAX_ARGS (ETW_WPP_LAST_ARG - ETW_WPP_FIRST_ARG + 1u)

typedef struct chunk {
    struct chunk *next;
    size_t used, cap;
    /* data follows, 16-aligned */
} chunk;

struct etw_wpp_set {
    etw_allocator al;
    chunk *chunks;
    const etw_wpp_message **slots;
    uint32_t mask; /* slots - 1 (a power of two) or 0 before the first insert */
    uint32_t count;
    char err[512];
};

/* ---- arena ---- */

static void *arena_take(etw_wpp_set *s, size_t n) {
    n = (n + 15u) & ~(size_t)15u;
    chunk *c = s->chunks;
    if (!c || c->cap - c->used < n) {
        size_t cap = n > CHUNK_SIZE ? n : CHUNK_SIZE;
        c = etw_alloc(&s->al, sizeof(chunk) + 16u + cap);
        if (!c) return NULL;
        c->next = s->chunks;
        c->used = 0;
        c->cap = cap;
        s->chunks = c;
    }
    uint8_t *base = (uint8_t *)c + ((sizeof(chunk) + 15u) & ~(size_t)15u);
    void *p = base + c->used;
    c->used += n;
    return p;
}

static const char *arena_str(etw_wpp_set *s, const char *p, size_t n) {
    char *d = arena_take(s, n + 1);
    if (!d) return NULL;
    if (n) memcpy(d, p, n);
    d[n] = 0;
    return d;
}

/* ---- the index ---- */

static uint64_t key_hash(const etw_guid *g, uint16_t number) {
    uint8_t k[18];
    memcpy(k, &g->data1, 4); /* host order is fine: only this process hashes */
    memcpy(k + 4, &g->data2, 2);
    memcpy(k + 6, &g->data3, 2);
    memcpy(k + 8, g->data4, 8);
    memcpy(k + 16, &number, 2);
    return etw_cache_hash(k, sizeof k);
}

static int same_key(const etw_wpp_message *m, const etw_guid *g, uint16_t number) {
    return m->number == number && etw_guid_equal(&m->guid, g);
}

static etw_status index_grow(etw_wpp_set *s) {
    uint32_t cap = s->mask ? (s->mask + 1u) * 2u : 1024u;
    const etw_wpp_message **slots = etw_calloc(&s->al, cap, sizeof *slots);
    if (!slots) return ETW_E_NOMEM;
    if (s->mask) {
        for (uint32_t i = 0; i <= s->mask; i++) {
            const etw_wpp_message *m = s->slots[i];
            if (!m) continue;
            uint32_t j = (uint32_t)key_hash(&m->guid, m->number) & (cap - 1u);
            while (slots[j]) j = (j + 1u) & (cap - 1u);
            slots[j] = m;
        }
        etw_free(&s->al, s->slots);
    }
    s->slots = slots;
    s->mask = cap - 1u;
    return ETW_OK;
}

/* 1 inserted, 0 already there (the first definition stays). */
static int index_put(etw_wpp_set *s, const etw_wpp_message *m) {
    uint32_t j = (uint32_t)key_hash(&m->guid, m->number) & s->mask;
    while (s->slots[j]) {
        if (same_key(s->slots[j], &m->guid, m->number)) return 0;
        j = (j + 1u) & s->mask;
    }
    s->slots[j] = m;
    s->count++;
    return 1;
}

const etw_wpp_message *etw_wpp_find(const etw_wpp_set *s, const etw_guid *g, uint16_t number) {
    if (!s || !g || !s->mask) return NULL;
    uint32_t j = (uint32_t)key_hash(g, number) & s->mask;
    while (s->slots[j]) {
        if (same_key(s->slots[j], g, number)) return s->slots[j];
        j = (j + 1u) & s->mask;
    }
    return NULL;
}

uint32_t etw_wpp_count(const etw_wpp_set *s) { return s ? s->count : 0; }

const char *etw_wpp_set_error(const etw_wpp_set *s) { return s ? s->err : ""; }

etw_status etw_wpp_set_new(etw_wpp_set **out, const etw_allocator *alloc) {
    if (!out) return ETW_E_INVALID_ARG;
    etw_allocator a = etw_allocator_resolve(alloc);
    etw_wpp_set *s = etw_calloc(&a, 1, sizeof *s);
    if (!s) return ETW_E_NOMEM;
    s->al = a;
    *out = s;
    return ETW_OK;
}

void etw_wpp_set_free(etw_wpp_set *s) {
    if (!s) return;
    chunk *c = s->chunks;
    while (c) {
        chunk *n = c->next;
        etw_free(&s->al, c);
        c = n;
    }
    etw_free(&s->al, s->slots);
    etw_free(&s->al, s);
}

/* ---- lexing helpers ---- */

static int is_blank(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\f' || c == '\v'; }

static void trim(const char **p, size_t *n) {
    while (*n && is_blank(**p)) (*p)++, (*n)--;
    while (*n && is_blank((*p)[*n - 1])) (*n)--;
}

static const char *find(const char *p, size_t n, const char *needle) {
    size_t k = strlen(needle);
    if (k > n) return NULL;
    for (size_t i = 0; i + k <= n; i++)
        if (p[i] == needle[0] && memcmp(p + i, needle, k) == 0) return p + i;
    return NULL;
}

static const char *rfind(const char *p, size_t n, const char *needle) {
    size_t k = strlen(needle);
    if (k > n) return NULL;
    for (size_t i = n - k + 1; i-- > 0;)
        if (p[i] == needle[0] && memcmp(p + i, needle, k) == 0) return p + i;
    return NULL;
}

static int hexval(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

int etw_tmf_parse_guid(const char *s, size_t n, etw_guid *out) {
    if (n < 36) return 0;
    uint8_t b[16];
    size_t bi = 0;
    for (size_t i = 0; i < 36;) {
        if (i == 8 || i == 13 || i == 18 || i == 23) {
            if (s[i] != '-') return 0;
            i++;
            continue;
        }
        int h = hexval(s[i]), l = hexval(s[i + 1]);
        if (h < 0 || l < 0) return 0;
        b[bi++] = (uint8_t)(h << 4 | l);
        i += 2;
    }
    if (bi != 16) return 0;
    out->data1 = (uint32_t)b[0] << 24 | (uint32_t)b[1] << 16 | (uint32_t)b[2] << 8 | b[3];
    out->data2 = (uint16_t)(b[4] << 8 | b[5]);
    out->data3 = (uint16_t)(b[6] << 8 | b[7]);
    memcpy(out->data4, b + 8, 8);
    return 1;
}

/* A decimal or 0x number of at most `max`; 1 on success. */
static int parse_uint(const char *p, size_t n, uint64_t max, uint64_t *out) {
    trim(&p, &n);
    if (!n) return 0;
    uint64_t v = 0;
    int base = 10;
    if (n > 2 && p[0] == '0' && (p[1] == 'x' || p[1] == 'X')) {
        base = 16;
        p += 2;
        n -= 2;
    }
    for (size_t i = 0; i < n; i++) {
        int d = hexval(p[i]);
        if (d < 0 || d >= base) return 0;
        if (v > (max - (uint64_t)d) / (uint64_t)base) return 0;
        v = v * (uint64_t)base + (uint64_t)d;
    }
    *out = v;
    return 1;
}

/* ---- the parser ---- */

typedef struct pending_arg {
    const char *name;
    size_t name_len;
    const char *type;
    size_t type_len;
    const char *list; /* inside the parentheses, or NULL */
    size_t list_len;
    uint32_t number;
} pending_arg;

typedef struct parser {
    etw_wpp_set *s;
    const char *origin;
    size_t line;
    /* the current GUID */
    int have_guid;
    etw_guid guid;
    const char *component, *file;
    /* the current message: its #typev seen, its block maybe */
    etw_wpp_message *msg;
    int in_block;
    pending_arg args[MAX_ARGS];
    uint32_t nargs;
    /* messages of this text, indexed at the end */
    etw_wpp_message **done;
    size_t ndone, capdone;
} parser;

static etw_status fail(parser *ps, etw_status st, const char *fmt, const char *detail) {
    char why[320];
    snprintf(why, sizeof why, fmt, detail ? detail : "");
    snprintf(ps->s->err, sizeof ps->s->err, "%s:%zu: %s", ps->origin, ps->line, why);
    return st;
}

static etw_status build_list(parser *ps, etw_wpp_arg *a, const pending_arg *pa, int is_set) {
    if (!pa->list) return ETW_OK;
    const char *p = pa->list;
    size_t n = pa->list_len;
    uint32_t count = 1;
    for (size_t i = 0; i < n; i++) count += p[i] == ',';
    if (count > ETW_WPP_MAX_LIST) return fail(ps, ETW_E_LIMIT, "%s: more than 1024 list entries", a->name);
    const char **names = arena_take(ps->s, count * sizeof *names);
    uint64_t *values = arena_take(ps->s, count * sizeof *values);
    if (!names || !values) return ETW_E_NOMEM;
    uint64_t next = 0;
    uint32_t k = 0;
    size_t start = 0;
    for (size_t i = 0; i <= n; i++) {
        if (i < n && p[i] != ',') continue;
        const char *e = p + start;
        size_t en = i - start;
        start = i + 1;
        trim(&e, &en);
        const char *eq = memchr(e, '=', en);
        uint64_t v = is_set ? (k < 64 ? (uint64_t)1 << k : 0) : next;
        size_t nm = en;
        if (eq) {
            nm = (size_t)(eq - e);
            if (!parse_uint(eq + 1, en - nm - 1, UINT32_MAX, &v))
                return fail(ps, ETW_E_CORRUPT, "list entry of %s has a bad value", a->name);
            while (nm && is_blank(e[nm - 1])) nm--;
        }
        names[k] = arena_str(ps->s, e, nm);
        if (!names[k]) return ETW_E_NOMEM;
        values[k] = v;
        next = v + 1;
        k++;
    }
    a->list_count = k;
    a->list_names = (const char *const *)names;
    a->list_values = values;
    return ETW_OK;
}

static int cmp_arg(const void *a, const void *b) {
    const pending_arg *x = a, *y = b;
    return x->number < y->number ? -1 : x->number > y->number;
}

/* The current message is complete: check and copy its arguments. */
static etw_status finish_message(parser *ps) {
    etw_wpp_message *m = ps->msg;
    if (!m) return ETW_OK;
    ps->msg = NULL;
    qsort(ps->args, ps->nargs, sizeof ps->args[0], cmp_arg);
    char num[64];
    for (uint32_t i = 0; i < ps->nargs; i++) {
        if (ps->args[i].number != ETW_WPP_FIRST_ARG + i) {
            snprintf(num, sizeof num, "%u", ps->args[i].number);
            return fail(ps, ETW_E_CORRUPT,
                        i && ps->args[i].number == ps->args[i - 1].number
                            ? "argument number %s given twice"
                            : "argument numbers do not follow each other from 10 (missing one before %s)",
                        num);
        }
    }
    etw_wpp_arg *args = ps->nargs ? arena_take(ps->s, ps->nargs * sizeof *args) : NULL;
    if (ps->nargs && !args) return ETW_E_NOMEM;
    for (uint32_t i = 0; i < ps->nargs; i++) {
        const pending_arg *pa = &ps->args[i];
        etw_wpp_arg *a = &args[i];
        memset(a, 0, sizeof *a);
        a->name = arena_str(ps->s, pa->name, pa->name_len);
        a->type_name = arena_str(ps->s, pa->type, pa->type_len);
        if (!a->name || !a->type_name) return ETW_E_NOMEM;
        a->number = (uint16_t)pa->number;
        a->type = etw_wpp_type_lookup(pa->type, pa->type_len);
        const etw_wpp_type_info *ti = etw_wpp_type_get(a->type);
        if (!ti && !m->unknown_arg) m->unknown_arg = (uint16_t)(i + 1);
        if (ti && (ti->kind == WPP_K_LIST || ti->kind == WPP_K_SET)) {
            etw_status st = build_list(ps, a, pa, ti->kind == WPP_K_SET);
            if (st != ETW_OK) return st;
        }
    }
    m->args = args;
    m->argc = (uint16_t)ps->nargs;
    ps->nargs = 0;
    if (ps->ndone == ps->capdone) {
        size_t cap = ps->capdone ? ps->capdone * 2 : 256;
        if (cap > ETW_WPP_MAX_MESSAGES) cap = ETW_WPP_MAX_MESSAGES;
        if (ps->ndone == cap) return fail(ps, ETW_E_LIMIT, "more than 1048576 messages%s", NULL);
        etw_wpp_message **d = etw_alloc(&ps->s->al, cap * sizeof *d);
        if (!d) return ETW_E_NOMEM;
        if (ps->ndone) memcpy(d, ps->done, ps->ndone * sizeof *d);
        etw_free(&ps->s->al, ps->done);
        ps->done = d;
        ps->capdone = cap;
    }
    ps->done[ps->ndone++] = m;
    return ETW_OK;
}

/* The value of KEY= in a trailer: up to the next known key or the end. */
static const char *trailer_value(parser *ps, const char *p, size_t n, const char *key) {
    static const char *const keys[] = {"LEVEL=", "FLAGS=", "FUNC=", "SRC=", "MJ=", "MN="};
    const char *k = find(p, n, key);
    if (!k) return "";
    const char *v = k + strlen(key);
    const char *end = p + n;
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++) {
        const char *o = find(v, (size_t)(end - v), keys[i]);
        /* a key starts a word: the blank before it ends this value */
        while (o && o > v && !is_blank(o[-1])) o = find(o + 1, (size_t)(end - o - 1), keys[i]);
        if (o && o < end) end = o;
    }
    size_t vn = (size_t)(end - v);
    trim(&v, &vn);
    return arena_str(ps->s, v, vn);
}

static uint32_t line_of_tag(const char *t, size_t n) {
    size_t i = n;
    while (i && t[i - 1] >= '0' && t[i - 1] <= '9') i--;
    if (i == n || n - i > 9) return 0;
    const char *d = t + i;
    size_t dn = n - i;
    /* "..._c123", "..._cpp123", "..._h45" (the file extension then the line) */
    if (i < 2 || !((t[i - 1] >= 'a' && t[i - 1] <= 'z') || (t[i - 1] >= 'A' && t[i - 1] <= 'Z'))) return 0;
    if (!memchr(t, '_', i)) return 0;
    uint64_t v = 0;
    return parse_uint(d, dn, UINT32_MAX, &v) ? (uint32_t)v : 0;
}

static etw_status on_guid_line(parser *ps, const char *p, size_t n) {
    etw_status st = finish_message(ps);
    if (st != ETW_OK) return st;
    if (ps->in_block) return fail(ps, ETW_E_CORRUPT, "GUID line inside an argument block%s", NULL);
    etw_guid g;
    if (!etw_tmf_parse_guid(p, n, &g)) return fail(ps, ETW_E_CORRUPT, "bad GUID%s", NULL);
    ps->guid = g;
    ps->have_guid = 1;
    const char *r = p + 36;
    size_t rn = n - 36;
    const char *cm = find(r, rn, "//");
    size_t namen = cm ? (size_t)(cm - r) : rn;
    const char *name = r;
    trim(&name, &namen);
    ps->component = arena_str(ps->s, name, namen);
    ps->file = cm ? trailer_value(ps, cm, (size_t)(p + n - cm), "SRC=") : "";
    if (!ps->component || !ps->file) return ETW_E_NOMEM;
    return ETW_OK;
}

static etw_status on_typev(parser *ps, const char *p, size_t n) {
    etw_status st = finish_message(ps);
    if (st != ETW_OK) return st;
    if (!ps->have_guid) return fail(ps, ETW_E_CORRUPT, "#typev before any message GUID line%s", NULL);
    const char *q1 = memchr(p, '"', n);
    const char *q2 = q1 ? rfind(p, n, "\"") : NULL;
    if (!q1 || q2 == q1) return fail(ps, ETW_E_CORRUPT, "#typev without a quoted format string%s", NULL);
    /* "#typev <tag> <number>" before the format */
    const char *h = p + 6;
    size_t hn = (size_t)(q1 - h);
    trim(&h, &hn);
    size_t tn = 0;
    while (tn < hn && !is_blank(h[tn])) tn++;
    const char *numtxt = h + tn;
    size_t numn = hn - tn;
    uint64_t number;
    if (!tn || !parse_uint(numtxt, numn, 0xFFFF, &number))
        return fail(ps, ETW_E_CORRUPT, "#typev needs a tag and a message number 0..65535%s", NULL);
    etw_wpp_message *m = arena_take(ps->s, sizeof *m);
    if (!m) return ETW_E_NOMEM;
    memset(m, 0, sizeof *m);
    m->guid = ps->guid;
    m->number = (uint16_t)number;
    m->tag = arena_str(ps->s, h, tn);
    m->line = line_of_tag(h, tn);
    m->component = ps->component;
    m->file = ps->file;
    m->origin = ps->origin;
    m->format = arena_str(ps->s, q1 + 1, (size_t)(q2 - q1 - 1));
    const char *tr = q2 + 1;
    size_t trn = (size_t)(p + n - tr);
    m->level = trailer_value(ps, tr, trn, "LEVEL=");
    m->flags = trailer_value(ps, tr, trn, "FLAGS=");
    m->func = trailer_value(ps, tr, trn, "FUNC=");
    if (!m->tag || !m->format || !m->level || !m->flags || !m->func) return ETW_E_NOMEM;
    ps->msg = m;
    ps->nargs = 0;
    return ETW_OK;
}

static etw_status on_arg(parser *ps, const char *p, size_t n) {
    const char *dd = rfind(p, n, " -- ");
    if (!dd) return fail(ps, ETW_E_CORRUPT, "argument line without \" -- <number>\"%s", NULL);
    uint64_t number;
    if (!parse_uint(dd + 4, (size_t)(p + n - dd - 4), 0xFFFFFFFFu, &number))
        return fail(ps, ETW_E_CORRUPT, "argument line with a bad number%s", NULL);
    if (number < ETW_WPP_FIRST_ARG || number > ETW_WPP_LAST_ARG) {
        char num[32];
        snprintf(num, sizeof num, "%llu", (unsigned long long)number);
        return fail(ps, ETW_E_CORRUPT, "argument number %s out of range 10..99", num);
    }
    size_t ln = (size_t)(dd - p);
    const char *ty = rfind(p, ln, ", Item");
    if (!ty) return fail(ps, ETW_E_CORRUPT, "argument line without \", Item<type>\"%s", NULL);
    if (ps->nargs == MAX_ARGS) return fail(ps, ETW_E_LIMIT, "more than 90 arguments%s", NULL);
    pending_arg *a = &ps->args[ps->nargs];
    a->name = p;
    a->name_len = (size_t)(ty - p);
    trim(&a->name, &a->name_len);
    const char *t = ty + 2;
    size_t tn = (size_t)(dd - t);
    trim(&t, &tn);
    const char *par = memchr(t, '(', tn);
    a->list = NULL;
    a->list_len = 0;
    if (par) {
        if (t[tn - 1] != ')') return fail(ps, ETW_E_CORRUPT, "argument type with an unclosed '('%s", NULL);
        a->list = par + 1;
        a->list_len = (size_t)(t + tn - 1 - par - 1);
        tn = (size_t)(par - t);
        while (tn && is_blank(t[tn - 1])) tn--;
    }
    a->type = t;
    a->type_len = tn;
    a->number = (uint32_t)number;
    ps->nargs++;
    return ETW_OK;
}

static etw_status parse_line(parser *ps, const char *p, size_t n) {
    trim(&p, &n);
    if (!n) return ETW_OK;
    if (ps->in_block) {
        if (n == 1 && p[0] == '}') {
            ps->in_block = 0;
            return finish_message(ps);
        }
        if (p[0] == '{') return fail(ps, ETW_E_CORRUPT, "'{' inside an argument block%s", NULL);
        if (n >= 2 && p[0] == '/' && p[1] == '/') return ETW_OK;
        return on_arg(ps, p, n);
    }
    if (n >= 2 && p[0] == '/' && p[1] == '/') return ETW_OK;
    if (p[0] == '{') {
        if (!ps->msg) return fail(ps, ETW_E_CORRUPT, "argument block without a #typev line before it%s", NULL);
        if (n != 1) return fail(ps, ETW_E_CORRUPT, "text after '{'%s", NULL);
        ps->in_block = 1;
        return ETW_OK;
    }
    if (p[0] == '}') return fail(ps, ETW_E_CORRUPT, "'}' outside an argument block%s", NULL);
    if (n >= 6 && memcmp(p, "#typev", 6) == 0 && (n == 6 || is_blank(p[6]))) return on_typev(ps, p, n);
    etw_guid g;
    if (etw_tmf_parse_guid(p, n, &g) && (n == 36 || is_blank(p[36]))) return on_guid_line(ps, p, n);
    return fail(ps, ETW_E_CORRUPT, "line is not a comment, GUID line, #typev line or argument block%s", NULL);
}

etw_status etw_wpp_add_tmf_text(etw_wpp_set *s, const char *text, size_t len, const char *origin) {
    if (!s || (!text && len)) return ETW_E_INVALID_ARG;
    s->err[0] = 0;
    parser *ps = etw_calloc(&s->al, 1, sizeof *ps);
    if (!ps) return ETW_E_NOMEM;
    ps->s = s;
    ps->origin = arena_str(s, origin ? origin : "<memory>", strlen(origin ? origin : "<memory>"));
    etw_status st = ps->origin ? ETW_OK : ETW_E_NOMEM;
    if (st == ETW_OK && len > ETW_WPP_MAX_TEXT) st = fail(ps, ETW_E_LIMIT, "TMF text larger than 64 MiB%s", NULL);
    size_t i = 0;
    while (st == ETW_OK && i < len) {
        const char *nl = memchr(text + i, '\n', len - i);
        size_t e = nl ? (size_t)(nl - text) : len;
        ps->line++;
        if (memchr(text + i, 0, e - i)) st = fail(ps, ETW_E_CORRUPT, "NUL byte in the text%s", NULL);
        else st = parse_line(ps, text + i, e - i);
        i = e + 1;
    }
    if (st == ETW_OK && ps->in_block) st = fail(ps, ETW_E_CORRUPT, "argument block not closed at the end of the text%s", NULL);
    if (st == ETW_OK) st = finish_message(ps);
    if (st == ETW_OK && s->count + ps->ndone > ETW_WPP_MAX_MESSAGES)
        st = fail(ps, ETW_E_LIMIT, "more than 1048576 messages in the set%s", NULL);
    for (size_t k = 0; st == ETW_OK && k < ps->ndone; k++) {
        if ((s->count + 1u) * 4u > (s->mask + 1u) * 3u || !s->mask) st = index_grow(s);
        if (st == ETW_OK) index_put(s, ps->done[k]);
    }
    if (st == ETW_E_NOMEM && !s->err[0]) snprintf(s->err, sizeof s->err, "%s: out of memory", origin ? origin : "");
    etw_free(&s->al, ps->done);
    etw_free(&s->al, ps);
    return st;
}

/* ---- files ---- */

static etw_status read_file(etw_wpp_set *s, const char *path, char **out, size_t *len) {
    FILE *f = fopen(path, "rb");
    if (!f) {
        snprintf(s->err, sizeof s->err, "%s: %s", path, strerror(errno));
        return ETW_E_IO;
    }
    size_t cap = 0, n = 0;
    char *buf = NULL;
    for (;;) {
        if (n == cap) {
            if (cap >= ETW_WPP_MAX_TEXT + 1u) break;
            size_t nc = cap ? cap * 2 : 65536;
            char *nb = etw_alloc(&s->al, nc);
            if (!nb) {
                etw_free(&s->al, buf);
                fclose(f);
                return ETW_E_NOMEM;
            }
            if (n) memcpy(nb, buf, n);
            etw_free(&s->al, buf);
            buf = nb;
            cap = nc;
        }
        size_t r = fread(buf + n, 1, cap - n, f);
        n += r;
        if (r == 0) break;
    }
    int bad = ferror(f);
    fclose(f);
    if (bad) {
        etw_free(&s->al, buf);
        snprintf(s->err, sizeof s->err, "%s: read error", path);
        return ETW_E_IO;
    }
    *out = buf;
    *len = n;
    return ETW_OK;
}

/* A file in a folder that holds no TMF line (a LICENSE, a README) is not
 * one: skipped. */
static int looks_like_tmf(const char *t, size_t n) {
    if (find(t, n, "#typev")) return 1;
    for (size_t i = 0; i + 36 <= n; i++) {
        if (i && t[i - 1] != '\n') continue;
        etw_guid g;
        if (etw_tmf_parse_guid(t + i, n - i, &g)) return 1;
    }
    return 0;
}

/* The first bytes of an MSF 7.00 file (a PDB): LLVM's "The MSF File
 * Format", the superblock's magic. */
static const char MSF_MAGIC[] = "Microsoft C/C++ MSF 7.00\r\n\x1a" "DS";

static int is_pdb(const char *path) {
    char head[sizeof MSF_MAGIC - 1];
    FILE *f = fopen(path, "rb");
    if (!f) return 0;
    size_t n = fread(head, 1, sizeof head, f);
    fclose(f);
    return n == sizeof head && memcmp(head, MSF_MAGIC, sizeof head) == 0;
}

typedef struct pdb_ctx {
    etw_wpp_set *s;
    const char *path;
    etw_status first; /* the first annotation that did not parse */
    char first_err[sizeof ((etw_wpp_set *)0)->err];
} pdb_ctx;

/* One TMF annotation: its strings are the lines of a one-message TMF text.
 * A text that breaks the grammar is remembered and the walk goes on. */
static etw_status on_annotation(void *ctx, const etw_pdb_annotation *a) {
    pdb_ctx *c = ctx;
    if (a->kind != ETW_PDB_TMF) return ETW_OK;
    etw_status st = etw_wpp_add_tmf_text(c->s, a->text, a->text_len, c->path);
    if (st == ETW_E_NOMEM) return st;
    if (st != ETW_OK && c->first == ETW_OK) {
        c->first = st;
        memcpy(c->first_err, c->s->err, sizeof c->first_err);
    }
    return ETW_OK;
}

/* The TMF annotations of a PDB (tracepdb's source: S_ANNOTATION records
 * whose first string is "TMF:", etw_pdb.h). */
static etw_status add_pdb(etw_wpp_set *s, const char *path, uint32_t *added) {
    pdb_ctx c = {s, path, ETW_OK, ""};
    const char *reason = NULL;
    etw_pdb_options opt = {&s->al, &reason};
    uint32_t before = s->count;
    etw_status st = etw_pdb_annotations_file(path, &opt, on_annotation, &c);
    if (added) *added += s->count - before;
    if (st != ETW_OK) {
        if (st != ETW_E_NOMEM)
            snprintf(s->err, sizeof s->err, "%s: %s", path,
                     reason ? reason : st == ETW_E_IO ? strerror(errno) : etw_strerror(st));
        return st;
    }
    if (c.first != ETW_OK) memcpy(s->err, c.first_err, sizeof s->err);
    return c.first;
}

static etw_status add_file(etw_wpp_set *s, const char *path, int in_dir, uint32_t *added) {
    if (is_pdb(path)) return add_pdb(s, path, added);
    char *buf = NULL;
    size_t n = 0;
    etw_status st = read_file(s, path, &buf, &n);
    if (st != ETW_OK) return st;
    uint32_t before = s->count;
    if (in_dir && !looks_like_tmf(buf, n)) st = ETW_OK;
    else st = etw_wpp_add_tmf_text(s, buf, n, path);
    etw_free(&s->al, buf);
    if (added) *added += s->count - before;
    return st;
}

etw_status etw_wpp_add_tmf_path(etw_wpp_set *s, const char *path, uint32_t *added) {
    if (!s || !path) return ETW_E_INVALID_ARG;
    if (added) *added = 0;
    struct stat sb;
    if (stat(path, &sb) != 0) {
        snprintf(s->err, sizeof s->err, "%s: %s", path, strerror(errno));
        return ETW_E_IO;
    }
    if (!S_ISDIR(sb.st_mode)) return add_file(s, path, 0, added);
    char **names = NULL;
    size_t n = 0;
    etw_status st = etw_dir_list(&s->al, path, 1, ETW_WPP_MAX_FILES, &names, &n);
    if (st != ETW_OK) {
        snprintf(s->err, sizeof s->err, "%s: %s", path, st == ETW_E_IO ? strerror(errno) : etw_strerror(st));
        return st;
    }
    etw_status first = ETW_OK;
    char first_err[sizeof s->err] = "";
    for (size_t i = 0; i < n; i++) {
        struct stat fb;
        if (stat(names[i], &fb) != 0 || !S_ISREG(fb.st_mode)) continue;
        etw_status fs = add_file(s, names[i], 1, added);
        if (fs == ETW_E_NOMEM) {
            first = fs;
            break;
        }
        if (fs != ETW_OK && first == ETW_OK) {
            first = fs;
            memcpy(first_err, s->err, sizeof first_err);
        }
    }
    etw_dir_free(&s->al, names, n);
    if (first != ETW_OK && first != ETW_E_NOMEM) memcpy(s->err, first_err, sizeof s->err);
    else if (first == ETW_OK) s->err[0] = 0;
    return first;
}

/* Depth of a symbol store's folders: store/name.pdb/<GUID><age>/name.pdb
 * (Microsoft's symbol store layout, symstore's "two-tier"), and a flat
 * folder of PDBs at depth 0. */
#define STORE_DEPTH 2

static etw_status store_walk(etw_wpp_set *s, const char *dir, int depth, uint32_t *added, etw_status *first,
                             char *first_err) {
    char **names = NULL;
    size_t n = 0;
    etw_status st = etw_dir_list(&s->al, dir, 1, ETW_WPP_MAX_FILES, &names, &n);
    if (st != ETW_OK) {
        if (st == ETW_E_NOMEM) return st;
        if (*first == ETW_OK) {
            *first = st;
            snprintf(first_err, sizeof s->err, "%s: %s", dir, st == ETW_E_IO ? strerror(errno) : etw_strerror(st));
        }
        return ETW_OK;
    }
    for (size_t i = 0; i < n && st == ETW_OK; i++) {
        struct stat fb;
        if (stat(names[i], &fb) != 0) continue;
        if (S_ISDIR(fb.st_mode)) {
            if (depth < STORE_DEPTH) st = store_walk(s, names[i], depth + 1, added, first, first_err);
            continue;
        }
        if (!S_ISREG(fb.st_mode) || !is_pdb(names[i])) continue;
        etw_status fs = add_pdb(s, names[i], added);
        if (fs == ETW_E_NOMEM) st = fs;
        else if (fs != ETW_OK && *first == ETW_OK) {
            *first = fs;
            memcpy(first_err, s->err, sizeof s->err);
        }
    }
    etw_dir_free(&s->al, names, n);
    return st;
}

typedef struct store_ctx {
    etw_wpp_set *s;
    uint32_t *added;
    etw_status first;
    char first_err[sizeof ((etw_wpp_set *)0)->err];
} store_ctx;

/* One local folder of the store (etw_symstore_folders): ETW_E_NOT_FOUND
 * goes on to the next. */
static etw_status store_folder(void *ctx, const char *dir, size_t len) {
    store_ctx *c = ctx;
    char path[4096];
    if (len >= sizeof path) return ETW_E_NOT_FOUND;
    memcpy(path, dir, len);
    path[len] = 0;
    etw_status st = store_walk(c->s, path, 0, c->added, &c->first, c->first_err);
    return st == ETW_OK ? ETW_E_NOT_FOUND : st;
}

etw_status etw_wpp_add_symbol_store(etw_wpp_set *s, const char *store, uint32_t *added) {
    if (!s || !store) return ETW_E_INVALID_ARG;
    if (added) *added = 0;
    store_ctx c = {s, added, ETW_OK, ""};
    etw_status st = etw_symstore_folders(store, store_folder, &c);
    if (st != ETW_E_NOT_FOUND) return st;
    if (c.first != ETW_OK) memcpy(s->err, c.first_err, sizeof s->err);
    else s->err[0] = 0;
    return c.first;
}
