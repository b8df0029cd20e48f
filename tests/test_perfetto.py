#!/usr/bin/env python3
"""End-to-end tests of etwdump --format perfetto (the Trace Event Format
timeline, docs/timeline.md).

usage: test_perfetto.py ETWDUMP DATA_DIR

Expected values come from outside the timeline writer: the structure from
Google's Trace Event Format document (an object with "traceEvents"; every
event a "ph" string, "ts" in microseconds, integer "pid"/"tid", a "name";
"X" events a "dur"; "M" events process_name/thread_name with args.name;
instant scopes "t", "p", "g"); the events themselves from etwdump's JSON
output (another writer) and from tests/etlref.py (an independent reader of
record headers: record counts, the trace's PerfFreq); GC pauses and GCs
paired by hand here from the JSON (GCSuspendEEBegin id 9 to GCRestartEEEnd
id 3 of the same process; GCStart id 1 to GCEnd id 2 with the same Count);
disk spans from DiskIO's TransferSize and HighResResponseTime / PerfFreq.
Prints "N passed, N failed".
"""
import collections
import json
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import etlref  # noqa: E402

ETWDUMP, DATA = sys.argv[1], sys.argv[2]
CLR = "e13c0d23-ccbc-4e12-931b-d9cc2eee27e4"
DISKIO = "3d6fa8d4-fe05-11d0-9dda-00c04fd7ba7c"
passed = failed = 0


def check(cond, what):
    global passed, failed
    if cond:
        passed += 1
    else:
        failed += 1
        print("FAIL:", what)


