#!/usr/bin/env bash
# One batch of GPU work on the GPU machine, run with a build/ made elsewhere and carried there
# (scripts/gpu/stage_for_device.sh stages it). Writes logs and results under $OUT (default: ./gpu-out).
# Usage: scripts/gpu/gpu_session.sh [phase...]   (default: tests tune bench)
# Phases, in the order given:
#   tests       ctest -L gpu (the GPU tests)
#   compile     cm-tune compile of the default preset for sm_90, cold then warm (compile throughput)
#   tune        cold tune of $CMTUNE_SIZES into $CMTUNE_SESSION_DB (deleted first unless CMTUNE_KEEP_DB is
#               set), then the same command again (warm)
#   bench       export the header, then cm-tune bench of winner, header and cuBLAS on $CMTUNE_BENCH_SIZES
#   shapes      export the header, then cm-tune bench --header on the shapes file $CMTUNE_SHAPES (default
#               ../shared/shapes/public.txt): every shape, tuned or not, through the header's dispatch
#   concurrent  two `tune --config quick` runs of different sizes (256 and 384), with calibration, into one
#               new database at once, three times; each must exit 0 and `db check` pass
#   machine-code
#               export the header, time g++ -O2 on a file that includes it, and scripts/diag/first_call.cpp:
#               the first call's extra latency (loading its library) at each of $CMTUNE_FIRST_CALL_SIZES
#   consumer    export the header, build tests/consumer (the exported-header correctness harness) against it, run it
#   example     export the header, build examples/consumer against it, run it
#   rawmetrics  summarize ncu reports carried in .devstage-x/ (no new profiling)
#   profile     ncu of the winner and cuBLAS at each of $CMTUNE_PROFILE_SIZES (default 4096)
#   profile-tf32x3
#               ncu of one tf32x3_mma build ($CMTUNE_TF32X3_POINT, default the 128x128 tile of 64x32 warp
#               tiles, staged) at each of $CMTUNE_PROFILE_SIZES as tf32x3, in the measuring process
#               that tune starts (the header has no tf32x3 routine for bench to run)
# docs/BENCHMARKS.md's tables come from scripts/gpu/benchmarks.sh, not from these phases. Other settings: CMTUNE_CONFIG (preset, default "default"), CMTUNE_TUNE_ARGS,
# CMTUNE_ROUNDS (bench rounds, default 200), CMTUNE_SESSION_DB (default /tmp/cm-tune-session.db).
# At the end: trials.json (scripts/diag/dump_trials.py) and the database without its cubins
# (session-nocubins.db.gz); everything but the database is packed into $OUT/results.tgz.
set -uo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
out="${OUT:-$root/gpu-out}"
mkdir -p "$out"
bin="$root/build/cm-tune"
db="${CMTUNE_SESSION_DB:-/tmp/cm-tune-session.db}"
benchmark_sizes="256..4096,1000,1023,1025,2049,1024x1025x1025,1025x1024x1025"
sizes="${CMTUNE_SIZES:-$benchmark_sizes}"
bench_sizes="${CMTUNE_BENCH_SIZES:-$benchmark_sizes}"
shapes_file="${CMTUNE_SHAPES:-$root/../shared/shapes/public.txt}"
phases=("$@")
[ ${#phases[@]} -gt 0 ] || phases=(tests tune bench)
export PATH=/usr/local/cuda/bin:$PATH

log() { echo "=== $(date +%H:%M:%S) $*"; }
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,temperature.gpu --format=csv > "$out/gpu.csv" 2>&1
"$bin" --version | tee "$out/version.txt"
"$bin" devices | tee "$out/devices.txt"

for phase in "${phases[@]}"; do
  case "$phase" in
    tests)
      log "GPU tests"
      (cd "$root/build" && ctest -L gpu --output-on-failure --timeout 600) > "$out/gpu-tests.log" 2>&1
      echo "ctest rc=$?" | tee -a "$out/gpu-tests.log"
      if grep -q "Unknown CMake command" "$out/gpu-tests.log"; then
        # ctest here cannot read the build machine's CMake modules (another CMake version): run the binary.
        "$root/build/tests/cmt_gpu_tests" >> "$out/gpu-tests.log" 2>&1
        echo "cmt_gpu_tests rc=$?" | tee -a "$out/gpu-tests.log"
      fi
      grep -E "tests passed|PASSED|FAILED|Failure|Expected|Which is|on [0-9]+x" "$out/gpu-tests.log" | head -60
      ;;
    compile)
      log "compile throughput, default preset, cold then warm"
      rm -f /tmp/cm-tune-compile.db*
      "$bin" --db /tmp/cm-tune-compile.db compile --config default --arch sm_90 2>&1 | tail -3 | tee "$out/compile.txt"
      "$bin" --db /tmp/cm-tune-compile.db compile --config default --arch sm_90 2>&1 | tail -3 | tee -a "$out/compile.txt"
      ;;
    tune)
      log "tune $sizes, cold"
      [ -n "${CMTUNE_KEEP_DB:-}" ] || rm -f "$db"*
      SECONDS=0; "$bin" --db "$db" --log-file "$out/tune.log" tune --device 0 --sizes "$sizes" \
        --config "${CMTUNE_CONFIG:-default}" ${CMTUNE_TUNE_ARGS:-} --json > "$out/tune-cold.json" 2> "$out/tune-cold.err"; echo "cold wall ${SECONDS}s" | tee "$out/tune-times.txt"
      echo "rc=$?"; tail -3 "$out/tune-cold.err"
      if [[ "${CMTUNE_TUNE_ARGS:-}" == *--time-limit* || "${CMTUNE_TUNE_ARGS:-}" == *--budget* ]]; then
        log "no warm rerun: a cut-off search would go on sampling"; continue
      fi
      log "tune $sizes, warm"
      SECONDS=0; "$bin" --db "$db" tune --device 0 --sizes "$sizes" --config "${CMTUNE_CONFIG:-default}" ${CMTUNE_TUNE_ARGS:-} \
        > "$out/tune-warm.txt" 2>&1; echo "warm wall ${SECONDS}s" | tee -a "$out/tune-times.txt"
      cat "$out/tune-warm.txt"
      ;;
    bench)
      log "bench $bench_sizes"
      header_args=()
      if "$bin" --help | grep -q export; then
        "$bin" --db "$db" export --out "$out/tuned_sgemm.cuh" && header_args=(--header "$out/tuned_sgemm.cuh")
      fi
      "$bin" --db "$db" bench --device 0 --sizes "$bench_sizes" "${header_args[@]}" --rounds "${CMTUNE_ROUNDS:-200}" \
        2>&1 | tee "$out/bench.txt"
      "$bin" --db "$db" --quiet bench --device 0 --sizes "$bench_sizes" "${header_args[@]}" --json --rounds 100 \
        > "$out/bench.json" 2>&1
      ;;
    shapes)
      log "bench on the shapes of $shapes_file"
      "$bin" --db "$db" export --out "$out/tuned_sgemm.cuh"
      "$bin" --db "$db" bench --device 0 --sizes "@$shapes_file" --header "$out/tuned_sgemm.cuh" \
        --rounds "${CMTUNE_ROUNDS:-100}" 2>&1 | tee "$out/shapes-bench.txt"
      ;;
    concurrent)
      log "two calibrating tunes into one new database at once, three times"
      for round in 1 2 3; do
        cdb="/tmp/cm-tune-concurrent-$round.db"
        rm -f "$cdb"*
        "$bin" --db "$cdb" tune --config quick --sizes 256 > "$out/concurrent-$round-a.txt" 2>&1 &
        a=$!
        "$bin" --db "$cdb" tune --config quick --sizes 384 > "$out/concurrent-$round-b.txt" 2>&1 &
        b=$!
        wait $a; ra=$?
        wait $b; rb=$?
        "$bin" --db "$cdb" db check > "$out/concurrent-$round-check.txt" 2>&1; rc=$?
        echo "round $round: tune 256 rc=$ra, tune 384 rc=$rb, db check rc=$rc" | tee -a "$out/concurrent.txt"
        tail -n 2 "$out/concurrent-$round-a.txt" "$out/concurrent-$round-b.txt" | grep -i error | tee -a "$out/concurrent.txt"
      done
      ;;
    machine-code)
      log "header of machine code: size, g++ time, first call"
      "$bin" --db "$db" export --out "$out/tuned_sgemm.cuh" | tee "$out/machine-code.txt"
      ls -l "$out/tuned_sgemm.cuh" | tee -a "$out/machine-code.txt"
      ( cd "$out" && SECONDS=0 && /usr/bin/time -f "g++ -O2 -c: %e s, %M KB" g++ -std=c++17 -O2 \
          -DCMTUNE_HEADER_PATH='"tuned_sgemm.cuh"' -I. -I/usr/local/cuda/include -c "$root/scripts/diag/first_call.cpp" \
          -o /tmp/first_call.o ) 2>&1 | tee -a "$out/machine-code.txt"
      g++ /tmp/first_call.o -L/usr/local/cuda/lib64 -lcudart -o /tmp/first_call
      for n in ${CMTUNE_FIRST_CALL_SIZES:-256 1024 2048 4096}; do /tmp/first_call "$n"; done | tee -a "$out/machine-code.txt"
      ;;
    consumer)
      log "exported-header correctness harness (tests/consumer)"
      "$bin" --db "$db" export --out "$out/tuned_sgemm.cuh"
      cmake -S "$root/tests/consumer" -B /tmp/cmtune-consumer-test -DCMTUNE_HEADER="$out/tuned_sgemm.cuh" > /dev/null &&
        cmake --build /tmp/cmtune-consumer-test -j 16 > "$out/consumer-build.log" 2>&1 &&
        /tmp/cmtune-consumer-test/cmtune_consumer_test --json "$out/consumer.json" 2>&1 | tee "$out/consumer.txt"
      echo "cmtune_consumer_test rc=${PIPESTATUS[0]}" | tee -a "$out/consumer.txt"
      ;;
    example)
      log "user example (examples/consumer)"
      "$bin" --db "$db" export --out "$out/tuned_sgemm.cuh"
      cmake -S "$root/examples/consumer" -B /tmp/cmtune-example -DCMTUNE_HEADER="$out/tuned_sgemm.cuh" > /dev/null &&
        cmake --build /tmp/cmtune-example -j 16 > "$out/example-build.log" 2>&1 &&
        /tmp/cmtune-example/cmtune_example 2>&1 | tee "$out/example.txt"
      echo "cmtune_example rc=${PIPESTATUS[0]}" | tee -a "$out/example.txt"
      ;;
    rawmetrics)
      # Bank conflicts and stall reasons from a report carried in .devstage-x (no new profiling).
      for rep in "$root"/.devstage-x/*.ncu-rep; do
        [ -f "$rep" ] || continue
        ncu --import "$rep" --page raw --csv 2>/dev/null | python3 "$root/scripts/diag/ncu_summary.py" | tee "$out/raw-$(basename "$rep" .ncu-rep).txt"
      done
      ;;
    profile)
      # ncu of the database winner and cuBLAS at each of $CMTUNE_PROFILE_SIZES (default 4096).
      if [ ! -f "$db" ]; then  # a fresh machine: find a 4096 winner first
        "$bin" --db "$db" --quiet tune --device 0 --sizes 4096 --config default --template warptile > /dev/null 2>&1
      fi
      for psize in ${CMTUNE_PROFILE_SIZES:-4096}; do
        log "ncu: ${psize}^3 winner against cuBLAS"
        rep="$out/profile-$psize"
        ncu --clock-control none --set full -k regex:'cmt_sgemm|sgemm|gemm' -c 4 -o "$rep" \
          "$bin" --db "$db" --quiet bench --device 0 --sizes "$psize" --rounds 5 > "$out/ncu-$psize.log" 2>&1
        ncu --import "$rep.ncu-rep" --page details --csv > "$rep.csv" 2>/dev/null
        ncu --import "$rep.ncu-rep" --page raw --csv > "$rep-raw.csv" 2>/dev/null
        ncu --import "$rep.ncu-rep" --page raw --csv 2>/dev/null | python3 "$root/scripts/diag/ncu_summary.py" \
          | tee "$out/profile-raw-$psize.txt"
        ncu --import "$rep.ncu-rep" --page details 2>/dev/null | \
          grep -E "cmt_sgemm|sgemm|Compute \(SM\) Throughput|SM Busy|Executed Ipc|Shared.*Conflict|Bank|Warp Cycles|Stall|Achieved Occupancy|Registers|Duration" \
          | head -80 > "$out/profile-summary-$psize.txt"
      done
      ;;
    profile-tf32x3)
      point="${CMTUNE_TF32X3_POINT:-BM = [128]
BN = [128]
BK = [32]
WM = [64]
WN = [32]
STAGES = [3]
VEC = [4]
PAD = [8]
STAGED = [1]
SWIZZLE = [8]}"
      printf 'name = "tf32x3-profile"\ndescription = "one tf32x3_mma build"\n[templates.tf32x3_mma]\n%s\n' "$point" \
        > /tmp/tf32x3-profile.toml
      for psize in ${CMTUNE_PROFILE_SIZES:-4096}; do
        log "ncu: tf32x3_mma at ${psize}^3"
        rep="$out/profile-tf32x3-$psize"
        rm -f /tmp/tf32x3-profile.db*
        ncu --target-processes all --clock-control none --set full -k regex:cmt_sgemm_tf32x3 -c 2 -o "$rep" \
          "$bin" --db /tmp/tf32x3-profile.db --quiet tune --device 0 --sizes "$psize:tf32x3" \
          --config /tmp/tf32x3-profile.toml --no-calibrate > "$out/ncu-tf32x3-$psize.log" 2>&1
        ncu --import "$rep.ncu-rep" --page raw --csv 2>/dev/null | python3 "$root/scripts/diag/ncu_summary.py" \
          | tee "$out/profile-tf32x3-raw-$psize.txt"
        ncu --import "$rep.ncu-rep" --page details 2>/dev/null | \
          grep -E "cmt_sgemm|Compute \(SM\) Throughput|SM Busy|Executed Ipc|Shared.*Conflict|Bank|Warp Cycles|Stall|Achieved Occupancy|Registers|Duration|Tensor|Pipe" \
          | head -100 > "$out/profile-tf32x3-summary-$psize.txt"
      done
      ;;
    *) echo "unknown phase $phase" ;;
  esac
done
if [ -f "$db" ]; then
  python3 "$root/scripts/diag/dump_trials.py" "$db" 40 "$out/trials.json"
  # Without the compile cache's cubins the database stays small enough to bring back.
  python3 - "$db" "$out/session-nocubins.db" <<'PY'
import sqlite3, sys
src = sqlite3.connect(sys.argv[1]); dst = sqlite3.connect(sys.argv[2]); src.backup(dst)
dst.execute("update binaries set cubin = x''"); dst.commit(); dst.execute("vacuum"); dst.close()
PY
  gzip -f "$out/session-nocubins.db"
fi
# The device tool brings back at most 8 files: pack everything but the database into one archive.
(cd "$out" && tar czf /tmp/results.tgz --exclude=session-nocubins.db.gz --exclude=results.tgz . && \
  find . -maxdepth 1 -type f ! -name session-nocubins.db.gz -delete && mv /tmp/results.tgz .)
ls -la "$out"
