/* etw_symbolize.h - what names frames: images per process over time
 * (kernel Image events, kernel addresses against pid 0's drivers), their
 * identities (KernelTraceControl ImageID, DbgID_RSDS), .NET JIT methods
 * (MethodLoad/Unload/DCStart/DCEnd Verbose), process names; and the pass
 * at the end of the trace that resolves every frame against them. */
#ifndef ETW_SYMBOLIZE_H
#define ETW_SYMBOLIZE_H

#include <stddef.h>
#include <stdint.h>

#include "etwdecode/etw_event.h"
#include "etwdecode/etw_schema.h"
#include "etwdecode/etw_status.h"
#include "profile/etw_stacktree.h"

/* A range of addresses of a process over an interval of raw time: an image
 * or a JIT method. */
typedef struct etw_range {
    uint64_t base, size;
    int64_t start, end;   /* raw timestamps; INT64_MIN / INT64_MAX: open */
    uint32_t pid;
    uint32_t name;        /* string id: the image's file name, the method's full name */
    uint32_t tds;         /* images: TimeDateStamp (ImageID) */
    uint32_t defer;       /* methods: deferred name id + 1 (name 0 until a
                           * frame falls in it), 0: none */
} etw_range;

/* KernelTraceControl's identity of an image, by (pid, ImageBase). */
typedef struct etw_ident {
    uint64_t base;
    uint32_t pid;
    uint32_t tds;
    uint32_t image_size;
    uint32_t age;
    uint32_t pdb_name;    /* string id, 0: none */
    uint32_t orig_name;   /* string id, 0: none */
    etw_guid guid;
    uint8_t has_rsds;
} etw_ident;

/* A table of ranges with the open ones indexed by (pid, base). */
typedef struct etw_rangetab {
    etw_range *v;
    size_t n, cap;
    etw_idxmap open;      /* (pid, base) -> latest range still open */
    /* built at finish: order sorted by (pid, base, start), prefix max end */
    uint32_t *order;
    uint64_t *max_end;
} etw_rangetab;

/* A PDB wanted by the images frames fell in: one per identity (GUID, age,
 * file name), opened at most once, lazily. */
struct etw_pdb;
typedef struct etw_pdbent {
    etw_guid guid;
    uint32_t age;
    uint32_t name;        /* string id of the PdbFileName */
    struct etw_pdb *pdb;  /* NULL: not found or did not open */
} etw_pdbent;

/* get_fields' memo (etw_symbolize.c): per schema and field list, the
 * top-level properties of the fields in property order, so that they are
 * read in one flat walk (etw_decode_walk_fields) instead of by decoding
 * the payload; direct-mapped by schema id, a fixed number of slots. */
#define ETW_FIELDS_MEMO_SLOTS 32u
#define ETW_FIELDS_MEMO_MAX 6u /* fields of one call */
typedef struct etw_fields_memo {
    const void *schema; /* NULL: empty */
    uint32_t id;
    const char *first;  /* the call's first field name (its list) */
    uint32_t n;         /* fields that are top-level properties */
    uint16_t prop[ETW_FIELDS_MEMO_MAX]; /* their indices, increasing */
    uint8_t slot[ETW_FIELDS_MEMO_MAX];  /* the call's field of each */
} etw_fields_memo;

/* A CLR method event's fields read at fixed offsets: per schema, where
 * MethodStartAddress, MethodSize and MethodFlags are (every property before
 * them a fixed-size integer) and the fixed bytes before each of
 * MethodNamespace, MethodName, MethodSignature (NUL-terminated UTF-16, one
 * after the other with only fixed-size integers between); direct-mapped by
 * schema id. */
#define ETW_METHOD_MEMO_SLOTS 8u
typedef struct etw_method_memo {
    const void *schema; /* NULL: empty */
    uint32_t id;
    uint8_t ok;         /* 0: the layout is not that: decode the fields */
    uint8_t size[3];    /* start address, size, flags: bytes */
    uint32_t off[3];    /*   and offsets */
    uint32_t skip[3];   /* fixed bytes before each string */
} etw_method_memo;

/* A JIT method's name kept as the event gave it (its three strings'
 * bytes, copied: the reader's buffers are borrowed), made only when a
 * frame falls in the method (etw_symbols_finish). */
typedef struct etw_defer_name {
    const uint8_t *data; /* in a chunk of etw_symbols.raw */
    uint32_t size[3];   /* MethodNamespace, MethodName, MethodSignature */
    uint16_t in_type[3];
    uint8_t found[3];
} etw_defer_name;

/* Bytes of method names kept undecoded at most: past it the names are
 * made as their events come (as many interned strings as distinct names). */
#ifndef ETW_PROFILE_MAX_DEFERRED_NAMES
#define ETW_PROFILE_MAX_DEFERRED_NAMES ((size_t)64 << 20)
#endif

typedef struct etw_symbols {
    etw_fields_memo fields[ETW_FIELDS_MEMO_SLOTS];
    etw_method_memo method_memo[ETW_METHOD_MEMO_SLOTS];
    etw_defer_name *defers;
    size_t ndefers, defers_cap;
    struct etw_raw_chunk *raw; /* the deferred names' bytes: chunks that never move */
    size_t raw_len;       /* bytes in them */
    etw_rangetab images;
    etw_rangetab methods;
    etw_ident *idents;
    size_t nidents, idents_cap;
    etw_idxmap ident_idx;
    etw_pdbent *pdbs;
    size_t npdbs, pdbs_cap;
    etw_idxmap pdb_idx;
    char *buf;            /* scratch: UTF-8 of names */
    size_t buf_cap;
    size_t bytes;
} etw_symbols;

/* At most this many ranges are looked at to resolve one address (ranges
 * below it in address order that could still cover it). */
#define ETW_SYMBOLS_MAX_SCAN 4096u

struct etw_profile;

etw_status etw_symbols_init(struct etw_profile *p);
void etw_symbols_free(struct etw_profile *p);

/* An event that may name something: kernel Image and Process events,
 * KernelTraceControl ImageID events (ktc 1), CLR method events. */
etw_status etw_symbols_event(struct etw_profile *p, const etw_event *ev, const etw_schema *s, int ktc);

/* Microsoft-Windows-Kernel-Process ProcessStart (1) / ProcessRundown (15):
 * a process name when the kernel's Process events give none (decoded by
 * whatever schema the decoder has for them). */
etw_status etw_symbols_kernel_process(struct etw_profile *p, const etw_event *ev, const etw_schema *s);

/* Resolve every frame; count the sample frames resolved. */
etw_status etw_symbols_finish(struct etw_profile *p);

#endif
