"""The PyTorch twin of libphonegpt's model: the same GPT-2 architecture, parameter names and
weight layout, written plainly so that it can serve as an independent reference.

It is used three ways:
  * the cross-check test (tests/python/test_twin.py): copy a libphonegpt model's weights in,
    run the same batch, compare loss, logits and every parameter gradient;
  * benchmarks/compare_pytorch.py: the same model trained by PyTorch (fp32, AdamW) and by
    libphonegpt, timed in the same run;
  * examples/python/compare_pytorch.py: score a checkpoint with both.

Architecture (docs/architecture.md, include/phonegpt/phonegpt.h): token embedding `wte`
[padded_vocab, C] + learned positions `wpe` [n_ctx, C]; n_layer pre-LayerNorm blocks
(x += attn(ln_1(x)); x += mlp(ln_2(x))), causal multi-head attention with q, k, v packed in
that order along c_attn's output rows, 4x MLP with tanh-approximate GELU, biases on every
linear, final LayerNorm `ln_f`, output head tied to `wte`. Logits are taken over the first
vocab_size rows of wte only: padding rows are never predicted. Linear weights are [out, in],
exactly torch.nn.Linear's layout, so every named parameter here has our name and shape.

Only torch is needed; the binding is imported lazily by the helpers that talk to it.
"""

import math

import torch
import torch.nn as nn
import torch.nn.functional as F

__all__ = ["TwinConfig", "TorchGPT", "whole_split_windows", "whole_split_loss",
           "from_phonegpt", "copy_from_phonegpt"]


class TwinConfig:
    """The model geometry (the fields of pg_model_config)."""

    def __init__(self, n_layer=6, n_head=4, n_embd=128, n_ctx=128, vocab_size=65,
                 padded_vocab_size=0, layernorm_eps=1e-5):
        if padded_vocab_size == 0:  # the library's rule: round up to a multiple of 4
            padded_vocab_size = (vocab_size + 3) // 4 * 4
        self.n_layer = n_layer
        self.n_head = n_head
        self.n_embd = n_embd
        self.n_ctx = n_ctx
        self.vocab_size = vocab_size
        self.padded_vocab_size = padded_vocab_size
        self.layernorm_eps = layernorm_eps

    @classmethod
    def from_phonegpt(cls, config):
        """From a phonegpt.ModelConfig (or anything with the same attributes)."""
        return cls(config.n_layer, config.n_head, config.n_embd, config.n_ctx,
                   config.vocab_size, config.padded_vocab_size, config.layernorm_eps)

    def __repr__(self):
        return ("TwinConfig(n_layer={0.n_layer}, n_head={0.n_head}, n_embd={0.n_embd}, "
                "n_ctx={0.n_ctx}, vocab_size={0.vocab_size}, "
                "padded_vocab_size={0.padded_vocab_size})".format(self))


class CausalSelfAttention(nn.Module):
    def __init__(self, cfg, dropout):
        super().__init__()
        C = cfg.n_embd
        self.n_head = cfg.n_head
        self.c_attn = nn.Linear(C, 3 * C)   # [3C, C]: rows 0..C-1 make q, then k, then v
        self.c_proj = nn.Linear(C, C)
        self.attn_dropout = nn.Dropout(dropout)
        self.resid_dropout = nn.Dropout(dropout)

    def forward(self, x):
        B, T, C = x.shape
        hs = C // self.n_head
        q, k, v = self.c_attn(x).split(C, dim=2)              # each [B, T, C]
        q = q.view(B, T, self.n_head, hs).transpose(1, 2)     # [B, nh, T, hs]
        k = k.view(B, T, self.n_head, hs).transpose(1, 2)
        v = v.view(B, T, self.n_head, hs).transpose(1, 2)
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(hs))   # [B, nh, T, T]
        causal = torch.ones(T, T, dtype=torch.bool, device=x.device).tril()
        att = att.masked_fill(~causal, float("-inf"))
        att = self.attn_dropout(F.softmax(att, dim=-1))
        y = (att @ v).transpose(1, 2).contiguous().view(B, T, C)   # heads side by side
        return self.resid_dropout(self.c_proj(y))


class MLP(nn.Module):
    def __init__(self, cfg, dropout):
        super().__init__()
        C = cfg.n_embd
        self.c_fc = nn.Linear(C, 4 * C)
        self.c_proj = nn.Linear(4 * C, C)
        self.dropout = nn.Dropout(dropout)

    def forward(self, x):
        return self.dropout(self.c_proj(F.gelu(self.c_fc(x), approximate="tanh")))


class Block(nn.Module):
    def __init__(self, cfg, dropout):
        super().__init__()
        self.ln_1 = nn.LayerNorm(cfg.n_embd, eps=cfg.layernorm_eps)
        self.attn = CausalSelfAttention(cfg, dropout)
        self.ln_2 = nn.LayerNorm(cfg.n_embd, eps=cfg.layernorm_eps)
        self.mlp = MLP(cfg, dropout)

    def forward(self, x):
        x = x + self.attn(self.ln_1(x))
        return x + self.mlp(self.ln_2(x))


