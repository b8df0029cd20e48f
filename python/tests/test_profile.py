"""etwdecode.profile() and open(stacks=True) on net.4.5.2.x64.etl.

Expected values come from the events themselves (PerfInfo/Sample decoded
without stacks, PerfView's idle filter applied here: docs/stacks.md rule
10), not from the profile code: 6,320 samples (PerfView's count)."""
import re

import pytest

import etwdecode
from conftest import trace

NET = trace("net.4.5.2.x64.etl")


@pytest.fixture(scope="module")
def kept():
    evs = list(etwdecode.open(NET, event="PerfInfo/Sample"))
    return [e for e in evs if not (e["fields"]["ThreadId"] == 0 and (e["fields"]["Reserved"] & 3) == 0)]


@pytest.fixture(scope="module")
def prof():
    return etwdecode.profile(NET)


def test_profile_columns(prof):
    assert list(prof.columns) == list(etwdecode.PROFILE_COLUMNS)
    assert len(prof) > 0
    assert all(isinstance(f, list) and all(isinstance(x, str) for x in f) for f in prof["frames"])
    # one row per (process, thread, stack)
    assert not prof.duplicated(["pid", "tid", "stack"]).any()


def test_profile_counts_the_samples(prof, kept):
    assert len(kept) == 6320
    assert prof["count"].sum() == len(kept)
    assert prof["weight"].sum() == len(kept)
    per_pid = prof.groupby("pid")["count"].sum().to_dict()
    expect = {}
    for e in kept:
        expect[e["pid"]] = expect.get(e["pid"], 0) + 1
    assert per_pid == expect


def test_profile_hot_path(prof):
    test = prof[prof["process"].str.lower() == "test.x64.exe"]
    assert len(test) > 0
    # innermost first: the leaf is frames[0]
    leaves = test[test["frames"].map(lambda f: bool(f) and "System.DateTime.GetDatePart" in f[0])]
    assert leaves["count"].sum() > 0


def test_profile_selection(kept):
    pid = next(e["pid"] for e in kept if e["pid"] not in (-1, 0, 4))
    df = etwdecode.profile(NET, pid=pid)
    assert set(df["pid"]) == {pid}
    assert df["count"].sum() == sum(1 for e in kept if e["pid"] == pid)


def test_profile_event_weight():
    loads = list(etwdecode.open(NET, event="Image/Load"))
    df = etwdecode.profile(NET, event="Image/Load", weight="ImageSize")
    assert df["count"].sum() == len(loads)
    assert df["weight"].sum() == sum(e["fields"]["ImageSize"] for e in loads)
    with pytest.raises(ValueError):
        etwdecode.profile(NET, weight="ImageSize")


def test_stacks_events():
    plain = list(etwdecode.open(NET, max_events=20000))
    withs = list(etwdecode.open(NET, max_events=20000, stacks=True))
    assert len(plain) == len(withs)
    stacked = 0
    for a, b in zip(plain, withs):
        skip = ("stack", "stack_match_id", "more_stacks")  # stacks=True replaces the STACK_TRACE items
        assert {k: v for k, v in a.items() if k not in skip} == {k: v for k, v in b.items() if k not in skip}
        if "stack" in b:
            stacked += 1
            assert b["stack"] and all(isinstance(f, str) for f in b["stack"])
    assert stacked > 0
    # a sample's first frame names its instruction pointer's place
    samples = [e for e in withs if e["event"] == "PerfInfo/Sample" and "stack" in e]
    assert samples
    for e in samples[:200]:
        first = e["stack"][0]
        assert re.fullmatch(r"0x[0-9a-f]+", first) is None or int(first, 16) == e["fields"]["InstructionPointer"]
