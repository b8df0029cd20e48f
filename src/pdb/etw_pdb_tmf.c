/* etw_pdb_tmf.c - WPP trace message formats kept in a PDB: the S_ANNOTATION
 * records tagged "TMF:" / "TMC:" of each module's symbol stream
 * (etwdecode/etw_pdb.h).
 *
 * S_ANNOTATION (0x1019), after the u16 length and u16 kind: u32 offset, u16
 * section, u16 string count, then count NUL-terminated strings; the record
 * is padded to 4 bytes (MSVC pads with zeros, LLVM with 0xF1 0xF2 0xF3):
 * bytes after the last string are not looked at. Facts: microsoft/pdb-rs
 * docs/codeview/symbols/s_annotation.md, LLVM's CodeView symbol docs.
 *
 * The file is read again here (MSF directory, DBI header and module list,
 * then each module's symbol stream, one at a time): nothing of it is kept in
 * the etw_pdb object.
 */
#include <string.h>

#include "../common/etw_alloc.h"
#include "../common/etw_bytes.h"
#include "../etl/etw_file.h"
#include "etw_pdb_internal.h"

#define STREAM_DBI 3u
#define DBI_HEADER_SIZE 64u
#define S_ANNOTATION 0x1019u
#define ANNOTATION_FIXED 8u /* offset, section, count */

typedef struct walk {
    etw_allocator al;
    const char **why;
    etw_pdb_annotation_fn fn;
    void *ctx;
    /* the current record's strings: NUL-separated in pool, '\n'-ended in
     * text; both grow to the largest record seen (< 64 KiB each) */
    char *pool;
    size_t pool_cap;
    char *text;
    size_t text_cap;
    const char **ptrs;
    size_t ptrs_cap;
} walk;

static etw_status fail(const char **why, const char *text, etw_status st) {
    if (why && !*why) *why = text;
    return st;
}

static int reserve(const etw_allocator *al, void **buf, size_t *cap, size_t need, size_t elem) {
    if (need <= *cap) return 1;
    void *nb = etw_alloc(al, need * elem);
    if (!nb) return 0;
    etw_free(al, *buf);
    *buf = nb;
    *cap = need;
    return 1;
}

/* Length of the valid UTF-8 sequence at s[0..n), 0 when it is not one. */
static size_t utf8_len(const uint8_t *s, size_t n) {
    uint8_t c = s[0];
    if (c < 0x80) return 1;
    size_t len;
    uint8_t lo = 0x80, hi = 0xBF;
    if (c >= 0xC2 && c <= 0xDF) {
        len = 2;
    } else if (c >= 0xE0 && c <= 0xEF) {
        len = 3;
        if (c == 0xE0) lo = 0xA0;
        if (c == 0xED) hi = 0x9F;
    } else if (c >= 0xF0 && c <= 0xF4) {
        len = 4;
        if (c == 0xF0) lo = 0x90;
        if (c == 0xF4) hi = 0x8F;
    } else {
        return 0;
    }
    if (len > n || s[1] < lo || s[1] > hi) return 0;
    for (size_t i = 2; i < len; i++)
        if (s[i] < 0x80 || s[i] > 0xBF) return 0;
    return len;
}

/* Copy s[0, n) to dst, invalid UTF-8 as '?', CR and LF as ' '. */
static void clean_copy(char *dst, const uint8_t *s, size_t n) {
    for (size_t i = 0; i < n;) {
        size_t k = utf8_len(s + i, n - i);
        if (k == 0) {
            dst[i++] = '?';
        } else if (k == 1 && (s[i] == '\r' || s[i] == '\n')) {
            dst[i++] = ' ';
        } else {
            memcpy(dst + i, s + i, k);
            i += k;
        }
    }
}

/* One S_ANNOTATION body (after length and kind). */
static etw_status annotation(walk *w, uint32_t module, const uint8_t *body, size_t blen) {
    if (blen < ANNOTATION_FIXED) return fail(w->why, "S_ANNOTATION record too short", ETW_E_CORRUPT);
    uint16_t count = etw_le16(body + 6);
    size_t pos = ANNOTATION_FIXED;
    /* each string takes at least its NUL */
    if (count > blen - pos) return fail(w->why, "S_ANNOTATION string count larger than its record", ETW_E_CORRUPT);
    /* check every string first: a damaged record is an error whatever its tag */
    size_t first_len = 0;
    for (uint32_t i = 0; i < count; i++) {
        const uint8_t *z = pos < blen ? memchr(body + pos, 0, blen - pos) : NULL;
        if (!z) return fail(w->why, "S_ANNOTATION string runs past its record", ETW_E_CORRUPT);
        size_t n = (size_t)(z - (body + pos));
        if (i == 0) first_len = n;
        pos += n + 1;
    }
    if (count == 0 || first_len != 4) return ETW_OK;
    const uint8_t *tag = body + ANNOTATION_FIXED;
    etw_pdb_annotation a;
    if (memcmp(tag, "TMF:", 4) == 0)
        a.kind = ETW_PDB_TMF;
    else if (memcmp(tag, "TMC:", 4) == 0)
        a.kind = ETW_PDB_TMC;
    else
        return ETW_OK;
    /* the strings after the tag: bytes ANNOTATION_FIXED + 5 .. pos */
    size_t start = ANNOTATION_FIXED + 5, bytes = pos - start;
    size_t n = (size_t)count - 1;
    if (!reserve(&w->al, (void **)&w->pool, &w->pool_cap, bytes + 1, 1) ||
        !reserve(&w->al, (void **)&w->text, &w->text_cap, bytes + 1, 1) ||
        !reserve(&w->al, (void **)&w->ptrs, &w->ptrs_cap, n + 1, sizeof(const char *)))
        return ETW_E_NOMEM;
    clean_copy(w->pool, body + start, bytes);
    /* the NULs between strings survive clean_copy (ASCII, not CR/LF) */
    w->pool[bytes] = 0;
    size_t q = 0;
    for (size_t i = 0; i < n; i++) {
        w->ptrs[i] = w->pool + q;
        size_t k = strlen(w->pool + q);
        memcpy(w->text + q, w->pool + q, k);
        w->text[q + k] = '\n';
        q += k + 1;
    }
    w->text[q] = 0;
    w->ptrs[n] = NULL;
    a.module = module;
    a.offset = etw_le32(body);
    a.section = etw_le16(body + 4);
    a.count = n;
    a.strings = w->ptrs;
    a.text = w->text;
    a.text_len = q;
    return w->fn(w->ctx, &a);
}