class TorchGPT(nn.Module):
    """GPT-2 with libphonegpt's parameter names: named_parameters() yields "wte", "wpe",
    "h.{i}.ln_1.weight", ..., "ln_f.bias" in the library's tensor order and shapes."""

    def __init__(self, cfg, dropout=0.0, dtype=torch.float32):
        super().__init__()
        self.config = cfg
        C = cfg.n_embd
        self.wte = nn.Parameter(torch.zeros(cfg.padded_vocab_size, C))
        self.wpe = nn.Parameter(torch.zeros(cfg.n_ctx, C))
        self.drop = nn.Dropout(dropout)
        self.h = nn.ModuleList([Block(cfg, dropout) for _ in range(cfg.n_layer)])
        self.ln_f = nn.LayerNorm(C, eps=cfg.layernorm_eps)
        self.init_gpt2(seed=0)
        self.to(dtype)

    def init_gpt2(self, seed):
        """GPT-2 initialisation (the library's rule, not its random stream): N(0, 0.02),
        residual projections N(0, 0.02/sqrt(2*n_layer)), biases 0, LayerNorm gains 1,
        padding rows 0."""
        g = torch.Generator().manual_seed(seed)
        resid_std = 0.02 / math.sqrt(2 * self.config.n_layer)
        with torch.no_grad():
            for name, p in self.named_parameters():
                if name.endswith("ln_1.weight") or name.endswith("ln_2.weight") or name == "ln_f.weight":
                    p.fill_(1.0)
                elif name.endswith(".bias"):
                    p.zero_()
                else:
                    std = resid_std if name.endswith("c_proj.weight") else 0.02
                    p.copy_(torch.randn(p.shape, generator=g) * std)
            self.wte[self.config.vocab_size:].zero_()

    def forward(self, idx, targets=None):
        """idx, targets: [B, T] int64 tensors (a target of -1 is not scored).
        Returns logits [B, T, vocab_size] and the mean cross-entropy (or None)."""
        B, T = idx.shape
        if T > self.config.n_ctx:
            raise ValueError(f"sequence length {T} > n_ctx {self.config.n_ctx}")
        pos = torch.arange(T, device=idx.device)
        x = self.drop(self.wte[idx] + self.wpe[pos])          # [B, T, C]
        for block in self.h:
            x = block(x)
        x = self.ln_f(x)
        logits = x @ self.wte[: self.config.vocab_size].t()   # [B, T, V]: padding never predicted
        loss = None
        if targets is not None:
            loss = F.cross_entropy(logits.reshape(B * T, -1), targets.reshape(B * T),
                                   ignore_index=-1)
        return logits, loss

    def per_position_loss(self, idx, targets):
        """Cross-entropy at every position, [B, T] (0 where target is -1)."""
        logits, _ = self.forward(idx)
        B, T, V = logits.shape
        return F.cross_entropy(logits.reshape(B * T, V), targets.reshape(B * T),
                               ignore_index=-1, reduction="none").view(B, T)


def whole_split_windows(n_tokens, window, stride):
    """The windows of pg_evaluate (the rule above pg_eval_config in phonegpt.h), as
    (start, length, first_scored) triples: inputs are tokens[start : start+length], targets
    are shifted by one, and positions first_scored..length-1 of the window are scored.
    N tokens give N-1 predictions, each scored exactly once."""
    P = n_tokens - 1
    if P < 1:
        raise ValueError("a split needs at least 2 tokens")
    W, S = window, stride
    if W < 1 or S < 1 or S > W:
        raise ValueError("need 1 <= stride <= window")
    if P <= W:
        return [(0, P, 0)]
    out = []
    if S == W:  # non-overlapping: every window scores all its positions; the last is shorter
        for start in range(0, P, W):
            out.append((start, min(W, P - start), 0))
        return out
    # sliding: window 0 scores everything, window k only its last S positions...
    out.append((0, W, 0))
    scored = W
    k = 1
    while k * S + W <= P:
        out.append((k * S, W, W - S))
        scored = k * S + W
        k += 1
    # ...and the last window ends at the split's end, scoring only what is not yet scored.
    if scored < P:
        out.append((P - W, W, W - (P - scored)))
    return out


def whole_split_loss(model, tokens, window=0, stride=0, batch_size=16):
    """Whole-split mean cross-entropy (natural log) of `model` (a TorchGPT) over `tokens`
    (1-D int sequence), with pg_evaluate's window rule; window 0 = n_ctx, stride 0 = window.
    Returns (mean_loss, n_scored, n_windows). Accumulates in float64 in window order."""
    tokens = torch.as_tensor(tokens, dtype=torch.int64)
    W = window or model.config.n_ctx
    S = stride or W
    wins = whole_split_windows(len(tokens), W, S)
    total = 0.0
    n_scored = 0
    with torch.no_grad():
        # windows of equal length are batched; the sum is still taken in window order
        i = 0
        while i < len(wins):
            L = wins[i][1]
            j = i
            while j < len(wins) and j - i < batch_size and wins[j][1] == L:
                j += 1
            x = torch.stack([tokens[s:s + L] for s, _, _ in wins[i:j]])
            y = torch.stack([tokens[s + 1:s + L + 1] for s, _, _ in wins[i:j]])
            losses = model.per_position_loss(x, y).double()
            for r, (_, _, first) in enumerate(wins[i:j]):
                total += float(losses[r, first:].sum())
                n_scored += L - first
            i = j
    return total / n_scored, n_scored, len(wins)


def from_phonegpt(model, dtype=torch.float64, dropout=0.0):
    """A TorchGPT with the geometry and weights of a phonegpt.Model."""
    twin = TorchGPT(TwinConfig.from_phonegpt(model.config), dropout=dropout, dtype=dtype)
    copy_from_phonegpt(twin, model)
    return twin


def copy_from_phonegpt(twin, model):
    """Copies every tensor of a phonegpt.Model into the twin, checking names and shapes."""
    params = model.parameters()
    own = dict(twin.named_parameters())
    if list(params) != list(own):
        raise ValueError("tensor names differ: library %s vs twin %s" % (list(params), list(own)))
    with torch.no_grad():
        for name, view in params.items():
            p = own[name]
            if tuple(p.shape) != tuple(view.shape):
                raise ValueError(f"{name}: shape {tuple(view.shape)} vs twin {tuple(p.shape)}")
            p.copy_(torch.from_numpy(view.copy()).to(p.dtype))
