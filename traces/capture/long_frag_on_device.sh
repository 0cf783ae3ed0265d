#!/usr/bin/env bash
# long_frag_on_device.sh — issue 12's fragmented long decodes, captured on the H200, and
# cudaMallocAsync peaks of workloads the async model was not calibrated on, in one device call.
#
# From the repository root, ./pagetune built, its libraries in .devlibs (the device tool:
# carry ["pagetune", ".devlibs", "backend/.libs"]):
#     OUT=out SEEDS="1208 1209" PEAK_WORKLOADS=randn_loop,weights_load bash traces/capture/long_frag_on_device.sh
# torch runs without .devlibs on its library path (the bundled libraries are pagetune's alone).
#
# 1. For each seed in SEEDS, one at a time (a decode reserves tens of GB: two at once could
#    meet each other's memory), capture.py's WORKER (long_decode_cat; or long_decode_frag, the
#    Hugging Face model, which fragments far less: 384 and 259 segments) records the snapshot
#    (MAX_ENTRIES=8000000); `pagetune trace stats` and `pagetune sim --policy pytorch_native`
#    count its segments; a snapshot is kept when its recording is complete (no ring overflow).
#    Once one has MIN_SEGMENTS (1000) segments the others are skipped.
# 2. Meanwhile, PEAK_RUNS (5) runs of each PEAK_WORKLOADS workload under
#    backend:cudaMallocAsync, without recording (capture.py --knobs --only async_W_i): the peaks
#    the model's free_lag default is judged on.
# Everything goes under $OUT: frag/ (NAME.pickle.gz split into 15 MiB parts, NAME.json,
# NAME.log, NAME.stats.json, NAME.sim.json), peaks/ (async_W_i.{json,log}, capture.log),
# env.txt.
set -u
OUT=${OUT:-$PWD/out}
SEEDS=${SEEDS:-1208 1209}
WORKER=${WORKER:-long_decode_cat}
MIN_SEGMENTS=${MIN_SEGMENTS:-1000}
PEAK_RUNS=${PEAK_RUNS:-5}
PEAK_WORKLOADS=${PEAK_WORKLOADS:-randn_loop,weights_load,two_streams,rp2_sizes}
libs=${LD_LIBRARY_PATH:-}
unset LD_LIBRARY_PATH
W=/tmp/pagetune_frag
rm -rf "$W"
mkdir -p "$W/frag" "$W/peaks" "$OUT/frag" "$OUT/peaks"
export PYTHONUNBUFFERED=1
{ nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv
  python3 -c 'import torch,transformers;print("torch", torch.__version__, "transformers", transformers.__version__)'
} >"$OUT/env.txt" 2>&1

names=
for w in ${PEAK_WORKLOADS//,/ }; do
  for i in $(seq 1 "$PEAK_RUNS"); do names="$names${names:+,}async_${w}_$i"; done
done
PEAK_RUNS=$PEAK_RUNS PEAK_WORKLOADS=$PEAK_WORKLOADS python3 traces/capture/capture.py --out "$W/peaks" \
  --knobs --only "$names" --jobs 4 --deadline "${PEAK_DEADLINE:-240}" >"$W/peaks/driver.out" 2>&1 &
peaks=$!

for seed in $SEEDS; do
  name=${WORKER}_$seed
  start=$(date +%s)
  LONG_DECODE_SEED=$seed MAX_ENTRIES=8000000 timeout "${FRAG_LIMIT:-300}" python3 traces/capture/capture.py \
    --out "$W/frag" --worker "$WORKER" --name "$name" >"$W/frag/$name.log" 2>&1
  echo "$name: capture exit $? in $(( $(date +%s) - start )) s" | tee -a "$OUT/frag/summary.txt"
  [ -f "$W/frag/$name.pickle" ] || continue
  LD_LIBRARY_PATH=$libs ./pagetune trace stats "$W/frag/$name.pickle" --json >"$W/frag/$name.stats.json"
  LD_LIBRARY_PATH=$libs ./pagetune sim --trace "$W/frag/$name.pickle" --policy pytorch_native --json \
    >"$W/frag/$name.sim.json" 2>"$W/frag/$name.sim.err"
  segs=$(python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(d["observed_segment_allocs"])' \
    "$W/frag/$name.stats.json" 2>/dev/null || echo 0)
  model=$(python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(d["segments_allocated"], d["events"])' \
    "$W/frag/$name.sim.json" 2>/dev/null || echo "? ?")
  echo "$name: recorded segments $segs, model segments and records $model" | tee -a "$OUT/frag/summary.txt"
  gzip -6 "$W/frag/$name.pickle"
  split -b 15m -d "$W/frag/$name.pickle.gz" "$OUT/frag/$name.pickle.gz.part"
  cp "$W/frag/$name".{json,log,stats.json,sim.json,sim.err} "$OUT/frag/" 2>/dev/null
  [ "$segs" -ge "$MIN_SEGMENTS" ] && break
done

wait "$peaks"
echo "peaks: capture.py exit $?" | tee -a "$OUT/frag/summary.txt"
cp "$W/peaks"/*.json "$W/peaks"/*.log "$W/peaks/driver.out" "$OUT/peaks/" 2>/dev/null
# the device tool returns a few files only: one archive of the small ones, the snapshot parts beside it
tar -C "$OUT" -cf "$OUT/results.tar" env.txt peaks $(cd "$OUT" && ls frag/* | grep -v '\.part')
ls -l "$OUT" "$OUT/frag"
