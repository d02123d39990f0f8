#!/usr/bin/env python3
"""The PyTorch peer of bench_lora: a hand-written LoRA over the library's PyTorch twin
(bindings/python/phonegpt/torch_gpt.py: the same GPT-2, names and shapes), one training
configuration per process, printing the same JSON fields as bench_lora.

LoRA as PEFT defines it for nn.Linear targets: y = W x + b + (alpha / r) * B(A x), A [r, in]
kaiming-uniform(a = sqrt(5)), B [out, r] zero, on the same modules as bench_lora (all four block
linears, or attn.c_attn only). Every base parameter has requires_grad False, so autograd keeps
no weight gradient and AdamW no moment for it; input gradients still flow. fp32 throughout by
default (CPU fp16 matmuls in torch are not a fair peer: they are emulated and far slower). AdamW over the
adapter's factors, batch 4 x 256 of random token ids, torch.set_num_threads(threads).

--autocast bf16: PyTorch's own mixed precision, the peer of bench_lora --base bf16-arith
(PG_WEIGHTS_BF16_ARITHMETIC): forward and loss under torch.autocast("cpu", dtype=torch.bfloat16),
so every matmul (base, LoRA branch, attention, head) multiplies bf16 operands into fp32 sums
(oneDNN's AVX512_BF16 kernels where the CPU has them) and the backward follows; the adapter's
factors, their gradients and AdamW stay fp32. --autocast-base says how the frozen base is held:
fp32 (autocast's usual setting: the master weights stay fp32 and each matmul casts its weight to
bf16 again every step, because autocast caches casts only of weights that require grad) or bf16
(the big matrices, wte and the block linears' weights and biases, converted once, as a frozen
base is loaded in bf16 for LoRA: no per-step casts, half the weight memory; LayerNorms and wpe
stay fp32). The default is bf16, the faster of the two here: Ailoos shape, --targets all, 4
steps after 1 warmup, two runs each alternating, 2 threads on the shared 2-core AVX512_BF16 VM
(torch 1.13, oneDNN): bf16 base 2223 / 1887 ms/step (CPU 3610 / 3362 ms, peak 1865 / 1880 MB),
fp32 base 2316 / 2525 ms (CPU 3817 / 3991, peak 2136 / 2116 MB); without autocast 3836 ms (CPU
6921, peak 2935 MB).

--shape PRESET (smollm2-135m, qwen2.5-0.5b, ...): the Llama family as Hugging Face's eager
modeling code runs it (LlamaTwin below: RMSNorm, rotate-half RoPE, repeat_kv for grouped-query
attention, q/k norms, SiLU-gated MLP, one nn.Linear per projection, tied or separate head), the
shape read from phonegpt's preset (PHONEGPT_PYDIR); --targets then names per-projection modules
as PEFT does (q_proj,k_proj,v_proj,o_proj,...) or the library's fused kinds (c_attn = q,k,v;
attn.c_proj = o; c_fc = gate,up; mlp.c_proj = down), each projection with its own A and B.
LlamaTwin's logits equal the library's within 4e-7 relative at tiny-qwen2/qwen3 with the same
weights; it has no Llama 3 frequency scaling (SmolLM2 and Qwen have none; it costs nothing).

Peak memory: VmHWM is reset through /proc/self/clear_refs once the model is built (as bench_lora
does once its base is ready), and the process peak comes from getrusage.

    OPENBLAS_NUM_THREADS=2 OMP_NUM_THREADS=2 OMP_WAIT_POLICY=PASSIVE \\
        /usr/bin/python3 benchmarks/lora_torch_twin.py --shape ailoos --targets all

Debian's torch multiplies through OpenBLAS: OPENBLAS_NUM_THREADS must be the thread count. With
OpenBLAS's pool off (OPENBLAS_NUM_THREADS=1, the best setting at the small PhoneGPT shape) every
matmul runs on one core, and at the Ailoos shape a step took 1.4-1.8x longer (docs/performance.md).
"""
import argparse
import importlib.util
import json
import math
import os
import resource
import statistics
import sys
import time

import torch
import torch.nn as nn

HERE = os.path.dirname(os.path.abspath(__file__))


