"""pytest setup: import the phonegpt package from the build tree ($PHONEGPT_PYDIR, set by
tests/cmake/python.cmake) or, without it, from wherever it is installed."""
import base64
import itertools
import json
import os
import subprocess
import sys

import numpy as np
import pytest

_pydir = os.environ.get("PHONEGPT_PYDIR")
if _pydir:
    sys.path.insert(0, _pydir)

import phonegpt  # noqa: E402


REQUIRE_ALL = os.environ.get("PG_REQUIRE_ALL_TESTS") == "1"


def skip_or_fail(reason):
    """Skips the calling test, saying why; fails it when every test is required
    (PG_REQUIRE_ALL_TESTS, which scripts/test.sh sets): there a skip would be a pass."""
    if REQUIRE_ALL:
        pytest.fail(f"{reason} (PG_REQUIRE_ALL_TESTS: every test must run)")
    pytest.skip(reason)


def data_path():
    """Tiny Shakespeare, or None when absent (tests that need it skip, saying so)."""
    p = os.environ.get("PG_DATA_PATH")
    if not p:
        src = os.environ.get("PG_SOURCE_DIR", os.path.join(os.path.dirname(__file__), "..", ".."))
        p = os.path.join(src, "..", "shared", "data", "tinyshakespeare.txt")
    return p if os.path.isfile(p) else None


@pytest.fixture(scope="session")
def shakespeare():
    p = data_path()
    if p is None:
        skip_or_fail("Tiny Shakespeare not found (set PG_DATA_PATH)")
    with open(p, encoding="utf-8") as f:
        return f.read()


@pytest.fixture(scope="session")
def char_tokenizer(shakespeare):
    return phonegpt.Tokenizer.char(shakespeare)


@pytest.fixture
def exe():
    """The phonegpt CLI binary of the build ($PHONEGPT_CLI)."""
    path = os.environ.get("PHONEGPT_CLI")
    if not path:
        skip_or_fail("the phonegpt CLI is not built (PHONEGPT_CLI unset)")
    return path


def run_cli(exe, *args, code=0, json_out=True):
    """Runs the CLI (with --json unless json_out is False), requires exit code `code`, and
    returns (the parsed JSON or the plain stdout, stderr)."""
    p = subprocess.run([exe, *map(str, args), *(["--json"] if json_out else [])], capture_output=True, text=True,
                       timeout=300)
    assert p.returncode == code, (p.returncode, p.stderr)
    return (json.loads(p.stdout) if json_out else p.stdout), p.stderr


@pytest.fixture
def tiny_model():
    with phonegpt.Model("tiny", seed=7) as m:
        yield m


def randomize(model, seed, scale=0.3):
    """Writes non-trivial weights through the writable views (LayerNorm gains around 1,
    everything else ~ N(0, scale)), padding rows included, so a cross-check cannot pass by
    symmetry of the initialisation and padding rows that leak into results are caught."""
    rng = np.random.default_rng(seed)
    for name, view in model.parameters().items():
        if name.endswith("ln_1.weight") or name.endswith("ln_2.weight") or name == "ln_f.weight":
            view[...] = 1.0 + 0.2 * rng.standard_normal(view.shape)
        else:
            view[...] = scale * rng.standard_normal(view.shape)


def random_batch(rng, B, T, vocab):
    x = rng.integers(0, vocab, size=(B, T), dtype=np.int32)
    y = rng.integers(0, vocab, size=(B, T), dtype=np.int32)
    return x, y


def rel_err(a, b):
    """max |a - b| / max |b|: a norm-wise relative error, meaningful for tensors with entries
    near zero (where elementwise relative error is not)."""
    a = np.asarray(a, dtype=np.float64)
    b = np.asarray(b, dtype=np.float64)
    scale = np.max(np.abs(b)) if b.size else 0.0
    return float(np.max(np.abs(a - b)) / scale) if scale > 0 else float(np.max(np.abs(a - b), initial=0.0))


# The rank counts libphonegpt pins for the encodings it knows (as tiktoken does).
KNOWN_RANKS = {"gpt2": 50256, "r50k_base": 50256, "cl100k_base": 100256, "o200k_base": 199998}


def small_ranks(encoding=None):
    """A .tiktoken file: the 256 bytes (id = byte value), then 'he', 'll', 'hell', 'hello', ' w'.
    For a known encoding (which pins its rank count) the ranks go on to that count with tokens
    of bytes 0x80..0xFF only (pairs, then a pair and a byte), which no ASCII text meets."""
    tokens = [bytes([b]) for b in range(256)] + [b"he", b"ll", b"hell", b"hello", b" w"]
    if encoding is not None:
        high = range(0x80, 0x100)
        pairs = [bytes([a, b]) for a in high for b in high]
        triples = (p + bytes([c]) for p in pairs for c in high)
        need = KNOWN_RANKS[encoding] - len(tokens)
        tokens += pairs[:need] + list(itertools.islice(triples, max(0, need - len(pairs))))
    return b"".join(base64.b64encode(t) + b" %d\n" % i for i, t in enumerate(tokens))
