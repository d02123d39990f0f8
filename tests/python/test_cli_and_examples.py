"""Python results equal the phonegpt CLI's on the same checkpoint (to the last printed digit),
and the Python examples run end to end."""
import csv
import json
import os
import re
import subprocess
import sys

import numpy as np
import pytest

import phonegpt
from conftest import randomize, skip_or_fail

TEXT = ("First Citizen:\nBefore we proceed any further, hear me speak.\n\nAll:\nSpeak, speak.\n\n"
        "First Citizen:\nYou are all resolved rather to die than to famish?\n") * 12
SRC = os.environ.get("PG_SOURCE_DIR", os.path.join(os.path.dirname(__file__), "..", ".."))


def char_model(seed):
    """A tiny model with TEXT's character tokenizer."""
    tok = phonegpt.Tokenizer.char(TEXT)
    config = phonegpt.ModelConfig.preset("tiny")
    config.vocab_size = tok.vocab_size
    config.padded_vocab_size = 0
    m = phonegpt.Model(config, seed=seed)
    m.tokenizer = tok
    return m


@pytest.fixture
def checkpoint(tmp_path):
    """A tiny trained-looking checkpoint with its tokenizer, and the text file it belongs to."""
    data = tmp_path / "text.txt"
    data.write_text(TEXT, encoding="utf-8")
    with char_model(seed=2) as m:
        randomize(m, seed=3, scale=0.2)
        path = tmp_path / "model.bin"
        m.save(path)
    return path, data


def cli():
    exe = os.environ.get("PHONEGPT_CLI")
    if not exe or not os.path.exists(exe):
        skip_or_fail("the phonegpt CLI is not built (PHONEGPT_CLI unset)")
    return exe


def strict_json(text):
    """One JSON object; Python's json would also read NaN and Infinity, which are not JSON."""
    def no_constant(name):
        raise AssertionError(f"the CLI printed {name}, which is not JSON: {text}")
    return json.loads(text, parse_constant=no_constant)