def load_twin():
    """torch_gpt.py by path: the phonegpt package itself (and its native library) is not needed."""
    path = os.path.join(HERE, "..", "bindings", "python", "phonegpt", "torch_gpt.py")
    spec = importlib.util.spec_from_file_location("torch_gpt", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


class LoraLinear(nn.Module):
    """A frozen nn.Linear plus PEFT's LoRA branch."""

    def __init__(self, base, rank, alpha):
        super().__init__()
        self.base = base
        self.lora_A = nn.Parameter(torch.empty(rank, base.in_features))
        self.lora_B = nn.Parameter(torch.zeros(base.out_features, rank))
        nn.init.kaiming_uniform_(self.lora_A, a=math.sqrt(5))
        self.scale = alpha / rank

    def forward(self, x):
        return self.base(x) + (x @ self.lora_A.t() @ self.lora_B.t()) * self.scale


# The library's fused kinds as the projections PEFT wraps one by one.
FUSED = {"c_attn": ["q_proj", "k_proj", "v_proj"], "attn.c_proj": ["o_proj"], "c_fc": ["gate_proj", "up_proj"],
         "mlp.c_proj": ["down_proj"]}
PROJECTIONS = ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"]


def llama_targets(targets):
    if targets == "all":
        return PROJECTIONS
    names = []
    for t in targets.split(","):
        if t not in FUSED and t not in PROJECTIONS:
            raise SystemExit(f"--targets: unknown module {t!r}")
        names += FUSED.get(t, [t])
    return names


class RMSNorm(nn.Module):
    def __init__(self, n, eps):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(n))
        self.eps = eps

    def forward(self, x):
        return self.weight * (x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps))


def rotate_half(x):
    h = x.shape[-1] // 2
    return torch.cat((-x[..., h:], x[..., :h]), dim=-1)


class LlamaLayer(nn.Module):
    def __init__(self, c, hd):
        super().__init__()
        C, H, nh, nkv = c.n_embd, c.mlp_hidden, c.n_head, c.n_kv_head or c.n_head
        self.nh, self.nkv, self.hd = nh, nkv, hd
        self.input_layernorm = RMSNorm(C, c.layernorm_eps)
        self.q_proj = nn.Linear(C, nh * hd, bias=c.qkv_bias)
        self.k_proj = nn.Linear(C, nkv * hd, bias=c.qkv_bias)
        self.v_proj = nn.Linear(C, nkv * hd, bias=c.qkv_bias)
        self.o_proj = nn.Linear(nh * hd, C, bias=c.linear_bias)
        self.q_norm = RMSNorm(hd, c.layernorm_eps) if c.qk_norm else None
        self.k_norm = RMSNorm(hd, c.layernorm_eps) if c.qk_norm else None
        self.post_attention_layernorm = RMSNorm(C, c.layernorm_eps)
        self.gate_proj = nn.Linear(C, H, bias=c.linear_bias)
        self.up_proj = nn.Linear(C, H, bias=c.linear_bias)
        self.down_proj = nn.Linear(H, C, bias=c.linear_bias)

    def forward(self, x, cos, sin, cache=None):
        B, T, _ = x.shape
        h = self.input_layernorm(x)
        q = self.q_proj(h).view(B, T, self.nh, self.hd).transpose(1, 2)
        k = self.k_proj(h).view(B, T, self.nkv, self.hd).transpose(1, 2)
        v = self.v_proj(h).view(B, T, self.nkv, self.hd).transpose(1, 2)
        if self.q_norm is not None:
            q, k = self.q_norm(q), self.k_norm(k)
        q = q * cos + rotate_half(q) * sin
        k = k * cos + rotate_half(k) * sin
        if cache is not None:  # the KV cache: this layer's keys and values so far
            if "k" in cache:
                k, v = torch.cat((cache["k"], k), dim=2), torch.cat((cache["v"], v), dim=2)
            cache["k"], cache["v"] = k, v
        rep = self.nh // self.nkv
        k, v = k.repeat_interleave(rep, dim=1), v.repeat_interleave(rep, dim=1)
        att = (q @ k.transpose(-2, -1)) / math.sqrt(self.hd)
        S = k.shape[2]
        mask = torch.ones(T, S, dtype=torch.bool).tril(S - T)
        att = att.masked_fill(~mask, float("-inf")).softmax(-1)
        y = (att @ v).transpose(1, 2).reshape(B, T, self.nh * self.hd)
        x = x + self.o_proj(y)
        h = self.post_attention_layernorm(x)
        return x + self.down_proj(nn.functional.silu(self.gate_proj(h)) * self.up_proj(h))


