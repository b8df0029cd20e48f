"""etwdecode.dask: time-split partitions equal the whole-file decode, and a
real distributed.LocalCluster (2 worker processes) counts what etwdump
counts."""
import collections
import os
import warnings

import pytest

import etwdecode
import etwdecode.dask as ed
from conftest import DATA, ETWDUMP, TRACES, etwdump_stats_json, trace

NET = "net.4.5.2.x64.etl"
ALL_MANIFESTS = [os.path.join(DATA, "HTTP_Server.man"), os.path.join(DATA, "ClrEtwAll.man")]


def whole(name, manifests=()):
    return list(etwdecode.open(trace(name), manifests))


def split(name, n, manifests=(), sizes=None):
    plan = ed.partitions(trace(name), npartitions=n)
    out = []
    for part in plan:
        events = ed._list_of(part, manifests, {}, [])
        if sizes is not None:
            sizes.append(len(events))
        out += events
    return plan, out


def test_split_of_net_into_parts_equals_whole_file():
    sizes = []
    plan, got = split(NET, 6, [os.path.join(DATA, "ClrEtwAll.man")], sizes)
    assert len(plan) >= 4
    want = whole(NET, [os.path.join(DATA, "ClrEtwAll.man")])
    assert len(got) == len(want) == 179474
    assert got == want
    # every range has events; each learns the trace's schema records from their places
    assert all(n > 0 for n in sizes)
    assert all(p["learn"] for p in plan)


@pytest.mark.parametrize("name", [t for t in TRACES if os.path.getsize(trace(t)) > 100000])
def test_split_equals_whole_file(name):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", etwdecode.DamageWarning)
        plan, got = split(name, 4)
        assert got == whole(name)


def test_small_file_is_one_partition():
    plan = ed.partitions(trace("smallEtlFile.etl"), blocksize="1MiB")
    assert plan == [{"path": trace("smallEtlFile.etl"), "range": None, "learn": None}]
    assert len(ed.partitions(trace(NET), blocksize="1MiB")) == 5


def test_missing_path_raises():
    with pytest.raises(FileNotFoundError):
        ed.read_etl(os.path.join(DATA, "no-such-*.etl"))


def stats_by_provider(name):
    """etwdump --stats (JSON form): events by provider of one trace."""
    js = etwdump_stats_json(name, ALL_MANIFESTS)
    return collections.Counter({p["provider"]: p["count"] for p in js["providers"]})


def stats_by_event(name):
    js = etwdump_stats_json(name, ALL_MANIFESTS)
    return collections.Counter({(e["provider"], e["event"]): e["count"] for e in js["events_by_name"]})


def etwdump_by_event(name):
    import json
    import subprocess
    args = [ETWDUMP]
    for m in ALL_MANIFESTS:
        args += ["-m", m]
    p = subprocess.run(args + [trace(name)], capture_output=True, timeout=600)
    c = collections.Counter()
    for line in p.stdout.splitlines():
        e = json.loads(line)
        c[(e["provider"], e["event"])] += 1
    return c


def test_local_cluster_counts_equal_etwdump_stats(client):
    # all traces, the larger ones split by time (1 MiB blocks)
    df = ed.read_etl(DATA, manifests=ALL_MANIFESTS, blocksize="1MiB")
    assert df.npartitions > len(TRACES)
    frame = df[["provider_guid", "provider", "event"]].compute()
    want_provider = collections.Counter()
    want_event = collections.Counter()
    for name in TRACES:
        want_provider.update(stats_by_provider(name))
        want_event.update(stats_by_event(name))
        assert stats_by_event(name) == etwdump_by_event(name)  # --stats agrees with the events
    assert collections.Counter(frame["provider"]) == want_provider
    by_event = collections.Counter(zip(frame["provider"], frame["event"]))
    assert by_event == want_event


def summary(events):
    """What identifies each event, cheaply: the full dicts are compared
    without a cluster above; here, that the workers' split gives the same
    events in the same order."""
    return [(e["time"], e["provider_guid"], e["event"], e["cpu"], e["pid"], e["tid"], e["data_len"],
             e.get("error"), tuple(e["fields"])) for e in events]


def packed_summary(events):
    import pickle
    return [pickle.dumps(summary(events))]  # one object per partition to send back


def test_local_cluster_split_decode_equals_whole_file(client):
    import pickle
    bag = ed.to_bag(trace(NET), npartitions=5)
    assert bag.npartitions == 5
    parts = bag.map_partitions(packed_summary).compute()
    assert len(parts) == 5
    got = [x for p in parts for x in pickle.loads(p)]
    assert got == summary(whole(NET))


def test_read_etl_frame_types(client):
    df = ed.read_etl(trace("HTTP_Server.etl"), manifests=[os.path.join(DATA, "HTTP_Server.man")],
                     npartitions=3)
    assert df.npartitions == 3
    pdf = df.compute()
    assert str(pdf["time"].dtype) == "datetime64[ns, UTC]"
    assert len(pdf) == 2042
    assert (pdf["provider"] == "Microsoft-Windows-HttpService").sum() == 2041


def test_more_partitions_than_buffers(client):
    # smallEtlFile.etl has one buffer: one range, the other partitions empty
    df = ed.read_etl(trace("smallEtlFile.etl"), npartitions=3)
    assert df.npartitions == 3
    pdf = df.compute()
    assert list(pdf["event"]) == [e["event"] for e in whole("smallEtlFile.etl")]
    assert len(pdf) == 2
