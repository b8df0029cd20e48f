#!/usr/bin/env python3
"""Filtering benchmark: etwdump selecting one provider of a trace against the
full decode. CPU time (user+sys of the etwdump process, from getrusage) and
wall time, best and median of N runs, and events/s (events read per CPU
second; every event is read and merged either way, only the selected ones are
decoded and written).

usage: bench/filter.py [ETWDUMP] [TRACE] [RUNS]
  defaults: build/etwdump tests/data/net.4.5.2.x64.etl 5
"""
import json
import os
import resource
import statistics
import subprocess
import sys
import time

here = os.path.dirname(os.path.abspath(__file__))
etwdump = sys.argv[1] if len(sys.argv) > 1 else os.path.join(here, "..", "build", "etwdump")
trace = sys.argv[2] if len(sys.argv) > 2 else os.path.join(here, "..", "tests", "data", "net.4.5.2.x64.etl")
runs = int(sys.argv[3]) if len(sys.argv) > 3 else 5


def one(args):
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    p = subprocess.run([etwdump, *args, trace], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return cpu, wall, p.stdout.count(b"\n")


stats = json.loads(subprocess.run([etwdump, "--stats", "--format", "json", trace], capture_output=True).stdout)
total = stats["events"]
cases = [("full decode", [])]
for name in ("Microsoft-Windows-Kernel-File", "Microsoft-Windows-DotNETRuntime"):
    cases.append(("--provider " + name, ["--provider", name]))
cases.append(("--event 'GarbageCollection/*'", ["--event", "GarbageCollection/*"]))
print("trace %s: %d events; %d runs each; CPU = user+sys of etwdump" % (os.path.basename(trace), total, runs))
print("%-46s %9s %10s %10s %10s %14s" % ("case", "selected", "cpu best", "cpu median", "wall med", "events/s (cpu)"))
for label, args in cases:
    res = [one(args) for _ in range(runs)]
    cpus = sorted(r[0] for r in res)
    walls = sorted(r[1] for r in res)
    best, med = cpus[0], statistics.median(cpus)
    print("%-46s %9d %9.3fs %9.3fs %9.3fs %14.0f" % (label, res[0][2], best, med, statistics.median(walls),
                                                    total / med if med else 0))
