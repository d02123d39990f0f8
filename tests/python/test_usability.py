"""What a new user meets first, through the real CLI binary (PHONEGPT_CLI) and the binding: the
help lists every command, a misspelt option gets a suggestion, --out and export folders are
created, 16-bit checkpoints score, a never-trained base is refused naming the option that
allows it, a warm-up longer than the run is shortened with a warning, tokenizer files load by
path or bytes, and errors and reprs name what the user gave."""
import math
import shutil
import warnings

import pytest

import phonegpt
from test_bpe_binding import small_ranks
from conftest import run_cli
from test_cli_lora import TEXT


@pytest.fixture
def data(tmp_path):
    path = tmp_path / "text.txt"
    path.write_text(TEXT)
    return path


def test_help_lists_every_command_and_misspellings_get_a_suggestion(exe):
    usage, _ = run_cli(exe, "--help", json_out=False)
    assert "tokenizer info|encode|decode|train" in usage and "character-level" not in usage, usage
    _, err = run_cli(exe, "train", "--stpes", 3, code=2, json_out=False)
    assert "unknown option --stpes (did you mean --steps?)" in err, err
    _, err = run_cli(exe, "lora", "train", "--allow-untrained", code=2, json_out=False)
    assert "did you mean --allow-untrained-base?" in err, err
    _, err = run_cli(exe, "train", "--zzzzzz", code=2, json_out=False)
    assert "unknown option --zzzzzz" in err and "did you mean" not in err, err
    _, err = run_cli(exe, "evl", code=2, json_out=False)
    assert 'unknown command "evl" (did you mean eval?)' in err, err


def test_train_creates_out_parents_and_shortens_a_warmup_longer_than_the_run(exe, data, tmp_path):
    out = tmp_path / "runs" / "tiny" / "one"
    res, err = run_cli(exe, "train", "--preset", "tiny", "--data", data, "--steps", 3, "--out", out)
    assert (out / "model.bin").is_file() and res["config"]["warmup"] == 0, res["config"]
    assert "a warm-up of 100 steps is not shorter than the run's 3" in err, err
    # an explicit --warmup is kept, with the warning
    res, err = run_cli(exe, "train", "--preset", "tiny", "--data", data, "--steps", 3, "--warmup", 5,
                   "--out", tmp_path / "kept")
    assert res["config"]["warmup"] == 5 and "keeping --warmup as given" in err, (res["config"], err)


def test_eval_scores_16_bit_checkpoints_as_held(exe, data, tmp_path):
    run_cli(exe, "train", "--preset", "tiny", "--data", data, "--steps", 3, "--warmup", 0, "--out", tmp_path / "run")
    folder = tmp_path / "checkpoints"
    folder.mkdir()
    shutil.copy(tmp_path / "run" / "model.bin", folder / "step-000003.bin")
    for kind in ("fp16", "bf16"):
        run_cli(exe, "import", "--format", "native", "--in", tmp_path / "run" / "model.bin",
            "--out", folder / f"{kind}.pgck", "--weights", kind)
        res, _ = run_cli(exe, "eval", "--checkpoint", folder / f"{kind}.pgck", "--data", data)
        assert math.isfinite(res["loss"]), res
    res, _ = run_cli(exe, "eval", "--checkpoints", folder, "--data", data)
    assert not res["skipped"] and len(res["results"]) == 3, res


def test_lora_refuses_a_never_trained_base_naming_the_option(exe, data, tmp_path):
    untrained = tmp_path / "untrained.bin"
    with char_model(3) as m:
        m.save(untrained)
    adapter = tmp_path / "a.safetensors"
    train = ["lora", "train", "--base", untrained, "--data", data, "--steps", 2, "--batch", 2, "--out", adapter]
    res, _ = run_cli(exe, *train, code=1)
    assert "never trained" in res["error"] and "--allow-untrained-base" in res["error"], res
    res, _ = run_cli(exe, *train, "--allow-untrained-base")
    assert res["config"]["target_modules"] == ["attn.c_attn"], res["config"]
    for args in (["lora", "info", "--adapter", adapter, "--base", untrained],
                 ["lora", "merge", "--model", untrained, "--adapter", adapter, "--out", tmp_path / "m.bin"]):
        res, _ = run_cli(exe, *args, code=1)
        assert "--allow-untrained-base" in res["error"], (args, res)
        run_cli(exe, *args, "--allow-untrained-base")
    run_cli(exe, "lora", "export-peft", "--adapter", adapter, "--out", tmp_path / "peft" / "nested")
    assert (tmp_path / "peft" / "nested" / "adapter_config.json").is_file()


def char_model(seed):
    """A never-trained tiny model with TEXT's character tokenizer."""
    tok = phonegpt.Tokenizer.char(TEXT)
    m = phonegpt.Model(phonegpt.ModelConfig.preset("tiny").replace(vocab_size=tok.vocab_size, padded_vocab_size=0),
                       seed=seed)
    m.tokenizer = tok
    return m


def trained_base():
    m = char_model(5)
    with phonegpt.Trainer(m, batch_size=2, total_steps=2, warmup_steps=0) as t:
        t.set_data(m.tokenizer.encode(TEXT))
        t.train(2)
    return m


