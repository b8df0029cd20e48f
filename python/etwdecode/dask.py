"""etwdecode on Dask: many traces, and one large trace, over many workers.

    import etwdecode.dask as ed
    df = ed.read_etl("/traces/*.etl", manifests=["ClrEtwAll.man"], event="Process/Start")
    df.groupby("provider").size().compute()

One partition per file; a file larger than `blocksize` bytes is split by
time into several partitions, each decoded by its own task from only the
buffers its time range covers (etw_reader_set_range). The split decode gives
exactly the events of the whole-file decode, in order: the time ranges are
cut on each processor's order time, so events of buffers that straddle a
boundary come once, and the schemas the trace teaches (merged metadata,
EventSource manifests sent before the range) are read by each task from
their records alone.

What a task receives: the path (the file must be on storage every worker
sees), the manifest paths, the filters, and for a split file its time range
and the places (buffer offset, record offset) of the schema records -- a few
numbers per partition, never an event. Planning a split reads the file's
record headers once on the client (no payload decoding).

Memory per worker: a task holds one partition: the reader's buffer per
processor and its index (a few MiB), and the partition's rows as Python
objects, about 1.0-1.3 KB per event; a partition peaks at about 60 x
blocksize for compressed traces (net.4.5.2.x64.etl: 4.7 MiB, 179,474 events,
290 MiB peak), ~0.5 GiB at the default 8 MiB, whatever the file's size. A
worker running N threads holds N partitions (docs/python.md).
"""

import glob as _glob
import math
import os

from . import Reader, _frames
from ._filters import predicates

__all__ = ["read_etl", "to_bag", "partitions"]

DEFAULT_BLOCKSIZE = 8 * 1024 * 1024


def _paths(paths_or_globs):
    if isinstance(paths_or_globs, (str, os.PathLike)):
        paths_or_globs = [paths_or_globs]
    out = []
    for p in paths_or_globs:
        p = os.fspath(p)
        if os.path.isdir(p):
            out += sorted(_glob.glob(os.path.join(p, "*.etl")))
        elif any(c in p for c in "*?["):
            found = sorted(_glob.glob(p))
            if not found:
                raise FileNotFoundError("no file matches %r" % p)
            out += found
        else:
            if not os.path.exists(p):
                raise FileNotFoundError(2, "No such file or directory", p)
            out.append(p)
    return out


def _blocksize(blocksize):
    if blocksize is None:
        return None
    if isinstance(blocksize, str):
        from dask.utils import parse_bytes
        blocksize = parse_bytes(blocksize)
    if blocksize <= 0:
        raise ValueError("blocksize must be positive")
    return int(blocksize)


def partitions(paths_or_globs, blocksize=DEFAULT_BLOCKSIZE, npartitions=None, manifests=()):
    """The partition plan: a list of dicts {path, range, learn}, one per
    partition, in file then time order. range is (from, to) in FILETIME (100
    ns since 1601) or None for a whole file; learn lists the schema records
    a range must read first. npartitions (per file) overrides blocksize."""
    blocksize = _blocksize(blocksize)
    plan = []
    for path in _paths(paths_or_globs):
        size = os.path.getsize(path)
        n = npartitions or (1 if blocksize is None else max(1, math.ceil(size / blocksize)))
        if n == 1:
            plan.append({"path": path, "range": None, "learn": None})
            continue
        # one pass over the record headers (no payload decoded, no prescan)
        with Reader(path, manifests, learn=[]) as r:
            bounds = r._split(n)
            _counts, places = r._scan()
        if len(bounds) == 2:
            plan.append({"path": path, "range": None, "learn": None})
            continue
        for lo, hi in zip(bounds[:-1], bounds[1:]):
            learn = [(b, rec) for (b, rec, order, later) in places if not later or order < lo]
            plan.append({"path": path, "range": (lo, hi), "learn": learn})
    return plan


def _events(part, manifests, options, pairs):
    kw = dict(options)
    if part["range"] is not None:
        kw["range"] = part["range"]
        kw["learn"] = part["learn"]
    if pairs:
        kw["filters"] = pairs
    return Reader(part["path"], list(manifests), **kw)


def _frame_of(part, manifests, options, pairs):
    with _events(part, manifests, options, pairs) as events:
        return _frames.events_to_frame(events, expand=False)


def _list_of(part, manifests, options, pairs):
    with _events(part, manifests, options, pairs) as events:
        return list(events)


def read_etl(paths_or_globs, manifests=(), blocksize=DEFAULT_BLOCKSIZE, npartitions=None, *,
             raw=False, no_manifest_events=False, **filters):
    """The events of the traces as a dask DataFrame, with the columns of
    etwdecode.to_pandas (header keys, time as datetime64[ns, UTC], and a
    ``fields`` column of dicts). paths_or_globs: a path, a glob, a directory
    (its *.etl) or a list of them; filters: as etwdecode.open."""
    import dask.dataframe as dd
    pairs = predicates(filters)
    options = {"raw": raw, "no_manifest_events": no_manifest_events}
    manifests = [os.path.abspath(m) for m in manifests]
    plan = partitions(paths_or_globs, blocksize, npartitions, manifests)
    return dd.from_map(_frame_of, plan, args=(manifests, options, pairs), meta=_frames.empty_frame(),
                       label="read-etl", enforce_metadata=False)


def to_bag(paths_or_globs, manifests=(), blocksize=DEFAULT_BLOCKSIZE, npartitions=None, *,
           raw=False, no_manifest_events=False, **filters):
    """The events as a dask Bag of dicts (nested fields kept as they are),
    partitioned as read_etl partitions."""
    import dask.bag as db
    pairs = predicates(filters)
    options = {"raw": raw, "no_manifest_events": no_manifest_events}
    manifests = [os.path.abspath(m) for m in manifests]
    plan = partitions(paths_or_globs, blocksize, npartitions, manifests)
    return db.from_sequence(plan, npartitions=len(plan) or 1).map_partitions(
        _bag_partition, manifests, options, pairs)


def _bag_partition(parts, manifests, options, pairs):
    out = []
    for part in parts:
        out += _list_of(part, manifests, options, pairs)
    return out
