"""The C API the Python binding reaches since it matches the Kotlin one (the ctest
python_api_coverage keeps them matched): adapters attached to sessions, the 16-bit frozen base,
special token ids, the trainer's threads, TokenStream and Model.stream over it, and
LoraConfig.validate."""
import codecs
import gc
import platform
import sys

import numpy as np
import pytest

import phonegpt
from conftest import randomize, rel_err, small_ranks

# The tensors a 16-bit frozen base holds in 16 bits (phonegpt.h, pg_weight_storage).
LINEARS = ("attn.c_attn.weight", "attn.c_proj.weight", "mlp.c_fc.weight", "mlp.c_proj.weight")


def is_16_bit(name):
    return name == "wte" or name.endswith(LINEARS)


def random_base(seed):
    """A tiny model with non-trivial weights, allowed as a LoRA base (it was never trained)."""
    m = phonegpt.Model("tiny", seed=seed)
    randomize(m, seed)
    m.allow_untrained_base()
    return m


def random_adapter(base, seed, **fields):
    """An adapter of base on every linear whose B is not zero (a fresh one changes nothing)."""
    a = phonegpt.Adapter.create(base, rank=4, alpha=8.0, target_modules=15, **fields)
    rng = np.random.default_rng(seed)
    a.set_weights([(0.2 * rng.standard_normal(w.shape)).astype(np.float32) for w in a.get_weights()])
    return a


def ids_for(model, seed, shape):
    return np.random.default_rng(seed).integers(0, model.config.vocab_size, size=shape, dtype=np.int32)


# ---- adapters on sessions ------------------------------------------------------------------

def test_an_attached_adapter_gives_the_merged_models_results_and_detaching_the_bases():
    with random_base(3) as base:
        adapter = random_adapter(base, 4)
        merged = adapter.merge(base)
        weights_before = base.flat_parameters().copy()
        prompt = ids_for(base, 5, 12)
        x = ids_for(base, 6, (2, 10))
        base_logits = base.forward(x, n_threads=1)[0]
        merged_logits = merged.forward(x, n_threads=1)[0]
        assert rel_err(merged_logits, base_logits) > 1e-2     # the adapter changes the outputs
        bound = 1e-5 * np.max(np.abs(merged_logits))          # the merge bound (docs/lora.md)
        with phonegpt.Session(base, n_threads=1) as s, phonegpt.Session(base, n_threads=1) as plain:
            assert s.adapter is None
            s.append(prompt)
            base_next = s.logits()
            s.attach_adapter(adapter)
            assert s.adapter is adapter and s.position == len(prompt)   # the sequence is kept
            want_next = merged.forward(prompt[None, :], n_threads=1)[0][0, -1]
            assert np.max(np.abs(s.logits() - want_next)) <= bound     # recomputed with the adapter
            assert np.max(np.abs(s.forward(x)[0] - merged_logits)) <= bound
            ev = s.evaluate(ids_for(base, 7, 60), window=8)
            assert ev.mean_loss == pytest.approx(merged.evaluate(ids_for(base, 7, 60), window=8).mean_loss, rel=1e-5)
            greedy = s.generate(8, temperature=0.0)
            assert np.array_equal(greedy, merged.generate(prompt, 8, temperature=0.0, n_threads=1))
            # another session of the same base has no adapter
            assert np.array_equal(plain.forward(x)[0], base_logits)
            s.detach_adapter()
            assert s.adapter is None
            s.detach_adapter()                                   # nothing attached: nothing happens
            assert np.array_equal(s.forward(x)[0], base_logits)  # the base's, bit for bit
            s.reset()
            s.append(prompt)
            assert np.array_equal(s.logits(), base_next)
        assert np.array_equal(base.flat_parameters(), weights_before)  # the model is never written


