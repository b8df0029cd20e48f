/* test_profile_out.c - frame labels, format names and the profile writers
 * on a profile built by hand (the tree filled directly): folded lines root
 * first with their counts, hostile names made safe, JSON outputs valid
 * UTF-8 with no raw control characters. The formats' documented structure
 * on a real trace is checked by tests/test_profile_formats.py. */
#include <stdlib.h>
#include <string.h>

#include "etw_test.h"
#include "etwdecode/etwdecode.h"
#include "format/etw_text.h"
#include "profile/etw_profile_internal.h"
#include "profile/etw_stacktree.h"

static void test_labels(void) {
    char buf[128];
    etw_frame_info f;
    memset(&f, 0, sizeof f);
    f.address = 0x7ff612345678;
    f.kind = ETW_FRAME_ADDRESS;
    ETW_CHECK_INT(etw_frame_label(&f, buf, sizeof buf), 14);
    ETW_CHECK(!strcmp(buf, "0x7ff612345678"));
    f.kind = ETW_FRAME_IMAGE;
    f.module = "ntdll.dll";
    f.module_len = 9;
    f.offset = 0x1a2b;
    etw_frame_label(&f, buf, sizeof buf);
    ETW_CHECK(!strcmp(buf, "ntdll.dll+0x1a2b"));
    f.kind = ETW_FRAME_PDB;
    f.function = "RtlUserThreadStart";
    f.function_len = 18;
    f.offset = 0x21;
    etw_frame_label(&f, buf, sizeof buf);
    ETW_CHECK(!strcmp(buf, "ntdll.dll!RtlUserThreadStart+0x21"));
    f.offset = 0;
    etw_frame_label(&f, buf, sizeof buf);
    ETW_CHECK(!strcmp(buf, "ntdll.dll!RtlUserThreadStart"));
    f.kind = ETW_FRAME_JIT;
    f.module = NULL;
    f.module_len = 0;
    f.function = "System.DateTime.GetDatePart(int)";
    f.function_len = strlen(f.function);
    f.offset = 0x10;
    etw_frame_label(&f, buf, sizeof buf);
    ETW_CHECK(!strcmp(buf, "System.DateTime.GetDatePart(int)"));
    /* truncation: NUL-terminated, the whole length returned (as snprintf) */
    char small[8];
    ETW_CHECK_INT(etw_frame_label(&f, small, sizeof small), 32);
    ETW_CHECK(!strcmp(small, "System."));
    ETW_CHECK_INT(etw_frame_label(&f, NULL, 0), 32);
}

static void test_format_names(void) {
    etw_profile_format fmt;
    ETW_CHECK(etw_profile_format_parse("folded", &fmt) == ETW_OK && fmt == ETW_PROFILE_FOLDED);
    ETW_CHECK(etw_profile_format_parse("speedscope", &fmt) == ETW_OK && fmt == ETW_PROFILE_SPEEDSCOPE);
    ETW_CHECK(etw_profile_format_parse("firefox", &fmt) == ETW_OK && fmt == ETW_PROFILE_FIREFOX);
    ETW_CHECK(etw_profile_format_parse("pprof", &fmt) == ETW_E_INVALID_ARG);
    ETW_CHECK(etw_profile_format_parse(NULL, &fmt) == ETW_E_INVALID_ARG);
}

/* Set how a frame was resolved, as the symbolizer would. */
static void resolve(etw_stacktree *t, uint32_t frame, etw_frame_kind kind, const char *mod, const char *fn,
                    uint64_t off) {
    etw_frame_rec *f = &t->frames[frame];
    f->kind = (uint8_t)kind;
    if (mod) ETW_CHECK(etw_stacktree_str(t, mod, strlen(mod), &f->module) == ETW_OK);
    if (fn) ETW_CHECK(etw_stacktree_str(t, fn, strlen(fn), &f->function) == ETW_OK);
    f->offset = off;
}

/* The whole output of a writer, NUL-terminated (free it). */
static char *write_to_string(const etw_profile *p, etw_profile_format fmt, size_t *len) {
    FILE *f = tmpfile();
    if (!f) return NULL;
    etw_status st = etw_profile_write(p, fmt, f);
    ETW_CHECK_INT(st, ETW_OK);
    long n = ftell(f);
    rewind(f);
    char *s = malloc((size_t)n + 1);
    if (s && fread(s, 1, (size_t)n, f) != (size_t)n) n = 0;
    if (s) s[n] = 0;
    fclose(f);
    *len = (size_t)n;
    return s;
}

/* No control character outside the JSON escapes and well-formed UTF-8. */
static int json_text_ok(const char *s, size_t n) {
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c < 0x20 && !(c == '\n' && i == n - 1)) return 0;
    }
    return etw_utf8_valid((const uint8_t *)s, n);
}

