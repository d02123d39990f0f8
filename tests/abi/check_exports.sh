#!/usr/bin/env bash
# A shared library's exported symbols must be exactly the functions its tier's public headers
# declare: nothing declared is missing (an unresolved symbol at a user's link time) and nothing
# else leaks (C++ internals, or another tier's functions, would become ABI by accident).
# Usage: check_exports.sh LIBRARY HEADER [HEADER...]
set -euo pipefail
lib=$1; shift
declared=$(cat "$@" | grep -oE '^(PG_DEPRECATED\()?PG_API [^;]*\b(pg_[a-z0-9_]+)\(' | grep -oE 'pg_[a-z0-9_]+\($' | tr -d '(' | sort -u)
exported=$(nm -D --defined-only "$lib" | awk '$2 ~ /^[TWiDBR]$/ {print $3}' | sort -u)
missing=$(comm -23 <(echo "$declared") <(echo "$exported"))
extra=$(comm -13 <(echo "$declared") <(echo "$exported"))
n_declared=$(echo "$declared" | wc -l)
status=0
if [ -n "$missing" ]; then echo "declared in $* but not exported by $lib:"; echo "$missing"; status=1; fi
if [ -n "$extra" ]; then echo "exported by $lib but not declared in $*:"; echo "$extra"; status=1; fi
[ "$n_declared" -ge 30 ] || { echo "only $n_declared declarations found: is the header parsed?"; status=1; }
[ $status -eq 0 ] && echo "$(basename "$lib") exports what $* declare: $n_declared functions"
exit $status
