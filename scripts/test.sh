#!/usr/bin/env bash
# Sets up (Debian packages), builds and runs every test; ends with ctest's summary line.
# Usage: scripts/test.sh [build-dir]        (default: build)
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
scripts/setup.sh
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release
cmake --build "$build" -j"$(nproc)"
cd "$build"
ctest --output-on-failure -j"$(nproc)" --timeout 900
