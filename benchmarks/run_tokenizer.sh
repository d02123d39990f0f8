#!/usr/bin/env bash
# The tokenizer figures of docs/performance.md: libphonegpt's BPE (bench_tokenizer) and its
# peers npm tiktoken and HF tokenizers (bench_tokenizer_peers.js) on the same files,
# interleaved: for each repetition and each encoding, ours then the peers, so that a change of
# the machine's load hits all three alike. Reports, per file and encoding, the best wall and
# the best CPU-time MB/s of each and the ratios (CPU time is the figure on a shared machine).
# Needs a build with the npm peers (it uses the exported rank files and the tokenizer.json files
# the exactness test wrote: run `ctest -R bpe_exact` once first).
# Usage: benchmarks/run_tokenizer.sh [build-dir] [reps] [files...]
#   (default files: Tiny Shakespeare and the first 8 MB of the Debian corpus, make_bpe_corpus.sh)
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
reps=${2:-3}
shift $(( $# > 2 ? 2 : $# ))
peers=$build/tests/bpe_peers
jsons=$build/tests/tmp/bpe_exact
files=("$@")
if [ ${#files[@]} -eq 0 ]; then
  corpus=$build/bpe_corpus.txt
  [ -f "$corpus" ] || benchmarks/make_bpe_corpus.sh "$corpus" 64
  head -c 8000000 "$corpus" | iconv -f UTF-8 -t UTF-8 -c > "$corpus.8mb"
  files=("${PG_DATA_PATH:-../shared/data/tinyshakespeare.txt}" "$corpus.8mb")
fi
log=$(mktemp)
for f in "${files[@]}"; do
  for ((r = 0; r < reps; ++r)); do
    for enc in gpt2 cl100k_base o200k_base; do
      echo "ours $f $("$build/benchmarks/bench_tokenizer" "$peers" "$f" --json --reps 1 --only $enc)" >> "$log"
      echo "peers $f $(node benchmarks/bench_tokenizer_peers.js "$peers" "$jsons" "$f" 1 $enc)" >> "$log"
    done
  done
done
python3 - "$log" <<'PY'
import json, sys
best = {}
for line in open(sys.argv[1]):
    who, f, rows = line.split(" ", 2)
    for row in json.loads(rows):
        b = best.setdefault((f, row["encoding"]), {})
        for k, v in row.items():
            if isinstance(v, (int, float)):
                # times, memory and the CPU ratio: the least; throughputs: the most (the batch
                # speed-up is recomputed from the best times)
                keep = min if k.endswith(("_ms", "rss_kib", "cpu_ratio")) else max
                b[k] = keep(b[k], v) if k in b else v
print("| file | encoding | ours MB/s wall (CPU) | npm tiktoken | HF tokenizers | vs tiktoken wall (CPU) | vs HF wall (CPU) | tokens (ours / tiktoken / HF) |")
print("|---|---|---|---|---|---|---|---|")
for (f, enc), b in best.items():
    print(f"| {f.split('/')[-1]} | {enc} | {b['encode_mb_s']:.2f} ({b['encode_cpu_mb_s']:.2f}) | "
          f"{b['tiktoken_mb_s']:.2f} ({b['tiktoken_cpu_mb_s']:.2f}) | {b['hf_mb_s']:.2f} ({b['hf_cpu_mb_s']:.2f}) | "
          f"{b['encode_mb_s'] / b['tiktoken_mb_s']:.1f}x ({b['encode_cpu_mb_s'] / b['tiktoken_cpu_mb_s']:.1f}x) | "
          f"{b['encode_mb_s'] / b['hf_mb_s']:.1f}x ({b['encode_cpu_mb_s'] / b['hf_cpu_mb_s']:.1f}x) | "
          f"{b['tokens']:,} / {b['tiktoken_tokens']:,} / {b['hf_tokens']:,} |")
print()
print("| file | encoding | load ms wall / CPU: ours, tiktoken, HF | RSS added by the load, KiB: ours, tiktoken, HF | 1 MB 'a' ms wall (CPU) | 1 MB random ms wall (CPU) | batch 1 / 2 threads ms wall (speed-up) | 2-thread CPU / 1-thread CPU |")
print("|---|---|---|---|---|---|---|---|")
for (f, enc), b in best.items():
    print(f"| {f.split('/')[-1]} | {enc} | {b['load_ms']:.0f} / {b['load_cpu_ms']:.0f}, {b['tiktoken_load_ms']:.0f} / "
          f"{b['tiktoken_load_cpu_ms']:.0f}, {b['hf_load_ms']:.0f} / {b['hf_load_cpu_ms']:.0f} | "
          f"{b['rss_kib']:,}, {b['tiktoken_rss_kib']:,}, {b['hf_rss_kib']:,} | {b['one_char_1mb_ms']:.1f} ({b['one_char_1mb_cpu_ms']:.1f}) | "
          f"{b['random_1mb_ms']:.1f} ({b['random_1mb_cpu_ms']:.1f}) | {b['batch_1_thread_ms']:.1f} / {b['batch_2_threads_ms']:.1f} "
          f"({b['batch_1_thread_ms'] / b['batch_2_threads_ms']:.2f}x) | "
          f"{b['batch_2_threads_cpu_ratio']:.3f} |")
PY
rm -f "$log"
