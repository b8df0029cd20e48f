#!/usr/bin/env python3
"""etwdump --profile and --stacks end to end, on tests/data/net.4.5.2.x64.etl.

usage: test_profile_formats.py ETWDUMP DATA_DIR

The formats are checked against their documented structure, not against
our own earlier output:
  folded      Brendan Gregg's collapsed stacks (stackcollapse / flamegraph.pl:
              "frame;frame;... count", root first)
  speedscope  https://www.speedscope.app/file-format-schema.json
              (jlfwong/speedscope src/lib/file-format-spec.ts)
  firefox     the Firefox Profiler's processed format, version 55
              (firefox-devtools/profiler src/types/profile.js at that version)
Expected totals are counted from the plain JSON output with PerfView's idle
filter written here (docs/stacks.md rule 10: a PerfInfo/Sample of ThreadId 0
is idle unless Reserved & 3, NonProcess); the sample trace's total is 6,320
(PerfView's own count). Prints "N passed, N failed".
"""
import json
import os
import re
import subprocess
import sys
import tempfile

ETWDUMP, DATA = sys.argv[1], sys.argv[2]
NET = os.path.join(DATA, "net.4.5.2.x64.etl")
passed = failed = 0


def check(cond, what):
    global passed, failed
    if cond:
        passed += 1
    else:
        failed += 1
        print("FAIL: " + what, file=sys.stderr)


def run(*args):
    p = subprocess.run([ETWDUMP, *args], capture_output=True, timeout=600)
    return p.returncode, p.stdout, p.stderr.decode("utf-8", "replace")


def events(*args):
    rc, out, err = run(*args)
    return rc, [json.loads(line) for line in out.decode("utf-8").splitlines()], err


FOLDED_LINE = re.compile(r"^(.*) (\d+(?:\.\d+)?)$")


def folded(*args):
    """[(frames root first, count)] of etwdump --profile folded ARGS."""
    rc, out, err = run("--profile", "folded", *args)
    text = out.decode("utf-8")  # strict: the output is UTF-8
    rows = []
    for line in text.splitlines():
        m = FOLDED_LINE.match(line)
        check(m is not None, "folded line is 'stack count': %r" % line[:200])
        if m:
            rows.append((m.group(1).split(";"), float(m.group(2))))
    return rc, rows, err


# --- the expected samples, from the plain decode ------------------------------
rc, samples, _ = events("--event", "PerfInfo/Sample", NET)
check(rc == 0 and len(samples) > 6320, "PerfInfo/Sample events decoded")
kept = [e for e in samples if not (e["fields"]["ThreadId"] == 0 and (e["fields"]["Reserved"] & 3) == 0)]
check(len(kept) == 6320, "the idle filter keeps PerfView's 6,320 samples (%d)" % len(kept))
procs = {}
rc, evs, _ = events("--event", "Process/*", NET)
for e in evs:
    if e["fields"].get("ImageFileName"):
        procs[e["pid"]] = e["fields"]["ImageFileName"]
test_pids = {p for p, n in procs.items() if n.lower() == "test.x64.exe"}
check(len(test_pids) == 1, "Test.x64.exe is one process: %r" % test_pids)
test_pid = next(iter(test_pids)) if test_pids else -1

# --- folded ------------------------------------------------------------------
rc, rows, err = folded(NET)
check(rc == 0, "--profile folded exits 0: %s" % err[:300])
total = sum(c for _, c in rows)
check(total == len(kept), "folded counts sum to the samples (%s vs %d)" % (total, len(kept)))
check(all(c == int(c) and c > 0 for _, c in rows), "CPU sample counts are positive integers")
check(all(re.fullmatch(r".* \(-?\d+\)", fr[0]) and re.fullmatch(r"thread \(-?\d+\)", fr[1]) for fr, _ in rows),
      "each line starts with 'process (pid);thread (tid)'")
keys = [(tuple(fr)) for fr, _ in rows]
check(len(keys) == len(set(keys)), "one line per (process, thread, stack)")
hot = [(fr, c) for fr, c in rows if fr[0] == "Test.x64.exe (%d)" % test_pid and
       "System.DateTime.GetDatePart" in fr[-1]]
check(hot, "Test.x64.exe has a hot path ending in System.DateTime.GetDatePart")
if hot:
    fr = max(hot, key=lambda h: h[1])[0]
    check(any("Main" in f for f in fr), "the hot path goes through a Main method: %r" % fr[-6:])
