#!/usr/bin/env python3
"""End-to-end tests of etwdump's investigation options (selection, several
files, text/CSV, fields, time forms, summaries, progress, signals).

usage: test_etwdump_cli.py ETWDUMP DATA_DIR

Expected results are derived without the code under test: counts and header
values from the trace's own records (tests/etlref.py, an independent reader
of record headers), names through Python's fnmatch over the unfiltered JSON
output (the selection is what is under test, not the naming), provider
GUIDs from the manifest XML. Prints "N passed, N failed".
"""
import datetime as dt
import fnmatch
import json
import os
import re
import subprocess
import sys
import xml.etree.ElementTree as ET

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import etlref  # noqa: E402

ETWDUMP, DATA = sys.argv[1], sys.argv[2]
passed = failed = 0


def check(cond, what):
    global passed, failed
    if cond:
        passed += 1
    else:
        failed += 1
        print("FAIL: " + what, file=sys.stderr)


def run(*args, **kw):
    p = subprocess.run([ETWDUMP, *args], capture_output=True, timeout=300, **kw)
    return p.returncode, p.stdout.decode("utf-8"), p.stderr.decode("utf-8", "replace")


def events(*args):
    rc, out, err = run(*args)
    return rc, [json.loads(line) for line in out.splitlines()], err


def data(name):
    return os.path.join(DATA, name)


HTTP, HTTPMAN = data("HTTP_Server.etl"), data("HTTP_Server.man")
PS = data("powershell.etl")
recs = {n: etlref.records(data(n)) for n in ("HTTP_Server.etl", "powershell.etl", "gcevents.etl",
                                             "ShutdownPerfDiagLogger.etl", "AMSITrace.etl")}
full = {n: events(data(n))[1] for n in recs}
check(all(len(full[n]) == len(recs[n]) for n in recs), "reference reader and etwdump see the same records")


def count(trace, *opts):
    rc, evs, err = events(*opts, data(trace))
    check(rc in (0, 1), "%s %s: exit %d %s" % (trace, opts, rc, err[:200]))
    return len(evs), evs


def expect(trace, opts, pred, what=None):
    want = sum(1 for r in recs[trace] if pred(r))
    got, _ = count(trace, *opts)
    check(got == want, "%s %s: %d events, the records say %d" % (trace, " ".join(opts), got, want))


# --- provider ------------------------------------------------------------------
man = ET.parse(HTTPMAN).getroot()
prov = [e for e in man.iter() if e.tag.endswith("provider")][0]
http_guid = prov.get("guid").strip("{}").lower()
http_name = prov.get("name")
check(http_name == "Microsoft-Windows-HttpService", "manifest names the provider")
expect("HTTP_Server.etl", ["--provider", http_guid], lambda r: r.provider == http_guid)
expect("HTTP_Server.etl", ["--provider", "{" + http_guid.upper() + "}"], lambda r: r.provider == http_guid)
for opts in (["--provider", http_name], ["--provider", "microsoft-windows-http*"],
             ["--provider", "*HttpService"]):
    expect("HTTP_Server.etl", ["-m", HTTPMAN] + opts, lambda r: r.provider == http_guid)
expect("HTTP_Server.etl", ["-m", HTTPMAN, "--provider", "!" + http_name], lambda r: r.provider != http_guid)
expect("HTTP_Server.etl", ["-m", HTTPMAN, "--exclude-provider", http_name], lambda r: r.provider != http_guid)
expect("HTTP_Server.etl", ["-m", HTTPMAN, "--provider", "Microsoft-Windows-Http"], lambda r: False)
# two providers are alternatives
ps_guids = sorted({r.provider for r in recs["powershell.etl"] if r.form == "EVENT_HEADER"})
expect("powershell.etl", ["--provider", ps_guids[0], "--provider", ps_guids[-1]],
       lambda r: r.provider in (ps_guids[0], ps_guids[-1]))

# --- event names (fnmatch over the unfiltered output is the reference) ----------
# (display names only: the built-in CLR manifest shows gcevents' GC events as
# GC/..., and GarbageCollection/* selects them by their symbolic names, which
# the output does not carry; that is checked below with the symbol forms)
for trace, glob in (("gcevents.etl", "GC/*"), ("gcevents.etl", "*Start*"),
                    ("ShutdownPerfDiagLogger.etl", "Process/*"), ("ShutdownPerfDiagLogger.etl", "*/DC*"),
                    ("AMSITrace.etl", "EventTrace")):
    want = [e for e in full[trace] if fnmatch.fnmatchcase(e["event"].lower(), glob.lower())]
    got, evs = count(trace, "--event", glob)
    check(got == len(want) and [e["time"] for e in evs] == [e["time"] for e in want],
          "%s --event %s: %d events, fnmatch says %d" % (trace, glob, got, len(want)))
    got, evs = count(trace, "--exclude-event", glob)
    check(got == len(full[trace]) - len(want), "%s --exclude-event %s: %d" % (trace, glob, got))

# --- descriptor: id, level, keywords ------------------------------------------
expect("HTTP_Server.etl", ["--id", "21"], lambda r: r.id == 21)
expect("HTTP_Server.etl", ["--id", "1,2,10-12"], lambda r: r.id in (1, 2, 10, 11, 12))
expect("HTTP_Server.etl", ["--id", "2", "--id", "21"], lambda r: r.id in (2, 21))
expect("HTTP_Server.etl", ["--exclude-id", "21"], lambda r: r.id != 21)
expect("powershell.etl", ["--level", "3"], lambda r: r.level <= 3)
expect("powershell.etl", ["--level", "4"], lambda r: r.level <= 4)
kws = sorted({r.keywords for r in recs["HTTP_Server.etl"] if r.keywords})
bits = [1 << b for b in range(63) if any(k >> b & 1 for k in kws)]
check(len(bits) >= 2, "HTTP_Server has several keyword bits: %s" % [hex(k) for k in kws])
for bit in bits:
    expect("HTTP_Server.etl", ["--keywords", hex(bit)], lambda r: r.keywords & bit)
    expect("HTTP_Server.etl", ["--exclude-keywords", str(bit)], lambda r: not r.keywords & bit)

