#!/usr/bin/env python3
"""End-to-end tests of etwdump's command-line conventions: getopt_long parsing
(attached values, '=', bundles, prefixes, '--', '-', typo suggestions, errors),
-H/--with-file, --time trace, the --since/--until forms, the --fields warning
and --split-by event.

usage: test_etwdump_options.py ETWDUMP DATA_DIR

Expected values come from outside etwdump: event times from the records
(tests/etlref.py, an independent reader), the header's time-zone bias from
the trace's bytes (etlref.timezone_bias) or from the synthetic traces
tests/etlwrite.py writes with a known bias, wall clocks from Python's
datetime, and per-kind counts from etwdump's plain JSON output (the split is
what is under test, not the decoding). Prints "N passed, N failed".
"""
import collections
import csv
import calendar
import datetime as dt
import json
import os
import shutil
import subprocess
import sys
import tempfile
import uuid

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import etlref  # noqa: E402
import etlwrite  # noqa: E402

ETWDUMP, DATA = os.path.abspath(sys.argv[1]), sys.argv[2]
passed = failed = 0
csv.field_size_limit(1 << 30)


def check(cond, what):
    global passed, failed
    if cond:
        passed += 1
    else:
        failed += 1
        print("FAIL: " + what, file=sys.stderr)


def run(*args, **kw):
    p = subprocess.run([ETWDUMP, *args], capture_output=True, timeout=300, **kw)
    return p.returncode, p.stdout.decode("utf-8"), p.stderr.decode("utf-8", "replace")


def events(*args, **kw):
    rc, out, err = run(*args, **kw)
    return rc, [json.loads(line) for line in out.splitlines()], err


def data(name):
    return os.path.join(DATA, name)


HTTP, PS, GC, NET = data("HTTP_Server.etl"), data("powershell.etl"), data("gcevents.etl"), data("net.4.5.2.x64.etl")
tmp = tempfile.mkdtemp(prefix="etwdump-options-")
EPOCH = dt.datetime(1601, 1, 1, tzinfo=dt.timezone.utc)


