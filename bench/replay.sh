#!/bin/sh
# replay.sh — `pagetune replay` on the GPU: for each trace and policy, the
# driver calls the model made, made again on device 0 and timed (median of
# N replays), beside the cost model's prediction.  First `pagetune
# calibrate` measures the calls' costs on this GPU, so every run is
# predicted twice: by the shipped h200 description and by the one calibrated
# in this run.  Run on the GPU machine:
#   sh bench/replay.sh [PAGETUNE] [N] [OUTDIR]
# Writes OUTDIR/calibrated.gpu, OUTDIR/replay.txt (readable) and
# OUTDIR/replay.jsonl (one object a run: "gpu" names the cost model).
set -u
pt=${1:-./pagetune}
n=${2:-5}
out=${3:-.}
export PAGETUNE_POLICY_DIR=${PAGETUNE_POLICY_DIR:-policies}
mkdir -p "$out"
: >"$out/replay.txt"
: >"$out/replay.jsonl"
"$pt" gpu info >>"$out/replay.txt" 2>&1
"$pt" calibrate --base h200 --repeat 9 -o "$out/calibrated.gpu" >>"$out/replay.txt" 2>&1
for t in varlen_infer llm_decode transformer_train weights_load cnn_train; do
  for p in pytorch_native pytorch_expandable cuda_async direct large_page_threshold stitch; do
    echo "== $t / $p" >>"$out/replay.txt"
    "$pt" replay --trace "traces/$t.pickle.gz" --policy "$p" --repeat "$n" >>"$out/replay.txt" 2>&1 ||
      echo "(exit $?)" >>"$out/replay.txt"
    for g in h200 "$out/calibrated.gpu"; do
      printf '{"gpu":"%s","trace":"%s","policy":"%s","run":' "$g" "$t" "$p" >>"$out/replay.jsonl"
      "$pt" replay --trace "traces/$t.pickle.gz" --policy "$p" --repeat "$n" --gpu "$g" --json \
        >>"$out/replay.jsonl" 2>>"$out/replay.txt" || echo 'null' >>"$out/replay.jsonl"
      sed -i '$ s/$/}/' "$out/replay.jsonl"
    done
  done
done
