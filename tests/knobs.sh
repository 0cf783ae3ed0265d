#!/bin/sh
# knobs.sh — a list-valued knob (roundup_power2_divisions in PyTorch's list
# form) everywhere a value is accepted: --set, a sweep's --grid (commas inside
# brackets do not split), the store (params_json holds the table as an array;
# a resumed sweep finds the run), best, export (written back in PyTorch's
# form), tune (each listed table one choice); and refused with one line where
# malformed; and sim --conf: a PYTORCH_CUDA_ALLOC_CONF value simulated as it
# is (policy, knobs and cap from the string, exact on the captures taken with
# it; keys the model does not model named), the same run as --policy/--set.
# Exit 77 (SKIP) without python3 or the sqlite3 shell.
. "${top_srcdir:-.}/tests/wb_setup.sh"
command -v sqlite3 >/dev/null 2>&1 || { echo "SKIP: the sqlite3 shell is missing"; exit 77; }
src=$top_srcdir
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

# expandable segments take the knobs too: stored, exported beside expandable_segments:True
"$pt" sweep --db "$tmp/e.db" --trace "$tr" --policy pytorch_expandable --grid max_split_size_mb=64 \
  --grid "roundup_power2_divisions=$list" >/dev/null 2>"$tmp/e" || fail "sweep expandable: $(cat "$tmp/e")"
"$pt" export --db "$tmp/e.db" --trace "$tr" --run 1 --format env >"$tmp/env" 2>"$tmp/e" || fail "export expandable: $(cat "$tmp/e")"
grep -q "^export PYTORCH_CUDA_ALLOC_CONF='expandable_segments:True,max_split_size_mb:64,roundup_power2_divisions:\[256:1,512:2,1024:4,>:8\]'$" \
  "$tmp/env" || fail "export expandable: $(cat "$tmp/env")"
"$pt" tune --db "$tmp/te.db" --trace "$tr" --policy tunable_expandable --objective memory --budget 30 --gpu none >"$tmp/o" 2>"$tmp/e" ||
  fail "tune tunable_expandable: $(cat "$tmp/e")"

# ---- sim --conf: a PYTORCH_CUDA_ALLOC_CONF value simulated as it is --------------------------------------------
# compare OUT.json KEY=OTHERKEY...: equal integers in one sim --json
same() {
  f=$1; shift
  python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
def get(k):
    v = d
    for p in k.split("."): v = v[p]
    return v
bad = ["%s=%r %s=%r" % (a, get(a), b, get(b)) for a, b in (x.split("=") for x in sys.argv[2:]) if get(a) != get(b) or not get(a) and not a.startswith("segment_releases")]
sys.exit("; ".join(bad)) if bad else None' "$f" "$@"
}
knobs=$src/traces/knobs
# the GC-under-a-cap capture, from its own setting string (the cap from per_process_memory_fraction of the H200):
# maps, unmaps and peak as recorded
conf='expandable_segments:True,garbage_collection_threshold:0.6,per_process_memory_fraction:0.003'
"$pt" sim --trace "$knobs/exp_gc_cap.pickle.gz" --conf "$conf" --json >"$tmp/c1.json" 2>"$tmp/e" || fail "sim --conf exp_gc_cap: $(cat "$tmp/e")"
same "$tmp/c1.json" peak_reserved_bytes=observed_peak_reserved_bytes driver_calls.mem_set_access=observed_segment_allocs \
  segment_releases=observed_segment_releases || fail "sim --conf exp_gc_cap against the recording"
cap=$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["memory_cap_bytes"])' "$knobs/exp_gc_cap.json")
python3 -c 'import json, sys; d = json.load(open(sys.argv[1])); assert d["policy"] == "pytorch_expandable" and d["capacity"] == int(sys.argv[2]), d["capacity"]' \
  "$tmp/c1.json" "$cap" || fail "sim --conf: policy and cap (the capture's memory_cap_bytes, $cap)"
