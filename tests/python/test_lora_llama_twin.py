"""LoRA on the Llama family against the float64 twin of test_decoder_twin.py with PEFT's LoRA
term (scale * B (A x) on each projection the adapter targets). The twin reads the adapter only
from our PEFT export (adapter_config.json + adapter_model.safetensors, Llama keys
base_model.model.model.layers.N.self_attn.q_proj.lora_A.weight ...). Logits of base + adapter
(the fp32 merge) within 1e-5 of the largest logit, the LoRA trainer's applied-path loss within
1e-5 relative and every dA, dB within 1e-4 of its largest entry; and a folder written here in
PEFT's own layout (no phonegpt metadata) imports and gives the twin's logits."""
import json
import math
import struct

import numpy as np
import pytest
import torch

import phonegpt
from conftest import rel_err
from test_decoder_twin import randomize, twin_forward

Q, K, V, O, GATE, UP, DOWN = 16, 32, 64, 128, 256, 512, 1024
PREFIX = "base_model.model."


def read_safetensors(path):
    raw = path.read_bytes()
    n = struct.unpack("<Q", raw[:8])[0]
    header = json.loads(raw[8:8 + n])
    out = {}
    for name, t in header.items():
        if name != "__metadata__":
            assert t["dtype"] == "F32", name
            begin, end = t["data_offsets"]
            out[name] = np.frombuffer(raw[8 + n + begin:8 + n + end], dtype="<f4").reshape(t["shape"])
    return out


def write_safetensors(path, tensors):
    """As PEFT's save_pretrained writes it: F32 tensors, metadata {"format": "pt"}."""
    header, blobs, at = {"__metadata__": {"format": "pt"}}, [], 0
    for name, a in tensors.items():
        data = np.ascontiguousarray(a, dtype="<f4").tobytes()
        header[name] = {"dtype": "F32", "shape": list(a.shape), "data_offsets": [at, at + len(data)]}
        blobs.append(data)
        at += len(data)
    text = json.dumps(header).encode()
    path.write_bytes(struct.pack("<Q", len(text)) + text + b"".join(blobs))


def twin_lora(folder):
    """{module key: (A, B, scale)} as float64 leaves, from the PEFT pair's files alone."""
    cfg = json.loads((folder / "adapter_config.json").read_text())
    scale = cfg["lora_alpha"] / (math.sqrt(cfg["r"]) if cfg["use_rslora"] else cfg["r"])
    tensors = read_safetensors(folder / "adapter_model.safetensors")
    lora = {}
    for name, a in tensors.items():
        if name.endswith(".lora_A.weight"):
            key = name[len(PREFIX):-len(".lora_A.weight")]
            assert key.rsplit(".", 1)[1] in cfg["target_modules"], key
            b = tensors[name.replace("lora_A", "lora_B")]
            lora[key] = tuple(torch.tensor(np.array(f, dtype=np.float64), requires_grad=True) for f in (a, b)) + (scale,)
    return cfg, lora


def llama_model(preset):
    model = phonegpt.Model(phonegpt.ModelConfig.preset(preset), seed=3)
    randomize(model, seed=11)
    model.allow_untrained_base()  # random weights on purpose: this test compares arithmetic
    return model


CASES = [
    pytest.param("tiny-qwen3", dict(rank=3, alpha=6.0, target_modules=Q | K | V | O | GATE | UP | DOWN), id="qwen3-all"),
    pytest.param("tiny-llama", dict(rank=2, alpha=8.0, use_rslora=1, target_modules=Q | V | UP, layers=[1]),
                 id="llama-qv-up-layer1-rslora"),
]


