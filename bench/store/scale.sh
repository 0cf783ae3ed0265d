#!/bin/sh
# bench/store/scale.sh — a store of about 10^5 real runs, and how long the
# commands that read it take (issue 14): every bundled trace under
# tunable_caching and pytorch_native, 50 x 8 x 6 grid values, at two
# capacities: 12 x 2 x 2400 x 2 = 115200 runs, thin timelines (sweep's
# default).  Then best, report (text, JSON, --html) and export on it, timed.
#   sh bench/store/scale.sh [DB] [JOBS]      (default $TMPDIR/pagetune-scale.db, 2; the page beside it)
# Prints one "name seconds" line per step.
set -eu
here=$(cd "$(dirname "$0")/../.." && pwd)
pt=${PAGETUNE:-$here/pagetune}
db=${1:-${TMPDIR:-/tmp}/pagetune-scale.db}
html=${db%.db}.html
jobs=${2:-2}
export PAGETUNE_POLICY_DIR="$here/policies" PAGETUNE_GPU_DIR="$here/sim/gpus"
gc=$(awk 'BEGIN { for (i = 0; i < 50; i++) printf "%s%.4f", (i ? "," : ""), i * 0.0198 }')
t() { # name command...: its wall time
  name=$1
  shift
  s=$(date +%s.%N)
  "$@" >/dev/null
  e=$(date +%s.%N)
  echo "$name $(echo "$e - $s" | bc)"
}
if [ ! -e "$db" ]; then
  for cap in 64M 1G; do
    set --
    for tr in "$here"/traces/*.pickle.gz; do set -- "$@" --trace "$tr"; done
    t "sweep_cap_$cap" "$pt" sweep --db "$db" "$@" --policy tunable_caching --policy pytorch_native \
      --grid "garbage_collection_threshold=$gc" --grid max_split_size_mb=32,64,128,256,512,1024,2048,4096 \
      --grid roundup_power2_divisions=0,1,2,4,8,16 --capacity "$cap" -j "$jobs" 2>/dev/null
  done
fi
echo "runs $(sqlite3 "$db" 'SELECT count(*) FROM runs')"
echo "timeline_rows $(sqlite3 "$db" 'SELECT count(*) FROM timelines')"
echo "db_bytes $(stat -c %s "$db")"
t best "$pt" best --db "$db" --trace llm_decode.pickle.gz --objective weighted:0.5
t best_memory "$pt" best --db "$db" --trace llm_decode.pickle.gz --objective memory
t export "$pt" export --db "$db" --trace llm_decode.pickle.gz --objective weighted:0.5 --format env
t report_trace "$pt" report --db "$db" --trace llm_decode.pickle.gz
t report "$pt" report --db "$db"
t report_json "$pt" report --db "$db" --json
t report_html "$pt" report --db "$db" --html "$html"
echo "html_bytes $(stat -c %s "$html")"
