"""Hugging Face model folders through the phonegpt CLI (export --format hf, import --format hf)
and the binding: the folder a model is exported to imports back to the same weights, in the
storage asked for."""
import json
import os
import subprocess

import numpy as np
import pytest

import phonegpt
from conftest import randomize, skip_or_fail


@pytest.fixture
def exe():
    path = os.environ.get("PHONEGPT_CLI")
    if not path:
        skip_or_fail("the phonegpt CLI is not built (PHONEGPT_CLI unset)")
    return path


def run(exe, *args, code=0):
    p = subprocess.run([exe, *map(str, args), "--json"], capture_output=True, text=True, timeout=300)
    assert p.returncode == code, p.stderr
    return json.loads(p.stdout)


def test_cli_exports_and_imports_a_folder(exe, tmp_path):
    with phonegpt.Model("tiny", seed=3) as m:
        randomize(m, seed=4)
        m.parameter("wte")[m.config.vocab_size:] = 0  # padding rows are not in a Hugging Face file
        m.save(tmp_path / "model.bin")
        want = m.parameters()
    folder = tmp_path / "hf"
    out = run(exe, "export", "--checkpoint", tmp_path / "model.bin", "--format", "hf", "--out", folder)
    assert out["ok"] and (folder / "config.json").is_file()
    run(exe, "import", "--format", "hf", "--in", folder, "--out", tmp_path / "back.bin")
    with phonegpt.Model.load(tmp_path / "back.bin") as back:
        for (name, a), (name2, b) in zip(want.items(), back.parameters().items()):
            assert name == name2 and np.array_equal(a, b), name
    run(exe, "import", "--format", "hf", "--in", folder, "--out", tmp_path / "half.bin", "--weights", "bf16")
    with phonegpt.Model.load(tmp_path / "half.bin") as half:
        assert half.weight_storage == "bf16"
    bad = run(exe, "import", "--format", "hf", "--in", tmp_path / "nowhere", "--out", tmp_path / "x.bin", code=1)
    assert not bad["ok"] and "config.json" in json.dumps(bad)
