/* etw_glob.c - wildcard matching for the filter (see etw_glob.h). */
#include "etw_glob.h"

static unsigned char fold(unsigned char c) { return c >= 'A' && c <= 'Z' ? (unsigned char)(c + 32) : c; }

int etw_glob_match(const char *pattern, size_t pn, const char *text, size_t tn) {
    size_t p = 0, t = 0;
    size_t star_p = (size_t)-1, star_t = 0; /* the last '*' seen, and where its run ends */
    while (t < tn) {
        if (p < pn && pattern[p] == '*') {
            star_p = p++;
            star_t = t;
        } else if (p < pn && (pattern[p] == '?' ||
                              fold((unsigned char)pattern[p]) == fold((unsigned char)text[t]))) {
            p++;
            t++;
        } else if (star_p != (size_t)-1) {
            /* let the last '*' take one more byte and retry after it */
            p = star_p + 1;
            t = ++star_t;
        } else {
            return 0;
        }
    }
    while (p < pn && pattern[p] == '*') p++;
    return p == pn;
}

int etw_glob_has_wildcard(const char *pattern, size_t pn) {
    for (size_t i = 0; i < pn; i++)
        if (pattern[i] == '*' || pattern[i] == '?') return 1;
    return 0;
}
