/* etw_filter.c - event selection (see etw_filter.h). */
#include "etwdecode/etw_filter.h"

#include <string.h>

#include "../common/etw_alloc.h"
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
} pred;

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
    for (size_t i = 0; i < f->npreds; i++) etw_free(&a, f->preds[i].text);
    etw_free(&a, f->preds);
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
                 {"until", ETW_FILTER_UNTIL},       {"errors", ETW_FILTER_ERRORS}};
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

static int parse_rfc3339(const char *s, int64_t *ft) {
    int64_t y, mo, d, h, mi, se, frac = 0;
    if (!fixed_digits(&s, 4, &y) || *s++ != '-' || !fixed_digits(&s, 2, &mo) || *s++ != '-' ||
        !fixed_digits(&s, 2, &d))
        return 0;
    if (*s != 'T' && *s != 't' && *s != ' ') return 0;
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
    int64_t offset_min = 0;
    if (*s == 'Z' || *s == 'z') {
        s++;
    } else if (*s == '+' || *s == '-') {
        int sign = *s++ == '-' ? -1 : 1;
        int64_t oh, om;
        if (!fixed_digits(&s, 2, &oh) || *s++ != ':' || !fixed_digits(&s, 2, &om) || oh > 23 || om > 59)
            return 0;
        offset_min = sign * (oh * 60 + om);
    } else {
        return 0;
    }
    if (*s) return 0;
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

static int parse_seconds(const char *s, int64_t *ticks) {
    if (*s == '+') s++;
    int64_t whole = 0, frac = 0;
    int n = 0;
    for (; is_digit(*s); s++, n++) {
        whole = whole * 10 + (*s - '0');
        if (whole > MAX_RELATIVE_SECONDS) return 0;
    }
    int nf = 0;
    if (*s == '.') {
        s++;
        for (; is_digit(*s); s++, nf++)
            if (nf < 7) frac = frac * 10 + (*s - '0');
    }
    if ((!n && !nf) || *s) return 0;
    for (int i = nf; i < 7; i++) frac *= 10;
    *ticks = whole * TICKS_PER_SECOND + frac;
    return 1;
}

etw_status etw_filter_parse_time(const char *text, int64_t *filetime, int *relative) {
    if (!text || !filetime || !relative) return ETW_E_INVALID_ARG;
    int64_t v;
    if (parse_seconds(text, &v)) {
        *filetime = v;
        *relative = 1;
        return ETW_OK;
    }
    if (parse_rfc3339(text, &v)) {
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
    if (!p->exclude) f->incl_keys |= 1u << p->key;
    if (p->key == ETW_FILTER_EVENT || p->key == ETW_FILTER_ERRORS ||
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
    case ETW_FILTER_EVENT: {
        size_t n = strlen(v);
        if (!n) {
            if (why) *why = "expected a name, a glob or (provider) a GUID";
            return ETW_E_INVALID_ARG;
        }
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
            if (why) *why = "expected an RFC 3339 time (2021-09-09T12:59:35Z) or seconds from the trace start (12.5)";
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

static int name_pred(const pred *p, const etw_label *l) {
    switch (p->key) {
    case ETW_FILTER_PROVIDER:
        return etw_glob_match(p->text, p->text_len, l->provider, l->provider_len);
    case ETW_FILTER_EVENT:
        return etw_glob_match(p->text, p->text_len, l->event, l->event_len);
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

int etw_filter_match(etw_filter *f, etw_decoder *d, const etw_event *ev, etw_label *label) {
    if (!f || !ev) return -1;
    etw_label local;
    etw_label *l = label ? label : &local;
    if ((d || label || f->needs_names) && etw_label_event(d, ev, l) != ETW_OK) return -1;
    int labeled = d || label || f->needs_names;
    unsigned hit = 0;
    if (!header_stage(f, ev, labeled ? l->pid : ev->pid, labeled ? l->tid : ev->tid, &hit)) return 0;
    if (!f->needs_names) return 1;
    for (size_t i = 0; i < f->npreds; i++) {
        const pred *p = &f->preds[i];
        if (header_pred(p, ev, 0, 0) >= 0) continue;
        int m = name_pred(p, l);
        if (m && p->exclude) return 0;
        if (m) hit |= 1u << p->key;
    }
    return (hit & f->incl_keys) == f->incl_keys;
}