def test_attaching_another_bases_adapter_raises_and_keeps_the_attached_one():
    with random_base(3) as base, random_base(8) as same_shape, \
            phonegpt.Model(phonegpt.ModelConfig.preset("tiny").replace(n_layer=3), seed=3) as deeper:
        deeper.allow_untrained_base()
        mine = random_adapter(base, 4)
        with phonegpt.Session(base, n_threads=1) as s:
            s.append([1, 2, 3])
            s.attach_adapter(mine)
            before = s.logits()
            with pytest.raises(phonegpt.GeometryError) as e:
                s.attach_adapter(random_adapter(deeper, 4))     # another geometry
            assert "n_layer = 3" in str(e.value) and "n_layer = 2" in str(e.value)   # both sides
            with pytest.raises(phonegpt.GeometryError, match="weights"):
                s.attach_adapter(random_adapter(same_shape, 4))  # the same geometry, other weights
            with pytest.raises(TypeError):
                s.attach_adapter(base)
            assert s.adapter is mine
            assert np.array_equal(s.logits(), before)
            replacement = random_adapter(base, 9)
            s.attach_adapter(replacement)                        # replaces the attached one
            assert s.adapter is replacement
            assert not np.array_equal(s.logits(), before)
        with pytest.raises(phonegpt.StateError):
            s.attach_adapter(mine)                               # closed session


def test_the_session_keeps_its_adapter_alive_while_attached():
    with random_base(3) as base:
        adapter = random_adapter(base, 4)
        names = adapter.tensor_names()
        want = adapter.merge(base).forward(np.array([[5, 6, 7]]), n_threads=1)[0][0, -1]
        with phonegpt.Session(base, n_threads=1) as s:
            refs = sys.getrefcount(adapter)
            s.attach_adapter(adapter)
            assert sys.getrefcount(adapter) == refs + 1
            s.detach_adapter()
            assert sys.getrefcount(adapter) == refs
            s.attach_adapter(adapter)
            del adapter
            gc.collect()
            s.append([5, 6, 7])
            np.testing.assert_allclose(s.logits(), want, rtol=0, atol=1e-5 * np.max(np.abs(want)))
            assert s.adapter.tensor_names() == names
            s.adapter.close()                 # drops the Python object's reference only
            s.reset()
            s.append([5, 6, 7])
            np.testing.assert_allclose(s.logits(), want, rtol=0, atol=1e-5 * np.max(np.abs(want)))
            assert s.adapter.closed


# ---- the 16-bit frozen base ----------------------------------------------------------------

def round_to(storage, a):
    """numpy's rounding of fp32 values to the 16-bit format, back in fp32 (nearest, ties to even)."""
    if storage == "fp16":
        return a.astype(np.float16).astype(np.float32)
    u = a.astype(np.float32).view(np.uint32).astype(np.uint64)
    u = (u + 0x7FFF + ((u >> 16) & 1)) >> 16 << 16
    return u.astype(np.uint32).view(np.float32)


