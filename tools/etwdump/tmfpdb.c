/* etwdump --tmf-from-pdb FILE.pdb: the WPP trace message formats a driver's
 * PDB keeps (S_ANNOTATION "TMF:" records, etw_pdb_annotations_file), printed
 * as tracepdb writes .tmf files: for each message GUID, in the order the PDB
 * first names it, its GUID line once, then each of its messages (#typev
 * line, argument block). Every message is held until the end (to group them
 * by GUID): memory is about the annotations' text. "TMC:" records (control
 * GUIDs) are not printed: tracepdb's .tmf files do not hold them either.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "etwdump.h"

typedef struct tmf_msg {
    size_t group; /* index of its GUID line */
    char *body;   /* the lines after the GUID line, each ended by '\n' */
} tmf_msg;

typedef struct tmf_list {
    char **guid_lines; /* distinct, in first-seen order */
    size_t ngroups, cap_groups;
    tmf_msg *msgs;
    size_t nmsgs, cap_msgs;
} tmf_list;

static int grow(void **buf, size_t *cap, size_t need, size_t elem) {
    if (need <= *cap) return 1;
    size_t n = *cap ? *cap * 2 : 64;
    if (n < need) n = need;
    void *nb = realloc(*buf, n * elem);
    if (!nb) return 0;
    *buf = nb;
    *cap = n;
    return 1;
}

static etw_status collect(void *ctx, const etw_pdb_annotation *a) {
    tmf_list *l = ctx;
    if (a->kind != ETW_PDB_TMF || a->count == 0) return ETW_OK;
    const char *guid_line = a->strings[0];
    size_t g = 0;
    /* a driver has a few message GUIDs (one per source file): a linear search */
    while (g < l->ngroups && strcmp(l->guid_lines[g], guid_line) != 0) g++;
    if (g == l->ngroups) {
        if (!grow((void **)&l->guid_lines, &l->cap_groups, g + 1, sizeof(char *))) return ETW_E_NOMEM;
        size_t n = strlen(guid_line) + 1;
        char *copy = malloc(n);
        if (!copy) return ETW_E_NOMEM;
        memcpy(copy, guid_line, n);
        l->guid_lines[l->ngroups++] = copy;
    }
    if (!grow((void **)&l->msgs, &l->cap_msgs, l->nmsgs + 1, sizeof(tmf_msg))) return ETW_E_NOMEM;
    size_t skip = strlen(guid_line) + 1; /* the GUID line and its '\n' */
    size_t n = a->text_len - skip + 1;
    char *body = malloc(n);
    if (!body) return ETW_E_NOMEM;
    memcpy(body, a->text + skip, n);
    l->msgs[l->nmsgs].group = g;
    l->msgs[l->nmsgs].body = body;
    l->nmsgs++;
    return ETW_OK;
}

static void list_free(tmf_list *l) {
    for (size_t i = 0; i < l->ngroups; i++) free(l->guid_lines[i]);
    for (size_t i = 0; i < l->nmsgs; i++) free(l->msgs[i].body);
    free(l->guid_lines);
    free(l->msgs);
}

int run_tmf_from_pdb(const options *o) {
    tmf_list l;
    memset(&l, 0, sizeof l);
    const char *reason = NULL;
    etw_pdb_options po = {NULL, &reason};
    etw_status st = etw_pdb_annotations_file(o->tmf_pdb, &po, collect, &l);
    if (st != ETW_OK) {
        fprintf(stderr, "etwdump: %s: %s%s%s\n", o->tmf_pdb, etw_strerror(st), reason ? ": " : "",
                reason ? reason : "");
        list_free(&l);
        return EXIT_FATAL;
    }
    FILE *out = stdout;
    if (o->output && !(out = fopen(o->output, "wb"))) {
        fprintf(stderr, "etwdump: %s: %s\n", o->output, strerror(errno));
        list_free(&l);
        return EXIT_FATAL;
    }
    for (size_t g = 0; g < l.ngroups; g++) {
        fprintf(out, "%s\n", l.guid_lines[g]);
        for (size_t i = 0; i < l.nmsgs; i++)
            if (l.msgs[i].group == g) fputs(l.msgs[i].body, out);
    }
    int failed = ferror(out);
    if (out != stdout ? fclose(out) != 0 : fflush(out) != 0) failed = 1;
    if (failed) fprintf(stderr, "etwdump: %s: write error\n", o->output ? o->output : "standard output");
    if (l.nmsgs == 0) fprintf(stderr, "etwdump: %s: no WPP trace message formats (TMF annotations)\n", o->tmf_pdb);
    list_free(&l);
    return failed ? EXIT_FATAL : EXIT_CLEAN;
}
