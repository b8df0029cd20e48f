"""etwdecode.open(): events equal etwdump's JSON lines for every trace in
tests/data, modulo the documented type differences (docs/python.md)."""
import datetime as dt
import json
import math
import os
import re
import shutil
import warnings

import pytest

import etwdecode
from conftest import DATA, MANIFESTS, TRACES, etwdump_events, trace


def json_time_ns(t):
    m = re.fullmatch(r"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)\.(\d{7})Z", t)
    assert m, t
    base = dt.datetime.strptime(m.group(1), "%Y-%m-%dT%H:%M:%S").replace(tzinfo=dt.timezone.utc)
    return int(base.timestamp()) * 10**9 + int(m.group(2)) * 100


def same(py, js, where):
    """py (etwdecode's value) is js (json.loads of etwdump's) but for the
    documented type differences: int for "0x..." strings, bytes for hex
    strings, float NaN/Infinity for their strings."""
    if isinstance(py, dict):
        assert isinstance(js, dict), where
        assert list(py) == list(js), "%s: keys %r != %r" % (where, list(py), list(js))
        for k in py:
            same(py[k], js[k], "%s.%s" % (where, k))
    elif isinstance(py, list):
        assert isinstance(js, list) and len(py) == len(js), where
        for i, (a, b) in enumerate(zip(py, js)):
            same(a, b, "%s[%d]" % (where, i))
    elif isinstance(py, bool) or py is None:
        assert py is js, "%s: %r != %r" % (where, py, js)
    elif isinstance(py, int):
        if isinstance(js, str):
            assert js.startswith("0x") and int(js, 16) == py, "%s: %r != %r" % (where, py, js)
        else:
            assert type(js) is int and js == py, "%s: %r != %r" % (where, py, js)
    elif isinstance(py, float):
        if math.isnan(py):
            assert js == "NaN", where
        elif math.isinf(py):
            assert js == ("Infinity" if py > 0 else "-Infinity"), where
        else:
            assert isinstance(js, (int, float)) and float(js) == py, "%s: %r != %r" % (where, py, js)
    elif isinstance(py, bytes):
        assert js == py.hex(), "%s: %r != %r" % (where, py, js)
    else:
        assert type(py) is str and py == js, "%s: %r != %r" % (where, py, js)


def same_event(py, js, where):
    py = dict(py)
    t = py.pop("time")
    jt = js.pop("time")
    assert (t is None and jt is None) or t == json_time_ns(jt), "%s: time %r != %r" % (where, t, jt)
    assert list(py) == list(js), "%s: keys %r != %r" % (where, list(py), list(js))
    same(py, js, where)


@pytest.mark.parametrize("name", TRACES)
def test_events_equal_etwdump(name):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", etwdecode.DamageWarning)
        got = list(etwdecode.open(trace(name), MANIFESTS.get(name, [])))
    want = etwdump_events(name)
    assert len(got) == len(want)
    for i, (a, b) in enumerate(zip(got, want)):
        same_event(a, b, "%s#%d" % (name, i))


def test_raw_option_and_no_manifest_events():
    got = list(etwdecode.open(trace("BondEtwSample.etl"), raw=True, no_manifest_events=True))
    want = etwdump_events("BondEtwSample.etl", "--raw", "--no-manifest-events")
    assert len(got) == len(want) == 12
    for i, (a, b) in enumerate(zip(got, want)):
        same_event(a, b, "raw#%d" % i)
    assert all(isinstance(e["raw"], bytes) for e in got[1:])


def test_time_is_exact_nanoseconds():
    # the log-file header's time is the session start StartTime, 100 ns exact
    ev = next(etwdecode.open(trace("BondEtwSample.etl")))
    assert ev["fields"]["StartTime"] == "2015-10-24T09:21:41.6330301Z"
    assert ev["time"] == json_time_ns("2015-10-24T09:21:41.6330301Z") == 1445678501633030100
    d = etwdecode.to_datetime(ev["time"])
    assert d == dt.datetime(2015, 10, 24, 9, 21, 41, 633030, tzinfo=dt.timezone.utc)


def test_types_are_native():
    evs = list(etwdecode.open(trace("BondEtwSample.etl")))
    ev = evs[5]
    assert ev["event"] == "WriteBinaryPayload"
    assert ev["fields"]["eventPayload"] == b")\n10/24/2015I\x0biteration 2\x00"
    assert ev["fields"]["eventPayloadLength"] == 26
    assert ev["fields"]["inputProtocol"] == "BOND_V1"
    assert isinstance(ev["keywords"], int)


