#!/usr/bin/env python3
"""etwdump -j N gives byte-for-byte the output of -j 1, for every trace.

usage: test_jobs.py ETWDUMP DATA_DIR

For every .etl in DATA_DIR, with -j 1, -j 2 and -j 8: the JSON output
(plain, with --messages and the manifests that fit the trace, with --raw
and --no-manifest-events, with --file-order, with -n and a selection), text
and CSV output, the --stats table and JSON summary (with a selection,
--file-order, --no-manifest-events), the exit status and the problems on
standard error; and the same for several files given together (merged
by time, and with --file-order). The -j 1 output itself
must hold one line per event the --stats table counts, so an empty or
truncated output on all three cannot pass. Prints "N passed, N failed".
"""
import os
import re
import subprocess
import sys
import tempfile

ETWDUMP, DATA = sys.argv[1], sys.argv[2]
passed = failed = 0


def check(cond, what):
    global passed, failed
    if cond:
        passed += 1
    else:
        failed += 1
        print("FAIL: " + what, file=sys.stderr)


def run(*args):
    p = subprocess.run([ETWDUMP, *args], capture_output=True, timeout=300)
    return p.returncode, p.stdout, p.stderr


MANIFESTS = {
    "gcevents.etl": ["ClrEtwAll.man"],
    "net.4.5.2.x64.etl": ["ClrEtwAll.man"],
    "HTTP_Server.etl": ["HTTP_Server.man"],
}
traces = sorted(f for f in os.listdir(DATA) if f.endswith(".etl"))
check(len(traces) >= 11, "the sample traces are there")
for name in traces:
    path = os.path.join(DATA, name)
    rc, stats, _ = run("-j", "1", "--stats", path)
    m = re.search(rb"^events\s+(\d+)", stats, re.M)
    check(rc in (0, 1) and m, f"{name}: --stats counts events")
    total = int(m.group(1)) if m else -1
    man = []
    for f in MANIFESTS.get(name, []):
        man += ["--manifest", os.path.join(DATA, f)]
    variants = [[], ["--messages", *man], ["--raw", "--no-manifest-events"], ["--file-order"],
                ["-n", "1000", "--errors"], ["--format", "text"],
                ["--format", "csv", "--fields", "time,provider,event,pid,tid"]]
    if not man:
        variants[1] = ["--messages"]
    for extra in variants:
        ref = run("-j", "1", *extra, path)
        if not extra:
            check(ref[1].count(b"\n") == total, f"{name}: -j 1 writes one line per event ({total})")
        for j in ("2", "8"):
            got = run("-j", j, *extra, path)
            check(got[1] == ref[1], f"{name} {' '.join(extra)}: -j {j} output is -j 1's")
            check(got[0] == ref[0], f"{name} {' '.join(extra)}: -j {j} exit status {got[0]}, -j 1 {ref[0]}")
            check(sorted(got[2].splitlines()) == sorted(ref[2].splitlines()),
                  f"{name} {' '.join(extra)}: -j {j} reports the same problems")
    # --stats: the workers count, the order-dependent parts (process names,
    # error examples) are applied in order; the summary must not move
    for extra in [[], ["--format", "json"], ["--format", "json", "--no-manifest-events", *man],
                  ["--file-order"], ["--format", "json", "--provider", "*Kernel*"]]:
        ref = run("-j", "1", "--stats", *extra, path)
        for j in ("2", "8"):
            got = run("-j", j, "--stats", *extra, path)
            what = f"{name} --stats {' '.join(extra)}: -j {j}"
            check(got[1] == ref[1], f"{what} output is -j 1's")
            check(got[0] == ref[0], f"{what} exit status {got[0]}, -j 1 {ref[0]}")
            check(sorted(got[2].splitlines()) == sorted(ref[2].splitlines()), f"{what} reports the same problems")

