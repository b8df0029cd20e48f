/* test_manifest.c - instrumentation manifests as a schema source: loading
 * (HTTP_Server.man, ClrEtwAll.man, hand-written manifests), the schemas they
 * resolve to, the event naming rule, $(string.X) resolution, broken
 * documents, replacement, allocation failure, and an end-to-end pass over
 * HTTP_Server.etl (every Microsoft-Windows-HttpService event resolved and
 * decoded). */
#define _POSIX_C_SOURCE 200809L

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "etw_test.h"
#include "etwdecode/etw_decode.h"
#include "etwdecode/etw_reader.h"
#include "schema/etw_cache.h"
#include "source/etw_manifest.h"
#include "source/etw_manifest_ext.h"

/* ---- helpers --------------------------------------------------------------- */

typedef struct diags {
    int n;
    int errors;   /* status < 0 */
    char last[640];
    char all[16384];
    uint64_t last_line;
    etw_status last_status;
} diags;

static void on_diag(void *ctx, const etw_diag *d) {
    diags *g = ctx;
    g->n++;
    if (d->status < 0) g->errors++;
    snprintf(g->last, sizeof g->last, "%s", d->message);
    g->last_line = d->file_offset;
    g->last_status = d->status;
    size_t l = strlen(g->all);
    if (l + strlen(d->message) + 2 < sizeof g->all) {
        memcpy(g->all + l, d->message, strlen(d->message));
        g->all[l + strlen(d->message)] = '\n';
        g->all[l + strlen(d->message) + 1] = 0;
    }
    if (getenv("ETW_TEST_VERBOSE")) fprintf(stderr, "diag: %s\n", d->message);
}

static etw_manifest_set *new_set(diags *g) {
    etw_manifest_options o;
    memset(&o, 0, sizeof o);
    o.on_diag = g ? on_diag : NULL;
    o.diag_ctx = g;
    if (g) memset(g, 0, sizeof *g);
    etw_manifest_set *m = NULL;
    ETW_CHECK_INT(etw_manifest_set_new(&m, &o), ETW_OK);
    return m;
}

static etw_guid guid_of(uint32_t d1, uint16_t d2, uint16_t d3, const char *d4hex) {
    etw_guid g;
    g.data1 = d1;
    g.data2 = d2;
    g.data3 = d3;
    for (int i = 0; i < 8; i++) {
        unsigned v;
        sscanf(d4hex + 2 * i, "%2x", &v);
        g.data4[i] = (uint8_t)v;
    }
    return g;
}

static const etw_schema *resolve(etw_manifest_set *m, etw_cache *c, const etw_guid *g, uint16_t id,
                                 uint8_t ver) {
    const etw_schema *s = NULL;
    const char *why = NULL;
    etw_status st = etw_manifest_resolve(m, c, g, id, ver, 8, &s, &why);
    if (st != ETW_OK) {
        if (why) fprintf(stderr, "resolve %u v%u: %s\n", id, ver, why);
        return NULL;
    }
    return s;
}

static const etw_property *prop(const etw_schema *s, const char *name) {
    for (uint32_t i = 0; s && i < s->prop_count; i++)
        if (strcmp(s->props[i].name, name) == 0) return &s->props[i];
    return NULL;
}

static const char *map_lookup(const etw_map *m, uint64_t v) {
    for (uint32_t i = 0; m && i < m->count; i++)
        if (m->entries[i].value == v) return m->entries[i].name;
    return NULL;
}

static int load_str(etw_manifest_set *m, const char *xml, const char *origin, uint32_t *np) {
    return etw_manifest_load_xml(m, xml, strlen(xml), origin, np);
}

static const etw_guid HTTP_GUID_INIT = {0xdd5ef90a, 0x6398, 0x47a4, {0xad, 0x34, 0x4d, 0xce, 0xcd, 0xef, 0x79, 0x5f}};
static const etw_guid CLR_GUID_INIT = {0xe13c0d23, 0xccbc, 0x4e12, {0x93, 0x1b, 0xd9, 0xcc, 0x2e, 0xee, 0x27, 0xe4}};

/* ---- HTTP_Server.man --------------------------------------------------------- */

static void test_http_load(void) {
    diags g;
    etw_manifest_set *m = new_set(&g);
    uint32_t np = 99;
    ETW_CHECK_INT(etw_manifest_load_path(m, ETW_TEST_DATA_DIR "/HTTP_Server.man", &np), ETW_OK);
    ETW_CHECK_INT(np, 1);
    ETW_CHECK_INT(etw_manifest_provider_count(m), 1);
    ETW_CHECK_INT(etw_manifest_event_count(m), 85);
    ETW_CHECK_INT(g.n, 0);
    ETW_CHECK(etw_manifest_has_provider(m, &HTTP_GUID_INIT));
    ETW_CHECK(!etw_manifest_has_provider(m, &CLR_GUID_INIT));
    ETW_CHECK_STR(etw_manifest_provider_name(m, &HTTP_GUID_INIT), "Microsoft-Windows-HttpService");
    ETW_CHECK(etw_manifest_provider_name(m, &CLR_GUID_INIT) == NULL);
    ETW_CHECK(etw_manifest_provider_name(NULL, &HTTP_GUID_INIT) == NULL);

    etw_cache *c;
    ETW_CHECK_INT(etw_cache_new(&c, NULL), ETW_OK);
    /* event 2: task4/opcode83, template tid_60. Named by their display
     * names: task4's message $(string.string50) is "HTTP Request Trace
     * Task", opcode83's $(string.string191) is "Parse" (HTTP_Server.man) */
    const etw_schema *s = resolve(m, c, &HTTP_GUID_INIT, 2, 0);
    ETW_CHECK(s != NULL);
    if (s) {
        ETW_CHECK_STR(s->provider_name, "Microsoft-Windows-HttpService");
        ETW_CHECK(etw_guid_equal(&s->provider, &HTTP_GUID_INIT));
        ETW_CHECK_STR(s->event_name, "HTTP Request Trace Task/Parse");
        ETW_CHECK_STR(s->task_name, "HTTP Request Trace Task");
        ETW_CHECK_STR(s->opcode_name, "Parse");
        ETW_CHECK_STR(s->message, "Parsed request (request pointer %1, method %2) with URI %3.");
        ETW_CHECK_INT(s->source, ETW_SOURCE_MANIFEST);
        ETW_CHECK_INT(s->pointer_size, 8);
        ETW_CHECK_INT(s->event_id, 2);
        ETW_CHECK_INT(s->version, 0);
        ETW_CHECK_INT(s->task, 1);
        ETW_CHECK_INT(s->opcode, 12);
        ETW_CHECK_INT(s->level, 4);
        ETW_CHECK_INT(s->channel, 16);
        ETW_CHECK_INT(s->keywords, 0x2);
        ETW_CHECK_INT(s->prop_count, 3);
        ETW_CHECK_INT(s->top_count, 3);
        static const char *names[] = {"RequestObj", "HttpVerb", "Url"};
        static const uint16_t in[] = {ETW_INTYPE_POINTER, ETW_INTYPE_UINT32, ETW_INTYPE_UNICODESTRING};
        static const uint16_t out[] = {ETW_OUTTYPE_HEXINT64, ETW_OUTTYPE_UNSIGNEDINT, ETW_OUTTYPE_STRING};
        for (int i = 0; i < 3 && i < s->prop_count; i++) {
            ETW_CHECK_STR(s->props[i].name, names[i]);
            ETW_CHECK_INT(s->props[i].in_type, in[i]);
            ETW_CHECK_INT(s->props[i].out_type, out[i]);
            ETW_CHECK_INT(s->props[i].flags, 0);
            ETW_CHECK(s->props[i].map == NULL);
        }
    }
    /* event 21: task1 (string27 "HTTP Connection Trace Task") / opcode64
     * (string154 "ConnConnect"), template tid_48 with two length references */
    s = resolve(m, c, &HTTP_GUID_INIT, 21, 0);
    ETW_CHECK(s != NULL);
    if (s) {
        ETW_CHECK_STR(s->event_name, "HTTP Connection Trace Task/ConnConnect");
        ETW_CHECK_INT(s->task, 4);
        ETW_CHECK_INT(s->opcode, 28);
        ETW_CHECK_INT(s->keywords, 0x10);
        ETW_CHECK_INT(s->prop_count, 5);
        ETW_CHECK_INT(s->top_count, 5);
        static const char *names[] = {"ConnectionObj", "LocalAddrLength", "LocalAddr", "RemoteAddrLength",
                                      "RemoteAddr"};
        static const uint16_t in[] = {ETW_INTYPE_POINTER, ETW_INTYPE_UINT32, ETW_INTYPE_BINARY, ETW_INTYPE_UINT32,
                                      ETW_INTYPE_BINARY};
        static const uint16_t out[] = {ETW_OUTTYPE_HEXINT64, ETW_OUTTYPE_UNSIGNEDINT, ETW_OUTTYPE_SOCKETADDRESS,
                                       ETW_OUTTYPE_UNSIGNEDINT, ETW_OUTTYPE_SOCKETADDRESS};
        for (int i = 0; i < 5 && i < s->prop_count; i++) {
            ETW_CHECK_STR(s->props[i].name, names[i]);
            ETW_CHECK_INT(s->props[i].in_type, in[i]);
            ETW_CHECK_INT(s->props[i].out_type, out[i]);
        }
        ETW_CHECK_INT(s->props[2].flags, ETW_PROP_LENGTH_REF);
        ETW_CHECK_INT(s->props[2].length, 1);
        ETW_CHECK_INT(s->props[4].flags, ETW_PROP_LENGTH_REF);
        ETW_CHECK_INT(s->props[4].length, 3);
    }
    /* event 51: value maps resolved from the string table */
    s = resolve(m, c, &HTTP_GUID_INIT, 51, 0);
    ETW_CHECK(s != NULL);
    const etw_property *p = prop(s, "Format");
    ETW_CHECK(p && p->map);
    if (p && p->map) {
        ETW_CHECK_STR(p->map->name, "HTTP_TEMPLATE_LOGGING_LogFormat_ValueMap");
        ETW_CHECK_INT(p->map->flags, ETW_MAP_VALUEMAP);
        ETW_CHECK_INT(p->map->count, 4);
        ETW_CHECK_STR(map_lookup(p->map, 0), "W3C");
        ETW_CHECK_STR(map_lookup(p->map, 1), "IIS");
        ETW_CHECK_STR(map_lookup(p->map, 2), "NCSA");
        ETW_CHECK_STR(map_lookup(p->map, 3), "Binary");
    }
    p = prop(s, "Type");
    ETW_CHECK(p && p->map && p->map->count == 2);
    if (p && p->map) ETW_CHECK_STR(map_lookup(p->map, 1), "ErrorLogging");
    /* unknown version / id: not found */
    const etw_schema *x = NULL;
    ETW_CHECK_INT(etw_manifest_resolve(m, c, &HTTP_GUID_INIT, 2, 1, 8, &x, NULL), ETW_E_NOT_FOUND);
    ETW_CHECK_INT(etw_manifest_resolve(m, c, &HTTP_GUID_INIT, 1000, 0, 8, &x, NULL), ETW_E_NOT_FOUND);
    ETW_CHECK_INT(etw_manifest_resolve(m, c, &CLR_GUID_INIT, 1, 0, 8, &x, NULL), ETW_E_NOT_FOUND);
    etw_cache_free(c);
    etw_manifest_set_free(m);
}

