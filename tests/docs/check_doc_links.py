#!/usr/bin/env python3
"""Fails when a document names something that does not exist.

Checked in README.md, every docs/*.md and the Unreleased section of CHANGELOG.md (the older
releases describe the code as it was):
- links [text](target) and repository paths (include/..., lib/..., docs/..., ...; globs allowed),
  relative to the repository root or to the document's folder;
- `pg_*` names: declared in include/phonegpt/*.h, and for `pg_struct.field` a field of that
  struct; `PG_*` names: used somewhere in the sources (header, library, CMake, scripts, tests);
- `--preset NAME`: a preset of examples/cli/train_presets.cpp;
- phonegpt command lines (code blocks, `phonegpt ...` spans): the command and subcommand exist
  and every --option is in that command's --help; in docs/cli.md every `--option` span is some
  command's option; bench_* and benchmarks/*.py command lines: options their sources parse;
- README's documentation list names every docs/*.md.
Each failure names the document, line and name.

Usage: check_doc_links.py REPO_ROOT PHONEGPT_CLI
"""
import glob
import os
import re
import subprocess
import sys

ROOT, CLI = sys.argv[1], sys.argv[2]
TOP_DIRS = ("include", "lib", "examples", "bindings", "benchmarks", "tests", "docs", "scripts", "cmake", ".ci")
PLACEHOLDER = re.compile(r"[A-Z]{2,}|<|\.\.\.|NNN|\{[a-z]\}")
SOURCE_EXT = (".h", ".hpp", ".c", ".cpp", ".def", ".txt", ".cmake", ".sh", ".py", ".kt", ".js", ".map")
failures = []


def fail(doc, line_no, what):
    failures.append(f"{os.path.relpath(doc, ROOT)}:{line_no}: {what}")


def read(path):
    with open(path, encoding="utf-8") as f:
        return f.read()


# ---------------------------------------------------------------------------------------------
# What exists

headers = "\n".join(read(p) for p in glob.glob(os.path.join(ROOT, "include", "phonegpt", "*.h")))
declared = set(re.findall(r"\bpg_[a-z0-9_]+\b", headers))
struct_fields = {}
for body, name in re.findall(r"typedef struct (?:pg_[a-z0-9_]+ )?\{(.*?)\}\s*(pg_[a-z0-9_]+);", headers, re.S):
    body = re.sub(r"/\*.*?\*/", "", body, flags=re.S)
    struct_fields[name] = set(re.findall(r"\b([a-z_][a-z0-9_]*)\s*(?:\[[^\]]*\])?\s*[;,]", body))

source_text = []
for top in TOP_DIRS + ("CMakeLists.txt", "setup.py", "pyproject.toml"):
    base = os.path.join(ROOT, top)
    paths = [base] if os.path.isfile(base) else glob.glob(os.path.join(base, "**", "*"), recursive=True)
    for p in paths:
        if p.endswith(SOURCE_EXT) and "node_modules" not in p and os.path.isfile(p):
            source_text.append(read(p))
used_constants = set(re.findall(r"\bPG_[A-Z0-9_]+\b", "\n".join(source_text)))

# the preset table's rows: {"name", "model", steps, ...}
presets = set(re.findall(r'^\s*\{"([a-z0-9-]+)",\s*"[a-z0-9-]+",\s*\d', read(os.path.join(ROOT, "examples", "cli", "train_presets.cpp")), re.M))
if not {"phonegpt", "tiny"} <= presets:
    sys.exit(f"could not read the presets of examples/cli/train_presets.cpp (found {sorted(presets)})")


def cli_help(*args):
    r = subprocess.run([CLI, *args, "--help"], capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"{CLI} {' '.join(args)} --help failed ({r.returncode}): {r.stderr}")
    return r.stdout


def options_of(text):
    return set(re.findall(r"^\s{2}--([a-z0-9-]+)", text, re.M))


usage = cli_help()
commands = {}  # command -> {subcommand or None -> options}
for m in re.finditer(r"^  ([a-z]+)(?: ([a-z-]+(?:\|[a-z-]+)+))?\s", usage, re.M):
    cmd, subs = m.group(1), m.group(2)
    if subs:
        commands[cmd] = {s: options_of(cli_help(cmd, s)) for s in subs.split("|")}
    else:
        commands[cmd] = {None: options_of(cli_help(cmd))}
if not {"train", "eval", "lora"} <= commands.keys():
    sys.exit(f"could not read the commands from {CLI} --help:\n{usage}")
