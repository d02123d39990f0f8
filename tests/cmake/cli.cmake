# Smoke tests of the phonegpt command-line tool: a tiny-preset training run of a few steps on a
# small generated text (no Tiny Shakespeare needed), then eval and sample on its output, each
# with --json, checking the exit code and that stdout is exactly one JSON object with the
# expected fields (the checker at the end of this file); plus usage and runtime errors.
#
# This one file has two roles: included by tests/CMakeLists.txt it defines the tests; run with
# `cmake -P` by those tests (CMAKE_SCRIPT_MODE_FILE set) it is the checker, at the end.
if(NOT CMAKE_SCRIPT_MODE_FILE)
if(TARGET phonegpt_cli)

set(PG_CLI_DIR ${CMAKE_CURRENT_BINARY_DIR}/cli)
set(PG_CLI_TEXT ${PG_CLI_DIR}/smoke.txt)
file(MAKE_DIRECTORY ${PG_CLI_DIR})
set(_para "First Citizen:\nBefore we proceed any further, hear me speak.\n\nAll:\nSpeak, speak.\n\nFirst Citizen:\nYou are all resolved rather to die than to famish?\n\n")
set(_text "")
foreach(i RANGE 30)
  string(APPEND _text "${_para}")
endforeach()
file(WRITE ${PG_CLI_TEXT} "${_text}")

set(PG_CLI_CHECK ${CMAKE_CURRENT_LIST_FILE})
# Debian's python3 (scripts/setup.sh) makes the JSON check strict; without it CMake's parser
# still checks the object and its keys.
find_program(PG_CLI_PYTHON NAMES python3 PATHS /usr/bin NO_DEFAULT_PATH)
pg_require_test_dependency("${PG_CLI_PYTHON}" "no /usr/bin/python3: the CLI scenario tests (cli_export_import_round_trip, cli_train_recipe, ...) are not registered and the JSON check is CMake's only")
# pg_cli_test(NAME EXPECT_RC KEYS ARGS [EXPECT]): runs phonegpt ARGS ("a|b|c"), wants the exit
# code and (if KEYS is not "-") one JSON object on stdout with those keys ("k1|k2") and values
# (EXPECT: "k1=v1|k2=v2").
function(pg_cli_test name rc keys args)
  set(expect "${ARGN}")
  add_test(NAME ${name}
    COMMAND ${CMAKE_COMMAND} -DPG_CLI=$<TARGET_FILE:phonegpt_cli> -DPG_ARGS=${args}
            -DPG_RC=${rc} -DPG_KEYS=${keys} -DPG_EXPECT=${expect} -DPG_PYTHON=${PG_CLI_PYTHON}
            -P ${PG_CLI_CHECK})
endfunction()

pg_cli_test(cli_train 0 "ok|step|last_train_loss|val|model_path|ms_per_step"
  "train|--preset|tiny|--data|${PG_CLI_TEXT}|--steps|6|--warmup|100|--batch|4|--eval-interval|3|--log-interval|2|--threads|2|--out|${PG_CLI_DIR}/run|--json"
  "step=6|start_step=0|command=train")
set_tests_properties(cli_train PROPERTIES FIXTURES_SETUP pg_cli_trained)

pg_cli_test(cli_resume 0 "ok|step|start_step|val"
  "train|--resume|${PG_CLI_DIR}/run/trainer.bin|--data|${PG_CLI_TEXT}|--steps|8|--eval-windows|4|--out|${PG_CLI_DIR}/resumed|--json"
  "step=8|start_step=6")
pg_cli_test(cli_eval 0 "ok|loss|bits_per_char|bits_per_byte|bytes|scored|windows"
  "eval|--checkpoint|${PG_CLI_DIR}/run/model.bin|--data|${PG_CLI_TEXT}|--threads|2|--json")
pg_cli_test(cli_sample 0 "ok|text|tokens|prompt"
  "sample|--checkpoint|${PG_CLI_DIR}/run/model.bin|--prompt|First|--tokens|20|--top-k|5|--seed|3|--json"
  "tokens=20|prompt=First")
set_tests_properties(cli_resume cli_eval cli_sample PROPERTIES FIXTURES_REQUIRED pg_cli_trained)
set_tests_properties(cli_resume PROPERTIES FIXTURES_SETUP pg_cli_resumed)

# 6 steps + resume to 8 = 8 steps straight, bit for bit (a 100-step warm-up, given explicitly so
# that it is not shortened to a tenth of the run, covers all 8 steps, so the two runs' different
# total_steps give the same learning rates).
pg_cli_test(cli_train_straight 0 "ok|step"
  "train|--preset|tiny|--data|${PG_CLI_TEXT}|--steps|8|--warmup|100|--batch|4|--eval-interval|0|--eval-windows|4|--threads|2|--out|${PG_CLI_DIR}/straight|--json"
  "step=8")
set_tests_properties(cli_train_straight PROPERTIES FIXTURES_SETUP pg_cli_straight)
add_test(NAME cli_resume_is_bit_exact
  COMMAND ${CMAKE_COMMAND} -E compare_files ${PG_CLI_DIR}/straight/model.bin ${PG_CLI_DIR}/resumed/model.bin)
set_tests_properties(cli_resume_is_bit_exact PROPERTIES FIXTURES_REQUIRED "pg_cli_straight;pg_cli_resumed")

