/* etw_jscan.h - read back the JSON our own writer produced: find where a
 * value ends, walk the members of an object, unescape a string. The input
 * is trusted to be our writer's output, but every step is bounded by its
 * length, so malformed text can only give wrong spans, never a read out of
 * bounds or a loop. */
#ifndef ETW_JSCAN_H
#define ETW_JSCAN_H

#include <stddef.h>

#include "etw_text.h"

/* Index just past the JSON value that starts at s[pos] (whitespace before it
 * skipped); n when the text ends first. */
size_t etw_jscan_value_end(const char *s, size_t n, size_t pos);

/* One member of an object: the key as it is written (between the quotes,
 * still escaped) and the value's span. */
typedef struct etw_jmember {
    const char *key;
    size_t key_len;
    const char *value;
    size_t value_len;
} etw_jmember;

/* Walk an object s[0..n) ("{...}"). *pos starts at 0; each call fills *m and
 * returns 1, or returns 0 after the last member. */
int etw_jscan_next_member(const char *s, size_t n, size_t *pos, etw_jmember *m);

/* Append the characters of a JSON string value (quotes included in s) to t,
 * escapes decoded into UTF-8. */
void etw_jscan_unescape(etw_text *t, const char *s, size_t n);

/* 1 when the key text k[0..kn) (escaped form) equals the plain name. */
int etw_jscan_key_is(const char *k, size_t kn, const char *name, size_t name_len);

#endif
