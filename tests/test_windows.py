#!/usr/bin/env python3
"""etwdump --windows: providers found in a folder laid out like a Windows image.

usage: test_windows.py ETWDUMP DATA_DIR DLL_DIR

DLL_DIR holds the DLLs tests/make_wevt_dlls.sh builds from the event-trace-kit
blobs mc.exe compiled (tests/data/wevt). The test lays out an image:
  Windows/System32/wpfsplit.dll          WEVT_TEMPLATE only (Microsoft-Windows-WPF)
  Windows/System32/en-US/wpfsplit.dll.mui its message table
  Windows/System32/de-DE/wpfsplit.dll.mui the same, "Render" spelled "Zeigen"
  Windows/System32/zz-wpf.dll            the same provider again (a later file: loses)
  Windows/System32/drivers/refch.sys     ReferenceChannels (2 providers)
  Windows/SysWOW64/plaso.dll             plaso's test DLL (PE32, v3.1 blob)
  Windows/WinSxS/amd64_x_1/TaskOpcodes.dll
  plus a PE without a manifest, a damaged PE and files that are not PE,
writes a trace of events of those providers (tests/etlwrite.py) and checks the
names, fields, maps and --messages texts etwdump prints with --windows, the
index cache file of a second run, a changed file read again, --lang, -j 2,
and the errors. Prints "N passed, N failed".
"""
import json
import os
import shutil
import struct
import subprocess
import sys
import tempfile
import uuid

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import etlwrite  # noqa: E402

ETWDUMP, DATA, DLLS = sys.argv[1], sys.argv[2], sys.argv[3]
PE = os.path.join(DATA, "wevt", "pe")
passed = failed = 0

WPF = "e13b77a8-14b6-11de-8069-001b212b5009"
PLASO = "67883bbc-d592-4d02-8e29-66907fcb07d6"
REFCH1 = "00000000-0000-0000-0000-000000000001"
UNKNOWN = "5b3a4c3e-0000-4000-8000-00000000abcd"


def check(cond, what):
    global passed, failed
    if cond:
        passed += 1
    else:
        failed += 1
        print("FAIL: " + what, file=sys.stderr)


def utf16z(s):
    return s.encode("utf-16-le") + b"\0\0"


def lay_out(img):
    w = os.path.join(img, "Windows")
    for d in ("System32/en-US", "System32/de-DE", "System32/drivers", "SysWOW64", "WinSxS/amd64_x_1"):
        os.makedirs(os.path.join(w, d))
    cp = lambda src, dst: shutil.copyfile(src, os.path.join(w, dst))  # noqa: E731
    cp(os.path.join(DLLS, "split", "wpf-etw.dll"), "System32/wpfsplit.dll")
    cp(os.path.join(DLLS, "split", "wpf-etw.mui"), "System32/en-US/wpfsplit.dll.mui")
    cp(os.path.join(DLLS, "split", "wpf-etw.de-DE.mui"), "System32/de-DE/wpfsplit.dll.mui")
    cp(os.path.join(DLLS, "wpf-etw.dll"), "System32/zz-wpf.dll")
    cp(os.path.join(DLLS, "ReferenceChannels.dll"), "System32/drivers/refch.sys")
    cp(os.path.join(PE, "wrc-test-wevt_template.dll"), "SysWOW64/plaso.dll")
    cp(os.path.join(DLLS, "TaskOpcodes.dll"), "WinSxS/amd64_x_1/TaskOpcodes.dll")
    cp(os.path.join(PE, "wrc_test.dll"), "System32/nomanifest.dll")
    with open(os.path.join(w, "System32", "damaged.dll"), "wb") as f:
        f.write(b"MZ" + b"\0" * 58 + struct.pack("<I", 0x40) + b"PE\0\0" + b"\xff" * 200)
    with open(os.path.join(w, "System32", "readme.txt"), "w") as f:
        f.write("not a PE file")
    with open(os.path.join(w, "System32", "text.dll"), "w") as f:
        f.write("not a PE file either")
    return w


def trace(path):
    evs = [
        # WClientUIContextDispatch/Start (DispatcherMessage: Priority mapped, Operation, Id)
        dict(provider=WPF, id=12001, version=3, level=4, opcode=1, task=0, keywords=0, channel=16,
             pid=100, tid=101, ts=10, payload=struct.pack("<I", 7) + utf16z("Layout") + struct.pack("<q", 42)),
        # WClientCreateVisual (Template_18: Id Int32, HWND Int64)
        dict(provider=WPF, id=1, version=2, level=4, opcode=0, task=28, keywords=0, channel=16,
             pid=100, tid=101, ts=20, payload=struct.pack("<iq", -5, 0x12345678)),
        dict(provider=PLASO, id=1, version=1, pid=200, tid=201, ts=30,
             payload=utf16z("hello") + struct.pack("<i", -3)),
        dict(provider=REFCH1, id=1, version=0, level=2, channel=21, pid=300, tid=301, ts=40, payload=b""),
        dict(provider=UNKNOWN, id=7, version=0, pid=400, tid=401, ts=50, payload=b"\x01\x02"),
    ]
    etlwrite.write_etl(path, evs)
    return evs


