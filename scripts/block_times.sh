#!/usr/bin/env bash
# Per-block timing of one multistage build (diagnostics for the GPU machine; see block_times.cu).
# Usage: scripts/block_times.sh BUILD MxNxK [MxNxK...]   (BETA=0.5 ROUNDS=21 ARCH=sm_90 optional)
# Example: scripts/block_times.sh 64,128,32,32,64,2,4,4,3,1,4,2,1,4,4,1,8 1025x1024x1025 1024x1024x1025
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
if [ $# -lt 2 ]; then
  sed -n '2,4p' "$0"
  exit 2
fi
build="$1"
shift
if ! [[ "$build" =~ ^[0-9]+(,[0-9]+){16}$ ]]; then
  echo "error: BUILD must be the 17 multistage parameters separated by commas, got '$build'" >&2
  exit 2
fi
nvcc="${CUDA_HOME:-/usr/local/cuda}/bin/nvcc"
work="$(mktemp -d)"
bin="$work/block_times"
echo "#define BUILD $build" > "$work/block_times_build.h"  # nvcc would split a -D value at its commas
"$nvcc" -O3 -std=c++17 -arch="${ARCH:-sm_90}" -I "$work" -I "$root/templates" -I "$root/scripts" -DCMT_BLOCK_TIMES=16384 \
  -o "$bin" "$root/scripts/block_times.cu"
for size in "$@"; do
  if ! [[ "$size" =~ ^([0-9]+)x([0-9]+)x([0-9]+)$ ]]; then
    echo "error: size must be MxNxK, got '$size'" >&2
    exit 2
  fi
  "$bin" "${BASH_REMATCH[1]}" "${BASH_REMATCH[2]}" "${BASH_REMATCH[3]}" "${BETA:-0}" "${ROUNDS:-21}"
done
