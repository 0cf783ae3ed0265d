#!/usr/bin/env bash
# The exact command sequence used on the device machine (kind nvidia-h200: one
# NVIDIA H200, PyTorch 2.11) to capture the snapshots under traces/.
#
# Run from the repository root:
#     bash traces/capture/run_on_device.sh            # every workload
#     bash traces/capture/run_on_device.sh --only randn_loop,gc_cap
#
# Writes $OUT/traces.tar (split into traces.tar.partNN if over 15 MiB) holding
# NAME.pickle.gz, NAME.json, NAME.log for each trace plus env.txt and
# capture.log; also $OUT/capture.log.  $OUT defaults to ./out/capture.
# Unpack here with:  tar -xf traces.tar -C <dir>
set -u
shopt -s nullglob
export PYTHONUNBUFFERED=1
OUT=${OUT:-$PWD/out/capture}
W=${CAPTURE_WORK:-/tmp/pagetune_capture}
rm -rf "$W"
mkdir -p "$W" "$OUT"

{
  echo "== $(date -u +%FT%TZ) host=$(hostname) kernel=$(uname -r)"
  nvidia-smi -L
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv
  python3 -c 'import torch,transformers,torchvision;print("torch", torch.__version__, "cuda", torch.version.cuda, "transformers", transformers.__version__, "torchvision", torchvision.__version__, "cuda_available", torch.cuda.is_available())'
} 2>&1 | tee "$W/env.txt"

python3 traces/capture/capture.py --out "$W" --deadline "${CAPTURE_DEADLINE:-380}" "$@" 2>&1 | tee "$W/driver.out"
echo "capture.py exit status: ${PIPESTATUS[0]}"

cd "$W" || exit 1
ls -l
du -ch -- *.pickle.gz | tail -1
tar -cf "$OUT/traces.tar" env.txt driver.out -- *.json *.log *.pickle.gz
size=$(stat -c %s "$OUT/traces.tar")
echo "traces.tar: $size bytes"
if [ "$size" -gt 15728640 ]; then
  split -b 15m -d "$OUT/traces.tar" "$OUT/traces.tar.part"
  rm -f "$OUT/traces.tar"
  ls -l "$OUT"
fi
cp capture.log "$OUT/capture.log"
