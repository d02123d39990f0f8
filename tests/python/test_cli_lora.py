"""phonegpt lora train | merge | unmerge | info | export-peft | import-peft, run as the real
binary (PHONEGPT_CLI) on a checkpoint that `phonegpt train` itself wrote; the results are
checked through the Python binding (the adapter's record, merge then unmerge, PEFT round trip)."""
import json

import numpy as np

import phonegpt
from conftest import run_cli

TEXT = ("First Citizen:\nBefore we proceed any further, hear me speak.\n\nAll:\nSpeak, speak.\n\n") * 40


def test_lora_commands_end_to_end(exe, tmp_path):
    data = tmp_path / "text.txt"
    data.write_text(TEXT)
    run_cli(exe, "train", "--preset", "tiny", "--data", data, "--steps", 5, "--out", tmp_path / "run")
    base = tmp_path / "run" / "model.bin"
    adapter = tmp_path / "a.safetensors"
    out, err = run_cli(exe, "lora", "train", "--base", base, "--data", data, "--out", adapter, "--rank", 4,
                   "--targets", "c_attn,mlp.c_proj", "--layers", "1", "--steps", 12, "--batch", 4, "--lr", "1e-2",
                   "--log-interval", 4, "--checkpoint", tmp_path / "a.train.safetensors")
    assert out["ok"] and out["step"] == 12 and out["config"]["target_modules"] == ["attn.c_attn", "mlp.c_proj"] and out["config"]["layers"] == [1]
    assert "step 12/12 | loss" in err and "ms/step" in err   # the progress line
    with phonegpt.Model.load(base) as model, phonegpt.Adapter.load(adapter, model) as a:
        assert a.training_record()["steps"] == 12
        assert a.base_info()["provenance"]["kind"] == "trained"

        info, _ = run_cli(exe, "lora", "info", "--adapter", adapter, "--base", base, "--allow-untrained-base")
        assert info["tensors"] == 4 and info["checked_against_base"]
        assert info["base"]["provenance"].startswith("trained for 5 steps")

        # Resuming continues the record.
        more, _ = run_cli(exe, "lora", "train", "--base", base, "--data", data, "--out", tmp_path / "b.safetensors",
                      "--resume", tmp_path / "a.train.safetensors", "--steps", 3)
        assert more["step"] == 15

        run_cli(exe, "lora", "merge", "--model", base, "--adapter", adapter, "--out", tmp_path / "merged.bin")
        run_cli(exe, "lora", "unmerge", "--model", tmp_path / "merged.bin", "--adapter", adapter,
            "--out", tmp_path / "unmerged.bin")
        with phonegpt.Model.load(tmp_path / "merged.bin") as merged, \
                phonegpt.Model.load(tmp_path / "unmerged.bin") as unmerged:
            w = "h.1.attn.c_attn.weight"
            delta = a.scale * a.lora_B(1).astype(np.float64) @ a.lora_A(1).astype(np.float64)
            assert np.allclose(merged.parameters()[w] - model.parameters()[w], delta, atol=1e-6)
            for name, v in unmerged.parameters().items():
                assert np.max(np.abs(v - model.parameters()[name])) <= 4e-7, name

        peft = tmp_path / "peft"
        run_cli(exe, "lora", "export-peft", "--adapter", adapter, "--out", peft)
        assert json.loads((peft / "adapter_config.json").read_text())["target_modules"] == ["c_attn", "mlp.c_proj"]
        run_cli(exe, "lora", "import-peft", "--in", peft, "--base", base, "--out", tmp_path / "c.safetensors")
        assert (tmp_path / "c.safetensors").read_bytes() == adapter.read_bytes()

    # Another base: a runtime failure naming both sides; a bad option: a usage error.
    run_cli(exe, "train", "--preset", "tiny", "--data", data, "--steps", 2, "--seed", 9, "--out", tmp_path / "other")
    fail, _ = run_cli(exe, "lora", "info", "--adapter", adapter, "--base", tmp_path / "other" / "model.bin", code=1)
    assert fail["status"] == "PG_ERR_GEOMETRY" and "weights" in fail["error"]
    usage, _ = run_cli(exe, "lora", "train", "--base", base, "--data", data, "--out", adapter, "--targets", "qkv", code=2)
    assert "qkv" in usage["error"] and "q_proj" in usage["error"]
    # A Llama-family name on a GPT-2 base: the library's refusal, naming the base's modules.
    fail, _ = run_cli(exe, "lora", "train", "--base", base, "--data", data, "--out", adapter, "--targets", "q_proj", code=2)
    assert "target q_proj is not a module of this base" in fail["error"] and "attn.c_attn, attn.c_proj" in fail["error"]


