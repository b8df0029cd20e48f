/* test_kernel.c - the kernel (MOF) schema source (src/source/etw_kernel_source.c)
 * and the class families it serves.
 *
 * Payloads are written here field by field at the offsets
 * shared/docs/kernel/kernel-mof.md section 4.2 gives for 4- and 8-byte
 * pointers (not from the library's tables), then decoded through an
 * etw_decoder: names, values, pid/tid, versions newer and older than the
 * known ones, short, long and garbage payloads. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "etw_test.h"
#include "etw_test_builder.h"
#include "etwdecode/etw_decode.h"
#include "etwdecode/etw_decoder.h"
#include "etwdecode/etw_json.h"
#include "etwdecode/etw_reader.h"
#include "etl/etw_record.h"
#include "source/etw_kernel_source.h"

/* ---- helpers ------------------------------------------------------------- */

typedef struct diags {
    int n;
    char last[256];
    etw_status last_status;
} diags;

static void on_diag(void *ctx, const etw_diag *d) {
    diags *g = ctx;
    g->n++;
    g->last_status = d->status;
    snprintf(g->last, sizeof g->last, "%s", d->message);
}

static etw_decoder *new_decoder(diags *g) {
    etw_decoder_options o;
    memset(&o, 0, sizeof o);
    o.on_diag = on_diag;
    o.diag_ctx = g;
    etw_decoder *d = NULL;
    ETW_CHECK(etw_decoder_new(&d, &o) == ETW_OK);
    return d;
}

/* A kernel record as the reader makes it: SYSTEM header (PERFINFO when
 * perfinfo), the family's class GUID, event type, class version. */
static etw_event kernel_event(const etw_guid *cls, uint8_t type, uint8_t version, uint8_t ptr,
                              const etb_buf *payload, int perfinfo) {
    etw_event ev;
    memset(&ev, 0, sizeof ev);
    ev.form = perfinfo ? ETW_FORM_PERFINFO : ETW_FORM_SYSTEM;
    ev.flags = ETW_EVENT_FLAG_CLASSIC_HEADER | (ptr == 4 ? ETW_EVENT_FLAG_32_BIT_HEADER : ETW_EVENT_FLAG_64_BIT_HEADER);
    ev.pointer_size = ptr;
    ev.provider = *cls;
    ev.opcode = type;
    ev.version = version;
    ev.pid = perfinfo ? ETW_NO_ID : 1111;
    ev.tid = perfinfo ? ETW_NO_ID : 2222;
    ev.user_data = payload->data;
    ev.user_data_len = (uint32_t)payload->len;
    return ev;
}

/* The decoded top-level fields of one event. */
#define MAXF 256
typedef struct fields {
    int n;
    const char *name[MAXF];
    etw_value v[MAXF];
    int unsupported;
    uint32_t remaining;
} fields;

static int decode_fields(etw_decoder *d, const etw_event *ev, const etw_schema **sp, fields *f) {
    memset(f, 0, sizeof *f);
    const etw_schema *s = NULL;
    const char *why = NULL;
    if (etw_decoder_resolve(d, ev, &s, &why) != ETW_OK) return 0;
    if (sp) *sp = s;
    etw_decode_cursor c;
    if (etw_decoder_begin(d, ev, s, &c) != ETW_OK) return 0;
    etw_value v;
    while (etw_decode_next(&c, &v) == ETW_OK) {
        if (v.kind == ETW_VALUE_UNSUPPORTED) f->unsupported++;
        if (v.depth == 0 && f->n < MAXF && (v.kind == ETW_VALUE_SCALAR || v.kind == ETW_VALUE_UNSUPPORTED)) {
            f->name[f->n] = v.name;
            f->v[f->n++] = v;
        }
    }
    f->remaining = etw_decode_remaining(&c);
    return 1;
}

static const etw_value *field(const fields *f, const char *name) {
    for (int i = 0; i < f->n; i++)
        if (!strcmp(f->name[i], name)) return &f->v[i];
    return NULL;
}

static uint64_t u64_of(const fields *f, const char *name) {
    const etw_value *v = field(f, name);
    return v && v->kind == ETW_VALUE_SCALAR ? etw_value_u64(v) : 0xDEADDEADDEADull;
}

/* A string field as UTF-8 (ASCII test strings only). */
static const char *str_of(const fields *f, const char *name, char *buf, size_t n) {
    const etw_value *v = field(f, name);
    buf[0] = 0;
    if (!v || v->kind != ETW_VALUE_SCALAR) return "(missing)";
    size_t o = 0;
    if (v->in_type == ETW_INTYPE_UNICODESTRING) {
        for (uint32_t i = 0; i + 1 < v->size && o + 1 < n; i += 2) buf[o++] = (char)v->data[i];
    } else {
        for (uint32_t i = 0; i < v->size && o + 1 < n; i++) buf[o++] = (char)v->data[i];
    }
    buf[o] = 0;
    return buf;
}

static void put_ptr(etb_buf *b, uint8_t ptr, uint64_t v) {
    if (ptr == 4)
        etb_u32(b, (uint32_t)v);
    else
        etb_u64(b, v);
}

/* Zero-fill b up to offset off: each test writes a field where the doc says
 * it is, and checks that the writer got there at exactly that offset. */
static void at(etb_buf *b, size_t off) {
    ETW_CHECK_INT(b->len, off);
    while (b->len < off) etb_u8(b, 0);
}

static const etw_guid *family_guid(const char *group) {
    for (uint32_t i = 0; i < etw_kernel_family_count; i++)
        if (!strcmp(etw_kernel_families[i]->group, group)) return &etw_kernel_families[i]->guid;
    return NULL;
}

/* TOKEN_USER (2 pointers) + S-1-5-18 */
static void put_sid(etb_buf *b, uint8_t ptr) {
    put_ptr(b, ptr, 0xffffa001ed2b50ull);
    put_ptr(b, ptr, 0);
    static const uint32_t sub[] = {18};
    etb_sid(b, 5, sub, 1);
}

/* ---- Process ------------------------------------------------------------- */

/* Process_V4_TypeGroup1 (offsets ptr=4 / ptr=8 from kernel-mof.md). */
static void build_process_v4(etb_buf *b, uint8_t ptr, int v5) {
    int p8 = ptr == 8;
    etb_reset(b);
    at(b, 0);
    put_ptr(b, ptr, p8 ? 0xfffffa8300cfb380ull : 0x85cfb380u); /* UniqueProcessKey */
    at(b, p8 ? 8 : 4);
    etb_u32(b, 3676); /* ProcessId */
    at(b, p8 ? 12 : 8);
    etb_u32(b, 3508); /* ParentId */
    at(b, p8 ? 16 : 12);
    etb_u32(b, 1); /* SessionId */
    at(b, p8 ? 20 : 16);
    etb_i32(b, 259); /* ExitStatus */
    at(b, p8 ? 24 : 20);
    put_ptr(b, ptr, 0x558fb000); /* DirectoryTableBase */
    at(b, p8 ? 32 : 24);
    etb_u32(b, 4); /* Flags */
    at(b, p8 ? 36 : 28);
    put_sid(b, ptr);
    etb_ansi(b, "Test.x64.exe");
    etb_utf16(b, "Test.x64.exe /x");
    etb_utf16(b, "Pkg");
    etb_utf16(b, "App");
    if (v5) etb_u64(b, 0x01d665a1c2b3d4e5ull); /* ExitTime */
}

