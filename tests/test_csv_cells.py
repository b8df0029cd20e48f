"""CSV against the JSON lines of the same events, cell by cell (docs: etw_render.h, etwdump.1).

The reference is our JSON output parsed with the standard json module, never
the CSV code: for every event, each top-level JSON key (fixed keys and
"fields" members) must sit in its column with the documented cell form -
strings unescaped, numbers as written in JSON, true/false, null empty,
structs and arrays as compact JSON text - and every other column must be
empty. The header must be the fixed columns, then one column per field name
in order of first appearance (fields named like a fixed column as
"fields.NAME"). The CSV is read with the csv module (RFC 4180), strictly as
UTF-8, with the line ends checked byte by byte. Also: a generated trace whose
TraceLogging field name and string value hold an invalid UTF-8 byte gives
valid UTF-8 CSV with U+FFFD where the JSON has it.

usage: test_csv_cells.py ETWDUMP DATA_DIR
"""
import csv
import io
import json
import os
import subprocess
import struct
import sys
import tempfile
import uuid

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import etlwrite  # noqa: E402

ETWDUMP, DATA = sys.argv[1], sys.argv[2]
csv.field_size_limit(1 << 30)
failures = 0


def check(cond, what):
    global failures
    if not cond:
        failures += 1
        print("FAIL: " + what)


def run(*args):
    p = subprocess.run([ETWDUMP] + list(args), stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=600)
    if p.returncode not in (0, 1):
        sys.exit("etwdump %s: exit %d: %s" % (" ".join(args), p.returncode, p.stderr.decode("utf-8", "replace")))
    return p.stdout


FIXED = ["time", "file", "provider", "provider_guid", "event", "id", "version", "level", "opcode", "task",
         "channel", "keywords", "pid", "process", "tid", "cpu", "data_len", "activity_id", "related_activity_id",
         "container_id", "message", "error", "raw"]


class Num(str):
    """A JSON number, kept as its text."""


def compact(v):
    """Compact JSON text of a parsed value (numbers as they were written)."""
    if isinstance(v, Num):
        return str(v)
    if isinstance(v, dict):
        return "{" + ",".join(json.dumps(k, ensure_ascii=False) + ":" + compact(x) for k, x in v.items()) + "}"
    if isinstance(v, list):
        return "[" + ",".join(compact(x) for x in v) + "]"
    return json.dumps(v, ensure_ascii=False)


def cell(v):
    if v is None:
        return ""
    if v is True:
        return "true"
    if v is False:
        return "false"
    if isinstance(v, Num):
        return str(v)
    if isinstance(v, str):
        return v
    return compact(v)


def same_json(text, v):
    """A struct or array cell: its JSON text parses to the same value."""
    try:
        return json.loads(text, parse_float=Num, parse_int=Num) == v
    except ValueError:
        return False


def check_trace(path, opts, label):
    lines = run("-j", "1", *opts, path).decode("utf-8").splitlines()
    evs = [json.loads(ln, parse_float=Num, parse_int=Num) for ln in lines]
    raw = run("--format", "csv", *opts, path)
    text = raw.decode("utf-8")  # strict: must be valid UTF-8
    eol = "\n" if "--csv-eol" in opts else "\r\n"
    rows = list(csv.reader(io.StringIO(text, newline="")))
    header, body = rows[0], rows[1:]
    check(text.startswith(",".join(header) if not any(c in h for h in header for c in ",\"\r\n") else "")
          and text.split(eol, 1)[0].count(",") >= len(header) - 1, "%s: header line" % label)
    # every record ends with the chosen line end (a bare LF only inside quotes)
    check(text.endswith(eol) and (eol == "\n" or text.count("\r\n") >= len(rows)), "%s: line ends" % label)
    check(len(body) == len(evs), "%s: %d rows for %d JSON lines" % (label, len(body), len(evs)))
    fixed = [k for k in FIXED if k in header]
    check(header[:len(fixed)] == fixed, "%s: the fixed columns first: %r" % (label, header[:len(fixed)]))
    names = header[len(fixed):]
    field = [n[7:] if n.startswith("fields.") and n[7:] in FIXED else n for n in names]
    check(len(set(field)) == len(field), "%s: one column per field name" % label)
    col = {n: i for i, n in enumerate(field)}
    seen, order_ok = [], True
    bad = []
    for i, (row, e) in enumerate(zip(body, evs)):
        if len(row) != len(header):
            bad.append((i, "width", len(row)))
            continue
        for k in fixed:
            want = "" if k not in e else (e[k] if k == "time" else cell(e[k]))
            got = row[header.index(k)]
            if got != want:
                bad.append((i, k, got[:60], want[:60]))
        f = e.get("fields", {})
        for k, v in f.items():
            if k not in col:
                # documented: the columns are the schemas' property names; the
                # drive form added after an NT path is not one
                if not k.endswith("_drive"):
                    bad.append((i, "no column", k))
                continue
            if k not in seen:
                if seen and col[k] < max(col[s] for s in seen):
                    order_ok = False
                seen.append(k)
            got = row[len(fixed) + col[k]]
            ok = got == cell(v) if not isinstance(v, (dict, list)) else same_json(got, v)
            if not ok:
                bad.append((i, k, got[:60], cell(v)[:60]))
        for k, c in col.items():
            if k not in f and row[len(fixed) + c] != "":
                bad.append((i, "not in the event", k, row[len(fixed) + c][:60]))
    check(not bad, "%s: %d cells differ from the JSON, first %r" % (label, len(bad), bad[:3]))
    check(order_ok, "%s: field columns in order of first appearance" % label)
    return len(body)


