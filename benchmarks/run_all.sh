#!/usr/bin/env bash
# Runs every benchmark behind docs/performance.md once, in the order the document uses, and keeps
# each one's output (tables, or JSON for bench_engine) in OUTDIR. Take figures on a quiet machine:
# these are the runs the document's tables were copied from.
#   benchmarks/run_all.sh [BUILD_DIR (build)] [OUTDIR (bench-results)] [DATA (../shared/data/tinyshakespeare.txt)]
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
out=${2:-bench-results}
data=${3:-${PG_DATA_PATH:-../shared/data/tinyshakespeare.txt}}
bin=$build/benchmarks
mkdir -p "$out"
for tool in bench_peak bench_engine bench_kernels bench_eval; do
  [[ -x $bin/$tool ]] || { echo "run_all: $bin/$tool not built (cmake --build $build)" >&2; exit 1; }
done

"$bin/bench_peak" --seconds 0.3 > "$out/peak.txt"
for threads in 2 1; do
  for batch in 16 32 64; do
    "$bin/bench_engine" --batch "$batch" --threads "$threads" --steps 10 --json > "$out/engine_b${batch}_t${threads}.json"
  done
done
"$bin/bench_engine" --batch 32 --threads 2 --steps 10 --dropout 0.1 --json > "$out/engine_b32_t2_dropout.json"
"$bin/bench_engine" --batch 32 --threads 2 --steps 10 --recompute --json > "$out/engine_b32_t2_recompute.json"
"$bin/bench_engine" --batch 64 --threads 2 --steps 10 --recompute --json > "$out/engine_b64_t2_recompute.json"
"$bin/bench_kernels" --suite phonegpt --seconds 0.3 > "$out/kernels_phonegpt.txt"
"$bin/bench_kernels" --suite 64m --seconds 0.3 --no-eigen > "$out/kernels_64m.txt"
for arch in fma3+avx2 sse2; do
  if "$bin/bench_kernels" --suite phonegpt --seconds 0.2 --no-eigen --arch "$arch" > "$out/kernels_$arch.txt" 2>&1; then :; else
    echo "run_all: no $arch table on this CPU" >> "$out/kernels_$arch.txt"
  fi
done
if [[ -f $data ]]; then
  "$bin/bench_eval" "$data" --threads 2 --sample-threads 1 --tokens 600 --json > "$out/eval.json"
else
  echo "run_all: no data at $data, evaluation and sampling skipped" >&2
fi
echo "run_all: results in $out"
for f in "$out"/engine_*.json; do echo "$(basename "$f"): $(cat "$f")"; done
