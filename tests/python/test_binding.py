"""The Python binding: every public function, its error paths, numpy aliasing and lifetimes."""
import gc
import os
import pathlib
import signal
import threading

import numpy as np
import pytest

import phonegpt
from conftest import randomize

TEXT = "To be, or not to be: that is the question.\nWhether 'tis nobler in the mind to suffer\n"


@pytest.fixture
def tok():
    with phonegpt.Tokenizer.char(TEXT) as t:
        yield t


def tiny_with(tok, seed=3):
    """A tiny model whose vocabulary is the tokenizer's."""
    config = phonegpt.ModelConfig.preset("tiny")
    config.vocab_size = tok.vocab_size
    config.padded_vocab_size = 0
    model = phonegpt.Model(config, seed=seed)
    model.tokenizer = tok
    return model


# ---- versions, helpers, exceptions ---------------------------------------------------------

def test_versions():
    assert phonegpt.version() == phonegpt.__version__
    major, minor, patch = phonegpt.version_info()
    assert phonegpt.version() == f"{major}.{minor}.{patch}"
    assert phonegpt.version_number() == phonegpt.HEADER_VERSION
    assert phonegpt.simd_arch()
    assert phonegpt.status_name(0) == "PG_OK"
    assert phonegpt.status_name(6) == "PG_ERR_CHECKSUM"
    assert phonegpt.status_name(999) == "PG_ERR_UNKNOWN"


def test_exception_hierarchy():
    for name in ["InvalidArgument", "OutOfMemory", "IOError", "FormatError", "VersionError",
                 "ChecksumError", "GeometryError", "TokenizeError", "Cancelled", "StateError",
                 "BufferTooSmall", "Unsupported", "InternalError"]:
        assert issubclass(getattr(phonegpt, name), phonegpt.Error), name
    assert phonegpt.ChecksumError.status == 6 and phonegpt.ChecksumError.status_name == "PG_ERR_CHECKSUM"
    assert issubclass(phonegpt.InvalidArgument, ValueError)
    assert issubclass(phonegpt.IOError, OSError)
    assert issubclass(phonegpt.OutOfMemory, MemoryError)


def test_split_index():
    assert phonegpt.split_index(1115394, 0.9) == 1003854
    assert phonegpt.split_index(10) == 9
    with pytest.raises(phonegpt.InvalidArgument) as e:
        phonegpt.split_index(10, 1.5)
    assert "train_fraction" in str(e.value)
    assert e.value.status == 1 and e.value.status_name == "PG_ERR_INVALID_ARGUMENT"


def test_read_file(tmp_path):
    p = tmp_path / "a.bin"
    p.write_bytes(b"\x00abc\xff")
    assert phonegpt.read_file(p) == b"\x00abc\xff"          # os.PathLike
    assert phonegpt.read_file(str(p)) == b"\x00abc\xff"     # str
    with pytest.raises(phonegpt.IOError) as e:
        phonegpt.read_file(tmp_path / "missing")
    assert "missing" in str(e.value)


# ---- tokenizer -----------------------------------------------------------------------------

def test_tokenizer_roundtrip(tok):
    assert tok.kind == "char"
    vocab = sorted(set(TEXT))
    assert tok.vocab_size == len(vocab) == len(tok)
    ids = tok.encode(TEXT)
    assert ids.dtype == np.int32 and ids.shape == (len(TEXT),)
    assert list(ids[:3]) == [vocab.index(c) for c in TEXT[:3]]   # id order = code point order
    assert tok.decode(ids) == TEXT
    assert tok.decode(list(ids)) == TEXT
    assert tok.decode_bytes(ids) == TEXT.encode()
    assert tok.encode("").shape == (0,)
    with phonegpt.Tokenizer.from_bytes(tok.to_bytes()) as copy:
        assert copy.vocab_size == tok.vocab_size
        assert np.array_equal(copy.encode(TEXT), ids)


def test_tokenizer_unicode():
    text = "héllo wörld — ☃ 𝄞"
    with phonegpt.Tokenizer.char(text) as t:
        assert t.vocab_size == len(set(text))
        ids = t.encode(text)
        assert len(ids) == len(text)          # one id per code point, not per byte
        assert t.decode(ids) == text


def test_tokenizer_errors(tok):
    with pytest.raises(phonegpt.TokenizeError) as e:
        tok.encode("To be, or not to bX")       # 'X' is not in the vocabulary
    assert "X" in str(e.value) or "18" in str(e.value)
    with pytest.raises(phonegpt.InvalidArgument):
        tok.decode([0, tok.vocab_size])
    with pytest.raises(phonegpt.InvalidArgument):
        tok.decode([-1])
    with pytest.raises(TypeError):
        tok.decode(np.array([1.0, 2.0]))
    with pytest.raises(phonegpt.InvalidArgument):
        tok.decode(np.zeros((2, 2), dtype=np.int32))
    with pytest.raises(phonegpt.Error):
        phonegpt.Tokenizer.from_bytes(b"definitely not a tokenizer")
    with pytest.raises(phonegpt.Error):
        phonegpt.Tokenizer.from_bytes(tok.to_bytes()[:-1])
    with pytest.raises(phonegpt.TokenizeError):
        phonegpt.Tokenizer.char(b"ok \xff\xfe")        # invalid UTF-8 (bytes are passed as they are)


def test_tokenizer_close(tok):
    tok.close()
    assert tok.closed
    with pytest.raises(phonegpt.StateError):
        tok.encode("To")
    with pytest.raises(phonegpt.StateError):
        tok.vocab_size
    tok.close()  # twice is fine
    assert "closed" in repr(tok)


# ---- configurations ------------------------------------------------------------------------

def test_model_config():
    c = phonegpt.ModelConfig()
    assert c == phonegpt.ModelConfig.preset("phonegpt")
    assert (c.n_layer, c.n_head, c.n_embd, c.n_ctx, c.vocab_size, c.padded_vocab_size) == (6, 4, 128, 128, 65, 68)
    assert c.num_params == 1214976
    t = phonegpt.ModelConfig.preset("tiny")
    assert (t.n_layer, t.n_head, t.n_embd, t.n_ctx) == (2, 2, 16, 16)
    assert phonegpt.ModelConfig(n_layer=2).n_layer == 2
    with pytest.raises(phonegpt.InvalidArgument):
        phonegpt.ModelConfig.preset("gpt5")
    bad = phonegpt.ModelConfig(n_head=3)  # does not divide 128
    with pytest.raises(phonegpt.InvalidArgument) as e:
        bad.validate()
    assert "n_head" in str(e.value)
    with pytest.raises(phonegpt.InvalidArgument):
        bad.num_params
    with pytest.raises(TypeError):
        phonegpt.ModelConfig(layers=2)
    with pytest.raises(phonegpt.InvalidArgument):
        phonegpt.Model(bad)


