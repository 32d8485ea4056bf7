#!/usr/bin/env bash
# Builds cm-tune if needed and runs every test. GPU tests skip, with their reason, without a GPU.
# Then runs the CPU tests again, built with AddressSanitizer and UndefinedBehaviorSanitizer
# (scripts/test_sanitized.sh, in build-asan/: about six minutes more on two cores), also after a
# failed first run, so that one run shows every failure; CMTUNE_SANITIZED=0 skips it. The ctest
# arguments go to both runs. Each run prints one line with its time.
# Usage: scripts/test.sh [ctest arguments]
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
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
ctest --output-on-failure -j"$(nproc)" "$@" 2>&1 | tee "$build/ctest-main.log" || status=$?   # pipefail: ctest's
echo "test: main run $([ "$status" -eq 0 ] && echo passed || echo FAILED) in $((SECONDS - start)) s"
if [ "${CMTUNE_SANITIZED:-1}" != 0 ]; then
  "$root/scripts/test_sanitized.sh" "$@" || status=1
fi
# The ten slowest tests of the main run, for whoever keeps the suite fast.
echo "test: the slowest tests of the main run (seconds):"
# awk reads to the end, where head would exit after ten lines and sort die of SIGPIPE (exit 141,
# which pipefail made this script's).
grep -E "Test +#[0-9]+: .* sec$" "$build/ctest-main.log" | awk '{print $(NF-1), $4}' | sort -rn | awk 'NR <= 10 {print "  " $0}'
exit "$status"
