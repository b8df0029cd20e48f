#!/usr/bin/env python3
"""Payload subjects through etwdump: Microsoft-Windows-Kernel-Network events
name their process by the payload's PID (docs/kernel.md, "Payload subjects of
manifest providers").

usage: test_subject.py ETWDUMP DATA_DIR

Writes a synthetic trace with tests/etlwrite.py: a Microsoft-Windows-Kernel-
Process ProcessRundown naming process 2716 (svchost.exe) and 1234
(other.exe), Kernel-Network TCP/UDP events of process 2716 logged from a DPC
(header pid 0), from the System process (header pid 4) and by the process
itself, one of process 1234 logged while 2716 ran, the connection-failure
event (no PID: the header's ids), a send cut before its PID, and an event of
a provider no schema knows logged by 2716. Every expected value below is the
one written into the trace. Decoded with -m tests/data/kernel-network.man
(the layouts are the provider's: tests/data/SOURCES.md), on one thread and
with -j 2: "pid" is the payload's, "process" its image name, "tid" -1 when
the header's thread belongs to another process, and --pid 2716 / --process
svchost.exe select exactly that process's events (--exclude-pid the others).
--stats names 2716 and 1234 by those rundowns (no kernel Process event in
the trace), and a trace of the ProcessStart event of net.4.5.2.x64.etl (as
recorded: its layout and values checked against PerfView's baseline) names
process 3676 Test.x64.exe. Prints "N passed, N failed".
"""
import json
import os
import struct
import subprocess
import sys
import tempfile
import uuid

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import etlwrite  # noqa: E402

ETWDUMP, DATA = sys.argv[1], sys.argv[2]
MAN = os.path.join(DATA, "kernel-network.man")
KNET = uuid.UUID("7dd42a49-5329-4832-8dfd-43d979153a88")
KPROC = uuid.UUID("22fb2cd6-0e7b-422b-a0c7-2fad1fd0e716")
UNKNOWN = uuid.UUID("0b3c1a7e-58f2-4c0e-9a51-1f0c2d7e9b33")
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
    rc, out, err = run("-m", MAN, *extra, path)
    evs = [json.loads(line) for line in out.splitlines()]
    # the log-file header (EventTrace of the kernel's event-trace class) is not the test's
    return rc, [e for e in evs if e.get("provider_guid") != "68fdd900-4a3e-11d1-84f4-0000f80464e3"], err


def utf16z(s):
    return s.encode("utf-16-le") + b"\0\0"


def rundown(pid, image):
    """ProcessRundownArgs: ProcessID, CreateTime, ParentProcessID, SessionID,
    Flags, ImageName, ImageChecksum, TimeDateStamp, PackageFullName,
    PackageRelativeAppId."""
    return (struct.pack("<IqIII", pid, 132000000000000000 - 10**7, 600, 0, 0) + utf16z(image) +
            struct.pack("<II", 0, 0) + utf16z("") + utf16z(""))


def tcp_send(pid, size):
    """TCPIPDatasent.Args: PID, size, daddr, saddr, dport, sport, startime,
    endtime, seqnum, connid (addresses and ports as the stack stores them:
    network order)."""
    return struct.pack("<IIIIHHIIII", pid, size, 0x0100A8C0, 0x0200A8C0, 0xBB01, 0x3FC3, 100, 120, 7, 0)


def tcp_recv(pid, size):
    """TCPIPDatareceived.Args: PID, size, daddr, saddr, dport, sport, seqnum, connid."""
    return struct.pack("<IIIIHHII", pid, size, 0x0100A8C0, 0x0200A8C0, 0xBB01, 0x3FC3, 8, 0)


def knet(id_, opcode, task, pid, tid, ts, payload):
    return dict(provider=KNET, id=id_, opcode=opcode, task=task, level=4, keywords=0x10, pid=pid,
                tid=tid, ts=ts, payload=payload)