@pytest.mark.parametrize("storage", ["fp16", "bf16"])
def test_weight_storage_halves_the_matrices_and_gives_the_fp32_results_of_the_rounded_weights(tmp_path, storage):
    x = np.random.default_rng(1).integers(0, 65, size=(2, 16), dtype=np.int32)
    with random_base(11) as m, random_base(11) as rounded:
        assert m.weight_storage == "fp32" and m.weight_bytes == 4 * m.num_params
        fp32_logits = m.forward(x, n_threads=1)[0]
        n16 = 0
        for name, view in rounded.parameters().items():
            if is_16_bit(name):
                view[...] = round_to(storage, view)
                n16 += view.size
        want = rounded.forward(x, n_threads=1)[0]
        ln_f = m.parameter("ln_f.weight").copy()

        m.set_weight_storage(storage)
        assert m.weight_storage == storage
        assert m.weight_bytes == 4 * m.num_params - 2 * n16
        got = m.forward(x, n_threads=1)[0]
        np.testing.assert_array_equal(got, want)   # exactly the fp32 model over the rounded values
        # The rounding's effect on the logits (weights ~ N(0, 0.3)): fp16 keeps 11 significant
        # bits, bf16 8, so the logits move by about 1e-3 and 1e-2 of their largest value
        # (measured: 1.3e-3 and 1.2e-2).
        err = rel_err(got, fp32_logits)
        assert 0 < err < (2e-3 if storage == "fp16" else 2e-2), err

        # the fp32 tensors stay readable; the 16-bit ones have no fp32 values any more
        np.testing.assert_array_equal(m.parameter("ln_f.weight", writable=False), ln_f)
        for fp32_use in (lambda: m.parameter("wte", writable=False), lambda: m.parameter("ln_f.weight"),
                         lambda: m.flat_parameters(), lambda: phonegpt.Trainer(m),
                         lambda: m.set_weight_storage("fp32")):
            with pytest.raises(phonegpt.StateError):
                fp32_use()
        with random_adapter(m, 1).merge(m) as merged:     # into an fp32 copy of the 16-bit values
            assert merged.weight_storage == "fp32"
        with pytest.raises(phonegpt.StateError):
            m.set_weight_storage("bf16" if storage == "fp16" else "fp16")   # the other family
        with pytest.raises(phonegpt.InvalidArgument, match="fp16_arithmetic"):
            m.set_weight_storage("fp8")

        # the plain storage and its arithmetic switch freely; on CPUs without 16-bit arithmetic
        # (x86 for fp16, x86 without AVX512_BF16 for bf16) the results stay the same bits
        m.set_weight_storage(storage + "_arithmetic")
        assert m.weight_storage == storage + "_arithmetic"
        assert rel_err(m.forward(x, n_threads=1)[0], want) < 2e-2
        if storage == "fp16" and platform.machine() in ("x86_64", "AMD64"):
            np.testing.assert_array_equal(m.forward(x, n_threads=1)[0], want)
        m.set_weight_storage(storage)

        # saved and loaded as a 16-bit checkpoint; an fp32 file cannot be written any more
        path = tmp_path / "base16.pgm"
        m.save(path)
        with phonegpt.Model.load(path) as back:
            assert back.weight_storage == storage and back.weight_bytes == m.weight_bytes
            np.testing.assert_array_equal(back.forward(x, n_threads=1)[0], want)
        with pytest.raises(phonegpt.StateError):
            m.save(tmp_path / "fp32.pgm", weight_storage=0)


def test_a_16_bit_base_serves_sessions_with_adapters_made_for_its_fp32_weights():
    with random_base(3) as base:
        adapter = random_adapter(base, 4)                 # made for the fp32 weights
        x = ids_for(base, 6, (1, 10))
        fp32_merged = adapter.merge(base).forward(x, n_threads=1)[0]
        base.set_weight_storage("fp16")
        with phonegpt.Session(base, n_threads=1) as s:
            s.attach_adapter(adapter)                     # the fingerprint is the fp32 weights'
            assert rel_err(s.forward(x)[0], fp32_merged) < 2e-3


def test_weight_storage_is_refused_while_views_or_a_trainer_use_the_fp32_weights():
    with random_base(2) as m:
        view = m.parameter("h.0.mlp.c_fc.weight")[:2]     # a slice keeps its base view
        with pytest.raises(phonegpt.StateError, match="view"):
            m.set_weight_storage("fp16")
        flat = m.flat_parameters()
        del view
        with pytest.raises(phonegpt.StateError):
            m.set_weight_storage("bf16")
        del flat
        gc.collect()
        t = phonegpt.Trainer(m, batch_size=1, seq_len=4)
        with pytest.raises(phonegpt.StateError, match="free the trainer first"):  # the library's refusal
            m.set_weight_storage("fp16")
        m.set_weight_storage("fp32")                       # the same storage: nothing to free
        t.close()
        m.set_weight_storage("fp16")                       # nothing uses the fp32 weights now
        assert m.weight_storage == "fp16"


