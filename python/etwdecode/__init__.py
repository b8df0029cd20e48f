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

import datetime as _datetime
import os as _os

from ._native import DamageWarning, Error, Reader, library_version

__all__ = [
    "open", "to_pandas", "stats", "schemas", "to_datetime", "Error", "DamageWarning",
    "HEADER_KEYS", "library_version",
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
    """Iterator over the events of one trace."""

    def __init__(self, path, manifests, options, filters):
        from ._filters import predicates
        pairs = predicates(filters)
        if pairs:
            options = dict(options, filters=pairs)
        self._reader = Reader(_os.fspath(path), list(manifests or ()), **options)

    def __iter__(self):
        return self

    def __next__(self):
        return next(self._reader)

    def stats(self):
        """What the reader counted so far (complete after the last event)."""
        return self._reader.stats()

    def close(self):
        self._reader.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def open(path, manifests=(), *, raw=False, no_manifest_events=False, max_events=0,
         file_order=False, default_manifests=True, windows=None, lang=None, **filters):
    """The events of the trace at `path`, in timestamp order, as dicts.

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
    filters: provider=, event=, id=, level=, keywords=, pid=, tid=,
    process=, where=, since=, until=, errors= -- the selection of etwdump (see docs/python.md).

    Raises OSError (missing file or manifest), etwdecode.Error (not an ETL
    file, unreadable data). Damaged buffers are reported as
    etwdecode.DamageWarning warnings, with the file offset, and skipped.
    """
    options = dict(raw=raw, no_manifest_events=no_manifest_events, max_events=max_events,
                   file_order=file_order, default_manifests=default_manifests,
                   windows=None if windows is None else _os.fspath(windows), lang=lang)
    return _Events(path, manifests, options, filters)


def to_pandas(path, manifests=(), *, expand=None, **kwargs):
    """The events of a trace as a pandas DataFrame: the header keys as
    columns (``time`` as datetime64[ns, UTC]), and a ``fields`` column of
    dicts -- or one column per field when the selected events are all of one
    kind (one provider and event name), or when expand=True (the union of
    the fields; expand=False keeps the dicts). kwargs: as open()."""
    from ._frames import events_to_frame
    with open(path, manifests, **kwargs) as events:
        return events_to_frame(events, expand=expand)


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