def run(env, *args):
    p = subprocess.run([ETWDUMP, *args], capture_output=True, timeout=300, env=env)
    out = p.stdout.decode("utf-8")
    evs = [json.loads(x) for x in out.splitlines()] if out.lstrip().startswith("{") else []
    return p.returncode, evs, p.stderr.decode("utf-8", "replace"), out


def main():
    tmp = tempfile.mkdtemp(prefix="etw-windows-")
    try:
        img = os.path.join(tmp, "img")
        win = lay_out(img)
        etl = os.path.join(tmp, "t.etl")
        trace(etl)
        env = dict(os.environ, XDG_CACHE_HOME=os.path.join(tmp, "cache"))
        env.pop("HOME", None)

        # without --windows: no schema for any of them
        rc, evs, err, _ = run(env, etl)
        check(rc == 0 and len(evs) == 6 and all("error" in e for e in evs[1:]),
              "without --windows every event has no schema")

        # the volume root: names, fields, maps, messages
        rc, evs, err, out = run(env, "--windows", img, "--messages", etl)
        check(rc == 0, "--windows exit %d: %s" % (rc, err))
        check("damaged.dll" in err and err.count("\n") == 1,
              "one warning, naming the damaged PE: %r" % err)
        by = {(e["provider_guid"], e["id"]): e for e in evs[1:]}
        d = by.get((WPF, 12001), {})
        check(d.get("provider") == "Microsoft-Windows-WPF", "WPF provider name (PRVA): %r" % d.get("provider"))
        check(d.get("event") == "WClientUIContextDispatch/Start", "WPF 12001 name: %r" % d.get("event"))
        check(d.get("fields") == {"Priority": "Render", "Operation": "Layout", "Id": 42},
              "WPF 12001 fields, Priority through the map: %r" % d.get("fields"))
        v = by.get((WPF, 1), {})
        check(v.get("event") == "WClientCreateVisual" and v.get("fields") == {"Id": -5, "HWND": 0x12345678},
              "WPF 1: %r %r" % (v.get("event"), v.get("fields")))
        pl = by.get((PLASO, 1), {})
        check(pl.get("fields") == {"name": "hello", "value": -3}, "plaso fields: %r" % pl.get("fields"))
        check(pl.get("message") == "A test value", "plaso --messages: %r" % pl.get("message"))
        check(pl.get("provider") == PLASO and pl.get("event") == "EventID(1)",
              "plaso: a v3.1 blob without a provider message: %r %r" % (pl.get("provider"), pl.get("event")))
        rf = by.get((REFCH1, 1), {})
        check(rf.get("provider") == "ProviderName1" and rf.get("message") == "Event.1.1" and "error" not in rf,
              "ReferenceChannels (a .sys in drivers): %r" % rf)
        un = by.get((UNKNOWN, 7), {})
        check("no schema" in un.get("error", ""), "an unknown provider stays unknown: %r" % un)

        # the cache: one file, one line per candidate, the GUIDs of each
        cdir = os.path.join(tmp, "cache", "etwdecode")
        idx = [f for f in os.listdir(cdir)] if os.path.isdir(cdir) else []
        check(len(idx) == 1 and idx[0].startswith("windows-") and idx[0].endswith(".idx"), "cache file: %r" % idx)
        text = open(os.path.join(cdir, idx[0])).read() if idx else ""
        lines = text.splitlines()
        check(lines and lines[0].startswith("etwdecode-windows-index 1\t"), "cache header")
        files = {ln.split("\t")[1]: ln.split("\t")[0].split(" ") for ln in lines[1:]}
        check(sorted(files) == sorted(["System32/wpfsplit.dll", "System32/zz-wpf.dll", "System32/nomanifest.dll",
                                       "System32/damaged.dll", "System32/text.dll", "System32/drivers/refch.sys",
                                       "SysWOW64/plaso.dll", "WinSxS/amd64_x_1/TaskOpcodes.dll"]),
              "cache lists every candidate file: %r" % sorted(files))
        check(files.get("SysWOW64/plaso.dll", [])[2:] == ["1", PLASO], "plaso's cache line: %r"
              % files.get("SysWOW64/plaso.dll"))
        check(files.get("System32/drivers/refch.sys", [""] * 3)[2] == "2", "refch.sys holds 2 providers")
        check(files.get("System32/nomanifest.dll", [""] * 3)[2] == "0", "no manifest: 0 GUIDs")

        # a second run: the same output from the cache; the cache is not rewritten
        before = os.stat(os.path.join(cdir, idx[0])).st_mtime_ns if idx else 0
        rc2, evs2, err2, out2 = run(env, "--windows", img, "--messages", etl)
        check(rc2 == 0 and out2 == out, "second run (from the cache): the same output")
        check("damaged.dll" not in err2, "second run: the damaged file is not read again: %r" % err2)
        check(idx and os.stat(os.path.join(cdir, idx[0])).st_mtime_ns == before, "cache not rewritten")

        # the Windows folder itself, and -j 2: the same events
        rc3, _, _, out3 = run(env, "--windows", win, "--messages", "-j", "2", etl)
        check(rc3 == 0 and out3 == out, "--windows on the Windows folder with -j 2: the same output")

        # --lang de-DE: the German .mui gives the map entry
        rc4, evs4, _, _ = run(env, "--windows", img, "--lang", "de-DE", etl)
        d4 = {(e["provider_guid"], e["id"]): e for e in evs4[1:]}.get((WPF, 12001), {})
        check(rc4 == 0 and d4.get("fields", {}).get("Priority") == "Zeigen", "--lang de-DE: %r" % d4.get("fields"))

        # a changed file is read again: plaso.dll replaced by TaskOpcodes.dll
        shutil.copyfile(os.path.join(DLLS, "TaskOpcodes.dll"), os.path.join(win, "SysWOW64", "plaso.dll"))
        os.utime(os.path.join(win, "SysWOW64", "plaso.dll"), ns=(1, 1))
        rc5, evs5, _, _ = run(env, "--windows", img, etl)
        p5 = {(e["provider_guid"], e["id"]): e for e in evs5[1:]}.get((PLASO, 1), {})
        check(rc5 == 0 and "no schema" in p5.get("error", ""), "the changed file no longer holds plaso's provider")
        text5 = open(os.path.join(cdir, idx[0])).read() if idx else ""
        check(PLASO not in text5, "the cache was updated")

        # errors: not a Windows folder; a missing folder
        rc6, _, err6, _ = run(env, "--windows", tmp, etl)
        check(rc6 == 2 and "not a Windows folder" in err6, "not a Windows folder: %d %r" % (rc6, err6))
        rc7, _, err7, _ = run(env, "--windows", os.path.join(tmp, "nope"), etl)
        check(rc7 == 2 and "not a Windows folder" in err7, "missing folder: %d %r" % (rc7, err7))

        # -m with the PE file alone gives the same events as --windows
        rc8, evs8, _, _ = run(env, "-m", os.path.join(DLLS, "wpf-etw.dll"), etl)
        d8 = {(e["provider_guid"], e["id"]): e for e in evs8[1:]}.get((WPF, 12001), {})
        check(rc8 == 0 and d8.get("fields") == d.get("fields") and d8.get("event") == d.get("event"),
              "-m wpf-etw.dll: %r" % d8)
        # -m DIR with PE files: cataloged by their WEVT_TEMPLATE GUIDs and
        # loaded when used (a damaged PE and a PE without one are only counted)
        mdir = os.path.join(tmp, "mdir")
        os.makedirs(mdir)
        shutil.copyfile(os.path.join(DLLS, "wpf-etw.dll"), os.path.join(mdir, "wpf.dll"))
        shutil.copyfile(os.path.join(PE, "wrc-test-wevt_template.dll"), os.path.join(mdir, "plaso.dll"))
        shutil.copyfile(os.path.join(PE, "wrc_test.dll"), os.path.join(mdir, "nomanifest.dll"))
        shutil.copyfile(os.path.join(win, "System32", "damaged.dll"), os.path.join(mdir, "damaged.dll"))
        rc10, evs10, err10, _ = run(env, "-m", mdir, "--messages", etl)
        by10 = {(e["provider_guid"], e["id"]): e for e in evs10[1:]}
        check(rc10 == 0 and by10.get((WPF, 12001), {}).get("fields") == d.get("fields") and
              by10.get((PLASO, 1), {}).get("message") == "A test value" and
              "no schema" in by10.get((REFCH1, 1), {}).get("error", ""),
              "-m DIR of PE files: %r %r" % (by10.get((WPF, 12001)), err10))
        check(err10.count("\n") <= 1, "-m DIR of PE files: at most one summary line: %r" % err10)

        # -m with the bare blob: the same events, but no message table: a
        # map entry without its text is its value
        rc9, evs9, err9, _ = run(env, "-m", os.path.join(DATA, "wevt", "event-trace-kit", "wpf-etw.wevt.v5.bin"), etl)
        d9 = {(e["provider_guid"], e["id"]): e for e in evs9[1:]}.get((WPF, 12001), {})
        check(rc9 == 0 and d9.get("event") == "WClientUIContextDispatch/Start" and
              d9.get("fields") == {"Priority": "7", "Operation": "Layout", "Id": 42},
              "-m wpf-etw.wevt.v5.bin: %r %r" % (d9, err9))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print("%d passed, %d failed" % (passed, failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