# (event, expected pid, expected tid, expected process or None)
TRACE = [
    (dict(provider=KPROC, id=15, task=15, level=4, keywords=0x10, pid=5000, tid=5004, ts=10,
          payload=rundown(2716, "\\Device\\HarddiskVolume2\\Windows\\System32\\svchost.exe")),
     5000, 5004, None),
    (dict(provider=KPROC, id=15, task=15, level=4, keywords=0x10, pid=5000, tid=5004, ts=20,
          payload=rundown(1234, "\\Device\\HarddiskVolume2\\Tools\\other.exe")),
     5000, 5004, None),
    # a DPC: the idle process's thread 0 ran
    (knet(10, 10, 10, 0, 0, 100, tcp_send(2716, 1460)), 2716, -1, "svchost.exe"),
    # a system worker thread
    (knet(11, 11, 10, 4, 88, 200, tcp_recv(2716, 512)), 2716, -1, "svchost.exe"),
    # the process's own thread: kept
    (knet(42, 42, 11, 2716, 3000, 300, tcp_recv(2716, 64)), 2716, 3000, "svchost.exe"),
    # another process's traffic while 2716 ran: not 2716's
    (knet(11, 11, 10, 2716, 3000, 400, tcp_recv(1234, 99)), 1234, -1, "other.exe"),
    # no PID in the failure event: the header's
    (knet(17, 17, 10, 0, 0, 500, struct.pack("<HH", 6, 10060)), 0, 0, None),
    (knet(17, 17, 10, 2716, 3000, 600, struct.pack("<HH", 6, 10061)), 2716, 3000, "svchost.exe"),
    # cut before the PID: the header's (and a decode error)
    (knet(10, 10, 10, 4, 88, 700, b"\x9c\x0a"), 4, 88, None),
    # an event no schema knows, logged by 2716
    (dict(provider=UNKNOWN, id=1, pid=2716, tid=3000, ts=800, payload=b"\1\2\3\4"), 2716, 3000, "svchost.exe"),
]

tmp = tempfile.mkdtemp(prefix="etw-subject-")
path = os.path.join(tmp, "knet.etl")
etlwrite.write_etl(path, [e for e, _, _, _ in TRACE])
MINE = [i for i, (_, pid, _, _) in enumerate(TRACE) if pid == 2716]
check(len(MINE) == 5, "the trace has 5 events of 2716")

for jobs in ("1", "2"):
    tag = "-j %s" % jobs
    rc, evs, err = events(path, "-j", jobs)
    check(rc == 0, "%s: exit 0 (%d: %s)" % (tag, rc, err))
    check(len(evs) == len(TRACE), "%s: %d events, expected %d" % (tag, len(evs), len(TRACE)))
    for i, (e, (ev, pid, tid, proc)) in enumerate(zip(evs, TRACE)):
        check(e.get("pid") == pid, "%s: event %d pid %r, expected %d" % (tag, i, e.get("pid"), pid))
        check(e.get("tid") == tid, "%s: event %d tid %r, expected %d" % (tag, i, e.get("tid"), tid))
        check(e.get("process") == proc, "%s: event %d process %r, expected %r" % (tag, i, e.get("process"), proc))
    # the payload still shows its own PID, and the names are the manifest's
    check(evs[2].get("fields", {}).get("PID") == 2716 and evs[2].get("fields", {}).get("size") == 1460,
          "%s: the send's fields: %r" % (tag, evs[2].get("fields")))
    check(evs[2].get("provider") == "Microsoft-Windows-Kernel-Network",
          "%s: provider name %r" % (tag, evs[2].get("provider")))
    # the cut send: its PID's two bytes shown raw, as written
    check(evs[8].get("fields", {}).get("PID") == {"unsupported": "UINT32", "raw": "9c0a"},
          "%s: the cut send's PID is raw: %r" % (tag, evs[8].get("fields")))

    for sel in (("--pid", "2716"), ("--process", "svchost.exe"), ("--process", "SVC*")):
        rc, got, err = events(path, "-j", jobs, *sel)
        times = [e.get("time") for e in got]
        pids = [e.get("pid") for e in got]
        check(rc == 0 and len(got) == len(MINE) and pids == [2716] * len(MINE),
              "%s %s: selects the %d events of 2716: pids %r (%s)" % (tag, " ".join(sel), len(MINE), pids, err))
        check(len(set(times)) == len(times), "%s %s: distinct events" % (tag, " ".join(sel)))
    rc, got, err = events(path, "-j", jobs, "--pid", "1234")
    check(rc == 0 and [e.get("fields", {}).get("size") for e in got] == [99],
          "%s --pid 1234: the one receive of 1234: %r" % (tag, got))
    rc, got, err = events(path, "-j", jobs, "--exclude-pid", "2716")
    check(rc == 0 and len(got) == len(TRACE) - len(MINE) and 2716 not in [e.get("pid") for e in got],
          "%s --exclude-pid 2716: the others (%d)" % (tag, len(got)))
    rc, got, err = events(path, "-j", jobs, "--pid", "0")
    check(rc == 0 and len(got) == 1 and got[0].get("fields", {}).get("FailureCode") == 10060,
          "%s --pid 0: only the failure logged from the DPC: %r" % (tag, got))

