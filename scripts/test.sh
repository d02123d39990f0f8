#!/usr/bin/env bash
# Sets up (Debian packages), builds and runs every test; ends with ctest's summary line.
# Usage: scripts/test.sh [--slow] [build-dir]        (default: build)
# Tests labelled `slow` (real-size shapes, the llvm-mca model check) are left out of the default
# run, which must fit CI's 20 minutes on 2 cores; --slow runs them too.
set -euo pipefail
cd "$(dirname "$0")/.."
slow=0
if [ "${1:-}" = "--slow" ]; then slow=1; shift; fi
build=${1:-build}
# Each stage's wall time, so the suite's 20-minute budget shows where it goes.
stage_start=$SECONDS
stage_done() {
  echo "test.sh: $1 took $((SECONDS - stage_start)) s (${SECONDS} s so far)"
  stage_start=$SECONDS
}
scripts/setup.sh
stage_done "setup"
# PG_REQUIRE_ALL_TESTS: a missing test dependency (python3, the data, qemu, ...) is a configure
# error here and a test that would skip fails (tests/CMakeLists.txt); a partial build skips.
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release -DPG_REQUIRE_ALL_TESTS=ON -DPG_REQUIRE_TOKENIZER_PEERS=ON
cmake --build "$build" -j"$(nproc)"
stage_done "the main build"

# ctest's count may never drop silently: each suite must list at least the floor committed in
# tests/test_count_floor.txt (raise it when you add tests; lowering it is a visible change).
check_test_count() {  # <build dir> <suite name in the floor file> [ctest selection...]
  local dir=$1 suite=$2; shift 2
  local count floor
  count=$(cd "$dir" && ctest -N "$@" | sed -n 's/^Total Tests: //p')
  floor=$(awk -v s="$suite" '$1 == s { print $2 }' tests/test_count_floor.txt)
  if [ -z "$floor" ] || [ -z "$count" ] || [ "$count" -lt "$floor" ]; then
    echo "test.sh: the $suite suite lists ${count:-no} tests, below the floor of ${floor:-?} in tests/test_count_floor.txt"
    exit 1
  fi
}

# --- libFuzzer smoke (owner: io) ----------------------------------------------------------------
# A second, small clang-14 build with ASan+UBSan of only the libFuzzer targets, one per file
# loader (native checkpoint, llm.c, safetensors + config.json; tests/cmake/fuzz.cmake), and their
# smoke runs: 20,000 inputs each, grown from the seed corpus in tests/fuzz/corpus, each checking
# a property of every input that loads; plus the checkpoint corruption matrix and the
# every-truncation / every-byte-flip sweep under the same sanitizers. A crash, leak, broken
# property or sanitizer report fails the script here.
cmake -S . -B "$build-fuzz" -DCMAKE_BUILD_TYPE=Release -DCMAKE_C_COMPILER=clang-14 \
  -DCMAKE_CXX_COMPILER=clang++-14 -DPG_FUZZ=ON -DPG_SANITIZE=ON -DPG_BUILD_PYTHON=OFF \
  -DPG_BUILD_BENCHMARKS=OFF -DPG_BUILD_EXAMPLES=OFF -DPG_REQUIRE_ALL_TESTS=ON
cmake --build "$build-fuzz" -j"$(nproc)" --target pg_fuzz_all
check_test_count "$build-fuzz" fuzz -L fuzz
(cd "$build-fuzz" && ctest --output-on-failure -j"$(nproc)" -L fuzz --timeout 1800)
stage_done "the fuzz build and its tests"
# --- end of the libFuzzer smoke -----------------------------------------------------------------

# --- ThreadSanitizer (owner: arch) ------------------------------------------------------------------
# A third small clang-14 build, -fsanitize=thread, of only the library and the concurrency test
# (tests/cmake/tsan.cmake): 8 threads evaluate, forward, sample and tokenize with one model and one
# tokenizer and must get the serial results; a data race is a report and fails the script here.
cmake -S . -B "$build-tsan" -DCMAKE_BUILD_TYPE=Release -DCMAKE_C_COMPILER=clang-14 \
  -DCMAKE_CXX_COMPILER=clang++-14 -DPG_TSAN=ON -DPG_BUILD_PYTHON=OFF -DPG_BUILD_KOTLIN=OFF \
  -DPG_BUILD_BENCHMARKS=OFF -DPG_BUILD_EXAMPLES=OFF -DPG_REQUIRE_ALL_TESTS=ON -DPG_REQUIRE_TOKENIZER_PEERS=ON
cmake --build "$build-tsan" -j"$(nproc)" --target pg_tsan_all
(cd "$build-tsan" && ctest --output-on-failure -L tsan --no-tests=error --timeout 600)
stage_done "the ThreadSanitizer build and its test"
# --- end of ThreadSanitizer -------------------------------------------------------------------------

# aarch64 (owner: kernels): cross-build, then [kernels] under qemu-aarch64 (cortex-a53, max); prints its own summary line.
scripts/cross_test_aarch64.sh "$build-aarch64"
stage_done "the aarch64 build and its qemu tests"

# The main suite last, so its summary ("100% tests passed, 0 tests failed out of N") closes the output.
# Tests labelled slow (real model sizes, tests/cmake/slow.cmake) run on request: ctest -L slow.
check_test_count "$build" main -LE slow
cd "$build"
if [ "$slow" = 1 ]; then
  ctest --output-on-failure -j"$(nproc)" --timeout 3600 --no-tests=error
else
  echo "test.sh: leaving out the $(ctest -N -L slow | sed -n 's/^Total Tests: //p') tests labelled slow (scripts/test.sh --slow runs them)"
  ctest --output-on-failure -j"$(nproc)" --timeout 900 --no-tests=error -LE slow
fi
