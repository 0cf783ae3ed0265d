#!/bin/sh
# weighted.sh — weighted:W has one meaning, time_us^W * peak_reserved_bytes^(1-W),
# in tune and best alike: said in both --help texts, printed with the value,
# and the value best reports for tune's best run is the value tune found.
set -u
top_srcdir=${top_srcdir:-.}
top_builddir=${top_builddir:-.}
pt="$top_builddir/pagetune"
trace="$top_srcdir/traces/varlen_infer.pickle.gz"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
command -v python3 >/dev/null 2>&1 || { echo "python3 is missing: skipped"; exit 77; }

for c in tune best export; do
  "$pt" $c --help >"$tmp/help" || fail "$c --help"
  grep -q 'time_us^W \* peak_reserved_bytes^(1-W)' "$tmp/help" || fail "$c --help does not say what weighted:W is"
done

db="$tmp/w.db"
"$pt" tune --db "$db" --trace "$trace" --policy tunable_caching --objective weighted:0.25 --budget 30 >"$tmp/tune.txt" ||
  fail "tune weighted:0.25"
grep -q 'objective [0-9.e+]* (time_us^0.25 \* peak_reserved_bytes^0.75)' "$tmp/tune.txt" ||
  { fail "tune does not print the formula beside the value"; sed 's/^/  /' "$tmp/tune.txt"; }
"$pt" tune --db "$db" --trace "$trace" --policy tunable_caching --objective weighted:0.25 --budget 30 --json >"$tmp/tune.json" ||
  fail "tune weighted:0.25 --json"
# more runs beside them change nothing about a run's value
"$pt" sweep --db "$db" --trace "$trace" --policy pytorch_native --policy cuda_async >/dev/null 2>&1 || fail "sweep"
"$pt" best --db "$db" --trace varlen_infer.pickle.gz --objective weighted:0.25 --json >"$tmp/best.json" ||
  fail "best weighted:0.25"
python3 - "$tmp/tune.json" "$tmp/best.json" <<'PY' || fail "tune and best disagree on weighted:0.25"
import json, sys
t = json.load(open(sys.argv[1])); b = json.load(open(sys.argv[2]))
f = "time_us^0.25 * peak_reserved_bytes^0.75"
assert t["objective_formula"] == f and b["objective_formula"] == f, (t.get("objective_formula"), b.get("objective_formula"))
mine = b["predicted_alloc_us"] ** 0.25 * b["peak_reserved_bytes"] ** 0.75
assert abs(b["objective_value"] - mine) <= 1e-6 * mine, (b["objective_value"], mine)
# best chose among tune's runs and two more policies: never worse than tune's best, and the
# same formula gives tune's best the value tune printed
assert b["objective_value"] <= t["best_value"] * (1 + 1e-9), (b["objective_value"], t["best_value"])
if b["policy"] == "tunable_caching":
    assert abs(b["objective_value"] - t["best_value"]) <= 1e-9 * t["best_value"], (b["objective_value"], t["best_value"])
PY
echo "$fails failure(s)"
[ "$fails" -eq 0 ]
