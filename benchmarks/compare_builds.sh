#!/usr/bin/env bash
# Did a change slow the library? The PhoneGPT training step (bench_engine), the whole-split
# evaluation (bench_eval) and the LoRA step at the Ailoos shape over an fp32 base (bench_lora) of
# two builds, alternating ROUNDS times so that a change of the host's speed hits both; each
# figure is the benchmark's own CPU time (comparable on a shared host, where wall time is not).
# Usage: benchmarks/compare_builds.sh BEFORE_BUILD_DIR AFTER_BUILD_DIR [rounds]   (default 3)
# Each build needs the targets bench_engine, bench_eval and bench_lora.
set -euo pipefail
cd "$(dirname "$0")/.."
before=$1 after=$2 rounds=${3:-3}

lora_cpu() {  # <build dir>: "CPU ms/step, peak MB" (builds before 0.3 call the base flag --base)
  local flag=--base-storage
  "$1/benchmarks/bench_lora" --help 2>&1 | grep -q -- "--base-storage" || flag=--base
  "$1/benchmarks/bench_lora" --shape ailoos --steps 2 --warmup 1 --threads 2 "$flag" fp32 2>&1 | tail -1 |
    python3 -c 'import json, sys; j = json.loads(sys.stdin.read()); print("%.0f CPU ms/step, peak %.0f MB" % (j["cpu_ms_median"], j["peak_train_mb"]))'
}

for ((r = 1; r <= rounds; ++r)); do
  for which in before after; do
    dir=$before
    [ "$which" = after ] && dir=$after
    engine=$("$dir/benchmarks/bench_engine" --batch 32 --threads 2 --steps 5 | sed -n 's/^CPU time per step.*: \([0-9.]*\) ms$/\1/p')
    eval_cpu=$("$dir/benchmarks/bench_eval" | sed -n 's/^whole-split.* \([0-9.]*\) s CPU.*/\1/p')
    echo "round $r $which: bench_engine $engine CPU ms/step; bench_eval $eval_cpu CPU s; bench_lora $(lora_cpu "$dir")"
  done
done
