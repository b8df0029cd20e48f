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
import shutil
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


# --- payload decoding (TraceLogging, manifests, EventSource, merged metadata) ----
def by_provider(evs, name):
    return [e for e in evs if e["provider"] == name]


solar = by_provider(decoded["primitive-types.etl"], "solar_system")
check(len(solar) == 5 and all(e["event"] == "PrimitiveTypesTest" for e in solar), "solar_system events named")
f = solar[0]["fields"]
expect = {"string_type": "Mercury", "boolean_type": False, "char_type": "M", "int16_type": -51, "int32_type": -102,
          "uint16_type": 51, "uint32_type": 102, "uint64_type": 204,
          # the metadata declares int64_type UINT64 (in-type byte 0x0A): PerfView's -204 is the same bits
          "int64_type": 2**64 - 204}
for k, v in expect.items():
    check(f.get(k) == v and type(f.get(k)) == type(v), "primitive-types %s=%r expected %r" % (k, f.get(k), v))
check(f.get("guid_type", "").startswith("0ad614c4-0ef4-4225-8"), "primitive-types guid_type %r" % f.get("guid_type"))
check(f.get("file_time_type", "").startswith("2021-09-09T14:59:35.79"), "file_time_type %r" % f.get("file_time_type"))
check(f.get("system_time_type", "").startswith("2021-09-09T14:59:35.79"), "system_time_type %r" % f.get("system_time_type"))

my = by_provider(decoded["SelfDescribingSingleEvent.etl"], "MySource")
check(len(my) == 1 and my[0]["event"] == "TestEvent", "MySource/TestEvent present")
check(my and list(my[0]["fields"].values())[0] == {"b": "Hello", "c": "World!"},
      "MySource/TestEvent field 0 is {b: Hello, c: World!}: %r" % (my[0]["fields"] if my else None))



def eventsource_guid(name):
    """The GUID .NET EventSource (and TraceLogging) derive from a provider name (FORMATS.md 2.6)."""
    import hashlib
    import uuid
    ns = bytes.fromhex("482C2DB2C39047C887F81A15BFC130FB")
    h = bytearray(hashlib.sha1(ns + name.upper().encode("utf-16-be")).digest()[:16])
    h[7] = (h[7] & 0x0F) | 0x50
    return str(uuid.UUID(bytes_le=bytes(h)))


# MySource is a .NET EventSource writing in TraceLogging (self-describing) mode: its GUID is the
# name hash, and it decodes through the TraceLogging path with no manifest anywhere.
check(my and my[0]["provider_guid"] == eventsource_guid("MySource"),
      "MySource's GUID is EventSource's name hash, decoded as TraceLogging")

for trace, provider, n in (("AMSITrace.etl", "AmsiTrace", 19), ("lxcore_kernel.etl", "Microsoft.Windows.Subsystem.LxCore", 2)):
    tl = by_provider(decoded[trace], provider)
    check(len(tl) == n, "%s: %d %s events, expected %d" % (trace, len(tl), provider, n))
    check(all("error" not in e and "unsupported" not in json.dumps(e["fields"]) for e in tl),
          "%s: every TraceLogging event decodes with no error and nothing unsupported" % trace)
amsi = by_provider(decoded["AMSITrace.etl"], "AmsiTrace")
check(amsi and amsi[0]["fields"].get("Engine") == "VBScript", "AMSI first Engine is VBScript")
check(amsi and "".join(amsi[1]["fields"]["Raw Script"]) == amsi[1]["fields"]["Script"],
      "AMSI 'Raw Script' (UINT16 chars) spells the Script text")
lx = by_provider(decoded["lxcore_kernel.etl"], "Microsoft.Windows.Subsystem.LxCore")
check(lx and lx[0]["fields"].get("Function") == "LxpDrvFsTypeMount" and lx[0]["fields"].get("Line") == 10528,
      "lxcore BreakPoint Function/Line")

# --- kernel (MOF) events, checked against the trace's own bytes ----------------------
def kernel_records(path):
    """(group, type, version, ptr, header pid, header tid, payload) of every SYSTEM/COMPACT/PERFINFO
    record, read straight from the 64 KiB buffers (FORMATS.md 1.2/2.1; uncompressed traces only),
    independently of etwdump."""
    import struct
    data = open(path, "rb").read()
    off = 0
    while off + 0x48 <= len(data):
        size, = struct.unpack_from("<I", data, off)
        filled, = struct.unpack_from("<I", data, off + 0x30)
        if size < 0x48 or off + size > len(data):
            break
        pos, end = off + 0x48, off + min(filled, size)
        while pos + 8 <= end:
            marker, = struct.unpack_from("<I", data, pos)
            if marker == 0xFFFFFFFF:
                break
            ht = (marker >> 16) & 0xFF
            if ht in (1, 2, 3, 4, 0x10, 0x11):
                rsize, = struct.unpack_from("<H", data, pos + 4)
                hdr = {1: 0x20, 2: 0x20, 3: 0x18, 4: 0x18, 0x10: 0x10, 0x11: 0x10}[ht]
                pid = tid = -1
                if ht not in (0x10, 0x11):
                    tid, pid = struct.unpack_from("<II", data, pos + 8)
                yield (data[pos + 7], data[pos + 6], data[pos], 4 if ht in (1, 3, 0x10) else 8, pid, tid,
                       data[pos + hdr:pos + rsize])
            else:
                rsize = marker & 0xFFFF
            if rsize < 8:
                break
            pos += (rsize + 7) & ~7
        off += size


def utf16z(b, o):
    """A NUL-terminated UTF-16LE string at b[o:] and the offset after it."""
    e = o
    while e + 1 < len(b) and (b[e] or b[e + 1]):
        e += 2
    return b[o:e].decode("utf-16-le"), e + 2


def ansiz(b, o):
    e = b.index(0, o)
    return b[o:e].decode("latin-1"), e + 1


def sid_end(b, o, ptr):
    """Offset after a MOF Sid field (kernel-mof.md 4.0: 4 bytes when 0, else TOKEN_USER + SID)."""
    import struct
    if struct.unpack_from("<I", b, o)[0] == 0:
        return o + 4
    sid = o + 2 * ptr
    return sid + 8 + 4 * b[sid + 1]