def test_a_weight_beyond_fp16_is_refused_and_changes_nothing():
    with random_base(2) as m:
        m.parameter("h.1.attn.c_proj.weight")[0, 0] = 1e5
        before = m.flat_parameters().copy()
        gc.collect()
        with pytest.raises(phonegpt.NotFinite, match="h.1.attn.c_proj.weight"):
            m.set_weight_storage("fp16")
        assert m.weight_storage == "fp32"
        assert np.array_equal(m.flat_parameters(), before)
        m.set_weight_storage("bf16")                       # bf16 has fp32's range
        assert m.weight_storage == "bf16"


# ---- special tokens and the trainer's threads ------------------------------------------------

def test_special_id_of_bpe_special_tokens():
    tok = phonegpt.Tokenizer.from_tiktoken(small_ranks("cl100k_base"), "cl100k_base")
    assert tok.special_id("<|endoftext|>") == 100257
    assert tok.encode_special("hello<|endoftext|>").tolist()[-1] == tok.special_id("<|endoftext|>")
    trained = phonegpt.Tokenizer.train("the cat sat on the mat " * 20, 262, special_tokens=["<|endoftext|>", "<|pad|>"])
    assert (trained.special_id("<|endoftext|>"), trained.special_id("<|pad|>")) == (0, 1)
    with pytest.raises(phonegpt.InvalidArgument, match="not a special token"):
        tok.special_id("<|nope|>")
    with pytest.raises(phonegpt.InvalidArgument, match="not a special token"):
        tok.special_id("hello")                            # a token, but not a special one
    with phonegpt.Tokenizer.char("abc") as char, pytest.raises(phonegpt.InvalidArgument, match="byte-level BPE"):
        char.special_id("<|endoftext|>")


def test_trainer_threads_can_change_between_steps():
    ids = np.arange(400, dtype=np.int32) % 60
    options = dict(batch_size=2, seq_len=8, n_threads=1, warmup_steps=1, total_steps=10)
    with random_base(4) as m, random_base(4) as twin:
        t = phonegpt.Trainer(m, **options)
        same = phonegpt.Trainer(twin, **options)
        for trainer in (t, same):
            trainer.set_data(ids)
        assert t.n_threads == 1 and t.config.n_threads == 1
        t.n_threads = 1                                    # the count it runs on: nothing changes
        assert [t.step().loss for _ in range(2)] == [same.step().loss for _ in range(2)]
        t.n_threads = 2
        assert t.n_threads == 2 and t.config.n_threads == 2
        assert t.step().loss == pytest.approx(same.step().loss, rel=1e-5)  # up to float rounding
        t.n_threads = 0                                    # all cores
        assert t.n_threads >= 1
        for bad in (1025, 100_000):
            with pytest.raises(phonegpt.InvalidArgument):
                t.n_threads = bad
        assert t.n_threads >= 1
        t.close()
        with pytest.raises(phonegpt.StateError):
            t.n_threads


def test_trainer_threads_are_saved(tmp_path):
    with random_base(4) as m, phonegpt.Trainer(m, batch_size=2, seq_len=8, n_threads=1) as t:
        t.n_threads = 2
        t.save(tmp_path / "run.pgt")
    with phonegpt.Trainer.resume(tmp_path / "run.pgt") as back:
        assert back.n_threads == 2 and back.config.n_threads == 2


def test_lora_config_validate_names_the_bad_field():
    phonegpt.LoraConfig().validate()
    with pytest.raises(phonegpt.InvalidArgument, match="rank"):
        phonegpt.LoraConfig(rank=0).validate()
    with pytest.raises(phonegpt.InvalidArgument, match="alpha"):
        phonegpt.LoraConfig(alpha=-1.0).validate()
    with pytest.raises(phonegpt.InvalidArgument, match="dropout"):
        phonegpt.LoraConfig(dropout=1.0).validate()


