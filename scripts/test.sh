#!/usr/bin/env bash
# Builds cm-tune if needed and runs every test. GPU tests skip, with their reason, without a GPU.
# Then runs the CPU tests again, built with AddressSanitizer and UndefinedBehaviorSanitizer
# (scripts/test_sanitized.sh, in build-asan/: about seven minutes more on two cores), also after a
# failed first run, so that one run shows every failure; CMTUNE_SANITIZED=0 skips it. The ctest
# arguments go to both runs. Each run prints one line with its time.
# Usage: scripts/test.sh [ctest arguments]
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${CMTUNE_BUILD_DIR:-$root/build}"
start=$SECONDS
"$root/scripts/setup.sh"
cd "$build"
status=0
ctest --output-on-failure -j"$(nproc)" "$@" || status=$?
echo "test: main run $([ "$status" -eq 0 ] && echo passed || echo FAILED) in $((SECONDS - start)) s"
if [ "${CMTUNE_SANITIZED:-1}" != 0 ]; then
  "$root/scripts/test_sanitized.sh" "$@" || status=1
fi
exit "$status"
