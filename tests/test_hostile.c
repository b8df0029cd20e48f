/* test_hostile.c - the container reader (src/etl) against damaged input.
 *
 * Every case runs the in-memory API over a malloc'd copy sized exactly to
 * the (damaged) input, so ASan reports any read past it, and checks real
 * outcomes against a reference read of the intact trace:
 *
 *   1. truncation at many offsets: open fails only while the log-file header
 *      record is incomplete (ETW_E_NOT_ETL); iteration ends with ETW_END; no
 *      event that is not in the full file; every record that lies wholly
 *      before the cut is returned unchanged; a cut inside a buffer is
 *      reported through on_diag (offset inside the file, non-empty text);
 *   2. single hostile fields (BufferSize, FilledBytes, SavedOffset, record
 *      sizes, extended item DataSize, compressed bytes): ETW_END, a
 *      diagnostic where the field is inconsistent, every event of the other
 *      buffers still returned unchanged, and no event lost silently;
 *   3. inputs that are not ETL at all;
 *   4. buffers whose size runs past the end of the file, a buffer repeated;
 *   5. input that fails part way (etw_input.read_at returning -1);
 *   6. an allocator that fails after N allocations (open/iterate/close never
 *      crash or leak; the only failure is ETW_E_NOMEM).
 *
 * The exact counts of every trace (and merged/file order) are in
 * test_reader_counts.c.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "etw_test.h"
#include "etwdecode/etw_reader.h"

#define HDR 0x48u /* sizeof(WMI_BUFFER_HEADER) */
#define FLAG_COMPRESSED 0x0040u

/* ------------------------------------------------------------------------ */
/* Small helpers                                                            */
/* ------------------------------------------------------------------------ */

static uint16_t rd16(const uint8_t *p) { return (uint16_t)(p[0] | (p[1] << 8)); }
static uint32_t rd32(const uint8_t *p) {
    return (uint32_t)p[0] | ((uint32_t)p[1] << 8) | ((uint32_t)p[2] << 16) | ((uint32_t)p[3] << 24);
}
static void wr16(uint8_t *p, uint16_t v) {
    p[0] = (uint8_t)v;
    p[1] = (uint8_t)(v >> 8);
}
static void wr32(uint8_t *p, uint32_t v) {
    for (int i = 0; i < 4; i++) p[i] = (uint8_t)(v >> (8 * i));
}

typedef struct blob {
    uint8_t *p;
    size_t n;
} blob;

static blob load(const char *name) {
    blob b = {NULL, 0};
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", ETW_TEST_DATA_DIR, name);
    FILE *f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "cannot open %s\n", path);
        return b;
    }
    if (fseek(f, 0, SEEK_END) == 0) {
        long n = ftell(f);
        if (n > 0 && fseek(f, 0, SEEK_SET) == 0) {
            b.p = malloc((size_t)n);
            if (b.p && fread(b.p, 1, (size_t)n, f) == (size_t)n) {
                b.n = (size_t)n;
            } else {
                free(b.p);
                b.p = NULL;
            }
        }
    }
    fclose(f);
    return b;
}

/* An exact-size heap copy of the first n bytes of src (n may be 0). */
static uint8_t *dup_prefix(const uint8_t *src, size_t n) {
    uint8_t *p = malloc(n ? n : 1);
    if (p && n) memcpy(p, src, n);
    return p;
}

/* Size of the record at p, read the way the format defines it (independent
 * of the reader): SYSTEM/COMPACT/PERFINFO headers keep it in the u16 at +4,
 * every other form in the u16 at +0. */
static uint32_t size_field_offset(const uint8_t *p) {
    uint8_t flags = p[3], ht = p[2];
    if ((flags & 0xC0) == 0xC0 && ((ht >= 0x01 && ht <= 0x04) || ht == 0x10 || ht == 0x11))
        return 4;
    return 0;
}
static uint32_t record_size(const uint8_t *p) { return rd16(p + size_field_offset(p)); }

/* ------------------------------------------------------------------------ */
/* Reference read of an intact trace                                        */
/* ------------------------------------------------------------------------ */

typedef struct ref_ev {
    uint64_t bfo;          /* buffer file offset */
    uint32_t ro;           /* record offset in the (decompressed) buffer */
    uint32_t size;         /* record size (uncompressed buffers) */
    uint8_t compressed;
    uint8_t is_header;
    uint16_t id;
    uint16_t form;
    uint16_t ext_count;
    int64_t ts;
    etw_guid provider;
    uint32_t pid, tid;
    uint32_t ud_len;
    size_t ud_off;         /* into ref.ud */
} ref_ev;

#define MAX_BUFS 512

typedef struct ref {
    const char *name;
    blob file;
    ref_ev *ev;            /* sorted by (bfo, ro) */
    size_t n;
    uint8_t *ud;           /* every event's user data, back to back */
    size_t ud_n;
    uint64_t buf_off[MAX_BUFS]; /* buffers found by walking BufferSize */
    uint32_t buf_size[MAX_BUFS];
    size_t nbufs;
    uint64_t header_end;   /* end of the log-file header record */
} ref;

static int cmp_ref(const void *a, const void *b) {
    const ref_ev *x = a, *y = b;
    if (x->bfo != y->bfo) return x->bfo < y->bfo ? -1 : 1;
    return x->ro < y->ro ? -1 : x->ro > y->ro;
}

static long find_ref(const ref *R, uint64_t bfo, uint32_t ro) {
    size_t lo = 0, hi = R->n;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        const ref_ev *e = &R->ev[mid];
        if (e->bfo < bfo || (e->bfo == bfo && e->ro < ro))
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo < R->n && R->ev[lo].bfo == bfo && R->ev[lo].ro == ro) return (long)lo;
    return -1;
}

static int same_event(const ref *R, const ref_ev *e, const etw_event *ev) {
    return e->ts == ev->raw_timestamp && etw_guid_equal(&e->provider, &ev->provider) &&
           e->id == ev->id && e->pid == ev->pid && e->tid == ev->tid &&
           e->form == (uint16_t)ev->form && e->ud_len == ev->user_data_len &&
           e->ext_count == ev->ext_count &&
           (e->ud_len == 0 || memcmp(R->ud + e->ud_off, ev->user_data, e->ud_len) == 0);
}

static size_t ref_count_in(const ref *R, uint64_t bfo) {
    size_t k = 0;
    for (size_t i = 0; i < R->n; i++) k += R->ev[i].bfo == bfo;
    return k;
}

