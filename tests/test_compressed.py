"""etwdump on the inputs people hand over: compressed traces and files that
are not traces.

usage: test_compressed.py ETWDUMP DATA_DIR

A PerfView-style .etl.zip of two traces (plus a symbols folder and a text
file) is read as both traces merged, each event's "file" naming
archive.zip:entry; a gzip'd trace from a pipe and a zstd one (made with the
zstd CLI, Debian package zstd) read as the trace itself; an EVTX log, a text
file and a ZIP without traces are named as what they are; a decompression
bomb is refused quickly with the limit in the message. Record counts are
those of the plain traces (COUNTS of test_etwdump.py: one event per record).
Prints "N passed, N failed".
"""
import gzip
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import zipfile

ETWDUMP, DATA = sys.argv[1], sys.argv[2]
passed = failed = 0

# records in the plain traces (test_etwdump.py's COUNTS)
HTTP, GC, NET = 2042, 71, 179474


def check(cond, what):
    global passed, failed
    if cond:
        passed += 1
    else:
        failed += 1
        print("FAIL: " + what, file=sys.stderr)


def run(*args, stdin=None):
    p = subprocess.run([ETWDUMP, *args], input=stdin, capture_output=True, timeout=300)
    return p.returncode, p.stdout.decode("utf-8"), p.stderr.decode("utf-8", "replace")


def data(name):
    return os.path.join(DATA, name)


def lines(out):
    return [json.loads(x) for x in out.splitlines()]


def without_file(evs):
    return [{k: v for k, v in e.items() if k != "file"} for e in evs]


