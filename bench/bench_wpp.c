/* bench_wpp.c - WPP cost (a program, not a test).
 *
 *   load:    the 90 TMF files of ../shared/data/wpp/nefarius-tmf (2,610
 *            messages) into a new set: CPU time per load (files read from
 *            the page cache);
 *   format:  one WPP message's text (etw_wpp_format_text into a reused
 *            etw_text: the default prefix with its date, %!FUNC!, the
 *            arguments) for a mix of 8 real messages of those files (an
 *            NTSTATUS, pointers, an ANSI string, a counted UTF-16 string,
 *            64-bit hex, an irql list, ints): events per second on one core;
 *   decode:  the same through the decoder (schema lookup by (GUID, number)
 *            in the cache) and the JSON writer (fields and message): events
 *            per second.
 * Each figure is the best of 7 runs of a timed loop of at least 200 ms of
 * process CPU time (the build machine is shared: wall time would count the
 * other jobs).
 * Usage: bench_wpp [TMF_DIR]
 */
#if !defined(_WIN32) && !defined(_POSIX_C_SOURCE)
#define _POSIX_C_SOURCE 200809L
#endif
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "etwdecode/etw_decoder.h"
#include "etwdecode/etw_json.h"
#include "etwdecode/etw_wpp.h"
#include "format/etw_text.h"
#include "wpp/etw_tmf.h"
#include "wpp/etw_wpp_format.h"

#ifndef ETW_SHARED_DATA_DIR
#define ETW_SHARED_DATA_DIR "../shared/data"
#endif

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

typedef struct sample {
    const char *guid;
    uint16_t number;
    uint8_t payload[64];
    uint32_t len;
    etw_event ev;
    const etw_wpp_message *m;
} sample;

static size_t put(uint8_t *p, const void *v, size_t n) {
    memcpy(p, v, n);
    return n;
}