def data(name):
    return os.path.join(DATA, name)


total = 0
for name, opts in [("HTTP_Server.etl", []), ("AMSITrace.etl", ["--csv-eol", "lf"]), ("gcevents.etl", ["-H"]),
                   ("powershell.etl", ["--raw", "--messages"]), ("BondEtwSample.etl", []),
                   ("BondEtwSample.etl", ["--no-manifest-events"]), ("SelfDescribingSingleEvent.etl", []),
                   ("primitive-types.etl", ["--time", "relative"]), ("lxcore_kernel.etl", []),
                   ("net.4.5.2.x64.etl", ["-n", "3000"]), ("ShutdownPerfDiagLogger.etl", ["-n", "2000"])]:
    total += check_trace(data(name), opts, "%s %s" % (name, " ".join(opts)))
# -j 2 gives the bytes of -j 1
for name in ("gcevents.etl", "net.4.5.2.x64.etl"):
    a = run("--format", "csv", "-j", "1", data(name))
    b = run("--format", "csv", "-j", "2", data(name))
    check(a == b, "%s: CSV with -j 2 is CSV with -j 1" % name)


def run_stdin(path, *args):
    with open(path, "rb") as f:
        p = subprocess.run([ETWDUMP] + list(args) + ["-"], stdin=f, stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, timeout=600)
    if p.returncode not in (0, 1):
        sys.exit("etwdump %s -: exit %d: %s" % (" ".join(args), p.returncode, p.stderr.decode("utf-8", "replace")))
    return p.stdout, p.stderr


# Without --fields the columns are learned by a first pass when every input
# is a file (the header, then the rows as they come); from a stream the rows
# wait in a spill until the header. Same bytes, on standard output and
# standard error (the first pass is quiet).
for name, opts in [("net.4.5.2.x64.etl", []), ("net.4.5.2.x64.etl", ["-n", "3"]),
                   ("net.4.5.2.x64.etl", ["-n", "1000", "--level", "4"]), ("gcevents.etl", ["--messages"]),
                   ("BondEtwSample.etl", []), ("BondEtwSample.etl", ["--no-manifest-events"]),
                   ("powershell.etl", ["--raw", "--csv-eol", "lf"]), ("SelfDescribingSingleEvent.etl", []),
                   ("lxcore_kernel.etl", ["--file-order"]), ("ShutdownPerfDiagLogger.etl", ["--time", "relative"])]:
    for j in ("1", "2"):
        args = ["--no-progress", "--format", "csv", "-j", j] + opts
        pf = subprocess.run([ETWDUMP] + args + [data(name)], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            timeout=600)
        ps_out, ps_err = run_stdin(data(name), *args)
        check(pf.stdout == ps_out, "%s %s -j %s: CSV of the file (first pass) is CSV of standard input (spill)"
              % (name, " ".join(opts), j))
        check(pf.stderr.replace(data(name).encode(), b"standard input") == ps_err,
              "%s %s -j %s: the same problems told once" % (name, " ".join(opts), j))
