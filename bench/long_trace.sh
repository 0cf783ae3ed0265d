#!/bin/sh
# long_trace.sh — replay speed and memory on long fragmented decodes (issue 12).
#
# Generates `trace gen --kind long_decode` traces (seed S; STEPS decoded tokens,
# and twice that for the memory check), replays every bundled policy on them
# with `sim --repeat N` pinned to one core, and prints each run's median replay
# rate (M records/s, loading excluded) and the process's peak RSS.  With -b,
# a second pagetune (say, main's HEAD built in another worktree) runs the same
# commands beside the first: before and after.  With -a, a local checkout of
# Lin-Mao's allocatorSim (github.com/Lin-Mao/allocatorSim; there is no network
# here, so it is never downloaded) is copied, patched with
# bench/allocatorsim/debug_dump_guard.patch (its four per-call debug-dump
# copies of the block pools and segment maps behind its debug flag; a clock
# around the simulation and ALLOCATORSIM_SIMULATE_ONLY to skip the config
# search after it) and built, then timed on the same trace converted to its
# input format (simulation only, median of N processes).
#
#   sh bench/long_trace.sh [-b BASE_PAGETUNE] [-a ALLOCATORSIM_DIR] [-n N] [-s SEED]
#                          [-t STEPS] [-c CORE] [-T CAPTURED] [PAGETUNE]
#
# -T CAPTURED: a captured trace too (a PyTorch snapshot, imported with --strip-frames, or a
# pagetune trace), replayed beside the generated ones and, with -a, by allocatorSim (the
# one traces/capture/long_frag_on_device.sh makes: long_decode_cat_1208, 5.04 M records,
# 1 199 segments; it is 37 MB gzip'd, not in the repository: that script remakes it).
#
# Peak RSS comes from /usr/bin/time when present, else from getrusage through
# python3, else it reads n/a.  The trace in memory is 56 bytes a record
# (pt_event); what the replay adds beyond it is RSS less that.
set -eu
here=$(cd "$(dirname "$0")/.." && pwd)
base= asim= n=7 seed=1 steps=1024 core=1 cap=
while getopts b:a:n:s:t:c:T: opt; do
  case $opt in
  b) base=$OPTARG ;;
  a) asim=$OPTARG ;;
  n) n=$OPTARG ;;
  s) seed=$OPTARG ;;
  t) steps=$OPTARG ;;
  c) core=$OPTARG ;;
  T) cap=$OPTARG ;;
  *) sed -n '/^#   sh bench\/long_trace.sh/,/^#  *\[-t/p' "$0" >&2; exit 2 ;;
  esac
done
shift $((OPTIND - 1))
pt=${1:-./pagetune}
export PAGETUNE_POLICY_DIR=${PAGETUNE_POLICY_DIR:-$here/policies}
pin=
command -v taskset >/dev/null 2>&1 && pin="taskset -c $core"
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT

# peak_rss OUTFILE CMD...: run CMD with its stdout in OUTFILE, print its peak RSS in MiB
peak_rss() {
  out=$1
  shift
  if [ -x /usr/bin/time ]; then
    /usr/bin/time -f '%M' -o "$dir/rss" "$@" >"$out"
    kb=$(tail -1 "$dir/rss")
  elif command -v python3 >/dev/null 2>&1; then
    kb=$(python3 -c 'import resource, subprocess, sys
with open(sys.argv[1], "w") as f: subprocess.run(sys.argv[2:], stdout=f, check=True)
print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)' "$out" "$@")
  else
    "$@" >"$out"
    echo n/a
    return
  fi
  echo "$kb" | awk '{printf "%.0f", $1 / 1024}'
}

echo "machine: $(uname -srm), $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo 2>/dev/null | sed 's/.*: //'), pinned: ${pin:-no}"
echo "pagetune: $pt${base:+, base: $base}; $n replays a run; seed $seed"
long=$dir/long_decode.trace
longer=$dir/long_decode_x2.trace
"$pt" trace gen --kind long_decode --seed "$seed" --steps "$steps" -o "$long"
"$pt" trace gen --kind long_decode --seed "$seed" --steps $((2 * steps)) -o "$longer"
captured=
if [ -n "$cap" ]; then
  captured=$dir/$(basename "$cap" | sed 's/\.gz$//; s/\.pickle$//; s/\.trace$//').trace
  "$pt" trace import "$cap" --strip-frames -o "$captured" >/dev/null 2>&1 || cp "$cap" "$captured"
fi
for t in "$long" "$longer" $captured; do
  "$pt" sim --trace "$t" --policy pytorch_native >"$dir/shape"
  awk -v t="$(basename "$t")" '$1 == "events" {r = $2} $1 == "segments_allocated" {s = $2} $1 == "fragmentation" {f = $2}
    END {printf "%s: %d records, %d segments, fragmentation %.1f%% (pytorch_native)\n", t, r, s, 100 * f}' "$dir/shape"
