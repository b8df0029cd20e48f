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
[ "$n" -gt 0 ] || { echo "make_wevt_dlls: no case with both .wevt.v5.bin and .msg.bin in $src" >&2; exit 1; }
echo "make_wevt_dlls: $n DLLs in $out"