def ft_datetime(ft):
    return EPOCH + dt.timedelta(microseconds=ft // 10)


# --- getopt_long: the same run spelled every way ------------------------------------
rc, ref_csv, _ = run("--format", "csv", "-n", "3", PS)
check(rc == 0 and ref_csv.count("\n") == 4, "reference: --format csv -n 3 (header and 3 rows)")
for spelling in (["--format=csv", "-n3", PS], ["--form", "csv", "--max-events=3", PS], [PS, "--format", "csv", "-n", "3"],
                 ["-qn", "3", "--format=csv", PS], ["-qn3", PS, "--form=csv"], ["-j1", "--format", "csv", "-n", "3", PS],
                 ["-j", "2", "--format", "csv", "-n", "3", PS], ["--jobs=2", "--format", "csv", PS, "--max-ev", "3"]):
    rc, out, err = run(*spelling)
    check(rc == 0 and out == ref_csv, "%s: the same output as --format csv -n 3 (%d %s)" % (spelling, rc, err))

# '--' ends the options: a trace named like an option is an input
dash = os.path.join(tmp, "-x.etl")
shutil.copy(PS, dash)
rc, ref, _ = run("-n", "2", PS)
cwd_run = subprocess.run([ETWDUMP, "-n", "2", "--", "-x.etl"], capture_output=True, cwd=tmp)
check(cwd_run.returncode == 0 and cwd_run.stdout.decode() == ref, "-- then '-x.etl': read as an input")
cwd_run = subprocess.run([ETWDUMP, "-n", "2", "-x.etl"], capture_output=True, cwd=tmp)
check(cwd_run.returncode == 2 and b"unknown option '-x'" in cwd_run.stderr, "'-x.etl' without --: an option")
# '-': standard input
with open(PS, "rb") as f:
    rc, out, err = run("-n", "2", "-", stdin=f)
check(rc == 0 and out == ref, "'-' reads the trace from standard input")

# errors: exact messages, exit status 2
for args, msg in (
        (["--fromat", "csv", PS], "etwdump: unknown option '--fromat'; did you mean '--format'?"),
        (["--provdier", "x", PS], "etwdump: unknown option '--provdier'; did you mean '--provider'?"),
        (["--exlcude-pid", "4", PS], "etwdump: unknown option '--exlcude-pid'; did you mean '--exclude-pid'?"),
        (["--max-event=3", PS], None),  # a prefix: accepted
        (["--splitby", "event", PS], "etwdump: unknown option '--splitby'; did you mean '--split-by'?"),
        (["--xyzzy", PS], "etwdump: unknown option '--xyzzy' (see --help)"),
        (["--ma", PS], "etwdump: option '--ma' is ambiguous; possibilities: '--manifest' '--map' '--max-events'"),
        (["--ex", "x", PS], "etwdump: option '--ex' is ambiguous; possibilities: '--exclude-provider' "
         "'--exclude-event' '--exclude-id' '--exclude-pid' '--exclude-tid' '--exclude-keywords' "
         "'--exclude-errors' '--exclude-process'"),
        ([PS, "-j"], "etwdump: option '-j' needs a value"),
        ([PS, "--format"], "etwdump: option '--format' needs a value"),
        ([PS, "--form"], "etwdump: option '--format' needs a value"),
        (["--stats=yes", PS], "etwdump: option '--stats' takes no value"),
        (["-k", PS], "etwdump: unknown option '-k' (see --help)"),
        (["-j", "0", PS], "etwdump: --jobs needs a number from 1 to 256, not '0'"),
        (["--format", "yaml", PS], "etwdump: unknown format 'yaml' (known: json, text, csv, timesketch, xml, perfetto)"),
        (["--time", "mars", PS], "etwdump: unknown time form 'mars' (known: utc, relative, local, trace)")):
    rc, out, err = run(*args)
    if msg is None:
        check(rc == 0 and out.count("\n") == 3, "%s: accepted (%d %s)" % (args, rc, err))
    else:
        check(rc == 2 and err.strip() == msg, "%s: exit 2 and %r, got %d %r" % (args, msg, rc, err.strip()))

# the selection options keep their library keys: a value and its --exclude- form split the events
n_all = len(events(PS)[1])
n_k = len(events("--provider", "Windows Kernel", PS)[1])
n_x = len(events("--exclude-provider=Windows Kernel", PS)[1])
check(n_k > 0 and n_x > 0 and n_k + n_x == n_all, "--provider / --exclude-provider=: %d + %d = %d" % (n_k, n_x, n_all))

# --- -H: "file" on every event of one input -------------------------------------
rc, evs, err = events("-H", PS)
check(rc == 0 and len(evs) == n_all and all(e.get("file") == PS for e in evs), "-H: every event says its file")
rc, evs, err = events(PS)
check("file" not in evs[0], "without -H one input has no \"file\"")
rc, evs, err = events("--with-file", "-j", "2", PS)
check(len(evs) == n_all and all(e.get("file") == PS for e in evs), "--with-file -j 2: every event says its file")
rc, out, err = run("-H", "--format", "csv", "-n", "2", PS)
rows = list(csv.reader(out.splitlines()))
check(rows[0][1] == "file" and all(r[1] == PS for r in rows[1:]), "-H --format csv: the file column")
rc, out, err = run("-H", "--format", "text", "-n", "2", PS)
check(all((" file=%s " % PS) in line for line in out.splitlines()), "-H --format text: file=")

# --- --time trace ----------------------------------------------------------------
START = 132000000000000000  # etlwrite's default session start


def synthetic(name, bias, ts):
    path = os.path.join(tmp, name)
    etlwrite.write_etl(path, [dict(provider=uuid.UUID(int=7), id=1, ts=t) for t in ts], timezone_bias=bias)
    return path


def offset_text(minutes_east):
    sign = "+" if minutes_east >= 0 else "-"
    return "%s%02d:%02d" % (sign, abs(minutes_east) // 60, abs(minutes_east) % 60)


for bias in (420, -330, 0, -60, 480):
    path = synthetic("tz%d.etl" % bias, bias, [10000000, 20000005])
    check(etlref.timezone_bias(path) == bias, "etlwrite wrote bias %d" % bias)
    rc, evs, err = events("--time", "trace", path)
    want = []
    for ft in (START, START + 10000000, START + 20000005):
        local = ft_datetime(ft).astimezone(dt.timezone(dt.timedelta(minutes=-bias)))
        want.append(local.strftime("%Y-%m-%dT%H:%M:%S.") + "%07d" % (ft % 10**7) + offset_text(-bias))
    got = [e["time"] for e in evs]
    check(rc == 0 and got == want, "--time trace, bias %d: %s, expected %s" % (bias, got, want))
check(want[0].endswith("-08:00"), "bias 480 is UTC-08:00")
# by hand: the session start 132000000000000000 is 2019-04-17T18:40:00Z
check(events("--time", "trace", synthetic("tz420b.etl", 420, [0]))[1][0]["time"] == "2019-04-17T11:40:00.0000000-07:00",
      "bias 420: 2019-04-17T18:40:00Z is 11:40 at -07:00")
check(events("--time", "trace", synthetic("tz330b.etl", -330, [0]))[1][0]["time"] == "2019-04-18T00:10:00.0000000+05:30",
      "bias -330: 2019-04-17T18:40:00Z is 00:10 the next day at +05:30")
# several inputs: each event its own file's bias (both -j 1 and -j 2)
a = synthetic("tzA.etl", 420, [10, 30])
b = synthetic("tzB.etl", -120, [20, 40])
for jobs in ("1", "2"):
    rc, evs, err = events("--time", "trace", "-j", jobs, a, b)
    ok = len(evs) == 6
    for e in evs:
        ok = ok and e["time"].endswith("-07:00" if e["file"] == a else "+02:00")
    check(rc == 0 and ok, "-j %s, two files: each event in its file's zone: %s" % (jobs, [e["time"] for e in evs]))
# a real trace: every event's offset is the header's time zone at that instant (read from the
# bytes), the instant unchanged. Daylight saving time as TIME_ZONE_INFORMATION's documentation
# gives it: month 0 = none; wYear 0 = the wDay-th wDayOfWeek (5 = last) of wMonth at wHour:wMinute,
# DaylightDate in standard time, StandardDate in daylight time.
def transition(date, year):
    _, month, dow, nth, hour, minute, sec, _ = date
    days = calendar.monthrange(year, month)[1]
    sundays_first = [d for d in range(1, days + 1) if (dt.date(year, month, d).weekday() + 1) % 7 == dow]
    day = sundays_first[min(nth, len(sundays_first)) - 1]
    return dt.datetime(year, month, day, hour, minute, sec)


def zone_offset(tz, utc):
    """Minutes east of UTC of the zone tz (etlref.time_zone) at the naive UTC datetime utc."""
    bias, std_date, std_bias, dl_date, dl_bias = tz
    if not std_date[1] or not dl_date[1]:
        return -(bias + std_bias)
    year = (utc - dt.timedelta(minutes=bias + std_bias)).year
    start = transition(dl_date, year) + dt.timedelta(minutes=bias + std_bias)
    end = transition(std_date, year) + dt.timedelta(minutes=bias + dl_bias)
    dst = start <= utc < end if start < end else (utc >= start or utc < end)
    return -(bias + (dl_bias if dst else std_bias))


offsets_seen = set()
for trace in (HTTP, PS, data("lxcore_kernel.etl"), data("AMSITrace.etl"), data("net.4.5.2.x64.etl"),
              data("gcevents.etl")):
    tz = etlref.time_zone(trace)
    _, utc, _ = events(trace)
    rc, loc, err = events("--time", "trace", trace)
    ok = rc in (0, 1) and len(loc) == len(utc) > 0
    for u, l in zip(utc, loc):
        tu = dt.datetime.fromisoformat(u["time"][:26] + "+00:00")
        tl = dt.datetime.fromisoformat(l["time"][:26] + l["time"][27:])
        want = offset_text(zone_offset(tz, tu.replace(tzinfo=None)))
        offsets_seen.add((os.path.basename(trace), want))
        ok = ok and l["time"].endswith(want) and tu == tl and u["time"][20:27] == l["time"][20:27]
    check(ok, "%s --time trace: the header's zone %r" % (os.path.basename(trace), tz))
# the traces recorded in daylight time show it: net.4.5.2 in July in Pacific time, gcevents the day
# after the 2023 change (March 12), powershell.etl in US Eastern in late March
check({("net.4.5.2.x64.etl", "-07:00"), ("gcevents.etl", "-07:00"), ("powershell.etl", "-04:00"),
       ("HTTP_Server.etl", "-08:00")} <= offsets_seen, "daylight time applied: %r" % sorted(offsets_seen))
rc, out, err = run("--time", "trace", "--format", "text", "-n", "1", HTTP)
check(out.startswith("2011-01-23T14:06:37.4768585-08:00 "), "text --time trace: %r" % out[:40])

# --- --since / --until forms --------------------------------------------------
recs = etlref.records(HTTP)
start, freq, clock, raw0 = etlref.logfile(HTTP)
rel = sorted((r.raw - raw0) / freq for r in recs)
fts = sorted(start + (r.raw - raw0) * 10**7 // freq for r in recs)
rc, full, _ = events(HTTP)
check(len(full) == len(recs), "HTTP_Server: the reference reader's records are the events")


def first_last(evs):
    return (evs[0]["time"], evs[-1]["time"]) if evs else None


def rfc(ft):
    return ft_datetime(ft).strftime("%Y-%m-%dT%H:%M:%S.") + "%07d" % (ft % 10**7) + "Z"


def expect_range(opts, lo, hi, what):
    """The events selected by opts: those with lo <= relative seconds < hi (by the records), and the
    first and last times those records give (within a microsecond: the conversion rounds)."""
    want = [i for i, t in enumerate(rel) if lo <= t < hi]
    rc, evs, err = events(*opts, HTTP)
    ok = rc in (0, 1) and len(evs) == len(want)
    if ok and want:
        for got, ft in ((evs[0]["time"], fts[want[0]]), (evs[-1]["time"], fts[want[-1]])):
            g = dt.datetime.fromisoformat(got[:26] + "+00:00")
            ok = ok and abs((g - ft_datetime(ft)).total_seconds()) <= 1e-6
    check(ok, "%s %s: %d events, the records say %d; first/last %s vs %s" % (
        what, opts, len(evs), len(want), first_last(evs), (rfc(fts[want[0]]), rfc(fts[want[-1]])) if want else None))


# a gap of over 2 ms between two events, for bounds in ms
gap = next(i for i in range(300, len(rel) - 1) if rel[i + 1] - rel[i] > 0.004)
ms = int(rel[gap] * 1000) + 2  # strictly between rel[gap] and rel[gap + 1]
check(rel[gap] < ms / 1000 < rel[gap + 1], "a millisecond bound between two events")
for form, secs in (("%dms" % ms, ms / 1000), ("+%dms" % ms, ms / 1000), ("%dus" % (ms * 1000), ms / 1000),
                   ("%.3fs" % (ms / 1000), ms / 1000), ("%.3f" % (ms / 1000), ms / 1000),
                   ("%dns" % (ms * 1000000), ms / 1000)):
    expect_range(["--since", form], secs, 1e18, "--since duration")
    expect_range(["--until", form], -1, secs, "--until duration")
# minutes: the trace lasts about 1 min 50 s
expect_range(["--since", "1m"], 60, 1e18, "--since minutes")
expect_range(["--since", "0.5m", "--until", "1.5m"], 30, 90, "minutes, fractional")
expect_range(["--since", "1.5s", "--until", "2m"], 1.5, 120, "seconds to minutes")
# absolute: a whole second after an event, with a space, with and without a zone
sec_ft = (fts[gap] // 10**7 + 1) * 10**7
sec_rel = (sec_ft - start) / 1e7
wall = ft_datetime(sec_ft)
for form in (wall.strftime("%Y-%m-%d %H:%M:%S"), wall.strftime("%Y-%m-%d %H:%M:%S") + "Z",
             wall.strftime("%Y-%m-%d %H:%M:%S.0000"),
             wall.astimezone(dt.timezone(dt.timedelta(hours=-8))).strftime("%Y-%m-%d %H:%M:%S-08:00"),
             wall.astimezone(dt.timezone(dt.timedelta(hours=5, minutes=30))).strftime("%Y-%m-%d %H:%M:%S +05:30"),
             wall.strftime("%Y-%m-%dT%H:%M:%SZ")):
    want = sum(1 for f in fts if f >= sec_ft)
    rc, evs, err = events("--since", form, HTTP)
    check(len(evs) == want and evs and abs((dt.datetime.fromisoformat(evs[0]["time"][:26] + "+00:00")
                                              - ft_datetime(min(f for f in fts if f >= sec_ft))).total_seconds()) <= 1e-6,
          "--since %r: %d events, the records say %d" % (form, len(evs), want))
    expect_range(["--until", form], -1, sec_rel, "--until absolute")
# a date alone: its midnight UTC (the trace is on 2011-01-23 UTC)
day = ft_datetime(fts[0]).date()
check(ft_datetime(fts[-1]).date() == day, "HTTP_Server lies within one UTC day")
nxt = day + dt.timedelta(days=1)
expect_range(["--since", day.isoformat()], -1, 1e18, "--since the day")
expect_range(["--until", day.isoformat()], -1, -1, "--until the day (midnight, before the trace)")
expect_range(["--since", nxt.isoformat()], 1e18, 1e18, "--since the next day")
expect_range(["--until", nxt.isoformat()], -1, 1e18, "--until the next day")
for bad in ("3x", "2020-07-29 ", "2020-07-29T00:07:03", "1 s", "-3s", "3S"):
    rc, out, err = run("--since", bad, HTTP)
    check(rc == 2 and "--since" in err, "--since %r: refused (%d %r)" % (bad, rc, err.strip()))

# --- --fields: a name no selected event has --------------------------------------
names = set()
for e in events(GC)[1]:
    names |= set((e.get("fields") or {}).keys())
check("AllocationAmount" in names and "Foo" not in names, "gcevents has AllocationAmount, not Foo")
for jobs in ("1", "2"):
    for fmt in ("json", "csv"):
        rc, out, err = run("--fields", "AllocationAmount,Foo,AlocationAmount", "-j", jobs, "--format", fmt, GC)
        lines = [l for l in err.splitlines() if "--fields" in l]
        check(rc == 0 and len(lines) == 2 and lines[0] == "etwdump: --fields 'Foo' matched no field of the selected events"
              and lines[1].startswith("etwdump: --fields 'AlocationAmount' matched no field of the selected events; "
                                      "field names seen include: AllocationAmount, "),
            "-j %s --format %s: the --fields warnings: %r (exit %d)" % (jobs, fmt, lines, rc))
rc, out, err = run("--fields", "AllocationAmount", GC)
check(rc == 0 and "--fields" not in err, "a --fields name that matched: no warning")
# a name present only outside the selection is unmatched
rc, out, err = run("--fields", "AllocationAmount", "--event", "GC/Start", GC)
check("--fields 'AllocationAmount' matched no field" in err, "a name only the unselected events have: warned")
rc, out, err = run("-q", "--fields", "Foo", GC)
check("--fields" not in err, "--quiet: no warning")

# --- --split-by event -----------------------------------------------------------
schemas = json.loads(run("--schemas", NET)[1])["schemas"]
by_kind = collections.defaultdict(list)  # (provider, event) -> the field names of its schemas
for s in schemas:
    names = by_kind[(s["provider"], s["event"])]
    for f in s["fields"]:
        if f["name"] not in names:
            names.append(f["name"])
FIXED = {"time", "file", "provider", "provider_guid", "event", "id", "version", "level", "opcode", "task",
         "channel", "keywords", "pid", "process", "tid", "cpu", "data_len", "activity_id", "related_activity_id",
         "container_id", "message", "error", "raw"}


def kinds_of(trace, *opts):
    """(provider, event) -> [count, JSON field names in order] from the plain JSON output."""
    k = collections.OrderedDict()
    for e in events(*opts, trace)[1]:
        d = k.setdefault((e["provider"], e["event"]), [0, []])
        d[0] += 1
        for f in e.get("fields") or {}:
            if f not in d[1]:
                d[1].append(f)
    return k


for trace in (NET, HTTP, GC):
    kinds = kinds_of(trace)
    for jobs in ("1", "2"):
        out_dir = os.path.join(tmp, "split-%s-%s" % (os.path.basename(trace), jobs), "sub")
        rc, out, err = run("--split-by", "event", "-o", out_dir, "--format", "csv", "-j", jobs, trace)
        files = sorted(os.listdir(out_dir)) if os.path.isdir(out_dir) else []
        check(rc in (0, 1) and out == "" and len(files) == len(kinds),
              "%s -j %s: one file per kind: %d files, %d kinds (%d %s)" % (trace, jobs, len(files), len(kinds), rc, err[:200]))
        bad = []
        for fn in files:
            check(not any(c in fn for c in "/\\:") and fn.endswith(".csv"), "a safe file name: %r" % fn)
            rows = list(csv.reader(open(os.path.join(out_dir, fn), newline="", encoding="utf-8")))
            key = (rows[1][rows[0].index("provider")], rows[1][rows[0].index("event")])
            n, json_names = kinds[key]
            header = rows[0][rows[0].index("error") + 1:]
            header = [h[7:] if h.startswith("fields.") and h[7:] in FIXED else h for h in header]
            # the columns: the kind's schema field names (--schemas); kinds without schema
            # fields there (the log-file header, EventSource manifest chunks, unknown events)
            # have their JSON fields
            want = (by_kind.get(key) or json_names) if trace == NET else json_names
            if len(rows) - 1 != n or (header != want and not (key in by_kind and set(header) == set(want))) \
                    or any(r[rows[0].index("event")] != key[1] for r in rows[1:]):
                bad.append((fn, len(rows) - 1, n, header[:6], want[:6]))
            # the file is named after its kind
            safe = "".join("_" if c in '/\\:*?"<>|' or ord(c) < 32 else c for c in "%s-%s" % key)
            if not (fn == safe + ".csv" or fn.startswith(safe + "-")):
                bad.append(("name", fn, safe))
        check(not bad, "%s -j %s: per-file rows and columns: %s" % (trace, jobs, bad[:3]))
# the row order within a file is the trace's order (net.4.5.2 has 169 kinds: files are closed and reopened)
out_dir = os.path.join(tmp, "split-order")
run("--split-by", "event", "-o", out_dir, "--format", "json", "-j", "2", NET)
want = collections.defaultdict(list)
for e in events(NET)[1]:
    want[(e["provider"], e["event"])].append(e)
ok = len(os.listdir(out_dir)) == len(want) > 64
for fn in os.listdir(out_dir):
    lines = [json.loads(l) for l in open(os.path.join(out_dir, fn), encoding="utf-8")]
    ok = ok and lines == want[(lines[0]["provider"], lines[0]["event"])] and fn.endswith(".jsonl")
check(ok, "--split-by event --format json: each file holds its kind's events in the trace's order")
# with -n: the first N events only
out_dir = os.path.join(tmp, "split-n")
run("--split-by", "event", "-o", out_dir, "-n", "100", "--format", "text", NET)
total = sum(sum(1 for _ in open(os.path.join(out_dir, fn), encoding="utf-8")) for fn in os.listdir(out_dir))
check(total == 100, "--split-by -n 100 --format text: 100 lines in all (%d)" % total)
# usage errors
for args, msg in ((["--split-by", "event", NET], "etwdump: --split-by event needs -o DIR, the directory of the files"),
                  (["--split-by", "kind", "-o", tmp, NET], "etwdump: unknown --split-by 'kind' (known: event)"),
                  (["--split-by", "event", "-o", tmp, "--stats", NET],
                   "etwdump: --split-by writes the events into files by kind: not with --stats"),
                  (["--split-by", "event", "-o", dash, NET], "etwdump: --split-by: %s is not a directory" % dash)):
    rc, out, err = run(*args)
    check(rc == 2 and err.strip() == msg, "%s: %r, got %d %r" % (args, msg, rc, err.strip()))

shutil.rmtree(tmp, ignore_errors=True)
print("%d passed, %d failed" % (passed, failed))
sys.exit(1 if failed else 0)
