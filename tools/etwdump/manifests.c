/* manifests.c - the -m options of a run: one manifest catalog, built once
 * and shared by every decoder (files named directly load when a decoder is
 * set up, the files of a folder when the trace first uses one of their
 * providers), and the manifests' problems.
 *
 * Problems of a file named with -m are printed as they come (once, even
 * when several -j decoders load it). Problems of the files of a folder are
 * counted, by kind, into one summary line per folder printed at the end of
 * the run; --verbose prints each as well. None of them changes the exit
 * status: a manifest is not trace data. A -m path that cannot be read stops
 * the run (exit 2) before anything is decoded: a path that does not open,
 * and a file named directly that loads nothing because it is malformed or
 * over a limit (its reason is said even with --quiet, which quiets reports
 * of damaged data, not fatal input errors).
 *
 * The decoders of -j workers report from their threads: a spin lock (the
 * messages are few) guards the counts. */
#define _POSIX_C_SOURCE 200809L

#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "etwdump.h"

#define SEEN_MAX (1u << 16) /* messages remembered to say each once */
#define FIRST_MAX 400       /* bytes of the first message kept for the summary */

enum { K_WARN, K_DUP, K_UNKNOWN, K_MALFORMED, K_UNSUPPORTED, K_IO, K_LIMIT, K_OTHER, K_COUNT };

static const char *const kind_one[K_COUNT] = {
    "warning",           "provider declared twice",   "unknown name or type",   "malformed file or element",
    "unsupported construct", "unreadable file",       "limit hit",              "other problem"};
static const char *const kind_many[K_COUNT] = {
    "warnings",           "providers declared twice",  "unknown names or types", "malformed files or elements",
    "unsupported constructs", "unreadable files",      "limits hit",             "other problems"};

typedef struct mf_group {
    const char *path; /* as given to -m */
    size_t len;
    int folder;
    unsigned long long count[K_COUNT];
    char first[FIRST_MAX];
} mf_group;

struct manifests {
    etw_manifest_catalog *cat;
    mf_group groups[MAX_MANIFESTS];
    int ngroups;
    int quiet, verbose;
    atomic_flag lock;
    uint64_t *seen; /* message hashes, open addressing; 0 is empty */
    size_t nseen;
    /* --quiet: the last problem of a file named directly, not printed; said
     * when that file turns out not to load at all (then fatal) */
    char held[FIRST_MAX];
    int held_said;
};

static void lock(manifests *ms) {
    while (atomic_flag_test_and_set_explicit(&ms->lock, memory_order_acquire)) {
    }
}

static void unlock(manifests *ms) { atomic_flag_clear_explicit(&ms->lock, memory_order_release); }

/* 1 the first time msg is seen (also when the table is full or missing). */
static int first_time(manifests *ms, const char *msg) {
    uint64_t h = UINT64_C(0xcbf29ce484222325);
    for (const unsigned char *p = (const unsigned char *)msg; *p; p++) h = (h ^ *p) * UINT64_C(0x100000001b3);
    if (!h) h = 1;
    if (!ms->seen || ms->nseen >= SEEN_MAX / 2) return 1;
    for (size_t i = (size_t)(h & (SEEN_MAX - 1));; i = (i + 1) & (SEEN_MAX - 1)) {
        if (ms->seen[i] == h) return 0;
        if (!ms->seen[i]) {
            ms->seen[i] = h;
            ms->nseen++;
            return 1;
        }
    }
}

static int kind_of(const etw_diag *d) {
    switch (d->status) {
    case ETW_OK:
        /* a provider declared twice is counted once, from the catalog's
         * message (its file replacing the other is the same fact) */
        if (strstr(d->message, "replaces the one loaded from")) return -1;
        return strstr(d->message, "is declared again") ? K_DUP : K_WARN;
    case ETW_E_NOT_FOUND: return K_UNKNOWN;
    case ETW_E_CORRUPT: return K_MALFORMED;
    case ETW_E_UNSUPPORTED: return K_UNSUPPORTED;
    case ETW_E_IO: return K_IO;
    case ETW_E_LIMIT: return K_LIMIT;
    default: return K_OTHER;
    }
}

/* The -m folder a message is about ("DIR/sub/x.man:12: ..."), or NULL for
 * a file named directly or the folder itself. */
static mf_group *group_of(manifests *ms, const char *msg) {
    for (int i = 0; i < ms->ngroups; i++) {
        mf_group *g = &ms->groups[i];
        if (g->folder && !strncmp(msg, g->path, g->len) && msg[g->len] == '/') return g;
    }
    return NULL;
}

