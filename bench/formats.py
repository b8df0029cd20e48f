#!/usr/bin/env python3
"""etwdump --format json / text / csv (and the other formats it knows) on
net.4.5.2.x64.etl with -j 1, output to /dev/null: events per second of
each format, from the median wall time and the median CPU time (user+sys of
the child, getrusage), and each format's ratio to JSON. Runs are
interleaved (json, text, csv, json, ...) so that a change in the machine's
load hits every format alike; CPU time is the steadier measure on a shared
machine. The event count is the number of JSON lines of one run.

usage: bench/formats.py [ETWDUMP] [RUNS] [FORMAT...]
  defaults: build/etwdump 7 json text csv
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
runs = int(args[1]) if len(args) > 1 else 7
formats = args[2:] or ["json", "text", "csv"]
trace = os.path.join(here, "..", "tests", "data", "net.4.5.2.x64.etl")


def one(argv):
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    with open(os.devnull, "wb") as null:
        rc = subprocess.run(argv, stdout=null, stderr=subprocess.DEVNULL).returncode
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if rc not in (0, 1):
        sys.exit("%s: exit %d" % (" ".join(argv), rc))
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main():
    out = subprocess.run([etwdump, "-j", "1", trace], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL).stdout
    events = out.count(b"\n")
    with open("/proc/loadavg") as f:
        load = f.read().split()[0]
    print("etwdump -j 1 --format F on net.4.5.2.x64.etl (%d events), %d interleaved runs each, "
          "output to /dev/null (load average %s)" % (events, runs, load))
    print()
    res = {f: [] for f in formats}
    for _ in range(runs):
        for f in formats:
            res[f].append(one([etwdump, "-j", "1", "--format", f, trace]))
    print("%-10s %10s %10s %12s %12s %9s %9s" % ("format", "med wall", "med CPU", "events/s", "events/s",
                                                "ratio", "ratio"))
    print("%-10s %10s %10s %12s %12s %9s %9s" % ("", "ms", "ms", "(wall)", "(CPU)", "(wall)", "(CPU)"))
    base = None
    for f in formats:
        wall = statistics.median(w for w, _ in res[f])
        cpu = statistics.median(c for _, c in res[f])
        rate_w, rate_c = events / wall, events / cpu
        if base is None:
            base = (rate_w, rate_c)
        print("%-10s %10.1f %10.1f %12.0f %12.0f %9.2f %9.2f" % (f, wall * 1000, cpu * 1000, rate_w, rate_c,
                                                               rate_w / base[0], rate_c / base[1]))


main()