# Errors: usage (2) and runtime (1), still one JSON object in --json mode.
pg_cli_test(cli_unknown_option 2 "ok|error" "train|--preset|tiny|--bogus|1|--json")
pg_cli_test(cli_bad_number 2 "ok|error" "train|--preset|tiny|--data|${PG_CLI_TEXT}|--steps|many|--json")
pg_cli_test(cli_missing_checkpoint_flag 2 "ok|error" "eval|--data|${PG_CLI_TEXT}|--json")
pg_cli_test(cli_missing_checkpoint_file 1 "ok|error|status"
  "sample|--checkpoint|${PG_CLI_DIR}/no-such-model.bin|--json")
pg_cli_test(cli_bad_preset 2 "ok|error|status" "train|--preset|huge|--data|${PG_CLI_TEXT}|--json")
pg_cli_test(cli_help 0 "-" "train|--help")
pg_cli_test(cli_no_command 2 "-" "")
pg_cli_test(cli_export_bad_format 2 "ok|error" "export|--checkpoint|x.bin|--format|onnx|--out|x.onnx|--json")
pg_cli_test(cli_export_missing_out 2 "ok|error" "export|--checkpoint|x.bin|--format|llmc|--json")
pg_cli_test(cli_import_missing_in 2 "ok|error" "import|--format|llmc|--out|x.bin|--json")
pg_cli_test(cli_import_two_tokenizers 2 "ok|error"
  "import|--format|llmc|--in|x.llmc|--out|x.bin|--tokenizer-from|a.bin|--vocab-text|${PG_CLI_TEXT}|--json")
pg_cli_test(cli_import_missing_file 1 "ok|error|status"
  "import|--format|llmc|--in|${PG_CLI_DIR}/no-such-model.llmc|--out|${PG_CLI_DIR}/x.bin|--json")

# Scenarios that compare several runs' results, written in Python (run with the python3 of
# scripts/setup.sh): each script gets the prelude's run() and close() and the arguments
# CLI DIR TEXT (the executable, a scratch folder, the generated text).
set(PG_CLI_PRELUDE [=[
import csv, glob, json, math, os, shutil, subprocess, sys
CLI, DIR, TEXT = sys.argv[1], sys.argv[2], sys.argv[3]
os.makedirs(DIR, exist_ok=True)

def no_constant(name):
    """Python's json reads NaN and Infinity, which are not JSON: a figure must never be one."""
    sys.exit(f"the CLI printed {name}, which is not JSON")

def run(*args, rc=0):
    """Runs phonegpt ARGS --json; wants exit code rc and one JSON object; returns it (and stderr)."""
    p = subprocess.run([CLI, *args, "--json"], capture_output=True, text=True)
    if p.returncode != rc:
        sys.exit(f"phonegpt {' '.join(args)}: exit {p.returncode}, wanted {rc}\n{p.stderr}\n{p.stdout}")
    result = json.loads(p.stdout, parse_constant=no_constant)
    if result["ok"] != (rc == 0):
        sys.exit(f"phonegpt {' '.join(args)}: ok is {result['ok']}\n{p.stdout}")
    result["_stderr"] = p.stderr
    return result

def close(a, b, what, tol=1e-9):
    """Fails unless a and b agree to tol (relative)."""
    if not (math.isfinite(a) and math.isfinite(b) and abs(a - b) <= tol * max(1.0, abs(a), abs(b))):
        sys.exit(f"{what}: {a} != {b}")

def train(out, *extra):
    return run("train", "--preset", "tiny", "--data", TEXT, "--batch", "4", "--threads", "2",
               "--out", out, *extra)
]=])
# pg_cli_scenario(NAME CODE [FIXTURE]): runs the prelude + CODE with python3.
function(pg_cli_scenario name code)
  if(NOT PG_CLI_PYTHON)
    return()
  endif()
  file(WRITE ${PG_CLI_DIR}/${name}.py "${PG_CLI_PRELUDE}\n${code}\nprint('ok')\n")
  add_test(NAME ${name} COMMAND ${PG_CLI_PYTHON} ${PG_CLI_DIR}/${name}.py $<TARGET_FILE:phonegpt_cli>
    ${PG_CLI_DIR}/${name} ${PG_CLI_TEXT})
endfunction()

# eval --weights: the model held in fp16 or bf16 scores within the weights' rounding of its fp32
# loss; fp16-arithmetic holds the fp16 values and, on a CPU without FP16 arithmetic (x86, where
# these scenarios run), gives fp16's loss bit for bit; bf16-arithmetic holds the bf16 values and
# scores within bf16 arithmetic's error of bf16 (its bits where the CPU has no AVX512_BF16); an
# unknown kind is a usage error.
pg_cli_scenario(cli_eval_weights [=[
import platform
model = train(f"{DIR}/run", "--steps", "4", "--eval-interval", "0")["model_path"]
def loss(*extra):
    return run("eval", "--checkpoint", model, "--data", TEXT, *extra)["loss"]
full = loss()
assert loss("--weights", "fp32") == full
half = loss("--weights", "fp16")
close(half, full, "fp16 against fp32", tol=1e-3)
bf16 = loss("--weights", "bf16")
close(bf16, full, "bf16 against fp32", tol=1e-2)
close(loss("--weights", "bf16-arithmetic"), bf16, "bf16-arithmetic against bf16", tol=1e-2)
fast = loss("--weights", "fp16-arithmetic")
close(fast, half, "fp16-arithmetic against fp16", tol=1e-3)
if platform.machine() == "x86_64":
    assert fast == half, (fast, half)
run("eval", "--checkpoint", model, "--data", TEXT, "--weights", "int8", rc=2)
]=])