def test_missing_file_raises_oserror(tmp_path):
    p = tmp_path / "none.etl"
    with pytest.raises(FileNotFoundError) as e:
        etwdecode.open(p)
    assert "none.etl" in str(e.value)


def test_not_an_etl_file_raises(tmp_path):
    p = tmp_path / "text.etl"
    p.write_bytes(b"this is not a trace" * 100)
    with pytest.raises(etwdecode.Error) as e:
        etwdecode.open(p)
    assert "text.etl" in str(e.value) and "not an ETL file" in str(e.value)


def test_missing_manifest_raises(tmp_path):
    with pytest.raises(FileNotFoundError) as e:
        etwdecode.open(trace("HTTP_Server.etl"), [str(tmp_path / "no-such.man")])
    assert "no-such.man" in str(e.value)


def test_unknown_filter_is_a_type_error():
    with pytest.raises(TypeError):
        etwdecode.open(trace("BondEtwSample.etl"), colour="red")


def test_damaged_buffer_warns_and_goes_on(tmp_path):
    # Overwrite the header of the second buffer of a copy: the reader reports
    # it (with its offset) and still returns the events of the other buffers.
    src = trace("HTTP_Server.etl")
    p = tmp_path / "damaged.etl"
    shutil.copy(src, p)
    data = bytearray(p.read_bytes())
    first = int.from_bytes(data[0:4], "little")          # size of buffer 0
    second = int.from_bytes(data[first:first + 4], "little")
    at = first + second                                   # the third buffer
    data[at:at + 0x48] = b"\xee" * 0x48
    p.write_bytes(bytes(data))
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        evs = list(etwdecode.open(p))
    msgs = [str(x.message) for x in w if issubclass(x.category, etwdecode.DamageWarning)]
    assert msgs, "no DamageWarning"
    assert "damaged.etl" in msgs[0] and "offset 0x%x" % at in " ".join(msgs)
    whole = list(etwdecode.open(src))
    assert 0 < len(evs) < len(whole)


def test_closed_reader_says_so():
    with etwdecode.open(trace("HTTP_Server.etl")) as events:
        first = next(events)
    assert first["event"] == "EventTrace"
    assert list(events) == []
    with pytest.raises(ValueError):
        events.stats()


def test_default_manifests():
    """The CLR manifest built into the library decodes gcevents.etl's .NET
    events with no manifest given; default_manifests=False is etwdump
    --no-default-manifests (69 "no schema" errors)."""
    from conftest import etwdump_text
    got = list(etwdecode.open(trace("gcevents.etl")))
    assert len(got) == 71 and not [e for e in got if "error" in e]
    start = [e for e in got if e["event"] == "GC/Start"][0]
    assert start["provider"] == "Microsoft-Windows-DotNETRuntime"
    assert start["fields"] == {"Count": 1, "Depth": 1, "Reason": "Induced", "Type": "NonConcurrentGC",
                               "ClrInstanceID": 8, "ClientSequenceNumber": 0}
    off = list(etwdecode.open(trace("gcevents.etl"), default_manifests=False))
    rc, out, err = etwdump_text("--no-default-manifests", trace("gcevents.etl"))
    want = [json.loads(line) for line in out.splitlines()]
    assert len(off) == len(want) == 71
    for i, (a, b) in enumerate(zip(off, want)):
        same_event(a, b, "no-default#%d" % i)
    assert sum("error" in e for e in off) == 69
    st = etwdecode.stats(trace("gcevents.etl"), default_manifests=False)
    assert st["errors"][0]["kind"] == "no schema" and st["errors"][0]["count"] == 69
    assert not etwdecode.stats(trace("gcevents.etl"))["errors"]
    assert {s["source"] for s in etwdecode.schemas(trace("gcevents.etl"))} == {"builtin", "mof"}
    assert "builtin" not in {s["source"] for s in etwdecode.schemas(trace("gcevents.etl"), default_manifests=False)}


