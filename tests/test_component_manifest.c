/* test_component_manifest.c - Windows component manifests (WinSxS *.man)
 * and manifests that load nothing (issue 8, part 2).
 *
 * The component manifest below is written for this test in the form Windows
 * keeps its providers' manifests in: <assembly
 * xmlns="urn:schemas-microsoft-com:asm.v3"> with <instrumentation> among
 * its other children, holding <events
 * xmlns="http://schemas.microsoft.com/win/2004/08/events">; here with three
 * providers in two <instrumentation> elements (one nested in another
 * element), prefixed and unprefixed element names, templates with a count
 * reference, a value map and a bitmap, and $(string.X) references of which
 * some resolve in the file's <localization> and some nowhere.
 *
 * It is loaded from a directory tree (-m DIR searches subdirectories), and
 * events built here (tests/etw_test_builder.h) are decoded through the JSON
 * writer: every expected value below is read off the manifest text and the
 * payload bytes the test writes, not off our output. */
#define _POSIX_C_SOURCE 200809L

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "etw_test.h"
#include "etw_test_builder.h"
#include "etwdecode/etw_decoder.h"
#include "etwdecode/etw_json.h"

static const char component_man[] =
    "<?xml version=\"1.0\" encoding=\"utf-8\" standalone=\"yes\"?>\n"
    "<assembly xmlns=\"urn:schemas-microsoft-com:asm.v3\" manifestVersion=\"1.0\"\n"
    "    copyright=\"test\">\n"
    "  <assemblyIdentity name=\"Test-Component-Etw\" version=\"10.0.19041.1\"\n"
    "      processorArchitecture=\"amd64\" language=\"neutral\" buildType=\"release\"/>\n"
    "  <file name=\"testdrv.sys\" destinationPath=\"$(runtime.drivers)\\\"/>\n"
    "  <instrumentation xmlns:win=\"http://manifests.microsoft.com/win/2004/08/windows/events\"\n"
    "      xmlns:xs=\"http://www.w3.org/2001/XMLSchema\">\n"
    "    <ev:events xmlns:ev=\"http://schemas.microsoft.com/win/2004/08/events\">\n"
    "      <ev:provider name=\"Test-Component-Alpha\" guid=\"{a1a1a1a1-0001-4000-8000-000000000001}\"\n"
    "          resourceFileName=\"%SystemRoot%\\system32\\drivers\\testdrv.sys\"\n"
    "          messageFileName=\"%SystemRoot%\\system32\\drivers\\testdrv.sys\" symbol=\"ALPHA\"\n"
    "          message=\"$(string.Alpha.Provider)\">\n"
    "        <ev:tasks>\n"
    "          <ev:task name=\"ConnTask\" value=\"3\" message=\"$(string.Alpha.Task.Conn)\"/>\n"
    "        </ev:tasks>\n"
    "        <ev:opcodes>\n"
    "          <ev:opcode name=\"OpAccept\" value=\"11\" message=\"$(string.Alpha.Op.Accept)\"/>\n"
    "        </ev:opcodes>\n"
    "        <ev:maps>\n"
    "          <ev:valueMap name=\"StateMap\">\n"
    "            <ev:map value=\"0\" message=\"$(string.Alpha.State.Idle)\"/>\n"
    "            <ev:map value=\"1\" message=\"$(string.Alpha.State.Busy)\"/>\n"
    "          </ev:valueMap>\n"
    "        </ev:maps>\n"
    "        <ev:templates>\n"
    "          <ev:template tid=\"T_Accept\">\n"
    "            <ev:data name=\"Port\" inType=\"win:UInt16\"/>\n"
    "            <ev:data name=\"State\" inType=\"win:UInt32\" map=\"StateMap\"/>\n"
    "            <ev:data name=\"Count\" inType=\"win:UInt16\"/>\n"
    "            <ev:data name=\"Ids\" inType=\"win:UInt32\" count=\"Count\"/>\n"
    "            <ev:data name=\"Peer\" inType=\"win:UnicodeString\"/>\n"
    "          </ev:template>\n"
    "        </ev:templates>\n"
    "        <ev:events>\n"
    "          <ev:event value=\"100\" version=\"1\" task=\"ConnTask\" opcode=\"OpAccept\"\n"
    "              level=\"win:Informational\" template=\"T_Accept\" symbol=\"ALPHA_ACCEPT\"\n"
    "              message=\"$(string.Alpha.Event.100)\"/>\n"
    "          <ev:event value=\"101\" task=\"ConnTask\" opcode=\"win:Stop\" symbol=\"ALPHA_STOP\"/>\n"
    "        </ev:events>\n"
    "      </ev:provider>\n"
    "      <ev:provider name=\"Test-Component-Beta\" guid=\"{b2b2b2b2-0002-4000-8000-000000000002}\"\n"
    "          symbol=\"BETA\" message=\"$(string.Beta.Provider)\">\n"
    "        <ev:tasks><ev:task name=\"Scan\" value=\"1\" message=\"$(string.Beta.Task.Scan)\"/></ev:tasks>\n"
    "        <ev:opcodes><ev:opcode name=\"Found\" value=\"12\" message=\"$(string.Beta.Op.Found)\"/></ev:opcodes>\n"
    "        <ev:maps>\n"
    "          <ev:bitMap name=\"FlagsMap\">\n"
    "            <ev:map value=\"0x1\" message=\"$(string.Beta.Flag.Read)\"/>\n"
    "            <ev:map value=\"0x2\" message=\"$(string.Beta.Flag.Write)\"/>\n"
    "          </ev:bitMap>\n"
    "        </ev:maps>\n"
    "        <ev:templates>\n"
    "          <ev:template tid=\"T_Found\">\n"
    "            <ev:data name=\"Flags\" inType=\"win:UInt32\" map=\"FlagsMap\"/>\n"
    "            <ev:data name=\"Size\" inType=\"win:UInt64\"/>\n"
    "          </ev:template>\n"
    "        </ev:templates>\n"
    "        <ev:events>\n"
    "          <ev:event value=\"7\" task=\"Scan\" opcode=\"Found\" template=\"T_Found\"\n"
    "              message=\"$(string.Beta.Event.7)\"/>\n"
    "        </ev:events>\n"
    "      </ev:provider>\n"
    "    </ev:events>\n"
    "  </instrumentation>\n"
    "  <dependency>\n"
    "    <dependentAssembly>\n"
    "      <instrumentation>\n"
    "        <events xmlns=\"http://schemas.microsoft.com/win/2004/08/events\">\n"
    "          <provider name=\"Test-Component-Gamma\" guid=\"{c3c3c3c3-0003-4000-8000-000000000003}\">\n"
    "            <templates><template tid=\"T_G\"><data name=\"Value\" inType=\"win:Int32\"/></template></templates>\n"
    "            <events><event value=\"1\" symbol=\"GammaTick\" template=\"T_G\" opcode=\"win:Info\"/></events>\n"
    "          </provider>\n"
    "        </events>\n"
    "      </instrumentation>\n"
    "    </dependentAssembly>\n"
    "  </dependency>\n"
    "  <localization>\n"
    "    <resources culture=\"en-US\">\n"
    "      <stringTable>\n"
    "        <string id=\"Alpha.Provider\" value=\"Alpha provider\"/>\n"
    "        <string id=\"Alpha.Task.Conn\" value=\"Connection\"/>\n"
    "        <string id=\"Alpha.Op.Accept\" value=\"Accept\"/>\n"
    "        <string id=\"Alpha.State.Idle\" value=\"Idle\"/>\n"
    "        <string id=\"Alpha.State.Busy\" value=\"Busy\"/>\n"
    "        <string id=\"Alpha.Event.100\" value=\"Accepted on port %1 from %5.\"/>\n"
    "      </stringTable>\n"
    "    </resources>\n"
    "  </localization>\n"
    "</assembly>\n";

