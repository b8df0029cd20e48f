/* etwdump - the progress line, Ctrl-C, and closed pipes.
 *
 * The progress line goes to standard error, only when it is a terminal,
 * the input is larger than PROGRESS_MIN_BYTES, --no-progress is not given
 * and the events do not go to a terminal themselves. It is redrawn in place (carriage return) at most every 250 ms and
 * erased at the end, so nothing of it is left in a terminal's scrollback
 * with the output. */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "etwdump.h"

/* Inputs smaller than this decode in well under a second: no progress. */
#define PROGRESS_MIN_BYTES (4ull << 20)
/* Redraw interval. */
#define PROGRESS_INTERVAL_NS 250000000LL

struct progress {
    etw_multi *m;
    unsigned long long total_bytes;
    unsigned long long buffers_total;
    unsigned long long *pos; /* per file: the furthest buffer offset seen */
    struct timespec start, last;
    int drawn;
};

static long long ns_between(const struct timespec *a, const struct timespec *b) {
    return (long long)(b->tv_sec - a->tv_sec) * 1000000000LL + (b->tv_nsec - a->tv_nsec);
}

progress *progress_start(const options *o, etw_multi *m, unsigned long long total_bytes) {
    if (o->no_progress || total_bytes <= PROGRESS_MIN_BYTES || !isatty(STDERR_FILENO)) return NULL;
    /* events going to a terminal too would be torn by the redraws */
    if (!o->stats && !o->schemas && !o->output && isatty(STDOUT_FILENO)) return NULL;
    progress *p = calloc(1, sizeof *p);
    if (!p) return NULL;
    p->pos = calloc(etw_multi_count(m) + 1, sizeof *p->pos);
    if (!p->pos) {
        free(p);
        return NULL;
    }
    p->m = m;
    p->total_bytes = total_bytes;
    for (size_t i = 0; i < etw_multi_count(m); i++)
        p->buffers_total += etw_reader_stats_get(etw_multi_reader(m, i))->buffers;
    clock_gettime(CLOCK_MONOTONIC, &p->start);
    p->last = p->start;
    return p;
}

void progress_tick(progress *p, unsigned long long events, size_t file, const etw_event *ev) {
    if (!p) return;
    if (file < etw_multi_count(p->m) && ev->buffer_file_offset > p->pos[file]) p->pos[file] = ev->buffer_file_offset;
    if (events & 1023) return;
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    if (ns_between(&p->last, &now) < PROGRESS_INTERVAL_NS) return;
    p->last = now;
    unsigned long long done = 0;
    for (size_t i = 0; i < etw_multi_count(p->m); i++) done += p->pos[i];
    if (done > p->total_bytes) done = p->total_bytes;
    double secs = (double)ns_between(&p->start, &now) / 1e9;
    double frac = p->total_bytes ? (double)done / (double)p->total_bytes : 0;
    double rate = secs > 0 ? (double)events / secs : 0;
    fprintf(stderr, "\r\033[Ketwdump: %.1f/%.1f MiB, buffer ~%llu/%llu, %llu events, %.0f events/s",
            (double)done / 1048576.0, (double)p->total_bytes / 1048576.0,
            (unsigned long long)(frac * (double)p->buffers_total + 0.5), p->buffers_total, events, rate);
    if (frac > 0.01) fprintf(stderr, ", %.0f s left", secs * (1 - frac) / frac);
    fflush(stderr);
    p->drawn = 1;
}

void progress_end(progress *p) {
    if (!p) return;
    if (p->drawn) fputs("\r\033[K", stderr);
    free(p->pos);
    free(p);
}

/* ---- signals ------------------------------------------------------------ */

static volatile sig_atomic_t stop_flag;

static void on_sigint(int sig) {
    (void)sig;
    stop_flag = 1;
}

void signals_install(void) {
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_sigint;
    sa.sa_flags = SA_RESTART; /* a write under way completes: the last line stays whole */
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    /* a closed pipe is seen as EPIPE on write, and ends the run quietly */
    signal(SIGPIPE, SIG_IGN);
}

int stop_requested(void) { return stop_flag != 0; }

static const char *out_name = "standard output";

void output_name_set(const char *name) { out_name = name ? name : "standard output"; }

int write_out(FILE *out, const void *buf, size_t len) {
    if (fwrite(buf, 1, len, out) == len) return 0;
    if (errno == EPIPE) return 1;
    fprintf(stderr, "etwdump: %s: write error: %s\n", out_name, strerror(errno));
    return -1;
}

int flush_out(FILE *out) {
    if (fflush(out) == 0) return 0;
    if (errno == EPIPE) return 1;
    fprintf(stderr, "etwdump: %s: write error: %s\n", out_name, strerror(errno));
    return -1;
}
