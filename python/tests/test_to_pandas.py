"""to_pandas() built in C: exact integer columns (the values etwdump's JSON
gives, read with Python's json: its ints are exact), <NA> where an event
lacks a field, categoricals, columns=, expand=, exact times, and several
traces through one decoder."""
import json
import subprocess

import numpy as np
import pandas as pd
import pytest

import etwdecode
from conftest import ETWDUMP, MANIFESTS, etwdump_events, trace
from test_events import json_time_ns, same

NET = "net.4.5.2.x64.etl"


def num(v):
    """etwdump's JSON number: an int, or a "0x..." string of one."""
    return int(v, 16) if isinstance(v, str) else v


def test_pointers_are_exact_uint64_and_missing_is_na():
    # DiskIO/Read has FileObject and Irp (pointers, values like
    # 0xfffffa80...) and ByteOffset (INT64); DiskIO/ReadInit has Irp only
    want = etwdump_events(NET, "--event", "DiskIO/Read*")
    assert {e["event"] for e in want} == {"DiskIO/Read", "DiskIO/ReadInit"}
    df = etwdecode.to_pandas(trace(NET), event="DiskIO/Read*", expand=True)
    assert len(df) == len(want)
    assert not any(str(t) == "float64" for t in df.dtypes)
    assert str(df["FileObject"].dtype) == "UInt64"  # a pointer: unsigned, <NA> on ReadInit rows
    assert str(df["ByteOffset"].dtype) == "Int64"  # INT64: signed
    assert str(df["Irp"].dtype) == "uint64"  # every row has one: plain uint64
    big = 0
    for i, e in enumerate(want):
        f = e["fields"]
        for name in ("FileObject", "ByteOffset", "Irp"):
            got = df[name].iloc[i]
            if name in f:
                assert int(got) == num(f[name]), (i, name)
                big += num(f[name]) >= 1 << 63
            else:
                assert got is pd.NA, (i, name)
    assert big > 1000  # kernel addresses above 2^63: what float64 could not hold
    assert df["FileObject"].isna().sum() == sum(e["event"] == "DiskIO/ReadInit" for e in want)


def test_one_kind_expands_and_values_equal_the_events():
    want = etwdump_events(NET, "--event", "FileIO/FileRundown")
    df = etwdecode.to_pandas(trace(NET), event="FileIO/FileRundown")
    assert "fields" not in df.columns and len(df) == len(want) > 3000
    assert [num(e["fields"]["FileObject"]) for e in want] == [int(x) for x in df["FileObject"]]
    assert list(df["FileName"]) == [e["fields"]["FileName"] for e in want]
    assert df["FileName"].dtype == object


def test_header_dtypes_and_categoricals():
    want = etwdump_events("HTTP_Server.etl")
    df = etwdecode.to_pandas(trace("HTTP_Server.etl"), MANIFESTS["HTTP_Server.etl"])
    assert list(df.columns[:15]) == list(etwdecode.HEADER_KEYS)
    assert str(df["provider"].dtype) == "category" and str(df["event"].dtype) == "category"
    assert list(df["provider"].astype(str)) == [e["provider"] for e in want]
    assert list(df["event"].astype(str)) == [e["event"] for e in want]
    assert str(df["keywords"].dtype) == "uint64"
    assert [int(k) for k in df["keywords"]] == [int(e["keywords"], 16) for e in want]
    for c in ("id", "version", "level", "opcode", "task", "channel", "pid", "tid", "cpu", "data_len"):
        assert str(df[c].dtype) == "int64", c
        assert list(df[c]) == [e[c] for e in want], c
    assert list(df["process"]) == [e.get("process") for e in want]


def test_time_is_exact_to_the_nanosecond():
    want = etwdump_events("HTTP_Server.etl")
    df = etwdecode.to_pandas(trace("HTTP_Server.etl"))
    assert str(df["time"].dtype) == "datetime64[ns, UTC]"
    got = df["time"].array.asi8.tolist()
    assert got == [json_time_ns(e["time"]) for e in want]
    assert any(t % 1000 for t in got)  # the 100 ns digit kept (a datetime would drop it)


def test_columns_builds_only_those():
    df = etwdecode.to_pandas(trace(NET), event="DiskIO/Read", columns=["time", "pid", "FileObject", "event"])
    assert list(df.columns) == ["time", "pid", "FileObject", "event"]
    want = etwdump_events(NET, "--event", "DiskIO/Read")
    assert [int(x) for x in df["FileObject"]] == [num(e["fields"]["FileObject"]) for e in want]
    only = etwdecode.to_pandas(trace("HTTP_Server.etl"), columns=["event", "fields"])
    assert list(only.columns) == ["event", "fields"]
    assert list(only["fields"]) == [e["fields"] for e in etwdecode.open(trace("HTTP_Server.etl"))]


