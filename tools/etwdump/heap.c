/* heap.c - the process's heap, set up once before anything is allocated.
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
 * Memory beyond the reserve comes as before, in small pages. The library
 * does no such thing itself: a process's heap belongs to the program. */
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

void heap_setup(void) {
    if (!mallopt(M_MMAP_THRESHOLD, HEAP_MMAP_FROM) || !mallopt(M_TRIM_THRESHOLD, HEAP_KEEP_FREE) ||
        !mallopt(M_TOP_PAD, (int)HEAP_RESERVE))
        return;
#ifdef MADV_HUGEPAGE
    /* one allocation larger than the initial heap grows it, from the
     * current break, by the request and the pad */
    uintptr_t lo = (uintptr_t)sbrk(0);
    void *volatile probe = malloc((size_t)1 << 20); /* volatile: the pair is not optimized away */
    free(probe);
    uintptr_t hi = (uintptr_t)sbrk(0);
    if (lo == (uintptr_t)-1 || hi == (uintptr_t)-1 || hi <= lo) return;
    uintptr_t from = (lo + HUGE_PAGE - 1) & ~(HUGE_PAGE - 1), to = hi & ~(HUGE_PAGE - 1);
    if (to > from) (void)madvise((void *)from, to - from, MADV_HUGEPAGE);
#endif
}
#else
void heap_setup(void) {}
#endif
