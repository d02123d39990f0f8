"""A Hugging Face folder at SmolLM2-135M's size, written as transformers saves it (bf16, sharded
behind model.safetensors.index.json, its tensor names, the published config.json), imported into
fp32, bf16 and fp16 storage: 134,515,008 parameters each time, logits of a few positions against
the float64 twin (tests/python/test_decoder_twin.py) over the values the file holds, and the peak
resident memory of the bf16 import, which must hold no fp32 copy of the model.

Slow (about a minute, 3 GB of memory at its peak): ctest label "slow", run with `ctest -L slow`;
scripts/test.sh leaves it out (tests/cmake/slow.cmake)."""
import json
import os
import subprocess
import sys

import numpy as np
import pytest
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "python"))

from conftest import rel_err  # noqa: E402
from test_decoder_twin import twin_forward  # noqa: E402
from test_hf_folder import twin_config, write_folder  # noqa: E402

# HuggingFaceTB/SmolLM2-135M's config.json (the keys the importer reads, and some it ignores).
SMOLLM2_135M = dict(
    architectures=["LlamaForCausalLM"], model_type="llama", hidden_size=576, intermediate_size=1536,
    num_hidden_layers=30, num_attention_heads=9, num_key_value_heads=3, max_position_embeddings=8192,
    vocab_size=49152, rms_norm_eps=1e-5, rope_theta=100000.0, rope_scaling=None, tie_word_embeddings=True,
    attention_bias=False, mlp_bias=False, hidden_act="silu", initializer_range=0.041666666666666664,
    pretraining_tp=1, bos_token_id=0, eos_token_id=0, use_cache=True, transformers_version="4.40.1")
N_PARAMS = 134_515_008
BF16_BYTES = 2 * N_PARAMS  # every tensor in bf16 (the norms' 30 x 2 x 576 + 576 floats are fp32: +0.07 MB)


def smollm2_weights(seed):
    """transformers' names and shapes, values already bf16 (so the file holds them exactly):
    matrices ~ N(0, 0.02) as transformers initialises, norm gains around 1."""
    c = SMOLLM2_135M
    C, H, V = c["hidden_size"], c["intermediate_size"], c["vocab_size"]
    hd = C // c["num_attention_heads"]
    Q, KV = c["num_attention_heads"] * hd, c["num_key_value_heads"] * hd
    shapes = {"model.embed_tokens.weight": (V, C)}
    for l in range(c["num_hidden_layers"]):
        p = f"model.layers.{l}."
        shapes.update({p + "input_layernorm.weight": (C,), p + "self_attn.q_proj.weight": (Q, C),
                       p + "self_attn.k_proj.weight": (KV, C), p + "self_attn.v_proj.weight": (KV, C),
                       p + "self_attn.o_proj.weight": (C, Q), p + "post_attention_layernorm.weight": (C,),
                       p + "mlp.gate_proj.weight": (H, C), p + "mlp.up_proj.weight": (H, C),
                       p + "mlp.down_proj.weight": (C, H)})
    shapes["model.norm.weight"] = (C,)
    g = torch.Generator().manual_seed(seed)
    out = {}
    for name, shape in shapes.items():
        if name.endswith("norm.weight"):
            w = 1.0 + 0.1 * torch.randn(shape, generator=g)
        else:
            w = 0.02 * torch.randn(shape, generator=g)
        out[name] = w.to(torch.bfloat16).to(torch.float32)
    return out


IMPORT = r"""
import json, resource, sys
sys.path.insert(0, sys.argv[1])
import numpy as np
import phonegpt
def rss_mb(field):
    for line in open("/proc/self/status"):
        if line.startswith(field + ":"):
            return float(line.split()[1]) / 1024.0
x = np.array(json.loads(sys.argv[4]), dtype=np.int32)
before = rss_mb("VmRSS")
with phonegpt.Model.import_from(sys.argv[2], "hf", weight_storage=int(sys.argv[3])) as m:
    peak = rss_mb("VmHWM")
    logits, _ = m.forward(x, n_threads=2)
    print(json.dumps({"storage": m.weight_storage, "num_params": m.num_params, "weight_bytes": m.weight_bytes,
                      "rss_before_mb": before, "import_peak_mb": peak,
                      "logits": np.asarray(logits, dtype=np.float64).tolist()}))
"""


def import_in_own_process(folder, storage, x):
    """Imports in a fresh interpreter, so its peak resident memory is the import's own."""
    pydir = os.environ.get("PHONEGPT_PYDIR", "")
    out = subprocess.run([sys.executable, "-c", IMPORT, pydir, str(folder), str(storage), json.dumps(x.tolist())],
                         capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


def test_smollm2_sized_bf16_folder_imports_into_every_storage(tmp_path):
    weights = smollm2_weights(seed=11)
    assert sum(w.numel() for w in weights.values()) == N_PARAMS
    write_folder(tmp_path / "smollm2", SMOLLM2_135M, weights, "BF16", 3)
    assert len(json.loads((tmp_path / "smollm2" / "model.safetensors.index.json").read_text())["weight_map"]) == len(weights)

    x = np.random.default_rng(5).integers(0, SMOLLM2_135M["vocab_size"], size=(1, 6), dtype=np.int32)
    y = np.zeros_like(x)
    with torch.no_grad():
        ref, _ = twin_forward(twin_config(SMOLLM2_135M), {n: w.to(torch.float64) for n, w in weights.items()},
                              torch.from_numpy(x).long(), torch.from_numpy(y).long())
    ref = ref.numpy()
    del weights

    results = {}
    for storage, name in ((0, "fp32"), (2, "bf16"), (1, "fp16")):
        r = import_in_own_process(tmp_path / "smollm2", storage, x)
        results[name] = r
        assert r["storage"] == name
        assert r["num_params"] == N_PARAMS
        logits = np.array(r["logits"])[..., :SMOLLM2_135M["vocab_size"]]
        # fp32 and bf16 hold the file's values exactly; fp16 rounds the smallest (subnormal in fp16).
        assert rel_err(logits, ref) < (1e-5 if name != "fp16" else 1e-3), name
    # The bf16 import holds the file's bf16 matrices and nothing like an fp32 copy (twice as big).
    bf16 = results["bf16"]
    grew = bf16["import_peak_mb"] - bf16["rss_before_mb"]
    assert bf16["weight_bytes"] < 1.01 * BF16_BYTES
    assert grew < 1.15 * BF16_BYTES / 2**20, bf16
    assert grew < 0.6 * results["fp32"]["weight_bytes"] / 2**20, bf16
    print(json.dumps({k: {f: v[f] for f in ("rss_before_mb", "import_peak_mb", "weight_bytes")}
                      for k, v in results.items()}))
