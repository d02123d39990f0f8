"""The Llama-family engine against a float64 PyTorch twin written from Hugging Face's modeling
formulas (LlamaForCausalLM, Qwen2ForCausalLM, Qwen3ForCausalLM): RMSNorm, rotate-half RoPE with
Llama 3's frequency scaling, repeat_kv for grouped-query attention, q/k norms, the SiLU gate.
The twin reads the library's weights by their Hugging Face names; logits and loss must agree
within 1e-5 relative and every parameter gradient within 1e-4 relative."""
import math

import numpy as np
import pytest
import torch
import torch.nn.functional as F

import phonegpt

from conftest import rel_err

FAMILIES = ["tiny-llama", "tiny-qwen2", "tiny-qwen3"]


def inverse_frequencies(c):
    """Hugging Face's default rotary frequencies, and rope_type "llama3" when scaling is set."""
    d = c.head_dim or c.n_embd // c.n_head
    inv = 1.0 / (c.rope_theta ** (torch.arange(0, d, 2, dtype=torch.float64) / d))
    if c.rope_scaling_factor == 0:
        return inv
    factor, low, high = c.rope_scaling_factor, c.rope_low_freq_factor, c.rope_high_freq_factor
    old = c.rope_original_max_positions
    low_wavelen, high_wavelen = old / low, old / high
    wavelen = 2 * math.pi / inv
    scaled = torch.where(wavelen > low_wavelen, inv / factor, inv)
    smooth = (old / wavelen - low) / (high - low)
    smoothed = (1 - smooth) * scaled / factor + smooth * scaled
    medium = ~(wavelen < high_wavelen) & ~(wavelen > low_wavelen)
    return torch.where(medium, smoothed, scaled)


def rms_norm(x, w, eps):
    return w * (x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps))


def rotate_half(x):
    half = x.shape[-1] // 2
    return torch.cat((-x[..., half:], x[..., :half]), dim=-1)


def repeat_kv(x, n_rep):
    b, h, t, d = x.shape
    return x if n_rep == 1 else x[:, :, None].expand(b, h, n_rep, t, d).reshape(b, h * n_rep, t, d)


def twin_forward(c, p, x, y, lora=None):
    """Mean cross-entropy over targets >= 0 and the logits over the real vocabulary. lora:
    {"model.layers.N.self_attn.q_proj": (A, B, scale)} adds PEFT's scale * B (A x) to that
    projection (test_lora_llama_twin.py)."""
    B, T = x.shape
    nh, nkv = c.n_head, c.n_kv_head or c.n_head
    hd = c.head_dim or c.n_embd // nh
    eps = c.layernorm_eps
    freqs = torch.outer(torch.arange(T, dtype=torch.float64), inverse_frequencies(c))
    emb = torch.cat((freqs, freqs), dim=-1)
    cos, sin = emb.cos(), emb.sin()
    h = p["model.embed_tokens.weight"][x]
    mask = torch.full((T, T), float("-inf"), dtype=torch.float64).triu(1)
    for layer in range(c.n_layer):
        pre = f"model.layers.{layer}."

        def proj(name, inp):
            bias = p.get(pre + name + ".bias")
            out = F.linear(inp, p[pre + name + ".weight"], bias)
            if lora and pre + name in lora:
                a, b, scale = lora[pre + name]
                out = out + scale * F.linear(F.linear(inp, a), b)
            return out

        a = rms_norm(h, p[pre + "input_layernorm.weight"], eps)
        q = proj("self_attn.q_proj", a).view(B, T, nh, hd)
        k = proj("self_attn.k_proj", a).view(B, T, nkv, hd)
        v = proj("self_attn.v_proj", a).view(B, T, nkv, hd).transpose(1, 2)
        if c.qk_norm:
            q = rms_norm(q, p[pre + "self_attn.q_norm.weight"], eps)
            k = rms_norm(k, p[pre + "self_attn.k_norm.weight"], eps)
        q, k = q.transpose(1, 2), k.transpose(1, 2)
        q = q * cos + rotate_half(q) * sin
        k = k * cos + rotate_half(k) * sin
        k, v = repeat_kv(k, nh // nkv), repeat_kv(v, nh // nkv)
        scores = q @ k.transpose(-1, -2) / math.sqrt(hd) + mask
        att = (torch.softmax(scores, dim=-1) @ v).transpose(1, 2).reshape(B, T, nh * hd)
        h = h + proj("self_attn.o_proj", att)
        m = rms_norm(h, p[pre + "post_attention_layernorm.weight"], eps)
        h = h + proj("mlp.down_proj", F.silu(proj("mlp.gate_proj", m)) * proj("mlp.up_proj", m))
    h = rms_norm(h, p["model.norm.weight"], eps)
    head = p["model.embed_tokens.weight"] if c.tied_head else p["lm_head.weight"]
    logits = h @ head[: c.vocab_size].T
    loss = F.cross_entropy(logits.reshape(B * T, -1), y.reshape(-1), ignore_index=-1)
    return logits, loss


def randomize(model, seed):
    """Norm gains around 1, everything else ~ N(0, 0.3): nothing passes by symmetry."""
    rng = np.random.default_rng(seed)
    for name, view in model.parameters().items():
        gain = name.endswith("norm.weight")
        view[...] = (1.0 if gain else 0.0) + (0.2 if gain else 0.3) * rng.standard_normal(view.shape)


@pytest.mark.parametrize("family", FAMILIES)
def test_decoder_matches_float64_torch_twin(family):
    B, T = 2, 13
    rng = np.random.default_rng(7)
    with phonegpt.Model(phonegpt.ModelConfig.preset(family), seed=3) as model:
        randomize(model, seed=11)
        c = model.config
        x = rng.integers(0, c.vocab_size, size=(B, T), dtype=np.int32)
        y = rng.integers(0, c.vocab_size, size=(B, T), dtype=np.int32)
        y[1, 4] = -1  # not scored by either
        params = {n: torch.tensor(np.array(v, dtype=np.float64), requires_grad=True)
                  for n, v in model.parameters().items()}
        t_logits, t_loss = twin_forward(c, params, torch.from_numpy(x).long(), torch.from_numpy(y).long())
        t_loss.backward()

        logits, loss = model.forward(x, y, n_threads=2)
        assert rel_err(logits, t_logits.detach().numpy()) < 1e-5
        assert abs(loss - float(t_loss)) / float(t_loss) < 1e-5
        with phonegpt.Trainer(model, batch_size=B, seq_len=T, n_threads=2) as trainer:
            assert abs(trainer.compute_gradients(x, y) - float(t_loss)) / float(t_loss) < 1e-5
            grads = trainer.gradients()
            assert list(grads) == list(params)
            for name, g in grads.items():
                assert rel_err(g, params[name].grad.numpy()) < 1e-4, name
