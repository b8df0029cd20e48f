/* etw_windows.c - an index of the providers of a Windows folder (see
 * include/etwdecode/etw_windows.h): which DLL, EXE or SYS holds the
 * WEVT_TEMPLATE of a provider GUID, kept in a cache file between runs.
 *
 * The scan lists the folders in precedence order, stats each candidate file
 * and takes its GUIDs from the cache when the size and modification time
 * are the cached ones, else maps the file and reads its resources. The
 * lookup table maps a GUID to the first file (in scan order) holding it.
 */
#define _XOPEN_SOURCE 700

#include "etwdecode/etw_windows.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifndef _WIN32
#include <dirent.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#endif

#define XXH_INLINE_ALL
#include <xxhash.h>

#include "../common/etw_alloc.h"
#include "../common/etw_dir.h"
#include "etw_pe.h"
#include "etw_wevt.h"
#include "../source/etw_manifest_types.h"

/* The most files one index lists (docs/limits.md): a Windows 11 image has
 * about 60,000 candidates, most in WinSxS. */
#define MAX_FILES 2000000u
/* The most provider GUIDs one file may declare (a CRIM blob's provider
 * table; Windows' largest files have a few dozen). */
#define MAX_FILE_GUIDS 4096u
/* Damaged files reported one by one; the rest are counted. */
#define MAX_REPORTED 5u
/* The cache file's first line. */
#define CACHE_MAGIC "etwdecode-windows-index 1"

typedef struct file_rec {
    uint32_t path;  /* offset in the path pool (relative to the Windows folder) */
    uint32_t first; /* its GUIDs: guids[first .. first + n) */
    uint32_t n;
    uint64_t size;
    int64_t mtime; /* ns */
} file_rec;

typedef struct cached {
    const char *path; /* into the cache file's text */
    uint64_t size;
    int64_t mtime;
    const char *guids; /* the GUID list text */
    uint32_t n;
} cached;

struct etw_windows_index {
    etw_allocator al;
    etw_diag_fn on_diag;
    void *diag_ctx;
    char *win;        /* the Windows folder */
    char *cache_path; /* "" when none */
    file_rec *files;
    uint32_t nfiles, fcap;
    char *pool;
    size_t plen, pcap;
    etw_guid *guids;
    uint32_t nguids, gcap;
    uint32_t *slots; /* GUID -> file index + 1 */
    uint32_t mask;
    etw_windows_stats st;
    /* the cache as read, sorted by path */
    char *cache_text;
    cached *cache;
    uint32_t ncache;
    char msg[1024];
};

/* A problem or note, one line naming its file. */
#if defined(__GNUC__) || defined(__clang__)
__attribute__((format(printf, 3, 4)))
#endif
static void diag(etw_windows_index *x, etw_status st, const char *fmt, ...) {
    if (!x->on_diag) return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(x->msg, sizeof x->msg, fmt, ap);
    va_end(ap);
    etw_diag d;
    d.status = st;
    d.file_offset = 0;
    d.message = x->msg;
    x->on_diag(x->diag_ctx, &d);
}

static char *dup_str(const etw_allocator *al, const char *s) {
    size_t n = strlen(s);
    char *d = etw_alloc(al, n + 1);
    if (d) memcpy(d, s, n + 1);
    return d;
}

static char *join(const etw_allocator *al, const char *a, const char *b) {
    size_t la = strlen(a), lb = strlen(b);
    char *d = etw_alloc(al, la + lb + 2);
    if (!d) return NULL;
    memcpy(d, a, la);
    d[la] = '/';
    memcpy(d + la + 1, b, lb + 1);
    return d;
}

static int lower(int c) { return c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c; }
static int eq_nocase(const char *a, const char *b) {
    for (; *a && *b; a++, b++)
        if (lower((unsigned char)*a) != lower((unsigned char)*b)) return 0;
    return *a == *b;
}

static int is_candidate(const char *name) {
    size_t n = strlen(name);
    if (n < 5 || name[n - 4] != '.') return 0;
    const char *e = name + n - 3;
    return eq_nocase(e, "dll") || eq_nocase(e, "exe") || eq_nocase(e, "sys");
}

