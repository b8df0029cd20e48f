/* etw_file.c - file input for the reader. */
#if !defined(_WIN32) && !defined(_POSIX_C_SOURCE)
#define _POSIX_C_SOURCE 200809L
#endif
#if !defined(_WIN32)
/* madvise(MADV_DONTNEED): glibc declares it with _DEFAULT_SOURCE, macOS
 * with _DARWIN_C_SOURCE (posix_madvise's DONTNEED is a no-op on Linux). */
#define _DEFAULT_SOURCE
#define _DARWIN_C_SOURCE
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

etw_status etw_file_open(const etw_allocator *a, const char *path, int map, etw_file **out,
                         etw_input *in) {
    (void)map; /* no mapping here: every read is a copy */
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

const uint8_t *etw_file_bytes(const etw_file *f) {
    (void)f;
    return NULL;
}
void etw_file_done(etw_file *f, uint64_t off, uint64_t len) {
    (void)f, (void)off, (void)len;
}
void etw_file_drop(etw_file *f, uint64_t off, uint64_t len) {
    (void)f, (void)off, (void)len;
}
void etw_file_restart(etw_file *f) { (void)f; }
#else
#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

/* Pages a reader may still use behind the furthest buffer it finished:
 * the processors' current buffers lie around there (their pages would be
 * faulted in again if released, which costs time, not correctness). */
#define DONE_WINDOW (1024u * 1024u)
/* Released at once, so that one madvise call covers many buffers. */
#define DONE_CHUNK (512u * 1024u)
/* A page fault maps more than the page it touches: the aligned 64 KiB of
 * address space around it (Linux fault-around, mm/memory.c), a whole 2 MiB
 * folio when the page cache holds the file in huge pages. A range finished
 * behind the window gives back this much on each side too, or the pages of
 * its neighbours that its faults mapped would stay. */
#define FAULT_SPAN (2u * 1024u * 1024u)
/* Ranges finished behind the window are gathered, up to this many or this
 * span, and given back by one call: each madvise costs a system call and a
 * TLB flush, and a quiet processor's buffers all finish behind the window
 * (90 of net.4.5.2.x64.etl's 360 buffers). The span is small because the
 * gathered ranges stay resident until then, with the page cache's large
 * folios (up to 2 MiB) that their faults mapped whole: when a pass of the
 * merge sweeps the file behind the window (a trace of repeated buffers),
 * every range is late, and 4 MiB kept 8 MiB resident; 1 MiB costs one call
 * per MiB swept. */
#define LATE_BATCH 8u
#define LATE_SPAN (1024u * 1024u)

struct etw_file {
    int fd;
    const uint8_t *map; /* the whole file, read-only; NULL: pread only */
    size_t map_len;
    size_t page;
    /* The trailing window (etw_file_done): every mapped page below rel_lo
     * was given back; rel_hi is the furthest end of a finished range. */
    _Atomic uint64_t rel_lo, rel_hi;
    /* Ranges finished behind the window, not yet given back: their union
     * [late_lo, late_hi), late_count of them (under late_lock). */
    atomic_flag late_lock;
    uint64_t late_lo, late_hi;
    unsigned late_count;
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

etw_status etw_file_open(const etw_allocator *a, const char *path, int map, etw_file **out,
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
    f->map = NULL;
    f->map_len = 0;
    long pg = sysconf(_SC_PAGESIZE);
    f->page = pg > 0 ? (size_t)pg : 4096;
    atomic_init(&f->rel_lo, 0);
    atomic_init(&f->rel_hi, 0);
    atomic_flag_clear(&f->late_lock);
    f->late_lo = f->late_hi = 0;
    f->late_count = 0;
    /* Map the file so that buffers are read in place (no copy). Any failure
     * (an empty file, a file system that cannot map, a size beyond the
     * address space) leaves pread. */
    if (map && st.st_size > 0 && (uint64_t)st.st_size <= (uint64_t)SIZE_MAX) {
        void *m = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
        if (m != MAP_FAILED) {
            f->map = m;
            f->map_len = (size_t)st.st_size;
        }
    }
    *out = f;
    in->read_at = file_read_at;
    in->ctx = f;
    in->size = (uint64_t)st.st_size;
    return ETW_OK;
}

void etw_file_close(const etw_allocator *a, etw_file *f) {
    if (f->map) munmap((void *)f->map, f->map_len);
    close(f->fd);
    etw_free(a, f);
}

const uint8_t *etw_file_bytes(const etw_file *f) { return f->map; }

/* Give the mapped pages of [lo, hi) back (rounded out to pages: a page
 * shared with a neighbour buffer is faulted in again if that one is still
 * read). The file's bytes stay in the page cache; only this mapping's
 * resident pages go. */
static void release(etw_file *f, uint64_t lo, uint64_t hi) {
#ifdef MADV_DONTNEED
    if (hi > f->map_len) hi = f->map_len;
    lo -= lo % f->page;
    if (lo >= hi) return;
    (void)madvise((void *)(f->map + lo), (size_t)(hi - lo), MADV_DONTNEED);
#else
    (void)f, (void)lo, (void)hi;
#endif
}

/* Add [a, b) to the ranges finished behind the window; give them back
 * (with FAULT_SPAN on each side) when there are LATE_BATCH of them or they
 * span LATE_SPAN. An empty range gives back what is gathered now. */
static void late_add(etw_file *f, uint64_t a, uint64_t b) {
    while (atomic_flag_test_and_set(&f->late_lock)) {
    }
    if (a < b) {
        if (f->late_count++ == 0) {
            f->late_lo = a;
            f->late_hi = b;
        } else {
            if (a < f->late_lo) f->late_lo = a;
            if (b > f->late_hi) f->late_hi = b;
        }
    }
    int now = f->late_count && (a >= b || f->late_count >= LATE_BATCH || f->late_hi - f->late_lo >= LATE_SPAN);
    uint64_t lo = f->late_lo, hi = f->late_hi;
    if (now) f->late_count = 0;
    atomic_flag_clear(&f->late_lock);
    if (now) {
        /* with what their faults may have mapped around them, below the window */
        uint64_t below = atomic_load(&f->rel_lo);
        lo = lo > FAULT_SPAN ? lo - FAULT_SPAN : 0;
        hi = hi + FAULT_SPAN < below ? hi + FAULT_SPAN : below;
        release(f, lo, hi);
    }
}

void etw_file_done(etw_file *f, uint64_t off, uint64_t len) {
    if (!f->map || off >= f->map_len) return;
    uint64_t end = len > f->map_len - off ? f->map_len : off + len;
    uint64_t lo = atomic_load(&f->rel_lo);
    /* A range the window passed while it was read: its pages came back,
     * with some of its neighbours'. */
    if (off < lo) late_add(f, off, end < lo ? end : lo);
    uint64_t hi = atomic_load(&f->rel_hi);
    while (end > hi && !atomic_compare_exchange_weak(&f->rel_hi, &hi, end)) {
    }
    if (end > hi) hi = end;
    if (hi < DONE_WINDOW) return;
    uint64_t to = hi - DONE_WINDOW;
    to -= to % f->page;
    /* one thread moves the window over [lo, to) and releases it */
    if (to >= lo + DONE_CHUNK && atomic_compare_exchange_strong(&f->rel_lo, &lo, to)) release(f, lo, to);
}

void etw_file_drop(etw_file *f, uint64_t off, uint64_t len) {
    if (!f->map || off >= f->map_len) return;
    release(f, off, len > f->map_len - off ? f->map_len : off + len);
}

void etw_file_restart(etw_file *f) {
    if (!f->map) return;
    late_add(f, 0, 0);
    /* everything below the window is released already; drop the window
     * itself so that the next pass starts clean */
    release(f, atomic_load(&f->rel_lo), atomic_load(&f->rel_hi));
    atomic_store(&f->rel_lo, 0);
    atomic_store(&f->rel_hi, 0);
}
#endif
