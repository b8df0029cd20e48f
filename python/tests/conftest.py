"""Shared setup of the Python tests: where etwdump and the traces are, and
etwdump's own output to compare with (run once per trace and options)."""
import functools
import json
import os
import subprocess

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
DATA = os.environ.get("ETW_TEST_DATA", os.path.join(ROOT, "tests", "data"))
ETWDUMP = os.environ.get("ETWDUMP", os.path.join(ROOT, "build", "etwdump"))

TRACES = sorted(f for f in os.listdir(DATA) if f.endswith(".etl"))

#: manifests each trace is decoded with (as the etwdump tests do)
MANIFESTS = {
    "HTTP_Server.etl": [os.path.join(DATA, "HTTP_Server.man")],
    "net.4.5.2.x64.etl": [os.path.join(DATA, "ClrEtwAll.man")],
    "gcevents.etl": [os.path.join(DATA, "ClrEtwAll.man")],
}


def trace(name):
    return os.path.join(DATA, name)


@functools.lru_cache(maxsize=None)
def etwdump_lines(name, *options):
    args = [ETWDUMP, *options]
    for m in MANIFESTS.get(name, []):
        args += ["-m", m]
    p = subprocess.run(args + [trace(name)], capture_output=True, timeout=600)
    assert p.returncode in (0, 1), p.stderr.decode("utf-8", "replace")
    return p.stdout.decode("utf-8").splitlines()


def etwdump_events(name, *options):
    return [json.loads(line) for line in etwdump_lines(name, *options)]


@functools.lru_cache(maxsize=None)
def etwdump_text(*args):
    p = subprocess.run([ETWDUMP, *args], capture_output=True, timeout=600)
    return p.returncode, p.stdout.decode("utf-8"), p.stderr.decode("utf-8", "replace")


@pytest.fixture(scope="session")
def data_dir():
    return DATA


@pytest.fixture(scope="session")
def client():
    """A real distributed.LocalCluster with 2 worker processes (one thread each)."""
    distributed = pytest.importorskip("distributed")
    cluster = distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                       dashboard_address=":0", silence_logs=40)
    c = distributed.Client(cluster)
    yield c
    c.close()
    cluster.close()


def etwdump_stats_json(name, manifests=()):
    """etwdump --stats --format json of one trace as a dict, or None when
    this etwdump prints only the text table."""
    import json as _json
    args = []
    for m in manifests:
        args += ["-m", m]
    rc, out, err = etwdump_text("--stats", "--format", "json", *args, trace(name))
    if rc != 0:
        return None
    try:
        d = _json.loads(out)
        # etwdump's profile of the CPU samples (a trace with stacks): not
        # part of etwdecode.stats() - etwdecode.profile() gives it
        d.pop("cpu_samples", None)
        return d
    except ValueError:
        return None
