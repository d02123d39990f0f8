"""Compiles a C client of the public headers for the header checks (check_deprecated.py,
check_experimental.py): C99, syntax only, the messages in the C locale."""
import os
import subprocess
import tempfile


def compile_c(cc, include, text, flags=()):
    """(return code, stderr) of `cc -std=c99 -fsyntax-only FLAGS -I include` on `text`."""
    with tempfile.TemporaryDirectory() as d:
        src = os.path.join(d, "client.c")
        with open(src, "w", encoding="utf-8") as f:
            f.write(text)
        r = subprocess.run([cc, "-std=c99", "-fsyntax-only", *flags, "-I", include, src],
                           capture_output=True, text=True, env=dict(os.environ, LC_ALL="C"))
        return r.returncode, r.stderr