static void test_process_v4_both_widths(void) {
    diags g = {0};
    etw_decoder *d = new_decoder(&g);
    etb_buf b;
    etb_init(&b);
    char s[64];
    for (uint8_t ptr = 4; ptr <= 8; ptr += 4) {
        build_process_v4(&b, ptr, 0);
        etw_event ev = kernel_event(family_guid("Process"), 1, 4, ptr, &b, 0);
        fields f;
        const etw_schema *sc = NULL;
        ETW_CHECK(decode_fields(d, &ev, &sc, &f));
        if (!sc) continue;
        ETW_CHECK_STR(sc->event_name, "Process/Start");
        ETW_CHECK_STR(sc->provider_name, "Windows Kernel");
        ETW_CHECK_INT(f.n, 12);
        ETW_CHECK_INT(f.unsupported, 0);
        ETW_CHECK_INT(f.remaining, 0);
        ETW_CHECK_INT(u64_of(&f, "UniqueProcessKey"), ptr == 8 ? 0xfffffa8300cfb380ull : 0x85cfb380u);
        ETW_CHECK_INT(u64_of(&f, "ProcessId"), 3676);
        ETW_CHECK_INT(u64_of(&f, "ParentId"), 3508);
        ETW_CHECK_INT(u64_of(&f, "SessionId"), 1);
        ETW_CHECK_INT(u64_of(&f, "ExitStatus"), 259);
        ETW_CHECK_INT(u64_of(&f, "DirectoryTableBase"), 0x558fb000);
        ETW_CHECK_INT(u64_of(&f, "Flags"), 4);
        ETW_CHECK_INT(field(&f, "UserSID")->size, 2 * ptr + 12);
        ETW_CHECK_STR(str_of(&f, "ImageFileName", s, sizeof s), "Test.x64.exe");
        ETW_CHECK_STR(str_of(&f, "CommandLine", s, sizeof s), "Test.x64.exe /x");
        ETW_CHECK_STR(str_of(&f, "PackageFullName", s, sizeof s), "Pkg");
        ETW_CHECK_STR(str_of(&f, "ApplicationId", s, sizeof s), "App");
        uint32_t pid = 0, tid = 0;
        etw_decoder_event_ids(d, &ev, sc, &pid, &tid);
        ETW_CHECK_INT(pid, 3676); /* the payload's process, not the header's 1111 */
        ETW_CHECK_INT(tid, ETW_NO_ID);
        ETW_CHECK(etw_decoder_payload_problem(d, &ev, sc, 0) == NULL);
    }
    ETW_CHECK_INT(g.n, 0);
    etb_free(&b);
    etw_decoder_free(d);
}

/* Process_V0 (pointer-sized ids) and V1 (PageDirectoryBase first). */
static void test_process_v0_v1(void) {
    diags g = {0};
    etw_decoder *d = new_decoder(&g);
    etb_buf b;
    etb_init(&b);
    char s[64];
    for (uint8_t ptr = 4; ptr <= 8; ptr += 4) {
        int p8 = ptr == 8;
        etb_reset(&b);
        put_ptr(&b, ptr, 0x1a4);
        at(&b, p8 ? 8 : 4);
        put_ptr(&b, ptr, 0x10);
        at(&b, p8 ? 16 : 8);
        etb_u32(&b, 0); /* no user: the 4-byte Sid form */
        etb_ansi(&b, "smss.exe");
        etw_event ev = kernel_event(family_guid("Process"), 3, 0, ptr, &b, 0);
        fields f;
        const etw_schema *sc = NULL;
        ETW_CHECK(decode_fields(d, &ev, &sc, &f));
        ETW_CHECK_INT(u64_of(&f, "ProcessId"), 0x1a4);
        ETW_CHECK_INT(u64_of(&f, "ParentId"), 0x10);
        ETW_CHECK_INT(field(&f, "UserSID") ? field(&f, "UserSID")->size : 0, 4);
        ETW_CHECK_STR(str_of(&f, "ImageFileName", s, sizeof s), "smss.exe");
        uint32_t pid = 0, tid = 0;
        etw_decoder_event_ids(d, &ev, sc, &pid, &tid);
        ETW_CHECK_INT(pid, 0x1a4);

        etb_reset(&b);
        put_ptr(&b, ptr, 0x187000); /* PageDirectoryBase */
        at(&b, p8 ? 8 : 4);
        etb_u32(&b, 456);
        at(&b, p8 ? 12 : 8);
        etb_u32(&b, 4);
        at(&b, p8 ? 16 : 12);
        etb_u32(&b, 0);
        at(&b, p8 ? 20 : 16);
        etb_i32(&b, -1);
        at(&b, p8 ? 24 : 20);
        put_sid(&b, ptr);
        etb_ansi(&b, "a");
        ev = kernel_event(family_guid("Process"), 2, 1, ptr, &b, 0);
        ETW_CHECK(decode_fields(d, &ev, &sc, &f));
        ETW_CHECK_STR(sc ? sc->event_name : "", "Process/Stop");
        ETW_CHECK_INT(u64_of(&f, "PageDirectoryBase"), 0x187000);
        ETW_CHECK_INT(u64_of(&f, "ProcessId"), 456);
        ETW_CHECK_INT(etw_value_i64(field(&f, "ExitStatus")), -1);
        ETW_CHECK_STR(str_of(&f, "ImageFileName", s, sizeof s), "a");
        ETW_CHECK_INT(f.remaining, 0);
    }
    etb_free(&b);
    etw_decoder_free(d);
}

/* PerfCtr v2: SizeT fields follow the pointer width. */
static void test_process_perfctr(void) {
    diags g = {0};
    etw_decoder *d = new_decoder(&g);
    etb_buf b;
    etb_init(&b);
    for (uint8_t ptr = 4; ptr <= 8; ptr += 4) {
        etb_reset(&b);
        etb_u32(&b, 3676);
        etb_u32(&b, 7);
        etb_u32(&b, 9);
        etb_u32(&b, 0);
        at(&b, 16);
        for (int i = 0; i < 11; i++) put_ptr(&b, ptr, 0x1000u * (i + 1));
        at(&b, ptr == 8 ? 104 : 60);
        etw_event ev = kernel_event(family_guid("Process"), 33, 2, ptr, &b, 1);
        fields f;
        const etw_schema *sc = NULL;
        ETW_CHECK(decode_fields(d, &ev, &sc, &f));
        ETW_CHECK_STR(sc ? sc->event_name : "", "Process/PerfCtrRundown");
        ETW_CHECK_INT(u64_of(&f, "PageFaultCount"), 7);
        ETW_CHECK_INT(u64_of(&f, "PeakVirtualSize"), 0x1000);
        ETW_CHECK_INT(u64_of(&f, "PrivatePageCount"), 0xb000);
        ETW_CHECK_INT(f.remaining, 0);
        uint32_t pid = 0, tid = 0;
        etw_decoder_event_ids(d, &ev, sc, &pid, &tid);
        ETW_CHECK_INT(pid, 3676);
        ETW_CHECK_INT(tid, ETW_NO_ID);
    }
    etb_free(&b);
    etw_decoder_free(d);
}

/* ---- versions and hostile payloads --------------------------------------- */