#ifndef _WIN32
/* The child of dir whose name is `name` without regard to case, as a new
 * path; NULL when none. */
static char *child_nocase(const etw_allocator *al, const char *dir, const char *name) {
    DIR *d = opendir(dir);
    if (!d) return NULL;
    struct dirent *de;
    char *found = NULL;
    while ((de = readdir(d)) != NULL)
        if (eq_nocase(de->d_name, name)) {
            found = join(al, dir, de->d_name);
            break;
        }
    closedir(d);
    return found;
}

static int is_dir(const char *p) {
    struct stat sb;
    return stat(p, &sb) == 0 && S_ISDIR(sb.st_mode);
}

/* The names in dir (sorted), or NULL (and *n 0) when it cannot be read. */
static char **list_dir(const etw_allocator *al, const char *dir, uint32_t *n) {
    char **v = NULL;
    size_t k = 0;
    *n = 0;
    if (etw_dir_list(al, dir, 0, MAX_FILES, &v, &k) != ETW_OK) return NULL;
    *n = (uint32_t)k;
    return v;
}

static void free_list(const etw_allocator *al, char **v, uint32_t n) { etw_dir_free(al, v, n); }
#endif

/* ---- the cache file ---------------------------------------------------------- */

static int cached_cmp(const void *a, const void *b) {
    return strcmp(((const cached *)a)->path, ((const cached *)b)->path);
}

/* Read the cache file, if any, for this folder (its real path on the
 * first line). A line that does not parse ends the reading: the files
 * after it are read again. */
static void cache_read(etw_windows_index *x, const char *real) {
    if (!*x->cache_path) return;
    FILE *f = fopen(x->cache_path, "rb");
    if (!f) return;
    if (fseek(f, 0, SEEK_END) != 0) {
        fclose(f);
        return;
    }
    long n = ftell(f);
    if (n <= 0 || n > (long)1 << 30 || fseek(f, 0, SEEK_SET) != 0) {
        fclose(f);
        return;
    }
    char *t = etw_alloc(&x->al, (size_t)n + 1);
    if (!t || fread(t, 1, (size_t)n, f) != (size_t)n) {
        etw_free(&x->al, t);
        fclose(f);
        return;
    }
    fclose(f);
    t[n] = 0;
    x->cache_text = t;
    /* header: magic TAB real path */
    char *nl = strchr(t, '\n');
    size_t ml = strlen(CACHE_MAGIC);
    if (!nl || strncmp(t, CACHE_MAGIC, ml) != 0 || t[ml] != '\t') return;
    *nl = 0;
    if (strcmp(t + ml + 1, real) != 0) return;
    uint32_t lines = 0;
    for (char *p = nl + 1; *p; p++)
        if (*p == '\n') lines++;
    if (!lines || lines > MAX_FILES) return;
    x->cache = etw_calloc(&x->al, lines, sizeof *x->cache);
    if (!x->cache) return;
    char *p = nl + 1;
    while (*p && x->ncache < lines) {
        char *e = strchr(p, '\n');
        if (!e) break;
        *e = 0;
        /* size SP mtime SP n SP guids... TAB path */
        char *tab = strchr(p, '\t');
        if (!tab) break;
        *tab = 0;
        char *end;
        cached c;
        errno = 0;
        c.size = strtoull(p, &end, 10);
        if (*end != ' ' || errno) break;
        c.mtime = strtoll(end + 1, &end, 10);
        if (*end != ' ' || errno) break;
        unsigned long k = strtoul(end + 1, &end, 10);
        if ((*end != ' ' && *end != 0) || errno || k > MAX_FILE_GUIDS) break;
        c.n = (uint32_t)k;
        c.guids = end;
        c.path = tab + 1;
        x->cache[x->ncache++] = c;
        p = e + 1;
    }
    if (x->ncache) qsort(x->cache, x->ncache, sizeof *x->cache, cached_cmp);
}

static const cached *cache_find(const etw_windows_index *x, const char *rel) {
    uint32_t lo = 0, hi = x->ncache;
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        int c = strcmp(x->cache[mid].path, rel);
        if (c == 0) return &x->cache[mid];
        if (c < 0) lo = mid + 1;
        else hi = mid;
    }
    return NULL;
}

