"""to_pandas(), stats() and schemas()."""
import json

import pytest

import etwdecode
from conftest import MANIFESTS, TRACES, etwdump_events, etwdump_stats_json, etwdump_text, trace


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


@pytest.mark.parametrize("name", TRACES)
def test_stats_equal_etwdump_stats_json(name):
    ms = MANIFESTS.get(name, [])
    assert etwdecode.stats(trace(name), ms) == etwdump_stats_json(name, ms)


def test_stats_with_filters_and_schemas_of_every_trace():
    ms = MANIFESTS["net.4.5.2.x64.etl"]
    got = etwdecode.stats(trace("net.4.5.2.x64.etl"), ms, event="GC/*", since="1.5")
    args = ["--stats", "--format", "json", "--event", "GC/*", "--since", "1.5"]
    for m in ms:
        args += ["-m", m]
    rc, out, err = etwdump_text(*args, trace("net.4.5.2.x64.etl"))
    assert rc == 0, err
    want = json.loads(out)
    want.pop("cpu_samples", None)  # etwdump's CPU profile: etwdecode.profile() in Python
    assert got == want and got["events"] > 0
    for name in TRACES:
        args = ["--schemas"]
        for m in MANIFESTS.get(name, []):
            args += ["-m", m]
        rc, out, err = etwdump_text(*args, trace(name))
        assert etwdecode.schemas(trace(name), MANIFESTS.get(name, [])) == json.loads(out)["schemas"], name


def test_schemas_lists_event_kinds_with_counts():
    kinds = etwdecode.schemas(trace("BondEtwSample.etl"))
    by_event = {k["event"]: k for k in kinds}
    assert by_event["WriteBinaryPayload"]["events"] == 10
    assert by_event["WriteBinaryPayload"]["source"] == "eventsource"
    assert [f["name"] for f in by_event["WriteBinaryPayload"]["fields"]][:3] == [
        "occurenceFileTimeUtc", "receiveFileTimeUtc", "inputProtocol"]
