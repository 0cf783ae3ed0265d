#!/bin/sh
# check.sh — pagetune check, the CI gate: a change within its limits passes (exit 0),
# one past them fails (exit 1) with a FAIL line and one error line; the baseline
# conf is the run sim makes of the same settings (stored or simulated); a change
# that ran out of memory fails; bad input is exit 1 in one line, bad usage exit 2.
. "${top_srcdir:-.}/tests/wb_setup.sh"
trace="$top_srcdir/traces/varlen_infer.pickle.gz"
db="$tmp/c.db"
chk() { "$pt" check --db "$db" --trace "$trace" "$@"; }

# run 1 pytorch_native (defaults), 2 pytorch_native gc 0.6, 3 cuda_async; at 600M
"$pt" sweep --db "$db" --trace "$trace" --policy pytorch_native --policy cuda_async \
  --grid garbage_collection_threshold=0,0.6 --capacity 600M >/dev/null 2>"$tmp/err" || { fail "sweep"; cat "$tmp/err"; }
"$pt" sim --trace "$trace" --policy pytorch_native --set max_split_size_mb=64 --capacity 600M --gpu h200 --json >"$tmp/ms64.json" ||
  fail "sim ms64"
"$pt" sim --trace "$trace" --policy pytorch_native --capacity 600M --gpu h200 --json >"$tmp/native.json" || fail "sim native"

# pass: run 3 (cuda_async) against the defaults, within 1.0x memory and 1.0x time
chk --run 3 --baseline "" --max-peak-ratio 1 --max-time-ratio 1 --json >"$tmp/pass.json" 2>"$tmp/err"
rc=$?
[ $rc -eq 0 ] || { fail "pass case exit $rc"; cat "$tmp/err"; }
chk --run 3 --baseline "" --max-peak-ratio 1 --max-time-ratio 1 >"$tmp/pass.txt" 2>&1 || fail "pass case (text)"
grep -q "^PASS peak reserved" "$tmp/pass.txt" && grep -q "^PASS predicted time" "$tmp/pass.txt" && ! grep -q FAIL "$tmp/pass.txt" ||
  { fail "pass verdict lines"; cat "$tmp/pass.txt"; }
python3 - "$tmp/pass.json" "$tmp/native.json" <<'PY' || fail "pass case disagrees with sim"
import json, sys
d = json.load(open(sys.argv[1])); n = json.load(open(sys.argv[2]))
assert d["pass"] is True and d["change"]["run"] == 3 and d["change"]["policy"] == "cuda_async", d
b = d["baseline"]
assert b["policy"] == "pytorch_native" and b["run"] == 1, b  # the stored run of the defaults
assert b["peak_reserved_bytes"] == n["peak_reserved_bytes"], (b, n["peak_reserved_bytes"])
lim = {l["metric"]: l for l in d["limits"]}
p = lim["peak_reserved_bytes"]
assert p["baseline"] == n["peak_reserved_bytes"] and abs(p["ratio"] - p["change"] / p["baseline"]) < 1e-12 and p["pass"], p
t = lim["predicted_alloc_us"]
assert abs(t["baseline"] - n["predicted_alloc_us"]) <= 0.05 + 1e-9 * n["predicted_alloc_us"]  # sim prints 0.1 us and t["ratio"] < 1 and t["pass"], t
PY

# fail: run 2 (gc 0.6 under a cap: more memory) against the defaults, 1.1x allowed
chk --run 2 --baseline "" --max-peak-ratio 1.1 >"$tmp/fail.txt" 2>"$tmp/err"
rc=$?
[ $rc -eq 1 ] || fail "fail case exit $rc, not 1"
grep -q "^FAIL peak reserved .*ratio 1\.[0-9]* > 1\.1$" "$tmp/fail.txt" || { fail "fail verdict line"; cat "$tmp/fail.txt"; }
[ "$(wc -l <"$tmp/err")" -eq 1 ] && grep -q "check failed: run 2 " "$tmp/err" || { fail "fail case: one error line"; cat "$tmp/err"; }
chk --run 2 --baseline "" --max-peak-ratio 1.1 --json >"$tmp/fail.json" 2>/dev/null && fail "fail case (json) exit 0"
python3 -c "
import json, sys
d = json.load(open('$tmp/fail.json'))
assert d['pass'] is False, d
p = [l for l in d['limits'] if l['metric'] == 'peak_reserved_bytes'][0]
assert p['ratio'] > 1.1 and not p['pass'], p" || fail "fail case JSON"
# the same run passes a looser limit: the verdict follows the ratio, not the run
chk --run 2 --baseline "" --max-peak-ratio 2 >/dev/null 2>&1 || fail "run 2 within 2x"

# a baseline with no stored run is simulated from the trace, as sim runs it
chk --run 1 --baseline "max_split_size_mb:64" --max-peak-ratio 1 --json >"$tmp/sim.json" 2>"$tmp/err" || { fail "simulated baseline"; cat "$tmp/err"; }
python3 - "$tmp/sim.json" "$tmp/ms64.json" <<'PY' || fail "simulated baseline disagrees with sim --set"
import json, sys
d = json.load(open(sys.argv[1])); s = json.load(open(sys.argv[2]))
b = d["baseline"]
assert b["run"] is None and b["params"]["max_split_size_mb"] == 64, b
assert b["peak_reserved_bytes"] == s["peak_reserved_bytes"], (b, s["peak_reserved_bytes"])
PY
# ... and needs the trace's file: by its stored name, from where it was stored
"$pt" check --db "$db" --trace varlen_infer.pickle.gz --run 1 --baseline "max_split_size_mb:64" --max-peak-ratio 1 >/dev/null 2>&1 ||
  fail "simulated baseline by the trace's stored name"
