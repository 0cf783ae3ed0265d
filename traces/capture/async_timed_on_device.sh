#!/usr/bin/env bash
# async_timed_on_device.sh — issue 12's cudaMallocAsync peaks against a model that knows when the
# GPU passed each free: each workload captured under the native allocator with the free times
# (PT_GPU_FREES=1: traces/capture/gpufrees.py), imported with `pagetune trace import --gpu-frees`,
# simulated under cuda_async (gpu_lag 1, and 0: every free seen complete at once); and RUNS runs of
# the same workload under backend:cudaMallocAsync. One workload at a time, nothing else on the GPU.
#
# From the repository root, ./pagetune built, its libraries in .devlibs (the device tool:
# carry ["pagetune", ".devlibs", "backend/.libs"]):
#     OUT=out WORKLOADS=cnn_train,rp2_sizes RUNS=5 DEADLINE=$(( $(date +%s) + 540 )) \
#         bash traces/capture/async_timed_on_device.sh
# Under $OUT: timed/ (timed_W.pickle.gz, .gpufrees.gz, .json, .log, .trace.gz, .stats.json,
# .sim1.json, .sim0.json), peaks/ (async_W_i.json, .log), summary.txt, env.txt, all in
# results.tar.partNN (the device tool returns a few files of 16 MiB at most). CAPTURES (1) captures
# of each workload; with UNRECORDED=1, each also timed in a run that records no history
# (timed_W_unrecorded: its free times, on a cudaMallocAsync run's timeline, on the recorded run's snapshot:
# what matches a cudaMallocAsync run, docs/model.md). A run is not begun past DEADLINE (epoch seconds).
set -u
OUT=${OUT:-$PWD/out}
WORKLOADS=${WORKLOADS:-rp2_sizes,randn_loop,weights_load,two_streams,cnn_train,transformer_train,varlen_infer}
RUNS=${RUNS:-5}
DEADLINE=${DEADLINE:-$(( $(date +%s) + 540 ))}
libs=${LD_LIBRARY_PATH:-}
unset LD_LIBRARY_PATH
mkdir -p "$OUT/timed" "$OUT/peaks"
export PYTHONUNBUFFERED=1
{ nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv
  python3 -c 'import torch,transformers;print("torch", torch.__version__, "transformers", transformers.__version__)'
} >"$OUT/env.txt" 2>&1
say() { echo "$*" | tee -a "$OUT/summary.txt"; }
# jget FILE KEY...: the JSON file's values at KEY (a/b: key b inside key a), space separated
jget() {
  python3 - "$@" <<'PY' 2>&1
import json, sys
d = json.load(open(sys.argv[1]))
def at(k):
    v = d
    for p in k.split("/"):
        v = v.get(p) if isinstance(v, dict) else None
    return v
print(" ".join("%s=%s" % (k.split("/")[-1], at(k)) for k in sys.argv[2:]))
PY
}
late() { [ "$(date +%s)" -ge "$DEADLINE" ]; }
CAPTURES=${CAPTURES:-1}
# traces/capture/async_probe/shim.c preloaded into the captures: it counts the program's synchronisations,
# which gpufrees.py places among the requests and frees (version 2 of its file: +sync in the trace)
cuda=${CUDA_HOME:-$(dirname "$(dirname "$(command -v nvcc)")")}
shim=
if [ -z "${NO_SHIM:-}" ] && gcc -O2 -shared -fPIC -I"$cuda/include" -o "$OUT/shim.so" traces/capture/async_probe/shim.c -ldl -lpthread \
  >"$OUT/shim_build.log" 2>&1; then
  shim=$OUT/shim.so
fi
say "shim for the synchronisations: ${shim:-none ($(tail -c 300 "$OUT/shim_build.log" 2>/dev/null))}"
export PT_GPU_FREES_BUILD=/tmp/pagetune_gpu_frees
python3 traces/capture/gpufrees.py "$PT_GPU_FREES_BUILD" >"$OUT/build.log" 2>&1
rc=$?
say "gpufrees build: exit $rc: $(tail -c 3000 "$OUT/build.log")"
[ "$rc" = 0 ] || { [ -n "${KEEP_GOING:-}" ] || exit 1; }

