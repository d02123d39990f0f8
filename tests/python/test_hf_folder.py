"""Hugging Face model folders through the phonegpt CLI (export --format hf, import --format hf)
and the binding: the folder a model is exported to imports back to the same weights, in the
storage asked for."""
import json

import numpy as np
import pytest

import phonegpt
from conftest import randomize, rel_err, run_cli


def test_cli_exports_and_imports_a_folder(exe, tmp_path):
    with phonegpt.Model("tiny", seed=3) as m:
        randomize(m, seed=4)
        m.parameter("wte")[m.config.vocab_size:] = 0  # padding rows are not in a Hugging Face file
        m.save(tmp_path / "model.bin")
        want = m.parameters()
    folder = tmp_path / "hf"
    out = run_cli(exe, "export", "--checkpoint", tmp_path / "model.bin", "--format", "hf", "--out", folder)[0]
    assert out["ok"] and (folder / "config.json").is_file()
    run_cli(exe, "import", "--format", "hf", "--in", folder, "--out", tmp_path / "back.bin")
    with phonegpt.Model.load(tmp_path / "back.bin") as back:
        for (name, a), (name2, b) in zip(want.items(), back.parameters().items()):
            assert name == name2 and np.array_equal(a, b), name
    run_cli(exe, "import", "--format", "hf", "--in", folder, "--out", tmp_path / "half.bin", "--weights", "bf16")
    with phonegpt.Model.load(tmp_path / "half.bin") as half:
        assert half.weight_storage == "bf16"
    bad = run_cli(exe, "import", "--format", "hf", "--in", tmp_path / "nowhere", "--out", tmp_path / "x.bin", code=1)[0]
    assert not bad["ok"] and "config.json" in json.dumps(bad)


# ---- folders written as transformers writes them, from a float64 twin ------------------------
import struct
from types import SimpleNamespace

import torch

from test_decoder_twin import twin_forward

# config.json of each tiny family, with the keys transformers writes (those the reader ignores too).
FAMILY_CONFIGS = {
    "llama": dict(architectures=["LlamaForCausalLM"], model_type="llama", hidden_size=32, intermediate_size=48,
                  num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2, head_dim=8,
                  max_position_embeddings=64, vocab_size=68, rms_norm_eps=1e-5, rope_theta=10000.0,
                  rope_scaling=dict(rope_type="llama3", factor=4.0, low_freq_factor=1.0, high_freq_factor=4.0,
                                    original_max_position_embeddings=8),
                  tie_word_embeddings=True, attention_bias=False, mlp_bias=False, hidden_act="silu",
                  attention_dropout=0.0, initializer_range=0.02, pretraining_tp=1, bos_token_id=1, eos_token_id=2,
                  use_cache=True, transformers_version="4.46.0"),
    "qwen2": dict(architectures=["Qwen2ForCausalLM"], model_type="qwen2", hidden_size=32, intermediate_size=64,
                  num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=1, max_position_embeddings=64,
                  vocab_size=68, rms_norm_eps=1e-6, rope_theta=1000000.0, rope_scaling=None,
                  tie_word_embeddings=True, hidden_act="silu", use_sliding_window=False, sliding_window=64,
                  max_window_layers=2, attention_dropout=0.0, use_mrope=False, transformers_version="4.46.0"),
    "qwen3": dict(architectures=["Qwen3ForCausalLM"], model_type="qwen3", hidden_size=32, intermediate_size=48,
                  num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2, head_dim=16,
                  max_position_embeddings=64, vocab_size=68, rms_norm_eps=1e-6, rope_theta=1000000.0,
                  rope_scaling=None, tie_word_embeddings=False, attention_bias=False, hidden_act="silu",
                  use_sliding_window=False, sliding_window=None, max_window_layers=2, attention_dropout=0.0,
                  transformers_version="4.51.0"),
}


