#!/usr/bin/env bash
# Build test DLLs from the event-trace-kit blobs: for every case X with both
# X.wevt.v5.bin and X.msg.bin, X.dll holds them as resource 1 of type
# WEVT_TEMPLATE and resource 1 of type 11 (RT_MESSAGETABLE), as mc.exe's .rc
# would. Uses Debian's LLVM tools (packages llvm-14, lld-14); the names can
# be overridden with LLVM_RC, LLVM_CVTRES and LLD_LINK.
#
#   make_wevt_dlls.sh OUTDIR [SRCDIR]
#
# SRCDIR defaults to tests/data/wevt/event-trace-kit beside this script.
#
# Also, laid out as Windows keeps a language-neutral file and its strings:
# split/wpf-etw.dll (WEVT_TEMPLATE only), split/wpf-etw.mui (the message
# table only: the en-US .mui) and split/wpf-etw.de-DE.mui (the same table
# with the map entry "Render" spelled "Zeigen", to tell languages apart).
set -euo pipefail
out=${1:?usage: make_wevt_dlls.sh OUTDIR [SRCDIR]}
src=${2:-$(cd "$(dirname "$0")" && pwd)/data/wevt/event-trace-kit}
rc=${LLVM_RC:-llvm-rc-14}
cvtres=${LLVM_CVTRES:-llvm-cvtres-14}
link=${LLD_LINK:-lld-link-14}
for tool in "$rc" "$cvtres" "$link"; do
  command -v "$tool" >/dev/null || { echo "make_wevt_dlls: $tool not found (scripts/install-deps.sh installs llvm-14 lld-14)" >&2; exit 1; }
done
mkdir -p "$out"
src=$(cd "$src" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
n=0
for wevt in "$src"/*.wevt.v5.bin; do
  name=$(basename "$wevt" .wevt.v5.bin)
  msg="$src/$name.msg.bin"
  [ -f "$msg" ] || continue
  # the .rc names its files relative to the working folder: copy them there
  cp "$wevt" "$work/t.wevt.bin"
  cp "$msg" "$work/t.msg.bin"
  printf '1 WEVT_TEMPLATE "t.wevt.bin"\n1 11 "t.msg.bin"\n' >"$work/t.rc"
  (cd "$work" && "$rc" /FO t.res t.rc && "$cvtres" /machine:x64 /out:t.obj t.res &&
    "$link" /dll /noentry /machine:x64 /out:t.dll t.obj >/dev/null)
  mv "$work/t.dll" "$out/$name.dll"
  rm -f "$work"/t.*
  n=$((n + 1))
done
# the split files of wpf-etw
mkdir -p "$out/split"
cp "$src/wpf-etw.wevt.v5.bin" "$work/t.wevt.bin"
cp "$src/wpf-etw.msg.bin" "$work/t.msg.bin"
python3 - "$work/t.msg.bin" "$work/d.msg.bin" <<'PY'
import sys
b = open(sys.argv[1], "rb").read()
old, new = "Render\r\n".encode("utf-16-le"), "Zeigen\r\n".encode("utf-16-le")
assert b.count(old) == 1, "wpf-etw.msg.bin: expected one Render entry"
open(sys.argv[2], "wb").write(b.replace(old, new))
PY
build_one() { # rc-text output
  printf '%b' "$1" >"$work/t.rc"
  (cd "$work" && "$rc" /FO t.res t.rc && "$cvtres" /machine:x64 /out:t.obj t.res &&
    "$link" /dll /noentry /machine:x64 /out:t.dll t.obj >/dev/null)
  mv "$work/t.dll" "$2"
  rm -f "$work/t.res" "$work/t.obj" "$work/t.rc"
}
build_one '1 WEVT_TEMPLATE "t.wevt.bin"\n' "$out/split/wpf-etw.dll"
build_one '1 11 "t.msg.bin"\n' "$out/split/wpf-etw.mui"
build_one '1 11 "d.msg.bin"\n' "$out/split/wpf-etw.de-DE.mui"
rm -f "$work"/*.bin

[ "$n" -gt 0 ] || { echo "make_wevt_dlls: no case with both .wevt.v5.bin and .msg.bin in $src" >&2; exit 1; }
echo "make_wevt_dlls: $n DLLs in $out"