static void test_newer_version(void) {
    diags g = {0};
    etw_decoder *d = new_decoder(&g);
    etb_buf b;
    etb_init(&b);
    /* Process v9 Start: the v4 fields, then 6 bytes no known version has */
    build_process_v4(&b, 8, 0);
    static const uint8_t extra[] = {1, 2, 3, 4, 5, 6};
    etb_bytes(&b, extra, sizeof extra);
    etw_event ev = kernel_event(family_guid("Process"), 1, 9, 8, &b, 0);
    fields f;
    const etw_schema *sc = NULL;
    ETW_CHECK(decode_fields(d, &ev, &sc, &f));
    ETW_CHECK_INT(u64_of(&f, "ProcessId"), 3676);
    const etw_value *x = field(&f, "ExtraData");
    ETW_CHECK(x && x->size == 6 && !memcmp(x->data, extra, 6));
    ETW_CHECK_INT(f.remaining, 0);
    ETW_CHECK_INT(g.n, 1);
    ETW_CHECK(strstr(g.last, "version 9") != NULL);
    /* nothing is lost (the known prefix and the rest as ExtraData): a warning,
     * status ETW_OK, not a problem (it would make etwdump exit 1) */
    ETW_CHECK_INT(g.last_status, ETW_OK);
    ETW_CHECK_INT(etw_decoder_stats_get(d)->warnings, 1);
    ETW_CHECK_INT(etw_decoder_stats_get(d)->problems, 0);
    /* the same (class, version) again, another type: no second warning */
    ev.opcode = 3;
    ETW_CHECK(decode_fields(d, &ev, &sc, &f));
    ETW_CHECK_INT(g.n, 1);
    /* no extra bytes: no ExtraData field */
    build_process_v4(&b, 8, 0);
    ev = kernel_event(family_guid("Process"), 1, 9, 8, &b, 0);
    ETW_CHECK(decode_fields(d, &ev, &sc, &f));
    ETW_CHECK(field(&f, "ExtraData") == NULL);
    ETW_CHECK_INT(f.n, 12);
    /* Defunct v5 (ExitTime) is known: no warning, no ExtraData */
    build_process_v4(&b, 8, 1);
    ev = kernel_event(family_guid("Process"), 39, 5, 8, &b, 0);
    ETW_CHECK(decode_fields(d, &ev, &sc, &f));
    ETW_CHECK_STR(sc ? sc->event_name : "", "Process/Defunct");
    ETW_CHECK_INT(u64_of(&f, "ExitTime"), 0x01d665a1c2b3d4e5ull);
    ETW_CHECK(field(&f, "ExtraData") == NULL);
    ETW_CHECK_INT(g.n, 1);
    ETW_CHECK_INT(etw_decoder_stats_get(d)->warnings, 1);
    ETW_CHECK_INT(etw_decoder_stats_get(d)->problems, 0);
    etb_free(&b);
    etw_decoder_free(d);
}

static void test_unknown_and_short(void) {
    diags g = {0};
    etw_decoder *d = new_decoder(&g);
    etb_buf b;
    etb_init(&b);
    etb_u32(&b, 1);
    const etw_schema *sc = NULL;
    const char *why = NULL;
    /* an event type the family does not list */
    etw_event ev = kernel_event(family_guid("Process"), 200, 2, 8, &b, 0);
    ETW_CHECK(etw_decoder_resolve(d, &ev, &sc, &why) == ETW_E_NOT_FOUND);
    ETW_CHECK(why && strstr(why, "no MOF class") != NULL);
    /* an unknown class GUID */
    etw_guid other = etb_make_guid(0x12345678, 1, 2, 0x0102030405060708ull);
    ev = kernel_event(&other, 1, 0, 8, &b, 0);
    ETW_CHECK(etw_decoder_resolve(d, &ev, &sc, &why) == ETW_E_NOT_FOUND);
    /* a short payload: fields as far as they go, a problem named */
    etb_reset(&b);
    etb_u64(&b, 0xfffffa8300cfb380ull);
    etb_u32(&b, 3676);
    ev = kernel_event(family_guid("Process"), 1, 4, 8, &b, 0);
    fields f;
    ETW_CHECK(decode_fields(d, &ev, &sc, &f));
    ETW_CHECK(f.unsupported >= 1);
    const char *p = etw_decoder_payload_problem(d, &ev, sc, 0);
    ETW_CHECK(p && strstr(p, "shorter") && strstr(p, "Process_V4_TypeGroup1"));
    uint32_t pid = 0, tid = 0;
    etw_decoder_event_ids(d, &ev, sc, &pid, &tid);
    ETW_CHECK_INT(pid, 3676);
    /* too short to hold ProcessId: the header's pid */
    etb_reset(&b);
    etb_u32(&b, 7);
    ev = kernel_event(family_guid("Process"), 1, 4, 8, &b, 0);
    ETW_CHECK(decode_fields(d, &ev, &sc, &f));
    etw_decoder_event_ids(d, &ev, sc, &pid, &tid);
    ETW_CHECK_INT(pid, 1111);
    /* garbage of every length: never a crash, always a bounded walk */
    uint8_t junk[700];
    uint32_t x = 12345;
    for (size_t i = 0; i < sizeof junk; i++) {
        x = x * 1103515245u + 12345u;
        junk[i] = (uint8_t)(x >> 16);
    }
    for (uint32_t len = 0; len < sizeof junk; len += 7) {
        for (uint8_t type = 0; type < 64; type++) {
            etb_reset(&b);
            etb_bytes(&b, junk, len);
            ev = kernel_event(family_guid("Process"), type, (uint8_t)(len % 7), (len & 8) ? 4 : 8, &b, len & 16);
            if (decode_fields(d, &ev, &sc, &f)) {
                ETW_CHECK(f.remaining <= len);
                etw_decoder_event_ids(d, &ev, sc, &pid, &tid);
                (void)etw_decoder_payload_problem(d, &ev, sc, 0);
            }
        }
    }
    etb_free(&b);
    etw_decoder_free(d);
}

/* One JSON line as a C string (lines are not NUL-terminated). */
static const char *json_line(etw_json *j, const etw_event *ev) {
    static char buf[8192];
    const char *line;
    size_t len;
    buf[0] = 0;
    if (etw_json_event(j, NULL, ev, &line, &len) != ETW_OK) return buf;
    if (len >= sizeof buf) len = sizeof buf - 1;
    memcpy(buf, line, len);
    buf[len] = 0;
    return buf;
}

/* The JSON line: the decoder's pid/tid, an error and raw for a short payload. */
static void test_json(void) {
    diags g = {0};
    etw_decoder *d = new_decoder(&g);
    etw_json_options jo;
    memset(&jo, 0, sizeof jo);
    jo.decoder = d;
    etw_json *j = NULL;
    ETW_CHECK(etw_json_new(&j, NULL, &jo) == ETW_OK);
    etb_buf b;
    etb_init(&b);
    build_process_v4(&b, 8, 0);
    etw_event ev = kernel_event(family_guid("Process"), 3, 4, 8, &b, 0);
    const char *line = json_line(j, &ev);
    ETW_CHECK(strstr(line, "\"event\":\"Process/DCStart\"") != NULL);
    /* the DCStart names its process (ImageFileName) */
    ETW_CHECK(strstr(line, "\"pid\":3676,\"process\":\"Test.x64.exe\",\"tid\":-1,") != NULL);
    ETW_CHECK(strstr(line, "\"ProcessId\":3676") != NULL);
    ETW_CHECK(strstr(line, "\"error\"") == NULL && strstr(line, "\"raw\"") == NULL);
    etb_reset(&b);
    etb_u32(&b, 0xabcdef01u);
    ev = kernel_event(family_guid("Process"), 3, 4, 8, &b, 0);
    line = json_line(j, &ev);
    ETW_CHECK(strstr(line, "\"error\":\"payload of 4 bytes is shorter") != NULL);
    ETW_CHECK(strstr(line, "\"raw\":\"01efcdab\"") != NULL);
    /* an unknown type keeps the family's names */
    ev = kernel_event(family_guid("Process"), 99, 2, 8, &b, 0);
    line = json_line(j, &ev);
    ETW_CHECK(strstr(line, "\"provider\":\"Windows Kernel\"") != NULL);
    ETW_CHECK(strstr(line, "\"event\":\"Process/Opcode(99)\"") != NULL);
    ETW_CHECK(strstr(line, "\"raw\":\"01efcdab\"") != NULL);
    etb_free(&b);
    etw_json_free(j);
    etw_decoder_free(d);
}


/* ---- Thread -------------------------------------------------------------- */

