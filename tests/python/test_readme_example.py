"""README.md's Python block, run as written: its train() and fine_tune() on a small text."""
import math
import os
import re

import phonegpt

README = os.path.join(os.environ.get("PG_SOURCE_DIR", os.path.join(os.path.dirname(__file__), "..", "..")),
                      "README.md")


def readme_python():
    with open(README, encoding="utf-8") as f:
        blocks = re.findall(r"^```python\n(.*?)^```", f.read(), re.M | re.S)
    assert blocks, "README.md has no ```python block"
    return "\n".join(blocks)


def test_readme_python_example_trains_a_model_and_an_adapter(tmp_path):
    example = {}
    exec(compile(readme_python(), README, "exec"), example)
    text = "First Citizen:\nBefore we proceed any further, hear me speak.\n\n" * 120
    base, adapter = tmp_path / "base.bin", tmp_path / "adapter.safetensors"
    example["train"](text, 2, str(base))
    loss = example["fine_tune"](str(base), text, 2, str(adapter))
    assert math.isfinite(loss) and 0 < loss < 10, loss
    with phonegpt.Model.load(base) as model, phonegpt.Adapter.load(adapter, model) as a:
        assert a.training_record()["steps"] == 2 and a.config.rank == 8
