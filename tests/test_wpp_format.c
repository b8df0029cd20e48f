/* test_wpp_format.c - WPP message text (src/wpp/etw_wpp_format.c) for every
 * type of WPP's default type table, the prefix variables and extended
 * specifiers, hostile payloads and formats; the WPP schema source in the
 * decoder (its own key space). Expected texts come from the C library's
 * printf for the printf conversions, from Python's datetime for the dates
 * (noted where used), and from the definitions in Microsoft's documentation
 * (dotted IPv4, network-order ports, SID strings, the default prefix). */
#include <stdlib.h>
#include <string.h>

#include "etw_test.h"
#include "etw_test_builder.h"
#include "etwdecode/etw_decoder.h"
#include "etwdecode/etw_wpp.h"
#include "format/etw_text.h"
#include "wpp/etw_tmf.h"
#include "wpp/etw_wpp_format.h"

#define G "0badcafe-1111-2222-3333-444455556666"

static etw_wpp_set *load(const char *body) {
    etw_wpp_set *s = NULL;
    etw_wpp_set_new(&s, NULL);
    char text[8192];
    snprintf(text, sizeof text,
             "// PDB:  t.pdb\n" G " MyDrv // SRC=drv.c MJ= MN=\n%s", body);
    etw_status st = etw_wpp_add_tmf_text(s, text, strlen(text), "t.tmf");
    if (st != ETW_OK) fprintf(stderr, "load: %s\n", etw_wpp_set_error(s));
    return s;
}

static const etw_wpp_message *msg(const etw_wpp_set *s, uint16_t n) {
    etw_guid g;
    etw_tmf_parse_guid(G, 36, &g);
    return etw_wpp_find(s, &g, n);
}

/* A MESSAGE record of message n with the builder's payload. */
static void message_event(etb_event *e, uint8_t ptr, uint16_t n) {
    etb_event_init(e, ptr);
    e->ev.form = ETW_FORM_MESSAGE;
    e->ev.message_number = n;
    e->ev.message_flags = 0x2 | 0x8 | 0x20 | (ptr == 4 ? 0x40 : 0x80);
    etw_tmf_parse_guid(G, 36, &e->ev.provider);
    e->ev.pid = 0x1a4;
    e->ev.tid = 0x2b0;
    e->ev.cpu = 3;
    e->ev.timestamp = 132000000000000000LL; /* 2019-04-17T18:40:00Z (Python datetime) */
    e->ev.flags |= ETW_EVENT_FLAG_TRACE_MESSAGE;
}

static void expect(const etw_wpp_set *s, uint16_t n, etb_event *e, const char *want) {
    char out[4096], why[256];
    size_t len = 0;
    etw_status st = etw_wpp_format(msg(s, n), etb_event_get(e), out, sizeof out, &len, why, sizeof why);
    if (st != ETW_OK) fprintf(stderr, "message %u: %s\n", n, why);
    ETW_CHECK_INT(st, ETW_OK);
    ETW_CHECK_STR(out, want);
    ETW_CHECK_INT(len, strlen(want));
}

static void test_integers(void) {
    etw_wpp_set *s = load(
        "#typev drv_c10 10 \"c=%10!c! C=%11!d! s=%12!hd! us=%13!u! l=%14!08X!/%14!-5d!|/%14!+d!/%14!#x! ul=%15!u! "
        "ll=%16!I64d! ull=%17!I64u! x=%18!I64x! X=%19!012I64X! o=%20!I64o!\"\n"
        "{\nch, ItemChar -- 10\nuc, ItemUChar -- 11\nsh, ItemShort -- 12\nus, ItemUShort -- 13\n"
        "l, ItemLong -- 14\nul, ItemULong -- 15\nll, ItemLongLong -- 16\null, ItemULongLong -- 17\n"
        "x, ItemLongLongX -- 18\nxx, ItemLongLongXX -- 19\no, ItemLongLongO -- 20\n}\n");
    etb_event e;
    message_event(&e, 8, 10);
    etb_u8(&e.payload, 'Q');
    etb_u8(&e.payload, 200);
    etb_i16(&e.payload, -2);
    etb_u16(&e.payload, 65535);
    etb_i32(&e.payload, -5);
    etb_u32(&e.payload, 4000000000u);
    etb_i64(&e.payload, -1234567890123LL);
    etb_u64(&e.payload, UINT64_MAX);
    etb_u64(&e.payload, 0xabcdef01ULL);
    etb_u64(&e.payload, 0x123456789abcULL);
    etb_u64(&e.payload, 8);
    char want[512];
    snprintf(want, sizeof want,
             "c=%c C=%d s=%hd us=%u l=%08X/%-5d|/%+d/%#x ul=%u ll=%lld ull=%llu x=%llx X=%012llX o=%llo", 'Q', 200,
             (short)-2, 65535u, (unsigned)-5, -5, -5, (unsigned)-5, 4000000000u, -1234567890123LL,
             (unsigned long long)UINT64_MAX, 0xabcdef01ULL, 0x123456789abcULL, 8ULL);
    expect(s, 10, &e, want);
    etb_event_free(&e);
    etw_wpp_set_free(s);
}

