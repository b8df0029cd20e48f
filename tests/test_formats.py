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

# === every field of the JSON line in text, XML and timesketch, NAME_drive included ===
# The JSON line is the contract; the other renderings take the same members in the same order.
# net.4.5.2's VolumeMapping records map \Device\HarddiskVolume2\ to C:\ (the JSON NAME_drive
# test in test_etwdump_cli.py), so its Image events have a FileName_drive member after FileName;
# SelfDescribingSingleEvent has VolumeMapping events whose NtPath maps too.
TEXT_FIELD = re.compile(r' ([^ ="]+|"(?:[^"\\]|\\.)*")=("(?:[^"\\]|\\.)*"|[^ ]*)')


def text_fields(line):
    """(key, value) of a text line after its tid= (values as JSON scalars, strings unquoted)."""
    rest = line.split(" tid=", 1)[1].split(" ", 1)
    out = []
    for m in TEXT_FIELD.finditer(" " + rest[1] if len(rest) > 1 else ""):
        k, v = m.group(1), m.group(2)
        out.append((json.loads(k) if k.startswith('"') else k, json.loads(v) if v.startswith('"') else v))
    return out


def scalar_text(v):
    return v if isinstance(v, str) else json.dumps(v)


for path, sel in ((os.path.join(DATA, "net.4.5.2.x64.etl"), ["--event", "Image/*"]),
                  (os.path.join(DATA, "SelfDescribingSingleEvent.etl"), [])):
    name = os.path.basename(path)
    rc, js = run("-j", "1", *sel, path)
    events = [json.loads(x) for x in js.decode("utf-8").splitlines()]
    rc_t, tx = run("-j", "1", "--format", "text", *sel, path)
    rc_x, xm = run("-j", "1", "--format", "xml", *sel, path)
    rc_s, ts = run("-j", "1", "--format", "timesketch", *sel, path)
    lines = tx.decode("utf-8").splitlines()
    xml_events = list(ET.fromstring(xm.decode("utf-8")))
    ts_objs = [json.loads(x) for x in ts.decode("utf-8").splitlines()]
    check(rc == rc_t == rc_x == rc_s == 0 and len(events) == len(lines) == len(xml_events) == len(ts_objs) > 0,
          "%s: as many events in json, text, xml, timesketch" % name)
    drives = same = 0
    for e, line, x, t in zip(events, lines, xml_events, ts_objs):
        f = e.get("fields", {})
        if any(k in e for k in ("message", "error", "raw", "stack")) or not all(isinstance(v, (str, int, float, bool)) for v in f.values()):
            continue  # structs and arrays: their text form is JSON, not one token
        want = [(k, scalar_text(v)) for k, v in f.items()]
        drives += sum(1 for k in f if k.endswith("_drive"))
        got_x = [(d.get("Name"), d.text or "") for d in x.find(NS + "EventData")]
        got_s = [(k[len("field_"):], scalar_text(v)) for k, v in t.items() if k.startswith("field_")]
        if text_fields(line) == want and [k for k, _ in got_x] == [k for k, _ in want] and got_s == want:
            same += 1
        else:
            check(False, "%s %s %s: fields %r, text %r, xml %r, timesketch %r" %
                  (name, e["time"], e["event"], want, text_fields(line), got_x, got_s))
            break
    check(same > 0 and drives > 0, "%s: %d events with the same fields in text, xml and timesketch as in json, "
          "%d NAME_drive members among them" % (name, same, drives))

# --fields picks NAME_drive by its own name, as in JSON
rc, tx = run("-j", "1", "--format", "text", "--event", "Image/DCStart", "--fields", "FileName_drive", "-n", "1",
             os.path.join(DATA, "net.4.5.2.x64.etl"))
check(rc == 0 and tx.decode("utf-8").rstrip("\n").endswith(r' FileName_drive="C:\\Windows\\SysWOW64\\ntdll.dll"')
      and " FileName=" not in tx.decode("utf-8"), "text --fields FileName_drive: %r" % tx[-80:])

print("%d passed, %d failed" % (passed, failed))
sys.exit(1 if failed else 0)
