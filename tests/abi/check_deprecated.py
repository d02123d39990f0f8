#!/usr/bin/env python3
"""Every PG_DEPRECATED declaration of the public headers warns when used, naming its hint, and
the headers alone compile without a deprecation warning.

A C file that references each deprecated function is compiled with -Wdeprecated-declarations;
the compiler's warnings must name every one of them and quote its hint. A second file that only
includes the headers must compile with no deprecation warning at all (the library's own
definitions of the wrappers do not warn either: they are compiled with -Wall -Wextra).

Usage: check_deprecated.py C_COMPILER INCLUDE_DIR
"""
import os
import re
import sys

import c_client

CC, INCLUDE = sys.argv[1], sys.argv[2]
DECL = re.compile(r'PG_DEPRECATED\(PG_API[^;]*?\b(pg_[a-z0-9_]+)\(.*?\),\s*"([^"]*)"\);', re.S)


def compile_c(text):
    return c_client.compile_c(CC, INCLUDE, text, ["-Wdeprecated-declarations"])


def main():
    headers = [os.path.join(INCLUDE, "phonegpt", h) for h in sorted(os.listdir(os.path.join(INCLUDE, "phonegpt")))]
    deprecated = []
    for h in headers:
        deprecated += DECL.findall(open(h, encoding="utf-8").read())
    failures = []
    if len(deprecated) < 2:
        failures.append(f"found {len(deprecated)} PG_DEPRECATED declarations: is the pattern broken?")
    includes = "".join(f"#include <phonegpt/{os.path.basename(h)}>\n" for h in headers)

    rc, err = compile_c(includes + "int main(void) { return 0; }\n")
    if rc != 0 or "deprecated" in err:
        failures.append(f"the headers alone do not compile cleanly:\n{err}")

    uses = "".join(f"    void (*p{i})(void) = (void (*)(void)){name};\n    (void)p{i};\n"
                   for i, (name, _) in enumerate(deprecated))
    rc, err = compile_c(includes + "int main(void) {\n" + uses + "    return 0;\n}\n")
    if rc != 0:
        failures.append(f"the file using the deprecated functions does not compile:\n{err}")
    for name, hint in deprecated:
        if not re.search(rf"['\u2018]{name}['\u2019] is deprecated: {re.escape(hint)}", err):
            failures.append(f"{name}: no deprecation warning quoting \"{hint}\"")
    for f in failures:
        print(f)
    if not failures:
        print(f"{len(deprecated)} deprecated functions warn with their hints: {', '.join(n for n, _ in deprecated)}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
