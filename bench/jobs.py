#!/usr/bin/env python3
"""etwdump -j 1 against -j N: wall and CPU time of whole runs, output to
/dev/null, for a full decode (JSON) and for --stats, on net.4.5.2.x64.etl
(compressed, 8 processors) and on a kernel trace ten times the size of
ShutdownPerfDiagLogger.etl (its first buffer, then all its other buffers ten
times: 31.5 MB, written to /tmp and removed at the end, as bench_trace.c
makes it). Runs are interleaved (-j 1, -j N, -j 1, ...) so that a change in
the machine's load hits both sides alike. Prints best and median wall and
CPU (user+sys of the child, getrusage) in ms, and the ratio of the median
walls. Two threads can only be faster in wall time when two cores are free:
the load average is printed. With --rss, also the peak RSS of -j N on a
~600 MB trace (the kernel trace's buffers 200 times), -j 1, -j N and -j N --map,
measured by /usr/bin/time.

usage: bench/jobs.py [--rss] [ETWDUMP] [RUNS] [N]
  defaults: build/etwdump 9 2
"""
import os
import resource
import statistics
import subprocess
import sys
import time

here = os.path.dirname(os.path.abspath(__file__))
args = [a for a in sys.argv[1:] if a != "--rss"]
want_rss = "--rss" in sys.argv[1:]
etwdump = args[0] if len(args) > 0 else os.path.join(here, "..", "build", "etwdump")
runs = int(args[1]) if len(args) > 1 else 9
jobs = args[2] if len(args) > 2 else "2"
data = os.path.join(here, "..", "tests", "data")
net = os.path.join(data, "net.4.5.2.x64.etl")


def repeated(src, dst, times):
    """src's first buffer, then the rest of src `times` times (a buffer's
    on-disk size is its first u32: docs/FORMATS.md section 1)."""
    with open(src, "rb") as f:
        d = f.read()
    first = int.from_bytes(d[:4], "little")
    with open(dst, "wb") as o:
        o.write(d[:first])
        for _ in range(times):
            o.write(d[first:])


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
    k10 = "/tmp/etwdecode-bench-jobs-kernel10.etl"
    repeated(os.path.join(data, "ShutdownPerfDiagLogger.etl"), k10, 10)
    with open("/proc/loadavg") as f:
        load = f.read().split()[0]
    print("etwdump -j 1 against -j %s, %d interleaved runs each, output to /dev/null (load average %s, %d processors)"
          % (jobs, runs, load, os.cpu_count()))
    print()
    print("%-22s %-8s %4s %10s %10s %10s %10s %8s" % ("trace", "work", "-j", "best wall", "med wall", "best CPU",
                                                     "med CPU", "speedup"))
    try:
        for tname, path in (("net.4.5.2.x64.etl", net), ("kernel x10 (31.5 MB)", k10)):
            for wname, extra in (("decode", []), ("--stats", ["--stats"])):
                res = {"1": [], jobs: []}
                for _ in range(runs):
                    for j in ("1", jobs):
                        res[j].append(one([etwdump, "-j", j, *extra, path]))
                med = {}
                for j in ("1", jobs):
                    walls = sorted(w for w, _ in res[j])
                    cpus = sorted(c for _, c in res[j])
                    med[j] = statistics.median(walls)
                    sp = "" if j == "1" else "%.2fx" % (med["1"] / med[j])
                    print("%-22s %-8s %4s %8.1fms %8.1fms %8.1fms %8.1fms %8s" % (
                        tname, wname, j, walls[0] * 1e3, med[j] * 1e3, cpus[0] * 1e3,
                        statistics.median(cpus) * 1e3, sp))
    finally:
        os.remove(k10)
    if want_rss:
        print()
        big = "/tmp/etwdecode-bench-jobs-600mb.etl"
        repeated(os.path.join(data, "ShutdownPerfDiagLogger.etl"), big, 200)
        try:
            size = os.path.getsize(big)
            # ru_maxrss of a child forked from this script would count the
            # script's own pages (the peak before exec): time(1) forks from a
            # small process.
            if not os.path.exists("/usr/bin/time"):
                print("\npeak RSS: needs /usr/bin/time (Debian package time)")
                return
            for extra in (["-j", "1"], ["-j", jobs], ["-j", jobs, "--map"]):
                p = subprocess.run(["/usr/bin/time", "-f", "%M", etwdump, *extra, big],
                                   stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
                kb = int(p.stderr.decode().strip().splitlines()[-1])
                print("peak RSS of etwdump %-12s on a %.0f MB trace: %5.1f MB (exit %d)" % (
                    " ".join(extra), size / 1e6, kb / 1024.0, p.returncode))
        finally:
            os.remove(big)


main()
