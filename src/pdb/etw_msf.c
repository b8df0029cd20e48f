/* etw_msf.c - the MSF container of a PDB file (etw_msf.h). */
#include "etw_msf.h"

#include <string.h>

#include "../common/etw_alloc.h"
#include "../common/etw_bytes.h"

static const uint8_t MSF_MAGIC[32] = {'M', 'i', 'c', 'r', 'o', 's', 'o', 'f', 't', ' ', 'C',
                                      '/', 'C', '+', '+', ' ', 'M', 'S', 'F', ' ', '7', '.',
                                      '0', '0', '\r', '\n', 0x1a, 'D', 'S', 0, 0, 0};
#define SUPERBLOCK_SIZE 56u

static etw_status fail(const char **why, const char *text, etw_status st) {
    if (why) *why = text;
    return st;
}

/* Read exactly n bytes at off. */
static etw_status read_exact(const etw_input *in, uint64_t off, void *buf, size_t n) {
    if (n == 0) return ETW_OK;
    if (off > in->size || n > in->size - off) return ETW_E_TRUNCATED;
    long long k = in->read_at(in->ctx, off, buf, n);
    if (k < 0) return ETW_E_IO;
    if ((size_t)k != n) return ETW_E_TRUNCATED;
    return ETW_OK;
}

/* Mark page p used in the bitmap; 0 when it already was. */
static int claim(uint8_t *used, uint32_t p) {
    uint8_t bit = (uint8_t)(1u << (p & 7u));
    if (used[p >> 3] & bit) return 0;
    used[p >> 3] |= bit;
    return 1;
}

etw_status etw_msf_open(etw_msf *m, const etw_allocator *a, const etw_input *in, const char **why) {
    memset(m, 0, sizeof *m);
    if (why) *why = NULL;
    m->al = etw_allocator_resolve(a);
    if (!in || !in->read_at) return fail(why, "no input", ETW_E_INVALID_ARG);
    m->in = *in;
    uint8_t sb[SUPERBLOCK_SIZE];
    if (in->size < SUPERBLOCK_SIZE) return fail(why, "shorter than an MSF superblock", ETW_E_CORRUPT);
    etw_status st = read_exact(in, 0, sb, sizeof sb);
    if (st != ETW_OK) return fail(why, "cannot read the superblock", st);
    /* .NET's portable PDBs are ECMA-335 metadata ("BSJB"): no native symbols */
    if (memcmp(sb, "BSJB", 4) == 0)
        return fail(why, "a portable PDB (.NET metadata), not an MSF file", ETW_E_UNSUPPORTED);
    if (memcmp(sb, MSF_MAGIC, sizeof MSF_MAGIC) != 0)
        return fail(why, "not an MSF 7.00 file (PDB 2.0 and other files are not read)", ETW_E_CORRUPT);
    uint32_t bs = etw_le32(sb + 32), fpm = etw_le32(sb + 36), nblocks = etw_le32(sb + 40);
    uint32_t dir_bytes = etw_le32(sb + 44), map_addr = etw_le32(sb + 52);
    /* 512..4096 from the original format; MSVC's /PDBPAGESIZE goes to 32768 */
    if (bs < 512 || bs > 32768 || (bs & (bs - 1)) != 0)
        return fail(why, "MSF block size is not a power of two in 512..32768", ETW_E_CORRUPT);
    if (fpm != 1 && fpm != 2) return fail(why, "MSF free block map page is not 1 or 2", ETW_E_CORRUPT);
    if (nblocks < 3) return fail(why, "MSF block count below 3", ETW_E_CORRUPT);
    if ((uint64_t)nblocks * bs > in->size)
        return fail(why, "file shorter than its MSF block count", ETW_E_TRUNCATED);
    if (map_addr == 0 || map_addr >= nblocks)
        return fail(why, "MSF block map address out of range", ETW_E_CORRUPT);
    if (dir_bytes < 4) return fail(why, "MSF stream directory shorter than its count", ETW_E_CORRUPT);
    uint32_t dir_pages = dir_bytes / bs + (dir_bytes % bs != 0);
    /* the block map is one page of u32 page numbers */
    if (dir_pages > bs / 4 || dir_pages > nblocks)
        return fail(why, "MSF stream directory larger than its block map or the file", ETW_E_CORRUPT);
    m->block_size = bs;
    m->num_blocks = nblocks;

    uint8_t *used = etw_calloc(&m->al, (size_t)nblocks / 8 + 1, 1);
    uint8_t *map = etw_alloc(&m->al, bs);
    uint8_t *dir = etw_alloc(&m->al, (size_t)dir_pages * bs);
    if (!used || !map || !dir) {
        st = ETW_E_NOMEM;
        goto out;
    }
    claim(used, 0);
    claim(used, fpm);
    st = read_exact(in, (uint64_t)map_addr * bs, map, bs);
    if (st != ETW_OK) {
        if (why) *why = "cannot read the MSF block map";
        goto out;
    }
    for (uint32_t i = 0; i < dir_pages; i++) {
        uint32_t p = etw_le32(map + (size_t)i * 4);
        if (p == 0 || p >= nblocks) {
            st = fail(why, "MSF stream directory page out of range", ETW_E_CORRUPT);
            goto out;
        }
        if (!claim(used, p)) {
            st = fail(why, "MSF stream directory page used twice", ETW_E_CORRUPT);
            goto out;
        }
        st = read_exact(in, (uint64_t)p * bs, dir + (size_t)i * bs, bs);
        if (st != ETW_OK) {
            if (why) *why = "cannot read the MSF stream directory";
            goto out;
        }
    }

    etw_cursor c = etw_cursor_make(dir, dir_bytes);
    uint32_t ns = etw_cursor_u32(&c);
    if (ns > etw_cursor_left(&c) / 4) {
        st = fail(why, "MSF stream count larger than the stream directory", ETW_E_CORRUPT);
        goto out;
    }
    const uint8_t *sizes = etw_cursor_take(&c, (size_t)ns * 4);
    /* total pages first: they must fit in what is left of the directory */
    uint64_t total = 0;
    for (uint32_t s = 0; s < ns; s++) {
        uint32_t sz = etw_le32(sizes + (size_t)s * 4);
        if (sz == ETW_MSF_NIL_STREAM) continue;
        total += sz / bs + (sz % bs != 0);
    }
    if (total > etw_cursor_left(&c) / 4) {
        st = fail(why, "MSF stream directory shorter than its streams' page lists", ETW_E_CORRUPT);
        goto out;
    }
    m->num_streams = ns;
    m->stream_size = etw_alloc(&m->al, ((size_t)ns + 1) * 4);
    m->stream_first = etw_alloc(&m->al, ((size_t)ns + 1) * 4);
    m->pages = etw_alloc(&m->al, (size_t)total * 4);
    if (!m->stream_size || !m->stream_first || !m->pages) {
        st = ETW_E_NOMEM;
        goto out;
    }
    uint32_t k = 0;
    for (uint32_t s = 0; s < ns; s++) {
        uint32_t sz = etw_le32(sizes + (size_t)s * 4);
        if (sz == ETW_MSF_NIL_STREAM) sz = 0;
        uint32_t np = sz / bs + (sz % bs != 0);
        m->stream_size[s] = sz;
        m->stream_first[s] = k;
        for (uint32_t i = 0; i < np; i++) {
            uint32_t p = etw_cursor_u32(&c);
            if (p == 0 || p >= nblocks) {
                st = fail(why, "MSF stream page out of range", ETW_E_CORRUPT);
                goto out;
            }
            if (!claim(used, p)) {
                st = fail(why, "MSF page used twice (by one stream or by two)", ETW_E_CORRUPT);
                goto out;
            }
            m->pages[k++] = p;
        }
    }
    m->stream_first[ns] = k;
    st = ETW_OK;
out:
    etw_free(&m->al, used);
    etw_free(&m->al, map);
    etw_free(&m->al, dir);
    if (st != ETW_OK) {
        if (why && !*why) *why = "cannot read the MSF container";
        etw_msf_close(m);
    }
    return st;
}

