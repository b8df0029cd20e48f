/* etw_filter.c - event selection (see etw_filter.h). */
#include "etwdecode/etw_filter.h"

#include <stdlib.h>
#include <string.h>

#include "../common/etw_alloc.h"
#include "../common/etw_utf16.h"
#include "../schema/etw_names.h"
#include "../source/etw_manifest_types.h"
#include "etw_glob.h"

/* FILETIME: 100 ns ticks since 1601-01-01 (MS-DTYP 2.3.3). */
#define TICKS_PER_SECOND INT64_C(10000000)
/* Days from 1601-01-01 to 1970-01-01 (134774 days, 11644473600 s). */
#define DAYS_1601_TO_1970 INT64_C(134774)
/* Relative times above this many seconds (about 3,170 years, more than the
 * whole FILETIME range of valid times) are refused: their tick count stays
 * below 2^60. */
#define MAX_RELATIVE_SECONDS INT64_C(100000000000)

typedef struct pred {
    uint8_t key;     /* etw_filter_key */
    uint8_t exclude;
    uint8_t is_guid; /* PROVIDER given as a GUID */
    etw_guid guid;
    uint64_t lo, hi; /* ID/PID/TID: range; KEYWORDS: mask in lo */
    char *text;      /* PROVIDER/EVENT name or glob */
    size_t text_len;
    uint8_t matched; /* tracking: a name of some event matched the text */
    /* WHERE: text is the field name; the operator and the value */
    uint8_t op;
    char *wvalue;
    size_t wvalue_len;
    uint8_t num_ok;  /* the value is a number (num), an integer too (int_ok: neg, mag) */
    uint8_t int_ok, neg;
    double num;
    uint64_t mag;
} pred;

enum { OP_EQ = 1, OP_NE, OP_LT, OP_GT, OP_LE, OP_GE };

/* Tracking (etw_filter_track_names): the distinct names seen, by kind. */
enum { NAME_PROVIDER = 0, NAME_EVENT = 1 };

typedef struct seen_name {
    uint64_t hash; /* 0: empty slot */
    char *text;    /* NUL-terminated copy */
    size_t len;
    uint8_t kind;
} seen_name;

/* Most distinct names kept for the suggestions; past it, names are still
 * tested but no longer kept. */
#define MAX_SEEN_NAMES 65536u

struct etw_filter {
    etw_allocator alloc;
    pred *preds;
    size_t npreds, cap;
    size_t nvalues;          /* counted against ETW_FILTER_MAX_PREDICATES */
    unsigned incl_keys;      /* bit k: some inclusion of key k exists */
    unsigned name_incl_keys; /* bit k: some inclusion of key k needs the names */
    int needs_names;         /* a name or error predicate exists */
    int has_level;
    uint8_t level;
    int has_since, since_rel, has_until, until_rel;
    int64_t since, until;    /* FILETIME, or offsets when *_rel */
    int has_origin;
    int64_t origin;
    /* tracking */
    int track;
    size_t unmatched;        /* name predicates not matched yet */
    uint64_t *seen_ids;      /* bit per schema id */
    size_t seen_words;
    seen_name *names;        /* open addressing */
    size_t names_cap, names_n;
};

etw_status etw_filter_new(etw_filter **out, const etw_allocator *alloc) {
    if (!out) return ETW_E_INVALID_ARG;
    *out = NULL;
    etw_allocator a = etw_allocator_resolve(alloc);
    etw_filter *f = etw_calloc(&a, 1, sizeof *f);
    if (!f) return ETW_E_NOMEM;
    f->alloc = a;
    *out = f;
    return ETW_OK;
}

void etw_filter_free(etw_filter *f) {
    if (!f) return;
    etw_allocator a = f->alloc;
    for (size_t i = 0; i < f->npreds; i++) {
        etw_free(&a, f->preds[i].text);
        etw_free(&a, f->preds[i].wvalue);
    }
    etw_free(&a, f->preds);
    for (size_t i = 0; i < f->names_cap; i++) etw_free(&a, f->names[i].text);
    etw_free(&a, f->names);
    etw_free(&a, f->seen_ids);
    etw_free(&a, f);
}

etw_filter_key etw_filter_key_from_name(const char *name) {
    static const struct {
        const char *name;
        etw_filter_key key;
    } names[] = {{"provider", ETW_FILTER_PROVIDER}, {"event", ETW_FILTER_EVENT},
                 {"id", ETW_FILTER_ID},             {"level", ETW_FILTER_LEVEL},
                 {"keywords", ETW_FILTER_KEYWORDS}, {"pid", ETW_FILTER_PID},
                 {"tid", ETW_FILTER_TID},           {"since", ETW_FILTER_SINCE},
                 {"until", ETW_FILTER_UNTIL},       {"errors", ETW_FILTER_ERRORS},
                 {"process", ETW_FILTER_PROCESS},   {"where", ETW_FILTER_WHERE}};
    if (!name) return (etw_filter_key)0;
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (!strcmp(name, names[i].name)) return names[i].key;
    return (etw_filter_key)0;
}

void etw_filter_set_origin(etw_filter *f, int64_t filetime) {
    if (!f) return;
    f->has_origin = 1;
    f->origin = filetime;
}

int etw_filter_is_empty(const etw_filter *f) {
    return !f || (!f->npreds && !f->has_level && !f->has_since && !f->has_until);
}

/* ---- parsing ------------------------------------------------------------ */

