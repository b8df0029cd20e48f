/* etw_file.c - file input for the reader. */
#if !defined(_WIN32) && !defined(_POSIX_C_SOURCE)
#define _POSIX_C_SOURCE 200809L
#endif
#include "etw_file.h"

#include "../common/etw_alloc.h"

#ifdef _WIN32
#include <stdio.h>

struct etw_file {
    FILE *fp;
};

static long long file_read_at(void *ctx, uint64_t off, void *buf, size_t n) {
    etw_file *f = ctx;
    if (_fseeki64(f->fp, (long long)off, SEEK_SET) != 0) return -1;
    size_t k = fread(buf, 1, n, f->fp);
    if (k < n && ferror(f->fp)) return -1;
    return (long long)k;
}

etw_status etw_file_open(const etw_allocator *a, const char *path, etw_file **out,
                         etw_input *in) {
    FILE *fp = fopen(path, "rb");
    if (!fp) return ETW_E_IO;
    if (_fseeki64(fp, 0, SEEK_END) != 0) {
        fclose(fp);
        return ETW_E_IO;
    }
    long long size = _ftelli64(fp);
    etw_file *f = etw_alloc(a, sizeof *f);
    if (!f) {
        fclose(fp);
        return ETW_E_NOMEM;
    }
    f->fp = fp;
    *out = f;
    in->read_at = file_read_at;
    in->ctx = f;
    in->size = size < 0 ? 0 : (uint64_t)size;
    return ETW_OK;
}

void etw_file_close(const etw_allocator *a, etw_file *f) {
    fclose(f->fp);
    etw_free(a, f);
}
#else
#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

struct etw_file {
    int fd;
};

static long long file_read_at(void *ctx, uint64_t off, void *buf, size_t n) {
    etw_file *f = ctx;
    size_t done = 0;
    while (done < n) {
        ssize_t k = pread(f->fd, (char *)buf + done, n - done, (off_t)(off + done));
        if (k < 0) {
            if (errno == EINTR) continue;
            return -1;
        }
        if (k == 0) break;
        done += (size_t)k;
    }
    return (long long)done;
}

etw_status etw_file_open(const etw_allocator *a, const char *path, etw_file **out,
                         etw_input *in) {
    int fd = open(path, O_RDONLY);
    if (fd < 0) return ETW_E_IO;
    struct stat st;
    if (fstat(fd, &st) != 0) {
        int e = errno;
        close(fd);
        errno = e;
        return ETW_E_IO;
    }
    if (!S_ISREG(st.st_mode)) {
        /* a directory says so; a pipe, terminal or device cannot be read at
         * offsets (the caller may copy it to memory: etwdump does) */
        close(fd);
        errno = S_ISDIR(st.st_mode) ? EISDIR : ESPIPE;
        return ETW_E_IO;
    }
    etw_file *f = etw_alloc(a, sizeof *f);
    if (!f) {
        close(fd);
        return ETW_E_NOMEM;
    }
    f->fd = fd;
    *out = f;
    in->read_at = file_read_at;
    in->ctx = f;
    in->size = (uint64_t)st.st_size;
    return ETW_OK;
}

void etw_file_close(const etw_allocator *a, etw_file *f) {
    close(f->fd);
    etw_free(a, f);
}
#endif