/* The source interface as a decoder calls it. */
static void test_source_interface(void) {
    etw_manifest_set *m = new_set(NULL);
    ETW_CHECK_INT(etw_manifest_load_path(m, ETW_TEST_DATA_DIR "/HTTP_Server.man", NULL), ETW_OK);
    etw_cache *c;
    ETW_CHECK_INT(etw_cache_new(&c, NULL), ETW_OK);
    etw_source src = etw_manifest_as_source(m);
    ETW_CHECK_INT(src.kind, ETW_SOURCE_MANIFEST);
    ETW_CHECK_INT(src.key, ETW_SOURCE_KEY_DESCRIPTOR);
    ETW_CHECK(src.ctx == m && src.resolve != NULL);
    etw_event ev;
    memset(&ev, 0, sizeof ev);
    ev.pointer_size = 4;
    ev.provider = HTTP_GUID_INIT;
    ev.id = 2;
    uint8_t key[ETW_DESCRIPTOR_KEY_SIZE];
    etw_key_descriptor(key, &ev.provider, 2, 0);
    uint64_t h = etw_cache_hash(key, sizeof key);
    const etw_schema *s = NULL;
    const char *why = NULL;
    ETW_CHECK_INT(src.resolve(src.ctx, c, &ev, key, sizeof key, h, &s, &why), ETW_OK);
    ETW_CHECK(s != NULL);
    if (s) {
        ETW_CHECK_INT(s->pointer_size, 4);
        ETW_CHECK(etw_cache_find(c, ETW_SOURCE_MANIFEST, 4, key, sizeof key, h) == s);
        ETW_CHECK(etw_cache_find(c, ETW_SOURCE_MANIFEST, 8, key, sizeof key, h) == NULL);
    }
    etw_key_descriptor(key, &ev.provider, 2, 7);
    h = etw_cache_hash(key, sizeof key);
    ETW_CHECK_INT(src.resolve(src.ctx, c, &ev, key, sizeof key, h, &s, &why), ETW_E_NOT_FOUND);
    ETW_CHECK_INT(src.resolve(src.ctx, c, &ev, key, 5, h, &s, &why), ETW_E_NOT_FOUND);
    /* an EventSource-kind set answers under its own map */
    etw_manifest_options o;
    memset(&o, 0, sizeof o);
    o.kind = ETW_SOURCE_EVENTSOURCE;
    etw_manifest_set *es;
    ETW_CHECK_INT(etw_manifest_set_new(&es, &o), ETW_OK);
    ETW_CHECK_INT(etw_manifest_load_path(es, ETW_TEST_DATA_DIR "/HTTP_Server.man", NULL), ETW_OK);
    etw_source src2 = etw_manifest_as_source(es);
    ETW_CHECK_INT(src2.kind, ETW_SOURCE_EVENTSOURCE);
    etw_key_descriptor(key, &ev.provider, 2, 0);
    h = etw_cache_hash(key, sizeof key);
    ETW_CHECK_INT(src2.resolve(src2.ctx, c, &ev, key, sizeof key, h, &s, &why), ETW_OK);
    ETW_CHECK(s && s->source == ETW_SOURCE_EVENTSOURCE);
    ETW_CHECK(etw_cache_find(c, ETW_SOURCE_EVENTSOURCE, 4, key, sizeof key, h) == s);
    etw_manifest_set_free(es);
    etw_cache_free(c);
    etw_manifest_set_free(m);
}

/* ---- ClrEtwAll.man ------------------------------------------------------------ */

