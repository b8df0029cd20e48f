"""Build and install the etwdecode package with Debian's tools alone:

    /usr/bin/python3 -m pip install --no-build-isolation ./python

(no package index is needed: setuptools and the C compiler come from
python3-setuptools, python3-dev and gcc; libxxhash-dev, libexpat1-dev and libarchive-dev
from scripts/install-deps.sh). The extension is compiled from the library's
own sources in ../src, so nothing else has to be installed first."""
import glob
import os
import re
import subprocess

from setuptools import Extension, setup
# distutils after setuptools: setuptools' own copy where the standard
# library has none (Python 3.12 and later)
from distutils.ccompiler import new_compiler
from distutils.sysconfig import customize_compiler

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)


def version():
    with open(os.path.join(ROOT, "include", "etwdecode", "etwdecode.h")) as f:
        text = f.read()
    parts = [re.search(r"#define ETWDECODE_VERSION_%s (\d+)" % k, text).group(1)
             for k in ("MAJOR", "MINOR", "PATCH")]
    return ".".join(parts)


def embedded_manifest():
    """The C source the CMake build makes with tools/embed/etw_embed.c, made
    the same way: that program is compiled (with expat) and run on
    data/manifests/ClrEtwAll.man. It defines `etw_builtin_clretwall`, the
    manifest pre-parsed (src/source/etw_manifest_replay.h), and the size and
    hash of the XML (src/source/etw_builtin_manifests.c)."""
    src = os.path.join(ROOT, "data", "manifests", "ClrEtwAll.man")
    out_dir = os.path.join(HERE, "build", "etw_generated")
    os.makedirs(out_dir, exist_ok=True)
    cc = new_compiler()
    customize_compiler(cc)
    objects = cc.compile([os.path.join(ROOT, "tools", "embed", "etw_embed.c")], output_dir=out_dir,
                         include_dirs=[os.path.join(ROOT, "src")], extra_postargs=["-std=c11", "-O2"])
    cc.link_executable(objects, "etw_embed", output_dir=out_dir, libraries=["expat"])
    tool = os.path.join(out_dir, cc.executable_filename("etw_embed"))
    out = os.path.join(out_dir, "etw_builtin_clretwall.c")
    subprocess.check_call([tool, "etw_builtin_clretwall", src, out])
    return os.path.relpath(out, HERE)


sources = sorted(os.path.relpath(p, HERE) for p in glob.glob(os.path.join(HERE, "etwdecode", "py_*.c")))
sources += sorted(os.path.relpath(p, HERE) for p in glob.glob(os.path.join(ROOT, "src", "*", "*.c")))
sources.append(embedded_manifest())

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
            libraries=["xxhash", "expat", "archive"],
            extra_compile_args=["-std=c11", "-O2"],
        )
    ],
)