static int ref_build(ref *R, const char *name) {
    memset(R, 0, sizeof *R);
    R->name = name;
    R->file = load(name);
    if (!R->file.p) return 0;
    for (uint64_t off = 0; off + HDR <= R->file.n && R->nbufs < MAX_BUFS;) {
        uint32_t bs = rd32(R->file.p + off);
        if (bs < HDR) break;
        R->buf_off[R->nbufs] = off;
        R->buf_size[R->nbufs++] = bs;
        off += bs;
    }
    etw_reader *r;
    if (etw_reader_open_memory(&r, R->file.p, R->file.n, NULL) != ETW_OK) return 0;
    size_t cap = 64, udcap = 4096;
    R->ev = malloc(cap * sizeof *R->ev);
    R->ud = malloc(udcap);
    etw_event ev;
    while (etw_reader_next(r, &ev) == ETW_OK) {
        if (R->n == cap) {
            cap *= 2;
            R->ev = realloc(R->ev, cap * sizeof *R->ev);
        }
        while (R->ud_n + ev.user_data_len > udcap) {
            udcap *= 2;
            R->ud = realloc(R->ud, udcap);
        }
        if (!R->ev || !R->ud) abort();
        ref_ev *e = &R->ev[R->n++];
        memset(e, 0, sizeof *e);
        e->bfo = ev.buffer_file_offset;
        e->ro = ev.record_offset;
        e->compressed = ev.buffer_compressed;
        e->is_header = ev.is_logfile_header;
        e->id = ev.id;
        e->form = (uint16_t)ev.form;
        e->ext_count = ev.ext_count;
        e->ts = ev.raw_timestamp;
        e->provider = ev.provider;
        e->pid = ev.pid;
        e->tid = ev.tid;
        e->ud_len = ev.user_data_len;
        e->ud_off = R->ud_n;
        if (ev.user_data_len) memcpy(R->ud + R->ud_n, ev.user_data, ev.user_data_len);
        R->ud_n += ev.user_data_len;
        if (!e->compressed) e->size = record_size(R->file.p + e->bfo + e->ro);
        if (e->is_header) R->header_end = e->bfo + e->ro + e->size;
    }
    etw_reader_close(r);
    qsort(R->ev, R->n, sizeof *R->ev, cmp_ref);
    return R->n > 0;
}

static void ref_free(ref *R) {
    free(R->file.p);
    free(R->ev);
    free(R->ud);
    memset(R, 0, sizeof *R);
}

static int is_boundary(const ref *R, uint64_t off) {
    for (size_t i = 0; i < R->nbufs; i++)
        if (R->buf_off[i] == off) return 1;
    return off == R->file.n;
}

/* ------------------------------------------------------------------------ */
/* One run of the reader over damaged bytes                                 */
/* ------------------------------------------------------------------------ */

typedef struct diag_log {
    uint64_t input_size;
    int count;
    int bad;               /* a diagnostic with an offset outside the input or no text */
    char first[200];
} diag_log;

static void on_diag(void *ctx, const etw_diag *d) {
    diag_log *L = ctx;
    if (L->count == 0) snprintf(L->first, sizeof L->first, "%s", d->message ? d->message : "(null)");
    L->count++;
    if (d->file_offset >= L->input_size || !d->message || !d->message[0]) L->bad++;
}

typedef struct outcome {
    etw_status open;
    etw_status end;        /* what ended iteration (ETW_END expected) */
    int hung;              /* more events than 10x the full count */
    size_t events;
    size_t unknown;        /* events whose position is not in the full file */
    size_t differ;         /* events at a known position with other content */
    size_t other_ok;       /* events outside `damaged`, equal to the reference */
    size_t other_bad;      /* events outside `damaged` that are unknown or differ */
    size_t damaged_ok;     /* events of `damaged` equal to the reference */
    size_t damaged_pos;    /* events of `damaged` at a reference position */
    uint8_t *seen;         /* per reference event (owned) */
    diag_log diags;
    uint64_t problems;     /* etw_reader_stats.problems */
} outcome;

/* Read data[0..n) (an exact-size heap block) and classify every event
 * against R; `damaged` is the file offset of the buffer that was damaged
 * (UINT64_MAX when none). */
static void run(const ref *R, const uint8_t *data, size_t n, uint64_t damaged, outcome *o,
                const etw_reader_options *base) {
    memset(o, 0, sizeof *o);
    o->seen = calloc(R->n ? R->n : 1, 1);
    o->diags.input_size = n;
    etw_reader_options opt;
    if (base)
        opt = *base;
    else
        memset(&opt, 0, sizeof opt);
    opt.on_diag = on_diag;
    opt.diag_ctx = &o->diags;
    etw_reader *r = NULL;
    o->open = etw_reader_open_memory(&r, data, n, &opt);
    if (o->open != ETW_OK) {
        o->end = o->open;
        return;
    }
    etw_event ev;
    etw_status s;
    size_t bound = R->n * 10 + 10;
    while ((s = etw_reader_next(r, &ev)) == ETW_OK) {
        if (++o->events > bound) {
            o->hung = 1;
            break;
        }
        /* Touch every byte the event borrows. */
        volatile uint32_t sink = 0;
        for (uint32_t i = 0; i < ev.user_data_len; i++) sink += ev.user_data[i];
        uint32_t pos = 0;
        etw_ext_item it;
        while (etw_event_next_ext(&ev, &pos, &it) == ETW_OK)
            for (uint16_t i = 0; i < it.size; i++) sink += it.data[i];
        (void)sink;

        long k = find_ref(R, ev.buffer_file_offset, ev.record_offset);
        int ok = k >= 0 && same_event(R, &R->ev[k], &ev);
        if (k < 0)
            o->unknown++;
        else if (!ok)
            o->differ++;
        if (ok) o->seen[k] = 1;
        if (ev.buffer_file_offset == damaged) {
            o->damaged_ok += ok;
            o->damaged_pos += k >= 0;
        }
        else if (ok)
            o->other_ok++;
        else
            o->other_bad++;
    }
    o->end = s;
    o->problems = etw_reader_stats_get(r)->problems;
    etw_reader_close(r);
}

static void outcome_free(outcome *o) {
    free(o->seen);
    o->seen = NULL;
}

/* ------------------------------------------------------------------------ */
/* 1. Truncation                                                            */
/* ------------------------------------------------------------------------ */

typedef struct cut_stats {
    int cuts, opened, failed_open, bad_open, not_end, too_many, unknown, lost_before,
        no_diag, bad_diag, boundary_extra;
} cut_stats;