# timelines T P: the free times of capture T (its .gpufrees.gz and .gpufrees.times.gz) moved to a
# cudaMallocAsync run's timeline (async_timeline.py: the capture's cudaMalloc stalls and synchronisation waits
# taken out of the host's times), and kept as they were (a check: the tracker's own counts), each on the
# snapshot of capture P (the blocks' addresses P's, by order) and simulated under cuda_async
timelines() {
  local mode m
  [ -f "$OUT/timed/$1.gpufrees.times.gz" ] || return 0
  for mode in keep async; do
    m=$OUT/timed/$1.$mode
    python3 traces/capture/async_timeline.py "$OUT/timed/$1.gpufrees.gz" "$OUT/timed/$1.gpufrees.times.gz" \
      "$m.gpufrees" --on "$OUT/timed/$2.gpufrees.gz" $([ $mode = keep ] && echo --keep-stalls) --json >"$m.timeline.json" 2>&1 ||
      { say "$1: $mode timeline failed: $(cat "$m.timeline.json")"; continue; }
    LD_LIBRARY_PATH=$libs ./pagetune trace import "$OUT/timed/$2.pickle" --gpu-frees "$m.gpufrees" \
      -o "$m.trace.gz" --json >"$m.stats.json" 2>"$m.import.err"
    LD_LIBRARY_PATH=$libs ./pagetune sim --trace "$m.trace.gz" --policy cuda_async --set release_threshold=1125899906842624 \
      --json >"$m.sim1.json" 2>>"$m.import.err"
    say "$1: $mode timeline $(cat "$m.timeline.json") $(cat "$m.import.err") cuda_async $(jget "$m.sim1.json" peak_reserved_bytes)"
    gzip -6 -n -f "$m.gpufrees"
  done
}

for w in ${WORKLOADS//,/ }; do
  late && { say "$w: past the deadline, skipped"; continue; }
  for c in $(seq 1 "$CAPTURES"); do
  n=timed_$w; [ "$c" -gt 1 ] && n=timed${c}_$w
  late && break
  start=$(date +%s)
  LD_PRELOAD=$shim PT_GPU_FREES=1 timeout 180 python3 traces/capture/capture.py --out "$OUT/timed" --worker "$w" --name "$n" \
    >"$OUT/timed/$n.log" 2>&1
  say "$n: capture exit $? in $(( $(date +%s) - start )) s $(jget "$OUT/timed/$n.json" gpu_frees_error gpu_frees_failed_events)"
  if [ -f "$OUT/timed/$n.pickle" ] && [ -f "$OUT/timed/$n.gpufrees.gz" ]; then
    LD_LIBRARY_PATH=$libs ./pagetune trace import "$OUT/timed/$n.pickle" --gpu-frees "$OUT/timed/$n.gpufrees.gz" \
      -o "$OUT/timed/$n.trace.gz" --json >"$OUT/timed/$n.stats.json" 2>"$OUT/timed/$n.import.err"
    say "$n: import exit $? $(cat "$OUT/timed/$n.import.err") $(jget "$OUT/timed/$n.stats.json" frees gpu_timed_frees gpu_pending_frees gpu_lag_requests_max deferred_frees syncs)"
    for lag in 1 0; do
      LD_LIBRARY_PATH=$libs ./pagetune sim --trace "$OUT/timed/$n.trace.gz" --policy cuda_async --set release_threshold=1125899906842624 --set gpu_lag=$lag \
        --json >"$OUT/timed/$n.sim$lag.json" 2>>"$OUT/timed/$n.import.err"
    done
    say "$n: cuda_async gpu_lag=1 $(jget "$OUT/timed/$n.sim1.json" peak_reserved_bytes)," \
      "gpu_lag=0 $(jget "$OUT/timed/$n.sim0.json" peak_reserved_bytes)"
    timelines "$n" "$n"
    if [ -n "${UNRECORDED:-}" ]; then
      # the free times again from a run that records no history (recording slows the CPU, so the GPU
      # keeps up more than it would): the same requests when the workload is deterministic
      u=${n}_unrecorded
      LD_PRELOAD=$shim PT_GPU_FREES=1 timeout 180 python3 traces/capture/capture.py --out "$OUT/timed" --worker "$w" --name "$u" \
        --no-record >"$OUT/timed/$u.log" 2>&1
      say "$u: capture exit $? $(jget "$OUT/timed/$u.json" gpu_frees_error gpu_frees_failed_events)"
      timelines "$u" "$n"  # its blocks' addresses are its own process's: the recorded capture's, by order
    fi
    gzip -6 -n -f "$OUT/timed/$n.pickle"
  fi
  done
  for i in $(seq 1 "$RUNS"); do
    late && { say "async_${w}_$i: past the deadline, skipped"; break; }
    PYTORCH_CUDA_ALLOC_CONF=backend:cudaMallocAsync timeout 120 python3 traces/capture/capture.py \
      --out "$OUT/peaks" --worker "$w" --name "async_${w}_$i" --no-record >"$OUT/peaks/async_${w}_$i.log" 2>&1
    say "async_${w}_$i: exit $? $(jget "$OUT/peaks/async_${w}_$i.json" stats/reserved_bytes.all.peak)"
  done
done
tar -C "$OUT" -cf "$OUT/results.tar" env.txt summary.txt timed peaks
split -b 15m -d "$OUT/results.tar" "$OUT/results.tar.part" && rm "$OUT/results.tar"  # 16 MiB a file comes back
rm -rf "$OUT/timed" "$OUT/peaks"
ls -l "$OUT"
