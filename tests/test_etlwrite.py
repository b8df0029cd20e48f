#!/usr/bin/env python3
"""Tests of tests/etlwrite.py, the synthetic ETL writer, through etwdump and etlref.

usage: test_etlwrite.py ETWDUMP DATA_DIR

Writes traces of Microsoft-Windows-HttpService events (descriptors and payloads
built from tests/data/HTTP_Server.man) mixed with events of a provider no schema
knows, then checks what etwdump -m HTTP_Server.man prints for them (the log-file
header first, every event in order with its descriptor, pid/tid, exact time and
decoded fields; the unknown ones as "no schema" errors with their bytes), that
etlref reads the same records back, 32-bit traces, a trace of several buffers,
several CPUs, --stats, and the header buffer against a trace recorded on Windows
(primitive-types.etl). Prints "N passed, N failed".
"""
import datetime as dt
import json
import os
import re
import struct
import subprocess
import sys
import tempfile
import uuid
import xml.etree.ElementTree as ET

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import etlref  # noqa: E402
import etlwrite  # noqa: E402

ETWDUMP, DATA = sys.argv[1], sys.argv[2]
MAN = os.path.join(DATA, "HTTP_Server.man")
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


def dump(path, *extra):
    rc, out, err = run("-m", MAN, *extra, path)
    return rc, [json.loads(line) for line in out.splitlines()], err


def rfc3339(ft):
    """A FILETIME as etwdump writes times: RFC 3339, 7 fractional digits, Z."""
    secs, frac = divmod(ft, 10**7)
    t = dt.datetime(1601, 1, 1) + dt.timedelta(seconds=secs)
    return t.strftime("%Y-%m-%dT%H:%M:%S") + ".%07dZ" % frac


# --- the manifest: descriptors and templates of two HttpService events -------
NS = {"e": "http://schemas.microsoft.com/win/2004/08/events"}
LEVELS = {"win:Critical": 1, "win:Error": 2, "win:Warning": 3, "win:Informational": 4, "win:Verbose": 5}
root = ET.parse(MAN).getroot()
prov = root.find(".//e:provider", NS)
HTTP = uuid.UUID(prov.get("guid"))
opcodes = {o.get("name"): int(o.get("value"), 0) for o in prov.iterfind(".//e:opcode", NS)}
tasks = {t.get("name"): int(t.get("value"), 0) for t in prov.iterfind(".//e:task", NS)}
kwmask = {k.get("name"): int(k.get("mask"), 0) for k in prov.iterfind(".//e:keyword", NS)}
chans = {c.get("chid"): int(c.get("value"), 0) for c in prov.iterfind(".//e:channel", NS)}
templates = {t.get("tid"): [(d.get("name"), d.get("inType"), d.get("outType")) for d in t.iterfind("e:data", NS)]
             for t in prov.iterfind(".//e:template", NS)}


def descriptor(event_id):
    e = next(e for e in prov.iterfind(".//e:event", NS) if int(e.get("value")) == event_id)
    kw = 0
    for k in e.get("keywords", "").split():
        kw |= kwmask[k]
    return dict(provider=HTTP, id=event_id, version=int(e.get("version", "0")), level=LEVELS[e.get("level")],
                opcode=opcodes[e.get("opcode")], task=tasks[e.get("task")], keywords=kw,
                channel=chans[e.get("channel")]), templates[e.get("template")]


def encode(template, values, psize):
    """User data for `values` (by field name) per the template's in-types, and the JSON etwdump gives."""
    out, want = b"", {}
    for name, intype, outtype in template:
        v = values[name]
        if intype == "win:UInt64":
            out += struct.pack("<Q", v)
        elif intype == "win:UInt32":
            out += struct.pack("<I", v)
        elif intype == "win:UInt8":
            out += struct.pack("<B", v)
        elif intype == "win:Pointer":
            out += v.to_bytes(psize, "little")
        elif intype == "win:AnsiString":
            out += v.encode("latin-1") + b"\0"
        elif intype == "win:UnicodeString":
            out += v.encode("utf-16-le") + b"\0\0"
        else:
            raise ValueError("encode: no case for " + intype)
        want[name] = "0x%x" % v if outtype in ("win:HexInt64", "win:HexInt32") else v
    return out, want


