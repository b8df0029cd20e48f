#!/usr/bin/env python3
"""The SystemConfig kernel events of Windows 10 traces, decoded field by field
against their own bytes.

usage: test_kernel_config.py ETWDUMP DATA_DIR

The trace is PerfView's diaghub-dotnetcore3.1-win-x64-diagsession.zip (its
kernel trace, recorded by Visual Studio's diagnostics hub on Windows 10
19041). Each SystemConfig event of types 29 CodeIntegrity, 30
TelemetryConfiguration, 33 DeviceFamily, 34 FlightIds and 35 Processors is
read twice: by etwdump (the layout of src/source/etw_kernel_sysconfig.c) and
here from the event's raw bytes with struct, following the layouts of
shared/docs/kernel/kernel-mof.md section 5. Every other SystemConfig event
decodes whole; only types 36 and 37, which no public source describes, keep
an error.

KernelTraceControl's WinSat records of SelfDescribingSingleEvent.etl (PerfView's
test trace): the XML the library decompresses (LZNT1) and its terminating
NUL have exactly the UncompressedLength the payload states, in UTF-16 bytes
(1052, 2348, 17888, as kernel-mof.md's correction measured), parses with Python's XML parser, and
its root element is the event's name. Prints "N passed, N failed".
"""
import xml.etree.ElementTree as ET
import json
import os
import struct
import subprocess
import sys
import uuid

ETWDUMP, DATA = sys.argv[1], sys.argv[2]
DIAGHUB = os.path.join(DATA, "diaghub-dotnetcore3.1-win-x64-diagsession.zip")
passed = failed = 0


def check(cond, what):
    global passed, failed
    if cond:
        passed += 1
    else:
        failed += 1
        print("FAIL: " + what, file=sys.stderr)


def events(*args):
    p = subprocess.run([ETWDUMP, "-q", "--raw", *args], capture_output=True, timeout=300)
    return [json.loads(line) for line in p.stdout.decode("utf-8").splitlines()]


def wchars(b, off, units):
    """A fixed WCHAR[units] field: the text before the first NUL."""
    s = b[off:off + 2 * units].decode("utf-16le")
    return s.split("\0", 1)[0]


def wstring(b, off):
    """A NUL-terminated UTF-16LE string and the offset after it."""
    end = off
    while b[end:end + 2] != b"\0\0":
        end += 2
    return b[off:end].decode("utf-16le"), end + 2


config = events("--event", "SystemConfig/*", DIAGHUB)
by_event = {}
for e in config:
    by_event.setdefault(e["event"], []).append(e)

# types 36 and 37 have no public layout; everything else decodes whole
errors = sorted({e["event"] for e in config if "error" in e})
check(errors == ["SystemConfig/Opcode(36)", "SystemConfig/Opcode(37)"],
      "SystemConfig errors only for the undocumented types: %r" % errors)
check(len(config) == 406, "406 SystemConfig events in the kernel trace (%d)" % len(config))

# 35 Processors: u32 index, u32 feature set, u32 speed, WCHAR name[64],
# identifier[128], vendor[16] (428 bytes, one event per processor)
procs = by_event.get("SystemConfig/Processors", [])
check(len(procs) == 4, "one Processors event per processor (4 in the CPU event): %d" % len(procs))
cpu = by_event["SystemConfig/CPU"][0]["fields"]
check(cpu["NumberOfProcessors"] == len(procs), "NumberOfProcessors %r" % cpu["NumberOfProcessors"])
for e in procs:
    b = bytes.fromhex(e["raw"])
    f = e["fields"]
    index, features, speed = struct.unpack_from("<III", b)
    want = {"ProcessorIndex": index, "FeatureSet": features, "ProcessorSpeed": speed,
            "ProcessorName": wchars(b, 12, 64), "ProcessorIdentifier": wchars(b, 140, 128),
            "VendorIdentifier": wchars(b, 396, 16)}
    check(len(b) == 428 and f == want, "Processors %d: %r" % (index, f))