# export then import, in both formats, gives back the same model: the same validation loss.
# llm.c files hold no tokenizer (the import takes one from a checkpoint or a text, or has none);
# safetensors files keep it in their metadata.
pg_cli_scenario(cli_export_import_round_trip [=[
base = train(f"{DIR}/run", "--steps", "4", "--eval-interval", "0")
model = base["model_path"]
want = run("eval", "--checkpoint", model, "--data", TEXT)["loss"]
for fmt in ["llmc", "safetensors"]:
    exported = run("export", "--checkpoint", model, "--format", fmt, "--out", f"{DIR}/m.{fmt}")
    assert exported["model"] == base["model"], exported
for fmt, extra, tokenizer in [("llmc", ["--tokenizer-from", model], True),
                              ("llmc", ["--vocab-text", TEXT], True),
                              ("llmc", [], False),
                              ("safetensors", [], True)]:
    out = f"{DIR}/imported-{fmt}-{len(extra)}.bin"
    imported = run("import", "--format", fmt, "--in", f"{DIR}/m.{fmt}", "--out", out, *extra)
    if imported["has_tokenizer"] != tokenizer or imported["model"] != base["model"]:
        sys.exit(f"import {fmt} {extra}: {imported}")
    if tokenizer:
        close(run("eval", "--checkpoint", out, "--data", TEXT)["loss"], want, f"loss after {fmt} {extra}")
    else:
        run("eval", "--checkpoint", out, "--data", TEXT, rc=1)
# A text with another vocabulary does not fit the model.
with open(f"{DIR}/other.txt", "w") as f:
    f.write("only these letters")
run("import", "--format", "llmc", "--in", f"{DIR}/m.llmc", "--out", f"{DIR}/bad.bin",
    "--vocab-text", f"{DIR}/other.txt", rc=1)
]=])

# train keeps a checkpoint and a scores.csv row per evaluation: at every --eval-interval step
# and at the end; train_loss is the mean of the step losses since the previous evaluation
# (checked against the progress lines of every step).
pg_cli_scenario(cli_train_checkpoints [=[
import re
res = train(f"{DIR}/run", "--steps", "7", "--eval-interval", "3", "--log-interval", "1")
steps = [e["step"] for e in res["evals"]]
assert steps == [3, 6, 7], steps
names = sorted(os.listdir(f"{DIR}/run/checkpoints"))
assert names == ["step-000003.bin", "step-000006.bin", "step-000007.bin"], names
rows = list(csv.DictReader(open(f"{DIR}/run/scores.csv")))
assert list(rows[0]) == ["step", "val_loss", "val_bits", "elapsed_s", "train_loss"], rows[0]
assert [int(r["step"]) for r in rows] == steps, rows
losses = [float(x) for x in re.findall(r"\| loss ([0-9.]+) \|", res["_stderr"])]
assert len(losses) == 7, res["_stderr"]
for row, e, since in zip(rows, res["evals"], [losses[0:3], losses[3:6], losses[6:7]]):
    close(float(row["val_loss"]), e["loss"], f"scores.csv step {row['step']}", 1e-5)
    close(float(row["train_loss"]), sum(since) / len(since), f"train_loss at {row['step']}", 1e-3)
    close(e["train_loss"], float(row["train_loss"]), f"JSON train_loss at {row['step']}", 1e-5)
# The last checkpoint is the final model.
close(run("eval", "--checkpoint", f"{DIR}/run/checkpoints/step-000007.bin", "--data", TEXT)["loss"],
      res["val"]["loss"], "last checkpoint")
# --eval-seconds: a time limit that is always reached evaluates after every step.
res = train(f"{DIR}/timed", "--steps", "3", "--eval-interval", "0", "--eval-seconds", "0.000001")
assert [e["step"] for e in res["evals"]] == [1, 2, 3], res["evals"]
assert len(list(csv.DictReader(open(f"{DIR}/timed/scores.csv")))) == 3
# Without it, --eval-interval 0 evaluates only at the end.
res = train(f"{DIR}/end", "--steps", "3", "--eval-interval", "0")
assert [e["step"] for e in res["evals"]] == [3], res["evals"]
]=])

