#!/usr/bin/env python3
"""WPP messages formatted from TMF files, through etwdump.

usage: test_wpp.py ETWDUMP SHARED_WPP_DIR

1. The real CldFlt traces (SHARED_WPP_DIR/CldFlt*.etl, SOURCES.md): every
   WPP record is framed and, without a TMF, reported as needing TMF data;
   with a TMF for its message GUID (hand-written: the real one is not
   public; its arguments are what the 20 bytes of message 43 hold: two
   pointers and an NTSTATUS) each record decodes, checked against the
   record's own bytes (--raw) and header values.
2. Synthetic traces (tests/etlwrite.py MESSAGE records) of messages of the
   nefarius TMF files, one for each argument type those files use, with
   known argument values; the message text is checked against an
   independent formatter written here from Microsoft's documentation
   (tracefmt's default prefix "[%9!d!]%8!04X!.%3!04X!::%4!s! [%1!s!]", the
   printf conversions as Python's % operator applies them, MSVC's %p as all
   the pointer's hex digits), value by value; the fields as the TMF names them.
3. Payloads that do not fit the arguments: an error naming the message and
   the argument, no message.
Prints "N passed, N failed".
"""
import datetime as dt
import glob
import json
import os
import re
import struct
import subprocess
import sys
import tempfile
import uuid

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import etlwrite  # noqa: E402

ETWDUMP, WPP = sys.argv[1], sys.argv[2]
TMF_DIR = os.path.join(WPP, "nefarius-tmf")
passed = failed = 0


def check(cond, what):
    global passed, failed
    if cond:
        passed += 1
    else:
        failed += 1
        print("FAIL:", what)


def run(*args):
    p = subprocess.run([ETWDUMP] + list(args), capture_output=True, text=True)
    return p.returncode, p.stdout, p.stderr


def events(*args):
    rc, out, err = run(*args)
    return rc, [json.loads(line) for line in out.splitlines() if line.strip()], err


def tracefmt_time(rfc3339):
    """MM/DD/YYYY-HH:MM:SS.mmm (UTC) from the JSON time (7 fractional digits)."""
    m = re.match(r"(\d{4})-(\d\d)-(\d\d)T(\d\d):(\d\d):(\d\d)\.(\d{7})Z", rfc3339)
    y, mo, d, h, mi, s, frac = m.groups()
    return "%s/%s/%s-%s:%s:%s.%s" % (mo, d, y, h, mi, s, frac[:3])


def prefix(e, component):
    return "[%d]%04X.%04X::%s [%s]" % (e["cpu"], e["pid"], e["tid"], tracefmt_time(e["time"]), component)


# ---- 1. the real CldFlt traces ----

CLDFLT_GUID = "2818ef08-6a54-396f-2244-5a6ea4a98cf0"
CLDFLT_TMF = """// PDB:  hand-written for test_wpp.py (the real TMF is not public)
%s CldFlt // SRC=cldflt.c MJ= MN=
#typev cldflt_c100 43 "%%0 [%%!FUNC!] a=%%10!p! b=%%11!p! status=%%12!s!" //   LEVEL=TRACE_LEVEL_ERROR FLAGS=TRACE_TEST FUNC=CldTest
{
a, ItemPtr -- 10
b, ItemPtr -- 11
status, ItemNTSTATUS -- 12
}
""" % CLDFLT_GUID


