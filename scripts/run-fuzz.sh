#!/usr/bin/env bash
# Run every libFuzzer target in BUILD_DIR for SECONDS each, seeded from
# fuzz/corpus/<target without the fuzz_ prefix>/ when that folder exists.
# New inputs go to a temporary folder (the committed corpus stays small).
# Exits non-zero when a target finds a crash, a leak or a hang.
set -euo pipefail
build=${1:-build-fuzz}
secs=${2:-20}
top=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
status=0
n=0
for target in "$build"/fuzz_*; do
  [ -x "$target" ] || continue
  name=$(basename "$target")
  seeds="$top/fuzz/corpus/${name#fuzz_}"
  mkdir -p "$work/$name"
  args=("$work/$name")
  [ -d "$seeds" ] && args+=("$seeds")
  if "$target" -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
       -artifact_prefix="$work/$name-" "${args[@]}" >"$work/$name.log" 2>&1; then
    runs=$(grep -m1 -o 'stat::number_of_executed_units: *[0-9]*' "$work/$name.log" | grep -o '[0-9]*$' || echo "?")
    echo "fuzz $name: ok, $runs runs in ${secs}s"
    n=$((n + 1))
  else
    echo "fuzz $name: FAILED" >&2
    tail -n 40 "$work/$name.log" >&2
    status=1
  fi
done
echo "fuzz: $n targets clean"
exit $status
