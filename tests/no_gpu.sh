#!/bin/sh
# no_gpu.sh — one rule for runs without a GPU description: --gpu none is
# accepted by every command that models (no GPU model, no predicted times);
# what needs a predicted time says so and names the runs that lack one; a
# time never predicted prints as "-" (text) and null (JSON), never 0.
set -u
top_srcdir=${top_srcdir:-.}
top_builddir=${top_builddir:-.}
pt="$top_builddir/pagetune"
snap="$top_srcdir/tests/data/synthetic_snapshot.pickle"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
# expect CODE WHAT COMMAND...: the exit status, stdout in $tmp/out, stderr in $tmp/err
expect() {
  want=$1; what=$2; shift 2
  "$@" >"$tmp/out" 2>"$tmp/err"; got=$?
  if [ "$got" -ne "$want" ]; then fail "$what: exit $got, wanted $want"; sed 's/^/  stderr: /' "$tmp/err"
  else echo "ok: $what"; fi
}
has() { grep -q -- "$2" "$1" || { fail "$3: no '$2' in"; sed 's/^/  /' "$1"; }; }
lacks() { if grep -q -- "$2" "$1"; then fail "$3: '$2' in"; sed 's/^/  /' "$1"; fi; }

for c in sim sweep tune replay; do
  expect 0 "$c --help" "$pt" $c --help
  has "$tmp/out" "none" "$c --help says what --gpu none means"
done

expect 0 "sim --gpu none" "$pt" sim --trace "$snap" --policy pytorch_native --gpu none --json
has "$tmp/out" '"predicted_alloc_us":null' "sim --gpu none --json"
expect 2 "sim --gpu none --tlb" "$pt" sim --trace "$snap" --policy pytorch_native --gpu none --tlb
has "$tmp/err" "GPU description" "sim --gpu none --tlb"
expect 2 "replay --gpu none (no prediction to compare with)" "$pt" replay --trace "$snap" --policy direct --gpu none
has "$tmp/err" "GPU description" "replay --gpu none"

db="$tmp/w.db"
expect 0 "sweep --gpu none" "$pt" sweep --db "$db" --trace "$snap" --policy pytorch_native --policy direct --gpu none
for c in best export; do
  set -- ; [ $c = export ] && set -- --format env
  expect 1 "$c by time without predicted times" "$pt" $c --db "$db" --trace synthetic_snapshot.pickle "$@"
  [ "$(wc -l <"$tmp/err")" -eq 1 ] || fail "$c: not one line"
  has "$tmp/err" "needs a predicted time" "$c without predicted times"
  has "$tmp/err" "2 were modelled without a GPU description (--gpu none: runs 1, 2)" "$c without predicted times names the runs"
done
expect 0 "best by memory without predicted times" "$pt" best --db "$db" --trace synthetic_snapshot.pickle --objective memory
has "$tmp/out" "predicted allocator time -" "best without a predicted time"
lacks "$tmp/out" "0.0 us" "best without a predicted time"
expect 0 "best --json without predicted times" "$pt" best --db "$db" --trace synthetic_snapshot.pickle --objective memory --json
has "$tmp/out" '"predicted_alloc_us":null' "best --json without a predicted time"
expect 0 "export by memory without predicted times" "$pt" export --db "$db" --trace synthetic_snapshot.pickle --objective memory --format env

expect 2 "tune by time with --gpu none" "$pt" tune --db "$db" --trace "$snap" --policy tunable_caching --gpu none
has "$tmp/err" "GPU description" "tune by time with --gpu none"
expect 0 "tune by memory with --gpu none" "$pt" tune --db "$db" --trace "$snap" --policy tunable_caching --gpu none --objective memory --budget 5
lacks "$tmp/out" " 0.0 us" "tune's front without predicted times"
expect 0 "tune --json by memory with --gpu none" "$pt" tune --db "$db" --trace "$snap" --policy tunable_caching --gpu none --objective memory --budget 5 --json
has "$tmp/out" '"predicted_alloc_us":null' "tune --json's front without predicted times"

echo "$fails failure(s)"
[ "$fails" -eq 0 ]