def test_model_config_architectures():
    """The Llama-family fields: names for the enumerations, the published counts, refusal by name."""
    c = phonegpt.ModelConfig()
    assert (c.norm, c.positions, c.mlp, c.qkv_bias, c.linear_bias, c.tied_head) == ("layernorm", "learned", "gelu",
                                                                                   True, True, True)
    q = phonegpt.ModelConfig.preset("qwen3-0.6b")
    assert (q.norm, q.positions, q.mlp, q.qk_norm, q.head_dim, q.n_kv_head) == ("rmsnorm", "rotary", "swiglu", True,
                                                                               128, 8)
    assert q.num_params == 596049920
    assert phonegpt.ModelConfig.preset("smollm2-135m").num_params == 134515008
    with pytest.raises(phonegpt.InvalidArgument) as e:
        phonegpt.ModelConfig(norm="batchnorm")
    assert "norm" in str(e.value)
    with pytest.raises(phonegpt.InvalidArgument) as e:
        q.replace(n_kv_head=3).validate()
    assert "n_kv_head" in str(e.value)
    assert phonegpt.Model(phonegpt.ModelConfig.preset("tiny-qwen2")).num_params > 0
    with pytest.raises(phonegpt.Unsupported) as e:
        phonegpt.Model(phonegpt.ModelConfig.preset("tiny-qwen2").replace(norm="layernorm"))
    assert "norm" in str(e.value)


def test_train_config():
    c = phonegpt.TrainConfig()
    assert (c.batch_size, c.grad_accum_steps, c.schedule, c.warmup_steps, c.total_steps) == (32, 1, "cosine", 100, 5000)
    assert c.lr_max == pytest.approx(1e-3) and c.beta2 == pytest.approx(0.95)
    c = phonegpt.TrainConfig(schedule="linear", decay_embeddings=True, lr_max=2e-3)
    assert c.schedule == "linear" and c.decay_embeddings is True
    with pytest.raises(phonegpt.InvalidArgument):
        phonegpt.TrainConfig(schedule="exponential")
    with pytest.raises(TypeError):
        phonegpt.TrainConfig(learning_rate=1.0)
    c = phonegpt.TrainConfig()
    assert (c.optimizer, c.muon_momentum, c.muon_lr_scale) == ("adamw", pytest.approx(0.95), 1.0)
    c = phonegpt.TrainConfig(optimizer="muon", muon_lr_scale=2.0)
    assert c.optimizer == "muon" and c.muon_lr_scale == 2.0
    assert phonegpt.TrainConfig().dropout_ramp_steps == 0
    assert phonegpt.TrainConfig(dropout_ramp_steps=3000).dropout_ramp_steps == 3000
    with pytest.raises(phonegpt.InvalidArgument):
        phonegpt.TrainConfig(optimizer="sgd")


def test_trainer_with_muon_learns_and_reports_it(tok):
    ids = tok.encode(TEXT * 4)
    with tiny_with(tok) as m, make_trainer(m, lr_max=1e-2, lr_min=1e-3, optimizer="muon") as t:
        assert t.config.optimizer == "muon"
        t.set_data(ids)
        first = t.step().loss
        losses = [r.loss for r in t.train(30)]
        assert np.mean(losses[-5:]) < first


# ---- model: parameters as numpy views --------------------------------------------------------

def test_model_parameters_layout(tiny_model):
    m = tiny_model
    c = m.config
    C = c.n_embd
    assert m.num_params == c.num_params == 7936
    names = m.tensor_names
    assert names[:2] == ["wte", "wpe"] and names[-2:] == ["ln_f.weight", "ln_f.bias"]
    params = m.parameters()
    assert list(params) == names
    expect = {"wte": (c.padded_vocab_size, C), "wpe": (c.n_ctx, C), "h.0.ln_1.weight": (C,),
              "h.0.attn.c_attn.weight": (3 * C, C), "h.0.attn.c_attn.bias": (3 * C,),
              "h.0.attn.c_proj.weight": (C, C), "h.1.mlp.c_fc.weight": (4 * C, C),
              "h.1.mlp.c_proj.weight": (C, 4 * C), "ln_f.bias": (C,)}
    for name, shape in expect.items():
        assert params[name].shape == shape, name
        assert params[name].dtype == np.float32
    assert sum(v.size for v in params.values()) == m.num_params
    # GPT-2 initialisation: gains 1, biases 0, padding rows 0
    assert np.all(params["h.0.ln_1.weight"] == 1) and np.all(params["h.0.attn.c_attn.bias"] == 0)
    assert not np.any(params["wte"][c.vocab_size:])
    assert 0.015 < params["wte"][: c.vocab_size].std() < 0.025


def test_views_alias_native_memory(tiny_model):
    m = tiny_model
    x = np.arange(16, dtype=np.int32).reshape(1, 16) % 65
    flat = m.flat_parameters()
    assert flat.shape == (m.num_params,) and not flat.flags.writeable
    wte = m.parameter("wte")
    assert wte.flags.writeable
    before, _ = m.forward(x)
    wte[x[0, 0], :] += 1.0                            # write through the view...
    assert flat[x[0, 0] * m.config.n_embd] == wte[x[0, 0], 0]   # ...the flat view sees it...
    after, _ = m.forward(x)
    assert not np.array_equal(before, after)          # ...and so does the forward pass
    assert np.shares_memory(m.parameter("wte"), wte) or m.parameter("wte").__array_interface__["data"][0] == wte.__array_interface__["data"][0]


def test_read_only_views_refuse_writes(tiny_model):
    ro = tiny_model.parameter("wpe", writable=False)
    assert not ro.flags.writeable
    with pytest.raises(ValueError):
        ro[0, 0] = 1.0
    with pytest.raises(ValueError):
        ro.flags.writeable = True
    for v in tiny_model.parameters(writable=False).values():
        assert not v.flags.writeable