static void truncate_at(const ref *R, size_t cut, cut_stats *cs) {
    uint8_t *copy = dup_prefix(R->file.p, cut);
    outcome o;
    run(R, copy, cut, UINT64_MAX, &o, NULL);
    cs->cuts++;
    int inside = !is_boundary(R, cut);
    if (o.open != ETW_OK) {
        cs->failed_open++;
        /* Only while the log-file header record is incomplete, and only as "not ETL". */
        if (o.open != ETW_E_NOT_ETL || cut >= R->header_end) {
            if (cs->bad_open++ < 3)
                fprintf(stderr, "  %s cut %zu: open %d (header ends at %llu)\n", R->name, cut,
                        (int)o.open, (unsigned long long)R->header_end);
        }
    } else {
        cs->opened++;
        if (cut < R->header_end) {
            if (cs->bad_open++ < 3) fprintf(stderr, "  %s cut %zu: opened without a whole header\n", R->name, cut);
        }
        if (o.end != ETW_END || o.hung) {
            if (cs->not_end++ < 3) fprintf(stderr, "  %s cut %zu: ended with %d hung %d\n", R->name, cut, (int)o.end, o.hung);
        }
        if (o.events > R->n) cs->too_many++;
        if (o.unknown || o.differ) {
            if (cs->unknown++ < 3)
                fprintf(stderr, "  %s cut %zu: %zu unknown, %zu different events\n", R->name, cut,
                        o.unknown, o.differ);
        }
        /* Every record wholly before the cut (uncompressed buffers) is returned. */
        size_t lost = 0, before = 0;
        for (size_t i = 0; i < R->n; i++) {
            const ref_ev *e = &R->ev[i];
            if (e->compressed || e->bfo + e->ro + e->size > cut) continue;
            before++;
            if (!o.seen[i]) {
                if (lost == 0 && cs->lost_before < 3)
                    fprintf(stderr, "  %s cut %zu: lost event at %llu+%u\n", R->name, cut,
                            (unsigned long long)e->bfo, e->ro);
                lost++;
            }
        }
        if (lost) cs->lost_before++;
        /* At a buffer boundary nothing is damaged: exactly the events of the
         * whole buffers before the cut, silently. */
        size_t whole = 0;
        for (size_t i = 0; i < R->n; i++) whole += R->ev[i].bfo < cut;
        if (!inside && (o.diags.count != 0 || o.events != whole)) {
            if (cs->boundary_extra++ < 3)
                fprintf(stderr, "  %s cut %zu (boundary): %zu events, expected %zu, %d diags (%s)\n",
                        R->name, cut, o.events, whole, o.diags.count, o.diags.first);
        }
        /* A cut inside a buffer is reported (a refused open is reported by
         * its status). */
        if (inside && o.diags.count == 0) {
            if (cs->no_diag++ < 3) fprintf(stderr, "  %s cut %zu: no diagnostic\n", R->name, cut);
        }
        if (before > o.events) cs->too_many++; /* cannot be: counted as seen */
    }
    if (o.diags.bad) cs->bad_diag++;
    outcome_free(&o);
    free(copy);
}

static int cmp_size(const void *a, const void *b) {
    size_t x = *(const size_t *)a, y = *(const size_t *)b;
    return x < y ? -1 : x > y;
}

static void truncation_case(const char *name, int every_offset) {
    ref R;
    if (!ref_build(&R, name)) {
        ETW_CHECK(!"reference read");
        ref_free(&R);
        return;
    }
    size_t n = R.file.n;
    size_t cap = n + 1 + 2048, k = 0;
    size_t *cuts = malloc(cap * sizeof *cuts);
    if (every_offset) {
        for (size_t c = 0; c <= n; c++) cuts[k++] = c;
    } else {
        /* Buffer boundaries and the header/first-record edges around them. */
        static const long around[] = {-9, -8, -1, 0, 1, 4, 8, 0x47, 0x48, 0x49, 0x4B, 0x4C, 0x4D, 0x50};
        for (size_t b = 0; b < R.nbufs; b++)
            for (size_t j = 0; j < sizeof around / sizeof around[0]; j++) {
                long long c = (long long)R.buf_off[b] + around[j];
                if (c >= 0 && (size_t)c <= n && k < cap) cuts[k++] = (size_t)c;
            }
        /* The log-file header record's edges. */
        for (long d = -1; d <= 1; d++) cuts[k++] = (size_t)((long long)R.header_end + d);
        /* Record edges inside the data of a few buffers. */
        for (size_t i = 0; i < R.n && k + 3 < cap; i += 1 + R.n / 200) {
            const ref_ev *e = &R.ev[i];
            if (e->compressed) continue;
            uint64_t end = e->bfo + e->ro + e->size;
            cuts[k++] = (size_t)end - 1;
            cuts[k++] = (size_t)end;
            cuts[k++] = (size_t)e->bfo + e->ro + 2;
        }
        /* ~300 spread offsets. */
        for (size_t i = 0; i < 300 && k < cap; i++) cuts[k++] = (size_t)((uint64_t)n * i / 300 + (i * 7919) % 97);
        cuts[k++] = n;
    }
    qsort(cuts, k, sizeof *cuts, cmp_size);
    cut_stats cs;
    memset(&cs, 0, sizeof cs);
    for (size_t i = 0; i < k; i++) {
        if (cuts[i] > n || (i > 0 && cuts[i] == cuts[i - 1])) continue;
        truncate_at(&R, cuts[i], &cs);
    }
    printf("  %-32s %5d cuts: %5d opened, %4d refused (header cut)\n", name, cs.cuts, cs.opened,
           cs.failed_open);
    ETW_CHECK(cs.cuts > 0);
    ETW_CHECK(cs.opened > 0);
    ETW_CHECK_INT(cs.bad_open, 0);
    ETW_CHECK_INT(cs.not_end, 0);
    ETW_CHECK_INT(cs.too_many, 0);
    ETW_CHECK_INT(cs.unknown, 0);
    ETW_CHECK_INT(cs.lost_before, 0);
    ETW_CHECK_INT(cs.boundary_extra, 0);
    ETW_CHECK_INT(cs.no_diag, 0);
    ETW_CHECK_INT(cs.bad_diag, 0);
    free(cuts);
    ref_free(&R);
}

static void test_truncation(void) {
    truncation_case("smallEtlFile.etl", 1);
    truncation_case("primitive-types.etl", 0);
    truncation_case("SelfDescribingSingleEvent.etl", 0);
    truncation_case("gcevents.etl", 0);
    truncation_case("HTTP_Server.etl", 0);
}

