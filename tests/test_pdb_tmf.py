#!/usr/bin/env python3
"""WPP trace message formats read from a PDB's S_ANNOTATION records.

usage: test_pdb_tmf.py ETW_PDBDUMP LLVM_PDBUTIL YAML TMF_DIR WORK_DIR [ETWDUMP]

Makes a PDB from YAML (tests/data/wpp/tmf_annotations.yaml) with
`llvm-pdbutil yaml2pdb`, then checks what `etw_pdbdump -a` (the library's
etw_pdb_annotations_file) prints against two outside oracles:

  - LLVM's own reading (`llvm-pdbutil dump -symbols`): the same "TMF:" and
    "TMC:" annotations, in the same order, with the same module, section,
    offset and strings; the other annotation ("Hello!") left out;
  - the .tmf files tracepdb wrote for those messages (TMF_DIR, named by
    message GUID): each annotation's first line is the file's GUID line and
    its other lines are a run of the file's lines; for
    e4b27b5e-24d0-369f-a4b5-23228e160bd2, whose every message the PDB holds,
    the annotations together give exactly the file's messages in its order.
    What is normalised in the file, and nothing else: line ends (CRLF or LF),
    whitespace at the end of a line, and the "// PDB: ..." comment lines
    tracepdb adds are dropped; the file holds its messages twice (tracepdb
    appended a second run without the GUID line): the second copy must equal
    the first, and the comparison is with the first.
  - message 12 of BthPS3 as Nefarius.Utilities.ETW's own test asserts it
    (tests/UnitTestParser.cs): function BthPS3_DeviceContextHeaderInit, file
    Bluetooth.Context.c, flags TRACE_BTH, level TRACE_LEVEL_VERBOSE, format
    "%0 [%!FUNC!] <-- Exit <status=%10!s!>".

With ETWDUMP: `etwdump --tmf-from-pdb` prints, for each message GUID, the
GUID line once and its messages: for BthPS3 exactly the .tmf file's lines
(normalised as above), for BthPS3PSM the GUID line and message 27's run of
its file; CppCon.pdb (no WPP) prints nothing and says so; a trace input
with it is a usage error (exit status 2).

Prints "N passed, N failed"; exits 1 on a failure.
"""
import os
import re
import subprocess
import sys

PDBDUMP, LLVM, YAML, TMF_DIR, WORK = sys.argv[1:6]
ETWDUMP = sys.argv[6] if len(sys.argv) > 6 else None
passed = failed = 0


def check(cond, what):
    global passed, failed
    if cond:
        passed += 1
    else:
        failed += 1
        print("FAIL:", what)


def ours(pdb):
    """etw_pdbdump -a: [(kind, module, section, offset, [lines])]."""
    out = subprocess.run([PDBDUMP, "-a", pdb], check=True, capture_output=True, text=True).stdout
    lines = out.split("\n")
    assert lines[-1] == ""
    lines.pop()
    res, i = [], 0
    while i < len(lines):
        m = re.fullmatch(r"annotation (TMF|TMC) (\d+) (\d+) (\d+) (\d+)", lines[i])
        assert m, lines[i]
        n = int(m.group(5))
        res.append((m.group(1), int(m.group(2)), int(m.group(3)), int(m.group(4)), lines[i + 1:i + 1 + n]))
        i += 1 + n
    return res


def llvms(pdb):
    """llvm-pdbutil dump -symbols: every S_ANNOTATION as (module, section, offset, [strings])."""
    out = subprocess.run([LLVM, "dump", "-symbols", pdb], check=True, capture_output=True, text=True).stdout
    res, mod, cur = [], None, None
    for line in out.split("\n"):
        m = re.match(r"\s*Mod (\d+) \|", line)
        if m:
            mod = int(m.group(1))
            continue
        if re.match(r"\s*\d+ \| S_ANNOTATION ", line):
            cur = [mod, None, None, []]
            continue
        if cur is None:
            continue
        m = re.match(r"\s*addr = (\d+):(\d+)$", line)
        if m:
            cur[1], cur[2] = int(m.group(1)), int(m.group(2))
            continue
        m = re.match(r"\s*strings = \[(.*)$", line)
        s = m.group(1) if m else line.strip()
        end = s.endswith("]")
        if end:
            s = s[:-1]
        if s or not m:
            cur[3].append(s)
        if end:
            res.append(tuple(cur))
            cur = None
    return res


def tmf_lines(path):
    with open(path, "rb") as f:
        text = f.read().decode("utf-8")
    return [ln.rstrip() for ln in text.splitlines() if not ln.lstrip().startswith("//")]


pdb = os.path.join(WORK, "tmf_annotations.pdb")
os.makedirs(WORK, exist_ok=True)
if os.path.exists(pdb):
    os.remove(pdb)