D22, T22 = descriptor(22)   # ConnIdAssgn: RequestId, ConnectionId (u64 hex), ConnectionObj (pointer)
D65, T65 = descriptor(65)   # RequestId (u64 hex), Reason (ANSI), RequestQueueName (UTF-16)
check([t[1] for t in T22] == ["win:UInt64", "win:UInt64", "win:Pointer"], "template of event 22: %r" % T22)
check([t[1] for t in T65] == ["win:UInt64", "win:AnsiString", "win:UnicodeString"], "template of event 65: %r" % T65)
UNKNOWN = uuid.UUID("5c0b1f6e-3a4d-4b8e-9f21-0123456789ab")


def make_events(psize):
    """~10 events of the two providers; each with what etwdump should decode (or None: no schema)."""
    evs = []
    for i in range(10):
        common = dict(pid=1000 + i, tid=2000 + 3 * i, ts=12345 + 1000003 * i)
        if i % 3 == 0:
            vals = {"RequestId": 0xff00000080000000 + i, "ConnectionId": 0x6000060c + i,
                    "ConnectionObj": (0xfffffa8001a9b680 if psize == 8 else 0x81a9b680) + 16 * i}
            payload, fields = encode(T22, vals, psize)
            ev = dict(D22, **common)
        elif i % 3 == 1:
            vals = {"RequestId": i, "Reason": "reason %d" % i, "RequestQueueName": "Queue\u00e9\u4e2d%d" % i}
            payload, fields = encode(T65, vals, psize)
            ev = dict(D65, **common)
        else:
            payload, fields = bytes(range(i, i + 7 + i)), None
            ev = dict(provider=str(UNKNOWN), id=300 + i, version=i % 4, level=5, opcode=12, task=777,
                      keywords=0x8000000000000001 | (i << 8), channel=17, **common)
        if i == 4:
            ev["activity_id"] = uuid.UUID("00000100-0000-0003-193d-42fb30bbcb01")
        ev["payload"] = payload
        evs.append((ev, fields))
    return evs


def check_trace(tag, path, written, psize, start, cpus=1):
    rc, out, err = dump(path)
    check(rc == 0, "%s: exit %d" % (tag, rc))
    check(err == "", "%s: nothing on stderr: %r" % (tag, err[:300]))
    check(len(out) == 1 + len(written), "%s: %d events out for %d written" % (tag, len(out), len(written)))
    if not out:
        return out
    h = out[0]
    f = h.get("fields", {})
    check(h.get("provider") == "Windows Kernel" and h.get("event") == "EventTrace", "%s: header line first" % tag)
    check(h.get("time") == rfc3339(start) and f.get("StartTime") == rfc3339(start),
          "%s: header time/StartTime %r %r" % (tag, h.get("time"), f.get("StartTime")))
    check(f.get("PointerSize") == psize and f.get("PerfFreq") == 10**7 and f.get("ReservedFlags") == 1 and
          f.get("BufferSize") == 65536 and f.get("NumberOfProcessors") == cpus and
          f.get("SessionName") == "etwdecode-test" and f.get("LogFileName") == path and
          f.get("BuffersWritten") == os.path.getsize(path) // 65536,
          "%s: header fields %r" % (tag, f))
    bad = []  # one check per kind below, naming the first few events that fail it
    for n, ((ev, fields), got) in enumerate(zip(written, out[1:])):
        want = {"provider_guid": str(uuid.UUID(str(ev["provider"]))), "id": ev["id"], "version": ev["version"],
                "level": ev["level"], "opcode": ev["opcode"], "task": ev["task"], "channel": ev["channel"],
                "keywords": "0x%016x" % ev["keywords"], "pid": ev["pid"], "tid": ev["tid"],
                "time": rfc3339(start + ev["ts"]), "data_len": len(ev["payload"]),
                "cpu": ev.get("cpu", n % cpus)}
        have = {k: got.get(k) for k in want}
        if have != want:
            bad.append("event %d header: %r != %r" % (n, have, want))
        if got.get("activity_id") != (str(ev["activity_id"]) if "activity_id" in ev else None):
            bad.append("event %d activity id %r" % (n, got.get("activity_id")))
        if fields is None:
            if not ("no schema" in got.get("error", "") and got.get("raw") == ev["payload"].hex() and
                    got.get("fields") == {}):
                bad.append("event %d unknown provider: %r" % (n, got))
        elif not (got.get("fields") == fields and "error" not in got and
                  got.get("provider") == "Microsoft-Windows-HttpService"):
            bad.append("event %d fields %r != %r" % (n, got.get("fields"), fields))
    check(not bad, "%s: %d of %d events differ: %s" % (tag, len(bad), len(written), "; ".join(bad[:3])))
    nschema = sum(1 for _, f in written if f is None)
    check(sum(1 for e in out[1:] if "error" in e) == nschema, "%s: %d events without schema" % (tag, nschema))
    return out