def test_cldflt(tmp):
    tmf = os.path.join(tmp, "cldflt.tmf")
    with open(tmf, "w") as f:
        f.write(CLDFLT_TMF)
    for name, count in (("CldFlt0-2025-12-21-121418.etl", 13), ("CldFlt1-2025-12-21-121418.etl", 3)):
        path = os.path.join(WPP, name)
        rc, evs, err = events("--raw", path)
        wpp = [e for e in evs if e["provider_guid"] == CLDFLT_GUID]
        check(len(wpp) == count, "%s: %d WPP records, expected %d" % (name, len(wpp), count))
        check(all(e.get("error") == "no schema: WPP message 43 needs TMF data" and e["event"] == "Message(43)"
                  for e in wpp), "%s: reported as needing TMF data" % name)
        rc2, evs2, err2 = events("--tmf", tmf, path)
        check(rc2 == 0, "%s with --tmf: exit %d (%s)" % (name, rc2, err2))
        got = [e for e in evs2 if e["provider_guid"] == CLDFLT_GUID]
        check(len(got) == count, "%s with --tmf: %d records" % (name, len(got)))
        for raw_e, e in zip(wpp, got):
            raw = bytes.fromhex(raw_e["raw"])
            a, b, status = struct.unpack("<QQI", raw)
            check(e["provider"] == "CldFlt" and e["event"] == "cldflt_c100", "names %r" % e)
            check("error" not in e, "no error: %r" % e.get("error"))
            check(e["fields"] == {"a": "0x%x" % a, "b": "0x%x" % b, "status": "0x%08x" % status},
                  "fields %r vs raw %s" % (e["fields"], raw.hex()))
            want = "%s [CldTest] a=%016X b=%016X status=%s" % (prefix(e, "CldFlt"), a, b,
                                                                NT.get(status, "0x%08X" % status))
            check(e.get("message") == want, "message %r, expected %r" % (e.get("message"), want))
        # --format text: each WPP record as tracefmt writes it, its message alone
        rc3, out3, err3 = run("--format", "text", "--tmf", tmf, path)
        lines = [l for l in out3.splitlines() if l.startswith("[")]
        check(lines == [e["message"] for e in got], "%s: text lines %r" % (name, lines[:2]))


# ---- 2. synthetic traces of the nefarius messages ----

def parse_tmf_dir(d):
    """A small reading of the TMF files: {(guid, number): message dict}."""
    msgs = {}
    for path in sorted(glob.glob(os.path.join(d, "*.tmf"))):
        guid = comp = src = None
        cur = None
        for line in open(path, encoding="utf-8"):
            line = line.strip()
            m = re.match(r"^([0-9a-f-]{36}) (\S+) // SRC=(\S+)", line)
            if m:
                guid, comp, src = m.groups()
                continue
            m = re.match(r'^#typev (\S+) (\d+) "(.*)" //(.*)$', line)
            if m:
                tag, num, fmt, trailer = m.groups()
                kv = dict(re.findall(r"(LEVEL|FLAGS|FUNC)=(\S*)", trailer))
                cur = {"guid": guid, "component": comp, "file": src, "tag": tag, "number": int(num),
                       "format": fmt, "args": [], "level": kv.get("LEVEL", ""), "flags": kv.get("FLAGS", ""),
                       "func": kv.get("FUNC", "")}
                msgs.setdefault((guid, int(num)), cur)
                continue
            m = re.match(r"^(.*), (Item\w+)(\(([^)]*)\))? -- (\d+)$", line)
            if m and cur is not None:
                cur["args"].append({"name": m.group(1), "type": m.group(2),
                                    "list": m.group(4).split(",") if m.group(4) else None,
                                    "number": int(m.group(5))})
    return msgs


# Names as MS-ERREF ("Windows Error Codes") lists them; the third sample of
# each has no name anywhere (shown in hex).
NT = {0: "STATUS_SUCCESS", 0xC0000001: "STATUS_UNSUCCESSFUL", 0xC0000022: "STATUS_ACCESS_DENIED",
      0xC01C000F: "STATUS_FLT_DO_NOT_ATTACH"}
WIN = {0: "ERROR_SUCCESS", 2: "ERROR_FILE_NOT_FOUND", 1234: "ERROR_PORT_UNREACHABLE"}

