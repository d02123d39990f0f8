"""LoRA against the float64 PyTorch twin with PEFT's LoRA forward (phonegpt.torch_lora), and the
Python LoRA API (Adapter views, PEFT import/export, LoraTrainer).

The twin reads only files: our Hugging Face GPT-2 export (model.safetensors + config.json) and
our PEFT export (adapter_config.json + adapter_model.safetensors). Tolerances, as for the model's
own twin test (test_twin.py), measured against float64: logits within 1e-5 of the largest logit
(max |ours - twin| / max |twin|), loss within 1e-5 relative, every adapter gradient (dA, dB)
within 1e-4 of its largest entry. Finite differences of the adapter gradients are checked in
C++ (tests/unit/test_lora_merge.cpp)."""
import json

import numpy as np
import pytest
import torch

import phonegpt
from phonegpt.torch_lora import apply_peft, load_hf_gpt2, lora_parameters

from conftest import randomize, random_batch, rel_err

SMALL = dict(n_layer=3, n_head=2, n_embd=32, n_ctx=24, vocab_size=11, padded_vocab_size=0)
ALL = 15


def base_model(seed=5):
    model = phonegpt.Model(phonegpt.ModelConfig(**SMALL), seed=seed)
    randomize(model, seed=99, scale=0.1)
    model.allow_untrained_base()  # random weights on purpose: this test compares arithmetic
    return model


def adapter_with_b(model, **config):
    """An adapter whose B is non-zero (a fresh one's is 0, which would hide a wrong B)."""
    layers = config.pop("layers", None)
    adapter = phonegpt.Adapter.create(model, init_seed=7, layers=layers, **config)
    rng = np.random.default_rng(2)
    for name, view in adapter.tensors(writable=True).items():
        if "lora_B" in name:
            view[...] = 0.05 * rng.standard_normal(view.shape)
    return adapter


def exported_twin(model, adapter, folder):
    """The twin as a PEFT user gets it: the HF export of the base + the PEFT pair, nothing else."""
    model.export(folder / "model.safetensors", "safetensors")
    adapter.export_peft(folder)
    twin = load_hf_gpt2(folder)
    wrapped = apply_peft(twin, folder)
    return twin, wrapped


CASES = [
    pytest.param(dict(rank=4, alpha=8.0, target_modules=1), id="c_attn-r4"),
    pytest.param(dict(rank=2, alpha=16.0, use_rslora=1, target_modules=ALL), id="all-rslora-r2"),
    pytest.param(dict(rank=3, alpha=6.0, target_modules=2 | 8, layers=[0, 2]), id="c_proj-layers02"),
]


@pytest.mark.parametrize("config", CASES)
def test_twin_reproduces_logits_and_adapter_gradients(tmp_path, config):
    rng = np.random.default_rng(11)
    with base_model() as model:
        adapter = adapter_with_b(model, **config)
        twin, wrapped = exported_twin(model, adapter, tmp_path)
        V = model.config.vocab_size
        x, y = random_batch(rng, 3, 20, V)
        y[1, 4] = -1  # not scored by either

        # Logits of base + adapter: the merged model's (fp32 merge, within 1e-5 of the applied
        # adapter's, docs/lora.md) vs the twin's applied adapter; the applied path's loss below.
        t_logits, t_loss = twin(torch.from_numpy(x).long(), torch.from_numpy(y).long())
        with adapter.merge(model) as merged:
            logits, merged_loss = merged.forward(x, y, n_threads=2)
        assert rel_err(logits, t_logits.detach().numpy()) < 1e-5
        assert abs(merged_loss - float(t_loss)) / abs(float(t_loss)) < 1e-5

        # Gradients: the LoRA trainer's readout vs float64 autograd through PEFT's forward.
        t_loss.backward()
        t_grads = {n: p.grad.numpy() for n, p in lora_parameters(wrapped).items()}
        with phonegpt.LoraTrainer(model, adapter, batch_size=3, seq_len=20, n_threads=2) as trainer:
            loss = trainer.compute_gradients(x, y)
            grads = trainer.gradients()
        assert abs(loss - float(t_loss)) / abs(float(t_loss)) < 1e-5
        assert sorted(grads) == sorted(t_grads) == sorted(adapter.tensors())
        for name, g in grads.items():
            assert g.shape == t_grads[name].shape, name
            assert not g.flags.writeable
            assert rel_err(g, t_grads[name]) < 1e-4, name
        # No base parameter of the twin has a gradient: the base is frozen on both sides.
        assert all(p.grad is None for n, p in twin.named_parameters() if "lora_" not in n)


