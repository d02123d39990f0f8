#!/usr/bin/env bash
# The shared library's exported symbols must be exactly the functions the public header
# declares: nothing declared is missing (an unresolved symbol at a user's link time) and nothing
# else leaks (C++ internals would become ABI by accident).
# Usage: check_exports.sh HEADER LIBRARY
set -euo pipefail
header=$1 lib=$2
declared=$(grep -oE '^PG_API [^;]*\b(pg_[a-z0-9_]+)\(' "$header" | grep -oE 'pg_[a-z0-9_]+\($' | tr -d '(' | sort -u)
exported=$(nm -D --defined-only "$lib" | awk '$2 ~ /^[TWiDBR]$/ {print $3}' | sort -u)
missing=$(comm -23 <(echo "$declared") <(echo "$exported"))
extra=$(comm -13 <(echo "$declared") <(echo "$exported"))
n_declared=$(echo "$declared" | wc -l)
status=0
if [ -n "$missing" ]; then echo "declared in the header but not exported:"; echo "$missing"; status=1; fi
if [ -n "$extra" ]; then echo "exported but not declared in the header:"; echo "$extra"; status=1; fi
[ "$n_declared" -ge 50 ] || { echo "only $n_declared declarations found: is the header parsed?"; status=1; }
[ $status -eq 0 ] && echo "exports match the header: $n_declared functions"
exit $status
