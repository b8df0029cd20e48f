/* fuzz_json.h - independent checks of the JSON the library writes, shared
 * by the fuzz targets: UTF-8 validity and an iterative JSON validator
 * (structure, strings, escapes, numbers, literals, and no key repeated
 * within an object). Header only. */
#ifndef FUZZ_JSON_H
#define FUZZ_JSON_H

#include <stddef.h>
#include <string.h>

static inline int utf8_valid(const unsigned char *s, size_t n) {
    size_t i = 0;
    while (i < n) {
        unsigned c = s[i];
        size_t len;
        unsigned cp;
        if (c < 0x80) {
            i++;
            continue;
        }
        if ((c & 0xE0) == 0xC0) {
            len = 2;
            cp = c & 0x1F;
        } else if ((c & 0xF0) == 0xE0) {
            len = 3;
            cp = c & 0x0F;
        } else if ((c & 0xF8) == 0xF0) {
            len = 4;
            cp = c & 0x07;
        } else {
            return 0;
        }
        if (n - i < len) return 0;
        for (size_t k = 1; k < len; k++) {
            if ((s[i + k] & 0xC0) != 0x80) return 0;
            cp = cp << 6 | (s[i + k] & 0x3F);
        }
        if ((len == 2 && cp < 0x80) || (len == 3 && cp < 0x800) || (len == 4 && cp < 0x10000))
            return 0;
        if (cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return 0;
        i += len;
    }
    return 1;
}

static inline int is_hex(char c) {
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

/* A JSON string at *ps (the opening quote); advances past it. */
static inline int json_string(const char **ps, const char *end) {
    const char *s = *ps;
    if (s >= end || *s != '"') return 0;
    s++;
    while (s < end && *s != '"') {
        unsigned char c = (unsigned char)*s;
        if (c < 0x20) return 0;
        if (c == '\\') {
            s++;
            if (s >= end) return 0;
            if (*s == 'u') {
                if (end - s < 5) return 0;
                for (int k = 1; k <= 4; k++)
                    if (!is_hex(s[k])) return 0;
                s += 5;
                continue;
            }
            if (!strchr("\"\\/bfnrt", *s)) return 0;
        }
        s++;
    }
    if (s >= end) return 0;
    *ps = s + 1;
    return 1;
}

static inline int json_number(const char **ps, const char *end) {
    const char *s = *ps;
    if (s < end && *s == '-') s++;
    if (s >= end) return 0;
    if (*s == '0') {
        s++;
    } else if (*s >= '1' && *s <= '9') {
        while (s < end && *s >= '0' && *s <= '9') s++;
    } else {
        return 0;
    }
    if (s < end && *s == '.') {
        s++;
        if (s >= end || *s < '0' || *s > '9') return 0;
        while (s < end && *s >= '0' && *s <= '9') s++;
    }
    if (s < end && (*s == 'e' || *s == 'E')) {
        s++;
        if (s < end && (*s == '+' || *s == '-')) s++;
        if (s >= end || *s < '0' || *s > '9') return 0;
        while (s < end && *s >= '0' && *s <= '9') s++;
    }
    *ps = s;
    return 1;
}

/* Keys of the open objects, to catch a key repeated within one object
 * (docs/json-output.md: keys are unique). Objects with more than
 * FUZZ_JSON_DUP_KEYS keys are checked on their first ones only. */
#define FUZZ_JSON_DUP_KEYS 64
typedef struct json_key {
    const char *p;
    size_t n;
} json_key;

/* Iterative validator: an object or array stack and a state; with
 * unique_keys, a repeated key in one object makes the text invalid. */
static inline int json_valid_keys(const char *s, size_t n, int unique_keys) {
    const char *end = s + n;
    char stack[512];
    static json_key keys[512][FUZZ_JSON_DUP_KEYS];
    int nkeys[512];
    int top = 0;
    enum { VALUE, AFTER_VALUE, KEY_OR_CLOSE, KEY } st = VALUE;
    while (s < end) {
        char c = *s;
        switch (st) {
        case VALUE:
            if (c == '{') {
                if (top >= (int)sizeof stack) return 0;
                nkeys[top] = 0;
                stack[top++] = '{';
                s++;
                st = KEY_OR_CLOSE;
            } else if (c == '[') {
                if (top >= (int)sizeof stack) return 0;
                stack[top++] = '[';
                s++;
                if (s < end && *s == ']') {
                    top--;
                    s++;
                    st = AFTER_VALUE;
                }
            } else if (c == '"') {
                if (!json_string(&s, end)) return 0;
                st = AFTER_VALUE;
            } else if (c == 't' && end - s >= 4 && memcmp(s, "true", 4) == 0) {
                s += 4;
                st = AFTER_VALUE;
            } else if (c == 'f' && end - s >= 5 && memcmp(s, "false", 5) == 0) {
                s += 5;
                st = AFTER_VALUE;
            } else if (c == 'n' && end - s >= 4 && memcmp(s, "null", 4) == 0) {
                s += 4;
                st = AFTER_VALUE;
            } else {
                if (!json_number(&s, end)) return 0;
                st = AFTER_VALUE;
            }
            break;
        case KEY_OR_CLOSE:
            if (c == '}') {
                top--;
                s++;
                st = AFTER_VALUE;
                break;
            }
            /* fall through */
        case KEY: {
            const char *k0 = s;
            if (!json_string(&s, end)) return 0;
            size_t kn = (size_t)(s - k0);
            int *nk = &nkeys[top - 1];
            for (int i = 0; unique_keys && i < *nk; i++)
                if (keys[top - 1][i].n == kn && memcmp(keys[top - 1][i].p, k0, kn) == 0) return 0;
            if (*nk < FUZZ_JSON_DUP_KEYS) keys[top - 1][(*nk)++] = (json_key){k0, kn};
            if (s >= end || *s != ':') return 0;
            s++;
            st = VALUE;
            break;
        }
        case AFTER_VALUE:
            if (top == 0) return 0; /* text after the top value */
            if (c == ',') {
                s++;
                st = stack[top - 1] == '{' ? KEY : VALUE;
            } else if ((c == '}' && stack[top - 1] == '{') || (c == ']' && stack[top - 1] == '[')) {
                top--;
                s++;
            } else {
                return 0;
            }
            break;
        }
    }
    return top == 0 && st == AFTER_VALUE;
}

/* Well-formed JSON (keys may repeat: schemas built outside the cache can
 * repeat names). */
static inline int json_valid(const char *s, size_t n) { return json_valid_keys(s, n, 0); }

/* Well-formed JSON whose objects never repeat a key (what etwdump writes:
 * the cache makes names unique). */
static inline int json_valid_unique(const char *s, size_t n) { return json_valid_keys(s, n, 1); }

#endif
