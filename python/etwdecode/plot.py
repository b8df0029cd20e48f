"""Plots of a trace for notebooks, on matplotlib (imported when a function
is called; with no display and no backend chosen, the "Agg" backend, which
draws to files).

    import etwdecode.plot as eplot
    fig = eplot.gc_pauses("trace.etl")
    fig.savefig("gc.png")

Each function takes a trace path (and open()'s keywords) or the DataFrame
it would read, draws into ``ax=`` when given (else a new figure), and
returns the matplotlib Figure.
"""

import os as _os
import sys as _sys

__all__ = ["cpu_by_process", "gc_pauses", "io_latency"]


def _pyplot():
    import matplotlib
    if ("matplotlib.pyplot" not in _sys.modules and not _os.environ.get("MPLBACKEND")
            and not _os.environ.get("DISPLAY") and not _os.environ.get("WAYLAND_DISPLAY")
            and _sys.platform not in ("win32", "darwin")):
        matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    return plt


def _axes(ax, figsize=(9, 4.5)):
    if ax is not None:
        return ax.figure, ax
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=figsize)
    return fig, ax


def _is_frame(x):
    try:
        import pandas
    except ImportError:
        return False
    return isinstance(x, pandas.DataFrame)


def _header(path, **kwargs):
    """The first event of the input: the log-file header (its time is the
    trace start; its PerfFreq the QPC clock of DiskIo times)."""
    import etwdecode
    keep = {k: v for k, v in kwargs.items() if k in ("manifests", "file_order", "default_manifests")}
    with etwdecode.open(path, max_events=1, **keep) as events:
        for ev in events:
            return ev
    return None


def cpu_by_process(path_or_frame, *, bin_s=None, top=8, kind="area", idle=False, ax=None, **kwargs):
    """CPU samples (kernel PerfInfo/Sample events) per process over time,
    binned by time: a stacked area (kind="area") or one line per process
    (kind="lines"), the `top` busiest processes and the rest as "other".

    path_or_frame: a trace (kwargs: open()'s keywords, e.g. pid=, since=),
    or a DataFrame with ``time`` (datetime64 or seconds) and ``process``
    (or ``pid``), one row per sample. bin_s: the bin width in seconds
    (default: about 100 bins). idle: keep the samples of the Idle process
    (pid 0), left out by default as the cpu report's idle filter does. The
    x axis is seconds from the trace start (from the first sample for a
    DataFrame with datetimes)."""
    import numpy
    import pandas
    if _is_frame(path_or_frame):
        df = path_or_frame
        t = df["time"]
        if pandas.api.types.is_datetime64_any_dtype(t):
            secs = (t - t.min()).dt.total_seconds().to_numpy()
        else:
            secs = t.to_numpy(dtype=float)
    else:
        import etwdecode
        hdr = _header(path_or_frame, **kwargs)
        df = etwdecode.to_pandas(path_or_frame, event="PerfInfo/Sample", columns=["time", "pid", "process"],
                                 **kwargs)
        start = pandas.Timestamp(hdr["time"], unit="ns", tz="UTC") if hdr else df["time"].min()
        secs = (df["time"] - start).dt.total_seconds().to_numpy()
    if not idle and "pid" in df.columns:
        busy = (df["pid"] != 0).to_numpy()
        df, secs = df[busy], secs[busy]
    if "process" in df.columns:
        who = df["process"].astype(object).where(df["process"].notna(), None)
        if "pid" in df.columns:
            who = ["%s (%s)" % (p if p is not None else "?", pid) for p, pid in zip(who, df["pid"])]
        else:
            who = ["?" if p is None else str(p) for p in who]
    else:
        who = ["pid %s" % p for p in df["pid"]]
    fig, ax = _axes(ax)
    series = pandas.Series(1, index=pandas.Index(who, name="process"))
    if not len(series):
        ax.set_title("CPU samples by process (none)")
        return fig
    span = float(secs.max() - min(0.0, secs.min())) if len(secs) else 0.0
    if not bin_s or bin_s <= 0:
        bin_s = span / 100 if span > 0 else 1.0
    bins = numpy.floor(secs / bin_s).astype(numpy.int64)
    counts = pandas.crosstab(bins, numpy.asarray(who, dtype=object))
    order = counts.sum().sort_values(ascending=False).index
    keep = list(order[:top])
    table = counts[keep].copy()
    rest = [c for c in counts.columns if c not in keep]
    if rest:
        table["other"] = counts[rest].sum(axis=1)
    full = numpy.arange(bins.min(), bins.max() + 1)
    table = table.reindex(full, fill_value=0)
    x = full * bin_s
    if kind == "area":
        ax.stackplot(x, [table[c].to_numpy() for c in table.columns], labels=[str(c) for c in table.columns],
                     step="post")
    elif kind == "lines":
        for c in table.columns:
            ax.plot(x, table[c].to_numpy(), label=str(c), drawstyle="steps-post")
    else:
        raise ValueError("kind must be 'area' or 'lines'")
    ax.set_xlabel("time (s from trace start)")
    ax.set_ylabel("samples per %.3g s" % bin_s)
    ax.set_title("CPU samples by process")
    ax.legend(loc="upper left", fontsize="small")
    return fig


