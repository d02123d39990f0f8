#!/usr/bin/env bash
# The tokenizer figures of docs/performance.md: libphonegpt's BPE (bench_tokenizer) and its
# peers npm tiktoken and HF tokenizers (bench_tokenizer_peers.js) on the same files, one after
# the other, on Tiny Shakespeare and on the >= 50 MB Debian corpus (make_bpe_corpus.sh).
# Needs a build with the npm peers (it uses the exported rank files and the tokenizer.json files
# the exactness test wrote: run `ctest -R bpe_exact` once first).
# Usage: benchmarks/run_tokenizer.sh [build-dir] [corpus-file]
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
corpus=${2:-$build/bpe_corpus.txt}
peers=$build/tests/bpe_peers
jsons=$build/tests/tmp/bpe_exact
shakespeare=${PG_DATA_PATH:-../shared/data/tinyshakespeare.txt}
[ -f "$corpus" ] || benchmarks/make_bpe_corpus.sh "$corpus" 64
for text in "$shakespeare" "$corpus"; do
  echo "== $text ($(stat -c %s "$text") bytes)"
  "$build/benchmarks/bench_tokenizer" "$peers" "$text" --json
  node benchmarks/bench_tokenizer_peers.js "$peers" "$jsons" "$text"
done
