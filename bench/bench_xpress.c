/* bench_xpress.c - LZ77 Xpress decompression speed on real compressed ETL
 * buffers, one core.
 *
 *   bench_xpress [compressed.etl] [seconds]
 *
 * Loads the trace (default tests/data/net.4.5.2.x64.etl, found relative to
 * the working directory or to this source file), takes every buffer flagged
 * compressed (buffer header: size at 0x00, FilledBytes - the size before
 * compression - at 0x30, flags at 0x34), and decompresses them all, again
 * and again, for at least `seconds` (default 1) of CPU time. Prints GB/s of
 * decompressor output per CPU second (getrusage), best and median of the
 * passes grouped in five rounds. A program, not a test: it returns 0.
 */
#if !defined(_WIN32) && !defined(_POSIX_C_SOURCE)
#define _POSIX_C_SOURCE 200809L
#endif
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include "etl/etw_xpress.h"

/* Buffer header fields (src/etl/etw_buffer.h; docs/FORMATS.md section 1). */
#define BUF_HEADER 0x48u
#define BUF_FILLED 0x30u
#define BUF_FLAGS 0x34u
#define BUF_COMPRESSED 0x0040u

static double cpu_s(void) {
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (double)ru.ru_utime.tv_sec + (double)ru.ru_stime.tv_sec +
           ((double)ru.ru_utime.tv_usec + (double)ru.ru_stime.tv_usec) * 1e-6;
}

static const char *default_path(const char *rel, char *buf, size_t cap) {
    FILE *f = fopen(rel, "rb");
    if (f) {
        fclose(f);
        return rel;
    }
    const char *src = __FILE__;
    const char *cut = strstr(src, "bench/bench_xpress.c");
    if (cut) {
        snprintf(buf, cap, "%.*s%s", (int)(cut - src), src, rel);
        return buf;
    }
    return rel;
}

static uint32_t le32(const uint8_t *p) {
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

int main(int argc, char **argv) {
    char pbuf[1024];
    const char *path = argc > 1 ? argv[1] : default_path("tests/data/net.4.5.2.x64.etl", pbuf, sizeof pbuf);
    double min_s = argc > 2 ? atof(argv[2]) : 1.0;
    FILE *f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "cannot read %s\n", path);
        return 0;
    }
    fseek(f, 0, SEEK_END);
    long sz = ftell(f);
    fseek(f, 0, SEEK_SET);
    uint8_t *data = malloc((size_t)sz);
    if (!data || fread(data, 1, (size_t)sz, f) != (size_t)sz) {
        fclose(f);
        return 0;
    }
    fclose(f);
    size_t nb = 0, cap = 0, max_out = 0, total_out = 0;
    struct {
        const uint8_t *in;
        size_t in_len, out_len;
    } *bufs = NULL;
    for (size_t off = 0; off + BUF_HEADER <= (size_t)sz;) {
        uint32_t size = le32(data + off);
        if (size < BUF_HEADER || size > (size_t)sz - off) break;
        uint32_t filled = le32(data + off + BUF_FILLED);
        if ((data[off + BUF_FLAGS] | data[off + BUF_FLAGS + 1] << 8) & BUF_COMPRESSED && filled > BUF_HEADER) {
            if (nb == cap) {
                cap = cap ? cap * 2 : 64;
                bufs = realloc(bufs, cap * sizeof *bufs);
            }
            bufs[nb].in = data + off + BUF_HEADER;
            bufs[nb].in_len = size - BUF_HEADER;
            bufs[nb].out_len = filled - BUF_HEADER;
            if (filled > max_out) max_out = filled;
            nb++;
        }
        off += size;
    }
    uint8_t *out = malloc(max_out + 64);
    /* check once: every buffer decompresses to its stated size */
    size_t bad = 0;
    for (size_t i = 0; i < nb; i++) {
        size_t got = 0;
        if (etw_xpress_decompress(bufs[i].in, bufs[i].in_len, out, bufs[i].out_len, &got) != ETW_OK ||
            got != bufs[i].out_len)
            bad++;
        total_out += got;
    }
    double rates[5];
    for (int round = 0; round < 5; round++) {
        double t0 = cpu_s(), t;
        size_t bytes = 0;
        do {
            for (size_t i = 0; i < nb; i++) {
                size_t got = 0;
                etw_xpress_decompress(bufs[i].in, bufs[i].in_len, out, bufs[i].out_len, &got);
                bytes += got;
            }
        } while ((t = cpu_s() - t0) < min_s / 5);
        rates[round] = (double)bytes / t / 1e9;
    }
    qsort(rates, 5, sizeof rates[0], cmp_double);
    printf("etwdecode Xpress decompression (one core, CPU time)\n\n");
    printf("%-28s %8s %10s %12s %12s\n", "input", "buffers", "out MB", "best GB/s", "median GB/s");
    const char *base = strrchr(path, '/');
    printf("%-28s %8zu %10.1f %12.2f %12.2f%s\n", base ? base + 1 : path, nb, (double)total_out / 1e6, rates[4],
           rates[2], bad ? "  (some buffers did not decompress in full)" : "");
    free(out);
    free(bufs);
    free(data);
    return 0;
}
