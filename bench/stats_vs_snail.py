#!/usr/bin/env python3
r"""CPU of `etwdump --stats` against the summary of a peer, snail-tool-etl.

Usage:
    python3 bench/stats_vs_snail.py --snail /work/peers/snail/build/snail-tool-etl \
        [--etwdump build/etwdump] [--runs 7] [--jobs N] [--repeat N] [--data tests/data]

What it measures. For each trace, both tools run interleaved (etwdump,
snail, etwdump, snail, ...) --runs times (at least 7); every run's CPU is
the user + system time of the child process as the kernel accounted it
(os.wait4, i.e. getrusage of that child), its wall time from
time.perf_counter. It prints the median CPU and wall of each tool and the
ratio of the medians (etwdump / snail). Both tools write to /dev/null.

    etwdump --stats --no-progress TRACE     (the default -j: every thread's
                                             CPU is counted; --jobs N adds -j N)
    snail-tool-etl --summary --no-progress TRACE

The traces:

(a) "kernel trace x10": tests/data/ShutdownPerfDiagLogger.etl (the same
    file as /work/shared/data/etl/etl-parser/ShutdownPerfDiagLogger.etl, a
    kernel - NT Kernel Logger, MOF - trace of 17,078 events, 3 MiB) made ten
    times the size as bench/jobs.py and bench_trace.c make it: its first
    buffer (the log-file header), then all its other buffers ten times
    (31.5 MB, 481 buffers, 170,753 events, written to /tmp and removed at
    the end), and its header's BuffersWritten set to 481 (snail-tool-etl
    stops after the header's count of buffers; etwdump reads on to the
    end of the file, so it shows the same summary either way). One
    run of either tool on the file itself takes a few tens of milliseconds,
    most of it starting the process; --repeat N instead runs the tools N
    times back to back on the original file per sample (sums of CPU and
    wall), which measures the start-up too.
(b) tests/data/net.4.5.2.x64.etl (PerfView's test trace, 4.7 MiB, LZ77
    Xpress-compressed buffers, kernel and CLR providers, with stacks), one
    run per sample.

The floors. When build/bench_floor exists (bench/bench_floor.c; --floor
PATH), three more processes run interleaved with the tools on each trace:
"floor: read" starts and reads every byte of the file, "floor: events"
starts and takes every event from the library's reader (decompressed,
parsed, merged; no schema, no name, no count), "floor: names" also finds
each event's schema with a decoder (what naming the events costs; no
count, process, payload check or stack). Each is printed as a multiple of
snail's CPU too: what is left between a floor and a target is all a
summary may spend on what that floor does not do.

What the two print. snail-tool-etl --summary: the file header (times,
clock, pointer size, processors, buffers, log-file mode, compression), the
number of profile samples (and PMC samples) and stacks, then for the event
kinds it knows ("Supported Events") and those it does not ("Unsupported
Events"), one line per (kernel group or GUID, type, version) with its
count. etwdump --stats: the files (session, OS, clock, time range,
buffers, events by header form), then count, first and last time and
payload bytes by provider GUID, by provider name, by provider/event name,
by process (pid and image name), the lost events and the decode errors by
kind, and for a trace with stacks the CPU samples by module and function.
etwdump names every event (manifests, MOF classes, TraceLogging), snail
counts unknown kinds by their numbers.

How to get and build the peer (Debian 12 bookworm; what the numbers in
CHANGELOG.md were measured with):

    repository  https://github.com/albertziegenhagel/snail-server
    commit      71b01259fff9e1ef347a77a7c77d90e35699e1b4 (2025-07-01,
                "Merge pull request #77 from albertziegenhagel/process-stats")
    packages    apt-get install -y clang-16 libc++-16-dev libc++abi-16-dev \
                    libutfcpp-dev cmake
    source      git clone https://github.com/albertziegenhagel/snail-server \
                    /work/peers/snail/src
                git -C /work/peers/snail/src checkout 71b01259fff9e1ef347a77a7c77d90e35699e1b4

The project's own CMakeLists.txt wants LLVM, nlohmann_json, libzippp, curl
and node for the server, the analysis and the tests; snail-tool-etl needs
none of them (only its `common` and `etl` libraries and utf8cpp), so build
it with a small CMakeLists.txt of its own in /work/peers/snail (next to
src/) that compiles exactly the files the peer's snail/common,
snail/etl and tools CMakeLists.txt list for those three targets, with the
peer's cmake/compile_options.cmake (C++23):

    cmake_minimum_required(VERSION 3.25)
    project(snail_tool_etl_only LANGUAGES CXX C)
    set(S "${CMAKE_CURRENT_SOURCE_DIR}/src")
    find_package(utf8cpp CONFIG REQUIRED)     # Debian names the target utf8cpp
    add_library(utf8cpp::utf8cpp INTERFACE IMPORTED)
    target_link_libraries(utf8cpp::utf8cpp INTERFACE utf8cpp)
    target_include_directories(utf8cpp::utf8cpp INTERFACE /usr/include)
    set(CMAKE_CXX_EXTENSIONS OFF)
    include("${S}/cmake/compile_options.cmake")
    add_library(common STATIC ${S}/snail/common/filename.cpp ${S}/snail/common/guid.cpp
      ${S}/snail/common/path.cpp ${S}/snail/common/string_compare.cpp
      ${S}/snail/common/system.cpp ${S}/snail/common/thread.cpp
      ${S}/snail/common/thread_pool.cpp ${S}/snail/common/trim.cpp
      ${S}/snail/common/wildcard.cpp ${S}/snail/common/ms_xca_decompression.cpp
      ${S}/snail/common/progress.cpp)
    target_link_libraries(common PRIVATE compile_options utf8cpp::utf8cpp)
    target_include_directories(common PUBLIC ${S})
    add_library(etl STATIC ${S}/snail/etl/etl_file.cpp ${S}/snail/etl/dispatching_event_observer.cpp)
    target_link_libraries(etl PRIVATE compile_options PUBLIC common)
    add_executable(snail_tool_etl ${S}/tools/etl_file.cpp ${S}/tools/common/progress_printer.cpp)
    target_link_libraries(snail_tool_etl PRIVATE compile_options etl utf8cpp::utf8cpp)
    set_target_properties(snail_tool_etl PROPERTIES OUTPUT_NAME "snail-tool-etl")

libc++ 16 has std::format only behind -fexperimental-library and no
std::formatter for std::chrono::time_point (libc++ 17 has), which
tools/etl_file.cpp uses for the two header times it prints first; print
those as their tick counts instead (the only change to the peer's source;
nothing its --summary counts depends on it):

    sed -i '456,457s/file\.header()\.\(start_time\|end_time\))/file.header().\1.time_since_epoch().count())/' \
        /work/peers/snail/src/tools/etl_file.cpp

and then

    cd /work/peers/snail
    CC=clang-16 CXX=clang++-16 CXXFLAGS='-stdlib=libc++ -fexperimental-library' \
        LDFLAGS='-stdlib=libc++ -fexperimental-library' \
        cmake -S . -B build -DCMAKE_BUILD_TYPE=Release
    cmake --build build -j2 --target snail_tool_etl

which gives /work/peers/snail/build/snail-tool-etl (-O3 -DNDEBUG, libc++).

This is a benchmark, not a test: ctest does not run it.
"""
import argparse
import os
import statistics
import subprocess
import sys
import time


