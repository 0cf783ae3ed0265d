#!/bin/sh
# farm_setup.sh — what tests/farm.sh and tests/mpi.sh share, sourced by both:
# the workbench tests' prelude (wb_setup.sh), q() (a query that waits out a
# writer), two cheap traces, values() for a grid, kill_mid() and stored_once().
. "${top_srcdir:-.}/tests/wb_setup.sh" # paths, $pt, $tmp, fail(), done_ok
export PAGETUNE_GPU_DIR="$top_srcdir/sim/gpus"
command -v sqlite3 >/dev/null 2>&1 || { echo "sqlite3 shell missing: skip"; exit 77; }
command -v setsid >/dev/null 2>&1 || { echo "setsid missing: skip"; exit 77; }
q() { sqlite3 -cmd ".timeout 5000" "$1" "$2" 2>/dev/null || echo 0; }
tr1="$top_srcdir/traces/weights_load.pickle.gz"
tr2="$top_srcdir/traces/randn_loop.pickle.gz"
# values N STEP: N grid values 0, STEP, 2 STEP, ...
values() { awk -v n="$1" -v s="$2" 'BEGIN { for (i = 0; i < n; i++) printf "%s%.4f", (i ? "," : ""), i * s }'; }
# kill_mid PID DB TOTAL: once DB holds a run, SIGKILL to process group PID (a setsid leader), wait until
# none of the group is left; $before is then what DB holds, checked to be mid-sweep (0 < before < TOTAL)
kill_mid() {
  tries=0
  while [ "$(q "$2" 'SELECT count(*) FROM runs')" -lt 1 ] && [ "$tries" -lt 1200 ] && kill -0 "$1" 2>/dev/null; do
    sleep 0.05
    tries=$((tries + 1))
  done
  kill -9 "-$1" 2>/dev/null
  wait "$1" 2>/dev/null
  tries=0
  while kill -0 "-$1" 2>/dev/null && [ "$tries" -lt 400 ]; do sleep 0.05; tries=$((tries + 1)); done
  kill -0 "-$1" 2>/dev/null && fail "processes of the killed sweep are still running"
  before=$(q "$2" 'SELECT count(*) FROM runs')
  echo "killed after $before of $3 runs"
  [ "$before" -gt 0 ] && [ "$before" -lt "$3" ] || fail "the kill did not land mid-sweep ($before of $3 stored)"
}
# stored_once DB TOTAL: TOTAL runs, none twice, each with its results; integrity_check ok
stored_once() {
  [ "$(q "$1" 'SELECT count(*) FROM runs')" = "$2" ] || fail "$(q "$1" 'SELECT count(*) FROM runs') runs, wanted $2"
  [ "$(q "$1" 'SELECT count(DISTINCT trace_id || policy_id || params_json) FROM runs')" = "$2" ] || fail "a run stored twice"
  [ "$(q "$1" 'SELECT count(*) FROM results')" = "$2" ] || fail "runs without results"
  [ "$(q "$1" 'PRAGMA integrity_check')" = ok ] || fail "integrity_check"
}
