"""Hugging Face interop, checked independently of the library's own reader.

transformers is not installable here (no Debian package, no network), so this test plays its
part: a small safetensors reader written from the contract (REFERENCE.md section 5) with only
json/struct/numpy, and a numpy GPT-2 forward written with transformers' conventions (Conv1D
weights [in, out] used as x @ W + b, c_attn split into q, k, v along the last axis, gelu_new,
tied head = wte, layer_norm_epsilon from config.json). Its logits must match pg_session_forward's
on the exported model: names, transposes, dropped padding rows and the config all have to be
right for that."""
import ctypes
import json
import math
import os
import struct

import numpy as np
import pytest

lib = ctypes.CDLL(os.environ["PHONEGPT_LIB"])
lib.pg_last_error.restype = ctypes.c_char_p


class ModelConfig(ctypes.Structure):
    _fields_ = [("struct_size", ctypes.c_uint32), ("n_layer", ctypes.c_int32), ("n_head", ctypes.c_int32),
                ("n_embd", ctypes.c_int32), ("n_ctx", ctypes.c_int32), ("vocab_size", ctypes.c_int32),
                ("padded_vocab_size", ctypes.c_int32), ("layernorm_eps", ctypes.c_float),
                # pg_model_config_default fills the whole struct of this library version (the
                # architecture fields follow): room for it, or the call writes past this object.
                ("_later_fields", ctypes.c_uint8 * 1024)]


def check(status):
    assert status == 0, lib.pg_last_error().decode()


DTYPE_SIZES = {"F64": 8, "F32": 4, "F16": 2, "BF16": 2, "I64": 8, "I32": 4, "I16": 2, "I8": 1,
               "U64": 8, "U32": 4, "U16": 2, "U8": 1, "BOOL": 1, "F8_E4M3": 1, "F8_E5M2": 1}


def read_safetensors(path):
    """Reads a .safetensors file, checking the contract; returns ({name: array}, metadata)."""
    blob = open(path, "rb").read()
    assert len(blob) >= 8
    (n,) = struct.unpack("<Q", blob[:8])
    assert 0 < n <= len(blob) - 8 and n <= 100_000_000
    raw = blob[8:8 + n]
    assert raw[:1] == b"{"

    def no_duplicates(pairs):
        keys = [k for k, _ in pairs]
        assert len(keys) == len(set(keys)), "duplicate key"
        return dict(pairs)

    header = json.loads(raw.decode("utf-8"), object_pairs_hook=no_duplicates)
    metadata = header.pop("__metadata__", {})
    assert all(isinstance(k, str) and isinstance(v, str) for k, v in metadata.items())
    data = blob[8 + n:]
    spans = []
    tensors = {}
    for name, info in header.items():
        assert set(info) == {"dtype", "shape", "data_offsets"}, name
        begin, end = info["data_offsets"]
        numel = math.prod(info["shape"])
        assert end - begin == numel * DTYPE_SIZES[info["dtype"]], name
        spans.append((begin, end, name))
        assert info["dtype"] == "F32"
        tensors[name] = np.frombuffer(data[begin:end], dtype="<f4").reshape(info["shape"])
    spans.sort()
    at = 0
    for begin, end, name in spans:
        assert begin == at, f"{name}: gap or overlap"
        at = end
    assert at == len(data), "data not covered exactly (trailing bytes or truncation)"
    return tensors, metadata


def layer_norm(x, w, b, eps):
    mu = x.mean(-1, keepdims=True)
    var = ((x - mu) ** 2).mean(-1, keepdims=True)
    return (x - mu) / np.sqrt(var + eps) * w + b


def gelu_new(x):
    return 0.5 * x * (1.0 + np.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x ** 3)))