static void test_writers(void) {
    etw_decoder *dec;
    ETW_CHECK(etw_decoder_new(&dec, NULL) == ETW_OK);
    etw_profile_options opt;
    memset(&opt, 0, sizeof opt);
    opt.decoder = dec;
    etw_profile *p;
    ETW_CHECK(etw_profile_new(&p, &opt) == ETW_OK);
    etw_stacktree *t = &p->tree;
    const uint64_t kmin = 0xFFFF000000000000u;
    /* leaf first: kernel leaf, then user frames, root last */
    uint64_t a[4] = {0xFFFFF80000001000u, 0x7FF700003000u, 0x7FF700002000u, 0x7FF700001000u};
    uint32_t s1, s2, s3;
    ETW_CHECK(etw_stacktree_push_leaf_first(t, &t->stacks, 0, 100, a, 4, kmin, 1, &s1) == ETW_OK);
    ETW_CHECK(etw_stacktree_push_leaf_first(t, &t->stacks, 0, 100, a + 1, 3, kmin, 1, &s2) == ETW_OK);
    ETW_CHECK(etw_stacktree_push_leaf_first(t, &t->stacks, 0, 100, a + 2, 2, kmin, 1, &s3) == ETW_OK);
    /* the frames: a kernel PDB function, a hostile JIT name, an image
     * frame, a bare address */
    resolve(t, t->stacks.nodes[s1].frame, ETW_FRAME_PDB, "ntoskrnl.exe", "KiPageFault", 0x40);
    resolve(t, t->stacks.nodes[s2].frame, ETW_FRAME_JIT, NULL, "Evil;Name\n\"x\"\xff", 0x8);
    resolve(t, t->stacks.nodes[s3].frame, ETW_FRAME_IMAGE, "Test.x64.exe", NULL, 0x2000);
    ETW_CHECK(etw_stacktree_set_process(t, 100, "Test;x64.exe", 12) == ETW_OK);
    const int64_t t0 = 131000000000000000LL;
    ETW_CHECK(etw_stacktree_sample(t, 100, 7, s1, 1.0, t0 + 20000) == ETW_OK);
    ETW_CHECK(etw_stacktree_sample(t, 100, 7, s1, 1.0, t0 + 30000) == ETW_OK);
    ETW_CHECK(etw_stacktree_sample(t, 100, 7, s2, 2.5, t0 + 10000) == ETW_OK);
    ETW_CHECK(etw_stacktree_sample(t, 100, 8, ETW_STACK_NONE, 1.0, t0) == ETW_OK);
    ETW_CHECK(etw_stacktree_sample(t, 200, 9, s3, 3.0, t0 + 5000) == ETW_OK);

    size_t n;
    char *folded = write_to_string(p, ETW_PROFILE_FOLDED, &n);
    ETW_CHECK(folded != NULL);
    if (folded) {
        /* pid, tid, first time order; root first; ';' -> ':', controls ->
         * '?', a bad byte -> U+FFFD; the count integral or decimal */
        const char *want = "Test:x64.exe (100);thread (7);0x7ff700001000;Test.x64.exe+0x2000;"
                           "Evil:Name?\"x\"\xEF\xBF\xBD 2.5\n"
                           "Test:x64.exe (100);thread (7);0x7ff700001000;Test.x64.exe+0x2000;"
                           "Evil:Name?\"x\"\xEF\xBF\xBD;ntoskrnl.exe!KiPageFault 2\n"
                           "Test:x64.exe (100);thread (8) 1\n"
                           "process (200);thread (9);0x7ff700001000;Test.x64.exe+0x2000 3\n";
        ETW_CHECK(!strcmp(folded, want));
        if (strcmp(folded, want)) fprintf(stderr, "got:\n%s", folded);
    }
    free(folded);
    char *ss = write_to_string(p, ETW_PROFILE_SPEEDSCOPE, &n);
    ETW_CHECK(ss && json_text_ok(ss, n));
    ETW_CHECK(ss && strstr(ss, "\"$schema\":\"https://www.speedscope.app/file-format-schema.json\""));
    ETW_CHECK(ss && strstr(ss, "Evil;Name\\n\\\"x\\\"\xEF\xBF\xBD"));
    free(ss);
    char *fx = write_to_string(p, ETW_PROFILE_FIREFOX, &n);
    ETW_CHECK(fx && json_text_ok(fx, n));
    ETW_CHECK(fx && strstr(fx, "\"preprocessedProfileVersion\":55"));
    free(fx);
    /* an unwritable stream: ETW_E_IO */
    FILE *ro = fopen(ETW_TEST_DATA_DIR "/SOURCES.md", "rb");
    if (ro) {
        ETW_CHECK_INT(etw_profile_write(p, ETW_PROFILE_FOLDED, ro), ETW_E_IO);
        fclose(ro);
    }
    ETW_CHECK_INT(etw_profile_write(p, (etw_profile_format)7, stdout), ETW_E_INVALID_ARG);
    etw_profile_free(p);
    etw_decoder_free(dec);
}

int main(void) {
    ETW_RUN(test_labels);
    ETW_RUN(test_format_names);
    ETW_RUN(test_writers);
    return ETW_TEST_DONE();
}
