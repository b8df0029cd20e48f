/* fuzz_metadata.c - libFuzzer target for the KernelTraceControl MetaData
 * source (src/source/etw_metadata.c).
 *
 * Build (from the repository root):
 *   clang -g -O1 -fsanitize=fuzzer,address,undefined -Iinclude -Isrc \
 *       fuzz/fuzz_metadata.c src/source/etw_metadata.c src/schema/etw_cache.c \
 *       src/decode/etw_decode.c src/common/etw_common.c -lxxhash -o /tmp/fmd
 *   /tmp/fmd fuzz/corpus/metadata
 * Seeds (fuzz/corpus/metadata): the payloads of the 85 MetaData records of
 * tests/data/net.4.5.2.x64.etl, each behind its mode byte (net_*), and
 * three map + event pairs in mode 4 and 6 (pair_*).
 *
 * Input: byte 0 = mode, the rest = payload.
 *   mode & 1: 0 EventInfo (opcode 32), 1 EventMapInfo (opcode 33);
 *   mode & 2: the described events are 32-bit (pointer size 4), else 64;
 *   mode & 4: two records: u16 LE n, then n bytes of an EventMapInfo
 *             payload, then the rest as the record chosen by mode & 1 (so
 *             maps and events of one input meet at resolve time).
 * Each record is wrapped in a classic MetaData etw_event over an
 * exactly-sized copy (ASan catches any read past it) and offered; then the
 * key an EventInfo describes is resolved into a fresh cache through the
 * descriptor or classic source, and the schema is walked over the payload
 * bytes by the property decoder (its first 20000 items).
 *
 * Checks: offer takes every record (returns 1); the status is one of the
 * documented ones, with a reason on failure; counters add up; a kept
 * EventInfo always resolves, its schema passes etw_schema_validate() and
 * carries the record's descriptor; a second offer of the same record is a
 * duplicate; a key that was not kept is ETW_E_NOT_FOUND. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/etw_bytes.h"
#include "etwdecode/etw_decode.h"
#include "schema/etw_cache.h"
#include "source/etw_metadata.h"

#define FUZZ_ASSERT(c)                                                         \
    do {                                                                       \
        if (!(c)) {                                                            \
            fprintf(stderr, "%s:%d: assertion failed: %s\n", __FILE__,         \
                    __LINE__, #c);                                             \
            abort();                                                           \
        }                                                                      \
    } while (0)

static const etw_guid k_md_guid = {
    0xbbccf6c1u, 0x6cd1u, 0x48c4u, {0x80, 0xff, 0x83, 0x94, 0x82, 0xe3, 0x76, 0x71}};

static int status_ok(etw_status st) {
    return st == ETW_OK || st == ETW_E_TRUNCATED || st == ETW_E_CORRUPT || st == ETW_E_LIMIT ||
           st == ETW_E_NOMEM;
}

/* Offer p[0..n) as opcode; returns the status. */
static etw_status offer(etw_metadata_set *m, uint8_t opcode, const uint8_t *p, size_t n) {
    uint8_t *copy = malloc(n ? n : 1);
    FUZZ_ASSERT(copy);
    if (n) memcpy(copy, p, n);
    etw_event ev;
    memset(&ev, 0, sizeof ev);
    ev.form = ETW_FORM_FULL;
    ev.flags = ETW_EVENT_FLAG_CLASSIC_HEADER | ETW_EVENT_FLAG_64_BIT_HEADER;
    ev.pointer_size = 8;
    ev.provider = k_md_guid;
    ev.opcode = opcode;
    ev.user_data = n ? copy : NULL;
    ev.user_data_len = (uint32_t)n;
    etw_status st = ETW_E_INVALID_ARG;
    const char *why = NULL;
    uint64_t damaged = etw_metadata_stats_get(m)->damaged;
    int taken = etw_metadata_offer(m, &ev, &st, &why);
    FUZZ_ASSERT(taken == 1);
    FUZZ_ASSERT(status_ok(st));
    FUZZ_ASSERT((st == ETW_OK) == (why == NULL));
    FUZZ_ASSERT(etw_metadata_stats_get(m)->damaged ==
                damaged + (st != ETW_OK && st != ETW_E_NOMEM));
    free(copy);
    return st;
}

/* Walk a schema over bytes: never crashes, always ends. */
static void walk(const etw_schema *s, const uint8_t *p, size_t n, uint8_t ptr) {
    uint64_t *refs = calloc(s->prop_count ? s->prop_count : 1, sizeof *refs);
    FUZZ_ASSERT(refs);
    uint8_t *copy = malloc(n ? n : 1);
    FUZZ_ASSERT(copy);
    if (n) memcpy(copy, p, n);
    etw_event ev;
    memset(&ev, 0, sizeof ev);
    ev.form = ETW_FORM_EVENT_HEADER;
    ev.pointer_size = ptr;
    ev.user_data = n ? copy : NULL;
    ev.user_data_len = (uint32_t)n;
    etw_decode_cursor c;
    if (etw_decode_begin(&c, s, &ev, refs, s->prop_count) == ETW_OK) {
        etw_value v;
        uint64_t items = 0;
        /* the first items only: the decoder's own bounds (up to 2^18
         * zero-size items, 65535-element arrays) are fuzzed elsewhere and
         * would make this target slow */
        while (items < 20000 && etw_decode_next(&c, &v) == ETW_OK) {
            items++;
            if (v.kind == ETW_VALUE_SCALAR && v.prop->map && v.prop->map->count) {
                const etw_map *mp = v.prop->map;
                FUZZ_ASSERT(mp->flags == ETW_MAP_VALUEMAP || mp->flags == ETW_MAP_BITMAP);
                for (uint32_t i = 0; i < mp->count; i++) FUZZ_ASSERT(mp->entries[i].name);
            }
        }
    }
    free(copy);
    free(refs);
}

