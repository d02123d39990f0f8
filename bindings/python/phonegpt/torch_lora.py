"""PEFT's LoRA on the PyTorch twin (phonegpt.torch_gpt): an independent reference for
libphonegpt's adapters, written from PEFT's definitions (PEFT itself is not installable here).

What PEFT's LoRA layer computes for a wrapped linear (peft/tuners/lora/layer.py, `Linear`):
`result = base_layer(x) + lora_B(lora_A(lora_dropout(x))) * scaling`, with `lora_A` an
nn.Linear(in_features, r, bias=False) (weight [r, in]), `lora_B` an nn.Linear(r, out_features,
bias=False) (weight [out, r]), `scaling = lora_alpha / r`, or `lora_alpha / sqrt(r)` with
`use_rslora`. Merging adds `get_delta_weight() = transpose(B @ A, fan_in_fan_out) * scaling` to
the base weight: for GPT-2's Conv1D (weights [in, out], fan_in_fan_out = True) that is (B A)^T.
Which modules are wrapped follows PEFT's matching of `target_modules` against module keys
("transformer.h.3.attn.c_attn"): a list entry matches a key equal to it or ending in "." + it, a
string is a regular expression over the whole key ("all-linear": every block linear here), and
`layers_to_transform` keeps the layers listed.

Files are read with a small safetensors reader (json / struct / numpy): the Hugging Face GPT-2
export (`model.safetensors` + `config.json`, Conv1D layout, transposed here to the twin's
nn.Linear layout) and the PEFT pair (`adapter_config.json` + `adapter_model.safetensors`).
"""

import json
import math
import os
import re
import struct

import numpy as np
import torch
import torch.nn as nn

from .torch_gpt import TorchGPT, TwinConfig

__all__ = ["read_safetensors", "load_hf_gpt2", "LoraLinear", "apply_peft", "lora_parameters"]

_DTYPES = {"F64": np.float64, "F32": np.float32, "F16": np.float16}
_MODULES = ["attn.c_attn", "attn.c_proj", "mlp.c_fc", "mlp.c_proj"]


def read_safetensors(path):
    """({name: float64 array}, metadata) of a safetensors file (F64, F32, F16, BF16)."""
    with open(path, "rb") as f:
        blob = f.read()
    (n,) = struct.unpack("<Q", blob[:8])
    header = json.loads(blob[8:8 + n].decode("utf-8"))
    metadata = header.pop("__metadata__", {})
    data = blob[8 + n:]
    tensors = {}
    for name, info in header.items():
        begin, end = info["data_offsets"]
        raw = data[begin:end]
        if info["dtype"] == "BF16":  # the top half of an fp32
            bits = np.frombuffer(raw, dtype="<u2").astype(np.uint32) << 16
            values = bits.view(np.float32)
        else:
            values = np.frombuffer(raw, dtype=np.dtype(_DTYPES[info["dtype"]]).newbyteorder("<"))
        tensors[name] = values.astype(np.float64).reshape(info["shape"])
    return tensors, metadata


def load_hf_gpt2(folder, weights="model.safetensors", dtype=torch.float64):
    """A TorchGPT holding a Hugging Face GPT-2 export (config.json + `weights` in `folder`)."""
    cfg = json.load(open(os.path.join(folder, "config.json")))
    tensors, _ = read_safetensors(os.path.join(folder, weights))
    V, C = cfg["vocab_size"], cfg["n_embd"]
    twin = TorchGPT(TwinConfig(cfg["n_layer"], cfg["n_head"], C, cfg["n_positions"], V,
                               layernorm_eps=cfg["layer_norm_epsilon"]), dtype=dtype)
    own = dict(twin.named_parameters())
    with torch.no_grad():
        own["wte"].zero_()
        own["wte"][:V] = torch.from_numpy(tensors["transformer.wte.weight"])   # padding rows stay 0
        own["wpe"].copy_(torch.from_numpy(tensors["transformer.wpe.weight"]))
        for name, p in own.items():
            if name in ("wte", "wpe"):
                continue
            t = torch.from_numpy(tensors["transformer." + name])
            is_conv1d = name.endswith(".weight") and any(m in name for m in _MODULES)
            p.copy_(t.t() if is_conv1d else t)  # Conv1D [in, out] -> nn.Linear [out, in]
    return twin


