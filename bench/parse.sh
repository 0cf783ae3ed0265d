#!/bin/sh
# parse.sh — how fast `pagetune trace stats` reads native traces (events per
# second from a warm file: read, parse, check every record, count).
#   sh bench/parse.sh [PAGETUNE] [RUNS]
# Writes a ~5M-event synthetic trace (plain and .gz) under $TMPDIR, reads each
# RUNS times, prints the median and the spread.
set -eu
pt=${1:-./pagetune}
runs=${2:-5}
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
"$pt" trace gen --kind kvcache --seed 1 --steps 340 -o "$dir/big.trace"
gzip -k -6 "$dir/big.trace"
events=$("$pt" trace stats --json "$dir/big.trace" | sed 's/.*"events":\([0-9]*\).*/\1/')
echo "trace: $events events, $(wc -c <"$dir/big.trace") bytes plain, $(wc -c <"$dir/big.trace.gz") gzip'd"
for f in big.trace big.trace.gz; do
  cat "$dir/$f" >/dev/null # warm the page cache
  times=""
  i=0
  while [ $i -lt "$runs" ]; do
    s=$(date +%s.%N)
    "$pt" trace stats "$dir/$f" >/dev/null
    e=$(date +%s.%N)
    times="$times $(echo "$e - $s" | bc)"
    i=$((i + 1))
  done
  echo "$times" | tr ' ' '\n' | grep . | sort -n | awk -v ev="$events" -v f="$f" '
    { t[NR] = $1 } END { m = t[int((NR + 1) / 2)];
      printf "%-14s median %.3f s  (min %.3f, max %.3f, %d runs)  %.2f M events/s\n",
             f, m, t[1], t[NR], NR, ev / m / 1e6 }'
done
