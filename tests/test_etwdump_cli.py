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
for trace, glob in (("gcevents.etl", "GarbageCollection/*"), ("gcevents.etl", "*Start*"),
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

print("%d passed, %d failed" % (passed, failed))
sys.exit(1 if failed else 0)
