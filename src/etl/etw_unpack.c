/* etw_unpack.c - traces inside compressed files and archives (see
 * etw_unpack.h). libarchive (Debian libarchive-dev) reads ZIP and
 * gzip/zstd/xz/bzip2 streams through one API; each trace is decompressed
 * into memory of the caller's allocator. */
#define _GNU_SOURCE /* RTLD_NODELETE (dlfcn.h) */
#define _POSIX_C_SOURCE 200809L
#include "etw_unpack.h"

#include <archive.h>
#include <archive_entry.h>
#include <errno.h>
#include <string.h>
#include <sys/stat.h>

#include "../common/etw_alloc.h"
#include "etwdecode/etw_multi.h"

#if defined(ETW_LIBARCHIVE_DLOPEN)
#include <dlfcn.h>
#endif

/* The libarchive calls used here. With ETW_LIBARCHIVE_DLOPEN (CMake, where
 * dlopen exists) the library is opened only when an input is a compressed
 * file or an archive: loading it with every process cost 1.4 ms of CPU at
 * each start (its dependencies: libxml2, ICU, nettle, ...; measured with a
 * program that only prints, with and without -larchive). */
typedef struct la_api {
    void *lib; /* the dlopen handle, NULL when linked */
    struct archive *(*read_new)(void);
    int (*read_support_filter_gzip)(struct archive *);
    int (*read_support_filter_zstd)(struct archive *);
    int (*read_support_filter_xz)(struct archive *);
    int (*read_support_filter_bzip2)(struct archive *);
    int (*read_support_format_zip)(struct archive *);
    int (*read_support_format_raw)(struct archive *);
    int (*read_open_memory)(struct archive *, const void *, size_t);
    int (*read_open_filename)(struct archive *, const char *, size_t);
    int (*err_no)(struct archive *);
    int (*read_free)(struct archive *);
    int (*read_next_header)(struct archive *, struct archive_entry **);
    int (*format)(struct archive *);
    __LA_MODE_T (*entry_filetype)(struct archive_entry *);
    const char *(*entry_pathname)(struct archive_entry *);
    int (*entry_size_is_set)(struct archive_entry *);
    la_int64_t (*entry_size)(struct archive_entry *);
    la_ssize_t (*read_data)(struct archive *, void *, size_t);
} la_api;

#if defined(ETW_LIBARCHIVE_DLOPEN)
/* The names libarchive 3's shared library has (ELF soname, Mach-O), then
 * the development link. */
static const char *const la_names[] = {"libarchive.so.13", "libarchive.13.dylib", "libarchive.so"};

/* dlsym's object pointer as a function pointer: copied as bytes, which is
 * how POSIX means dlsym's result to be used. */
#define LA_SYM(la, field, name)                                          \
    do {                                                                 \
        void *sym_ = dlsym((la)->lib, name);                             \
        if (!sym_ || sizeof sym_ != sizeof (la)->field) return 0;        \
        memcpy(&(la)->field, &sym_, sizeof sym_);                        \
    } while (0)

static int la_bind(la_api *la) {
    LA_SYM(la, read_new, "archive_read_new");
    LA_SYM(la, read_support_filter_gzip, "archive_read_support_filter_gzip");
    LA_SYM(la, read_support_filter_zstd, "archive_read_support_filter_zstd");
    LA_SYM(la, read_support_filter_xz, "archive_read_support_filter_xz");
    LA_SYM(la, read_support_filter_bzip2, "archive_read_support_filter_bzip2");
    LA_SYM(la, read_support_format_zip, "archive_read_support_format_zip");
    LA_SYM(la, read_support_format_raw, "archive_read_support_format_raw");
    LA_SYM(la, read_open_memory, "archive_read_open_memory");
    LA_SYM(la, read_open_filename, "archive_read_open_filename");
    LA_SYM(la, err_no, "archive_errno");
    LA_SYM(la, read_free, "archive_read_free");
    LA_SYM(la, read_next_header, "archive_read_next_header");
    LA_SYM(la, format, "archive_format");
    LA_SYM(la, entry_filetype, "archive_entry_filetype");
    LA_SYM(la, entry_pathname, "archive_entry_pathname");
    LA_SYM(la, entry_size_is_set, "archive_entry_size_is_set");
    LA_SYM(la, entry_size, "archive_entry_size");
    LA_SYM(la, read_data, "archive_read_data");
    return 1;
}

/* Kept in memory once opened (where the flag exists): libarchive and its
 * dependencies keep global state (ICU, libxml2) that unloading would cut
 * from the memory it points to. */
#if defined(RTLD_NODELETE)
#define LA_DLOPEN_FLAGS (RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE)
#else
#define LA_DLOPEN_FLAGS (RTLD_NOW | RTLD_LOCAL)
#endif

