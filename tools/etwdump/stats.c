/* etwdump --stats: a summary of the trace instead of its events. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "etwdump.h"

/* --- --stats --------------------------------------------------------------- */

typedef struct provider_count {
    etw_guid guid;
    int kernel;
    unsigned long long n;
} provider_count;

typedef struct provider_table {
    provider_count *slots;
    size_t cap, used;
} provider_table;

static size_t guid_hash(const etw_guid *g, int kernel) {
    size_t h = g->data1 ^ ((size_t)g->data2 << 7) ^ ((size_t)g->data3 << 13) ^ (size_t)kernel;
    for (int i = 0; i < 8; i++) h = h * 31 + g->data4[i];
    return h;
}

static int table_add(provider_table *t, const etw_guid *g, int kernel) {
    if ((t->used + 1) * 2 > t->cap) {
        size_t nc = t->cap ? t->cap * 2 : 64;
        provider_count *ns = calloc(nc, sizeof *ns);
        if (!ns) return 0;
        for (size_t i = 0; i < t->cap; i++) {
            if (!t->slots[i].n) continue;
            size_t j = guid_hash(&t->slots[i].guid, t->slots[i].kernel) & (nc - 1);
            while (ns[j].n) j = (j + 1) & (nc - 1);
            ns[j] = t->slots[i];
        }
        free(t->slots);
        t->slots = ns;
        t->cap = nc;
    }
    size_t j = guid_hash(g, kernel) & (t->cap - 1);
    while (t->slots[j].n && !(t->slots[j].kernel == kernel && etw_guid_equal(&t->slots[j].guid, g)))
        j = (j + 1) & (t->cap - 1);
    if (!t->slots[j].n) {
        t->slots[j].guid = *g;
        t->slots[j].kernel = kernel;
        t->used++;
    }
    t->slots[j].n++;
    return 1;
}

static int by_count_desc(const void *a, const void *b) {
    const provider_count *x = a, *y = b;
    return x->n < y->n ? 1 : x->n > y->n ? -1 : 0;
}

static void print_time(FILE *out, int64_t ft) {
    char s[ETW_TIME_STRING_SIZE];
    (void)etw_json_time(ft, s); /* the JSON's form; "null" where it writes null */
    fputs(s, out);
}

static void print_utf16(FILE *out, const uint8_t *p, uint32_t n) {
    for (uint32_t i = 0; i + 1 < n; i += 2) {
        unsigned c = (unsigned)(p[i] | (p[i + 1] << 8));
        fputc(c < 0x80 && c >= 0x20 ? (int)c : '?', out);
    }
}

int run_stats(etw_reader *r, FILE *out, const options *o) {
    provider_table t = {0};
    etw_event ev;
    etw_status s;
    unsigned long long n = 0;
    while ((s = etw_reader_next(r, &ev)) == ETW_OK) {
        int kernel = ev.form == ETW_FORM_SYSTEM || ev.form == ETW_FORM_COMPACT ||
                     ev.form == ETW_FORM_PERFINFO || ev.is_logfile_header;
        if (!table_add(&t, &ev.provider, kernel)) {
            fprintf(stderr, "etwdump: out of memory\n");
            return EXIT_FATAL;
        }
        if (o->max_events && ++n >= o->max_events) break;
    }
    const etw_logfile_header *h = etw_reader_logfile(r);
    const etw_reader_stats *st = etw_reader_stats_get(r);
    fprintf(out, "file               %s\n", o->path);
    fprintf(out, "session            ");
    print_utf16(out, h->session_name, h->session_name_bytes);
    fprintf(out, "\nOS version         %u.%u build %u\n", h->version & 0xFF, (h->version >> 8) & 0xFF,
            h->provider_version);
    fprintf(out, "pointer size       %u\n", h->pointer_size);
    fprintf(out, "processors         %u\n", h->number_of_processors);
    fprintf(out, "clock              %s (%lld Hz)\n",
            h->reserved_flags == 1 ? "QPC" : h->reserved_flags == 2 ? "system time"
                                         : h->reserved_flags == 3 ? "CPU cycles" : "raw",
            (long long)h->perf_freq);
    fprintf(out, "time range         ");
    print_time(out, st->first_timestamp);
    fprintf(out, " .. ");
    print_time(out, st->last_timestamp);
    fprintf(out, "\nduration           %.3f s\n", ((double)st->last_timestamp - (double)st->first_timestamp) / 1e7);
    fprintf(out, "buffers            %llu (compressed %llu, flagged lost %llu, skipped %llu; %u lost per header)\n",
            (unsigned long long)st->buffers, (unsigned long long)st->buffers_compressed,
            (unsigned long long)st->buffers_lost_flag, (unsigned long long)st->buffers_skipped,
            h->buffers_lost);
    fprintf(out, "events             %llu (lost per header %u, records skipped %llu)\n",
            (unsigned long long)st->events, h->events_lost, (unsigned long long)st->records_skipped);
    fprintf(out, "\nevents by header form\n");
    for (int f = 0; f < ETW_FORM_COUNT_; f++)
        if (st->events_by_form[f])
            fprintf(out, "  %-20s %12llu\n", etw_header_form_name((etw_header_form)f),
                    (unsigned long long)st->events_by_form[f]);
    qsort(t.slots, t.cap, sizeof *t.slots, by_count_desc);
    fprintf(out, "\nevents by provider\n");
    for (size_t i = 0; i < t.cap && t.slots[i].n; i++) {
        char g[ETW_GUID_STRING_SIZE];
        etw_guid_format(&t.slots[i].guid, g);
        fprintf(out, "  %s %12llu%s\n", g, t.slots[i].n, t.slots[i].kernel ? "  (Windows Kernel)" : "");
    }
    free(t.slots);
    if (s < 0) return EXIT_FATAL;
    return st->problems ? EXIT_SKIPPED : EXIT_CLEAN;
}

