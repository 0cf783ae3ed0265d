#!/bin/sh
# run_all.sh — on the GPU machine, from the repository root with the build
# (and the libraries it needs on LD_LIBRARY_PATH): every GPU test, each under
# its own time limit, a log each in $OUT/gpu-checks/, and a summary line each.
#   OUT=dir [PT_GPU_STEPS=N] sh bench/gpu-checks/run_all.sh
set -u
OUT=${OUT:-$PWD/out}
mkdir -p "$OUT/gpu-checks"
export top_srcdir=. top_builddir=.
for t in gpu_mreplay:120 gpu:90 gpu_alloc:200 gpu_calibrate:120; do
  name=${t%%:*} limit=${t##*:}
  start=$(date +%s)
  timeout "$limit" sh "tests/$name.sh" >"$OUT/gpu-checks/$name.log" 2>&1
  rc=$?
  echo "$name: exit $rc in $(( $(date +%s) - start )) s (limit $limit s)" | tee -a "$OUT/gpu-checks/summary.txt"
done