/* Open the library (each call its own reference, closed by la_close). */
static int la_open(la_api *la) {
    memset(la, 0, sizeof *la);
    for (size_t i = 0; i < sizeof la_names / sizeof la_names[0] && !la->lib; i++)
        la->lib = dlopen(la_names[i], LA_DLOPEN_FLAGS);
    if (!la->lib) return 0;
    if (la_bind(la)) return 1;
    dlclose(la->lib);
    la->lib = NULL;
    return 0;
}

static void la_close(la_api *la) {
    if (la->lib) dlclose(la->lib);
}
#else
static int la_open(la_api *la) {
    la->lib = NULL;
    la->read_new = archive_read_new;
    la->read_support_filter_gzip = archive_read_support_filter_gzip;
    la->read_support_filter_zstd = archive_read_support_filter_zstd;
    la->read_support_filter_xz = archive_read_support_filter_xz;
    la->read_support_filter_bzip2 = archive_read_support_filter_bzip2;
    la->read_support_format_zip = archive_read_support_format_zip;
    la->read_support_format_raw = archive_read_support_format_raw;
    la->read_open_memory = archive_read_open_memory;
    la->read_open_filename = archive_read_open_filename;
    la->err_no = archive_errno;
    la->read_free = archive_read_free;
    la->read_next_header = archive_read_next_header;
    la->format = archive_format;
    la->entry_filetype = archive_entry_filetype;
    la->entry_pathname = archive_entry_pathname;
    la->entry_size_is_set = archive_entry_size_is_set;
    la->entry_size = archive_entry_size;
    la->read_data = archive_read_data;
    return 1;
}

static void la_close(la_api *la) { (void)la; }
#endif

static int ends_with_etl(const char *s) {
    size_t n = s ? strlen(s) : 0;
    if (n < 5) return 0;
    const char *e = s + n - 4;
    return e[0] == '.' && (e[1] | 0x20) == 'e' && (e[2] | 0x20) == 't' && (e[3] | 0x20) == 'l';
}

/* The most all entries of an input of in_size compressed bytes may give. */
static uint64_t bound_for(uint64_t in_size) {
    uint64_t b = ETW_UNPACK_FLOOR;
    if (in_size <= ETW_UNPACK_MAX / ETW_UNPACK_RATIO && in_size * ETW_UNPACK_RATIO > b)
        b = in_size * ETW_UNPACK_RATIO;
    else if (in_size > ETW_UNPACK_MAX / ETW_UNPACK_RATIO)
        b = ETW_UNPACK_MAX;
    return b < ETW_UNPACK_MAX ? b : ETW_UNPACK_MAX;
}

/* A reading of the input from its start, with every filter and format. */
static struct archive *open_archive(const la_api *la, const char *path, const void *mem, size_t mem_size, etw_status *why) {
    struct archive *ar = la->read_new();
    if (!ar) {
        *why = ETW_E_NOMEM;
        return NULL;
    }
    la->read_support_filter_gzip(ar);
    la->read_support_filter_zstd(ar);
    la->read_support_filter_xz(ar);
    la->read_support_filter_bzip2(ar);
    la->read_support_format_zip(ar);
    la->read_support_format_raw(ar);
    int rc = mem ? la->read_open_memory(ar, mem, mem_size) : la->read_open_filename(ar, path, 65536);
    if (rc != ARCHIVE_OK) {
        int err = la->err_no(ar);
        la->read_free(ar);
        *why = ETW_E_DECOMPRESS;
        if (!mem && (err == ENOENT || err == EACCES || err == EIO || err == EISDIR || err == EMFILE)) {
            errno = err;
            *why = ETW_E_IO;
        }
        return NULL;
    }
    return ar;
}

/* The next entry to give (a trace), NULL at the end or on an error (*why). */
static struct archive_entry *next_trace(const la_api *la, struct archive *ar, int *single, etw_status *why) {
    struct archive_entry *e;
    *why = ETW_OK;
    for (;;) {
        int rc = la->read_next_header(ar, &e);
        if (rc == ARCHIVE_EOF) return NULL;
        if (rc != ARCHIVE_OK && rc != ARCHIVE_WARN) {
            *why = ETW_E_DECOMPRESS;
            return NULL;
        }
        *single = la->format(ar) == ARCHIVE_FORMAT_RAW;
        if (*single || (la->entry_filetype(e) == AE_IFREG && ends_with_etl(la->entry_pathname(e))))
            return e;
    }
}

/* Pass 1: the size of every trace, without keeping its bytes (a bomb costs
 * time up to the bound, no memory). An entry whose header states its size
 * is not decompressed here: pass 2 holds it to that size. */