# Several files, merged by time (or concatenated with --file-order): -j 2
# and -j 8 run the pipeline over every reader, -j 1 the one-thread merge.
# The last file is the first under another name (a link), so every one of
# its events ties with the first file's and the two interleave event by
# event: the tie rule and each event's "file" are checked on every line.
with tempfile.TemporaryDirectory() as tmp:
    copy = os.path.join(tmp, "net.copy.etl")
    os.symlink(os.path.abspath(os.path.join(DATA, "net.4.5.2.x64.etl")), copy)
    files = [os.path.join(DATA, n) for n in ("net.4.5.2.x64.etl", "lxcore_kernel.etl", "HTTP_Server.etl")]
    files.append(copy)
    total = 0
    for path in files:
        m = re.search(rb"^events\s+(\d+)", run("-j", "1", "--stats", path)[1], re.M)
        total += int(m.group(1)) if m else -1
    for extra in [[], ["--file-order"], ["--format", "text"],
                  ["--format", "csv", "--fields", "time,provider,event,pid,tid"],
                  ["--provider", "*Kernel*", "--raw"], ["-n", "50000"], ["--file-order", "-n", "200000"]]:
        ref = run("-j", "1", *extra, *files)
        what = f"several files {' '.join(extra)}"
        if not extra:
            check(ref[1].count(b"\n") == total, f"{what}: -j 1 writes one line per event ({total})")
            names = re.findall(rb'"file":"([^"]*)"', ref[1])
            check(names.count(copy.encode()) == names.count(files[0].encode()) > 0,
                  f"{what}: both names of the linked file come out")
        for j in ("2", "8"):
            got = run("-j", j, *extra, *files)
            check(got[1] == ref[1], f"{what}: -j {j} output is -j 1's")
            check(got[0] == ref[0], f"{what}: -j {j} exit status {got[0]}, -j 1 {ref[0]}")
            check(sorted(got[2].splitlines()) == sorted(ref[2].splitlines()), f"{what}: -j {j} reports the same problems")

# --stats without -j on an input under 64 MiB runs on one thread (it costs less CPU and
# about the same time there); -j 2 still runs the pipeline. Seen by what threads leave,
# not by a clock: on net.4.5.2.x64.etl a pipeline of two threads waits on its peer some
# 60-70 times (voluntary context switches), one thread once or twice. A machine of one
# processor runs one thread either way.
def switches(*args):
    p = subprocess.Popen([ETWDUMP, *args], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    out = p.stdout.read()
    _, status, ru = os.wait4(p.pid, 0)
    return os.waitstatus_to_exitcode(status), ru.ru_nvcsw, out


net = os.path.join(DATA, "net.4.5.2.x64.etl")
rc1, n1, out1 = switches("--stats", net)
rc2, n2, out2 = switches("--stats", "-j", "2", net)
check(rc1 == rc2 == 0 and out1 == out2 and out1.startswith(b"file "),
      "--stats on net.4.5.2 without -j and with -j 2: the same summary")
check(n1 <= 10, f"--stats on net.4.5.2 (4.7 MB) without -j: one thread ({n1} voluntary context switches; -j 2: {n2})")

# A -j N count whose tables pass their bound (ETW_STATS_MAX_KEYS, 1,000,000 keys: here
# 1,000,100 processes) is counted again on one thread, since which keys a bounded table lets
# in depends on the order: the summary is -j 1's.
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import etlwrite  # noqa: E402
import uuid  # noqa: E402

with tempfile.TemporaryDirectory() as tmp:
    many = os.path.join(tmp, "many_pids.etl")
    prov = uuid.UUID("11111111-2222-3333-4444-555555555555")
    etlwrite.write_etl(many, [{"provider": prov, "id": 1, "pid": 1000 + i, "tid": 7, "ts": i * 10}
                              for i in range(1_000_100)], cpus=2)
    ref = run("-j", "1", "--stats", "--no-progress", many)
    got = run("-j", "2", "--stats", "--no-progress", many)
    m = re.search(rb"^events\s+(\d+)", ref[1], re.M)  # the events and the log-file header
    check(ref[0] == 0 and m and int(m.group(1)) == 1_000_101 and got == ref,
          "--stats past ETW_STATS_MAX_KEYS processes: -j 2 gives -j 1's summary")

print(f"{passed} passed, {failed} failed")
sys.exit(1 if failed else 0)
