#!/bin/sh
# The host cost of one call of the exported header's dispatch at two commits of its run-time code
# (tuner/export/runtime/): builds scripts/diag/record_overhead.cu against each and runs the two
# binaries alternately, `runs` times each, recording off (CMTUNE_RECORD unset) and, where the commit
# records, on (one repeated call). Needs nvcc; no GPU (then every call stops at cudaGetDevice).
# Usage: scripts/diag/record_overhead.sh BEFORE_COMMIT [AFTER_COMMIT (default: the work tree)] [runs]
set -eu
before=$1
after=${2:-}
runs=${3:-5}
repo=$(cd "$(dirname "$0")/../.." && pwd)
nvcc=${CMTUNE_NVCC:-${CUDA_HOME:-/usr/local/cuda}/bin/nvcc}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
unset CMTUNE_RECORD || true

tree() {  # tree COMMIT DIR: the runtime files of COMMIT (the work tree's when empty) under DIR/export/runtime
  mkdir -p "$2/export/runtime"
  if [ -z "$1" ]; then
    cp "$repo"/tuner/export/runtime/* "$2/export/runtime/"
  else
    for f in $(git -C "$repo" ls-tree --name-only "$1" tuner/export/runtime/); do
      git -C "$repo" show "$1:$f" > "$2/export/runtime/$(basename "$f")"
    done
  fi
}
tree "$before" "$work/before"
tree "$after" "$work/after"
for side in before after; do
  "$nvcc" -std=c++17 -O2 -arch=sm_90 -I "$work/$side" "$repo/scripts/diag/record_overhead.cu" -o "$work/$side/bench"
done
i=0
while [ "$i" -lt "$runs" ]; do
  printf 'before  off: '; "$work/before/bench"
  printf 'after   off: '; "$work/after/bench"
  if [ -f "$work/after/export/runtime/call_recorder.cuh" ]; then
    printf 'after   on:  '; CMTUNE_RECORD="$work/calls.txt" "$work/after/bench"
  fi
  i=$((i + 1))
done
