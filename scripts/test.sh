#!/usr/bin/env bash
# Builds cm-tune if needed and runs every test once. GPU tests skip, with their reason, without a
# GPU. The main run, in build/, runs every test but cm-tune's host C++ tests (label cpu_host); those
# run built with AddressSanitizer and UndefinedBehaviorSanitizer (scripts/test_sanitized.sh, in
# build-asan/), also after a failed main run, so that one run shows every failure.
# scripts/test_selection.sh says which test goes where. CMTUNE_SANITIZED=0 runs every test in the
# main run instead. With ctest arguments both runs take them, and the main run runs every test they
# select. Each run prints one line with its time.
# Usage: scripts/test.sh [ctest arguments]
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
# shellcheck source=scripts/test_selection.sh
source "$root/scripts/test_selection.sh"
build="${CMTUNE_BUILD_DIR:-$root/build}"
start=$SECONDS
"$root/scripts/setup.sh"
# The report's browser test (tests/report/check_report.py, ctest ReportBrowser.*) opens the page in
# headless Chromium: Debian's chromium, and a font for its text. Installed where missing, as setup.sh
# installs the build's packages; a machine where that fails stops here, saying so.
missing=()
for p in chromium fonts-liberation; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "test: installing ${missing[*]} (the report's browser test)"
  sudo=""; [ "$(id -u)" -eq 0 ] || sudo="sudo"
  { $sudo apt-get update -qq && DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends \
      "${missing[@]}" >/dev/null; } ||
    { echo "test: error: apt-get could not install ${missing[*]}, which the report's browser test needs" >&2; exit 1; }
fi
cd "$build"
# The compile caches the tests share (NVRTC builds in a cm-tune database, nvcc outputs by content;
# test_support.hpp): both runs use the main build's, so each kernel is compiled once per run.
export CMTUNE_TEST_CACHE_DIR="${CMTUNE_TEST_CACHE_DIR:-$build/test-cache}"
status=0
log="$build/ctest-main.log"
if [ "${CMTUNE_SANITIZED:-1}" = 0 ] || [ $# -gt 0 ]; then
  ctest --output-on-failure -j"$(nproc)" "$@" 2>&1 | tee "$log" || status=$?   # pipefail: ctest's
else
  # The tests not labelled cpu_host, then the cpu_host tests the sanitized run leaves out.
  ctest --output-on-failure -j"$(nproc)" -LE cpu_host 2>&1 | tee "$log" || status=$?
  ctest --output-on-failure -j"$(nproc)" -L cpu_host -R "$host_unsanitized" 2>&1 | tee -a "$log" || status=$?
fi
echo "test: main run $([ "$status" -eq 0 ] && echo passed || echo FAILED) in $((SECONDS - start)) s"
if [ "${CMTUNE_SANITIZED:-1}" != 0 ]; then
  "$root/scripts/test_sanitized.sh" "$@" || status=1
fi
# The ten slowest tests of the main run, for whoever keeps the suite fast.
echo "test: the slowest tests of the main run (seconds):"
# awk reads to the end, where head would exit after ten lines and sort die of SIGPIPE (exit 141,
# which pipefail made this script's).
grep -E "Test +#[0-9]+: .* sec$" "$log" | awk '{print $(NF-1), $4}' | sort -rn | awk 'NR <= 10 {print "  " $0}'
exit "$status"
