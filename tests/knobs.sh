#!/bin/sh
# knobs.sh — a list-valued knob (roundup_power2_divisions in PyTorch's list
# form) everywhere a value is accepted: --set, a sweep's --grid (commas inside
# brackets do not split), the store (params_json holds the table as an array;
# a resumed sweep finds the run), best, export (written back in PyTorch's
# form), tune (each listed table one choice); and refused with one line where
# malformed.  Exit 77 (SKIP) without python3 or the sqlite3 shell.
set -u
top_srcdir=${top_srcdir:-.}
top_builddir=${top_builddir:-.}
command -v python3 >/dev/null 2>&1 || { echo "knobs: python3 missing: skip"; exit 77; }
command -v sqlite3 >/dev/null 2>&1 || { echo "knobs: sqlite3 shell missing: skip"; exit 77; }
pt=$(cd "$top_builddir" && pwd)/pagetune
src=$(cd "$top_srcdir" && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
tr=$src/traces/varlen_infer.pickle.gz
list='[256:1,512:2,1024:4,>:8]'
same='[128:1,256:1,512:2,1024:4,>:8]' # another spelling of the same table
table='[1,1,1,1,1,1,1,1,1,2,4,8,8,8,8,8]'
db=$tmp/k.db

# --set: the text output shows the list in PyTorch's form, the JSON the table
"$pt" sim --trace "$tr" --policy pytorch_native --set "roundup_power2_divisions=$same" >"$tmp/sim.txt" 2>&1 ||
  fail "sim --set a list: $(cat "$tmp/sim.txt")"
grep -q "roundup_power2_divisions=\[256:1,512:2,1024:4,>:8\]" "$tmp/sim.txt" || fail "sim text: $(grep params "$tmp/sim.txt")"
"$pt" sim --trace "$tr" --policy pytorch_native --set "roundup_power2_divisions=$list" --json >"$tmp/sim.json" || fail "sim --json"
python3 -c 'import json,sys; p=json.load(open(sys.argv[1]))["params"]["roundup_power2_divisions"]; assert p == json.loads(sys.argv[2]), p' \
  "$tmp/sim.json" "$table" || fail "sim --json params"

# malformed lists: one line, exit 2 (a usage error: the value of an option)
for bad in '[256:3]' '[300:2]' '[256:2' '[256:2,]' '[[1:2]]'; do
  "$pt" sim --trace "$tr" --policy pytorch_native --set "roundup_power2_divisions=$bad" >"$tmp/o" 2>"$tmp/e"
  rc=$?
  [ $rc -eq 2 ] || fail "--set $bad: exit $rc, not 2"
  [ "$(wc -l <"$tmp/e")" -eq 1 ] || fail "--set $bad: not one line: $(cat "$tmp/e")"
done
# a list where the mechanism takes a number
"$pt" sim --trace "$tr" --policy pytorch_native --set "max_split_size_mb=$list" >"$tmp/o" 2>"$tmp/e"
[ $? -eq 2 ] && grep -q "takes a number" "$tmp/e" || fail "a list for a number: $(cat "$tmp/e")"

# a grid of a number, a list and a number: three runs, stored with the table; a second sweep resumes
"$pt" sweep --db "$db" --trace "$tr" --policy pytorch_native --grid "roundup_power2_divisions=0,$list,8" >"$tmp/o" 2>"$tmp/e" ||
  fail "sweep: $(cat "$tmp/e")"
grep -q "3 runs: 3 simulated" "$tmp/o" || fail "sweep: $(cat "$tmp/o")"
"$pt" sweep --db "$db" --trace "$tr" --policy pytorch_native --grid "roundup_power2_divisions=0,$same,8" >"$tmp/o" 2>"$tmp/e" ||
  fail "sweep again: $(cat "$tmp/e")"
grep -q "3 runs: 0 simulated and stored, 3 already" "$tmp/o" || fail "resume (another spelling of the same list): $(cat "$tmp/o")"
n=$(sqlite3 "$db" "SELECT count(*) FROM runs WHERE params_json LIKE '%\"roundup_power2_divisions\":$table%'")
[ "$n" = 1 ] || fail "stored params_json with the table: $n rows: $(sqlite3 "$db" 'SELECT params_json FROM runs')"
run=$(sqlite3 "$db" "SELECT id FROM runs WHERE params_json LIKE '%\"roundup_power2_divisions\":[%'")
# export writes the list back as PyTorch reads it; the peak stored is the one sim gives
"$pt" export --db "$db" --trace "$tr" --run "$run" --format env >"$tmp/env" 2>"$tmp/e" || fail "export: $(cat "$tmp/e")"
grep -q "^export PYTORCH_CUDA_ALLOC_CONF='roundup_power2_divisions:\[256:1,512:2,1024:4,>:8\]'$" "$tmp/env" ||
  fail "export env: $(cat "$tmp/env")"
peak=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["peak_reserved_bytes"])' "$tmp/sim.json")
stored=$(sqlite3 "$db" "SELECT peak_reserved_bytes FROM results WHERE run_id = $run")
[ "$peak" = "$stored" ] || fail "stored peak $stored, sim's $peak"
"$pt" report --db "$db" >"$tmp/rep" 2>&1 || fail "report"
grep -q '1024:4,>:8\]' "$tmp/rep" || fail "report shows the list: $(cat "$tmp/rep")"
# export's merge reads a list too, and the export's own value wins over it
"$pt" export --db "$db" --trace "$tr" --run "$run" --format env --merge 'roundup_power2_divisions:[64:8,>:1],release_lock_on_cudamalloc:True' >"$tmp/env" 2>&1 ||
  fail "export --merge: $(cat "$tmp/env")"
grep -q "PYTORCH_CUDA_ALLOC_CONF='roundup_power2_divisions:\[256:1,512:2,1024:4,>:8\],release_lock_on_cudamalloc:True'" "$tmp/env" ||
  fail "export --merge: $(cat "$tmp/env")"

# tune: tunable_caching lists tables among its roundup choices; each is evaluated as a grid value
"$pt" tune --db "$tmp/t.db" --trace "$tr" --policy tunable_caching --objective memory --budget 40 --gpu none >"$tmp/o" 2>"$tmp/e" ||
  fail "tune: $(cat "$tmp/e")"
n=$(sqlite3 "$tmp/t.db" "SELECT count(DISTINCT json_extract(params_json, '\$.roundup_power2_divisions')) FROM runs")
[ "$n" -ge 2 ] || fail "tune tried $n roundup values"

echo "$fails failure(s)"
[ "$fails" -eq 0 ]