def check_etlref(tag, path, written, psize, cpus=1):
    recs = etlref.records(path)
    check(len(recs) == 1 + len(written), "%s: etlref reads %d records" % (tag, len(recs)))
    hdr = recs[0]
    check(hdr.header and hdr.form == "KERNEL" and hdr.htype == (2 if psize == 8 else 1) and hdr.provider == (0, 0),
          "%s: etlref header record" % tag)
    start, freq, clock, raw0 = etlref.logfile(path)
    check(freq == 10**7 and clock == 1 and raw0 == hdr.raw, "%s: etlref.logfile %r" % (tag, (freq, clock, raw0)))
    got = etlref.merged(recs)[1:]
    for n, ((ev, _), r) in enumerate(zip(written, got)):
        have = (r.form, r.htype, r.provider, r.id, r.version, r.level, r.opcode, r.task, r.keywords, r.pid, r.tid,
                r.raw - raw0, r.data_len, r.cpu)
        want = ("EVENT_HEADER", 0x13 if psize == 8 else 0x12, str(uuid.UUID(str(ev["provider"]))), ev["id"],
                ev["version"], ev["level"], ev["opcode"], ev["task"], ev["keywords"], ev["pid"], ev["tid"], ev["ts"],
                len(ev["payload"]), ev.get("cpu", n % cpus))
        if have != want:
            check(False, "%s: etlref record %d: %r != %r" % (tag, n, have, want))
            break
    else:
        check(True, "")
    return recs


tmp = tempfile.mkdtemp(prefix="etlwrite-")

# --- ~10 events, 64-bit and 32-bit writers ------------------------------------------
for psize in (8, 4):
    path = os.path.join(tmp, "small%d.etl" % psize)
    written = make_events(psize)
    start = 132000000000000000 + psize * 77777
    nbuf = etlwrite.write_etl(path, [e for e, _ in written], pointer_size=psize, start_filetime=start)
    check(nbuf == 2 and os.path.getsize(path) == 2 * 65536, "small%d: 2 buffers of 64 KiB" % psize)
    check_trace("small%d" % psize, path, written, psize, start)
    check_etlref("small%d" % psize, path, written, psize)
    rc, out, err = run("--stats", path)
    check(rc == 0 and re.search(r"^events\s+11\b", out, re.M) and re.search(r"^pointer size\s+%d$" % psize, out, re.M)
          and re.search(r"^buffers\s+2 \(compressed 0, flagged lost 0, skipped 0", out, re.M)
          and re.search(r"^  EVENT_HEADER\s+10$", out, re.M),
          "small%d --stats: %s" % (psize, out[:600]))

# --- the header buffer against one recorded on Windows ----------------------------------


