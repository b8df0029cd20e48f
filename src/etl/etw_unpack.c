/* etw_unpack.c - traces inside compressed files and archives (see
 * etw_unpack.h). libarchive (Debian libarchive-dev) reads ZIP and
 * gzip/zstd/xz/bzip2 streams through one API; each trace is decompressed
 * into memory of the caller's allocator. */
#define _POSIX_C_SOURCE 200809L
#include "etw_unpack.h"

#include <archive.h>
#include <archive_entry.h>
#include <errno.h>
#include <string.h>
#include <sys/stat.h>

#include "../common/etw_alloc.h"
#include "etwdecode/etw_multi.h"

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
static struct archive *open_archive(const char *path, const void *mem, size_t mem_size, etw_status *why) {
    struct archive *ar = archive_read_new();
    if (!ar) {
        *why = ETW_E_NOMEM;
        return NULL;
    }
    archive_read_support_filter_gzip(ar);
    archive_read_support_filter_zstd(ar);
    archive_read_support_filter_xz(ar);
    archive_read_support_filter_bzip2(ar);
    archive_read_support_format_zip(ar);
    archive_read_support_format_raw(ar);
    int rc = mem ? archive_read_open_memory(ar, mem, mem_size) : archive_read_open_filename(ar, path, 65536);
    if (rc != ARCHIVE_OK) {
        int err = archive_errno(ar);
        archive_read_free(ar);
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
static struct archive_entry *next_trace(struct archive *ar, int *single, etw_status *why) {
    struct archive_entry *e;
    *why = ETW_OK;
    for (;;) {
        int rc = archive_read_next_header(ar, &e);
        if (rc == ARCHIVE_EOF) return NULL;
        if (rc != ARCHIVE_OK && rc != ARCHIVE_WARN) {
            *why = ETW_E_DECOMPRESS;
            return NULL;
        }
        *single = archive_format(ar) == ARCHIVE_FORMAT_RAW;
        if (*single || (archive_entry_filetype(e) == AE_IFREG && ends_with_etl(archive_entry_pathname(e))))
            return e;
    }
}

/* Pass 1: the size of every trace, without keeping its bytes (a bomb costs
 * time up to the bound, no memory). An entry whose header states its size
 * is not decompressed here: pass 2 holds it to that size. */
static etw_status measure(const etw_allocator *a, const char *path, const void *mem, size_t mem_size,
                          uint64_t bound, uint64_t **sizes_out, size_t *count) {
    etw_status s = ETW_OK;
    struct archive *ar = open_archive(path, mem, mem_size, &s);
    if (!ar) return s;
    uint64_t *sizes = NULL, total = 0;
    size_t n = 0, cap = 0;
    enum { SCRATCH = 65536 };
    unsigned char *scratch = etw_alloc(a, SCRATCH);
    if (!scratch) {
        archive_read_free(ar);
        return ETW_E_NOMEM;
    }
    struct archive_entry *e;
    int single = 0;
    while ((e = next_trace(ar, &single, &s)) != NULL) {
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
        if (archive_entry_size_is_set(e)) {
            la_int64_t said = archive_entry_size(e);
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
                la_ssize_t k = archive_read_data(ar, scratch, SCRATCH);
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
    archive_read_free(ar);
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
static etw_status read_entry(const etw_allocator *a, struct archive *ar, uint64_t size, uint8_t **out) {
    if (size > SIZE_MAX - 1) return ETW_E_LIMIT;
    uint8_t *b = etw_alloc(a, (size_t)size + 1); /* +1: room to see a byte too many */
    if (!b) return ETW_E_NOMEM;
    size_t n = 0;
    for (;;) {
        la_ssize_t k = archive_read_data(ar, b + n, (size_t)size + 1 - n);
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

etw_status etw_unpack(const etw_allocator *a, const char *path, const void *mem, size_t mem_size,
                      etw_unpack_fn fn, void *ctx) {
    if (!a || !fn || (!path && !mem)) return ETW_E_INVALID_ARG;
    uint64_t in_size = mem_size;
    if (!mem) {
        struct stat st;
        if (stat(path, &st) != 0) return ETW_E_IO;
        in_size = st.st_size > 0 ? (uint64_t)st.st_size : 0;
    }
    uint64_t *sizes = NULL;
    size_t count = 0;
    etw_status s = measure(a, path, mem, mem_size, bound_for(in_size), &sizes, &count);
    if (s != ETW_OK) return s;
    if (count == 0) {
        etw_free(a, sizes);
        return ETW_E_NOT_ETL;
    }
    struct archive *ar = open_archive(path, mem, mem_size, &s);
    if (!ar) {
        etw_free(a, sizes);
        return s;
    }
    struct archive_entry *e;
    int single = 0;
    size_t i = 0;
    while (s == ETW_OK && (e = next_trace(ar, &single, &s)) != NULL) {
        if (i == count) { /* more traces than pass 1 saw: the file changed */
            s = ETW_E_DECOMPRESS;
            break;
        }
        uint8_t *data = NULL;
        s = read_entry(a, ar, sizes[i++], &data);
        if (s == ETW_OK) s = fn(ctx, single ? NULL : archive_entry_pathname(e), data, (size_t)sizes[i - 1]);
    }
    archive_read_free(ar);
    etw_free(a, sizes);
    return s;
}