/* Thread_V3_TypeGroup1 (offsets from kernel-mof.md), optionally + ThreadName. */
static void build_thread_v3(etb_buf *b, uint8_t ptr, uint32_t pid, uint32_t tid, const char *name) {
    int p8 = ptr == 8;
    etb_reset(b);
    etb_u32(b, pid);
    at(b, 4);
    etb_u32(b, tid);
    at(b, 8);
    put_ptr(b, ptr, 0xfffff88004e85000ull & (p8 ? ~0ull : 0xffffffffull)); /* StackBase */
    at(b, p8 ? 16 : 12);
    put_ptr(b, ptr, 0x4e7f000); /* StackLimit */
    at(b, p8 ? 24 : 16);
    put_ptr(b, ptr, 0x3db63d0000ull & (p8 ? ~0ull : 0xffffffffull)); /* UserStackBase */
    at(b, p8 ? 32 : 20);
    put_ptr(b, ptr, 0x3c8000); /* UserStackLimit */
    at(b, p8 ? 40 : 24);
    put_ptr(b, ptr, 0xff); /* Affinity */
    at(b, p8 ? 48 : 28);
    put_ptr(b, ptr, 0x7f9cfac23a8ull & (p8 ? ~0ull : 0xffffffffull)); /* Win32StartAddr */
    at(b, p8 ? 56 : 32);
    put_ptr(b, ptr, 0x7f6d8d17000ull & (p8 ? ~0ull : 0xffffffffull)); /* TebBase */
    at(b, p8 ? 64 : 36);
    etb_u32(b, 142); /* SubProcessTag */
    at(b, p8 ? 68 : 40);
    etb_u8(b, 8);
    etb_u8(b, 5);
    etb_u8(b, 2);
    etb_u8(b, 1);
    at(b, p8 ? 72 : 44);
    if (name) etb_utf16(b, name);
}

static void test_thread(void) {
    diags g = {0};
    etw_decoder *d = new_decoder(&g);
    etb_buf b;
    etb_init(&b);
    char s[64];
    ETW_CHECK_INT(etw_decoder_state_bytes(d), 0);
    for (uint8_t ptr = 4; ptr <= 8; ptr += 4) {
        for (int named = 0; named < 2; named++) {
            build_thread_v3(&b, ptr, 1632, 3664, named ? "worker" : NULL);
            etw_event ev = kernel_event(family_guid("Thread"), 1, 3, ptr, &b, 0);
            fields f;
            const etw_schema *sc = NULL;
            ETW_CHECK(decode_fields(d, &ev, &sc, &f));
            ETW_CHECK_STR(sc ? sc->event_name : "", "Thread/Start");
            ETW_CHECK_INT(f.n, named ? 15 : 14);
            ETW_CHECK_INT(f.unsupported, 0);
            ETW_CHECK_INT(f.remaining, 0);
            ETW_CHECK_INT(u64_of(&f, "ProcessId"), 1632);
            ETW_CHECK_INT(u64_of(&f, "TThreadId"), 3664);
            ETW_CHECK_INT(u64_of(&f, "Affinity"), 0xff);
            ETW_CHECK_INT(u64_of(&f, "TebBase"), 0x7f6d8d17000ull & (ptr == 8 ? ~0ull : 0xffffffffull));
            ETW_CHECK_INT(u64_of(&f, "SubProcessTag"), 142);
            ETW_CHECK_INT(u64_of(&f, "BasePriority"), 8);
            ETW_CHECK_INT(u64_of(&f, "ThreadFlags"), 1);
            if (named) ETW_CHECK_STR(str_of(&f, "ThreadName", s, sizeof s), "worker");
            else ETW_CHECK(field(&f, "ThreadName") == NULL);
            ETW_CHECK(etw_decoder_payload_problem(d, &ev, sc, f.remaining) == NULL);
            uint32_t pid = 0, tid = 0;
            etw_decoder_event_ids(d, &ev, sc, &pid, &tid);
            ETW_CHECK_INT(pid, 1632);
            ETW_CHECK_INT(tid, 3664);
        }
    }
    ETW_CHECK_INT(etw_decoder_state_bytes(d), 4096 * 4 * 8 + 4096);
    /* v2 (StartAddr, no priorities): 68 bytes at ptr 8, 40 at ptr 4 */
    for (uint8_t ptr = 4; ptr <= 8; ptr += 4) {
        build_thread_v3(&b, ptr, 10, 20, NULL);
        b.len = ptr == 8 ? 68 : 40;
        etw_event ev = kernel_event(family_guid("Thread"), 4, 2, ptr, &b, 0);
        fields f;
        const etw_schema *sc = NULL;
        ETW_CHECK(decode_fields(d, &ev, &sc, &f));
        ETW_CHECK_STR(sc ? sc->event_name : "", "Thread/DCStop");
        ETW_CHECK_INT(f.n, 10);
        ETW_CHECK_INT(u64_of(&f, "StartAddr"), 0xff);
        ETW_CHECK_INT(u64_of(&f, "SubProcessTag"), 142);
        ETW_CHECK_INT(f.remaining, 0);
    }
    /* v1: End is TypeGroup2 (ProcessId, TThreadId); Start ends with WaitMode */
    etb_reset(&b);
    etb_u32(&b, 7);
    etb_u32(&b, 8);
    etw_event ev = kernel_event(family_guid("Thread"), 2, 1, 8, &b, 0);
    fields f;
    const etw_schema *sc = NULL;
    ETW_CHECK(decode_fields(d, &ev, &sc, &f));
    ETW_CHECK_INT(f.n, 2);
    ETW_CHECK_INT(u64_of(&f, "TThreadId"), 8);
    uint32_t pid = 0, tid = 0;
    etw_decoder_event_ids(d, &ev, sc, &pid, &tid);
    ETW_CHECK_INT(pid, 1111); /* Thread/Stop keeps the header */
    ETW_CHECK_INT(tid, 2222);
    for (uint8_t ptr = 4; ptr <= 8; ptr += 4) {
        etb_reset(&b);
        etb_u32(&b, 7);
        etb_u32(&b, 8);
        for (int i = 0; i < 6; i++) put_ptr(&b, ptr, 0x100 + i);
        at(&b, ptr == 8 ? 56 : 32);
        etb_i8(&b, 1);
        ev = kernel_event(family_guid("Thread"), 3, 1, ptr, &b, 0);
        ETW_CHECK(decode_fields(d, &ev, &sc, &f));
        ETW_CHECK_INT(u64_of(&f, "Win32StartAddr"), 0x105);
        ETW_CHECK_INT(u64_of(&f, "WaitMode"), 1);
        ETW_CHECK_INT(f.remaining, 0);
    }
    /* v0: TThreadId first */
    ev = kernel_event(family_guid("Thread"), 1, 0, 4, &b, 0);
    b.len = 8;
    ev.user_data_len = 8;
    ETW_CHECK(decode_fields(d, &ev, &sc, &f));
    ETW_CHECK_INT(u64_of(&f, "TThreadId"), 7);
    ETW_CHECK_INT(u64_of(&f, "ProcessId"), 8);
    etb_free(&b);
    etw_decoder_free(d);
}

