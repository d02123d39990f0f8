#!/usr/bin/env bash
# Installs every Debian package libphonegpt builds, tests and benchmarks with.
# Idempotent: packages already present are skipped, so a second run costs a few seconds.
# Usage: scripts/setup.sh            (as root on Debian 12; uses sudo when not root)
set -euo pipefail

packages=(
  # build
  cmake g++ make pkg-config
  libeigen3-dev libxsimd-dev libzstd-dev
  # Ed25519 signatures and SHA-256 of adapters: an audited library, not hand-written crypto
  libsodium-dev
  # tokenizer.json's NFC normalizer and Split regexes (docs/tokenizers.md)
  libutf8proc-dev libpcre2-dev
  # tests
  catch2 pybind11-dev python3-pybind11 python3-dev python3-numpy python3-pytest
  # the PyTorch twin used by the cross-check test and the benchmark, and plots; OpenBLAS
  # because without it torch's matmuls run on netlib's reference BLAS (about 25x slower), which
  # would make the PyTorch comparison meaningless
  python3-torch python3-matplotlib libopenblas0-pthread
  # lower x86 dispatch paths and the aarch64 cross build, run under qemu-user
  qemu-user g++-aarch64-linux-gnu
  # llvm-mca's scheduling models of the phone cores (scripts/mca_gemm_variants.py, the ctest
  # mca_variant_choice)
  llvm-19
  # sanitizer and fuzz builds
  clang-14 libclang-rt-14-dev
  # byte-level BPE: the Unicode data its class table is generated from
  # (scripts/gen_bpe_unicode_table.py)
  unicode-data
  # the BPE trainer's benchmark peer (spm_train --model_type=bpe)
  sentencepiece
  # the Kotlin/JNI binding (default-jdk-headless gives /usr/lib/jvm/default-java, which CMake's
  # FindJNI needs; Debian's coroutines jar needs atomicfu at run time)
  kotlin junit4 openjdk-17-jdk-headless default-jdk-headless libkotlinx-coroutines-java libkotlinx-atomicfu-java
)
arm64_packages=(libzstd-dev:arm64 libxsimd-dev:arm64 libstdc++6:arm64 libsodium-dev:arm64 libutf8proc-dev:arm64 libpcre2-dev:arm64)

SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi

missing() {
  local out=() p
  for p in "$@"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || out+=("$p")
  done
  echo "${out[@]:-}"
}

apt_install() {
  $SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
    -o DPkg::Lock::Timeout=600 "$@"
}

need=$(missing "${packages[@]}")
if [ -n "$need" ]; then
  echo "setup: installing $need"
  $SUDO apt-get update -o DPkg::Lock::Timeout=600
  # shellcheck disable=SC2086
  apt_install $need
fi

# arm64 libraries for the aarch64 cross build (multiarch; versions must match the amd64 ones).
if [ "$(dpkg --print-architecture)" = "amd64" ]; then
  if ! dpkg --print-foreign-architectures | grep -qx arm64; then
    $SUDO dpkg --add-architecture arm64
    $SUDO apt-get update -o DPkg::Lock::Timeout=600
  fi
  need=$(missing "${arm64_packages[@]}")
  if [ -n "$need" ]; then
    echo "setup: installing $need"
    # shellcheck disable=SC2086
    apt_install $need || { $SUDO apt-get update -o DPkg::Lock::Timeout=600; apt_install $need; }
  fi
fi
# --- npm peers of the BPE tests (owner: bpe) ----------------------------------------------------
# tiktoken, HF tokenizers and gpt-3-encoder from tests/npm/package-lock.json into the ignored
# tests/npm/node_modules (npm ci: exactly the locked versions). Node.js comes from Debian
# (nodejs, npm) unless a node is already installed. Skipped when the installed tree matches
# the lock file.
if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
  need=$(missing nodejs npm)
  if [ -n "$need" ]; then
    echo "setup: installing $need"
    $SUDO apt-get update -o DPkg::Lock::Timeout=600
    # shellcheck disable=SC2086
    apt_install $need
  fi
fi
npm_dir="$(cd "$(dirname "$0")/.." && pwd)/tests/npm"
npm_stamp="$npm_dir/node_modules/.phonegpt-lock.sha256"
npm_want=$(sha256sum "$npm_dir/package-lock.json" | cut -d' ' -f1)
if [ ! -f "$npm_stamp" ] || [ "$(cat "$npm_stamp")" != "$npm_want" ]; then
  echo "setup: npm ci in tests/npm"
  (cd "$npm_dir" && npm ci --no-audit --no-fund)
  echo "$npm_want" > "$npm_stamp"
fi
# --- end of the npm peers ------------------------------------------------------------------------
echo "setup: all packages present"
