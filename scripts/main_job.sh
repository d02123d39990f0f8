#!/usr/bin/env bash
# The main job, in one command: installs the Debian packages, builds (Release), trains the
# PhoneGPT model (6 layers, 4 heads, width 128, context 128) on Tiny Shakespeare for 2,000
# steps at batch 32, scores it on the whole validation split a few times during the run and at
# the end (and the whole training split at the end), then samples from it.
#
# Usage: scripts/main_job.sh
# Environment (all optional): PG_DATA_PATH (default ../shared/data/tinyshakespeare.txt),
#   STEPS (2000), THREADS (2), OUT (out/main), BUILD (build).
# Results: $OUT/train.json (one JSON object: losses, ms/step, every evaluation), $OUT/model.bin,
#   $OUT/trainer.bin (resumable: phonegpt train --resume $OUT/trainer.bin --steps N), and
#   $OUT/sample.txt.
set -euo pipefail
cd "$(dirname "$0")/.."
steps=${STEPS:-2000}
threads=${THREADS:-2}
out=${OUT:-out/main}
build=${BUILD:-build}

scripts/setup.sh
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release
cmake --build "$build" -j"$(nproc)" --target phonegpt_cli
cli="$build/examples/phonegpt"
mkdir -p "$out"

# The recipe for a short run: peak lr 2e-3 with a 150-step linear warm-up, cosine to 2e-4 at the
# last step; AdamW (0.9, 0.95) with weight decay 0.1 on the linear weights; gradient norm
# clipped at 1.0; no dropout (2,000 steps = 8.2M tokens, well short of overfitting).
# Progress goes to the terminal (stderr), the results to $out/train.json.
"$cli" train --preset phonegpt ${PG_DATA_PATH:+--data "$PG_DATA_PATH"} \
  --steps "$steps" --batch 32 --lr 2e-3 --lr-min 2e-4 --warmup 150 --weight-decay 0.1 \
  --clip 1.0 --dropout 0 --eval-interval 500 --eval-train --log-interval 50 --seed 1337 \
  --threads "$threads" --out "$out" --json > "$out/train.json"

# The figures: ms/step, the last 50 steps' training loss, and whole-split losses.
/usr/bin/python3 - "$out/train.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
print(f"\n== {r['step']} steps, batch {r['config']['batch']} x {r['config']['seq_len']}, "
      f"{r['config']['threads']} threads, kernels {r['simd']}")
print(f"   {r['ms_per_step']:.1f} ms/step, {r['tokens_per_second']:.0f} tokens/s, {r['seconds']:.0f} s")
print(f"   training loss (mean of the last {r['recent_train_loss_steps']} steps): {r['recent_train_loss']:.4f}")
if 'train' in r:
    print(f"   whole training split:   {r['train']['loss']:.4f} ({r['train']['scored']} positions)")
for e in r['evals']:
    print(f"   validation at step {e['step']:>5}: {e['loss']:.4f} ({e['scored']} positions)")
PY

echo
echo "== sample (temperature 0.8, top-k 40, seed 1337)"
"$cli" sample --checkpoint "$out/model.bin" --prompt $'ROMEO:\n' --tokens 500 \
  --temperature 0.8 --top-k 40 --seed 1337 --threads "$threads" | tee "$out/sample.txt"
