#!/bin/sh
# formats.sh — files written by an older pagetune still load and resume
# (the versioning rule: traces/FORMAT.md and docs/store.md, "Versions").
# tests/data/v1/ holds a trace, a database and the policies written by
# pagetune 0.1.0 (its README says how).  Checked here:
#  - each trace reads, and `trace stats` says what it said then;
#  - the same sweep commands write the same run keys as the ones stored
#    (trace content hash, policy text hash, params_json text, capacity, GPU),
#    and the params_json texts are the ones pinned below;
#  - re-running those sweeps against a copy of the database stores no new
#    run: every run is found, so a sweep resumed after an upgrade resumes;
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

[ "$fails" = 0 ] && echo "ok: the v1 trace and database load and resume" && exit 0
exit 1