class LlamaTwin(nn.Module):
    """A Llama-family decoder from a phonegpt.ModelConfig, Hugging Face's eager formulas."""

    def __init__(self, c):
        super().__init__()
        self.hd = c.head_dim or c.n_embd // c.n_head
        self.theta = c.rope_theta
        self.embed_tokens = nn.Embedding(c.vocab_size, c.n_embd)
        self.layers = nn.ModuleList(LlamaLayer(c, self.hd) for _ in range(c.n_layer))
        self.norm = RMSNorm(c.n_embd, c.layernorm_eps)
        self.lm_head = None if c.tied_head else nn.Linear(c.n_embd, c.vocab_size, bias=False)
        for n, prm in self.named_parameters():
            if prm.dim() == 2:
                nn.init.normal_(prm, std=0.02)
            elif "bias" in n:
                nn.init.zeros_(prm)

    def rope(self, positions):
        inv = 1.0 / (self.theta ** (torch.arange(0, self.hd, 2, dtype=torch.float32) / self.hd))
        f = positions.float()[:, None] * inv[None, :]
        e = torch.cat((f, f), dim=-1)
        return e.cos(), e.sin()

    def forward(self, idx, targets=None, caches=None, start=0):
        cos, sin = self.rope(torch.arange(start, start + idx.shape[1]))
        x = self.embed_tokens(idx)
        for i, layer in enumerate(self.layers):
            x = layer(x, cos, sin, None if caches is None else caches[i])
        x = self.norm(x)
        logits = x @ (self.embed_tokens.weight if self.lm_head is None else self.lm_head.weight).t()
        loss = None
        if targets is not None:
            loss = nn.functional.cross_entropy(logits.view(-1, logits.shape[-1]), targets.view(-1), ignore_index=-1)
        return logits, loss


def llama_config(preset):
    """phonegpt's preset (the one list of the published shapes)."""
    if os.environ.get("PHONEGPT_PYDIR"):
        sys.path.insert(0, os.environ["PHONEGPT_PYDIR"])
    import phonegpt
    return phonegpt.ModelConfig.preset(preset)


def status_mb(field):
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return float(line.split()[1]) / 1024.0
    return 0.0


def reset_peak():
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
        return True
    except OSError:
        return False


def run_steps(a, model, lora_params, vocab_size, n_ctx, top, autocast=False, base_bf16=False):
    """AdamW over the adapter, warmup + timed steps on random batches; prints the JSON line."""
    opt = torch.optim.AdamW(lora_params, lr=1e-4, weight_decay=0.1)
    gen = torch.Generator().manual_seed(7)
    rss_ready = status_mb("VmRSS")
    peak_reset = reset_peak()
    wall, cpu, loss = [], [], 0.0
    for s in range(a.warmup + a.steps):
        x = torch.randint(0, vocab_size, (a.batch, a.seq), generator=gen)
        y = torch.randint(0, vocab_size, (a.batch, a.seq), generator=gen)
        t0, c0 = time.perf_counter(), time.process_time()
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=autocast):
            _, l = model(x, y)
        opt.zero_grad(set_to_none=True)
        l.backward()
        torch.nn.utils.clip_grad_norm_(lora_params, 1.0)
        opt.step()
        loss = float(l)
        if s >= a.warmup:
            wall.append((time.perf_counter() - t0) * 1e3)
            cpu.append((time.process_time() - c0) * 1e3)
    n_trained = sum(t.numel() for t in lora_params)
    n_params = sum(t.numel() for t in model.parameters())
    weight_bytes = sum(t.numel() * t.element_size() for t in model.parameters()) - n_trained * 4
    peak_process = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0
    print(json.dumps({
        "peer": "torch", "shape": a.shape, "ctx": n_ctx, "params": n_params - n_trained,
        "mode": "lora", "targets": a.targets, "top_layers": top, "base": "bf16" if base_bf16 else "fp32",
        "autocast": a.autocast, "recompute": False,
        "batch": a.batch, "seq": a.seq, "threads": a.threads, "trained_params": n_trained,
        "ms_median": statistics.median(wall), "cpu_ms_median": statistics.median(cpu),
        "ms": wall, "cpu_ms": cpu, "rss_ready_mb": rss_ready,
        "peak_train_mb": status_mb("VmHWM") if peak_reset else peak_process,
        "peak_reset": peak_reset, "peak_process_mb": peak_process,
        "weights_mb": weight_bytes / 1048576.0, "last_loss": loss,
        "torch": torch.__version__}))
    return 0