per_pid = {}
for e in kept:
    per_pid[e["pid"]] = per_pid.get(e["pid"], 0) + 1
check(sum(c for fr, c in rows if fr[0] == "Test.x64.exe (%d)" % test_pid) == per_pid.get(test_pid, 0),
      "Test.x64.exe's lines count its samples")

# the selection decides which samples count
rc, rows_pid, err = folded("--pid", str(test_pid), NET)
check(rc == 0 and rows_pid and all(fr[0] == "Test.x64.exe (%d)" % test_pid for fr, _ in rows_pid),
      "--pid: only that process")
check(sum(c for _, c in rows_pid) == per_pid.get(test_pid, 0), "--pid: all of its samples")
t_mid = kept[len(kept) // 2]["time"]
rc, rows_since, err = folded("--since", t_mid, NET)
check(sum(c for _, c in rows_since) == sum(1 for e in kept if e["time"] >= t_mid),
      "--since: the samples from then on (%s)" % sum(c for _, c in rows_since))

# --event E: any stacked event, weight 1 or --weight FIELD
rc, loads, _ = events("--event", "Image/Load", NET)
rc, rows_ev, err = folded("--event", "Image/Load", NET)
check(rc == 0 and sum(c for _, c in rows_ev) == len(loads), "--event Image/Load: one sample per event (%d vs %d)" %
      (sum(c for _, c in rows_ev), len(loads)))
rc, rows_w, err = folded("--event", "Image/Load", "--weight", "ImageSize", NET)
def num(v):
    return int(v, 16) if isinstance(v, str) else v


check(rc == 0 and sum(c for _, c in rows_w) == sum(num(e["fields"]["ImageSize"]) for e in loads),
      "--weight ImageSize: the sizes summed")
GC = os.path.join(DATA, "gcevents.etl")
rc, ticks, _ = events("--event", "GC/AllocationTick", GC)
rc, rows_gc, err = folded("--event", "GC/AllocationTick", "--weight", "AllocationAmount", GC)
check(rc == 0 and ticks and sum(c for _, c in rows_gc) == sum(num(e["fields"]["AllocationAmount"]) for e in ticks),
      "--event GC/AllocationTick --weight AllocationAmount: the bytes the events say (%s)" %
      sum(c for _, c in rows_gc))
rc, _, err = run("--profile", "folded", "--weight", "ImageSize", NET)
check(rc == 2 and "--event" in err, "--weight without --event is a usage error")
rc, _, err = run("--profile", "pprof", NET)
check(rc == 2 and "folded, speedscope, firefox" in err, "an unknown format is named with the known ones")

# --- speedscope ----------------------------------------------------------------
with tempfile.TemporaryDirectory() as tmp:
    ss_path = os.path.join(tmp, "p.speedscope.json")
    rc, _, err = run("--profile", "speedscope", "-o", ss_path, NET)
    check(rc == 0, "--profile speedscope -o FILE exits 0: %s" % err[:300])
    with open(ss_path, encoding="utf-8") as f:
        ss = json.load(f)
    fx_path = os.path.join(tmp, "p.firefox.json")
    rc, _, err = run("--profile", "firefox", "-o", fx_path, NET)
    check(rc == 0, "--profile firefox -o FILE exits 0: %s" % err[:300])
    with open(fx_path, encoding="utf-8") as f:
        fx = json.load(f)

check(ss.get("$schema") == "https://www.speedscope.app/file-format-schema.json", "speedscope $schema")
frames = ss.get("shared", {}).get("frames")
check(isinstance(frames, list) and frames and all(isinstance(fr.get("name"), str) for fr in frames),
      "shared.frames: objects with a name")
check(all(set(fr) <= {"name", "file", "line", "col"} for fr in frames), "frames have only the schema's keys")
profiles = ss.get("profiles", [])
check(len(profiles) == len({(fr[0], fr[1]) for fr, _ in rows}), "one profile per thread")
check(isinstance(ss.get("exporter"), str) and ss["exporter"].startswith("etwdecode@"), "exporter name@version")
check(0 <= ss.get("activeProfileIndex", -1) < len(profiles), "activeProfileIndex in range")
ss_total = 0
for p in profiles:
    check(p.get("type") == "sampled", "profile type sampled")
    check(p.get("unit") in ("none", "nanoseconds", "microseconds", "milliseconds", "seconds", "bytes"),
          "unit from the schema's list")
    check(isinstance(p.get("name"), str) and p["name"], "profile name")
    s, w = p.get("samples", []), p.get("weights", [])
    check(len(s) == len(w), "weights length = samples length")
    check(all(isinstance(i, int) and 0 <= i < len(frames) for st in s for i in st), "frame indices in range")
    check(p.get("startValue") == 0 and abs(p.get("endValue") - sum(w)) < 1e-6 and p["endValue"] >= p["startValue"],
          "startValue 0, endValue the total weight")
    ss_total += sum(w)
check(ss_total == len(kept), "speedscope weights sum to the folded total (%s)" % ss_total)
# root first: the stacks' last frames are the folded lines' last frames
ss_leaves = sorted(frames[st[-1]]["name"] for p in profiles for st in p["samples"] if st)
fold_leaves = sorted(fr[-1] for fr, _ in rows if len(fr) > 2)
check(len(ss_leaves) == len(fold_leaves), "as many stacks as folded lines with frames")

# --- firefox ---------------------------------------------------------------------
meta = fx.get("meta", {})
check(meta.get("preprocessedProfileVersion") == 55 and isinstance(meta.get("version"), int),
      "processed profile version 55 with a Gecko version")
for k in ("interval", "startTime", "processType", "product", "stackwalk", "categories", "markerSchema"):
    check(k in meta, "meta.%s (required by ProfileMeta)" % k)
cats = meta.get("categories", [])
check(any(c.get("color") == "grey" for c in cats), "a grey (default) category")
check(all(c.get("subcategories") and isinstance(c.get("name"), str) for c in cats), "categories named, subcategories")
check(isinstance(fx.get("libs"), list), "libs")
threads = fx.get("threads", [])
check(len(threads) == len(profiles), "one thread per (pid, tid)")
TABLES = {
    "stackTable": ("frame", "prefix"),
    "frameTable": ("address", "inlineDepth", "category", "subcategory", "func", "nativeSymbol", "innerWindowID",
                   "line", "column"),
    "funcTable": ("name", "isJS", "relevantForJS", "resource", "fileName", "lineNumber", "columnNumber"),
    "resourceTable": ("lib", "name", "host", "type"),
    "nativeSymbols": ("libIndex", "address", "name", "functionSize"),
    "markers": ("data", "name", "startTime", "endTime", "phase", "category"),
    "samples": ("stack", "time", "weight"),
}
fx_total = 0
main_pids = set()
for th in threads:
    for k in ("processType", "processStartupTime", "processShutdownTime", "registerTime", "unregisterTime",
              "pausedRanges", "name", "isMainThread", "pid", "tid", "stringArray"):
        check(k in th, "thread.%s" % k)
    check(isinstance(th.get("pid"), str), "pid is a string (version 47 on)")
    if th.get("isMainThread"):
        check(th["pid"] not in main_pids, "one main thread per process")
        main_pids.add(th["pid"])
    strings = th.get("stringArray", [])
    for t, cols in TABLES.items():
        tab = th.get(t, {})
        n = tab.get("length")
        check(isinstance(n, int), "%s.length" % t)
        for c in cols:
            check(isinstance(tab.get(c), list) and len(tab[c]) == n, "%s.%s has length entries" % (t, c))
    st, fr, fu, rs, sm = (th.get(k, {}) for k in ("stackTable", "frameTable", "funcTable", "resourceTable", "samples"))
    check(all(p is None or (isinstance(p, int) and 0 <= p < i) for i, p in enumerate(st.get("prefix", []))),
          "a stack's prefix is an earlier stack")
    check(all(0 <= f < fr.get("length", 0) for f in st.get("frame", [])), "stack frames in range")
    check(all(0 <= f < fu.get("length", 0) for f in fr.get("func", [])), "frame funcs in range")
    check(all(0 <= c < len(cats) for c in fr.get("category", [])), "frame categories in range")
    check(all(0 <= s < len(strings) for s in fu.get("name", [])), "func names index the strings")
    check(all(r == -1 or 0 <= r < rs.get("length", 0) for r in fu.get("resource", [])), "func resources in range")
    check(all(0 <= s < len(strings) for s in rs.get("name", [])), "resource names index the strings")
    check(all(s is None or 0 <= s < st.get("length", 0) for s in sm.get("stack", [])), "sample stacks in range")
    check(sm.get("weightType") == "samples", "weightType samples")
    times = sm.get("time", [])
    check(times == sorted(times), "sample times in order")
    fx_total += sum(sm.get("weight", []))
check(fx_total == len(kept), "Firefox sample weights sum to the folded total (%s)" % fx_total)
# the hot path's leaf, named in Firefox too
check(any("System.DateTime.GetDatePart" in s for th in threads for s in th.get("stringArray", [])),
      "GetDatePart is a Firefox function name")

# --- the three formats tell the same profile ---------------------------------------
def safe(name):
    """folded's replacements (the format has no escapes)."""
    return "".join(":" if c == ";" else "?" if ord(c) < 0x20 or c == "\x7f" else c for c in name)


def fold_key(proc, pid, tid, names):
    return ";".join(["%s (%s)" % (safe(proc), pid), "thread (%s)" % tid] + [safe(n) for n in names])


want = {}
for fr, c in rows:
    want[";".join(fr)] = want.get(";".join(fr), 0) + c
got_ss = {}
for p in profiles:
    m = re.fullmatch(r"(.*) \((-?\d+)\) thread \((-?\d+)\)", p["name"])
    check(m is not None, "speedscope profile name 'PROCESS (pid) thread (tid)': %r" % p["name"])
    if not m:
        continue
    for st, w in zip(p["samples"], p["weights"]):
        k = fold_key(m.group(1), m.group(2), m.group(3), [frames[i]["name"] for i in st])
        got_ss[k] = got_ss.get(k, 0) + w
check(got_ss == want, "speedscope's stacks and weights are folded's (%d vs %d stacks)" % (len(got_ss), len(want)))
got_fx = {}
for th in threads:
    strings, st, fr, fu, sm = (th["stringArray"], th["stackTable"], th["frameTable"], th["funcTable"],
                               th["samples"])
    for s_, w in zip(sm["stack"], sm["weight"]):
        names = []
        while s_ is not None:
            names.append(strings[fu["name"][fr["func"][st["frame"][s_]]]])
            s_ = st["prefix"][s_]
        k = fold_key(th["processName"], th["pid"], th["tid"], names[::-1])
        got_fx[k] = got_fx.get(k, 0) + w
check(got_fx == want, "Firefox's stacks and weights are folded's (%d vs %d stacks)" % (len(got_fx), len(want)))

# --- --stacks ---------------------------------------------------------------------
rc, evs, err = events("--stacks", NET)
check(rc == 0, "--stacks exits 0: %s" % err[:300])
rc2, plain, _ = events(NET)
check(len(evs) == len(plain), "--stacks: the same events as without")
STACK_ITEM_KEYS = ("stack", "stack_match_id", "more_stacks")  # --stacks replaces the STACK_TRACE items
check(all({k: v for k, v in a.items() if k not in STACK_ITEM_KEYS} ==
          {k: v for k, v in b.items() if k not in STACK_ITEM_KEYS} for a, b in zip(evs, plain)),
      "--stacks changes nothing but the stack keys")
stacked = [e for e in evs if "stack" in e]
check(all(isinstance(e["stack"], list) and e["stack"] and all(isinstance(f, str) for f in e["stack"])
          for e in stacked), "stack: a non-empty list of frame strings")
# a sample's first frame is its InstructionPointer: module+RVA against the
# images the trace loaded (kernel addresses: pid 0's), or a .NET method
# whose code holds it, or the bare address
images = {}
for e in plain:
    if e["event"] in ("Image/DCStart", "Image/Load") and "ImageBase" in e["fields"]:
        f = e["fields"]
        name = re.split(r"[\\/]", f.get("FileName", ""))[-1].lower()
        images.setdefault((e["pid"], name), set()).add(num(f["ImageBase"]))
methods = []
for e in plain:
    f = e["fields"]
    if "MethodStartAddress" in f and "MethodName" in f:
        start = num(f["MethodStartAddress"])
        methods.append((start, start + num(f["MethodSize"]), f["MethodName"]))
kernel_min = 0xFFFF000000000000


def ip_matches(e):
    ip = int(e["fields"]["InstructionPointer"], 16)
    first = e["stack"][0]
    if first == "0x%x" % ip:
        return True
    m = re.fullmatch(r"(.+)\+0x([0-9a-f]+)", first)
    if m and "!" not in m.group(1):
        pid = 0 if ip >= kernel_min else e["pid"]
        return any(b + int(m.group(2), 16) == ip for b in images.get((pid, m.group(1).lower()), ()))
    return any(lo <= ip < hi and name in first for lo, hi, name in methods)


ss_samples = [e for e in stacked if e["event"] == "PerfInfo/Sample"]
check(len(ss_samples) > 6000, "most samples have a stack (%d)" % len(ss_samples))
good = sum(1 for e in ss_samples if ip_matches(e))
check(good >= 0.99 * len(ss_samples), "first frame = InstructionPointer: %d of %d" % (good, len(ss_samples)))
rc, out, err = run("--stacks", "--format", "text", "-n", "2000", NET)
check(rc == 0 and b" stack=[" in out, "text shows stack=[...]")
rc, _, err = run("--stacks", "--profile", "folded", NET)
check(rc == 2, "--stacks with --profile is a usage error")

# --- --stats on a trace with stacks ------------------------------------------------
rc, out, err = run("--stats", "--format", "json", NET)
cpu = json.loads(out.decode("utf-8")).get("cpu_samples", {}) if rc == 0 else {}
check(cpu.get("samples") == len(kept) and 0 < cpu.get("with_stack", 0) <= len(kept),
      "--stats: cpu_samples counts the samples: %r" % {k: cpu.get(k) for k in ("samples", "with_stack")})
for key, name in (("modules", "module"), ("functions", "function")):
    lst = cpu.get(key, [])
    check(0 < len(lst) <= 15 and all(isinstance(m.get(name), str) for m in lst), "--stats: %s listed" % key)
    check([m["samples"] for m in lst] == sorted((m["samples"] for m in lst), reverse=True), "%s by count" % key)
    check(sum(m["samples"] for m in lst) <= cpu.get("with_stack", 0), "%s: at most the samples" % key)
check(any("System.DateTime.GetDatePart" in f["function"] for f in cpu.get("functions", [])),
      "--stats: GetDatePart among the top functions")
rc, out, err = run("--stats", NET)
check(rc == 0 and b"\nCPU samples by module" in out and b"\nCPU samples by function" in out, "--stats text: the tables")

# The CPU tables come from the scan's own pass at -j 1 (the profile fed as
# the events are counted), from a second pass at -j N (whose decoder learns
# the MetaData records the run kept instead of pre-scanning): the same bytes
# either way, with a selection too, and the samples of a --pid selection are
# that process's (kept: the non-idle PerfInfo/Sample events)
for extra in ([], ["--format", "json"], ["--pid", "3676", "--format", "json"], ["--provider", "Windows Kernel"]):
    ref = run("-j", "1", "--stats", *extra, NET)
    check(ref[0] == 0 and (b"CPU samples" in ref[1] or b'"cpu_samples"' in ref[1]), "--stats %s: -j 1 has the CPU tables" % extra)
    for j in ("2", "3"):
        got = run("-j", j, "--stats", *extra, NET)
        check(got[:2] == ref[:2], "--stats %s: -j %s is -j 1's" % (extra, j))
rc, out, err = run("-j", "1", "--stats", "--pid", "3676", "--format", "json", NET)
cpu = json.loads(out.decode("utf-8")).get("cpu_samples", {}) if rc == 0 else {}
want = sum(1 for e in kept if e["pid"] == 3676)
check(cpu.get("samples") == want > 0, "--stats --pid 3676: %r samples, the process has %d" % (cpu.get("samples"), want))
# several files (one pass over the merge): the tables as one file's plus
# nothing from a trace without stacks
lx = os.path.join(DATA, "lxcore_kernel.etl")
rc, out, err = run("-j", "1", "--stats", "--format", "json", NET, lx)
both = json.loads(out.decode("utf-8")).get("cpu_samples") if rc in (0, 1) else None
rc1, out1, _ = run("-j", "1", "--stats", "--format", "json", NET)
check(both is not None and both == json.loads(out1.decode("utf-8")).get("cpu_samples"),
      "--stats over two files: the CPU tables of the one with stacks")
rc, out, err = run("-j", "1", "--stats", "--format", "json", lx)
check(rc in (0, 1) and "cpu_samples" not in json.loads(out.decode("utf-8")), "--stats: no CPU tables without stacks")

print("%d passed, %d failed" % (passed, failed))
sys.exit(1 if failed else 0)