static etw_status module_annotations(void *ctx, uint32_t index, const uint8_t *data, size_t len) {
    walk *w = ctx;
    size_t pos = 4; /* after the CodeView signature */
    while (pos < len) {
        if (len - pos < 4) return fail(w->why, "symbol record header runs past its stream", ETW_E_CORRUPT);
        uint16_t reclen = etw_le16(data + pos);
        uint16_t kind = etw_le16(data + pos + 2);
        if (reclen < 2) return fail(w->why, "symbol record shorter than its kind", ETW_E_CORRUPT);
        if (reclen > len - pos - 2) return fail(w->why, "symbol record runs past its stream", ETW_E_CORRUPT);
        const uint8_t *body = data + pos + 4;
        size_t blen = (size_t)reclen - 2;
        pos += 2 + (size_t)reclen;
        if (kind == S_ANNOTATION) {
            etw_status st = annotation(w, index, body, blen);
            if (st != ETW_OK) return st;
        }
    }
    return ETW_OK;
}

static etw_status walk_input(const etw_input *in, const etw_allocator *al, const char **why,
                             etw_pdb_annotation_fn fn, void *ctx) {
    etw_msf msf;
    etw_status st = etw_msf_open(&msf, al, in, why);
    if (st != ETW_OK) return st;
    uint32_t dbi_size = etw_msf_stream_size(&msf, STREAM_DBI);
    uint8_t *dbi = NULL;
    size_t len = 0;
    if (dbi_size == 0) goto done; /* a PDB of types only */
    if (dbi_size < DBI_HEADER_SIZE) {
        st = fail(why, "DBI stream shorter than its header", ETW_E_CORRUPT);
        goto done;
    }
    st = etw_msf_read_stream(&msf, STREAM_DBI, (size_t)-1, &dbi, &len);
    if (st != ETW_OK) {
        fail(why, "cannot read the DBI stream", st);
        dbi = NULL;
        goto done;
    }
    if (etw_le32(dbi) != 0xFFFFFFFFu) {
        st = fail(why, "DBI stream of a format before VC 4.1", ETW_E_UNSUPPORTED);
        goto done;
    }
    uint32_t modi = etw_le32(dbi + 24);
    if (modi > 0x7FFFFFFFu || modi > len - DBI_HEADER_SIZE) {
        st = fail(why, "DBI substream sizes larger than the DBI stream", ETW_E_CORRUPT);
        goto done;
    }
    walk w;
    memset(&w, 0, sizeof w);
    w.al = *al;
    w.why = why;
    w.fn = fn;
    w.ctx = ctx;
    st = etw_pdb_walk_modules(&msf, al, dbi + DBI_HEADER_SIZE, modi, why, module_annotations, &w);
    etw_free(al, w.pool);
    etw_free(al, w.text);
    etw_free(al, (void *)w.ptrs);
done:
    if (dbi) etw_free(al, dbi);
    etw_msf_close(&msf);
    return st;
}


etw_status etw_pdb_annotations_mem(const uint8_t *data, size_t size, const etw_pdb_options *opt,
                                   etw_pdb_annotation_fn fn, void *ctx) {
    const char **why = opt ? opt->reason : NULL;
    if (why) *why = NULL;
    if ((!data && size) || !fn) return ETW_E_INVALID_ARG;
    etw_allocator al = etw_allocator_resolve(opt ? opt->allocator : NULL);
    mem_src src = {data, size};
    etw_input in;
    in.read_at = etw_pdb_mem_read_at;
    in.size = size;
    in.ctx = &src;
    return walk_input(&in, &al, why, fn, ctx);
}

etw_status etw_pdb_annotations_file(const char *path, const etw_pdb_options *opt, etw_pdb_annotation_fn fn,
                                    void *ctx) {
    const char **why = opt ? opt->reason : NULL;
    if (why) *why = NULL;
    if (!path || !fn) return ETW_E_INVALID_ARG;
    etw_allocator al = etw_allocator_resolve(opt ? opt->allocator : NULL);
    etw_file *f;
    etw_input in;
    etw_status st = etw_file_open(&al, path, 0, &f, &in);
    if (st != ETW_OK) {
        if (why) *why = "cannot open the file";
        return st;
    }
    st = walk_input(&in, &al, why, fn, ctx);
    etw_file_close(&al, f);
    return st;
}