def llama_main(a):
    cfg = llama_config(a.shape)
    model = LlamaTwin(cfg)
    for prm in model.parameters():
        prm.requires_grad_(False)
    lora_params = []
    top = a.top_layers or cfg.n_layer
    for layer in model.layers[cfg.n_layer - top:]:
        for name in llama_targets(a.targets):
            wrapped = LoraLinear(getattr(layer, name), a.rank, float(a.rank))
            setattr(layer, name, wrapped)
            lora_params += [wrapped.lora_A, wrapped.lora_B]
    return run_steps(a, model, lora_params, cfg.vocab_size, cfg.n_ctx, top)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--shape", default="ailoos", help="ailoos, gpt2 or a Llama-family preset (smollm2-135m, ...)")
    p.add_argument("--ctx", type=int, default=0)
    p.add_argument("--batch", type=int, default=4)
    p.add_argument("--seq", type=int, default=256)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--targets", default="all", help="all, c_attn (GPT-2), or a comma list of projections")
    p.add_argument("--rank", type=int, default=8)
    p.add_argument("--top-layers", type=int, default=0,
                   help="adapt only the top N layers (PEFT's layers_to_transform); 0: all")
    p.add_argument("--steps", type=int, default=3)
    p.add_argument("--warmup", type=int, default=1)
    p.add_argument("--autocast", choices=["none", "bf16"], default="none",
                   help="bf16: forward and loss under torch.autocast('cpu', dtype=torch.bfloat16)")
    p.add_argument("--autocast-base", choices=["fp32", "bf16"], default="bf16",
                   help="with --autocast bf16: hold the frozen base's big matrices in fp32 or bf16")
    a = p.parse_args()
    torch.set_num_threads(a.threads)
    torch.manual_seed(1)
    if a.shape not in ("ailoos", "gpt2"):
        return llama_main(a)
    twin = load_twin()
    gpt2 = a.shape == "gpt2"
    cfg = twin.TwinConfig(n_layer=12, n_head=12 if gpt2 else 8, n_embd=768 if gpt2 else 512,
                          n_ctx=a.ctx or (1024 if gpt2 else 256), vocab_size=50257,
                          padded_vocab_size=50304)
    model = twin.TorchGPT(cfg)
    for prm in model.parameters():
        prm.requires_grad_(False)
    autocast = a.autocast == "bf16"
    base_bf16 = autocast and a.autocast_base == "bf16"
    if base_bf16:  # before the LoRA factors exist: they stay fp32
        for name, prm in model.named_parameters():
            if name == "wte" or ".attn.c_" in name or ".mlp.c_" in name:
                prm.data = prm.data.to(torch.bfloat16)
    named = {"c_attn": ("attn", "c_attn"), "attn.c_proj": ("attn", "c_proj"), "c_fc": ("mlp", "c_fc"),
             "mlp.c_proj": ("mlp", "c_proj")}
    wanted = list(named) if a.targets == "all" else a.targets.split(",")
    if any(t not in named for t in wanted):
        raise SystemExit(f"--targets {a.targets}: GPT-2's modules are {', '.join(named)}")
    kinds = [named[t] for t in wanted]
    lora_params = []
    top = a.top_layers or cfg.n_layer
    for block in model.h[cfg.n_layer - top:]:
        for parent, name in kinds:
            owner = getattr(block, parent)
            wrapped = LoraLinear(getattr(owner, name), a.rank, float(a.rank))
            setattr(owner, name, wrapped)
            lora_params += [wrapped.lora_A, wrapped.lora_B]
    return run_steps(a, model, lora_params, cfg.vocab_size, cfg.n_ctx, top, autocast, base_bf16)


if __name__ == "__main__":
    sys.exit(main())
