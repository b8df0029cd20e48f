/* etw_glob.h - shell-style wildcard match on names: '*' any run of bytes
 * ('/' included), '?' one byte, everything else itself, ASCII letters
 * compared without case. Time O(len(pattern) * len(text)) at worst (one
 * backtrack point), no recursion, no allocation. */
#ifndef ETW_GLOB_H
#define ETW_GLOB_H

#include <stddef.h>

/* 1 when text[0..tn) matches pattern[0..pn). */
int etw_glob_match(const char *pattern, size_t pn, const char *text, size_t tn);

/* 1 when the pattern has a wildcard. */
int etw_glob_has_wildcard(const char *pattern, size_t pn);

#endif
