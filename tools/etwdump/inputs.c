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

static int ends_with(const char *s, const char *suffix) {
    size_t n = strlen(s), k = strlen(suffix);
    if (n <= k) return 0;
    for (size_t i = 0; i < k; i++) {
        char c = s[n - k + i];
        if (c >= 'A' && c <= 'Z') c = (char)(c - 'A' + 'a');
        if (c != suffix[i]) return 0;
    }
    return 1;
}

/* What a directory walk reads: traces, and traces compressed as people hand
 * them over (PerfView's .etl.zip; .etl.gz, .etl.zst, .etl.xz, .etl.bz2). */
static int ends_with_etl(const char *s) {
    static const char *const suffixes[] = {".etl", ".etl.zip", ".etl.gz", ".etl.zst", ".etl.xz", ".etl.bz2"};
    for (size_t i = 0; i < sizeof suffixes / sizeof *suffixes; i++)
        if (ends_with(s, suffixes[i])) return 1;
    return 0;
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
        /* "dir/" as given: no second slash ("dir//a.etl" in "file") */
        size_t dl = strlen(dir);
        snprintf(p, n, "%s%s%s", dir, dl && dir[dl - 1] == '/' ? "" : "/", e->d_name);
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

/* ---- traces from streams: standard input ("-"), pipes, devices ---- */

/* Their bytes, kept until inputs_free (the readers borrow them). */
static name_list streams;
/* the streams read (a compressed one is not kept in streams) */
static size_t streams_read;

int inputs_all_files(void) { return streams_read == 0; }

void inputs_free(void) {
    for (size_t i = 0; i < streams.n; i++) free(streams.v[i]);
    free(streams.v);
    memset(&streams, 0, sizeof streams);
}

/* Reads f to its end into *buf (malloc'd). 0 on success; -1 with errno on a
 * read error; -2 when it is longer than STREAM_MAX. */
static int slurp(FILE *f, unsigned char **buf, size_t *len) {
    size_t cap = 0, n = 0;
    unsigned char *b = NULL;
    for (;;) {
        if (n == cap) {
            if (cap == STREAM_MAX) { /* full: one byte more is too long */
                int c = fgetc(f);
                if (c == EOF && !ferror(f)) break;
                int e = errno;
                free(b);
                errno = e;
                return c == EOF ? -1 : -2;
            }
            size_t nc = cap ? cap * 2 : (size_t)1 << 20;
            if (nc > STREAM_MAX) nc = STREAM_MAX;
            unsigned char *nb = realloc(b, nc);
            if (!nb) {
                free(b);
                errno = ENOMEM;
                return -1;
            }
            b = nb;
            cap = nc;
        }
        size_t k = fread(b + n, 1, cap - n, f);
        n += k;
        if (k == 0) {
            if (ferror(f)) {
                int e = errno;
                free(b);
                errno = e;
                return -1;
            }
            break;
        }
    }
    *buf = b;
    *len = n;
    return 0;
}

static void report_open(const char *path, etw_status s, int err, etw_file_kind kind);

/* A trace that cannot be read at offsets: its bytes into memory, then a
 * reader over them. 1 when added; 0 after reporting why not. */
static int add_stream(etw_multi *m, const char *path, const char *shown, const etw_reader_options *ro) {
    FILE *f = strcmp(path, "-") ? fopen(path, "rb") : stdin;
    unsigned char *buf = NULL;
    size_t len = 0;
    int k = f ? slurp(f, &buf, &len) : -1;
    int e = errno;
    if (f && f != stdin) fclose(f);
    if (k == -2) {
        fprintf(stderr, "etwdump: %s: longer than %u MiB; save it to a file first\n", shown,
                (unsigned)(STREAM_MAX >> 20));
        return 0;
    }
    if (k != 0) {
        fprintf(stderr, "etwdump: %s: cannot read: %s\n", shown, strerror(e));
        return 0;
    }
    (void)ro; /* the multi's reader options apply */
    if (len == 0) {
        fprintf(stderr, "etwdump: %s: empty, not an ETL file\n", shown);
        free(buf);
        return 0;
    }
    etw_file_kind kind = etw_sniff(buf, len);
    etw_status s = etw_multi_add_memory(m, buf, len, shown);
    if (s == ETW_OK) streams_read++;
    if (s != ETW_OK || etw_file_kind_compressed(kind)) {
        free(buf); /* a compressed stream was unpacked into the multi's memory */
        if (s != ETW_OK) report_open(shown, s, 0, kind);
        return s == ETW_OK;
    }
    if (!list_add(&streams, (char *)buf)) { /* the reader reads buf in place */
        fprintf(stderr, "etwdump: out of memory\n");
        exit(2);
    }
    return 1;
}

/* The kind of the file at path from its first bytes (ETW_KIND_UNKNOWN when
 * it cannot be read). */
static etw_file_kind sniff_file(const char *path) {
    FILE *f = fopen(path, "rb");
    if (!f) return ETW_KIND_UNKNOWN;
    unsigned char head[ETW_SNIFF_BYTES];
    size_t n = fread(head, 1, sizeof head, f);
    fclose(f);
    return etw_sniff(head, n);
}

/* Why an input was not added, naming what the file is when it is not a
 * trace (an EVTX log, an archive, text) by its first bytes. */
static void report_open(const char *path, etw_status s, int err, etw_file_kind kind) {
    const char *what = etw_file_kind_describe(kind);
    if (s == ETW_E_IO)
        fprintf(stderr, "etwdump: %s: cannot read: %s\n", path, err ? strerror(err) : "read error");
    else if (etw_file_kind_compressed(kind) && s == ETW_E_LIMIT)
        fprintf(stderr,
                "etwdump: %s: %s that decompresses to more than its limit (%u times its size, at least %llu MiB, "
                "at most %llu MiB: docs/limits.md); decompress it yourself if it is a real trace\n",
                path, what, ETW_UNPACK_RATIO, ETW_UNPACK_FLOOR >> 20, ETW_UNPACK_MAX >> 20);
    else if (etw_file_kind_compressed(kind) && (s == ETW_E_DECOMPRESS || s == ETW_E_CORRUPT))
        fprintf(stderr, "etwdump: %s: %s that does not decompress (damaged, cut short or encrypted)\n", path, what);
    else if (etw_file_kind_compressed(kind) && s == ETW_E_UNSUPPORTED)
        fprintf(stderr, "etwdump: %s: %s; reading it needs libarchive (libarchive.so.13, Debian package "
                        "libarchive13), which could not be loaded\n", path, what);
    else if (kind == ETW_KIND_ZIP && s == ETW_E_NOT_ETL)
        fprintf(stderr, "etwdump: %s: a ZIP archive with no ETL trace inside (no *.etl entry that is a trace)\n",
                path);
    else if (etw_file_kind_compressed(kind) && s == ETW_E_NOT_ETL)
        fprintf(stderr, "etwdump: %s: %s whose content is not an ETL trace\n", path, what);
    else if (s == ETW_E_NOT_ETL && (kind == ETW_KIND_ETL || kind == ETW_KIND_UNKNOWN))
        fprintf(stderr, "etwdump: %s: not an ETL file (no buffer header and log-file header at offset 0)\n",
                path);
    else if (s == ETW_E_NOT_ETL)
        fprintf(stderr, "etwdump: %s: %s, not an ETL trace (etwdump reads .etl files)\n", path, what);
    else
        fprintf(stderr, "etwdump: %s: %s\n", path, etw_strerror(s));
}

int open_inputs(const options *o, const etw_reader_options *ro, etw_multi *m, diag_ctx *dc, int *skipped) {
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
    int opened = 0, lost_entries = 0;
    dc->lost_entries = &lost_entries;
    for (size_t i = 0; i < files.n; i++) {
        int from_stdin = !strcmp(files.v[i], "-");
        const char *shown = from_stdin ? "standard input" : files.v[i];
        dc->path = shown;
        errno = 0;
        etw_status s = from_stdin ? ETW_E_IO : etw_multi_add_file(m, files.v[i]);
        int err = errno;
        if (from_stdin || (s == ETW_E_IO && err == ESPIPE)) { /* a stream: read it whole */
            if (add_stream(m, files.v[i], shown, ro))
                opened++;
            else
                (*skipped)++;
        } else if (s != ETW_OK) {
            report_open(files.v[i], s, err, s == ETW_E_IO ? ETW_KIND_UNKNOWN : sniff_file(files.v[i]));
            (*skipped)++;
        } else {
            opened++;
        }
        free(files.v[i]);
    }
    free(files.v);
    dc->path = NULL;
    dc->lost_entries = NULL;
    *skipped += lost_entries;
    return opened;
}

unsigned long long input_bytes(etw_multi *m) {
    unsigned long long total = 0;
    for (size_t i = 0; i < etw_multi_count(m); i++) {
        struct stat st;
        if (stat(etw_multi_name(m, i), &st) == 0)
            total += (unsigned long long)st.st_size;
    }
    return total;
}
