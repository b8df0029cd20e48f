/* etw_buffer_index.c - where the buffers of an ETL file are
 * (etw_buffer_index.h). */
#include "etw_buffer_index.h"

#include <stdio.h>
#include <string.h>

#include "../common/etw_alloc.h"
#include "../common/etw_bytes.h"
#include "etw_record.h"
#include "etw_xpress.h"

/* When the compressed buffers of a file would decompress to more than
 * DECOMP_TOTAL_RATIO times the file's size (and more than
 * DECOMP_TOTAL_FLOOR), each decompresses to at most DECOMP_TOTAL_RATIO times
 * its own size: real traces compress 5 to 15 times, a bomb millions. */
#define DECOMP_TOTAL_RATIO 256u
#define DECOMP_TOTAL_FLOOR (64ull * 1024u * 1024u)
/* Window read at a time while searching for the next buffer after damage. */
#define RESYNC_WINDOW (64u * 1024u)
/* Bytes of a candidate's first record that judge() checks (its header). */
#define PROBE_RECORD 16u

/* The header fields every buffer Windows writes has in range, whatever its
 * size fields say. The LoggerId is not one of them: a relogged Windows 7
 * trace has 0 in its first buffer and 0x8001 in every other. */
static int fields_ok(const etw_buffer_header *h) {
    return h->type <= ETW_BUFFER_TYPE_MAX && !(h->flags & ~ETW_BUFFER_FLAGS_KNOWN) &&
           h->state <= ETW_BUFFER_STATE_MAX;
}

int etw_buffer_size_ok(const etw_reader *r, uint32_t size) {
    return size >= ETW_BUFFER_HEADER_SIZE && size <= r->max_buffer;
}

/* End of an uncompressed buffer's data (etw_buffer_data_end) when the buffer
 * is known to take `extent` bytes of the file, whatever its BufferSize says. */
static uint32_t data_end_within(const etw_buffer_header *h, uint64_t extent) {
    etw_buffer_header t = *h;
    t.buffer_size = extent > UINT32_MAX ? UINT32_MAX : (uint32_t)extent;
    return etw_buffer_data_end(&t);
}

/* Where this buffer's own data ends, from SavedOffset/FilledBytes alone
 * (the header for a compressed buffer, or when neither is usable): a
 * header-like pattern before it is not the next buffer. */
static uint32_t own_data_end(const etw_reader *r, const etw_buffer_header *h, uint64_t left) {
    if (h->flags & ETW_BUFFER_FLAG_COMPRESSED) return ETW_BUFFER_HEADER_SIZE;
    uint64_t lim = left < r->max_buffer ? left : r->max_buffer;
    uint32_t e = h->saved_offset;
    if (e < ETW_BUFFER_HEADER_SIZE || e > lim) e = h->filled_bytes;
    if (e < ETW_BUFFER_HEADER_SIZE || e > lim) e = ETW_BUFFER_HEADER_SIZE;
    return e;
}

/* The most a compressed buffer may decompress to: its FilledBytes, but
 * never more than the trace's BufferSize (r->decomp_cap). */
static uint32_t decompressed_cap(const etw_reader *r, const etw_buffer_header *h) {
    uint32_t cap = r->decomp_cap;
    if (h->filled_bytes >= ETW_BUFFER_HEADER_SIZE && h->filled_bytes < cap) cap = h->filled_bytes;
    return cap;
}

/* Are raw[0..n) (n <= PROBE_BYTES bytes at a candidate offset, `left` bytes
 * before the end of the input) a buffer header we can believe? Used where
 * the size chain leads (a bad BufferSize is then tolerated: need_size 0)
 * and to find the next buffer after damage (need_size 1). The fields must be
 * in range and the first record (decompressed when needed) must start with
 * a known header; an empty buffer must say it is empty. */