def twin_config(cfg):
    """The twin's view of a config.json (the attribute names test_decoder_twin reads)."""
    s = cfg.get("rope_scaling") or {}
    return SimpleNamespace(
        n_layer=cfg["num_hidden_layers"], n_head=cfg["num_attention_heads"], n_embd=cfg["hidden_size"],
        n_kv_head=cfg["num_key_value_heads"], head_dim=cfg.get("head_dim", cfg["hidden_size"] // cfg["num_attention_heads"]),
        layernorm_eps=cfg["rms_norm_eps"], rope_theta=cfg["rope_theta"], vocab_size=cfg["vocab_size"],
        rope_scaling_factor=s.get("factor", 0), rope_low_freq_factor=s.get("low_freq_factor", 1.0),
        rope_high_freq_factor=s.get("high_freq_factor", 4.0),
        rope_original_max_positions=s.get("original_max_position_embeddings", 8192),
        qk_norm=cfg["model_type"] == "qwen3", tied_head=cfg["tie_word_embeddings"])


def twin_weights(cfg, seed):
    """transformers' names and shapes for this config, random float64 values."""
    g = torch.Generator().manual_seed(seed)
    C, H, L, V = cfg["hidden_size"], cfg["intermediate_size"], cfg["num_hidden_layers"], cfg["vocab_size"]
    hd = cfg.get("head_dim", C // cfg["num_attention_heads"])
    Q, KV = cfg["num_attention_heads"] * hd, cfg["num_key_value_heads"] * hd
    qkv_bias = cfg["model_type"] == "qwen2"
    shapes = {"model.embed_tokens.weight": (V, C)}
    for l in range(L):
        p = f"model.layers.{l}."
        shapes[p + "input_layernorm.weight"] = (C,)
        for n, rows in (("q_proj", Q), ("k_proj", KV), ("v_proj", KV)):
            shapes[p + f"self_attn.{n}.weight"] = (rows, C)
            if qkv_bias:
                shapes[p + f"self_attn.{n}.bias"] = (rows,)
        if cfg["model_type"] == "qwen3":
            shapes[p + "self_attn.q_norm.weight"] = (hd,)
            shapes[p + "self_attn.k_norm.weight"] = (hd,)
        shapes[p + "self_attn.o_proj.weight"] = (C, Q)
        shapes[p + "post_attention_layernorm.weight"] = (C,)
        shapes[p + "mlp.gate_proj.weight"] = (H, C)
        shapes[p + "mlp.up_proj.weight"] = (H, C)
        shapes[p + "mlp.down_proj.weight"] = (C, H)
    shapes["model.norm.weight"] = (C,)
    if not cfg["tie_word_embeddings"]:
        shapes["lm_head.weight"] = (V, C)
    out = {}
    for name, shape in shapes.items():
        w = torch.randn(shape, generator=g, dtype=torch.float64) * (0.2 if name.endswith("norm.weight") else 0.3)
        out[name] = w + 1.0 if name.endswith("norm.weight") else w
    return out


def write_safetensors(path, tensors, dtype):
    """The safetensors layout: 8-byte header length, the JSON header, the data in order."""
    header, blobs, offset = {"__metadata__": {"format": "pt"}}, [], 0
    for name, t in tensors.items():
        if dtype == "BF16":
            data = t.to(torch.bfloat16).view(torch.int16).numpy().tobytes()
        else:
            data = t.to(torch.float32).numpy().tobytes()
        header[name] = {"dtype": dtype, "shape": list(t.shape), "data_offsets": [offset, offset + len(data)]}
        blobs.append(data)
        offset += len(data)
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)
    path.write_bytes(struct.pack("<Q", len(text)) + text + b"".join(blobs))


def write_folder(folder, cfg, weights, dtype, shards):
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps(dict(cfg, torch_dtype="bfloat16" if dtype == "BF16" else "float32"),
                                                   indent=2))
    if shards == 1:
        write_safetensors(folder / "model.safetensors", weights, dtype)
        return
    names = list(weights)
    weight_map = {}
    for i in range(shards):
        part = names[i::shards]
        file = f"model-{i + 1:05d}-of-{shards:05d}.safetensors"
        write_safetensors(folder / file, {n: weights[n] for n in part}, dtype)
        weight_map.update({n: file for n in part})
    (folder / "model.safetensors.index.json").write_text(json.dumps({"metadata": {"total_size": 0},
                                                                     "weight_map": weight_map}, indent=2))