/* ------------------------------------------------------------------------ */
/* 2. Hostile fields                                                        */
/* ------------------------------------------------------------------------ */

enum expect_diag { DIAG_REQUIRED, DIAG_IF_LOSS };

/* Run a mutated copy and check the common contract. `damaged` is the
 * damaged buffer's file offset; `want_damaged` is the exact number of its
 * events that must come back unchanged, or -1 for "any, but a loss must be
 * reported". */
static void check_mutation(const ref *R, const uint8_t *data, size_t n, uint64_t damaged,
                           const char *what, enum expect_diag ed, long want_damaged) {
    uint8_t *copy = dup_prefix(data, n);
    outcome o;
    run(R, copy, n, damaged, &o, NULL);
    size_t ref_other = R->n - ref_count_in(R, damaged);
    size_t ref_damaged = R->n - ref_other;
    int ok_open = o.open == ETW_OK;
    int ok_end = o.end == ETW_END && !o.hung;
    int ok_other = o.other_ok == ref_other && o.other_bad == 0;
    /* Lost: reference positions of the damaged buffer not returned at all
     * (a flipped payload byte changes an event but loses nothing). */
    int lost = o.damaged_pos < ref_damaged;
    int ok_diag = ed == DIAG_REQUIRED ? o.diags.count > 0 : (!lost || o.diags.count > 0);
    int ok_damaged = want_damaged < 0 || o.damaged_ok == (size_t)want_damaged;
    ETW_CHECK(ok_open);
    ETW_CHECK(ok_end);
    ETW_CHECK(ok_other);
    ETW_CHECK(ok_diag);
    ETW_CHECK(ok_damaged);
    ETW_CHECK(o.diags.bad == 0);
    ETW_CHECK(o.problems >= (uint64_t)o.diags.count);
    if (!ok_open || !ok_end || !ok_other || !ok_diag || !ok_damaged || o.diags.bad)
        fprintf(stderr,
                "  %s, %s: open %d end %d; other %zu/%zu (bad %zu); damaged %zu/%zu (want %ld); "
                "%d diags (%s)\n",
                R->name, what, (int)o.open, (int)o.end, o.other_ok, ref_other, o.other_bad,
                o.damaged_ok, ref_damaged, want_damaged, o.diags.count, o.diags.first);
    outcome_free(&o);
    free(copy);
}

/* Index in R->ev of the k-th record (0-based) of the buffer at bfo, or -1. */
static long nth_in_buffer(const ref *R, uint64_t bfo, size_t k) {
    for (size_t i = 0; i < R->n; i++)
        if (R->ev[i].bfo == bfo) {
            if (k == 0) return (long)i;
            k--;
        }
    return -1;
}

/* Record-size flips done per header form, over all traces. */
static int g_record_flips[ETW_FORM_COUNT_];
static int g_ext_flips;

