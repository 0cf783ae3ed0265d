#!/bin/sh
# store_kill.sh — the store survives kill -9 and a full disk (issue 5, "Reliability").
#
# Until `pagetune sweep` exists, a small driver built here from sim/store.c
# stands in for it: it stores N runs, one transaction each, skipping those
# already stored (pt_store_find_run), as a resumed sweep does.
#   1. kill -9 the driver about 0.5 s into 2000 runs; integrity_check is ok;
#   2. run it again to completion while a reader queries the database (WAL):
#      2000 runs, each once, each with its results and timeline, values intact;
#   3. a third run stores nothing;
#   4. on a small tmpfs (root only; skipped if mount fails): the disk fills,
#      the driver says so in one line and exits 1, what was committed is
#      intact; after space is freed a rerun completes.
# Exit 77 (automake's SKIP) without gcc or the sqlite3 shell and headers.
set -u

command -v gcc >/dev/null 2>&1 || { echo "store_kill: gcc missing: skip"; exit 77; }
command -v sqlite3 >/dev/null 2>&1 || { echo "store_kill: sqlite3 shell missing: skip"; exit 77; }
top=${top_srcdir:-$(cd "$(dirname "$0")/.." && pwd)}
if pkg-config --exists sqlite3 2>/dev/null; then
  SQLITE_CFLAGS=$(pkg-config --cflags sqlite3)
  SQLITE_LIBS=$(pkg-config --libs sqlite3)
else
  SQLITE_CFLAGS=
  SQLITE_LIBS=-lsqlite3
fi
printf '#include <sqlite3.h>\n' | gcc $SQLITE_CFLAGS -E - >/dev/null 2>&1 ||
  { echo "store_kill: sqlite3.h missing: skip"; exit 77; }

