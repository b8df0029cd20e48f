#!/usr/bin/env python3
"""CPU time of etwdump --format perfetto against --format json on
net.4.5.2.x64.etl, both with -j 1 (perfetto always runs on one thread),
output to /dev/null: the median of RUNS interleaved runs (json, perfetto,
json, ...) of the child's user+sys time (getrusage), which a shared
machine's load disturbs less than wall time, and the ratio.

usage: bench/perfetto.py [ETWDUMP] [RUNS]
  defaults: build/etwdump 5
"""
import os
import resource
import statistics
import subprocess
import sys
import time

here = os.path.dirname(os.path.abspath(__file__))
args = sys.argv[1:]
etwdump = args[0] if len(args) > 0 else os.path.join(here, "..", "build", "etwdump")
runs = int(args[1]) if len(args) > 1 else 5
trace = os.path.join(here, "..", "tests", "data", "net.4.5.2.x64.etl")


def one(fmt):
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    with open(os.devnull, "wb") as null:
        rc = subprocess.run([etwdump, "-j", "1", "--no-progress", "--format", fmt, trace], stdout=null,
                            stderr=subprocess.DEVNULL).returncode
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if rc not in (0, 1):
        sys.exit("--format %s: exit %d" % (fmt, rc))
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main():
    with open("/proc/loadavg") as f:
        load = f.read().split()[0]
    res = {"json": [], "perfetto": []}
    for _ in range(runs):
        for f in res:
            res[f].append(one(f))
    print("etwdump -j 1 on net.4.5.2.x64.etl, %d interleaved runs, output to /dev/null (load average %s)"
          % (runs, load))
    cpu = {f: statistics.median(c for _, c in r) for f, r in res.items()}
    wall = {f: statistics.median(w for w, _ in r) for f, r in res.items()}
    for f in res:
        print("  %-9s CPU %.3f s (median)  wall %.3f s" % (f, cpu[f], wall[f]))
    print("  perfetto / json CPU: %.2fx" % (cpu["perfetto"] / cpu["json"]))


main()
