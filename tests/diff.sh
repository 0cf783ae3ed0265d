#!/bin/sh
# diff.sh — pagetune diff: two stored runs (two policies on one bundled trace) side
# by side, each figure as sim and best report it, with B - A, and where the
# timelines part as the timelines themselves say; two traces with one policy;
# an unknown run id is exit 1 in one line; bad usage exit 2.
set -u
top_srcdir=${top_srcdir:-.}
top_builddir=${top_builddir:-.}
pt="$top_builddir/pagetune"
trace="$top_srcdir/traces/varlen_infer.pickle.gz"
other="$top_srcdir/traces/randn_loop.pickle.gz"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
command -v python3 >/dev/null 2>&1 || { echo "python3 is missing: skipped"; exit 77; }
export PAGETUNE_POLICY_DIR="$top_srcdir/policies"
db="$tmp/d.db"

"$pt" sweep --db "$db" --trace "$trace" --policy pytorch_native --policy cuda_async --timeline full >/dev/null 2>"$tmp/err" ||
  { fail "sweep"; cat "$tmp/err"; }
"$pt" best --db "$db" --trace varlen_infer.pickle.gz --objective memory --json >"$tmp/best.json" || fail "best"
for p in pytorch_native cuda_async; do
  "$pt" sim --trace "$trace" --policy $p --gpu h200 --json >"$tmp/$p.json" || fail "sim $p"
done
# run ids in the order sweep stored them: pytorch_native first
"$pt" diff --db "$db" 1 2 --json >"$tmp/diff.json" 2>"$tmp/err" || { fail "diff 1 2"; cat "$tmp/err"; }
"$pt" diff --db "$db" 1 2 >"$tmp/diff.txt" 2>"$tmp/err" || { fail "diff 1 2 (text)"; cat "$tmp/err"; }
python3 - "$tmp/diff.json" "$tmp/pytorch_native.json" "$tmp/cuda_async.json" "$tmp/best.json" "$tmp/diff.txt" <<'PY' || fail "diff disagrees with sim and best"
import json, sys
d = json.load(open(sys.argv[1])); a = json.load(open(sys.argv[2])); b = json.load(open(sys.argv[3]))
best = json.load(open(sys.argv[4])); text = open(sys.argv[5]).read()
assert d["a"]["run"] == 1 and d["a"]["policy"] == "pytorch_native" and d["b"]["policy"] == "cuda_async", (d["a"], d["b"])
assert d["b"]["params"] == b["params"], (d["b"]["params"], b["params"])
f = d["figures"]
for k in ("peak_reserved_bytes", "peak_allocated_bytes", "segments_allocated", "ooms", "cache_hits"):
    assert f[k]["a"] == a[k] and f[k]["b"] == b[k] and f[k]["diff"] == b[k] - a[k], (k, f[k], a[k], b[k])
for k in ("fragmentation", "predicted_alloc_us"):
    for side, r in (("a", a), ("b", b)):
        assert abs(f[k][side] - r[k]) <= 1e-5 * max(abs(r[k]), 1e-9), (k, side, f[k], r[k])
for k, v in d["driver_calls"].items():
    assert v["a"] == a["driver_calls"][k] and v["b"] == b["driver_calls"][k], (k, v)
# best by memory is cuda_async's run: the same figures
side = "a" if best["run"] == d["a"]["run"] else "b"
assert best["run"] == d[side]["run"] and best["policy"] == "cuda_async", (best["run"], best["policy"])
assert f["peak_reserved_bytes"][side] == best["peak_reserved_bytes"], (f["peak_reserved_bytes"], best["peak_reserved_bytes"])
# where they part, from the timelines sim prints
ta, tb = a["timeline"], b["timeline"]
ra, rb = ta["reserved_bytes"], tb["reserved_bytes"]
first = next(i for i in range(min(len(ra), len(rb))) if ra[i] != rb[i])
gaps = [abs(ra[i] - rb[i]) for i in range(min(len(ra), len(rb)))]
big = gaps.index(max(gaps))
fd, lg = d["first_difference"], d["largest_gap"]
assert fd["point"] == first and fd["event_a"] == ta["event"][first] and fd["time_us_a"] == ta["time_us"][first], fd
assert fd["reserved_a"] == ra[first] and fd["reserved_b"] == rb[first], fd
assert lg["point"] == big and lg["diff"] == rb[big] - ra[big] and lg["event_b"] == tb["event"][big], lg
assert d["timeline_points"] == {"a": len(ra), "b": len(rb)}, d["timeline_points"]
assert "peak_reserved_bytes" in text and "first_difference: point %d," % first in text, text
PY
"$pt" diff --db "$db" 2 2 >"$tmp/same.txt" || fail "diff of a run with itself"
grep -q 'reserved bytes never differ' "$tmp/same.txt" || fail "a run against itself differs"