def test_lora_train_on_a_llama_base_by_module_names(exe, tmp_path):
    """--targets takes Hugging Face's Llama module names (short or with their block); the default
    is PEFT's for llama (q_proj, v_proj); info and the PEFT export print the names."""
    data = tmp_path / "text.txt"
    data.write_text(TEXT)
    tok = phonegpt.Tokenizer.char(TEXT)
    config = phonegpt.ModelConfig.preset("tiny-llama")
    config.vocab_size, config.padded_vocab_size = tok.vocab_size, 0
    base = tmp_path / "llama.bin"
    with phonegpt.Model(config, seed=2) as m:
        m.tokenizer = tok
        m.allow_untrained_base()
        m.save(base)
    adapter = tmp_path / "a.safetensors"
    args = ["--base", base, "--data", data, "--rank", 2, "--steps", 3, "--batch", 2, "--threads", 1,
            "--allow-untrained-base"]
    out, _ = run_cli(exe, "lora", "train", *args, "--out", adapter, "--targets", "q_proj,self_attn.v_proj,down_proj")
    assert out["config"]["target_modules"] == ["q_proj", "v_proj", "down_proj"]
    default, _ = run_cli(exe, "lora", "train", *args, "--out", tmp_path / "d.safetensors")
    assert default["config"]["target_modules"] == ["q_proj", "v_proj"]
    info, _ = run_cli(exe, "lora", "info", "--adapter", adapter, "--base", base, "--allow-untrained-base")
    assert info["tensors"] == 6 * 2 and info["config"]["target_modules"] == ["q_proj", "v_proj", "down_proj"]
    run_cli(exe, "lora", "export-peft", "--adapter", adapter, "--out", tmp_path / "peft")
    cfg = json.loads((tmp_path / "peft" / "adapter_config.json").read_text())
    assert cfg["target_modules"] == ["q_proj", "v_proj", "down_proj"] and cfg["fan_in_fan_out"] is False
    fail, _ = run_cli(exe, "lora", "train", *args, "--out", adapter, "--targets", "c_attn", code=2)
    assert "q_proj, k_proj, v_proj, o_proj, gate_proj, up_proj, down_proj" in fail["error"]


def test_lora_train_over_a_mapped_fp16_base(exe, tmp_path):
    """import --format native --weights fp16 writes a mappable 16-bit base; lora train --map-base
    trains over it as over its loaded copy (the same losses, the same adapter bytes), and a file
    without the mapping layout is refused with PG_ERR_UNSUPPORTED."""
    data = tmp_path / "text.txt"
    data.write_text(TEXT)
    run_cli(exe, "train", "--preset", "tiny", "--data", data, "--steps", 5, "--out", tmp_path / "run")
    base = tmp_path / "run" / "model.bin"
    base16 = tmp_path / "base16.pgck"
    run_cli(exe, "import", "--format", "native", "--in", base, "--out", base16, "--weights", "fp16")
    assert base16.stat().st_size < 0.75 * base.stat().st_size
    args = ["--data", data, "--rank", 4, "--steps", 4, "--batch", 4, "--threads", 1]
    mapped, _ = run_cli(exe, "lora", "train", "--base", base16, "--out", tmp_path / "m.safetensors", "--map-base", *args)
    copied, _ = run_cli(exe, "lora", "train", "--base", base16, "--out", tmp_path / "c.safetensors", *args)
    assert mapped["base_mapped"] and not copied["base_mapped"]
    assert mapped["val_loss_after"] == copied["val_loss_after"]
    assert (tmp_path / "m.safetensors").read_bytes() == (tmp_path / "c.safetensors").read_bytes()
    with phonegpt.Model.load(base16, map_weights=True) as m:
        assert m.mapped
    fail, _ = run_cli(exe, "lora", "train", "--base", base, "--out", tmp_path / "x.safetensors", "--map-base", *args,
                  code=1)
    assert fail["status"] == "PG_ERR_UNSUPPORTED" and "align_for_mapping" in fail["error"]


def test_lora_train_weights_option(exe, tmp_path):
    """lora train --weights holds the frozen base as asked: bf16 and bf16-arithmetic both train
    (bf16-arithmetic multiplies in bf16 where the CPU has AVX512_BF16, and its losses stay within
    bf16's rounding of bf16's), the JSON names the storage, and a bad kind is a usage error."""
    data = tmp_path / "text.txt"
    data.write_text(TEXT)
    run_cli(exe, "train", "--preset", "tiny", "--data", data, "--steps", 5, "--out", tmp_path / "run")
    base = tmp_path / "run" / "model.bin"
    args = ["--base", base, "--data", data, "--rank", 4, "--steps", 6, "--batch", 4, "--threads", 1, "--lr", "1e-2"]
    plain, _ = run_cli(exe, "lora", "train", *args, "--out", tmp_path / "p.safetensors", "--weights", "bf16")
    fast, _ = run_cli(exe, "lora", "train", *args, "--out", tmp_path / "f.safetensors", "--weights", "bf16-arithmetic")
    assert plain["base_weights"] == "bf16" and fast["base_weights"] == "bf16-arithmetic"
    assert fast["val_loss_after"] < fast["val_loss_before"]
    assert abs(fast["val_loss_after"] - plain["val_loss_after"]) < 1e-2 * plain["val_loss_after"]
    bad, _ = run_cli(exe, "lora", "train", *args, "--out", tmp_path / "x.safetensors", "--weights", "int8", code=2)
    assert "--weights must be" in bad["error"]