static int judge(const etw_reader *r, const uint8_t *raw, size_t n, uint64_t left, int need_size,
                 etw_buffer_header *h) {
    if (n < ETW_BUFFER_HEADER_SIZE + 8 || left < ETW_BUFFER_HEADER_SIZE + 8) return 0;
    const char *msg;
    (void)etw_buffer_header_parse(raw, h, &msg); /* fills h whatever it says */
    if (!fields_ok(h)) return 0;
    int sized = etw_buffer_size_ok(r, h->buffer_size);
    if (need_size && !sized) return 0;
    uint8_t first[PROBE_RECORD];
    const uint8_t *rec;
    size_t avail;
    if (h->flags & ETW_BUFFER_FLAG_COMPRESSED) {
        if (h->filled_bytes < ETW_BUFFER_HEADER_SIZE + PROBE_RECORD || h->filled_bytes > r->max_buffer)
            return 0;
        size_t got = 0;
        etw_xpress_decompress(raw + ETW_BUFFER_HEADER_SIZE, n - ETW_BUFFER_HEADER_SIZE, first,
                              sizeof first, &got);
        if (got < sizeof first) return 0;
        rec = first;
        avail = decompressed_cap(r, h) - ETW_BUFFER_HEADER_SIZE;
    } else {
        /* Where the chain led, the size may be the lie: judge the data
         * SavedOffset/FilledBytes state within the file. */
        uint64_t extent = need_size && h->buffer_size < left ? h->buffer_size : left;
        if (extent > r->max_buffer) extent = r->max_buffer;
        uint32_t end = data_end_within(h, extent);
        if (end == ETW_BUFFER_HEADER_SIZE) /* an empty buffer says so; garbage sizes fall back to 0x48 */
            return h->saved_offset == ETW_BUFFER_HEADER_SIZE || h->filled_bytes == ETW_BUFFER_HEADER_SIZE;
        if (n < ETW_BUFFER_HEADER_SIZE + PROBE_RECORD) return 0;
        rec = raw + ETW_BUFFER_HEADER_SIZE;
        avail = end - ETW_BUFFER_HEADER_SIZE;
    }
    return etw_record_head_plausible(rec, PROBE_RECORD, avail);
}

/* n bytes at off (file input): from the read-ahead window when the index
 * walks buffers of at most INDEX_SMALL bytes, else one read. */
static long long read_ahead(etw_reader *r, uint64_t off, void *buf, size_t n) {
    if (r->win_len && off >= r->win_off && off - r->win_off <= r->win_len &&
        n <= r->win_len - (off - r->win_off)) {
        memcpy(buf, r->win + (off - r->win_off), n);
        return (long long)n;
    }
    /* input in memory reads for free: no window */
    if (r->mem || r->win_hint > INDEX_SMALL || n > INDEX_WINDOW || !etw_reader_grow(&r->alloc, &r->win, &r->win_cap, INDEX_WINDOW))
        return r->in.read_at(r->in.ctx, off, buf, n);
    r->win_len = 0;
    uint64_t left = r->in.size > off ? r->in.size - off : 0;
    size_t want = left < INDEX_WINDOW ? (size_t)left : INDEX_WINDOW;
    long long k = r->in.read_at(r->in.ctx, off, r->win, want);
    if (k < 0) return k;
    r->win_off = off;
    r->win_len = (size_t)k;
    size_t c = (size_t)k < n ? (size_t)k : n;
    memcpy(buf, r->win, c);
    return (long long)c;
}

/* judge() at a file offset (one small read for file input). */
static int plausible_at(etw_reader *r, uint64_t off, int need_size, etw_buffer_header *h) {
    if (off >= r->in.size) return 0;
    uint64_t left = r->in.size - off;
    size_t want = left < PROBE_BYTES ? (size_t)left : PROBE_BYTES;
    if (r->mem) return judge(r, r->mem + off, want, left, need_size, h);
    r->probe_len = 0;
    if (read_ahead(r, off, r->probe_raw, want) != (long long)want) return 0;
    r->probe_off = off;
    r->probe_len = want;
    return judge(r, r->probe_raw, want, left, need_size, h);
}

/* Does the candidate buffer at off (header h) chain on: its size leads to
 * the end of the input or to another believable header? */
static int confirmed(etw_reader *r, uint64_t off, const etw_buffer_header *h) {
    etw_buffer_header nh;
    uint64_t next = off + h->buffer_size;
    return next == r->in.size || (next < r->in.size && plausible_at(r, next, 0, &nh));
}

