#!/usr/bin/env bash
# Installs the build tree into a scratch prefix, then builds a consumer with
# find_package(phonegpt) and another with pkg-config, and runs both.
# Usage: check_install.sh BUILD_DIR SOURCE_DIR SCRATCH_DIR
set -euo pipefail
build=$1 src=$2 scratch=$3
rm -rf "$scratch" && mkdir -p "$scratch"
prefix=$scratch/prefix
cmake --install "$build" --prefix "$prefix" --component Unspecified >/dev/null
libdir=$(ls -d "$prefix"/lib*/ | head -1)
cmake -S "$src/tests/install/consumer" -B "$scratch/consumer" -DCMAKE_PREFIX_PATH="$prefix" >/dev/null
cmake --build "$scratch/consumer" >/dev/null
LD_LIBRARY_PATH=$libdir "$scratch/consumer/consumer_cmake"
PKG_CONFIG_PATH=$libdir/pkgconfig
export PKG_CONFIG_PATH
cc -o "$scratch/consumer_pc" "$src/tests/install/consumer/consumer.c" $(pkg-config --cflags --libs phonegpt)
LD_LIBRARY_PATH=$libdir "$scratch/consumer_pc"
echo "install check: find_package and pkg-config consumers both work"
