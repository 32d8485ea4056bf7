#!/usr/bin/env bash
# Reproduces every table of docs/BENCHMARKS.md on the GPU machine, with a build/ made elsewhere and
# carried there (scripts/gpu/stage_for_device.sh). Writes the raw results (JSON) and the tables
# (tables.md, by scripts/gpu/bench_tables.py) under $OUT (default ./bench-out).
# Usage: scripts/gpu/benchmarks.sh [phase...]   (default: all of them, in this order)
#   readme    the README's main command, cold, into $CMTUNE_BENCH_DB (deleted first), timed; then the
#             same command again (warm), and export of the header
#   layouts   the header against cuBLAS on the public suite in each of nn, nt, tn and tt, with the
#             dispatch's regret (bench --regret); layouts-L[-L...] (layouts-nn-nt, layouts-tt, ...)
#             runs those layouts alone, so the four may be spread over separate calls
#   batched   the header against cuBLAS on the public batched suite, with the regret
#   squares   the header against cuBLAS on the README's tuned sizes
#   tuned-all `tune --sizes @public.txt --layout all` on a copy of the README's database, export, and
#             that header against cuBLAS on the public suite in every layout. A full search of the
#             108 calls takes about 100 minutes on an H100; CMTUNE_TUNE_FLAGS (for example
#             "--time-limit 300") bounds it, and the table names the flags
#   f64       `tune --sizes 256..4096 --dtype f64` into its own database, export, and the header
#             against DGEMM on the public suite as f64, nn and nt, with the regret. With
#             CMTUNE_F64_DB (a database of that tune, such as an earlier run's f64-nocubins.db.gz, and
#             CMTUNE_F64_COMMIT, the commit that tuned it) the tune is not rerun: that database is
#             exported and benched, and the tables say which commit tuned it
#   tf32x3    the opt-in tf32x3 class: `tune --dtype tf32x3 --config tf32x3 --sizes 256..4096 --layout
#             nn,nt`, then 8192^3 without calibration, on a copy of the README's database (its f32
#             winners make the SIMT side of the same header), export, and `cm-tune precision --winners` at 4096^3 and 8192^3, nn and
#             nt, on uniform and normal data (cuBLAS SGEMM, cuBLAS TF32 and the winners: rate, error
#             against FP64, energy)
#   tf32x3-shapes
#             that header on the public suite in nn and nt, each shape as f32 (sgemm) and as tf32x3
#             (sgemm_tf32x3) against cuBLAS SGEMM; and scripts/gpu/ragged_bench.cu built against it:
#             odd leading dimensions and operands one float off alignment, which bench does not time
#   tf32x3-accuracy
#             tune --dtype tf32x3 (no calibration) at 512 x 512 x K for K = 16 .. 65536 into that
#             database (after the header's export), and precision --winners there on uniform and normal
#             data: the error of each against SGEMM's
#   triton    Triton's tf32x3 (scripts/gpu/triton_tf32x3.py) against cuBLAS SGEMM at 4096^3 and 8192^3, nn
#             and nt, where the image has Triton and PyTorch
#   scale-1, scale-all
#             the README's main command cold on GPU 0 (scale-1), then on every GPU of the host
#             (`--device all`, scale-all), each into its own database and timed; scale-all then compares
#             the two runs' winners (scale.json). Each half fits one device call; CMTUNE_SCALE_CPUS (a
#             taskset list) pins both tunes to the same cores, so another job may use the rest
#   tables    the markdown tables of every JSON present
# The phases may run in separate calls of a machine that stays up: they share /tmp. On a fresh
# machine, CMTUNE_README_DB (an earlier call's readme-nocubins.db.gz, of the same commit) stands for the
# README's database, and CMTUNE_TF32X3_DB (tf32x3-nocubins.db.gz) for the tf32x3 phase's: the kernels
# whose cubins were dropped are built again from the sources they keep. The public
# suites are read from $CMTUNE_SHAPES_DIR (default ../shared/shapes); CMTUNE_COMMIT names the commit
# where the tree carries no .git.
set -uo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
out="${OUT:-$root/bench-out}"
mkdir -p "$out"
bin="$root/build/cm-tune"
db="${CMTUNE_BENCH_DB:-/tmp/cm-tune-bench.db}"
db64="${db%.db}-f64.db"
db3="${db%.db}-tf32x3.db"
hdr="${db%.db}.cuh"   # each database its own header, so two benches may run side by side
hdr3="${db%.db}-tf32x3.cuh"
shapes="${CMTUNE_SHAPES_DIR:-$root/../shared/shapes}"
rounds="${CMTUNE_ROUNDS:-50}"
phases=("$@")
[ ${#phases[@]} -gt 0 ] || phases=(readme layouts batched squares tuned-all f64 tf32x3 tf32x3-shapes tf32x3-accuracy triton tables)
export PATH=/usr/local/cuda/bin:$PATH

log() { echo "=== $(date +%H:%M:%S) $*"; }
{
  nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
  "$bin" --version
  echo "${CMTUNE_COMMIT:-$(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo unknown)}"
  python3 -c 'import triton; print("triton", triton.__version__)' 2>/dev/null || echo "triton: not in this image"
} > "$out/environment.txt" 2>&1

restore() { # SAVED DB: a database saved by save_without_cubins (gzipped or not) as DB, unless DB exists
  local saved="$1" to="$2"
  [ -n "$saved" ] && [ ! -f "$to" ] || return 0
  log "restoring $to from $saved"
  case "$saved" in
    *.gz) gunzip -c "$saved" > "$to" ;;
    *) cp "$saved" "$to" ;;
  esac
  "$bin" --db "$to" db migrate
}
restore "${CMTUNE_README_DB:-}" "$db"
restore "${CMTUNE_TF32X3_DB:-}" "$db3"