all_cli_options = set().union(*(o for subs in commands.values() for o in subs.values()))


def program_options(program):
    """Options a benchmark or script parses, from its source, or None when it is not one."""
    name = os.path.basename(program)
    for candidate in (os.path.join(ROOT, "benchmarks", name + ".cpp"), os.path.join(ROOT, "benchmarks", name)):
        if re.fullmatch(r"bench_[a-z0-9_]+(\.py)?|[a-z0-9_]+\.py", name) and os.path.isfile(candidate):
            return set(re.findall(r"[\"'`]--([a-z0-9-]+)", read(candidate)))
    return None


# ---------------------------------------------------------------------------------------------
# The checks

def expand_braces(token):
    m = re.search(r"\{([^{}]*)\}", token)
    if not m:
        return [token]
    return [x for alt in m.group(1).split(",") for x in expand_braces(token[:m.start()] + alt + token[m.end():])]


def check_path(doc, line_no, token):
    token = token.rstrip(".,:;)").split("#")[0]
    if not token or PLACEHOLDER.search(token.replace("{", "")) or "node_modules" in token:
        return
    for path in expand_braces(token):
        # a file, a folder, or a program or module named by its source's stem (benchmarks/bench_eval)
        if not any(glob.glob(os.path.join(base, path)) or glob.glob(os.path.join(base, path) + ".*")
                   for base in (ROOT, os.path.dirname(doc))):
            break
    else:
        return
    fail(doc, line_no, f"path {token} does not exist (relative to the repository root or to the page)")


PATH_IN_TEXT = re.compile(r"(?<![\w/.$-])((?:%s)/[\w./*+{},<>-]*[\w*/}>])" % "|".join(re.escape(d) for d in TOP_DIRS))
# paths inside a package (an APK's lib/arm64-v8a/), not in this repository
INSIDE_PACKAGE = re.compile(r"\b(APK|AAR|jar)'s\s*`?$")
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
SPAN = re.compile(r"`([^`]+)`")
PG_NAME = re.compile(r"\b(pg_[a-z0-9_]+)\b(?!::)(\.([a-z_][a-z0-9_]*))?")


def is_declared(name):
    """pg_name, or pg_prefix_ of pg_prefix_*: some declaration starts with it."""
    return name in declared or (name.endswith("_") and any(d.startswith(name) for d in declared))
PG_CONST = re.compile(r"\b(PG_[A-Z0-9_]*[A-Z0-9])\b")


def check_names(doc, line_no, text):
    for m in PG_NAME.finditer(text):
        name, field = m.group(1), m.group(3)
        if not is_declared(name):
            fail(doc, line_no, f"{name} is not declared in include/phonegpt/")
        elif field and name in struct_fields and field not in struct_fields[name]:
            fail(doc, line_no, f"{name} has no field {field}")
    for m in PG_CONST.finditer(text):
        if m.group(1) not in used_constants and not m.group(1).endswith("_"):
            fail(doc, line_no, f"{m.group(1)} appears nowhere in the sources")
    for m in re.finditer(r"--preset[ =]([a-z0-9-]+)", text):
        if m.group(1) not in presets:
            fail(doc, line_no, f"--preset {m.group(1)} is not a preset (examples/cli/train_presets.cpp: {', '.join(sorted(presets))})")


