"""etwdecode.reports (the library's reports as DataFrames) against etwdump
--report NAME --format json on the same traces and options, value by value;
the disk I/O counts also against the DiskIO events etwdump decodes; and the
plot helpers of etwdecode.plot."""
import json
import math
import os
import subprocess

import pytest

pandas = pytest.importorskip("pandas")

import etwdecode  # noqa: E402
import etwdecode.reports as reports  # noqa: E402

from conftest import ETWDUMP, MANIFESTS, etwdump_events, etwdump_lines, trace  # noqa: E402

KINDS = ("processes", "gc", "disk", "files", "network", "cpu")
TRACES = ("net.4.5.2.x64.etl", "gcevents.etl")


def etwdump_report(name, kind, *options):
    lines = etwdump_lines(name, "--report", kind, "--format", "json", *options)
    assert len(lines) == 1
    return json.loads(lines[0])


def etwdump_header(name, kind, *options):
    """The CSV header line: the main table's columns."""
    return etwdump_lines(name, "--report", kind, "--format", "csv", *options)[0].split(",")


def python_report(name, kind, **kw):
    return getattr(reports, kind)(trace(name), MANIFESTS.get(name, []), tables=True, **kw)


def same_value(got, want):
    if want is None:
        return got is None or got is pandas.NA or (isinstance(got, float) and math.isnan(got))
    if isinstance(want, bool):
        return bool(got) == want
    if isinstance(want, float):
        return isinstance(got, float) and got == want
    if isinstance(want, int):
        return not isinstance(got, float) and int(got) == want
    return got == want


def assert_same_tables(frames, expected, kind):
    assert set(frames) == set(reports.TABLES[kind])
    assert [k for k in expected if k not in ("report", "notes")] == list(reports.TABLES[kind])
    for table, rows in expected.items():
        if table in ("report", "notes"):
            continue
        df = frames[table]
        assert len(df) == len(rows), table
        if rows:
            assert list(df.columns) == list(rows[0].keys()), table
        for i, row in enumerate(rows):
            for col, want in row.items():
                got = df[col].iloc[i]
                assert same_value(got, want), (table, i, col, got, want)
        assert df.attrs["notes"] == expected.get("notes", [])
        assert df.attrs["report"] == kind


@pytest.mark.parametrize("name", TRACES)
@pytest.mark.parametrize("kind", KINDS)
def test_report_equals_etwdump(name, kind):
    frames = python_report(name, kind)
    assert_same_tables(frames, etwdump_report(name, kind), kind)
    # the main table by default, with etwdump's CSV columns even when empty
    main = getattr(reports, kind)(trace(name), MANIFESTS.get(name, []))
    assert list(main.columns) == etwdump_header(name, kind)
    assert main.attrs["table"] == reports.MAIN_TABLES[kind]
    assert len(main) == len(frames[reports.MAIN_TABLES[kind]])


def test_gc_columns_typed():
    gcs = reports.gc(trace("net.4.5.2.x64.etl"), MANIFESTS["net.4.5.2.x64.etl"])
    assert len(gcs) > 0
    assert gcs["pid"].dtype == "int64"
    assert gcs["gc"].dtype == "int64"
    assert gcs["start_s"].dtype == "float64"
    assert gcs["pause_ms"].dtype == "float64"
    assert gcs["reason"].dtype == object
    # poh_after: no POH in .NET 4.5 traces: a nullable int column of <NA>
    assert gcs["poh_after"].isna().all()
    summary = reports.gc(trace("net.4.5.2.x64.etl"), MANIFESTS["net.4.5.2.x64.etl"], table="summary")
    assert list(summary.columns)[:2] == ["pid", "gcs"]
    # the summary counts the GCs of the main table, per process
    assert dict(zip(summary["pid"], summary["gcs"])) == gcs.groupby("pid").size().to_dict()


def test_unknown_table_and_both_forms():
    with pytest.raises(ValueError, match="no table"):
        reports.gc(trace("gcevents.etl"), table="nope")
    with pytest.raises(ValueError):
        reports.gc(trace("gcevents.etl"), table="gcs", tables=True)


@pytest.mark.parametrize("kind", ("gc", "disk", "network", "cpu"))
def test_pid_filter_passes_through(kind):
    name = "net.4.5.2.x64.etl"
    summary = reports.gc(trace(name), MANIFESTS[name], table="summary")
    pid = int(summary["pid"].iloc[0])
    frames = python_report(name, kind, pid=pid)
    assert_same_tables(frames, etwdump_report(name, kind, "--pid", str(pid)), kind)
    for df in frames.values():
        if "pid" in df.columns:
            assert set(df["pid"]) <= {pid}
    if kind == "gc":
        assert len(frames["gcs"]) == int(summary["gcs"].iloc[0])


def test_since_and_max_events_pass_through():
    name = "net.4.5.2.x64.etl"
    frames = python_report(name, "gc", since="5s")
    assert_same_tables(frames, etwdump_report(name, "gc", "--since", "5s"), "gc")
    assert (frames["gcs"]["start_s"] >= 5).all()
    frames = python_report(name, "processes", max_events=1000)
    assert_same_tables(frames, etwdump_report(name, "processes", "-n", "1000"), "processes")