# one trace, timelines stored at other windows (sweep's thin against the full above) or not at all: not
# compared point by point (their points are of different events), said so, never "never differ"
"$pt" sweep --db "$db" --trace "$trace" --policy stitch >/dev/null 2>&1 || fail "sweep thin"
"$pt" sweep --db "$db" --trace "$trace" --policy direct --timeline none >/dev/null 2>&1 || fail "sweep none"
"$pt" diff --db "$db" 1 3 >"$tmp/thin.txt" || fail "diff full against thin"
grep -q 'where they part is not known: timelines stored at different windows' "$tmp/thin.txt" ||
  fail "full against thin: $(tail -2 "$tmp/thin.txt")"
"$pt" diff --db "$db" 1 3 --json >"$tmp/thin.json" || fail "diff full against thin --json"
python3 -c "
import json, sys; d = json.load(open(sys.argv[1]))
assert d['timelines_compared'] is False and d['first_difference'] is None and d['largest_gap'] is None, d" "$tmp/thin.json" ||
  fail "full against thin --json: compared"
"$pt" diff --db "$db" 1 4 >"$tmp/none.txt" || fail "diff full against none"
grep -q 'where they part is not known: a run stored without its timeline' "$tmp/none.txt" ||
  fail "full against none: $(tail -2 "$tmp/none.txt")"

# two traces, one policy: each side as sim gives it
"$pt" sim --trace "$other" --policy pytorch_native --gpu h200 --json >"$tmp/other.json" || fail "sim other"
"$pt" diff "$trace" "$other" --policy pytorch_native --json >"$tmp/tr.json" 2>"$tmp/err" ||
  { fail "diff of two traces"; cat "$tmp/err"; }
python3 - "$tmp/tr.json" "$tmp/pytorch_native.json" "$tmp/other.json" <<'PY' || fail "diff of two traces disagrees with sim"
import json, sys
d = json.load(open(sys.argv[1])); a = json.load(open(sys.argv[2])); b = json.load(open(sys.argv[3]))
assert d["a"]["run"] is None and d["b"]["policy"] == "pytorch_native", d["a"]
for k in ("peak_reserved_bytes", "peak_allocated_bytes", "segments_allocated"):
    assert d["figures"][k]["a"] == a[k] and d["figures"][k]["b"] == b[k], (k, d["figures"][k])
assert abs(d["figures"]["predicted_alloc_us"]["b"] - b["predicted_alloc_us"]) <= 1e-5 * b["predicted_alloc_us"]
PY
"$pt" diff "$trace" "$trace" --policy cuda_async --gpu none --json >"$tmp/none.json" || fail "diff --gpu none"
python3 -c "
import json, sys; d = json.load(open(sys.argv[1]))
assert d['figures']['predicted_alloc_us'] == {'a': None, 'b': None, 'diff': None}, d['figures']
assert d['first_difference'] is None and d['largest_gap'] is None, d" "$tmp/none.json" || fail "--gpu none: times not null"

# errors: one line, exit 1; usage exit 2
"$pt" diff --db "$db" 1 99 >/dev/null 2>"$tmp/err"; rc=$?
[ $rc -eq 1 ] || fail "unknown run id: exit $rc, not 1"
[ "$(wc -l <"$tmp/err")" -eq 1 ] && grep -q 'no run 99' "$tmp/err" || { fail "unknown run id: not one line"; cat "$tmp/err"; }
"$pt" diff --db "$tmp/nonesuch.db" 1 2 >/dev/null 2>"$tmp/err"; rc=$?
[ $rc -eq 1 ] || fail "missing database: exit $rc, not 1"
"$pt" diff "$trace" "$tmp/nonesuch.trace" --policy direct >/dev/null 2>"$tmp/err"; rc=$?
[ $rc -eq 1 ] && [ "$(wc -l <"$tmp/err")" -eq 1 ] || fail "missing trace: exit $rc, not 1 in one line"
for args in "1" "1 2 3" "x 2" "0 2" "--gpu h200 1 2" "--nonesuch 1 2"; do
  "$pt" diff --db "$db" $args >/dev/null 2>&1; rc=$?
  [ $rc -eq 2 ] || fail "diff $args: exit $rc, not 2"
done
"$pt" diff --db "$db" "$trace" "$trace" --policy direct >/dev/null 2>&1; rc=$?
[ $rc -eq 2 ] || fail "--db with --policy: exit $rc, not 2"
"$pt" diff --help | grep -q -- '--policy P' || fail "--help lacks --policy"

[ $fails -eq 0 ] || exit 1
echo "diff: ok"
