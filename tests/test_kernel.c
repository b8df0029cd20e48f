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
#include "source/etw_kernel_source.h"

/* ---- helpers ------------------------------------------------------------- */

typedef struct diags {
    int n;
    char last[256];
} diags;

static void on_diag(void *ctx, const etw_diag *d) {
    diags *g = ctx;
    g->n++;
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
    ETW_CHECK(strstr(line, "\"pid\":3676,\"tid\":-1,") != NULL);
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

int main(void) {
    ETW_RUN(test_process_v4_both_widths);
    ETW_RUN(test_process_v0_v1);
    ETW_RUN(test_process_perfctr);
    ETW_RUN(test_newer_version);
    ETW_RUN(test_unknown_and_short);
    ETW_RUN(test_json);
    return ETW_TEST_DONE();
}