static etw_status measure(const la_api *la, const etw_allocator *a, const char *path, const void *mem, size_t mem_size,
                          uint64_t bound, uint64_t **sizes_out, size_t *count) {
    etw_status s = ETW_OK;
    struct archive *ar = open_archive(la, path, mem, mem_size, &s);
    if (!ar) return s;
    uint64_t *sizes = NULL, total = 0;
    size_t n = 0, cap = 0;
    enum { SCRATCH = 65536 };
    unsigned char *scratch = etw_alloc(a, SCRATCH);
    if (!scratch) {
        la->read_free(ar);
        return ETW_E_NOMEM;
    }
    struct archive_entry *e;
    int single = 0;
    while ((e = next_trace(la, ar, &single, &s)) != NULL) {
        if (n == ETW_MULTI_MAX_FILES) {
            s = ETW_E_LIMIT;
            break;
        }
        if (n == cap) {
            size_t nc = cap ? cap * 2 : 8;
            uint64_t *ns = etw_alloc(a, nc * sizeof *ns);
            if (!ns) {
                s = ETW_E_NOMEM;
                break;
            }
            if (n) memcpy(ns, sizes, n * sizeof *ns);
            etw_free(a, sizes);
            sizes = ns;
            cap = nc;
        }
        uint64_t size = 0;
        if (la->entry_size_is_set(e)) {
            la_int64_t said = la->entry_size(e);
            if (said < 0) {
                s = ETW_E_DECOMPRESS;
                break;
            }
            size = (uint64_t)said;
            if (size > bound - total) {
                s = ETW_E_LIMIT; /* refused before any work */
                break;
            }
        } else {
            for (;;) {
                la_ssize_t k = la->read_data(ar, scratch, SCRATCH);
                if (k < 0) {
                    s = ETW_E_DECOMPRESS;
                    break;
                }
                if (k == 0) break;
                size += (uint64_t)k;
                if (size > bound - total) {
                    s = ETW_E_LIMIT;
                    break;
                }
            }
            if (s != ETW_OK) break;
        }
        total += size;
        sizes[n++] = size;
    }
    la->read_free(ar);
    etw_free(a, scratch);
    if (s != ETW_OK) {
        etw_free(a, sizes);
        return s;
    }
    *sizes_out = sizes;
    *count = n;
    return ETW_OK;
}

/* Pass 2: the current entry's bytes into an allocation of the size pass 1
 * found; a byte more (a lying header, a file changed since) is damage. */
static etw_status read_entry(const la_api *la, const etw_allocator *a, struct archive *ar, uint64_t size, uint8_t **out) {
    if (size > SIZE_MAX - 1) return ETW_E_LIMIT;
    uint8_t *b = etw_alloc(a, (size_t)size + 1); /* +1: room to see a byte too many */
    if (!b) return ETW_E_NOMEM;
    size_t n = 0;
    for (;;) {
        la_ssize_t k = la->read_data(ar, b + n, (size_t)size + 1 - n);
        if (k < 0) {
            etw_free(a, b);
            return ETW_E_DECOMPRESS;
        }
        if (k == 0) break;
        n += (size_t)k;
        if (n > size) {
            etw_free(a, b);
            return ETW_E_DECOMPRESS;
        }
    }
    if (n != size) { /* fewer bytes than stated */
        etw_free(a, b);
        return ETW_E_DECOMPRESS;
    }
    *out = b;
    return ETW_OK;
}

static etw_status unpack(const la_api *la, const etw_allocator *a, const char *path, const void *mem,
                         size_t mem_size, etw_unpack_fn fn, void *ctx);

etw_status etw_unpack(const etw_allocator *a, const char *path, const void *mem, size_t mem_size,
                      etw_unpack_fn fn, void *ctx) {
    if (!a || !fn || (!path && !mem)) return ETW_E_INVALID_ARG;
    la_api la;
    if (!la_open(&la)) return ETW_E_UNSUPPORTED; /* libarchive is not installed */
    etw_status s = unpack(&la, a, path, mem, mem_size, fn, ctx);
    la_close(&la);
    return s;
}

static etw_status unpack(const la_api *la, const etw_allocator *a, const char *path, const void *mem,
                         size_t mem_size, etw_unpack_fn fn, void *ctx) {
    uint64_t in_size = mem_size;
    if (!mem) {
        struct stat st;
        if (stat(path, &st) != 0) return ETW_E_IO;
        in_size = st.st_size > 0 ? (uint64_t)st.st_size : 0;
    }
    uint64_t *sizes = NULL;
    size_t count = 0;
    etw_status s = measure(la, a, path, mem, mem_size, bound_for(in_size), &sizes, &count);
    if (s != ETW_OK) return s;
    if (count == 0) {
        etw_free(a, sizes);
        return ETW_E_NOT_ETL;
    }
    struct archive *ar = open_archive(la, path, mem, mem_size, &s);
    if (!ar) {
        etw_free(a, sizes);
        return s;
    }
    struct archive_entry *e;
    int single = 0;
    size_t i = 0;
    while (s == ETW_OK && (e = next_trace(la, ar, &single, &s)) != NULL) {
        if (i == count) { /* more traces than pass 1 saw: the file changed */
            s = ETW_E_DECOMPRESS;
            break;
        }
        uint8_t *data = NULL;
        s = read_entry(la, a, ar, sizes[i++], &data);
        if (s == ETW_OK) s = fn(ctx, single ? NULL : la->entry_pathname(e), data, (size_t)sizes[i - 1]);
    }
    la->read_free(ar);
    etw_free(a, sizes);
    return s;
}