void etw_msf_close(etw_msf *m) {
    if (!m) return;
    etw_free(&m->al, m->stream_size);
    etw_free(&m->al, m->stream_first);
    etw_free(&m->al, m->pages);
    m->stream_size = m->stream_first = m->pages = NULL;
    m->num_streams = 0;
}

uint32_t etw_msf_stream_size(const etw_msf *m, uint32_t s) {
    return s < m->num_streams ? m->stream_size[s] : 0;
}

etw_status etw_msf_read_stream(const etw_msf *m, uint32_t s, size_t max_len, uint8_t **out, size_t *len) {
    *out = NULL;
    *len = 0;
    if (s >= m->num_streams) return ETW_E_NOT_FOUND;
    size_t n = m->stream_size[s];
    if (n > max_len) n = max_len;
    uint8_t *buf = etw_alloc(&m->al, n);
    if (!buf) return ETW_E_NOMEM;
    const uint32_t *pg = m->pages + m->stream_first[s];
    size_t done = 0;
    while (done < n) {
        size_t chunk = n - done < m->block_size ? n - done : m->block_size;
        uint32_t p = pg[done / m->block_size];
        /* consecutive pages in one read */
        size_t i = done / m->block_size;
        while (chunk < n - done && pg[i + 1] == pg[i] + 1) {
            i++;
            size_t more = n - done - chunk < m->block_size ? n - done - chunk : m->block_size;
            chunk += more;
        }
        etw_status st = read_exact(&m->in, (uint64_t)p * m->block_size, buf + done, chunk);
        if (st != ETW_OK) {
            etw_free(&m->al, buf);
            return st;
        }
        done += chunk;
    }
    *out = buf;
    *len = n;
    return ETW_OK;
}
