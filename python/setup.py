"""Build and install the etwdecode package with Debian's tools alone:

    /usr/bin/python3 -m pip install --no-build-isolation ./python

(no package index is needed: setuptools and the C compiler come from
python3-setuptools, python3-dev and gcc; libxxhash-dev and libexpat1-dev
from scripts/install-deps.sh). The extension is compiled from the library's
own sources in ../src, so nothing else has to be installed first."""
import glob
import os
import re

from setuptools import Extension, setup

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)


def version():
    with open(os.path.join(ROOT, "include", "etwdecode", "etwdecode.h")) as f:
        text = f.read()
    parts = [re.search(r"#define ETWDECODE_VERSION_%s (\d+)" % k, text).group(1)
             for k in ("MAJOR", "MINOR", "PATCH")]
    return ".".join(parts)


sources = [os.path.join("etwdecode", "_native.c")]
sources += sorted(os.path.relpath(p, HERE) for p in glob.glob(os.path.join(ROOT, "src", "*", "*.c")))

setup(
    name="etwdecode",
    version=version(),
    description="Decode Windows ETW traces (.etl) on any OS: events as dicts, pandas and Dask",
    packages=["etwdecode"],
    python_requires=">=3.9",
    ext_modules=[
        Extension(
            "etwdecode._native",
            sources=sources,
            include_dirs=[os.path.join(ROOT, "include"), os.path.join(ROOT, "src")],
            libraries=["xxhash", "expat"],
            extra_compile_args=["-std=c11", "-O2"],
        )
    ],
)
