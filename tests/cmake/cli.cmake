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
  "train|--preset|tiny|--data|${PG_CLI_TEXT}|--steps|6|--batch|4|--eval-interval|3|--log-interval|2|--threads|2|--out|${PG_CLI_DIR}/run|--json"
  "step=6|start_step=0|command=train")
set_tests_properties(cli_train PROPERTIES FIXTURES_SETUP pg_cli_trained)

pg_cli_test(cli_resume 0 "ok|step|start_step|val"
  "train|--resume|${PG_CLI_DIR}/run/trainer.bin|--data|${PG_CLI_TEXT}|--steps|8|--eval-windows|4|--out|${PG_CLI_DIR}/resumed|--json"
  "step=8|start_step=6")
pg_cli_test(cli_eval 0 "ok|loss|bits_per_char|scored|windows"
  "eval|--checkpoint|${PG_CLI_DIR}/run/model.bin|--data|${PG_CLI_TEXT}|--threads|2|--json")
pg_cli_test(cli_sample 0 "ok|text|tokens|prompt"
  "sample|--checkpoint|${PG_CLI_DIR}/run/model.bin|--prompt|First|--tokens|20|--top-k|5|--seed|3|--json"
  "tokens=20|prompt=First")
set_tests_properties(cli_resume cli_eval cli_sample PROPERTIES FIXTURES_REQUIRED pg_cli_trained)
set_tests_properties(cli_resume PROPERTIES FIXTURES_SETUP pg_cli_resumed)

# 6 steps + resume to 8 = 8 steps straight, bit for bit (the 100-step default warm-up covers all
# 8 steps, so the two runs' different total_steps give the same learning rates).
pg_cli_test(cli_train_straight 0 "ok|step"
  "train|--preset|tiny|--data|${PG_CLI_TEXT}|--steps|8|--batch|4|--eval-interval|0|--eval-windows|4|--threads|2|--out|${PG_CLI_DIR}/straight|--json"
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

def run(*args, rc=0):
    """Runs phonegpt ARGS --json; wants exit code rc and one JSON object; returns it (and stderr)."""
    p = subprocess.run([CLI, *args, "--json"], capture_output=True, text=True)
    if p.returncode != rc:
        sys.exit(f"phonegpt {' '.join(args)}: exit {p.returncode}, wanted {rc}\n{p.stderr}\n{p.stdout}")
    result = json.loads(p.stdout)
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