/* A candidate header inside a buffer that the end of the file cut (its
 * BufferSize runs past the end): whatever lies there was written as that
 * buffer's data, so a header-like pattern in it is believed only when it
 * agrees with what is known already: the cut buffer's logger, a processor
 * the log-file header counts, and the trace's buffer size where the cut
 * buffer has it (uncompressed buffers of one trace share it). */
static int agrees_with_cut(const etw_reader *r, const etw_buffer_header *h) {
    const etw_buffer_header *c = &r->cut;
    if (h->logger_id != c->logger_id) return 0;
    uint32_t nproc = r->lf.number_of_processors;
    if (nproc && (h->flags & ETW_BUFFER_FLAG_PROC_INDEX) && h->cpu >= nproc) return 0;
    if (r->lf_buffer_size && c->buffer_size == r->lf_buffer_size &&
        !((h->flags | c->flags) & ETW_BUFFER_FLAG_COMPRESSED) && h->buffer_size != r->lf_buffer_size)
        return 0;
    return 1;
}

/* After damage at `from`: the offset of the next believable buffer header,
 * or the input size when there is none. The input is read in windows that
 * overlap by PROBE_BYTES and every candidate is judged in memory: the cost
 * is linear in the bytes scanned. Among candidates, one whose size chains
 * on to another buffer wins over one whose does not (a header-like pattern
 * in a payload), looking no further than the first one's own size. */
static uint64_t resync(etw_reader *r, uint64_t from) {
    etw_buffer_header h;
    uint64_t first = r->in.size, limit = r->in.size;
    for (uint64_t base = from; base < limit; base += RESYNC_WINDOW) {
        uint64_t left = r->in.size - base;
        size_t want = RESYNC_WINDOW + PROBE_BYTES;
        if (left < want) want = (size_t)left;
        const uint8_t *win;
        size_t got;
        if (r->mem) {
            win = r->mem + base;
            got = want;
        } else {
            if (!etw_reader_grow(&r->alloc, &r->tmp, &r->tmp_cap, RESYNC_WINDOW + PROBE_BYTES)) break;
            long long k = r->in.read_at(r->in.ctx, base, r->tmp, want);
            if (k < 0) break;
            win = r->tmp;
            got = (size_t)k;
        }
        if (got < ETW_BUFFER_HEADER_SIZE + 8) break;
        size_t last = got - (ETW_BUFFER_HEADER_SIZE + 8);
        if (last >= RESYNC_WINDOW) last = RESYNC_WINDOW - 1;
        if (limit - base <= last) last = (size_t)(limit - base - 1);
        for (size_t i = 0; i <= last; i++) {
            const uint8_t *p = win + i;
            /* The cheap fields first, in place. */
            if (!etw_buffer_size_ok(r, etw_le32(p)) || etw_le32(p + 0x2C) > ETW_BUFFER_STATE_MAX ||
                etw_le16(p + 0x36) > ETW_BUFFER_TYPE_MAX || (etw_le16(p + 0x34) & ~ETW_BUFFER_FLAGS_KNOWN))
                continue;
            size_t n = got - i < PROBE_BYTES ? got - i : PROBE_BYTES;
            if (!judge(r, p, n, left - i, 1, &h)) continue;
            if (r->cut_active && base + i < r->cut_end && !agrees_with_cut(r, &h)) continue;
            if (confirmed(r, base + i, &h)) return base + i;
            if (first == r->in.size) {
                first = base + i;
                limit = first + h.buffer_size < r->in.size ? first + h.buffer_size : r->in.size;
                if (limit - base <= last) last = (size_t)(limit - base - 1);
            }
        }
    }
    return first;
}

static etw_status index_push(etw_reader *r, uint32_t *cap, const buf_entry *e) {
    if (r->nbufs == *cap) {
        uint32_t nc = *cap ? *cap * 2 : 64;
        buf_entry *nb = etw_alloc(&r->alloc, (size_t)nc * sizeof *nb);
        if (!nb) return ETW_E_NOMEM;
        if (r->nbufs) memcpy(nb, r->bufs, r->nbufs * sizeof *nb);
        etw_free(&r->alloc, r->bufs);
        r->bufs = nb;
        *cap = nc;
    }
    r->bufs[r->nbufs++] = *e;
    return ETW_OK;
}

