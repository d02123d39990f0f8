#!/usr/bin/env bash
# The memory plan's accuracy table (docs/api.md): predicted against measured peak resident
# memory for several training configurations, one bench_memory_plan process each.
# Usage: benchmarks/run_memory_plan.sh BUILD_DIR
set -euo pipefail
bench=${1:?usage: run_memory_plan.sh BUILD_DIR}/benchmarks/bench_memory_plan
configs=(
  "--shape phonegpt --mode full --batch 8"
  "--shape phonegpt --mode full --batch 32"
  "--shape phonegpt --mode full --batch 32 --recompute"
  "--shape phonegpt --mode lora --batch 32"
  "--shape 64m --mode lora --base fp32 --batch 4"
  "--shape 64m --mode lora --base fp16 --batch 4"
  "--shape 64m --mode lora --base bf16 --batch 8 --recompute"
)
echo "| shape | training | base | batch x seq | recompute | predicted MiB | measured MiB | error |"
echo "|---|---|---|---|---|---|---|---|"
for c in "${configs[@]}"; do
  # shellcheck disable=SC2086
  "$bench" $c --threads 2 | python3 -c '
import json, sys
r = json.loads(sys.stdin.read())
print("| %s | %s | %s | %d x %d | %s | %.1f | %.1f | %+.1f%% |" % (
    r["shape"], r["mode"], r["base"], r["batch"], r["seq"], "yes" if r["recompute"] else "no",
    r["predicted_mb"], r["measured_mb"], 100 * r["error"]))'
done