static void test_pointers_and_status(void) {
    etw_wpp_set *s = load(
        "#typev drv_c20 11 \"p=%10!p! nt=%11!s!,%12!s!,%13!s! we=%14!s!,%15!s! hr=%16!s!,%17!s!,%18!s! nd=%19!s! nt%%=%11!08x!\"\n"
        "{\np, ItemPtr -- 10\na, ItemNTSTATUS -- 11\nb, ItemNTSTATUS -- 12\nc, ItemNTSTATUS -- 13\n"
        "d, ItemWINERROR -- 14\ne, ItemWINERROR -- 15\nf, ItemHRESULT -- 16\ng, ItemHRESULT -- 17\n"
        "h, ItemHRESULT -- 18\ni, ItemNDIS_STATUS -- 19\n}\n");
    for (int ptr = 4; ptr <= 8; ptr += 4) {
        etb_event e;
        message_event(&e, (uint8_t)ptr, 11);
        if (ptr == 8) etb_u64(&e.payload, 0xffffbb88b0aa7010ULL);
        else etb_u32(&e.payload, 0x8123abcdu);
        etb_u32(&e.payload, 0);
        etb_u32(&e.payload, 0xC0000001u);
        etb_u32(&e.payload, 0xC0000022u);
        etb_u32(&e.payload, 2);
        etb_u32(&e.payload, 1234);
        etb_u32(&e.payload, 0);
        etb_u32(&e.payload, 0x80004005u);
        etb_u32(&e.payload, 0x80070005u);
        etb_u32(&e.payload, 0xC0010017u);
        /* names as MS-ERREF lists them; 0xC0010017 (NDIS) has none: hex */
        const char *p = ptr == 8 ? "FFFFBB88B0AA7010" : "8123ABCD";
        char want[512];
        snprintf(want, sizeof want,
                 "p=%s nt=STATUS_SUCCESS,STATUS_UNSUCCESSFUL,STATUS_ACCESS_DENIED we=ERROR_FILE_NOT_FOUND,"
                 "ERROR_PORT_UNREACHABLE hr=S_OK,E_FAIL,E_ACCESSDENIED nd=0xC0010017 nt%%=00000000",
                 p);
        expect(s, 11, &e, want);
        etb_event_free(&e);
    }
    etw_wpp_set_free(s);
}

