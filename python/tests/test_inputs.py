"""etwdecode.open() over several inputs and compressed ones: files, folders
and globs merged as etwdump merges them (the same events in the same order,
each with its "file"), a PerfView-style .etl.zip, a .etl.gz, and files that
are not traces named as such."""
import gzip
import json
import os
import shutil
import subprocess
import zipfile

import pytest

import etwdecode
from conftest import ETWDUMP, trace

HTTP, GC = 2042, 71  # records in HTTP_Server.etl and gcevents.etl (test_etwdump.py)


def etwdump_order(*paths):
    p = subprocess.run([ETWDUMP, *paths], capture_output=True, timeout=600, check=True)
    return [(e["file"], e["provider"], e["event"], e["pid"], e["tid"]) for e in map(json.loads, p.stdout.splitlines())]


def order(events):
    return [(e["file"], e["provider"], e["event"], e["pid"], e["tid"]) for e in events]


def test_several_files_merged_as_etwdump_merges_them():
    paths = [trace("HTTP_Server.etl"), trace("gcevents.etl")]
    evs = list(etwdecode.open(paths))
    assert len(evs) == HTTP + GC
    assert order(evs) == etwdump_order(*paths)
    assert sum(1 for e in evs if e["file"] == paths[1]) == GC


def test_folder_and_glob(tmp_path):
    shutil.copy(trace("HTTP_Server.etl"), tmp_path / "a.etl")
    sub = tmp_path / "sub"
    sub.mkdir()
    with open(trace("gcevents.etl"), "rb") as f, gzip.open(sub / "b.etl.gz", "wb") as g:
        g.write(f.read())
    (tmp_path / "notes.txt").write_text("not a trace\n")
    evs = list(etwdecode.open(tmp_path))
    assert len(evs) == HTTP + GC
    assert {e["file"] for e in evs} == {str(tmp_path / "a.etl"), str(sub / "b.etl.gz")}
    globbed = list(etwdecode.open(str(tmp_path / "**" / "*.etl*")))
    assert order(globbed) == order(evs)
    with pytest.raises(FileNotFoundError):
        etwdecode.open(str(tmp_path / "*.nothing"))


def test_zip_of_two_traces(tmp_path):
    z = tmp_path / "session.etl.zip"
    with zipfile.ZipFile(z, "w", zipfile.ZIP_DEFLATED) as zf:
        zf.write(trace("HTTP_Server.etl"), "HTTP_Server.etl")
        zf.write(trace("gcevents.etl"), "more/gcevents.etl")
        zf.writestr("symbols/readme.txt", "x")
    evs = list(etwdecode.open(z))
    counts = {}
    for e in evs:
        counts[e["file"]] = counts.get(e["file"], 0) + 1
    assert counts == {"%s:HTTP_Server.etl" % z: HTTP, "%s:more/gcevents.etl" % z: GC}
    assert order(evs) == etwdump_order(str(z))
    with pytest.raises(etwdecode.Error, match="holds 2 traces"):
        etwdecode.Reader(str(z), [])


def test_gzip_is_the_trace(tmp_path):
    gz = tmp_path / "gc.etl.gz"
    with open(trace("gcevents.etl"), "rb") as f:
        gz.write_bytes(gzip.compress(f.read()))
    plain = list(etwdecode.open(trace("gcevents.etl")))
    packed = list(etwdecode.open(gz))
    assert len(packed) == GC and packed == plain  # one trace: no "file" key, as for a plain file


def test_not_a_trace_is_named(tmp_path):
    evtx = tmp_path / "System.evtx"
    evtx.write_bytes(b"ElfFile\x00" + bytes(4088))
    with pytest.raises(etwdecode.Error, match="an EVTX event log"):
        etwdecode.open(evtx)
    cut = tmp_path / "cut.etl.gz"
    with open(trace("gcevents.etl"), "rb") as f:
        cut.write_bytes(gzip.compress(f.read())[:2000])
    with pytest.raises(etwdecode.Error, match="does not decompress"):
        etwdecode.open(cut)


def test_tl_cache_mb_bounds_traceLogging_schemas(tmp_path):
    """tl_cache_mb= is etwdump's --tl-cache: 60,000 events that each bring a
    new TraceLogging schema decode the same under a 1 MB budget as under the
    default, and the budget is what the process keeps (measured in a child:
    the peak RSS with 1 MB is well below the default's, which holds them all)."""
    import struct
    import sys
    import uuid
    from conftest import ROOT
    sys.path.insert(0, os.path.join(ROOT, "tests"))
    import etlwrite
    prov = uuid.UUID("4f50731a-89cf-4782-b3e0-dce8c90476bb")

    def meta(event, field):  # TraceLoggingProvider.h: size, tags, name, then name + in-type (8: UINT32)
        body = b"\0" + event.encode() + b"\0" + field.encode() + b"\0" + bytes([8])
        return struct.pack("<H", 2 + len(body)) + body

    n = 60000
    etl = str(tmp_path / "churn.etl")
    etlwrite.write_etl(etl, [dict(provider=prov, ts=i, ext=[(11, meta("E%d" % i, "field_%06d_with_a_longer_name" % i))],
                                  payload=struct.pack("<I", 3 * i)) for i in range(n)])
    small = [(e["event"], e["fields"]) for e in etwdecode.open(etl, tl_cache_mb=1) if "fields" in e and
             e.get("provider_guid") == str(prov)]
    assert small == [("E%d" % i, {"field_%06d_with_a_longer_name" % i: 3 * i}) for i in range(n)]
    # to_pandas' columns and Fields cells, whose names are cached by address too
    df = etwdecode.to_pandas(etl, tl_cache_mb=1)
    rows = df[df["provider_guid"] == str(prov)]
    assert [(e, dict(f)) for e, f in zip(rows["event"], rows["fields"])] == \
        [("E%d" % i, {"field_%06d_with_a_longer_name" % i: 3 * i}) for i in range(n)]
    # VmHWM: the peak of this process's own memory (ru_maxrss would carry the
    # parent's peak across the fork)
    child = ("import etwdecode, sys\n"
             "for e in etwdecode.open(sys.argv[1], tl_cache_mb=int(sys.argv[2])): pass\n"
             "print([l.split()[1] for l in open('/proc/self/status') if l.startswith('VmHWM')][0])\n")
    peak = {mb: int(subprocess.run([sys.executable, "-c", child, etl, str(mb)], check=True,
                                   stdout=subprocess.PIPE).stdout) for mb in (1, 0)}
    assert peak[0] - peak[1] > 8 * 1024, peak  # KiB: the default kept > 8 MB more
    for bad in (-1, 2 ** 40):
        with pytest.raises(ValueError):
            etwdecode.open(etl, tl_cache_mb=bad)