def test_windows_image(tmp_path, monkeypatch):
    """windows= is etwdump --windows: plaso's test DLL (a v3.1 WEVT_TEMPLATE
    with its message table) in a folder laid out as a Windows image decodes
    a trace of its provider (written by tests/etlwrite.py) with its fields
    and message, the same as etwdump does; stats and schemas take it too."""
    import shutil
    import struct
    import sys
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "..", "tests"))
    import etlwrite
    from conftest import etwdump_text
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    sysdir = tmp_path / "img" / "Windows" / "SysWOW64"
    os.makedirs(tmp_path / "img" / "Windows" / "System32")
    os.makedirs(sysdir)
    shutil.copyfile(os.path.join(DATA, "wevt", "pe", "wrc-test-wevt_template.dll"), sysdir / "plaso.dll")
    etl = str(tmp_path / "t.etl")
    etlwrite.write_etl(etl, [dict(provider="67883bbc-d592-4d02-8e29-66907fcb07d6", id=1, version=1, ts=5,
                                  payload="hello".encode("utf-16-le") + b"\0\0" + struct.pack("<i", -3))])
    got = list(etwdecode.open(etl, windows=tmp_path / "img"))
    assert got[1]["fields"] == {"name": "hello", "value": -3} and got[1]["event"] == "EventID(1)"
    rc, out, err = etwdump_text("--windows", str(tmp_path / "img"), "--messages", etl)
    want = [json.loads(line) for line in out.splitlines()]
    assert want[1]["message"] == "A test value"
    same_event(got[1], {k: v for k, v in want[1].items() if k != "message"}, "windows")
    assert "error" in list(etwdecode.open(etl))[1]
    assert etwdecode.stats(etl, windows=str(tmp_path / "img"))["errors"] == []
    assert [s["source"] for s in etwdecode.schemas(etl, windows=str(tmp_path / "img"))] == ["manifest"]
    assert os.listdir(tmp_path / "cache" / "etwdecode")[0].startswith("windows-")
    with pytest.raises(FileNotFoundError):
        list(etwdecode.open(etl, windows=tmp_path))
    with pytest.raises(ValueError):
        etwdecode.open(etl, lang="")


def test_manifest_folder(tmp_path):
    """A directory among manifests= is cataloged and its files loaded when
    used (etwdump -m DIR): the same events as the one file it needs, with
    other manifests and a broken one beside it."""
    shutil.copyfile(os.path.join(DATA, "HTTP_Server.man"), tmp_path / "http.man")
    shutil.copyfile(os.path.join(DATA, "ClrEtwAll.man"), tmp_path / "clr.man")
    (tmp_path / "broken.man").write_text("<instrumentationManifest><provider guid='{")
    name = "HTTP_Server.etl"
    want = list(etwdecode.open(trace(name), [os.path.join(DATA, "HTTP_Server.man")]))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        got = list(etwdecode.open(trace(name), [tmp_path]))
    assert len(got) == len(want) == 2042
    assert got == want
    assert sum("error" in e for e in got) == sum("error" in e for e in want)


def test_trailing_payload_bytes_are_reported():
    # net.4.5.2.x64.etl's merged TRACE_EVENT_INFO for the CLR private
    # provider's GC/PerHeapHistory version 2 declares no fields, while the
    # events carry 433 (one 233) bytes: said, with the raw bytes, not dropped
    # (etwdump says the same: test_events_equal_etwdump).
    evs = list(etwdecode.open(trace("net.4.5.2.x64.etl"), event="GC/PerHeapHistory",
                              provider="Microsoft-Windows-DotNETRuntimePrivate"))
    assert len(evs) == 264
    for e in evs:
        n = e["data_len"]
        assert n in (233, 433) and e["fields"] == {} and len(e["raw"]) == n
        assert e["error"] == "no fields in the schema of GC/PerHeapHistory v2: %d payload bytes not decoded" % n
    # MetaData records are schemas, read by the decoder: no error
    md = list(etwdecode.open(trace("net.4.5.2.x64.etl"), event="MetaData/*"))
    assert len(md) == 85 and not any("error" in e for e in md)


def test_perfview_clr_enable_parameters_level_is_8_bytes():
    # PerfView's WriteEvent(13, (long)keywords, (int)level) binds to
    # EventSource's WriteEvent(int, long, long): 16 bytes where its manifest
    # declares 12; decoded as written (src/schema/etw_fixup.c), so nothing is
    # left over. Values: PerfView's baseline (keywords=0x14c14fccbd,
    # 0x1080060138; level=Verbose).
    evs = list(etwdecode.open(trace("net.4.5.2.x64.etl"), event="ClrEnableParameters"))
    assert [e["fields"]["keywords"] for e in evs] == [0x14c14fccbd, 0x1080060138]
    for e in evs:
        assert e["data_len"] == 16 and e["fields"]["level"] == "Verbose" and "error" not in e