static void test_special_types(void) {
    etw_wpp_set *s = load(
        "#typev drv_c30 12 \"g=%10!s! ip=%11!s! port=%12!s! ts=%13!s! d=%14!s! irql=%15!s!,%16!s! b=%17!s! "
        "set=%18!s!,%19!s!,%20!s! en=%21!s! dbl=%22!s! sid=%23!s! hex=%24!s! c4=%25!s!\"\n"
        "{\ng, ItemGuid -- 10\nip, ItemIPAddr -- 11\nport, ItemPort -- 12\nts, ItemTimestamp -- 13\n"
        "d, ItemTimeDelta -- 14\nirql, ItemListByte(Low,APC,DPC) -- 15\nirql2, ItemListByte(Low,APC,DPC) -- 16\n"
        "b, ItemListLong(false,true) -- 17\ns1, ItemSetByte(R,W,X) -- 18\ns2, ItemSetByte(R,W,X) -- 19\n"
        "s3, ItemSetByte(R,W,X) -- 20\nen, ItemEnum(_MY_ENUM) -- 21\ndbl, ItemDouble -- 22\nsid, ItemSid -- 23\n"
        "hex, ItemHEXDump -- 24\nc4, ItemChar4 -- 25\n}\n");
    etb_event e;
    message_event(&e, 8, 12);
    etw_guid g = etb_make_guid(0x01234567, 0x89ab, 0xcdef, 0x0011223344556677ULL);
    etb_guid(&e.payload, &g);
    static const uint8_t ip[4] = {192, 168, 1, 20};
    etb_bytes(&e.payload, ip, 4);
    static const uint8_t port[2] = {0x01, 0xBB}; /* 443 in network order */
    etb_bytes(&e.payload, port, 2);
    etb_u64(&e.payload, 133790000123456789ULL); /* 2024-12-18T12:53:32.3456789Z (Python datetime) */
    etb_i64(&e.payload, 12345678);               /* 1.2345678 s */
    etb_u8(&e.payload, 1);
    etb_u8(&e.payload, 7);
    etb_u32(&e.payload, 1);
    etb_u8(&e.payload, 5);
    etb_u8(&e.payload, 0x0d);
    etb_u8(&e.payload, 0);
    etb_u32(&e.payload, 17);
    etb_f64(&e.payload, -0.125);
    static const uint32_t sub[3] = {21, 1000, 513};
    etb_sid(&e.payload, 5, sub, 3);
    static const uint8_t hx[3] = {0x01, 0xab, 0xff};
    etb_counted_binary(&e.payload, hx, 3);
    etb_bytes(&e.payload, "ABCD", 4);
    expect(s, 12, &e,
           "g=01234567-89ab-cdef-0011-223344556677 ip=192.168.1.20 port=443 ts=12/18/2024-12:53:32.345 "
           "d=1.2345678 s irql=APC,7 b=true set=R|X,R|X|0x8,0x0 en=17 dbl=-0.125 sid=S-1-5-21-1000-513 "
           "hex=01 ab ff c4=ABCD");
    etb_event_free(&e);
    etw_wpp_set_free(s);
}

static void test_strings(void) {
    etw_wpp_set *s = load(
        "#typev drv_c40 13 \"[%10!s!][%10!-6s!][%10!6s!][%10!.2s!] w=%11!s! ps=%12!s! pw=%13!s! r=%14!s! l1=%15!s!\"\n"
        "{\na, ItemString -- 10\nw, ItemWString -- 11\nps, ItemPString -- 12\npw, ItemPWString -- 13\n"
        "r, ItemRString -- 14\nl1, ItemString -- 15\n}\n");
    etb_event e;
    message_event(&e, 8, 13);
    etb_ansi(&e.payload, "abc");
    /* "é😀" in UTF-16LE: U+00E9, then the surrogate pair D83D DE00 */
    static const uint8_t w[] = {0xE9, 0x00, 0x3D, 0xD8, 0x00, 0xDE, 0x00, 0x00};
    etb_bytes(&e.payload, w, sizeof w);
    etb_counted_ansi(&e.payload, "counted");
    etb_counted_utf16(&e.payload, "\\Device\\X");
    etb_ansi(&e.payload, "");
    static const uint8_t latin1[] = {'c', 0xE9, 0}; /* not UTF-8: each byte as Latin-1 */
    etb_bytes(&e.payload, latin1, sizeof latin1);
    expect(s, 13, &e,
           "[abc][abc   ][   abc][ab] w=\xC3\xA9\xF0\x9F\x98\x80 ps=counted pw=\\Device\\X r= l1=c\xC3\xA9");
    etb_event_free(&e);
    etw_wpp_set_free(s);
}

