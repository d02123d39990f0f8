"""Forward cross-check of libphonegpt against its PyTorch twin, driven through ctypes over the
shared library (until the pybind11 binding lands; then test_twin.py covers this and the
gradients). float64 in torch: loss and logits within 1e-5 relative."""
import ctypes
import importlib.util
import os

import numpy as np
import pytest
import torch

SRC = os.environ.get("PG_SOURCE_DIR", os.path.join(os.path.dirname(__file__), "..", ".."))
_spec = importlib.util.spec_from_file_location(
    "torch_gpt", os.path.join(SRC, "bindings", "python", "phonegpt", "torch_gpt.py"))
torch_gpt = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(torch_gpt)


class ModelConfig(ctypes.Structure):
    _fields_ = [("struct_size", ctypes.c_uint32), ("n_layer", ctypes.c_int32), ("n_head", ctypes.c_int32),
                ("n_embd", ctypes.c_int32), ("n_ctx", ctypes.c_int32), ("vocab_size", ctypes.c_int32),
                ("padded_vocab_size", ctypes.c_int32), ("layernorm_eps", ctypes.c_float)]


class TensorInfo(ctypes.Structure):
    _fields_ = [("struct_size", ctypes.c_uint32), ("name", ctypes.c_char_p), ("n_dims", ctypes.c_int32),
                ("shape", ctypes.c_int64 * 4), ("numel", ctypes.c_int64), ("offset", ctypes.c_int64),
                ("data", ctypes.POINTER(ctypes.c_float))]


lib = ctypes.CDLL(os.environ["PHONEGPT_LIB"])
lib.pg_last_error.restype = ctypes.c_char_p


def check(status):
    assert status == 0, lib.pg_last_error().decode()


class CModel:
    """The few calls the twin needs, with the attributes torch_gpt.from_phonegpt reads."""

    def __init__(self, preset_or_fields, seed):
        c = ModelConfig()
        lib.pg_model_config_default(ctypes.byref(c))
        if isinstance(preset_or_fields, str):
            check(lib.pg_model_config_preset(preset_or_fields.encode(), ctypes.byref(c)))
        else:
            for k, v in preset_or_fields.items():
                setattr(c, k, v)
        self.handle = ctypes.c_void_p()
        check(lib.pg_model_create(ctypes.byref(c), ctypes.c_uint64(seed), ctypes.byref(self.handle)))
        self.config = ModelConfig()
        self.config.struct_size = ctypes.sizeof(ModelConfig)
        check(lib.pg_model_get_config(self.handle, ctypes.byref(self.config)))

    def parameters(self):
        n = ctypes.c_int32()
        check(lib.pg_model_num_tensors(self.handle, ctypes.byref(n)))
        out = {}
        for i in range(n.value):
            info = TensorInfo()
            info.struct_size = ctypes.sizeof(TensorInfo)
            check(lib.pg_model_tensor_info(self.handle, i, ctypes.byref(info)))
            data = ctypes.POINTER(ctypes.c_float)()
            check(lib.pg_model_tensor_data_mutable(self.handle, i, ctypes.byref(data)))
            out[info.name.decode()] = np.ctypeslib.as_array(data, shape=tuple(info.shape[: info.n_dims]))
        return out

    def forward(self, x, y):
        B, T = x.shape
        V = self.config.vocab_size
        logits = np.zeros((B, T, V), dtype=np.float32)
        loss = ctypes.c_float()
        i32 = ctypes.POINTER(ctypes.c_int32)
        check(lib.pg_model_forward(self.handle, x.ctypes.data_as(i32), B, T, y.ctypes.data_as(i32),
                                   logits.ctypes.data_as(ctypes.POINTER(ctypes.c_float)),
                                   ctypes.byref(loss), 2))
        return logits, loss.value

    def close(self):
        lib.pg_model_free(self.handle)


def rel_err(a, b):
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    return float(np.max(np.abs(a - b)) / np.max(np.abs(b)))


@pytest.mark.parametrize("kind,B,T", [
    (dict(n_layer=2, n_head=2, n_embd=32, n_ctx=24, vocab_size=11, padded_vocab_size=0), 3, 20),
    ("tiny", 4, 16),
    ("phonegpt", 2, 128),
])
def test_forward_matches_twin(kind, B, T):
    model = CModel(kind, seed=5)
    try:
        rng = np.random.default_rng(99)
        for name, view in model.parameters().items():   # non-trivial weights, padding rows too
            gain = name.endswith(("ln_1.weight", "ln_2.weight")) or name == "ln_f.weight"
            view[...] = (1.0 if gain else 0.0) + 0.1 * rng.standard_normal(view.shape)
        V = model.config.vocab_size
        x = rng.integers(0, V, size=(B, T), dtype=np.int32)
        y = rng.integers(0, V, size=(B, T), dtype=np.int32)
        y[0, 1] = -1
        logits, loss = model.forward(x, y)
        twin = torch_gpt.from_phonegpt(model, dtype=torch.float64)
        t_logits, t_loss = twin(torch.from_numpy(x).long(), torch.from_numpy(y).long())
        assert rel_err(logits, t_logits.detach().numpy()) < 1e-5
        assert abs(loss - float(t_loss)) / float(t_loss) < 1e-5
    finally:
        model.close()


def test_window_rule_scores_every_prediction_once():
    """The twin's whole-split window rule (pg_evaluate's): every prediction scored once."""
    for n in range(2, 60):
        for W in range(1, 12):
            for S in range(1, W + 1):
                scored = []
                for start, length, first in torch_gpt.whole_split_windows(n, W, S):
                    assert 0 <= start and start + length <= n - 1 and length <= W
                    scored.extend(range(start + first, start + length))
                assert scored == list(range(n - 1)), (n, W, S)
