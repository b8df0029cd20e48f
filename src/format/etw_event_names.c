/* etw_event_names.c - fallback names (docs/json-output.md, "provider" and
 * "event" rows): kernel records are "Windows Kernel" events named
 * Group/Opcode(N); other events without a schema are EventID(N) under their
 * GUID. Schema sources replace these names when they know better. */
#include "etw_event_names.h"

#include <string.h>

#include "../etl/etw_record.h"
#include "../source/etw_kernel_source.h"

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

void etw_names_provider(etw_text *t, const etw_event *ev) {
    const etw_kernel_family *fam = ev->is_logfile_header ? NULL : family_of(ev);
    if (fam) {
        etw_text_json_utf8(t, fam->provider, strlen(fam->provider));
        return;
    }
    if (is_kernel_form(ev) || ev->is_logfile_header) {
        etw_text_puts(t, "\"" ETW_KERNEL_PROVIDER_NAME "\"");
        return;
    }
    char g[ETW_GUID_STRING_SIZE];
    etw_guid_format(&ev->provider, g);
    etw_text_putc(t, '"');
    etw_text_put(t, g, ETW_GUID_STRING_SIZE - 1);
    etw_text_putc(t, '"');
}

void etw_names_event(etw_text *t, const etw_event *ev) {
    const etw_kernel_family *fam = ev->is_logfile_header ? NULL : family_of(ev);
    if (fam) {
        char name[128];
        etw_kernel_event_name(fam, ev->opcode, name, sizeof name);
        etw_text_json_utf8(t, name, strlen(name));
        return;
    }
    etw_text_putc(t, '"');
    if (ev->is_logfile_header) {
        etw_text_puts(t, ETW_LOGFILE_EVENT_NAME);
    } else if (is_kernel_form(ev)) {
        const char *g = etw_kernel_group_name(ev->group, ev->opcode);
        if (g) {
            etw_text_puts(t, g);
        } else {
            etw_text_puts(t, "Group(");
            etw_text_u64(t, ev->group);
            etw_text_putc(t, ')');
        }
        etw_text_puts(t, "/Opcode(");
        etw_text_u64(t, ev->opcode);
        etw_text_putc(t, ')');
    } else if (ev->form == ETW_FORM_FULL || ev->form == ETW_FORM_INSTANCE) {
        etw_text_puts(t, "Opcode(");
        etw_text_u64(t, ev->opcode);
        etw_text_putc(t, ')');
    } else if (ev->form == ETW_FORM_MESSAGE) {
        etw_text_puts(t, "Message(");
        etw_text_u64(t, ev->message_number);
        etw_text_putc(t, ')');
    } else {
        etw_text_puts(t, "EventID(");
        etw_text_u64(t, ev->id);
        etw_text_putc(t, ')');
    }
    etw_text_putc(t, '"');
}
