"""Cross-check of libphonegpt's model against its PyTorch twin (phonegpt.torch_gpt), float64
in torch so that the comparison measures the library's error: loss and logits within 1e-5
relative, every parameter gradient within 1e-4 relative, whole-split evaluation within 1e-5."""
import numpy as np
import pytest
import torch

import phonegpt
from phonegpt.torch_gpt import from_phonegpt, whole_split_loss, whole_split_windows

from conftest import randomize, random_batch, rel_err

SMALL = dict(n_layer=2, n_head=2, n_embd=32, n_ctx=24, vocab_size=11, padded_vocab_size=0)


def make_model(kind, seed):
    config = phonegpt.ModelConfig.preset(kind) if isinstance(kind, str) else phonegpt.ModelConfig(**kind)
    return phonegpt.Model(config, seed=seed)


def twin_outputs(model, x, y):
    twin = from_phonegpt(model, dtype=torch.float64)
    logits, loss = twin(torch.from_numpy(x).long(), torch.from_numpy(y).long())
    loss.backward()
    grads = {n: p.grad.numpy() for n, p in twin.named_parameters()}
    return logits.detach().numpy(), float(loss), grads


CASES = [
    pytest.param(SMALL, 3, 20, id="small-B3-T20"),
    pytest.param("tiny", 4, 16, id="tiny-B4-T16"),
    pytest.param("phonegpt", 2, 128, id="phonegpt-B2-T128"),
]


@pytest.mark.parametrize("kind,B,T", CASES)
def test_forward_and_gradients_match_twin(kind, B, T):
    rng = np.random.default_rng(1234)
    with make_model(kind, seed=5) as model:
        randomize(model, seed=99, scale=0.1)
        V = model.config.vocab_size
        x, y = random_batch(rng, B, T, V)
        y[0, 1] = -1  # a skipped target: not scored by either
        logits, loss = model.forward(x, y, n_threads=2)
        t_logits, t_loss, t_grads = twin_outputs(model, x, y)

        assert logits.shape == (B, T, V)
        assert rel_err(logits, t_logits) < 1e-5
        assert abs(loss - t_loss) / abs(t_loss) < 1e-5

        with phonegpt.Trainer(model, batch_size=B, seq_len=T, n_threads=2) as trainer:
            g_loss = trainer.compute_gradients(x, y)
            assert abs(g_loss - t_loss) / abs(t_loss) < 1e-5
            grads = trainer.gradients()
            assert list(grads) == list(t_grads)
            for name, g in grads.items():
                assert g.shape == t_grads[name].shape, name
                assert rel_err(g, t_grads[name]) < 1e-4, name
            # padding rows of wte are never looked up nor predicted: no gradient
            assert not np.any(grads["wte"][V:])


def test_padding_rows_do_not_change_logits():
    rng = np.random.default_rng(3)
    with make_model(SMALL, seed=1) as model:
        randomize(model, seed=4)
        x, y = random_batch(rng, 2, 10, model.config.vocab_size)
        before, loss_before = model.forward(x, y)
        model.parameter("wte")[model.config.vocab_size:] = 1e3
        after, loss_after = model.forward(x, y)
        assert np.array_equal(before, after)
        assert loss_before == loss_after


def test_causal_mask_matches_twin_prefixes():
    """Changing tokens after position t changes no logit at positions <= t (both models)."""
    rng = np.random.default_rng(8)
    with make_model(SMALL, seed=2) as model:
        randomize(model, seed=6)
        x, _ = random_batch(rng, 1, 20, model.config.vocab_size)
        x2 = x.copy()
        x2[0, 12:] = (x2[0, 12:] + 1) % model.config.vocab_size
        a, _ = model.forward(x)
        b, _ = model.forward(x2)
        assert np.array_equal(a[0, :12], b[0, :12])
        assert not np.array_equal(a[0, 12:], b[0, 12:])


# ---- whole-split evaluation (pg_evaluate's window rule) -------------------------------------

@pytest.mark.parametrize("n,window,stride", [
    (300, 0, 0),       # non-overlapping windows of n_ctx, a short last one
    (24, 0, 0),        # fewer predictions than a window: one short window
    (301, 10, 10),     # non-overlapping, window < n_ctx
    (300, 16, 5),      # sliding: last window ends at the split's end
    (203, 12, 4),
    (100, 16, 16),
])
def test_whole_split_evaluation_matches_twin(n, window, stride):
    rng = np.random.default_rng(n + window + stride)
    with make_model("tiny", seed=11) as model:
        randomize(model, seed=12, scale=0.15)
        tokens = rng.integers(0, model.config.vocab_size, size=n, dtype=np.int32)
        r = model.evaluate(tokens, window=window, stride=stride, batch_size=3, n_threads=2)
        twin = from_phonegpt(model, dtype=torch.float64)
        t_loss, t_scored, t_windows = whole_split_loss(twin, tokens, window, stride)
        assert r.n_scored == n - 1 == t_scored
        assert r.n_windows == t_windows
        assert abs(r.mean_loss - t_loss) / t_loss < 1e-5
        assert r.bits_per_token == pytest.approx(r.mean_loss / np.log(2), rel=1e-12)