def run(*args):
    p = subprocess.run([ETWDUMP, "--no-progress", *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    return p.returncode, p.stdout


def no_dup(pairs):
    keys = [k for k, _ in pairs]
    if len(keys) != len(set(keys)):
        raise ValueError("repeated key %r" % keys)
    return dict(pairs)


def bad_constant(c):
    raise ValueError("not JSON: " + c)


def strict(text):
    return json.loads(text.decode("utf-8"), object_pairs_hook=no_dup, parse_constant=bad_constant)


def ticks(t):
    """RFC 3339 UTC with 7 fractional digits -> 100 ns ticks (of the day's epoch: differences only)."""
    date, clock = t.rstrip("Z").split("T")
    y, mo, d = (int(x) for x in date.split("-"))
    hh, mm, ss = clock.split(":")
    sec, frac = ss.split(".")
    import datetime
    days = datetime.date(y, mo, d).toordinal()
    return ((days * 24 + int(hh)) * 60 + int(mm)) * 60 * 10**7 + int(sec) * 10**7 + int(frac.ljust(7, "0"))


def us(tk):
    return tk / 10.0


def structure(doc, label):
    check(isinstance(doc, dict) and isinstance(doc.get("traceEvents"), list), label + ": traceEvents list")
    check(doc.get("displayTimeUnit") in ("ms", "ns"), label + ": displayTimeUnit")
    check(isinstance(doc.get("otherData"), dict), label + ": otherData object")
    bad = []
    for e in doc["traceEvents"]:
        ok = (isinstance(e.get("ph"), str) and isinstance(e.get("name"), str)
              and isinstance(e.get("pid"), int) and isinstance(e.get("tid"), int)
              and isinstance(e.get("ts"), (int, float)) and not isinstance(e.get("ts"), bool))
        if ok and e["ph"] == "X":
            ok = isinstance(e.get("dur"), (int, float)) and e["dur"] >= 0
        if ok and e["ph"] == "M":
            ok = e["name"] in ("process_name", "thread_name", "process_sort_index", "thread_sort_index") and \
                isinstance(e.get("args", {}).get("name", 0 if "sort" in e["name"] else None),
                           int if "sort" in e["name"] else str)
        if ok and e["ph"] in ("i", "I"):
            ok = e.get("s", "t") in ("t", "p", "g")
        if ok and "args" in e:
            ok = isinstance(e["args"], dict)
        if ok and e["ph"] not in ("X", "i", "I", "M", "B", "E", "C"):
            ok = False
        if not ok:
            bad.append(e)
    check(not bad, label + ": every event well-formed per the Trace Event Format (%r)" % bad[:2])


def appearances(doc):
    """How many times each Provider/Event appears: instants by name, spans by their end event."""
    c = collections.Counter()
    for e in doc["traceEvents"]:
        if e["ph"] == "i":
            c[e["name"]] += 1
        elif e["ph"] == "X" and "end_event" in e.get("args", {}):
            c[e["args"]["end_event"]] += 1
    return c


def gc_pairs(events):
    """(pid, start, end) of GC pauses and (pid, count, start, end) of GCs, paired from the JSON."""
    pauses, gcs, open_p, open_g = [], [], {}, collections.defaultdict(list)
    for e in events:
        if e.get("provider_guid") != CLR or e.get("task") != 1:
            continue
        t, pid = ticks(e["time"]), e["pid"]
        if e["id"] == 9:
            open_p[pid] = t
        elif e["id"] == 3 and pid in open_p:
            pauses.append((pid, open_p.pop(pid), t))
        elif e["id"] == 1:
            open_g[pid].append((e["fields"]["Count"], t, e["fields"]["Depth"]))
        elif e["id"] == 2:
            st = open_g[pid]
            for i in range(len(st) - 1, -1, -1):
                if st[i][0] == e["fields"]["Count"]:
                    cnt, t0, depth = st.pop(i)
                    gcs.append((pid, cnt, depth, t0, t))
                    break
    return pauses, gcs


def one_trace(name, extra=()):
    path = os.path.join(DATA, name)
    rc, out = run("--format", "perfetto", *extra, path)
    check(rc in (0, 1), name + ": exit status %d" % rc)
    try:
        doc = strict(out)
    except ValueError as ex:
        check(False, name + ": valid JSON (%s)" % ex)
        return None, None
    check(True, name + ": valid JSON, no key repeated")
    structure(doc, name)
    _, js = run(*extra, path)
    events = [json.loads(line) for line in js.splitlines()]
    # every selected event exactly once, grouped by kind
    want = collections.Counter(e["provider"] + "/" + e["event"] for e in events)
    got = appearances(doc)
    check(got == want, name + ": every event once as an instant or a span end (%d kinds differ)"
          % len(set(got.items()) ^ set(want.items())))
    check(doc["otherData"]["events"] == len(events), name + ": otherData.events")
    # process_name for every pid with events
    pids = {e["pid"] for e in doc["traceEvents"] if e["ph"] != "M"}
    named = {e["pid"] for e in doc["traceEvents"] if e["ph"] == "M" and e["name"] == "process_name"}
    check(pids <= named, name + ": process_name for every process (%r missing)" % sorted(pids - named)[:5])
    # names where the JSON knows them: the last process_name of a pid is a "process" of its events
    last = {}
    for e in doc["traceEvents"]:
        if e["ph"] == "M" and e["name"] == "process_name":
            last[e["pid"]] = e["args"]["name"]
    known = collections.defaultdict(set)
    for e in events:
        if "process" in e:
            known[e["pid"]].add(e["process"])
    check(all(last.get(p) in names for p, names in known.items()), name + ": process names as the JSON's")
    # ts relative to the trace start: the log-file header's StartTime (a FILETIME) at 0
    start_ft, freq, _, _ = etlref.logfile(path)
    origin = start_ft + ticks("1601-01-01T00:00:00.0Z")
    check(ticks(doc["otherData"]["trace_start"]) == origin, name + ": trace_start")
    inst = [e for e in doc["traceEvents"] if e["ph"] == "i"]
    want_ts = sorted(round(us(ticks(e["time"]) - origin), 1) for e in events
                     if not (e.get("provider_guid") == DISKIO and e["opcode"] in (10, 11, 14, 55, 56, 57)))
    got_ts = sorted([round(e["ts"], 1) for e in inst] +
                    [round(e["ts"] + e["dur"], 1) for e in doc["traceEvents"]
                     if e["ph"] == "X" and "end_event" in e["args"] and e["cat"] != "disk"])
    check(want_ts == got_ts, name + ": instants and span ends at their events' times")
    # GC pauses and GCs
    pauses, gcs = gc_pairs(events)
    got_p = sorted((e["pid"], round(e["ts"], 1), round(e["ts"] + e["dur"], 1))
                   for e in doc["traceEvents"] if e.get("cat") == "gc-pause")
    want_p = sorted((p, round(us(a - origin), 1), round(us(b - origin), 1)) for p, a, b in pauses)
    check(got_p == want_p and (len(want_p) > 0) == any(e.get("id") == 9 for e in events),
          name + ": GC pauses = SuspendEEBegin..RestartEEEnd pairs (%d, %d)" % (len(got_p), len(want_p)))
    got_g = sorted((e["pid"], e["args"]["count"], e["args"]["generation"], round(e["ts"], 1),
                    round(e["ts"] + e["dur"], 1)) for e in doc["traceEvents"] if e.get("cat") == "gc")
    want_g = sorted((p, c, d, round(us(a - origin), 1), round(us(b - origin), 1)) for p, c, d, a, b in gcs)
    check(got_g == want_g, name + ": GCs = GCStart..GCEnd of the same Count (%d, %d)" % (len(got_g), len(want_g)))
    # disk I/O: bytes, and the span = completion - HighResResponseTime / PerfFreq .. completion
    disk = [e for e in events if e.get("provider_guid") == DISKIO and e["opcode"] in (10, 11)]
    spans = [e for e in doc["traceEvents"] if e.get("cat") == "disk"]
    check(sum(e["args"].get("bytes", 0) for e in spans) == sum(e["fields"]["TransferSize"] for e in disk),
          name + ": disk spans' bytes = sum of DiskIO TransferSize")
    want_d = sorted((round(us(ticks(e["time"]) - origin), 1),
                     round(e["fields"]["HighResResponseTime"] * 1e6 / freq, 1)) for e in disk)
    got_d = sorted((round(e["ts"] + e["dur"], 1), round(e["dur"], 1)) for e in spans if "bytes" in e["args"])
    close = len(want_d) == len(got_d) and all(abs(a[0] - b[0]) <= 0.11 and abs(a[1] - b[1]) <= 0.11
                                              for a, b in zip(want_d, got_d))
    check(close, name + ": disk spans end at completion and last HighResResponseTime/PerfFreq")
    # no two slices of one track cross (they nest or are apart): Perfetto's FAQ says
    # its importer supports only perfectly nesting X events
    by_track = collections.defaultdict(list)
    for e in doc["traceEvents"]:
        if e["ph"] == "X":
            by_track[(e["pid"], e["tid"])].append((round(e["ts"] * 10), round((e["ts"] + e["dur"]) * 10)))
    crossing = 0
    for key, sl in by_track.items():
        sl.sort(key=lambda s: (s[0], -s[1]))
        stack = []
        for a, b in sl:
            while stack and stack[-1] <= a:
                stack.pop()
            if stack and b > stack[-1]:
                crossing += 1
            stack.append(b)
    check(crossing == 0, name + ": no track holds crossing slices (%d)" % crossing)
    return doc, events


doc, events = one_trace("net.4.5.2.x64.etl")
if doc:
    kinds = collections.Counter(e.get("cat") for e in doc["traceEvents"])
    check(kinds["gc-pause"] == 265 and kinds["disk"] > 0 and kinds["sample"] == 79528 and kinds["process"] > 0
          and kinds["thread"] > 0, "net: pauses, disk, samples, processes, threads (%r)" % kinds)
    # every process alive at the end of the rundown (DCStart, DCStop): a span from 0
    dc = [e for e in doc["traceEvents"] if e.get("cat") == "process"
          and e["args"].get("end_event") == "Windows Kernel/Process/DCStop"]
    check(dc and all(e["ts"] == 0 for e in dc), "net: rundown processes start at the trace start")
    # threads: the pseudo tracks' names
    tn = {e["args"]["name"] for e in doc["traceEvents"] if e["ph"] == "M" and e["name"] == "thread_name"}
    check({"CLR GCs", "CLR GC pauses", "Process", "Disk I/O 0"} <= tn, "net: track names (%r)" % sorted(tn)[:8])
    # a selection: one process's tracks only, its events all there
    pid = 3676
    sel, sev = one_trace("net.4.5.2.x64.etl", ("--pid", str(pid)))
    if sel:
        check({e["pid"] for e in sel["traceEvents"]} == {pid}, "--pid: only that process's tracks")
    # --until 5: the rundown's DCStop/DCEnd are left out, so processes and threads stay open:
    # each becomes a span to the last selected event (args.end "trace end"), from the trace
    # start when seen in the rundown (DCStart), from its Start otherwise
    cut, cev = one_trace("net.4.5.2.x64.etl", ("--until", "5"))
    if cut:
        origin = ticks(cut["otherData"]["trace_start"])
        last = max(ticks(e["time"]) for e in cev)
        want = collections.Counter()
        for kind, guid, key in (("process", "3d6fa8d0-fe05-11d0-9dda-00c04fd7ba7c", "ProcessId"),
                                ("thread", "3d6fa8d1-fe05-11d0-9dda-00c04fd7ba7c", "TThreadId")):
            open_ = {}
            for e in cev:
                if e["provider_guid"] != guid or e["opcode"] not in (1, 2, 3, 4):
                    continue
                k = e["fields"].get(key, e["tid"] if kind == "thread" else e["pid"])
                if e["opcode"] in (1, 3):
                    open_.setdefault(k, origin if e["opcode"] == 3 else ticks(e["time"]))
                else:
                    open_.pop(k, None)
            for k, t0 in open_.items():
                want[(kind, round(us(t0 - origin), 1), round(us(last - origin), 1))] += 1
        got = collections.Counter((e["cat"], round(e["ts"], 1), round(e["ts"] + e["dur"], 1))
                                  for e in cut["traceEvents"]
                                  if e["ph"] == "X" and e["args"].get("end") == "trace end")
        check(got == want and sum(want.values()) > 600,
              "--until 5: open processes and threads end at the last event (%d, %d)"
              % (sum(got.values()), sum(want.values())))
doc, events = one_trace("gcevents.etl")
if doc:
    check(sum(1 for e in doc["traceEvents"] if e.get("cat") == "gc-pause") == 2, "gcevents: 2 GC pauses")
    check(sum(1 for e in doc["traceEvents"] if e.get("cat") == "gc") == 2, "gcevents: 2 GCs")
    recs = etlref.merged(etlref.records(os.path.join(DATA, "gcevents.etl")))
    check(doc["otherData"]["events"] == len(recs), "gcevents: one timeline entry per record (%d, %d)"
          % (doc["otherData"]["events"], len(recs)))

# -o FILE is the same bytes as standard output
with tempfile.TemporaryDirectory() as d:
    f = os.path.join(d, "t.json")
    path = os.path.join(DATA, "gcevents.etl")
    rc, out = run("--format", "perfetto", "-o", f, path)
    check(open(f, "rb").read() == run("--format", "perfetto", path)[1], "-o FILE = standard output")
    # -n cuts the events, the object stays whole
    rc, out = run("--format", "perfetto", "-n", "5", path)
    d5 = strict(out)
    check(d5["otherData"]["events"] == 5, "-n 5: five events, valid JSON")
    # --stacks: CPU samples carry their frames as args.stack, as etwdump --stacks names them
    net = os.path.join(DATA, "net.4.5.2.x64.etl")
    rc, out = run("--format", "perfetto", "--stacks", "--event", "PerfInfo/Sample", net)
    st = strict(out)
    _, js = run("--stacks", "--event", "PerfInfo/Sample", net)
    want = [json.loads(line).get("stack") for line in js.splitlines()]
    got = [e["args"].get("stack") for e in st["traceEvents"] if e["ph"] == "i"]
    check(got == want and any(want), "--stacks: samples' args.stack = the JSON's stack")

print("%d passed, %d failed" % (passed, failed))
sys.exit(1 if failed else 0)
