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


# ---- special tokens and the trainer's threads ------------------------------------------------

def test_special_id_of_bpe_special_tokens():
    tok = phonegpt.Tokenizer.from_tiktoken(small_ranks(), "cl100k_base")
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