# TRACE_LOGFILE_HEADER.BuffersWritten in the first buffer: after the
# WMI_BUFFER_HEADER (0x48) and the header record's SYSTEM_TRACE_HEADER
# (0x20), at +0x24 (docs/FORMATS.md sections 1.1, 1.8)
BUFFERS_WRITTEN = 0x48 + 0x20 + 0x24


def repeated(src, dst, times):
    """src's first buffer, then the rest of src `times` times (a buffer's
    on-disk size is its first u32: docs/FORMATS.md section 1), with the
    header's BuffersWritten made the new count: snail-tool-etl reads that
    many buffers and no more (etwdump reads to the end of the file)."""
    with open(src, "rb") as f:
        d = bytearray(f.read())
    first = int.from_bytes(d[:4], "little")
    written = int.from_bytes(d[BUFFERS_WRITTEN:BUFFERS_WRITTEN + 4], "little")
    d[BUFFERS_WRITTEN:BUFFERS_WRITTEN + 4] = (1 + (written - 1) * times).to_bytes(4, "little")
    with open(dst, "wb") as o:
        o.write(d[:first])
        for _ in range(times):
            o.write(d[first:])


def run_once(argv):
    """(cpu seconds, wall seconds) of one run of argv, output to /dev/null."""
    t0 = time.perf_counter()
    p = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _, status, ru = os.wait4(p.pid, 0)
    wall = time.perf_counter() - t0
    p.returncode = os.waitstatus_to_exitcode(status)  # reaped here: Popen must not wait again
    if p.returncode not in (0, 2):  # etwdump: 2 = a problem in the trace told and skipped
        raise SystemExit("%s exited with %d" % (" ".join(argv), p.returncode))
    return ru.ru_utime + ru.ru_stime, wall