def gc_pauses(path_or_frame, *, ax=None, **kwargs):
    """The pause of each .NET GC (reports.gc's ``pause_ms``) at its start
    time (``start_s``), one marker series per process; path_or_frame: a
    trace (kwargs: reports.gc's keywords) or the frame reports.gc gave."""
    if _is_frame(path_or_frame):
        df = path_or_frame
    else:
        from . import reports
        df = reports.gc(path_or_frame, **kwargs)
    fig, ax = _axes(ax)
    for pid, g in df.groupby("pid", sort=True) if len(df) else ():
        ok = g["pause_ms"].notna() & g["start_s"].notna()
        ax.plot(g["start_s"][ok].to_numpy(dtype=float), g["pause_ms"][ok].to_numpy(dtype=float), "o",
                markersize=4, label="pid %s" % pid)
    ax.set_xlabel("GC start (s from trace start)")
    ax.set_ylabel("pause (ms)")
    ax.set_title("GC pauses" if len(df) else "GC pauses (none)")
    if len(df):
        ax.legend(fontsize="small")
    return fig


def disk_io_times(path, **kwargs):
    """One row per disk I/O (kernel DiskIO/Read and DiskIO/Write events of
    the selection): ``time``, ``pid``, ``event``, ``bytes`` (TransferSize) and
    ``elapsed_ms`` (HighResResponseTime over the trace's PerfFreq, the time
    from the request to its completion as the kernel measured it)."""
    import etwdecode
    import pandas
    hdr = _header(path, **kwargs)
    freq = None
    if hdr and isinstance(hdr.get("fields"), dict):
        freq = hdr["fields"].get("PerfFreq")
    freq = freq or 10_000_000
    kw = dict(kwargs)
    kw["event"] = ["DiskIO/Read", "DiskIO/Write"]
    rows = []
    with etwdecode.open(path, **kw) as events:
        for ev in events:
            f = ev.get("fields") or {}
            rt = f.get("HighResResponseTime")
            rows.append((ev["time"], ev["pid"], ev["event"], f.get("TransferSize"),
                         None if rt is None else rt * 1000.0 / freq))
    return pandas.DataFrame.from_records(rows, columns=["time", "pid", "event", "bytes", "elapsed_ms"])


def io_latency(path_or_frame, *, bins=50, log=True, ax=None, **kwargs):
    """A histogram of disk I/O times in ms. reports.disk has no per-I/O rows,
    so the I/Os come from the DiskIO/Read and DiskIO/Write events
    (disk_io_times(): the kernel's elapsed time of each); path_or_frame: a
    trace (kwargs: open()'s keywords) or a frame with ``elapsed_ms`` (and
    ``event`` to split reads from writes). log: logarithmic bins."""
    import numpy
    df = path_or_frame if _is_frame(path_or_frame) else disk_io_times(path_or_frame, **kwargs)
    fig, ax = _axes(ax)
    ms = df["elapsed_ms"].dropna().to_numpy(dtype=float)
    if not len(ms):
        ax.set_title("Disk I/O time (no I/O)")
        return fig
    if log and ms.min() > 0:
        edges = numpy.geomspace(ms.min(), ms.max() * 1.0001, bins + 1)
        ax.set_xscale("log")
    else:
        edges = numpy.linspace(0.0, ms.max() * 1.0001 if ms.max() > 0 else 1.0, bins + 1)
    if "event" in df.columns:
        groups = [(name, g["elapsed_ms"].dropna().to_numpy(dtype=float)) for name, g in df.groupby("event")]
        ax.hist([g for _, g in groups], bins=edges, stacked=True, label=[str(n) for n, _ in groups])
        ax.legend(fontsize="small")
    else:
        ax.hist(ms, bins=edges)
    ax.set_xlabel("elapsed (ms)")
    ax.set_ylabel("I/Os")
    ax.set_title("Disk I/O time (%d I/Os)" % len(ms))
    return fig
