#!/usr/bin/env bash
# async_check.sh — on the GPU machine: (1) pagetune's CUDA seam against a real
# driver (--version, gpu info); (2) the workloads behind three real traces run
# again under PYTORCH_CUDA_ALLOC_CONF=backend:cudaMallocAsync, which cannot
# dump a snapshot, so only torch.cuda.memory_stats() is kept: its reserved
# peak is what the async_pool model is compared with (bench/RESULTS.md).
# Run from the repository root with the build and .devlibs carried:
#   export LD_LIBRARY_PATH=$PWD/.devlibs; bash traces/capture/async_check.sh
set -u
export PYTHONUNBUFFERED=1
OUT=${OUT:-$PWD/out/async}
mkdir -p "$OUT"
{
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
  ./pagetune --version
  ./pagetune gpu info --json; echo "gpu info exit $?"
  ./pagetune gpu info; echo "gpu info exit $?"
} >"$OUT/smoke.txt" 2>&1
for w in varlen_infer llm_decode transformer_train; do
  PYTORCH_CUDA_ALLOC_CONF=backend:cudaMallocAsync \
    python3 traces/capture/capture.py --out "$OUT" --worker "$w" --name "async_$w" --no-record \
    >"$OUT/async_$w.log" 2>&1
  echo "$w exit $?" >>"$OUT/smoke.txt"
done
ls -l "$OUT"