# ... the same run as --policy with --set and --capacity
"$pt" sim --trace "$knobs/exp_gc_cap.pickle.gz" --policy pytorch_expandable --set garbage_collection_threshold=0.6 \
  --capacity "$cap" --json >"$tmp/c2.json" || fail "sim --policy exp_gc_cap"
python3 -c '
import json, sys
a, b = (json.load(open(p)) for p in sys.argv[1:3])
for k in ("params", "peak_reserved_bytes", "driver_calls", "segment_releases", "timeline"):
    assert a[k] == b[k], k' "$tmp/c1.json" "$tmp/c2.json" || fail "sim --conf differs from --policy/--set"
# the list form, as captured
"$pt" sim --trace "$knobs/rp2_list_infer.pickle.gz" --conf "roundup_power2_divisions:[256:1, 512:2,1024:4,>:8]" --json >"$tmp/c3.json" ||
  fail "sim --conf list"
same "$tmp/c3.json" peak_reserved_bytes=observed_peak_reserved_bytes segments_allocated=observed_segment_allocs ||
  fail "sim --conf rp2_list_infer against the recording"
python3 -c 'import json, sys; d = json.load(open(sys.argv[1])); assert d["policy"] == "pytorch_native" and d["params"]["roundup_power2_divisions"][9] == 2' \
  "$tmp/c3.json" || fail "sim --conf list: policy and table"
# keys the model does not model are named with what they do; cudaMallocAsync picks cuda_async and ignores native knobs
"$pt" sim --trace "$tr" --conf "backend:cudaMallocAsync,max_split_size_mb:64,release_lock_on_cudamalloc:True" --json >"$tmp/c4.json" ||
  fail "sim --conf async"
python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
assert d["policy"] == "cuda_async", d["policy"]
assert d["params"]["release_threshold"] == 1125899906842624, d["params"]  # PyTorch sets UINT64_MAX
f = {x["key"]: x for x in d["conf"]["findings"]}
assert "ignored" in f["max_split_size_mb"]["message"], f
assert f["release_lock_on_cudamalloc"]["message"].startswith("not modelled: "), f' "$tmp/c4.json" || fail "sim --conf findings"
"$pt" sim --trace "$tr" --conf "graph_capture_record_stream_reuse:True" >/dev/null 2>"$tmp/e" || fail "sim --conf graph key"
grep -q "^sim --conf: warning: graph_capture_record_stream_reuse: not modelled: " "$tmp/e" || fail "not-modelled warning: $(cat "$tmp/e")"
# refused as PyTorch refuses them: one line naming the key, exit 1; usage errors exit 2
for bad in 'foo:1' 'roundup_power2_divisions:[256:3]' 'max_split_size_mb:10' 'expandable_segments:true' 'garbage_collection_threshold:1.5'; do
  "$pt" sim --trace "$tr" --conf "$bad" >"$tmp/o" 2>"$tmp/e"
  rc=$?
  [ $rc -eq 1 ] || fail "--conf $bad: exit $rc, not 1"
  [ "$(wc -l <"$tmp/e")" -eq 1 ] && grep -q "^pagetune: --conf: ${bad%%:*}: " "$tmp/e" || fail "--conf $bad: $(cat "$tmp/e")"
done
long="roundup_power2_divisions:[1:2$(i=1; while [ $i -lt 70 ]; do printf ',%d:2' $((1 << (i % 15))); i=$((i + 1)); done)]"
"$pt" sim --trace "$tr" --conf "$long" >/dev/null 2>"$tmp/e"
[ $? -eq 1 ] && grep -q "longer than 255 bytes" "$tmp/e" || fail "a value too long for sim: $(cat "$tmp/e")"
"$pt" sim --trace "$tr" --conf "max_split_size_mb:64" --policy pytorch_native >/dev/null 2>&1
[ $? -eq 2 ] || fail "--conf with --policy: not a usage error"
"$pt" sim --trace "$tr" --conf "per_process_memory_fraction:0.5" --capacity 1G >/dev/null 2>&1
[ $? -eq 2 ] || fail "--conf's fraction with --capacity: not a usage error"
"$pt" sim --help | grep -q -- "--conf VALUE" || fail "sim --help lacks --conf"

done_ok knobs