static void test_clr(void) {
    diags g;
    etw_manifest_set *m = new_set(&g);
    uint32_t np = 0;
    ETW_CHECK_INT(etw_manifest_load_path(m, ETW_TEST_DATA_DIR "/ClrEtwAll.man", &np), ETW_OK);
    ETW_CHECK_INT(np, 5);
    ETW_CHECK_INT(etw_manifest_event_count(m), 510);
    ETW_CHECK_INT(g.n, 0);
    etw_guid rundown = guid_of(0xA669021C, 0xC450, 0x4609, "A0355AF59AF4DF18");
    ETW_CHECK(etw_manifest_has_provider(m, &rundown));
    etw_cache *c;
    ETW_CHECK_INT(etw_cache_new(&c, NULL), ETW_OK);

    /* GCAllocationTick_V4: task GarbageCollection shows as its message "GC",
     * opcode GCAllocationTick as "AllocationTick" (ClrEtwAll.man's string
     * table; PerfView's baseline names it GC/AllocationTick too) */
    const etw_schema *s = resolve(m, c, &CLR_GUID_INIT, 10, 4);
    ETW_CHECK(s != NULL);
    if (s) {
        ETW_CHECK_STR(s->provider_name, "Microsoft-Windows-DotNETRuntime");
        ETW_CHECK_STR(s->event_name, "GC/AllocationTick");
        ETW_CHECK_STR(s->task_name, "GC");
        ETW_CHECK_STR(s->opcode_name, "AllocationTick");
        ETW_CHECK_INT(s->task, 1);
        ETW_CHECK_INT(s->opcode, 11);
        ETW_CHECK_INT(s->level, 5);
        ETW_CHECK_INT(s->keywords, 0x1);
        ETW_CHECK(s->message && strncmp(s->message, "Amount=%1", 9) == 0);
        ETW_CHECK_INT(s->prop_count, 9);
        ETW_CHECK_INT(s->top_count, 9);
        static const char *names[] = {"AllocationAmount", "AllocationKind", "ClrInstanceID",
                                      "AllocationAmount64", "TypeID", "TypeName",
                                      "HeapIndex", "Address", "ObjectSize"};
        static const uint16_t in[] = {ETW_INTYPE_UINT32, ETW_INTYPE_UINT32, ETW_INTYPE_UINT16,
                                      ETW_INTYPE_UINT64, ETW_INTYPE_POINTER, ETW_INTYPE_UNICODESTRING,
                                      ETW_INTYPE_UINT32, ETW_INTYPE_POINTER, ETW_INTYPE_UINT64};
        static const uint16_t out[] = {ETW_OUTTYPE_HEXINT32, 0, 0, ETW_OUTTYPE_HEXINT64, 0, 0, 0, 0,
                                       ETW_OUTTYPE_HEXINT64};
        for (int i = 0; i < 9 && i < s->prop_count; i++) {
            ETW_CHECK_STR(s->props[i].name, names[i]);
            ETW_CHECK_INT(s->props[i].in_type, in[i]);
            ETW_CHECK_INT(s->props[i].out_type, out[i]);
            ETW_CHECK_INT(s->props[i].flags, 0);
            ETW_CHECK(i == 1 ? s->props[i].map != NULL : s->props[i].map == NULL);
        }
        const etw_map *mp = s->prop_count > 1 ? s->props[1].map : NULL;
        ETW_CHECK(mp != NULL);
        if (mp) {
            ETW_CHECK_STR(mp->name, "GCAllocationKindMap");
            ETW_CHECK_INT(mp->flags, ETW_MAP_VALUEMAP);
            ETW_CHECK_INT(mp->count, 3);
            ETW_CHECK_STR(map_lookup(mp, 0), "Small"); /* PerfView: AllocationKind=Small */
            ETW_CHECK_STR(map_lookup(mp, 1), "Large");
            ETW_CHECK_STR(map_lookup(mp, 2), "Pinned");
        }
    }
    /* GCCreateSegment_V1: the Type map */
    s = resolve(m, c, &CLR_GUID_INIT, 5, 1);
    ETW_CHECK(s != NULL);
    const etw_property *p = prop(s, "Type");
    ETW_CHECK(p && p->map && p->map->count == 4);
    if (p && p->map) {
        ETW_CHECK_STR(p->map->name, "GCSegmentTypeMap");
        ETW_CHECK_STR(map_lookup(p->map, 0), "SmallObjectHeap");
        ETW_CHECK_STR(map_lookup(p->map, 1), "LargeObjectHeap");
        ETW_CHECK_STR(map_lookup(p->map, 2), "ReadOnlyHeap");
        /* the manifest says "PinnedHeap"; PerfView's compiled parser prints
         * its own enum name PinnedObjectHeap (not derivable from the XML) */
        ETW_CHECK_STR(map_lookup(p->map, 3), "PinnedHeap");
    }
    if (s) ETW_CHECK_STR(s->event_name, "GC/CreateSegment");
    /* RuntimeInformationStart: bitmaps; task CLRRuntimeInformation's message
     * is "Runtime", win:Start shows as Start */
    s = resolve(m, c, &CLR_GUID_INIT, 187, 0);
    ETW_CHECK(s != NULL);
    if (s) {
        ETW_CHECK_STR(s->event_name, "Runtime/Start");
        ETW_CHECK_STR(s->opcode_name, "Start");
        ETW_CHECK_INT(s->opcode, 1);
    }
    p = prop(s, "StartupMode");
    ETW_CHECK(p && p->map && p->map->flags == ETW_MAP_BITMAP && p->map->count == 5);
    if (p && p->map) {
        ETW_CHECK_STR(map_lookup(p->map, 1), "ManagedExe");
        ETW_CHECK_STR(map_lookup(p->map, 0x10), "Other");
    }
    p = prop(s, "Sku");
    ETW_CHECK(p && p->map && p->map->flags == ETW_MAP_BITMAP);
    if (p && p->map) ETW_CHECK_STR(map_lookup(p->map, 2), "CoreClr"); /* PerfView: Sku=CoreClr */
    p = prop(s, "ComObjectGuid");
    ETW_CHECK(p && p->in_type == ETW_INTYPE_GUID);

    /* BulkType: an array of structs counted by Count, with an inner array */
    s = resolve(m, c, &CLR_GUID_INIT, 15, 0);
    ETW_CHECK(s != NULL);
    if (s) {
        ETW_CHECK_STR(s->event_name, "Type/BulkType");
        ETW_CHECK_INT(s->prop_count, 11);
        ETW_CHECK_INT(s->top_count, 3);
        const etw_property *v = &s->props[2];
        ETW_CHECK_STR(v->name, "Values");
        ETW_CHECK_INT(v->flags, ETW_PROP_STRUCT | ETW_PROP_COUNT_REF);
        ETW_CHECK_INT(v->count, 0);
        ETW_CHECK_INT(v->struct_first, 3);
        ETW_CHECK_INT(v->struct_count, 8);
        ETW_CHECK_STR(s->props[3].name, "TypeID");
        ETW_CHECK_STR(s->props[6].name, "Flags");
        ETW_CHECK(s->props[6].map && strcmp(s->props[6].map->name, "TypeFlagsMap") == 0);
        ETW_CHECK_STR(s->props[10].name, "TypeParameters");
        ETW_CHECK_INT(s->props[10].flags, ETW_PROP_COUNT_REF);
        ETW_CHECK_INT(s->props[10].count, 9); /* TypeParameterCount, a sibling in the struct */
        ETW_CHECK_INT(s->props[10].in_type, ETW_INTYPE_UINT64);
        ETW_CHECK_INT(s->props[10].out_type, ETW_OUTTYPE_HEXINT64);
        ETW_CHECK_INT(etw_schema_validate(s, NULL), ETW_OK);
    }
    /* GCBulkNode */
    s = resolve(m, c, &CLR_GUID_INIT, 18, 0);
    ETW_CHECK(s != NULL);
    if (s) {
        ETW_CHECK_STR(s->event_name, "GC/GCBulkNode"); /* its opcode message is "GCBulkNode" */
        ETW_CHECK_INT(s->top_count, 4);
        ETW_CHECK_INT(s->prop_count, 8);
        ETW_CHECK_STR(s->props[3].name, "Values");
        ETW_CHECK_INT(s->props[3].flags, ETW_PROP_STRUCT | ETW_PROP_COUNT_REF);
        ETW_CHECK_INT(s->props[3].count, 1);
        ETW_CHECK_INT(s->props[3].struct_first, 4);
        ETW_CHECK_INT(s->props[3].struct_count, 4);
        ETW_CHECK_STR(s->props[4].name, "Address");
    }
    /* fixed counts: Stack count="2" (which the schema fix-up of
     * etw_fixup.c turns into a count by FrameCount, props[3], as the runtime
     * writes it); RangeBegin count="1" is an array of one */
    s = resolve(m, c, &CLR_GUID_INIT, 82, 0);
    p = prop(s, "Stack");
    ETW_CHECK(p && p->flags == ETW_PROP_COUNT_REF && p->count == 3 && p->in_type == ETW_INTYPE_POINTER);
    if (s) ETW_CHECK_STR(s->event_name, "ClrStack/Walk"); /* CLRStackTaskMessage, CLRStackWalkOpcodeMessage */
    s = resolve(m, c, &rundown, 160, 0);
    p = prop(s, "RangeBegin");
    ETW_CHECK(p && p->flags == ETW_PROP_COUNT_FIXED && p->count == 1);
    if (s) ETW_CHECK_STR(s->provider_name, "Microsoft-Windows-DotNETRuntimeRundown");
    /* no task, no opcode: the symbol */
    s = resolve(m, c, &CLR_GUID_INIT, 270, 0);
    if (s) {
        ETW_CHECK_STR(s->event_name, "EventSource");
        ETW_CHECK(s->task_name == NULL);
        ETW_CHECK(s->opcode_name == NULL);
    }
    ETW_CHECK(s != NULL);
    /* two versions of one id are two layouts */
    const etw_schema *v0 = resolve(m, c, &CLR_GUID_INIT, 1, 0);
    const etw_schema *v1 = resolve(m, c, &CLR_GUID_INIT, 1, 1);
    const etw_schema *v2 = resolve(m, c, &CLR_GUID_INIT, 1, 2);
    ETW_CHECK(v0 && v1 && v2 && v0 != v1 && v1 != v2);
    if (v0 && v1 && v2) {
        ETW_CHECK_INT(v0->prop_count, 2);
        ETW_CHECK_INT(v1->prop_count, 5);
        ETW_CHECK(v2->prop_count > v1->prop_count);
        ETW_CHECK(v0->id != v1->id);
        ETW_CHECK_STR(v0->event_name, "GC/Start");
        ETW_CHECK_STR(v1->event_name, "GC/Start");
        ETW_CHECK_INT(v1->version, 1);
        /* a predefined opcode's symbol drops "win:" (TraceEvent's form) */
        ETW_CHECK_STR(v1->task_symbol, "GarbageCollection");
        ETW_CHECK_STR(v1->opcode_symbol, "Start");
        ETW_CHECK_STR(v1->event_symbol, "GCStart_V1");
    }
    /* the symbolic names beside the display ones (etw_filter matches both):
     * task name="GarbageCollection" message "GC", opcode name="GCSuspendEEBegin"
     * message "SuspendEEStart", event symbol="GCSuspendEEBegin_V1" */
    const etw_schema *se = resolve(m, c, &CLR_GUID_INIT, 9, 1);
    ETW_CHECK(se != NULL);
    if (se) {
        ETW_CHECK_STR(se->event_name, "GC/SuspendEEStart");
        ETW_CHECK_STR(se->task_name, "GC");
        ETW_CHECK_STR(se->opcode_name, "SuspendEEStart");
        ETW_CHECK_STR(se->task_symbol, "GarbageCollection");
        ETW_CHECK_STR(se->opcode_symbol, "GCSuspendEEBegin");
        ETW_CHECK_STR(se->event_symbol, "GCSuspendEEBegin_V1");
    }
    const etw_schema *x = NULL;
    ETW_CHECK_INT(etw_manifest_resolve(m, c, &CLR_GUID_INIT, 1, 9, 8, &x, NULL), ETW_E_NOT_FOUND);
    /* resolving again is a cache hit: the same schema */
    ETW_CHECK(resolve(m, c, &CLR_GUID_INIT, 1, 1) == v1);
    etw_cache_free(c);
    etw_manifest_set_free(m);
}

typedef struct all_ctx {
    etw_manifest_set *m;
    etw_cache *c;
    int ok, bad;
} all_ctx;

static int resolve_each(void *ctx, const etw_guid *g, uint16_t id, uint8_t v) {
    all_ctx *a = ctx;
    const etw_schema *s = NULL;
    const char *why = NULL;
    if (etw_manifest_resolve(a->m, a->c, g, id, v, 4, &s, &why) == ETW_OK &&
        etw_schema_validate(s, NULL) == ETW_OK)
        a->ok++;
    else
        a->bad++;
    return 0;
}

/* Every event of both manifests resolves into a valid schema. */
static void test_resolve_all(void) {
    etw_manifest_set *m = new_set(NULL);
    uint32_t np = 0;
    ETW_CHECK_INT(etw_manifest_load_path(m, ETW_TEST_DATA_DIR "/ClrEtwAll.man", &np), ETW_OK);
    ETW_CHECK_INT(etw_manifest_load_path(m, ETW_TEST_DATA_DIR "/HTTP_Server.man", &np), ETW_OK);
    ETW_CHECK_INT(etw_manifest_provider_count(m), 6);
    all_ctx a = {m, NULL, 0, 0};
    ETW_CHECK_INT(etw_cache_new(&a.c, NULL), ETW_OK);
    etw_manifest_foreach_event(m, resolve_each, &a);
    ETW_CHECK_INT(a.ok, 595);
    ETW_CHECK_INT(a.bad, 0);
    ETW_CHECK_INT(etw_cache_count(a.c), 595);
    etw_cache_free(a.c);
    etw_manifest_set_free(m);
}

/* ---- hand-written manifests ---------------------------------------------------- */

