#!/usr/bin/env python3
"""src/pdb against LLVM's own PDB reader.

usage: test_pdb.py ETW_PDBDUMP LLVM_PDBUTIL DATA_DIR [PDB...]

Runs `llvm-pdbutil dump --summary --publics --symbols --section-headers` on
each PDB named (in DATA_DIR; default CppCon.pdb) and compares with what etw_pdbdump
(tests/pdbdump.c, the library's reading) prints:
  - the GUID and the age;
  - the publics (S_PUB32) and the procedures (S_GPROC32, S_LPROC32 and their
    _ID/_DPC variants of every module) as a multiset of (kind, RVA, size,
    name), the RVA made from llvm's section:offset and its section headers
    (publics of sections the PDB has no header for, the absolute ones, left
    out on both sides);
  - lookups: the middle and the last byte of every procedure resolve to that
    procedure (or to one that starts at the same RVA), the byte before the
    first symbol to nothing.
Prints "N passed, N failed"; exits 1 on a failure.
"""
import os
import re
import subprocess
import sys
from collections import Counter

PDBDUMP, LLVM, DATA = sys.argv[1], sys.argv[2], sys.argv[3]
PDBS = sys.argv[4:] or ["CppCon.pdb"]
PROC_KINDS = {"S_GPROC32", "S_LPROC32", "S_GPROC32_ID", "S_LPROC32_ID", "S_LPROC32_DPC", "S_LPROC32_DPC_ID"}
passed = failed = 0


def check(cond, what):
    global passed, failed
    if cond:
        passed += 1
    else:
        failed += 1
        print("FAIL:", what)


def llvm_read(pdb):
    """GUID, age, section VAs and the expected symbols from llvm-pdbutil."""
    out = subprocess.run([LLVM, "dump", "--summary", "--publics", "--symbols", "--section-headers", pdb],
                         check=True, capture_output=True, text=True, errors="replace").stdout
    lines = out.splitlines()
    guid = re.search(r"^\s*GUID: \{([0-9A-Fa-f-]+)\}", out, re.M).group(1).lower()
    age = int(re.search(r"^\s*Age: (\d+)", out, re.M).group(1))
    vas = {}
    cur = None
    for ln in lines:
        m = re.match(r"\s*SECTION HEADER #(\d+)", ln)
        if m:
            cur = int(m.group(1))
            continue
        m = re.match(r"\s*([0-9A-F]+) virtual address", ln)
        if m and cur is not None:
            vas[cur] = int(m.group(1), 16)
    syms = []
    rec = re.compile(r"^\s*\d+ \| (S_\w+) \[size = \d+\] `(.*)`\s*$")
    for i, ln in enumerate(lines):
        m = rec.match(ln)
        if not m:
            continue
        kind, name = m.group(1), m.group(2)
        if kind != "S_PUB32" and kind not in PROC_KINDS:
            continue
        nxt = lines[i + 1]
        a = re.search(r"addr = (\d+):(\d+)", nxt)
        seg, off = int(a.group(1)), int(a.group(2))  # llvm prints both in decimal
        if seg not in vas:
            continue
        rva = vas[seg] + off
        if kind == "S_PUB32":
            syms.append(("public", rva, 0, name))
        else:
            size = int(re.search(r"code size = (\d+)", nxt).group(1))
            syms.append(("procedure", rva, size, name))
    return guid, age, syms


def ours(pdb):
    out = subprocess.run([PDBDUMP, pdb], check=True, capture_output=True, text=True, errors="replace").stdout
    lines = out.splitlines()
    guid = lines[0].split()[1]
    age = int(lines[1].split()[1])
    count = int(lines[2].split()[1])
    syms = []
    for ln in lines[3:]:
        kind, rva, size, name = ln.split(" ", 3)
        syms.append((kind, int(rva, 16), int(size), name))
    check(count == len(syms), "%s: symbol count line %d, %d lines" % (pdb, count, len(syms)))
    return guid, age, syms


def lookups(pdb, rvas):
    out = subprocess.run([PDBDUMP, pdb] + ["%X" % r for r in rvas], check=True, capture_output=True,
                         text=True, errors="replace").stdout
    res = {}
    for ln in out.splitlines():
        r, what = ln.split(" ", 1)
        res[int(r, 16)] = None if what == "-" else what
    return res


for name in PDBS:
    pdb = os.path.join(DATA, name)
    lguid, lage, lsyms = llvm_read(pdb)
    oguid, oage, osyms = ours(pdb)
    check(oguid == lguid, "%s: GUID %s, llvm %s" % (name, oguid, lguid))
    check(oage == lage, "%s: age %d, llvm %d" % (name, oage, lage))
    lc, oc = Counter(lsyms), Counter(osyms)
    missing, extra = lc - oc, oc - lc
    check(not missing and not extra,
          "%s: symbols differ: missing %s extra %s" % (name, sorted(missing)[:10], sorted(extra)[:10]))
    npub = sum(1 for s in lsyms if s[0] == "public")
    nproc = len(lsyms) - npub
    check(npub > 0 and nproc > 0, "%s: publics and procedures read" % name)
    check(osyms == sorted(osyms, key=lambda s: s[1]), "%s: sorted by RVA" % name)

    procs = [s for s in lsyms if s[0] == "procedure" and s[2] > 0]
    probe = {}
    for _, rva, size, pname in procs:
        for r in (rva, rva + size // 2, rva + size - 1):
            probe.setdefault(r, set())
    for _, rva, size, pname in procs:
        for r in probe:
            if rva <= r < rva + size:
                probe[r].add("%s+0x%X" % (pname, r - rva))
    first = min(s[1] for s in lsyms)
    got = lookups(pdb, sorted(probe) + [first - 1])
    bad = [(r, got.get(r), sorted(want)) for r, want in probe.items() if got.get(r) not in want]
    check(not bad, "%s: lookups differ: %s" % (name, bad[:5]))
    check(got.get(first - 1) is None, "%s: RVA below the first symbol found %s" % (name, got.get(first - 1)))
    print("%s: %d publics, %d procedures equal llvm-pdbutil's; %d lookups" % (name, npub, nproc, len(probe)))

print("%d passed, %d failed" % (passed, failed))
sys.exit(1 if failed else 0)