@pytest.mark.parametrize("preset,config", CASES)
def test_exported_pair_against_twin(tmp_path, preset, config):
    B, T = 2, 11
    rng = np.random.default_rng(5)
    with llama_model(preset) as model:
        c = model.config
        layers = config.pop("layers", None)
        adapter = phonegpt.Adapter.create(model, init_seed=7, layers=layers, **config)
        for name, view in adapter.tensors(writable=True).items():
            if "lora_B" in name:
                view[...] = 0.1 * rng.standard_normal(view.shape)
        adapter.export_peft(tmp_path)
        cfg, lora = twin_lora(tmp_path)
        assert cfg["fan_in_fan_out"] is False and cfg["layers_pattern"] == ("layers" if layers else None)
        assert sorted(k + ".lora_A.weight" for k in lora) == sorted(n for n in adapter.tensors() if "lora_A" in n)

        x = rng.integers(0, c.vocab_size, size=(B, T), dtype=np.int32)
        y = rng.integers(0, c.vocab_size, size=(B, T), dtype=np.int32)
        params = {n: torch.tensor(np.array(v, dtype=np.float64)) for n, v in model.parameters().items()}
        t_logits, t_loss = twin_forward(c, params, torch.from_numpy(x).long(), torch.from_numpy(y).long(), lora)
        t_loss.backward()
        with adapter.merge(model) as merged:
            logits, merged_loss = merged.forward(x, y, n_threads=2)
        plain, _ = model.forward(x, y, n_threads=2)
        assert rel_err(plain, t_logits.detach().numpy()) > 1e-3  # the adapter matters
        assert rel_err(logits, t_logits.detach().numpy()) < 1e-5
        assert abs(merged_loss - float(t_loss)) / float(t_loss) < 1e-5
        with phonegpt.LoraTrainer(model, adapter, batch_size=B, seq_len=T, n_threads=2) as trainer:
            loss = trainer.compute_gradients(x, y)
            grads = trainer.gradients()
        assert abs(loss - float(t_loss)) / float(t_loss) < 1e-5
        for key, (a, b, _) in lora.items():
            assert rel_err(grads[key + ".lora_A.weight"], a.grad.numpy()) < 1e-4, key
            assert rel_err(grads[key + ".lora_B.weight"], b.grad.numpy()) < 1e-4, key


def test_peft_layout_folder_imports_against_twin(tmp_path):
    """A pair as PEFT writes it for a Qwen2-shaped base: every projection of layer 1, a regular
    expression for target_modules, layers_to_transform with layers_pattern "layers"."""
    rng = np.random.default_rng(8)
    with llama_model("tiny-qwen2") as model:
        c = model.config
        hd = c.head_dim or c.n_embd // c.n_head
        q, kv, h = c.n_head * hd, (c.n_kv_head or c.n_head) * hd, c.mlp_hidden
        shapes = {"self_attn.q_proj": (c.n_embd, q), "self_attn.k_proj": (c.n_embd, kv),
                  "self_attn.v_proj": (c.n_embd, kv), "self_attn.o_proj": (q, c.n_embd),
                  "mlp.gate_proj": (c.n_embd, h), "mlp.up_proj": (c.n_embd, h), "mlp.down_proj": (h, c.n_embd)}
        r = 2
        tensors = {}
        for module, (n_in, n_out) in shapes.items():
            stem = f"{PREFIX}model.layers.1.{module}"
            tensors[stem + ".lora_A.weight"] = rng.uniform(-0.3, 0.3, size=(r, n_in))
            tensors[stem + ".lora_B.weight"] = 0.1 * rng.standard_normal((n_out, r))
        write_safetensors(tmp_path / "adapter_model.safetensors", tensors)
        config = {"peft_type": "LORA", "task_type": "CAUSAL_LM", "r": r, "lora_alpha": 4, "lora_dropout": 0.05,
                  "target_modules": r"model\.layers\.\d+\.(self_attn|mlp)\.\w+_proj", "fan_in_fan_out": False,
                  "bias": "none", "use_rslora": False, "layers_to_transform": [1], "layers_pattern": "layers",
                  "rank_pattern": {}, "alpha_pattern": {}, "modules_to_save": None}
        (tmp_path / "adapter_config.json").write_text(json.dumps(config))
        adapter = phonegpt.Adapter.import_peft(tmp_path, model)
        assert adapter.config.target_modules == Q | K | V | O | GATE | UP | DOWN and adapter.layers == [1]

        config["target_modules"] = list(m.split(".")[1] for m in shapes)  # the names twin_lora checks
        (tmp_path / "adapter_config.json").write_text(json.dumps(config))
        _, lora = twin_lora(tmp_path)
        x = rng.integers(0, c.vocab_size, size=(2, 9), dtype=np.int32)
        params = {n: torch.tensor(np.array(v, dtype=np.float64)) for n, v in model.parameters().items()}
        with torch.no_grad():
            t_logits, _ = twin_forward(c, params, torch.from_numpy(x).long(), torch.zeros(2, 9).long(), lora)
        with adapter.merge(model) as merged:
            logits, _ = merged.forward(x, n_threads=2)
        assert rel_err(logits, t_logits.numpy()) < 1e-5