# --- pid / tid (user events: kernel records may name their process in the payload) ---
user = [r for r in recs["powershell.etl"] if r.form == "EVENT_HEADER"]
pid = max({r.pid for r in user}, key=lambda p: sum(1 for r in user if r.pid == p))
tid = max({r.tid for r in user}, key=lambda t: sum(1 for r in user if r.tid == t))
expect("powershell.etl", ["--pid", str(pid), "--exclude-provider", "Windows Kernel"],
       lambda r: r.form == "EVENT_HEADER" and r.pid == pid)
expect("powershell.etl", ["--tid", str(tid), "--exclude-provider", "Windows Kernel"],
       lambda r: r.form == "EVENT_HEADER" and r.tid == tid)
expect("powershell.etl", ["--exclude-pid", str(pid), "--exclude-provider", "Windows Kernel"],
       lambda r: r.form == "EVENT_HEADER" and r.pid != pid)
expect("powershell.etl", ["--pid", str(pid), "--tid", str(tid), "--exclude-provider", "Windows Kernel"],
       lambda r: r.form == "EVENT_HEADER" and r.pid == pid and r.tid == tid)

# --- time: relative and RFC 3339, bounds between two events ----------------------
start, freq, clock, raw0 = etlref.logfile(HTTP)
rel = sorted((r.raw - raw0) / freq for r in recs["HTTP_Server.etl"])
a, b = (rel[500] + rel[501]) / 2, (rel[1500] + rel[1501]) / 2
expect("HTTP_Server.etl", ["--since", "%.7f" % a], lambda r: (r.raw - raw0) / freq >= a)
expect("HTTP_Server.etl", ["--until", "%.7f" % b], lambda r: (r.raw - raw0) / freq < b)
expect("HTTP_Server.etl", ["--since", "%.7f" % a, "--until", "%.7f" % b],
       lambda r: a <= (r.raw - raw0) / freq < b)


