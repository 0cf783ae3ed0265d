#!/bin/sh
# farm.sh — sweep -j N and tune -j N (worker processes, this process the only
# writer; sim/cli/farm.c) and --timeline:
#  - a sweep with -j 3 stores exactly the runs of -j 1, row for row
#    (tests/store_dump.sh: every column but ids and timings, the timelines);
#  - tune -j 3 prints what tune -j 1 prints and stores the same runs;
#  - --timeline full / thin / none store about 1000 / at most 50 / no points;
#  - the sweep's process group killed with SIGKILL mid-sweep, rerun: every run
#    stored once, integrity_check ok; a worker killed: the sweep says which
#    and exits 1, a rerun completes it;
#  - bad -j, --timeline and --broadcast-traces without MPI are bad usage.
# Skips (77) without the sqlite3 shell.
. "${top_srcdir:-.}/tests/farm_setup.sh"
gc=$(values 20 0.05)
sweep() { # 2 traces x 2 policies x 20 x 4 = 320 runs
  db=$1
  shift
  "$pt" sweep --db "$db" --trace "$tr1" --trace "$tr2" --policy tunable_caching --policy pytorch_native \
    --grid "garbage_collection_threshold=$gc" --grid max_split_size_mb=64,128,256,512 --capacity 64M "$@"
}

# -j 3 stores what -j 1 stores
sweep "$tmp/j1.db" -j 1 --json >"$tmp/j1.out" 2>/dev/null || fail "sweep -j 1 failed"
sweep "$tmp/j3.db" -j 3 --json >"$tmp/j3.out" 2>"$tmp/j3.err" || { fail "sweep -j 3 failed"; cat "$tmp/j3.err"; }
grep -q '"runs":320,"stored":320,"skipped":0' "$tmp/j3.out" || fail "sweep -j 3 summary: $(cat "$tmp/j3.out")"
[ "$(grep -c ': stored$' "$tmp/j3.err")" = 320 ] || fail "sweep -j 3 progress: $(grep -c ': stored$' "$tmp/j3.err") lines"
sh "$top_srcdir/tests/store_dump.sh" "$tmp/j1.db" >"$tmp/j1.dump"
sh "$top_srcdir/tests/store_dump.sh" "$tmp/j3.db" >"$tmp/j3.dump"
[ "$(wc -l <"$tmp/j1.dump")" -eq 320 ] || fail "-j 1 stored $(wc -l <"$tmp/j1.dump") runs, wanted 320"
cmp -s "$tmp/j1.dump" "$tmp/j3.dump" || fail "-j 3 stored other rows than -j 1"
# run again with workers: everything is skipped, nothing is stored twice
sweep "$tmp/j3.db" -j 2 --json >"$tmp/again.out" 2>/dev/null || fail "second sweep -j 2 failed"
grep -q '"stored":0,"skipped":320' "$tmp/again.out" || fail "second sweep: $(cat "$tmp/again.out")"

# timelines: thin by default for a sweep (at most 50 points, the peak kept), full, none
pts() { q "$1" "SELECT coalesce(max(n), 0) || ' ' || coalesce(min(n), 0) FROM (SELECT r.id, (SELECT count(*) FROM timelines t WHERE t.run_id = r.id) AS n FROM runs r)"; }
set -- $(pts "$tmp/j3.db")
[ "$1" -le 50 ] && [ "$2" -ge 20 ] || fail "thin timelines: $1 points at most, $2 at least (wanted 20..50)"
[ "$(q "$tmp/j3.db" "SELECT count(*) FROM runs r JOIN results s ON s.run_id = r.id WHERE s.peak_reserved_bytes != (SELECT max(reserved_bytes) FROM timelines t WHERE t.run_id = r.id)")" = 0 ] ||
  fail "a thin timeline lost its run's peak"
"$pt" sweep --db "$tmp/full.db" --trace "$tr1" --policy direct --timeline full -j 2 2>/dev/null >/dev/null || fail "--timeline full failed"
set -- $(pts "$tmp/full.db")
[ "$2" -ge 500 ] || fail "full timeline: $2 points"
"$pt" sweep --db "$tmp/none.db" --trace "$tr1" --policy direct --policy pytorch_native --timeline none 2>/dev/null >/dev/null ||
  fail "--timeline none failed"
[ "$(q "$tmp/none.db" 'SELECT count(*) FROM timelines')" = 0 ] && [ "$(q "$tmp/none.db" 'SELECT count(*) FROM results')" = 2 ] ||
  fail "--timeline none: $(q "$tmp/none.db" 'SELECT count(*) FROM timelines') points, $(q "$tmp/none.db" 'SELECT count(*) FROM results') results"

