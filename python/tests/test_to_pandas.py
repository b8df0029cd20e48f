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
