"""Events per second: etwdecode.to_pandas() against plain iteration.

usage: /usr/bin/python3 python/bench/bench_to_pandas.py [TRACE] [--runs N]
       [--expand {none,true,false}] [--columns NAME,NAME,...]

TRACE defaults to tests/data/net.4.5.2.x64.etl. Prints the events/s of
``for e in etwdecode.open(TRACE): pass`` and of ``etwdecode.to_pandas(TRACE)``
(CPU time, time.process_time(): the median of N runs each, default 5,
alternated so both see the same machine load) and their ratio, the frame
timed twice: without and with the full collector pass that follows it
(gc.collect(), what the objects the frame keeps cost the collector); the
goal is a ratio of at least 0.5. With no --expand/--columns it times what a
user gets from ``to_pandas(TRACE)``: for a trace of several kinds, the
``fields`` column of etwdecode.Fields (the line of results says what the
frame held)."""
import gc
import os
import statistics
import sys
import time

import etwdecode

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def iterate(path):
    n = 0
    for _ in etwdecode.open(path):
        n += 1
    return n


def timed(fn, collect):
    gc.collect()
    t = time.process_time()
    out = fn()
    if collect:
        gc.collect()
    spent = time.process_time() - t
    return spent, out


def main():
    argv = sys.argv[1:]
    runs, expand, columns = 5, None, None
    if "--runs" in argv:
        i = argv.index("--runs")
        runs = int(argv[i + 1])
        del argv[i:i + 2]
    if "--expand" in argv:
        i = argv.index("--expand")
        expand = {"none": None, "true": True, "false": False}[argv[i + 1]]
        del argv[i:i + 2]
    if "--columns" in argv:
        i = argv.index("--columns")
        columns = argv[i + 1].split(",")
        del argv[i:i + 2]
    path = argv[0] if argv else os.path.join(ROOT, "tests", "data", "net.4.5.2.x64.etl")
    it, bare, full = [], [], []
    n, made = 0, ""
    for _ in range(runs):
        t, n = timed(lambda: iterate(path), True)
        it.append(t)
        for collect, into in ((False, bare), (True, full)):
            t, df = timed(lambda: etwdecode.to_pandas(path, expand=expand, columns=columns), collect)
            assert len(df) == n, (len(df), n)
            made = "%d columns, fields cells: %s" % (
                df.shape[1], type(df["fields"].iloc[0]).__name__ if "fields" in df.columns and n else "none")
            del df
            into.append(t)
    it_rate = n / statistics.median(it)
    print("%s: %d events, median of %d runs (CPU time); the frame: %s" % (os.path.basename(path), n, runs, made))
    print("iteration:            %10.0f events/s" % it_rate)
    for label, ts in (("to_pandas:", bare), ("to_pandas + gc pass:", full)):
        rate = n / statistics.median(ts)
        print("%-21s %10.0f events/s  ratio %.2f  (expand=%r, columns=%r)" % (label, rate, rate / it_rate, expand,
                                                                             columns))


if __name__ == "__main__":
    main()
