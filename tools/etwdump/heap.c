/* heap.c - the process's heap, set up once, after the options are read and
 * before the inputs open (the options allocate little).
 *
 * etwdump's memory is mostly a few large, long-lived arrays (the profile's
 * address ranges and deferred method names, the reader's buffers, the
 * schema cache, the summary's tables): on net.4.5.2.x64.etl `--stats` about
 * 12 MB, each page of it touched for the first time once. Each such touch of
 * a 4 KiB page is a page fault, about 1.8 us of system time on the machines
 * the benchmarks ran on (3,300 faults: 6 ms, an eighth of the run). With the
 * heap in transparent huge pages one fault maps 2 MiB.
 *
 * On Linux with glibc, heap_setup():
 *   - serves allocations below 32 MiB from the heap (glibc's own dynamic
 *     mmap threshold ends there too, at DEFAULT_MMAP_THRESHOLD_MAX on 64-bit)
 *     and keeps freed memory up to 64 MiB instead of giving it back and
 *     faulting it in again;
 *   - grows the heap once by HEAP_RESERVE (address space: nothing is
 *     touched) and asks for transparent huge pages on its 2 MiB-aligned part
 *     (madvise MADV_HUGEPAGE; the system's setting still decides: with
 *     THP "never" nothing changes).
 * Memory beyond the reserve comes as before, in small pages. The first
 * touch of a huge page clears 2 MiB (about 0.1 ms): a run that only prints
 * its usage or version does not set this up. The library does no such
 * thing itself: a process's heap belongs to the program. */
#if defined(__linux__) && !defined(_DEFAULT_SOURCE)
#define _DEFAULT_SOURCE /* sbrk, madvise */
#endif

#include "etwdump.h"

#include <stdint.h>
#include <stdlib.h>

#if defined(__linux__) && defined(__GLIBC__)
#include <malloc.h>
#include <sys/mman.h>
#include <unistd.h>

/* Address space the heap grows by at the start (M_TOP_PAD). */
#define HEAP_RESERVE ((size_t)32 << 20)
/* Allocations this large or larger are mapped on their own (M_MMAP_THRESHOLD). */
#define HEAP_MMAP_FROM (32 << 20)
/* Free memory at the heap's top kept rather than returned (M_TRIM_THRESHOLD). */
#define HEAP_KEEP_FREE (64 << 20)
/* A transparent huge page on x86-64 and arm64 with 4 KiB pages. */
#define HUGE_PAGE ((uintptr_t)2 << 20)
/* The spacer block is at least this large: larger than the initial heap's
 * free top (128 KiB), so that malloc grows the heap for it. */
#define HEAP_SPACER_MIN ((uintptr_t)256 << 10)
/* From the end of a block's usable bytes to the end of the next block's
 * header, at most (glibc: that header is two words and starts one word
 * before the usable bytes end). */
#define HEAP_CHUNK_HEADER (2 * sizeof(size_t))
/* The spacer's request stops this short of the boundary, so that its header
 * rounding and the free top's header after it stay below the boundary. */
#define HEAP_SPACER_SLACK 64u

void heap_setup(void) {
    if (!mallopt(M_MMAP_THRESHOLD, HEAP_MMAP_FROM) || !mallopt(M_TRIM_THRESHOLD, HEAP_KEEP_FREE) ||
        !mallopt(M_TOP_PAD, (int)HEAP_RESERVE))
        return;
#ifdef MADV_HUGEPAGE
    /* A small block is carved from the free top (the options freed little):
     * the top starts right after it. Where malloc took it from elsewhere,
     * the check after the spacer below finds out. */
    void *volatile first = malloc(1); /* volatile: kept, not optimized away */
    if (!first) return;
    uintptr_t top = (uintptr_t)first + malloc_usable_size(first) + HEAP_CHUNK_HEADER;
    uintptr_t from = (top + HEAP_SPACER_MIN + HUGE_PAGE - 1) & ~(HUGE_PAGE - 1);
    /* One block fills the heap from there up to a huge-page boundary, below
     * which the first allocations (the decoder's and the reader's tables)
     * would otherwise land in small pages. It is never freed nor touched:
     * malloc writes its header and the free top's, both below the boundary
     * (address space, no memory). Being larger than the initial heap, it
     * grows the heap by itself and the pad (M_TOP_PAD). Nothing above the
     * boundary may be touched before the advice: a 2 MiB range with a small
     * page in it stays in small pages. */
    void *volatile spacer = malloc((size_t)(from - top) - HEAP_SPACER_SLACK);
    if (!spacer) return;
    uintptr_t after = (uintptr_t)spacer + malloc_usable_size(spacer) + HEAP_CHUNK_HEADER;
    if (after > from) from += HUGE_PAGE; /* the top was further up: skip the range it reaches into */
    uintptr_t hi = (uintptr_t)sbrk(0);
    if (hi == (uintptr_t)-1 || hi <= from) return;
    uintptr_t to = hi & ~(HUGE_PAGE - 1);
    if (to > from) (void)madvise((void *)from, to - from, MADV_HUGEPAGE);
#endif
}
#else
void heap_setup(void) {}
#endif
