#!/usr/bin/env python3
"""End-to-end tests of etwdump's --format xml and --format timesketch, of
--csv-eol, and of the file names of a folder given as DIR/.

usage: test_formats.py ETWDUMP DATA_DIR

Expected values come from outside the code under test: event counts, pids,
tids, processors and timestamps from the records themselves (tests/etlref.py,
an independent reader of record headers), payload values from PerfView's
baseline of primitive-types.etl, the element names and order from
Microsoft's event schema (System: Provider, EventID, Version, Level, Task,
Opcode, Keywords, TimeCreated, Correlation, Execution, Channel, Computer),
the JSONL keys from Timesketch's import documentation. XML well-formedness
is Python's xml.etree on every bundled trace and fuzz corpus trace, with one
and two jobs (the large ones with two). Prints "N passed, N failed".
"""
import datetime as dt
import glob
import json
import os
import re
import subprocess
import sys
import xml.etree.ElementTree as ET

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import etlref  # noqa: E402

ETWDUMP, DATA = sys.argv[1], sys.argv[2]
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
NS = "{http://schemas.microsoft.com/win/2004/08/events/event}"
SYSTEM = ["Provider", "EventID", "Version", "Level", "Task", "Opcode", "Keywords", "TimeCreated", "Correlation",
          "Execution", "Channel", "Computer"]
passed = failed = 0


def check(cond, what):
    global passed, failed
    if cond:
        passed += 1
    else:
        failed += 1
        print("FAIL: " + what, file=sys.stderr)


def run(*args):
    p = subprocess.run([ETWDUMP, "-q", *args], capture_output=True, timeout=300)
    return p.returncode, p.stdout


def filetime_of(r, start, freq, raw0):
    """The record's FILETIME from its raw QPC timestamp (the header's StartTime and PerfFreq)."""
    return start + (r.raw - raw0) * 10_000_000 // freq


# === XML: well-formed on every trace, the schema's shape ======================
traces = sorted(glob.glob(os.path.join(DATA, "*.etl")) + glob.glob(os.path.join(ROOT, "fuzz", "corpus",
                                                                                 "etwdump", "*.etl")))
for path in traces:
    for jobs in ("1", "2") if os.path.getsize(path) < 2_000_000 else ("2",):
        rc, out = run("-j", jobs, "--format", "xml", path)
        name = "%s -j %s" % (os.path.basename(path), jobs)
        try:
            out.decode("utf-8")
            root = ET.fromstring(out)
        except (ValueError, ET.ParseError) as e:
            check(False, "xml %s: not well-formed UTF-8 XML: %s" % (name, e))
            continue
        check(rc in (0, 1) and root.tag == "Events" and len(root) > 0, "xml %s: <Events> with events" % name)
        check(out.startswith(b'<?xml version="1.0" encoding="UTF-8"?>\n<Events>\n') and out.endswith(b"</Events>\n"),
              "xml %s: declaration, <Events> ... </Events>" % name)
        shape = True
        for ev in root:
            sysel = ev.find(NS + "System")
            kids = [c.tag[len(NS):] for c in ev]
            if ev.tag != NS + "Event" or kids[:2] != ["System", "EventData"] or sysel is None or \
                    [c.tag[len(NS):] for c in sysel] != SYSTEM or \
                    not re.fullmatch(r"\{[0-9A-F]{8}-([0-9A-F]{4}-){3}[0-9A-F]{12}\}",
                                     sysel.find(NS + "Provider").get("Guid", "")) or \
                    not re.fullmatch(r"0x[0-9a-f]{16}", sysel.find(NS + "Keywords").text or "") or \
                    any(d.tag != NS + "Data" or d.get("Name") is None for d in ev.find(NS + "EventData")):
                shape = False
                break
        check(shape, "xml %s: every <Event> in the event schema's shape" % name)

# known events: primitive-types.etl against the record headers and PerfView's baseline
PT = os.path.join(DATA, "primitive-types.etl")
recs = etlref.merged(etlref.records(PT))
start, freq, _, raw0 = etlref.logfile(PT)
base = [b for b in open(os.path.join(DATA, "primitive-types.baseline.txt"), encoding="utf-8-sig")
        if b.startswith("EVENT ") and "PrimitiveTypesTest" in b]
rc, out = run("--format", "xml", PT)
root = ET.fromstring(out)
check(len(root) == len(recs), "xml: one <Event> per record (%d, %d)" % (len(root), len(recs)))
solar = [(ev, r) for ev, r in zip(root, recs)
         if ev.find(NS + "System/" + NS + "Provider").get("Name") == "solar_system"]
