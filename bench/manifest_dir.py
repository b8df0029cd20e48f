#!/usr/bin/env python3
"""etwdump -m DIR on a folder of 841 manifests: CPU time before the first
event, peak RSS and lines on standard error, against the same run without
-m (and, with --before ETWDUMP, against another build, e.g. one from before
lazy loading).

The folder is generated in /tmp (removed at the end) unless --dir gives one
(e.g. dissect.etl's 841 Windows manifests, dissect/etl/manifests/xml of
github.com/fox-it/dissect.etl, not shipped here): 41 variants of
tests/data/ClrEtwAll.man (723 KB, 5 providers each) and 800 variants of
tests/data/HTTP_Server.man (62 KB), each with its own provider GUIDs and
names, plus the two real files: 841 files, about 80 MB. The trace is
HTTP_Server.etl and net.4.5.2.x64.etl read together (etwdump merges them):
its events use two of the manifests (HttpService, DotNETRuntime).

"Before the first event" is a run with -n 1 (-j 1: the setup, the manifests,
the pre-scan of the trace, one event); the full run decodes everything.
CPU is user+sys of the child (os.wait4), RSS its ru_maxrss; best of RUNS.

usage: bench/manifest_dir.py [--dir DIR] [--trace ETL] [--before ETWDUMP] [ETWDUMP] [RUNS]
  defaults: generated folder, build/etwdump, 5
"""
import os
import re
import shutil
import subprocess
import sys
import tempfile

here = os.path.dirname(os.path.abspath(__file__))
data = os.path.join(here, "..", "tests", "data")
argv = sys.argv[1:]


def opt(name):
    if name in argv:
        i = argv.index(name)
        v = argv[i + 1]
        del argv[i:i + 2]
        return v
    return None


folder = opt("--dir")
before = opt("--before")
trace = opt("--trace")
etwdump = argv[0] if len(argv) > 0 else os.path.join(here, "..", "build", "etwdump")
runs = int(argv[1]) if len(argv) > 1 else 5
traces = [trace] if trace else [os.path.join(data, "HTTP_Server.etl"), os.path.join(data, "net.4.5.2.x64.etl")]


def variants(path, count, start, out, prefix):
    text = open(path, encoding="utf-8").read()
    guids = sorted(set(re.findall(r'<provider[^>]*?guid="(\{[0-9a-fA-F-]{36}\})"', text, re.S)))
    total = 0
    for i in range(count):
        t = text
        for k, g in enumerate(guids):
            t = t.replace(g, "{%08x-%04x-4000-8000-%012x}" % (start + i, k, start + i))
        t = re.sub(r'(<provider[^>]*?name=")([^"]+)"', lambda m: '%s%s-v%d"' % (m.group(1), m.group(2), start + i),
                   t, flags=re.S)
        name = os.path.join(out, "%s%04d.man" % (prefix, start + i))
        with open(name, "w", encoding="utf-8") as fh:
            fh.write(t)
        total += len(t)
    return total


def make_folder():
    d = tempfile.mkdtemp(prefix="etw-bench-manifests-")
    size = variants(os.path.join(data, "ClrEtwAll.man"), 40, 0, d, "clr")
    size += variants(os.path.join(data, "HTTP_Server.man"), 799, 100, d, "http")
    for f in ("ClrEtwAll.man", "HTTP_Server.man"):
        shutil.copy(os.path.join(data, f), os.path.join(d, "real_" + f))
        size += os.path.getsize(os.path.join(d, "real_" + f))
    return d, size


def run(binary, args):
    p = subprocess.Popen([binary, *args], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    err = p.stderr.read()
    _, status, ru = os.wait4(p.pid, 0)
    return ru.ru_utime + ru.ru_stime, ru.ru_maxrss, err.count(b"\n"), os.waitstatus_to_exitcode(status)


def best(binary, args):
    res = [run(binary, args) for _ in range(runs)]
    cpu = min(r[0] for r in res)
    rss = min(r[1] for r in res)
    return cpu, rss, res[0][2], res[0][3]


made = folder is None
if made:
    folder, size = make_folder()
else:
    size = sum(os.path.getsize(os.path.join(r, f)) for r, _, fs in os.walk(folder) for f in fs)
nfiles = sum(1 for r, _, fs in os.walk(folder) for f in fs if f.lower().endswith((".man", ".xml")))
print("folder: %s, %d manifest files, %.1f MB; trace: %s" % (folder, nfiles, size / 1e6,
                                                            " + ".join(os.path.basename(t) for t in traces)))
print("%-34s %10s %10s %8s %4s" % ("run", "CPU ms", "RSS MB", "stderr", "rc"))
try:
    builds = [("after", etwdump)] + ([("before", before)] if before else [])
    for what, extra in (("first event", ["-j", "1", "-n", "1"]), ("full run", ["-j", "1"])):
        cpu, rss, lines, rc = best(etwdump, extra + traces)
        print("%-34s %10.1f %10.1f %8d %4d" % ("%s, no -m" % what, cpu * 1e3, rss / 1024, lines, rc))
        for name, binary in builds:
            cpu, rss, lines, rc = best(binary, extra + ["-m", folder] + traces)
            print("%-34s %10.1f %10.1f %8d %4d" % ("%s, -m DIR (%s)" % (what, name), cpu * 1e3, rss / 1024, lines,
                                                   rc))
finally:
    if made:
        shutil.rmtree(folder)