subprocess.run([LLVM, "yaml2pdb", "-pdb=" + pdb, YAML], check=True)

got = ours(pdb)
ref = llvms(pdb)
check(len(ref) == 8, "llvm sees the 8 annotations of the YAML (%d)" % len(ref))
want = [("TMF" if r[3][0] == "TMF:" else "TMC", r[0], r[1], r[2], r[3][1:])
        for r in ref if r[3] and r[3][0] in ("TMF:", "TMC:")]
check(len(want) == 7, "7 of them are TMF/TMC")
check(got == want, "etw_pdb_annotations = llvm-pdbutil's S_ANNOTATION records tagged TMF:/TMC:")
if got != want:
    for a, b in zip(got, want):
        if a != b:
            print("  ours:", a)
            print("  llvm:", b)
check(sum(1 for g in got if g[0] == "TMC") == 1, "one TMC annotation")

# against the .tmf files
by_guid = {}
for kind, _mod, _sec, _off, lines in got:
    if kind != "TMF":
        continue
    check(len(lines) >= 3 and lines[-1] == "}" and "{" in lines, "TMF annotation shape: %r" % lines[:2])
    guid = lines[0].split(" ", 1)[0]
    by_guid.setdefault(guid, []).append(lines)
check(sorted(by_guid) == ["03fb1cb4-1c81-30e9-50db-4ecb4f47594e", "e4b27b5e-24d0-369f-a4b5-23228e160bd2"],
      "message GUIDs")
for guid, anns in by_guid.items():
    flines = tmf_lines(os.path.join(TMF_DIR, guid + ".tmf"))
    # the file: GUID line, then its messages, then the same messages again
    msgs = flines[1:]
    half = len(msgs) // 2
    check(len(msgs) % 2 == 0 and msgs[:half] == msgs[half:], "%s: the file repeats its messages once" % guid)
    msgs = msgs[:half]
    for lines in anns:
        check(lines[0] == flines[0], "%s: GUID line %r = the file's %r" % (guid, lines[0], flines[0]))
        body = lines[1:]
        runs = [i for i in range(len(msgs) - len(body) + 1) if msgs[i:i + len(body)] == body]
        check(len(runs) >= 1, "%s: annotation %r is a run of the file's lines" % (guid, body[0]))
    if guid.startswith("e4b27b5e"):
        check(len(anns) == 5, "BthPS3 Bluetooth.Context.c: 5 messages")
        joined = [ln for lines in anns for ln in lines[1:]]
        check(joined == msgs, "BthPS3: the annotations give the .tmf file's messages, line for line")

# message 12, as Nefarius.Utilities.ETW's test states it
m12 = [a for a in by_guid.get("e4b27b5e-24d0-369f-a4b5-23228e160bd2", []) if re.match(r"#typev \S+ 12 ", a[1])]
check(len(m12) == 1, "message 12 once")
if m12:
    a = m12[0]
    check("SRC=Bluetooth.Context.c" in a[0] and " BthPS3 " in a[0], "message 12: provider and file")
    m = re.match(r'#typev \S+ 12 "(.*)" //(.*)$', a[1])
    check(m is not None and m.group(1) == "%0 [%!FUNC!] <-- Exit <status=%10!s!>", "message 12: format")
    attrs = dict(kv.split("=", 1) for kv in m.group(2).split()) if m else {}
    check(attrs.get("FUNC") == "BthPS3_DeviceContextHeaderInit", "message 12: function")
    check(attrs.get("FLAGS") == "TRACE_BTH" and attrs.get("LEVEL") == "TRACE_LEVEL_VERBOSE",
          "message 12: flags and level")
    check(a[2:] == ["{", "status, ItemNTSTATUS -- 10", "}"], "message 12: one NTSTATUS argument")

