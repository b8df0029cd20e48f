"""open(**filters) selects what etwdump's selection options select (both are
the library's etw_filter)."""
import os

import pytest

import etwdecode
import etwdecode.dask as ed
from conftest import DATA, MANIFESTS, etwdump_events, trace
from test_events import same_event

CASES = [
    ("HTTP_Server.etl", {"provider": "Microsoft-Windows-HttpService"}, ["--provider", "Microsoft-Windows-HttpService"]),
    ("HTTP_Server.etl", {"id": "1-3,7"}, ["--id", "1-3,7"]),
    ("net.4.5.2.x64.etl", {"provider": ["!Windows Kernel", "!Microsoft-Windows-DotNETRuntime"]},
     ["--exclude-provider", "Windows Kernel", "--exclude-provider", "Microsoft-Windows-DotNETRuntime"]),
    ("net.4.5.2.x64.etl", {"event": "GC/*", "pid": 3428}, ["--event", "GC/*", "--pid", "3428"]),
    ("net.4.5.2.x64.etl", {"since": "1.5", "until": "2.25"}, ["--since", "1.5", "--until", "2.25"]),
    # smss.exe is pid 456 (its Process/DCStart); "process" is compared by same_event too
    ("net.4.5.2.x64.etl", {"process": "SMSS*"}, ["--process", "SMSS*"]),
    ("net.4.5.2.x64.etl", {"where": ["ProcessID=3676", "ImageName=*test*"]},
     ["--where", "ProcessID=3676", "--where", "ImageName=*test*"]),
    ("net.4.5.2.x64.etl", {"process": "!Idle", "event": "PerfInfo/*"}, ["--exclude-process", "Idle", "--event", "PerfInfo/*"]),
    # (ShutdownPerfDiagLogger.etl, the kernel trace, has no error events since its MOF classes decode)
    ("powershell.etl", {"errors": True}, ["--errors"]),
    ("ShutdownPerfDiagLogger.etl", {"errors": False, "level": 4}, ["--exclude-errors", "--level", "4"]),
    ("powershell.etl", {"keywords": 0x8000000000000000}, ["--keywords", str(0x8000000000000000)]),
]


@pytest.mark.parametrize("name,filters,options", CASES)
def test_filters_select_what_etwdump_selects(name, filters, options):
    got = list(etwdecode.open(trace(name), MANIFESTS.get(name, []), **filters))
    want = etwdump_events(name, *options)
    assert len(got) == len(want)
    for i, (a, b) in enumerate(zip(got, want)):
        same_event(a, b, "%s#%d" % (name, i))


def test_filters_select_something():
    # the cases above are not all empty selections
    sizes = [len(etwdump_events(n, *o)) for n, _f, o in CASES]
    assert sum(1 for s in sizes if s > 0) >= 6


def test_bad_filter_value_says_which():
    with pytest.raises(ValueError) as e:
        etwdecode.open(trace("HTTP_Server.etl"), level="loud")
    assert "level" in str(e.value)


def test_relative_time_in_a_split_counts_from_the_session_start():
    # a time range partition has no log-file header: the origin is set anyway
    name = "net.4.5.2.x64.etl"
    plan = ed.partitions(trace(name), npartitions=4)
    pairs = [("since", "1.5"), ("until", "2.25")]
    got = []
    for part in plan:
        got += ed._list_of(part, [], {}, pairs)
    assert got == list(etwdecode.open(trace(name), since="1.5", until="2.25"))
    assert len(got) == len(etwdump_events(name, "--since", "1.5", "--until", "2.25")) > 0
