#!/usr/bin/env bash
# Builds the CPU tests with AddressSanitizer and UndefinedBehaviorSanitizer (CMTUNE_SANITIZE) in
# build-asan/ and runs them: a memory error, a leak or undefined behaviour in cm-tune's own C++, in
# a test binary or in a cm-tune process a test starts, fails the run. scripts/test.sh calls it after
# the main run; prints one line with its timing.
# Usage: scripts/test_sanitized.sh [ctest arguments]
#
# What runs: the tests labelled cpu_host, those of cmt_model_tests (the fuzz tests included) and
# cmt_cli_tests (which runs the sanitized cm-tune: its compile service's threads, NVRTC, the tune
# driver with the scripted measuring processes, every command), but the few that
# scripts/test_selection.sh leaves to the main run. Not built: the GPU tests (no GPU in CI), and
# cmt_cuda_tests, whose time goes to NVRTC and nvcc, which are not instrumented, and whose driver
# and compile service the sanitized cm-tune runs in the CLI tests.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
# shellcheck source=scripts/test_selection.sh
source "$root/scripts/test_selection.sh"
build="${CMTUNE_ASAN_BUILD_DIR:-$root/build-asan}"
start=$SECONDS

cuda_root="${CUDA_HOME:-/usr/local/cuda}"
export PATH="$cuda_root/bin:$PATH"
# A unity build, as scripts/setup.sh's. -Og: compiles as fast as -O0 (the build is most of this script's time) and runs faster; -g1:
# line tables for the reports' stack traces, without the cost of full debug information; NDEBUG as
# in the product's build: toml++ asserts on input that it refuses with a parse error when NDEBUG is
# set, and cm-tune's own code uses no assert().
cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-Og -g1 -DNDEBUG" \
      -DCMTUNE_SANITIZE=ON -DCMAKE_UNITY_BUILD="${CMTUNE_UNITY_BUILD:-ON}" \
      -DCMAKE_CUDA_COMPILER="$cuda_root/bin/nvcc" >/dev/null
cmake --build "$build" -j"$(nproc)" --target cm-tune cmt_model_tests cmt_cli_tests
built=$((SECONDS - start))

# Every report goes to a file as well as failing its process: a cm-tune that a test expects to fail
# (exit code 2) would otherwise hide a report behind the expected failure. The files are read below.
logs="$build/sanitizer-logs"
rm -rf "$logs"
mkdir -p "$logs"
#   detect_leaks            LeakSanitizer works in this container (ptrace is allowed); leaks fail too
#   check_initialization_order, strict_init_order  static initializers reading other files' globals
#   halt_on_error, -fno-sanitize-recover  the first report ends the process, with a non-zero exit
#   handle_segv=0           the scripted measuring worker crashes on purpose (raise(SIGSEGV)) and the
#                           tests expect it to die by the signal; a real fault still fails its test
#                           (the process dies by the signal), only without ASan's stack trace
#   protect_shadow_gap=0    the CUDA driver reserves addresses inside ASan's shadow gap, and CUDA
#                           calls fail (out of memory) where the gap is protected (google/sanitizers
#                           issue 629); no effect without a driver, as in CI, but the script stays
#                           usable on a GPU machine
# Not detect_stack_use_after_return: it made the fuzz tests and the space enumeration 30 times slower.
export ASAN_OPTIONS="detect_leaks=1:check_initialization_order=1:strict_init_order=1:halt_on_error=1:handle_segv=0:protect_shadow_gap=0:log_path=$logs/asan"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1:log_path=$logs/ubsan"

cd "$build"
status=0
ctest --output-on-failure -j"$(nproc)" -L cpu_host -E "$host_unsanitized" "$@" || status=$?

# A log holding nothing but LeakSanitizer's "Unable to get registers from thread N." is not a
# finding: the exit-time leak check could not stop a thread because it vanished under the tracer
# (ESRCH), which happens when a process is killed during that check, as the interruption tests and
# tune's worker shutdown do on purpose. LeakSanitizer skips such a thread and goes on; a leak it
# finds is still reported, in the same file, and fails the run. Such logs are listed, not failed.
benign='^==[0-9]+==Unable to get registers from thread [0-9]+[.]$'
reports=""
for f in $(find "$logs" -type f | sort); do
  if grep -qvE "$benign" "$f"; then
    reports="$reports $f"
  else
    echo "test_sanitized: ignored $f (LeakSanitizer lost a thread of a process killed during its leak check)"
  fi
done
if [ -n "$reports" ]; then
  for f in $reports; do
    echo "==== $f"
    cat "$f"
  done
  echo "test_sanitized: sanitizer reports above ($(echo $reports | wc -w) files in $logs)" >&2
  status=1
fi
verdict=$([ "$status" -eq 0 ] && echo "passed" || echo "FAILED")
echo "test_sanitized: $verdict in $((SECONDS - start)) s (build $built s, tests $((SECONDS - start - built)) s)"
exit "$status"