header() { # the exported header of a database, built once per database
  local from="$1" to="$2"
  [ -f "$to" ] || "$bin" --db "$from" export --out "$to" | tee -a "$out/export.txt"
}

save_without_cubins() { # DB OUT: a copy without the compile cache's cubins (small enough to bring back), gzipped
  python3 - "$1" "$2" <<'PY'
import sqlite3, sys
src = sqlite3.connect(sys.argv[1]); dst = sqlite3.connect(sys.argv[2]); src.backup(dst)
dst.execute("update binaries set cubin = x''"); dst.commit(); dst.execute("vacuum"); dst.close()
PY
  gzip -f "$2"
}

bench() { # NAME DB HEADER ARGS...: cm-tune bench --json into $out/NAME.json
  local name="$1" from="$2" hdr="$3"
  shift 3
  log "bench $name: $*"
  "$bin" --db "$from" --quiet --log-file "$out/$name.log" bench --device 0 --header "$hdr" --rounds "$rounds" --json \
    "$@" > "$out/$name.json" 2> "$out/$name.err"
  echo "bench $name rc=$?"
  tail -2 "$out/$name.err"
}

for phase in "${phases[@]}"; do
  case "$phase" in
    readme)
      log "README command, cold"
      rm -f "$db"* "$hdr"
      SECONDS=0
      "$bin" --db "$db" --log-file "$out/readme-tune.log" tune --device 0 --sizes 256..4096 --json \
        > "$out/readme-tune.json" 2> "$out/readme-tune.err"
      rc=$?
      cold=$SECONDS
      log "README command, warm"
      SECONDS=0
      "$bin" --db "$db" tune --device 0 --sizes 256..4096 > "$out/readme-tune-warm.txt" 2>&1
      echo "{\"cold_seconds\": $cold, \"warm_seconds\": $SECONDS, \"rc\": $rc}" > "$out/readme-time.json"
      cat "$out/readme-time.json"
      header "$db" "$hdr"
      cp "$hdr" "$out/tuned_sgemm.cuh"
      save_without_cubins "$db" "$out/readme-nocubins.db"
      ;;
    layouts | layouts-*)
      # One bench per group of layouts (layouts: nn,nt and tn,tt); the groups may run in separate calls.
      # Their rows are joined into public-layouts.json once every layout has been benched.
      header "$db" "$hdr"
      if [ "$phase" = layouts ]; then groups=(nn-nt tn-tt); else groups=("${phase#layouts-}"); fi
      for group in "${groups[@]}"; do
        case "$group" in
          "" | *[!a-z-]* | -* | *- | *--*) echo "unknown phase $phase" >&2; exit 2 ;;
        esac
        bench "public-layouts-$group" "$db" "$hdr" --sizes "@$shapes/public.txt" --layout "${group//-/,}" --regret
      done
      python3 - "$out" <<'PY'
