/* ahead.c - a one-thread run over one file without the pre-scan: what the
 * pre-scan would learn (etw_decoder_prescan: the MetaData records, merged
 * TRACE_EVENT_INFO schemas), learned as the reader loads each buffer
 * (etw_reader_watch), before any event of that buffer is handed out
 * (etw_decoder_learn_early). Merged metadata sits next to the first event
 * it describes, in the same processor's buffer, so it comes in time. Where
 * it did not (a key already answered without it), where a record was not
 * seen ahead, or where the decoder told a problem (held, not said: the run
 * without the pre-scan may tell it where the other would not), the run is
 * made again with the pre-scan, as before: ahead_missed says when.
 *
 * Saves reading - and decompressing - the trace once more: --stats,
 * --report, --profile, --schemas and the first pass of --stacks use it
 * (net.4.5.2.x64.etl: 359 compressed buffers, about 70 M instructions of
 * decompression each pass). */
#include <stdio.h>
#include <string.h>

#include "etwdump.h"

/* The MetaData provider (bbccf6c1-6cd1-48c4-80ff-839482e37671) and the
 * kernel's StackWalk class (def2fe46-7bd6-4b80-bd94-f57fe20d0ce3). */
static const etw_guid watched[] = {
    {METADATA_PROVIDER_DATA1, 0x6cd1, 0x48c4, {0x80, 0xff, 0x83, 0x94, 0x82, 0xe3, 0x76, 0x71}},
    {0xdef2fe46, 0x7bd6, 0x4b80, {0xbd, 0x94, 0xf5, 0x7f, 0xe2, 0x0d, 0x0c, 0xe3}},
};

static void on_watched(void *ctx, const etw_event *ev) {
    ahead *a = ctx;
    if (has_stacks(ev)) {
        a->stacks = 1;
        ahead_metadata_only(a); /* the MetaData records only, from now on */
        return;
    }
    if (etw_decoder_learn_kind(a->dec, ev) != ETW_LEARN_AHEAD) return;
    int stale = 0;
    if (etw_decoder_learn_early(a->dec, ev, &stale) == ETW_E_NOMEM) a->nomem = 1;
    a->learned++;
    a->stale |= stale;
}

void ahead_start(ahead *a, session *s, etw_decoder *dec, int flags) {
    memset(a, 0, sizeof *a);
    a->dec = dec;
    a->hold = (flags & AHEAD_HOLD) != 0;
    if (a->hold) {
        s->dc->hold = 1;
        s->dc->held = 0;
    }
    etw_reader *r = etw_multi_count(s->m) == 1 ? etw_multi_reader(s->m, 0) : NULL;
    if (r && etw_reader_watch(r, watched, flags & AHEAD_STACKS ? 2 : 1, on_watched, a) == ETW_OK) a->r = r;
}

void ahead_metadata_only(ahead *a) {
    if (a->r) etw_reader_watch(a->r, watched, 1, on_watched, a);
}

void ahead_stop(ahead *a, session *s) {
    if (a->r) etw_reader_watch(a->r, NULL, 0, NULL, NULL);
    a->r = NULL;
    if (a->hold) s->dc->hold = 0;
}

int ahead_missed(ahead *a, const session *s, const etw_event *ev) {
    if ((a->hold && s->dc->held) || a->stale || a->nomem) return 1;
    /* a MetaData record the watch did not show first (or no watch) */
    return ev->provider.data1 == METADATA_PROVIDER_DATA1 && etw_decoder_learn_kind(a->dec, ev) == ETW_LEARN_AHEAD &&
           (!a->r || ++a->met > a->learned);
}

int session_again(session *s, int *stacks) {
    s->dc->hold = 0;
    s->dc->held = 0;
    s->no_prescan = 0;
    s->rescan = 0;
    s->cut_short = 0;
    etw_decoder_free(s->dec);
    s->dec = NULL;
    /* the filter too: it notes what it met by the decoder's schema ids */
    etw_filter_free(s->filter);
    if (!(s->filter = build_filter(s->o))) return EXIT_FATAL;
    etw_filter_set_origin(s->filter, s->origin);
    etw_status st = etw_multi_rewind(s->m);
    if (st != ETW_OK) {
        fprintf(stderr, "etwdump: cannot read the trace again: %s\n", etw_strerror(st));
        return EXIT_FATAL;
    }
    return setup_decoder_ex(s->o, s->m, s->dc, 1, stacks, &s->dec);
}
