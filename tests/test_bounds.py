#!/usr/bin/env python3
"""Issue 23's hostile inputs (items 2, 3, 4, 6), built here with etlwrite.py
(nothing large is committed): memory and time stay bounded, and what is
decoded is right.

usage: test_bounds.py ETWDUMP DATA_DIR
"""
import json
import os
import struct
import shutil
import subprocess
import sys
import tempfile
import time
import uuid

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import etlwrite  # noqa: E402

ETWDUMP, DATA = sys.argv[1], sys.argv[2] if len(sys.argv) > 2 else None
FAILED = []


def check(cond, what):
    print(("ok   " if cond else "FAIL ") + what)
    if not cond:
        FAILED.append(what)


def run_rss(*args, timeout=300):
    """rc, stdout bytes, stderr bytes, seconds, peak RSS (KiB) of this run,
    reaped here with wait4 for the child's own rusage. Linux carries the
    parent's peak at the fork into the child's, so measure before this
    process holds much (rss() below, with the output thrown away)."""
    t0 = time.monotonic()
    with tempfile.TemporaryFile() as o, tempfile.TemporaryFile() as e:
        p = subprocess.Popen([ETWDUMP, *args], stdout=o, stderr=e, close_fds=True)
        _, status, ru = os.wait4(p.pid, 0)
        p.returncode = os.waitstatus_to_exitcode(status)
        secs = time.monotonic() - t0
        o.seek(0)
        e.seek(0)
        return p.returncode, o.read(), e.read(), secs, ru.ru_maxrss