def expected_kernel(path):
    """What each kernel event of the trace must show, from its bytes: (event, pid, tid, key fields)."""
    import struct
    names = {(3, 1): "Process/Start", (3, 2): "Process/Stop", (3, 3): "Process/DCStart",
             (3, 4): "Process/DCStop", (3, 39): "Process/Defunct", (3, 11): "Process/Terminate",
             (5, 1): "Thread/Start", (5, 2): "Thread/Stop", (5, 3): "Thread/DCStart", (5, 4): "Thread/DCStop",
             (20, 2): "Image/Unload", (20, 3): "Image/DCStart", (20, 4): "Image/DCStop", (3, 10): "Image/Load",
             (20, 33): "Image/KernelBase", (20, 34): "Image/HypercallPage", (0, 5): "EventTrace/Extension", (0, 32): "EventTrace/EndExtension",
             (0, 8): "EventTrace/RundownComplete", (0, 80): "EventTrace/PartitionInfoExtension"}
    out = []
    first = True
    for g, t, v, ptr, hpid, htid, b in kernel_records(path):
        if first:  # the log-file header
            first = False
            continue
        name = names.get((g, t))
        if name is None:
            continue
        fmt = "<Q" if ptr == 8 else "<I"
        if g == 3 and t in (1, 2, 3, 4, 39) and v >= 4:  # Process_V4_TypeGroup1 (+ v5 ExitTime)
            pid, parent = struct.unpack_from("<II", b, ptr)
            image, o = ansiz(b, sid_end(b, 2 * ptr + 20, ptr))
            cmd, o = utf16z(b, o)
            out.append((name, pid, -1, (pid, parent, image, cmd)))
        elif g == 3 and t == 11:
            pid, = struct.unpack_from("<I", b, 0)
            out.append((name, pid, -1, (pid,)))
        elif g == 5 and v == 3:  # Thread_V3_TypeGroup1
            pid, tid = struct.unpack_from("<II", b, 0)
            w32, = struct.unpack_from(fmt, b, 8 + 5 * ptr)
            ids = (hpid, htid) if t == 2 else (pid, tid)
            out.append((name, ids[0], ids[1], (pid, tid, "0x%x" % w32)))
        elif (g == 20 and t in (2, 3, 4)) or (g == 3 and t == 10):  # Image_Load v2/v3
            base, = struct.unpack_from(fmt, b, 0)
            pid, = struct.unpack_from("<I", b, 2 * ptr)
            fname, _ = utf16z(b, 4 * ptr + 24)
            ids = (hpid, htid) if t == 10 else (pid, -1)
            out.append((name, ids[0], ids[1], ("0x%x" % base, pid, fname)))
        elif g == 20 and t == 33:
            out.append((name, hpid, htid, ("0x%x" % struct.unpack_from(fmt, b, 0)[0],)))
        elif g == 0 and t in (5, 32):
            m = struct.unpack_from("<9I", b, 0)
            out.append((name, hpid, htid, (m[0], m[1], m[8])))
        else:
            out.append((name, hpid, htid, (len(b),)))
    return out


def shown_kernel(evs):
    keys = {"Process/Start": ("ProcessId", "ParentId", "ImageFileName", "CommandLine"),
            "Process/Terminate": ("ProcessId",), "Thread": ("ProcessId", "TThreadId", "Win32StartAddr"),
            "Image": ("ImageBase", "ProcessId", "FileName"), "Image/KernelBase": ("ImageBase",),
            "EventTrace/Extension": ("GroupMask1", "GroupMask2", "KernelEventVersion")}
    out = []
    for e in evs[1:]:
        n = e["event"]
        if n.startswith("Process/") and n != "Process/Terminate":
            k = keys["Process/Start"]
        elif n.startswith("Thread/"):
            k = keys["Thread"]
        elif n.startswith("Image/") and n not in ("Image/KernelBase", "Image/HypercallPage"):
            k = keys["Image"]
        elif n in ("EventTrace/Extension", "EventTrace/EndExtension"):
            k = keys["EventTrace/Extension"]
        elif n in keys:
            k = keys[n]
        else:
            out.append((n, e["pid"], e["tid"], (e["data_len"],)))
            continue
        out.append((n, e["pid"], e["tid"], tuple(e["fields"].get(x) for x in k)))
    return out


import collections
for trace, n in (("ShutdownPerfDiagLogger.etl", 17077), ("lxcore_kernel.etl", 1)):
    evs = [e for e in decoded[trace] if e["provider"] == "Windows Kernel"]
    check(len(evs) == n + 1, "%s: %d kernel events, expected %d" % (trace, len(evs), n + 1))
    bad = [e for e in evs if "error" in e or "unsupported" in json.dumps(e["fields"]) or "raw" in e]
    check(not bad, "%s: every kernel event decodes with no error and nothing unsupported; first bad: %s" % (
        trace, json.dumps(bad[0])[:300] if bad else ""))
    want = collections.Counter(expected_kernel(os.path.join(DATA, trace)))
    got = collections.Counter(shown_kernel(evs))
    check(want == got and sum(want.values()) == n, "%s: kernel names, pid/tid and fields as the bytes say; "
          "missing %s, unexpected %s" % (trace, list((want - got).items())[:3], list((got - want).items())[:3]))
sd = decoded["ShutdownPerfDiagLogger.etl"]
defunct = [e for e in sd if e["event"] == "Process/Defunct"]
check(len(defunct) == 5 and all(e["version"] == 5 and isinstance(e["fields"].get("ExitTime"), int) for e in defunct),
      "ShutdownPerfDiagLogger: 5 Process/Defunct v5 with ExitTime")
names = collections.Counter(e["event"] for e in sd)
for name, count in (("Image/DCStart", 6745), ("Image/Unload", 4791), ("Thread/Stop", 1032), ("Image/Load", 72),
                    ("Process/Terminate", 60), ("Image/HypercallPage", 1), ("EventTrace/RundownComplete", 2)):
    check(names[name] == count, "ShutdownPerfDiagLogger: %d %s, expected %d" % (names[name], name, count))

