"""Events per second: etwdecode.open() to dicts vs etwdump | json.loads.

usage: /usr/bin/python3 python/bench/bench_iterate.py TRACE [MANIFEST...] [--runs N]

Prints CPU time (user+sys, of this process and of its children) for each
way, best and median of N runs, on one core (etwdump's own process counts in
the pipeline figure)."""
import json
import os
import resource
import statistics
import subprocess
import sys

import etwdecode

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
ETWDUMP = os.environ.get("ETWDUMP", os.path.join(ROOT, "build", "etwdump"))


def cpu():
    s, c = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return s.ru_utime + s.ru_stime + c.ru_utime + c.ru_stime


def native(path, manifests):
    n = 0
    for _ in etwdecode.open(path, manifests):
        n += 1
    return n


def pipeline(path, manifests):
    args = [ETWDUMP]
    for m in manifests:
        args += ["-m", m]
    p = subprocess.Popen(args + [path], stdout=subprocess.PIPE)
    n = 0
    loads = json.loads
    for line in p.stdout:
        loads(line)
        n += 1
    p.wait()
    return n


def main():
    argv = sys.argv[1:]
    runs = 5
    if "--runs" in argv:
        i = argv.index("--runs")
        runs = int(argv[i + 1])
        del argv[i:i + 2]
    path, manifests = argv[0], argv[1:]
    for name, fn in (("etwdecode.open", native), ("etwdump | json.loads", pipeline)):
        times = []
        for _ in range(runs):
            t0 = cpu()
            n = fn(path, manifests)
            times.append(cpu() - t0)
        best, med = min(times), statistics.median(times)
        print("%-22s %d events  CPU best %.3f s (%.0f ev/s)  median %.3f s (%.0f ev/s)"
              % (name, n, best, n / best, med, n / med))


if __name__ == "__main__":
    main()
