/* etw_fields_values.c - etw_fields_json_values (etw_json_spans.h): the
 * "fields" object as etw_fields_json_spans writes it, without the keys of
 * the top-level members nor NAME_drive members - for CSV, whose cells need
 * only the values (its columns come from the schema's names). A copy of
 * that walk and of its two helpers, in a file of its own: the JSON form's
 * code (etw_fields_json.c) is compiled as it was. */
#include <stdio.h>
#include <string.h>

#include "etwdecode/etw_decoder.h"
#include "format/etw_fields_json.h"
#include "format/etw_json_spans.h"

/* A member name and its colon (after a comma when comma is set). Names are
 * the same for every event of a schema and nearly always plain ASCII: those
 * are copied in one go; others go through the escaping writer. */
static void put_key(etw_text *t, const char *name, int comma) {
    /* 1 for the NUL and every byte that is not plain printable ASCII or
     * needs an escape */
    static const uint8_t stop[256] = {
        1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
        0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
        0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0,
        0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1,
        1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
        1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
        1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
        1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
    };
    const unsigned char *p = (const unsigned char *)name;
    size_t n = 0;
    while (!stop[p[n]]) n++;
    if (p[n] != 0) {
        if (comma) etw_text_putc(t, ',');
        etw_text_json_utf8(t, name, n + strlen(name + n));
        etw_text_putc(t, ':');
        return;
    }
    char *o = etw_text_reserve(t, n + 4);
    if (!o) return;
    if (comma) *o++ = ',';
    *o++ = '"';
    memcpy(o, name, n);
    o[n] = '"';
    o[n + 1] = ':';
    t->len += n + 3 + (comma != 0);
}

/* The 64-bit integer just written from t->data[from] as a string when its
 * magnitude is above 2^53 (other forms of the value, such as a mapped name
 * or a time, are left alone: they are not all digits). */
static void big_int_as_string(etw_text *t, size_t from) {
    size_t n = t->len - from;
    if (n < 16 || n > 21 || etw_text_status(t) != ETW_OK) return;
    const char *v = t->data + from;
    size_t neg = v[0] == '-', digits = n - neg;
    for (size_t i = neg; i < n; i++)
        if (v[i] < '0' || v[i] > '9') return;
    if (digits < 16 || (digits == 16 && memcmp(v + neg, "9007199254740992", 16) <= 0)) return;
    if (!etw_text_reserve(t, 2)) return;
    memmove(t->data + from + 1, t->data + from, n);
    t->data[from] = '"';
    t->data[from + n + 1] = '"';
    t->len += 2;
}

etw_status etw_fields_json_values(etw_text *t, const etw_schema *s, const etw_event *ev, uint64_t *refs,
                                  size_t refs_len, uint32_t *trailing, etw_json_spans *sp, unsigned flags) {
    etw_decode_cursor c;
    etw_field_span *cur = NULL; /* the top-level member being written */
    etw_value v;
    /* per open container: 1 = array, and whether a member was written */
    uint8_t is_array[ETW_DECODE_MAX_DEPTH + 2];
    uint8_t has_member[ETW_DECODE_MAX_DEPTH + 2];
    unsigned top = 0;
    etw_status st;

    if (!t) return ETW_E_INVALID_ARG;
    etw_text_putc(t, '{');
    if (!s) {
        etw_text_putc(t, '}');
        return etw_text_status(t);
    }
    st = etw_decode_begin(&c, s, ev, refs, refs_len);
    if (st != ETW_OK) {
        etw_text_putc(t, '}');
        return st;
    }
    is_array[0] = 0;
    has_member[0] = 0;
    if (sp) {
        sp->n = 0;
        sp->complete = 1;
    }
    while (etw_decode_next(&c, &v) == ETW_OK) {
        if (v.kind == ETW_VALUE_STRUCT_END || v.kind == ETW_VALUE_ARRAY_END) {
            if (top == 0) continue; /* cannot happen: markers pair */
            etw_text_putc(t, is_array[top] ? ']' : '}');
            top--;
            if (top == 0 && cur) cur->val_len = t->len - cur->val_off;
            continue;
        }
        if (top == 0 && sp) {
            cur = NULL;
            if (sp->n < sp->cap) {
                cur = &sp->fields[sp->n++];
                cur->name = v.name ? v.name : "";
                cur->key_off = t->len + (has_member[0] != 0);
            } else {
                sp->complete = 0;
            }
        }
        if (top == 0 || is_array[top]) { /* a value at the top has no key */
            if (has_member[top]) etw_text_putc(t, ',');
        } else {
            put_key(t, v.name ? v.name : "", has_member[top]);
        }
        has_member[top] = 1;
        if (top == 0 && cur) {
            cur->key_len = 0;
            cur->val_off = t->len;
        }
        if (v.kind == ETW_VALUE_STRUCT_BEGIN || v.kind == ETW_VALUE_ARRAY_BEGIN) {
            int arr = v.kind == ETW_VALUE_ARRAY_BEGIN;
            if (top + 1 >= sizeof is_array) { /* cannot happen: depth is bounded */
                etw_text_put(t, arr ? "[]" : "{}", 2);
                if (top == 0 && cur) cur->val_len = 2;
                continue;
            }
            etw_text_putc(t, arr ? '[' : '{');
            top++;
            is_array[top] = (uint8_t)arr;
            has_member[top] = 0;
            continue;
        }
        size_t vstart = t->len;
        etw_value_json(t, &v);
        if ((flags & ETW_FIELDS_INT64_AS_STRING) && (v.in_type == ETW_INTYPE_INT64 || v.in_type == ETW_INTYPE_UINT64))
            big_int_as_string(t, vstart); /* only 64-bit integers reach 2^53 (doubles stay numbers) */
        if (top == 0 && cur) cur->val_len = t->len - cur->val_off;
    }
    while (top > 0) {
        etw_text_putc(t, is_array[top] ? ']' : '}');
        top--;
        if (top == 0 && cur) cur->val_len = t->len - cur->val_off;
    }
    if (trailing) *trailing = etw_decode_remaining(&c);
    etw_text_putc(t, '}');
    return etw_text_status(t);
}