def test_lora_train_over_a_quantized_base(exe, tmp_path):
    """lora train --base-storage q8_0 quantizes the frozen base (rows of 32) and trains over it,
    exactly or with --arithmetic int8; eval and sample take the same options; an arithmetic that
    does not fit the storage is refused by name."""
    data = tmp_path / "text.txt"
    data.write_text(TEXT)
    run_cli(exe, "train", "--preset", "tiny", "--embd", 32, "--data", data, "--steps", 5, "--out", tmp_path / "run")
    base = tmp_path / "run" / "model.bin"
    args = ["--base", base, "--data", data, "--rank", 4, "--steps", 6, "--batch", 4, "--threads", 1, "--lr", "1e-2"]
    exact, _ = run_cli(exe, "lora", "train", *args, "--out", tmp_path / "e.safetensors", "--base-storage", "q8_0")
    fast, _ = run_cli(exe, "lora", "train", *args, "--out", tmp_path / "f.safetensors", "--base-storage", "q8_0",
                  "--arithmetic", "int8")
    assert exact["base_weights"] == "q8_0" and fast["arithmetic"] == "int8"
    assert abs(fast["val_loss_after"] - exact["val_loss_after"]) < 2e-2 * exact["val_loss_after"]
    bad, _ = run_cli(exe, "lora", "train", *args, "--out", tmp_path / "x.safetensors", "--arithmetic", "int8", code=2)
    assert "arithmetic = int8 does not fit" in bad["error"]
    scored, _ = run_cli(exe, "eval", "--checkpoint", base, "--data", data, "--base-storage", "q4_0", "--arithmetic", "int8")
    plain, _ = run_cli(exe, "eval", "--checkpoint", base, "--data", data)
    assert abs(scored["loss"] - plain["loss"]) < 5e-2 * plain["loss"]
    sampled, _ = run_cli(exe, "sample", "--checkpoint", base, "--tokens", 8, "--base-storage", "q8_0", "--arithmetic", "int8")
    assert sampled["tokens"] == 8


def test_import_writes_a_quantized_base_that_trains_merges_and_scores(exe, tmp_path):
    """import --format native --weights q8_0 quantizes a checkpoint while reading it and writes
    its blocks (format 1.6, a quarter of the fp32 file); lora train over that file equals lora
    train --base-storage q8_0 over the fp32 file; lora merge of it writes an fp32 model (the
    dequantized values plus the update) whose eval equals the quantized base with the adapter."""
    data = tmp_path / "text.txt"
    data.write_text(TEXT)
    run_cli(exe, "train", "--preset", "tiny", "--embd", 32, "--data", data, "--steps", 5, "--out", tmp_path / "run")
    base = tmp_path / "run" / "model.bin"
    base8 = tmp_path / "base8.pgck"
    run_cli(exe, "import", "--format", "native", "--in", base, "--out", base8, "--weights", "q8_0")
    assert base8.stat().st_size < 0.45 * base.stat().st_size
    with phonegpt.Model.load(base8) as m:
        assert m.weight_storage == "q8_0"
    args = ["--data", data, "--rank", 4, "--steps", 4, "--batch", 4, "--threads", 1]
    from_file, _ = run_cli(exe, "lora", "train", "--base", base8, "--out", tmp_path / "q.safetensors", *args)
    asked, _ = run_cli(exe, "lora", "train", "--base", base, "--base-storage", "q8_0", "--out",
                   tmp_path / "a.safetensors", *args)
    assert from_file["base_weights"] == "q8_0" and from_file["val_loss_after"] == asked["val_loss_after"]
    merged = tmp_path / "merged.pgck"
    run_cli(exe, "lora", "merge", "--model", base8, "--adapter", tmp_path / "q.safetensors", "--out", merged)
    with phonegpt.Model.load(merged) as m:
        assert m.weight_storage == "fp32"
    scored, _ = run_cli(exe, "eval", "--checkpoint", merged, "--data", data)
    assert abs(scored["loss"] - from_file["val_loss_after"]) < 1e-3 * from_file["val_loss_after"]