def test_views_outlive_close():
    m = phonegpt.Model("tiny", seed=1)
    w = m.parameter("wte")
    expected = w.copy()
    m.close()
    gc.collect()
    assert np.array_equal(w, expected)   # the native memory lives as long as the view
    w[0, 0] = 5.0                        # and is still safe to write
    with pytest.raises(phonegpt.StateError):
        m.parameter("wte")


def test_model_use_after_close_raises():
    m = phonegpt.Model("tiny")
    m.close()
    assert m.closed and "closed" in repr(m)
    x = np.zeros((1, 4), dtype=np.int32)
    calls = [lambda: m.config, lambda: m.num_params, lambda: m.tensor_names, lambda: m.parameters(),
             lambda: m.flat_parameters(), lambda: m.forward(x), lambda: m.evaluate(x[0]),
             lambda: m.evaluate_sampled(x[0], 1, 1), lambda: m.generate(x[0], max_tokens=2),
             lambda: m.save("/tmp/never.pgm"), lambda: m.export("/tmp/never.bin", "llmc"),
             lambda: m.tokenizer, lambda: phonegpt.Trainer(m)]
    for call in calls:
        with pytest.raises(phonegpt.StateError):
            call()


def test_model_create_is_deterministic():
    with phonegpt.Model("tiny", seed=42) as a, phonegpt.Model("tiny", seed=42) as b, \
            phonegpt.Model("tiny", seed=43) as c:
        assert np.array_equal(a.flat_parameters(), b.flat_parameters())
        assert not np.array_equal(a.flat_parameters(), c.flat_parameters())
    with pytest.raises(phonegpt.InvalidArgument):
        phonegpt.Model("huge")


def test_model_tokenizer(tok):
    with phonegpt.Model("tiny") as m:
        assert m.tokenizer is None
        with pytest.raises(phonegpt.GeometryError):
            m.tokenizer = tok                   # vocabulary 24 != 65
    with tiny_with(tok) as m:
        t = m.tokenizer
        assert t.vocab_size == tok.vocab_size
        assert np.array_equal(t.encode(TEXT), tok.encode(TEXT))
        t.close()                               # a copy: the model's own is untouched
        assert m.tokenizer.vocab_size == tok.vocab_size


# ---- forward -------------------------------------------------------------------------------

def test_forward(tiny_model):
    m = tiny_model
    rng = np.random.default_rng(0)
    x = rng.integers(0, 65, size=(3, 16), dtype=np.int32)
    y = rng.integers(0, 65, size=(3, 16), dtype=np.int32)
    logits, loss = m.forward(x)
    assert logits.shape == (3, 16, 65) and logits.dtype == np.float32 and loss is None
    logits2, loss2 = m.forward(x, y)
    assert np.array_equal(logits, logits2)
    # mean cross-entropy from the logits
    z = logits2.astype(np.float64)
    lse = np.log(np.exp(z - z.max(-1, keepdims=True)).sum(-1)) + z.max(-1)
    ce = lse - np.take_along_axis(z, y[..., None].astype(np.int64), -1)[..., 0]
    assert loss2 == pytest.approx(ce.mean(), rel=1e-5)
    # other integer dtypes and lists are converted; results identical
    l64, _ = m.forward(x.astype(np.int64))
    assert np.array_equal(l64, logits)
    llist, _ = m.forward(x.tolist())
    assert np.array_equal(llist, logits)
    # a non-contiguous int32 array is fine too
    wide = np.zeros((3, 32), dtype=np.int32)
    wide[:, ::2] = x
    lnc, _ = m.forward(wide[:, ::2])
    assert np.array_equal(lnc, logits)
    # deterministic for the same thread count
    assert np.array_equal(m.forward(x, n_threads=2)[0], m.forward(x, n_threads=2)[0])


def test_forward_errors(tiny_model):
    m = tiny_model
    x = np.zeros((2, 8), dtype=np.int32)
    with pytest.raises(TypeError):
        m.forward(x.astype(np.float32))
    with pytest.raises(TypeError):
        m.forward(np.array([["a", "b"]]))
    with pytest.raises(phonegpt.InvalidArgument):
        m.forward(x[0])                                   # 1-D
    with pytest.raises(phonegpt.InvalidArgument):
        m.forward(x, np.zeros((2, 7), dtype=np.int32))    # targets shape
    with pytest.raises(phonegpt.InvalidArgument):
        m.forward(np.zeros((1, 17), dtype=np.int32))      # T > n_ctx
    with pytest.raises(phonegpt.InvalidArgument):
        m.forward(np.full((1, 4), 65, dtype=np.int32))    # id outside the vocabulary
    with pytest.raises(phonegpt.InvalidArgument):
        m.forward(np.full((1, 4), 2**40, dtype=np.int64))  # does not fit int32


# ---- checkpoints ---------------------------------------------------------------------------

def test_save_load_roundtrip(tmp_path, tok):
    with tiny_with(tok) as m:
        randomize(m, seed=1)
        for level in (0, 3):
            p = tmp_path / f"m{level}.pgm"
            m.save(p, compression_level=level)
            with phonegpt.Model.load(p) as back:
                assert back.config == m.config
                assert np.array_equal(back.flat_parameters(), m.flat_parameters())
                assert np.array_equal(back.tokenizer.encode(TEXT), tok.encode(TEXT))
                x = tok.encode(TEXT)[:17]
                assert back.evaluate(x).mean_loss == m.evaluate(x).mean_loss


