/* etw_test.h - the tiny test harness every test program uses.
 *
 * A test file defines functions `static void test_x(void)` and a main() that
 * calls ETW_RUN(test_x) for each, then returns ETW_TEST_DONE(). Checks never
 * abort: a failed check prints file:line and the expression and counts one
 * failure; the summary line "N passed, N failed" is what CI reads.
 */
#ifndef ETW_TEST_H
#define ETW_TEST_H

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int etw_test_passed_;
static int etw_test_failed_;
static const char *etw_test_name_;

#define ETW_CHECK(cond)                                                        \
    do {                                                                       \
        if (cond) {                                                            \
            etw_test_passed_++;                                                \
        } else {                                                               \
            etw_test_failed_++;                                                \
            fprintf(stderr, "%s:%d: %s: check failed: %s\n", __FILE__,         \
                    __LINE__, etw_test_name_, #cond);                          \
        }                                                                      \
    } while (0)

#define ETW_CHECK_INT(a, b)                                                    \
    do {                                                                       \
        long long etw_a_ = (long long)(a), etw_b_ = (long long)(b);            \
        if (etw_a_ == etw_b_) {                                                \
            etw_test_passed_++;                                                \
        } else {                                                               \
            etw_test_failed_++;                                                \
            fprintf(stderr, "%s:%d: %s: %s == %lld, expected %s == %lld\n",    \
                    __FILE__, __LINE__, etw_test_name_, #a, etw_a_, #b,        \
                    etw_b_);                                                   \
        }                                                                      \
    } while (0)

#define ETW_CHECK_STR(a, b)                                                    \
    do {                                                                       \
        const char *etw_a_ = (a), *etw_b_ = (b);                               \
        if (etw_a_ && etw_b_ && strcmp(etw_a_, etw_b_) == 0) {                 \
            etw_test_passed_++;                                                \
        } else {                                                               \
            etw_test_failed_++;                                                \
            fprintf(stderr, "%s:%d: %s: %s is \"%s\", expected \"%s\"\n",      \
                    __FILE__, __LINE__, etw_test_name_, #a,                    \
                    etw_a_ ? etw_a_ : "(null)", etw_b_ ? etw_b_ : "(null)");   \
        }                                                                      \
    } while (0)

/* The whole file at path, with a NUL after it (malloc'd; *len its size
 * without the NUL); NULL when it cannot be opened. */
static inline char *etw_test_read_file(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    char *buf = NULL;
    size_t cap = 0, n = 0, got;
    do {
        if (n + 1 >= cap) {
            cap = cap ? cap * 2 : 1 << 20;
            char *nb = realloc(buf, cap);
            if (!nb) abort();
            buf = nb;
        }
        got = fread(buf + n, 1, cap - n - 1, f);
        n += got;
    } while (got > 0);
    fclose(f);
    buf[n] = 0;
    *len = n;
    return buf;
}

#define ETW_RUN(fn)                                                            \
    do {                                                                       \
        etw_test_name_ = #fn;                                                  \
        fn();                                                                  \
    } while (0)

#define ETW_TEST_DONE()                                                        \
    (printf("%d passed, %d failed\n", etw_test_passed_, etw_test_failed_),     \
     etw_test_failed_ ? 1 : 0)

/* Directory holding the project's test traces (set by CMake). */
#ifndef ETW_TEST_DATA_DIR
#define ETW_TEST_DATA_DIR "tests/data"
#endif

#endif
