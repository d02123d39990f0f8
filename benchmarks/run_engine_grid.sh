#!/usr/bin/env bash
# Issue 15's 2-thread grid (docs/performance.md, "Two threads on every machine"): bench_engine at
# batches 16, 32 and 64 on 1 and 2 threads, with and without activation recomputation, in rounds
# so the host's drift hits every configuration alike. One line per run: the median step, its
# percent of the peak measured in the same run (recompute: of the executed FLOPs), the peak.
#   benchmarks/run_engine_grid.sh [ROUNDS (2)] [BUILD (build)]
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-2}
bin=${2:-build}/benchmarks/bench_engine
[[ -x $bin ]] || { echo "run_engine_grid: $bin not built" >&2; exit 1; }
for ((round = 1; round <= rounds; ++round)); do
  for batch in 16 32 64; do
    for run in "1" "2" "2 --recompute" "1 --recompute"; do
      read -r threads recompute <<< "$run"
      # shellcheck disable=SC2086
      out=$("$bin" --batch "$batch" --threads "$threads" --steps 10 $recompute)
      median=$(grep -oP 'median \K[0-9.]+' <<< "$out" | head -1)
      percent=$(grep -oP '= \K[0-9.]+(?=% of)' <<< "$out" | tail -1)
      peak=$(grep -oP 'peak \(\K[0-9.]+' <<< "$out" | head -1)
      echo "round $round batch $batch threads $threads ${recompute:-plain} median_ms $median pct_of_peak $percent peak $peak"
    done
  done
done
