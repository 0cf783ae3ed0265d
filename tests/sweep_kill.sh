#!/bin/sh
# sweep_kill.sh — kill -9 in the middle of `pagetune sweep` (checked: some
# but not all runs stored before the resume), run it again: it completes;
# no run is lost or stored twice; every run has its results and timeline;
# PRAGMA integrity_check is ok.  Skips (77) without sqlite3.
set -u
top_srcdir=${top_srcdir:-.}
top_builddir=${top_builddir:-.}
command -v sqlite3 >/dev/null 2>&1 || { echo "sqlite3 shell missing: skip"; exit 77; }
pt="$top_builddir/pagetune"
export PAGETUNE_POLICY_DIR="$top_srcdir/policies"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
db="$tmp/sweep.db"
values=$(awk 'BEGIN { for (i = 0; i < 60; i++) printf "%s%.4f", (i ? "," : ""), i * 0.016 }')
sweep() { # 60 x 4 = 240 runs; exec, so that $! of `sweep &` is pagetune itself
  exec "$pt" sweep --db "$db" --trace "$top_srcdir/traces/llm_decode.pickle.gz" --policy tunable_caching \
    --grid "garbage_collection_threshold=$values" --grid max_split_size_mb=64,128,256,512 --capacity 64M "$@"
}
count() { sqlite3 -cmd ".timeout 5000" "$db" "SELECT count(*) FROM runs" 2>/dev/null || echo 0; }
(sweep 2>"$tmp/log1") &
pid=$!
# kill it once a few runs are stored (polled, so a slow machine still kills mid-sweep)
tries=0
while [ "$(count)" -lt 3 ] && [ "$tries" -lt 600 ] && kill -0 "$pid" 2>/dev/null; do
  sleep 0.05
  tries=$((tries + 1))
done
kill -9 "$pid" 2>/dev/null
wait "$pid" 2>/dev/null
before=$(count)
echo "killed after $before of 240 runs"
# the kill must land mid-sweep, or the resume below tests nothing
[ "$before" -gt 0 ] && [ "$before" -lt 240 ] ||
  { echo "FAIL: the kill did not land mid-sweep ($before of 240 runs stored before the resume)"; exit 1; }
(sweep --json) >"$tmp/out" 2>"$tmp/log2" || { echo "FAIL: the second sweep failed"; cat "$tmp/log2"; exit 1; }
cat "$tmp/out"
fails=0
q() { sqlite3 "$db" "$1"; }
[ "$(q 'SELECT count(*) FROM runs')" = 240 ] || { echo "FAIL: $(q 'SELECT count(*) FROM runs') runs, wanted 240"; fails=1; }
[ "$(q 'SELECT count(DISTINCT params_json) FROM runs')" = 240 ] || { echo "FAIL: duplicate runs"; fails=1; }
[ "$(q 'SELECT count(*) FROM runs r JOIN results s ON s.run_id = r.id')" = 240 ] || { echo "FAIL: runs without results"; fails=1; }
[ "$(q 'SELECT count(*) FROM runs r WHERE NOT EXISTS (SELECT 1 FROM timelines t WHERE t.run_id = r.id)')" = 0 ] ||
  { echo "FAIL: runs without a timeline"; fails=1; }
[ "$(q 'PRAGMA integrity_check')" = ok ] || { echo "FAIL: integrity_check"; fails=1; }
grep -q "\"skipped\":$before" "$tmp/out" || { echo "FAIL: the second sweep did not skip the $before stored runs"; fails=1; }
# readers can query while a sweep writes
rm -f "$db"*
(sweep 2>/dev/null) &
pid=$!
reads=0
while kill -0 "$pid" 2>/dev/null; do
  sqlite3 -cmd ".timeout 5000" "$db" "SELECT count(*) FROM run_summary" >/dev/null 2>&1 && reads=$((reads + 1))
done
wait "$pid" || { echo "FAIL: sweep with a concurrent reader failed"; fails=1; }
echo "$reads reads while writing"
[ "$fails" -eq 0 ] && echo "ok"
exit "$fails"