static const etw_guid ALPHA = {0xa1a1a1a1, 0x0001, 0x4000, {0x80, 0, 0, 0, 0, 0, 0, 0x01}};
static const etw_guid BETA = {0xb2b2b2b2, 0x0002, 0x4000, {0x80, 0, 0, 0, 0, 0, 0, 0x02}};
static const etw_guid GAMMA = {0xc3c3c3c3, 0x0003, 0x4000, {0x80, 0, 0, 0, 0, 0, 0, 0x03}};

typedef struct diags {
    int n;
    int problems; /* status < 0: something lost (warnings are ETW_OK) */
    char all[8192];
} diags;

static void on_diag(void *ctx, const etw_diag *d) {
    diags *g = ctx;
    g->n++;
    if (d->status != ETW_OK) g->problems++;
    size_t l = strlen(g->all);
    snprintf(g->all + l, sizeof g->all - l, "%s\n", d->message ? d->message : "");
    if (getenv("ETW_TEST_VERBOSE")) fprintf(stderr, "diag: %s\n", d->message);
}

static int count_of(const char *hay, const char *needle) {
    int n = 0;
    for (const char *p = hay; (p = strstr(p, needle)) != NULL; p += strlen(needle)) n++;
    return n;
}

static void write_file(const char *path, const char *text) {
    FILE *f = fopen(path, "wb");
    ETW_CHECK(f != NULL);
    if (!f) return;
    fwrite(text, 1, strlen(text), f);
    fclose(f);
}

