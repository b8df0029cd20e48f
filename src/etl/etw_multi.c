/* etw_multi.c - several readers merged by timestamp (see etw_multi.h).
 * The merge is a linear scan of the files' head events: investigations
 * merge a handful of files, and a scan of a few heads costs less than a
 * heap's bookkeeping at that size. */
#include "etwdecode/etw_multi.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "../common/etw_alloc.h"
#include "etw_multi_internal.h"
#include "etw_unpack.h"
#include "etwdecode/etw_sniff.h"

typedef struct multi_file {
    etw_reader *reader;
    char *name;
    etw_event head; /* valid when has_head */
    int has_head;
    int done;
    void *owned; /* the decompressed bytes its reader reads, or NULL */
} multi_file;

struct etw_multi {
    etw_allocator alloc;
    etw_reader_options opt;
    multi_file *files;
    size_t count, cap;
    size_t current;   /* file of the event being read / last returned */
    int started;
    int pending;      /* the last returned file must advance before the next pick */
};

etw_status etw_multi_new(etw_multi **out, const etw_reader_options *opt) {
    if (!out) return ETW_E_INVALID_ARG;
    *out = NULL;
    etw_allocator a = etw_allocator_resolve(opt ? opt->allocator : NULL);
    etw_multi *m = etw_calloc(&a, 1, sizeof *m);
    if (!m) return ETW_E_NOMEM;
    m->alloc = a;
    if (opt) m->opt = *opt;
    *out = m;
    return ETW_OK;
}

void etw_multi_free(etw_multi *m) {
    if (!m) return;
    etw_allocator a = m->alloc;
    for (size_t i = 0; i < m->count; i++) {
        etw_reader_close(m->files[i].reader);
        etw_free(&a, m->files[i].name);
        etw_free(&a, m->files[i].owned);
    }
    etw_free(&a, m->files);
    etw_free(&a, m);
}

etw_status etw_multi_add_reader(etw_multi *m, etw_reader *r, const char *name) {
    if (!m || !r) {
        etw_reader_close(r);
        return ETW_E_INVALID_ARG;
    }
    if (m->started) {
        etw_reader_close(r);
        return ETW_E_INVALID_ARG;
    }
    if (m->count >= ETW_MULTI_MAX_FILES) {
        etw_reader_close(r);
        return ETW_E_LIMIT;
    }
    if (m->count == m->cap) {
        size_t nc = m->cap ? m->cap * 2 : 4;
        multi_file *nf = etw_calloc(&m->alloc, nc, sizeof *nf);
        if (!nf) {
            etw_reader_close(r);
            return ETW_E_NOMEM;
        }
        if (m->count) memcpy(nf, m->files, m->count * sizeof *nf);
        etw_free(&m->alloc, m->files);
        m->files = nf;
        m->cap = nc;
    }
    const char *nm = name ? name : "";
    size_t n = strlen(nm);
    char *copy = etw_alloc(&m->alloc, n + 1);
    if (!copy) {
        etw_reader_close(r);
        return ETW_E_NOMEM;
    }
    memcpy(copy, nm, n + 1);
    multi_file *f = &m->files[m->count++];
    memset(f, 0, sizeof *f);
    f->reader = r;
    f->name = copy;
    return ETW_OK;
}

/* ---- compressed inputs ---- */
/* Open a reader on a file (path) or bytes (data) whose first bytes are of
 * kind k. A file of another kind (text, an event log, an executable) is no
 * trace: ETW_E_NOT_ETL without a reader's diagnostics about its "buffers".
 * One of no known kind is tried quietly first, for the same reason. */
static etw_status open_kind(etw_multi *m, etw_file_kind k, const char *path, const void *data, size_t size,
                            etw_reader **r) {
    *r = NULL;
    if (k != ETW_KIND_ETL && k != ETW_KIND_UNKNOWN) return ETW_E_NOT_ETL;
    if (k == ETW_KIND_UNKNOWN) {
        etw_reader_options quiet = m->opt;
        quiet.on_diag = NULL;
        etw_reader *probe = NULL;
        int saved = errno;
        etw_status s = path ? etw_reader_open_file(&probe, path, &quiet)
                            : etw_reader_open_memory(&probe, data, size, &quiet);
        etw_reader_close(probe);
        if (s == ETW_E_NOT_ETL) return s;
        if (s != ETW_OK && s != ETW_E_NOMEM) return s; /* errno as the open left it */
        errno = saved;
    }
    return path ? etw_reader_open_file(r, path, &m->opt) : etw_reader_open_memory(r, data, size, &m->opt);
}


