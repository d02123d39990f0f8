#!/usr/bin/env bash
# BPE training time and peak memory (docs/performance.md): libphonegpt (`phonegpt tokenizer
# train`), Hugging Face tokenizers (npm native binding, bench_bpe_train_hf.js) and Debian's
# sentencepiece (`spm_train --model_type=bpe`) on the same text, one after the other, each as
# its own process timed by GNU time (wall seconds, CPU seconds of all its threads, peak
# resident memory). On a shared machine compare the CPU seconds.
#   - 4,096 and 32,768 tokens: libphonegpt and sentencepiece;
#   - 30,000 tokens, min_frequency 0: libphonegpt and HF, because the npm binding trains only
#     with its default BpeTrainer (vocab_size 30,000, min_frequency 0; no trainer options in
#     its JS API). Both read the file line by line (ours with --lines).
#   - HF's wall time to 4,096 and to 32,768 tokens, read off its progress bar during a run to
#     30,000 (hf_train_progress.py: an interval for 4,096; the whole run, a lower bound, for
#     32,768, which it never reaches). Wall seconds: compare them on a quiet machine only.
# The text: the first SIZE_MB of the Debian corpus (make_bpe_corpus.sh), valid UTF-8.
# Usage: benchmarks/run_bpe_train.sh [build-dir] [SIZE_MB] [threads]
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
size_mb=${2:-10}
threads=${3:-2}
corpus=$build/bpe_corpus.txt
[ -f "$corpus" ] || benchmarks/make_bpe_corpus.sh "$corpus" 64
text=$build/bpe_train_${size_mb}mb.txt
head -c $((size_mb * 1000000)) "$corpus" | iconv -f UTF-8 -t UTF-8 -c > "$text"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cli=$build/examples/phonegpt
echo "== BPE training on $text ($(stat -c %s "$text") bytes), $threads threads, $(nproc) cores: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2)"
printf '%-16s %7s %10s %12s %12s\n' tool vocab seconds "cpu seconds" "peak MiB"
run() {  # name vocab command...
  local name=$1 vocab=$2
  shift 2
  /usr/bin/time -f '%e %U %S %M' -o "$work/time" "$@" > "$work/out" 2>&1 || { cat "$work/out"; exit 1; }
  read -r secs user sys kib < "$work/time"
  printf '%-16s %7s %10s %12.2f %12.1f\n' "$name" "$vocab" "$secs" "$(echo "$user + $sys" | bc -l)" \
    "$(echo "$kib / 1024" | bc -l)"
}
for vocab in 4096 32768; do
  run libphonegpt "$vocab" "$cli" tokenizer train --data "$text" --vocab-size "$vocab" --out "$work/ours.json" \
    --lines --threads "$threads"
  run sentencepiece "$vocab" spm_train --input="$text" --model_prefix="$work/spm" --model_type=bpe \
    --vocab_size="$vocab" --num_threads="$threads" --minloglevel=2
done
run libphonegpt 30000 "$cli" tokenizer train --data "$text" --vocab-size 30000 --min-frequency 0 \
  --out "$work/ours.json" --lines --threads "$threads"
run hf-tokenizers 30000 node benchmarks/bench_bpe_train_hf.js "$text" "$work/hf.json"
echo "== HF's wall seconds to each vocabulary size during its run to 30,000 (progress bar redraws)"
python3 benchmarks/hf_train_progress.py --summary "$text" 4096 32768