work=$(mktemp -d "${TMPDIR:-/tmp}/pt-store-kill.XXXXXX") || exit 1
mnt=
cleanup() {
  [ -n "$mnt" ] && umount "$mnt" 2>/dev/null
  rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 1' INT TERM

fail() { echo "store_kill: FAIL: $*"; exit 1; }

cat >"$work/driver.c" <<'EOF'
/* driver.c — store N runs one transaction each, skipping stored ones (store_kill.sh). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "store.h"

#define NPOINTS 20

int main(int argc, char **argv) {
  if (argc < 3) {
    fprintf(stderr, "usage: driver DB N [DELAY_US]\n");
    return 2;
  }
  long n = atol(argv[2]);
  long delay = argc > 3 ? atol(argv[3]) : 0;
  pt_err err;
  pt_store *s;
  if (pt_store_open(argv[1], 0, &err, &s) < 0) {
    fprintf(stderr, "%s\n", err.msg);
    return 1;
  }
  pt_trace_stats ts;
  memset(&ts, 0, sizeof ts);
  ts.events = 12345;
  int64_t trace, policy;
  const char *text = "return {name = 'kill', mechanism = 'caching'}";
  if (pt_store_put_trace(s, "kill", "synthetic", "0000kill", &ts, &err, &trace) < 0 ||
      pt_store_put_policy(s, "kill", "caching", text, strlen(text), &err, &policy) < 0) {
    fprintf(stderr, "%s\n", err.msg);
    pt_store_close(s);
    return 1;
  }
  long stored = 0, skipped = 0;
  int rc = 0;
  for (long i = 0; i < n && rc == 0; i++) {
    char params[64];
    snprintf(params, sizeof params, "{\"i\":%ld}", i);
    pt_store_run_key k = {trace, policy, params, 0, "h200", "test"};
    int64_t id;
    if ((rc = pt_store_find_run(s, &k, &err, &id)) < 0) break;
    if (id) {
      skipped++;
      continue;
    }
    pt_sim_point tl[NPOINTS];
    for (int j = 0; j < NPOINTS; j++)
      tl[j] = (pt_sim_point){(uint64_t)j, (int64_t)j * 10, (uint64_t)(i + j) << 21, (uint64_t)(i + j) << 20};
    pt_sim_result r;
    memset(&r, 0, sizeof r);
    r.events = (uint64_t)i;
    r.allocs = 2 * (uint64_t)i;
    r.peak_reserved_bytes = ((uint64_t)i + 1) << 20;
    r.fragmentation = (double)i / 4000.0;
    r.driver_calls[PT_DRV_malloc] = (uint64_t)i;
    r.has_gpu = 1;
    r.predicted_alloc_us = 1000.0 + (double)i;
    r.timeline = tl;
    r.ntimeline = NPOINTS;
    if ((rc = pt_store_put_run(s, &k, "deadbeef", &r, &err, &id)) < 0) break;
    stored++;
    if (delay) usleep((useconds_t)delay);
  }
  printf("stored %ld skipped %ld\n", stored, skipped);
  fflush(stdout);
  if (rc < 0) fprintf(stderr, "%s\n", err.msg);
  pt_store_close(s);
  return rc < 0 ? 1 : 0;
}
EOF

incs=
for d in base trace device mech gpu engine policy work; do incs="$incs -I$top/sim/$d"; done
# shellcheck disable=SC2086
gcc -std=gnu11 -O1 -g $incs -o "$work/driver" "$work/driver.c" "$top/sim/work/store.c" "$top/sim/work/confirm.c" "$top/sim/base/jsonread.c" \
  "$top/sim/base/sha256.c" "$top/sim/base/error.c" "$top/sim/base/file.c" \
  $SQLITE_CFLAGS $SQLITE_LIBS -lm || fail "cannot build the driver"

q() { sqlite3 -batch -noheader "$1" "$2"; }

# ---- 1. kill -9 mid-sweep ---------------------------------------------------
db=$work/sweep.db
N=2000
"$work/driver" "$db" $N 500 >"$work/run1.out" 2>"$work/run1.err" &
pid=$!
sleep 0.5
kill -9 $pid 2>/dev/null
wait $pid 2>/dev/null
st=$?
[ $st -eq 137 ] || fail "the driver was not killed mid-sweep (exit $st; $(cat "$work/run1.out" "$work/run1.err"))"
after_kill=$(q "$db" "SELECT count(*) FROM runs") || fail "cannot read the database after kill -9"
echo "store_kill: killed after $after_kill of $N runs"
[ "$after_kill" -gt 0 ] && [ "$after_kill" -lt $N ] || fail "expected a partial sweep, found $after_kill runs"
[ "$(q "$db" "PRAGMA integrity_check")" = ok ] || fail "integrity_check after kill -9"
[ "$(q "$db" "SELECT count(*) FROM runs LEFT JOIN results ON run_id = id WHERE run_id IS NULL")" = 0 ] ||
  fail "a run without results after kill -9"

# ---- 2. resume while a reader queries --------------------------------------
"$work/driver" "$db" $N >"$work/run2.out" 2>"$work/run2.err" &
pid=$!
reads=0
readfail=0
# A reader waits for no writer's transaction (the unit test holds one open);
# it can meet a lock for a moment only when the writer opens or, as the last
# connection, checkpoints on close, so it sets a busy timeout as pagetune does.
while kill -0 $pid 2>/dev/null; do
  if sqlite3 -batch -noheader -cmd ".timeout 5000" "$db" "SELECT count(*) FROM run_summary" \
       >/dev/null 2>>"$work/reader.err"; then
    reads=$((reads + 1))
  else
    readfail=$((readfail + 1))
  fi
done
wait $pid || fail "resumed sweep failed: $(cat "$work/run2.err")"
echo "store_kill: resumed: $(cat "$work/run2.out"); reader: $reads queries, $readfail failed"
[ $readfail -eq 0 ] || fail "the reader failed while the sweep wrote: $(head -3 "$work/reader.err")"
grep -q "skipped $after_kill\$" "$work/run2.out" || fail "resume did not skip exactly the $after_kill stored runs"

check_complete() {  # DB N NPOINTS
  [ "$(q "$1" "SELECT count(*) FROM runs")" = "$2" ] || fail "$1: expected $2 runs"
  [ "$(q "$1" "SELECT count(DISTINCT params_json) FROM runs")" = "$2" ] || fail "$1: duplicated runs"
  [ "$(q "$1" "SELECT count(*) FROM results")" = "$2" ] || fail "$1: results rows"
  [ "$(q "$1" "SELECT count(*) FROM timelines")" = "$(($2 * $3))" ] || fail "$1: timeline rows"
  [ "$(q "$1" "SELECT count(*) FROM runs r JOIN results s ON s.run_id = r.id
              WHERE s.events != json_extract(r.params_json, '\$.i')
                 OR s.peak_reserved_bytes != (s.events + 1) * 1048576
                 OR s.predicted_alloc_us != 1000.0 + s.events")" = 0 ] || fail "$1: a row's values are wrong"
  [ "$(q "$1" "PRAGMA integrity_check")" = ok ] || fail "$1: integrity_check"
  [ -z "$(q "$1" "PRAGMA foreign_key_check")" ] || fail "$1: foreign_key_check"
}
check_complete "$db" $N 20

# ---- 3. nothing left to do ---------------------------------------------------
out=$("$work/driver" "$db" $N) || fail "third run failed"
[ "$out" = "stored 0 skipped $N" ] || fail "third run: $out"
check_complete "$db" $N 20
echo "store_kill: kill -9 and resume: ok"

# ---- 4. a full disk ---------------------------------------------------------
if [ "$(id -u)" != 0 ]; then
  echo "store_kill: full disk: skipped (needs root to mount a tmpfs)"
  exit 0
fi
mkdir -p "$work/full"
if ! mount -t tmpfs -o size=16m tmpfs "$work/full" 2>/dev/null; then
  echo "store_kill: full disk: skipped (cannot mount a tmpfs here)"
  exit 0
fi
mnt=$work/full
fdb=$mnt/full.db
# leave about 1.5 MiB: the schema, the -shm and a growing -wal (about 20 KiB
# a committed run until the checkpoint at 4 MiB) fill it after some dozens of runs
dd if=/dev/zero of="$mnt/filler" bs=1k count=14848 2>/dev/null
"$work/driver" "$fdb" $N >"$work/full.out" 2>"$work/full.err"
st=$?
[ $st -eq 1 ] || fail "full disk: expected exit 1, got $st"
[ "$(wc -l <"$work/full.err")" -eq 1 ] || fail "full disk: expected one line, got: $(cat "$work/full.err")"
grep -q "^$fdb: .*database or disk is full" "$work/full.err" || fail "full disk: unclear message: $(cat "$work/full.err")"
stored=$(sed -n 's/^stored \([0-9]*\) .*/\1/p' "$work/full.out")
echo "store_kill: full disk after $stored runs: $(cat "$work/full.err")"
[ "$stored" -gt 0 ] || fail "full disk: nothing stored before the disk filled"
rm -f "$mnt/filler"
[ "$(q "$fdb" "SELECT count(*) FROM runs")" = "$stored" ] || fail "full disk: committed runs lost or half a run kept"
[ "$(q "$fdb" "PRAGMA integrity_check")" = ok ] || fail "full disk: integrity_check"
out=$("$work/driver" "$fdb" $N) || fail "full disk: resume after freeing space failed"
[ "$out" = "stored $((N - stored)) skipped $stored" ] || fail "full disk: resume: $out"
check_complete "$fdb" $N 20
echo "store_kill: full disk: ok"
exit 0