# several files: -j 1 (one thread, columns learned first) and -j 2 (the first pass, then the workers)
many = [data(n) for n in ("gcevents.etl", "BondEtwSample.etl", "HTTP_Server.etl", "SelfDescribingSingleEvent.etl")]
for opts in ([], ["-n", "500"]):
    a = run("--format", "csv", "-j", "1", *(opts + many))
    b = run("--format", "csv", "-j", "2", *(opts + many))
    check(a == b, "several files %s: CSV with -j 2 is CSV with -j 1" % " ".join(opts))

# === invalid UTF-8 in a TraceLogging field name and string value =================
PROV = uuid.UUID("8c2f6ee4-3b1d-4c55-9a0e-2d4f1b7c9e01")


def tl_meta(event_name, fields):
    """EVENT_SCHEMA_TL metadata (TraceLoggingProvider.h): u16 size, one event
    tag byte (0: none), the event name, then per field its name, InType | 0x80
    and OutType."""
    body = b"\0" + event_name + b"\0"
    for fname, in_type, out_type in fields:
        body += fname + b"\0" + bytes([in_type | 0x80, out_type])
    return struct.pack("<H", 2 + len(body)) + body


def prov_traits(name):
    blob = name + b"\0"
    return struct.pack("<H", 2 + len(blob)) + blob


# in-type 2 (ANSISTRING, NUL-terminated 8-bit), out-type 35 (UTF8)
meta = tl_meta(b"Bad", [(b"na\xffme", 2, 35), (b"ok", 2, 35)])
evs = [{"provider": PROV, "id": 0, "level": 4, "pid": 100, "tid": 101, "ts": 10 * i,
        "ext": [(11, meta), (12, prov_traits(b"Utf8Test"))],
        "payload": b"v\xffal\0" + b"plain, \"quoted\"\0"} for i in range(3)]
with tempfile.TemporaryDirectory() as td:
    path = os.path.join(td, "badutf8.etl")
    etlwrite.write_etl(path, evs)
    jl = [json.loads(x) for x in run(path).decode("utf-8").splitlines()]
    raw = run("--format", "csv", path)
    try:
        text = raw.decode("utf-8")
        valid = True
    except UnicodeDecodeError:
        text, valid = raw.decode("utf-8", "replace"), False
    check(valid, "invalid UTF-8 in a field name and value: the CSV is valid UTF-8")
    rows = list(csv.reader(io.StringIO(text, newline="")))
    tl = [e for e in jl if e.get("provider") == "Utf8Test"]
    check(len(tl) == 3 and all("na\ufffdme" in e["fields"] for e in tl)
          and all(e["fields"]["na\ufffdme"] == "v\ufffdal" for e in tl),
          "JSON: U+FFFD for the bad byte in the name and the value: %r" % (tl[:1],))
    h = rows[0]
    check("na\ufffdme" in h, "CSV header: the name with U+FFFD, as JSON: %r" % h[-3:])
    if "na\ufffdme" in h:
        c, o = h.index("na\ufffdme"), h.index("ok")
        tlrows = [r for r in rows[1:] if r[h.index("provider")] == "Utf8Test"]
        check(len(tlrows) == 3 and all(r[c] == "v\ufffdal" and r[o] == "plain, \"quoted\"" for r in tlrows),
              "CSV cells: the value with U+FFFD, as JSON: %r" % (tlrows[:1],))
    for fmt in ("csv", "text", "json", "xml", "timesketch"):
        try:
            run("--format", fmt, path).decode("utf-8")
        except UnicodeDecodeError:
            check(False, "--format %s: valid UTF-8" % fmt)
    spl = os.path.join(td, "split")
    run("--format", "csv", "--split-by", "event", "-o", spl, path)
    for fn in os.listdir(spl):
        try:
            open(os.path.join(spl, fn), "rb").read().decode("utf-8")
        except UnicodeDecodeError:
            check(False, "--split-by event: %s valid UTF-8" % fn)
    fl = run("--format", "csv", "--fields", "ok", path).decode("utf-8")
    check(fl.splitlines()[0].endswith(",ok"), "--fields ok: the column")

print("%d rows checked" % total)
if failures:
    print("%d checks failed" % failures)
    sys.exit(1)
print("all checks passed")