# EventSource manifest inside the trace: the manifest chunk and the 11 events it describes
bond = by_provider(decoded["BondEtwSample.etl"], "MSOpenTech-Tx-BinaryEventSource")
check(len(bond) == 12, "BondEtwSample: %d events of the EventSource, expected 12" % len(bond))
check(bond and bond[0]["event"] == "ManifestData" and bond[0]["fields"] == {
    "Format": 1, "MajorVersion": 1, "MinorVersion": 0, "Magic": 91, "TotalChunks": 1, "ChunkNumber": 0,
    "PayloadLength": 6329}, "BondEtwSample ManifestData envelope")
names = sorted(set(e["event"] for e in bond[1:]))
check(names == ["WriteBinaryPayload", "WriteManifestPayload"], "BondEtwSample event names %r" % names)
check(all("error" not in e and e["fields"].get("occurenceFileTimeUtc") for e in bond[1:]),
      "BondEtwSample events decode with their manifest's fields")
rc, evs, err = events(os.path.join(DATA, "BondEtwSample.etl"), "--no-manifest-events")
check(len(evs) == 12 and not any(e["event"] == "ManifestData" for e in evs) and
      all("error" not in e for e in evs[1:]), "--no-manifest-events drops the chunk, still decodes")

# Manifest files: HTTP_Server.man
rc, evs, err = events(os.path.join(DATA, "HTTP_Server.etl"), "--manifest", os.path.join(DATA, "HTTP_Server.man"))
http = by_provider(evs, "Microsoft-Windows-HttpService")
check(rc == 0 and len(http) == 2041, "HTTP_Server with its manifest: %d named events, rc %d" % (len(http), rc))
check(all("error" not in e and "unsupported" not in json.dumps(e["fields"]) for e in http),
      "HTTP_Server: every event decodes without error")
ev2 = [e for e in http if e["id"] == 2]
check(ev2 and all(isinstance(e["fields"].get("Url"), str) and e["fields"]["Url"].startswith("http") for e in ev2),
      "HTTP_Server event 2 Url is a string that runs to the end of the payload")
ev21 = [e for e in http if e["id"] == 21][0]
check(ev21["fields"].get("LocalAddr", "").startswith("[2001:4898:0:fff:0:5efe:a78:109d]:80"),
      "HTTP_Server event 21 LocalAddr as a socket address: %r" % ev21["fields"].get("LocalAddr"))
rc, evs, err = events(os.path.join(DATA, "HTTP_Server.etl"), "--messages", "-m", os.path.join(DATA, "HTTP_Server.man"))
first21 = [e for e in evs if e.get("id") == 21 and e["provider"] == "Microsoft-Windows-HttpService"][0]
check(first21.get("message") == "New connection created (local IP address [2001:4898:0:fff:0:5efe:a78:109d]:80 "
      "and remote address [2001:4898:0:fff:0:5efe:a50:e410]:37837).", "--messages fills event 21's inserts: %r"
      % first21.get("message"))
check("message" not in http[0], "no message without --messages")
rc, out, err = run("--manifest", os.path.join(DATA, "no-such.man"), os.path.join(DATA, "HTTP_Server.etl"))
check(rc == 2 and "cannot read the manifest: No such file" in err, "missing manifest is fatal: rc %d %r" % (rc, err))
with tempfile.TemporaryDirectory() as tmp:
    bad = os.path.join(tmp, "bad.man")
    with open(bad, "w") as fh:
        fh.write("<instrumentationManifest>\n<instrumentation>\n<events>\n</instrumentation>\n")
    # a manifest named with -m that loads nothing cannot be read: exit 2 before
    # any event (README: "2 ... a -m path cannot be read"), its reason said
    # with -q too (-q quiets damaged data, not fatal input errors; issue 23.7)
    rnd = os.path.join(tmp, "random.man")
    with open(rnd, "wb") as fh:
        fh.write(bytes((i * 7919 + 13) % 251 for i in range(4096)))
    dtd = os.path.join(tmp, "dtd.man")
    with open(dtd, "w") as fh:
        fh.write('<?xml version="1.0"?>\n<!DOCTYPE x [<!ENTITY a "b">]>\n<instrumentationManifest/>\n')
    deep = os.path.join(tmp, "deep.man")
    with open(deep, "w") as fh:
        fh.write("<a>" * 100000 + "</a>" * 100000)
    reasons = {bad: r"bad\.man:4: mismatched tag", rnd: r"random\.man:\d+: ", dtd: r"dtd\.man:2: document type",
               deep: r"deep\.man:1: elements are nested more than 64 deep"}
    for man, reason in reasons.items():
        for q in ([], ["-q"]):
            rc, out, err = run(*q, "-m", man, "-m", os.path.join(DATA, "HTTP_Server.man"),
                               os.path.join(DATA, "HTTP_Server.etl"))
            check(rc == 2 and out == "" and re.search(reason + r".*nothing of this manifest is loaded", err),
                  "%s %s: exit 2 and the reason: rc %d %r" % (os.path.basename(man), q, rc, err[:300]))
            check(len(err.splitlines()) == 1 or not q, "-q says only the fatal reason: %r" % err[:300])
    # a file of a folder that does not load stays a problem of the folder (exit 0)
    folder = os.path.join(tmp, "folder")
    os.makedirs(folder)
    shutil.copy(rnd, folder)
    rc, evs, err = events(os.path.join(DATA, "HTTP_Server.etl"), "-m", folder, "-m", os.path.join(DATA, "HTTP_Server.man"))
    check(rc == 0 and len(by_provider(evs, "Microsoft-Windows-HttpService")) == 2041,
          "a folder's unreadable file does not stop the run: rc %d %r" % (rc, err[:300]))

# A folder of many manifests (-m DIR): loaded lazily by provider GUID, the
# same output as the one manifest the trace uses, exit 0, its problems in one
# summary line per folder (each with --verbose).
http_guid = "{dd5ef90a-6398-47a4-ad34-4dcecdef795f}"
with open(os.path.join(DATA, "HTTP_Server.man"), encoding="utf-8") as fh:
    http_text = fh.read()