static int is_digit(char c) { return c >= '0' && c <= '9'; }

/* An unsigned number, decimal or 0x hex, at *s; advances *s. */
static int parse_u64(const char **s, uint64_t max, uint64_t *out) {
    const char *p = *s;
    uint64_t v = 0;
    int base = 10, digits = 0;
    if (p[0] == '0' && (p[1] == 'x' || p[1] == 'X')) {
        base = 16;
        p += 2;
    }
    for (;; p++) {
        int d;
        if (is_digit(*p)) d = *p - '0';
        else if (base == 16 && *p >= 'a' && *p <= 'f') d = *p - 'a' + 10;
        else if (base == 16 && *p >= 'A' && *p <= 'F') d = *p - 'A' + 10;
        else break;
        if (v > (max - (uint64_t)d) / (uint64_t)base) return 0;
        v = v * (uint64_t)base + (uint64_t)d;
        digits++;
    }
    if (!digits) return 0;
    *out = v;
    *s = p;
    return 1;
}

static int64_t days_from_civil(int64_t y, int64_t m, int64_t d) {
    /* days since 1970-01-01 of a proleptic Gregorian date */
    y -= m <= 2;
    int64_t era = (y >= 0 ? y : y - 399) / 400;
    int64_t yoe = y - era * 400;
    int64_t doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
    int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    return era * 146097 + doe - 719468;
}

static int fixed_digits(const char **s, int n, int64_t *out) {
    int64_t v = 0;
    for (int i = 0; i < n; i++) {
        if (!is_digit((*s)[i])) return 0;
        v = v * 10 + ((*s)[i] - '0');
    }
    *s += n;
    *out = v;
    return 1;
}

/* An absolute time: RFC 3339 ("2021-09-09T12:59:35.79Z", "...+02:00"), the
 * same with a space for the T ("2021-09-09 12:59:35"; there the zone may be
 * left out: UTC), or a date alone ("2021-09-09": its midnight UTC). */