static void test_cswitch_ready_setname(void) {
    diags g = {0};
    etw_decoder *d = new_decoder(&g);
    etb_buf b;
    etb_init(&b);
    char s[64];
    /* Thread/DCStart of thread 584 in process 4 feeds the thread table */
    build_thread_v3(&b, 8, 4, 584, NULL);
    etw_event ev = kernel_event(family_guid("Thread"), 3, 3, 8, &b, 0);
    fields f;
    const etw_schema *sc = NULL;
    ETW_CHECK(decode_fields(d, &ev, &sc, &f));
    for (uint8_t ver = 2; ver <= 4; ver++) {
        etb_reset(&b);
        etb_u32(&b, 584); /* NewThreadId */
        etb_u32(&b, 0);   /* OldThreadId */
        at(&b, 8);
        etb_i8(&b, 14);
        etb_i8(&b, 0);
        etb_u8(&b, 2); /* PreviousCState */
        etb_i8(&b, 0);
        at(&b, 12);
        etb_i8(&b, 7);  /* OldThreadWaitReason */
        etb_i8(&b, 1);  /* OldThreadWaitMode / ThreadFlags */
        etb_i8(&b, 5);  /* OldThreadState */
        etb_i8(&b, 3);  /* OldThreadWaitIdealProcessor */
        at(&b, 16);
        etb_u32(&b, 1234);
        at(&b, 20);
        etb_u32(&b, 0);
        at(&b, 24);
        ev = kernel_event(family_guid("Thread"), 36, ver, 8, &b, 1);
        ETW_CHECK(decode_fields(d, &ev, &sc, &f));
        ETW_CHECK_STR(sc ? sc->event_name : "", "Thread/CSwitch");
        ETW_CHECK_INT(f.n, 12);
        ETW_CHECK_INT(u64_of(&f, "PreviousCState"), 2);
        ETW_CHECK_INT(u64_of(&f, ver >= 3 ? "ThreadFlags" : "OldThreadWaitMode"), 1);
        ETW_CHECK_INT(u64_of(&f, "NewThreadWaitTime"), 1234);
        uint32_t pid = 0, tid = 0;
        etw_decoder_event_ids(d, &ev, sc, &pid, &tid);
        ETW_CHECK_INT(tid, 584);
        ETW_CHECK_INT(pid, 4); /* from the thread table */
    }
    etb_reset(&b);
    etb_u32(&b, 777);
    etb_i8(&b, 1);
    etb_i8(&b, 2);
    etb_i8(&b, 3);
    etb_i8(&b, 0);
    ev = kernel_event(family_guid("Thread"), 50, 2, 8, &b, 1);
    ETW_CHECK(decode_fields(d, &ev, &sc, &f));
    ETW_CHECK_STR(sc ? sc->event_name : "", "Dispatcher/ReadyThread");
    ETW_CHECK_INT(u64_of(&f, "TThreadId"), 777);
    ETW_CHECK_INT(u64_of(&f, "Flag"), 3);
    ETW_CHECK_INT(f.remaining, 0);
    etb_reset(&b);
    etb_u32(&b, 44);
    etb_u32(&b, 55);
    etb_utf16(&b, "pool");
    ev = kernel_event(family_guid("Thread"), 72, 2, 8, &b, 0);
    ETW_CHECK(decode_fields(d, &ev, &sc, &f));
    ETW_CHECK_STR(sc ? sc->event_name : "", "Thread/SetName");
    ETW_CHECK_STR(str_of(&f, "ThreadName", s, sizeof s), "pool");
    uint32_t pid = 0, tid = 0;
    etw_decoder_event_ids(d, &ev, sc, &pid, &tid);
    ETW_CHECK_INT(pid, 44);
    ETW_CHECK_INT(tid, 55);
    etb_free(&b);
    etw_decoder_free(d);
}

/* ---- Image --------------------------------------------------------------- */

static void build_image(etb_buf *b, uint8_t ptr, int v3) {
    int p8 = ptr == 8;
    etb_reset(b);
    put_ptr(b, ptr, p8 ? 0x7f9d02f0000ull : 0x77710000u); /* ImageBase */
    at(b, p8 ? 8 : 4);
    put_ptr(b, ptr, 1826816); /* ImageSize */
    at(b, p8 ? 16 : 8);
    etb_u32(b, 3676); /* ProcessId */
    at(b, p8 ? 20 : 12);
    etb_u32(b, 1866534); /* ImageCheckSum */
    at(b, p8 ? 24 : 16);
    etb_u32(b, 1343270098); /* TimeDateStamp */
    at(b, p8 ? 28 : 20);
    if (v3) {
        etb_u8(b, 12);
        etb_u8(b, 1);
        etb_u16(b, 0);
    } else {
        etb_u32(b, 0);
    }
    at(b, p8 ? 32 : 24);
    put_ptr(b, ptr, p8 ? 0x40000000004000ull : 0x4000u); /* DefaultBase */
    at(b, p8 ? 40 : 28);
    for (int i = 0; i < 4; i++) etb_u32(b, (uint32_t)i);
    at(b, p8 ? 56 : 44);
    etb_utf16(b, "\\Windows\\ntdll.dll");
}

static void test_image(void) {
    diags g = {0};
    etw_decoder *d = new_decoder(&g);
    etb_buf b;
    etb_init(&b);
    char s[64];
    /* the live load hook 0x030A is the Image class, type 10 */
    ETW_CHECK(etw_guid_equal(etw_kernel_group_guid(0x03, 10), family_guid("Image")));
    ETW_CHECK(etw_guid_equal(etw_kernel_group_guid(0x03, 1), family_guid("Process")));
    for (uint8_t ptr = 4; ptr <= 8; ptr += 4) {
        for (int v3 = 0; v3 < 2; v3++) {
            static const uint8_t types[] = {2, 3, 4, 10};
            static const char *const names[] = {"Image/Unload", "Image/DCStart", "Image/DCStop", "Image/Load"};
            for (int t = 0; t < 4; t++) {
                build_image(&b, ptr, v3);
                etw_event ev = kernel_event(family_guid("Image"), types[t], v3 ? 3 : 2, ptr, &b, 0);
                fields f;
                const etw_schema *sc = NULL;
                ETW_CHECK(decode_fields(d, &ev, &sc, &f));
                ETW_CHECK_STR(sc ? sc->event_name : "", names[t]);
                ETW_CHECK_INT(f.n, v3 ? 14 : 12);
                ETW_CHECK_INT(f.remaining, 0);
                ETW_CHECK_INT(u64_of(&f, "ImageBase"), ptr == 8 ? 0x7f9d02f0000ull : 0x77710000u);
                ETW_CHECK_INT(u64_of(&f, "ImageSize"), 1826816);
                ETW_CHECK_INT(u64_of(&f, "ImageCheckSum"), 1866534);
                ETW_CHECK_INT(u64_of(&f, "TimeDateStamp"), 1343270098);
                ETW_CHECK_INT(u64_of(&f, "DefaultBase"), ptr == 8 ? 0x40000000004000ull : 0x4000u);
                ETW_CHECK_INT(u64_of(&f, "Reserved4"), 3);
                if (v3) ETW_CHECK_INT(u64_of(&f, "SignatureLevel"), 12);
                ETW_CHECK_STR(str_of(&f, "FileName", s, sizeof s), "\\Windows\\ntdll.dll");
                uint32_t pid = 0, tid = 0;
                etw_decoder_event_ids(d, &ev, sc, &pid, &tid);
                ETW_CHECK_INT(pid, types[t] == 10 ? 1111 : 3676); /* Load keeps the header */
                ETW_CHECK_INT(tid, types[t] == 10 ? 2222 : ETW_NO_ID);
            }
        }
        /* KernelBase: one pointer */
        etb_reset(&b);
        put_ptr(&b, ptr, 0xfffff80021489000ull & (ptr == 8 ? ~0ull : 0xffffffffull));
        etw_event ev = kernel_event(family_guid("Image"), 33, 2, ptr, &b, 1);
        fields f;
        const etw_schema *sc = NULL;
        ETW_CHECK(decode_fields(d, &ev, &sc, &f));
        ETW_CHECK_STR(sc ? sc->event_name : "", "Image/KernelBase");
        ETW_CHECK_INT(f.n, 1);
        ETW_CHECK_INT(f.remaining, 0);
        /* Image v1 Load: ImageSize pointer-sized, ProcessId, FileName */
        etb_reset(&b);
        put_ptr(&b, ptr, 0x1000000);
        put_ptr(&b, ptr, 0x2000);
        at(&b, ptr == 8 ? 16 : 8);
        etb_u32(&b, 42);
        etb_utf16(&b, "a.dll");
        ev = kernel_event(family_guid("Image"), 10, 1, ptr, &b, 0);
        ETW_CHECK(decode_fields(d, &ev, &sc, &f));
        ETW_CHECK_INT(u64_of(&f, "ProcessId"), 42);
        ETW_CHECK_STR(str_of(&f, "FileName", s, sizeof s), "a.dll");
        ETW_CHECK_INT(f.remaining, 0);
    }
    etb_free(&b);
    etw_decoder_free(d);
}