/* Write the index as the next run's cache (a new file renamed over the
 * old one, so a reader never sees half of it). */
static void cache_write(etw_windows_index *x, const char *real) {
    if (!*x->cache_path) return;
    size_t pl = strlen(x->cache_path);
    char *tmp = etw_alloc(&x->al, pl + 16);
    if (!tmp) return;
    snprintf(tmp, pl + 16, "%s.%ld.tmp", x->cache_path, (long)getpid());
    FILE *f = fopen(tmp, "wb");
    if (!f) {
        diag(x, ETW_OK, "%s: cannot write the index cache: %s", tmp, strerror(errno));
        etw_free(&x->al, tmp);
        return;
    }
    int ok = fprintf(f, "%s\t%s\n", CACHE_MAGIC, real) > 0;
    for (uint32_t i = 0; i < x->nfiles && ok; i++) {
        const file_rec *r = &x->files[i];
        ok = fprintf(f, "%llu %lld %u", (unsigned long long)r->size, (long long)r->mtime, (unsigned)r->n) > 0;
        for (uint32_t k = 0; k < r->n && ok; k++) {
            char g[ETW_GUID_STRING_SIZE];
            etw_guid_format(&x->guids[r->first + k], g);
            ok = fprintf(f, " %s", g) > 0;
        }
        if (ok) ok = fprintf(f, "\t%s\n", x->pool + r->path + strlen(x->win) + 1) > 0;
    }
    if (fclose(f) != 0) ok = 0;
    if (ok && rename(tmp, x->cache_path) == 0) {
        x->st.cache_written = 1;
    } else {
        diag(x, ETW_OK, "%s: cannot write the index cache: %s", x->cache_path, strerror(errno));
        remove(tmp);
    }
    etw_free(&x->al, tmp);
}

/* ---- building the index --------------------------------------------------------- */

static int add_guid(etw_windows_index *x, const etw_guid *g) {
    if (x->nguids == x->gcap) {
        uint32_t nc = x->gcap ? x->gcap * 2 : 256;
        if (nc > (1u << 26)) return 0;
        etw_guid *ng = etw_calloc(&x->al, nc, sizeof *ng);
        if (!ng) return 0;
        if (x->nguids) memcpy(ng, x->guids, x->nguids * sizeof *ng);
        etw_free(&x->al, x->guids);
        x->guids = ng;
        x->gcap = nc;
    }
    x->guids[x->nguids++] = *g;
    return 1;
}

typedef struct guid_sink {
    etw_windows_index *x;
    uint32_t n;
    int nomem;
} guid_sink;

static void on_guid(void *ctx, const etw_guid *g) {
    guid_sink *s = ctx;
    if (s->n >= MAX_FILE_GUIDS || s->nomem) return;
    if (!add_guid(s->x, g)) s->nomem = 1;
    else s->n++;
}

#ifndef _WIN32
/* Read the provider GUIDs of the PE file at path into the GUID list.
 * Returns the number added, or -1 when its resources are damaged. */
static int read_pe_guids(etw_windows_index *x, const char *path, uint64_t size) {
    if (size < 64 || size > ((uint64_t)1 << 32)) return 0; /* not a PE image we read */
    int fd = open(path, O_RDONLY);
    if (fd < 0) return 0;
    void *map = mmap(NULL, (size_t)size, PROT_READ, MAP_PRIVATE, fd, 0);
    close(fd);
    if (map == MAP_FAILED) return 0;
    const uint8_t *b = map;
    int added = 0;
    if (etw_wevt_is_pe(b, (size_t)size)) {
        etw_pe pe;
        etw_pe_resource r;
        const char *why = NULL;
        etw_status st = etw_pe_open(&pe, b, (size_t)size, &why);
        if (st == ETW_OK) st = etw_pe_find_resource(&pe, "WEVT_TEMPLATE", 0, 0x0409, &r, &why);
        if (st == ETW_OK) {
            guid_sink s = {x, 0, 0};
            st = etw_wevt_blob_providers(r.data, r.len, on_guid, &s);
            added = s.nomem ? -2 : (int)s.n;
            if (st != ETW_OK) why = "its WEVT_TEMPLATE is not a CRIM blob";
        }
        if (st != ETW_OK && st != ETW_E_NOT_FOUND) {
            if (x->st.damaged++ < MAX_REPORTED)
                diag(x, ETW_E_CORRUPT, "%s: %s; skipped", path, why ? why : etw_strerror(st));
            added = added > 0 ? added : -1;
        }
    }
    munmap(map, (size_t)size);
    return added;
}

