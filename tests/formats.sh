#!/bin/sh
# formats.sh — files written by an older pagetune still load and resume
# (the versioning rule: traces/FORMAT.md and docs/store.md, "Versions").
# tests/data/v1/ holds a trace, a database and the policies written by
# pagetune 0.1.0 (its README says how); tests/data/v2/ a database of schema 2
# with a confirmation.  Checked here:
#  - each trace reads, and `trace stats` says what it said then;
#  - the same sweep commands write the same run keys as the ones stored
#    (trace content hash, policy text hash, params_json text, capacity, GPU),
#    and the params_json texts are the ones pinned below;
#  - re-running those sweeps against a copy of the database stores no new
#    run: every run is found, so a sweep resumed after an upgrade resumes;
#  - read-only, the v1 database is read as it is; migrated, it takes a
#    confirmation; the v2 database shows its confirmation and resumes;
#  - a trace or database of a newer version is refused with one line.
# Needs python3 and the sqlite3 shell (skips, 77, without).
set -u
top_srcdir=${top_srcdir:-.}
top_builddir=${top_builddir:-.}
command -v sqlite3 >/dev/null 2>&1 || { echo "sqlite3 shell missing: skip"; exit 77; }
command -v python3 >/dev/null 2>&1 || { echo "python3 missing: skip"; exit 77; }
pt="$top_builddir/pagetune"
case $pt in /*) ;; *) pt="$(pwd)/$pt" ;; esac
v1=$(cd "$top_srcdir/tests/data/v1" && pwd)
export PAGETUNE_GPU_DIR="$(cd "$top_srcdir/sim/gpus" && pwd)"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }

# 1. the traces read as they did ("trace" is the path given, so left out)
for t in trace:trace.gz initial:initial.trace.gz; do
  f=${t#*:} t=${t%%:*}
  if "$pt" trace stats "$v1/$f" --json >"$tmp/$t.json" 2>"$tmp/err"; then
    python3 - "$v1/$t.stats.json" "$tmp/$t.json" <<'PY' || fail "$f: stats differ from $t.stats.json"
import json, sys
want, got = (json.load(open(p)) for p in sys.argv[1:3])
for d in (want, got): d.pop("trace", None)
bad = sorted(k for k in set(want) | set(got) if want.get(k, "<absent>") != got.get(k, "<absent>"))
for k in bad: print("  %s: then %r, now %r" % (k, want.get(k, "<absent>"), got.get(k, "<absent>")))
sys.exit(1 if bad or not want else 0)
PY
  else fail "$f does not read: $(cat "$tmp/err")"; fi
done

# the sweeps that made sweep.db, against DB
sweeps() { # DB
  (cd "$v1" &&
    "$pt" sweep --db "$1" --trace trace.gz --policy ./pytorch_native.lua --policy ./tunable_caching.lua \
      --grid garbage_collection_threshold=0,0.6 --grid max_split_size_mb=64 --capacity 600M --json &&
    "$pt" sweep --db "$1" --trace trace.gz --policy ./pytorch_native.lua --gpu none --json)
}
keys() { # DB: one line a run key, sorted
  sqlite3 -separator ' ' "$1" "SELECT t.content_hash, p.text_hash, r.params_json, r.capacity, '[' || r.gpu || ']'
    FROM runs r JOIN traces t ON t.id = r.trace_id JOIN policies p ON p.id = r.policy_id ORDER BY 1, 2, 3, 4, 5"
}

# 2. today's sweeps write the same keys, and the canonical params_json texts
sweeps "$tmp/fresh.db" >/dev/null 2>"$tmp/err" || fail "the sweeps fail on a new database: $(cat "$tmp/err")"
keys "$v1/sweep.db" >"$tmp/keys.v1"
keys "$tmp/fresh.db" >"$tmp/keys.now"
cmp -s "$tmp/keys.v1" "$tmp/keys.now" || { fail "the run keys changed:"; diff "$tmp/keys.v1" "$tmp/keys.now"; }
cat >"$tmp/params.want" <<'PJ'
{"garbage_collection_threshold":0,"max_non_split_rounding_mb":20,"max_split_size_mb":64,"roundup_power2_divisions":0}
{"garbage_collection_threshold":0,"max_non_split_rounding_mb":20,"max_split_size_mb":null,"roundup_power2_divisions":0}
{"garbage_collection_threshold":0,"max_split_size_mb":64,"roundup_power2_divisions":0}
{"garbage_collection_threshold":0.59999999999999998,"max_non_split_rounding_mb":20,"max_split_size_mb":64,"roundup_power2_divisions":0}
{"garbage_collection_threshold":0.59999999999999998,"max_split_size_mb":64,"roundup_power2_divisions":0}
PJ
sqlite3 "$tmp/fresh.db" "SELECT params_json FROM runs ORDER BY 1" >"$tmp/params.now"
cmp -s "$tmp/params.want" "$tmp/params.now" ||
  { fail "params_json is no longer written as pinned:"; diff "$tmp/params.want" "$tmp/params.now"; }

# 3. resume against a copy of the old database: nothing new to store.  The
# engine version is part of a run's key on purpose (a new model's results
# are new runs), so the copy takes this build's; everything else is as stored.
cp "$v1/sweep.db" "$tmp/old.db"
engine=$(sqlite3 "$tmp/fresh.db" "SELECT DISTINCT engine_version FROM runs")
sqlite3 "$tmp/old.db" "UPDATE runs SET engine_version = '$engine'" || fail "cannot update the copy"
before=$(sqlite3 "$tmp/old.db" "SELECT count(*) FROM runs")
if sweeps "$tmp/old.db" >"$tmp/out" 2>"$tmp/err"; then
  cat "$tmp/out"
  grep -q '"stored":[1-9]' "$tmp/out" && fail "the resumed sweeps stored new runs"
  after=$(sqlite3 "$tmp/old.db" "SELECT count(*) FROM runs")
  [ "$before" = 5 ] && [ "$after" = 5 ] || fail "runs: $before before the resume, $after after (want 5 and 5)"
  [ "$(sqlite3 "$tmp/old.db" 'PRAGMA integrity_check')" = ok ] || fail "integrity_check after the resume"
else fail "the sweeps fail on the old database: $(cat "$tmp/err")"; fi

# 3b. read-only, a version-1 store is read as it is (not migrated): its runs, no confirmations;
# migrated (above), it takes a confirmation, its baseline simulated from the trace it names
cp "$v1/sweep.db" "$tmp/ro.db"
"$pt" report --db "$tmp/ro.db" --json >"$tmp/ro.json" 2>"$tmp/err" || fail "report on a v1 store: $(cat "$tmp/err")"
python3 -c 'import json, sys; d = json.load(open(sys.argv[1])); sys.exit(len(d["runs"]) != 5 or d["confirmations"] != [])' \
  "$tmp/ro.json" || fail "report on a v1 store: $(cat "$tmp/ro.json")"
[ "$(sqlite3 "$tmp/ro.db" 'PRAGMA user_version')" = 1 ] || fail "a read-only report migrated the v1 store"
[ "$(sqlite3 "$tmp/old.db" 'PRAGMA user_version')" = 4 ] || fail "the resumed sweep did not migrate the v1 store to version 4"
tuned=$(sqlite3 "$tmp/old.db" "SELECT r.id FROM runs r JOIN policies p ON p.id = r.policy_id WHERE p.name = 'tunable_caching' LIMIT 1")
if (cd "$v1" && PAGETUNE_POLICY_DIR=. "$pt" confirm --db "$tmp/old.db" --trace trace.gz --run "$tuned" --runs 2 --json -- true) \
  >"$tmp/c.json" 2>"$tmp/err"; then
  [ "$(sqlite3 "$tmp/old.db" 'SELECT count(*) FROM confirm_runs')" = 4 ] || fail "the migrated v1 store: confirm_runs"
  [ "$(sqlite3 "$tmp/old.db" 'SELECT count(*) FROM runs')" = 6 ] || fail "the migrated v1 store: the simulated baseline not stored"
else fail "confirm on the migrated v1 store: $(cat "$tmp/err")"; fi

# 3c. the version-2 store: read as it is, its confirmation shown; the sweep that made it resumes with nothing new
v2=$(cd "$top_srcdir/tests/data/v2" && pwd)
cp "$v2/confirm.db" "$tmp/v2.db"
"$pt" report --db "$tmp/v2.db" --json >"$tmp/v2.json" 2>"$tmp/err" || fail "report on the v2 store: $(cat "$tmp/err")"
python3 - "$tmp/v2.json" <<'PY' || fail "the v2 store's confirmation: $(cat "$tmp/v2.json")"
import json, sys
d = json.load(open(sys.argv[1]))
c = d["confirmations"]
assert len(d["runs"]) == 2 and len(c) == 1, d
c = c[0]
assert c["tuned"]["policy"] == "pytorch_expandable" and c["baseline"]["policy"] == "pytorch_native", c
assert c["time"]["verdict"] == "confirmed" and c["peak_reserved"]["verdict"] == "confirmed", c
assert c["peak_reserved"]["baseline_median_bytes"] == 266 << 20 and c["time"]["metric"] == "median_step_s", c
PY
# as for v1: the rows made by an older engine are recomputed by design; under today's engine version they resume
sqlite3 "$tmp/v2.db" "UPDATE runs SET engine_version = '$engine'" || fail "cannot update the v2 copy"
(cd "$v2" && "$pt" sweep --db "$tmp/v2.db" --trace ../v1/trace.gz --policy ../v1/pytorch_native.lua \
  --policy ./pytorch_expandable.lua --capacity 600M --json) >"$tmp/out" 2>"$tmp/err" || fail "the v2 sweep: $(cat "$tmp/err")"
grep -q '"stored":0' "$tmp/out" || fail "the v2 sweep stored new runs: $(cat "$tmp/out")"
[ "$(sqlite3 "$tmp/v2.db" 'SELECT count(*) FROM confirm_runs')" = 4 ] || fail "the v2 store lost its confirm_runs"

# 4. newer versions: refused with one line naming the file
printf 'pagetune-trace 999\nend 0\n' >"$tmp/new.trace"
"$pt" trace stats "$tmp/new.trace" >/dev/null 2>"$tmp/err" && fail "a format-999 trace was read"
grep -q "new.trace: line 1: written by a newer pagetune (trace format 999 > " "$tmp/err" ||
  fail "newer trace: $(cat "$tmp/err")"
cp "$v1/sweep.db" "$tmp/new.db"
sqlite3 "$tmp/new.db" "PRAGMA user_version = 999"
sum=$(cksum <"$tmp/new.db")
"$pt" best --db "$tmp/new.db" --trace trace.gz >/dev/null 2>"$tmp/err" && fail "a schema-999 database was read"
grep -q "new.db: written by a newer pagetune (schema version 999 > " "$tmp/err" ||
  fail "newer database: $(cat "$tmp/err")"
[ "$(cksum <"$tmp/new.db")" = "$sum" ] || fail "the newer database was changed"

[ "$fails" = 0 ] && echo "ok: the v1 trace and database, and the v2 database, load and resume" && exit 0
exit 1
