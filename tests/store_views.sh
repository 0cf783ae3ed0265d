#!/bin/sh
# store_views.sh — the store's views best_per_trace and pareto leave out runs
# that ran out of memory (issue 13): varlen_infer under its 378702643-byte cap,
# where pytorch_native fails a request and so has the smallest peak of all.
# Also: a database of schema 2 gains the new views when opened read-write.
. "${top_srcdir:-.}/tests/wb_setup.sh"
tr="$top_srcdir/traces/varlen_infer.pickle.gz"
"$pt" sweep --db "$tmp/v.db" --trace "$tr" --policy pytorch_native --policy pytorch_expandable --policy cuda_async \
  --policy direct --capacity 378702643 >/dev/null 2>"$tmp/err" || fail "sweep: $(cat "$tmp/err")"
python3 - "$tmp/v.db" <<'PY' || fail "views on a fresh store"
import sqlite3, sys
c = sqlite3.connect(sys.argv[1])
oom = {r[0] for r in c.execute("SELECT run_id FROM run_summary WHERE ooms > 0")}
assert oom, "the cap must make a run fail: nothing to test"
assert c.execute("PRAGMA user_version").fetchone()[0] == 4
best = dict(c.execute("SELECT objective, run_id FROM best_per_trace"))
assert not set(best.values()) & oom, best
smallest = c.execute("SELECT run_id FROM run_summary WHERE ooms = 0 ORDER BY peak_reserved_bytes LIMIT 1").fetchone()[0]
assert best["memory"] == smallest, (best, smallest)
front = {r[0] for r in c.execute("SELECT run_id FROM pareto")}
assert front and not front & oom, front
# the front among the runs that served every request, computed here
rows = list(c.execute("SELECT run_id, peak_reserved_bytes, predicted_alloc_us FROM run_summary WHERE ooms = 0"))
want = {a for a, pa, ta in rows if not any(pb <= pa and tb <= ta and (pb < pa or tb < ta) for b, pb, tb in rows)}
assert front == want, (front, want)
print("ok: best_per_trace %s and pareto %s leave out the runs that ran out of memory %s" % (best, sorted(front), sorted(oom)))
PY
# a schema-2 database (tests/data/v2) gains them when a read-write command opens it
cp "$top_srcdir/tests/data/v2/confirm.db" "$tmp/old.db"
chmod u+w "$tmp/old.db"
"$pt" sweep --db "$tmp/old.db" --trace "$tr" --policy pytorch_native --capacity 378702643 >/dev/null 2>"$tmp/err" ||
  fail "sweep into a schema-2 store: $(cat "$tmp/err")"
python3 - "$tmp/old.db" <<'PY' || fail "views after migrating schema 2"
import sqlite3, sys
c = sqlite3.connect(sys.argv[1])
assert c.execute("PRAGMA user_version").fetchone()[0] == 4
oom = {r[0] for r in c.execute("SELECT run_id FROM run_summary WHERE ooms > 0")}
assert oom
assert not {r[0] for r in c.execute("SELECT run_id FROM pareto")} & oom
assert not {r[0] for r in c.execute("SELECT run_id FROM best_per_trace")} & oom
print("ok: a schema-2 store migrated to 4: its views leave out %d run(s) that ran out of memory" % len(oom))
PY
# a schema-3 store (tests/data/v3) reads as it is, read-only
cp "$top_srcdir/tests/data/v3/views.db" "$tmp/v3.db"
chmod a-w "$tmp/v3.db"
"$pt" report --db "$tmp/v3.db" --json >"$tmp/v3.json" 2>"$tmp/err" || fail "report on the v3 store: $(cat "$tmp/err")"
python3 -c 'import json, sys; d = json.load(open(sys.argv[1])); sys.exit(len(d["runs"]) != 4)' "$tmp/v3.json" ||
  fail "report on the v3 store: $(head -c 300 "$tmp/v3.json")"
python3 - "$tmp/v3.db" <<'PY' || fail "the v3 store's views"
import sqlite3, sys
c = sqlite3.connect("file:%s?mode=ro" % sys.argv[1], uri=True)
assert dict(c.execute("SELECT objective, run_id FROM best_per_trace")) == {"memory": 4, "time": 3}
assert sorted(r[0] for r in c.execute("SELECT run_id FROM pareto")) == [2, 3, 4]
print("ok: the schema-3 store of tests/data/v3 reads as it is")
PY
# a schema-4 store (tests/data/v4) reads as it is, read-only, with its traces' captured settings
cp "$top_srcdir/tests/data/v4/settings.db" "$tmp/v4.db"
chmod a-w "$tmp/v4.db"
"$pt" report --db "$tmp/v4.db" --json >"$tmp/v4.json" 2>"$tmp/err" || fail "report on the v4 store: $(cat "$tmp/err")"
python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
r = d["recommendations"][0]
assert len(d["runs"]) == 2 and r["baseline_run"] == 2 and "expandable_segments:True" in r["baseline"], r' "$tmp/v4.json" ||
  fail "the v4 store: the captured settings not read"
done_ok store_views
