#!/usr/bin/env bash
# Issue 15's 2-thread grid (docs/performance.md, "Two threads on every machine"): bench_engine at
# batches 16, 32 and 64 on 1 and 2 threads, with and without activation recomputation, in rounds
# so the host's drift hits every configuration alike. One line per run: the median step, its
# percent of the peak measured in the same run (recompute: of the executed FLOPs), the peak, and
# the time per step the hypervisor gave the vCPUs to someone else (bench_engine's "steal").
# After the rounds, a summary per batch and mode: the median over the rounds of the 1- and
# 2-thread steps, their ratio (target 1.8x) and the median percent of the peak (target 60%).
#   benchmarks/run_engine_grid.sh [ROUNDS (2)] [BUILD (build)]
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-2}
bin=${2:-build}/benchmarks/bench_engine
[[ -x $bin ]] || { echo "run_engine_grid: $bin not built" >&2; exit 1; }
lines=$(mktemp)
trap 'rm -f "$lines"' EXIT
for ((round = 1; round <= rounds; ++round)); do
  for batch in 16 32 64; do
    for run in "1" "2" "2 --recompute" "1 --recompute"; do
      read -r threads recompute <<< "$run"
      # shellcheck disable=SC2086
      out=$("$bin" --batch "$batch" --threads "$threads" --steps 10 $recompute)
      median=$(grep -oP 'median \K[0-9.]+' <<< "$out" | head -1)
      percent=$(grep -oP '= \K[0-9.]+(?=% of)' <<< "$out" | tail -1)
      peak=$(grep -oP 'peak \(\K[0-9.]+' <<< "$out" | head -1)
      steal=$(grep -oP 'steal during the timed steps: \K[0-9.]+' <<< "$out" || echo n/a)
      echo "round $round batch $batch threads $threads ${recompute:-plain} median_ms $median pct_of_peak $percent peak $peak steal_ms_per_step $steal" |
        tee -a "$lines"
    done
  done
done
echo "summary over $rounds round(s): medians of the rounds' median steps"
python3 - "$lines" <<'PY'
import statistics, sys
runs = {}
for line in open(sys.argv[1]):
    f = line.split()
    key = (int(f[3]), f[6], int(f[5]))  # batch, mode, threads
    steal = float(f[14]) if len(f) > 14 and f[14] != "n/a" else float("nan")
    runs.setdefault(key, []).append((float(f[8]), float(f[10]), steal))
for batch in sorted({k[0] for k in runs}):
    for mode in ("plain", "--recompute"):
        one, two = runs.get((batch, mode, 1)), runs.get((batch, mode, 2))
        if not one or not two:
            continue
        ms1 = statistics.median(r[0] for r in one)
        ms2 = statistics.median(r[0] for r in two)
        pct2 = statistics.median(r[1] for r in two)
        steal2 = max(r[2] for r in two)
        ok = "meets" if ms1 / ms2 >= 1.8 and pct2 >= 60 else "MISSES"
        print(f"batch {batch} {mode:11s} 1 thread {ms1:7.1f} ms  2 threads {ms2:7.1f} ms  "
              f"{ms1 / ms2:.2f}x  {pct2:.1f}% of the 2-thread peak  {ok} (1.8x, 60%)  "
              f"most steal in a 2-thread round {steal2:.1f} ms/step")
PY