/* %0, %1..%9, the extended specifiers, escapes, what is left as written. */
static void test_prefix_and_extended(void) {
    etw_wpp_set *s = load(
        "#typev drv_c77 14 \"%0 [%!FUNC!] %!FILE!:%!LINE! %!LEVEL! %!FLAGS! %!COMPNAME! "
        "%1!s!|%2!s!|%3!x!|%5!u!|%6!u!|%8!d!|%9!d! 100%% %!NOPE! %55 %10!*d!%n%t!\" //   LEVEL=TRACE_LEVEL_WARNING FLAGS=TRACE_IO FUNC=Drv_Read\n"
        "{\nv, ItemLong -- 10\n}\n");
    etb_event e;
    message_event(&e, 8, 14);
    e.ev.kernel_time = 11;
    e.ev.user_time = 22;
    etb_i32(&e.payload, 9);
    /* the default prefix [%9!d!]%8!04X!.%3!04X!::%4!s! [%1!s!]; 132000000000000000 is
     * 2019-04-17T18:40:00Z (Python datetime) */
    expect(s, 14, &e,
           "[3]01A4.02B0::04/17/2019-18:40:00.000 [MyDrv] [Drv_Read] drv.c:77 TRACE_LEVEL_WARNING TRACE_IO MyDrv "
           "MyDrv|drv_c77|2b0|11|22|420|3 100% %!NOPE! %55 9\n\t!");
    etb_event_free(&e);
    etw_wpp_set_free(s);
}

static void expect_error(const etw_wpp_set *s, uint16_t n, etb_event *e, etw_status want, const char *needle) {
    char out[256], why[256];
    size_t len = 99;
    etw_status st = etw_wpp_format(msg(s, n), etb_event_get(e), out, sizeof out, &len, why, sizeof why);
    ETW_CHECK_INT(st, want);
    if (!strstr(why, needle)) {
        fprintf(stderr, "  why: %s (wanted %s)\n", why, needle);
        ETW_CHECK(0);
    }
    ETW_CHECK_INT(len, 0);
    ETW_CHECK_STR(out, "");
}

static void test_hostile_payloads(void) {
    etw_wpp_set *s = load(
        "#typev drv_c1 20 \"%10!d!\"\n{\nv, ItemLong -- 10\n}\n"
        "#typev drv_c2 21 \"%10!s!\"\n{\nv, ItemString -- 10\n}\n"
        "#typev drv_c3 22 \"%10!s!\"\n{\nv, ItemWString -- 10\n}\n"
        "#typev drv_c4 23 \"%10!s!\"\n{\nv, ItemPWString -- 10\n}\n"
        "#typev drv_c5 24 \"%10!s!\"\n{\nv, ItemSid -- 10\n}\n"
        "#typev drv_c6 25 \"%10!s! %11!s!\"\n{\nv, ItemLong -- 10\nw, ItemMystery -- 11\n}\n"
        "#typev drv_c7 26 \"%10!p!\"\n{\nv, ItemPtr -- 10\n}\n"
        "#typev drv_c8 27 \"%10!99999d!|%10!.99999d!|%10!q!|%10!\"\n{\nv, ItemLong -- 10\n}\n");
    etb_event e;
    message_event(&e, 8, 20);
    etb_u16(&e.payload, 1);
    expect_error(s, 20, &e, ETW_E_TRUNCATED,
                 "WPP message " G " 20 (drv_c1): argument 10 (v, ItemLong) needs 4 bytes, 2 left");
    etb_event_free(&e);
    message_event(&e, 8, 21);
    etb_bytes(&e.payload, "abc", 3);
    expect_error(s, 21, &e, ETW_E_TRUNCATED, "argument 10 (v, ItemString) is not NUL-terminated");
    etb_event_free(&e);
    message_event(&e, 8, 22);
    etb_bytes(&e.payload, "a\0b\0\0", 5); /* a NUL byte at an odd place is no terminator */
    expect_error(s, 22, &e, ETW_E_TRUNCATED, "(v, ItemWString) is not NUL-terminated");
    etb_event_free(&e);
    message_event(&e, 8, 23);
    etb_u16(&e.payload, 40000);
    etb_bytes(&e.payload, "ab", 2);
    expect_error(s, 23, &e, ETW_E_TRUNCATED, "needs 40002 bytes, 4 left");
    etb_event_free(&e);
    message_event(&e, 8, 24);
    static const uint8_t sid[8] = {1, 255, 0, 0, 0, 0, 0, 5};
    etb_bytes(&e.payload, sid, 8);
    expect_error(s, 24, &e, ETW_E_TRUNCATED, "needs 1028 bytes, 8 left");
    etb_event_free(&e);
    message_event(&e, 8, 25);
    etb_i32(&e.payload, 1);
    expect_error(s, 25, &e, ETW_E_UNSUPPORTED, "argument 11 (w, ItemMystery) has a type etwdecode does not know");
    etb_event_free(&e);
    message_event(&e, 4, 26); /* a 32-bit record's pointer is 4 bytes */
    etb_u32(&e.payload, 0x10);
    expect(s, 26, &e, "00000010");
    etb_event_free(&e);
    message_event(&e, 8, 26);
    etb_u32(&e.payload, 0x10);
    expect_error(s, 26, &e, ETW_E_TRUNCATED, "needs 8 bytes, 4 left");
    etb_event_free(&e);
    /* formats this formatter does not honour: the value's own text */
    message_event(&e, 8, 27);
    etb_i32(&e.payload, -3);
    expect(s, 27, &e, "-3|-3|-3|-3!");
    etb_event_free(&e);
    /* the caller's buffer too small: cut, ETW_E_LIMIT */
    message_event(&e, 8, 21);
    etb_ansi(&e.payload, "0123456789");
    char small[5];
    size_t len;
    ETW_CHECK_INT(etw_wpp_format(msg(s, 21), etb_event_get(&e), small, sizeof small, &len, NULL, 0), ETW_E_LIMIT);
    ETW_CHECK_STR(small, "0123");
    etb_event_free(&e);
    etw_wpp_set_free(s);
}