# eval --checkpoints scores a folder in step order (named steps first, then other names),
# skips files that are not checkpoints, and its scores.csv matches eval --checkpoint of each
# file and the training run's own scores.
pg_cli_scenario(cli_eval_checkpoints [=[
res = train(f"{DIR}/run", "--steps", "6", "--eval-interval", "2")
folder = f"{DIR}/run/checkpoints"
shutil.copy(f"{folder}/step-000004.bin", f"{folder}/copy-step-3.bin")
shutil.copy(f"{folder}/step-000002.bin", f"{folder}/final.bin")
with open(f"{folder}/broken.bin", "w") as f:
    f.write("not a checkpoint")
with open(f"{folder}/notes.txt", "w") as f:
    f.write("ignored: neither .bin nor .pgck")
out = run("eval", "--checkpoints", folder, "--data", TEXT)
order = [r["checkpoint"] for r in out["results"]]
assert order == ["step-000002.bin", "copy-step-3.bin", "step-000004.bin", "step-000006.bin", "final.bin"], order
assert [s["checkpoint"] for s in out["skipped"]] == ["broken.bin"], out["skipped"]
rows = list(csv.DictReader(open(f"{folder}/scores.csv")))
assert list(rows[0]) == ["step", "checkpoint", "val_loss", "val_bits", "n_scored"], rows[0]
assert [r["checkpoint"] for r in rows] == order, rows
assert [r["step"] for r in rows] == ["2", "3", "4", "6", ""], rows
for row in rows:
    single = run("eval", "--checkpoint", f"{folder}/{row['checkpoint']}", "--data", TEXT)
    close(float(row["val_loss"]), single["loss"], row["checkpoint"], 1e-5)
    close(float(row["val_bits"]), single["bits_per_char"], row["checkpoint"], 1e-5)
    assert int(row["n_scored"]) == single["scored"], (row, single)
train_rows = {r["step"]: r for r in csv.DictReader(open(f"{DIR}/run/scores.csv"))}
for row in rows[:-1]:
    if row["step"] in train_rows:
        close(float(row["val_loss"]), float(train_rows[row["step"]]["val_loss"]), f"train row {row['step']}", 1e-5)
best = min(out["results"], key=lambda r: r["loss"])
assert out["best"]["checkpoint"] == best["checkpoint"], out["best"]
# --out elsewhere. A folder without checkpoints (or no folder) is a usage error.
run("eval", "--checkpoints", folder, "--data", TEXT, "--out", f"{DIR}/elsewhere.csv")
assert len(list(csv.DictReader(open(f"{DIR}/elsewhere.csv")))) == 5
os.makedirs(f"{DIR}/empty", exist_ok=True)
run("eval", "--checkpoints", f"{DIR}/empty", "--data", TEXT, rc=2)
run("eval", "--checkpoints", f"{DIR}/no-such-folder", "--data", TEXT, rc=2)
]=])

# The target rule: loss <= target at two consecutive evaluations. A huge target is met at the
# first two; --stop-at-target then stops there; an unreachable target is never met.
pg_cli_scenario(cli_train_target [=[
res = train(f"{DIR}/met", "--steps", "8", "--eval-interval", "2", "--target", "100")
rule = res["rule"]
assert rule["met"] and rule["target"] == 100 and rule["first_pair_steps"] == [2, 4], rule
assert res["step"] == 8 and not res["stopped_at_target"], res
close(rule["first_pair_scores"][0], res["evals"][0]["loss"], "first score")
close(rule["first_pair_scores"][1], res["evals"][1]["loss"], "second score")
assert 0 < rule["seconds_to_pair"] <= res["seconds"], rule
best = min(res["evals"], key=lambda e: e["loss"])
assert rule["best"] == {"step": best["step"], "loss": best["loss"]}, rule
assert "TARGET RULE MET at step 4" in res["_stderr"], res["_stderr"]
res = train(f"{DIR}/stop", "--steps", "8", "--eval-interval", "2", "--target", "100", "--stop-at-target")
assert res["step"] == 4 and res["stopped_at_target"], res
assert [e["step"] for e in res["evals"]] == [2, 4], res["evals"]
assert sorted(os.listdir(f"{DIR}/stop/checkpoints")) == ["step-000002.bin", "step-000004.bin"]
res = train(f"{DIR}/never", "--steps", "4", "--eval-interval", "2", "--target", "0.001", "--stop-at-target")
assert res["step"] == 4 and not res["rule"]["met"] and res["rule"]["first_pair_steps"] is None, res["rule"]
# Without --target the rule is absent but the best evaluation is still reported.
res = train(f"{DIR}/none", "--steps", "2", "--eval-interval", "1")
assert res["rule"]["target"] is None and not res["rule"]["met"] and res["rule"]["best"]["step"] in (1, 2)
]=])

# --preset phonegpt-shakespeare: the recipe's values, with explicit options overriding them
# (here the shape and batch, so the run stays tiny); --recompute gives bit-identical results.
pg_cli_scenario(cli_train_recipe [=[
tiny_shape = ["--layers", "1", "--heads", "2", "--embd", "16", "--ctx", "16", "--batch", "2",
              "--data", TEXT, "--threads", "2", "--steps", "2", "--eval-interval", "0"]
res = run("train", "--preset", "phonegpt-shakespeare", *tiny_shape, "--out", f"{DIR}/recipe")
recipe = res["recipe"]
# (the preset's 200-step warm-up is longer than this 2-step run: shortened to a tenth of it, with a warning)
want = {"preset": "phonegpt-shakespeare", "model": "phonegpt", "steps": 2, "batch": 2, "lr": 0.002,
        "lr_min": 0.0001, "warmup": 0, "weight_decay": 0.1, "dropout": 0.1, "dropout_ramp": 0, "clip": 1,
        "eval_interval": 0, "eval_seconds": 300, "seed": 20261105, "target": 1.4697,
        "stop_at_target": False}
assert recipe == want, recipe
assert "a warm-up of 200 steps is not shorter than the run's 2" in res["_stderr"], res["_stderr"]
assert res["config"]["seed"] == 20261105 and res["config"]["dropout"] == 0.1, res["config"]
# --dropout-ramp reaches the trainer (and the progress line), and changes the run.
ramped = run("train", "--preset", "phonegpt-shakespeare", *tiny_shape, "--dropout-ramp", "5", "--out", f"{DIR}/ramped")
assert ramped["config"]["dropout_ramp"] == 5 and ramped["recipe"]["dropout_ramp"] == 5, ramped["config"]
assert "dropout 0.1 (from 0 over 5 steps)" in ramped["_stderr"], ramped["_stderr"]
assert open(f"{DIR}/ramped/model.bin", "rb").read() != open(f"{DIR}/recipe/model.bin", "rb").read()
# --preset phonegpt-shakespeare-fast (docs/results.md): Muon at 2.5 times the schedule's rate, a linear
# decay to 0 at its last step (3,800) and dropout rising from 0 over 3,000 steps. Only the shape,
# batch and cadence are overridden, so the tiny run takes the preset's own 3,800 steps.
at = tiny_shape.index("--steps")
fast = run("train", "--preset", "phonegpt-shakespeare-fast", *tiny_shape[:at], *tiny_shape[at + 2:], "--out", f"{DIR}/fast")
want_fast = {"preset": "phonegpt-shakespeare-fast", "model": "phonegpt", "steps": 3800, "batch": 2, "lr": 0.003,
             "lr_min": 0, "warmup": 200, "weight_decay": 0.1, "dropout": 0.1, "dropout_ramp": 3000, "clip": 1,
             "eval_interval": 0, "eval_seconds": 0, "seed": 20261105, "target": 1.4697, "stop_at_target": False}
assert fast["recipe"] == want_fast, fast["recipe"]
assert fast["config"]["optimizer"] == "muon" and fast["config"]["schedule"] == "linear", fast["config"]
assert fast["config"]["muon_lr_scale"] == 2.5 and fast["config"]["muon_momentum"] == 0.95, fast["config"]
assert fast["config"]["total_steps"] == 3800 and fast["step"] == 3800, (fast["config"], fast["step"])
assert res["model"]["n_layer"] == 1 and res["model"]["n_embd"] == 16, res["model"]
assert "preset phonegpt-shakespeare" in res["_stderr"], res["_stderr"]
a = run("train", "--preset", "tiny", *tiny_shape, "--out", f"{DIR}/plain")
b = run("train", "--preset", "tiny", *tiny_shape, "--out", f"{DIR}/recomputed", "--recompute")
assert b["config"]["recompute"] and not a["config"]["recompute"]
assert open(f"{DIR}/plain/model.bin", "rb").read() == open(f"{DIR}/recomputed/model.bin", "rb").read()
]=])

