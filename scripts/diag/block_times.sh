#!/usr/bin/env bash
# Per-block timing of one multistage kernel (diagnostics for the GPU machine; see block_times.cu).
# Usage: scripts/diag/block_times.sh [--print-build] ID MxNxK [MxNxK...]   (BETA=0.5 ROUNDS=21 ARCH=sm_90 optional)
# Example: scripts/diag/block_times.sh 'multistage[BM=64,BN=128,BK=32,WM=32,WN=64,WNITER=2,TM=4,TN=4,STAGES=3,VEC=1,PAD=4,SPLITK=2,SWIZZLE=1,THIN_EDGE=4,THIN_WORKERS=4,INLINE_THIN_ROWS=1,A_CHUNK=8,TRANS_A=0,TRANS_B=0]' 1025x1024x1025 1024x1024x1025
# ID is a candidate id as `cm-tune tune` and `cm-tune query` print it. The kernel's instantiation and
# launch shape come from `cm-tune list --candidates --json` (the binary in $CMTUNE_BIN, default
# build/cm-tune), so they match the descriptor. --print-build prints the generated build header and
# stops (no nvcc, no GPU); sizes are then optional. Needs python3 (to read cm-tune's JSON).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
templates="$root/templates"
cmtune="${CMTUNE_BIN:-$root/build/cm-tune}"

fail() {
  echo "block_times: error: $*" >&2
  exit 2
}

print_build=0
if [ "${1:-}" = --print-build ]; then
  print_build=1
  shift
fi
if [ $# -lt 1 ] || { [ $print_build = 0 ] && [ $# -lt 2 ]; }; then
  sed -n '3,4p' "$0" >&2
  exit 2
fi
id="$1"
shift

# The id: template[NAME=VALUE,...].
if ! [[ "$id" =~ ^([a-z0-9_]+)\[([A-Za-z0-9_]+=-?[0-9]+(,[A-Za-z0-9_]+=-?[0-9]+)*)\]$ ]]; then
  fail "'$id' is not a candidate id such as multistage[BM=64,BN=128,...] (as cm-tune tune and query print them)"
fi
template="${BASH_REMATCH[1]}"
params="${BASH_REMATCH[2]}"
if [ "$template" != multistage ]; then
  fail "only multistage kernels carry the block-timing hook (CMT_DIAG_BLOCK_TIMES); '$template' has none"
fi
for size in "$@"; do
  [[ "$size" =~ ^[1-9][0-9]{0,8}x[1-9][0-9]{0,8}x[1-9][0-9]{0,8}$ ]] ||
    fail "size must be MxNxK with positive integers (at most 9 digits each), got '$size'"
done
[ -x "$cmtune" ] || fail "no cm-tune binary at $cmtune (build it, or set CMTUNE_BIN)"

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

twice="$(tr , '\n' <<< "$params" | cut -d= -f1 | sort | uniq -d | paste -sd, -)"
[ -z "$twice" ] || fail "'$id' names $twice more than once"

# A one-point preset: each parameter of the id as a one-element list.
preset="$work/block_times.toml"
{
  echo '[templates.multistage]'
  IFS=, read -r -a pairs <<< "$params"
  for pair in "${pairs[@]}"; do echo "${pair%%=*} = [${pair#*=}]"; done
} > "$preset"
list() {  # cm-tune list on the preset; its error, if any, as one line
  local out
  if ! out="$("$cmtune" --quiet --templates "$templates" list --config "$preset" "$@" 2>&1)"; then
    fail "cm-tune rejected '$id': $(printf '%s\n' "$out" | grep -v "^[[:space:]]*$" | tail -n 1 | sed "s/^cm-tune: error: //")"
  fi
  printf '%s\n' "$out"
}
list --json > "$work/template.json"
list --candidates --json > "$work/candidates.json"

# The build header block_times.cu includes, from the one candidate the preset holds: the kernel
# instantiation and the launch shape. Prints the candidate's ld_multiple (lda, ldb, ldc must be
# multiples of it).
header="$work/block_times_build.h"
ld_multiple="$(python3 - "$id" "$params" "$work/template.json" "$work/candidates.json" "$header" <<'EOF'
import json
import sys

given_id, params, template_json, candidates_json, header = sys.argv[1:]
def fail(message):
    sys.exit(f"block_times: error: '{given_id}' {message}")

given = [pair.split("=", 1)[0] for pair in params.split(",")]
template = json.load(open(template_json))["templates"][0]
names = [p["name"] for p in template["params"]]
missing = [name for name in names if name not in given]
if missing:
    fail(f"leaves out {', '.join(missing)} (an id names every parameter of {template['name']})")
if template["counts"]["valid"] == 0:
    reasons = [p["reason"] for p in template["counts"]["pruned"] if p["count"] > 0]
    fail(f"is not a valid candidate: {'; '.join(reasons) or 'cm-tune lists no candidate for it'}")
candidates = json.load(open(candidates_json))
if len(candidates) != 1:
    fail(f"gives {len(candidates)} candidates, expected one")
c = candidates[0]
launch = c["launch"]
if launch["grid_z"] != 1:
    fail(f"launches grid_z = {launch['grid_z']}; block_times.cu launches grid_z = 1 only")
with open(header, "w") as out:
    out.write("// Written by scripts/diag/block_times.sh from `cm-tune list --candidates --json`; included by\n")
    out.write("// block_times.cu after multistage.cuh and BlockTimesBuild.\n")
    out.write("#pragma once\n\n")
    out.write("static const BlockTimesBuild kBuild = {\n")
    out.write(f"    \"{c['id']}\",\n")
    out.write(f"    {c['name_expression']},\n")
    out.write(f"    {launch['threads']}, {launch['tile_m']}, {launch['tile_n']}, {launch['dynamic_smem']}, "
              f"{c['requires']['ld_multiple']}}};  // threads, tile_m, tile_n, dynamic_smem, ld_multiple\n")
print(c["requires"]["ld_multiple"])
EOF
)" || exit 2
for size in "$@"; do  # block_times.cu passes lda = K, ldb = ldc = N
  IFS=x read -r m n k <<< "$size"
  if [ $((n % ld_multiple)) != 0 ] || [ $((k % ld_multiple)) != 0 ]; then
    fail "'$id' needs N and K to be multiples of $ld_multiple (its leading dimensions), got $size"
  fi
done
if [ $print_build = 1 ]; then
  cat "$header"
  exit 0
fi

nvcc="${CUDA_HOME:-/usr/local/cuda}/bin/nvcc"
"$nvcc" -O3 -std=c++17 -arch="${ARCH:-sm_90}" -I "$work" -I "$templates" -o "$work/block_times" \
  "$root/scripts/diag/block_times.cu"
for size in "$@"; do
  IFS=x read -r m n k <<< "$size"
  "$work/block_times" "$m" "$n" "$k" "${BETA:-0}" "${ROUNDS:-21}"
done