/* One candidate file: from the cache, else read. 0 on NOMEM. */
static int index_file(etw_windows_index *x, const char *full, const char *rel) {
    struct stat sb;
    if (stat(full, &sb) != 0 || !S_ISREG(sb.st_mode)) return 1;
    if (x->nfiles >= MAX_FILES) return 1;
    if (x->nfiles == x->fcap) {
        uint32_t nc = x->fcap ? x->fcap * 2 : 1024;
        file_rec *nf = etw_calloc(&x->al, nc, sizeof *nf);
        if (!nf) return 0;
        if (x->nfiles) memcpy(nf, x->files, x->nfiles * sizeof *nf);
        etw_free(&x->al, x->files);
        x->files = nf;
        x->fcap = nc;
    }
    size_t rl = strlen(full) + 1; /* the pool holds full paths; the cache, relative ones */
    if (x->plen + rl > x->pcap) {
        size_t nc = x->pcap ? x->pcap * 2 : 64 * 1024;
        while (nc < x->plen + rl) nc *= 2;
        if (nc > UINT32_MAX) return 1;
        char *np = etw_alloc(&x->al, nc);
        if (!np) return 0;
        if (x->plen) memcpy(np, x->pool, x->plen);
        etw_free(&x->al, x->pool);
        x->pool = np;
        x->pcap = nc;
    }
    file_rec *r = &x->files[x->nfiles];
    r->path = (uint32_t)x->plen;
    memcpy(x->pool + x->plen, full, rl);
    x->plen += rl;
    r->size = (uint64_t)sb.st_size;
    r->mtime = (int64_t)sb.st_mtim.tv_sec * 1000000000 + sb.st_mtim.tv_nsec;
    r->first = x->nguids;
    r->n = 0;
    x->st.files++;
    const cached *c = cache_find(x, rel);
    if (c && c->size == r->size && c->mtime == r->mtime) {
        const char *p = c->guids;
        for (uint32_t k = 0; k < c->n; k++) {
            while (*p == ' ') p++;
            char g[ETW_GUID_STRING_SIZE];
            size_t gl = strcspn(p, " ");
            etw_guid guid;
            if (gl != ETW_GUID_STRING_SIZE - 1) break;
            memcpy(g, p, gl);
            g[gl] = 0;
            if (!etw_mf_parse_guid(g, &guid)) break;
            if (!add_guid(x, &guid)) return 0;
            r->n++;
            p += gl;
        }
        x->st.cached++;
    } else {
        int k = read_pe_guids(x, full, r->size);
        if (k == -2) return 0;
        r->n = k > 0 ? (uint32_t)k : 0;
        x->st.read++;
    }
    if (r->n) x->st.with_manifest++;
    x->nfiles++;
    return 1;
}

/* The candidate files of dir (not below it). */
static int index_dir(etw_windows_index *x, const char *dir) {
    uint32_t n;
    char **names = list_dir(&x->al, dir, &n);
    int ok = 1;
    size_t wl = strlen(x->win);
    for (uint32_t i = 0; i < n && ok; i++) {
        if (!is_candidate(names[i])) continue;
        char *full = join(&x->al, dir, names[i]);
        if (!full) {
            ok = 0;
            break;
        }
        ok = index_file(x, full, full + wl + 1);
        etw_free(&x->al, full);
    }
    free_list(&x->al, names, n);
    return ok;
}

/* The candidate files of each subfolder of dir (WinSxS components, .NET
 * versions). */
static int index_subdirs(etw_windows_index *x, const char *dir) {
    uint32_t n;
    char **names = list_dir(&x->al, dir, &n);
    int ok = 1;
    for (uint32_t i = 0; i < n && ok; i++) {
        char *sub = join(&x->al, dir, names[i]);
        if (!sub) {
            ok = 0;
            break;
        }
        if (is_dir(sub)) ok = index_dir(x, sub);
        etw_free(&x->al, sub);
    }
    free_list(&x->al, names, n);
    return ok;
}

