"""etwdecode: decode Windows ETW traces (.etl) in Python, on any OS.

A native extension over libetwdecode (no subprocess, no JSON in between).
Each event is a dict with the keys of etwdump's JSON output
(docs/json-output.md) and native values; the differences of type from the
JSON text are listed in docs/python.md:

- ``time`` is an int: nanoseconds since 1970-01-01T00:00:00Z, exact to the
  trace's 100 ns (``to_datetime(event["time"])`` gives a datetime, which keeps
  microseconds; ``pandas.Timestamp(t, unit="ns", tz="UTC")`` keeps all);
- ``keywords``, ``stack`` addresses and hex-shown numbers (pointers, sizes,
  HEXINT out-types) are ints, not ``"0x..."`` strings;
- binary values and ``raw`` are bytes, not hex strings;
- NaN and infinities are floats, not strings.

    import etwdecode
    for ev in etwdecode.open("trace.etl", provider="Microsoft-Windows-Kernel-*"):
        print(ev["time"], ev["provider"], ev["event"], ev["fields"])
"""

import collections.abc as _abc
import datetime as _datetime
import glob as _glob
import os as _os

from ._native import DamageWarning, Error, Fields, Reader, library_version

_abc.Mapping.register(Fields)

__all__ = [
    "open", "to_pandas", "stats", "schemas", "profile", "to_datetime", "Error", "DamageWarning",
    "HEADER_KEYS", "PROFILE_COLUMNS", "library_version", "Fields",
]

__version__ = library_version

#: The keys every event has, in the JSON contract's order (optional keys --
#: process, activity_id, related_activity_id, container_id, stack, stack_match_id,
#: more_stacks, stack_key, stack_key_match_id, more_stack_keys, error, raw -- come
#: only where the event has them).
HEADER_KEYS = (
    "time", "provider", "provider_guid", "event", "id", "version", "level", "opcode", "task",
    "channel", "keywords", "pid", "tid", "cpu", "data_len",
)

_UNIX_EPOCH = _datetime.datetime(1970, 1, 1, tzinfo=_datetime.timezone.utc)


