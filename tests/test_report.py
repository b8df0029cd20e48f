#!/usr/bin/env python3
"""etwdump --report against values computed here, independently, from the
events themselves (etwdump's JSON events: the decoded fields, not the
report code) and from PerfView's baselines (tests/data/*.baseline.txt).

usage: test_report.py ETWDUMP DATA_DIR"""
import csv
import io
import json
import re
import os
import struct
import subprocess
import sys
import tempfile
from collections import defaultdict

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import etlwrite  # noqa: E402  (the tests' own ETL writer, no code shared with the library)

ETWDUMP, DATA = sys.argv[1], sys.argv[2]
NET = DATA + "/net.4.5.2.x64.etl"
GCEV = DATA + "/gcevents.etl"
CLR = "e13c0d23-ccbc-4e12-931b-d9cc2eee27e4"
failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL:", what)


def run(*args):
    p = subprocess.run([ETWDUMP, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    if p.returncode not in (0, 1):
        raise SystemExit("etwdump %s: exit %d: %s" % (" ".join(args), p.returncode, p.stderr.decode()))
    return p.stdout.decode("utf-8")


def events(path, *sel):
    return [json.loads(l) for l in run(*sel, path).splitlines() if l.strip()]


def report(kind, path, *extra):
    return json.loads(run("--report", kind, "--format", "json", *extra, path))


def ticks(t):
    """RFC 3339 time with 7 fractional digits -> 100 ns units of the day (enough for differences)."""
    m = re.match(r".*T(\d\d):(\d\d):(\d\d)\.(\d{7})Z", t)
    h, mi, s, f = (int(x) for x in m.groups())
    return ((h * 60 + mi) * 60 + s) * 10**7 + f


# --- gc -----------------------------------------------------------------------

def gc_by_hand(path):
    """GCs from the CLR events: one per (pid, Count) (a GCStart repeating the
    Count before it is the same GC); pause = RestartEEEnd after the GC's end
    minus the SuspendEEBegin (reason SuspendForGC) before its start, on the
    suspending thread; duration = GCEnd - GCStart."""
    evs = [e for e in events(path, "--provider", CLR) if e.get("provider_guid") == CLR]
    gcs, last, susp, open_gc = [], {}, {}, {}
    starts = 0
    for e in evs:
        pid, f, t = e["pid"], e.get("fields", {}), ticks(e["time"])
        if e["id"] == 9 and f.get("Reason") in ("SuspendForGC", "SuspendForGCPrep", 1, 6):
            susp[pid] = (t, e["tid"])
        elif e["id"] == 1:
            starts += 1
            if last.get(pid) == f["Count"]:
                continue
            last[pid] = f["Count"]
            g = {"pid": pid, "gc": f["Count"], "gen": f["Depth"], "reason": f["Reason"], "type": f["Type"],
                 "start": t, "pause_from": susp.get(pid, (t, 0))[0], "end": None, "restart": None}
            gcs.append(g)
            open_gc[pid] = g
        elif e["id"] == 2 and pid in open_gc and open_gc[pid]["gc"] == f["Count"]:
            open_gc[pid]["end"] = t
        elif e["id"] == 3 and pid in susp and susp[pid][1] == e["tid"]:
            g = open_gc.get(pid)
            if g and g["end"] is not None and g["restart"] is None:
                g["restart"] = t
            del susp[pid]
    return gcs, starts


def test_gc(path, baseline, twice):
    rep = report("gc", path)
    rows = rep["gcs"]
    gcs, starts = gc_by_hand(path)
    check(len(rows) == len(gcs), "%s: %d GCs in the report, %d by hand" % (path, len(rows), len(gcs)))
    check(starts == (2 * len(gcs) if twice else len(gcs)),
          "%s: GCStart events %d for %d GCs (twice: %s)" % (path, starts, len(gcs), twice))
    paired = [g for g in gcs if g["restart"] is not None]
    check(len(paired) == len(gcs), "%s: every GC's SuspendEE pairs with a RestartEE (%d of %d)" % (path, len(paired), len(gcs)))
    for row, g in list(zip(rows, gcs))[:5]:
        for k in ("pid", "gc", "gen", "reason", "type"):
            check(row[k] == g[k], "%s gc %s: %s %r, by hand %r" % (path, g["gc"], k, row[k], g[k]))
        pause = (g["restart"] - g["pause_from"]) / 1e4
        dur = (g["end"] - g["start"]) / 1e4
        check(abs(row["pause_ms"] - pause) < 0.0011, "%s gc %s: pause %s, by hand %.4f" % (path, g["gc"], row["pause_ms"], pause))
        check(abs(row["duration_ms"] - dur) < 0.0011, "%s gc %s: duration %s, by hand %.4f" % (path, g["gc"], row["duration_ms"], dur))
    # PerfView's baseline lines: GC/Start (Count, Reason, Depth, Type, time) and GC/Stop (Count, Depth)
    by = {(r["pid"], r["gc"]): r for r in rows}
    seen = 0
    for line in open(baseline, encoding="utf-8"):
        m = re.match(r"EVENT ([\d,.]+): Microsoft-Windows-DotNETRuntime/GC/(Start|Stop) PID=(\d+);.*?Count=(\d+);", line)
        if not m:
            continue
        seen += 1
        ms, kind, pid, count = float(m.group(1).replace(",", "")), m.group(2), int(m.group(3)), int(m.group(4))
        row = by.get((pid, count))
        check(row is not None, "%s: baseline GC %d of %d not in the report" % (path, count, pid))
        if not row:
            continue
        depth = int(re.search(r"Depth=(\d+);", line).group(1))
        check(row["gen"] == depth, "%s: GC %d gen %d, PerfView %d" % (path, count, row["gen"], depth))
        if kind == "Start":
            check(row["reason"] == re.search(r"Reason=(\w+);", line).group(1), "%s: GC %d reason" % (path, count))
            check(row["type"] == re.search(r"Type=(\w+);", line).group(1), "%s: GC %d type" % (path, count))
            # the first of the repeated GCStart events starts the GC (PerfView ms, 3 decimals)
            if line.split(";")[4].strip() != "DataLen=26" or not twice:
                check(abs(row["start_s"] * 1000 - ms) < 0.0015, "%s: GC %d start %s s, PerfView %s ms" % (path, count, row["start_s"], ms))
    check(seen > 0, "%s: the baseline has GC lines" % baseline)


test_gc(NET, DATA + "/net.4.5.2.x64.baseline.txt", True)
test_gc(GCEV, DATA + "/gcevents.baseline.txt", False)

# --- processes ----------------------------------------------------------------

PROCESS = "3d6fa8d0-fe05-11d0-9dda-00c04fd7ba7c"
rep = report("processes", NET)["processes"]
kev = [e for e in events(NET, "--provider", PROCESS) if e["opcode"] in (1, 2, 3, 4)]
by_pid = defaultdict(list)
for r in rep:
    by_pid[r["pid"]].append(r)
for e in kev:
    f = e["fields"]
    rows = by_pid.get(f["ProcessId"], [])
    check(rows, "process %d (%s) not in the report" % (f["ProcessId"], e["event"]))
    if rows:
        check(any(r["parent_pid"] == f["ParentId"] for r in rows), "process %d parent" % f["ProcessId"])
        if f.get("CommandLine"):
            check(any(r["command_line"] == f["CommandLine"] for r in rows), "process %d command line" % f["ProcessId"])
        check(any(r["image"] == f["ImageFileName"] for r in rows), "process %d image" % f["ProcessId"])
starts = [e for e in kev if e["event"] == "Process/Start"]
for e in starts:
    rows = [r for r in by_pid[e["fields"]["ProcessId"]] if r["start_s"] is not None]
    check(len(rows) == 1, "started process %d: one row with a start" % e["fields"]["ProcessId"])
# the manifest provider alone: Microsoft-Windows-Kernel-Process ProcessStart / ProcessStop
mev = events(NET, "--provider", "Microsoft-Windows-Kernel-Process")
mrep = report("processes", NET, "--provider", "Microsoft-Windows-Kernel-Process")["processes"]
start = [e for e in mev if e["id"] == 1][0]["fields"]
stop = [e for e in mev if e["id"] == 2][0]["fields"]
check(len(mrep) == 1, "Kernel-Process: one process (%d)" % len(mrep))
if mrep:
    r = mrep[0]
    check(r["pid"] == start["ProcessID"] and r["parent_pid"] == start["ParentProcessID"], "Kernel-Process pid/parent")
    check(r["image"] == start["ImageName"].split("\\")[-1], "Kernel-Process image %r" % r["image"])
    check(r["exit_code"] == stop["ExitCode"] and r["end_s"] is not None and r["start_s"] is not None,
          "Kernel-Process start, end, exit code")
    check(r["session"] == start["SessionID"] and r["source"] == "kernel-process", "Kernel-Process session/source")

# --- disk ---------------------------------------------------------------------

DISKIO = "3d6fa8d4-fe05-11d0-9dda-00c04fd7ba7c"
FILEIO = "90cbdc39-4a3e-11d1-84f4-0000f80464e3"
drep = report("disk", NET)
dev = [e for e in events(NET, "--provider", DISKIO) if e["opcode"] in (10, 11)]
want = defaultdict(lambda: [0, 0, 0, 0])
for e in dev:
    w = want[e["pid"]]
    i = 0 if e["opcode"] == 10 else 2
    w[i] += 1
    w[i + 1] += e["fields"]["TransferSize"]
got = {r["pid"]: [r["reads"], r["read_bytes"], r["writes"], r["write_bytes"]] for r in drep["processes"]}
check(got == dict(want), "disk by process: %s, by hand %s" % (got, dict(want)))
tot = [sum(r[k] for r in drep["files"]) for k in ("reads", "read_bytes", "writes", "write_bytes")]
check(tot == [sum(w[i] for w in want.values()) for i in range(4)], "disk by file totals %s" % tot)
named = set()
for e in events(NET, "--provider", FILEIO):
    if e["opcode"] in (0, 32, 35, 36, 64):
        named.add(int(e["fields"]["FileObject"], 16) if isinstance(e["fields"]["FileObject"], str) else e["fields"]["FileObject"])
fos = set()
for e in dev:
    fo = e["fields"]["FileObject"]
    fos.add(int(fo, 16) if isinstance(fo, str) else fo)
unnamed = [r["file"] for r in drep["files"] if r["file"].startswith("(FileObject 0x")]
unnamed_fos = {int(u[len("(FileObject "):-1], 16) for u in unnamed}
check(not (unnamed_fos & named), "FileObjects with a name event left unnamed: %s" % sorted(unnamed_fos & named)[:5])
check(len(fos & named) > 0, "some disk FileObjects have names")
# CSV is the main table (by file), with the same rows
rows = list(csv.DictReader(io.StringIO(run("--report", "disk", "--format", "csv", NET), newline="")))
check(len(rows) == len(drep["files"]) and sum(int(r["read_bytes"]) for r in rows) == tot[1], "disk CSV rows")

# --- network ------------------------------------------------------------------

TCP = "9a280ac0-c8e0-11d1-84e2-00c04fb998a2"
UDP = "bf3a50c5-a9c9-4988-a005-2df0b7c80f80"
nrep = report("network", NET)
want = defaultdict(lambda: [0, 0, 0, 0])
for prov, off in ((TCP, 0), (UDP, 2)):
    for e in events(NET, "--provider", prov):
        base = e["opcode"] - 16 if e["opcode"] >= 26 else e["opcode"]
        f = e.get("fields", {})
        if "PID" not in f:
            continue
        if base == 10:
            want[f["PID"]][off] += f["size"]
        elif base == 11 or (prov == TCP and base == 18):
            want[f["PID"]][off + 1] += f["size"]
got = {r["pid"]: [r["tcp_sent"], r["tcp_received"], r["udp_sent"], r["udp_received"]] for r in nrep["processes"]}
check(got == dict(want), "network by process: %s, by hand %s" % (got, dict(want)))
rsum = defaultdict(lambda: [0, 0])
for r in nrep["remotes"]:
    rsum[r["pid"]][0] += r["sent"]
    rsum[r["pid"]][1] += r["received"]
check({p: [v[0] + v[2], v[1] + v[3]] for p, v in want.items()} == dict(rsum), "network by remote sums")

# --- cpu and the text form ----------------------------------------------------

crep = report("cpu", NET)
samples = [e for e in events(NET, "--provider", "ce1dbfb4-137e-4da6-87b0-3f59aa102cbc") if e["opcode"] == 46]
# PerfView's idle filter: ThreadID 0 of a process other than NonProcess is idle (left out)
check(sum(r["samples"] for r in crep["processes"]) <= len(samples) and crep["processes"][0]["process"] == "Test.x64.exe",
      "cpu: samples by process")
check(abs(sum(r["percent"] for r in crep["processes"]) - 100) < 0.2, "cpu: percents add up")
text = run("--report", "gc", NET)
check("GCs (sizes in bytes" in text and "AllocSmall" in text, "gc text tables")
sel = report("disk", NET, "--pid", "4")
check([r["pid"] for r in sel["processes"]] == [4], "--pid selects the disk report's events")

# --- files and disk on a synthetic trace ---------------------------------------
# Kernel records written as EVENT_HEADER records with the classic-header flag
# (0x0100), which the decoder reads by (class GUID, opcode, version) as it
# reads SYSTEM records; layouts of kernel-mof.md (FileIo_V3_Name, _ReadWrite,
# DiskIo_V3_TypeGroup1, SystemConfigEx VolumeMapping).

FILEIO_G, DISKIO_G, SYSCFGEX = FILEIO, DISKIO, "9b79ee91-b5fd-41c0-a243-4248e266e9d0"


def kev(provider, op, ver, ts, payload, tid=8):
    return {"provider": provider, "opcode": op, "version": ver, "flags": 0x0100, "ts": ts, "pid": 4, "tid": tid,
            "payload": payload}


def wstr(x):
    return (x + "\0").encode("utf-16-le")


def fname(ts, fo, name, op=0):
    return kev(FILEIO_G, op, 3, ts, struct.pack("<Q", fo) + wstr(name))


def frw(ts, op, fo, key, size):
    return kev(FILEIO_G, op, 3, ts, struct.pack("<QQQQIII", 0, 0x1000, fo, key, 8, size, 0))


def dio(ts, op, disk, size, fo, ticks):
    return kev(DISKIO_G, op, 3, ts, struct.pack("<IIIIqQQQI", disk, 0, size, 0, 0, fo, 0x2000, ticks, 8))


evs = [kev(SYSCFGEX, 35, 0, 1, wstr("\\Device\\HarddiskVolume2\\") + wstr("C:\\")),
       fname(10, 0xA0, r"\Device\HarddiskVolume2\a.txt"),
       frw(20, 67, 0x1, 0xA0, 100), frw(30, 68, 0x1, 0xA0, 7), frw(40, 67, 0x2, 0xB0, 50),
       # disk: PerfFreq is 10 MHz (etlwrite), so 5,000 ticks are 0.5 ms; the second read completes
       # 10 us (100 ticks of 100 ns) after the first on the same disk: its service time is 0.01 ms
       dio(1000, 10, 0, 4096, 0xA0, 5000), dio(1100, 10, 0, 512, 0xB0, 5000), dio(1200, 11, 1, 8192, 0xC0, 3000),
       fname(5000, 0xB0, r"\Device\HarddiskVolume2\b.txt", 36)]  # named by the rundown, after its I/O
with tempfile.TemporaryDirectory() as tmp:
    syn = os.path.join(tmp, "files.etl")
    etlwrite.write_etl(syn, evs)
    frep = {r["file"]: r for r in report("files", syn)["files"]}
    a, b = frep.get(r"\Device\HarddiskVolume2\a.txt"), frep.get(r"\Device\HarddiskVolume2\b.txt")
    check(a is not None and b is not None, "files: both files named (b by its rundown after the read): %s" % list(frep))
    if a and b:
        check((a["reads"], a["read_bytes"], a["writes"], a["write_bytes"]) == (1, 100, 1, 7), "files: a.txt %s" % a)
        check((b["reads"], b["read_bytes"], b["writes"]) == (1, 50, 0), "files: b.txt %s" % b)
        check(a["drive_path"] == r"C:\a.txt", "files: drive path %r" % a["drive_path"])
    drep = report("disk", syn)
    dfile = {r["file"]: r for r in drep["files"]}
    check(set(dfile) == {r"\Device\HarddiskVolume2\a.txt", r"\Device\HarddiskVolume2\b.txt", "(FileObject 0xc0)"},
          "disk: files %s" % list(dfile))
    tot_el = sum(r["elapsed_ms"] for r in drep["processes"])
    tot_sv = sum(r["service_ms"] for r in drep["processes"])
    check(abs(tot_el - (0.5 + 0.5 + 0.3)) < 1e-6, "disk: elapsed %s ms" % tot_el)
    check(abs(tot_sv - (0.5 + 0.01 + 0.3)) < 1e-6, "disk: service %s ms" % tot_sv)
    check(sum(r["read_bytes"] for r in drep["processes"]) == 4608 and sum(r["write_bytes"] for r in drep["processes"]) == 8192,
          "disk: bytes")

# --- processes across the files of a diagsession (kernel events, four merged traces) ---
DIAG = DATA + "/diaghub-dotnetcore3.1-win-x64-diagsession.zip"
if os.path.exists(DIAG):
    prep = report("processes", DIAG)["processes"]
    pev = [e for e in events(DIAG, "--provider", PROCESS) if e["opcode"] in (1, 2, 3, 4)]
    rundown_pids = {e["fields"]["ProcessId"] for e in pev if e["opcode"] == 3}
    started = [e["fields"] for e in pev if e["opcode"] == 1]
    stopped = [e["fields"] for e in pev if e["opcode"] == 2]
    check(len(prep) == len(rundown_pids) + len(started), "diagsession: %d rows, %d rundown + %d started"
          % (len(prep), len(rundown_pids), len(started)))
    byp = defaultdict(list)
    for r in prep:
        byp[r["pid"]].append(r)
    for f in started:
        rows = [r for r in byp[f["ProcessId"]] if r["start_s"] is not None]
        check(len(rows) == 1 and rows[0]["parent_pid"] == f["ParentId"] and rows[0]["command_line"] == f["CommandLine"],
              "diagsession: started process %d" % f["ProcessId"])
    for f in stopped:
        rows = [r for r in byp[f["ProcessId"]] if r["end_s"] is not None]
        check(len(rows) == 1 and rows[0]["exit_code"] == f["ExitStatus"], "diagsession: exit code of %d" % f["ProcessId"])
    # the tree: every row's parent that is in the report comes before it, one level up
    pos = {}
    for i, r in enumerate(prep):
        if r["depth"]:
            j = max(k for k in range(i) if prep[k]["depth"] == r["depth"] - 1)
            check(prep[j]["pid"] == r["parent_pid"], "diagsession: tree parent of %d" % r["pid"])
else:
    print("note: %s not present: the diagsession process test is skipped" % DIAG)

# --- a background GC on a synthetic trace ---------------------------------------
# CLR events (ClrEtwAll.man layouts: GCStart_V2 Count, Depth, Reason, Type,
# ClrInstanceID, ClientSequenceNumber; GCEnd_V1 Count, Depth, ClrInstanceID;
# GCSuspendEE_V1 Reason, Count, ClrInstanceID; GCNoUserData ClrInstanceID),
# times in 100 ns ticks. A background GC (Type 1) pauses twice: its first
# suspension (SuspendEEBegin 1,000 to RestartEEEnd 1,600) and, after a
# foreground GC ran inside it, a SuspendForGCPrep suspension (3,000 to 3,300):
# 900 ticks, 0.09 ms, as TraceEvent sums a BGC's pauses. The foreground GC
# (Type 2) pauses from its SuspendEEBegin (2,000) to the RestartEEEnd after
# its GCEnd (2,500): 0.05 ms.


def clr(ts, eid, ver, payload, tid):
    return {"provider": CLR, "id": eid, "version": ver, "ts": ts, "pid": 100, "tid": tid, "level": 4,
            "keywords": 1, "payload": payload}


def suspend(ts, reason, count, tid):
    return clr(ts, 9, 1, struct.pack("<IIH", reason, count, 7), tid)


def gcstart(ts, count, depth, reason, typ, tid):
    return clr(ts, 1, 2, struct.pack("<IIIIHQ", count, depth, reason, typ, 7, 0), tid)


def gcend(ts, count, depth, tid):
    return clr(ts, 2, 1, struct.pack("<IIH", count, depth, 7), tid)


def nodata(ts, eid, tid):
    return clr(ts, eid, 1, struct.pack("<H", 7), tid)


bgc_evs = [suspend(1000, 1, 4, 10), nodata(1100, 8, 10), gcstart(1200, 5, 2, 0, 1, 10),
           nodata(1500, 7, 10), nodata(1600, 3, 10),
           suspend(2000, 1, 5, 30), nodata(2050, 8, 30), gcstart(2100, 6, 0, 0, 2, 30), gcend(2400, 6, 0, 30),
           nodata(2450, 7, 30), nodata(2500, 3, 30),
           suspend(3000, 6, 6, 20), nodata(3100, 8, 20), nodata(3200, 7, 20), nodata(3300, 3, 20),
           gcend(4000, 5, 2, 20)]
with tempfile.TemporaryDirectory() as tmp:
    syn = os.path.join(tmp, "bgc.etl")
    etlwrite.write_etl(syn, bgc_evs)
    grows = {r["gc"]: r for r in report("gc", syn)["gcs"]}
    check(sorted(grows) == [5, 6], "bgc: GCs %s" % sorted(grows))
    if sorted(grows) == [5, 6]:
        b, f = grows[5], grows[6]
        check((b["gen"], b["type"], b["reason"]) == (2, "BackgroundGC", "AllocSmall"), "bgc: row %s" % b)
        check((f["gen"], f["type"]) == (0, "ForegroundGC"), "bgc: foreground row %s" % f)
        check(abs(b["pause_ms"] - 0.09) < 1e-6, "bgc: background pause %s ms, by hand 0.09" % b["pause_ms"])
        check(abs(b["duration_ms"] - 0.28) < 1e-6, "bgc: background duration %s ms, by hand 0.28" % b["duration_ms"])
        check(abs(f["pause_ms"] - 0.05) < 1e-6, "bgc: foreground pause %s ms, by hand 0.05" % f["pause_ms"])
        check(abs(f["duration_ms"] - 0.03) < 1e-6, "bgc: foreground duration %s ms, by hand 0.03" % f["duration_ms"])

# --- network from the manifest provider Microsoft-Windows-Kernel-Network -------
# A minimal manifest with the provider's layout (PID, size, daddr, saddr, dport,
# sport: the order its messages "%2 bytes transmitted from %4:%6 to %3:%5" use).
KNET = "7dd42a49-5329-4832-8dfd-43d979153a88"
MAN = """<?xml version="1.0" encoding="UTF-8"?>
<instrumentationManifest xmlns="http://schemas.microsoft.com/win/2004/08/events"
    xmlns:win="http://manifests.microsoft.com/win/2004/08/windows/events">
 <instrumentation><events>
  <provider name="Microsoft-Windows-Kernel-Network" guid="{%s}" symbol="KNET"
      resourceFileName="x.dll" messageFileName="x.dll">
   <events>
    <event value="10" version="0" level="win:Informational" template="T4" symbol="TcpSend"/>
    <event value="11" version="0" level="win:Informational" template="T4" symbol="TcpRecv"/>
    <event value="42" version="0" level="win:Informational" template="T4" symbol="UdpSend"/>
   </events>
   <templates>
    <template tid="T4">
     <data name="PID" inType="win:UInt32"/>
     <data name="size" inType="win:UInt32"/>
     <data name="daddr" inType="win:UInt32" outType="win:IPv4"/>
     <data name="saddr" inType="win:UInt32" outType="win:IPv4"/>
     <data name="dport" inType="win:UInt16" outType="win:Port"/>
     <data name="sport" inType="win:UInt16" outType="win:Port"/>
    </template>
   </templates>
  </provider>
 </events></instrumentation>
</instrumentationManifest>
""" % KNET


def knet(ts, eid, pid, size, daddr, dport):
    payload = struct.pack("<II", pid, size) + bytes(daddr) + bytes([10, 0, 0, 1]) + struct.pack(">HH", dport, 50000)
    return {"provider": KNET, "id": eid, "ts": ts, "pid": pid, "tid": 1, "payload": payload}


with tempfile.TemporaryDirectory() as tmp:
    man = os.path.join(tmp, "knet.man")
    with open(man, "w") as f:
        f.write(MAN)
    syn = os.path.join(tmp, "knet.etl")
    etlwrite.write_etl(syn, [knet(10, 10, 700, 1000, [93, 184, 216, 34], 443), knet(20, 11, 700, 250, [93, 184, 216, 34], 443),
                             knet(30, 10, 700, 5, [1, 1, 1, 1], 80), knet(40, 42, 800, 64, [8, 8, 8, 8], 53)])
    nr = report("network", syn, "-m", man)
    procs = {r["pid"]: r for r in nr["processes"]}
    check(set(procs) == {700, 800}, "Kernel-Network: processes %s" % list(procs))
    if set(procs) == {700, 800}:
        check((procs[700]["tcp_sent"], procs[700]["tcp_received"], procs[700]["tcp_sends"]) == (1005, 250, 2),
              "Kernel-Network: pid 700 %s" % procs[700])
        check((procs[800]["udp_sent"], procs[800]["udp_sends"]) == (64, 1), "Kernel-Network: pid 800 %s" % procs[800])
    remotes = {(r["pid"], r["protocol"], r["remote"]): (r["sent"], r["received"]) for r in nr["remotes"]}
    check(remotes == {(700, "tcp", "93.184.216.34:443"): (1000, 250), (700, "tcp", "1.1.1.1:80"): (5, 0),
                      (800, "udp", "8.8.8.8:53"): (64, 0)}, "Kernel-Network: remotes %s" % remotes)

if failures:
    print("%d failures" % len(failures))
    sys.exit(1)
print("ok")
