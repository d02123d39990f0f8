#!/usr/bin/env bash
# Assembles a corpus of real English-and-more text from documents Debian installs: every
# package's changelog, copyright and README under /usr/share/doc (decompressed), then man pages
# as plain text, in sorted path order, until at least SIZE_MB (default 64) megabytes.
# Usage: benchmarks/make_bpe_corpus.sh OUT_FILE [SIZE_MB]
set -euo pipefail
out=$1
want=$(( ${2:-64} * 1000000 ))
: > "$out"
size() { stat -c %s "$out"; }
while IFS= read -r f; do
  case "$f" in
    *.gz) zcat -f "$f" 2>/dev/null >> "$out" || true ;;
    *) cat "$f" >> "$out" 2>/dev/null || true ;;
  esac
  [ "$(size)" -ge "$want" ] && break
done < <(find /usr/share/doc -type f \( -name 'changelog*' -o -name 'copyright' -o -name 'README*' -o -name 'NEWS*' \) | LC_ALL=C sort)
if [ "$(size)" -lt "$want" ]; then
  while IFS= read -r f; do
    MANWIDTH=100 man -l "$f" 2>/dev/null | col -b >> "$out" || true
    [ "$(size)" -ge "$want" ] && break
  done < <(find /usr/share/man/man1 /usr/share/man/man3 /usr/share/man/man5 /usr/share/man/man8 -type f -name '*.gz' 2>/dev/null | LC_ALL=C sort)
fi
# Keep valid UTF-8 only (some changelogs are Latin-1): the peers take strings.
iconv -f UTF-8 -t UTF-8 -c "$out" > "$out.tmp" && mv "$out.tmp" "$out"
echo "make_bpe_corpus: $(size) bytes in $out"
[ "$(size)" -ge "$want" ] || { echo "make_bpe_corpus: only $(size) bytes found" >&2; exit 1; }
