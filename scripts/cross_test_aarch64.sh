#!/usr/bin/env bash
# Cross-builds the whole library for aarch64 (the phone target) and runs, under qemu-aarch64,
# the kernel tests on a bare ARMv8.0 core (cortex-a53) and on one with every extension (max),
# then the compute-path unit tests that sit on the kernels ([model], [train], [core],
# [tokenizer], the filter the build writes from PG_CROSS_TEST_TAGS in tests/CMakeLists.txt,
# which also compiles only the test files with these tags) once on max. Also builds
# bench_kernels, bench_peak and bench_quant_gemm for aarch64.
# Prints one summary line; exits non-zero on any failure. About 1-2 minutes on 2 idle cores.
# Usage: scripts/cross_test_aarch64.sh [build-dir]        (default: build-aarch64)
set -euo pipefail
cd "$(dirname "$0")/.."
build=$(realpath -m "${1:-build-aarch64}")
mkdir -p "$build"
jobs=$(nproc)
fail() { echo "cross_test_aarch64: FAILED ($1)"; exit 1; }

cmake -S . -B "$build" -DCMAKE_TOOLCHAIN_FILE=cmake/aarch64-linux-gnu.cmake \
  -DCMAKE_BUILD_TYPE=Release -DPG_BUILD_PYTHON=OFF -DPG_BUILD_EXAMPLES=OFF > "$build/configure.log" 2>&1 ||
  { cat "$build/configure.log"; fail "configure"; }
cmake --build "$build" -j"$jobs" --target phonegpt phonegpt_static phonegpt_unit_tests bench_kernels \
  bench_peak bench_quant_gemm phonegpt_jni > "$build/build.log" 2>&1 || { grep -E "error|Error" "$build/build.log" | head -30; fail "build"; }

# The model/train/core/tokenizer tests under qemu -cpu max run in the background beside the
# kernel tests below (one qemu process per core).
log="$build/unit_tests_qemu.log"
filter=$(cat "$build/tests/cross_test_filter.txt") || fail "no tests/cross_test_filter.txt in the build"
timeout 900 qemu-aarch64 -cpu max "$build/tests/phonegpt_unit_tests" "$filter" \
  > "$log" 2>&1 &
unit_pid=$!
stop_unit_tests() { kill "$unit_pid" 2>/dev/null || true; }
# kernels_aarch64_cortex-a53 runs every [kernels] test on every aarch64 table (all of them are
# ARMv8.0 code, so the bare core runs them all); kernels_aarch64_max checks the table dispatch
# chose where every extension is present (tests/cmake/kernels_dispatch.cmake); both check that
# dispatch chose arm64+neon+fmla-lane and saw the CPU's HWCAP features. kernels_aarch64_cortex-a76
# and kernels_aarch64_midr_cortex-a55 check the GEMM variant follows the core's MIDR;
# kernels_aarch64_env_neon64 checks that PG_KERNELS=arm64+neon selects the xsimd table.
(cd "$build" && ctest --output-on-failure -j"$jobs" --timeout 600 -R '^kernels_aarch64_') ||
  { stop_unit_tests; fail "kernel tests under qemu"; }
# The Kotlin binding's JNI shim, as an Android app would load it (docs/android.md): an AArch64
# ELF whose only export is JNI_OnLoad; it and libphonegpt.so need no shared zstd or libsodium and
# have 16 KB aligned LOAD segments (android_native_libs).
(cd "$build" && ctest --output-on-failure -R '^(kotlin_jni_exports|android_native_libs)$') ||
  { stop_unit_tests; fail "JNI shim exports or Android packaging"; }
aarch64-linux-gnu-readelf -h "$build/bindings/kotlin/libphonegpt_jni.so" | grep -q 'Machine:.*AArch64' ||
  { stop_unit_tests; fail "libphonegpt_jni.so is not an AArch64 library"; }
wait "$unit_pid" || { tail -60 "$log"; fail "model/train/core/tokenizer tests under qemu"; }
echo "cross_test_aarch64: OK (aarch64 build; [kernels] on cortex-a53 and max; $(tail -2 "$log" | head -1))"
