#!/bin/sh
# policy_budget.sh — a policy hook that spends most of its per-call budget on
# every call (tests/data/policies/burn_every_call.lua) cannot hold a run for
# minutes: the whole run's budget stops it with one line naming the policy
# file and the hook, exit 1.
set -u
top_srcdir=${top_srcdir:-.}
top_builddir=${top_builddir:-.}
pt="$top_builddir/pagetune"
pol="$top_srcdir/tests/data/policies/burn_every_call.lua"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }

start=$(date +%s)
timeout 120 "$pt" sim --trace "$top_srcdir/traces/varlen_infer.pickle.gz" --policy "$pol" >"$tmp/out" 2>"$tmp/err"; rc=$?
took=$(($(date +%s) - start))
if [ $rc -ne 1 ]; then fail "sim with a hook that burns its budget on every call: exit $rc, wanted 1"
elif [ "$(wc -l <"$tmp/err")" -ne 1 ]; then fail "not one line"
elif ! grep -q "burn_every_call.lua:[0-9]*: round: whole-run instruction budget exceeded" "$tmp/err"; then
  fail "the error does not name the policy file and the hook"
else echo "ok: a hook that burns its budget on every call stops in ${took}s: one line, exit 1"; fi
sed 's/^/  stderr: /' "$tmp/err"
[ "$took" -le 30 ] || fail "it took ${took}s"

echo "$fails failure(s)"
[ "$fails" -eq 0 ]