# ---- TokenStream -----------------------------------------------------------------------------

def codecs_pieces(byte_tokens):
    """What Model.stream yielded before TokenStream: Python's incremental UTF-8 decoder with
    errors="replace" over each token's bytes, then its final flush."""
    decoder = codecs.getincrementaldecoder("utf-8")("replace")
    return [decoder.decode(b) for b in byte_tokens] + [decoder.decode(b"", final=True)]


def has_surrogate_start(raw):
    """ED A0..ED BF begin the encoding of a UTF-16 surrogate, which is never valid UTF-8. The C
    stream replaces them as soon as the second byte comes; Python's incremental decoder holds
    them until the next byte (or the end) before it replaces the same bytes: the only place the
    pieces differ (the joined text never does)."""
    return any(a == 0xED and 0xA0 <= b <= 0xBF for a, b in zip(raw, raw[1:]))


def stream_pieces(tok, ids):
    with phonegpt.TokenStream(tok) as s:
        return [s.push(int(i)) for i in ids] + [s.finish()]


def test_token_stream_joins_characters_split_across_tokens():
    tok = phonegpt.Tokenizer.from_tiktoken(small_ranks("gpt2"), "gpt2")   # ids 0..255 are the bytes
    text = "hello w\u00f6rld \u2603 \U0001d11e"
    ids = list(text.encode())                                  # one token per byte
    pieces = stream_pieces(tok, ids)
    assert "".join(pieces) == tok.decode(ids) == text
    snowman = text.encode().index("\u2603".encode())
    assert pieces[snowman:snowman + 3] == ["", "", "\u2603"]   # its 3 bytes, the last completes it
    clef = text.encode().index("\U0001d11e".encode())
    assert pieces[clef:clef + 4] == ["", "", "", "\U0001d11e"]
    assert pieces[-1] == ""                                     # nothing held at the end
    merged = tok.encode(text)                                   # 'hello' and ' w' as one token each
    assert len(merged) < len(ids) and "".join(stream_pieces(tok, merged)) == text
    with phonegpt.Tokenizer.char(text) as char:                # a character tokenizer streams too
        assert stream_pieces(char, char.encode(text))[:-1] == list(text)


@pytest.mark.parametrize("raw, text", [
    (b"\xe2\x82A", "\ufffdA"),                      # phonegpt.h's example: a truncated sequence
    (b"\xff\xfeok", "\ufffd\ufffdok"),              # bytes that start no sequence
    (b"\xc0\xaf", "\ufffd\ufffd"),                  # overlong
    (b"ok\xf0\x9f\x98", "ok\ufffd"),                # unfinished at the end: finish() flushes it
])
def test_token_stream_replaces_invalid_utf8_as_python_does(raw, text):
    tok = phonegpt.Tokenizer.from_tiktoken(small_ranks("gpt2"), "gpt2")
    pieces = stream_pieces(tok, list(raw))
    assert "".join(pieces) == text == raw.decode("utf-8", "replace") == tok.decode(list(raw))
    assert pieces == codecs_pieces([bytes([b]) for b in raw])   # piece by piece too


def test_token_stream_replaces_a_surrogate_at_once_where_python_waits():
    """The one difference from Python's incremental decoder (the C API's behaviour is the
    binding's): ED A0 can never become valid UTF-8, so the stream gives its two U+FFFD at the
    second byte; codecs waits for a third byte. The text joined is the same."""
    tok = phonegpt.Tokenizer.from_tiktoken(small_ranks("gpt2"), "gpt2")
    raw = b"\xed\xa0\x80A"
    assert stream_pieces(tok, list(raw)) == ["", "\ufffd\ufffd", "\ufffd", "A", ""]
    assert codecs_pieces([bytes([b]) for b in raw]) == ["", "", "\ufffd\ufffd\ufffd", "A", ""]
    assert raw.decode("utf-8", "replace") == "\ufffd\ufffd\ufffdA" == tok.decode(list(raw))