def test_expand_false_keeps_the_dicts_and_true_takes_the_union():
    evs = list(etwdecode.open(trace("HTTP_Server.etl")))
    kept = etwdecode.to_pandas(trace("HTTP_Server.etl"), expand=False)
    assert list(kept["fields"]) == [e["fields"] for e in evs]
    default = etwdecode.to_pandas(trace("HTTP_Server.etl"))  # several kinds: the dicts
    assert "fields" in default.columns and list(default["fields"]) == [e["fields"] for e in evs]
    wide = etwdecode.to_pandas(trace("HTTP_Server.etl"), expand=True)
    names = []
    for e in evs:
        names += [k for k in e["fields"] if k not in names]
    cols = [("fields." + k if k in wide.columns[:28] and k in etwdecode.HEADER_KEYS else k) for k in names]
    assert [c for c in wide.columns if c in cols] == cols
    for i, e in enumerate(evs):
        for k, v in e["fields"].items():
            got = wide[k].iloc[i]
            if isinstance(v, (dict, list, str, bytes)):
                assert got == v, (i, k)
            else:
                assert got == v and not (isinstance(got, float) and isinstance(v, int)), (i, k)


def test_several_traces_one_decoder_as_etwdump():
    paths = [trace("HTTP_Server.etl"), trace("gcevents.etl")]
    p = subprocess.run([ETWDUMP, *paths], capture_output=True, timeout=600, check=True)
    want = [json.loads(line) for line in p.stdout.splitlines()]
    got = list(etwdecode.open(paths))
    assert len(got) == len(want)
    for i, (a, b) in enumerate(zip(got, want)):
        a, b = dict(a), dict(b)
        assert a.pop("time") == json_time_ns(b.pop("time"))
        assert list(a) == list(b), i  # "file" right after "time", as etwdump
        same(a, b, "#%d" % i)
    df = etwdecode.to_pandas(paths)
    assert str(df["file"].dtype) == "category"
    assert list(df["file"].astype(str)) == [e["file"] for e in want]
    assert df["time"].array.asi8.tolist() == [json_time_ns(e["time"]) for e in want]
    # relative since=/until= from the earliest session start of them all
    p = subprocess.run([ETWDUMP, "--since", "40", "--until", "382934405", *paths], capture_output=True, timeout=600,
                       check=True)
    cut = [json.loads(line) for line in p.stdout.splitlines()]
    mine = list(etwdecode.open(paths, since="40", until="382934405"))
    assert [(e["file"], e["event"], e["time"]) for e in mine] == [
        (e["file"], e["event"], json_time_ns(e["time"])) for e in cut]
    assert 0 < len(mine) < len(got) and len({e["file"] for e in mine}) == 2


@pytest.mark.parametrize("name, select", [("HTTP_Server.etl", {}), (NET, {"provider": "Windows Kernel"})])
def test_expanded_columns_hold_a_value_exactly_where_an_event_has_the_field(name, select):
    # field columns keep only the rows that have the field and are scattered
    # into the frame at the end: every other row must be NA, and the rows
    # that have it must line up with the events (iteration, the dict path)
    evs = list(etwdecode.open(trace(name), **select))
    wide = etwdecode.to_pandas(trace(name), expand=True, **select)
    assert len(wide) == len(evs) and len({e["event"] for e in evs}) > 3
    rows = {}
    for i, e in enumerate(evs):
        for k, v in e["fields"].items():
            if v is not None:
                rows.setdefault(k, []).append(i)
    assert rows
    for k, want in rows.items():
        col = wide["fields." + k] if "fields." + k in wide.columns else wide[k]
        assert list(np.flatnonzero(col.notna().to_numpy())) == want, k


# ---- the "fields" column: etwdecode.Fields, a read-only mapping ----

@pytest.mark.parametrize("name", [NET, "HTTP_Server.etl", "ShutdownPerfDiagLogger.etl", "gcevents.etl",
                                  "BondEtwSample.etl", "primitive-types.etl"])
def test_fields_cells_equal_etwdump_json(name):
    # every cell of the fields column (default mode; expand=False for the
    # traces of one kind) holds the payload etwdump's JSON writer prints for
    # that event, read with the json module: same keys in the same order,
    # integers exact (hex strings there), arrays and structs as lists/dicts
    want = etwdump_events(name)
    with etwdecode.open(trace(name), MANIFESTS.get(name, [])) as evs:
        kinds = {(e["provider"], e["event"]) for e in evs}
    df = etwdecode.to_pandas(trace(name), MANIFESTS.get(name, []), expand=None if len(kinds) > 1 else False)
    assert "fields" in df.columns and len(df) == len(want)
    for i, (f, e) in enumerate(zip(df["fields"], want)):
        assert type(f) is etwdecode.Fields, i
        assert list(f) == list(e["fields"]) and len(f) == len(e["fields"]), i
        same(dict(f), e["fields"], "%s#%d" % (name, i))


