#!/usr/bin/env bash
# Builds cm-tune if needed and runs every test. GPU tests skip, with their reason, without a GPU.
# Usage: scripts/test.sh [ctest arguments]
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${CMTUNE_BUILD_DIR:-$root/build}"
"$root/scripts/setup.sh"
cd "$build"
ctest --output-on-failure -j"$(nproc)" "$@"