def header_view(path):
    """The header buffer and log-file header record, read at the offsets of FORMATS.md 1.2/1.4/1.5."""
    d = open(path, "rb").read()
    v = {}
    (v["BufferSize"], v["SavedOffset"], _, _, _, v["Sequence"], _, v["ProcIndex"], _, v["State"], v["Filled"],
     v["BufferFlag"], v["BufferType"]) = struct.unpack_from("<IIIIqqQHHIIHH", d, 0)
    p = etlref.BUFFER_HEADER
    v["Version"], v["HeaderType"], v["MarkerFlags"], v["RecSize"], v["Type"], v["Group"] = \
        struct.unpack_from("<HBBHBB", d, p)
    psize = 8 if v["HeaderType"] == 2 else 4
    b = p + 0x20
    (v["LfBufferSize"], _, _, v["Cpus"], _, _, _, _, v["BuffersWritten"], v["StartBuffers"], v["PointerSize"]) = \
        struct.unpack_from("<IIIIqIIIIII", d, b)
    tail = b + 0x40 + 2 * (psize - 4) + 0xAC
    tail += -tail % 8
    v["BootTime"], v["PerfFreq"], v["StartTime"], v["Clock"], v["BuffersLost"] = struct.unpack_from("<qqqII", d, tail)
    strings = d[tail + 0x20:p + v["RecSize"]]
    v["FixedSize"] = tail + 0x20 - b
    v["Strings"] = strings.decode("utf-16-le").split("\0")[:2]
    v["FileSize"] = len(d)
    v["Tail"] = d[p + ((v["RecSize"] + 7) & ~7):p + ((v["RecSize"] + 7) & ~7) + 4]
    return v


real = header_view(os.path.join(DATA, "primitive-types.etl"))
mine = header_view(os.path.join(tmp, "small8.etl"))
for k in ("SavedOffset", "Sequence", "ProcIndex", "State", "BufferFlag", "BufferType", "Version", "HeaderType",
          "MarkerFlags", "Type", "Group", "StartBuffers", "PointerSize", "PerfFreq", "Clock", "BuffersLost",
          "FixedSize"):
    if k in ("SavedOffset",):  # holds the header buffer's data end in both
        check(real[k] == real["Filled"] and mine[k] == mine["Filled"], "header buffer SavedOffset = FilledBytes")
        continue
    check(real[k] == mine[k], "header buffer %s: recorded %r, written %r" % (k, real[k], mine[k]))
for v, name in ((real, "recorded"), (mine, "written")):
    check(v["LfBufferSize"] == v["BufferSize"] and v["FileSize"] == v["BuffersWritten"] * v["BufferSize"],
          "%s: BufferSize in the header = the buffer's, file = BuffersWritten buffers" % name)
    check(v["RecSize"] == 0x20 + v["FixedSize"] + 2 * (len(v["Strings"][0]) + len(v["Strings"][1])) + 4,
          "%s: header record = 0x20 + fixed part + two UTF-16 strings: %r" % (name, v["Strings"]))
    check(v["BootTime"] < v["StartTime"], "%s: BootTime before StartTime" % name)
check(real["Strings"][0] == "solar_system" and mine["Strings"] == ["etwdecode-test", os.path.join(tmp, "small8.etl")],
      "session and log-file names: %r %r" % (real["Strings"], mine["Strings"]))
check(real["StartTime"] == etlref.logfile(os.path.join(DATA, "primitive-types.etl"))[0], "header_view reads StartTime")
m4 = header_view(os.path.join(tmp, "small4.etl"))
check(m4["HeaderType"] == 1 and m4["PointerSize"] == 4 and m4["FixedSize"] == 0x110 and mine["FixedSize"] == 0x118,
      "32-bit header: SYSTEM32, x86 layout 0x110")

# --- 5000 events: several buffers, all back in order --------------------------------
many = []
for i in range(5000):
    if i % 2:
        payload, fields = encode(T22, {"RequestId": i, "ConnectionId": 5000 - i, "ConnectionObj": 0x1000 + i}, 8)
        ev = dict(D22, pid=4, tid=100 + i % 7, ts=10 * i + 1, payload=payload)
    else:
        payload, fields = b"x" * (i % 200), None
        ev = dict(provider=UNKNOWN, id=i % 1000, version=1, level=4, opcode=0, task=0, keywords=0, channel=0,
                  pid=8, tid=9, ts=10 * i + 1, payload=payload)
    many.append((ev, fields))