def rfc3339(filetime):
    t = dt.datetime(1601, 1, 1, tzinfo=dt.timezone.utc) + dt.timedelta(microseconds=filetime // 10)
    return t.strftime("%Y-%m-%dT%H:%M:%S.") + "%07d" % (filetime % 10**7) + "Z"


expect("HTTP_Server.etl", ["--since", rfc3339(start + int(a * 1e7)), "--until", rfc3339(start + int(b * 1e7))],
       lambda r: a <= (r.raw - raw0) / freq < b)
local = dt.datetime(1601, 1, 1, tzinfo=dt.timezone.utc) + dt.timedelta(microseconds=(start + int(a * 1e7)) // 10)
expect("HTTP_Server.etl", ["--since", local.astimezone(dt.timezone(dt.timedelta(hours=-5))).isoformat()],
       lambda r: (r.raw - raw0) / freq >= a - 1e-6)

# --- errors ------------------------------------------------------------------
got, evs = count("HTTP_Server.etl", "--errors")
check(got == sum(1 for e in full["HTTP_Server.etl"] if "error" in e) == 2041,
      "--errors: %d events with an error (2041 HttpService events have no schema without the manifest)" % got)
got, evs = count("HTTP_Server.etl", "--exclude-errors")
check(got == 1 and evs[0]["event"] == "EventTrace", "--exclude-errors keeps the header only")
got, _ = count("HTTP_Server.etl", "--errors", "-m", HTTPMAN)
check(got == 0, "--errors with the manifest: nothing fails (%d)" % got)

# --- EventSource manifests still learned when their events are left out ------------
rc, evs, err = events("--exclude-event", "ManifestData", data("BondEtwSample.etl"))
bond = [e for e in evs if e["provider"] == "MSOpenTech-Tx-BinaryEventSource"]
check(len(bond) == 11 and all("error" not in e for e in bond),
      "events after a filtered-out EventSource manifest still decode (%d)" % len(bond))

# --- max-events counts selected events; bad values are usage errors ---------------
got, evs = count("HTTP_Server.etl", "--id", "2", "-n", "3")
check(got == 3 and all(e["id"] == 2 for e in evs), "--max-events counts selected events")
for bad in (["--id", "x"], ["--level", "999"], ["--since", "yesterday"], ["--keywords", "0xZZ"],
            ["--level", "!3"], ["--provider"]):
    rc, out, err = run(HTTP, *bad)
    check(rc == 2 and out == "" and err.startswith("etwdump: "), "bad %s: exit %d %r" % (bad, rc, err))


# === several files, one timeline =============================================
import csv
import io
import shutil
import signal
import tempfile
import time

A, B = data("primitive-types.etl"), data("gcevents.etl")
rc, evs, err = events(A, B)
ra, rb = etlref.records(A), etlref.records(B)
check(rc == 0 and len(evs) == len(ra) + len(rb), "A B: %d events, the records say %d" % (len(evs), len(ra) + len(rb)))
check(all(e.get("file") in (A, B) for e in evs), "every event names its file when two are read")
check(sum(e.get("file") == A for e in evs) == len(ra), "A's events all there")
check([e["time"] for e in evs] == sorted(e["time"] for e in evs), "merged in timestamp order")
for path in (A, B):
    alone = events(path)[1]
    check(all("file" not in e for e in alone), "one file: no file key")
    check([e["time"] for e in evs if e["file"] == path] == [e["time"] for e in alone],
          "%s keeps its own order inside the merge" % path)
    heads = [e for e in evs if e["file"] == path]
    check(heads[0]["event"] == "EventTrace", "%s: its log-file header is its own first event" % path)
rc, evs2, err = events(B, A)
check([(e["time"], e["file"]) for e in evs2 if e["time"] != "x"] and len(evs2) == len(evs), "B A: the same events")
rc, evs3, err = events("--file-order", A, B)
check([e["file"] for e in evs3] == [A] * len(ra) + [B] * len(rb), "--file-order concatenates the files")
rc, evs4, err = events(A, data("no-such.etl"), B)
check(rc == 1 and "no-such.etl: cannot read" in err and len(evs4) == len(evs),
      "an unreadable file is reported and skipped, the others go on (rc %d)" % rc)
rc, out, err = run(data("no-such.etl"), data("HTTP_Server.man"))
check(rc == 2 and out == "", "no file readable: exit 2")
with tempfile.TemporaryDirectory() as tmp:
    os.makedirs(os.path.join(tmp, "sub", "deeper"))
    shutil.copy(A, os.path.join(tmp, "a.etl"))
    shutil.copy(B, os.path.join(tmp, "sub", "deeper", "b.ETL"))
    open(os.path.join(tmp, "sub", "notes.txt"), "w").write("not a trace")
    rc, evs5, err = events(tmp)
    check(rc == 0 and len(evs5) == len(ra) + len(rb), "a directory: its .etl files, recursively (%d)" % len(evs5))
    check({e["file"] for e in evs5} == {os.path.join(tmp, "a.etl"), os.path.join(tmp, "sub", "deeper", "b.ETL")},
          "files found in a directory are named by their path")
# selection over the merged stream: relative times count from the earliest start
sa, fa, _, r0a = etlref.logfile(A)
sb, fb, _, r0b = etlref.logfile(B)
origin = min(sa, sb)
rel_all = sorted([(sa + (r.raw - r0a) * 10**7 // fa - origin) / 1e7 for r in ra] +
                 [(sb + (r.raw - r0b) * 10**7 // fb - origin) / 1e7 for r in rb])
cut = (rel_all[5] + rel_all[6]) / 2
rc, evs6, err = events("--since", "%.7f" % cut, A, B)
check(len(evs6) == len(rel_all) - 6, "--since over two files from the earliest start: %d, expected %d" % (
    len(evs6), len(rel_all) - 6))

# === text =====================================================================
PT = data("primitive-types.etl")
base = [x for x in open(data("primitive-types.baseline.txt"), encoding="utf-8-sig") if "PrimitiveTypesTest" in x]
pt_recs = etlref.records(PT)
start, freq, _, raw0 = etlref.logfile(PT)
rc, out, err = run("--format", "text", PT)
lines = out.splitlines()
check(rc == 0 and len(lines) == len(pt_recs), "text: one line per event (%d)" % len(lines))
solar = [l for l in lines if "solar_system/PrimitiveTypesTest" in l]
base = [b for b in base if b.startswith("EVENT ")]
check(len(solar) == len(base) == 5, "text: the 5 PrimitiveTypesTest events PerfView shows")
for line, b in zip(solar, base):
    for name in ("string_type", "int32_type", "uint16_type", "int16_type", "uint64_type"):
        want = re.search(r"\b%s=([^;]*);" % name, b).group(1)
        check(re.search(r" %s=%s( |$)" % (name, re.escape(want)), line) is not None,
              "text %s=%s as PerfView shows it: %r" % (name, want, line[:160]))
user = [r for r in pt_recs if r.form == "EVENT_HEADER"]
for line, r in zip(solar, user):
    t = float(line.split(" ", 1)[0])
    check(abs(t - (r.raw - raw0) / freq) < 2e-7, "text time %s is seconds from the start (%.7f)" % (
        line.split(" ", 1)[0], (r.raw - raw0) / freq))
    check(" pid=%d tid=%d " % (r.pid, r.tid) in line, "text pid/tid from the record header")
check(lines[0].split(" ", 1)[1].startswith("Windows Kernel/EventTrace pid="), "text: provider/event after the time")
rc, out, err = run("--format", "text", "--time", "utc", "--fields", "string_type", "--provider", "solar_system", PT)
l0 = out.splitlines()[0]
check(re.match(r"^2021-09-09T14:59:35\.\d{7}Z solar_system/PrimitiveTypesTest pid=\d+ tid=\d+ string_type=Mercury$",
               l0) is not None, "text --time utc --fields: %r" % l0)
# strings with spaces are quoted; control characters never reach the terminal raw
rc, out, err = run("--format", "text", "--errors", "-n", "1", HTTP)
check(re.search(r' error="no schema: [^"]*"', out) is not None, "text: error=\"...\" quoted: %r" % out[:200])
check(not any(ord(c) < 0x20 and c != "\n" for c in out), "text: no raw control characters")
# values with a space are quoted (no backslash in them to force it): the
# version resource of Windows 8's ntdll.dll (FileDescription "NT Layer DLL",
# FileVersion "6.2.9200.16384 (win8_rtm.120725-1247)") and a CLR method
# signature; a value without space or "=" stays bare
rc, out, err = run("--format", "text", "--provider", "KernelTraceControl", "-n", "1", data("net.4.5.2.x64.etl"))
check(' OrigFileName=ntdll.dll FileDescription="NT Layer DLL" '
      'FileVersion="6.2.9200.16384 (win8_rtm.120725-1247)" BinFileVersion=6.2.9200.16384 ' in out,
      "text: values with spaces quoted: %r" % out[:300])
rc, out, err = run("--format", "text", "--event", "CLRMethod/MethodJittingStarted", "-n", "1",
                   data("net.4.5.2.x64.etl"))
check(' MethodName=SetupDomain MethodSignature="instance void  (bool,class System.String,class System.String,'
      'class System.String[],class System.String[])" ClrInstanceID=9' in out,
      "text: a method signature quoted: %r" % out[:400])
# a field name with a space is quoted too: the AmsiTrace provider's "Raw Script" (the scanned
# bytes, beside the decoded "Script")
rc, out, err = run("--format", "text", "--provider", "AmsiTrace", "-n", "1", data("AMSITrace.etl"))
check(' Engine=VBScript Script="IWshShell3.Run(' in out and ' "Raw Script"=[' in out,
      "text: a field name with a space quoted: %r" % out[:300])

# === CSV ======================================================================
rc, out, err = run("--format", "csv", "-m", HTTPMAN, HTTP)
check(rc == 0 and out.count("\r\n") == out.count("\n") and out.endswith("\r\n"), "csv: CRLF line ends")
rows = list(csv.reader(io.StringIO(out, newline="")))
header, body = rows[0], rows[1:]
http_full = events("-m", HTTPMAN, HTTP)[1]
check(len(body) == len(recs["HTTP_Server.etl"]), "csv: one row per event (%d)" % len(body))
fixed = ["time", "provider", "provider_guid", "event", "id", "version", "level", "opcode", "task", "channel",
         "keywords", "pid", "process", "tid", "cpu", "data_len", "activity_id", "related_activity_id", "container_id",
         "error"]
check(header[:len(fixed)] == fixed, "csv: the fixed keys first: %r" % header[:len(fixed)])
names = []
for e in http_full:
    for k in e["fields"]:
        if k not in names:
            names.append(k)
check(header[len(fixed):] == [("fields." + n if n in fixed else n) for n in names],
      "csv: one column per field name, in order of first appearance")
col = {n: i for i, n in enumerate(header)}


def cell(v):
    if v is None:
        return ""
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (dict, list)):
        return json.dumps(v, separators=(",", ":"), ensure_ascii=False)
    return str(v)


bad = 0
for row, e, r in zip(body, http_full, etlref.merged(recs["HTTP_Server.etl"])):
    if len(row) != len(header):
        bad += 1
        continue
    if row[col["id"]] != str(r.id if r.id is not None else 0) or row[col["data_len"]] != str(r.data_len):
        bad += 1
    for k, v in e["fields"].items():
        if row[col["fields." + k if k in fixed else k]] != cell(v):
            bad += 1
    for k in set(names) - e["fields"].keys():
        if row[col["fields." + k if k in fixed else k]] != "":
            bad += 1
check(bad == 0, "csv: every cell as the record and the JSON say (%d differ)" % bad)
# a spreadsheet's view of Process/DCStart: ImageFileName and ProcessId from the bytes
SH = data("ShutdownPerfDiagLogger.etl")


def process_payloads(path):
    """(ProcessId, ImageFileName) of each Process Start/End/DCStart/DCEnd record (version 3 and
    later), read from the bytes: UniqueProcessKey (pointer), ProcessId, ParentId, SessionId,
    ExitStatus (u32), DirectoryTableBase (pointer), Flags (u32), then UserSID (a u32 0, or
    TOKEN_USER - two pointers - and the SID), then the ANSI ImageFileName."""
    import struct
    d = open(path, "rb").read()
    out = []
    for r in etlref.records(path):
        if r.form != "KERNEL" or r.provider[0] != 3 or r.provider[1] not in (1, 2, 3, 4) or r.version < 3:
            continue
        ps = 8 if r.htype in (0x02, 0x04, 0x11) else 4
        q = r.offset + (0x20 if r.htype in (0x01, 0x02) else 0x18 if r.htype in (0x03, 0x04) else 0x10)
        pid, = struct.unpack_from("<I", d, q + ps)
        q += ps + 16 + ps + 4
        if struct.unpack_from("<I", d, q)[0] == 0:
            q += 4
        else:
            q += 2 * ps
            q += 8 + 4 * d[q + 1]
        z = d.index(b"\0", q)
        out.append((pid, d[q:z].decode("latin-1")))
    return out


procs = process_payloads(SH)
check(len(procs) > 50, "ShutdownPerfDiagLogger has Process events (%d)" % len(procs))
rc, out, err = run("--format", "csv", "--event", "Process/DCStart", "--fields", "ProcessId,ImageFileName", SH)
rows = list(csv.DictReader(io.StringIO(out, newline="")))
dc = [(int(r["ProcessId"]), r["ImageFileName"]) for r in rows]
check(dc and set(dc) <= set(procs) and len(dc) == sum(1 for x in process_payloads(SH)) - sum(
    1 for r in recs["ShutdownPerfDiagLogger.etl"] if r.provider in ((3, 1), (3, 2), (3, 4))),
    "csv Process/DCStart: ProcessId and ImageFileName as the bytes say (%d rows)" % len(dc))

# === --fields and --time in JSON =================================================
rc, evs, err = events("--fields", "string_type,int32_type", "--provider", "solar_system", PT)
check(len(evs) == 5 and all(list(e["fields"]) == ["string_type", "int32_type"] for e in evs), "--fields in JSON")
rc, evs, err = events("--fields", "int32_type", "--fields", "string_type", "--provider", "solar_system", PT)
check(all(list(e["fields"]) == ["string_type", "int32_type"] for e in evs), "--fields repeated; the event's order")
rc, evs, err = events("--time", "relative", PT)
check(all(isinstance(e["time"], float) for e in evs), "--time relative: a number in JSON")
for e, r in zip(evs, pt_recs):
    check(abs(e["time"] - (r.raw - raw0) / freq) < 2e-7, "--time relative %r vs %.7f" % (e["time"], (r.raw - raw0) / freq))
utc = events(PT)[1]
p = subprocess.run([ETWDUMP, "--time", "local", PT], capture_output=True, env=dict(os.environ, TZ="Asia/Kolkata"))
loc = [json.loads(x) for x in p.stdout.decode().splitlines()]
ok = len(loc) == len(utc)
for a, b in zip(loc, utc):
    ta = dt.datetime.fromisoformat(a["time"][:26] + a["time"][27:])
    tb = dt.datetime.fromisoformat(b["time"][:26] + "+00:00")
    ok = ok and a["time"].endswith("+05:30") and ta == tb and a["time"][26] == b["time"][26]
check(ok, "--time local under TZ=Asia/Kolkata: the same instants with +05:30")

# === --stats ==================================================================
rc, out, err = run("--stats", "--format", "json", "-m", HTTPMAN, HTTP)
st = json.loads(out)
hr = recs["HTTP_Server.etl"]
check(st["events"] == len(hr) and st["bytes"] == sum(r.data_len for r in hr), "stats: events and bytes")
byname = {x["provider"]: x for x in st["providers"]}
check(byname.get(http_name, {}).get("count") == sum(1 for r in hr if r.provider == http_guid),
      "stats: %s count from the records" % http_name)
check(byname[http_name]["bytes"] == sum(r.data_len for r in hr if r.provider == http_guid), "stats: bytes")
times = [e["time"] for e in http_full if e["provider"] == http_name]
check(byname[http_name]["first"] == min(times) and byname[http_name]["last"] == max(times), "stats: first/last")
ev_counts = {}
for r in hr:
    if r.form == "EVENT_HEADER":
        ev_counts[r.id] = ev_counts.get(r.id, 0) + 1
name_of_id = {e["id"]: e["event"] for e in http_full if e["provider"] == http_name}
for x in st["events_by_name"]:
    if x["provider"] != http_name:
        continue
    ids = [i for i, n in name_of_id.items() if n == x["event"]]
    check(x["count"] == sum(ev_counts[i] for i in ids), "stats: %s count" % x["event"])
pids = {}
for r in hr:
    pids[r.pid] = pids.get(r.pid, 0) + 1
check({x["pid"]: x["count"] for x in st["processes"]} == pids, "stats: events by process from the record headers")
check(st["files"][0]["buffers"] == 36 and st["files"][0]["events"] == len(hr), "stats: the file's buffers")
check(st["errors"] == [], "stats: no decode error with the manifest")
rc, out, err = run("--stats", "--format", "json", HTTP)
st = json.loads(out)
check(st["errors"] and st["errors"][0]["kind"] == "no schema" and st["errors"][0]["count"] == 2041,
      "stats: 2041 'no schema' errors without the manifest: %r" % st["errors"][:1])
rc, out, err = run("--stats", "--format", "json", SH)
st = json.loads(out)
images = {}
for pid, img in procs:
    images[pid] = img  # the latest start or end names the pid
named = {x["pid"]: x["image"] for x in st["processes"] if x["image"] is not None}
check(len(named) > 20 and all(images.get(pid) == img for pid, img in named.items()),
      "stats: image names from the Process events, as the bytes say (%d named)" % len(named))
rc, out, err = run("--stats", "--provider", "Windows Kernel", "--event", "Process/*", SH)
check(rc == 0 and re.search(r"^\s+\d+\s+[\d.]+\s+[\d.]+\s+\d+  Windows Kernel/Process/DCStart$", out, re.M),
      "stats table: events by name line")
check(re.search(r"^\s+\d+ .* 4 System$", out, re.M) is not None, "stats table: pid 4 is System")
check("decode errors by kind\n  none" in out, "stats table: no errors")
rc, out, err = run("--stats", HTTP, PT)
check(out.count("\nfile ") + out.startswith("file ") == 2 and "summary of %d events" % (len(hr) + len(pt_recs)) in out,
      "stats over two files: both described, one summary")

# === --stats by provider name: kernel records under the kernel's names ==============
# The SYSTEM/PERFINFO records (etlref form KERNEL) are the kernel classes: all of them are
# "Windows Kernel" (ShutdownPerfDiagLogger has nothing else; powershell.etl its header and
# extension); the GUID table keeps the class GUIDs.
for n in ("ShutdownPerfDiagLogger.etl", "powershell.etl"):
    k = [r for r in recs[n] if r.form == "KERNEL"]
    st = json.loads(run("--stats", "--format", "json", data(n))[1])
    wk = {x["provider"]: x for x in st["providers"]}.get("Windows Kernel", {})
    check(wk.get("count") == len(k) and wk.get("bytes") == sum(r.data_len for r in k),
          "stats %s: Windows Kernel %r, the records say %d events" % (n, wk, len(k)))
    if n == "ShutdownPerfDiagLogger.etl":
        check([x["provider"] for x in st["providers"]] == ["Windows Kernel"], "stats %s: no kernel event under a GUID" % n)
rc, out, err = run("--stats", SH)
sect = out.split("\nevents by provider name\n", 1)[-1].split("\n\n", 1)[0]
rows = re.findall(r"^\s+(\d+)\s+[\d.]+\s+[\d.]+\s+\d+  (.+)$", sect, re.M)
check(rows == [(str(len(recs["ShutdownPerfDiagLogger.etl"])), "Windows Kernel")],
      "stats table by provider name: one Windows Kernel row of every record: %r" % rows[:3])
check(re.search(r"^  2cb15d1d-5fc1-11d2-abe1-00a0c911f518 +\d+  \(Windows Kernel\)$", out, re.M) is not None,
      "stats table by provider: the GUID rows stay")
# KernelTraceControl (ImageID, MetaData): only net.4.5.2.x64.etl has it, compressed (etlref cannot
# read it), so the count is PerfView's on Windows: the sum of its COUNT KernelTraceControl/* lines.
base = open(data("net.4.5.2.x64.baseline.txt"), encoding="utf-8").read()
ktc = sum(int(c) for c in re.findall(r"^COUNT KernelTraceControl/[^:]*:(\d+)$", base, re.M))
st = json.loads(run("--stats", "--format", "json", data("net.4.5.2.x64.etl"))[1])
got = {x["provider"]: x["count"] for x in st["providers"]}
check(ktc > 7000 and got.get("KernelTraceControl") == ktc,
      "stats net.4.5.2: KernelTraceControl %r, PerfView %d" % (got.get("KernelTraceControl"), ktc))
check("Windows Kernel" in got and not any(p.startswith("def2fe46") or p.startswith("ce1dbfb4") for p in got),
      "stats net.4.5.2: StackWalk and PerfInfo classes under Windows Kernel")

# === --schemas: the manifest's templates, read from the XML ========================
rc, out, err = run("--schemas", "-m", HTTPMAN, HTTP)
sc = json.loads(out)["schemas"]
ns = {"m": man.tag.split("}")[0].strip("{")} if man.tag.startswith("{") else {}
q = (lambda tag: ".//m:" + tag) if ns else (lambda tag: ".//" + tag)
templates = {t.get("tid"): t for t in man.findall(q("template"), ns)}
evdefs = {(int(e.get("value")), int(e.get("version") or 0)): e for e in man.findall(q("event"), ns)}
used = {(r.id, r.version) for r in hr if r.form == "EVENT_HEADER"}
check({(s["id"], s["version"]) for s in sc} == used, "schemas: one per (id, version) the trace uses")
bad = []
for s in sc:
    e = evdefs[(s["id"], s["version"])]
    t = templates.get(e.get("template"))
    want = [(d.get("name"), d.get("inType").split(":")[1].upper()) for d in t.findall(q("data"), ns)] if t is not None else []
    got = [(f["name"], f["type"]) for f in s["fields"]]
    if got != want:
        bad.append((s["id"], got, want))
    if s["source"] != "manifest" or s["provider"] != http_name or s["events"] != sum(
            1 for r in hr if (r.id, r.version) == (s["id"], s["version"])):
        bad.append((s["id"], s["source"], s["events"]))
check(not bad, "schemas: fields and types as the manifest's templates declare them: %r" % bad[:2])
rc, out, err = run("--schemas", "--provider", "solar_system", PT)
sc = json.loads(out)["schemas"]
check(len(sc) == 1 and sc[0]["source"] == "tracelogging" and sc[0]["events"] == 5 and
      [f["name"] for f in sc[0]["fields"]][:3] == ["string_type", "boolean_type", "char_type"],
      "schemas: the TraceLogging event with its fields")

# === progress (pseudo-terminal), Ctrl-C, closed pipe ===============================
NET = data("net.4.5.2.x64.etl")
if shutil.which("script"):
    def under_pty(args):
        cmd = " ".join("'%s'" % a for a in [ETWDUMP] + args)
        p = subprocess.run(["script", "-qec", cmd + " -o /dev/null", "/dev/null"], capture_output=True, timeout=300)
        return p.returncode, p.stdout.decode("utf-8", "replace")
    # the same 4.7 MiB trace six times on one thread: long enough (about half a
    # second, the line is drawn every 250 ms) on an idle machine too; three
    # times on two threads took 140 ms
    rc, tty = under_pty(["-j", "1"] + [NET] * 6)
    check(rc == 0 and re.search(r"\r\x1b\[Ketwdump: [\d.]+/27\.9 MiB, buffer ~\d+/2160, \d+ events, \d+ events/s", tty),
          "progress line on a terminal for 28 MiB of traces: %r" % tty[:200])
    check(tty.endswith("\r\x1b[K") or "\r\x1b[K" in tty[-20:], "progress line erased at the end")
    rc, tty = under_pty(["--no-progress", NET, NET, NET])
    check(rc == 0 and "events/s" not in tty, "--no-progress: none under a terminal")
    p = subprocess.run(["script", "-qec", "'%s' --provider no-such-provider '%s' '%s' '%s'" % (ETWDUMP, NET, NET, NET),
                        "/dev/null"], capture_output=True, timeout=300)
    check(p.returncode == 0 and b"events/s" not in p.stdout, "no progress when the events go to the terminal too")
    rc, tty = under_pty(["--stats", HTTP])
    check("events/s" not in tty, "no progress for a small trace")
else:
    print("note: script(1) not found; progress test skipped")
p = subprocess.run([ETWDUMP, "--stats", "-o", "/dev/null", NET], capture_output=True, timeout=300)
check(p.returncode == 0 and p.stderr == b"", "no progress when stderr is a pipe: %r" % p.stderr[:100])

p1 = subprocess.Popen([ETWDUMP, NET], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
p2 = subprocess.run(["head", "-n", "2"], stdin=p1.stdout, capture_output=True)
p1.stdout.close()
err = p1.stderr.read()
p1.wait(timeout=300)
check(len(p2.stdout.splitlines()) == 2 and p1.returncode == 0 and err == b"",
      "| head: quiet exit (rc %s, %r)" % (p1.returncode, err[:100]))

p = subprocess.Popen([ETWDUMP, NET], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
got = p.stdout.read(1 << 16)  # etwdump is now blocked on the full pipe
p.send_signal(signal.SIGINT)
got += p.stdout.read()
err = p.stderr.read()
p.wait(timeout=300)
text = got.decode("utf-8")
check(p.returncode == 130 and text.endswith("\n") and 0 < text.count("\n") < 179474,
      "Ctrl-C: exit 130, output ends with a whole line (rc %s, %d lines)" % (p.returncode, text.count("\n")))
check(all(json.loads(x) for x in text.splitlines()), "Ctrl-C: every line written is complete JSON")

# === --map / --no-map: the mapping instead of pread (the default), the same bytes out
for trace in (NET, data("ShutdownPerfDiagLogger.etl"), PS):
    for j in ("1", "2"):
        rc1, out1, _ = run("-j", j, trace)
        rc2, out2, _ = run("-j", j, "--map", trace)
        rc3, out3, _ = run("-j", j, "--map", "--no-map", trace)
        check(rc1 == rc2 == rc3 and out1 == out2 == out3 and out1.count("\n") > 100,
              "--map / --no-map -j %s give the same output for %s" % (j, os.path.basename(trace)))
rc1, out1, _ = run("--stats", "--map", NET)
rc2, out2, _ = run("--stats", NET)
check(rc1 == rc2 and out1 == out2, "--map --stats gives the same summary")

# === --event: display and symbolic names; a name that matches nothing ===============
# ClrEtwAll.man's task name="GarbageCollection" shows as its message "GC",
# opcode name="GCSuspendEEBegin" as "SuspendEEStart": --event takes either.
GC, CLRMAN = data("gcevents.etl"), data("ClrEtwAll.man")
for j in ("1", "2"):
    rc, disp, err1 = events("-j", j, "-m", CLRMAN, "--event", "GC/*", GC)
    rc2, sym, err2 = events("-j", j, "-m", CLRMAN, "--event", "GarbageCollection/*", GC)
    check(rc == rc2 == 0 and len(disp) == 68 and sym == disp and err1 == err2 == "",
          "-j %s: GarbageCollection/* selects the 68 events GC/* does (%d, %d) %r" % (j, len(disp), len(sym), err2[:200]))
    check(all(e["event"].startswith("GC/") for e in sym), "-j %s: shown by their display names" % j)
    rc, evs, err = events("-j", j, "-m", CLRMAN, "--event", "GCSuspendEEBegin_V1", GC)
    rc2, evs2, _ = events("-j", j, "-m", CLRMAN, "--event", "garbagecollection/gcsuspendeebegin", GC)
    check(rc == 0 and len(evs) == 2 and evs == evs2 and all(e["event"] == "GC/SuspendEEStart" for e in evs)
          and err == "", "-j %s: the event symbol and Task/Opcode symbols select GC/SuspendEEStart" % j)
    rc, evs, _ = events("-j", j, "-m", CLRMAN, "--event", "GarbageCollection/Start", GC)
    check(rc == 0 and len(evs) == 2 and all(e["event"] == "GC/Start" for e in evs),
          "-j %s: a predefined opcode's symbol is its name without win: (%d)" % (j, len(evs)))
    rc, evs, err = events("-j", j, "-m", CLRMAN, "--event", "GarbageColection/*", GC)
    warn = [ln for ln in err.splitlines() if "matched no event" in ln]
    check(rc == 0 and evs == [] and len(warn) == 1 and
          warn[0].startswith("etwdump: --event 'GarbageColection/*' matched no event; event names seen include: GC/"),
          "-j %s: one warning for a name that matches nothing, with a real name: %r" % (j, err[:300]))
    rc, evs, err = events("-j", j, "-m", CLRMAN, "--exclude-provider", "Microsoft-Windows-DotNETRuntim", GC)
    check(rc == 0 and len(evs) == len(full["gcevents.etl"]) and err.count("matched no event") == 1 and
          "--exclude-provider 'Microsoft-Windows-DotNETRuntim' matched no event; provider names seen include: "
          "Microsoft-Windows-DotNETRuntime" in err, "-j %s: an exclusion that matches nothing: %r" % (j, err[:300]))
    rc, out, err = run("-j", j, "--stats", "-m", CLRMAN, "--event", "NoSuchEvent", GC)
    check(rc == 0 and err.count("matched no event") == 1, "-j %s --stats: the warning too: %r" % (j, err[:200]))
    rc, out, err = run("-j", j, "-q", "-m", CLRMAN, "--event", "NoSuchEvent", GC)
    check(rc == 0 and err == "", "-j %s -q: no warning" % j)
# a run cut short says nothing (the value may match later in the trace)
rc, evs, err = events("-n", "1", "--exclude-event", "NoSuchEvent", GC)
check(rc == 0 and len(evs) == 1 and err == "", "-n: no warning when the run stops early: %r" % err[:200])

# === "process": the image name of the event's pid ==================================
# net.4.5.2: smss.exe (pid 456) is in the kernel's Process/DCStart rundown
# (ImageFileName "smss.exe"); Test.x64.exe (pid 3676) starts after the rundown:
# Microsoft-Windows-Kernel-Process ProcessStart at 00:07:03.3567915 (ImageName
# "\Device\Mup\clrmain\...\Test.x64.exe"), ends with ProcessStop at 00:07:08.8259010
# and the kernel's Process/Stop at 00:07:08.8259013.
for jobs in ("1", "2"):
    rc, ev456, _ = events("-j", jobs, "--pid", "456", NET)
    check(rc == 0 and ev456 and all(e.get("process") == "smss.exe" for e in ev456),
          "-j %s: every event of pid 456 is smss.exe's (%d)" % (jobs, len(ev456)))
    rc, ev3676, _ = events("-j", jobs, "--pid", "3676", NET)
    load = [e for e in ev3676 if e["event"] == "Image/Load" and e["time"] == "2020-07-29T00:07:03.3625160Z"]
    check(len(load) == 1 and load[0].get("process") == "Test.x64.exe" and list(load[0]).index("process") ==
          list(load[0]).index("pid") + 1, "-j %s: Image/Load of Test.x64.exe: process after pid" % jobs)
    stop = [e for e in ev3676 if e["event"] == "ProcessStop/Stop"]
    check(len(stop) == 1 and stop[0].get("process") == "Test.x64.exe", "-j %s: the ProcessStop names it" % jobs)
    # the kernel's Process/Stop follows 0.3 us later: it names it too
    check(all(("process" in e) == (e["event"] == "Process/Stop") for e in ev3676 if e["time"] > stop[0]["time"]) and
          all(e.get("process") == "Test.x64.exe" for e in ev3676
              if "2020-07-29T00:07:03.3567915Z" <= e["time"] <= stop[0]["time"]),
          "-j %s: Test.x64.exe from its ProcessStart to its ProcessStop, not after" % jobs)
# --process selects by that name (glob, case-insensitive); --exclude-process leaves it out
rc, sel, _ = events("--process", "smss*", NET)
check(rc == 0 and [e["time"] for e in sel] == [e["time"] for e in ev456], "--process 'smss*' = pid 456's events")
rc, sel, _ = events("-j", "2", "--process", "TEST.x64.EXE", "--event", "Image/*", NET)
check(rc == 0 and sel and [e["time"] for e in sel] ==
      [e["time"] for e in ev3676 if e["event"].startswith("Image/") and e.get("process") == "Test.x64.exe"],
      "--process TEST.x64.EXE: Test.x64.exe's named Image events (%d)" % len(sel))
rc, sel, _ = events("--exclude-process", "Test.x64.exe", "--pid", "3676", NET)
check(rc == 0 and sel and all("process" not in e for e in sel), "--exclude-process keeps the unnamed events of the pid")
rc, out, _ = run("--format", "text", "--pid", "456", "-n", "2", NET)
check(rc == 0 and " pid=456 process=smss.exe tid=" in out, "text: process= after pid=")

# === NAME_drive: NT paths in drive form, from the trace's SystemConfig VolumeMapping ===
# net.4.5.2's 9 VolumeMapping records (00:07:00.6236167) map "\\Device\\HarddiskVolume2\\" to
# "C:\\" and "\\SystemRoot\\" to "C:\\Windows\\"; \\Device\\Mup\\ maps to "\\\\" (not a drive)
for jobs in ("1", "2"):
    rc, img, _ = events("-j", jobs, "--event", "Image/*", NET)
    dc = [e for e in img if e["time"] == "2020-07-29T00:07:00.6522323Z" and e["event"] == "Image/DCStart"]
    check(len(dc) == 1 and dc[0]["fields"]["FileName"] == "\\Device\\HarddiskVolume2\\Windows\\System32\\ntdll.dll"
          and dc[0]["fields"].get("FileName_drive") == "C:\\Windows\\System32\\ntdll.dll"
          and list(dc[0]["fields"])[-1] == "FileName_drive",
          "-j %s: Image/DCStart ntdll.dll: FileName kept, FileName_drive after it" % jobs)
    ld = [e for e in img if e["time"] == "2020-07-29T00:07:03.3625603Z" and e["event"] == "Image/Load"]
    check(len(ld) == 1 and ld[0]["pid"] == 3676 and ld[0]["fields"]["FileName"] == "\\SystemRoot\\System32\\ntdll.dll"
          and ld[0]["fields"].get("FileName_drive") == "C:\\Windows\\System32\\ntdll.dll",
          "-j %s: Image/Load of Test.x64.exe's ntdll.dll: \\SystemRoot\\ in drive form" % jobs)
    check(all("FileName_drive" not in e["fields"] for e in img if e["fields"].get("FileName", "").startswith("\\Device\\Mup\\")),
          "-j %s: no drive form for \\Device\\Mup\\ paths" % jobs)

# === --where FIELD OP VALUE ==========================================================
# Test.x64.exe's ProcessStart and ProcessStop (Microsoft-Windows-Kernel-Process) are the
# events whose ProcessID is 3676 and whose ImageName holds "test"
rc, sel, _ = events("--where", "ProcessID=3676", "--where", "ImageName = *TEST*", NET)
check(rc == 0 and [e["event"] for e in sel] == ["ProcessStart/Start", "ProcessStop/Stop"],
      "--where ProcessID=3676 AND ImageName glob: %r" % [e["event"] for e in sel])
rc, sel, _ = events("--where", "ProcessID!=3676", "--where", "ImageName=*test*", NET)
check(rc == 0 and sel == [], "--where != on a number")
rc, img, _ = events("--event", "Image/*", NET)
rc, sel, _ = events("--event", "Image/*", "--where", "ImageSize>0x1000000", NET)
want = [e["time"] for e in img if "ImageSize" in e["fields"] and int(e["fields"]["ImageSize"], 16) > 0x1000000]
check(rc == 0 and want and [e["time"] for e in sel] == want, "--where ImageSize>0x1000000: %d images over 16 MiB" % len(want))
rc, sel, _ = events("--event", "Image/*", "--where", "ImageSize<=0x1000000", "--where", "NoSuchField>1", NET)
check(rc == 0 and sel == [], "--where on a field the events lack selects none")
rc, out, err = run("--where", "ImageName<abc", NET)
check(rc == 2 and "expected FIELD OP VALUE" in err, "--where: < takes a number")

# === --help, README and the man page list every option =============================
rc, out, err = run("--help")
opts = set(re.findall(r"(?<![\w-])(--[a-z][\w-]+)", out))
readme = open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "README.md"), encoding="utf-8").read()
manpage = open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "docs", "etwdump.1"),
               encoding="utf-8").read().replace("\\-", "-")
for o in sorted(opts):
    check(o in readme, "README has %s" % o)
    check(o in manpage, "man page has %s" % o)
for o in ("--format", "--fields", "--time", "--stats", "--schemas", "--no-progress", "--provider", "--exclude-errors"):
    check(o in opts, "--help lists %s" % o)

print("%d passed, %d failed" % (passed, failed))
sys.exit(1 if failed else 0)
