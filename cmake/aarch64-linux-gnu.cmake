# Cross-compiling libphonegpt for 64-bit ARM Linux (and, statically linked, Android phones) with
# Debian's g++-aarch64-linux-gnu and the multiarch :arm64 libraries (scripts/setup.sh).
#   cmake -S . -B build-aarch64 -DCMAKE_TOOLCHAIN_FILE=cmake/aarch64-linux-gnu.cmake
# Test binaries run under qemu-aarch64 (binfmt_misc is not mounted in containers, so the
# emulator is called explicitly). No -L: every runtime library comes from the matching :arm64
# packages through the host's ld.so.cache (mixing in /usr/aarch64-linux-gnu's libc is fragile).
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)
set(CMAKE_C_COMPILER aarch64-linux-gnu-gcc)
set(CMAKE_CXX_COMPILER aarch64-linux-gnu-g++)
# find_package looks in /usr/lib/aarch64-linux-gnu/cmake/{zstd,xsimd}; Eigen and Catch2 are
# architecture-independent and found in /usr/share and /usr/lib/cmake as usual.
set(CMAKE_LIBRARY_ARCHITECTURE aarch64-linux-gnu)
set(CMAKE_CROSSCOMPILING_EMULATOR qemu-aarch64 CACHE STRING "Runs aarch64 test binaries")