static int parse_absolute(const char *s, int64_t *ft) {
    int64_t y, mo, d, h = 0, mi = 0, se = 0, frac = 0;
    if (!fixed_digits(&s, 4, &y) || *s++ != '-' || !fixed_digits(&s, 2, &mo) || *s++ != '-' ||
        !fixed_digits(&s, 2, &d))
        return 0;
    int64_t offset_min = 0;
    if (*s) {
        int space = *s == ' ';
        if (*s != 'T' && *s != 't' && !space) return 0;
        s++;
        if (!fixed_digits(&s, 2, &h) || *s++ != ':' || !fixed_digits(&s, 2, &mi) || *s++ != ':' ||
            !fixed_digits(&s, 2, &se))
            return 0;
        if (*s == '.') {
            s++;
            int n = 0;
            for (; is_digit(*s); s++, n++)
                if (n < 7) frac = frac * 10 + (*s - '0');
            if (!n) return 0;
            for (; n < 7; n++) frac *= 10;
        }
        int zone_due = space && *s == ' '; /* "2021-09-09 12:59:35 +02:00" */
        if (zone_due) s++;
        if (*s == 'Z' || *s == 'z') {
            s++;
        } else if (*s == '+' || *s == '-') {
            int sign = *s++ == '-' ? -1 : 1;
            int64_t oh, om;
            if (!fixed_digits(&s, 2, &oh) || *s++ != ':' || !fixed_digits(&s, 2, &om) || oh > 23 || om > 59)
                return 0;
            offset_min = sign * (oh * 60 + om);
        } else if (!space || zone_due || *s) {
            return 0; /* RFC 3339 (with the T) always has its zone */
        }
        if (*s) return 0;
    }
    static const int mdays[12] = {31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    if (y < 1601 || mo < 1 || mo > 12 || d < 1 || d > mdays[mo - 1] || h > 23 || mi > 59 || se > 60)
        return 0;
    int leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
    if (mo == 2 && d == 29 && !leap) return 0;
    if (se == 60) se = 59; /* a leap second: FILETIME has none */
    int64_t days = days_from_civil(y, mo, d) + DAYS_1601_TO_1970;
    int64_t secs = days * 86400 + h * 3600 + mi * 60 + se - offset_min * 60;
    if (secs < 0) return 0;
    *ft = secs * TICKS_PER_SECOND + frac;
    return 1;
}

/* A duration from the trace start: a decimal number ("12.5", "+3") with an
 * optional unit: s (the default), ms, us, ns, m (minutes), h. Digits past
 * the seventh after the point are dropped; the result is truncated to
 * 100 ns ticks. */
static int parse_duration(const char *s, int64_t *ticks) {
    if (*s == '+') s++;
    int64_t whole = 0, frac = 0, scale = 1;
    int n = 0;
    for (; is_digit(*s); s++, n++) {
        whole = whole * 10 + (*s - '0');
        if (whole > MAX_RELATIVE_SECONDS * 3600) return 0;
    }
    int nf = 0;
    if (*s == '.') {
        s++;
        for (; is_digit(*s); s++, nf++)
            if (nf < 7) {
                frac = frac * 10 + (*s - '0');
                scale *= 10;
            }
    }
    if (!n && !nf) return 0;
    /* ticks per unit as num / den */
    int64_t num, den = 1;
    if (!*s || !strcmp(s, "s")) num = TICKS_PER_SECOND;
    else if (!strcmp(s, "ms")) num = TICKS_PER_SECOND / 1000;
    else if (!strcmp(s, "us")) num = TICKS_PER_SECOND / 1000000;
    else if (!strcmp(s, "ns")) num = 1, den = 100;
    else if (!strcmp(s, "m")) num = 60 * TICKS_PER_SECOND;
    else if (!strcmp(s, "h")) num = 3600 * TICKS_PER_SECOND;
    else return 0;
    /* at most MAX_RELATIVE_SECONDS (and no overflow: whole * num stays
     * below 10^18 once whole over den is below the bound over num) */
    if (whole / den > MAX_RELATIVE_SECONDS * TICKS_PER_SECOND / num) return 0;
    int64_t t = whole * num / den + frac * num / (scale * den);
    if (t > MAX_RELATIVE_SECONDS * TICKS_PER_SECOND) return 0;
    *ticks = t;
    return 1;
}

etw_status etw_filter_parse_time(const char *text, int64_t *filetime, int *relative) {
    if (!text || !filetime || !relative) return ETW_E_INVALID_ARG;
    int64_t v;
    if (parse_duration(text, &v)) {
        *filetime = v;
        *relative = 1;
        return ETW_OK;
    }
    if (parse_absolute(text, &v)) {
        *filetime = v;
        *relative = 0;
        return ETW_OK;
    }
    return ETW_E_INVALID_ARG;
}

static etw_status push(etw_filter *f, const pred *p) {
    if (f->nvalues >= ETW_FILTER_MAX_PREDICATES) return ETW_E_LIMIT;
    if (f->npreds == f->cap) {
        size_t nc = f->cap ? f->cap * 2 : 8;
        pred *np = etw_calloc(&f->alloc, nc, sizeof *np);
        if (!np) return ETW_E_NOMEM;
        if (f->npreds) memcpy(np, f->preds, f->npreds * sizeof *np);
        etw_free(&f->alloc, f->preds);
        f->preds = np;
        f->cap = nc;
    }
    f->preds[f->npreds++] = *p;
    f->nvalues++;
    /* WHERE predicates are all required (AND), tested apart */
    if (!p->exclude && p->key != ETW_FILTER_WHERE) f->incl_keys |= 1u << p->key;
    if (p->text && !p->matched) f->unmatched++;
    if (p->key == ETW_FILTER_WHERE) f->needs_names = 1;
    if (p->key == ETW_FILTER_EVENT || p->key == ETW_FILTER_ERRORS || p->key == ETW_FILTER_PROCESS ||
        (p->key == ETW_FILTER_PROVIDER && !p->is_guid)) {
        f->needs_names = 1;
        if (!p->exclude) f->name_incl_keys |= 1u << p->key;
    }
    return ETW_OK;
}

/* N[,N...] with N-M ranges, each at most max. */
static etw_status add_list(etw_filter *f, etw_filter_key key, const char *s, int exclude, uint64_t max,
                           const char **why) {
    /* check the whole list first, so a bad list adds nothing */
    for (int pass = 0; pass < 2; pass++) {
        const char *p = s;
        for (;;) {
            uint64_t lo, hi;
            if (!parse_u64(&p, max, &lo)) goto bad;
            hi = lo;
            if (*p == '-') {
                p++;
                if (!parse_u64(&p, max, &hi) || hi < lo) goto bad;
            }
            if (pass == 1) {
                pred pr = {0};
                pr.key = (uint8_t)key;
                pr.exclude = (uint8_t)exclude;
                pr.lo = lo;
                pr.hi = hi;
                etw_status st = push(f, &pr);
                if (st != ETW_OK) return st;
            }
            if (!*p) break;
            if (*p++ != ',') goto bad;
        }
    }
    return ETW_OK;
bad:
    if (why) *why = "expected a number or a list of numbers and ranges (1,5,10-20)";
    return ETW_E_INVALID_ARG;
}

/* FIELD OP VALUE (etw_filter.h) into p: 1, or 0 when malformed. */
static int parse_where(etw_filter *f, const char *v, pred *p, etw_status *st) {
    *st = ETW_OK;
    size_t i = 0;
    while (v[i] && v[i] != '=' && v[i] != '!' && v[i] != '<' && v[i] != '>') i++;
    size_t fb = 0, fe = i;
    while (fb < fe && v[fb] == ' ') fb++;
    while (fe > fb && v[fe - 1] == ' ') fe--;
    if (!v[i] || fb == fe) return 0;
    if (v[i] == '!') {
        if (v[i + 1] != '=') return 0;
        p->op = OP_NE;
        i += 2;
    } else if (v[i] == '=') {
        p->op = OP_EQ;
        i++;
    } else {
        int lt = v[i] == '<';
        i++;
        if (v[i] == '=') {
            p->op = lt ? OP_LE : OP_GE;
            i++;
        } else {
            p->op = lt ? OP_LT : OP_GT;
        }
    }
    while (v[i] == ' ') i++;
    const char *val = v + i;
    size_t vn = strlen(val);
    while (vn && val[vn - 1] == ' ') vn--;
    /* a number: [-]decimal or 0x hex, or a decimal with a fraction/exponent */
    const char *q = val;
    int neg = *q == '-';
    if (neg) q++;
    uint64_t mag;
    if (vn && parse_u64(&q, UINT64_MAX, &mag) && q == val + vn) {
        p->num_ok = p->int_ok = 1;
        p->neg = (uint8_t)(neg && mag != 0);
        p->mag = mag;
        p->num = neg ? -(double)mag : (double)mag;
    } else if (vn && vn < 64) {
        char buf[64];
        memcpy(buf, val, vn);
        buf[vn] = 0;
        char *end;
        double d = strtod(buf, &end);
        if (end == buf + vn && d == d) {
            p->num_ok = 1;
            p->num = d;
        }
    }
    if (!p->num_ok && p->op != OP_EQ && p->op != OP_NE) return 0; /* < > take numbers */
    p->text = etw_alloc(&f->alloc, fe - fb + 1);
    p->wvalue = etw_alloc(&f->alloc, vn + 1);
    if (!p->text || !p->wvalue) {
        etw_free(&f->alloc, p->text);
        etw_free(&f->alloc, p->wvalue);
        *st = ETW_E_NOMEM;
        return 0;
    }
    memcpy(p->text, v + fb, fe - fb);
    p->text[fe - fb] = 0;
    p->text_len = fe - fb;
    memcpy(p->wvalue, val, vn);
    p->wvalue[vn] = 0;
    p->wvalue_len = vn;
    p->matched = 1; /* not tracked as a name */
    return 1;
}

etw_status etw_filter_add(etw_filter *f, etw_filter_key key, const char *value, const char **why) {
    static const char *no_reason = "";
    if (why) *why = no_reason;
    if (!f || !value) return ETW_E_INVALID_ARG;
    if (strlen(value) > ETW_FILTER_MAX_VALUE) {
        if (why) *why = "value too long";
        return ETW_E_LIMIT;
    }
    int exclude = value[0] == '!';
    const char *v = value + exclude;
    if (exclude && (key == ETW_FILTER_LEVEL || key == ETW_FILTER_SINCE || key == ETW_FILTER_UNTIL)) {
        if (why) *why = "'!' (exclude) does not apply to level, since or until";
        return ETW_E_INVALID_ARG;
    }
    pred p = {0};
    p.key = (uint8_t)key;
    p.exclude = (uint8_t)exclude;
    switch (key) {
    case ETW_FILTER_PROVIDER:
    case ETW_FILTER_EVENT:
    case ETW_FILTER_PROCESS: {
        size_t n = strlen(v);
        if (!n) {
            if (why) *why = key == ETW_FILTER_PROCESS ? "expected an image name or a glob ('powershell*')"
                                                      : "expected a name, a glob or (provider) a GUID";
            return ETW_E_INVALID_ARG;
        }
        p.matched = key == ETW_FILTER_PROCESS; /* not tracked: process names are not event names */
        if (key == ETW_FILTER_PROVIDER && etw_mf_parse_guid(v, &p.guid)) {
            p.is_guid = 1;
            return push(f, &p);
        }
        p.text = etw_alloc(&f->alloc, n + 1);
        if (!p.text) return ETW_E_NOMEM;
        memcpy(p.text, v, n + 1);
        p.text_len = n;
        etw_status st = push(f, &p);
        if (st != ETW_OK) etw_free(&f->alloc, p.text);
        return st;
    }
    case ETW_FILTER_ID:
        return add_list(f, key, v, exclude, UINT16_MAX, why);
    case ETW_FILTER_PID:
    case ETW_FILTER_TID:
        return add_list(f, key, v, exclude, UINT32_MAX, why);
    case ETW_FILTER_KEYWORDS: {
        const char *q = v;
        if (!parse_u64(&q, UINT64_MAX, &p.lo) || *q) {
            if (why) *why = "expected a keyword mask (0x... or decimal)";
            return ETW_E_INVALID_ARG;
        }
        return push(f, &p);
    }
    case ETW_FILTER_LEVEL: {
        const char *q = v;
        uint64_t lv;
        if (!parse_u64(&q, 255, &lv) || *q) {
            if (why) *why = "expected a level 0..255 (1 critical, 2 error, 3 warning, 4 info, 5 verbose)";
            return ETW_E_INVALID_ARG;
        }
        f->has_level = 1;
        f->level = (uint8_t)lv;
        return ETW_OK;
    }
    case ETW_FILTER_SINCE:
    case ETW_FILTER_UNTIL: {
        int64_t t;
        int rel;
        if (etw_filter_parse_time(v, &t, &rel) != ETW_OK) {
            if (why)
                *why = "expected an RFC 3339 time (2021-09-09T12:59:35Z), '2021-09-09 12:59:35' (UTC), a date "
                       "(2021-09-09) or a time from the trace start (12.5, 3s, 250ms, 2m)";
            return ETW_E_INVALID_ARG;
        }
        if (key == ETW_FILTER_SINCE) {
            f->has_since = 1;
            f->since = t;
            f->since_rel = rel;
        } else {
            f->has_until = 1;
            f->until = t;
            f->until_rel = rel;
        }
        return ETW_OK;
    }
    case ETW_FILTER_ERRORS:
        return push(f, &p);
    case ETW_FILTER_WHERE: {
        etw_status st;
        if (!parse_where(f, v, &p, &st)) {
            if (st != ETW_OK) return st;
            if (why)
                *why = "expected FIELD OP VALUE, OP one of = != < > <= >= ('Size>1048576', "
                       "'ImageFileName=powershell*'); < > <= >= take a number";
            return ETW_E_INVALID_ARG;
        }
        st = push(f, &p);
        if (st != ETW_OK) {
            etw_free(&f->alloc, p.text);
            etw_free(&f->alloc, p.wvalue);
        }
        return st;
    }
    }
    if (why) *why = "unknown filter key";
    return ETW_E_INVALID_ARG;
}

/* ---- matching ----------------------------------------------------------- */

/* 1/0 for a header predicate; -1 for one that needs the names. */
static int header_pred(const pred *p, const etw_event *ev, uint32_t pid, uint32_t tid) {
    switch (p->key) {
    case ETW_FILTER_PROVIDER:
        return p->is_guid ? etw_guid_equal(&p->guid, &ev->provider) : -1;
    case ETW_FILTER_ID:
        return ev->id >= p->lo && ev->id <= p->hi;
    case ETW_FILTER_PID:
        return pid >= p->lo && pid <= p->hi;
    case ETW_FILTER_TID:
        return tid >= p->lo && tid <= p->hi;
    case ETW_FILTER_KEYWORDS:
        return (ev->keywords & p->lo) != 0;
    default:
        return -1;
    }
}

/* The names an EVENT predicate is tested on: the display name (the JSON
 * "event"), and where the schema has a manifest's symbolic names the task
 * symbol with the opcode symbol ("GarbageCollection/GCSuspendEEBegin"),
 * the task symbol alone and the event symbol ("GCSuspendEEBegin_V1").
 * The joined form is built once per event, on the stack, when first
 * needed. */
typedef struct ev_names {
    const char *display;
    size_t display_len;
    const etw_schema *schema;
    int joined_state; /* 0 not built yet, 1 built, -1 none */
    size_t joined_len;
    char joined[2 * ETW_NAME_MAX + 2];
} ev_names;

static void ev_names_init(ev_names *n, const char *display, size_t len, const etw_schema *s) {
    n->display = display;
    n->display_len = len;
    n->schema = s;
    n->joined_state = 0;
    n->joined_len = 0;
}

static int glob_z(const pred *p, const char *text) {
    return text && etw_glob_match(p->text, p->text_len, text, strlen(text));
}

static int event_pred(const pred *p, ev_names *n) {
    if (etw_glob_match(p->text, p->text_len, n->display, n->display_len)) return 1;
    const etw_schema *s = n->schema;
    if (!s) return 0;
    if (glob_z(p, s->event_symbol) || glob_z(p, s->task_symbol)) return 1;
    if (!n->joined_state) {
        n->joined_state = -1;
        if (s->task_symbol && s->opcode_symbol) {
            /* cache strings are cut to ETW_NAME_MAX bytes: they fit */
            size_t tl = strlen(s->task_symbol), ol = strlen(s->opcode_symbol);
            if (tl + 1 + ol < sizeof n->joined) {
                memcpy(n->joined, s->task_symbol, tl);
                n->joined[tl] = '/';
                memcpy(n->joined + tl + 1, s->opcode_symbol, ol);
                n->joined_len = tl + 1 + ol;
                n->joined_state = 1;
            }
        }
    }
    return n->joined_state > 0 && etw_glob_match(p->text, p->text_len, n->joined, n->joined_len);
}

static int name_pred(const pred *p, const etw_label *l, ev_names *n) {
    switch (p->key) {
    case ETW_FILTER_PROVIDER:
        return etw_glob_match(p->text, p->text_len, l->provider, l->provider_len);
    case ETW_FILTER_EVENT:
        return event_pred(p, n);
    case ETW_FILTER_ERRORS:
        return l->error != NULL || l->status != ETW_OK;
    default:
        return 0;
    }
}

/* origin + offset, saturated (origin comes from the trace: any value). */
static int64_t add_sat(int64_t a, int64_t b) {
    if (b > 0 && a > INT64_MAX - b) return INT64_MAX;
    if (b < 0 && a < INT64_MIN - b) return INT64_MIN;
    return a + b;
}

static int time_ok(etw_filter *f, const etw_event *ev) {
    if (!f->has_origin) {
        f->has_origin = 1;
        f->origin = ev->timestamp;
    }
    if (f->has_since) {
        int64_t t = f->since_rel ? add_sat(f->origin, f->since) : f->since;
        if (ev->timestamp < t) return 0;
    }
    if (f->has_until) {
        int64_t t = f->until_rel ? add_sat(f->origin, f->until) : f->until;
        if (ev->timestamp >= t) return 0;
    }
    return 1;
}

/* Header stage: 0 rejected, 1 holds so far. *incl_hit gets the keys one of
 * whose inclusions held. */
static int header_stage(etw_filter *f, const etw_event *ev, uint32_t pid, uint32_t tid, unsigned *incl_hit) {
    if (f->has_level && ev->level > f->level) return 0;
    if ((f->has_since || f->has_until || !f->has_origin) && !time_ok(f, ev)) return 0;
    unsigned hit = 0;
    for (size_t i = 0; i < f->npreds; i++) {
        const pred *p = &f->preds[i];
        int m = header_pred(p, ev, pid, tid);
        if (m < 0) continue;
        if (m && p->exclude) return 0;
        if (m) hit |= 1u << p->key;
    }
    /* a key whose inclusions are all header predicates must have held */
    unsigned header_only = f->incl_keys & ~f->name_incl_keys;
    if ((hit & header_only) != header_only) return 0;
    *incl_hit = hit;
    return 1;
}

int etw_filter_match_header(etw_filter *f, const etw_event *ev) {
    if (!f || !ev) return 1;
    unsigned hit = 0;
    return header_stage(f, ev, ev->pid, ev->tid, &hit);
}

/* ---- tracking ----------------------------------------------------------- */

etw_status etw_filter_track_names(etw_filter *f) {
    if (!f) return ETW_E_INVALID_ARG;
    f->track = 1;
    return ETW_OK;
}

/* FNV-1a, never 0 (0 marks an empty slot); the kind is hashed in. */
static uint64_t name_hash(uint8_t kind, const char *s, size_t n) {
    uint64_t h = UINT64_C(0xcbf29ce484222325) ^ kind;
    for (size_t i = 0; i < n; i++) {
        h ^= (unsigned char)s[i];
        h *= UINT64_C(0x100000001b3);
    }
    return h ? h : 1;
}

static seen_name *names_slot(const etw_filter *f, uint64_t h, uint8_t kind, const char *s, size_t n) {
    size_t mask = f->names_cap - 1;
    for (size_t i = (size_t)h & mask;; i = (i + 1) & mask) {
        seen_name *e = &f->names[i];
        if (!e->hash || (e->hash == h && e->kind == kind && e->len == n && !memcmp(e->text, s, n))) return e;
    }
}

/* 1 when the name was seen before; 0 when it is new and now kept; -1
 * when it is new and not kept (no room past MAX_SEEN_NAMES, no memory). */
static int names_seen(etw_filter *f, uint8_t kind, const char *s, size_t n) {
    uint64_t h = name_hash(kind, s, n);
    if (f->names_cap) {
        seen_name *e = names_slot(f, h, kind, s, n);
        if (e->hash) return 1;
    }
    if (f->names_n >= MAX_SEEN_NAMES) return -1;
    if ((f->names_n + 1) * 2 > f->names_cap) {
        size_t nc = f->names_cap ? f->names_cap * 2 : 64;
        seen_name *nv = etw_calloc(&f->alloc, nc, sizeof *nv);
        if (!nv) return -1;
        seen_name *old = f->names;
        size_t oc = f->names_cap;
        f->names = nv;
        f->names_cap = nc;
        for (size_t i = 0; i < oc; i++)
            if (old[i].hash) *names_slot(f, old[i].hash, old[i].kind, old[i].text, old[i].len) = old[i];
        etw_free(&f->alloc, old);
    }
    char *t = etw_alloc(&f->alloc, n + 1);
    if (!t) return -1;
    memcpy(t, s, n);
    t[n] = 0;
    seen_name *e = names_slot(f, h, kind, s, n);
    e->hash = h;
    e->text = t;
    e->len = n;
    e->kind = kind;
    f->names_n++;
    return 0;
}

/* 1 when schema id was seen before; else it is marked. */
static int id_seen(etw_filter *f, uint32_t id) {
    size_t w = id / 64;
    if (w >= f->seen_words) {
        size_t nw = f->seen_words ? f->seen_words : 4;
        while (nw <= w) nw *= 2;
        uint64_t *v = etw_calloc(&f->alloc, nw, sizeof *v);
        if (!v) return 0; /* no memory: tested again next time */
        if (f->seen_words) memcpy(v, f->seen_ids, f->seen_words * sizeof *v);
        etw_free(&f->alloc, f->seen_ids);
        f->seen_ids = v;
        f->seen_words = nw;
    }
    uint64_t bit = UINT64_C(1) << (id % 64);
    if (f->seen_ids[w] & bit) return 1;
    f->seen_ids[w] |= bit;
    return 0;
}

/* Test the unmatched name predicates on ev's names, once per schema (per
 * distinct names for events without one), whatever the other predicates
 * say, and keep the display names for the suggestions. */
static void track(etw_filter *f, const etw_label *l, ev_names *n) {
    if (l->schema) {
        if (id_seen(f, l->schema->id)) return;
        names_seen(f, NAME_PROVIDER, l->provider, l->provider_len);
        names_seen(f, NAME_EVENT, l->event, l->event_len);
    } else {
        int p = names_seen(f, NAME_PROVIDER, l->provider, l->provider_len);
        int e = names_seen(f, NAME_EVENT, l->event, l->event_len);
        if (p == 1 && e == 1) return;
    }
    for (size_t i = 0; i < f->npreds && f->unmatched; i++) {
        pred *p = &f->preds[i];
        if (!p->text || p->matched) continue;
        int m = p->key == ETW_FILTER_PROVIDER
                    ? etw_glob_match(p->text, p->text_len, l->provider, l->provider_len)
                    : event_pred(p, n);
        if (m) {
            p->matched = 1;
            f->unmatched--;
        }
    }
}

etw_status etw_filter_merge_names(etw_filter *into, const etw_filter *from) {
    if (!into || !from || into->npreds != from->npreds) return ETW_E_INVALID_ARG;
    for (size_t i = 0; i < into->npreds; i++)
        if (into->preds[i].key != from->preds[i].key || into->preds[i].exclude != from->preds[i].exclude ||
            into->preds[i].text_len != from->preds[i].text_len)
            return ETW_E_INVALID_ARG;
    for (size_t i = 0; i < into->npreds; i++) {
        pred *p = &into->preds[i];
        if (p->text && !p->matched && from->preds[i].matched) {
            p->matched = 1;
            into->unmatched--;
        }
    }
    for (size_t i = 0; i < from->names_cap; i++) {
        const seen_name *e = &from->names[i];
        if (e->hash && names_seen(into, e->kind, e->text, e->len) < 0 && into->names_n < MAX_SEEN_NAMES)
            return ETW_E_NOMEM;
    }
    return ETW_OK;
}

/* ASCII case-insensitive edit distance of a[0..an) and b[0..bn), each cut
 * to DIST_MAX bytes. */
#define DIST_MAX 128
static unsigned lower_c(unsigned char c) { return c >= 'A' && c <= 'Z' ? c + 32u : c; }

static size_t edit_distance(const char *a, size_t an, const char *b, size_t bn) {
    size_t row[DIST_MAX + 1];
    if (an > DIST_MAX) an = DIST_MAX;
    if (bn > DIST_MAX) bn = DIST_MAX;
    for (size_t j = 0; j <= bn; j++) row[j] = j;
    for (size_t i = 1; i <= an; i++) {
        size_t diag = row[0];
        row[0] = i;
        for (size_t j = 1; j <= bn; j++) {
            size_t up = row[j];
            size_t best = diag + (lower_c((unsigned char)a[i - 1]) != lower_c((unsigned char)b[j - 1]));
            if (up + 1 < best) best = up + 1;
            if (row[j - 1] + 1 < best) best = row[j - 1] + 1;
            row[j] = best;
            diag = up;
        }
    }
    return row[bn];
}

/* 1 when needle[0..nn) occurs in hay[0..hn), ASCII case ignored. */
static int contains_ci(const char *hay, size_t hn, const char *needle, size_t nn) {
    if (!nn) return 0;
    for (size_t i = 0; i + nn <= hn; i++) {
        size_t k = 0;
        while (k < nn && lower_c((unsigned char)hay[i + k]) == lower_c((unsigned char)needle[k])) k++;
        if (k == nn) return 1;
    }
    return 0;
}

/* How far a seen name is from a pattern: names that hold the pattern's
 * text (its wildcards taken out) or are held in it come first, then by
 * shared prefix, then by edit distance. Smaller is nearer. */
static uint64_t near_score(const char *lit, size_t ln, const char *name, size_t nn) {
    int sub = contains_ci(name, nn, lit, ln) || contains_ci(lit, ln, name, nn);
    size_t pre = 0;
    while (pre < ln && pre < nn && lower_c((unsigned char)lit[pre]) == lower_c((unsigned char)name[pre])) pre++;
    if (pre > 255) pre = 255;
    size_t d = edit_distance(lit, ln, name, nn);
    return (uint64_t)!sub << 40 | (uint64_t)(255 - pre) << 32 | (uint64_t)d;
}

int etw_filter_unmatched(const etw_filter *f, size_t index, etw_filter_unmatched_info *out) {
    if (!f || !out || !f->track) return 0;
    const pred *p = NULL;
    for (size_t i = 0; i < f->npreds; i++) {
        if (!f->preds[i].text || f->preds[i].matched) continue;
        if (!index--) {
            p = &f->preds[i];
            break;
        }
    }
    if (!p) return 0;
    memset(out, 0, sizeof *out);
    out->key = (etw_filter_key)p->key;
    out->exclude = p->exclude;
    out->value = p->text;
    /* the pattern's literal text */
    char lit[DIST_MAX];
    size_t ln = 0;
    for (size_t i = 0; i < p->text_len && ln < sizeof lit; i++)
        if (p->text[i] != '*' && p->text[i] != '?') lit[ln++] = p->text[i];
    uint8_t kind = p->key == ETW_FILTER_PROVIDER ? NAME_PROVIDER : NAME_EVENT;
    uint64_t score[ETW_FILTER_MAX_NEAR];
    for (size_t i = 0; i < f->names_cap; i++) {
        const seen_name *e = &f->names[i];
        if (!e->hash || e->kind != kind) continue;
        uint64_t sc = near_score(lit, ln, e->text, e->len);
        size_t at = out->nnear;
        /* ties: by name, so the list does not depend on the table order */
        while (at > 0 && (score[at - 1] > sc || (score[at - 1] == sc && strcmp(out->near[at - 1], e->text) > 0)))
            at--;
        if (at >= ETW_FILTER_MAX_NEAR) continue;
        size_t last = out->nnear < ETW_FILTER_MAX_NEAR ? out->nnear : ETW_FILTER_MAX_NEAR - 1;
        for (size_t k = last; k > at; k--) {
            score[k] = score[k - 1];
            out->near[k] = out->near[k - 1];
        }
        score[at] = sc;
        out->near[at] = e->text;
        if (out->nnear < ETW_FILTER_MAX_NEAR) out->nnear++;
    }
    return 1;
}

static int cmp_result(int op, int c) {
    switch (op) {
    case OP_EQ: return c == 0;
    case OP_NE: return c != 0;
    case OP_LT: return c < 0;
    case OP_GT: return c > 0;
    case OP_LE: return c <= 0;
    default: return c >= 0;
    }
}

static int is_signed_type(uint16_t t) {
    return t == ETW_INTYPE_INT8 || t == ETW_INTYPE_INT16 || t == ETW_INTYPE_INT32 || t == ETW_INTYPE_INT64;
}

/* 1 when value v holds for WHERE predicate p (v is the field p names). */
static int where_value(const pred *p, const etw_value *v) {
    if (v->in_type == ETW_INTYPE_UNICODESTRING || v->in_type == ETW_INTYPE_ANSISTRING) {
        if (p->op != OP_EQ && p->op != OP_NE) return 0;
        char buf[ETW_FILTER_MAX_VALUE];
        size_t n = 0;
        if (v->in_type == ETW_INTYPE_UNICODESTRING) {
            size_t units = v->size / 2;
            while (units && !v->data[2 * units - 2] && !v->data[2 * units - 1]) units--;
            if (units > sizeof buf / 3) return 0;
            n = etw_utf16_to_utf8(v->data, units, buf);
        } else {
            while (n < v->size && v->data[n]) n++;
            if (n > sizeof buf) return 0;
            memcpy(buf, v->data, n);
        }
        int m = etw_glob_match(p->wvalue, p->wvalue_len, buf, n);
        return p->op == OP_EQ ? m : !m;
    }
    if (!p->num_ok) return 0;
    if (etw_value_is_integer(v) && p->int_ok) {
        int c;
        if (is_signed_type(v->in_type)) {
            int64_t x = etw_value_i64(v);
            if (p->neg) {
                /* the value is -mag: compare x + mag with 0 without overflow */
                if (x >= 0) c = 1;
                else {
                    uint64_t ax = (uint64_t)(-(x + 1)) + 1;
                    c = ax == p->mag ? 0 : ax < p->mag ? 1 : -1;
                }
            } else if (x < 0) {
                c = -1;
            } else {
                c = (uint64_t)x == p->mag ? 0 : (uint64_t)x < p->mag ? -1 : 1;
            }
        } else {
            uint64_t x = etw_value_u64(v);
            c = p->neg ? 1 : x == p->mag ? 0 : x < p->mag ? -1 : 1;
        }
        return cmp_result(p->op, c);
    }
    if (etw_value_is_integer(v) || v->in_type == ETW_INTYPE_FLOAT || v->in_type == ETW_INTYPE_DOUBLE) {
        double x = etw_value_is_integer(v) ? (is_signed_type(v->in_type) ? (double)etw_value_i64(v)
                                                                        : (double)etw_value_u64(v))
                                           : etw_value_double(v);
        if (x != x) return p->op == OP_NE;
        return cmp_result(p->op, x < p->num ? -1 : x > p->num ? 1 : 0);
    }
    return 0;
}

/* 1 when ev has top-level field p->text and it holds; 0 otherwise (no
 * schema, no such field). */
static int where_pred(const pred *p, etw_decoder *d, const etw_event *ev, const etw_schema *s) {
    if (!d || !s) return 0;
    etw_decode_cursor c;
    if (etw_decoder_begin(d, ev, s, &c) != ETW_OK) return 0;
    etw_value v;
    while (etw_decode_next(&c, &v) == ETW_OK) {
        if (v.depth || v.in_array || !v.name || strcmp(v.name, p->text)) continue;
        if (v.kind != ETW_VALUE_SCALAR || !v.data) return 0;
        return where_value(p, &v);
    }
    return 0;
}

int etw_filter_match(etw_filter *f, etw_decoder *d, const etw_event *ev, etw_label *label) {
    if (!f || !ev) return -1;
    etw_label local;
    etw_label *l = label ? label : &local;
    if (!f->npreds && !f->has_level && !f->has_since && !f->has_until && !(f->track && f->unmatched)) {
        /* nothing to test (the names are not asked for): every event */
        if (!f->has_origin) {
            f->has_origin = 1;
            f->origin = ev->timestamp;
        }
        return !(d || label) || etw_label_event(d, ev, l) == ETW_OK ? 1 : -1;
    }
    if ((d || label || f->needs_names) && etw_label_event(d, ev, l) != ETW_OK) return -1;
    int labeled = d || label || f->needs_names;
    ev_names n;
    ev_names_init(&n, labeled ? l->event : "", labeled ? l->event_len : 0, labeled ? l->schema : NULL);
    if (f->track && f->unmatched && labeled) track(f, l, &n);
    unsigned hit = 0;
    if (!header_stage(f, ev, labeled ? l->pid : ev->pid, labeled ? l->tid : ev->tid, &hit)) return 0;
    if (!f->needs_names) return 1;
    int pstate = 0; /* the process name: 0 not asked yet, 1 known, -1 none */
    const char *pname = NULL;
    size_t pname_len = 0;
    for (size_t i = 0; i < f->npreds; i++) {
        const pred *p = &f->preds[i];
        if (header_pred(p, ev, 0, 0) >= 0) continue;
        int m;
        if (p->key == ETW_FILTER_WHERE) continue; /* after the names: it decodes the payload */
        if (p->key == ETW_FILTER_PROCESS) {
            if (!pstate) pstate = etw_decoder_process_name(d, ev, l->schema, l->pid, &pname, &pname_len) ? 1 : -1;
            m = pstate > 0 && etw_glob_match(p->text, p->text_len, pname, pname_len);
        } else {
            m = name_pred(p, l, &n);
        }
        if (m && p->exclude) return 0;
        if (m) hit |= 1u << p->key;
    }
    if ((hit & f->incl_keys) != f->incl_keys) return 0;
    /* WHERE: each must hold (AND), each exclusion must not */
    for (size_t i = 0; i < f->npreds; i++) {
        const pred *p = &f->preds[i];
        if (p->key != ETW_FILTER_WHERE) continue;
        if (where_pred(p, d, ev, l->schema) == p->exclude) return 0;
    }
    return 1;
}
