"""No argument hangs, exhausts the machine or escapes as an untyped error: generation bounded by
max_tokens but sized by the tokens that come, thread counts capped, files that are not regular
refused before they are read, out-of-range ids and lone surrogates as typed errors."""
import os
import time

import numpy as np
import pytest

import phonegpt


def test_generate_grows_with_the_tokens_not_max_tokens(tiny_model):
    seen = []
    t0 = time.perf_counter()
    out = tiny_model.generate(np.array([1, 2, 3]), max_tokens=2**31 - 1, seed=1,
                              on_token=lambda t: seen.append(t) or len(seen) >= 5)
    assert time.perf_counter() - t0 < 5.0       # 2^31 ids up front were 8.6 GB
    assert out.dtype == np.int32 and out.tolist() == seen and len(seen) == 5


def test_stream_grows_with_the_tokens_not_max_tokens(tiny_model):
    t0 = time.perf_counter()
    it = tiny_model.stream(np.array([1, 2, 3]), max_tokens=2**31 - 1, seed=1)
    first = [next(it) for _ in range(5)]
    it.close()
    assert time.perf_counter() - t0 < 5.0
    assert first == tiny_model.generate(np.array([1, 2, 3]), max_tokens=5, seed=1).tolist()


def test_thread_counts_are_capped(tiny_model):
    cap = min(256, 4 * (os.cpu_count() or 1))
    with phonegpt.Session(tiny_model, n_threads=100_000) as s:
        assert s.n_threads == cap
    logits, _ = tiny_model.forward(np.ones((1, 4), dtype=np.int32), n_threads=100_000)
    assert logits.shape[:2] == (1, 4)


@pytest.mark.parametrize("ids", [
    np.array([2**63], dtype=np.uint64),
    np.array([2**64 - 1], dtype=np.uint64),
    [2**63],
    [2**64],
    [-(2**63) - 1],
    [1, 2**100],
])
def test_token_ids_out_of_range_are_invalid_arguments(tiny_model, ids):
    with pytest.raises(phonegpt.InvalidArgument, match="outside int32"):
        tiny_model.forward(np.asarray(ids).reshape(1, -1))
    tok = phonegpt.Tokenizer.char("abc")
    with pytest.raises(phonegpt.InvalidArgument, match="outside int32"):
        tok.decode(ids)


def test_object_arrays_of_small_ints_still_work(tiny_model):
    a, _ = tiny_model.forward(np.array([[1, 2]], dtype=object))
    b, _ = tiny_model.forward(np.array([[1, 2]], dtype=np.int32))
    assert np.array_equal(a, b)


def test_a_lone_surrogate_is_a_unicode_encode_error():
    text = "abc\ud800def"
    with pytest.raises(UnicodeEncodeError, match="surrogates not allowed"):
        phonegpt.DataFilter().apply(text)
    tok = phonegpt.Tokenizer.char("abcdef")
    with pytest.raises(UnicodeEncodeError, match="surrogates not allowed"):
        tok.encode(text)
    with pytest.raises(UnicodeEncodeError):
        tok.encode_special(text)
    assert tok.encode(b"abc").tolist() == tok.encode("abc").tolist()   # bytes still accepted
    with pytest.raises(TypeError, match="text must be str or bytes"):
        tok.encode(3)


def test_files_that_are_not_regular_are_refused_at_once(tmp_path):
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    for path, what in [(fifo, "a FIFO"), ("/dev/zero", "a character device"), (tmp_path, "a directory")]:
        t0 = time.perf_counter()
        with pytest.raises(phonegpt.IOError, match=what):
            phonegpt.read_file(path)
        with pytest.raises(phonegpt.IOError, match=what):
            phonegpt.Model.load(path)
        assert time.perf_counter() - t0 < 5.0
