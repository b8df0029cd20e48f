/* etw_dir.c - the entries of a directory, sorted (see etw_dir.h). */
#define _POSIX_C_SOURCE 200809L

#include "etw_dir.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#ifndef _WIN32
#include <dirent.h>
#endif

static int name_cmp(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

void etw_dir_free(const etw_allocator *al, char **names, size_t n) {
    for (size_t i = 0; i < n; i++) etw_free(al, names[i]);
    etw_free(al, names);
}

etw_status etw_dir_list(const etw_allocator *al, const char *dir, int full, size_t max, char ***out, size_t *n) {
    *out = NULL;
    *n = 0;
#ifdef _WIN32
    (void)al;
    (void)dir;
    (void)full;
    (void)max;
    return ETW_E_UNSUPPORTED;
#else
    DIR *d = opendir(dir);
    if (!d) return ETW_E_IO;
    char **names = NULL;
    size_t cnt = 0, cap = 0, dl = full ? strlen(dir) : 0;
    etw_status st = ETW_OK;
    struct dirent *de;
    while ((de = readdir(d)) != NULL && cnt < max) {
        if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, "..")) continue;
        if (cnt == cap) {
            size_t ncap = cap ? cap * 2 : 64;
            char **nn = etw_calloc(al, ncap, sizeof *nn);
            if (!nn) {
                st = ETW_E_NOMEM;
                break;
            }
            if (cnt) memcpy(nn, names, cnt * sizeof *nn);
            etw_free(al, names);
            names = nn;
            cap = ncap;
        }
        size_t nl = strlen(de->d_name);
        char *p = etw_alloc(al, dl + 1 + nl + 1);
        if (!p) {
            st = ETW_E_NOMEM;
            break;
        }
        if (full) {
            memcpy(p, dir, dl);
            p[dl] = '/';
            memcpy(p + dl + 1, de->d_name, nl + 1);
        } else {
            memcpy(p, de->d_name, nl + 1);
        }
        names[cnt++] = p;
    }
    int e = errno;
    closedir(d);
    if (st != ETW_OK) {
        etw_dir_free(al, names, cnt);
        errno = e;
        return st;
    }
    if (cnt) qsort(names, cnt, sizeof *names, name_cmp);
    *out = names;
    *n = cnt;
    return ETW_OK;
#endif
}