class LoraLinear(nn.Module):
    """PEFT's LoRA around a frozen linear: base_layer(x) + lora_B(lora_A(lora_dropout(x))) * scaling."""

    def __init__(self, base_layer, r, lora_alpha, lora_dropout=0.0, use_rslora=False, fan_in_fan_out=True):
        super().__init__()
        self.base_layer = base_layer
        for p in self.base_layer.parameters():
            p.requires_grad_(False)
        dtype = base_layer.weight.dtype
        self.lora_A = nn.Linear(base_layer.in_features, r, bias=False, dtype=dtype)
        self.lora_B = nn.Linear(r, base_layer.out_features, bias=False, dtype=dtype)
        self.lora_dropout = nn.Dropout(lora_dropout) if lora_dropout > 0 else nn.Identity()
        self.scaling = lora_alpha / math.sqrt(r) if use_rslora else lora_alpha / r
        self.fan_in_fan_out = fan_in_fan_out
        with torch.no_grad():  # PEFT's default: A kaiming-uniform(a = sqrt(5)), B zero
            nn.init.kaiming_uniform_(self.lora_A.weight, a=math.sqrt(5))
            nn.init.zeros_(self.lora_B.weight)

    def forward(self, x):
        result = self.base_layer(x)
        return result + self.lora_B(self.lora_A(self.lora_dropout(x))) * self.scaling

    def get_delta_weight(self):
        """What merging adds to the base weight in PEFT's layout for this module: [in, out]
        (GPT-2's Conv1D) with fan_in_fan_out, [out, in] otherwise."""
        delta = self.lora_B.weight @ self.lora_A.weight * self.scaling
        return delta.t() if self.fan_in_fan_out else delta


def _targeted(targets, key):
    if isinstance(targets, str):
        return targets == "all-linear" or re.fullmatch(targets, key) is not None
    return any(key == t or key.endswith("." + t) for t in targets)


def apply_peft(twin, folder):
    """Wraps the twin's block linears as `folder`/adapter_config.json says and loads
    `folder`/adapter_model.safetensors into them. Freezes every base parameter. Returns
    {module name "h.{i}.{module}": LoraLinear}."""
    cfg = json.load(open(os.path.join(folder, "adapter_config.json")))
    assert cfg.get("peft_type", "LORA") == "LORA"
    tensors, _ = read_safetensors(os.path.join(folder, "adapter_model.safetensors"))
    for p in twin.parameters():
        p.requires_grad_(False)
    layers = cfg.get("layers_to_transform")
    if isinstance(layers, int):
        layers = [layers]
    wrapped = {}
    for i, block in enumerate(twin.h):
        if layers is not None and i not in layers:
            continue
        for module in _MODULES:
            if not _targeted(cfg["target_modules"], f"transformer.h.{i}.{module}"):
                continue
            parent_name, child_name = module.split(".")
            parent = getattr(block, parent_name)
            lora = LoraLinear(getattr(parent, child_name), cfg["r"], cfg["lora_alpha"], cfg.get("lora_dropout", 0.0),
                              cfg.get("use_rslora", False), cfg.get("fan_in_fan_out", False))
            setattr(parent, child_name, lora)
            prefix = f"base_model.model.transformer.h.{i}.{module}."
            with torch.no_grad():
                lora.lora_A.weight.copy_(torch.from_numpy(tensors[prefix + "lora_A.weight"]))
                lora.lora_B.weight.copy_(torch.from_numpy(tensors[prefix + "lora_B.weight"]))
            wrapped[f"h.{i}.{module}"] = lora
    return wrapped


def lora_parameters(wrapped):
    """{"h.{i}.{module}.lora_A.weight": parameter, ...}: the adapter's tensors under libphonegpt's names."""
    out = {}
    for name, lora in wrapped.items():
        out[name + ".lora_A.weight"] = lora.lora_A.weight
        out[name + ".lora_B.weight"] = lora.lora_B.weight
    return out
