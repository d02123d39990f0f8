#!/usr/bin/env bash
# The LoRA figures of docs/performance.md: each configuration in its own process (its own peak
# RSS), the PyTorch twin (benchmarks/lora_torch_twin.py) and libphonegpt's (bench_lora)
# interleaved round by round so machine load hits every peer alike, one JSON line per run in
# OUT, then benchmarks/summarize_lora_bench.py prints medians over the rounds and the ratios.
#   benchmarks/run_lora_bench.sh SHAPE (ailoos|gpt2|a Llama-family preset: smollm2-135m, qwen2.5-0.5b)
#                                [CTX (0: the shape's)] [ROUNDS (2)] [OUT] [BUILD (build)]
# Environment: STEPS (3) and WARMUP (1) per process; SEQ (256) tokens per sequence (at most the
# context: GPT-2 small at 1024 takes SEQ=1024); CONFIGS to run a subset (names below). The
# bf16 ones (not in the default set): lora_*_bf16 a bf16 base multiplied exactly, lora_*_bf16x
# bf16 arithmetic (--base bf16-arith), torch_*_bf16 the twin under PyTorch's bf16 autocast;
# lora_all_q8_0 / _q4_0 a quantized base multiplied exactly, *_int8 in int8 arithmetic.
# *_qkvo adapt the attention's q, k, v and o only, named by QKVO (default: q_proj,k_proj,v_proj,
# o_proj at a Llama-family shape, each with its own A and B in both peers as PEFT does;
# c_attn,attn.c_proj at GPT-2's, whose q, k, v are one fused module). At a
# Llama-family shape the twin reads the preset through the phonegpt package (PHONEGPT_PYDIR,
# default BUILD/bindings/python). The twin runs with OPENBLAS_CORETYPE and OPENBLAS_L2_SIZE unset
# (OpenBLAS then picks its kernel from CPUID).
set -euo pipefail
cd "$(dirname "$0")/.."
shape=${1:?shape: ailoos, gpt2 or a Llama-family preset}
ctx=${2:-0}
rounds=${3:-2}
out=${4:-bench-results/lora_${shape}_${ctx}.jsonl}
bin=${5:-build}/benchmarks/bench_lora
export PHONEGPT_PYDIR=${PHONEGPT_PYDIR:-$(cd "${5:-build}" && pwd)/bindings/python}
case $shape in
  ailoos | gpt2) qkvo=${QKVO:-c_attn,attn.c_proj} ;;
  *) qkvo=${QKVO:-q_proj,k_proj,v_proj,o_proj} ;;
esac
steps=${STEPS:-3}
warmup=${WARMUP:-1}
[[ -x $bin ]] || { echo "run_lora_bench: $bin not built (cmake --build build --target bench_lora)" >&2; exit 1; }
mkdir -p "$(dirname "$out")"
common=(--shape "$shape" --ctx "$ctx" --batch 4 --seq "${SEQ:-256}" --threads 2 --steps "$steps" --warmup "$warmup")
declare -A run=(
  [torch_all]="torch --targets all"
  [torch_c_attn]="torch --targets c_attn"
  [torch_all_bf16]="torch --targets all --autocast bf16"
  [torch_c_attn_bf16]="torch --targets c_attn --autocast bf16"
  [lora_all_fp32]="pg --mode lora --targets all --base fp32"
  [lora_all_fp16]="pg --mode lora --targets all --base fp16"
  [lora_all_fp16_recompute]="pg --mode lora --targets all --base fp16 --recompute"
  [lora_c_attn_fp32]="pg --mode lora --targets c_attn --base fp32"
  [lora_c_attn_fp16]="pg --mode lora --targets c_attn --base fp16"
  [lora_all_bf16]="pg --mode lora --targets all --base bf16"
  [lora_c_attn_bf16]="pg --mode lora --targets c_attn --base bf16"
  [lora_all_bf16x]="pg --mode lora --targets all --base bf16-arith"
  [lora_c_attn_bf16x]="pg --mode lora --targets c_attn --base bf16-arith"
  [lora_all_q8_0]="pg --mode lora --targets all --base-storage q8_0"
  [lora_all_q8_0_int8]="pg --mode lora --targets all --base-storage q8_0 --arithmetic int8"
  [lora_all_q4_0]="pg --mode lora --targets all --base-storage q4_0"
  [lora_all_q4_0_int8]="pg --mode lora --targets all --base-storage q4_0 --arithmetic int8"
  [full_fp32]="pg --mode full --base fp32"
  [torch_qkvo]="torch --targets $qkvo"
  [lora_qkvo_fp32]="pg --mode lora --targets $qkvo --base fp32"
  [lora_qkvo_fp16]="pg --mode lora --targets $qkvo --base fp16"
  [lora_qkvo_bf16]="pg --mode lora --targets $qkvo --base bf16"
  [lora_qkvo_bf16_recompute]="pg --mode lora --targets $qkvo --base bf16 --recompute"
  [lora_all_bf16_recompute]="pg --mode lora --targets all --base bf16 --recompute"
  [torch_all_top4]="torch --targets all --top-layers 4"
  [lora_all_top4_fp16]="pg --mode lora --targets all --top-layers 4 --base fp16"
)
configs=${CONFIGS:-torch_all lora_all_fp32 lora_all_fp16 torch_c_attn lora_c_attn_fp32 lora_c_attn_fp16 full_fp32 lora_all_fp16_recompute}
for ((r = 1; r <= rounds; ++r)); do
  for name in $configs; do
    read -r peer args <<< "${run[$name]}"
    # shellcheck disable=SC2086
    if [[ $peer == torch ]]; then
      line=$(env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE OPENBLAS_NUM_THREADS=2 OMP_NUM_THREADS=2 OMP_WAIT_POLICY=PASSIVE \
             /usr/bin/python3 benchmarks/lora_torch_twin.py "${common[@]}" $args)
    else
      line=$("$bin" "${common[@]}" $args)
    fi
    echo "{\"config\": \"$name\", \"round\": $r, \"result\": $line}" | tee -a "$out"
  done
done
/usr/bin/python3 benchmarks/summarize_lora_bench.py "$out"
