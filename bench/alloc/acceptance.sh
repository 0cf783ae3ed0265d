#!/bin/sh
# acceptance.sh — on a GPU machine with PyTorch and transformers: the
# allocator library's acceptance runs (issue 10), logs under $OUT.
#   OUT=dir sh bench/alloc/acceptance.sh [loops|record|raw|all]
#   loops:  workloads.py train and infer, PyTorch's allocator and the library's
#           caching mechanism alternating, 3 rounds; then stitch and expandable once
#   record: the same training loop recorded by the library (PAGETUNE_RECORD) and
#           snapshotted under PyTorch's allocator; trace stats of both
#   raw:    raw_alloc.py, PyTorch's allocator and the library alternating, twice
set -u
OUT=${OUT:-$PWD/acceptance-out}
what=${1:-all}
mkdir -p "$OUT"
here=$(cd "$(dirname "$0")/../.." && pwd)
export PAGETUNE_ALLOC_LIB=${PAGETUNE_ALLOC_LIB:-$here/backend/.libs/libpagetune_alloc.so}
w=$here/bench/alloc/workloads.py
log=$OUT/acceptance.log
run() { python3 "$@" 2>>"$OUT/stderr.log" | tee -a "$OUT/runs.jsonl" >/dev/null; }
{
  echo "== $(date -u +%FT%TZ) bench/alloc/acceptance.sh $what"
  nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
  python3 -c 'import torch, transformers, sys; print("python", sys.version.split()[0], "torch", torch.__version__, "transformers", transformers.__version__)'
} >>"$log" 2>&1
if [ "$what" = loops ] || [ "$what" = all ]; then
  for wl in train infer; do
    for i in 1 2 3; do
      run "$w" $wl default
      run "$w" $wl pagetune --conf mechanism=caching
    done
    run "$w" $wl pagetune --conf mechanism=stitch
    run "$w" $wl pagetune --conf mechanism=expandable
  done
  python3 "$here/bench/alloc/summarise.py" "$OUT/runs.jsonl" >>"$log" 2>&1
fi
if [ "$what" = record ] || [ "$what" = all ]; then
  run "$w" train default --steps 10 --snapshot "$OUT/train_default.pickle"
  run "$w" train pagetune --conf mechanism=caching --steps 10 --record "$OUT/train_pagetune.trace"
  {
    echo "== the same loop: PyTorch's snapshot and the library's record"
    for t in "$OUT/train_default.pickle" "$OUT/train_pagetune.trace"; do
      "$here/pagetune" trace stats "$t" --json | python3 -c '
import json, sys; s = json.load(sys.stdin); print(sys.argv[1], "allocs", s["allocs"], "peak_live_bytes", s["peak_live_bytes"])' "$(basename "$t")"
    done
    gzip -9 -n "$OUT/train_default.pickle" "$OUT/train_pagetune.trace"
  } >>"$log" 2>&1
fi
if [ "$what" = raw ] || [ "$what" = all ]; then
  export PT_EXT_DIR=$OUT/ext
  mkdir -p "$PT_EXT_DIR"
  for i in 1 2; do
    run "$here/bench/alloc/raw_alloc.py" default
    run "$here/bench/alloc/raw_alloc.py" pagetune --conf mechanism=caching
  done
  rm -rf "$PT_EXT_DIR"
  grep '"us_per_pair"' "$OUT/runs.jsonl" | grep -v '"workload"' >>"$log" || true
fi
tail -n 60 "$log"