/* A folder below the Windows folder, by names matched without case
 * (NULL-terminated), then indexed (its files, or its subfolders' files). */
static int index_path(etw_windows_index *x, const char *const *names, int subdirs) {
    char *p = dup_str(&x->al, x->win);
    for (int i = 0; p && names[i]; i++) {
        char *c = child_nocase(&x->al, p, names[i]);
        etw_free(&x->al, p);
        p = c;
    }
    if (!p) return 1;
    int ok = is_dir(p) ? (subdirs ? index_subdirs(x, p) : index_dir(x, p)) : 1;
    etw_free(&x->al, p);
    return ok;
}
#endif

static uint32_t guid_slot_hash(const etw_guid *g) { return (uint32_t)XXH3_64bits(g, sizeof *g); }

static int build_table(etw_windows_index *x) {
    uint64_t cap = 64;
    while (cap < (uint64_t)x->nguids * 2 + 2) cap <<= 1;
    if (cap > ((uint64_t)1 << 28)) return 0;
    x->slots = etw_calloc(&x->al, (size_t)cap, sizeof *x->slots);
    if (!x->slots) return 0;
    x->mask = (uint32_t)cap - 1;
    for (uint32_t f = 0; f < x->nfiles; f++) {
        const file_rec *r = &x->files[f];
        for (uint32_t k = 0; k < r->n; k++) {
            const etw_guid *g = &x->guids[r->first + k];
            uint32_t i = guid_slot_hash(g) & x->mask;
            for (;; i = (i + 1) & x->mask) {
                uint32_t s = x->slots[i];
                if (!s) {
                    x->slots[i] = f + 1;
                    x->st.providers++;
                    break;
                }
                const file_rec *o = &x->files[s - 1];
                int same = 0;
                for (uint32_t j = 0; j < o->n && !same; j++) same = etw_guid_equal(&x->guids[o->first + j], g);
                if (same) break; /* an earlier file holds it: it wins */
            }
        }
    }
    return 1;
}

const char *etw_windows_index_find(const etw_windows_index *x, const etw_guid *g) {
    if (!x || !g || !x->slots) return NULL;
    for (uint32_t i = guid_slot_hash(g) & x->mask;; i = (i + 1) & x->mask) {
        uint32_t s = x->slots[i];
        if (!s) return NULL;
        const file_rec *o = &x->files[s - 1];
        for (uint32_t j = 0; j < o->n; j++)
            if (etw_guid_equal(&x->guids[o->first + j], g)) return x->pool + o->path;
    }
}

void etw_windows_index_stats(const etw_windows_index *x, etw_windows_stats *out) {
    if (!out) return;
    memset(out, 0, sizeof *out);
    if (x) *out = x->st;
}

const char *etw_windows_index_cache_path(const etw_windows_index *x) { return x ? x->cache_path : ""; }

void etw_windows_index_free(etw_windows_index *x) {
    if (!x) return;
    etw_allocator a = x->al;
    etw_free(&a, x->win);
    etw_free(&a, x->cache_path);
    etw_free(&a, x->files);
    etw_free(&a, x->pool);
    etw_free(&a, x->guids);
    etw_free(&a, x->slots);
    etw_free(&a, x->cache_text);
    etw_free(&a, x->cache);
    etw_free(&a, x);
}

#ifndef _WIN32
/* mkdir -p: each missing folder of path (0700). 0 on failure (errno). */
static int make_dirs(char *path) {
    for (char *p = path + 1;; p++) {
        if (*p != '/' && *p) continue;
        char c = *p;
        *p = 0;
        int r = mkdir(path, 0700);
        *p = c;
        if (r != 0 && errno != EEXIST) return 0;
        if (!c) return 1;
    }
}

/* The cache file's path for the folder `real`; "" when there is no cache
 * folder (created when missing). */
