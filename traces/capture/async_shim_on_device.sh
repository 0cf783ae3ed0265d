#!/usr/bin/env bash
# async_shim_on_device.sh — the driver's side of issue 12's cudaMallocAsync runs: each workload run under
# backend:cudaMallocAsync (no history, as the peaks of async_timed_on_device.sh) with
# traces/capture/async_probe/shim.c preloaded, which logs every cudaMallocAsync / cudaFreeAsync PyTorch
# makes, the address the driver returned and the pool's reserved bytes after it, and counts the calls
# between them that could tell the driver how far the GPU has got.  One workload at a time, nothing else
# on the GPU.  From the repository root on the GPU machine:
#     OUT=out WORKLOADS=cnn_train,varlen_infer RUNS=2 MARKED=2 bash traces/capture/async_shim_on_device.sh
# Under $OUT: shim_W_i.log.gz (the shim's log), shim_W_i.json (capture.py's sidecar: memory_stats), and
# summary.txt, all in results.tar; MARKED more runs of each with the frees timed (PT_SHIM_MARK=1), as
# shimk_W_i.
set -u
OUT=${OUT:-$PWD/out}
WORKLOADS=${WORKLOADS:-transformer_train,varlen_infer,cnn_train,rp2_sizes,weights_load,randn_loop,two_streams}
RUNS=${RUNS:-2}
MARKED=${MARKED:-0}
here=$(cd "$(dirname "$0")" && pwd)
unset LD_LIBRARY_PATH
mkdir -p "$OUT/shim"
cuda=${CUDA_HOME:-$(dirname "$(dirname "$(command -v nvcc)")")}
gcc -O2 -shared -fPIC -I"$cuda/include" -o "$OUT/shim.so" "$here/async_probe/shim.c" -ldl -lpthread || exit 1
say() { echo "$*" | tee -a "$OUT/summary.txt"; }
for w in ${WORKLOADS//,/ }; do
  for i in $(seq 1 $((RUNS + MARKED))); do
    n=shim_${w}_$i mark=0
    [ "$i" -gt "$RUNS" ] && n=shimk_${w}_$((i - RUNS)) mark=1
    PT_SHIM_MARK=$mark PT_SHIM_OUT="$OUT/shim/$n.log" LD_PRELOAD="$OUT/shim.so" PYTORCH_CUDA_ALLOC_CONF=backend:cudaMallocAsync \
      timeout 180 python3 traces/capture/capture.py --out "$OUT/shim" --worker "$w" --name "$n" --no-record \
      >"$OUT/shim/$n.out" 2>&1
    rc=$?
    peak=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["stats"]["reserved_bytes.all.peak"])' \
      "$OUT/shim/$n.json" 2>&1)
    say "$n: exit $rc, reserved peak $peak, calls $(grep -c '^[af] ' "$OUT/shim/$n.log" 2>/dev/null)"
    gzip -9 -f "$OUT/shim/$n.log"
  done
done
tar -C "$OUT" -cf "$OUT/results.tar" summary.txt shim
rm -rf "$OUT/shim"
ls -l "$OUT"
