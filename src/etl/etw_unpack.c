/* etw_unpack.c - traces inside compressed files and archives (see
 * etw_unpack.h). libarchive (Debian libarchive-dev) reads ZIP, tar, and
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

/* The current entry's data into *out (size *len), counting it in *total. */
static etw_status read_entry(const etw_allocator *a, struct archive *ar, struct archive_entry *e,
                             uint64_t bound, uint64_t *total, uint8_t **out, size_t *len) {
    size_t cap = (size_t)1 << 20, n = 0;
    uint64_t said_size = UINT64_MAX;
    if (archive_entry_size_is_set(e)) {
        la_int64_t said = archive_entry_size(e);
        if (said < 0) return ETW_E_DECOMPRESS;
        if ((uint64_t)said > bound - *total) return ETW_E_LIMIT; /* refused before any work */
        said_size = (uint64_t)said;
        cap = (size_t)said + 1; /* +1: the read that finds the end */
    }
    if ((uint64_t)cap > bound - *total + 1) cap = (size_t)(bound - *total + 1);
    uint8_t *b = etw_alloc(a, cap);
    if (!b) return ETW_E_NOMEM;
    for (;;) {
        if (n == cap) {
            if ((uint64_t)n > bound - *total) { /* one byte past the bound was produced */
                etw_free(a, b);
                return ETW_E_LIMIT;
            }
            size_t nc = cap * 2;
            if ((uint64_t)nc > bound - *total + 1) nc = (size_t)(bound - *total + 1);
            uint8_t *nb = etw_alloc(a, nc);
            if (!nb) {
                etw_free(a, b);
                return ETW_E_NOMEM;
            }
            memcpy(nb, b, n);
            etw_free(a, b);
            b = nb;
            cap = nc;
        }
        la_ssize_t k = archive_read_data(ar, b + n, cap - n);
        if (k < 0) {
            etw_free(a, b);
            return ETW_E_DECOMPRESS;
        }
        if (k == 0) break;
        n += (size_t)k;
        if ((uint64_t)n > said_size) { /* more than the entry's header said: a lying size */
            etw_free(a, b);
            return ETW_E_DECOMPRESS;
        }
    }
    if ((uint64_t)n > bound - *total) {
        etw_free(a, b);
        return ETW_E_LIMIT;
    }
    *total += n;
    *out = b;
    *len = n;
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
    uint64_t bound = bound_for(in_size);
    struct archive *ar = archive_read_new();
    if (!ar) return ETW_E_NOMEM;
    archive_read_support_filter_gzip(ar);
    archive_read_support_filter_zstd(ar);
    archive_read_support_filter_xz(ar);
    archive_read_support_filter_bzip2(ar);
    archive_read_support_format_zip(ar);
    archive_read_support_format_tar(ar);
    archive_read_support_format_raw(ar);
    int rc = mem ? archive_read_open_memory(ar, mem, mem_size) : archive_read_open_filename(ar, path, 65536);
    if (rc != ARCHIVE_OK) {
        int err = archive_errno(ar);
        archive_read_free(ar);
        if (!mem && (err == ENOENT || err == EACCES || err == EIO || err == EISDIR || err == EMFILE)) {
            errno = err;
            return ETW_E_IO;
        }
        return ETW_E_DECOMPRESS;
    }
    etw_status s = ETW_OK;
    uint64_t total = 0;
    size_t found = 0;
    struct archive_entry *e;
    for (;;) {
        rc = archive_read_next_header(ar, &e);
        if (rc == ARCHIVE_EOF) break;
        if (rc != ARCHIVE_OK && rc != ARCHIVE_WARN) {
            s = ETW_E_DECOMPRESS;
            break;
        }
        int single = archive_format(ar) == ARCHIVE_FORMAT_RAW;
        const char *name = single ? NULL : archive_entry_pathname(e);
        if (!single && (archive_entry_filetype(e) != AE_IFREG || !ends_with_etl(name))) continue;
        uint8_t *data = NULL;
        size_t len = 0;
        s = read_entry(a, ar, e, bound, &total, &data, &len);
        if (s != ETW_OK) break;
        found++;
        s = fn(ctx, name, data, len);
        if (s != ETW_OK) break;
    }
    archive_read_free(ar);
    if (s == ETW_OK && found == 0) s = ETW_E_NOT_ETL;
    return s;
}
