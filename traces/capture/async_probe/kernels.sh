#!/bin/sh
# kernels.sh — does other CUDA work between the calls change when the driver sees a free complete?
# On the GPU machine, from the repository root, with ./pagetune built and its libraries in $LIBS:
#   LIBS=.devlibs OUT=out sh traces/capture/async_probe/kernels.sh
# Each committed capture of traces/knobs/async_timed/run1 (H200, PyTorch 2.11) is imported, its requests
# replayed by probe.cu (`replayx`) from a fresh process on stream 0, after each call nothing, an empty
# kernel, a 20 us kernel, cudaStreamQuery, an event recorded and queried, or cudaGetLastError; the logs go
# to $OUT/WORKLOAD.WHAT.log, for fit.c.
set -u
OUT=${OUT:?set OUT}
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$OUT/build"
nvcc -O2 -o "$OUT/build/probe" "$here/probe.cu" || exit 1
for w in transformer_train varlen_infer cnn_train rp2_sizes weights_load; do
  LD_LIBRARY_PATH=${LIBS:-} ./pagetune trace import "traces/knobs/async_timed/run1/timed_$w.pickle.gz" \
    -o "$OUT/build/$w.trace" >/dev/null || exit 1
  python3 "$here/requests.py" "$OUT/build/$w.trace" >"$OUT/build/$w.req" || exit 1
  for what in ${WHATS:-none kernel spin query event lasterr}; do
    "$OUT/build/probe" replayx "$OUT/build/$w.req" "$OUT/$w.$what.log" $what
  done
  [ -n "${WHATS:-}" ] || "$OUT/build/probe" replayx "$OUT/build/$w.req" "$OUT/$w.none2.log" none
done
gzip -9 "$OUT"/*.log