# tune -j 3 = tune -j 1: its output (the database's name aside) and its stored runs
for j in 1 3; do
  "$pt" tune --db "$tmp/t$j.db" --trace "$tr2" --policy tunable_caching --budget 30 --capacity 64M \
    --objective weighted:0.5 -j $j --json 2>"$tmp/t$j.err" | sed "s|$tmp/t$j.db||" >"$tmp/t$j.out" ||
    { fail "tune -j $j failed"; cat "$tmp/t$j.err"; }
  sh "$top_srcdir/tests/store_dump.sh" "$tmp/t$j.db" >"$tmp/t$j.dump"
done
grep -q '"evaluations":30' "$tmp/t1.out" || fail "tune -j 1: $(cat "$tmp/t1.out")"
cmp -s "$tmp/t1.out" "$tmp/t3.out" || { fail "tune -j 3 printed other than tune -j 1"; diff "$tmp/t1.out" "$tmp/t3.out"; }
cmp -s "$tmp/t1.dump" "$tmp/t3.dump" || fail "tune -j 3 stored other runs than tune -j 1"

# SIGKILL to the sweep's whole process group mid-sweep (writer and workers), rerun
big=$(values 50 0.0198)
splits=32,64,128,256,512,1024,2048,4096
ksweep() { # (EXEC=exec: the sweep replaces the shell) 2 policies x 50 x 8 x 4 = 3200 runs of the largest bundled trace (a few seconds)
  ${EXEC:-} "$pt" sweep --db "$tmp/kill.db" --trace "$top_srcdir/traces/llm_decode.pickle.gz" --policy tunable_caching \
    --policy pytorch_native --grid "garbage_collection_threshold=$big" --grid "max_split_size_mb=$splits" \
    --grid roundup_power2_divisions=0,1,2,4 --capacity 64M "$@"
}
setsid sh -c "exec \"\$0\" sweep --db '$tmp/kill.db' --trace '$top_srcdir/traces/llm_decode.pickle.gz' \
  --policy tunable_caching --policy pytorch_native --grid 'garbage_collection_threshold=$big' \
  --grid 'max_split_size_mb=$splits' --grid roundup_power2_divisions=0,1,2,4 --capacity 64M -j 3" "$pt" >/dev/null 2>&1 &
pid=$!
kill_mid "$pid" "$tmp/kill.db" 3200
ksweep -j 3 --json >"$tmp/k.out" 2>/dev/null || fail "the sweep after the kill failed"
grep -q "\"skipped\":$before" "$tmp/k.out" || fail "the rerun did not skip the $before stored runs: $(cat "$tmp/k.out")"
stored_once "$tmp/kill.db" 3200

# one worker killed: the sweep names it and fails; what was stored stays; a rerun completes
rm -f "$tmp/kill.db"*
(EXEC=exec ksweep -j 2 2>"$tmp/w.err" >/dev/null) & # exec: $! is the writer
pid=$!
tries=0
child=
while [ -z "$child" ] && [ "$tries" -lt 400 ]; do
  child=$(pgrep -P "$pid" | head -n 1)
  [ -n "$child" ] && [ "$(q "$tmp/kill.db" 'SELECT count(*) FROM runs')" -ge 1 ] || { child=; sleep 0.05; }
  tries=$((tries + 1))
done
[ -n "$child" ] && kill -9 "$child"
wait "$pid"
rc=$?
[ "$rc" = 1 ] || fail "a sweep that lost a worker exited $rc, wanted 1"
grep -q 'worker process [0-9]* (pid [0-9]*) died: signal 9' "$tmp/w.err" || fail "the lost worker is not named: $(tail -n 1 "$tmp/w.err")"
kept=$(q "$tmp/kill.db" 'SELECT count(*) FROM runs')
ksweep -j 2 --json >"$tmp/w.out" 2>/dev/null || fail "the rerun after a lost worker failed"
stored_once "$tmp/kill.db" 3200
echo "a worker killed: $kept runs kept, the rerun completed"

# bad usage
for bad in "-j 0" "-j x" "--timeline thick" "--broadcast-traces"; do
  # shellcheck disable=SC2086
  "$pt" sweep --db "$tmp/u.db" --trace "$tr1" --policy direct $bad >/dev/null 2>"$tmp/u.err"
  rc=$?
  [ "$rc" = 2 ] && [ "$(wc -l <"$tmp/u.err")" -le 2 ] || fail "sweep $bad: exit $rc: $(cat "$tmp/u.err")"
done
"$pt" tune --db "$tmp/u.db" --trace "$tr1" --policy tunable_caching --broadcast-traces >/dev/null 2>&1
[ $? = 2 ] || fail "tune --broadcast-traces without MPI is not bad usage"

done_ok farm.sh