def test_token_stream_equals_pythons_incremental_decoder_on_random_bytes():
    """The C stream's replacement policy is Python's errors="replace" (one U+FFFD per maximal
    subpart): on random byte strings mixing valid UTF-8, its prefixes and stray bytes, the text
    is the same, and each push yields what the codecs decoder yields for that token's bytes
    unless a surrogate's first bytes come (has_surrogate_start)."""
    tok = phonegpt.Tokenizer.from_tiktoken(small_ranks("gpt2"), "gpt2")
    rng = np.random.default_rng(2024)
    alphabet = ["a", "\u00e9", "\u2603", "\U0001d11e", "\u0800", "\U0010ffff", "\ud7ff", "\ue000"]
    surrogates = 0
    for _ in range(1000):
        raw = bytearray()
        for _ in range(rng.integers(1, 12)):
            c = alphabet[rng.integers(len(alphabet))].encode()
            r = rng.random()
            raw += c if r < 0.6 else c[: rng.integers(1, len(c) + 1)] if r < 0.8 else bytes([rng.integers(128, 256)])
        pieces, before = stream_pieces(tok, list(raw)), codecs_pieces([bytes([b]) for b in raw])
        assert "".join(pieces) == "".join(before) == bytes(raw).decode("utf-8", "replace"), bytes(raw)
        if has_surrogate_start(raw):
            surrogates += 1
        else:
            assert pieces == before, bytes(raw)
    assert surrogates > 0        # the case where only the pieces differ was drawn too


def test_token_stream_errors_and_lifetime():
    tok = phonegpt.Tokenizer.from_tiktoken(small_ranks("gpt2"), "gpt2")
    s = phonegpt.TokenStream(tok)
    assert s.tokenizer is tok
    assert s.push(0xE2) == "" and s.push(0x82) == ""
    with pytest.raises(phonegpt.InvalidArgument):
        s.push(tok.vocab_size + 1000)                  # refused, and nothing consumed
    assert s.push(0xAC) == "\u20ac"
    assert s.push(0xE2) == "" and s.finish() == "\ufffd"
    assert s.push(ord("x")) == "x"                     # finish() started a new text
    tok.close()                                        # the stream keeps the native tokenizer
    assert s.push(ord("y")) == "y"
    s.close()
    assert s.closed
    with pytest.raises(phonegpt.StateError):
        s.push(ord("z"))
    with pytest.raises(TypeError):
        phonegpt.TokenStream("not a tokenizer")


def test_model_stream_is_unchanged_over_a_byte_level_tokenizer():
    """Model.stream decodes with TokenStream now (it used Python's codecs): the same pieces,
    token by token, for a model whose random weights emit split and invalid UTF-8."""
    text = "caf\u00e9 na\u00efve \u65e5\u672c \u2603 the cat sat on the mat.\n" * 8
    tok = phonegpt.Tokenizer.train(text, 300)
    config = phonegpt.ModelConfig.preset("tiny").replace(vocab_size=tok.vocab_size, padded_vocab_size=0)
    with phonegpt.Model(config, seed=5) as m:
        randomize(m, seed=6)
        m.tokenizer = tok
        prompt = "caf\u00e9 \u65e5"
        ids = m.generate(tok.encode(prompt), 60, seed=4)
        byte_tokens = [tok.decode_bytes([i]) for i in ids]
        assert any(len(b) and not _is_utf8(b) for b in byte_tokens)   # some tokens split or break UTF-8
        pieces = list(m.stream(prompt, 60, seed=4))
        assert not has_surrogate_start(b"".join(byte_tokens))
        assert pieces == [p for p in codecs_pieces(byte_tokens) if p]
        assert "".join(pieces) == m.generate(prompt, 60, seed=4) == tok.decode(ids)


def _is_utf8(b):
    try:
        b.decode("utf-8")
        return True
    except UnicodeDecodeError:
        return False