# (payload bytes, value for integer conversions, its own text, JSON field value)
def sample(t, lst, ptr, k):
    if t == "ItemNTSTATUS":
        v = (0xC0000001, 0xC0000022, 0xE0001234)[k % 3]
        return struct.pack("<I", v), v, NT.get(v, "0x%08X" % v), "0x%08x" % v
    if t == "ItemWINERROR":
        v = (2, 1234, 0xFFFF)[k % 3]
        return struct.pack("<I", v), v, WIN.get(v, "0x%08X" % v), "0x%x" % v  # JSON: Win32 errors in hex
    if t == "ItemPtr":
        v = (0xFFFFBB88B0AA7010 + k) if ptr == 8 else (0x81234560 + k)
        return struct.pack("<Q" if ptr == 8 else "<I", v), v, "%0*X" % (2 * ptr, v), "0x%x" % v
    if t == "ItemString":
        s = "name-%d" % k
        return s.encode() + b"\0", None, s, s
    if t == "ItemWString":
        s = "wide \u00e9\u2603 %d" % k
        return s.encode("utf-16-le") + b"\0\0", None, s, s
    if t == "ItemPWString":
        s = "\\\\?\\BTHPS3#%d" % k
        b = s.encode("utf-16-le")
        return struct.pack("<H", len(b)) + b, None, s, s
    if t == "ItemLong":
        v = (-42, 7, 200)[k % 3]
        return struct.pack("<i", v), v, str(v), v
    if t == "ItemLongLong":
        v = -1234567890123 - k
        return struct.pack("<q", v), v, str(v), v
    if t == "ItemULongLong":
        v = 18446744073709551615 - k
        return struct.pack("<Q", v), v, str(v), v
    if t == "ItemLongLongXX":
        v = 0x0000123456789ABC + k
        return struct.pack("<Q", v), v, "%X" % v, "0x%x" % v
    if t == "ItemListByte":
        v = 2 - k % 3
        return struct.pack("<B", v), v, lst[v], lst[v]
    if t == "ItemDouble":
        v = (2.5, -0.125)[k % 2]
        return struct.pack("<d", v), None, repr(v), v
    raise ValueError(t)


def conv(spec, value, size, own):
    """A %N!spec! insert: Python's printf for the integer conversions."""
    if spec in ("s", "S"):
        return own
    m = re.match(r"^([-+ #0]*)(\d*)(?:\.(\d+))?(I64|I32|ll|l|h|I|w)?([diuxXopc])$", spec)
    c = m.group(5)
    if c == "p":
        return "%0*X" % (2 * size, value & ((1 << (8 * size)) - 1))
    v = value
    if c in "uxXo":
        v &= (1 << (8 * size)) - 1
    elif v >= 1 << (8 * size - 1):
        v -= 1 << (8 * size)
    return ("%" + m.group(1) + m.group(2) + ("." + m.group(3) if m.group(3) else "") + c) % v


SIZES = {"ItemNTSTATUS": 4, "ItemWINERROR": 4, "ItemLong": 4, "ItemLongLong": 8, "ItemULongLong": 8,
         "ItemLongLongXX": 8, "ItemListByte": 1}


def expected(msg, e, inserts):
    out = ""
    f = msg["format"]
    i = 0
    while i < len(f):
        if f[i] != "%":
            out += f[i]
            i += 1
            continue
        m = re.match(r"%(\d+)(?:!([^!]*)!)?", f[i:])
        if m:
            n = int(m.group(1))
            out += prefix(e, msg["component"]) if n == 0 else inserts[n](m.group(2) or "s")
            i += m.end()
            continue
        m = re.match(r"%!(\w+)!", f[i:])
        if m:
            out += {"FUNC": msg["func"], "FILE": msg["file"], "LEVEL": msg["level"], "FLAGS": msg["flags"],
                    "COMPNAME": msg["component"]}[m.group(1)]
            i += m.end()
            continue
        out += "%"
        i += 1
    return out