def test_python_warmup_longer_than_the_run_is_shortened_with_a_warning():
    with trained_base() as base:
        tokens = base.tokenizer.encode(TEXT)
        with phonegpt.Adapter.create(base, rank=2) as a:
            with pytest.warns(UserWarning, match="warmup_steps 100 is not shorter than the run's 20 steps"):
                a.fit(base, tokens, 20, batch_size=2, lr_max=1e-3)
            # warm-up over 2 steps: the rate reaches lr_max (it stayed at or below 2e-4 before)
            assert max(a.training_record()["learning_rates"]) > 9e-4
        with phonegpt.Adapter.create(base, rank=2) as a, warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            a.fit(base, tokens, 4, batch_size=2, warmup_steps=10)   # chosen: kept, with the warning
            assert any("warmup_steps 10" in str(w.message) for w in caught)
            assert max(a.training_record()["learning_rates"]) < 1e-3 * 5 / 10
        with pytest.warns(UserWarning, match="warmup_steps 100"):
            phonegpt.Trainer(base, total_steps=10).close()


def test_tokenizer_files_by_path_or_bytes(tmp_path):
    ranks = tmp_path / "small.tiktoken"
    ranks.write_bytes(small_ranks("gpt2"))   # padded to the rank count gpt2 pins
    by_bytes = phonegpt.Tokenizer.from_tiktoken(small_ranks("gpt2"), "gpt2")
    for source in (ranks, str(ranks)):
        assert phonegpt.Tokenizer.from_tiktoken(source, "gpt2").to_bytes() == by_bytes.to_bytes()
    hf = tmp_path / "tokenizer.json"
    hf.write_bytes(by_bytes.write_file("hf_json"))
    assert phonegpt.Tokenizer.from_hf(hf).to_bytes() == phonegpt.Tokenizer.from_hf(hf.read_bytes()).to_bytes()
    with pytest.raises(phonegpt.IOError, match="nowhere.json"):
        phonegpt.Tokenizer.from_hf(str(tmp_path / "nowhere.json"))
    with pytest.raises(TypeError, match="its path"):
        phonegpt.Tokenizer.from_hf(42)


def test_errors_and_reprs_name_what_the_user_gave(tmp_path):
    with trained_base() as base:
        target = tmp_path / "a" / "b" / "model.bin"
        with pytest.raises(phonegpt.IOError) as e:
            base.save(target)
        assert str(target) in str(e.value) and "no folder" in str(e.value) and ".tmp" not in str(e.value)
        with phonegpt.Adapter.create(base, rank=2, target_modules=9, layers=[1]) as a:
            assert repr(a) == "<phonegpt.Adapter rank=2 alpha=8.0 targets=attn.c_attn,mlp.c_proj layers=1 " \
                              f"params={a.num_params}>", repr(a)
            a.export_peft(tmp_path / "peft" / "nested")
            assert (tmp_path / "peft" / "nested" / "adapter_model.safetensors").is_file()
        assert repr(a) == "<phonegpt.Adapter closed>"


def signatures():
    """(qualified name, parameter, type) of every parameter pybind11 shows, across the module."""
    import inspect
    import re
    from phonegpt import _phonegpt
    found = []
    for name in dir(_phonegpt):
        obj = getattr(_phonegpt, name)
        members = [(name, obj)] + [(f"{name}.{a}", getattr(obj, a, None)) for a in dir(obj)
                                   if inspect.isclass(obj) and (not a.startswith("__") or a == "__init__")]
        for qualified, f in members:
            for line in (getattr(f, "__doc__", None) or "").split("\n"):
                m = re.match(r"^(?:\d+\. )?\w+\((.*)\) ->", line)
                if m:
                    found += [(qualified, *param) for param in parameters(m.group(1))]
    return found


def parameters(text):
    """[(name, type)] of "a: T, b: Union[X, Y] = None, **kwargs" (commas inside brackets kept)."""
    out, depth, start = [], 0, 0
    for i, ch in enumerate(text + ","):
        depth += ch == "["
        depth -= ch == "]"
        if ch == "," and depth == 0:
            name, _, rest = text[start:i].partition(":")
            if rest:
                out.append((name.strip(), rest.split("=")[0].strip()))
            start = i + 1
    return out


def test_signatures_show_what_paths_tokens_models_and_adapters_are():
    typed = {"path": "Union[str, os.PathLike]", "folder": "Union[str, os.PathLike]",
             "signature_path": "Union[str, os.PathLike]", "adapter_path": "Union[str, os.PathLike]",
             "tokens": "Union[numpy.ndarray, Sequence[int]]", "inputs": "Union[numpy.ndarray, Sequence[int]]",
             "ids": "Union[numpy.ndarray, Sequence[int]]", "model": "phonegpt.Model", "base": "phonegpt.Model"}
    found = signatures()
    assert len(found) > 200, len(found)
    wrong = [(f, p, t) for f, p, t in found if p in typed and t.strip() != typed[p]]
    assert not wrong, wrong
    assert "model: phonegpt.Model, tokens: Union[numpy.ndarray, Sequence[int]], steps: int" in phonegpt.Adapter.fit.__doc__
    assert "self: phonegpt.Adapter" in phonegpt.Adapter.export_peft.__doc__