# Resuming: --threads with the count the run was made with is accepted and continues bit for
# bit; another count needs --allow-thread-change (and then matches only up to rounding); without
# --steps a resumed run continues to its own schedule length.
pg_cli_scenario(cli_resume_threads_and_steps [=[
def fresh(out, *extra):
    return run("train", "--preset", "tiny", "--data", TEXT, "--batch", "4", "--threads", "1", "--steps", "8",
               "--eval-interval", "2", "--target", "100", "--out", out, *extra)
def resume(trainer, out, *extra, rc=0):
    return run("train", "--resume", trainer, "--data", TEXT, "--eval-interval", "2", "--out", out, *extra, rc=rc)
def model_bytes(out):
    return open(f"{out}/model.bin", "rb").read()
straight = fresh(f"{DIR}/straight")
assert straight["step"] == 8 and straight["config"]["threads"] == 1, straight
assert ", 1 thread\n" in straight["_stderr"] and "1 threads" not in straight["_stderr"], straight["_stderr"]
# The same run stopped at step 4 (its target is met there): a trainer.bin in mid-schedule.
half = fresh(f"{DIR}/half", "--stop-at-target")
assert half["step"] == 4 and half["config"]["total_steps"] == 8, half
trainer = f"{DIR}/half/trainer.bin"
# Without --steps: to the run's own 8. With the run's own --threads 1: accepted. Both bit for bit.
for name, extra in [("default", []), ("same", ["--threads", "1"])]:
    res = resume(trainer, f"{DIR}/{name}", *extra)
    assert res["start_step"] == 4 and res["step"] == 8 and res["config"]["threads"] == 1, res
    assert res["recipe"]["steps"] == 8, res["recipe"]
    assert "1 thread, as the run was made with" in res["_stderr"], res["_stderr"]
    assert model_bytes(f"{DIR}/{name}") == model_bytes(f"{DIR}/straight"), name
# Another count is refused with a usage error naming the option that allows it ...
err = resume(trainer, f"{DIR}/two", "--threads", "2", rc=2)
assert "--allow-thread-change" in err["error"] and "made with 1" in err["error"], err
# ... and with it the run continues on 2 threads, equal up to rounding, and records the 2.
res = resume(trainer, f"{DIR}/two", "--threads", "2", "--allow-thread-change")
assert res["step"] == 8 and res["config"]["threads"] == 2 and "rounding" in res["_stderr"], res
assert "1 -> 2 threads (--allow-thread-change" in res["_stderr"], res["_stderr"]
close(res["val"]["loss"], straight["val"]["loss"], "the 2-thread continuation", 1e-3)
again = resume(f"{DIR}/two/trainer.bin", f"{DIR}/again", "--steps", "9")
assert again["step"] == 9 and again["config"]["threads"] == 2, again
# A finished run resumed without --steps: nothing to do, and the message says what to pass.
done = resume(f"{DIR}/straight/trainer.bin", f"{DIR}/done", rc=2)
assert "complete" in done["error"] and "--steps" in done["error"], done
run("train", "--preset", "tiny", "--data", TEXT, "--allow-thread-change", "--out", f"{DIR}/x", rc=2)
]=])