with tempfile.TemporaryDirectory() as tmp:
    folder = os.path.join(tmp, "manifests")
    os.makedirs(os.path.join(folder, "sub"))
    for i in range(300):
        fake = http_text.replace(http_guid, "{%08x-5eed-4000-8000-%012x}" % (0x10000000 + i, i)).replace(
            "Microsoft-Windows-HttpService", "Fake-HttpService-%03d" % i)
        where = "sub" if i % 7 == 0 else ""
        with open(os.path.join(folder, where, "fake%03d.man" % i), "w", encoding="utf-8") as fh:
            fh.write(fake)
    with open(os.path.join(folder, "m_real.man"), "w", encoding="utf-8") as fh:
        fh.write(http_text)
    # malformed, declares the trace's provider, and sorts before the real one:
    # it is loaded with it (nothing of it), the real one still wins
    with open(os.path.join(folder, "a_broken.man"), "w", encoding="utf-8") as fh:
        fh.write("<instrumentationManifest><instrumentation><events>\n<provider name='x' guid='%s'>\n"
                 "</events>\n" % http_guid)
    with open(os.path.join(folder, "no_provider.xml"), "w", encoding="utf-8") as fh:
        fh.write("<instrumentationManifest/>\n")
    with open(os.path.join(folder, "bad_guid.man"), "w", encoding="utf-8") as fh:
        fh.write("<provider name='y' guid='{nope}'/>\n")
    with open(os.path.join(folder, "zz_again.man"), "w", encoding="utf-8") as fh:  # a fake declared twice
        fh.write(http_text.replace(http_guid, "{%08x-5eed-4000-8000-%012x}" % (0x10000000 + 5, 5)))
    http_etl_path = os.path.join(DATA, "HTTP_Server.etl")
    rc1, alone, err1 = run("-m", os.path.join(DATA, "HTTP_Server.man"), http_etl_path)
    rc, out, err = run("-m", folder, http_etl_path)
    lines = err.splitlines()
    check(rc == 0 and out == alone and rc1 == 0, "-m DIR: the same output as the one manifest, rc %d" % rc)
    check(len(lines) == 1 and lines[0].startswith("etwdump: manifests in %s: " % folder)
          and "malformed file" in lines[0] and "declared twice" in lines[0] and "--verbose" in lines[0],
          "-m DIR: one summary line: %r" % err[:2000])
    rc, out, err = run("-j", "2", "-m", folder, http_etl_path)
    check(rc == 0 and out == alone and len(err.splitlines()) == 1, "-m DIR -j 2: the same, rc %d %r" % (rc, err[:500]))
    rc, out, err = run("--verbose", "-m", folder, http_etl_path)
    check(rc == 0 and out == alone and re.search(r"a_broken\.man:\d+: ", err) and "no_provider.xml" in err
          and "bad_guid.man" in err and "declared again" in err and len(err.splitlines()) >= 5
          and "Fake-HttpService" not in err, "--verbose: each problem: %r" % err[:2000])
    rc, out, err = run("--verbose", "-j", "2", "-m", folder, http_etl_path)
    check(rc == 0 and out == alone and err.count("a_broken.man:") == 1, "--verbose -j 2: each problem once")
    rc, out, err = run("-q", "-m", folder, http_etl_path)
    check(rc == 0 and out == alone and err == "", "-q -m DIR: nothing on stderr: %r" % err[:500])
    rc, out, err = run("--stats", "-j", "2", "-m", folder, http_etl_path)
    check(rc == 0 and len(err.splitlines()) == 1, "--stats -j 2 -m DIR: rc %d" % rc)
    # two folders: one line each at most; the later folder wins for a provider in both
    other = os.path.join(tmp, "other")
    os.makedirs(other)
    with open(os.path.join(other, "http.man"), "w", encoding="utf-8") as fh:
        fh.write(http_text.replace("Microsoft-Windows-HttpService", "Later-HttpService"))
    rc, out, err = run("-m", folder, "-m", other, http_etl_path)
    check(rc == 0 and len(err.splitlines()) <= 2 and '"provider":"Later-HttpService"' in out
          and "Microsoft-Windows-HttpService" not in out, "-m DIR1 -m DIR2: the later wins: %r" % err[:500])
    rc, out, err = run("-m", other, "-m", folder, http_etl_path)
    check(rc == 0 and out == alone, "-m DIR2 -m DIR1: the later wins")

# PerfView baselines, through the shared comparison tool when it is there (CI has it beside the clone)
tool = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "shared", "tools",
                    "compare-perfview-baseline")


def compare(baseline, jsonl, only=None):
    args = [sys.executable, tool, baseline, jsonl, "--verbose"] + (["--only", only] if only else [])
    p = subprocess.run(args, capture_output=True, text=True, timeout=300)
    return p.stdout.splitlines()