def test_stack_extended_items(tmp_path):
    # Every STACK_TRACE item with its MatchId, and the STACK_KEY items
    # (evntcons.h: {u64 MatchId; addresses} and {u64 MatchId; u32/u64
    # StackKey}), in a trace written by tests/etlwrite.py; etwdump's JSON
    # and the Python dicts agree (docs/json-output.md).
    import struct
    import subprocess
    import sys
    import uuid
    from conftest import ETWDUMP, ROOT
    sys.path.insert(0, os.path.join(ROOT, "tests"))
    import etlwrite
    prov = uuid.UUID("6b1fd1a0-0000-4d00-9a00-00000000e701")
    st64 = struct.pack("<QQQQ", 0, 0xfffff80021434313, 0xfffff80021554231, 0x7ff6a0001000)
    st64b = struct.pack("<QQQ", 0x1234, 0x7ff6a0002000, 0x7ff6a0003000)
    key64 = struct.pack("<QQ", 0x1234, 0xfffffa830343e750)
    key32 = struct.pack("<QI", 0, 0x1000)
    rel = uuid.UUID("11111111-2222-3333-4444-555555555555").bytes_le
    st32 = struct.pack("<QII", 7, 0x77710000, 0x77720010)
    events = [
        dict(provider=prov, id=1, ts=10, ext=[(6, st64), (6, st64b), (0x12, key64), (1, rel), (0x11, key32)]),
        dict(provider=prov, id=2, ts=20, ext=[(5, st32)]),
        dict(provider=prov, id=3, ts=30, ext=[(0x12, key64[:12])]),  # cut: no key
    ]
    path = str(tmp_path / "stacks.etl")
    etlwrite.write_etl(path, events)
    p = subprocess.run([ETWDUMP, path], capture_output=True, timeout=60)
    js = [json.loads(x) for x in p.stdout.decode().splitlines()][1:]
    assert len(js) == 3
    a, b, c = js
    assert list(a)[list(a).index("related_activity_id"):list(a).index("fields")] == [
        "related_activity_id", "stack", "more_stacks", "stack_key", "stack_key_match_id", "more_stack_keys"]
    assert a["stack"] == ["0xfffff80021434313", "0xfffff80021554231", "0x7ff6a0001000"]
    assert "stack_match_id" not in a  # MatchId 0: the stack is whole in this event
    assert a["more_stacks"] == [{"match_id": "0x1234", "stack": ["0x7ff6a0002000", "0x7ff6a0003000"]}]
    assert a["stack_key"] == "0xfffffa830343e750" and a["stack_key_match_id"] == "0x1234"
    assert a["more_stack_keys"] == [{"stack_key": "0x1000"}]
    assert b["stack"] == ["0x77710000", "0x77720010"] and b["stack_match_id"] == "0x7"
    assert not any(k.startswith("stack") or k.startswith("more_") for k in c)
    got = list(etwdecode.open(path))[1:]
    for i, (x, y) in enumerate(zip(got, js)):
        same_event(x, y, "stacks#%d" % i)


def test_problems_past_the_cap_are_counted(tmp_path):
    # docs/python.md: at most 64 problems are kept between two events (here:
    # while opening); the rest become one "N more problems not shown".
    # 100 events each naming an undefined level give 100 problems.
    n = 100
    events = "".join('<event value="%d" level="NoSuchLevel%d"/>' % (i, i) for i in range(n))
    man = tmp_path / "many.man"
    man.write_text('<instrumentationManifest xmlns="http://schemas.microsoft.com/win/2004/08/events">'
                   '<instrumentation><events><provider name="P" guid="{8b3c6b6e-1111-4a4a-9a9a-123456789abc}">'
                   "<events>%s</events></provider></events></instrumentation></instrumentationManifest>" % events)
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        etwdecode.open(trace("HTTP_Server.etl"), manifests=[str(man)])
    msgs = [str(x.message) for x in w if issubclass(x.category, etwdecode.DamageWarning)]
    levels = [m for m in msgs if "unknown level" in m]
    assert len(levels) == 64
    assert sum(1 for m in msgs if m.endswith("%d more problems not shown" % (n - 64))) == 1


def test_oversized_manifest_is_refused(tmp_path):
    # A manifest over 64 MiB is refused before it is read (docs/limits.md);
    # a sparse file costs no disk.
    man = tmp_path / "huge.man"
    with open(man, "wb") as f:
        f.truncate((64 << 20) + 1)
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        etwdecode.open(trace("HTTP_Server.etl"), manifests=[str(man)])
    msgs = [str(x.message) for x in w if issubclass(x.category, etwdecode.DamageWarning)]
    assert any("more than the 64 MiB a manifest may be" in m for m in msgs), msgs