@pytest.mark.parametrize("storage", ["q8_0", "q4_0"])
def test_a_quantized_base_serves_sessions_and_lora_in_exact_and_int8_arithmetic(storage):
    """set_weight_storage('q8_0' / 'q4_0') quantizes the embedding and block linears (rows of 32);
    exact sessions stay close to the fp32 logits, int8 arithmetic close to the exact ones, and an
    adapter made for the fp32 weights attaches."""
    config = phonegpt.ModelConfig.preset("tiny").replace(n_embd=32)
    x = np.random.default_rng(2).integers(0, 65, size=(2, 16), dtype=np.int32)
    with phonegpt.Model(config, seed=5) as m:
        m.allow_untrained_base()
        adapter = random_adapter(m, 4)
        fp32_bytes = m.weight_bytes
        with phonegpt.Session(m, n_threads=1) as s:
            fp32_logits = s.forward(x)[0]
        with pytest.raises(phonegpt.InvalidArgument, match="arithmetic"):
            phonegpt.Session(m, arithmetic="int8")                # int8 needs a quantized base
        m.set_weight_storage(storage)
        assert m.weight_storage == storage and m.weight_bytes < 0.45 * fp32_bytes
        with phonegpt.Session(m, n_threads=1) as s:
            exact = s.forward(x)[0]
        with phonegpt.Session(m, n_threads=1, arithmetic="int8") as s:
            int8 = s.forward(x)[0]
            s.attach_adapter(adapter)                             # the fingerprint is the fp32 weights'
        assert 0 < rel_err(exact, fp32_logits) < (3e-2 if storage == "q8_0" else 2e-1)
        assert 0 < rel_err(int8, exact) < 2e-2
        for fp32_use in (lambda: phonegpt.Trainer(m), lambda: m.set_weight_storage("fp32"),
                         lambda: m.set_weight_storage("q4_0" if storage == "q8_0" else "q8_0")):
            with pytest.raises(phonegpt.StateError):
                fp32_use()


@pytest.mark.parametrize("storage,code", [("q8_0", 5), ("q4_0", 6)])
def test_a_quantized_base_saves_loads_and_maps_in_its_blocks(tmp_path, storage, code):
    """Model.save writes a q8_0 / q4_0 model in its blocks (format 1.6); Model.load gives it back,
    copied or mapped, with the same logits and the fp32 base's fingerprint; Model.load of the fp32
    file with weight_storage=5 / 6 quantizes it while reading to the same blocks."""
    config = phonegpt.ModelConfig.preset("tiny").replace(n_embd=32)
    x = np.random.default_rng(3).integers(0, 65, size=(2, 16), dtype=np.int32)
    with phonegpt.Model(config, seed=6) as m:
        m.allow_untrained_base()
        adapter = random_adapter(m, 4)                            # made for the fp32 weights
        m.save(tmp_path / "fp32.pgck")
        m.set_weight_storage(storage)
        want = m.forward(x, n_threads=1)[0]
        m.save(tmp_path / "q.pgck")
        assert (tmp_path / "q.pgck").stat().st_size < 0.45 * (tmp_path / "fp32.pgck").stat().st_size
        with pytest.raises(phonegpt.StateError):
            m.save(tmp_path / "f16.pgck", weight_storage=1)       # its fp32 values are gone
        for path, fields in ((tmp_path / "q.pgck", {}), (tmp_path / "q.pgck", {"map_weights": 1}),
                             (tmp_path / "fp32.pgck", {"weight_storage": code})):
            with phonegpt.Model.load(path, **fields) as back:
                assert back.weight_storage == storage and back.weight_bytes <= m.weight_bytes
                np.testing.assert_array_equal(back.forward(x, n_threads=1)[0], want)
                with phonegpt.Session(back, n_threads=1) as s:
                    s.attach_adapter(adapter)                     # one base, whatever its storage
