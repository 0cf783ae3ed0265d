#!/bin/sh
# same_results.sh — every bundled policy on every bundled real trace, on the
# h200 description (page tables and TLBs included), as one JSON line each
# with the wall-clock fields dropped: run it with two binaries and diff the
# outputs to show that a change left every result exactly as it was.
#   sh bench/same_results.sh [PAGETUNE] > results.jsonl
set -eu
pt=${1:-./pagetune}
here=$(cd "$(dirname "$0")/.." && pwd)
export PAGETUNE_POLICY_DIR=${PAGETUNE_POLICY_DIR:-$here/policies}
export PAGETUNE_GPU_DIR=${PAGETUNE_GPU_DIR:-$here/sim/gpus}
strip() { sed -e 's/"[a-z_]*seconds[a-z_]*":[^,}]*,\{0,1\}//g'; }
for t in "$here"/traces/*.pickle.gz; do
  for p in pytorch_native pytorch_expandable cuda_async direct stitch large_page_threshold tunable_caching; do
    printf '%s %s ' "$(basename "$t" .pickle.gz)" "$p"
    "$pt" sim --trace "$t" --policy "$p" --gpu h200 --tlb --json 2>&1 | strip || true
    printf '%s %s capped ' "$(basename "$t" .pickle.gz)" "$p"
    "$pt" sim --trace "$t" --policy "$p" --gpu h200 --capacity 400M --json 2>&1 | strip || true
  done
done
