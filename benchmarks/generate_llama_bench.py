#!/usr/bin/env python3
"""Generation with a KV cache at a Llama-family shape: libphonegpt (Model.generate through the
Python binding: prefill of the prompt, then one cached position a token) against the PyTorch twin
of benchmarks/lora_torch_twin.py (LlamaTwin, Hugging Face's eager formulas) with its own KV cache
(the prompt once, then one token a step over the cached keys and values), both sampling at
temperature 1 from random weights, alternating round by round in one process, 2 threads each.
Prints one JSON line per run and a summary: tokens/s (generated tokens over the whole call,
prefill included) per peer, median over rounds.

    env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE OPENBLAS_NUM_THREADS=2 OMP_NUM_THREADS=2 OMP_WAIT_POLICY=PASSIVE \\
        PHONEGPT_PYDIR=build/bindings/python /usr/bin/python3 benchmarks/generate_llama_bench.py \\
        --shape smollm2-135m --base bf16 --prompt 32 --tokens 64 --rounds 2

--base fp32|fp16|bf16: how libphonegpt holds the weights (the twin is fp32). Without
OMP_WAIT_POLICY=PASSIVE on a loaded machine the twin's many small products spin OpenBLAS's
threads against each other: 0.8-1.4 tokens/s at SmolLM2-135M (load 12) instead of 5.5-7.2.
"""
import argparse
import importlib.util
import json
import os
import statistics
import sys
import time

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
if os.environ.get("PHONEGPT_PYDIR"):
    sys.path.insert(0, os.environ["PHONEGPT_PYDIR"])
import phonegpt  # noqa: E402


def load_twin_module():
    spec = importlib.util.spec_from_file_location("lora_torch_twin", os.path.join(HERE, "lora_torch_twin.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@torch.no_grad()
def twin_generate(model, prompt, n, gen):
    caches = [dict() for _ in model.layers]
    logits, _ = model(prompt, caches=caches, start=0)
    pos = prompt.shape[1]
    out = []
    for _ in range(n):
        probs = logits[:, -1].softmax(-1)
        nxt = torch.multinomial(probs, 1, generator=gen)
        out.append(int(nxt))
        logits, _ = model(nxt, caches=caches, start=pos)
        pos += 1
    return out


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--shape", default="smollm2-135m")
    p.add_argument("--base", choices=["fp32", "fp16", "bf16"], default="bf16")
    p.add_argument("--prompt", type=int, default=32)
    p.add_argument("--tokens", type=int, default=64)
    p.add_argument("--rounds", type=int, default=2)
    p.add_argument("--threads", type=int, default=2)
    a = p.parse_args()
    torch.set_num_threads(a.threads)
    torch.manual_seed(1)
    twin_mod = load_twin_module()
    cfg = phonegpt.ModelConfig.preset(a.shape)
    prompt = [int(x) for x in torch.randint(0, cfg.vocab_size, (a.prompt,), generator=torch.Generator().manual_seed(3))]
    ours = phonegpt.Model(cfg, seed=1)
    if a.base != "fp32":
        ours.set_weight_storage(a.base)
    twin = twin_mod.LlamaTwin(cfg).eval()
    # Untimed first calls: thread pools, allocations, OpenBLAS's start-up.
    ours.generate(prompt, 4, temperature=1.0, seed=9, n_threads=a.threads)
    twin_generate(twin, torch.tensor([prompt]), 4, torch.Generator().manual_seed(9))
    results = {"phonegpt": [], "torch": []}
    for r in range(a.rounds):
        t0 = time.perf_counter()
        got = ours.generate(prompt, a.tokens, temperature=1.0, seed=r + 1, n_threads=a.threads)
        dt = time.perf_counter() - t0
        n = len(got) - len(prompt) if len(got) > a.tokens else len(got)
        results["phonegpt"].append(n / dt)
        print(json.dumps({"peer": "phonegpt", "round": r, "tokens": n, "seconds": dt, "tokens_per_s": n / dt}))
        gen = torch.Generator().manual_seed(r + 1)
        t0 = time.perf_counter()
        out = twin_generate(twin, torch.tensor([prompt]), a.tokens, gen)
        dt = time.perf_counter() - t0
        results["torch"].append(len(out) / dt)
        print(json.dumps({"peer": "torch", "round": r, "tokens": len(out), "seconds": dt,
                          "tokens_per_s": len(out) / dt}))
    ours_tps = statistics.median(results["phonegpt"])
    twin_tps = statistics.median(results["torch"])
    print(f"shape {a.shape} base {a.base} prompt {a.prompt} tokens {a.tokens} threads {a.threads}: "
          f"libphonegpt {ours_tps:.1f} tokens/s, PyTorch twin (fp32, KV cache) {twin_tps:.1f} tokens/s, "
          f"{ours_tps / twin_tps:.2f}x; load average {os.getloadavg()[0]:.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
