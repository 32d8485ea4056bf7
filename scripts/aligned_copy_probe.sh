#!/usr/bin/env bash
# Times a multistage build on odd leading dimensions against packing A and B into aligned copies and
# running a VEC=4 build on them (diagnostics for the GPU machine; see aligned_copy_probe.cu).
# Usage: scripts/aligned_copy_probe.sh RAW_BUILD ALIGNED_BUILD MxNxK [MxNxK...]   (ROUNDS=200 ARCH=sm_90 optional)
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
if [ $# -lt 3 ]; then
  sed -n '2,4p' "$0"
  exit 2
fi
for build in "$1" "$2"; do
  if ! [[ "$build" =~ ^[0-9]+(,[0-9]+){16}$ ]]; then
    echo "error: a build must be the 17 multistage parameters separated by commas, got '$build'" >&2
    exit 2
  fi
done
if [ "$(echo "$2" | cut -d, -f10)" != 4 ]; then
  echo "error: ALIGNED_BUILD must have VEC = 4 (the tenth parameter), got '$2'" >&2
  exit 2
fi
nvcc="${CUDA_HOME:-/usr/local/cuda}/bin/nvcc"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
printf '#define RAW_BUILD %s\n#define ALIGNED_BUILD %s\n' "$1" "$2" > "$work/aligned_copy_probe_builds.h"
"$nvcc" -O3 -std=c++17 -arch="${ARCH:-sm_90}" -I "$work" -I "$root/templates" -I "$root/scripts" \
  -o "$work/probe" "$root/scripts/aligned_copy_probe.cu" -lcublas
shift 2
for size in "$@"; do
  if ! [[ "$size" =~ ^([0-9]+)x([0-9]+)x([0-9]+)$ ]]; then
    echo "error: size must be MxNxK, got '$size'" >&2
    exit 2
  fi
  "$work/probe" "${BASH_REMATCH[1]}" "${BASH_REMATCH[2]}" "${BASH_REMATCH[3]}" "${ROUNDS:-200}"
done