static etw_decoder *new_decoder(diags *g) {
    memset(g, 0, sizeof *g);
    etw_decoder_options o;
    memset(&o, 0, sizeof o);
    o.on_diag = on_diag;
    o.diag_ctx = g;
    etw_decoder *d = NULL;
    ETW_CHECK_INT(etw_decoder_new(&d, &o), ETW_OK);
    return d;
}

/* The JSON line of ev with messages (a copy). */
static const char *json_line(etw_decoder *d, const etw_event *ev) {
    static char buf[8192];
    etw_json_options jo;
    memset(&jo, 0, sizeof jo);
    jo.decoder = d;
    jo.messages = 1;
    etw_json *j = NULL;
    buf[0] = 0;
    ETW_CHECK_INT(etw_json_new(&j, NULL, &jo), ETW_OK);
    const char *line;
    size_t len;
    if (j && etw_json_event(j, NULL, ev, &line, &len) == ETW_OK) {
        if (len >= sizeof buf) len = sizeof buf - 1;
        memcpy(buf, line, len);
        buf[len] = 0;
    }
    etw_json_free(j);
    return buf;
}

static void event_init(etb_event *e, const etw_guid *g, uint16_t id, uint8_t version, uint16_t task,
                       uint8_t opcode) {
    etb_event_init(e, 8);
    e->ev.provider = *g;
    e->ev.id = id;
    e->ev.version = version;
    e->ev.task = task;
    e->ev.opcode = opcode;
    e->ev.level = 4;
    e->ev.channel = 0;
}

#define CHECK_HAS(line, text)                                                               \
    do {                                                                                    \
        int has_ = strstr((line), (text)) != NULL;                                          \
        ETW_CHECK(has_);                                                                    \
        if (!has_) fprintf(stderr, "  missing %s\n  in %s\n", (text), (line));              \
    } while (0)

