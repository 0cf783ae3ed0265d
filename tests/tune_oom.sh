#!/bin/sh
# tune_oom.sh — tune in the case it exists for: a cap the policy's defaults
# run out of memory under (varlen_infer at 378702643 B).  Infeasible starts
# are replaced, a policy that runs out everywhere says so (exit 1), and runs
# that ran out of memory reach no Pareto front, no best and no export.
set -u
top_srcdir=${top_srcdir:-.}
top_builddir=${top_builddir:-.}
pt="$top_builddir/pagetune"
trace="$top_srcdir/traces/varlen_infer.pickle.gz"
cap=378702643
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
command -v python3 >/dev/null 2>&1 || { echo "python3 is missing: skipped"; exit 77; }

# the defaults run out of memory at this cap (the premise)
"$pt" sim --trace "$trace" --policy tunable_caching --capacity $cap --json >"$tmp/sim.json" || fail "sim at the defaults"
python3 -c 'import json,sys; sys.exit(0 if json.load(open(sys.argv[1]))["ooms"] > 0 else 1)' "$tmp/sim.json" ||
  fail "the defaults no longer run out of memory at $cap B: the test lost its premise"

for obj in time memory weighted:0.5; do
  rm -f "$tmp/t.db"
  "$pt" tune --db "$tmp/t.db" --trace "$trace" --policy tunable_caching --capacity $cap --objective $obj --budget 40 --json \
    >"$tmp/tune.json" 2>"$tmp/err"; rc=$?
  if [ $rc -ne 0 ]; then fail "tune --objective $obj: exit $rc"; sed 's/^/  /' "$tmp/err"; continue; fi
  # the best point, simulated again, fits; no run on the front ran out of memory
  set --
  for kv in $(python3 -c 'import json,sys; d=json.load(open(sys.argv[1]))
for k, v in d["best_params"].items(): print("%s=%r" % (k, v))' "$tmp/tune.json"); do set -- "$@" --set "$kv"; done
  "$pt" sim --trace "$trace" --policy tunable_caching --capacity $cap "$@" --json >"$tmp/best.json" 2>"$tmp/err" ||
    { fail "tune --objective $obj: its best does not simulate"; sed 's/^/  /' "$tmp/err"; }
  python3 -c 'import json,sys; sys.exit(0 if json.load(open(sys.argv[1]))["ooms"] == 0 else 1)' "$tmp/best.json" ||
    fail "tune --objective $obj: its best runs out of memory"
  "$pt" report --db "$tmp/t.db" --json >"$tmp/report.json" || fail "report after tune"
  python3 -c 'import json,sys
runs = json.load(open(sys.argv[1]))["runs"]
assert any(r["ooms"] for r in runs), "no stored run ran out of memory"
bad = [r["run"] for r in runs if r["pareto"] and r["ooms"]]
assert not bad, "on the front but out of memory: %s" % bad
tuned = json.load(open(sys.argv[2]))["pareto"]
ids = {r["run"]: r for r in runs}
bad = [p["run"] for p in tuned if ids[p["run"]]["ooms"]]
assert not bad, "tune printed runs out of memory on its front: %s" % bad' "$tmp/report.json" "$tmp/tune.json" ||
    fail "tune --objective $obj: a run out of memory on a Pareto front"
  "$pt" best --db "$tmp/t.db" --trace varlen_infer.pickle.gz --objective $obj --json >"$tmp/bestrun.json" ||
    fail "best --objective $obj after tune"
  python3 -c 'import json,sys; sys.exit(0 if json.load(open(sys.argv[1]))["ooms"] == 0 else 1)' "$tmp/bestrun.json" ||
    fail "best --objective $obj chose a run that ran out of memory"
  # exported as the knobs can mean it: a fraction to 4 decimals (never rounding noise), whole MiB
  "$pt" export --db "$tmp/t.db" --trace varlen_infer.pickle.gz --objective $obj --format env >"$tmp/export.sh" ||
    fail "export --objective $obj after tune"
  conf=$(sed -n "s/^export PYTORCH_CUDA_ALLOC_CONF='\(.*\)'$/\1/p" "$tmp/export.sh")
  echo "$conf" | tr ',' '\n' | while IFS=: read -r k v; do
    case $k in
      garbage_collection_threshold) echo "$v" | grep -Eq '^0\.[0-9]{1,4}$' || echo "FAIL: $k:$v is not a fraction to 4 decimals" ;;
      *_mb) echo "$v" | grep -Eq '^[0-9]+$' || echo "FAIL: $k:$v is not whole MiB" ;;
      roundup_power2_divisions) echo "$v" | grep -Eq '^[0-9]+$' || echo "FAIL: $k:$v is not an integer" ;;
    esac
  done >"$tmp/conf_fails"
  [ -s "$tmp/conf_fails" ] && { cat "$tmp/conf_fails"; fails=$((fails + 1)); }
  echo "ok: tune --objective $obj under $cap B"
done

# tune prints its best as the values mean, with no rounding noise
"$pt" tune --db "$tmp/t.db" --trace "$trace" --policy tunable_caching --capacity $cap --budget 40 >"$tmp/tune.txt" ||
  fail "tune (text)"
grep -Eq '^best: ([a-z0-9_]+=[0-9.e+-]+ ?)+ objective' "$tmp/tune.txt" || { fail "tune's best line"; sed 's/^/  /' "$tmp/tune.txt"; }
if grep '^best: ' "$tmp/tune.txt" | grep -Eq '[0-9]{9,}|e-'; then fail "tune's best has rounding noise"; grep '^best: ' "$tmp/tune.txt"; fi

# every point runs out of memory: said in one line, exit 1 (bad input, not usage)
rm -f "$tmp/s.db"
"$pt" tune --db "$tmp/s.db" --trace "$trace" --policy stitch --capacity $cap >"$tmp/out" 2>"$tmp/err"; rc=$?
if [ $rc -ne 1 ]; then fail "tune of a policy that runs out everywhere: exit $rc, wanted 1"; sed 's/^/  /' "$tmp/err"
elif [ "$(wc -l <"$tmp/err")" -ne 1 ] || ! grep -q "ran out of memory under --capacity $cap" "$tmp/err"; then
  fail "tune of a policy that runs out everywhere: not one line saying so"; sed 's/^/  /' "$tmp/err"
else echo "ok: tune where every point runs out of memory: one line, exit 1"; fi

echo "$fails failure(s)"
[ "$fails" -eq 0 ]