/* ---- PerfInfo ------------------------------------------------------------ */

static void test_perfinfo(void) {
    diags g = {0};
    etw_decoder *d = new_decoder(&g);
    etb_buf b;
    etb_init(&b);
    char s[64];
    fields f;
    const etw_schema *sc = NULL;
    /* a thread seen in a rundown */
    build_thread_v3(&b, 8, 3988, 3780, NULL);
    etw_event ev = kernel_event(family_guid("Thread"), 3, 3, 8, &b, 0);
    ETW_CHECK(decode_fields(d, &ev, &sc, &f));
    for (uint8_t ptr = 4; ptr <= 8; ptr += 4) {
        int p8 = ptr == 8;
        etb_reset(&b);
        put_ptr(&b, ptr, p8 ? 0xffffffffffd03003ull : 0x8203003u);
        at(&b, p8 ? 8 : 4);
        etb_u32(&b, 3780);
        at(&b, p8 ? 12 : 8);
        etb_u16(&b, 1);
        at(&b, p8 ? 14 : 10);
        etb_u16(&b, 0x0058);
        at(&b, p8 ? 16 : 12);
        ev = kernel_event(family_guid("PerfInfo"), 46, 2, ptr, &b, 1);
        ETW_CHECK(decode_fields(d, &ev, &sc, &f));
        ETW_CHECK_STR(sc ? sc->event_name : "", "PerfInfo/Sample");
        ETW_CHECK_INT(u64_of(&f, "InstructionPointer"), p8 ? 0xffffffffffd03003ull : 0x8203003u);
        ETW_CHECK_INT(u64_of(&f, "ThreadId"), 3780);
        ETW_CHECK_INT(u64_of(&f, "Count"), 1);
        ETW_CHECK_INT(u64_of(&f, "Reserved"), 0x58);
        /* its flags as TraceEvent splits them: 0x58 is priority 11, as
         * PerfView's baseline says of this sample (kernel-mof.md 4.1) */
        ETW_CHECK_INT(u64_of(&f, "Priority"), 11);
        ETW_CHECK_INT(u64_of(&f, "ExecutingDPC"), 0);
        ETW_CHECK_INT(u64_of(&f, "ExecutingISR"), 0);
        ETW_CHECK_INT(u64_of(&f, "Rank"), 0);
        ETW_CHECK_INT(f.remaining, 0);
        /* byte 0: bit 0 DPC, bit 1 ISR, bit 2 reserved, bits 3-7 priority; byte 1 rank */
        etb_put16_at(&b, p8 ? 14 : 10, 0x07FE);
        ev = kernel_event(family_guid("PerfInfo"), 46, 2, ptr, &b, 1);
        ETW_CHECK(decode_fields(d, &ev, &sc, &f));
        ETW_CHECK_INT(u64_of(&f, "Reserved"), 0x07FE);
        ETW_CHECK_INT(u64_of(&f, "ExecutingDPC"), 0);
        ETW_CHECK_INT(u64_of(&f, "ExecutingISR"), 1);
        ETW_CHECK_INT(u64_of(&f, "Priority"), 31);
        ETW_CHECK_INT(u64_of(&f, "Rank"), 7);
        ETW_CHECK_INT(f.remaining, 0);
        etb_put16_at(&b, p8 ? 14 : 10, 0x0001);
        ev = kernel_event(family_guid("PerfInfo"), 46, 2, ptr, &b, 1);
        ETW_CHECK(decode_fields(d, &ev, &sc, &f));
        ETW_CHECK_INT(u64_of(&f, "ExecutingDPC"), 1);
        ETW_CHECK_INT(u64_of(&f, "ExecutingISR"), 0);
        ETW_CHECK_INT(u64_of(&f, "Priority"), 0);
        /* a payload cut inside Reserved: no flags made up */
        b.len = p8 ? 15 : 11;
        ev = kernel_event(family_guid("PerfInfo"), 46, 2, ptr, &b, 1);
        ETW_CHECK(decode_fields(d, &ev, &sc, &f));
        ETW_CHECK(field(&f, "Priority") == NULL);
        ETW_CHECK(field(&f, "ExecutingDPC") == NULL);
        b.len = p8 ? 16 : 12;
        etb_put16_at(&b, p8 ? 14 : 10, 0x0058);
        uint32_t pid = 0, tid = 0;
        etw_decoder_event_ids(d, &ev, sc, &pid, &tid);
        ETW_CHECK_INT(tid, 3780);
        ETW_CHECK_INT(pid, 3988);
        /* a thread the table has not seen: pid -1 */
        etb_put16_at(&b, p8 ? 8 : 4, 9999);
        ev = kernel_event(family_guid("PerfInfo"), 46, 2, ptr, &b, 1);
        ETW_CHECK(decode_fields(d, &ev, &sc, &f));
        etw_decoder_event_ids(d, &ev, sc, &pid, &tid);
        ETW_CHECK_INT(tid, 9999);
        ETW_CHECK_INT(pid, ETW_NO_ID);

        /* ISR: u64, P, u8, u16, u8 (ends at 16 / 20) */
        etb_reset(&b);
        etb_u64(&b, 0x1122334455667788ull);
        put_ptr(&b, ptr, 0xabcd);
        at(&b, p8 ? 16 : 12);
        etb_u8(&b, 1);
        etb_u16(&b, 0x1a2);
        etb_u8(&b, 0);
        at(&b, p8 ? 20 : 16);
        ev = kernel_event(family_guid("PerfInfo"), 67, 2, ptr, &b, 1);
        ETW_CHECK(decode_fields(d, &ev, &sc, &f));
        ETW_CHECK_STR(sc ? sc->event_name : "", "PerfInfo/ISR");
        ETW_CHECK_INT(u64_of(&f, "InitialTime"), 0x1122334455667788ull);
        ETW_CHECK_INT(u64_of(&f, "Routine"), 0xabcd);
        ETW_CHECK_INT(u64_of(&f, "Vector"), 0x1a2);
        ETW_CHECK_INT(f.remaining, 0);
        /* DPC family: u64, P */
        b.len = p8 ? 16 : 12;
        static const uint8_t dpcs[] = {66, 68, 69};
        static const char *const dn[] = {"PerfInfo/ThreadedDPC", "PerfInfo/DPC", "PerfInfo/TimerDPC"};
        for (int i = 0; i < 3; i++) {
            ev = kernel_event(family_guid("PerfInfo"), dpcs[i], 2, ptr, &b, 1);
            ETW_CHECK(decode_fields(d, &ev, &sc, &f));
            ETW_CHECK_STR(sc ? sc->event_name : "", dn[i]);
            ETW_CHECK_INT(u64_of(&f, "Routine"), 0xabcd);
            ETW_CHECK_INT(f.remaining, 0);
        }
        /* SysClEnter: one pointer; SysClExit: NTSTATUS */
        etb_reset(&b);
        put_ptr(&b, ptr, 0xfffff80021554231ull & (p8 ? ~0ull : 0xffffffffull));
        ev = kernel_event(family_guid("PerfInfo"), 51, 2, ptr, &b, 1);
        ETW_CHECK(decode_fields(d, &ev, &sc, &f));
        ETW_CHECK_STR(sc ? sc->event_name : "", "PerfInfo/SysClEnter");
        ETW_CHECK_INT(u64_of(&f, "SysCallAddress"), 0xfffff80021554231ull & (p8 ? ~0ull : 0xffffffffull));
        ETW_CHECK_INT(f.remaining, 0);
        etb_reset(&b);
        etb_u32(&b, 0xc0000022u);
        ev = kernel_event(family_guid("PerfInfo"), 52, 2, ptr, &b, 1);
        ETW_CHECK(decode_fields(d, &ev, &sc, &f));
        ETW_CHECK_STR(sc ? sc->event_name : "", "PerfInfo/SysClExit");
        ETW_CHECK_INT(u64_of(&f, "SysCallNtStatus"), 0xc0000022u);
    }
    /* CollectionStart v3: three u32 and SourceName (net.4.5.2.x64's bytes) */
    static const uint8_t coll[] = {0, 0, 0, 0, 0x10, 0x27, 0, 0, 0x10, 0x27, 0, 0,
                                   'T', 0, 'i', 0, 'm', 0, 'e', 0, 'r', 0, 0, 0};
    etb_reset(&b);
    etb_bytes(&b, coll, sizeof coll);
    ev = kernel_event(family_guid("PerfInfo"), 73, 3, 8, &b, 0);
    ETW_CHECK(decode_fields(d, &ev, &sc, &f));
    ETW_CHECK_STR(sc ? sc->event_name : "", "PerfInfo/CollectionStart");
    ETW_CHECK_INT(u64_of(&f, "NewInterval"), 10000);
    ETW_CHECK_STR(str_of(&f, "SourceName", s, sizeof s), "Timer");
    ETW_CHECK_INT(f.remaining, 0);
    ev = kernel_event(family_guid("PerfInfo"), 74, 2, 8, &b, 0);
    ev.user_data_len = 12;
    ETW_CHECK(decode_fields(d, &ev, &sc, &f));
    ETW_CHECK_STR(sc ? sc->event_name : "", "PerfInfo/CollectionEnd");
    ETW_CHECK_INT(f.n, 3);
    ETW_CHECK_INT(f.remaining, 0);
    etb_free(&b);
    etw_decoder_free(d);
}

