#!/usr/bin/env bash
# Sets up (Debian packages), builds and runs every test; ends with ctest's summary line.
# Usage: scripts/test.sh [build-dir]        (default: build)
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
scripts/setup.sh
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release -DPG_REQUIRE_TOKENIZER_PEERS=ON
cmake --build "$build" -j"$(nproc)"

# --- libFuzzer smoke (owner: io) ----------------------------------------------------------------
# A second, small clang-14 build with ASan+UBSan of only the libFuzzer targets, one per file
# loader (native checkpoint, llm.c, safetensors + config.json; tests/cmake/fuzz.cmake), and their
# smoke runs: 20,000 inputs each, grown from the seed corpus in tests/fuzz/corpus. About 1-2
# minutes on 2 cores. A crash, leak or sanitizer report fails the script here.
cmake -S . -B "$build-fuzz" -DCMAKE_BUILD_TYPE=Release -DCMAKE_C_COMPILER=clang-14 \
  -DCMAKE_CXX_COMPILER=clang++-14 -DPG_FUZZ=ON -DPG_SANITIZE=ON -DPG_BUILD_PYTHON=OFF \
  -DPG_BUILD_BENCHMARKS=OFF -DPG_BUILD_EXAMPLES=OFF
cmake --build "$build-fuzz" -j"$(nproc)" --target pg_fuzz_all
(cd "$build-fuzz" && ctest --output-on-failure -L fuzz --timeout 300)
# --- end of the libFuzzer smoke -----------------------------------------------------------------

# aarch64 (owner: kernels): cross-build, then [kernels] under qemu-aarch64 (cortex-a53, max); prints its own summary line.
scripts/cross_test_aarch64.sh "$build-aarch64"

# The main suite last, so its summary ("100% tests passed, 0 tests failed out of N") closes the output.
cd "$build"
ctest --output-on-failure -j"$(nproc)" --timeout 900
