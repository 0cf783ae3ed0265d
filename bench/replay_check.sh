#!/bin/sh
# replay_check.sh — on a GPU: tests/gpu.sh, then every mechanism's driver
# calls replayed (pagetune replay) on five real traces, checking that the GPU
# made exactly the calls the model counted.  Prints one line a run.
#   sh bench/replay_check.sh [PAGETUNE]        (with the bundled libraries on LD_LIBRARY_PATH)
set -u
pt=${1:-./pagetune}
here=$(cd "$(dirname "$0")/.." && pwd)
export PAGETUNE_POLICY_DIR=${PAGETUNE_POLICY_DIR:-$here/policies}
export PAGETUNE_GPU_DIR=${PAGETUNE_GPU_DIR:-$here/sim/gpus}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
"$pt" --version
top_srcdir=$here top_builddir=$(dirname "$pt") sh "$here/tests/gpu.sh"
echo "gpu.sh rc=$?"
for t in varlen_infer two_streams transformer_train cap_retry gc_cap; do
  for p in pytorch_native pytorch_expandable cuda_async direct stitch; do
    printf '%s %s: ' "$t" "$p"
    if "$pt" replay --trace "$here/traces/$t.pickle.gz" --policy "$p" --gpu h200 --repeat 3 --json >"$tmp/r.json" 2>"$tmp/err"; then
      python3 -c "import json,sys; o=json.load(open(sys.argv[1])); g=o['gpu_replay']
print('ok calls match' if g['driver_calls']==o['driver_calls'] else 'MISMATCH', 'measured_us=%.0f predicted_us=%.0f' % (g['measured_total_us'], g['predicted_total_us']))" "$tmp/r.json"
    else
      echo "FAIL $(cat "$tmp/err")"
    fi
  done
done
