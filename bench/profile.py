#!/usr/bin/env python3
"""etwdump --profile folded against a plain decode of the same trace: CPU
time (user+sys) and peak RSS of whole runs, output to /dev/null, on
net.4.5.2.x64.etl (8 processors, 6,320 CPU samples with stacks, .NET
rundown at the end). The goal of the profile stage is at most 2x the CPU of
a plain decode (JSON, -j 1): the profile reads every event once, decodes
only the ones it needs (stacks, images, methods, processes, samples) and
writes one line per stack instead of one per event.

Runs are interleaved (plain, profile, --stacks, plain, ...) so that a change
in the machine's load hits every side alike. Children are started with
posix_spawn and reaped with os.wait4, whose rusage is the child's own: CPU
is ru_utime + ru_stime, peak RSS ru_maxrss (the exec'd program only: a
spawned child never touches this script's pages). Prints best and median
CPU in ms, the largest peak RSS in MB, and the ratio of the median CPUs.

usage: bench/profile.py [ETWDUMP] [RUNS] [TRACE]
  defaults: build/etwdump 9 tests/data/net.4.5.2.x64.etl
"""
import os
import statistics
import sys

here = os.path.dirname(os.path.abspath(__file__))
etwdump = sys.argv[1] if len(sys.argv) > 1 else os.path.join(here, "..", "build", "etwdump")
runs = int(sys.argv[2]) if len(sys.argv) > 2 else 9
trace = sys.argv[3] if len(sys.argv) > 3 else os.path.join(here, "..", "tests", "data", "net.4.5.2.x64.etl")

WORK = (
    ("plain decode (JSON, -j 1)", ["-j", "1"]),
    ("--profile folded", ["--profile", "folded"]),
    ("--stacks (JSON)", ["--stacks"]),
)


def one(argv):
    """(CPU seconds, peak RSS bytes) of one run."""
    actions = [(os.POSIX_SPAWN_OPEN, 1, os.devnull, os.O_WRONLY, 0),
               (os.POSIX_SPAWN_OPEN, 2, os.devnull, os.O_WRONLY, 0)]
    pid = os.posix_spawn(argv[0], argv, os.environ, file_actions=actions)
    _, status, ru = os.wait4(pid, 0)
    rc = os.waitstatus_to_exitcode(status)
    if rc not in (0, 1):
        sys.exit("%s: exit %d" % (" ".join(argv), rc))
    return ru.ru_utime + ru.ru_stime, ru.ru_maxrss * 1024  # Linux: ru_maxrss in KiB


def main():
    with open("/proc/loadavg") as f:
        load = f.read().split()[0]
    print("%s: %d interleaved runs each, output to /dev/null (load average %s, %d processors)"
          % (os.path.basename(trace), runs, load, os.cpu_count()))
    print()
    res = {name: [] for name, _ in WORK}
    for _ in range(runs):
        for name, extra in WORK:
            res[name].append(one([etwdump, *extra, trace]))
    base = statistics.median(c for c, _ in res[WORK[0][0]])
    print("%-28s %10s %10s %12s %10s" % ("run", "best CPU", "med CPU", "peak RSS", "CPU ratio"))
    for name, _ in WORK:
        cpus = sorted(c for c, _ in res[name])
        med = statistics.median(cpus)
        rss = max(r for _, r in res[name])
        print("%-28s %8.1fms %8.1fms %10.1fMB %9.2fx" % (name, cpus[0] * 1e3, med * 1e3, rss / 1e6, med / base))


main()
