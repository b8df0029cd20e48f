#!/usr/bin/env bash
# Install the Debian packages etwdecode needs to build and test, if missing.
# Safe to run repeatedly: it only calls apt-get when something is absent.
set -euo pipefail

packages=(
  gcc libc6-dev make cmake pkg-config    # build
  clang libclang-rt-14-dev     # sanitizer and libFuzzer builds
  libxxhash-dev                # schema-cache key hashing
  libexpat1-dev                # instrumentation manifests (XML)
  libarchive-dev               # compressed inputs: .etl.zip (PerfView), .etl.gz, .etl.zst, .etl.xz
  zstd                         # the zstd CLI: tests make .etl.zst samples with it
  llvm-14 lld-14               # test DLLs from WEVT blobs (tests/make_wevt_dlls.sh); llvm-pdbutil-14,
                               # the oracle of tests/test_pdb.py, and its lld-link PDB sample
  python3                      # end-to-end tests and the baseline comparison
  bsdutils                     # script(1): the progress-line test under a pseudo-terminal
  python3-dev python3-setuptools python3-pip   # the Python package (python/): build, pip install
  python3-pytest               # its tests
  python3-numpy python3-pandas # etwdecode.to_pandas
  python3-dask python3-distributed  # etwdecode.dask (tests run a LocalCluster)
  python3-matplotlib           # etwdecode.plot (its tests save PNGs with the Agg backend)
)

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done
[ ${#missing[@]} -eq 0 ] && exit 0

echo "install-deps: installing ${missing[*]}"
sudo=""
if [ "$(id -u)" -ne 0 ]; then
  command -v sudo >/dev/null || { echo "install-deps: need root or sudo to install: ${missing[*]}" >&2; exit 1; }
  sudo="sudo"
fi
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
