"""The library's reports (etw_report.h, docs/reports.md) as pandas
DataFrames: the very tables ``etwdump --report NAME --format json`` prints.

    import etwdecode.reports as reports
    gcs = reports.gc("trace.etl")                      # the main table: one row per GC
    summary = reports.gc("trace.etl", table="summary") # another table
    every = reports.gc("trace.etl", tables=True)       # {"summary": df, "gcs": df}

Each function takes the path forms and keywords of etwdecode.open() (files,
folders, globs; manifests=, default_manifests=, windows=, lang=,
max_events=, file_order=, and the selection: pid=, process=, since=,
until=, provider=, event=, where=, ...). The events left out are still read
for what later events need (file names, stacks, images), as etwdump does.

Columns keep the report's names and order. Their types come from the
values: integers int64 (uint64 past int64), or the nullable Int64 / UInt64
where a row has none; numbers with a fraction float64 (NaN where none);
text object (None where none). Times (``*_s``) are seconds from the trace
start (the earliest log-file header), durations milliseconds, as in the
report. A table with no row still has the main table's columns (the other
tables then have none). ``df.attrs["notes"]`` holds the report's notes (a
table that reached its bound), ``df.attrs["report"]`` its name.
"""

import json as _json
import os as _os

__all__ = ["processes", "gc", "disk", "files", "network", "cpu", "MAIN_TABLES", "TABLES"]

#: The main table of each report (what etwdump --format csv prints).
MAIN_TABLES = {
    "processes": "processes",
    "gc": "gcs",
    "disk": "files",
    "files": "files",
    "network": "remotes",
    "cpu": "processes",
}

#: Every table of each report, in the JSON object's order.
TABLES = {
    "processes": ("processes",),
    "gc": ("summary", "gcs"),
    "disk": ("processes", "files"),
    "files": ("files", "processes"),
    "network": ("processes", "remotes"),
    "cpu": ("processes", "modules", "functions"),
}

_INT64_MAX = (1 << 63) - 1


def _column(pandas, values):
    """A Series of JSON scalars with the narrowest exact type."""
    present = [v for v in values if v is not None]
    nulls = len(present) != len(values)
    if present and all(isinstance(v, bool) for v in present):
        return pandas.Series(values, dtype="boolean")
    if present and all(isinstance(v, int) and not isinstance(v, bool) for v in present):
        unsigned = max(present) > _INT64_MAX
        if nulls:
            return pandas.Series(pandas.array(values, dtype="UInt64" if unsigned else "Int64"))
        return pandas.Series(values, dtype="uint64" if unsigned else "int64")
    if present and all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in present):
        return pandas.Series([float("nan") if v is None else float(v) for v in values], dtype="float64")
    return pandas.Series(values, dtype=object)


def _frame(pandas, rows, columns):
    if rows:
        columns = list(rows[0].keys())
        for r in rows[1:]:
            for k in r:
                if k not in columns:
                    columns.append(k)
    data = {c: _column(pandas, [r.get(c) for r in rows]) for c in columns or ()}
    return pandas.DataFrame(data, columns=list(columns or ()))


def _run(kind, path, manifests, table, tables, symbols, top, options, filters):
    import pandas
    from . import _Events, _paths, _sources
    from ._native import _report
    names = TABLES[kind]
    if table is not None and table not in names:
        raise ValueError("report %s has no table %r (its tables: %s)" % (kind, table, ", ".join(names)))
    if table is not None and tables:
        raise ValueError("give table= or tables=True, not both")
    events = _Events(_sources(path), manifests, options, filters)
    try:
        text, header = _report(events._reader, kind, _paths(symbols), int(top))
    finally:
        events.close()
    obj = _json.loads(text)
    notes = list(obj.get("notes", ()))
    main = MAIN_TABLES[kind]

    def build(name):
        cols = header.split(",") if name == main and header else None
        df = _frame(pandas, obj.get(name, []), cols)
        df.attrs["report"] = kind
        df.attrs["table"] = name
        df.attrs["notes"] = notes
        return df

    if tables:
        return {name: build(name) for name in names}
    return build(table or main)


def _options(max_events, file_order, default_manifests, windows, lang):
    return dict(max_events=max_events, file_order=file_order, default_manifests=default_manifests,
                windows=None if windows is None else _os.fspath(windows), lang=lang)


def _make(kind, doc):
    def report(path, manifests=(), *, table=None, tables=False, max_events=0, file_order=False,
               default_manifests=True, windows=None, lang=None, symbols=None, top=0, **filters):
        return _run(kind, path, manifests, table, tables, symbols, top,
                    _options(max_events, file_order, default_manifests, windows, lang), filters)
    report.__name__ = report.__qualname__ = kind
    report.__doc__ = doc + """

    table: the name of another table to return (%s; default: %s, the main
    one). tables=True: a dict of every table's DataFrame by name.
    symbols, top: the cpu report's local symbol stores and rows per process
    of its module and function tables (0: 10). Other keywords: as
    etwdecode.open().""" % (", ".join(TABLES[kind]), MAIN_TABLES[kind])
    return report


processes = _make("processes", """The processes of the trace (etwdump --report processes): one row
    per process lifetime, in tree order (pid, parent_pid, depth, image,
    start_s, end_s, exit_code, session, user_sid, source, command_line).""")
gc = _make("gc", """What the .NET garbage collector did (etwdump --report gc): one row per
    GC (pid, gc, gen, reason, type, start_s, pause_ms, duration_ms, the
    generation sizes after it, promoted); table="summary": per process.""")
disk = _make("disk", """Disk I/O (etwdump --report disk): by file (main) and by process
    (table="processes"): reads, writes, bytes, elapsed and service times.""")
files = _make("files", """File system operations (etwdump --report files): by file and
    process (main) and by process (table="processes").""")
network = _make("network", """TCP and UDP traffic (etwdump --report network): by process,
    protocol and remote end (main) and by process (table="processes").""")
cpu = _make("cpu", """Where the CPU went (etwdump --report cpu): samples by process (main);
    table="modules" / "functions": the top ones of each process.""")