# Fields PerfView's hand-written CLR parser (not the CLR manifest) produces: computed values
# (TotalHeapSize, ModuleILFileName, TypeName...), enum names the manifest does not define (Reason,
# PauseMode, ...), its own map names (PinnedObjectHeap where the manifest says PinnedHeap), field names
# it renames (MarkWithType's Bytes is its Promoted), flags it prints as numbers where the manifest has
# a bitmap, "None" for a zero bitmap. docs/perfview-differences.md lists them with the evidence.
PERFVIEW_ONLY = {
    "GC/CreateSegment": {"Type"}, "GC/FinalizeObject": {"TypeName"}, "GC/FitBucketInfo": {"BucketKind"},
    "GC/GlobalHeapHistory": {"Reason", "GlobalMechanisms", "PauseMode", "MemoryPressure", "CondemnReasons0",
                             "CondemnReasons1", "Count"},
    "GC/HeapStats": {"TotalHeapSize", "TotalPromoted", "Depth", "GenerationSize4", "TotalPromotedSize4"},
    "GC/MarkWithType": {"Type", "Promoted"},
    "GC/PerHeapHistory": {"CompactMechanisms", "ExpandMechanisms", "ConcurrentCompactMechanisms", "MemoryPressure",
                          "ClrInstanceID", "FreeListAllocated", "FreeListRejected", "EndOfSegAllocated",
                          "CondemnedAllocated", "PinnedAllocated", "PinnedAllocatedAdvance",
                          "RunningFreeListEfficiency", "CondemnReasons0", "CondemnReasons1", "HeapIndex",
                          "ExtraGen0Commit", "Count", "data_len",
                          # the private v2 event has no template in the manifest, so it carries no fields
                          # and the tool may pair PerfView's line with another event at the same instant
                          "count",
                          # ... and its 433 bytes are reported as not decoded (leftover bytes are never
                          # dropped silently); PerfView decodes it with hand-written code
                          "error"},
    "Runtime/Start": {"StartupFlags", "StartupMode"}, "GC/AllocationTick": {"ObjectSize"},
    "GC/Start": {"ClientSequenceNumber"}, "Loader/AppDomainLoad": {"AppDomainFlags"},
    "Loader/AppDomainUnload": {"AppDomainFlags"}, "Loader/AppDomainDCStop": {"AppDomainFlags"},
    "Loader/AssemblyLoad": {"AssemblyFlags"}, "Loader/AssemblyUnload": {"AssemblyFlags"},
    "Loader/AssemblyDCStop": {"AssemblyFlags"}, "Loader/ModuleLoad": {"ModuleILFileName"},
    "Loader/ModuleUnload": {"ModuleILFileName"}, "Loader/ModuleDCStop": {"ModuleILFileName"},
    "Method/LoadVerbose": {"ReJITID", "OptimizationTier"}, "Method/UnloadVerbose": {"ReJITID", "OptimizationTier"},
    "Type/BulkType": {"TypeID_0", "TypeName_0"}, "AppDomainResourceManagement/ThreadCreated": {"Flags"},
    "NgenBinder/NgenBind": {"ReasonCode"},
    # Windows Kernel/SysConfig type 37: no public source describes it (PerfView prints it without
    # fields); undecodable, it carries an "error" and its raw bytes by the contract
    "SysConfig/Opcode(37)": {"error"},
}


def unexplained(lines):
    """Problem lines of compare-perfview-baseline --verbose that PERFVIEW_ONLY does not explain."""
    bad, name = [], None
    for line in lines:
        if re.match(r"^\S.*:$", line):
            name = line[:-1]
            continue
        if not line.startswith("   ") or name is None:
            continue
        short = name.split("/", 1)[1] if "/" in name else name
        allowed = PERFVIEW_ONLY.get(short, set())
        fields = re.findall(r"(?:: |; )([A-Za-z0-9_]+)=(?:.*?) expected", line)
        if line.strip().startswith("count "):
            if "count" not in allowed:
                bad.append(name + ": " + line.strip())
            continue
        if "no event of pid" in line or not fields or any(x not in allowed for x in fields):
            bad.append(name + ": " + line.strip())
    return bad


if os.path.exists(tool):
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "o.jsonl")
        clr = os.path.join(DATA, "ClrEtwAll.man")
        for trace, man, groups in (
                ("primitive-types", [], [None]),
                ("gcevents", ["-m", clr], [None]),
                ("net.4.5.2.x64", [], ["DNS-Client", "Immersive-Shell", "Kernel-EventTracing", "^PerfView/",
                                       "TplEventSource", "FrameworkEventSource", "KernelTraceControl/MetaData",
                                       "^Microsoft-Windows-DotNETRuntime/",
                                       "^(Windows Kernel|KernelTraceControl|MSNT_SystemTrace)/"]),
                ("net.4.5.2.x64", ["-m", clr], ["DotNETRuntime"])):
            with open(out, "w") as fh:
                subprocess.run([ETWDUMP, *man, os.path.join(DATA, trace + ".etl")], stdout=fh, timeout=300)
            for group in groups:
                lines = compare(os.path.join(DATA, trace + ".baseline.txt"), out, group)
                summary = lines[-1] if lines else ""
                check(summary.startswith("events matched"), "%s %s: compare ran: %r" % (trace, group, summary))
                problems = unexplained(lines)
                check(not problems, "%s %s (%s): unexplained differences from PerfView:\n  %s" % (
                    trace, group, " ".join(man), "\n  ".join(problems[:10])))
                if trace == "gcevents":
                    # display names as TDH gives them: only PerfView's own renamings differ
                    # (GC/MarkWithType x5, GC/FitBucketInfo, GC/LOHCompact; docs/perfview-differences.md)
                    n = re.search(r"names as PerfView's (\d+)/(\d+)", summary)
                    check(n and int(n.group(1)) >= 45 and n.group(2) == "52",
                          "gcevents: names as PerfView's >= 45/52: %s" % summary)
                m = re.search(r"counts matched (\d+)/(\d+)", summary)
                if group and "DotNETRuntime" not in group:
                    check(m and m.group(1) == m.group(2), "%s %s: every count matches: %s" % (trace, group, summary))
else:
    print("note: %s not found; PerfView baseline comparisons skipped" % tool)

# --- the CLR manifest built into etwdump (no -m) ----------------------------------
# gcevents.etl (.NET 8, recorded on Windows): every Microsoft-Windows-DotNETRuntime
# event decodes without a manifest given (before the built-in manifest: 69 of the
# 71 events carried "no schema"), with the field values PerfView's baseline shows.
gc = decoded["gcevents.etl"]
errs = [e for e in gc if "error" in e]
check(len(errs) == 0, "gcevents without -m: %d events with an error, expected 0 (%r)" % (
    len(errs), errs[:1]))
clr_evs = [e for e in gc if e["provider"] == "Microsoft-Windows-DotNETRuntime"]
check(len(clr_evs) == 69, "gcevents without -m: %d DotNETRuntime events named, expected 69" % len(clr_evs))
base_lines = [m for m in (LINE.match(x.rstrip("\n")) for x in
                          open(os.path.join(DATA, "gcevents.baseline.txt"), encoding="utf-8-sig")) if m]
