#!/bin/sh
# mechanism.sh — on a GPU: pagetune replay --mechanism --touch for every
# bundled policy on the real traces that begin with no segments alive;
# one JSON line a run into $OUT/mechanism.jsonl, a table on stdout.
#   OUT=dir sh bench/replay/mechanism.sh [PAGETUNE]
set -u
pt=${1:-./pagetune}
OUT=${OUT:-$PWD/mechanism-out}
mkdir -p "$OUT"
here=$(cd "$(dirname "$0")/../.." && pwd)
export PAGETUNE_POLICY_DIR=${PAGETUNE_POLICY_DIR:-$here/policies} PAGETUNE_GPU_DIR=${PAGETUNE_GPU_DIR:-$here/sim/gpus}
for t in varlen_infer transformer_train two_streams llm_decode cnn_train; do
  for p in pytorch_native pytorch_expandable cuda_async direct stitch; do
    if "$pt" replay --mechanism --touch --trace "$here/traces/$t.pickle.gz" --policy "$p" --repeat 3 --json \
        >"$OUT/one.json" 2>"$OUT/one.err"; then
      python3 -c '
import json, sys
o = json.load(open(sys.argv[1])); g = o["gpu_mechanism_replay"]
print("%-18s %-19s alloc median %7.3f us p99 %8.3f  free median %7.3f  total %10.1f us (model %10.1f)  peak %11d (model %11d)  free %+d  touch %d/%d ok" % (
    sys.argv[2], sys.argv[3], g["alloc_us"]["median"], g["alloc_us"]["p99"], g["free_us"]["median"], g["measured_total_us"],
    g["predicted_total_us"], g["peak_reserved_bytes"], g["model_peak_reserved_bytes"], g["free_after"] - g["free_before"],
    g["checked"], g["touched"]))' "$OUT/one.json" "$t" "$p"
      cat "$OUT/one.json" >>"$OUT/mechanism.jsonl"
    else
      echo "$t $p: FAIL $(cat "$OUT/one.err")"
    fi
  done
done
rm -f "$OUT/one.json" "$OUT/one.err"