buf_entry etw_buffer_index_entry(const etw_reader *r, uint64_t off, const etw_buffer_header *h,
                                 uint64_t extent) {
    buf_entry e;
    e.offset = off;
    if (extent > r->in.size - off) extent = r->in.size - off;
    if (extent > r->max_buffer) extent = r->max_buffer;
    e.disk_size = (uint32_t)extent;
    e.sequence = h->sequence;
    e.cpu = h->cpu;
    e.flags = h->flags;
    e.type = h->type;
    if (h->flags & ETW_BUFFER_FLAG_COMPRESSED)
        /* The uncompressed size is not stored; FilledBytes is the size the
         * data had before compression (checked on real traces). */
        e.data_end = decompressed_cap(r, h);
    else
        e.data_end = data_end_within(h, extent);
    return e;
}

/* Where the buffer at off (header h, already believed) ends: the offset of
 * the next buffer or the input size. A BufferSize that leads straight to a
 * well-formed buffer header (or to the end of the input) is right; when it
 * does not, the trace's own BufferSize (log-file header) is tried, then the
 * next believable header after this buffer's data. *extent receives the
 * bytes this buffer takes. */
/* Does the trace's BufferSize lf lead from off to a buffer (or to the end)? */
static int lf_leads(etw_reader *r, uint64_t off, uint32_t lf, uint64_t left) {
    etw_buffer_header nh;
    return lf == left || plausible_at(r, off + lf, 0, &nh);
}

static uint64_t chain_next(etw_reader *r, uint64_t off, const etw_buffer_header *h, uint64_t *extent) {
    etw_buffer_header nh;
    uint64_t left = r->in.size - off;
    uint32_t size = h->buffer_size;
    int sized = etw_buffer_size_ok(r, size);
    uint32_t own = own_data_end(r, h, left);
    uint32_t lf = r->lf_buffer_size;
    /* The trace's own buffer size, where it differs and lands past this
     * buffer's data on a buffer (or on the end of the input). */
    int lf_may = lf && lf != size && lf >= own && lf <= left;
    if (sized && size <= left && (size == left || plausible_at(r, off + size, 0, &nh))) {
        *extent = size;
        if (size > lf && lf_may && lf_leads(r, off, lf, left)) {
            /* Larger than every buffer of the trace and stepping over a
             * buffer that starts where the trace's size says. */
            snprintf(r->msg, sizeof r->msg,
                     "buffer size %u is larger than the trace's %u and runs over the buffer there; buffer cut there",
                     size, lf);
            etw_reader_diag(r, ETW_E_CORRUPT, off, r->msg);
            *extent = lf;
        }
        return off + *extent;
    }
    if (lf_may && lf_leads(r, off, lf, left)) {
        snprintf(r->msg, sizeof r->msg,
                 "buffer size %u does not lead to a buffer; the trace's buffer size %u does", size, lf);
        etw_reader_diag(r, ETW_E_CORRUPT, off, r->msg);
        *extent = lf;
        return off + lf;
    }
    /* a buffer the end of the file cuts: what follows its data is its own */
    r->cut_active = sized && size > left;
    r->cut_end = off + size;
    r->cut = *h;
    uint64_t found = resync(r, off + own);
    r->cut_active = 0;
    *extent = found - off;
    if (!sized) {
        snprintf(r->msg, sizeof r->msg, "buffer size %u is not usable; next buffer found %llu bytes on", size,
                 (unsigned long long)(found - off));
        etw_reader_diag(r, ETW_E_CORRUPT, off, r->msg);
    } else if (size > left) {
        if (found < r->in.size) {
            snprintf(r->msg, sizeof r->msg,
                     "buffer size %u runs past the end of the file; next buffer found %llu bytes on; buffer cut there",
                     size, (unsigned long long)(found - off));
            etw_reader_diag(r, ETW_E_CORRUPT, off, r->msg);
        } else {
            snprintf(r->msg, sizeof r->msg, "buffer of %u bytes cut by the end of the file after %llu bytes", size,
                     (unsigned long long)left);
            etw_reader_diag(r, ETW_E_TRUNCATED, off, r->msg);
        }
    } else if (found < off + size) {
        snprintf(r->msg, sizeof r->msg,
                 "buffer size %u runs over the next buffer, found %llu bytes on; buffer cut there", size,
                 (unsigned long long)(found - off));
        etw_reader_diag(r, ETW_E_CORRUPT, off, r->msg);
    } else {
        snprintf(r->msg, sizeof r->msg, "no valid buffer header here; skipped %llu bytes to the next buffer",
                 (unsigned long long)(found - off - size));
        etw_reader_diag(r, ETW_E_CORRUPT, off + size, r->msg);
        r->stats.buffers_skipped++;
    }
    return found;
}