static void field_flips(const char *name) {
    ref R;
    if (!ref_build(&R, name) || R.nbufs < 2) {
        ETW_CHECK(!"reference read");
        ref_free(&R);
        return;
    }
    const size_t n = R.file.n;
    uint8_t *m = malloc(n);
    const uint64_t b2 = R.buf_off[1];
    const uint32_t size2 = R.buf_size[1];
    const int compressed2 = (rd16(R.file.p + b2 + 0x34) & FLAG_COMPRESSED) != 0;
    const size_t events2 = ref_count_in(&R, b2);
    char what[96];

    /* BufferSize of the 2nd buffer. */
    const uint32_t sizes[] = {0, 1, 0x47, 0x7FFFFFFFu, 0xFFFFFFFFu, size2 + 8, size2 - 8};
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
        memcpy(m, R.file.p, n);
        wr32(m + b2, sizes[i]);
        snprintf(what, sizeof what, "BufferSize 0x%x", sizes[i]);
        check_mutation(&R, m, n, b2, what, DIAG_REQUIRED, -1);
    }

    /* FilledBytes (+0x30) and SavedOffset (+0x04). */
    const uint32_t filled2 = rd32(R.file.p + b2 + 0x30);
    const uint32_t hostile[] = {0, 0xFFFFFFFFu};
    const uint32_t saved2 = rd32(R.file.p + b2 + 0x04);
    for (size_t i = 0; i < 2; i++) {
        memcpy(m, R.file.p, n);
        wr32(m + b2 + 0x30, hostile[i]);
        snprintf(what, sizeof what, "FilledBytes 0x%x", hostile[i]);
        if (compressed2)
            /* The decompressed size: the buffer cannot be read as it is. */
            check_mutation(&R, m, n, b2, what, DIAG_REQUIRED, -1);
        else if (saved2 >= HDR && saved2 <= size2)
            /* Redundant with a valid SavedOffset: nothing is lost. */
            check_mutation(&R, m, n, b2, what, DIAG_IF_LOSS, (long)events2);
        else
            check_mutation(&R, m, n, b2, what, DIAG_IF_LOSS, -1);

        memcpy(m, R.file.p, n);
        wr32(m + b2 + 0x04, hostile[i]);
        snprintf(what, sizeof what, "SavedOffset 0x%x", hostile[i]);
        if (compressed2 || (filled2 >= HDR && filled2 <= size2))
            /* Unused (compressed) or redundant with a valid FilledBytes:
             * nothing is lost and nothing needs reporting. */
            check_mutation(&R, m, n, b2, what, DIAG_IF_LOSS, (long)events2);
        else
            check_mutation(&R, m, n, b2, what, DIAG_IF_LOSS, -1);
    }
    /* Inside the buffer. */
    long second = nth_in_buffer(&R, b2, 1);
    if (!compressed2 && second >= 0) {
        /* SavedOffset in the middle of the 2nd record: the first record
         * comes back, the cut one is reported. */
        memcpy(m, R.file.p, n);
        wr32(m + b2 + 0x04, R.ev[second].ro + 12);
        check_mutation(&R, m, n, b2, "SavedOffset mid-record", DIAG_REQUIRED, 1);
        /* FilledBytes inside while SavedOffset is valid: SavedOffset wins. */
        memcpy(m, R.file.p, n);
        wr32(m + b2 + 0x30, R.ev[second].ro + 12);
        check_mutation(&R, m, n, b2, "FilledBytes inside", DIAG_IF_LOSS, (long)events2);
    } else if (compressed2) {
        /* FilledBytes is the decompressed size: half of it cannot hold the output. */
        memcpy(m, R.file.p, n);
        wr32(m + b2 + 0x30, HDR + (filled2 - HDR) / 2);
        check_mutation(&R, m, n, b2, "FilledBytes half (compressed)", DIAG_REQUIRED, -1);
        memcpy(m, R.file.p, n);
        wr32(m + b2 + 0x04, HDR + (filled2 - HDR) / 2);
        check_mutation(&R, m, n, b2, "SavedOffset half (compressed)", DIAG_IF_LOSS, (long)events2);
    }

    /* Record size fields, for each header form the trace has in an
     * uncompressed buffer (EVENT_HEADER: u16 at +0; SYSTEM/COMPACT and
     * PERFINFO: u16 at +4): the first such record that is not the first of
     * its buffer (else the first one), so the records before it must come
     * back. */
    static const etw_header_form forms[] = {ETW_FORM_EVENT_HEADER, ETW_FORM_SYSTEM,
                                            ETW_FORM_COMPACT, ETW_FORM_PERFINFO};
    for (size_t f = 0; f < sizeof forms / sizeof forms[0]; f++) {
        long target = -1;
        for (size_t i = 0; i < R.n; i++) {
            const ref_ev *e = &R.ev[i];
            if (e->compressed || e->is_header || e->form != (uint16_t)forms[f]) continue;
            if (target < 0 || (R.ev[target].ro == HDR && e->ro != HDR)) target = (long)i;
            if (e->ro != HDR) break;
        }
        if (target < 0) continue;
        const ref_ev *t = &R.ev[target];
        long before = target - nth_in_buffer(&R, t->bfo, 0);
        uint32_t field = size_field_offset(R.file.p + t->bfo + t->ro);
        if (field != (forms[f] == ETW_FORM_EVENT_HEADER ? 0u : 4u)) ETW_CHECK(!"size field position");
        g_record_flips[forms[f]]++;
        const uint16_t rs[] = {0, 1, 7, 0xFFFF};
        for (size_t i = 0; i < sizeof rs / sizeof rs[0]; i++) {
            memcpy(m, R.file.p, n);
            wr16(m + t->bfo + t->ro + field, rs[i]);
            snprintf(what, sizeof what, "%s record size 0x%x (record %ld of its buffer)",
                     etw_header_form_name(forms[f]), rs[i], before);
            check_mutation(&R, m, n, t->bfo, what, DIAG_REQUIRED, before);
        }
    }

    /* Extended item DataSize of the first event with items. */
    for (size_t i = 0; i < R.n; i++) {
        const ref_ev *e = &R.ev[i];
        if (e->compressed || e->is_header || e->ext_count == 0 || e->form != ETW_FORM_EVENT_HEADER) continue;
        long before = (long)i - nth_in_buffer(&R, e->bfo, 0);
        memcpy(m, R.file.p, n);
        wr16(m + e->bfo + e->ro + 0x50 + 6, 0xFFFF);
        check_mutation(&R, m, n, e->bfo, "extended item DataSize 0xFFFF", DIAG_REQUIRED, before);
        g_ext_flips++;
        break;
    }

    /* Compressed data: flip bytes in the middle of the 2nd buffer. */
    if (compressed2 && size2 > HDR + 64) {
        uint64_t mid = b2 + HDR + (size2 - HDR) / 2;
        memcpy(m, R.file.p, n);
        m[mid] ^= 0xFF;
        check_mutation(&R, m, n, b2, "compressed byte flipped", DIAG_IF_LOSS, -1);
        memcpy(m, R.file.p, n);
        memset(m + mid, 0xFF, 32);
        check_mutation(&R, m, n, b2, "32 compressed bytes 0xFF", DIAG_REQUIRED, -1);
        memcpy(m, R.file.p, n);
        memset(m + mid, 0x00, 32);
        check_mutation(&R, m, n, b2, "32 compressed bytes 0x00", DIAG_IF_LOSS, -1);
        uint32_t x = 12345;
        for (int round = 0; round < 8; round++) {
            memcpy(m, R.file.p, n);
            for (int j = 0; j < 48; j++) {
                x = x * 1103515245u + 12345u;
                m[mid - 24 + (uint64_t)j] = (uint8_t)(x >> 16);
            }
            check_mutation(&R, m, n, b2, "48 random compressed bytes", DIAG_IF_LOSS, -1);
        }
        /* The first bytes of the stream: the flag word and first tokens. */
        memcpy(m, R.file.p, n);
        memset(m + b2 + HDR, 0xFF, 16);
        check_mutation(&R, m, n, b2, "compressed stream start 0xFF", DIAG_REQUIRED, -1);
    }
    free(m);
    ref_free(&R);
}

static void test_field_flips(void) {
    static const char *const traces[] = {
        "primitive-types.etl", "SelfDescribingSingleEvent.etl", "smallEtlFile.etl",
        "gcevents.etl", "HTTP_Server.etl", "lxcore_kernel.etl", "powershell.etl",
        "AMSITrace.etl", "BondEtwSample.etl", "ShutdownPerfDiagLogger.etl", "net.4.5.2.x64.etl",
    };
    for (size_t i = 0; i < sizeof traces / sizeof traces[0]; i++) field_flips(traces[i]);
    /* Every size-field layout was exercised somewhere. */
    ETW_CHECK(g_record_flips[ETW_FORM_EVENT_HEADER] > 0);
    ETW_CHECK(g_record_flips[ETW_FORM_SYSTEM] > 0);
    ETW_CHECK(g_record_flips[ETW_FORM_PERFINFO] > 0);
    ETW_CHECK(g_ext_flips > 0);
    printf("  record-size flips: EVENT_HEADER in %d traces, SYSTEM %d, COMPACT %d, PERFINFO %d; "
           "extended items in %d\n",
           g_record_flips[ETW_FORM_EVENT_HEADER], g_record_flips[ETW_FORM_SYSTEM],
           g_record_flips[ETW_FORM_COMPACT], g_record_flips[ETW_FORM_PERFINFO], g_ext_flips);
}

/* Extreme raw timestamps (found by fuzz_reader: the conversion to FILETIME
 * overflowed). The two records are reported and skipped (their times are
 * thousands of years outside the trace); every other event still comes
 * back; under UBSan (-fno-sanitize-recover) any signed overflow aborts. */