/* ---- StackWalk ----------------------------------------------------------- */

static void test_stackwalk(void) {
    diags g = {0};
    etw_decoder *d = new_decoder(&g);
    etb_buf b;
    etb_init(&b);
    fields f;
    const etw_schema *sc = NULL;
    for (uint8_t ptr = 4; ptr <= 8; ptr += 4) {
        for (int frames = 0; frames <= 192; frames += 64) {
            etb_reset(&b);
            etb_u64(&b, 0x73ce5a25ull);
            at(&b, 8);
            etb_u32(&b, 4);
            at(&b, 12);
            etb_u32(&b, 584);
            at(&b, 16);
            for (int i = 0; i < frames; i++) put_ptr(&b, ptr, 0x1000u + (uint32_t)i);
            etw_event ev = kernel_event(family_guid("StackWalk"), 32, 2, ptr, &b, 1);
            ETW_CHECK(decode_fields(d, &ev, &sc, &f));
            ETW_CHECK_STR(sc ? sc->event_name : "", "StackWalk/Stack");
            ETW_CHECK_INT(f.n, 3 + frames);
            ETW_CHECK_INT(f.unsupported, 0);
            ETW_CHECK_INT(f.remaining, 0);
            if (frames) {
                ETW_CHECK_INT(u64_of(&f, "Stack1"), 0x1000);
                char nm[16];
                snprintf(nm, sizeof nm, "Stack%d", frames);
                ETW_CHECK_INT(u64_of(&f, nm), 0x1000u + (uint32_t)frames - 1);
            }
            uint32_t pid = 0, tid = 0;
            etw_decoder_event_ids(d, &ev, sc, &pid, &tid);
            ETW_CHECK_INT(pid, 4);
            ETW_CHECK_INT(tid, 584);
        }
        /* half a frame more: a trailing-bytes problem, not a crash */
        etb_reset(&b);
        etb_u64(&b, 1);
        etb_u32(&b, 4);
        etb_u32(&b, 584);
        put_ptr(&b, ptr, 0x1000);
        etb_u16(&b, 0xffff);
        etw_event ev = kernel_event(family_guid("StackWalk"), 32, 2, ptr, &b, 1);
        ETW_CHECK(decode_fields(d, &ev, &sc, &f));
        ETW_CHECK(f.unsupported == 1); /* the cut Stack2 */
        /* key definitions: StackKey, then frames */
        etb_reset(&b);
        put_ptr(&b, ptr, 0xfffffa8300000001ull & (ptr == 8 ? ~0ull : 0xffffffffull));
        for (int i = 0; i < 3; i++) put_ptr(&b, ptr, 0x2000u + (uint32_t)i);
        static const uint8_t keydefs[] = {34, 35, 36};
        static const char *const kn[] = {"StackWalk/KeyCreate", "StackWalk/KeyDelete", "StackWalk/KeyRundown"};
        for (int i = 0; i < 3; i++) {
            ev = kernel_event(family_guid("StackWalk"), keydefs[i], 2, ptr, &b, 1);
            ETW_CHECK(decode_fields(d, &ev, &sc, &f));
            ETW_CHECK_STR(sc ? sc->event_name : "", kn[i]);
            ETW_CHECK_INT(f.n, 4);
            ETW_CHECK_INT(u64_of(&f, "Stack3"), 0x2002);
            ETW_CHECK_INT(f.remaining, 0);
        }
        /* key references: u64, u32, u32, P (24 / 20 bytes) */
        etb_reset(&b);
        etb_u64(&b, 2);
        etb_u32(&b, 3988);
        etb_u32(&b, 3780);
        at(&b, 16);
        put_ptr(&b, ptr, 0x77);
        at(&b, ptr == 8 ? 24 : 20);
        for (uint8_t t = 37; t <= 38; t++) {
            ev = kernel_event(family_guid("StackWalk"), t, 2, ptr, &b, 1);
            ETW_CHECK(decode_fields(d, &ev, &sc, &f));
            ETW_CHECK_STR(sc ? sc->event_name : "", t == 37 ? "StackWalk/StackKeyKernel" : "StackWalk/StackKeyUser");
            ETW_CHECK_INT(u64_of(&f, "StackKey"), 0x77);
            ETW_CHECK_INT(f.remaining, 0);
            uint32_t pid = 0, tid = 0;
            etw_decoder_event_ids(d, &ev, sc, &pid, &tid);
            ETW_CHECK_INT(pid, 3988);
            ETW_CHECK_INT(tid, 3780);
        }
    }
    etb_free(&b);
    etw_decoder_free(d);
}

/* ---- EventTrace ---------------------------------------------------------- */

