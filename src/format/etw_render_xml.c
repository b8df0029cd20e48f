/* etw_render_xml.c - events as XML in the Windows event schema's shape
 * (etw_render.h): one <Event> a line, System then EventData. */
#include <string.h>

#include "etw_render_internal.h"

/* ---- XML -------------------------------------------------------------------- */

/* UTF-8 text (valid: it comes from our JSON) as XML character data or an
 * attribute value: markup characters escaped, tab/LF/CR as references (an
 * attribute keeps them), what XML 1.0 forbids as U+FFFD. */
static void xml_text(etw_text *t, const char *s, size_t n) {
    size_t run = 0;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        const char *rep = NULL;
        size_t skip = 1;
        if (c >= 0x20 && c != '&' && c != '<' && c != '>' && c != '"' && c != '\'' && c != 0xEF) continue;
        switch (c) {
        case '&': rep = "&amp;"; break;
        case '<': rep = "&lt;"; break;
        case '>': rep = "&gt;"; break;
        case '"': rep = "&quot;"; break;
        case '\'': rep = "&apos;"; break;
        case '\t': rep = "&#9;"; break;
        case '\n': rep = "&#10;"; break;
        case '\r': rep = "&#13;"; break;
        case 0xEF: /* U+FFFE, U+FFFF: EF BF BE, EF BF BF */
            if (i + 2 < n && (unsigned char)s[i + 1] == 0xBF && ((unsigned char)s[i + 2] & 0xFE) == 0xBE) {
                rep = "\xEF\xBF\xBD";
                skip = 3;
            }
            break;
        default: rep = "\xEF\xBF\xBD"; break; /* another control character */
        }
        if (!rep) continue;
        etw_text_put(t, s + run, i - run);
        etw_text_puts(t, rep);
        i += skip - 1;
        run = i + 1;
    }
    etw_text_put(t, s + run, n - run);
}

/* A JSON value as XML text: strings unescaped, null empty, the rest as
 * written. */
static void xml_value(etw_renderer *rd, etw_text *t, const char *v, size_t n) {
    if (!v || !n || (n == 4 && !memcmp(v, "null", 4))) return;
    if (v[0] != '"') {
        xml_text(t, v, n);
        return;
    }
    if (!memchr(v, '\\', n)) {
        xml_text(t, v + 1, n - 2);
        return;
    }
    etw_text *sc = &rd->scratch;
    etw_text_clear(sc);
    etw_jscan_unescape(sc, v, n);
    xml_text(t, sc->data ? sc->data : "", sc->len);
}

/* A JSON string holding a GUID as "{GUID}" in upper case. */
static void xml_guid(etw_text *t, const char *v, size_t n) {
    etw_text_putc(t, '{');
    for (size_t i = 1; i + 1 < n; i++) {
        char c = v[i];
        etw_text_putc(t, c >= 'a' && c <= 'f' ? (char)(c - 'a' + 'A') : c);
    }
    etw_text_putc(t, '}');
}

static void xml_element(etw_text *t, const char *name, const char *v, size_t n) {
    etw_text_putc(t, '<');
    etw_text_puts(t, name);
    etw_text_putc(t, '>');
    etw_text_put(t, v, n);
    etw_text_puts(t, "</");
    etw_text_puts(t, name);
    etw_text_putc(t, '>');
}

static void xml_data(etw_renderer *rd, etw_text *t, const char *key, size_t kn, const char *v, size_t vn) {
    etw_text_puts(t, "<Data Name=\"");
    xml_value(rd, t, key, kn);
    etw_text_puts(t, "\">");
    xml_value(rd, t, v, vn);
    etw_text_puts(t, "</Data>");
}

/* xml_data for a member of "fields" (key as written, quotes included),
 * when --fields wants it. */
static void xml_field(etw_renderer *rd, etw_text *t, const char *line, size_t key_off, size_t key_len,
                      size_t val_off, size_t val_len) {
    if (!etw_render_key_wanted(rd, line, key_off, key_len)) return;
    xml_data(rd, t, line + key_off, key_len, line + val_off, val_len);
}

