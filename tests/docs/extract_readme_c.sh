#!/bin/sh
# Writes README.md's ```c blocks, in order, followed by readme_examples_main.c, to one C file
# (the target readme_examples_c rebuilds it whenever README.md changes).
# Usage: extract_readme_c.sh README MAIN OUT
set -eu
readme=$1 main=$2 out=$3
awk '/^```c$/ {inside = 1; blocks++; next} /^```/ {inside = 0} inside {print} END {if (!blocks) exit 1}' \
  "$readme" > "$out.new" || { echo "$readme has no \`\`\`c block" >&2; exit 1; }
cat "$main" >> "$out.new"
mv "$out.new" "$out"
