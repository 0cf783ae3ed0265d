#!/bin/sh
# store_files.sh — files the workbench writes and reads: trace import never
# writes over its input or onto a FIFO; an empty snapshot is warned about;
# concurrent sweeps creating one new database all succeed; report, best and
# export read a read-only database in a read-only folder and leave no -wal or
# -shm file (as root, permissions stop nothing: the files must still not appear).
set -u
top_srcdir=${top_srcdir:-.}
top_builddir=${top_builddir:-.}
pt=$(cd "$top_builddir" && pwd)/pagetune
src=$(cd "$top_srcdir" && pwd)
tmp=$(mktemp -d)
trap 'chmod -R u+w "$tmp" 2>/dev/null; rm -rf "$tmp"' EXIT
fails=0
fail() { echo "FAIL: $*"; sed 's/^/  /' "$tmp/err" 2>/dev/null; fails=$((fails + 1)); }
snap=$src/tests/data/real_small.pickle.gz

# import onto its input (by name, or through a link): refused, the input intact
cp "$snap" "$tmp/in.pickle.gz"
ln -s in.pickle.gz "$tmp/link.pickle.gz"
for out in "$tmp/in.pickle.gz" "$tmp/link.pickle.gz"; do
  "$pt" trace import "$tmp/in.pickle.gz" -o "$out" >"$tmp/out" 2>"$tmp/err"; rc=$?
  if [ $rc -eq 1 ] && cmp -s "$snap" "$tmp/in.pickle.gz"; then echo "ok: import -o $(basename "$out") (the input): refused, input intact"
  else fail "import -o the input ($out): exit $rc"; cp "$snap" "$tmp/in.pickle.gz"; fi
done
# onto a FIFO: refused, the FIFO left a FIFO
mkfifo "$tmp/fifo"
for cmd in "trace import $snap" "trace gen --kind train --seed 1"; do
  # shellcheck disable=SC2086
  "$pt" $cmd -o "$tmp/fifo" >"$tmp/out" 2>"$tmp/err"; rc=$?
  if [ $rc -eq 1 ] && [ -p "$tmp/fifo" ]; then echo "ok: $cmd -o FIFO: refused, still a FIFO"
  else fail "$cmd -o FIFO: exit $rc"; rm -f "$tmp/fifo"; mkfifo "$tmp/fifo"; fi
done

# an empty snapshot (recorded without _record_memory_history): imported, with a warning
if command -v python3 >/dev/null 2>&1; then
  python3 -c "import pickle; pickle.dump({'segments': [], 'device_traces': [[]]}, open('$tmp/empty.pickle', 'wb'), protocol=2)"
  "$pt" trace import "$tmp/empty.pickle" -o "$tmp/empty.trace" >"$tmp/out" 2>"$tmp/err"; rc=$?
  [ $rc -eq 0 ] && grep -q '^warning: .*no allocation events' "$tmp/err" && echo "ok: an empty snapshot is warned about" ||
    fail "empty snapshot: exit $rc, no warning"
  "$pt" trace stats "$tmp/empty.trace" >"$tmp/out" 2>"$tmp/err"
  grep -q '^warning: .*no allocation events' "$tmp/err" && echo "ok: trace stats warns about an empty trace" || fail "trace stats: no warning"
fi

# ten sweeps creating one new database at once, three times: all succeed, one trace, one run
for trial in 1 2 3; do
  rm -f "$tmp/c.db" "$tmp/c.db-wal" "$tmp/c.db-shm"
  pids=
  for i in 1 2 3 4 5 6 7 8 9 10; do
    "$pt" sweep --db "$tmp/c.db" --trace "$snap" --policy pytorch_native >/dev/null 2>"$tmp/err.$i" &
    pids="$pids $!"
  done
  bad=0
  for p in $pids; do wait "$p" || bad=$((bad + 1)); done
  if [ $bad -eq 0 ]; then echo "ok: trial $trial: 10 concurrent sweeps on a new database"
  else cat "$tmp"/err.* >"$tmp/err"; fail "trial $trial: $bad of 10 concurrent sweeps failed"; fi
done

# read-only: a 444 copy in a 555 folder.  Of ten connections closing at once, none may find itself the last and
# checkpoint: the data can stay in c.db-wal (seen once under distcheck: the copy was an empty database).  One sweep
# alone, the database's only connection, checkpoints on its close and removes the -wal: then c.db is all of it.
"$pt" sweep --db "$tmp/c.db" --trace "$snap" --policy pytorch_native >"$tmp/out" 2>"$tmp/err" ||
  fail "a sweep alone after the trials"
[ ! -e "$tmp/c.db-wal" ] || fail "c.db-wal left after a sweep alone"
mkdir "$tmp/ro"
cp "$tmp/c.db" "$tmp/ro/c.db"
chmod 444 "$tmp/ro/c.db"
chmod 555 "$tmp/ro"
for cmd in "report" "best --trace real_small.pickle.gz --objective memory" \
           "export --trace real_small.pickle.gz --objective memory --format env"; do
  # shellcheck disable=SC2086
  "$pt" $cmd --db "$tmp/ro/c.db" >"$tmp/out" 2>"$tmp/err"; rc=$?
  if [ $rc -eq 0 ] && [ "$(ls "$tmp/ro")" = c.db ]; then echo "ok: ${cmd%% *} reads a read-only database, leaves no -wal/-shm"
  else fail "${cmd%% *} on a read-only database: exit $rc, folder: $(ls "$tmp/ro" | tr '\n' ' ')"; fi
done

[ $fails -eq 0 ] || { echo "$fails failure(s)"; exit 1; }