def rss(*args, timeout=300):
    """rc, seconds, peak RSS (KiB); the output is thrown away."""
    t0 = time.monotonic()
    p = subprocess.Popen([ETWDUMP, *args], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _, status, ru = os.wait4(p.pid, 0)
    p.returncode = os.waitstatus_to_exitcode(status)
    return p.returncode, time.monotonic() - t0, ru.ru_maxrss


# --- TraceLogging metadata, written from the format (TraceLoggingProvider.h:
# u16 size, event tags byte, event name NUL, then per field name NUL and one
# in-type byte) ---------------------------------------------------------------
TL_UINT32 = 8
EXT_SCHEMA_TL = 11
PROV = uuid.UUID("4f50731a-89cf-4782-b3e0-dce8c90476ba")


def tl_meta(event, fields):
    body = b"\0" + event.encode() + b"\0"
    for name, intype in fields:
        body += name.encode() + b"\0" + bytes([intype])
    return struct.pack("<H", 2 + len(body)) + body


def tl_event(i, event, fields, values):
    return {"provider": PROV, "ts": i, "pid": 100, "tid": 200,
            "ext": [(EXT_SCHEMA_TL, tl_meta(event, fields))],
            "payload": b"".join(struct.pack("<I", v) for v in values)}


def events_of(out):
    """The events of PROV (not the log-file header)."""
    evs = [json.loads(line) for line in out.decode().splitlines() if line.startswith("{")]
    return [e for e in evs if e.get("provider_guid") == str(PROV)]


N = 60000  # item 2: distinct TraceLogging schemas
TINY = 50000  # item 3: buffers of 160 bytes


def fname(j):
    return "field_%06d_with_a_longer_name_%d" % (j, j)



CUT_PROV = uuid.UUID("0d1c2b3a-4958-4676-8594-a3b2c1d0e0f1")
CUT_FAKE_EVENT = 41  # the cpu-1 event whose payload holds the fake header


def cut_layout():
    """The events (ids 0..119, even ones on cpu 0, odd on cpu 1), where
    each cpu-1 record starts and ends in the file, where the fake header
    lies and where the file is cut: computed from etlwrite's layout (the
    header buffer, then cpu 0's buffer, then cpu 1's, each 64 KiB)."""
    evs, spans = [], {}
    at = 2 * etlwrite.BUFFER_SIZE + etlwrite.BUFFER_HEADER  # cpu 1's first record
    fake_at = None
    for i in range(120):
        payload = bytes((i * 7 + k) & 0xFF for k in range(200))
        if i == CUT_FAKE_EVENT:
            payload = b"\x11" * 16 + b"\0" * 0x48 + payload[0x58:]  # the fake header, filled in below
        evs.append({"provider": CUT_PROV, "id": i, "ts": 10 * i, "pid": 4, "tid": 8, "cpu": i % 2,
                    "payload": payload})
        if i % 2:
            size = etlwrite.EVENT_HEADER_SIZE + len(payload)
            spans[i] = (at, at + size)
            if i == CUT_FAKE_EVENT:
                fake_at = at + etlwrite.EVENT_HEADER_SIZE + 16
            at += (size + 7) & ~7
    # the cut: in the middle of the 12th cpu-1 record after the fake one
    victim = CUT_FAKE_EVENT + 2 * 12
    cut = spans[victim][0] + 100
    fake = struct.pack("<IIIIqqQHHIIHH16s", cut - fake_at, 0x48, 0x48, 0, 0, 7, 0, 145, 0x99, 3, 0x48,
                       0x20, 0, b"\0" * 16)
    p = bytearray(evs[CUT_FAKE_EVENT]["payload"])
    p[16:16 + 0x48] = fake
    evs[CUT_FAKE_EVENT]["payload"] = bytes(p)
    return evs, spans, cut


def cut_events(tmp):
    evs, spans, cut = cut_layout()
    full = os.path.join(tmp, "cut_full.etl")
    etlwrite.write_etl(full, evs, cpus=2)
    data = open(full, "rb").read()
    with open(os.path.join(tmp, "cut.etl"), "wb") as f:
        f.write(data[:cut])


def tiny_trace(path, n, empty=False, cpus=2):
    """Issue 23 item 3: the log-file header's 64 KiB buffer, then n buffers
    of 160 bytes, each the 0x48-byte header and one 88-byte event (or, with
    empty, no record: SavedOffset = FilledBytes = 0x48), on cpus in turn.
    Written with etlwrite's own pieces; returns the events' (id, cpu)."""
    raw_base = 10000000000
    hdr = etlwrite._Buffer(0)
    hdr.add(etlwrite.logfile_header_record(8, 132000000000000000, 132000000000000000 + 10 * n, cpus,
                                           "tiny", path, 1 + n, raw_base), raw_base)
    flags = etlwrite.BUFFER_FLAG_PROC_INDEX
    want = []
    with open(path, "wb") as f:
        f.write(etlwrite._buffer_bytes(hdr, etlwrite.BUFFER_TYPE_HEADER, flags | etlwrite.BUFFER_FLAG_FLUSH_MARKER,
                                       0, 0x20, 0))
        saved = etlwrite.BUFFER_SIZE
        etlwrite.BUFFER_SIZE = 160
        try:
            for i in range(n):
                b = etlwrite._Buffer(i % cpus)
                if not empty:
                    ev = {"provider": CUT_PROV, "id": i & 0xFFFF, "ts": 10 * i, "pid": 4, "tid": 8,
                          "payload": struct.pack("<Q", i)}
                    b.add(etlwrite.event_record(ev, 8, raw_base), raw_base + 10 * i)
                    want.append((i & 0xFFFF, i % cpus))
                f.write(etlwrite._buffer_bytes(b, etlwrite.BUFFER_TYPE_GENERIC, flags, i + 1, 0x20,
                                               raw_base + 10 * i))
        finally:
            etlwrite.BUFFER_SIZE = saved
    return want


def make_traces(tmp):
    """Every hostile trace, written into tmp. Run in a child process: a peak
    RSS measured for etwdump includes its parent's at the fork, so the
    parent stays small."""

    # === item 2: a new TraceLogging schema on every event =======================
    # N one-field schemas, each its own field name; then the first 100 again
    # (dropped from the cache by then with --tl-cache 1: parsed again, the same
    # values). The same number of events with ONE schema is the baseline of RSS.
    churn, same = os.path.join(tmp, "tl_churn.etl"), os.path.join(tmp, "tl_same.etl")
    evs = [tl_event(i, "E%d" % i, [(fname(i), TL_UINT32)], [i * 3])
           for i in range(N)]
    evs += [tl_event(N + j, "E%d" % j, [(fname(j), TL_UINT32)], [j * 3])
            for j in range(100)]
    etlwrite.write_etl(churn, evs)
    etlwrite.write_etl(same, [tl_event(i, "E", [(fname(0), TL_UINT32)], [i])
                              for i in range(N + 100)])
    # undecodable metadata (a field name with no NUL) on every event: each event
    # says why, the same way
    bad_body = b"\0Bad\0" + b"x" * 100
    bad_meta = [{"provider": PROV, "ts": i, "ext": [(EXT_SCHEMA_TL, struct.pack("<H", 2 + len(bad_body)) + bad_body)],
                 "payload": b"\0" * 4} for i in range(2000)]
    etlwrite.write_etl(os.path.join(tmp, "tl_bad.etl"), bad_meta)

    # === item 4: a buffer cut by the end of the file, with a header-like
    # pattern inside it (an empty buffer's header: logger 0x99, processor
    # 145, its BufferSize reaching exactly the cut) in an event's binary
    # payload. Two processors; cpu 1's buffer is the last in the file.
    cut_events(tmp)

    # === item 3: 50000 buffers of 160 bytes (one event each), and 50000 empty
    tiny_trace(os.path.join(tmp, "tiny.etl"), TINY)
    tiny_trace(os.path.join(tmp, "tiny_empty.etl"), TINY, empty=True)

    # === item 1: a manifest over the load's 64 MiB memory limit (300,000
    # templates in 65 MB), named with -m for a run on 4 threads
    with open(os.path.join(tmp, "templates.man"), "w") as f:
        f.write('<?xml version="1.0"?><instrumentationManifest xmlns="http://schemas.microsoft.com/win/2004/08/'
                'events"><instrumentation><events><provider name="P" guid="{11111111-2222-3333-4444-555555555555}"'
                ' symbol="P" resourceFileName="x" messageFileName="x"><templates>')
        for i in range(300000):
            f.write('<template tid="template_number_%d"><data name="alpha" inType="win:UInt32"/><data name="beta" '
                    'inType="win:UInt64"/><data name="gamma" inType="win:UnicodeString"/><data name="delta" '
                    'inType="win:Int32"/></template>\n' % i)
        f.write('</templates></provider></events></instrumentation></instrumentationManifest>')


if len(sys.argv) == 3 and sys.argv[1] == "--make":
    make_traces(sys.argv[2])
    sys.exit(0)

tmp = tempfile.mkdtemp(prefix="etw-bounds-")
subprocess.run([sys.executable, os.path.abspath(__file__), "--make", tmp], check=True)
churn, same = os.path.join(tmp, "tl_churn.etl"), os.path.join(tmp, "tl_same.etl")
badp = os.path.join(tmp, "tl_bad.etl")
# every RSS first: parsing the output below grows this process, which the
# next child would inherit as its starting peak
rc2, _, rss_same = rss(same)
# item 1: a manifest that cannot load stops the run when the first decoder
# fails, before the other threads' decoders each load it again (before:
# 211 MB at -j 1, 269 MB at -j 2, 368 MB at -j 4)
big_man = os.path.join(tmp, "templates.man")
http = os.path.join(DATA, "HTTP_Server.etl")
rc_m1, _, rss_m1 = rss("-j", "1", "-m", big_man, http)
rc_m4, _, rss_m4 = rss("-j", "4", "-m", big_man, http)
rc_s4, _, rss_s4 = rss("--stats", "-j", "4", "-m", big_man, http)
_, _, rss_churn = rss("--tl-cache", "1", churn)
_, _, rss_default = rss(churn)
rc, out, err, secs, _ = run_rss("--tl-cache", "1", churn)
rc3, out3, _, _, _ = run_rss(churn)
got = events_of(out)
want = [("E%d" % j, fname(j), 3 * j) for j in list(range(N)) + list(range(100))]
ok = rc == 0 and len(got) == len(want) and all(
    g["event"] == w[0] and g["fields"] == {w[1]: w[2]} for g, w in zip(got, want))
# the first 100 schemas come back after 60000 others: with --tl-cache 1 they
# were dropped and are parsed again, with the same fields
check(ok, "tl-cache 1: all %d events decode with their own field (rc %d, %d events)" % (len(want), rc, len(got)))
check(rc2 == 0 and rc3 == 0 and out3 == out, "tl-cache: the default budget gives the same output")
print("     RSS: one schema %d KiB, %d schemas with --tl-cache 1: %d KiB, default: %d KiB"
      % (rss_same, N, rss_churn, rss_default))
# AddressSanitizer keeps freed memory in quarantine: no RSS bound to check there
SANITIZED = b"__asan_init" in open(ETWDUMP, "rb").read()
check(SANITIZED or rss_churn < rss_same + 4 * 1024,
      "tl-cache 1: %d schemas cost at most 4 MiB over one schema (%d KiB vs %d KiB)" % (N, rss_churn, rss_same))
# --schemas: a schema parsed again after it was dropped is the same entry
rc, out, err, _, _ = run_rss("--schemas", "--tl-cache", "1", churn)
sc = json.loads(out)["schemas"] if rc == 0 else []
counts = sorted(s["events"] for s in sc)
check(len(sc) == N and counts[-100:] == [2] * 100 and counts[0] == 1,
      "--schemas with --tl-cache 1: %d schemas (want %d), the 100 used twice counted twice" % (len(sc), N))
for bad in ("0", "x", "-1", "99999999999"):
    rc, out, err, _, _ = run_rss("--tl-cache", bad, same)
    check(rc == 2 and b"--tl-cache" in err, "--tl-cache %s refused (rc %d)" % (bad, rc))

# undecodable metadata on every event: each event says why, the same way
# (the negative cache answers all but the first)
rc, out, err, _, _ = run_rss(badp)
got = events_of(out)
errs = {g.get("error") for g in got}
check(len(got) == 2000 and len(errs) == 1 and None not in errs and "TraceLogging" in next(iter(errs)),
      "undecodable TraceLogging metadata: every event has the same error (%r)" % list(errs)[:2])

# === item 1: a manifest over the memory limit, at -j 4 ========================
print("     manifest over the limit: peak %d MB at -j 1, %d MB at -j 4, %d MB for --stats -j 4"
      % (rss_m1 // 1024, rss_m4 // 1024, rss_s4 // 1024))
check(rc_m1 == 2 and rc_m4 == 2 and rc_s4 == 2, "manifest over the limit: exit 2 at -j 1 and -j 4 (%d %d %d)"
      % (rc_m1, rc_m4, rc_s4))
check(rss_m4 < rss_m1 * 1.15 and rss_s4 < rss_m1 * 1.15,
      "manifest over the limit: loaded once, not once per thread (%d, %d vs %d KiB)" % (rss_m4, rss_s4, rss_m1))

# === item 4: every record wholly before the cut survives, with its cpu ======
_, spans, cut = cut_layout()
rc, full_out, _, _, _ = run_rss("--no-progress", os.path.join(tmp, "cut_full.etl"))
rc2, cut_out, cut_err, _, _ = run_rss("--no-progress", os.path.join(tmp, "cut.etl"))
full_ev = {e["id"]: e for e in map(json.loads, full_out.decode().splitlines()) if e.get("provider_guid") == str(CUT_PROV)}
cut_ev = [e for e in map(json.loads, cut_out.decode().splitlines()) if e.get("provider_guid") == str(CUT_PROV)]
whole = [i for i in range(120) if i % 2 == 0 or spans[i][1] <= cut]
check(rc == 0 and len(full_ev) == 120 and {e["cpu"] for e in full_ev.values()} == {0, 1},
      "cut: the uncut trace has its 120 events on cpus 0 and 1")
check(sorted(e["id"] for e in cut_ev) == whole,
      "cut: the %d records wholly before the cut come out, no other (got %d)" % (len(whole), len(cut_ev)))
check(all(e == full_ev[e["id"]] for e in cut_ev),
      "cut: each is the uncut trace's event, with its true cpu: %r" %
      sorted({(e["id"], e["cpu"]) for e in cut_ev if e != full_ev.get(e["id"])})[:4])
check(b"next buffer found" not in cut_err and b"cut by the end of the file" in cut_err,
      "cut: reported as a buffer cut by the end of the file, not a buffer found inside it: %r" % cut_err[:300])

# the same on a real trace: ShutdownPerfDiagLogger.etl cut at 0x177090, inside
# its buffer at 0x170000, where a header-like pattern lies at 0x175ec8 (the
# reader believed it before: "next buffer found 24264 bytes on"). etlref.py
# (an independent reader) gives each record's place; every record wholly
# before the cut comes out, as in the uncut trace, on its own cpu.
import collections  # noqa: E402
import etlref  # noqa: E402
real = os.path.join(DATA, "ShutdownPerfDiagLogger.etl")
REAL_CUT = 0x177090
real_cut = os.path.join(tmp, "real_cut.etl")
with open(real, "rb") as f, open(real_cut, "wb") as g:
    g.write(f.read(REAL_CUT))
recs = etlref.records(real)
whole = [r for r in recs if r.offset + r.size <= REAL_CUT]
rc, full_out, _, _, _ = run_rss("--no-progress", "-j", "1", real)
rc2, cut_out, cut_err, _, _ = run_rss("--no-progress", "-j", "1", real_cut)
full_lines = full_out.decode().splitlines()
cut_lines = cut_out.decode().splitlines()
check(len(full_lines) == len(recs), "real cut: the uncut trace gives one event per record (%d, %d)"
      % (len(full_lines), len(recs)))
left = collections.Counter(full_lines)
left.subtract(collections.Counter(cut_lines))
check(len(cut_lines) == len(whole) and min(left.values()) >= 0,
      "real cut: the %d records wholly before the cut come out as in the uncut trace (got %d, %d not in it)"
      % (len(whole), len(cut_lines), -sum(v for v in left.values() if v < 0)))
cpus = collections.Counter(json.loads(x)["cpu"] for x in cut_lines)
check(cpus == collections.Counter(r.cpu for r in whole),
      "real cut: events by cpu as the records' buffers say: %r" % sorted(cpus.items())[:6])
check(b"next buffer found" not in cut_err, "real cut: no buffer found inside the cut one: %r" % cut_err[:200])

# === item 3: tiny buffers: every event, in order, on its cpu; -j 2 runs
# such input on one thread (one file: the pipeline; several: etwdump's -j 1
# path), which is what keeps it no slower than -j 1. Checked by what the
# threads would leave, not by a clock: a thread handing each buffer over
# waits on its peers thousands of times (3,671 voluntary context switches on
# two such files of 50,000 buffers before the change, 1 after).
tiny = os.path.join(tmp, "tiny.etl")
tiny_b = os.path.join(tmp, "tiny_b.etl")
shutil.copyfile(tiny, tiny_b)


def switches(*args):
    """Voluntary context switches of one etwdump run (output thrown away)."""
    p = subprocess.Popen([ETWDUMP, *args], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _, status, ru = os.wait4(p.pid, 0)
    return os.waitstatus_to_exitcode(status), ru.ru_nvcsw


for files in ([tiny], [tiny, tiny_b]):
    rc, n = switches("-j", "2", *files)
    check(rc == 0 and n < 200, "tiny buffers, %d file(s) at -j 2: one thread (%d voluntary context switches)"
          % (len(files), n))
out1 = subprocess.run([ETWDUMP, "-j", "1", tiny, tiny_b], stdout=subprocess.PIPE).stdout
out2 = subprocess.run([ETWDUMP, "-j", "2", tiny, tiny_b], stdout=subprocess.PIPE).stdout
check(out1 == out2 and out1.count(b"\n") == 2 * TINY + 2,
      "tiny buffers, 2 files: -j 2 writes what -j 1 writes (%d lines)" % out1.count(b"\n"))
want = []
for i in range(TINY):
    want.append((i & 0xFFFF, i % 2))
for args in (["-j", "1"], ["-j", "2"], ["--map"]):
    rc, out, err, _, _ = run_rss(*args, tiny)
    got = [(e["id"], e["cpu"]) for e in map(json.loads, out.decode().splitlines())
           if e.get("provider_guid") == str(CUT_PROV)]
    check(rc == 0 and got == want and not err, "tiny buffers %s: all %d events in order on their cpu, no problem (%d, %r)"
          % (" ".join(args), TINY, len(got), err[:200]))
rc, out, err, _, _ = run_rss(os.path.join(tmp, "tiny_empty.etl"))
check(rc == 0 and not err and len(out.decode().splitlines()) == 1,
      "empty tiny buffers: only the log-file header, no problem reported (rc %d, %r)" % (rc, err[:200]))

shutil.rmtree(tmp, ignore_errors=True)  # 300 MB of generated traces and manifest
if FAILED:
    print("%d failed" % len(FAILED))
    sys.exit(1)
print("all passed")