with tempfile.TemporaryDirectory() as tmp:
    # --- a PerfView-style zip of two traces ----------------------------------
    zpath = os.path.join(tmp, "session.etl.zip")
    with zipfile.ZipFile(zpath, "w", zipfile.ZIP_DEFLATED) as z:
        z.write(data("HTTP_Server.etl"), "HTTP_Server.etl")
        z.write(data("gcevents.etl"), "session/gcevents.kernel.etl")
        z.writestr("symbols/readme.txt", "not a trace\n")
        z.writestr("symbols/", "")
    rc, out, err = run(zpath)
    evs = lines(out)
    files = {}
    for e in evs:
        files[e.get("file")] = files.get(e.get("file"), 0) + 1
    check(rc == 0 and err == "", "zip: exit %d, %r" % (rc, err))
    check(files == {zpath + ":HTTP_Server.etl": HTTP, zpath + ":session/gcevents.kernel.etl": GC},
          "zip: both traces, every record, named archive:entry (%r)" % files)
    # the same events in the same merged order as the two plain files given together
    rc2, out2, _ = run(data("HTTP_Server.etl"), data("gcevents.etl"))
    check(rc2 == 0 and without_file(evs) == without_file(lines(out2)),
          "zip: the same merged events as the two plain traces")
    # by content, not by name: the zip renamed to .bin still reads
    renamed = os.path.join(tmp, "handed-over.bin")
    shutil.copy(zpath, renamed)
    rc, out, err = run("--stats", renamed)
    check(rc == 0 and sorted(map(int, re.findall(r"^events\s+(\d+)", out, re.M))) == [GC, HTTP], "zip named .bin: %d and %d events (%r)" % (GC, HTTP, err))

    # an entry named .etl that is not a trace: said, skipped, exit 1; the trace beside it is read
    mixed = os.path.join(tmp, "mixed.etl.zip")
    with zipfile.ZipFile(mixed, "w") as z:
        z.write(data("gcevents.etl"), "gc.etl")
        z.writestr("bad.etl", "this is not a trace\n")
    rc, out, err = run(mixed)
    check(rc == 1 and len(out.splitlines()) == GC and "entry bad.etl: not an ETL trace, skipped" in err,
          "zip with a bad entry: exit %d, %d events, %r" % (rc, len(out.splitlines()), err))

    # --- a zip among other inputs, and a directory holding compressed traces --
    sub = os.path.join(tmp, "dir")
    os.mkdir(sub)
    with open(data("gcevents.etl"), "rb") as f, gzip.open(os.path.join(sub, "gc.etl.gz"), "wb") as g:
        g.write(f.read())
    shutil.copy(data("HTTP_Server.etl"), os.path.join(sub, "http.etl"))
    rc, out, err = run("--stats", sub)
    check(rc == 0 and sorted(map(int, re.findall(r"^events\s+(\d+)", out, re.M))) == [GC, HTTP],
          "directory with an .etl.gz: both traces read (%r)" % err)

    # --- gzip from a pipe -----------------------------------------------------
    with open(data("net.4.5.2.x64.etl"), "rb") as f:
        net = f.read()
    gz = gzip.compress(net, 6)
    rc_plain, out_plain, _ = run(data("net.4.5.2.x64.etl"))
    rc, out, err = run("-", stdin=gz)
    check(rc == 0 and rc_plain == 0 and out == out_plain and len(out.splitlines()) == NET,
          "gzip from a pipe: the plain trace's %d events (exit %d, %r)" % (NET, rc, err[:200]))
    gzpath = os.path.join(tmp, "net.etl.gz")
    with open(gzpath, "wb") as f:
        f.write(gz)
    rc, out, err = run(gzpath)
    check(rc == 0 and out == out_plain, "gzip file: the plain trace's events (%r)" % err[:200])

    # --- zstd (the zstd CLI) ----------------------------------------------------
    zst = os.path.join(tmp, "net.etl.zst")
    zstd = shutil.which("zstd")
    check(zstd is not None, "the zstd CLI is installed (scripts/install-deps.sh: zstd)")
    if zstd:
        subprocess.run([zstd, "-q", "-3", "-o", zst, data("net.4.5.2.x64.etl")], check=True)
        with open(zst, "rb") as f:
            check(f.read(4) == b"\x28\xb5\x2f\xfd", "zstd made a zstd frame")
        rc, out, err = run(zst)
        check(rc == 0 and out == out_plain, "zstd file: the plain trace's events (%r)" % err[:200])

    # --- files that are not traces, named as what they are ----------------------
    evtx = os.path.join(tmp, "Security.evtx")
    with open(evtx, "wb") as f:  # [MS-EVEN6] file header: Signature "ElfFile\0"
        f.write(b"ElfFile\x00" + bytes(4096 - 8))
    rc, out, err = run(evtx)
    check(rc == 2 and err == "etwdump: %s: an EVTX event log, not an ETL trace (etwdump reads .etl files)\n" % evtx,
          "EVTX named: %r" % err)
    rc, out, err = run("-", stdin=b"ElfFile\x00" + bytes(4088))
    check(rc == 2 and "standard input: an EVTX event log, not an ETL trace" in err, "EVTX from a pipe: %r" % err)
    txt = os.path.join(tmp, "notes.etl")
    with open(txt, "w") as f:
        f.write("Trace collected on Tuesday; see attached.\n" * 50)
    rc, out, err = run(txt)
    check(rc == 2 and err == "etwdump: %s: a text file, not an ETL trace (etwdump reads .etl files)\n" % txt,
          "text file named, no buffer diagnostics: %r" % err)
    nothing = os.path.join(tmp, "logs.zip")
    with zipfile.ZipFile(nothing, "w") as z:
        z.writestr("readme.txt", "no trace here\n")
    rc, out, err = run(nothing)
    check(rc == 2 and "a ZIP archive with no ETL trace inside" in err, "zip without a trace: %r" % err)
    cut = os.path.join(tmp, "cut.etl.gz")
    with open(cut, "wb") as f:
        f.write(gz[: len(gz) // 2])
    rc, out, err = run(cut)
    check(rc == 2 and "a gzip-compressed file that does not decompress" in err, "cut gzip: %r" % err)
    # one good input and one foreign: the good one is read, exit 1
    rc, out, err = run(evtx, zpath)
    check(rc == 1 and len(out.splitlines()) == HTTP + GC and "EVTX event log" in err,
          "EVTX beside a zip: exit 1, the zip's %d events (%d, %r)" % (HTTP + GC, rc, err))

    # --- decompression bombs -----------------------------------------------------
    # 2 GiB: an ETL trace's first 64 KiB, then zeros; 128 gzip members of
    # 16 MiB each (RFC 1952 2.2: a gzip file is a series of members) ~ 2 MB.
    head = net[:65536]
    zeros = gzip.compress(bytes(1 << 24), 9)
    bomb = gzip.compress(head + bytes((1 << 24) - len(head)), 9) + zeros * 127
    bpath = os.path.join(tmp, "bomb.etl.gz")
    with open(bpath, "wb") as f:
        f.write(bomb)
    t0 = time.monotonic()
    rc, out, err = run(bpath)
    took = time.monotonic() - t0
    check(rc == 2 and out == "" and "decompresses to more than its limit" in err and "docs/limits.md" in err,
          "2 GiB bomb in %d bytes refused: %r" % (len(bomb), err))
    check(took < 60, "2 GiB bomb refused in %.1f s" % took)
    print("bomb: %d bytes of gzip (2 GiB decompressed) refused in %.2f s" % (len(bomb), took))
    # a small one (200 MiB in ~200 KB) stops at the 64 MiB floor
    small = gzip.compress(head + bytes((1 << 24) - len(head)), 9) + zeros * 12
    rc, out, err = run("-", stdin=small)
    check(rc == 2 and "decompresses to more than its limit" in err, "200 MiB bomb from a pipe: %r" % err)
    # a zip entry whose headers state 3 GiB is refused before decompressing
    # (APPNOTE.TXT 4.3.7 / 4.3.12: uncompressed size at offset 22 of the
    # local header, 24 of the central directory header)
    zb = os.path.join(tmp, "bomb.etl.zip")
    with zipfile.ZipFile(zb, "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr("big.etl", head)
    blob = bytearray(open(zb, "rb").read())
    said = (3 << 30).to_bytes(4, "little")
    blob[22:26] = said
    cd = blob.index(b"PK\x01\x02")
    blob[cd + 24:cd + 28] = said
    open(zb, "wb").write(bytes(blob))
    t0 = time.monotonic()
    rc, out, err = run(zb)
    took = time.monotonic() - t0
    check(rc == 2 and "decompresses to more than its limit" in err, "zip stating 3 GiB refused: %r" % err)
    check(took < 5, "zip stating 3 GiB refused from its header in %.2f s" % took)
    # and one whose headers state less than it holds is damaged, not trusted
    blob[22:26] = (1000).to_bytes(4, "little")
    blob[cd + 24:cd + 28] = (1000).to_bytes(4, "little")
    open(zb, "wb").write(bytes(blob))
    rc, out, err = run(zb)
    check(rc == 2 and "does not decompress" in err, "zip stating too small a size: %r" % err)

# libarchive is opened only when an input needs it (where dlopen exists): etwdump's own
# dependencies do not include it, and the archives above were read all the same.
if sys.platform.startswith("linux") and shutil.which("ldd"):
    deps = subprocess.run(["ldd", ETWDUMP], capture_output=True, text=True).stdout
    check("libc.so" in deps and "libarchive" not in deps,
          "etwdump does not load libarchive at start: %r" % [l.split()[0] for l in deps.splitlines() if l.strip()])

print("%d passed, %d failed" % (passed, failed))
sys.exit(1 if failed else 0)