def test_load_from_bytes_and_fd(tmp_path, tok):
    with tiny_with(tok) as m:
        randomize(m, seed=2)
        p = tmp_path / "m.pgm"
        m.save(p, compression_level=3)
        data = p.read_bytes()
        bundle = tmp_path / "bundle.bin"  # the checkpoint at an odd offset inside a bigger file
        bundle.write_bytes(b"\x11" * 4097 + data + b"\x22" * 55)
        fd = os.open(bundle, os.O_RDONLY)
        try:
            os.lseek(fd, 9, os.SEEK_SET)
            loaded = [phonegpt.Model.from_bytes(data), phonegpt.Model.from_bytes(memoryview(bytearray(data))),
                      phonegpt.Model.from_bytes(np.frombuffer(data, dtype=np.uint8)),
                      phonegpt.Model.from_fd(fd, 4097, len(data))]
            assert os.lseek(fd, 0, os.SEEK_CUR) == 9  # pread: not moved, and still open
            for back in loaded:
                with back:
                    assert np.array_equal(back.flat_parameters(), m.flat_parameters())
                    assert np.array_equal(back.tokenizer.encode(TEXT), tok.encode(TEXT))
            with pytest.raises(phonegpt.FormatError):
                phonegpt.Model.from_fd(fd, 4097, len(data) - 1)  # a truncated length
            with pytest.raises(phonegpt.InvalidArgument, match="length"):
                phonegpt.Model.from_fd(fd, 4097, len(data) + 56)  # past the file's end
            with pytest.raises(phonegpt.Unsupported, match="by its path"):
                phonegpt.Model.from_fd(fd, 4097, len(data), map_weights=True)
        finally:
            os.close(fd)
        with pytest.raises(phonegpt.FormatError):
            phonegpt.Model.from_bytes(data[:-1])
        with pytest.raises(phonegpt.IOError, match="file descriptor"):
            phonegpt.Model.from_fd(fd)  # closed


