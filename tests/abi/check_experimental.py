#!/usr/bin/env python3
"""phonegpt.h's experimental declarations (the names declared inside its
`#ifdef PG_EXPERIMENTAL_API` blocks: enumerators and functions) are invisible to a C client
that does not define PG_EXPERIMENTAL_API, and visible to one that does.

For each name, a C99 file that uses it must fail to compile without the macro, with an error
naming it; one file using all of them must compile cleanly with -DPG_EXPERIMENTAL_API; and the
header alone must compile cleanly both ways.

Usage: check_experimental.py C_COMPILER INCLUDE_DIR
"""
import os
import re
import sys

import c_client

CC, INCLUDE = sys.argv[1], sys.argv[2]
HEADER = os.path.join(INCLUDE, "phonegpt", "phonegpt.h")
BLOCK = re.compile(r"^#ifdef PG_EXPERIMENTAL_API\b.*?$(.*?)^#endif\s*/\*\s*PG_EXPERIMENTAL_API\s*\*/", re.M | re.S)
ENUMERATOR = re.compile(r"^\s*(PG_[A-Z0-9_]+)\s*=", re.M)
FUNCTION = re.compile(r"^PG_API [^;(]*?\b(pg_[a-z0-9_]+)\(", re.M)


def compile_c(body, defines):
    return c_client.compile_c(CC, INCLUDE, "#include <phonegpt/phonegpt.h>\n" + body,
                              ["-pedantic", "-Wall", "-Werror=implicit-function-declaration", *defines])


def use(name, i):
    if name.startswith("pg_"):
        return f"    void (*p{i})(void) = (void (*)(void)){name};\n    (void)p{i};\n"
    return f"    int v{i} = (int){name};\n    (void)v{i};\n"


def main():
    text = open(HEADER, encoding="utf-8").read()
    blocks = BLOCK.findall(text)
    names = []
    for b in blocks:
        names += ENUMERATOR.findall(b) + FUNCTION.findall(b)
    failures = []
    if len(blocks) < 3 or len(names) < 5:
        failures.append(f"found {len(blocks)} experimental blocks and {len(names)} names: is the pattern broken?")
    main_of = lambda body: "int main(void) {\n" + body + "    return 0;\n}\n"
    for defines in ([], ["-DPG_EXPERIMENTAL_API"]):
        rc, err = compile_c(main_of(""), defines)
        if rc != 0 or err:
            failures.append(f"the header alone ({' '.join(defines) or 'default'}) does not compile cleanly:\n{err}")
    for i, name in enumerate(names):
        rc, err = compile_c(main_of(use(name, i)), [])
        if rc == 0 or name not in err:
            failures.append(f"{name}: visible without PG_EXPERIMENTAL_API")
    rc, err = compile_c(main_of("".join(use(n, i) for i, n in enumerate(names))), ["-DPG_EXPERIMENTAL_API"])
    if rc != 0:
        failures.append(f"with PG_EXPERIMENTAL_API the experimental names do not compile:\n{err}")
    for f in failures:
        print(f)
    if not failures:
        print(f"{len(names)} experimental names in {len(blocks)} blocks need PG_EXPERIMENTAL_API: {', '.join(names)}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