#define PROV_GUID "{11111111-2222-3333-4444-555555555555}"
static const etw_guid TEST_GUID = {0x11111111, 0x2222, 0x3333, {0x44, 0x44, 0x55, 0x55, 0x55, 0x55, 0x55, 0x55}};

static const char naming_xml[] =
    "<?xml version='1.0' encoding='utf-8'?>\n"
    "<instrumentationManifest xmlns='http://schemas.microsoft.com/win/2004/08/events'\n"
    "    xmlns:win='http://manifests.microsoft.com/win/2004/08/windows/events'>\n"
    "<instrumentation><events>\n"
    "<provider name='Test-Naming' guid='" PROV_GUID "' symbol='P'>\n"
    " <tasks>\n"
    "  <task name='Conn' value='7' message='$(string.task.conn)'>\n"
    "   <opcodes><opcode name='Accept' value='20'/></opcodes>\n"
    "  </task>\n"
    "  <task name='Req' value='8' message='$(string.task.req.nowhere)'/>\n"
    "  <task name='Blank' value='9' message='$(string.blank)'/>\n"
    " </tasks>\n"
    " <opcodes><opcode name='Accept' value='21'/><opcode name='Parse' value='22' message='$(string.op.parse)'/></opcodes>\n"
    " <keywords><keyword name='kA' mask='0x1'/><keyword name='kB' mask='0x100000000'/></keywords>\n"
    " <levels><level name='my:Chatty' value='17'/></levels>\n"
    " <channels><channel chid='c1' name='Test/Operational' type='Operational'/>\n"
    "           <channel chid='c2' name='Test/Debug' type='Debug' value='20'/>\n"
    "           <importChannel chid='sys' name='System'/></channels>\n"
    " <maps>\n"
    "  <valueMap name='M'><map value='2' message='$(string.two)'/><map value='0x1' message='$(string.one)'/>\n"
    "   <map value='3' message='$(string.missing)'/><map value='4' message='literal  '/></valueMap>\n"
    "  <bitMap name='B'><map value='0x4' message='$(string.four)'/><map value='0x1' message='$(string.one)'/></bitMap>\n"
    " </maps>\n"
    " <templates>\n"
    "  <template tid='T1'><data name='A' inType='win:UInt32' map='M'/><data name='F' inType='win:UInt8' map='B'/></template>\n"
    " </templates>\n"
    " <events>\n"
    "  <event value='1' task='Conn' opcode='Accept' symbol='E1' template='T1' keywords='kA kB ' level='win:Warning' channel='c1' message='$(string.ev1)'/>\n"
    "  <event value='2' task='Req' opcode='Accept' symbol='E2' level='my:Chatty' channel='c2'/>\n"
    "  <event value='3' task='Req' opcode='win:Stop' symbol='E3' channel='Test/Debug'/>\n"
    "  <event value='4' task='Req' opcode='win:Info' symbol='E4' channel='sys'/>\n"
    "  <event value='5' task='Req' symbol='E5' message='x $(string.one) y $(string.nope) z'/>\n"
    "  <event value='6' opcode='win:Start' symbol='E6'/>\n"
    "  <event value='7'/>\n"
    "  <event value='8' task='Conn' opcode='Parse' version='3' keywords='win:ResponseTime'/>\n"
    "  <event value='0x9' task='win:None' opcode='win:Receive' symbol='E9' level='2'/>\n"
    "  <event value='10' task='Blank' opcode='win:DC_Start'/>\n"
    "  <event value='11' task='Req' opcode='win:DC_Stop'/>\n"
    " </events>\n"
    "</provider>\n"
    "</events></instrumentation>\n"
    "<localization>\n"
    " <resources culture='fr-FR'><stringTable><string id='one' value='un'/><string id='ev1' value='Bonjour %1'/></stringTable></resources>\n"
    " <resources culture='en-US'><stringTable>\n"
    "  <string id='one' value='One '/><string id='two' value='Two'/><string id='four' value='Four'/>\n"
    "  <string id='ev1' value='Hello %1 %2'/><string id='task.conn' value='Connection'/>\n"
    "  <string id='op.parse' value=' Parsing '/><string id='blank' value=' '/>\n"
    " </stringTable></resources>\n"
    "</localization>\n"
    "</instrumentationManifest>\n";

static void test_naming(void) {
    diags g;
    etw_manifest_set *m = new_set(&g);
    uint32_t np = 0;
    ETW_CHECK_INT(load_str(m, naming_xml, "naming.man", &np), ETW_OK);
    ETW_CHECK_INT(np, 1);
    ETW_CHECK_INT(etw_manifest_event_count(m), 11);
    /* one warning for the file's three references that resolve nowhere
     * (task.req.nowhere, missing, nope), naming the first */
    ETW_CHECK_INT(g.n, 1);
    ETW_CHECK(strstr(g.last, "naming.man:") != NULL);
    ETW_CHECK(strstr(g.last, "3 string references") != NULL);
    ETW_CHECK(strstr(g.last, "$(string.task.req.nowhere)") != NULL);
    etw_cache *c;
    ETW_CHECK_INT(etw_cache_new(&c, NULL), ETW_OK);
    const etw_schema *s;

    /* task + task-scoped opcode (shadows the provider's Accept = 21); the
     * task by its message, the opcode (no message) by its name */
    s = resolve(m, c, &TEST_GUID, 1, 0);
    ETW_CHECK(s != NULL);
    if (s) {
        ETW_CHECK_STR(s->event_name, "Connection/Accept");
        ETW_CHECK_STR(s->task_name, "Connection");
        ETW_CHECK_STR(s->opcode_name, "Accept");
        ETW_CHECK_INT(s->opcode, 20);
        ETW_CHECK_INT(s->task, 7);
        ETW_CHECK_INT(s->keywords, 0x100000001ull);
        ETW_CHECK_INT(s->level, 3);
        ETW_CHECK_INT(s->channel, 16); /* no value: numbered from 16 */
        ETW_CHECK_STR(s->message, "Hello %1 %2"); /* en-US preferred over the first culture */
        ETW_CHECK_STR(s->provider_name, "Test-Naming");
        ETW_CHECK_INT(s->prop_count, 2);
        const etw_property *a = prop(s, "A");
        ETW_CHECK(a && a->map);
        if (a && a->map) {
            ETW_CHECK_STR(a->map->name, "M");
            ETW_CHECK_INT(a->map->count, 4);
            /* sorted by value */
            ETW_CHECK_INT(a->map->entries[0].value, 1);
            ETW_CHECK_STR(a->map->entries[0].name, "One"); /* trimmed */
            ETW_CHECK_STR(a->map->entries[1].name, "Two");
            ETW_CHECK_STR(a->map->entries[2].name, "3"); /* resolves nowhere: no message, the value */
            ETW_CHECK_STR(a->map->entries[3].name, "literal");
        }
        const etw_property *f = prop(s, "F");
        ETW_CHECK(f && f->map && f->map->flags == ETW_MAP_BITMAP && f->map->count == 2);
        if (f && f->map) {
            ETW_CHECK_INT(f->map->entries[0].value, 1);
            ETW_CHECK_STR(f->map->entries[1].name, "Four");
        }
    }
    /* task + provider opcode of the same name outside the task's scope */
    s = resolve(m, c, &TEST_GUID, 2, 0);
    if (s) {
        ETW_CHECK_STR(s->event_name, "Req/Accept");
        ETW_CHECK_INT(s->opcode, 21);
        ETW_CHECK_INT(s->level, 17);
        ETW_CHECK_INT(s->channel, 20);
        ETW_CHECK_INT(s->prop_count, 0);
        ETW_CHECK(s->message == NULL);
    }
    ETW_CHECK(s != NULL);
    /* standard opcode: win: stripped */
    s = resolve(m, c, &TEST_GUID, 3, 0);
    if (s) {
        ETW_CHECK_STR(s->event_name, "Req/Stop");
        ETW_CHECK_STR(s->opcode_name, "Stop");
        ETW_CHECK_INT(s->opcode, 2);
        ETW_CHECK_INT(s->channel, 20); /* by channel name */
    }
    ETW_CHECK(s != NULL);
    /* opcode 0 (win:Info): the task alone */
    s = resolve(m, c, &TEST_GUID, 4, 0);
    if (s) {
        ETW_CHECK_STR(s->event_name, "Req");
        ETW_CHECK_STR(s->opcode_name, "Info");
        ETW_CHECK_INT(s->channel, 8); /* imported System */
    }
    ETW_CHECK(s != NULL);
    /* no opcode at all: the task alone; embedded $(string.X) references */
    s = resolve(m, c, &TEST_GUID, 5, 0);
    if (s) {
        ETW_CHECK_STR(s->event_name, "Req");
        ETW_CHECK(s->opcode_name == NULL);
        ETW_CHECK_STR(s->task_name, "Req"); /* its message resolves nowhere: the name */
        ETW_CHECK(s->message == NULL);      /* a reference resolves nowhere: no message */
    }
    ETW_CHECK(s != NULL);
    /* no task: the symbol, even with an opcode */
    s = resolve(m, c, &TEST_GUID, 6, 0);
    if (s) {
        ETW_CHECK_STR(s->event_name, "E6");
        ETW_CHECK(s->task_name == NULL);
        ETW_CHECK_STR(s->opcode_name, "Start");
        ETW_CHECK_INT(s->opcode, 1);
    }
    ETW_CHECK(s != NULL);
    /* nothing at all: EventID(N) */
    s = resolve(m, c, &TEST_GUID, 7, 0);
    if (s) ETW_CHECK_STR(s->event_name, "EventID(7)");
    ETW_CHECK(s != NULL);
    /* provider-level opcode with a task; version attribute */
    ETW_CHECK(resolve(m, c, &TEST_GUID, 8, 0) == NULL);
    s = resolve(m, c, &TEST_GUID, 8, 3);
    if (s) {
        ETW_CHECK_STR(s->event_name, "Connection/Parsing"); /* message trimmed */
        ETW_CHECK_STR(s->opcode_name, "Parsing");
        ETW_CHECK_INT(s->keywords, 0x0001000000000000ull);
    }
    ETW_CHECK(s != NULL);
    /* hex id, win:None task, win:Receive, numeric level */
    s = resolve(m, c, &TEST_GUID, 9, 0);
    if (s) {
        ETW_CHECK_STR(s->event_name, "E9");
        ETW_CHECK_STR(s->opcode_name, "Receive");
        ETW_CHECK_INT(s->opcode, 240);
        ETW_CHECK_INT(s->task, 0);
        ETW_CHECK_INT(s->level, 2);
    }
    ETW_CHECK(s != NULL);
    /* a message that is blank: the name; the data-collection opcodes by
     * their winmeta.xml display names */
    s = resolve(m, c, &TEST_GUID, 10, 0);
    if (s) {
        ETW_CHECK_STR(s->event_name, "Blank/DCStart");
        ETW_CHECK_INT(s->opcode, 3);
    }
    ETW_CHECK(s != NULL);
    s = resolve(m, c, &TEST_GUID, 11, 0);
    if (s) ETW_CHECK_STR(s->event_name, "Req/DCStop");
    ETW_CHECK(s != NULL);
    etw_cache_free(c);
    etw_manifest_set_free(m);

    /* only a non-English culture: the first one is used */
    static const char fr_only[] =
        "<instrumentationManifest><instrumentation><events>"
        "<provider name='P' guid='" PROV_GUID "'><events><event value='1' symbol='S' message='$(string.a)'/></events></provider>"
        "</events></instrumentation><localization>"
        "<resources culture='fr-FR'><stringTable><string id='a' value='premier'/></stringTable></resources>"
        "<resources culture='de-DE'><stringTable><string id='a' value='erste'/></stringTable></resources>"
        "</localization></instrumentationManifest>";
    m = new_set(&g);
    ETW_CHECK_INT(load_str(m, fr_only, "fr.man", NULL), ETW_OK);
    ETW_CHECK_INT(etw_cache_new(&c, NULL), ETW_OK);
    s = resolve(m, c, &TEST_GUID, 1, 0);
    if (s) ETW_CHECK_STR(s->message, "premier");
    ETW_CHECK(s != NULL);
    etw_cache_free(c);
    etw_manifest_set_free(m);
}