void etw_render_xml_event(etw_renderer *rd, const etw_event *ev, const char *line) {
    etw_text *t = &rd->out;
    const etw_json_spans *sp = &rd->sp;
    (void)ev;
    etw_text_puts(t, "<Event xmlns=\"http://schemas.microsoft.com/win/2004/08/events/event\"><System>"
                     "<Provider Name=\"");
    xml_value(rd, t, SPAN(rd, line, COL_PROVIDER));
    etw_text_puts(t, "\" Guid=\"");
    xml_guid(t, SPAN(rd, line, COL_PROVIDER_GUID));
    etw_text_puts(t, "\"/>");
    xml_element(t, "EventID", SPAN(rd, line, COL_ID));
    xml_element(t, "Version", SPAN(rd, line, COL_VERSION));
    xml_element(t, "Level", SPAN(rd, line, COL_LEVEL));
    xml_element(t, "Task", SPAN(rd, line, COL_TASK));
    xml_element(t, "Opcode", SPAN(rd, line, COL_OPCODE));
    etw_text_puts(t, "<Keywords>");
    xml_value(rd, t, SPAN(rd, line, COL_KEYWORDS));
    etw_text_puts(t, "</Keywords><TimeCreated SystemTime=\"");
    xml_value(rd, t, SPAN(rd, line, COL_TIME));
    etw_text_puts(t, "\"/><Correlation");
    if (sp->len[COL_ACTIVITY]) {
        etw_text_puts(t, " ActivityID=\"");
        xml_guid(t, SPAN(rd, line, COL_ACTIVITY));
        etw_text_putc(t, '"');
    }
    if (sp->len[COL_RELATED]) {
        etw_text_puts(t, " RelatedActivityID=\"");
        xml_guid(t, SPAN(rd, line, COL_RELATED));
        etw_text_putc(t, '"');
    }
    etw_text_puts(t, "/><Execution");
    if (sp->len[COL_PID] && line[sp->off[COL_PID]] != '-') {
        etw_text_puts(t, " ProcessID=\"");
        etw_text_put(t, SPAN(rd, line, COL_PID));
        etw_text_putc(t, '"');
    }
    if (sp->len[COL_TID] && line[sp->off[COL_TID]] != '-') {
        etw_text_puts(t, " ThreadID=\"");
        etw_text_put(t, SPAN(rd, line, COL_TID));
        etw_text_putc(t, '"');
    }
    etw_text_puts(t, " ProcessorID=\"");
    etw_text_put(t, SPAN(rd, line, COL_CPU));
    etw_text_puts(t, "\"/><Channel/><Computer/></System><EventData>");
    if (sp->complete) {
        for (size_t i = 0; i < sp->n; i++) {
            const etw_field_span *f = &sp->fields[i];
            xml_field(rd, t, line, f->key_off, f->key_len, f->val_off, f->val_len);
            if (f->drive_len) xml_field(rd, t, line, f->drive_key_off, f->drive_key_len, f->drive_off, f->drive_len);
        }
    } else {
        size_t fp = 0;
        etw_jmember f;
        while (etw_jscan_next_member(line + sp->off[ETW_JK_FIELDS], sp->len[ETW_JK_FIELDS], &fp, &f)) {
            if (rd->opt.nfields && !etw_render_field_wanted(rd, &f)) continue;
            xml_data(rd, t, f.key - 1, f.key_len + 2, f.value, f.value_len);
        }
    }
    etw_text_puts(t, "</EventData>");
    if (sp->len[COL_MESSAGE]) {
        etw_text_puts(t, "<RenderingInfo Culture=\"\"><Message>");
        xml_value(rd, t, SPAN(rd, line, COL_MESSAGE));
        etw_text_puts(t, "</Message></RenderingInfo>");
    }
    etw_text_puts(t, "</Event>\n");
}