def test_twin_merge_uses_fan_in_fan_out_as_peft_does(tmp_path):
    """PEFT's merge adds transpose(B A, fan_in_fan_out) * scaling to GPT-2's Conv1D weight
    [in, out]; merging that way in the HF layout gives our pg_lora_merge's logits."""
    rng = np.random.default_rng(4)
    with base_model() as model:
        adapter = adapter_with_b(model, rank=2, alpha=4.0, target_modules=ALL)
        twin, wrapped = exported_twin(model, adapter, tmp_path)
        cfg = json.loads((tmp_path / "adapter_config.json").read_text())
        assert cfg["fan_in_fan_out"] is True and cfg["peft_type"] == "LORA"
        x, _ = random_batch(rng, 2, 16, model.config.vocab_size)
        with torch.no_grad():
            unmerged = twin(torch.from_numpy(x).long())[0].numpy()
            for lora in wrapped.values():
                conv1d_weight = lora.base_layer.weight.t()          # the HF file's [in, out]
                merged = conv1d_weight + lora.get_delta_weight()   # PEFT's merge
                lora.base_layer.weight.copy_(merged.t())
                lora.lora_B.weight.zero_()
            merged_logits = twin(torch.from_numpy(x).long())[0].numpy()
        assert rel_err(merged_logits, unmerged) < 1e-12   # float64: merge = apply
        with adapter.merge(model) as ours:
            assert rel_err(ours.forward(x, n_threads=2)[0], merged_logits) < 1e-5
        # Merging into the base and unmerging again: within a few fp32 ulp of the weights.
        before = {n: v.copy() for n, v in model.parameters().items()}
        adapter.merge_into(model)
        assert not np.array_equal(model.parameters()["h.0.attn.c_attn.weight"], before["h.0.attn.c_attn.weight"])
        adapter.unmerge_from(model)
        for n, v in model.parameters().items():
            assert np.max(np.abs(v - before[n])) <= 4e-7, n


def test_peft_import_round_trip_and_geometry_errors(tmp_path):
    with base_model() as model:
        adapter = adapter_with_b(model, rank=2, alpha=4.0, target_modules=1 | 4, layers=[1])
        adapter.export_peft(tmp_path)
        back = phonegpt.Adapter.import_peft(tmp_path, model)
        assert back.tensor_names() == adapter.tensor_names()
        assert all(np.array_equal(a, b) for a, b in zip(back.get_weights(), adapter.get_weights()))
        assert back.config.rank == 2 and back.layers == [1]
        # A PEFT pair without our metadata (as PEFT's save_pretrained writes it): the same factors.
        cfg = json.loads((tmp_path / "adapter_config.json").read_text())
        cfg["target_modules"] = ["c_attn", "c_fc"]
        (tmp_path / "adapter_config.json").write_text(json.dumps(cfg))
        assert phonegpt.Adapter.import_peft(tmp_path, model).config.target_modules == 1 | 4
        cfg["r"] = 8
        (tmp_path / "adapter_config.json").write_text(json.dumps(cfg))
        with pytest.raises(phonegpt.FormatError, match="r = 8"):
            phonegpt.Adapter.import_peft(tmp_path, model)
        cfg["r"] = 2
        (tmp_path / "adapter_config.json").write_text(json.dumps(cfg))
        wide = phonegpt.Model(phonegpt.ModelConfig(**dict(SMALL, n_embd=64)), seed=1)
        with pytest.raises(phonegpt.GeometryError, match="n_embd = 64"):
            phonegpt.Adapter.import_peft(tmp_path, wide)
        wide.close()


def test_adapter_views_are_read_only_unless_asked_and_see_training(tmp_path):
    with base_model() as model:
        adapter = phonegpt.Adapter.create(model, rank=2, target_modules=1)
        a0 = adapter.lora_A(0)
        b0 = adapter.lora_B(0, "attn.c_attn")
        assert a0.shape == (2, 32) and b0.shape == (96, 2) and a0.dtype == np.float32
        assert not a0.flags.writeable and not np.any(b0)
        with pytest.raises(ValueError):
            a0[0, 0] = 1.0
        assert np.array_equal(adapter.tensors()["h.0.attn.c_attn.lora_A.weight"], a0)
        with pytest.raises(phonegpt.InvalidArgument, match="no adapter tensor"):
            adapter.lora_A(0, "mlp.c_fc")
        info = adapter.base_info()
        assert info["n_embd"] == 32 and info["provenance"]["kind"] == "initialised"
        assert info["provenance"]["init_seed"] == "5" and "never trained" in info["provenance"]["description"]

        tokens = np.tile(np.arange(11, dtype=np.int32), 60)
        with phonegpt.LoraTrainer(model, adapter, batch_size=4, seq_len=16, lr_max=1e-2, lr_min=1e-2,
                                  warmup_steps=0, n_threads=2) as trainer:
            assert trainer.adapter is adapter and trainer.model is model
            before = trainer.evaluate(tokens[:200]).mean_loss
            trainer.set_data(tokens)
            results = trainer.train(15)
            assert [r.step for r in results] == list(range(1, 16))
            assert np.any(b0)   # the view shows the trained B without a copy
            assert trainer.evaluate(tokens[:200]).mean_loss < before
            r = trainer.step_batch(tokens[:32].reshape(2, 16), tokens[1:33].reshape(2, 16))
            assert r.step == 16
            # The full Trainer's getters, over the LoRA family's C calls.
            assert trainer.step_count == 16 and trainer.config.seq_len == 16 and trainer.n_threads == 2
            assert trainer.lr_at(3) == pytest.approx(1e-2) and trainer.config.batch_size == 4
            trainer.n_threads = 1
            assert trainer.n_threads == 1
            trainer.n_threads = 2
            path = tmp_path / "a.train.safetensors"
            trainer.save(path)
            nxt = trainer.step()
        with phonegpt.LoraTrainer.resume(path, model) as resumed:
            resumed.set_data(tokens)
            again = resumed.step()
            assert again.loss == nxt.loss and again.step == 17
            assert resumed.adapter.training_record()["steps"] == 17
        assert adapter.training_record()["steps"] == 17
        with pytest.raises(phonegpt.StateError, match="closed"):
            trainer.step()