def test_load_errors(tmp_path, tiny_model):
    with pytest.raises(phonegpt.IOError):
        phonegpt.Model.load(tmp_path / "missing.pgm")
    with pytest.raises(phonegpt.IOError):
        tiny_model.save(tmp_path / "no" / "such" / "folder" / "m.pgm")
    garbage = tmp_path / "garbage.pgm"
    garbage.write_bytes(b"not a checkpoint at all" * 10)
    with pytest.raises(phonegpt.FormatError):
        phonegpt.Model.load(garbage)
    good = tmp_path / "good.pgm"
    tiny_model.save(good)
    data = good.read_bytes()
    truncated = tmp_path / "truncated.pgm"
    truncated.write_bytes(data[: len(data) // 2])
    with pytest.raises(phonegpt.FormatError):
        phonegpt.Model.load(truncated)
    # flip one bit inside the weights (the middle of the file is parameter data)
    corrupt = bytearray(data)
    corrupt[len(data) // 2] ^= 0x10
    (tmp_path / "corrupt.pgm").write_bytes(bytes(corrupt))
    with pytest.raises(phonegpt.ChecksumError):
        phonegpt.Model.load(tmp_path / "corrupt.pgm")
    # a newer major format version (bytes 8-9 of the prelude, docs/formats.md)
    newer = bytearray(data)
    newer[8:10] = (2).to_bytes(2, "little")
    (tmp_path / "newer.pgm").write_bytes(bytes(newer))
    with pytest.raises(phonegpt.VersionError) as e:
        phonegpt.Model.load(tmp_path / "newer.pgm")
    assert e.value.status_name == "PG_ERR_VERSION"


def test_save_failure_keeps_previous_file(tmp_path, tiny_model):
    p = tmp_path / "m.pgm"
    tiny_model.save(p)
    before = p.read_bytes()
    with pytest.raises(phonegpt.InvalidArgument):
        tiny_model.save(p, compression_level=99)
    assert p.read_bytes() == before


@pytest.mark.parametrize("fmt,name", [("llmc", "model.bin"), ("safetensors", "model.safetensors"), ("hf", "hf_folder")])
def test_export_import_roundtrip(tmp_path, tiny_model, fmt, name):
    randomize(tiny_model, seed=5)
    # padding rows are not part of safetensors exports: keep them 0 so the round trip is exact
    tiny_model.parameter("wte")[tiny_model.config.vocab_size:] = 0
    path = tmp_path / name
    tiny_model.export(path, fmt)
    with phonegpt.Model.import_from(path, fmt) as back:
        assert back.config == tiny_model.config
        for (n, a), (n2, b) in zip(tiny_model.parameters().items(), back.parameters().items()):
            assert n == n2 and np.array_equal(a, b), n


def test_hf_folder_imports_into_the_storage_asked_for(tmp_path, tiny_model):
    tiny_model.export(tmp_path / "hf", "hf")  # the folder is created
    assert (tmp_path / "hf" / "config.json").is_file() and (tmp_path / "hf" / "model.safetensors").is_file()
    with phonegpt.Model.import_from(tmp_path / "hf", "hf", weight_storage=2) as half:
        assert half.weight_storage == "bf16"
    with pytest.raises(phonegpt.InvalidArgument, match="map_weights"):
        phonegpt.Model.import_from(tmp_path / "hf", "hf", map_weights=True)


def test_export_import_errors(tmp_path, tiny_model):
    with pytest.raises(phonegpt.InvalidArgument):
        tiny_model.export(tmp_path / "x", "onnx")
    with pytest.raises(phonegpt.InvalidArgument):
        phonegpt.Model.import_from(tmp_path / "x", "onnx")
    with pytest.raises(phonegpt.IOError):
        phonegpt.Model.import_from(tmp_path / "missing.bin", "llmc")
    bad = tmp_path / "bad.bin"
    bad.write_bytes(b"\0" * 2048)
    with pytest.raises(phonegpt.FormatError):
        phonegpt.Model.import_from(bad, "llmc")


# ---- training ------------------------------------------------------------------------------

def make_trainer(model, **kw):
    options = dict(batch_size=4, seq_len=16, warmup_steps=2, total_steps=20, n_threads=2)
    options.update(kw)
    return phonegpt.Trainer(model, **options)


def test_trainer_steps_and_schedule(tok):
    ids = tok.encode(TEXT * 4)
    with tiny_with(tok) as m, make_trainer(m, lr_max=1e-2, lr_min=1e-3) as t:
        c = t.config
        assert (c.batch_size, c.seq_len, c.warmup_steps) == (4, 16, 2)
        assert t.model is m
        t.set_data(ids)
        assert t.step_count == 0
        r = t.step()
        assert isinstance(r, phonegpt.StepResult)
        assert r.step == 1 and r.tokens == 4 * 16 and r.loss > 0 and r.grad_norm > 0
        assert r.lr == pytest.approx(t.lr_at(0))
        assert t.lr_at(1) == pytest.approx(1e-2)            # end of warm-up
        assert t.lr_at(20) == pytest.approx(1e-3)           # lr_min at total_steps
        assert t.lr_at(1000) == pytest.approx(1e-3)
        seen = []
        results = t.train(5, callback=lambda r: seen.append(r.step))
        assert [r.step for r in results] == seen == [2, 3, 4, 5, 6]
        assert t.step_count == 6
        stopped = t.train(10, callback=lambda r: r.step >= 8)   # truthy return stops
        assert [r.step for r in stopped] == [7, 8]
        losses = [r.loss for r in t.train(30)]
        assert np.mean(losses[-5:]) < results[0].loss       # it learns


def test_trainer_step_batch_and_gradients(tok):
    ids = tok.encode(TEXT)
    x = np.stack([ids[0:16], ids[16:32]])
    y = np.stack([ids[1:17], ids[17:33]])
    with tiny_with(tok) as m, make_trainer(m, batch_size=2) as t:
        loss = t.compute_gradients(x, y)
        assert loss == pytest.approx(m.forward(x, y)[1], rel=1e-6)
        grads = t.gradients()
        assert list(grads) == m.tensor_names
        g = t.grad("wte")
        assert g.shape == m.parameter("wte").shape and not g.flags.writeable
        with pytest.raises(ValueError):
            g[0, 0] = 1.0
        assert np.any(g != 0)
        before = m.flat_parameters().copy()
        r = t.step_batch(x, y)
        assert r.step == 1 and r.tokens == 32
        assert not np.array_equal(before, m.flat_parameters())   # the model's weights moved
        with pytest.raises(phonegpt.InvalidArgument):
            t.grad("no.such.tensor")
        with pytest.raises(phonegpt.InvalidArgument):
            t.step_batch(x, y[:, :5])
        with pytest.raises(TypeError):
            t.compute_gradients(x.astype(float), y)


def test_trainer_errors(tok):
    with tiny_with(tok) as m:
        with pytest.raises(TypeError):
            phonegpt.Trainer(m, learning_rate=1)
        with pytest.raises(phonegpt.InvalidArgument):
            phonegpt.Trainer(m, batch_size=0)
        with pytest.raises(phonegpt.InvalidArgument):
            phonegpt.Trainer(m, seq_len=m.config.n_ctx + 1)
        with make_trainer(m) as t:
            with pytest.raises(phonegpt.Error):
                t.step()                                   # no data yet
            with pytest.raises(phonegpt.InvalidArgument):
                t.set_data(np.zeros(16, dtype=np.int32))    # needs seq_len + 1 tokens
            with pytest.raises(phonegpt.InvalidArgument):
                t.set_data(np.full(100, tok.vocab_size, dtype=np.int32))
            with pytest.raises(phonegpt.InvalidArgument):
                t.train(-1)
        t.close()
        with pytest.raises(phonegpt.StateError):
            t.step()
        with pytest.raises(phonegpt.StateError):
            t.gradients()


def test_trainer_keeps_model_alive(tok):
    ids = tok.encode(TEXT * 2)
    m = tiny_with(tok)
    t = make_trainer(m)
    del m
    gc.collect()
    t.set_data(ids)
    assert t.step().step == 1
    t.model.close()          # the native model lives on until the trainer is freed
    assert t.step().step == 2
    t.close()


def test_trainer_save_resume_is_bit_exact(tmp_path, tok):
    ids = tok.encode(TEXT * 4)
    p = tmp_path / "run.pgt"
    with tiny_with(tok) as m, make_trainer(m, dropout=0.1) as t:
        t.set_data(ids)
        t.train(3)
        t.save(p)
        tail = [r.loss for r in t.train(3)]
        final = m.flat_parameters().copy()
    with phonegpt.Trainer.resume(p) as t2:
        assert t2.step_count == 3
        assert t2.config.dropout == pytest.approx(0.1)
        t2.set_data(ids)
        assert [r.loss for r in t2.train(3)] == tail
        assert np.array_equal(t2.model.flat_parameters(), final)
        assert np.array_equal(t2.model.tokenizer.encode(TEXT), tok.encode(TEXT))
    with pytest.raises(phonegpt.IOError):
        phonegpt.Trainer.resume(tmp_path / "missing.pgt")
    with phonegpt.Model.load(p) as weights_only:          # a trainer checkpoint is also a model
        assert weights_only.config == tiny_with(tok).config
    model_only = tmp_path / "model_only.pgm"
    with tiny_with(tok) as m:
        m.save(model_only)
    with pytest.raises(phonegpt.StateError) as e:           # no training state to resume
        phonegpt.Trainer.resume(model_only)
    assert "training state" in str(e.value)


def test_train_is_interrupted_by_ctrl_c(tok):
    ids = tok.encode(TEXT * 2)
    with tiny_with(tok) as m, make_trainer(m) as t:
        t.set_data(ids)

        def callback(r):
            if r.step == 2:
                os.kill(os.getpid(), signal.SIGINT)

        with pytest.raises(KeyboardInterrupt):
            t.train(100, callback=callback)
        assert t.step_count == 2        # stopped between steps; the state is consistent
        assert t.step().step == 3


# ---- evaluation ----------------------------------------------------------------------------

def test_evaluate_and_progress(tok):
    ids = tok.encode(TEXT * 3)
    with tiny_with(tok) as m:
        calls = []
        r = m.evaluate(ids, progress=lambda done, total: calls.append((done, total)))
        assert isinstance(r, phonegpt.EvalResult)
        assert r.n_scored == len(ids) - 1
        assert r.n_windows == -(-(len(ids) - 1) // m.config.n_ctx)
        assert r.mean_loss == pytest.approx(np.log(tok.vocab_size), rel=0.05)  # near uniform at init
        assert calls and calls[-1][0] == calls[-1][1] == r.n_scored
        assert [d for d, _ in calls] == sorted(d for d, _ in calls)
        assert phonegpt.evaluate(m, ids).mean_loss == r.mean_loss
        with pytest.raises(phonegpt.InvalidArgument):
            m.evaluate(ids[:1])
        with pytest.raises(phonegpt.InvalidArgument):
            m.evaluate(ids, window=m.config.n_ctx + 1)
        with pytest.raises(phonegpt.InvalidArgument):
            m.evaluate(ids, window=8, stride=9)
        with pytest.raises(phonegpt.InvalidArgument):
            m.evaluate(ids.reshape(1, -1))
        with pytest.raises(TypeError):
            m.evaluate(ids.astype(np.float64))


def test_evaluate_cancel_and_exceptions(tok):
    ids = tok.encode(TEXT * 3)
    with tiny_with(tok) as m:
        with pytest.raises(phonegpt.Cancelled):
            m.evaluate(ids, batch_size=1, progress=lambda done, total: True)

        class Boom(Exception):
            pass

        def explode(done, total):
            raise Boom("from the callback")

        with pytest.raises(Boom):
            m.evaluate(ids, batch_size=1, progress=explode)

        def ctrl_c(done, total):
            os.kill(os.getpid(), signal.SIGINT)

        with pytest.raises(KeyboardInterrupt):
            m.evaluate(ids, batch_size=1, progress=ctrl_c)
        assert m.evaluate(ids).n_scored == len(ids) - 1   # and the model still works


def test_evaluate_sampled(tok):
    ids = tok.encode(TEXT * 4)
    with tiny_with(tok) as m:
        a = m.evaluate_sampled(ids, n_batches=3, batch_size=2, seed=5)
        b = m.evaluate_sampled(ids, n_batches=3, batch_size=2, seed=5)
        assert a.mean_loss == b.mean_loss
        assert a.mean_loss == pytest.approx(m.evaluate(ids).mean_loss, rel=0.1)
        with pytest.raises(phonegpt.InvalidArgument):
            m.evaluate_sampled(ids, n_batches=0, batch_size=2)
        with pytest.raises(phonegpt.InvalidArgument):
            m.evaluate_sampled(ids[:5], n_batches=1, batch_size=1)


def test_long_calls_release_the_gil(tok):
    """Another Python thread runs *during* a long library call: ticks stamped strictly inside
    the call's time span (a thread needs the GIL to run Python at all)."""
    import time
    ids = tok.encode(TEXT * 1000)
    ticks = []
    stop = threading.Event()

    def ticker():
        while not stop.is_set():
            ticks.append(time.perf_counter())
            time.sleep(0.001)

    with tiny_with(tok) as m:
        th = threading.Thread(target=ticker)
        th.start()
        try:
            for _ in range(20):                       # retry: a loaded machine may starve the ticker
                t0 = time.perf_counter()
                m.evaluate(ids, n_threads=1)
                t1 = time.perf_counter()
                margin = 0.1 * (t1 - t0)
                if any(t0 + margin < t < t1 - margin for t in ticks):
                    break
            else:
                pytest.fail("no Python thread ran during evaluate(): is the GIL held?")
        finally:
            stop.set()
            th.join()


# ---- generation ----------------------------------------------------------------------------

def test_generate_tokens(tok):
    with tiny_with(tok) as m:
        randomize(m, seed=9)
        prompt = tok.encode("To be")
        a = m.generate(prompt, max_tokens=20, seed=1)
        assert a.dtype == np.int32 and a.shape == (20,)
        assert np.all((a >= 0) & (a < tok.vocab_size))
        assert np.array_equal(a, m.generate(prompt, max_tokens=20, seed=1))
        g1 = m.generate(prompt, max_tokens=20, temperature=0.0, seed=1)
        g2 = m.generate(prompt, max_tokens=20, temperature=0.0, seed=2)
        assert np.array_equal(g1, g2)                        # greedy ignores the seed
        # greedy = argmax of the forward pass at every step
        seq = list(prompt)
        for t in g1[:5]:
            logits, _ = m.forward(np.array([seq]))
            assert int(np.argmax(logits[0, -1])) == t
            seq.append(int(t))
        seen = []
        n = m.generate(prompt, max_tokens=20, seed=1, on_token=lambda t: seen.append(t))
        assert seen == list(n)
        seen.clear()
        short = m.generate(prompt, max_tokens=20, seed=1, on_token=lambda t: seen.append(t) or len(seen) >= 3)
        assert len(short) == 3 and np.array_equal(short, a[:3])
        # the window slides past n_ctx
        assert m.generate(prompt, max_tokens=3 * m.config.n_ctx, seed=1).shape == (48,)
        assert m.generate(prompt, max_tokens=0).shape == (0,)


def test_generate_text_and_stream(tok):
    with tiny_with(tok) as m:
        randomize(m, seed=9)
        text = m.generate("To be", max_tokens=30, seed=4)
        assert isinstance(text, str) and len(text) == 30
        assert "".join(m.stream("To be", max_tokens=30, seed=4)) == text
        ids = m.generate(tok.encode("To be"), max_tokens=30, seed=4)
        assert tok.decode(ids) == text
        assert list(m.stream(tok.encode("To be"), max_tokens=30, seed=4)) == list(ids)
        it = m.stream("To be", max_tokens=10_000, seed=4)
        first = [next(it) for _ in range(3)]
        it.close()                                          # stops the generation early
        assert "".join(first) == text[:3]
        with pytest.raises(TypeError):
            list(m.stream("To be", temperatur=1.0))


def test_generate_stop_strings(tok):
    with tiny_with(tok) as m:
        randomize(m, seed=9)
        full = m.generate("To be", max_tokens=200, seed=4)
        stop = full[5:7]
        cut = m.generate("To be", max_tokens=200, seed=4, stop=[stop])
        assert cut.endswith(stop) and full.startswith(cut)
        assert stop not in cut[:-1]


def test_generate_errors(tok):
    with tiny_with(tok) as m:
        with pytest.raises(phonegpt.TokenizeError):
            m.generate("To bX")
        with pytest.raises(phonegpt.InvalidArgument):
            m.generate(np.array([], dtype=np.int32))          # at least one prompt token
        with pytest.raises(phonegpt.InvalidArgument):
            m.generate([tok.vocab_size])
        with pytest.raises(phonegpt.InvalidArgument):
            m.generate([1], temperature=-1.0)
        with pytest.raises(phonegpt.InvalidArgument):
            list(m.stream([1], max_tokens=5, top_p=0.0))
    with phonegpt.Model("tiny") as bare:
        with pytest.raises(phonegpt.StateError):
            bare.generate("To be")


def test_generate_interrupted_by_ctrl_c(tok):
    with tiny_with(tok) as m:
        def on_token(t):
            os.kill(os.getpid(), signal.SIGINT)

        with pytest.raises(KeyboardInterrupt):
            m.generate([1], max_tokens=1000, on_token=on_token)


def test_int32_tokens_are_not_copied(tok):
    """An int32 C-contiguous array goes to the library as it is; other dtypes are converted.
    numpy reports its buffers to tracemalloc, so a conversion shows up as a traced peak."""
    import tracemalloc
    n = 2_000_000
    ids32 = (np.arange(n) % tok.vocab_size).astype(np.int32)
    ids64 = ids32.astype(np.int64)
    with tiny_with(tok) as m, make_trainer(m) as t:
        tracemalloc.start()
        try:
            t.set_data(ids32)
            _, peak32 = tracemalloc.get_traced_memory()
            tracemalloc.reset_peak()
            t.set_data(ids64)
            _, peak64 = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
    assert peak32 < n * 4 // 10      # no copy of the 8 MB array
    assert peak64 >= n * 4           # the int64 array was converted to a new int32 array


def test_two_threads_share_a_trainer(tok):
    """Calls on one trainer from two Python threads are serialised, not raced."""
    ids = tok.encode(TEXT * 4)
    with tiny_with(tok) as m, make_trainer(m) as t:
        t.set_data(ids)
        errors = []

        def work():
            try:
                for _ in range(10):
                    t.step()
            except BaseException as e:  # reported below
                errors.append(e)

        threads = [threading.Thread(target=work) for _ in range(2)]
        for th in threads:
            th.start()
        for th in threads:
            th.join()
        assert not errors
        assert t.step_count == 20


def test_type_stub_matches_the_module():
    """Every class, function, method and property the .pyi declares exists, and every public
    name the package exports is declared."""
    import ast
    stub_path = os.path.join(os.path.dirname(phonegpt.__file__), "__init__.pyi")
    tree = ast.parse(open(stub_path, encoding="utf-8").read())
    declared = set()
    for node in tree.body:
        if isinstance(node, ast.ClassDef):
            declared.add(node.name)
            cls = getattr(phonegpt, node.name)
            for item in node.body:
                if isinstance(item, ast.FunctionDef) and not item.name.startswith("__"):
                    assert hasattr(cls, item.name), f"{node.name}.{item.name}"
                elif isinstance(item, ast.AnnAssign):
                    assert hasattr(cls, item.target.id), f"{node.name}.{item.target.id}"
        elif isinstance(node, ast.FunctionDef):
            declared.add(node.name)
            assert callable(getattr(phonegpt, node.name)), node.name
        elif isinstance(node, ast.AnnAssign) and node.target.id in phonegpt.__all__:
            declared.add(node.target.id)
    assert set(phonegpt.__all__) <= declared, set(phonegpt.__all__) - declared


# ---- the C structs: every field reachable, names clean -----------------------------------

def _header_structs():
    """{struct name: [field, ...]} of every size-prefixed struct phonegpt.h declares, parsed
    from the header itself (not from the binding's list)."""
    import re
    src = os.environ.get("PG_SOURCE_DIR", os.path.join(os.path.dirname(__file__), "..", ".."))
    text = ""
    for header in ("phonegpt.h", "phonegpt_coordinator.h"):   # every tier's structs
        with open(os.path.join(src, "include", "phonegpt", header), encoding="utf-8") as f:
            text += f.read()
    text = re.sub(r"/\*.*?\*/", " ", text, flags=re.S)
    text = re.sub(r"//[^\n]*", " ", text)
    structs = {}
    for name, body, tail in re.findall(r"typedef\s+struct\s+(\w+)\s*\{(.*?)\}\s*(\w+)\s*;", text, flags=re.S):
        assert name == tail, name
        fields = []
        for decl in body.split(";"):
            decl = " ".join(decl.split())
            if not decl:
                continue
            pointer_to_function = re.search(r"\(\s*\*\s*(\w+)\s*\)", decl)
            if pointer_to_function:
                fields.append(pointer_to_function.group(1))
                continue
            for declarator in decl.split(","):
                m = re.search(r"(\w+)\s*(\[[^\]]*\])?\s*$", declarator)
                assert m, (name, decl)
                fields.append(m.group(1))
        if fields and fields[0] == "struct_size":
            structs[name] = fields[1:]
    return structs


def _has_parameter(fn, name):
    """Whether the callable (a Python function or a pybind11 method) takes argument `name`."""
    import inspect
    import re
    try:
        return name in inspect.signature(fn).parameters
    except (TypeError, ValueError):
        signature = (fn.__doc__ or "").splitlines()[0]
        return re.search(r"[(,]\s*(\*\s*,\s*)?%s\s*[:=]" % re.escape(name), signature) is not None


# Structs whose C API no Python call wraps yet, and why; each must leave this list as soon as it
# is bound (the test fails if a listed struct becomes reachable or is not in the header).
NOT_YET_BOUND = {
}


def test_every_public_struct_field_is_reachable_from_python():
    """Each field of each size-prefixed struct in phonegpt.h is an attribute of its Python class
    or an argument of the call that takes the struct, as _c_struct_fields (generated from the
    library's field list) says, and each such place exists."""
    header = _header_structs()
    assert {"pg_model_config", "pg_train_config", "pg_eval_config", "pg_sample_config"} <= set(header)
    table = phonegpt._phonegpt._c_struct_fields
    assert set(header) == set(table), (
        "structs of phonegpt.h missing from lib/core/c_struct_fields.def (list them there: "
        "docs/architecture.md, Conventions)", set(header) - set(table))
    unreachable, pending = [], set()
    for struct, fields in header.items():
        entry = table[struct]
        routes = entry["fields"]
        assert list(routes) == fields, (struct, "binding", list(routes), "header", fields)
        if struct in NOT_YET_BOUND:
            if None in routes.values():
                pending.add(struct)
            continue
        cls = getattr(phonegpt, entry["class"])
        for field in fields:
            if routes[field] is None:
                unreachable.append(f"{struct}.{field}: no Python call takes it")
                continue
            owner, _, member = routes[field].partition(".")
            call, _, arg = member.partition("(")
            arg = arg.rstrip(")")
            target = getattr(phonegpt, owner, None)
            if target is None or not hasattr(target, call):
                unreachable.append(f"{struct}.{field} -> {routes[field]}")
            elif owner == entry["class"]:
                if entry["options"]:   # read-write, and the constructor takes it
                    value = getattr(cls(), call)
                    if getattr(cls(**{call: value}), call) != value:
                        unreachable.append(f"{struct}.{field}: {entry['class']}({call}=...) does not keep it")
            elif arg and not _has_parameter(getattr(target, call), arg):
                unreachable.append(f"{struct}.{field}: {owner}.{call} takes no argument '{arg}'")
    assert not unreachable, unreachable
    assert pending == set(NOT_YET_BOUND), ("NOT_YET_BOUND is stale", pending ^ set(NOT_YET_BOUND))


def test_struct_classes_are_exported_and_declared_in_the_stub():
    import ast
    stub_path = os.path.join(os.path.dirname(phonegpt.__file__), "__init__.pyi")
    tree = ast.parse(open(stub_path, encoding="utf-8").read())
    stub = {node.name: node for node in tree.body if isinstance(node, ast.ClassDef)}
    for struct, entry in phonegpt._phonegpt._c_struct_fields.items():
        if struct in NOT_YET_BOUND:
            continue
        name = entry["class"]
        assert name in phonegpt.__all__, f"{name} ({struct}) is not exported by phonegpt/__init__.py"
        assert name in stub, f"{name} ({struct}) is not in __init__.pyi"
        declared = {item.target.id for item in stub[name].body if isinstance(item, ast.AnnAssign)}
        declared |= {item.name for item in stub[name].body if isinstance(item, ast.FunctionDef)}
        attributes = [f for f, route in entry["fields"].items() if route == f"{name}.{f}"]
        missing = [f for f in attributes if f not in declared]
        assert not missing, f"__init__.pyi's {name} lacks {missing}"


def test_config_classes_follow_the_library():
    c = phonegpt.TrainConfig(recompute_activations=True)
    assert c.recompute_activations is True and c.replace(seed=5).recompute_activations is True
    assert phonegpt.TrainConfig() == phonegpt.TrainConfig() != c
    assert "recompute_activations=True" in repr(c)
    assert phonegpt.SampleConfig().max_tokens == 256 and phonegpt.EvalConfig().batch_size == 16
    with pytest.raises(TypeError, match="no field 'max_token'"):
        phonegpt.SampleConfig(max_token=3)
    with pytest.raises(TypeError):
        phonegpt.EvalConfig(progress=print)   # a callback is an argument of evaluate()
    with phonegpt.Model("tiny") as m:
        info = m.tensor_info("h.0.attn.c_attn.weight")
        assert info.shape == (48, 16) and info.n_dims == 2 and info.numel == 48 * 16
        assert m.parameter("h.0.attn.c_attn.weight").shape == info.shape


def test_options_objects_and_keyword_fields_agree(tok, tmp_path):
    with tiny_with(tok) as m:
        randomize(m, seed=9)
        ids = tok.encode(TEXT * 3)
        cfg = phonegpt.EvalConfig(window=8, stride=4)
        assert m.evaluate(ids, cfg).mean_loss == m.evaluate(ids, window=8, stride=4).mean_loss
        assert m.evaluate(ids, cfg, stride=8).n_windows == m.evaluate(ids, window=8).n_windows
        sample = phonegpt.SampleConfig(max_tokens=12, seed=3, temperature=0.7)
        a = m.generate([1, 2], config=sample)
        assert a.shape == (12,)
        assert np.array_equal(a, m.generate([1, 2], 12, seed=3, temperature=0.7))
        assert np.array_equal(m.generate([1, 2], 5, config=sample), a[:5])
        p = tmp_path / "m.pgm"
        m.save(p, phonegpt.SaveOptions(compression_level=3))
        with phonegpt.Model.load(p) as back:
            assert back.config == m.config


def test_import_exports_only_the_api():
    """`import phonegpt` exports exactly __all__ as public names: no stdlib module (codecs,
    queue, threading, ...) and nothing the type stub does not declare."""
    import ast
    import types
    public = {n for n in dir(phonegpt) if not n.startswith("_")}
    modules = {n for n in public if isinstance(getattr(phonegpt, n), types.ModuleType)
               and not getattr(phonegpt, n).__name__.startswith("phonegpt.")}  # own submodules once imported
    assert not modules, modules
    own_submodules = {n for n in public if isinstance(getattr(phonegpt, n), types.ModuleType)}
    assert public - own_submodules == set(phonegpt.__all__) - {"__version__"}, \
        (public - own_submodules) ^ (set(phonegpt.__all__) - {"__version__"})
    stub_path = os.path.join(os.path.dirname(phonegpt.__file__), "__init__.pyi")
    tree = ast.parse(open(stub_path, encoding="utf-8").read())
    declared = {node.name for node in tree.body if isinstance(node, (ast.ClassDef, ast.FunctionDef))}
    declared |= {node.target.id for node in tree.body if isinstance(node, ast.AnnAssign)}
    assert set(phonegpt.__all__) == declared, set(phonegpt.__all__) ^ declared


# ---- sessions ------------------------------------------------------------------------------

def test_session_continues_where_it_stopped_and_matches_the_model(tok):
    with tiny_with(tok) as m:
        randomize(m, seed=9)
        prompt = tok.encode("To be")
        whole = m.generate(prompt, 20, seed=1, n_threads=1)
        with phonegpt.Session(m, phonegpt.SessionConfig(n_threads=1)) as s:
            assert s.n_threads == 1 and s.position == 0 and s.model is m
            s.append(prompt)
            assert s.position == len(prompt)
            logits, _ = m.forward(np.array([prompt]), n_threads=1)
            np.testing.assert_allclose(s.logits(), logits[0, -1], rtol=1e-5, atol=1e-5)
            first = s.generate(8, seed=1)
            assert np.array_equal(first, whole[:8])
            assert s.position == len(prompt) + 8
            s.reset()
            assert s.position == 0
            with pytest.raises(phonegpt.StateError):
                s.generate(3)                          # nothing to continue
            ids = tok.encode(TEXT * 3)
            assert s.evaluate(ids, window=8).mean_loss == m.evaluate(ids, window=8, n_threads=1).mean_loss
            sampled = s.evaluate_sampled(ids, phonegpt.EvalSampledConfig(n_batches=3, batch_size=2), seed=5)
            assert sampled.n_windows == 6
            assert sampled.mean_loss == m.evaluate_sampled(ids, 3, 2, seed=5, n_threads=1).mean_loss
            x = np.array([prompt[:-1]])
            y = np.array([prompt[1:]])
            assert s.forward(x, y)[1] == m.forward(x, y, n_threads=1)[1]
        with pytest.raises(phonegpt.StateError):
            s.position
        with pytest.raises(TypeError):
            phonegpt.Session(m, threads=2)