check(sorted(e["fields"]["ProcessorIndex"] for e in procs) == [0, 1, 2, 3], "processor indexes")
check(procs[0]["fields"]["VendorIdentifier"] == "GenuineIntel"
      and procs[0]["fields"]["ProcessorIdentifier"].startswith("Intel64 Family 6"),
      "the vendor and identifier are not swapped: %r" % procs[0]["fields"])

# 33 DeviceFamily: u64 UAPInfo (the OS version, 16:16:16:16), u32, u32
fam = by_event["SystemConfig/DeviceFamily"][0]
b = bytes.fromhex(fam["raw"])
uap, family, form = struct.unpack("<QII", b)
check(fam["fields"] == {"UAPInfo": uap, "DeviceFamily": family, "DeviceForm": form},
      "DeviceFamily %r" % fam["fields"])
# the version it packs is the trace's OS build (the header's 10.0.19041)
check(uap >> 48 == 10 and (uap >> 16) & 0xFFFF == 19041, "UAPInfo is 10.0.19041.x: %x" % uap)

# 34 FlightIds: two NUL-terminated strings
fl = by_event["SystemConfig/FlightIds"][0]
b = bytes.fromhex(fl["raw"])
update, off = wstring(b, 0)
flights, off = wstring(b, off)
check(off == len(b) and fl["fields"] == {"UpdateId": update, "FlightIdList": flights},
      "FlightIds %r" % fl["fields"])

# 29 CodeIntegrity: u32; 30 TelemetryConfiguration: a GUID
ci = by_event["SystemConfig/CodeIntegrity"][0]
check(ci["fields"] == {"CodeIntegrityInfo": struct.unpack("<I", bytes.fromhex(ci["raw"]))[0]},
      "CodeIntegrity %r" % ci["fields"])
tc = by_event["SystemConfig/TelemetryConfiguration"][0]
check(tc["fields"] == {"MachineId": str(uuid.UUID(bytes_le=bytes.fromhex(tc["raw"])))},
      "TelemetryConfiguration %r" % tc["fields"])

# WinSat: u32 State, u32 UncompressedLength, LZNT1-compressed UTF-16 XML
winsat = events("--event", "WinSat/*", os.path.join(DATA, "SelfDescribingSingleEvent.etl"))
check([e["event"] for e in winsat] == ["WinSat/WinSPR", "WinSat/Metrics", "WinSat/SystemConfig"],
      "three WinSat events: %r" % [e["event"] for e in winsat])
for e, size in zip(winsat, (1052, 2348, 17888)):
    f = e["fields"]
    b = bytes.fromhex(e["raw"])
    check(e["provider"] == "KernelTraceControl" and "error" not in e, "%s: %r" % (e["event"], e.get("error")))
    check((f["State"], f["UncompressedLength"]) == struct.unpack_from("<II", b), "%s header" % e["event"])
    xml = f.get("Xml", "")
    # the stated length counts the text's terminating NUL, which ends the string
    check(len(xml.encode("utf-16le")) + 2 == f["UncompressedLength"] == size,
          "%s: %d UTF-16 bytes of XML + NUL, %d stated" % (e["event"], len(xml.encode("utf-16le")), size))
    try:
        root = ET.fromstring(xml).tag
    except ET.ParseError as err:
        root = "not XML: %s" % err
    check(root == e["event"].split("/")[1], "%s root element %r" % (e["event"], root))
spr = ET.fromstring(winsat[0]["fields"]["Xml"])
check(spr.findtext("SystemScore") == "8" and spr.findtext("MemoryScore") == "9.2",
      "WinSPR scores %r %r" % (spr.findtext("SystemScore"), spr.findtext("MemoryScore")))

print("%d passed, %d failed" % (passed, failed))
sys.exit(1 if failed else 0)