typedef struct unpack_ctx {
    etw_multi *m;
    const char *outer;
    size_t first;      /* m->count before this input */
} unpack_ctx;

static void warn(etw_multi *m, etw_status st, const char *msg) {
    if (!m->opt.on_diag) return;
    etw_diag d;
    memset(&d, 0, sizeof d);
    d.status = st;
    d.message = msg;
    m->opt.on_diag(m->opt.diag_ctx, &d);
}

static etw_status add_unpacked_one(void *ctx, const char *inner, uint8_t *data, size_t size) {
    unpack_ctx *u = ctx;
    etw_multi *m = u->m;
    if (m->count >= ETW_MULTI_MAX_FILES) {
        etw_free(&m->alloc, data);
        return ETW_E_LIMIT;
    }
    size_t no = strlen(u->outer), ni = inner ? strlen(inner) : 0;
    char *name = etw_alloc(&m->alloc, no + 1 + ni + 1);
    if (!name) {
        etw_free(&m->alloc, data);
        return ETW_E_NOMEM;
    }
    memcpy(name, u->outer, no);
    name[no] = 0;
    if (inner) {
        name[no] = ':';
        memcpy(name + no + 1, inner, ni + 1);
    }
    etw_reader *r = NULL;
    m->current = m->count;
    etw_status s = open_kind(m, etw_sniff(data, size), NULL, data, size, &r);
    if (s == ETW_OK) {
        s = etw_multi_add_reader(m, r, name);
        if (s == ETW_OK) m->files[m->count - 1].owned = data;
    }
    if (s != ETW_OK) etw_free(&m->alloc, data);
    if (s == ETW_E_NOT_ETL && inner) { /* an entry that is not a trace: said, skipped */
        char msg[600];
        snprintf(msg, sizeof msg, "entry %.400s: not an ETL trace, skipped", inner);
        warn(m, ETW_E_NOT_ETL, msg);
        s = ETW_OK;
    }
    etw_free(&m->alloc, name);
    return s;
}

static etw_status add_unpacked(etw_multi *m, const char *path, const void *mem, size_t size, const char *outer) {
    unpack_ctx u = {m, outer, m->count};
    etw_status s = etw_unpack(&m->alloc, path, mem, size, add_unpacked_one, &u);
    if (s == ETW_OK && m->count == u.first) s = ETW_E_NOT_ETL; /* only entries that are not traces */
    if (s != ETW_OK) { /* nothing of this input stays */
        while (m->count > u.first) {
            multi_file *f = &m->files[--m->count];
            etw_reader_close(f->reader);
            etw_free(&m->alloc, f->name);
            etw_free(&m->alloc, f->owned);
            memset(f, 0, sizeof *f);
        }
    }
    return s;
}

/* The kind of a regular file from its first bytes; ETW_KIND_UNKNOWN when it
 * is not a regular file or cannot be read (the reader then says why). */
static etw_file_kind sniff_path(const char *path) {
    struct stat st;
    if (stat(path, &st) != 0 || !S_ISREG(st.st_mode)) return ETW_KIND_UNKNOWN;
    FILE *f = fopen(path, "rb");
    if (!f) return ETW_KIND_UNKNOWN;
    unsigned char head[ETW_SNIFF_BYTES];
    size_t n = fread(head, 1, sizeof head, f);
    fclose(f);
    return etw_sniff(head, n);
}

etw_status etw_multi_add_memory(etw_multi *m, const void *data, size_t size, const char *name) {
    if (!m || !data || !name) return ETW_E_INVALID_ARG;
    if (m->started) return ETW_E_INVALID_ARG;
    if (m->count >= ETW_MULTI_MAX_FILES) return ETW_E_LIMIT;
    etw_file_kind k = etw_sniff(data, size);
    if (etw_file_kind_compressed(k)) return add_unpacked(m, NULL, data, size, name);
    etw_reader *r;
    m->current = m->count;
    etw_status s = open_kind(m, k, NULL, data, size, &r);
    if (s != ETW_OK) return s;
    return etw_multi_add_reader(m, r, name);
}