int main(int argc, char **argv) {
    const char *dir = argc > 1 ? argv[1] : ETW_SHARED_DATA_DIR "/wpp/nefarius-tmf";
    /* ---- load ---- */
    double best_load = 1e9;
    etw_wpp_set *s = NULL;
    for (int r = 0; r < 7; r++) {
        etw_wpp_set *t = NULL;
        etw_wpp_set_new(&t, NULL);
        double t0 = now();
        etw_status st = etw_wpp_add_tmf_path(t, dir, NULL);
        double dt = now() - t0;
        if (st != ETW_OK) {
            fprintf(stderr, "bench_wpp: %s\n", etw_wpp_set_error(t));
            return 1;
        }
        if (dt < best_load) best_load = dt;
        if (s) etw_wpp_set_free(s);
        s = t;
    }
    printf("load 90 TMF files (%u messages): %.2f ms\n", etw_wpp_count(s), best_load * 1e3);

    /* ---- events ---- */
    static sample smp[8];
    uint32_t st32 = 0xC0000001u;
    uint64_t p64 = 0xffffbb88b0aa7010ULL, x64 = 0x0000123456789abcULL;
    int32_t l32 = -42;
    const char *guids[8] = {"01e9b841-7d67-315a-7b92-23b2033356de", "0a9ab260-f7e4-311e-a23e-f8ab6856dc72",
                            "0a9ab260-f7e4-311e-a23e-f8ab6856dc72", "028f1450-e0d5-3b03-31cd-6226d77778f9",
                            "03fb1cb4-1c81-30e9-50db-4ecb4f47594e", "03fb1cb4-1c81-30e9-50db-4ecb4f47594e",
                            "01e9b841-7d67-315a-7b92-23b2033356de", "e4b27b5e-24d0-369f-a4b5-23228e160bd2"};
    uint16_t nums[8] = {14, 35, 34, 11, 27, 30, 18, 12};
    for (int i = 0; i < 8; i++) {
        sample *x = &smp[i];
        x->guid = guids[i];
        x->number = nums[i];
        etw_guid g;
        etw_tmf_parse_guid(x->guid, 36, &g);
        x->m = etw_wpp_find(s, &g, x->number);
        if (!x->m) {
            fprintf(stderr, "bench_wpp: %s %u not in the TMF files\n", x->guid, x->number);
            return 1;
        }
        size_t n = 0;
        for (uint16_t a = 0; a < x->m->argc; a++) {
            const char *tn = x->m->args[a].type_name;
            if (!strcmp(tn, "ItemNTSTATUS")) n += put(x->payload + n, &st32, 4);
            else if (!strcmp(tn, "ItemPtr")) n += put(x->payload + n, &p64, 8);
            else if (!strcmp(tn, "ItemLongLongXX")) n += put(x->payload + n, &x64, 8);
            else if (!strcmp(tn, "ItemLong")) n += put(x->payload + n, &l32, 4);
            else if (!strcmp(tn, "ItemString")) n += put(x->payload + n, "BthPS3Device", 13);
            else if (!strcmp(tn, "ItemListByte")) x->payload[n++] = 2;
            else if (!strcmp(tn, "ItemPWString")) {
                static const uint8_t w[] = {12, 0, '\\', 0, 'D', 0, 'e', 0, 'v', 0, 'i', 0, 'c', 0};
                n += put(x->payload + n, w, sizeof w);
            } else {
                fprintf(stderr, "bench_wpp: type %s not in the sample\n", tn);
                return 1;
            }
        }
        x->len = (uint32_t)n;
        memset(&x->ev, 0, sizeof x->ev);
        x->ev.form = ETW_FORM_MESSAGE;
        x->ev.provider = g;
        x->ev.message_number = x->number;
        x->ev.message_flags = 0xAA;
        x->ev.pointer_size = 8;
        x->ev.flags = ETW_EVENT_FLAG_TRACE_MESSAGE | ETW_EVENT_FLAG_64_BIT_HEADER;
        x->ev.pid = 0x1a4;
        x->ev.tid = 0x2b0;
        x->ev.cpu = 1;
        x->ev.timestamp = 133790000123456789LL + i * 1000;
        x->ev.user_data = x->payload;
        x->ev.user_data_len = x->len;
    }

    /* ---- format ---- */
    etw_text t;
    etw_text_init(&t, NULL);
    double best = 0;
    size_t bytes = 0;
    for (int r = 0; r < 7; r++) {
        uint64_t n = 0;
        double t0 = now(), dt;
        do {
            for (int k = 0; k < 1000; k++) {
                const sample *x = &smp[k & 7];
                etw_text_clear(&t);
                char why[128];
                if (etw_wpp_format_text(&t, x->m, &x->ev, why, sizeof why) != ETW_OK) {
                    fprintf(stderr, "bench_wpp: %s\n", why);
                    return 1;
                }
                bytes += t.len;
            }
            n += 1000;
            dt = now() - t0;
        } while (dt < 0.2);
        double rate = (double)n / dt;
        if (rate > best) best = rate;
    }
    printf("format: %.2f M events/s (one core)\n", best / 1e6);
    etw_text_clear(&t);
    etw_wpp_format_text(&t, smp[7].m, &smp[7].ev, NULL, 0);
    printf("  e.g. %s\n", etw_text_cstr(&t));
    etw_text_free(&t);

    /* ---- decoder + JSON ---- */
    etw_decoder *d = NULL;
    etw_decoder_new(&d, NULL);
    etw_decoder_add_wpp_set(d, s);
    etw_json_options jo;
    memset(&jo, 0, sizeof jo);
    jo.decoder = d;
    etw_json *j = NULL;
    if (etw_json_new(&j, NULL, &jo) != ETW_OK) return 1;
    best = 0;
    for (int r = 0; r < 7; r++) {
        uint64_t n = 0;
        double t0 = now(), dt;
        do {
            for (int k = 0; k < 1000; k++) {
                const char *line;
                size_t len;
                if (etw_json_event(j, NULL, &smp[k & 7].ev, &line, &len) != ETW_OK) return 1;
                bytes += len;
            }
            n += 1000;
            dt = now() - t0;
        } while (dt < 0.2);
        double rate = (double)n / dt;
        if (rate > best) best = rate;
    }
    printf("decode + JSON (fields and message): %.2f M events/s (one core)\n", best / 1e6);
    const char *line;
    size_t len;
    etw_json_event(j, NULL, &smp[7].ev, &line, &len);
    printf("  e.g. %.*s\n", (int)len, line);
    etw_json_free(j);
    etw_decoder_free(d);
    etw_wpp_set_free(s);
    return bytes == 0;
}