check(len(solar) == len(base) == 5, "xml: the 5 PrimitiveTypesTest events PerfView shows")
for (ev, r), b in zip(solar, base):
    s = ev.find(NS + "System")
    ex = s.find(NS + "Execution")
    check(ex.get("ProcessID") == str(r.pid) and ex.get("ThreadID") == str(r.tid) and
          ex.get("ProcessorID") == str(r.cpu), "xml Execution from the record header: %r" % ex.attrib)
    check(s.find(NS + "EventID").text == str(r.id) and s.find(NS + "Level").text == str(r.level) and
          s.find(NS + "Version").text == str(r.version), "xml EventID/Level/Version from the record header")
    check(s.find(NS + "Provider").get("Guid").lower() == "{%s}" % r.provider, "xml Provider Guid")
    ft = filetime_of(r, start, freq, raw0)
    want = (dt.datetime(1601, 1, 1) + dt.timedelta(microseconds=ft // 10)).strftime("%Y-%m-%dT%H:%M:%S")
    check(s.find(NS + "TimeCreated").get("SystemTime", "").startswith(want), "xml TimeCreated %s" % want)
    data = {d.get("Name"): d.text or "" for d in ev.find(NS + "EventData")}
    for name in ("string_type", "int32_type", "uint16_type", "int16_type", "uint64_type"):
        want = re.search(r"\b%s=([^;]*);" % name, b).group(1)
        check(data.get(name) == want, "xml Data %s=%s as PerfView shows it (%r)" % (name, want, data.get(name)))

# hostile text: whatever the strings hold, the XML parses (the etwdump fuzz corpus above); the escaping itself
rc, out = run("--format", "xml", "-n", "1", os.path.join(DATA, "HTTP_Server.etl"))
check(b'LogFileName">C:\\PerfLogs' in out, "xml: backslashes as they are in character data")

# === Timesketch JSONL ==========================================================
rc, out = run("--format", "timesketch", PT)
lines = out.decode("utf-8").splitlines()
check(len(lines) == len(recs), "timesketch: one line per event")
objs = [json.loads(x) for x in lines]
ok = True
for o, r in zip(objs, recs):
    if not (isinstance(o.get("message"), str) and o["message"] and o.get("timestamp_desc") == "Event Time" and
            isinstance(o.get("timestamp"), int) and "time" not in o and "fields" not in o):
        ok = False
        break
    t = dt.datetime.fromisoformat(o["datetime"])
    epoch_us = (t - dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc)) // dt.timedelta(microseconds=1)
    if t.utcoffset() != dt.timedelta(0) or epoch_us != o["timestamp"]:
        ok = False
        break
    if not r.header and o["timestamp"] != (filetime_of(r, start, freq, raw0) - 116444736000000000) // 10:
        ok = False
        break
check(ok, "timesketch: message, datetime (UTC), timestamp (its microseconds since 1970, the record's time), "
      "timestamp_desc on every line")
ts_solar = [o for o in objs if o.get("provider") == "solar_system"]
check(len(ts_solar) == 5, "timesketch: the 5 PrimitiveTypesTest events")
for o, b in zip(ts_solar, base):
    for name in ("string_type", "int32_type", "uint64_type"):
        want = re.search(r"\b%s=([^;]*);" % name, b).group(1)
        check(str(o.get("field_" + name)) == want, "timesketch field_%s=%s (%r)" % (name, want, o.get("field_" + name)))
    check(o["message"].startswith("solar_system/PrimitiveTypesTest ") and
          "string_type=%s" % o["field_string_type"] in o["message"],
          "timesketch: a summary message where the event has no manifest message: %r" % o["message"][:80])

# === CSV line ends ============================================================
rc, out = run("--format", "csv", "--csv-eol", "lf", PT)
check(rc == 0 and b"\r" not in out and out.count(b"\n") == len(recs) + 1, "csv --csv-eol lf: LF only")
rc, out = run("--format", "csv", PT)
check(rc == 0 and out.count(b"\r\n") == out.count(b"\n") == len(recs) + 1, "csv: CRLF by default")

# === a folder given with a trailing slash: no double slash in "file" =========
import shutil  # noqa: E402
import tempfile  # noqa: E402
with tempfile.TemporaryDirectory() as tmp:
    for f in ("smallEtlFile.etl", "lxcore_kernel.etl"):
        shutil.copy(os.path.join(DATA, f), tmp)
    rc, out = run(tmp + "/")
    files = {json.loads(x)["file"] for x in out.decode("utf-8").splitlines()}
    check(files == {tmp + "/smallEtlFile.etl", tmp + "/lxcore_kernel.etl"}, "DIR/: file names %r" % files)

print("%d passed, %d failed" % (passed, failed))
sys.exit(1 if failed else 0)