static void test_extreme_timestamps(void) {
    ref R;
    if (!ref_build(&R, "gcevents.etl") || R.nbufs < 3) {
        ETW_CHECK(!"reference read");
        ref_free(&R);
        return;
    }
    uint64_t b2 = R.buf_off[1];
    long first = nth_in_buffer(&R, b2, 0), second = nth_in_buffer(&R, b2, 1);
    if (first < 0 || second < 0 || R.ev[first].form != ETW_FORM_EVENT_HEADER ||
        R.ev[second].form != ETW_FORM_EVENT_HEADER) {
        ETW_CHECK(!"two EVENT_HEADER records in buffer 2");
        ref_free(&R);
        return;
    }
    uint8_t *m = dup_prefix(R.file.p, R.file.n);
    static const int64_t extremes[][2] = {
        {INT64_MAX, INT64_MIN}, {INT64_MIN, INT64_MAX}, {-1, INT64_MAX - 1}, {0, INT64_MIN + 1}};
    for (size_t i = 0; i < sizeof extremes / sizeof extremes[0]; i++) {
        for (int j = 0; j < 2; j++) {
            const ref_ev *e = &R.ev[j ? second : first];
            uint64_t v = (uint64_t)extremes[i][j];
            wr32(m + e->bfo + e->ro + 0x10, (uint32_t)v);
            wr32(m + e->bfo + e->ro + 0x14, (uint32_t)(v >> 32));
        }
        etw_reader *r;
        diag_log L;
        memset(&L, 0, sizeof L);
        L.input_size = R.file.n;
        etw_reader_options opt;
        memset(&opt, 0, sizeof opt);
        opt.on_diag = on_diag;
        opt.diag_ctx = &L;
        ETW_CHECK_INT(etw_reader_open_memory(&r, m, R.file.n, &opt), ETW_OK);
        etw_event ev;
        etw_status s;
        size_t events = 0, seen = 0;
        while ((s = etw_reader_next(r, &ev)) == ETW_OK && events <= R.n * 10) {
            events++;
            if (ev.buffer_file_offset == b2 && ev.record_offset == R.ev[first].ro)
                seen += ev.raw_timestamp == extremes[i][0];
            if (ev.buffer_file_offset == b2 && ev.record_offset == R.ev[second].ro)
                seen += ev.raw_timestamp == extremes[i][1];
        }
        ETW_CHECK_INT(s, ETW_END);
        ETW_CHECK_INT(events, R.n - 2);
        ETW_CHECK_INT(seen, 0);
        ETW_CHECK_INT(L.count, 2);
        ETW_CHECK_INT(L.bad, 0);
        const etw_reader_stats *st = etw_reader_stats_get(r);
        ETW_CHECK(st->first_timestamp <= st->last_timestamp);
        (void)etw_reader_to_filetime(r, INT64_MIN);
        (void)etw_reader_to_filetime(r, INT64_MAX);
        etw_reader_close(r);
    }
    free(m);
    ref_free(&R);
}

/* ------------------------------------------------------------------------ */
/* 3. Not ETL                                                               */
/* ------------------------------------------------------------------------ */

static etw_status open_bytes(const uint8_t *src, size_t n, int *diags) {
    uint8_t *copy = dup_prefix(src, n);
    diag_log L;
    memset(&L, 0, sizeof L);
    L.input_size = n;
    etw_reader_options opt;
    memset(&opt, 0, sizeof opt);
    opt.on_diag = on_diag;
    opt.diag_ctx = &L;
    etw_reader *r = (etw_reader *)&L; /* must be reset to NULL on failure */
    etw_status s = etw_reader_open_memory(&r, copy, n, &opt);
    if (s == ETW_OK) {
        etw_event ev;
        size_t k = 0;
        while (etw_reader_next(r, &ev) == ETW_OK && k < 1000000) k++;
        etw_reader_close(r);
    } else if (r != NULL) {
        s = ETW_E_INVALID_ARG; /* *out must be NULL on failure */
    }
    if (diags) *diags = L.count;
    free(copy);
    return s;
}

static int refused(etw_status s) { return s == ETW_E_NOT_ETL || s == ETW_E_TRUNCATED; }

static void test_not_etl(void) {
    uint8_t *b = malloc(8192);
    etw_status s;

    etw_reader *r = (etw_reader *)b;
    ETW_CHECK_INT(etw_reader_open_memory(&r, NULL, 0, NULL), ETW_E_NOT_ETL);
    ETW_CHECK(r == NULL);
    ETW_CHECK(refused(open_bytes(b, 0, NULL)));

    memset(b, 0x41, 10);
    ETW_CHECK(refused(open_bytes(b, 10, NULL)));

    memset(b, 0, 0x48);
    ETW_CHECK(refused(open_bytes(b, 0x48, NULL)));
    memset(b, 0, 4096);
    ETW_CHECK(refused(open_bytes(b, 4096, NULL)));

    memset(b, 0xFF, 4096);
    ETW_CHECK(refused(open_bytes(b, 4096, NULL)));

    const char *text = "This is a plain text file, not an event trace log.\n"
                       "It has several lines of ASCII in it, and nothing else.\n";
    size_t tl = strlen(text), k = 0;
    while (k + tl <= 4096) {
        memcpy(b + k, text, tl);
        k += tl;
    }
    ETW_CHECK(refused(open_bytes(b, k, NULL)));
    ETW_CHECK(refused(open_bytes(b, 100, NULL)));

    static const uint8_t png[] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1A, '\n', 0, 0, 0, 13,
                                  'I',  'H', 'D', 'R', 0,    0,    1,    0,    0, 0, 1, 0,
                                  8,    6,   0,   0,   0};
    memset(b, 0, 4096);
    memcpy(b, png, sizeof png);
    ETW_CHECK(refused(open_bytes(b, 4096, NULL)));
    ETW_CHECK(refused(open_bytes(b, sizeof png, NULL)));

    /* A believable buffer header with nothing (or garbage) after it. */
    memset(b, 0, 8192);
    wr32(b + 0, 4096);
    wr32(b + 0x04, 0x48);
    wr32(b + 0x30, 0x48);
    wr16(b + 0x36, 4);
    ETW_CHECK(refused(open_bytes(b, 4096, NULL)));
    ETW_CHECK(refused(open_bytes(b, 0x48, NULL)));
    wr32(b + 0x04, 0x100);
    wr32(b + 0x30, 0x100);
    for (int i = 0x48; i < 0x100; i++) b[i] = (uint8_t)(i * 37);
    ETW_CHECK(refused(open_bytes(b, 4096, NULL)));
    /* A SYSTEM record that is not the log-file header (group 0, type 5). */
    wr32(b + 0x48, 0xC0020002);
    wr16(b + 0x4C, 0x40);
    b[0x4E] = 5;
    b[0x4F] = 0;
    ETW_CHECK(refused(open_bytes(b, 4096, NULL)));
    /* The log-file header hook with a payload too small for its fields. */
    b[0x4E] = 0;
    ETW_CHECK(refused(open_bytes(b, 4096, NULL)));

    /* The first buffer of a real trace is fine; a second buffer of garbage
     * is reported and skipped. */
    blob pt = load("primitive-types.etl");
    if (pt.p) {
        uint8_t *two = malloc(pt.n);
        memcpy(two, pt.p, pt.n);
        memset(two + 8192, 0xFF, pt.n - 8192);
        int nd = 0;
        ETW_CHECK_INT(open_bytes(two, pt.n, &nd), ETW_OK);
        ETW_CHECK(nd > 0);
        /* A real trace whose first buffer is not at offset 0 (junk before). */
        uint8_t *shifted = malloc(pt.n + 16);
        memset(shifted, 0, 16);
        memcpy(shifted + 16, pt.p, pt.n);
        s = open_bytes(shifted, pt.n + 16, NULL);
        ETW_CHECK(refused(s));
        free(shifted);
        free(two);
        free(pt.p);
    }

    /* Files. */
    r = (etw_reader *)b;
    ETW_CHECK_INT(etw_reader_open_file(&r, "/nonexistent/dir/missing.etl", NULL), ETW_E_IO);
    ETW_CHECK(r == NULL);
    ETW_CHECK_INT(etw_reader_open_file(&r, ETW_TEST_DATA_DIR, NULL), ETW_E_IO);
    ETW_CHECK_INT(etw_reader_open_file(&r, ETW_TEST_DATA_DIR "/SOURCES.md", NULL), ETW_E_NOT_ETL);
    ETW_CHECK(r == NULL);

    /* Arguments. */
    ETW_CHECK_INT(etw_reader_open_memory(NULL, b, 10, NULL), ETW_E_INVALID_ARG);
    ETW_CHECK_INT(etw_reader_open_memory(&r, NULL, 10, NULL), ETW_E_INVALID_ARG);
    ETW_CHECK_INT(etw_reader_open_file(&r, NULL, NULL), ETW_E_INVALID_ARG);
    ETW_CHECK_INT(etw_reader_open_input(&r, NULL, NULL), ETW_E_INVALID_ARG);
    etw_event ev;
    ETW_CHECK_INT(etw_reader_next(NULL, &ev), ETW_E_INVALID_ARG);
    ETW_CHECK_INT(etw_reader_rewind(NULL), ETW_E_INVALID_ARG);
    ETW_CHECK(etw_reader_logfile(NULL) == NULL);
    ETW_CHECK(etw_reader_stats_get(NULL) == NULL);
    etw_reader_close(NULL);
    free(b);
}