/* Prefixed elements, trace: types, numeric types, struct references across
 * levels, UTF-16 documents. */
static const char types_xml[] =
    "<?xml version='1.0'?>\n"
    "<win:instrumentationManifest xmlns:win='http://schemas.microsoft.com/win/2004/08/events'\n"
    " xmlns:trace='http://schemas.microsoft.com/win/2004/08/events/trace'>\n"
    "<win:instrumentation><win:events>\n"
    "<win:provider name='Test-Types' guid='11111111-2222-3333-4444-555555555555'>\n"
    "<win:templates>\n"
    " <win:template tid='T'>\n"
    "  <win:data name='Size' inType='trace:SizeT'/>\n"
    "  <win:data name='Port' inType='trace:Port'/>\n"
    "  <win:data name='Addr' inType='trace:IPAddrV4'/>\n"
    "  <win:data name='Addr6' inType='trace:IPAddrV6'/>\n"
    "  <win:data name='Time' inType='trace:WmiTime'/>\n"
    "  <win:data name='Num' inType='win:8' outType='win:18'/>\n"
    "  <win:data name='Num2' inType='10' outType='xs:unsignedLong'/>\n"
    "  <win:data name='Cs' inType='win:CountedUnicodeString'/>\n"
    "  <win:data name='Cb' inType='win:CountedBinary'/>\n"
    "  <win:data name='N' inType='win:UInt16'/>\n"
    "  <win:data name='Fixed' inType='win:UnicodeString' length='12'/>\n"
    "  <win:struct name='Outer' count='N'>\n"
    "   <win:data name='M' inType='win:UInt8'/>\n"
    "   <win:struct name='Inner' count='M'>\n"
    "    <win:data name='X' inType='win:Int32' count='N'/>\n"
    "    <win:data name='Y' inType='win:Binary' length='M'/>\n"
    "   </win:struct>\n"
    "   <win:data name='After' inType='win:Boolean'/>\n"
    "  </win:struct>\n"
    "  <win:data name='Last' inType='win:GUID' outType='xs:GUID'/>\n"
    "  <win:UserData><Foo xmlns='myNs'><data name='bogus' inType='win:UInt8'/></Foo></win:UserData>\n"
    " </win:template>\n"
    "</win:templates>\n"
    "<win:events><win:event value='1' template='T' symbol='Ev'/></win:events>\n"
    "</win:provider>\n"
    "</win:events></win:instrumentation>\n"
    "</win:instrumentationManifest>\n";

static void check_types_schema(const etw_schema *s) {
    ETW_CHECK(s != NULL);
    if (!s) return;
    ETW_CHECK_INT(s->top_count, 13);
    ETW_CHECK_INT(s->prop_count, 18);
    static const char *names[] = {"Size", "Port",  "Addr",  "Addr6", "Time",  "Num",
                                  "Num2", "Cs",    "Cb",    "N",     "Fixed", "Outer",
                                  "Last", "M",     "Inner", "After", "X",     "Y"};
    for (int i = 0; i < 18 && i < s->prop_count; i++) ETW_CHECK_STR(s->props[i].name, names[i]);
    if (s->prop_count < 18) return;
    ETW_CHECK_INT(s->props[0].in_type, ETW_INTYPE_SIZET);
    ETW_CHECK_INT(s->props[1].in_type, ETW_INTYPE_UINT16);
    ETW_CHECK_INT(s->props[1].out_type, ETW_OUTTYPE_PORT);
    ETW_CHECK_INT(s->props[2].in_type, ETW_INTYPE_UINT32);
    ETW_CHECK_INT(s->props[2].out_type, ETW_OUTTYPE_IPV4);
    ETW_CHECK_INT(s->props[3].in_type, ETW_INTYPE_BINARY);
    ETW_CHECK_INT(s->props[3].out_type, ETW_OUTTYPE_IPV6);
    ETW_CHECK_INT(s->props[4].in_type, ETW_INTYPE_UINT64);
    ETW_CHECK_INT(s->props[5].in_type, 8);
    ETW_CHECK_INT(s->props[5].out_type, 18);
    ETW_CHECK_INT(s->props[6].in_type, 10);
    ETW_CHECK_INT(s->props[6].out_type, ETW_OUTTYPE_UNSIGNEDLONG);
    ETW_CHECK_INT(s->props[7].in_type, ETW_INTYPE_MANIFEST_COUNTEDSTRING);
    ETW_CHECK_INT(s->props[8].in_type, ETW_INTYPE_MANIFEST_COUNTEDBINARY);
    ETW_CHECK_INT(s->props[10].flags, ETW_PROP_LENGTH_FIXED);
    ETW_CHECK_INT(s->props[10].length, 12);
    /* Outer: count from N (top level), members at 13..15 */
    ETW_CHECK_INT(s->props[11].flags, ETW_PROP_STRUCT | ETW_PROP_COUNT_REF);
    ETW_CHECK_INT(s->props[11].count, 9);
    ETW_CHECK_INT(s->props[11].struct_first, 13);
    ETW_CHECK_INT(s->props[11].struct_count, 3);
    ETW_CHECK_INT(s->props[12].in_type, ETW_INTYPE_GUID);
    ETW_CHECK_INT(s->props[12].out_type, ETW_OUTTYPE_GUID);
    /* Inner: count from M (its own level), members at 16..17 */
    ETW_CHECK_INT(s->props[14].flags, ETW_PROP_STRUCT | ETW_PROP_COUNT_REF);
    ETW_CHECK_INT(s->props[14].count, 13);
    ETW_CHECK_INT(s->props[14].struct_first, 16);
    ETW_CHECK_INT(s->props[14].struct_count, 2);
    ETW_CHECK_INT(s->props[15].in_type, ETW_INTYPE_BOOLEAN);
    /* X counted by N two levels up; Y sized by M one level up */
    ETW_CHECK_INT(s->props[16].flags, ETW_PROP_COUNT_REF);
    ETW_CHECK_INT(s->props[16].count, 9);
    ETW_CHECK_INT(s->props[17].flags, ETW_PROP_LENGTH_REF);
    ETW_CHECK_INT(s->props[17].length, 13);
    ETW_CHECK_INT(etw_schema_validate(s, NULL), ETW_OK);
}

/* UTF-8 -> UTF-16 (ASCII input), with a BOM. */
static char *to_utf16(const char *s, int big_endian, size_t *len) {
    size_t n = strlen(s);
    char *o = malloc(2 * n + 2);
    o[0] = big_endian ? (char)0xFE : (char)0xFF;
    o[1] = big_endian ? (char)0xFF : (char)0xFE;
    for (size_t i = 0; i < n; i++) {
        o[2 + 2 * i + (big_endian ? 1 : 0)] = s[i];
        o[2 + 2 * i + (big_endian ? 0 : 1)] = 0;
    }
    *len = 2 * n + 2;
    return o;
}

