#!/usr/bin/env python3
"""Fails when a folder of lib/ includes a folder it does not depend on.

The dependencies are the table "Layout: one folder per concern" of docs/architecture.md: its
"depends on" column names each folder's direct dependencies ("everything below" means every
row under it); a folder may include itself and the transitive closure of its dependencies, so
the table is the rule and the code is checked against it. Every folder of lib/ must have a row.
The public headers (include/phonegpt) are declarations every folder may include; that the
phone library calls none of the coordinator's functions is the link's to check (libphonegpt.so
is linked with --no-undefined and without lib/coordinator).

Before checking the tree, the script plants one violation (a lib/core file including a
lib/coordinator header) into the parsed includes and fails unless that is reported: the check
cannot pass by not looking.

Usage: check_layers.py REPO_ROOT
"""
import os
import re
import sys

ROOT = sys.argv[1]
LIB = os.path.join(ROOT, "lib")
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)
ROW = re.compile(r"^\|\s*`lib/([a-z_]+)/`\s*\|.*\|([^|]*)\|\s*$")


def read_table():
    """Folder -> set of direct dependencies, and the folders in table order."""
    path = os.path.join(ROOT, "docs", "architecture.md")
    rows = []
    for line in open(path, encoding="utf-8"):
        m = ROW.match(line)
        if m:
            rows.append((m.group(1), m.group(2).strip()))
    names = [name for name, _ in rows]
    deps = {}
    for i, (name, text) in enumerate(rows):
        if "everything below" in text:
            deps[name] = set(names[i + 1:])
        else:
            deps[name] = {w for w in re.findall(r"[a-z_]+", text) if w in names}
    return names, deps


def closure(deps):
    allowed = {}
    for name in deps:
        seen, todo = set(), list(deps[name])
        while todo:
            d = todo.pop()
            if d not in seen:
                seen.add(d)
                todo.extend(deps.get(d, ()))
        allowed[name] = seen | {name}
    return allowed


def read_includes():
    """(file, folder of the file, included path) for every quoted include under lib/."""
    found = []
    for folder in sorted(os.listdir(LIB)):
        base = os.path.join(LIB, folder)
        if not os.path.isdir(base):
            continue
        for dirpath, _, files in os.walk(base):
            for f in sorted(files):
                path = os.path.join(dirpath, f)
                with open(path, encoding="utf-8", errors="replace") as fh:
                    for inc in INCLUDE.findall(fh.read()):
                        found.append((os.path.relpath(path, ROOT), folder, inc))
    return found


def target_folder(inc, own_folder):
    if inc.startswith("phonegpt/"):
        return None          # a public header: declarations only
    if "/" not in inc:
        return own_folder    # a sibling in the same folder
    return inc.split("/")[0]


def violations(includes, allowed):
    bad = []
    for path, folder, inc in includes:
        target = target_folder(inc, folder)
        if target is not None and target not in allowed.get(folder, {folder}):
            bad.append(f"{path}: lib/{folder} includes \"{inc}\" (lib/{target}), which it does not depend on")
    return bad


def main():
    names, deps = read_table()
    if len(names) < 5:
        print(f"docs/architecture.md: found {len(names)} rows in the layout table; is it parsed?")
        return 1
    allowed = closure(deps)
    failures = []
    folders = [f for f in sorted(os.listdir(LIB)) if os.path.isdir(os.path.join(LIB, f))]
    failures += [f"lib/{f}/ has no row in docs/architecture.md's layout table" for f in folders if f not in deps]
    failures += [f"docs/architecture.md names lib/{f}/, which does not exist" for f in names if f not in folders]

    includes = read_includes()
    planted = ("lib/core/planted.hpp", "core", "coordinator/validate.hpp")
    if violations([planted], allowed) == []:
        failures.append("self-test: a planted include of lib/coordinator from lib/core was not reported")

    failures += violations(includes, allowed)
    for f in failures:
        print(f)
    if failures:
        return 1
    print(f"{len(includes)} includes in {len(folders)} folders follow docs/architecture.md's table")
    return 0


if __name__ == "__main__":
    sys.exit(main())
