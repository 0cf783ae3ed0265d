#!/bin/sh
# sim.sh — replay speed of `pagetune sim`: records per second for each
# mechanism on the largest real trace (and on a 6M-record synthetic one),
# median of N in-process replays (--repeat), and the cost of Lua hooks
# (the same caching mechanism with and without hooks that replace its
# rounding and segment sizes by the same rules).
#   sh bench/sim.sh [PAGETUNE] [N]
# On a shared VM pin it to one core (taskset -c 1 sh bench/sim.sh ...): the
# cores need not run at the same speed (bench/RESULTS.md).
set -eu
pt=${1:-./pagetune}
n=${2:-21}
export PAGETUNE_POLICY_DIR=${PAGETUNE_POLICY_DIR:-policies}
real=traces/llm_decode.pickle.gz
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
"$pt" trace gen --kind kvcache --seed 1 --steps 340 -o "$dir/big.trace"
for t in "$real" "$dir/big.trace"; do
  reps=$n
  [ "$t" = "$real" ] || reps=5
  echo "== $t ($reps replays each)"
  for p in pytorch_native pytorch_expandable cuda_async direct stitch large_page_threshold bench/lua_hooks.lua; do
    printf '%-24s ' "$(basename "$p" .lua)"
    "$pt" sim --trace "$t" --policy "$p" --repeat "$reps" | tail -1
  done
done