for name in ("GC/Start", "GC/Stop", "GC/SuspendEEStart", "GC/Triggered", "GC/RestartEEStop"):
    want = [m for m in base_lines if m.group("name") == "Microsoft-Windows-DotNETRuntime/" + name]
    got = [e for e in gc if e["event"] == name]
    check(len(want) >= 1 and len(got) >= len(want), "gcevents %s: %d events, baseline shows %d" % (
        name, len(got), len(want)))
    for m, e in zip(want, got):
        check((e["pid"], e["tid"], e["data_len"]) == (int(m.group("pid")), int(m.group("tid")), int(m.group("len"))),
              "gcevents %s: pid/tid/data_len as PerfView's" % name)
        for field in re.finditer(r"(\w+)=(.*?); ", m.group("rest") + " "):
            key, exp = field.group(1), field.group(2)
            got_text = shown(perfview_text(e["fields"].get(key)))
            check(got_text == exp, "gcevents %s %s=%s, PerfView shows %s" % (name, key, got_text, exp))
first_start = [e for e in gc if e["event"] == "GC/Start"][0]["fields"]
check(first_start == {"Count": 1, "Depth": 1, "Reason": "Induced", "Type": "NonConcurrentGC", "ClrInstanceID": 8,
                      "ClientSequenceNumber": 0}, "gcevents first GC/Start fields: %r" % first_start)
first_susp = [e for e in gc if e["event"] == "GC/SuspendEEStart"][0]["fields"]
check(first_susp == {"Reason": "SuspendForGC", "Count": 0, "ClrInstanceID": 8},
      "gcevents first GC/SuspendEEStart fields: %r" % first_susp)
# the same with -m ClrEtwAll.man (same manifest) and with -j 2
rc, with_m, err = events(os.path.join(DATA, "gcevents.etl"), "-m", os.path.join(DATA, "ClrEtwAll.man"))
check(rc == 0 and with_m == gc, "gcevents: the built-in manifest decodes as -m ClrEtwAll.man does")
rc, par, err = events(os.path.join(DATA, "gcevents.etl"), "-j", "2")
check(rc == 0 and par == gc, "gcevents -j 2: the same events with the built-in manifest")
# --no-default-manifests brings the no-schema errors back, on one thread and on two
for extra in ([], ["-j", "2"]):
    rc, off, err = events(os.path.join(DATA, "gcevents.etl"), "--no-default-manifests", *extra)
    off_errs = [e for e in off if "error" in e]
    check(rc == 0 and len(off) == 71 and len(off_errs) == 69,
          "gcevents --no-default-manifests %s: %d errors of %d events, expected 69 of 71" % (
              " ".join(extra), len(off_errs), len(off)))
    check(all(e["error"].startswith("no schema: manifest not found for provider "
                                    "e13c0d23-ccbc-4e12-931b-d9cc2eee27e4") for e in off_errs),
          "gcevents --no-default-manifests %s: the errors say no manifest: %r" % (
              " ".join(extra), off_errs[0].get("error") if off_errs else None))
# ... and a manifest given still decodes them
rc, off_m, err = events(os.path.join(DATA, "gcevents.etl"), "--no-default-manifests", "-m",
                        os.path.join(DATA, "ClrEtwAll.man"))
check(rc == 0 and off_m == gc, "gcevents --no-default-manifests -m ClrEtwAll.man decodes every event")
# --schemas says where the schemas came from
rc, out, err = run("--schemas", os.path.join(DATA, "gcevents.etl"))
sources = set(re.findall(r'"source":"(\w+)"', out))
check(rc == 0 and sources == {"builtin", "mof"}, "gcevents --schemas: sources %r" % sorted(sources))
rc, out, err = run("--schemas", "-m", os.path.join(DATA, "ClrEtwAll.man"), os.path.join(DATA, "gcevents.etl"))
sources = set(re.findall(r'"source":"(\w+)"', out))
check(rc == 0 and sources == {"manifest", "mof"}, "gcevents --schemas -m: the user's manifest first: %r" % sorted(sources))

# --- --stats -----------------------------------------------------------------
rc, out, err = run("--stats", os.path.join(DATA, "net.4.5.2.x64.etl"))
check(rc == 0, "--stats exit %d" % rc)
check(re.search(r"^events\s+179474\b", out, re.M) is not None, "--stats counts 179474 events")
check(re.search(r"^buffers\s+360 \(compressed 359\b", out, re.M) is not None, "--stats: 360 buffers, 359 compressed")
check(re.search(r"^pointer size\s+8$", out, re.M) is not None, "--stats pointer size 8")
check("build 9200" in out, "--stats OS build 9200")
# kernel groups named; an unknown kernel type keeps Group/Opcode(N) and is counted
check(re.search(r"^\s+79528\s.*\sWindows Kernel/PerfInfo/Sample$", out, re.M) is not None,
      "--stats names the kernel group and event: 79528 Windows Kernel/PerfInfo/Sample")
check(re.search(r"^\s+1\s.*\sWindows Kernel/SysConfig/Opcode\(37\)$", out, re.M) is not None,
      "--stats counts the unknown SysConfig/Opcode(37)")
rc, out, err = run("--stats", os.path.join(DATA, "smallEtlFile.etl"))
check(re.search(r"^pointer size\s+4$", out, re.M) is not None, "--stats pointer size 4 for smallEtlFile")

# A record time of INT64_MIN (the first record of buffer 2 of gcevents.etl,
# its timestamp at 0x10058) overflowed the --stats duration (UB) and printed
# a year -23552 with a negative fraction. The record is now reported and
# skipped; the time range and duration are those of the intact trace.
TIME_RE = r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{7}Z"
rc0, out0, _ = run("--stats", os.path.join(DATA, "gcevents.etl"))
with tempfile.TemporaryDirectory() as tmp:
    for value in (0x8000000000000000, 0x7FFFFFFFFFFFFFFF, 0xFFFFFFFFFFFFFFFF):
        blob = bytearray(open(os.path.join(DATA, "gcevents.etl"), "rb").read())
        blob[0x10058:0x10060] = value.to_bytes(8, "little")
        bad = os.path.join(tmp, "gcevents-time.etl")
        open(bad, "wb").write(bytes(blob))
        rc, out, err = run("--stats", bad)
        rng = re.search(r"^time range\s+(\S+) \.\. (\S+)$", out, re.M)
        check(rc == 1 and "record skipped" in err, "--stats, time %#x: exit 1 with the record reported" % value)
        check(rng is not None and re.fullmatch(TIME_RE, rng.group(1)) and re.fullmatch(TIME_RE, rng.group(2)),
              "--stats, time %#x: both ends are times (%s)" % (value, rng and rng.group(0)))
        for line in ("time range", "duration"):
            want = re.search(r"^%s .*$" % line, out0, re.M)
            got = re.search(r"^%s .*$" % line, out, re.M)
            check(want and got and want.group(0) == got.group(0),
                  "--stats, time %#x: %s as in the intact trace" % (value, line))
        evs = [json.loads(x) for x in run(bad)[1].splitlines()]
        check(len(evs) == 70 and all(e.get("time") for e in evs),
              "time %#x: 70 events, every time set" % value)

