#!/usr/bin/env bash
# docs/api.md names every function the public header declares (as `pg_name`), so the map of the
# API cannot silently fall behind it; names it lists that the header does not declare fail too.
# Usage: check_api_doc.sh API_DOC HEADER [HEADER...] (every tier's header)
set -euo pipefail
doc=$1; shift
header="$*"
declared=$(cat "$@" | grep -oE '^(PG_DEPRECATED\()?PG_API [^;]*\b(pg_[a-z0-9_]+)\(' | grep -oE 'pg_[a-z0-9_]+\($' | tr -d '(' | sort -u)
documented=$(grep -oE '`pg_[a-z0-9_]+(\(\))?`' "$doc" | tr -d '`()' | sort -u)
missing=$(comm -23 <(echo "$declared") <(echo "$documented"))
unknown=$(comm -13 <(echo "$declared") <(echo "$documented") | grep -vE '_(config|options|result|info|span|status|fn)$|^pg_(model|tokenizer|trainer|session|token_stream|lora_adapter|lora_trainer|data_filter|signing_key|trusted_keys)$' || true)
status=0
n_declared=$(echo "$declared" | wc -l)
if [ -n "$missing" ]; then echo "declared in $header but not named in $doc:"; echo "$missing"; status=1; fi
if [ -n "$unknown" ]; then echo "named in $doc but not declared in $header:"; echo "$unknown"; status=1; fi
[ "$n_declared" -ge 50 ] || { echo "only $n_declared declarations found: is the header parsed?"; status=1; }
[ $status -eq 0 ] && echo "$doc names all $n_declared public functions"
exit $status
