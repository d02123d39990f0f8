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
# Tiny Shakespeare: best of 3 each. The corpus: ours best of 1 on all of it; the peers (1-3
# MB/s) on its first 8 MB, one run each, which keeps the whole script under ~10 minutes.
echo "== $shakespeare ($(stat -c %s "$shakespeare") bytes)"
"$build/benchmarks/bench_tokenizer" "$peers" "$shakespeare" --json
node benchmarks/bench_tokenizer_peers.js "$peers" "$jsons" "$shakespeare" 3
echo "== $corpus ($(stat -c %s "$corpus") bytes)"
"$build/benchmarks/bench_tokenizer" "$peers" "$corpus" --json --reps 1
head -c 8000000 "$corpus" | iconv -f UTF-8 -t UTF-8 -c > "$corpus.8mb"
echo "== first 8 MB of the corpus"
"$build/benchmarks/bench_tokenizer" "$peers" "$corpus.8mb" --json --reps 1
node benchmarks/bench_tokenizer_peers.js "$peers" "$jsons" "$corpus.8mb" 1
