/* fuzz_reader.c - libFuzzer target for the ETL container reader.
 *
 * Opens the input with etw_reader_open_memory (max_buffer_size 1 MiB, so a
 * lying size cannot make the reader allocate huge buffers), reads the
 * log-file header strings, iterates every event with a bound, and reads
 * every byte of each event's user data and extended items, summing them so
 * that ASan sees each read. Every other byte of input the first time, the
 * reader is also rewound and iterated in file order, so both merge paths
 * and etw_reader_rewind() are exercised; the rewound pass also watches two
 * providers (etw_reader_watch).
 *
 * Contract checks (abort on violation): open fails only with a known status
 * and leaves *out NULL; iteration ends with ETW_END; the stats count exactly
 * the events returned; every event's borrowed pointers stay inside what the
 * reader holds (checked by ASan through the reads).
 *
 * Build: cmake -DETW_FUZZ=ON -DCMAKE_C_COMPILER=clang, or
 *   clang -g -O1 -fsanitize=fuzzer,address,undefined -Iinclude -Isrc \
 *         fuzz/fuzz_reader.c src/etl/etw_*.c src/common/etw_common.c -o fuzz_reader
 * Run:   ./fuzz_reader /tmp/corpus fuzz/corpus/reader
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "etwdecode/etw_reader.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Indexed buffers start at least 0x48 bytes apart, and each holds at most
 * max_buffer_size / 8 records once decompressed; anything above this is a
 * loop. */
#define FUZZ_MAX_BUFFER (1u << 20)
#define EVENT_BOUND(size) (((uint64_t)(size) / 0x48u + 1u) * (FUZZ_MAX_BUFFER / 8u) + 2u)

static volatile uint64_t g_sink;

static void count_diag(void *ctx, const etw_diag *d) {
    uint64_t *n = ctx;
    (*n)++;
    /* Messages are NUL-terminated text: read them fully. */
    if (!d->message) abort();
    g_sink += strlen(d->message) + d->file_offset;
}

static uint64_t touch_event(const etw_event *ev) {
    uint64_t sum = (uint64_t)ev->raw_timestamp + ev->pid + ev->tid + ev->id;
    for (uint32_t i = 0; i < ev->user_data_len; i++) sum += ev->user_data[i];
    uint32_t pos = 0;
    etw_ext_item it;
    uint32_t items = 0;
    while (etw_event_next_ext(ev, &pos, &it) == ETW_OK) {
        sum += it.type;
        for (uint32_t i = 0; i < it.size; i++) sum += it.data[i];
        if (++items > 0x10000u) abort(); /* the chain must end */
    }
    for (uint32_t i = 0; i < ev->ext_size; i++) sum += ev->ext_data[i];
    if ((unsigned)ev->form >= (unsigned)ETW_FORM_COUNT_) abort();
    return sum;
}

/* etw_reader_watch: the records shown as their buffers load, and the
 * events of the watched providers the reader returned after them. */
typedef struct watching {
    etw_guid g[2];
    uint64_t shown, returned;
} watching;

static void on_watch(void *ctx, const etw_event *ev) {
    watching *w = ctx;
    if (!etw_guid_equal(&ev->provider, &w->g[0]) && !etw_guid_equal(&ev->provider, &w->g[1])) abort();
    w->shown++;
    g_sink += touch_event(ev);
}

static etw_guid first_provider;

static void read_all_w(etw_reader *r, size_t size, watching *w) {
    etw_event ev;
    etw_status s;
    uint64_t n = 0, sum = 0;
    while ((s = etw_reader_next(r, &ev)) == ETW_OK) {
        sum += touch_event(&ev);
        if (n == 1) first_provider = ev.provider; /* the first after the log-file header */
        static const etw_guid zero;
        if (w && ev.form != ETW_FORM_MESSAGE && !ev.is_logfile_header && !etw_guid_equal(&ev.provider, &zero) &&
            (etw_guid_equal(&ev.provider, &w->g[0]) || etw_guid_equal(&ev.provider, &w->g[1])))
            w->returned++;
        if (++n > EVENT_BOUND(size)) abort();
    }
    if (s != ETW_END) abort();
    if (etw_reader_stats_get(r)->events != n) abort();
    g_sink += sum;
}

static void read_all(etw_reader *r, size_t size) { read_all_w(r, size, NULL); }

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    uint64_t diags = 0;
    memset(&first_provider, 0, sizeof first_provider);
    etw_reader_options opt;
    memset(&opt, 0, sizeof opt);
    opt.max_buffer_size = FUZZ_MAX_BUFFER;
    opt.on_diag = count_diag;
    opt.diag_ctx = &diags;

    etw_reader *r = (etw_reader *)&diags; /* must be reset on failure */
    etw_status s = etw_reader_open_memory(&r, data, size, &opt);
    if (s != ETW_OK) {
        if (r != NULL) abort();
        if (s != ETW_E_NOT_ETL && s != ETW_E_TRUNCATED && s != ETW_E_CORRUPT &&
            s != ETW_E_LIMIT && s != ETW_E_UNSUPPORTED && s != ETW_E_NOMEM)
            abort();
        return 0;
    }

    const etw_logfile_header *lf = etw_reader_logfile(r);
    uint64_t sum = lf->buffer_size + (uint64_t)lf->start_time;
    for (uint32_t i = 0; i < lf->session_name_bytes; i++) sum += lf->session_name[i];
    for (uint32_t i = 0; i < lf->logfile_name_bytes; i++) sum += lf->logfile_name[i];
    sum += (uint64_t)etw_reader_to_filetime(r, lf->raw_timestamp);
    g_sink += sum;

    read_all(r, size);
    const etw_reader_stats *st = etw_reader_stats_get(r);
    if (st->problems < diags) abort();

    /* Again after a rewind: the same number of events; watching the first
     * event's provider and StackWalk, every record of theirs the reader
     * returns was shown first (as its buffer loaded). */
    uint64_t first = st->events;
    if (etw_reader_rewind(r) != ETW_OK) abort();
    static const etw_guid stackwalk = {0xdef2fe46, 0x7bd6, 0x4b80, {0xbd, 0x94, 0xf5, 0x7f, 0xe2, 0x0d, 0x0c, 0xe3}};
    watching w = {{first_provider, stackwalk}, 0, 0};
    if (etw_reader_watch(r, w.g, 2, on_watch, &w) != ETW_OK) abort();
    read_all_w(r, size, &w);
    if (w.shown < w.returned) abort();
    if (etw_reader_stats_get(r)->events != first) abort();
    etw_reader_close(r);

    /* File order on a different slice of inputs. */
    if (size > 0 && (data[size / 2] & 1)) {
        opt.file_order = 1;
        r = NULL;
        if (etw_reader_open_memory(&r, data, size, &opt) != ETW_OK) abort();
        read_all(r, size);
        if (etw_reader_stats_get(r)->events != first) abort();
        etw_reader_close(r);
    }
    return 0;
}
