/* etwdump - which --fields names the selected events have: a warning at the
 * end for each name no selected event's schema has as a top-level field,
 * with the nearest field names seen.
 *
 * Per event (until every name is found): the event's schema (the decoder
 * caches it; the filter or the renderer resolves it anyway), skipped when
 * its id is in a small table of schemas already looked at; else its
 * top-level names are compared with the --fields names and, while there is
 * room, remembered for the suggestions. Nothing is allocated per event. */
#include <stdlib.h>
#include <string.h>

#include "etwdump.h"

#define SEEN_SLOTS 256       /* schema ids already looked at (direct-mapped) */
#define NAMES_MAX 4096       /* distinct field names kept for suggestions */
#define NAMES_BYTES 131072

struct field_check {
    const options *o;
    uint64_t found[ETW_RENDER_MAX_FIELDS / 64];
    int nfound;
    uint32_t seen[SEEN_SLOTS]; /* schema id + 1; 0: empty */
    const char *names[NAMES_MAX];
    size_t nnames;
    int overflow; /* a name did not fit: no suggestions (they would depend
                   * on which names came first, so differ with -j) */
    char arena[NAMES_BYTES];
    size_t used;
};

field_check *field_check_new(const options *o) {
    if (!o->nfields) return NULL;
    field_check *fc = calloc(1, sizeof *fc);
    if (fc) fc->o = o;
    return fc;
}

void field_check_free(field_check *fc) { free(fc); }

static void mark(field_check *fc, int i) {
    if (fc->found[i / 64] & (UINT64_C(1) << (i % 64))) return;
    fc->found[i / 64] |= UINT64_C(1) << (i % 64);
    fc->nfound++;
}

static int is_found(const field_check *fc, int i) { return (fc->found[i / 64] >> (i % 64)) & 1; }

static void remember(field_check *fc, const char *name) {
    for (size_t i = 0; i < fc->nnames; i++)
        if (!strcmp(fc->names[i], name)) return;
    size_t n = strlen(name) + 1;
    if (fc->nnames == NAMES_MAX || n > sizeof fc->arena - fc->used) {
        fc->overflow = 1;
        return;
    }
    memcpy(fc->arena + fc->used, name, n);
    fc->names[fc->nnames++] = fc->arena + fc->used;
    fc->used += n;
}

void field_check_event(field_check *fc, etw_decoder *dec, const etw_event *ev) {
    if (!fc || fc->nfound == fc->o->nfields) return;
    const etw_schema *s;
    if (etw_decoder_resolve(dec, ev, &s, NULL) != ETW_OK || !s) return;
    uint32_t *slot = &fc->seen[s->id % SEEN_SLOTS];
    if (*slot == s->id + 1) return;
    *slot = s->id + 1;
    for (uint16_t p = 0; p < s->top_count && p < s->prop_count; p++) {
        const char *name = s->props[p].name;
        for (int i = 0; i < fc->o->nfields; i++)
            if (!strcmp(name, fc->o->fields[i])) mark(fc, i);
        remember(fc, name);
    }
}

void field_check_merge(field_check *into, const field_check *from) {
    if (!into || !from) return;
    for (int i = 0; i < from->o->nfields; i++)
        if (is_found(from, i)) mark(into, i);
    for (size_t i = 0; i < from->nnames; i++) remember(into, from->names[i]);
    if (from->overflow) into->overflow = 1;
}

/* Edit distance, ASCII case-insensitive, the names cut at 63 bytes. */
static int distance(const char *a, const char *b) {
    size_t la = strlen(a), lb = strlen(b);
    if (la > 63) la = 63;
    if (lb > 63) lb = 63;
    int row[64];
    for (size_t j = 0; j <= lb; j++) row[j] = (int)j;
    for (size_t i = 1; i <= la; i++) {
        int diag = row[0];
        row[0] = (int)i;
        for (size_t j = 1; j <= lb; j++) {
            int ca = a[i - 1], cb = b[j - 1];
            if (ca >= 'A' && ca <= 'Z') ca += 32;
            if (cb >= 'A' && cb <= 'Z') cb += 32;
            int v = diag + (ca != cb);
            if (row[j] + 1 < v) v = row[j] + 1;
            if (row[j - 1] + 1 < v) v = row[j - 1] + 1;
            diag = row[j];
            row[j] = v;
        }
    }
    return row[lb];
}

void field_check_report(const field_check *fc) {
    if (!fc) return;
    const options *o = fc->o;
    for (int i = 0; i < o->nfields; i++) {
        if (is_found(fc, i)) continue;
        int again = 0; /* the same name given twice is said once */
        for (int j = 0; j < i && !again; j++) again = !strcmp(o->fields[j], o->fields[i]);
        if (again) continue;
        fprintf(stderr, "etwdump: --fields '%s' matched no field of the selected events", o->fields[i]);
        /* the three nearest names seen, when near: at most half the name's
         * length in edits; ties in name order, so that the same names give
         * the same line whatever order they were seen in (-j) */
        const char *best[3] = {NULL, NULL, NULL};
        int bd[3] = {0, 0, 0};
        int limit = (int)strlen(o->fields[i]) / 2;
        if (limit < 1) limit = 1;
        for (size_t k = 0; k < fc->nnames && !fc->overflow; k++) {
            int d = distance(o->fields[i], fc->names[k]);
            if (d > limit) continue;
            for (int b = 0; b < 3; b++)
                if (!best[b] || d < bd[b] || (d == bd[b] && strcmp(fc->names[k], best[b]) < 0)) {
                    for (int m = 2; m > b; m--) best[m] = best[m - 1], bd[m] = bd[m - 1];
                    best[b] = fc->names[k];
                    bd[b] = d;
                    break;
                }
        }
        if (best[0]) {
            fprintf(stderr, "; field names seen include: ");
            for (int b = 0; b < 3 && best[b]; b++) fprintf(stderr, "%s%s", b ? ", " : "", best[b]);
        }
        fprintf(stderr, "\n");
    }
}
