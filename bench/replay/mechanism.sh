#!/bin/sh
# mechanism.sh — on a GPU: pagetune replay --mechanism --touch for every
# bundled policy on every trace in traces/ (or the traces named); one JSON
# line a run into $OUT/mechanism.jsonl, a line a run on stdout, failures
# with their message.  bench/replay/accept.py reads the JSON lines.
# PROCS=N replays every configuration in N separate processes (interleaved:
# every configuration once, then again), so that accept.py can judge on the
# median over processes; REPEAT is the timed runs within each.
# DEADLINE=EPOCH_SECONDS starts no run after that time (a bounded GPU call).
# CALLS=1 also writes each run's driver calls in order (replay --calls-out) to $OUT/calls/TRACE.POLICY.PROC.txt.gz:
# what a cost that depends on the calls around it (llm_decode's small cuMemAllocs, weights_load's unmaps) is
# fitted from.
# First, unless CALIBRATE=0, `pagetune calibrate --no-torch` writes $OUT/calibrated.gpu (about 15 s):
# accept.py's default base, the same call's driver-call and own-work costs (a host's speed moves between
# device calls: bench/RESULTS.md, the fresh session's section), kept if it exists (a second call).
# START=TRACE begins each process's round at that trace (its name, e.g. expandable), the
# traces before it last: a second bounded call continues where the first one's
# "deadline: stopped before ..." line says it stopped, so every trace gets as many
# processes (bench/replay/mechanism5's two calls both began at cap_retry: 6 processes for
# the first three traces, 4 for the others).
#   OUT=dir [PROCS=N] [REPEAT=N] [DEADLINE=S] [START=TRACE] [CALIBRATE=0] [CALLS=1] sh bench/replay/mechanism.sh [PAGETUNE [TRACE...]]
set -u
pt=${1:-./pagetune}
[ $# -gt 0 ] && shift
OUT=${OUT:-$PWD/mechanism-out}
mkdir -p "$OUT"
here=$(cd "$(dirname "$0")/../.." && pwd)
export PAGETUNE_POLICY_DIR=${PAGETUNE_POLICY_DIR:-$here/policies} PAGETUNE_GPU_DIR=${PAGETUNE_GPU_DIR:-$here/sim/gpus}
REPEAT=${REPEAT:-3}
PROCS=${PROCS:-1}
if [ $# -eq 0 ]; then set -- "$here"/traces/*.pickle.gz; fi
if [ -n "${START:-}" ]; then # rotate: START first, the traces before it after the rest
  before= found=
  for t in "$@"; do
    if [ -z "$found" ] && [ "$(basename "$t" .pickle.gz)" != "$START" ]; then before="$before $t"; else found=1; after="${after:-} $t"; fi
  done
  [ -n "$found" ] || { echo "mechanism.sh: START=$START: no such trace among those given" >&2; exit 2; }
  # shellcheck disable=SC2086 # the paths are the repository's traces: no spaces
  set -- $after $before
fi
if [ "${CALIBRATE:-1}" != 0 ] && [ ! -s "$OUT/calibrated.gpu" ]; then
  "$pt" calibrate --no-torch -o "$OUT/calibrated.gpu" 2>"$OUT/calibrate.err" ||
    { echo "mechanism.sh: calibrate failed: $(tail -1 "$OUT/calibrate.err")" >&2; rm -f "$OUT/calibrated.gpu"; }
fi
: >"$OUT/mechanism.jsonl"
proc=0
while [ "$proc" -lt "$PROCS" ]; do
proc=$((proc + 1))
for t in "$@"; do
  for p in pytorch_native pytorch_expandable cuda_async direct stitch large_page_threshold tunable_caching; do
    if [ -n "${DEADLINE:-}" ] && [ "$(date +%s)" -ge "$DEADLINE" ]; then
      echo "deadline: stopped before process $proc of $PROCS, $(basename "$t" .pickle.gz) $p"
      break 3
    fi
    calls=
    if [ "${CALLS:-0}" = 1 ]; then mkdir -p "$OUT/calls"; calls="$OUT/calls/$(basename "$t" .pickle.gz).$p.$proc.txt"; fi
    if "$pt" replay --mechanism --touch --trace "$t" --policy "$p" --repeat "$REPEAT" --json ${calls:+--calls-out "$calls"} \
        >"$OUT/one.json" 2>"$OUT/one.err"; then
      [ -z "$calls" ] || gzip -f "$calls"
      python3 -c '
import json, sys
o = json.load(open(sys.argv[1])); g = o["gpu_mechanism_replay"]; c = g["check"]
print("%-18s %-21s total %10.1f us (model %10.1f)  peak %11d (model %11d, driver saw %11d)  calls %s  free %+d  touch %d/%d" % (
    sys.argv[2], sys.argv[3], g["measured_total_us"], g["predicted_total_us"], g["peak_reserved_bytes"],
    g["model_peak_reserved_bytes"], c["driver_peak_used_bytes"], "equal" if c["fed_model_calls_equal"] else "DIFFER",
    g["free_after"] - g["free_before"], g["checked"], g["touched"]))' "$OUT/one.json" "$(basename "$t" .pickle.gz)" "$p"
      cat "$OUT/one.json" >>"$OUT/mechanism.jsonl"
    else
      echo "$(basename "$t" .pickle.gz) $p: FAIL $(cat "$OUT/one.err")"
    fi
  done
done
done
rm -f "$OUT/one.json" "$OUT/one.err"