def test_window_rule_scores_every_prediction_once():
    for n in range(2, 60):
        for W in range(1, 12):
            for S in range(1, W + 1):
                scored = []
                for start, length, first in whole_split_windows(n, W, S):
                    assert 0 <= start and start + length <= n - 1 and length <= W
                    scored.extend(range(start + first, start + length))
                assert scored == list(range(n - 1)), (n, W, S)


def test_evaluation_does_not_depend_on_batch_size_or_threads():
    rng = np.random.default_rng(21)
    with make_model("tiny", seed=3) as model:
        tokens = rng.integers(0, 65, size=500, dtype=np.int32)
        a = model.evaluate(tokens, window=16, stride=6, batch_size=1, n_threads=1)
        b = model.evaluate(tokens, window=16, stride=6, batch_size=7, n_threads=2)
        assert a.mean_loss == pytest.approx(b.mean_loss, rel=1e-6)
        assert (a.n_scored, a.n_windows) == (b.n_scored, b.n_windows)


def documented_lr(s, lr_max, lr_min, warmup, total):
    """The cosine schedule exactly as phonegpt.h documents it (independent of the library)."""
    if s < warmup:
        return lr_max * (s + 1) / warmup
    if s >= total:
        return lr_min
    p = (s - warmup) / (total - warmup)
    return lr_min + (lr_max - lr_min) * (1 + np.cos(np.pi * p)) / 2


def test_adamw_steps_match_torch_adamw_with_decay_clipping_and_schedule():
    """Eight AdamW steps of the library against torch.optim.AdamW on the float64 twin, from the
    same weights on the same batches: weight decay on the linear weights only, clipping that
    bites on some steps and not on others, a warm-up + cosine schedule. Step 1 alone would not
    do: there the moments and the bias correction cancel (the update is lr * sign(g))."""
    steps, warmup, lr_max, lr_min, clip, wd = 8, 3, 2e-2, 2e-3, 1.0, 0.1
    B, T = 3, 12
    rng = np.random.default_rng(2026)
    with make_model(SMALL, seed=4) as model:
        randomize(model, seed=17, scale=0.1)
        V = model.config.vocab_size
        batches = [random_batch(rng, B, T, V) for _ in range(steps)]
        twin = from_phonegpt(model, dtype=torch.float64)
        named = dict(twin.named_parameters())
        decayed = [n for n in named if n.endswith(("c_attn.weight", "c_proj.weight", "c_fc.weight"))]
        assert len(decayed) == 4 * SMALL["n_layer"]
        groups = [{"params": [named[n] for n in decayed], "weight_decay": wd},
                  {"params": [p for n, p in named.items() if n not in decayed], "weight_decay": 0.0}]
        opt = torch.optim.AdamW(groups, lr=lr_max, betas=(0.9, 0.95), eps=1e-8)
        clipped = 0
        with phonegpt.Trainer(model, batch_size=B, seq_len=T, n_threads=2, schedule="cosine", lr_max=lr_max,
                              lr_min=lr_min, warmup_steps=warmup, total_steps=6, weight_decay=wd,
                              grad_clip=clip, beta1=0.9, beta2=0.95, eps=1e-8) as trainer:
            for s, (x, y) in enumerate(batches):
                r = trainer.step_batch(x, y)
                lr = documented_lr(s, lr_max, lr_min, warmup, 6)
                assert abs(r.lr - lr) <= 1e-7 * lr, (s, r.lr, lr)

                opt.zero_grad()
                _, loss = twin(torch.from_numpy(x).long(), torch.from_numpy(y).long())
                loss.backward()
                norm = float(torch.sqrt(sum((p.grad ** 2).sum() for p in named.values())))
                assert abs(r.grad_norm - norm) <= 1e-4 * norm, (s, r.grad_norm, norm)
                if norm > clip:  # the documented rule: scale by clip / norm
                    clipped += 1
                    for p in named.values():
                        p.grad.mul_(clip / norm)
                for g in opt.param_groups:
                    g["lr"] = lr
                opt.step()

                # The weights after each step. The key third of c_attn.bias is left out: its
                # exact gradient is 0 (a key bias adds q.b_k to every score of a query's row,
                # which the softmax ignores), so float32 noise of 1e-9 there becomes an update
                # of about lr in Adam while float64 noise of 1e-17 stays far below eps.
                C = SMALL["n_embd"]
                for name, p in named.items():
                    ours, theirs = model.parameter(name, writable=False), p.detach().numpy()
                    if name.endswith("c_attn.bias"):
                        ours, theirs = np.delete(ours, np.s_[C:2 * C]), np.delete(theirs, np.s_[C:2 * C])
                    # 1e-4: float32 against float64 through Adam's division by sqrt(v) (measured
                    # worst 5.5e-5, on near-zero gradients of c_attn.weight); a decay, bias
                    # correction or beta2 mistake is 1e-3 or more.
                    assert rel_err(ours, theirs) < 1e-4, (s, name, rel_err(ours, theirs))
        assert 0 < clipped < steps, clipped  # both branches of clipping were exercised