def test_synthetic(tmp):
    msgs = parse_tmf_dir(TMF_DIR)
    check(len(msgs) == 2610, "the Python reading finds 2,610 messages too (%d)" % len(msgs))
    types = ["ItemNTSTATUS", "ItemPtr", "ItemString", "ItemLong", "ItemWINERROR", "ItemLongLongXX", "ItemPWString",
             "ItemLongLong", "ItemListByte", "ItemDouble", "ItemWString", "ItemULongLong"]
    chosen = []
    for t in types:  # up to 3 messages per type, preferring several arguments
        cands = [m for m in msgs.values() if any(a["type"] == t for a in m["args"])]
        cands.sort(key=lambda m: (-len(m["args"]), m["guid"], m["number"]))
        chosen += cands[:3]
    covered = {a["type"] for m in chosen for a in m["args"]}
    check(set(types) <= covered, "every argument type of the files is exercised: %s" % (set(types) - covered))
    for ptr in (8, 4):
        evs, plans = [], []
        for k, m in enumerate(chosen):
            payload = b""
            inserts = {}
            fields = {}
            for a in sorted(m["args"], key=lambda a: a["number"]):
                data, val, own, jv = sample(a["type"], a["list"], ptr, k)
                payload += data
                size = ptr if a["type"] == "ItemPtr" else SIZES.get(a["type"], 4)
                inserts[a["number"]] = (lambda spec, val=val, size=size, own=own: conv(spec, val, size, own)
                                        if val is not None else own)
                fields[a["name"]] = jv
            evs.append({"wpp": m["number"], "provider": m["guid"], "pid": 0x1A4 + k, "tid": 0x2B0 + k,
                        "ts": 1000 * k + 1234567, "payload": payload})
            plans.append((m, inserts, fields))
        etl = os.path.join(tmp, "wpp%d.etl" % ptr)
        etlwrite.write_etl(etl, evs, pointer_size=ptr)
        rc, out, err = events("--tmf", TMF_DIR, etl)
        check(rc == 0, "synthetic %d-bit: exit %d (%s)" % (ptr, rc, err))
        got = [e for e in out if e["event"] != "EventTrace"]
        check(len(got) == len(plans), "synthetic %d-bit: %d events" % (ptr, len(got)))
        for e, (m, inserts, fields) in zip(got, plans):
            what = "%s %d (%s, %d-bit)" % (m["guid"], m["number"], m["tag"], ptr)
            check(e["provider"] == m["component"] and e["event"] == m["tag"], what + ": names %s/%s" %
                  (e["provider"], e["event"]))
            check("error" not in e, what + ": error %r" % e.get("error"))
            want = expected(m, e, inserts)
            check(e.get("message") == want, what + ":\n  got      %r\n  expected %r" % (e.get("message"), want))
            for name, jv in fields.items():
                got_v = e["fields"].get(name)
                check(got_v == jv, what + ": field %s = %r, expected %r" % (name, got_v, jv))


# ---- 3. payloads that do not fit ----

def test_short_payload(tmp):
    tmf = os.path.join(tmp, "cldflt.tmf")
    evs = [{"wpp": 43, "provider": CLDFLT_GUID, "pid": 4, "tid": 8, "ts": 10, "payload": b"\1" * 18}]
    etl = os.path.join(tmp, "short.etl")
    etlwrite.write_etl(etl, evs)
    rc, out, err = events("--tmf", tmf, etl)
    e = out[-1]
    check("message" not in e, "no message for a short payload")
    check(e.get("error", "").startswith("WPP message %s 43 (cldflt_c100): argument 12 (status, ItemNTSTATUS) "
                                        "needs 4 bytes, 2 left" % CLDFLT_GUID), "error %r" % e.get("error"))
    # a string without its NUL
    tmf2 = os.path.join(tmp, "str.tmf")
    with open(tmf2, "w") as f:
        f.write("%s T // SRC=t.c MJ= MN=\n#typev t_c1 7 \"%%10!s!\"\n{\ns, ItemString -- 10\n}\n"
                % "11111111-2222-3333-4444-555555555555")
    etlwrite.write_etl(etl, [{"wpp": 7, "provider": "11111111-2222-3333-4444-555555555555", "payload": b"abc"}])
    rc, out, err = events("--tmf", tmf2, etl)
    check("not NUL-terminated" in out[-1].get("error", ""), "unterminated string: %r" % out[-1].get("error"))
    # a broken TMF is told and left out; the trace still decodes
    bad = os.path.join(tmp, "bad.tmf")
    with open(bad, "w") as f:
        f.write("%s T // SRC=t.c\n#typev t_c1 7 \"x\"\n{\ns, ItemString -- 10\n" % "11111111-2222-3333-4444-555555555555")
    rc, out, err = events("--tmf", bad, etl)
    check(rc == 0 and "bad.tmf:4: argument block not closed" in err, "broken TMF told: %d %r" % (rc, err))
    check(out[-1].get("error") == "no schema: WPP message 7 needs TMF data", "then no TMF: %r" % out[-1])
    rc, out, err = events("--tmf", os.path.join(tmp, "missing.tmf"), etl)
    check(rc == 2 and "missing.tmf" in err, "missing --tmf path: %d %r" % (rc, err))


with tempfile.TemporaryDirectory() as tmp:
    test_cldflt(tmp)
    test_synthetic(tmp)
    test_short_payload(tmp)
print("%d passed, %d failed" % (passed, failed))
sys.exit(1 if failed else 0)