# --stats counts the traffic under its process
rc, out, err = run("-m", MAN, "--stats", "--format", "json", path)
check(rc == 0, "--stats: exit 0 (%s)" % err)
if rc == 0:
    procs = {p["pid"]: p["count"] for p in json.loads(out).get("processes", [])}
    check(procs.get(2716) == len(MINE) and procs.get(1234) == 1,
          "--stats: %d events under 2716, 1 under 1234: %r" % (len(MINE), procs))

# --stats names the processes by the Kernel-Process events alone (the trace
# has no kernel Process events): the file name of the rundowns' ImageName
for jobs in ("1", "2"):
    rc, out, err = run("-m", MAN, "--stats", "--format", "json", "-j", jobs, path)
    images = {p["pid"]: p["image"] for p in json.loads(out).get("processes", [])} if rc == 0 else {}
    check(images.get(2716) == "svchost.exe" and images.get(1234) == "other.exe",
          "--stats -j %s: 2716 svchost.exe, 1234 other.exe: %r" % (jobs, images))
    rc, out, err = run("-m", MAN, "--stats", "-j", jobs, path)
    check(rc == 0 and " 2716 svchost.exe\n" in out and " 1234 other.exe\n" in out,
          "--stats -j %s (text): the images: %s" % (jobs, out))

# ProcessStart: the one of net.4.5.2.x64.etl, its header and payload as
# recorded, in a trace of its own with an event of the process it starts.
# PerfView's baseline of that trace shows the same event as ProcessID=3,676,
# ImageName=\Device\Mup\clrmain\... and names the process Test.x64.exe
# (its ProcessStop's ImageName).
rc, out, err = run("--raw", "-j", "1", "--provider", "Microsoft-Windows-Kernel-Process", "--event", "ProcessStart*",
                   os.path.join(DATA, "net.4.5.2.x64.etl"))
start = json.loads(out.splitlines()[0]) if rc == 0 and out else {}
raw = bytes.fromhex(start.get("raw", ""))
check(start.get("id") == 1 and start.get("version") == 1 and len(raw) == 182,
      "net.4.5.2.x64.etl: ProcessStart v1, 182 bytes: %r" % {k: start.get(k) for k in ("id", "version")})
if len(raw) == 182:
    # ProcessStartArgs_V1: ProcessID u32, CreateTime FILETIME, ParentProcessID u32, SessionID u32,
    # Flags u32, ImageName UTF-16 (NUL-terminated)
    started, parent, session = struct.unpack_from("<I", raw, 0)[0], struct.unpack_from("<I", raw, 12)[0], \
        struct.unpack_from("<I", raw, 16)[0]
    image = raw[24:].decode("utf-16-le").rstrip("\0")
    check((started, parent, session) == (3676, 3508, 1), "ProcessStart: %r" % ((started, parent, session),))
    check(image.startswith("\\Device\\Mup\\clrmain\\") and image.endswith("\\Test.x64.exe"),
          "ProcessStart: ImageName %r" % image)
    kp_start = dict(provider=KPROC, id=1, version=1, task=1, opcode=1, level=4, channel=16,
                    keywords=int(start["keywords"], 16), pid=parent, tid=start["tid"], ts=10, payload=raw)
    path2 = os.path.join(tmp, "kstart.etl")
    etlwrite.write_etl(path2, [kp_start,
                               dict(provider=UNKNOWN, id=1, pid=started, tid=3680, ts=20, payload=b"\1\2"),
                               dict(provider=UNKNOWN, id=1, pid=started, tid=3680, ts=30, payload=b"\3")])
    for jobs in ("1", "2"):
        rc, out, err = run("-m", MAN, "--stats", "--format", "json", "-j", jobs, path2)
        procs = {p["pid"]: (p["image"], p["count"]) for p in json.loads(out).get("processes", [])} if rc == 0 else {}
        check(procs.get(started) == ("Test.x64.exe", 2) and procs.get(parent) == (None, 1),
              "--stats -j %s: 3676 Test.x64.exe (2 events), 3508 unnamed: %r" % (jobs, procs))

for name in os.listdir(tmp):
    os.unlink(os.path.join(tmp, name))
os.rmdir(tmp)
print("%d passed, %d failed" % (passed, failed))
sys.exit(1 if failed else 0)