def to_datetime(time_ns):
    """An event's ``time`` (int nanoseconds since the Unix epoch) as an aware
    UTC datetime. datetime keeps microseconds: the last 100 ns digit is
    dropped (use the int, or pandas.Timestamp, to keep it)."""
    return _UNIX_EPOCH + _datetime.timedelta(microseconds=time_ns // 1000)


class _Events:
    """Iterator over the events of one trace, or of several read by the
    library as one timeline (each event then says its "file")."""

    def __init__(self, paths, manifests, options, filters):
        from ._filters import predicates
        pairs = predicates(filters)
        if pairs:
            options = dict(options, filters=pairs)
        self._reader = Reader(paths, list(manifests or ()), **options)

    def __iter__(self):
        return self

    def __next__(self):
        return next(self._reader)

    def stats(self):
        """What the reader counted so far (complete after the last event);
        for several traces, a dict of each one's counts by its name."""
        return self._reader.stats()

    def close(self):
        self._reader.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


# What a directory gives, as etwdump walks one: traces and compressed traces.
_TRACE_SUFFIXES = (".etl", ".etl.zip", ".etl.gz", ".etl.zst", ".etl.xz", ".etl.bz2")


def _walk(folder, out, depth=0):
    if depth > 32:  # etwdump's MAX_DEPTH: a bound against symlink loops
        return
    for name in sorted(_os.listdir(folder)):
        p = _os.path.join(folder, name)
        if _os.path.isdir(p):
            _walk(p, out, depth + 1)
        elif name.lower().endswith(_TRACE_SUFFIXES):
            out.append(p)


def _sources(paths):
    """The files of files, folders and globs, in the order given (a
    folder's files and a glob's matches in name order), as etwdump lists its
    inputs; the library opens each (a ZIP gives every trace inside, named
    archive:entry)."""
    if isinstance(paths, (str, bytes)) or hasattr(paths, "__fspath__"):
        paths = [paths]
    files = []
    for p in paths:
        p = _os.fspath(p)
        if isinstance(p, bytes):
            p = _os.fsdecode(p)
        if _os.path.isdir(p):
            found = []
            _walk(p, found)
            if not found:
                raise FileNotFoundError("%s: no .etl file in this directory" % p)
            files.extend(found)
        elif not _os.path.exists(p) and _glob.has_magic(p):
            found = sorted(_glob.glob(p, recursive=True))
            if not found:
                raise FileNotFoundError("%s: no file matches" % p)
            files.extend(f for f in found if not _os.path.isdir(f))
        else:
            files.append(p)
    if not files:
        raise FileNotFoundError("no trace given")
    return files


def open(path, manifests=(), *, raw=False, no_manifest_events=False, max_events=0,
         file_order=False, default_manifests=True, windows=None, lang=None, stacks=False,
         symbols=None, tl_cache_mb=0, **filters):
    """The events of the trace at `path`, in timestamp order, as dicts.

    path: a trace, or several: a list of files, folders (their .etl files and
    compressed traces, recursively) and glob patterns ("traces/*.etl"), read
    as one timeline like etwdump's inputs; each event then has the key
    "file". Compressed traces are read as they are: .etl.gz, .etl.zst,
    .etl.xz, .etl.bz2, and ZIP archives such as PerfView's .etl.zip (every
    trace inside, named "archive.zip:entry.etl"). Several traces go through
    one reader and one decoder, as etwdump reads its inputs: the library
    merges them (the earliest time first, equal times in the order given;
    file_order=True: one trace after another), a schema learned from one
    trace (an EventSource manifest, merged metadata) decodes the events of
    the others, max_events counts the merged events, and relative since= /
    until= count from the earliest session start of them all.

    manifests: instrumentation manifest files, PE files with a WEVT_TEMPLATE,
    or directories of them (etwdump -m; a directory's files are loaded when
    the trace uses a provider they declare).
    default_manifests: decode the .NET runtime's events with the CLR
    manifest built into the library when no manifest given and no schema in
    the trace describes them (False: etwdump --no-default-manifests).
    windows: a Windows image (a mounted volume or its Windows folder) whose
    DLL/EXE/SYS files give the providers' manifests (etwdump --windows).
    lang: the language of names and messages from PE files (etwdump --lang).
    raw: add "raw" (bytes) to every event (etwdump --raw).
    no_manifest_events: leave out EventSource manifest chunks.
    max_events: stop after that many events (0: all).
    file_order: the file's record order, no merge by time.
    stacks: add "stack" to every event that has one: a list of frame names,
    innermost first (etwdump --stacks; the trace is read twice).
    symbols: local symbol stores (folders in the symbol-server layout, or
    "srv*DIR") to name native frames with stacks=True (etwdump --symbols).
    tl_cache_mb: memory for TraceLogging schemas, in MB (etwdump --tl-cache;
    0: the default, 32; see docs/limits.md).
    filters: provider=, event=, id=, level=, keywords=, pid=, tid=,
    process=, where=, since=, until=, errors= -- the selection of etwdump (see docs/python.md).

    Raises OSError (missing file or manifest), etwdecode.Error (not an ETL
    file, unreadable data). Damaged buffers are reported as
    etwdecode.DamageWarning warnings, with the file offset, and skipped.
    """
    options = dict(raw=raw, no_manifest_events=no_manifest_events, max_events=max_events,
                   file_order=file_order, default_manifests=default_manifests,
                   windows=None if windows is None else _os.fspath(windows), lang=lang,
                   tl_cache_mb=tl_cache_mb)
    if stacks:
        options.update(stacks=True, symbols=_paths(symbols))
    return _Events(_sources(path), manifests, options, filters)


def _paths(paths):
    if paths is None:
        return None
    if isinstance(paths, (str, bytes)) or hasattr(paths, "__fspath__"):
        paths = [paths]
    return [_os.fspath(p) for p in paths]


#: The columns of profile()'s DataFrame, in order.
PROFILE_COLUMNS = ("stack", "pid", "tid", "process", "weight", "count", "frames")


def profile(path, *, event=None, weight=None, symbols=None, file_order=False,
            default_manifests=True, lang=None, **filters):
    """Where the CPU went (etwdump --profile): a pandas DataFrame with one
    row per (process, thread, stack) and the columns

    - ``stack``: the stack's id in the profile (0: the sample's stack never
      came), ``pid``, ``tid``, ``process`` (image name, None when unknown);
    - ``weight``: the summed weight, ``count``: the number of samples;
    - ``frames``: a list of frame names, innermost first (module!function,
      a .NET method, module+0xRVA or 0xADDRESS).

    Samples are the kernel's CPU samples (PerfInfo/Sample, PerfView's idle
    filter) of the selected processes, threads and time (filters: pid=,
    tid=, since=, until=, ... as open()); with event=, the selected events
    instead (one without a stack: stack 0, no frames), each weighing 1 or its payload field
    ``weight`` (events without it are left out). symbols: local symbol
    stores for PDB names."""
    import pandas
    from ._filters import predicates
    if weight is not None and event is None:
        raise ValueError("weight= weighs the events event= selects: give event= too")
    if event is not None:
        filters = dict(filters, event=event)
    from ._native import profile as _profile
    rows = _profile(_os.fspath(path), predicates(filters) or None, event is not None, weight,
                    _paths(symbols), file_order, default_manifests, lang)
    return pandas.DataFrame.from_records(rows, columns=list(PROFILE_COLUMNS))


def to_pandas(path, manifests=(), *, expand=None, columns=None, **kwargs):
    """The events of a trace (or several, as open()) as a pandas DataFrame,
    built column by column in C (no event dicts in between):

    - the header keys as columns: ``time`` as datetime64[ns, UTC] (exact to
      the ns, from the integer time), ``provider``, ``event`` (and ``file``
      for several traces) as categoricals, ``keywords`` uint64, the other
      numbers int64 (pid/tid -1: none), the optional keys (process,
      activity_id, stack, error, raw, ...) objects, None where absent;
    - the fields: a ``fields`` column of etwdecode.Fields (read-only
      mappings with the keys and values of the event dict's ``fields``;
      ``dict(f)`` makes a dict) -- or one column per field
      when the selected events are all of one kind (one provider and event
      name), or when expand=True (the union of the fields; expand=False
      keeps the ``fields`` column). A field column is Int64/UInt64 by the field's TDH
      in-type (signed types Int64; unsigned ones, pointers, sizes and hex
      types UInt64: exact, <NA> where an event lacks it; plain int64/uint64
      when every row has a value), float64, ``boolean``, or objects (str,
      GUIDs as str, bytes, dicts and lists for structs and arrays; also a
      field whose type differs between events). A field named like a header
      key is ``fields.NAME``.

    columns: only these columns are built, in this order: header keys and
    field names (``fields.NAME`` for a field named like a header key;
    ``fields``: the ``fields`` column). kwargs: as open()."""
    from ._frames import native_frame
    with open(path, manifests, **kwargs) as events:
        return native_frame(events._reader, columns=columns, expand=expand)


def stats(path, manifests=(), *, no_manifest_events=False, max_events=0, default_manifests=True,
          windows=None, lang=None,
          **filters):
    """The summary ``etwdump --stats --format json`` prints, as a dict: the
    file's header facts (session, OS, clock, buffers, lost events), and for
    the selected events their count and time range, counts by provider, by
    (provider, event), by process (with image names) and decode errors by
    kind. Same keywords as open()."""
    from ._summary import trace_stats
    return trace_stats(path, manifests, filters, no_manifest_events=no_manifest_events,
                       max_events=max_events, default_manifests=default_manifests,
                       windows=None if windows is None else _os.fspath(windows), lang=lang)


def schemas(path, manifests=(), *, no_manifest_events=False, max_events=0, default_manifests=True,
            windows=None, lang=None,
            **filters):
    """The schemas the selected events use, as ``etwdump --schemas`` prints
    them: a list of dicts (provider, provider_guid, event, id, version,
    opcode, task, level, channel, keywords, source, pointer_size, events,
    fields with their types, counts, lengths and maps)."""
    from ._summary import trace_schemas
    return trace_schemas(path, manifests, filters, no_manifest_events=no_manifest_events,
                         max_events=max_events, default_manifests=default_manifests,
                       windows=None if windows is None else _os.fspath(windows), lang=lang)
