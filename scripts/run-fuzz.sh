#!/usr/bin/env bash
# Run libFuzzer targets in BUILD_DIR for SECONDS each, seeded from
# fuzz/corpus/<target without the fuzz_ prefix>/ when that folder exists.
#
#   run-fuzz.sh BUILD_DIR SECONDS [TARGET...]
#
# TARGET names (fuzz_etwdump, ...) pick targets; default: every fuzz_* in
# BUILD_DIR. New inputs go to a temporary folder (the committed corpus stays
# small), or to $FUZZ_CORPUS_DIR/<target>/ when that is set (make fuzz-long
# keeps its corpus there, so a campaign resumes where the last one stopped).
# Each target gets -max_len from max_len_for below, so inputs can grow past
# the largest seed. Prints executions, coverage (cov: edges, ft: features)
# and corpus size per target. Exits non-zero when a target finds a crash, a
# leak or a hang (its artifact is copied to $FUZZ_ARTIFACTS, default
# BUILD_DIR/artifacts).
set -euo pipefail
build=${1:-build-fuzz}
secs=${2:-20}
shift 2 || shift $#
top=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
artifacts=${FUZZ_ARTIFACTS:-$build/artifacts}

# -max_len per target (libFuzzer's default is the largest seed: 58 bytes for
# fuzz_decode, 685 for fuzz_decoder). Inputs that are one event (a schema
# and a payload, or decoder records with u16 payload lengths) get 65536: an
# ETW event is at most 64 KB. Inputs that are whole trace files get 262144:
# four buffers of 64 KB, the usual BufferSize, so a mutated trace can hold
# several full buffers. fuzz_text formats values of at most a few KB: 4096.
# fuzz_pe reads whole DLLs, or raw message tables: 65536. fuzz_pdb reads
# whole PDBs (the seeds are 7 KB of 512-byte pages): 65536, 128 such pages.
max_len_for() {
  case "$1" in
    fuzz_reader | fuzz_etwdump | fuzz_render | fuzz_profile | fuzz_report) echo 262144 ;; # profile, report: traces, or event scripts
    fuzz_text) echo 4096 ;;
    fuzz_pe) echo 65536 ;; # whole DLLs: the real test DLLs are 2-59 KB
    fuzz_pdb) echo 65536 ;;
    *) echo 65536 ;;
  esac
}

# -rss_limit_mb per target: 2048 for most. fuzz_manifest_path builds
# documents of up to 2 MiB from each input and loads them the way
# etwdump -m FILE does: 160 MB holds libFuzzer, ASan and the library's
# tables for such a document (2 MiB of 290,000 template items: 86 MB
# resident), but not memory that grows with nesting: before the nesting limit
# its seed nested_x22 (700,000 nested elements) took 201 MB in expat
# (issue 23.1).
rss_limit_for() {
  case "$1" in
    fuzz_manifest_path) echo 160 ;;
    *) echo 2048 ;;
  esac
}

targets=()
if [ $# -gt 0 ]; then
  for t in "$@"; do targets+=("$build/$t"); done
else
  for t in "$build"/fuzz_*; do targets+=("$t"); done
fi

status=0
n=0
for target in "${targets[@]}"; do
  [ -x "$target" ] || { echo "fuzz: no target $target" >&2; status=1; continue; }
  name=$(basename "$target")
  seeds="$top/fuzz/corpus/${name#fuzz_}"
  out="$work/$name"
  [ -n "${FUZZ_CORPUS_DIR:-}" ] && out="$FUZZ_CORPUS_DIR/$name"
  mkdir -p "$out"
  args=("$out")
  [ -d "$seeds" ] && args+=("$seeds")
  len=$(max_len_for "$name")
  rss=$(rss_limit_for "$name")
  if "$target" -max_total_time="$secs" -max_len="$len" -timeout=10 -rss_limit_mb="$rss" -print_final_stats=1 \
       -artifact_prefix="$work/$name-" "${args[@]}" >"$work/$name.log" 2>&1; then
    runs=$(grep -m1 -o 'stat::number_of_executed_units: *[0-9]*' "$work/$name.log" | grep -o '[0-9]*$' || echo "?")
    last=$(grep -E '^#[0-9]+' "$work/$name.log" | tail -n 1 || true)
    cov=$(echo "$last" | grep -o 'cov: [0-9]*' | grep -o '[0-9]*' || echo "?")
    ft=$(echo "$last" | grep -o 'ft: [0-9]*' | grep -o '[0-9]*' || echo "?")
    corp=$(echo "$last" | grep -o 'corp: [^ ]*' | cut -d' ' -f2 || echo "?")
    echo "fuzz $name: ok, $runs runs in ${secs}s (max_len $len, rss_limit_mb $rss), cov $cov ft $ft corpus $corp"
    n=$((n + 1))
  else
    echo "fuzz $name: FAILED" >&2
    tail -n 40 "$work/$name.log" >&2
    mkdir -p "$artifacts"
    cp "$work/$name"-* "$artifacts/" 2>/dev/null && echo "fuzz $name: artifact kept in $artifacts" >&2
    status=1
  fi
done
echo "fuzz: $n targets clean"
exit $status
