#!/usr/bin/env python3
"""End-to-end tests of etwdump on the real traces in tests/data.

usage: test_etwdump.py ETWDUMP DATA_DIR

Checks what a user of the command sees: exact event counts, the first
Microsoft-Windows-HttpService event as Tx's tests assert it, the log-file
header and per-event pid/tid/cpu/data length/time against PerfView's
baselines (Windows-side oracles), the --stats table, and the exit status and
messages for missing, foreign and damaged files. Prints "N passed, N failed".
"""
import datetime as dt
import json
import os
import re
import subprocess
import sys
import tempfile

ETWDUMP, DATA = sys.argv[1], sys.argv[2]
passed = failed = 0


def check(cond, what):
    global passed, failed
    if cond:
        passed += 1
    else:
        failed += 1
        print("FAIL: " + what, file=sys.stderr)


def run(*args):
    p = subprocess.run([ETWDUMP, *args], capture_output=True, timeout=300)
    return p.returncode, p.stdout.decode("utf-8"), p.stderr.decode("utf-8", "replace")


def events(path, *extra):
    rc, out, err = run(*extra, path)
    return rc, [json.loads(line) for line in out.splitlines()], err


def ns(t):
    m = re.fullmatch(r"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)\.(\d{7})Z", t)
    assert m, t
    base = dt.datetime.strptime(m.group(1), "%Y-%m-%dT%H:%M:%S").replace(tzinfo=dt.timezone.utc)
    return int(base.timestamp()) * 10**9 + int(m.group(2)) * 100


# --- exact record counts (every record is one event, header included) -------
COUNTS = {
    "ShutdownPerfDiagLogger.etl": 17078, "net.4.5.2.x64.etl": 179474, "HTTP_Server.etl": 2042,
    "powershell.etl": 114, "AMSITrace.etl": 21, "SelfDescribingSingleEvent.etl": 22,
    "BondEtwSample.etl": 13, "gcevents.etl": 71, "primitive-types.etl": 7,
    "lxcore_kernel.etl": 4, "smallEtlFile.etl": 2,
}
decoded = {}
for name, n in COUNTS.items():
    rc, evs, err = events(os.path.join(DATA, name))
    decoded[name] = evs
    check(rc == 0 and err == "", "%s: exit %d, stderr %r" % (name, rc, err[:200]))
    check(len(evs) == n, "%s: %d events, expected %d" % (name, len(evs), n))
    check(evs and evs[0]["provider"] == "Windows Kernel" and evs[0]["event"] == "EventTrace",
          "%s: first event is the log-file header" % name)
    times = [ns(e["time"]) for e in evs[1:]]
    check(all(a <= b for a, b in zip(times, times[1:])), "%s: events in timestamp order" % name)
    for e in evs:
        for k in ("time", "provider", "provider_guid", "event", "id", "version", "level", "opcode",
                  "task", "channel", "keywords", "pid", "tid", "cpu", "data_len", "fields"):
            if k not in e:
                check(False, "%s: key %s missing in %s" % (name, k, json.dumps(e)[:200]))
                break

# --- the first Microsoft-Windows-HttpService event, as Tx's tests assert it ----
http = [e for e in decoded["HTTP_Server.etl"] if e["provider_guid"] == "dd5ef90a-6398-47a4-ad34-4dcecdef795f"]
check(len(http) == 2041, "HTTP_Server: %d HttpService events, expected 2041" % len(http))
first = http[0]
expect = {"time": "2011-01-23T22:07:27.2257591Z", "id": 21, "version": 0, "channel": 16, "level": 4,
          "opcode": 28, "task": 4, "keywords": "0x8000000000000010", "pid": 0, "tid": 0, "data_len": 72,
          "activity_id": "00000100-0000-0003-193d-42fb30bbcb01"}
for k, v in expect.items():
    check(first.get(k) == v, "HTTP_Server first event %s=%r, expected %r" % (k, first.get(k), v))
related = sum(1 for e in http if "related_activity_id" in e)
check(related == 291, "HTTP_Server: %d events with a related activity id, expected 291" % related)

# --- PerfView baselines: header fields and per-event pid/tid/cpu/len/time ------
LINE = re.compile(r"^EVENT (?P<ms>[\d,]+\.\d+): (?P<name>.+?) PID=(?P<pid>-?\d+); TID=(?P<tid>-?\d+); "
                  r"PName=.*?; ProceNum=(?P<cpu>\d+); DataLen=(?P<len>\d+); (?P<rest>.*)$")


def perfview_text(v):
    """Our JSON value -> the text PerfView shows (numbers with separators, times as yy/MM/dd)."""
    if isinstance(v, int):
        return "{:,}".format(v)
    if isinstance(v, str) and re.fullmatch(r"\d{4}-\d\d-\d\dT[\d:]+\.\d{7}Z", v):
        t = dt.datetime.strptime(v[:19], "%Y-%m-%dT%H:%M:%S")
        return t.strftime("%y/%m/%d %H:%M:%S") + "." + v[20:26]
    return str(v)


def shown(text):
    return text[:20] + "..." if len(text) > 20 else text