@pytest.mark.parametrize("family", sorted(FAMILY_CONFIGS))
@pytest.mark.parametrize("dtype,shards,storage", [("F32", 1, -1), ("F32", 2, -1), ("BF16", 2, -1), ("BF16", 1, 0)])
def test_folder_written_like_transformers_imports_to_the_twins_logits(tmp_path, family, dtype, shards, storage):
    cfg = FAMILY_CONFIGS[family]
    weights = twin_weights(cfg, seed=5)
    write_folder(tmp_path / "hf", cfg, weights, dtype, shards)
    if dtype == "BF16":  # the truth is the twin over the values the file holds
        weights = {n: w.to(torch.bfloat16).to(torch.float64) for n, w in weights.items()}
    rng = np.random.default_rng(3)
    B, T = 2, 11
    x = rng.integers(0, cfg["vocab_size"], size=(B, T), dtype=np.int32)
    y = rng.integers(0, cfg["vocab_size"], size=(B, T), dtype=np.int32)
    t_logits, t_loss = twin_forward(twin_config(cfg), weights, torch.from_numpy(x).long(), torch.from_numpy(y).long())
    with phonegpt.Model.import_from(tmp_path / "hf", "hf", weight_storage=storage) as model:
        want_storage = "bf16" if dtype == "BF16" and storage == -1 else "fp32"
        assert model.weight_storage == want_storage
        logits, loss = model.forward(x, y, n_threads=2)
        assert rel_err(logits, t_logits.numpy()) < 1e-5
        assert abs(loss - float(t_loss)) / float(t_loss) < 1e-5
        if want_storage == "fp32":  # every tensor under its transformers name, the file's values exactly
            for name, view in model.parameters().items():
                assert np.array_equal(view, weights[name].numpy().astype(np.float32)), name
            model.export(tmp_path / "again", "hf")
            with phonegpt.Model.import_from(tmp_path / "again", "hf") as again:
                assert np.array_equal(again.forward(x, y, n_threads=2)[0], logits)


def test_folder_refusals_name_the_problem(tmp_path):
    cfg = FAMILY_CONFIGS["qwen3"]
    weights = twin_weights(cfg, seed=1)
    missing = dict(weights)
    del missing["model.layers.1.mlp.up_proj.weight"]
    write_folder(tmp_path / "missing", cfg, missing, "F32", 1)
    with pytest.raises(phonegpt.GeometryError, match="up_proj.weight\" is missing"):
        phonegpt.Model.import_from(tmp_path / "missing", "hf")
    wrong = dict(weights, **{"model.norm.weight": torch.ones(31, dtype=torch.float64)})
    write_folder(tmp_path / "wrong", cfg, wrong, "F32", 1)
    with pytest.raises(phonegpt.GeometryError, match="model.norm.weight\" has shape \\[31\\]"):
        phonegpt.Model.import_from(tmp_path / "wrong", "hf")
    extra = dict(weights, **{"model.layers.0.mlp.experts.0.weight": torch.ones(2, dtype=torch.float64)})
    write_folder(tmp_path / "extra", cfg, extra, "F32", 1)
    with pytest.raises(phonegpt.FormatError, match="unexpected tensor"):
        phonegpt.Model.import_from(tmp_path / "extra", "hf")
    write_folder(tmp_path / "sliding", dict(cfg, use_sliding_window=True), weights, "F32", 1)
    with pytest.raises(phonegpt.Unsupported, match="use_sliding_window"):
        phonegpt.Model.import_from(tmp_path / "sliding", "hf")
