/* etw_profile_out.h - what the profile writers (etw_profile_folded.c,
 * etw_profile_speedscope.c, etw_profile_firefox.c) share: a finished
 * profile read once through its public accessors into
 *
 *   names    the label of every frame as the profiles show it (function
 *            level: "module!function" without the +0x offset of etw_frame_label,
 *            an image frame as "module+0xRVA", else "0xADDRESS"), interned:
 *            frames with the same label are one function of the profiles;
 *   mods     the module names, interned;
 *   stacks   the profile's stacks at the function level: a prefix tree
 *            (parent, node_name) in which stacks whose frames have the same
 *            labels are one node;
 *   samples  the profile's (pid, tid, stack) sums, summed again per
 *            function-level stack, sorted by pid, tid, first
 *            time (then the profile's order), cut into threads;
 *
 * and a buffered writer to the caller's FILE. Everything is allocated with
 * the profile's allocator and freed by etw_pout_free.
 */
#ifndef ETW_PROFILE_OUT_H
#define ETW_PROFILE_OUT_H

#include <stdio.h>

#include "etwdecode/etw_profile.h"
#include "format/etw_text.h"

#define ETW_POUT_NONE 0xFFFFFFFFu

/* Categories of a name (Firefox Profiler colours them). */
enum { ETW_POUT_CAT_OTHER = 0, ETW_POUT_CAT_KERNEL = 1, ETW_POUT_CAT_NATIVE = 2, ETW_POUT_CAT_JIT = 3 };

/* An interned string table. */
typedef struct etw_pout_strtab {
    etw_text pool;
    size_t *off;
    uint32_t *len;
    uint32_t n, cap;
    uint32_t *slots; /* id + 1; 0: empty */
    uint32_t nslots; /* power of 2, or 0 */
} etw_pout_strtab;

typedef struct etw_pout_sample {
    etw_profile_sample s;
    size_t index; /* in the profile: the order of first appearance */
} etw_pout_sample;

typedef struct etw_pout_thread {
    uint32_t pid, tid;
    size_t begin, end; /* its samples: samples[begin .. end) */
    double weight;
    uint64_t count;
} etw_pout_thread;

typedef struct etw_pout {
    const etw_profile *p;
    etw_allocator alloc;
    FILE *out;
    etw_text t;   /* output buffer */
    int io_error;

    etw_pout_strtab names;
    uint32_t *name_mod;     /* name id -> mods id, or ETW_POUT_NONE */
    uint8_t *name_cat;      /* name id -> ETW_POUT_CAT_* */
    etw_pout_strtab mods;

    uint32_t nstacks;       /* function-level node ids 1 .. nstacks */
    uint32_t *parent;       /* [nstacks + 1]: a node's parent (0: a root) */
    uint32_t *node_name;    /* [nstacks + 1]: its name id; [0] unused */
    uint32_t max_depth;

    etw_pout_sample *samples;
    size_t nsamples;
    etw_pout_thread *threads;
    size_t nthreads;
    double total_weight;
    uint64_t total_count;
    int64_t first_time, last_time; /* FILETIME over all samples (0 when none) */
} etw_pout;

/* Read p (finished) into o. */
etw_status etw_pout_init(etw_pout *o, const etw_profile *p, FILE *out);
void etw_pout_free(etw_pout *o);

/* The bytes of a string of a table. */
static inline const char *etw_pout_str(const etw_pout_strtab *t, uint32_t id, size_t *len) {
    *len = t->len[id];
    return t->pool.data + t->off[id];
}

/* Write what the buffer holds when it is large (end: all of it); ETW_E_IO
 * on a write error, ETW_E_NOMEM when the buffer failed. */
etw_status etw_pout_flush(etw_pout *o, int end);

/* A process's name as the profiles show it ("process" when unknown),
 * valid UTF-8 is not guaranteed (the JSON writers repair it). */
void etw_pout_process(const etw_pout *o, uint32_t pid, const char **name, size_t *len);

/* A process or thread id as the JSON output writes it: -1 for none
 * (ETW_NO_ID). */
static inline void etw_pout_id(etw_text *t, uint32_t v) {
    if (v == 0xFFFFFFFFu) etw_text_puts(t, "-1");
    else etw_text_u64(t, v);
}

/* A weight: a JSON number (0 for a non-finite one). */
void etw_pout_json_weight(etw_text *t, double w);

/* Growable u32 arrays of the writers. */
typedef struct etw_u32vec {
    uint32_t *v;
    size_t n, cap;
} etw_u32vec;
etw_status etw_u32vec_push(const etw_allocator *a, etw_u32vec *v, uint32_t x);
void etw_u32vec_free(const etw_allocator *a, etw_u32vec *v);

etw_status etw_profile_write_folded(etw_pout *o);
etw_status etw_profile_write_speedscope(etw_pout *o);
etw_status etw_profile_write_firefox(etw_pout *o);

#endif
