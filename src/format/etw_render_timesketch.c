/* etw_render_timesketch.c - Timesketch/plaso JSON Lines of events
 * (etw_render.h): message, datetime, timestamp, timestamp_desc, the event's
 * keys and its payload fields as field_NAME. */
#include <string.h>

#include "etw_render_internal.h"

/* ---- Timesketch ------------------------------------------------------------ */

/* FILETIME of 1970-01-01T00:00:00Z */
#define UNIX_EPOCH_FT INT64_C(116444736000000000)

/* ,"field_KEY":VALUE for a member of "fields" (key as written, quotes
 * included): a struct or an array as a JSON string, the rest as written. */
static void timesketch_field(etw_renderer *rd, etw_text *t, const char *line, size_t key_off, size_t key_len,
                             size_t val_off, size_t val_len) {
    if (!etw_render_key_wanted(rd, line, key_off, key_len)) return;
    etw_text_puts(t, ",\"field_");
    etw_text_put(t, line + key_off + 1, key_len - 1);
    etw_text_putc(t, ':');
    const char *v = line + val_off;
    if (v[0] == '{' || v[0] == '[') etw_text_json_utf8(t, v, val_len);
    else etw_text_put(t, v, val_len);
}

void etw_render_timesketch_event(etw_renderer *rd, const etw_event *ev, const char *line) {
    etw_text *t = &rd->out;
    const etw_json_spans *sp = &rd->sp;
    etw_text_puts(t, "{\"message\":");
    if (sp->len[COL_MESSAGE]) {
        etw_text_put(t, line + sp->off[COL_MESSAGE], sp->len[COL_MESSAGE]);
    } else {
        /* PROVIDER/EVENT name=value ..., as the text format writes them */
        etw_text *m = &rd->summary;
        etw_text_clear(m);
        if (sp->len[COL_PROVIDER]) etw_render_text_name(m, SPAN(rd, line, COL_PROVIDER));
        etw_text_putc(m, '/');
        if (sp->len[COL_EVENT]) etw_render_text_name(m, SPAN(rd, line, COL_EVENT));
        if (sp->complete) {
            for (size_t i = 0; i < sp->n; i++) {
                const etw_field_span *f = &sp->fields[i];
                etw_text_putc(m, ' ');
                etw_render_text_value(m, line + f->key_off, f->key_len);
                etw_text_putc(m, '=');
                etw_render_text_value(m, line + f->val_off, f->val_len);
                if (f->drive_len) {
                    etw_text_putc(m, ' ');
                    etw_render_text_value(m, line + f->drive_key_off, f->drive_key_len);
                    etw_text_putc(m, '=');
                    etw_render_text_value(m, line + f->drive_off, f->drive_len);
                }
            }
        } else {
            size_t fp = 0;
            etw_jmember f;
            while (etw_jscan_next_member(line + sp->off[ETW_JK_FIELDS], sp->len[ETW_JK_FIELDS], &fp, &f)) {
                etw_text_putc(m, ' ');
                etw_render_text_value(m, f.key - 1, f.key_len + 2);
                etw_text_putc(m, '=');
                etw_render_text_value(m, f.value, f.value_len);
            }
        }
        etw_text_json_utf8(t, m->data ? m->data : "", m->len);
    }
    /* datetime: microseconds and an explicit offset, the form every ISO 8601
     * reader takes (the 7th fractional digit dropped) */
    etw_text_puts(t, ",\"datetime\":");
    size_t mark = t->len;
    etw_text_putc(t, '"');
    if (etw_text_filetime(t, ev->timestamp) == ETW_OK && t->len - mark >= 10) {
        t->len -= 2; /* the 7th digit and the Z */
        etw_text_puts(t, "+00:00\"");
        int64_t d = ev->timestamp - UNIX_EPOCH_FT; /* timestamp >= 0 here: no overflow */
        int64_t us = d >= 0 ? d / 10 : -((-d + 9) / 10);
        etw_text_puts(t, ",\"timestamp\":");
        etw_text_i64(t, us);
    } else {
        t->len = mark;
        etw_text_puts(t, "null,\"timestamp\":null");
    }
    etw_text_puts(t, ",\"timestamp_desc\":\"Event Time\"");
    for (int k = COL_FILE; k < NFIXED; k++) {
        if (k == COL_MESSAGE || !sp->len[k]) continue;
        etw_text_puts(t, ",\"");
        etw_text_puts(t, etw_render_fixed_names[k]);
        etw_text_puts(t, "\":");
        etw_text_put(t, line + sp->off[k], sp->len[k]);
    }
    if (sp->complete) {
        for (size_t i = 0; i < sp->n; i++) {
            const etw_field_span *f = &sp->fields[i];
            timesketch_field(rd, t, line, f->key_off, f->key_len, f->val_off, f->val_len);
            if (f->drive_len)
                timesketch_field(rd, t, line, f->drive_key_off, f->drive_key_len, f->drive_off, f->drive_len);
        }
    } else {
        size_t fp = 0;
        etw_jmember f;
        while (etw_jscan_next_member(line + sp->off[ETW_JK_FIELDS], sp->len[ETW_JK_FIELDS], &fp, &f)) {
            if (rd->opt.nfields && !etw_render_field_wanted(rd, &f)) continue;
            etw_text_puts(t, ",\"field_");
            etw_text_put(t, f.key, f.key_len);
            etw_text_puts(t, "\":");
            if (f.value[0] == '{' || f.value[0] == '[') etw_text_json_utf8(t, f.value, f.value_len);
            else etw_text_put(t, f.value, f.value_len);
        }
    }
    etw_text_puts(t, "}\n");
}