static void test_types_and_structure(void) {
    diags g;
    etw_manifest_set *m = new_set(&g);
    ETW_CHECK_INT(load_str(m, types_xml, "types.man", NULL), ETW_OK);
    ETW_CHECK_INT(g.n, 0);
    etw_cache *c;
    ETW_CHECK_INT(etw_cache_new(&c, NULL), ETW_OK);
    check_types_schema(resolve(m, c, &TEST_GUID, 1, 0));
    etw_cache_free(c);
    etw_manifest_set_free(m);

    /* the same document in UTF-16LE and UTF-16BE (the XML declaration says
     * nothing about the encoding; expat follows the BOM) */
    for (int be = 0; be < 2; be++) {
        size_t len;
        const char *body = strchr(types_xml, '\n') + 1; /* drop the declaration */
        char *u = to_utf16(body, be, &len);
        m = new_set(&g);
        ETW_CHECK_INT(etw_manifest_load_xml(m, u, len, "types16.man", NULL), ETW_OK);
        ETW_CHECK_INT(g.n, 0);
        ETW_CHECK_INT(etw_cache_new(&c, NULL), ETW_OK);
        check_types_schema(resolve(m, c, &TEST_GUID, 1, 0));
        etw_cache_free(c);
        etw_manifest_set_free(m);
        free(u);
    }
}

/* ---- problems ----------------------------------------------------------------- */

/* Wrap a provider body into a manifest. */
static char *provider_doc(const char *guid, const char *name, const char *body) {
    static const char head[] = "<?xml version='1.0'?>\n<instrumentationManifest "
                               "xmlns='http://schemas.microsoft.com/win/2004/08/events'>\n"
                               "<instrumentation><events>\n";
    static const char tail[] = "</events></instrumentation>\n</instrumentationManifest>\n";
    size_t n = strlen(head) + strlen(guid) + strlen(name) + strlen(body) + strlen(tail) + 64;
    char *d = malloc(n);
    snprintf(d, n, "%s<provider name='%s' guid='%s'>\n%s</provider>\n%s", head, name, guid, body, tail);
    return d;
}

static void test_malformed(void) {
    diags g;
    etw_manifest_set *m = new_set(&g);
    /* wrong nesting: an error naming the line, nothing kept */
    static const char bad_nesting[] = "<instrumentationManifest>\n<instrumentation>\n<events>\n"
                                      "<provider name='P' guid='" PROV_GUID "'>\n"
                                      "</events>\n</provider>\n</instrumentation></instrumentationManifest>\n";
    uint32_t np = 7;
    ETW_CHECK_INT(load_str(m, bad_nesting, "nest.man", &np), ETW_E_CORRUPT);
    ETW_CHECK_INT(np, 0);
    ETW_CHECK_INT(g.n, 1);
    ETW_CHECK_INT(g.last_status, ETW_E_CORRUPT);
    ETW_CHECK_INT(g.last_line, 5);
    ETW_CHECK(strncmp(g.last, "nest.man:5: mismatched tag", 26) == 0);
    ETW_CHECK_INT(etw_manifest_provider_count(m), 0);
    ETW_CHECK(!etw_manifest_has_provider(m, &TEST_GUID));
    /* empty input, garbage, a DTD */
    ETW_CHECK_INT(etw_manifest_load_xml(m, "", 0, "empty.man", NULL), ETW_E_CORRUPT);
    ETW_CHECK_INT(etw_manifest_load_xml(m, NULL, 0, NULL, NULL), ETW_E_CORRUPT);
    ETW_CHECK(strncmp(g.last, "<memory>:", 9) == 0);
    ETW_CHECK_INT(load_str(m, "\x01\x02not xml", "junk.man", NULL), ETW_E_CORRUPT);
    static const char dtd[] = "<?xml version='1.0'?>\n<!DOCTYPE lol [<!ENTITY a 'aaaa'>]>\n"
                              "<instrumentationManifest>&a;</instrumentationManifest>";
    ETW_CHECK_INT(load_str(m, dtd, "dtd.man", NULL), ETW_E_CORRUPT);
    ETW_CHECK(strstr(g.last, "dtd.man:2:") != NULL);
    ETW_CHECK(strstr(g.last, "document type") != NULL);
    /* a well-formed document that is no manifest loads nothing, and says so */
    int before = g.n;
    ETW_CHECK_INT(load_str(m, "<html><body>hi</body></html>", "html.man", &np), ETW_OK);
    ETW_CHECK_INT(np, 0);
    ETW_CHECK_INT(g.n, before + 1);
    ETW_CHECK(strstr(g.last, "html.man:0: no provider loaded: no <events> element") != NULL);
    ETW_CHECK_INT(etw_manifest_provider_count(m), 0);
    ETW_CHECK_INT(etw_manifest_load_xml(NULL, "x", 1, NULL, NULL), ETW_E_INVALID_ARG);
    ETW_CHECK_INT(etw_manifest_load_path(m, "/nonexistent/dir/x.man", NULL), ETW_E_IO);
    etw_manifest_set_free(m);
}

/* Truncated at many offsets: an error or (past the root's end) success,
 * never a crash, never a partial load. */
static void truncations(const char *xml, size_t len, size_t step, uint32_t expect_providers) {
    diags g;
    etw_manifest_set *m = new_set(&g);
    int lines = 1;
    for (size_t i = 0; i < len; i++) lines += xml[i] == '\n';
    int bad = 0, corrupt = 0;
    for (size_t cut = 0; cut < len; cut += step) {
        uint32_t np = 99;
        int before = g.n;
        etw_status st = etw_manifest_load_xml(m, xml, cut, "cut.man", &np);
        if (st == ETW_OK) {
            if (np != expect_providers) bad++;
            continue;
        }
        corrupt++;
        if (st != ETW_E_CORRUPT || np != 0 || g.n != before + 1) bad++;
        if (g.last_line < 1 || g.last_line > (uint64_t)lines) bad++;
        if (strncmp(g.last, "cut.man:", 8) != 0) bad++;
        if (etw_manifest_provider_count(m) != 0) bad++;
    }
    ETW_CHECK_INT(bad, 0);
    ETW_CHECK(corrupt > 0);
    etw_manifest_set_free(m);
}

static void test_truncated(void) {
    char *small = provider_doc(PROV_GUID, "Trunc",
                               "<templates><template tid='t'><data name='n' inType='win:UInt32'/>"
                               "<struct name='s' count='n'><data name='v' inType='win:UInt8'/></struct>"
                               "</template></templates>\n"
                               "<events><event value='1' template='t' symbol='e'/></events>\n");
    truncations(small, strlen(small), 1, 1);
    free(small);
    truncations(naming_xml, strlen(naming_xml), 1, 1);
    size_t len;
    char *http = etw_test_read_file(ETW_TEST_DATA_DIR "/HTTP_Server.man", &len);
    ETW_CHECK(http != NULL);
    if (http) truncations(http, len, 211, 1);
    free(http);
}