static char *cache_file(etw_windows_index *x, const char *cache_dir, const char *real) {
    char *dir = NULL;
    if (cache_dir) {
        if (!*cache_dir) return dup_str(&x->al, "");
        dir = dup_str(&x->al, cache_dir);
    } else {
        const char *xdg = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
        if (xdg && *xdg == '/') dir = join(&x->al, xdg, "etwdecode");
        else if (home && *home) {
            char *c = join(&x->al, home, ".cache");
            if (c) dir = join(&x->al, c, "etwdecode");
            etw_free(&x->al, c);
        }
        if (!dir) return dup_str(&x->al, "");
    }
    if (!dir) return NULL;
    if (!make_dirs(dir)) {
        diag(x, ETW_OK, "%s: cannot create the cache folder (%s); the index is not kept", dir, strerror(errno));
        etw_free(&x->al, dir);
        return dup_str(&x->al, "");
    }
    char name[64];
    snprintf(name, sizeof name, "windows-%016llx.idx", (unsigned long long)XXH3_64bits(real, strlen(real)));
    char *p = join(&x->al, dir, name);
    etw_free(&x->al, dir);
    return p;
}
#endif

etw_status etw_windows_index_open(etw_windows_index **out, const char *dir, const etw_windows_options *opt) {
    if (!out || !dir) return ETW_E_INVALID_ARG;
    *out = NULL;
#ifdef _WIN32
    (void)opt;
    return ETW_E_UNSUPPORTED;
#else
    etw_allocator a = etw_allocator_resolve(opt ? opt->allocator : NULL);
    etw_windows_index *x = etw_calloc(&a, 1, sizeof *x);
    if (!x) return ETW_E_NOMEM;
    x->al = a;
    x->on_diag = opt ? opt->on_diag : NULL;
    x->diag_ctx = opt ? opt->diag_ctx : NULL;
    /* the Windows folder: dir itself (it has System32) or dir/Windows */
    char *sys = child_nocase(&a, dir, "System32");
    if (sys && is_dir(sys)) {
        x->win = dup_str(&a, dir);
    } else {
        char *w = child_nocase(&a, dir, "Windows");
        char *ws = w ? child_nocase(&a, w, "System32") : NULL;
        if (ws && is_dir(ws)) {
            x->win = w;
            w = NULL;
        }
        etw_free(&a, w);
        etw_free(&a, ws);
    }
    etw_free(&a, sys);
    if (!x->win) {
        diag(x, ETW_E_NOT_FOUND, "%s: not a Windows folder (no System32, nor Windows/System32, in it)", dir);
        etw_windows_index_free(x);
        return ETW_E_NOT_FOUND;
    }
    char *real = realpath(x->win, NULL); /* libc's allocation */
    const char *key = real ? real : x->win;
    x->cache_path = cache_file(x, opt ? opt->cache_dir : NULL, key);
    etw_status st = x->cache_path ? ETW_OK : ETW_E_NOMEM;
    if (st == ETW_OK) cache_read(x, key);
    static const char *const sys32[] = {"System32", NULL};
    static const char *const drivers[] = {"System32", "drivers", NULL};
    static const char *const wow64[] = {"SysWOW64", NULL};
    static const char *const net64[] = {"Microsoft.NET", "Framework64", NULL};
    static const char *const net32[] = {"Microsoft.NET", "Framework", NULL};
    static const char *const sxs[] = {"WinSxS", NULL};
    if (st == ETW_OK &&
        !(index_path(x, sys32, 0) && index_path(x, drivers, 0) && index_path(x, wow64, 0) &&
          index_path(x, net64, 1) && index_path(x, net32, 1) && index_path(x, sxs, 1) && build_table(x)))
        st = ETW_E_NOMEM;
    if (st == ETW_OK && x->st.damaged > MAX_REPORTED)
        diag(x, ETW_E_CORRUPT, "%s: %u more files with damaged resources were skipped", x->win,
             (unsigned)(x->st.damaged - MAX_REPORTED));
    if (st == ETW_OK && (x->st.read || x->st.cached != x->ncache)) cache_write(x, key);
    free(real);
    etw_free(&a, x->cache_text);
    etw_free(&a, x->cache);
    x->cache_text = NULL;
    x->cache = NULL;
    x->ncache = 0;
    if (st != ETW_OK) {
        etw_windows_index_free(x);
        return st;
    }
    *out = x;
    return ETW_OK;
#endif
}