# expandable_segments and the cudaMallocAsync backend pick their policies; keys without effect are named
chk --run 3 --baseline "backend:cudaMallocAsync,release_lock_on_cudamalloc:True" --max-peak-ratio 1 --json >"$tmp/async.json" ||
  fail "async baseline"
python3 -c "
import json
d = json.load(open('$tmp/async.json'))
# PyTorch's backend never releases (threshold UINT64_MAX): not the stored cuda_async at its defaults, so simulated
assert d['baseline']['policy'] == 'cuda_async' and d['baseline']['run'] is None and d['baseline']['ignored'] == 'release_lock_on_cudamalloc', d
assert d['baseline']['params']['release_threshold'] == 1125899906842624, d
assert [l['ratio'] for l in d['limits'] if l['metric'] == 'peak_reserved_bytes'] == [1.0], d" || fail "async baseline JSON"
chk --run 3 --baseline "expandable_segments:True" --max-peak-ratio 1 --json 2>/dev/null | grep -q '"policy":"pytorch_expandable"' ||
  fail "expandable baseline"

# a change that ran out of memory fails, whatever its peak
"$pt" sweep --db "$db" --trace "$trace" --policy pytorch_native --capacity 378702643 >/dev/null 2>&1 || fail "sweep under the cap"
oom=$(sqlite3 "$db" "SELECT run_id FROM run_summary WHERE ooms > 0 LIMIT 1" 2>/dev/null)
if [ -n "$oom" ]; then
  chk --run "$oom" --baseline "" --max-peak-ratio 10 >"$tmp/oom.txt" 2>"$tmp/err"
  rc=$?
  [ $rc -eq 1 ] && grep -q "^FAIL out of memory" "$tmp/oom.txt" || { fail "OOM change: exit $rc"; cat "$tmp/oom.txt"; }
else
  fail "no run ran out of memory under 378702643 B (or sqlite3 is missing)"
fi

# bad input: exit 1, one line
bad() {
  expect=$1
  shift
  "$pt" check --db "$db" "$@" >/dev/null 2>"$tmp/err"
  rc=$?
  [ $rc -eq "$expect" ] || fail "check $* exit $rc, not $expect"
  [ "$(wc -l <"$tmp/err")" -le 2 ] || { fail "check $*: more than the error line"; cat "$tmp/err"; }
}
bad 1 --trace "$trace" --baseline "nonsense_key:1" --max-peak-ratio 1
grep -q "nonsense_key" "$tmp/err" || fail "unknown conf key not named"
[ "$(grep -o -- "--baseline 'nonsense_key:1'" "$tmp/err" | wc -l)" -eq 1 ] || { fail "the conf named more than once"; cat "$tmp/err"; }
bad 1 --trace "$trace" --baseline "max_split_size_mb:1" --max-peak-ratio 1 # below PyTorch's 20
bad 1 --trace "$trace" --baseline "graph_capture_record_stream_reuse:True" --max-peak-ratio 1 # would change the run; not modelled
grep -q "graph_capture_record_stream_reuse is not modelled" "$tmp/err" || { fail "an unmodelled key that matters: not refused by name"; cat "$tmp/err"; }
# the knobs with expandable segments and the list form are modelled: a baseline of each is simulated as sim --conf runs it
for conf in "expandable_segments:True,max_split_size_mb:64" "roundup_power2_divisions:[256:1,512:2,1024:4,>:8]"; do
  chk --run 3 --baseline "$conf" --max-peak-ratio 100 --json >"$tmp/k.json" 2>"$tmp/err" || { fail "baseline $conf"; cat "$tmp/err"; }
  "$pt" sim --trace "$trace" --conf "$conf" --capacity 600M --json >"$tmp/ks.json" 2>/dev/null || fail "sim --conf $conf" # run 3's cap
  python3 -c '
import json, sys
d, s = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
assert d["baseline"]["policy"] == s["policy"] and d["baseline"]["peak_reserved_bytes"] == s["peak_reserved_bytes"], (d["baseline"], s["policy"], s["peak_reserved_bytes"])' \
    "$tmp/k.json" "$tmp/ks.json" || fail "baseline $conf disagrees with sim --conf"
done
bad 1 --trace "$trace" --run 999 --baseline "" --max-peak-ratio 1
bad 1 --trace nope --baseline "" --max-peak-ratio 1
"$pt" sweep --db "$tmp/nogpu.db" --trace "$trace" --policy cuda_async --gpu none >/dev/null 2>&1 || fail "sweep --gpu none"
"$pt" check --db "$tmp/nogpu.db" --trace "$trace" --objective memory --baseline "" --max-peak-ratio 1 --max-time-ratio 1 >/dev/null 2>"$tmp/err"
[ $? -eq 1 ] && grep -q "max-time-ratio needs predicted times" "$tmp/err" || { fail "time limit without a GPU"; cat "$tmp/err"; }
"$pt" check --db "$tmp/nogpu.db" --trace "$trace" --objective memory --baseline "" --max-peak-ratio 1 >/dev/null 2>&1 ||
  fail "a memory limit needs no GPU"
# bad usage: exit 2
bad 2 --trace "$trace" --max-peak-ratio 1
bad 2 --trace "$trace" --baseline ""
bad 2 --trace "$trace" --baseline "" --max-peak-ratio 0
bad 2 --trace "$trace" --baseline "" --max-peak-ratio x
bad 2 --baseline "" --max-peak-ratio 1
bad 2 --trace "$trace" --baseline "" --max-peak-ratio 1 --run 1 --policy cuda_async

done_ok check
