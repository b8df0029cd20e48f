#!/usr/bin/env python3
"""etwdump --report NAME (every report) against etwdump --stats on
net.4.5.2.x64.etl, output to /dev/null: the CPU time (user+sys of the
child, getrusage) of each, median of RUNS runs, and each report's ratio to
--stats (the goal: at most 1.5). Runs are interleaved (stats, processes,
gc, ..., stats, ...) so that a change in the machine's load hits all alike.
--stats runs as it does by default (its -j, which it uses on one file).

usage: bench/reports.py [ETWDUMP] [RUNS] [TRACE]
  defaults: build/etwdump 5 tests/data/net.4.5.2.x64.etl
"""
import os
import resource
import statistics
import subprocess
import sys

here = os.path.dirname(os.path.abspath(__file__))
args = sys.argv[1:]
etwdump = args[0] if len(args) > 0 else os.path.join(here, "..", "build", "etwdump")
runs = int(args[1]) if len(args) > 1 else 5
trace = args[2] if len(args) > 2 else os.path.join(here, "..", "tests", "data", "net.4.5.2.x64.etl")
REPORTS = ["processes", "gc", "disk", "files", "network", "cpu"]


def cpu(argv):
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


cases = [("--stats", [etwdump, "--stats", "--no-progress", trace])]
cases += [(r, [etwdump, "--report", r, "--no-progress", trace]) for r in REPORTS]
times = {name: [] for name, _ in cases}
for _ in range(runs):
    for name, argv in cases:
        times[name].append(cpu(argv))
base = statistics.median(times["--stats"])
print("%-10s %10s %8s" % ("run", "cpu ms", "ratio"))
worst = 0.0
for name, _ in cases:
    m = statistics.median(times[name])
    ratio = m / base if base else float("inf")
    if name != "--stats":
        worst = max(worst, ratio)
    print("%-10s %10.1f %8.2f" % (name, m * 1000, ratio))
print("worst ratio to --stats: %.2f (goal <= 1.5)" % worst)