etw_status etw_multi_add_file(etw_multi *m, const char *path) {
    if (!m || !path) return ETW_E_INVALID_ARG;
    if (m->started) return ETW_E_INVALID_ARG;
    if (m->count >= ETW_MULTI_MAX_FILES) return ETW_E_LIMIT;
    int saved = errno;
    etw_file_kind k = sniff_path(path);
    errno = saved;
    if (etw_file_kind_compressed(k)) return add_unpacked(m, path, NULL, 0, path);
    etw_reader *r;
    m->current = m->count; /* diagnostics while opening name this file */
    etw_status s = open_kind(m, k, path, NULL, 0, &r);
    if (s != ETW_OK) return s;
    return etw_multi_add_reader(m, r, path);
}

size_t etw_multi_count(const etw_multi *m) { return m ? m->count : 0; }

etw_reader *etw_multi_reader(const etw_multi *m, size_t i) {
    return m && i < m->count ? m->files[i].reader : NULL;
}

const char *etw_multi_name(const etw_multi *m, size_t i) {
    return m && i < m->count ? m->files[i].name : NULL;
}

size_t etw_multi_current(const etw_multi *m) { return m ? m->current : 0; }

static void fill(etw_multi *m, size_t i) {
    multi_file *f = &m->files[i];
    if (f->has_head || f->done) return;
    m->current = i;
    if (etw_reader_next(f->reader, &f->head) == ETW_OK) f->has_head = 1;
    else f->done = 1;
}

etw_status etw_multi_next(etw_multi *m, etw_event *ev, size_t *file) {
    if (!m || !ev) return ETW_E_INVALID_ARG;
    const etw_event *e = NULL;
    etw_status s = etw_multi_next_ref(m, &e, file);
    if (s == ETW_OK) *ev = *e;
    return s;
}

etw_status etw_multi_next_ref(etw_multi *m, const etw_event **ev, size_t *file) {
    if (!m || !ev) return ETW_E_INVALID_ARG;
    *ev = NULL;
    m->started = 1;
    if (m->pending) {
        /* the event returned last borrowed its reader's buffer until now */
        m->files[m->current].has_head = 0;
        m->pending = 0;
    }
    if (m->count == 1 && !m->files[0].has_head) {
        /* one file (no reader is added once reading started): its next
         * event, read in place instead of through the head */
        multi_file *f = &m->files[0];
        m->current = 0;
        if (f->done || etw_reader_next_ref(f->reader, ev) != ETW_OK) {
            f->done = 1;
            *ev = NULL;
            return ETW_END;
        }
        if (file) *file = 0;
        return ETW_OK;
    }
    size_t best = m->count;
    if (m->opt.file_order) {
        for (size_t i = 0; i < m->count && best == m->count; i++) {
            fill(m, i);
            if (m->files[i].has_head) best = i;
        }
    } else {
        for (size_t i = 0; i < m->count; i++) {
            fill(m, i);
            if (m->files[i].has_head &&
                (best == m->count || m->files[i].head.timestamp < m->files[best].head.timestamp))
                best = i;
        }
    }
    if (best == m->count) return ETW_END;
    *ev = &m->files[best].head;
    m->current = best;
    m->pending = 1;
    if (file) *file = best;
    return ETW_OK;
}

etw_status etw_multi_rewind(etw_multi *m) {
    if (!m) return ETW_E_INVALID_ARG;
    for (size_t i = 0; i < m->count; i++) {
        etw_status s = etw_reader_rewind(m->files[i].reader);
        if (s != ETW_OK) return s;
        m->files[i].has_head = 0;
        m->files[i].done = 0;
    }
    m->started = 0;
    m->pending = 0;
    m->current = 0;
    return ETW_OK;
}

int etw_multi_file_order(const etw_multi *m) { return m && m->opt.file_order; }

void etw_multi_set_current(etw_multi *m, size_t i) {
    if (m && i < m->count) m->current = i;
}