/* A format that grows past ETW_WPP_MAX_OUT: cut there, at a whole character. */
static void test_output_bound(void) {
    char body[8192];
    size_t k = (size_t)snprintf(body, sizeof body, "#typev drv_c9 30 \"");
    for (int i = 0; i < 200; i++) k += (size_t)snprintf(body + k, sizeof body - k, "%%10!1000s!");
    snprintf(body + k, sizeof body - k, "\"\n{\nv, ItemString -- 10\n}\n");
    etw_wpp_set *s = NULL;
    etw_wpp_set_new(&s, NULL);
    char text[9000];
    snprintf(text, sizeof text, G " C // SRC=x.c\n%s", body);
    ETW_CHECK_INT(etw_wpp_add_tmf_text(s, text, strlen(text), "big.tmf"), ETW_OK);
    etb_event e;
    message_event(&e, 8, 30);
    etb_ansi(&e.payload, "\xC3\xA9"); /* é, 2 bytes: 999 spaces + 2 bytes each */
    char *out = malloc(300000);
    size_t len = 0;
    ETW_CHECK_INT(etw_wpp_format(msg(s, 30), etb_event_get(&e), out, 300000, &len, NULL, 0), ETW_E_LIMIT);
    ETW_CHECK(len <= 65536 && len > 65000);
    ETW_CHECK(((unsigned char)out[len - 1] & 0xC0u) != 0xC0u); /* no lead byte cut from its tail */
    free(out);
    etb_event_free(&e);
    etw_wpp_set_free(s);
}

/* The decoder: MESSAGE records find their TMF message in a map of their
 * own; an EVENT_HEADER event with the same GUID and id never does. */