def sample(argv, repeat):
    cpu = wall = 0.0
    for _ in range(repeat):
        c, w = run_once(argv)
        cpu += c
        wall += w
    return cpu, wall


def bench(name, ours, peer, runs, repeat, floors=()):
    tools = [("etwdump", ours), ("snail", peer)] + list(floors)
    for _, argv in tools:
        sample(argv, 1)  # warm the page cache and the binaries
    res = {t: ([], []) for t, _ in tools}
    for _ in range(runs):
        for tool, argv in tools:
            c, w = sample(argv, repeat)
            res[tool][0].append(c)
            res[tool][1].append(w)
    med = {t: (statistics.median(v[0]), statistics.median(v[1])) for t, v in res.items()}
    times = " x%d" % repeat if repeat > 1 else ""
    print("%s%s (%d runs each, interleaved; median)" % (name, times, runs))
    for tool, _ in tools:
        c, w = med[tool]
        spread = "%.1f..%.1f" % (min(res[tool][0]) * 1e3, max(res[tool][0]) * 1e3)
        print("  %-13s cpu %7.2f ms (%s)  wall %7.2f ms  %5.2fx snail" % (tool, c * 1e3, spread, w * 1e3,
                                                                         c / med["snail"][0] if med["snail"][0] else 0))
    ratio = med["etwdump"][0] / med["snail"][0] if med["snail"][0] > 0 else float("inf")
    print("  ratio    cpu %.2fx  wall %.2fx" % (ratio, med["etwdump"][1] / med["snail"][1]))
    return ratio


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    root = os.path.dirname(here)
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--snail", required=True, help="path of a built snail-tool-etl")
    ap.add_argument("--etwdump", default=os.path.join(root, "build", "etwdump"))
    ap.add_argument("--data", default=os.path.join(root, "tests", "data"))
    ap.add_argument("--runs", type=int, default=7, help="samples per tool and trace (>= 7)")
    ap.add_argument("--repeat", type=int, default=0,
                    help="the kernel trace: N runs on the original file per sample instead of its x10 copy")
    ap.add_argument("--jobs", type=int, default=0, help="etwdump -j N (default: etwdump's default)")
    ap.add_argument("--floor", default=os.path.join(root, "build", "bench_floor"),
                    help="bench_floor (bench/bench_floor.c), timed too when it exists")
    a = ap.parse_args()
    if a.runs < 7:
        ap.error("--runs: at least 7")
    kernel = os.path.join(a.data, "ShutdownPerfDiagLogger.etl")
    k10 = "/tmp/etwdecode-bench-stats-kernel10.etl"
    if a.repeat:
        traces = [("kernel trace ShutdownPerfDiagLogger.etl", kernel, a.repeat)]
    else:
        repeated(kernel, k10, 10)
        traces = [("kernel trace x10 (31.5 MB)", k10, 1)]
    traces.append(("net.4.5.2.x64.etl", os.path.join(a.data, "net.4.5.2.x64.etl"), 1))
    ours_opts = ["--stats", "--no-progress"] + (["-j", str(a.jobs)] if a.jobs else [])
    print("etwdump %s   vs   %s --summary --no-progress" % (" ".join(ours_opts), a.snail))
    print("load average %.2f %.2f %.2f" % os.getloadavg())
    worst = 0.0
    try:
        for name, path, repeat in traces:
            floors = []
            if os.path.exists(a.floor):
                floors = [("floor: read", [a.floor, "read", path]), ("floor: events", [a.floor, "events", path]),
                          ("floor: names", [a.floor, "names", path])]
            r = bench(name, [a.etwdump] + ours_opts + [path], [a.snail, "--summary", "--no-progress", path],
                      a.runs, repeat, floors)
            worst = max(worst, r)
    finally:
        if os.path.exists(k10):
            os.unlink(k10)
    print("worst cpu ratio %.2fx (target <= 0.50x)" % worst)
    return 0


if __name__ == "__main__":
    sys.exit(main())