static void test_warnings(void) {
    diags g;
    etw_manifest_set *m = new_set(&g);
    etw_cache *c;
    ETW_CHECK_INT(etw_cache_new(&c, NULL), ETW_OK);

    /* bad guid: the provider is skipped, the next one of the document loads */
    char *d = provider_doc("{not-a-guid}", "BadGuid", "<events><event value='1'/></events>\n");
    char *two = malloc(strlen(d) + 256);
    /* splice a second, valid provider after the first */
    char *cut = strstr(d, "</events></instrumentation>");
    memcpy(two, d, (size_t)(cut - d));
    strcpy(two + (cut - d), "<provider name='Good' guid='" PROV_GUID "'><events><event value='1' symbol='x'/></events></provider>\n");
    strcat(two, cut);
    uint32_t np = 0;
    ETW_CHECK_INT(load_str(m, two, "guid.man", &np), ETW_OK);
    ETW_CHECK_INT(np, 1);
    ETW_CHECK_INT(g.n, 1);
    ETW_CHECK(strstr(g.last, "guid.man:4: provider BadGuid has no valid guid") == g.last);
    ETW_CHECK(etw_manifest_has_provider(m, &TEST_GUID));
    free(d);
    free(two);
    etw_manifest_set_free(m);

    /* unknown types (once per provider), a count naming nothing, a length
     * naming a string, a missing map, a binary without length, a template
     * nesting structs too deep, a missing template, a duplicate event */
    m = new_set(&g);
    d = provider_doc(PROV_GUID, "Warn",
                     "<templates>\n"                                                             /* 5 */
                     "<template tid='t'>\n"                                                      /* 6 */
                     " <data name='a' inType='win:Frobnicate'/>\n"                               /* 7 */
                     " <data name='b' inType='win:Gadget' outType='xs:nothing'/>\n"              /* 8 */
                     " <data name='s' inType='win:AnsiString'/>\n"                               /* 9 */
                     " <data name='arr' inType='win:UInt32' count='Nope'/>\n"                    /* 10 */
                     " <data name='bin' inType='win:Binary' length='s'/>\n"                      /* 11 */
                     " <data name='bin2' inType='win:Binary'/>\n"                                /* 12 */
                     " <data name='m' inType='win:UInt32' map='NoMap'/>\n"                       /* 13 */
                     " <data name='ok' inType='win:UInt32' count='1'/>\n"                        /* 14 */
                     " <data inType='win:UInt32'/>\n"                                            /* 15 */
                     " <data name='big' inType='win:UInt32' count='70000'/>\n"                   /* 16 */
                     "</template>\n"                                                             /* 17 */
                     "<template tid='deep'><struct name='s1'><struct name='s2'><struct name='s3'>\n" /* 18 */
                     "<struct name='s4'><struct name='s5'><data name='x' inType='win:UInt8'/>\n" /* 19 */
                     "</struct></struct></struct></struct></struct></template>\n"                /* 20 */
                     "<template tid='ok4'><struct name='s1'><struct name='s2'><struct name='s3'>\n" /* 21 */
                     "<struct name='s4'><data name='x' inType='win:UInt8'/>\n"                  /* 22 */
                     "</struct></struct></struct></struct></template>\n"                        /* 23 */
                     "</templates>\n"                                                            /* 24 */
                     "<events>\n"                                                                /* 25 */
                     "<event value='1' template='t' symbol='e1'/>\n"                             /* 26 */
                     "<event value='2' template='deep' symbol='e2'/>\n"                          /* 27 */
                     "<event value='3' template='nosuch' symbol='e3'/>\n"                        /* 28 */
                     "<event value='4' symbol='first'/>\n"                                       /* 29 */
                     "<event value='4' symbol='second'/>\n"                                      /* 30 */
                     "<event value='5' template='ok4' task='NoTask' opcode='NoOp' keywords='k9' level='NoLevel' channel='NoChan'/>\n" /* 31 */
                     "<event value='70000'/>\n"                                                  /* 32 */
                     "<event value='6' version='256'/>\n"                                        /* 33 */
                     "</events>\n");
    ETW_CHECK_INT(load_str(m, d, "warn.man", &np), ETW_OK);
    free(d);
    ETW_CHECK_INT(np, 1);
    ETW_CHECK_INT(etw_manifest_event_count(m), 5);
    ETW_CHECK(strstr(g.all, "warn.man:7: provider Warn: unknown inType \"win:Frobnicate\"") != NULL);
    ETW_CHECK(strstr(g.all, "Gadget") == NULL); /* once per provider */
    ETW_CHECK(strstr(g.all, "warn.man:8: provider Warn: unknown outType \"xs:nothing\"") != NULL);
    ETW_CHECK(strstr(g.all, "warn.man:10: template t: count \"Nope\" of arr names no earlier data item") != NULL);
    ETW_CHECK(strstr(g.all, "warn.man:11: template t: length \"s\" of bin is not a scalar integer") != NULL);
    ETW_CHECK(strstr(g.all, "warn.man:12: template t: binary bin2 has no length") != NULL);
    ETW_CHECK(strstr(g.all, "warn.man:13: template t: m uses map \"NoMap\", which is not defined") != NULL);
    ETW_CHECK(strstr(g.all, "warn.man:15: template t: item 9 has no name; called Field9") != NULL);
    ETW_CHECK(strstr(g.all, "warn.man:16: template t: count \"70000\" of big is not a number up to 65535") != NULL);
    ETW_CHECK(strstr(g.all, "warn.man:18: template deep nests structs deeper than 4 levels; skipped") != NULL);
    ETW_CHECK(strstr(g.all, "warn.man:27: provider Warn: event 2 version 0: template deep was skipped") != NULL);
    ETW_CHECK(strstr(g.all, "warn.man:28: provider Warn: event 3 version 0: template \"nosuch\" is not defined") != NULL);
    ETW_CHECK(strstr(g.all, "warn.man:30: provider Warn: event 4 version 0 is defined again (first at line 29)") != NULL);
    ETW_CHECK(strstr(g.all, "warn.man:31: provider Warn: event 5: unknown level \"NoLevel\"") != NULL);
    ETW_CHECK(strstr(g.all, "warn.man:31: provider Warn: event 5: unknown task \"NoTask\"") != NULL);
    ETW_CHECK(strstr(g.all, "warn.man:31: provider Warn: event 5: unknown opcode \"NoOp\"") != NULL);
    ETW_CHECK(strstr(g.all, "warn.man:31: provider Warn: event 5: unknown keyword \"k9\"") != NULL);
    ETW_CHECK(strstr(g.all, "warn.man:31: provider Warn: event 5: unknown channel \"NoChan\"") != NULL);
    ETW_CHECK(strstr(g.all, "warn.man:32: provider Warn: event value \"70000\" is not a number up to 65535; skipped") != NULL);
    ETW_CHECK(strstr(g.all, "warn.man:33: provider Warn: event 6: version \"256\"") != NULL);
    ETW_CHECK_INT(g.errors, g.n); /* all warnings carry a failure status */
    ETW_CHECK_INT(etw_manifest_problem_count(m), (uint64_t)g.n);

    const etw_schema *s = resolve(m, c, &TEST_GUID, 1, 0);
    ETW_CHECK(s != NULL);
    if (s) {
        ETW_CHECK_INT(s->prop_count, 10);
        ETW_CHECK_INT(prop(s, "a")->in_type, 0);
        ETW_CHECK_INT(prop(s, "b")->out_type, 0);
        ETW_CHECK_INT(prop(s, "arr")->flags, 0); /* unknown count: scalar */
        ETW_CHECK_INT(prop(s, "bin")->flags, 0); /* no length: the decoder marks it */
        ETW_CHECK(prop(s, "m")->map == NULL);
        ETW_CHECK_INT(prop(s, "ok")->flags, ETW_PROP_COUNT_FIXED);
        ETW_CHECK_INT(prop(s, "ok")->count, 1);
        ETW_CHECK(prop(s, "Field9") != NULL);
        ETW_CHECK_INT(prop(s, "big")->flags, 0);
    }
    s = resolve(m, c, &TEST_GUID, 2, 0);
    ETW_CHECK(s && s->prop_count == 0 && strcmp(s->event_name, "e2") == 0);
    s = resolve(m, c, &TEST_GUID, 3, 0);
    ETW_CHECK(s && s->prop_count == 0);
    s = resolve(m, c, &TEST_GUID, 4, 0);
    ETW_CHECK(s && strcmp(s->event_name, "second") == 0);
    s = resolve(m, c, &TEST_GUID, 5, 0);
    ETW_CHECK(s != NULL);
    if (s) {
        ETW_CHECK_INT(s->prop_count, 5); /* four nested structs are accepted */
        ETW_CHECK_STR(s->event_name, "NoTask"); /* an unknown task keeps its name */
        ETW_CHECK_INT(s->task, 0);
        ETW_CHECK_INT(s->opcode, 0);
        ETW_CHECK_INT(etw_schema_validate(s, NULL), ETW_OK);
    }
    ETW_CHECK(resolve(m, c, &TEST_GUID, 6, 0) == NULL);
    etw_cache_free(c);
    etw_manifest_set_free(m);

    /* without on_diag the problems are only counted */
    m = new_set(NULL);
    d = provider_doc("bad", "X", "");
    ETW_CHECK_INT(load_str(m, d, "q.man", &np), ETW_OK);
    ETW_CHECK_INT(np, 0);
    ETW_CHECK_INT(etw_manifest_problem_count(m), 1); /* the bad guid; "no provider loaded" is a warning */
    free(d);
    etw_manifest_set_free(m);
}

/* ---- replacement ---------------------------------------------------------------- */

static void test_replacement(void) {
    diags g;
    etw_manifest_set *m = new_set(&g);
    etw_cache *c;
    ETW_CHECK_INT(etw_cache_new(&c, NULL), ETW_OK);
    etw_manifest_set_cache(m, c);
    char *a = provider_doc(PROV_GUID, "Rep",
                           "<templates><template tid='t'><data name='one' inType='win:UInt32'/></template></templates>\n"
                           "<events><event value='1' template='t' symbol='e'/><event value='2' symbol='f'/></events>\n");
    char *b = provider_doc(PROV_GUID, "Rep",
                           "<templates><template tid='t'><data name='one' inType='win:UInt32'/>"
                           "<data name='two' inType='win:UInt64'/></template></templates>\n"
                           "<events><event value='1' template='t' symbol='e'/></events>\n");
    ETW_CHECK_INT(load_str(m, a, "first.man", NULL), ETW_OK);
    ETW_CHECK_INT(etw_manifest_event_count(m), 2);
    const etw_schema *s1 = resolve(m, c, &TEST_GUID, 1, 0);
    ETW_CHECK(s1 && s1->prop_count == 1);
    uint8_t key[ETW_DESCRIPTOR_KEY_SIZE];
    etw_key_descriptor(key, &TEST_GUID, 1, 0);
    uint64_t h = etw_cache_hash(key, sizeof key);
    ETW_CHECK(etw_cache_find(c, ETW_SOURCE_MANIFEST, 8, key, sizeof key, h) == s1);

    ETW_CHECK_INT(load_str(m, b, "second.man", NULL), ETW_OK);
    ETW_CHECK_INT(g.n, 1);
    ETW_CHECK_INT(g.last_status, ETW_OK);
    ETW_CHECK(strstr(g.last, "second.man:4: provider Rep {11111111-2222-3333-4444-555555555555} replaces the one "
                             "loaded from first.man:4") == g.last);
    ETW_CHECK_INT(etw_manifest_provider_count(m), 1);
    ETW_CHECK_INT(etw_manifest_event_count(m), 1);
    /* etw_cache_forget_provider dropped the provider's cached keys */
    ETW_CHECK(etw_cache_find(c, ETW_SOURCE_MANIFEST, 8, key, sizeof key, h) == NULL);
    /* resolving (as the decoder does after a miss) gives the new layout */
    const etw_schema *s2 = NULL;
    const char *why = NULL;
    etw_source src = etw_manifest_as_source(m);
    etw_event ev;
    memset(&ev, 0, sizeof ev);
    ev.pointer_size = 8;
    ETW_CHECK_INT(src.resolve(src.ctx, c, &ev, key, sizeof key, h, &s2, &why), ETW_OK);
    ETW_CHECK(s2 && s2->prop_count == 2 && s2 != s1);
    ETW_CHECK(s1->prop_count == 1); /* the old schema stays readable */
    ETW_CHECK(resolve(m, c, &TEST_GUID, 2, 0) == NULL); /* gone with the old manifest */
    /* a provider repeated within one document: the later wins */
    char *both = malloc(strlen(a) + strlen(b));
    char *cut = strstr(a, "</events></instrumentation>");
    memcpy(both, a, (size_t)(cut - a));
    char *pb = strstr(b, "<provider");
    char *pe = strstr(b, "</events></instrumentation>");
    memcpy(both + (cut - a), pb, (size_t)(pe - pb));
    strcpy(both + (cut - a) + (pe - pb), cut);
    etw_manifest_set_cache(m, NULL);
    ETW_CHECK_INT(load_str(m, both, "both.man", NULL), ETW_OK);
    ETW_CHECK_INT(etw_manifest_provider_count(m), 1);
    ETW_CHECK_INT(etw_manifest_event_count(m), 1);
    ETW_CHECK(strstr(g.all, "replaces the one loaded from both.man:4") != NULL);
    /* many reloads: replaced documents are freed (ASan/valgrind would see leaks) */
    for (int i = 0; i < 20; i++) ETW_CHECK_INT(load_str(m, i & 1 ? a : b, "loop.man", NULL), ETW_OK);
    ETW_CHECK_INT(etw_manifest_provider_count(m), 1);
    free(both);
    free(a);
    free(b);
    etw_cache_free(c);
    etw_manifest_set_free(m);
}

