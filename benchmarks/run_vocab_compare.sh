#!/usr/bin/env bash
# docs/results.md, "Character vs BPE vocabularies": the PhoneGPT shape trained with the
# character vocabulary and with 512- and 2,048-token byte-level BPE vocabularies (trained by
# `phonegpt tokenizer train` on the first 90% of the bytes) on Tiny Shakespeare, the three runs
# in parallel with the same wall-clock budget each (SIGINT at the budget: the run saves and
# scores its model), then each model scored on the same bytes - the last BYTES of the text,
# inside every run's validation split - in bits per byte, as `phonegpt eval` reports them: the
# summed loss in bits over the bytes the scored predictions' targets decode to (all but the
# first token's).
# Usage: benchmarks/run_vocab_compare.sh [build-dir] [budget-seconds] [out-dir]
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
budget=${2:-1200}
out=${3:-$build/vocab_compare}
data=${PG_DATA_PATH:-../shared/data/tinyshakespeare.txt}
common_bytes=99796  # the 2,048-token run's validation split: the smallest of the three
cli=$(realpath "$build/examples/phonegpt")
data=$(realpath "$data")
mkdir -p "$out" && cd "$out"
size=$(stat -c %s "$data")
head -c $((size * 9 / 10)) "$data" > train90.txt
for v in 512 2048; do
  "$cli" tokenizer train --data train90.txt --vocab-size $v --out bpe$v.json --threads 1 --json > /dev/null
done
for r in char 512 2048; do
  tok=(); [ $r = char ] || tok=(--tokenizer bpe$r.json)
  ( timeout -s INT "$budget" nice -n 5 "$cli" train --data "$data" "${tok[@]}" --batch 8 --steps 1500 --threads 1 \
      --eval-interval 0 --log-interval 100 --out run_$r --json > run_$r.json 2> run_$r.err || true ) &
done
wait
tail -c $common_bytes "$data" > common.txt
for r in char 512 2048; do
  nice -n 5 "$cli" eval --checkpoint run_$r/model.bin --data common.txt --split all --threads 1 --json > common_$r.json
done
python3 - <<'PY'
import json
# Bits per byte as `phonegpt eval` reports them (pg_eval_result.bits_per_byte over n_bytes, the
# bytes the scored targets decode to: the text without the first token's).
print("| vocabulary | steps in the budget | ms/step | loss per token | tokens scored | bytes per token | bits per byte |")
print("|---|---|---|---|---|---|---|")
for r in ("char", "512", "2048"):
    train, ev = json.load(open(f"run_{r}.json")), json.load(open(f"common_{r}.json"))
    print(f"| {r} | {train['step']} | {train['ms_per_step']:.0f} | {ev['loss']:.4f} | {ev['scored']:,} | "
          f"{ev['bytes'] / ev['scored']:.3f} | **{ev['bits_per_byte']:.4f}** |")
PY
