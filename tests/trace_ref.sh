#!/bin/sh
# trace_ref.sh — best, export and report name a stored trace by the path it was
# swept from (its content hash), a stored name that matches one trace, or a
# content-hash prefix; two different snapshots of one name stay two traces,
# and the bare name is refused as ambiguous, listing both.
set -u
top_srcdir=${top_srcdir:-.}
top_builddir=${top_builddir:-.}
pt=$(cd "$top_builddir" && pwd)/pagetune
src=$(cd "$top_srcdir" && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0
fail() { echo "FAIL: $*"; sed 's/^/  /' "$tmp/err"; fails=$((fails + 1)); }
db=$tmp/t.db

mkdir -p "$tmp/a" "$tmp/b" "$tmp/elsewhere"
cp "$src/tests/data/real_small.pickle.gz" "$tmp/a/snap.pickle.gz"
cp "$src/tests/data/synthetic_snapshot.pickle.gz" "$tmp/b/snap.pickle.gz"
cp "$src/tests/data/real_small.pickle.gz" "$tmp/a/only.pickle.gz"
cd "$tmp" || exit 99
"$pt" sweep --db "$db" --trace a/snap.pickle.gz --policy pytorch_native >/dev/null 2>"$tmp/err" &&
"$pt" sweep --db "$db" --trace b/snap.pickle.gz --policy pytorch_native --policy direct >/dev/null 2>"$tmp/err" || { cat "$tmp/err"; exit 99; }

# the path given to sweep, relative or absolute: its content
for t in a/snap.pickle.gz "$tmp/b/snap.pickle.gz"; do
  if "$pt" best --db "$db" --trace "$t" --objective memory >"$tmp/out" 2>"$tmp/err"; then echo "ok: best --trace $t"
  else fail "best --trace $t"; fi
  if "$pt" export --db "$db" --trace "$t" --objective memory --format env >"$tmp/out" 2>"$tmp/err"; then echo "ok: export --trace $t"
  else fail "export --trace $t"; fi
done
"$pt" best --db "$db" --trace a/snap.pickle.gz --json --objective memory >"$tmp/a.json" 2>/dev/null
"$pt" best --db "$db" --trace b/snap.pickle.gz --json --objective memory >"$tmp/b.json" 2>/dev/null
[ "$(grep -o '"run":[0-9]*' "$tmp/a.json")" = '"run":1' ] && ! grep -q '"run":1,' "$tmp/b.json" &&
  echo "ok: the two snapshots of one name are two traces" || fail "the two snap.pickle.gz merged: $(cat "$tmp/a.json" "$tmp/b.json")"

# the bare name: ambiguous, both candidates listed; exit 1
cd "$tmp/elsewhere" || exit 99
"$pt" best --db "$db" --trace snap.pickle.gz >"$tmp/out" 2>"$tmp/err"; rc=$?
if [ $rc -eq 1 ] && grep -q 'ambiguous' "$tmp/err" && grep -q 'a/snap.pickle.gz' "$tmp/err" && grep -q 'b/snap.pickle.gz' "$tmp/err"; then
  echo "ok: an ambiguous name is refused, listing the candidates"
else fail "best --trace snap.pickle.gz (two traces of that name): exit $rc"; fi
"$pt" export --db "$db" --trace snap.pickle.gz --format env >"$tmp/out" 2>"$tmp/err"; rc=$?
[ $rc -eq 1 ] && grep -q 'ambiguous' "$tmp/err" && echo "ok: export refuses the ambiguous name" || fail "export --trace snap.pickle.gz: exit $rc"

# a name that matches one stored trace, and a content-hash prefix
"$pt" sweep --db "$db" --trace "$tmp/a/only.pickle.gz" --policy pytorch_native >/dev/null 2>&1
# (the same content as a/snap.pickle.gz: stored once, under its first name)
hash=$(sqlite3 "$db" "SELECT substr(content_hash, 1, 12) FROM traces ORDER BY id LIMIT 1" 2>/dev/null)
if [ -n "$hash" ]; then
  "$pt" best --db "$db" --trace "$hash" --objective memory >"$tmp/out" 2>"$tmp/err" && echo "ok: best --trace HASHPREFIX" ||
    fail "best --trace $hash"
fi

# report: the two traces apart, each name with its hash prefix; --trace a path
"$pt" report --db "$db" >"$tmp/out" 2>"$tmp/err"
[ "$(grep -c '^trace snap.pickle.gz@' "$tmp/out")" -eq 2 ] && echo "ok: report keeps the two traces of one name apart" ||
  fail "report merges the two snap.pickle.gz: $(grep '^trace' "$tmp/out")"
"$pt" report --db "$db" --trace "$tmp/b/snap.pickle.gz" >"$tmp/out" 2>"$tmp/err" && grep -q '(2 runs)' "$tmp/out" &&
  echo "ok: report --trace PATH" || fail "report --trace PATH: $(grep '^trace' "$tmp/out")"

[ $fails -eq 0 ] || { echo "$fails failure(s)"; exit 1; }