def check_command(doc, line_no, words, in_prose=False):
    """words: one shell command line split on whitespace (continuations joined). In prose (a
    `phonegpt ...` span) an unknown command is only flagged when the span has options, so that
    a phrase such as `phonegpt adapter manifest v1` is not taken for one."""
    for i, w in enumerate(words):
        w = w.strip("`'\"([")
        if w == "phonegpt" or w.endswith("/phonegpt"):
            rest = [x.strip("`'\"[]()") for x in words[i + 1:]]
            if not rest or not re.fullmatch(r"[a-z]+", rest[0]):
                return  # `phonegpt --help`, `phonegpt` alone, or a word of prose
            cmd = rest[0]
            if cmd not in commands:
                if in_prose and not any(x.startswith("--") for x in rest):
                    return
                fail(doc, line_no, f"phonegpt {cmd}: no such command ({', '.join(sorted(commands))})")
                return
            subs = commands[cmd]
            if None in subs:
                options, flags = subs[None], rest[1:]
            else:
                sub = rest[1] if len(rest) > 1 else ""
                if "|" in sub:  # `phonegpt lora train|merge|...`
                    for s in sub.split("|"):
                        if s not in subs:
                            fail(doc, line_no, f"phonegpt {cmd} {s}: no such subcommand ({', '.join(sorted(subs))})")
                    return
                if sub.startswith("-") or not sub:
                    return
                if sub not in subs:
                    fail(doc, line_no, f"phonegpt {cmd} {sub}: no such subcommand ({', '.join(sorted(subs))})")
                    return
                options, flags = subs[sub], rest[2:]
            for f in flags:
                if f in ("|", "&&", ";", ">", "2>", "|&"):
                    break
                for m in re.finditer(r"(?<![\w-])--([a-z0-9][a-z0-9-]*)", f):
                    if m.group(1) not in options:
                        fail(doc, line_no, f"phonegpt {' '.join(rest[:1 if None in subs else 2])} has no option --{m.group(1)}")
            return
        options = program_options(w)
        if options is not None:
            for f in words[i + 1:]:
                if f in ("|", "&&", ";", ">", "2>"):
                    break
                for m in re.finditer(r"(?<![\w-])--([a-z0-9][a-z0-9-]*)", f):
                    if m.group(1) not in options and m.group(1) != "help":
                        fail(doc, line_no, f"{os.path.basename(w)} has no option --{m.group(1)} (its source parses: {', '.join(sorted(options))})")
            return


def check_doc(doc, first_line=1, last_line=None):
    lines = read(doc).split("\n")
    fence = None  # the language of the open code block, "" for none
    pending = []  # a code-block command continued with a backslash
    for n, line in enumerate(lines, 1):
        if n < first_line or (last_line and n > last_line):
            continue
        stripped = line.strip()
        if stripped.startswith("```"):
            fence = None if fence is not None else stripped[3:].strip()
            pending = []
            continue
        if fence is not None:
            for m in PATH_IN_TEXT.finditer(line):
                check_path(doc, n, m.group(1))
            if fence in ("", "sh", "bash", "console", "shell"):
                check_names(doc, n, line)
                code = line.split(" #")[0]
                pending += code.rstrip("\\").split()
                if not code.rstrip().endswith("\\"):
                    check_command(doc, n, pending)
                    pending = []
            elif fence in ("c", "cpp", "python", "kotlin"):
                for m in PG_NAME.finditer(line):
                    if not is_declared(m.group(1)):
                        fail(doc, n, f"{m.group(1)} is not declared in include/phonegpt/")
            continue
        if line.startswith("    ") and re.match(r"\s+(\S*/)?(phonegpt|python3|build/)", line):
            check_command(doc, n, line.split())  # an indented code block
        for m in LINK.finditer(line):
            target = m.group(1)
            if not re.match(r"[a-z]+:", target) and not target.startswith("#"):
                check_path(doc, n, target)
        for m in PATH_IN_TEXT.finditer(line):
            if not INSIDE_PACKAGE.search(line[:m.start()]):
                check_path(doc, n, m.group(1))
        check_names(doc, n, line)
        for span in SPAN.findall(line):
            span = span.replace("\\|", "|")  # a | escaped in a table cell
            check_command(doc, n, span.split(), in_prose=True)
            if os.path.basename(doc) == "cli.md":
                for m in re.finditer(r"^--([a-z0-9][a-z0-9-]*)", span):
                    if m.group(1) not in all_cli_options and m.group(1) != "name":  # `--name VALUE`
                        fail(doc, n, f"--{m.group(1)} is no option of any phonegpt command")


docs = sorted(glob.glob(os.path.join(ROOT, "docs", "*.md")))
for doc in [os.path.join(ROOT, "README.md")] + docs:
    check_doc(doc)

changelog = os.path.join(ROOT, "CHANGELOG.md")
log_lines = read(changelog).split("\n")
starts = [i + 1 for i, l in enumerate(log_lines) if l.startswith("## ")]
if starts and log_lines[starts[0] - 1].startswith("## Unreleased"):
    check_doc(changelog, starts[0], (starts[1] - 1) if len(starts) > 1 else None)

readme = read(os.path.join(ROOT, "README.md"))
for doc in docs:
    name = "docs/" + os.path.basename(doc)
    if f"]({name})" not in readme:
        fail(os.path.join(ROOT, "README.md"), 0, f"the documentation list does not link {name}")

if failures:
    print("\n".join(failures))
    print(f"{len(failures)} name(s) in the docs that do not exist")
    sys.exit(1)
print(f"doc links: {len(docs) + 2} documents, every path, pg_ name, preset and phonegpt option exists")