done

rate() { sed -n 's/.*(\([0-9.]*\) M records\/s).*/\1/p' "$1"; }
printf '\n%-22s %-20s %12s %10s' policy trace "M rec/s" "RSS MiB"
[ -n "$base" ] && printf ' %12s %10s' "base M/s" "base MiB"
echo
for p in pytorch_native tunable_caching large_page_threshold pytorch_expandable cuda_async stitch direct; do
  for t in "$long" "$longer" $captured; do
    [ "$t" = "$longer" ] && [ "$p" != pytorch_native ] && continue # the memory check: one policy is enough
    rss=$(peak_rss "$dir/out" $pin "$pt" sim --trace "$t" --policy "$p" --repeat "$n")
    printf '%-22s %-20s %12s %10s' "$p" "$(basename "$t" .trace)" "$(rate "$dir/out")" "$rss"
    if [ -n "$base" ]; then
      rss=$(peak_rss "$dir/out" $pin "$base" sim --trace "$t" --policy "$p" --repeat "$n")
      printf ' %12s %10s' "$(rate "$dir/out")" "$rss"
    fi
    echo
  done
done
for t in "$long" "$longer"; do
  awk -v t="$(basename "$t" .trace)" '$1 == "end" {printf "%s in memory: %.0f MiB (%d records x 56 B)\n", t, $2 * 56 / 1048576, $2}' "$t"
done

[ -n "$asim" ] || exit 0
echo
if [ ! -d "$asim/src" ] || [ ! -f "$asim/src/allocator_simulator.cpp" ]; then
  echo "allocatorSim: $asim is not a checkout of Lin-Mao/allocatorSim (no src/allocator_simulator.cpp)" >&2
  exit 1
fi
cp -R "$asim" "$dir/asim"
(cd "$dir/asim" && patch -p1 --quiet <"$here/bench/allocatorsim/debug_dump_guard.patch")
# Only the simulator's own sources, with bench/allocatorsim/stubs first on the include path:
# its PyTorch-side utilities (Python states, unwinding, the CUDA sanitizer) are stubbed
# there, so neither Python, pybind11 nor CUDA is needed.
stubs=$here/bench/allocatorsim/stubs
(cd "$dir/asim" && g++ -std=c++17 -O3 -DNDEBUG -I"$stubs" -Iinclude -Iinclude/utils -o allocatorsim \
  src/simulator.cpp src/allocator_manager.cpp src/allocator_simulator.cpp src/allocator_utils.cpp \
  src/allocator_config.cpp src/allocator_profiler.cpp src/utils/hash.cpp "$stubs/sim_stubs.cpp") || {
  echo "allocatorSim: the build failed (above)" >&2
  exit 1
}
# Its input: one line per allocation, "malloc_op free_op size", ops numbered over
# allocations and frees in trace order (an allocation never freed ends after the last op).
# Each trace, side by side: pagetune's pytorch_native (median of N in one process) and
# allocatorSim (median of N processes), with both models' peak reserved bytes.
printf '%s\n' '{}' >"$dir/asim.json"
"$pt" trace import "$here/traces/llm_decode.pickle.gz" -o "$dir/llm_decode.trace" >/dev/null
for t in "$long" $captured "$dir/llm_decode.trace"; do
  awk '$1 == "a" {op++; st[$2] = op; sz[$2] = $3} $1 == "f" {op++; print st[$2], op, sz[$2]; delete st[$2]}
    END {for (i in st) print st[i], op + 1, sz[i]}' "$t" >"$dir/asim.trace"
  $pin "$pt" sim --trace "$t" --policy pytorch_native --repeat "$n" >"$dir/out"
  ours=$(rate "$dir/out")
  ours_peak=$(awk '$1 == "peak_reserved_bytes" {print $2}' "$dir/out")
  for i in $(seq "$n"); do
    ALLOCATORSIM_SIMULATE_ONLY=1 $pin "$dir/asim/allocatorsim" "$dir/asim.trace" "$dir/asim.json" >"$dir/asim.out"
    sed -n 's/^allocatorsim_seconds //p' "$dir/asim.out"
  done | sort -n >"$dir/asim.times"
  their_peak=$(sed -n 's/^Max reserved size: //p' "$dir/asim.out")
  awk -v t="$(basename "$t" .trace)" -v r="$(grep -c '' "$dir/asim.trace")" -v ours="$ours" -v op="$ours_peak" -v tp="$their_peak" \
    '{s[NR] = $1} END {m = s[int((NR + 1) / 2)]; theirs = 2 * r / m / 1e6
    printf "%s, %d records: pagetune %.2f M/s, allocatorSim %.2f M/s (median %.4f s of %d): %.2fx; peak reserved %s / %s\n",
      t, 2 * r, ours, theirs, m, NR, ours / theirs, op, tp}' "$dir/asim.times"
done
