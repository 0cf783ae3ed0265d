#!/bin/sh
# run_on_device.sh — on a GPU machine with PyTorch: the allocator library's
# checks (tests/gpu_alloc.sh), what a program sees when the library runs out
# of memory (tests/gpu/alloc_oom.py), and a cached allocate + free through
# torch.empty + del, PyTorch's allocator and the library's caching
# mechanism interleaved (empty_del.py).  Logs under $OUT.
#   OUT=dir sh bench/alloc/run_on_device.sh      (libraries on LD_LIBRARY_PATH for ./pagetune)
set -u
OUT=${OUT:-$PWD/alloc-out}
mkdir -p "$OUT"
here=$(cd "$(dirname "$0")/../.." && pwd)
export PAGETUNE_ALLOC_LIB=${PAGETUNE_ALLOC_LIB:-$here/backend/.libs/libpagetune_alloc.so}
{
  echo "== $(date -u +%FT%TZ) bench/alloc/run_on_device.sh"
  nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
  python3 -c 'import torch, sys; print("python", sys.version.split()[0], "torch", torch.__version__, "cuda", torch.version.cuda)'
  echo "== tests/gpu_alloc.sh"
  top_srcdir=$here top_builddir=$here sh "$here/tests/gpu_alloc.sh"
  echo "gpu_alloc.sh rc=$?"
  echo "== out of memory under the library (1 GiB cap)"
  PAGETUNE_ALLOC_CONF="mechanism=caching,capacity=1073741824" python3 "$here/tests/gpu/alloc_oom.py"
  echo "alloc_oom rc=$?"
  echo "== torch.empty + del, us a pair"
  for i in 1 2 3; do
    python3 "$here/bench/alloc/empty_del.py" default
    python3 "$here/bench/alloc/empty_del.py" pagetune --conf mechanism=caching
  done
} 2>&1 | tee "$OUT/alloc.log"
# a larger loop (about 170 M parameters), default and the library's caching mechanism alternating
{
  echo "== step time, 12 layers x 1024 wide, 50 steps, alternating"
  for i in 1 2; do
    python3 "$here/tests/gpu/alloc_loop.py" default --steps 50 --width 1024 --layers 12
    python3 "$here/tests/gpu/alloc_loop.py" pagetune --conf mechanism=caching --steps 50 --width 1024 --layers 12
  done | python3 -c '
import json, sys
runs = [json.loads(l) for l in sys.stdin if l.startswith("{")]
base = runs[0]["losses"]
for r in runs:
    print("%-8s median step %.2f ms  peak reserved %d  losses %s" % (r["allocator"], r["median_step_s"] * 1e3,
          r["peak_reserved_bytes"], "equal" if r["losses"] == base else "DIFFER"))'
} 2>&1 | tee -a "$OUT/alloc.log"