import json, pathlib, sys
out = pathlib.Path(sys.argv[1])
parts = sorted(p for p in out.glob("public-layouts-*.json") if p.stat().st_size)
covered = [set(p.stem[len("public-layouts-"):].split("-")) for p in parts]
if set().union(*covered) >= {"nn", "nt", "tn", "tt"}:
    docs = [json.loads(p.read_text()) for p in parts]
    joined = docs[0]
    joined["rows"] = [r for d in docs for r in d["rows"] if not str(r.get("problem", "")).startswith("geomean")]
    if all(d.get("regret") for d in docs):
        joined["regret"]["rows"] = [r for d in docs for r in d["regret"]["rows"]]
    (out / "public-layouts.json").write_text(json.dumps(joined))
    print("public-layouts.json: joined from", ", ".join(p.name for p in parts))
PY
      ;;
    batched)
      header "$db" "$hdr"
      bench public-batched "$db" "$hdr" --sizes "@$shapes/public-batched.txt" --regret
      ;;
    squares)
      header "$db" "$hdr"
      bench squares "$db" "$hdr" --sizes 256..4096
      ;;
    tuned-all)
      dball="${db%.db}-all.db"
      flags="${CMTUNE_TUNE_FLAGS:-}"
      log "tune --sizes @public.txt --layout all $flags, on a copy of the README database"
      rm -f "$dball"* /tmp/cm-tune-bench-all.cuh
      python3 -c 'import sqlite3,sys; s=sqlite3.connect(sys.argv[1]); d=sqlite3.connect(sys.argv[2]); s.backup(d)' "$db" "$dball"
      SECONDS=0
      # shellcheck disable=SC2086  # the flags are words
      "$bin" --db "$dball" --log-file "$out/tuned-all-tune.log" tune --device 0 --sizes "@$shapes/public.txt" \
        --layout all $flags --json > "$out/tuned-all-tune.json" 2> "$out/tuned-all-tune.err"
      rc=$?
      echo "{\"cold_seconds\": $SECONDS, \"rc\": $rc, \"flags\": \"$flags\"}" > "$out/tuned-all-time.json"
      cat "$out/tuned-all-time.json"
      header "$dball" /tmp/cm-tune-bench-all.cuh
      bench public-tuned-all "$dball" /tmp/cm-tune-bench-all.cuh --sizes "@$shapes/public.txt" --layout all
      ;;
    f64)
      rm -f "$db64"* /tmp/cm-tune-bench-f64.cuh
      if [ -n "${CMTUNE_F64_DB:-}" ]; then
        log "f64: the database of an earlier tune, $CMTUNE_F64_DB (tuned at ${CMTUNE_F64_COMMIT:-unknown})"
        case "$CMTUNE_F64_DB" in
          *.gz) gunzip -c "$CMTUNE_F64_DB" > "$db64" ;;
          *) cp "$CMTUNE_F64_DB" "$db64" ;;
        esac
        "$bin" --db "$db64" db migrate
        echo "{\"reused\": \"${CMTUNE_F64_COMMIT:-unknown}\"}" > "$out/f64-time.json"
      else
        log "tune --sizes 256..4096 --dtype f64, cold"
        SECONDS=0
        "$bin" --db "$db64" --log-file "$out/f64-tune.log" tune --device 0 --sizes 256..4096 --dtype f64 --json \
          > "$out/f64-tune.json" 2> "$out/f64-tune.err"
        rc=$?
        echo "{\"cold_seconds\": $SECONDS, \"rc\": $rc}" > "$out/f64-time.json"
      fi
      header "$db64" /tmp/cm-tune-bench-f64.cuh
      save_without_cubins "$db64" "$out/f64-nocubins.db"
      bench public-f64 "$db64" /tmp/cm-tune-bench-f64.cuh --sizes "@$shapes/public.txt" --dtype f64 --layout nn,nt \
        --regret
      ;;
    tf32x3)
      log "tune --dtype tf32x3 --config tf32x3, on a copy of the README database"
      rm -f "$db3"* "$hdr3"
      python3 -c 'import sqlite3,sys; s=sqlite3.connect(sys.argv[1]); d=sqlite3.connect(sys.argv[2]); s.backup(d)' "$db" "$db3"
      SECONDS=0
      # The README's sizes with calibration (for the dispatch's model), then 8192^3 alone: calibration
      # scales its shapes to the largest size, and 8192's would not fit in the GPU's memory.
      "$bin" --db "$db3" --log-file "$out/tf32x3-tune.log" tune --device 0 --dtype tf32x3 --config tf32x3 \
        --sizes 256..4096 --layout nn,nt --json > "$out/tf32x3-tune.json" 2> "$out/tf32x3-tune.err" &&
        "$bin" --db "$db3" --log-file "$out/tf32x3-tune.log" tune --device 0 --dtype tf32x3 --config tf32x3 \
          --sizes 8192 --layout nn,nt --no-calibrate --json > "$out/tf32x3-tune-8192.json" 2>> "$out/tf32x3-tune.err"
      rc=$?
      echo "{\"cold_seconds\": $SECONDS, \"rc\": $rc}" > "$out/tf32x3-time.json"
      cat "$out/tf32x3-time.json"
      header "$db3" "$hdr3"
      save_without_cubins "$db3" "$out/tf32x3-nocubins.db"
      for data in uniform normal; do
        log "precision 4096, 8192 nn, nt, $data"
        "$bin" --db "$db3" precision --device 0 --sizes 4096,8192 --layout nn,nt --data "$data" --winners --json \
          > "$out/precision-$data.json" 2> "$out/precision-$data.err"
        echo "precision $data rc=$?"
      done
      ;;
    tf32x3-shapes)
      header "$db3" "$hdr3"
      bench public-tf32x3 "$db3" "$hdr3" --sizes "@$shapes/public.txt" --layout nn,nt --dtype f32,tf32x3
      if [ ! -s "$out/public-tf32x3.json" ]; then
        # A failure: the problem it was timing and the one before, again with every launch synchronous,
        # so the error names the launch that faulted.
        pair=$(grep -o '\] [^ ]*: timing' "$out/public-tf32x3.log" | tail -2 | sed 's/^\] //; s/: timing$//' | paste -sd,)
        log "public-tf32x3 failed at $pair: again with CUDA_LAUNCH_BLOCKING=1"
        CUDA_LAUNCH_BLOCKING=1 timeout 150 "$bin" --db "$db3" --verbose bench --device 0 --header "$hdr3" --rounds 5 \
          --sizes "$pair" > "$out/public-tf32x3-blocking.txt" 2>&1
        tail -30 "$out/public-tf32x3-blocking.txt"
      fi
      log "ragged and misaligned calls (scripts/gpu/ragged_bench.cu)"
      nvcc -std=c++17 -O2 -arch="${CMTUNE_HEADER_ARCH:-sm_90a}" -DCMTUNE_HEADER="\"$hdr3\"" \
        "$root/scripts/gpu/ragged_bench.cu" -lcublas -o /tmp/ragged_bench > "$out/ragged-build.txt" 2>&1 &&
        /tmp/ragged_bench "$rounds" > "$out/ragged-tf32x3.jsonl" 2> "$out/ragged-tf32x3.err"
      echo "ragged rc=$?"
      cat "$out/ragged-tf32x3.jsonl"
      ;;
    tf32x3-accuracy)
      header "$db3" "$hdr3"   # exported before these problems join the database
      sweep=512x512x16,512x512x64,512x512x256,512x512x1024,512x512x4096,512x512x16384,512x512x65536
      log "tune --dtype tf32x3 $sweep (no calibration)"
      "$bin" --db "$db3" --log-file "$out/accuracy-tune.log" tune --device 0 --dtype tf32x3 --config tf32x3 \
        --sizes "$sweep" --no-calibrate > "$out/accuracy-tune.txt" 2>&1
      echo "tune rc=$?"
      for data in uniform normal; do
        log "precision $sweep, $data"
        "$bin" --db "$db3" precision --device 0 --sizes "$sweep" --data "$data" --winners --energy-seconds 1 --json \
          > "$out/accuracy-$data.json" 2> "$out/accuracy-$data.err"
        echo "precision $data rc=$?"
      done
      ;;
    triton)
      log "Triton tf32x3 against cuBLAS SGEMM"
      python3 "$root/scripts/gpu/triton_tf32x3.py" 4096,8192 nn,nt > "$out/triton-tf32x3.json" 2> "$out/triton-tf32x3.err"
      echo "triton rc=$?"
      cat "$out/triton-tf32x3.json"
      ;;
    scale-1 | scale-all)
      # The README's main command, cold, on one GPU and on every GPU: the wall time of each and whether
      # the winners agree. Both tunes run on the cores of CMTUNE_SCALE_CPUS (all of them if unset).
      which=${phase#scale-}
      devices=$([ "$which" = 1 ] && echo 0 || echo all)
      dbs="/tmp/cm-tune-scale-$which.db"
      rm -f "$dbs"*
      pin=()
      [ -z "${CMTUNE_SCALE_CPUS:-}" ] || pin=(taskset -c "$CMTUNE_SCALE_CPUS")
      log "README command on --device $devices, cold${CMTUNE_SCALE_CPUS:+, on cores $CMTUNE_SCALE_CPUS}"
      SECONDS=0
      "${pin[@]}" "$bin" --db "$dbs" --log-file "$out/scale-$which.log" tune --device "$devices" --sizes 256..4096 \
        --json > "$out/scale-$which.json" 2> "$out/scale-$which.err"
      rc=$?
      echo "{\"seconds\": $SECONDS, \"rc\": $rc, \"devices\": \"$devices\", \"gpus\": $(nvidia-smi -L | wc -l), \"cpus\": \"${CMTUNE_SCALE_CPUS:-all}\"}" \
        > "$out/scale-$which-time.json"
      cat "$out/scale-$which-time.json"
      tail -3 "$out/scale-$which.err"
      "$bin" --db "$dbs" db export --what winners --format json --out "$out/scale-$which-winners.jsonl"
      save_without_cubins "$dbs" "$out/scale-$which-nocubins.db"
      [ -s "$out/scale-1-winners.jsonl" ] && [ -s "$out/scale-all-winners.jsonl" ] &&
        python3 "$root/scripts/gpu/scale_compare.py" "$out" > "$out/scale.json" && cat "$out/scale.json"
      ;;
    tables)
      python3 "$root/scripts/gpu/bench_tables.py" "$out" | tee "$out/tables.md"
      ;;
    *)
      echo "unknown phase $phase" >&2
      exit 2
      ;;
  esac
done