/* A decompression bomb: tiny compressed buffers that each claim the most a
 * buffer may hold. Bound the whole file's decompressed size by its own. */
static void bound_decompression(etw_reader *r) {
    uint64_t total = 0;
    for (uint32_t i = 0; i < r->nbufs; i++)
        if (r->bufs[i].flags & ETW_BUFFER_FLAG_COMPRESSED) total += r->bufs[i].data_end;
    uint64_t budget = r->in.size * DECOMP_TOTAL_RATIO;
    if (budget < DECOMP_TOTAL_FLOOR) budget = DECOMP_TOTAL_FLOOR;
    if (total <= budget) return;
    for (uint32_t i = 0; i < r->nbufs; i++) {
        buf_entry *b = &r->bufs[i];
        uint64_t most = (uint64_t)b->disk_size * DECOMP_TOTAL_RATIO;
        if ((b->flags & ETW_BUFFER_FLAG_COMPRESSED) && b->data_end > most) b->data_end = (uint32_t)most;
    }
    snprintf(r->msg, sizeof r->msg,
             "compressed buffers claim %llu decompressed bytes from a %llu-byte file; each decompresses to at most %u times its size",
             (unsigned long long)total, (unsigned long long)r->in.size, DECOMP_TOTAL_RATIO);
    etw_reader_diag(r, ETW_E_LIMIT, 0, r->msg);
}

etw_status etw_buffer_index_build(etw_reader *r) {
    uint32_t cap = 0;
    uint64_t off = 0;
    while (off < r->in.size) {
        etw_buffer_header h;
        uint8_t raw[ETW_BUFFER_HEADER_SIZE];
        const char *msg = NULL;
        if (r->in.size - off < ETW_BUFFER_HEADER_SIZE) {
            snprintf(r->msg, sizeof r->msg, "%llu bytes after the last buffer are not a buffer",
                     (unsigned long long)(r->in.size - off));
            etw_reader_diag(r, ETW_E_TRUNCATED, off, r->msg);
            break;
        }
        if (r->probe_len >= sizeof raw && r->probe_off == off) {
            memcpy(raw, r->probe_raw, sizeof raw); /* read when the chain judged it */
        } else {
            long long k = read_ahead(r, off, raw, sizeof raw);
            if (k < (long long)sizeof raw) return ETW_E_IO;
        }
        /* Every offset reached here is a buffer: 0 (read_header found the
         * log-file header there) or one the chain believed. */
        (void)etw_buffer_header_parse(raw, &h, &msg);
        r->win_hint = h.buffer_size;
        uint64_t extent = 0;
        uint64_t next = chain_next(r, off, &h, &extent);
        buf_entry e = etw_buffer_index_entry(r, off, &h, extent);
        if (h.flags & ETW_BUFFER_FLAG_COMPRESSED) r->stats.buffers_compressed++;
        if (h.flags & (ETW_BUFFER_FLAG_EVENTS_LOST | ETW_BUFFER_FLAG_BUFFER_LOST)) r->stats.buffers_lost_flag++;
        etw_status s = index_push(r, &cap, &e);
        if (s != ETW_OK) return s;
        off = next;
    }
    r->stats.buffers = r->nbufs;
    etw_free(&r->alloc, r->win);
    r->win = NULL;
    r->win_cap = r->win_len = 0;
    bound_decompression(r);
    return r->nbufs ? ETW_OK : ETW_E_NOT_ETL;
}