# --stats -j 1 reads the trace once, without the pre-scan, unless it meets
# a StackWalk event, a MetaData record or a problem to say: then it reads
# it again as before (pre-scan, then the scan). Either way the same output
# as the pipeline's (-j 2), each problem said once: a kernel trace (one
# pass), net.4.5.2 (stacks and MetaData: again), a damaged record (again).
with tempfile.TemporaryDirectory() as tmp:
    blob = bytearray(open(os.path.join(DATA, "gcevents.etl"), "rb").read())
    blob[0x10058:0x10060] = (0x8000000000000000).to_bytes(8, "little")
    bad = os.path.join(tmp, "gcevents-time.etl")
    open(bad, "wb").write(bytes(blob))
    for path in (os.path.join(DATA, "ShutdownPerfDiagLogger.etl"), os.path.join(DATA, "net.4.5.2.x64.etl"), bad):
        one = run("--stats", "-j", "1", path)
        two = run("--stats", "-j", "2", path)
        name = os.path.basename(path)
        check(one == two, "--stats -j 1 %s: as -j 2 (rc %d/%d)" % (name, one[0], two[0]))
        lines = one[2].splitlines()
        check(len(lines) == len(set(lines)), "--stats -j 1 %s: each problem said once: %r" % (name, lines))
    check("record skipped" in run("--stats", "-j", "1", bad)[2], "--stats -j 1: the damaged record is said")

    # --report, --profile and --schemas go without the pre-scan the same
    # way (ahead.c); -n, even past the end, keeps the pre-scan: both give
    # the same bytes (--schemas: the same schemas, none twice under a new
    # id), and each problem is said once (the damaged record: held, then
    # the run again)
    for path in (os.path.join(DATA, "ShutdownPerfDiagLogger.etl"), os.path.join(DATA, "net.4.5.2.x64.etl"), bad):
        name = os.path.basename(path)
        for what in (("--report", "processes"), ("--report", "gc"), ("--report", "cpu"), ("--profile", "folded"),
                     ("--schemas",), ("--stacks", "--event", "PerfInfo/Sample"),
                     ("--stacks", "--provider", "Microsoft-Windows-Kernel-File")):  # named by MetaData records
            once = run(*what, path)
            pre = run(*what, "-n", "1000000000", path)
            # (no CPU sample in two of them: an empty profile)
            check(once == pre and (once[1] or what[0] in ("--profile", "--stacks") and "net" not in name),
                  "%s %s: as with the pre-scan (rc %d/%d)"
                  % (" ".join(what), name, once[0], pre[0]))
            lines = once[2].splitlines()
            check(len(lines) == len(set(lines)), "%s %s: each problem said once: %r" % (" ".join(what), name, lines))
    rc, _, err = run("--report", "gc", bad)
    check(rc == 1 and "record skipped" in err, "--report: the damaged record is said, exit 1 (got %d)" % rc)
    # --stacks over two files (its first pass pre-scans): said once too
    rc, _, err = run("--stacks", os.path.join(DATA, "gcevents.etl"), bad)
    check(rc == 1 and err.count("record skipped") == 1, "--stacks, two files: the damaged record said once: %r" % err)

# --- errors --------------------------------------------------------------------
rc, out, err = run(os.path.join(DATA, "no-such-file.etl"))
check(rc == 2 and "cannot read" in err and out == "", "missing file: exit %d, %r" % (rc, err))
rc, out, err = run(os.path.join(DATA, "HTTP_Server.man"))
check(rc == 2 and "a text file, not an ETL trace" in err and "decompress" not in err,
      "foreign file named as text: exit %d, %r" % (rc, err))
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

# --- hostile inputs (issue 9), built from HTTP_Server.man by hostile_inputs.py -----
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import hostile_inputs  # noqa: E402

