/* etw_jscan.c - reading back our own JSON (see etw_jscan.h). */
#include "etw_jscan.h"

#include <string.h>

static size_t skip_ws(const char *s, size_t n, size_t i) {
    while (i < n && (s[i] == ' ' || s[i] == '\t' || s[i] == '\n' || s[i] == '\r')) i++;
    return i;
}

static size_t string_end(const char *s, size_t n, size_t i) {
    /* s[i] == '"' */
    for (i++; i < n; i++) {
        if (s[i] == '\\') i++;
        else if (s[i] == '"') return i + 1;
    }
    return n;
}

size_t etw_jscan_value_end(const char *s, size_t n, size_t pos) {
    size_t i = skip_ws(s, n, pos);
    if (i >= n) return n;
    if (s[i] == '"') return string_end(s, n, i);
    if (s[i] == '{' || s[i] == '[') {
        /* nesting depth counted; strings skipped whole */
        size_t depth = 0;
        for (; i < n; i++) {
            char c = s[i];
            if (c == '"') {
                i = string_end(s, n, i) - 1;
            } else if (c == '{' || c == '[') {
                depth++;
            } else if (c == '}' || c == ']') {
                if (--depth == 0) return i + 1;
            }
        }
        return n;
    }
    /* number, true, false, null */
    while (i < n && s[i] != ',' && s[i] != '}' && s[i] != ']' && s[i] != ' ' && s[i] != '\n') i++;
    return i;
}

int etw_jscan_next_member(const char *s, size_t n, size_t *pos, etw_jmember *m) {
    size_t i = *pos;
    if (i == 0) {
        i = skip_ws(s, n, 0);
        if (i >= n || s[i] != '{') return 0;
        i++;
    }
    i = skip_ws(s, n, i);
    if (i < n && s[i] == ',') i = skip_ws(s, n, i + 1);
    if (i >= n || s[i] != '"') {
        *pos = n;
        return 0;
    }
    size_t ke = string_end(s, n, i);
    if (ke < i + 2) return 0;
    m->key = s + i + 1;
    m->key_len = ke - i - 2;
    i = skip_ws(s, n, ke);
    if (i >= n || s[i] != ':') {
        *pos = n;
        return 0;
    }
    size_t vs = skip_ws(s, n, i + 1);
    size_t ve = etw_jscan_value_end(s, n, vs);
    m->value = s + vs;
    m->value_len = ve - vs;
    *pos = ve;
    return 1;
}

static int hex4(const char *s, size_t n, size_t i, unsigned *v) {
    if (i + 4 > n) return 0;
    unsigned x = 0;
    for (size_t k = i; k < i + 4; k++) {
        char c = s[k];
        x <<= 4;
        if (c >= '0' && c <= '9') x |= (unsigned)(c - '0');
        else if (c >= 'a' && c <= 'f') x |= (unsigned)(c - 'a' + 10);
        else if (c >= 'A' && c <= 'F') x |= (unsigned)(c - 'A' + 10);
        else return 0;
    }
    *v = x;
    return 1;
}

static void put_utf8(etw_text *t, unsigned cp) {
    char b[4];
    size_t k;
    if (cp < 0x80) {
        b[0] = (char)cp;
        k = 1;
    } else if (cp < 0x800) {
        b[0] = (char)(0xC0 | cp >> 6);
        b[1] = (char)(0x80 | (cp & 0x3F));
        k = 2;
    } else if (cp < 0x10000) {
        b[0] = (char)(0xE0 | cp >> 12);
        b[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
        b[2] = (char)(0x80 | (cp & 0x3F));
        k = 3;
    } else {
        b[0] = (char)(0xF0 | cp >> 18);
        b[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
        b[2] = (char)(0x80 | ((cp >> 6) & 0x3F));
        b[3] = (char)(0x80 | (cp & 0x3F));
        k = 4;
    }
    etw_text_put(t, b, k);
}

void etw_jscan_unescape(etw_text *t, const char *s, size_t n) {
    size_t i = 0, end = n;
    if (n && s[0] == '"') i = 1;
    if (end > i && s[end - 1] == '"') end--;
    while (i < end) {
        size_t run = i;
        while (run < end && s[run] != '\\') run++;
        etw_text_put(t, s + i, run - i);
        i = run;
        if (i >= end) break;
        if (i + 1 >= end) break;
        char c = s[i + 1];
        i += 2;
        switch (c) {
        case 'n': etw_text_putc(t, '\n'); break;
        case 't': etw_text_putc(t, '\t'); break;
        case 'r': etw_text_putc(t, '\r'); break;
        case 'b': etw_text_putc(t, '\b'); break;
        case 'f': etw_text_putc(t, '\f'); break;
        case 'u': {
            unsigned cp;
            if (!hex4(s, end, i, &cp)) break;
            i += 4;
            if (cp >= 0xD800 && cp <= 0xDBFF && i + 6 <= end && s[i] == '\\' && s[i + 1] == 'u') {
                unsigned lo;
                if (hex4(s, end, i + 2, &lo) && lo >= 0xDC00 && lo <= 0xDFFF) {
                    cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
                    i += 6;
                }
            }
            if (cp >= 0xD800 && cp <= 0xDFFF) cp = 0xFFFD;
            put_utf8(t, cp);
            break;
        }
        default: etw_text_putc(t, c); break; /* \" \\ \/ */
        }
    }
}

int etw_jscan_key_is(const char *k, size_t kn, const char *name, size_t name_len) {
    /* our writer escapes only '"', '\\' and control characters in keys; a
     * key with an escape is compared unescaped */
    if (!memchr(k, '\\', kn)) return kn == name_len && !memcmp(k, name, kn);
    char buf[512];
    size_t o = 0;
    for (size_t i = 0; i < kn && o < sizeof buf; i++) {
        if (k[i] == '\\' && i + 1 < kn) {
            i++;
            buf[o++] = k[i] == 'n' ? '\n' : k[i] == 't' ? '\t' : k[i];
        } else {
            buf[o++] = k[i];
        }
    }
    return o == name_len && !memcmp(buf, name, o);
}