/* A directory: every *.man / *.xml in name order (later files win). */
static void test_directory(void) {
    char dir[] = "/tmp/etw_manifest_test_XXXXXX";
    if (!mkdtemp(dir)) {
        ETW_CHECK(0);
        return;
    }
    char path[256];
    char *a = provider_doc(PROV_GUID, "DirA", "<events><event value='1' symbol='fromA'/></events>\n");
    char *b = provider_doc(PROV_GUID, "DirB", "<events><event value='1' symbol='fromB'/></events>\n");
    const char *files[3] = {"a.man", "b.XML", "c.txt"};
    const char *texts[3] = {a, b, "not a manifest"};
    for (int i = 0; i < 3; i++) {
        snprintf(path, sizeof path, "%s/%s", dir, files[i]);
        FILE *f = fopen(path, "wb");
        if (f) {
            fputs(texts[i], f);
            fclose(f);
        }
    }
    diags g;
    etw_manifest_set *m = new_set(&g);
    uint32_t np = 0;
    ETW_CHECK_INT(etw_manifest_load_path(m, dir, &np), ETW_OK);
    ETW_CHECK_INT(np, 2);
    ETW_CHECK_INT(etw_manifest_provider_count(m), 1);
    etw_cache *c;
    ETW_CHECK_INT(etw_cache_new(&c, NULL), ETW_OK);
    const etw_schema *s = resolve(m, c, &TEST_GUID, 1, 0);
    ETW_CHECK(s && strcmp(s->event_name, "fromB") == 0 && strcmp(s->provider_name, "DirB") == 0);
    ETW_CHECK(strstr(g.last, "b.XML:4: provider DirB") != NULL);
    etw_cache_free(c);
    etw_manifest_set_free(m);
    for (int i = 0; i < 3; i++) {
        snprintf(path, sizeof path, "%s/%s", dir, files[i]);
        unlink(path);
    }
    rmdir(dir);
    free(a);
    free(b);
}

/* ---- allocation failure ---------------------------------------------------------- */

typedef struct fail_alloc {
    long live, calls, fail_at;
} fail_alloc;

static void *fa_alloc(void *ctx, size_t n) {
    fail_alloc *f = ctx;
    if (f->calls++ == f->fail_at) return NULL;
    void *p = malloc(n);
    if (p) f->live++;
    return p;
}

static void fa_free(void *ctx, void *p) {
    fail_alloc *f = ctx;
    if (p) f->live--;
    free(p);
}

static void test_alloc_failure(void) {
    char *doc = provider_doc(PROV_GUID, "Alloc",
                             "<maps><valueMap name='M'><map value='1' message='a'/></valueMap></maps>"
                             "<templates><template tid='t'><data name='n' inType='win:UInt32' map='M'/>"
                             "<struct name='s' count='n'><data name='v' inType='win:UInt8'/></struct>"
                             "</template></templates>\n"
                             "<events><event value='1' template='t' symbol='e'/></events>\n");
    int nomem = 0, ok = 0, bad = 0;
    for (long k = 0; k < 400; k++) {
        fail_alloc f = {0, 0, k};
        etw_allocator al = {fa_alloc, fa_free, &f};
        etw_manifest_options o;
        memset(&o, 0, sizeof o);
        o.allocator = &al;
        etw_manifest_set *m = NULL;
        etw_status st = etw_manifest_set_new(&m, &o);
        if (st == ETW_OK) {
            st = load_str(m, doc, "alloc.man", NULL);
            if (st == ETW_OK) {
                ok++;
                if (etw_manifest_event_count(m) != 1) bad++;
                /* load again: replacement under failure */
                st = load_str(m, doc, "alloc.man", NULL);
                if (st != ETW_OK && st != ETW_E_NOMEM) bad++;
                if (etw_manifest_provider_count(m) != 1) bad++;
            } else if (st == ETW_E_NOMEM) {
                nomem++;
                if (etw_manifest_provider_count(m) != 0) bad++;
            } else {
                bad++;
            }
            etw_manifest_set_free(m);
        } else if (st != ETW_E_NOMEM) {
            bad++;
        }
        if (f.live != 0) bad++;
    }
    ETW_CHECK_INT(bad, 0);
    ETW_CHECK(nomem > 5);
    ETW_CHECK(ok > 0);
    free(doc);
}

/* ---- end to end: HTTP_Server.etl ---------------------------------------------------- */

static int decode_all(const etw_schema *s, const etw_event *ev, int *unsupported, uint32_t *remaining,
                      etw_value *url) {
    static uint64_t refs[1024];
    etw_decode_cursor cur;
    if (etw_decode_begin(&cur, s, ev, refs, 1024) != ETW_OK) return -1;
    etw_value v;
    etw_status st;
    int n = 0;
    while ((st = etw_decode_next(&cur, &v)) == ETW_OK) {
        n++;
        if (v.kind == ETW_VALUE_UNSUPPORTED) (*unsupported)++;
        if (url && v.kind == ETW_VALUE_SCALAR && strcmp(v.name, "Url") == 0) *url = v;
    }
    *remaining = etw_decode_remaining(&cur);
    return st == ETW_END ? n : -1;
}

static void test_http_etl(void) {
    etw_manifest_set *m = new_set(NULL);
    ETW_CHECK_INT(etw_manifest_load_path(m, ETW_TEST_DATA_DIR "/HTTP_Server.man", NULL), ETW_OK);
    etw_cache *c;
    ETW_CHECK_INT(etw_cache_new(&c, NULL), ETW_OK);
    etw_manifest_set_cache(m, c);
    etw_source src = etw_manifest_as_source(m);
    etw_reader *r = NULL;
    ETW_CHECK_INT(etw_reader_open_file(&r, ETW_TEST_DATA_DIR "/HTTP_Server.etl", NULL), ETW_OK);
    if (!r) {
        etw_cache_free(c);
        etw_manifest_set_free(m);
        return;
    }
    etw_event ev;
    int events = 0, resolved = 0, failed = 0, decode_errors = 0, unsupported = 0, leftovers = 0;
    int ev2 = 0, url_ok = 0;
    while (etw_reader_next(r, &ev) == ETW_OK) {
        if (!etw_guid_equal(&ev.provider, &HTTP_GUID_INIT)) continue;
        events++;
        uint8_t key[ETW_DESCRIPTOR_KEY_SIZE];
        etw_key_descriptor(key, &ev.provider, ev.id, ev.version);
        uint64_t h = etw_cache_hash(key, sizeof key);
        uint8_t w = ev.pointer_size == 4 ? 4 : 8;
        const etw_schema *s = etw_cache_find(c, src.kind, w, key, sizeof key, h);
        const char *why = NULL;
        if (!s && src.resolve(src.ctx, c, &ev, key, sizeof key, h, &s, &why) != ETW_OK) {
            if (failed++ < 5) fprintf(stderr, "event %u v%u: %s\n", ev.id, ev.version, why ? why : "not found");
            continue;
        }
        resolved++;
        int uns = 0;
        uint32_t rem = 0;
        etw_value url;
        memset(&url, 0, sizeof url);
        if (decode_all(s, &ev, &uns, &rem, ev.id == 2 ? &url : NULL) < 0) decode_errors++;
        if (uns) unsupported++;
        if (rem) leftovers++;
        if (ev.id == 2) {
            ev2++;
            /* FORMATS.md 10: Url is the last field and has no terminating NUL */
            if (url.data && url.size > 0 && url.data + url.size == ev.user_data + ev.user_data_len) url_ok++;
        }
    }
    etw_reader_close(r);
    ETW_CHECK_INT(events, 2041);
    ETW_CHECK_INT(resolved, 2041);
    ETW_CHECK_INT(failed, 0);
    ETW_CHECK_INT(decode_errors, 0);
    ETW_CHECK_INT(unsupported, 0);
    ETW_CHECK_INT(leftovers, 0);
    ETW_CHECK(ev2 > 0);
    ETW_CHECK_INT(url_ok, ev2);
    etw_cache_free(c);
    etw_manifest_set_free(m);
}

int main(void) {
    ETW_RUN(test_http_load);
    ETW_RUN(test_source_interface);
    ETW_RUN(test_clr);
    ETW_RUN(test_resolve_all);
    ETW_RUN(test_naming);
    ETW_RUN(test_types_and_structure);
    ETW_RUN(test_malformed);
    ETW_RUN(test_truncated);
    ETW_RUN(test_warnings);
    ETW_RUN(test_replacement);
    ETW_RUN(test_directory);
    ETW_RUN(test_alloc_failure);
    ETW_RUN(test_http_etl);
    return ETW_TEST_DONE();
}
