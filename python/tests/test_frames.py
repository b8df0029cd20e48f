"""to_pandas(), stats() and schemas()."""
import collections
import re

import etwdecode
from conftest import TRACES, etwdump_events, etwdump_stats_json, etwdump_text, trace


def test_to_pandas_columns_and_time():
    df = etwdecode.to_pandas(trace("HTTP_Server.etl"))
    assert list(df.columns[:15]) == list(etwdecode.HEADER_KEYS)
    assert "fields" in df.columns
    assert str(df["time"].dtype) == "datetime64[ns, UTC]"
    assert len(df) == 2042
    # the session start, exact to 100 ns, as etwdump writes it
    first = etwdump_events("HTTP_Server.etl")[0]["time"]
    assert df["time"].iloc[0].strftime("%Y-%m-%dT%H:%M:%S.") + "%07d" % (
        df["time"].iloc[0].value % 10**9 // 100) + "Z" == first


def test_to_pandas_one_kind_gets_field_columns():
    evs = [e for e in etwdecode.open(trace("BondEtwSample.etl")) if e["event"] == "WriteBinaryPayload"]
    from etwdecode._frames import events_to_frame
    df = events_to_frame(evs)
    assert "fields" not in df.columns
    assert "inputProtocol" in df.columns and set(df["inputProtocol"]) == {"BOND_V1"}
    assert len(df) == len(evs) == 10


def stats_table(name):
    rc, out, err = etwdump_text("--stats", trace(name))
    assert rc == 0, err
    return out


def test_stats_equal_etwdump_stats():
    for name in TRACES:
        st = etwdecode.stats(trace(name))
        js = etwdump_stats_json(name)
        if js is not None:  # an etwdump whose --stats has a JSON form
            f = js["files"][0]
            for k in ("events", "buffers", "buffers_compressed", "pointer_size", "processors"):
                assert st[k] == f[k], (name, k)
            continue
        out = stats_table(name)
        assert re.search(r"^events\s+%d " % st["events"], out, re.M), name
        assert re.search(r"^buffers\s+%d \(compressed %d" % (st["buffers"], st["buffers_compressed"]), out, re.M)
        assert re.search(r"^pointer size\s+%d$" % st["pointer_size"], out, re.M)
        assert re.search(r"^processors\s+%d$" % st["processors"], out, re.M)
        assert re.search(r"^OS version\s+%s$" % re.escape(st["os_version"]), out, re.M)
        table = out.split("events by provider\n", 1)[1]
        want = {}
        for line in table.splitlines():
            m = re.match(r"\s+([0-9a-f-]{36})\s+(\d+)(  \(Windows Kernel\))?$", line)
            if m:
                want[(m.group(1), bool(m.group(3)))] = int(m.group(2))
        got = {(p["provider_guid"], p["kernel"]): p["events"] for p in st["events_by_provider"]}
        assert got == want, name
        forms = out.split("events by header form\n", 1)[1].split("\n\n", 1)[0]
        want_forms = {l.split()[0]: int(l.split()[1]) for l in forms.splitlines() if l.strip()}
        assert st["events_by_form"] == want_forms, name


def test_schemas_lists_event_kinds_with_counts():
    kinds = etwdecode.schemas(trace("BondEtwSample.etl"))
    by_event = {k["event"]: k for k in kinds}
    assert by_event["WriteBinaryPayload"]["events"] == 10
    assert "inputProtocol" in by_event["WriteBinaryPayload"]["fields"]
    want = collections.Counter(e["event"] for e in etwdump_events("BondEtwSample.etl"))
    assert {k["event"]: k["events"] for k in kinds} == dict(want)
