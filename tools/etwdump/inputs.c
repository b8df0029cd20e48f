/* etwdump - the inputs: files as given, directories walked for *.etl. */
#define _POSIX_C_SOURCE 200809L
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "etwdump.h"

/* Deepest directory nesting walked (a bound against symlink loops too). */
#define MAX_DEPTH 32

typedef struct name_list {
    char **v;
    size_t n, cap;
} name_list;

static int list_add(name_list *l, char *s) {
    if (l->n == l->cap) {
        size_t nc = l->cap ? l->cap * 2 : 16;
        char **nv = realloc(l->v, nc * sizeof *nv);
        if (!nv) return 0;
        l->v = nv;
        l->cap = nc;
    }
    l->v[l->n++] = s;
    return 1;
}

static int by_name(const void *a, const void *b) {
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static int ends_with_etl(const char *s) {
    size_t n = strlen(s);
    return n > 4 && (s[n - 4] == '.') && (s[n - 3] == 'e' || s[n - 3] == 'E') &&
           (s[n - 2] == 't' || s[n - 2] == 'T') && (s[n - 1] == 'l' || s[n - 1] == 'L');
}

/* The *.etl files under dir, recursively, into out (sorted per directory). */
static void walk(const char *dir, int depth, name_list *out, int quiet, int *skipped) {
    if (depth > MAX_DEPTH) return;
    DIR *d = opendir(dir);
    if (!d) {
        if (!quiet) fprintf(stderr, "etwdump: %s: cannot read directory: %s\n", dir, strerror(errno));
        (*skipped)++;
        return;
    }
    name_list here = {0};
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
        size_t n = strlen(dir) + strlen(e->d_name) + 2;
        char *p = malloc(n);
        if (!p) break;
        snprintf(p, n, "%s/%s", dir, e->d_name);
        if (!list_add(&here, p)) {
            free(p);
            break;
        }
    }
    closedir(d);
    if (here.n) qsort(here.v, here.n, sizeof *here.v, by_name);
    for (size_t i = 0; i < here.n; i++) {
        struct stat st;
        if (stat(here.v[i], &st) == 0 && S_ISDIR(st.st_mode)) {
            walk(here.v[i], depth + 1, out, quiet, skipped);
            free(here.v[i]);
        } else if (ends_with_etl(here.v[i]) && list_add(out, here.v[i])) {
            continue;
        } else {
            free(here.v[i]);
        }
    }
    free(here.v);
}

static void report_open(const char *path, etw_status s, int err) {
    if (s == ETW_E_IO)
        fprintf(stderr, "etwdump: %s: cannot read: %s\n", path, strerror(err));
    else if (s == ETW_E_NOT_ETL)
        fprintf(stderr, "etwdump: %s: not an ETL file (no buffer header and log-file header at offset 0)\n",
                path);
    else
        fprintf(stderr, "etwdump: %s: %s\n", path, etw_strerror(s));
}

int open_inputs(const options *o, etw_multi *m, diag_ctx *dc, int *skipped) {
    name_list files = {0};
    *skipped = 0;
    for (int i = 0; i < o->ninputs; i++) {
        struct stat st;
        if (stat(o->inputs[i], &st) == 0 && S_ISDIR(st.st_mode)) {
            size_t before = files.n;
            walk(o->inputs[i], 0, &files, o->quiet, skipped);
            if (files.n == before && !o->quiet)
                fprintf(stderr, "etwdump: %s: no .etl file in this directory\n", o->inputs[i]);
            if (files.n == before) (*skipped)++;
        } else {
            char *p = strdup(o->inputs[i]);
            if (!p || !list_add(&files, p)) {
                free(p);
                fprintf(stderr, "etwdump: out of memory\n");
                break;
            }
        }
    }
    int opened = 0;
    for (size_t i = 0; i < files.n; i++) {
        dc->path = files.v[i];
        errno = 0;
        etw_status s = etw_multi_add_file(m, files.v[i]);
        if (s != ETW_OK) {
            report_open(files.v[i], s, errno);
            (*skipped)++;
        } else {
            opened++;
        }
        free(files.v[i]);
    }
    free(files.v);
    dc->path = NULL;
    return opened;
}

unsigned long long input_bytes(etw_multi *m) {
    unsigned long long total = 0;
    for (size_t i = 0; i < etw_multi_count(m); i++) {
        struct stat st;
        if (stat(etw_multi_name(m, i), &st) == 0) total += (unsigned long long)st.st_size;
    }
    return total;
}
