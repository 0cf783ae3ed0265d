#!/bin/sh
# run_on_device.sh — on a GPU machine with PyTorch: pagetune calibrate with
# the allocators' own work and PyTorch's allocators, twice (the first run
# builds the C++ extension into /tmp/pagetune-torch-ext-UID, the second
# loads it: the two show the run-to-run spread), then tests/gpu_calibrate.sh.
# The descriptions, the JSON, stderr and timings under $OUT.
#   OUT=dir sh bench/calibrate/run_on_device.sh     (from the repo root; ./pagetune
#   built with CUDA, its libraries on LD_LIBRARY_PATH; PT_PYTHON: the Python with torch)
set -u
OUT=${OUT:-$PWD/calibrate-out}
mkdir -p "$OUT"
here=$(cd "$(dirname "$0")/../.." && pwd)
py=${PT_PYTHON:-python3}
export PAGETUNE_GPU_DIR=$here/sim/gpus PAGETUNE_POLICY_DIR=$here/policies
log=$OUT/calibrate.log
{
  echo "== $(date -u +%FT%TZ) bench/calibrate/run_on_device.sh"
  nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
  "$py" -c 'import torch, sys; print("python", sys.version.split()[0], "torch", torch.__version__, "cuda", torch.version.cuda)'
  "$py" -c 'import torch.utils.cpp_extension as c; print("CUDA_HOME", c.CUDA_HOME)'
  command -v ninja g++ nvcc
  for run in 1 2; do
    echo "== pagetune calibrate, run $run"
    t0=$(date +%s)
    if [ $run = 1 ]; then
      "$here/pagetune" calibrate --python "$py" -o "$OUT/calibrated$run.gpu" 2>"$OUT/stderr$run.txt"
    else
      "$here/pagetune" calibrate --python "$py" --json >"$OUT/calibrated$run.json" 2>"$OUT/stderr$run.txt"
    fi
    echo "rc=$? $(($(date +%s) - t0)) s"
    cat "$OUT/stderr$run.txt"
  done
  echo "== the measured lines of run 1"
  grep -e '^bookkeeping_us' -e '^torch_pair_us' -e '^# measured from' -e WARNING "$OUT/calibrated1.gpu"
  echo "== tests/gpu_calibrate.sh"
  t0=$(date +%s)
  PT_PYTHON=$py top_srcdir=$here top_builddir=$here sh "$here/tests/gpu_calibrate.sh"
  echo "gpu_calibrate.sh rc=$? $(($(date +%s) - t0)) s"
} 2>&1 | tee "$log"