def disk_event_count(name):
    """The DiskIO/Read and DiskIO/Write events etwdump decodes: the disk I/Os."""
    return len(etwdump_events(name, "--event", "DiskIO/Read", "--event", "DiskIO/Write", "--format", "json"))


def test_disk_counts_the_disk_events():
    name = "net.4.5.2.x64.etl"
    procs = reports.disk(trace(name), MANIFESTS[name], table="processes")
    n = disk_event_count(name)
    assert n > 0
    assert int(procs["reads"].sum() + procs["writes"].sum()) == n


def test_several_inputs_one_timeline(tmp_path):
    # a folder and a glob holding the trace: the same report as the file
    os.symlink(os.path.abspath(trace("gcevents.etl")), tmp_path / "a.etl")
    b = reports.gc(trace("gcevents.etl"), MANIFESTS["gcevents.etl"])
    assert len(b) > 0
    for form in (str(tmp_path), str(tmp_path / "*.etl"), [tmp_path / "a.etl"]):
        a = reports.gc(form, MANIFESTS["gcevents.etl"])
        pandas.testing.assert_frame_equal(a, b)


# ---- plots ----

def is_png(path):
    with open(path, "rb") as f:
        return f.read(8) == b"\x89PNG\r\n\x1a\n"


@pytest.fixture
def plot():
    pytest.importorskip("matplotlib")
    import etwdecode.plot as p
    yield p
    import matplotlib.pyplot as plt
    plt.close("all")


def test_gc_pauses_one_point_per_gc(plot, tmp_path):
    name = "net.4.5.2.x64.etl"
    gcs = reports.gc(trace(name), MANIFESTS[name])
    fig = plot.gc_pauses(trace(name), manifests=MANIFESTS[name])
    ax = fig.axes[0]
    points = sum(len(line.get_xdata()) for line in ax.get_lines())
    assert points == int((gcs["pause_ms"].notna() & gcs["start_s"].notna()).sum())
    assert points == len(gcs)
    assert len(ax.get_lines()) == gcs["pid"].nunique()
    ys = sorted(y for line in ax.get_lines() for y in line.get_ydata())
    assert ys == sorted(gcs["pause_ms"])
    out = tmp_path / "gc.png"
    fig.savefig(out)
    assert is_png(out)


def test_gc_pauses_into_given_axes(plot):
    import matplotlib.pyplot as plt
    fig, axes = plt.subplots(1, 2)
    gcs = reports.gc(trace("gcevents.etl"), MANIFESTS["gcevents.etl"])
    got = plot.gc_pauses(gcs, ax=axes[1])
    assert got is fig
    assert sum(len(line.get_xdata()) for line in axes[1].get_lines()) == len(gcs)
    assert not axes[0].get_lines()


def test_io_latency_counts_every_disk_io(plot, tmp_path):
    name = "net.4.5.2.x64.etl"
    fig = plot.io_latency(trace(name))
    ax = fig.axes[0]
    total = sum(p.get_height() for c in ax.containers for p in c.patches)
    assert total == disk_event_count(name)
    procs = reports.disk(trace(name), MANIFESTS[name], table="processes")
    assert total == int(procs["reads"].sum() + procs["writes"].sum())
    out = tmp_path / "io.png"
    fig.savefig(out)
    assert is_png(out)


def test_io_times_are_the_kernels():
    # elapsed_ms: HighResResponseTime / PerfFreq, from etwdump's own fields
    import etwdecode.plot as p
    name = "net.4.5.2.x64.etl"
    df = p.disk_io_times(trace(name))
    evs = etwdump_events(name, "--event", "DiskIO/Read", "--event", "DiskIO/Write", "--format", "json")
    hdr = etwdump_events(name, "-n", "1", "--format", "json")[0]
    freq = hdr["fields"]["PerfFreq"]
    assert [e["fields"]["HighResResponseTime"] * 1000.0 / freq for e in evs] == list(df["elapsed_ms"])


def test_cpu_by_process_counts_the_samples(plot, tmp_path):
    name = "net.4.5.2.x64.etl"
    samples = etwdump_events(name, "--event", "PerfInfo/Sample", "--format", "json")
    n = sum(1 for e in samples if e["pid"] != 0)  # idle samples are left out by default
    assert 0 < n < len(samples)
    fig = plot.cpu_by_process(trace(name), kind="lines", top=3, idle=True)
    assert sum(sum(line.get_ydata()) for line in fig.axes[0].get_lines()) == len(samples)
    fig = plot.cpu_by_process(trace(name), kind="lines", top=3)
    ax = fig.axes[0]
    lines = ax.get_lines()
    assert len(lines) == 4  # the top 3 and "other"
    assert sum(sum(line.get_ydata()) for line in lines) == n
    fig = plot.cpu_by_process(trace(name), top=3)
    assert len(fig.axes[0].collections) == 4  # one stacked area each
    out = tmp_path / "cpu.png"
    fig.savefig(out)
    assert is_png(out)


def test_plot_module_imports_without_matplotlib():
    # matplotlib is imported when a function is called, not on import
    code = ("import sys; sys.modules['matplotlib'] = None; import etwdecode.plot, etwdecode.reports; "
            "print('ok')")
    p = subprocess.run([os.environ.get("PYTHON", "/usr/bin/python3"), "-c", code], capture_output=True,
                       text=True, timeout=120)
    assert p.stdout.strip() == "ok", p.stderr
