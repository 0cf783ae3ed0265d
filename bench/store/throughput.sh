#!/bin/sh
# bench/store/throughput.sh — runs stored per second by sweep (issue 14):
# pagetune-mpi on 1, 2 and 4 ranks (mpirun --oversubscribe), pagetune -j 1, 2
# and 4, and the writer's ceiling: the same with PAGETUNE_NOOP_ENGINE=1
# (workers answer at once with a result of the timeline's size, so rank 0's
# handing out, keying and storing is all that is timed).  The sweep: 3200
# runs of llm_decode (the largest bundled trace, 43072 events), thin
# timelines unless said, a fresh database each time; each case REPS times
# (default 3), the best and the median printed (the machine may be shared).
#   sh bench/store/throughput.sh > out.txt      (from a build with --with-mpi)
set -eu
here=$(cd "$(dirname "$0")/../.." && pwd)
pt=$here/pagetune
ptm=$here/pagetune-mpi
reps=${REPS:-3}
export PAGETUNE_POLICY_DIR="$here/policies" PAGETUNE_GPU_DIR="$here/sim/gpus"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_btl_vader_single_copy_mechanism=none
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
gc=$(awk 'BEGIN { for (i = 0; i < 50; i++) printf "%s%.4f", (i ? "," : ""), i * 0.0198 }')
set -- --trace "$here/traces/llm_decode.pickle.gz" --policy tunable_caching --policy pytorch_native \
  --grid "garbage_collection_threshold=$gc" --grid max_split_size_mb=32,64,128,256,512,1024,2048,4096 \
  --grid roundup_power2_divisions=0,1,2,4 --capacity 64M
rate() { # label command...: runs/s of a fresh sweep of the 3200 runs, best and median of $reps
  label=$1
  shift
  : >"$tmp/times"
  for r in $(seq "$reps"); do
    rm -f "$tmp/t.db"*
    s=$(date +%s.%N)
    "$@" >/dev/null 2>&1
    e=$(date +%s.%N)
    n=$(sqlite3 "$tmp/t.db" 'SELECT count(*) FROM runs')
    [ "$n" = 3200 ] || { echo "$label: $n runs stored, not 3200" >&2; exit 1; }
    echo "$e - $s" | bc >>"$tmp/times"
  done
  sort -n "$tmp/times" | awk -v l="$label" '{ t[NR] = $1 } END {
    printf "%-40s best %6.2f s %6.0f runs/s   median %6.2f s %6.0f runs/s\n", l, t[1], 3200 / t[1], t[int((NR + 1) / 2)], 3200 / t[int((NR + 1) / 2)] }'
}
for j in 1 2 4; do rate "pagetune -j $j" "$pt" sweep --db "$tmp/t.db" "$@" -j "$j"; done
if [ -x "$ptm" ]; then
  for n in 1 2 4; do rate "mpirun -n $n pagetune-mpi" mpirun --oversubscribe -n "$n" "$ptm" sweep --db "$tmp/t.db" "$@"; done
  for n in 2 4; do
    rate "no-op engine: mpirun -n $n" env PAGETUNE_NOOP_ENGINE=1 mpirun --oversubscribe -x PAGETUNE_NOOP_ENGINE -n "$n" "$ptm" sweep --db "$tmp/t.db" "$@"
  done
fi
for j in 1 3; do rate "no-op engine: pagetune -j $j" env PAGETUNE_NOOP_ENGINE=1 "$pt" sweep --db "$tmp/t.db" "$@" -j "$j"; done
for tl in none full; do
  rate "no-op engine: pagetune -j 3 --timeline $tl" env PAGETUNE_NOOP_ENGINE=1 "$pt" sweep --db "$tmp/t.db" "$@" -j 3 --timeline "$tl"
done
