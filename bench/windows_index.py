#!/usr/bin/env python3
"""etwdump --windows: the cost of indexing a Windows folder, the first time
and from the index cache.

Lays out an image under /tmp (removed at the end): FILES PE files spread as
in a Windows folder (System32, System32/drivers, SysWOW64, WinSxS/<component>)
of which 1 in 20 holds a WEVT_TEMPLATE (copies of the DLLs
tests/make_wevt_dlls.sh builds, each patched to a provider GUID of its own so
that every file adds providers) and the others do not (copies of winevt-kb's
wrc_test.dll and wrc_test.mui.dll, each with a few bytes changed), plus a
trace (tests/etlwrite.py) of 2 events, one of a provider of the image. Then
times `etwdump --windows IMG -n 2 TRACE` (output to /dev/null):
  - cold: a fresh cache folder each run (the whole folder read);
  - warm: the cache of the previous run (only listed and stat'ed).
Prints best and median wall and CPU (user+sys of the child) in ms, over RUNS
runs of each, interleaved.

usage: bench/windows_index.py [ETWDUMP] [DLL_DIR] [FILES] [RUNS]
  defaults: build/etwdump build/wevt-dlls 3000 7
"""
import os
import random
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import uuid

here = os.path.dirname(os.path.abspath(__file__))
top = os.path.join(here, "..")
sys.path.insert(0, os.path.join(top, "tests"))
import etlwrite  # noqa: E402

args = sys.argv[1:]
etwdump = args[0] if len(args) > 0 else os.path.join(top, "build", "etwdump")
dlls = args[1] if len(args) > 1 else os.path.join(top, "build", "wevt-dlls")
nfiles = int(args[2]) if len(args) > 2 else 3000
runs = int(args[3]) if len(args) > 3 else 7


def lay_out(root):
    rnd = random.Random(1)
    win = os.path.join(root, "Windows")
    dirs = ["System32", "System32/drivers", "SysWOW64"] + ["WinSxS/amd64_c%03d" % i for i in range(150)]
    for d in dirs:
        os.makedirs(os.path.join(win, d))
    wevt = [open(os.path.join(dlls, f), "rb").read() for f in sorted(os.listdir(dlls)) if f.endswith(".dll")]
    pe = os.path.join(top, "tests", "data", "wevt", "pe")
    plain = [open(os.path.join(pe, f), "rb").read() for f in ("wrc_test.dll", "wrc_test.mui.dll")]
    first = None
    for i in range(nfiles):
        d = dirs[0] if i < nfiles // 2 else dirs[rnd.randrange(len(dirs))]
        ext = ".sys" if d.endswith("drivers") else ".dll"
        if i % 20 == 0:
            b = bytearray(wevt[(i // 20) % len(wevt)])
            # give the blob's first provider a GUID of its own: the CRIM
            # header's provider table starts at +16
            at = b.find(b"CRIM")
            g = uuid.UUID(int=rnd.getrandbits(128))
            b[at + 16:at + 32] = g.bytes_le
            if first is None:
                first = (g, b)
        else:
            b = bytearray(plain[i % 2])
            b[-8:] = rnd.getrandbits(64).to_bytes(8, "little")
        with open(os.path.join(win, d, "f%05d%s" % (i, ext)), "wb") as f:
            f.write(b)
    return first[0]


def timed(cmd, env):
    r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True, env=env)
    t1 = time.perf_counter()
    r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (t1 - t0) * 1000, ((r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime)) * 1000


def main():
    tmp = tempfile.mkdtemp(prefix="etw-bench-windows-")
    try:
        img = os.path.join(tmp, "img")
        guid = lay_out(img)
        etl = os.path.join(tmp, "t.etl")
        etlwrite.write_etl(etl, [dict(provider=guid, id=1, version=0, ts=1),
                                 dict(provider=uuid.UUID(int=7), id=1, ts=2)])
        size = sum(os.path.getsize(os.path.join(dp, f)) for dp, _, fs in os.walk(img) for f in fs)
        cmd = [etwdump, "--windows", img, "-n", "2", etl]
        cold, warm = [], []
        warm_env = dict(os.environ, XDG_CACHE_HOME=os.path.join(tmp, "warm"))
        subprocess.run(cmd, stdout=subprocess.DEVNULL, check=True, env=warm_env)  # fill the warm cache
        for i in range(runs):
            env = dict(os.environ, XDG_CACHE_HOME=os.path.join(tmp, "cold%d" % i))
            # the files' pages stay in the page cache: "cold" is the index, not the disk
            cold.append(timed(cmd, env))
            warm.append(timed(cmd, warm_env))
        print("image: %d PE files (%d with WEVT_TEMPLATE), %.1f MB; load average %.2f"
              % (nfiles, (nfiles + 19) // 20, size / 1e6, os.getloadavg()[0]))
        for name, v in (("cold (index built)", cold), ("warm (index cache)", warm)):
            w = [x[0] for x in v]
            c = [x[1] for x in v]
            print("%-20s wall best %7.1f median %7.1f ms   CPU best %7.1f median %7.1f ms"
                  % (name, min(w), statistics.median(w), min(c), statistics.median(c)))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