# A loss that is not finite is never a score. A model whose token embedding is 3e38 (finite
# weights whose forward overflows) scores NaN: eval --checkpoint fails (exit 1,
# PG_ERR_NOT_FINITE); eval --checkpoints skips it, even as the first file, so the best is a real score.
pg_cli_scenario(cli_eval_non_finite [=[
import struct
train(f"{DIR}/run", "--steps", "4", "--eval-interval", "2")
folder = f"{DIR}/run/checkpoints"
good = f"{folder}/step-000002.bin"
run("export", "--checkpoint", good, "--format", "llmc", "--out", f"{DIR}/m.llmc")
raw = bytearray(open(f"{DIR}/m.llmc", "rb").read())
header = struct.unpack("<256i", raw[:1024])
n = header[7] * header[6]  # wte, the first tensor: padded vocabulary x width
raw[1024:1024 + 4 * n] = struct.pack(f"<{n}f", *([3e38] * n))
open(f"{DIR}/poisoned.llmc", "wb").write(raw)
poisoned = f"{folder}/step-000001.bin"
run("import", "--format", "llmc", "--in", f"{DIR}/poisoned.llmc", "--out", poisoned, "--tokenizer-from", good)
bad = run("eval", "--checkpoint", poisoned, "--data", TEXT, rc=1)
assert bad["status"] == "PG_ERR_NOT_FINITE" and "not finite" in bad["error"], bad
out = run("eval", "--checkpoints", folder, "--data", TEXT)
assert [s["checkpoint"] for s in out["skipped"]] == ["step-000001.bin"], out["skipped"]
assert out["skipped"][0]["status"] == "PG_ERR_NOT_FINITE", out["skipped"]
assert [r["checkpoint"] for r in out["results"]] == ["step-000002.bin", "step-000004.bin"], out["results"]
assert all(math.isfinite(r["loss"]) for r in out["results"])
assert out["best"]["checkpoint"] == min(out["results"], key=lambda r: r["loss"])["checkpoint"], out["best"]
rows = list(csv.DictReader(open(f"{folder}/scores.csv")))
assert [r["checkpoint"] for r in rows] == ["step-000002.bin", "step-000004.bin"], rows
]=])

# Files that are not regular (a FIFO, /dev/zero, a directory) as a checkpoint or as the text:
# a clear error at once, never a blocked open or a read that never ends (30 s bound each).
pg_cli_scenario(cli_refuses_non_regular_files [=[
fifo = f"{DIR}/fifo"
if not os.path.exists(fifo):
    os.mkfifo(fifo)
for path, what in [(fifo, "a FIFO"), ("/dev/zero", "a character device"), (DIR, "a directory")]:
    # (arguments, exit code, status, words of the message): the checkpoint reaches the library,
    # the text is checked by the tool first (a usage error, as for a missing file).
    for args, rc, status, words in (
            (["eval", "--checkpoint", path, "--data", TEXT], 1, "PG_ERR_IO", what),
            (["train", "--preset", "tiny", "--data", path, "--steps", "1", "--out", f"{DIR}/run"], 2, "usage", "--data")):
        p = subprocess.run([CLI, *args, "--json"], capture_output=True, text=True, timeout=30)
        out = json.loads(p.stdout)
        if p.returncode != rc or out["ok"] or out["status"] != status or words not in out["error"]:
            sys.exit(f"phonegpt {' '.join(args)}: exit {p.returncode}, {out}")
]=])

