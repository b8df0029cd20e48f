/* test_inputs.c - what the library says about inputs that are not what they
 * should be (issue 9.7): a directory, a device or a pipe given as a trace
 * path, a manifest that cannot be read, and a provider replaced by a later
 * manifest (a warning: nothing is lost, so it is not counted as a problem). */
#if !defined(_POSIX_C_SOURCE)
#define _POSIX_C_SOURCE 200809L
#endif
#include <errno.h>
#include <string.h>
#include <unistd.h>

#include "etw_test.h"
#include "etwdecode/etw_decoder.h"
#include "etwdecode/etw_reader.h"

static void test_not_regular_files(void) {
    etw_reader *r = (etw_reader *)&r;
    errno = 0;
    ETW_CHECK_INT(etw_reader_open_file(&r, ETW_TEST_DATA_DIR, NULL), ETW_E_IO);
    ETW_CHECK(r == NULL);
    ETW_CHECK_INT(errno, EISDIR);
    errno = 0;
    ETW_CHECK_INT(etw_reader_open_file(&r, "/dev/null", NULL), ETW_E_IO);
    ETW_CHECK_INT(errno, ESPIPE);
    int fds[2];
    ETW_CHECK_INT(pipe(fds), 0);
    char path[64];
    snprintf(path, sizeof path, "/dev/fd/%d", fds[0]);
    errno = 0;
    ETW_CHECK_INT(etw_reader_open_file(&r, path, NULL), ETW_E_IO);
    ETW_CHECK_INT(errno, ESPIPE);
    close(fds[0]);
    close(fds[1]);
    errno = 0;
    ETW_CHECK_INT(etw_reader_open_file(&r, ETW_TEST_DATA_DIR "/no-such.etl", NULL), ETW_E_IO);
    ETW_CHECK_INT(errno, ENOENT);
}

typedef struct seen {
    int n, warnings;
    char last[512];
    etw_status last_status;
} seen;

static void on_diag(void *ctx, const etw_diag *d) {
    seen *s = ctx;
    s->n++;
    if (d->status == ETW_OK) s->warnings++;
    s->last_status = d->status;
    snprintf(s->last, sizeof s->last, "%s", d->message);
}

static void test_manifest_messages(void) {
    seen s;
    memset(&s, 0, sizeof s);
    etw_decoder_options o;
    memset(&o, 0, sizeof o);
    o.on_diag = on_diag;
    o.diag_ctx = &s;
    etw_decoder *d;
    ETW_CHECK_INT(etw_decoder_new(&d, &o), ETW_OK);
    /* a missing file: one message, "path:0: cannot read the manifest: why"
     * (line 0: the file itself), errno kept */
    errno = 0;
    ETW_CHECK_INT(etw_decoder_add_manifest(d, "/no/such.man", NULL), ETW_E_IO);
    ETW_CHECK_INT(errno, ENOENT);
    ETW_CHECK_INT(s.n, 1);
    ETW_CHECK_STR(s.last, "/no/such.man:0: cannot read the manifest: No such file or directory");
    ETW_CHECK_INT(etw_decoder_stats_get(d)->problems, 1);
    /* the same provider twice: the later file wins, with a warning that is
     * not a problem */
    uint32_t prov = 0;
    ETW_CHECK_INT(etw_decoder_add_manifest(d, ETW_TEST_DATA_DIR "/HTTP_Server.man", &prov), ETW_OK);
    ETW_CHECK_INT(prov, 1);
    ETW_CHECK_INT(etw_decoder_add_manifest(d, ETW_TEST_DATA_DIR "/HTTP_Server.man", &prov), ETW_OK);
    ETW_CHECK_INT(s.n, 2);
    ETW_CHECK_INT(s.warnings, 1);
    ETW_CHECK_INT(s.last_status, ETW_OK);
    ETW_CHECK(strstr(s.last, "replaces the one loaded from") != NULL);
    ETW_CHECK_INT(etw_decoder_stats_get(d)->problems, 1);
    ETW_CHECK_INT(etw_decoder_stats_get(d)->warnings, 1);
    etw_decoder_free(d);
}

int main(void) {
    ETW_RUN(test_not_regular_files);
    ETW_RUN(test_manifest_messages);
    return ETW_TEST_DONE();
}