for base, trace in (("primitive-types.baseline.txt", "primitive-types.etl"),
                    ("gcevents.baseline.txt", "gcevents.etl"),
                    ("net.4.5.2.x64.baseline.txt", "net.4.5.2.x64.etl")):
    evs = decoded[trace]
    t0 = ns(evs[0]["time"])
    lines = [m for m in (LINE.match(x.rstrip("\n")) for x in open(os.path.join(DATA, base), encoding="utf-8-sig"))
             if m]
    header = [m for m in lines if m.group("name") == "Windows Kernel/EventTrace"][0]
    hf = evs[0]["fields"]
    for field in re.finditer(r"(\w+)=(.*?); ", header.group("rest") + " "):
        key, exp = field.group(1), field.group(2)
        got = shown(perfview_text(hf.get(key)))
        check(got == exp, "%s header %s=%s, PerfView shows %s" % (trace, key, got, exp))
    for key, val in (("pid", int(header.group("pid"))), ("tid", int(header.group("tid"))),
                     ("data_len", int(header.group("len")))):
        check(evs[0][key] == val, "%s header %s=%s expected %s" % (trace, key, evs[0][key], val))
    if trace == "net.4.5.2.x64.etl":
        continue  # its per-event lines are matched by compare-perfview-baseline once MOF decoding exists
    index = {}
    for e in evs[1:]:
        index.setdefault((e["pid"], e["tid"], e["cpu"], e["data_len"]), []).append(ns(e["time"]) - t0)
    for m in lines:
        if m.group("name") == "Windows Kernel/EventTrace":
            continue
        key = (int(m.group("pid")), int(m.group("tid")), int(m.group("cpu")), int(m.group("len")))
        want = float(m.group("ms").replace(",", "")) * 1e6
        near = [t for t in index.get(key, []) if abs(t - want) <= 1000]  # 0.001 ms
        check(len(near) >= 1, "%s: no event pid/tid/cpu/len %s at %.3f ms (%s)" % (
            trace, key, want / 1e6, m.group("name")))

# --- --stats -----------------------------------------------------------------
rc, out, err = run("--stats", os.path.join(DATA, "net.4.5.2.x64.etl"))
check(rc == 0, "--stats exit %d" % rc)
check(re.search(r"^events\s+179474\b", out, re.M) is not None, "--stats counts 179474 events")
check(re.search(r"^buffers\s+360 \(compressed 359\b", out, re.M) is not None, "--stats: 360 buffers, 359 compressed")
check(re.search(r"^pointer size\s+8$", out, re.M) is not None, "--stats pointer size 8")
check("build 9200" in out, "--stats OS build 9200")
rc, out, err = run("--stats", os.path.join(DATA, "smallEtlFile.etl"))
check(re.search(r"^pointer size\s+4$", out, re.M) is not None, "--stats pointer size 4 for smallEtlFile")

# --- errors --------------------------------------------------------------------
rc, out, err = run(os.path.join(DATA, "no-such-file.etl"))
check(rc == 2 and "cannot read" in err and out == "", "missing file: exit %d, %r" % (rc, err))
rc, out, err = run(os.path.join(DATA, "HTTP_Server.man"))
check(rc == 2 and "not an ETL file" in err, "foreign file: exit %d, %r" % (rc, err))
rc, out, err = run("--bogus", os.path.join(DATA, "smallEtlFile.etl"))
check(rc == 2 and "unknown option" in err, "unknown option: exit %d" % rc)
with open(os.path.join(DATA, "HTTP_Server.etl"), "rb") as f:
    full = f.read()
with tempfile.TemporaryDirectory() as tmp:
    cut = os.path.join(tmp, "cut.etl")
    with open(cut, "wb") as f:
        f.write(full[:0x9100])  # inside the fifth buffer
    rc, evs, err = events(cut)
    check(rc == 1, "truncated file exits 1, got %d" % rc)
    check(re.search(r"offset 0x[0-9a-f]+: ", err) is not None, "truncation message names the offset: %r" % err)
    before = [e for e in decoded["HTTP_Server.etl"]]
    check(0 < len(evs) < len(before), "truncated file still yields events (%d)" % len(evs))
    bad = bytearray(full)
    bad[0x4000:0x4004] = b"\x01\x00\x00\x00"  # third buffer: BufferSize 1
    with open(cut, "wb") as f:
        f.write(bad)
    rc, evs, err = events(cut)
    check(rc == 1 and "offset 0x4000" in err, "corrupt buffer size reported at 0x4000: rc %d %r" % (rc, err))
    check(len(evs) > 1900, "events of the other buffers still decoded (%d)" % len(evs))

# --- help lists every option -----------------------------------------------------
rc, out, err = run("--help")
for opt in ("--format", "--stats", "--raw", "--file-order", "--max-events", "--output", "--quiet", "--help",
            "--version"):
    check(opt in out, "--help mentions %s" % opt)
readme = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "README.md")
if os.path.exists(readme):
    text = open(readme, encoding="utf-8").read()
    for opt in re.findall(r"^\s+(?:-\w, )?(--[\w-]+)", out, re.M):
        check(opt in text, "README documents %s" % opt)

print("%d passed, %d failed" % (passed, failed))
sys.exit(1 if failed else 0)