# phonegpt tokenizer info|encode|decode and train --tokenizer with a byte-level BPE: a small
# GPT-2 style vocabulary written here (encoder.json + vocab.bpe: the 256 byte tokens with id =
# byte value, merges that make "Citizen" and " speak" one token each, and <|endoftext|>).
pg_cli_scenario(cli_tokenizer_bpe [=[
def byte_chars():
    """GPT-2's printable stand-ins for the 256 bytes (its bytes_to_unicode)."""
    keep = list(range(ord("!"), ord("~") + 1)) + list(range(0xA1, 0xAD)) + list(range(0xAE, 0x100))
    chars, extra = {}, 0
    for b in range(256):
        if b in keep:
            chars[b] = chr(b)
        else:
            chars[b] = chr(256 + extra)
            extra += 1
    return chars
chars = byte_chars()
encoder = {chars[b]: b for b in range(256)}
merges = [("C", "i"), ("Ci", "t"), ("Cit", "i"), ("z", "e"), ("Citi", "ze"), ("Citize", "n"),
          ("\u0120", "s"), ("\u0120s", "p"), ("\u0120sp", "e"), ("\u0120spe", "a"), ("\u0120spea", "k")]
for a, b in merges:
    encoder[a + b] = len(encoder)
encoder["<|endoftext|>"] = len(encoder)
with open(f"{DIR}/encoder.json", "w", encoding="utf-8") as f:
    json.dump(encoder, f, ensure_ascii=False)
with open(f"{DIR}/vocab.bpe", "w", encoding="utf-8") as f:
    f.write("#version: 0.2\n" + "".join(f"{a} {b}\n" for a, b in merges))
tok = ["--tokenizer", f"{DIR}/encoder.json", "--merges", f"{DIR}/vocab.bpe"]

info = run("tokenizer", "info", *tok, "--data", TEXT)
assert info["kind"] == "bpe" and info["vocab_size"] == 256 + len(merges) + 1, info
assert 0 < info["tokens_per_byte"] < 1, info
text = "First Citizen: speak, speak."
enc = run("tokenizer", "encode", *tok, "--text", text)
assert encoder["Citizen"] in enc["ids"] and encoder["\u0120speak"] in enc["ids"], enc
assert enc["bytes"] == len(text) and enc["tokens"] == len(enc["ids"]) < len(text), enc
dec = run("tokenizer", "decode", *tok, "--ids", ",".join(map(str, enc["ids"])))
assert dec["text"] == text, dec
# The whole text round-trips through an ids file written as encode prints it.
whole = run("tokenizer", "encode", *tok, "--data", TEXT)
with open(f"{DIR}/ids.txt", "w") as f:
    f.write(" ".join(map(str, whole["ids"])) + "\n")
assert run("tokenizer", "decode", *tok, "--ids-file", f"{DIR}/ids.txt")["text"] == open(TEXT).read()
# A byte that is no character on its own (the first of "é"): exact in plain mode, U+FFFD in JSON.
half = run("tokenizer", "decode", *tok, "--ids", "195")
assert half["text"] == "\ufffd" and half["bytes"] == 1 and half["exact"] is False, half
raw = subprocess.run([CLI, "tokenizer", "decode", *tok, "--ids", "195 169"], capture_output=True)
assert raw.returncode == 0 and raw.stdout == "é".encode(), raw
# Special tokens are text unless asked for.
special = encoder["<|endoftext|>"]
assert run("tokenizer", "encode", *tok, "--text", "<|endoftext|>", "--allow-special")["ids"] == [special]
assert special not in run("tokenizer", "encode", *tok, "--text", "<|endoftext|>")["ids"]

# A model with that vocabulary, end to end: train, eval, sample, and its checkpoint's tokenizer.
res = run("train", "--preset", "tiny", "--data", TEXT, *tok, "--batch", "4", "--threads", "2", "--steps", "4",
          "--eval-interval", "2", "--out", f"{DIR}/run")
assert res["model"]["vocab_size"] == info["vocab_size"] and res["val_tokens"] > 0, res
assert res["train_tokens"] + res["val_tokens"] == whole["tokens"], (res, whole["tokens"])
ev = run("eval", "--checkpoint", res["model_path"], "--data", TEXT)
assert ev["scored"] == res["val_tokens"] - 1 and math.isfinite(ev["loss"]), ev
run("sample", "--checkpoint", res["model_path"], "--prompt", "First Citizen", "--tokens", "8")
back = run("tokenizer", "info", "--tokenizer", res["model_path"])
assert back["kind"] == "bpe" and back["vocab_size"] == info["vocab_size"], back
assert run("tokenizer", "encode", "--tokenizer", res["model_path"], "--text", text)["ids"] == enc["ids"]

# Usage errors (exit 2) and bad ids (exit 1).
run("train", "--resume", res["trainer_path"], "--data", TEXT, *tok, "--out", f"{DIR}/r", rc=2)
run("tokenizer", "info", "--tokenizer", f"{DIR}/no-such.json", rc=2)
run("tokenizer", "info", "--tokenizer", f"{DIR}/vocab.bpe", rc=2)
run("tokenizer", "encode", *tok, rc=2)
run("tokenizer", "decode", *tok, "--ids", "1 x", rc=2)
run("tokenizer", "decode", *tok, "--ids", str(info["vocab_size"]), rc=1)
run("tokenizer", "split", *tok, rc=2)
]=])

# phonegpt tokenizer train: a byte-level BPE trained on the text, written as tokenizer.json,
# read back by the other tokenizer commands and by train --tokenizer; bad options are usage
# errors (2), a vocabulary too small for the bytes is a library error (1).
pg_cli_scenario(cli_tokenizer_train [=[
out = f"{DIR}/tokenizer.json"
res = run("tokenizer", "train", "--data", TEXT, "--vocab-size", "300", "--out", out, "--special", "<|endoftext|>,<|pad|>",
          "--pattern", "cl100k", "--threads", "2")
assert res["vocab_size"] == 300 and res["pattern"] == "cl100k" and res["texts"] == 1, res
spec = json.load(open(out, encoding="utf-8"))
assert spec["model"]["type"] == "BPE" and len(spec["model"]["merges"]) == 300 - 256 - 2, len(spec["model"]["merges"])
assert [t["content"] for t in spec["added_tokens"]] == ["<|endoftext|>", "<|pad|>"], spec["added_tokens"]
info = run("tokenizer", "info", "--tokenizer", out, "--data", TEXT)
assert info["kind"] == "bpe" and info["vocab_size"] == 300 and info["tokens_per_byte"] < 0.9, info
assert run("tokenizer", "encode", "--tokenizer", out, "--text", "x<|pad|>", "--allow-special")["ids"][-1] == 1
whole = run("tokenizer", "encode", "--tokenizer", out, "--data", TEXT)
with open(f"{DIR}/ids.txt", "w") as f:
    f.write(" ".join(map(str, whole["ids"])))
assert run("tokenizer", "decode", "--tokenizer", out, "--ids-file", f"{DIR}/ids.txt")["text"] == open(TEXT).read()
# Lines as texts (HF's way of reading files) and one thread: a tokenizer of the same size.
lines = run("tokenizer", "train", "--data", TEXT, "--vocab-size", "300", "--out", f"{DIR}/lines.json", "--lines",
            "--threads", "1")
assert lines["vocab_size"] == 300 and lines["texts"] == len(open(TEXT, newline="").read().splitlines()), lines
trained = run("train", "--preset", "tiny", "--data", TEXT, "--tokenizer", out, "--batch", "4", "--threads", "2",
              "--steps", "2", "--eval-interval", "0", "--out", f"{DIR}/run")
assert trained["model"]["vocab_size"] == 300, trained
# sample --stop with that BPE model: the text (streamed, and in JSON) ends right after the first
# occurrence of the stop string, although the token completing it may hold more bytes.
model = trained["model_path"]
gen = ["sample", "--checkpoint", model, "--prompt", "First", "--tokens", "40", "--seed", "4"]
free = run(*gen)
assert free["stopped"] is False and free["tokens"] == 40, free
stop = free["text"][10:13]
cut = free["text"][:free["text"].find(stop) + len(stop)]
stopped = run(*gen, "--stop", stop)
assert stopped["stopped"] is True and stopped["text"] == cut and stopped["tokens"] < 40, (stopped, cut)
plain = subprocess.run([CLI, *gen, "--stop", stop], capture_output=True)
assert plain.returncode == 0 and plain.stdout == ("First" + cut + "\n").encode(), (plain.stdout, cut)
run(*gen, "--stop", "", rc=2)
run("tokenizer", "train", "--data", TEXT, "--vocab-size", "100", "--out", f"{DIR}/x.json", rc=1)
run("tokenizer", "train", "--data", TEXT, "--vocab-size", "300", "--out", f"{DIR}/x.json", "--pattern", "llama", rc=2)
run("tokenizer", "train", "--data", TEXT, "--out", f"{DIR}/x.json", rc=2)
run("tokenizer", "train", "--data", f"{DIR}/none.txt", "--vocab-size", "300", "--out", f"{DIR}/x.json", rc=2)
]=])