/* ------------------------------------------------------------------------ */
/* 4. Sizes that run past the end of the file; a repeated buffer            */
/* ------------------------------------------------------------------------ */

static void test_lying_sizes(void) {
    /* The last buffer claims more than the file holds: reported, and its
     * events (all within the file) still come back. */
    ref R;
    if (ref_build(&R, "primitive-types.etl")) {
        uint8_t *m = malloc(R.file.n);
        memcpy(m, R.file.p, R.file.n);
        uint64_t last = R.buf_off[R.nbufs - 1];
        wr32(m + last, R.buf_size[R.nbufs - 1] * 2);
        check_mutation(&R, m, R.file.n, last, "last BufferSize doubled", DIAG_REQUIRED,
                       (long)ref_count_in(&R, last));
        wr32(m + last, 0x00F00000);
        check_mutation(&R, m, R.file.n, last, "last BufferSize 15 MiB", DIAG_REQUIRED,
                       (long)ref_count_in(&R, last));
        free(m);
    }
    ref_free(&R);

    /* A middle buffer claims to run past the end of the file. Reported and
     * not fatal; every event up to and including that buffer comes back. */
    if (ref_build(&R, "gcevents.etl") && R.nbufs >= 4) {
        uint8_t *m = malloc(R.file.n);
        memcpy(m, R.file.p, R.file.n);
        uint64_t b2 = R.buf_off[1];
        wr32(m + b2, (uint32_t)(R.file.n - b2 + 65536));
        uint8_t *copy = dup_prefix(m, R.file.n);
        outcome o;
        run(&R, copy, R.file.n, b2, &o, NULL);
        ETW_CHECK_INT(o.open, ETW_OK);
        ETW_CHECK_INT(o.end, ETW_END);
        ETW_CHECK(o.diags.count > 0);
        ETW_CHECK_INT(o.unknown + o.differ, 0);
        size_t want = 0, got = 0;
        for (size_t i = 0; i < R.n; i++)
            if (R.ev[i].bfo <= b2) {
                want++;
                got += o.seen[i];
            }
        ETW_CHECK_INT(got, want);
        outcome_free(&o);
        free(copy);
        free(m);
    }
    ref_free(&R);

    /* Buffer 2 repeated: the file holds it twice. Both copies are read (the
     * copy has its own file offset); nothing else is lost. */
    if (ref_build(&R, "gcevents.etl") && R.nbufs >= 3) {
        uint64_t b2 = R.buf_off[1];
        uint32_t s2 = R.buf_size[1];
        size_t n = R.file.n + s2;
        uint8_t *m = malloc(n);
        memcpy(m, R.file.p, b2 + s2);
        memcpy(m + b2 + s2, R.file.p + b2, s2);
        memcpy(m + b2 + 2 * (uint64_t)s2, R.file.p + b2 + s2, R.file.n - b2 - s2);
        etw_reader *r;
        ETW_CHECK_INT(etw_reader_open_memory(&r, m, n, NULL), ETW_OK);
        size_t events = 0, copies = 0;
        etw_event ev;
        etw_status s;
        while ((s = etw_reader_next(r, &ev)) == ETW_OK && events <= R.n * 10) {
            events++;
            copies += ev.buffer_file_offset == b2 + s2;
        }
        ETW_CHECK_INT(s, ETW_END);
        ETW_CHECK_INT(events, R.n + ref_count_in(&R, b2));
        ETW_CHECK_INT(copies, ref_count_in(&R, b2));
        etw_reader_close(r);

        /* ...and buffer 2's size covers both copies: that is larger than
         * the trace's BufferSize (64 KiB) and a buffer starts where that
         * size leads, so buffer 2 is cut there (reported) and the copy is
         * read too. */
        wr32(m + b2, 2 * s2);
        int nd = 0;
        ETW_CHECK_INT(open_bytes(m, n, &nd), ETW_OK);
        ETW_CHECK_INT(nd, 1);
        ETW_CHECK_INT(etw_reader_open_memory(&r, m, n, NULL), ETW_OK);
        events = copies = 0;
        while ((s = etw_reader_next(r, &ev)) == ETW_OK && events <= R.n * 10) {
            events++;
            copies += ev.buffer_file_offset == b2 + s2;
        }
        ETW_CHECK_INT(s, ETW_END);
        ETW_CHECK_INT(events, R.n + ref_count_in(&R, b2));
        ETW_CHECK_INT(copies, ref_count_in(&R, b2));
        etw_reader_close(r);
        free(m);
    }
    ref_free(&R);
}