void on_manifest_diag(void *ctx, const etw_diag *d) {
    manifests *ms = ctx;
    lock(ms);
    if (first_time(ms, d->message)) {
        mf_group *g = group_of(ms, d->message);
        int say = g ? ms->verbose : 1;
        /* a file named directly that redeclares a provider says so itself
         * when it loads ("replaces the one loaded from") */
        if (!g && d->status == ETW_OK && strstr(d->message, "is declared again")) say = 0;
        if (ms->quiet && d->status != ETW_E_IO) {
            say = 0;
            if (!g && d->status != ETW_OK) snprintf(ms->held, sizeof ms->held, "%s", d->message);
        }
        if (g) {
            int k = kind_of(d);
            if (k >= 0) {
                if (!g->first[0]) snprintf(g->first, sizeof g->first, "%s", d->message);
                g->count[k]++;
            }
        }
        if (say) fprintf(stderr, "etwdump: %s%s\n", d->status == ETW_OK ? "warning: " : "", d->message);
    }
    unlock(ms);
}

int manifests_open(const options *o, manifests **out) {
    *out = NULL;
    if (!o->nmanifests) return EXIT_CLEAN;
    manifests *ms = calloc(1, sizeof *ms);
    if (!ms) {
        fprintf(stderr, "etwdump: out of memory\n");
        return EXIT_FATAL;
    }
    atomic_flag_clear(&ms->lock);
    ms->quiet = o->quiet;
    ms->verbose = o->verbose;
    ms->seen = calloc(SEEN_MAX, sizeof *ms->seen); /* NULL: messages may repeat */
    etw_manifest_catalog_options co;
    memset(&co, 0, sizeof co);
    co.on_diag = on_manifest_diag;
    co.diag_ctx = ms;
    if (etw_manifest_catalog_new(&ms->cat, &co) != ETW_OK) {
        fprintf(stderr, "etwdump: out of memory\n");
        manifests_free(ms);
        return EXIT_FATAL;
    }
    *out = ms;
    for (int i = 0; i < o->nmanifests; i++) {
        mf_group *g = &ms->groups[ms->ngroups++];
        g->path = o->manifests[i];
        g->len = strlen(g->path);
        while (g->len > 1 && g->path[g->len - 1] == '/') g->len--; /* "dir/" names "dir//x.man" */
        struct stat sb;
        g->folder = stat(g->path, &sb) == 0 && S_ISDIR(sb.st_mode);
        etw_status st = etw_manifest_catalog_add_path(ms->cat, o->manifests[i], NULL);
        if (st == ETW_E_IO) return EXIT_FATAL; /* reported */
        if (st != ETW_OK) {
            fprintf(stderr, "etwdump: %s: %s\n", o->manifests[i], etw_strerror(st));
            return EXIT_FATAL;
        }
    }
    return EXIT_CLEAN;
}

int manifests_attach(manifests *ms, etw_decoder *dec) {
    if (!ms) return EXIT_CLEAN;
    etw_status st = etw_decoder_add_manifest_catalog(dec, ms->cat);
    if (st == ETW_E_NOMEM || st == ETW_E_INVALID_ARG) {
        fprintf(stderr, "etwdump: out of memory\n");
        return EXIT_FATAL;
    }
    if (st == ETW_OK) return EXIT_CLEAN;
    /* A file named directly loaded nothing: malformed, over a limit, or
     * gone since the catalog read it (ETW_E_IO, said as it came). It was
     * reported when it failed, unless --quiet held the reason back. */
    lock(ms);
    if (ms->quiet && st != ETW_E_IO && !ms->held_said) {
        ms->held_said = 1;
        if (ms->held[0]) fprintf(stderr, "etwdump: %s\n", ms->held);
        else fprintf(stderr, "etwdump: a manifest cannot be read: %s\n", etw_strerror(st));
    }
    unlock(ms);
    return EXIT_FATAL;
}

void manifests_summary(manifests *ms) {
    if (!ms || ms->quiet) return;
    for (int i = 0; i < ms->ngroups; i++) {
        const mf_group *g = &ms->groups[i];
        char line[256];
        size_t n = 0;
        for (int k = 0; k < K_COUNT; k++) {
            if (!g->count[k]) continue;
            int w = snprintf(line + n, sizeof line - n, "%s%llu %s", n ? ", " : "", g->count[k],
                             g->count[k] == 1 ? kind_one[k] : kind_many[k]);
            if (w < 0 || (size_t)w >= sizeof line - n) break;
            n += (size_t)w;
        }
        if (!n) continue;
        fprintf(stderr, "etwdump: manifests in %s: %s; the first: %s%s\n", g->path, line, g->first,
                ms->verbose ? "" : " (--verbose shows all)");
    }
}

void manifests_free(manifests *ms) {
    if (!ms) return;
    etw_manifest_catalog_free(ms->cat);
    free(ms->seen);
    free(ms);
}
