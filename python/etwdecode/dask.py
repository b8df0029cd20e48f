"""etwdecode on Dask: many traces, and one large trace, over many workers.

    import etwdecode.dask as ed
    df = ed.read_etl("/traces/*.etl", manifests=["ClrEtwAll.man"], event="Process/Start")
    df.groupby("provider").size().compute()

One partition per file; a file larger than `blocksize` bytes is split by
time into several partitions, each decoded by its own task from only the
buffers its time range covers (etw_reader_set_range). The split decode gives
exactly the events of the whole-file decode, in order: the time ranges are
cut on each processor's order time, so events of buffers that straddle a
boundary come once, and what the trace teaches the decoder (merged
metadata, EventSource manifests and kernel thread records sent before the
range) is read by each task from those records alone.

What a task receives: the path (the file must be on storage every worker
sees), the manifest paths, the filters, and for a split file its time range
and the places (buffer offset, record offset) of the records to learn -- a
few numbers per partition, never an event. A split file is planned by one
task of its own (on a worker: the client only looks at file sizes), which
reads the file's record headers once, with one schema lookup per event and
no payload decoded.

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


def _count(path, blocksize, npartitions):
    """How many partitions a file gets (from its size alone)."""
    if npartitions:
        return int(npartitions)
    if blocksize is None:
        return 1
    return max(1, math.ceil(os.path.getsize(path) / blocksize))


def _plan_file(path, n, manifests=(), default_manifests=True, windows=None, lang=None):
    """The plan of one file in n time ranges (fewer when it has too few
    buffers): one pass over the record headers with one schema lookup per
    event, no payload decoded."""
    whole = [{"path": path, "range": None, "learn": None}]
    if n == 1:
        return whole
    with Reader(path, list(manifests), learn=[], default_manifests=default_manifests, windows=windows,
                lang=lang) as r:
        bounds = r._split(n)
        _counts, places = r._scan()
    if len(bounds) == 2:
        return whole
    plan = []
    for lo, hi in zip(bounds[:-1], bounds[1:]):
        # what a range must learn first: the merged metadata (the whole trace),
        # and what holds after its record when that comes before the range
        learn = [(b, rec) for (b, rec, order, later) in places if not later or order < lo]
        plan.append({"path": path, "range": (lo, hi), "learn": learn})
    return plan


def _plan_part(plan, i):
    return plan[i] if i < len(plan) else None


def partitions(paths_or_globs, blocksize=DEFAULT_BLOCKSIZE, npartitions=None, manifests=(),
               default_manifests=True):
    """The partition plan, computed here: a list of dicts {path, range,
    learn}, one per partition, in file then time order. range is (from, to)
    in FILETIME (100 ns since 1601) or None for a whole file; learn lists the
    places (buffer offset, record offset) of the records a range reads first.
    npartitions (per file) overrides blocksize. (read_etl and to_bag plan
    large files in a task of their own instead, on a worker.)"""
    blocksize = _blocksize(blocksize)
    plan = []
    for path in _paths(paths_or_globs):
        plan += _plan_file(path, _count(path, blocksize, npartitions), manifests, default_manifests)
    return plan


def _tasks(fn, paths_or_globs, blocksize, npartitions, manifests, options, pairs):
    """One delayed task per partition: whole files directly, split files
    through one planning task per file (so the client only stats the files)."""
    from dask import delayed
    blocksize = _blocksize(blocksize)
    tasks = []
    for path in _paths(paths_or_globs):
        n = _count(path, blocksize, npartitions)
        if n == 1:
            part = {"path": path, "range": None, "learn": None}
            tasks.append(delayed(fn, pure=True)(part, manifests, options, pairs))
            continue
        plan = delayed(_plan_file, pure=True)(path, n, manifests, options.get("default_manifests", True),
                                              options.get("windows"), options.get("lang"))
        for i in range(n):
            part = delayed(_plan_part, pure=True)(plan, i)
            tasks.append(delayed(fn, pure=True)(part, manifests, options, pairs))
    return tasks


def _events(part, manifests, options, pairs):
    kw = dict(options)
    if part["range"] is not None:
        kw["range"] = part["range"]
        kw["learn"] = part["learn"]
    if pairs:
        kw["filters"] = pairs
    return Reader(part["path"], list(manifests), **kw)


def _frame_of(part, manifests, options, pairs):
    if part is None:  # a file with fewer time ranges than partitions
        return _frames.empty_frame()
    with _events(part, manifests, options, pairs) as events:
        return _frames.events_to_frame(events, expand=False)


def _list_of(part, manifests, options, pairs):
    if part is None:
        return []
    with _events(part, manifests, options, pairs) as events:
        return list(events)


def read_etl(paths_or_globs, manifests=(), blocksize=DEFAULT_BLOCKSIZE, npartitions=None, *,
             raw=False, no_manifest_events=False, default_manifests=True, windows=None, lang=None,
             **filters):
    """The events of the traces as a dask DataFrame, with the columns of
    etwdecode.to_pandas (header keys, time as datetime64[ns, UTC], and a
    ``fields`` column of dicts). paths_or_globs: a path, a glob, a directory
    (its *.etl) or a list of them; filters: as etwdecode.open."""
    import dask.dataframe as dd
    pairs = predicates(filters)
    options = {"raw": raw, "no_manifest_events": no_manifest_events, "default_manifests": default_manifests,
               "windows": None if windows is None else os.path.abspath(windows), "lang": lang}
    manifests = [os.path.abspath(m) for m in manifests]
    tasks = _tasks(_frame_of, paths_or_globs, blocksize, npartitions, manifests, options, pairs)
    return dd.from_delayed(tasks, meta=_frames.empty_frame(), verify_meta=False)


def to_bag(paths_or_globs, manifests=(), blocksize=DEFAULT_BLOCKSIZE, npartitions=None, *,
           raw=False, no_manifest_events=False, default_manifests=True, windows=None, lang=None,
           **filters):
    """The events as a dask Bag of dicts (nested fields kept as they are),
    partitioned as read_etl partitions."""
    import dask.bag as db
    pairs = predicates(filters)
    options = {"raw": raw, "no_manifest_events": no_manifest_events, "default_manifests": default_manifests,
               "windows": None if windows is None else os.path.abspath(windows), "lang": lang}
    manifests = [os.path.abspath(m) for m in manifests]
    return db.from_delayed(_tasks(_list_of, paths_or_globs, blocksize, npartitions, manifests, options, pairs))