/* Resolve the key the EventInfo p describes. */
static void resolve_described(etw_metadata_set *m, const uint8_t *p, size_t n, etw_status added,
                              uint8_t ptr) {
    if (n < 112) return;
    etw_guid provider = etw_guid_read(p);
    etw_guid event_guid = etw_guid_read(p + 16);
    uint16_t id = etw_le16(p + 32);
    uint8_t version = p[34], opcode = p[37];
    int classic = etw_le32(p + 48) == 1;
    uint8_t key[ETW_CLASSIC_KEY_SIZE];
    size_t klen = classic ? ETW_CLASSIC_KEY_SIZE : ETW_DESCRIPTOR_KEY_SIZE;
    if (classic)
        etw_key_classic(key, &event_guid, opcode, version);
    else
        etw_key_descriptor(key, &provider, id, version);
    uint64_t h = etw_cache_hash(key, klen);
    etw_cache *c = NULL;
    if (etw_cache_new(&c, NULL) != ETW_OK) return;
    etw_event ev;
    memset(&ev, 0, sizeof ev);
    ev.pointer_size = ptr;
    etw_source src = classic ? etw_metadata_as_classic_source(m) : etw_metadata_as_source(m);
    const etw_schema *s = NULL;
    const char *why = NULL;
    etw_status st = src.resolve(src.ctx, c, &ev, key, klen, h, &s, &why);
    if (added == ETW_OK) {
        FUZZ_ASSERT(st == ETW_OK || st == ETW_E_NOMEM);
        if (st == ETW_OK) {
            FUZZ_ASSERT(s != NULL);
            FUZZ_ASSERT(etw_schema_validate(s, &why) == ETW_OK);
            FUZZ_ASSERT(s->source == ETW_SOURCE_METADATA && s->pointer_size == ptr);
            FUZZ_ASSERT(s->version == version);
            FUZZ_ASSERT(classic ? s->opcode == opcode : s->event_id == id);
            FUZZ_ASSERT(s->event_name != NULL);
            FUZZ_ASSERT(etw_cache_find(c, ETW_SOURCE_METADATA, ptr, key, klen, h) == s);
            for (uint32_t i = 0; i < s->prop_count; i++) {
                const etw_property *q = &s->props[i];
                FUZZ_ASSERT(q->name != NULL);
                FUZZ_ASSERT((q->flags & ~0xFFu) == 0);
                FUZZ_ASSERT(q->tags <= 0x0FFFFFFFu);
            }
            walk(s, p, n, ptr);
            /* the other source never answers this key */
            etw_source other = classic ? etw_metadata_as_source(m) : etw_metadata_as_classic_source(m);
            const etw_schema *s2 = NULL;
            FUZZ_ASSERT(other.resolve(other.ctx, c, &ev, key, klen, h, &s2, &why) ==
                        ETW_E_NOT_FOUND);
        }
    } else if (etw_metadata_event_count(m) == 0) {
        FUZZ_ASSERT(st == ETW_E_NOT_FOUND);
    }
    etw_cache_free(c);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 1) return 0;
    uint8_t mode = data[0];
    data++;
    size--;
    uint8_t ptr = (mode & 2) ? 4 : 8;
    etw_metadata_set *m = NULL;
    if (etw_metadata_set_new(&m, NULL) != ETW_OK) return 0;
    if ((mode & 4) && size >= 2) {
        size_t n = etw_le16(data);
        if (n > size - 2) n = size - 2;
        offer(m, ETW_METADATA_OPCODE_MAP_INFO, data + 2, n);
        data += 2 + n;
        size -= 2 + n;
    }
    uint8_t opcode = (mode & 1) ? ETW_METADATA_OPCODE_MAP_INFO : ETW_METADATA_OPCODE_EVENT_INFO;
    uint32_t events_before = etw_metadata_event_count(m);
    uint32_t maps_before = etw_metadata_map_count(m);
    etw_status st = offer(m, opcode, data, size);
    if (opcode == ETW_METADATA_OPCODE_EVENT_INFO) {
        FUZZ_ASSERT(etw_metadata_event_count(m) == events_before + (st == ETW_OK));
        resolve_described(m, data, size, st, ptr);
    } else {
        FUZZ_ASSERT(etw_metadata_map_count(m) <= maps_before + (st == ETW_OK));
    }
    /* the same record again: a duplicate, nothing new kept */
    if (st == ETW_OK) {
        uint64_t dup = etw_metadata_stats_get(m)->duplicates;
        uint32_t ev_count = etw_metadata_event_count(m), map_count = etw_metadata_map_count(m);
        uint64_t skipped = etw_metadata_stats_get(m)->skipped_maps;
        etw_status st2 = offer(m, opcode, data, size);
        FUZZ_ASSERT(st2 == ETW_OK || st2 == ETW_E_NOMEM);
        FUZZ_ASSERT(etw_metadata_event_count(m) == ev_count);
        FUZZ_ASSERT(etw_metadata_map_count(m) == map_count);
        if (st2 == ETW_OK)
            FUZZ_ASSERT(etw_metadata_stats_get(m)->duplicates +
                            etw_metadata_stats_get(m)->skipped_maps ==
                        dup + skipped + 1);
    }
    etw_metadata_set_free(m);
    return 0;
}