static void test_component_manifest_dir(void) {
    char root[] = "/tmp/etw-component-XXXXXX";
    ETW_CHECK(mkdtemp(root) != NULL);
    char sub[64], deeper[128], man[256], empty[128], other[128];
    snprintf(sub, sizeof sub, "%s/amd64_test-component", root);
    snprintf(deeper, sizeof deeper, "%s/nested", sub);
    ETW_CHECK_INT(mkdir(sub, 0700), 0);
    ETW_CHECK_INT(mkdir(deeper, 0700), 0);
    snprintf(man, sizeof man, "%s/test-component.man", deeper);
    snprintf(empty, sizeof empty, "%s/notes.xml", root);
    snprintf(other, sizeof other, "%s/readme.txt", sub);
    write_file(man, component_man);
    write_file(empty, "<?xml version=\"1.0\"?><notes><events><item/></events></notes>\n");
    write_file(other, "not a manifest, and not named like one\n");

    diags g;
    etw_decoder *d = new_decoder(&g);
    uint32_t np = 0;
    ETW_CHECK_INT(etw_decoder_add_manifest(d, root, &np), ETW_OK);
    ETW_CHECK_INT(np, 3); /* Alpha, Beta, Gamma: found two directories down */
    /* one warning for the strings that resolve nowhere (all of Beta's: the
     * file's string table has only Alpha's), naming the file; one for the
     * file with no provider, naming it and why */
    ETW_CHECK_INT(g.n, 2);
    ETW_CHECK_INT(g.problems, 0); /* both are warnings: nothing of the file is lost */
    ETW_CHECK_INT(count_of(g.all, "string reference"), 1);
    CHECK_HAS(g.all, "test-component.man:");
    CHECK_HAS(g.all, "5 string references resolve in no string table");
    CHECK_HAS(g.all, "$(string.Beta.Task.Scan)");
    CHECK_HAS(g.all, "notes.xml:0: no provider loaded: its <events> element holds no <provider>");
    ETW_CHECK(strstr(g.all, "readme.txt") == NULL);

    /* Alpha 100 v1: Connection/Accept (task and opcode messages resolved),
     * Port, State through StateMap, an array counted by Count, a string */
    etb_event e;
    event_init(&e, &ALPHA, 100, 1, 3, 11);
    etb_u16(&e.payload, 443);
    etb_u32(&e.payload, 1);
    etb_u16(&e.payload, 2);
    etb_u32(&e.payload, 70000);
    etb_u32(&e.payload, 5);
    etb_utf16(&e.payload, "peer-1");
    const char *line = json_line(d, etb_event_get(&e));
    CHECK_HAS(line, "\"provider\":\"Test-Component-Alpha\"");
    CHECK_HAS(line, "\"event\":\"Connection/Accept\"");
    CHECK_HAS(line, "\"fields\":{\"Port\":443,\"State\":\"Busy\",\"Count\":2,\"Ids\":[70000,5],\"Peer\":\"peer-1\"}");
    CHECK_HAS(line, "\"message\":\"Accepted on port 443 from peer-1.\"");
    ETW_CHECK(strstr(line, "\"error\"") == NULL);
    etb_event_free(&e);

    /* Alpha 101: no template; win:Stop shows as Stop */
    event_init(&e, &ALPHA, 101, 0, 3, 2);
    line = json_line(d, etb_event_get(&e));
    CHECK_HAS(line, "\"event\":\"Connection/Stop\"");
    CHECK_HAS(line, "\"fields\":{}");
    etb_event_free(&e);

    /* Beta 7: every $(string.X) resolves nowhere: the task's and opcode's
     * names, the bitmap's values, and no message */
    event_init(&e, &BETA, 7, 0, 1, 12);
    etb_u32(&e.payload, 3);
    etb_u64(&e.payload, 0x123456789ull);
    line = json_line(d, etb_event_get(&e));
    CHECK_HAS(line, "\"provider\":\"Test-Component-Beta\"");
    CHECK_HAS(line, "\"event\":\"Scan/Found\"");
    CHECK_HAS(line, "\"Size\":4886718345");
    ETW_CHECK(strstr(line, "\"message\"") == NULL);
    ETW_CHECK(strstr(line, "$(string.") == NULL);
    etb_event_free(&e);

    /* Gamma 1: the provider nested inside <dependency>; no task: its symbol */
    event_init(&e, &GAMMA, 1, 0, 0, 0);
    etb_i32(&e.payload, -12);
    line = json_line(d, etb_event_get(&e));
    CHECK_HAS(line, "\"provider\":\"Test-Component-Gamma\"");
    CHECK_HAS(line, "\"event\":\"GammaTick\"");
    CHECK_HAS(line, "\"fields\":{\"Value\":-12}");
    etb_event_free(&e);
    etw_decoder_free(d);

    /* a directory with no manifest file at all */
    char bare[128];
    snprintf(bare, sizeof bare, "%s/bare", root);
    ETW_CHECK_INT(mkdir(bare, 0700), 0);
    d = new_decoder(&g);
    ETW_CHECK_INT(etw_decoder_add_manifest(d, bare, &np), ETW_OK);
    ETW_CHECK_INT(np, 0);
    ETW_CHECK_INT(g.n, 1);
    CHECK_HAS(g.all, "bare:0: no provider loaded: no *.man or *.xml file in this directory or below");
    etw_decoder_free(d);
    /* a directory whose only manifest file yields nothing */
    d = new_decoder(&g);
    write_file(empty, "<html><body>no events here</body></html>\n");
    unlink(man);
    ETW_CHECK_INT(etw_decoder_add_manifest(d, root, &np), ETW_OK);
    ETW_CHECK_INT(np, 0);
    CHECK_HAS(g.all, "notes.xml:0: no provider loaded: no <events> element");
    CHECK_HAS(g.all, "no provider loaded: none of its 1 manifest file has a usable provider");
    etw_decoder_free(d);

    unlink(empty);
    unlink(other);
    rmdir(bare);
    rmdir(deeper);
    rmdir(sub);
    rmdir(root);
}

/* The same file given by name, and one whose providers are all unusable. */
static void test_component_manifest_file(void) {
    diags g;
    etw_decoder *d = new_decoder(&g);
    uint32_t np = 0;
    ETW_CHECK_INT(etw_decoder_add_manifest_xml(d, component_man, strlen(component_man), "comp.man", &np),
                  ETW_OK);
    ETW_CHECK_INT(np, 3);
    ETW_CHECK_INT(g.n, 1);
    CHECK_HAS(g.all, "comp.man:");
    etw_decoder_free(d);

    static const char bad_guids[] =
        "<assembly xmlns='urn:schemas-microsoft-com:asm.v3'><instrumentation>"
        "<events xmlns='http://schemas.microsoft.com/win/2004/08/events'>"
        "<provider name='NoGuid'/><provider name='BadGuid' guid='{not-a-guid}'/>"
        "</events></instrumentation></assembly>";
    d = new_decoder(&g);
    ETW_CHECK_INT(etw_decoder_add_manifest_xml(d, bad_guids, strlen(bad_guids), "bad.man", &np), ETW_OK);
    ETW_CHECK_INT(np, 0);
    ETW_CHECK_INT(g.n, 3); /* each provider, then the file */
    CHECK_HAS(g.all, "bad.man:0: no provider loaded: none of its 2 <provider> elements is usable");
    etw_decoder_free(d);
}

int main(void) {
    ETW_RUN(test_component_manifest_dir);
    ETW_RUN(test_component_manifest_file);
    return ETW_TEST_DONE();
}