path = os.path.join(tmp, "many.etl")
nbuf = etlwrite.write_etl(path, [e for e, _ in many])
check(nbuf >= 6 and os.path.getsize(path) == nbuf * 65536, "many: %d buffers" % nbuf)
out = check_trace("many", path, many, 8, 132000000000000000)
recs = check_etlref("many", path, many, 8)
check(len({r.offset // 65536 for r in recs}) == nbuf, "many: every buffer holds records")
raw = open(path, "rb").read()
bufs = []
for b in range(nbuf):
    saved, = struct.unpack_from("<I", raw, b * 65536 + 0x04)
    seq, _, _, _, state, filled, flag, btype = struct.unpack_from("<qQHHIIHH", raw, b * 65536 + 0x18)
    bufs.append((saved, filled, seq, state, flag, btype))
want = [(x[1], x[1], b, 3, 0x21 if b in (0, nbuf - 1) else 0x20, 4 if b == 0 else 0) for b, x in enumerate(bufs)]
check(bufs == want,
      "many: SavedOffset = FilledBytes, sequence numbers, state 3, flags PROC_INDEX (+FLUSH_MARKER at the end), "
      "types: %r" % bufs[:3])
rc, txt, err = run("--stats", path)
check(rc == 0 and re.search(r"^events\s+5001\b", txt, re.M) and re.search(r"^buffers\s+%d \(" % nbuf, txt, re.M)
      and re.search(r"^  EVENT_HEADER\s+5000$", txt, re.M) and err == "", "many --stats: %s" % txt[:600])
rc, js, err = run("--stats", "--format", "json", "-m", MAN, path)
st = json.loads(js) if rc == 0 else {}
byp = {p["provider"]: p["count"] for p in st.get("providers", [])}
check(st.get("events") == 5001 and byp.get("Microsoft-Windows-HttpService") == 2500 and byp.get(str(UNKNOWN)) == 2500,
      "many --stats json: %r" % byp)

# --- several CPUs: per-CPU buffers interleave in the file, the merge restores time order ----
multi = []
for i in range(6000):
    payload, fields = encode(T65, {"RequestId": i, "Reason": "r" * (i % 50), "RequestQueueName": "q%d" % i}, 8)
    multi.append((dict(D65, pid=i % 13, tid=i, ts=3 * i, payload=payload), fields))
path = os.path.join(tmp, "cpus.etl")
nbuf = etlwrite.write_etl(path, [e for e, _ in multi], cpus=4)
check_trace("cpus", path, multi, 8, 132000000000000000, cpus=4)
recs = check_etlref("cpus", path, multi, 8, cpus=4)
order = [r.cpu for r in recs[1:]]
check(sorted(set(order)) == [0, 1, 2, 3] and order != [i % 4 for i in range(6000)],
      "cpus: records of 4 CPUs, file order is not time order")
bufcpu = {}
for r in recs[1:]:
    bufcpu.setdefault(r.offset // 65536, set()).add(r.cpu)
check(all(len(c) == 1 for c in bufcpu.values()), "cpus: one CPU per buffer")
bufcpu = [(b, min(c)) for b, c in sorted(bufcpu.items())]
check([c for _, c in bufcpu] != sorted(c for _, c in bufcpu), "cpus: buffers of different CPUs interleave: %r" % bufcpu)
rc, out, err = run("--file-order", path)
fo = [json.loads(line)["cpu"] for line in out.splitlines()[1:]]
check(rc == 0 and fo == order, "cpus: --file-order gives the buffers' order")
explicit = [(dict(e, cpu=1), f) for e, f in multi[:5]]
path = os.path.join(tmp, "cpu1.etl")
etlwrite.write_etl(path, [e for e, _ in explicit], cpus=2)
check_trace("cpu1", path, explicit, 8, 132000000000000000, cpus=2)

# --- bad arguments ---------------------------------------------------------------
for kw, what in ((dict(pointer_size=2), "pointer size 2"), (dict(cpus=0), "0 CPUs")):
    try:
        etlwrite.write_etl(os.path.join(tmp, "bad.etl"), [], **kw)
        check(False, "%s refused" % what)
    except ValueError:
        check(True, "")
try:
    etlwrite.write_etl(os.path.join(tmp, "bad.etl"), [dict(provider=UNKNOWN, payload=b"\0" * 0xFFB0)])
    check(False, "an event over 0xFFFF bytes refused")
except ValueError:
    check(True, "")

for name in os.listdir(tmp):
    os.unlink(os.path.join(tmp, name))
os.rmdir(tmp)
print("%d passed, %d failed" % (passed, failed))
sys.exit(1 if failed else 0)