http_man = open(os.path.join(DATA, "HTTP_Server.man"), encoding="utf-8").read()
http_etl = os.path.join(DATA, "HTTP_Server.etl")
with tempfile.TemporaryDirectory() as tmp:
    # 9.2: "%1" x 300,000 in every message; uncapped, 2 events are 11 MB, the trace 9.7 GB
    bomb = os.path.join(tmp, "bomb.man")
    with open(bomb, "w", encoding="utf-8") as f:
        f.write(hostile_inputs.message_bomb(http_man))
    rc, evs, err = events(http_etl, "--messages", "-n", "200", "-m", bomb)
    check(rc == 0 and err == "", "message bomb: exit %d, %r" % (rc, err[:200]))
    msgs = [e for e in evs if "message" in e]
    check(len(msgs) == 199, "message bomb: %d events with a message, expected 199" % len(msgs))
    check(all(len(e["message"].encode("utf-8")) <= 65536 for e in msgs), "message bomb: messages <= 64 KiB")
    check(all(e.get("message_cut") is True for e in msgs), "message bomb: every message marked cut")
    first = msgs[0]
    check(len(first["message"].encode("utf-8")) > 65536 - 64, "message bomb: cut close to 64 KiB (%d)"
          % len(first["message"]))
    rc, evs, err = events(http_etl, "--messages", "-n", "50", "-m", os.path.join(DATA, "HTTP_Server.man"))
    check(rc == 0 and not any("message_cut" in e for e in evs), "real messages are not marked cut")

    # 9.3: a 32 KB field name and 65535 zero-size structs with 4000-byte member
    # names in every template; uncapped, 2 events are 525 MB of JSON
    amp = os.path.join(tmp, "amp.man")
    with open(amp, "w", encoding="utf-8") as f:
        f.write(hostile_inputs.amplifier(http_man))
    p = subprocess.run([ETWDUMP, "-m", amp, http_etl], capture_output=True, timeout=300)
    lines = p.stdout.splitlines()
    check(p.returncode == 0 and len(lines) == 2042, "amplifier: exit %d, %d lines" % (p.returncode, len(lines)))
    check(len(p.stdout) < 16 * 1024 * 1024, "amplifier: %d bytes of JSON" % len(p.stdout))
    amp_ev = [json.loads(x) for x in lines[1:50]]
    f0 = [e["fields"] for e in amp_ev if e["provider"] == "Microsoft-Windows-HttpService"]
    check(f0 and all(list(x)[0] == "N" * 512 for x in f0), "amplifier: the long name cut to 512 bytes")
    arr = [x.get("S" * 64) for x in f0]
    check(arr and all(a == [{"M" * 512: ""}, {"unsupported": "STRUCT", "raw": ""}] for a in arr),
          "amplifier: zero-size elements stop after the first: %r" % (str(arr[:1])[:200],))

    # 9.6: repeated field names get _N suffixes, never a repeated key
    dup = os.path.join(tmp, "dup.man")
    with open(dup, "w", encoding="utf-8") as f:
        f.write(hostile_inputs.duplicates(http_man))
    p = subprocess.run([ETWDUMP, "-m", dup, http_etl], capture_output=True, timeout=300)
    repeated = []

    def no_repeats(pairs):
        keys = [k for k, _ in pairs]
        if len(set(keys)) != len(keys):
            repeated.append(keys)
        return dict(pairs)
    dup_ev = [json.loads(x, object_pairs_hook=no_repeats) for x in p.stdout.splitlines()]
    check(p.returncode == 0 and len(dup_ev) == 2042, "duplicates: exit %d" % p.returncode)
    check(not repeated, "duplicates: repeated keys %r" % repeated[:1])
    renamed = [list(e["fields"])[:4] for e in dup_ev
               if len(e["fields"]) >= 4 and list(e["fields"])[0] + "_2" in e["fields"]]
    check(len(renamed) == 873 and all(k[1:] == [k[0] + "_3", k[0] + "_4", k[0] + "_2"] for k in renamed),
          "duplicates: dup, dup, dup, dup_2 -> dup, dup_3, dup_4, dup_2: %r" % renamed[:1])

# --- CLI messages (issue 9.7) -----------------------------------------------------
small = os.path.join(DATA, "smallEtlFile.etl")
with tempfile.TemporaryDirectory() as empty_dir:
    rc, out, err = run(empty_dir)
    check(rc == 2 and "no .etl file" in err and "Success" not in err, "empty directory: rc %d %r" % (rc, err))
rc, out, err = run("/dev/null")
check(rc == 2 and "empty" in err and "Success" not in err, "/dev/null: rc %d %r" % (rc, err))
with open(small, "rb") as f:
    small_bytes = f.read()
ref = subprocess.run([ETWDUMP, small], capture_output=True, timeout=60).stdout
for arg in ("-", "/dev/stdin"):  # standard input, and a pipe given by name
    p = subprocess.run([ETWDUMP, arg], input=small_bytes, capture_output=True, timeout=60)
    check(p.returncode == 0 and p.stdout == ref and p.stdout.count(b"\n") == 2,
          "%s from a pipe: rc %d %r" % (arg, p.returncode, p.stderr[:200]))
p = subprocess.run([ETWDUMP, "-"], input=b"", capture_output=True, timeout=60)
check(p.returncode == 2 and b"standard input: empty" in p.stderr, "empty stdin: %r" % p.stderr)
p = subprocess.run([ETWDUMP, "--stats", "-"], input=small_bytes, capture_output=True, timeout=60)
check(p.returncode == 0 and b"standard input" in p.stdout, "--stats from stdin: %r" % p.stdout[:80])
for q in ([], ["-q"]):
    rc, out, err = run(*q, "-m", "/no/such.man", small)
    check(rc == 2 and err.count("/no/such.man") == 1 and "No such file" in err,
          "missing manifest %s reported once: %r" % (q, err))
rc, out, err = run("-o", "/dev/full", small)
check(rc == 2 and "/dev/full: write error" in err, "-o /dev/full names the file: %r" % err)
with open("/dev/full", "wb") as full_out:
    p = subprocess.run([ETWDUMP, small], stdout=full_out, stderr=subprocess.PIPE, timeout=60)
check(p.returncode == 2 and b"standard output: write error" in p.stderr, "stdout full: %r" % p.stderr)
rc, out, err = run("-n", "0", os.path.join(DATA, "primitive-types.etl"))
check(rc == 0 and out.count("\n") == 7, "-n 0 means every event: %d" % out.count("\n"))
http_man_path = os.path.join(DATA, "HTTP_Server.man")
rc, out, err = run("-n", "5", "-m", http_man_path, "-m", http_man_path, http_etl)
check(rc == 0 and "warning: " in err and "replaces" in err, "a replaced provider is a warning: rc %d %r" % (rc, err))
rc, out, err = run("--", small)
check(rc == 0 and out.count("\n") == 2, "-- then the file: rc %d" % rc)
rc, out, err = run("--", "-q")
check(rc == 2 and "-q: cannot read" in err, "after --, -q is a file name: %r" % err)

# --- help lists every option -----------------------------------------------------
rc, out, err = run("--help")
for opt in ("--format", "--stats", "--raw", "--file-order", "--max-events", "--output", "--quiet", "--help",
            "--version", "0: no limit", "'-' reads a trace from standard input", "'--' ends the options"):
    check(opt in out, "--help mentions %s" % opt)
readme = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "README.md")
if os.path.exists(readme):
    text = open(readme, encoding="utf-8").read()
    for opt in re.findall(r"^\s+(?:-\w, )?(--[\w-]+)", out, re.M):
        check(opt in text, "README documents %s" % opt)

print("%d passed, %d failed" % (passed, failed))
sys.exit(1 if failed else 0)
