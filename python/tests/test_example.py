"""The worked example of docs/python.md -- process starts by image name
across a folder of traces -- with pandas and with Dask, against etwdump."""
import collections
import glob
import json
import os
import subprocess

import pandas as pd

import etwdecode
import etwdecode.dask as ed
from conftest import DATA, ETWDUMP

EVENTS = ["Process/Start", "Process/DCStart"]  # DCStart too: the folder has few starts


def etwdump_counts():
    c = collections.Counter()
    for p in sorted(glob.glob(os.path.join(DATA, "*.etl"))):
        args = [ETWDUMP, "-q", "--provider", "Windows Kernel"]
        for e in EVENTS:
            args += ["--event", e]
        out = subprocess.run(args + [p], capture_output=True, timeout=300).stdout
        c.update(json.loads(line)["fields"].get("ImageFileName") for line in out.splitlines())
    return c


def test_pandas_version_one_kind():
    # the example as docs/python.md has it: Process/Start alone
    frames = [etwdecode.to_pandas(p, provider="Windows Kernel", event="Process/Start")
              for p in sorted(glob.glob(os.path.join(DATA, "*.etl")))]
    starts = pd.concat([f for f in frames if len(f)])
    assert dict(starts["ImageFileName"].value_counts()) == {"Test.x64.exe": 1}


def test_pandas_version():
    frames = [etwdecode.to_pandas(p, provider="Windows Kernel", event=EVENTS, expand=True)
              for p in sorted(glob.glob(os.path.join(DATA, "*.etl")))]
    frames = [f for f in frames if len(f)]
    starts = pd.concat(frames)
    counts = starts["ImageFileName"].value_counts()
    want = etwdump_counts()
    assert dict(counts) == dict(want)
    assert sum(want.values()) > 100 and want["Test.x64.exe"] >= 1


def test_dask_version(client):
    df = ed.read_etl(os.path.join(DATA, "*.etl"), provider="Windows Kernel", event=EVENTS,
                     blocksize="2MiB")
    image = df["fields"].map(lambda f: f.get("ImageFileName"), meta=("ImageFileName", object))
    counts = image.value_counts().compute()
    assert dict(counts) == dict(etwdump_counts())
