"""Events per second: etwdecode.to_pandas() against plain iteration.

usage: /usr/bin/python3 python/bench/bench_to_pandas.py [TRACE] [--runs N] [--expand {none,true,false}]

TRACE defaults to tests/data/net.4.5.2.x64.etl. Prints the events/s of
``for e in etwdecode.open(TRACE): pass`` and of ``etwdecode.to_pandas(TRACE)``
(wall clock, best of N runs each, alternated so both see the same machine
load) and their ratio; the goal is a ratio of at least 0.5."""
import gc
import os
import sys
import time

import etwdecode

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def iterate(path):
    n = 0
    for _ in etwdecode.open(path):
        n += 1
    return n


def frame(path, expand):
    return len(etwdecode.to_pandas(path, expand=expand))


def main():
    argv = sys.argv[1:]
    runs, expand = 3, None
    if "--runs" in argv:
        i = argv.index("--runs")
        runs = int(argv[i + 1])
        del argv[i:i + 2]
    if "--expand" in argv:
        i = argv.index("--expand")
        expand = {"none": None, "true": True, "false": False}[argv[i + 1]]
        del argv[i:i + 2]
    path = argv[0] if argv else os.path.join(ROOT, "tests", "data", "net.4.5.2.x64.etl")
    best_it = best_df = float("inf")
    n = rows = 0
    for _ in range(runs):
        gc.collect()
        t = time.perf_counter()
        n = iterate(path)
        best_it = min(best_it, time.perf_counter() - t)
        gc.collect()
        t = time.perf_counter()
        rows = frame(path, expand)
        gc.collect()  # the collector's pass over what the frame keeps counts too
        best_df = min(best_df, time.perf_counter() - t)
    assert rows == n, (rows, n)
    it_rate, df_rate = n / best_it, n / best_df
    print("%s: %d events" % (os.path.basename(path), n))
    print("iteration: %10.0f events/s" % it_rate)
    print("to_pandas: %10.0f events/s (expand=%r)" % (df_rate, expand))
    print("ratio:     %10.2f" % (df_rate / it_rate))


if __name__ == "__main__":
    main()