# etwdump --tmf-from-pdb
if ETWDUMP:
    r = subprocess.run([ETWDUMP, "--tmf-from-pdb", pdb], capture_output=True, text=True)
    check(r.returncode == 0 and r.stderr == "", "etwdump --tmf-from-pdb: exit 0, nothing on stderr (%d %r)"
          % (r.returncode, r.stderr))
    out = r.stdout.split("\n")
    check(out[-1] == "", "ends with a line end")
    out = out[:-1]
    bth = tmf_lines(os.path.join(TMF_DIR, "e4b27b5e-24d0-369f-a4b5-23228e160bd2.tmf"))
    bth = bth[:1 + (len(bth) - 1) // 2]  # the GUID line and the first copy of the messages
    check(out[:len(bth)] == bth, "etwdump --tmf-from-pdb: BthPS3's .tmf file, line for line")
    psm = tmf_lines(os.path.join(TMF_DIR, "03fb1cb4-1c81-30e9-50db-4ecb4f47594e.tmf"))
    rest = out[len(bth):]
    check(len(rest) == 6 and rest[0] == psm[0], "BthPS3PSM: its GUID line, then message 27 (%d lines)" % len(rest))
    check(any(psm[i:i + 5] == rest[1:] for i in range(1, len(psm))), "BthPS3PSM: message 27 is a run of its file")
    check(not any(ln.startswith("0b0c1d2e") for ln in out), "the TMC record is not printed")
    r = subprocess.run([ETWDUMP, "--tmf-from-pdb", os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                                               "data", "CppCon.pdb")], capture_output=True, text=True)
    check(r.returncode == 0 and r.stdout == "" and "no WPP trace message formats" in r.stderr,
          "CppCon.pdb: none, said on stderr")
    r = subprocess.run([ETWDUMP, "--tmf-from-pdb", pdb, "x.etl"], capture_output=True, text=True)
    check(r.returncode == 2 and "no trace inputs with it" in r.stderr, "with a trace input: usage error")
    o = os.path.join(WORK, "out.tmf")
    r = subprocess.run([ETWDUMP, "--tmf-from-pdb", pdb, "-o", o], capture_output=True, text=True)
    with open(o, encoding="utf-8") as f:
        check(r.returncode == 0 and f.read().split("\n")[:-1] == out, "-o FILE: the same text")

# WPP records formatted from the PDB (etwdump --tmf FILE.pdb and --symbols
# DIR, a symbol store name.pdb/<id>/name.pdb) exactly as from the .tmf file
# tracepdb wrote: a synthetic trace (tests/etlwrite.py) of BthPS3's messages
# 10, 11 and 12, each NTSTATUS argument a known value.
if ETWDUMP:
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import etlwrite  # noqa: E402
    import json  # noqa: E402
    import shutil  # noqa: E402
    import struct  # noqa: E402
    bguid = "e4b27b5e-24d0-369f-a4b5-23228e160bd2"
    wevs = [{"wpp": 10, "provider": bguid, "pid": 0x1A4, "tid": 0x2B0, "ts": 10, "payload": b""},
            {"wpp": 12, "provider": bguid, "pid": 0x1A4, "tid": 0x2B0, "ts": 20, "payload": struct.pack("<I", 0)},
            {"wpp": 11, "provider": bguid, "pid": 0x1A4, "tid": 0x2B0, "ts": 30,
             "payload": struct.pack("<I", 0xC0000017)}]
    etl = os.path.join(WORK, "bth_wpp.etl")
    etlwrite.write_etl(etl, wevs)
    store = os.path.join(WORK, "store")
    shutil.rmtree(store, ignore_errors=True)
    os.makedirs(os.path.join(store, "BthPS3.pdb", "0123456789ABCDEF0123456789ABCDEF1"))
    shutil.copy(pdb, os.path.join(store, "BthPS3.pdb", "0123456789ABCDEF0123456789ABCDEF1", "BthPS3.pdb"))

    def wpp_json(*opts):
        r = subprocess.run([ETWDUMP, *opts, etl], capture_output=True, text=True)
        return r.returncode, [e for e in (json.loads(ln) for ln in r.stdout.splitlines() if ln.strip())
                              if e.get("provider_guid") == bguid]

    rc_t, by_tmf = wpp_json("--tmf", os.path.join(TMF_DIR, bguid + ".tmf"))
    rc_p, by_pdb = wpp_json("--tmf", pdb)
    rc_s, by_store = wpp_json("--symbols", store)
    rc_v, by_srv = wpp_json("--symbols", "srv*%s*https://msdl.microsoft.com/download/symbols" % store)
    msgs = [e.get("message", "") for e in by_tmf]
    check(rc_t == 0 and len(by_tmf) == 3 and all(m for m in msgs), "the .tmf formats the three records: %r" % msgs)
    check(msgs[1].endswith("[BthPS3_DeviceContextHeaderInit] <-- Exit <status=STATUS_SUCCESS>"),
          "message 12 as its format says: %r" % msgs[1:2])
    check(msgs[2].endswith("with status STATUS_NO_MEMORY"), "message 11, NTSTATUS by name: %r" % msgs[2:])
    check(rc_p == 0 and by_pdb == by_tmf, "--tmf FILE.pdb: the same events as the .tmf")
    check(rc_s == 0 and by_store == by_tmf, "--symbols STORE: the same events as the .tmf")
    check(rc_v == 0 and by_srv == by_tmf, "--symbols srv*STORE*URL: the same events as the .tmf")

print("%d passed, %d failed" % (passed, failed))
sys.exit(1 if failed else 0)
