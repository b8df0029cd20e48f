/* etw_tstate.c - process names and volume mappings learned from the trace
 * (see etw_tstate.h). */
#include "etw_tstate.h"

#include <string.h>

#include "../common/etw_alloc.h"

typedef struct proc_slot {
    uint32_t pid; /* ETW_NO_ID: empty */
    uint8_t len;
    uint8_t ended;
    char name[ETW_TSTATE_NAME_MAX + 1]; /* 64-byte slots */
} proc_slot;

typedef struct volume {
    uint8_t nt_len, dos_len;
    char nt[ETW_TSTATE_NT_MAX];
    char dos[ETW_TSTATE_DOS_MAX];
} volume;

struct etw_tstate {
    etw_allocator alloc;
    proc_slot *procs; /* SETS x WAYS, allocated on the first process */
    uint8_t *victim;  /* per set: the way replaced next when the set is full */
    volume vols[ETW_TSTATE_VOLUMES];
    uint32_t nvols;
};

#define NO_PID 0xFFFFFFFFu

etw_status etw_tstate_new(etw_tstate **out, const etw_allocator *alloc) {
    if (!out) return ETW_E_INVALID_ARG;
    etw_allocator a = etw_allocator_resolve(alloc);
    etw_tstate *t = etw_calloc(&a, 1, sizeof *t);
    if (!t) return ETW_E_NOMEM;
    t->alloc = a;
    *out = t;
    return ETW_OK;
}

void etw_tstate_free(etw_tstate *t) {
    if (!t) return;
    etw_allocator a = t->alloc;
    etw_free(&a, t->procs);
    etw_free(&a, t->victim);
    etw_free(&a, t);
}

size_t etw_tstate_bytes(const etw_tstate *t) {
    if (!t) return 0;
    size_t n = t->nvols ? sizeof t->vols : 0;
    if (t->procs) n += (size_t)ETW_TSTATE_PROC_SETS * ETW_TSTATE_PROC_WAYS * sizeof(proc_slot) + ETW_TSTATE_PROC_SETS;
    return n;
}

static uint32_t set_of(uint32_t pid) {
    /* process ids are multiples of 4 on Windows */
    return (uint32_t)(((uint64_t)(pid >> 2) * 0x9E3779B1u) & 0xFFFFFFFFu) >> (32 - 10);
}

_Static_assert(ETW_TSTATE_PROC_SETS == 1024, "set_of takes 10 bits");
_Static_assert(ETW_TSTATE_NAME_MAX < 256, "lengths are bytes");
_Static_assert(ETW_TSTATE_NT_MAX < 256 && ETW_TSTATE_DOS_MAX < 256, "lengths are bytes");

/* n cut to at most max bytes, at a UTF-8 character boundary. */
static size_t utf8_cut(const char *s, size_t n, size_t max) {
    if (n <= max) return n;
    n = max;
    while (n && ((unsigned char)s[n] & 0xC0) == 0x80) n--;
    return n;
}

static proc_slot *find(const etw_tstate *t, uint32_t pid) {
    if (!t->procs) return NULL;
    proc_slot *set = &t->procs[set_of(pid) * ETW_TSTATE_PROC_WAYS];
    for (uint32_t w = 0; w < ETW_TSTATE_PROC_WAYS; w++)
        if (set[w].pid == pid) return &set[w];
    return NULL;
}

