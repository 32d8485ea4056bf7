#!/usr/bin/env bash
# Copies what the GPU machine needs from build/ (binaries and CTest files, no objects) into
# .devstage/build, to carry with the device tool; there, `mv .devstage/build build` restores paths
# before scripts/gpu/gpu_session.sh runs.
# Usage: scripts/gpu/stage_for_device.sh
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
rm -rf "$root/.devstage"
cd "$root/build"
# cmt_gpu_tests' cases are discovered when ctest runs (PRE_TEST), through this machine's CMake modules,
# which the GPU machine's CMake lacks: discover them here, so that the list carried is newer than the
# binary and ctest there reads it as it is.
ctest -N -L gpu > /dev/null
find . -type f ! -name '*.o' ! -name '*.a' ! -name '*.d' ! -path '*/CMakeFiles/*' ! -path './test-cache/*' | while read -r f; do
  mkdir -p "$root/.devstage/build/$(dirname "$f")"
  cp -p "$f" "$root/.devstage/build/$f"
done
du -sh "$root/.devstage"