pg_cli_test(cli_stop_without_target 2 "ok|error" "train|--preset|tiny|--data|${PG_CLI_TEXT}|--stop-at-target|--json")
pg_cli_test(cli_target_partial_eval 2 "ok|error"
  "train|--preset|tiny|--data|${PG_CLI_TEXT}|--target|1.5|--eval-windows|4|--json")
pg_cli_test(cli_bad_eval_seconds 2 "ok|error" "train|--preset|tiny|--data|${PG_CLI_TEXT}|--eval-seconds|-1|--json")
pg_cli_test(cli_eval_both_modes 2 "ok|error"
  "eval|--checkpoint|a.bin|--checkpoints|${PG_CLI_DIR}|--data|${PG_CLI_TEXT}|--json")
pg_cli_test(cli_eval_out_without_folder 2 "ok|error"
  "eval|--checkpoint|a.bin|--out|x.csv|--data|${PG_CLI_TEXT}|--json")
endif()  # TARGET phonegpt_cli
return()
endif()  # NOT CMAKE_SCRIPT_MODE_FILE

# Runs the phonegpt CLI once and checks it (the test role of this file):
#   PG_CLI   the executable
#   PG_ARGS  its arguments, separated by |
#   PG_RC    the exit code wanted
#   PG_KEYS  top-level keys the single JSON object on stdout must have, separated by |
#            ("-": stdout is not checked)
#   PG_EXPECT optional key=value pairs (top-level, compared as strings), separated by |
#   PG_PYTHON optional python3: checks strictly that stdout holds nothing but the one object
#            (CMake's string(JSON) ignores anything after the first value)
string(REPLACE "|" ";" args "${PG_ARGS}")
execute_process(COMMAND ${PG_CLI} ${args} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
message(STATUS "stderr:\n${err}")
if(NOT "${rc}" STREQUAL "${PG_RC}")
  message(FATAL_ERROR "exit code ${rc}, wanted ${PG_RC}\nstdout:\n${out}")
endif()
if(PG_KEYS STREQUAL "-")
  return()
endif()
# The whole of stdout must be one JSON object (string(JSON) fails on anything else).
string(STRIP "${out}" out)
string(JSON type ERROR_VARIABLE json_error TYPE "${out}")
if(json_error OR NOT type STREQUAL "OBJECT")
  message(FATAL_ERROR "stdout is not one JSON object (${json_error}):\n${out}")
endif()
if(PG_PYTHON)
  string(RANDOM LENGTH 12 tag)
  set(json_file "${CMAKE_CURRENT_BINARY_DIR}/cli_check_${tag}.json")
  file(WRITE "${json_file}" "${out}")
  execute_process(COMMAND ${PG_PYTHON} -c
      "import json,sys; v=json.load(open(sys.argv[1])); assert isinstance(v, dict)" "${json_file}"
    RESULT_VARIABLE py_rc ERROR_VARIABLE py_err)
  file(REMOVE "${json_file}")
  if(NOT py_rc EQUAL 0)
    message(FATAL_ERROR "stdout is not exactly one JSON object:\n${py_err}\n${out}")
  endif()
endif()
string(REPLACE "|" ";" keys "${PG_KEYS}")
foreach(key IN LISTS keys)
  string(JSON value ERROR_VARIABLE key_error GET "${out}" ${key})
  if(key_error)
    message(FATAL_ERROR "JSON has no \"${key}\":\n${out}")
  endif()
endforeach()
string(REPLACE "|" ";" expects "${PG_EXPECT}")
foreach(pair IN LISTS expects)
  string(REGEX MATCH "^([^=]+)=(.*)$" _ "${pair}")
  string(JSON value GET "${out}" ${CMAKE_MATCH_1})
  if(NOT value STREQUAL CMAKE_MATCH_2)
    message(FATAL_ERROR "\"${CMAKE_MATCH_1}\" is ${value}, wanted ${CMAKE_MATCH_2}:\n${out}")
  endif()
endforeach()
string(JSON ok GET "${out}" ok)
if(PG_RC STREQUAL "0" AND NOT ok)
  message(FATAL_ERROR "\"ok\" is ${ok}:\n${out}")
endif()
if(NOT PG_RC STREQUAL "0" AND ok)
  message(FATAL_ERROR "a failing run says ok:\n${out}")
endif()
message(STATUS "stdout:\n${out}")