static void test_eventtrace(void) {
    diags g = {0};
    etw_decoder *d = new_decoder(&g);
    etb_buf b;
    etb_init(&b);
    fields f;
    const etw_schema *sc = NULL;
    char s[64];
    /* Extension / EndExtension: 8 group masks and KernelEventVersion */
    etb_reset(&b);
    etb_u32(&b, 75535);
    etb_u32(&b, 2);
    for (int i = 0; i < 6; i++) etb_u32(&b, 0);
    etb_u32(&b, 42);
    for (uint8_t t = 5; t <= 32; t += 27) {
        etw_event ev = kernel_event(family_guid("EventTrace"), t, 2, 8, &b, t == 32);
        ETW_CHECK(decode_fields(d, &ev, &sc, &f));
        ETW_CHECK_STR(sc ? sc->event_name : "", t == 5 ? "EventTrace/Extension" : "EventTrace/EndExtension");
        ETW_CHECK_INT(u64_of(&f, "GroupMask1"), 75535);
        ETW_CHECK_INT(u64_of(&f, "KernelEventVersion"), 42);
        ETW_CHECK_INT(f.remaining, 0);
    }
    /* RundownComplete: no payload, no problem */
    etb_reset(&b);
    etw_event ev = kernel_event(family_guid("EventTrace"), 8, 2, 8, &b, 1);
    ETW_CHECK(decode_fields(d, &ev, &sc, &f));
    ETW_CHECK_STR(sc ? sc->event_name : "", "EventTrace/RundownComplete");
    ETW_CHECK_INT(f.n, 0);
    ETW_CHECK(etw_decoder_payload_problem(d, &ev, sc, 0) == NULL);
    /* ...and bytes there are reported */
    etb_u32(&b, 5);
    ev = kernel_event(family_guid("EventTrace"), 8, 2, 8, &b, 1);
    ETW_CHECK(decode_fields(d, &ev, &sc, &f));
    ETW_CHECK(etw_decoder_payload_problem(d, &ev, sc, f.remaining) != NULL);
    /* PartitionInfoExtension, EventVersion 0: 48 bytes */
    etb_reset(&b);
    etb_u16(&b, 0);
    etb_u16(&b, 0);
    etb_u32(&b, 1);
    etb_i64(&b, -5);
    etw_guid pg = etb_make_guid(0x11111111, 0x2222, 0x3333, 0x4444555566667777ull);
    etb_guid(&b, &pg);
    etb_guid(&b, &pg);
    ev = kernel_event(family_guid("EventTrace"), 80, 2, 8, &b, 0);
    ETW_CHECK(decode_fields(d, &ev, &sc, &f));
    ETW_CHECK_STR(sc ? sc->event_name : "", "EventTrace/PartitionInfoExtension");
    ETW_CHECK_INT(f.n, 6);
    ETW_CHECK_INT(etw_value_i64(field(&f, "QpcOffsetFromRoot")), -5);
    ETW_CHECK(field(&f, "ParentId") && field(&f, "ParentId")->size == 16);
    ETW_CHECK_INT(f.remaining, 0);
    /* a header record met later in the stream, both widths */
    for (uint8_t ptr = 4; ptr <= 8; ptr += 4) {
        int p8 = ptr == 8;
        etb_reset(&b);
        etb_u32(&b, 65536);
        for (int i = 0; i < 3; i++) etb_u32(&b, 9200 + (uint32_t)i);
        etb_u64(&b, 0x01d6653b2a7f0000ull); /* EndTime */
        for (int i = 0; i < 8; i++) etb_u32(&b, (uint32_t)i);
        at(&b, 56);
        put_ptr(&b, ptr, 0x1234);
        put_ptr(&b, ptr, 0x5678);
        at(&b, p8 ? 72 : 64);
        for (int i = 0; i < 176; i++) etb_u8(&b, (uint8_t)i);
        at(&b, p8 ? 248 : 240);
        etb_u64(&b, 0x01d6653b00000000ull); /* BootTime */
        etb_i64(&b, 10000000);              /* PerfFreq */
        etb_u64(&b, 0x01d6653b10000000ull); /* StartTime */
        at(&b, p8 ? 272 : 264);
        etb_u32(&b, 1);
        etb_u32(&b, 0);
        at(&b, p8 ? 280 : 272);
        etb_utf16(&b, "Relogger");
        etb_utf16(&b, "x.etl");
        ev = kernel_event(family_guid("EventTrace"), 0, 2, ptr, &b, 0);
        ETW_CHECK(decode_fields(d, &ev, &sc, &f));
        ETW_CHECK_STR(sc ? sc->event_name : "", "EventTrace");
        ETW_CHECK_INT(u64_of(&f, "PerfFreq"), 10000000);
        ETW_CHECK_INT(u64_of(&f, "LogFileNamePtr"), 0x5678);
        ETW_CHECK_STR(str_of(&f, "SessionName", s, sizeof s), "Relogger");
        ETW_CHECK_STR(str_of(&f, "LogFileName", s, sizeof s), "x.etl");
        ETW_CHECK_INT(f.remaining, 0);
    }
    etb_free(&b);
    etw_decoder_free(d);
}

/* PerfInfo/Sample's flags on net.4.5.2.x64.etl against PerfView's baseline
 * (net.4.5.2.x64.baseline.txt): TraceLog drops the samples of thread 0 that
 * are neither in a DPC nor in an ISR and counts 6,320; its first two samples
 * (threads 584 and 3780) have Priority 14 and 11, no DPC, no ISR, Rank 0. */
static void test_sample_flags_real(void) {
    etw_reader *r = NULL;
    ETW_CHECK_INT(etw_reader_open_file(&r, ETW_TEST_DATA_DIR "/net.4.5.2.x64.etl", NULL), ETW_OK);
    if (!r) return;
    diags g = {0};
    etw_decoder *d = new_decoder(&g);
    const etw_guid *perfinfo = family_guid("PerfInfo");
    etw_event ev;
    fields f;
    const etw_schema *sc = NULL;
    uint64_t samples = 0, kept = 0, nonprocess = 0, bad = 0;
    while (etw_reader_next(r, &ev) == ETW_OK) {
        if (!etw_guid_equal(&ev.provider, perfinfo) || ev.opcode != 46) continue;
        if (!decode_fields(d, &ev, &sc, &f) || f.remaining || f.unsupported) {
            bad++;
            continue;
        }
        int dpc = (int)u64_of(&f, "ExecutingDPC"), isr = (int)u64_of(&f, "ExecutingISR");
        samples++;
        nonprocess += dpc || isr;
        if (u64_of(&f, "ThreadId") == 0 && !dpc && !isr) continue;
        if (kept == 0) {
            ETW_CHECK_INT(u64_of(&f, "ThreadId"), 584);
            ETW_CHECK_INT(u64_of(&f, "Priority"), 14);
        } else if (kept == 1) {
            ETW_CHECK_INT(u64_of(&f, "ThreadId"), 3780);
            ETW_CHECK_INT(u64_of(&f, "Priority"), 11);
        }
        if (kept < 2) {
            ETW_CHECK_INT(dpc, 0);
            ETW_CHECK_INT(isr, 0);
            ETW_CHECK_INT(u64_of(&f, "Rank"), 0);
        }
        kept++;
    }
    ETW_CHECK_INT(bad, 0);
    ETW_CHECK(samples > kept);
    ETW_CHECK(nonprocess > 0);
    ETW_CHECK_INT(kept, 6320);
    etw_decoder_free(d);
    etw_reader_close(r);
}

/* The thread table is bounded: more threads than it holds evict old ones,
 * recent ones are always found. */
static void test_thread_table_bound(void) {
    diags g = {0};
    etw_decoder *d = new_decoder(&g);
    etb_buf b;
    etb_init(&b);
    fields f;
    const etw_schema *sc = NULL;
    for (uint32_t i = 0; i < 100000; i++) {
        build_thread_v3(&b, 8, 1000 + i % 7, 4 * (i + 1), NULL);
        etw_event ev = kernel_event(family_guid("Thread"), 1, 3, 8, &b, 0);
        etw_decoder_resolve(d, &ev, &sc, NULL);
    }
    ETW_CHECK_INT(etw_decoder_state_bytes(d), 4096 * 4 * 8 + 4096);
    /* the last thread recorded is found */
    etb_reset(&b);
    etb_u64(&b, 0);
    etb_u32(&b, 100000 * 4);
    etb_u32(&b, 0);
    etw_event ev = kernel_event(family_guid("PerfInfo"), 46, 2, 8, &b, 1);
    ETW_CHECK(decode_fields(d, &ev, &sc, &f));
    uint32_t pid = 0, tid = 0;
    etw_decoder_event_ids(d, &ev, sc, &pid, &tid);
    ETW_CHECK_INT(pid, 1000 + 99999 % 7);
    etb_free(&b);
    etw_decoder_free(d);
}

int main(void) {
    ETW_RUN(test_sample_flags_real);
    ETW_RUN(test_process_v4_both_widths);
    ETW_RUN(test_process_v0_v1);
    ETW_RUN(test_process_perfctr);
    ETW_RUN(test_newer_version);
    ETW_RUN(test_unknown_and_short);
    ETW_RUN(test_json);
    ETW_RUN(test_thread);
    ETW_RUN(test_cswitch_ready_setname);
    ETW_RUN(test_image);
    ETW_RUN(test_perfinfo);
    ETW_RUN(test_stackwalk);
    ETW_RUN(test_eventtrace);
    ETW_RUN(test_thread_table_bound);
    return ETW_TEST_DONE();
}
