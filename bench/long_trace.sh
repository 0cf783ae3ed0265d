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
# bench/allocatorsim/debug_dump_guard.patch (its per-call debug-dump copies
# behind its debug flag, and a clock around the simulation) and built, then
# timed on the same trace converted to its input format.
#
#   sh bench/long_trace.sh [-b BASE_PAGETUNE] [-a ALLOCATORSIM_DIR] [-n N] [-s SEED]
#                          [-t STEPS] [-c CORE] [PAGETUNE]
#
# Peak RSS comes from /usr/bin/time when present, else from getrusage through
# python3, else it reads n/a.  The trace in memory is 56 bytes a record
# (pt_event); what the replay adds beyond it is RSS less that.
set -eu
here=$(cd "$(dirname "$0")/.." && pwd)
base= asim= n=7 seed=1 steps=1024 core=1
while getopts b:a:n:s:t:c: opt; do
  case $opt in
  b) base=$OPTARG ;;
  a) asim=$OPTARG ;;
  n) n=$OPTARG ;;
  s) seed=$OPTARG ;;
  t) steps=$OPTARG ;;
  c) core=$OPTARG ;;
  *) sed -n '16,17p' "$0" >&2; exit 2 ;;
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
for t in "$long" "$longer"; do
  "$pt" sim --trace "$t" --policy pytorch_native >"$dir/shape"
  awk -v t="$(basename "$t")" '$1 == "events" {r = $2} $1 == "segments_allocated" {s = $2} $1 == "fragmentation" {f = $2}
    END {printf "%s: %d records, %d segments, fragmentation %.1f%% (pytorch_native)\n", t, r, s, 100 * f}' "$dir/shape"
done

rate() { sed -n 's/.*(\([0-9.]*\) M records\/s).*/\1/p' "$1"; }
printf '\n%-22s %-20s %12s %10s' policy trace "M rec/s" "RSS MiB"
[ -n "$base" ] && printf ' %12s %10s' "base M/s" "base MiB"
echo
for p in pytorch_native tunable_caching large_page_threshold pytorch_expandable cuda_async stitch direct; do
  for t in "$long" "$longer"; do
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
# Only the simulator's own sources: the PyTorch hooks (python states, unwinding, the CUDA
# sanitizer) are stubbed by the patch's sim_stubs.cpp, so neither Python nor CUDA is needed.
(cd "$dir/asim" && g++ -std=c++17 -O3 -DNDEBUG -Iinclude -Iinclude/utils -o allocatorsim \
  src/simulator.cpp src/allocator_manager.cpp src/allocator_simulator.cpp src/allocator_utils.cpp \
  src/allocator_config.cpp src/allocator_profiler.cpp src/utils/hash.cpp src/sim_stubs.cpp) || {
  echo "allocatorSim: the build failed (above)" >&2
  exit 1
}
# Its input: one line per allocation, "malloc_op free_op size", ops numbered over
# allocations and frees in trace order (an allocation never freed ends after the last op).
awk '$1 == "a" {op++; st[$2] = op; sz[$2] = $3} $1 == "f" {op++; print st[$2], op, sz[$2]; delete st[$2]}
  END {for (i in st) print st[i], op + 1, sz[i]}' "$long" >"$dir/asim.trace"
printf '%s\n' '{}' >"$dir/asim.json"
for i in $(seq "$n"); do
  $pin "$dir/asim/allocatorsim" "$dir/asim.trace" "$dir/asim.json" | sed -n 's/^allocatorsim_seconds //p'
done | sort -n | awk -v r="$(grep -c '' "$dir/asim.trace")" '{s[NR] = $1} END {m = s[int((NR + 1) / 2)];
  printf "allocatorSim (patched), long_decode: median %.4f s of %d for %d records: %.2f M records/s\n", m, NR, 2 * r, 2 * r / m / 1e6}'