def test_fields_values_as_perfview_decodes_them():
    # tests/data/net.4.5.2.x64.baseline.txt (PerfView TraceEvent's decode)
    df = etwdecode.to_pandas(trace(NET), MANIFESTS[NET])
    head = df["fields"].iloc[0]  # Windows Kernel/EventTrace: the log-file header
    assert (head["BufferSize"], head["BuffersWritten"], head["NumberOfProcessors"]) == (65536, 360, 8)
    assert (head["PointerSize"], head["CPUSpeed"], head["TimerResolution"]) == (8, 3592, 156250)
    assert df["fields"].iloc[2]["SystemDirectory"] == "C:\\Windows\\system32"
    starts = df[df["event"] == "Thread/Start"]["fields"]
    f = next(f for f in starts if f["StackBase"] == 0xfffff880057f1000)
    # "Win32StartAddr=0xfffff8002185916c": above 2**63, exact (no float, no int64 wrap)
    assert f["Win32StartAddr"] == 0xfffff8002185916c and type(f["Win32StartAddr"]) is int
    assert (f["BasePriority"], f["PagePriority"], f["SubProcessTag"]) == (8, 5, 0)
    assert f.get("IoPriority") == 2 and f.get("NoSuchField") is None and f.get("NoSuchField", -1) == -1


def test_fields_mapping_api():
    import collections.abc
    import copy
    import pickle
    df = etwdecode.to_pandas(trace(NET), MANIFESTS[NET], event=["CLRStack/CLRStackWalk", "GC/Start"])
    want = [e["fields"] for e in etwdump_events(NET, "--event", "CLRStack/CLRStackWalk", "--event", "GC/Start")]
    assert len(df) == len(want) > 100
    f = df.fields.iloc[0]
    d = dict(f)
    assert isinstance(f, collections.abc.Mapping) and not isinstance(f, dict)
    assert f == d and d == f and not (f != d) and f.to_dict() == d and type(f.to_dict()) is dict
    assert list(f.keys()) == list(d) == list(iter(f)) and list(f.values()) == list(d.values())
    assert list(f.items()) == list(d.items()) and f.keys() == d.keys()
    assert len(f) == len(d) and all(k in f for k in d) and "NoSuchField" not in f
    with pytest.raises(KeyError):
        f["NoSuchField"]
    with pytest.raises(TypeError):
        hash(f)
    with pytest.raises(TypeError):
        f["X"] = 1
    assert repr(f) == repr(d) and str(f) == str(d)
    assert pickle.loads(pickle.dumps(f)) == f and type(pickle.loads(pickle.dumps(f))) is etwdecode.Fields
    assert copy.deepcopy(f) == f and copy.copy(f) == f
    assert etwdecode.Fields(d) == f and etwdecode.Fields(a=1) == {"a": 1} and etwdecode.Fields() == {}
    assert f != {**d, "extra": 1} and f != {k: 0 for k in d} and (f == 3) is False
    # the Stack array (pointers, "0x..." in etwdump's JSON): a list of exact ints, a new list each read
    walks = [i for i, w in enumerate(want) if "Stack" in w]
    assert walks
    for i in walks[:50]:
        stack = df.fields.iloc[i]["Stack"]
        assert stack == [num(x) for x in want[i]["Stack"]] and all(type(x) is int for x in stack)
    # pandas on the column
    assert df.fields.iloc[walks[0]]["FrameCount"] == want[walks[0]]["FrameCount"]
    counts = df.fields.apply(lambda x: x.get("FrameCount"))
    assert [None if c is None or c != c else int(c) for c in counts] == [w.get("FrameCount") for w in want]
    flat = pd.json_normalize(df.fields.map(dict).tolist())
    assert list(flat.columns) == list(dict.fromkeys(k for w in want for k in w))
    assert flat["ClrInstanceID"].tolist() == [w["ClrInstanceID"] for w in want]
    wide = pd.DataFrame(df.fields.tolist())  # pandas reads Mappings too
    assert sorted(wide.columns) == sorted(flat.columns) and len(wide) == len(df)
    assert json.loads(json.dumps(f.to_dict())) == json.loads(json.dumps(d))


def test_fields_of_events_without_a_payload_schema_and_of_the_header():
    # no schema: an empty Fields (as the event dict's {}); the log-file header: a Fields too
    with etwdecode.open(trace(NET)) as evs:
        empty = [i for i, e in enumerate(evs) if e["fields"] == {}]
    df = etwdecode.to_pandas(trace(NET))
    assert empty and all(df.fields.iloc[i] == {} and len(df.fields.iloc[i]) == 0 for i in empty[:100])
    assert all(type(f) is etwdecode.Fields for f in df.fields)
