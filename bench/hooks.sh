#!/bin/sh
# hooks.sh — what Lua hooks cost a replay, measured in pairs: pytorch_native,
# then bench/lua_hooks.lua (the same rules as Lua hooks, same results), one
# right after the other, P times; each run is the median of N in-process
# replays.  Prints every pair and the median of the hook/native time ratios,
# so that a noisy machine shows as spread rather than as a wrong answer.
#   sh bench/hooks.sh [PAGETUNE] [PAIRS] [N] [TRACE]
set -eu
pt=${1:-./pagetune}
pairs=${2:-15}
n=${3:-41}
trace=${4:-traces/llm_decode.pickle.gz}
export PAGETUNE_POLICY_DIR=${PAGETUNE_POLICY_DIR:-policies}
secs() { "$pt" sim --trace "$trace" --policy "$1" --repeat "$n" --json | sed 's/.*"replay_seconds_median":\([0-9.e+-]*\).*/\1/'; }
ratios=$(mktemp)
trap 'rm -f "$ratios"' EXIT
i=0
while [ "$i" -lt "$pairs" ]; do
  a=$(secs pytorch_native)
  b=$(secs bench/lua_hooks.lua)
  r=$(awk -v a="$a" -v b="$b" 'BEGIN { printf "%.4f", b / a }')
  echo "pair $i: native $a s, hooks $b s, ratio $r"
  echo "$r" >>"$ratios"
  i=$((i + 1))
done
sort -n "$ratios" | awk '{ v[NR] = $1 } END {
  printf "hooks/native time: median %.4f (min %.4f, max %.4f) over %d pairs\n", v[int((NR + 1) / 2)], v[1], v[NR], NR }'