void etw_tstate_process_set(etw_tstate *t, uint32_t pid, const char *name, size_t len) {
    if (!t || pid == NO_PID || !name || !len) return;
    if (!t->procs) {
        size_t n = (size_t)ETW_TSTATE_PROC_SETS * ETW_TSTATE_PROC_WAYS;
        t->procs = etw_alloc(&t->alloc, n * sizeof *t->procs);
        t->victim = etw_calloc(&t->alloc, ETW_TSTATE_PROC_SETS, 1);
        if (!t->procs || !t->victim) {
            etw_free(&t->alloc, t->procs);
            etw_free(&t->alloc, t->victim);
            t->procs = NULL;
            t->victim = NULL;
            return; /* no memory: no names */
        }
        for (size_t i = 0; i < n; i++) t->procs[i].pid = NO_PID;
    }
    uint32_t si = set_of(pid);
    proc_slot *set = &t->procs[si * ETW_TSTATE_PROC_WAYS], *e = NULL;
    for (uint32_t w = 0; w < ETW_TSTATE_PROC_WAYS && !e; w++)
        if (set[w].pid == pid) e = &set[w];
    for (uint32_t w = 0; w < ETW_TSTATE_PROC_WAYS && !e; w++)
        if (set[w].pid == NO_PID) e = &set[w];
    if (!e) { /* the set is full: replace its ways in turn (the oldest entry) */
        uint32_t w = t->victim[si];
        t->victim[si] = (uint8_t)((w + 1) % ETW_TSTATE_PROC_WAYS);
        e = &set[w];
    }
    len = utf8_cut(name, len, ETW_TSTATE_NAME_MAX);
    e->pid = pid;
    e->ended = 0;
    e->len = (uint8_t)len;
    memcpy(e->name, name, len);
}

void etw_tstate_process_end(etw_tstate *t, uint32_t pid) {
    proc_slot *e = t ? find(t, pid) : NULL;
    if (e) e->ended = 1;
}

int etw_tstate_process(const etw_tstate *t, uint32_t pid, int ended_too, const char **name, size_t *len) {
    const proc_slot *e = t && pid != NO_PID ? find(t, pid) : NULL;
    if (!e || (e->ended && !ended_too)) return 0;
    *name = e->name;
    *len = e->len;
    return 1;
}

/* ---- volumes --------------------------------------------------------------- */

static int lower(int c) { return c >= 'A' && c <= 'Z' ? c + 32 : c; }

static int prefix_ci(const char *s, size_t n, const char *p, size_t pn) {
    if (pn > n) return 0;
    for (size_t i = 0; i < pn; i++)
        if (lower((unsigned char)s[i]) != lower((unsigned char)p[i])) return 0;
    return 1;
}

void etw_tstate_volume_set(etw_tstate *t, const char *nt, size_t nt_len, const char *dos, size_t dos_len) {
    if (!t || !nt_len || nt_len > ETW_TSTATE_NT_MAX || dos_len > ETW_TSTATE_DOS_MAX) return;
    /* only drive letters ("C:\", "C:\Windows\"): not "\\" (UNC) or "\??\" */
    if (dos_len < 2 || dos[1] != ':' || lower((unsigned char)dos[0]) < 'a' || lower((unsigned char)dos[0]) > 'z')
        return;
    volume *v = NULL;
    for (uint32_t i = 0; i < t->nvols && !v; i++)
        if (t->vols[i].nt_len == nt_len && prefix_ci(t->vols[i].nt, nt_len, nt, nt_len)) v = &t->vols[i];
    if (!v) {
        if (t->nvols == ETW_TSTATE_VOLUMES) return;
        v = &t->vols[t->nvols++];
    }
    v->nt_len = (uint8_t)nt_len;
    memcpy(v->nt, nt, nt_len);
    v->dos_len = (uint8_t)dos_len;
    memcpy(v->dos, dos, dos_len);
}

int etw_tstate_has_volumes(const etw_tstate *t) { return t && t->nvols; }

int etw_tstate_drive_path(const etw_tstate *t, const char *path, size_t len, const char **dos, size_t *dos_len,
                          size_t *nt_len) {
    if (!t || !path) return 0;
    const volume *best = NULL;
    for (uint32_t i = 0; i < t->nvols; i++) {
        const volume *v = &t->vols[i];
        if ((best && v->nt_len <= best->nt_len) || !prefix_ci(path, len, v->nt, v->nt_len)) continue;
        /* "\Device\HarddiskVolume2" is no prefix of "...Volume20\x" */
        if (v->nt[v->nt_len - 1] != '\\' && len > v->nt_len && path[v->nt_len] != '\\') continue;
        best = v;
    }
    if (!best) return 0;
    *dos = best->dos;
    *dos_len = best->dos_len;
    *nt_len = best->nt_len;
    return 1;
}
