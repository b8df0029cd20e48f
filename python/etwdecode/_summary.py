"""stats() and schemas(): what etwdump --stats reports, as data."""

import os

from ._native import Reader

CLOCKS = {1: "QPC", 2: "system time", 3: "CPU cycles"}


def trace_stats(path):
    """The facts etwdump --stats prints, as a dict (no payload is decoded)."""
    path = os.fspath(path)
    r = Reader(path, no_decode=True)
    counts, _places = r._scan()
    st = r.stats()
    r.close()
    v = st["version"]
    by_provider = [
        {"provider_guid": guid, "kernel": kernel, "events": n}
        for (guid, kernel), n in counts.items()
    ]
    by_provider.sort(key=lambda p: -p["events"])
    return {
        "file": path,
        "session": st["session"],
        "os_version": "%d.%d build %d" % (v & 0xFF, (v >> 8) & 0xFF, st["os_build"]),
        "pointer_size": st["pointer_size"],
        "processors": st["processors"],
        "clock": CLOCKS.get(st["clock"], "raw"),
        "clock_hz": st["perf_freq"],
        "first_time": st["first_time"],
        "last_time": st["last_time"],
        "duration_s": (st["last_time"] - st["first_time"]) / 1e9,
        "buffers": st["buffers"],
        "buffers_compressed": st["buffers_compressed"],
        "buffers_lost_flag": st["buffers_lost_flag"],
        "buffers_skipped": st["buffers_skipped"],
        "buffers_lost": st["buffers_lost"],
        "events": st["events"],
        "events_lost": st["events_lost"],
        "records_skipped": st["records_skipped"],
        "events_by_form": st["events_by_form"],
        "events_by_provider": by_provider,
    }


def trace_schemas(path, manifests=()):
    """Each kind of event in the trace -- (provider, event, id, version) --
    with its count and the names of its top-level fields, in first-seen
    order."""
    from . import open as _open
    kinds = {}
    for ev in _open(path, manifests):
        key = (ev["provider"], ev["provider_guid"], ev["event"], ev["id"], ev["version"], ev["opcode"])
        k = kinds.get(key)
        if k is None:
            kinds[key] = k = {
                "provider": ev["provider"], "provider_guid": ev["provider_guid"],
                "event": ev["event"], "id": ev["id"], "version": ev["version"],
                "opcode": ev["opcode"], "fields": list(ev["fields"]), "events": 0,
                "errors": 0,
            }
        k["events"] += 1
        if "error" in ev:
            k["errors"] += 1
    return list(kinds.values())