def hf_gpt2_logits(t, cfg, ids):
    """transformers' GPT2LMHeadModel forward for one sequence, in float64."""
    g = {k: v.astype(np.float64) for k, v in t.items()}
    p = "transformer."
    C, H = cfg["n_embd"], cfg["n_head"]
    eps = cfg["layer_norm_epsilon"]
    T = len(ids)
    x = g[p + "wte.weight"][ids] + g[p + "wpe.weight"][:T]
    mask = np.triu(np.full((T, T), -np.inf), 1)
    for i in range(cfg["n_layer"]):
        h = f"{p}h.{i}."
        a = layer_norm(x, g[h + "ln_1.weight"], g[h + "ln_1.bias"], eps)
        qkv = a @ g[h + "attn.c_attn.weight"] + g[h + "attn.c_attn.bias"]   # Conv1D: [in, out]
        q, k, v = np.split(qkv, 3, axis=-1)
        heads = lambda z: z.reshape(T, H, C // H).transpose(1, 0, 2)
        q, k, v = heads(q), heads(k), heads(v)
        att = q @ k.transpose(0, 2, 1) / math.sqrt(C // H) + mask
        att = np.exp(att - att.max(-1, keepdims=True))
        att /= att.sum(-1, keepdims=True)
        y = (att @ v).transpose(1, 0, 2).reshape(T, C)
        x = x + y @ g[h + "attn.c_proj.weight"] + g[h + "attn.c_proj.bias"]
        m = layer_norm(x, g[h + "ln_2.weight"], g[h + "ln_2.bias"], eps)
        m = gelu_new(m @ g[h + "mlp.c_fc.weight"] + g[h + "mlp.c_fc.bias"])
        x = x + m @ g[h + "mlp.c_proj.weight"] + g[h + "mlp.c_proj.bias"]
    x = layer_norm(x, g[p + "ln_f.weight"], g[p + "ln_f.bias"], eps)
    return x @ g[p + "wte.weight"].T   # tied head


def test_exported_safetensors_match_transformers_conventions(tmp_path):
    c = ModelConfig()
    lib.pg_model_config_default(ctypes.byref(c))
    c.n_layer, c.n_head, c.n_embd, c.n_ctx, c.vocab_size, c.padded_vocab_size = 2, 4, 32, 16, 65, 0
    model = ctypes.c_void_p()
    check(lib.pg_model_create(ctypes.byref(c), ctypes.c_uint64(5), ctypes.byref(model)))
    try:
        # Move the weights away from their initial values (biases and LayerNorms are 0 and 1
        # there, which would hide a swapped or untransposed tensor).
        params = ctypes.POINTER(ctypes.c_float)()
        n = ctypes.c_int64()
        check(lib.pg_model_params(model, ctypes.byref(params), ctypes.byref(n)))
        rng = np.random.default_rng(1)
        view = np.ctypeslib.as_array(params, shape=(n.value,))
        view += rng.normal(0, 0.05, n.value).astype(np.float32)
        view[: 68 * 32][65 * 32:] = 0.0   # padding rows stay zero

        path = tmp_path / "model.safetensors"
        check(lib.pg_model_export(model, 2, str(path).encode()))
        tensors, metadata = read_safetensors(str(path))
        cfg = json.loads((tmp_path / "config.json").read_text())

        assert metadata["format"] == "pt"
        assert cfg["model_type"] == "gpt2" and cfg["architectures"] == ["GPT2LMHeadModel"]
        assert cfg["activation_function"] == "gelu_new"
        assert (cfg["n_layer"], cfg["n_head"], cfg["n_embd"]) == (2, 4, 32)
        assert cfg["n_positions"] == cfg["n_ctx"] == 16 and cfg["vocab_size"] == 65
        assert np.float32(cfg["layer_norm_epsilon"]) == np.float32(1e-5)
        assert "lm_head.weight" not in tensors
        expected = {"transformer.wte.weight", "transformer.wpe.weight", "transformer.ln_f.weight",
                    "transformer.ln_f.bias"}
        for i in range(2):
            for s in ["ln_1.weight", "ln_1.bias", "attn.c_attn.weight", "attn.c_attn.bias",
                      "attn.c_proj.weight", "attn.c_proj.bias", "ln_2.weight", "ln_2.bias",
                      "mlp.c_fc.weight", "mlp.c_fc.bias", "mlp.c_proj.weight", "mlp.c_proj.bias"]:
                expected.add(f"transformer.h.{i}.{s}")
        assert set(tensors) == expected
        assert tensors["transformer.wte.weight"].shape == (65, 32)
        assert tensors["transformer.h.0.attn.c_attn.weight"].shape == (32, 96)
        assert tensors["transformer.h.1.mlp.c_proj.weight"].shape == (128, 32)

        ids = [int(i) for i in rng.integers(0, 65, 16)]
        want = hf_gpt2_logits(tensors, cfg, ids)
        logits = np.zeros((16, 65), dtype=np.float32)
        ids_c = (ctypes.c_int32 * 16)(*ids)
        session = ctypes.c_void_p()
        check(lib.pg_session_create(model, None, ctypes.byref(session)))
        try:
            check(lib.pg_session_forward(session, ids_c, 1, 16, None,
                                         logits.ctypes.data_as(ctypes.POINTER(ctypes.c_float)), None))
        finally:
            lib.pg_session_free(session)
        np.testing.assert_allclose(logits, want, rtol=1e-4, atol=1e-4)
    finally:
        lib.pg_model_free(model)


def test_reader_rejects_what_the_contract_forbids(tmp_path):
    """The independent reader is strict too (so the test above could fail)."""
    def file_with(header, data):
        raw = json.dumps(header).encode()
        p = tmp_path / "x.safetensors"
        p.write_bytes(struct.pack("<Q", len(raw)) + raw + data)
        return str(p)

    ok = {"a": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]}}
    read_safetensors(file_with(ok, bytes(8)))
    with pytest.raises(AssertionError):
        read_safetensors(file_with(ok, bytes(9)))  # trailing byte
    with pytest.raises(AssertionError):
        read_safetensors(file_with({"a": {"dtype": "F32", "shape": [2], "data_offsets": [4, 12]}}, bytes(12)))
