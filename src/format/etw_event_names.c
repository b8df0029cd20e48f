/* etw_event_names.c - the names of an event (docs/json-output.md,
 * "provider" and "event" rows), in one place for every output: the JSON
 * writer and any list of providers or events a program prints. Schema
 * sources name the events they know (etw_schema); this file adds the
 * fallbacks for events without a schema: classic records of a known kernel
 * class family take the family's names; other kernel records are "Windows
 * Kernel" events named Group/Opcode(N); other events are EventID(N) (or
 * Opcode(N), Message(N)) under their GUID. */
#include "etw_event_names.h"

#include <stdint.h>
#include <string.h>

#include "../etl/etw_record.h"
#include "../source/etw_kernel_source.h"
#include "etwdecode/etw_decoder.h"

static int is_kernel_form(const etw_event *ev) {
    return ev->form == ETW_FORM_SYSTEM || ev->form == ETW_FORM_COMPACT ||
           ev->form == ETW_FORM_PERFINFO;
}

/* The kernel class family of a classic or kernel record, or NULL. */
static const etw_kernel_family *family_of(const etw_event *ev) {
    if (ev->form == ETW_FORM_EVENT_HEADER && !(ev->flags & ETW_EVENT_FLAG_CLASSIC_HEADER)) return NULL;
    if (ev->form == ETW_FORM_MESSAGE || ev->form == ETW_FORM_ERROR) return NULL;
    return etw_kernel_family_find(&ev->provider);
}

/* A bounded writer: what does not fit is cut (the names here are short). */
typedef struct name_buf {
    char *p;
    size_t len, cap;
} name_buf;

static void nb_puts(name_buf *b, const char *s) {
    while (*s && b->len + 1 < b->cap) b->p[b->len++] = *s++;
}

static void nb_u32(name_buf *b, uint32_t v) {
    char d[10];
    int n = 0;
    do d[n++] = (char)('0' + v % 10), v /= 10; while (v);
    while (n && b->len + 1 < b->cap) b->p[b->len++] = d[--n];
}

/* prefix(N) */
static void nb_call(name_buf *b, const char *prefix, uint32_t v) {
    nb_puts(b, prefix);
    nb_puts(b, "(");
    nb_u32(b, v);
    nb_puts(b, ")");
}

static size_t fallback_provider(const etw_event *ev, char *buf, size_t cap) {
    name_buf b = {buf, 0, cap};
    const etw_kernel_family *fam = ev->is_logfile_header ? NULL : family_of(ev);
    if (fam) {
        nb_puts(&b, fam->provider);
    } else if (is_kernel_form(ev) || ev->is_logfile_header) {
        nb_puts(&b, ETW_KERNEL_PROVIDER_NAME);
    } else {
        char g[ETW_GUID_STRING_SIZE];
        etw_guid_format(&ev->provider, g);
        nb_puts(&b, g);
    }
    return b.len;
}

static size_t fallback_event(const etw_event *ev, char *buf, size_t cap) {
    name_buf b = {buf, 0, cap};
    const etw_kernel_family *fam = ev->is_logfile_header ? NULL : family_of(ev);
    if (fam) {
        etw_kernel_event_name(fam, ev->opcode, buf, cap);
        return strlen(buf);
    }
    if (ev->is_logfile_header) {
        nb_puts(&b, ETW_LOGFILE_EVENT_NAME);
    } else if (is_kernel_form(ev)) {
        const char *g = etw_kernel_group_name(ev->group, ev->opcode);
        if (g) nb_puts(&b, g);
        else nb_call(&b, "Group", ev->group);
        nb_call(&b, "/Opcode", ev->opcode);
    } else if (ev->form == ETW_FORM_FULL || ev->form == ETW_FORM_INSTANCE) {
        nb_call(&b, "Opcode", ev->opcode);
    } else if (ev->form == ETW_FORM_MESSAGE) {
        nb_call(&b, "Message", ev->message_number);
    } else {
        nb_call(&b, "EventID", ev->id);
    }
    return b.len;
}

void etw_names_provider(etw_text *t, const etw_event *ev) {
    char buf[ETW_EVENT_NAMES_BUF];
    size_t n = fallback_provider(ev, buf, sizeof buf);
    etw_text_json_utf8(t, buf, n);
}

void etw_names_event(etw_text *t, const etw_event *ev) {
    char buf[ETW_EVENT_NAMES_BUF];
    size_t n = fallback_event(ev, buf, sizeof buf);
    etw_text_json_utf8(t, buf, n);
}

void etw_event_names_get(const etw_event *ev, const etw_schema *s, etw_event_names *out) {
    if (!out) return;
    out->provider = out->event = "";
    out->provider_len = out->event_len = 0;
    if (!ev) return;
    if (etw_decoder_provider_name(ev, s, &out->provider, &out->provider_len) != ETW_OK) {
        out->provider_len = fallback_provider(ev, out->provider_buf, sizeof out->provider_buf);
        out->provider = out->provider_buf;
    }
    if (s && s->event_name && !ev->is_logfile_header) {
        out->event = s->event_name;
        out->event_len = strlen(s->event_name);
    } else {
        out->event_len = fallback_event(ev, out->event_buf, sizeof out->event_buf);
        out->event = out->event_buf;
    }
}
