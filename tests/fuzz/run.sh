#!/bin/sh
# run.sh — run each fuzzer for RUNS executions (default 1000000) from a
# scratch copy of its committed seed corpus; prints libFuzzer's last stats.
#   sh tests/fuzz/run.sh [RUNS] [SRCDIR]
set -eu
runs=${1:-1000000}
src=${2:-.}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
for t in trace pickle libconf record timing; do
  mkdir -p "$work/$t"
  cp "$src/tests/fuzz/corpus/$t"/* "$work/$t/"
  echo "== fuzz_$t: $runs runs"
  tests/fuzz/fuzz_$t -runs="$runs" -max_len=8192 -timeout=10 -rss_limit_mb=2048 \
    -artifact_prefix="$work/crash-$t-" "$work/$t" 2>"$work/$t.log" || {
    tail -40 "$work/$t.log"; echo "fuzz_$t FAILED"; exit 1; }
  grep -E "^#[0-9]+.*(DONE|pulse)" "$work/$t.log" | tail -1
  tail -1 "$work/$t.log"
done
