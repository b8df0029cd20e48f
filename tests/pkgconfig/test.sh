#!/bin/sh
# The installed etwdecode.pc from any prefix: install the build tree into a
# temporary prefix, move that tree elsewhere (the .pc must find its prefix
# from its own place), then build tests/pkgconfig/count.c with the flags
# pkg-config gives (the shared library: a static link would need the
# static archives of libarchive's own dependencies, not installed), and run it on a trace and a gzip'd
# copy (gcevents.etl: 71 records, test_etwdump.py's COUNTS).
# usage: test.sh BUILD_DIR SOURCE_DIR CC
set -eu
build=$1 src=$2 cc=$3
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cmake --install "$build" --prefix "$tmp/first" >/dev/null
mv "$tmp/first" "$tmp/moved"
pc=$(find "$tmp/moved" -name etwdecode.pc)
[ -n "$pc" ] || { echo "FAIL: no etwdecode.pc installed"; exit 1; }
export PKG_CONFIG_PATH="$(dirname "$pc")"
flags=$(pkg-config --cflags --libs etwdecode)
echo "pkg-config --cflags --libs etwdecode: $flags"
case "$flags" in *"$tmp/moved"*) ;; *) echo "FAIL: flags do not point into the moved prefix"; exit 1 ;; esac
libdir=$(pkg-config --variable=libdir etwdecode)
"$cc" -std=c11 -Wall -Wextra -Werror "$src/tests/pkgconfig/count.c" $flags -o "$tmp/count_shared"
gzip -c "$src/tests/data/gcevents.etl" > "$tmp/gc.etl.gz"
fail=0
for prog in count_shared; do
  for input in "$src/tests/data/gcevents.etl" "$tmp/gc.etl.gz"; do
    out=$(LD_LIBRARY_PATH="$libdir" "$tmp/$prog" "$input")
    case "$input" in *.gz) want="a gzip-compressed file: 71 events" ;; *) want="an ETL trace: 71 events" ;; esac
    if [ "$out" = "$want" ]; then echo "ok: $prog $(basename "$input"): $out"
    else echo "FAIL: $prog $(basename "$input"): '$out', want '$want'"; fail=1; fi
  done
done
# the shared program uses the installed library, not the build tree's
LD_LIBRARY_PATH="$libdir" ldd "$tmp/count_shared" | grep "libetwdecode.so" | grep -q "$tmp/moved/" || { echo "FAIL: count_shared does not load the installed library"; fail=1; }
exit $fail