def run_json(args):
    out = subprocess.run([cli()] + args + ["--json"], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr + out.stdout
    return out.stdout, strict_json(out.stdout)


def printed_number(raw, key):
    """The number exactly as the CLI printed it (to compare digit by digit)."""
    m = re.search(r'"%s"\s*:\s*(-?[0-9.eE+-]+)' % re.escape(key), raw)
    assert m, f"{key} not in {raw}"
    return m.group(1)


def same_digits(printed, value):
    """`value` formatted with the precision of `printed` gives the same text."""
    if "e" in printed.lower():
        mantissa = printed.lower().split("e")[0]
        decimals = len(mantissa.split(".")[1]) if "." in mantissa else 0
        return float(printed) == float(f"{value:.{decimals}e}")
    decimals = len(printed.split(".")[1]) if "." in printed else 0
    return printed == f"{value:.{decimals}f}"


@pytest.mark.parametrize("window,stride", [(0, 0), (8, 3)])
def test_eval_equals_cli(checkpoint, window, stride):
    path, data = checkpoint
    args = ["eval", "--checkpoint", str(path), "--data", str(data)]
    if window:
        args += ["--window", str(window), "--stride", str(stride)]
    raw, js = run_json(args)
    with phonegpt.Model.load(path) as m:
        ids = m.tokenizer.encode(TEXT)
        val = ids[phonegpt.split_index(len(ids), 0.9):]
        r = m.evaluate(val, window=window, stride=stride)
    assert js["ok"] is True
    assert js["scored"] == r.n_scored == len(val) - 1
    assert js["windows"] == r.n_windows
    assert same_digits(printed_number(raw, "loss"), r.mean_loss), (printed_number(raw, "loss"), r.mean_loss)
    assert same_digits(printed_number(raw, "bits_per_char"), r.bits_per_token)
    # The character model on ASCII text: one byte a target, so bits per byte are bits per token.
    assert js["bytes"] == r.n_bytes == r.n_scored
    assert same_digits(printed_number(raw, "bits_per_byte"), r.bits_per_byte)
    assert r.bits_per_byte == r.bits_per_token


def test_sample_equals_cli(checkpoint):
    path, _ = checkpoint
    raw, js = run_json(["sample", "--checkpoint", str(path), "--prompt", "First", "--tokens", "60",
                        "--temperature", "0.8", "--top-k", "10", "--seed", "17"])
    with phonegpt.Model.load(path) as m:
        text = m.generate("First", max_tokens=60, temperature=0.8, top_k=10, seed=17)
    assert js["text"] == text


def test_cli_errors_match_exceptions(tmp_path):
    bad = tmp_path / "bad.bin"
    bad.write_bytes(b"\0" * 100)
    data = tmp_path / "text.txt"
    data.write_text(TEXT, encoding="utf-8")
    out = subprocess.run([cli(), "eval", "--checkpoint", str(bad), "--data", str(data), "--json"],
                         capture_output=True, text=True)
    assert out.returncode == 1
    js = json.loads(out.stdout)
    with pytest.raises(phonegpt.Error) as e:
        phonegpt.Model.load(bad)
    assert js["status"] == e.value.status_name


def test_train_stops_when_the_run_diverges(tmp_path):
    """A run whose numbers stop being finite says so and stops with exit code 1, saving nothing
    past its last finite evaluation (here: none). The token embedding 3e38 is finite, but the
    forward overflows, so the first step's gradient norm is NaN and the trainer refuses it."""
    data = tmp_path / "text.txt"
    data.write_text(TEXT, encoding="utf-8")
    with char_model(seed=2) as m:
        m.parameters()["wte"][...] = 3e38
        trainer = phonegpt.Trainer(m, phonegpt.TrainConfig(batch_size=4, n_threads=1, total_steps=6))
        trainer.save(tmp_path / "trainer.bin")
        del trainer
    out_dir = tmp_path / "out"
    out = subprocess.run([cli(), "train", "--resume", str(tmp_path / "trainer.bin"), "--data", str(data),
                          "--out", str(out_dir), "--json"], capture_output=True, text=True, timeout=120)
    assert out.returncode == 1, out.stderr + out.stdout
    js = strict_json(out.stdout)
    assert js["ok"] is False and js["status"] == "PG_ERR_NOT_FINITE", js
    assert js["diverged"]["step"] == 1 and js["diverged"]["last_saved_step"] is None, js
    assert "the run diverged at step 1" in out.stderr and "not finite" in out.stderr, out.stderr
    assert not (out_dir / "model.bin").exists() and not (out_dir / "trainer.bin").exists()
    assert os.listdir(out_dir / "checkpoints") == []


# ---- examples ------------------------------------------------------------------------------

def run_example(name, *args):
    env = dict(os.environ)
    out = subprocess.run([sys.executable, os.path.join(SRC, "examples", "python", name)] + [str(a) for a in args],
                         capture_output=True, text=True, timeout=300, env=env)
    assert out.returncode == 0, out.stderr + out.stdout
    return out.stdout


def test_score_checkpoints_example(tmp_path, checkpoint):
    path, data = checkpoint
    folder = tmp_path / "run"
    folder.mkdir()
    losses = {}
    with phonegpt.Model.load(path) as m:
        ids = m.tokenizer.encode(TEXT)
        val = ids[phonegpt.split_index(len(ids), 0.9):]
        for step in (100, 200, 300):
            randomize(m, seed=step, scale=0.2)
            m.save(folder / f"model_{step:06d}.bin")
            losses[step] = m.evaluate(val).mean_loss
    (folder / "notes.bin").write_bytes(b"not a checkpoint")
    out = run_example("score_checkpoints.py", folder, "--data", data)
    assert "best:" in out
    rows = list(csv.DictReader(open(folder / "scores.csv")))
    assert [int(r["step"]) for r in rows] == [100, 200, 300]
    for r in rows:
        assert float(r["loss"]) == pytest.approx(losses[int(r["step"])], abs=1e-6)
    png = (folder / "scores.png").read_bytes()
    assert png[:8] == b"\x89PNG\r\n\x1a\n"


def test_compare_pytorch_example(checkpoint):
    path, data = checkpoint
    out = run_example("compare_pytorch.py", path, "--data", data, "--float64")
    lib = float(re.search(r"libphonegpt\s+loss ([0-9.]+)", out).group(1))
    ref = float(re.search(r"PyTorch\s+loss ([0-9.]+)", out).group(1))
    assert abs(lib - ref) / ref < 1e-5



QWEN25_JSON = os.path.join(SRC, "tests", "npm", "node_modules", "@lenml", "tokenizer-qwen2_5", "models",
                           "tokenizer.json")


def test_finetune_answers_example(tmp_path):
    """Qwen's chat template and tokenizer, a narrow Qwen-shaped base, a LoRA adapter trained on
    the answers alone: the answer loss falls, and the scored targets are exactly the answers."""
    if not os.path.isfile(QWEN25_JSON):
        skip_or_fail("the npm peers (scripts/setup.sh) are not installed: no Qwen tokenizer.json")
    batch = tmp_path / "batch.npz"
    out = run_example("finetune_answers.py", QWEN25_JSON, "--layers", 1, "--width", 32, "--heads", 2,
                      "--kv-heads", 1, "--hidden", 64, "--base-steps", 3, "--steps", 8, "--lr", 1e-2,
                      "--print-every", 4, "--save-batch", batch)
    before = float(re.search(r"answer loss before: ([0-9.]+)", out).group(1))
    after = float(re.search(r"answer loss after: ([0-9.]+)", out).group(1))
    steps = [float(x) for x in re.findall(r"step +\d+ +answer loss ([0-9.]+)", out)]
    assert len(steps) == 2 and before > steps[0] > steps[1] > after, out

    # What is scored, read back from the batch the example trained on: in each row the scored
    # targets are one run, decoding to the answer and its <|im_end|>; everything before it
    # (system prompt, question, the template's markup) and the padding after it is -1.
    sys.path.insert(0, os.path.join(SRC, "examples", "python"))
    try:
        import finetune_answers as ex
    finally:
        sys.path.pop(0)
    saved = np.load(batch)
    inputs, targets = saved["inputs"], saved["targets"]
    tok = phonegpt.Tokenizer.from_hf(QWEN25_JSON)
    assert f"{int((targets >= 0).sum())} of {targets.size} targets scored" in out
    for row, (question, answer) in enumerate(ex.PAIRS):
        scored = np.flatnonzero(targets[row] >= 0)
        assert np.array_equal(scored, np.arange(scored[0], scored[-1] + 1))
        assert tok.decode(targets[row, scored]) == answer + "<|im_end|>"
        # The inputs up to the first scored position are the whole prompt.
        prompt = tok.encode_special(ex.chat_prompt(question)).tolist()
        assert scored[0] == len(prompt) - 1
        assert inputs[row, :len(prompt)].tolist() == prompt


def test_eval_equals_cli_on_tiny_shakespeare(tmp_path, shakespeare):
    """The real validation split (111,540 characters, 111,539 scored)."""
    from conftest import data_path
    tok = phonegpt.Tokenizer.char(shakespeare)
    path = tmp_path / "tiny.bin"
    with phonegpt.Model("tiny", seed=4) as m:
        randomize(m, seed=5, scale=0.2)
        m.tokenizer = tok
        m.save(path)
        ids = tok.encode(shakespeare)
        val = ids[phonegpt.split_index(len(ids), 0.9):]
        assert len(val) == 111540
        r = m.evaluate(val)
    raw, js = run_json(["eval", "--checkpoint", str(path), "--data", data_path()])
    assert js["scored"] == r.n_scored == 111539
    assert same_digits(printed_number(raw, "loss"), r.mean_loss), (printed_number(raw, "loss"), r.mean_loss)