/* ------------------------------------------------------------------------ */
/* 5. Input that fails part way                                             */
/* ------------------------------------------------------------------------ */

typedef struct failing_input {
    const blob *b;
    int calls;
    int fail_after;
} failing_input;

static long long failing_read_at(void *ctx, uint64_t off, void *buf, size_t size) {
    failing_input *f = ctx;
    if (f->calls++ >= f->fail_after) return -1;
    if (off >= f->b->n) return 0;
    if (size > f->b->n - off) size = (size_t)(f->b->n - off);
    memcpy(buf, f->b->p + off, size);
    return (long long)size;
}

static void test_failing_input(void) {
    blob g = load("gcevents.etl");
    if (!g.p) {
        ETW_CHECK(!"gcevents.etl");
        return;
    }
    int opened = 0, refused_io = 0, bad = 0;
    for (int k = 0; k < 40; k++) {
        failing_input f = {&g, 0, k};
        etw_input in = {failing_read_at, g.n, &f};
        diag_log L;
        memset(&L, 0, sizeof L);
        L.input_size = g.n;
        etw_reader_options opt;
        memset(&opt, 0, sizeof opt);
        opt.on_diag = on_diag;
        opt.diag_ctx = &L;
        etw_reader *r = NULL;
        etw_status s = etw_reader_open_input(&r, &in, &opt);
        if (s != ETW_OK) {
            /* Failing reads are an I/O error, or (a short header) not ETL. */
            if (s == ETW_E_IO || s == ETW_E_NOT_ETL)
                refused_io++;
            else
                bad++;
            continue;
        }
        opened++;
        etw_event ev;
        size_t events = 0;
        while ((s = etw_reader_next(r, &ev)) == ETW_OK && events <= 1000) events++;
        /* Reading stops with ETW_E_IO, or ends with the failures reported. */
        if (!(s == ETW_E_IO || (s == ETW_END && (events == 71 || L.count > 0)))) bad++;
        if (events > 71) bad++;
        etw_reader_close(r);
    }
    ETW_CHECK(opened > 0);
    ETW_CHECK(refused_io > 0);
    ETW_CHECK_INT(bad, 0);
    free(g.p);
}

/* ------------------------------------------------------------------------ */
/* 6. Allocation failure                                                    */
/* ------------------------------------------------------------------------ */

typedef struct failing_alloc {
    int count;
    int fail_at;  /* allocations 0..fail_at-1 succeed */
    int live;     /* outstanding blocks */
} failing_alloc;

static void *fa_alloc(void *ctx, size_t n) {
    failing_alloc *fa = ctx;
    if (fa->count++ >= fa->fail_at) return NULL;
    void *p = malloc(n);
    if (p) fa->live++;
    return p;
}

static void fa_free(void *ctx, void *p) {
    failing_alloc *fa = ctx;
    if (p) fa->live--;
    free(p);
}

typedef struct nomem_stats {
    int opened, nomem, wrong_status, not_end, leaked, full;
} nomem_stats;

static void nomem_case(const char *name, const blob *b, int use_file, size_t full_count) {
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", ETW_TEST_DATA_DIR, name);
    nomem_stats ns;
    memset(&ns, 0, sizeof ns);
    for (int n = 0; n <= 40; n++) {
        failing_alloc fa = {0, n, 0};
        etw_allocator a = {fa_alloc, fa_free, &fa};
        etw_reader_options opt;
        memset(&opt, 0, sizeof opt);
        opt.allocator = &a;
        etw_reader *r = NULL;
        etw_status s = use_file ? etw_reader_open_file(&r, path, &opt)
                                : etw_reader_open_memory(&r, b->p, b->n, &opt);
        if (s == ETW_OK) {
            ns.opened++;
            etw_event ev;
            size_t events = 0;
            while ((s = etw_reader_next(r, &ev)) == ETW_OK && events <= full_count * 10) events++;
            if (s != ETW_END && s != ETW_E_NOMEM) ns.not_end++;
            if (events == full_count) ns.full++;
            if (events > full_count) ns.not_end++;
            /* Rewind and read again: allocations may fail here too. */
            if (etw_reader_rewind(r) == ETW_OK)
                while (etw_reader_next(r, &ev) == ETW_OK && events <= full_count * 20) events++;
            etw_reader_close(r);
        } else if (s == ETW_E_NOMEM) {
            ns.nomem++;
        } else {
            if (ns.wrong_status++ < 3)
                fprintf(stderr, "  %s (%s) fail after %d allocations: open returned %d\n", name,
                        use_file ? "file" : "memory", n, (int)s);
        }
        if (fa.live != 0) ns.leaked++;
    }
    ETW_CHECK(ns.nomem > 0);
    ETW_CHECK(ns.opened > 0);
    ETW_CHECK(ns.full > 0);
    ETW_CHECK_INT(ns.wrong_status, 0);
    ETW_CHECK_INT(ns.not_end, 0);
    ETW_CHECK_INT(ns.leaked, 0);
}

static void test_allocation_failure(void) {
    static const struct {
        const char *name;
        size_t count;
    } cases[] = {
        {"primitive-types.etl", 7},
        {"SelfDescribingSingleEvent.etl", 22},
        {"smallEtlFile.etl", 2},
        {"lxcore_kernel.etl", 4},
        {"gcevents.etl", 71},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        blob b = load(cases[i].name);
        if (!b.p) {
            ETW_CHECK(!"load");
            continue;
        }
        nomem_case(cases[i].name, &b, 0, cases[i].count);
        nomem_case(cases[i].name, &b, 1, cases[i].count);
        free(b.p);
    }
}

int main(void) {
    ETW_RUN(test_truncation);
    ETW_RUN(test_field_flips);
    ETW_RUN(test_extreme_timestamps);
    ETW_RUN(test_not_etl);
    ETW_RUN(test_lying_sizes);
    ETW_RUN(test_failing_input);
    ETW_RUN(test_allocation_failure);
    return ETW_TEST_DONE();
}