static void test_decoder(void) {
    etw_decoder *d = NULL;
    ETW_CHECK_INT(etw_decoder_new(&d, NULL), ETW_OK);
    etb_event e;
    message_event(&e, 8, 40);
    etb_ansi(&e.payload, "hi");
    etb_u32(&e.payload, 0xC0000001u);
    const etw_schema *sc = NULL;
    const char *why = NULL;
    ETW_CHECK_INT(etw_decoder_resolve(d, etb_event_get(&e), &sc, &why), ETW_E_NOT_FOUND);
    ETW_CHECK_STR(why, "no schema: WPP message 40 needs TMF data");
    const char *tmf = G " Comp // SRC=c.c MJ= MN=\n"
                        "#typev c_c5 40 \"%0 %10!s! %11!s!\" //   LEVEL=TRACE_LEVEL_ERROR FLAGS=F FUNC=Fn\n"
                        "{\nname, ItemString -- 10\nStatus->x, ItemNTSTATUS -- 11\n}\n";
    ETW_CHECK_INT(etw_decoder_add_tmf_text(d, tmf, strlen(tmf), "mem.tmf"), ETW_OK);
    ETW_CHECK_INT(etw_decoder_resolve(d, etb_event_get(&e), &sc, &why), ETW_OK);
    if (sc) {
        ETW_CHECK_INT(sc->source, ETW_SOURCE_WPP);
        ETW_CHECK_STR(sc->provider_name, "Comp");
        ETW_CHECK_STR(sc->event_name, "c_c5");
        ETW_CHECK_INT(sc->level, 2);
        ETW_CHECK_INT(sc->top_count, 2);
        ETW_CHECK_STR(sc->props[0].name, "name");
        ETW_CHECK_STR(sc->props[1].name, "Status->x");
        ETW_CHECK(sc->wpp != NULL && sc->wpp->number == 40);
    }
    const etw_schema *again = NULL;
    ETW_CHECK_INT(etw_decoder_resolve(d, etb_event_get(&e), &again, NULL), ETW_OK);
    ETW_CHECK(again == sc);
    /* the same GUID as a manifest-style event id 40: no WPP schema */
    etb_event m;
    etb_event_init(&m, 8);
    etw_tmf_parse_guid(G, 36, &m.ev.provider);
    m.ev.id = 40;
    const etw_schema *ms = NULL;
    ETW_CHECK_INT(etw_decoder_resolve(d, etb_event_get(&m), &ms, NULL), ETW_E_NOT_FOUND);
    etb_event_free(&m);
    /* a broken text is reported and adds nothing */
    const char *bad = "#typev x 1 \"y\"\n";
    ETW_CHECK_INT(etw_decoder_add_tmf_text(d, bad, strlen(bad), "bad.tmf"), ETW_E_CORRUPT);
    etb_event_free(&e);
    etw_decoder_free(d);
}

/* No allocation per event: once the text buffer has grown, formatting
 * allocates nothing (a counting allocator). */
static size_t nallocs;
static void *count_alloc(void *ctx, size_t n) {
    (void)ctx;
    nallocs++;
    return malloc(n);
}
static void count_free(void *ctx, void *p) {
    (void)ctx;
    free(p);
}

static void test_no_alloc(void) {
    etw_wpp_set *s = load("#typev drv_c50 50 \"%0 [%!FUNC!] %10!s! %11!p! %12!s!\"\n"
                          "{\na, ItemPWString -- 10\nb, ItemPtr -- 11\nc, ItemNTSTATUS -- 12\n}\n");
    etb_event e;
    message_event(&e, 8, 50);
    etb_counted_utf16(&e.payload, "\\Device\\X");
    etb_u64(&e.payload, 0x1234);
    etb_u32(&e.payload, 0);
    etw_allocator al = {count_alloc, count_free, NULL};
    etw_text t;
    etw_text_init(&t, &al);
    const etw_event *ev = etb_event_get(&e);
    ETW_CHECK_INT(etw_wpp_format_text(&t, msg(s, 50), ev, NULL, 0), ETW_OK);
    size_t before = nallocs;
    for (int i = 0; i < 1000; i++) {
        etw_text_clear(&t);
        ETW_CHECK(etw_wpp_format_text(&t, msg(s, 50), ev, NULL, 0) == ETW_OK);
    }
    ETW_CHECK_INT(nallocs, before);
    etw_text_free(&t);
    etb_event_free(&e);
    etw_wpp_set_free(s);
}

int main(void) {
    ETW_RUN(test_no_alloc);
    ETW_RUN(test_integers);
    ETW_RUN(test_pointers_and_status);
    ETW_RUN(test_special_types);
    ETW_RUN(test_strings);
    ETW_RUN(test_prefix_and_extended);
    ETW_RUN(test_hostile_payloads);
    ETW_RUN(test_output_bound);
    ETW_RUN(test_decoder);
    return ETW_TEST_DONE();
}
