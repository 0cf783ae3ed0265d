#!/bin/sh
# device_call.sh — one bounded call on the GPU machine, from the repository root with the build and its
# libraries (the device tool: carry ["pagetune", ".devlibs", "backend/.libs"]): what a session runs there,
# its parts chosen by STEPS (a comma list, in this order):
#   env      the GPU, the driver, torch's version (env.txt)
#   checks   every GPU test (bench/gpu-checks/run_all.sh; PT_GPU_STEPS=10)
#   tracker  cnn_train captured with the free-time tracker, recorded and unrecorded, and one run under
#            backend:cudaMallocAsync (traces/capture/async_timed_on_device.sh, UNRECORDED=1)
#   replay   bench/replay/mechanism.sh until DEADLINE (PROCS, REPEAT, START passed on; pinned to CPU 6)
# Everything lands under $OUT/call and is packed into $OUT/results.tgz.partNN (the device tool returns at
# most 8 files of 16 MiB).  DEADLINE (epoch seconds) bounds the replays and the tracker; default: 540 s after the start.
#   OUT=dir STEPS=env,checks,tracker,replay [DEADLINE=S] [PROCS=N] [REPEAT=N] [START=TRACE] \
#     sh bench/gpu-checks/device_call.sh
set -u
start=$(date +%s)
OUT=${OUT:-$PWD/out}
STEPS=${STEPS:-env,checks,replay}
DEADLINE=${DEADLINE:-$((start + 540))}
d=$OUT/call
mkdir -p "$d"
export LD_LIBRARY_PATH=$PWD/.devlibs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
has() { case ",$STEPS," in *",$1,"*) return 0 ;; esac; return 1; }
stamp() { echo "$(( $(date +%s) - start )) s: $*" | tee -a "$d/steps.txt"; }
if has env; then
  { nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv
    nproc; uname -r
    python3 -c 'import torch; print("torch", torch.__version__, torch.cuda.get_device_name(0))'
    ./pagetune --version; ./pagetune gpu info
  } >"$d/env.txt" 2>&1
  stamp "env: $(head -2 "$d/env.txt" | tail -1)"
fi
if has checks; then
  PT_GPU_STEPS=${PT_GPU_STEPS:-10} OUT=$d sh bench/gpu-checks/run_all.sh >/dev/null 2>&1
  stamp "checks: $(tr '\n' ';' <"$d/gpu-checks/summary.txt")"
fi
if has tracker; then
  OUT=$d/tracker UNRECORDED=1 WORKLOADS=cnn_train CAPTURES=1 RUNS=1 DEADLINE=$(( $(date +%s) + ${TRACKER_S:-200} )) \
    bash traces/capture/async_timed_on_device.sh >"$d/tracker.log" 2>&1
  rc=$?
  rm -f "$d"/tracker/results.tar.part*  # the same files again, packed
  stamp "tracker: exit $rc ($(grep -c . "$d/tracker/summary.txt" 2>/dev/null) summary lines)"
fi
if has replay; then
  [ -z "${START:-}" ] || export START
  DEADLINE=$DEADLINE OUT=$d/replay PROCS=${PROCS:-4} REPEAT=${REPEAT:-5} \
    taskset -c 6 sh bench/replay/mechanism.sh ./pagetune >"$d/replay.txt" 2>&1
  gzip -f "$d/replay/mechanism.jsonl"
  stamp "replay: $(grep -c ' total ' "$d/replay.txt") runs, $(grep -c FAIL "$d/replay.txt") failed; $(grep deadline "$d/replay.txt")"
fi
# at most 16 MiB a file comes back: parts of 15 MiB (cat results.tgz.part* | tar -xz)
tar -C "$OUT" -czf - call | split -b 15m -d - "$OUT/results.tgz.part" && rm -rf "$d"
